"""`tractable.psl.evaluation`: PSL's evaluators against metrics computed by hand and by scikit-learn."""

import re

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from tractable.psl import evaluate_predicate
from tractable.psl.evaluation import EVALUATORS, evaluate_arrays

PRED = np.array([0.9, 0.2, 0.6, 0.4, 0.7, 0.1])
TRUE = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.0])


def _frame(names, values):
    return pd.DataFrame({0: names, "value": values})


# ----------------------------------------------------------------------------------------------- by hand
def test_discrete_metrics_by_hand():
    out = evaluate_arrays(PRED, TRUE, evaluator="DiscreteEvaluator")
    # rounded at 0.5: predicted 1 0 1 0 1 0, true 1 0 0 1 1 0 -> tp 2, fp 1, fn 1, tn 2
    assert out["accuracy"] == pytest.approx(4 / 6)
    assert out["precision"] == pytest.approx(2 / 3) and out["recall"] == pytest.approx(2 / 3)
    assert out["negative_precision"] == pytest.approx(2 / 3) and out["negative_recall"] == pytest.approx(2 / 3)
    assert out["f1"] == pytest.approx(2 / 3)
    assert out["n"] == 6 and out["representative"] == "f1"  # PSL's default representative metric


def test_discrete_threshold_moves_the_rounding():
    spec = {"evaluator": "DiscreteEvaluator", "options": {"discreteevaluator.threshold": "0.65"}}
    out = evaluate_arrays(PRED, TRUE, evaluator=spec)
    # at 0.65: predicted 1 0 0 0 1 0 (truth unchanged) -> tp 2, fp 0, fn 1, tn 3
    assert out["accuracy"] == pytest.approx(5 / 6)
    assert out["precision"] == 1.0 and out["recall"] == pytest.approx(2 / 3)
    assert out["f1"] == pytest.approx(0.8)


def test_discrete_metrics_without_a_class_are_nan_and_f1_zero():
    out = evaluate_arrays([0.1, 0.2], [1.0, 1.0], evaluator="DiscreteEvaluator")
    assert np.isnan(out["precision"]) and out["recall"] == 0.0 and out["f1"] == 0.0
    assert np.isnan(out["negative_recall"]) and out["accuracy"] == 0.0


def test_continuous_metrics_by_hand():
    out = evaluate_arrays(PRED, TRUE, evaluator="ContinuousEvaluator")
    err = PRED - TRUE  # 0.1 hand-checkable: |err| = .1 .2 .6 .6 .3 .1
    assert out["mae"] == pytest.approx(1.9 / 6)
    assert out["mse"] == pytest.approx((0.01 + 0.04 + 0.36 + 0.36 + 0.09 + 0.01) / 6)
    assert out["rmse"] == pytest.approx(np.sqrt(np.mean(err**2)))
    assert out["representative"] == "mse"


def test_categorical_accuracy_by_hand():
    # items b, c, d with categories x, y, z; truth of value 1 marks the true category
    args = np.array([["b", "x"], ["b", "y"], ["b", "z"], ["c", "x"], ["c", "y"], ["d", "x"], ["d", "y"]])
    pred = np.array([0.2, 0.7, 0.1, 0.5, 0.5, 0.9, 0.1])
    true = np.array([0.0, 1.0, 0.0, np.nan, 1.0, 0.0, 1.0])
    out = evaluate_arrays(pred, true, evaluator="CategoricalEvaluator", arguments=args)
    # b: y predicted, y true -> hit; c: x and y tied (x has no truth but competes) -> half a hit;
    # d: x predicted, y true -> miss. 1.5 hits of 3 truth atoms of value 1
    assert out["categorical_accuracy"] == pytest.approx(0.5)
    assert out["n"] == 6


def test_categorical_indexes_pick_the_grouping():
    # arguments (category, item): the category is the first argument
    args = np.array([["x", "b"], ["y", "b"], ["x", "c"], ["y", "c"]])
    pred, true = np.array([0.8, 0.2, 0.3, 0.6]), np.array([1.0, 0.0, 1.0, 0.0])
    for idx in (0, "0", [0], "-2"):
        spec = {"evaluator": "CategoricalEvaluator", "options": {"categoricalevaluator.categoryindexes": idx}}
        assert evaluate_arrays(pred, true, evaluator=spec, arguments=args)["categorical_accuracy"] == 0.5
    # PSL's default (-1, the last argument) groups by the category instead: each category's best item
    assert evaluate_arrays(pred, true, evaluator="CategoricalEvaluator", arguments=args)["categorical_accuracy"] == 0.5


