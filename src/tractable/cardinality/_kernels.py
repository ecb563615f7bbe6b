"""numba kernels of the cardinality package; they assume validated input.

All vectors here are non-negative, so direct convolution (a sum of non-negative products) is
accurate to a few ulps *relative to every entry*, tails included. That is why direct convolution
is used below the FFT crossover and why the O(D^2) chain algorithm, done in log space, is the
accuracy reference of the package.

Compilation. numba compiles each kernel on its first call (cached on disk afterwards), and the
cost grows with the code compiled, so the kernels are written to be compiled once each, small:

* one signature per kernel: callers pass C-ordered, writable float64 / int64 arrays
  (``_convolve._as_kernel_rows``), and no call from a kernel to a kernel passes a constant or a
  variable that starts as one (numba would first compile the callee for the literal type);
* output and work arrays come from the Python callers where their sizes are known, so that few
  of numba's own ``np.empty`` / ``np.zeros`` / ``np.full`` implementations are compiled; arrays
  are copied by loops, never by slice assignment (whose broadcasting error path compiles numba's
  string formatting);
* related operations share a kernel (:func:`direct_rows`: convolution, correlation and max-plus
  convolution; :func:`chain_stack`: one model or a stack; :func:`sample_descent_alias`: the block
  tables and the descent), a helper called from one place is inlined and one called from several
  (:func:`alias_table`, :func:`_logaddexp`) is compiled once, for kernels only (no Python entry
  point); the helpers use no builtins whose implementations numba would compile once more for
  their compile options.
"""

from __future__ import annotations

import numpy as np

from .._numba import njit
from .._random import uniform

#: the modes of :func:`direct_rows`
CONV, CORR, MAXPLUS = 0, 1, 2


@njit(no_cfunc_wrapper=True)
def direct_rows(a, b, out, mode):
    """Row-wise direct products of ``a`` (n, m) and ``b`` (n, p) into ``out``, which is returned.

    * ``CONV``: full convolution ``out[r, k] = sum_j a[r, j] * b[r, k - j]``; ``out`` (n, m + p - 1)
      zero on entry.
    * ``CORR``: correlation ``out[r, j] = sum_i a[r, j + i] * b[r, i]`` for ``j < out.shape[1]``
      (entries ``a[r, j + i]`` beyond the row length count as 0); every entry of ``out`` is written.
    * ``MAXPLUS``: max-plus convolution in log space ``out[r, k] = max_j a[r, j] + b[r, k - j]``;
      ``out`` (n, m + p - 1) ``-inf`` on entry.

    One kernel for the three (the mode is tested once per call), so that one compilation serves the
    sum-product passes of the count trees and the max-product pass of the tree model.
    """
    n, m = a.shape
    p = b.shape[1]
    if mode == CORR:
        width = out.shape[1]
        for r in range(n):
            for j in range(width):
                s = 0.0
                top = m - j if m - j < p else p
                for i in range(top):
                    s += a[r, j + i] * b[r, i]
                out[r, j] = s
    elif mode == MAXPLUS:
        for r in range(n):
            for j in range(m):
                aj = a[r, j]
                if aj == -np.inf:
                    continue
                for i in range(p):
                    v = aj + b[r, i]
                    if v > out[r, j + i]:
                        out[r, j + i] = v
    else:
        for r in range(n):
            for j in range(m):
                aj = a[r, j]
                if aj == 0.0:
                    continue
                for i in range(p):
                    out[r, j + i] += aj * b[r, i]
    return out


@njit(no_cfunc_wrapper=True)
def clean_normalize_rows(x, noise, logmax):
    """In place: zero entries below ``noise`` times the row maximum (and negatives), divide each
    row by its maximum; write the log of the maxima (``-inf`` for an all-zero row, left as is) to
    ``logmax`` (n,) and return it."""
    n, w = x.shape
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


@njit(no_cfunc_wrapper=True)
def shift_rows(a, delta, out):
    """Rows of ``a`` (R, m) moved to new windows: ``out[r, j] = a[r, delta[r] + j]`` where ``0 <=
    delta[r] + j < m``, for ``j < width``; ``out`` (R, width) is zero on entry (the rest stays 0)
    and is returned."""
    n_rows, m = a.shape
    width = out.shape[1]
    for r in range(n_rows):
        d = delta[r]
        lo = -d if d < 0 else 0
        hi = m - d if m - d < width else width
        for j in range(lo, hi):
            out[r, j] = a[r, d + j]
    return out


