"""Rows of ``tractable demo`` for belief propagation."""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["demo_rows"]


def demo_rows() -> list[dict]:
    """LBP on a tree with a large cardinality factor (exact), and on a loopy grid with count factors."""
    from .._results import ConvergenceWarning
    from ..bp.loopy import loopy
    from ..cardinality import marginals
    from ..datasets.factor_graphs import grid_factor_graph
    from ..exact import enumerate_marginals
    from ..factorgraph import CardinalityFactor, FactorGraph, TableFactor

    rows = []
    d = 2000
    theta = np.random.default_rng(0).normal(size=d)
    f = np.where((np.arange(d + 1) >= 600) & (np.arange(d + 1) <= 700), 0.0, -np.inf)
    fg = FactorGraph([2] * d)
    for v in range(d):
        fg.add_factor(TableFactor([v], [0.0, theta[v]]))
    fg.add_factor(CardinalityFactor(np.arange(d), f))
    res = loopy(fg)
    err = float(np.max(np.abs(res.marginals - marginals(theta, f).marginals)))
    rows.append(
        {
            "problem": f"{d} variables, 600 <= count <= 700 (a tree)",
            "method": "loopy BP, convolution-tree messages",
            "quality": f"max err vs exact {err:.1e}",
            "time": res.time,
        }
    )
    grid = grid_factor_graph(4, 4, n_states=2, coupling=0.5, rng=1)
    for r in range(4):
        grid.add_factor(CardinalityFactor([4 * r + c for c in range(4)], [-np.inf, 0.0, 0.0, -np.inf, -np.inf]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = loopy(grid, damping=0.3)
    err = float(np.max(np.abs(res.marginals - enumerate_marginals(grid).marginals)))
    rows.append(
        {
            "problem": "4x4 Ising grid + row counts 1-2 (loopy)",
            "method": "loopy BP (sum-product)",
            "quality": f"max err vs exact {err:.3f}, {res.n_iter} it",
            "time": res.time,
        }
    )
    return rows


def warm() -> None:
    """Compile (or load from the cache) the kernels of loopy and tree belief propagation."""
    from ..bp import loopy, tree_map, tree_marginals
    from ..datasets.factor_graphs import grid_factor_graph
    from ..factorgraph import CardinalityFactor

    fg = grid_factor_graph(2, 3, n_states=2, coupling=0.5, rng=0)
    fg.add_factor(CardinalityFactor([0, 1, 2], [0.0, 0.1, 0.2, -0.1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loopy(fg, task="marginals", max_iter=5)
        loopy(fg, task="map", max_iter=5)
    unary, edges, pairwise = np.zeros((3, 2)), [[0, 1], [1, 2]], np.zeros((2, 2, 2))
    tree_marginals(unary, edges, pairwise)
    tree_map(unary, edges, pairwise)