def test_auc_metrics_against_scikit_learn(rng):
    for _ in range(5):
        n = int(rng.integers(4, 40))
        true = rng.integers(0, 2, n).astype(float)
        true[:2] = [0.0, 1.0]  # both classes
        pred = np.round(rng.random(n), 1)  # rounded: ties
        out = evaluate_arrays(pred, true, evaluator="AUCEvaluator")
        assert out["auroc"] == pytest.approx(roc_auc_score(true, pred), abs=1e-12)
        assert out["auprc"] == pytest.approx(average_precision_score(true, pred), abs=1e-12)
        assert out["negative_auprc"] == pytest.approx(average_precision_score(1 - true, 1 - pred), abs=1e-12)
        assert out["representative"] == "auroc"


def test_auroc_with_one_class_is_nan():
    assert np.isnan(evaluate_arrays([0.2, 0.8], [1.0, 1.0], evaluator="AUCEvaluator")["auroc"])


def test_representative_options():
    for name, option, value, metric in [
        ("DiscreteEvaluator", "discreteevaluator.representative", "accuracy", "accuracy"),
        ("DiscreteEvaluator", "discreteevaluator.representative", "NEGATIVE_RECALL", "negative_recall"),
        ("ContinuousEvaluator", "continuousevaluator.representative", "MAE", "mae"),
        ("AUCEvaluator", "aucevaluator.representative", "POSITIVE_AUPRC", "auprc"),
    ]:
        spec = {"evaluator": name, "options": {option: value}}
        assert evaluate_arrays(PRED, TRUE, evaluator=spec)["representative"] == metric


# ----------------------------------------------------------------------------------------------- frames
def test_evaluate_predicate_matches_evaluate_arrays():
    pred = _frame(["a", "b", "c", "d", "e", "f", "z"], [*PRED, 0.5])  # z has no truth
    truth = _frame(["f", "e", "d", "c", "b", "a"], TRUE[::-1])
    out = evaluate_predicate(pred, truth, 1)
    assert out["n"] == 6
    for name in ("DiscreteEvaluator", "ContinuousEvaluator", "AUCEvaluator"):
        ref = evaluate_arrays(PRED, TRUE, evaluator=name)
        for metric in EVALUATORS[name]:
            assert out[metric] == pytest.approx(ref[metric], nan_ok=True)
    assert set(out) == {"n", *EVALUATORS["DiscreteEvaluator"], *EVALUATORS["ContinuousEvaluator"], "auroc", "auprc"} | {
        "negative_auprc"
    }


def test_a_duplicate_truth_atom_with_the_same_value_counts_once():
    pred = _frame(["a", "b"], [0.9, 0.2])
    once = evaluate_predicate(pred, _frame(["a", "b"], [1.0, 0.0]), 1, ["ContinuousEvaluator"])
    twice = evaluate_predicate(pred, _frame(["a", "b", "a"], [1.0, 0.0, 1.0]), 1, ["ContinuousEvaluator"])
    assert twice == once and twice["n"] == 2


def test_a_duplicate_truth_atom_with_another_value_is_an_error():
    pred = pd.DataFrame({0: ["a", "b"], 1: ["x", "x"], "value": [0.9, 0.2]})
    truth = pd.DataFrame({0: ["a", "b", "a"], 1: ["x", "x", "x"], "value": [1.0, 0.0, 0.0]})
    msg = "the truth of Lab lists the atom ('a', 'x') twice with different values (0 and 1)"
    with pytest.raises(ValueError, match=re.escape(msg)):
        evaluate_predicate(pred, truth, 2, predicate="Lab")
    with pytest.raises(ValueError, match=re.escape("`truth` lists the atom ('a', 'x') twice")):
        evaluate_predicate(pred, truth, 2)


def test_evaluate_predicate_leaves_its_inputs_alone():
    pred, truth = _frame(["a", "b"], [0.9, 0.2]), _frame(["a", "b", "a"], [1.0, 0.0, 1.0])
    before = pred.copy(), truth.copy()
    evaluate_predicate(pred, truth, 1)
    pd.testing.assert_frame_equal(pred, before[0])
    pd.testing.assert_frame_equal(truth, before[1])


