"""Weight learning for PSL programs: PSL 2.4's gradient learners and PSL 2.2-2.3's voted perceptrons.

The learn split is grounded **once** (:meth:`Model.ground`). Every ground potential knows its rule
(:attr:`GroundModel.potential_rules`), so a new weight vector is a multiply: the hinge-loss MRF of
weights ``w`` has the potentials of the ground program with weights ``w[rule of the potential]``; its
incompatibilities (the unweighted hinges ``max(c·x + b, 0)^p``) are summed per rule by one
``bincount``. The ``truth`` partition gives the labels: the observed values of target atoms. Targets
without truth are *latent*; with labels fixed at their truth and the latent atoms inferred (PSL 2.4's
"latent inference"), the *truth state* completes the labels. A truth atom that is not a target is a
``ValueError`` (PSL warns and ignores it).

Every inference inside learning warm-starts ADMM from the previous inference of the same kind (MAP,
latent, augmented): its consensus values, local copies, multipliers and step size, as PSL keeps them
(:func:`tractable.hlmrf.solve`'s ``warm_start``; 40% fewer ADMM iterations than from the consensus point
alone when the structured perceptron learns the Cora program's weights).

Learners (:data:`LEARNERS`, by PSL's class names; a fully qualified Java class name is accepted too):

* **PSL 2.4's gradient descent** (``org.linqs.psl.application.learning.weight.gradient``), options
  ``gradientdescent.*``: ``StructuredPerceptron`` (the loss ``sum_r w_r (phi_r(truth) -
  phi_r(MAP))``: the energy of the truth state minus the energy of the MAP state; its gradient is the
  difference of the incompatibilities), ``Energy`` (the loss ``sum_r w_r phi_r(truth)``),
  ``SquaredError`` and ``BinaryCrossEntropy`` (a loss of the MAP state's values against the truth,
  minimized by PSL's bilevel "minimizer" framework: see :class:`_Minimizer`). Each iteration computes
  the statistics at the current weights, the loss plus PSL's regularization (``l2 w^2 - log_reg
  log w + entropy_reg w log w``), the gradient (clipped to ``max_gradient_magnitude``) and one step of
  PSL's ``extension``: ``MIRROR_DESCENT`` (the default: exponentiated gradient on the unit simplex;
  the initial weights are first divided by their sum), ``PROJECTED_GRADIENT`` (a gradient step
  projected onto the unit simplex) or ``NONE`` (a gradient step, weights clipped at 0).
* **PSL 2.3's** ``MaxLikelihoodMPE`` (the voted perceptron; options ``votedperceptron.*``): the
  gradient of the log-likelihood, ``E[phi_r] - phi_r(truth)``, with the expectation approximated by the
  incompatibility of the MAP state, divided by the number of ground rules of the rule, times
  ``step_size / (k + 1)``.
* **PSL 2.2's** ``MaxPseudoLikelihood``: the voted perceptron on the pseudo-likelihood, whose expected
  incompatibilities are estimated per *block* by Monte Carlo integration (see :class:`_MaxPseudoLikelihood`).

* **PSL 2.1's** ``FrankWolfe`` (max-margin learning, "LME"; options ``frankwolfe.*``): the batch
  Frank-Wolfe algorithm on the structural SVM's dual, loss-augmented MAP inference as its oracle (see
  :class:`_FrankWolfe`).

* **PSL 2.4's search learners** (``org.linqs.psl.application.learning.weight.search``, in
  :mod:`tractable.psl.search`): ``GridSearch``, ``RandomGridSearch``, ``GuidedRandomGridSearch``,
  ``ContinuousRandomGridSearch``, ``Hyperband`` and ``GaussianProcessPrior`` score candidate weight
  vectors by MAP inference and the learning evaluator (``weightlearning.evaluator``; PSL 2.4's primary
  evaluation by default) and return the best; candidates run in parallel on ``n_jobs`` threads or a
  Dask ``client``.

Stopping, as PSL: the gradient-descent learners stop when the weights move less than
``movement_tol`` (``gradientdescent.movementbreak``; the minimizers when their objective difference
is below ``objective_difference_tol``) with ``status="converged"``, else after ``max_iter`` steps with
``status="max_iter_reached"`` and a :class:`~tractable.ConvergenceWarning` (``"completed"`` with
``run_full_iterations``); the voted perceptrons always take ``max_iter`` steps (``"completed"``).
"""

from __future__ import annotations

import math
import re
import time
import warnings
from dataclasses import dataclass

import numpy as np

from .._errors import ModelError
from .._results import (
    COMPLETED,
    CONVERGED,
    MAX_ITER_REACHED,
    TIME_LIMIT_REACHED,
    ConvergenceWarning,
    Result,
    frozen_array,
    stop_message,
    warn_stopped,
)
from .._validate import check_positive, check_rng, resolve_method
from .data import short_repr
from .model import ADMM_DEFAULTS, check_solve_options

__all__ = ["LEARNERS", "LEARNING_GAP_TOL", "LearnResult", "learn", "rule_text_with_weight"]

#: a weighted rule's text starts with its weight and a colon
_WEIGHT_PREFIX = re.compile(r"^\s*\d+(?:\.\d+)?(?:[eE]-?\d+)?\s*:\s*")
#: PSL's MathUtils.STRICT_EPSILON (log regularization) and EPSILON_FLOAT (cross entropy, zero tests)
_STRICT_EPS = 1e-8
_EPS_FLOAT = 1e-4
#: the certified relative gap at which learning's inner ADMM inferences stop, unless ``solve_options`` (or the
#: program's ``reasoner.tolerance``) sets ``gap_tol``; inference outside learning stops at 5e-4. A step's
#: gradient needs the MAP state's incompatibilities, not the last digits of its objective: on the psl-examples
#: programs the perceptron learns the same weights (to 1e-4; within 2e-3 on knowledge-graph-identification)
#: in 25-60% less time (lastfm: 2.7 s -> 1.1 s), and every inner state is still certified within 0.5%.
LEARNING_GAP_TOL = 5e-3


# ============================================================================================ result
@dataclass(frozen=True)
class LearnResult(Result):
    """Weights learned for the weighted rules of a PSL program.

    Attributes
    ----------
    weights : ndarray of shape (n_rules,)
        The learned weights (read-only), one per weighted rule, in rule order.
    rules : tuple of str
        The weighted rules' texts with the learned weights (``"0.42: A(X) -> B(X) ^2"``).
    loss : ndarray of shape (n_iter + 1,)
        The learner's loss (regularization included) at ``weight_path[k]``; the last entry is the loss
        at the returned weights (one more evaluation after the last step).
    objective : float
        ``loss[-1]``.
    initial_weights : ndarray of shape (n_rules,)
        The weights learning started from (after PSL's scaling to the simplex, where it applies).
    weight_path : ndarray of shape (n_iter + 1, n_rules)
        The weights before every step, and the returned ones last.
    gradients : ndarray of shape (n_iter, n_rules)
        The gradient of the loss each step used (after PSL's scaling and clipping).
    observed_incompatibility : ndarray of shape (n_rules,)
        Per rule, the incompatibility (sum of unweighted hinges) at the truth state of the last
        evaluation (labels at their truth, latent targets inferred).
    n_labels, n_latent : int
        Targets with truth, and targets without (latent: those a ground rule uses are inferred in the
        truth state).
    n_inferences : int
        ADMM solves run (MAP, latent and augmented inferences).
    inference_iterations : int
        ADMM iterations over all those solves (what warm starts save).
    inference_time : float
        Seconds spent in them.
    n_unconverged : int
        Inner solves that stopped before their tolerances (one ConvergenceWarning says how many).
    options : tuple of (str, object)
        The learner's options as used (Python names), defaults included.
    evaluator : str
        Search learners: the evaluator, its representative metric and the predicate scored (``""``
        for the gradient learners).
    metric_values : ndarray of shape (n_iter,) or None
        Search learners: the representative metric of every evaluated candidate, as the evaluator
        reports it (``loss`` is the same signed so that lower is better).
    budgets : ndarray of shape (n_iter,) or None
        Search learners: the share of ADMM's iteration budget each evaluation had (1 except in
        ``Hyperband``'s early rounds).
    time, method, converged, n_iter, status, message
        As in every result; ``method`` is PSL's short class name, ``n_iter`` the number of steps (of
        candidates evaluated, for the search learners).

    Notes
    -----
    The search learners (:mod:`tractable.psl.search`) fill the fields differently: ``loss`` has shape
    ``(n_iter,)``, PSL's search objective of each evaluated candidate (the evaluator's representative
    metric negated where higher is better, so that lower is better); ``weight_path`` holds the
    candidates in evaluation order; ``gradients`` is empty, shape ``(0, n_rules)``; ``objective`` is
    the loss of the returned weights; ``observed_incompatibility`` is taken at the returned weights.
    """

    weights: np.ndarray
    rules: tuple
    loss: np.ndarray
    objective: float
    initial_weights: np.ndarray
    weight_path: np.ndarray
    gradients: np.ndarray
    observed_incompatibility: np.ndarray
    n_labels: int = 0
    n_latent: int = 0
    n_inferences: int = 0
    inference_iterations: int = 0
    inference_time: float = 0.0
    n_unconverged: int = 0
    options: tuple = ()
    evaluator: str = ""
    metric_values: np.ndarray | None = None
    budgets: np.ndarray | None = None


