"""The ``"blocks"`` schedule of loopy BP: forests of pairwise factors updated by one exact sweep each.

The pairwise (two-variable) table factors of a graph are split once into a *spanning forest* and the
rest (:func:`spanning_forest`: greedy in factor order, each factor kept when it joins two trees of the
factors kept before it, so the rest are exactly the factors that close cycles). Every iteration of
:func:`tractable.bp.loopy` with ``schedule="blocks"`` then updates the factors outside the forest as the
parallel schedule does, and the forest's factors all at once by a two-pass sweep over its trees
(:func:`tractable.bp._kernels.forest_messages`) with everything else as the variables' evidence: the
prior (single-variable tables) plus the messages just computed by the other factors. Given that
evidence, the sweep's messages are the forest's converged BP messages, so information crosses a whole
tree in one iteration instead of one edge.

:class:`Forest` holds the rooted forest as flat arrays (built once per call, by
:func:`compile_forest`); :func:`forest_messages_python` is the readable NumPy twin of the compiled
sweep (one tree level per array operation), kept as its reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, connected_components, minimum_spanning_tree

from .._errors import ZeroPartitionError
from .._logspace import logsumexp
from . import _kernels
from .tree import _Incoming

__all__ = ["Forest", "compile_forest", "forest_messages_python", "spanning_forest"]


def spanning_forest(u: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """Which edges ``(u[i], v[i])`` of a multigraph over ``n`` nodes a greedy spanning forest keeps, in order.

    Edge ``i`` is kept when it joins two components of the edges kept before it (union-find in the given
    order): the kept edges form a maximal spanning forest and every other edge closes a cycle with them
    (a repeated pair or a self loop included).

    Parameters
    ----------
    u, v : ndarray of int64, shape (E,)
    n : int

    Returns
    -------
    ndarray of bool, shape (E,)

    Notes
    -----
    Kruskal's algorithm with weight ``i + 1`` for edge ``i`` (``scipy.sparse.csgraph.minimum_spanning_tree``,
    compiled): with distinct weights the minimum spanning forest is unique and is the greedy one, so no
    Python loop runs over the edges. A repeated pair keeps its first edge only (a sparse matrix would sum
    them). O(E log E).
    """
    e = u.shape[0]
    keep = np.zeros(e, dtype=bool)
    if e == 0:
        return keep
    lo = np.minimum(u, v).astype(np.int64)
    hi = np.maximum(u, v).astype(np.int64)
    key = lo * n + hi
    _, first = np.unique(key, return_index=True)  # the first edge of each pair of nodes
    first = first[lo[first] != hi[first]]  # self loops close a cycle at once
    graph = sp.csr_matrix((first.astype(np.float64) + 1.0, (lo[first], hi[first])), shape=(n, n))
    tree = minimum_spanning_tree(graph).tocoo()
    keep[np.rint(tree.data).astype(np.int64) - 1] = True
    return keep


@dataclass(frozen=True)
class Forest:
    """A spanning forest of pairwise factors, rooted, and what one sweep over it needs (private, writable).

    Attributes
    ----------
    parent : ndarray of int64, shape (N,)
        The forest's ``N`` nodes are the variables of its factors, numbered breadth first (every parent before
        its children, so that the sweeps read their rows one after the other); ``-1`` for roots.
    var : ndarray of int64, shape (N,)
        Each node's variable.
    edge : ndarray of int64, shape (2 N,)
        A non-root ``c``'s parent factor's edge to the parent's variable (``edge[c]``) and to ``c``'s
        (``edge[N + c]``); ``-1`` for roots.
    psi : ndarray of shape (2 N, K, K)
        A non-root's parent factor's log table as ``[y_parent, y_c]`` (``psi[c]``) and as ``[y_c, y_parent]``
        (``psi[N + c]``), ``-inf`` past the cardinalities.
    texp : ndarray of shape (2 N, K, K)
        ``exp(psi - its largest finite entry)`` (sum-product's weights).
    ev_ptr, ev_edges : ndarray of int64, shapes (n + 1,) and (n_edges - 2 F,)
        The edges of the factors outside the forest, by variable (``var_ptr``, ``var_edges`` of
        :class:`~tractable.bp._wiring.Wiring` without the forest's edges): what the evidence sums.
    hfin, hninf, work : ndarray
        Scratch: the evidence (n, K) as a finite part and a count of ``-inf`` terms, and the sweep's (6 N + 1, K).
    """

    parent: np.ndarray
    var: np.ndarray
    edge: np.ndarray
    psi: np.ndarray
    texp: np.ndarray
    ev_ptr: np.ndarray
    ev_edges: np.ndarray
    hfin: np.ndarray
    hninf: np.ndarray
    work: np.ndarray

    def evidence(self, ws) -> None:
        """``hfin``, ``hninf``: each variable's prior plus its messages ``ws.new`` from the factors off the forest."""
        _kernels.var_beliefs(self.ev_ptr, self.ev_edges, ws.prior_fin, ws.prior_ninf, ws.new, self.hfin, self.hninf)

    def update(self, ws) -> float:
        """The forest's new messages, damped, into ``ws.new`` / ``ws.new_p`` (:func:`_kernels.forest_messages`)
        given the evidence of ``ws.new``'s other rows; returns the largest change ``|new_p - nu_p|`` of its rows
        (sum-product; max-product: 0, the engine computes it for every row).

        Raises
        ------
        ZeroPartitionError
            A tree, given its evidence, has no configuration of positive mass.
        """
        self.evidence(ws)
        ok, residual = _kernels.forest_messages(
            self.parent, self.var, self.edge, self.psi, self.texp, self.hfin, self.hninf, ws.nu, ws.nu_p, ws.new,
            ws.new_p, ws.kind == "max", ws.damping, self.work,
        )  # fmt: skip
        if not ok:
            raise _no_mass()
        return float(residual)


def _rooted(edges: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A forest over ``n`` nodes rooted at the smallest node of each tree: ``(order, parent, edge, child_is_v)``,
    ``order`` breadth first (every parent before its children), ``parent`` -1 for roots, ``edge`` the index
    of each node's edge to its parent (-1 for roots) and ``child_is_v`` whether the node is that edge's second
    end. One breadth-first search from a virtual node joined to every tree (scipy), as
    :func:`tractable.bp.tree._root` does, without its levels (a sweep needs only the order)."""
    e = edges.shape[0]
    g = sp.csr_matrix((np.ones(2 * e), (np.r_[edges[:, 0], edges[:, 1]], np.r_[edges[:, 1], edges[:, 0]])), (n, n))
    n_comp, comp = connected_components(g, directed=False)
    first = np.full(n_comp, n, dtype=np.int64)
    np.minimum.at(first, comp, np.arange(n))
    virt = sp.csr_matrix((np.ones(n_comp), (np.full(n_comp, n), first)), (n + 1, n + 1))
    full = sp.bmat([[g, None], [None, sp.csr_matrix((1, 1))]], format="csr") + virt + virt.T
    order, pred = breadth_first_order(full, n, directed=False, return_predecessors=True)
    order = order[1:].astype(np.int64)  # without the virtual root
    parent = pred[:n].astype(np.int64)
    parent[parent == n] = -1
    key = np.minimum(edges[:, 0], edges[:, 1]) * (n + 1) + np.maximum(edges[:, 0], edges[:, 1])
    srt = np.argsort(key)
    nodes = np.flatnonzero(parent >= 0)
    want = np.minimum(nodes, parent[nodes]) * (n + 1) + np.maximum(nodes, parent[nodes])
    edge = np.full(n, -1, dtype=np.int64)
    edge[nodes] = srt[np.searchsorted(key[srt], want)]
    child_is_v = np.zeros(n, dtype=bool)
    child_is_v[nodes] = edges[edge[nodes], 1] == nodes
    return order, parent, edge, child_is_v


def _no_mass() -> ZeroPartitionError:
    return ZeroPartitionError(
        "no configuration has non-zero probability: a tree of pairwise factors, given its variables' other "
        "messages, forbids every state of a variable."
    )


def compile_forest(wiring) -> Forest:
    """Root the forest of ``wiring.blocks`` (a :class:`~tractable.bp._wiring.Wiring` compiled with ``blocks=True``)
    at the smallest variable of each tree and lay it out for :func:`_kernels.forest_messages` (vectorized)."""
    gi, tables = wiring.blocks
    eids = wiring.groups[gi][2].reshape(-1, 2)  # (F, 2): the edges of each factor's two table axes
    f = eids.shape[0]
    k = wiring.width
    ends = wiring.edge_var[eids]
    nodes, local = np.unique(ends, return_inverse=True)
    local = local.reshape(f, 2).astype(np.int64)
    n = nodes.shape[0]
    order, r_parent, r_edge, r_is_v = _rooted(local, n)
    # nodes renumbered in traversal order: the sweeps then read their rows in sequence
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    up = r_parent[order]
    parent = np.where(up >= 0, rank[np.maximum(up, 0)], -1)
    child = np.flatnonzero(parent >= 0)
    fac = r_edge[order[child]]
    is_v = r_is_v[order[child]]  # the node is the table's second axis: the table reads [parent, node]
    psi = np.zeros((2 * n, k, k))
    psi[child] = np.where(is_v[:, None, None], tables[fac], np.swapaxes(tables[fac], 1, 2))
    psi[n + child] = np.swapaxes(psi[child], 1, 2)
    edge = np.full(2 * n, -1, dtype=np.int64)
    edge[child] = np.where(is_v, eids[fac, 0], eids[fac, 1])
    edge[n + child] = np.where(is_v, eids[fac, 1], eids[fac, 0])
    top = np.max(np.where(np.isfinite(psi), psi, -np.inf), axis=(1, 2), initial=-np.inf)
    with np.errstate(invalid="ignore"):
        texp = np.exp(psi - np.where(np.isfinite(top), top, 0.0)[:, None, None])
    outside = np.ones(wiring.edge_var.shape[0], dtype=bool)
    outside[eids.reshape(-1)] = False
    ev_edges = wiring.var_edges[outside[wiring.var_edges]]  # still grouped by variable, in edge order
    ev_ptr = np.zeros(wiring.cardinalities.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(wiring.edge_var[outside], minlength=ev_ptr.shape[0] - 1), out=ev_ptr[1:])
    shape = wiring.prior.shape
    return Forest(
        parent=np.ascontiguousarray(parent, dtype=np.int64),
        var=np.ascontiguousarray(nodes[order], dtype=np.int64),
        edge=edge,
        psi=np.ascontiguousarray(psi, dtype=np.float64),
        texp=np.ascontiguousarray(texp, dtype=np.float64),
        ev_ptr=ev_ptr,
        ev_edges=np.ascontiguousarray(ev_edges, dtype=np.int64),
        hfin=np.empty(shape),
        hninf=np.empty(shape),
        work=np.empty((6 * n + 1, k)),
    )


def _normalized(x: np.ndarray, kind: str) -> np.ndarray:
    top = logsumexp(x, axis=1, keepdims=True) if kind == "sum" else np.max(x, axis=1, keepdims=True)
    if np.any(np.isneginf(top)):
        raise _no_mass()
    return x - top


def forest_messages_python(forest: Forest, hfin: np.ndarray, hninf: np.ndarray, kind: str):
    """The readable twin of :func:`_kernels.forest_messages`, undamped, in log space: the same two passes, one
    tree level per array operation.

    Parameters
    ----------
    forest : Forest
    hfin, hninf : ndarray of shape (n, K)
        The variables' evidence as a finite part and a count of ``-inf`` terms.
    kind : {"sum", "max"}

    Returns
    -------
    up, down : ndarray of shape (N, K)
        Each non-root node's parent factor's normalized message to the parent's variable (``up``, for edge
        ``edge[c]``) and to the node's (``down``, for ``edge[N + c]``); rows of roots are 0.
    """
    op = logsumexp if kind == "sum" else np.max
    depth = np.zeros(forest.parent.shape[0], dtype=np.int64)
    for c in np.flatnonzero(forest.parent >= 0).tolist():  # parents come first
        depth[c] = depth[forest.parent[c]] + 1
    levels = [np.flatnonzero(depth == d) for d in range(int(depth.max(initial=0)) + 1)]
    h = np.where(hninf[forest.var] > 0, -np.inf, hfin[forest.var])
    n, k = h.shape
    psi = forest.psi[:n]  # [y_parent, y_node]
    inc = _Incoming(n, k)
    up = np.zeros((n, k))
    down = np.zeros((n, k))
    for nodes in reversed(levels[1:]):
        below = h[nodes] + inc.total(nodes)
        up[nodes] = _normalized(op(psi[nodes] + below[:, None, :], axis=2), kind)
        inc.add(forest.parent[nodes], up[nodes])
    for nodes in levels[1:]:
        p = forest.parent[nodes]
        cavity = h[p] + down[p] + inc.without(p, up[nodes])  # the parent's evidence without this child
        down[nodes] = _normalized(op(psi[nodes] + cavity[:, :, None], axis=1), kind)
    return up, down
