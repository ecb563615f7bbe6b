"""TreeCardinalityModel against enumeration."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.stats import chisquare

from _oracles import BinaryEnumeration
from tractable.cardinality import TreeCardinalityModel, marginals


@st.composite
def forests(draw):
    n = draw(st.integers(1, 10))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    edges = []
    for v in range(1, n):
        if rng.random() < 0.85:  # sometimes a forest
            edges.append((int(rng.integers(v)), v))
    perm = rng.permutation(n)
    edges = [(int(perm[u]), int(perm[v])) for u, v in edges]
    if edges and rng.random() < 0.5:
        edges = [(v, u) for u, v in edges]
    pw = rng.normal(0, 1.5, (len(edges), 2, 2))
    pw[rng.random(pw.shape) < 0.05] = -np.inf
    theta = rng.normal(0, 2, n)
    f = rng.normal(0, 2, n + 1)
    f[rng.random(n + 1) < 0.2] = -np.inf
    if not np.isfinite(f).any():
        f[0] = 0.0
    return edges, pw, theta, f


@settings(max_examples=60, deadline=None)
@given(forests())
def test_matches_enumeration(model):
    edges, pw, theta, f = model
    ref = BinaryEnumeration(len(theta), unary=theta, count=f, edges=edges, pairwise=pw.reshape(-1, 2, 2))
    mu, pi, lz = ref.p_on, ref.count_marginals, ref.log_partition
    if not np.isfinite(lz):
        with pytest.raises(ValueError, match="no configuration has non-zero probability"):
            TreeCardinalityModel(edges, pw.reshape(-1, 2, 2), theta, f).marginals()
        return
    m = TreeCardinalityModel(edges, pw.reshape(-1, 2, 2), theta, f)
    res = m.marginals()
    # direct convolutions of non-negative vectors: exact up to rounding
    assert_allclose(res.p_on, mu, rtol=1e-9, atol=1e-14)
    assert_allclose(res.count_marginals, pi, atol=1e-13)
    assert_allclose(res.log_partition, lz, atol=1e-9 * max(1, abs(lz)))
    assert_allclose(m.log_partition(), lz, atol=1e-9 * max(1, abs(lz)))
    # MAP value against enumeration (compare the objective, not the argmax: ties)
    best = max(m.score(y) for y in ref.ys)
    mp = m.map_assignment()
    assert_allclose(mp.score, best, rtol=1e-12, atol=1e-12)
    assert_allclose(m.score(mp.assignment), best, rtol=1e-12, atol=1e-12)


def test_no_edges_equals_cardinality_model():
    rng = np.random.default_rng(0)
    theta, f = rng.normal(size=40), rng.normal(size=41)
    m = TreeCardinalityModel(np.zeros((0, 2), int), np.zeros((0, 2, 2)), theta, f)
    ref = marginals(theta, f)
    assert_allclose(m.marginals().p_on, ref.p_on, rtol=1e-10)
    assert_allclose(m.log_partition(), ref.log_partition, rtol=1e-12)


def test_long_chain_extreme_theta():
    rng = np.random.default_rng(1)
    n = 400
    edges = [(i, i + 1) for i in range(n - 1)]
    pw = np.tile(np.array([[0.5, -0.5], [-0.5, 0.5]]), (n - 1, 1, 1))
    theta = rng.normal(0, 50, n)
    f = np.full(n + 1, -np.inf)
    f[150:160] = 0.0
    res = TreeCardinalityModel(edges, pw, theta, f).marginals()
    assert np.all(np.isfinite(res.marginals)) and np.isfinite(res.log_partition)
    assert_allclose(res.count_marginals.sum(), 1.0, rtol=1e-12)
    assert_allclose(res.p_on.sum(), res.count_marginals @ np.arange(n + 1), rtol=1e-9)


def test_sampling_frequencies():
    rng = np.random.default_rng(2)
    n = 5
    edges = [(0, 1), (1, 2), (1, 3), (4, 3)]
    pw = rng.normal(0, 1, (4, 2, 2))
    theta = rng.normal(size=n)
    f = rng.normal(size=n + 1)
    f[2] = -np.inf
    p = BinaryEnumeration(n, unary=theta, count=f, edges=edges, pairwise=pw).p
    s = TreeCardinalityModel(edges, pw, theta, f).sample(size=20000, rng=5)
    codes = s.astype(np.int64) @ (1 << np.arange(n - 1, -1, -1))
    obs = np.bincount(codes, minlength=2**n)
    assert obs[p == 0].sum() == 0
    assert chisquare(obs[p > 0], 20000 * p[p > 0]).pvalue > 1e-3  # fixed seed


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (
            ([[0, 1], [1, 2], [2, 0]], np.zeros((3, 2, 2)), np.zeros(3), np.zeros(4)),
            "`edges` must form a forest; edge 2 = [2, 0] closes a cycle.",
        ),
        (
            ([[0, 0]], np.zeros((1, 2, 2)), np.zeros(3), np.zeros(4)),
            "`edges` must not contain self loops; got edge 0 = [0, 0].",
        ),
        (
            ([[0, 1]], np.zeros((2, 2, 2)), np.zeros(3), np.zeros(4)),
            "`pairwise` must have shape (1, 2, 2); got (2, 2, 2).",
        ),
        (
            ([[0, 1]], np.zeros((1, 2, 2)), np.zeros(3), np.zeros(3)),
            "`count_potential` must have n_variables + 1 = 4 entries; got 3.",
        ),
        (([[0, 5]], np.zeros((1, 2, 2)), np.zeros(3), np.zeros(4)), "`edges` must contain indices in [0, 2]; got 5."),
        (([[0, 1]], np.zeros((1, 2, 2)), np.zeros(3), [-np.inf] * 4), "`count_potential` is -inf at every count"),
    ],
)
def test_bad_input(args, msg):
    with pytest.raises(ValueError, match=re.escape(msg)):
        TreeCardinalityModel(*args)
