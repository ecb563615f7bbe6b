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
def shift_rows(a, delta, width):
    """Rows of ``a`` (R, m) moved to new windows: ``out[r, j] = a[r, delta[r] + j]`` where ``0 <=
    delta[r] + j < m``, else 0, for ``j < width``; (R, width)."""
    n_rows, m = a.shape
    out = np.zeros((n_rows, width))
    for r in range(n_rows):
        d = delta[r]
        for j in range(max(0, -d), min(width, m - d)):
            out[r, j] = a[r, d + j]
    return out


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


_ONE = 9007199254740992  # 2^53: alias thresholds are 53-bit fixed point, like the uniforms


@njit
def alias_table(w, n, thr, alias, pos, work):
    """Walker's alias table (Vose's construction) of the weights ``w[0:n]`` (overwritten).

    Writes ``thr[pos:pos + n]`` (int64: the probability of keeping cell i, in units of 2^-53) and
    ``alias[2 pos:2 (pos + n)]``: cell i's pair ``alias[2 (pos + i)] = i`` and ``alias[2 (pos + i) +
    1]`` = its alias (indices relative to ``pos``). A draw (:func:`_alias_draw`) picks a cell k
    uniformly and keeps it with probability ``thr[k] / 2^53``, else takes its alias, so entry j
    comes out with probability ``(keep_j + sum_{i: alias_i = j} (1 - keep_i)) / n = w_j / sum(w)``
    up to the rounding of the table (a few ulps, the resolution of the 53-bit uniforms): an exact
    sampler whose draw costs O(1) whatever ``n``. Zero weights are never drawn; all-zero weights
    give the uniform table. ``work`` is int64 scratch of at least ``n`` entries (small cells
    stacked from its front, large ones from its back).
    """
    total = 0.0
    for i in range(n):
        total += w[i]
    scale = n / total if total > 0.0 else 0.0
    ns = 0
    nl = 0
    for i in range(n):
        q = w[i] * scale if total > 0.0 else 1.0
        w[i] = q
        alias[2 * (pos + i)] = i
        alias[2 * (pos + i) + 1] = i
        if q < 1.0:
            work[ns] = i
            ns += 1
        else:
            nl += 1
            work[n - nl] = i
    while ns > 0 and nl > 0:
        ns -= 1
        sm = work[ns]
        lg = work[n - nl]
        alias[2 * (pos + sm) + 1] = lg
        q = (w[lg] + w[sm]) - 1.0  # the large cell gives 1 - w[sm] to sm's cell
        w[lg] = q
        if q < 1.0:  # now small: move it over
            nl -= 1
            work[ns] = lg
            ns += 1
    # what is left keeps its cell: 1 up to rounding (the remaining probabilities sum to their number)
    for i in range(ns):
        w[work[i]] = 1.0
    for i in range(nl):
        w[work[n - 1 - i]] = 1.0
    for i in range(n):
        thr[pos + i] = min(np.int64(max(w[i], 0.0) * _ONE), _ONE)


@njit(inline="always")
def _alias_draw(thr, alias, pos, n, u):
    """One draw from the alias table at ``pos`` with ``n`` (< 1024) entries, given a uniform ``u``
    in [0, 1) (a multiple of 2^-53): integer arithmetic only, no branch on the random outcome
    (a compiled select mispredicts about half the time, which made draws 3x slower)."""
    r = np.int64(u * _ONE) * n  # < 2^63
    k = r >> 53  # the cell, uniform in 0..n-1
    frac = r & (_ONE - 1)  # uniform in 0..2^53-1 given k
    take = ((thr[pos + k] - frac - 1) >> 63) & 1  # 1 when frac >= thr: take the alias
    return alias[2 * (pos + k) + take]


