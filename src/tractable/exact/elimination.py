"""Variable elimination in a greedy elimination order (min-fill family).

For marginals the eliminated clusters are kept as a clique tree, calibrated with a second, downward
pass, so that *all* marginals cost about twice one elimination.

* Every table's axes follow the elimination order, so a cluster's own variable is its axis 0: the
  upward message is a sum over the leading axis, and every message and factor broadcasts against
  the cluster of its bucket without a transpose.
* A cluster is multiplied in linear space when its factors' ranges cannot underflow (else in log
  space, shifted per separator configuration). The factors are multiplied pairwise, the pair with the
  smallest joint scope first, so the cluster-sized array is written once.
* The upward pass keeps each cluster as ``lin`` with ``table = log(lin) + c(separator)`` and its
  sum over axis 0. The downward belief is ``lin * separator / sum`` (``0 / 0 = 0``): the constants
  ``c`` cancel, so the downward pass needs no exp or log of a cluster, only one multiply by a
  separator-sized array and one sum per child separator (``_tables.sum_to``, one compiled pass).
* A Bayesian network whose whole clique tree is wider than ``max_table_size`` is solved one relevant
  (ancestral) group at a time instead, when its groups fit (``_relevance``).

For MAP, max-product elimination then backward decoding. The cost is exponential only in the
induced width of the order, and the largest intermediate table is checked against
``max_table_size`` before anything is allocated.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass

import numpy as np

from .._results import MAPResult, MarginalsResult
from .._validate import as_index_array, check_choice, check_int
from ..factorgraph import FactorGraph, TableFactor
from ._common import (
    DEFAULT_MAX_TABLE_SIZE,
    HUGE,
    check_graph,
    check_task,
    huge_top,
    map_result,
    marginals_result,
    no_support,
    safe_sum,
    shifted_table,
    too_far_apart,
)
from ._relevance import relevant_groups
from ._tables import broadcast_op, sum_to

__all__ = ["elimination_order", "variable_elimination"]

METHOD = "variable_elimination"

# the greedy orders of elimination_order
_HEURISTICS = ("auto", "min_fill", "weighted_min_fill", "min_weight", "min_degree")
# A cluster whose factors' spans (log of largest over smallest non-zero entry) add up to less than
# this is multiplied in linear space: every non-zero entry of the product is at least exp(-300)
# (about 1e-130) times its largest, far from underflow (1e-308), so no per-slice shift is needed.
_LINEAR_SPAN = 300.0
# a cluster's tables are combined pairwise, smallest joint scope first, when there are at most this many
_PAIRWISE_UP_TO = 8


# --------------------------------------------------------------------------- elimination orders
def _interaction_graph(factors, variables) -> dict[int, set]:
    """Neighbours of each of ``variables`` (which hold every variable of ``factors``)."""
    adj: dict[int, set] = {int(v): set() for v in variables}
    for factor in factors:
        vs = [int(v) for v in factor.variables]
        for v in vs:
            adj[v].update(u for u in vs if u != v)
    return adj


def _eliminate(adj: dict[int, set], card: np.ndarray, v: int) -> int:
    """Eliminate ``v`` from the interaction graph ``adj`` (connect its neighbours, drop it).

    Returns the number of entries of the cluster table ``{v} ∪ neighbours(v)``.
    """
    nb = adj[v]
    size = int(card[v]) * math.prod(int(card[u]) for u in nb)
    for a in nb:
        adj[a].update(u for u in nb if u != a)
        adj[a].discard(v)
    adj[v] = set()
    return size


def _greedy_order(adj: dict[int, set], card: np.ndarray, heuristic: str) -> tuple[list[int], int, int]:
    logc = np.log2(card.astype(np.float64)).tolist()  # Python floats: cheaper to index in the loop
    cards = [int(c) for c in card]
    fills = heuristic in ("min_fill", "weighted_min_fill")

    def weight(v):
        return float(logc[v] + sum(logc[u] for u in adj[v]))

    def cost(v, w):
        nb = adj[v]
        if heuristic == "min_degree":
            return (len(nb), w, v)
        if heuristic == "min_weight":
            return (w, len(nb), v)
        if heuristic == "weighted_min_fill":
            nbl = list(nb)
            missing = [(a, b) for i, a in enumerate(nbl) for b in nbl[i + 1 :] if b not in adj[a]]
            return (sum(float(cards[a] * cards[b]) for a, b in missing), w, v)
        # each missing edge counted from both ends; a itself is in nb but not in adj[a]. The
        # neighbourhoods as bit masks: one AND-NOT and one popcount per neighbour
        m = masks[v]
        return ((sum((m & ~masks[a]).bit_count() for a in nb) - len(nb)) // 2, w, v)

    masks = {v: sum(1 << u for u in nb) for v, nb in adj.items()} if heuristic == "min_fill" else {}
    weights = {v: weight(v) for v in adj}
    # a heap of (cost, v) with stale entries skipped: a cost ends with v, so ties go to the lower index
    costs = {v: cost(v, weights[v]) for v in adj}
    heap = list(costs.values())
    heapq.heapify(heap)
    done = dict.fromkeys(adj, False)
    order: list[int] = []
    biggest = 1
    total = 0
    while heap:
        c = heapq.heappop(heap)
        v = c[-1]
        if done[v] or c != costs[v]:
            continue
        nb = adj[v]
        if masks:  # the new edges of _eliminate, in the masks
            m = masks[v]
            for a in nb:
                masks[a] = (masks[a] | m) & ~((1 << a) | (1 << v))
        size = _eliminate(adj, card, v)
        done[v] = True
        # v's neighbours have new neighbourhoods; any other variable keeps its neighbours, and its
        # fill changes only when two of them are v's neighbours (a new edge between them)
        changed = set(nb)
        for a in nb:
            weights[a] = weight(a)
        if fills:
            seen: dict = {}
            for a in nb:
                for u in adj[a]:
                    if u not in nb:
                        seen[u] = seen.get(u, 0) + 1
            changed.update(u for u, k in seen.items() if k >= 2)
        for u in changed:
            c = cost(u, weights[u])
            if c != costs[u]:
                costs[u] = c
                heapq.heappush(heap, c)
        biggest = max(biggest, size)
        total += size
        order.append(v)
    return order, biggest, total


def _order_of(factors, variables, card: np.ndarray, heuristic: str = "min_fill") -> tuple[list[int], int, int]:
    """Greedy order of ``variables`` (all variables of ``factors``): ``(order, largest cluster, total size)``."""
    candidates = ("min_fill", "weighted_min_fill", "min_weight") if heuristic == "auto" else (heuristic,)
    best = None
    for h in candidates:
        order, biggest, total = _greedy_order(_interaction_graph(factors, variables), card, h)
        if best is None or (total, biggest) < (best[2], best[1]):
            best = (order, biggest, total)
    return best


def _elimination_order(fg: FactorGraph, heuristic: str = "min_fill") -> tuple[list[int], int]:
    """Core of :func:`elimination_order` (trusts its input)."""
    order, biggest, _ = _order_of(fg.factors, range(fg.n_variables), fg.cardinalities, heuristic)
    return order, biggest


def _largest_cluster(fg: FactorGraph, order: list[int]) -> tuple[int, int]:
    """Largest and total cluster size along ``order``."""
    adj = _interaction_graph(fg.factors, range(fg.n_variables))
    sizes = [_eliminate(adj, fg.cardinalities, v) for v in order]
    return max([1] + sizes), sum(sizes)


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
    """A log-table whose axes follow the tuple ``scope`` of variable indices (in elimination order).

    For the linear-space product (marginals) it also has the form ``table = log(lin) + shift`` where
    ``lin``'s largest entry is 1 and its smallest non-zero entry is ``exp(-span)`` (``span = inf``
    when there is no such form: all ``-inf``). A message made in linear space has only that form
    until a log-space product asks for ``log_table()``.
    """

    scope: tuple
    table: np.ndarray | None
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

    def log_table(self) -> np.ndarray:
        """The log-table, computed from the linear form the first time it is needed."""
        if self.table is None:
            with np.errstate(divide="ignore"):
                self.table = np.log(self.lin) + self.shift
        return self.table


def _buckets(factors, constant: float, order: list[int], linear: bool) -> tuple[dict, list[list[_LogFactor]], float]:
    """Each factor, its axes sorted by elimination position, in the bucket of its first-eliminated variable.

    Returns ``(position, buckets, constant)``: the position of each variable in ``order``, the factors
    per step, and the graph's constant plus the factors without variables.
    """
    position = {v: i for i, v in enumerate(order)}
    buckets: list[list[_LogFactor]] = [[] for _ in order]
    scalars, tops = [], []  # factors without variables; tops of the tables shifted (see shifted_table)
    for factor in factors:
        scope = [int(v) for v in factor.variables]
        perm = sorted(range(len(scope)), key=lambda i: position[scope[i]])
        table = np.ascontiguousarray(np.transpose(factor.to_table(), perm))
        f = _LogFactor(tuple(scope[i] for i in perm), table)
        if not f.scope:
            scalars.append(float(table.reshape(())))  # ascontiguousarray makes a 0-d table (1,)
            continue
        f.table, top = shifted_table(table)
        tops.append(top)
        if linear:
            f.linearize()
        buckets[position[f.scope[0]]].append(f)
    huge = any(tops) or any(np.isfinite(x) and abs(x) > HUGE for x in [constant, *scalars])
    if huge and constant > -np.inf and all(x > -np.inf for x in scalars):
        constant = safe_sum([constant, *scalars, *tops])  # huge terms: no partial sum overflows
    else:
        for x in scalars:
            constant += x
    return position, buckets, constant


def _shape(factor_scope: tuple, scope: tuple, card: np.ndarray) -> list[int]:
    """Shape that broadcasts a table over ``factor_scope`` (a subsequence of ``scope``) against ``scope``."""
    present = set(factor_scope)
    return [int(card[v]) if v in present else 1 for v in scope]


def _combine(tables: list[tuple[tuple, np.ndarray]], scope: tuple, card: np.ndarray, op) -> np.ndarray:
    """``op`` (``np.add`` or ``np.multiply``) of tables ``(scope_i, array_i)`` into a new array over ``scope``.

    Every ``scope_i`` is a subsequence of ``scope`` and ``tables`` is not empty. While more than two
    (and at most ``_PAIRWISE_UP_TO``) tables are left, the two whose scopes have the smallest union
    are combined first (over that union), so the cluster-sized array is written once, by the last
    operation, instead of once per table: a cluster's factors often include a small table and a
    message whose union is far smaller than the cluster. More tables (a variable with many children)
    are combined in turn into the cluster array, as the search would cost ``O(k^3)``.
    """
    position = {v: i for i, v in enumerate(scope)}
    tables = list(tables)
    while 2 < len(tables) <= _PAIRWISE_UP_TO:
        best = None
        for i in range(len(tables)):
            for j in range(i + 1, len(tables)):
                union = set(tables[i][0]).union(tables[j][0])
                size = math.prod(int(card[v]) for v in union)
                if best is None or size < best[0]:
                    best = (size, i, j, tuple(sorted(union, key=position.__getitem__)))
        _, i, j, union = best
        (si, ai), (sj, aj) = tables[i], tables[j]
        merged = op(ai.reshape(_shape(si, union, card)), aj.reshape(_shape(sj, union, card)))
        tables = [t for k, t in enumerate(tables) if k not in (i, j)] + [(union, merged)]
    out = np.empty([int(card[v]) for v in scope])
    views = [a.reshape(_shape(s, scope, card)) for s, a in tables]
    if len(views) >= 2:  # the first operation writes the cluster: no pass filling it first
        broadcast_op(op, views[0], views[1], out)
    else:
        out[...] = views[0]
    for view in views[2:]:
        op(out, view, out=out)
    return out


def _product(factors: list[_LogFactor], scope: tuple, card: np.ndarray) -> np.ndarray:
    """Sum of the factors' log-tables over ``scope``."""
    if not factors:
        return np.zeros([int(card[v]) for v in scope])
    return _combine([(f.scope, f.log_table()) for f in factors], scope, card, np.add)


