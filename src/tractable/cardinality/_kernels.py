"""numba kernels of the cardinality package; they assume validated input.

All vectors here are non-negative, so direct convolution (a sum of non-negative products) is
accurate to a few ulps *relative to every entry*, tails included. That is why direct convolution
is used below the FFT crossover and why the O(D^2) chain algorithm, done in log space, is the
accuracy reference of the package.
"""

from __future__ import annotations

import numpy as np

from .._numba import njit
from .._random import uniform


@njit
def conv_direct_batch(a, b):
    """Row-wise full convolution: ``out[r, k] = sum_j a[r, j] * b[r, k - j]``.

    a : (n, m) and b : (n, p) float64; returns (n, m + p - 1).
    """
    n, m = a.shape
    p = b.shape[1]
    out = np.zeros((n, m + p - 1))
    for r in range(n):
        for j in range(m):
            aj = a[r, j]
            if aj == 0.0:
                continue
            for i in range(p):
                out[r, j + i] += aj * b[r, i]
    return out


@njit
def corr_direct_batch(a, b, width):
    """Row-wise correlation: ``out[r, j] = sum_i a[r, j + i] * b[r, i]`` for ``j < width``.

    Entries ``a[r, j + i]`` beyond the row length count as 0.
    """
    n, m = a.shape
    p = b.shape[1]
    out = np.zeros((n, width))
    for r in range(n):
        for j in range(width):
            s = 0.0
            top = min(p, m - j)
            for i in range(top):
                s += a[r, j + i] * b[r, i]
            out[r, j] = s
    return out


@njit
def clean_normalize_rows(x, noise):
    """In place: zero entries below ``noise`` times the row maximum (and negatives), divide each
    row by its maximum; return the log of the maxima (``-inf`` for an all-zero row, left as is)."""
    n, w = x.shape
    logmax = np.empty(n)
    for r in range(n):
        mx = 0.0
        for j in range(w):
            if x[r, j] > mx:
                mx = x[r, j]
        if mx > 0.0:
            floor = noise * mx
            inv = 1.0 / mx
            for j in range(w):
                v = x[r, j]
                x[r, j] = v * inv if v >= floor else 0.0
            logmax[r] = np.log(mx)
        else:
            for j in range(w):
                x[r, j] = 0.0
            logmax[r] = -np.inf
    return logmax


@njit
def corr_children_direct(a, up):
    """Downward messages of both children of every parent, interleaved like ``up``.

    ``out[2r, j] = sum_i a[r, j + i] up[2r + 1, i]`` and ``out[2r + 1, j] = sum_i a[r, j + i]
    up[2r, i]`` for ``j < up.shape[1]`` (a : (R, 2w - 1), up : (2R, w)).
    """
    n_par, wa = a.shape
    w = up.shape[1]
    out = np.zeros((2 * n_par, w))
    for r in range(n_par):
        for j in range(w):
            sl = 0.0
            sr = 0.0
            top = min(w, wa - j)
            for i in range(top):
                aj = a[r, j + i]
                sl += aj * up[2 * r + 1, i]
                sr += aj * up[2 * r, i]
            out[2 * r, j] = sl
            out[2 * r + 1, j] = sr
    return out


@njit
def maxplus_conv_batch(a, b):
    """Row-wise max-plus convolution in log space: ``out[r, k] = max_j a[r, j] + b[r, k - j]``."""
    n, m = a.shape
    p = b.shape[1]
    out = np.full((n, m + p - 1), -np.inf)
    for r in range(n):
        for j in range(m):
            aj = a[r, j]
            if aj == -np.inf:
                continue
            for i in range(p):
                v = aj + b[r, i]
                if v > out[r, j + i]:
                    out[r, j + i] = v
    return out


@njit
def tree_sizes(left, right, n_leaves, size, height):
    """Fill leaf counts and heights of internal nodes (children have smaller ids than parents)."""
    for v in range(n_leaves, left.shape[0]):
        size[v] = size[left[v]] + size[right[v]]
        height[v] = 1 + max(height[left[v]], height[right[v]])


@njit
def _logaddexp(x, y):
    if x == -np.inf:
        return y
    if y == -np.inf:
        return x
    if x > y:
        return x + np.log1p(np.exp(y - x))
    return y + np.log1p(np.exp(x - y))


