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
_UP, _DOWN = 0, 1  # the passes of :func:`_levels`
_NO_ROWS = np.zeros((0, 2))  # the arguments a pass leaves unused
_NO_SCALES = np.zeros(0)


def direct_top(n_levels: int, use_fft) -> int:
    """Number of bottom levels convolved directly: levels ``h = 1..top`` have children of ``2^(h-1) +
    1`` entries, at most the crossover (``use_fft(width)`` false)."""
    top = 0
    while top < n_levels and not use_fft((1 << top) + 1):
        top += 1
    return top


def level_sizes(pad: int, top: int) -> tuple[int, int]:
    """Entries of the flat values and of the flat scales of levels ``0..top`` (:func:`up_direct_levels`)."""
    return (top + 1) * pad + (2 * pad - (pad >> top)), 2 * pad - (pad >> top)


@njit(inline="always")
def _level_start(pad, h):
    """Start of level ``h`` in the flat values and in the flat scales: level g has ``pad >> g`` rows
    of ``2^g + 1`` entries (``pad`` a power of two >= ``2^g``), so the levels below h hold ``h pad +
    sum_g (pad >> g)`` entries and ``sum_g (pad >> g)`` scales."""
    s = 0
    for g in range(h):
        s += pad >> g
    return h * pad + s, s


def up_direct_levels(leaf_logw: np.ndarray, pad: int, top: int) -> tuple[np.ndarray, np.ndarray]:
    """Upward messages of levels ``0..top``: the leaves, then direct convolutions.

    leaf_logw : (n, 2) float64 log weights of ``y = 0`` and ``y = 1`` (not both ``-inf``); pad : a
    power of two >= n and >= ``2^top``. Level 0 holds each leaf's weights with the larger one
    exactly 1 (padding leaves ``n..pad-1``: ``(1, 0)``, scale 0); every row of a level ``h >= 1``
    has its maximum in [2^-20, 2^20] (:func:`_rescale`). Returns ``flat`` (level h from the first
    entry of :func:`level_sizes` of ``h - 1`` on, row-major ``(pad >> h, 2^h + 1)``) and ``sflat``
    (log scales, level h from the second).
    """
    size, ssize = level_sizes(pad, top)
    flat, sflat = np.zeros(size), np.zeros(ssize)
    _levels(
        _UP, np.ascontiguousarray(leaf_logw, dtype=np.float64), _NO_SCALES, flat, sflat, pad, top, _NO_ROWS, _NO_SCALES
    )
    return flat, sflat


_BIG = 2.0**20  # rows are rescaled only when their maximum leaves [1 / _BIG, _BIG]
_SMALL = 1.0 / _BIG


