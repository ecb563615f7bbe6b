"""Certified lower bounds on the MPE optimum of a hinge-loss MRF from ADMM's multipliers.

Derivation
----------
After folding the fixed variables into the constants, consensus ADMM solves

    minimize  sum_t F_t(x_t)   subject to  x_t = z[idx_t] for every term t,  x_t in [0, 1]^{k_t},  z in Z,

where term ``t`` has local copies ``x_t`` with coefficients ``c_t`` and constant ``b_t``, and
``F_t(x) = w_t max(c_t·x + b_t, 0)^{p_t}`` for a potential, or the indicator of ``c_t·x + b_t <= 0``
(``== 0``) for a constraint with local copies. ``Z`` is the box ``[0, 1]^n`` intersected with the
constraints moved to the consensus step (``constraints="consensus"``; their supports are disjoint).
Relaxing only the consensus equations with one multiplier per copy (ADMM's unscaled ``y``; the box
stays inside every subproblem) gives the Lagrangian dual function

    g(y) = offset + sum_t m_t(y_t) + min_{z in Z} (-Y · z),      Y_v = sum of y over the copies of v,

    m_t(y_t) = min_{x in [0, 1]^k} F_t(x) + y_t · x,

(``offset``: potentials over fixed variables only). Each minimum is over a compact set and finite
(``+inf`` only when a constraint misses the box), so ``g(y) <= optimum`` for *every* ``y`` (weak
duality): any multipliers, even those of an early stop, give a valid bound.

Each ``m_t`` is itself computed by a one-dimensional dual. Write ``F(x) = f(c·x + b)`` with
``f(s) = sup_{theta in Theta} theta s - q theta^2``:

* hinge ``w max(s, 0)``: ``Theta = [0, w]``, ``q = 0``;
* squared hinge ``w max(s, 0)^2``: ``Theta = [0, inf)``, ``q = 1 / (4 w)``;
* constraint ``s <= 0``: ``Theta = [0, inf)``, ``q = 0``; ``s == 0``: ``Theta = R``, ``q = 0``.

The box is compact and the function is convex in ``x`` and concave in ``theta``, so min and sup
swap (Sion), and the minimum over the box separates over the coordinates:

    m_t(y) = sup_{theta in Theta} h(theta),   h(theta) = theta b - q theta^2 + sum_i min(0, y_i + theta c_i).

``h`` is concave and piecewise quadratic with breakpoints ``-y_i / c_i``; on each piece its
derivative is ``S - 2 q theta`` with ``S = b + sum of c_i over the i with y_i + theta c_i < 0``, and
``S`` drops by ``|c_i|`` at each breakpoint. Sorting the breakpoints and sweeping them finds the
maximizer exactly (the first piece where the derivative changes sign; for ``q > 0`` the stationary
point ``S / (2 q)`` inside it). The crucial point for rigour: ``h(theta) <= m_t(y)`` for *every*
``theta`` in ``Theta``, so an error in locating the maximizer can only lower the bound; only the
final evaluation of ``h`` is subject to rounding, and a rigorous floating-point slack (``(k + 3) u``
times the sum of the magnitudes involved, ``u`` the unit roundoff, with a margin) is subtracted
for it, and likewise for the sums over terms and variables.

The consensus part: for a variable in no consensus constraint, ``min_{z_v in [0, 1]} -Y_v z_v =
min(0, -Y_v)``; a consensus constraint ``a·z + b <= 0`` (or ``== 0``) over its disjoint support is
``m`` above with ``y = -Y`` on that support. When the hyperplane of a constraint misses the box the
sup is ``+inf`` (the problem is infeasible); the sweep then stops at the last breakpoint and returns
a finite, still valid, value.

The same pass evaluates the objective and the largest constraint violation of the consensus point
``z``, so that a certified relative gap ``(objective(z) - g(y)) / max(|objective(z)|, 1)`` costs one
pass over the terms, about 1.4 ADMM iterations.

Terms with one or two unknowns skip the sweep: the concave ``h`` peaks at an end of ``Theta``, at a
breakpoint, or (``q > 0``) at the stationary point ``S / (2 q)`` of a piece, whose slope ``S`` is
``b`` plus the sum of the ``c_i`` of a subset of the unknowns; :func:`pair_dual_theta` and
:func:`constraint_dual_theta` evaluate ``h`` at all of these (clipped into ``Theta``, so every
value is a valid bound) and keep the best, with no data-dependent branch, so the certificate's
loop over such terms vectorizes.

Infeasibility
-------------
Dropping the potentials (weights 0: only the box stays in their local problems) leaves

    h(w) = sum_t min_{x in C_t} w_t · x + min_{z in Z} (-W · z),

``C_t`` the box for a potential and box ∩ constraint for a constraint term. ``h`` is positively
homogeneous, and ``h(w) <= 0`` for *every* ``w`` when a feasible point ``z`` exists (take
``x_t = z[idx_t]``: the two sums cancel). So a computed ``h(w) > 0`` (the same kernel, the same
rigorous slack) proves that the model is infeasible: a Farkas certificate. On an infeasible model
ADMM's multipliers grow without bound along such a direction — their increments converge to a
vector with ``h > 0`` while the primal residual stalls at a positive value (Banjac et al. 2019,
"Infeasibility detection in the alternating direction method of multipliers for convex
optimization") — so the solver tests ``w = y_k - y_{k - m}`` from time to time
(:func:`infeasibility_measure`). Since ``g(y + s w) >= g(y) + s h(w)``, the dual bound diverges too.

:func:`term_minimum_reference` is a slow, readable version of ``m_t`` (enumerating every
breakpoint and stationary point) used in the tests; :func:`term_minima` runs the compiled kernel
on a batch of terms.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._numba import njit, scalar_loops
from . import _kernels
from ._closed import constraint_certificate, constraint_dual_theta, pair_dual_theta, pair_h, term_certificate
from .updates import KINDS, _check_term_batch

__all__ = ["FEASIBILITY_TOL", "gap", "term_minimum_reference", "term_minima", "infeasibility_measure"]

#: unit roundoff with a margin, for the rigorous slack of floating-point sums
_U = 2.0 * np.finfo(np.float64).eps

#: largest violation of a point whose objective certifies a gap
FEASIBILITY_TOL = 1e-9


def gap(objective: float, lower_bound: float, violation: float) -> float:
    """Certified relative gap ``(objective - lower_bound) / max(|objective|, 1)`` of a point with
    ``objective`` and largest constraint ``violation``; ``inf`` unless the point is feasible (violation
    at most :data:`FEASIBILITY_TOL`) and both values are finite."""
    if not (violation <= FEASIBILITY_TOL and np.isfinite(lower_bound) and np.isfinite(objective)):
        return float("inf")
    return float(max(objective - lower_bound, 0.0) / max(abs(objective), 1.0))


def _theta_domain(kind: int, w: float):
    """``(lo, hi, q)`` of the 1-D dual of a term of ``kind`` and weight ``w``."""
    if kind == _kernels.KIND_HINGE:
        return 0.0, max(w, 0.0), 0.0
    if kind == _kernels.KIND_SQUARED:
        return (0.0, np.inf, 1.0 / (4.0 * w)) if w > 0 else (0.0, 0.0, 0.0)
    if kind == _kernels.KIND_LEQ:
        return 0.0, np.inf, 0.0
    return -np.inf, np.inf, 0.0


def term_minimum_reference(kind: str, y, c, b: float, weight: float = 0.0) -> float:
    """``min_{x in [0, 1]^k} F(x) + y·x`` for one term, by enumerating the candidates of its 1-D dual.

    Parameters
    ----------
    kind : {"hinge", "squared", "leq", "eq"}
        ``F(x) = w max(c·x + b, 0)`` / ``w max(c·x + b, 0)^2`` / indicator of ``c·x + b <= 0`` / ``== 0``.
    y, c : array_like of shape (k,)
        Linear cost and coefficients.
    b, weight : float
        Constant and weight (ignored for constraints).

    Returns
    -------
    float
        The minimum (``inf`` when a constraint misses the box; exact up to rounding).
    """
    y = np.asarray(y, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    lo, hi, q = _theta_domain(KINDS.index(kind), float(weight))

    def h(theta):
        return theta * b - q * theta * theta + float(np.minimum(0.0, y + theta * c).sum())

    nz = c != 0
    cand = list(-y[nz] / c[nz])
    pts = sorted({t for t in cand if lo <= t <= hi} | {v for v in (lo, hi) if np.isfinite(v)} | {0.0})
    pts = [t for t in pts if lo <= t <= hi]
    # stationary points of each quadratic piece
    if q > 0:
        grid = [*pts, hi]
        for a, e in zip(grid[:-1], grid[1:]):
            mid = 0.5 * (a + e) if np.isfinite(e) else a + 1.0
            s = b + float(c[(y + mid * c) < 0].sum())
            t = s / (2 * q)
            if a <= t <= e:
                pts.append(t)
    best = max(h(t) for t in pts)
    # unbounded directions (constraints only): the slope of h beyond the extreme breakpoints
    if q == 0:
        if hi == np.inf and b + float(c[c < 0].sum()) > 0:
            return np.inf
        if lo == -np.inf and b + float(c[c > 0].sum()) < 0:
            return np.inf
    return best


@njit(inline="always")
def _dual_term(y, ys, c, cs, k, b, q, lo, hi, tb, db, out):
    """A (near-)maximizer's value of ``h`` (module docstring) for one term; ``out[0]`` += rounding slack.

    ``y[ys:ys + k]``: the linear costs; ``c[cs:cs + k]``: the coefficients; ``tb``, ``db``: scratch
    of size ``>= k``. The value is ``h(theta)`` for some ``theta`` in ``[lo, hi]``, hence a valid
    lower bound on the term's minimum whatever the rounding of the sweep.
    """
    s = b
    nb = 0
    for i in range(k):
        ci = c[cs + i]
        if ci == 0.0:
            continue
        t = -y[ys + i] / ci
        if t > lo:
            if ci > 0.0:
                s += ci
            if t < hi:
                # insertion sort by breakpoint
                j = nb - 1
                while j >= 0 and tb[j] > t:
                    tb[j + 1] = tb[j]
                    db[j + 1] = db[j]
                    j -= 1
                tb[j + 1] = t
                db[j + 1] = abs(ci)
                nb += 1
        elif ci < 0.0:
            s += ci
    left = lo
    theta = 0.0
    for m in range(nb + 1):
        right = tb[m] if m < nb else hi
        if q > 0.0:
            ts = s / (2.0 * q)
            if ts <= right:
                theta = left if left > ts else ts  # max(ts, left)
                break
        elif s <= 0.0:
            theta = left
            break
        if m == nb:
            theta = right
            break
        s -= db[m]
        left = right
    if theta == -np.inf:
        theta = tb[0] if nb > 0 else 0.0
    elif theta == np.inf:
        theta = left if left > -np.inf else 0.0
    val = theta * b - q * theta * theta
    mag = abs(theta * b) + q * theta * theta
    for i in range(k):
        v = y[ys + i] + theta * c[cs + i]
        if v < 0.0:
            val += v
        mag += abs(y[ys + i]) + abs(theta * c[cs + i])
    out[0] += (k + 3) * 2.3e-16 * mag
    return val


@njit(no_cpython_wrapper=True)
def _domain(kind, w):
    if kind == 0:
        return 0.0, 0.0 if 0.0 > w else w, 0.0  # max(w, 0.0), without the builtin
    if kind == 1:
        if w > 0.0:
            return 0.0, np.inf, 1.0 / (4.0 * w)
        return 0.0, 0.0, 0.0
    if kind == 2:
        return 0.0, np.inf, 0.0
    return -np.inf, np.inf, 0.0


@njit
def batch_term_minima(indptr, coef, const, weight, kind, y, out):
    """The dual value of every term (values in ``out``): :func:`pair_dual_theta` for hinges and
    squared hinges with one or two unknowns and :func:`constraint_dual_theta` for such constraints
    (as the solver's certificate), :func:`_dual_term` otherwise; returns the rounding slack of the
    latter."""
    maxk = 1
    for t in range(indptr.shape[0] - 1):
        k = indptr[t + 1] - indptr[t]
        maxk = k if k > maxk else maxk
    tb = np.empty(maxk)
    db = np.empty(maxk)
    sl = np.zeros(1)
    for t in range(indptr.shape[0] - 1):
        s = indptr[t]
        k = indptr[t + 1] - s
        lo, hi, q = _domain(kind[t], weight[t])
        if _kernels.fast_eligible(k, kind[t], weight[t]):
            # the closed form of the solver's certificate (block_certificate)
            y1 = y[s + 1] if k == 2 else 0.0
            c1 = coef[s + 1] if k == 2 else 0.0
            theta = pair_dual_theta(y[s], y1, coef[s], c1, const[t], q, hi, kind[t] == _kernels.KIND_SQUARED)
            out[t] = pair_h(theta, y[s], y1, coef[s], c1, const[t], q)
        elif k <= 2 and kind[t] >= _kernels.KIND_LEQ:
            # as the certificate's consensus-step constraints
            y1 = y[s + 1] if k == 2 else 0.0
            c1 = coef[s + 1] if k == 2 else 0.0
            theta = constraint_dual_theta(y[s], y1, coef[s], c1, const[t], kind[t] == _kernels.KIND_EQ)
            out[t] = pair_h(theta, y[s], y1, coef[s], c1, const[t], 0.0)
        else:
            out[t] = _dual_term(y, s, coef, s, k, const[t], q, lo, hi, tb, db, sl)
    return sl[0]


@njit(inline="always")
def block_certificate(indptr, idx, coef, const, weight, kind, n_pair, n_single, y, zl, yl, part, scratch, work):
    """The term half of :func:`certificate` for one block of terms (local variable numbering).

    ``zl``: consensus values of the block's local variables; ``yl`` (one per local variable) is
    overwritten with the sums of ``y`` over the block's copies of each variable; ``part`` (length 6)
    receives ``(sum of the terms' dual values, sum of their magnitudes, sum of |y|, objective of
    zl over the block's potentials, largest violation of its constraints, rounding slack of the
    terms' evaluations)``. Blocks combine by adding every entry except the violation (``max``).
    The first ``n_pair`` terms (two unknowns) and the next ``n_single`` (one) take the vectorized
    loop (:func:`tractable.hlmrf._kernels.fast_counts`); ``scratch``: work space of the others, at
    least twice the block's largest arity
    (:func:`tractable.hlmrf._kernels.general_scratch`), or ``None`` when there are none: then
    the general sweep (:func:`_dual_term`) is not compiled. ``work``: float64 work space of at least
    ``2 n_pair + n_single`` entries (from the caller, as every array of these kernels: numba's
    own allocation routines would be compiled too).
    """
    for v in range(yl.shape[0]):
        yl[v] = 0.0
    # the leading hinges and squared hinges with one or two unknowns: one vectorized loop
    n_fast = 2 * n_pair + n_single
    zz = work
    for j in range(n_fast):
        v = idx[j]
        zz[j] = zl[v]
        yl[v] += y[j]
    # squared hinges need the stationary points of h's pieces; a loop-invariant flag
    n_squared = 0
    for u in range(n_pair + n_single):
        if kind[u] == _kernels.KIND_SQUARED:
            n_squared += 1
    squared = n_squared > 0
    total = 0.0
    tmag = 0.0
    yabs = 0.0
    obj = 0.0
    slack = 0.0
    for u in range(n_pair):
        j0 = 2 * u
        j1 = j0 + 1
        total, tmag, yabs, obj, slack = term_certificate(
            y[j0],
            y[j1],
            coef[j0],
            coef[j1],
            zz[j0],
            zz[j1],
            1.0,
            const[u],
            weight[u],
            kind[u] == _kernels.KIND_SQUARED,
            squared,
            total,
            tmag,
            yabs,
            obj,
            slack,
        )
    # the terms with one unknown through slices, so that every index is a loop counter (an offset index could
    # be negative, and its wrap-around check keeps a loop scalar), in the same order as before
    j0 = 2 * n_pair
    ys = y[j0 : j0 + n_single]
    cs = coef[j0 : j0 + n_single]
    zs = zz[j0 : j0 + n_single]
    bs = const[n_pair : n_pair + n_single]
    ws = weight[n_pair : n_pair + n_single]
    ks = kind[n_pair : n_pair + n_single]
    for u in range(n_single):
        total, tmag, yabs, obj, slack = term_certificate(
            ys[u],
            ys[u],
            cs[u],
            cs[u],
            zs[u],
            zs[u],
            0.0,
            bs[u],
            ws[u],
            ks[u] == _kernels.KIND_SQUARED,
            squared,
            total,
            tmag,
            yabs,
            obj,
            slack,
        )
    part[0] = 0.0 + total
    part[1] = 0.0 + tmag
    part[2] = 0.0 + yabs
    part[3] = 0.0 + obj
    part[4] = 0.0
    part[5] = 0.0 + slack
    if scratch is not None:
        _general_certificate(indptr, idx, coef, const, weight, kind, n_pair + n_single, y, zl, yl, part, scratch)


@njit(no_cpython_wrapper=True)
def _general_certificate(indptr, idx, coef, const, weight, kind, first, y, zl, yl, part, scratch):
    """:func:`block_certificate` for the terms from ``first`` on (the sweep of :func:`_dual_term`),
    added to ``part``."""
    scalar_loops()
    m = scratch.shape[0] // 2
    tb = scratch[:m]
    db = scratch[m : 2 * m]
    sl = scratch[2 * m : 2 * m + 1]  # the running slack (:func:`_dual_term` adds to it)
    sl[0] = part[5]
    total = part[0]
    tmag = part[1]
    yabs = part[2]
    obj = part[3]
    viol = part[4]
    for t in range(first, indptr.shape[0] - 1):
        s = indptr[t]
        k = indptr[t + 1] - s
        kt = kind[t]
        sv = const[t]
        for j in range(s, s + k):
            v = idx[j]
            yl[v] += y[j]
            yabs += abs(y[j])
            sv += coef[j] * zl[v]
        if kt == 0:
            if sv > 0.0:
                obj += weight[t] * sv
        elif kt == 1:
            if sv > 0.0:
                obj += weight[t] * sv * sv
        elif kt == 2:
            viol = sv if sv > viol else viol  # max(viol, sv)
        else:
            a = abs(sv)
            viol = a if a > viol else viol
        lo, hi, q = _domain(kt, weight[t])
        val = _dual_term(y, s, coef, s, k, const[t], q, lo, hi, tb, db, sl)
        total += val
        tmag += abs(val)
    part[0] = total
    part[1] = tmag
    part[2] = yabs
    part[3] = obj
    part[4] = viol
    part[5] = sl[0]


@njit(inline="always")
def consensus_certificate(
    yv,
    z,
    zc_indptr,
    zc_idx,
    zc_coef,
    zc_const,
    zc_kind,
    zc_pair,
    zc_single,
    part,
    n_terms,
    max_copies,
    out,
    scratch,
    work,
):
    """The consensus half of :func:`certificate`: ``out = (g(y) - slack, objective, max violation)``.

    ``yv``: the sums of ``y`` over all copies of each variable; ``part``: the blocks'
    :func:`block_certificate` parts combined; ``n_terms``: the number of terms over all blocks.
    The leading ``zc_pair`` constraints have two unknowns, the next ``zc_single`` one
    (:func:`tractable.hlmrf._kernels.constraint_counts`): one vectorized loop.
    ``scratch``: :func:`tractable.hlmrf._kernels.projection_scratch` of the constraints (``None``
    when they all have one or two unknowns: then the general sweep is not compiled). ``work``:
    float64 arrays ``(ny, zz, inz, acc)`` of ``len(zc_idx)``, ``len(zc_idx)``, ``len(z)`` and 4
    entries (separate arrays: the compiler then knows that they do not overlap).
    """
    n = z.shape[0]
    nzc = zc_idx.shape[0]
    ny, zz, inz, acc = work  # inz: 1 for the variables of a constraint
    for v in range(n):
        inz[v] = 0.0
    for j in range(nzc):
        v = zc_idx[j]
        inz[v] = 1.0
        ny[j] = -yv[v]
        zz[j] = z[v]
    # constraints with one or two unknowns (the leading runs): one vectorized loop
    total = 0.0
    tmag = 0.0
    slack = 0.0
    viol = part[4]
    for u in range(zc_pair + zc_single):
        pair = u < zc_pair
        j0 = 2 * u if pair else zc_pair + u
        j1 = j0 + 1 if pair else j0
        total, tmag, slack, viol = constraint_certificate(
            ny[j0],
            ny[j1],
            zc_coef[j0],
            zc_coef[j1],
            zz[j0],
            zz[j1],
            1.0 if pair else 0.0,
            zc_const[u],
            zc_kind[u] == _kernels.KIND_EQ,
            total,
            tmag,
            slack,
            viol,
        )
    # (sum of dual values, their magnitudes, rounding slack, largest violation)
    acc[0] = part[0] + (0.0 + total)
    acc[1] = part[1] + (0.0 + tmag)
    acc[2] = 0.0 + slack
    acc[3] = viol
    if scratch is not None:
        _general_constraint_certificate(
            zc_pair + zc_single, ny, zz, zc_indptr, zc_coef, zc_const, zc_kind, acc, scratch
        )
    total = acc[0]
    tmag = acc[1]
    for v in range(n):
        if inz[v] == 0.0 and yv[v] > 0.0:
            total -= yv[v]
            tmag += yv[v]
    # rounding: the terms' own evaluations, the sums over terms and variables, the sums Y_v
    slack = part[5] + acc[2] + (n_terms + n + 2) * 2.3e-16 * tmag + (max_copies + 1.0) * 2.3e-16 * part[2]
    out[0] = total - slack
    out[1] = part[3]
    out[2] = acc[3]
    return out


@njit(no_cpython_wrapper=True)
def _general_constraint_certificate(first, ny, zz, zc_indptr, zc_coef, zc_const, zc_kind, acc, scratch):
    """:func:`consensus_certificate` for the constraints from ``first`` on (the sweep of
    :func:`_dual_term`), added to ``acc`` (dual values, magnitudes, slack, largest violation)."""
    scalar_loops()
    m = scratch.shape[0] // 2
    tb = scratch[:m]
    db = scratch[m : 2 * m]
    sl = scratch[2 * m : 2 * m + 1]  # the running slack (:func:`_dual_term` adds to it)
    sl[0] = acc[2]
    total = acc[0]
    tmag = acc[1]
    viol = acc[3]
    for t in range(first, zc_indptr.shape[0] - 1):
        s = zc_indptr[t]
        k = zc_indptr[t + 1] - s
        sv = zc_const[t]
        for j in range(s, s + k):
            sv += zc_coef[j] * zz[j]
        v = sv if zc_kind[t] == 2 else abs(sv)
        viol = v if v > viol else viol  # max(viol, v)
        # the domain of a constraint's dual (_domain): [0, inf) for <=, the reals for ==
        lo = -np.inf if zc_kind[t] == 3 else 0.0
        val = _dual_term(ny, s, zc_coef, s, k, zc_const[t], 0.0, lo, np.inf, tb, db, sl)
        total += val
        tmag += abs(val)
    acc[0] = total
    acc[1] = tmag
    acc[2] = sl[0]
    acc[3] = viol


def certificate(
    indptr, idx, coef, const, weight, kind, y, z, zc_indptr, zc_idx, zc_coef, zc_const, zc_kind, max_copies, out
):
    """One pass: ``out = (g(y) - slack, objective of z over the terms, max violation of z)``.

    Terms and ``zc_*`` as in :func:`tractable.hlmrf._kernels.admm_run`; ``max_copies``: the largest
    number of copies of a variable; ``g`` without the offset of the fixed-only potentials (the
    caller adds it). The one-block case of :func:`block_certificate` and
    :func:`consensus_certificate`, compiled as :func:`certificate_pass` (to which this passes the
    term data read-only, the counts and the work space; the solver prepares them once and calls
    it directly).
    """
    terms = _kernels.readonly(indptr, idx, coef, const, weight, kind)
    zc = _kernels.readonly(zc_indptr, zc_idx, zc_coef, zc_const, zc_kind)
    counts = _kernels.fast_counts(terms[0], terms[5], terms[4])
    zc_counts = _kernels.constraint_counts(zc[0])
    scratch = _kernels.general_scratch(terms[0], sum(counts))
    zc_scratch = _kernels.projection_scratch(zc[0])
    work = certificate_work(z.size, counts, zc[1].size)
    return certificate_pass(*terms, *counts, y, z, *zc, *zc_counts, float(max_copies), out, scratch, zc_scratch, work)


def certificate_work(n: int, counts, n_zc_copies: int) -> tuple:
    """Work space of :func:`certificate_pass` for ``n`` variables, the fast-term ``counts``
    ``(n_pair, n_single)`` and ``n_zc_copies`` copies in consensus-step constraints: the arrays
    ``(yv, part, zz)`` and the work space of :func:`consensus_certificate`."""
    return (np.empty(n), np.empty(6), np.empty(2 * counts[0] + counts[1]), consensus_work(n, n_zc_copies))


def consensus_work(n: int, n_zc_copies: int) -> tuple:
    """Work space of :func:`consensus_certificate` for ``n`` variables and ``n_zc_copies`` copies in
    consensus-step constraints."""
    return (np.empty(n_zc_copies), np.empty(n_zc_copies), np.empty(n), np.empty(4))


@njit
def certificate_pass(
    indptr,
    idx,
    coef,
    const,
    weight,
    kind,
    n_pair,
    n_single,
    y,
    z,
    zc_indptr,
    zc_idx,
    zc_coef,
    zc_const,
    zc_kind,
    zc_pair,
    zc_single,
    max_copies,
    out,
    scratch,
    zc_scratch,
    work,
):
    """The compiled pass of :func:`certificate`; the counts and work spaces as in
    :func:`block_certificate` and :func:`consensus_certificate`, ``work`` from :func:`certificate_work`."""
    yv, part, zz, cwork = work
    block_certificate(indptr, idx, coef, const, weight, kind, n_pair, n_single, y, z, yv, part, scratch, zz)
    n_terms = indptr.shape[0] - 1
    return consensus_certificate(
        yv,
        z,
        zc_indptr,
        zc_idx,
        zc_coef,
        zc_const,
        zc_kind,
        zc_pair,
        zc_single,
        part,
        n_terms,
        max_copies,
        out,
        zc_scratch,
        cwork,
    )


def certificate_parallel(
    indptr, idx, coef, const, weight, kind, chunks, y, z, zc_indptr, zc_idx, zc_coef, zc_const, zc_kind, max_copies, out
):
    """:func:`certificate` with the terms' runs ``chunks[c]:chunks[c + 1]``
    (:func:`tractable.hlmrf._kernels.parallel_chunks`) as blocks on numba's threads (compiled as
    :func:`certificate_pass_parallel`)."""
    terms = _kernels.readonly(indptr, idx, coef, const, weight, kind)
    zc = _kernels.readonly(zc_indptr, zc_idx, zc_coef, zc_const, zc_kind)
    chunks = _kernels.readonly(np.asarray(chunks, dtype=np.int64))[0]
    ipr = _kernels.rebased_runs(terms[0], chunks)
    counts = _kernels.run_counts(ipr, terms[5], terms[4], chunks)
    n_fast = sum(_kernels.fast_counts(terms[0], terms[5], terms[4]))
    scratch = _kernels.general_scratch(terms[0], n_fast, chunks.size - 1)
    zc_counts = _kernels.constraint_counts(zc[0])
    zc_scratch = _kernels.projection_scratch(zc[0])
    return certificate_pass_parallel(
        *terms, chunks, ipr, counts, y, z, *zc, *zc_counts, float(max_copies), out, scratch, zc_scratch
    )


@njit(parallel=True)
def certificate_pass_parallel(
    indptr,
    idx,
    coef,
    const,
    weight,
    kind,
    chunks,
    ipr,
    counts,
    y,
    z,
    zc_indptr,
    zc_idx,
    zc_coef,
    zc_const,
    zc_kind,
    zc_pair,
    zc_single,
    max_copies,
    out,
    scratch,
    zc_scratch,
):
    """The compiled pass of :func:`certificate_parallel`: ``ipr`` and ``counts`` from
    :func:`tractable.hlmrf._kernels.rebased_runs` and :func:`tractable.hlmrf._kernels.run_counts`,
    ``scratch`` one row per run (or ``None``)."""
    n = z.shape[0]
    n_chunks = chunks.shape[0] - 1
    yls = np.empty((n_chunks, n))
    parts = np.empty((n_chunks, 6))
    longest = 0
    for c in range(n_chunks):
        m = indptr[chunks[c + 1]] - indptr[chunks[c]]
        longest = m if m > longest else longest
    bwork = np.empty((n_chunks, longest))
    for c in prange(n_chunks):
        t0 = chunks[c]
        t1 = chunks[c + 1]
        s0 = indptr[t0]
        s1 = indptr[t1]
        if scratch is None:
            block_certificate(
                ipr[t0 + c : t1 + c + 1],
                idx[s0:s1],
                coef[s0:s1],
                const[t0:t1],
                weight[t0:t1],
                kind[t0:t1],
                counts[c, 0],
                counts[c, 1],
                y[s0:s1],
                z,
                yls[c],
                parts[c],
                None,
                bwork[c],
            )
        else:
            block_certificate(
                ipr[t0 + c : t1 + c + 1],
                idx[s0:s1],
                coef[s0:s1],
                const[t0:t1],
                weight[t0:t1],
                kind[t0:t1],
                counts[c, 0],
                counts[c, 1],
                y[s0:s1],
                z,
                yls[c],
                parts[c],
                scratch[c],
                bwork[c],
            )
    yv = np.empty(n)
    for v in prange(n):
        a = 0.0
        for c in range(n_chunks):
            a += yls[c, v]
        yv[v] = a
    part = np.zeros(6)
    for c in range(n_chunks):
        for i in range(6):
            if i == 4:
                part[i] = max(part[i], parts[c, i])
            else:
                part[i] += parts[c, i]
    n_terms = indptr.shape[0] - 1
    return consensus_certificate(
        yv,
        z,
        zc_indptr,
        zc_idx,
        zc_coef,
        zc_const,
        zc_kind,
        zc_pair,
        zc_single,
        part,
        n_terms,
        max_copies,
        out,
        zc_scratch,
        (np.empty(zc_idx.shape[0]), np.empty(zc_idx.shape[0]), np.empty(n), np.empty(4)),
    )


def term_minima(kind, indptr, coefficients, constants, weights, y) -> np.ndarray:
    """``min_{x in [0, 1]^k} F_t(x) + y_t·x`` for a batch of terms with the compiled kernel.

    Arguments as in :func:`tractable.hlmrf.local_updates` (``y`` in place of ``d``). Each value is a
    valid lower bound on the exact minimum, exact up to rounding (a rigorous slack is subtracted
    from the total by the solver, not here); a constraint that misses the box gives a finite value.

    Returns
    -------
    ndarray of shape (n_terms,)
    """
    indptr, coefficients, y, constants, weights, codes = _check_term_batch(
        kind, indptr, coefficients, constants, weights, y, "y"
    )
    n_terms = indptr.size - 1
    out = np.empty(n_terms)
    batch_term_minima(indptr, coefficients, constants, weights, codes, y, out)
    return out


def row_dual_bound(comp, theta: np.ndarray) -> float:
    """Lower bound from row multipliers ``theta`` (one per term of ``comp``), for the reference solvers.

    Relaxing each term's row ``c_t·x + b_t`` with ``theta_t`` (clipped into its domain) and keeping
    the box gives ``offset + sum_t (theta_t b_t - q_t theta_t^2) + sum_v min(0, (C' theta)_v)`` — a
    valid bound for any ``theta`` (same derivation as above), minus a rounding slack.
    """
    lo = np.zeros(comp.kind.size)
    hi = np.full(comp.kind.size, np.inf)
    q = np.zeros(comp.kind.size)
    hinge = comp.kind == _kernels.KIND_HINGE
    sq = comp.kind == _kernels.KIND_SQUARED
    hi[hinge] = comp.weight[hinge]
    pos = sq & (comp.weight > 0)
    q[pos] = 1.0 / (4.0 * comp.weight[pos])
    hi[sq & ~pos] = 0.0
    lo[comp.kind == _kernels.KIND_EQ] = -np.inf
    th = np.clip(np.nan_to_num(np.asarray(theta, dtype=np.float64)), lo, hi)
    rows = np.repeat(np.arange(comp.kind.size), np.diff(comp.indptr))
    contrib = th[rows] * comp.coef
    yv = np.bincount(comp.idx, weights=contrib, minlength=comp.free.size)
    parts = np.concatenate([th * comp.const - q * th * th, np.minimum(yv, 0.0)])
    mag = np.abs(parts).sum() + np.abs(contrib).sum()
    slack = (parts.size + comp.idx.size + 2) * float(_U) * mag
    return float(comp.offset + parts.sum() - slack)


def infeasibility_measure(terms, zc, w, z, max_copies: float) -> float:
    """``h(w)`` of the module docstring minus its rounding slack: ``> 0`` proves infeasibility.

    ``terms = (indptr, idx, coef, const, weight, kind)`` and ``zc`` as in
    :func:`tractable.hlmrf._kernels.admm_run`; ``w`` of shape (n_copies,), a multiplier direction
    (e.g. the growth of ADMM's ``y`` over some iterations); ``z`` of shape (n,), any point (not used
    by the value).
    """
    out = np.empty(3)
    indptr, idx, coef, const, weight, kind = terms
    certificate(indptr, idx, coef, const, np.zeros_like(weight), kind, w, z, *zc, float(max_copies), out)
    return float(out[0])
