"""The objective every clique-MAP method maximizes, ``F(y) = sum_u phi[u, y_u] + C(counts(y))``."""

from __future__ import annotations

import numpy as np

from ..potentials import CliquePotential
from ._validate import check_assignment, check_clique

__all__ = ["score"]


def score_parts(phi: np.ndarray, potential: CliquePotential, assignment: np.ndarray) -> tuple[float, float]:
    """``(node_score, clique_score)`` of a validated labelling."""
    node = float(phi[np.arange(phi.shape[0]), assignment].sum())
    clique = float(potential(np.bincount(assignment, minlength=phi.shape[1])))
    return node, clique


def score(phi, potential, assignment) -> float:
    """Score ``F(y) = sum_u phi[u, y_u] + C(counts(y))`` of a labelling.

    Parameters
    ----------
    phi : array_like of shape (n, m)
        Node log-potentials (``-inf`` forbids a label); ``phi`` is Gupta et al.'s symbol for them.
    potential : CliquePotential
        The clique potential.
    assignment : array_like of int, shape (n,)
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
    phi, potential = check_clique(phi, potential)
    y = check_assignment(assignment, phi)
    node, clique = score_parts(phi, potential, y)
    return node + clique
