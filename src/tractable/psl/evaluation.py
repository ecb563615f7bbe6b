"""Evaluation of inferred values against a ``truth`` partition, with PSL's evaluators.

Predictions and truth are matched on their arguments; atoms present in both count (a truth atom that
is not a target, or a target without truth, is left out, as PSL's training map leaves them out).

- ``DiscreteEvaluator``: values rounded at 0.5 (truth and prediction): ``accuracy``, ``f1``,
  ``precision``, ``recall`` (of the positive class).
- ``ContinuousEvaluator``: ``mae``, ``mse``, ``rmse``.
- ``CategoricalEvaluator``: atoms grouped by their non-category arguments (the category is the last
  argument unless ``categoricalevaluator.categoryindexes`` names others, as a comma-separated list of
  0-based indexes); ``categorical_accuracy`` is the fraction of groups whose highest predicted category
  is the highest true one.
- ``AUCEvaluator`` (also ``RankingEvaluator``): ``auroc`` (the Mann-Whitney statistic with ties
  counted one half), ``auprc`` (average precision) with truth rounded at 0.5.
"""

from __future__ import annotations

import numpy as np

__all__ = ["EVALUATORS", "evaluate_predicate"]

#: PSL evaluator names -> the metrics they report
EVALUATORS = {
    "DiscreteEvaluator": ("accuracy", "f1", "precision", "recall"),
    "ContinuousEvaluator": ("mae", "mse", "rmse"),
    "CategoricalEvaluator": ("categorical_accuracy",),
    "AUCEvaluator": ("auroc", "auprc"),
    "RankingEvaluator": ("auroc", "auprc"),
}
_DEFAULT = ("DiscreteEvaluator", "ContinuousEvaluator", "AUCEvaluator")


def _auroc(y: np.ndarray, s: np.ndarray) -> float:
    pos, neg = s[y], s[~y]
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    from scipy.stats import rankdata

    ranks = rankdata(np.concatenate([pos, neg]))  # average ranks: ties count one half
    return float((ranks[: pos.size].sum() - pos.size * (pos.size + 1) / 2) / (pos.size * neg.size))


def _auprc(y: np.ndarray, s: np.ndarray) -> float:
    if not y.any():
        return float("nan")
    order = np.argsort(-s, kind="stable")
    y = y[order]
    tp = np.cumsum(y)
    precision = tp / np.arange(1, y.size + 1)
    return float(np.sum(precision[y]) / y.sum())


def evaluate_predicate(predictions, truth, arity: int, evaluators=None) -> dict:
    """Metrics of one predicate's predictions.

    Parameters
    ----------
    predictions : pandas.DataFrame
        Columns ``0 .. arity-1`` (arguments) and ``value``.
    truth : pandas.DataFrame
        The same layout.
    arity : int
    evaluators : list of dict or str, optional
        PSL's ``evaluations`` entries (``{"evaluator": name, "options": {...}}``) or names; default
        Discrete, Continuous and AUC.

    Returns
    -------
    dict
        Metric name -> value; ``n`` is the number of matched atoms.
    """
    args = list(range(arity))
    p = predictions.copy()
    t = truth.copy()
    for df in (p, t):
        for a in args:
            df[a] = df[a].astype(str)
    merged = p.merge(t, on=args, suffixes=("_pred", "_truth"))
    pred = merged["value_pred"].to_numpy(float)
    true = merged["value_truth"].to_numpy(float)
    out: dict = {"n": int(len(merged))}
    specs = []
    for e in evaluators or _DEFAULT:
        if isinstance(e, str):
            specs.append((e, {}))
        else:
            specs.append((e.get("evaluator", ""), e.get("options", {}) or {}))
    for name, options in specs:
        short = name.rsplit(".", 1)[-1]
        if short not in EVALUATORS:
            raise ValueError(f"`evaluators`: unknown PSL evaluator {name!r}; known: {', '.join(EVALUATORS)}.")
        if short == "DiscreteEvaluator":
            thr = float(options.get("discreteevaluator.threshold", 0.5))
            yp, yt = pred >= thr, true >= thr
            tp = float(np.sum(yp & yt))
            prec = tp / yp.sum() if yp.any() else float("nan")
            rec = tp / yt.sum() if yt.any() else float("nan")
            out["accuracy"] = float(np.mean(yp == yt)) if yp.size else float("nan")
            out["precision"], out["recall"] = prec, rec
            out["f1"] = 2 * prec * rec / (prec + rec) if prec + rec > 0 else 0.0
        elif short == "ContinuousEvaluator":
            err = pred - true
            out["mae"] = float(np.mean(np.abs(err))) if err.size else float("nan")
            out["mse"] = float(np.mean(err**2)) if err.size else float("nan")
            out["rmse"] = float(np.sqrt(out["mse"]))
        elif short == "CategoricalEvaluator":
            idx = options.get("categoricalevaluator.categoryindexes", str(arity - 1))
            cats = [int(i) for i in str(idx).split(",") if str(i).strip()]
            group = [a for a in args if a not in cats]
            if not group:
                raise ValueError("`evaluators`: CategoricalEvaluator needs at least one non-category argument.")
            m = merged.assign(_p=pred, _t=true)
            best_p = m.loc[m.groupby(group, sort=False)["_p"].idxmax()]
            best_t = m.loc[m.groupby(group, sort=False)["_t"].idxmax()]
            j = best_p[group + cats].merge(best_t[group + cats], on=group, suffixes=("_p", "_t"))
            same = np.ones(len(j), bool)
            for c in cats:
                same &= (j[f"{c}_p"] == j[f"{c}_t"]).to_numpy()
            out["categorical_accuracy"] = float(same.mean()) if len(j) else float("nan")
        else:
            yt = true >= 0.5
            out["auroc"] = _auroc(yt, pred)
            out["auprc"] = _auprc(yt, pred)
    return out
