"""Rows of ``tractable demo`` for exact inference."""

from __future__ import annotations

import numpy as np

__all__ = ["demo_rows"]


def demo_rows() -> list[dict]:
    """Exact marginals and MAP on Ising grids, variable elimination checked against enumeration."""
    from ..datasets.factor_graphs import grid_factor_graph
    from ..exact import enumerate_marginals, variable_elimination

    fg = grid_factor_graph(4, 4, n_states=2, coupling=1.0, rng=0)
    rows = []
    ref = enumerate_marginals(fg)
    res = variable_elimination(fg, task="marginals")
    err = float(np.max(np.abs(res.marginals - ref.marginals)))
    rows.append(
        {
            "problem": "4x4 Ising grid, marginals",
            "method": "variable elimination",
            "quality": f"max err vs enumeration {err:.1e}",
            "time": res.time,
        }
    )
    big = grid_factor_graph(12, 12, n_states=2, coupling=1.0, rng=0)
    res = variable_elimination(big, task="map")
    rows.append(
        {
            "problem": "12x12 Ising grid, MAP",
            "method": "variable elimination",
            "quality": f"score {res.score:.3f}",
            "time": res.time,
        }
    )
    return rows


def warm() -> None:
    """Compile (or load from the cache) the kernels of exact inference: elimination and enumeration."""
    from ..datasets.factor_graphs import grid_factor_graph
    from ..exact import enumerate_map, enumerate_marginals, infer, variable_elimination

    fg = grid_factor_graph(2, 3, n_states=2, coupling=0.5, rng=0)
    variable_elimination(fg, task="marginals")
    variable_elimination(fg, task="map")
    wide = grid_factor_graph(12, 12, n_states=2, coupling=0.5, rng=0)  # tables of 2**13 entries: the compiled
    variable_elimination(wide, task="map")  # broadcast product of exact/_tables.py runs from 2**12
    enumerate_marginals(fg)
    enumerate_map(fg)
    infer(fg, task="marginals", evidence={0: 1})
