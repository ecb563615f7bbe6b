"""Loopy belief propagation over a :class:`~tractable.FactorGraph` with high-order factors.

Messages live in log space on the edges of the graph (one row per (factor, variable) pair, see
:mod:`tractable.bp._registry`). Each iteration forms the variable-to-factor messages as the variable's
prior plus all its other incoming messages, then asks every factor type's registered handler for the
factor-to-variable messages: table factors in one compiled pass over the whole group (cavities,
messages, normalization and damping; :meth:`TableMessages.update`), cardinality factors with all ``D``
messages of a factor at once (convolution tree, chain or sorting). Sum-product gives marginal
estimates and the Bethe estimate of ``log Z``; max-product gives max-marginals and a decoding, whose tied
variables are clamped one component at a time and the messages rerun (:mod:`tractable.bp._decode`). On a
tree-structured graph both are exact.

The ``"blocks"`` schedule (:mod:`tractable.bp._blocks`) updates a spanning forest of the pairwise factors
by one exact sweep per iteration instead (:func:`~tractable.bp._kernels.forest_messages`).

The iteration state (:class:`~tractable.bp._wiring.Workspace`) is allocated once per call; the per-call
work around the iterations is vectorized: the graph is compiled a table shape at a time, and the decoded
assignment is scored with one gather per table shape (:func:`_score`).

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
    ERROR,
    MAX_ITER_REACHED,
    TIME_LIMIT_REACHED,
    frozen_array,
    frozen_marginals,
    stop_message,
    warn_stopped,
)
from .._validate import check_bool, check_choice, check_int, check_positive, check_rng
from ..factorgraph import FactorGraph
from . import _blocks, _decode, _messages, _recursive  # noqa: F401  (_messages, _recursive: register the built-in factors)
from ._result import BPResult
from ._wiring import ScorePlan, Wiring, Workspace, compile_graph, score_plan

__all__ = ["KINDS", "SCHEDULES", "TASKS", "loopy"]

#: What ``loopy`` computes, the selector word of :func:`tractable.exact.infer`: marginals by
#: sum-product, or the MAP assignment by max-product.
TASKS = ("marginals", "map")
#: The message semiring of each task (the word the factor message handlers take).
KINDS = ("sum", "max")
_KIND_OF_TASK = dict(zip(TASKS, KINDS))
SCHEDULES = ("parallel", "sequential", "blocks")


def _normalize(x: np.ndarray, kind: str) -> np.ndarray:
    """Rows shifted so that their log-sum-exp (sum) or maximum (max) is 0; all-``-inf`` rows stay."""
    top = logsumexp(x, axis=1, keepdims=True) if kind == "sum" else np.max(x, axis=1, keepdims=True)
    return x - np.where(np.isfinite(top), top, 0.0)


class _Beliefs:
    """Per-variable sums of incoming messages, kept as (finite part, number of ``-inf`` terms)."""

    def __init__(self, w: Wiring, fin: np.ndarray, ninf: np.ndarray):
        self.w = w
        self.fin = fin
        self.ninf = ninf

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
            raise _forbid_all_states()
        return mu

    def update(self, eids: np.ndarray, old: np.ndarray, new: np.ndarray) -> None:
        v = self.w.edge_var[eids]
        np.add.at(self.fin, v, np.where(np.isneginf(new), 0.0, new) - np.where(np.isneginf(old), 0.0, old))
        np.add.at(self.ninf, v, np.isneginf(new).astype(np.float64) - np.isneginf(old))


def _forbid_all_states() -> ZeroPartitionError:
    return ZeroPartitionError(
        "no configuration has non-zero probability: the messages into a variable forbid every state."
    )


def _forbid_by_factor() -> ZeroPartitionError:
    return ZeroPartitionError(
        "no configuration has non-zero probability: a factor's messages forbid every state of a variable."
    )


def _fused_update(handler):
    """The handler's compiled whole-group update, or None.

    An optional capability of a :class:`~tractable.bp.FactorMessages` handler, used on the parallel schedule
    instead of ``messages`` plus the engine's NumPy normalization and damping: ``handler.update(compiled, ws)
    -> (residual, flags)`` reads the variables' beliefs ``ws.fin``, ``ws.ninf`` and the current messages
    ``ws.nu`` (``ws.nu_p`` as normalized probabilities) of a :class:`~tractable.bp._wiring.Workspace` and writes
    the group's new, damped messages into ``ws.new`` (each row up to a constant) and, for sum-product, their
    normalized probabilities into ``ws.new_p``, returning the largest change ``|new_p - nu_p|`` of its rows
    (for max-product, rows normalized to maximum 0, the engine computes ``new_p`` and the residual of all
    rows at once). Flag 1: a cavity forbids every state of a variable, 2: a message does.
    :meth:`TableMessages.update` is the one built in. Used only when the class that defines the handler's
    ``messages`` defines ``update`` too, so that a subclass overriding ``messages`` alone keeps its messages.
    """
    cls = type(handler)
    owner = {name: next((c for c in cls.__mro__ if name in c.__dict__), None) for name in ("messages", "update")}
    if owner["update"] is None or owner["update"] is not owner["messages"]:
        return None
    return handler.update


def _factor_messages(group, mu: np.ndarray, kind: str, pad: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The group's new messages (normalized); ``out`` is all ``-inf`` scratch of ``mu``'s shape (left so)."""
    handler, compiled, eids, _ = group
    if out is None:
        out = np.full_like(mu, -np.inf)
    handler.messages(compiled, mu, out, kind)
    new = out[eids]
    out[eids] = -np.inf
    new[pad[eids]] = -np.inf
    new = _normalize(new, kind)
    if np.any(np.all(np.isneginf(new), axis=1)):
        raise _forbid_by_factor()
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
        New message = ``(1 - damping) * computed + damping * previous``, in probability space, for every
        factor-to-variable message. With ``schedule="blocks"`` the computed message of a block factor is
        the one its tree's sweep sends (undamped inside the sweep, which is exact given its evidence), and
        that is what is mixed with the factor's previous message.
    schedule : {"parallel", "sequential", "blocks"}
        ``"parallel"``: all factors update from the same messages (flooding, vectorized);
        ``"sequential"``: factors update one at a time in a random order per iteration, each seeing
        the messages of the factors before it (fewer iterations, more Python work per iteration);
        ``"blocks"``: the pairwise table factors are split once into a spanning forest (greedy in the
        order of ``fg.factors``: a factor joins the forest when it joins two of its trees; those that close
        a cycle stay ordinary factors). Each iteration, the factors outside the forest update as on the
        parallel schedule, then every tree of the forest runs one exact two-pass sweep (sum-product, or
        max-product for ``task="map"``), all trees in one compiled pass, with the variables' priors and the
        messages just computed by the other factors as evidence: its factors' messages are then the
        tree's converged messages given the rest, so evidence crosses a chain or tree in one iteration
        instead of one edge per iteration. Exact after one iteration on a pairwise forest; on a loopy
        graph its fixed points are those of the other schedules.
    rng : None, int or numpy.random.Generator
        Order of the sequential schedule (the parallel and blocks schedules have no randomness: giving
        ``rng`` with them is an error).
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
        ``converged=False`` comes with a :class:`~tractable.ConvergenceWarning`. For ``task="map"`` a
        decoded labelling that a factor forbids (``score == -inf``) is never a success: a run whose
        messages converged then reports ``status="error"`` and ``converged=False`` (with the warning; the
        message says that the messages converged and the labelling violates a hard constraint); a run that
        stopped short keeps its status and says so in its message too. ``n_iter`` counts the iterations
        before decoding; the message counts the decoder's.

    Raises
    ------
    ZeroPartitionError
        The messages show that no configuration has non-zero probability (sum-product zeros are
        sound: a state they forbid is forbidden in the model; so are max-product's, and for ``task="map"``
        this includes a tied variable each of whose states, clamped alone, leads the messages to forbid
        every state of a variable).
    ValueError, TypeError
        Bad arguments; a factor type with no registered messages; a factor with no messages for the
        task (a ``CliqueFactor`` too large for exact sum-product), before the first iteration.

    Notes
    -----
    The Bethe estimate at a fixed point is ``sum_f log Z_f + sum_v log Z_v - sum_(f,v) log Z_fv``
    (Yedidia, Freeman and Weiss 2005), with ``Z_f`` each factor's local partition function given its
    incoming messages (a cardinality factor's comes from the same chain or convolution tree as its
    messages). On a tree, one sweep of messages is exact and so is this estimate.

    Max-product decoding (``task="map"``, every schedule alike, :mod:`tractable.bp._decode`): after the messages
    converged, a variable whose best max-marginal states tie (within ``1e-6 + 10 * tol`` in log space) is not
    decoded on its own, since independent argmaxes of tied variables can mix two optimal labellings into one a
    factor forbids. One tied variable per connected component is clamped (as evidence) at its best state, the
    messages rerun from where they are until they converge again, and so on until no free variable is tied;
    ``marginals`` and ``factor_marginals`` stay the unclamped max-marginals. On a tree this is exact (a MAP
    labelling). All reruns together take at most ``max_iter`` more iterations and stop at ``time_limit``; a rerun
    that does not converge is undone and decoding stops there, reading the last converged beliefs; a clamp whose
    messages forbid every state of some variable is undone and the variable's next state tried (when all fail
    and nothing else was clamped, the model is infeasible: ``ZeroPartitionError``). Without ties nothing more
    runs (one comparison per variable). A run that stopped short is decoded by the independent argmaxes.

    The blocks schedule fixes the same messages as the others: at convergence each block factor's message
    is its tree's sweep message given the current messages of every other factor, which is the BP update
    of that factor; the same ``tol`` test, residual and result apply. One of its iterations costs about
    one parallel iteration plus a sweep of the forest (O(N K^2) for N variables in the forest); it needs
    far fewer iterations where chains or trees are long (sentences joined by clique factors) and about
    half as many on grids.

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
    progress = check_bool(progress, "progress")
    task = _task(task, kind)
    kind = _KIND_OF_TASK[task]
    max_iter, tol, damping, time_limit = _validate(fg, max_iter, tol, damping, schedule, rng, time_limit)
    gen = check_rng(rng)
    full, (fg, ev) = fg, condition(fg, evidence)
    wiring = compile_graph(fg, per_factor=schedule == "sequential", blocks=schedule == "blocks")
    if wiring.constant == -np.inf:
        raise ZeroPartitionError("no configuration has non-zero probability: the graph's constant is -inf.")
    for handler, compiled, _, _ in wiring.groups:  # a factor without messages of this kind fails before iterating
        handler.check(compiled, kind)
    n_edges = wiring.edge_var.shape[0]
    nu = np.where(wiring.pad, -np.inf, 0.0) if n_edges else np.zeros((0, wiring.width))
    ws = Workspace(wiring, _normalize(nu, kind), kind, damping)
    if schedule == "blocks" and wiring.blocks is not None:
        step = _BlockStep(wiring, ws)
    elif schedule != "sequential":  # parallel, or blocks without a pairwise factor
        step = _ParallelStep(wiring, ws)
    else:
        step = _SequentialStep(wiring, ws, gen)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=max_iter, desc=f"loopy BP ({task})", unit="it")
    status, residual, n_iter = MAX_ITER_REACHED, float("inf"), 0
    try:
        for n_iter in range(1, max_iter + 1):  # noqa: B007 - n_iter is reported after the loop
            residual = step()
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
    rerun = _Rerun(step, max_iter, tol, None if time_limit is None else t0 + time_limit)
    res = _finish(fg, wiring, ws, kind, status, n_iter, residual, t0, rerun)
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
        score=_score(score_plan(full), assignment),
        time=time.perf_counter() - t0,
    )


