"""The compiled Gibbs sweep over the flat arrays of :mod:`tractable.sampling._wiring`."""

from __future__ import annotations

import math

import numpy as np

from .._numba import njit
from .._random import uniform

_NINF = -np.inf
KIND_TABLE = 0
KIND_COUNT = 1


@njit
def sweep(
    order, x, field, forbid0, forbid1, nb_ptr, nb_end, nb_idx, nb_w, g_kind, g_ptr, g_vars, g_tab_ptr, g_tab,
    vf_ptr, vf_fac, vf_pos, state, p_sum,
):  # fmt: skip
    """One systematic-scan Gibbs sweep over the variables in ``order`` (in place on ``x``).

    The conditional log-odds of ``x_i = 1`` is ``field[i] + sum_j w_ij x_j`` over the pairwise
    couplings (CSR ``nb_*``, row ``i`` ending at ``nb_end[i]``) plus, for every general factor ``g``
    of ``i`` (CSR ``vf_*``), its score with ``x_i = 1`` minus its score with ``x_i = 0``: table
    factors index a flat ``2**k`` table by the bits of their scope (C order); count factors read
    ``f[c]`` and ``f[c + 1]`` with ``c`` the number of the other scope variables that are on.
    Forbidden states (``-inf``) are exact: a state with a ``-inf`` term is never drawn.
    ``p_sum[i]`` accumulates ``P(x_i = 1 | rest)`` (the Rao-Blackwellized marginal estimate).
    Returns the number of factor terms evaluated.
    """
    evals = 0
    for t in range(order.shape[0]):
        i = order[t]
        s = field[i]
        for k in range(nb_ptr[i], nb_end[i]):
            s += nb_w[k] * x[nb_idx[k]]
        evals += nb_end[i] - nb_ptr[i] + 1
        l0 = 0.0
        l1 = 0.0
        for k in range(vf_ptr[i], vf_ptr[i + 1]):
            g = vf_fac[k]
            pos = vf_pos[k]
            base = g_tab_ptr[g]
            if g_kind[g] == KIND_TABLE:
                idx = 0
                stride = 0
                arity = g_ptr[g + 1] - g_ptr[g]
                for p in range(arity):
                    idx *= 2
                    if p == pos:
                        stride = 1 << (arity - 1 - p)
                    else:
                        idx += x[g_vars[g_ptr[g] + p]]
                l0 += g_tab[base + idx]
                l1 += g_tab[base + idx + stride]
            else:
                c = 0
                for p in range(g_ptr[g], g_ptr[g + 1]):
                    if p - g_ptr[g] != pos:
                        c += x[g_vars[p]]
                l0 += g_tab[base + c]
                l1 += g_tab[base + c + 1]
            evals += 1
        no1 = forbid1[i] or l1 == _NINF
        no0 = forbid0[i] or l0 == _NINF
        if no1 and no0:
            p1 = float(x[i])  # unreachable from a feasible state; keep the current value
        elif no1:
            p1 = 0.0
        elif no0:
            p1 = 1.0
        else:
            z = s + (l1 - l0)
            if z >= 0:
                p1 = 1.0 / (1.0 + np.exp(-z))
            else:
                e = np.exp(z)
                p1 = e / (1.0 + e)
        x[i] = 1 if uniform(state) < p1 else 0
        p_sum[i] += p1
    return evals


@njit
def run_sweeps(
    n_sweeps, order, x, field, forbid0, forbid1, nb_ptr, nb_end, nb_idx, nb_w, g_kind, g_ptr, g_vars, g_tab_ptr,
    g_tab, vf_ptr, vf_fac, vf_pos, state, p_sum, samples,
):  # fmt: skip
    """``n_sweeps`` sweeps; ``samples[s]`` receives the state after sweep ``s`` when it has rows."""
    evals = 0
    for s in range(n_sweeps):
        evals += sweep(
            order, x, field, forbid0, forbid1, nb_ptr, nb_end, nb_idx, nb_w, g_kind, g_ptr, g_vars, g_tab_ptr, g_tab,
            vf_ptr, vf_fac, vf_pos, state, p_sum,
        )  # fmt: skip
        if samples.shape[0] > s:
            for i in range(x.shape[0]):
                samples[s, i] = x[i]
    return evals


_TINY = 1e-300


