"""Tree CRFs with fixed and evidence-specific structure (Chechetka & Guestrin 2010): the exact
likelihood and gradient against enumeration and finite differences, weight learning on data drawn from
a known tree CRF, structure learning (Chow-Liu, conditional Chow-Liu with a planted evidence-dependent
structure), scikit-learn conventions and argument errors."""

from __future__ import annotations

import itertools
import re
import warnings

import numpy as np
import pytest
from scipy.optimize import check_grad
from scipy.special import logsumexp
from sklearn.base import clone

from tractable import ConvergenceWarning
from tractable.bp import tree_marginals_batch
from tractable.crf import ESSCRF, METHODS, ConditionalChowLiu, MultiLabelCRF, TreeCRF, chow_liu_tree
from tractable.crf.tree_crf import _Design, _Objective


def _raw(E):
    """The identity evidence map: ``phi(E) = [1, E]`` exactly, so tests can rebuild the scores."""
    return np.asarray(E, dtype=float)


# --------------------------------------------------------------------------- brute-force oracles
def _states(N, k):
    return np.array(list(itertools.product(range(k), repeat=N)), dtype=np.int64).reshape(-1, N)


def _log_probs(unary, edges, pairwise):
    """``log p(y)`` of every labelling (rows of ``_states``) of one forest model, by enumeration."""
    N, k = unary.shape
    S = _states(N, k)
    score = unary[np.arange(N), S].sum(axis=1)
    for e, (u, v) in enumerate(np.asarray(edges).reshape(-1, 2).tolist()):
        score = score + pairwise[e][S[:, u], S[:, v]]
    return S, score - logsumexp(score)


def _model_rows(model, E):
    """Per row ``(unary, edges, pairwise)`` rebuilt from a fitted model's weights (features ``_raw``)."""
    phi = np.concatenate([np.ones((len(E), 1)), E], axis=1)
    phi_p = phi if model.pairwise_evidence else phi[:, :1]
    if isinstance(model, ESSCRF):
        lookup = {tuple(e): m for m, e in enumerate(model.candidate_edges_.tolist())}
        structures = model.predict_structure(E)
        index = [np.array([lookup[tuple(e)] for e in s.tolist()], dtype=np.int64) for s in structures]
    else:
        structures = [model.tree_] * len(E)
        index = [np.arange(len(model.tree_))] * len(E)
    for r in range(len(E)):
        unary = model.unary_weights_ @ phi[r]
        pairwise = model.pairwise_weights_[index[r]] @ phi_p[r]
        yield unary, structures[r], pairwise


def _sample_tree_crf(rng, E, unary_w, edges, pairwise_w):
    """Labels drawn exactly from ``p(Y | E)`` of a tree CRF with weights on ``phi = [1, E]``."""
    phi = np.concatenate([np.ones((len(E), 1)), E], axis=1)
    Y, P = [], []
    for r in range(len(E)):
        S, logp = _log_probs(unary_w @ phi[r], edges, pairwise_w @ phi[r])
        p = np.exp(logp)
        Y.append(S[rng.choice(len(S), p=p / p.sum())])
        P.append(_node_marginals(S, p, unary_w.shape[1]))
    return np.array(Y), np.array(P)


def _root(parent, a):
    while parent[a] != a:
        a = parent[a]
    return a


def _node_marginals(S, p, k):
    """``(N, k)`` marginals of the distribution ``p`` over the labellings ``S``."""
    return np.stack([(p[:, None] * (S == a)).sum(axis=0) for a in range(k)], axis=1)


def _toy(rng, n=40, N=4, k=2, d=3):
    E = rng.normal(size=(n, d))
    Y = rng.integers(0, k, size=(n, N))
    return E, Y


