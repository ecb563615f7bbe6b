"""`tractable demo` and `tractable warmup`: every capability on built-in example problems, one table row each.

Each algorithm family has a module in this package (listed in ``DEMOS``) with two functions:
``warm()`` runs the area's public functions on tiny inputs, so that numba compiles their kernels (or
loads them from the on-disk cache, after the first run), and ``demo_rows()`` returns the rows of the
table. A row is a dict with keys ``problem``, ``method``, ``quality`` and ``time`` (seconds).

The demo warms each area before its rows, so a row's time is a warm call, and prints the one-time
cost (compilation on the first run after an install, loading the cache afterwards) apart.
"""

from __future__ import annotations

import gc
import importlib
import time

__all__ = ["DEMOS", "collect_rows", "format_table", "run_demo", "warmup"]

#: ``(area, module)`` of every area's demo module (with ``warm()`` and ``demo_rows()``), in the order shown.
DEMOS: list[tuple[str, str]] = [
    ("exact inference", "tractable.demo.exact"),
    ("clique MAP", "tractable.demo.clique"),
    ("cardinality", "tractable.demo.cardinality"),
    ("HL-MRF", "tractable.demo.hlmrf"),
    ("PSL", "tractable.demo.psl"),
    ("belief propagation", "tractable.demo.bp"),
    ("sampling", "tractable.demo.sampling"),
    ("tree CRFs", "tractable.demo.crf"),
]


def warmup(areas=None, progress=None) -> dict[str, float]:
    """Compile every area's kernels (or load them from numba's on-disk cache) by running ``warm()``.

    Parameters
    ----------
    areas : list of str, optional
        Area names of :data:`DEMOS` (default: all).
    progress : callable, optional
        Called as ``progress(area, seconds)`` after each area.

    Returns
    -------
    dict of str to float
        Seconds per area. On the first run after an install this is the compilation; later runs
        only load the cached machine code.
    """
    known = [a for a, _ in DEMOS]
    if areas is not None:
        unknown = [a for a in areas if a not in known]
        if unknown:
            raise ValueError(f"`areas` must name areas of {known}; got {unknown}.")
    out = {}
    for area, module in DEMOS:
        if areas is not None and area not in areas:
            continue
        t0 = time.perf_counter()
        importlib.import_module(module).warm()
        out[area] = time.perf_counter() - t0
        if progress is not None:
            progress(area, out[area])
    return out


def collect_rows(progress=None, warm: bool = True) -> list[dict]:
    """Run every area's demo and return its rows (with the area name added).

    With ``warm`` (the default) each area's ``warm()`` runs first (then a garbage collection, so that
    the compilations' garbage is not collected inside a timed row) and its seconds are passed to
    ``progress(area, warm_seconds, rows_seconds)``, so the rows time warm calls.
    """
    rows = []
    for area, name in DEMOS:
        module = importlib.import_module(name)
        t0 = time.perf_counter()
        if warm:
            module.warm()
            gc.collect()  # the compilations' garbage, collected now rather than inside a timed row
        t1 = time.perf_counter()
        for row in module.demo_rows():
            rows.append({"area": area, **row})
        if progress is not None:
            progress(area, t1 - t0, time.perf_counter() - t1)
    return rows


def format_table(rows: list[dict]) -> str:
    """Plain-text table of demo rows."""
    cols = ["area", "problem", "method", "quality", "time"]
    cells = [[str(r[c]) if c != "time" else f"{r[c] * 1e3:.1f} ms" for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(cols)]
    line = "  ".join(c.ljust(w) for c, w in zip(cols, widths))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join([line, sep, *body])


def run_demo(stream=None) -> list[dict]:
    """Print the demo table to ``stream`` (stdout by default) and return the rows."""
    import sys

    stream = stream or sys.stdout
    t0 = time.perf_counter()
    warm: dict[str, float] = {}
    rows = collect_rows(progress=lambda area, w, r: warm.__setitem__(area, w))
    total = time.perf_counter() - t0
    print(format_table(rows), file=stream)
    spent = ", ".join(f"{area} {s:.1f}" for area, s in warm.items())
    print(
        f"\nkernels compiled or loaded from the cache first, {sum(warm.values()):.1f} s ({spent}): the first run after "
        "an install compiles them (`tractable warmup` does it on purpose), later runs load them",
        file=stream,
    )
    print(f"{len(rows)} problems solved in {total:.1f} s", file=stream)
    return rows
