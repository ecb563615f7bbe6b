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
    want = "`--max-table-size` applies to `--method auto` and `--method variable_elimination` only; got --method "
    want += "enumerate."
    assert want in err and len(err.strip().splitlines()) == 1
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


# ----------------------------------------------------------------------------- options checked by the parser


def _fails(argv, capsys, message):
    """``main(argv)`` exits 2 with one line on stderr that holds ``message``."""
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["solve", "M", "--task", "MMP", "--seed", "-1"], "argument --seed: expected an integer >= 0; got '-1'"),
        (
            ["solve", "M", "--task", "MMP", "--epsilon", "0.7"],
            "argument --epsilon: expected a number between 0 and 0.5",
        ),
        (["solve", "M", "--task", "MMP", "--max-sweeps", "0"], "argument --max-sweeps: expected an integer >= 1"),
        (["solve", "M", "--task", "MAR", "--time-limit", "0"], "argument --time-limit: expected a finite number > 0"),
        (["solve", "M", "--task", "MAR", "--max-iter", "1.5"], "argument --max-iter: expected an integer >= 1"),
        (["solve", "M", "--task", "MAR", "--tol", "-1"], "argument --tol: expected a finite number >= 0; got '-1'"),
        (["solve", "M", "--task", "MAR", "--damping", "1"], "argument --damping: expected a number in [0, 1); got '1'"),
        (
            ["solve", "M", "--task", "MAR", "--max-table-size", "0"],
            "argument --max-table-size: expected an integer >= 1",
        ),
        (["hlmrf", "M", "--method", "highs", "--max-iter", "0"], "argument --max-iter: expected an integer >= 1"),
        (["hlmrf", "M", "--rho", "0"], "argument --rho: expected a finite number > 0; got '0'"),
        (["hlmrf", "M", "--eps-abs", "-1"], "argument --eps-abs: expected a finite number >= 0"),
        (["hlmrf", "M", "--eps-rel", "nan"], "argument --eps-rel: expected a finite number >= 0; got 'nan'"),
        (["hlmrf", "M", "--gap-tol", "0"], "argument --gap-tol: expected a finite number > 0"),
        (["hlmrf", "M", "--time-limit", "-2"], "argument --time-limit: expected a finite number > 0"),
        (["hlmrf", "M", "--threads", "two"], "argument --threads: expected an integer; got 'two'"),
        (["hlmrf", "M", "--threads", "-1"], "`--threads` must be an integer from 0 (all) to"),  # before reading M
        (["clique", "--benchmark", "POTZ"], "argument --benchmark: invalid choice: 'POTZ'"),
        (["clique", "--benchmark", "POTTS", "--n", "1"], "argument --n: expected an integer >= 2; got '1'"),
        (["clique", "--benchmark", "POTTS", "--m", "0"], "argument --m: expected an integer >= 1; got '0'"),
        (["clique", "--benchmark", "POTTS", "--seed", "-1"], "argument --seed: expected an integer >= 0"),
        (["clique", "--benchmark", "POTTS", "--lam", "inf"], "argument --lam: expected a finite number; got 'inf'"),
        (["clique", "--benchmark", "POTTS", "--lam", "-1"], "`--lam` must be >= 0 with --benchmark; got -1.0."),
        (["cardinality", "T", "F", "--task", "sample", "--size", "-1"], "argument --size: expected an integer >= 0"),
        (["cardinality", "T", "F", "--task", "sample", "--seed", "x"], "argument --seed: expected an integer >= 0"),
    ],
)
def test_bad_option_values_exit_2_naming_the_flag(argv, message, capsys):
    command = f"tractable {argv[0]}: error: "
    _fails(argv, capsys, message)
    assert main(argv) == 2 and capsys.readouterr().err.startswith(command)  # the files (M, T, F) are never read


def test_clique_benchmark_kind_is_case_insensitive(capsys):
    assert main(["clique", "--benchmark", "potts", "--n", "6", "--m", "3", "--seed", "1"]) == 0
    lower = capsys.readouterr().out
    assert main(["clique", "--benchmark", "POTTS", "--n", "6", "--m", "3", "--seed", "1"]) == 0
    assert capsys.readouterr().out.split('"time_s"')[0] == lower.split('"time_s"')[0]


# ----------------------------------------------------------------------------- options the run would ignore


