"""Result types shared by several algorithm families, and the warning for non-convergence."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ConvergenceWarning", "MAPResult", "MarginalsResult", "frozen_array"]


class ConvergenceWarning(UserWarning):
    """An iterative algorithm stopped before meeting its convergence criterion.

    The result is still returned (with ``converged=False``); the warning says why it may be inaccurate.
    """


def frozen_array(value, dtype=None) -> np.ndarray:
    """Return a read-only copy of ``value`` (results and models never share writable arrays)."""
    arr = np.array(value, dtype=dtype, copy=True)
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True)
class MarginalsResult:
    """Marginals and log partition function of a discrete model.

    Attributes
    ----------
    marginals : list of ndarray
        ``marginals[i]`` has shape ``(cardinalities[i],)`` and sums to 1.
    log_partition : float
        ``log Z = log sum_y exp(score(y))``.
    time : float
        Wall-clock seconds spent.
    method : str
        The algorithm that produced the result.
    """

    marginals: list
    log_partition: float
    time: float
    method: str = ""


@dataclass(frozen=True)
class MAPResult:
    """A maximizing assignment of a discrete model.

    Attributes
    ----------
    assignment : ndarray of shape (n_variables,), int64
        One maximizer of ``score`` (ties broken towards the smallest joint index).
    score : float
        ``score(assignment)``, the maximum of the unnormalized log-probability.
    time : float
        Wall-clock seconds spent.
    method : str
        The algorithm that produced the result.
    """

    assignment: np.ndarray
    score: float
    time: float
    method: str = ""
