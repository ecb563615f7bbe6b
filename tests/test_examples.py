"""Every script in examples/ runs to completion (they are what new users copy from)."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script):
    r = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600, cwd=script.parent.parent
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip(), "an example should print what it shows"