class _SequentialStep:
    """One iteration of the sequential schedule: the groups (one factor each) in a random order, each updated from
    the messages of those before it (``ws.nu`` is updated in place)."""

    def __init__(self, wiring: Wiring, ws: Workspace, gen: np.random.Generator):
        self.wiring = wiring
        self.ws = ws
        self.gen = gen

    def __call__(self) -> float:
        wiring, ws, kind = self.wiring, self.ws, self.ws.kind
        nu = ws.nu  # updated in place, factor by factor
        ws.beliefs()
        beliefs = _Beliefs(wiring, ws.fin, ws.ninf)
        residual = 0.0
        for gi in self.gen.permutation(len(wiring.groups)):
            group = wiring.groups[gi]
            eids = group[2]
            mu = np.full_like(nu, -np.inf)
            mu[eids] = beliefs.cavity(eids, nu[eids], kind)
            new = _damp(_factor_messages(group, mu, kind, wiring.pad), nu[eids], ws.damping, kind)
            residual = max(residual, _residual(new, nu[eids]))
            beliefs.update(eids, nu[eids], new)
            nu[eids] = new
        return residual


class _Rerun:
    """More iterations of a run's schedule from its current messages, for the decoder
    (:func:`~tractable.bp._decode.break_ties`): each call iterates until no message changes by more than ``tol``,
    all calls together at most ``max_iter`` iterations (the run's own budget once more), none past the run's
    deadline."""

    def __init__(self, step, max_iter: int, tol: float, deadline: float | None):
        self.step = step
        self.left = max_iter
        self.tol = tol
        self.deadline = deadline

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.perf_counter() > self.deadline

    def __call__(self) -> tuple[int, str]:
        """``(iterations, outcome)``: ``"converged"``, ``"stopped"`` (budget or time) or ``"refuted"`` (the messages
        forbid every state of a variable: a :class:`~tractable.ZeroPartitionError` of an iteration)."""
        n_iter = 0
        while self.left > 0 and not self.out_of_time():
            self.left -= 1
            n_iter += 1
            try:
                if self.step() <= self.tol:
                    return n_iter, "converged"
            except ZeroPartitionError:
                return n_iter, "refuted"
        return n_iter, "stopped"


