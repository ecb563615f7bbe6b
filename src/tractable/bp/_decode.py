"""Decoding of max-product beliefs into one labelling, with ties broken consistently.

Max-product gives each variable its max-marginal ``max_{y: y_i = s} p(y)``. When every variable's best
state is unique, the independent argmaxes are the decoding (on a tree, the MAP). When some are tied
(hard constraints such as "exactly one on", symmetric models), the independent argmaxes may mix two
different optimal labellings into one that a factor forbids (score ``-inf``) or that is merely worse.

:func:`break_ties` then decodes by *clamping*: it fixes one tied variable of every connected component
that has ties at its best state (as evidence: the other states of its prior become ``-inf``), reruns
max-product from the current messages (warm) until the messages converge again, and repeats on the
max-marginals of the clamped model until no free variable is tied. The variables are read off the last
beliefs (the clamped ones at their states). On a tree this is exact: a state that attains its
variable's max-marginal belongs to some MAP labelling, so each clamp keeps a MAP labelling consistent
with the clamps, and the clamped max-marginals are again exact; components are independent, so one clamp
per component per round is sound. On a loopy graph it is the usual decimation heuristic. A clamp whose
messages then forbid every state of a variable (a ``ZeroPartitionError`` of the rerun; max-product's
``-inf`` entries are sound, so that state cannot be completed) is undone and the variable's next state is
tried; when every state of it fails, decoding stops there, or, when nothing else was clamped yet, the model
has no configuration of positive probability and :class:`~tractable.ZeroPartitionError` is raised, as the
engine does when its own messages forbid every state of a variable.

The engine calls it only after its messages converged (beliefs that are not a fixed point carry no
max-marginal ties worth keeping consistent: undamped max-product on a frustrated grid ties dozens of
variables exactly while oscillating). Every rerun iterates until the messages converge again; all reruns
together get the run's ``max_iter`` once more and stop at its ``time_limit``. A rerun that does not converge
within what is left is undone and decoding stops: the variables are read off the last converged beliefs.
Nothing of this runs when no variable is tied (:func:`tied` is one comparison per variable for binary
variables, one partial sort of the beliefs otherwise).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._errors import ZeroPartitionError
from ..factorgraph import FactorGraph

__all__ = ["TIE_TOL", "Decoding", "break_ties", "components", "normalized_beliefs", "tie_tolerance", "tied"]

#: two max-marginals within this much in log space (plus ``10 * tol``, see :func:`tie_tolerance`) are a tie
TIE_TOL = 1e-6


def tie_tolerance(tol: float) -> float:
    """The log-space gap below which two states of a variable count as tied, for the messages' ``tol``.

    Converged messages are within ``tol`` of their fixed point (as max-normalized probabilities), so a belief
    (a sum of messages) is within a small multiple of it; calling a near tie a tie only costs a clamp.
    """
    return TIE_TOL + 10.0 * float(tol)


def normalized_beliefs(fin: np.ndarray, ninf: np.ndarray) -> np.ndarray:
    """Log max-marginal beliefs from their finite part and ``-inf`` counts, each row shifted to maximum 0."""
    total = np.where(ninf > 0, -np.inf, fin)
    top = np.max(total, axis=1, keepdims=True)
    return total - np.where(np.isfinite(top), top, 0.0)


def tied(log_b: np.ndarray, tie_tol: float) -> np.ndarray:
    """Which variables have a second state within ``tie_tol`` of their best (``log_b``: rows of maximum 0)."""
    if log_b.shape[1] < 2:
        return np.zeros(log_b.shape[0], dtype=bool)
    if log_b.shape[1] == 2:
        return (log_b[:, 0] >= -tie_tol) & (log_b[:, 1] >= -tie_tol)  # both are within tie_tol of the best
    return np.partition(log_b, -2, axis=1)[:, -2] >= -tie_tol


def components(fg: FactorGraph) -> np.ndarray:
    """The connected component of every variable of ``fg`` (variables joined by a factor over both)."""
    n, factors = fg.n_variables, fg.factors
    lens = np.fromiter((len(f.variables) for f in factors), dtype=np.int64, count=len(factors))
    keep = np.flatnonzero(lens > 1)
    if not keep.size:
        return np.arange(n)
    var = np.concatenate([np.asarray(factors[i].variables, dtype=np.int64) for i in keep.tolist()])
    fac = n + np.repeat(np.arange(keep.size), lens[keep])
    m = n + keep.size
    graph = sp.csr_matrix((np.ones(var.size), (var, fac)), shape=(m, m))
    return connected_components(graph, directed=False)[1][:n]


@dataclass(frozen=True)
class Decoding:
    """What :func:`break_ties` did.

    Attributes
    ----------
    assignment : ndarray of int64, shape (n,)
    rounds : int
        Clamp-and-rerun rounds (0: no tie).
    clamped : int
        Variables clamped.
    iterations : int
        Message-passing iterations the reruns took.
    stopped : str or None
        Why decoding stopped with ties left: ``"time_limit"``, ``"budget"`` (a rerun did not converge within the
        iterations left; its clamps are undone) or ``"contradiction"`` (the messages refuted every state of a tied
        variable); None when no free variable is tied.
    """

    assignment: np.ndarray
    rounds: int = 0
    clamped: int = 0
    iterations: int = 0
    stopped: str | None = None

    def detail(self) -> str:
        """A clause for the result's message ("" when no tie was broken)."""
        if not self.rounds:
            return ""
        done = (
            f"{self.clamped} tied variable{'s' * (self.clamped != 1)} clamped in {self.rounds} "
            f"round{'s' * (self.rounds != 1)} ({self.iterations} more iterations)"
        )
        why = {
            None: "",
            "time_limit": "the time limit passed",
            "budget": "the clamped messages did not converge within max_iter more iterations",
            "contradiction": "the messages refuted every state of a tied variable",
        }[self.stopped]
        return f"ties broken: {done}" if not why else f"{done}, then stopped with ties left: {why}"


