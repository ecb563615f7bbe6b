"""Compiled message kernels of cardinality factors (all factors of a group in one call).

Every kernel reads the incoming log messages ``mu[e, 0:2]`` (variable -> factor, normalized, so the
larger entry is at most 0 and no entry is NaN; one entry may be ``-inf``) of each factor's edges
``edges[indptr[a]:indptr[a + 1]]`` and writes the outgoing log messages ``out[e, 0:2]`` (factor ->
variable), up to a constant per edge. ``f[f_ptr[a]:f_ptr[a + 1]]`` is factor ``a``'s count potential.
"""

from __future__ import annotations

import numpy as np

from .._numba import njit

_NINF = -np.inf


@njit(inline="always")
def _lae(x, y):
    """``log(exp(x) + exp(y))``, exact for ``-inf`` operands."""
    if x == _NINF:
        return y
    if y == _NINF:
        return x
    if x > y:
        return x + np.log1p(np.exp(y - x))
    return y + np.log1p(np.exp(x - y))


@njit
def chain_sum_messages(indptr, edges, f_ptr, f, kmax, flip, mu, out, logz):
    """Sum-product messages of cardinality factors by the log-space chain, O(D * (kmax + 1)) each.

    The chain of Tarlow et al. (2012), Sec. 6.1, run on the incoming messages as per-state weights
    ``w_d(0) = mu[e_d, 0]``, ``w_d(1) = mu[e_d, 1]``: ``alpha[d, k]`` sums the weights of the first
    ``d`` variables with ``k`` of them on, ``beta[j]`` the weights of the variables after ``d`` times
    ``f(j + their count)``. The message to variable ``d`` is ``sum_j alpha[d, j] beta[j + y_d]`` and
    never involves ``w_d``: no division by the incoming message, so ``-inf`` weights (clamped
    variables) need no special case. Counts above ``kmax[a]`` (the largest count with finite ``f``)
    have zero mass and are not stored. With ``flip[a]`` the chain runs on ``1 - y`` (reversed ``f``),
    which is cheaper when only counts near ``D`` are allowed.

    ``logz[a]`` receives ``log sum_y exp(f(|y|) + sum_d w_d(y_d))``, the factor's local partition
    function given its incoming messages.
    """
    for a in range(indptr.shape[0] - 1):
        e0 = indptr[a]
        d_total = indptr[a + 1] - e0
        fa = f[f_ptr[a] : f_ptr[a + 1]]
        km = kmax[a]
        fl = flip[a]
        alpha = np.full((d_total + 1, km + 1), _NINF)
        alpha[0, 0] = 0.0
        for d in range(d_total):
            e = edges[e0 + d]
            w0 = mu[e, 1] if fl else mu[e, 0]
            w1 = mu[e, 0] if fl else mu[e, 1]
            for k in range(km + 1):
                v = alpha[d, k] + w0
                if k > 0:
                    v = _lae(v, alpha[d, k - 1] + w1)
                alpha[d + 1, k] = v
        beta = np.full(km + 2, _NINF)
        for j in range(km + 1):
            beta[j] = fa[d_total - j] if fl else fa[j]
        newb = np.empty(km + 2)
        newb[km + 1] = _NINF
        for d in range(d_total - 1, -1, -1):
            e = edges[e0 + d]
            w0 = mu[e, 1] if fl else mu[e, 0]
            w1 = mu[e, 0] if fl else mu[e, 1]
            s0 = _NINF
            s1 = _NINF
            for j in range(km + 1):
                x = alpha[d, j]
                if x == _NINF:
                    continue
                s0 = _lae(s0, x + beta[j])
                s1 = _lae(s1, x + beta[j + 1])
            if fl:
                out[e, 0] = s1
                out[e, 1] = s0
            else:
                out[e, 0] = s0
                out[e, 1] = s1
            for j in range(km + 1):
                newb[j] = _lae(beta[j] + w0, beta[j + 1] + w1)
            for j in range(km + 1):
                beta[j] = newb[j]
        z = _NINF
        for k in range(km + 1):
            z = _lae(z, alpha[d_total, k] + (fa[d_total - k] if fl else fa[k]))
        logz[a] = z