class _ParallelStep:
    """One iteration of the parallel schedule: every group's messages from the same current ones.

    Groups whose handler has a compiled whole-group update (:func:`_fused_update`; table factors) run it on
    the workspace: cavities, messages, normalization and damping in one pass, nothing allocated. The others
    get the cavities of their edges and run ``messages``, then the NumPy normalization and damping, as
    before. Max-product probabilities and residual come from one vectorized ``exp`` over all messages.
    Errors come in the order of earlier versions: a cavity that forbids every state first, then the groups'
    own, in group order.
    """

    def __init__(self, wiring: Wiring, ws: Workspace, skip: int | None = None):
        self.wiring = wiring
        self.ws = ws
        self.groups = [(group, _fused_update(group[0])) for gi, group in enumerate(wiring.groups) if gi != skip]
        self.diff = np.empty_like(ws.nu)
        fused = [group[2] for group, update in self.groups if update is not None]
        ws.shifted = np.concatenate(fused) if fused and ws.kind == "sum" else None  # rows stored up to a constant
        generic = [group[2] for group, update in self.groups if update is None]
        self.generic = np.concatenate(generic) if generic else None
        if self.generic is not None:
            self.mu = np.full_like(ws.nu, -np.inf)
            self.out = np.full_like(ws.nu, -np.inf)

    def __call__(self) -> float:
        residual = max(self.messages(), self.max_residual())
        self.ws.swap()
        return residual

    def messages(self) -> float:
        """The groups' new messages into ``ws.new`` (and ``ws.new_p`` for sum-product); the largest change of
        a sum-product message (max-product: 0, see :meth:`max_residual`)."""
        ws, kind = self.ws, self.ws.kind
        ws.beliefs()
        residual = 0.0
        flags = []
        for group, update in self.groups:
            if update is None:
                flags.append(0)
                continue
            r, f = update(group[1], ws)
            residual = max(residual, r)
            flags.append(f)
        if self.generic is not None:
            beliefs = _Beliefs(self.wiring, ws.fin, ws.ninf)
            self.mu[self.generic] = beliefs.cavity(self.generic, ws.nu[self.generic], kind)
        if any(f & 1 for f in flags):
            raise _forbid_all_states()
        for (group, update), f in zip(self.groups, flags):
            if update is not None:
                if f & 2:
                    raise _forbid_by_factor()
                continue
            eids = group[2]
            new = _damp(
                _factor_messages(group, self.mu, kind, self.wiring.pad, self.out), ws.nu[eids], ws.damping, kind
            )
            ws.new[eids] = new
            if kind == "sum":
                ws.new_p[eids] = new_p = np.exp(new)
                residual = max(residual, float(np.max(np.abs(new_p - ws.nu_p[eids]), initial=0.0)))
        return residual

    def max_residual(self) -> float:
        """Max-product: ``ws.new_p`` from every row of ``ws.new`` (all normalized in log space) by one vectorized
        ``exp``, and the largest change of every message; sum-product: 0 (the updates computed theirs)."""
        ws = self.ws
        if ws.kind != "max":
            return 0.0
        np.exp(ws.new, out=ws.new_p)
        np.subtract(ws.new_p, ws.nu_p, out=self.diff)
        return float(np.max(np.abs(self.diff, out=self.diff), initial=0.0))


