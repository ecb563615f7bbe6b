"""Hinge-loss Markov random fields: the model object.

An :class:`HLMRF` has variables ``x`` in ``[0, 1]^n``, potentials ``w_j max(c_j·x + b_j, 0)^p_j``
(``w_j >= 0``, ``p_j`` in {1, 2}) and linear constraints ``a_k·x + b_k (<=, ==, >=) 0``; MPE inference
minimizes the weighted sum of potentials subject to the constraints (Bach et al. 2012, Eq. 1).

Terms are stored as flat CSR-like arrays (one row per potential or constraint: ``indptr``, variable
indices, coefficients). Single terms added with :meth:`HLMRF.add_potential` are validated on the
spot and concatenated lazily; :meth:`HLMRF.add_potentials` / :meth:`HLMRF.add_constraints` take whole
CSR blocks and validate them with a few vectorized checks, so millions of terms build in seconds.
"""

from __future__ import annotations

import os
import zipfile
import zlib
from dataclasses import dataclass, replace

import numpy as np

from .._results import frozen_array
from .._validate import as_float_array, as_index_array, check_choice, check_finite, check_int, check_memory
from . import _kernels

__all__ = ["HLMRF", "SENSES", "FILE_FORMAT", "FILE_VERSION"]

#: constraint senses, in the order of their integer codes in saved files
SENSES = ("<=", "==", ">=")
#: identifier and version of the ``.npz`` file format written by :meth:`HLMRF.save`
FILE_FORMAT = "tractable.hlmrf"
FILE_VERSION = 1
_FILE_KEYS = (
    "format",
    "version",
    "n_variables",
    "pot_indptr",
    "pot_variables",
    "pot_coefficients",
    "pot_constants",
    "pot_weights",
    "pot_power",
    "con_indptr",
    "con_variables",
    "con_coefficients",
    "con_constants",
    "con_senses",
    "fixed_variables",
    "fixed_values",
)
#: tolerance for constraints that involve only fixed variables (float rounding of fixed values)
_FIXED_TOL = 1e-9
#: a lower bound of the bytes a model and its solver hold per variable (refuses only the hopeless)
_BYTES_PER_VARIABLE = 32


def _check_csr(indptr, variables, coefficients, n_variables: int, what: str):
    indptr = as_index_array(indptr, "indptr")
    if indptr.size == 0 or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        raise ValueError(f"`indptr` must start at 0 and be non-decreasing (one row per {what}); got {indptr[:5]}...")
    variables = as_index_array(variables, "variables", size=n_variables)
    coefficients = as_float_array(coefficients, "coefficients", ndim=1, allow_neginf=False)
    if variables.size != indptr[-1] or coefficients.size != indptr[-1]:
        raise ValueError(
            f"`variables` and `coefficients` must have indptr[-1] = {int(indptr[-1])} entries; "
            f"got {variables.size} and {coefficients.size}."
        )
    return indptr, variables, coefficients


def _per_row(value, n_rows: int, name: str, *, nonneg: bool = False) -> np.ndarray:
    arr = as_float_array(value, name, allow_neginf=False)
    if arr.ndim == 0:
        arr = np.full(n_rows, float(arr))
    if arr.shape != (n_rows,):
        raise ValueError(f"`{name}` must be a scalar or have shape ({n_rows},); got {arr.shape}.")
    if nonneg and np.any(arr < 0):
        raise ValueError(f"`{name}` must be >= 0; got {float(arr[arr < 0][0])}.")
    return arr


@dataclass(frozen=True)
class _Compiled:
    """Terms over the free variables (fixed ones folded into the constants), ready for solvers."""

    free: np.ndarray  # (n_free,) original indices of the free variables
    indptr: np.ndarray  # (n_terms + 1,) potentials first, then constraints
    idx: np.ndarray  # (nnz,) free-variable index of each local copy
    coef: np.ndarray  # (nnz,)
    const: np.ndarray  # (n_terms,)
    weight: np.ndarray  # (n_terms,) 0 for constraints
    kind: np.ndarray  # (n_terms,) int8 codes of _kernels.KIND_*
    n_potentials: int
    offset: float  # objective of the potentials that involve only fixed variables
    x_fixed: np.ndarray  # (n_variables,) fixed values, 0 elsewhere
    #: (n_potentials,) the model's potential behind each kept potential term
    pot_rows: np.ndarray
    #: the potentials over fixed variables only, and their unweighted hinge values (the offset's terms)
    const_pots: np.ndarray
    const_phi: np.ndarray
    #: what solvers derive from the structure alone, shared by every reweighted copy (see :meth:`reweighted`)
    shared: dict

    def reweighted(self, pot_weights: np.ndarray) -> _Compiled:
        """The same terms with the model's potential weights ``pot_weights`` (shape (m,)): a gather."""
        weight = np.zeros(self.weight.size)
        weight[: self.n_potentials] = pot_weights[self.pot_rows]
        offset = float(np.dot(pot_weights[self.const_pots], self.const_phi)) if self.const_pots.size else 0.0
        return replace(self, weight=weight, offset=offset)


