"""The binary tree of count variables and its sum-product / max-product passes.

A tree has ``n_leaves`` leaves (the binary variables y, nodes ``0 .. n_leaves - 1``) and internal
nodes ``z_p = z_left + z_right`` (Sec. 5.1 of Tarlow et al. 2012). Nodes are grouped by height;
all nodes of one height are processed together, their messages stacked in one 2-D array (rows
padded to the longest count range of that height), so one level costs one batched convolution.

Sum-product messages are kept in one of two forms (:class:`Messages`):

* **linear** (the fast path): each row normalized to a maximum of 1, plus a log scale per row;
  convolutions by FFT above the crossover, direct below. Alongside every row the passes carry a
  rigorous bound on its absolute error relative to its maximum (FFT rounding and the noise floor
  that :mod:`._convolve` zeroes, underflow of tiny entries), amplified wherever a count potential or
  the downward correlation makes a small entry the large one. :func:`sum_passes` turns these into a
  bound on every belief (``(e_up * sum(down) + e_down * sum(up)) / sum(up * down)`` per node) and
  accepts the linear passes when every bound is below :data:`BELIEF_TOL`;
* **log** (the certified fallback): rows of log-values (maximum 0) plus a log scale, convolved by
  the log-space direct kernels of :mod:`._logconv`, exact relative to every entry at any magnitude of
  the scores, at O(sum over internal nodes of w_left * w_right) cost (O(D^2) at worst). Used when the
  linear passes cannot certify their beliefs, or report no configuration of positive mass (which in
  linear space may be underflow).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._count_tree import NO_CONFIGURATION, BinaryTree
from .._errors import ZeroPartitionError
from ._convolve import DEFAULT_CROSSOVER, METHODS, convolve_rows, correlate_rows
from ._kernels import MAXPLUS, direct_rows

#: a belief (node count distribution, leaf marginal, log Z) whose certified error bound, relative to
#: the belief's total mass, exceeds this sends the passes to log space
BELIEF_TOL = 1e-8
_TINY = 1e-300  # absolute error (relative to a row's maximum 1) of an entry flushed to zero or subnormal
_FFT_FLOOR = 1e-14  # entries below this times the row maximum are zeroed after an FFT (._convolve._NOISE)
_FFT_EPS = 5e-16  # FFT rounding per log2 of the transform length, times ||a||_2 ||b||_2 (about 4.5 u)


_UNCERTIFIED = 1e100  # an error bound this large (or inf, NaN) cannot certify anything: stop the linear pass


class _Uncertified(Exception):
    """A linear pass whose error bounds already exceed any use; :func:`sum_passes` goes to log space."""


@dataclass
class Messages:
    """Messages of one pass, per height: ``vec`` rows (linear: maximum 1; log: log-values, maximum 0),
    ``scale`` the log scale of each row, ``err`` (linear form only, else None) the same shape as
    ``vec``: a bound on the absolute error of each entry, on the scale of its row, ``log`` the form."""

    vec: list
    scale: list
    err: list | None = None
    log: bool = False


def log_rows(msgs: Messages, g: int) -> np.ndarray:
    """The rows of height ``g`` as log-values, scale included (``-inf`` for zero entries)."""
    if msgs.log:
        return msgs.vec[g] + msgs.scale[g][:, None]
    with np.errstate(divide="ignore"):
        return np.log(msgs.vec[g]) + msgs.scale[g][:, None]


def _stack_rows(tree: BinaryTree, rows: list, nodes: np.ndarray, width: int, fill: float = -np.inf) -> np.ndarray:
    """The rows of ``nodes`` (any heights) from per-height arrays ``rows[h]`` stacked into an (n, width)
    array, cut or padded with ``fill`` (``-inf``: log-values, ``0``: linear values and errors)."""
    out = np.full((nodes.shape[0], width), fill)
    hs = tree.height[nodes]
    for g in np.unique(hs):
        sel = np.nonzero(hs == g)[0]
        w = min(width, rows[g].shape[1])
        out[sel, :w] = rows[g][tree.row[nodes[sel]], :w]
    return out


def _gather(tree: BinaryTree, msgs: Messages, nodes: np.ndarray, width: int):
    """Stack the messages of ``nodes`` (any heights) into an (n, width) array, their scales and their
    error bounds (log form: ``-inf`` padding, no errors)."""
    out = _stack_rows(tree, msgs.vec, nodes, width, -np.inf if msgs.log else 0.0)
    err = None if msgs.log else _stack_rows(tree, msgs.err, nodes, width, 0.0)
    sc = _stack_rows(tree, [s[:, None] for s in msgs.scale], nodes, 1, 0.0)[:, 0]
    return out, sc, err


def _normalize_rows(x: np.ndarray, scale: np.ndarray, err: np.ndarray, *, allow_zero: bool = False):
    mx = x.max(axis=1)
    bad = ~(mx > 0)
    if bad.any():
        if not allow_zero:
            raise ZeroPartitionError(NO_CONFIGURATION + ".")
        mx = np.where(bad, 1.0, mx)
    x /= mx[:, None]
    scale = scale + np.log(mx)
    with np.errstate(over="ignore"):
        err /= mx[:, None]
    if bad.any():
        scale[bad] = -np.inf
        err[bad] = np.inf  # a row computed as all zero cannot be certified
    return x, scale, err


def _apply_potential(x: np.ndarray, scale: np.ndarray, err: np.ndarray, pot: np.ndarray | None):
    """Multiply rows by exp(pot) in log space (pot: (n, w) or None), renormalizing.

    Each row of ``pot`` is shifted by its largest finite entry before ``log(x)`` is added, and the shift
    goes to the row's scale: a potential near 1e300 would otherwise swallow the O(1) ``log(x)`` (the
    multiplicities of the counts: ``1e300 + log 2 == 1e300``). Each entry's error bound is multiplied
    by the entry's own factor (a potential that favours a small, inexact entry amplifies its error)."""
    if pot is None:
        return x, scale, err
    top = np.max(pot, axis=1, initial=-np.inf)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore", over="ignore"):  # an entry 2e308 below its row's top weighs 0 either way
        lx = np.log(x) + (pot - top[:, None])
    m = lx.max(axis=1)
    if not np.all(m > -np.inf):
        raise ZeroPartitionError(NO_CONFIGURATION + ".")
    x = np.exp(lx - m[:, None])
    with np.errstate(over="ignore", invalid="ignore"):  # a log Z beyond float64's range is refused by the caller
        err = err * np.exp(pot - (top + m)[:, None]) + _TINY
        return x, scale + (top + m), err