@njit
def sort_max_messages(indptr, edges, f_ptr, f, mu, out):
    """Max-product messages of cardinality factors by sorting, O(D log D) each.

    With ``theta_d = w_d(1) - w_d(0)`` the message to ``d`` is, up to a constant,
    ``max_k f(k) + (best sum of the theta of the other variables that are on)``. Sorting the free
    variables' ``theta`` in decreasing order with prefix sums ``S``, the best sum of ``j`` others is
    ``S[j]`` when ``d`` ranks at ``j`` or below and ``S[j + 1] - theta_d`` otherwise, so prefix and
    suffix maxima over ``j`` give every message in O(D). Variables whose incoming message forbids a
    state (``theta = ±inf``) are clamped: they shift the count instead of being sorted.
    """
    for a in range(indptr.shape[0] - 1):
        e0 = indptr[a]
        d_total = indptr[a + 1] - e0
        fa = f[f_ptr[a] : f_ptr[a + 1]]
        theta = np.empty(d_total)
        n_on = 0
        n_free = 0
        free = np.empty(d_total, dtype=np.int64)
        for d in range(d_total):
            e = edges[e0 + d]
            if mu[e, 0] == _NINF:
                n_on += 1
            elif mu[e, 1] != _NINF:
                theta[n_free] = mu[e, 1] - mu[e, 0]
                free[n_free] = d
                n_free += 1
        th = theta[:n_free]
        order = np.argsort(-th)
        s = np.zeros(n_free + 1)
        for r in range(n_free):
            s[r + 1] = s[r] + th[order[r]]
        # free variable at rank r: others' best j-sum is s[j] (j <= r) or s[j + 1] - theta (j > r)
        # m(1) = max_j g[j + 1] + T(j), m(0) = max_j g[j] + T(j), g[k] = f[n_on + k], j = 0 .. n_free - 1
        if n_free > 0:
            pre1 = np.empty(n_free)
            pre0 = np.empty(n_free)
            suf1 = np.full(n_free + 1, _NINF)
            suf0 = np.full(n_free + 1, _NINF)
            run1 = _NINF
            run0 = _NINF
            for j in range(n_free):
                run1 = max(run1, fa[n_on + j + 1] + s[j])
                run0 = max(run0, fa[n_on + j] + s[j])
                pre1[j] = run1
                pre0[j] = run0
            for j in range(n_free - 1, -1, -1):
                suf1[j] = max(suf1[j + 1], fa[n_on + j + 1] + s[j + 1])
                suf0[j] = max(suf0[j + 1], fa[n_on + j] + s[j + 1])
            for r in range(n_free):
                i = order[r]
                t = th[i]
                e = edges[e0 + free[i]]
                m1 = max(pre1[r], suf1[r + 1] - t)
                m0 = max(pre0[r], suf0[r + 1] - t)
                out[e, 0] = m0
                out[e, 1] = m1
        # clamped variables: j = number of free variables on, count = clamped-on others + j (+ 1)
        on1 = _NINF
        on0 = _NINF
        off1 = _NINF
        off0 = _NINF
        n_off = d_total - n_on - n_free
        for j in range(n_free + 1):
            if n_on > 0:
                on1 = max(on1, fa[n_on + j] + s[j])
                on0 = max(on0, fa[n_on - 1 + j] + s[j])
            if n_off > 0:
                off1 = max(off1, fa[n_on + 1 + j] + s[j])
                off0 = max(off0, fa[n_on + j] + s[j])
        for d in range(d_total):
            e = edges[e0 + d]
            if mu[e, 0] == _NINF:
                out[e, 0] = on0
                out[e, 1] = on1
            elif mu[e, 1] == _NINF:
                out[e, 0] = off0
                out[e, 1] = off1


@njit(inline="always")
def _lse_shifted(x, k):
    """``(max, log sum exp(x - max))`` of ``x[:k]``; ``(-inf, 0)`` when every entry is ``-inf``."""
    m = _NINF
    for a in range(k):
        if x[a] > m:
            m = x[a]
    if m == _NINF:
        return m, 0.0
    s = 0.0
    for a in range(k):
        s += np.exp(x[a] - m)
    return m, np.log(s)


