"""TreeCardinalityModel with scores spanning hundreds to thousands: exact, in log space.

The messages used to be linear-space vectors normalized to a maximum of 1: a count more than ~e^-745
below its vector's maximum underflowed to 0 and was lost even when the count potential or a pairwise
score further up made it the likely one, so marginals, count marginals, ``log Z`` and samples came
back wrong with status "optimal" (or a model with a positive partition function was refused as
having none). These tests pin those cases (each failed before) against enumeration, check every
output on random forests with scores up to thousands, and check that ordinary models give the
results they gave before.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from _oracles import BinaryEnumeration
from tractable.cardinality import TreeCardinalityModel

EPS = np.finfo(float).eps
NINF = -np.inf

# name: (edges, pairwise, unary, count_potential); the comments say what the old passes returned
REGRESSIONS = {
    # pairwise -2000 forbids neighbours both on against unary +1000 each: the exact answer turns
    # on the two ends of the path; the old marginals were [0, 0, 0] with count marginals at 2
    "pairwise_fights_unary_path": (
        [[0, 1], [1, 2]],
        [[[0, 0], [0, -2000.0]]] * 2,
        [1000.0, 1000.0, 1000.0],
        [0.0, 0.0, 0.0, 0.0],
    ),
    # the same on a star: the leaves (1500 each) beat the centre (1000); old marginals [0, 0, 0]
    "pairwise_fights_unary_star": (
        [[0, 1], [0, 2]],
        [[[0, 0], [0, -2000.0]]] * 2,
        [1000.0, 1500.0, 1500.0],
        [0.0, 0.0, 0.0, 0.0],
    ),
    # unary -1000 per variable (+800 for one) against a count potential that allows only counts 0
    # and 3 and pays 1199 for 3: P(count 3) = 1 / (1 + e), old count marginals [0, 0, 0, 1], log Z -1
    "count_potential_fights_unary": (
        [[0, 1], [1, 2]],
        [[[0.0, 0.0], [0.0, 0.0]]] * 2,
        [-1000.0, -1000.0, 800.0],
        [0.0, NINF, NINF, 1199.0],
    ),
    # mixed unary +-800..1800 and pairwise scores of hundreds on a 6-path: old ZeroPartitionError
    "mixed_path_refused": (
        [[i, i + 1] for i in range(5)],
        [[[0.0, 2000.0], [2000.0, -1500.0]]] * 5,
        [800.0, -900.0, 850.0, 1000.0, -700.0, 900.0],
        [0.0] * 7,
    ),
}


def _check(model, ref, tol):
    res = model.marginals()
    assert res.status == "optimal"
    assert_allclose(res.marginals, ref.marginals, rtol=0, atol=tol)
    assert_allclose(res.count_marginals, ref.count_marginals, rtol=0, atol=tol)
    assert_allclose(res.log_partition, ref.log_partition, rtol=0, atol=tol * max(1.0, abs(ref.log_partition)))
    assert model.log_partition() == res.log_partition
    assert model.map_assignment().score == pytest.approx(ref.best, abs=tol * max(1.0, abs(ref.best)))


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_scores_that_fight_across_hundreds_give_the_exact_answers(name):
    edges, pw, theta, f = REGRESSIONS[name]
    n = len(theta)
    ref = BinaryEnumeration(n, unary=theta, count=f, edges=edges, pairwise=pw)
    # scores of a few thousand, summed over <= 6 variables: log weights carry ~1e-12 of rounding
    _check(TreeCardinalityModel(edges, pw, theta, f), ref, 1e-10)


def test_the_count_potential_can_revive_a_count_far_below_the_rest():
    edges, pw, theta, f = REGRESSIONS["count_potential_fights_unary"]
    res = TreeCardinalityModel(edges, pw, theta, f).marginals()
    p3 = 1.0 / (1.0 + np.e)  # weights e^0 (all off) and e^(1199 - 1200) (all on)
    assert_allclose(res.count_marginals, [1 - p3, 0, 0, p3], atol=1e-14)
    assert_allclose(res.p_on, [p3] * 3, atol=1e-14)
    assert_allclose(res.log_partition, np.log1p(np.exp(-1.0)), atol=1e-12)


@pytest.mark.parametrize("name", ["count_potential_fights_unary", "mixed_path_refused"])
def test_samples_follow_the_exact_distribution_at_extreme_scores(name):
    edges, pw, theta, f = REGRESSIONS[name]
    n = len(theta)
    ref = BinaryEnumeration(n, unary=theta, count=f, edges=edges, pairwise=pw)
    size = 20_000
    ys = TreeCardinalityModel(edges, pw, theta, f).sample(size=size, rng=12345)
    assert ys.shape == (size, n)
    # empirical frequencies of each configuration: binomial with sd sqrt(p (1 - p) / size) <= 0.0036;
    # 5 sd (two-sided tail 6e-7 per configuration, fixed seed) plus the rounding of p; a configuration
    # of probability 0 (below float64's smallest weight) must never be drawn
    codes = ys.astype(np.int64) @ (1 << np.arange(n)[::-1])
    emp = np.bincount(codes, minlength=2**n) / size
    sd = np.sqrt(ref.p * (1 - ref.p) / size)
    assert np.all(np.abs(emp - ref.p) <= 5 * sd + 1e-12)
    assert np.all(emp[ref.p == 0] == 0)


# scores up to thousands; -inf entries sometimes (hard constraints)
@st.composite
def forests(draw):
    n = draw(st.integers(1, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    scale = draw(st.sampled_from([1.0, 30.0, 300.0, 1000.0, 3000.0]))
    edges = [(int(rng.integers(v)), v) for v in range(1, n) if rng.random() < 0.85]
    perm = rng.permutation(n)
    edges = [(int(perm[u]), int(perm[v])) for u, v in edges]
    pw = rng.normal(0, scale, (len(edges), 2, 2))
    pw[rng.random(pw.shape) < 0.05] = NINF
    theta = rng.normal(0, scale, n)
    theta[rng.random(n) < 0.05] = NINF
    f = rng.normal(0, scale, n + 1)
    f[rng.random(n + 1) < 0.15] = NINF
    return n, edges, pw.reshape(len(edges), 2, 2), theta, f


@settings(max_examples=150, deadline=None)
@given(forests())
def test_random_forests_with_scores_up_to_thousands_match_enumeration(case):
    n, edges, pw, theta, f = case
    ref = BinaryEnumeration(n, unary=theta, count=f, edges=edges, pairwise=pw)
    if not np.isfinite(ref.log_partition):
        with pytest.raises(ValueError):
            TreeCardinalityModel(edges, pw, theta, f).marginals()
        return
    scores = np.concatenate([np.ravel(pw), theta, f])
    smax = float(np.max(np.abs(scores[np.isfinite(scores)]), initial=1.0))
    # a log weight is a sum of at most ~3n scores of magnitude <= smax, each addition rounding by
    # <= eps * n * smax, in the model and in the oracle alike: probabilities and log Z (relative to
    # max(1, |log Z|), which is at least ~smax when smax dominates) agree to ~2 * 3n^2 * smax * eps;
    # a factor of 4 spare (at smax = 1.2e4, n = 8: 4e-10)
    tol = 4 * 6 * n * n * smax * EPS + 1e-13
    _check(TreeCardinalityModel(edges, pw, theta, f), ref, tol)


# an ordinary model (scores ~N(0, 2)); the expected values are the old linear-space passes' results
def _ordinary():
    rng = np.random.default_rng(2024)
    d = 12
    edges = [[int(rng.integers(0, i)), i] for i in range(1, d)]
    pw = np.round(rng.normal(0, 1.5, (d - 1, 2, 2)), 2)
    theta = np.round(rng.normal(0, 2, d), 2)
    f = np.round(rng.normal(0, 2, d + 1), 2)
    return edges, pw, theta, f


OLD_LOG_PARTITION = 23.9302110471634
OLD_P_ON = [0.943581313765, 0.970340018027, 0.105025356402, 0.078511017414, 0.981469691392, 0.770377541439]
OLD_P_ON += [0.517140810008, 0.004532110532, 0.020055725137, 0.999281535597, 0.004768008925, 0.579472581141]
OLD_COUNTS = [1.874280731149e-11, 5.790591766662e-08, 2.268804900790e-05, 3.894464143444e-04, 1.201613287078e-01]
OLD_COUNTS += [1.232400873584e-02, 6.610668217981e-01, 1.838024666783e-01, 2.206297090208e-02, 1.554179476458e-04]
OLD_COUNTS += [6.869614685289e-06, 7.923138294121e-06, 8.919366962742e-11]
OLD_MAP = [1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 1]


def test_ordinary_inputs_give_the_old_results():
    m = TreeCardinalityModel(*_ordinary())
    res = m.marginals()
    # the old values are printed to 12 decimals (13 significant digits for the count marginals)
    assert_allclose(res.log_partition, OLD_LOG_PARTITION, rtol=1e-13)
    assert_allclose(res.p_on, OLD_P_ON, rtol=0, atol=1e-12)
    assert_allclose(res.count_marginals, OLD_COUNTS, rtol=1e-11, atol=1e-22)
    assert m.map_assignment().assignment.tolist() == OLD_MAP
    ref = BinaryEnumeration(12, unary=m.unary, count=m.count_potential, edges=m.edges, pairwise=m.pairwise)
    _check(m, ref, 1e-12)


def test_large_ordinary_models_keep_log_partition_consistent_with_marginals():
    # a long path and a random tree of 300 variables, scores ~N(0, 3): the marginals of a model with
    # one unary shifted by t satisfy d log Z / d t = P(y_d = 1); check with a central difference
    rng = np.random.default_rng(7)
    d = 300
    for edges in ([[i, i + 1] for i in range(d - 1)], [[int(rng.integers(0, i)), i] for i in range(1, d)]):
        pw, theta, f = rng.normal(0, 3, (d - 1, 2, 2)), rng.normal(0, 3, d), rng.normal(0, 3, d + 1)
        res = TreeCardinalityModel(edges, pw, theta, f).marginals()
        h = 1e-4
        for v in (0, d // 2, d - 1):
            tp, tm = theta.copy(), theta.copy()
            tp[v] += h
            tm[v] -= h
            lz_p = TreeCardinalityModel(edges, pw, tp, f).log_partition()
            lz_m = TreeCardinalityModel(edges, pw, tm, f).log_partition()
            # truncation O(h^2) ~ 1e-9, cancellation ~ 2 * 1e-13 * |log Z| / (2 h) ~ 1e-6
            assert abs((lz_p - lz_m) / (2 * h) - res.p_on[v]) < 1e-5
