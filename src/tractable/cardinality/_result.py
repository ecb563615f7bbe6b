"""Result type of the cardinality package."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CardinalityMarginals"]


@dataclass(frozen=True)
class CardinalityMarginals:
    """Exact marginals of a model with cardinality potentials.

    Attributes
    ----------
    marginals : ndarray of shape (n_variables,)
        ``P(y_d = 1)``; read-only. This is also ``d log Z / d theta_d``.
    count_marginals : ndarray of shape (n_variables + 1,)
        ``P(sum_d y_d = k)`` for ``k = 0 .. n_variables``; read-only. This is also
        ``d log Z / d f_k``.
    log_partition : float
        ``log Z``.
    time : float
        Wall-clock seconds spent.
    method : str
        The algorithm that produced the result.
    n_passes : int
        Number of upward passes (one per exponential tilt; see Notes of ``marginals``).
    """

    marginals: np.ndarray
    count_marginals: np.ndarray
    log_partition: float
    time: float
    method: str = ""
    n_passes: int = 1
