"""Loopy belief propagation over a :class:`~tractable.FactorGraph` with high-order factors.

Messages live in log space on the edges of the graph (one row per (factor, variable) pair, see
:mod:`tractable.bp._registry`). Each iteration forms the variable-to-factor messages as the variable's
prior plus all its other incoming messages, then asks every factor type's registered handler for the
factor-to-variable messages: table factors batched by shape, cardinality factors with all ``D``
messages of a factor at once (convolution tree, chain or sorting). Sum-product gives marginal
estimates and the Bethe estimate of ``log Z``; max-product gives max-marginals and a decoding. On a
tree-structured graph both are exact.

``-inf`` (a forbidden state) is carried exactly: a variable's belief is summed as a finite part plus
a count of ``-inf`` terms, so removing one incoming message never computes ``-inf - (-inf)``.
"""

from __future__ import annotations

import dataclasses
import time
import warnings

import numpy as np

from .._errors import ZeroPartitionError
from .._evidence import condition, full_assignment, full_factor_beliefs, full_marginals
from .._logspace import logsumexp
from .._results import (
    CONVERGED,
    MAX_ITER_REACHED,
    TIME_LIMIT_REACHED,
    frozen_array,
    frozen_marginals,
    stop_message,
    warn_stopped,
)
from .._validate import check_choice, check_int, check_positive, check_rng
from ..factorgraph import FactorGraph, TableFactor
from . import _messages, _recursive  # noqa: F401  (register the built-in factor types)
from ._result import BPResult
from ._wiring import Wiring, compile_graph

__all__ = ["KINDS", "SCHEDULES", "TASKS", "loopy"]

#: What ``loopy`` computes, the selector word of :func:`tractable.exact.infer`: marginals by
#: sum-product, or the MAP assignment by max-product.
TASKS = ("marginals", "map")
#: The message semiring of each task (the word the factor message handlers take).
KINDS = ("sum", "max")
_KIND_OF_TASK = dict(zip(TASKS, KINDS))
SCHEDULES = ("parallel", "sequential")


def _normalize(x: np.ndarray, kind: str) -> np.ndarray:
    """Rows shifted so that their log-sum-exp (sum) or maximum (max) is 0; all-``-inf`` rows stay."""
    top = logsumexp(x, axis=1, keepdims=True) if kind == "sum" else np.max(x, axis=1, keepdims=True)
    return x - np.where(np.isfinite(top), top, 0.0)


class _Beliefs:
    """Per-variable sums of incoming messages, kept as (finite part, number of ``-inf`` terms)."""

    def __init__(self, w: Wiring, nu: np.ndarray):
        self.w = w
        fin_prior = np.where(np.isneginf(w.prior), 0.0, w.prior)
        self.fin = fin_prior + w.incidence @ np.where(np.isneginf(nu), 0.0, nu)
        self.ninf = np.isneginf(w.prior).astype(np.float64) + w.incidence @ np.isneginf(nu).astype(np.float64)

    def total(self) -> np.ndarray:
        return np.where(self.ninf > 0, -np.inf, self.fin)

    def cavity(self, eids: np.ndarray, nu_e: np.ndarray, kind: str) -> np.ndarray:
        """Variable-to-factor messages of edges ``eids`` (normalized), given their current ``nu_e``."""
        v = self.w.edge_var[eids]
        inf_e = np.isneginf(nu_e)
        mu = np.where(self.ninf[v] - inf_e > 0, -np.inf, self.fin[v] - np.where(inf_e, 0.0, nu_e))
        mu[self.w.pad[eids]] = -np.inf
        mu = _normalize(mu, kind)
        if np.any(np.all(np.isneginf(mu), axis=1)):
            raise ZeroPartitionError(
                "no configuration has non-zero probability: the messages into a variable forbid every state."
            )
        return mu

    def update(self, eids: np.ndarray, old: np.ndarray, new: np.ndarray) -> None:
        v = self.w.edge_var[eids]
        np.add.at(self.fin, v, np.where(np.isneginf(new), 0.0, new) - np.where(np.isneginf(old), 0.0, old))
        np.add.at(self.ninf, v, np.isneginf(new).astype(np.float64) - np.isneginf(old))


