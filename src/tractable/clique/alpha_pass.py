"""alpha-pass and generalized alpha-pass (Sec. 3.1 and 3.2.2 of Gupta, Diwan and Sarawagi, ICML 2007).

For a label alpha, sort the nodes by ``phi[u, alpha] - max_{y != alpha} phi[u, y]`` and sweep
``k = 0..n``: the top ``k`` nodes take alpha, the others their best other label. Every candidate
has the best node score among labellings with ``k`` nodes labelled alpha (Claim 3.1), so the best
candidate over all ``(alpha, k)`` is the MAP for MAX potentials (Thm 3.1) and for any potential when
``m = 2``, and a 13/15-approximation for Potts potentials (Thm 3.4). The generalized version sweeps
label subsets ``A`` of size ``<= p`` instead of single labels (ratio ``4p / (4p + 1)``, Thm 3.7).

Implementation: for the SUM, MAX and majority families one compiled loop
(``_kernels.pass_labels``, which also sweeps the label pairs of ``p = 2``, and ``subset_pass_labels``
for ``p >= 3``) sorts each sweep and walks it, updating two counts per step (and the SUM potential
in O(1)). For a :class:`CountPotential` all sweeps are built as arrays of shape (passes, n): the node
score of candidate ``k`` is a prefix sum plus a suffix sum, and the potential is evaluated in one
batched call on the (passes, n + 1, m) count vectors. The array version is also the tested reference
of the compiled one.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from .._results import COMPLETED, OPTIMAL
from .._validate import check_int
from ..potentials import CliquePotential
from . import _kernels
from ._result import CliqueMAPResult, make_result
from ._validate import check_clique, check_values, kernel_args

__all__ = ["alpha_pass", "generalized_alpha_pass"]

# passes per chunk are chosen so that one chunk holds about this many (pass, node) entries
_CHUNK = 1 << 21


def _keys(in_val: np.ndarray, out_val: np.ndarray) -> np.ndarray:
    """``in_val - out_val`` without ``inf - inf``: a forbidden in-label sorts last, a forbidden out-label first."""
    with np.errstate(invalid="ignore"):
        d = in_val - out_val
    d = np.where(np.isneginf(out_val), np.inf, d)
    return np.where(np.isneginf(in_val), -np.inf, d)


def _sweep_values_python(C0: np.ndarray, frm: np.ndarray, to: np.ndarray, potential: CliquePotential) -> np.ndarray:
    """Clique values along sweeps by batched evaluation of the count vectors (readable reference).

    Same contract as ``_kernels.sweep_values``: ``C0`` (P, m), ``frm``/``to`` (P, n) -> (P, n + 1).
    """
    P, n = frm.shape
    m = C0.shape[1]
    steps = np.zeros((P, n + 1, m), dtype=np.int64)
    rows = np.repeat(np.arange(P), n)
    ks = np.tile(np.arange(1, n + 1), P)
    np.add.at(steps, (rows, ks, to.ravel()), 1)
    np.add.at(steps, (rows, ks, frm.ravel()), -1)
    counts = C0[:, None, :] + np.cumsum(steps, axis=1)
    return check_values(potential(counts), potential).reshape(P, n + 1)


def _sweep_setup(in_lab, out_lab, in_val, out_val, m):
    """Sort the sweeps and return ``(order, in_s, out_s, node, C0)``.

    Inputs are (P, n): the label and value a node takes inside the sweep's set and outside it.
    ``order`` sorts each sweep by decreasing gain; ``in_s``/``out_s`` are the labels in that order;
    ``node`` (P, n + 1) is the node score of candidate ``k`` (top ``k`` inside); ``C0`` (P, m) are the
    counts of candidate 0.
    """
    P, n = in_lab.shape
    order = np.argsort(-_keys(in_val, out_val), axis=1, kind="stable")
    in_s = np.take_along_axis(in_lab, order, axis=1)
    out_s = np.take_along_axis(out_lab, order, axis=1)
    node = np.zeros((P, n + 1))
    np.cumsum(np.take_along_axis(in_val, order, axis=1), axis=1, out=node[:, 1:])
    # suffix sums of the out-values; cumulative sums of -inf stay -inf, so no inf - inf arises
    node[:, :n] += np.cumsum(np.take_along_axis(out_val, order, axis=1)[:, ::-1], axis=1)[:, ::-1]
    C0 = np.bincount((out_lab + m * np.arange(P)[:, None]).ravel(), minlength=P * m).reshape(P, m)
    return order, in_s, out_s, node, C0


def _pick(total, order, in_lab, out_lab):
    """Best candidate ``(value, labels)`` of a (P, n + 1) table of candidate scores."""
    n = order.shape[1]
    p, k = divmod(int(np.argmax(total)), n + 1)
    labels = out_lab[p].copy()
    top = order[p, :k]
    labels[top] = in_lab[p, top]
    return float(total[p, k]), labels


def _best_of_sweeps(phi, potential, kargs, in_lab, out_lab):
    """Best candidate of the sweeps given by in/out labels (P, n); returns (value, labels)."""
    n, m = phi.shape
    cols = np.arange(n)
    order, in_s, out_s, node, C0 = _sweep_setup(in_lab, out_lab, phi[cols, in_lab], phi[cols, out_lab], m)
    kind, table, W = kargs
    if kind == _kernels.KIND_GENERAL:
        clique = _sweep_values_python(C0, out_s, in_s, potential)
    else:
        clique = _kernels.sweep_values(C0, out_s, in_s, kind, table, W)
    return _pick(node + clique, order, in_lab, out_lab)


def _trivial(phi, potential, method, t0) -> CliqueMAPResult:
    return make_result(phi, potential, np.zeros(phi.shape[0], dtype=np.int64), method, t0, exact=True, status=OPTIMAL)


def _finish(phi, potential, labels, method, t0, n_iter) -> CliqueMAPResult:
    """Result of a pass: exact (``"optimal"``) for MAX potentials and ``m <= 2``, else ``"completed"``."""
    exact = potential.family == "max" or phi.shape[1] <= 2
    return make_result(
        phi, potential, labels, method, t0, exact=exact, status=OPTIMAL if exact else COMPLETED, n_iter=n_iter
    )


def alpha_pass(phi, potential) -> CliqueMAPResult:
    """MAP labelling of a clique by alpha-pass.

    Parameters
    ----------
    phi : array_like of shape (n, m)
        Node log-potentials; ``-inf`` forbids a label (every node needs one finite entry). ``phi`` is
        Gupta et al.'s symbol for them.
    potential : CliquePotential
        Any clique potential. MAX-family potentials (:class:`MaxPotential`, :class:`Makespan`,
        :class:`SquareMakespan` with ``lam >= 0``) and every potential with ``m <= 2`` are solved
        exactly.

    Returns
    -------
    CliqueMAPResult
        ``exact`` is True (``status="optimal"``) for the MAX family and for ``m <= 2``; otherwise
        ``status`` is ``"completed"``. ``n_iter`` is the number of sweeps, ``m``.

    Notes
    -----
    ``O(n m log n)`` for the sorts plus ``O(n m^2)`` for the clique values (``O(n m^2)`` batched
    calls for a :class:`CountPotential`). For Potts potentials with ``lam > 0`` the score is at least
    13/15 of the optimum (Thm 3.4 of [1]_).

    References
    ----------
    .. [1] R. Gupta, A. A. Diwan and S. Sarawagi. Efficient inference with cardinality-based clique
       potentials. ICML 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.clique import Makespan, alpha_pass
    >>> phi = np.array([[1.0, 0.0], [0.0, 0.4], [0.0, 0.3]])
    >>> res = alpha_pass(phi, Makespan(1.0))
    >>> res.assignment.tolist(), round(res.score, 6), res.exact, res.status
    ([0, 0, 0], 4.0, True, 'optimal')
    """
    t0 = time.perf_counter()
    phi, potential = check_clique(phi, potential)
    return _alpha_pass(phi, potential, t0)


def _alpha_pass(phi, potential, t0) -> CliqueMAPResult:
    """:func:`alpha_pass` on validated input."""
    n, m = phi.shape
    if m == 1:
        return _trivial(phi, potential, "alpha_pass", t0)
    kargs = kernel_args(potential, n, m)
    if kargs[0] == _kernels.KIND_GENERAL:
        best_lab = _alpha_pass_arrays(phi, potential, kargs)
    else:
        best_lab = _kernels.alpha_pass_labels(phi, *kargs)
    return _finish(phi, potential, best_lab, "alpha_pass", t0, m)


def _alpha_pass_arrays(phi, potential, kargs):
    """alpha-pass with all sweeps as arrays (any potential; the reference of ``_kernels.alpha_pass_labels``)."""
    n, m = phi.shape
    b1 = np.argmax(phi, axis=1)
    masked = phi.copy()
    masked[np.arange(n), b1] = -np.inf
    b2 = np.argmax(masked, axis=1)
    best_v, best_lab = -np.inf, None
    per = max(1, _CHUNK // (n * (m if kargs[0] == _kernels.KIND_GENERAL else 1)))
    for lo in range(0, m, per):
        alphas = np.arange(lo, min(m, lo + per))
        in_lab = np.broadcast_to(alphas[:, None], (alphas.size, n)).copy()
        out_lab = np.where(b1[None, :] == alphas[:, None], b2[None, :], b1[None, :])
        v, lab = _best_of_sweeps(phi, potential, kargs, in_lab, out_lab)
        if best_lab is None or v > best_v:
            best_v, best_lab = v, lab
    return best_lab


def _label_subsets(m: int, p: int) -> np.ndarray:
    """All label subsets of size 1..min(p, m - 1), padded with ``m``; shape (n_subsets, min(p, m - 1))."""
    s = min(p, m - 1)
    rows = [c + (m,) * (s - len(c)) for r in range(1, s + 1) for c in itertools.combinations(range(m), r)]
    return np.array(rows, dtype=np.int64).reshape(-1, s)


def _generalized_arrays(phi, potential, kargs, S):
    """Generalized alpha-pass with the sweeps as arrays (any potential; the reference of
    ``_kernels.subset_pass_labels``)."""
    n, m = phi.shape
    s = S.shape[1]
    phi_ext = np.concatenate([phi, np.full((n, 1), -np.inf)], axis=1)
    top = np.argsort(-phi, axis=1, kind="stable")[:, : s + 1]  # best out-label is among the top s + 1
    best_v, best_lab = -np.inf, None
    per = max(1, _CHUNK // (n * (s + 1) * (m if kargs[0] == _kernels.KIND_GENERAL else 1)))
    for lo in range(0, S.shape[0], per):
        sub = S[lo : lo + per]
        vals = phi_ext[:, sub]  # (n, P, s)
        in_lab = np.take_along_axis(sub[None], np.argmax(vals, axis=2)[:, :, None], axis=2)[:, :, 0].T
        member = (top[:, None, :, None] == sub[None, :, None, :]).any(axis=3)  # (n, P, s + 1)
        first_out = np.argmax(~member, axis=2)  # (n, P)
        out_lab = np.take_along_axis(top, first_out, axis=1).T
        v, lab = _best_of_sweeps(phi, potential, kargs, np.ascontiguousarray(in_lab), np.ascontiguousarray(out_lab))
        if best_lab is None or v > best_v:
            best_v, best_lab = v, lab
    return best_lab


def generalized_alpha_pass(phi, potential, *, p: int = 2) -> CliqueMAPResult:
    """MAP labelling of a clique by generalized alpha-pass over label subsets of size ``<= p``.

    For every label subset ``A`` with ``|A| <= p``, sort the nodes by
    ``max_{a in A} phi[u, a] - max_{y not in A} phi[u, y]``, and for every ``k`` give the top ``k``
    nodes their best label in ``A`` and the others their best label outside ``A`` (Sec. 3.2.2 of [1]_).

    Parameters
    ----------
    phi : array_like of shape (n, m)
        Node log-potentials (``-inf`` forbids a label); ``phi`` is Gupta et al.'s symbol for them.
    potential : CliquePotential
        Any clique potential.
    p : int, default 2
        Largest subset size (``p >= 1``; ``p = 1`` is :func:`alpha_pass`).

    Returns
    -------
    CliqueMAPResult
        Never worse than :func:`alpha_pass`; ``exact`` and ``status`` as for :func:`alpha_pass`.
        ``n_iter`` is the number of sweeps (label subsets).

    Notes
    -----
    ``O(n m^p log n)``. For Potts potentials with ``lam > 0`` the score is at least ``4p / (4p + 1)``
    of the optimum (Thm 3.7 of [1]_; 8/9 for ``p = 2``).

    References
    ----------
    .. [1] R. Gupta, A. A. Diwan and S. Sarawagi. Efficient inference with cardinality-based clique
       potentials. ICML 2007.
    """
    t0 = time.perf_counter()
    p = check_int(p, "p", minimum=1)
    phi, potential = check_clique(phi, potential)
    return _generalized_alpha_pass(phi, potential, p, t0)


def _generalized_alpha_pass(phi, potential, p, t0) -> CliqueMAPResult:
    """:func:`generalized_alpha_pass` on validated input."""
    n, m = phi.shape
    if m == 1:
        return _trivial(phi, potential, "generalized_alpha_pass", t0)
    kargs = kernel_args(potential, n, m)
    S = _label_subsets(m, p)
    if kargs[0] == _kernels.KIND_GENERAL:
        best_lab = _generalized_arrays(phi, potential, kargs, S)
    elif S.shape[1] == 2:  # p = 2: the same sweeps without a sort per subset
        best_lab = _kernels.pair_pass_labels(phi, *kargs, m)
    else:
        best_lab = _kernels.subset_pass_labels(phi, S, *kargs)
    return _finish(phi, potential, best_lab, "generalized_alpha_pass", t0, S.shape[0])