@njit
def tree_sum_product(order, parent, edge, child_is_v, unary, pairwise, node_m, edge_m, contrib):
    """Exact sum-product on a rooted forest, nodes in ``order`` (every parent before its children).

    The compiled form of :func:`tractable.bp.tree._sum_product` (which stays as the readable twin):
    an upward pass in reverse ``order`` (each node's message to its parent, normalized, its log
    normalizer in ``contrib``), the roots' normalizers, then a downward pass in ``order`` giving each
    node's message from its parent; a parent's incoming messages are kept as a finite sum plus a count
    of ``-inf`` terms, so the cavity (parent belief without one child) never computes ``-inf - -inf``.
    Writes ``node_m`` (N, k), ``edge_m`` (E, k, k) in the edges' given orientation and ``contrib`` (N,);
    returns False when some tree has no configuration of positive mass.
    """
    n, k = unary.shape
    fin = np.zeros((n, k))
    ninf = np.zeros((n, k), dtype=np.int64)
    up = np.zeros((n, k))
    down = np.zeros((n, k))
    below = np.empty(k)
    msg = np.empty(k)
    cav = np.empty(k)
    for t in range(n - 1, -1, -1):
        c = order[t]
        for b in range(k):
            below[b] = _NINF if ninf[c, b] > 0 else unary[c, b] + fin[c, b]
        p = parent[c]
        if p < 0:
            m, ls = _lse_shifted(below, k)
            if m == _NINF:
                return False
            contrib[c] = m + ls
            continue
        e = edge[c]
        for a in range(k):
            for b in range(k):
                msg_b = (pairwise[e, a, b] if child_is_v[c] else pairwise[e, b, a]) + below[b]
                cav[b] = msg_b
            m, ls = _lse_shifted(cav, k)
            msg[a] = m + ls
        m, ls = _lse_shifted(msg, k)
        if m == _NINF:
            return False
        z = m + ls
        contrib[c] = z
        for a in range(k):
            v = msg[a] - z
            up[c, a] = v
            if v == _NINF:
                ninf[p, a] += 1
            else:
                fin[p, a] += v
    for t in range(n):
        c = order[t]
        p = parent[c]
        for b in range(k):
            below[b] = _NINF if ninf[c, b] > 0 else unary[c, b] + fin[c, b]
        if p >= 0:
            e = edge[c]
            for a in range(k):
                u = up[c, a]
                own = 1 if u == _NINF else 0
                if ninf[p, a] - own > 0:
                    cav[a] = _NINF
                else:
                    cav[a] = unary[p, a] + down[p, a] + fin[p, a] - (0.0 if own else u)
            for b in range(k):
                for a in range(k):
                    msg[a] = (pairwise[e, a, b] if child_is_v[c] else pairwise[e, b, a]) + cav[a]
                m, ls = _lse_shifted(msg, k)
                down[c, b] = m + ls
            m, ls = _lse_shifted(down[c], k)
            for b in range(k):
                down[c, b] -= m + ls
            # edge marginal [y_parent, y_child], stored as [y_u, y_v] of the edge as given
            jm = _NINF
            for a in range(k):
                for b in range(k):
                    v = cav[a] + (pairwise[e, a, b] if child_is_v[c] else pairwise[e, b, a]) + below[b]
                    if v > jm:
                        jm = v
            s = 0.0
            for a in range(k):
                for b in range(k):
                    v = cav[a] + (pairwise[e, a, b] if child_is_v[c] else pairwise[e, b, a]) + below[b]
                    w = np.exp(v - jm)
                    s += w
                    if child_is_v[c]:
                        edge_m[e, a, b] = w
                    else:
                        edge_m[e, b, a] = w
            for a in range(k):
                for b in range(k):
                    edge_m[e, a, b] /= s
        for b in range(k):
            cav[b] = below[b] + down[c, b]
        m, ls = _lse_shifted(cav, k)
        for b in range(k):
            node_m[c, b] = np.exp(cav[b] - m - ls)
    return True
