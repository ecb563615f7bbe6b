"""Recursive cardinality models whose scores span hundreds: certified linear passes, else log space.

The linear-space passes keep each message as a row with maximum 1; a count far below its row's
maximum (under e^-745, or under the FFT noise floor of ~1e-14) is lost there even when a count
potential further up makes it the likely count. These tests pin the cases that went wrong with a
success status before the passes carried error bounds, check them against enumeration and an
independent closed form, and check that ordinary models still take the fast linear path.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.special import gammaln, logsumexp

from _oracles import BinaryEnumeration, random_nested
from tractable import FactorGraph, RecursiveCardinalityFactor, TableFactor
from tractable.bp import loopy
from tractable.cardinality import RecursiveCardinalityModel, _tree

# the regression of the issue: the linear passes returned [1, 1, 0] with status "optimal"
FIGHTING = (3, [[0, 1, 2], [0, 1]], [[0, -800, 800, -800], [800, 800, 0]], [-800, -800, 800])


def test_potentials_that_fight_across_hundreds_give_the_exact_marginals():
    m = RecursiveCardinalityModel(*FIGHTING[:3], FIGHTING[3])
    ref = BinaryEnumeration(3, unary=FIGHTING[3], subsets=FIGHTING[1], subset_counts=FIGHTING[2])
    res = m.marginals()
    assert res.status == "optimal"
    assert_allclose(res.p_on, [0.5, 0.5, 1.0], atol=1e-12)
    assert_allclose(res.p_on, ref.p_on, atol=1e-12)
    assert_allclose(res.count_marginals, ref.count_marginals, atol=1e-12)
    assert_allclose(res.log_partition, ref.log_partition, rtol=1e-13)
    assert m.map_assignment().score == pytest.approx(ref.best)


def test_a_count_far_below_the_others_is_not_lost_to_underflow():
    # unary 40 makes count 100 e^4000 times likelier than count 0, which the root potential alone allows
    m = RecursiveCardinalityModel(100, [list(range(100))], [[0.0] + [-np.inf] * 100], np.full(100, 40.0))
    res = m.marginals()
    assert_allclose(res.p_on, 0.0, atol=0)
    assert res.log_partition == pytest.approx(0.0, abs=1e-12)
    assert_allclose(m.sample(size=5, rng=0), 0)


def _two_block_reference(n1, n2, f_all, f_first, theta):
    """Exact ``log Z`` and ``P(y_d = 1)`` for d in the first block and in the second, of the model with
    subsets [all n1 + n2 variables] and [the first n1], unary ``theta`` on every variable, by a sum over
    the two block counts in log space (binomial multiplicities)."""

    def lbinom(n, k):
        return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)

    k1 = np.arange(n1 + 1)[:, None]
    k2 = np.arange(n2 + 1)[None, :]
    lw = lbinom(n1, k1) + lbinom(n2, k2) + theta * (k1 + k2) + f_all[k1 + k2] + f_first[k1]
    lz = logsumexp(lw)
    p = np.exp(lw - lz)
    return lz, float(np.sum(p * k1) / n1), float(np.sum(p * k2) / n2)


@pytest.mark.parametrize("method", ["auto", "fft", "direct"])
@pytest.mark.parametrize("bonus", [60.0, 700.0, 5000.0])
def test_a_root_potential_against_the_unary_scores_matches_the_closed_form(method, bonus):
    # the root favours count 0 by `bonus` against unary +2 on 100 variables (log Z of the rest ~212.7):
    # FFT passes lost the counts next to 0 in the downward message (p_on 0.903 instead of 0.881)
    n1 = n2 = 50
    f_all = np.zeros(101)
    f_all[0] = bonus
    f_first = np.zeros(51)
    m = RecursiveCardinalityModel(
        100, [list(range(100)), list(range(50))], [f_all, f_first], np.full(100, 2.0), method=method
    )
    lz, p1, p2 = _two_block_reference(n1, n2, f_all, f_first, 2.0)
    res = m.marginals()
    # tolerances: the passes certify every belief to 1e-8 of its mass (tractable.cardinality._tree.BELIEF_TOL)
    assert_allclose(res.log_partition, lz, rtol=1e-12)
    assert_allclose(res.p_on[:50], p1, atol=1e-8)
    assert_allclose(res.p_on[50:], p2, atol=1e-8)


@st.composite
def wide_models(draw):
    """Small nested models whose scores span up to thousands (the linear passes' failure region)."""
    n = draw(st.integers(1, 8))
    scale = draw(st.sampled_from([1.0, 50.0, 400.0, 3000.0]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    subsets = random_nested(rng, list(rng.permutation(n)))
    pots = []
    for s in subsets:
        f = rng.normal(0, scale, len(s) + 1)
        f[rng.random(len(s) + 1) < 0.2] = -np.inf
        if not np.isfinite(f).any():
            f[0] = 0.0
        pots.append(f)
    return n, subsets, pots, rng.normal(0, scale, n)


@settings(max_examples=80, deadline=None)
@given(wide_models(), st.sampled_from(["auto", "fft", "direct"]))
def test_wide_scores_match_enumeration(model, method):
    n, subsets, pots, theta = model
    ref = BinaryEnumeration(n, unary=theta, subsets=subsets, subset_counts=pots)
    if not np.isfinite(ref.log_partition):
        with pytest.raises(ValueError, match="no configuration has non-zero probability"):
            RecursiveCardinalityModel(n, subsets, pots, theta, method=method).log_partition()
        return
    m = RecursiveCardinalityModel(n, subsets, pots, theta, method=method)
    res = m.marginals()
    # every belief is certified to 1e-8 of its mass, or computed in log space (exact to rounding)
    assert_allclose(res.p_on, ref.p_on, atol=1e-8)
    assert_allclose(res.count_marginals, ref.count_marginals, atol=1e-8)
    assert_allclose(res.log_partition, ref.log_partition, rtol=1e-12, atol=1e-9)
    for got, want in zip(m.subset_count_marginals(), ref.subset_count_marginals(subsets)):
        assert_allclose(got, want, atol=1e-8)


def test_samples_of_a_log_space_model_follow_its_marginals():
    m = RecursiveCardinalityModel(*FIGHTING[:3], FIGHTING[3])
    assert m._passes()[0].log  # the fighting potentials cannot be certified in linear space
    y = m.sample(size=20000, rng=3)
    assert y.dtype == np.uint8 and y.shape == (20000, 3)
    # P = [.5, .5, 1]: binomial standard deviation of the mean 0.0035, 5 of them
    assert_allclose(y.mean(axis=0), [0.5, 0.5, 1.0], atol=0.018)
    assert np.all(y[:, 0] + y[:, 1] == 1)  # counts of {0, 1} other than 1 have probability e^-800
    assert np.array_equal(m.sample(size=50, rng=7), m.sample(size=50, rng=7))


def test_ordinary_models_stay_on_the_linear_fast_path():
    # rough count potentials on a balanced nested family of 10^4 variables: certified in linear space
    rng = np.random.default_rng(0)
    subsets, pots = [], []
    b = 10
    while b <= 10_000:
        for s in range(0, 10_000, b):
            subsets.append(list(range(s, s + b)))
            pots.append(rng.normal(size=b + 1) * 2)
        b *= 10
    m = RecursiveCardinalityModel(10_000, subsets, pots, rng.normal(size=10_000))
    up, down = m._passes()
    assert not up.log
    assert np.all(_tree.belief_bounds(m._structure.tree, up, down) <= _tree.BELIEF_TOL)


def test_a_recursive_factor_in_bp_with_fighting_potentials_gives_the_exact_marginals():
    n, subsets, pots, theta = FIGHTING
    fg = FactorGraph([2] * n)
    fg.add_factor(RecursiveCardinalityFactor(list(range(n)), subsets, pots))
    for d in range(n):
        fg.add_factor(TableFactor([d], [0.0, theta[d]]))
    res = loopy(fg, task="marginals")
    assert_allclose(res.marginals[:, 1], [0.5, 0.5, 1.0], atol=1e-12)
