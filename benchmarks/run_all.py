"""Run every benchmark script in this folder (``--quick`` passes through) and regenerate RESULTS.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    extra = sys.argv[1:]
    scripts = sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_") and p.name != "run_all.py")
    failed = []
    for script in scripts:
        print(f"== {script.name} {' '.join(extra)}", flush=True)
        if subprocess.run([sys.executable, str(script), *extra], cwd=HERE.parent).returncode != 0:
            failed.append(script.name)
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
