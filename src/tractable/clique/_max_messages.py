"""Max-product messages of a clique with a count-based potential: every clamp of alpha-pass at once.

The message of a clique factor to its variable ``u`` (max-product, log space) is

    msg[u, l] = max over y with y_u = l of  C(counts(y)) + sum_{v != u} phi[v, y_v],

the clique's MAP with ``u`` clamped to ``l`` and ``u``'s own incoming message left out (``phi`` are the
incoming log messages, Gupta et al.'s node potentials); ``phi[u, l] + msg[u, l]`` is the max-marginal.
Computing it is as hard as the clique's MAP: NP-hard for Potts potentials (Thm 3.2 of [1]_).
Every function here returns the value of **alpha-pass run on each clamped clique** (Sec. 3.1 of [1]_),
exact where alpha-pass is exact (MAX potentials, ``m = 2``), without running it ``n m`` times.

The clamped runs share one sort per label. Clamping ``u`` to ``l`` leaves the other nodes' sort keys for
a label alpha unchanged, so the clamped run's candidate "``u`` at ``l``, the top ``j`` other nodes at
alpha, the rest at their best label other than alpha" is the unclamped candidate ``(alpha, k)`` (top
``k`` at alpha: ``k = j`` when ``u`` is not among the top ``j + 1``, else ``k = j + 1``) with ``u``
relabelled from its label ``a`` there (alpha, or its best other label ``b_u``) to ``l``. Hence

    msg[u, l] = max over alpha, k of  A(alpha, k) - phi[u, a] + C(c - e_a + e_l) - C(c),

with ``A(alpha, k)`` the candidate's score and ``c`` its counts. Per label alpha, ``u`` at sort position
``p`` sees the candidates ``k > p`` (``a = alpha``) and ``k <= p`` (``a = b_u``).

* :func:`max_family_messages` (MAX potentials ``C = max_y f_y(n_y)``, and every potential when ``m = 2``,
  written as ``f_0(n_0)``): exact, because ``max_y F(y)`` with ``y_u = l`` is
  ``max_{beta, j} f_beta(j) + (best node score of the others with j at beta)`` (the argument of Thm 3.1),
  and the best node score of the others is a prefix of the sorted list around ``u``: two running maxima
  per label give every clamp. ``O(n m log n)``.
* :func:`sum_family_messages` (SUM potentials ``C = sum_y f_y(n_y)`` with finite ``f``: Potts, entropy):
  the change ``C(c - e_a + e_l) - C(c) = f_a(c_a - 1) - f_a(c_a) + f_l(c_l + 1) - f_l(c_l)`` depends on the
  counts of ``a`` and ``l`` only, which are constant between the sort positions of nodes whose out-label is
  ``a`` or ``l``; running maxima per label, closed at those positions, give every ``(u, l)`` per sweep in
  ``O(n m)``: ``O(n m log n + n m^2)`` in all (one alpha-pass is ``O(n m log n)``).
* :func:`majority_messages` (linear majority potentials): the modified alpha-pass (Sec. 3.3.1 of [1]_)
  on every clamped clique, each candidate scored by its true potential, ``O(n^2 m^2 + n m^3)``.
* :func:`relabel_messages` (any potential, the majority family's modified alpha-pass included): the same
  candidates enumerated as arrays, ``O(n^2 m^2)`` plus ``O(n m^3)`` potential evaluations. The readable
  reference of the three kernels.

Guarantees (the message is an alpha-pass score of the clamped clique, so it is the score of a labelling
of the others: never above the exact message): exact for MAX potentials and ``m = 2``; for
``Potts(lam)`` with ``lam >= 0`` and node potentials ``phi >= 0`` at least 4/5 of the exact message (the
proof of Thm 3.3 of [1]_ holds for the clamped clique: Claim 3.1 is a sorting argument, and "all nodes at
``l``" is one of its candidates); and ``max_l phi[u, l] + msg[u, l]`` is at least the unclamped
alpha-pass score (its best candidate is a candidate of the clamp at its own label), so at least 13/15 of
the MAP (Thm 3.4).

``-inf`` in ``phi``: node scores are kept as (sum of the finite terms, number of ``-inf`` terms), and the
candidates of a node whose own term is ``-inf`` are maximized over a second set of running maxima that
admit one ``-inf`` term (its own), so that ``A - phi[u, a]`` is never ``-inf - -inf``.

References
----------
.. [1] R. Gupta, A. A. Diwan and S. Sarawagi. Efficient inference with cardinality-based clique
   potentials. ICML 2007.
"""

