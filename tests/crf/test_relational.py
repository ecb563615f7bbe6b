"""Relational ESS-CRF (Chechetka & Guestrin 2010, Sec. 5): data validation, the evidence-specific spanning
forest, exact semi-supervised likelihood and its gradient, clamped prediction, scikit-learn conventions."""

from __future__ import annotations

import dataclasses
import itertools
import re

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import check_grad
from scipy.sparse.csgraph import connected_components
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from tractable import ConvergenceWarning
from tractable._forest import check_forest
from tractable.crf.relational import (
    RelationalESSCRF,
    RelationalGraph,
    _CRFProblem,
    _Layout,
    _max_spanning_forest,
    _pair_features,
    _PairProblem,
)


def random_graph(rng, n=7, k=3, f=3, p_edge=0.45, n_relations=1, frac_known=0.5, sparse=False):
    """A random relational graph whose labels are correlated with the features and along the links."""
    y = rng.integers(0, k, size=n)
    centers = rng.normal(size=(k, f))
    x = centers[y] + rng.normal(scale=1.0, size=(n, f))
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < (p_edge * (2 if y[u] == y[v] else 1))]
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    types = rng.integers(0, n_relations, size=edges.shape[0])
    labels = np.where(rng.random(n) < frac_known, y, -1)
    labels[rng.integers(n)] = y[0] if labels[0] < 0 else labels[0]  # at least one known label
    labels[0] = y[0]
    return RelationalGraph(sp.csr_matrix(x) if sparse else x, edges, labels, types), y


# --------------------------------------------------------------------------- brute force (independent)
def brute_scores(model, graph, clamped=False):
    """All k^N labellings of ``graph`` with their scores on the model's structure, written without the library."""
    k = model.n_states_
    x = graph.features.toarray() if sp.issparse(graph.features) else np.asarray(graph.features)
    unary = x @ model.coef_.T + model.intercept_
    forest = model.structure(graph, clamped=clamped)
    e = graph.edges[forest]
    t = graph.edge_types[forest]
    g = [np.ones(len(forest))]
    if model.pair_features == "cosine":
        xu, xv = x[e[:, 0]], x[e[:, 1]]
        g.append(np.sum(xu * xv, axis=1) / (np.linalg.norm(xu, axis=1) * np.linalg.norm(xv, axis=1)))
    ys = np.array(list(itertools.product(range(k), repeat=graph.n_nodes)))
    score = unary[np.arange(graph.n_nodes), ys].sum(axis=1)
    for j in range(len(forest)):
        table = sum(g[i][j] * model.pairwise_[t[j], i] for i in range(len(g)))
        score = score + table[ys[:, e[j, 0]], ys[:, e[j, 1]]]
    return ys, score


def brute_conditional(model, graph, clamped=False):
    """(log p(known labels), conditional marginals, conditional MAP) by enumeration."""
    ys, score = brute_scores(model, graph, clamped)
    known = graph.labels >= 0
    ok = np.all(ys[:, known] == graph.labels[known], axis=1)
    loglik = logsumexp(score[ok]) - logsumexp(score)
    p = np.exp(score[ok] - logsumexp(score[ok]))
    marg = np.zeros((graph.n_nodes, model.n_states_))
    for i in range(graph.n_nodes):
        np.add.at(marg[i], ys[ok, i], p)
    return loglik, marg, ys[ok][np.argmax(score[ok])], score[ok].max()


# --------------------------------------------------------------------------- RelationalGraph
def test_graph_holds_read_only_copies():
    x = np.eye(3)
    edges = np.array([[0, 1], [1, 2]])
    g = RelationalGraph(x, edges, labels=[0, -1, 2], edge_types=[0, 1])
    x[0, 0] = 5.0
    edges[0, 0] = 2
    assert g.features[0, 0] == 1.0 and g.edges[0, 0] == 0
    assert (g.n_nodes, g.n_edges, g.n_features, g.n_relations) == (3, 2, 3, 2)
    assert g.known.tolist() == [True, False, True]
    for arr in (g.features, g.edges, g.labels, g.edge_types):
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.labels = np.zeros(3)
    assert repr(g) == "RelationalGraph(n_nodes=3, n_edges=2, n_features=3, n_labeled=2, n_relations=2)"