@njit
def _beta_cf(a, b, x):
    """Continued fraction of the regularized incomplete beta function (modified Lentz), for x < (a+1)/(a+b+2)."""
    qab = a + b
    qap = a + 1.0
    qam = a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < _TINY:
        d = _TINY
    d = 1.0 / d
    h = d
    for m in range(1, 100_000):
        m2 = 2.0 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        if abs(d) < _TINY:
            d = _TINY
        c = 1.0 + aa / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        if abs(d) < _TINY:
            d = _TINY
        c = 1.0 + aa / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-15:
            break
    return h


@njit
def beta_tails_half(a, b):
    """``(I_{1/2}(a, b), 1 - I_{1/2}(a, b))`` for ``a, b > 0``, the smaller one computed directly.

    ``I_{1/2}(a, b) = P(q <= 1/2)`` for ``q ~ Beta(a, b)``; by symmetry ``1 - I_{1/2}(a, b) =
    I_{1/2}(b, a)``. The continued fraction converges for the tail on the side of the smaller
    parameter, which is also the small tail, so tiny probabilities (``epsilon = 1e-8``) keep their
    relative accuracy.
    """
    hi = max(a, b)
    lo = min(a, b)
    # I_{1/2}(hi, lo) = (1/2)^(hi + lo) / (hi B(hi, lo)) * cf(hi, lo, 1/2): the small tail
    log_front = (hi + lo) * np.log(0.5) - np.log(hi) - (math.lgamma(hi) + math.lgamma(lo) - math.lgamma(hi + lo))
    small = np.exp(log_front) * _beta_cf(hi, lo, 0.5)
    small = min(max(small, 0.0), 1.0)
    if a >= b:
        return small, 1.0 - small
    return 1.0 - small, small


@njit
def _fold_pairwise(j, mu_j, field, active, nb_ptr, nb_end, nb_idx, nb_w):
    """Prune ``j`` from the coupling matrix: each active neighbour ``i`` gets ``w_ij mu_j`` in its field
    (the expectation of ``w_ij x_i x_j`` under ``x_j ~ Bernoulli(mu_j)``) and loses the entry."""
    n_removed = 0
    for k in range(nb_ptr[j], nb_end[j]):
        i = nb_idx[k]
        if not active[i]:
            continue
        field[i] += nb_w[k] * mu_j
        last = nb_end[i] - 1
        for q in range(nb_ptr[i], nb_end[i]):
            if nb_idx[q] == j:
                nb_idx[q] = nb_idx[last]
                nb_w[q] = nb_w[last]
                nb_idx[last] = j
                nb_w[last] = 0.0
                nb_end[i] = last
                n_removed += 1
                break
    nb_end[j] = nb_ptr[j]
    return n_removed


@njit
def _expect(t0, t1, mu):
    """``(1 - mu) t0 + mu t1`` with ``-inf`` exact: a ``-inf`` term with positive weight gives ``-inf``."""
    if (mu < 1.0 and t0 == _NINF) or (mu > 0.0 and t1 == _NINF):
        return _NINF
    v = 0.0
    if mu < 1.0:
        v += (1.0 - mu) * t0
    if mu > 0.0:
        v += mu * t1
    return v


@njit
def _fold_general(j, mu_j, vf_ptr, vf_fac, vf_pos, g_kind, g_ptr, g_tab_ptr, g_tab):
    """Replace every general factor of ``j`` by its expectation over ``x_j ~ Bernoulli(mu_j)``.

    A table becomes constant along ``j``'s axis (``j`` is then read as 0); a count potential over the
    scope becomes one over the count of the other variables: ``f'(c) = (1 - mu) f(c) + mu f(c + 1)``.
    """
    for k in range(vf_ptr[j], vf_ptr[j + 1]):
        g = vf_fac[k]
        pos = vf_pos[k]
        base = g_tab_ptr[g]
        arity = g_ptr[g + 1] - g_ptr[g]
        if g_kind[g] == KIND_TABLE:
            stride = 1 << (arity - 1 - pos)
            for idx in range(1 << arity):
                if idx & stride:
                    continue
                v = _expect(g_tab[base + idx], g_tab[base + idx + stride], mu_j)
                g_tab[base + idx] = v
                g_tab[base + idx + stride] = v
        else:
            for c in range(arity):
                g_tab[base + c] = _expect(g_tab[base + c], g_tab[base + c + 1], mu_j)
            g_tab[base + arity] = _NINF