def rule_text_with_weight(text: str, weight: float) -> str:
    """The text of a weighted rule with its weight replaced (``"1: A(X) -> B(X)"`` -> ``"0.5: A(X) -> B(X)"``)."""
    w = np.format_float_positional(float(weight), trim="-")
    return f"{w}: {_WEIGHT_PREFIX.sub('', text, count=1)}"


def rule_body(text: str) -> str:
    """A weighted rule's text without its weight (to match rules across models)."""
    return _WEIGHT_PREFIX.sub("", text, count=1).strip()


# ============================================================================================ options
def _as_bool(value, name):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"`{name}` must be a bool; got {value!r}.")


def _as_number(value, name, kind=float, *, lo=None, lo_open=False, hi=None, hi_open=False, inf_ok=False):
    try:
        if isinstance(value, (bool, np.bool_)):
            raise TypeError
        v = float(value) if not isinstance(value, str) else float(value.strip())
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a number; got {value!r}.") from None
    if math.isnan(v) or (math.isinf(v) and not inf_ok):
        raise ValueError(f"`{name}` must be a finite number; got {value!r}.")
    if kind is int:
        if v != int(v):
            raise ValueError(f"`{name}` must be an integer; got {value!r}.")
        v = int(v)
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ValueError(f"`{name}` must be {'>' if lo_open else '>='} {lo}; got {value!r}.")
    if hi is not None and (v > hi or (hi_open and v == hi)):
        raise ValueError(f"`{name}` must be {'<' if hi_open else '<='} {hi}; got {value!r}.")
    return v


def _positive(kind=float, inf_ok=False):
    return lambda v, n: _as_number(v, n, kind, lo=0, lo_open=True, inf_ok=inf_ok)


def _nonneg(v, n):
    return _as_number(v, n, lo=0)


def _extension(v, n):
    s = str(v).strip().upper() if isinstance(v, str) else None
    if s not in _EXTENSIONS:
        raise ValueError(f"`{n}` must be one of {', '.join(map(repr, _EXTENSIONS))}; got {v!r}.")
    return s


_EXTENSIONS = ("MIRROR_DESCENT", "PROJECTED_GRADIENT", "NONE")


def _inertia(v, n):
    return _as_number(v, n, lo=0, hi=1, hi_open=True)


def _must_clip(v, n):
    if not _as_bool(v, n):
        raise ValueError(
            f"`{n}`=False would let weights go negative; hinge-loss MRFs need weights >= 0, so they are always "
            "clipped at 0 here."
        )
    return True


#: Python name -> (PSL option name, default, converter), per family of learners
_COMMON_OPTIONS = {
    "random_weights": ("weightlearning.randomweights", False, _as_bool),
}
_GD_OPTIONS = {
    "max_iter": ("gradientdescent.numsteps", 500, _positive(int)),
    "step_size": ("gradientdescent.stepsize", 0.1, _positive()),
    "scale_step_size": ("gradientdescent.scalestepsize", True, _as_bool),
    "extension": ("gradientdescent.extension", "MIRROR_DESCENT", _extension),
    "l2_regularization": ("gradientdescent.l2regularization", 0.0, _nonneg),
    "log_regularization": ("gradientdescent.negativelogregularization", 1.0, _nonneg),
    "entropy_regularization": ("gradientdescent.negativeentropyregularization", 10.0, _nonneg),
    "clip_gradient": ("gradientdescent.clipweightgradient", True, _as_bool),
    "max_gradient_magnitude": ("gradientdescent.maxgradientmagnitude", 25.0, _positive()),
    "max_gradient_norm": ("gradientdescent.maxgradientnorm", math.inf, _positive(inf_ok=True)),
    "run_full_iterations": ("gradientdescent.runfulliterations", False, _as_bool),
}
_GD_BREAKS = {
    "movement_break": ("gradientdescent.movementbreak", True, _as_bool),
    "movement_tol": ("gradientdescent.movementtolerance", 1e-3, _positive()),
    "norm_break": ("gradientdescent.normbreak", False, _as_bool),
    "norm_tol": ("gradientdescent.normtolerance", 1e-3, _positive()),
    "objective_break": ("gradientdescent.objectivebreak", False, _as_bool),
    "objective_tol": ("gradientdescent.objectivetolerance", 1e-5, _positive()),
    "stopping_gradient_norm": ("gradientdescent.stoppinggradientnorm", math.inf, _positive(inf_ok=True)),
}
_MINIMIZER_OPTIONS = {
    "prox_rule_weight": ("minimizer.proxruleweight", 0.01, _positive()),
    "initial_squared_penalty": ("minimizer.initialsquaredpenalty", 10.0, _positive()),
    "squared_penalty_increase_rate": ("minimizer.squaredpenaltyincreaserate", 2.0, _positive()),
    "initial_linear_penalty": ("minimizer.initiallinearpenalty", 0.1, _nonneg),
    "objective_difference_tol": ("minimizer.objectivedifferencetolerance", 0.01, _nonneg),
    "final_movement_tol": ("minimizer.finalparametermovementconvergencetolerance", 0.01, _nonneg),
}
_VP_OPTIONS = {
    "max_iter": ("votedperceptron.numsteps", 25, _positive(int)),
    "step_size": ("votedperceptron.stepsize", 0.2, _positive()),
    "scale_step_size": ("votedperceptron.scalestepsize", True, _as_bool),
    "l1_regularization": ("votedperceptron.l1regularization", 0.0, _nonneg),
    "l2_regularization": ("votedperceptron.l2regularization", 0.0, _nonneg),
    "inertia": ("votedperceptron.inertia", 0.0, _inertia),
    "average_steps": ("votedperceptron.averagesteps", False, _as_bool),
    "zero_initial_weights": ("votedperceptron.zeroinitialweights", False, _as_bool),
    "scale_gradient": ("votedperceptron.scalegradient", True, _as_bool),
    "clip_negative_weights": ("votedperceptron.clipnegativeweights", True, _must_clip),
}
_MPLE_OPTIONS = {
    # PSL 2.2 spells the prefix "maxspeudolikelihood"; both spellings are accepted
    "n_samples": ("maxpseudolikelihood.numsamples", 10, _positive(int)),
    "boolean": ("maxpseudolikelihood.bool", False, _as_bool),
}
_FW_OPTIONS = {
    "max_iter": ("frankwolfe.maxiter", 500, _positive(int)),
    "gap_tol": ("frankwolfe.tolerance", 1e-5, _positive()),
    "average_weights": ("frankwolfe.averageweights", False, _as_bool),
    "nonnegative_weights": ("frankwolfe.nonnegativeweights", True, _must_clip),
    "normalize": ("frankwolfe.normalize", True, _as_bool),
    "l2_regularization": ("frankwolfe.regparam", 1.0, _positive()),
}
_PSL_ALIASES = {"maxspeudolikelihood.numsamples": "n_samples", "maxspeudolikelihood.bool": "boolean"}
#: Python keywords renamed to the library's grammar (a tolerance is ``*_tol``): old name -> new, accepted for one
#: release with a DeprecationWarning
_PY_RENAMED = {"tolerance": "gap_tol"}
#: options of every learner that are not PSL's (Python keywords only)
_PY_ONLY = ("initial_weights", "rng", "solve_options", "warm_start", "time_limit", "progress")


class _Progress:
    """A tqdm bar (on stderr) over learning's steps or a search's candidates when ``enabled``, else nothing:
    ``step()`` after each one, with the figures to show beside the count."""

    def __init__(self, enabled: bool, desc: str, total, unit: str):
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=desc, unit=unit)

    def step(self, n: int = 1, **postfix) -> None:
        if self.bar is not None:
            if postfix:
                self.bar.set_postfix({k: f"{v:.4g}" for k, v in postfix.items()}, refresh=False)
            self.bar.update(n)

    def close(self, complete: bool = False) -> None:
        """Close the bar; ``complete``: the run finished before its planned count (converged), so the count
        reached is the total."""
        if self.bar is not None:
            if complete and self.bar.total is not None and self.bar.n < self.bar.total:
                self.bar.total = self.bar.n
                self.bar.refresh()
            self.bar.close()


def _all_known() -> dict:
    """Every option name of every learner (Python and lower-cased PSL names) -> its Python name."""
    out = {}
    for cls in LEARNERS.values():
        for py, (psl, _, _) in cls.options.items():
            out[py] = py
            out[psl.lower()] = py
        for py in getattr(cls, "py_only", _PY_ONLY):
            out[py] = py
    out.update(_PSL_ALIASES)
    return out


