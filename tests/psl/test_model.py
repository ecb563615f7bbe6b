"""`tractable.psl.Model`: JSON and .data programs, data files and their errors, inference, evaluation."""

import json
import os
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest

from _helpers import psl_generator
from tractable.hlmrf import solve
from tractable.psl import Model

RULES = [
    "# neighbours share labels",
    "1.0: Lab(A, C) & Link(A, B) & (A != B) -> Lab(B, C) ^2",
    "Lab(A, +C) = 1 .",
    "// negative prior",
    "0.01: !Lab(A, C) ^2",
]


def _write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))
    return path


def _program(tmp_path, options=None, evaluations=None):
    """A small collective-classification program: a path a-b-c-d, a and d labelled, b and c to infer."""
    d = tmp_path / "data"
    _write(d / "link.txt", [("a", "b"), ("b", "a"), ("b", "c"), ("c", "b"), ("c", "d"), ("d", "c")])
    _write(d / "lab_obs.txt", [("a", "x", 1.0), ("a", "y", 0.0), ("d", "x", 0), ("d", "y", 1)])
    _write(d / "lab_targets.txt", [("b", "x"), ("b", "y"), ("c", "x"), ("c", "y")])
    _write(d / "lab_truth.txt", [("b", "x", 1), ("b", "y", 0), ("c", "x", 0), ("c", "y", 1)])
    lab = {
        "observations": {"infer": ["data/lab_obs.txt"], "learn": []},
        "targets": {"infer": ["data/lab_targets.txt"], "learn": []},
        "truth": ["data/lab_truth.txt"],
    }
    if evaluations is not None:
        lab["evaluations"] = evaluations
    cfg = {
        "rules": RULES[1:2] + RULES[2:3] + RULES[4:],
        "predicates": {"Link/2": {"observations": ["data/link.txt"]}, "LAB/2": lab},
    }
    if options is not None:
        cfg["options"] = options
    text = json.dumps(cfg, indent=4)
    # PSL's JSON carries comment lines; put some in
    text = text.replace('"rules": [', '"rules": [\n        # neighbours share labels\n        // and a prior')
    path = tmp_path / "prog.json"
    path.write_text(text)
    return path


def test_from_json_grounds_and_infers(tmp_path):
    m = Model.from_json(_program(tmp_path))
    assert m.predicates == {"Link/2": {"arity": 2, "closed": True}, "LAB/2": {"arity": 2, "closed": False}}
    g = m.ground()
    # rule 1: links (a,b),(b,c),(c,b),(c,d)... with Lab(A, C) existing: every link x 2 labels = 12 groundings;
    # (b,a) and (c,d) have observed heads with a target body -> kept; (a,b) and (d,c) have observed bodies
    assert g.rule_counts[1] == ("Lab(A, +C) = 1 .", 0, 2)  # only b and c have free atoms
    assert g.rule_counts[2] == ("0.01: !Lab(A, C) ^2", 4, 0)  # one prior per target; observed ones constant
    pred, res = m.infer(eps_abs=1e-9, eps_rel=1e-9, gap_tol=1e-9)
    v = pred["LAB"].set_index([0, 1])["value"]
    assert res.converged
    # b is next to a (label x), c next to d (label y); the functional constraint holds
    assert v["b", "x"] > 0.5 > v["b", "y"] and v["c", "y"] > 0.5 > v["c", "x"]
    # tolerance: ADMM run to residuals and a certified gap of 1e-9
    assert v["b", "x"] + v["b", "y"] == pytest.approx(1.0, abs=1e-5)
    ref = solve(g.hlmrf, method="clarabel")
    np.testing.assert_allclose(res.x, ref.x, atol=1e-4)  # tolerance: ADMM at 1e-9 vs an interior-point optimum
    ev = m.evaluate()
    assert ev["LAB"]["accuracy"] == 1.0 and ev["LAB"]["n"] == 4
    assert ev["LAB"]["auroc"] == 1.0
    got = pred["LAB"].sort_values([0, 1])["value"].to_numpy()  # (b,x), (b,y), (c,x), (c,y)
    assert ev["LAB"]["mae"] == pytest.approx(np.mean(np.abs(got - [1, 0, 0, 1])))


