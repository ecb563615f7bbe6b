"""`tractable psl`: JSON and .psl + .data programs, PSL's output files, evaluations, exit status 2 on bad input."""

import json
import subprocess
import sys

import pytest

from tractable.cli import main
from tractable.demo.psl import demo_rows


def _write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))


@pytest.fixture
def program(tmp_path):
    d = tmp_path / "data"
    _write(d / "link.txt", [("a", "b"), ("b", "a"), ("b", "c"), ("c", "b")])
    _write(d / "lab_obs.txt", [("a", "x", 1.0), ("a", "y", 0.0)])
    _write(d / "lab_targets.txt", [("b", "x"), ("b", "y"), ("c", "x"), ("c", "y")])
    _write(d / "lab_truth.txt", [("b", "x", 1), ("b", "y", 0), ("c", "x", 1), ("c", "y", 0)])
    rules = ["1.0: Lab(A, C) & Link(A, B) -> Lab(B, C) ^2", "Lab(A, +C) = 1 .", "0.01: !Lab(A, C) ^2"]
    cfg = {
        "options": {"runtime.db.intids": True, "admmreasoner.epsilonrel": 1e-6},
        "rules": rules,
        "predicates": {
            "Link/2": {"observations": ["data/link.txt"]},
            "Lab/2": {
                "observations": ["data/lab_obs.txt"],
                "targets": ["data/lab_targets.txt"],
                "truth": ["data/lab_truth.txt"],
                "evaluations": ["DiscreteEvaluator", {"evaluator": "CategoricalEvaluator"}],
            },
        },
    }
    (tmp_path / "prog.json").write_text("# a PSL program\n" + json.dumps(cfg, indent=2))
    (tmp_path / "m.psl").write_text("\n".join(rules) + "\n")
    (tmp_path / "m.data").write_text(
        "predicates:\n  Link/2: closed\n  Lab/2: open\n\n"
        "observations:\n  Link: data/link.txt\n  Lab: data/lab_obs.txt\n"
        "targets:\n  Lab: data/lab_targets.txt\ntruth:\n  Lab: data/lab_truth.txt\n"
    )
    return tmp_path


def _read(path):
    return sorted(tuple(line.split("\t")) for line in path.read_text().splitlines())


def test_json_program_writes_psl_output_and_evaluations(program, capsys):
    out = program / "out"
    rc = main(["psl", str(program / "prog.json"), "--output", str(out)])
    text = capsys.readouterr()
    assert rc == 0
    rows = _read(out / "LAB.txt")
    assert [r[:2] for r in rows] == [("b", "x"), ("b", "y"), ("c", "x"), ("c", "y")]
    values = {r[:2]: float(r[2]) for r in rows}
    assert values["b", "x"] > 0.5 > values["b", "y"]
    assert "evaluation Lab: n 4, accuracy 1.0000" in text.out
    assert "categorical_accuracy 1.0000" in text.out
    assert "ignored PSL options: runtime.db.intids" in text.err


def test_psl_and_data_files_give_the_same_output(program, capsys):
    rc = main(["psl", str(program / "m.psl"), str(program / "m.data"), "--output", str(program / "o2")])
    assert rc == 0
    main(["psl", str(program / "prog.json"), "--output", str(program / "o1"), "--eps-rel", "1e-3"])
    a, b = _read(program / "o1" / "LAB.txt"), _read(program / "o2" / "LAB.txt")
    assert [r[:2] for r in a] == [r[:2] for r in b]
    for ra, rb in zip(a, b):
        assert float(ra[2]) == pytest.approx(float(rb[2]), abs=1e-2)  # tolerance: ADMM eps_rel 1e-3 on both