def _products(fn, a, b, ea, eb, *args, method: str, crossover: int, fft: bool):
    """``fn(a, b)`` (convolution or correlation of rows with maximum 1) and a bound on its entries'
    absolute errors from those of ``a`` (``ea``) and ``b`` (``eb``), from the FFT (rounding of about
    5e-16 log2(n) ||a||_2 ||b||_2 at every entry, and at the entries zeroed because they came out below
    1e-14 of the row maximum, that floor) and from underflow."""
    if not (np.all(ea < _UNCERTIFIED) and np.all(eb < _UNCERTIFIED)):
        raise _Uncertified
    n = a.shape[0]
    both = fn(np.concatenate([a, ea, a]), np.concatenate([b, b, eb]), *args, method=method, crossover=crossover)
    x = np.ascontiguousarray(both[:n])
    err = both[n : 2 * n] + both[2 * n :] + _TINY * a.shape[1]
    if fft:
        # ||error||_2 <= c u log2(n) ||a||_2 ||b||_2 bounds every entry's error (c u = _FFT_EPS, generous)
        rounding = _FFT_EPS * np.log2(max(a.shape[1] + b.shape[1], 2)) * np.sqrt(np.sum(a * a, 1) * np.sum(b * b, 1))
        zeroed = np.where(x <= 0.0, _FFT_FLOOR * x.max(axis=1)[:, None], 0.0)  # true value below the noise floor
        err = err * (1 + 100 * _FFT_FLOOR) + rounding[:, None] + zeroed  # the error rows are FFT products too
    return x, err


