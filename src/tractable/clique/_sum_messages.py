"""Exact sum-product messages and partition function of a clique with any count-based potential.

For a clique of ``n`` nodes with ``m`` labels, incoming log messages ``phi`` (n, m) and a log-potential
``C`` of the count vector,

    Z = sum_y exp(C(counts(y)) + sum_u phi[u, y_u]),
    msg[u, l] = log sum_{y : y_u = l} exp(C(counts(y)) + sum_{v != u} phi[v, y_v]).

No count-based potential other than a function of one count (``m = 2``, the convolution tree of Tarlow
et al. 2012) is known to make this polynomial in ``m``: even the MAP of a Potts clique is NP-hard
(Gupta et al. 2007, Thm 3.2), and Potts' ``lam * sum_y n_y**2`` does not factor over labels. What is
exact for **every** potential (Potts, entropy, SUM and MAX tables, majority, any function) is a dynamic
program over count vectors, polynomial in ``n`` for a fixed ``m``:

* forward, ``F_i(x)``: the total weight of the labellings of nodes ``0..i-1`` with counts ``x``;
* backward, ``B_i(x) = sum_l w[i, l] B_{i+1}(x + e_l)`` from ``B_n(x) = exp(C(x))``;
* ``msg[i, l] = log sum_x F_i(x) B_{i+1}(x + e_l)`` and ``Z = sum_x F_n(x) exp(C(x))``,

with ``w = exp(phi - max_l phi)``. A count vector of ``i`` nodes is stored without its last count
(``x`` in ``Z^(m-1)``, ``|x| <= i``), ranked in graded colexicographic order so that the vectors of ``i``
nodes are a prefix of those of ``i + 1``: ``C(i + m - 1, m - 1)`` states at step ``i``, ``C(n + m, m)`` over
all steps (the memory of the forward pass), and ``O(m C(n + m, m))`` time, i.e. ``O(n^m / (m - 1)!)``.
Every level is rescaled to a maximum of 1 (its log scale kept apart), so every entry is a sum of
non-negative terms, accurate relative to itself (no FFT, no cancellation), and ``-inf`` is an exact zero.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .._numba import njit

__all__ = ["MAX_COUNT_STATES", "count_dp", "count_space", "n_count_states"]

#: the largest program (count vectors over all steps, :func:`n_count_states`) run: 32 MB of forward pass
MAX_COUNT_STATES = 4_000_000


def n_count_states(n: int, m: int) -> int:
    """Count vectors the dynamic program stores: ``C(n + m, m)`` (all steps of its forward pass)."""
    return math.comb(n + m, m)


@njit
def _space(n, d):
    """Ranks of the count vectors ``x`` in ``Z^d``, ``|x| <= n`` (graded colex order), and their successors.

    Returns ``(xs, nb)``: ``xs[r]`` (S, d) the vector of rank ``r``, ``nb[r, l]`` (S, d) the rank of
    ``xs[r] + e_l`` (-1 when ``|xs[r]| = n``).
    """
    top = n + d + 1
    binom = np.zeros((top + 1, d + 2), np.int64)
    for a in range(top + 1):
        binom[a, 0] = 1
        for b in range(1, min(a, d + 1) + 1):
            binom[a, b] = binom[a - 1, b - 1] + (binom[a - 1, b] if b <= a - 1 else 0)
    size = binom[n + d, d]
    xs = np.zeros((size, d), np.int64)
    nb = np.full((size, d), -1, np.int64)
    x = np.zeros(d, np.int64)
    q = np.zeros(max(d - 1, 1), np.int64)
    pre = np.zeros(d + 1, np.int64)
    suf = np.zeros(d + 1, np.int64)
    s = 0
    while True:
        # bars of x: q_j = x_0 + ... + x_j + j (j < d - 1); rank = offset(s) + sum_j C(q_j, j + 1)
        acc = 0
        for j in range(d - 1):
            acc += x[j]
            q[j] = acc + j
        off = binom[s - 1 + d, d] if s >= 1 else 0
        r = off
        for j in range(d - 1):
            r += binom[q[j], j + 1]
        for j in range(d):
            xs[r, j] = x[j]
        if s < n:
            # successor x + e_l: the bars j >= l move up by one
            pre[0] = 0
            for j in range(d - 1):
                pre[j + 1] = pre[j] + binom[q[j], j + 1]
            suf[d - 1] = 0
            suf[d] = 0
            for j in range(d - 2, -1, -1):
                suf[j] = suf[j + 1] + binom[q[j] + 1, j + 1]
            off1 = binom[s + d, d]
            for l in range(d):
                nb[r, l] = off1 + pre[l] + suf[l]
        # next x (odometer over |x| <= n)
        j = 0
        while j < d:
            if s < n:
                x[j] += 1
                s += 1
                break
            s -= x[j]
            x[j] = 0
            j += 1
        if j == d:
            break
    return xs, nb


@functools.lru_cache(maxsize=16)
def count_space(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``(counts, nb)`` of cliques of ``n`` nodes and ``m`` labels (cached, read-only).

    ``counts`` (S, m): the full count vector of every state of ``n`` nodes (its last count ``n - |x|``),
    ``S = C(n + m - 1, m - 1)``; ``nb`` (S, m - 1): the successor ranks (see :func:`_space`).
    """
    d = m - 1
    xs, nb = _space(n, d)
    counts = np.concatenate([xs, (n - xs.sum(axis=1))[:, None]], axis=1)
    counts.flags.writeable = False
    nb.flags.writeable = False
    return counts, nb


