"""The ``tractable`` command-line tool: one module of this package per command.

``demo`` (every capability on built-in problems), ``warmup`` (compile every kernel once),
``solve`` (UAI models: exact, loopy BP or adaptive MMP), ``clique``, ``cardinality``, ``hlmrf`` and
``psl``, each registered in ``SUBCOMMANDS``. The command line sits above every area: the areas import
nothing from it. Bad input exits with status 2 and a one-line message on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__

__all__ = ["main", "SUBCOMMANDS"]

#: ``"module:function"`` of functions ``register(subparsers)`` that add a subcommand; each
#: subcommand sets ``func`` (called with the parsed arguments, returns an exit status).
SUBCOMMANDS: list[str] = [
    "tractable.cli.demo:register",
    "tractable.cli.warmup:register",
    "tractable.cli.solve:register",
    "tractable.cli.clique:register",
    "tractable.cli.cardinality:register",
    "tractable.cli.hlmrf:register",
    "tractable.cli.psl:register",
]


class CLIError(Exception):
    """A user error reported as one line on stderr with exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tractable", description="Fast inference in structured probabilistic graphical models."
    )
    parser.add_argument("--version", action="version", version=f"tractable {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for target in SUBCOMMANDS:
        module, func = target.split(":")
        getattr(importlib.import_module(module), func)(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except (CLIError, ValueError, TypeError, OSError) as err:
        msg = str(err).splitlines()[0] if str(err) else type(err).__name__
        print(f"tractable {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
