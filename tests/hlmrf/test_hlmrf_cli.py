"""`tractable hlmrf MODEL` and the demo rows."""

import argparse
import re

import numpy as np
import pytest

from tractable.cli.hlmrf import register
from tractable.datasets import opinion_diffusion
from tractable.hlmrf import solve


def _main(argv):
    parser = argparse.ArgumentParser(prog="tractable")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_solves_a_saved_model(tmp_path, capsys):
    m = opinion_diffusion(100, squared=True, rng=0)
    m.save(tmp_path / "m.npz")
    out = tmp_path / "x.npy"
    rc = _main(["hlmrf", str(tmp_path / "m.npz"), "--eps-rel", "1e-6", "--no-progress", "-o", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "status     converged" in text
    ref = solve(m, method="clarabel")
    np.testing.assert_allclose(m.objective(np.load(out)), ref.objective, rtol=1e-4)
    rc = _main(["hlmrf", str(tmp_path / "m.npz"), "--method", "clarabel", "-o", str(tmp_path / "x.txt")])
    assert rc == 0
    np.testing.assert_allclose(np.loadtxt(tmp_path / "x.txt"), ref.x, atol=1e-9)


def test_cli_passes_only_the_options_the_user_set(tmp_path, monkeypatch):
    import tractable.hlmrf.admm as admm

    m = opinion_diffusion(50, rng=0)
    m.save(tmp_path / "m.npz")
    seen = []
    real = admm.solve

    def spy(model, *, method="admm", **kwargs):
        seen.append((method, kwargs))
        return real(model, method=method, **kwargs)

    monkeypatch.setattr(admm, "solve", spy)
    assert _main(["hlmrf", str(tmp_path / "m.npz"), "--no-progress"]) == 0
    assert _main(["hlmrf", str(tmp_path / "m.npz"), "--max-iter", "5000", "--rho", "0.5"]) == 0  # stderr: no terminal
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    assert _main(["hlmrf", str(tmp_path / "m.npz"), "--max-iter", "5000"]) == 0  # a terminal: the bar
    assert _main(["hlmrf", str(tmp_path / "m.npz"), "--method", "highs", "--time-limit", "60"]) == 0
    assert seen == [
        ("admm", {}),
        ("admm", {"rho": 0.5, "max_iter": 5000}),
        ("admm", {"max_iter": 5000, "progress": True}),
        ("highs", {"time_limit": 60.0}),
    ]


def test_cli_rejects_admm_options_for_reference_solvers(tmp_path):
    m = opinion_diffusion(50, rng=0)
    m.save(tmp_path / "m.npz")
    with pytest.raises(ValueError, match=re.escape("`--max-iter` applies to `--method admm` only; got --method highs")):
        _main(["hlmrf", str(tmp_path / "m.npz"), "--method", "highs", "--max-iter", "5"])


def test_cli_bad_file(tmp_path):
    (tmp_path / "bad.npz").write_text("x")
    with pytest.raises(ValueError, match="is not a readable .npz file"):
        _main(["hlmrf", str(tmp_path / "bad.npz")])


def test_demo_rows():
    from tractable.demo.hlmrf import demo_rows

    rows = demo_rows()
    assert len(rows) == 4
    for row in rows:
        assert set(row) == {"problem", "method", "quality", "time"} and row["time"] >= 0


@pytest.mark.parametrize("kind", ["truncated", "text"])
def test_cli_broken_model_file_exits_2_with_one_line(tmp_path, capsys, kind):
    from tractable.cli import main

    path = tmp_path / "broken.npz"
    if kind == "truncated":
        opinion_diffusion(10, rng=0).save(path)
        path.write_bytes(path.read_bytes()[:200])
    else:
        path.write_text("this is not a model\n")
    assert main(["hlmrf", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert re.match(re.escape(f"tractable hlmrf: error: `path` is not a readable .npz file: {path} ("), err)


def test_cli_gap_tol(tmp_path, capsys):
    m = opinion_diffusion(100, rng=0)
    m.save(tmp_path / "m.npz")
    rc = _main(
        ["hlmrf", str(tmp_path / "m.npz"), "--gap-tol", "1e-2", "--eps-abs", "0", "--eps-rel", "0", "--no-progress"]
    )
    text = capsys.readouterr().out
    assert rc == 0 and "status     converged" in text
    gap = float(re.search(r"certified gap ([-+.\deE]+)\)", text).group(1))
    assert gap <= 1e-2
    with pytest.raises(SystemExit):  # the parser refuses it, naming the flag
        _main(["hlmrf", str(tmp_path / "m.npz"), "--gap-tol", "-1", "--no-progress"])
    assert "argument --gap-tol: expected a finite number > 0; got '-1'" in capsys.readouterr().err


@pytest.fixture
def numba_threads():
    import numba

    before = numba.get_num_threads()
    yield numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(before)


def test_cli_threads_option(tmp_path, monkeypatch, numba_threads):
    import numba

    import tractable.hlmrf.admm as admm

    m = opinion_diffusion(50, rng=0)
    m.save(tmp_path / "m.npz")
    seen = []
    real = admm.solve

    def spy(model, method="admm", **kwargs):
        seen.append(kwargs.get("parallel"))
        return real(model, method=method, **kwargs)

    monkeypatch.setattr(admm, "solve", spy)
    assert _main(["hlmrf", str(tmp_path / "m.npz"), "--no-progress", "--threads", "1"]) == 0
    assert numba.get_num_threads() == 1
    assert _main(["hlmrf", str(tmp_path / "m.npz"), "--no-progress", "--threads", "0"]) == 0
    assert numba.get_num_threads() == numba_threads
    assert seen == [None, True if numba_threads > 1 else None]
    for bad in ("-1", str(numba_threads + 1)):
        with pytest.raises(
            ValueError, match=re.escape(f"`--threads` must be an integer from 0 (all) to {numba_threads}")
        ):
            _main(["hlmrf", str(tmp_path / "m.npz"), "--threads", bad])
