"""The data sets of the adaptive-MMP experiments (Lampert 2012, Sec. 4): yeast + its CRF, inpainting models."""

import numpy as np
import pytest
from scipy.optimize import check_grad

from tractable import TableFactor
from tractable.datasets.inpainting import Inpainting, inpainting
from tractable.datasets.yeast import (
    YEAST_N_TRAIN,
    MultiLabelCRF,
    _objective,
    _stats,
    _stats_direct,
    load_yeast,
    yeast_split,
)
from tractable.exact import enumerate_marginals


# ----------------------------------------------------------------------------- yeast data
def test_load_yeast_shapes_and_read_only():
    X, Y = load_yeast()
    assert X.shape == (2417, 103) and X.dtype == np.float64
    assert Y.shape == (2417, 14) and Y.dtype == np.uint8
    assert set(np.unique(Y)) == {0, 1}
    assert abs(Y.sum(axis=1).mean() - 4.237) < 1e-3  # MULAN's label cardinality
    with pytest.raises(ValueError):
        X[0, 0] = 1.0
    with pytest.raises(ValueError):
        Y[0, 0] = 1


def test_yeast_split_is_the_papers():
    X_train, X_test, Y_train, Y_test = yeast_split()
    assert YEAST_N_TRAIN == 1500
    assert X_train.shape == (1500, 103) and Y_train.shape == (1500, 14)
    assert X_test.shape == (917, 103) and Y_test.shape == (917, 14)
    X, _ = load_yeast()
    np.testing.assert_array_equal(np.concatenate([X_train, X_test]), X)


