"""Cardinality models with scores of any finite magnitude: an equivalent model of moderate scores.

The tilted passes (:mod:`._tilted`) and the log-space chain hold the log weight of a count in one
float. When scores near 1e300 cancel in the configurations that matter, the O(1) rest (a count's
multiplicity ``log C(n, k)``, a unary score of 0.3) is lost next to them (``1e300 + log 2 == 1e300``:
two tied configurations of one count then weigh as one), and scores near 1e308 overflow. So a model
whose finite scores exceed :data:`HUGE` in magnitude is first *reduced* (:func:`reduce_huge`) to one
that has the same distribution in float64 and scores of moderate size, and every engine runs on that.

The reduction. Sort the free variables by ``theta`` (descending, ``t_1 >= t_2 >= ...``). The best
configuration of count ``k`` turns on the first ``k``; its score ``best(k) = f(k) + t_1 + ... + t_k`` is
computed *exactly* (floats are dyadic rationals: Python integers hold them and their sums without
rounding), so ``d(k) = best(k) - max_k best(k)`` is correct to one rounding, however large the terms.

* Blocks: the sorted ``theta`` split where two neighbours are more than :data:`_GAP` (2048) apart.
  A configuration that turns a variable of a lower block on in place of one of a higher block loses
  more than 2048 per such swap, against at most ``D^2`` more configurations: its weight is below
  ``exp(-2048) D^2`` of the best's, zero in float64. So the configurations of count ``k`` that matter
  turn on every block above the block ``b(k)`` of the ``k``-th variable, none below, and ``j`` of block
  ``b(k)``: their weight is ``exp(best(k) - P_b(j)) e_j(exp(u_b))``, with ``u`` the scores relative to
  the block's largest, ``e_j`` the elementary symmetric polynomial and ``P_b(j)`` the sum of the ``j``
  largest ``u``; ``e_j(exp(u_b)) / exp(P_b(j))`` lies in ``[1, C(n_b, j)]``.
* Counts: a count with ``d(k) + log C(n_b, j) < -1000`` (:data:`_CUT`) carries less than
  ``exp(-1000)`` of the probability (zero in float64) and gets ``f = -inf``; blocks above every
  remaining count are clamped on, blocks below every remaining count clamped off.
* The remaining (active) blocks keep their relative scores ``u`` and are stacked on levels exactly
  2048 apart (the gaps compressed), and the count potential of the remaining counts is set so that
  every count keeps its weight, relative to ``exp(max_k best(k))``, which is added back to ``log Z``.

The result is exact to the rounding of ``d(k)`` and of the moderate scores: where the huge scores
cancel in the configurations that matter, as accurate as a model of O(1) scores. A ``log Z`` beyond
float64's range (about 1.8e308) is refused, naming ``theta`` and ``f``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

__all__ = ["HUGE", "exact_sum_best", "needs_reduction", "out_of_range", "reduce_huge", "to_float"]

#: a model whose finite ``|theta|`` or ``|f|`` (at the reachable counts) exceeds this is reduced first
HUGE = 2.0**20
#: neighbouring sorted scores more than this apart start a new block (see the module docstring)
_GAP = 2048.0
#: counts whose weight is provably below exp(-_CUT) of the largest count's are dropped
_CUT = 1000.0
#: the largest finite float64
_FMAX = float(np.finfo(np.float64).max)


def needs_reduction(theta: np.ndarray, f: np.ndarray) -> bool:
    """Whether some finite entry of ``theta`` or ``f`` exceeds :data:`HUGE` in magnitude."""
    with np.errstate(invalid="ignore"):
        return bool(np.any(np.abs(theta[np.isfinite(theta)]) > HUGE) or np.any(np.abs(f[np.isfinite(f)]) > HUGE))


def _exact(x: np.ndarray) -> tuple[np.ndarray, int]:
    """Finite floats as exact integers: ``(X, p)`` with ``x == X / 2**p`` (object array of Python ints)."""
    m, e = np.frexp(x)
    mant = (m * 2.0**53).astype(np.int64)  # exact: 53 significant bits
    e = e.astype(np.int64)
    nz = mant != 0
    emin = min(int(e[nz].min()), 53) if nz.any() else 53  # p = 53 - emin >= 0
    shift = np.where(nz, e - emin, 0).astype(object)
    return mant.astype(object) << shift, 53 - emin


def _align(X: np.ndarray, p: int, q: int) -> np.ndarray:
    """Integers of precision ``p`` as integers of precision ``q >= p``."""
    return X << (q - p) if q > p else X


def to_float(x: int, p: int) -> float:
    """``x / 2**p`` correctly rounded; ``±inf`` beyond float64's range."""
    try:
        return x / (1 << p)
    except OverflowError:
        return np.inf if x > 0 else -np.inf


