"""A factor graph compiled into the flat arrays the belief-propagation engine iterates on.

The graph's shared compiled form (:func:`tractable._compiled_graph.compiled_graph`: table stacks, edges,
scoring plan; cached on the graph) is built once; this module adds what only belief propagation needs: the
prior of the single-variable tables, the shifts of huge tables, the edges without the folded tables, and the
factors grouped by message handler.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._compiled_graph import CompiledGraph, ScorePlan, compiled_graph
from ..factorgraph import FactorGraph, TableFactor
from . import _kernels
from ._blocks import spanning_forest
from ._registry import handler_for

__all__ = ["ScorePlan", "Wiring", "Workspace", "compile_graph", "score_plan"]


@dataclass(frozen=True)
class Wiring:
    """The edges of a factor graph and its factors grouped by message handler (read-only).

    Attributes
    ----------
    cardinalities : ndarray of shape (n,)
    width : int
        ``K``, the largest cardinality: messages are ``(n_edges, K)`` arrays.
    prior : ndarray of shape (n, K)
        Single-variable table factors, summed per variable (they need no messages); ``-inf`` past
        each variable's cardinality.
    constant : float
        The graph's constant plus the factors over no variable.
    edge_var : ndarray of shape (n_edges,)
        The variable of every (factor, variable) edge.
    edge_card : ndarray of shape (n_edges,)
        Its cardinality.
    pad : ndarray of shape (n_edges, K), bool
        Entries past the edge variable's cardinality.
    var_ptr, var_edges : ndarray of shape (n + 1,) and (n_edges,)
        Variable ``v``'s edges are ``var_edges[var_ptr[v]:var_ptr[v + 1]]``, in increasing order.
    groups : tuple of (handler, compiled, edge ids, factor indices)
        Factors grouped by handler (all at once, for the parallel schedule) or one factor per group
        (for the sequential schedule); the indices are the factors' positions in ``fg.factors``.
    unary : tuple of (positions, variables)
        The single-variable table factors folded into ``prior``: their positions in ``fg.factors`` and
        their variables (int64 arrays).
    score : ScorePlan
        The graph's scoring plan (its original tables, before any shift).
    blocks : tuple of (int, ndarray of shape (F, K, K)) or None
        With ``compile_graph(..., blocks=True)``, the spanning forest of pairwise table factors of the
        ``"blocks"`` schedule: the index in ``groups`` of its group (its ``F`` factors in factor order, edge ids
        ``groups[i][2].reshape(F, 2)`` in the order of their tables' axes) and their (shifted) log tables
        padded with ``-inf`` to ``K x K``; None otherwise or when the graph has no pairwise table factor.
    """

    cardinalities: np.ndarray
    width: int
    prior: np.ndarray
    constant: float
    edge_var: np.ndarray
    edge_card: np.ndarray
    pad: np.ndarray
    var_ptr: np.ndarray
    var_edges: np.ndarray
    groups: tuple
    unary: tuple
    score: ScorePlan
    blocks: tuple | None = None


#: table factors with a finite entry larger in magnitude than this are shifted (see :func:`compile_graph`)
SHIFT_ABOVE = 2.0**20


def _shifted(table: np.ndarray) -> tuple[np.ndarray, float]:
    """``(table - m, m)`` for ``m`` the largest finite entry when some finite entry exceeds
    :data:`SHIFT_ABOVE` in magnitude; ``(table, 0.0)`` otherwise. A finite entry more than float64's
    range below ``m`` becomes ``-inf`` (its weight ``exp(entry - m)`` is 0 in float64 either way)."""
    finite = np.isfinite(table)
    if not np.any(finite & (np.abs(table) > SHIFT_ABOVE)):
        return table, 0.0
    m = float(np.max(table[finite]))
    with np.errstate(over="ignore"):
        return table - m, m


def score_plan(fg: FactorGraph) -> ScorePlan:
    """The :class:`~tractable._compiled_graph.ScorePlan` of ``fg``: its table factors stacked by shape (from the
    graph's cached compiled form)."""
    return compiled_graph(fg).score


def _forest_mask(stacks: dict, factors, types: set, n: int, table_handler, handler_of) -> np.ndarray:
    """Which factors the ``"blocks"`` schedule's spanning forest takes (bool, one per factor): the table factors
    over two variables whose handler is the plain tables' one, greedily in factor order
    (:func:`~tractable.bp._blocks.spanning_forest`)."""
    pos, var = [], []
    for shape, (p, _, variables) in stacks.items():
        if len(shape) != 2:
            continue
        if not types <= {TableFactor}:  # a subclass with messages of its own stays an ordinary factor
            ok = np.fromiter((handler_of(type(factors[i])) is table_handler for i in p.tolist()), bool, p.shape[0])
            p, variables = p[ok], variables[ok]
        pos.append(p)
        var.append(variables)
    mask = np.zeros(len(factors), dtype=bool)
    if not pos:
        return mask
    pos, var = np.concatenate(pos), np.concatenate(var)
    order = np.argsort(pos, kind="stable")
    pos, var = pos[order], var[order]
    mask[pos[spanning_forest(var[:, 0], var[:, 1], n)]] = True
    return mask


def compile_graph(fg: FactorGraph, *, per_factor: bool = False, blocks: bool = False) -> Wiring:
    """Compile ``fg`` (already validated by its construction) into a :class:`Wiring`.

    A :class:`~tractable.TableFactor` with finite log-potentials larger in magnitude than
    :data:`SHIFT_ABOVE` runs shifted by its largest finite entry, which goes into ``constant``: no
    message sum then overflows (two scores near 1e308 would give ``inf``, then NaN), and a huge reward
    does not swallow the O(1) differences added to it.

    Table factors are handled a shape at a time (one stack of their tables per shape, one Python pass over
    the factors in all); edges are numbered in the order of ``fg.factors``, skipping the single-variable
    tables (folded into ``prior``).

    With ``blocks`` (the ``"blocks"`` schedule; not with ``per_factor``), the pairwise table factors of a greedy
    spanning forest (:func:`_forest_mask`) form a group of their own, the last one, described by
    :attr:`Wiring.blocks`.
    """
    graph = compiled_graph(fg)
    card = graph.cardinalities
    n = card.shape[0]
    width = int(card.max()) if n else 1
    states = np.arange(width)
    prior = np.where(states[None, :] < card[:, None], 0.0, -np.inf)
    factors, others, types = graph.factors, graph.others, graph.types
    additions = [(fi, float(factors[fi].to_table())) for fi in graph.empty]  # added to the constant in factor order
    stacks = {st.shape: (st.positions, st.tables, st.variables) for st in graph.tables}
    shifted: dict = {}  # factor position -> its shifted table (factors over two or more variables)
    unary_pos, unary_var = [], []
    for shape, (pos, flat, variables) in stacks.items():
        big = np.flatnonzero(np.any(np.isfinite(flat) & (np.abs(flat) > SHIFT_ABOVE), axis=1))
        if big.size:  # rare: the rows to shift, one at a time
            flat = flat.copy()
            for r in big.tolist():
                table, m = _shifted(flat[r])
                if not m:
                    continue
                flat[r] = table
                additions.append((int(pos[r]), m))
                if len(shape) > 1:
                    shifted[int(pos[r])] = flat[r].reshape(shape)
        if len(shape) == 1:  # single-variable tables: summed into the prior, in factor order
            with np.errstate(over="ignore", invalid="ignore"):
                np.add.at(prior, (variables[:, :1], np.arange(shape[0])[None, :]), flat)
            unary_pos.append(pos)
            unary_var.append(variables[:, 0])
    unary = (
        np.concatenate(unary_pos) if unary_pos else np.zeros(0, np.int64),
        np.concatenate(unary_var) if unary_var else np.zeros(0, np.int64),
    )
    arity, start, ev, var_ptr, var_edges = _edges_without(graph, unary[0])
    constant = float(fg.constant)
    for _, value in sorted(additions, key=lambda a: a[0]):
        constant += value
    # every factor with edges, by handler: chunks of (positions, factors, edge-id rows), then in factor order
    cache: dict = {}
    chunks: dict = {}

    def handler_of(cls):
        if cls not in cache:
            cache[cls] = handler_for(cls)
        return cache[cls]

    def with_shifts(pos: np.ndarray) -> list:
        facs = [factors[p] for p in pos.tolist()]
        for r in np.flatnonzero(np.isin(pos, list(shifted))).tolist():  # a plain TableFactor, as before
            facs[r] = TableFactor._trusted(np.asarray(facs[r].variables, dtype=np.int64), shifted[int(pos[r])])
        return facs

    in_forest = None
    forest_parts = []  # (positions, edge-id rows) of the spanning forest's factors, by shape
    if blocks and not per_factor:
        table_handler = handler_of(TableFactor)
        in_forest = _forest_mask(stacks, factors, types, n, table_handler, handler_of)
    for shape, (pos, _, _) in stacks.items():
        if len(shape) < 2:
            continue
        eids = start[pos][:, None] + np.arange(len(shape))[None, :]
        if in_forest is not None and len(shape) == 2 and in_forest[pos].any():
            tree_rows = in_forest[pos]
            forest_parts.append((pos[tree_rows], eids[tree_rows]))
            pos, eids = pos[~tree_rows], eids[~tree_rows]
            if not pos.size:
                continue
        facs = with_shifts(pos)
        kinds = [type(f) for f in facs]
        if len(set(kinds)) == 1:  # the common case: one type, one handler for the whole shape
            chunks.setdefault(handler_of(kinds[0]), []).append((pos, facs, list(eids)))
            continue
        of = [handler_of(k) for k in kinds]
        for h in dict.fromkeys(of):
            keep = [i for i, g in enumerate(of) if g is h]
            chunks.setdefault(h, []).append((pos[keep], [facs[i] for i in keep], list(eids[keep])))
    for fi in others:
        eids = np.arange(start[fi], start[fi] + arity[fi], dtype=np.int64)
        chunks.setdefault(handler_of(type(factors[fi])), []).append((np.array([fi]), [factors[fi]], [eids]))
    by_handler = {}
    for h, parts in chunks.items():
        pos = np.concatenate([p for p, _, _ in parts])
        facs = [f for _, fs, _ in parts for f in fs]
        rows = [r for _, _, rs in parts for r in rs]
        if len(parts) > 1:  # chunks of several shapes or types: back to factor order
            order = np.argsort(pos, kind="stable").tolist()
            pos, facs, rows = pos[order], [facs[i] for i in order], [rows[i] for i in order]
        by_handler[h] = (pos, facs, rows)
    handlers = sorted(by_handler, key=lambda h: int(by_handler[h][0][0]))  # by their first factor
    if per_factor:
        items = sorted((int(p), f, e, h) for h in handlers for p, f, e in zip(*by_handler[h]))
        groups = tuple((h, h.compile([fac], [e], card), e, (p,)) for p, fac, e, h in items)
    else:
        groups = tuple(
            (h, h.compile(facs, rows, card), np.concatenate(rows), tuple(pos.tolist()))
            for h in handlers
            for pos, facs, rows in [by_handler[h]]
        )
    forest = None
    if forest_parts:
        pos = np.concatenate([p for p, _ in forest_parts])
        rows = np.concatenate([e for _, e in forest_parts])
        order = np.argsort(pos, kind="stable")
        pos, rows = pos[order], rows[order]
        facs = with_shifts(pos)
        padded = np.full((pos.shape[0], width, width), -np.inf)
        for shape in dict.fromkeys(f.log_table.shape for f in facs):  # one assignment per table shape
            same = np.flatnonzero([f.log_table.shape == shape for f in facs])
            stack = np.concatenate([facs[i].log_table for i in same.tolist()]).reshape(same.shape[0], *shape)
            padded[same, : shape[0], : shape[1]] = stack
        compiled = table_handler.compile(facs, list(rows), card)
        groups += ((table_handler, compiled, rows.reshape(-1), tuple(pos.tolist())),)
        forest = (len(groups) - 1, padded)
    edge_card = card[ev]
    pad = states[None, :] >= edge_card[:, None]
    for arr in (card, prior, ev, edge_card, pad, var_ptr, var_edges, *unary):
        arr.flags.writeable = False
    return Wiring(
        card, width, prior, constant, ev, edge_card, pad, var_ptr, var_edges, groups, unary, graph.score, forest
    )


def _edges_without(graph: CompiledGraph, folded: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(arity, start, edge_var, var_ptr, var_edges)``: the graph's edges (:class:`~tractable._compiled_graph.
    CompiledGraph`) renumbered without those of the single-variable tables at positions ``folded`` (one edge each,
    folded into the prior), in the same order; the shared arrays themselves when nothing is folded."""
    if not folded.size:
        return graph.arity, graph.edge_start, graph.edge_var, graph.var_ptr, graph.var_edges
    arity = graph.arity.copy()
    arity[folded] = 0
    keep = np.ones(graph.edge_var.shape[0], dtype=bool)
    keep[graph.edge_start[folded]] = False
    ev = graph.edge_var[keep]
    renumbered = np.cumsum(keep, dtype=np.int64) - 1  # an edge's id once the folded ones are gone
    var_edges = renumbered[graph.var_edges[keep[graph.var_edges]]]
    var_ptr = np.zeros(graph.cardinalities.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(ev, minlength=var_ptr.shape[0] - 1), out=var_ptr[1:])
    return arity, np.cumsum(arity) - arity, ev, var_ptr, var_edges


def _private(a: np.ndarray, dtype) -> np.ndarray:
    """A writable C-contiguous copy: every kernel sees one array type, whatever the caller had."""
    return np.array(a, dtype=dtype, order="C", copy=True)


class Workspace:
    """The arrays one parallel-schedule run iterates on, allocated once (kernels allocate nothing).

    Attributes
    ----------
    kind : {"sum", "max"}
    damping : float
    edge_var, edge_card, var_ptr, var_edges : int64 arrays
        As in :class:`Wiring` (private writable copies).
    prior_fin, prior_ninf : ndarray of shape (n, K)
        The prior as a finite part (``-inf`` entries as 0) and a count of ``-inf`` entries.
    fin, ninf : ndarray of shape (n, K)
        Each variable's prior plus incoming messages, the same way (:meth:`beliefs`).
    nu : ndarray of shape (n_edges, K)
        The current factor-to-variable log messages, ``-inf`` past an edge's cardinality: normalized
        (log-sum-exp 0 for sum-product, maximum 0 for max-product), except that a compiled update may store a
        sum-product message up to a constant (:func:`_kernels.table_update`; beliefs and cavities do not
        depend on it, and the engine normalizes the final messages).
    nu_p : ndarray of shape (n_edges, K)
        The same messages as normalized probabilities (``exp`` of the normalized ``nu``).
    new, new_p : ndarray of shape (n_edges, K)
        The next ones, written by the handlers' updates; :meth:`swap` makes them current.
    shifted : ndarray of int64 or None
        The edges whose messages may be stored up to a constant (normalized by the engine at the end).
    """

    def __init__(self, wiring: Wiring, nu: np.ndarray, kind: str, damping: float):
        self.kind = kind
        self.damping = float(damping)
        self.edge_var = _private(wiring.edge_var, np.int64)
        self.edge_card = _private(wiring.edge_card, np.int64)
        self.var_ptr = _private(wiring.var_ptr, np.int64)
        self.var_edges = _private(wiring.var_edges, np.int64)
        inf = np.isneginf(wiring.prior)
        self.prior_fin = _private(np.where(inf, 0.0, wiring.prior), np.float64)
        self.prior_ninf = _private(inf, np.float64)
        self.fin = np.empty_like(self.prior_fin)
        self.ninf = np.empty_like(self.prior_fin)
        self.nu = _private(nu, np.float64)
        self.shifted = None  # the rows of nu that may hold a message up to a constant (set by the engine)
        self.nu_p = np.exp(self.nu)
        self.new = self.nu.copy()
        self.new_p = self.nu_p.copy()

    def beliefs(self) -> None:
        """``fin``, ``ninf`` from ``nu`` (:func:`_kernels.var_beliefs`)."""
        _kernels.var_beliefs(
            self.var_ptr, self.var_edges, self.prior_fin, self.prior_ninf, self.nu, self.fin, self.ninf
        )

    def swap(self) -> None:
        self.nu, self.new = self.new, self.nu
        self.nu_p, self.new_p = self.new_p, self.nu_p