def _parse_options(name: str, table: dict, given: dict, py_only: tuple = _PY_ONLY) -> dict:
    """Python-named options with defaults applied; PSL names (any case) map onto Python ones; misfits are
    errors. ``py_only``: the Python-only keywords the learner takes (read by the caller)."""
    psl_to_py = {psl.lower(): py for py, (psl, _, _) in table.items()}
    psl_to_py.update({k: v for k, v in _PSL_ALIASES.items() if v in table})
    known = _all_known()
    out, source = {}, {}
    for key, value in given.items():
        if key in py_only:
            continue
        if key in _PY_RENAMED and _PY_RENAMED[key] in table:
            warnings.warn(
                f"`{key}` is now `{_PY_RENAMED[key]}` (the name will be removed in the next release).",
                DeprecationWarning,
                stacklevel=4,
            )
            key = _PY_RENAMED[key]
        py = key if key in table else psl_to_py.get(key.lower() if isinstance(key, str) else key)
        if py is None:
            valid = (
                ", ".join(f"`{k}` ({psl})" for k, (psl, _, _) in table.items())
                + ", "
                + ", ".join(f"`{k}`" for k in py_only)
            )
            if key in known or (isinstance(key, str) and key.lower() in known):
                raise ValueError(f"`{key}` does not apply to `method`={name!r} (its options: {valid}).")
            raise ValueError(f"unknown weight-learning option `{key}` for `method`={name!r} (its options: {valid}).")
        if py in source:
            raise ValueError(f"the option `{py}` is given twice: as `{source[py]}` and as `{key}`.")
        source[py] = key
        out[py] = table[py][2](value, key)
    for py, (_, default, _) in table.items():
        out.setdefault(py, default)
    return out


# ============================================================================================ labels
def truth_labels(model, ground) -> tuple[np.ndarray, np.ndarray]:
    """The labels of a grounded model: ``(variables, values)`` of the targets listed in ``truth``.

    Raises
    ------
    ValueError
        No truth data; truth for a closed predicate, for an observed atom or for an atom that is not a
        target; an atom listed twice with different values.
    """
    con = model._con
    has_truth = [p for key, p in model._preds.items() if model._data.get((key, "truth"))]
    if not has_truth:
        raise ValueError(
            "weight learning needs the `truth` partition (the observed values of the targets), and this model "
            "has none: add truth data (or build the model with Model.from_json(path, split='learn'))."
        )
    variables, values = [], []
    for p in has_truth:
        if p.closed:
            raise ValueError(
                f"the truth of {p.key} has no targets to label: {p.key} is closed; truth is for the targets of "
                "open predicates."
            )
        args = ", ".join(f"tr.a{i}" for i in range(p.arity))
        dict_joins = " ".join(f"LEFT JOIN psl_dict AS d{i} ON d{i}.s = tr.a{i}" for i in range(p.arity))
        on = " AND ".join(f"t.a{i} = d{i}.id" for i in range(p.arity))
        rows = con.execute(
            f"SELECT coalesce(t.var, -1) AS var, coalesce(t.free, false) AS free, tr.value, {args} "
            f"FROM {p.table}_truth AS tr {dict_joins} LEFT JOIN {p.table} AS t ON {on}"
        ).fetchnumpy()
        var = np.asarray(rows["var"], np.int64)
        free = np.asarray(rows["free"], bool)
        bad = ~free
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            atom = f"{p.name}({', '.join(repr(str(rows[f'a{i}'][k])) for i in range(p.arity))})"
            what = "observed, not a target" if var[k] >= 0 else "not a target"
            raise ValueError(
                f"the truth of {p.key} lists {int(bad.sum())} atom(s) that are not targets, e.g. {atom}, which is "
                f"{what}: weight learning compares targets with their truth (PSL warns and ignores such atoms)."
            )
        val = np.asarray(rows["value"], dtype=float)
        order = np.argsort(var, kind="stable")
        var, val = var[order], val[order]
        same = var[1:] == var[:-1]
        if np.any(same & (val[1:] != val[:-1])):
            k = int(np.flatnonzero(same & (val[1:] != val[:-1]))[0])
            atom = f"{p.name}({', '.join(repr(str(rows[f'a{i}'][order[k]])) for i in range(p.arity))})"
            raise ValueError(
                f"the truth of {p.key} lists the atom {atom} twice with different values ({val[k]:g} and "
                f"{val[k + 1]:g})."
            )
        keep = np.concatenate([[True], ~same])
        variables.append(var[keep])
        values.append(val[keep])
    return np.concatenate(variables), np.concatenate(values)


# ============================================================================================ problem
class _Problem:
    """The ground learn split: potentials by weighted rule, the labels, and warm-started inference."""

    def __init__(self, ground, weighted, label_vars, label_vals, solve_options, warm_start, rng):
        from ..hlmrf import HLMRF, SENSES

        hl = ground.hlmrf
        self.n = hl.n_variables
        pot = hl.potential_arrays()
        self.indptr = np.asarray(pot["indptr"], np.int64)
        self.pvars = np.asarray(pot["variables"], np.int64)
        self.pcoef = np.asarray(pot["coefficients"], float)
        self.pconst = np.asarray(pot["constants"], float)
        self.squared = np.asarray(pot["squared"], bool)
        rule_of_pot = np.asarray(ground.potential_rules, np.int64)
        to_weighted = np.full(len(ground.rule_counts), -1, np.int64)
        to_weighted[weighted] = np.arange(len(weighted))
        self.rule = to_weighted[rule_of_pot]
        if np.any(self.rule < 0):  # pragma: no cover - hard rules ground no potentials
            raise RuntimeError("a potential of a hard rule")
        self.n_rules = len(weighted)
        self.counts = np.bincount(self.rule, minlength=self.n_rules).astype(float)
        con = hl.constraint_arrays()
        self.con = (
            np.asarray(con["indptr"], np.int64),
            np.asarray(con["variables"], np.int64),
            np.asarray(con["coefficients"], float),
            np.asarray(con["constants"], float),
            np.asarray(SENSES, dtype=object)[np.asarray(con["senses"], np.int64)],
        )
        self.con_codes = np.asarray(con["senses"], np.int64)
        fv, fx = hl.fixed
        self.fixed_vars, self.fixed_vals = np.asarray(fv, np.int64), np.asarray(fx, float)
        self.fixed_mask = np.zeros(self.n, bool)
        self.fixed_mask[self.fixed_vars] = True
        self.free = np.flatnonzero(~self.fixed_mask)
        self.label_vars, self.label_vals = label_vars, label_vals
        labeled = np.zeros(self.n, bool)
        labeled[label_vars] = True
        used = np.zeros(self.n, bool)
        used[self.pvars] = True
        used[self.con[1]] = True
        self.n_unlabeled = int(np.count_nonzero(~self.fixed_mask & ~labeled))
        # targets without truth that a potential or a constraint uses: inferred in the truth state
        self.latent = np.flatnonzero(~self.fixed_mask & ~labeled & used)
        # the truth state without latent targets: observations and labels (latent ones at 0 until inferred)
        self.x_truth = np.zeros(self.n)
        self.x_truth[self.fixed_vars] = self.fixed_vals
        self.x_truth[label_vars] = label_vals
        self.rows = np.repeat(np.arange(self.indptr.size - 1), np.diff(self.indptr))
        self.HLMRF = HLMRF
        self.solve_options = dict(solve_options or {})
        if self.solve_options.get("method", "admm") == "admm":  # every inference of learning, search's too
            self.solve_options = {**ADMM_DEFAULTS, "gap_tol": LEARNING_GAP_TOL, **self.solve_options}
        if "x0" in self.solve_options:
            raise ValueError("`solve_options` must not set `x0`: learning warm-starts every inference itself.")
        self.warm_start = warm_start
        self.rng = rng
        #: per kind of inference, the last ADMM result (its state starts the next one) or a start point
        self.x0: dict = {}
        #: per (labels, loss_augmented), the compiled model of weights 1 that every weight vector reweights
        self._bases: dict = {}
        self._truth_phi = None  # truth_incompatibility's, without latent targets
        self.n_solves = self.n_iter = self.n_unconverged = 0
        self.solve_time = 0.0

    # -- models
    def model(self, w, *, labels=False, prox=None, prox_weight=0.0, loss_augmented=False):
        """The HL-MRF of weights ``w``; ``labels``: labels fixed at their truth; ``prox``: targets of the
        augmented problem's proximity terms ``prox_weight (y_i - u_i)^2`` on every free variable;
        ``loss_augmented``: minus the L1 distance of the (0/1) labels to their truth added to the energy, as
        the linear potentials ``y_i`` (truth 1) and ``1 - y_i`` (truth 0) of weight 1 (``-|t - y|`` up to
        a constant)."""
        w = np.asarray(w, float)
        # every weight divided by the potentials' mean weight: the same minimizer, and ADMM's default step size
        # (tuned for weights near 1) fits whatever scale learning gives the weights (on the unit simplex,
        # 0.02 per rule on lastfm: a third fewer ADMM iterations); a step size the user sets is left as set
        total = float(np.dot(w, self.counts))
        c = total / self.counts.sum() if total > 0 and "rho" not in self.solve_options else 1.0
        if prox is not None:
            return self._build(w / c, labels, prox, prox_weight / c, loss_augmented, 1.0 / c)
        # the structure of each kind of problem is built and compiled once; a weight vector is then a gather
        # (HLMRF.with_weights keeps the compiled terms and what the solver derived from them)
        key = (labels, loss_augmented)
        base = self._bases.get(key)
        if base is None:
            base = self._build(np.ones(self.n_rules), labels, None, 0.0, loss_augmented, 1.0)
            base._compile()
            self._bases[key] = base
        pw = w[self.rule] / c
        if loss_augmented and self.label_vars.size:
            pw = np.concatenate([pw, np.full(self.label_vars.size, 1.0 / c)])
        return base.with_weights(pw)

    def _build(self, w, labels, prox, prox_weight, loss_augmented, loss_weight):
        m = self.HLMRF(self.n)
        if self.indptr.size > 1:
            m.add_potentials(self.indptr, self.pvars, self.pcoef, self.pconst, w[self.rule], self.squared)
        if prox is not None:
            k = self.free.size
            m.add_potentials(
                np.arange(0, 2 * k + 1, dtype=np.int64),
                np.repeat(self.free, 2),
                np.tile([1.0, -1.0], k),
                np.stack([-prox, prox], axis=1).ravel(),
                prox_weight,
                True,
            )
        if loss_augmented and self.label_vars.size:
            k = self.label_vars.size
            one = self.label_vals > 0.5
            m.add_potentials(
                np.arange(k + 1, dtype=np.int64),
                self.label_vars,
                np.where(one, 1.0, -1.0),
                np.where(one, 0.0, 1.0),
                loss_weight,
                False,
            )
        if self.con[0].size > 1:
            m.add_constraints(*self.con)
        if self.fixed_vars.size:
            m.fix(self.fixed_vars, self.fixed_vals)
        if labels and self.label_vars.size:
            try:
                m.fix(self.label_vars, self.label_vals)
            except ValueError as err:
                raise ValueError(f"the truth values contradict a hard rule of the program: {err}") from None
        return m

    def solve(self, kind, w, **model_kw) -> np.ndarray:
        from ..hlmrf import solve

        m = self.model(w, **model_kw)
        prev = self.x0.get(kind) if self.warm_start else None
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            opts = dict(self.solve_options)
            if opts.get("method", "admm") == "admm" and self.warm_start:
                # the previous inference of this kind: consensus, local copies, multipliers and rho
                opts["keep_state"] = True
                if isinstance(prev, np.ndarray):  # a start point only (the augmented inference's first)
                    opts["x0"] = prev
                elif prev is not None:
                    opts["warm_start"] = prev
            res = solve(m, **opts)
            if res.status == "infeasible" and ("x0" in opts or "warm_start" in opts):
                # a warm start must not change the answer: should a warm-started run report the program
                # infeasible, the cold run decides
                opts.pop("x0", None)
                opts.pop("warm_start", None)
                res = solve(m, **opts)
        self.solve_time += time.perf_counter() - t0
        self.n_solves += 1
        self.n_iter += int(res.n_iter)
        if res.status == "infeasible":
            raise ModelError(f"weight learning: the {kind} inference problem is infeasible ({res.message}).")
        if not res.converged:
            self.n_unconverged += 1
        x = np.clip(np.asarray(res.x, float), 0.0, 1.0)
        self.x0[kind] = res if res.state is not None else None
        return x

    # -- statistics
    def incompatibility(self, x) -> np.ndarray:
        """Per weighted rule, the sum of the unweighted hinges of its potentials at ``x``."""
        if self.indptr.size == 1:
            return np.zeros(self.n_rules)
        from ..hlmrf._kernels import term_values

        h = term_values(self.indptr, self.pvars, self.pcoef, self.pconst, x)
        np.maximum(h, 0.0, out=h)
        np.multiply(h, h, out=h, where=self.squared)
        return np.bincount(self.rule, weights=h, minlength=self.n_rules)

    def truth_incompatibility(self, w) -> np.ndarray:
        """:meth:`incompatibility` at :meth:`truth_state`; computed once when there are no latent targets (the
        truth state does not depend on the weights then). Read-only."""
        if self.latent.size == 0:
            if self._truth_phi is None:
                self._truth_phi = self.incompatibility(self.x_truth)
                self._truth_phi.flags.writeable = False
            return self._truth_phi
        phi = self.incompatibility(self.truth_state(w))
        phi.flags.writeable = False
        return phi

    def truth_state(self, w) -> np.ndarray:
        """Labels at their truth, latent targets inferred (PSL 2.4's latent inference)."""
        if self.latent.size == 0:
            return self.x_truth
        return self.solve("latent", w, labels=True)

    def map_state(self, w) -> np.ndarray:
        return self.solve("map", w)