from __future__ import annotations

import numpy as np

from .._numba import njit
from ._kernels import _argsort_stable, _move_key
from .alpha_pass import _keys

__all__ = ["majority_messages", "max_family_messages", "relabel_messages", "sum_family_messages"]

_NEG_INF = -np.inf
_I0 = np.int64(0)
_IM1 = np.int64(-1)


@njit
def _top2(phi, t0s, t1s):
    """Each node's best and second-best label (first maxima; ties: the lower label), as alpha-pass takes them."""
    n, m = phi.shape
    for u in range(n):
        t0 = _I0
        t1 = _IM1
        for y in range(1, m):
            v = phi[u, y]
            if v > phi[u, t0]:
                t1 = t0
                t0 = y
            elif t1 < 0 or v > phi[u, t1]:
                t1 = y
        t0s[u] = t0
        t1s[u] = t1


@njit
def _sweep(phi, alpha, t0s, t1s, keys, order, buf, plab, pin, pout):
    """Sort the nodes for label ``alpha`` as alpha-pass does; fill the sweep-order arrays.

    ``order[p]`` is the node at sort position ``p``, ``plab[p]`` its best label other than alpha, ``pin[p]`` /
    ``pout[p]`` its node potential at alpha / at that label.
    """
    n = phi.shape[0]
    for u in range(n):
        b = t1s[u] if t0s[u] == alpha else t0s[u]
        plab[u] = b  # by node for now
        keys[u] = -_move_key(phi[u, alpha], phi[u, b])
    _argsort_stable(keys, n, order, buf)
    for p in range(n):
        u = order[p]
        buf[p] = plab[u]
    for p in range(n):
        u = order[p]
        plab[p] = buf[p]
        pin[p] = phi[u, alpha]
        pout[p] = phi[u, plab[p]]


@njit
def max_family_messages(phi, table):
    """Exact max-product messages (n, m) of a MAX potential ``C = max_y table[y, n_y]``.

    ``phi`` (n, m) incoming log messages (no NaN / +inf; ``-inf`` allowed), ``table`` (m, n + 1) (``-inf``
    allowed). ``msg[u, l] = max(U_l(u), max_{beta != l} T_beta(u))`` with ``T_beta(u)`` (``U_beta(u)``) the
    best over ``j`` of ``table[beta, j]`` (``table[beta, j + 1]``) plus the best node score of the other
    nodes with exactly ``j`` of them at beta: for ``u`` at sort position ``r``, ``max_{j <= r}`` and
    ``max_{j >= r}`` of prefix/suffix sums, carried as running maxima (no subtraction, so ``-inf`` is safe).
    """
    n, m = phi.shape
    t0s = np.empty(n, np.int64)
    t1s = np.empty(n, np.int64)
    _top2(phi, t0s, t1s)
    keys = np.empty(n)
    order = np.empty(n, np.int64)
    buf = np.empty(n, np.int64)
    plab = np.empty(n, np.int64)
    pin = np.empty(n)
    pout = np.empty(n)
    pre_in = np.empty(n + 1)
    suf_out = np.empty(n + 1)
    left = np.empty(n)
    right = np.empty(n)
    best1 = np.full(n, _NEG_INF)
    best2 = np.full(n, _NEG_INF)
    arg1 = np.full(n, _IM1)
    own = np.empty((n, m))
    for beta in range(m):
        _sweep(phi, beta, t0s, t1s, keys, order, buf, plab, pin, pout)
        pre_in[0] = 0.0
        for p in range(n):
            pre_in[p + 1] = pre_in[p] + pin[p]
        suf_out[n] = 0.0
        for p in range(n - 1, -1, -1):
            suf_out[p] = suf_out[p + 1] + pout[p]
        for delta in range(2):  # 0: u not at beta (T), 1: u at beta (U)
            # left[r] = max_{j <= r} table[beta, j + delta] + In(0, j) + Out(j, r)
            left[0] = table[beta, delta]
            for r in range(1, n):
                a = left[r - 1] + pout[r - 1]
                c = table[beta, r + delta] + pre_in[r]
                left[r] = a if a > c else c
            # right[r] = max_{j >= r} table[beta, j + delta] + In(r + 1, j + 1) + Out(j + 1, n)
            right[n - 1] = table[beta, n - 1 + delta]
            for r in range(n - 2, -1, -1):
                a = right[r + 1] + pin[r + 1]
                c = table[beta, r + delta] + suf_out[r + 1]
                right[r] = a if a > c else c
            for r in range(n):
                u = order[r]
                a = left[r] + suf_out[r + 1]
                c = pre_in[r] + right[r]
                v = a if a > c else c
                if delta == 1:
                    own[u, beta] = v
                elif v > best1[u] or arg1[u] < 0:
                    best2[u] = best1[u]
                    best1[u] = v
                    arg1[u] = beta
                elif v > best2[u]:
                    best2[u] = v
    out = np.empty((n, m))
    for u in range(n):
        for y in range(m):
            other = best2[u] if arg1[u] == y else best1[u]
            out[u, y] = own[u, y] if own[u, y] > other else other
    return out


