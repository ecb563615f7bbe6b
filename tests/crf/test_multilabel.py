"""The fully connected multi-label CRF of Lampert (2012, Sec. 4.1): the two-block enumeration against the
direct one, the exact likelihood and gradient, marginals / MAP / log-likelihood against the factor graph
it builds, the library's grammar (C, (n, L, 2) marginals, int64 predictions, per-row log-likelihood) and
the deprecated names (``l2``, ``exact_marginals``, ``tractable.datasets.MultiLabelCRF``)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy.optimize import check_grad
from scipy.special import logsumexp
from sklearn.exceptions import NotFittedError

from tractable import ConvergenceWarning
from tractable.crf import MultiLabelCRF
from tractable.crf.multilabel import MAX_LABELS, _map, _map_direct, _objective, _stats, _stats_direct
from tractable.datasets import yeast_split
from tractable.exact import enumerate_map, enumerate_marginals


# ----------------------------------------------------------------------------- enumeration cores
@pytest.mark.parametrize("n_labels", [1, 2, 5, 14])
def test_two_block_enumeration_matches_direct(seed, n_labels):
    rng = np.random.default_rng(seed)
    U = 2.0 * rng.standard_normal((7, n_labels))
    eta = 1.5 * rng.standard_normal(n_labels * (n_labels - 1) // 2)
    for a, b in zip(_stats(U, eta), _stats_direct(U, eta)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(_map(U, eta), _map_direct(U, eta))


def test_two_block_falls_back_when_cross_terms_are_huge(seed):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((3, 6))
    eta = 100.0 * rng.standard_normal(15)  # cross-block scores span far more than _MAX_CROSS_RANGE
    for a, b in zip(_stats(U, eta), _stats_direct(U, eta)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(_map(U, eta), _map_direct(U, eta))


def test_map_batches_rows(seed, monkeypatch):
    from tractable.crf import multilabel

    rng = np.random.default_rng(seed)
    U = rng.standard_normal((9, 6))
    eta = rng.standard_normal(15)
    monkeypatch.setattr(multilabel, "_MAP_CELLS", 2**7)  # two rows of 2**6 label vectors at a time
    out = _map(U, eta)
    assert out.dtype == np.int64 and out.shape == (9, 6)
    np.testing.assert_array_equal(out, _map_direct(U, eta))


def test_objective_and_its_gradient(seed):
    rng = np.random.default_rng(seed)
    n, L, D = 12, 6, 5
    Xs = rng.standard_normal((n, D))
    Y = (rng.random((n, L)) < 0.4).astype(np.float64)
    theta = 0.3 * rng.standard_normal(L * D + L + L * (L - 1) // 2)
    C = 0.7

    def f(t):
        return _objective(t, Xs, Y, C)[0]

    def g(t):
        return _objective(t, Xs, Y, C)[1]

    assert check_grad(f, g, theta, epsilon=1e-6) < 1e-5 * max(1.0, np.linalg.norm(g(theta)))
    # the two-block objective equals the direct one
    f_direct, g_direct = _objective(theta, Xs, Y, C, stats=_stats_direct)
    assert f(theta) == pytest.approx(f_direct, rel=1e-12)
    np.testing.assert_allclose(g(theta), g_direct, rtol=1e-9, atol=1e-12)
    # the objective is (-sum_r log p(Y_r | E_r) + (||W||^2 + ||eta||^2) / (2 C)) / n, biases unpenalized
    W, b, eta = theta[: L * D].reshape(L, D), theta[L * D : L * D + L], theta[L * D + L :]
    S = ((np.arange(2**L)[:, None] >> np.arange(L)) & 1).astype(float)
    iu = np.triu_indices(L, 1)
    scores = (Xs @ W.T + b) @ S.T + (S[:, iu[0]] * S[:, iu[1]]) @ eta
    observed = [scores[r, int(Y[r] @ (1 << np.arange(L)))] for r in range(n)]
    nll = float(np.sum(logsumexp(scores, axis=1) - observed))
    assert f(theta) == pytest.approx((nll + (np.sum(W * W) + eta @ eta) / (2 * C)) / n, rel=1e-12)


# ----------------------------------------------------------------------------- the estimator on yeast
@pytest.fixture(scope="module")
def yeast_small():
    X_train, X_test, Y_train, Y_test = yeast_split()
    return X_train[:300], Y_train[:300], X_test[:4], Y_test[:4]


@pytest.fixture(scope="module")
def small_crf(yeast_small):
    X, Y, _, _ = yeast_small
    return MultiLabelCRF(C=1 / 30).fit(X, Y)


def test_marginals_map_and_log_likelihood_match_the_factor_graph(small_crf, yeast_small):
    _, _, X_test, Y_test = yeast_small
    marg = small_crf.predict_marginals(X_test)
    assert marg.shape == (4, 14, 2)
    np.testing.assert_allclose(marg.sum(axis=2), 1.0, atol=1e-12)
    np.testing.assert_array_equal(small_crf.predict_proba(X_test), marg)
    ll = small_crf.log_likelihood(X_test, Y_test)
    assert ll.shape == (4,) and np.all(ll < 0)
    assert small_crf.score(X_test, Y_test) == pytest.approx(ll.mean())
    mapped = small_crf.predict(X_test, method="map")
    for r in range(4):
        fg = small_crf.factor_graph(X_test[r])
        assert fg.n_variables == 14 and len(fg.factors) == 14 + 91
        exact = enumerate_marginals(fg)
        np.testing.assert_allclose(marg[r], exact.marginals, atol=1e-10)
        log_p = fg.score(Y_test[r]) - exact.log_partition
        assert ll[r] == pytest.approx(log_p, abs=1e-9)
        assert fg.score(mapped[r]) == pytest.approx(enumerate_map(fg).score, abs=1e-9)
    predicted = small_crf.predict(X_test)  # default: maximum marginals, as in Lampert's experiments
    assert predicted.dtype == np.int64 and mapped.dtype == np.int64
    np.testing.assert_array_equal(predicted, (marg[:, :, 1] > 0.5).astype(np.int64))
    np.testing.assert_array_equal(small_crf.predict(X_test, method="max_marginal"), predicted)


def test_map_is_the_joint_maximizer(small_crf, yeast_small):
    _, _, X_test, _ = yeast_small
    U = small_crf.unary(X_test)
    assert U.shape == (4, 14)
    np.testing.assert_array_equal(small_crf.predict(X_test, method="map"), _map_direct(U, small_crf.pairwise_))


def test_fit_improves_log_likelihood_is_deterministic_and_records_convergence(yeast_small):
    X, Y, _, _ = yeast_small
    X, Y = X[:200], Y[:200]
    crf = MultiLabelCRF(C=0.05).fit(X, Y)
    assert crf.converged_ is True and crf.n_iter_ > 1 and crf.C_ == 0.05
    assert (crf.n_labels_, crf.n_states_, crf.n_features_in_) == (14, 2, 103)
    start = MultiLabelCRF(C=0.05, max_iter=1)
    with pytest.warns(ConvergenceWarning, match="MultiLabelCRF: L-BFGS-B: stopped at the iteration limit"):
        start.fit(X, Y)
    assert start.converged_ is False and start.n_iter_ == 1
    assert crf.score(X, Y) > start.score(X, Y) + 0.5
    again = MultiLabelCRF(C=0.05).fit(X, Y)
    np.testing.assert_array_equal(crf.coef_, again.coef_)
    np.testing.assert_array_equal(crf.pairwise_, again.pairwise_)
    # stronger regularization (smaller C): smaller weights
    strong = MultiLabelCRF(C=0.0005).fit(X, Y)
    assert np.linalg.norm(strong.coef_) < np.linalg.norm(crf.coef_)


# ----------------------------------------------------------------------------- deprecated names
def test_deprecated_l2_is_C_over_the_number_of_rows(yeast_small):
    X, Y, X_test, _ = yeast_small
    X, Y = X[:100], Y[:100]
    with pytest.warns(DeprecationWarning, match=re.escape("use `C` = 1 / (n_samples * l2) (here, with 100 rows")):
        old = MultiLabelCRF(l2=0.1).fit(X, Y)
    new = MultiLabelCRF(C=1 / (100 * 0.1)).fit(X, Y)
    assert old.C_ == pytest.approx(0.1)
    np.testing.assert_allclose(old.coef_, new.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(old.predict_marginals(X_test), new.predict_marginals(X_test), atol=1e-7)
    with pytest.raises(ValueError, match=re.escape("give `C` or the deprecated `l2`, not both")):
        MultiLabelCRF(C=0.5, l2=0.1).fit(X, Y)
    with pytest.raises(ValueError, match=re.escape("`l2` must be a finite number > 0; got -1.0.")):
        MultiLabelCRF(l2=-1.0).fit(X, Y)


def test_deprecated_exact_marginals_and_datasets_alias(small_crf, yeast_small):
    import tractable.datasets
    import tractable.datasets.yeast

    _, _, X_test, _ = yeast_small
    with pytest.warns(DeprecationWarning, match=re.escape("use `predict_marginals(E)[:, :, 1]`")):
        p = small_crf.exact_marginals(X_test)
    np.testing.assert_array_equal(p, small_crf.predict_marginals(X_test)[:, :, 1])
    for module in (tractable.datasets, tractable.datasets.yeast):
        with pytest.warns(DeprecationWarning, match=re.escape("moved to `tractable.crf.MultiLabelCRF`")):
            assert module.MultiLabelCRF is MultiLabelCRF
        with pytest.raises(AttributeError):
            module.NoSuchName  # noqa: B018
    assert "MultiLabelCRF" not in tractable.datasets.__all__


# ----------------------------------------------------------------------------- arguments
def test_argument_errors(small_crf, yeast_small):
    X, Y, X_test, _ = yeast_small
    with pytest.raises(TypeError):
        MultiLabelCRF(1.0)  # every option is keyword-only
    with pytest.raises(TypeError):
        small_crf.predict(X_test, "map")
    with pytest.raises(ValueError, match=re.escape("`C` must be a finite number > 0; got -1.0.")):
        MultiLabelCRF(C=-1.0).fit(X, Y)
    with pytest.raises(NotFittedError):
        MultiLabelCRF().predict_marginals(np.zeros((1, 103)))
    with pytest.raises(ValueError, match=re.escape("`E` must have 103 columns (as in fit); got 5.")):
        small_crf.predict_marginals(np.zeros((1, 5)))
    with pytest.raises(ValueError, match=re.escape("`Y` must contain labels in [0, 1]; got 2 at index (0, 0).")):
        MultiLabelCRF().fit(np.zeros((3, 2)), np.full((3, 2), 2))
    with pytest.raises(ValueError, match=re.escape(f"`Y` must have 1..{MAX_LABELS} labels (columns); got 21.")):
        MultiLabelCRF().fit(np.zeros((3, 2)), np.zeros((3, 21), dtype=int))
    with pytest.raises(ValueError, match=re.escape("`E` and `Y` must have the same number of rows; got 3 and 2.")):
        MultiLabelCRF().fit(np.zeros((3, 2)), np.zeros((2, 2), dtype=int))
    with pytest.raises(ValueError, match=re.escape("`Y` must have 14 columns (as in fit); got 3.")):
        small_crf.log_likelihood(X_test, np.zeros((4, 3), dtype=int))
    with pytest.raises(ValueError, match=re.escape("`method` must be one of 'map', 'max_marginal'; got 'viterbi'")):
        small_crf.predict(X_test, method="viterbi")
    with pytest.raises(ValueError, match=re.escape("`e` must be one evidence row of shape (D,)")):
        small_crf.factor_graph(np.zeros((2, 103)))
