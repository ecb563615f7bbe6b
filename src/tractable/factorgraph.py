"""Discrete factor graphs: variables with finite domains and log-potential factors over them.

A :class:`FactorGraph` defines the unnormalized log-probability (the *score*)

    score(y) = constant + sum_f  log_potential_f(y_{scope(f)}),     p(y) = exp(score(y)) / Z.

Factors are small immutable objects of a class hierarchy rooted at :class:`Factor`. Algorithms that
only need a dense table call :meth:`Factor.to_table`; algorithms that exploit a factor's structure
(for example a cardinality potential) dispatch on its type.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ._validate import as_float_array, as_index_array, check_int

__all__ = ["Factor", "FactorGraph", "TableFactor", "CardinalityFactor"]


class Factor(ABC):
    """Base class of all factors: a log-potential over a tuple of distinct variables.

    Subclasses implement :meth:`to_table`, :meth:`evaluate`, :meth:`condition` and
    :meth:`check_cardinalities`.
    """

    variables: np.ndarray

    @abstractmethod
    def to_table(self) -> np.ndarray:
        """Dense log-potential table with one axis per variable of :attr:`variables`."""

    @abstractmethod
    def evaluate(self, values: np.ndarray) -> np.ndarray:
        """Log-potential of a batch of local assignments.

        Parameters
        ----------
        values : ndarray of shape (batch, len(variables)), int
            The states of this factor's variables, in the order of :attr:`variables`.

        Returns
        -------
        ndarray of shape (batch,)
        """

    @abstractmethod
    def condition(self, evidence: Mapping[int, int]) -> Factor | float:
        """The factor with the variables in ``evidence`` fixed.

        Returns a new factor over the remaining variables, or a float (the log-potential value)
        when every variable is fixed.
        """

    @abstractmethod
    def check_cardinalities(self, cardinalities: np.ndarray) -> None:
        """Raise ``ValueError`` if the factor does not fit variables of these cardinalities."""

    @abstractmethod
    def relabel(self, mapping: np.ndarray) -> Factor:
        """The same factor over renumbered variables: variable ``v`` becomes ``mapping[v]``."""

    def __len__(self) -> int:
        return len(self.variables)


def _check_constant(constant) -> float:
    try:
        c = float(constant)
    except (TypeError, ValueError) as err:
        raise TypeError(f"`constant` must be a real number or -inf; got {constant!r}.") from err
    if np.isnan(c) or c == np.inf:
        raise ValueError(f"`constant` must be a real number or -inf; got {c}.")
    return c


def _check_state_names(state_names, card: np.ndarray) -> tuple[tuple, ...]:
    if isinstance(state_names, (str, bytes)) or not isinstance(state_names, Sequence):
        raise TypeError(f"`state_names` must be a sequence of one sequence per variable; got {state_names!r}.")
    if len(state_names) != len(card):
        raise ValueError(f"`state_names` must have one entry per variable ({len(card)}); got {len(state_names)}.")
    out = []
    for i, states in enumerate(state_names):
        if isinstance(states, (str, bytes)) or not isinstance(states, Sequence):
            raise TypeError(f"`state_names[{i}]` must be a sequence of state names; got {states!r}.")
        states = tuple(states)
        if len(states) != card[i]:
            raise ValueError(
                f"`state_names[{i}]` must name the {int(card[i])} states of variable {i}; got {len(states)} names."
            )
        try:
            distinct = len(set(states)) == len(states)
        except TypeError as err:
            raise TypeError(f"`state_names[{i}]` must contain hashable names; got {states!r}.") from err
        if not distinct:
            raise ValueError(f"`state_names[{i}]` must be distinct; got {list(states)}.")
        out.append(states)
    return tuple(out)


def _check_scope(variables, name: str = "variables") -> np.ndarray:
    scope = as_index_array(variables, name)
    if scope.size and scope.min() < 0:
        raise ValueError(f"`{name}` must contain non-negative variable indices; got {int(scope.min())}.")
    if len(np.unique(scope)) != len(scope):
        raise ValueError(f"`{name}` must list distinct variables; got {scope.tolist()}.")
    scope.flags.writeable = False
    return scope


class TableFactor(Factor):
    """A factor given by a dense table of log-potentials.

    Parameters
    ----------
    variables : sequence of int, length k
        Distinct variable indices of the graph the factor will be added to.
    log_table : array_like of shape (card[variables[0]], ..., card[variables[k-1]])
        Log-potentials; ``log_table[y_0, ..., y_{k-1}]`` is added to the score when
        ``variables[i]`` takes state ``y_i``. ``-inf`` marks a forbidden configuration; NaN and
        ``+inf`` are rejected.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable import FactorGraph, TableFactor
    >>> fg = FactorGraph([2, 2])
    >>> _ = fg.add_factor(TableFactor([0, 1], np.log([[1.0, 2.0], [3.0, 4.0]])))
    >>> round(float(np.exp(fg.score([1, 0]))), 12)
    3.0
    """

    def __init__(self, variables: Sequence[int], log_table) -> None:
        self.variables = _check_scope(variables)
        table = as_float_array(log_table, "log_table")
        if table.ndim != len(self.variables):
            raise ValueError(
                f"`log_table` must have one axis per variable ({len(self.variables)} axes for variables "
                f"{self.variables.tolist()}); got shape {table.shape}."
            )
        if table.ndim and min(table.shape) < 1:
            raise ValueError(f"`log_table` must not have empty axes; got shape {table.shape}.")
        table.flags.writeable = False
        self.log_table = table

    def __repr__(self) -> str:
        return f"TableFactor(variables={self.variables.tolist()}, shape={self.log_table.shape})"

    def to_table(self) -> np.ndarray:
        return self.log_table

    def evaluate(self, values: np.ndarray) -> np.ndarray:
        values = np.asarray(values)
        if len(self.variables) == 0:
            return np.full(values.shape[0], float(self.log_table))
        return self.log_table[tuple(values[:, i] for i in range(len(self.variables)))]

    def condition(self, evidence: Mapping[int, int]) -> TableFactor | float:
        index = tuple(evidence.get(int(v), slice(None)) for v in self.variables)
        kept = [int(v) for v in self.variables if int(v) not in evidence]
        sub = self.log_table[index]
        if not kept:
            return float(sub)
        if len(kept) == len(self.variables):
            return self
        return TableFactor(kept, sub)

    def check_cardinalities(self, cardinalities: np.ndarray) -> None:
        expected = tuple(int(cardinalities[v]) for v in self.variables)
        if self.log_table.shape != expected:
            raise ValueError(
                f"`log_table` of the factor over variables {self.variables.tolist()} must have shape "
                f"{expected} (their cardinalities); got {self.log_table.shape}."
            )

    def relabel(self, mapping: np.ndarray) -> TableFactor:
        return TableFactor(mapping[self.variables], self.log_table)


class CardinalityFactor(Factor):
    """A log-potential on the number of binary variables that are on: ``f[sum_i y_i]``.

    Parameters
    ----------
    variables : sequence of int, length D
        Distinct binary variables.
    log_potentials : array_like of shape (D + 1,)
        ``log_potentials[k]`` is added to the score when exactly ``k`` of the variables are 1.
        ``-inf`` forbids a count. Kept, read-only, as the attribute of the same name.

    Notes
    -----
    Generic algorithms see this factor through :meth:`to_table` (a ``2**D`` table, only for
    ``D <= 24``). The same count potential, as the ``f`` of :mod:`tractable.cardinality`, is handled
    in ``O(D log^2 D)`` by its convolution tree.
    """

    def __init__(self, variables: Sequence[int], log_potentials) -> None:
        self.variables = _check_scope(variables)
        f = as_float_array(log_potentials, "log_potentials", ndim=1)
        if f.shape != (len(self.variables) + 1,):
            raise ValueError(
                f"`log_potentials` must have shape ({len(self.variables) + 1},) (one entry per count "
                f"0..{len(self.variables)}); got {f.shape}."
            )
        f.flags.writeable = False
        self.log_potentials = f

    def __repr__(self) -> str:
        return f"CardinalityFactor(variables={self.variables.tolist()})"

    def to_table(self) -> np.ndarray:
        d = len(self.variables)
        if d > 24:
            raise ValueError(
                f"a CardinalityFactor over {d} variables has no dense table (2**{d} entries); use an "
                "algorithm that handles cardinality factors directly."
            )
        counts = np.indices((2,) * d).sum(axis=0) if d else np.zeros((), dtype=np.int64)
        return self.log_potentials[counts]

    def evaluate(self, values: np.ndarray) -> np.ndarray:
        values = np.asarray(values)
        return self.log_potentials[values.sum(axis=1)]

    def condition(self, evidence: Mapping[int, int]) -> CardinalityFactor | float:
        fixed_on = sum(int(evidence[int(v)]) for v in self.variables if int(v) in evidence)
        kept = [int(v) for v in self.variables if int(v) not in evidence]
        f = self.log_potentials[fixed_on : fixed_on + len(kept) + 1]
        if not kept:
            return float(f[0])
        if len(kept) == len(self.variables):
            return self
        return CardinalityFactor(kept, f)

    def check_cardinalities(self, cardinalities: np.ndarray) -> None:
        card = cardinalities[self.variables]
        if np.any(card != 2):
            bad = int(self.variables[np.argmax(card != 2)])
            raise ValueError(
                f"a CardinalityFactor needs binary variables; variable {bad} has cardinality {int(cardinalities[bad])}."
            )

    def relabel(self, mapping: np.ndarray) -> CardinalityFactor:
        return CardinalityFactor(mapping[self.variables], self.log_potentials)


class FactorGraph:
    """A discrete factor graph.

    Parameters
    ----------
    cardinalities : sequence of int, length n_variables
        Number of states of each variable (each >= 2).
    names : sequence of str, optional
        A distinct name per variable; defaults to ``"x0", "x1", ...``. Evidence may name variables
        by index or by name.
    constant : float, default 0.0
        A constant added to every score (conditioning collects the fixed factors' values here, so
        that ``log Z`` of a conditioned graph is the log-probability of the evidence plus ``log Z``
        of the original graph).
    state_names : sequence of sequences, optional
        A name per state of each variable (``state_names[i]`` has ``cardinalities[i]`` distinct,
        hashable entries), kept as a tuple of tuples; ``None`` (the default) when the states are
        only numbered.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable import FactorGraph, TableFactor
    >>> from tractable.exact import enumerate_marginals
    >>> fg = FactorGraph([2, 3])
    >>> _ = fg.add_factor(TableFactor([0, 1], np.log([[1.0, 2.0, 3.0], [4.0, 5.0, 0.5]])))
    >>> enumerate_marginals(fg).marginals[0].round(4)
    array([0.3871, 0.6129])
    """

    def __init__(
        self,
        cardinalities: Sequence[int],
        names: Sequence[str] | None = None,
        *,
        constant=0.0,
        state_names: Sequence[Sequence] | None = None,
    ):
        card = as_index_array(cardinalities, "cardinalities")
        if card.size and card.min() < 2:
            bad = int(np.argmax(card < 2))
            raise ValueError(f"`cardinalities` must be integers >= 2; got {int(card[bad])} for variable {bad}.")
        card.flags.writeable = False
        self._cardinalities = card
        if names is None:
            names = [f"x{i}" for i in range(len(card))]
        names = [str(s) for s in names]
        if len(names) != len(card):
            raise ValueError(f"`names` must have one name per variable ({len(card)}); got {len(names)}.")
        if len(set(names)) != len(names):
            raise ValueError("`names` must be distinct.")
        self._names = tuple(names)
        self._index = {s: i for i, s in enumerate(names)}
        self._constant = _check_constant(constant)
        self._state_names = None if state_names is None else _check_state_names(state_names, card)
        self._factors: list[Factor] = []
        kept = np.arange(len(card), dtype=np.int64)
        kept.flags.writeable = False
        self._kept_variables = kept

    # ------------------------------------------------------------------ structure
    @property
    def n_variables(self) -> int:
        """Number of variables."""
        return len(self._cardinalities)

    @property
    def cardinalities(self) -> np.ndarray:
        """ndarray of shape (n_variables,), int64, read-only: the number of states of each variable."""
        return self._cardinalities

    @property
    def names(self) -> tuple[str, ...]:
        """The variable names."""
        return self._names

    @property
    def constant(self) -> float:
        """The constant added to every score (read-only; a real number or ``-inf``)."""
        return self._constant

    @property
    def state_names(self) -> tuple[tuple, ...] | None:
        """``state_names[i][s]`` names state ``s`` of variable ``i`` (read-only), or None."""
        return self._state_names

    @property
    def kept_variables(self) -> np.ndarray:
        """ndarray of shape (n_variables,), int64, read-only: each variable's index in the graph this
        one was conditioned from (``arange(n_variables)`` for a graph built directly)."""
        return self._kept_variables

    @property
    def factors(self) -> tuple[Factor, ...]:
        """The factors, in the order they were added."""
        return tuple(self._factors)

    def __repr__(self) -> str:
        return f"FactorGraph(n_variables={self.n_variables}, n_factors={len(self._factors)})"

    def add_factor(self, factor: Factor) -> int:
        """Add a factor and return its index in :attr:`factors`.

        Raises
        ------
        TypeError
            If ``factor`` is not a :class:`Factor`.
        ValueError
            If it refers to a variable that does not exist or its table does not match the
            variables' cardinalities.
        """
        if not isinstance(factor, Factor):
            raise TypeError(f"`factor` must be a Factor (e.g. TableFactor); got {type(factor).__name__}.")
        if factor.variables.size and factor.variables.max() >= self.n_variables:
            raise ValueError(
                f"`factor` refers to variable {int(factor.variables.max())}, but the graph has "
                f"{self.n_variables} variables (0..{self.n_variables - 1})."
            )
        factor.check_cardinalities(self._cardinalities)
        self._factors.append(factor)
        return len(self._factors) - 1

    def add_factors(self, factors: Iterable[Factor]) -> None:
        """Add several factors."""
        for factor in factors:
            self.add_factor(factor)

    def variable_index(self, key) -> int:
        """Index of a variable given by index or by name."""
        if isinstance(key, str):
            if key not in self._index:
                raise ValueError(f"unknown variable {key!r}; the graph's variables are {list(self._names)[:10]}...")
            return self._index[key]
        try:
            i = check_int(key, "variable")
        except TypeError as err:
            raise TypeError(f"a variable must be given by index or name; got {key!r}.") from err
        if not 0 <= i < self.n_variables:
            raise ValueError(f"unknown variable {i}; the graph has variables 0..{self.n_variables - 1}.")
        return i

    # ------------------------------------------------------------------ evaluation
    def _check_assignment(self, assignment) -> tuple[np.ndarray, bool]:
        a = np.asarray(assignment)
        single = a.ndim == 1
        a = as_index_array(a.reshape(1, -1) if single else a, "assignment", ndim=2)
        if a.shape[1] != self.n_variables:
            raise ValueError(
                f"`assignment` must have {self.n_variables} entries per row (one per variable); "
                f"got shape {np.shape(assignment)}."
            )
        bad = (a < 0) | (a >= self._cardinalities)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise ValueError(
                f"`assignment` gives variable {c} the state {a[r, c]}, outside 0..{self._cardinalities[c] - 1}."
            )
        return a, single

    def score(self, assignment) -> float | np.ndarray:
        """Unnormalized log-probability of one assignment or of a batch.

        Parameters
        ----------
        assignment : array_like of shape (n_variables,) or (batch, n_variables), int

        Returns
        -------
        float or ndarray of shape (batch,)
            ``constant + sum of the factors' log-potentials`` (``-inf`` for forbidden assignments).
        """
        a, single = self._check_assignment(assignment)
        total = np.full(a.shape[0], self.constant)
        for factor in self._factors:
            total += factor.evaluate(a[:, factor.variables])
        return float(total[0]) if single else total

    # ------------------------------------------------------------------ conditioning
    def check_evidence(self, evidence: Mapping) -> dict[int, int]:
        """Validate evidence ``{variable (index or name): state}`` and return it keyed by index."""
        if not isinstance(evidence, Mapping):
            raise TypeError(f"`evidence` must be a dict {{variable: state}}; got {type(evidence).__name__}.")
        out: dict[int, int] = {}
        for key, value in evidence.items():
            i = self.variable_index(key)
            try:
                s = check_int(value if not isinstance(value, np.integer) else int(value), "state")
            except TypeError as err:
                raise TypeError(f"`evidence` state of variable {key!r} must be an integer; got {value!r}.") from err
            if not 0 <= s < self._cardinalities[i]:
                raise ValueError(
                    f"`evidence` gives variable {key!r} the state {s}, outside 0..{self._cardinalities[i] - 1}."
                )
            out[i] = s
        return out

    def condition(self, evidence: Mapping) -> FactorGraph:
        """A new graph over the variables not in ``evidence``, with those fixed.

        Parameters
        ----------
        evidence : dict
            ``{variable: state}``, variables given by index or name.

        Returns
        -------
        FactorGraph
            Its variables are the unobserved ones in their original order (names kept); factors
            are restricted to them, and fully observed factors are folded into ``constant``. The
            original indices of the new graph's variables are in its ``kept_variables`` attribute.
        """
        ev = self.check_evidence(evidence)
        kept = np.array([i for i in range(self.n_variables) if i not in ev], dtype=np.int64)
        mapping = np.full(self.n_variables, -1, dtype=np.int64)
        mapping[kept] = np.arange(len(kept))
        constant = self._constant
        factors = []
        for factor in self._factors:
            sub = factor.condition(ev)
            if isinstance(sub, Factor):
                factors.append(sub.relabel(mapping))
            else:
                constant += sub
        state_names = None if self._state_names is None else [self._state_names[i] for i in kept]
        out = FactorGraph(
            self._cardinalities[kept], [self._names[i] for i in kept], constant=constant, state_names=state_names
        )
        out._factors = factors
        kept.flags.writeable = False
        out._kept_variables = kept
        return out
