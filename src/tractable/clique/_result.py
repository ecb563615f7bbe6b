"""The result type of clique MAP inference and the helpers every algorithm shares."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._results import frozen_array
from .._validate import as_float_array, as_index_array
from .potentials import CliquePotential

__all__ = ["CliqueMAPResult", "score"]


@dataclass(frozen=True)
class CliqueMAPResult:
    """A labelling of a clique and its score.

    Attributes
    ----------
    labels : ndarray of shape (n,), int64
        The label of every node (read-only).
    score : float
        ``node_score + clique_score``, the objective ``F(labels)`` that every method maximizes.
    node_score : float
        ``sum_u phi[u, labels[u]]``.
    clique_score : float
        ``potential(counts(labels))``.
    method : str
        The algorithm that produced the labelling.
    exact : bool
        True only when the method is provably optimal for this potential family.
    time : float
        Wall-clock seconds spent.
    n_iter : int
        Rounds, sweeps or subproblems, where the method has them (0 otherwise).
    converged : bool
        False when an iterative method stopped at its round limit.
    """

    labels: np.ndarray
    score: float
    node_score: float
    clique_score: float
    method: str
    exact: bool
    time: float
    n_iter: int = 0
    converged: bool = True


def check_phi(phi) -> np.ndarray:
    """Validate node potentials: (n, m) float, no NaN / +inf, every node with an allowed label."""
    arr = as_float_array(phi, "phi", ndim=2)
    n, m = arr.shape
    if n < 1 or m < 1:
        raise ValueError(f"`phi` must have shape (n, m) with n >= 1 and m >= 1; got {arr.shape}.")
    dead = np.all(np.isneginf(arr), axis=1)
    if dead.any():
        u = int(np.flatnonzero(dead)[0])
        raise ValueError(f"`phi` must leave every node at least one label above -inf; row {u} is all -inf.")
    return arr


def check_potential(potential, n: int, m: int) -> CliquePotential:
    """Check that ``potential`` is a :class:`CliquePotential` defined for ``n`` nodes and ``m`` labels."""
    if not isinstance(potential, CliquePotential):
        raise TypeError(
            "`potential` must be a CliquePotential (Potts, Entropy, Makespan, SquareMakespan, SumPotential, "
            f"MaxPotential, LinearMajority or CountPotential); got {type(potential).__name__}."
        )
    potential.check(n, m)
    return potential


def kernel_args(potential: CliquePotential, n: int, m: int):
    """``(code, table, W)`` for the compiled kernels (dummy (1, 1) arrays where unused)."""
    # fresh writeable C-ordered copies, so that every call hits the same compiled specialization
    dummy = np.zeros((1, 1))
    if potential.family in ("sum", "max"):
        return potential.code, potential.table(n, m), dummy
    if potential.family == "majority":
        return potential.code, dummy, np.array(potential.W, order="C")
    return potential.code, dummy, dummy


def score_parts(phi: np.ndarray, potential: CliquePotential, labels: np.ndarray) -> tuple[float, float]:
    """``(node_score, clique_score)`` of a validated labelling."""
    node = float(phi[np.arange(phi.shape[0]), labels].sum())
    clique = float(potential(np.bincount(labels, minlength=phi.shape[1])))
    return node, clique


def tolerance(phi: np.ndarray, potential: CliquePotential) -> float:
    """Smallest score gain that counts as an improvement in the local-search methods.

    Rounding errors in a score of magnitude ``s`` are about ``n * eps * s``; gains below ``1e-10`` of
    the problem's scale are treated as ties so that no move cycles on rounding noise.
    """
    n, m = phi.shape
    fin = phi[np.isfinite(phi)]
    scale = float(np.abs(fin).max()) * n if fin.size else 0.0
    counts = np.zeros(m, dtype=np.int64)
    counts[0] = n
    c = abs(float(potential(counts)))
    if np.isfinite(c):
        scale += c
    return 1e-10 * (1.0 + scale)


def make_result(phi, potential, labels, method, exact, t0, n_iter=0, converged=True) -> CliqueMAPResult:
    labels = np.asarray(labels, dtype=np.int64)
    node, clique = score_parts(phi, potential, labels)
    return CliqueMAPResult(
        labels=frozen_array(labels),
        score=node + clique,
        node_score=node,
        clique_score=clique,
        method=method,
        exact=bool(exact),
        time=time.perf_counter() - t0,
        n_iter=int(n_iter),
        converged=bool(converged),
    )


def score(phi, potential, labels) -> float:
    """Score ``F(y) = sum_u phi[u, y_u] + C(counts(y))`` of a labelling.

    Parameters
    ----------
    phi : array_like of shape (n, m)
        Node log-potentials (``-inf`` forbids a label).
    potential : CliquePotential
        The clique potential.
    labels : array_like of int, shape (n,)
        A label in ``[0, m)`` for every node.

    Returns
    -------
    float
        The score (``-inf`` when the labelling uses a forbidden label or count).

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.clique import Potts, score
    >>> score(np.array([[1.0, 0.0], [0.0, 2.0]]), Potts(0.5), [0, 0])
    3.0
    """
    phi = check_phi(phi)
    n, m = phi.shape
    potential = check_potential(potential, n, m)
    y = as_index_array(labels, "labels", size=m)
    if y.shape != (n,):
        raise ValueError(f"`labels` must have shape ({n},); got {y.shape}.")
    node, clique = score_parts(phi, potential, y)
    return node + clique
