"""The chain algorithm (Sec. 6.1 of Tarlow et al. 2012): O(D^2), or O(D k) with a count cap.

Auxiliary count variables in a chain instead of a tree: the count of the first d variables is
updated by adding ``y_d``, so each message is a sum of two shifted arrays (no FFT). Done here in
log space, every output is accurate relative to its own size; the package uses it as its accuracy
reference.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .._errors import ZeroPartitionError
from .._logspace import normalize_log
from .._validate import check_int
from ._convolve import _as_kernel_rows
from ._kernels import chain_stack
from ._result import CardinalityMarginals, exact_result
from ._tree import NO_CONFIGURATION
from .convolution_tree import _Clamped, _moderate, _validate_marginals_args

__all__ = ["chain_marginals"]


def _run_chain_stack(theta: np.ndarray, f: np.ndarray, cap: int):
    """The compiled chain (:func:`~tractable.cardinality._kernels.chain_stack`) on a stack ``theta``
    (B, D), ``f`` (B, D + 1), counts above ``cap`` cut off. Returns the kernel's outputs ``(log_odds,
    count, logz without offset, offset)`` and its work arrays ``(log1, log0, alpha)``, which hold the
    last model's log masses and forward messages."""
    theta, f = _as_kernel_rows(theta), _as_kernel_rows(f)
    B, D = theta.shape
    log_odds, count, logz, offset = np.empty((B, D)), np.zeros((B, D + 1)), np.empty(B), np.empty(B)
    log1, log0, alpha = np.empty(D), np.empty(D), np.empty((D + 1) ** 2)
    free, th, beta, newb = np.empty(D, dtype=np.int64), np.empty(D), np.empty(D + 2), np.empty(D + 2)
    chain_stack(theta, f, cap, log_odds, count, logz, offset, free, th, alpha, beta, newb, log1, log0)
    return (log_odds, count, logz, offset), (log1, log0, alpha)


def _chain_core(theta: np.ndarray, f: np.ndarray, max_count: int | None = None):
    """The chain algorithm on trusted input (as ``convolution_tree._marginals_core``): returns
    ``(log_odds (D,), count_marginals (D + 1,), log_partition)``; ``f`` must already be ``-inf``
    above ``max_count``. Huge scores are reduced first (``convolution_tree._moderate``): the chain holds
    a count's log weight in one float, where ``1e300 + log 2`` would lose the ``log 2``."""
    theta, f, shift = _moderate(theta, f)
    prob = _Clamped(theta, f)
    n = prob.n_free
    kmax = n if max_count is None else max(0, min(n, max_count - prob.n_on))
    cap = prob.n_vars if max_count is None else max_count
    (_, _, lz, _), (log1, log0, alpha) = _run_chain_stack(theta[None, :], f[None, :], cap)
    logz = lz[0]
    if not logz > -np.inf:
        raise ZeroPartitionError(NO_CONFIGURATION + ".")
    logw = alpha[n * (kmax + 1) : (n + 1) * (kmax + 1)]
    log_odds = theta.copy()  # clamped variables keep their ±inf
    log_odds[prob.free] = log1[:n] - log0[:n]
    pi = np.zeros(n + 1)
    # shifted by the maximum and divided by the sum (not exp(x - log Z), whose rounding need not sum to 1)
    pi[: kmax + 1] = normalize_log(logw + prob.f_eff[: kmax + 1])[0]
    logz = logz + math.fsum(np.maximum(prob.theta_free, 0.0))
    return log_odds, prob.full_count(pi), float(logz) + shift


def chain_marginals(theta, f, *, max_count: int | None = None) -> CardinalityMarginals:
    """Exact marginals by the O(D^2) log-space chain algorithm (O(D k) with ``max_count=k``).

    ``theta`` and ``f`` are Tarlow et al.'s symbols for the unary and count scores.

    Parameters
    ----------
    theta : array_like of shape (D,)
        Log-potential of ``y_d = 1`` (``±inf`` clamp the variable).
    f : array_like of shape (D + 1,)
        Log-potential of the count.
    max_count : int, optional
        If given, counts above ``max_count`` are forbidden (``f[k] = -inf`` for ``k > max_count``
        is assumed, and enforced), and the algorithm runs in O(D * max_count) time and memory.

    Returns
    -------
    CardinalityMarginals
        As :func:`~tractable.cardinality.marginals`, with ``method`` ``"chain"``.

    Raises
    ------
    ValueError, ZeroPartitionError
        As :func:`~tractable.cardinality.marginals`.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.cardinality import chain_marginals
    >>> res = chain_marginals(np.zeros(3), np.array([0.0, 0.0, -np.inf, -np.inf]))
    >>> np.round(res.p_on, 4)
    array([0.25, 0.25, 0.25])
    """
    t0 = time.perf_counter()
    if max_count is not None:
        max_count = check_int(max_count, "max_count", minimum=0)
        f = np.array(f, dtype=np.float64, copy=True)
        if f.ndim == 1 and max_count + 1 < f.shape[0]:
            if np.all(np.isneginf(f[: max_count + 1])) and np.any(f[max_count + 1 :] > -np.inf):
                raise ZeroPartitionError(
                    f"`f` is -inf at every count up to `max_count` = {max_count}: {NO_CONFIGURATION}."
                )
            f[max_count + 1 :] = -np.inf
    theta, f = _validate_marginals_args(theta, f)  # its messages name the counts the clamped variables allow
    log_odds, count, logz = _chain_core(theta, f, max_count)
    return exact_result(log_odds, count, logz, t0, "chain")