# ============================================================================================ learners
class _GradientDescent:
    """PSL 2.4's ``GradientDescent``: subclasses give the statistics, the loss and its gradient."""

    family = "gd"
    options = {**_COMMON_OPTIONS, **_GD_OPTIONS, **_GD_BREAKS}

    def __init__(self, prob: _Problem, opt: dict):
        self.prob, self.opt = prob, opt
        self.obs = np.zeros(prob.n_rules)

    # hooks
    def stats(self, w):  # pragma: no cover - abstract
        raise NotImplementedError

    def learning_loss(self, w) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def learning_gradient(self, w) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def internal_step(self, step) -> float:
        return 0.0

    def stop_fresh(self, iteration) -> str | None:
        return None

    def after_step(self, iteration, movement, w) -> None:
        pass

    def stop(self, iteration, objective, previous, movement, gradient, w) -> str | None:
        """PSL's ``breakOptimization`` (previous: the last iteration's objective; PSL compares the objective
        with itself, so that its objective break fires at once)."""
        o = self.opt
        if o["run_full_iterations"]:
            return None
        if o["movement_break"] and movement <= o["movement_tol"]:
            return f"weights moved {movement:.3g} <= {o['movement_tol']:g}"
        if o["norm_break"]:
            norm = _gradient_norm(gradient, w, o)
            if norm <= o["norm_tol"]:
                return f"gradient norm {norm:.3g} <= {o['norm_tol']:g}"
        if o["objective_break"] and abs(objective - previous) <= o["objective_tol"]:
            return f"loss changed {abs(objective - previous):.3g} <= {o['objective_tol']:g}"
        return None


def _regularization(w, o) -> float:
    logw = np.log(np.maximum(w, _STRICT_EPS))
    return float(
        np.sum(o["l2_regularization"] * w * w - o["log_regularization"] * logw + o["entropy_regularization"] * w * logw)
    )


def _regularization_gradient(w, o) -> np.ndarray:
    wc = np.maximum(w, _STRICT_EPS)
    l2, log_reg, entropy = o["l2_regularization"], o["log_regularization"], o["entropy_regularization"]
    return 2.0 * l2 * w - log_reg / wc + entropy * (np.log(wc) + 1)


def _pnorm(v, p) -> float:
    if math.isinf(p):
        return float(np.max(np.abs(v))) if v.size else 0.0
    return float(np.sum(np.abs(v) ** p) ** (1.0 / p))


def _gradient_norm(g, w, o) -> float:
    """PSL's stopping norm of the gradient, per extension (a KL divergence on the simplex)."""
    ext = o["extension"]
    if ext == "MIRROR_DESCENT":
        p = np.exp(g - g.max())
        p /= p.sum()
        return float(np.sum(p * np.log(np.maximum(p * g.size, 1e-300))))
    if ext == "PROJECTED_GRADIENT":
        lr = o["log_regularization"]
        active = np.ones(g.size, bool)
        if lr == 0.0:
            active &= ~((np.abs(w) <= 1e-6) & (g > 0)) & ~((np.abs(w - 1) <= 1e-6) & (g < 0))
            active &= np.abs(g) > _STRICT_EPS
        if not active.any():
            return 0.0
        ga = g[active]
        p = np.exp(ga - ga.max())
        p /= p.sum()
        return float(np.sum(p * np.log(np.maximum(p * active.sum(), 1e-300))))
    clipped = np.where((np.abs(w) <= _EPS_FLOAT) & (g > 0), 0.0, g)
    return _pnorm(clipped, o["stopping_gradient_norm"])


