"""Results of the samplers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["GibbsResult", "MMPResult"]


@dataclass(frozen=True)
class GibbsResult:
    """Marginal estimates from a Gibbs sampler over binary variables.

    Attributes
    ----------
    marginals : ndarray of shape (n, 2)
        ``[P(x_i = 0), P(x_i = 1)]`` estimated by the Rao-Blackwellized average of each variable's
        conditional ``P(x_i = 1 | rest)`` over the recorded sweeps (read-only).
    samples : ndarray of shape (n_sweeps, n), uint8, or None
        The state after every recorded sweep (``return_samples=True``).
    n_sweeps, burn_in : int
        Recorded sweeps and discarded sweeps before them.
    n_updates, n_factor_evaluations : int
        Single-variable updates and factor terms evaluated, burn-in included.
    sampling_time : float
        Seconds spent in the compiled sweeps (``time`` also counts compiling the graph into arrays).
    time, method, converged, n_iter, status, message
        As in every result; ``status`` is ``"completed"`` (all sweeps ran) or ``"time_limit_reached"``.
    """

    marginals: np.ndarray
    samples: np.ndarray | None
    n_sweeps: int
    burn_in: int
    n_updates: int
    n_factor_evaluations: int
    sampling_time: float
    time: float
    method: str
    converged: bool
    n_iter: int
    status: str
    message: str


@dataclass(frozen=True)
class MMPResult:
    """Maximum-marginal decisions by adaptive Gibbs sampling with factor-graph pruning (Lampert 2012).

    Attributes
    ----------
    decisions : ndarray of shape (n,), uint8
        ``1`` where ``P(x_i = 1) > 1/2`` is the more probable decision (read-only).
    marginals : ndarray of shape (n, 2)
        ``[1 - mu_i, mu_i]`` with ``mu_i`` the fraction of ``x_i``'s samples that are 1 (read-only).
    confidence : ndarray of shape (n,)
        Posterior probability of the decision given the samples (Eq. 5), when the variable was
        pruned or when sampling stopped.
    samples_per_variable : ndarray of shape (n,), int64
        Samples each variable received (after burn-in) before it was pruned.
    n_sweeps : int
        Sweeps after burn-in.
    n_updates, n_factor_evaluations : int
        Single-variable updates and factor terms evaluated, burn-in included.
    active_history, factor_history : ndarray of shape (n_sweeps,), int64
        Variables still sampled and factors still touching one of them, per sweep.
    sampling_time : float
        Seconds spent in the compiled sampling loop (``time`` also counts compiling the graph).
    time, method, converged, n_iter, status, message
        As in every result; ``converged`` is True when every decision is ``epsilon``-confident
        (``status="converged"``), otherwise ``"max_iter_reached"`` (``max_sweeps``) or
        ``"time_limit_reached"``, with a :class:`~tractable.ConvergenceWarning`.
    """

    decisions: np.ndarray
    marginals: np.ndarray
    confidence: np.ndarray
    samples_per_variable: np.ndarray
    n_sweeps: int
    n_updates: int
    n_factor_evaluations: int
    active_history: np.ndarray
    factor_history: np.ndarray
    sampling_time: float
    time: float
    method: str
    converged: bool
    n_iter: int
    status: str
    message: str