# --------------------------------------------------------------------------- likelihood and gradient
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("with_fill_in", [False, True])
def test_objective_matches_enumeration_and_its_gradient_finite_differences(seed, k, with_fill_in):
    rng = np.random.default_rng(seed)
    n, N, d = 6, 4, 2
    phi = np.concatenate([np.ones((n, 1)), rng.normal(size=(n, d))], axis=1)
    candidates = np.array(list(itertools.combinations(range(N), 2)))
    M = len(candidates)
    Y = rng.integers(0, k, size=(n, N))
    cand = np.empty((n, N - 1), dtype=np.int64)
    edges = np.empty((n, N - 1, 2), dtype=np.int64)
    for r in range(n):  # a random spanning tree per row: attach node t to a random earlier node
        for t in range(1, N):
            u = int(rng.integers(0, t))
            cand[r, t - 1] = int(np.flatnonzero((candidates == (u, t)).all(axis=1))[0])
            edges[r, t - 1] = (u, t)
    if with_fill_in:
        cand[:, 0] = -1  # the slot stays in the tree with zero scores: a forest model
    design = _Design(phi, phi, cand, edges, N, k, M)
    C = 0.7
    objective = _Objective(design, Y, C)
    w = rng.normal(scale=0.5, size=design.n_weights())
    # forward differences with scipy's default step (1.5e-8): errors ~1e-7 per coordinate
    err = check_grad(lambda x: objective(x)[0], lambda x: objective(x)[1], w)
    assert err < 1e-5 * max(1.0, np.linalg.norm(objective(w)[1]))

    # the batched core the design calls gives what the public tree_marginals_batch gives
    unary, pairwise, res = design.marginals(w)
    public = tree_marginals_batch(unary, edges, pairwise)
    np.testing.assert_allclose(res.marginals, public.marginals, atol=1e-12)
    np.testing.assert_allclose(res.edge_marginals, public.edge_marginals, atol=1e-12)
    np.testing.assert_allclose(res.log_partition, public.log_partition, rtol=1e-12)

    wu = w[: N * k * phi.shape[1]].reshape(N, k, -1)
    wp = w[N * k * phi.shape[1] :].reshape(M, k, k, -1)
    total = 0.0
    S = _states(N, k)
    for r in range(n):
        keep = cand[r] >= 0
        _, logp = _log_probs(wu @ phi[r], edges[r][keep], wp[cand[r][keep]] @ phi[r])
        total += logp[np.flatnonzero((S == Y[r]).all(axis=1))[0]]
    expected = (-total + 0.5 * w @ w / C) / n
    np.testing.assert_allclose(objective(w)[0], expected, rtol=1e-10)


@pytest.mark.parametrize("make", [lambda: TreeCRF(features=_raw), lambda: ESSCRF(features=_raw)])
def test_marginals_map_and_score_match_enumeration(seed, make):
    rng = np.random.default_rng(seed)
    E, Y = _toy(rng, n=60, N=4, k=3)
    model = make().fit(E, Y)
    Et = rng.normal(size=(7, E.shape[1]))
    Yt = rng.integers(0, 3, size=(7, 4))
    marg = model.predict_marginals(Et)
    assert marg.shape == (7, 4, 3)
    np.testing.assert_array_equal(model.predict_proba(Et), marg)
    mapped = model.predict(Et, method="map")
    ll = model.log_likelihood(Et, Yt)
    for r, (unary, edges, pairwise) in enumerate(_model_rows(model, Et)):
        S, logp = _log_probs(unary, edges, pairwise)
        p = np.exp(logp)
        np.testing.assert_allclose(marg[r], _node_marginals(S, p, 3), atol=1e-10)
        assert logp[np.flatnonzero((S == mapped[r]).all(axis=1))[0]] == pytest.approx(logp.max(), abs=1e-9)
        assert ll[r] == pytest.approx(logp[np.flatnonzero((S == Yt[r]).all(axis=1))[0]], abs=1e-9)
    assert model.score(Et, Yt) == pytest.approx(ll.mean())
    np.testing.assert_array_equal(model.predict(Et, method="max_marginal"), marg.argmax(axis=2))