class HLMRF:
    """A hinge-loss Markov random field over ``n_variables`` variables in ``[0, 1]``.

    Parameters
    ----------
    n_variables : int
        Number of variables (``>= 1``).

    Attributes
    ----------
    network : object or None
        Data a generator attached to the model (e.g. the social network of
        :func:`tractable.datasets.opinion_diffusion`); ``None`` otherwise.

    Examples
    --------
    The worked example of Bach et al. (2012), Example 1: one voter, two friends at 0.9 and 0.6.

    >>> from tractable.hlmrf import HLMRF, solve
    >>> m = HLMRF(2)
    >>> m.add_potential([0], [-1.0], constant=0.9, squared=True)
    0
    >>> m.add_potential([1], [-1.0], constant=0.6, squared=True)
    1
    >>> m.add_constraint([0, 1], [1.0, 1.0], constant=-1.0)
    0
    >>> solve(m, eps_abs=1e-8, eps_rel=1e-8).x.round(4)
    array([0.65, 0.35])
    """

    def __init__(self, n_variables: int) -> None:
        self._n = check_int(n_variables, "n_variables", minimum=1)
        # a fixed-value mask and value per variable, and the solver's consensus value and copy count
        check_memory(self._n, _BYTES_PER_VARIABLE, "n_variables", "variables")
        self._pot_blocks: list[tuple] = []
        self._con_blocks: list[tuple] = []
        self._pot = self._empty(np.bool_)
        self._con = self._empty(np.int8)
        self._n_pot = 0
        self._n_con = 0
        self._fixed_mask = np.zeros(self._n, dtype=bool)
        self._fixed_val = np.zeros(self._n)
        self._compiled: _Compiled | None = None
        self.network = None

    @staticmethod
    def _empty(flag_dtype):
        return (
            np.zeros(1, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0),
            np.zeros(0),
            np.zeros(0),
            np.zeros(0, flag_dtype),
        )

    # ------------------------------------------------------------------ building
    @property
    def n_variables(self) -> int:
        """Number of variables."""
        return self._n

    @property
    def n_potentials(self) -> int:
        """Number of potentials."""
        return self._n_pot

    @property
    def n_constraints(self) -> int:
        """Number of constraints."""
        return self._n_con

    def add_potential(
        self, variables, coefficients, constant: float = 0.0, weight: float = 1.0, squared: bool = False
    ) -> int:
        """Add the potential ``weight * max(coefficients · x[variables] + constant, 0) ** p``.

        Parameters
        ----------
        variables : array_like of int, shape (k,)
            Variable indices (a repeated index adds its coefficients).
        coefficients : array_like of float, shape (k,)
        constant : float
        weight : float
            ``>= 0``.
        squared : bool
            ``p = 2`` if True, else ``p = 1``.

        Returns
        -------
        int
            Index of the new potential.
        """
        variables, coefficients = self._check_row(variables, coefficients)
        constant = check_finite(constant, "constant")
        weight = check_finite(weight, "weight")
        if weight < 0:
            raise ValueError(f"`weight` must be >= 0; got {weight}.")
        if not isinstance(squared, (bool, np.bool_)):
            raise TypeError(f"`squared` must be a bool (p = 2 if True, p = 1 if False); got {squared!r}.")
        self._pot_blocks.append(
            (
                np.array([0, variables.size]),
                variables,
                coefficients,
                np.array([constant]),
                np.array([weight]),
                np.array([bool(squared)]),
            )
        )
        self._n_pot += 1
        self._compiled = None
        return self._n_pot - 1

    def add_constraint(self, variables, coefficients, constant: float = 0.0, sense: str = "<=") -> int:
        """Add the constraint ``coefficients · x[variables] + constant (sense) 0``.

        Parameters
        ----------
        variables : array_like of int, shape (k,)
        coefficients : array_like of float, shape (k,)
        constant : float
        sense : {"<=", "==", ">="}

        Returns
        -------
        int
            Index of the new constraint.
        """
        variables, coefficients = self._check_row(variables, coefficients)
        constant = check_finite(constant, "constant")
        check_choice(sense, "sense", SENSES)
        block = (
            np.array([0, variables.size]),
            variables,
            coefficients,
            np.array([constant]),
            np.zeros(1),
            np.array([SENSES.index(sense)], dtype=np.int8),
        )
        self._check_fixed_block(block, "constant", first=self._n_con)
        self._con_blocks.append(block)
        self._n_con += 1
        self._compiled = None
        return self._n_con - 1

    def _check_row(self, variables, coefficients):
        variables = as_index_array(np.atleast_1d(variables), "variables", size=self._n)
        coefficients = as_float_array(np.atleast_1d(coefficients), "coefficients", ndim=1, allow_neginf=False)
        if coefficients.shape != variables.shape:
            raise ValueError(
                f"`coefficients` must have the shape of `variables` {variables.shape}; got {coefficients.shape}."
            )
        return variables, coefficients

    def add_potentials(self, indptr, variables, coefficients, constants=0.0, weights=1.0, squared=False) -> range:
        """Add many potentials at once from CSR-like arrays.

        Parameters
        ----------
        indptr : array_like of int, shape (m + 1,)
            Potential ``j`` uses entries ``indptr[j]:indptr[j + 1]`` of ``variables`` and ``coefficients``.
        variables : array_like of int, shape (nnz,)
        coefficients : array_like of float, shape (nnz,)
        constants : float or array_like of shape (m,)
        weights : float or array_like of shape (m,)
            ``>= 0``.
        squared : bool or array_like of bool, shape (m,)

        Returns
        -------
        range
            Indices of the new potentials.
        """
        indptr, variables, coefficients = _check_csr(indptr, variables, coefficients, self._n, "potential")
        m = indptr.size - 1
        constants = _per_row(constants, m, "constants")
        weights = _per_row(weights, m, "weights", nonneg=True)
        sq = np.asarray(squared)
        if sq.dtype != bool:
            raise TypeError(f"`squared` must be a bool or an array of bools; got dtype {sq.dtype}.")
        sq = np.broadcast_to(sq, (m,)).copy() if sq.ndim == 0 else sq.copy()
        if sq.shape != (m,):
            raise ValueError(f"`squared` must be a bool or have shape ({m},); got {sq.shape}.")
        self._pot_blocks.append((indptr, variables, coefficients, constants, weights, sq))
        self._n_pot += m
        self._compiled = None
        return range(self._n_pot - m, self._n_pot)

    def add_constraints(self, indptr, variables, coefficients, constants=0.0, senses="<=") -> range:
        """Add many constraints at once from CSR-like arrays (see :meth:`add_potentials`).

        Parameters
        ----------
        senses : str or sequence of str, shape (r,)
            Each one of ``"<="``, ``"=="``, ``">="``.

        Returns
        -------
        range
            Indices of the new constraints.
        """
        indptr, variables, coefficients = _check_csr(indptr, variables, coefficients, self._n, "constraint")
        r = indptr.size - 1
        constants = _per_row(constants, r, "constants")
        if isinstance(senses, str):
            check_choice(senses, "senses", SENSES)
            codes = np.full(r, SENSES.index(senses), dtype=np.int8)
        else:
            senses = np.asarray(senses)
            if senses.shape != (r,):
                raise ValueError(f"`senses` must be a string or have shape ({r},); got {senses.shape}.")
            codes = np.full(r, -1, dtype=np.int8)
            for i, s in enumerate(SENSES):
                codes[senses == s] = i
            if np.any(codes < 0):
                check_choice(str(senses[codes < 0][0]), "senses", SENSES)
        block = (indptr, variables, coefficients, constants, np.zeros(r), codes)
        self._check_fixed_block(block, "constants", first=self._n_con)
        self._con_blocks.append(block)
        self._n_con += r
        self._compiled = None
        return range(self._n_con - r, self._n_con)

    def fix(self, variables, values) -> None:
        """Fix (observe) variables at given values; solvers fold them into the constants.

        Parameters
        ----------
        variables : array_like of int, shape (k,)
        values : float or array_like of float, shape (k,)
            In ``[0, 1]``. A variable listed twice must get the same value twice; fixing a variable
            again in a later call replaces its value.

        Raises
        ------
        ValueError
            If a value lies outside [0, 1], one variable is given two different values, or a constraint
            over fixed variables only is violated.
        """
        variables = as_index_array(np.atleast_1d(variables), "variables", size=self._n)
        values = as_float_array(values, "values", allow_neginf=False)
        if values.ndim == 0:
            values = np.full(variables.shape, float(values))
        if values.shape != variables.shape:
            raise ValueError(f"`values` must be a scalar or have shape {variables.shape}; got {values.shape}.")
        if np.any((values < 0) | (values > 1)):
            bad = values[(values < 0) | (values > 1)][0]
            raise ValueError(f"`values` must lie in [0, 1]; got {float(bad)}.")
        if variables.size > 1:  # one variable listed twice must get one value (else which would win?)
            order = np.argsort(variables, kind="stable")
            v, x = variables[order], values[order]
            clash = np.flatnonzero((v[1:] == v[:-1]) & (x[1:] != x[:-1]))
            if clash.size:
                i = int(clash[0])
                raise ValueError(
                    f"`variables` lists variable {int(v[i])} twice with different `values`: {float(x[i])!r} and "
                    f"{float(x[i + 1])!r}; fix each variable at one value."
                )
        old_mask, old_val = self._fixed_mask.copy(), self._fixed_val.copy()
        self._fixed_mask[variables] = True
        self._fixed_val[variables] = values
        self._compiled = None
        try:
            self._check_fixed_constraints("values")
        except ValueError:
            self._fixed_mask, self._fixed_val = old_mask, old_val
            raise

    @property
    def fixed(self) -> tuple[np.ndarray, np.ndarray]:
        """``(variables, values)`` of the fixed variables, as read-only arrays."""
        idx = np.flatnonzero(self._fixed_mask)
        return frozen_array(idx), frozen_array(self._fixed_val[idx])

    def _check_fixed_constraints(self, name: str) -> None:
        self._check_fixed_block(self._arrays("con"), name)

    def _check_fixed_block(self, block, name: str, first: int = 0) -> None:
        """Raise if a constraint of ``block`` involves only fixed variables (or none) and is violated; ``first``:
        the model's index of the block's first constraint (for the message)."""
        indptr, idx, coef, const, _, sense = block
        if indptr.size == 1:
            return
        rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
        all_fixed = np.bincount(rows, weights=~self._fixed_mask[idx], minlength=indptr.size - 1) == 0
        if not all_fixed.any():
            return
        val = _kernels.term_values(indptr, idx, coef, const, self._fixed_val)
        viol = _violation(val, sense)
        bad = np.flatnonzero(all_fixed & (viol > _FIXED_TOL))
        if bad.size:
            k = int(bad[0])
            raise ValueError(
                f"constraint {first + k} cannot hold (checked with `{name}`): it has no free variable and its "
                f"left-hand side is {val[k]:.6g}, which must be {SENSES[sense[k]]} 0."
            )

    # ------------------------------------------------------------------ arrays
    def _arrays(self, which: str):
        blocks = self._pot_blocks if which == "pot" else self._con_blocks
        if blocks:
            cur = self._pot if which == "pot" else self._con
            parts = [cur, *blocks]
            lengths = np.concatenate([np.diff(p[0]) for p in parts])
            indptr = np.zeros(lengths.size + 1, dtype=np.int64)
            np.cumsum(lengths, out=indptr[1:])
            merged = (indptr, *(np.concatenate([p[i] for p in parts]) for i in range(1, 6)))
            for a in merged:
                a.flags.writeable = False
            if which == "pot":
                self._pot, self._pot_blocks = merged, []
            else:
                self._con, self._con_blocks = merged, []
        return self._pot if which == "pot" else self._con

    def potential_arrays(self) -> dict:
        """The potentials as read-only arrays.

        Returns
        -------
        dict
            ``indptr`` (m + 1,), ``variables`` (nnz,), ``coefficients`` (nnz,), ``constants`` (m,),
            ``weights`` (m,), ``squared`` (m,) bool.
        """
        a = self._arrays("pot")
        return dict(zip(["indptr", "variables", "coefficients", "constants", "weights", "squared"], a))

    def with_weights(self, weights) -> HLMRF:
        """The same model with other potential weights: a multiply, not a rebuild.

        The new model shares this one's read-only potential and constraint arrays (nothing is copied
        but the weights and the fixed values), so weight learning can try weight vectors on a ground
        program at the cost of one array.

        Parameters
        ----------
        weights : float or array_like of shape (n_potentials,)
            The new weights, finite and ``>= 0``.

        Returns
        -------
        HLMRF
        """
        pot = self._arrays("pot")
        w = np.array(_per_row(weights, self._n_pot, "weights", nonneg=True), dtype=np.float64)  # never the input
        w.flags.writeable = False
        out = HLMRF(self._n)
        out._pot = (*pot[:4], w, pot[5])
        out._n_pot = self._n_pot
        out._con = self._arrays("con")
        out._n_con = self._n_con
        out._fixed_mask = self._fixed_mask.copy()
        out._fixed_val = self._fixed_val.copy()
        out.network = self.network
        if self._compiled is not None:
            # the terms over the free variables are the same but for their weights: the solvers' views of
            # the structure (``shared``) carry over too
            out._compiled = self._compiled.reweighted(w)
        return out

    def constraint_arrays(self) -> dict:
        """The constraints as read-only arrays.

        Returns
        -------
        dict
            ``indptr`` (r + 1,), ``variables`` (nnz,), ``coefficients`` (nnz,), ``constants`` (r,),
            ``senses`` (r,) int8 codes into :data:`SENSES` (0: ``<=``, 1: ``==``, 2: ``>=``).
        """
        a = self._arrays("con")
        return dict(zip(["indptr", "variables", "coefficients", "constants", "senses"], a[:4] + a[5:]))

    # ------------------------------------------------------------------ evaluation
    def _check_x(self, x) -> np.ndarray:
        x = as_float_array(x, "x", ndim=1, allow_neginf=False)
        if x.shape != (self._n,):
            raise ValueError(f"`x` must have shape ({self._n},); got {x.shape}.")
        return x

    def potential_values(self, x) -> np.ndarray:
        """``w_j max(c_j·x + b_j, 0)^p_j`` for every potential: ndarray of shape (n_potentials,)."""
        x = self._check_x(x)
        indptr, idx, coef, const, weight, sq = self._arrays("pot")
        h = np.maximum(_kernels.term_values(indptr, idx, coef, const, x), 0.0)
        return weight * np.where(sq, h * h, h)

    def objective(self, x) -> float:
        """The MPE objective ``sum_j w_j max(c_j·x + b_j, 0)^p_j`` at ``x`` of shape (n_variables,)."""
        return float(self.potential_values(x).sum())

    def constraint_violations(self, x) -> np.ndarray:
        """Violation of every constraint at ``x``: ndarray of shape (n_constraints,), 0 where satisfied."""
        x = self._check_x(x)
        indptr, idx, coef, const, _, sense = self._arrays("con")
        return _violation(_kernels.term_values(indptr, idx, coef, const, x), sense)

    def max_violation(self, x) -> float:
        """Largest violation at ``x`` of a constraint, of the box [0, 1] or of a fixed value."""
        x = self._check_x(x)
        v = 0.0
        if self._n_con:
            v = float(self.constraint_violations(x).max())
        v = max(v, float(np.max(np.maximum(-x, x - 1.0))))
        if self._fixed_mask.any():
            v = max(v, float(np.max(np.abs(x - self._fixed_val)[self._fixed_mask])))
        return max(v, 0.0)

    # ------------------------------------------------------------------ solver view
    def _compile(self) -> _Compiled:
        """Fold fixed variables into the constants and renumber the free variables (cached)."""
        if self._compiled is not None:
            return self._compiled
        self._check_fixed_constraints("values")
        pind, pidx, pcoef, pconst, pw, psq = self._arrays("pot")
        cind, cidx, ccoef, cconst, _, csense = self._arrays("con")
        m, r = pind.size - 1, cind.size - 1
        indptr = np.concatenate([pind, cind[1:] + pind[-1]])
        idx = np.concatenate([pidx, cidx])
        coef = np.concatenate([pcoef, ccoef])
        const = np.concatenate([pconst, cconst])
        sense_sign = np.where(csense == 2, -1.0, 1.0)  # ">=" becomes "<=" with negated row
        rows = np.repeat(np.arange(m + r), np.diff(indptr))
        sign = np.concatenate([np.ones(m), sense_sign])
        coef = coef * sign[rows]
        const = const * sign
        kind = np.concatenate(
            [
                np.where(psq, _kernels.KIND_SQUARED, _kernels.KIND_HINGE),
                np.where(csense == 1, _kernels.KIND_EQ, _kernels.KIND_LEQ),
            ]
        ).astype(np.int8)
        weight = np.concatenate([pw, np.zeros(r)])
        fixed = self._fixed_mask[idx]
        x_fixed = np.where(self._fixed_mask, self._fixed_val, 0.0)
        if fixed.any():
            const = const + np.bincount(rows[fixed], weights=coef[fixed] * x_fixed[idx[fixed]], minlength=m + r)
            keep = ~fixed
            idx, coef, rows = idx[keep], coef[keep], rows[keep]
            lengths = np.bincount(rows, minlength=m + r)
            indptr = np.zeros(m + r + 1, dtype=np.int64)
            np.cumsum(lengths, out=indptr[1:])
        # terms without free variables: potentials become a constant, constraints were checked above
        empty = np.diff(indptr) == 0
        h = np.maximum(const[:m][empty[:m]], 0.0)
        const_pots = np.flatnonzero(empty[:m])
        const_phi = np.where(psq[const_pots], h * h, h)
        offset = float(np.dot(pw[const_pots], const_phi)) if const_pots.size else 0.0
        keep_t = ~empty
        n_pot = int(keep_t[:m].sum())
        lengths = np.diff(indptr)[keep_t]
        indptr = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        free = np.flatnonzero(~self._fixed_mask)
        renum = np.full(self._n, -1, dtype=np.int64)
        renum[free] = np.arange(free.size)
        self._compiled = _Compiled(
            free=free,
            indptr=indptr,
            idx=renum[idx],
            coef=np.ascontiguousarray(coef),
            const=const[keep_t],
            weight=weight[keep_t],
            kind=kind[keep_t],
            n_potentials=n_pot,
            offset=offset,
            x_fixed=x_fixed,
            pot_rows=np.flatnonzero(keep_t[:m]),
            const_pots=const_pots,
            const_phi=const_phi,
            shared={},
        )
        return self._compiled

    # ------------------------------------------------------------------ files
    def save(self, path) -> None:
        """Write the model to an ``.npz`` file (format ``tractable.hlmrf``, version 1).

        The file holds the arrays ``format`` (str), ``version`` (int), ``n_variables``;
        ``pot_indptr``, ``pot_variables``, ``pot_coefficients``, ``pot_constants``,
        ``pot_weights``, ``pot_power`` (1 or 2); ``con_indptr``, ``con_variables``,
        ``con_coefficients``, ``con_constants``, ``con_senses`` (0: ``<=``, 1: ``==``, 2: ``>=``);
        ``fixed_variables``, ``fixed_values``. Reading it back with :meth:`load` validates every array.
        """
        p = self.potential_arrays()
        c = self.constraint_arrays()
        fv, fx = self.fixed
        with open(os.fspath(path), "wb") as fh:
            np.savez(
                fh,
                format=np.array(FILE_FORMAT),
                version=np.array(FILE_VERSION),
                n_variables=np.array(self._n),
                pot_indptr=p["indptr"],
                pot_variables=p["variables"],
                pot_coefficients=p["coefficients"],
                pot_constants=p["constants"],
                pot_weights=p["weights"],
                pot_power=np.where(p["squared"], 2, 1).astype(np.int8),
                con_indptr=c["indptr"],
                con_variables=c["variables"],
                con_coefficients=c["coefficients"],
                con_constants=c["constants"],
                con_senses=c["senses"],
                fixed_variables=fv,
                fixed_values=fx,
            )

    @classmethod
    def load(cls, path) -> HLMRF:
        """Read a model written by :meth:`save`.

        Raises
        ------
        OSError
            The file cannot be opened (missing, unreadable, a directory).
        ValueError
            Naming the file: it is not an ``.npz`` archive (truncated, corrupt, another kind of file),
            lacks an array of the format, has another format or version, or holds an invalid model.
        """
        arrays = _read_npz(path)
        if "format" not in arrays or _scalar(arrays["format"], str) != FILE_FORMAT:
            raise ValueError(f"`path` is not a {FILE_FORMAT} file: {path}.")
        version = _scalar(arrays.get("version"), int)
        if version != FILE_VERSION:
            got = "no readable version" if version is None else f"file format version {version}"
            raise ValueError(f"`path` has {got}; this version reads {FILE_VERSION}: {path}.")
        missing = [k for k in _FILE_KEYS if k not in arrays]
        if missing:
            raise ValueError(f"`path` lacks the array {missing[0]!r} of the {FILE_FORMAT} format: {path}.")
        n_variables = _scalar(arrays["n_variables"], int)
        if n_variables is None or n_variables < 1:
            raise ValueError(
                f"`path` must hold a positive integer `n_variables`; got {arrays['n_variables']!r}: {path}."
            )
        try:
            model = cls(n_variables)
        except ValueError as err:
            raise ValueError(f"`path` holds an invalid {FILE_FORMAT} model: {path} ({err})") from err
        power = arrays["pot_power"]
        if power.dtype.kind not in "iu":
            raise ValueError(f"`power` must contain only 1 or 2; got an array of dtype {power.dtype}: {path}.")
        bad = (power != 1) & (power != 2)
        if np.any(bad):
            raise ValueError(f"`power` must contain only 1 or 2; got {int(power[bad][0])}: {path}.")
        senses = arrays["con_senses"]
        if senses.dtype.kind not in "iu" or np.any((senses < 0) | (senses > 2)):
            raise ValueError(f"`senses` must contain only the codes 0, 1, 2: {path}.")
        try:
            model.add_potentials(
                arrays["pot_indptr"],
                arrays["pot_variables"],
                arrays["pot_coefficients"],
                arrays["pot_constants"],
                arrays["pot_weights"],
                power == 2,
            )
            model.add_constraints(
                arrays["con_indptr"],
                arrays["con_variables"],
                arrays["con_coefficients"],
                arrays["con_constants"],
                np.array(SENSES)[senses],
            )
            if arrays["fixed_variables"].size:
                model.fix(arrays["fixed_variables"], arrays["fixed_values"])
        except (ValueError, TypeError) as err:
            raise ValueError(f"`path` holds an invalid {FILE_FORMAT} model: {path} ({err})") from err
        return model

    def __repr__(self) -> str:
        return (
            f"HLMRF(n_variables={self._n}, n_potentials={self._n_pot}, n_constraints={self._n_con}, "
            f"n_fixed={int(self._fixed_mask.sum())})"
        )