def _linear_product(factors: list[_LogFactor], scope: tuple, card: np.ndarray) -> tuple[np.ndarray, float]:
    """Product of linearized factors over ``scope``: ``(lin, c)`` with table ``log(lin) + c``."""
    if not factors:
        return np.ones([int(card[v]) for v in scope]), 0.0
    return _combine([(f.scope, f.lin) for f in factors], scope, card, np.multiply), float(sum(f.shift for f in factors))


def _message(summed: np.ndarray, c: np.ndarray | float, linear: bool, scope: tuple) -> _LogFactor:
    """The message ``log(summed) + c`` over ``scope``: in linear form only when ``c`` is a scalar."""
    if not linear:
        with np.errstate(divide="ignore"):
            return _LogFactor(scope, np.log(summed) + c).linearize()
    message = _LogFactor(scope, None)
    top = float(summed.max())
    if top > 0:
        low = float(summed.min())
        if low <= 0:
            low = float(np.min(summed, where=summed > 0, initial=top))
        message.lin = summed / top
        message.shift = float(np.log(top)) + c
        message.span = float(np.log(top / low))
    else:  # every entry is zero: the log form is all -inf, and there is no linear form
        message.table = np.full(summed.shape, -np.inf)
    return message


def _upward(factors, constant: float, card: np.ndarray, order: list[int]):
    """Sum-product elimination in ``order``, keeping each cluster for the downward pass.

    Cluster ``step`` (eliminating ``order[step]``) has its variables sorted by elimination position,
    so the eliminated variable is axis 0 and its message to the parent is the sum over axis 0. The
    cluster is kept as ``lin`` with ``table = log(lin) + c(s)``, ``c`` constant over each separator
    configuration ``s`` (one scalar when the product was taken in linear space, the slice maximum
    otherwise), with ``summed = lin.sum(axis=0)``: the downward pass needs nothing else.
    """
    position, buckets, constant = _buckets(factors, constant, order, linear=True)
    n = len(order)
    scopes: list[tuple] = []
    lins: list[np.ndarray | None] = []
    sums: list[np.ndarray] = []
    parent = [-1] * n
    log_z = constant
    for step, v in enumerate(order):
        bucket = buckets[step]
        scope = tuple(sorted({v}.union(*(f.scope for f in bucket)), key=position.__getitem__))
        linear = sum(f.span for f in bucket) < _LINEAR_SPAN
        if linear:
            lin, c = _linear_product(bucket, scope, card)
        else:  # per-slice shift: lin = exp(table - max over axis 0), 0 for an all -inf slice
            lin = _product(bucket, scope, card)
            c = lin.max(axis=0)
            c = np.where(np.isfinite(c), c, 0.0)
            lin -= c  # the product table is not needed any more: reuse its memory
            np.exp(lin, out=lin)
        summed = lin.reshape(lin.shape[0], -1).sum(axis=0).reshape(lin.shape[1:])
        scopes.append(scope)
        lins.append(lin)
        sums.append(summed)
        if len(scope) > 1:
            message = _message(summed, c, linear, scope[1:])
            parent[step] = position[scope[1]]
            buckets[parent[step]].append(message)
        else:  # a root: its message is the log-sum of its connected component
            with np.errstate(divide="ignore"):
                log_z += float(np.log(summed)) + float(c)
    return scopes, lins, sums, parent, log_z