def _factor_messages(group, mu: np.ndarray, kind: str, pad: np.ndarray) -> np.ndarray:
    handler, compiled, eids, _ = group
    out = np.full_like(mu, -np.inf)
    handler.messages(compiled, mu, out, kind)
    new = out[eids]
    new[pad[eids]] = -np.inf
    new = _normalize(new, kind)
    if np.any(np.all(np.isneginf(new), axis=1)):
        raise ZeroPartitionError(
            "no configuration has non-zero probability: a factor's messages forbid every state of a variable."
        )
    return new


def _damp(new: np.ndarray, old: np.ndarray, damping: float, kind: str) -> np.ndarray:
    if damping == 0.0:
        return new
    with np.errstate(divide="ignore"):
        mixed = np.logaddexp(np.log1p(-damping) + new, np.log(damping) + old)
    return _normalize(mixed, kind)


def _residual(new: np.ndarray, old: np.ndarray) -> float:
    return float(np.max(np.abs(np.exp(new) - np.exp(old)), initial=0.0))


def _task(task, kind) -> str:
    """The task, from ``task`` or the deprecated ``kind`` ("sum" / "max")."""
    if kind is not None:
        warnings.warn(
            '`kind=` of bp.loopy is deprecated; use task="marginals" (for "sum") or task="map" (for "max").',
            DeprecationWarning,
            stacklevel=3,
        )
        if task is not None:
            raise ValueError(f"give `task` or the deprecated `kind`, not both; got task={task!r}, kind={kind!r}.")
        check_choice(kind, "kind", KINDS)
        return TASKS[KINDS.index(kind)]
    task = "marginals" if task is None else task
    check_choice(task, "task", TASKS)
    return task


def _validate(fg, max_iter, tol, damping, schedule, rng, time_limit):
    if not isinstance(fg, FactorGraph):
        raise TypeError(f"`fg` must be a FactorGraph; got {type(fg).__name__}.")
    check_choice(schedule, "schedule", SCHEDULES)
    if rng is not None and schedule != "sequential":
        raise ValueError(
            f"`rng` orders the updates of schedule='sequential' only; got rng={rng!r} with schedule={schedule!r}."
        )
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_positive(tol, "tol", strict=False)
    damping = float(check_positive(damping, "damping", strict=False))
    if not damping < 1.0:
        raise ValueError(f"`damping` must be in [0, 1); got {damping}.")
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    return max_iter, tol, damping, time_limit


