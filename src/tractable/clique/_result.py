"""The result type of clique MAP inference, and how every algorithm builds it."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from .._errors import ZeroPartitionError
from .._results import ERROR, INACCURATE_STATUSES, Result, frozen_array, stop_message, warn_stopped
from ._score import score_parts

__all__ = ["CliqueMAPResult"]


@dataclass(frozen=True)
class CliqueMAPResult(Result):
    """A labelling of a clique and its score.

    Attributes
    ----------
    assignment : ndarray of shape (n,), int64
        The label of every node (read-only).
    score : float
        ``node_score + clique_score``, the objective ``F(assignment)`` that every method maximizes.
    node_score : float
        ``sum_u phi[u, assignment[u]]``.
    clique_score : float
        ``potential(counts(assignment))``.
    method : str
        The algorithm that produced the labelling (the name passed as ``method``; ``clique_map``'s
        ``"auto"`` reports the steps it took).
    exact : bool
        True only when the method is provably optimal for this potential family.
    time : float
        Wall-clock seconds spent.
    converged : bool
        False only when a local search (``icm``, ``alpha_expansion``) stopped at ``max_iter``, which
        comes with a :class:`~tractable.ConvergenceWarning`.
    n_iter : int
        Sweeps (alpha-pass: one per label or label subset; ICM: over all nodes) or rounds
        (alpha-expansion); 0 for the exact methods (``exact_clique_map``, ``majority_exact``: their
        ``message`` counts the subproblems solved) and for ``majority_alpha_pass``.
    status : str
        ``"optimal"`` when ``exact``; ``"completed"`` for a one-pass method without an optimality
        guarantee for this potential; ``"converged"`` or ``"max_iter_reached"`` for a local search;
        ``"error"`` (with ``converged=False`` and a warning) when such a method found only a labelling of
        score ``-inf``. An exact method that finds every labelling forbidden raises
        :class:`~tractable.ZeroPartitionError`.
    message : str
        A one-line account of how the method stopped.
    """

    assignment: np.ndarray
    score: float
    node_score: float
    clique_score: float
    exact: bool


def make_result(
    phi, potential, assignment, method, t0, *, exact, status, n_iter=0, detail="", stacklevel=5
) -> CliqueMAPResult:
    """Score a validated labelling and wrap it, with ``message`` from ``status``.

    A status that stops short (``"max_iter_reached"``) gives ``converged=False`` and a
    :class:`ConvergenceWarning`; the default ``stacklevel`` points at the user's call of a public
    function (public function -> core -> ``make_result`` -> ``warn_stopped``).
    """
    assignment = np.asarray(assignment, dtype=np.int64)
    with np.errstate(over="ignore", invalid="ignore"):  # refused just below
        node, clique = score_parts(phi, potential, assignment)
    if not node + clique < np.inf:  # +inf or NaN: a potential (e.g. a CountPotential) beyond float64's range
        raise ValueError(
            f"`phi` and `potential` must keep the labellings' scores within float64's range (about 1.8e308); "
            f"got a score of {node + clique!r} (node scores {node!r}, clique potential {clique!r}): rescale them."
        )
    if node + clique == -np.inf:  # a labelling the node scores or the potential forbid: never a success
        if exact:  # the method is optimal for this potential: no labelling is allowed
            raise ZeroPartitionError(
                "every labelling of the clique has score -inf: the node scores `phi` and the potential forbid them all."
            )
        status = ERROR
        detail = (
            "the labelling found has score -inf (the node scores or the potential forbid it); "
            "exact_clique_map decides whether any labelling is allowed"
        )
    message = stop_message(status, method, n_iter, detail)
    converged = status not in INACCURATE_STATUSES and status != ERROR
    if not converged:
        warn_stopped(message, stacklevel=stacklevel)
    return CliqueMAPResult(
        assignment=frozen_array(assignment),
        score=node + clique,
        node_score=node,
        clique_score=clique,
        method=method,
        exact=bool(exact),
        time=time.perf_counter() - t0,
        converged=converged,
        n_iter=int(n_iter),
        status=status,
        message=message,
    )


def renamed(res: CliqueMAPResult, method: str, t0: float) -> CliqueMAPResult:
    """``res`` reported under another method name (a composite of ``clique_map("auto")``), timed from ``t0``;
    the detail of its message (after the account of the stop) is kept."""
    head = stop_message(res.status, res.method, res.n_iter)
    detail = res.message[len(head) + 2 :] if res.message.startswith(head + "; ") else ""
    return replace(
        res, method=method, time=time.perf_counter() - t0, message=stop_message(res.status, method, res.n_iter, detail)
    )