def _downward(order: list[int], scopes: list[tuple], lins: list, sums: list, parent: list) -> dict[int, np.ndarray]:
    """Calibrate the clique tree from the roots down; returns the marginal of every variable of ``order``.

    A cluster's belief is ``lin * r`` with ``r = separator / summed`` (``0 / 0 = 0``) over its
    separator: the per-slice constants of the upward pass cancel, so a downward step is one multiply
    of the cluster array by a separator-sized one (scaled to a largest entry of 1, so that beliefs
    stay in range), then one sum per child separator.
    """
    n = len(order)
    children: list[list[int]] = [[] for _ in range(n)]
    for step in range(n):
        if parent[step] >= 0:
            children[parent[step]].append(step)
    separators: list[np.ndarray | None] = [None] * n
    marginals: dict[int, np.ndarray] = {}
    for step in range(n - 1, -1, -1):
        lin = lins[step]
        lins[step] = None  # the cluster becomes its belief in place, then is dropped
        flat = lin.reshape(lin.shape[0], -1)
        r = None
        if parent[step] >= 0:
            summed = sums[step]
            r = np.zeros_like(summed)
            np.divide(separators[step], summed, out=r, where=summed > 0)
            separators[step] = None
            top = r.max()
            if top > 0:
                r /= top
        scope = scopes[step]
        if children[step]:
            if r is not None:
                flat *= r.reshape(1, -1)
            for c in children[step]:
                child = set(scopes[c][1:])
                separators[c] = sum_to(lin, [u in child for u in scope])
            # every child separator holds this cluster's variable (axis 0): sum the smallest
            sep = separators[min(children[step], key=lambda c: separators[c].size)]
            m = sep.reshape(sep.shape[0], -1).sum(axis=1)
        elif r is None:
            m = flat.sum(axis=1)
        else:  # a leaf needs only its marginal: one contraction, no belief array
            m = np.einsum("ij,j->i", flat, r.reshape(-1))
        marginals[order[step]] = m / m.sum()
    return marginals


