"""A binary factor graph compiled into the flat arrays of the compiled Gibbs sweep.

Single-variable tables become a per-variable ``field`` (score of 1 minus score of 0) and
``forbid0`` / ``forbid1`` flags for ``-inf`` entries. Pairwise tables with finite entries are
decomposed exactly as ``T[a, b] = T[0, 0] + a (T[1, 0] - T[0, 0]) + b (T[0, 1] - T[0, 0]) + a b w``
with ``w = T[1, 1] - T[1, 0] - T[0, 1] + T[0, 0]``: the linear parts go to the fields, ``w`` to a
symmetric CSR coupling matrix. Every other factor (tables of higher arity or with ``-inf``
entries, cardinality factors) is a *general* factor evaluated from its table or count potential.

Scores of any finite magnitude: when the finite entries' magnitudes sum past ``2**-2`` of float64's
range, every table is first multiplied by ``2**-scale_exp`` (exact: a power of two), so that no field,
coupling or conditional log-odds the sweep forms can overflow (``1e308 + 1e308`` is ``inf``, and
``inf - inf`` NaN); the kernel multiplies the log-odds back by ``2**scale_exp`` just before the logistic
function, where an overflow to ``+-inf`` is the right limit (a probability of 1 or 0). Entries below
``2**-1022 * 2**scale_exp`` in magnitude then lose precision: next to scores near 1e308 they weigh
nothing in float64 anyway.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._compiled_graph import CompiledGraph, compiled_graph
from .._errors import ZeroPartitionError
from ..factorgraph import CardinalityFactor, FactorGraph, TableFactor
from ._kernels import KIND_COUNT, KIND_TABLE

__all__ = ["Wiring", "check_binary", "compile_binary"]


@dataclass
class Wiring:
    """Flat arrays of a binary factor graph (mutable: adaptive MMP rewrites them as it prunes)."""

    n: int
    field: np.ndarray  # (n,) float64
    forbid0: np.ndarray  # (n,) bool
    forbid1: np.ndarray  # (n,) bool
    nb_ptr: np.ndarray  # (n + 1,) CSR of pairwise couplings
    nb_idx: np.ndarray
    nb_w: np.ndarray
    g_kind: np.ndarray  # (G,) KIND_TABLE / KIND_COUNT
    g_ptr: np.ndarray  # (G + 1,) scopes
    g_vars: np.ndarray
    g_tab_ptr: np.ndarray  # (G + 1,) tables (2**k entries) or count potentials (k + 1 entries)
    g_tab: np.ndarray
    vf_ptr: np.ndarray  # (n + 1,) CSR variable -> general factors
    vf_fac: np.ndarray
    vf_pos: np.ndarray  # position of the variable in the factor's scope
    scale_exp: int = 0  # every table above is the model's times 2**-scale_exp (0: as given)

    def kernel_args(self, nb_end: np.ndarray):
        """The arrays of :func:`tractable.sampling._kernels.run_sweeps` after ``x``, rows ending at ``nb_end``,
        then ``scale_exp``."""
        return (
            self.field, self.forbid0, self.forbid1, self.nb_ptr, nb_end, self.nb_idx, self.nb_w, self.g_kind,
            self.g_ptr, self.g_vars, self.g_tab_ptr, self.g_tab, self.vf_ptr, self.vf_fac, self.vf_pos,
            self.scale_exp,
        )  # fmt: skip


def check_binary(fg, name: str = "fg") -> FactorGraph:
    """``fg`` must be a FactorGraph over binary variables (the samplers of this package are binary)."""
    if not isinstance(fg, FactorGraph):
        raise TypeError(f"`{name}` must be a FactorGraph; got {type(fg).__name__}.")
    card = np.asarray(fg.cardinalities)
    if card.size and np.any(card != 2):
        v = int(np.flatnonzero(card != 2)[0])
        raise ValueError(
            f"`{name}` must have binary variables only (the sampler and adaptive MMP are defined for binary "
            f"models); variable {v} has {int(card[v])} states."
        )
    return fg


def _csr(rows: np.ndarray, n: int, *cols):
    order = np.argsort(rows, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    ptr[1:] = np.cumsum(np.bincount(rows, minlength=n))
    return (ptr, *(np.ascontiguousarray(c[order]) for c in cols))


#: finite scores whose magnitudes sum past this are scaled down by a power of two (see the module docstring)
_SCALE_ABOVE = 2.0**1020


def _scale_exp(*arrays: np.ndarray) -> int:
    """The ``e`` such that the finite entries of ``arrays``, times ``2**-e``, have magnitudes summing to at
    most ``2**-2``; 0 when they sum to less than :data:`_SCALE_ABOVE` (the tables are used as given)."""
    finite = [np.abs(a[np.isfinite(a)]) for a in arrays if a.size]
    top = max((float(a.max()) for a in finite if a.size), default=0.0)
    if top == 0.0:
        return 0
    ratio = sum(float(np.sum(a / top)) for a in finite)  # sum of |entries| / top: no overflow
    if top * ratio < _SCALE_ABOVE:  # an overflow to inf is not below the bound
        return 0
    return math.frexp(top)[1] + math.frexp(ratio)[1] + 2


def _general(graph: CompiledGraph) -> list:
    """The general factors in factor order, as ``(kind, variables, table or count potential)``: the tables over
    three or more variables (rows of the graph's stacks) and the cardinality factors."""
    factors = graph.factors
    rest = sorted(graph.others + graph.empty)
    bad = [i for i in rest if not isinstance(factors[i], (TableFactor, CardinalityFactor))]
    if bad:
        fac = factors[bad[0]]
        raise TypeError(
            f"the Gibbs sampler handles TableFactor and CardinalityFactor; got a {type(fac).__name__} over "
            f"variables {np.asarray(fac.variables).tolist()}."
        )
    general = []  # (position, entry)
    for st in graph.tables:
        if len(st.shape) > 2:
            general += [(p, (KIND_TABLE, v, t)) for p, v, t in zip(st.positions.tolist(), st.variables, st.tables)]
    for i in rest:
        fac = factors[i]
        if isinstance(fac, CardinalityFactor):
            # counting the zeros of binary variables is counting the ones backwards
            f = fac.log_potentials if fac.counted == 1 else fac.log_potentials[::-1]
            general.append((i, (KIND_COUNT, fac.variables, f)))
    general.sort(key=lambda g: g[0])
    return [g for _, g in general]


def compile_binary(fg: FactorGraph) -> Wiring:
    """Compile a binary factor graph (checked by :func:`check_binary`).

    Built from the graph's shared compiled form (:func:`tractable._compiled_graph.compiled_graph`, cached on the
    graph): its stack of single-variable tables (shape ``(2,)``) gives the fields, its stack of pairwise tables
    (``(2, 2)``) the coupling decomposition and the finiteness checks, as array operations over all of them at
    once; every other factor is general. Tables of huge finite scores are scaled down by a power of two first
    (see the module docstring).
    """
    n = fg.n_variables
    graph = compiled_graph(fg)
    if graph.constant == -np.inf or any(float(fg.factors[fi].to_table()) == -np.inf for fi in graph.empty):
        raise ZeroPartitionError(
            "no configuration has non-zero probability: the graph's constant (with its factors over no variable "
            "and the evidence folded in) is -inf."
        )
    general = _general(graph)
    unary, pairwise = graph.stack((2,)), graph.stack((2, 2))
    ut = unary.tables if unary is not None else np.zeros((0, 2))
    pt = pairwise.tables.reshape(-1, 2, 2) if pairwise is not None else np.zeros((0, 2, 2))
    g_all = np.concatenate([np.ravel(g[2]) for g in general]) if general else np.zeros(0)
    scale_exp = _scale_exp(ut, pt, g_all)
    if scale_exp:  # huge scores: every table times 2**-scale_exp (exact, a power of two)
        ut, pt = np.ldexp(ut, -scale_exp), np.ldexp(pt, -scale_exp)
        general = [(kind, v, np.ldexp(t, -scale_exp)) for kind, v, t in general]
    field = np.zeros(n)
    forbid0 = np.zeros(n, dtype=bool)
    forbid1 = np.zeros(n, dtype=bool)
    if unary is not None:
        uv = unary.variables[:, 0]
        np.logical_or.at(forbid0, uv, np.isneginf(ut[:, 0]))
        np.logical_or.at(forbid1, uv, np.isneginf(ut[:, 1]))
        fin = np.isfinite(ut).all(axis=1)
        np.add.at(field, uv[fin], ut[fin, 1] - ut[fin, 0])
    if np.any(forbid0 & forbid1):
        v = int(np.flatnonzero(forbid0 & forbid1)[0])  # in ``fg``, which may be conditioned on evidence
        raise ZeroPartitionError(
            f"no configuration has non-zero probability: variable {int(fg.kept_variables[v])} ({fg.names[v]!r}) "
            "has both states forbidden."
        )
    pr = pc = np.zeros(0, dtype=np.int64)
    pw = np.zeros(0)
    if pairwise is not None:
        pv = pairwise.variables
        fin = np.isfinite(pt).all(axis=(1, 2))
        for i in np.flatnonzero(~fin):  # pairwise tables with -inf entries are general factors
            general.append((KIND_TABLE, pv[i], pt[i].ravel()))
        pv, pt = pv[fin], pt[fin]
        np.add.at(field, pv[:, 0], pt[:, 1, 0] - pt[:, 0, 0])
        np.add.at(field, pv[:, 1], pt[:, 0, 1] - pt[:, 0, 0])
        w = pt[:, 1, 1] - pt[:, 1, 0] - pt[:, 0, 1] + pt[:, 0, 0]
        keep = w != 0.0
        pv, w = pv[keep], w[keep]
        pr = np.r_[pv[:, 0], pv[:, 1]]
        pc = np.r_[pv[:, 1], pv[:, 0]]
        pw = np.r_[w, w]
    nb_ptr, nb_idx, nb_w = _csr(pr, n, pc, pw)
    g_kind = np.asarray([g[0] for g in general], dtype=np.int64)
    g_scopes = [np.asarray(g[1], dtype=np.int64) for g in general]
    g_tabs = [np.asarray(g[2], dtype=np.float64) for g in general]
    g_ptr = np.zeros(len(g_scopes) + 1, dtype=np.int64)
    g_ptr[1:] = np.cumsum([s.shape[0] for s in g_scopes])
    g_vars = np.concatenate(g_scopes) if g_scopes else np.zeros(0, np.int64)
    g_tab_ptr = np.zeros(len(g_tabs) + 1, dtype=np.int64)
    g_tab_ptr[1:] = np.cumsum([t.shape[0] for t in g_tabs])
    g_tab = np.concatenate(g_tabs) if g_tabs else np.zeros(0)
    fac_of = np.repeat(np.arange(len(g_scopes), dtype=np.int64), np.diff(g_ptr))
    pos = np.arange(g_vars.shape[0], dtype=np.int64) - g_ptr[fac_of]
    vf_ptr, vf_fac, vf_pos = _csr(g_vars, n, fac_of, pos)
    return Wiring(
        n, field, forbid0, forbid1, nb_ptr, nb_idx, nb_w, g_kind, g_ptr, g_vars, g_tab_ptr, g_tab, vf_ptr, vf_fac,
        vf_pos, scale_exp,
    )  # fmt: skip
