"""The bottom levels of the balanced convolution tree, where messages are short, in one compiled call.

Below the FFT crossover every message of the balanced tree (:mod:`._balanced`) is convolved
directly, which is exact relative to every entry. Done one level at a time with numpy, these levels
cost more in allocation, strided copies and per-row bookkeeping than in arithmetic: at D = 10^5
they are 2^17 leaves and 2^17 - 2^(17 - top) nodes of a few entries each. Here all of them are one
kernel call per pass:

* :func:`up_direct_levels` writes levels 0..top into one flat buffer: level 0 holds each leaf's
  two weights (the larger one 1, with its log scale; padding leaves are ``(1, 0)``), level ``h``
  is ``(P >> h, 2^h + 1)`` rows, row ``r`` the convolution of rows ``2r`` and ``2r + 1`` of level
  ``h - 1``;
* :func:`down_direct_levels` takes the messages into the nodes of level ``top`` (from the FFT levels
  above, or the root) and returns the messages into the leaves, one block of ``2^top`` leaves at a
  time with two small scratch buffers that stay in cache: the message into a left child is the
  parent's message correlated with the right child's upward message, and vice versa (Sec. 5.2.2 of
  Tarlow et al. 2012).

Rows are not normalized to a maximum of 1 at every level (a logarithm per row would cost more than
the convolution at the lowest levels): a row is rescaled only when its maximum leaves [2^-20, 2^20],
and then by a power of two (``math.frexp``: exact, no rounding), its log scale growing by a multiple
of ``log 2``. Entries keep their full relative precision (the range is far from under- and
overflow); the indices inside the loops are loop counters on slices, so the compiler emits no
wrap-around checks for negative indices. Structural zeros (counts above a node's number of real
leaves) come out exactly 0, because padding leaves have weight exactly 0 for ``y = 1`` and direct
convolution adds products.
"""

from __future__ import annotations

import math

import numpy as np

from .._numba import njit

_LN2 = math.log(2.0)


def direct_top(n_levels: int, use_fft) -> int:
    """Number of bottom levels convolved directly: levels ``h = 1..top`` have children of ``2^(h-1) +
    1`` entries, at most the crossover (``use_fft(width)`` false)."""
    top = 0
    while top < n_levels and not use_fft((1 << top) + 1):
        top += 1
    return top


@njit
def _level_offsets(pad, top):
    """Start of each level ``h = 0..top`` in the flat values and the flat scales (index h)."""
    off = np.zeros(top + 2, dtype=np.int64)
    soff = np.zeros(top + 2, dtype=np.int64)
    for h in range(top + 1):
        off[h + 1] = off[h] + (pad >> h) * ((1 << h) + 1)
        soff[h + 1] = soff[h] + (pad >> h)
    return off, soff


@njit
def up_direct_levels(leaf_logw, pad, top):
    """Upward messages of levels ``0..top``: the leaves, then direct convolutions.

    leaf_logw : (n, 2) float64 log weights of ``y = 0`` and ``y = 1`` (not both ``-inf``); pad : a
    power of two >= n and >= ``2^top``. Level 0 holds each leaf's weights with the larger one
    exactly 1 (padding leaves ``n..pad-1``: ``(1, 0)``, scale 0); every row of a level ``h >= 1``
    has its maximum in [2^-20, 2^20] (:func:`_rescale`). Returns ``flat`` (level h at ``off[h] ..
    off[h + 1]``, row-major ``(pad >> h, 2^h + 1)``) and ``sflat`` (log scales, level h at
    ``soff[h] ..``), offsets as :func:`_level_offsets`.
    """
    n = leaf_logw.shape[0]
    off, soff = _level_offsets(pad, top)
    flat = np.zeros(off[top + 1])
    sflat = np.zeros(soff[top + 1])
    for i in range(n):
        a = leaf_logw[i, 0]
        b = leaf_logw[i, 1]
        if a >= b:
            flat[2 * i] = 1.0
            flat[2 * i + 1] = math.exp(b - a)
            sflat[i] = a
        else:
            flat[2 * i] = math.exp(a - b)
            flat[2 * i + 1] = 1.0
            sflat[i] = b
    for i in range(n, pad):
        flat[2 * i] = 1.0
    wp = 2
    for h in range(1, top + 1):
        rows = pad >> h
        w = (1 << h) + 1
        lvl = flat[off[h] : off[h + 1]]
        below = flat[off[h - 1] : off[h]]
        for r in range(rows):
            # slices, so that every index below is a loop counter (no wrap-around checks)
            row = lvl[r * w : r * w + w]
            a = below[2 * r * wp : 2 * r * wp + wp]
            b = below[2 * r * wp + wp : 2 * r * wp + 2 * wp]
            for j in range(wp):
                aj = a[j]
                if aj == 0.0:
                    continue
                for i in range(wp):
                    row[j + i] += aj * b[i]
            # children maxima are >= 2^-20 (level 0: 1), so the maximum is > 0
            sflat[soff[h] + r] = sflat[soff[h - 1] + 2 * r] + sflat[soff[h - 1] + 2 * r + 1] + _rescale(row, w)
        wp = w
    return flat, sflat


