"""Convolution tree: marginals, log Z, samples and MAP against enumeration and references."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.stats import chisquare

from _oracles import BinaryEnumeration
from tractable.cardinality import chain_marginals, log_partition, map_assignment, marginals, sample
from tractable.cardinality._convolve import (
    _convolve_direct_python,
    _correlate_direct_python,
    convolve_rows,
    correlate_rows,
)


@st.composite
def problems(draw):
    d = draw(st.integers(1, 9))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    scale = draw(st.sampled_from([1.0, 5.0, 30.0]))
    theta = rng.normal(0, scale, d)
    f = rng.normal(0, scale, d + 1)
    f[rng.random(d + 1) < 0.3] = -np.inf
    if not np.isfinite(f).any():
        f[rng.integers(d + 1)] = 0.0
    return theta, f


@settings(max_examples=60, deadline=None)
@given(problems(), st.sampled_from(["auto", "fft", "direct", "chain"]))
def test_matches_enumeration(prob, method):
    theta, f = prob
    ref = BinaryEnumeration(len(theta), unary=theta, count=f)
    mu, pi, lz = ref.p_on, ref.count_marginals, ref.log_partition
    res = chain_marginals(theta, f) if method == "chain" else marginals(theta, f, method=method)
    # tolerances: direct convolution and the chain are exact up to rounding (relative to every
    # entry); counts of probability < exp(-50) / (D + 1) are dropped by design, hence atol 1e-20.
    # Forced FFT on tiny, extremely peaked instances is accurate relative to the largest entry
    # only (the tilt cannot centre a distribution of width << 1), hence atol 1e-10 there.
    assert_allclose(res.p_on, mu, rtol=1e-9, atol=1e-10 if method == "fft" else 1e-20)
    assert_allclose(res.count_marginals, pi, rtol=0, atol=1e-12)
    assert_allclose(res.log_partition, lz, rtol=0, atol=1e-9 * max(1.0, abs(lz)))
    if method == "auto":
        assert_allclose(log_partition(theta, f), lz, rtol=0, atol=1e-9 * max(1.0, abs(lz)))


@settings(max_examples=60, deadline=None)
@given(problems())
def test_map_value_matches_enumeration(prob):
    theta, f = prob
    best = BinaryEnumeration(len(theta), unary=theta, count=f).best
    res = map_assignment(theta, f)
    y = res.assignment
    assert_allclose(res.score, best, rtol=1e-12)
    assert_allclose(theta @ y + f[y.sum()], best, rtol=1e-12)


def test_clamped_variables():
    theta = np.array([np.inf, -np.inf, 0.3, -0.2])
    f = np.array([0.0, 1.0, 0.5, -np.inf, 2.0])
    res = marginals(theta, f)
    # enumerate the two free variables with the count shifted by the one clamped on
    ref = BinaryEnumeration(2, unary=theta[2:], count=f[1:4])
    mu, pi, lz = ref.p_on, ref.count_marginals, ref.log_partition
    assert_allclose(res.p_on, [1.0, 0.0, *mu], rtol=1e-12)
    assert_allclose(res.count_marginals, [0.0, *pi, 0.0], atol=1e-14)
    assert_allclose(res.log_partition, lz, rtol=1e-12)
    s = sample(theta, f, size=50, rng=1)
    assert (s[:, 0] == 1).all() and (s[:, 1] == 0).all()


def test_poisson_binomial_against_scipy():
    from scipy import stats  # poisson_binom: SciPy >= 1.15 (the `test` extra requires it)

    rng = np.random.default_rng(3)
    d = 2000
    theta = rng.normal(0, 2, d)
    p = 1 / (1 + np.exp(-theta))
    res = marginals(theta, np.zeros(d + 1))
    ref = stats.poisson_binom.pmf(np.arange(d + 1), p)
    # scipy's pmf is accurate to ~1e-15 absolute; f = 0 leaves the marginals at sigmoid(theta)
    assert_allclose(res.count_marginals, ref, atol=1e-13)
    assert_allclose(res.p_on, p, rtol=1e-12)
    assert_allclose(res.log_partition, np.logaddexp(0, theta).sum(), rtol=1e-13)


@pytest.mark.parametrize("seed", [0, 1])
def test_extreme_inputs_match_log_space_reference(seed):
    rng = np.random.default_rng(seed)
    d = 4096
    theta = rng.normal(0, 50, d)
    f = rng.normal(0, 100, d + 1)
    f[:100] = -np.inf
    f[3000:3100] = -np.inf
    ref = chain_marginals(theta, f)
    res = marginals(theta, f)
    assert np.all(np.isfinite(res.marginals)) and np.isfinite(res.log_partition)
    # the accuracy contract at D = 4096
    assert_allclose(res.p_on, ref.p_on, rtol=1e-9, atol=0)
    assert abs(res.log_partition - ref.log_partition) <= 1e-9
    assert_allclose(res.count_marginals, ref.count_marginals, rtol=0, atol=1e-12)


def test_hard_constraint_far_in_the_tail():
    rng = np.random.default_rng(5)
    d = 3000
    theta = rng.normal(4, 3, d)  # nearly all want to be on
    f = np.full(d + 1, -np.inf)
    f[3:11] = rng.normal(0, 1, 8)  # "between 3 and 10 are on"
    ref = chain_marginals(theta, f)
    res = marginals(theta, f)
    assert_allclose(res.p_on, ref.p_on, rtol=1e-9)
    assert abs(res.log_partition - ref.log_partition) <= 1e-9
    assert_allclose(res.count_marginals, ref.count_marginals, atol=1e-12)
    assert res.count_marginals[:3].sum() == 0 and res.count_marginals[11:].sum() == 0


def test_two_separated_modes():
    rng = np.random.default_rng(6)
    d = 1500
    theta = rng.normal(0, 1, d)
    f = np.full(d + 1, -np.inf)
    f[20] = 0.0
    f[1400] = 0.0
    ref = chain_marginals(theta, f)
    res = marginals(theta, f)
    assert res.n_passes >= 2
    assert_allclose(res.p_on, ref.p_on, rtol=1e-9)
    assert abs(res.log_partition - ref.log_partition) <= 1e-9
    assert_allclose(res.count_marginals, ref.count_marginals, atol=1e-12)


def test_gradient_identity():
    # d log Z / d theta = E[y], d log Z / d f_k = P(count = k), checked by central differences
    rng = np.random.default_rng(7)
    theta, f = rng.normal(size=6), rng.normal(size=7)
    res = marginals(theta, f)
    h = 1e-6
    for d in range(6):
        e = np.zeros(6)
        e[d] = h
        g = (log_partition(theta + e, f) - log_partition(theta - e, f)) / (2 * h)
        assert_allclose(g, res.p_on[d], atol=1e-8)  # finite-difference truncation ~h^2
    for k in range(7):
        e = np.zeros(7)
        e[k] = h
        g = (log_partition(theta, f + e) - log_partition(theta, f - e)) / (2 * h)
        assert_allclose(g, res.count_marginals[k], atol=1e-8)


def test_sample_joint_frequencies():
    rng = np.random.default_rng(11)
    d = 4
    theta = rng.normal(0, 1, d)
    f = np.array([0.5, -np.inf, 1.0, 0.0, -0.5])
    p = BinaryEnumeration(len(theta), unary=theta, count=f).p
    s = sample(theta, f, size=20000, rng=2024)
    codes = s.astype(np.int64) @ (1 << np.arange(d - 1, -1, -1))
    obs = np.bincount(codes, minlength=2**d)
    keep = p > 0
    assert obs[~keep].sum() == 0
    # chi-square goodness of fit of the exact joint distribution, fixed seed
    assert chisquare(obs[keep], 20000 * p[keep]).pvalue > 1e-3


def test_sample_marginals_large():
    rng = np.random.default_rng(12)
    d = 300
    theta = rng.normal(0, 1, d)
    f = -0.05 * (np.arange(d + 1) - 100.0) ** 2
    s = sample(theta, f, size=4000, rng=0)
    res = marginals(theta, f)
    se = np.sqrt(res.p_on * (1 - res.p_on) / 4000)
    assert np.all(np.abs(s.mean(0) - res.p_on) < 5 * se + 1e-12)  # 5 standard errors
    counts = np.bincount(s.sum(1), minlength=d + 1)
    m = res.count_marginals @ np.arange(d + 1)
    assert abs(counts @ np.arange(d + 1) / 4000 - m) < 0.5
    assert s.dtype == np.uint8 and s.shape == (4000, d)


def test_sample_reproducible():
    theta, f = np.zeros(20), np.zeros(21)
    assert np.array_equal(sample(theta, f, size=10, rng=3), sample(theta, f, size=10, rng=3))


def test_convolution_kernels_agree():
    rng = np.random.default_rng(0)
    a, b = rng.random((5, 70)), rng.random((5, 70))
    ref = _convolve_direct_python(a, b)
    for method in ["direct", "fft"]:
        assert_allclose(convolve_rows(a, b, method=method), ref, rtol=1e-12, atol=1e-12)
    refc = _correlate_direct_python(np.hstack([a, b[:, :40]]), b, 70)
    for method in ["direct", "fft"]:
        assert_allclose(correlate_rows(np.hstack([a, b[:, :40]]), b, 70, method=method), refc, rtol=1e-12, atol=1e-12)


def test_inputs_not_mutated():
    theta = np.array([0.1, np.inf, -1.0])
    f = np.array([0.0, -np.inf, 1.0, 2.0])
    t0, f0 = theta.copy(), f.copy()
    marginals(theta, f)
    sample(theta, f, size=3, rng=0)
    assert np.array_equal(theta, t0) and np.array_equal(f, f0)


@pytest.mark.parametrize(
    ("theta", "f", "exc", "msg"),
    [
        ([0.0, 1.0], [0.0, 0.0], ValueError, "`f` must have n_variables + 1 = 3 entries (one per count 0..2); got 2."),
        ([0.0, np.nan], [0.0, 0.0, 0.0], ValueError, "`theta` must not contain NaN; got NaN at index 1."),
        ([0.0, 1.0], [0.0, np.nan, 0.0], ValueError, "`f` must not contain NaN; got NaN at index 1."),
        ([0.0, 1.0], [0.0, np.inf, 0.0], ValueError, "`f` must not contain +inf; got +inf at index 1."),
        ([0.0, 1.0], [-np.inf] * 3, ValueError, "`f` is -inf at every count: no configuration has non-zero"),
        ([np.inf, np.inf], [0.0, 0.0, -np.inf], ValueError, "no configuration has non-zero probability: with 2"),
        ([[0.0]], [0.0, 0.0], ValueError, "`theta` must be a 1-D array; got shape (1, 1)."),
        (["a"], [0.0, 0.0], TypeError, "`theta` must be an array of real numbers"),
    ],
)
def test_bad_input(theta, f, exc, msg):
    for fn in (marginals, log_partition, sample, map_assignment, chain_marginals):
        with pytest.raises(exc, match=re.escape(msg)):
            fn(theta, f)


def test_bad_options():
    with pytest.raises(ValueError, match=re.escape("`method` must be one of 'auto', 'fft', 'direct'; got 'x'.")):
        marginals([0.0], [0.0, 0.0], method="x")
    with pytest.raises(ValueError, match=re.escape("`size` must be >= 0; got -1.")):
        sample([0.0], [0.0, 0.0], size=-1)
    with pytest.raises(ValueError, match=re.escape("`max_count` must be >= 0; got -2.")):
        chain_marginals([0.0], [0.0, 0.0], max_count=-2)


def test_chain_max_count():
    rng = np.random.default_rng(9)
    theta = rng.normal(size=12)
    f = rng.normal(size=13)
    capped = f.copy()
    capped[5:] = -np.inf
    assert_allclose(chain_marginals(theta, f, max_count=4).p_on, marginals(theta, capped).p_on, rtol=1e-10)


def test_rough_potential_needs_several_passes():
    # f independent per count with a large spread: the posterior count spreads beyond one tilted
    # window, so passes are stitched together; the result must still meet the reference tolerances
    rng = np.random.default_rng(0)
    d = 4096
    theta = rng.normal(0, 1, d)
    f = rng.normal(0, 8, d + 1)
    res = marginals(theta, f)
    ref = chain_marginals(theta, f)
    assert res.n_passes >= 2
    assert_allclose(res.p_on, ref.p_on, rtol=1e-9)
    assert abs(res.log_partition - ref.log_partition) <= 1e-9
    assert_allclose(res.count_marginals, ref.count_marginals, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_rough_potential_one_pass_when_centred_on_the_mass(seed):
    # f ~ N(0, 1) per count scatters the posterior's maximum over the bulk of the count
    # distribution; the first pass is centred on the posterior mass (not on its maximum), so one
    # tilted window leaves < 3e-13 of the mass out and no second pass is needed
    rng = np.random.default_rng(seed)
    d = 4096
    theta = rng.normal(0, 1, d)
    f = rng.normal(0, 1, d + 1)
    res = marginals(theta, f)
    ref = chain_marginals(theta, f)
    assert res.n_passes == 1
    assert_allclose(res.p_on, ref.p_on, rtol=1e-9)
    assert abs(res.log_partition - ref.log_partition) <= 1e-9
    assert_allclose(res.count_marginals, ref.count_marginals, atol=1e-12)


def test_sample_joint_frequencies_with_blocks_and_padding():
    # D = 10 pads to 16 leaves: two 8-leaf blocks (one partly padding) below one count split
    rng = np.random.default_rng(13)
    d = 10
    theta = rng.normal(0, 1, d)
    f = rng.normal(0, 1, d + 1)
    f[[2, 7]] = -np.inf
    p = BinaryEnumeration(len(theta), unary=theta, count=f).p
    n = 100_000
    s = sample(theta, f, size=n, rng=99)
    codes = s.astype(np.int64) @ (1 << np.arange(d - 1, -1, -1))
    obs = np.bincount(codes, minlength=2**d)
    assert obs[p == 0].sum() == 0
    big = n * p >= 5  # chi-square needs expected counts >= 5; the rest is pooled into one cell
    o = np.r_[obs[big], obs[~big].sum()]
    e = np.r_[n * p[big], n * p[~big].sum()]
    assert chisquare(o, e).pvalue > 1e-3  # fixed seed


@pytest.mark.parametrize("d", [1000, 3000])
def test_windowed_tree_equals_dense_tree(d):
    # the windowed tree only drops entries below the FFT noise floor: same results as dense
    from tractable.cardinality._balanced import Balanced
    from tractable.cardinality._windowed import Windowed

    rng = np.random.default_rng(d)
    logw = np.zeros((d, 2))
    logw[:, 1] = rng.normal(0, 2, d)
    dense, win = Balanced(logw), Windowed(logw)
    assert_allclose(win.root_scale, dense.root_scale, rtol=1e-14)
    big = dense.root > 1e-8  # entries well above the noise floor agree to ~1e-15 / entry
    assert_allclose(win.root[big], dense.root[big], rtol=1e-6)
    root_out = np.where(big, rng.normal(0, 1, d + 1), -np.inf)
    vd, sd = dense.downward(root_out)
    vw, sw = win.downward(root_out)
    md = 1 / (1 + np.exp(np.log(vd[:, 0]) + sd - np.log(vd[:, 1]) - sd - logw[:, 1]))
    mw = 1 / (1 + np.exp(np.log(vw[:, 0]) + sw - np.log(vw[:, 1]) - sw - logw[:, 1]))
    assert_allclose(mw, md, rtol=1e-9)


@pytest.mark.parametrize(
    "fn, task, per_variable",
    [
        (marginals, "marginals", 450),
        (log_partition, "log_partition", 350),
        (lambda t, f: sample(t, f, size=10), "sample (size=10)", 2210),
    ],
)
def test_too_large_for_memory_is_refused_up_front(monkeypatch, fn, task, per_variable):
    from tractable.cardinality import convolution_tree

    d = 10**5
    monkeypatch.setattr(convolution_tree, "_physical_memory", lambda: 2**30 // 64)  # 16 MiB: 8 MiB usable
    message = (
        f"`theta` has {d} variables: {task} needs about {d * per_variable / 2**20:.1f} MiB ({per_variable} bytes "
        f"per variable), more than 50% of this machine's 16.0 MiB of memory; at most about "
        f"{2**23 // per_variable} variables fit."
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        fn(np.zeros(d), np.zeros(d + 1))
    fn(np.zeros(2**23 // per_variable), np.zeros(2**23 // per_variable + 1))  # what fits runs
    monkeypatch.setattr(convolution_tree, "_physical_memory", lambda: None)  # unknown memory: no check
    fn(np.zeros(d), np.zeros(d + 1))


def test_memory_estimate_is_below_physical_memory_for_small_problems():
    from tractable.cardinality import convolution_tree

    memory = convolution_tree._physical_memory()
    assert memory is None or memory > 10**5 * 2200 / convolution_tree._MEMORY_FRACTION


def test_messages_name_the_argument_that_rules_out_the_request():
    """`max_count` that leaves only counts of score -inf, and a `size` of samples that cannot fit: each
    message names the argument at fault (they named `f`'s counts and `theta` before)."""
    from tractable import ZeroPartitionError
    from tractable.cardinality import chain_marginals, sample

    with pytest.raises(ZeroPartitionError, match=r"`f` is -inf at every count up to `max_count` = 1"):
        chain_marginals(np.zeros(3), [-np.inf, -np.inf, 0.0, 0.0], max_count=1)
    with pytest.raises(ValueError, match=r"`size` = 1000000000000000 samples of 3 variables need about"):
        sample(np.zeros(3), np.zeros(4), size=10**15)
