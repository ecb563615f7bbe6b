"""The binary tree of count variables and its sum-product / max-product passes.

A tree has ``n_leaves`` leaves (the binary variables y, nodes ``0 .. n_leaves - 1``) and internal
nodes ``z_p = z_left + z_right`` (Sec. 5.1 of Tarlow et al. 2012). Nodes are grouped by height;
all nodes of one height are processed together, their messages stacked in one 2-D array (rows
padded with zeros to the longest count range of that height), so one level costs one batched
convolution. Messages are kept as (row normalized to maximum 1, log scale).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._count_tree import NO_CONFIGURATION, BinaryTree
from .._errors import ZeroPartitionError
from ._convolve import DEFAULT_CROSSOVER, convolve_rows, correlate_rows
from ._kernels import MAXPLUS, direct_rows


@dataclass
class Messages:
    """Messages of one pass: per height, (rows normalized to max 1, log scale per row)."""

    vec: list
    scale: list


def _gather(tree: BinaryTree, msgs: Messages, nodes: np.ndarray, width: int):
    """Stack the messages of ``nodes`` (any heights) into an (n, width) array and their scales."""
    out = np.zeros((nodes.shape[0], width))
    sc = np.empty(nodes.shape[0])
    hs = tree.height[nodes]
    for g in np.unique(hs):
        sel = np.nonzero(hs == g)[0]
        rows = tree.row[nodes[sel]]
        w = min(width, msgs.vec[g].shape[1])
        out[sel, :w] = msgs.vec[g][rows, :w]
        sc[sel] = msgs.scale[g][rows]
    return out, sc


def _normalize_rows(x: np.ndarray, scale: np.ndarray, *, allow_zero: bool = False):
    mx = x.max(axis=1)
    bad = ~(mx > 0)
    if bad.any():
        if not allow_zero:
            raise ZeroPartitionError(NO_CONFIGURATION + ".")
        mx = np.where(bad, 1.0, mx)
    x /= mx[:, None]
    scale = scale + np.log(mx)
    if bad.any():
        scale[bad] = -np.inf
    return x, scale


def _apply_potential(x: np.ndarray, scale: np.ndarray, pot: np.ndarray | None):
    """Multiply rows by exp(pot) in log space (pot: (n, w) or None), renormalizing.

    Each row of ``pot`` is shifted by its largest finite entry before ``log(x)`` is added, and the shift
    goes to the row's scale: a potential near 1e300 would otherwise swallow the O(1) ``log(x)`` (the
    multiplicities of the counts: ``1e300 + log 2 == 1e300``)."""
    if pot is None:
        return x, scale
    top = np.max(pot, axis=1, initial=-np.inf)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore", over="ignore"):  # an entry 2e308 below its row's top weighs 0 either way
        lx = np.log(x) + (pot - top[:, None])
    m = lx.max(axis=1)
    if not np.all(m > -np.inf):
        raise ZeroPartitionError(NO_CONFIGURATION + ".")
    x = np.exp(lx - m[:, None])
    with np.errstate(over="ignore", invalid="ignore"):  # a log Z beyond float64's range is refused by the caller
        return x, scale + (top + m)


def upward(
    tree: BinaryTree,
    leaf_logw: np.ndarray,
    potentials: dict | None = None,
    *,
    method: str = "auto",
    crossover: int = DEFAULT_CROSSOVER,
) -> Messages:
    """Upward (inward) sum-product pass.

    leaf_logw : (n_leaves, 2) log weights of y = 0 / 1. potentials : {height: (n_h, w_h) log
    potentials of the nodes of that height, or None}. Returns the upward messages, potentials
    included.
    """
    potentials = potentials or {}
    m = leaf_logw.max(axis=1)
    vec0 = np.exp(leaf_logw - m[:, None])
    vec0, sc0 = _apply_potential(vec0, m, potentials.get(0))
    msgs = Messages([vec0], [sc0])
    for h in range(1, len(tree.levels)):
        nodes = tree.levels[h]
        lc, rc = tree.left[nodes], tree.right[nodes]
        wc = int(max(tree.size[lc].max(), tree.size[rc].max())) + 1
        a, sa = _gather(tree, msgs, lc, wc)
        b, sb = _gather(tree, msgs, rc, wc)
        x = convolve_rows(a, b, method=method, crossover=crossover)[:, : tree.widths[h]]
        x = np.ascontiguousarray(x)
        sizes = tree.size[nodes]
        if np.any(sizes + 1 < x.shape[1]):
            x[np.arange(x.shape[1])[None, :] > sizes[:, None]] = 0.0
        x, sc = _normalize_rows(x, sa + sb)
        x, sc = _apply_potential(x, sc, potentials.get(h))
        msgs.vec.append(x)
        msgs.scale.append(sc)
    return msgs


def downward(
    tree: BinaryTree,
    up: Messages,
    root_out_log: np.ndarray | None = None,
    potentials: dict | None = None,
    *,
    method: str = "auto",
    crossover: int = DEFAULT_CROSSOVER,
) -> Messages:
    """Downward (outward) pass: the message into each node from above, potentials excluded.

    root_out_log : (size_root + 1,) log message into the root (None: all zeros, i.e. ones).
    """
    potentials = potentials or {}
    n_h = len(tree.levels)
    out = Messages([None] * n_h, [None] * n_h)
    w_root = tree.widths[-1]
    if root_out_log is None:
        vec = np.ones((1, w_root))
        sc = np.zeros(1)
    else:
        mx = np.max(root_out_log)
        if not mx > -np.inf:
            raise ZeroPartitionError(NO_CONFIGURATION + ".")
        vec = np.exp(root_out_log - mx)[None, :w_root].copy()
        sc = np.array([mx])
    out.vec[n_h - 1] = vec
    out.scale[n_h - 1] = sc
    for g in range(n_h - 1):
        out.vec[g] = np.zeros_like(up.vec[g])
        out.scale[g] = np.full(up.vec[g].shape[0], -np.inf)
    for h in range(n_h - 1, 0, -1):
        nodes = tree.levels[h]
        a = out.vec[h]
        sa = out.scale[h]
        a, sa = _apply_potential(a, sa, potentials.get(h))
        lc, rc = tree.left[nodes], tree.right[nodes]
        wc = int(max(tree.size[lc].max(), tree.size[rc].max())) + 1
        ul, sl = _gather(tree, up, lc, wc)
        ur, sr = _gather(tree, up, rc, wc)
        aa = np.concatenate([a, a])
        bb = np.concatenate([ur, ul])
        x = correlate_rows(aa, bb, wc, method=method, crossover=crossover)
        x, sc = _normalize_rows(x, np.concatenate([sa + sr, sa + sl]), allow_zero=True)
        children = np.concatenate([lc, rc])
        hs = tree.height[children]
        for g in np.unique(hs):
            sel = np.nonzero(hs == g)[0]
            rows = tree.row[children[sel]]
            w = min(wc, out.vec[g].shape[1])
            out.vec[g][rows, :w] = x[sel, :w]
            out.scale[g][rows] = sc[sel]
    return out


def upward_max(tree: BinaryTree, leaf_logw: np.ndarray, potentials: dict | None = None) -> list:
    """Upward max-product pass in log space (max-plus convolutions); returns per-height arrays."""
    potentials = potentials or {}
    msgs = [leaf_logw + (potentials[0] if potentials.get(0) is not None else 0.0)]
    for h in range(1, len(tree.levels)):
        nodes = tree.levels[h]
        lc, rc = tree.left[nodes], tree.right[nodes]
        wc = int(max(tree.size[lc].max(), tree.size[rc].max())) + 1
        a = _gather_log(tree, msgs, lc, wc)
        b = _gather_log(tree, msgs, rc, wc)
        x = direct_rows(a, b, np.full((a.shape[0], 2 * wc - 1), -np.inf), MAXPLUS)[:, : tree.widths[h]].copy()
        if potentials.get(h) is not None:
            x = x + potentials[h]
        msgs.append(x)
    return msgs


def _gather_log(tree: BinaryTree, msgs: list, nodes: np.ndarray, width: int):
    out = np.full((nodes.shape[0], width), -np.inf)
    hs = tree.height[nodes]
    for g in np.unique(hs):
        sel = np.nonzero(hs == g)[0]
        w = min(width, msgs[g].shape[1])
        out[sel, :w] = msgs[g][tree.row[nodes[sel]], :w]
    return out


def backtrack_max(tree: BinaryTree, msgs: list, root_count: int) -> np.ndarray:
    """Top-down argmax split of the counts (ties to the smallest left count); returns leaf states."""
    counts = np.zeros(tree.n_nodes, dtype=np.int64)
    counts[tree.root] = root_count
    for h in range(len(tree.levels) - 1, 0, -1):
        nodes = tree.levels[h]
        lc, rc = tree.left[nodes], tree.right[nodes]
        wc = int(max(tree.size[lc].max(), tree.size[rc].max())) + 1
        a = _gather_log(tree, msgs, lc, wc)
        b = _gather_log(tree, msgs, rc, wc)
        c = counts[nodes]
        j = np.arange(wc)[None, :]
        idx = c[:, None] - j
        ok = (idx >= 0) & (idx < wc)
        vals = np.where(ok, a + np.take_along_axis(b, np.clip(idx, 0, wc - 1), axis=1), -np.inf)
        best = np.argmax(vals, axis=1)
        counts[lc] = best
        counts[rc] = c - best
    return counts[: tree.n_leaves]


def flat_messages(tree: BinaryTree, up: Messages):
    """Flatten upward messages for the sampling kernel: (flat, offset per node, length per node)."""
    bases = np.cumsum([0] + [v.size for v in up.vec])
    flat = np.concatenate([v.ravel() for v in up.vec])
    offset = bases[tree.height] + tree.row * np.asarray(tree.widths)[tree.height]
    length = tree.size + 1
    return flat, offset.astype(np.int64), length.astype(np.int64)


def internal_order(tree: BinaryTree) -> np.ndarray:
    """Internal nodes, parents before children (root first)."""
    if len(tree.levels) <= 1:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(tree.levels[:0:-1]).astype(np.int64)
