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

Hinges and squared hinges with one or two unknowns (all of the opinion-diffusion models, and most
PSL rules) take a branch-free route instead (:func:`pair_multiplier`): ``g`` is evaluated at 0,
at the upper end of the multiplier's range and at the four breakpoints, and the root is
interpolated on the one linear piece that brackets it. The terms of a block are ordered so that
these come first (:func:`fast_counts`), and their loop is vectorized by the compiler (AVX-512 on
the benchmark machine): 3-4x less time per term than the general code, whose data-dependent
branches stall on outcomes close to 50/50.

Compilation (a solve's first call compiles :func:`admm_steps` and
:func:`tractable.hlmrf.bound.certificate_pass`, nothing else, for the models that need no general
code): the closed forms and the per-term updates of the vectorized loops live in
:mod:`tractable.hlmrf._closed`, lowered straight to LLVM IR where the loops call them; the loops
themselves are inlined into the two kernels (no kernel of their own, whose code would be compiled
again in its caller); work arrays come from the callers (:func:`admm_work`; numba's allocation
routines are not compiled); the general code (arity above two, constraints with local copies) is
compiled only for the models that have such terms (a ``None`` work space prunes it). Its kernels
(:func:`_root_multiplier`, :func:`_general_terms`, and the certificate's) are called, not inlined, have
no Python entry point (``no_cpython_wrapper``) and are compiled for size (:func:`tractable._numba.scalar_loops`): their
loops run over the unknowns of one term, a few, where vectorized copies never run but cost compilation,
twice (on their own and again in the kernel that links them).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._numba import njit, scalar_loops
from ._closed import (
    pair_multiplier,
    pair_projection,
    pair_term_update,
    pair_x,
    projection_multiplier,
    single_projection,
    single_term_update,
)

KIND_HINGE = 0  # w * max(c·x + b, 0)
KIND_SQUARED = 1  # w * max(c·x + b, 0) ** 2
KIND_LEQ = 2  # constraint c·x + b <= 0
KIND_EQ = 3  # constraint c·x + b == 0


@njit(no_cpython_wrapper=True)
def _clip01(v):
    if v < 0.0:
        return 0.0
    if v > 1.0:
        return 1.0
    return v


@njit(inline="always")
def _g_at(d, sc, ds, c, s0, b, k, sgn, lam):
    """g(lam) = sgn*c · clip(d - lam*sgn*c*sc) + sgn*b."""
    s = sgn * b
    for i in range(k):
        ci = sgn * c[s0 + i]
        s += ci * _clip01(d[ds + i] - lam * ci * sc[ds + i])
    return s


@njit(no_cpython_wrapper=True)
def _root_multiplier(d, sc, ds, c, s0, b, k, sgn, inv_kappa, out, bp, bs):
    """Solve ``g(lam) - inv_kappa * lam = 0`` for ``lam >= 0`` and write ``clip(d - lam c')`` to ``out``.

    The term's coefficients are ``c[s0:s0 + k]`` and its outputs ``out[s0:s0 + k]``; ``d[ds:ds + k]``
    is the target point and ``sc[ds:ds + k] > 0`` scales the step per component (``x_i = clip(d_i - lam c'_i sc_i)``:
    the projection in the norm ``sum_i (x_i - d_i)^2 / sc_i``; all ones for the ADMM local updates).
    ``c' = sgn * c`` and ``b' = sgn * b``; the caller guarantees ``g(0) > 0``.
    With ``inv_kappa == 0`` the equation is ``g(lam) = 0`` (projection onto the hyperplane
    ``c'·x + b' = 0`` intersected with the box); when the hyperplane misses the box the limit
    ``lam -> inf`` (the box corner minimizing ``c'·x``) is written and ``inf`` returned.
    ``bp[bs:bs + 2 k]`` is scratch space. (Offsets instead of slices: no array views are created,
    which matters inside parallel loops.)
    """
    scalar_loops()
    # fast path: one Newton step from lam = 0 on the linear piece to the right of 0; accepted when
    # the free set at the new point is the same (then it is the exact root)
    num = sgn * b
    den = inv_kappa
    for i in range(k):
        ci = sgn * c[s0 + i]
        di = d[ds + i]
        if di > 1.0 or (di == 1.0 and ci <= 0.0):
            num += ci
        elif di > 0.0 or (di == 0.0 and ci < 0.0):
            num += ci * di
            den += ci * ci * sc[ds + i]
    if den > 0.0:
        lam = num / den
        ok = lam >= 0.0
        if ok:
            for i in range(k):
                ci = sgn * c[s0 + i]
                di = d[ds + i]
                v = di - lam * ci * sc[ds + i]
                was_free = (0.0 < di < 1.0) or (di == 0.0 and ci < 0.0) or (di == 1.0 and ci > 0.0)
                if was_free:
                    if v < 0.0 or v > 1.0:
                        ok = False
                        break
                elif (di <= 0.0 and v > 0.0) or (di >= 1.0 and v < 1.0):
                    ok = False
                    break
        if ok:
            for i in range(k):
                out[s0 + i] = _clip01(d[ds + i] - lam * sgn * c[s0 + i] * sc[ds + i])
            return lam
    # general case: locate the root among the sorted breakpoints
    nb = 0
    for i in range(k):
        ci = sgn * c[s0 + i]
        if ci != 0.0:
            t1 = d[ds + i] / (ci * sc[ds + i])
            t2 = (d[ds + i] - 1.0) / (ci * sc[ds + i])
            if t1 > 0.0:
                bp[bs + nb] = t1
                nb += 1
            if t2 > 0.0:
                bp[bs + nb] = t2
                nb += 1
    # insertion sort (arities are small; still correct for any k)
    for i in range(1, nb):
        v = bp[bs + i]
        j = i - 1
        while j >= 0 and bp[bs + j] > v:
            bp[bs + j + 1] = bp[bs + j]
            j -= 1
        bp[bs + j + 1] = v
    # smallest j with F(bp[bs + j]) <= 0, F(lam) = g(lam) - inv_kappa * lam (non-increasing)
    lo = 0
    hi = nb
    while lo < hi:
        mid = (lo + hi) // 2
        if _g_at(d, sc, ds, c, s0, b, k, sgn, bp[bs + mid]) - inv_kappa * bp[bs + mid] <= 0.0:
            hi = mid
        else:
            lo = mid + 1
    left = bp[bs + lo - 1] if lo > 0 else 0.0
    if lo < nb:
        right = bp[bs + lo]
        probe = 0.5 * (left + right)
    else:
        right = np.inf
        probe = left + 1.0
    # on (left, right) the free set is constant: g is linear there
    num = sgn * b
    den = inv_kappa
    for i in range(k):
        ci = sgn * c[s0 + i]
        v = d[ds + i] - probe * ci * sc[ds + i]
        if v <= 0.0:
            pass
        elif v >= 1.0:
            num += ci
        else:
            num += ci * d[ds + i]
            den += ci * ci * sc[ds + i]
    if den <= 0.0 and (lo < nb or num <= 0.0):
        # g is constant on (left, right) (no coordinate free there) and changes sign from F(left) > 0 to
        # F(right) <= 0, so it is 0 on the whole interval up to rounding: left is a root. (Writing the box
        # corner here projected feasible points such as sum x = 1 from d = (1.12, 0.107, ...) to all zeros.)
        for i in range(k):
            out[s0 + i] = _clip01(d[ds + i] - left * sgn * c[s0 + i] * sc[ds + i])
        return left
    if den <= 0.0:
        # g constant > 0 beyond the last breakpoint: the hyperplane misses the box
        for i in range(k):
            ci = sgn * c[s0 + i]
            if ci > 0.0:
                out[s0 + i] = 0.0
            elif ci < 0.0:
                out[s0 + i] = 1.0
            else:
                out[s0 + i] = _clip01(d[ds + i])
        return np.inf
    lam = num / den
    if lam < left:
        lam = left
    elif lam > right:
        lam = right
    for i in range(k):
        out[s0 + i] = _clip01(d[ds + i] - lam * sgn * c[s0 + i] * sc[ds + i])
    return lam


@njit
def root_multiplier(d, sc, ds, c, s0, b, k, sgn, inv_kappa, out, bp, bs):
    """:func:`_root_multiplier` from Python (the kernels call that one, compiled without a Python entry point)."""
    return _root_multiplier(d, sc, ds, c, s0, b, k, sgn, inv_kappa, out, bp, bs)


@njit
def local_update(kind, d, sc, ds, c, s0, b, w, rho, k, out, bp, bs):
    """Minimizer of one local problem (potential or constraint) written to ``out[s0:s0 + k]``.

    ``d[ds:ds + k]`` is the target point, ``c[s0:s0 + k]`` the coefficients and ``b`` the constant;
    ``sc[ds:ds + k]`` scales the norm as in :func:`root_multiplier` (all ones for ADMM local updates).

    kind KIND_HINGE:   w max(c·x+b, 0)   + rho/2 ||x-d||^2 over the box (CO-Linear, any arity)
    kind KIND_SQUARED: w max(c·x+b, 0)^2 + rho/2 ||x-d||^2 over the box (CO-Quad, any arity)
    kind KIND_LEQ:     projection of d onto {c·x+b <= 0} ∩ box
    kind KIND_EQ:      projection of d onto {c·x+b == 0} ∩ box
    """
    # clip first: alpha^(1) of the paper
    g0 = b
    for i in range(k):
        v = _clip01(d[ds + i])
        out[s0 + i] = v
        g0 += c[s0 + i] * v
    if kind == KIND_EQ:
        if g0 > 0.0:
            _root_multiplier(d, sc, ds, c, s0, b, k, 1.0, 0.0, out, bp, bs)
        elif g0 < 0.0:
            _root_multiplier(d, sc, ds, c, s0, b, k, -1.0, 0.0, out, bp, bs)
        return
    if g0 <= 0.0 or (kind != KIND_LEQ and w <= 0.0):
        return
    if kind == KIND_LEQ:
        _root_multiplier(d, sc, ds, c, s0, b, k, 1.0, 0.0, out, bp, bs)
    elif kind == KIND_SQUARED:
        _root_multiplier(d, sc, ds, c, s0, b, k, 1.0, rho / (2.0 * w), out, bp, bs)
    else:
        # alpha^(2): the linear side
        step = w / rho
        g2 = b
        for i in range(k):
            g2 += c[s0 + i] * _clip01(d[ds + i] - step * c[s0 + i] * sc[ds + i])
        if g2 >= 0.0:
            for i in range(k):
                out[s0 + i] = _clip01(d[ds + i] - step * c[s0 + i] * sc[ds + i])
        else:
            _root_multiplier(d, sc, ds, c, s0, b, k, 1.0, 0.0, out, bp, bs)


@njit(forceinline=True)
def fast_eligible(k, kind, w):
    """Whether a term takes :func:`pair_multiplier`: a hinge or squared hinge, weight > 0, 1-2 unknowns."""
    return (k == 1 or k == 2) and (kind == KIND_HINGE or kind == KIND_SQUARED) and w > 0.0


def _fast_mask(indptr, kind, weight) -> tuple[np.ndarray, np.ndarray]:
    """The arity of every term and whether it takes :func:`pair_multiplier` (:func:`fast_eligible`)."""
    k = np.diff(indptr)
    return k, ((k == 1) | (k == 2)) & ((kind == KIND_HINGE) | (kind == KIND_SQUARED)) & (weight > 0.0)


def _leading_run(mask: np.ndarray) -> int:
    """Length of the leading run of True values of a boolean array."""
    stop = np.flatnonzero(~mask)
    return int(stop[0]) if stop.size else int(mask.size)


def fast_counts(indptr, kind, weight) -> tuple[int, int]:
    """``(n_pair, n_single)``: the leading run of terms with two unknowns that take
    :func:`pair_multiplier`, then the run of such terms with one unknown right after it.

    (NumPy, once per block: the kernels take the counts as arguments.)"""
    k, fast = _fast_mask(np.asarray(indptr), np.asarray(kind), np.asarray(weight))
    n_pair = _leading_run(fast & (k == 2))
    return n_pair, _leading_run((fast & (k == 1))[n_pair:])


def kernel_order(indptr, kind, weight) -> np.ndarray:
    """A stable permutation of the terms putting those with two unknowns that take
    :func:`pair_multiplier` first, then those with one, then the rest (the layout
    :func:`block_pass` vectorizes; ``indptr`` of shape (n_terms + 1,))."""
    k, fast = _fast_mask(indptr, kind, weight)
    group = np.where(fast, 2 - k, 2)
    return np.argsort(group, kind="stable")


@njit
def batch_local_updates(indptr, coef, const, weight, kind, d, rho, out):
    """Apply the local update to every term; ``d`` and ``out`` are per local copy.

    Hinges and squared hinges with one or two unknowns take :func:`pair_multiplier`, as in
    :func:`block_pass`, and constraints with one or two unknowns the projection of
    :func:`consensus_step` (:func:`tractable.hlmrf._closed.projection_multiplier`); the other terms
    :func:`local_update`.
    """
    maxk = 1
    for t in range(indptr.shape[0] - 1):
        k = indptr[t + 1] - indptr[t]
        maxk = k if k > maxk else maxk
    bp = np.empty(2 * maxk)
    ones = np.ones(d.shape[0])
    for t in range(indptr.shape[0] - 1):
        s = indptr[t]
        k = indptr[t + 1] - s
        d1 = d[s + 1] if k == 2 else 0.0
        c1 = coef[s + 1] if k == 2 else 0.0
        if fast_eligible(k, kind[t], weight[t]):
            sq = kind[t] == KIND_SQUARED
            ik = rho / (2.0 * weight[t]) if sq else 0.0
            top = np.inf if sq else weight[t] / rho
            lam = pair_multiplier(d[s], d1, coef[s], c1, coef[s], c1, const[t], ik, top)
            for j in range(s, s + k):
                out[j] = _clip01(d[j] - lam * coef[j])
        elif k <= 2 and kind[t] >= KIND_LEQ:
            # the consensus step's projections (norm weights 1 here)
            lam, sgn = projection_multiplier(d[s], d1, coef[s], c1, coef[s], c1, const[t], kind[t] == KIND_EQ)
            for j in range(s, s + k):
                out[j] = pair_x(d[j], sgn * coef[j], lam)
        else:
            local_update(kind[t], d, ones, s, coef, s, const[t], weight[t], rho, k, out, bp, np.int64(0))


def constraint_counts(indptr) -> tuple[int, int]:
    """``(n_pair, n_single)`` of consensus-step constraints: the leading run with two unknowns, then the
    run with one right after it (projected by :func:`_fast_projections`)."""
    k = np.diff(indptr)
    n_pair = _leading_run(k == 2)
    return n_pair, _leading_run(k[n_pair:] == 1)


def constraint_order(indptr) -> np.ndarray:
    """A stable permutation of constraints putting those with two unknowns first, then one, then the rest."""
    k = np.diff(indptr)
    return np.argsort(np.where(k == 2, 0, np.where(k == 1, 1, 2)), kind="stable")


@njit(inline="always")
def _fast_projections(n_pair, n_single, d, sc, coef, const, kind, out):
    """The projections of :func:`consensus_step` for its leading constraints with two unknowns, then
    one (copies ``j``: target ``d[j]``, norm weight ``1 / sc[j]``), into ``out``; vectorized."""
    for t in range(n_pair):
        j0 = 2 * t
        j1 = j0 + 1
        out[j0], out[j1] = pair_projection(
            d[j0], d[j1], sc[j0], sc[j1], coef[j0], coef[j1], const[t], kind[t] == KIND_EQ
        )
    base = 2 * n_pair
    for u in range(n_single):
        t = n_pair + u
        j = base + u
        out[j] = single_projection(d[j], sc[j], coef[j], const[t], kind[t] == KIND_EQ)


@njit(inline="always")
def block_pass(indptr, idx, coef, const, weight, kind, n_pair, n_single, x, y, zl, rho, alpha, acc, sums, scratch, zz):
    """The term half of one consensus-ADMM iteration over one block of terms, in place.

    The block's terms use local copies ``indptr[t]:indptr[t + 1]`` of its *local* variables
    ``idx[...]`` (any numbering; ``zl`` holds their current consensus values). For every copy ``j``
    (variable ``v = idx[j]``) the pass does:

    1. the multiplier update of the previous iteration, ``y_j += rho (x_j - zl_v)``;
    2. the exact local update of its term from the target ``d_j = zl_v - y_j / rho`` (clip first,
       the linear side of a hinge, then one Newton step or :func:`root_multiplier`; for the first
       ``n_pair + n_single`` terms :func:`pair_multiplier`);
    3. over-relaxation ``x_j = alpha x_j + (1 - alpha) zl_v``;
    4. the scatter-add ``acc[v] += x_j + y_j / rho``.

    The first ``n_pair`` terms have two unknowns, the next ``n_single`` one, and all of them take
    :func:`pair_multiplier` (:func:`fast_counts`, :func:`kernel_order`): they are gathered into
    ``zz`` (length at least ``2 n_pair + n_single``), run in one vectorized loop per arity
    (:func:`tractable.hlmrf._closed.pair_term_update`) and scattered; the other terms run in one sweep each
    (:func:`_general_terms`).

    ``acc`` (one per local variable) is overwritten; ``sums`` receives the partial squared norms
    ``(sum_j (x_j - zl_v)^2, sum_j x_j^2, sum_j y_j^2)`` of step 1 (the previous iteration's
    primal residual and the norms of its tolerances). ``scratch``: work space of the other terms,
    of length ``4 m`` with ``m`` at least the block's largest arity (:func:`general_scratch`), or
    ``None`` when every term takes the vectorized loop: then the general code is not compiled at
    all (numba prunes the branch on the argument's type).
    """
    for v in range(acc.shape[0]):
        acc[v] = 0.0
    inv_rho = 1.0 / rho
    beta = 1.0 - alpha
    n_fast = 2 * n_pair + n_single
    for j in range(n_fast):
        zz[j] = zl[idx[j]]
    # the fast terms: one straight-line loop per arity (the closed forms of
    # tractable.hlmrf._closed), which the compiler vectorizes
    primal = 0.0
    xnorm = 0.0
    ynorm = 0.0
    for t in range(n_pair):
        j0 = 2 * t
        j1 = j0 + 1
        y[j0], y[j1], x[j0], x[j1], primal, xnorm, ynorm = pair_term_update(
            zz[j0],
            zz[j1],
            x[j0],
            x[j1],
            y[j0],
            y[j1],
            coef[j0],
            coef[j1],
            const[t],
            weight[t],
            kind[t] == KIND_SQUARED,
            rho,
            inv_rho,
            alpha,
            beta,
            primal,
            xnorm,
            ynorm,
        )
    # the terms with one unknown through slices, so that every index is a loop counter: an index computed
    # as an offset plus the counter could be negative, and its wrap-around check kept the loop scalar
    j0 = 2 * n_pair
    xs = x[j0 : j0 + n_single]
    ys = y[j0 : j0 + n_single]
    zs = zz[j0 : j0 + n_single]
    cs = coef[j0 : j0 + n_single]
    bs = const[n_pair : n_pair + n_single]
    ws = weight[n_pair : n_pair + n_single]
    ks = kind[n_pair : n_pair + n_single]
    for u in range(n_single):
        ys[u], xs[u], primal, xnorm, ynorm = single_term_update(
            zs[u],
            xs[u],
            ys[u],
            cs[u],
            bs[u],
            ws[u],
            ks[u] == KIND_SQUARED,
            rho,
            inv_rho,
            alpha,
            beta,
            primal,
            xnorm,
            ynorm,
        )
    # (sums of squares: never -0.0, so no 0.0 + needed for the same bits)
    sums[0] = primal
    sums[1] = xnorm
    sums[2] = ynorm
    for j in range(n_fast):
        acc[idx[j]] += x[j] + y[j] * inv_rho
    if scratch is not None:
        _general_terms(
            indptr, idx, coef, const, weight, kind, n_pair + n_single, x, y, zl, rho, alpha, acc, sums, scratch
        )


@njit(no_cpython_wrapper=True)
def _general_terms(indptr, idx, coef, const, weight, kind, first, x, y, zl, rho, alpha, acc, sums, scratch):
    """Steps 1-4 of :func:`block_pass` for its terms from ``first`` on, one sweep per term; adds the three
    partial squared norms to ``sums``."""
    scalar_loops()
    n_terms = indptr.shape[0] - 1
    maxk = scratch.shape[0] // 4
    d = scratch[:maxk]
    ones = scratch[maxk : 2 * maxk]
    ones[:] = 1.0
    bp = scratch[2 * maxk :]
    inv_rho = 1.0 / rho
    beta = 1.0 - alpha
    primal = 0.0
    xnorm = 0.0
    ynorm = 0.0
    for t in range(first, n_terms):
        s = indptr[t]
        k = indptr[t + 1] - s
        # multiplier update of the previous iteration, then clip first (alpha^(1)): most terms stop there
        g0 = const[t]
        for j in range(k):
            zv = zl[idx[s + j]]
            xh = x[s + j]
            r = xh - zv
            primal += r * r
            xnorm += xh * xh
            yj = y[s + j] + rho * r
            y[s + j] = yj
            ynorm += yj * yj
            dj = zv - yj * inv_rho
            d[j] = dj
            v = _clip01(dj)
            x[s + j] = v
            g0 += coef[s + j] * v
        kt = kind[t]
        b = const[t]
        sgn = 1.0
        ik = 0.0
        todo = False
        if kt == KIND_EQ:
            todo = g0 != 0.0
            if g0 < 0.0:
                sgn = -1.0
        elif g0 > 0.0:
            if kt == KIND_LEQ:
                todo = True
            elif weight[t] > 0.0:
                todo = True
                if kt == KIND_SQUARED:
                    ik = rho / (2.0 * weight[t])
                else:
                    # alpha^(2) of CO-Linear: the linear side
                    step = weight[t] * inv_rho
                    g2 = b
                    for j in range(k):
                        g2 += coef[s + j] * _clip01(d[j] - step * coef[s + j])
                    if g2 >= 0.0:
                        todo = False
                        for j in range(k):
                            x[s + j] = _clip01(d[j] - step * coef[s + j])
        if todo:
            # inline Newton step from lam = 0 (see root_multiplier); the general solver otherwise
            num = sgn * b
            den = ik
            for j in range(k):
                cj = sgn * coef[s + j]
                dj = d[j]
                if dj > 1.0 or (dj == 1.0 and cj <= 0.0):
                    num += cj
                elif dj > 0.0 or (dj == 0.0 and cj < 0.0):
                    num += cj * dj
                    den += cj * cj
            ok = den > 0.0
            if ok:
                lam = num / den
                ok = lam >= 0.0
                if ok:
                    for j in range(k):
                        cj = sgn * coef[s + j]
                        dj = d[j]
                        v = dj - lam * cj
                        if (0.0 < dj < 1.0) or (dj == 0.0 and cj < 0.0) or (dj == 1.0 and cj > 0.0):
                            if v < 0.0 or v > 1.0:
                                ok = False
                        elif (dj <= 0.0 and v > 0.0) or (dj >= 1.0 and v < 1.0):
                            ok = False
                if ok:
                    for j in range(k):
                        x[s + j] = _clip01(d[j] - lam * sgn * coef[s + j])
            if not ok:
                # int64 offsets, not the literal 0: the signature of local_update's calls (one compilation)
                _root_multiplier(d, ones, np.int64(0), coef, s, b, k, sgn, ik, x, bp, np.int64(0))
        for j in range(s, s + k):
            v = idx[j]
            xh = alpha * x[j] + beta * zl[v]
            x[j] = xh
            acc[v] += xh + y[j] * inv_rho
    sums[0] += primal
    sums[1] += xnorm
    sums[2] += ynorm


@njit(inline="always")
def consensus_step(
    acc,
    sums,
    z,
    cnt,
    rho,
    eps_abs,
    eps_rel,
    stop,
    n_copies,
    stats,
    zc_indptr,
    zc_idx,
    zc_coef,
    zc_const,
    zc_kind,
    zc_pair,
    zc_single,
    z_old,
    d,
    sc,
    bp,
    zbuf,
):
    """The consensus half of one consensus-ADMM iteration; True when the stop test holds.

    ``acc[v]`` (length ``n``): the sums over *all* copies of variable ``v`` of ``x_j + y_j / rho``
    (the blocks' :func:`block_pass` outputs added up; overwritten with the average); ``sums``: the
    blocks' partial squared norms added up; ``n_copies``: the total number of local copies.
    First the stop test of Boyd et al. (2011, Sec. 3.3) on the previous iteration: ``stats[0]`` (primal
    residual), ``stats[2]``, ``stats[3]`` (its tolerances) are set from ``sums``; when both residuals
    are below their tolerances and ``stop`` is true, ``z`` is left as is and True returned. Otherwise ``z`` becomes the
    clipped copy average, then each consensus-step constraint (``zc_*``, disjoint supports) is
    projected in the norm weighted by ``cnt`` (the leading ``zc_pair`` with two unknowns, then
    ``zc_single`` with one, from :func:`constraint_counts`, in one vectorized loop); ``stats[1]``
    (dual residual ``rho ||z - z_prev||`` weighted by ``cnt``) and ``stats[4]`` (``||z||`` weighted
    by ``cnt``) are updated. ``z_old`` (length ``n``), ``d``, ``sc``, ``zbuf`` (``zc_idx``'s length)
    and ``bp`` (twice the largest constraint arity) are scratch; ``bp`` is ``None`` when every
    constraint has one or two unknowns (then the general projection, :func:`local_update`, is not
    compiled).
    """
    n = z.shape[0]
    sqrt_p = np.sqrt(n_copies)
    stats[0] = np.sqrt(sums[0])
    xn = np.sqrt(sums[1])
    zn = stats[4]
    stats[2] = sqrt_p * eps_abs + eps_rel * (zn if zn > xn else xn)  # max(xn, zn)
    stats[3] = sqrt_p * eps_abs + eps_rel * np.sqrt(sums[2])
    if stop and stats[0] <= stats[2] and stats[1] <= stats[3]:
        return True
    for v in range(n):
        z_old[v] = z[v]
        if cnt[v] > 0:
            acc[v] = acc[v] / cnt[v]
        else:
            acc[v] = z[v]
        a = acc[v]
        z[v] = 0.0 if a < 0.0 else (1.0 if a > 1.0 else a)  # _clip01(a)
    for j in range(zc_idx.shape[0]):
        v = zc_idx[j]
        d[j] = acc[v]
        sc[j] = 1.0 / cnt[v] if cnt[v] > 0 else 1.0
    _fast_projections(zc_pair, zc_single, d, sc, zc_coef, zc_const, zc_kind, zbuf)
    if bp is not None:
        # the other constraints: local_update's projections (clip first, then root_multiplier),
        # written out for the two kinds of constraints (local_update is not compiled for them)
        for t in range(zc_pair + zc_single, zc_indptr.shape[0] - 1):
            s = zc_indptr[t]
            k = zc_indptr[t + 1] - s
            b = zc_const[t]
            g0 = b
            for j in range(s, s + k):
                a = d[j]
                a = 0.0 if a < 0.0 else (1.0 if a > 1.0 else a)  # _clip01(a)
                zbuf[j] = a
                g0 += zc_coef[j] * a
            # g0 > 0: from above (sign 1); g0 < 0 for an equality: from below (sign -1)
            if g0 > 0.0 or (g0 < 0.0 and zc_kind[t] == KIND_EQ):
                sgn = 1.0 if g0 > 0.0 else -1.0
                _root_multiplier(d, sc, s, zc_coef, s, b, k, sgn, 0.0, zbuf, bp, np.int64(0))
    for j in range(zc_idx.shape[0]):
        z[zc_idx[j]] = zbuf[j]
    dual = 0.0
    znorm = 0.0
    for v in range(n):
        zv = z[v]
        dz = zv - z_old[v]
        dual += cnt[v] * dz * dz
        znorm += cnt[v] * zv * zv
    stats[1] = rho * np.sqrt(dual)
    stats[4] = np.sqrt(znorm)
    return False


def readonly(*arrays) -> tuple:
    """Read-only views (no copies) of ``arrays``.

    The kernels take the term data (row pointers, indices, coefficients, constants, weights, kinds,
    the copy counts) read-only, whoever calls them, so that numba compiles each kernel for one
    signature: a writable and a read-only array are two types, and every combination would be a
    compilation of its own (seconds for the big kernels).
    """
    out = []
    for a in arrays:
        v = a.view()
        v.flags.writeable = False
        out.append(v)
    return tuple(out)


def max_arity(indptr) -> int:
    """Largest number of copies of one term (at least 1)."""
    return int(max(np.diff(indptr).max(initial=1), 1))


def general_scratch(indptr, n_fast: int, n_runs: int = 0):
    """Work space of :func:`block_pass` and :func:`tractable.hlmrf.bound.block_certificate` for the
    terms after the ``n_fast`` leading ones that take the vectorized loops: ``4 m + 1`` floats, ``m`` the
    largest arity (one row per run when ``n_runs``, for the parallel kernels), or ``None`` when
    there are no such terms, so that the kernels are compiled without the general code."""
    if n_fast == indptr.size - 1:
        return None
    shape = 4 * max_arity(indptr) + 1  # + 1: the certificate's running rounding slack
    return np.empty((n_runs, shape) if n_runs else shape)


def projection_scratch(zc_indptr):
    """Work space of :func:`consensus_step` and :func:`tractable.hlmrf.bound.consensus_certificate`
    for the consensus-step constraints after the leading ones with two, then one unknown
    (:func:`constraint_counts`): ``2 m + 1`` floats, ``m`` their largest arity, or ``None`` when
    there are none (the general code is then not compiled)."""
    n_pair, n_single = constraint_counts(zc_indptr)
    return None if n_pair + n_single == zc_indptr.size - 1 else np.empty(2 * max_arity(zc_indptr) + 1)


def admm_run(
    indptr,
    idx,
    coef,
    const,
    weight,
    kind,
    cnt,
    x,
    y,
    z,
    rho,
    alpha,
    eps_abs,
    eps_rel,
    stop,
    n_steps,
    stats,
    zc_indptr,
    zc_idx,
    zc_coef,
    zc_const,
    zc_kind,
) -> int:
    """Run up to ``n_steps`` consensus-ADMM iterations in place; return the number completed.

    With ``stop`` false the residuals are computed (``stats``) but never end the loop early.

    The one-block case of :func:`block_pass` followed by :func:`consensus_step` (the variables'
    local numbering is the global one), in one compiled loop (:func:`admm_steps`, to which this
    passes the term data read-only with the counts and work space it needs; the solver prepares
    them once and calls it directly). Terms may come in any order; those in the leading run
    :func:`fast_counts` finds take the vectorized loop (the solver orders them with
    :func:`kernel_order`).

    ``x``: the (over-relaxed) local copies ``alpha x + (1 - alpha) z_prev`` of the last local update;
    ``y``: unscaled multipliers, one per copy; ``z``: consensus variables; ``cnt[v]``: number of
    copies of variable ``v``. Over-relaxation ``alpha`` in (0, 2) (1 = plain ADMM). ``stats`` carries
    (primal residual, dual residual, eps_primal, eps_dual, ||z|| weighted by ``cnt``) between calls
    (initialize the dual residual to ``inf``). The loop stops when both residuals of the last
    completed iteration are below their tolerances (Boyd et al. 2011, Sec. 3.3, with ``sqrt(number
    of local copies)`` scaling of ``eps_abs``); ``z`` is then that iteration's consensus.

    ``zc_*`` (CSR like the terms, kinds KIND_LEQ / KIND_EQ) are constraints with pairwise disjoint
    supports that belong to the consensus step instead of having local copies: the z-update is then
    the projection of the copy average onto box ∩ constraints in the norm weighted by ``cnt``, which
    separates over the constraints, so every iterate ``z`` is feasible.
    """
    terms = readonly(indptr, idx, coef, const, weight, kind)
    zc = readonly(zc_indptr, zc_idx, zc_coef, zc_const, zc_kind)
    n_pair, n_single = fast_counts(terms[0], terms[5], terms[4])
    state = (x, y, z, float(rho), float(alpha), float(eps_abs), float(eps_rel), bool(stop), False, int(n_steps), stats)
    return admm_steps(
        *terms,
        n_pair,
        n_single,
        readonly(cnt)[0],
        *state,
        *zc,
        *constraint_counts(zc[0]),
        general_scratch(terms[0], n_pair + n_single),
        projection_scratch(zc[0]),
        admm_work(z.size, (n_pair, n_single), zc[1].size),
    )


def admm_work(n: int, counts, n_zc_copies: int) -> tuple:
    """Work space of :func:`admm_steps` for ``n`` variables, the fast-term ``counts`` ``(n_pair,
    n_single)`` and ``n_zc_copies`` copies in consensus-step constraints: the arrays ``(acc, z_old,
    sums, zz, d, sc, zbuf)`` (separate arrays: the vectorized loops read some and write others,
    which the compiler could not tell apart within one array)."""
    return (
        np.empty(n),
        np.empty(n),
        np.empty(3),
        np.empty(2 * counts[0] + counts[1]),
        np.empty(n_zc_copies),
        np.empty(n_zc_copies),
        np.empty(n_zc_copies),
    )


@njit
def admm_steps(
    indptr,
    idx,
    coef,
    const,
    weight,
    kind,
    n_pair,
    n_single,
    cnt,
    x,
    y,
    z,
    rho,
    alpha,
    eps_abs,
    eps_rel,
    stop,
    settle,
    n_steps,
    stats,
    zc_indptr,
    zc_idx,
    zc_coef,
    zc_const,
    zc_kind,
    zc_pair,
    zc_single,
    scratch,
    bp,
    work,
):
    """The compiled loop of :func:`admm_run`: ``n_pair``, ``n_single`` from :func:`fast_counts`,
    ``zc_pair``, ``zc_single`` from :func:`constraint_counts`, ``scratch`` from
    :func:`general_scratch` and ``bp`` from :func:`projection_scratch` (either ``None`` when the
    model needs no general code: then that code is not compiled), ``work`` from :func:`admm_work`
    (work space from the caller: numba's own allocation routines would be compiled too).

    ``stop`` ends the loop *before* the consensus update of an iteration whose residual test holds
    (constraints with local copies); ``settle`` ends it *after* a completed iteration (consensus
    included) once the residual test holds, the test the driver applies between chunks, so a
    warm-started run returns as soon as it converges rather than at the end of its chunk."""
    acc, z_old, sums, zz, d, sc, zbuf = work
    nnz = idx.shape[0]
    for it in range(n_steps):
        block_pass(
            indptr, idx, coef, const, weight, kind, n_pair, n_single, x, y, z, rho, alpha, acc, sums, scratch, zz
        )
        if consensus_step(
            acc,
            sums,
            z,
            cnt,
            rho,
            eps_abs,
            eps_rel,
            stop,
            nnz,
            stats,
            zc_indptr,
            zc_idx,
            zc_coef,
            zc_const,
            zc_kind,
            zc_pair,
            zc_single,
            z_old,
            d,
            sc,
            bp,
            zbuf,
        ):
            return it
        if settle and stats[0] <= stats[2] and stats[1] <= stats[3]:
            return it + 1
    return n_steps


@njit
def _term_values(indptr, idx, coef, const, x, out):
    for t in range(indptr.shape[0] - 1):
        s = const[t]
        for j in range(indptr[t], indptr[t + 1]):
            s += coef[j] * x[idx[j]]
        out[t] = s
    return out


def term_values(indptr, idx, coef, const, x) -> np.ndarray:
    """``c_t · x[idx] + b_t`` for every term ``t`` (the arrays are passed to the kernel read-only and
    contiguous, whatever they are, so that it is compiled once; the output is allocated here, so
    that numba's allocation routine is not compiled for it)."""
    arrays = (
        np.ascontiguousarray(indptr, dtype=np.int64),
        np.ascontiguousarray(idx, dtype=np.int64),
        np.ascontiguousarray(coef, dtype=np.float64),
        np.ascontiguousarray(const, dtype=np.float64),
        np.ascontiguousarray(x, dtype=np.float64),
    )
    return _term_values(*readonly(*arrays), np.empty(arrays[0].size - 1))


def parallel_chunks(indptr, n_chunks: int) -> np.ndarray:
    """Term boundaries of ``n_chunks`` contiguous runs with about equal numbers of copies, shape
    (n_chunks + 1,), for :func:`admm_run_parallel`."""
    n_terms = indptr.size - 1
    n_chunks = max(1, min(int(n_chunks), n_terms))
    cuts = np.searchsorted(indptr, np.linspace(0, indptr[-1], n_chunks + 1)[1:-1])
    return np.unique(np.concatenate([[0], np.minimum(cuts, n_terms), [n_terms]])).astype(np.int64)


def rebased_runs(indptr, chunks) -> np.ndarray:
    """The row pointer of every run ``chunks[c]:chunks[c + 1]`` rebased to the run's first copy, run
    ``c`` at ``[chunks[c] + c : chunks[c + 1] + c + 1]`` (shape (n_terms + n_chunks,), read-only)."""
    runs = [indptr[a : b + 1] - indptr[a] for a, b in zip(chunks[:-1], chunks[1:])]
    return readonly(np.concatenate(runs).astype(np.int64) if runs else np.zeros(0, np.int64))[0]


def run_counts(ipr, kind, weight, chunks) -> np.ndarray:
    """``(n_pair, n_single)`` of :func:`fast_counts` for every run of :func:`rebased_runs`' ``ipr``,
    shape (n_chunks, 2)."""
    out = np.empty((chunks.size - 1, 2), dtype=np.int64)
    for c in range(chunks.size - 1):
        t0, t1 = int(chunks[c]), int(chunks[c + 1])
        out[c] = fast_counts(ipr[t0 + c : t1 + c + 1], kind[t0:t1], weight[t0:t1])
    return out


def admm_run_parallel(
    indptr,
    idx,
    coef,
    const,
    weight,
    kind,
    cnt,
    chunks,
    x,
    y,
    z,
    rho,
    alpha,
    eps_abs,
    eps_rel,
    stop,
    n_steps,
    stats,
    zc_indptr,
    zc_idx,
    zc_coef,
    zc_const,
    zc_kind,
) -> int:
    """Multi-threaded :func:`admm_run` (same iterates up to float summation order).

    The terms are cut into the contiguous runs ``chunks[c]:chunks[c + 1]`` (:func:`parallel_chunks`),
    and numba's threads run :func:`block_pass` on the runs side by side, each into its own partial
    sums over all variables (a run's leading terms with one or two unknowns take the vectorized
    loop, as in the one-thread kernel); the partial sums are added up in parallel, then the
    consensus step runs on one thread. So the term half is the partitioned iteration of
    :mod:`tractable.hlmrf.partition` with the global numbering in every block. The compiled loop
    is :func:`admm_steps_parallel`.
    """
    terms = readonly(indptr, idx, coef, const, weight, kind)
    zc = readonly(zc_indptr, zc_idx, zc_coef, zc_const, zc_kind)
    chunks = readonly(np.asarray(chunks, dtype=np.int64))[0]
    ipr = rebased_runs(terms[0], chunks)
    counts = run_counts(ipr, terms[5], terms[4], chunks)
    n_pair, n_single = fast_counts(terms[0], terms[5], terms[4])
    state = (x, y, z, float(rho), float(alpha), float(eps_abs), float(eps_rel), bool(stop), False, int(n_steps), stats)
    return admm_steps_parallel(
        *terms,
        readonly(cnt)[0],
        chunks,
        ipr,
        counts,
        *state,
        *zc,
        *constraint_counts(zc[0]),
        general_scratch(terms[0], n_pair + n_single, chunks.size - 1),
        projection_scratch(zc[0]),
    )


@njit(parallel=True)
def admm_steps_parallel(
    indptr,
    idx,
    coef,
    const,
    weight,
    kind,
    cnt,
    chunks,
    ipr,
    counts,
    x,
    y,
    z,
    rho,
    alpha,
    eps_abs,
    eps_rel,
    stop,
    settle,
    n_steps,
    stats,
    zc_indptr,
    zc_idx,
    zc_coef,
    zc_const,
    zc_kind,
    zc_pair,
    zc_single,
    scratch,
    bp,
):
    """The compiled loop of :func:`admm_run_parallel`: ``ipr`` from :func:`rebased_runs`, ``counts``
    from :func:`run_counts`, ``zc_pair``, ``zc_single`` from :func:`constraint_counts`, ``scratch``
    (one row per run) from :func:`general_scratch` and ``bp`` from :func:`projection_scratch`,
    either ``None`` when the model needs no general code; ``stop`` and ``settle`` as in
    :func:`admm_steps`."""
    n = z.shape[0]
    n_chunks = chunks.shape[0] - 1
    accs = np.empty((n_chunks, n))
    sumsc = np.empty((n_chunks, 3))
    zz = np.empty(idx.shape[0])
    acc = np.empty(n)
    sums = np.empty(3)
    d = np.empty(zc_idx.shape[0])
    sc = np.empty(zc_idx.shape[0])
    zbuf = np.empty(zc_idx.shape[0])
    z_old = np.empty(n)
    nnz = idx.shape[0]
    for it in range(n_steps):
        for c in prange(n_chunks):
            t0 = chunks[c]
            t1 = chunks[c + 1]
            s0 = indptr[t0]
            s1 = indptr[t1]
            if scratch is None:
                block_pass(
                    ipr[t0 + c : t1 + c + 1],
                    idx[s0:s1],
                    coef[s0:s1],
                    const[t0:t1],
                    weight[t0:t1],
                    kind[t0:t1],
                    counts[c, 0],
                    counts[c, 1],
                    x[s0:s1],
                    y[s0:s1],
                    z,
                    rho,
                    alpha,
                    accs[c],
                    sumsc[c],
                    None,
                    zz[s0:s1],
                )
            else:
                block_pass(
                    ipr[t0 + c : t1 + c + 1],
                    idx[s0:s1],
                    coef[s0:s1],
                    const[t0:t1],
                    weight[t0:t1],
                    kind[t0:t1],
                    counts[c, 0],
                    counts[c, 1],
                    x[s0:s1],
                    y[s0:s1],
                    z,
                    rho,
                    alpha,
                    accs[c],
                    sumsc[c],
                    scratch[c],
                    zz[s0:s1],
                )
        for v in prange(n):
            a = 0.0
            for c in range(n_chunks):
                a += accs[c, v]
            acc[v] = a
        for i in range(3):
            a = 0.0
            for c in range(n_chunks):
                a += sumsc[c, i]
            sums[i] = a
        if consensus_step(
            acc,
            sums,
            z,
            cnt,
            rho,
            eps_abs,
            eps_rel,
            stop,
            nnz,
            stats,
            zc_indptr,
            zc_idx,
            zc_coef,
            zc_const,
            zc_kind,
            zc_pair,
            zc_single,
            z_old,
            d,
            sc,
            bp,
            zbuf,
        ):
            return it
        if settle and stats[0] <= stats[2] and stats[1] <= stats[3]:
            return it + 1
    return n_steps
