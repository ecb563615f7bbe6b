"""Tilted upward passes of the convolution tree: where to centre them, and which counts they resolve.

FFT convolution is accurate relative to the largest entry of a message only, so the upward pass
runs on an *exponentially tilted* model: ``theta - t`` and ``f(k) + t k`` define exactly the same
distribution, and ``t`` is chosen so that the count distribution of the tilted leaves is centred
where the posterior count mass lies; the entries that matter are then close to the maximum of every
message.

* The first pass is centred so that its window of resolved counts leaves the least approximate
  posterior mass outside (:func:`_initial_target`, from a saddle-point estimate of the count
  weights): for a rough ``f`` that is the bulk of the mass rather than its highest point. For a
  count potential affine in the count (``f(k) = a + b k``; :func:`_affine_slope`) the tilt ``-b``
  makes the tilted count distribution the posterior one exactly.
* A tilted root entry is used where it is at least ``_THRESHOLD`` (1e-13) of the maximum, where its
  absolute error is ~3e-15 of the maximum; outside, log-concavity of the count weights gives a
  rigorous upper bound (:class:`_Pass`), and another tilted pass runs while the counts left out
  could carry more than ``_MASS_TOL`` (3e-13) of the probability (:func:`_locate`). If the posterior
  count mass lies in several places, one tilt per place is used; the passes' log scales are aligned
  through well-resolved overlaps (:func:`_pass_offsets`) and the results added in log space.
* With direct convolution only (short messages), every entry is exact and every non-zero entry is
  resolved.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit

from .._logspace import logsumexp
from ._balanced import Balanced
from ._windowed import Windowed

_THRESHOLD = 1e-13  # a tilted root entry >= this (relative to the max) is resolved (to ~3%)
_EXACT_THRESHOLD = 1e-290  # the same with direct convolution only (exact; just above underflow)
_INNER = 1e-9  # entries above this are accurate to ~3e-6 relative
_STITCH = 1e-3  # overlaps used to align two passes must be this well resolved in both (~3e-12)
_NEGLIGIBLE = 50.0  # counts whose mass is below exp(-50 - log(D + 1)) * Z are dropped
_MAX_PASSES = 64
_MASS_TOL = 3e-13  # counts left unresolved may carry at most this probability in total
_FFT_EPS = 3e-15  # relative error of FFT convolution at the maximum of a message, a few levels deep
_COUNT_TOL = 1e-13  # target absolute accuracy of the count marginals
_WINDOW_SDS = float(np.sqrt(2 * np.log(1 / _THRESHOLD)))  # half width of a pass's window, in tilted SDs (~7.7)
_AFFINE_TOL = 8 * np.finfo(float).eps  # f is affine if f(k) - (f(0) + b k) is within this times max |f| (rounding)
_CENTRE_TOL = 0.05  # a pass's tilted mean may be this many tilted SDs off its target count
_TARGET_RANGE = 20.0  # the first pass is centred where the approximate log posterior is within this of its max
_BIN_WIDTH = 4.0  # theta binned wider than this (a weight factor e^2 per variable): the first pass at the MAP count


def _tilt_for(theta: np.ndarray, k: int, guess: float | None = None) -> float:
    """Tilt t with sum_d sigmoid(theta_d - t) = k (the tilted count distribution has mode k).

    Newton steps from a rough start (the function is monotone in t), with ``brentq`` as the
    fallback. The tilt only centres a pass, whose window spans ~7.7 tilted standard deviations on
    each side: a tilted mean within ``_CENTRE_TOL`` standard deviations of ``k`` is accepted (from
    the saddle-point guess, usually the first evaluation).
    """
    n = theta.shape[0]
    if k <= 0:
        return float(theta.max()) + 40.0
    if k >= n:
        return float(theta.min()) - 40.0
    lo, hi = float(theta.min()) - 40.0, float(theta.max()) + 40.0
    t = float(np.mean(theta) - np.log(k / (n - k))) if guess is None else min(max(guess, lo), hi)
    for _ in range(25):
        p = expit(theta - t)
        g = p.sum() - k
        dg = np.dot(p, 1.0 - p)
        if abs(g) < max(1e-9 * max(1.0, k), _CENTRE_TOL * np.sqrt(dg)):
            return t
        if not dg > 1e-12:
            break
        t = min(max(t + g / dg, lo), hi)
    return brentq(lambda t: expit(theta - t).sum() - k, lo, hi, xtol=1e-12, rtol=1e-15)


def _initial_target(theta: np.ndarray, f: np.ndarray):
    """Count at which to centre the first tilted pass, from a saddle-point approximation of log W(k).

    ``W(k) = sum_{|y|=k} exp(theta . y)``; with ``K(t) = sum_d log(1 + exp(theta_d - t))`` and the
    tilted mean ``m(t)`` and variance ``v(t)``, ``log W(m(t)) ~ K(t) + t m(t) - log(2 pi v(t)) / 2``.
    ``theta`` is binned (at most 256 bins), so this costs O(D) plus a small grid; it only picks where
    the first tilted pass is centred, and exactness does not depend on it.

    A pass centred at ``c`` resolves the counts within about ``_WINDOW_SDS`` tilted standard
    deviations of ``c``; the target is the ``c`` whose such window holds the most approximate
    posterior mass. For a smooth unimodal posterior that is its mode, but a rough ``f`` scatters the
    posterior's maximum over the bulk of the count distribution, and centring there would leave
    ~1e-12 of the mass beyond one edge (a second pass); centring on the mass leaves ~1e-15.
    """
    n = theta.shape[0]
    lo, hi = float(theta.min()), float(theta.max())
    if hi - lo < 1e-12:
        vals, counts = np.array([lo]), np.array([n])
    else:
        counts, edges = np.histogram(theta, bins=min(256, n))
        vals = 0.5 * (edges[1:] + edges[:-1])
        keep = counts > 0
        vals, counts = vals[keep], counts[keep]
    ks = np.arange(n + 1)
    n_grid = 128 if n > 256 else 48
    ts = np.linspace(lo - 12.0, hi + 12.0, n_grid)
    target, guess = int(np.argmax(f)), None
    for it in range(4):
        # zoom in around the best tilt (the approximation is interpolated in t); the last grid
        # spans about +-2.5 window half widths around it, for the choice of the window
        z = vals[None, :] - ts[:, None]
        p = expit(z)
        m = p @ counts
        v = (p * (1 - p)) @ counts
        k_t = np.logaddexp(0.0, z) @ counts
        logw = k_t + ts * m - 0.5 * np.log(2 * np.pi * np.maximum(v, 1e-300))
        order = np.argsort(m)
        inside = (ks >= m.min() - 1) & (ks <= m.max() + 1) & (f > -np.inf)
        if not inside.any():
            break
        span = np.nonzero(inside)[0]
        k_in = ks[span[0] : span[-1] + 1]
        approx = np.interp(k_in, m[order], logw[order])
        with np.errstate(invalid="ignore"):
            score = np.where(inside[span[0] : span[-1] + 1], f[k_in] + approx, -np.inf)
        best = int(np.argmax(score))
        target = int(k_in[best])
        var = float(np.interp(target, m[order], v[order]))
        if it == 3:
            target = int(k_in[_heaviest_window(score, best, var)])
        guess = float(np.interp(target, m[order], ts[order]))
        if it == 2:
            half = 2.5 * _WINDOW_SDS / np.sqrt(max(var, 1e-300))  # dm/dt = -v: t per count is 1/v
            ts = np.linspace(guess - half, guess + half, n_grid)
        else:
            i = int(np.argmin(np.abs(m - target)))
            ts = np.linspace(ts[max(i - 2, 0)], ts[min(i + 2, ts.shape[0] - 1)], n_grid // 2)
    return target, guess


def _heaviest_window(score: np.ndarray, best: int, var: float) -> int:
    """Index ``c`` whose window ``[c - h, c + h]`` leaves the least mass ``sum exp(score)`` outside,
    ``h`` the half width of a tilted pass's window (``_WINDOW_SDS`` standard deviations
    ``sqrt(var)``), among the indices whose score is within ``_TARGET_RANGE`` of the maximum
    ``score[best]``. Both tails are summed from their far ends, so that masses of 1e-15 of the total
    are compared accurately and the window is balanced between them."""
    h = int(np.ceil(_WINDOW_SDS * np.sqrt(max(var, 0.0))))
    w = np.exp(score - score[best])
    n = w.shape[0]
    if h < 1 or n <= 1:
        return best
    below = np.concatenate([[0.0], np.cumsum(w)])  # below[j] = sum w[:j]
    above = np.concatenate([np.cumsum(w[::-1])[::-1], [0.0]])  # above[j] = sum w[j:]
    c = np.arange(n)
    left_out = below[np.clip(c - h, 0, n)] + above[np.clip(c + h + 1, 0, n)]
    left_out[~(score >= score[best] - _TARGET_RANGE)] = np.inf
    return int(np.argmin(left_out))


class _Pass:
    """One tilted upward pass: its tilt, resolved window and root log count weights."""

    def __init__(self, theta, tilt, method, crossover, target=None, dense=False):
        self.tilt = tilt
        self.target = target
        logw = np.zeros((theta.shape[0], 2))
        logw[:, 1] = theta - tilt
        kind = Balanced if dense else Windowed
        self.up = kind(logw, method=method, crossover=crossover)
        n = theta.shape[0]
        r = self.up.root
        self.r = r
        s = self.up.root_scale
        ks = np.arange(n + 1)
        # with direct convolution only, every entry is exact relative to itself: all resolved
        self.thr = _EXACT_THRESHOLD if self.up.exact else _THRESHOLD
        thr_hi = 1.5 * self.thr
        res = np.nonzero(r >= self.thr)[0]
        self.a, self.b = int(res[0]), int(res[-1])
        # log sum_{|y|=k} exp(theta . y) = rel[k] + const: the large constant is kept apart so
        # that differences between counts are not rounded to the size of the constant. Only the
        # window [a, b] of resolved counts is ever read (-inf elsewhere).
        c = int(np.argmax(r)) if target is None else target
        self.const = s + tilt * c
        a, b = self.a, self.b
        kw = ks[a : b + 1]
        rw = r[a : b + 1]
        with np.errstate(divide="ignore"):
            lr = np.log(rw)
        self.rel = np.full(n + 1, -np.inf)
        self.rel[a : b + 1] = lr + tilt * (kw - c)
        # upper bound outside the window from log-concavity of the count weights: every slope
        # beyond the edge is at most the chord slope from an accurately resolved inner point
        # (r >= _INNER) to the edge, and at most the step down to the unresolved neighbour
        with np.errstate(divide="ignore"):
            noise = (0.0 if self.up.exact else _FFT_EPS) / np.maximum(rw, 1e-300)  # relative error of an entry
        inner = np.nonzero(rw >= _INNER)[0]  # window indices
        nb = b - a  # window index of b
        slope_r = np.log(thr_hi) - lr[nb]
        slope_l = np.log(thr_hi) - lr[0]
        if inner.size and inner[-1] < nb:
            j = inner[-1]
            slope_r = min(slope_r, (lr[nb] - lr[j] + 2 * (noise[nb] + noise[j])) / (nb - j))
        if inner.size and inner[0] > 0:
            j = inner[0]
            slope_l = min(slope_l, (lr[0] - lr[j] + 2 * (noise[0] + noise[j])) / j)
        with np.errstate(invalid="ignore"):
            top = lr + np.log1p(2 * noise)
        bound = np.empty(n + 1)
        bound[a : b + 1] = top + tilt * (kw - c)
        bound[b + 1 :] = top[nb] + (ks[b + 1 :] - b) * slope_r + tilt * (ks[b + 1 :] - c)
        bound[:a] = top[0] + (a - ks[:a]) * slope_l + tilt * (ks[:a] - c)
        self.bound = bound + self.const


def _affine_slope(f: np.ndarray) -> float | None:
    """Slope ``b`` if the count potential is affine, ``f(k) = f(0) + b k``, else None.

    An affine ``f`` factorizes the model: ``exp(theta . y + a + b sum y) = e^a prod_d exp((theta_d +
    b) y_d)``, so the variables are independent with log-odds ``theta_d + b`` and the count is
    Poisson-binomial; the tilted pass with tilt ``-b`` *is* the posterior count distribution. ``f``
    is accepted when it differs from the line through its end points by at most ``_AFFINE_TOL``
    times ``max |f|`` (the rounding of ``a + b k`` itself, a few ulps): such a difference ``delta``
    changes every probability by a factor within ``exp(+-2 delta)``, below the accuracy of the
    general path.
    """
    n = f.shape[0] - 1
    if n < 1 or not (np.isfinite(f[0]) and np.isfinite(f[-1])):
        return None
    b = (f[-1] - f[0]) / n
    line = f[0] + b * np.arange(n + 1)
    scale = float(np.max(np.abs(f)))  # inf when some f(k) = -inf: then the test below fails
    if not np.isfinite(scale) or np.max(np.abs(f - line)) > _AFFINE_TOL * scale:
        return None
    return float(b)


def _first_pass(theta: np.ndarray, f: np.ndarray, slope: float | None) -> tuple[int, float]:
    """(target count, tilt) of the first tilted pass: for an affine ``f`` (``slope`` b) the tilt
    ``-b`` centres the pass on the posterior count exactly; otherwise from :func:`_initial_target`."""
    if slope is not None:
        return int(round(float(expit(theta + slope).sum()))), -slope
    n = theta.shape[0]
    if (float(theta.max()) - float(theta.min())) / min(256, n) > _BIN_WIDTH:
        # binned theta too coarse for the saddle point: the posterior count mass lies near the MAP count
        target = _map_count(theta, f)
        return target, _tilt_for(theta, target)
    target, guess = _initial_target(theta, f)
    return target, _tilt_for(theta, target, guess)


class _Unresolved(Exception):
    """The pass budget ran out with counts of non-negligible mass still unresolved."""


def _map_count(theta: np.ndarray, f: np.ndarray) -> int:
    """The count of the MAP configuration, ``argmax_k f(k) + (sum of the k largest theta)``."""
    scores = np.concatenate([[0.0], np.cumsum(np.sort(theta)[::-1])]) + f
    return int(np.argmax(scores))


def _locate(prob, method: str, crossover: int, dense: bool = False, slope: float | None = None):
    """Run tilted upward passes until every count that could matter is resolved.

    ``prob`` holds the free variables' ``theta_free`` and the shifted count potential ``f_eff``
    (``convolution_tree._Clamped``).
    ``slope``: that of ``prob.f_eff`` when it is affine (:func:`_affine_slope`), else None.
    Returns (passes, log P(count = k) (n+1,), owner pass of each count or -1, log Z).

    Each pass resolves the counts within ~7.7 tilted standard deviations of its centre; when ``theta`` is
    spread far wider than 1 those windows hold a few counts each, and a first pass centred far from the
    posterior mass (the saddle-point target bins ``theta``) would walk toward it a few counts per pass.
    If :data:`_MAX_PASSES` run out so, the search starts again at the MAP count (near which the mass then
    lies), and as a last resort with direct convolution (exact entries: each pass resolves every count
    within ~667 nats of its largest). Never a silent answer with unresolved mass.
    """
    try:
        return _locate_from(prob, method, crossover, dense, _first_pass(prob.theta_free, prob.f_eff, slope))
    except _Unresolved:
        pass
    theta, f = prob.theta_free, prob.f_eff
    target = _map_count(theta, f)
    first = (target, _tilt_for(theta, target))
    try:
        return _locate_from(prob, method, crossover, dense, first)
    except _Unresolved:
        pass
    try:
        return _locate_from(prob, "direct", crossover, dense, first, budget=4 * _MAX_PASSES)
    except _Unresolved:  # pragma: no cover - not seen: exact passes resolve hundreds of nats each
        raise RuntimeError(
            "the convolution tree could not resolve the count distribution within its pass budget; "
            "use cardinality.chain_marginals (exact, O(D^2))."
        ) from None


def _locate_from(prob, method: str, crossover: int, dense: bool, first: tuple[int, float], budget: int = _MAX_PASSES):
    """:func:`_locate` from the first pass ``first = (target, tilt)``, with at most ``budget`` passes;
    raises :class:`_Unresolved` when they run out."""
    theta, f = prob.theta_free, prob.f_eff
    n = theta.shape[0]
    passes: list[_Pass] = []
    best_r = np.zeros(n + 1)
    owner = np.full(n + 1, -1)
    target, tilt = first
    neg = _NEGLIGIBLE + np.log(n + 1.0)
    for _ in range(budget):
        p = _Pass(theta, tilt, method, crossover, target, dense)
        passes.append(p)
        better = (p.r >= p.thr) & (p.r > best_r)
        best_r[better] = p.r[better]
        owner[better] = len(passes) - 1
        upper = passes[0].bound if len(passes) == 1 else np.min([q.bound for q in passes], axis=0)
        logz, rel = _log_partition_known(passes, owner, f)
        with np.errstate(invalid="ignore"):
            cand = (owner < 0) & (f + upper > logz - neg)  # f = -inf gives False
        with np.errstate(over="ignore", invalid="ignore"):
            left_out = np.exp(f[cand] + upper[cand] - logz).sum()
        if left_out > _MASS_TOL or not logz > -np.inf:
            target = _next_target(cand, f + upper, rel, passes)
        else:
            # all counts that matter are resolved; re-centre once more where a count with large
            # probability sits far below its pass's maximum (FFT error ~ 1e-15 / r relative)
            known = np.nonzero(owner >= 0)[0]
            with np.errstate(over="ignore"):
                err = np.exp(rel[known]) * _FFT_EPS / np.maximum(best_r[known], _THRESHOLD)
            target = int(known[np.argmax(err)])
            if err.max() <= _COUNT_TOL or p.up.exact or any(q.target == target for q in passes):
                break
        tilt = _tilt_for(theta, target)
    else:
        if left_out > _MASS_TOL or not logz > -np.inf:
            raise _Unresolved
    return passes, rel, owner, logz


def _pass_offsets(passes, ref: int) -> np.ndarray:
    """Offsets ``const_j - const_ref`` of every pass, stitched through overlapping windows.

    Two passes that both resolve a count k satisfy ``rel_i(k) + const_i = rel_j(k) + const_j``;
    where both are well resolved, the count where both are largest gives the difference of the two
    large log scales to ~1e-12, better than subtracting them (each carries the rounding of a long
    sum, ~1e-11); otherwise the difference of the scales is used.
    """
    off = np.array([q.const - passes[ref].const for q in passes])
    done = {ref}
    while True:  # widest-overlap-first (a maximum bottleneck spanning tree)
        best = (_STITCH, -1, -1, -1)
        for i in done:
            for j in range(len(passes)):
                if j in done:
                    continue
                both = np.minimum(passes[i].r, passes[j].r)
                k = int(np.argmax(both))
                if both[k] >= best[0]:
                    best = (both[k], i, j, k)
        _, i, j, k = best
        if j < 0:
            return off
        off[j] = passes[i].rel[k] + off[i] - passes[j].rel[k]
        done.add(j)


def _next_target(cand, upper_score, logpi, passes) -> int:
    """Count at which to centre the next tilted pass.

    The count weights are log-concave, so the mass that is still unresolved lies next to the
    resolved region: the next window is placed just beyond the nearest unresolved candidate on the
    side whose bounded mass is larger, overlapping the current windows.
    """
    idx = np.nonzero(cand)[0]
    if not np.any(logpi > -np.inf):
        return int(idx[np.argmax(upper_score[idx])])
    mode = int(np.argmax(logpi))
    half = max(1, (passes[-1].b - passes[-1].a) // 2)
    below, above = idx[idx < mode], idx[idx > mode]
    mass_below = np.logaddexp.reduce(upper_score[below]) if below.size else -np.inf
    mass_above = np.logaddexp.reduce(upper_score[above]) if above.size else -np.inf
    if mass_above >= mass_below:
        return int(min(above[0] + int(0.8 * half), above[-1]))
    return int(max(below[-1] - int(0.8 * half), below[0]))


def _log_partition_known(passes, owner, f):
    """log Z over the resolved counts and log P(count = k) (``-inf`` where unresolved)."""
    known = np.nonzero(owner >= 0)[0]
    ref = int(owner[known[0]]) if known.size else 0
    off = _pass_offsets(passes, ref) if len(passes) > 1 else np.zeros(1)
    rel = np.full(f.shape[0], -np.inf)
    own = owner[known]
    for i in np.unique(own):
        sel = known[own == i]
        rel[sel] = f[sel] + passes[i].rel[sel] + off[i]
    vals = rel[known]
    if not np.any(vals > -np.inf):
        return -np.inf, rel
    lse = logsumexp(vals)
    rel[known] -= lse
    return passes[ref].const + lse, rel
