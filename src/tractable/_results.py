"""Result types shared by the discrete areas, the status vocabulary of every result, and the warning
for non-convergence.

Every result of the library is a frozen dataclass whose arrays are read-only and whose containers are
immutable, with ``time`` (seconds) and ``method`` (the name the user passed). Every result also has
``converged``, ``n_iter``, ``status`` and ``message``; ``status`` takes one of the values below.

Status vocabulary (``STATUSES``), grouped as cvxpy groups its solver statuses:

========================  ==================================================================
``"optimal"``             an exact method finished: the answer is exact (up to rounding)
``"completed"``           a one-pass method finished; it makes no optimality claim
``"converged"``           an iterative method met its stopping criterion
``"max_iter_reached"``    an iterative method used its iteration (round, sweep) budget
``"time_limit_reached"``  an iterative method used its ``time_limit``
``"infeasible"``          the problem has no feasible point / no configuration of positive mass
``"error"``               an external solver failed, or an iterative one converged to an unusable point
========================  ==================================================================

``SOLUTION_STATUSES`` are those after which the answer can be used as it is; ``INACCURATE_STATUSES``
come with ``converged=False`` and a :class:`ConvergenceWarning`; ``NO_SOLUTION_STATUSES`` come with
NaN answers, or with the point the solver stopped at and a message saying why it is unusable (an
infeasible ADMM point; a max-product labelling of score ``-inf``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "COMPLETED",
    "CONVERGED",
    "ConvergenceWarning",
    "ERROR",
    "INACCURATE_STATUSES",
    "INFEASIBLE",
    "MAPResult",
    "MAX_ITER_REACHED",
    "MarginalsResult",
    "Result",
    "NO_SOLUTION_STATUSES",
    "OPTIMAL",
    "SOLUTION_STATUSES",
    "STATUSES",
    "TIME_LIMIT_REACHED",
    "frozen_array",
    "frozen_marginals",
    "stop_message",
    "warn_stopped",
]

OPTIMAL = "optimal"
COMPLETED = "completed"
CONVERGED = "converged"
MAX_ITER_REACHED = "max_iter_reached"
TIME_LIMIT_REACHED = "time_limit_reached"
INFEASIBLE = "infeasible"
ERROR = "error"

SOLUTION_STATUSES = (OPTIMAL, COMPLETED, CONVERGED)
INACCURATE_STATUSES = (MAX_ITER_REACHED, TIME_LIMIT_REACHED)
NO_SOLUTION_STATUSES = (INFEASIBLE, ERROR)
STATUSES = SOLUTION_STATUSES + INACCURATE_STATUSES + NO_SOLUTION_STATUSES


class ConvergenceWarning(UserWarning):
    """An iterative algorithm stopped before meeting its convergence criterion.

    The result is still returned (with ``converged=False``); the warning says why it may be inaccurate.
    """


def frozen_array(value, dtype=None) -> np.ndarray:
    """Return a read-only copy of ``value`` (results and models never share writable arrays)."""
    arr = np.array(value, dtype=dtype, copy=True)
    arr.flags.writeable = False
    return arr


def frozen_marginals(marginals) -> np.ndarray | tuple:
    """Per-variable distributions in the library's one shape, read-only.

    Parameters
    ----------
    marginals : sequence of array_like, or array_like of shape (n, k)
        ``marginals[i]`` is variable ``i``'s distribution, shape ``(card_i,)``.

    Returns
    -------
    ndarray of shape (n, k) or tuple of ndarray
        An ``(n, k)`` float64 array when every variable has ``k`` states (so ``P(y_i = 1)`` of a
        binary model is ``marginals[:, 1]``); otherwise a tuple of ``(card_i,)`` arrays. Read-only
        either way.
    """
    if isinstance(marginals, np.ndarray) and marginals.ndim == 2:
        return frozen_array(marginals, dtype=np.float64)
    rows = [np.asarray(m, dtype=np.float64) for m in marginals]
    if rows and len({r.shape for r in rows}) == 1:
        return frozen_array(np.stack(rows))
    if not rows:
        return frozen_array(np.zeros((0, 0)))
    return tuple(frozen_array(r) for r in rows)


def stop_message(status: str, method: str, n_iter: int, detail: str = "") -> str:
    """A one-line account of how ``method`` stopped, for the ``message`` field of a result."""
    text = {
        OPTIMAL: f"{method}: exact solution",
        COMPLETED: f"{method}: finished",
        CONVERGED: f"{method}: converged after {n_iter} iterations",
        MAX_ITER_REACHED: f"{method}: stopped at the iteration limit ({n_iter}) before converging",
        TIME_LIMIT_REACHED: f"{method}: stopped at the time limit after {n_iter} iterations before converging",
        INFEASIBLE: f"{method}: the problem is infeasible",
        ERROR: f"{method}: the solver failed",
    }[status]
    return f"{text}; {detail}" if detail else text


def warn_stopped(message: str, stacklevel: int = 3) -> None:
    """Issue the :class:`ConvergenceWarning` that accompanies every result with ``converged=False``."""
    warnings.warn(message, ConvergenceWarning, stacklevel=stacklevel)


@dataclass(frozen=True, kw_only=True)
class Result:
    """The fields every result of the library shares, declared once.

    Every result type derives from this class: a frozen dataclass whose own fields (the answer)
    come first and may be given by position, followed by these six, which are keyword-only.

    Attributes
    ----------
    time : float
        Wall-clock seconds spent.
    method : str
        The algorithm that produced the result (the name the user passed, or the function's name).
    converged : bool, default True
        ``False`` only for an iterative method that stopped before its criterion, always with a
        :class:`ConvergenceWarning`.
    n_iter : int, default 0
        Iterations (rounds, sweeps) of an iterative method; ``0`` for exact and one-pass methods.
    status : str, default "optimal"
        One of :data:`STATUSES`.
    message : str, default ""
        A one-line account of how the method stopped (:func:`stop_message`).
    """

    time: float
    method: str
    converged: bool = True
    n_iter: int = 0
    status: str = OPTIMAL
    message: str = field(default="")

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"`status` must be one of {STATUSES}; got {self.status!r}.")


@dataclass(frozen=True)
class MarginalsResult(Result):
    """Marginals and log partition function of a discrete model.

    Attributes
    ----------
    marginals : ndarray of shape (n, k), or tuple of ndarray
        ``marginals[i]`` is variable ``i``'s distribution, shape ``(card_i,)``, summing to 1: an
        ``(n, k)`` array when every variable has ``k`` states, a tuple of arrays otherwise
        (read-only; see :func:`frozen_marginals`).
    log_partition : float
        ``log Z = log sum_y exp(score(y))``.
    time, method, converged, n_iter, status, message
        As in every result (:class:`Result`; exact methods: ``True``, ``0``, ``"optimal"``).
    """

    marginals: np.ndarray | tuple
    log_partition: float


@dataclass(frozen=True)
class MAPResult(Result):
    """A maximizing assignment of a discrete model.

    Attributes
    ----------
    assignment : ndarray of shape (n_variables,), int64
        One maximizer of ``score`` (read-only).
    score : float
        ``score(assignment)``, the maximum of the unnormalized log-probability.
    time, method, converged, n_iter, status, message
        As in every result (:class:`Result`; exact methods: ``True``, ``0``, ``"optimal"``).
    """

    assignment: np.ndarray
    score: float
