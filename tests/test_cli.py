import subprocess
import sys

import numpy as np
import pytest

from tractable.cli import main
from tractable.datasets import random_factor_graph
from tractable.exact import enumerate_map, enumerate_marginals
from tractable.io import read_map, read_mar, write_evidence, write_uai


def test_version(capsys):
    assert main(["--version"]) == 0  # main returns the status, never raises SystemExit
    assert "tractable 0.1.0" in capsys.readouterr().out


def test_solve_mar_map_pr_match_enumeration(tmp_path, capsys):
    fg = random_factor_graph(7, 9, max_cardinality=3, p_forbidden=0.1, rng=5)
    write_uai(tmp_path / "m.uai", fg)
    write_evidence(tmp_path / "m.evid", {2: 1})
    sub = fg.condition({2: 1})
    ref = enumerate_marginals(sub)
    for method in ("auto", "enumerate", "variable_elimination"):
        assert (
            main(
                [
                    "solve",
                    str(tmp_path / "m.uai"),
                    "--evid",
                    str(tmp_path / "m.evid"),
                    "--task",
                    "MAR",
                    "--method",
                    method,
                    "-o",
                    str(tmp_path / "out.MAR"),
                ]
            )
            == 0
        )
        marg = read_mar(tmp_path / "out.MAR")
        assert marg[2].tolist() == [0.0, 1.0]
        kept = [m for v, m in enumerate(marg) if v != 2]
        for a, b in zip(kept, ref.marginals):
            np.testing.assert_allclose(a, b, atol=1e-12)  # tables pass through exp/log: a few ulps
    assert main(["solve", str(tmp_path / "m.uai"), "--task", "MAP", "-o", str(tmp_path / "out.MAP")]) == 0
    assignment = read_map(tmp_path / "out.MAP")
    assert fg.score(assignment) == pytest.approx(enumerate_map(fg).score, rel=1e-12)
    capsys.readouterr()
    assert main(["solve", str(tmp_path / "m.uai"), "--task", "PR"]) == 0
    out = capsys.readouterr().out.split()
    assert out[0] == "PR"
    assert float(out[1]) == pytest.approx(enumerate_marginals(fg).log_partition / np.log(10), rel=1e-12)