@pytest.mark.parametrize(
    "argv, message",
    [
        (["missing.json"], "file not found"),
        (["m.psl"], "must be a PSL 2.4 .json file"),
        (["m.psl", "missing.data"], "file not found"),
        (["bad.json"], "not a PSL JSON configuration"),
        (["badrule.json"], "PSL syntax error in rule"),
        (["baddata.json"], "line 1: expected 2 tab-separated arguments"),
    ],
)
def test_bad_input_exits_2_with_one_line(program, capsys, monkeypatch, argv, message):
    (program / "bad.json").write_text("{ not json")
    cfg = json.loads("\n".join((program / "prog.json").read_text().splitlines()[1:]))
    cfg["rules"] = ["1: Lab(A, C) -> "]
    (program / "badrule.json").write_text(json.dumps(cfg))
    cfg["rules"] = ["1: Lab(A, C) & Link(A, B) -> Lab(B, C)"]
    _write(program / "data" / "broken.txt", [("a", "b", "c", "d")])
    cfg["predicates"]["Link/2"]["observations"] = ["data/broken.txt"]
    (program / "baddata.json").write_text(json.dumps(cfg))
    monkeypatch.chdir(program)
    rc = main(["psl", *argv, "--output", str(program / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].startswith("tractable psl: error:") and message in err[0]


def test_help_exits_0():
    r = subprocess.run([sys.executable, "-m", "tractable.cli", "psl", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "PROGRAM.json" in r.stdout


def test_demo_rows():
    rows = demo_rows()
    assert len(rows) == 2
    assert "x = (0.6500, 0.3500)" in rows[0]["quality"]
    acc = float(rows[1]["quality"].split("categorical accuracy ")[1].split(",")[0])
    assert acc > 0.9  # homophily 0.8 with half the labels observed: collective classification is easy


def test_database_file_option(program, capsys):
    db = program / "atoms.duckdb"
    rc = main(["psl", str(program / "prog.json"), "--output", str(program / "o3"), "--database", str(db)])
    assert rc == 0 and db.stat().st_size > 0
    assert len(_read(program / "o3" / "LAB.txt")) == 4


def test_threads_and_gap_tol_options(program, capsys, monkeypatch):
    import numba

    import tractable.psl.model as psl_model

    seen = []
    real = psl_model.solve

    def spy(model, method="admm", **kwargs):
        seen.append({k: kwargs.get(k) for k in ("parallel", "gap_tol")})
        return real(model, method=method, **kwargs)

    monkeypatch.setattr(psl_model, "solve", spy)
    before = numba.get_num_threads()
    try:
        argv = ["psl", str(program / "prog.json"), "--output", str(program / "o4"), "--gap-tol", "1e-3"]
        assert main([*argv, "--threads", "0"]) == 0
        assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS
    finally:
        numba.set_num_threads(before)
    assert seen == [{"parallel": True if numba.config.NUMBA_NUM_THREADS > 1 else None, "gap_tol": 1e-3}]
    assert "certified gap" in capsys.readouterr().out
    rc = main(["psl", str(program / "prog.json"), "--output", str(program / "o5"), "--threads", "-1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "argument --threads: expected an integer >= 0; got '-1'" in err[0]
    rc = main(["psl", str(program / "prog.json"), "--output", str(program / "o5"), "--threads", "100000"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "`--threads` must be an integer from 0 (all)" in err[0]


def test_learn_writes_the_learned_program_then_infers(tmp_path, capsys):
    """`--learn`: weights learned on the learn split, OUTPUT/learned.json runs as it is and gives the same inference."""
    from _helpers import psl_generator

    program = psl_generator().generate("citeseer", tmp_path / "prog", scale=0.3, rng=0)
    out = tmp_path / "out"
    assert main(["psl", str(program), "--learn", "--output", str(out)]) in (0, 1)
    text = capsys.readouterr().out
    assert "learning   StructuredPerceptron:" in text and "wrote      " in text
    learned = json.loads((out / "learned.json").read_text())
    from tractable.psl import Model

    learn = Model.from_json(program, split="learn")
    res = learn.learn()
    assert learned["rules"] == [r.text for r in learn.rules]  # the same learner on the same data: the same weights
    again = Model.from_json(out / "learned.json", split="infer")  # its data paths were moved relative to OUTPUT
    assert [r.text for r in again.rules] == learned["rules"] and res.weights.size > 0
    first = (out / "HASCAT.txt").read_text()
    assert main(["psl", str(out / "learned.json"), "--output", str(tmp_path / "out2")]) in (0, 1)
    assert (tmp_path / "out2" / "HASCAT.txt").read_text() == first
    assert main(["psl", str(program), "--learn", "NoSuchLearner", "--output", str(out)]) == 2
    assert "`method` must be one of" in capsys.readouterr().err


def test_learning_from_the_command_line_is_reproducible(tmp_path, capsys):
    """A search learner draws its locations from `--seed` (default: the program's random.seed, else 0)."""
    from _helpers import psl_generator

    gen = psl_generator()
    program = gen.generate("citeseer", tmp_path / "prog", scale=0.3, rng=0)

    def learned(*extra, name="out"):
        args = ["psl", str(program), "--learn", "RandomGridSearch", "--output", str(tmp_path / name), *extra]
        assert main(args) in (0, 1)
        capsys.readouterr()
        return json.loads((tmp_path / name / "learned.json").read_text())["rules"]

    first = learned()
    assert learned(name="again") == first  # the default seed, 0
    assert learned("--seed", "0", name="zero") == first
    assert learned("--threads", "1", name="one_thread") == first  # candidates on every core by default, or 1
    config = gen.read_config(program)  # a PSL program: JSON with comment lines
    config.setdefault("options", {})["random.seed"] = 7
    with open(program, "w") as fh:
        json.dump(config, fh)
    assert learned(name="program_seed") == learned("--seed", "7", name="seven")
    assert main(["psl", str(program), "--seed", "3", "--output", str(tmp_path / "x")]) == 2  # nothing to seed
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "`--seed` seeds weight learning" in err[0] and not (tmp_path / "x").exists()
    assert main(["psl", str(program), "--learn", "--seed", "-1", "--output", str(tmp_path / "y")]) == 2
    assert "argument --seed: expected an integer >= 0; got '-1'" in capsys.readouterr().err


def test_search_learners_score_candidates_on_every_core_or_on_threads(tmp_path, capsys, monkeypatch):
    """PSL's runs use every core: a search learner's candidates run on threads (n_jobs -1, or --threads N);
    the gradient learners are not given n_jobs (they have no candidates), and their inferences run ADMM on
    --threads N as inference does."""
    from _helpers import psl_generator
    from tractable.psl.model import Model

    program = psl_generator().generate("citeseer", tmp_path / "prog", scale=0.3, rng=0)
    seen = []
    learn = Model.learn

    def spy(self, **options):
        parallel = options.get("solve_options", {}).get("parallel")
        seen.append((options["method"], options.get("n_jobs"), parallel))
        return learn(self, **options)

    monkeypatch.setattr(Model, "learn", spy)
    for i, extra in enumerate([(), ("--threads", "1"), ("--threads", "0")]):
        args = ["psl", str(program), "--learn", "RandomGridSearch", "--output", str(tmp_path / f"o{i}"), *extra]
        assert main(args) in (0, 1)
    assert main(["psl", str(program), "--learn", "--output", str(tmp_path / "sp")]) in (0, 1)
    assert main(["psl", str(program), "--learn", "--threads", "2", "--output", str(tmp_path / "sp2")]) in (0, 1)
    assert seen == [
        ("RandomGridSearch", -1, None),
        ("RandomGridSearch", 1, None),
        ("RandomGridSearch", -1, None),
        ("StructuredPerceptron", None, None),
        ("StructuredPerceptron", None, True),
    ]
    sp, sp2 = (json.loads((tmp_path / o / "learned.json").read_text())["rules"] for o in ("sp", "sp2"))
    weights = [[float(r.split(":")[0]) for r in rules if ":" in r] for rules in (sp, sp2)]
    assert len(weights[0]) > 1 and weights[0] == pytest.approx(weights[1], abs=1e-6)
    capsys.readouterr()
    assert main(["psl", str(program), "--learn", "--threads", "-2", "--output", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "argument --threads: expected an integer >= 0" in err[0] and len(seen) == 5


def test_progress_bars_on_a_terminal_unless_no_progress(tmp_path, capsys, monkeypatch):
    """Learning's bar and inference's ADMM bar go to stderr when it is a terminal; --no-progress, or stderr
    that is not a terminal (a pipe, a file, these tests), shows none. The outputs are the same either way."""
    from _helpers import psl_generator

    program = psl_generator().generate("citeseer", tmp_path / "prog", scale=0.3, rng=0)
    runs = {}
    for name, tty, extra in [("pipe", False, ()), ("tty", True, ()), ("quiet", True, ("--no-progress",))]:
        monkeypatch.setattr(sys.stderr, "isatty", lambda tty=tty: tty)
        assert main(["psl", str(program), "--learn", "--output", str(tmp_path / name), *extra]) == 0
        runs[name] = capsys.readouterr()
    assert "StructuredPerceptron:" in runs["tty"].err and "ADMM:" in runs["tty"].err and "%|" in runs["tty"].err
    assert "%|" not in runs["pipe"].err and "%|" not in runs["quiet"].err
    assert runs["pipe"].err == runs["quiet"].err
    files = {name: sorted(p.name for p in (tmp_path / name).iterdir()) for name in runs}
    assert files["tty"] == files["pipe"] == files["quiet"]
    for f in files["tty"]:
        assert (tmp_path / "tty" / f).read_text() == (tmp_path / "pipe" / f).read_text()


def test_data_that_break_a_hard_rule_are_dropped_with_a_warning_or_strict(tmp_path, capsys):
    """simple-acquaintances' symmetry with asymmetric observations: PSL drops the ground rule and runs on."""
    d = tmp_path / "data"
    _write(d / "knows_obs.txt", [("1", "2", 1.0), ("2", "1", 0.0)])
    _write(d / "knows_targets.txt", [("1", "3"), ("3", "1")])
    cfg = {
        "rules": ["Knows(A, B) = Knows(B, A) .", "1: !Knows(A, B) ^2"],
        "predicates": {"Knows/2": {"observations": ["data/knows_obs.txt"], "targets": ["data/knows_targets.txt"]}},
    }
    (tmp_path / "p.json").write_text(json.dumps(cfg))
    assert main(["psl", str(tmp_path / "p.json"), "--output", str(tmp_path / "out")]) == 0
    out, err = capsys.readouterr()
    assert "2 infeasible without open atoms dropped" in out  # (1, 2) and (2, 1)
    assert err.count("\n") == 1 and "dropped 2 ground rule(s) without open atoms" in err and "e.g. grounding" in err
    assert main(["psl", str(tmp_path / "p.json"), "--strict", "--output", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "infeasible with the observed values alone (strict)" in err
    assert not (tmp_path / "out2").exists()  # nothing written


def test_psl_and_data_files_learn_into_learned_psl_then_infer(program, capsys):
    """PSL 2.x's CLI workflow: `--learn` on a .psl/.data pair learns on `--learn-data` (default the .data file
    itself), writes OUTPUT/learned.psl (the rule file with the learned weights) and infers with them."""
    from tractable.psl import Model

    out = program / "learned-out"
    argv = ["psl", str(program / "m.psl"), str(program / "m.data"), "--learn", "--output", str(out)]
    assert main([*argv, "--learn-data", str(program / "m.data")]) == 0
    text = capsys.readouterr().out
    assert "learning   MaxLikelihoodMPE: completed" in text and "learned.psl" in text
    rules = (out / "learned.psl").read_text().splitlines()
    ref = Model.from_data_file(program / "m.psl", program / "m.data")
    res = ref.learn(method="MaxLikelihoodMPE")
    assert rules == [r.text for r in ref.rules] and len(rules) == 3 and rules[1] == "Lab(A, +C) = 1 ."
    # the learned rule file runs as it is, with the same answer
    assert main(["psl", str(out / "learned.psl"), str(program / "m.data"), "--output", str(program / "again")]) == 0
    assert _read(program / "again" / "LAB.txt") == _read(out / "LAB.txt")
    assert res.weights.size == 2
    assert main([*argv[:3], "--learn-data", str(program / "m.data"), "--output", str(program / "o9")]) == 2
    assert "`--learn-data` names the data to learn on: it needs `--learn`" in capsys.readouterr().err


def test_workers_solve_on_a_local_dask_cluster_with_the_answer_of_one_process(program, capsys):
    """`--workers N`: a LocalCluster for the run, the program grounded into one shard per worker (`--shards yes`)
    or here (`--shards no`); the same output as one process, within ADMM's tolerances."""
    pytest.importorskip("distributed")
    base = ["psl", str(program / "prog.json"), "--eps-abs", "1e-8", "--eps-rel", "1e-8", "--gap-tol", "1e-8"]
    assert main([*base, "--output", str(program / "one")]) == 0
    for shards in ("yes", "no", "auto"):  # auto: a small program is grounded here
        out = program / f"dask-{shards}"
        assert main([*base, "--workers", "2", "--shards", shards, "--output", str(out)]) == 0
        text = capsys.readouterr().out
        assert "grounding  " in text and ("shards" in text) == (shards == "yes")
        a, b = _read(program / "one" / "LAB.txt"), _read(out / "LAB.txt")
        assert [r[:2] for r in a] == [r[:2] for r in b]
        for ra, rb in zip(a, b):
            assert float(ra[2]) == pytest.approx(float(rb[2]), abs=1e-5)
    for argv, message in [
        ([*base, "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "give one of them"),
        ([*base, "--workers", "0"], "argument --workers: expected an integer >= 1; got '0'"),
        ([*base, "--shards", "yes"], "apply to a Dask run"),
        ([*base, "--workers", "1", "--threads", "2"], "the workers run it"),
    ]:
        assert main([*argv, "--output", str(program / "bad")]) == 2
        assert message in capsys.readouterr().err
    assert not (program / "bad").exists()


def test_the_background_preload_loads_the_signatures_a_program_uses():
    """`tractable psl` loads the solver's kernels on a tiny problem while it grounds: a program's inference must
    then need no other compiled signature (checked in a fresh process, where only these two calls load any)."""
    code = """
import warnings
warnings.simplefilter("ignore")
from tractable.cli.psl import _preload_solver
from tractable.hlmrf import _kernels, bound
kernels = [_kernels.admm_steps, _kernels._term_values, bound.certificate_pass]
_preload_solver()
before = [set(k.signatures) for k in kernels]
assert all(before), "the preload loaded nothing"
from tractable.demo.psl import collective_classification
model, _ = collective_classification(60, rng=0)  # functional rules: a categorical constraint per node
model.infer()
after = [set(k.signatures) for k in kernels]
assert after == before, [sorted(map(str, a - b)) for a, b in zip(after, before)]
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=600)


def test_command_line_values_are_refused_by_the_parser_naming_the_flag(program, capsys):
    """A bad value of an option is one line naming the flag (exit 2), before any file is read."""
    base = ["psl", str(program / "prog.json"), "--output", str(program / "bad")]
    for extra, message in [
        (["--max-iter", "0"], "argument --max-iter: expected an integer >= 1; got '0'"),
        (["--eps-abs", "nan"], "argument --eps-abs: expected a finite number >= 0; got 'nan'"),
        (["--eps-rel", "-1"], "argument --eps-rel: expected a finite number >= 0; got '-1'"),
        (["--gap-tol", "0"], "argument --gap-tol: expected a finite number > 0; got '0'"),
        (["--learn", "--seed", "x"], "argument --seed: expected an integer >= 0; got 'x'"),
    ]:
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], (extra, err)
    assert not (program / "bad").exists()


def test_learn_before_the_program_and_the_learned_program_only_infers(tmp_path, capsys):
    """`tractable psl --learn PROGRAM.json` learns (the flag's optional METHOD does not take the program);
    OUTPUT/learned.json drops `runtime.learn`, so running it infers with the learned weights."""
    from _helpers import psl_generator

    gen = psl_generator()
    program = gen.generate("citeseer", tmp_path / "prog", scale=0.3, rng=0)
    config = gen.read_config(program)
    config.setdefault("options", {})["runtime.learn"] = True
    with open(program, "w") as fh:
        json.dump(config, fh)
    out = tmp_path / "out"
    assert main(["psl", "--learn", str(program), "--output", str(out)]) in (0, 1)
    assert "learning   StructuredPerceptron:" in capsys.readouterr().out
    learned = json.loads((out / "learned.json").read_text())
    assert "runtime.learn" not in learned["options"]
    assert main(["psl", str(out / "learned.json"), "--output", str(tmp_path / "again")]) in (0, 1)
    text = capsys.readouterr().out
    assert "learning" not in text and "inference" in text
    assert (tmp_path / "again" / "HASCAT.txt").read_text() == (out / "HASCAT.txt").read_text()


def test_search_learner_line_counts_candidates_and_shows_the_best_metric(program, capsys):
    out = program / "search"
    assert main(["psl", str(program / "prog.json"), "--learn", "GridSearch", "--output", str(out)]) == 0
    line = next(t for t in capsys.readouterr().out.splitlines() if t.startswith("learning"))
    assert "candidates" in line and "(best " in line and "objective" not in line


def test_infeasible_learning_exits_1_as_an_infeasible_inference(program, capsys):
    """Hard rules that no assignment meets: no solution (exit 1) with or without `--learn`."""
    cfg = json.loads("\n".join((program / "prog.json").read_text().splitlines()[1:]))
    cfg["rules"] += ["Lab(A, 'x') = 1 .", "Lab(A, 'y') = 1 ."]  # with Lab(A, +C) = 1: infeasible
    (program / "inf.json").write_text(json.dumps(cfg))
    for extra in ([], ["--learn"]):
        assert main(["psl", str(program / "inf.json"), *extra, "--output", str(program / "inf")]) == 1
        lines = capsys.readouterr().err.strip().splitlines()
        err = [t for t in lines if t.startswith(("tractable psl: no solution", "tractable psl: error"))]
        assert len(err) == 1 and "no solution" in err[0] and "infeasible" in err[0], err
        assert not (program / "inf").exists()


def test_a_misspelled_learning_option_is_reported_as_ignored(program, capsys):
    from tractable.psl import Model

    cfg = json.loads("\n".join((program / "prog.json").read_text().splitlines()[1:]))
    cfg["options"].update({"gradientdescent.numsteps": 3, "gradientdescent.numstepz": 2})
    (program / "typo.json").write_text(json.dumps(cfg))
    with pytest.warns(UserWarning, match="gradientdescent.numstepz"):
        model = Model.from_json(program / "typo.json")
    assert model.learn_options == {"gradientdescent.numsteps": 3}
    assert "gradientdescent.numstepz" in model.ignored_options
    model.close()
    assert main(["psl", str(program / "typo.json"), "--learn", "--output", str(program / "typo")]) == 0
    assert "ignored PSL options: runtime.db.intids, gradientdescent.numstepz" in capsys.readouterr().err


def test_the_run_waits_for_the_background_preload_before_it_ends(program, capsys, monkeypatch):
    """An interpreter that exits while the preload thread is inside numba can crash: every run, failed or
    not, ends after the thread."""
    import threading
    import time

    import tractable.cli.psl as cli_psl

    done = threading.Event()

    def slow_preload():  # longer than the failing run itself (about 0.3 s), so that only a join waits for it
        time.sleep(1.5)
        done.set()

    monkeypatch.setattr(cli_psl, "_preload_solver", slow_preload)
    cfg = json.loads("\n".join((program / "prog.json").read_text().splitlines()[1:]))
    cfg["rules"] = ["1: Lab(A, C) & Lnk(A, B) -> Lab(B, C)"]  # fails after the preload started: an unknown predicate
    (program / "unknown.json").write_text(json.dumps(cfg))
    assert main(["psl", str(program / "unknown.json"), "--output", str(program / "x")]) == 2
    assert done.is_set()
    capsys.readouterr()


@pytest.mark.parametrize("how", ["stdout pipe", "stderr into the pipe", "stdout closed", "stderr closed"])
def test_a_closed_standard_output_does_not_lose_the_output_files(program, how):
    """`tractable psl ... | head -1` (the reader goes away before the output), also with `2>&1`, and a stream
    closed before the start (`>&-`, `2>&-`): the run still writes its files and exits 0, without an error
    about the pipe."""
    import shlex

    out = program / "piped"
    entry = "from tractable.cli import entry; entry()"
    argv = [sys.executable, "-c", entry, "psl", str(program / "prog.json"), "--learn", "--output", str(out)]
    if how.endswith("closed"):
        shell = shlex.join(argv) + (" >&-" if how == "stdout closed" else " 2>&-")
        proc = subprocess.run(["bash", "-c", shell], capture_output=True, timeout=300)
        rc, err = proc.returncode, proc.stderr.decode()
    else:
        stderr = subprocess.STDOUT if how == "stderr into the pipe" else subprocess.PIPE
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr)
        proc.stdout.close()  # the reader is gone
        err = proc.stderr.read().decode() if proc.stderr else ""
        rc = proc.wait(timeout=300)
    assert rc == 0, err
    assert "Broken pipe" not in err and "internal error" not in err
    assert (out / "LAB.txt").exists() and (out / "learned.json").exists()


def test_program_first_moves_learn_after_the_program_only_when_it_took_a_program():
    from tractable.cli.psl import program_first

    assert program_first(["psl", "--learn", "m.psl", "m.data", "-o", "x"]) == [
        "psl",
        "m.psl",
        "m.data",
        "-o",
        "x",
        "--learn",
    ]
    assert program_first(["psl", "--learn", "P.JSON", "--", "-odd"]) == ["psl", "P.JSON", "--learn", "--", "-odd"]
    same = ["psl", "p.json", "--learn", "RandomGridSearch"]
    assert program_first(same) == same  # a learner's name is left alone
    assert program_first(["psl", "p.json", "--learn"]) == ["psl", "p.json", "--learn"]
