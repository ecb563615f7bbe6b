"""Exact inference on tree- and forest-structured pairwise models: sum-product and max-product.

The model over ``N`` variables with ``k`` labels each is ``p(y) ∝ exp(sum_i unary[i, y_i] +
sum_e pairwise[e, y_u, y_v])`` for edges ``e = (u, v)`` of a forest. Messages run upward from the
leaves to one root per tree and back down, *one level of the rooted forest at a time*: all nodes of
a depth are processed by one vectorized array operation, so the Python work is proportional to the
height of the trees, not to ``N``. Everything is in log space; ``-inf`` scores (forbidden labels or
label pairs) are exact, and a node's incoming messages are summed as a finite part plus a count of
``-inf`` terms, so leaving one message out (the downward pass) never computes ``-inf - (-inf)``.
Cost O(N k^2).

Batches of models that share ``N`` and ``k`` but not their edges (evidence-specific trees, as in
Chechetka & Guestrin 2010) are solved in one pass over the disjoint union of their forests
(:func:`tree_marginals_batch`).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order

from .._errors import ZeroPartitionError
from .._forest import check_forest
from .._logspace import logsumexp
from .._results import OPTIMAL, MAPResult, Result, frozen_array, stop_message
from .._validate import as_float_array
from . import _kernels

__all__ = [
    "CompiledForest",
    "TreeMarginals",
    "TreeMarginalsBatch",
    "forest_marginals",
    "tree_map",
    "tree_marginals",
    "tree_marginals_batch",
]


def _deprecated_node_marginals(self):
    warnings.warn(
        f"`{type(self).__name__}.node_marginals` is deprecated; use `.marginals`.", DeprecationWarning, stacklevel=3
    )
    return self.marginals


@dataclass(frozen=True)
class TreeMarginals(Result):
    """Exact marginals and ``log Z`` of a forest-structured model.

    Attributes
    ----------
    marginals : ndarray of shape (N, k)
        ``P(y_i = a)`` (read-only). ``node_marginals`` is a deprecated alias.
    edge_marginals : ndarray of shape (E, k, k)
        ``P(y_u = a, y_v = b)`` for edge ``e = (u, v)`` as given (read-only).
    log_partition : float
    time, method, converged, n_iter, status, message
        As in every result (exact: ``status="optimal"``; ``method="tree_marginals"``).
    """

    marginals: np.ndarray
    edge_marginals: np.ndarray
    log_partition: float

    node_marginals = property(_deprecated_node_marginals)


@dataclass(frozen=True)
class TreeMarginalsBatch(Result):
    """Exact marginals of ``B`` forest-structured models (see :func:`tree_marginals_batch`).

    Attributes
    ----------
    marginals : ndarray of shape (B, N, k)
        ``marginals[b]`` are model ``b``'s marginals (read-only). ``node_marginals`` is a deprecated alias.
    edge_marginals : tuple of B ndarrays of shape (E_b, k, k)
        A stacked ``(B, E, k, k)`` array when every model has the same number of edges.
    log_partition : ndarray of shape (B,)
    time, method, converged, n_iter, status, message
        As in every result (``method="tree_marginals_batch"``).
    """

    marginals: np.ndarray
    edge_marginals: np.ndarray | tuple
    log_partition: np.ndarray

    node_marginals = property(_deprecated_node_marginals)


# --------------------------------------------------------------------------- structure
@dataclass(frozen=True)
class _Rooted:
    """A forest rooted at one node per tree, grouped by depth."""

    levels: tuple  # levels[d] = nodes at depth d (levels[0] = roots)
    order: np.ndarray  # the levels concatenated: every parent before its children
    parent: np.ndarray  # (N,), -1 for roots
    edge: np.ndarray  # (N,) edge to the parent, -1 for roots
    child_is_v: np.ndarray  # (N,) True when the node is edges[edge, 1] (the edge reads [parent, node])


def _root(edges: np.ndarray, n: int) -> _Rooted:
    """Root every tree of the forest by one breadth-first search from a virtual node joined to each tree."""
    e = edges.shape[0]
    g = sp.csr_matrix((np.ones(2 * e), (np.r_[edges[:, 0], edges[:, 1]], np.r_[edges[:, 1], edges[:, 0]])), (n, n))
    n_comp, comp = sp.csgraph.connected_components(g, directed=False)
    first = np.full(n_comp, n, dtype=np.int64)
    np.minimum.at(first, comp, np.arange(n))
    virt = sp.csr_matrix((np.ones(n_comp), (np.full(n_comp, n), first)), (n + 1, n + 1))
    full = sp.bmat([[g, None], [None, sp.csr_matrix((1, 1))]], format="csr") + virt + virt.T
    order, pred = breadth_first_order(full, n, directed=False, return_predecessors=True)
    order = order[1:]  # drop the virtual root
    parent = pred[:n].astype(np.int64)
    parent[parent == n] = -1
    depth = np.zeros(n, dtype=np.int64)
    # depth by levels: the BFS order lists depth d before depth d + 1, so one pass per level suffices
    is_root = parent < 0
    frontier = np.flatnonzero(is_root)
    levels = [frontier]
    children_of = sp.csr_matrix((np.ones(n - is_root.sum()), (parent[~is_root], np.flatnonzero(~is_root))), (n, n))
    d = 0
    while True:
        nxt = children_of[frontier].indices
        if nxt.size == 0:
            break
        d += 1
        depth[nxt] = d
        levels.append(np.sort(nxt))
        frontier = nxt
    # the edge between each node and its parent
    key = np.minimum(edges[:, 0], edges[:, 1]) * (n + 1) + np.maximum(edges[:, 0], edges[:, 1])
    srt = np.argsort(key)
    nodes = np.flatnonzero(~is_root)
    want = np.minimum(nodes, parent[nodes]) * (n + 1) + np.maximum(nodes, parent[nodes])
    edge = np.full(n, -1, dtype=np.int64)
    edge[nodes] = srt[np.searchsorted(key[srt], want)]
    child_is_v = np.zeros(n, dtype=bool)
    child_is_v[nodes] = edges[edge[nodes], 1] == nodes
    del order
    return _Rooted(tuple(levels), np.concatenate(levels), parent, edge, child_is_v)


def _oriented(pairwise: np.ndarray, r: _Rooted, nodes: np.ndarray) -> np.ndarray:
    """``psi[c][y_parent, y_c]`` for the nodes ``c``, shape (len(nodes), k, k)."""
    psi = pairwise[r.edge[nodes]]
    flip = ~r.child_is_v[nodes]
    if flip.any():
        psi = psi.copy()
        psi[flip] = np.swapaxes(psi[flip], 1, 2)
    return psi


class _Incoming:
    """Per-node sums of messages from the children, as (finite part, number of ``-inf`` terms)."""

    def __init__(self, n: int, k: int):
        self.fin = np.zeros((n, k))
        self.ninf = np.zeros((n, k), dtype=np.int64)

    def add(self, parents: np.ndarray, msgs: np.ndarray) -> None:
        neg = np.isneginf(msgs)
        np.add.at(self.fin, parents, np.where(neg, 0.0, msgs))
        np.add.at(self.ninf, parents, neg)

    def total(self, nodes=slice(None)) -> np.ndarray:
        return np.where(self.ninf[nodes] > 0, -np.inf, self.fin[nodes])

    def without(self, nodes: np.ndarray, msgs: np.ndarray) -> np.ndarray:
        neg = np.isneginf(msgs)
        return np.where(self.ninf[nodes] - neg > 0, -np.inf, self.fin[nodes] - np.where(neg, 0.0, msgs))


def _no_mass() -> ZeroPartitionError:
    return ZeroPartitionError("no configuration has non-zero probability (every labelling scores -inf).")


#: finite scores larger in magnitude than this are shifted before the kernel runs (see :func:`_sum_product`)
_SHIFT_ABOVE = 2.0**20


def _needs_shift(unary: np.ndarray, pairwise: np.ndarray) -> bool:
    """Whether some finite score is large enough in magnitude to cost accuracy (or overflow) unshifted."""
    return any(bool(np.any(np.isfinite(a) & (np.abs(a) > _SHIFT_ABOVE))) for a in (unary, pairwise))


def _row_max(a: np.ndarray, axes) -> np.ndarray:
    """The largest finite entry over ``axes`` (0 where there is none: all ``-inf``)."""
    top = np.max(np.where(np.isfinite(a), a, -np.inf), axis=axes, initial=-np.inf)
    return np.where(np.isfinite(top), top, 0.0)


def _shift(unary: np.ndarray, pairwise: np.ndarray, r: _Rooted):
    """Every unary row and pairwise table shifted to a largest finite entry of 0, and each node's share of
    the shifts (node i: its row's, plus its parent edge's table's), whose sum over a tree is added to its
    ``log Z``. A finite entry more than the float64 range below its table's maximum becomes ``-inf``: its
    weight ``exp(entry - max)`` is 0 in float64 either way."""
    cu = _row_max(unary, 1)
    cp = _row_max(pairwise, (1, 2)) if pairwise.size else np.zeros(pairwise.shape[0])
    with np.errstate(over="ignore", invalid="ignore"):
        u = unary - cu[:, None]
        pw = pairwise - cp[:, None, None]
    share = cu.copy()
    child = np.flatnonzero(r.parent >= 0)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow here is refused with log Z
        share[child] += cp[r.edge[child]]  # each edge is the parent edge of exactly one node
    return u, pw, share


def _sum_product(unary, pairwise, r: _Rooted):
    """Node and edge marginals and per-node log-normalizer contributions (their sum is log Z), by the
    compiled kernel :func:`tractable.bp._kernels.tree_sum_product`.

    Scores larger in magnitude than :data:`_SHIFT_ABOVE` (about 1e6) are first shifted by the largest
    finite entry of each unary row and pairwise table (:func:`_shift`), so that every sum the kernel
    forms is at most 0: none overflows to ``inf`` (two scores near 1e308 would, and ``inf - inf`` is
    NaN), and a huge reward does not swallow the O(1) differences added to it (``1e15 + 0.3`` keeps
    only 0.25 of the 0.3); the shifts come back in the contributions. Finite scores of any magnitude thus
    give finite marginals, exact to rounding whenever the huge scores cancel in the labellings that
    matter. Where they do not (labellings whose scores differ by O(1) but are each a sum of huge terms),
    no float64 algorithm can do better than the absolute error of adding those terms (about ``2.2e-16``
    times their magnitude, in log space).
    """
    n, k = unary.shape
    share = None
    if _needs_shift(unary, pairwise):
        unary, pairwise, share = _shift(unary, pairwise, r)
    node_m = np.empty((n, k))
    edge_m = np.zeros(pairwise.shape)
    contrib = np.zeros(n)
    ok = _kernels.tree_sum_product(
        r.order, r.parent, r.edge, r.child_is_v, np.ascontiguousarray(unary, dtype=np.float64),
        np.ascontiguousarray(pairwise, dtype=np.float64).reshape(-1), node_m, edge_m.reshape(-1), contrib,
        np.zeros((5 * n + 1, k)),
    )  # fmt: skip
    if not ok:
        if share is not None:  # every labelling's shifted score overflowed to -inf: not (known to be) a model error
            raise _out_of_range()
        raise _no_mass()
    if share is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            contrib = contrib + share
    return node_m, edge_m, contrib


def _out_of_range() -> ValueError:
    return ValueError(
        "`unary` and `pairwise` must hold finite scores within float64's range of each other (differences "
        "below about 1.8e308, which sum-product forms); got scores so far apart that every labelling's score "
        "overflowed: rescale them."
    )


def _check_log_partition(logz, name: str = "`unary` and `pairwise`"):
    """Refuse a ``log Z`` beyond float64's range (finite scores summing past about 1.8e308)."""
    if not np.all(np.isfinite(logz)):
        raise ValueError(
            f"{name} must keep the log partition function within float64's range (about 1.8e308); got scores "
            "whose sum over the best labelling overflows: rescale them."
        )


def _sum_product_python(unary, pairwise, r: _Rooted):
    """The readable twin of the compiled kernel: the same passes, one tree level per array operation."""
    n, k = unary.shape
    inc = _Incoming(n, k)
    contrib = np.zeros(n)
    up_msg = np.zeros((n, k))  # message node -> parent (normalized)
    for nodes in reversed(r.levels[1:]):
        below = unary[nodes] + inc.total(nodes)  # (L, k)
        psi = _oriented(pairwise, r, nodes)  # (L, k_parent, k_child)
        m = logsumexp(psi + below[:, None, :], axis=2)  # (L, k_parent)
        z = logsumexp(m, axis=1)
        if np.any(z == -np.inf):
            raise _no_mass()
        m = m - z[:, None]
        contrib[nodes] = z
        up_msg[nodes] = m
        inc.add(r.parent[nodes], m)
    roots = r.levels[0]
    root_b = unary[roots] + inc.total(roots)
    zr = logsumexp(root_b, axis=1)
    if np.any(zr == -np.inf):
        raise _no_mass()
    contrib[roots] = zr
    down = np.zeros((n, k))  # message parent -> node (normalized), 0 for roots
    for nodes in r.levels[1:]:
        p = r.parent[nodes]
        cavity = unary[p] + down[p] + inc.without(p, up_msg[nodes])  # parent's belief without this child
        psi = _oriented(pairwise, r, nodes)
        d = logsumexp(psi + cavity[:, :, None], axis=1)  # (L, k_child)
        down[nodes] = d - logsumexp(d, axis=1, keepdims=True)
    belief = unary + inc.total() + down
    node_m = np.exp(belief - logsumexp(belief, axis=1, keepdims=True))
    edge_m = np.zeros(pairwise.shape)
    nodes = np.flatnonzero(r.parent >= 0)
    if nodes.size:
        p = r.parent[nodes]
        cavity = unary[p] + down[p] + inc.without(p, up_msg[nodes])
        below = unary[nodes] + inc.total(nodes)
        joint = cavity[:, :, None] + _oriented(pairwise, r, nodes) + below[:, None, :]  # [y_parent, y_child]
        flat = joint.reshape(joint.shape[0], -1)
        pj = np.exp(flat - logsumexp(flat, axis=1, keepdims=True)).reshape(joint.shape)
        flip = ~r.child_is_v[nodes]
        pj[flip] = np.swapaxes(pj[flip], 1, 2)  # back to [y_u, y_v] of the edge as given
        edge_m[r.edge[nodes]] = pj
    return node_m, edge_m, contrib


def _check(unary, edges, pairwise):
    u = as_float_array(unary, "unary", ndim=2)
    n, k = u.shape
    if n < 1 or k < 1:
        raise ValueError(f"`unary` must have shape (N, k) with N >= 1 and k >= 1; got {u.shape}.")
    e = check_forest(edges, n, "edges")
    pw = as_float_array(pairwise, "pairwise")
    if pw.shape != (e.shape[0], k, k):
        raise ValueError(
            f"`pairwise` must have shape ({e.shape[0]}, {k}, {k}) (one k x k table per edge); got {pw.shape}."
        )
    return u, e, pw


def tree_marginals(unary, edges, pairwise) -> TreeMarginals:
    """Exact node and edge marginals and ``log Z`` of a forest-structured pairwise model (sum-product).

    Parameters
    ----------
    unary : array_like of shape (N, k)
        Node log-potentials (scores); ``-inf`` forbids a label.
    edges : array_like of shape (E, 2)
        The edges of a forest over ``0 .. N-1`` (no cycles, no self loops).
    pairwise : array_like of shape (E, k, k)
        ``pairwise[e, a, b]`` scores ``y_u = a, y_v = b`` for ``edges[e] = (u, v)``.

    Returns
    -------
    TreeMarginals
        ``marginals`` (N, k), ``edge_marginals`` (E, k, k), ``log_partition``.

    Raises
    ------
    ValueError
        Shapes, NaN / ``+inf``, or edges that are not a forest.
    ZeroPartitionError
        Every labelling scores ``-inf``.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.bp import tree_marginals
    >>> res = tree_marginals(np.zeros((3, 2)), [[0, 1], [1, 2]], np.tile(np.eye(2), (2, 1, 1)))  # agreeing chain
    >>> res.marginals[0].round(3), round(float(np.exp(res.log_partition)), 4)  # 2 e^2 + 4 e + 2
    (array([0.5, 0.5]), 27.6512)
    """
    t0 = time.perf_counter()
    u, e, pw = _check(unary, edges, pairwise)
    node_m, edge_m, contrib = _sum_product(u, pw, _root(e, u.shape[0]))
    with np.errstate(over="ignore", invalid="ignore"):
        logz = float(contrib.sum())
    _check_log_partition(logz)
    return TreeMarginals(
        marginals=frozen_array(node_m),
        edge_marginals=frozen_array(edge_m),
        log_partition=logz,
        time=time.perf_counter() - t0,
        method="tree_marginals",
        message=stop_message(OPTIMAL, "tree_marginals", 0),
    )


class CompiledForest:
    """The validated, rooted union of ``B`` forests over ``N`` nodes each, built once and reused.

    Internal callers that run sum-product many times on the same structures with changing scores
    (training a tree CRF by L-BFGS) compile the structures once and call :func:`forest_marginals`,
    skipping validation and rooting on every call.
    """

    def __init__(self, edges, n: int):
        parts = [check_forest(e, n, f"edges[{i}]") for i, e in enumerate(edges)]
        self.n, self.n_models = n, len(parts)
        self.sizes = np.array([p.shape[0] for p in parts], dtype=np.int64)
        union = [p + i * n for i, p in enumerate(parts)]
        self.edges = np.concatenate(union) if union else np.zeros((0, 2), np.int64)
        self.rooted = _root(self.edges, n * len(parts))


def forest_marginals(forest: CompiledForest, unary: np.ndarray, pairwise: np.ndarray):
    """Sum-product on a :class:`CompiledForest` without checks or copies.

    Parameters
    ----------
    unary : ndarray of shape (B, N, k)
    pairwise : ndarray of shape (sum_b E_b, k, k)
        The models' edge tables, concatenated in model order.

    Returns
    -------
    marginals : ndarray of shape (B, N, k)
    edge_marginals : ndarray of shape (sum_b E_b, k, k)
    log_partition : ndarray of shape (B,)
    """
    b, n, k = unary.shape
    node_m, edge_m, contrib = _sum_product(unary.reshape(b * n, k), pairwise, forest.rooted)
    return node_m.reshape(b, n, k), edge_m, contrib.reshape(b, n).sum(axis=1)


def tree_marginals_batch(unary, edges, pairwise) -> TreeMarginalsBatch:
    """:func:`tree_marginals` of ``B`` models at once (one vectorized pass over the union of their forests).

    Parameters
    ----------
    unary : array_like of shape (B, N, k)
    edges : sequence of B arrays of shape (E_b, 2), or array_like of shape (B, E, 2)
        Each model's own forest (evidence-specific structures differ per model).
    pairwise : sequence of B arrays of shape (E_b, k, k), or array_like of shape (B, E, k, k)

    Returns
    -------
    TreeMarginalsBatch
        ``marginals`` (B, N, k), ``edge_marginals`` ((B, E, k, k) or a tuple), ``log_partition`` (B,).
    """
    t0 = time.perf_counter()
    u = as_float_array(unary, "unary", ndim=3)
    b, n, k = u.shape
    if len(edges) != b or len(pairwise) != b:
        raise ValueError(
            f"`edges` and `pairwise` must have one entry per model ({b}); got {len(edges)} and {len(pairwise)}."
        )
    all_e, all_pw, sizes = [], [], []
    for i in range(b):
        ei = check_forest(edges[i], n, f"edges[{i}]")
        pwi = as_float_array(pairwise[i], f"pairwise[{i}]")
        if pwi.shape != (ei.shape[0], k, k):
            raise ValueError(f"`pairwise[{i}]` must have shape ({ei.shape[0]}, {k}, {k}); got {pwi.shape}.")
        all_e.append(ei + i * n)
        all_pw.append(pwi)
        sizes.append(ei.shape[0])
    e = np.concatenate(all_e) if all_e else np.zeros((0, 2), np.int64)
    pw = np.concatenate(all_pw) if all_pw else np.zeros((0, k, k))
    node_m, edge_m, contrib = _sum_product(u.reshape(b * n, k), pw, _root(e, b * n))
    with np.errstate(over="ignore", invalid="ignore"):
        logz = contrib.reshape(b, n).sum(axis=1)
    _check_log_partition(logz)
    splits = np.cumsum(sizes)[:-1]
    parts = np.split(edge_m, splits)
    edge_out = frozen_array(np.stack(parts)) if len(set(sizes)) == 1 else tuple(frozen_array(p) for p in parts)
    return TreeMarginalsBatch(
        marginals=frozen_array(node_m.reshape(b, n, k)),
        edge_marginals=edge_out,
        log_partition=frozen_array(logz),
        time=time.perf_counter() - t0,
        method="tree_marginals_batch",
        message=stop_message(OPTIMAL, "tree_marginals_batch", 0),
    )


def tree_map(unary, edges, pairwise) -> MAPResult:
    """A maximizing labelling of a forest-structured pairwise model (max-product with backtracking).

    Parameters and shapes as :func:`tree_marginals`. Ties go to the smaller label.

    Returns
    -------
    MAPResult
        ``assignment`` (N,) int64 and its ``score``.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.bp import tree_map
    >>> res = tree_map([[0.0, 1.0], [0.5, 0.0]], [[0, 1]], [[[1.0, 0.0], [0.0, 1.0]]])
    >>> res.assignment.tolist(), res.score
    ([1, 1], 2.0)
    """
    t0 = time.perf_counter()
    u, e, pw = _check(unary, edges, pairwise)
    n, k = u.shape
    r = _root(e, n)
    su, spw = (_shift(u, pw, r)[:2]) if _needs_shift(u, pw) else (u, pw)  # no sum overflows to inf
    inc = _Incoming(n, k)
    back = np.zeros((n, k), dtype=np.int64)  # best child label given the parent's label
    for nodes in reversed(r.levels[1:]):
        below = su[nodes] + inc.total(nodes)
        scores = _oriented(spw, r, nodes) + below[:, None, :]  # [y_parent, y_child]
        back[nodes] = np.argmax(scores, axis=2)
        inc.add(r.parent[nodes], np.max(scores, axis=2))
    y = np.zeros(n, dtype=np.int64)
    roots = r.levels[0]
    y[roots] = np.argmax(su[roots] + inc.total(roots), axis=1)
    for nodes in r.levels[1:]:
        y[nodes] = back[nodes, y[r.parent[nodes]]]
    terms = np.concatenate([u[np.arange(n), y], pw[np.arange(e.shape[0]), y[e[:, 0]], y[e[:, 1]]]])
    with np.errstate(over="ignore", invalid="ignore"):
        score = float(terms.sum())
    if np.isneginf(terms).any():
        raise _no_mass()
    if not np.isfinite(score):  # finite terms whose sum overflows (or whose partial sums did)
        raise ValueError(
            "`unary` and `pairwise` must give the best labelling a score within float64's range (about "
            f"1.8e308); its terms sum to {score}: rescale them."
        )
    return MAPResult(
        assignment=frozen_array(y),
        score=score,
        time=time.perf_counter() - t0,
        method="tree_map",
        message=stop_message(OPTIMAL, "tree_map", 0),
    )
