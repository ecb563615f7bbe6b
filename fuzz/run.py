"""Run every fuzz target for a bounded time and summarize what it found (``make fuzz``).

Each target (``fuzz/fuzz_<name>.py``) is an atheris (libFuzzer) harness of one reader (the UAI formats,
``.npz`` arrays and models, PSL programs, rules, ``.data`` files, data files and evaluator options) or of
the command line's argument handling (``fuzz_cli.py``). ``tests/test_fuzz_smoke.py`` runs every target
without atheris on seeded mutations of its seeds, a few seconds in all, as part of ``make test``. This script
runs them one after the other, each for ``--time`` seconds (``FUZZ_TIME``, default 60), starting from the
seed files in ``fuzz/seeds/<name>/`` and a corpus kept in ``--out`` (default ``$TMPDIR/tractable-fuzz``,
so that a second run continues where the first stopped). Inputs that crash a target (an exception other
than the ``ValueError`` the readers promise, a memory blow-up past ``-rss_limit_mb``, a hang past
``-timeout``) are saved in ``<out>/crashes/``; turn each into a regression test with its input in
``tests/data/fuzz/`` (``tests/test_fuzz_regressions.py``).

Prints one line per target: executions, executions per second, corpus size and crashes; exits 1 if any
target crashed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def targets() -> list[str]:
    """The names of the targets: ``fuzz/fuzz_<name>.py`` whose module imports (a target whose reader does
    not exist yet, such as PSL's before its package lands, is skipped by the runner with a note)."""
    return sorted(p.stem.removeprefix("fuzz_") for p in HERE.glob("fuzz_*.py"))


def _signature(log: str) -> str:
    """One line naming a crash: the exception (or libFuzzer's kind of failure) and where it was raised."""
    exc = re.findall(r"^(\w+(?:Error|Exception|Exit|Interrupt)\b.*)$", log, flags=re.M)
    where = re.findall(r'File "([^"]+)", line (\d+), in (\w+)', log)
    if exc:  # numbers (bytes, positions, sizes) vary between inputs that hit the same bug
        at = f" at {Path(where[-1][0]).name}:{where[-1][1]}" if where else ""
        return re.sub(r"0x[0-9a-f]+|\d+", "N", exc[-1][:160]) + at
    kind = re.findall(r"ERROR: libFuzzer: ([\w -]+)", log)
    return kind[-1] if kind else "unknown"


def run_target(name: str, seconds: int, out: Path, rss_mb: int, max_restarts: int = 8) -> dict:
    """Fuzz one target for ``seconds`` in total; after a crash, start again (same corpus) while time remains,
    so that one finding does not hide the next. Returns the executions, corpus size and distinct crashes."""
    corpus = out / "corpus" / name
    crashes = out / "crashes"
    corpus.mkdir(parents=True, exist_ok=True)
    crashes.mkdir(parents=True, exist_ok=True)
    seeds = HERE / "seeds" / name
    executions, found, skipped, returncode, logs = 0, {}, False, 0, []
    t0 = time.perf_counter()
    for _ in range(max_restarts + 1):
        left = int(seconds - (time.perf_counter() - t0))
        if left < 2:
            break
        before = set(crashes.glob(f"{name}-*"))
        cmd = [
            sys.executable,
            str(HERE / f"fuzz_{name}.py"),
            str(corpus),
            *([str(seeds)] if seeds.is_dir() else []),
            f"-max_total_time={left}",
            f"-rss_limit_mb={rss_mb}",
            "-timeout=30",
            "-print_final_stats=1",
            f"-artifact_prefix={crashes}/{name}-",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE, timeout=left * 3 + 300)
        log = proc.stdout + proc.stderr
        logs.append(log)
        runs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log)
        if not runs:  # final stats come only at a normal exit; fall back on the progress lines
            runs = re.findall(r"#(\d+)\s+(?:pulse|NEW|REDUCE|DONE|INITED)", log)
        executions += int(runs[-1]) if runs else 0
        new = sorted(set(crashes.glob(f"{name}-*")) - before)
        if not new:
            skipped = "ModuleNotFoundError" in log and not runs
            returncode = proc.returncode
            break
        signature = _signature(log)
        found.setdefault(signature, new[0])
    (out / f"{name}.log").write_text("\n\n".join(logs))
    return {
        "target": name,
        "seconds": time.perf_counter() - t0,
        "executions": executions,
        "corpus": len(list(corpus.iterdir())),
        "crashes": found,
        "skipped": skipped,
        "returncode": returncode,
        "tail": logs[-1].strip().splitlines()[-15:] if logs else [],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=int, default=int(os.environ.get("FUZZ_TIME", "60")), help="seconds per target")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "tractable-fuzz")
    ap.add_argument("--rss-mb", type=int, default=2048, help="memory limit of a target (libFuzzer -rss_limit_mb)")
    ap.add_argument("--fresh", action="store_true", help="start from the seeds only (drop the kept corpus)")
    ap.add_argument("names", nargs="*", help=f"targets to run (default all: {', '.join(targets())})")
    args = ap.parse_args(argv)
    names = args.names or targets()
    unknown = sorted(set(names) - set(targets()))
    if unknown:
        ap.error(f"unknown targets {unknown}; the targets are {targets()}")
    if args.fresh and (args.out / "corpus").exists():
        shutil.rmtree(args.out / "corpus")
    failed = False
    print(f"fuzzing {len(names)} targets for {args.time} s each; corpus and crashes in {args.out}", flush=True)
    for name in names:
        r = run_target(name, args.time, args.out, args.rss_mb)
        if r["skipped"]:
            print(f"  {name:<8} skipped: its reader does not import (see {args.out}/{name}.log)", flush=True)
            continue
        rate = r["executions"] / r["seconds"] if r["seconds"] else 0.0
        status = "ok"
        if r["crashes"]:
            status = f"{len(r['crashes'])} distinct crash(es):" + "".join(
                f"\n    {sig}\n      input: {path}" for sig, path in r["crashes"].items()
            )
        if not r["crashes"] and r["returncode"] != 0:
            status = f"exit status {r['returncode']} without a crash file:\n    " + "\n    ".join(r["tail"])
        failed |= bool(r["crashes"]) or r["returncode"] != 0
        print(
            f"  {name:<8} {r['executions']:>9,} executions in {r['seconds']:5.0f} s ({rate:,.0f}/s), "
            f"corpus {r['corpus']:>4}: {status}",
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
