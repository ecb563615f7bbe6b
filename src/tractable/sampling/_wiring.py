"""A binary factor graph compiled into the flat arrays of the compiled Gibbs sweep.

Single-variable tables become a per-variable ``field`` (score of 1 minus score of 0) and
``forbid0`` / ``forbid1`` flags for ``-inf`` entries. Pairwise tables with finite entries are
decomposed exactly as ``T[a, b] = T[0, 0] + a (T[1, 0] - T[0, 0]) + b (T[0, 1] - T[0, 0]) + a b w``
with ``w = T[1, 1] - T[1, 0] - T[0, 1] + T[0, 0]``: the linear parts go to the fields, ``w`` to a
symmetric CSR coupling matrix. Every other factor (tables of higher arity or with ``-inf``
entries, cardinality factors) is a *general* factor evaluated from its table or count potential.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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

    def kernel_args(self):
        return (
            self.field, self.forbid0, self.forbid1, self.nb_ptr, self.nb_idx, self.nb_w, self.g_kind, self.g_ptr,
            self.g_vars, self.g_tab_ptr, self.g_tab, self.vf_ptr, self.vf_fac, self.vf_pos,
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
    np.add.at(ptr, rows + 1, 1)
    return (np.cumsum(ptr), *(np.ascontiguousarray(c[order]) for c in cols))


def compile_binary(fg: FactorGraph) -> Wiring:
    """Compile a binary factor graph (checked by :func:`check_binary`)."""
    n = fg.n_variables
    field = np.zeros(n)
    forbid0 = np.zeros(n, dtype=bool)
    forbid1 = np.zeros(n, dtype=bool)
    pr, pc, pw = [], [], []
    g_kind, g_scopes, g_tabs = [], [], []
    for fac in fg.factors:
        v = np.asarray(fac.variables, dtype=np.int64)
        if isinstance(fac, TableFactor):
            t = np.asarray(fac.log_table, dtype=np.float64)
            if v.shape[0] == 0:
                continue
            if v.shape[0] == 1:
                i = int(v[0])
                if t[0] == -np.inf:
                    forbid0[i] = True
                if t[1] == -np.inf:
                    forbid1[i] = True
                if np.isfinite(t).all():
                    field[i] += t[1] - t[0]
                continue
            if v.shape[0] == 2 and np.isfinite(t).all():
                a, b = int(v[0]), int(v[1])
                field[a] += t[1, 0] - t[0, 0]
                field[b] += t[0, 1] - t[0, 0]
                w = t[1, 1] - t[1, 0] - t[0, 1] + t[0, 0]
                if w != 0.0:
                    pr += [a, b]
                    pc += [b, a]
                    pw += [w, w]
                continue
            g_kind.append(KIND_TABLE)
            g_scopes.append(v)
            g_tabs.append(t.ravel())
        elif isinstance(fac, CardinalityFactor):
            g_kind.append(KIND_COUNT)
            g_scopes.append(v)
            g_tabs.append(np.asarray(fac.log_potentials, dtype=np.float64))
        else:
            raise TypeError(
                f"the Gibbs sampler handles TableFactor and CardinalityFactor; got a {type(fac).__name__} over "
                f"variables {v.tolist()}."
            )
    if np.any(forbid0 & forbid1):
        v = int(np.flatnonzero(forbid0 & forbid1)[0])
        raise ZeroPartitionError(f"no configuration has non-zero probability: variable {v} has both states forbidden.")
    nb_ptr, nb_idx, nb_w = _csr(np.asarray(pr, dtype=np.int64), n, np.asarray(pc, np.int64), np.asarray(pw, float))
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
        n, field, forbid0, forbid1, nb_ptr, nb_idx, nb_w, np.asarray(g_kind, dtype=np.int64), g_ptr, g_vars,
        g_tab_ptr, g_tab, vf_ptr, vf_fac, vf_pos,
    )  # fmt: skip
