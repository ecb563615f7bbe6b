"""A :class:`~tractable.FactorGraph` compiled once into the arrays every engine over factor graphs shares.

:func:`compiled_graph` makes one Python pass over the factors and returns a frozen :class:`CompiledGraph`:
the table factors stacked by shape, the other factors by position, the edges numbered in factor order with
the variable -> edges CSR, and the scoring plan. It is cached on the graph (every change of the graph drops
it), so belief propagation, the samplers and ``prune`` on one graph compile it once between them. What is
specific to an engine is built from it there: belief propagation's prior, shifts and message-handler groups
(``bp/_wiring.py``), the samplers' fields, couplings and general factors (``sampling/_wiring.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .factorgraph import FactorGraph, TableFactor

__all__ = ["CompiledGraph", "ScorePlan", "TableStack", "compiled_graph", "score"]


@dataclass(frozen=True)
class TableStack:
    """The table factors of one shape, stacked (read-only arrays).

    Attributes
    ----------
    shape : tuple of int, length k >= 1
        The shape of their tables.
    positions : ndarray of shape (F,), int64
        Their positions in ``fg.factors``, increasing.
    tables : ndarray of shape (F, prod(shape)), float64
        Their log tables, flattened in C order.
    variables : ndarray of shape (F, k), int64
        Their variables, in the order of the tables' axes.
    """

    shape: tuple
    positions: np.ndarray
    tables: np.ndarray
    variables: np.ndarray


@dataclass(frozen=True)
class ScorePlan:
    """How to score an assignment of a graph with one gather per table shape.

    Attributes
    ----------
    constant : float
        The graph's constant.
    n_factors : int
    tables : tuple of (positions (F,), tables (F, S), variables (F, k), strides (k,))
        The table factors of each shape: their positions in ``fg.factors``, their flattened tables, their
        variables and the C-order strides of the shape.
    others : tuple of (position, factor)
        Every other factor (scored by its own ``evaluate``), in factor order.
    """

    constant: float
    n_factors: int
    tables: tuple
    others: tuple

    def score(self, assignment: np.ndarray) -> float:
        """The score of one assignment (``(n,)`` int64, valid states) with one gather per table shape: the factors'
        values summed in factor order from the constant (a cumulative sum, as ``FactorGraph.score`` adds them), so
        a finite result is the same float; ``-inf``, ``inf`` or NaN where a factor forbids it or a partial sum
        overflows (:func:`score` then asks the graph, which sums scaled)."""
        values = np.empty(self.n_factors + 1)
        values[0] = self.constant
        for pos, flat, variables, strides in self.tables:
            values[1 + pos] = flat[np.arange(flat.shape[0]), assignment[variables] @ strides]
        for pos, fac in self.others:
            values[1 + pos] = fac.evaluate(assignment[fac.variables][None, :])[0]
        with np.errstate(over="ignore", invalid="ignore"):
            return float(np.cumsum(values)[-1])


@dataclass(frozen=True)
class CompiledGraph:
    """A factor graph as the arrays its engines share (read-only; see :func:`compiled_graph`).

    Every (factor, variable) pair is an *edge*; edges are numbered in the order of ``fg.factors``, a factor's
    edges in the order of its variables.

    Attributes
    ----------
    cardinalities : ndarray of shape (n,), int64
    constant : float
        The graph's constant.
    factors : tuple of Factor
        ``fg.factors``.
    types : frozenset of type
        The factors' types.
    tables : tuple of TableStack
        The :class:`~tractable.TableFactor` s (and subclasses) over at least one variable, one stack per table
        shape, the shapes in the order of their first factor.
    others : tuple of int
        The positions of the other factors over at least one variable, increasing.
    empty : tuple of int
        The positions of the factors over no variable (of every type), increasing.
    arity : ndarray of shape (n_factors,), int64
        Each factor's number of variables (its edges).
    edge_start : ndarray of shape (n_factors,), int64
        Factor ``f``'s edges are ``edge_start[f] .. edge_start[f] + arity[f] - 1``.
    edge_var : ndarray of shape (n_edges,), int64
        The variable of every edge.
    var_ptr, var_edges : ndarray of shape (n + 1,) and (n_edges,), int64
        Variable ``v``'s edges are ``var_edges[var_ptr[v]:var_ptr[v + 1]]``, increasing.
    score : ScorePlan
        The graph's scoring plan.
    """

    cardinalities: np.ndarray
    constant: float
    factors: tuple
    types: frozenset
    tables: tuple
    others: tuple
    empty: tuple
    arity: np.ndarray
    edge_start: np.ndarray
    edge_var: np.ndarray
    var_ptr: np.ndarray
    var_edges: np.ndarray
    score: ScorePlan

    @property
    def n_factors(self) -> int:
        return len(self.factors)

    def stack(self, shape: tuple) -> TableStack | None:
        """The stack of the table factors of ``shape``, or None when there is none."""
        return next((s for s in self.tables if s.shape == shape), None)


def compiled_graph(fg: FactorGraph) -> CompiledGraph:
    """The :class:`CompiledGraph` of ``fg``: built on the first call, then the same object until ``fg`` changes
    (``add_factor`` drops it)."""
    return fg._compiled_form(_build)


def score(fg: FactorGraph, assignment: np.ndarray) -> float:
    """``fg.score(assignment)``, the same float, for one valid assignment ``(n,)`` int64: by the cached
    :class:`ScorePlan` (one gather per table shape instead of one call per factor), and by ``fg.score`` itself
    where that sum is not finite."""
    value = compiled_graph(fg).score.score(assignment)
    return value if np.isfinite(value) else float(fg.score(assignment))


def _table_shapes(factors) -> tuple[dict, list, list, set]:
    """One pass over ``factors``: ``{shape: positions}`` of the table factors over at least one variable,
    the positions of the other factors over at least one variable, those of the factors over none, and the
    set of the factors' types."""
    types = set(map(type, factors))
    if types <= {TableFactor}:  # plain tables only (the common case): grouped by shape with NumPy
        shapes = [fac.log_table.shape for fac in factors]
        index = {shape: k for k, shape in enumerate(dict.fromkeys(shapes))}
        ids = np.fromiter(map(index.__getitem__, shapes), dtype=np.int64, count=len(shapes))
        by_shape = {shape: np.flatnonzero(ids == k).tolist() for shape, k in index.items() if shape}
        return by_shape, [], np.flatnonzero(ids == index[()]).tolist() if () in index else [], types
    by_shape: dict = {}
    others: list = []
    empty: list = []
    for fi, fac in enumerate(factors):
        if len(fac.variables) == 0:
            empty.append(fi)
        elif isinstance(fac, TableFactor):
            by_shape.setdefault(fac.log_table.shape, []).append(fi)
        else:
            others.append(fi)
    return by_shape, others, empty, types