def _upward_linear(tree, leaf_logw, potentials, method, crossover) -> Messages:
    m = leaf_logw.max(axis=1)
    vec0 = np.exp(leaf_logw - m[:, None])
    vec0, sc0, er0 = _apply_potential(vec0, m, np.zeros_like(vec0), potentials.get(0))
    msgs = Messages([vec0], [sc0], [er0])
    for h in range(1, len(tree.levels)):
        nodes = tree.levels[h]
        lc, rc = tree.left[nodes], tree.right[nodes]
        wc = int(max(tree.size[lc].max(), tree.size[rc].max())) + 1
        a, sa, ea = _gather(tree, msgs, lc, wc)
        b, sb, eb = _gather(tree, msgs, rc, wc)
        fft = METHODS[method](wc, crossover)
        x, err = _products(convolve_rows, a, b, ea, eb, method=method, crossover=crossover, fft=fft)
        x, err = np.ascontiguousarray(x[:, : tree.widths[h]]), np.ascontiguousarray(err[:, : tree.widths[h]])
        sizes = tree.size[nodes]
        if np.any(sizes + 1 < x.shape[1]):
            beyond = np.arange(x.shape[1])[None, :] > sizes[:, None]
            x[beyond] = 0.0
            err[beyond] = 0.0
        x, sc, err = _normalize_rows(x, sa + sb, err)
        x, sc, err = _apply_potential(x, sc, err, potentials.get(h))
        msgs.vec.append(x)
        msgs.scale.append(sc)
        msgs.err.append(err)
    return msgs


def _normalize_log(x: np.ndarray, scale: np.ndarray, *, allow_zero: bool = False):
    mx = x.max(axis=1)
    bad = ~(mx > -np.inf)
    if bad.any():
        if not allow_zero:
            raise ZeroPartitionError(NO_CONFIGURATION + ".")
        mx = np.where(bad, 0.0, mx)
    x -= mx[:, None]
    scale = scale + mx
    scale[bad] = -np.inf
    return x, scale


def _upward_log(tree, leaf_logw, potentials) -> Messages:
    from ._logconv import LOGCONV, log_direct_rows

    x0 = leaf_logw + (potentials[0] if potentials.get(0) is not None else 0.0)
    msgs = Messages([], [], None, log=True)
    x0, s0 = _normalize_log(np.array(x0, dtype=np.float64), np.zeros(x0.shape[0]))
    msgs.vec.append(x0)
    msgs.scale.append(s0)
    for h in range(1, len(tree.levels)):
        nodes = tree.levels[h]
        lc, rc = tree.left[nodes], tree.right[nodes]
        wc = int(max(tree.size[lc].max(), tree.size[rc].max())) + 1
        a, sa, _ = _gather(tree, msgs, lc, wc)
        b, sb, _ = _gather(tree, msgs, rc, wc)
        width = tree.widths[h]
        x = log_direct_rows(a, b, np.empty((a.shape[0], 2 * wc - 1)), LOGCONV)[:, :width].copy()
        sizes = tree.size[nodes]
        if np.any(sizes + 1 < width):
            x[np.arange(width)[None, :] > sizes[:, None]] = -np.inf
        if potentials.get(h) is not None:
            x += potentials[h]
        x, sc = _normalize_log(x, sa + sb)
        msgs.vec.append(x)
        msgs.scale.append(sc)
    return msgs