class _BlockStep:
    """One iteration of the blocks schedule: the factors outside the spanning forest as on the parallel schedule,
    then the forest's factors by one exact sweep over its trees given the messages just computed
    (:class:`~tractable.bp._blocks.Forest`); the changes of both sets of messages make the residual."""

    def __init__(self, wiring: Wiring, ws: Workspace):
        self.ws = ws
        self.rest = _ParallelStep(wiring, ws, skip=wiring.blocks[0])
        self.forest = _blocks.compile_forest(wiring)
        if ws.kind == "sum":  # the sweep stores its messages up to a constant too
            edges = wiring.groups[wiring.blocks[0]][2]
            ws.shifted = edges if ws.shifted is None else np.concatenate([ws.shifted, edges])

    def __call__(self) -> float:
        residual = self.rest.messages()
        residual = max(residual, self.forest.update(self.ws), self.rest.max_residual())
        self.ws.swap()
        return residual


def _score(plan: ScorePlan, assignment: np.ndarray) -> float:
    """``fg.score(assignment)`` with one gather per table shape: the factors' values summed in factor order
    from the constant (a cumulative sum, as ``fg.score`` adds them), so the result is the same float."""
    return plan.score(assignment)


def _finish(fg, wiring, ws, kind, status, n_iter, residual, t0, rerun: _Rerun) -> BPResult:
    if ws.shifted is not None:  # compiled sum-product updates may leave their rows unnormalized
        ws.nu[ws.shifted] = _normalize(ws.nu[ws.shifted], kind)
    nu = ws.nu
    ws.beliefs()
    beliefs = _Beliefs(wiring, ws.fin, ws.ninf)
    total = beliefs.total()
    if np.any(np.all(np.isneginf(total), axis=1)):
        raise ZeroPartitionError("no configuration has non-zero probability: a variable has no allowed state left.")
    mu = beliefs.cavity(np.arange(nu.shape[0]), nu, kind) if nu.shape[0] else nu
    if kind == "sum":
        log_b = total - logsumexp(total, axis=1, keepdims=True)
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
    card = wiring.cardinalities
    if not card.size:
        marg = frozen_marginals([])
    elif np.all(card == wiring.width):
        marg = frozen_marginals(b)
    else:
        marg = frozen_marginals([b[i, : card[i]] for i in range(card.shape[0])])
    factor_m: list = [None] * len(fg.factors)
    for handler, compiled, _, fis in wiring.groups:
        tables = handler.factor_beliefs(compiled, mu, kind)
        for fi, table in zip(fis, tables or ()):  # read-only tables are the handler's private views, kept
            factor_m[fi] = table if table is None or not table.flags.writeable else frozen_array(table)
    for fi, v in zip(*(u.tolist() for u in wiring.unary)):  # single-variable tables were folded into the prior
        factor_m[fi] = marg[v]  # a read-only row of the marginals
    log_b = np.where(np.isneginf(total), -np.inf, log_b)
    decoding = None
    if kind == "max" and card.size and status == CONVERGED:  # the beliefs above are the result's; ties are clamped
        decoding = _decode.break_ties(
            log_b, ws, rerun, lambda: _decode.components(fg), _decode.tie_tolerance(rerun.tol), rerun.out_of_time
        )
        assignment = decoding.assignment
    else:
        assignment = np.argmax(log_b, axis=1).astype(np.int64)
    score = _score(wiring.score, assignment) if card.size else float(fg.constant)
    if log_z == np.inf or score == np.inf:  # finite scores whose sums overflow float64 (near 1e308 each)
        raise ValueError(
            "`fg` must keep the log partition function and the scores of its labellings within float64's range "
            f"(about 1.8e308); got {'a log partition' if log_z == np.inf else 'a score'} that overflows: rescale "
            "the factors' log-potentials."
        )
    detail = f"largest message change {residual:.3g}"
    if decoding is not None and decoding.rounds:
        detail += f"; {decoding.detail()}"
    if kind == "max" and score == -np.inf:  # no success with a labelling the model forbids
        if status == CONVERGED:
            status = ERROR
            detail = f"messages converged after {n_iter} iterations ({detail}), but"
        else:
            detail += "; and"
        detail += " the decoded labelling violates a hard constraint (score -inf)"
    converged = status == CONVERGED
    msg = stop_message(status, "loopy", n_iter, detail)
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