def test_bad_input_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.uai"
    bad.write_text("MARKOV\n2\n2\n")
    exe = [sys.executable, "-m", "tractable.cli"]
    for args in (["solve", str(bad), "--task", "MAR"], ["solve", str(tmp_path / "missing.uai"), "--task", "MAR"]):
        r = subprocess.run(exe + args, capture_output=True, text=True, timeout=120)
        assert r.returncode == 2
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_demo_prints_a_table(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "problem" in out and "variable elimination" in out


def test_auto_picks_elimination_for_larger_models(tmp_path):
    from tractable.datasets import grid_factor_graph

    fg = grid_factor_graph(4, 5, n_states=2, coupling=2.0, rng=7)  # 2**20 states: auto uses elimination
    write_uai(tmp_path / "grid.uai", fg)
    (tmp_path / "grid.evid").write_text("1\n2 3 1 11 0\n")  # the older format with a sample count
    assert (
        main(
            [
                "solve",
                str(tmp_path / "grid.uai"),
                "--evid",
                str(tmp_path / "grid.evid"),
                "--task",
                "MAR",
                "-o",
                str(tmp_path / "g.MAR"),
            ]
        )
        == 0
    )
    ref = enumerate_marginals(fg.condition({3: 1, 11: 0}))
    ours = [m for v, m in enumerate(read_mar(tmp_path / "g.MAR")) if v not in (3, 11)]
    for a, b in zip(ours, ref.marginals):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_reads_files_with_crlf_tabs_and_split_tables(tmp_path, capsys):
    text = "MARKOV\r\n2\r\n2\t2\r\n1\r\n2 0 1\r\n\r\n4\r\n1e0 2.0\r\n\r\n3 4\r\n"
    (tmp_path / "w.uai").write_text(text)
    assert main(["solve", str(tmp_path / "w.uai"), "--task", "MAR"]) == 0
    nums = [float(x) for x in capsys.readouterr().out.split()[1:]]
    np.testing.assert_allclose(nums, [2, 2, 0.3, 0.7, 2, 0.4, 0.6], rtol=1e-14)


def test_solve_rejects_options_its_method_does_not_use(tmp_path, capsys):
    fg = random_factor_graph(3, 3, rng=0)
    write_uai(tmp_path / "m.uai", fg)
    assert (
        main(["solve", str(tmp_path / "m.uai"), "--task", "MAR", "--method", "enumerate", "--max-table-size", "100"])
        == 2
    )
    err = capsys.readouterr().err
    assert "`max_table_size` does not apply to `method`='enumerate'" in err and len(err.strip().splitlines()) == 1
    assert main(["solve", str(tmp_path / "m.uai"), "--task", "MAR", "--method", "ve"]) == 2  # the old spelling is gone
    err = capsys.readouterr().err
    assert "argument --method: invalid choice: 've'" in err and len(err.strip().splitlines()) == 1
    assert (
        main(
            [
                "solve",
                str(tmp_path / "m.uai"),
                "--task",
                "MAR",
                "--method",
                "variable_elimination",
                "--max-table-size",
                "100",
            ]
        )
        == 0
    )


def test_cardinality_command_matches_the_library(tmp_path, capsys):
    from tractable import cardinality

    gen = np.random.default_rng(0)
    theta, f = gen.normal(size=7), gen.normal(size=8)
    f[3] = -np.inf
    (tmp_path / "theta.txt").write_text(", ".join(repr(float(v)) for v in theta))
    np.save(tmp_path / "f.npy", f)
    args = ["cardinality", str(tmp_path / "theta.txt"), str(tmp_path / "f.npy")]
    assert main(args) == 0
    rows = {
        line.split("\t")[0]: np.array(line.split("\t")[1:], dtype=float)
        for line in capsys.readouterr().out.split("\n")
        if line
    }
    want = cardinality.marginals(theta, f)
    np.testing.assert_allclose(rows["p_on"], want.p_on, rtol=1e-15)
    np.testing.assert_allclose(rows["count_marginals"], want.count_marginals, rtol=1e-15)
    assert rows["log_partition"][0] == want.log_partition
    assert main([*args, "--task", "map"]) == 0
    out = capsys.readouterr().out.split("\n")
    assert out[0].split("\t")[1:] == [str(v) for v in cardinality.map_assignment(theta, f).assignment]
    assert main([*args, "--task", "sample", "--size", "3", "--seed", "4"]) == 0
    samples = [line for line in capsys.readouterr().out.split("\n") if line.startswith("sample")]
    np.testing.assert_array_equal(
        np.array([s.split("\t")[1:] for s in samples], dtype=int), cardinality.sample(theta, f, size=3, rng=4)
    )
    assert main([*args, "-o", str(tmp_path / "out.npz")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["p_on"], want.p_on, rtol=1e-15)


@pytest.mark.parametrize(
    "extra, theta_text, message",
    [
        (["--size", "2"], "0 1", "`--size` applies to --task sample only"),
        ([], "0 one", "must hold numbers only; got 'one'"),
        ([], "0 1 2", "`f` must have"),
        (["--task", "map", "--method", "fft"], "0 1", "`--method` is not used by --task map"),
    ],
)
def test_cardinality_command_errors_are_one_line(tmp_path, capsys, extra, theta_text, message):
    (tmp_path / "theta.txt").write_text(theta_text)
    (tmp_path / "f.txt").write_text("0 0 0")
    assert main(["cardinality", str(tmp_path / "theta.txt"), str(tmp_path / "f.txt"), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_warmup_compiles_the_areas_asked_for(capsys):
    assert main(["warmup", "--area", "cardinality"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cardinality") and "total" in out
    assert main(["warmup", "--area", "nope"]) == 2
    assert "`areas` must name areas of" in capsys.readouterr().err


def test_the_program_tunes_the_garbage_collector_for_itself_only(tmp_path):
    import gc

    from tractable.cli import GC_THRESHOLDS

    before = gc.get_threshold()
    assert main(["solve", str(tmp_path / "missing.uai"), "--task", "MAR"]) == 2
    assert gc.get_threshold() == before  # main() in a caller's process leaves its collector alone
    script = (
        "import gc, sys\n"
        "from tractable.cli import entry\n"
        f"sys.argv = ['tractable', 'solve', {str(tmp_path / 'missing.uai')!r}, '--task', 'MAR']\n"
        "try:\n"
        "    entry()\n"
        "except SystemExit as e:\n"
        "    print(e.code, gc.get_threshold(), gc.get_freeze_count() > 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.stdout.split(None, 1)[0] == "2", r.stderr
    assert r.stdout.strip() == f"2 {GC_THRESHOLDS} True"
