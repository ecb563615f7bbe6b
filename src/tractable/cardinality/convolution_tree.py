"""Exact marginals, log partition function, joint samples and MAP of a cardinality model.

The model is ``p(y) ∝ exp(theta . y + f(sum_d y_d))`` over ``y`` in {0, 1}^D. Inference uses the
convolution tree of Tarlow et al. (2012), Sec. 5: a balanced binary tree of count variables with
``z_parent = z_left + z_right``, one upward and one downward sum-product pass whose messages are
1-D convolutions, O(D log^2 D).

Numerics (see ``docs/cardinality.md``). FFT convolution is accurate relative to the largest entry
of a message only, so the passes run on an *exponentially tilted* model: ``theta - t`` and
``f(k) + t k`` define exactly the same distribution, and ``t`` is chosen so that the count
distribution of the tilted leaves is centred where the posterior count mass lies; the entries that
matter are then close to the maximum of every message. If the posterior count mass lies in
several places, one tilt per place is used and the results are added in log space. A tilted root
entry is used where it is at least ``_THRESHOLD`` (1e-13) of the maximum, where its absolute error
is ~3e-15 of the maximum; outside, log-concavity of the count weights gives a rigorous upper bound,
and another tilted pass runs while the counts left out could carry more than ``_MASS_TOL``
(3e-13) of the probability. With direct convolution only (short messages), every entry is exact.

Validation and computation are apart. Each public function checks its arguments once
(``_validate_marginals_args(theta, f)`` and ``_validate_options(method, crossover)``), then calls a
core that trusts its input and copies nothing: **``_marginals_core(theta, f, method, crossover)``**
(log-odds, count marginals, log Z, number of passes) and ``_log_partition_core``. Internal callers
that call the computation many times (belief propagation, with the incoming messages as ``theta``)
call the cores directly. ``theta`` and ``f`` are Tarlow et al.'s symbols for the unary and count
scores (``unary`` and ``count_potential`` elsewhere in the library).
"""

from __future__ import annotations

import os
import time

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit

from .._logspace import logsumexp
from .._random import streams
from .._results import OPTIMAL, MAPResult, frozen_array, stop_message
from .._validate import as_float_array, check_int, check_options, check_rng, resolve_method
from ._balanced import Balanced
from ._convolve import DEFAULT_CROSSOVER, METHODS
from ._result import CardinalityMarginals, exact_result
from ._tree import NO_CONFIGURATION
from ._windowed import Windowed

__all__ = ["log_partition", "map_assignment", "marginals", "sample"]

_THRESHOLD = 1e-13  # a tilted root entry >= this (relative to the max) is resolved (to ~3%)
_EXACT_THRESHOLD = 1e-290  # the same with direct convolution only (exact; just above underflow)
_INNER = 1e-9  # entries above this are accurate to ~3e-6 relative
_STITCH = 1e-3  # overlaps used to align two passes must be this well resolved in both (~3e-12)
_NEGLIGIBLE = 50.0  # counts whose mass is below exp(-50 - log(D + 1)) * Z are dropped
_MAX_PASSES = 64
_MASS_TOL = 3e-13  # counts left unresolved may carry at most this probability in total
_FFT_EPS = 3e-15  # relative error of FFT convolution at the maximum of a message, a few levels deep
_COUNT_TOL = 1e-13  # target absolute accuracy of the count marginals


#: Peak memory of each public function per variable, in bytes, measured as the growth of ``ru_maxrss`` in
#: a fresh process at D = 2^18..2^21 (numpy 2.4, Linux x86-64; validation copies included): marginals
#: ~400, log_partition ~295, sample ~1980 (size=1; each sample adds one uint8 per variable). Rounded up.
_BYTES_PER_VARIABLE = {"marginals": 450, "log_partition": 350, "sample": 2200}
_MEMORY_FRACTION = 0.5  # refuse a request whose estimate exceeds this share of the physical memory


