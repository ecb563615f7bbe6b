"""Discrete factor graphs: variables with finite domains and log-potential factors over them.

A :class:`FactorGraph` defines the unnormalized log-probability (the *score*)

    score(y) = constant + sum_f  log_potential_f(y_{scope(f)}),     p(y) = exp(score(y)) / Z.

Factors are small immutable objects of a class hierarchy rooted at :class:`Factor`. Algorithms that
only need a dense table call :meth:`Factor.to_table`; algorithms that exploit a factor's structure
(for example a cardinality potential) dispatch on its type.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ._count_tree import CountTree, build_structure, validate_structure
from ._validate import as_float_array, as_index_array, check_int

__all__ = ["CardinalityFactor", "CliqueFactor", "Factor", "FactorGraph", "RecursiveCardinalityFactor", "TableFactor"]


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
    if (
        isinstance(constant, (bool, np.bool_, str, bytes, complex, np.complexfloating))
        or np.asarray(constant).dtype.kind in "bUSc"
        or not isinstance(constant, (numbers.Number, np.ndarray))
    ):
        raise TypeError(f"`constant` must be a real number or -inf; got {constant!r}.")  # no float("1.5"), no True
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


def _check_values(values, cards: Sequence[int]) -> np.ndarray:
    """Validate the ``values`` of :meth:`Factor.evaluate`: shape ``(batch, k)``, column ``i`` in ``0..cards[i]-1``."""
    arr = as_index_array(values, "values", ndim=2)
    if arr.shape[1] != len(cards):
        raise ValueError(
            f"`values` must have shape (batch, {len(cards)}) (one column per variable of the factor); got {arr.shape}."
        )
    if arr.size:
        bad = (arr < 0) | (arr >= np.asarray(cards, dtype=np.int64))
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise ValueError(f"`values` gives column {c} the state {arr[r, c]}, outside 0..{cards[c] - 1}.")
    return arr


def _check_cardinality_array(cardinalities, variables: np.ndarray) -> np.ndarray:
    """Validate the ``cardinalities`` of :meth:`Factor.check_cardinalities` (one per graph variable)."""
    card = as_index_array(cardinalities, "cardinalities")
    if variables.size and card.size <= variables.max():
        raise ValueError(
            f"`cardinalities` must have an entry for every variable up to {int(variables.max())}; "
            f"got {card.size} entries."
        )
    return card


def _check_mapping(mapping, variables: np.ndarray) -> np.ndarray:
    """Validate the ``mapping`` of :meth:`Factor.relabel` and return the renumbered variables."""
    arr = as_index_array(mapping, "mapping")
    if variables.size and arr.size <= variables.max():
        raise ValueError(
            f"`mapping` must have an entry for every variable up to {int(variables.max())}; got {arr.size} entries."
        )
    new = arr[variables]
    if new.size and (new.min() < 0 or len(np.unique(new)) != new.size):
        raise ValueError(f"`mapping` must send the factor's variables to distinct non-negative indices; got {new}.")
    return new


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

    @classmethod
    def _trusted(cls, variables: np.ndarray, log_table: np.ndarray) -> TableFactor:
        """A factor from parts that are valid by construction, without checks or copies.

        ``variables``: distinct non-negative int64 indices; ``log_table``: float64 of matching shape,
        no NaN or ``+inf``. Both are made read-only (shared with the caller, who must not write them).
        Used where the library derives a factor from a valid one (conditioning, renumbering).
        """
        factor = cls.__new__(cls)
        variables.flags.writeable = False
        log_table.flags.writeable = False
        factor.variables = variables
        factor.log_table = log_table
        return factor

    def __repr__(self) -> str:
        return f"TableFactor(variables={self.variables.tolist()}, shape={self.log_table.shape})"

    def to_table(self) -> np.ndarray:
        return self.log_table

    def evaluate(self, values: np.ndarray) -> np.ndarray:
        values = _check_values(values, self.log_table.shape)
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
        return TableFactor._trusted(np.array(kept, dtype=np.int64), np.ascontiguousarray(sub))

    def check_cardinalities(self, cardinalities: np.ndarray) -> None:
        cardinalities = _check_cardinality_array(cardinalities, self.variables)
        expected = tuple(int(cardinalities[v]) for v in self.variables)
        if self.log_table.shape != expected:
            raise ValueError(
                f"`log_table` of the factor over variables {self.variables.tolist()} must have shape "
                f"{expected} (their cardinalities); got {self.log_table.shape}."
            )

    def relabel(self, mapping: np.ndarray) -> TableFactor:
        return TableFactor(_check_mapping(mapping, self.variables), self.log_table)


class CardinalityFactor(Factor):
    """A log-potential on how many variables take one state: ``f[#{i : y_i = label}]``.

    Parameters
    ----------
    variables : sequence of int, length D
        Distinct variables: binary ones (the default), or of any cardinalities with ``label``.
    log_potentials : array_like of shape (D + 1,)
        ``log_potentials[k]`` is added to the score when exactly ``k`` of the variables take the counted
        state (state 1 of binary variables by default). ``-inf`` forbids a count. Kept, read-only, as the
        attribute of the same name.
    label : int, optional
        The counted state (``0 <= label < n_states``) of variables with more than two states, so that
        "how many tokens take label ``l``" needs no one-hot encoding. ``None`` (the default) counts state 1
        of binary variables (the factor of Tarlow et al. 2012).
    n_states : int or sequence of int, optional
        The cardinality of the variables (one number for all, or one per variable); required with
        ``label`` (the dense table and :meth:`evaluate` need it), and checked against the graph when the
        factor is added. Without ``label`` the variables are binary and ``n_states`` may only be 2.

    Attributes
    ----------
    variables : ndarray of int64, read-only
    log_potentials : ndarray of shape (D + 1,), read-only
    label : int or None
    n_states : ndarray of shape (D,), int64, read-only
        Each variable's cardinality (all 2 without ``label``).

    Notes
    -----
    Generic algorithms see this factor through :meth:`to_table` (``prod(n_states)`` entries, at most
    ``2**24``). Belief propagation handles it directly: a variable's incoming message collapses to two
    numbers, its counted state against the log-sum-exp (or, for max-product, the maximum) of its other
    states, the binary count machinery of :mod:`tractable.cardinality` runs on those (convolution tree,
    ``O(D log^2 D)``; sorting for max-product, ``O(D log D)``), and the binary message goes back to every
    state (the counted one gets the "on" value, all others the "off" value). This is exact: the factor
    depends on each variable only through "counted or not".

    Examples
    --------
    >>> import numpy as np
    >>> from tractable import CardinalityFactor
    >>> fac = CardinalityFactor([0, 1, 2], [0.0, 1.0, 2.0, 3.0], label=2, n_states=3)  # count the 2s
    >>> fac.evaluate(np.array([[2, 0, 2], [1, 1, 0]])).tolist()
    [2.0, 0.0]
    """

    def __init__(self, variables: Sequence[int], log_potentials, *, label: int | None = None, n_states=None) -> None:
        self.variables = _check_scope(variables)
        d = len(self.variables)
        f = as_float_array(log_potentials, "log_potentials", ndim=1)
        if f.shape != (d + 1,):
            raise ValueError(
                f"`log_potentials` must have shape ({d + 1},) (one entry per count 0..{d}); got {f.shape}."
            )
        f.flags.writeable = False
        self.log_potentials = f
        self.label, self.n_states = _check_label(label, n_states, d)

    @property
    def counted(self) -> int:
        """The counted state: ``label``, or 1 for binary variables without one."""
        return 1 if self.label is None else self.label

    def __repr__(self) -> str:
        if self.label is None:
            return f"CardinalityFactor(variables={self.variables.tolist()})"
        return f"CardinalityFactor(variables={self.variables.tolist()}, label={self.label})"

    def _with(self, variables, f) -> CardinalityFactor:
        """A factor of the same kind (label and cardinalities follow the variables) over other variables."""
        if self.label is None:
            return CardinalityFactor(variables, f)
        keep = np.isin(self.variables, variables) if len(variables) < len(self.variables) else slice(None)
        return CardinalityFactor(variables, f, label=self.label, n_states=self.n_states[keep])

    def to_table(self) -> np.ndarray:
        d = len(self.variables)
        cards = tuple(int(c) for c in self.n_states)
        size = int(np.prod(cards, dtype=float)) if d else 1
        if size > 2**24:
            raise ValueError(
                f"a CardinalityFactor over {d} variables has no dense table ({size} entries, more than 2**24); "
                "use an algorithm that handles cardinality factors directly."
            )
        counts = np.zeros(cards, dtype=np.int64)
        for i, c in enumerate(cards):
            shape = [1] * d
            shape[i] = c
            counts = counts + (np.arange(c) == self.counted).astype(np.int64).reshape(shape)
        return self.log_potentials[counts]

    def evaluate(self, values: np.ndarray) -> np.ndarray:
        values = _check_values(values, tuple(int(c) for c in self.n_states))
        return self.log_potentials[(values == self.counted).sum(axis=1)]

    def condition(self, evidence: Mapping[int, int]) -> CardinalityFactor | float:
        fixed_on = sum(int(evidence[int(v)]) == self.counted for v in self.variables if int(v) in evidence)
        kept = [int(v) for v in self.variables if int(v) not in evidence]
        f = self.log_potentials[fixed_on : fixed_on + len(kept) + 1]
        if not kept:
            return float(f[0])
        if len(kept) == len(self.variables):
            return self
        return self._with(kept, f)

    def check_cardinalities(self, cardinalities: np.ndarray) -> None:
        cardinalities = _check_cardinality_array(cardinalities, self.variables)
        card = cardinalities[self.variables]
        if np.any(card != self.n_states):
            i = int(np.argmax(card != self.n_states))
            bad = int(self.variables[i])
            if self.label is None:
                raise ValueError(
                    f"a CardinalityFactor needs binary variables; variable {bad} has cardinality "
                    f"{int(cardinalities[bad])} (give `label` and `n_states` to count one state of variables with "
                    "more states)."
                )
            raise ValueError(
                f"the {self!r} was given `n_states` {int(self.n_states[i])} for variable {bad}, which has "
                f"cardinality {int(cardinalities[bad])} in the graph."
            )

    def relabel(self, mapping: np.ndarray) -> CardinalityFactor:
        new = _check_mapping(mapping, self.variables)
        if self.label is None:
            return CardinalityFactor(new, self.log_potentials)
        return CardinalityFactor(new, self.log_potentials, label=self.label, n_states=self.n_states)


def _check_label(label, n_states, d: int) -> tuple[int | None, np.ndarray]:
    """``(label, n_states as a read-only (d,) int64 array)`` of a :class:`CardinalityFactor`, checked."""
    if label is None:
        if n_states is not None:
            ns = np.asarray(n_states)
            if ns.size and not (ns.dtype.kind in "iu" and np.all(ns == 2)):
                raise ValueError(
                    f"`n_states` of a CardinalityFactor without `label` must be 2 (binary variables); got {n_states!r}."
                    " Give `label` to count one state of variables with more states."
                )
        out = np.full(d, 2, dtype=np.int64)
        out.flags.writeable = False
        return None, out
    label = check_int(label, "label", minimum=0)
    if n_states is None:
        raise ValueError(
            f"`n_states` (the variables' cardinality) must be given with `label`; got label={label} and no n_states."
        )
    ns = np.asarray(n_states)
    if ns.ndim == 0:
        ns = np.full(d, check_int(n_states, "n_states", minimum=2), dtype=np.int64)
    else:
        ns = as_index_array(ns, "n_states")
        if ns.shape != (d,):
            raise ValueError(f"`n_states` must be one integer or one per variable ({d}); got shape {ns.shape}.")
        if ns.size and ns.min() < 2:
            raise ValueError(f"`n_states` must be integers >= 2; got {int(ns.min())}.")
    if ns.size and label >= ns.min():
        i = int(np.argmin(ns))
        raise ValueError(
            f"`label` must be a state of every variable (below its `n_states`); got label={label} for a variable "
            f"with n_states={int(ns[i])}."
        )
    ns = ns.copy()
    ns.flags.writeable = False
    return label, ns


class RecursiveCardinalityFactor(Factor):
    """A sum of count potentials over a nested family of subsets of binary variables.

    ``log_potential(y) = sum_s count_potentials[s][sum_{v in subsets[s]} y_v]``: the recursive
    cardinality potential of Tarlow et al. (2012, Sec. 5), the factor-graph form of
    :class:`tractable.cardinality.RecursiveCardinalityModel`.

    Parameters
    ----------
    variables : sequence of int, length D >= 1
        Distinct binary variables (indices of the graph the factor will be added to).
    subsets : sequence of sequences of int
        The subsets, each given by **graph variable indices** (not positions in ``variables``);
        every subset is non-empty, repeats no variable and lies within ``variables``. The family
        must be nested: any two subsets are disjoint or one contains the other (identical subsets
        are allowed; their potentials add). A variable need not be in any subset.
    count_potentials : sequence of array_like
        ``count_potentials[s]`` has shape ``(len(subsets[s]) + 1,)``: ``count_potentials[s][k]`` is
        added to the score when exactly ``k`` variables of ``subsets[s]`` are 1. ``-inf`` forbids a
        count (but not every count of a subset); NaN and ``+inf`` are rejected.

    Attributes
    ----------
    variables : ndarray of int64, read-only
    subsets : tuple of ndarray of int64, read-only
        Each subset's variables (graph indices), in the order of :attr:`variables`.
    count_potentials : tuple of ndarray of float64, read-only

    Raises
    ------
    ValueError
        Repeated or negative variables, a subset that is empty, repeats a variable or has a
        variable outside ``variables``, a non-nested family (naming the two offending subsets), a
        count potential of the wrong length, with NaN or ``+inf``, or ``-inf`` at every count.

    Notes
    -----
    The count tree aligned with the subsets (Sec. 5.2) is built once, at construction, and kept
    privately: belief propagation computes all ``D`` messages of the factor from one upward and one
    downward pass over it (:mod:`tractable.bp`). Generic algorithms see the factor through
    :meth:`to_table` (a ``2**D`` table, only for ``D <= 24``).

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.factorgraph import FactorGraph, RecursiveCardinalityFactor
    >>> # variables 3..6: at most one of {3, 4} on, and exactly two of all four on
    >>> f = RecursiveCardinalityFactor([3, 4, 5, 6], [[3, 4], [3, 4, 5, 6]],
    ...                                [[0, 0, -np.inf], [-np.inf, -np.inf, 0, -np.inf, -np.inf]])
    >>> f.evaluate(np.array([[1, 0, 1, 0], [1, 1, 0, 0]])).tolist()
    [0.0, -inf]
    >>> fg = FactorGraph([2] * 7)
    >>> fg.add_factor(f)
    0
    """

    def __init__(self, variables: Sequence[int], subsets, count_potentials) -> None:
        scope = _check_scope(variables)
        d = len(scope)
        if d == 0:
            raise ValueError("`variables` must not be empty; got [].")
        if isinstance(subsets, np.ndarray) and subsets.ndim == 2:
            subsets = list(subsets)
        if isinstance(subsets, (str, bytes)) or not isinstance(subsets, (Sequence, np.ndarray)):
            raise TypeError(f"`subsets` must be a sequence of sequences of variables; got {subsets!r}.")
        position = {int(v): i for i, v in enumerate(scope)}
        local = []
        for i, s in enumerate(subsets):
            idx = as_index_array(s, f"subsets[{i}]")
            if np.unique(idx).size != idx.size:
                raise ValueError(f"`subsets[{i}]` must not repeat a variable; got {idx.tolist()}.")
            outside = [int(v) for v in idx if int(v) not in position]
            if outside:
                raise ValueError(
                    f"`subsets[{i}]` must contain only the factor's `variables` {scope.tolist()}; "
                    f"got variable {outside[0]}."
                )
            local.append(np.array([position[int(v)] for v in idx], dtype=np.int64))
        n, subs, pots = validate_structure(d, local, count_potentials)
        self._init(scope, subs, pots, build_structure(n, subs, pots))

    def _init(self, scope: np.ndarray, local: tuple, pots: tuple, structure: CountTree) -> None:
        """Set the fields from trusted parts (``local``: sorted read-only positions into ``scope``)."""
        self._variables = scope
        self._local = local
        self._count_potentials = pots
        self._structure = structure  # the count tree (tractable._count_tree), built once
        subs = []
        for s in local:
            g = scope[s]
            g.flags.writeable = False
            subs.append(g)
        self._subsets = tuple(subs)

    @classmethod
    def _trusted(
        cls, scope: np.ndarray, local: list, pots: list, structure: CountTree | None = None
    ) -> RecursiveCardinalityFactor:
        """A factor from already checked parts; count potentials may be ``-inf`` everywhere (conditioning)."""
        local_t, pots_t = [], []
        for s, f in zip(local, pots):
            s = np.sort(np.asarray(s, dtype=np.int64))
            f = np.array(f, dtype=np.float64)
            s.flags.writeable = False
            f.flags.writeable = False
            local_t.append(s)
            pots_t.append(f)
        scope = np.array(scope, dtype=np.int64)
        scope.flags.writeable = False
        if structure is None:
            structure = build_structure(len(scope), tuple(local_t), tuple(pots_t))
        fac = object.__new__(cls)
        fac._init(scope, tuple(local_t), tuple(pots_t), structure)
        return fac

    @property
    def variables(self) -> np.ndarray:
        """The factor's variables, shape (D,), int64, read-only."""
        return self._variables

    @property
    def subsets(self) -> tuple:
        """The subsets as read-only int64 arrays of graph variable indices, in the order given."""
        return self._subsets

    @property
    def count_potentials(self) -> tuple:
        """The count potentials (read-only float64 arrays), in the order of :attr:`subsets`."""
        return self._count_potentials

    def __repr__(self) -> str:
        return f"RecursiveCardinalityFactor(variables={self._variables.tolist()}, n_subsets={len(self._subsets)})"

    def to_table(self) -> np.ndarray:
        d = len(self._variables)
        if d > 24:
            raise ValueError(
                f"a RecursiveCardinalityFactor over {d} variables has no dense table (2**{d} entries); use an "
                "algorithm that handles recursive cardinality factors directly."
            )
        bits = [np.arange(2).reshape([2 if j == i else 1 for j in range(d)]) for i in range(d)]
        table = np.zeros((2,) * d)
        for s, f in zip(self._local, self._count_potentials):
            counts = sum((bits[i] for i in s), np.zeros((1,) * d, dtype=np.int64))
            table = table + f[counts]
        return table

    def evaluate(self, values: np.ndarray) -> np.ndarray:
        values = _check_values(values, (2,) * len(self._variables))
        out = np.zeros(values.shape[0])
        for s, f in zip(self._local, self._count_potentials):
            out = out + f[values[:, s].sum(axis=1)]
        return out

    def condition(self, evidence: Mapping[int, int]) -> RecursiveCardinalityFactor | float:
        fixed = np.array([int(v) in evidence for v in self._variables])
        if not fixed.any():
            return self
        state = np.array([int(evidence[int(v)]) if f else 0 for v, f in zip(self._variables, fixed)], dtype=np.int64)
        new_pos = np.cumsum(~fixed) - 1  # position of a kept variable among the kept ones
        constant = 0.0
        local, pots = [], []
        for s, f in zip(self._local, self._count_potentials):
            c = int(state[s].sum())
            kept = s[~fixed[s]]
            if kept.size == 0:
                constant += float(f[c])
                continue
            local.append(new_pos[kept])
            pots.append(f[c : c + kept.size + 1])
        n_kept = int((~fixed).sum())
        if n_kept == 0:
            return float(constant)
        if constant != 0.0:  # fold the fully fixed subsets' values into one kept count potential
            if pots:
                pots[0] = pots[0] + constant
            else:  # the set of all kept variables keeps the family nested
                local.append(np.arange(n_kept))
                pots.append(np.full(n_kept + 1, constant))
        return type(self)._trusted(self._variables[~fixed], local, pots)

    def check_cardinalities(self, cardinalities: np.ndarray) -> None:
        cardinalities = _check_cardinality_array(cardinalities, self._variables)
        card = cardinalities[self._variables]
        if np.any(card != 2):
            bad = int(self._variables[np.argmax(card != 2)])
            raise ValueError(
                f"a RecursiveCardinalityFactor needs binary variables; variable {bad} has cardinality "
                f"{int(cardinalities[bad])}."
            )

    def relabel(self, mapping: np.ndarray) -> RecursiveCardinalityFactor:
        # positions in `variables` do not change, so the count tree is shared
        new = _check_mapping(mapping, self._variables)
        return type(self)._trusted(new, self._local, self._count_potentials, self._structure)


class CliqueFactor(Factor):
    """A clique of variables with ``m`` states each whose log-potential depends only on the label counts.

    ``log_potential(y) = potential(counts(y) + fixed_counts)`` with ``counts(y)[l] = #{i : y_i = l}``: a
    cardinality-based clique potential of Gupta, Diwan and Sarawagi (ICML 2007), e.g. the associative
    clique over all occurrences of a word (Sec. 2.1 of the paper). Scores, not energies: the potential's
    value is added to the log-probability, as every factor's log-potential is.

    Parameters
    ----------
    variables : sequence of int, length n
        Distinct variables, all with ``n_states`` states.
    potential : tractable.clique.CliquePotential
        :class:`~tractable.clique.Potts`, :class:`~tractable.clique.Entropy`,
        :class:`~tractable.clique.SumPotential`, :class:`~tractable.clique.MaxPotential`,
        :class:`~tractable.clique.Makespan`, :class:`~tractable.clique.SquareMakespan`,
        :class:`~tractable.clique.LinearMajority` or :class:`~tractable.clique.CountPotential`.
    n_states : int, optional
        ``m``, the number of states (labels) of every variable, ``>= 2``. Taken from the potential when it
        fixes it (the rows of a ``SumPotential`` / ``MaxPotential`` table, the size of ``W``); otherwise
        (``Potts``, ``Entropy``, the makespans and ``CountPotential`` fit any ``m``) from the graph: the factor
        added to a :class:`FactorGraph` becomes one with its variables' cardinality (``add_factor`` stores
        that copy), and until then its table, ``evaluate`` and ``condition`` raise ``ValueError``.
    fixed_counts : array_like of int, shape (m,), optional
        Counts added to the variables' counts before the potential is evaluated (default zeros): what a
        clique keeps of its observed variables when it is conditioned on them (:meth:`condition`).

    Attributes
    ----------
    variables : ndarray of int64, read-only
    potential : CliquePotential
    n_states : int
    fixed_counts : ndarray of shape (m,), int64, read-only

    Raises
    ------
    TypeError
        ``potential`` is not a CliquePotential.
    ValueError
        Repeated or negative variables; ``n_states`` missing where the potential does not fix it, or
        different from the one the potential fixes; negative ``fixed_counts`` or a wrong shape; a
        potential not defined for ``n + sum(fixed_counts)`` nodes and ``m`` labels (a table too short).
        Adding the factor to a graph where a variable has another cardinality than ``n_states`` raises
        a ``ValueError`` naming the factor and the variable.

    Notes
    -----
    :meth:`to_table` exists for ``m**n <= 2**24`` (exact inference and oracles on small cliques). Belief
    propagation handles the clique directly (:mod:`tractable.bp`): max-product by alpha-pass
    max-marginals (exact for MAX-family potentials and for ``m = 2``), sum-product exactly by dynamic
    programming over count vectors while their number is moderate (``m = 2``: the convolution tree).

    Examples
    --------
    >>> import numpy as np
    >>> from tractable import CliqueFactor
    >>> from tractable.clique import Potts
    >>> fac = CliqueFactor([0, 1, 2], Potts(0.5), n_states=3)
    >>> fac.evaluate(np.array([[0, 0, 2], [1, 1, 1]])).tolist()  # 0.5 * (2**2 + 1**2), 0.5 * 3**2
    [2.5, 4.5]
    """

    def __init__(self, variables: Sequence[int], potential, *, n_states: int | None = None, fixed_counts=None) -> None:
        from .potentials import CliquePotential

        self.variables = _check_scope(variables)
        if not isinstance(potential, CliquePotential):
            raise TypeError(
                "`potential` must be a tractable.clique.CliquePotential (Potts, Entropy, SumPotential, MaxPotential, "
                f"Makespan, SquareMakespan, LinearMajority or CountPotential); got {type(potential).__name__}."
            )
        fixed_m = _labels_of(potential)
        if n_states is None and fixed_m is None:
            # the graph the factor joins gives it (FactorGraph.add_factor binds it to its variables' cardinality)
            if fixed_counts is not None:
                raise ValueError("`fixed_counts` needs `n_states` (one count per state); got no `n_states`.")
            self.potential = potential
            self.n_states = None
            self.fixed_counts = None
            return
        if n_states is None:
            n_states = fixed_m
        m = check_int(n_states, "n_states", minimum=2)
        if fixed_m is not None and fixed_m != m:
            raise ValueError(f"`n_states` must be {fixed_m}, the number of labels of {potential!r}; got {m}.")
        if fixed_counts is None:
            fixed = np.zeros(m, dtype=np.int64)
        else:
            fixed = as_index_array(fixed_counts, "fixed_counts")
            if fixed.shape != (m,):
                raise ValueError(f"`fixed_counts` must have shape ({m},) (one count per state); got {fixed.shape}.")
            if fixed.size and fixed.min() < 0:
                raise ValueError(f"`fixed_counts` must be non-negative; got {fixed.tolist()}.")
        potential.check(len(self.variables) + int(fixed.sum()), m)
        fixed.flags.writeable = False
        self.potential = potential
        self.n_states = m
        self.fixed_counts = fixed

    def _states(self) -> int:
        """``n_states``, which an unbound factor (built without it) learns when it joins a graph."""
        if self.n_states is None:
            raise ValueError(
                f"the number of states of {self!r} is not known yet: give `n_states`, or add the factor to a "
                "FactorGraph first (the graph's copy knows it)."
            )
        return self.n_states

    def _bind(self, cardinalities: np.ndarray) -> CliqueFactor:
        if self.n_states is not None:
            return self
        return CliqueFactor(self.variables, self.potential, n_states=int(cardinalities[self.variables[0]]))

    def __repr__(self) -> str:
        extra = (
            f", fixed_counts={self.fixed_counts.tolist()}"
            if self.fixed_counts is not None and self.fixed_counts.any()
            else ""
        )
        return (
            f"CliqueFactor(variables={self.variables.tolist()}, potential={self.potential!r}, "
            f"n_states={self.n_states}{extra})"
        )

    @property
    def family(self) -> str:
        """The potential's family: ``"sum"``, ``"max"``, ``"majority"`` or ``"general"``."""
        return self.potential.family

    def _count_values(self, counts) -> np.ndarray:
        """The log-potential at count vectors of the variables: ``potential(counts + fixed_counts)``.

        Parameters
        ----------
        counts : ndarray of shape (..., n_states), int
            Counts of the factor's variables (each row sums to ``len(variables)``).

        Returns
        -------
        ndarray of shape (...)
        """
        c = np.asarray(counts, dtype=np.int64) + self.fixed_counts
        return np.asarray(self.potential(c), dtype=np.float64).reshape(c.shape[:-1])

    def to_table(self) -> np.ndarray:
        n, m = len(self.variables), self._states()
        if n * np.log2(m) > 24:
            raise ValueError(
                f"a CliqueFactor over {n} variables with {m} states has no dense table ({m}**{n} entries, more than "
                "2**24); use an algorithm that handles clique factors directly (tractable.bp.loopy)."
            )
        if n == 0:
            return np.array(float(self._count_values(np.zeros(m, dtype=np.int64))))
        size = m**n
        out = np.empty(size)
        chunk = max(1, (1 << 22) // (n * m))
        for lo in range(0, size, chunk):
            idx = np.arange(lo, min(size, lo + chunk))
            labels = np.stack(np.unravel_index(idx, (m,) * n), axis=1)
            out[lo : lo + idx.size] = self._count_values(_row_counts(labels, m))
        return out.reshape((m,) * n)

    def evaluate(self, values: np.ndarray) -> np.ndarray:
        values = _check_values(values, (self._states(),) * len(self.variables))
        if values.shape[0] == 0:
            return np.zeros(0)
        return self._count_values(_row_counts(values, self.n_states))

    def condition(self, evidence: Mapping[int, int]) -> CliqueFactor | float:
        self._states()
        fixed = self.fixed_counts.copy()
        kept = []
        for v in self.variables:
            if int(v) in evidence:
                fixed[int(evidence[int(v)])] += 1
            else:
                kept.append(int(v))
        if not kept:
            return float(self.potential(fixed))
        if len(kept) == len(self.variables):
            return self
        return CliqueFactor(kept, self.potential, n_states=self.n_states, fixed_counts=fixed)

    def check_cardinalities(self, cardinalities: np.ndarray) -> None:
        cardinalities = _check_cardinality_array(cardinalities, self.variables)
        card = cardinalities[self.variables]
        m = self.n_states if self.n_states is not None else (int(card[0]) if card.size else 2)
        if self.n_states is None and card.size:
            self.potential.check(len(self.variables), m)
        if np.any(card != m):
            bad = int(self.variables[np.argmax(card != m)])
            raise ValueError(
                f"every variable of {self!r} must have {m} states (`n_states`); variable {bad} has "
                f"cardinality {int(cardinalities[bad])}."
            )

    def relabel(self, mapping: np.ndarray) -> CliqueFactor:
        return CliqueFactor(
            _check_mapping(mapping, self.variables),
            self.potential,
            n_states=self.n_states,
            fixed_counts=self.fixed_counts,
        )


def _labels_of(potential) -> int | None:
    """The number of labels a clique potential fixes (its table's rows, its ``W``), or None."""
    from .potentials import LinearMajority, MaxPotential, SumPotential

    if isinstance(potential, (SumPotential, MaxPotential)):
        return int(potential.f.shape[0])
    if isinstance(potential, LinearMajority):
        return int(potential.W.shape[0])
    return None


def _row_counts(labels: np.ndarray, m: int) -> np.ndarray:
    """Label counts of each row of ``labels`` (batch, n): shape (batch, m)."""
    b = labels.shape[0]
    flat = (labels + m * np.arange(b)[:, None]).ravel()
    return np.bincount(flat, minlength=b * m).reshape(b, m)


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
        self._compiled = None  # (n_factors, compiled form): see _compiled_form
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

    # ------------------------------------------------------------------ the compiled form (a cache)
    _compiled = None  # graphs unpickled from earlier versions have no cache either

    def _compiled_form(self, build):
        """``build(self)`` (:func:`tractable._compiled_graph.compiled_graph`'s builder), computed once and kept until
        the graph changes: :meth:`add_factor` drops it, and a graph whose factor list grew some other way (a
        shallow copy sharing it) is rebuilt too."""
        n = len(self._factors)
        if self._compiled is None or self._compiled[0] != n:
            self._compiled = (n, build(self))
        return self._compiled[1]

    def __getstate__(self) -> dict:
        """Pickles and copies leave the compiled form out (it is rebuilt on use)."""
        state = self.__dict__.copy()
        state.pop("_compiled", None)
        return state

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
        if isinstance(factor, CliqueFactor):
            factor = factor._bind(self._cardinalities)  # one built without `n_states` takes the graph's
        self._factors.append(factor)
        self._compiled = None
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
            ``constant + sum of the factors' log-potentials`` (``-inf`` for forbidden assignments; ``+inf``
            or ``-inf`` when the sum of finite log-potentials lies beyond float64's range, about 1.8e308,
            which the algorithms refuse). Partial sums never overflow: log-potentials near 1e308 that
            cancel give their finite sum, never ``inf`` or NaN.
        """
        a, single = self._check_assignment(assignment)
        total = np.full(a.shape[0], self.constant)
        with np.errstate(over="ignore", invalid="ignore"):
            for factor in self._factors:
                total += factor.evaluate(a[:, factor.variables])
        if not np.all(np.isfinite(total)):  # -inf (forbidden), or a sum of finite terms that overflowed
            rows = np.flatnonzero(~np.isfinite(total))
            total[rows] = self._score_scaled(a[rows])
        return float(total[0]) if single else total

    def _score_scaled(self, a: np.ndarray) -> np.ndarray:
        """Scores of the assignments ``a`` summed scaled by ``2**-k`` (exact), so that no partial sum of
        finite log-potentials overflows: ``-inf`` for a forbidden assignment, ``±inf`` only for a total
        beyond float64's range."""
        k = (len(self._factors) + 2).bit_length() + 1
        scaled = np.full(a.shape[0], np.ldexp(self.constant, -k))
        for factor in self._factors:
            scaled += np.ldexp(factor.evaluate(a[:, factor.variables]), -k)
        with np.errstate(over="ignore"):
            return np.ldexp(scaled, k)

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
            if isinstance(sub, TableFactor):  # the mapping is valid by construction: no checks, no copy
                factors.append(TableFactor._trusted(mapping[sub.variables], sub.log_table))
            elif isinstance(sub, Factor):
                factors.append(sub.relabel(mapping))
            else:
                constant += sub
        state_names = None if self._state_names is None else [self._state_names[i] for i in kept]
        out = FactorGraph(
            self._cardinalities[kept], [self._names[i] for i in kept], constant=constant, state_names=state_names
        )
        out._factors = factors  # a new graph: its compiled-form cache is empty
        kept.flags.writeable = False
        out._kept_variables = kept
        return out
