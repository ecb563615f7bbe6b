"""Results of the samplers."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .._results import Result


def _deprecated(old: str, new: str):
    def get(self):
        warnings.warn(f"`{type(self).__name__}.{old}` is deprecated; use `.{new}`.", DeprecationWarning, stacklevel=2)
        return getattr(self, new)

    get.__doc__ = f"Deprecated alias of ``{new}``."
    return property(get)


__all__ = ["GibbsResult", "MMPResult"]


@dataclass(frozen=True)
class GibbsResult(Result):
    """Marginal estimates from a Gibbs sampler over binary variables.

    Attributes
    ----------
    marginals : ndarray of shape (n, 2)
        ``[P(x_i = 0), P(x_i = 1)]`` estimated by the Rao-Blackwellized average of each variable's
        conditional ``P(x_i = 1 | rest)`` over the recorded sweeps (read-only).
    samples : ndarray of shape (n_sweeps, n), uint8, or None
        The state after every recorded sweep (``return_samples=True``).
    burn_in : int
        Sweeps discarded before the recorded ones (``n_iter`` counts the recorded sweeps).
    n_updates, n_factor_evaluations : int
        Single-variable updates and factor terms evaluated, burn-in included.
    sampling_time : float
        Seconds spent in the compiled sweeps (``time`` also counts compiling the graph into arrays).
    time, method, converged, n_iter, status, message
        As in every result; ``n_iter`` is the number of recorded sweeps (``n_sweeps`` is a deprecated
        alias); ``status`` is ``"completed"`` (all sweeps ran) or ``"time_limit_reached"``.
    """

    marginals: np.ndarray
    samples: np.ndarray | None
    burn_in: int
    n_updates: int
    n_factor_evaluations: int
    sampling_time: float

    n_sweeps = _deprecated("n_sweeps", "n_iter")


@dataclass(frozen=True)
class MMPResult(Result):
    """Maximum-marginal decisions by adaptive Gibbs sampling with factor-graph pruning (Lampert 2012).

    Attributes
    ----------
    assignment : ndarray of shape (n,), int64
        The maximum-marginal decisions: ``1`` where ``P(x_i = 1) > 1/2`` is the more probable
        decision (read-only). ``decisions`` is a deprecated alias.
    score : float
        ``fg.score(assignment)`` (``-inf`` when the decisions together violate a hard constraint).
    marginals : ndarray of shape (n, 2)
        ``[1 - mu_i, mu_i]`` with ``mu_i`` the fraction of ``x_i``'s samples that are 1 (read-only).
    confidence : ndarray of shape (n,)
        Posterior probability of the decision given the samples (Eq. 5), when the variable was
        pruned or when sampling stopped.
    samples_per_variable : ndarray of shape (n,), int64
        Samples each variable received (after burn-in) before it was pruned.
    n_updates, n_factor_evaluations : int
        Single-variable updates and factor terms evaluated, burn-in included.
    active_history, factor_history : ndarray of shape (n_sweeps,), int64
        Variables still sampled and factors still touching one of them, per sweep.
    sampling_time : float
        Seconds spent in the compiled sampling loop (``time`` also counts compiling the graph).
    time, method, converged, n_iter, status, message
        As in every result; ``n_iter`` is the number of sweeps after burn-in (``n_sweeps`` is a
        deprecated alias); ``converged`` is True when every decision is ``epsilon``-confident
        (``status="converged"``), otherwise ``"max_iter_reached"`` (``max_sweeps``) or
        ``"time_limit_reached"``, with a :class:`~tractable.ConvergenceWarning`.
    """

    assignment: np.ndarray
    score: float
    marginals: np.ndarray
    confidence: np.ndarray
    samples_per_variable: np.ndarray
    n_updates: int
    n_factor_evaluations: int
    active_history: np.ndarray
    factor_history: np.ndarray
    sampling_time: float

    decisions = _deprecated("decisions", "assignment")
    n_sweeps = _deprecated("n_sweeps", "n_iter")
