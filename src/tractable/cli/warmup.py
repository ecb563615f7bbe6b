"""``tractable warmup``: compile every kernel once, so that later first calls do not wait for the compiler."""

from __future__ import annotations

import sys

__all__ = ["register"]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "warmup",
        help="compile every compiled kernel once (numba caches them on disk for every later run)",
        description="Run every area's public functions on tiny inputs so that numba compiles their kernels and "
        "caches the machine code on disk (next to the package, or in NUMBA_CACHE_DIR). The first run after an "
        "install pays the compilation; later runs, and every later `tractable` or Python session, load the cache.",
    )
    p.add_argument(
        "--area",
        action="append",
        metavar="AREA",
        help="only this area (repeatable): 'exact inference', 'clique MAP', 'cardinality', 'HL-MRF', 'PSL', "
        "'belief propagation', 'sampling', 'tree CRFs'",
    )
    p.set_defaults(func=_run)


def _run(args) -> int:
    from ..demo import warmup

    def report(area, seconds):
        print(f"{area:<20} {seconds:6.1f} s", file=sys.stdout, flush=True)

    spent = warmup(args.area, progress=report)
    print(f"{'total':<20} {sum(spent.values()):6.1f} s")
    return 0