@njit
def block_alias_tables(leaf_vec, block, masks, start):
    """Per block of ``block`` leaves and per count r, the alias table over the block's
    configurations with r leaves on.

    ``masks`` lists all ``2^block`` configurations (bit i = leaf i on) sorted by popcount;
    configurations with popcount r are ``masks[start[r]:start[r + 1]]``. A configuration's weight
    is the product of its leaves' weights (summed in log space and shifted by the segment's
    maximum, so nothing underflows). Returns ``prob`` (n_blocks * 2^block,) and ``alias`` (twice
    that, int16 pairs relative to the segment start), block b's segment r at ``b * 2^block +
    start[r]`` (:func:`alias_table`).
    """
    n_blocks = leaf_vec.shape[0] // block
    n_cfg = masks.shape[0]
    prob = np.empty(n_blocks * n_cfg, dtype=np.int64)
    alias = np.empty(2 * n_blocks * n_cfg, dtype=np.int16)
    lw = np.empty(n_cfg)
    by_mask = np.empty(n_cfg)
    w = np.empty(n_cfg)
    work = np.empty(n_cfg, dtype=np.int64)
    logv = np.full(leaf_vec.shape, -np.inf)
    for i in range(leaf_vec.shape[0]):
        for k in range(2):
            if leaf_vec[i, k] > 0.0:
                logv[i, k] = np.log(leaf_vec[i, k])
    for b in range(n_blocks):
        # log weight of every mask, leaf by leaf: masks over leaves < i + 1 from those over leaves
        # < i (2^(block + 1) adds per block instead of block 2^block)
        by_mask[0] = 0.0
        for i in range(block):
            x = b * block + i
            half = 1 << i
            for mk in range(half):
                by_mask[half + mk] = by_mask[mk] + logv[x, 1]
                by_mask[mk] += logv[x, 0]
        for j in range(n_cfg):
            lw[j] = by_mask[masks[j]]
        for r in range(block + 1):
            top = -np.inf
            for j in range(start[r], start[r + 1]):
                if lw[j] > top:
                    top = lw[j]
            n = start[r + 1] - start[r]
            for q in range(n):
                w[q] = np.exp(lw[start[r] + q] - top) if top > -np.inf else 0.0
            alias_table(w, n, prob, alias, b * n_cfg + start[r], work)
    return prob, alias


@njit
def _split_stats(up, off_l, off_r, lo, hi, c):
    """Total weight and mode of the split of count ``c``: weights up_l(j) up_r(c - j), j in [lo, hi]."""
    total = 0.0
    best = -1.0
    mode = lo
    for j in range(lo, hi + 1):
        w = up[off_l + j] * up[off_r + c - j]
        total += w
        if w > best:
            best = w
            mode = j
    return total, mode


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
def _split_range(c, len_l, len_r, zlo_l, zhi_l, zlo_r, zhi_r):
    """Left counts j with a possibly non-zero weight up_l(j) up_r(c - j): the structural range
    ``max(0, c - (len_r - 1)) .. min(c, len_l - 1)`` cut to the children's non-zero windows
    ``[zlo, zhi]``; the structural range if the cut is empty."""
    lo = max(zlo_l, c - zhi_r)
    hi = min(zhi_l, c - zlo_r)
    if hi < lo:
        lo = max(0, c - (len_r - 1))
        hi = min(c, len_l - 1)
    return lo, hi


@njit(inline="always")
def _xoroshiro(s0, s1):
    """One xoroshiro128+ step on a state held in locals (the kernels' stores could alias a state
    array, forcing a reload per draw): returns (uniform in [0, 1), new s0, new s1), the same
    sequence as :func:`tractable._random.uniform`."""
    result = s0 + s1
    s1 ^= s0
    s0 = ((s0 << np.uint64(55)) | (s0 >> np.uint64(9))) ^ s1 ^ (s1 << np.uint64(14))
    s1 = (s1 << np.uint64(36)) | (s1 >> np.uint64(28))
    return float(result >> np.uint64(11)) * (1.0 / 9007199254740992.0), s0, s1


