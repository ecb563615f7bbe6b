"""Exact clique MAP by enumeration of count vectors (the reference of Sec. 3 of Gupta et al., ICML 2007).

Every labelling has a count vector, a composition of ``n`` into ``m`` non-negative parts. For a fixed
count vector the best node score is an assignment problem: ``n`` nodes to ``n`` label slots,
``counts[y]`` slots of label ``y``. Enumerating all ``C(n + m - 1, m - 1)`` compositions is
``O(n^{m-1})`` and meant for small cliques and as a test oracle.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
from scipy.optimize import linear_sum_assignment

from .._results import OPTIMAL
from .._validate import check_int
from ._result import CliqueMAPResult, make_result
from ._validate import check_clique, check_values

__all__ = ["compositions", "exact_clique_map", "n_compositions"]


def n_compositions(n: int, m: int) -> int:
    """Number of count vectors of ``n`` nodes over ``m`` labels, ``C(n + m - 1, m - 1)``."""
    return math.comb(n + m - 1, m - 1)


def compositions(n: int, m: int) -> np.ndarray:
    """All count vectors of ``n`` nodes over ``m`` labels, shape (n_compositions(n, m), m), int64."""
    if m == 1:
        return np.array([[n]], dtype=np.int64)
    total = n + m - 1
    bars = np.array(list(itertools.combinations(range(total), m - 1)), dtype=np.int64).reshape(-1, m - 1)
    edges = np.concatenate([np.full((bars.shape[0], 1), -1), bars, np.full((bars.shape[0], 1), total)], axis=1)
    return np.diff(edges, axis=1) - 1


def exact_clique_map(phi, potential, *, max_compositions: int = 200_000) -> CliqueMAPResult:
    """Exact MAP labelling of a clique for any count-based potential, by enumeration.

    Parameters
    ----------
    phi : array_like of shape (n, m)
        Node log-potentials (``-inf`` forbids a label); ``phi`` is Gupta et al.'s symbol for them.
    potential : CliquePotential
        Any clique potential.
    max_compositions : int, default 200000
        Largest number of count vectors to enumerate.

    Returns
    -------
    CliqueMAPResult
        ``exact`` is True, ``status`` ``"optimal"`` and ``n_iter`` 0 (an exact method); ``message``
        says how many assignment problems were solved.

    Raises
    ------
    ValueError
        If ``C(n + m - 1, m - 1)`` exceeds ``max_compositions``.

    Notes
    -----
    Count vectors are visited in decreasing order of ``C(counts) + sum_u max_y phi[u, y]``, an upper
    bound on their best score, and the search stops when that bound cannot beat the best score
    found; each visit solves one assignment problem (``scipy.optimize.linear_sum_assignment``).
    """
    t0 = time.perf_counter()
    phi, potential = check_clique(phi, potential)
    n, m = phi.shape
    max_compositions = check_int(max_compositions, "max_compositions", minimum=1)
    count = n_compositions(n, m)
    if count > max_compositions:
        raise ValueError(
            f"`phi` of shape ({n}, {m}) has {count} count vectors, more than `max_compositions`={max_compositions}; "
            "enumeration is only for small cliques (raise the limit, or use an approximate method)."
        )
    return _exact_clique_map(phi, potential, t0)


def _exact_clique_map(phi, potential, t0) -> CliqueMAPResult:
    """:func:`exact_clique_map` on validated input (no limit on the number of count vectors)."""
    n, m = phi.shape
    comps = compositions(n, m)
    cvals = check_values(potential(comps), potential).reshape(-1)
    node_ub = float(np.max(phi, axis=1).sum())
    order = np.argsort(-cvals, kind="stable")
    fin = phi[np.isfinite(phi)]
    # a stand-in for -inf that no optimal assignment picks while a finite one exists
    big = 2.0 * (n * float(np.abs(fin).max()) + 1.0)
    work = np.where(np.isfinite(phi), phi, -big)
    best_v, best_lab = -np.inf, np.argmax(phi, axis=1)
    solved = 0
    rows = np.arange(n)
    for i in order:
        c = cvals[i]
        if c == -np.inf or c + node_ub <= best_v:
            break
        slots = np.repeat(np.arange(m), comps[i])
        r, col = linear_sum_assignment(work[:, slots], maximize=True)
        solved += 1
        lab = np.empty(n, dtype=np.int64)
        lab[r] = slots[col]
        v = float(phi[rows, lab].sum()) + c
        if v > best_v:
            best_v, best_lab = v, lab
    detail = f"{solved} of {comps.shape[0]} count vectors solved as assignment problems"
    return make_result(phi, potential, best_lab, "exact", t0, exact=True, status=OPTIMAL, detail=detail)
