"""Shared helper of the benchmark scripts.

Every row a benchmark records carries the machine (CPU, cores, Python, NumPy/SciPy versions), the
date and the git commit. Rows are appended to ``benchmarks/results/<area>.json`` and
``benchmarks/RESULTS.md`` is regenerated from all result files: one section per area, showing the
latest run of each area as a table (earlier runs stay in the JSON files).

Usage in a benchmark script::

    from _harness import Recorder
    rec = Recorder("cardinality", notes="what is compared, and the targets")
    rec.add(case="D=1024", ours_s=..., baseline_s=..., speedup=...)
    rec.save()          # appends to results/cardinality.json, regenerates RESULTS.md

Set ``TRACTABLE_BENCH_OUT=<folder>`` to write the JSON files and RESULTS.md there instead (a smoke run, as
CI's ``run_all.py --quick``, must not overwrite the recorded results).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
_OUT = os.environ.get("TRACTABLE_BENCH_OUT")
RESULTS_DIR = Path(_OUT) / "results" if _OUT else HERE / "results"
RESULTS_MD = Path(_OUT) / "RESULTS.md" if _OUT else HERE / "RESULTS.md"


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=10,
        )
        commit = out.stdout.strip() or "unknown"
        return commit + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine_info() -> dict:
    """CPU, cores, Python, NumPy and SciPy versions, date and git commit."""
    import numpy
    import scipy

    return {
        "cpu": _cpu_name(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "commit": _git_commit(),
    }


def best_time(fn, *, repeat: int = 5, min_time: float = 0.0):
    """Run ``fn()`` ``repeat`` times (more while the total is under ``min_time`` s).

    Returns ``(best seconds, value of the last call)``.
    """
    best = float("inf")
    value = None
    total = 0.0
    n = 0
    while n < repeat or total < min_time:
        t0 = time.perf_counter()
        value = fn()
        dt = time.perf_counter() - t0
        best = min(best, dt)
        total += dt
        n += 1
        if n >= 1000:
            break
    return best, value


class Recorder:
    """Collects rows of one benchmark run and saves them with the machine info."""

    def __init__(self, area: str, *, title: str | None = None, notes: str = "") -> None:
        self.area = area
        self.title = title or area
        self.notes = notes
        self.machine = machine_info()
        self.run_id = self.machine["date"]
        self.rows: list[dict] = []

    def add(self, **row) -> dict:
        """Add one row (plain JSON-able values); print it so long runs show progress."""
        row = {k: (float(v) if hasattr(v, "dtype") else v) for k, v in row.items()}
        self.rows.append(row)
        print("  " + ", ".join(f"{k}={_fmt(v)}" for k, v in row.items()), flush=True)
        return row

    def save(self, *, update_keys: tuple | None = None) -> Path:
        """Append this run to ``results/<area>.json`` and regenerate ``RESULTS.md``.

        ``update_keys``: instead of a new run, put this run's rows into the latest one, replacing its rows with
        the same values of these columns (a rerun of some rows; every row keeps its own date and commit).
        """
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        path = RESULTS_DIR / f"{self.area}.json"
        runs = json.loads(path.read_text()) if path.exists() else []
        new_rows = [{**r, **{"_" + k: v for k, v in self.machine.items()}} for r in self.rows]
        if update_keys and runs:
            last = runs[-1]
            keys = {tuple(r.get(k) for k in update_keys) for r in new_rows}
            kept = [r for r in last["rows"] if tuple(r.get(k) for k in update_keys) not in keys]
            order = {tuple(r.get(k) for k in update_keys): i for i, r in enumerate(last["rows"])}
            last["rows"] = sorted(kept + new_rows, key=lambda r: order.get(tuple(r.get(k) for k in update_keys), 1e9))
            last["notes"] = last.get("notes", "") + (
                f" Rows {sorted(keys)} rerun on {self.machine['date']} at commit {self.machine['commit']}."
            )
            path.write_text(json.dumps(runs, indent=1) + "\n")
            write_results_md()
            return path
        runs.append(
            {
                "run": self.run_id,
                "title": self.title,
                "notes": self.notes,
                "machine": self.machine,
                "rows": [{**r, **{"_" + k: v for k, v in self.machine.items()}} for r in self.rows],
            }
        )
        path.write_text(json.dumps(runs, indent=1) + "\n")
        write_results_md()
        return path


def _fmt(v) -> str:
    if isinstance(v, float):
        if v != v:
            return "nan"
        if v == 0 or 1e-3 <= abs(v) < 1e5:
            return f"{v:.4g}"
        return f"{v:.3e}"
    return str(v)


def write_results_md() -> None:
    """Regenerate ``RESULTS.md`` from every ``results/*.json`` (latest run of each area)."""
    parts = [
        "# Benchmark results",
        "",
        "Generated by `benchmarks/_harness.py` from `benchmarks/results/*.json`; do not edit by hand.",
        "Each section shows the latest run of one benchmark script; ratios compare our code with the",
        "baseline or anchor on the same inputs in the same run. All runs are kept in the JSON files.",
        "",
    ]
    for path in sorted(RESULTS_DIR.glob("*.json")):
        runs = json.loads(path.read_text())
        if not runs:
            continue
        run = runs[-1]
        m = run["machine"]
        parts += [f"## {run['title']}", ""]
        if run.get("notes"):
            parts += [run["notes"], ""]
        parts += [
            f"Run {m['date']} at commit `{m['commit']}` on {m['cpu']} ({m['cores']} cores), Python {m['python']},"
            f" NumPy {m['numpy']}, SciPy {m['scipy']}.",
            "",
        ]
        figure = HERE / "figures" / f"{path.stem}.png"
        if figure.exists():
            parts += [f"![{run['title']}](figures/{figure.name})", ""]
        rows = [{k: v for k, v in r.items() if not k.startswith("_")} for r in run["rows"]]
        cols: list[str] = []
        for r in rows:
            cols += [k for k in r if k not in cols]
        if rows:
            parts.append("| " + " | ".join(cols) + " |")
            parts.append("|" + "---|" * len(cols))
            for r in rows:
                parts.append("| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |")
            parts.append("")
    RESULTS_MD.write_text("\n".join(parts) + "\n")


if __name__ == "__main__":
    write_results_md()
    print(f"wrote {RESULTS_MD}")