def _max_product(fg: FactorGraph, order: list[int]) -> np.ndarray:
    """Max-product elimination in ``order`` and backward decoding; returns a maximizing assignment."""
    card = fg.cardinalities
    position, buckets, constant = _buckets(fg.factors, fg.constant, order, linear=False)
    n = len(order)
    scopes: list[tuple] = []
    tables: list[np.ndarray] = []
    best = constant
    for step, v in enumerate(order):
        bucket = buckets[step]
        scope = tuple(sorted({v}.union(*(f.scope for f in bucket)), key=position.__getitem__))
        table = _product(bucket, scope, card)
        scopes.append(scope)
        tables.append(table)
        if len(scope) > 1:
            buckets[position[scope[1]]].append(_LogFactor(scope[1:], table.max(axis=0)))
        else:  # a root: the max of its connected component
            best += float(table.max())
    if not best > -np.inf:  # -inf, or NaN: shifts summing past float64's range plus a -inf maximum
        raise _no_mass(fg, "the MAP assignment is")
    assignment = np.zeros(n, dtype=np.int64)
    for step in range(n - 1, -1, -1):  # the variables of a cluster are eliminated after its own
        index = (slice(None),) + tuple(int(assignment[u]) for u in scopes[step][1:])
        assignment[order[step]] = int(np.argmax(tables[step][index]))
    return assignment


