"""PSL 2.4's search weight learners: grid, random, guided, Hyperband and Bayesian (Gaussian-process) search.

The learners of ``org.linqs.psl.application.learning.weight.search`` (PSL 2.4.0): each proposes
candidate weight vectors and scores every candidate as PSL does, by MAP inference on the learn split at
those weights followed by the learning evaluator on the atoms with truth; the best candidate's weights
are returned. Candidates are scored by :func:`tractable.psl.evaluation`'s evaluators from arrays (no data
frame per candidate).

**The evaluator** (``evaluator``, PSL 2.3's ``weightlearning.evaluator``): by default PSL 2.4's *primary
evaluation* of the program (the ``evaluations`` entry marked ``"primary": true``, else the first one
declared), on its predicate only; a program without evaluations uses PSL 2.3's default,
``ContinuousEvaluator`` over every atom with truth. ``evaluator`` may name an evaluator
(``"DiscreteEvaluator"``) or give an ``evaluations`` entry (``{"evaluator": ..., "options": {...}}``),
optionally with ``"predicate": "Name"`` to evaluate one predicate; without a predicate every predicate
with truth counts (the ``CategoricalEvaluator`` then groups by predicate as well). The score is the
evaluator's *representative metric* (F1, MSE, categorical accuracy or AUROC by default, see
:mod:`tractable.psl.evaluation`), signed so that higher is better (PSL's ``getNormalizedRepMetric``);
an undefined metric counts as its worst value.

**Result** (:class:`~tractable.psl.LearnResult`): ``loss[k]`` is PSL's search objective of the k-th
evaluated candidate, the negated normalized metric, so that *lower is better* as for every learner: the
metric itself for MSE and MAE, minus it for F1, accuracy and AUROC. ``metric_values[k]`` is the metric
as the evaluator reports it, ``weight_path[k]`` the candidate, ``budgets[k]`` its share of the ADMM
budget (1 except in Hyperband's early rounds), ``objective`` the loss of the returned weights,
``n_iter`` the number of evaluations; ``status`` is ``"completed"``, or ``"time_limit_reached"`` when
``time_limit`` stopped the search (the best candidate so far is returned). Ties go to the first
candidate in the learner's order (grid order for the grid learners, whatever order they were drawn in,
evaluation order otherwise), so that answers do not depend on how evaluations were scheduled.

**Inference.** The learn split is grounded once; a candidate's HL-MRF is the ground potentials times
its weights (:meth:`tractable.psl.learning._Problem.model`). Every candidate's ADMM solve warm-starts
(``warm_start=True``, the default) from the same point, the MAP state at the initial weights, solved
once before the search (``x0`` of :func:`tractable.hlmrf.solve`). A fixed start keeps every
candidate's score independent of the order and place of evaluation (PSL starts each inference from
the previous candidate's state); a converged solve's answer does not depend on its start beyond the
solver's tolerances. Measured: on the 3-atom program of ``tests/psl/test_search.py`` a 25-point grid
took 3,960 ADMM iterations at tolerances 1e-9 against 4,660 from zeros (anchor included), and about
the same at the default tolerances and on a generated CiteSeer (about 40 iterations a solve either
way). ADMM's full state (local copies and multipliers, ``solve(warm_start=...)``) from another weight
vector was slower than zeros there (6,310), so only the consensus point is reused. Hyperband resumes a
surviving configuration from its own previous solve.

**Parallelism.** ``n_jobs`` threads score candidates concurrently. ADMM's iterations and certificates
run in numba kernels compiled with ``nogil=True`` (:mod:`tractable._numba`), so threads overlap them;
the Python between kernel calls (building each candidate's model, the solver's checks) holds the GIL.
Measured on a generated CiteSeer (4,800 atoms, 17,038 potentials; 16 candidates, tolerances 1e-7):
about 80% of a candidate's time is in those kernels, so on free cores threads can overlap most of it;
on tiny programs the Python part dominates and threads buy little. On this project's shared 2-core
test machine two threads were no faster there while other jobs ran (0.85 s against 0.63 s): they need
idle cores. With a core free they halve the time: RandomGridSearch's 150 candidates on the generated
jester program (51,131 potentials) took 3.5 s on two threads against 7.0 s on one. ``tractable psl``
uses every core for a search learner's candidates (``--threads N`` sets how many); ``n_jobs`` defaults
to 1 here.
``client`` (a ``dask.distributed.Client``) scatters the ground problem to its workers once and submits
one task per candidate. The candidates, their order and the answer are the same whatever ``n_jobs`` or
``client`` (only ``time_limit`` makes the set evaluated depend on timing). ``GaussianProcessPrior``
chooses each candidate from every earlier score, so it evaluates one at a time.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np

from .._errors import ModelError
from .._results import COMPLETED, TIME_LIMIT_REACHED, ConvergenceWarning, frozen_array, stop_message, warn_stopped
from .evaluation import _category_groups, _Evaluator, _Metrics, _parse_evaluator
from .learning import (
    _COMMON_OPTIONS,
    _PY_ONLY,
    LearnResult,
    _as_bool,
    _positive,
    _Progress,
    rule_text_with_weight,
)

__all__ = ["SEARCH_LEARNERS"]

#: PSL's ``Hyperband.MIN_BUDGET_PROPORTION``
_MIN_BUDGET = 0.001
#: PSL's ``GaussianProcessPrior.SMALL_VALUE``: early stopping when every remaining variance is below it
_GPP_SMALL = 0.4
#: the smallest weight in the log-spaced kernels (PSL's ``1 / MAX_RAND_INT_VAL``)
_GPP_MIN_WEIGHT = 1e-8
#: candidates per chunk of a Gaussian-process prediction (memory: chunk x evaluated points)
_GPP_CHUNK = 262_144
#: ADMM's default iteration budget (:func:`tractable.hlmrf.solve`; PSL's ``admmreasoner.maxiterations``)
_ADMM_MAX_ITER = 25_000


# ============================================================================================ options
def _grid_weights(value, name) -> tuple:
    def bad(detail):
        return ValueError(
            f"`{name}` must list the grid's weights, finite numbers >= 0 (PSL writes them ':'-separated, e.g. "
            f"'0.001:0.01:0.1:1:10'); {detail}"
        )

    if isinstance(value, str):
        items = [s.strip() for s in value.replace(",", ":").split(":")] if value.strip() else []
    elif isinstance(value, (list, tuple, np.ndarray)):
        items = list(np.asarray(value, dtype=object).reshape(-1))
    else:
        raise bad(f"got {value!r}.")
    if not items:
        raise bad(f"got {value!r}, an empty search space.")
    out = []
    for item in items:
        try:
            if isinstance(item, (bool, np.bool_)):
                raise TypeError
            v = float(item)
        except (TypeError, ValueError):
            raise bad(f"got {item!r} in {value!r}.") from None
        if not math.isfinite(v) or v < 0:
            raise bad(f"got {item!r} in {value!r}.")
        out.append(v)
    return tuple(out)


@dataclass(frozen=True)
class _EvaluatorChoice:
    """The ``evaluator`` option: an evaluator and the predicate it evaluates (None: every predicate)."""

    spec: _Evaluator
    predicate: str | None = None

    def __str__(self) -> str:
        return f"{self.spec} on {self.predicate or 'every predicate with truth'}"


def _evaluator_option(value, name):
    if value is None:
        return None
    predicate = None
    if isinstance(value, dict) and "predicate" in value:
        value = dict(value)
        predicate = value.pop("predicate")
        if not isinstance(predicate, str) or not predicate.strip():
            raise ValueError(f"`{name}`: `predicate` must name a predicate; got {predicate!r}.")
        predicate = predicate.strip()
    spec = _parse_evaluator(value, where=name)
    return _EvaluatorChoice(spec, predicate or spec.default_predicate)


def _space(value, name):
    s = value.strip().upper() if isinstance(value, str) else None
    if s not in ("SS", "OS", "LS"):
        raise ValueError(f"`{name}` must be one of 'SS', 'OS', 'LS'; got {value!r}.")
    return s


_EVALUATOR = {"evaluator": ("weightlearning.evaluator", None, _evaluator_option)}
_SAMPLER = {
    "dirichlet": ("search.dirichlet", True, _as_bool),
    "dirichlet_alpha": ("search.dirichletalpha", 0.05, _positive()),
}
_GRID = {"weights": ("gridsearch.weights", (0.001, 0.01, 0.1, 1.0, 10.0), _grid_weights)}
_SEARCH_PY_ONLY = (*_PY_ONLY, "n_jobs", "client")


def _n_jobs(value) -> int:
    if value is None:
        return 1
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or (value < 1 and value != -1):
        raise ValueError(f"`n_jobs` must be a positive integer or -1 (every core); got {value!r}.")
    if value == -1:
        import os

        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
    return int(value)


# ============================================================================================ evaluation
class _Task:
    """Everything one candidate's score needs (scattered once to Dask workers): the ground problem, the
    evaluated atoms and their metric, the solver options and the common warm start."""

    def __init__(self, prob, metrics, eval_vars, used, solve_options, start):
        self.prob, self.metrics = prob, metrics
        self.eval_vars = eval_vars
        self.used = used
        self.solve_options = dict(solve_options)
        self.admm = self.solve_options.get("method", "admm") == "admm"
        self.max_iter = int(self.solve_options.get("max_iter") or _ADMM_MAX_ITER)
        self.start = start


def _score(task: _Task, w, budget: float, x0, keep_x: bool, time_limit):
    """Score one candidate: MAP inference at weights ``w`` (``budget`` of ADMM's iterations), then the
    evaluator. Returns ``(metric, normalized, n_iter, converged, status, seconds, x or None)``."""
    from ..hlmrf import solve

    t0 = time.perf_counter()
    m = task.prob.model(w)
    opts = dict(task.solve_options)
    if task.admm:
        if budget < 1.0:
            opts["max_iter"] = max(1, int(task.max_iter * budget))
        start = x0 if x0 is not None else task.start
        if start is not None:
            opts["x0"] = start
    if time_limit is not None:
        opts["time_limit"] = max(time_limit, 1e-3)
    res = solve(m, **opts)  # its ConvergenceWarning: silenced by the driver (see _Run.evaluate), counted
    if res.status == "infeasible" and "x0" in opts:
        # a warm start must not change the answer: should a warm-started run report the program infeasible,
        # the cold run decides
        del opts["x0"]
        res = solve(m, **opts)
    if res.status == "infeasible":
        raise ModelError(f"weight learning: MAP inference at the weights {np.asarray(w).tolist()} is infeasible.")
    x = np.clip(np.asarray(res.x, float), 0.0, 1.0)
    pred = np.where(task.used, x[task.eval_vars], 0.0)
    metric, normalized = task.metrics.score(pred)
    return (
        metric,
        normalized,
        int(res.n_iter),
        bool(res.converged),
        res.status,
        time.perf_counter() - t0,
        (x if keep_x else None),
    )


def _evaluation_atoms(model, ground, prob, choice: _EvaluatorChoice | None):
    """The evaluator and the atoms it scores: ``(choice, variables, truth (NaN: candidate category only),
    in_rules, groups)``."""
    if choice is None:
        declared = [
            (key, e)
            for key, entries in model.evaluators.items()
            for e in (entries if isinstance(entries, (list, tuple)) else [entries])
        ]
        if declared:
            specs = [(key, _parse_evaluator(e, where=f"evaluations of {key}")) for key, e in declared]
            key, spec = next(((k, s) for k, s in specs if s.primary), specs[0])
            choice = _EvaluatorChoice(spec, key.split("/")[0])
        else:
            choice = _EvaluatorChoice(_parse_evaluator("ContinuousEvaluator"), None)
    spec = choice.spec
    truth_of = np.full(prob.n, np.nan)
    truth_of[prob.label_vars] = prob.label_vals
    strings, parts, used = ground._atom_parts
    want = None if choice.predicate is None else choice.predicate.split("/")[0].lower()
    names = [p[0] for p in parts]
    if want is not None and want not in {n.lower() for n in names}:
        raise ValueError(
            f"`evaluator`: the predicate {choice.predicate!r} has no targets in the learn split (open predicates: "
            f"{', '.join(names) or 'none'})."
        )
    variables, groups, offset = [], [], 0
    for name, arg_ids, var, free, _ in parts:
        if want is not None and name.lower() != want:
            continue
        v = np.asarray(var, np.int64)[np.asarray(free, bool)]
        if spec.name != "CategoricalEvaluator":
            v = v[~np.isnan(truth_of[v])]
        elif v.size:
            args = np.stack([strings[np.asarray(ids)[np.asarray(free, bool)]] for ids in arg_ids], axis=1)
            g = _category_groups(args, spec.category_indexes)
            groups.append(g + offset)
            offset += int(g.max()) + 1
        variables.append(v)
    v = np.concatenate(variables) if variables else np.zeros(0, np.int64)
    t = truth_of[v]
    if not np.any(~np.isnan(t)):
        where = f"{choice.predicate}" if choice.predicate else "any predicate"
        raise ValueError(f"`evaluator`: {where} has no targets with truth in the learn split; nothing to score.")
    g = np.concatenate(groups) if groups else None
    return choice, v, t, np.asarray(used, bool)[v], g


# ============================================================================================ driver
class _Run:
    """Scores batches of candidates (threads, Dask or in turn) and records every evaluation."""

    def __init__(self, task, n_jobs, client, deadline):
        self.task, self.n_jobs, self.client, self.deadline = task, n_jobs, client, deadline
        self.progress = _Progress(False, "", None, "")  # a bar over the candidates scored (search_learn sets it)
        self.best_seen = None  # (normalized, metric) of the best candidate so far, for the bar
        self.weights, self.metric, self.normalized, self.budgets, self.ranks = [], [], [], [], []
        self.n_solves = self.n_iter = self.n_unconverged = 0
        self.solve_time = 0.0
        self.stopped = False
        self._task_future = None
        self._pool = None

    def __enter__(self):
        if self.client is not None:
            [self._task_future] = self.client.scatter([self.task], broadcast=True, hash=False)
        elif self.n_jobs > 1:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(self.n_jobs, thread_name_prefix="tractable-psl-search")
        return self

    def __exit__(self, *exc):
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._task_future is not None:
            self._task_future.release()

    def remaining(self):
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def evaluate(self, candidates, ranks, *, budget=1.0, starts=None, keep_x=False):
        """Score ``candidates`` (each of shape (n_rules,)); ``ranks`` order ties. Returns the list of
        ``(normalized, x)`` of those scored, in order (shorter when the time limit stopped the run)."""
        if self.stopped or not candidates:
            return []
        starts = starts if starts is not None else [None] * len(candidates)
        # The solves' ConvergenceWarnings (truncated Hyperband rounds, unconverged solves: counted and
        # reported once) are silenced here, in the driver's thread, for the whole batch: the threads of
        # this process consult the same filters, and catch_warnings in concurrent threads would race.
        # Dask workers in other processes keep their own filters (a warning shows once per worker).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            results = self._map(candidates, budget, starts, keep_x)
        out = []
        for w, rank, res in zip(candidates, ranks, results):
            if res is None:
                break
            metric, normalized, n_iter, converged, status, seconds, x = res
            self.n_solves += 1
            self.n_iter += n_iter
            self.solve_time += seconds
            if status == TIME_LIMIT_REACHED:
                self.stopped = True
                break
            if not converged and budget >= 1.0:
                self.n_unconverged += 1
            if budget >= 1.0 and (self.best_seen is None or normalized > self.best_seen[0]):
                self.best_seen = (normalized, metric)  # a truncated inference (Hyperband) is not a candidate's score
            shown = {} if self.best_seen is None else {f"best {self.task.metrics.spec.metric}": self.best_seen[1]}
            self.progress.step(**shown)
            self.weights.append(np.asarray(w, float))
            self.metric.append(metric)
            self.normalized.append(normalized)
            self.budgets.append(budget)
            self.ranks.append(rank)
            out.append((normalized, x))
        if len(out) < len(candidates):
            self.stopped = True
        return out

    def _map(self, candidates, budget, starts, keep_x):
        n = len(candidates)
        if self.client is None and self._pool is None:
            out = []
            for w, x0 in zip(candidates, starts):
                left = self.remaining()
                if left is not None and left <= 0:
                    break
                out.append(_score(self.task, w, budget, x0, keep_x, left))
            return out + [None] * (n - len(out))
        if self.client is not None:
            from distributed import as_completed

            futures = [
                self.client.submit(_score, self._task_future, w, budget, x0, keep_x, self.remaining(), pure=False)
                for w, x0 in zip(candidates, starts)
            ]
        else:
            from concurrent.futures import as_completed

            futures = [
                self._pool.submit(lambda w=w, x0=x0: _score(self.task, w, budget, x0, keep_x, self.remaining()))
                for w, x0 in zip(candidates, starts)
            ]
        index = {id(f): i for i, f in enumerate(futures)}
        results = [None] * n
        left = self.remaining()
        try:
            for f in as_completed(futures, timeout=None if left is None else max(left, 0.0) + 1.0):
                results[index[id(f)]] = f.result()
                if self.deadline is not None and time.perf_counter() > self.deadline:
                    break
        except TimeoutError:
            pass
        finally:
            for f in futures:
                if not f.done():
                    f.cancel()
            if self._pool is not None:  # solves already running finish inside the driver's warning scope
                from concurrent.futures import wait

                wait(futures)
            else:
                from distributed import wait

                wait([f for f in futures if not f.cancelled()])
        return results

    def best(self, eligible=None):
        """Index of the best evaluation: highest normalized metric, ties to the lowest rank."""
        idx = [i for i in range(len(self.normalized)) if eligible is None or eligible[i]]
        if not idx:
            return None
        return min(idx, key=lambda i: (-self.normalized[i], self.ranks[i], i))


# ============================================================================================ samplers
def _sample_weights(rng, n_rules, opt, size):
    """PSL's ``WeightSampler``: Dirichlet draws scaled to unit L2 norm, or uniform in [0, 1)."""
    if opt["dirichlet"]:
        s = rng.dirichlet(np.full(n_rules, opt["dirichlet_alpha"]), size=size)
        norm = np.linalg.norm(s, axis=1, keepdims=True)
        return s / np.where(norm > 0, norm, 1.0)
    return rng.random((size, n_rules))


# ============================================================================================ learners
class _SearchLearner:
    family = "search"
    py_only = _SEARCH_PY_ONLY
    options = {**_COMMON_OPTIONS, **_EVALUATOR}
    #: ties among equal scores go to the lowest rank (True: a grid index; False: evaluation order)
    grid_ranked = False

    def __init__(self, run, opt, n_rules, w0, rng):
        self.run, self.opt, self.n_rules, self.w0, self.rng = run, opt, n_rules, w0, rng

    def eligible(self):
        return None

    def planned(self):
        """The number of candidates the search scores without a time limit (None: not known before)."""
        return None


class _GridSearch(_SearchLearner):
    """PSL 2.4's ``GridSearch``: every point of ``weights^n_rules`` in grid order (the last rule's index
    moving fastest), the weights as given (PSL computes a unit-norm copy and does not use it)."""

    psl_class = "org.linqs.psl.application.learning.weight.search.grid.GridSearch"
    options = {**_SearchLearner.options, **_GRID}
    grid_ranked = True
    _CHUNK = 4096

    def grid_size(self):
        return len(self.opt["weights"]) ** self.n_rules

    def planned(self):
        return self.grid_size()

    def point(self, index: tuple):
        return np.asarray(self.opt["weights"], float)[list(index)]

    def evaluate_indexes(self, indexes):
        self.run.evaluate([self.point(i) for i in indexes], [tuple(i) for i in indexes])

    def search(self):
        import itertools

        it = itertools.product(range(len(self.opt["weights"])), repeat=self.n_rules)
        while not self.run.stopped:
            chunk = list(itertools.islice(it, self._CHUNK))
            if not chunk:
                break
            self.evaluate_indexes(chunk)


class _RandomGridSearch(_GridSearch):
    """PSL 2.4's ``RandomGridSearch``: ``min(max_locations, grid size)`` distinct grid points drawn
    uniformly; ties go to the point earlier in grid order (so that with ``max_locations`` at least the
    grid size it answers as ``GridSearch``)."""

    psl_class = "org.linqs.psl.application.learning.weight.search.grid.RandomGridSearch"
    options = {**_GridSearch.options, "max_locations": ("randomgridsearch.maxlocations", 150, _positive(int))}

    def n_locations(self):
        return min(self.grid_size(), self.opt["max_locations"])

    def planned(self):
        return self.n_locations()

    def draw(self, n, seen: set):
        """``n`` grid points not in ``seen``, uniformly (PSL draws until it finds an unseen one)."""
        L, R = len(self.opt["weights"]), self.n_rules
        size = self.grid_size()
        if size <= 1_000_000:
            out = []
            for i in self.rng.permutation(size).tolist():
                t = tuple(int(v) for v in np.unravel_index(i, (L,) * R))
                if t not in seen:
                    out.append(t)
                    if len(out) == n:
                        break
            return out
        out, taken = [], set(seen)
        while len(out) < n:
            t = tuple(int(v) for v in self.rng.integers(L, size=R))
            if t not in taken:
                taken.add(t)
                out.append(t)
        return out

    def search(self):
        self.evaluate_indexes(self.draw(self.n_locations(), set()))


class _GuidedRandomGridSearch(_RandomGridSearch):
    """PSL 2.4's ``GuidedRandomGridSearch``: ``seed_locations`` random grid points, then the grid
    neighbours (one rule's weight one step up or down) of the ``explore_locations`` best of them, up to
    ``min(max_locations, grid size, seed_locations + explore_locations * 2^n_rules)`` points in all."""

    psl_class = "org.linqs.psl.application.learning.weight.search.grid.GuidedRandomGridSearch"
    options = {
        **_RandomGridSearch.options,
        "seed_locations": ("guidedrandomgridsearch.seedlocations", 25, _positive(int)),
        "explore_locations": ("guidedrandomgridsearch.explorelocations", 10, _positive(int)),
    }

    def planned(self):
        o = self.opt
        return min(self.n_locations(), o["seed_locations"] + o["explore_locations"] * 2**self.n_rules)

    def search(self):
        o = self.opt
        total = self.planned()
        seeds = self.draw(min(o["seed_locations"], total), set())
        self.evaluate_indexes(seeds)
        if self.run.stopped or total <= len(seeds):
            return
        ranked = sorted(range(len(seeds)), key=lambda i: (-self.run.normalized[i], seeds[i]))
        L = len(o["weights"])
        seen, explore = set(seeds), []
        for i in ranked[: o["explore_locations"]]:
            base = list(seeds[i])
            for r in range(self.n_rules):
                for step in (1, -1):
                    if 0 <= base[r] + step < L:
                        t = tuple(base[:r] + [base[r] + step] + base[r + 1 :])
                        if t not in seen:
                            seen.add(t)
                            explore.append(t)
        self.evaluate_indexes(explore[: total - len(seeds)])


class _ContinuousRandomGridSearch(_SearchLearner):
    """PSL 2.4's ``ContinuousRandomGridSearch``: ``max_locations`` weight vectors from PSL's
    ``WeightSampler`` (``dirichlet``: Dirichlet(``dirichlet_alpha``) draws scaled to unit L2 norm, else
    uniform in [0, 1))."""

    psl_class = "org.linqs.psl.application.learning.weight.search.grid.ContinuousRandomGridSearch"
    options = {
        **_SearchLearner.options,
        "max_locations": ("continuousrandomgridsearch.maxlocations", 250, _positive(int)),
        **_SAMPLER,
    }

    def planned(self):
        return self.opt["max_locations"]

    def search(self):
        n = self.opt["max_locations"]
        w = _sample_weights(self.rng, self.n_rules, self.opt, n)
        self.run.evaluate(list(w), list(range(n)))


class _Hyperband(_SearchLearner):
    """PSL 2.4's ``Hyperband`` (Li et al. 2018, with PSL's budgets as proportions of one full inference).

    Bracket ``b`` of ``n_brackets`` draws ``max(1, ceil(survival^b / (b + 1) * base_bracket_size))``
    configurations from the ``WeightSampler`` and runs ``b + 1`` rounds; round ``r`` scores every
    remaining configuration with ``survival^(r - b)`` of the ADMM iteration budget (PSL's
    ``admmreasoner.maxiterations``; here ``solve_options["max_iter"]``, default 25,000; at least
    ``0.001`` of it) and keeps the best ``floor(n / survival)``. The last round of every bracket runs at
    the full budget. A survivor's next solve resumes from its previous one.

    The answer is the best configuration among those scored at the full budget (PSL takes the best of
    every evaluation, including truncated inferences whose states are not MAP states). An exact solver
    (``solve_options={"method": "highs"}``) has no iteration budget: every round is then a full
    inference.
    """

    psl_class = "org.linqs.psl.application.learning.weight.search.Hyperband"
    options = {
        **_SearchLearner.options,
        "survival": ("hyperband.survival", 4, _positive(int)),
        "n_brackets": ("hyperband.numbrackets", 4, _positive(int)),
        "base_bracket_size": ("hyperband.basebracketsize", 10, _positive(int)),
        **_SAMPLER,
    }

    def bracket_size(self, bracket: int) -> int:
        """The number of configurations bracket ``bracket`` draws."""
        o = self.opt
        return max(1, math.ceil(o["survival"] ** bracket / (bracket + 1) * o["base_bracket_size"]))

    def planned(self):
        o, s, total = self.opt, self.opt["survival"], 0
        for bracket in range(o["n_brackets"]):
            n = self.bracket_size(bracket)
            for _ in range(bracket + 1):
                total += n
                n //= s
                if not n:
                    break
        return total

    def search(self):
        o, run = self.opt, self.run
        s = o["survival"]
        self.full = []
        rank = 0
        for bracket in range(o["n_brackets"]):
            size = self.bracket_size(bracket)
            configs = list(_sample_weights(self.rng, self.n_rules, o, size))
            ranks = list(range(rank, rank + size))
            rank += size
            starts = [None] * size
            for rnd in range(bracket + 1):
                full = rnd == bracket or s == 1
                budget = 1.0 if full else max(_MIN_BUDGET, min(1.0, float(s) ** (rnd - bracket)))
                scored = run.evaluate(configs, ranks, budget=budget, starts=starts, keep_x=rnd < bracket)
                self.full += [full] * len(scored)
                if run.stopped:
                    return
                keep = sorted(range(len(configs)), key=lambda i: (-scored[i][0], ranks[i]))[: len(configs) // s]
                configs = [configs[i] for i in keep]
                ranks = [ranks[i] for i in keep]
                starts = [scored[i][1] for i in keep]
                if not configs:
                    break

    def eligible(self):
        return self.full


class _GaussianProcessPrior(_SearchLearner):
    """PSL 2.4's ``GaussianProcessPrior``: Bayesian optimization of the metric over a pool of candidates.

    The pool: ``max_configs`` draws of the ``WeightSampler`` (``random_configs_only``, PSL's default),
    else PSL's systematic grid (``floor(max_configs^(1/n_rules))`` steps per weight over [0, 1], from
    1e-8 in the log spaces); with ``use_provided_weight`` the initial weights first. The first candidate
    is the pool's first; then a Gaussian process (scikit-learn's ``GaussianProcessRegressor``, zero prior
    mean, no noise, PSL's kernel fixed: ``kernel_scale * exp(-0.5 * kernel_reldep * ||u - v||)``, a
    Matérn kernel with ``nu = 1/2`` and length scale ``2 / kernel_reldep``) is fitted to the scores so
    far, and the next candidate maximizes PSL's acquisition ``mean / explore + variance`` over the
    remaining pool (the first on ties). Points are compared in ``kernel_space``: ``"SS"`` (PSL's default:
    ``log w_i - log w_0``, the scale-free space of the MAP state), ``"LS"`` (``log w``) or ``"OS"``
    (``w``); weights are clipped at 1e-8 inside the logarithms. The search stops after ``max_iter``
    candidates, when the pool is exhausted, or (``early_stopping``) when every remaining variance is at
    most 0.4.
    """

    psl_class = "org.linqs.psl.application.learning.weight.search.bayesian.GaussianProcessPrior"
    options = {
        **_SearchLearner.options,
        "max_iter": ("gpp.maxiterations", 25, _positive(int)),
        "max_configs": ("gpp.maxconfigs", 1_000_000, _positive(int)),
        "explore": ("gpp.explore", 2.0, _positive()),
        "random_configs_only": ("gpp.randomConfigsOnly", True, _as_bool),
        "early_stopping": ("gpp.earlyStopping", True, _as_bool),
        "use_provided_weight": ("gpp.useProvidedWeight", True, _as_bool),
        "kernel_reldep": ("gppker.reldep", 1.0, _positive()),
        "kernel_scale": ("gppker.scale", 1.0, _positive()),
        "kernel_space": ("gppker.space", "SS", _space),
        **_SAMPLER,
    }

    def grid_steps(self) -> int:
        """Steps per weight of the systematic grid (without ``random_configs_only``)."""
        return max(1, int(math.exp(math.log(self.opt["max_configs"]) / self.n_rules)))

    def planned(self):
        o = self.opt
        size = o["max_configs"] if o["random_configs_only"] else (self.grid_steps() + 1) ** self.n_rules
        return min(o["max_iter"], size + bool(o["use_provided_weight"]))

    def pool(self):
        o, R = self.opt, self.n_rules
        if o["random_configs_only"]:
            pool = _sample_weights(self.rng, R, o, o["max_configs"])
        else:
            lo = 0.0 if o["kernel_space"] == "OS" else _GPP_MIN_WEIGHT
            per = self.grid_steps()
            values = lo + np.arange(per + 1) / per
            grids = np.meshgrid(*([values] * R), indexing="ij")
            pool = np.stack([g.reshape(-1, order="F") for g in grids], axis=1)  # first rule fastest, as PSL
        if o["use_provided_weight"]:
            pool = np.vstack([self.w0[None, :], pool])
        return pool

    def features(self, w):
        space = self.opt["kernel_space"]
        if space == "OS":
            return w
        lw = np.log(np.maximum(w, _GPP_MIN_WEIGHT))
        return lw - lw[:, :1] if space == "SS" else lw

    def search(self):
        try:
            from sklearn.gaussian_process import GaussianProcessRegressor
            from sklearn.gaussian_process.kernels import ConstantKernel, Matern
        except ImportError as err:  # pragma: no cover - scikit-learn is a dependency of tractable
            raise ImportError("GaussianProcessPrior needs scikit-learn: pip install scikit-learn.") from err
        o, run = self.opt, self.run
        pool = self.pool()
        feats = self.features(pool)
        left = np.ones(pool.shape[0], bool)
        kernel = ConstantKernel(o["kernel_scale"], "fixed") * Matern(
            length_scale=2.0 / o["kernel_reldep"], length_scale_bounds="fixed", nu=0.5
        )
        acquisition = np.zeros(pool.shape[0])
        variance = np.full(pool.shape[0], np.inf)
        explored, values = [], []
        for it in range(o["max_iter"]):
            if not left.any():
                break
            if it == 0:
                nxt = 0
            else:
                cand = np.flatnonzero(left)
                nxt = int(cand[np.argmax(acquisition[cand])])
            left[nxt] = False
            scored = run.evaluate([pool[nxt]], [it])
            if not scored:
                break
            explored.append(nxt)
            values.append(scored[0][0])
            gp = GaussianProcessRegressor(kernel, alpha=1e-10, optimizer=None, normalize_y=False)
            gp.fit(feats[explored], np.asarray(values))
            cand = np.flatnonzero(left)
            for c0 in range(0, cand.size, _GPP_CHUNK):
                chunk = cand[c0 : c0 + _GPP_CHUNK]
                mean, std = gp.predict(feats[chunk], return_std=True)
                variance[chunk] = std**2
                acquisition[chunk] = mean / o["explore"] + std**2
            if o["early_stopping"] and cand.size and np.all(variance[cand] <= _GPP_SMALL):
                break


#: PSL search learner class name -> learner
SEARCH_LEARNERS = {
    "GridSearch": _GridSearch,
    "RandomGridSearch": _RandomGridSearch,
    "GuidedRandomGridSearch": _GuidedRandomGridSearch,
    "ContinuousRandomGridSearch": _ContinuousRandomGridSearch,
    "Hyperband": _Hyperband,
    "GaussianProcessPrior": _GaussianProcessPrior,
}


# ============================================================================================ entry
def search_learn(model, name, cls, opt, options, *, prob, ground, rules, weighted, w0, rng, t0, deadline, progress):
    """Run the search learner ``cls`` (called by :func:`tractable.psl.learning.learn`); ``progress``: show a
    bar over the candidates."""
    from ..hlmrf import solve

    n_jobs = _n_jobs(options.get("n_jobs"))
    client = options.get("client")
    if client is not None:
        from ..distributed._workers import check_client

        client = check_client(client)
    choice, eval_vars, truth, used, groups = _evaluation_atoms(model, ground, prob, opt["evaluator"])
    metrics = _Metrics(choice.spec, truth, groups)
    solve_options = dict(prob.solve_options)
    start = None
    if prob.warm_start and solve_options.get("method", "admm") == "admm":
        t_start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = solve(prob.model(w0), **solve_options)
        prob.n_solves += 1
        prob.n_iter += int(res.n_iter)
        prob.solve_time += time.perf_counter() - t_start
        if res.status == "infeasible":
            raise ModelError(f"weight learning: MAP inference is infeasible ({res.message}).")
        start = np.clip(np.asarray(res.x, float), 0.0, 1.0)
    task = _Task(prob, metrics, eval_vars, used, solve_options, start)
    run = _Run(task, n_jobs, client, deadline)
    learner = cls(run, opt, len(weighted), w0, rng)
    run.progress = _Progress(progress, name, learner.planned(), "candidate")
    try:
        with run:
            learner.search()
    finally:
        run.progress.close(complete=not run.stopped)
    status = TIME_LIMIT_REACHED if run.stopped else COMPLETED
    eligible = learner.eligible()
    i = run.best(eligible)
    R = len(weighted)
    if i is None:
        w, objective = w0.copy(), float("nan")
    else:
        w, objective = run.weights[i].copy(), -float(run.normalized[i])
    obs = prob.incompatibility(prob.truth_state(w))
    n = len(run.weights)
    detail = f"{n} candidate(s) scored by {choice}"
    if i is not None:
        detail += f"; best {choice.spec.metric} {run.metric[i]:.6g}"
    message = stop_message(status, name, n, detail)
    n_unconverged = run.n_unconverged + prob.n_unconverged
    if n_unconverged:
        warn_stopped(
            f"{name}: {n_unconverged} MAP inference(s) at full budget stopped before converging (tighten or relax "
            "`solve_options`)."
        )
    result = LearnResult(
        frozen_array(w),
        tuple(rule_text_with_weight(rules[k].text, wk) for k, wk in zip(weighted, w)),
        frozen_array(-np.asarray(run.normalized, float)),
        objective,
        frozen_array(w0),
        frozen_array(np.array(run.weights, float).reshape(n, R)),
        frozen_array(np.zeros((0, R))),
        frozen_array(obs),
        n_labels=int(prob.label_vars.size),
        n_latent=prob.n_unlabeled,
        n_inferences=prob.n_solves + run.n_solves,
        inference_iterations=prob.n_iter + run.n_iter,
        inference_time=prob.solve_time + run.solve_time,
        n_unconverged=n_unconverged,
        options=tuple(sorted({**opt, "evaluator": str(choice), "n_jobs": n_jobs}.items())),
        evaluator=str(choice),
        metric_values=frozen_array(np.asarray(run.metric, float)),
        budgets=frozen_array(np.asarray(run.budgets, float)),
        time=time.perf_counter() - t0,
        method=name,
        converged=status == COMPLETED,
        n_iter=n,
        status=status,
        message=message,
    )
    if not result.converged:
        warn_stopped(message)
    return result