def loopy(
    fg: FactorGraph,
    *,
    task: str | None = None,
    evidence: dict | None = None,
    max_iter: int = 500,
    tol: float = 1e-8,
    damping: float = 0.0,
    schedule: str = "parallel",
    rng=None,
    time_limit: float | None = None,
    progress: bool = False,
    kind: str | None = None,
) -> BPResult:
    """Loopy belief propagation (sum-product or max-product) on a factor graph with high-order factors.

    Parameters
    ----------
    fg : FactorGraph
        Any mix of :class:`~tractable.TableFactor`, :class:`~tractable.CardinalityFactor` and other
        factor types with registered messages (:func:`tractable.bp.register`).
    task : {"marginals", "map"}, default "marginals"
        Sum-product (marginals, Bethe ``log Z``) or max-product (max-marginals, MAP decoding); the
        same selector as :func:`tractable.exact.infer`.
    evidence : dict, optional
        ``{variable (index or name): state}``: BP runs on the graph conditioned on it, and the result
        is over all variables (an observed variable's belief is one-hot at its state; ``log_partition``
        is then the estimate of ``log Z`` restricted to the evidence, as in :func:`tractable.exact.infer`).
    max_iter : int, default 500
        Iteration budget (one iteration updates every message once).
    tol : float, default 1e-8
        Stop when no factor-to-variable message changes by more than ``tol`` (as a probability
        vector, normalized to sum 1 for sum-product and to maximum 1 for max-product).
    damping : float in [0, 1), default 0
        New message = ``(1 - damping) * computed + damping * previous``, in probability space.
    schedule : {"parallel", "sequential"}
        ``"parallel"``: all factors update from the same messages (flooding, vectorized);
        ``"sequential"``: factors update one at a time in a random order per iteration, each seeing
        the messages of the factors before it (fewer iterations, more Python work per iteration).
    rng : None, int or numpy.random.Generator
        Order of the sequential schedule (the parallel schedule has no randomness: giving ``rng``
        with it is an error).
    time_limit : float, optional
        Seconds after which to stop (``status="time_limit_reached"``).
    progress : bool, default False
        Show a tqdm progress bar of the iterations.
    kind : {"sum", "max"}, optional
        Deprecated spelling of ``task`` (``"sum"`` is ``"marginals"``, ``"max"`` is ``"map"``).

    Returns
    -------
    BPResult
        ``marginals`` ((n, k) array when all cardinalities equal: ``(n, 2)`` for binary models),
        ``log_partition`` (Bethe estimate; NaN for max-product), ``assignment`` and its ``score``,
        ``converged``, ``n_iter``, ``max_residual``, ``time``, ``status``, ``message``.
        ``converged=False`` comes with a :class:`~tractable.ConvergenceWarning`.

    Raises
    ------
    ZeroPartitionError
        The messages show that no configuration has non-zero probability (sum-product zeros are
        sound: a state they forbid is forbidden in the model).
    ValueError, TypeError
        Bad arguments; a factor type with no registered messages; a factor with no messages for the
        task (a ``CliqueFactor`` too large for exact sum-product), before the first iteration.

    Notes
    -----
    The Bethe estimate at a fixed point is ``sum_f log Z_f + sum_v log Z_v - sum_(f,v) log Z_fv``
    (Yedidia, Freeman and Weiss 2005), with ``Z_f`` each factor's local partition function given its
    incoming messages (a cardinality factor's comes from the same chain or convolution tree as its
    messages). On a tree, one sweep of messages is exact and so is this estimate.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable import CardinalityFactor, FactorGraph, TableFactor
    >>> from tractable.bp import loopy
    >>> fg = FactorGraph([2, 2, 2])
    >>> for i, t in enumerate([0.5, -0.2, 1.0]):
    ...     _ = fg.add_factor(TableFactor([i], [0.0, t]))
    >>> _ = fg.add_factor(CardinalityFactor([0, 1, 2], [-np.inf, 0.0, 0.0, -np.inf]))  # one or two on
    >>> res = loopy(fg)
    >>> res.marginals.shape, res.converged
    ((3, 2), True)
    >>> res.marginals[:, 1].round(4)  # exact here: the graph is a tree
    array([0.5649, 0.3318, 0.7117])
    """
    t0 = time.perf_counter()
    task = _task(task, kind)
    kind = _KIND_OF_TASK[task]
    max_iter, tol, damping, time_limit = _validate(fg, max_iter, tol, damping, schedule, rng, time_limit)
    gen = check_rng(rng)
    full, (fg, ev) = fg, condition(fg, evidence)
    wiring = compile_graph(fg, per_factor=schedule == "sequential")
    if wiring.constant == -np.inf:
        raise ZeroPartitionError("no configuration has non-zero probability: the graph's constant is -inf.")
    for handler, compiled, _, _ in wiring.groups:  # a factor without messages of this kind fails before iterating
        handler.check(compiled, kind)
    n_edges = wiring.edge_var.shape[0]
    nu = np.where(wiring.pad, -np.inf, 0.0) if n_edges else np.zeros((0, wiring.width))
    nu = _normalize(nu, kind)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=max_iter, desc=f"loopy BP ({task})", unit="it")
    status, residual, n_iter = MAX_ITER_REACHED, float("inf"), 0
    try:
        for n_iter in range(1, max_iter + 1):  # noqa: B007 - n_iter is reported after the loop
            if schedule == "parallel":
                beliefs = _Beliefs(wiring, nu)
                mu = beliefs.cavity(np.arange(n_edges), nu, kind)
                new = np.full_like(nu, -np.inf)
                for group in wiring.groups:
                    new[group[2]] = _factor_messages(group, mu, kind, wiring.pad)
                new = _damp(new, nu, damping, kind)
                residual = _residual(new, nu)
                nu = new
            else:
                beliefs = _Beliefs(wiring, nu)
                residual = 0.0
                for gi in gen.permutation(len(wiring.groups)):
                    group = wiring.groups[gi]
                    eids = group[2]
                    mu = np.full_like(nu, -np.inf)
                    mu[eids] = beliefs.cavity(eids, nu[eids], kind)
                    new = _damp(_factor_messages(group, mu, kind, wiring.pad), nu[eids], damping, kind)
                    residual = max(residual, _residual(new, nu[eids]))
                    beliefs.update(eids, nu[eids], new)
                    nu[eids] = new
            if bar is not None:
                bar.update(1)
                bar.set_postfix(residual=f"{residual:.2e}")
            if residual <= tol:
                status = CONVERGED
                break
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                status = TIME_LIMIT_REACHED
                break
    finally:
        if bar is not None:
            bar.close()
    res = _finish(fg, wiring, nu, kind, status, n_iter, residual, t0)
    if not ev:
        return res
    assignment = full_assignment(full, fg, ev, res.assignment)
    return dataclasses.replace(
        res,
        marginals=frozen_marginals(full_marginals(full, fg, ev, res.marginals)),
        factor_marginals=tuple(
            None if t is None else frozen_array(t) for t in full_factor_beliefs(full, ev, res.factor_marginals)
        ),
        assignment=frozen_array(assignment),
        score=float(full.score(assignment)),
        time=time.perf_counter() - t0,
    )


