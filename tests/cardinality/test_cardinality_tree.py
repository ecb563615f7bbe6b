"""TreeCardinalityModel against enumeration."""

import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.special import logsumexp
from scipy.stats import chisquare

from tractable.cardinality import TreeCardinalityModel, marginals


def enumerate_tree(edges, pw, theta, f):
    n = theta.shape[0]
    ys = np.array(list(itertools.product([0, 1], repeat=n)))
    with np.errstate(invalid="ignore"):
        sc = np.where(ys == 1, theta, 0.0).sum(1) + f[ys.sum(1)]
    for (u, v), p in zip(edges, pw):
        sc = sc + p[ys[:, u], ys[:, v]]
    lz = logsumexp(sc)
    with np.errstate(invalid="ignore"):
        p = np.exp(sc - lz)
    return p @ ys, np.bincount(ys.sum(1), weights=p, minlength=n + 1), lz, p, ys


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
    mu, pi, lz, _, _ = enumerate_tree(edges, pw.reshape(-1, 2, 2), theta, f)
    if not np.isfinite(lz):
        with pytest.raises(ValueError, match="no configuration has non-zero probability"):
            TreeCardinalityModel(edges, pw.reshape(-1, 2, 2), theta, f).marginals()
        return
    m = TreeCardinalityModel(edges, pw.reshape(-1, 2, 2), theta, f)
    res = m.marginals()
    # direct convolutions of non-negative vectors: exact up to rounding
    assert_allclose(res.marginals, mu, rtol=1e-9, atol=1e-14)
    assert_allclose(res.count_marginals, pi, atol=1e-13)
    assert_allclose(res.log_partition, lz, atol=1e-9 * max(1, abs(lz)))
    assert_allclose(m.log_partition(), lz, atol=1e-9 * max(1, abs(lz)))
    # MAP value against enumeration (compare the objective, not the argmax: ties)
    ys = np.array(list(itertools.product([0, 1], repeat=len(theta))))
    best = max(m.score(y) for y in ys)
    mp = m.map_assignment()
    assert_allclose(mp.score, best, rtol=1e-12, atol=1e-12)
    assert_allclose(m.score(mp.assignment), best, rtol=1e-12, atol=1e-12)


def test_no_edges_equals_cardinality_model():
    rng = np.random.default_rng(0)
    theta, f = rng.normal(size=40), rng.normal(size=41)
    m = TreeCardinalityModel(np.zeros((0, 2), int), np.zeros((0, 2, 2)), theta, f)
    ref = marginals(theta, f)
    assert_allclose(m.marginals().marginals, ref.marginals, rtol=1e-10)
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
    assert_allclose(res.marginals.sum(), res.count_marginals @ np.arange(n + 1), rtol=1e-9)


def test_sampling_frequencies():
    rng = np.random.default_rng(2)
    n = 5
    edges = [(0, 1), (1, 2), (1, 3), (4, 3)]
    pw = rng.normal(0, 1, (4, 2, 2))
    theta = rng.normal(size=n)
    f = rng.normal(size=n + 1)
    f[2] = -np.inf
    *_, p, ys = enumerate_tree(edges, pw, theta, f)
    s = TreeCardinalityModel(edges, pw, theta, f).sample(20000, rng=5)
    codes = s.astype(np.int64) @ (1 << np.arange(n - 1, -1, -1))
    obs = np.bincount(codes, minlength=2**n)
    assert obs[p == 0].sum() == 0
    assert chisquare(obs[p > 0], 20000 * p[p > 0]).pvalue > 1e-3  # fixed seed


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (([[0, 1], [1, 2], [2, 0]], np.zeros((3, 2, 2)), np.zeros(3), np.zeros(4)),
         "`edges` must form a forest; edge 2 = [2, 0] closes a cycle."),
        (([[0, 0]], np.zeros((1, 2, 2)), np.zeros(3), np.zeros(4)),
         "`edges` must not contain self loops; got edge 0 = [0, 0]."),
        (([[0, 1]], np.zeros((2, 2, 2)), np.zeros(3), np.zeros(4)),
         "`pairwise` must have shape (1, 2, 2); got (2, 2, 2)."),
        (([[0, 1]], np.zeros((1, 2, 2)), np.zeros(3), np.zeros(3)),
         "`f` must have n_variables + 1 = 4 entries; got 3."),
        (([[0, 5]], np.zeros((1, 2, 2)), np.zeros(3), np.zeros(4)), "`edges` must contain indices in [0, 2]; got 5."),
        (([[0, 1]], np.zeros((1, 2, 2)), np.zeros(3), [-np.inf] * 4), "`f` is -inf at every count"),
    ],
)
def test_bad_input(args, msg):
    with pytest.raises(ValueError, match=re.escape(msg)):
        TreeCardinalityModel(*args)
