"""Argument checks, the evidence feature map and the L-BFGS outcome shared by the CRFs and the structure
learners (one set of messages for every estimator of :mod:`tractable.crf`).

Every feature of the propositional CRFs is an indicator of the labels times one evidence feature
vector ``phi(E)`` (the logistic-regression style of Chechetka & Guestrin 2010, Eq. 9):

* unary: ``f_{i,a,d}(Y, E) = [y_i = a] * phi_d(E)``,
* pairwise: ``f_{ij,a,b,d}(Y, E) = [y_i = a, y_j = b] * phi_d(E)``.

``phi`` is the evidence standardized with the training mean and standard deviation (the default), or
a user's callable ``features(E) -> (n, D)``; a constant 1 (the bias) is prepended for the CRFs.
"""

from __future__ import annotations

import contextlib
import numbers
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._results import ERROR, MAX_ITER_REACHED, stop_message, warn_stopped
from .._validate import _describe, as_float_array

__all__ = [
    "EvidenceMap",
    "check_C",
    "check_evidence",
    "check_labels",
    "check_max_iter",
    "check_n_states",
    "check_no_y",
    "check_rows",
    "check_tol",
    "lbfgs_outcome",
    "one_blas_thread",
]


def check_C(C, name: str = "C") -> float:
    """The inverse regularization strength: a finite number > 0."""
    if isinstance(C, bool) or not isinstance(C, numbers.Real) or not (0 < C < np.inf):
        raise ValueError(f"`{name}` must be a finite number > 0; got {_describe(C)}.")
    return float(C)


