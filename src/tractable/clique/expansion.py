"""alpha-expansion for SUM clique potentials without graph cuts (Sec. 3.2.1 of Gupta et al., ICML 2007).

Each move (expand label alpha) is solved optimally: for every other label ``i`` the nodes labelled
``i`` are sorted by ``phi[u, alpha] - phi[u, i]``; an optimal move switches a top prefix of each
list, and the prefix lengths come from a dynamic program over the labels
(``_kernels.expansion_move``).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .._results import ConvergenceWarning
from .._validate import as_index_array, check_int
from . import _kernels
from ._result import CliqueMAPResult, check_phi, check_potential, make_result, tolerance

__all__ = ["alpha_expansion", "expansion_move_python"]


def check_init(init, phi: np.ndarray) -> np.ndarray:
    """Initial labelling: ``None`` gives each node its best label; else an (n,) array of labels."""
    n, m = phi.shape
    if init is None:
        return np.argmax(phi, axis=1).astype(np.int64)
    y = as_index_array(init, "init", size=m)
    if y.shape != (n,):
        raise ValueError(f"`init` must have shape ({n},); got {y.shape}.")
    return y.copy()


def expansion_move_python(phi, labels, alpha, table):
    """Best alpha-expansion move by enumeration over the numbers of nodes switched (readable reference).

    Tries every vector ``(k_i)`` of switched counts per label, which is exponential in ``m``; only
    for checking :func:`_kernels.expansion_move` on tiny cliques. Returns the best value and labels.
    """
    import itertools

    n, m = phi.shape
    groups = {}
    for i in range(m):
        if i == alpha:
            continue
        idx = np.flatnonzero(labels == i)
        key = np.array([_kernels._move_key(phi[u, alpha], phi[u, i]) for u in idx])
        groups[i] = idx[np.argsort(-key, kind="stable")]
    best_v, best = -np.inf, labels.copy()
    for ks in itertools.product(*[range(len(g) + 1) for g in groups.values()]):
        y = labels.copy()
        for (_, g), k in zip(groups.items(), ks):
            y[g[:k]] = alpha
        counts = np.bincount(y, minlength=m)
        v = phi[np.arange(n), y].sum() + table[np.arange(m), counts].sum()
        if v > best_v:
            best_v, best = v, y
    return best_v, best


def alpha_expansion(phi, potential, init=None, max_rounds: int = 100) -> CliqueMAPResult:
    """Local search by optimal alpha-expansion moves, for SUM potentials.

    Parameters
    ----------
    phi : array_like of shape (n, m)
        Node log-potentials (``-inf`` forbids a label).
    potential : CliquePotential
        A SUM-family potential (:class:`Potts`, :class:`Entropy`, :class:`SumPotential`).
    init : array_like of int, shape (n,), optional
        Starting labelling; by default each node's best label ``argmax_y phi[u, y]``.
    max_rounds : int, default 100
        Most rounds over the ``m`` labels; the search stops earlier when a whole round changes
        nothing (a move is taken only when it raises the score by more than a rounding tolerance).

    Returns
    -------
    CliqueMAPResult
        ``n_iter`` is the number of rounds; ``converged`` is False (with a ``ConvergenceWarning``)
        when ``max_rounds`` ran out. ``exact`` is False (unless ``m == 1``): expansion is a local
        search, whose ratio can approach 1/2 even for Potts potentials (Thm 3.6 of [1]_).

    Raises
    ------
    ValueError
        If ``potential`` is not in the SUM family.

    Notes
    -----
    Each move costs ``O(n^2 + n m)`` (no graph cut), a round ``m`` moves.

    References
    ----------
    .. [1] R. Gupta, A. A. Diwan and S. Sarawagi. Efficient inference with cardinality-based clique
       potentials. ICML 2007.
    """
    t0 = time.perf_counter()
    phi = check_phi(phi)
    n, m = phi.shape
    potential = check_potential(potential, n, m)
    if potential.family != "sum":
        raise ValueError(
            "`potential` must be a SUM potential (Potts, Entropy or SumPotential) for alpha_expansion; "
            f"got {potential!r}."
        )
    max_rounds = check_int(max_rounds, "max_rounds", minimum=1)
    labels = check_init(init, phi)
    table = potential.table(n, m)
    tol = tolerance(phi, potential)
    converged = False
    rounds = 0
    while rounds < max_rounds:
        rounds += 1
        changed = False
        for alpha in range(m):
            labels, moved = _kernels.expansion_move(phi, labels, alpha, table, tol)
            changed |= moved
        if not changed:
            converged = True
            break
    if not converged:
        warnings.warn(f"alpha_expansion stopped after `max_rounds`={max_rounds} rounds with moves still improving "
                      "the score; raise `max_rounds`.", ConvergenceWarning, stacklevel=2)
    return make_result(phi, potential, labels, "alpha_expansion", m == 1, t0, n_iter=rounds, converged=converged)