def out_of_range(value: float) -> ValueError:
    """The refusal of a ``log Z`` (or best score) beyond float64's range."""
    return ValueError(
        "`theta` and `f` must keep the log partition function and the best configuration's score within "
        f"float64's range (about 1.8e308); got a score of about {'+' if value > 0 else '-'}1.8e308 or beyond: "
        "rescale them."
    )


def exact_sum_best(ts: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, int]:
    """Exact ``best(k) = g(k) + ts[0] + ... + ts[k - 1]`` for the counts with finite ``g(k)``.

    ``ts`` (n,) finite, ``g`` (n + 1,) finite or ``-inf``. Returns ``(B, p)``: an object array of
    Python ints (``None`` where ``g(k) = -inf``) with ``best(k) = B[k] / 2**p``.
    """
    fin = np.isfinite(g)
    T, pt = _exact(ts)
    G, pg = _exact(np.where(fin, g, 0.0))
    p = max(pt, pg)
    prefix = np.zeros(ts.shape[0] + 1, dtype=object)
    prefix[1:] = np.cumsum(_align(T, pt, p))
    best = _align(G, pg, p) + prefix
    best[~fin] = None
    return best, p


def reduce_huge(theta: np.ndarray, f: np.ndarray, *, check_range: bool = True) -> tuple[np.ndarray, np.ndarray, float]:
    """``(theta2, f2, shift)``: a model of moderate scores with the same distribution as ``(theta, f)`` in
    float64 and ``log Z = log Z2 + shift`` (see the module docstring). Same shapes and clamping conventions
    (``theta = ±inf`` clamps; a clamped variable adds nothing to ``log Z``); validated input, with at
    least one free variable and a reachable count of finite ``f``.

    Raises
    ------
    ValueError
        With ``check_range``: the best configuration's score lies beyond float64's range (so does
        ``log Z``). Without (for sampling, which needs no ``log Z``), ``shift`` is then ``±inf``.
    """
    on = np.isposinf(theta)
    free = np.flatnonzero(np.isfinite(theta))
    n, n_on = free.shape[0], int(np.count_nonzero(on))
    g = f[n_on : n_on + n + 1]
    order = np.argsort(-theta[free], kind="stable")
    ts = theta[free][order]

    # exact best score per count, relative to the largest
    best, p = exact_sum_best(ts, g)
    ks = np.flatnonzero(np.isfinite(g))
    top = max(best[ks])
    shift = to_float(top, p)
    if check_range and not np.isfinite(shift):
        raise out_of_range(shift)
    d = np.full(n + 1, -np.inf)
    d[ks] = [to_float(x - top, p) for x in best[ks]]

    # blocks of the sorted scores; each count's block b(k) (that of its k-th variable) and j within it
    with np.errstate(over="ignore", invalid="ignore"):
        gaps = ts[:-1] - ts[1:]  # inf where the difference overflows: a block boundary too
    starts = np.concatenate([[0], np.flatnonzero(gaps > _GAP) + 1])
    sizes = np.diff(np.concatenate([starts, [n]]))
    ends = starts + sizes
    block_of = np.repeat(np.arange(starts.shape[0]), sizes)
    u = ts - ts[starts][block_of]  # <= 0; exact where neighbours are close (Sterbenz)
    cu = np.concatenate([[0.0], np.cumsum(u)])
    b = np.concatenate([[0], block_of])  # b(0) = 0 with j = 0; b(k) = block of variable k - 1
    j = np.arange(n + 1) - starts[b]
    nb = sizes[b]
    log_c = gammaln(nb + 1.0) - gammaln(j + 1.0) - gammaln(nb - j + 1.0)

    # the counts that can matter, and the blocks they leave undecided
    keep = np.isfinite(d) & (d + log_c >= -_CUT)
    kept = np.flatnonzero(keep)
    kmin, kmax = int(kept[0]), int(kept[-1])
    active = (ends > kmin) & (starts < kmax)
    a0 = int(ends[ends <= kmin].max(initial=0))  # variables of the blocks clamped on
    a1 = int(starts[starts >= kmax].min(initial=n))  # first variable of the blocks clamped off
    # levels of the active blocks, exactly _GAP apart (each below the smallest score of the one above)
    act = np.flatnonzero(active)
    drop = u[ends[act][:-1] - 1] - _GAP if act.size > 1 else np.zeros(0)
    level = np.concatenate([[0.0], np.cumsum(drop)])
    lev_var = level[block_of[a0:a1] - (act[0] if act.size else 0)]
    t2 = np.empty(n)
    t2[:a0] = np.inf
    t2[a1:] = -np.inf
    t2[a0:a1] = u[a0:a1] + lev_var
    l2 = np.concatenate([[0.0], np.cumsum(lev_var)])
    g2 = np.full(n + 1, -np.inf)
    g2[kept] = d[kept] - (cu[kept] - cu[a0]) - l2[kept - a0]

    theta2 = theta.copy()
    theta2[free[order]] = t2
    f2 = np.full(f.shape[0], -np.inf)
    f2[n_on : n_on + n + 1] = g2
    return theta2, f2, shift
