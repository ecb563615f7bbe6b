"""Checks and traversal orders of forests given as edge lists (tree models, tree BP, tree CRFs)."""

from __future__ import annotations

import numpy as np

from ._validate import as_index_array

__all__ = ["check_forest", "traversal"]


def check_forest(edges, n: int, name: str = "edges") -> np.ndarray:
    """Validate ``edges`` as an ``(E, 2)`` int64 edge list of a forest over ``n`` nodes.

    Raises
    ------
    ValueError
        Wrong shape, node out of ``[0, n)``, a self loop, or an edge that closes a cycle (a repeated
        edge included); the message names ``name`` and the offending edge.
    """
    arr = np.asarray(edges)
    if arr.size == 0:
        arr = np.zeros((0, 2), dtype=np.int64)
    arr = as_index_array(arr, name, size=n, ndim=2)
    if arr.shape[1] != 2:
        raise ValueError(f"`{name}` must have shape (E, 2); got {arr.shape}.")
    loops = np.flatnonzero(arr[:, 0] == arr[:, 1])
    if loops.size:
        e = int(loops[0])
        raise ValueError(f"`{name}` must not contain self loops; got edge {e} = {arr[e].tolist()}.")
    if arr.shape[0] < n and arr.shape[0] == n - _n_components(arr, n):
        return arr  # E = n - (number of components): acyclic (the usual case: no Python loop)
    parent = np.arange(n)

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return int(a)

    for e, (u, v) in enumerate(arr.tolist()):
        ru, rv = find(u), find(v)
        if ru == rv:
            raise ValueError(f"`{name}` must form a forest; edge {e} = {[u, v]} closes a cycle.")
        parent[ru] = rv
    return arr


def _n_components(edges: np.ndarray, n: int) -> int:
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    g = sp.csr_matrix((np.ones(edges.shape[0]), (edges[:, 0], edges[:, 1])), shape=(n, n))
    return int(connected_components(g, directed=False)[0])


def traversal(edges: np.ndarray, n: int):
    """Parents-before-children order of a validated forest.

    Parameters
    ----------
    edges : ndarray of shape (E, 2)
        A forest (see :func:`check_forest`).
    n : int
        Number of nodes.

    Returns
    -------
    order : ndarray of shape (n,)
        Every node after its parent (roots first in their component, components by smallest node).
    parent : ndarray of shape (n,)
        Parent of each node, -1 for roots.
    parent_edge : ndarray of shape (n,)
        Index of the edge to the parent, -1 for roots.
    parent_side : ndarray of shape (n,)
        0 when the node is ``edges[parent_edge, 1]`` (the parent is column 0), 1 otherwise.
    """
    adj: list = [[] for _ in range(n)]
    for e, (u, v) in enumerate(np.asarray(edges).tolist()):
        adj[u].append((v, e, 0))
        adj[v].append((u, e, 1))
    seen = np.zeros(n, dtype=bool)
    order = []
    parent = np.full(n, -1, dtype=np.int64)
    parent_edge = np.full(n, -1, dtype=np.int64)
    parent_side = np.zeros(n, dtype=np.int64)
    for r in range(n):
        if seen[r]:
            continue
        seen[r] = True
        stack = [r]
        while stack:
            v = stack.pop()
            order.append(v)
            for c, e, side in adj[v]:
                if not seen[c]:
                    seen[c] = True
                    parent[c], parent_edge[c], parent_side[c] = v, e, side
                    stack.append(c)
    return np.asarray(order, dtype=np.int64), parent, parent_edge, parent_side