# ----------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "evaluator, message",
    [
        (
            {"evaluator": "DiscreteEvaluator", "options": {"discreteevaluator.threshold": "nan"}},
            "`discreteevaluator.threshold` must be a number in [0, 1]; got 'nan'",
        ),
        (
            {"evaluator": "DiscreteEvaluator", "options": {"discreteevaluator.threshold": "high"}},
            "`discreteevaluator.threshold` must be a number in [0, 1]; got 'high'",
        ),
        (
            {"evaluator": "DiscreteEvaluator", "options": {"discreteevaluator.threshold": 1.5}},
            "`discreteevaluator.threshold` must be a number in [0, 1]; got 1.5",
        ),
        (
            {"evaluator": "AUCEvaluator", "options": {"aucevaluator.threshold": True}},
            "`aucevaluator.threshold` must be a number in [0, 1]; got True",
        ),
        (
            {"evaluator": "CategoricalEvaluator", "options": {"categoricalevaluator.categoryindexes": "one"}},
            "`categoricalevaluator.categoryindexes` must be integers",
        ),
        (
            {"evaluator": "CategoricalEvaluator", "options": {"categoricalevaluator.categoryindexes": [1.5]}},
            "`categoricalevaluator.categoryindexes` must be integers",
        ),
        (
            {"evaluator": "CategoricalEvaluator", "options": {"categoricalevaluator.categoryindexes": ""}},
            "`categoricalevaluator.categoryindexes` must be integers",
        ),
        (
            {"evaluator": "CategoricalEvaluator", "options": {"categoricalevaluator.categoryindexes": 5}},
            "`categoricalevaluator.categoryindexes`: the index 5 is out of range for a predicate of arity 2",
        ),
        (
            {"evaluator": "ContinuousEvaluator", "options": {"continuousevaluator.representative": "RMSE"}},
            "`continuousevaluator.representative` must be one of 'MSE', 'MAE'; got 'RMSE'",
        ),
        (
            {"evaluator": "ContinuousEvaluator", "options": {"continuousevaluator.threshold": 0.5}},
            "unknown option 'continuousevaluator.threshold' of ContinuousEvaluator",
        ),
        (
            {"evaluator": "DiscreteEvaluator", "options": {"eval.includeobs": "maybe"}},
            "`eval.includeobs` must be a bool",
        ),
        ({"evaluator": "DiscreteEvaluator", "options": [1]}, "must be an object"),
        ({"evaluator": "DiscreteEvaluator", "weight": 1}, "the unknown key 'weight'"),
        ("Nope", "unknown PSL evaluator 'Nope'"),
        (5, "entries must be an evaluator name"),
    ],
)
def test_bad_evaluators_name_the_option(evaluator, message):
    pred = pd.DataFrame({0: ["a", "a"], 1: ["x", "y"], "value": [0.9, 0.2]})
    with pytest.raises(ValueError, match=re.escape(message)):
        evaluate_predicate(pred, pred, 2, [evaluator])


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(predictions=[0.5, np.nan], truth=[1.0, 0.0]), "`predictions` must hold numbers in [0, 1]; got nan"),
        (dict(predictions=[0.5, 1.5], truth=[1.0, 0.0]), "`predictions` must hold numbers in [0, 1]; got 1.5"),
        (dict(predictions=[0.5], truth=[1.0, 0.0]), "must have the same shape; got (1,) and (2,)"),
        (dict(predictions=[0.5, 0.2], truth=[1.0, -1.0]), "`truth` must hold numbers in [0, 1] or NaN"),
        (dict(predictions=[[0.5]], truth=[1.0]), "`predictions` must be one-dimensional"),
        (
            dict(predictions=[0.5], truth=[1.0], evaluator="CategoricalEvaluator"),
            "`arguments` is needed by the CategoricalEvaluator",
        ),
        (
            dict(predictions=[0.5], truth=[1.0], evaluator="CategoricalEvaluator", arguments=[["a", "x"], ["b", "y"]]),
            "`arguments` must have shape (1, arity); got shape (2, 2)",
        ),
    ],
)
def test_evaluate_arrays_errors(kw, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        evaluate_arrays(**kw)


def test_frame_errors():
    good = _frame(["a"], [0.5])
    with pytest.raises(ValueError, match=re.escape("`truth` of Q: the atom ('a') has the value 2.0")):
        evaluate_predicate(good, _frame(["a"], [2.0]), 1, predicate="Q")
    with pytest.raises(ValueError, match=re.escape("`predictions` must have the columns 0 .. 0 and 'value'")):
        evaluate_predicate(pd.DataFrame({0: ["a"]}), good, 1)
    with pytest.raises(TypeError, match="`truth` must be a pandas DataFrame"):
        evaluate_predicate(good, {"a": 1.0}, 1)
    with pytest.raises(ValueError, match=re.escape("`predictions` lists the atom ('a') twice")):
        evaluate_predicate(_frame(["a", "a"], [0.5, 0.6]), good, 1)


def test_average_ranks_equal_scipys_rankdata_with_ties():
    from scipy.stats import rankdata

    from tractable.psl.evaluation import _average_ranks

    gen = np.random.default_rng(0)
    for _ in range(500):
        v = np.round(gen.random(int(gen.integers(1, 40))), 1)  # many ties
        np.testing.assert_array_equal(_average_ranks(v), rankdata(v))
