"""Iterated conditional modes (ICM), the baseline of Sec. 4.2 of Gupta et al. (ICML 2007).

Each node in turn takes the label that maximizes its node potential plus the clique potential with
the other labels held fixed; sweeps repeat until one changes nothing.
"""

from __future__ import annotations

import time

import numpy as np

from .._results import CONVERGED, MAX_ITER_REACHED
from .._validate import check_int, check_rng
from . import _kernels
from ._result import CliqueMAPResult, make_result
from ._validate import check_clique, check_init, check_values, kernel_args, tolerance

__all__ = ["icm"]


def _icm_sweep_python(phi, labels, counts, order, potential, tol) -> int:
    """One ICM sweep, in place on ``labels`` and ``counts`` (readable reference; any potential).

    Same contract as ``_kernels.icm_sweep``; the ``m`` candidate count vectors of a node are
    evaluated in one batched call.
    """
    m = phi.shape[1]
    changed = 0
    eye = np.eye(m, dtype=np.int64)
    for u in order:
        cur = labels[u]
        cand = counts - eye[cur] + eye  # (m, m): row y = counts with u relabelled y
        vals = phi[u] + check_values(potential(cand), potential)
        best = int(np.argmax(vals))
        if best != cur and vals[best] > vals[cur] + tol:
            labels[u] = best
            counts += eye[best] - eye[cur]
            changed += 1
    return changed


def icm(phi, potential, *, init=None, max_iter: int = 100, rng=None) -> CliqueMAPResult:
    """MAP labelling by iterated conditional modes.

    Parameters
    ----------
    phi : array_like of shape (n, m)
        Node log-potentials (``-inf`` forbids a label); ``phi`` is Gupta et al.'s symbol for them.
    potential : CliquePotential
        Any clique potential (SUM, MAX and majority potentials run in a compiled loop; a
        :class:`CountPotential` is called once per node visit with the ``m`` candidate count vectors).
    init : array_like of int, shape (n,), optional
        Starting labelling; by default each node's best label.
    max_iter : int, default 100
        Most sweeps over the nodes.
    rng : None, int or numpy.random.Generator
        Order of the nodes in each sweep (a fresh random permutation per sweep).

    Returns
    -------
    CliqueMAPResult
        ``n_iter`` sweeps; ``status`` is ``"converged"`` when the last sweep changed no label, else
        ``"max_iter_reached"`` with ``converged=False`` and a :class:`~tractable.ConvergenceWarning`.
        ``exact`` is False unless ``m == 1``.

    Examples
    --------
    ICM stops at a local optimum: every node on label 1 (score 5.0), where every node on label 0
    scores 5.5 (:func:`alpha_expansion` finds it).

    >>> import numpy as np
    >>> from tractable.clique import Potts, icm
    >>> phi = np.array([[1.0, 0.0], [0.0, 0.2], [0.0, 0.3]])
    >>> res = icm(phi, Potts(0.5), rng=0)
    >>> res.assignment.tolist(), res.score, res.status, res.n_iter
    ([1, 1, 1], 5.0, 'converged', 2)
    """
    t0 = time.perf_counter()
    phi, potential = check_clique(phi, potential)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    gen = check_rng(rng)
    labels = check_init(init, phi)
    return _icm(phi, potential, labels, max_iter, gen, t0)


def _icm(phi, potential, labels, max_iter, gen, t0) -> CliqueMAPResult:
    """:func:`icm` on validated input; ``labels`` (n,) int64 is the start, modified in place."""
    n, m = phi.shape
    kargs = kernel_args(potential, n, m)
    sweeps, converged = _icm_labels(phi, potential, labels, max_iter, gen, kargs, tolerance(phi, potential))
    if converged:
        return make_result(phi, potential, labels, "icm", t0, exact=m == 1, status=CONVERGED, n_iter=sweeps)
    return make_result(
        phi,
        potential,
        labels,
        "icm",
        t0,
        exact=m == 1,
        status=MAX_ITER_REACHED,
        n_iter=sweeps,
        detail="labels still changing; raise `max_iter`",
    )


def _icm_labels(phi, potential, labels, max_iter, gen, kargs, tol) -> tuple[int, bool]:
    """ICM sweeps in place on ``labels`` (n,) int64; returns ``(sweeps, converged)``.

    ``kargs`` is ``kernel_args(potential, n, m)`` and ``tol`` is ``tolerance(phi, potential)``; each
    sweep visits the nodes in the order ``gen.permutation(n)``.
    """
    n, m = phi.shape
    counts = np.bincount(labels, minlength=m).astype(np.int64)
    kind, table, W = kargs
    sweeps = 0
    while sweeps < max_iter:
        sweeps += 1
        order = gen.permutation(n)
        if kind == _kernels.KIND_GENERAL:
            changed = _icm_sweep_python(phi, labels, counts, order, potential, tol)
        else:
            changed = _kernels.icm_sweep(phi, labels, counts, order, kind, table, W, tol)
        if changed == 0:
            return sweeps, True
    return sweeps, False