def _simplex_projection(v) -> np.ndarray:
    """Euclidean projection onto the unit simplex (the algorithm PSL cites: sort, threshold)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, v.size + 1)
    cond = u - css / k > 0
    rho = int(np.flatnonzero(cond)[-1]) if cond.any() else 0
    return np.maximum(v - css[rho] / (rho + 1), 0.0)


class _OptimalValue(_GradientDescent):
    """PSL 2.4's optimal-value losses: functions of the truth state's (latent inference's) energy."""

    def truth_stats(self, w):
        self.obs = self.prob.truth_incompatibility(w)


class _StructuredPerceptron(_OptimalValue):
    """PSL 2.4's ``StructuredPerceptron`` (PSL's default learner).

    Loss ``sum_r w_r (phi_r(truth state) - phi_r(MAP state))``, the energy of the truth state minus the
    least energy; gradient ``phi_r(truth state) - phi_r(MAP state)`` (envelope theorem).
    """

    psl_class = "org.linqs.psl.application.learning.weight.gradient.optimalvalue.StructuredPerceptron"

    def stats(self, w):
        self.truth_stats(w)
        self.map = self.prob.incompatibility(self.prob.map_state(w))

    def learning_loss(self, w):
        return float(np.dot(w, self.obs - self.map))

    def learning_gradient(self, w):
        return self.obs - self.map


class _Energy(_OptimalValue):
    """PSL 2.4's ``Energy``: loss ``sum_r w_r phi_r(truth state)`` (the energy of the observed labels,
    latent targets inferred), gradient ``phi_r(truth state)``. Without regularization (PSL's default has
    ``log_regularization=1``) it drives weights towards 0 (on the simplex: onto the best-satisfied rule)."""

    psl_class = "org.linqs.psl.application.learning.weight.gradient.optimalvalue.Energy"

    def stats(self, w):
        self.truth_stats(w)

    def learning_loss(self, w):
        return float(np.dot(w, self.obs))

    def learning_gradient(self, w):
        return self.obs.copy()


class _Minimizer(_GradientDescent):
    """PSL 2.4's minimizer framework: a loss of the MAP state's values, as a bilevel problem.

    Minimize ``supervised(u)`` over the weights ``w`` and proximity targets ``u`` (one per free atom, in
    [0, 1]) subject to ``V(w, u) <= 0``, where ``V = min_y [E_w(y) + p ||y - u||^2] - min_y E_w(y)``
    (``p = prox_rule_weight``): ``V = 0`` exactly when ``u`` is a MAP state, so the problem is "the
    weights whose MAP state has the smallest loss". PSL solves it by an augmented Lagrangian:
    each iteration runs MAP inference (``y_map``) and the *augmented* inference with the proximity terms
    (``y_aug``), and takes one gradient step on ``(c / 2) V^2 + lambda V + supervised(u)`` in ``w`` (the
    gradient ``(lambda + c V) (phi(y_aug) - phi(y_map))``) and in ``u`` (``supervised'(u) + (lambda + c V)
    2 p (u - y_aug)``, projected onto [0, 1]), with the same step size. When the parameters move less
    than a tolerance, ``lambda`` grows by ``2 c V`` if ``V`` is small enough, else ``c`` is multiplied by
    ``squared_penalty_increase_rate`` (PSL's schedule of tolerances). ``u`` starts at the truth state.
    Learning stops when ``V < objective_difference_tol`` (``converged``) or after ``max_iter`` steps.
    """

    options = {**_COMMON_OPTIONS, **_GD_OPTIONS, **_MINIMIZER_OPTIONS}

    def __init__(self, prob, opt):
        super().__init__(prob, opt)
        o = opt
        self.pw = o["prox_rule_weight"]
        self.c = o["initial_squared_penalty"]
        self.lam = o["initial_linear_penalty"]
        self.movement_tol = 1.0 / self.c
        self.constraint_tol = 1.0 / self.c**0.1
        self.final_tol = o["objective_difference_tol"]
        self.final_movement_tol = o["final_movement_tol"]
        self.u = None
        self.outer = 1
        pos = np.full(prob.n, -1, np.int64)
        pos[prob.free] = np.arange(prob.free.size)
        self.label_pos = pos[prob.label_vars]  # labels' positions in u
        self.label_vals = prob.label_vals

    def supervised(self, u) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def supervised_gradient(self, u) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def stats(self, w):
        prob = self.prob
        x_map = prob.map_state(w)
        self.map = prob.incompatibility(x_map)
        if self.u is None:
            x_lat = prob.truth_state(w)
            self.obs = prob.incompatibility(x_lat)
            self.u = x_lat[prob.free].copy()
            prob.x0.setdefault("augmented", x_lat.copy())
        x_aug = prob.solve("augmented", w, prox=self.u, prox_weight=self.pw)
        self.y_aug = x_aug[prob.free]
        self.aug = prob.incompatibility(x_aug)
        self.v = self.difference(w, self.u)
        g = np.zeros(self.u.size)
        g[self.label_pos] += self.supervised_gradient(self.u[self.label_pos])
        g += (self.lam + self.c * self.v) * 2.0 * self.pw * (self.u - self.y_aug)
        self.u_gradient = g

    def difference(self, w, u) -> float:
        """``V``: the augmented energy (proximity terms included) minus the MAP energy."""
        return float(np.dot(w, self.aug - self.map) + self.pw * np.sum((u - self.y_aug) ** 2))

    def learning_loss(self, w):
        return 0.5 * self.c * self.v**2 + self.lam * self.v + self.supervised(self.u[self.label_pos])

    def learning_gradient(self, w):
        return (self.lam + self.c * self.v) * (self.aug - self.map)

    def internal_step(self, step) -> float:
        new = np.clip(self.u - step * self.u_gradient, 0.0, 1.0)
        moved = float(np.sum(np.abs(new - self.u)))
        self.u = new
        return moved

    def after_step(self, iteration, movement, w):
        v = self.difference(w, self.u)  # PSL's: new weights and u, previous inferences
        if iteration > 0 and movement < self.movement_tol:
            self.outer += 1
            if v < self.constraint_tol:
                if v < self.final_tol and movement < self.final_movement_tol:
                    return
                self.lam += 2.0 * self.c * v
                self.constraint_tol /= self.c**0.9
                self.movement_tol /= self.c
            else:
                self.c *= self.opt["squared_penalty_increase_rate"]
                self.constraint_tol = 1.0 / self.c**0.1
                self.movement_tol = 1.0 / self.c

    def stop(self, iteration, objective, previous, movement, gradient, w):
        return None

    def stop_fresh(self, iteration):
        """PSL stops when the objective difference is below ``objective_difference_tol``, testing it right
        after a step with the new weights and the previous inferences (so that a step that lowers the
        weights of the rules the augmented state violates more fakes convergence); here it is tested on
        the inferences at the new weights, before the next step."""
        if self.opt["run_full_iterations"] or iteration == 0:
            return None
        if self.v < self.final_tol:
            return f"objective difference {self.v:.3g} < {self.final_tol:g}"
        return None


class _SquaredError(_Minimizer):
    """PSL 2.4's ``SquaredError``: ``sum_i (u_i - truth_i)^2`` over the labels, in the minimizer framework
    (at a solution ``u`` is a MAP state: the squared error of the MAP state against the truth)."""

    psl_class = "org.linqs.psl.application.learning.weight.gradient.minimizer.SquaredError"

    def supervised(self, u):
        return float(np.sum((u - self.label_vals) ** 2))

    def supervised_gradient(self, u):
        return 2.0 * (u - self.label_vals)


class _BinaryCrossEntropy(_Minimizer):
    """PSL 2.4's ``BinaryCrossEntropy``: ``-sum_i [t_i log u_i + (1 - t_i) log(1 - u_i)]`` over the labels
    (``u`` clamped at 1e-4 inside the logarithms, as PSL does), in the minimizer framework."""

    psl_class = "org.linqs.psl.application.learning.weight.gradient.minimizer.BinaryCrossEntropy"

    def supervised(self, u):
        t = self.label_vals
        return float(-np.sum(t * np.log(np.maximum(u, _EPS_FLOAT)) + (1 - t) * np.log(np.maximum(1 - u, _EPS_FLOAT))))

    def supervised_gradient(self, u):
        t = self.label_vals
        return -(t / np.maximum(u, _EPS_FLOAT) - (1 - t) / np.maximum(1 - u, _EPS_FLOAT))


class _VotedPerceptron:
    """PSL 2.3's ``VotedPerceptron``: ``w_r += step (E[phi_r] - phi_r(truth) - l2 w_r - l1) / n_r`` with
    ``n_r`` the rule's number of ground rules (``scale_gradient``), ``step = step_size / (k + 1)``
    (``scale_step_size``), momentum ``inertia`` times the last step, weights clipped at 0; optionally the
    average of the visited weights (``average_steps``)."""

    family = "vp"
    options = {**_COMMON_OPTIONS, **_VP_OPTIONS}

    def __init__(self, prob: _Problem, opt: dict):
        self.prob, self.opt = prob, opt
        self.obs = np.zeros(prob.n_rules)

    def regularization(self, w) -> float:
        o = self.opt
        return float(0.5 * o["l2_regularization"] * np.sum(w * w) + o["l1_regularization"] * np.sum(np.abs(w)))


class _MaxLikelihoodMPE(_VotedPerceptron):
    """PSL 2.3's ``MaxLikelihoodMPE``: the expected incompatibility of the likelihood's gradient is
    approximated by the incompatibility of the MAP state. Loss (PSL's): ``sum_r w_r (phi_r(truth) -
    phi_r(MAP))`` plus the regularization ``l2 |w|^2 / 2 + l1 |w|_1``. Latent targets are inferred in the
    truth state at every step (PSL 2.3 leaves them at their initial value 0 and warns)."""

    psl_class = "org.linqs.psl.application.learning.weight.maxlikelihood.MaxLikelihoodMPE"

    def stats(self, w):
        self.obs = self.prob.truth_incompatibility(w)
        self.expected = self.prob.incompatibility(self.prob.map_state(w))

    def loss(self, w) -> float:
        return float(np.dot(w, self.obs - self.expected)) + self.regularization(w)


class _MaxPseudoLikelihood(_VotedPerceptron):
    """PSL 2.2's ``MaxPseudoLikelihood``: the voted perceptron on the pseudo-log-likelihood.

    The free atoms are cut into *blocks* as PSL's ``ConstraintBlockerTermGenerator`` cuts them: the free
    atoms of one categorical hard constraint (``sum x <= r`` or ``sum x = r`` with equal coefficients,
    after the observed atoms are folded in; PSL's ``Cat(A, +C) <= 1 .`` / ``= 1 .``) form a block, every
    other atom of a potential is a block of its own over [0, 1]; an atom in two constraints, or another
    kind of constraint, is a ``ValueError`` (as in PSL). The pseudo-likelihood is the product over blocks
    of the density of the block's truth given the truth of every other atom, ``p(x_b | x_-b) ∝
    exp(-sum_r w_r Phi_{b,r}(x_b))`` with ``Phi_{b,r}`` the incompatibility of the rule's potentials that
    touch the block; its gradient is ``sum_b E[Phi_{b,r}] - Phi_{b,r}(truth)``.

    The expectations are Monte Carlo integrals, as in PSL: per block and per step, ``max(n_samples * k,
    150)`` points drawn uniformly from the block's domain (the box, or the simplex face ``sum x = r`` /
    the corner ``sum x <= r`` of a block of ``k`` atoms; fresh points at every step), weighted by
    ``exp(-energy)`` and self-normalized. With ``boolean=True`` the points are the block's corners (each
    atom at 1, and all at 0 unless ``sum x = r``), an exact sum over a Boolean domain. The loss is the
    estimate ``-log PL = sum_b [w . Phi_b(truth) + log mean_s exp(-w . Phi_b(s))]`` (up to the constant
    log-volumes of the domains) plus the regularization.

    Differences from PSL 2.2, whose code has two slips: PSL draws each point on a simplex of dimension
    equal to the *number of samples* (so every coordinate is about 1/150) and conditions on the targets
    reset to 0 rather than on their truth; here points are uniform on the block's domain and the
    conditioning is on the truth. PSL subtracts each ground rule's observed incompatibility once, here
    once per block it touches (the exact gradient of the pseudo-likelihood). Targets without truth are a
    ``ValueError``, as in PSL 2.2.
    """

    psl_class = "org.linqs.psl.application.learning.weight.maxlikelihood.MaxPseudoLikelihood"
    options = {**_COMMON_OPTIONS, **_VP_OPTIONS, **_MPLE_OPTIONS}
    #: entries times samples per chunk of blocks
    _CHUNK = 4_000_000

    def __init__(self, prob, opt):
        super().__init__(prob, opt)
        if prob.latent.size:
            raise ValueError(
                f"MaxPseudoLikelihood needs the truth of every target (as PSL 2.2); {prob.latent.size} target(s) "
                "have none. Use another learner, or add their truth."
            )
        self._build_blocks()

    def _build_blocks(self):
        prob = self.prob
        n = prob.n
        block_of = np.full(n, -1, np.int64)
        kinds, rs, members = [], [], []  # per block
        # -- categorical constraints
        indptr, cv, cc, cb, _ = prob.con
        codes = prob.con_codes
        n_con = indptr.size - 1
        if n_con:
            rows = np.repeat(np.arange(n_con), np.diff(indptr))
            sign = np.where(codes == 2, -1.0, 1.0)
            c = cc * sign[rows]
            b = cb * sign
            fixed = prob.fixed_mask[cv]
            b = b + np.bincount(rows[fixed], weights=c[fixed] * prob.x_truth[cv[fixed]], minlength=n_con)
            fr, fvar, fc = rows[~fixed], cv[~fixed], c[~fixed]
            n_free = np.bincount(fr, minlength=n_con)
            cmax = np.full(n_con, -np.inf)
            cmin = np.full(n_con, np.inf)
            np.maximum.at(cmax, fr, fc)
            np.minimum.at(cmin, fr, fc)
            has = n_free > 0
            bad = has & (np.abs(cmax - cmin) > 1e-9 * np.maximum(1.0, np.abs(cmax)))
            eq = codes == 1
            bad |= has & ~eq & (cmax <= 0)
            c0 = np.where(has, cmax, 1.0)
            r = np.where(has, -b / np.where(c0 == 0, 1.0, c0), 0.0)
            bad |= has & ((r < -1e-9) | (r > 1 + 1e-9))
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    "MaxPseudoLikelihood supports only categorical hard constraints, as PSL does (a sum of atoms "
                    f"= 1 or <= 1, such as `Cat(A, +C) = 1 .`); constraint {k} of the ground program is not one."
                )
            twice = np.bincount(fvar, minlength=n) > 1
            if twice.any():
                raise ValueError(
                    "MaxPseudoLikelihood: an atom appears in two hard constraints (variable "
                    f"{int(np.flatnonzero(twice)[0])}); PSL's constraint blocks allow one per atom."
                )
            r = np.clip(r, 0.0, 1.0)
            pinned = has & ((r <= 1e-9) | (eq & (n_free == 1)))
            block_of[fvar[pinned[fr]]] = -2  # no freedom: not in the pseudo-likelihood
            keep = has & ~pinned
            order = np.argsort(fr, kind="stable")
            fr_s, fv_s = fr[order], fvar[order]
            starts = np.searchsorted(fr_s, np.arange(n_con))
            ends = np.searchsorted(fr_s, np.arange(n_con), side="right")
            for k in np.flatnonzero(keep):
                members.append(fv_s[starts[k] : ends[k]])
                kinds.append("eq" if eq[k] else "leq")
                rs.append(float(r[k]))
        # -- every other free atom of a potential: a block over [0, 1]
        in_pot = np.zeros(n, bool)
        in_pot[prob.pvars] = True
        assigned = np.zeros(n, bool)
        for mem in members:
            assigned[mem] = True
        single = np.flatnonzero(in_pot & ~prob.fixed_mask & ~assigned & (block_of != -2))
        members += [np.array([v]) for v in single]
        kinds += ["leq"] * single.size
        rs += [1.0] * single.size
        # -- blocks sorted into groups of equal (kind, size): contiguous ids per group
        sizes = np.array([m.size for m in members], np.int64)
        kind_code = np.array([k == "eq" for k in kinds], np.int64)
        order = np.lexsort((sizes, kind_code)) if members else np.zeros(0, np.int64)
        members = [members[i] for i in order]
        self.kind_eq = kind_code[order].astype(bool)
        self.sizes = sizes[order]
        self.r = np.array(rs, float)[order] if members else np.zeros(0)
        pos = np.zeros(n, np.int64)
        for bi, mem in enumerate(members):
            block_of[mem] = bi
            pos[mem] = np.arange(mem.size)
        self.n_blocks = len(members)
        # -- incidence pairs (potential, block), sorted by block
        prows, pv, pc = prob.rows, prob.pvars, prob.pcoef
        sel = block_of[pv] >= 0
        er, ev, ec = prows[sel], pv[sel], pc[sel]
        eb = block_of[ev]
        m = max(prob.indptr.size - 1, 1)
        key = eb * m + er
        uniq, inv = np.unique(key, return_inverse=True)
        self.pair_pot = uniq % m
        self.pair_block = uniq // m
        order = np.argsort(inv, kind="stable")
        self.ent_pair = inv[order]
        self.ent_coef = ec[order]
        self.ent_var = ev[order]
        self.ent_pos = pos[ev[order]]
        self.pair_rule = prob.rule[self.pair_pot]
        self.pair_sq = prob.squared[self.pair_pot]
        # linear values at the truth, and without the block's own atoms
        x = prob.x_truth
        full = np.bincount(prows, weights=pc * x[pv], minlength=prob.indptr.size - 1) + prob.pconst
        own = np.bincount(self.ent_pair, weights=self.ent_coef * x[self.ent_var], minlength=uniq.size)
        self.pair_val = full[self.pair_pot]
        self.pair_base = self.pair_val - own
        h = np.maximum(self.pair_val, 0.0)
        self.pair_phi_truth = np.where(self.pair_sq, h * h, h)

    def _samples(self, b0, b1, n_s, k, eq):
        """Points of blocks ``b0:b1`` (all of one group): shape (b1 - b0, n_s, k)."""
        r = self.r[b0:b1, None, None]
        if self.opt["boolean"]:
            corners = np.eye(k) if eq else np.vstack([np.eye(k), np.zeros((1, k))])
            return np.broadcast_to(corners[None], (b1 - b0, corners.shape[0], k)) * r
        e = -np.log1p(-self.prob.rng.random((b1 - b0, n_s, k + (0 if eq else 1))))
        return e[..., :k] / e.sum(axis=2, keepdims=True) * r

    def stats(self, w):
        w = np.asarray(w, float)
        R = self.prob.n_rules
        expected = np.zeros(R)
        lse_total = 0.0
        groups = (
            np.flatnonzero(
                np.concatenate([[True], (self.sizes[1:] != self.sizes[:-1]) | (self.kind_eq[1:] != self.kind_eq[:-1])])
            )
            if self.n_blocks
            else np.zeros(0, np.int64)
        )
        bounds = np.append(groups, self.n_blocks)
        pair_starts = np.searchsorted(self.pair_block, np.arange(self.n_blocks + 1))
        ent_starts = np.searchsorted(self.ent_pair, np.arange(self.pair_block.size + 1))
        wr = w[self.pair_rule]
        for g0, g1 in zip(bounds[:-1], bounds[1:]):
            k, eq = int(self.sizes[g0]), bool(self.kind_eq[g0])
            if self.opt["boolean"]:
                n_s = k if eq else k + 1
            else:
                n_s = max(self.opt["n_samples"] * k, 150)
            per_block = max(1, (ent_starts[pair_starts[g1]] - ent_starts[pair_starts[g0]]) // max(g1 - g0, 1))
            chunk = max(1, self._CHUNK // max(1, n_s * per_block))
            for b0 in range(g0, g1, chunk):
                b1 = min(g1, b0 + chunk)
                s = self._samples(b0, b1, n_s, k, eq)
                p0, p1 = pair_starts[b0], pair_starts[b1]
                e0, e1 = ent_starts[p0], ent_starts[p1]
                val = np.repeat(self.pair_base[p0:p1, None], s.shape[1], axis=1)
                if e1 > e0:
                    local_block = self.pair_block[self.ent_pair[e0:e1]] - b0
                    contrib = self.ent_coef[e0:e1, None] * s[local_block, :, self.ent_pos[e0:e1]]
                    np.add.at(val, self.ent_pair[e0:e1] - p0, contrib)
                h = np.maximum(val, 0.0)
                phi = np.where(self.pair_sq[p0:p1, None], h * h, h)
                energy = np.zeros((b1 - b0, s.shape[1]))
                np.add.at(energy, self.pair_block[p0:p1] - b0, wr[p0:p1, None] * phi)
                a = -energy
                amax = a.max(axis=1, keepdims=True)
                ea = np.exp(a - amax)
                z = ea.sum(axis=1, keepdims=True)
                prob_s = ea / z
                lse_total += float(np.sum(np.log(z[:, 0]) + amax[:, 0] - np.log(s.shape[1])))
                ex = np.sum(prob_s[self.pair_block[p0:p1] - b0] * phi, axis=1)
                expected += np.bincount(self.pair_rule[p0:p1], weights=ex, minlength=R)
        self.expected = expected
        self.obs = np.bincount(self.pair_rule, weights=self.pair_phi_truth, minlength=R)
        self.nlpl = float(np.dot(w, self.obs)) + lse_total

    def loss(self, w) -> float:
        return self.nlpl + self.regularization(w)


class _FrankWolfe:
    """PSL 2.1's max-margin learner ``FrankWolfe`` (LME): the batch Frank-Wolfe algorithm on the dual of the
    structural SVM (Lacoste-Julien et al. 2013), with loss-augmented MAP inference as the linear oracle.

    The primal, with ``N`` the number of labels when ``normalize`` (else 1) and ``lambda`` =
    ``l2_regularization``::

        P(w) = lambda / 2 |w|^2 + max_y [ |y - t|_1 + w . (phi(t) - phi(y)) ] / N

    with ``phi(t)`` the incompatibilities per rule at the truth state and ``|y - t|_1`` the L1 distance of
    the labels to their truth. The inner maximum is the *loss-augmented inference*: the MAP state of the
    energy minus the L1 distance, an HL-MRF again when the truth is 0/1 (linear potentials of weight 1;
    :meth:`_Problem.model`). Each iteration: the loss-augmented state ``y``, the corner ``w_s = -(phi(t) -
    phi(y)) / (lambda N)`` and loss ``l_s = |y - t|_1 / N``; the exact line search of the dual,
    ``gamma = clip((lambda w.(w - w_s) + l_s - l) / (lambda |w - w_s|^2), 0, 1)``; ``w <- (1 - gamma) w +
    gamma w_s`` (clipped at 0), ``l <- (1 - gamma) l + gamma l_s``. The *duality gap* ``lambda w.(w - w_s) +
    l_s - l`` bounds ``P(w) - min P`` (when no weight is clipped) and stops learning below ``tolerance``.

    As PSL: learning starts from the rule weights with ``l = 0``; the truth's incompatibilities are
    computed once (targets without truth at their latent inference under the initial weights; PSL leaves
    them at 0); ``average_weights`` returns PSL's running average ``a_k = k / (k + 2) a_(k-1) + 2 / (k + 2)
    w_k`` when learning stops unconverged. The truth must be 0 or 1 (PSL throws);
    ``loss`` holds ``P(w)`` at every visited weight vector, ``gradients`` its subgradient ``lambda w +
    (phi(t) - phi(y)) / N``.
    """

    family = "fw"
    psl_class = "org.linqs.psl.application.learning.weight.maxmargin.FrankWolfe"
    options = {**_COMMON_OPTIONS, **_FW_OPTIONS}

    def __init__(self, prob: _Problem, opt: dict):
        self.prob, self.opt = prob, opt
        vals = prob.label_vals
        bad = (vals != 0.0) & (vals != 1.0)
        if bad.any():
            raise ValueError(
                f"the max-margin learner needs truth values of 0 or 1 (its loss-augmented inference maximizes the "
                f"L1 distance to them, convex only for 0/1 truth; PSL throws too); {int(bad.sum())} of "
                f"{vals.size} labels are fractional, e.g. {float(vals[np.flatnonzero(bad)[0]]):g}."
            )
        self.n_norm = float(max(vals.size, 1)) if opt["normalize"] else 1.0
        self.obs = np.zeros(prob.n_rules)

    def oracle(self, w):
        """Loss-augmented inference at ``w``: (feature difference (phi(t) - phi(y)) / N, loss |y - t|_1 / N)."""
        prob = self.prob
        y = prob.solve("loss_augmented", w, loss_augmented=True)
        l1 = float(np.sum(np.abs(y[prob.label_vars] - prob.label_vals)))
        return (self.obs - prob.incompatibility(y)) / self.n_norm, l1 / self.n_norm

    def primal(self, w, psi, l_s) -> float:
        return float(0.5 * self.opt["l2_regularization"] * np.dot(w, w) + l_s + np.dot(w, psi))


def _run_fw(learner, w, o, deadline, progress):
    prob = learner.prob
    lam = o["l2_regularization"]
    learner.obs = prob.truth_incompatibility(w)
    path, losses, grads = [w.copy()], [], []
    avg = w.copy()
    loss = 0.0
    status, detail, n_steps = None, "", 0
    for it in range(1, o["max_iter"] + 1):
        psi, l_s = learner.oracle(w)
        losses.append(learner.primal(w, psi, l_s))
        grads.append(lam * w + psi)
        w_s = -psi / lam
        delta = w - w_s
        numerator = float(np.dot(w, delta)) + (l_s - loss) / lam
        denominator = float(np.dot(delta, delta))
        if denominator != 0.0:
            gamma = min(max(numerator / denominator, 0.0), 1.0)
        else:
            gamma = 1.0 if numerator > 0 else 0.0
        w = (1.0 - gamma) * w + gamma * w_s
        w = np.maximum(w, 0.0)
        avg = it / (it + 2.0) * avg + 2.0 / (it + 2.0) * w
        loss = (1.0 - gamma) * loss + gamma * l_s
        path.append(w.copy())
        n_steps = it
        gap = lam * numerator
        progress.step(objective=losses[-1], gap=gap)
        if gap < o["gap_tol"]:
            status, detail = CONVERGED, f"duality gap {gap:.3g} < {o['gap_tol']:g}"
            break
        if deadline is not None and time.perf_counter() > deadline:
            status = TIME_LIMIT_REACHED
            break
    if status is None:
        status, detail = MAX_ITER_REACHED, f"duality gap {gap:.3g} >= {o['gap_tol']:g}"
    if status != CONVERGED and o["average_weights"]:
        w = avg
        path[-1] = w.copy()
    psi, l_s = learner.oracle(w)
    losses.append(learner.primal(w, psi, l_s))
    return w, path, losses, grads, n_steps, status, detail


#: PSL learner class name -> learner (resolved by :meth:`Model.learn`; fully qualified names work too)
LEARNERS = {
    "StructuredPerceptron": _StructuredPerceptron,
    "Energy": _Energy,
    "SquaredError": _SquaredError,
    "BinaryCrossEntropy": _BinaryCrossEntropy,
    "MaxLikelihoodMPE": _MaxLikelihoodMPE,
    "MaxPseudoLikelihood": _MaxPseudoLikelihood,
    "FrankWolfe": _FrankWolfe,
}


# ============================================================================================ drivers
def _run_gd(learner, w, o, deadline, progress):
    ext = o["extension"]
    path, losses, grads = [w.copy()], [], []
    status, detail, previous = None, "", math.inf
    n_steps = 0
    fresh = False
    for it in range(o["max_iter"]):
        learner.stats(w)
        why = learner.stop_fresh(it)
        if why is not None:
            status, detail, fresh = CONVERGED, why, True
            break
        objective = learner.learning_loss(w) + _regularization(w, o)
        g = learner.learning_gradient(w) + _regularization_gradient(w, o)
        if o["clip_gradient"]:
            norm = _pnorm(g, o["max_gradient_norm"])
            if norm > o["max_gradient_magnitude"]:
                g = g * (o["max_gradient_magnitude"] / norm)
        step = o["step_size"] / (it + 1) if o["scale_step_size"] else o["step_size"]
        if ext == "MIRROR_DESCENT":
            a = -step * g
            new = w * np.exp(a - a.max())
            new /= new.sum()
        elif ext == "PROJECTED_GRADIENT":
            new = _simplex_projection(w - step * g)
        else:
            new = np.maximum(w - step * g, 0.0)
        movement = float(np.sum(np.abs(new - w))) + learner.internal_step(step)
        w = new
        learner.after_step(it, movement, w)
        losses.append(objective)
        grads.append(g)
        path.append(w.copy())
        n_steps = it + 1
        progress.step(objective=objective, movement=movement)
        why = learner.stop(it, objective, previous, movement, g, w)
        if why is not None:
            status, detail = CONVERGED, why
            break
        previous = objective
        if deadline is not None and time.perf_counter() > deadline:
            status, detail = TIME_LIMIT_REACHED, ""
            break
    if status is None:
        status = COMPLETED if o["run_full_iterations"] else MAX_ITER_REACHED
    if not fresh:
        learner.stats(w)
    losses.append(learner.learning_loss(w) + _regularization(w, o))
    return w, path, losses, grads, n_steps, status, detail


def _run_vp(learner, w, o, deadline, progress):
    prob = learner.prob
    if o["zero_initial_weights"]:
        w = np.zeros_like(w)
    scale = np.maximum(prob.counts, 1.0) if o["scale_gradient"] else np.ones(prob.n_rules)
    path, losses, grads = [w.copy()], [], []
    last = np.zeros_like(w)
    total = np.zeros_like(w)
    status, n_steps = COMPLETED, 0
    for step in range(o["max_iter"]):
        learner.stats(w)
        losses.append(learner.loss(w))
        g = (learner.obs - learner.expected + o["l2_regularization"] * w + o["l1_regularization"]) / scale
        cur = -o["step_size"] * g
        if o["scale_step_size"]:
            cur /= step + 1
        cur += o["inertia"] * last
        w = np.maximum(w + cur, 0.0)
        last = cur
        total += w
        grads.append(g)
        n_steps = step + 1
        progress.step(loss=losses[-1])
        if o["average_steps"]:
            path.append(total / n_steps)
        else:
            path.append(w.copy())
        if deadline is not None and time.perf_counter() > deadline and step + 1 < o["max_iter"]:
            status = TIME_LIMIT_REACHED
            break
    if o["average_steps"] and n_steps:
        w = total / n_steps
    path[-1] = w.copy()
    learner.stats(w)
    losses.append(learner.loss(w))
    return w, path, losses, grads, n_steps, status, f"{n_steps} steps of the voted perceptron"


# ============================================================================================ entry
def _resolve(method):
    name = method.rsplit(".", 1)[-1] if isinstance(method, str) and "." in method else method
    resolve_method(name if name in LEARNERS else method, LEARNERS)
    return name


#: prefixes of PSL's weight-learning options (a program's ``options`` with these go to :meth:`Model.learn`)
LEARNING_PREFIXES = (
    "gradientdescent.",
    "minimizer.",
    "votedperceptron.",
    "maxspeudolikelihood.",
    "maxpseudolikelihood.",
    "frankwolfe.",
    "weightlearning.",
    "gridsearch.",
    "randomgridsearch.",
    "guidedrandomgridsearch.",
    "continuousrandomgridsearch.",
    "hyperband.",
    "gpp.",
    "gppker.",
    "search.",
)


def learner_options(method: str, options: dict) -> dict:
    """The entries of ``options`` (PSL names, from a program) that the learner ``method`` uses.

    A program may set options of several learners (PSL reads the ones of the learner it runs); the others
    are dropped here, so :meth:`Model.learn` sees only what applies.
    """
    table = LEARNERS[_resolve(method)].options
    used = {psl.lower() for psl, _, _ in table.values()} | {k for k, v in _PSL_ALIASES.items() if v in table}
    return {k: v for k, v in options.items() if k.lower() in used}


def learn(model, *, method: str = "StructuredPerceptron", **options) -> LearnResult:
    """Learn the weights of a model's weighted rules from its ``truth`` partition (see :meth:`Model.learn`).

    The model's weights are left as they are; :meth:`Model.learn` sets them.
    """
    t0 = time.perf_counter()
    name = _resolve(method)
    cls = LEARNERS[name]
    opt = _parse_options(name, cls.options, options, getattr(cls, "py_only", _PY_ONLY))
    rules = model.rules
    weighted = [i for i, r in enumerate(rules) if not r.hard]
    if not weighted:
        raise ValueError("the model has no weighted rules: nothing to learn.")
    rng = check_rng(options.get("rng"))
    init = options.get("initial_weights")
    if init is None:
        w0 = np.array([rules[i].weight for i in weighted], float)
    else:
        w0 = _check_weights(init, len(weighted), "initial_weights")
    if opt["random_weights"]:
        if init is not None:
            raise ValueError("give `initial_weights` or `random_weights`, not both.")
        w0 = rng.random(len(weighted))
    time_limit = options.get("time_limit")
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")  # a Python keyword: a number, as hlmrf.solve's
    solve_options = options.get("solve_options")
    if solve_options is not None and not isinstance(solve_options, dict):
        raise TypeError(f"`solve_options` must be a dict of tractable.hlmrf.solve options; got {solve_options!r}.")
    if solve_options is not None:
        check_solve_options(solve_options, "`solve_options`")
    warm_start = _as_bool(options.get("warm_start", True), "warm_start")
    show = _as_bool(options.get("progress", False), "progress")
    ground = model.ground()
    label_vars, label_vals = truth_labels(model, ground)
    prob = _Problem(ground, weighted, label_vars, label_vals, solve_options, warm_start, rng)
    deadline = None if time_limit is None else t0 + time_limit
    if cls.family == "search":
        from .search import search_learn

        return search_learn(
            model,
            name,
            cls,
            opt,
            options,
            prob=prob,
            ground=ground,
            rules=rules,
            weighted=weighted,
            w0=w0,
            rng=rng,
            t0=t0,
            deadline=deadline,
            progress=show,
        )
    if cls.family == "gd" and opt["extension"] != "NONE":
        total = w0.sum()
        if not total > 0:
            raise ValueError(
                f"`initial_weights` sum to 0; the {opt['extension']} extension scales them onto the unit simplex "
                "(use extension='NONE', or give positive weights)."
            )
        w0 = w0 / total
    learner = cls(prob, opt)
    runner = {"gd": _run_gd, "vp": _run_vp, "fw": _run_fw}[cls.family]
    progress = _Progress(show, name, opt["max_iter"], "step")
    status = None
    try:
        w, path, losses, grads, n_steps, status, detail = runner(learner, w0.copy(), opt, deadline, progress)
    finally:
        progress.close(complete=status == CONVERGED)
    message = stop_message(status, name, n_steps, detail)
    if prob.n_unconverged:
        warn_stopped(
            f"{name}: {prob.n_unconverged} of {prob.n_solves} inner ADMM inferences stopped before converging "
            "(tighten or relax `solve_options`)."
        )
    result = LearnResult(
        frozen_array(w),
        tuple(rule_text_with_weight(rules[i].text, wi) for i, wi in zip(weighted, w)),
        frozen_array(losses, float),
        float(losses[-1]),
        frozen_array(path[0]),
        frozen_array(np.array(path, float).reshape(len(path), len(weighted))),
        frozen_array(np.array(grads, float).reshape(len(grads), len(weighted))),
        frozen_array(learner.obs),
        n_labels=int(label_vars.size),
        n_latent=prob.n_unlabeled,
        n_inferences=prob.n_solves,
        inference_iterations=prob.n_iter,
        inference_time=prob.solve_time,
        n_unconverged=prob.n_unconverged,
        options=tuple(sorted(opt.items())),
        time=time.perf_counter() - t0,
        method=name,
        converged=status in (CONVERGED, COMPLETED),
        n_iter=n_steps,
        status=status,
        message=message,
    )
    if not result.converged:
        warn_stopped(message)
    return result


def _check_weights(weights, n: int, name: str) -> np.ndarray:
    raw = np.asarray(weights)
    if raw.dtype.kind not in "iuf":  # text, bools, complex numbers or objects are no weights
        raise ValueError(f"`{name}` must be an array of {n} real numbers; got {short_repr(weights)}.")
    w = raw.astype(float)
    if w.shape != (n,):
        raise ValueError(f"`{name}` must have one weight per weighted rule, shape ({n},); got shape {w.shape}.")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"`{name}` must be finite; got {w.tolist()}.")
    if np.any(w < 0):
        raise ValueError(f"`{name}` must be >= 0 (PSL's weights are non-negative); got {w.tolist()}.")
    return w


# PSL 2.4's search learners live in their own module, which imports this one: registered last
from .search import SEARCH_LEARNERS  # noqa: E402

LEARNERS.update(SEARCH_LEARNERS)
