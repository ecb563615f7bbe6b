"""Run every benchmark script in this folder and regenerate RESULTS.md.

    python benchmarks/run_all.py            # full runs: append to results/*.json, regenerate RESULTS.md
    python benchmarks/run_all.py --quick    # smoke run of every script at small sizes (CI), minutes

``--quick`` passes through to each script. Unless ``TRACTABLE_BENCH_OUT`` is set, a quick run writes its rows
to a temporary folder, so that smoke runs never replace the recorded results. Each script's wall time is
printed; the exit status is 1 when any script fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    extra = sys.argv[1:]
    env = dict(os.environ)
    tmp = None
    if "--quick" in extra and "TRACTABLE_BENCH_OUT" not in env:
        tmp = tempfile.TemporaryDirectory(prefix="tractable-bench-")
        env["TRACTABLE_BENCH_OUT"] = tmp.name
    scripts = sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_") and p.name != "run_all.py")
    failed = []
    for script in scripts:
        print(f"== {script.name} {' '.join(extra)}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.run([sys.executable, str(script), *extra], cwd=HERE.parent, env=env).returncode
        print(
            f"== {script.name}: {'ok' if rc == 0 else f'FAILED ({rc})'} in {time.perf_counter() - t0:.1f} s", flush=True
        )
        if rc != 0:
            failed.append(script.name)
    if tmp is not None:
        tmp.cleanup()
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