@njit
def chain_log_kernel(theta, f, kmax):
    """The chain algorithm (Sec. 6.1 of Tarlow et al. 2012) in log space, O(D * kmax).

    Forward: ``alpha[d, k] = log sum_{y_<d, |y_<d| = k} exp(theta . y) - sum_{j<d} max(theta_j, 0)``.
    Backward: ``beta[j] = log sum_{y_>=d} exp(theta . y_>=d + f(j + |y_>=d|)) - sum_{i>=d} max(theta_i, 0)``
    for a prefix count j. Subtracting the per-step offsets keeps the stored numbers small (the cost
    of deviating from the best configuration), so the rounding error of every log-add-exp is small
    and common offsets cancel exactly in probabilities. Returns (log Z without the offset
    ``sum_d max(theta_d, 0)``, log mass of y_d = 1 and of y_d = 0 (both without a common
    offset), log count weights without the offset).
    """
    d_total = theta.shape[0]
    ninf = -np.inf
    alpha = np.full((d_total + 1, kmax + 1), ninf)
    alpha[0, 0] = 0.0
    for d in range(d_total):
        t = theta[d]
        m = max(t, 0.0)
        for k in range(kmax + 1):
            v = alpha[d, k] - m
            if k > 0:
                v = _logaddexp(v, alpha[d, k - 1] + (t - m))
            alpha[d + 1, k] = v
    logw = alpha[d_total].copy()
    beta = np.full(kmax + 2, ninf)
    for j in range(kmax + 1):
        beta[j] = f[j]
    log1 = np.empty(d_total)
    log0 = np.empty(d_total)
    newb = np.full(kmax + 2, ninf)
    for d in range(d_total - 1, -1, -1):
        t = theta[d]
        m = max(t, 0.0)
        s1 = ninf
        s0 = ninf
        for j in range(kmax + 1):
            a = alpha[d, j]
            if a == ninf:
                continue
            s0 = _logaddexp(s0, a - m + beta[j])
            s1 = _logaddexp(s1, a + (t - m) + beta[j + 1])
        log1[d] = s1
        log0[d] = s0
        for j in range(kmax + 1):
            newb[j] = _logaddexp(beta[j] - m, (t - m) + beta[j + 1])
        for j in range(kmax + 1):
            beta[j] = newb[j]
    logz = ninf
    for k in range(kmax + 1):
        logz = _logaddexp(logz, logw[k] + f[k])
    return logz, log1, log0, logw


@njit
def _split_cdf(up, off_l, len_l, off_r, len_r, c, buf, pos):
    """Write the CDF of z_l given z_p = c (weights up_l(j) up_r(c - j)) into buf[pos:]; return (lo, n)."""
    lo = max(0, c - (len_r - 1))
    hi = min(c, len_l - 1)
    n = hi - lo + 1
    s = 0.0
    for q in range(n):
        j = lo + q
        s += up[off_l + j] * up[off_r + c - j]
        buf[pos + q] = s
    return lo, n


