"""MAP for linear majority potentials (Sec. 3.3 of Gupta, Diwan and Sarawagi, ICML 2007).

``C(n) = sum_y W[a, y] n_y`` with ``a`` the majority label (lowest index among ties). Once the
majority label ``a`` is fixed the potential is a node term, ``phi[u, y] + W[a, y]``.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linear_sum_assignment, milp
from scipy.sparse import eye as speye
from scipy.sparse import kron, vstack

from .._results import COMPLETED, OPTIMAL
from .._validate import as_float_array, check_shape
from ..potentials import LinearMajority
from . import _kernels
from ._result import CliqueMAPResult, make_result
from ._score import score_parts
from ._validate import check_magnitudes, check_phi, tolerance
from .alpha_pass import _pick, _sweep_setup

__all__ = ["majority_alpha_pass", "majority_exact"]


def _check(phi, W):
    """``(phi, W, LinearMajority(W))`` checked: ``W`` (m, m) finite, or a :class:`LinearMajority`."""
    phi = check_phi(phi)
    n, m = phi.shape
    if isinstance(W, LinearMajority):
        W = W.W
    w = as_float_array(W, "W", ndim=2, allow_neginf=False)
    check_shape(w, (m, m), "W")
    check_magnitudes(phi, LinearMajority(w))
    return phi, w, LinearMajority(w)


def _majority_sweeps(phi, W, alphas):
    """Sweeps of the modified alpha-pass for the labels ``alphas``.

    Returns ``(order, in_lab, out_lab, node, valid)``: ``node[p, k]`` is the score of candidate ``k``
    under the potential with majority ``alphas[p]`` (an upper bound on every labelling with
    ``n_alpha = k``), and ``valid[p, k]`` says whether ``alphas[p]`` is indeed the candidate's
    majority, in which case ``node[p, k]`` is its true score.
    """
    n, m = phi.shape
    P = alphas.size
    psi = phi[None, :, :] + W[alphas][:, None, :]  # (P, n, m)
    rows = np.arange(P)
    in_val = psi[rows, :, alphas]  # (P, n)
    masked = psi.copy()
    masked[rows, :, alphas] = -np.inf
    out_lab = np.argmax(masked, axis=2)
    out_val = np.take_along_axis(psi, out_lab[:, :, None], axis=2)[:, :, 0]
    in_lab = np.broadcast_to(alphas[:, None], (P, n)).copy()
    order, in_s, out_s, node, C0 = _sweep_setup(in_lab, out_lab, in_val, out_val, m)
    valid = _kernels.sweep_majority(C0, out_s, in_s) == alphas[:, None]
    return order, in_lab, out_lab, node, valid


def _chunks(n, m):
    per = max(1, (1 << 21) // (n * m))
    return [np.arange(lo, min(m, lo + per)) for lo in range(0, m, per)]


def majority_alpha_pass(phi, W) -> CliqueMAPResult:
    """Modified alpha-pass for linear majority potentials (Sec. 3.3.1 of [1]_).

    For each label alpha the node potentials become ``phi[u, y] + W[alpha, y]``; the nodes are swept
    as in :func:`alpha_pass`, and candidates whose majority label is not alpha are discarded.

    Parameters
    ----------
    phi : array_like of shape (n, m)
        Node log-potentials (``-inf`` forbids a label); ``phi`` is Gupta et al.'s symbol for them.
    W : array_like of shape (m, m) or LinearMajority
        Majority weights, ``C(n) = sum_y W[a, y] n_y`` with ``a = argmax_y n_y``; ``W`` is Gupta et
        al.'s symbol for them.

    Returns
    -------
    CliqueMAPResult
        ``exact`` is True (``status="optimal"``) only for ``m <= 2`` (for ``m > 2`` the ratio can be
        as low as 1/2, Sec. 3.3.1 of [1]_; ``status="completed"``). ``n_iter`` is 0 (a one-pass
        method).

    References
    ----------
    .. [1] R. Gupta, A. A. Diwan and S. Sarawagi. Efficient inference with cardinality-based clique
       potentials. ICML 2007.
    """
    t0 = time.perf_counter()
    phi, W, pot = _check(phi, W)
    return _majority_alpha_pass(phi, W, pot, t0)


def _majority_alpha_pass(phi, W, pot, t0) -> CliqueMAPResult:
    """:func:`majority_alpha_pass` on validated input (``W`` the weights of ``pot``)."""
    n, m = phi.shape
    if m == 1:
        return make_result(phi, pot, np.zeros(n, dtype=np.int64), "majority_alpha_pass", t0, exact=True, status=OPTIMAL)
    best_v, best_lab = -np.inf, None
    for alphas in _chunks(n, m):
        order, in_lab, out_lab, node, valid = _majority_sweeps(phi, W, alphas)
        v, lab = _pick(np.where(valid, node, -np.inf), order, in_lab, out_lab)
        if best_lab is None or v > best_v:
            best_v, best_lab = v, lab
    exact = m <= 2
    return make_result(
        phi, pot, best_lab, "majority_alpha_pass", t0, exact=exact, status=OPTIMAL if exact else COMPLETED
    )


def _caps(m, alpha, k):
    """Label capacities of subproblem ``(alpha, k)``: ``k`` for alpha and higher labels, ``k - 1`` below."""
    cap = np.where(np.arange(m) < alpha, k - 1, k)
    return np.maximum(cap, 0)


def _solve_subproblem_lp(psi, alpha, k):
    """Subproblem ``(alpha, k)`` as a linear program (readable reference of :func:`_solve_subproblem`).

    ``max sum_{u,y} psi[u, y] x[u, y]`` subject to ``sum_y x[u, y] = 1``, ``sum_u x[u, alpha] = k``,
    ``sum_u x[u, y] <= k - 1`` for ``y < alpha`` and ``<= k`` for ``y > alpha``, ``0 <= x <= 1`` and
    ``x[u, y] = 0`` where ``psi`` is ``-inf``. The constraint matrix is the incidence matrix of a
    bipartite graph, so the LP has an integral optimum (Sec. 3.3.2 of [1]); HiGHS solves it, with
    the integrality imposed as well in case the solver stops at a non-vertex optimum. Returns labels
    (n,) or None when infeasible.
    """
    n, m = psi.shape
    finite = np.isfinite(psi).ravel()
    A = vstack(
        [kron(speye(n, format="csr"), np.ones((1, m))), kron(np.ones((1, n)), speye(m, format="csr"))], format="csr"
    )
    cap = _caps(m, alpha, k).astype(np.float64)
    low = np.zeros(m)
    low[alpha] = k
    res = milp(
        c=-np.where(finite, psi.ravel(), 0.0),
        constraints=LinearConstraint(A, np.concatenate([np.ones(n), low]), np.concatenate([np.ones(n), cap])),
        integrality=np.ones(n * m),
        bounds=Bounds(np.zeros(n * m), finite.astype(np.float64)),
    )
    if res.x is None:
        return None
    return np.argmax(res.x.reshape(n, m), axis=1)


def _solve_subproblem(psi, alpha, k):
    """Subproblem ``(alpha, k)`` of :func:`majority_exact` as an assignment problem with label slots.

    Label ``y`` gets ``min(cap_y, n)`` identical slots (``cap`` as in :func:`_solve_subproblem_lp`);
    each node takes one slot (``scipy.optimize.linear_sum_assignment``). The ``k`` slots of alpha
    carry a bonus ``B`` larger than any difference of node scores, so an optimal assignment fills all
    of them whenever that is feasible; forbidden (``-inf``) entries cost more than ``n + 1`` bonuses,
    so they are used only when no feasible assignment exists. The result is checked for both. Returns
    labels (n,) or None when infeasible.
    """
    n, m = psi.shape
    cap = np.minimum(_caps(m, alpha, k), n)
    if cap.sum() < n:
        return None
    slots = np.repeat(np.arange(m), cap)
    fin = np.isfinite(psi)
    scale = float(np.abs(psi[fin]).max()) if fin.any() else 0.0
    bonus = 2.0 * (n * scale + 1.0)
    work = np.where(fin, psi, -bonus * (n + 2))[:, slots]
    work[:, slots == alpha] += bonus
    rows, cols = linear_sum_assignment(work, maximize=True)
    labels = np.empty(n, dtype=np.int64)
    labels[rows] = slots[cols]
    if not fin[np.arange(n), labels].all() or np.count_nonzero(labels == alpha) != k:
        return None
    return labels


def majority_exact(phi, W) -> CliqueMAPResult:
    """Exact MAP for linear majority potentials (Sec. 3.3.2 of [1]_).

    For every majority label ``alpha`` and count ``k = n_alpha`` the best labelling is a
    degree-constrained bipartite matching (nodes to labels, label ``alpha`` used ``k`` times, the
    others at most ``k`` times, or ``k - 1`` for lower labels, which lose ties), solved exactly as an
    assignment problem with label slots (``_solve_subproblem``; the LP of [1]_ in
    ``_solve_subproblem_lp`` is its reference). The subproblems share work: one modified
    alpha-pass sweep per label gives, for every ``k``, the best labelling with ``n_alpha = k`` and no
    other constraint. That value bounds the subproblem
    from above, and when that labelling already has majority ``alpha`` it solves the subproblem. Only
    the remaining subproblems whose bound beats the best labelling found so far reach the solver,
    in decreasing order of their bound.

    Parameters
    ----------
    phi : array_like of shape (n, m)
        Node log-potentials (``-inf`` forbids a label); ``phi`` is Gupta et al.'s symbol for them.
    W : array_like of shape (m, m) or LinearMajority
        Majority weights (Gupta et al.'s symbol), as in :func:`majority_alpha_pass`.

    Returns
    -------
    CliqueMAPResult
        ``exact`` is True, ``status`` ``"optimal"`` and ``n_iter`` 0 (an exact method); ``message``
        says how many matching problems were handed to the solver.

    Notes
    -----
    ``O(n m)`` subproblems at most, each an ``n x O(n)`` assignment problem; the pruning leaves a few
    dozen on the paper's ``n = 100, m = 24`` cliques (about 0.05-0.5 s).

    References
    ----------
    .. [1] R. Gupta, A. A. Diwan and S. Sarawagi. Efficient inference with cardinality-based clique
       potentials. ICML 2007.
    """
    t0 = time.perf_counter()
    phi, W, pot = _check(phi, W)
    return _majority_exact(phi, W, pot, t0)


def _majority_exact(phi, W, pot, t0) -> CliqueMAPResult:
    """:func:`majority_exact` on validated input (``W`` the weights of ``pot``)."""
    n, m = phi.shape
    if m == 1:
        return make_result(phi, pot, np.zeros(n, dtype=np.int64), "majority_exact", t0, exact=True, status=OPTIMAL)
    tol = tolerance(phi, pot)
    best_v, best_lab = -np.inf, None
    bounds = []  # (bound, alpha, k) of the subproblems the sweeps did not settle
    kmin = -(-n // m)  # a majority count is at least ceil(n / m)
    for alphas in _chunks(n, m):
        order, in_lab, out_lab, node, valid = _majority_sweeps(phi, W, alphas)
        v, lab = _pick(np.where(valid, node, -np.inf), order, in_lab, out_lab)
        if best_lab is None or v > best_v:
            best_v, best_lab = v, lab
        open_ = ~valid & np.isfinite(node)
        open_[:, :kmin] = False
        p_idx, k_idx = np.nonzero(open_)
        bounds += list(zip(node[p_idx, k_idx].tolist(), alphas[p_idx].tolist(), k_idx.tolist()))
    bounds.sort(key=lambda t: -t[0])
    solved = 0
    for bound, alpha, k in bounds:
        if bound <= best_v + tol:
            break
        lab = _solve_subproblem(phi + W[alpha][None, :], alpha, k)
        solved += 1
        if lab is None:
            continue
        v = sum(score_parts(phi, pot, lab))
        if v > best_v:
            best_v, best_lab = v, lab
    detail = f"{solved} matching problems solved"
    return make_result(phi, pot, best_lab, "majority_exact", t0, exact=True, status=OPTIMAL, detail=detail)