_BIG = 2.0**20  # rows are rescaled only when their maximum leaves [1 / _BIG, _BIG]
_SMALL = 1.0 / _BIG


@njit(inline="always")
def _rescale(buf, w):
    """Keep ``buf[:w]`` (non-negative) in range: if its maximum is outside [2^-20,
    2^20], scale it by a power of two (exact) to a maximum in [0.5, 1). Returns the log of the
    factor removed (0 when left alone; ``-inf`` and the row left 0 if it is all zero)."""
    mx = 0.0
    for k in range(w):
        mx = max(mx, buf[k])
    if mx >= _SMALL and mx <= _BIG:
        return 0.0
    if mx == 0.0:
        return -np.inf
    e = math.frexp(mx)[1]
    f = math.ldexp(1.0, -e)
    for k in range(w):
        buf[k] *= f
    return e * _LN2


@njit
def down_direct_levels(a_top, s_top, flat, sflat, pad, top):
    """Messages into the leaves from above, given the messages into the nodes of level ``top``.

    a_top : (pad >> top, 2^top + 1) messages into level ``top`` (counts 0..2^top); s_top : their
    log scales (``-inf`` for a zero message). flat, sflat : the upward messages of levels
    ``0..top`` (:func:`up_direct_levels`). Returns (pad, 2) messages into the leaves (maximum in
    [2^-20, 2^20], or all zero) and (pad,) log scales (``-inf`` for zero rows).
    """
    off, soff = _level_offsets(pad, top)
    n_blocks = a_top.shape[0]
    block = 1 << top
    w_top = block + 1
    out = np.empty((pad, 2))
    sout = np.empty(pad)
    cur = np.empty(2 * block + 2)
    nxt = np.empty(2 * block + 2)
    cs = np.empty(block)
    ns = np.empty(block)
    for blk in range(n_blocks):
        for k in range(w_top):
            cur[k] = a_top[blk, k]
        cs[0] = s_top[blk]
        for h in range(top, 0, -1):
            nb = block >> h  # nodes of level h in this block
            w = (1 << h) + 1
            wc = (1 << (h - 1)) + 1  # w = 2 wc - 1: a[j + i] exists for all j, i < wc
            lvl = flat[off[h - 1] : off[h]]
            slv = sflat[soff[h - 1] : soff[h]]
            for q in range(nb):
                # slices, so that every index below is a loop counter (no wrap-around checks)
                child = 2 * (blk * nb + q)  # row of the left child in level h - 1
                ul = lvl[child * wc : child * wc + wc]
                ur = lvl[child * wc + wc : child * wc + 2 * wc]
                par = cur[q * w : q * w + w]
                out_l = nxt[2 * q * wc : 2 * q * wc + wc]
                out_r = nxt[2 * q * wc + wc : 2 * q * wc + 2 * wc]
                for j in range(wc):
                    acc_l = 0.0
                    acc_r = 0.0
                    for i in range(wc):
                        aj = par[j + i]
                        acc_l += aj * ur[i]
                        acc_r += aj * ul[i]
                    out_l[j] = acc_l
                    out_r[j] = acc_r
                ns[2 * q] = cs[q] + slv[child + 1] + _rescale(out_l, wc)
                ns[2 * q + 1] = cs[q] + slv[child] + _rescale(out_r, wc)
            cur, nxt = nxt, cur
            cs, ns = ns, cs
        for q in range(block):
            out[blk * block + q, 0] = cur[2 * q]
            out[blk * block + q, 1] = cur[2 * q + 1]
            sout[blk * block + q] = cs[q]
    return out, sout
