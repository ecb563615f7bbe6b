"""Tree CRFs with evidence-specific structure (Chechetka & Guestrin 2010) on yeast: learning curves.

Yeast (Elisseeff & Weston 2002; 2417 genes, 103 features, 14 binary labels), the standard split:
the first 1500 rows train, the last 917 test. For training sizes n (the first n training rows) we
fit, on the same rows,

* ``indep_lr``: independent logistic regressions (``MultiOutputClassifier(LogisticRegression)``),
* ``chain``: scikit-learn's ``ClassifierChain`` of logistic regressions (label order 0..13),
* ``tree_crf``: :class:`tractable.crf.TreeCRF` on the Chow-Liu tree of the training labels,
* ``ess_crf``: :class:`tractable.crf.ESSCRF` (conditional Chow-Liu, Alg. 3),
* ``ess_crf_reg``: the same with the structure regularization of Sec. 6.1
  (``ConditionalChowLiu(min_edge_frequency=f)``),

and report the test conditional log-likelihood (mean over test rows of ``log p(Y | x)`` in nats: the
paper's Fig. 1 measure; for the chain the product of its conditionals given the true earlier labels,
which is its exact joint), the Hamming accuracy (CRFs decode each label by its max-marginal, the
Bayes decision for Hamming loss), the subset accuracy (CRFs: the MAP labelling; the chain: its greedy
prediction), and the training time. The CRFs use the default features of Eq. 9 (label indicators
times the standardized evidence with a bias, for unary and pairwise features); the ``*_ind`` rows
repeat the three CRFs with pairwise indicator features only (``pairwise_evidence=False``: evidence
enters through the unaries and, for ESS, through the structure). ``distinct_test_trees`` counts the
different structures an ESS-CRF uses on the test rows (1: the regularization left a fixed forest).

Hyperparameters are chosen once on the training part only (fit on rows 0-1199, score on rows
1200-1499), one at a time over a grid (``grids``): ``C`` of every model, then the structure
learner's ``C`` of the ESS-CRFs, then ``min_edge_frequency`` (``f``) of the regularized ones; the
learning curves reuse them. ``--quick`` skips the selection (``DEFAULTS``) and runs two sizes.

Targets: ESS-CRF (best variant) matches or beats the fixed Chow-Liu tree CRF in test log-likelihood
at the larger training sizes; training on the 1500 rows takes <= 30 s.

    python benchmarks/ess_crf.py [--quick] [--no-save]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.multioutput import ClassifierChain, MultiOutputClassifier

sys.path.insert(0, os.path.dirname(__file__))
from _harness import Recorder  # noqa: E402
from tractable import ConvergenceWarning  # noqa: E402
from tractable.crf import ESSCRF, ConditionalChowLiu, TreeCRF  # noqa: E402

N_TRAIN = 1500
N_FIT_SELECT = 1200
BASE_C_GRID = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
CRF_C_GRID = (0.01, 0.03, 0.1, 0.3)
STRUCTURE_C_GRID = (0.001, 0.003, 0.01, 0.03, 0.1, 1.0)
F_GRID = (0.05, 0.1, 0.2, 0.3)
DEFAULTS = {"C": 0.03, "structure_C": 0.01, "f": 0.2}


def load():
    from tractable.datasets import load_yeast  # the copy shipped with the package

    X, Y = load_yeast()
    return np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.int64)


class Standardized:
    """Standardize the features with the training mean and std (the CRFs do so themselves)."""

    def __init__(self, est):
        self.est = est

    def fit(self, X, Y):
        self.mean, self.scale = X.mean(0), X.std(0)
        self.scale[self.scale == 0] = 1.0
        self.est.fit(self._t(X), Y)
        return self

    def _t(self, X):
        return (X - self.mean) / self.scale


class LogReg(ClassifierMixin, BaseEstimator):
    """``LogisticRegression`` on binary labels; a label that is constant in a small training set gets
    the Laplace-smoothed constant ``P(y = seen) = (n + 1) / (n + 2)`` (scikit-learn refuses one class)."""

    def __init__(self, C=1.0, max_iter=2000):
        self.C = C
        self.max_iter = max_iter

    def fit(self, X, y):
        y = np.asarray(y).astype(np.int64)
        self.classes_ = np.array([0, 1])
        if np.unique(y).size == 1:
            self.lr_ = None
            p = (len(y) + 1) / (len(y) + 2)
            self.const_ = np.array([p, 1 - p]) if y[0] == 0 else np.array([1 - p, p])
        else:
            self.lr_ = LogisticRegression(C=self.C, max_iter=self.max_iter).fit(X, y)
        return self

    def predict_proba(self, X):
        if self.lr_ is None:
            return np.tile(self.const_, (len(X), 1))
        return self.lr_.predict_proba(X)

    def predict(self, X):
        return self.predict_proba(X).argmax(axis=1)


def make(name: str, params: dict):
    C = params["C"]
    if name == "indep_lr":
        return Standardized(MultiOutputClassifier(LogReg(C=C)))
    if name == "chain":
        return Standardized(ClassifierChain(LogReg(C=C)))
    pairwise_evidence = not name.endswith("_ind")
    if name.startswith("tree_crf"):
        return TreeCRF(C=C, pairwise_evidence=pairwise_evidence)
    if name.startswith("ess_crf"):
        f = params["f"] if "_reg" in name else 0.0
        structure = ConditionalChowLiu(C=params["structure_C"], min_edge_frequency=f)
        return ESSCRF(structure, C=C, pairwise_evidence=pairwise_evidence)
    raise KeyError(name)


def grids(name: str) -> list:
    """The hyperparameters of a model, searched one after the other in this order."""
    if name in ("indep_lr", "chain"):
        return [("C", BASE_C_GRID)]
    if name.startswith("tree_crf"):
        return [("C", CRF_C_GRID)]
    out = [("C", CRF_C_GRID), ("structure_C", STRUCTURE_C_GRID)]
    return out + [("f", F_GRID)] if "_reg" in name else out


def shown(name: str, params: dict) -> dict:
    keys = [k for k, _ in grids(name)]
    return {k: params[k] if k in keys else "" for k in ("C", "structure_C", "f")}


def evaluate(model, X, Y) -> dict:
    """Test conditional log-likelihood, Hamming and subset accuracy."""
    if isinstance(model, Standardized):
        Xs = model._t(X)
        est = model.est
        if isinstance(est, MultiOutputClassifier):
            ll = np.zeros(len(X))
            for i, e in enumerate(est.estimators_):
                p = e.predict_proba(Xs)
                ll += np.log(p[np.arange(len(X)), np.searchsorted(e.classes_, Y[:, i])])
            pred = est.predict(Xs)
            return {"test_cll": ll.mean(), "hamming_acc": (pred == Y).mean(), "subset_acc": (pred == Y).all(1).mean()}
        ll = np.zeros(len(X))
        order = est.order_
        for pos, e in enumerate(est.estimators_):
            label = order[pos]
            aug = np.hstack([Xs, Y[:, order[:pos]]])
            p = e.predict_proba(aug)
            ll += np.log(p[np.arange(len(X)), np.searchsorted(e.classes_, Y[:, label])])
        pred = est.predict(Xs).astype(np.int64)
        return {"test_cll": ll.mean(), "hamming_acc": (pred == Y).mean(), "subset_acc": (pred == Y).all(1).mean()}
    mm = model.predict(X, method="max_marginal")
    mp = model.predict(X, method="map")
    return {"test_cll": model.score(X, Y), "hamming_acc": (mm == Y).mean(), "subset_acc": (mp == Y).all(1).mean()}


def fit_timed(model, X, Y):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, Y)
    return time.perf_counter() - t0


def select(rec: Recorder, names, X, Y) -> dict:
    """Hyperparameters per model by validation inside the training rows (fit on rows 0-1199, score on
    1200-1499), one parameter at a time over its grid (``grids``), starting from ``DEFAULTS``."""
    Xa, Ya, Xv, Yv = X[:N_FIT_SELECT], Y[:N_FIT_SELECT], X[N_FIT_SELECT:N_TRAIN], Y[N_FIT_SELECT:N_TRAIN]
    chosen = {}
    for name in names:
        params = dict(DEFAULTS)
        seen: dict = {}
        for key, grid in grids(name):
            best = None
            for value in grid:
                trial = {**params, key: value}
                tag = tuple(sorted(trial.items()))
                if tag not in seen:
                    model = make(name, trial)
                    secs = fit_timed(model, Xa, Ya)
                    seen[tag] = evaluate(model, Xv, Yv)["test_cll"]
                    rec.add(stage="select", model=name, **shown(name, trial), val_cll=seen[tag], train_s=secs)
                if best is None or seen[tag] > best[0]:
                    best = (seen[tag], value)
            params[key] = best[1]
        chosen[name] = params
    return chosen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="no hyperparameter selection, two sizes: under a minute")
    ap.add_argument("--no-save", action="store_true", help="do not record the results")
    args = ap.parse_args()
    rec = Recorder(
        "ess_crf",
        title="Tree CRFs with evidence-specific structure (yeast learning curve)",
        notes=(
            "Yeast, first 1500 rows train (first n of them at size n), last 917 test. test_cll = mean log p(Y | x)"
            " over test rows (nats); hamming_acc (CRFs: max-marginal decoding); subset_acc (CRFs: MAP). C,"
            " structure_C (ConditionalChowLiu C) and f (min_edge_frequency) chosen one at a time on rows 1200-1499"
            " after fitting on 0-1199 (stage=select). *_ind: pairwise indicator features only. distinct_test_trees:"
            " structures an ESS-CRF uses on the test rows. Targets: ESS-CRF >= Chow-Liu tree CRF (same features) in"
            " test_cll at the larger sizes; train on 1500 rows <= 30 s."
        ),
    )
    X, Y = load()
    Xte, Yte = X[N_TRAIN:], Y[N_TRAIN:]
    names = ["indep_lr", "chain", "tree_crf", "ess_crf", "ess_crf_reg"]
    names += ["tree_crf_ind", "ess_crf_ind", "ess_crf_reg_ind"]
    if args.quick:
        names = ["indep_lr", "chain", "tree_crf", "ess_crf", "ess_crf_reg"]
        chosen = {name: dict(DEFAULTS) for name in names}
        sizes = [200, 800]
    else:
        chosen = select(rec, names, X, Y)
        sizes = [100, 200, 400, 800, 1500]
    curve: dict = {}
    for n in sizes:
        for name in names:
            model = make(name, chosen[name])
            secs = fit_timed(model, X[:n], Y[:n])
            row = evaluate(model, Xte, Yte)
            extra = {}
            if hasattr(model, "n_iter_"):
                extra["n_iter"] = model.n_iter_
                extra["converged"] = model.converged_
            if isinstance(model, ESSCRF):
                extra["structure_converged"] = model.structure_.converged_
                trees = model.predict_structure(Xte)
                extra["distinct_test_trees"] = len({tuple(map(tuple, t.tolist())) for t in trees})
                extra["mean_test_edges"] = float(np.mean([len(t) for t in trees]))
            rec.add(
                stage="curve",
                model=name,
                n_train=n,
                **shown(name, chosen[name]),
                **row,
                train_s=secs,
                **extra,
            )
            curve[(name, n)] = (row["test_cll"], extra.get("distinct_test_trees", 1))
    print("\nsummary (test conditional log-likelihood, higher is better; same features compared):")
    for suffix in ("", "_ind"):
        if f"tree_crf{suffix}" not in names:
            continue
        for n in sizes:
            tree = curve[(f"tree_crf{suffix}", n)][0]
            for m in (f"ess_crf{suffix}", f"ess_crf_reg{suffix}"):
                if m in names:
                    ess, distinct = curve[(m, n)]
                    verdict = "ESS >= tree" if ess >= tree else "tree better"
                    line = f"  n={n}: {m} {ess:.3f} ({distinct} distinct test trees)"
                    print(f"{line} vs tree_crf{suffix} {tree:.3f}: {verdict}")
    if not args.no_save:
        print(f"saved {rec.save()}")


if __name__ == "__main__":
    main()
