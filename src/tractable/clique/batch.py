"""alpha-pass over a stack of cliques in one call (batch inference).

Many small problems of the same shape (a clique MAP per document, per image region) pay Python's
per-call overhead once per problem when solved one by one. :func:`alpha_pass_batch` takes a stack
``phi`` of shape (B, n, m), all with the same clique potential, and solves all of them in one call:

* SUM, MAX and majority potentials: the compiled alpha-pass (``_kernels.pass_labels``, which
  :func:`~tractable.clique.alpha_pass` runs on a stack of one) loops over the stack, so every
  labelling is the one :func:`~tractable.clique.alpha_pass` returns for that clique, bit for bit.
* any other potential (:class:`~tractable.clique.CountPotential`, negative-``lam`` makespans): the
  array form of alpha-pass with the sweeps of several cliques stacked, ``B m`` sweeps of ``n + 1``
  candidates whose count vectors the potential evaluates in one batched call per chunk; each clique's
  best candidate is the first maximum over (label, k), the tie-breaking of the per-clique version.

Scores are computed for the whole stack at once (node scores by a gather and a row sum, clique
scores by one batched call of the potential on the (B, m) count vectors).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._results import COMPLETED, OPTIMAL, Result, frozen_array, stop_message
from .._validate import as_float_array
from ..potentials import CliquePotential
from . import _kernels
from ._validate import check_magnitudes, check_potential, kernel_args
from .alpha_pass import _sweep_setup, _sweep_values_python

__all__ = ["CliqueMAPBatch", "alpha_pass_batch"]

# sweeps of a general potential are evaluated in chunks of about this many (sweep, node, label) entries
_CHUNK = 1 << 22


@dataclass(frozen=True)
class CliqueMAPBatch(Result):
    """Labellings of a stack of cliques and their scores (one row per clique).

    Attributes
    ----------
    assignment : ndarray of shape (B, n), int64
        The label of every node of every clique (read-only).
    score : ndarray of shape (B,)
        ``node_score + clique_score`` per clique (read-only).
    node_score : ndarray of shape (B,)
        ``sum_u phi[b, u, assignment[b, u]]`` (read-only).
    clique_score : ndarray of shape (B,)
        ``potential(counts(assignment[b]))`` (read-only).
    method : str
        ``"alpha_pass"``.
    exact : bool
        True when alpha-pass is exact for the potential (MAX family, or ``m <= 2``).
    time : float
        Wall-clock seconds for the whole stack.
    converged : bool
        Always True (one-pass method).
    n_iter : int
        Sweeps per clique, ``m`` (0 when ``m = 1``).
    status : str
        ``"optimal"`` when ``exact``, else ``"completed"``.
    message : str
        A one-line account.
    """

    assignment: np.ndarray
    score: np.ndarray
    node_score: np.ndarray
    clique_score: np.ndarray
    exact: bool

    def __len__(self) -> int:
        return int(self.assignment.shape[0])


def check_phi_stack(phi) -> np.ndarray:
    """Validate a stack of node potentials: (B, n, m) float, no NaN / +inf, every node with a label.

    Returns a new C-ordered float64 array.
    """
    arr = as_float_array(phi, "phi", ndim=3)
    _, n, m = arr.shape
    if n < 1 or m < 1:
        raise ValueError(f"`phi` must have shape (B, n, m) with n >= 1 and m >= 1; got {arr.shape}.")
    dead = np.all(np.isneginf(arr), axis=2)
    if dead.any():
        b, u = (int(i) for i in np.argwhere(dead)[0])
        raise ValueError(
            f"`phi` must leave every node at least one label above -inf; clique {b}, node {u} is all -inf."
        )
    return np.ascontiguousarray(arr)


def alpha_pass_batch(phi, potential) -> CliqueMAPBatch:
    """alpha-pass MAP labellings of a stack of cliques that share one clique potential.

    Parameters
    ----------
    phi : array_like of shape (B, n, m)
        Node log-potentials of ``B`` cliques of ``n`` nodes and ``m`` labels (``-inf`` forbids a
        label; every node needs one finite entry). ``B = 0`` is allowed.
    potential : CliquePotential
        The clique potential shared by all cliques.

    Returns
    -------
    CliqueMAPBatch
        Row ``b`` holds what :func:`~tractable.clique.alpha_pass` returns for ``phi[b]``: the same
        labelling, and its scores (equal up to the summation order of the node scores).

    Raises
    ------
    ValueError, TypeError
        ``phi`` is not a 3-D real array, contains NaN or ``+inf``, has a node with every label
        forbidden, or ``potential`` is not a :class:`CliquePotential` valid for ``n`` and ``m``.

    Notes
    -----
    Same cost per clique as :func:`~tractable.clique.alpha_pass`; the per-call overhead (validation,
    dispatch, result building) is paid once per stack.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.clique import Potts, alpha_pass, alpha_pass_batch
    >>> phi = np.random.default_rng(0).normal(size=(4, 6, 3))
    >>> res = alpha_pass_batch(phi, Potts(0.3))
    >>> res.assignment.shape, res.score.shape
    ((4, 6), (4,))
    >>> bool((res.assignment[2] == alpha_pass(phi[2], Potts(0.3)).assignment).all())
    True
    """
    t0 = time.perf_counter()
    phi = check_phi_stack(phi)
    potential = check_potential(potential, *phi.shape[1:])
    check_magnitudes(phi, potential)
    return _alpha_pass_batch(phi, potential, t0)


def _alpha_pass_batch(phi: np.ndarray, potential: CliquePotential, t0: float) -> CliqueMAPBatch:
    """:func:`alpha_pass_batch` on validated input (C-ordered float64 (B, n, m))."""
    B, n, m = phi.shape
    if m == 1 or B == 0:
        labels = np.zeros((B, n), dtype=np.int64)
    else:
        kargs = kernel_args(potential, n, m)
        if kargs[0] == _kernels.KIND_GENERAL:
            labels = _general_stack(phi, potential, kargs)
        else:
            labels = _kernels.pass_labels(phi, *kargs, 0)
    exact = potential.family == "max" or m <= 2
    status = OPTIMAL if exact else COMPLETED
    n_iter = 0 if m == 1 else m  # one sweep per label; a single label needs none
    with np.errstate(over="ignore", invalid="ignore"):  # refused just below
        node, clique = _score_stack(phi, potential, labels)
    bad = ~(node + clique < np.inf)
    if bad.any():  # +inf or NaN: a potential (e.g. a CountPotential) beyond float64's range
        b = int(np.flatnonzero(bad)[0])
        raise ValueError(
            "`phi` and `potential` must keep the labellings' scores within float64's range (about 1.8e308); got a "
            f"score of {float(node[b] + clique[b])!r} for clique {b}: rescale them."
        )
    return CliqueMAPBatch(
        assignment=frozen_array(labels),
        score=frozen_array(node + clique),
        node_score=frozen_array(node),
        clique_score=frozen_array(clique),
        method="alpha_pass",
        exact=exact,
        time=time.perf_counter() - t0,
        n_iter=n_iter,
        status=status,
        message=stop_message(status, "alpha_pass", n_iter, f"{B} cliques"),
    )


def _score_stack(phi, potential, labels) -> tuple[np.ndarray, np.ndarray]:
    """Node and clique scores (B,) of validated labellings (B, n)."""
    B, n, m = phi.shape
    if B == 0:
        return np.zeros(0), np.zeros(0)
    node = np.take_along_axis(phi, labels[:, :, None], axis=2)[:, :, 0].sum(axis=1)
    counts = np.zeros((B, m), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(B), n), labels.ravel()), 1)
    clique = np.asarray(potential(counts), dtype=np.float64).reshape(B)
    return node, clique


def _general_stack(phi, potential, kargs) -> np.ndarray:
    """alpha-pass of a potential without a kernel, the sweeps of many cliques stacked; (B, n) labels."""
    B, n, m = phi.shape
    cols = np.arange(n)
    alphas = np.arange(m)
    out = np.empty((B, n), dtype=np.int64)
    per = max(1, _CHUNK // (n * m * m))
    for lo in range(0, B, per):
        blk = phi[lo : lo + per]
        nb = blk.shape[0]
        # best and second-best label of each node, with the first-maximum tie-breaking of np.argmax
        b1 = np.argmax(blk, axis=2)
        masked = blk.copy()
        np.put_along_axis(masked, b1[:, :, None], -np.inf, axis=2)
        b2 = np.argmax(masked, axis=2)
        in_lab = np.broadcast_to(alphas[None, :, None], (nb, m, n)).reshape(nb * m, n).copy()
        out_lab = np.where(b1[:, None, :] == alphas[None, :, None], b2[:, None, :], b1[:, None, :]).reshape(nb * m, n)
        rows = np.repeat(np.arange(nb), m)
        in_val = blk[rows[:, None], cols[None, :], in_lab]
        out_val = blk[rows[:, None], cols[None, :], out_lab]
        order, in_s, out_s, node, C0 = _sweep_setup(in_lab, out_lab, in_val, out_val, m)
        total = (node + _sweep_values_python(C0, out_s, in_s, potential)).reshape(nb, m * (n + 1))
        best = np.argmax(total, axis=1)
        a, k = np.divmod(best, n + 1)
        p = np.arange(nb) * m + a
        # rank of every node in its winning sweep; the top k take the sweep's in-label
        rank = np.empty((nb, n), dtype=np.int64)
        np.put_along_axis(rank, order[p], np.broadcast_to(cols, (nb, n)), axis=1)
        out[lo : lo + nb] = np.where(rank < k[:, None], in_lab[p], out_lab[p])
    return out