def _physical_memory() -> int | None:
    """Bytes of physical memory, or None where the platform does not say (then nothing is refused)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def _bytes(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _check_memory(n_vars: int, task: str, size: int = 0) -> None:
    """Refuse up front a ``task`` on ``n_vars`` variables that cannot fit in memory (instead of a
    ``MemoryError`` after seconds and gigabytes)."""
    memory = _physical_memory()
    if memory is None or memory <= 0:
        return
    per_variable = _BYTES_PER_VARIABLE[task] + size
    budget = int(memory * _MEMORY_FRACTION)
    if n_vars * per_variable <= budget:
        return
    raise ValueError(
        f"`theta` has {n_vars} variables: {task}{f' (size={size})' if size else ''} needs about "
        f"{_bytes(n_vars * per_variable)} ({per_variable} bytes per variable), more than "
        f"{_MEMORY_FRACTION:.0%} of this machine's {_bytes(memory)} of memory; at most about "
        f"{budget // per_variable} variables fit."
        + (f" Each of the `size`={size} samples adds one byte per variable." if size else "")
    )


def _validate_marginals_args(theta, f, task: str | None = None, size: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Check ``theta`` and ``f`` once for every public function; return them as new float64 arrays.

    With ``task`` (``"marginals"``, ``"log_partition"`` or ``"sample"``, with ``size`` samples), also
    check that the computation fits in memory (:func:`_check_memory`).

    Raises
    ------
    ValueError, TypeError
        Wrong shapes or types, NaN, ``+inf`` in ``f``, no configuration of non-zero probability
        (``f`` is ``-inf`` at every count reachable given the clamped variables), or a problem too large
        for this machine's memory.
    """
    theta = as_float_array(theta, "theta", ndim=1, allow_posinf=True)
    n_vars = theta.shape[0]
    if task is not None:
        _check_memory(n_vars, task, size)
    f = as_float_array(f, "f", ndim=1)
    if f.shape[0] != n_vars + 1:
        raise ValueError(
            f"`f` must have n_variables + 1 = {n_vars + 1} entries (one per count 0..{n_vars}); got {f.shape[0]}."
        )
    if not np.any(f > -np.inf):
        raise ValueError(f"`f` is -inf at every count: {NO_CONFIGURATION}.")
    n_on = int(np.count_nonzero(np.isposinf(theta)))
    n_off = int(np.count_nonzero(np.isneginf(theta)))
    if not np.any(f[n_on : n_vars - n_off + 1] > -np.inf):
        raise ValueError(
            f"{NO_CONFIGURATION}: with {n_on} variables clamped on and "
            f"{n_off} clamped off by `theta`, `f` is -inf at every reachable count "
            f"{n_on}..{n_vars - n_off}."
        )
    return theta, f


def _validate_options(method, crossover) -> int:
    """Check ``method`` against :data:`METHODS` and ``crossover`` (only ``"auto"`` uses it);
    return the crossover to use."""
    resolve_method(method, METHODS)
    check_options(method, {"crossover": crossover}, ("crossover",) if method == "auto" else ())
    return DEFAULT_CROSSOVER if crossover is None else check_int(crossover, "crossover", minimum=1)


class _Clamped:
    """``theta`` and ``f`` with the clamped variables (``theta = ±inf``) taken out. No checks."""

    def __init__(self, theta: np.ndarray, f: np.ndarray):
        self.n_vars = theta.shape[0]
        self.on = np.isposinf(theta)
        self.off = np.isneginf(theta)
        self.free = np.nonzero(~(self.on | self.off))[0]
        self.n_on = int(np.count_nonzero(self.on))
        self.n_free = self.free.shape[0]
        self.theta_free = theta if self.n_free == self.n_vars else theta[self.free]
        self.f_eff = f[self.n_on : self.n_on + self.n_free + 1]
        if not np.any(self.f_eff > -np.inf):
            raise ValueError(NO_CONFIGURATION + ".")

    def full_count(self, pi_free: np.ndarray) -> np.ndarray:
        out = np.zeros(self.n_vars + 1)
        out[self.n_on : self.n_on + self.n_free + 1] = pi_free
        return out