def card_of(wiring: Wiring, fac) -> int:
    return int(wiring.cardinalities[int(fac.variables[0])])


def _finish(fg, wiring, nu, kind, status, n_iter, residual, t0) -> BPResult:
    beliefs = _Beliefs(wiring, nu)
    total = beliefs.total()
    if np.any(np.all(np.isneginf(total), axis=1)):
        raise ZeroPartitionError("no configuration has non-zero probability: a variable has no allowed state left.")
    if kind == "sum":
        log_b = total - logsumexp(total, axis=1, keepdims=True)
        mu = beliefs.cavity(np.arange(nu.shape[0]), nu, kind)
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused below
            log_z = wiring.constant + float(logsumexp(total, axis=1).sum())
            for handler, compiled, _, _ in wiring.groups:
                log_z += handler.log_partition(compiled, mu)
            if nu.shape[0]:
                log_z -= float(logsumexp(mu + nu, axis=1).sum())
    else:
        log_b = total - np.max(total, axis=1, keepdims=True)
        log_z = float("nan")
    b = np.exp(log_b)
    b /= b.sum(axis=1, keepdims=True)
    factor_m: list = [None] * len(fg.factors)
    mu_all = beliefs.cavity(np.arange(nu.shape[0]), nu, kind) if nu.shape[0] else nu
    for handler, compiled, _, fis in wiring.groups:
        tables = handler.factor_beliefs(compiled, mu_all, kind)
        for fi, table in zip(fis, tables or ()):
            factor_m[fi] = None if table is None else frozen_array(table)
    for fi, fac in enumerate(fg.factors):  # single-variable tables were folded into the prior
        if factor_m[fi] is None and isinstance(fac, TableFactor) and len(fac.variables) == 1:
            factor_m[fi] = frozen_array(b[int(fac.variables[0]), : card_of(wiring, fac)])
    card = wiring.cardinalities
    marg = frozen_marginals([b[i, : card[i]] for i in range(card.shape[0])]) if card.size else frozen_marginals([])
    assignment = np.argmax(np.where(np.isneginf(total), -np.inf, log_b), axis=1).astype(np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        score = float(fg.score(assignment)) if card.size else float(fg.constant)
    if log_z == np.inf or score == np.inf:  # finite scores whose sums overflow float64 (near 1e308 each)
        raise ValueError(
            "`fg` must keep the log partition function and the scores of its labellings within float64's range "
            f"(about 1.8e308); got {'a log partition' if log_z == np.inf else 'a score'} that overflows: rescale "
            "the factors' log-potentials."
        )
    converged = status == CONVERGED
    msg = stop_message(status, "loopy", n_iter, f"largest message change {residual:.3g}")
    if not converged:
        warn_stopped(msg, stacklevel=4)
    return BPResult(
        marginals=marg,
        log_partition=log_z,
        factor_marginals=tuple(factor_m),
        assignment=frozen_array(assignment),
        score=score,
        task=TASKS[KINDS.index(kind)],
        max_residual=float(residual),
        time=time.perf_counter() - t0,
        method="loopy",
        converged=converged,
        n_iter=int(n_iter),
        status=status,
        message=msg,
    )
