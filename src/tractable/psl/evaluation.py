"""Evaluation of inferred values against a ``truth`` partition, with PSL 2.4's evaluators.

Predictions and truth are matched on their arguments; atoms present in both count (``n``). A truth atom
that is not predicted is left out, as PSL's training map leaves it out; a predicted atom without truth
counts only as a candidate category of the ``CategoricalEvaluator``.

- ``DiscreteEvaluator``: truth and prediction rounded at ``discreteevaluator.threshold`` (default 0.5;
  ``>=`` is true): ``accuracy``, ``f1``, ``precision``, ``recall`` (of the positive class),
  ``negative_precision``, ``negative_recall``.
- ``ContinuousEvaluator``: ``mae``, ``mse``, ``rmse``.
- ``CategoricalEvaluator``: atoms grouped by their non-category arguments (the category arguments are
  ``categoricalevaluator.categoryindexes``: 0-based indexes, ``:``-separated as PSL writes them (``,``
  works too), negative ones counted from the end; default ``-1``, the last argument). As in PSL, every
  truth atom of value 1 is a *hit* when its category has the highest predicted value of its group (every
  prediction of the predicate competes, with truth or not), and ``categorical_accuracy`` is the fraction
  of hits. Predictions within 1e-6 (PSL's ``MathUtils.EPSILON``) of the group's highest are tied; PSL
  flips a coin among them, here a hit among ``k`` tied categories counts ``1/k`` (the coin's
  expectation, so the metric does not depend on the order of the atoms).
- ``AUCEvaluator`` (also ``RankingEvaluator``): truth rounded at ``aucevaluator.threshold`` (default
  0.5; ``>=`` is positive): ``auroc`` (the Mann-Whitney statistic, ties counted one half, as
  :func:`sklearn.metrics.roc_auc_score`), ``auprc`` and ``negative_auprc`` (average precision of the
  positive class, and of the negative class ranked by ``1 - prediction``, as
  :func:`sklearn.metrics.average_precision_score`; tied predictions form one threshold).

A metric without a value (the precision with no predicted positive, the AUROC with one class) is NaN;
PSL reports 0 for these, and the search learners (:mod:`tractable.psl.search`) rank NaN as the worst
value, which is PSL's 0 for the metrics where higher is better.

Each evaluator has PSL's *representative* metric (``<evaluator>.representative``), the one weight
learning optimizes: ``F1`` (Discrete; also ``ACCURACY``, ``POSITIVE_PRECISION``, ``NEGATIVE_PRECISION``,
``POSITIVE_RECALL``, ``NEGATIVE_RECALL``), ``MSE`` (Continuous; also ``MAE``; lower is better),
``ACCURACY`` (Categorical), ``AUROC`` (AUC; also ``POSITIVE_AUPRC``, ``NEGATIVE_AUPRC``).

:func:`evaluate_arrays` computes one evaluator's metrics from arrays (what the search learners call per
candidate weight vector); :func:`evaluate_predicate` matches a predicate's data frames and calls it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["EVALUATORS", "evaluate_arrays", "evaluate_predicate"]

#: PSL evaluator names -> the metrics they report
EVALUATORS = {
    "DiscreteEvaluator": ("accuracy", "f1", "precision", "recall", "negative_precision", "negative_recall"),
    "ContinuousEvaluator": ("mae", "mse", "rmse"),
    "CategoricalEvaluator": ("categorical_accuracy",),
    "AUCEvaluator": ("auroc", "auprc", "negative_auprc"),
    "RankingEvaluator": ("auroc", "auprc", "negative_auprc"),
}
_DEFAULT = ("DiscreteEvaluator", "ContinuousEvaluator", "AUCEvaluator")
#: PSL's MathUtils.EPSILON: predictions this close to their group's highest are tied (CategoricalEvaluator)
TIE_TOL = 1e-6

#: evaluator -> (option prefixes, representative choices: PSL name -> (metric, higher is better), default)
_REPRESENTATIVE = {
    "DiscreteEvaluator": (
        ("discreteevaluator.",),
        {
            "F1": ("f1", True),
            "ACCURACY": ("accuracy", True),
            "POSITIVE_PRECISION": ("precision", True),
            "NEGATIVE_PRECISION": ("negative_precision", True),
            "POSITIVE_RECALL": ("recall", True),
            "NEGATIVE_RECALL": ("negative_recall", True),
        },
        "F1",
    ),
    "ContinuousEvaluator": (("continuousevaluator.",), {"MSE": ("mse", False), "MAE": ("mae", False)}, "MSE"),
    "CategoricalEvaluator": (("categoricalevaluator.",), {"ACCURACY": ("categorical_accuracy", True)}, "ACCURACY"),
    "AUCEvaluator": (
        ("aucevaluator.",),
        {"AUROC": ("auroc", True), "POSITIVE_AUPRC": ("auprc", True), "NEGATIVE_AUPRC": ("negative_auprc", True)},
        "AUROC",
    ),
}
_REPRESENTATIVE["RankingEvaluator"] = (("aucevaluator.", "rankingevaluator."), *_REPRESENTATIVE["AUCEvaluator"][1:])
#: evaluator -> the option suffixes it reads (after its prefix), besides ``representative``
_OPTIONS = {
    "DiscreteEvaluator": ("threshold",),
    "ContinuousEvaluator": (),
    "CategoricalEvaluator": ("categoryindexes", "defaultpredicate"),
    "AUCEvaluator": ("threshold",),
    "RankingEvaluator": ("threshold",),
}
_ALL_PREFIXES = ("discreteevaluator.", "continuousevaluator.", "categoricalevaluator.", "aucevaluator.")
_COMMON = ("eval.includeobs", "eval.closetruth")


# ============================================================================================ specs
@dataclass(frozen=True)
class _Evaluator:
    """One PSL evaluator with its options, validated (see :func:`_parse_evaluator`)."""

    name: str
    metric: str
    higher_is_better: bool
    threshold: float = 0.5
    category_indexes: tuple = (-1,)
    include_obs: bool = False
    default_predicate: str | None = None
    primary: bool = False

    def __str__(self) -> str:
        extra = f", threshold={self.threshold:g}" if "threshold" in _OPTIONS[self.name] else ""
        if self.name == "CategoricalEvaluator":
            extra = f", categoryindexes={':'.join(map(str, self.category_indexes))}"
        return f"{self.name}({self.metric}{extra})"

    def worst(self) -> float:
        """The worst value of the representative metric (every metric lies in [0, 1])."""
        return 0.0 if self.higher_is_better else 1.0


def _bool_option(value, option) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"`{option}` must be a bool (true or false); got {value!r}.")


def _threshold_option(value, option) -> float:
    try:
        if isinstance(value, (bool, np.bool_)):
            raise TypeError
        v = float(value.strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise ValueError(f"`{option}` must be a number in [0, 1]; got {value!r}.") from None
    if not (math.isfinite(v) and 0.0 <= v <= 1.0):
        raise ValueError(f"`{option}` must be a number in [0, 1]; got {value!r}.")
    return v


def _category_indexes_option(value, option) -> tuple:
    def bad():
        return ValueError(
            f"`{option}` must be integers (0-based argument indexes, ':'-separated as PSL writes them, negative "
            f"ones counted from the end); got {value!r}."
        )

    if isinstance(value, (bool, np.bool_)):
        raise bad()
    if isinstance(value, (int, np.integer)):
        items = [value]
    elif isinstance(value, str):
        items = [s for s in value.replace(",", ":").split(":")]
    elif isinstance(value, (list, tuple, np.ndarray)):
        items = list(value)
    else:
        raise bad()
    out = []
    for item in items:
        if isinstance(item, (bool, np.bool_)):
            raise bad()
        if isinstance(item, (int, np.integer)):
            out.append(int(item))
            continue
        text = item.strip() if isinstance(item, str) else None
        if not text or not text.lstrip("+-").isdigit():
            raise bad()
        out.append(int(text))
    if not out:
        raise bad()
    return tuple(out)


def _parse_evaluator(entry, *, where: str = "evaluators") -> _Evaluator:
    """Validate one of PSL's ``evaluations`` entries (a name, or ``{"evaluator": name, "options": {...},
    "primary": bool}``) into an :class:`_Evaluator`.

    Raises
    ------
    ValueError
        An unknown evaluator, an entry of the wrong shape, an option of the evaluator with a value of
        the wrong type or out of range (the message names the option), an unknown option with the
        evaluator's prefix. Options of other evaluators are ignored, as PSL ignores them.
    """
    if isinstance(entry, _Evaluator):
        return entry
    primary = False
    if isinstance(entry, str):
        name, options = entry, {}
    elif isinstance(entry, dict):
        unknown = sorted(set(map(str, entry)) - {"evaluator", "options", "primary"})
        if unknown:
            raise ValueError(
                f"`{where}`: an evaluation has the unknown key {unknown[0]!r} "
                "(PSL's keys: evaluator, options, primary)."
            )
        name = entry.get("evaluator")
        options = entry.get("options") or {}
        if not isinstance(options, dict):
            raise ValueError(f"`{where}`: the `options` of evaluator {name!r} must be an object; got {options!r}.")
        primary = _bool_option(entry.get("primary", False), f"{where}: primary")
    else:
        raise ValueError(
            f"`{where}` entries must be an evaluator name or {{'evaluator': name, 'options': {{...}}}}; got {entry!r}."
        )
    if not isinstance(name, str):
        raise ValueError(f"`{where}`: the evaluator must be a PSL evaluator name; got {name!r}.")
    short = name.strip().rsplit(".", 1)[-1]
    if short not in EVALUATORS:
        raise ValueError(f"`{where}`: unknown PSL evaluator {name!r}; known: {', '.join(EVALUATORS)}.")
    prefixes, choices, default = _REPRESENTATIVE[short]
    kw: dict = {}
    representative = default
    for key, value in options.items():
        k = str(key).strip().lower()
        if k in _COMMON:
            flag = _bool_option(value, key)
            if k == "eval.includeobs":
                kw["include_obs"] = flag
            continue
        prefix = next((p for p in prefixes if k.startswith(p)), None)
        if prefix is None:
            continue  # another evaluator's option, or another component's: PSL sets it and this evaluator ignores it
        suffix = k[len(prefix) :]
        if suffix == "representative":
            if not isinstance(value, str) or value.strip().upper() not in choices:
                raise ValueError(f"`{key}` must be one of {', '.join(map(repr, choices))}; got {value!r}.")
            representative = value.strip().upper()
        elif suffix == "threshold" and suffix in _OPTIONS[short]:
            kw["threshold"] = _threshold_option(value, key)
        elif suffix == "categoryindexes" and suffix in _OPTIONS[short]:
            kw["category_indexes"] = _category_indexes_option(value, key)
        elif suffix == "defaultpredicate" and suffix in _OPTIONS[short]:
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"`{key}` must name a predicate; got {value!r}.")
            kw["default_predicate"] = value.strip()
        else:
            known = ", ".join(f"{prefixes[0]}{s}" for s in ("representative", *_OPTIONS[short]))
            raise ValueError(
                f"`{where}`: unknown option {key!r} of {short} (its options: {known}, {', '.join(_COMMON)})."
            )
    metric, higher = choices[representative]
    return _Evaluator(short, metric, higher, primary=primary, **kw)


# ============================================================================================ metrics
def _average_precision(y: np.ndarray, s: np.ndarray) -> float:
    """Average precision of labels ``y`` ranked by scores ``s``; tied scores form one threshold."""
    n_pos = int(np.count_nonzero(y))
    if n_pos == 0:
        return float("nan")
    order = np.argsort(-s, kind="stable")
    ss, ys = s[order], y[order]
    ends = np.append(np.flatnonzero(np.diff(ss) != 0), ss.size - 1)
    tp = np.cumsum(ys)[ends]
    precision = tp / (ends + 1)
    recall = tp / n_pos
    return float(np.sum(np.diff(recall, prepend=0.0) * precision))


def _auroc(y: np.ndarray, s: np.ndarray) -> float:
    n_pos = int(np.count_nonzero(y))
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = _average_ranks(np.concatenate([s[y], s[~y]]))  # ties count one half
    return float((ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _average_ranks(v: np.ndarray) -> np.ndarray:
    """1-based ranks of ``v`` (shape (n,)), tied values sharing the average of their ranks (as
    ``scipy.stats.rankdata``, without importing SciPy's statistics for one sort)."""
    order = np.argsort(v, kind="stable")
    sv = v[order]
    new = np.empty(sv.size, dtype=bool)
    new[:1] = True
    np.not_equal(sv[1:], sv[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], sv.size)
    ranks = np.empty(v.size)
    ranks[order] = ((starts + 1 + ends) / 2.0)[np.cumsum(new) - 1]
    return ranks


def _ratio(a, b) -> float:
    return a / b if b else float("nan")


def _category_groups(arguments: np.ndarray, indexes: tuple, option: str = "categoricalevaluator.categoryindexes"):
    """Group codes of atoms by their non-category arguments: ndarray of int64, shape (n,)."""
    arity = arguments.shape[1]
    cats = set()
    for i in indexes:
        j = i + arity if i < 0 else i
        if not 0 <= j < arity:
            raise ValueError(f"`{option}`: the index {i} is out of range for a predicate of arity {arity}.")
        cats.add(j)
    keep = [a for a in range(arity) if a not in cats]
    if not keep:
        raise ValueError(
            f"`{option}`: every argument is a category; the CategoricalEvaluator needs at least one other argument "
            "to group the atoms by."
        )
    if arguments.shape[0] == 0:
        return np.zeros(0, np.int64)
    codes = np.stack([np.unique(arguments[:, a], return_inverse=True)[1].reshape(-1) for a in keep], axis=1)
    return np.unique(codes, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


class _Metrics:
    """One evaluator on fixed labels: the metrics of many prediction vectors.

    ``truth`` has shape (n,), NaN for atoms without truth (candidate categories only); ``groups`` (n,)
    int64 group codes for the CategoricalEvaluator. Everything that does not depend on the predictions
    is computed here once, so each call is a few vectorized passes.
    """

    def __init__(self, spec: _Evaluator, truth: np.ndarray, groups: np.ndarray | None = None):
        self.spec = spec
        truth = np.asarray(truth, float)
        self.labeled = ~np.isnan(truth)
        self.truth = truth[self.labeled]
        self.n = int(self.truth.size)
        if spec.name in ("DiscreteEvaluator", "AUCEvaluator", "RankingEvaluator"):
            self.yt = self.truth >= spec.threshold
        if spec.name == "CategoricalEvaluator":
            if groups is None:
                raise ValueError("`arguments` is needed by the CategoricalEvaluator (the atoms' arguments).")
            groups = np.asarray(groups, np.int64)
            self.order = np.argsort(groups, kind="stable")
            g = groups[self.order]
            self.starts = np.flatnonzero(np.concatenate([[True], g[1:] != g[:-1]])) if g.size else np.zeros(0, int)
            self.sorted_group = np.cumsum(np.concatenate([[0], (g[1:] != g[:-1]).astype(np.int64)])) if g.size else g
            full_truth = np.where(self.labeled, np.nan_to_num(truth, nan=0.0), 0.0)
            self.one = (self.labeled & (full_truth >= 1.0))[self.order]
            self.n_one = int(np.count_nonzero(self.one))

    def __call__(self, predictions: np.ndarray) -> dict:
        spec = self.spec
        p = np.asarray(predictions, float)
        out: dict = {"n": self.n}
        if spec.name == "CategoricalEvaluator":
            out["categorical_accuracy"] = self._categorical(p)
            return out
        pl = p[self.labeled]
        t = self.truth
        if spec.name == "ContinuousEvaluator":
            err = pl - t
            mse = float(np.mean(err**2)) if err.size else float("nan")
            out["mae"] = float(np.mean(np.abs(err))) if err.size else float("nan")
            out["mse"], out["rmse"] = mse, math.sqrt(mse) if not math.isnan(mse) else mse
        elif spec.name == "DiscreteEvaluator":
            yp, yt = pl >= spec.threshold, self.yt
            tp = int(np.count_nonzero(yp & yt))
            fp = int(np.count_nonzero(yp & ~yt))
            fn = int(np.count_nonzero(~yp & yt))
            tn = int(yp.size - tp - fp - fn)
            precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
            out["accuracy"] = _ratio(tp + tn, yp.size)
            out["precision"], out["recall"] = precision, recall
            out["negative_precision"], out["negative_recall"] = _ratio(tn, tn + fn), _ratio(tn, tn + fp)
            out["f1"] = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
        else:
            out["auroc"] = _auroc(self.yt, pl)
            out["auprc"] = _average_precision(self.yt, pl)
            out["negative_auprc"] = _average_precision(~self.yt, 1.0 - pl)
        return out

    def _categorical(self, p: np.ndarray) -> float:
        if self.n_one == 0:
            return float("nan")
        ps = p[self.order]
        best = np.maximum.reduceat(ps, self.starts)[self.sorted_group]
        tied = ps >= best - TIE_TOL
        k = np.bincount(self.sorted_group, weights=tied, minlength=self.starts.size)
        hits = np.sum(tied[self.one] / k[self.sorted_group[self.one]])
        return float(hits / self.n_one)

    def score(self, predictions: np.ndarray) -> tuple[float, float]:
        """``(metric, normalized)``: the representative metric, and it signed so that higher is better
        (PSL's ``getNormalizedRepMetric``), an undefined (NaN) metric counted as its worst value."""
        value = self(predictions)[self.spec.metric]
        v = self.spec.worst() if math.isnan(value) else value
        return value, (v if self.spec.higher_is_better else -v)


# ============================================================================================ public
def _unit_values(values, name: str, *, nan_ok: bool = False) -> np.ndarray:
    try:
        v = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be an array of numbers in [0, 1]; got {values!r}.") from None
    if v.ndim != 1:
        raise ValueError(f"`{name}` must be one-dimensional, shape (n,); got shape {v.shape}.")
    check = v[~np.isnan(v)] if nan_ok else v
    if not np.all(np.isfinite(check)) or np.any((check < 0) | (check > 1)):
        bad = check[~(np.isfinite(check) & (check >= 0) & (check <= 1))]
        what = "in [0, 1] or NaN (no truth)" if nan_ok else "in [0, 1]"
        raise ValueError(f"`{name}` must hold numbers {what}; got {float(bad[0])!r}.")
    return v


def evaluate_arrays(predictions, truth, *, evaluator="ContinuousEvaluator", arguments=None) -> dict:
    """One PSL evaluator's metrics, from arrays.

    Parameters
    ----------
    predictions : array_like of shape (n,)
        Predicted values in [0, 1].
    truth : array_like of shape (n,)
        Truth values in [0, 1] of the same atoms; NaN for an atom without truth (it is then only a
        candidate category of the ``CategoricalEvaluator``, and every other metric leaves it out).
    evaluator : str or dict, default "ContinuousEvaluator"
        A PSL evaluator name, or an ``evaluations`` entry ``{"evaluator": name, "options": {...}}``.
    arguments : array_like of shape (n, arity), optional
        The atoms' arguments (strings or integers): needed by the ``CategoricalEvaluator``, which groups
        the atoms by their non-category arguments.

    Returns
    -------
    dict
        Metric name -> value (see the module docstring), ``n`` (atoms with truth) and ``representative``
        (the name of PSL's representative metric of the evaluator).

    Raises
    ------
    ValueError
        Arrays of different lengths or values out of [0, 1], an unknown evaluator or a bad option, a
        ``CategoricalEvaluator`` without ``arguments``.

    Examples
    --------
    >>> from tractable.psl.evaluation import evaluate_arrays
    >>> evaluate_arrays([0.9, 0.2, 0.6], [1.0, 0.0, 0.0], evaluator="DiscreteEvaluator")["accuracy"]
    0.6666666666666666
    """
    spec = _parse_evaluator(evaluator, where="evaluator")
    p = _unit_values(predictions, "predictions")
    t = _unit_values(truth, "truth", nan_ok=True)
    if p.shape != t.shape:
        raise ValueError(f"`predictions` and `truth` must have the same shape; got {p.shape} and {t.shape}.")
    groups = None
    if spec.name == "CategoricalEvaluator":
        if arguments is None:
            raise ValueError(
                "`arguments` is needed by the CategoricalEvaluator (the atoms' arguments, shape (n, arity))."
            )
        args = np.asarray(arguments)
        if args.ndim != 2 or args.shape[0] != p.size:
            raise ValueError(f"`arguments` must have shape ({p.size}, arity); got shape {args.shape}.")
        groups = _category_groups(args, spec.category_indexes)
    out = _Metrics(spec, t, groups)(p)
    out["representative"] = spec.metric
    return out


def _atom_text(row) -> str:
    return "(" + ", ".join(repr(str(a)) for a in row) + ")"


def _unique_atoms(df, args: list, name: str, predicate: str | None):
    """``df`` with one row per atom: a repeated atom with the same value counts once; different values
    are a ValueError naming the predicate and the atom."""
    dup = df.duplicated(subset=args, keep=False)
    if not dup.any():
        return df
    rows = df[dup]
    spread = rows.groupby(args, sort=False)["value"].agg(["min", "max"])
    conflict = spread[spread["min"] != spread["max"]]
    if len(conflict):
        key = conflict.index[0]
        key = key if isinstance(key, tuple) else (key,)
        lo, hi = conflict.iloc[0]["min"], conflict.iloc[0]["max"]
        of = f"the {name} of {predicate}" if predicate else f"`{name}`"
        raise ValueError(f"{of} lists the atom {_atom_text(key)} twice with different values ({lo:g} and {hi:g}).")
    return df.drop_duplicates(subset=args, keep="first")


def _frame(df, arity: int, name: str, predicate: str | None):
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"`{name}` must be a pandas DataFrame; got {type(df).__name__}.")
    args = list(range(arity))
    missing = [c for c in [*args, "value"] if c not in df.columns]
    if missing:
        raise ValueError(f"`{name}` must have the columns 0 .. {arity - 1} and 'value'; it lacks {missing!r}.")
    out = df[[*args, "value"]].copy()
    for a in args:
        out[a] = out[a].astype(str)
    try:
        vals = out["value"].to_numpy(dtype=float)
    except (TypeError, ValueError):
        first = out["value"].tolist()[:3]
        raise ValueError(f"`{name}`: the values must be numbers in [0, 1]; got {first!r}.") from None
    ok = np.isfinite(vals) & (vals >= 0) & (vals <= 1)
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        where = f" of {predicate}" if predicate else ""
        raise ValueError(
            f"`{name}`{where}: the atom {_atom_text(out.iloc[k][args])} has the value {float(vals[k])!r}; values "
            "are numbers in [0, 1]."
        )
    out["value"] = vals
    return _unique_atoms(out, args, name, predicate)


def _plain_column(col, *, strings: bool):
    """``col`` (a column DuckDB's ``fetchnumpy`` gave, or one of :meth:`Model._infer_columns`) as an ndarray, or
    None where it holds a NULL or (``strings``) an argument that is not a ``str``."""
    if isinstance(col, np.ma.MaskedArray):
        if np.ma.getmaskarray(col).any():
            return None
        col = col.data
    col = np.asarray(col, dtype=object) if strings else np.array(col, dtype=float)  # values: a copy
    if strings and not all(type(a) is str for a in col):
        return None
    return col


def _evaluate_columns(predictions: dict, truth: list, arity: int, evaluators=None, *, predicate: str | None = None):
    """:func:`evaluate_predicate` of columns instead of data frames, without pandas: ``predictions``
    ``{0: arguments, ..., arity - 1: ..., "value": values}``, ``truth`` the list of the ``arity`` argument columns
    and the value column. The same metrics where every argument is a string, every value a number in [0, 1]
    and no atom is listed twice in either; None otherwise (:func:`evaluate_predicate` then says what is wrong)."""
    if isinstance(arity, bool) or not isinstance(arity, (int, np.integer)) or arity < 1:
        return None
    if evaluators is not None and not isinstance(evaluators, (list, tuple)):
        return None
    specs = [_parse_evaluator(e) for e in (evaluators or _DEFAULT)]
    if len(predictions) != arity + 1 or len(truth) != arity + 1:
        return None
    p_args = [_plain_column(predictions.get(i), strings=True) for i in range(arity)]
    t_args = [_plain_column(c, strings=True) for c in truth[:arity]]
    pred = _plain_column(predictions.get("value"), strings=False)
    t_val = _plain_column(truth[arity], strings=False)
    if any(c is None for c in (*p_args, *t_args, pred, t_val)):
        return None
    for v in (pred, t_val):
        if not (np.isfinite(v) & (v >= 0) & (v <= 1)).all():
            return None
    p_keys = list(zip(*p_args)) if arity > 1 else p_args[0].tolist()
    t_keys = list(zip(*t_args)) if arity > 1 else t_args[0].tolist()
    found = dict(zip(t_keys, t_val.tolist()))
    if len(set(p_keys)) != len(p_keys) or len(found) != len(t_keys):
        return None
    # the left merge of the unique atoms: every prediction in order, its truth or NaN
    true = np.array([found.get(k, math.nan) for k in p_keys], dtype=float)
    out: dict = {"n": int(np.count_nonzero(~np.isnan(true)))}
    arguments = np.empty((pred.size, arity), dtype=object)
    for i, col in enumerate(p_args):
        arguments[:, i] = col
    for spec in specs:
        groups = _category_groups(arguments, spec.category_indexes) if spec.name == "CategoricalEvaluator" else None
        out.update(_Metrics(spec, true, groups)(pred))
    return out


def evaluate_predicate(predictions, truth, arity: int, evaluators=None, *, predicate: str | None = None) -> dict:
    """Metrics of one predicate's predictions.

    Parameters
    ----------
    predictions : pandas.DataFrame
        Columns ``0 .. arity-1`` (arguments) and ``value``.
    truth : pandas.DataFrame
        The same layout. An atom listed twice with the same value counts once; with different values it
        is a ``ValueError``.
    arity : int
    evaluators : list of dict or str, optional
        PSL's ``evaluations`` entries (``{"evaluator": name, "options": {...}}``) or names; default
        Discrete, Continuous and AUC.
    predicate : str, optional
        The predicate's name, for error messages.

    Returns
    -------
    dict
        Metric name -> value; ``n`` is the number of matched atoms.

    Raises
    ------
    ValueError
        A frame without the argument or ``value`` columns, values out of [0, 1], an atom listed twice
        with different values, an unknown evaluator, an evaluator option of the wrong type or out of
        range (the message names the option).
    """
    if isinstance(arity, bool) or not isinstance(arity, (int, np.integer)) or arity < 1:
        raise ValueError(f"`arity` must be a positive integer; got {arity!r}.")
    if evaluators is not None and not isinstance(evaluators, (list, tuple)):
        raise ValueError(f"`evaluators` must be a list of PSL evaluator names or entries; got {evaluators!r}.")
    specs = [_parse_evaluator(e) for e in (evaluators or _DEFAULT)]
    args = list(range(arity))
    p = _frame(predictions, arity, "predictions", predicate)
    t = _frame(truth, arity, "truth", predicate)
    merged = p.merge(t, on=args, how="left", suffixes=("_pred", "_truth"))
    pred = merged["value_pred"].to_numpy(float)
    true = merged["value_truth"].to_numpy(float)
    out: dict = {"n": int(np.count_nonzero(~np.isnan(true)))}
    arguments = merged[args].to_numpy(dtype=object)
    for spec in specs:
        groups = _category_groups(arguments, spec.category_indexes) if spec.name == "CategoricalEvaluator" else None
        out.update(_Metrics(spec, true, groups)(pred))
    return out
