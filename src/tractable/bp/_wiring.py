"""A factor graph compiled once into the flat arrays the belief-propagation engine iterates on."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..factorgraph import FactorGraph, TableFactor
from ._registry import handler_for

__all__ = ["Wiring", "compile_graph"]


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
    pad : ndarray of shape (n_edges, K), bool
        Entries past the edge variable's cardinality.
    incidence : scipy.sparse.csr_matrix of shape (n, n_edges)
        ``incidence[v, e] = 1`` when edge ``e`` belongs to variable ``v`` (sums messages per variable).
    groups : tuple of (handler, compiled, edge ids, factor indices)
        Factors grouped by handler (all at once, for the parallel schedule) or one factor per group
        (for the sequential schedule); the indices are the factors' positions in ``fg.factors``.
    """

    cardinalities: np.ndarray
    width: int
    prior: np.ndarray
    constant: float
    edge_var: np.ndarray
    pad: np.ndarray
    incidence: sp.csr_matrix
    groups: tuple


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


def compile_graph(fg: FactorGraph, *, per_factor: bool = False) -> Wiring:
    """Compile ``fg`` (already validated by its construction) into a :class:`Wiring`.

    A :class:`~tractable.TableFactor` with finite log-potentials larger in magnitude than
    :data:`SHIFT_ABOVE` runs shifted by its largest finite entry, which goes into ``constant``: no
    message sum then overflows (two scores near 1e308 would give ``inf``, then NaN), and a huge reward
    does not swallow the O(1) differences added to it.
    """
    card = np.asarray(fg.cardinalities, dtype=np.int64)
    n = card.shape[0]
    width = int(card.max()) if n else 1
    states = np.arange(width)
    prior = np.where(states[None, :] < card[:, None], 0.0, -np.inf)
    constant = float(fg.constant)
    edge_var: list = []
    by_handler: dict = {}
    order: list = []
    for fi, fac in enumerate(fg.factors):
        vars_ = np.asarray(fac.variables, dtype=np.int64)
        if vars_.shape[0] == 0:
            constant += float(fac.to_table())
            continue
        if isinstance(fac, TableFactor):
            table, shift = _shifted(fac.log_table)
            if shift:
                constant += shift
                if vars_.shape[0] > 1:
                    fac = TableFactor(vars_, table)
        if vars_.shape[0] == 1 and isinstance(fac, TableFactor):
            v = int(vars_[0])
            with np.errstate(over="ignore", invalid="ignore"):
                prior[v, : card[v]] += table
            continue
        eids = np.arange(len(edge_var), len(edge_var) + vars_.shape[0], dtype=np.int64)
        edge_var.extend(vars_.tolist())
        handler = handler_for(type(fac))
        by_handler.setdefault(id(handler), (handler, [], [], []))
        by_handler[id(handler)][1].append(fac)
        by_handler[id(handler)][2].append(eids)
        by_handler[id(handler)][3].append(fi)
        order.append((handler, fac, eids, fi))
    ev = np.asarray(edge_var, dtype=np.int64)
    if per_factor:
        groups = tuple((h, h.compile([fac], [e], card), e, (fi,)) for h, fac, e, fi in order)
    else:
        groups = tuple(
            (h, h.compile(facs, eids, card), np.concatenate(eids), tuple(fis))
            for h, facs, eids, fis in by_handler.values()
        )
    pad = states[None, :] >= card[ev][:, None] if ev.size else np.zeros((0, width), dtype=bool)
    incidence = sp.csr_matrix((np.ones(ev.shape[0]), (ev, np.arange(ev.shape[0]))), shape=(n, ev.shape[0]))
    for arr in (card, prior, ev, pad):
        arr.flags.writeable = False
    return Wiring(card, width, prior, constant, ev, pad, incidence, groups)