@njit
def _draw_blocks(rows, row, bk, m, blk_prob, blk_alias, start, patterns, tile, s0, s1):
    """Configurations of block ``bk`` for the ``m`` samples whose block counts are ``rows[row]``,
    as 8-byte patterns into column ``bk % 8`` of ``tile`` (m, 8). Returns the generator state."""
    n_cfg = patterns.shape[0]
    base = bk * n_cfg
    col = bk & 7
    for s in range(m):
        r = rows[row, s]
        a = start[r]
        u, s0, s1 = _xoroshiro(s0, s1)
        idx = a + _alias_draw(blk_prob, blk_alias, base + a, start[r + 1] - a, u)
        tile[s, col] = patterns[idx]
    return s0, s1


@njit
def _flush_tile(tile, m, bk, out, c0):
    """Copy the finished group of (up to) 8 blocks ending at block ``bk`` from ``tile`` to ``out``:
    one 64-byte line per sample instead of 8 scattered words (samples are rows 64 KiB apart)."""
    g0 = bk & ~7
    for s in range(m):
        for i in range(bk - g0 + 1):
            out[c0 + s, g0 + i] = tile[s, i]


@njit
def sample_descent_alias(
    root_counts,
    root,
    left,
    right,
    up,
    offset,
    length,
    nz_lo,
    nz_hi,
    alias_max,
    block_node0,
    blk_prob,
    blk_alias,
    start,
    patterns,
    state,
):
    """Exact joint samples given root counts: split counts top-down, then one draw per leaf block.

    Node ids ``block_node0 + b`` are the blocks of ``block`` leaves (leaves ``b * block ..``);
    ``root`` is the root (a block itself when the tree has a single block). Each sample's count
    ``c`` at a node is split by drawing the left count j with weight ``up_left(j) up_right(c - j)``
    (Sec. 5.3 of Tarlow et al. 2012), over the children's non-zero windows ``nz_lo .. nz_hi`` only:

    * at nodes with at most ``alias_max`` leaves, from an alias table per (node, count), built on
      first use and shared by every later sample (one uniform, one table lookup per draw);
    * above, by inversion walking from the split's mode (:func:`_split_walk`; its total and mode
      are computed once per (node, count)), where a table would cost the node's size to build.

    Each block's configuration given its count r is one alias draw over the configurations with
    r leaves on (:func:`block_alias_tables`), written as the 8-byte pattern ``patterns[idx]`` (byte i
    = leaf i); the result is (S, n_blocks) uint64, row s viewed as bytes is sample s. Samples run
    in large chunks and the nodes depth first, all samples of the chunk at once per node: a node's
    tables are built and used while in cache, and only the count rows of the current path (two
    per depth) are live. Blocks are collected 8 at a time in a tile, so each sample's row gets
    whole 64-byte lines. Every draw is
    exact and takes its own uniform from ``state`` (xoroshiro, updated in place): the same state
    gives the same samples.
    """
    n_samples = root_counts.shape[0]
    n_nodes = left.shape[0]
    n_cfg = patterns.shape[0]
    n_blocks = blk_prob.shape[0] // n_cfg
    # allocated here, not by numpy: numpy asks the kernel for huge pages on large arrays, whose
    # synchronous compaction can take seconds on a busy machine; the tile keeps writes local anyway
    out = np.empty((n_samples, n_blocks), dtype=np.uint64)
    slot_base = np.zeros(n_nodes + 1, dtype=np.int64)
    for v in range(n_nodes):
        slot_base[v + 1] = slot_base[v] + (length[v] if v >= block_node0 + n_blocks else 0)
    n_slots = slot_base[n_nodes]
    # per (node, parent count): alias table position / range (small nodes), total and mode (large)
    tpos = np.full(n_slots, -1, dtype=np.int64)
    tlo = np.zeros(n_slots, dtype=np.int64)
    tn = np.zeros(n_slots, dtype=np.int64)
    ttotal = np.zeros(n_slots)
    tprob = np.empty(1 << 16, dtype=np.int64)
    talias = np.empty(1 << 17, dtype=np.int32)
    used = 0
    wbuf = np.empty(alias_max + 2)
    work = np.empty(alias_max + 2, dtype=np.int64)
    depth = 0
    v = root
    while v >= block_node0 + n_blocks:
        v = left[v]
        depth += 1
    chunk = 4096  # samples per sweep
    rows = np.zeros((2 * depth + 2, chunk), dtype=np.int32)  # node at depth d: row 2d or 2d + 1
    tile = np.empty((chunk, 8), dtype=np.uint64)  # the current group of 8 blocks of each sample
    stack_v = np.empty(depth + 2, dtype=np.int64)
    stack_row = np.empty(depth + 2, dtype=np.int64)
    s0 = state[0]
    s1 = state[1]
    for c0 in range(0, n_samples, chunk):
        m = min(chunk, n_samples - c0)
        for s in range(m):
            rows[0, s] = root_counts[c0 + s]
        if root < block_node0 + n_blocks:
            s0, s1 = _draw_blocks(rows, 0, 0, m, blk_prob, blk_alias, start, patterns, tile, s0, s1)
            _flush_tile(tile, m, 0, out, c0)
            continue
        top = 1
        stack_v[0] = root
        stack_row[0] = 0
        while top > 0:
            top -= 1
            v = stack_v[top]
            row = stack_row[top]
            lv = left[v]
            rv = right[v]
            lrow = 2 * (row // 2 + 1)
            rrow = lrow + 1
            full = length[v] - 1
            off_l = offset[lv]
            off_r = offset[rv]
            sb = slot_base[v]
            small = full <= alias_max
            for s in range(m):
                c = rows[row, s]
                if c == 0:
                    rows[lrow, s] = 0
                    rows[rrow, s] = 0
                    continue
                if c == full:
                    rows[lrow, s] = length[lv] - 1
                    rows[rrow, s] = length[rv] - 1
                    continue
                slot = sb + c
                if tpos[slot] < 0:
                    lo, hi = _split_range(c, length[lv], length[rv], nz_lo[lv], nz_hi[lv], nz_lo[rv], nz_hi[rv])
                    n = hi - lo + 1
                    tlo[slot] = lo
                    tn[slot] = n
                    if small:
                        if used + n > tprob.shape[0]:
                            size = max(2 * tprob.shape[0], used + n)
                            nb = np.empty(size, dtype=np.int64)
                            nb[:used] = tprob[:used]
                            tprob = nb
                            na = np.empty(2 * size, dtype=np.int32)
                            na[: 2 * used] = talias[: 2 * used]
                            talias = na
                        for i in range(n):
                            wbuf[i] = up[off_l + lo + i] * up[off_r + c - lo - i]
                        alias_table(wbuf, n, tprob, talias, used, work)
                        tpos[slot] = used
                        used += n
                    else:
                        total, mode = _split_stats(up, off_l, off_r, lo, hi, c)
                        ttotal[slot] = total
                        tpos[slot] = mode
                lo = tlo[slot]
                u, s0, s1 = _xoroshiro(s0, s1)
                if small:
                    j = lo + _alias_draw(tprob, talias, tpos[slot], tn[slot], u)
                else:
                    target = u * ttotal[slot]
                    j = _split_walk(up, off_l, off_r, lo, lo + tn[slot] - 1, c, tpos[slot], target)
                rows[lrow, s] = j
                rows[rrow, s] = c - j
            if lv < block_node0 + n_blocks:  # children are blocks: draw their configurations now
                bl = lv - block_node0
                br = rv - block_node0
                s0, s1 = _draw_blocks(rows, lrow, bl, m, blk_prob, blk_alias, start, patterns, tile, s0, s1)
                s0, s1 = _draw_blocks(rows, rrow, br, m, blk_prob, blk_alias, start, patterns, tile, s0, s1)
                if br & 7 == 7 or br == n_blocks - 1:  # blocks come in order: a group is complete
                    _flush_tile(tile, m, br, out, c0)
            else:  # depth first, left subtree first; the right child's row survives it
                stack_v[top] = rv
                stack_row[top] = rrow
                stack_v[top + 1] = lv
                stack_row[top + 1] = lrow
                top += 2
    state[0] = s0
    state[1] = s1
    return out