# --------------------------------------------------------------------------- learning
def test_tree_crf_recovers_the_marginals_of_the_tree_crf_that_drew_the_data(seed):
    rng = np.random.default_rng(seed)
    N, k, d = 4, 2, 2
    edges = np.array([[0, 1], [1, 2], [1, 3]])
    unary_w = rng.normal(scale=1.0, size=(N, k, d + 1))
    pairwise_w = rng.normal(scale=1.0, size=(len(edges), k, k, d + 1))
    n = 4000
    E = rng.normal(size=(n, d))
    Y, _ = _sample_tree_crf(rng, E, unary_w, edges, pairwise_w)
    Et = rng.normal(size=(300, d))
    _, truth = _sample_tree_crf(rng, Et, unary_w, edges, pairwise_w)
    model = TreeCRF(edges, C=1e3, features=_raw).fit(E, Y)
    assert model.converged_
    err = np.abs(model.predict_marginals(Et) - truth)
    # The model is well specified with 21 free parameters (binary labels: one contrast per indicator
    # block, 3 evidence weights each) fit on n = 4000 rows; the delta method gives standard errors of
    # about sqrt(21 / 4000) / 4 ~ 0.02 for a marginal near 1/2 (less towards 0 or 1), so the mean
    # error is bounded by 0.02 and the 95th percentile by 0.06 (3 standard errors). Test rows with
    # extreme evidence extrapolate the fitted weights (seeds 0..24 reach 0.16 there): no bound on the max.
    assert err.mean() < 0.02 and np.quantile(err, 0.95) < 0.06


def test_chow_liu_tree_recovers_the_tree_that_drew_the_labels(seed):
    rng = np.random.default_rng(seed)
    E, Y, trees = _planted(rng, 3000)
    positive = E[:, 0] > 0  # there the labels are an agreeing chain 0-1-2-3
    assert {tuple(e) for e in chow_liu_tree(Y[positive]).tolist()} == set(trees[1.0])
    model = TreeCRF().fit(E[positive], Y[positive])
    assert {tuple(e) for e in model.tree_.tolist()} == set(trees[1.0])


def _planted(rng, n):
    """Evidence column 0 is the sign ``s``; labels form an agreeing chain 0-1-2-3 when ``s > 0`` and
    the chain 0-2-3-1 otherwise (strong couplings, uniform unaries); column 1 is noise."""
    s = rng.choice([-1.0, 1.0], size=n)
    E = np.stack([s, rng.normal(size=n)], axis=1)
    trees = {1.0: [(0, 1), (1, 2), (2, 3)], -1.0: [(0, 2), (2, 3), (1, 3)]}
    Y = np.empty((n, 4), dtype=np.int64)
    for r in range(n):
        root_first = [0, 1, 2, 3] if s[r] > 0 else [0, 2, 3, 1]
        Y[r, root_first[0]] = rng.integers(0, 2)
        for a, b in zip(root_first[:-1], root_first[1:]):
            Y[r, b] = Y[r, a] if rng.random() < 0.9 else 1 - Y[r, a]
    return E, Y, trees


def test_conditional_chow_liu_recovers_a_planted_evidence_dependent_structure(seed):
    rng = np.random.default_rng(seed)
    E, Y, trees = _planted(rng, 2000)
    learner = ConditionalChowLiu().fit(E, Y)
    Et, _, _ = _planted(rng, 50)
    structures = learner.predict_structure(Et)
    assert len(structures) == 50
    for s, edges in zip(Et[:, 0], structures):
        assert edges.dtype == np.int64 and edges.shape == (3, 2)
        assert {tuple(e) for e in edges.tolist()} == set(trees[s])
    weights = learner.edge_weights(Et)
    assert weights.shape == (50, 6) and (weights >= 0).all()
    # the evidence-free Chow-Liu tree cannot represent both; the ESS-CRF fits better than the tree CRF
    Ev, Yv, _ = _planted(rng, 1000)
    ess = ESSCRF(C=10.0).fit(E, Y)
    tree = TreeCRF(C=10.0).fit(E, Y)
    assert ess.score(Ev, Yv) > tree.score(Ev, Yv) + 0.1


