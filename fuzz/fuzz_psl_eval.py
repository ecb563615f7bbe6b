"""Fuzz target: PSL evaluator options (``tractable.psl.evaluation.evaluate_arrays``).

The input is an ``evaluations`` entry of a PSL 2.4 program: JSON when it parses (a name, or
``{"evaluator": ..., "options": {...}, "primary": ...}``, or anything else JSON can hold), otherwise an
entry built from the bytes out of PSL's evaluator names, option keys and values of every JSON type. It
evaluates six fixed atoms (two categories per group, one atom without truth). Any entry either gives the
metrics (a dict of numbers) or raises ``ValueError`` / ``TypeError``; nothing else.
"""

import json

import numpy as np
from _target import BytesProvider, instrument, main

with instrument():
    from tractable.psl.evaluation import evaluate_arrays

PREDICTIONS = np.array([0.9, 0.1, 0.4, 0.6, 0.5, 0.0])
TRUTH = np.array([1.0, 0.0, 0.0, 1.0, np.nan, 0.0])
ARGUMENTS = np.array([["a", "x"], ["a", "y"], ["b", "x"], ["b", "y"], ["c", "x"], ["c", "y"]])
NAMES = ["DiscreteEvaluator", "ContinuousEvaluator", "AUCEvaluator", "CategoricalEvaluator", "RankingEvaluator",
         "org.linqs.psl.evaluation.statistics.DiscreteEvaluator", " discreteevaluator", "", "Nope"]  # fmt: skip
KEYS = ["discreteevaluator.threshold", "discreteevaluator.representative", "continuousevaluator.representative",
        "aucevaluator.representative", "aucevaluator.threshold", "categoricalevaluator.categoryindexes",
        "categoricalevaluator.defaultpredicate", "categoricalevaluator.representative", "eval.includeobs",
        "eval.closetruth", "DISCRETEEVALUATOR.THRESHOLD", "other.option", ""]  # fmt: skip
VALUES = [0.5, 0, 1, -1, 2, 1e308, float("nan"), float("inf"), True, False, None, "", "0.5", "1", "0 1", "1,0", "F1",
          "ACCURACY", "MSE", "AUROC", "AUPRC", "POSITIVE_AUPRC", "x", [1], [0, 1], ["1"], [], {}, {"a": 1}]  # fmt: skip


def _entry(data: bytes):
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        pass
    fdp = BytesProvider(data)
    if fdp.ConsumeIntInRange(0, 7) == 0:
        return fdp.PickValueInList(NAMES)
    options = {}
    for _ in range(fdp.ConsumeIntInRange(0, 4)):
        key = fdp.PickValueInList(KEYS) if fdp.ConsumeBool() else fdp.ConsumeUnicode(12)
        options[key] = fdp.PickValueInList(VALUES)
    entry = {"evaluator": fdp.PickValueInList(NAMES), "options": options}
    if fdp.ConsumeIntInRange(0, 3) == 0:
        entry["primary"] = fdp.PickValueInList(VALUES)
    if fdp.ConsumeIntInRange(0, 7) == 0:
        entry[fdp.ConsumeUnicode(6)] = 1
    return entry


def test_one_input(data: bytes) -> None:
    entry = _entry(data)
    try:
        out = evaluate_arrays(PREDICTIONS, TRUTH, evaluator=entry, arguments=ARGUMENTS)
    except (ValueError, TypeError):
        return
    assert isinstance(out, dict) and "representative" in out, out
    for key, value in out.items():
        assert key == "representative" or isinstance(value, (int, float)), (key, value)


if __name__ == "__main__":
    main(test_one_input)
