import argparse
import json
import re

import numpy as np
import pytest

from tractable.cli.clique import register
from tractable.clique import LinearMajority, majority_exact, score


def _run(argv, capsys):
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["clique", *argv])
    code = args.func(args)
    return code, json.loads(capsys.readouterr().out)


def test_cli_benchmark_clique(capsys, tmp_path):
    out = tmp_path / "assignment.npy"
    code, res = _run(["--benchmark", "MAKESPAN", "--n", "30", "--m", "5", "--assignment-out", str(out)], capsys)
    assert code == 0 and res["method"] == "alpha_pass" and res["exact"] and res["status"] == "optimal"
    assert sum(res["label_counts"]) == 30 and np.load(out).shape == (30,)


def test_cli_npz_majority(capsys, tmp_path):
    rng = np.random.default_rng(0)
    phi, W = rng.uniform(0, 2, (8, 3)), rng.uniform(0, 1, (3, 3))
    path = tmp_path / "c.npz"
    np.savez(path, phi=phi, W=W)
    out = tmp_path / "y.npy"
    code, res = _run(
        ["--npz", str(path), "--potential", "majority", "--method", "majority_exact", "--assignment-out", str(out)],
        capsys,
    )
    assert code == 0
    assert res["score"] == pytest.approx(majority_exact(phi, W).score, abs=1e-9)
    assert res["score"] == pytest.approx(score(phi, LinearMajority(W), np.load(out)), abs=1e-9)


def test_cli_errors(tmp_path, capsys):
    path = tmp_path / "c.npz"
    np.savez(path, phi=np.zeros((3, 2)))
    with pytest.raises(
        ValueError, match=re.escape("`--potential majority` needs an array `W` in the .npz file; found ['phi'].")
    ):
        _run(["--npz", str(path), "--potential", "majority"], capsys)
    np.savez(path, psi=np.zeros((3, 2)))
    with pytest.raises(ValueError, match=re.escape("`--npz` file must hold an array `phi`; found ['psi'].")):
        _run(["--npz", str(path)], capsys)
    with pytest.raises(ValueError, match=re.escape("`--npz` must be a readable .npz file; got")):
        _run(["--npz", str(tmp_path / "missing.npz")], capsys)