@njit
def count_dp(w, nb, pot, msg):
    """Forward-backward over count vectors; messages into ``msg`` (n, m); returns ``(ok, log Z)``.

    ``w`` (n, m): linear incoming weights (each row's maximum 1, zeros allowed); ``pot`` (S,) the linear
    potential at the count vectors of all ``n`` nodes (maximum 1); ``nb`` from :func:`count_space`.
    ``log Z`` is relative to those normalizations. ``ok`` is False when ``Z = 0`` (then ``msg`` is
    unspecified). A message entry whose labellings all have zero weight is ``-inf``.
    """
    n, m = w.shape
    d = m - 1
    # level sizes C(i + d, d) and offsets of the stored forward levels
    size = np.empty(n + 1, np.int64)
    size[0] = 1
    for i in range(1, n + 1):
        size[i] = size[i - 1] * (i + d) // i
    off = np.zeros(n + 2, np.int64)
    for i in range(n + 1):
        off[i + 1] = off[i] + size[i]
    fw = np.zeros(off[n + 1])
    fscale = np.zeros(n + 1)
    fw[0] = 1.0
    for i in range(1, n + 1):
        a0 = off[i - 1]
        c0 = off[i]
        wl = w[i - 1, d]
        for x in range(size[i - 1]):
            a = fw[a0 + x]
            if a == 0.0:
                continue
            fw[c0 + x] += a * wl
            for l in range(d):
                fw[c0 + nb[x, l]] += a * w[i - 1, l]
        mx = 0.0
        for x in range(size[i]):
            if fw[c0 + x] > mx:
                mx = fw[c0 + x]
        if mx == 0.0:
            return False, -np.inf
        for x in range(size[i]):
            fw[c0 + x] /= mx
        fscale[i] = fscale[i - 1] + np.log(mx)
    # Z
    z = 0.0
    for x in range(size[n]):
        z += fw[off[n] + x] * pot[x]
    if z == 0.0:
        return False, -np.inf
    log_z = np.log(z) + fscale[n]
    # backward, with the messages of node i from levels i (forward) and i + 1 (backward)
    bw = np.empty(size[n])
    nxt = np.empty(size[n])
    for x in range(size[n]):
        bw[x] = pot[x]
    bscale = 0.0
    acc = np.empty(m)
    for i in range(n - 1, -1, -1):
        a0 = off[i]
        for l in range(m):
            acc[l] = 0.0
        for x in range(size[i]):
            a = fw[a0 + x]
            if a == 0.0:
                continue
            acc[d] += a * bw[x]
            for l in range(d):
                acc[l] += a * bw[nb[x, l]]
        for l in range(m):
            msg[i, l] = (np.log(acc[l]) + fscale[i] + bscale) if acc[l] > 0.0 else -np.inf
        if i == 0:
            break
        wl = w[i, d]
        mx = 0.0
        for x in range(size[i]):
            v = wl * bw[x]
            for l in range(d):
                v += w[i, l] * bw[nb[x, l]]
            nxt[x] = v
            if v > mx:
                mx = v
        if mx == 0.0:
            return False, -np.inf
        for x in range(size[i]):
            bw[x] = nxt[x] / mx
        bscale += np.log(mx)
    return True, log_z
