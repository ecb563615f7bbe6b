"""alpha-expansion for SUM clique potentials without graph cuts (Sec. 3.2.1 of Gupta et al., ICML 2007).

Each move (expand label alpha) is solved optimally: for every other label ``i`` the nodes labelled
``i`` are sorted by ``phi[u, alpha] - phi[u, i]``; an optimal move switches a top prefix of each
list, and the prefix lengths come from a dynamic program over the labels
(``_kernels.expansion_move``). Before the program, each label's share of the move is capped: the
last node switched from a label must not lower the score, given the largest gain one more node can
bring to alpha, and iterating this bound shrinks the program (tenfold when the labelling is split
between many labels) without excluding an optimal move (``_kernels._prune_caps``; finite input).
The search (``_kernels.expansion_search``) runs the moves in one compiled loop and stops once ``m``
moves in a row have failed.
"""

from __future__ import annotations

import time

import numpy as np

from .._results import CONVERGED, MAX_ITER_REACHED
from .._validate import check_int
from . import _kernels
from ._result import CliqueMAPResult, make_result
from ._validate import check_clique, check_init, tolerance

__all__ = ["alpha_expansion"]

_NONE = np.zeros(0, dtype=np.int64)  # no labelling known to be a local optimum


def _expansion_move_python(phi, labels, alpha, table):
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
        to, frm = phi[idx, alpha], phi[idx, i]
        with np.errstate(invalid="ignore"):  # a forbidden target never moves first (no inf - inf)
            key = np.where(to == -np.inf, -np.inf, np.where(frm == -np.inf, np.inf, to - frm))
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


def alpha_expansion(phi, potential, *, init=None, max_iter: int = 100) -> CliqueMAPResult:
    """Local search by optimal alpha-expansion moves, for SUM potentials.

    Parameters
    ----------
    phi : array_like of shape (n, m)
        Node log-potentials (``-inf`` forbids a label); ``phi`` is Gupta et al.'s symbol for them.
    potential : CliquePotential
        A SUM-family potential (:class:`Potts`, :class:`Entropy`, :class:`SumPotential`).
    init : array_like of int, shape (n,), optional
        Starting labelling; by default each node's best label ``argmax_y phi[u, y]``.
    max_iter : int, default 100
        Most rounds over the ``m`` labels; the search stops earlier, as soon as ``m`` moves in a row
        have changed nothing (a move is taken only when it raises the score by more than a rounding
        tolerance), which is usually part-way through the round after the last change.

    Returns
    -------
    CliqueMAPResult
        ``n_iter`` is the number of rounds begun; ``status`` is ``"converged"`` when every label's
        move failed on the final labelling, else ``"max_iter_reached"`` with ``converged=False`` and a
        :class:`~tractable.ConvergenceWarning`. ``exact`` is False (unless ``m == 1``): expansion is a
        local search, whose ratio can approach 1/2 even for Potts potentials (Thm 3.6 of [1]_).

    Raises
    ------
    ValueError
        If ``potential`` is not in the SUM family.

    Notes
    -----
    Each move costs ``O(n^2 + n m)`` (no graph cut), a round ``m`` moves; the whole search runs in
    one compiled loop (``_kernels.expansion_search``).

    References
    ----------
    .. [1] R. Gupta, A. A. Diwan and S. Sarawagi. Efficient inference with cardinality-based clique
       potentials. ICML 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.clique import Potts, alpha_expansion
    >>> phi = np.array([[1.0, 0.0], [0.0, 0.2], [0.0, 0.3]])
    >>> res = alpha_expansion(phi, Potts(0.5))
    >>> res.assignment.tolist(), res.score, res.status, res.n_iter
    ([0, 0, 0], 5.5, 'converged', 2)
    """
    t0 = time.perf_counter()
    phi, potential = check_clique(phi, potential)
    if potential.family != "sum":
        raise ValueError(
            "`potential` must be a SUM potential (Potts, Entropy or SumPotential) for alpha_expansion; "
            f"got {potential!r}."
        )
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    labels = check_init(init, phi)
    return _alpha_expansion(phi, potential, labels, max_iter, t0)


def _alpha_expansion(phi, potential, labels, max_iter, t0) -> CliqueMAPResult:
    """:func:`alpha_expansion` on validated input (a SUM potential; ``labels`` (n,) int64, writeable)."""
    n, m = phi.shape
    table = potential.table(n, m)
    tol = tolerance(phi, potential)
    rounds, converged, _ = _kernels.expansion_search(phi, labels, table, tol, max_iter, _NONE, -1, -1)
    return _expansion_result(phi, potential, labels, rounds, converged, t0)


def _expansion_result(phi, potential, labels, rounds, converged, t0) -> CliqueMAPResult:
    """The result of an expansion search that ended after ``rounds`` rounds (``converged`` or not)."""
    exact = phi.shape[1] == 1
    if converged:
        return make_result(phi, potential, labels, "alpha_expansion", t0, exact=exact, status=CONVERGED, n_iter=rounds)
    return make_result(
        phi,
        potential,
        labels,
        "alpha_expansion",
        t0,
        exact=exact,
        status=MAX_ITER_REACHED,
        n_iter=rounds,
        detail="moves still improving the score; raise `max_iter`",
    )
