"""Repair of approximately feasible ADMM answers (Bach et al. 2012, Sec. 4.3)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validate import as_float_array
from . import _kernels
from .model import HLMRF

__all__ = ["project_feasible"]

#: violation accepted from the projection itself (float rounding of the exact projection)
_TOL = 1e-9


def project_feasible(model: HLMRF, x) -> np.ndarray:
    """A feasible point near ``x``: fixed values restored, box and constraints satisfied.

    When every free variable occurs in at most one constraint (e.g. the simplex constraints
    ``X_L + X_C <= 1`` of the opinion-diffusion models) this is the exact Euclidean projection onto
    the feasible set, computed constraint by constraint with the same kernel as the ADMM updates.
    Otherwise the constraints interact and the point returned is the nearest feasible point in the
    L1 norm, found by HiGHS (``min sum |x' - x|`` subject to the constraints).

    Parameters
    ----------
    model : HLMRF
    x : array_like of shape (n_variables,)

    Returns
    -------
    ndarray of shape (n_variables,)

    Raises
    ------
    ValueError
        If the model's constraints admit no point in the box.
    """
    if not isinstance(model, HLMRF):
        raise TypeError(f"`model` must be an HLMRF; got {type(model).__name__}.")
    x = as_float_array(x, "x", ndim=1, allow_neginf=False)
    if x.shape != (model.n_variables,):
        raise ValueError(f"`x` must have shape ({model.n_variables},); got {x.shape}.")
    comp = model._compile()
    xf = np.clip(x[comp.free], 0.0, 1.0)
    rows = np.flatnonzero(comp.kind >= _kernels.KIND_LEQ)
    out = comp.x_fixed.copy()
    if rows.size:
        starts, ends = comp.indptr[rows], comp.indptr[rows + 1]
        lengths = ends - starts
        sel = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(lengths.sum())
        cidx = comp.idx[sel]
        if np.bincount(cidx, minlength=xf.size).max() <= 1:
            indptr = np.concatenate([[0], np.cumsum(lengths)])
            proj = np.empty(cidx.size)
            _kernels.batch_local_updates(
                indptr, comp.coef[sel], comp.const[rows], comp.weight[rows], comp.kind[rows], xf[cidx], 1.0, proj
            )
            xf[cidx] = proj
        else:
            xf = _l1_nearest(comp, rows, xf)
    out[comp.free] = xf
    if model.n_constraints and model.constraint_violations(out).max() > _TOL * max(1.0, np.abs(comp.coef).max()):
        raise ValueError("`model` is infeasible: its constraints admit no point in [0, 1]^n.")
    return out


def _l1_nearest(comp, rows, xf):
    from scipy.optimize import linprog

    n = xf.size
    a = sp.csr_matrix((comp.coef, comp.idx, comp.indptr), shape=(comp.indptr.size - 1, n))
    leq = rows[comp.kind[rows] == _kernels.KIND_LEQ]
    eq = rows[comp.kind[rows] == _kernels.KIND_EQ]
    eye = sp.identity(n, format="csr")
    # variables [x', u]: u >= x' - x, u >= x - x'
    a_ub = sp.vstack(
        [sp.hstack([eye, -eye]), sp.hstack([-eye, -eye]), sp.hstack([a[leq], sp.csr_matrix((leq.size, n))])],
        format="csr",
    )
    b_ub = np.concatenate([xf, -xf, -comp.const[leq]])
    a_eq = b_eq = None
    if eq.size:
        a_eq = sp.hstack([a[eq], sp.csr_matrix((eq.size, n))], format="csr")
        b_eq = -comp.const[eq]
    bounds = np.column_stack([np.zeros(2 * n), np.concatenate([np.ones(n), np.full(n, np.inf)])])
    res = linprog(
        np.concatenate([np.zeros(n), np.ones(n)]),
        A_ub=a_ub,
        b_ub=b_ub,
        A_eq=a_eq,
        b_eq=b_eq,
        bounds=bounds,
        method="highs",
    )
    if res.status == 2:
        raise ValueError("`model` is infeasible: its constraints admit no point in [0, 1]^n.")
    if res.status != 0:  # pragma: no cover - numerical trouble in HiGHS
        raise RuntimeError(f"HiGHS failed to repair the point: {res.message}")
    return np.clip(res.x[:n], 0.0, 1.0)