@njit
def sample_descent(root_counts, order, left, right, up, offset, length, n_leaves, state):
    """Draw the leaf states of each sample given its root count, splitting counts top-down.

    root_counts : (S,) int64; order : internal nodes, parents before children (root first);
    left/right : children of each node (leaves are 0..n_leaves-1); up : flat upward messages with
    ``offset``/``length`` per node; state : (2,) uint64 generator state (drawn from the caller's
    numpy Generator, so results are reproducible; updated in place). Samples are processed in chunks, node by node
    within a chunk, so the split distribution of a node stays in cache while all samples of the
    chunk use it; the CDF of each (node, parent count) pair is computed once for all samples.
    Returns (S, n_leaves) uint8.
    """
    n_samples = root_counts.shape[0]
    n_nodes = left.shape[0]
    out = np.zeros((n_samples, n_leaves), dtype=np.uint8)
    cache_base = np.zeros(n_nodes + 1, dtype=np.int64)
    for v in range(n_nodes):
        cache_base[v + 1] = cache_base[v] + (length[v] if v >= n_leaves else 0)
    cache_pos = np.full(cache_base[n_nodes], -1, dtype=np.int64)
    cache_lo = np.zeros(cache_base[n_nodes], dtype=np.int64)
    cache_n = np.zeros(cache_base[n_nodes], dtype=np.int64)
    buf = np.empty(1 << 16)
    used = 0
    chunk = 64
    counts = np.zeros((n_nodes, chunk), dtype=np.int32)
    root = order[0]
    for c0 in range(0, n_samples, chunk):
        m = min(chunk, n_samples - c0)
        for s in range(m):
            counts[root, s] = root_counts[c0 + s]
        for q in range(order.shape[0]):
            v = order[q]
            lv = left[v]
            rv = right[v]
            full = length[v] - 1
            for s in range(m):
                c = counts[v, s]
                if c == 0:
                    counts[lv, s] = 0
                    counts[rv, s] = 0
                    continue
                if c == full:
                    counts[lv, s] = length[lv] - 1
                    counts[rv, s] = length[rv] - 1
                    continue
                slot = cache_base[v] + c
                if cache_pos[slot] < 0:
                    need = min(c, length[lv] - 1) + 1
                    if used + need > buf.shape[0]:
                        nb = np.empty(max(2 * buf.shape[0], used + need))
                        nb[:used] = buf[:used]
                        buf = nb
                    lo, n = _split_cdf(up, offset[lv], length[lv], offset[rv], length[rv], c, buf, used)
                    cache_pos[slot] = used
                    cache_lo[slot] = lo
                    cache_n[slot] = n
                    used += n
                pos = cache_pos[slot]
                n = cache_n[slot]
                target = uniform(state) * buf[pos + n - 1]
                # binary search for the first index whose CDF exceeds the target (never a
                # zero-weight entry)
                a = 0
                b = n - 1
                while a < b:
                    mid = (a + b) // 2
                    if buf[pos + mid] > target:
                        b = mid
                    else:
                        a = mid + 1
                j = cache_lo[slot] + a
                counts[lv, s] = j
                counts[rv, s] = c - j
        for s in range(m):
            for leaf in range(n_leaves):
                out[c0 + s, leaf] = counts[leaf, s]
    return out


@njit
def block_config_cdfs(leaf_vec, block, masks, start):
    """Per block, the CDF over the block's configurations of each count r.

    ``masks`` lists all ``2^block`` configurations (bit i = leaf i on) sorted by popcount;
    configurations with popcount r are ``masks[start[r]:start[r + 1]]``. ``cdf[b, j]`` is the
    cumulative weight (within its popcount segment, normalized so the segment's maximum weight is
    1, in log space first so nothing underflows) of the configurations up to j.
    """
    n_blocks = leaf_vec.shape[0] // block
    n_cfg = masks.shape[0]
    cdf = np.zeros((n_blocks, n_cfg))
    lw = np.empty(n_cfg)
    logv = np.full(leaf_vec.shape, -np.inf)
    for i in range(leaf_vec.shape[0]):
        for k in range(2):
            if leaf_vec[i, k] > 0.0:
                logv[i, k] = np.log(leaf_vec[i, k])
    for b in range(n_blocks):
        for j in range(n_cfg):
            m = masks[j]
            v = 0.0
            for i in range(block):
                v += logv[b * block + i, (m >> i) & 1]
            lw[j] = v
        for r in range(block + 1):
            top = -np.inf
            for j in range(start[r], start[r + 1]):
                if lw[j] > top:
                    top = lw[j]
            acc = 0.0
            for j in range(start[r], start[r + 1]):
                if top > -np.inf:
                    acc += np.exp(lw[j] - top)
                cdf[b, j] = acc
    return cdf


@njit
def _split_stats(up, off_l, len_l, off_r, len_r, c):
    """Total weight and mode of the split of count ``c``: weights up_l(j) up_r(c - j), j in [lo, hi].

    Returns (total, mode, lo, hi).
    """
    lo = max(0, c - (len_r - 1))
    hi = min(c, len_l - 1)
    total = 0.0
    best = -1.0
    mode = lo
    for j in range(lo, hi + 1):
        w = up[off_l + j] * up[off_r + c - j]
        total += w
        if w > best:
            best = w
            mode = j
    return total, mode, lo, hi


