"""Clique potentials that depend only on the label counts of a clique (the model layer: ``CliqueFactor``
scores with them, ``tractable.clique`` solves with them and exports them).

A clique of ``n`` nodes takes labels in ``{0, ..., m-1}``; its potential is a function
``C(n_0, ..., n_{m-1})`` of the count vector. Every potential here is an object that is called on a
batch of count vectors, ``potential(counts)`` with ``counts`` of shape ``(..., m)``, and returns the
values of shape ``(...)``. Scores are maximized: ``F(y) = sum_u phi[u, y_u] + C(counts(y))``.

The families of [1]_ (Sec. 3) are

* MAX: ``C = max_y f_y(n_y)`` (:class:`MaxPotential`, :class:`Makespan`, :class:`SquareMakespan`),
* SUM: ``C = sum_y f_y(n_y)`` (:class:`SumPotential`, :class:`Potts`, :class:`Entropy`),
* MAJORITY: ``C = sum_y W[a, y] n_y`` with ``a`` the majority label (:class:`LinearMajority`),

and :class:`CountPotential` wraps any function of the counts.

References
----------
.. [1] R. Gupta, A. A. Diwan and S. Sarawagi. Efficient inference with cardinality-based clique
   potentials. ICML 2007.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from scipy.special import xlogy

from ._validate import as_float_array, check_finite

__all__ = [
    "CliquePotential",
    "CountPotential",
    "Entropy",
    "LinearMajority",
    "Makespan",
    "MaxPotential",
    "Potts",
    "SquareMakespan",
    "SumPotential",
]


def _as_counts(counts) -> np.ndarray:
    c = np.asarray(counts)
    if c.ndim == 0:
        raise ValueError(f"`counts` must have shape (..., m); got a scalar {c!r}.")
    if not np.issubdtype(c.dtype, np.integer):
        if not (np.issubdtype(c.dtype, np.floating) and np.all(c == np.round(c))):
            raise TypeError(f"`counts` must contain integers; got dtype {c.dtype}.")
        c = c.astype(np.int64)
    if c.size and c.min() < 0:
        raise ValueError(f"`counts` must be non-negative; got {int(c.min())}.")
    return c


class CliquePotential(ABC):
    """Base class of the count-based clique potentials.

    Subclasses set ``family`` (``"sum"``, ``"max"``, ``"majority"`` or ``"general"``) and implement
    ``_value(counts)`` on validated integer counts of shape ``(..., m)``. The SUM and MAX families
    also implement ``_table(n, m)``: the per-label functions ``f_y(k)`` as an array of shape
    ``(m, n + 1)``.
    """

    family: str = "general"

    def __call__(self, counts) -> np.ndarray | float:
        """Evaluate the potential on count vectors.

        Parameters
        ----------
        counts : array_like of int, shape (..., m)
            Label counts (each row sums to the clique size).

        Returns
        -------
        ndarray of shape (...) or float
            The potential values (a float for a single count vector).
        """
        c = _as_counts(counts)
        self.check(int(c.sum(axis=-1).max()) if c.size else 0, c.shape[-1])
        out = np.asarray(self._value(c), dtype=np.float64)
        return float(out) if out.ndim == 0 else out

    def check(self, n: int, m: int) -> None:  # noqa: B027 - a hook: most potentials accept any n, m
        """Raise ``ValueError`` unless the potential is defined for ``n`` nodes and ``m`` labels."""

    def table(self, n: int, m: int) -> np.ndarray:
        """Per-label functions ``f_y(k)``, shape ``(m, n + 1)`` (SUM and MAX families only)."""
        if self.family not in ("sum", "max"):
            raise ValueError(f"`potential` {self!r} is not a SUM or MAX potential; it has no per-label table.")
        self.check(n, m)
        return np.array(self._table(n, m), dtype=np.float64, order="C")  # a fresh writeable copy

    @abstractmethod
    def _value(self, c: np.ndarray) -> np.ndarray:
        """The potential on validated integer counts of shape ``(..., m)``."""

    def _table(self, n: int, m: int) -> np.ndarray:
        """Per-label functions of the SUM and MAX families (overridden there); see :meth:`table`."""
        raise ValueError(f"`potential` {self!r} has no per-label table.")


class _Scaled(CliquePotential):
    """A potential with one real parameter ``lam``."""

    def __init__(self, lam: float) -> None:
        self.lam = check_finite(lam, "lam")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.lam!r})"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.lam == self.lam

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.lam))


class Potts(_Scaled):
    """Homogeneous Potts clique potential ``C = lam * sum_y n_y**2`` (SUM family).

    A clique whose every edge scores ``2 * lam`` when its two ends agree has the potential
    ``2 * lam * #(equal pairs) = lam * sum_y n_y**2 - lam * n``, i.e. this one up to a constant [1]_.
    With ``lam > 0`` MAP inference is NP-hard (Thm 3.2 of [1]_).
    """

    family = "sum"

    def _value(self, c):
        return self.lam * np.sum(c.astype(np.float64) ** 2, axis=-1)

    def _table(self, n, m):
        k = np.arange(n + 1, dtype=np.float64)
        return np.broadcast_to(self.lam * k**2, (m, n + 1))


class Entropy(_Scaled):
    """Negative-entropy clique potential ``C = lam * sum_y n_y log n_y`` with ``0 log 0 = 0`` (SUM family)."""

    family = "sum"

    def _value(self, c):
        c = c.astype(np.float64)
        return self.lam * np.sum(xlogy(c, c), axis=-1)

    def _table(self, n, m):
        k = np.arange(n + 1, dtype=np.float64)
        return np.broadcast_to(self.lam * xlogy(k, k), (m, n + 1))


class Makespan(_Scaled):
    """Linear makespan ``C = lam * max_y n_y``.

    For ``lam >= 0`` this is ``max_y f_y(n_y)`` with ``f_y(k) = lam * k`` (MAX family, solved exactly by
    alpha-pass); for ``lam < 0`` it is ``lam * max_y n_y = min_y lam * n_y``, which is not a MAX
    potential, so the family is then ``"general"``.
    """

    def __init__(self, lam: float) -> None:
        super().__init__(lam)
        self.family = "max" if self.lam >= 0 else "general"

    def _value(self, c):
        return self.lam * np.max(c, axis=-1).astype(np.float64)

    def _table(self, n, m):
        k = np.arange(n + 1, dtype=np.float64)
        return np.broadcast_to(self.lam * k, (m, n + 1))


class SquareMakespan(_Scaled):
    """Square makespan ``C = lam * max_y n_y**2`` (MAX family for ``lam >= 0``, see :class:`Makespan`)."""

    def __init__(self, lam: float) -> None:
        super().__init__(lam)
        self.family = "max" if self.lam >= 0 else "general"

    def _value(self, c):
        return self.lam * np.max(c, axis=-1).astype(np.float64) ** 2

    def _table(self, n, m):
        k = np.arange(n + 1, dtype=np.float64)
        return np.broadcast_to(self.lam * k**2, (m, n + 1))


class _Tabled(CliquePotential):
    """A potential given by per-label tables ``table[y, k] = f_y(k)``."""

    def __init__(self, table) -> None:
        t = as_float_array(table, "table", ndim=2)
        if t.shape[0] < 1 or t.shape[1] < 1:
            raise ValueError(f"`table` must have shape (m, n + 1) with m >= 1 and n >= 0; got {t.shape}.")
        t.flags.writeable = False
        self._tab = t

    @property
    def f(self) -> np.ndarray:
        """The read-only table ``f[y, k]``, shape ``(m, K)``."""
        return self._tab

    def __repr__(self) -> str:
        return f"{type(self).__name__}(table of shape {self._tab.shape})"

    def check(self, n, m):
        mt, kt = self._tab.shape
        if mt != m or kt < n + 1:
            raise ValueError(
                f"`potential.table` must have shape ({m}, >= {n + 1}) for a clique of {n} nodes and {m} labels; "
                f"got {self._tab.shape}."
            )

    def _gather(self, c):
        return self._tab[np.arange(c.shape[-1]), c]

    def _table(self, n, m):
        return self._tab[:, : n + 1]


class SumPotential(_Tabled):
    """SUM potential ``C = sum_y f_y(n_y)`` with ``f_y(k) = table[y, k]``.

    Parameters
    ----------
    table : array_like of shape (m, K)
        ``K >= n + 1`` for a clique of ``n`` nodes. Entries may be ``-inf`` (forbidden counts).
    """

    family = "sum"

    def _value(self, c):
        return np.sum(self._gather(c), axis=-1)


class MaxPotential(_Tabled):
    """MAX potential ``C = max_y f_y(n_y)`` with ``f_y(k) = table[y, k]`` (see :class:`SumPotential`)."""

    family = "max"

    def _value(self, c):
        return np.max(self._gather(c), axis=-1)


class LinearMajority(CliquePotential):
    """Linear majority potential ``C = sum_y W[a, y] n_y`` with ``a = argmax_y n_y``.

    Ties for the majority go to the lowest label index.

    Parameters
    ----------
    W : array_like of shape (m, m)
        Finite weights; need be neither symmetric nor diagonally dominant.
    """

    family = "majority"

    def __init__(self, W) -> None:
        w = as_float_array(W, "W", ndim=2, allow_neginf=False)
        if w.shape[0] != w.shape[1] or w.shape[0] < 1:
            raise ValueError(f"`W` must be a square (m, m) array; got shape {w.shape}.")
        w.flags.writeable = False
        self.W = w

    def __repr__(self) -> str:
        return f"LinearMajority(W of shape {self.W.shape})"

    def check(self, n, m):
        if self.W.shape != (m, m):
            raise ValueError(f"`potential.W` must have shape ({m}, {m}) for {m} labels; got {self.W.shape}.")

    def _value(self, c):
        a = np.argmax(c, axis=-1)
        return np.sum(self.W[a] * c, axis=-1)


class CountPotential(CliquePotential):
    """Any function of the count vector.

    Parameters
    ----------
    fn : callable
        ``fn(counts)`` with ``counts`` an int array of shape ``(..., m)`` returns values of shape
        ``(...)``. A function that handles only one count vector (shape ``(m,)``) also works; it is
        then applied row by row, which is slower.
    """

    family = "general"

    def __init__(self, fn) -> None:
        if not callable(fn):
            raise TypeError(f"`fn` must be callable; got {type(fn).__name__}.")
        self.fn = fn

    def __repr__(self) -> str:
        return f"CountPotential({getattr(self.fn, '__name__', 'fn')})"

    def _value(self, c):
        batch = c.shape[:-1]
        try:
            out = np.asarray(self.fn(c), dtype=np.float64)
            ok = out.shape == batch
        except Exception:  # a function written for one count vector may fail on a batch
            ok = False
        if not ok:
            flat = c.reshape(-1, c.shape[-1])
            out = np.array([float(self.fn(row)) for row in flat], dtype=np.float64).reshape(batch)
        if np.isnan(out).any() or np.isposinf(out).any():
            i = np.flatnonzero(np.isnan(out) | np.isposinf(out))[0]
            bad = c.reshape(-1, c.shape[-1])[i]
            raise ValueError(
                f"`potential` must return finite values or -inf; got {float(out.ravel()[i])} for counts {bad.tolist()}."
            )
        return out