def check_max_iter(value, name: str = "max_iter") -> int:
    """An iteration budget: an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"`{name}` must be an integer >= 1; got {_describe(value)}.")
    return int(value)


def check_tol(tol, name: str = "tol") -> float:
    """A convergence tolerance: a finite number > 0."""
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not (0 < tol < np.inf):
        raise ValueError(f"`{name}` must be a finite number > 0; got {_describe(tol)}.")
    return float(tol)


def check_no_y(y, method: str) -> None:
    """``y`` of a relational estimator's ``fit`` / ``score``: accepted for scikit-learn, must be None (the
    labels are part of the graphs)."""
    if y is not None:
        raise ValueError(f"`y` must be None ({method} reads the labels of the graphs); got {_describe(y)}.")


def lbfgs_outcome(res, what: str, *, stacklevel: int = 4) -> tuple[bool, int]:
    """``(converged, n_iter)`` of a scipy L-BFGS-B result; issues the library's ConvergenceWarning when it
    did not converge (``what`` names the fit in the message, e.g. ``"TreeCRF: L-BFGS-B"``)."""
    converged = bool(res.status == 0)
    n_iter = int(res.nit)
    if not converged:
        status = MAX_ITER_REACHED if res.status == 1 else ERROR
        detail = f"{res.message}; raise `max_iter` or `tol`"
        warn_stopped(stop_message(status, what, n_iter, detail), stacklevel=stacklevel)
    return converged, n_iter


def check_evidence(E, name: str = "E", *, n_features: int | None = None) -> np.ndarray:
    """``E`` as a finite ``(n, d)`` float64 array (a new array); with ``n_features``, ``d`` must match."""
    arr = np.asarray(E)
    if arr.ndim != 2:
        raise ValueError(f"`{name}` must be a 2-D array (rows are examples); got {_describe(E)}.")
    arr = as_float_array(arr, name, ndim=2, allow_neginf=False)
    if arr.shape[0] == 0:
        raise ValueError(f"`{name}` must have at least one row; got shape {arr.shape}.")
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(f"`{name}` must have {n_features} columns (as in fit); got {arr.shape[1]}.")
    return arr


def check_n_states(n_states, name: str = "n_states") -> int | None:
    """``None`` or an integer >= 2."""
    if n_states is None:
        return None
    if isinstance(n_states, bool) or not isinstance(n_states, numbers.Integral):
        raise ValueError(f"`{name}` must be None or an integer >= 2; got {_describe(n_states)}.")
    if n_states < 2:
        raise ValueError(f"`{name}` must be None or an integer >= 2; got {int(n_states)}.")
    return int(n_states)


def check_labels(Y, n_states: int | None, name: str = "Y", *, n_labels: int | None = None) -> tuple[np.ndarray, int]:
    """``Y`` as an ``(n, N)`` int64 array of labels in ``[0, n_states)``; returns it and ``n_states``.

    With ``n_states=None`` the number of states is ``max(2, Y.max() + 1)``.
    """
    arr = np.asarray(Y)
    if arr.dtype.kind not in "biuf":  # complex, object, str: never cast silently
        raise TypeError(f"`{name}` must be an array of integer labels; got {_describe(Y)} (dtype {arr.dtype}).")
    if arr.ndim != 2:
        raise ValueError(f"`{name}` must be a 2-D array of labels (rows are examples); got {_describe(Y)}.")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"`{name}` must have at least one row and one column; got shape {arr.shape}.")
    if n_labels is not None and arr.shape[1] != n_labels:
        raise ValueError(f"`{name}` must have {n_labels} columns (as in fit); got {arr.shape[1]}.")
    if arr.dtype == bool:
        arr = arr.astype(np.int64)
    elif not np.issubdtype(arr.dtype, np.integer):
        try:
            flt = arr.astype(np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(f"`{name}` must contain integer labels; got {_describe(Y)}.") from err
        bad = ~np.isfinite(flt) | (flt != np.round(flt))
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"`{name}` must contain integer labels; got {float(flt[at])!r} at index {at}.")
        arr = flt
    arr = arr.astype(np.int64)
    top = int(arr.max()) + 1
    k = max(2, top) if n_states is None else n_states
    bad = (arr < 0) | (arr >= k)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"`{name}` must contain labels in [0, {k - 1}]; got {int(arr[at])} at index {at}.")
    return arr, k


def check_rows(E: np.ndarray, Y: np.ndarray, e_name: str = "E", y_name: str = "Y") -> None:
    """``E`` and ``Y`` describe the same examples."""
    if E.shape[0] != Y.shape[0]:
        raise ValueError(
            f"`{e_name}` and `{y_name}` must have the same number of rows; got {E.shape[0]} and {Y.shape[0]}."
        )


def check_features(features, name: str = "features") -> Callable | None:
    if features is not None and not callable(features):
        raise ValueError(f"`{name}` must be None or a callable E -> (n, D) array; got {_describe(features)}.")
    return features


@dataclass(frozen=True)
class EvidenceMap:
    """The fitted evidence feature map ``E -> phi(E)`` (``(n, D)``, bias column first when ``bias``)."""

    features: Callable | None
    mean: np.ndarray | None
    scale: np.ndarray | None
    bias: bool

    @classmethod
    def fit(cls, E: np.ndarray, features: Callable | None, *, bias: bool) -> EvidenceMap:
        if features is not None:
            return cls(features, None, None, bias)
        mean = E.mean(axis=0)
        scale = E.std(axis=0)
        scale[scale == 0] = 1.0
        return cls(None, mean, scale, bias)

    def transform(self, E: np.ndarray) -> np.ndarray:
        if self.features is None:
            phi = (E - self.mean) / self.scale
        else:
            out = self.features(E)
            phi = as_float_array(out, "features(E)", allow_neginf=False)
            if phi.ndim != 2 or phi.shape[0] != E.shape[0]:
                raise ValueError(
                    f"`features(E)` must return an array of shape ({E.shape[0]}, D); got shape {phi.shape}."
                )
        if self.bias:
            phi = np.concatenate([np.ones((phi.shape[0], 1)), phi], axis=1)
        return np.ascontiguousarray(phi)


def one_blas_thread():
    """Run BLAS single-threaded: the products are small and many, and threads only contend
    (``threadpoolctl`` comes with scikit-learn; without it this does nothing)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
