"""Rows of ``tractable demo`` for sampling."""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["demo_rows"]


def demo_rows() -> list[dict]:
    """Adaptive MMP vs plain Gibbs on a 4x4 grid (checked against exact MMP), and on a 100x100 grid."""
    from .._results import ConvergenceWarning
    from ..datasets.factor_graphs import grid_factor_graph
    from ..exact import enumerate_marginals
    from ..sampling.adaptive import adaptive_mmp
    from ..sampling.gibbs import gibbs

    rows = []
    small = grid_factor_graph(4, 4, coupling=0.5, field=1.5, rng=2)
    exact = (enumerate_marginals(small).marginals[:, 1] > 0.5).astype(np.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = adaptive_mmp(small, epsilon=1e-5, max_sweeps=5000, rng=0)
    agree = int(np.sum(res.assignment == exact))
    rows.append(
        {
            "problem": "4x4 Ising grid, max-marginal decisions",
            "method": "adaptive MMP (eps 1e-5)",
            "quality": f"{agree}/16 = exact MMP, {res.n_updates} updates",
            "time": res.time,
        }
    )
    big = grid_factor_graph(100, 100, coupling=0.3, field=1.5, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = adaptive_mmp(big, epsilon=1e-5, max_sweeps=500, rng=0)
        plain = gibbs(big, n_sweeps=500, burn_in=10, rng=0)
    rows.append(
        {
            "problem": "100x100 grid, 10^4 decisions",
            "method": "adaptive MMP vs 500 Gibbs sweeps",
            "quality": f"{np.mean(res.confidence >= 1 - 1e-5):.1%} final, "
            f"{res.n_updates / plain.n_updates:.0%} of Gibbs' updates",
            "time": res.time,
        }
    )
    return rows


def warm() -> None:
    """Compile (or load from the cache) the sampling kernels: Gibbs and adaptive MMP with pairwise and
    count factors."""
    from ..datasets.factor_graphs import grid_factor_graph
    from ..factorgraph import CardinalityFactor
    from ..sampling import adaptive_mmp, gibbs

    fg = grid_factor_graph(2, 3, n_states=2, coupling=0.5, rng=0)
    fg.add_factor(CardinalityFactor([0, 1, 2], [0.0, 0.1, 0.2, -0.1]))
    gibbs(fg, n_sweeps=5, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adaptive_mmp(fg, max_sweeps=5, rng=0)
