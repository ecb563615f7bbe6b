"""`tractable demo`: every capability on built-in example problems, one table row each.

Each algorithm family contributes rows through a ``demo_rows()`` function in its own module
(listed in ``DEMOS``). A row is a dict with keys ``problem``, ``method``, ``quality`` and ``time``
(seconds).
"""

from __future__ import annotations

import importlib
import time

__all__ = ["DEMOS", "collect_rows", "format_table", "run_demo"]

#: ``(area, "module:function")`` of every demo row provider, in the order they are shown.
DEMOS: list[tuple[str, str]] = [
    ("exact inference", "tractable.exact._demo:demo_rows"),
    ("clique MAP", "tractable.clique._demo:demo_rows"),
    ("cardinality", "tractable.cardinality._demo:demo_rows"),
    ("HL-MRF", "tractable.hlmrf._demo:demo_rows"),
    ("PSL", "tractable.psl._demo:demo_rows"),
    ("belief propagation", "tractable.bp._demo:demo_rows"),
    ("sampling", "tractable.sampling._demo:demo_rows"),
    ("tree CRFs", "tractable.crf._demo:demo_rows"),
]


def collect_rows(progress=None) -> list[dict]:
    """Run every demo provider and return its rows (with the area name added)."""
    rows = []
    for area, target in DEMOS:
        module, func = target.split(":")
        t0 = time.perf_counter()
        provider = getattr(importlib.import_module(module), func)
        for row in provider():
            rows.append({"area": area, **row})
        if progress is not None:
            progress(area, time.perf_counter() - t0)
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
    rows = collect_rows()
    print(format_table(rows), file=stream)
    print(f"\n{len(rows)} problems solved in {time.perf_counter() - t0:.1f} s", file=stream)
    return rows