@njit(inline="always")
def _running_max(r, z, m):
    """``r[:m] = max(r[:m], z)``."""
    for y in range(m):
        v = r[y]
        r[y] = z if z > v else v


@njit(inline="always")
def _top_query(dst, run, best, dprow, sub, m, skip):
    """``dst = max(dst, max(run + dprow, best) - sub)`` except at ``skip``: the candidates of the first sweep."""
    keep = dst[skip]
    for y in range(m):
        v = run[y] + dprow[y]
        b = best[y]
        v = (v if v > b else b) - sub
        d = dst[y]
        dst[y] = v if v > d else d
    dst[skip] = keep


@njit(inline="always")
def _close_row(row, ra, rg, dg, dprow, m):
    """Close the segments of the pairs ``(g, y)``: ``row[y] = max(row[y], min(ra[g], ra[y]) + Dm_g + Dp_y)``."""
    for y in range(m):
        ry = ra[y]
        v = (rg if rg < ry else ry) + dg + dprow[y]
        c = row[y]
        row[y] = v if v > c else c


@njit(inline="always")
def _close_col(closed, g, ra, rg, pg, dmrow, m):
    """Close the segments of the pairs ``(y, g)``: ``closed[y, g] = max(., min(ra[y], ra[g]) + Dm_y + Dp_g)``."""
    for y in range(m):
        ry = ra[y]
        v = (rg if rg < ry else ry) + dmrow[y] + pg
        c = closed[y, g]
        closed[y, g] = v if v > c else c


@njit(inline="always")
def _row_query(dst, row, sub, m, skip1, skip2):
    """``dst = max(dst, row - sub)`` except at ``skip1`` and ``skip2``."""
    keep1 = dst[skip1]
    keep2 = dst[skip2]
    for y in range(m):
        v = row[y] - sub
        d = dst[y]
        dst[y] = v if v > d else d
    dst[skip1] = keep1
    dst[skip2] = keep2