def test_json_split_learn_and_evaluators(tmp_path):
    path = _program(
        tmp_path,
        evaluations=[
            {"evaluator": "CategoricalEvaluator", "options": {"categoricalevaluator.categoryindexes": 1}},
            "ContinuousEvaluator",
        ],
    )
    m = Model.from_json(path)
    pred, _ = m.infer()
    ev = m.evaluate()["LAB"]
    assert set(ev) == {"n", "categorical_accuracy", "mae", "mse", "rmse"}
    assert ev["categorical_accuracy"] == 1.0
    truth = np.array([1, 0, 0, 1.0])
    got = pred["LAB"].sort_values([0, 1])["value"].to_numpy()
    assert ev["mae"] == pytest.approx(np.mean(np.abs(got - truth)))
    # the learn split has no targets
    with pytest.raises(ValueError, match="no atoms of open predicates"):
        Model.from_json(path, split="learn").ground()
    with pytest.raises(ValueError, match="`split` must be 'learn' or 'infer'"):
        Model.from_json(path, split="test")


def test_options_honoured_and_ignored_reported(tmp_path):
    path = _program(
        tmp_path, options={"admmreasoner.maxiterations": 7, "admmreasoner.epsilonabs": 1e-6, "runtime.db.intids": True}
    )
    with pytest.warns(UserWarning, match="runtime.db.intids"):
        m = Model.from_json(path)
    assert m.solve_options == {"max_iter": 7, "eps_abs": 1e-6}
    assert m.ignored_options == ["runtime.db.intids"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, res = m.infer()
    assert res.n_iter == 7
    _, res = m.infer(max_iter=5000)  # the call's options take precedence
    assert res.n_iter > 7


def test_from_data_file_psl_2_format(tmp_path):
    d = tmp_path / "data"
    _write(d / "link.txt", [("a", "b"), ("b", "a")])
    _write(d / "lab_obs.txt", [("a", "x", 1.0), ("a", "y", 0.0)])
    _write(d / "lab_targets.txt", [("b", "x"), ("b", "y")])
    (tmp_path / "m.psl").write_text("\n".join(RULES) + "\n")
    (tmp_path / "m.data").write_text(
        textwrap.dedent(
            """\
            predicates:
               Link/2: closed
               Lab/2:
                  - open
                  - types:
                     - UniqueStringID
                     - UniqueStringID
            observations:
               Link : data/link.txt
               Lab : data/lab_obs.txt
            targets:
               Lab : data/lab_targets.txt
            """
        )
    )
    m = Model.from_data_file(tmp_path / "m.psl", tmp_path / "m.data")
    assert [r.text for r in m.rules] == [r for r in RULES if not r.startswith(("#", "//"))]
    pred, res = m.infer()
    v = pred["Lab"].set_index([0, 1])["value"]
    assert v["b", "x"] > 0.5 > v["b", "y"]
    (tmp_path / "bad.data").write_text("predicates:\n   Link/2: maybe\n")
    with pytest.raises(ValueError, match="either open or closed"):
        Model.from_data_file(tmp_path / "m.psl", tmp_path / "bad.data")


def test_persistent_database(tmp_path):
    db = tmp_path / "atoms.duckdb"
    m = Model.from_json(_program(tmp_path), database=db)
    p1, _ = m.infer(eps_abs=1e-9, eps_rel=1e-9, gap_tol=1e-9)
    m.close()
    assert os.path.getsize(db) > 0
    p2, _ = Model.from_json(_program(tmp_path)).infer(eps_abs=1e-9, eps_rel=1e-9, gap_tol=1e-9)
    pd.testing.assert_frame_equal(p1["LAB"], p2["LAB"])


def _simple():
    m = Model()
    m.add_predicate("Link", 2, closed=True)
    m.add_predicate("Lab", 1)
    m.add_rule("1: Link(A, B) & Lab(A) -> Lab(B)")
    return m


def test_data_file_errors_name_file_and_line(tmp_path):
    cases = {
        "fields.txt": ("a\tb\nc\n", "line 2: expected 2 tab-separated arguments"),
        "value.txt": ("a\tb\t0.5\nc\td\tx\n", "line 2: the value 'x'"),
        "range.txt": ("a\tb\n\nc\td\t1.5\n", "line 3: the value '1.5'"),
        "empty_arg.txt": ("a\t\t1\n", "line 1: an empty argument"),
    }
    for name, (text, msg) in cases.items():
        (tmp_path / name).write_text(text)
        m = _simple()
        m.add_data("Link", "observations", tmp_path / name)
        m.add_data("Lab", "targets", pd.DataFrame([["a"]]))
        with pytest.raises(ValueError, match=msg) as info:
            m.ground()
        assert str(tmp_path / name) in str(info.value)
    with pytest.raises(OSError, match="not found"):
        _simple().add_data("Link", "observations", tmp_path / "missing.txt")


def test_data_errors():
    m = _simple()
    with pytest.raises(ValueError, match="`predicate` 'Nope' is not declared"):
        m.add_data("Nope", "observations", pd.DataFrame([["a"]]))
    with pytest.raises(ValueError, match="`partition` must be one of"):
        m.add_data("Lab", "obs", pd.DataFrame([["a"]]))
    with pytest.raises(ValueError, match="closed predicates have none"):
        m.add_data("Link", "targets", pd.DataFrame([["a", "b"]]))
    with pytest.raises(ValueError, match="must have 1 argument columns"):
        m.add_data("Lab", "targets", pd.DataFrame([["a", "b", 1.0]]))
    m = _simple()
    m.add_data("Lab", "targets", pd.DataFrame([["a"]]))
    m.add_data("Lab", "observations", pd.DataFrame([["a", 1.0]]))
    with pytest.raises(ValueError, match=r"both observed and a target"):
        m.ground()
    m = _simple()
    m.add_data("Lab", "targets", pd.DataFrame([["b"]]))
    m.add_data("Lab", "observations", pd.DataFrame([["a", 1.0], ["a", 0.5]]))
    with pytest.raises(ValueError, match=r"twice with different values"):
        m.ground()
    with pytest.raises(ValueError, match="already declared"):
        m.add_predicate("LAB", 2)
    with pytest.raises(ValueError, match="`name` must be an identifier"):
        m.add_predicate("no way", 1)
    with pytest.raises(ValueError, match="`arity` must be an integer >= 1"):
        m.add_predicate("Z", 0)


def test_inputs_not_mutated_and_unused_targets_reported():
    m = _simple()
    df = pd.DataFrame([["a", "b"]])
    before = df.copy()
    m.add_data("Link", "observations", df)
    m.add_data("Lab", "observations", pd.DataFrame([["a", 1.0]]))
    m.add_data("Lab", "targets", pd.DataFrame([["b"], ["z"]]))
    pd.testing.assert_frame_equal(df, before)
    g = m.ground()
    used = dict(zip(g.atoms["arguments"], g.atoms["in_rules"]))
    assert used == {("a",): True, ("b",): True, ("z",): False}
    pred, _ = m.infer()
    v = pred["Lab"].set_index(0)["value"]
    assert v["z"] == 0.0 and v["b"] == pytest.approx(1.0, abs=1e-3)  # tolerance: ADMM's default residuals


def test_reference_solver_and_options_of_the_configuration(tmp_path):
    m = Model.from_json(_program(tmp_path, options={"admmreasoner.maxiterations": 3}))
    exact, res = m.infer(method="clarabel")  # the configuration's ADMM options do not apply
    assert res.method == "clarabel" and res.converged
    admm, res = m.infer(max_iter=20000, eps_abs=1e-9, eps_rel=1e-9, gap_tol=1e-9)
    # tolerance: ADMM at 1e-9 against an interior-point optimum
    np.testing.assert_allclose(admm["LAB"]["value"], exact["LAB"]["value"], atol=1e-4)
    with pytest.raises(ValueError, match="max_iter"):
        m.infer(method="clarabel", max_iter=5)
    with pytest.raises(TypeError, match="`predictions` must be a dict"):
        m.evaluate([1, 2])


def test_inference_balances_the_admm_step_by_default(tmp_path):
    # psl.model.ADMM_DEFAULTS: residual balancing reaches the same certified optimum in far fewer iterations
    from tractable.psl.model import ADMM_DEFAULTS

    gen = psl_generator()

    assert ADMM_DEFAULTS["adaptive_rho"] is True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = Model.from_json(gen.generate("knowledge-graph-identification", tmp_path, scale=1, rng=0), split="infer")
        _, balanced = m.infer()
        # PSL's fixed step of 1 (the caller's options take precedence): 1,610 iterations against 80
        _, fixed = m.infer(adaptive_rho=False, rho=1.0)
    assert balanced.converged and fixed.converged
    assert balanced.n_iter < fixed.n_iter / 4
    # both are certified within gap_tol (5e-4, relative) of the optimum
    assert balanced.objective == pytest.approx(fixed.objective, rel=1e-3)


def test_inference_step_size_follows_the_scale_of_the_weights(tmp_path):
    # psl.model._weight_scaled_rho: ADMM's step size times the mean potential weight, unless the program sets one;
    # on weights c w the run is then the one on w (same iterations, same answer; the objective times c)
    gen = psl_generator()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = Model.from_json(gen.generate("knowledge-graph-identification", tmp_path, scale=1, rng=0), split="infer")
        w = m.weights
        p = m.ground().hlmrf.potential_arrays()
        base = 0.25 if 2 * np.count_nonzero(p["squared"]) > p["weights"].size else 1.0
        _, res = m.infer(adaptive_rho=False)
        assert res.rho == pytest.approx(base * p["weights"].mean(), rel=1e-12)
        m.set_weights(w * 1000.0)
        _, scaled = m.infer(adaptive_rho=False)
        assert scaled.rho == pytest.approx(1000.0 * res.rho, rel=1e-12)
        _, given = m.infer(adaptive_rho=False, rho=0.5)  # a step size the caller gives is kept
    assert given.rho == 0.5
    assert scaled.n_iter == res.n_iter
    # the iterates agree up to rounding (the multipliers scale by 1000, the local copies and consensus do not)
    np.testing.assert_allclose(scaled.x, res.x, atol=1e-9)
    assert scaled.objective == pytest.approx(1000.0 * res.objective, rel=1e-9)


def test_evaluate_checks_its_predictions_and_keeps_its_own_copy(tmp_path):
    """Keys are open predicates (any case), values data frames; changing the frames `infer` returned does not
    change what `evaluate()` scores."""
    m = Model.from_json(_program(tmp_path, evaluations=[{"evaluator": "DiscreteEvaluator"}]))
    pred, _ = m.infer()
    first = m.evaluate()
    assert m.evaluate({"lab": pred["LAB"]}) == first  # predicate names in any case
    pred["LAB"]["value"] = 1.0 - pred["LAB"]["value"]
    assert m.evaluate() == first
    with pytest.raises(ValueError, match=r"`predictions` has the key 'knows'; its keys are open predicates of the "):
        m.evaluate({"knows": pred["LAB"]})
    with pytest.raises(TypeError, match=r"`predictions\['LAB'\]` must be a pandas DataFrame; got int"):
        m.evaluate({"LAB": 5})
    m.close()


def test_evaluate_checks_predictions_before_adding_observations(tmp_path):
    """With PSL's eval.includeobs the observed atoms join the predictions: a bad value is still one clear error."""
    cfg = [{"evaluator": "CategoricalEvaluator", "options": {"eval.includeobs": True}}]
    m = Model.from_json(_program(tmp_path, evaluations=cfg))
    with pytest.raises(TypeError, match=r"`predictions\['LAB'\]` must be a pandas DataFrame; got int"):
        m.evaluate({"LAB": 5})
    m.close()


def test_a_closed_model_says_so(tmp_path):
    """After close(): a clear error wherever the connection is needed; a model grounded before still infers;
    closing twice, or as a context manager, is fine."""
    with Model.from_json(_program(tmp_path)) as m:
        m.ground()
    m.close()
    m.infer()
    for call in (m.evaluate, lambda: Model.learn(m)):
        with pytest.raises(ValueError, match=r"the PSL model is closed \(Model.close was called\)"):
            call()
    fresh = Model.from_json(_program(tmp_path))
    fresh.close()
    with pytest.raises(ValueError, match=r"the PSL model is closed"):
        fresh.infer()


def test_an_unknown_solver_option_names_itself_and_the_solver(tmp_path):
    m = Model.from_json(_program(tmp_path))
    with pytest.raises(TypeError, match=r"`infer` has the option 'bogus', which tractable.hlmrf.solve does not take"):
        m.infer(bogus=1)
    with pytest.raises(TypeError, match=r"`solve_options` has the option 'foo', which tractable.hlmrf.solve"):
        m.learn(solve_options={"foo": 1})
    m.close()