def test_graph_defaults_and_sparse_features():
    x = sp.random(5, 4, density=0.5, format="coo", random_state=0)
    g = RelationalGraph(x, np.zeros((0, 2), dtype=int))
    assert sp.issparse(g.features) and g.features.format == "csr"
    assert g.labels.tolist() == [-1] * 5 and g.edge_types.shape == (0,) and g.n_relations == 1
    with pytest.raises(ValueError, match="read-only"):
        g.features.data[0] = 1.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"edges": [[0, 0]]}, "`edges` must not contain self loops; got edge 0 = [0, 0]."),
        ({"edges": [[0, 1], [1, 2], [1, 0]]}, "`edges` must list each undirected link once; edges 0 and 2"),
        ({"edges": [[0, 1], [0, 1]]}, "`edges` must list each undirected link once; edges 0 and 1"),
        ({"edges": [[0, 3]]}, "`edges` must contain node indices in [0, 2] (rows of `features`); got 3."),
        ({"edges": [[0, -1]]}, "`edges` must contain node indices in [0, 2] (rows of `features`); got -1."),
        ({"edges": [[0, 1, 2]]}, "`edges` must have shape (E, 2); got (1, 3)."),
        ({"labels": [0, 1]}, "`labels` must have length 3 (one per row of `features`); got 2."),
        ({"labels": [0, -2, 1]}, "`labels` must be >= 0, or -1 for unknown; got -2."),
        ({"edge_types": [0]}, "`edge_types` must have length 2 (one per row of `edges`); got 1."),
        ({"edge_types": [0, -1]}, "`edge_types` must be >= 0; got -1."),
        ({"features": [[0.0], [np.nan], [1.0]]}, "`features` must not contain NaN"),
        ({"features": sp.csr_matrix([[0.0], [np.nan], [1.0]])}, "`features` must not contain NaN."),
        ({"features": [[0.0], [np.inf], [1.0]]}, "`features` must not contain +inf"),
        ({"features": [0.0, 1.0, 2.0]}, "`features` must be a 2-D array; got shape (3,)."),
    ],
)
def test_graph_rejects_bad_input(kwargs, message):
    args = {"features": np.ones((3, 1)), "edges": [[0, 1], [1, 2]], "labels": None, "edge_types": None}
    args.update(kwargs)
    with pytest.raises(ValueError, match=re.escape(message)):
        RelationalGraph(**args)


# --------------------------------------------------------------------------- structure
def test_max_spanning_forest_is_maximal(seed):
    """Against every subset of links of a tiny graph: the heaviest spanning forest."""
    rng = np.random.default_rng(seed)
    n = 6
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.5]
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    w = rng.random(len(pairs))
    got = _max_spanning_forest(n, edges, w)
    a = (
        sp.csr_matrix((np.ones(len(pairs)), (edges[:, 0], edges[:, 1])), shape=(n, n))
        if pairs
        else sp.csr_matrix((n, n))
    )
    n_comp = connected_components(a, directed=False)[0]
    best = -1.0
    for subset in itertools.combinations(range(len(pairs)), n - n_comp):
        try:
            check_forest(edges[list(subset)], n)
        except ValueError:
            continue
        best = max(best, w[list(subset)].sum())
    assert len(got) == n - n_comp
    assert np.isclose(w[got].sum(), best if pairs else 0.0)


def test_structure_is_spanning_forest_of_links(seed):
    rng = np.random.default_rng(seed)
    graph, _ = random_graph(rng, n=40, k=3, f=4, p_edge=0.06, n_relations=2)
    model = RelationalESSCRF(C=1.0).fit(graph)
    forest = model.structure(graph)
    assert forest.dtype == np.int64 and np.all(np.diff(forest) > 0)  # distinct, sorted link indices
    assert forest.size == 0 or (forest.min() >= 0 and forest.max() < graph.n_edges)
    check_forest(graph.edges[forest], graph.n_nodes)  # no cycles
    a = sp.csr_matrix((np.ones(graph.n_edges), (graph.edges[:, 0], graph.edges[:, 1])), shape=(40, 40))
    n_comp, comp = connected_components(a, directed=False)
    assert forest.size == graph.n_nodes - n_comp  # spanning: one tree per component of the link graph
    fe = graph.edges[forest]
    assert np.all(comp[fe[:, 0]] == comp[fe[:, 1]])
    mi = model.edge_information(graph)
    assert mi.shape == (graph.n_edges,) and np.all(mi >= 0)
    # given the known labels: every link with a known end, and a spanning forest of the links between unknowns
    used = model.structure(graph, clamped=True)
    e = graph.edges
    one_known = graph.known[e[:, 0]] != graph.known[e[:, 1]]
    inner = ~graph.known[e[:, 0]] & ~graph.known[e[:, 1]]
    assert set(np.flatnonzero(one_known)) <= set(used.tolist())
    assert not np.any(graph.known[e[used, 0]] & graph.known[e[used, 1]])
    sub = used[inner[used]]
    check_forest(e[sub], graph.n_nodes)
    a = sp.csr_matrix((np.ones(inner.sum()), (e[inner, 0], e[inner, 1])), shape=(40, 40))
    assert sub.size == graph.n_nodes - connected_components(a, directed=False)[0]


