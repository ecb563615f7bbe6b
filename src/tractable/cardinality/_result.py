"""Result type of the cardinality package, and how every exact method of the package fills it."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from .._results import OPTIMAL, Result, frozen_array, stop_message

__all__ = ["CardinalityMarginals"]


@dataclass(frozen=True)
class CardinalityMarginals(Result):
    """Exact marginals of a binary model with cardinality potentials.

    Attributes
    ----------
    marginals : ndarray of shape (n_variables, 2)
        ``[P(y_d = 0), P(y_d = 1)]`` per variable, read-only (the library's marginals shape; see
        :attr:`p_on`). Both columns are computed from the log-odds, so each keeps its relative
        accuracy: ``marginals[:, 0]`` is accurate when ``P(y_d = 1)`` is close to 1.
        ``marginals[:, 1]`` is also ``d log Z / d theta_d``.
    count_marginals : ndarray of shape (n_variables + 1,)
        ``P(sum_d y_d = k)`` for ``k = 0 .. n_variables``; read-only. This is also
        ``d log Z / d f_k``.
    log_partition : float
        ``log Z``.
    n_passes : int
        Number of upward passes (one per exponential tilt; see Notes of ``marginals``).
    time, method, converged, n_iter, status, message
        As in every result of the library (``method`` is the name passed as ``method``); every
        method of this package is exact: ``True``, ``0``, ``"optimal"``.
    """

    marginals: np.ndarray
    count_marginals: np.ndarray
    log_partition: float
    n_passes: int = 1

    @property
    def p_on(self) -> np.ndarray:
        """``P(y_d = 1)``, shape ``(n_variables,)``: ``marginals[:, 1]`` (read-only)."""
        return self.marginals[:, 1]


def binary_marginals(log_odds: np.ndarray) -> np.ndarray:
    """Read-only ``(D, 2)`` array ``[P(y_d = 0), P(y_d = 1)]`` from ``log P(y_d = 1) - log P(y_d = 0)``.

    ``P(y_d = 0) = sigmoid(-log_odds)`` rather than ``1 - P(y_d = 1)``, so probabilities close to 1
    keep the relative accuracy of their complement. ``±inf`` gives exact 0 / 1.
    """
    out = np.empty((log_odds.shape[0], 2))
    expit(log_odds, out=out[:, 1])
    np.negative(log_odds, out=out[:, 0])
    expit(out[:, 0], out=out[:, 0])
    out.flags.writeable = False
    return out


def exact_result(
    log_odds, count_marginals, log_partition: float, t0: float, method: str, n_passes: int = 1
) -> CardinalityMarginals:
    """The :class:`CardinalityMarginals` of an exact method started at ``time.perf_counter() == t0``."""
    return CardinalityMarginals(
        marginals=binary_marginals(log_odds),
        count_marginals=frozen_array(count_marginals),
        log_partition=float(log_partition),
        time=time.perf_counter() - t0,
        method=method,
        message=stop_message(OPTIMAL, method, 0),
        n_passes=n_passes,
    )