def break_ties(
    log_b: np.ndarray,
    ws,
    run: Callable[[], int],
    labels: Callable[[], np.ndarray],
    tie_tol: float,
    out_of_time: Callable[[], bool],
) -> Decoding:
    """Decode max-product beliefs, clamping tied variables until no free one is tied (see the module docstring).

    Parameters
    ----------
    log_b : ndarray of shape (n, K)
        The max-marginal log beliefs, each row of maximum 0 (``-inf``: forbidden or past the cardinality).
    ws : Workspace
        The engine's workspace at the end of its run; clamps go into ``ws.prior_ninf`` and the reruns move
        ``ws.nu`` (read the result's beliefs before calling this).
    run : callable
        Runs iterations from the current messages until they converge, the budget ends or the time is up, and
        returns ``(iterations, outcome)``, outcome ``"converged"``, ``"stopped"`` or ``"refuted"`` (the messages
        forbid every state of a variable).
    labels : callable
        Returns the connected component of every variable (called once, at the first tie).
    tie_tol : float
        See :func:`tie_tolerance`.
    out_of_time : callable
        True when the run's time limit has passed (then no further round starts).

    Raises
    ------
    ZeroPartitionError
        Every state of a tied variable, clamped with nothing else clamped, leads the messages to forbid every
        state of some variable: the model has no configuration of positive probability.
    """
    free = tied(log_b, tie_tol)
    if not free.any():
        return Decoding(np.argmax(log_b, axis=1).astype(np.int64))
    states = np.arange(log_b.shape[1])
    comp = labels()
    rounds = clamped = iterations = 0
    stopped = None

    def attempt(vs: np.ndarray, ss: np.ndarray) -> np.ndarray | bool:
        """Clamp ``vs`` to ``ss`` and rerun: the new beliefs; else undone, and False if the messages refute the
        clamps, True if they did not converge again within the budget."""
        nonlocal iterations
        nu, nu_p, prior = ws.nu.copy(), ws.nu_p.copy(), ws.prior_ninf[vs].copy()
        ws.prior_ninf[vs] += states[None, :] != ss[:, None]
        n_iter, outcome = run()
        iterations += n_iter
        if outcome == "converged":
            ws.beliefs()
            new = normalized_beliefs(ws.fin, ws.ninf)
            if np.all(np.any(np.isfinite(new), axis=1)):
                return new
            outcome = "refuted"
        ws.nu[...], ws.nu_p[...], ws.prior_ninf[vs] = nu, nu_p, prior
        return outcome != "refuted"

    while free.any():
        if out_of_time():
            stopped = "time_limit"
            break
        cand = np.flatnonzero(free)
        _, first = np.unique(comp[cand], return_index=True)
        picks = cand[first]
        rounds += 1
        new = attempt(picks, np.argmax(log_b[picks], axis=1))
        if new is False:  # some clamp was refuted: one variable at a time, its states best first
            picks = picks[:1]
            row = log_b[picks[0]]
            order = np.argsort(-row, kind="stable")
            for s in order[np.isfinite(row[order])].tolist():
                new = attempt(picks, np.array([s]))
                if new is not False:
                    break
        if new is False:
            if not clamped:  # refuted with nothing else clamped: the model itself forbids every state of picks[0]
                raise ZeroPartitionError(
                    "no configuration has non-zero probability: the max-product messages forbid every state of "
                    f"variable {int(picks[0])} once it is clamped."
                )
            stopped = "contradiction"
            break
        if new is True:
            stopped = "time_limit" if out_of_time() else "budget"
            break
        clamped += picks.size
        log_b = new
        free = tied(log_b, tie_tol)
    return Decoding(np.argmax(log_b, axis=1).astype(np.int64), rounds, clamped, iterations, stopped)
