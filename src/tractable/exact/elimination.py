"""Variable elimination in a greedy elimination order (min-fill family).

For marginals the eliminated clusters are kept as a clique tree, calibrated with a second, downward
pass, so that *all* marginals cost about twice one elimination. A cluster is multiplied in linear
space when its factors' ranges cannot underflow (else in log space, shifted per slice), and its
exponentiated table is kept for the downward pass, which then only multiplies it by an array of
the separator's size: each cluster table is exponentiated at most once. For MAP, max-product elimination
then backward decoding. The cost is exponential only in the induced width of the order, and the
largest intermediate table is checked against ``max_table_size`` before anything is allocated.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._results import MAPResult, MarginalsResult
from .._validate import as_index_array, check_choice, check_int
from ..factorgraph import FactorGraph
from ._common import (
    DEFAULT_MAX_TABLE_SIZE,
    check_graph,
    check_task,
    map_result,
    marginals_result,
    no_support,
)

__all__ = ["elimination_order", "variable_elimination"]

METHOD = "variable_elimination"

# the greedy orders of elimination_order
_HEURISTICS = ("auto", "min_fill", "weighted_min_fill", "min_weight", "min_degree")
# A cluster whose factors' spans (log of largest over smallest non-zero entry) add up to less than
# this is multiplied in linear space: every non-zero entry of the product is at least exp(-300)
# (about 1e-130) times its largest, far from underflow (1e-308), so no per-slice shift is needed.
_LINEAR_SPAN = 300.0


# --------------------------------------------------------------------------- elimination orders
def _interaction_graph(fg: FactorGraph) -> list[set]:
    adj: list[set] = [set() for _ in range(fg.n_variables)]
    for factor in fg.factors:
        vs = [int(v) for v in factor.variables]
        for v in vs:
            adj[v].update(u for u in vs if u != v)
    return adj


def _eliminate(adj: list[set], card: np.ndarray, v: int) -> int:
    """Eliminate ``v`` from the interaction graph ``adj`` (connect its neighbours, drop it).

    Returns the number of entries of the cluster table ``{v} ∪ neighbours(v)``.
    """
    nb = adj[v]
    size = int(card[v]) * int(np.prod([int(card[u]) for u in nb], dtype=object))
    for a in nb:
        adj[a].update(u for u in nb if u != a)
        adj[a].discard(v)
    adj[v] = set()
    return size


def _greedy_order(adj: list[set], card: np.ndarray, heuristic: str) -> tuple[list[int], int, int]:
    logc = np.log2(card.astype(np.float64)).tolist()  # Python floats: cheaper to index in the loop
    cards = [int(c) for c in card]

    def cost(v):
        nb = adj[v]
        weight = float(logc[v] + sum(logc[u] for u in nb))
        if heuristic == "min_degree":
            return (len(nb), weight, v)
        if heuristic == "min_weight":
            return (weight, len(nb), v)
        if heuristic == "weighted_min_fill":
            nbl = list(nb)
            missing = [(a, b) for i, a in enumerate(nbl) for b in nbl[i + 1 :] if b not in adj[a]]
            return (sum(float(cards[a] * cards[b]) for a, b in missing), weight, v)
        # each missing edge counted from both ends; a itself is in nb but not in adj[a]
        return (sum(len(nb - adj[a]) - 1 for a in nb) // 2, weight, v)

    remaining = set(range(len(adj)))
    costs = {v: cost(v) for v in remaining}
    order: list[int] = []
    biggest = 1
    total = 0
    while remaining:
        v = min(remaining, key=costs.__getitem__)
        nb = adj[v]
        size = _eliminate(adj, card, v)
        # only v's neighbours and theirs have new edges around them: the other costs are unchanged
        for u in nb.union(*(adj[a] for a in nb)) - {v}:
            costs[u] = cost(u)
        biggest = max(biggest, size)
        total += size
        remaining.remove(v)
        order.append(v)
    return order, biggest, total


def _elimination_order(fg: FactorGraph, heuristic: str = "min_fill") -> tuple[list[int], int]:
    """Core of :func:`elimination_order` (trusts its input)."""
    card = fg.cardinalities
    candidates = ("min_fill", "weighted_min_fill", "min_weight") if heuristic == "auto" else (heuristic,)
    best = None
    for h in candidates:
        order, biggest, total = _greedy_order(_interaction_graph(fg), card, h)
        if best is None or (total, biggest) < (best[2], best[1]):
            best = (order, biggest, total)
    return best[0], best[1]


def _largest_cluster(fg: FactorGraph, order: list[int]) -> int:
    adj = _interaction_graph(fg)
    return max([1] + [_eliminate(adj, fg.cardinalities, v) for v in order])


def elimination_order(fg: FactorGraph, *, heuristic: str = "min_fill") -> tuple[list[int], int]:
    """Greedy elimination order of all variables and the size of the largest cluster it creates.

    Parameters
    ----------
    fg : FactorGraph
    heuristic : {"auto", "min_fill", "weighted_min_fill", "min_weight", "min_degree"}
        Which variable to eliminate next: the one whose elimination adds the fewest new edges
        (``min_fill``), the least product of the cardinalities of the new edges' ends
        (``weighted_min_fill``), the smallest cluster table (``min_weight``), or the fewest
        neighbours (``min_degree``); ties go to the smaller cluster, then the lower index.
        ``auto`` runs the first three and keeps the order with the least total table size.

    Returns
    -------
    order : list of int
        Every variable once.
    max_table_size : int
        Number of entries of the largest cluster table ``{v} ∪ neighbours(v)`` along the order.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable import FactorGraph, TableFactor
    >>> fg = FactorGraph([3, 3, 3])
    >>> _ = fg.add_factors([TableFactor([0, 1], np.zeros((3, 3))), TableFactor([1, 2], np.zeros((3, 3)))])
    >>> elimination_order(fg)
    ([0, 1, 2], 9)
    """
    fg = check_graph(fg)
    check_choice(heuristic, "heuristic", _HEURISTICS)
    return _elimination_order(fg, heuristic)


# --------------------------------------------------------------------------- variable elimination
@dataclass
class _LogFactor:
    """A log-table whose axes follow the sorted tuple ``scope`` of variable indices."""

    scope: tuple
    table: np.ndarray
    # for the linear-space product (marginals): table = log(lin) + shift, lin's largest entry is 1 and
    # its smallest non-zero entry is exp(-span); span = inf when there is no such form (all -inf)
    lin: np.ndarray | None = None
    shift: float = 0.0
    span: float = np.inf

    def linearize(self) -> _LogFactor:
        """Fill ``lin``, ``shift`` and ``span`` from ``table`` (sizes of factors and messages only)."""
        finite = self.table[np.isfinite(self.table)]
        if finite.size:
            self.shift = float(finite.max())
            self.span = self.shift - float(finite.min())
            self.lin = np.exp(self.table - self.shift)
        return self


def _as_log_factors(fg: FactorGraph) -> list[_LogFactor]:
    out = []
    for factor in fg.factors:
        scope = factor.variables
        order = np.argsort(scope)
        out.append(_LogFactor(tuple(int(v) for v in scope[order]), np.transpose(factor.to_table(), order)))
    return out


def _expand(f: _LogFactor, scope: tuple, card: np.ndarray) -> np.ndarray:
    """View of ``f.table`` broadcastable against a table over the sorted ``scope``."""
    present = set(f.scope)
    return f.table.reshape([int(card[v]) if v in present else 1 for v in scope])


def _product(factors: list[_LogFactor], scope: tuple, card: np.ndarray) -> np.ndarray:
    table = np.zeros([int(card[v]) for v in scope])
    for f in factors:
        table += _expand(f, scope, card)  # in place: no temporary per factor
    return table


def _linear_product(factors: list[_LogFactor], scope: tuple, card: np.ndarray) -> tuple[np.ndarray, float]:
    """Product of linearized factors over the sorted ``scope``: ``(lin, c)`` with table ``log(lin) + c``."""
    views = []
    for f in factors:
        present = set(f.scope)
        views.append(f.lin.reshape([int(card[v]) if v in present else 1 for v in scope]))
    table = np.empty([int(card[v]) for v in scope])
    if len(views) >= 2:  # the first product writes the table: no pass filling it with ones
        np.multiply(views[0], views[1], out=table)
    else:
        table[...] = views[0] if views else 1.0
    for view in views[2:]:
        table *= view
    return table, float(sum(f.shift for f in factors))


def _sum_out(table: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Log-sum of ``table`` over ``axis``, keeping the exponentiated table for the downward pass.

    Each slice is shifted by its own maximum ``m`` (0 for an all ``-inf`` slice), as in
    :func:`tractable._logspace.logsumexp`, so nothing underflows that matters. Returns ``(lin, message, m)`` with
    ``lin = exp(table - m)`` and ``message = log(sum(lin, axis)) + m``; ``message`` and ``m`` have
    the shape of ``table`` without ``axis``.
    """
    m = np.max(table, axis=axis, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    lin = table - m  # the product table is not needed any more: reuse its memory
    np.exp(lin, out=lin)
    with np.errstate(divide="ignore"):
        message = np.log(lin.sum(axis=axis))
    m = np.squeeze(m, axis=axis)
    return lin, message + m, m


def _max_keep(x: np.ndarray, axis: int) -> np.ndarray:
    return np.max(x, axis=axis, keepdims=True)


def _validate_variable_elimination(fg, task, order, max_table_size) -> tuple[FactorGraph, str, list | None, int]:
    fg = check_graph(fg)
    task = check_task(task)
    max_table_size = check_int(max_table_size, "max_table_size", minimum=1)
    if order is not None:
        n = fg.n_variables
        order = as_index_array(order, "order").tolist()
        if sorted(order) != list(range(n)):
            raise ValueError(f"`order` must list every variable 0..{n - 1} exactly once; got {order}.")
    return fg, task, order, max_table_size


def _variable_elimination(
    fg: FactorGraph, task: str, *, order: list[int] | None = None, max_table_size: int = DEFAULT_MAX_TABLE_SIZE
) -> MarginalsResult | MAPResult:
    """Core of :func:`variable_elimination` and ``METHODS["variable_elimination"]`` (trusts its input)."""
    t0 = time.perf_counter()
    n = fg.n_variables
    card = fg.cardinalities
    if order is None:
        order, biggest = _elimination_order(fg)
    else:
        biggest = _largest_cluster(fg, order)
    if biggest > max_table_size:
        raise ValueError(
            f"variable elimination would build a table of {biggest} entries, more than "
            f"`max_table_size`={max_table_size}; the model's induced width is too large for exact inference."
        )
    maximize = task == "map"

    position = {v: i for i, v in enumerate(order)}
    buckets: list[list[_LogFactor]] = [[] for _ in range(n)]
    constant = fg.constant
    for f in _as_log_factors(fg):
        if not maximize:
            f.linearize()
        if not f.scope:
            constant += float(f.table)
        else:
            buckets[min(position[v] for v in f.scope)].append(f)

    clusters: list[tuple] = []  # per step: cluster scope
    tables: list[np.ndarray] = []  # per step: cluster table (product of bucket factors)
    messages: list[_LogFactor] = []  # per step: message to the parent step
    parent = np.full(n, -1, dtype=np.int64)
    roots_total = constant
    for step, v in enumerate(order):
        bucket = buckets[step]
        scope = tuple(sorted({v}.union(*(f.scope for f in bucket))))
        axis = scope.index(v)
        msg_scope = scope[:axis] + scope[axis + 1 :]
        if maximize:
            table = _product(bucket, scope, card)
            msg_table = np.squeeze(_max_keep(table, axis), axis=axis)
            tables.append(table)
            message = _LogFactor(msg_scope, msg_table)
        elif sum(f.span for f in bucket) < _LINEAR_SPAN:
            lin, c = _linear_product(bucket, scope, card)
            summed = lin.sum(axis=axis)
            with np.errstate(divide="ignore"):
                msg_table = np.log(summed) + c
            tables.append((lin, np.full(msg_table.shape, c)))  # the cluster's table is exp(c) * lin
            message = _LogFactor(msg_scope, msg_table)
            top = float(summed.max()) if summed.size else 0.0
            if top > 0:  # the linear form of the message without another exp
                message.lin = summed / top
                message.shift = float(np.log(top)) + c
                message.span = -float(np.log(message.lin[message.lin > 0].min()))
        else:
            lin, msg_table, m = _sum_out(_product(bucket, scope, card), axis)
            tables.append((lin, m))  # the cluster's table is exp(m) * lin
            message = _LogFactor(msg_scope, msg_table).linearize()
        clusters.append(scope)
        messages.append(message)
        if msg_scope:
            p = min(position[u] for u in msg_scope)
            parent[step] = p
            buckets[p].append(messages[-1])
        else:
            # a root: its message is the max (or log-sum) of its connected component
            roots_total += float(msg_table)

    if maximize:
        if roots_total == -np.inf:
            raise no_support("the MAP assignment is")
        assignment = np.zeros(n, dtype=np.int64)
        for step in range(n - 1, -1, -1):
            scope = clusters[step]
            v = order[step]
            index = tuple(slice(None) if u == v else int(assignment[u]) for u in scope)
            assignment[v] = int(np.argmax(tables[step][index]))
        return map_result(assignment, fg.score(assignment), t0, METHOD)

    log_z = roots_total
    if log_z == -np.inf:
        raise no_support("the marginals are")
    # Downward pass, parents before children. A cluster's belief is kept as exp(belief - shift) with
    # its shift: separator and marginal sums are plain sums of it. The upward pass kept each cluster
    # as exp(table - m), m per separator configuration, so the belief costs no exp of the cluster
    # here: that array times exp(m + downward message), an array of the separator's size.
    separators: list[tuple[np.ndarray, float] | None] = [None] * n  # per step: parent's belief summed to its scope
    marginals: list[np.ndarray | None] = [None] * n
    children: list[list[int]] = [[] for _ in range(n)]
    for step in range(n):
        if parent[step] >= 0:
            children[parent[step]].append(step)
    for step in range(n - 1, -1, -1):
        scope = clusters[step]
        kept = tables[step]
        tables[step] = None  # not needed any more
        v = order[step]
        axis = scope.index(v)
        p = parent[step]
        down = None
        if p >= 0:
            # separator belief from the parent, divided by this cluster's upward message (0/0 = 0)
            sep, pshift = separators[step]
            separators[step] = None
            with np.errstate(divide="ignore"):
                sep = np.log(sep.reshape(messages[step].table.shape)) + pshift
            with np.errstate(invalid="ignore"):
                down = np.where(np.isneginf(sep), -np.inf, sep - messages[step].table)
        # belief = table + down = log(lin) + (m + down), and m + down has the separator's shape
        lin, m = kept
        w = m if down is None else m + down
        shift = float(np.max(w))
        shift = shift if np.isfinite(shift) else 0.0
        others = [i for i in range(len(scope)) if i != axis]
        if children[step]:
            lin *= np.expand_dims(np.exp(w - shift), axis)  # lin is this cluster's own array
            for c in children[step]:
                drop = tuple(i for i, u in enumerate(scope) if u not in messages[c].scope)
                separators[c] = (lin.sum(axis=drop) if drop else lin, shift)
            # a child's separator holds v (v's position is its parent): v's marginal is summed from the smallest
            c = min(children[step], key=lambda c: separators[c][0].size)
            sep = separators[c][0]
            k = messages[c].scope.index(v)
            m = sep.sum(axis=tuple(i for i in range(sep.ndim) if i != k)) if sep.ndim > 1 else sep
        else:  # a leaf needs only its marginal: one contraction, no belief array
            m = np.einsum(lin, list(range(len(scope))), np.exp(w - shift), others, [axis])
        marginals[v] = m / m.sum()
    return marginals_result(marginals, log_z, t0, METHOD)


def variable_elimination(
    fg: FactorGraph,
    task: str = "marginals",
    *,
    order: list[int] | None = None,
    max_table_size: int = DEFAULT_MAX_TABLE_SIZE,
) -> MarginalsResult | MAPResult:
    """Exact marginals or MAP by variable elimination in a greedy (min-fill family) order.

    Parameters
    ----------
    fg : FactorGraph
    task : {"marginals", "map"}
        ``"marginals"`` returns every variable's marginal and ``log Z`` (a clique tree built by the
        elimination, calibrated by an upward and a downward pass); ``"map"`` returns a maximizing
        assignment (max-product elimination, then backward decoding).
    order : list of int, optional
        Elimination order (every variable once); default: :func:`elimination_order`.
    max_table_size : int, default 2**25
        Largest intermediate table allowed (entries). Checked before any table is built: a model
        whose induced width is too large raises ``ValueError`` instead of running out of memory.

    Returns
    -------
    MarginalsResult or MAPResult
        ``method="variable_elimination"``, ``status="optimal"``; marginals and assignment are read-only.

    Raises
    ------
    ValueError
        Unknown ``task``, invalid ``order``, or a table larger than ``max_table_size``.
    ZeroPartitionError
        If every assignment has probability zero (a ``ValueError`` too).

    Notes
    -----
    Cost is ``O(sum of cluster table sizes)``, exponential only in the induced width of the order.
    Downward messages use Hugin-style division in log space with the convention ``0 / 0 = 0``, which
    is exact: a cluster configuration whose separator message is zero has zero belief.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable import FactorGraph, TableFactor
    >>> fg = FactorGraph([2, 2])
    >>> _ = fg.add_factor(TableFactor([0, 1], np.log([[1.0, 2.0], [3.0, 2.0]])))
    >>> variable_elimination(fg).marginals
    array([[0.375, 0.625],
           [0.5  , 0.5  ]])
    >>> variable_elimination(fg, "map").assignment.tolist()
    [1, 0]
    """
    fg, task, order, max_table_size = _validate_variable_elimination(fg, task, order, max_table_size)
    return _variable_elimination(fg, task, order=order, max_table_size=max_table_size)