# --------------------------------------------------------------------------- likelihood and gradient
@pytest.mark.parametrize("pair_features", ["cosine", "none"])
def test_crf_gradient_matches_finite_differences(seed, pair_features):
    rng = np.random.default_rng(seed)
    graph, _ = random_graph(rng, n=8, k=3, f=3, n_relations=2, sparse=seed % 2 == 1)
    k, r = 3, 2
    layout = _Layout(k, 3, r, 2 if pair_features == "cosine" else 1)
    gfeat = _pair_features(graph, pair_features)
    forest = _max_spanning_forest(graph.n_nodes, graph.edges, rng.random(graph.n_edges))
    theta = rng.normal(size=layout.size)
    for problem in (
        _CRFProblem(graph, forest, gfeat, layout, C=0.7),
        _PairProblem(graph, gfeat, layout, C=0.7),
    ):

        def f(t, p=problem):
            return p.value_and_grad(t)[0]

        def g(t, p=problem):
            return p.value_and_grad(t)[1]

        err = check_grad(f, g, theta, epsilon=1e-6)
        assert err < 1e-4 * max(1.0, np.linalg.norm(g(theta)))


def test_semi_supervised_likelihood_marginals_and_map_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    graph, _ = random_graph(rng, n=7, k=3, f=2, n_relations=2, frac_known=0.4)
    model = RelationalESSCRF(C=2.0, structure_C=2.0).fit(graph)
    loglik = brute_conditional(model, graph)[0]  # the training likelihood: spanning forest of all links
    ll = model.log_likelihood(graph)  # one value per graph
    assert ll.shape == (1,) and np.isclose(ll[0], loglik, atol=1e-9)
    assert model.score(graph) == pytest.approx(loglik, abs=1e-9)
    # prediction: the known labels are evidence, every link with a known end is used
    _, marg, _, best_score = brute_conditional(model, graph, clamped=True)
    np.testing.assert_allclose(model.predict_marginals(graph), marg, atol=1e-9)
    pred = model.predict(graph)
    assert pred.dtype == np.int64
    ys, score = brute_scores(model, graph, clamped=True)
    assert np.isclose(score[np.all(ys == pred, axis=1)][0], best_score)  # a conditional MAP (ties allowed)
    np.testing.assert_array_equal(model.predict(graph, method="max_marginal"), np.argmax(marg, axis=1))


def test_log_likelihood_and_score_of_a_list_of_graphs(seed):
    rng = np.random.default_rng(seed)
    g1, _ = random_graph(rng, n=6, k=3, f=2)
    g2, _ = random_graph(rng, n=5, k=3, f=2)
    model = RelationalESSCRF(n_states=3).fit([g1, g2])
    ll = model.log_likelihood([g1, g2])
    assert ll.shape == (2,) and np.all(ll <= 0)
    assert ll[0] == pytest.approx(model.log_likelihood(g1)[0]) and ll[1] == pytest.approx(model.log_likelihood(g2)[0])
    assert model.score([g1, g2]) == pytest.approx(ll.mean())
    with pytest.raises(ValueError, match=re.escape("`graph_or_list[1]` has 1 features per entity")):
        model.log_likelihood([g1, RelationalGraph(np.ones((2, 1)), [[0, 1]])])


def test_fit_maximizes_the_penalized_likelihood(seed):
    """At the fitted weights, the objective is at a stationary point: its gradient is ~0."""
    rng = np.random.default_rng(seed)
    graph, _ = random_graph(rng, n=12, k=3, f=3)
    model = RelationalESSCRF(C=1.0, tol=1e-8, max_iter=2000).fit(graph)
    layout = _Layout(3, 3, 1, 2)
    theta = np.concatenate([model.coef_.ravel(), model.intercept_, model.pairwise_.ravel()])
    problem = _CRFProblem(graph, model.structure(graph), _pair_features(graph, "cosine"), layout, C=1.0)
    assert np.max(np.abs(problem.value_and_grad(theta)[1])) < 1e-5
    assert np.allclose(model.pairwise_, np.swapaxes(model.pairwise_, -1, -2))  # symmetric templates


