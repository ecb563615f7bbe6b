"""Local updates of consensus ADMM for hinge-loss MRFs (Bach et al. 2012, Sec. 3).

Each local problem is

    minimize  f(c·x + b) + (rho / 2) ||x - d||^2   over x in [0, 1]^k

with ``f(s) = w max(s, 0)`` (CO-Linear), ``f(s) = w max(s, 0)^2`` (CO-Quad), or the indicator of
``s <= 0`` / ``s == 0`` (a constraint: Euclidean projection onto a half-space or hyperplane
intersected with the box). By the KKT conditions the minimizer is ``x(lam) = clip(d - lam c)``
for one multiplier ``lam``; ``g(lam) = c·x(lam) + b`` is monotone and piecewise linear, so ``lam``
is found exactly for any arity ``k``:

* hinge: ``clip(d)`` if ``g(0) <= 0`` (clip first), else ``clip(d - (w / rho) c)`` if that lies on
  the linear side, else the root of ``g(lam) = 0`` in ``(0, w / rho)``;
* squared hinge: ``clip(d)`` if ``g(0) <= 0``, else the root of ``g(lam) = lam rho / (2 w)``;
* constraints: ``clip(d)`` if feasible, else the root of ``g(lam) = 0`` (either sign for ``==``).

:func:`local_updates` runs the compiled kernel over a batch of terms; :func:`local_update_reference`
is a slow, readable NumPy version of the same mathematics kept for testing.
"""

from __future__ import annotations

import numpy as np

from .._validate import as_float_array, as_index_array, check_choice, check_finite, check_positive
from . import _kernels

__all__ = ["local_update_reference", "local_updates", "KINDS"]

#: names of the local problem kinds, in the order of their integer codes
KINDS = ("hinge", "squared", "leq", "eq")


def local_update_reference(kind: str, d, c, b: float, weight: float, rho: float) -> np.ndarray:
    """Minimizer of one local problem, computed by enumerating all breakpoints (slow, readable).

    Parameters
    ----------
    kind : {"hinge", "squared", "leq", "eq"}
        The local problem (see the module docstring).
    d, c : ndarray of shape (k,)
        Target point and coefficients.
    b, weight, rho : float
        Constant, weight (ignored for constraints) and ADMM step size.

    Returns
    -------
    ndarray of shape (k,)
    """
    kind = check_choice(kind, "kind", ("hinge", "squared", "leq", "eq"))
    d = as_float_array(d, "d", ndim=1, allow_neginf=False)
    c = as_float_array(c, "c", ndim=1, allow_neginf=False)
    if d.size == 0 or c.shape != d.shape:
        raise ValueError(f"`c` must have the shape of `d` ({d.shape}), at least one entry; got {c.shape}.")
    b = check_finite(b, "b")
    weight = check_positive(weight, "weight", strict=False)
    rho = check_positive(rho, "rho")
    return _local_update_reference(kind, d, c, b, weight, rho)


def _local_update_reference(kind: str, d: np.ndarray, c: np.ndarray, b: float, weight: float, rho: float):
    """:func:`local_update_reference` on validated input."""

    def x_of(lam):
        return np.clip(d - lam * c, 0.0, 1.0)

    def g(lam):
        return float(c @ x_of(lam) + b)

    x1 = x_of(0.0)
    g0 = g(0.0)
    if kind == "eq" and g0 < 0:
        return _local_update_reference("eq", d, -c, -b, weight, rho)
    if g0 <= 0 and kind != "eq":
        return x1
    if g0 == 0 or (kind in ("hinge", "squared") and weight == 0):
        return x1
    if kind == "hinge":
        x2 = x_of(weight / rho)
        if c @ x2 + b >= 0:
            return x2
    inv_kappa = rho / (2 * weight) if kind == "squared" else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        nz = c != 0
        cand = np.concatenate([d[nz] / c[nz], (d[nz] - 1) / c[nz]])
    cand = np.unique(np.concatenate([[0.0], cand[cand > 0]]))
    F = np.array([g(t) - inv_kappa * t for t in cand])
    if np.all(F > 0):
        if inv_kappa == 0:
            return np.where(c > 0, 0.0, np.where(c < 0, 1.0, x1))  # hyperplane misses the box
        # beyond the last breakpoint g is constant
        return x_of(g(cand[-1] + 1.0) / inv_kappa)
    j = int(np.argmax(F <= 0))
    t0, t1 = cand[j - 1], cand[j]
    lam = t0 + F[j - 1] * (t1 - t0) / (F[j - 1] - F[j])  # F is linear on [t0, t1]
    return x_of(lam)


def _check_term_batch(kind, indptr, coefficients, constants, weights, vec, vec_name: str):
    """Validate a batch of terms in CSR form plus one per-entry vector (``d`` or ``y``).

    Returns ``(indptr, coefficients, vec, constants, weights, codes)`` as arrays for the kernels,
    ``codes`` the int8 index of each term's kind in :data:`KINDS`.
    """
    indptr = as_index_array(indptr, "indptr")
    coefficients = as_float_array(coefficients, "coefficients", ndim=1, allow_neginf=False)
    vec = as_float_array(vec, vec_name, ndim=1, allow_neginf=False)
    n_terms = indptr.size - 1
    constants = as_float_array(constants, "constants", ndim=1, allow_neginf=False)
    weights = as_float_array(weights, "weights", ndim=1, allow_neginf=False)
    if isinstance(kind, str):
        kind = [kind] * n_terms
    for k in set(kind):
        check_choice(k, "kind", KINDS)
    codes = np.array([KINDS.index(k) for k in kind], dtype=np.int8)
    if (
        indptr.size < 1
        or indptr[0] != 0
        or np.any(np.diff(indptr) < 0)
        or indptr[-1] != coefficients.size
        or vec.size != coefficients.size
        or constants.size != n_terms
        or weights.size != n_terms
        or codes.size != n_terms
    ):
        raise ValueError(
            f"`indptr`, `coefficients`, `{vec_name}`, `constants`, `weights` and `kind` have inconsistent sizes."
        )
    return indptr, coefficients, vec, constants, weights, codes


def local_updates(kind, indptr, coefficients, constants, weights, d, *, rho: float = 1.0) -> np.ndarray:
    """Solve a batch of local problems with the compiled kernel.

    Parameters
    ----------
    kind : str or array_like of str of shape (n_terms,)
        Kind of each term, one of ``"hinge"``, ``"squared"``, ``"leq"``, ``"eq"``.
    indptr : array_like of shape (n_terms + 1,)
        Term ``t`` owns the entries ``indptr[t]:indptr[t + 1]`` of ``coefficients`` and ``d``.
    coefficients, d : array_like of shape (nnz,)
        Coefficients ``c`` and target points ``d`` of all terms, concatenated.
    constants, weights : array_like of shape (n_terms,)
        Constants ``b`` and weights ``w`` (ignored for constraints).
    rho : float
        ADMM step size.

    Returns
    -------
    ndarray of shape (nnz,)
        The minimizers, concatenated like ``d``.
    """
    rho = check_positive(rho, "rho")
    indptr, coefficients, d, constants, weights, codes = _check_term_batch(
        kind, indptr, coefficients, constants, weights, d, "d"
    )
    out = np.empty_like(d)
    _kernels.batch_local_updates(indptr, coefficients, constants, weights, codes, d, rho, out)
    return out