# ----------------------------------------------------------------------------- CRF cores
@pytest.mark.parametrize("n_labels", [1, 2, 5, 14])
def test_two_block_enumeration_matches_direct(seed, n_labels):
    rng = np.random.default_rng(seed)
    U = 2.0 * rng.standard_normal((7, n_labels))
    eta = 1.5 * rng.standard_normal(n_labels * (n_labels - 1) // 2)
    for a, b in zip(_stats(U, eta), _stats_direct(U, eta)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_two_block_falls_back_when_cross_terms_are_huge(seed):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((3, 6))
    eta = 100.0 * rng.standard_normal(15)  # cross-block scores span far more than _MAX_CROSS_RANGE
    for a, b in zip(_stats(U, eta), _stats_direct(U, eta)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_gradient_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    X_train, _, Y_train, _ = yeast_split()
    rows = rng.choice(len(X_train), size=12, replace=False)
    Xs = X_train[rows, :5]
    Xs = (Xs - Xs.mean(axis=0)) / Xs.std(axis=0)
    Y = Y_train[rows, :6].astype(np.float64)
    L, D = Y.shape[1], Xs.shape[1]
    theta = 0.3 * rng.standard_normal(L * D + L + L * (L - 1) // 2)

    def f(t):
        return _objective(t, Xs, Y, 0.7)[0]

    def g(t):
        return _objective(t, Xs, Y, 0.7)[1]

    assert check_grad(f, g, theta, epsilon=1e-6) < 1e-5 * max(1.0, np.linalg.norm(g(theta)))
    # the two-block objective equals the direct one
    f_direct, g_direct = _objective(theta, Xs, Y, 0.7, stats=_stats_direct)
    assert f(theta) == pytest.approx(f_direct, rel=1e-12)
    np.testing.assert_allclose(g(theta), g_direct, rtol=1e-9, atol=1e-12)


@pytest.fixture(scope="module")
def small_crf():
    X_train, _, Y_train, _ = yeast_split()
    return MultiLabelCRF(l2=0.1).fit(X_train[:300], Y_train[:300])


def test_exact_marginals_match_enumeration_of_the_factor_graph(small_crf):
    _, X_test, _, _ = yeast_split()
    P = small_crf.exact_marginals(X_test[:4])
    assert P.shape == (4, 14)
    for n in range(4):
        fg = small_crf.factor_graph(X_test[n])
        assert fg.n_variables == 14 and len(fg.factors) == 14 + 91
        assert all(isinstance(f, TableFactor) for f in fg.factors)
        np.testing.assert_allclose(enumerate_marginals(fg).marginals[:, 1], P[n], atol=1e-10)
    np.testing.assert_array_equal(small_crf.predict(X_test[:4]), (P > 0.5).astype(np.uint8))


def test_fit_improves_log_likelihood_and_is_deterministic():
    X_train, _, Y_train, _ = yeast_split()
    X, Y = X_train[:200], Y_train[:200]
    crf = MultiLabelCRF(l2=0.1).fit(X, Y)
    assert crf.converged_
    start = MultiLabelCRF(l2=0.1, max_iter=1)
    with pytest.warns(Warning):
        start.fit(X, Y)
    assert crf.log_likelihood(X, Y) > start.log_likelihood(X, Y) + 0.5
    again = MultiLabelCRF(l2=0.1).fit(X, Y)
    np.testing.assert_array_equal(crf.coef_, again.coef_)
    np.testing.assert_array_equal(crf.pairwise_, again.pairwise_)
    # stronger regularization: smaller weights, marginals nearer the label frequencies
    strong = MultiLabelCRF(l2=10.0).fit(X, Y)
    assert np.linalg.norm(strong.coef_) < np.linalg.norm(crf.coef_)


def test_crf_argument_checks(small_crf):
    with pytest.raises(ValueError, match="l2"):
        MultiLabelCRF(l2=-1.0)
    with pytest.raises(ValueError, match="not fitted"):
        MultiLabelCRF().exact_marginals(np.zeros((1, 103)))
    with pytest.raises(ValueError, match="features"):
        small_crf.exact_marginals(np.zeros((1, 5)))
    with pytest.raises(ValueError, match="only 0 and 1"):
        MultiLabelCRF().fit(np.zeros((3, 2)), np.full((3, 2), 2))
    with pytest.raises(ValueError, match="one input row"):
        small_crf.factor_graph(np.zeros((2, 103)))


# ----------------------------------------------------------------------------- inpainting
def test_inpainting_shapes_and_factors(seed):
    prob = inpainting(size=(40, 48), occlusion=0.3, n_neighbors=24, rng=seed)
    assert isinstance(prob, Inpainting)
    H, W = prob.shape
    assert (H, W) == (40, 48) and prob.n_pixels == H * W
    fg = prob.factor_graph
    assert fg.n_variables == H * W and np.all(fg.cardinalities == 2)
    assert prob.image.shape == prob.mask.shape == prob.observed.shape == (H, W)
    assert prob.image.dtype == np.uint8 and prob.mask.dtype == bool
    assert prob.mask.mean() >= 0.3
    assert np.all(prob.observed[prob.mask] == 0)
    assert len(prob.offsets) == 12  # full rings up to r^2 = 8 give 24 neighbours
    factors = fg.factors
    unary, pairwise = factors[: H * W], factors[H * W :]
    assert all(len(f.variables) == 1 and f.variables[0] == p for p, f in enumerate(unary))
    assert all(isinstance(f, TableFactor) and f.log_table.shape == (2, 2) for f in pairwise)
    degree = np.bincount(np.concatenate([f.variables for f in pairwise]), minlength=H * W)
    assert degree.max() <= 24 and degree.reshape(H, W)[10:-10, 10:-10].min() == 24
    # occluded pixels carry the prior bias only; observed ones their evidence too
    bias_only = np.array([0.0, prob.bias])
    occluded = np.flatnonzero(prob.mask.ravel())
    seen = np.flatnonzero(~prob.mask.ravel())
    assert all(np.allclose(unary[p].log_table, bias_only) for p in occluded[:50])
    assert not any(np.allclose(unary[p].log_table, bias_only) for p in seen[:50])
    for f in (unary[0], pairwise[0], pairwise[-1]):
        with pytest.raises(ValueError):
            f.log_table[0] = 1.0
    with pytest.raises(ValueError):
        prob.image[0, 0] = 1


def test_inpainting_scores_finite_and_repulsive_couplings(seed):
    prob = inpainting(size=(32, 32), n_neighbors=64, rng=seed)
    fg = prob.factor_graph
    assert all(np.isfinite(f.log_table).all() for f in fg.factors)
    assert np.isfinite(fg.score(prob.image.ravel()))
    assert np.isfinite(fg.score(np.zeros(fg.n_variables, dtype=np.int64)))
    J = prob.couplings
    assert len(J) == 30 and (J < 0).sum() >= 5 and (J > 0).sum() >= 5
    assert J[:2].min() > 0.5  # nearest neighbours attract strongly
    doubled = inpainting(size=(32, 32), n_neighbors=64, coupling_scale=1.0, rng=seed)
    np.testing.assert_allclose(doubled.couplings, 2.0 * J)
    assert doubled.bias == pytest.approx(2.0 * prob.bias)
    repulsive = [f for f in fg.factors[fg.n_variables :] if f.log_table[0, 0] < 0]
    assert repulsive and all(f.log_table[0, 1] == 0 for f in repulsive)
    # the true image scores higher than its noisy observation and than the blank image
    assert fg.score(prob.image.ravel()) > fg.score(np.zeros(fg.n_variables, dtype=np.int64))
    submodular = inpainting(size=(32, 32), n_neighbors=64, repulsive=False, rng=seed)
    assert submodular.couplings.min() >= 0.0
    assert all(f.log_table[0, 0] > 0 for f in submodular.factor_graph.factors[fg.n_variables :])


def test_inpainting_default_size_is_in_the_papers_range():
    prob = inpainting(n_neighbors=4, rng=0)
    assert 5_000 <= prob.n_pixels <= 18_000
    assert 0.1 < prob.image.mean() < 0.5


def test_inpainting_deterministic_with_seed(seed):
    a = inpainting(size=(24, 30), n_neighbors=8, rng=seed)
    b = inpainting(size=(24, 30), n_neighbors=8, rng=seed)
    c = inpainting(size=(24, 30), n_neighbors=8, rng=seed + 1)
    np.testing.assert_array_equal(a.image, b.image)
    np.testing.assert_array_equal(a.mask, b.mask)
    np.testing.assert_array_equal(a.observed, b.observed)
    for fa, fb in zip(a.factor_graph.factors, b.factor_graph.factors):
        np.testing.assert_array_equal(fa.variables, fb.variables)
        np.testing.assert_array_equal(fa.log_table, fb.log_table)
    assert not (np.array_equal(a.image, c.image) and np.array_equal(a.mask, c.mask))


def test_inpainting_given_image():
    img = np.zeros((20, 25), dtype=bool)
    img[5:15, 8:12] = True
    prob = inpainting(img, occlusion=0.0, n_neighbors=8, rng=1)
    assert prob.shape == (20, 25) and not prob.mask.any()
    np.testing.assert_array_equal(prob.image, img.astype(np.uint8))
    with pytest.raises(ValueError, match="size"):
        inpainting(img, size=(20, 25))
    with pytest.raises(ValueError, match="only 0 and 1"):
        inpainting(np.full((4, 4), 2))
    with pytest.raises(ValueError, match="occlusion"):
        inpainting(img, occlusion=1.0)
    with pytest.raises(ValueError, match="noise"):
        inpainting(img, noise=0.5)
    with pytest.raises(ValueError, match="coupling_scale"):
        inpainting(img, coupling_scale=0.0)
