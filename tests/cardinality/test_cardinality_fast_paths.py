"""The affine-count shortcut and the compiled direct levels of the tree, against the general path,
the dense tree and the log-space chain oracle."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.special import expit

from _oracles import BinaryEnumeration
from tractable.cardinality import chain_marginals, log_partition, marginals, sample
from tractable.cardinality._balanced import Balanced
from tractable.cardinality._convolve import convolve_rows
from tractable.cardinality._direct_levels import down_direct_levels, up_direct_levels
from tractable.cardinality._kernels import corr_children_direct
from tractable.cardinality.convolution_tree import _affine_slope, _marginals_core


@st.composite
def affine_problems(draw):
    d = draw(st.integers(1, 400))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    scale = draw(st.sampled_from([0.5, 3.0, 30.0]))
    theta = rng.normal(rng.normal(0, 2), scale, d)
    if draw(st.booleans()):  # some variables clamped on / off
        k = int(rng.integers(0, d))
        theta[rng.choice(d, size=k // 3, replace=False)] = rng.choice([-np.inf, np.inf], size=k // 3)
    a = draw(st.sampled_from([0.0, -7.5, 1e3]))
    b = draw(st.sampled_from([0.0, 0.1, -2.0, 15.0]))
    f = a + b * np.arange(d + 1)
    return theta, f


@settings(max_examples=40, deadline=None)
@given(affine_problems())
def test_affine_shortcut_matches_general_path_and_chain(prob):
    theta, f = prob
    assert _affine_slope(f) is not None
    res = marginals(theta, f)
    log_odds_g, count_g, logz_g, _ = _marginals_core(theta, f, affine_shortcut=False)
    ref = chain_marginals(theta, f)
    # the shortcut's marginals are sigmoid(theta + b), exact up to rounding: the same tolerances as the
    # general path against the chain (test_cardinality_core), relative to every marginal
    assert_allclose(res.p_on, ref.p_on, rtol=1e-9, atol=1e-300)
    assert_allclose(res.p_on, expit(log_odds_g), rtol=1e-9, atol=1e-300)
    assert_allclose(res.count_marginals, ref.count_marginals, rtol=0, atol=1e-12)
    assert_allclose(res.count_marginals, count_g, rtol=0, atol=1e-12)
    tol = 1e-9 * max(1.0, abs(ref.log_partition))
    assert abs(res.log_partition - ref.log_partition) <= tol
    assert abs(res.log_partition - logz_g) <= tol
    assert abs(log_partition(theta, f) - ref.log_partition) <= tol


def test_affine_shortcut_large_poisson_binomial():
    # larger than the property test: against the general path and scipy's pmf
    from scipy import stats

    rng = np.random.default_rng(4)
    d = 4000
    theta = rng.normal(0, 3, d)
    f = np.zeros(d + 1)
    res = marginals(theta, f)
    log_odds_g, count_g, logz_g, _ = _marginals_core(theta, f, affine_shortcut=False)
    assert res.n_passes == 1
    assert np.array_equal(res.p_on, expit(theta))  # f = 0: the marginals are sigmoid(theta) exactly
    assert_allclose(expit(log_odds_g), res.p_on, rtol=1e-9)  # the general path's accuracy contract
    assert_allclose(count_g, res.count_marginals, atol=1e-13)
    assert abs(logz_g - res.log_partition) <= 1e-9
    ref = stats.poisson_binom.pmf(np.arange(d + 1), expit(theta))
    assert_allclose(res.count_marginals, ref, atol=1e-13)  # scipy is accurate to ~1e-15 absolute
    assert_allclose(res.log_partition, np.logaddexp(0, theta).sum(), rtol=1e-13)


def test_affine_slope_recognises_exactly_affine_potentials():
    k = np.arange(101.0)
    assert _affine_slope(np.zeros(101)) == 0.0
    assert _affine_slope(0.1 * k - 3.0) == pytest.approx(0.1, rel=1e-14)  # rounding of a + b k is accepted
    assert _affine_slope(np.array([2.5])) is None  # no count to have a slope over
    bent = 0.1 * k
    bent[50] += 1e-9  # a perturbation far above rounding: not affine, the general path runs
    assert _affine_slope(bent) is None
    cut = np.zeros(101)
    cut[100] = -np.inf
    assert _affine_slope(cut) is None
    cut = np.zeros(101)
    cut[40] = -np.inf
    assert _affine_slope(cut) is None


def test_near_affine_potential_takes_the_general_path():
    rng = np.random.default_rng(8)
    d = 600
    theta = rng.normal(0, 1, d)
    f = 0.3 * np.arange(d + 1)
    f[::7] += 1e-6  # not affine: the marginals are no longer sigmoid(theta + 0.3)
    res = marginals(theta, f)
    ref = chain_marginals(theta, f)
    assert_allclose(res.p_on, ref.p_on, rtol=1e-9)
    assert_allclose(res.count_marginals, ref.count_marginals, atol=1e-12)
    assert not np.array_equal(res.p_on, expit(theta + 0.3))


def test_affine_sampling_matches_independent_marginals():
    rng = np.random.default_rng(10)
    d = 200
    theta = rng.normal(0, 1, d)
    f = -0.2 * np.arange(d + 1) + 1.0
    n = 4000
    s = sample(theta, f, size=n, rng=5)
    p = expit(theta - 0.2)
    se = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(s.mean(0) - p) < 5 * se + 1e-12)  # 5 standard errors, fixed seed


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 100, 1000])
@pytest.mark.parametrize("top", [0, 1, 3, 6, 8])
def test_direct_levels_match_level_by_level_kernels(n, top):
    # the fused kernels against the level-by-level ones (the same sums in the same order: exact
    # up to the power-of-two rescaling, which is itself exact)
    rng = np.random.default_rng(n + 100 * top)
    pad = 1 << max(top, int(np.ceil(np.log2(n))) if n > 1 else 0)
    logw = np.zeros((n, 2))
    logw[:, 1] = rng.normal(0, 2, n)  # upward maxima grow like the product of the widths: > 2^20 from top = 7
    flat, sflat = up_direct_levels(logw, pad, top)
    v0 = np.zeros((pad, 2))
    v0[:, 0] = 1.0
    m = logw.max(axis=1)
    v0[:n] = np.exp(logw - m[:, None])
    s0 = np.zeros(pad)
    s0[:n] = m
    levels, scales, off, soff = [v0], [s0], 0, 0
    for h in range(top + 1):
        rows, w = pad >> h, (1 << h) + 1
        got, got_s = flat[off : off + rows * w].reshape(rows, w), sflat[soff : soff + rows]
        if h:
            x = convolve_rows(levels[-1][0::2], levels[-1][1::2], method="direct")
            levels.append(x)
            scales.append(scales[-1][0::2] + scales[-1][1::2])
        # the same messages in log space (zeros included): atol 1e-12 in log is 1e-12 relative
        with np.errstate(divide="ignore"):
            assert_allclose(np.log(got) + got_s[:, None], np.log(levels[-1]) + scales[-1][:, None], rtol=0, atol=1e-12)
        off, soff = off + rows * w, soff + rows
    a = np.exp(-rng.exponential(30, (pad >> top, (1 << top) + 1)))  # many rows < 2^-20: rescaled
    a[0, :] = 0.0  # a zero message (an unreachable node) stays zero with scale -inf
    sa = rng.normal(0, 3, pad >> top)
    out, sout = down_direct_levels(a, sa, flat, sflat, pad, top)
    x, sx = a, sa
    for h in range(top, 0, -1):
        x = corr_children_direct(x, levels[h - 1])
        sx = np.repeat(sx, 2) + scales[h - 1].reshape(-1, 2)[:, ::-1].ravel()
    with np.errstate(divide="ignore"):
        assert_allclose(np.log(out) + sout[:, None], np.log(x) + sx[:, None], rtol=0, atol=1e-12)  # as above


@pytest.mark.parametrize("method", ["auto", "fft", "direct"])
@pytest.mark.parametrize("d", [1, 2, 7, 33, 200])
def test_dense_tree_methods_match_enumeration_or_chain(method, d):
    # every method runs through the direct levels differently (none, some, all of them)
    rng = np.random.default_rng(d)
    theta = rng.normal(0, 2, d)
    f = rng.normal(0, 2, d + 1)
    ref = BinaryEnumeration(d, unary=theta, count=f) if d <= 7 else chain_marginals(theta, f)
    res = marginals(theta, f, method=method)
    # tolerances of test_cardinality_core: exact methods relative to every entry; forced FFT on
    # tiny, peaked instances relative to the largest entry only
    assert_allclose(res.p_on, ref.p_on, rtol=1e-9, atol=1e-10 if method == "fft" else 1e-20)
    assert_allclose(res.count_marginals, ref.count_marginals, atol=1e-12)
    up = Balanced(np.column_stack([np.zeros(d), theta]), method=method)
    assert up.root.max() == 1.0