@njit
def sum_family_messages(phi, table):
    """Max-product messages (n, m) of a SUM potential ``C = sum_y table[y, n_y]`` with a finite ``table``
    (m, n + 1): alpha-pass on every clamped clique (see the module docstring), ``O(n m log n + n m^2)``.

    Per label alpha, with ``A[k]`` the score of candidate ``k`` (top ``k`` sorted nodes at alpha, the others
    at their best other label) and ``c^k`` its counts, the node ``u`` at sort position ``p`` gets

    * from ``k > p`` (``u`` at alpha): ``A[k] - phi[u, alpha]`` for ``l = alpha``, and otherwise
      ``+ Dm[alpha, k] + Dp[l, c^k_l]`` with ``Dp[y, c] = f_y(c + 1) - f_y(c)``, ``Dm[y, c] = f_y(c - 1) - f_y(c)``;
    * from ``k <= p`` (``u`` at ``g = b_u``): ``A[k] - phi[u, g]`` for ``l = g``, ``+ Dm[g, c^k_g] + Dp[alpha, k]``
      for ``l = alpha``, ``+ Dm[g, c^k_g] + Dp[l, c^k_l]`` otherwise.

    ``c^k_y`` changes only at the positions of nodes whose out-label is ``y``. The first sweep (``p``
    down from ``n - 1``) keeps per label ``l`` the maximum of ``A[k] + Dm[alpha, k]`` since ``l``'s last
    change and the best closed segment; the second (``p`` up from 0) keeps per label the maximum of ``A``
    since its last change, so that the open segment of a pair ``(g, l)`` has maximum
    ``min(RA[g], RA[l])`` (the later change's range is inside the other's), and per pair the best closed
    segment, closed at the changes of either label. Every step is a handful of length-``m`` loops.
    """
    n, m = phi.shape
    has_inf = False
    for u in range(n):
        for y in range(m):
            if phi[u, y] == _NEG_INF:
                has_inf = True
    nv = 2 if has_inf else 1  # variant t admits t -inf node terms (t = 1: the node's own)
    dp = np.empty((m, n + 1))  # dp[y, c] = f_y(c + 1) - f_y(c), c < n
    dm = np.empty((m, n + 1))  # dm[y, c] = f_y(c - 1) - f_y(c), c >= 1
    for y in range(m):
        dp[y, n] = _NEG_INF
        dm[y, 0] = _NEG_INF
        for c in range(n):
            dp[y, c] = table[y, c + 1] - table[y, c]
            dm[y, c + 1] = table[y, c] - table[y, c + 1]
    t0s = np.empty(n, np.int64)
    t1s = np.empty(n, np.int64)
    _top2(phi, t0s, t1s)
    keys = np.empty(n)
    order = np.empty(n, np.int64)
    buf = np.empty(n, np.int64)
    plab = np.empty(n, np.int64)
    pin = np.empty(n)
    pout = np.empty(n)
    c0 = np.zeros(m, np.int64)
    cnt = np.zeros(m, np.int64)
    A = np.empty((nv, n + 1))
    nf = np.empty(n + 1)
    ni = np.empty(n + 1, np.int64)
    run = np.empty((nv, m))
    best = np.empty((nv, m))
    sa = np.empty(nv)
    ra = np.empty((nv, m))
    rb = np.empty((nv, m))
    closed = np.empty((nv, m, m))
    closed_a = np.empty((nv, m))
    pa = np.empty(nv)
    dprow = np.empty(m)
    dmrow = np.empty(m)
    out = np.full((n, m), _NEG_INF)
    for alpha in range(m):
        _sweep(phi, alpha, t0s, t1s, keys, order, buf, plab, pin, pout)
        # candidate scores A[t, k]: node score (finite part, -inf count) plus the potential
        for y in range(m):
            c0[y] = 0
        for p in range(n):
            c0[plab[p]] += 1
        fin = 0.0
        ninf = _I0
        for p in range(n):
            if pout[p] == _NEG_INF:
                ninf += 1
            else:
                fin += pout[p]
        pot = 0.0
        for y in range(m):
            cnt[y] = c0[y]
            pot += table[y, c0[y]]
        for k in range(n + 1):
            nf[k] = fin + pot
            ni[k] = ninf
            if k == n:
                break
            # the node at position k moves from its out-label h to alpha
            h = plab[k]
            if pout[k] == _NEG_INF:
                ninf -= 1
            else:
                fin -= pout[k]
            if pin[k] == _NEG_INF:
                ninf += 1
            else:
                fin += pin[k]
            pot += dm[h, cnt[h]] + dp[alpha, k]
            cnt[h] -= 1
        for t in range(nv):
            for k in range(n + 1):
                A[t, k] = nf[k] if ni[k] <= t else _NEG_INF

        # ---- u among the top k (k > p): p from n - 1 down; cnt = c^k of the lowest k included
        for y in range(m):
            cnt[y] = 0
            dprow[y] = dp[y, 0]
        for t in range(nv):
            sa[t] = _NEG_INF
            for y in range(m):
                run[t, y] = _NEG_INF
                best[t, y] = _NEG_INF
        for p in range(n - 1, -1, -1):
            k = p + 1
            if k < n:  # the node at position k is in the rest for candidate k: its out-label's count rises
                h = plab[k]
                for t in range(nv):
                    v = run[t, h] + dprow[h]
                    if v > best[t, h]:
                        best[t, h] = v
                    run[t, h] = _NEG_INF
                cnt[h] += 1
                dprow[h] = dp[h, cnt[h]]
            for t in range(nv):
                a = A[t, k]
                if a > sa[t]:
                    sa[t] = a
                _running_max(run[t], a + dm[alpha, k], m)
            u = order[p]
            own = phi[u, alpha]
            t = 1 if own == _NEG_INF else 0
            sub = 0.0 if t == 1 else own
            _top_query(out[u], run[t], best[t], dprow, sub, m, alpha)
            v = sa[t] - sub
            if v > out[u, alpha]:
                out[u, alpha] = v

        # ---- u out of the top k (k <= p): p from 0 up; cnt = c^p
        for y in range(m):
            cnt[y] = c0[y]
            dprow[y] = dp[y, cnt[y]]
            dmrow[y] = dm[y, cnt[y]]
        for t in range(nv):
            pa[t] = _NEG_INF
            for y in range(m):
                ra[t, y] = _NEG_INF
                rb[t, y] = _NEG_INF
                closed_a[t, y] = _NEG_INF
                for x in range(m):
                    closed[t, y, x] = _NEG_INF
        for p in range(n):
            for t in range(nv):
                a = A[t, p]
                if a > pa[t]:
                    pa[t] = a
                _running_max(ra[t], a, m)
                _running_max(rb[t], a + dp[alpha, p], m)
            u = order[p]
            g = plab[p]
            own = phi[u, g]
            tq = 1 if own == _NEG_INF else 0
            sub = 0.0 if tq == 1 else own
            # the count of g falls after position p: close every pair segment that involves g; for the
            # variant of u, the closed values of the pairs (g, l) are then exactly u's candidates
            for t in range(nv):
                ra_t = ra[t]
                rg = ra_t[g]
                dg = dmrow[g]
                pg = dprow[g]
                _close_row(closed[t, g], ra_t, rg, dg, dprow, m)
                _close_col(closed[t], g, ra_t, rg, pg, dmrow, m)
                v = rb[t, g] + dg
                if v > closed_a[t, g]:
                    closed_a[t, g] = v
            _row_query(out[u], closed[tq, g], sub, m, g, alpha)
            v = closed_a[tq, g] - sub
            if v > out[u, alpha]:
                out[u, alpha] = v
            v = pa[tq] - sub
            if v > out[u, g]:
                out[u, g] = v
            for t in range(nv):
                ra[t, g] = _NEG_INF
                rb[t, g] = _NEG_INF
            cnt[g] -= 1
            dprow[g] = dp[g, cnt[g]]
            dmrow[g] = dm[g, cnt[g]]
    return out