def test_regularized_structures_use_only_frequent_edges(seed):
    rng = np.random.default_rng(seed)
    E, Y, trees = _planted(rng, 1000)
    full = ConditionalChowLiu().fit(E, Y)
    freq = full.edge_frequency_
    assert freq.shape == (6,) and freq.sum() == pytest.approx(3.0)  # every tree has N - 1 edges
    np.testing.assert_allclose(freq, [0.5, 0.5, 0, 0.5, 0.5, 1], atol=0.1)  # (2, 3) is in both trees
    reg = ConditionalChowLiu(min_edge_frequency=0.9).fit(E, Y)
    assert reg.allowed_edges_.tolist() == (freq >= 0.9).tolist()
    allowed = {tuple(e) for e in reg.candidate_edges_[reg.allowed_edges_].tolist()}
    assert allowed == {(2, 3)}
    for edges in reg.predict_structure(E[:20]):
        assert {tuple(e) for e in edges.tolist()} == allowed  # a forest of allowed edges
    model = ESSCRF(ConditionalChowLiu(min_edge_frequency=0.9), features=_raw).fit(E, Y)
    unary, edges, pairwise = model.potentials(E[:5])
    assert edges.shape == (5, 3, 2)  # completed to a tree by zero-score edges
    for r, (u, e, p) in enumerate(_model_rows(model, E[:5])):
        S, logp = _log_probs(u, e, p)
        p_ = np.exp(logp)
        np.testing.assert_allclose(model.predict_marginals(E[r : r + 1])[0], _node_marginals(S, p_, 2), atol=1e-10)
    # unselected candidates keep zero weights
    never = ~reg.allowed_edges_
    assert np.abs(model.pairwise_weights_[never]).max() == 0.0


def test_chow_liu_tree_is_the_maximum_mutual_information_tree(seed):
    rng = np.random.default_rng(seed)
    n, N, k = 300, 5, 3
    Y = rng.integers(0, k, size=(n, N))
    Y[:, 1] = np.where(rng.random(n) < 0.7, Y[:, 0], Y[:, 1])
    Y[:, 3] = np.where(rng.random(n) < 0.5, Y[:, 1], Y[:, 3])

    def mi(a, b):
        total = 0.0
        for x in range(k):
            for y in range(k):
                pxy = np.mean((a == x) & (b == y))
                if pxy > 0:
                    total += pxy * np.log(pxy / (np.mean(a == x) * np.mean(b == y)))
        return total

    weight = {(i, j): mi(Y[:, i], Y[:, j]) for i, j in itertools.combinations(range(N), 2)}
    best, best_w = None, -np.inf
    for subset in itertools.combinations(weight, N - 1):
        parent = list(range(N))
        ok = True
        for i, j in subset:
            ri, rj = _root(parent, i), _root(parent, j)
            ok &= ri != rj
            parent[ri] = rj
        total = sum(weight[e] for e in subset)
        if ok and total > best_w:
            best, best_w = subset, total
    tree = chow_liu_tree(Y)
    assert tree.dtype == np.int64 and tree.shape == (N - 1, 2)
    assert {tuple(e) for e in tree.tolist()} == set(best)
    assert chow_liu_tree(Y[:, :1]).shape == (0, 2)


# --------------------------------------------------------------------------- scikit-learn conventions
@pytest.mark.parametrize("Estimator", [TreeCRF, ESSCRF, ConditionalChowLiu, MultiLabelCRF])
def test_scikit_learn_conventions(seed, Estimator):
    from sklearn.utils.estimator_checks import (
        check_dont_overwrite_parameters,
        check_estimator_cloneable,
        check_estimator_repr,
        check_get_params_invariance,
        check_no_attributes_set_in_init,
        check_parameters_default_constructible,
        check_set_params,
    )

    est = Estimator()
    name = Estimator.__name__
    check_parameters_default_constructible(name, est)
    check_no_attributes_set_in_init(name, est)
    check_get_params_invariance(name, est)
    check_set_params(name, est)
    check_estimator_cloneable(name, est)
    check_estimator_repr(name, est)
    del check_dont_overwrite_parameters  # fits with 1-D y; the same property is checked below

    rng = np.random.default_rng(seed)
    E, Y = _toy(rng)
    params = est.get_params(deep=True)
    assert est.fit(E, Y) is est
    assert est.get_params(deep=True).keys() == params.keys()  # fit sets no parameter
    fitted = [a for a in vars(est) if a.endswith("_") and not a.startswith("_")]
    assert "n_features_in_" in fitted and est.n_features_in_ == 3
    assert {"converged_", "n_iter_", "n_states_"} <= set(fitted) and est.n_states_ == 2
    assert isinstance(est.converged_, bool) and isinstance(est.n_iter_, int)
    twin = clone(est)
    assert not any(a.endswith("_") and not a.startswith("_") for a in vars(twin))
    assert twin.get_params() == Estimator().get_params()