def _no_mass(fg: FactorGraph, task: str) -> ValueError:
    """Why no assignment has mass: :func:`._common.no_support` (a ``ZeroPartitionError``) when none avoids
    every ``-inf`` entry, else the refusal of scores so far apart that every assignment's shifted score
    overflowed to ``-inf`` (:func:`._common.too_far_apart`). Max-product over the 0 / ``-inf`` masks decides."""
    if fg.constant > -np.inf and any(huge_top(f.to_table()) is not None for f in fg.factors):
        masks = FactorGraph(fg.cardinalities)
        for f in fg.factors:
            masks.add_factor(TableFactor(f.variables, np.where(np.isfinite(f.to_table()), 0.0, -np.inf)))
        try:
            _max_product(masks, _order_of(masks.factors, range(masks.n_variables), masks.cardinalities)[0])
        except ValueError:
            pass
        else:
            return too_far_apart()
    return no_support(task)


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
    card = fg.cardinalities
    groups = None  # relevant groups calibrated one by one (see _relevance), or None: the whole graph
    peeled: list = []
    if order is None:
        order, biggest, _ = _order_of(fg.factors, range(fg.n_variables), card)
        if task == "marginals" and biggest > max_table_size:
            # too wide as a whole: a Bayesian network may still be solved one relevant group at a time
            grouped = _grouped_orders(fg)
            if grouped is not None:
                groups, peeled = grouped
                biggest = max([1] + [g[2] for g in groups])
    else:
        biggest, _ = _largest_cluster(fg, order)
    if biggest > max_table_size:
        raise ValueError(
            f"variable elimination would build a table of {biggest} entries, more than "
            f"`max_table_size`={max_table_size}; the model's induced width is too large for exact inference."
        )
    if task == "map":
        with np.errstate(over="ignore"):  # shifted tables (<= 0) overflow only to -inf: weight 0
            assignment = _max_product(fg, order)
        return map_result(assignment, fg.score(assignment), t0, METHOD)
    if groups is None:
        groups = [(fg.factors, order, biggest)]
    marginals: dict[int, np.ndarray] = {}
    # with no group every factor is a normalized conditional table (see _relevance): Z = exp(constant)
    log_z = fg.constant
    for i, (factors, group_order, _) in enumerate(groups):
        with np.errstate(over="ignore"):  # shifted tables (<= 0) overflow only to -inf: weight 0
            scopes, lins, sums, parent, group_log_z = _upward(factors, fg.constant, card, group_order)
        if not group_log_z > -np.inf:  # -inf, or NaN: shifts summing past float64's range plus no mass
            raise _no_mass(fg, "the marginals are")
        log_z = group_log_z if i == 0 else log_z  # the same in every group, up to rounding
        for v, m in _downward(group_order, scopes, lins, sums, parent).items():
            marginals.setdefault(v, m)
    for x, factor, p in peeled:  # parents first: a peeled variable's table times its parent's marginal
        lin = np.exp(factor.to_table())
        if p < 0:
            m = lin
        elif int(factor.variables[0]) == x:
            m = lin @ marginals[p]
        else:
            m = marginals[p] @ lin
        marginals[x] = m / m.sum()
    return marginals_result([marginals[v] for v in range(fg.n_variables)], log_z, t0, METHOD)