def _stack(factors, shape: tuple, positions: list) -> TableStack:
    """The :class:`TableStack` of the table factors at ``positions`` (all of ``shape``), concatenated along their
    first axis (much faster than ``np.stack`` for many small arrays)."""
    pos = np.asarray(positions, dtype=np.int64)
    n = len(positions)
    tables = np.concatenate([factors[i].log_table for i in positions]).reshape(n, -1)
    variables = np.concatenate([factors[i].variables for i in positions]).astype(np.int64, copy=False).reshape(n, -1)
    return TableStack(shape, _frozen(pos), _frozen(tables), _frozen(variables))


def _strides(shape: tuple) -> np.ndarray:
    return np.asarray(np.cumprod((shape[1:] + (1,))[::-1])[::-1], dtype=np.int64).reshape(len(shape))


def _plan(fg: FactorGraph, factors, stacks: tuple, types: set, rest: list) -> ScorePlan:
    """The :class:`ScorePlan` from the table stacks; ``rest``: the other factors' positions."""
    tables, others = [], []
    plain = TableFactor.evaluate
    every = all(t.evaluate is plain for t in types if issubclass(t, TableFactor))
    for st in stacks:
        pos, flat, variables = st.positions, st.tables, st.variables
        if every:
            tables.append((pos, flat, variables, _strides(st.shape)))
            continue
        own = np.fromiter((type(factors[i]).evaluate is plain for i in pos.tolist()), dtype=bool, count=pos.shape[0])
        if own.any():
            tables.append((pos[own], flat[own], variables[own], _strides(st.shape)))
        others += [int(i) for i in pos[~own]]
    others = sorted(others + rest)
    return ScorePlan(float(fg.constant), len(factors), tuple(tables), tuple((i, factors[i]) for i in others))


def _edges(n: int, factors, stacks: tuple, others: list) -> tuple[np.ndarray, ...]:
    """``(arity, edge_start, edge_var, var_ptr, var_edges)`` of :class:`CompiledGraph` (tables a shape at a
    time, the other factors one by one)."""
    arity = np.zeros(len(factors), dtype=np.int64)
    for st in stacks:
        arity[st.positions] = len(st.shape)
    for fi in others:
        arity[fi] = len(factors[fi].variables)
    start = np.cumsum(arity) - arity
    edge_var = np.empty(int(arity.sum()), dtype=np.int64)
    for st in stacks:
        edge_var[start[st.positions][:, None] + np.arange(len(st.shape))[None, :]] = st.variables
    for fi in others:
        edge_var[start[fi] : start[fi] + arity[fi]] = factors[fi].variables
    var_edges = np.argsort(edge_var, kind="stable").astype(np.int64)
    var_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(edge_var, minlength=n), out=var_ptr[1:])
    return tuple(_frozen(a) for a in (arity, start, edge_var, var_ptr, var_edges))


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _build(fg: FactorGraph) -> CompiledGraph:
    """The :class:`CompiledGraph` of ``fg`` (uncached; one Python pass over the factors)."""
    factors = fg.factors
    by_shape, others, empty, types = _table_shapes(factors)
    stacks = tuple(_stack(factors, shape, positions) for shape, positions in by_shape.items())
    plan = _plan(fg, factors, stacks, types, others + empty)
    edges = _edges(fg.n_variables, factors, stacks, others)
    return CompiledGraph(
        fg.cardinalities, float(fg.constant), factors, frozenset(types), stacks, tuple(others), tuple(empty), *edges,
        plan,
    )  # fmt: skip
