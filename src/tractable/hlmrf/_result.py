"""Result of MPE inference in a hinge-loss MRF."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._results import Result

__all__ = ["MPEResult"]


@dataclass(frozen=True)
class MPEResult(Result):
    """A most probable explanation (MPE) of a hinge-loss MRF.

    Attributes
    ----------
    x : ndarray of shape (n_variables,)
        The assignment (read-only), fixed variables included at their fixed values; NaN for the
        free variables when a reference solver found no solution (``status="infeasible"``).
    objective : float
        ``sum_j w_j max(c_j·x + b_j, 0)^p_j`` at ``x`` (the energy; lower is more probable).
    converged : bool
        ADMM: both residuals met their tolerances; reference solvers: an optimum was found. ``False``
        always comes with a :class:`~tractable.ConvergenceWarning`.
    n_iter : int
        ADMM iterations (reference solvers: their iteration count, or 0 where not reported).
    primal_residual, dual_residual : float
        ADMM residuals ``||x_local - z||`` and ``rho ||z - z_prev||`` over all local copies at the
        last iteration (NaN for reference solvers).
    max_violation : float
        Largest violation of a constraint, of the box [0, 1] or of a fixed value at ``x``.
    status : str
        From the library's vocabulary (:mod:`tractable._results`): ``"converged"``,
        ``"max_iter_reached"``, ``"time_limit_reached"``, ``"infeasible"`` (ADMM: the constraints have no
        common point, proven before or during the run); ``"optimal"``, ``"time_limit_reached"``,
        ``"infeasible"``, ``"error"`` (reference solvers).
    time : float
        Wall-clock seconds spent.
    method : str
        ``"admm"``, ``"highs"`` or ``"clarabel"``: the name passed to :func:`~tractable.hlmrf.solve`.
    message : str
        A one-line account of how the solver stopped (the text of the warning when
        ``converged=False``), e.g. ``"admm: converged after 212 iterations; residuals below
        tolerance"``.
    rho : float
        ADMM step size at the last iteration (differs from the given ``rho`` with adaptive rho).
    lower_bound : float
        A certified lower bound on the optimum (:mod:`tractable.hlmrf.bound`): from ADMM's
        multipliers (valid at any iteration), or from the reference solver's duals; ``-inf`` when not
        computed (no solution, an infeasible model).
    gap : float
        Certified relative gap ``(objective - lower_bound) / max(|objective|, 1)`` of ``x``; ``inf``
        when ``x`` is not feasible (``max_violation > 1e-9``) or no bound was computed. An infeasible
        model never has a finite gap.
    state : tuple or None
        ADMM's internal state at the last iteration: the local copies and the (unscaled) multipliers
        of every term, as float64 arrays, for ``solve(..., warm_start=result)``; kept only with
        ``solve(..., keep_state=True)`` (it is as large as the model's term arrays), else None.
    """

    x: np.ndarray
    objective: float
    primal_residual: float
    dual_residual: float
    max_violation: float
    rho: float = float("nan")
    lower_bound: float = float("-inf")
    gap: float = float("inf")
    state: tuple | None = field(default=None, repr=False, compare=False)