def _grouped_orders(fg: FactorGraph) -> tuple[list, list] | None:
    """Relevant groups of a Bayesian-network-shaped graph with their elimination orders.

    Returns ``([(factors, order, largest cluster), ...], peeled)`` (see
    :func:`._relevance.relevant_groups`), or None when the graph has no such structure.
    """
    found = relevant_groups(fg)
    if found is None:
        return None
    groups, peeled = found
    out = []
    for variables, factors in groups:
        order, biggest, _ = _order_of(factors, variables, fg.cardinalities)
        out.append((factors, order, biggest))
    return out, peeled


def variable_elimination(
    fg: FactorGraph,
    *,
    task: str = "marginals",
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
        For marginals without ``order``, a Bayesian network (normalized conditional tables) that is
        too wide as a whole is first tried one relevant group at a time (see Notes).

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
    Downward messages use Hugin-style division with the convention ``0 / 0 = 0``, which is exact: a
    cluster configuration whose separator message is zero has zero belief.

    The relevant groups of a Bayesian network: a variable's marginal only depends on its ancestors
    and those of the variables of non-conditional factors (evidence likelihoods); the rest is barren
    and sums to 1. When the whole clique tree is too large, each leaf with two or more parents gets
    a calibration of its ancestral set, and leaves with at most one parent are computed from their
    parent's marginal; every marginal stays exact (conditional tables are recognized when they sum to
    1 within 1e-12).

    Examples
    --------
    >>> import numpy as np
    >>> from tractable import FactorGraph, TableFactor
    >>> fg = FactorGraph([2, 2])
    >>> _ = fg.add_factor(TableFactor([0, 1], np.log([[1.0, 2.0], [3.0, 2.0]])))
    >>> variable_elimination(fg).marginals
    array([[0.375, 0.625],
           [0.5  , 0.5  ]])
    >>> variable_elimination(fg, task="map").assignment.tolist()
    [1, 0]
    """
    fg, task, order, max_table_size = _validate_variable_elimination(fg, task, order, max_table_size)
    return _variable_elimination(fg, task, order=order, max_table_size=max_table_size)
