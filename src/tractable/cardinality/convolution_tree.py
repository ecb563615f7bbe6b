"""Exact marginals, log partition function, joint samples and MAP of a cardinality model.

The model is ``p(y) ∝ exp(theta . y + f(sum_d y_d))`` over ``y`` in {0, 1}^D. Inference uses the
convolution tree of Tarlow et al. (2012), Sec. 5: a balanced binary tree of count variables with
``z_parent = z_left + z_right``, one upward and one downward sum-product pass whose messages are
1-D convolutions, O(D log^2 D).

Numerics (see ``docs/cardinality.md`` and :mod:`._tilted`). FFT convolution is accurate relative to
the largest entry of a message only, so the passes run on an *exponentially tilted* model (``theta -
t`` and ``f(k) + t k`` define the same distribution) centred where the posterior count mass lies;
counts outside a pass's well-resolved window are bounded by log-concavity, and further passes run
while they could carry more than 3e-13 of the probability. The bottom levels of the tree, below the
FFT crossover, are direct convolutions in one compiled call per pass (:mod:`._direct_levels`). A
model with finite scores above 2**20 in magnitude is first reduced to an equivalent one of moderate
scores (:mod:`._huge`), which every core and public function runs on.

A count potential that is affine in the count (``f(k) = a + b k``, ``f = 0`` included) factorizes
the model: the variables are independent with log-odds ``theta + b`` and the count is
Poisson-binomial. :func:`marginals` recognises it (up to the rounding of ``a + b k``) and runs the
upward pass only, centred by the tilt ``-b``, for the count marginals and ``log Z``.

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

from .._errors import ZeroPartitionError
from .._random import streams
from .._results import OPTIMAL, MAPResult, frozen_array, stop_message
from .._validate import as_float_array, check_int, check_options, check_rng, resolve_method
from ._convolve import DEFAULT_CROSSOVER, METHODS
from ._huge import exact_sum_best, needs_reduction, out_of_range, reduce_huge, to_float
from ._result import CardinalityMarginals, exact_result
from ._tilted import _affine_slope, _locate
from ._tree import NO_CONFIGURATION

__all__ = ["log_partition", "map_assignment", "marginals", "sample"]


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
    if size and n_vars * _BYTES_PER_VARIABLE[task] <= budget:  # the samples alone are too many
        raise ValueError(
            f"`size` = {size} samples of {n_vars} variables need about {_bytes(n_vars * per_variable)} (one byte "
            f"per variable and sample), more than {_MEMORY_FRACTION:.0%} of this machine's {_bytes(memory)} of "
            f"memory; at most about {max(0, budget // max(n_vars, 1) - _BYTES_PER_VARIABLE[task])} samples fit."
        )
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
        Wrong shapes or types, NaN, ``+inf`` in ``f``, or a problem too large for this machine's memory.
    ZeroPartitionError
        No configuration of non-zero probability (``f`` is ``-inf`` at every count reachable given the
        clamped variables); a ``ValueError`` too.
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
        raise ZeroPartitionError(f"`f` is -inf at every count: {NO_CONFIGURATION}.")
    n_on = int(np.count_nonzero(np.isposinf(theta)))
    n_off = int(np.count_nonzero(np.isneginf(theta)))
    if not np.any(f[n_on : n_vars - n_off + 1] > -np.inf):
        raise ZeroPartitionError(
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


def _moderate(theta: np.ndarray, f: np.ndarray, *, check_range: bool = True) -> tuple[np.ndarray, np.ndarray, float]:
    """``(theta, f, shift)``: the model itself (``shift`` 0) or, when a finite score exceeds
    :data:`._huge.HUGE` in magnitude, the equivalent model of moderate scores with ``log Z = log Z2 +
    shift`` (:func:`._huge.reduce_huge`, which refuses a ``log Z`` beyond float64's range)."""
    if needs_reduction(theta, f) and np.any(np.isfinite(theta)):
        return reduce_huge(theta, f, check_range=check_range)
    return theta, f, 0.0


def _normalized(log_p: np.ndarray) -> np.ndarray:
    """``exp(log_p)`` shifted by its maximum and divided by its sum: sums to 1 to rounding (``log_p``,
    nearly normalized already, may be off by the rounding of a large ``log Z`` subtracted from it)."""
    w = np.exp(log_p - np.max(log_p))
    return w / w.sum()


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
            raise ZeroPartitionError(NO_CONFIGURATION + ".")

    def full_count(self, pi_free: np.ndarray) -> np.ndarray:
        out = np.zeros(self.n_vars + 1)
        out[self.n_on : self.n_on + self.n_free + 1] = pi_free
        return out


def _marginals_core(
    theta: np.ndarray,
    f: np.ndarray,
    method: str = "auto",
    crossover: int = DEFAULT_CROSSOVER,
    *,
    affine_shortcut: bool = True,
):
    """The computation of :func:`marginals` on trusted input: no checks, no copy of the input.

    Internal callers (e.g. belief propagation, which calls it once per factor and iteration with
    the incoming messages as ``theta``) call this directly.

    When ``f`` is affine in the count (``f = 0`` included; ``_tilted._affine_slope``) the model
    factorizes: the log-odds are ``theta + b`` exactly, and only the count marginals and ``log Z``
    need the tree (upward passes, no downward pass). ``affine_shortcut=False`` forces the general
    path (for benchmarks and tests that compare the two).

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
    affine_shortcut : bool
        Use the factorization when ``f`` is affine (default); False forces the general path.

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
    theta, f, shift = _moderate(theta, f)
    prob = _Clamped(theta, f)
    if prob.n_free == 0:
        return theta.copy(), prob.full_count(np.ones(1)), float(prob.f_eff[0]) + shift, 0
    slope = _affine_slope(prob.f_eff) if affine_shortcut else None
    passes, logpi, owner, logz = _locate(prob, method, crossover, slope=slope)
    pi = _normalized(logpi)
    if slope is not None:
        log1 = prob.theta_free + slope
    else:
        log1 = _log_odds_downward(prob, passes, logpi, owner)
    if prob.n_free == prob.n_vars:
        log_odds = log1
    else:
        log_odds = theta.copy()  # clamped variables keep their ±inf
        log_odds[prob.free] = log1
    return log_odds, prob.full_count(pi), float(logz) + shift, len(passes)


def _log_odds_downward(prob: _Clamped, passes: list, logpi: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Log-odds of the free variables (n_free,) by one downward pass per pass that owns counts:
    the message into the root is ``f`` (tilted) on the counts that pass resolves."""
    f_eff = prob.f_eff
    n = prob.n_free
    sig = logpi > -np.inf
    log1 = np.full(n, -np.inf)
    log0 = np.full(n, -np.inf)
    ks = np.arange(n + 1)
    owners = np.unique(owner[sig])
    if owners.shape[0] == 1:  # one pass owns every count that matters: the leaf scales cancel
        p = passes[int(owners[0])]
        vec, _ = p.up.downward(np.where(sig, f_eff + p.tilt * ks, -np.inf))
        with np.errstate(divide="ignore"):
            return np.log(vec[:, 1] / vec[:, 0]) + (prob.theta_free - p.tilt)
    for i in owners:
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
    return log1


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
        ``+inf``, ``method`` is unknown, ``crossover`` is given with a method other than ``"auto"``,
        or ``log Z`` lies beyond float64's range (finite scores near 1e308 adding up past it).
    ZeroPartitionError
        No configuration has non-zero probability (a ``ValueError`` too).

    Notes
    -----
    Convolution tree of [1]_, Sec. 5, on an exponentially tilted copy of the model (see the module
    docstring); O(D log^2 D) time and O(D log D) memory for one tilt. Marginals are formed as
    ``sigmoid(±(log mass(y_d = 1) - log mass(y_d = 0)))``, so tiny marginals (and their
    complements) keep their relative accuracy. Finite scores of any magnitude are allowed: above
    2**20 the model is first reduced to an equivalent one of moderate scores (:mod:`._huge`), so that
    huge scores that cancel in the configurations that matter leave the O(1) ones exact.

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
    theta, f, shift = _moderate(theta, f)
    prob = _Clamped(theta, f)
    if prob.n_free == 0:
        return float(prob.f_eff[0]) + shift
    return float(_locate(prob, method, crossover, slope=_affine_slope(prob.f_eff))[3]) + shift


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
    theta, f, _ = _moderate(theta, f, check_range=False)  # sampling needs no log Z
    prob = _Clamped(theta, f)
    if prob.n_free == 0 or size == 0:
        out = np.zeros((size, prob.n_vars), dtype=np.uint8)
        out[:, prob.on] = 1
        return out
    passes, logpi, owner, logz = _locate(prob, method, crossover, dense=True, slope=_affine_slope(prob.f_eff))
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
        count, then to the smallest variable indices. Scores above 2**20 in magnitude are summed
        exactly (no rounding decides the maximum).

    Raises
    ------
    ValueError
        As :func:`marginals`, and when the best score lies beyond float64's range.
    ZeroPartitionError
        No configuration has non-zero probability.

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
    if needs_reduction(prob.theta_free, prob.f_eff):
        # huge scores: every count's best score exactly (no rounding decides the argmax, no overflow)
        best, p = exact_sum_best(prob.theta_free[order], prob.f_eff)
        k = max(np.flatnonzero(prob.f_eff > -np.inf), key=best.__getitem__)  # the first of the ties
        score = to_float(best[k], p)
        if not np.isfinite(score):
            raise out_of_range(score)
    else:
        cums = np.concatenate([[0.0], np.cumsum(prob.theta_free[order])])
        scores = cums + prob.f_eff
        k = int(np.argmax(scores))
        score = float(scores[k])
    y[prob.free[order[:k]]] = 1
    return MAPResult(
        assignment=frozen_array(y),
        score=score,
        time=time.perf_counter() - t0,
        method="sort_scan",
        message=stop_message(OPTIMAL, "sort_scan", 0),
    )