@njit
def _majority_of(T, m, a, l, t3):
    """Majority label (most counts, ties: the lower label) of ``T - e_a + e_l``; ``t3`` holds the three
    labels of ``T`` with most counts in that order (fewer when ``m < 3``)."""
    best = _IM1
    bv = _I0
    for i in range(3 if m >= 3 else m):
        y = t3[i]
        if y == l:
            continue
        v = T[y] - (1 if y == a else 0)
        if best < 0 or v > bv or (v == bv and y < best):
            best = y
            bv = v
    v = T[l] if l == a else T[l] + 1
    if best < 0 or v > bv or (v == bv and l < best):
        best = l
    return best


@njit
def majority_messages(phi, W, fixed):
    """Max-product messages (n, m) of a linear majority potential ``C(c) = sum_y W[a, y] c_y``, ``a`` the
    majority of ``c = counts + fixed`` (ties: the lower label), by the modified alpha-pass of Sec. 3.3.1
    of Gupta et al. on every clamped clique: per label alpha the nodes are sorted by
    ``psi = phi + W[alpha]`` (their out-label the best other label under ``psi``), and every candidate,
    after relabelling ``u``, is scored by its **true** potential (the paper drops the candidates whose
    majority is not alpha; scoring them truly keeps valid lower bounds and can only raise them).

    ``O(n^2 m^2 + n m^3)``: per alpha the majority weights ``(W c^k)[z]`` of every candidate ``k`` and
    label ``z``, then ``O(1)`` per ``(u, k, l)`` (the new majority is among ``l`` and the three labels
    with most counts). The compiled twin of :func:`relabel_messages` with ``sweep_phi = phi + W[alpha]``.
    """
    n, m = phi.shape
    psi = np.empty((n, m))
    t0s = np.empty(n, np.int64)
    t1s = np.empty(n, np.int64)
    keys = np.empty(n)
    order = np.empty(n, np.int64)
    buf = np.empty(n, np.int64)
    plab = np.empty(n, np.int64)
    pin = np.empty(n)
    pout = np.empty(n)
    pos = np.empty(n, np.int64)
    T = np.empty((n + 1, m), np.int64)
    wt = np.empty((n + 1, m))
    top3 = np.empty((n + 1, 3), np.int64)
    nf = np.empty(n + 1)
    ni = np.empty(n + 1, np.int64)
    out = np.full((n, m), _NEG_INF)
    for alpha in range(m):
        for u in range(n):
            for y in range(m):
                psi[u, y] = phi[u, y] + W[alpha, y]
        _top2(psi, t0s, t1s)
        _sweep(psi, alpha, t0s, t1s, keys, order, buf, plab, pin, pout)
        for p in range(n):
            u = order[p]
            pos[u] = p
            pin[p] = phi[u, alpha]  # node scores are the true ones
            pout[p] = phi[u, plab[p]]
        # counts (with the fixed ones) and node scores (finite part, -inf count) of every candidate
        for y in range(m):
            T[0, y] = fixed[y]
        fin = 0.0
        ninf = _I0
        for p in range(n):
            T[0, plab[p]] += 1
            if pout[p] == _NEG_INF:
                ninf += 1
            else:
                fin += pout[p]
        for k in range(n + 1):
            if k > 0:
                for y in range(m):
                    T[k, y] = T[k - 1, y]
                T[k, plab[k - 1]] -= 1
                T[k, alpha] += 1
                if pout[k - 1] == _NEG_INF:
                    ninf -= 1
                else:
                    fin -= pout[k - 1]
                if pin[k - 1] == _NEG_INF:
                    ninf += 1
                else:
                    fin += pin[k - 1]
            nf[k] = fin
            ni[k] = ninf
            for z in range(m):
                acc = 0.0
                for y in range(m):
                    acc += W[z, y] * T[k, y]
                wt[k, z] = acc
            for i in range(3):  # the three labels with most counts (ties: lower label first)
                top3[k, i] = -1
            for y in range(m):
                v = T[k, y]
                for i in range(3):
                    z = top3[k, i]
                    if z < 0 or v > T[k, z]:
                        for j in range(2, i, -1):
                            top3[k, j] = top3[k, j - 1]
                        top3[k, i] = y
                        break
        for u in range(n):
            p = pos[u]
            g = plab[p]
            for k in range(n + 1):
                a = alpha if k > p else g
                own = phi[u, a]
                if own == _NEG_INF:
                    if ni[k] > 1:
                        continue
                    base = nf[k]
                else:
                    if ni[k] > 0:
                        continue
                    base = nf[k] - own
                for l in range(m):
                    z = _majority_of(T[k], m, a, l, top3[k])
                    v = base + wt[k, z] - W[z, a] + W[z, l]
                    if v > out[u, l]:
                        out[u, l] = v
    return out