def _tilt_for(theta: np.ndarray, k: int, guess: float | None = None) -> float:
    """Tilt t with sum_d sigmoid(theta_d - t) = k (the tilted count distribution has mode k).

    Newton steps from a rough start (the function is monotone in t), with ``brentq`` as the
    fallback.
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
        if abs(g) < 1e-9 * max(1.0, k):
            return t
        dg = np.dot(p, 1.0 - p)
        if not dg > 1e-12:
            break
        t = min(max(t + g / dg, lo), hi)
    return brentq(lambda t: expit(theta - t).sum() - k, lo, hi, xtol=1e-12, rtol=1e-15)


def _initial_target(theta: np.ndarray, f: np.ndarray):
    """Approximate mode of the posterior count, from a saddle-point approximation of log W(k).

    ``W(k) = sum_{|y|=k} exp(theta . y)``; with ``K(t) = sum_d log(1 + exp(theta_d - t))`` and the
    tilted mean ``m(t)`` and variance ``v(t)``, ``log W(m(t)) ~ K(t) + t m(t) - log(2 pi v(t)) / 2``.
    ``theta`` is binned (at most 256 bins), so this costs O(D) plus a small grid; it only picks where
    the first tilted pass is centred, and exactness does not depend on it.
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
    for _ in range(3):  # zoom in around the best tilt: the approximation is interpolated in t
        z = vals[None, :] - ts[:, None]
        p = expit(z)
        m = p @ counts
        v = (p * (1 - p)) @ counts
        k_t = np.logaddexp(0.0, z) @ counts
        logw = k_t + ts * m - 0.5 * np.log(2 * np.pi * np.maximum(v, 1e-300))
        order = np.argsort(m)
        approx = np.interp(ks, m[order], logw[order])
        inside = (ks >= m.min() - 1) & (ks <= m.max() + 1) & (f > -np.inf)
        if not inside.any():
            break
        with np.errstate(invalid="ignore"):
            score = np.where(inside, f + approx, -np.inf)
        target = int(np.argmax(score))
        i = int(np.argmin(np.abs(m - target)))
        guess = float(np.interp(target, m[order], ts[order]))
        ts = np.linspace(ts[max(i - 2, 0)], ts[min(i + 2, ts.shape[0] - 1)], n_grid // 2)
    return target, guess


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
        # that differences between counts are not rounded to the size of the constant
        c = int(np.argmax(r)) if target is None else target
        self.const = s + tilt * c
        with np.errstate(divide="ignore"):
            self.rel = np.log(r) + tilt * (ks - c)
        # upper bound outside the window from log-concavity of the count weights: every slope
        # beyond the edge is at most the chord slope from an accurately resolved inner point
        # (r >= _INNER) to the edge, and at most the step down to the unresolved neighbour
        with np.errstate(divide="ignore"):
            lr = np.log(r)
            # relative error of a resolved entry
            noise = (0.0 if self.up.exact else _FFT_EPS) / np.maximum(r, 1e-300)
        inner = np.nonzero(r >= _INNER)[0]
        slope_r = np.log(thr_hi) - lr[self.b]
        slope_l = np.log(thr_hi) - lr[self.a]
        if inner.size and inner[-1] < self.b:
            j = inner[-1]
            slope_r = min(slope_r, (lr[self.b] - lr[j] + 2 * (noise[self.b] + noise[j])) / (self.b - j))
        if inner.size and inner[0] > self.a:
            j = inner[0]
            slope_l = min(slope_l, (lr[self.a] - lr[j] + 2 * (noise[self.a] + noise[j])) / (j - self.a))
        with np.errstate(invalid="ignore"):
            top = lr + np.log1p(2 * noise)
        bound = top + tilt * (ks - c)
        right = ks > self.b
        bound[right] = top[self.b] + (ks[right] - self.b) * slope_r + tilt * (ks[right] - c)
        left = ks < self.a
        bound[left] = top[self.a] + (self.a - ks[left]) * slope_l + tilt * (ks[left] - c)
        self.bound = bound + self.const


def _locate(prob: _Clamped, method: str, crossover: int, dense: bool = False):
    """Run tilted upward passes until every count that could matter is resolved.

    Returns (passes, log P(count = k) (n+1,), owner pass of each count or -1, log Z).
    """
    theta, f = prob.theta_free, prob.f_eff
    n = theta.shape[0]
    passes: list[_Pass] = []
    best_r = np.zeros(n + 1)
    owner = np.full(n + 1, -1)
    target, guess = _initial_target(theta, f)
    tilt = _tilt_for(theta, target, guess)
    neg = _NEGLIGIBLE + np.log(n + 1.0)
    for _ in range(_MAX_PASSES):
        p = _Pass(theta, tilt, method, crossover, target, dense)
        passes.append(p)
        better = (p.r >= p.thr) & (p.r > best_r)
        best_r[better] = p.r[better]
        owner[better] = len(passes) - 1
        upper = np.min([q.bound for q in passes], axis=0)
        logz, rel = _log_partition_known(passes, owner, f)
        cand = (owner < 0) & (f > -np.inf) & (f + upper > logz - neg)
        with np.errstate(over="ignore", invalid="ignore"):
            left_out = np.exp(np.where(cand, f + upper - logz, -np.inf))
        if left_out.sum() > _MASS_TOL or not logz > -np.inf:
            target = _next_target(cand, f + upper, rel, passes)
        else:
            # all counts that matter are resolved; re-centre once more where a count with large
            # probability sits far below its pass's maximum (FFT error ~ 1e-15 / r relative)
            with np.errstate(over="ignore"):
                err = np.exp(rel) * _FFT_EPS / np.maximum(best_r, _THRESHOLD)
            target = int(np.argmax(err))
            if err[target] <= _COUNT_TOL or p.up.exact or any(q.target == target for q in passes):
                break
        tilt = _tilt_for(theta, target)
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
    ref = int(owner[owner >= 0][0]) if np.any(owner >= 0) else 0
    off = _pass_offsets(passes, ref) if len(passes) > 1 else np.zeros(1)
    rel = np.full(f.shape[0], -np.inf)
    for i in np.unique(owner[owner >= 0]):
        sel = owner == i
        rel[sel] = f[sel] + passes[i].rel[sel] + off[i]
    if not np.any(rel > -np.inf):
        return -np.inf, rel
    lse = logsumexp(rel)
    return passes[ref].const + lse, rel - lse


def _marginals_core(theta: np.ndarray, f: np.ndarray, method: str = "auto", crossover: int = DEFAULT_CROSSOVER):
    """The computation of :func:`marginals` on trusted input: no checks, no copy of the input.

    Internal callers (e.g. belief propagation, which calls it once per factor and iteration with
    the incoming messages as ``theta``) call this directly.

    Parameters
    ----------
    theta : ndarray of shape (D,), float64
        Unary scores; ``±inf`` clamp. Not modified.
    f : ndarray of shape (D + 1,), float64
        Count scores, ``-inf`` allowed, not all ``-inf`` at the reachable counts. Not modified.
    method : str
        A key of :data:`METHODS`.
    crossover : int
        Message length up to which ``"auto"`` convolves directly (>= 1).

    Returns
    -------
    log_odds : ndarray of shape (D,)
        ``log P(y_d = 1) - log P(y_d = 0)`` (``±inf`` for clamped variables). With the incoming
        messages as ``theta``, ``log_odds - theta`` are the outgoing sum-product messages.
    count_marginals : ndarray of shape (D + 1,)
        ``P(sum_d y_d = k)``.
    log_partition : float
    n_passes : int
        Number of tilted upward passes.

    Raises
    ------
    ValueError
        ``f`` is ``-inf`` at every count reachable given the clamped variables.
    """
    prob = _Clamped(theta, f)
    if prob.n_free == 0:
        return theta.copy(), prob.full_count(np.ones(1)), float(prob.f_eff[0]), 0
    passes, logpi, owner, logz = _locate(prob, method, crossover)
    f_eff = prob.f_eff
    n = prob.n_free
    sig = logpi > -np.inf
    pi = np.exp(logpi)
    log1 = np.full(n, -np.inf)
    log0 = np.full(n, -np.inf)
    ks = np.arange(n + 1)
    for i in np.unique(owner[sig]):
        p = passes[i]
        root_out = np.where(sig & (owner == i), f_eff + p.tilt * ks, -np.inf)
        vec, scale = p.up.downward(root_out)
        with np.errstate(divide="ignore"):
            lo = np.log(vec) + scale[:, None]
        log1 = np.logaddexp(log1, lo[:, 1] + prob.theta_free - p.tilt)
        log0 = np.logaddexp(log0, lo[:, 0])
        if i != len(passes) - 1:
            p.up = None  # free memory early
    log1 -= log0
    if n == prob.n_vars:
        log_odds = log1
    else:
        log_odds = theta.copy()  # clamped variables keep their ±inf
        log_odds[prob.free] = log1
    return log_odds, prob.full_count(pi), float(logz), len(passes)


def marginals(theta, f, *, method: str = "auto", crossover: int | None = None) -> CardinalityMarginals:
    """Exact marginals, count marginals and log partition function of a cardinality model.

    The model is ``p(y) ∝ exp(theta . y + f(sum_d y_d))`` over ``y`` in {0, 1}^D (``theta`` and
    ``f`` are Tarlow et al.'s symbols for the unary and count scores).

    Parameters
    ----------
    theta : array_like of shape (D,)
        Log-potential of ``y_d = 1`` relative to ``y_d = 0``. ``+inf`` clamps ``y_d = 1`` and
        ``-inf`` clamps ``y_d = 0`` (a clamped variable is conditioned on: it shifts the count but
        adds nothing to ``log Z``).
    f : array_like of shape (D + 1,)
        Log-potential of the count ``sum_d y_d`` (``f[k]`` for count ``k``); ``-inf`` forbids a
        count (hard constraints such as "between 3 and 10 are on").
    method : {"auto", "fft", "direct"}
        Convolution kernel (:data:`METHODS`): ``"auto"`` uses direct convolution for messages of
        up to ``crossover`` entries and FFT above.
    crossover : int, optional
        Message length up to which ``"auto"`` convolves directly (default 48). Only for
        ``method="auto"``.

    Returns
    -------
    CardinalityMarginals
        ``marginals`` (D, 2) = ``[P(y_d = 0), P(y_d = 1)]``, with ``p_on = marginals[:, 1]`` =
        ``d log Z / d theta``; ``count_marginals`` (D + 1,) = ``P(sum y = k)`` = ``d log Z / d f``;
        ``log_partition``; ``time``; ``method`` (the name passed); ``status`` ``"optimal"``.

    Raises
    ------
    ValueError
        If ``f`` does not have D + 1 entries, ``theta`` or ``f`` contain NaN, ``f`` contains
        ``+inf``, no configuration has non-zero probability, ``method`` is unknown or
        ``crossover`` is given with a method other than ``"auto"``.

    Notes
    -----
    Convolution tree of [1]_, Sec. 5, on an exponentially tilted copy of the model (see the module
    docstring); O(D log^2 D) time and O(D log D) memory for one tilt. Marginals are formed as
    ``sigmoid(±(log mass(y_d = 1) - log mass(y_d = 0)))``, so tiny marginals (and their
    complements) keep their relative accuracy.

    References
    ----------
    .. [1] D. Tarlow, K. Swersky, R. Zemel, R. Adams, B. Frey. "Fast Exact Inference for
       Recursive Cardinality Models." UAI 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.cardinality import marginals
    >>> res = marginals(np.zeros(3), np.array([0.0, 0.0, -np.inf, -np.inf]))  # at most one on
    >>> np.round(res.p_on, 4)
    array([0.25, 0.25, 0.25])
    >>> res.marginals.shape, res.status
    ((3, 2), 'optimal')
    >>> round(float(np.exp(res.log_partition)), 6)
    4.0
    """
    t0 = time.perf_counter()
    theta, f = _validate_marginals_args(theta, f, "marginals")
    crossover = _validate_options(method, crossover)
    log_odds, count, logz, n_passes = _marginals_core(theta, f, method, crossover)
    return exact_result(log_odds, count, logz, t0, method, n_passes)


def _log_partition_core(
    theta: np.ndarray, f: np.ndarray, method: str = "auto", crossover: int = DEFAULT_CROSSOVER
) -> float:
    """``log Z`` on trusted input (as :func:`_marginals_core`), by upward passes only."""
    prob = _Clamped(theta, f)
    if prob.n_free == 0:
        return float(prob.f_eff[0])
    return float(_locate(prob, method, crossover)[3])


def log_partition(theta, f, *, method: str = "auto", crossover: int | None = None) -> float:
    """``log Z = log sum_y exp(theta . y + f(sum y))`` by the upward pass only.

    Parameters and conventions as in :func:`marginals`; O(D log^2 D).

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.cardinality import log_partition
    >>> round(float(log_partition(np.zeros(4), np.zeros(5)) / np.log(2)), 6)  # 2^4 configurations
    4.0
    """
    theta, f = _validate_marginals_args(theta, f, "log_partition")
    crossover = _validate_options(method, crossover)
    return _log_partition_core(theta, f, method, crossover)


def sample(theta, f, *, size: int = 1, rng=None, method: str = "auto", crossover: int | None = None) -> np.ndarray:
    """Exact joint samples of ``p(y) ∝ exp(theta . y + f(sum y))``.

    Sec. 5.3 of Tarlow et al. (2012): after the upward pass, draw the root count from its
    marginal, then split each parent's count between its children top-down, drawing the left
    count from ``up_left(j) * up_right(c - j)``. All samples go through the tree together, node by
    node (depth first): at nodes of up to 128 leaves each (node, count) split gets an alias table on
    first use, so every later draw is one uniform and one lookup; above, the split's total and
    mode are computed once and each draw is an inversion walking from the mode. Below blocks of 8
    leaves each block's configuration is one alias draw given the block's count.

    Parameters
    ----------
    theta, f : see :func:`marginals`.
    size : int
        Number of samples.
    rng : None, int or numpy.random.Generator
        Source of randomness (the same seed gives the same samples).
    method, crossover : see :func:`marginals`.

    Returns
    -------
    ndarray of shape (size, D), uint8

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.cardinality import sample
    >>> s = sample(np.zeros(5), np.where(np.arange(6) == 2, 0.0, -np.inf), size=3, rng=0)
    >>> s.sum(axis=1).tolist()
    [2, 2, 2]
    """
    size = check_int(size, "size", minimum=0)
    theta, f = _validate_marginals_args(theta, f, "sample", size)
    crossover = _validate_options(method, crossover)
    rng = check_rng(rng)
    prob = _Clamped(theta, f)
    if prob.n_free == 0 or size == 0:
        out = np.zeros((size, prob.n_vars), dtype=np.uint8)
        out[:, prob.on] = 1
        return out
    passes, logpi, owner, logz = _locate(prob, method, crossover, dense=True)
    pi = np.exp(logpi)
    cdf = np.cumsum(pi)
    counts = np.searchsorted(cdf, rng.random(size) * cdf[-1], side="right")
    counts = np.minimum(counts, prob.n_free)
    n = prob.n_free
    which = owner[counts]
    groups = np.unique(which)
    if groups.size == 1:  # one pass resolves every drawn count: no gathering needed
        free_rows = passes[groups[0]].up.sample(counts, streams(rng))
    else:
        free_rows = np.empty((size, n), dtype=np.uint8)
        states = streams(rng, groups.size)
        for g, i in enumerate(groups):
            sel = np.nonzero(which == i)[0]
            free_rows[sel] = passes[i].up.sample(counts[sel], states[g])
    if n == prob.n_vars:
        return free_rows
    out = np.zeros((size, prob.n_vars), dtype=np.uint8)
    out[:, prob.on] = 1
    out[:, prob.free] = free_rows
    return out


def map_assignment(theta, f) -> MAPResult:
    """Exact MAP assignment: sort ``theta``, then scan the counts, O(D log D).

    For each count ``k`` the best assignment turns on the ``k`` largest ``theta``; the MAP count
    maximizes ``sum of the k largest theta + f(k)``.

    Parameters
    ----------
    theta, f : see :func:`marginals`.

    Returns
    -------
    MAPResult
        ``assignment`` (D,) int64, ``score`` (``theta . y + f(sum y)`` over the free variables),
        ``time``, ``method`` ``"sort_scan"``, ``status`` ``"optimal"``. Ties go to the smallest
        count, then to the smallest variable indices.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.cardinality import map_assignment
    >>> map_assignment([1.0, -0.5, 2.0], [0.0, 0.0, 0.0, -5.0]).assignment
    array([1, 0, 1])
    """
    t0 = time.perf_counter()
    theta, f = _validate_marginals_args(theta, f)
    prob = _Clamped(theta, f)
    y = np.where(prob.on, 1, 0).astype(np.int64)
    order = np.argsort(-prob.theta_free, kind="stable")
    cums = np.concatenate([[0.0], np.cumsum(prob.theta_free[order])])
    scores = cums + prob.f_eff
    k = int(np.argmax(scores))
    y[prob.free[order[:k]]] = 1
    return MAPResult(
        assignment=frozen_array(y),
        score=float(scores[k]),
        time=time.perf_counter() - t0,
        method="sort_scan",
        message=stop_message(OPTIMAL, "sort_scan", 0),
    )