@njit(no_cfunc_wrapper=True)
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


@njit(no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _logaddexp(x, y):
    if x == -np.inf:
        return y
    if y == -np.inf:
        return x
    if x > y:
        return x + np.log1p(np.exp(y - x))
    return y + np.log1p(np.exp(x - y))


@njit(no_cfunc_wrapper=True)
def chain_stack(theta, f, cap, log_odds, count, logz, offset, free, th, alpha, beta, newb, log1, log0):
    """The log-space chain algorithm on every model of a stack, in place on the outputs: the one
    compiled chain (``chain_marginals`` is a stack of one, ``marginals_batch`` any stack).

    ``theta`` (B, D), ``f`` (B, D + 1). Per model, the clamped variables (``theta = ±inf``) are taken
    out (``n_on`` of them on), counts above ``cap`` are cut off (``kmax = min(n_free, max(0, cap -
    n_on))`` counts of the free variables are kept; ``cap = D`` keeps all), and the chain algorithm
    runs on the free variables with ``f[n_on : n_on + kmax + 1]``. Writes ``log_odds`` (B, D)
    (clamped variables keep their ±inf), ``count`` (B, D + 1, zero on entry), ``logz`` (B,) the log
    partition function without the offset ``sum_d max(theta_d, 0)`` of the free variables and
    ``offset`` (B,) that offset, summed with compensation (Neumaier). ``free`` (D,) int64 and ``th``
    (D,) are work arrays, the rest those of the chain for ``kmax = D`` (below); after the call they
    hold the last model's: ``log1[:n_free]``, ``log0[:n_free]`` and the log count weights
    ``alpha[n_free (kmax + 1) : (n_free + 1) (kmax + 1)]``.

    The chain algorithm (Sec. 6.1 of Tarlow et al. 2012) in log space, O(D * kmax), is written out
    here, not in a helper inlined by numba: inlining costs a tenth of this kernel's compilation.
    Forward: ``alpha[d, k] = log sum_{y_<d, |y_<d| = k} exp(theta . y) - sum_{j<d} max(theta_j, 0)``.
    Backward: ``beta[j] = log sum_{y_>=d} exp(theta . y_>=d + f(j + |y_>=d|)) - sum_{i>=d} max(theta_i, 0)``
    for a prefix count j. Subtracting the per-step offsets keeps the stored numbers small (the cost
    of deviating from the best configuration), so the rounding error of every log-add-exp is small
    and common offsets cancel exactly in probabilities. Work arrays (float64; their contents on
    entry do not matter): ``alpha`` with at least ``(D + 1) (kmax + 1)`` entries (row d of the
    forward messages at ``d (kmax + 1)``: on return row D holds the log count weights without the
    offset), ``beta`` and ``newb`` with at least ``kmax + 2``, and ``log1`` and ``log0`` with at
    least D: the log mass of y_d = 1 and of y_d = 0 (both without a common offset).
    """
    B, D = theta.shape
    ninf = -np.inf
    for b in range(B):
        n_on = 0
        n_free = 0
        for d in range(D):
            t = theta[b, d]
            log_odds[b, d] = t  # clamped variables keep their ±inf
            if t == np.inf:
                n_on += 1
            elif t > -np.inf:
                free[n_free] = d
                n_free += 1
        for i in range(n_free):
            th[i] = theta[b, free[i]]
        kmax = th[:n_free].shape[0]  # n_free (typed int64 from the start, not the literal 0 first)
        kmax = min(kmax, max(cap - n_on, 0))
        f_eff = f[b, n_on : n_on + kmax + 1]
        # the chain on th[:n_free] and f_eff: forward messages
        w = kmax + 1
        alpha[0] = 0.0
        for k in range(1, w):
            alpha[k] = ninf
        for d in range(n_free):
            t = th[d]
            m = max(t, 0.0)
            row = d * w
            for k in range(w):
                v = alpha[row + k] - m
                if k > 0:
                    v = _logaddexp(v, alpha[row + k - 1] + (t - m))
                alpha[row + w + k] = v
        # backward messages and the log masses of y_d = 1 and y_d = 0
        for j in range(w):
            beta[j] = f_eff[j]
        beta[w] = ninf
        newb[w] = ninf  # beta and newb trade places at every step
        for d in range(n_free - 1, -1, -1):
            t = th[d]
            m = max(t, 0.0)
            row = d * w
            s1 = ninf
            s0 = ninf
            for j in range(w):
                a = alpha[row + j]
                if a == ninf:
                    continue
                s0 = _logaddexp(s0, a - m + beta[j])
                s1 = _logaddexp(s1, a + (t - m) + beta[j + 1])
            log1[d] = s1
            log0[d] = s0
            for j in range(w):
                newb[j] = _logaddexp(beta[j] - m, (t - m) + beta[j + 1])
            beta, newb = newb, beta
        last = n_free * w  # the last row of alpha: the log count weights
        lz = ninf
        for k in range(w):
            lz = _logaddexp(lz, alpha[last + k] + f_eff[k])
        for i in range(n_free):
            log_odds[b, free[i]] = log1[i] - log0[i]
        for k in range(w):
            p = np.exp(alpha[last + k] + f_eff[k] - lz)
            if p == p:  # NaN (both -inf): 0, as count is on entry
                count[b, n_on + k] = p
        logz[b] = lz
        s = 0.0
        c = 0.0
        for i in range(n_free):
            v = max(th[i], 0.0)
            t = s + v
            if s >= v:  # |s| >= |v|: both are >= 0
                c += (s - t) + v
            else:
                c += (v - t) + s
            s = t
        offset[b] = s + c


@njit(inline="always")
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


@njit(no_cfunc_wrapper=True)
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
                        for i in range(used):  # a loop, not a slice copy: no broadcasting code to compile
                            nb[i] = buf[i]
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


@njit(no_cpython_wrapper=True, no_cfunc_wrapper=True)
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
        # min(int64(max(w, 0) 2^53), 2^53), without the builtins (whose implementations would be
        # compiled once more for this function's options)
        keep = np.int64(0)
        if w[i] > 0.0:
            keep = np.int64(w[i] * _ONE)
        if keep > _ONE:
            keep = _ONE
        thr[pos + i] = keep


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


_S9, _S11, _S14, _S28, _S36, _S55 = (np.uint64(k) for k in (9, 11, 14, 28, 36, 55))  # shift counts


@njit(inline="always")
def _xoroshiro(s0, s1):
    """One xoroshiro128+ step on a state held in locals (the kernels' stores could alias a state
    array, forcing a reload per draw): returns (uniform in [0, 1), new s0, new s1), the same
    sequence as :func:`tractable._random.uniform`."""
    result = s0 + s1
    s1 ^= s0
    s0 = ((s0 << _S55) | (s0 >> _S9)) ^ s1 ^ (s1 << _S14)
    s1 = (s1 << _S36) | (s1 >> _S28)
    return float(result >> _S11) * (1.0 / 9007199254740992.0), s0, s1


def split_table_bound(n_leaves: int, block_height: int, n_levels: int, alias_max: int) -> int:
    """Entries that the split alias tables of :func:`sample_descent_alias` can take at most, for a
    balanced tree of ``n_leaves`` real leaves and ``n_levels`` levels with blocks of ``2^block_height``
    leaves: a node with children of ``len_l`` and ``len_r`` possible counts has at most ``len_l len_r``
    entries in all its tables, and it has tables only if it has at most ``alias_max`` real leaves.
    At a level ``h`` with ``2^h <= alias_max``, that is every node (at most ``(n >> h) + 1`` have
    real leaves, children of ``2^(h - 1) + 1`` counts at most); above, only the one node that is
    partly padding can be that small (children counts summing to at most ``alias_max + 2``)."""
    total = 0
    for h in range(block_height + 1, n_levels + 1):
        if (1 << h) <= alias_max:
            total += ((n_leaves >> h) + 1) * ((1 << (h - 1)) + 1) ** 2
        else:
            total += ((alias_max + 2) // 2 + 1) ** 2
    return total


@njit(no_cfunc_wrapper=True)
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
    n_table,
    block_node0,
    leaf_w,
    masks,
    start,
    patterns,
    state,
    slot_base,
    slots,
    ttotal,
    rows,
    tile,
):
    """Exact joint samples given root counts: split counts top-down, then one draw per leaf block.

    Node ids ``block_node0 + b`` are the blocks of ``block`` leaves (leaves ``b * block ..``);
    ``root`` is the root (a block itself when the tree has a single block). Each sample's count
    ``c`` at a node is split by drawing the left count j with weight ``up_left(j) up_right(c - j)``
    (Sec. 5.3 of Tarlow et al. 2012), over the children's non-zero windows ``nz_lo .. nz_hi`` only
    (the structural range ``max(0, c - (len_r - 1)) .. min(c, len_l - 1)`` if that cut is empty):

    * at nodes with at most ``alias_max`` leaves, from an alias table per (node, count), built on
      first use and shared by every later sample (one uniform, one table lookup per draw);
    * above, by inversion walking from the split's mode (:func:`_split_walk`; its total and mode
      are computed once per (node, count)), where a table would cost the node's size to build.

    The split tables take at most ``n_table`` entries: the (node, count) tables of a node hold at
    most ``len_l len_r`` entries together (one per pair of children's counts), summed over the
    nodes of at most ``alias_max`` leaves (:func:`split_table_bound`). The (node, count) pairs of the
    internal nodes above the blocks are the slots ``slot_base[v] + c``; ``slots`` (n_slots, 3)
    int64 holds each one's table position (small nodes) or mode (large ones), its first left count
    and its number of left counts, ``ttotal`` (n_slots,) the total weight of a large node's split;
    ``slots[:, 0]`` is ``-1`` on entry (not built yet).

    Each block's configuration given its count r is one alias draw over the configurations with r
    leaves on. ``masks`` lists all ``2^block`` configurations (bit i = leaf i on) sorted by popcount,
    those with popcount r at ``start[r]:start[r + 1]`` (``start`` has ``block + 2`` entries); a
    configuration's weight is the product of its leaves' weights ``leaf_w`` (2 pad,) (leaf i's
    weights of 0 and 1 at 2i and 2i + 1; summed in log space and shifted by the segment's maximum,
    so nothing underflows). The tables of every block and count are built first (:func:`alias_table`,
    block b's segment r at ``b * 2^block + start[r]``). A drawn configuration is written as the
    8-byte pattern ``patterns[idx]`` (byte i = leaf i); the result is (S, n_blocks) uint64, row s
    viewed as bytes is sample s.

    Samples run in chunks of ``rows.shape[1]`` and the nodes depth first (blocks included), all
    samples of the chunk at once per node: a node's tables are built and used while in cache, and
    only the count rows of the current path (two per depth: ``rows`` (2 depth + 2, chunk) int32,
    ``tile`` (chunk, 8) uint64 are work arrays) are live. Blocks are collected 8 at a time in the
    tile, so each sample's row gets whole 64-byte lines. Every draw is exact and takes its own
    uniform from ``state`` (xoroshiro, updated in place): the same state gives the same samples.
    """
    n_samples = root_counts.shape[0]
    n_cfg = patterns.shape[0]
    block = start.shape[0] - 2
    n_blocks = leaf_w.shape[0] // (2 * block)
    n_small = block_node0 + n_blocks  # nodes below are blocks or their leaves: no split tables
    n_work = max(n_cfg, alias_max + 2)
    wbuf = np.empty(n_work)  # the weights of one alias table
    work = np.empty(n_work, dtype=np.int64)

    # the alias tables of the blocks: block b's configurations with r leaves on
    blk_prob = np.empty(n_blocks * n_cfg, dtype=np.int64)
    blk_alias = np.empty(2 * n_blocks * n_cfg, dtype=np.int16)
    by_mask = np.empty(n_cfg)
    logv = np.empty(leaf_w.shape[0])  # log leaf weights, -inf for zero ones
    for i in range(leaf_w.shape[0]):
        logv[i] = -np.inf
        if leaf_w[i] > 0.0:
            logv[i] = np.log(leaf_w[i])
    for bk in range(n_blocks):
        # log weight of every mask, leaf by leaf: masks over leaves < i + 1 from those over leaves
        # < i (2^(block + 1) adds per block instead of block 2^block)
        by_mask[0] = 0.0
        for i in range(block):
            x = 2 * (bk * block + i)
            half = 1 << i
            for mk in range(half):
                by_mask[half + mk] = by_mask[mk] + logv[x + 1]
                by_mask[mk] += logv[x]
        for r in range(block + 1):
            a = start[r]
            n = start[r + 1] - a
            peak = -np.inf
            for q in range(n):
                peak = max(peak, by_mask[masks[a + q]])
            for q in range(n):
                wbuf[q] = 0.0
                if peak > -np.inf:
                    wbuf[q] = np.exp(by_mask[masks[a + q]] - peak)
            alias_table(wbuf, n, blk_prob, blk_alias, bk * n_cfg + a, work)

    # allocated here, not by numpy: numpy asks the kernel for huge pages on large arrays, whose
    # synchronous compaction can take seconds on a busy machine; the tile keeps writes local anyway
    out = np.empty((n_samples, n_blocks), dtype=np.uint64)
    # the split tables, one after the other as built (n_table entries suffice: see the docstring);
    # allocated here too, and only the part used is ever touched
    tprob = np.empty(n_table, dtype=np.int64)
    talias = np.empty(2 * n_table, dtype=np.int16)
    used = np.int64(0)
    chunk = rows.shape[1]
    stack_v = np.empty(rows.shape[0], dtype=np.int64)  # depth + 2 entries at most
    stack_row = np.empty(rows.shape[0], dtype=np.int64)
    s0 = state[0]
    s1 = state[1]
    for c0 in range(0, n_samples, chunk):
        m = min(chunk, n_samples - c0)
        for s in range(m):
            rows[0, s] = root_counts[c0 + s]
        top = 1
        stack_v[0] = root
        stack_row[0] = 0
        while top > 0:  # depth first, left subtree first; the right child's row survives it
            top -= 1
            v = stack_v[top]
            row = stack_row[top]
            if v < n_small:  # a block: draw its configurations into the tile
                bk = v - block_node0
                base = bk * n_cfg
                col = bk & 7
                for s in range(m):
                    cnt = rows[row, s]
                    a = start[cnt]
                    u, s0, s1 = _xoroshiro(s0, s1)
                    tile[s, col] = patterns[a + _alias_draw(blk_prob, blk_alias, base + a, start[cnt + 1] - a, u)]
                if col == 7 or bk == n_blocks - 1:  # blocks come in order: a group is complete
                    for s in range(m):
                        for i in range(col + 1):
                            out[c0 + s, bk - col + i] = tile[s, i]
                continue
            lv = left[v]
            rv = right[v]
            lrow = 2 * (row // 2 + 1)
            rrow = lrow + 1
            len_l = length[lv]
            len_r = length[rv]
            full = length[v] - 1
            off_l = offset[lv]
            off_r = offset[rv]
            sb = slot_base[v]
            small = full <= alias_max
            for s in range(m):
                c = np.int64(rows[row, s])
                if c == 0:
                    rows[lrow, s] = 0
                    rows[rrow, s] = 0
                    continue
                if c == full:
                    rows[lrow, s] = len_l - 1
                    rows[rrow, s] = len_r - 1
                    continue
                slot = sb + c
                if slots[slot, 0] < 0:
                    # the left counts j of possibly non-zero weight: the children's non-zero
                    # windows, or the structural range if their cut is empty
                    lo = max(nz_lo[lv], c - nz_hi[rv])
                    hi = min(nz_hi[lv], c - nz_lo[rv])
                    if hi < lo:
                        lo = max(0, c - (len_r - 1))
                        hi = min(c, len_l - 1)
                    n = hi - lo + 1
                    slots[slot, 1] = lo
                    slots[slot, 2] = n
                    if small:
                        for i in range(n):
                            wbuf[i] = up[off_l + lo + i] * up[off_r + c - lo - i]
                        alias_table(wbuf, n, tprob, talias, used, work)
                        slots[slot, 0] = used
                        used += n
                    else:  # total and mode of the split
                        total = 0.0
                        best = -1.0
                        mode = lo
                        for j in range(lo, hi + 1):
                            wj = up[off_l + j] * up[off_r + c - j]
                            total += wj
                            if wj > best:
                                best = wj
                                mode = j
                        ttotal[slot] = total
                        slots[slot, 0] = mode
                lo = slots[slot, 1]
                u, s0, s1 = _xoroshiro(s0, s1)
                if small:
                    j = lo + _alias_draw(tprob, talias, slots[slot, 0], slots[slot, 2], u)
                else:
                    j = _split_walk(up, off_l, off_r, lo, lo + slots[slot, 2] - 1, c, slots[slot, 0], u * ttotal[slot])
                rows[lrow, s] = j
                rows[rrow, s] = c - j
            stack_v[top] = rv
            stack_row[top] = rrow
            stack_v[top + 1] = lv
            stack_row[top + 1] = lrow
            top += 2
    state[0] = s0
    state[1] = s1
    return out
