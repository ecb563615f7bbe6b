"""The compiled Gibbs sweeps, plain and adaptive, over the flat arrays of :mod:`tractable.sampling._wiring`.

Compilation time is part of the design (a fresh install compiles each kernel once, on its first call,
1 to 1.5 ms of CPU per statement of typed numba IR, and more for every separate function or ``inline="always"``
call site): one kernel, :func:`run_sweeps`, runs Gibbs, burn-in and adaptive MMP with the sweep and the
pruning written out in it, and calls :func:`decision_tails` (also called from Python, so compiled once
for both), which holds the incomplete beta tails of :func:`beta_tails_half`.
"""

from __future__ import annotations

import math

import numpy as np

from .._numba import njit
from .._random import uniform

_NINF = -np.inf
KIND_TABLE = 0
KIND_COUNT = 1
_TINY = 1e-300


@njit(inline="always")
def beta_tails_half(a, b):
    """``(I_{1/2}(a, b), 1 - I_{1/2}(a, b))`` for ``a, b > 0``, the smaller one computed directly.

    ``I_{1/2}(a, b) = P(q <= 1/2)`` for ``q ~ Beta(a, b)``; by symmetry ``1 - I_{1/2}(a, b) =
    I_{1/2}(b, a)``. The continued fraction converges for the tail on the side of the smaller
    parameter, which is also the small tail, so tiny probabilities (``epsilon = 1e-8``) keep their
    relative accuracy. Inlined into :func:`decision_tails`, its one caller in the kernels.
    """
    hi = max(a, b)
    lo = min(a, b)
    # I_{1/2}(hi, lo) = (1/2)^(hi + lo) / (hi B(hi, lo)) * cf(hi, lo, 1/2): the small tail
    log_front = (hi + lo) * np.log(0.5) - np.log(hi) - (math.lgamma(hi) + math.lgamma(lo) - math.lgamma(hi + lo))
    # cf: the continued fraction of I_x(hi, lo) at x = 1/2 by the modified Lentz method (x < (hi+1)/(hi+lo+2))
    x = 0.5
    qab = hi + lo
    qap = hi + 1.0
    qam = hi - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < _TINY:
        d = _TINY
    d = 1.0 / d
    cf = d
    for m in range(1, 100_000):
        m2 = 2.0 * m
        aa = m * (lo - m) * x / ((qam + m2) * (hi + m2))
        d = 1.0 + aa * d
        if abs(d) < _TINY:
            d = _TINY
        c = 1.0 + aa / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        cf *= d * c
        aa = -(hi + m) * (qab + m) * x / ((hi + m2) * (qap + m2))
        d = 1.0 + aa * d
        if abs(d) < _TINY:
            d = _TINY
        c = 1.0 + aa / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        step = d * c
        cf *= step
        if abs(step - 1.0) < 1e-15:
            break
    small = np.exp(log_front) * cf
    small = min(max(small, 0.0), 1.0)
    if a >= b:
        return small, 1.0 - small
    return 1.0 - small, small


@njit
def decision_tails(ones, count, lag, first, last):
    """``(P(z = 0 | S), P(z = 1 | S))`` of one variable's decision from its binary sample sequence (Eq. 5).

    ``mu = ones / count``; the lag-1 autocorrelation ``r`` of the sequence (``lag`` = sum of
    ``x_t x_{t+1}``, ``first``/``last`` its end values) gives the effective sample size
    ``N' = N (1 - r) / (1 + r)``, with ``r`` clipped to ``[0, 1)`` (``r = 0`` for a constant sequence);
    then ``P(z = 0 | S) = I_{1/2}(mu N' + 1, (1 - mu) N' + 1)``. Called with int64 counts (the kernel
    and Python share its one compiled signature).
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


#: rows of the int64 ``stats`` array of :func:`run_sweeps` (adaptive MMP's per-variable sample statistics)
ONES, COUNT, LAG, FIRST, LAST, NEXT_CHECK = range(6)
N_STATS = 6


def plain_args() -> tuple:
    """The arguments of :func:`run_sweeps` from ``adaptive`` on for plain sweeps: False, then empty
    arrays (and zeros) of the types adaptive MMP passes, so that both share the kernel's one signature."""
    return (
        False, 0.0, 0, np.zeros(0, dtype=np.bool_), np.zeros((N_STATS, 0), dtype=np.int64), np.zeros(0),
        np.zeros((2, 0), dtype=np.int64), 0, np.zeros(0, dtype=np.int64), 0,
    )  # fmt: skip


