"""Compiled kernels of the consensus-ADMM solver for hinge-loss MRFs.

Everything here assumes validated input (see :mod:`tractable.hlmrf.model`). Terms are stored in
one CSR-like layout: term ``t`` uses the local copies ``indptr[t]:indptr[t + 1]``, which copy the
consensus variables ``idx[...]`` with coefficients ``coef[...]``; ``const[t]`` is its constant,
``weight[t]`` its weight and ``kind[t]`` one of the ``KIND_*`` codes below.

Every local problem of the paper's Sec. 3 (and every constraint projection) has the form

    minimize  h(c·x + b) + (rho / 2) ||x - d||^2   over x in [0, 1]^k,

and its minimizer is ``x(lam) = clip(d - lam c, 0, 1)`` for one scalar multiplier ``lam >= 0``
(KKT conditions of the box-constrained problem). ``g(lam) = c·x(lam) + b`` is continuous,
non-increasing and piecewise linear with breakpoints where a component reaches 0 or 1, so the
multiplier solves a monotone 1-D equation exactly: sort the breakpoints, locate the segment by
bisection over them, and solve the linear equation on that segment. This is exact for any arity
(the paper solves the hinge case in closed form only for up to two unknowns and calls an interior
point method for squared hinges with more than one unknown).
"""

from __future__ import annotations

import numpy as np
from numba import njit

KIND_HINGE = 0  # w * max(c·x + b, 0)
KIND_SQUARED = 1  # w * max(c·x + b, 0) ** 2
KIND_LEQ = 2  # constraint c·x + b <= 0
KIND_EQ = 3  # constraint c·x + b == 0


@njit(cache=True, inline="always")
def _clip01(v):
    if v < 0.0:
        return 0.0
    if v > 1.0:
        return 1.0
    return v


@njit(cache=True)
def _g_at(d, c, b, k, sgn, lam):
    """g(lam) = sgn*c · clip(d - lam*sgn*c) + sgn*b."""
    s = sgn * b
    for i in range(k):
        ci = sgn * c[i]
        s += ci * _clip01(d[i] - lam * ci)
    return s


@njit(cache=True)
def root_multiplier(d, c, b, k, sgn, inv_kappa, out, bp):
    """Solve ``g(lam) - inv_kappa * lam = 0`` for ``lam >= 0`` and write ``clip(d - lam c')`` to ``out``.

    ``c' = sgn * c`` and ``b' = sgn * b``; the caller guarantees ``g(0) > 0``. With
    ``inv_kappa == 0`` the equation is ``g(lam) = 0`` (projection onto the hyperplane
    ``c'·x + b' = 0`` intersected with the box); when the hyperplane misses the box the limit
    ``lam -> inf`` (the box corner minimizing ``c'·x``) is written and ``inf`` returned.
    ``bp`` is scratch space of length ``>= 2 k``.
    """
    nb = 0
    for i in range(k):
        ci = sgn * c[i]
        if ci != 0.0:
            t1 = d[i] / ci
            t2 = (d[i] - 1.0) / ci
            if t1 > 0.0:
                bp[nb] = t1
                nb += 1
            if t2 > 0.0:
                bp[nb] = t2
                nb += 1
    # insertion sort (arities are small; still correct for any k)
    for i in range(1, nb):
        v = bp[i]
        j = i - 1
        while j >= 0 and bp[j] > v:
            bp[j + 1] = bp[j]
            j -= 1
        bp[j + 1] = v
    # smallest j with F(bp[j]) <= 0, F(lam) = g(lam) - inv_kappa * lam (non-increasing)
    lo = 0
    hi = nb
    while lo < hi:
        mid = (lo + hi) // 2
        if _g_at(d, c, b, k, sgn, bp[mid]) - inv_kappa * bp[mid] <= 0.0:
            hi = mid
        else:
            lo = mid + 1
    left = bp[lo - 1] if lo > 0 else 0.0
    if lo < nb:
        right = bp[lo]
        probe = 0.5 * (left + right)
    else:
        right = np.inf
        probe = left + 1.0
    # on (left, right) the free set is constant: g is linear there
    num = sgn * b
    den = inv_kappa
    for i in range(k):
        ci = sgn * c[i]
        v = d[i] - probe * ci
        if v <= 0.0:
            pass
        elif v >= 1.0:
            num += ci
        else:
            num += ci * d[i]
            den += ci * ci
    if den <= 0.0:
        # g constant > 0 beyond the last breakpoint: the hyperplane misses the box
        for i in range(k):
            ci = sgn * c[i]
            if ci > 0.0:
                out[i] = 0.0
            elif ci < 0.0:
                out[i] = 1.0
            else:
                out[i] = _clip01(d[i])
        return np.inf
    lam = num / den
    if lam < left:
        lam = left
    elif lam > right:
        lam = right
    for i in range(k):
        out[i] = _clip01(d[i] - lam * sgn * c[i])
    return lam