@njit
def decision_tails(ones, count, lag, first, last):
    """``(P(z = 0 | S), P(z = 1 | S))`` of one variable's decision from its binary sample sequence (Eq. 5).

    ``mu = ones / count``; the lag-1 autocorrelation ``r`` of the sequence (``lag`` = sum of
    ``x_t x_{t+1}``, ``first``/``last`` its end values) gives the effective sample size
    ``N' = N (1 - r) / (1 + r)``, with ``r`` clipped to ``[0, 1)`` (``r = 0`` for a constant sequence);
    then ``P(z = 0 | S) = I_{1/2}(mu N' + 1, (1 - mu) N' + 1)``.
    """
    n = float(count)
    mu = ones / n
    var = mu * (1.0 - mu)
    r = 0.0
    if var > 0.0 and count > 1:
        cov = (lag - mu * ((ones - last) + (ones - first)) + (n - 1.0) * mu * mu) / (n - 1.0)
        r = min(max(cov / var, 0.0), 1.0 - 1e-12)
    ess = n * (1.0 - r) / (1.0 + r)
    return beta_tails_half(mu * ess + 1.0, (1.0 - mu) * ess + 1.0)


@njit
def adaptive_sweeps(
    n_steps, epsilon, n0, order_buf, n_active, x, active, field, forbid0, forbid1, nb_ptr, nb_end, nb_idx, nb_w,
    g_kind, g_ptr, g_vars, g_tab_ptr, g_tab, vf_ptr, vf_fac, vf_pos, state, p_sum, ones, count, lag, first, last,
    p0_out, next_check, active_hist, factor_hist, sweep0, fac_active, n_factors,
):  # fmt: skip
    """Up to ``n_steps`` adaptive sweeps (Lampert 2012, Sec. 2) over the ``n_active`` variables listed
    first in ``order_buf``: sample them, update each one's posterior of its decision (Eq. 5), and prune
    every variable whose decision is ``epsilon``-confident once it has ``n0`` samples: its pairwise
    couplings and general factors are replaced by their expectations under ``Bernoulli(mu)`` (Eq. 6-8)
    and it leaves the scan. ``fac_active[g]`` counts the active variables of general factor ``g`` and
    ``n_factors`` the factors still touching an active variable (unaries, couplings, general factors).

    Returns ``(sweeps done, n_active, variable updates, factor evaluations, n_factors)``.
    """
    updates = 0
    evals = 0
    done = 0
    for s in range(n_steps):
        if n_active == 0:
            break
        evals += sweep(
            order_buf[:n_active], x, field, forbid0, forbid1, nb_ptr, nb_end, nb_idx, nb_w, g_kind, g_ptr, g_vars,
            g_tab_ptr, g_tab, vf_ptr, vf_fac, vf_pos, state, p_sum,
        )  # fmt: skip
        updates += n_active
        active_hist[sweep0 + s] = n_active
        factor_hist[sweep0 + s] = n_factors
        done += 1
        kept = 0
        for t in range(n_active):
            i = order_buf[t]
            xi = x[i]
            if count[i] == 0:
                first[i] = xi
            else:
                lag[i] += xi * last[i]
            last[i] = xi
            ones[i] += xi
            count[i] += 1
            confident = False
            if count[i] >= next_check[i]:
                p0, p1 = decision_tails(ones[i], count[i], lag[i], first[i], last[i])
                p0_out[i] = p0
                confident = p0 <= epsilon or p1 <= epsilon
                next_check[i] = count[i] + max(1, count[i] // 16)
            if not confident:
                order_buf[kept] = i
                kept += 1
                continue
            # prune i: it leaves the scan, its factors become expectations under Bernoulli(mu_i)
            mu = ones[i] / count[i]
            active[i] = False
            n_factors -= 1 + _fold_pairwise(i, mu, field, active, nb_ptr, nb_end, nb_idx, nb_w)
            _fold_general(i, mu, vf_ptr, vf_fac, vf_pos, g_kind, g_ptr, g_tab_ptr, g_tab)
            for k in range(vf_ptr[i], vf_ptr[i + 1]):
                g = vf_fac[k]
                fac_active[g] -= 1
                if fac_active[g] == 0:
                    n_factors -= 1
            x[i] = 0  # pruned variables are read as 0 by the (now constant along them) general factors
        n_active = kept
    return done, n_active, updates, evals, n_factors