@pytest.fixture
def clique_npz(tmp_path):
    path = tmp_path / "c.npz"
    np.savez(path, phi=np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]]), W=np.eye(2))
    return str(path)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--benchmark", "POTTS", "--potential", "entropy"], "`--potential` applies to `--npz` only"),
        (["--npz", "NPZ", "--n", "10"], "`--n` applies to `--benchmark` only; got --npz"),
        (["--npz", "NPZ", "--m", "3"], "`--m` applies to `--benchmark` only; got --npz"),
        (["--npz", "NPZ", "--seed", "0"], "`--seed` applies to `--benchmark` only; got --npz"),
        (["--npz", "NPZ", "--potential", "majority", "--lam", "2"], "`--lam` does not apply to --potential majority"),
        (
            ["--benchmark", "POTTS", "--n", "6", "--method", "majority_exact"],
            "`--method majority_exact` does not apply to --benchmark POTTS: the clique potential must be a "
            "LinearMajority",
        ),
        (
            ["--npz", "NPZ", "--potential", "makespan", "--method", "alpha_expansion"],
            "`--method alpha_expansion` does not apply to --potential makespan: the clique potential must be a SUM",
        ),
    ],
)
def test_clique_options_the_source_does_not_use_are_errors(extra, message, clique_npz, capsys):
    _fails(["clique", *[clique_npz if a == "NPZ" else a for a in extra]], capsys, message)


def test_clique_npz_options_that_apply_still_run(clique_npz, capsys):
    assert main(["clique", "--npz", clique_npz, "--potential", "makespan", "--lam", "-0.5"]) == 0
    assert main(["clique", "--npz", clique_npz, "--potential", "majority"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["solve", "M", "--task", "MMP", "--max-table-size", "9"],
            "`--max-table-size` applies to `--method auto` and `--method variable_elimination` only",
        ),
        (["solve", "M", "--task", "MAR", "--seed", "0"], "`--seed` applies to `--task MMP` only; got --task MAR."),
        (["solve", "M", "--task", "PR", "--method", "lbp", "--epsilon", "0.1"], "`--epsilon` applies to `--task MMP`"),
        (["hlmrf", "M", "--method", "highs", "--max-iter", "5"], "`--max-iter` applies to `--method admm` only; got "),
        (["hlmrf", "M", "--method", "clarabel", "--rho", "2"], "`--rho` applies to `--method admm` only"),
        (["hlmrf", "M", "--method", "highs", "--constraints", "local"], "`--constraints` applies to `--method admm`"),
        (["hlmrf", "M", "--method", "highs", "--threads", "1"], "`--threads` applies to `--method admm` only"),
        (["hlmrf", "M", "--method", "highs", "--no-progress"], "`--no-progress` applies to `--method admm` only"),
    ],
)
def test_options_the_method_does_not_use_are_errors_before_reading(argv, message, capsys):
    _fails(argv, capsys, message)  # M does not exist: the options are checked first


def test_hlmrf_reference_solver_takes_its_own_options(tmp_path, capsys):
    from tractable.datasets import opinion_diffusion

    opinion_diffusion(20, rng=0).save(tmp_path / "m.npz")
    assert main(["hlmrf", str(tmp_path / "m.npz"), "--method", "highs", "--time-limit", "60", "--repair"]) == 0
    assert "method     highs" in capsys.readouterr().out


# ----------------------------------------------------------------------------- solve -o: the summary line


def test_solve_output_line_names_the_method_once(tmp_path, capsys):
    from tractable.datasets import grid_factor_graph

    write_uai(tmp_path / "m.uai", grid_factor_graph(3, 3, field=4.0, coupling=0.5, rng=2))
    out = str(tmp_path / "out.txt")
    cases = [
        (["--task", "MAR"], "(enumerate: exact solution; picked by 'auto'"),
        (["--task", "MAR", "--method", "enumerate"], "(enumerate: exact solution)"),
        (["--task", "MAP", "--method", "variable_elimination"], "(variable_elimination: exact solution)"),
        (["--task", "PR", "--method", "lbp"], "(loopy: converged after"),
        (["--task", "MMP", "--seed", "0"], "(adaptive_mmp: "),
    ]
    for extra, want in cases:
        assert main(["solve", str(tmp_path / "m.uai"), *extra, "-o", out]) == 0
        err = capsys.readouterr().err.strip().splitlines()
        task = extra[1]
        assert err[-1].startswith(f"wrote {task} result to {out} {want}"), err
        method = want[1:].split(":")[0]
        assert err[-1].count(method) == 1, err


def test_solve_names_the_model_file_where_the_engine_names_its_argument(tmp_path, capsys):
    """The engines say `fg`; the command line says which file: a 3-state model given to MMP's sampler."""
    from tractable.datasets import grid_factor_graph

    path = tmp_path / "g3.uai"
    write_uai(path, grid_factor_graph(2, 2, n_states=3, rng=0))
    assert main(["solve", str(path), "--task", "MMP"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{path}: the model must have binary variables only" in err[0] and "`fg`" not in err[0]