@njit(cache=True)
def local_update(kind, d, c, b, w, rho, k, out, bp):
    """Minimizer of one local problem (potential or constraint) written to ``out[:k]``.

    kind KIND_HINGE:   w max(c·x+b, 0)   + rho/2 ||x-d||^2 over the box (CO-Linear, any arity)
    kind KIND_SQUARED: w max(c·x+b, 0)^2 + rho/2 ||x-d||^2 over the box (CO-Quad, any arity)
    kind KIND_LEQ:     projection of d onto {c·x+b <= 0} ∩ box
    kind KIND_EQ:      projection of d onto {c·x+b == 0} ∩ box
    """
    # clip first: alpha^(1) of the paper
    g0 = b
    for i in range(k):
        v = _clip01(d[i])
        out[i] = v
        g0 += c[i] * v
    if kind == KIND_EQ:
        if g0 > 0.0:
            root_multiplier(d, c, b, k, 1.0, 0.0, out, bp)
        elif g0 < 0.0:
            root_multiplier(d, c, b, k, -1.0, 0.0, out, bp)
        return
    if g0 <= 0.0 or (kind != KIND_LEQ and w <= 0.0):
        return
    if kind == KIND_LEQ:
        root_multiplier(d, c, b, k, 1.0, 0.0, out, bp)
    elif kind == KIND_SQUARED:
        root_multiplier(d, c, b, k, 1.0, rho / (2.0 * w), out, bp)
    else:
        # alpha^(2): the linear side
        step = w / rho
        g2 = b
        for i in range(k):
            g2 += c[i] * _clip01(d[i] - step * c[i])
        if g2 >= 0.0:
            for i in range(k):
                out[i] = _clip01(d[i] - step * c[i])
        else:
            root_multiplier(d, c, b, k, 1.0, 0.0, out, bp)


@njit(cache=True)
def batch_local_updates(indptr, coef, const, weight, kind, d, rho, out):
    """Apply :func:`local_update` to every term; ``d`` and ``out`` are per local copy."""
    maxk = 1
    for t in range(indptr.shape[0] - 1):
        maxk = max(maxk, indptr[t + 1] - indptr[t])
    bp = np.empty(2 * maxk)
    for t in range(indptr.shape[0] - 1):
        s = indptr[t]
        e = indptr[t + 1]
        local_update(kind[t], d[s:e], coef[s:e], const[t], weight[t], rho, e - s, out[s:e], bp)


@njit(cache=True)
def admm_run(indptr, idx, coef, const, weight, kind, cnt, x, y, z, rho, alpha, eps_abs, eps_rel, n_steps,
             stats):
    """Run up to ``n_steps`` consensus-ADMM iterations in place; return the number done.

    ``x``, ``y``: local copies and (unscaled) multipliers, one per copy; ``z``: consensus variables;
    ``cnt[v]``: number of copies of variable ``v``. Over-relaxation ``alpha`` in (0, 2) (1 = plain
    ADMM). After each iteration ``stats`` holds (primal residual, dual residual, eps_primal,
    eps_dual); the loop stops early when both residuals are below their tolerances (Boyd et al.
    2011, Sec. 3.3, with ``sqrt(number of local copies)`` scaling of ``eps_abs``).
    """
    n_terms = indptr.shape[0] - 1
    nnz = idx.shape[0]
    n = z.shape[0]
    maxk = 1
    for t in range(n_terms):
        maxk = max(maxk, indptr[t + 1] - indptr[t])
    d = np.empty(maxk)
    bp = np.empty(2 * maxk)
    acc = np.empty(n)
    z_old = np.empty(n)
    sqrt_p = np.sqrt(nnz)
    inv_rho = 1.0 / rho
    for it in range(n_steps):
        for v in range(n):
            acc[v] = 0.0
            z_old[v] = z[v]
        for t in range(n_terms):
            s = indptr[t]
            e = indptr[t + 1]
            k = e - s
            for j in range(k):
                d[j] = z[idx[s + j]] - y[s + j] * inv_rho
            local_update(kind[t], d, coef[s:e], const[t], weight[t], rho, k, x[s:e], bp)
            for j in range(k):
                v = idx[s + j]
                acc[v] += alpha * x[s + j] + (1.0 - alpha) * z_old[v] + y[s + j] * inv_rho
        dual = 0.0
        znorm = 0.0
        for v in range(n):
            if cnt[v] > 0:
                zv = _clip01(acc[v] / cnt[v])
                dz = zv - z_old[v]
                dual += cnt[v] * dz * dz
                znorm += cnt[v] * zv * zv
                z[v] = zv
        primal = 0.0
        xnorm = 0.0
        ynorm = 0.0
        for j in range(nnz):
            v = idx[j]
            xj = x[j]
            r = xj - z[v]
            primal += r * r
            xnorm += xj * xj
            y[j] += rho * (alpha * xj + (1.0 - alpha) * z_old[v] - z[v])
            ynorm += y[j] * y[j]
        stats[0] = np.sqrt(primal)
        stats[1] = rho * np.sqrt(dual)
        stats[2] = sqrt_p * eps_abs + eps_rel * max(np.sqrt(xnorm), np.sqrt(znorm))
        stats[3] = sqrt_p * eps_abs + eps_rel * np.sqrt(ynorm)
        if stats[0] <= stats[2] and stats[1] <= stats[3]:
            return it + 1
    return n_steps


@njit(cache=True)
def term_values(indptr, idx, coef, const, x):
    """``c_t · x[idx] + b_t`` for every term ``t``."""
    n_terms = indptr.shape[0] - 1
    out = np.empty(n_terms)
    for t in range(n_terms):
        s = const[t]
        for j in range(indptr[t], indptr[t + 1]):
            s += coef[j] * x[idx[j]]
        out[t] = s
    return out
