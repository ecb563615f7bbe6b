"""Recursive cardinality models against enumeration and the single-potential functions."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.stats import chisquare

from _oracles import BinaryEnumeration, random_nested
from tractable.cardinality import RecursiveCardinalityModel, marginals


@st.composite
def models(draw):
    n = draw(st.integers(1, 10))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    perm = list(rng.permutation(n))
    subsets = random_nested(rng, perm)
    pots = []
    for s in subsets:
        f = rng.normal(0, 2, len(s) + 1)
        f[rng.random(len(s) + 1) < 0.2] = -np.inf
        if not np.isfinite(f).any():
            f[0] = 0.0
        pots.append(f)
    theta = rng.normal(0, 2, n)
    return n, subsets, pots, theta


@settings(max_examples=60, deadline=None)
@given(models(), st.sampled_from(["auto", "fft"]))
def test_matches_enumeration(model, method):
    n, subsets, pots, theta = model
    ref = BinaryEnumeration(n, unary=theta, subsets=subsets, subset_counts=pots)
    mu, pi, lz, best = ref.p_on, ref.count_marginals, ref.log_partition, ref.best
    subm = ref.subset_count_marginals(subsets)
    if not np.isfinite(lz):
        with pytest.raises(ValueError, match="no configuration has non-zero probability"):
            RecursiveCardinalityModel(n, subsets, pots, theta, method=method).log_partition()
        return
    m = RecursiveCardinalityModel(n, subsets, pots, theta, method=method)
    res = m.marginals()
    # direct convolution is exact up to rounding; FFT messages are accurate relative to their
    # largest entry, hence the absolute tolerance (the largest error seen over these examples: 1.03e-10,
    # on a count that no configuration reaches, after the exponential tilt of its pass)
    atol = 1e-9 if method == "fft" else 1e-13
    assert_allclose(res.p_on, mu, rtol=1e-9, atol=atol)
    assert_allclose(res.count_marginals, pi, atol=atol)
    assert_allclose(res.log_partition, lz, atol=1e-9 * max(1, abs(lz)))
    for got, want in zip(m.subset_count_marginals(), subm):
        assert_allclose(got, want, atol=atol)
    mp = m.map_assignment()
    assert_allclose(mp.score, best, rtol=1e-12, atol=1e-12)


def test_single_potential_matches_convolution_tree():
    rng = np.random.default_rng(1)
    n = 300
    theta, f = rng.normal(size=n), rng.normal(size=n + 1)
    m = RecursiveCardinalityModel(n, [np.arange(n)], [f], theta)
    ref = marginals(theta, f)
    # both exact; the RC model runs untilted, so allow FFT rounding relative to the max
    assert_allclose(m.marginals().p_on, ref.p_on, rtol=1e-9)
    assert_allclose(m.log_partition(), ref.log_partition, rtol=1e-12)


def test_singletons_are_independent_variables():
    rng = np.random.default_rng(2)
    n = 50
    a = rng.normal(size=n)
    b = rng.normal(size=n)
    m = RecursiveCardinalityModel(n, [[d] for d in range(n)], [[a[d], b[d]] for d in range(n)])
    theta = b - a
    assert_allclose(m.marginals().p_on, 1 / (1 + np.exp(-theta)), rtol=1e-12)
    assert_allclose(m.log_partition(), np.logaddexp(a, b).sum(), rtol=1e-12)


def test_sampling_frequencies():
    rng = np.random.default_rng(3)
    n = 5
    subsets = [[0, 1, 2, 3, 4], [0, 1], [2, 3, 4], [3, 4]]
    pots = [rng.normal(size=len(s) + 1) for s in subsets]
    pots[1][2] = -np.inf
    theta = rng.normal(size=n)
    p = BinaryEnumeration(n, unary=theta, subsets=subsets, subset_counts=pots).p
    m = RecursiveCardinalityModel(n, subsets, pots, theta)
    s = m.sample(size=20000, rng=7)
    codes = s.astype(np.int64) @ (1 << np.arange(n - 1, -1, -1))
    obs = np.bincount(codes, minlength=2**n)
    assert obs[p == 0].sum() == 0
    assert chisquare(obs[p > 0], 20000 * p[p > 0]).pvalue > 1e-3  # fixed seed


def test_non_nested_error_names_subsets():
    with pytest.raises(ValueError, match=re.escape("subsets[0] and subsets[1] overlap without one containing")):
        RecursiveCardinalityModel(4, [[0, 1, 2], [2, 3]], [np.zeros(4), np.zeros(3)])


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        ((3, [[0, 5]], [np.zeros(3)]), "`subsets[0]` must contain indices in [0, 2]; got 5."),
        ((3, [[0, 0]], [np.zeros(3)]), "`subsets[0]` must not repeat a variable; got [0, 0]."),
        ((3, [[0, 1]], [np.zeros(2)]), "`count_potentials[0]` must have len(subsets[0]) + 1 = 3 entries; got 2."),
        ((3, [[0, 1]], []), "`count_potentials` must have one entry per subset (1); got 0."),
        ((3, [[0, 1]], [[0, np.nan, 0]]), "`count_potentials[0]` must not contain NaN"),
        ((3, [[0, 1]], [[-np.inf] * 3]), "`count_potentials[0]` is -inf at every count"),
        ((3, [[]], [[0.0]]), "`subsets[0]` must not be empty."),
        ((0, [], []), "`n_variables` must be >= 1; got 0."),
    ],
)
def test_bad_input(args, msg):
    with pytest.raises(ValueError, match=re.escape(msg)):
        RecursiveCardinalityModel(*args)


def test_unary_shape_error():
    with pytest.raises(ValueError, match=re.escape("`unary` must have shape (3,); got (2,).")):
        RecursiveCardinalityModel(3, [[0, 1]], [np.zeros(3)], unary=[0.0, 1.0])