# --------------------------------------------------------------------------- prediction
def test_predictions_clamp_known_labels_and_marginals_sum_to_one(seed):
    rng = np.random.default_rng(seed)
    graph, _ = random_graph(rng, n=30, k=4, f=3, p_edge=0.1, frac_known=0.3)
    model = RelationalESSCRF().fit(graph)
    # a test graph whose known labels contradict the features: predictions must still keep them
    labels = np.where(graph.known, (graph.labels + 1) % 4, -1)
    test = RelationalGraph(graph.features, graph.edges, labels)
    pred = model.predict(test)
    marg = model.predict_marginals(test)
    assert pred.shape == (30,) and pred.dtype == np.int64
    assert np.array_equal(pred[test.known], labels[test.known])
    assert marg.shape == (30, 4)
    np.testing.assert_allclose(marg.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(marg[test.known, labels[test.known]], 1.0)
    assert np.all((pred >= 0) & (pred < 4))


def test_links_help_on_homophilous_graph():
    """Weak features, strongly homophilous links: the ESS-CRF beats its own structure-free unary part."""
    rng = np.random.default_rng(0)
    n, k = 300, 3
    y = rng.integers(0, k, size=n)
    x = np.eye(k)[y] * 0.6 + rng.normal(size=(n, k))
    same = [(u, v) for u in range(n) for v in range(u + 1, n) if y[u] == y[v] and rng.random() < 0.02]
    diff = [(u, v) for u in range(n) for v in range(u + 1, n) if y[u] != y[v] and rng.random() < 0.002]
    labels = np.where(rng.random(n) < 0.3, y, -1)
    graph = RelationalGraph(x, same + diff, labels)
    model = RelationalESSCRF(C=1.0).fit(graph)
    unknown = ~graph.known
    acc = np.mean(model.predict(graph)[unknown] == y[unknown])
    unary = np.argmax(x @ model.coef_.T + model.intercept_, axis=1)
    assert acc > np.mean(unary[unknown] == y[unknown]) + 0.1


def test_fit_on_a_list_equals_fit_on_the_disjoint_union(seed):
    rng = np.random.default_rng(seed)
    g1, _ = random_graph(rng, n=10, k=3, f=2)
    g2, _ = random_graph(rng, n=8, k=3, f=2)
    union = RelationalGraph(
        np.vstack([g1.features, g2.features]),
        np.vstack([g1.edges, g2.edges + 10]),
        np.r_[g1.labels, g2.labels],
    )
    a = RelationalESSCRF(n_states=3).fit([g1, g2])
    b = RelationalESSCRF(n_states=3).fit(union)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)
    np.testing.assert_allclose(a.pairwise_, b.pairwise_, atol=1e-8)
    np.testing.assert_array_equal(np.r_[a.predict(g1), a.predict(g2)], b.predict(union))


def test_sparse_and_dense_features_agree(seed):
    rng = np.random.default_rng(seed)
    dense, _ = random_graph(rng, n=12, k=3, f=3)
    sparse = RelationalGraph(sp.csr_matrix(dense.features), dense.edges, dense.labels)
    a, b = RelationalESSCRF().fit(dense), RelationalESSCRF().fit(sparse)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)
    np.testing.assert_allclose(a.predict_marginals(dense), b.predict_marginals(sparse), atol=1e-8)


# --------------------------------------------------------------------------- scikit-learn conventions and errors
def test_sklearn_clone_and_params(seed):
    rng = np.random.default_rng(seed)
    graph, _ = random_graph(rng, n=10)
    model = RelationalESSCRF(C=0.5, structure_C=2.0, pair_features="none", max_iter=400)
    params = model.get_params()
    assert params == {
        "C": 0.5,
        "structure_C": 2.0,
        "pair_features": "none",
        "n_states": None,
        "n_classes": None,
        "max_iter": 400,
        "tol": 1e-4,
    }
    assert model.fit(graph) is model
    copy = clone(model)
    assert copy.get_params() == params and not hasattr(copy, "coef_")
    assert copy.set_params(C=3.0) is copy and copy.C == 3.0
    fitted = ("coef_", "intercept_", "pairwise_", "n_states_", "n_features_in_", "n_relations_", "objective_")
    for name in (*fitted, "n_iter_", "structure_n_iter_", "converged_", "structure_converged_"):
        assert hasattr(model, name)
    assert model.converged_ is True and model.structure_converged_ is True
    assert isinstance(model.n_iter_, int) and model.n_iter_ > 0
    assert model.pairwise_.shape == (1, 1, model.n_states_, model.n_states_)
    assert "RelationalESSCRF(C=0.5" in repr(model)
    with pytest.raises(TypeError):
        RelationalESSCRF(0.5)  # every option is keyword-only
    with pytest.raises(TypeError):
        model.predict(graph, "map")