class _NotNpz(ValueError):
    """What :func:`_read_npz` found wrong before handing the file to numpy."""


def _read_npz(path) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` file ``path``, read eagerly (no pickles).

    ``OSError`` only when the file cannot be opened; any problem with its content (not a zip archive,
    truncated, a corrupt or pickled member, a single ``.npy`` array) is a ``ValueError`` naming the file.
    """
    with open(os.fspath(path), "rb") as fh:  # a missing or unreadable file stays an OSError
        try:
            magic = fh.read(6)
            fh.seek(0)
            if magic == b"\x93NUMPY":
                raise _NotNpz(f"a single .npy array, not an .npz archive of the {FILE_FORMAT} format")
            if not magic:
                raise _NotNpz("an empty file")
            if not magic.startswith(b"PK"):
                raise _NotNpz(f"not a zip archive: it starts with {magic!r}")
            from ..io._npz import check_npz

            check_npz(path)  # headers against the sizes: nothing declared larger than the file is allocated
            data = np.load(fh, allow_pickle=False)
            with data:
                return {key: data[key] for key in data.files}
        except (ValueError, OSError, EOFError, KeyError, NotImplementedError, zipfile.BadZipFile, zlib.error) as err:
            reason = str(err).splitlines()[0] if str(err) else "no detail"
            if not isinstance(err, _NotNpz):  # raised by numpy or zipfile: say which error
                reason = f"{type(err).__name__}: {reason}"
            raise ValueError(f"`path` is not a readable .npz file: {path} ({reason}).") from err


def _scalar(arr, kind: type):
    """The value of a 0-d array of ``kind`` (str or int), or None."""
    if not isinstance(arr, np.ndarray) or arr.ndim != 0:
        return None
    if kind is str:
        return str(arr) if arr.dtype.kind == "U" else None
    return int(arr) if arr.dtype.kind in "iu" else None


def _violation(values: np.ndarray, sense: np.ndarray) -> np.ndarray:
    """Violation of ``values (sense) 0`` for sense codes 0 (<=), 1 (==), 2 (>=)."""
    return np.where(sense == 0, np.maximum(values, 0.0), np.where(sense == 1, np.abs(values), np.maximum(-values, 0.0)))
