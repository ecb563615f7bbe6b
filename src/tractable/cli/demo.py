"""``tractable demo``: every capability on built-in example problems, one table row each."""

from __future__ import annotations

__all__ = ["register"]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "demo",
        help="run every capability on built-in examples and print a table",
        description="Run every capability on built-in example problems and print one table row each. "
        "Compiled kernels are compiled (or loaded from the cache) first and that time is shown apart, so "
        "each row's time is a warm call.",
    )
    p.set_defaults(func=_run)


def _run(args) -> int:
    from ..demo import run_demo

    run_demo()
    return 0