def test_deprecated_n_classes_is_n_states(seed):
    rng = np.random.default_rng(seed)
    graph, _ = random_graph(rng, n=8, k=3, f=2)
    with pytest.warns(DeprecationWarning, match="`n_classes` is deprecated"):
        old = RelationalESSCRF(n_classes=4).fit(graph)
    new = RelationalESSCRF(n_states=4).fit(graph)
    np.testing.assert_array_equal(old.coef_, new.coef_)
    with pytest.warns(DeprecationWarning, match="use `n_states_`"):
        assert old.n_classes_ == 4 == new.n_states_
    with pytest.raises(ValueError, match=re.escape("give `n_states` or the deprecated `n_classes`, not both")):
        with pytest.warns(DeprecationWarning):
            RelationalESSCRF(n_states=4, n_classes=4).fit(graph)


def test_y_must_be_none(seed):
    rng = np.random.default_rng(seed)
    graph, _ = random_graph(rng, n=8, k=3, f=2)
    with pytest.raises(ValueError, match=re.escape("`y` must be None (fit reads the labels of the graphs); got")):
        RelationalESSCRF().fit(graph, graph.labels)
    model = RelationalESSCRF().fit(graph, None)
    with pytest.raises(ValueError, match=re.escape("`y` must be None (score reads the labels of the graphs)")):
        model.score(graph, graph.labels)


def test_not_converging_warns_and_is_recorded(seed):
    rng = np.random.default_rng(seed)
    graph, _ = random_graph(rng, n=12, k=3, f=3)
    with pytest.warns(ConvergenceWarning) as record:
        model = RelationalESSCRF(max_iter=1).fit(graph)
    assert [str(w.message).split(":")[1] for w in record] == [
        " L-BFGS-B on the structure model",
        " L-BFGS-B on the CRF likelihood",
    ]
    assert all(w.filename == __file__ for w in record)  # the warnings point at the caller of fit
    assert model.converged_ is False and model.n_iter_ == 1
    assert model.structure_converged_ is False and model.structure_n_iter_ == 1


def test_not_fitted_and_bad_arguments(seed):
    rng = np.random.default_rng(seed)
    graph, _ = random_graph(rng, n=10, k=3, f=3, n_relations=1)
    with pytest.raises(NotFittedError):
        RelationalESSCRF().predict(graph)
    cases = [
        (RelationalESSCRF(C=-1.0), "`C` must be a finite number > 0; got -1.0."),
        (RelationalESSCRF(structure_C=0), "`structure_C` must be a finite number > 0; got 0."),
        (RelationalESSCRF(pair_features="dot"), "`pair_features` must be one of 'cosine', 'none'; got 'dot'."),
        (RelationalESSCRF(max_iter=0), "`max_iter` must be an integer >= 1; got 0."),
        (RelationalESSCRF(tol=np.inf), "`tol` must be a finite number > 0; got inf."),
        (RelationalESSCRF(n_states=1), "`n_states` must be None or an integer >= 2; got 1."),
        (RelationalESSCRF(n_states=2), "`graph_or_list` labels must be < `n_states` = 2; got 2."),
    ]
    labels = graph.labels.copy()
    labels[0] = 2
    graph = RelationalGraph(graph.features, graph.edges, labels)
    for model, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            model.fit(graph)
    unlabeled = RelationalGraph(graph.features, graph.edges)
    with pytest.raises(ValueError, match=re.escape("`graph_or_list` has no known label")):
        RelationalESSCRF().fit(unlabeled)
    with pytest.raises(TypeError, match=re.escape("`graph_or_list` must be a RelationalGraph")):
        RelationalESSCRF().fit(np.ones((3, 3)))
    model = RelationalESSCRF().fit(graph)
    with pytest.raises(ValueError, match=re.escape("`graph` has 2 features per entity; the model was fitted with 3.")):
        model.predict(RelationalGraph(np.ones((3, 2)), [[0, 1]]))
    with pytest.raises(ValueError, match=re.escape("`graph.edge_types` must be < 1 (relations seen in fit); got 1.")):
        model.predict(RelationalGraph(np.ones((3, 3)), [[0, 1]], edge_types=[1]))
    with pytest.raises(
        ValueError, match=re.escape("`graph.labels` must be < 3 (the model's `n_states_`) or -1; got 5.")
    ):
        model.predict_marginals(RelationalGraph(np.ones((3, 3)), [[0, 1]], labels=[5, -1, -1]))
    with pytest.raises(TypeError, match=re.escape("`graph` must be a RelationalGraph")):
        model.predict(np.ones((3, 3)))