@njit(inline="always")
def _split_walk(up, off_l, off_r, lo, hi, c, mode, target):
    """Inversion sampling of the split: the first j whose cumulative weight exceeds ``target``.

    The weights are visited from the mode outwards, always taking the larger of the two frontier
    weights. Any fixed visiting order gives an exact inversion sampler; this one visits the weights
    in decreasing order when they are unimodal (as for log-concave children messages), so the
    expected number of steps is of the order of the split's standard deviation instead of the
    node's size. If rounding leaves ``target`` unreached, the last visited index is returned (an
    error of the order of one ulp of the total).
    """
    j = mode
    acc = up[off_l + j] * up[off_r + c - j]
    if acc > target:
        return j
    a = mode - 1
    b = mode + 1
    wa = up[off_l + a] * up[off_r + c - a] if a >= lo else -1.0
    wb = up[off_l + b] * up[off_r + c - b] if b <= hi else -1.0
    while wa >= 0.0 or wb >= 0.0:
        if wb >= wa:
            acc += wb
            j = b
            b += 1
            wb = up[off_l + b] * up[off_r + c - b] if b <= hi else -1.0
        else:
            acc += wa
            j = a
            a -= 1
            wa = up[off_l + a] * up[off_r + c - a] if a >= lo else -1.0
        if acc > target:
            return j
    return j


@njit
def sample_descent_blocks(
    root_counts, order, left, right, up, offset, length, block_node0, block, tab, masks, start, n_out, state
):
    """Like :func:`sample_descent`, but stops at blocks of ``block`` leaves (node ids
    ``block_node0 + j`` cover leaves ``j*block ..``) and draws each block's configuration given its
    count r in one step from the CDF ``tab`` over the configurations with r leaves on
    (:func:`block_config_cdfs`). ``order`` lists the internal nodes above the blocks, parents
    first. Returns (S, n_out) uint8.
    """
    n_samples = root_counts.shape[0]
    n_nodes = left.shape[0]
    n_blocks = tab.shape[0]
    out = np.zeros((n_samples, n_out), dtype=np.uint8)
    cache_base = np.zeros(n_nodes + 1, dtype=np.int64)
    for v in range(n_nodes):
        cache_base[v + 1] = cache_base[v] + (length[v] if left[v] >= 0 else 0)
    # per (node, parent count): total weight and mode of the split, computed on first use
    cache_mode = np.full(cache_base[n_nodes], -1, dtype=np.int64)
    cache_total = np.zeros(cache_base[n_nodes])
    chunk = 512  # samples per sweep: a node's messages stay in cache while all of them use it
    counts = np.zeros((n_nodes - block_node0, chunk), dtype=np.int32)  # nodes from the blocks up
    for c0 in range(0, n_samples, chunk):
        m = min(chunk, n_samples - c0)
        root = order[0] if order.shape[0] > 0 else block_node0
        for s in range(m):
            counts[root - block_node0, s] = root_counts[c0 + s]
        for q in range(order.shape[0]):
            v = order[q]
            lv = left[v]
            rv = right[v]
            full = length[v] - 1
            vv = v - block_node0
            li = lv - block_node0
            ri = rv - block_node0
            for s in range(m):
                c = counts[vv, s]
                if c == 0:
                    counts[li, s] = 0
                    counts[ri, s] = 0
                    continue
                if c == full:
                    counts[li, s] = length[lv] - 1
                    counts[ri, s] = length[rv] - 1
                    continue
                slot = cache_base[v] + c
                if cache_mode[slot] < 0:
                    total, mode, lo, hi = _split_stats(up, offset[lv], length[lv], offset[rv], length[rv], c)
                    cache_total[slot] = total
                    cache_mode[slot] = mode
                lo = max(0, c - (length[rv] - 1))
                hi = min(c, length[lv] - 1)
                target = uniform(state) * cache_total[slot]
                j = _split_walk(up, offset[lv], offset[rv], lo, hi, c, cache_mode[slot], target)
                counts[li, s] = j
                counts[ri, s] = c - j
        # block-major: one block's table stays in cache while the chunk's samples use it; each
        # block's configuration is one draw from the CDF over configurations with its count
        for bk in range(n_blocks):
            base = bk * block
            for s in range(m):
                row = c0 + s
                r = counts[bk, s]
                if r == 0:
                    continue
                lo = start[r]
                hi = start[r + 1] - 1
                target = uniform(state) * tab[bk, hi]
                while lo < hi:
                    mid = (lo + hi) // 2
                    if tab[bk, mid] > target:
                        hi = mid
                    else:
                        lo = mid + 1
                msk = masks[lo]
                for i in range(block):
                    if (msk >> i) & 1 and base + i < n_out:
                        out[row, base + i] = 1
    return out