def _relabel_alpha(phi, alpha, count_values, sweep_phi, chunk):
    """Messages (n, m) from the candidates of one label ``alpha`` (see :func:`relabel_messages`)."""
    n, m = phi.shape
    ps = phi if sweep_phi is None else sweep_phi(alpha)
    masked = ps.copy()
    masked[:, alpha] = -np.inf
    b = np.argmax(masked, axis=1)  # first maximum: the lower label among ties, as alpha-pass takes it
    rows = np.arange(n)
    order = np.argsort(-_keys(ps[:, alpha], ps[rows, b]), kind="stable")
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    # counts of candidate k (top k sorted nodes at alpha, the rest at b): (n + 1, m)
    steps = np.zeros((n + 1, m), dtype=np.int64)
    steps[0] = np.bincount(b, minlength=m)
    steps[1:, alpha] += 1
    np.add.at(steps, (np.arange(1, n + 1), b[order]), -1)
    counts = np.cumsum(steps, axis=0)
    # potential after relabelling one node from a to l: cv[k, a, l] (-inf where candidate k has no node at a)
    moved = counts[:, None, None, :] - np.eye(m, dtype=np.int64)[None, :, None, :] + np.eye(m, dtype=np.int64)
    ok = counts > 0  # (n + 1, a)
    cv = np.full((n + 1, m, m), -np.inf)
    sel = np.broadcast_to(ok[:, :, None], cv.shape)
    cv[sel] = count_values(moved[sel])
    # node score of candidate k without node u's own term, as (finite part, -inf count)
    in_v, out_v = phi[order, alpha], phi[order, b[order]]
    fin_in = np.concatenate([[0.0], np.cumsum(np.where(np.isneginf(in_v), 0.0, in_v))])
    inf_in = np.concatenate([[0], np.cumsum(np.isneginf(in_v))])
    fin_out = np.concatenate([np.cumsum(np.where(np.isneginf(out_v), 0.0, out_v)[::-1])[::-1], [0.0]])
    inf_out = np.concatenate([np.cumsum(np.isneginf(out_v)[::-1])[::-1], [0]])
    nf, ni = fin_in + fin_out, inf_in + inf_out
    out = np.full((n, m), -np.inf)
    ks = np.arange(n + 1)
    for lo in range(0, n, chunk):
        us = np.arange(lo, min(n, lo + chunk))
        top = ks[None, :] > pos[us, None]  # (U, n + 1): u at alpha in candidate k
        a = np.where(top, alpha, b[us, None])
        own = phi[us[:, None], a]
        f = nf[None, :] - np.where(np.isneginf(own), 0.0, own)
        i = ni[None, :] - np.isneginf(own)
        others = np.where(i > 0, -np.inf, f)
        vals = others[:, :, None] + cv[ks[None, :], a]  # (U, n + 1, m)
        out[us] = vals.max(axis=1)
    return out


