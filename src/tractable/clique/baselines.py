"""Iterated conditional modes (ICM), the baseline of Sec. 4.2 of Gupta et al. (ICML 2007).

Each node in turn takes the label that maximizes its node potential plus the clique potential with
the other labels held fixed; sweeps repeat until one changes nothing.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .._results import ConvergenceWarning
from .._validate import check_int, check_rng
from . import _kernels
from ._result import CliqueMAPResult, check_phi, check_potential, kernel_args, make_result, tolerance
from .expansion import check_init

__all__ = ["icm", "icm_sweep_python"]


def icm_sweep_python(phi, labels, counts, order, potential, tol) -> int:
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
        vals = phi[u] + np.asarray(potential(cand), dtype=np.float64)
        best = int(np.argmax(vals))
        if best != cur and vals[best] > vals[cur] + tol:
            labels[u] = best
            counts += eye[best] - eye[cur]
            changed += 1
    return changed


def icm(phi, potential, init=None, max_sweeps: int = 100, rng=None) -> CliqueMAPResult:
    """MAP labelling by iterated conditional modes.

    Parameters
    ----------
    phi : array_like of shape (n, m)
        Node log-potentials (``-inf`` forbids a label).
    potential : CliquePotential
        Any clique potential (SUM, MAX and majority potentials run in a compiled loop; a
        :class:`CountPotential` is called once per node visit with the ``m`` candidate count vectors).
    init : array_like of int, shape (n,), optional
        Starting labelling; by default each node's best label.
    max_sweeps : int, default 100
        Most sweeps over the nodes.
    rng : None, int or numpy.random.Generator
        Order of the nodes in each sweep (a fresh random permutation per sweep).

    Returns
    -------
    CliqueMAPResult
        ``n_iter`` sweeps; ``converged`` False (with a ``ConvergenceWarning``) when the last sweep
        still changed a label. ``exact`` is False unless ``m == 1``.
    """
    t0 = time.perf_counter()
    phi = check_phi(phi)
    n, m = phi.shape
    potential = check_potential(potential, n, m)
    max_sweeps = check_int(max_sweeps, "max_sweeps", minimum=1)
    gen = check_rng(rng)
    labels = check_init(init, phi)
    counts = np.bincount(labels, minlength=m).astype(np.int64)
    code, table, W = kernel_args(potential, n, m)
    tol = tolerance(phi, potential)
    converged = False
    sweeps = 0
    while sweeps < max_sweeps:
        sweeps += 1
        order = gen.permutation(n)
        if code == 3:
            changed = icm_sweep_python(phi, labels, counts, order, potential, tol)
        else:
            changed = _kernels.icm_sweep(phi, labels, counts, order, code, table, W, tol)
        if changed == 0:
            converged = True
            break
    if not converged:
        warnings.warn(f"icm stopped after `max_sweeps`={max_sweeps} sweeps with labels still changing; "
                      "raise `max_sweeps`.", ConvergenceWarning, stacklevel=2)
    return make_result(phi, potential, labels, "icm", m == 1, t0, n_iter=sweeps, converged=converged)
