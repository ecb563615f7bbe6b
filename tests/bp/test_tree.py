"""Exact tree inference against enumeration (random forests, k = 2..4, -inf potentials) and the engine."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.special import logsumexp

from _oracles import pairwise_scores
from tractable import ZeroPartitionError
from tractable.bp import tree_map, tree_marginals, tree_marginals_batch

# all quantities are computed in log space by sums of at most N k^2 terms: 1e-10 is far above rounding
TOL = 1e-10


def _forest(rng, n):
    edges = [(int(rng.integers(v)), v) for v in range(1, n) if rng.random() < 0.85]
    perm = rng.permutation(n)
    edges = [(int(perm[u]), int(perm[v])) for u, v in edges]
    return [e if rng.random() < 0.5 else e[::-1] for e in edges]


def _model(rng, n, k, p_inf=0.1):
    unary = rng.normal(0, 1, size=(n, k))
    unary[rng.random((n, k)) < p_inf] = -np.inf
    unary[np.arange(n), rng.integers(0, k, size=n)] = rng.normal(size=n)  # one label per node stays allowed
    edges = _forest(rng, n)
    pw = rng.normal(0, 1, size=(len(edges), k, k))
    pw[rng.random(pw.shape) < p_inf] = -np.inf
    return unary, np.array(edges, dtype=np.int64).reshape(-1, 2), pw


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 7), k=st.integers(2, 4), seed=st.integers(0, 2**31))
def test_tree_inference_equals_enumeration(n, k, seed):
    rng = np.random.default_rng(seed)
    unary, edges, pw = _model(rng, n, k)
    ys, sc = pairwise_scores(unary, edges, pw)
    lz = logsumexp(sc)
    if lz == -np.inf:
        with pytest.raises(ZeroPartitionError):
            tree_marginals(unary, edges, pw)
        with pytest.raises(ZeroPartitionError):
            tree_map(unary, edges, pw)
        return
    p = np.exp(sc - lz)
    res = tree_marginals(unary, edges, pw)
    assert_allclose(res.log_partition, lz, atol=TOL, rtol=TOL)
    for i in range(n):
        assert_allclose(res.marginals[i], np.bincount(ys[:, i], weights=p, minlength=k), atol=TOL)
    for e, (u, v) in enumerate(edges):
        joint = np.zeros((k, k))
        np.add.at(joint, (ys[:, u], ys[:, v]), p)
        assert_allclose(res.edge_marginals[e], joint, atol=TOL)
    best = tree_map(unary, edges, pw)
    assert_allclose(best.score, sc.max(), atol=TOL)
    assert_allclose(sc[np.ravel_multi_index(best.assignment, (k,) * n)], sc.max(), atol=TOL)


def test_batch_equals_one_model_at_a_time(seed):
    rng = np.random.default_rng(seed)
    models = [_model(rng, 6, 3, p_inf=0.0) for _ in range(5)]
    res = tree_marginals_batch([m[0] for m in models], [m[1] for m in models], [m[2] for m in models])
    for b, (u, e, pw) in enumerate(models):
        one = tree_marginals(u, e, pw)
        assert_allclose(res.marginals[b], one.marginals, atol=TOL)
        assert_allclose(res.log_partition[b], one.log_partition, atol=TOL)
        assert_allclose(res.edge_marginals[b], one.edge_marginals, atol=TOL)


def test_a_long_chain_runs_level_by_level_and_a_star_in_one_level():
    rng = np.random.default_rng(0)
    n = 20_000
    chain = np.c_[np.arange(n - 1), np.arange(1, n)]
    unary = rng.normal(size=(n, 2))
    pw = np.tile(np.array([[0.5, 0.0], [0.0, 0.5]]), (n - 1, 1, 1))
    res = tree_marginals(unary, chain, pw)
    assert np.all(np.isfinite(res.marginals)) and np.isfinite(res.log_partition)
    star = np.c_[np.zeros(n - 1, dtype=np.int64), np.arange(1, n)]
    res = tree_marginals(unary, star, pw)
    assert_allclose(res.marginals.sum(1), 1.0)
    assert tree_map(unary, star, pw).assignment.shape == (n,)


@pytest.mark.parametrize(
    "edges, pw_shape, message",
    [
        ([[0, 1], [1, 2], [2, 0]], (3, 2, 2), "`edges` must form a forest; edge 2 = [2, 0] closes a cycle."),
        ([[0, 0]], (1, 2, 2), "`edges` must not contain self loops"),
        ([[0, 1]], (1, 3, 3), "`pairwise` must have shape (1, 2, 2)"),
        ([[0, 5]], (1, 2, 2), "`edges`"),
    ],
)
def test_bad_input_names_the_argument(edges, pw_shape, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        tree_marginals(np.zeros((3, 2)), edges, np.zeros(pw_shape))
    with pytest.raises(ValueError, match="NaN"):
        tree_marginals([[0.0, np.nan]], np.zeros((0, 2)), np.zeros((0, 2, 2)))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 30), k=st.integers(2, 5), seed=st.integers(0, 2**31))
def test_compiled_kernel_equals_its_level_by_level_twin(n, k, seed):
    from tractable.bp.tree import _root, _sum_product, _sum_product_python

    rng = np.random.default_rng(seed)
    unary, edges, pw = _model(rng, n, k)
    r = _root(edges, n)
    try:
        ref = _sum_product_python(unary, pw, r)
    except ZeroPartitionError:
        with pytest.raises(ZeroPartitionError):
            _sum_product(unary, pw, r)
        return
    for ours, twin in zip(_sum_product(unary, pw, r), ref):
        assert_allclose(ours, twin, atol=TOL)


def test_compiled_forest_reuses_one_structure(seed):
    from tractable.bp.tree import CompiledForest, forest_marginals

    rng = np.random.default_rng(seed)
    models = [_model(rng, 8, 3, p_inf=0.0) for _ in range(3)]
    forest = CompiledForest([m[1] for m in models], 8)
    for _ in range(2):  # the same compiled structure with new scores
        u = np.stack([rng.normal(size=(8, 3)) for _ in models])
        pw = [rng.normal(size=m[2].shape) for m in models]
        node, edge, logz = forest_marginals(forest, u, np.concatenate(pw))
        ref = tree_marginals_batch(u, [m[1] for m in models], pw)
        assert_allclose(node, ref.marginals, atol=TOL) and assert_allclose(logz, ref.log_partition, atol=TOL)


def test_batch_arguments_must_agree_in_length():
    message = "`edges` and `pairwise` must have one entry per model (2); got 1 and 2."
    with pytest.raises(ValueError, match=re.escape(message)):
        tree_marginals_batch(np.zeros((2, 3, 2)), [np.zeros((0, 2))], [np.zeros((0, 2, 2))] * 2)
    with pytest.raises(ValueError, match=re.escape("`pairwise[0]` must have shape (1, 2, 2); got (1, 3, 3).")):
        tree_marginals_batch(np.zeros((1, 3, 2)), [[[0, 1]]], [np.zeros((1, 3, 3))])