def test_ess_structure_parameter_is_cloned_not_fitted(seed):
    rng = np.random.default_rng(seed)
    E, Y = _toy(rng)
    learner = ConditionalChowLiu(C=0.5, min_edge_frequency=0.1)
    model = ESSCRF(learner).fit(E, Y)
    assert not hasattr(learner, "estimators_") and model.structure_ is not learner
    assert model.structure_.C == 0.5 and model.get_params()["structure__min_edge_frequency"] == 0.1
    assert len(model.predict_structure(E[:3])) == 3


def test_predict_before_fit_raises_not_fitted():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        TreeCRF().predict(np.zeros((2, 3)))
    with pytest.raises(NotFittedError):
        ConditionalChowLiu().predict_structure(np.zeros((2, 3)))


def test_multi_state_fixed_forest_and_single_label(seed):
    rng = np.random.default_rng(seed)
    E, Y = _toy(rng, n=50, N=4, k=3)
    model = TreeCRF([[0, 1], [2, 3]], n_states=4).fit(E, Y)  # a forest; a state never seen
    marg = model.predict_marginals(E)
    assert marg.shape == (50, 4, 4) and np.allclose(marg.sum(axis=2), 1)
    assert marg[:, :, 3].mean() < marg[:, :, :3].mean(axis=(0, 1)).min() / 3  # an unseen state
    one = ESSCRF().fit(E, Y[:, :1])
    assert one.predict(E).shape == (50, 1) and one.pairwise_weights_.shape[0] == 0


def test_not_converging_warns():
    rng = np.random.default_rng(0)
    E, Y = _toy(rng)
    with pytest.warns(ConvergenceWarning, match="TreeCRF: L-BFGS-B: stopped at the iteration limit"):
        model = TreeCRF(max_iter=1).fit(E, Y)
    assert not model.converged_ and model.n_iter_ == 1


def test_conditional_chow_liu_records_convergence_instead_of_hiding_it():
    from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning

    rng = np.random.default_rng(0)
    E, Y = _toy(rng, n=60)
    E = E * 10.0  # far from the optimum after one step
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = ConditionalChowLiu(max_iter=1, features=_raw).fit(E, Y)
    ours = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(ours) == 1 and "ConditionalChowLiu: lbfgs: stopped at the iteration limit (1)" in str(ours[0].message)
    assert "6 of 6 edge logistic regressions did not converge" in str(ours[0].message)
    assert not any(issubclass(w.category, SklearnConvergenceWarning) for w in caught)  # recorded, not shown
    assert model.converged_ is False and model.n_iter_ == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = ConditionalChowLiu().fit(E / 10.0, Y)
    assert model.converged_ is True and 1 <= model.n_iter_ < 1000
    with pytest.raises(ValueError, match=re.escape("`tol` must be a finite number > 0; got 0.")):
        ConditionalChowLiu(tol=0).fit(E, Y)


def test_options_are_keyword_only():
    rng = np.random.default_rng(0)
    E, Y = _toy(rng)
    model = TreeCRF().fit(E, Y)
    with pytest.raises(TypeError):
        model.predict(E, "map")
    assert model.predict(E, method="max_marginal").dtype == np.int64
    for make in (lambda: TreeCRF(None, 1.0), lambda: ESSCRF(None, 1.0), lambda: ConditionalChowLiu(1.0)):
        with pytest.raises(TypeError):
            make()


def test_methods_table():
    assert set(METHODS) == {"map", "max_marginal"} and all(callable(f) for f in METHODS.values())