def upward(
    tree: BinaryTree,
    leaf_logw: np.ndarray,
    potentials: dict | None = None,
    *,
    method: str = "auto",
    crossover: int = DEFAULT_CROSSOVER,
    log: bool = False,
) -> Messages:
    """Upward (inward) sum-product pass, linear (with error bounds) or, with ``log=True``, in log space.

    leaf_logw : (n_leaves, 2) log weights of y = 0 / 1. potentials : {height: (n_h, w_h) log
    potentials of the nodes of that height, or None}. Returns the upward messages, potentials
    included. Raises ZeroPartitionError when a message is zero everywhere (in linear form possibly
    by underflow: :func:`upward_checked` and :func:`sum_passes` retry in log space).
    """
    potentials = potentials or {}
    if log:
        return _upward_log(tree, leaf_logw, potentials)
    return _upward_linear(tree, leaf_logw, potentials, method, crossover)


def _downward_linear(tree, up, root_out_log, potentials, method, crossover) -> Messages:
    n_h = len(tree.levels)
    out = Messages([None] * n_h, [None] * n_h, [None] * n_h)
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
    out.vec[n_h - 1], out.scale[n_h - 1], out.err[n_h - 1] = vec, sc, np.full_like(vec, _TINY)
    for g in range(n_h - 1):
        out.vec[g] = np.zeros_like(up.vec[g])
        out.scale[g] = np.full(up.vec[g].shape[0], -np.inf)
        out.err[g] = np.zeros_like(up.vec[g])  # every row is written below; beyond a node's counts both are 0
    for h in range(n_h - 1, 0, -1):
        nodes = tree.levels[h]
        a, sa, ea = _apply_potential(out.vec[h], out.scale[h], out.err[h], potentials.get(h))
        lc, rc = tree.left[nodes], tree.right[nodes]
        wc = int(max(tree.size[lc].max(), tree.size[rc].max())) + 1
        ul, sl, el = _gather(tree, up, lc, wc)
        ur, sr, er = _gather(tree, up, rc, wc)
        aa, ee = np.concatenate([a, a]), np.concatenate([ea, ea])
        fft = METHODS[method](max(aa.shape[1], wc), crossover)
        x, err = _products(
            correlate_rows,
            aa,
            np.concatenate([ur, ul]),
            ee,
            np.concatenate([er, el]),
            wc,
            method=method,
            crossover=crossover,
            fft=fft,
        )
        x, sc, err = _normalize_rows(x, np.concatenate([sa + sr, sa + sl]), err, allow_zero=True)
        _scatter(tree, out, np.concatenate([lc, rc]), wc, x, sc, err)
    return out


def _scatter(tree, out: Messages, children, wc, x, sc, err=None):
    hs = tree.height[children]
    for g in np.unique(hs):
        sel = np.nonzero(hs == g)[0]
        rows = tree.row[children[sel]]
        w = min(wc, out.vec[g].shape[1])
        out.vec[g][rows, :w] = x[sel, :w]
        out.scale[g][rows] = sc[sel]
        if err is not None:
            out.err[g][rows, :w] = err[sel, :w]


