"""Result of belief propagation."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .._results import Result

__all__ = ["BPResult"]


@dataclass(frozen=True)
class BPResult(Result):
    """Beliefs, Bethe estimate of ``log Z`` and a decoded assignment from belief propagation.

    Attributes
    ----------
    marginals : ndarray of shape (n, k), or tuple of ndarray
        ``marginals[i]`` is variable ``i``'s belief, shape ``(card_i,)``, summing to 1 (read-only):
        the sum-product marginal estimate, or for ``task="map"`` the max-marginals
        ``max_{y: y_i = s} p(y)``, rescaled to sum to 1. ``(n, 2)`` for binary models.
    log_partition : float
        Sum-product: the Bethe approximation of ``log Z`` (exact on trees). NaN for max-product.
    factor_marginals : tuple
        One entry per factor of ``fg.factors``, in order: the factor's belief over its variables as a
        table of shape ``(card_v1, ..., card_vk)`` summing to 1 (max-product: max-marginal beliefs,
        scaled to sum 1), read-only; ``None`` for factors whose beliefs are not materialized
        (cardinality factors, factors over no variable). On a tree, exact joint marginals.
    assignment : ndarray of shape (n,), int64
        The most likely state of every variable under its belief. Max-product after converged messages
        breaks ties consistently (``bp._decode``: tied variables clamped one per component, the schedule
        rerun warm), so on a tree it is a MAP labelling, ties or not.
    score : float
        ``fg.score(assignment)`` (``-inf`` if the decoded states violate a hard constraint).
    task : str
        ``"marginals"`` (sum-product) or ``"map"`` (max-product), as passed to :func:`~tractable.bp.loopy`.
    max_residual : float
        Largest change of a factor-to-variable message (as probabilities) in the last iteration.
    time, method, converged, n_iter, status, message
        As in every result: ``method`` is ``"loopy"``; ``status`` is ``"converged"``,
        ``"max_iter_reached"``, ``"time_limit_reached"``, or ``"error"`` when max-product messages converged
        but the decoded labelling still violates a hard constraint (score ``-inf``; the labelling is kept).
    """

    marginals: np.ndarray | tuple
    log_partition: float
    factor_marginals: tuple
    assignment: np.ndarray
    score: float
    task: str
    max_residual: float

    @property
    def kind(self) -> str:
        """Deprecated: ``"sum"`` / ``"max"`` for ``task`` ``"marginals"`` / ``"map"``; use ``task``."""
        warnings.warn("`BPResult.kind` is deprecated; use `BPResult.task`.", DeprecationWarning, stacklevel=2)
        return "sum" if self.task == "marginals" else "max"