@njit(no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _rescale(buf, w):
    """Keep ``buf[:w]`` (non-negative) in range: if its maximum is outside [2^-20,
    2^20], scale it by a power of two (exact) to a maximum in [0.5, 1). Returns the log of the
    factor removed (0 when left alone; ``-inf`` and the row left 0 if it is all zero)."""
    mx = 0.0
    for k in range(w):
        if buf[k] > mx:
            mx = buf[k]
    if mx >= _SMALL and mx <= _BIG:
        return 0.0
    if mx == 0.0:
        return -np.inf
    e = math.frexp(mx)[1]
    f = math.ldexp(1.0, -e)
    for k in range(w):
        buf[k] *= f
    return e * _LN2


def down_direct_levels(a_top, s_top, flat, sflat, pad: int, top: int) -> tuple[np.ndarray, np.ndarray]:
    """Messages into the leaves from above, given the messages into the nodes of level ``top``.

    a_top : (pad >> top, 2^top + 1) messages into level ``top`` (counts 0..2^top); s_top : their
    log scales (``-inf`` for a zero message). flat, sflat : the upward messages of levels
    ``0..top`` (:func:`up_direct_levels`). Returns (pad, 2) messages into the leaves (maximum in
    [2^-20, 2^20], or all zero) and (pad,) log scales (``-inf`` for zero rows).
    """
    out, sout = np.empty((pad, 2)), np.empty(pad)
    a_top = np.ascontiguousarray(a_top, dtype=np.float64)
    s_top = np.ascontiguousarray(s_top, dtype=np.float64)
    _levels(_DOWN, a_top, s_top, flat, sflat, pad, top, out, sout)
    return out, sout


@njit(no_cfunc_wrapper=True)
def _levels(mode, x, s_top, flat, sflat, pad, top, out, sout):
    """Both passes in one kernel (one compilation, and :func:`_rescale` linked once).

    ``mode`` ``_UP``: :func:`up_direct_levels` of the leaves' log weights ``x`` (n, 2) into ``flat`` and
    ``sflat`` (zero on entry); ``s_top``, ``out`` and ``sout`` unused. ``_DOWN``:
    :func:`down_direct_levels` of the messages ``x`` (pad >> top, 2^top + 1) and their log scales
    ``s_top`` into ``out`` (pad, 2) and ``sout`` (pad,).
    """
    if mode == _UP:
        n = x.shape[0]
        for i in range(n):
            a = x[i, 0]
            b = x[i, 1]
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
        ob = 0  # start of level h - 1 in flat and in sflat
        sob = 0
        for h in range(1, top + 1):
            rows = pad >> h
            w = (1 << h) + 1
            oc = ob + 2 * rows * wp  # start of level h
            soc = sob + 2 * rows
            lvl = flat[oc : oc + rows * w]
            below = flat[ob:oc]
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
                sflat[soc + r] = sflat[sob + 2 * r] + sflat[sob + 2 * r + 1] + _rescale(row, w)
            wp = w
            ob = oc
            sob = soc
        return
    n_blocks = x.shape[0]
    block = 1 << top
    w_top = block + 1
    half = 2 * block + 2
    buf = np.empty(2 * half)  # the messages into one level of the block and into the next, by halves
    sbuf = np.empty(2 * block)  # their log scales, by halves
    for blk in range(n_blocks):
        cur = 0  # the current half of buf (0 or half) and of sbuf (scur: 0 or block)
        scur = 0
        for k in range(w_top):
            buf[k] = x[blk, k]
        sbuf[0] = s_top[blk]
        for h in range(top, 0, -1):
            nxt = half - cur
            snxt = block - scur
            nb = block >> h  # nodes of level h in this block
            w = (1 << h) + 1
            wc = (1 << (h - 1)) + 1  # w = 2 wc - 1: a[j + i] exists for all j, i < wc
            o, so = _level_start(pad, h - 1)
            lvl = flat[o : o + (pad >> (h - 1)) * wc]
            slv = sflat[so : so + (pad >> (h - 1))]
            for q in range(nb):
                # slices, so that every index below is a loop counter (no wrap-around checks)
                child = 2 * (blk * nb + q)  # row of the left child in level h - 1
                ul = lvl[child * wc : child * wc + wc]
                ur = lvl[child * wc + wc : child * wc + 2 * wc]
                par = buf[cur + q * w : cur + q * w + w]
                out_l = buf[nxt + 2 * q * wc : nxt + 2 * q * wc + wc]
                out_r = buf[nxt + 2 * q * wc + wc : nxt + 2 * q * wc + 2 * wc]
                for j in range(wc):
                    acc_l = 0.0
                    acc_r = 0.0
                    for i in range(wc):
                        aj = par[j + i]
                        acc_l += aj * ur[i]
                        acc_r += aj * ul[i]
                    out_l[j] = acc_l
                    out_r[j] = acc_r
                sbuf[snxt + 2 * q] = sbuf[scur + q] + slv[child + 1] + _rescale(out_l, wc)
                sbuf[snxt + 2 * q + 1] = sbuf[scur + q] + slv[child] + _rescale(out_r, wc)
            cur = nxt
            scur = snxt
        for q in range(block):
            out[blk * block + q, 0] = buf[cur + 2 * q]
            out[blk * block + q, 1] = buf[cur + 2 * q + 1]
            sout[blk * block + q] = sbuf[scur + q]