def _downward_log(tree, up, root_out_log, potentials) -> Messages:
    from ._logconv import LOGCORR, log_direct_rows

    n_h = len(tree.levels)
    out = Messages([None] * n_h, [None] * n_h, None, log=True)
    w_root = tree.widths[-1]
    if root_out_log is None:
        vec, sc = np.zeros((1, w_root)), np.zeros(1)
    else:
        mx = np.max(root_out_log)
        if not mx > -np.inf:
            raise ZeroPartitionError(NO_CONFIGURATION + ".")
        vec, sc = (np.asarray(root_out_log, dtype=np.float64) - mx)[None, :w_root].copy(), np.array([mx])
    out.vec[n_h - 1], out.scale[n_h - 1] = vec, sc
    for g in range(n_h - 1):
        out.vec[g] = np.full(up.vec[g].shape, -np.inf)
        out.scale[g] = np.full(up.vec[g].shape[0], -np.inf)
    for h in range(n_h - 1, 0, -1):
        nodes = tree.levels[h]
        a, sa = out.vec[h], out.scale[h]
        if potentials.get(h) is not None:
            a, sa = _normalize_log(a + potentials[h], sa.copy(), allow_zero=True)
        lc, rc = tree.left[nodes], tree.right[nodes]
        wc = int(max(tree.size[lc].max(), tree.size[rc].max())) + 1
        ul, sl, _ = _gather(tree, up, lc, wc)
        ur, sr, _ = _gather(tree, up, rc, wc)
        aa = np.ascontiguousarray(np.concatenate([a, a]))
        bb = np.concatenate([ur, ul])
        x = log_direct_rows(aa, bb, np.empty((aa.shape[0], wc)), LOGCORR)
        x, sc = _normalize_log(x, np.concatenate([sa + sr, sa + sl]), allow_zero=True)
        _scatter(tree, out, np.concatenate([lc, rc]), wc, x, sc)
    return out


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

    In the form of ``up`` (linear with error bounds, or log). root_out_log : (size_root + 1,) log
    message into the root (None: all zeros, i.e. ones).
    """
    potentials = potentials or {}
    if up.log:
        return _downward_log(tree, up, root_out_log, potentials)
    return _downward_linear(tree, up, root_out_log, potentials, method, crossover)


def _root_error(tree: BinaryTree, up: Messages) -> float:
    """Bound on the relative error of ``log Z`` from the linear upward pass alone (no message into the root)."""
    h, r = tree.height[tree.root], tree.row[tree.root]
    return float(up.err[h][r].sum() / up.vec[h][r].sum())


def upward_checked(
    tree: BinaryTree,
    leaf_logw: np.ndarray,
    potentials: dict | None = None,
    *,
    method: str = "auto",
    crossover: int = DEFAULT_CROSSOVER,
) -> Messages:
    """:func:`upward` for ``log Z`` (no message into the root): linear when its root is certified to
    :data:`BELIEF_TOL`, else in log space."""
    try:
        up = upward(tree, leaf_logw, potentials, method=method, crossover=crossover)
        if _root_error(tree, up) <= BELIEF_TOL:
            return up
    except (ZeroPartitionError, _Uncertified):
        pass
    return upward(tree, leaf_logw, potentials, log=True)


def belief_bounds(tree: BinaryTree, up: Messages, down: Messages) -> np.ndarray:
    """Per height, the largest bound on a node's belief error relative to its total mass (linear passes):
    ``sum_k (e_up[k] d[k] + u[k] e_down[k] + e_up[k] e_down[k]) / sum_k u[k] d[k]``."""
    worst = np.zeros(len(tree.levels))
    for g in range(len(tree.levels)):
        u, d, eu, ed = up.vec[g], down.vec[g], up.err[g], down.err[g]
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            b = np.sum(eu * d + u * ed + eu * ed, axis=1) / np.sum(u * d, axis=1)
        worst[g] = np.inf if np.any(~(b <= BELIEF_TOL)) else float(b.max(initial=0.0))
    return worst


def sum_passes(
    tree: BinaryTree,
    leaf_logw: np.ndarray,
    potentials: dict | None = None,
    root_out_log: np.ndarray | None = None,
    *,
    method: str = "auto",
    crossover: int = DEFAULT_CROSSOVER,
) -> tuple:
    """Certified upward and downward sum-product passes: ``(up, down)``, both linear or both log.

    The linear passes are kept when every node's belief is certified to :data:`BELIEF_TOL` of its
    mass (:func:`belief_bounds`); otherwise, or when they find no configuration of positive mass,
    both passes run in log space (exact at any magnitude). Raises ZeroPartitionError when the log
    passes find no configuration of positive mass either.
    """
    potentials = potentials or {}
    try:
        up = upward(tree, leaf_logw, potentials, method=method, crossover=crossover)
        down = downward(tree, up, root_out_log, potentials, method=method, crossover=crossover)
        if np.all(belief_bounds(tree, up, down) <= BELIEF_TOL):
            return up, down
    except (ZeroPartitionError, _Uncertified):
        pass
    up = upward(tree, leaf_logw, potentials, log=True)
    return up, downward(tree, up, root_out_log, potentials)


def node_log_belief(tree: BinaryTree, up: Messages, down: Messages, v: int) -> np.ndarray:
    """Unnormalized log belief of node ``v``'s count, ``(size_v + 1,)``: log of up times down, scales included."""
    h, r = tree.height[v], tree.row[v]
    n = tree.size[v] + 1
    if up.log:
        return up.vec[h][r, :n] + down.vec[h][r, :n] + (up.scale[h][r] + down.scale[h][r])
    with np.errstate(divide="ignore"):
        return np.log(up.vec[h][r, :n] * down.vec[h][r, :n]) + (up.scale[h][r] + down.scale[h][r])


