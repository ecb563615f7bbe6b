"""Generalized bipartite matching (Tarlow et al. 2012, Sec. 6.2): the generator and the baselines of
``benchmarks/bipartite_matching.py`` (LP MAP, block Gibbs), checked against brute-force enumeration."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from _oracles import BinaryEnumeration, all_assignments
from tractable import CardinalityFactor, FactorGraph, TableFactor
from tractable.datasets.bipartite_matching import BipartiteMatching, bipartite_matching

# appended, not prepended: benchmarks/distributed.py must not shadow Dask's `distributed` package
sys.path.append(str(Path(__file__).parents[2] / "benchmarks"))
from _bipartite_baselines import (  # noqa: E402
    block_gibbs,
    enumerate_marginals,
    lp_map,
    node_marginals,
)


def _oracle(problem: BipartiteMatching) -> BinaryEnumeration:
    """Every configuration of the grid, rows and columns as count-constrained subsets."""
    n_rows, n_cols = problem.unary.shape
    index = np.arange(n_rows * n_cols).reshape(n_rows, n_cols)
    subsets = [index[i] for i in range(n_rows)] + [index[:, j] for j in range(n_cols)]

    def f(n, lo, hi):
        out = np.full(n + 1, -np.inf)
        out[lo : hi + 1] = 0.0
        return out

    counts = [f(n_cols, *problem.row_counts)] * n_rows + [f(n_rows, *problem.col_counts)] * n_cols
    return BinaryEnumeration(n_rows * n_cols, unary=problem.unary.ravel(), subsets=subsets, subset_counts=counts)


def _feasible(problem, y) -> bool:
    y = np.asarray(y).reshape(problem.unary.shape)
    (rlo, rhi), (clo, chi) = problem.row_counts, problem.col_counts
    r, c = y.sum(1), y.sum(0)
    return bool(((r >= rlo) & (r <= rhi)).all() and ((c >= clo) & (c <= chi)).all())


# ---------------------------------------------------------------- generator


def test_generator_shapes_and_read_only(seed):
    problem = bipartite_matching(5, 7, row_counts=(2, 3), col_counts=(1, 2), unary_scale=2.0, rng=seed)
    assert problem.unary.shape == (5, 7) and problem.unary.dtype == np.float64
    assert (problem.n_rows, problem.n_cols, problem.n_variables) == (5, 7, 35)
    assert problem.row_counts == (2, 3) and problem.col_counts == (1, 2)
    with pytest.raises(ValueError):
        problem.unary[0, 0] = 1.0
    with pytest.raises(AttributeError):
        problem.row_counts = (0, 7)
    again = bipartite_matching(5, 7, row_counts=(2, 3), col_counts=(1, 2), unary_scale=2.0, rng=seed)
    np.testing.assert_array_equal(problem.unary, again.unary)
    assert np.all(bipartite_matching(3, 3, row_counts=(1, 1), col_counts=(1, 1), unary_scale=0.0).unary == 0)


def test_factor_graph_layout(seed):
    problem = bipartite_matching(3, 4, row_counts=(1, 2), col_counts=(1, 2), rng=seed)
    fg = problem.factor_graph()
    assert isinstance(fg, FactorGraph) and fg.n_variables == 12
    assert np.all(fg.cardinalities == 2)
    unary = [f for f in fg.factors if isinstance(f, TableFactor)]
    card = [f for f in fg.factors if isinstance(f, CardinalityFactor)]
    assert len(unary) == 12 and len(card) == 3 + 4
    for v, f in enumerate(unary):
        assert f.variables.tolist() == [v]
        np.testing.assert_array_equal(f.to_table(), [0.0, problem.unary.ravel()[v]])
    assert card[0].variables.tolist() == [0, 1, 2, 3]  # row 0
    assert card[3].variables.tolist() == [0, 4, 8]  # column 0
    np.testing.assert_array_equal(card[0].log_potentials, [-np.inf, 0, 0, -np.inf, -np.inf])
    np.testing.assert_array_equal(card[3].log_potentials, [-np.inf, 0, 0, -np.inf])


def test_factor_graph_score_is_unary_sum_or_minus_inf(seed):
    problem = bipartite_matching(3, 3, row_counts=(1, 2), col_counts=(1, 2), rng=seed)
    ys = all_assignments([2] * 9)
    scores = problem.factor_graph().score(ys)
    feasible = np.array([_feasible(problem, y) for y in ys])
    assert 0 < feasible.sum() < len(ys)
    np.testing.assert_allclose(scores[feasible], ys[feasible] @ problem.unary.ravel(), rtol=0, atol=1e-12)
    assert np.all(scores[~feasible] == -np.inf)
    assert all(problem.is_feasible(y) == f for y, f in zip(ys, feasible))


def test_enumerated_marginals_match_oracle(seed):
    problem = bipartite_matching(3, 4, row_counts=(1, 2), col_counts=(1, 3), rng=seed)
    np.testing.assert_allclose(enumerate_marginals(problem), _oracle(problem).marginals, atol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"row_counts": (2, 5)},
            "`row_counts` must satisfy 0 <= lo <= hi <= 4 (the number of columns); got (2, 5).",
        ),
        (
            {"row_counts": (3, 2)},
            "`row_counts` must satisfy 0 <= lo <= hi <= 4 (the number of columns); got (3, 2).",
        ),
        (
            {"col_counts": (-1, 1)},
            "`col_counts` must satisfy 0 <= lo <= hi <= 3 (the number of rows); got (-1, 1).",
        ),
        ({"col_counts": 2}, "`col_counts` must be an inclusive range (lo, hi) of counts; got 2."),
        (
            {"row_counts": (3, 4), "col_counts": (1, 2)},
            "`row_counts` and `col_counts` are infeasible: 3 rows with at least 3 ones need 9 ones, "
            "but 4 columns with at most 2 ones hold only 8.",
        ),
        (
            {"row_counts": (0, 1), "col_counts": (2, 3)},
            "`row_counts` and `col_counts` are infeasible: 4 columns with at least 2 ones need 8 ones, "
            "but 3 rows with at most 1 ones hold only 3.",
        ),
        ({"unary_scale": -1.0}, "`unary_scale` must be a finite number >= 0; got -1.0."),
    ],
)
def test_generator_rejects_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        bipartite_matching(3, 4, **kwargs)


def test_generator_rejects_bad_sizes_and_unary():
    with pytest.raises(ValueError, match=re.escape("`n_rows` must be >= 1; got 0.")):
        bipartite_matching(0, 4)
    with pytest.raises(ValueError, match=re.escape("`unary` must be a 2-D array; got shape (4,).")):
        BipartiteMatching(np.zeros(4), (1, 1), (1, 1))
    with pytest.raises(ValueError, match=re.escape("`unary` must not contain NaN")):
        BipartiteMatching(np.full((2, 2), np.nan), (1, 1), (1, 1))


def test_dataclass_validates_like_the_generator():
    problem = BipartiteMatching([[0.5, -1.0], [2.0, 0.0]], [1, 1], (np.int64(1), 1))
    assert problem.row_counts == (1, 1) and problem.col_counts == (1, 1)
    assert not problem.unary.flags.writeable


# ---------------------------------------------------------------- baselines


def test_node_marginals_are_sigmoid(seed):
    problem = bipartite_matching(4, 5, rng=seed, unary_scale=30.0)
    m = node_marginals(problem)
    assert m.shape == (20, 2)
    np.testing.assert_allclose(m[:, 1], 1 / (1 + np.exp(-problem.unary.ravel())), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(m.sum(1), 1.0)


@pytest.mark.parametrize(("row_counts", "col_counts"), [((1, 2), (1, 2)), ((2, 3), (1, 2)), ((1, 1), (0, 1))])
def test_lp_map_is_optimal(seed, row_counts, col_counts):
    problem = bipartite_matching(3, 4, row_counts=row_counts, col_counts=col_counts, rng=seed)
    oracle = _oracle(problem)
    sol = lp_map(problem)
    assert sol.assignment.shape == (12,) and sol.assignment.dtype == np.int64
    assert _feasible(problem, sol.assignment)
    assert sol.score == pytest.approx(sol.assignment @ problem.unary.ravel(), abs=1e-9)
    assert sol.score == pytest.approx(oracle.best, abs=1e-7)
    np.testing.assert_array_equal(sol.marginals[:, 1], sol.assignment)
    assert sol.time >= 0


@pytest.mark.parametrize(("shape", "row_counts", "col_counts"), [((3, 3), (1, 2), (1, 2)), ((3, 4), (2, 3), (1, 2))])
def test_block_gibbs_matches_enumeration(seed, shape, row_counts, col_counts):
    problem = bipartite_matching(*shape, row_counts=row_counts, col_counts=col_counts, rng=seed)
    exact = _oracle(problem).marginals
    res = block_gibbs(problem, 60_000, rng=seed, burn_in=1_000, n_batches=50, trace=True)
    assert res.marginals.shape == (problem.n_variables, 2)
    np.testing.assert_allclose(res.marginals.sum(1), 1.0)
    err = np.abs(res.marginals[:, 1] - exact[:, 1])
    assert np.all(err <= 4.5 * res.stderr + 1e-12), (err / res.stderr).max()
    assert res.stderr.max() < 0.01
    # every sampled state is feasible, and the chain moves
    assert res.trace.shape == (60_000, problem.n_variables)
    rows = res.trace.reshape(-1, *shape).sum(2)
    cols = res.trace.reshape(-1, *shape).sum(1)
    assert rows.min() >= row_counts[0] and rows.max() <= row_counts[1]
    assert cols.min() >= col_counts[0] and cols.max() <= col_counts[1]
    assert res.n_moves > 0
    np.testing.assert_array_equal(res.final, res.trace[-1])


def test_block_gibbs_is_reproducible_and_checks_init(seed):
    problem = bipartite_matching(3, 4, row_counts=(1, 2), col_counts=(1, 2), rng=seed)
    a = block_gibbs(problem, 500, rng=seed)
    b = block_gibbs(problem, 500, rng=seed)
    np.testing.assert_array_equal(a.marginals, b.marginals)
    y = np.zeros((3, 4), dtype=int)
    y[[0, 1, 2, 0], [0, 1, 2, 3]] = 1
    c = block_gibbs(problem, 500, rng=seed, init=y)
    assert _feasible(problem, c.final)
    with pytest.raises(ValueError, match=re.escape("`init` must be a feasible 0/1 state")):
        block_gibbs(problem, 500, rng=seed, init=np.zeros(12, dtype=int))
    with pytest.raises(ValueError, match=re.escape("at least 2 rows and 2 columns")):
        block_gibbs(bipartite_matching(1, 4, row_counts=(1, 2), col_counts=(0, 1)), 500)