# --------------------------------------------------------------------------- argument errors
@pytest.mark.parametrize("Estimator", [TreeCRF, ESSCRF, ConditionalChowLiu])
def test_bad_data_is_a_value_error_naming_the_argument(Estimator):
    rng = np.random.default_rng(0)
    E, Y = _toy(rng, n=20)
    bad_y = Y.copy()
    bad_y[3, 2] = -1
    with pytest.raises(ValueError, match=re.escape("`Y` must contain labels in [0, 1]; got -1 at index (3, 2).")):
        Estimator().fit(E, bad_y)
    bad_y = Y.copy()
    bad_y[0, 0] = 5
    with pytest.raises(ValueError, match=re.escape("`Y` must contain labels in [0, 2]; got 5 at index (0, 0).")):
        Estimator(n_states=3).fit(E, bad_y)
    bad_y = Y.astype(float)
    bad_y[1, 0] = 0.5
    with pytest.raises(ValueError, match=re.escape("`Y` must contain integer labels; got 0.5 at index (1, 0).")):
        Estimator().fit(E, bad_y)
    bad_e = E.copy()
    bad_e[4, 1] = np.nan
    with pytest.raises(ValueError, match=re.escape("`E` must not contain NaN; got NaN at index (4, 1).")):
        Estimator().fit(bad_e, Y)
    with pytest.raises(ValueError, match=re.escape("`E` and `Y` must have the same number of rows; got 20 and 19.")):
        Estimator().fit(E, Y[:-1])
    with pytest.raises(ValueError, match=re.escape("`E` must be a 2-D array")):
        Estimator().fit(E[:, 0], Y)
    with pytest.raises(ValueError, match=re.escape("`Y` must be a 2-D array of labels")):
        Estimator().fit(E, Y[:, 0])
    with pytest.raises(ValueError, match=re.escape("`C` must be a finite number > 0; got 0")):
        Estimator(C=0).fit(E, Y)
    with pytest.raises(ValueError, match=re.escape("`n_states` must be None or an integer >= 2; got 1.")):
        Estimator(n_states=1).fit(E, Y)
    with pytest.raises(ValueError, match=re.escape("`features` must be None or a callable")):
        Estimator(features="raw").fit(E, Y)


def test_bad_arguments_after_fit_and_bad_options():
    rng = np.random.default_rng(0)
    E, Y = _toy(rng, n=20)
    model = ESSCRF().fit(E, Y)
    with pytest.raises(ValueError, match=re.escape("`E` must have 3 columns (as in fit); got 2.")):
        model.predict(E[:, :2])
    with pytest.raises(ValueError, match=re.escape("`E` must have 3 columns (as in fit); got 2.")):
        model.structure_.predict_structure(E[:, :2])
    with pytest.raises(ValueError, match=re.escape("`E` must not contain +inf; got +inf at index (0, 0).")):
        model.predict_marginals(np.full((1, 3), np.inf))
    bad_y = Y.copy()
    bad_y[0, 0] = 2
    with pytest.raises(ValueError, match=re.escape("`Y` must contain labels in [0, 1]; got 2 at index (0, 0).")):
        model.score(E, bad_y)
    with pytest.raises(ValueError, match=re.escape("`Y` must have 4 columns (as in fit); got 3.")):
        model.score(E, Y[:, :3])
    with pytest.raises(ValueError, match=re.escape("`E` and `Y` must have the same number of rows; got 20 and 5.")):
        model.score(E, Y[:5])
    with pytest.raises(ValueError, match=re.escape("`method` must be one of 'map', 'max_marginal'; got 'viterbi'")):
        model.predict(E, method="viterbi")
    with pytest.raises(ValueError, match=re.escape("`tree` must form a forest; edge 2 = [2, 0] closes a cycle.")):
        TreeCRF([[0, 1], [1, 2], [2, 0]]).fit(E, Y)
    with pytest.raises(ValueError, match=re.escape("`tree` must contain indices in [0, 3]; got 4.")):
        TreeCRF([[0, 4]]).fit(E, Y)
    with pytest.raises(ValueError, match=re.escape("`structure` must be None or a ConditionalChowLiu instance")):
        ESSCRF(structure="chow-liu").fit(E, Y)
    with pytest.raises(ValueError, match=re.escape("`structure` must have the CRF's number of states")):
        ESSCRF(ConditionalChowLiu(n_states=3), n_states=2).fit(E, Y)
    with pytest.raises(ValueError, match=re.escape("`min_edge_frequency` must be a number in [0, 1]; got 1.5.")):
        ConditionalChowLiu(min_edge_frequency=1.5).fit(E, Y)
    with pytest.raises(ValueError, match=re.escape("`max_iter` must be an integer >= 1; got 0.")):
        TreeCRF(max_iter=0).fit(E, Y)
    with pytest.raises(ValueError, match=re.escape("`tol` must be a finite number > 0; got -1.")):
        TreeCRF(tol=-1).fit(E, Y)
    with pytest.raises(ValueError, match=re.escape("`Y` must contain labels in [0, 1]; got -3 at index (0, 1).")):
        chow_liu_tree([[0, -3], [1, 1]])