def root_log_partition(tree: BinaryTree, up: Messages) -> float:
    """``log Z`` from the upward messages alone (no message into the root)."""
    h, r = tree.height[tree.root], tree.row[tree.root]
    if up.log:
        row = up.vec[h][r]
        return float(np.log(np.sum(np.exp(row))) + up.scale[h][r])
    return float(np.log(np.sum(up.vec[h][r])) + up.scale[h][r])


def upward_max(tree: BinaryTree, leaf_logw: np.ndarray, potentials: dict | None = None) -> list:
    """Upward max-product pass in log space (max-plus convolutions); returns per-height arrays."""
    potentials = potentials or {}
    msgs = [leaf_logw + (potentials[0] if potentials.get(0) is not None else 0.0)]
    for h in range(1, len(tree.levels)):
        nodes = tree.levels[h]
        lc, rc = tree.left[nodes], tree.right[nodes]
        wc = int(max(tree.size[lc].max(), tree.size[rc].max())) + 1
        a = _stack_rows(tree, msgs, lc, wc)
        b = _stack_rows(tree, msgs, rc, wc)
        x = direct_rows(a, b, np.full((a.shape[0], 2 * wc - 1), -np.inf), MAXPLUS)[:, : tree.widths[h]].copy()
        if potentials.get(h) is not None:
            x = x + potentials[h]
        msgs.append(x)
    return msgs


def backtrack_max(tree: BinaryTree, msgs: list, root_count: int) -> np.ndarray:
    """Top-down argmax split of the counts (ties to the smallest left count); returns leaf states."""
    counts = np.zeros(tree.n_nodes, dtype=np.int64)
    counts[tree.root] = root_count
    for h in range(len(tree.levels) - 1, 0, -1):
        nodes = tree.levels[h]
        lc, rc = tree.left[nodes], tree.right[nodes]
        wc = int(max(tree.size[lc].max(), tree.size[rc].max())) + 1
        a = _stack_rows(tree, msgs, lc, wc)
        b = _stack_rows(tree, msgs, rc, wc)
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


def sample_log(tree: BinaryTree, up: Messages, size: int, rng) -> np.ndarray:
    """Exact joint samples from log-form upward messages (no message into the root): the root count,
    then each node's count split between its children top-down, every split distribution normalized
    in log space. Returns (size, n_leaves) uint8."""
    rows = [up.vec[g] for g in range(len(up.vec))]

    def log_row(v):
        return rows[tree.height[v]][tree.row[v], : tree.size[v] + 1]

    def draw(logw, n):
        p = np.exp(logw - logw.max())
        cdf = np.cumsum(p)
        return np.minimum(np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right"), logw.shape[0] - 1)

    counts = np.zeros((tree.n_nodes, size), dtype=np.int64)
    counts[tree.root] = draw(log_row(tree.root), size)
    for v in internal_order(tree):
        lv, rv = tree.left[v], tree.right[v]
        a, b = log_row(lv), log_row(rv)
        c_all = counts[v]
        for c in np.unique(c_all):
            sel = np.nonzero(c_all == c)[0]
            lo, hi = max(0, c - (b.shape[0] - 1)), min(c, a.shape[0] - 1)
            k = np.arange(lo, hi + 1)
            counts[lv, sel] = lo + draw(a[k] + b[c - k], sel.shape[0])
            counts[rv, sel] = c - counts[lv, sel]
    return counts[: tree.n_leaves].T.astype(np.uint8).copy()
