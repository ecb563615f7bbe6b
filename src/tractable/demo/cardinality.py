"""Rows for ``tractable demo``: each cardinality model checked against an independent reference."""

from __future__ import annotations

import itertools
import time

import numpy as np

from .._logspace import logsumexp


def _enumerate(n, score_fn):
    ys = np.array(list(itertools.product([0, 1], repeat=n)))
    sc = np.array([score_fn(y) for y in ys])
    p = np.exp(sc - logsumexp(sc))
    return p @ ys, logsumexp(sc)


def demo_rows() -> list[dict]:
    """Marginals of the three model types against references; see ``docs/cardinality.md``."""
    from ..cardinality import RecursiveCardinalityModel, TreeCardinalityModel, chain_marginals, marginals

    rows = []
    rng = np.random.default_rng(0)
    d = 4096
    theta = rng.normal(0, 50, d)
    f = rng.normal(0, 100, d + 1)
    f[:100] = -np.inf
    t0 = time.perf_counter()
    res = marginals(theta, f)
    t = time.perf_counter() - t0
    ref = chain_marginals(theta, f)
    err = np.max(np.abs(res.p_on - ref.p_on) / ref.p_on)
    rows.append(
        {
            "problem": f"cardinality D={d}, theta~N(0,50^2), f~N(0,100^2) + hard constraints",
            "method": "convolution tree (tilted FFT)",
            "quality": f"max rel err {err:.1e}, log Z err {abs(res.log_partition - ref.log_partition):.1e} "
            "vs O(D^2) log-space chain",
            "time": t,
        }
    )

    n = 12
    subsets = [list(range(12)), [0, 1, 2, 3, 4, 5], [0, 1, 2], [6, 7, 8, 9], [10, 11]]
    pots = [rng.normal(0, 1, len(s) + 1) for s in subsets]
    unary = rng.normal(0, 1, n)
    t0 = time.perf_counter()
    m = RecursiveCardinalityModel(n, subsets, pots, unary)
    mu = m.marginals().p_on
    t = time.perf_counter() - t0
    want, _ = _enumerate(n, m.score)
    rows.append(
        {
            "problem": f"recursive cardinality D={n}, {len(subsets)} nested subsets",
            "method": "aligned count tree",
            "quality": f"max err {np.max(np.abs(mu - want)):.1e} vs enumeration",
            "time": t,
        }
    )

    edges = [(i, (i - 1) // 2) for i in range(1, n)]
    pw = rng.normal(0, 1, (n - 1, 2, 2))
    f2 = rng.normal(0, 1, n + 1)
    t0 = time.perf_counter()
    tm = TreeCardinalityModel(edges, pw, unary, f2)
    mu = tm.marginals().p_on
    t = time.perf_counter() - t0
    want, _ = _enumerate(n, tm.score)
    rows.append(
        {
            "problem": f"binary tree D={n} + cardinality potential",
            "method": "subtree count DP",
            "quality": f"max err {np.max(np.abs(mu - want)):.1e} vs enumeration",
            "time": t,
        }
    )
    return rows


def warm() -> None:
    """Compile (or load from the cache) the cardinality kernels: direct and FFT convolution trees, the
    chain, sampling, MAP, the batch, recursive and tree models."""
    from .. import cardinality

    rng = np.random.default_rng(0)
    for d in (12, 300):  # below and above the FFT crossover
        theta = rng.normal(size=d)
        f = rng.normal(size=d + 1)
        cardinality.marginals(theta, f)
        cardinality.log_partition(theta, f)
        cardinality.sample(theta, f, size=2, rng=0)
        cardinality.map_assignment(theta, f)
        cardinality.chain_marginals(theta, f)
        cardinality.marginals_batch(np.stack([theta, theta]), f)
    theta, f = rng.normal(size=6), rng.normal(size=7)
    cardinality.RecursiveCardinalityModel(
        6, [[0, 1, 2, 3, 4, 5], [0, 1, 2]], [f, [0.0, 0.1, 0.2, 0.3]], theta
    ).marginals()
    edges = [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5]]
    pairwise = np.zeros((5, 2, 2))
    model = cardinality.TreeCardinalityModel(edges, pairwise, theta, f)
    model.marginals()
    model.map_assignment()