def relabel_messages(phi, count_values, *, sweep_phi=None):
    """Max-product messages (n, m) of alpha-pass on every clamped clique, by enumerating the candidates.

    Parameters
    ----------
    phi : ndarray of shape (n, m)
        Incoming log messages (node potentials): no NaN or ``+inf``.
    count_values : callable
        ``count_values(counts)`` with ``counts`` (..., m) int returns the log-potential (...) (``-inf``
        allowed).
    sweep_phi : callable, optional
        ``sweep_phi(alpha)`` returns the (n, m) node potentials that order the sweep of label alpha and
        pick the nodes' out-labels (default ``phi``). The modified alpha-pass of linear majority
        potentials (Sec. 3.3.1 of Gupta et al.) sorts by ``phi + W[alpha]``; every candidate is scored by
        its true potential either way.

    Returns
    -------
    ndarray of shape (n, m)

    Notes
    -----
    For each alpha: the candidate counts (n + 1, m), the potential at every relabelled count vector
    ``c^k - e_a + e_l`` ((n + 1) m^2 evaluations) and the (n, n + 1, m) candidate values, maximized over
    ``k``: ``O(n^2 m^2)`` time in all, ``O(n m^3)`` potential evaluations, memory ``O(n m^2)`` per chunk
    of nodes.
    """
    n, m = phi.shape
    chunk = max(1, (1 << 22) // ((n + 1) * m))
    out = np.full((n, m), -np.inf)
    for alpha in range(m):
        np.maximum(out, _relabel_alpha(phi, alpha, count_values, sweep_phi, chunk), out=out)
    return out