@njit
def run_sweeps(
    n_sweeps, order, n_active, x, field, forbid0, forbid1, nb_ptr, nb_end, nb_idx, nb_w, g_kind, g_ptr, g_vars,
    g_tab_ptr, g_tab, vf_ptr, vf_fac, vf_pos, scale_exp, state, p_sum, samples, adaptive, epsilon, n0, active, stats,
    p0_out, hist, sweep0, fac_active, n_factors,
):  # fmt: skip
    """Up to ``n_sweeps`` Gibbs sweeps over the ``n_active`` variables listed first in ``order``: plain
    (Gibbs, burn-in) or adaptive (Lampert 2012, Sec. 2).

    The tables are the model's times ``2**-scale_exp`` (:mod:`tractable.sampling._wiring`): a variable's
    conditional log-odds is multiplied back by ``2**scale_exp`` (exact, ``math.ldexp``) before the
    logistic function.

    Plain (``adaptive`` False): ``samples[s]`` receives the state after sweep ``s`` when it has rows;
    the adaptive arguments after ``adaptive`` are not read (empty arrays of their types will do).

    Adaptive: after each sweep every swept variable's sample statistics (``stats`` rows ``ONES``,
    ``COUNT``, ``LAG`` = sum of ``x_t x_{t+1}``, ``FIRST``, ``LAST``) and, at ``NEXT_CHECK`` samples
    (``n0`` first, then every further 1/16), the posterior of its decision (Eq. 5, into ``p0_out``)
    are updated, and every variable whose decision is ``epsilon``-confident is pruned: its pairwise
    couplings and general factors are replaced by their expectations under ``Bernoulli(mu)`` (Eq. 6-8),
    ``active[i]`` turns False and it leaves the scan (``order[:n_active]`` keeps the others).
    ``hist[0, sweep0 + s]`` and ``hist[1, sweep0 + s]`` record the variables and the factors still
    active in sweep ``s``; ``fac_active[g]`` counts the active variables of general factor ``g`` and
    ``n_factors`` the factors still touching an active variable (unaries, couplings, general factors).

    Returns ``(sweeps done, n_active, variable updates, factor evaluations, n_factors)``.
    """
    updates = 0
    evals = 0
    done = 0
    for s in range(n_sweeps):
        if n_active == 0:
            break
        # one systematic-scan sweep over order[:n_active]
        for t in range(n_active):
            i = order[t]
            z = field[i]
            for k in range(nb_ptr[i], nb_end[i]):
                z += nb_w[k] * x[nb_idx[k]]
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
                z = math.ldexp(z + (l1 - l0), scale_exp)  # +-inf past float64's range: p1 is then 1 or 0
                if z >= 0:
                    p1 = 1.0 / (1.0 + np.exp(-z))
                else:
                    e = np.exp(z)
                    p1 = e / (1.0 + e)
            x[i] = 1 if uniform(state) < p1 else 0
            p_sum[i] += p1
        updates += n_active
        done += 1
        if not adaptive:
            if samples.shape[0] > s:
                for i in range(x.shape[0]):
                    samples[s, i] = x[i]
            continue
        hist[0, sweep0 + s] = n_active
        hist[1, sweep0 + s] = n_factors
        kept = 0
        for t in range(n_active):
            i = order[t]
            xi = x[i]
            if stats[COUNT, i] == 0:
                stats[FIRST, i] = xi
            else:
                stats[LAG, i] += xi * stats[LAST, i]
            stats[LAST, i] = xi
            stats[ONES, i] += xi
            stats[COUNT, i] += 1
            confident = False
            if stats[COUNT, i] >= stats[NEXT_CHECK, i]:
                p0, p1 = decision_tails(
                    stats[ONES, i], stats[COUNT, i], stats[LAG, i], stats[FIRST, i], stats[LAST, i]
                )  # fmt: skip
                p0_out[i] = p0
                confident = p0 <= epsilon or p1 <= epsilon
                stats[NEXT_CHECK, i] = stats[COUNT, i] + max(1, stats[COUNT, i] // 16)
            if not confident:
                order[kept] = i
                kept += 1
                continue
            # prune i: it leaves the scan, its factors become expectations under Bernoulli(mu_i)
            mu = stats[ONES, i] / stats[COUNT, i]
            active[i] = False
            n_factors -= 1
            # couplings: each active neighbour j gets w_ij mu in its field and loses the entry
            for k in range(nb_ptr[i], nb_end[i]):
                j = nb_idx[k]
                if not active[j]:
                    continue
                field[j] += nb_w[k] * mu
                last = nb_end[j] - 1
                for q in range(nb_ptr[j], nb_end[j]):
                    if nb_idx[q] == i:
                        nb_idx[q] = nb_idx[last]
                        nb_w[q] = nb_w[last]
                        nb_idx[last] = i
                        nb_w[last] = 0.0
                        nb_end[j] = last
                        n_factors -= 1
                        break
            nb_end[i] = nb_ptr[i]
            # general factors: tables become constant along i's axis (i is then read as 0), count potentials
            # f'(c) = (1 - mu) f(c) + mu f(c + 1) over the others' count; -inf exact
            for k in range(vf_ptr[i], vf_ptr[i + 1]):
                g = vf_fac[k]
                pos = vf_pos[k]
                base = g_tab_ptr[g]
                arity = g_ptr[g + 1] - g_ptr[g]
                table = g_kind[g] == KIND_TABLE
                stride = 1 << (arity - 1 - pos) if table else 1
                for idx in range((1 << arity) if table else arity):
                    if idx & stride and table:
                        continue
                    t0 = g_tab[base + idx]
                    t1 = g_tab[base + idx + stride]
                    if (mu < 1.0 and t0 == _NINF) or (mu > 0.0 and t1 == _NINF):
                        v = _NINF
                    else:
                        v = 0.0
                        if mu < 1.0:
                            v += (1.0 - mu) * t0
                        if mu > 0.0:
                            v += mu * t1
                    g_tab[base + idx] = v
                    if table:
                        g_tab[base + idx + stride] = v
                if not table:
                    g_tab[base + arity] = _NINF
                fac_active[g] -= 1
                if fac_active[g] == 0:
                    n_factors -= 1
            x[i] = 0  # pruned variables are read as 0 by the (now constant along them) general factors
        n_active = kept
    return done, n_active, updates, evals, n_factors
