"""`tractable.psl` search weight learners (PSL 2.4's grid, random, guided, Hyperband and Bayesian search).

The oracle is brute force: every candidate is scored again through the public path (``Model.set_weights``,
``Model.infer`` and the metric computed by hand), and the search must return the best of them. The
program: targets ``Tgt(a_i)`` pulled up by two observed predicates and down by a prior, three weighted
rules, four targets with truth; inference runs to tight tolerances so that both paths agree to 1e-6.
"""

import itertools
import re
import time
import warnings

import numpy as np
import pandas as pd
import pytest

from tractable import ConvergenceWarning
from tractable.psl import LEARNERS, Model
from tractable.psl.learning import LEARNING_PREFIXES, learn, learner_options

#: irregular values, so that no MAP value of the grid lands on the discrete threshold 0.5 (where the two
#: paths' solver noise could round differently)
OBS = np.array([0.93, 0.77, 0.61, 0.29])
OBS2 = np.array([0.18, 0.88, 0.47, 0.71])
TRUTH = np.array([0.7, 0.6, 0.4, 0.3])
#: inner ADMM to tight tolerances, so that the learner's and the brute force's inferences agree to 1e-6
TIGHT = dict(eps_abs=1e-9, eps_rel=1e-9, gap_tol=1e-9)
#: a grid of three values for three rules: 27 points
GRID = "0.1:1:10"
SEARCH = ["GridSearch", "RandomGridSearch", "GuidedRandomGridSearch", "ContinuousRandomGridSearch"]
SEARCH += ["Hyperband", "GaussianProcessPrior"]
#: small settings of every search learner, for the tests that run them all
SMALL = {
    "GridSearch": dict(weights=GRID),
    "RandomGridSearch": dict(weights=GRID, max_locations=8),
    "GuidedRandomGridSearch": dict(weights=GRID, seed_locations=4, explore_locations=2),
    "ContinuousRandomGridSearch": dict(max_locations=8),
    "Hyperband": dict(n_brackets=2, base_bracket_size=4, survival=2),
    "GaussianProcessPrior": dict(max_iter=6, max_configs=500),
}


def _program(weights=(1.0, 1.0, 1.0)):
    m = Model()
    m.add_predicate("Obs", 1, closed=True)
    m.add_predicate("Obs2", 1, closed=True)
    m.add_predicate("Tgt", 1, closed=False)
    m.add_rule(f"{weights[0]}: Obs(X) -> Tgt(X) ^2")
    m.add_rule(f"{weights[1]}: Obs2(X) -> Tgt(X) ^2")
    m.add_rule(f"{weights[2]}: !Tgt(X) ^2")
    names = [f"a{i}" for i in range(OBS.size)]
    m.add_data("Obs", "observations", pd.DataFrame({0: names, 1: OBS}))
    m.add_data("Obs2", "observations", pd.DataFrame({0: names, 1: OBS2}))
    m.add_data("Tgt", "targets", pd.DataFrame({0: names}))
    m.add_data("Tgt", "truth", pd.DataFrame({0: names, 1: TRUTH}))
    return m


#: learners whose candidates come from PSL's Dirichlet sampler: weights as small as 1e-8 next to 1 make
#: ill-conditioned programs that ADMM cannot solve to TIGHT within its budget; their tests compare no
#: brute force and use the default tolerances
SAMPLED = ("ContinuousRandomGridSearch", "Hyperband", "GaussianProcessPrior")


def _search(method, m=None, **kw):
    m = _program() if m is None else m
    tight = not any(method.endswith(s) for s in SAMPLED)
    return m.learn(method=method, solve_options=TIGHT if tight else {}, **kw)


def _map_values(m, w):
    """MAP values of the targets (a0 .. a3) at weights ``w``, through the public path."""
    m.set_weights(w)
    pred, _ = m.infer(**TIGHT)
    return pred["Tgt"].set_index(0)["value"].loc[[f"a{i}" for i in range(OBS.size)]].to_numpy()


def _f1(y, truth=TRUTH, threshold=0.5):
    p, t = y >= threshold, truth >= threshold
    tp = np.sum(p & t)
    return 0.0 if tp == 0 else 2 * tp / (p.sum() + t.sum())


@pytest.fixture(scope="module")
def brute():
    """Every point of GRID^3 in grid order (the last rule's weight moving fastest) with its MAP values."""
    m = _program()
    values = [0.1, 1.0, 10.0]
    points = [np.array(p) for p in itertools.product(values, repeat=3)]
    return points, [_map_values(m, p) for p in points]


# ----------------------------------------------------------------------------------------------- oracles
def test_learners_are_registered_by_psl_class_names():
    assert list(LEARNERS)[-6:] == SEARCH
    assert LEARNERS["GridSearch"].psl_class == "org.linqs.psl.application.learning.weight.search.grid.GridSearch"
    for prefix in ("gridsearch.", "randomgridsearch.", "hyperband.", "gpp.", "gppker.", "search."):
        assert prefix in LEARNING_PREFIXES


def test_grid_search_scores_every_grid_point_as_brute_force(brute):
    points, ys = brute
    res = _search("GridSearch", weights=GRID)
    mse = np.array([np.mean((y - TRUTH) ** 2) for y in ys])
    assert res.status == "completed" and res.converged and res.n_iter == 27
    np.testing.assert_array_equal(res.weight_path, np.array(points))  # PSL's grid order
    # tolerance: both inferences at ADMM tolerances 1e-9; the metric is a mean of squares of values in [0, 1]
    np.testing.assert_allclose(res.metric_values, mse, atol=1e-6)
    np.testing.assert_allclose(res.loss, mse, atol=1e-6)  # MSE: lower is better, the loss is the metric
    assert res.objective == pytest.approx(mse.min(), abs=1e-6)
    assert res.objective == res.loss.min()
    assert mse[[i for i, p in enumerate(points) if np.array_equal(p, res.weights)][0]] - mse.min() < 1e-6
    assert res.evaluator == "ContinuousEvaluator(mse) on every predicate with truth"
    np.testing.assert_array_equal(res.budgets, np.ones(27))
    assert res.gradients.shape == (0, 3) and res.n_labels == 4


def test_grid_search_with_the_discrete_evaluator_maximizes_f1(brute):
    points, ys = brute
    assert min(np.min(np.abs(y - 0.5)) for y in ys) > 1e-3  # no value at the threshold: F1s are exact
    f1 = np.array([_f1(y) for y in ys])
    res = _search("GridSearch", weights=GRID, evaluator="DiscreteEvaluator")
    np.testing.assert_array_equal(res.metric_values, f1)
    np.testing.assert_array_equal(res.loss, -f1)  # higher is better: the loss is minus the metric
    assert res.objective == -f1.max()
    first_best = points[int(np.argmax(f1))]  # ties go to the first point in grid order, as in PSL
    np.testing.assert_array_equal(res.weights, first_best)


def test_random_grid_search_over_the_whole_grid_equals_grid_search():
    grid = _search("GridSearch", weights=GRID)
    rand = _search("RandomGridSearch", weights=GRID, max_locations=100, rng=5)
    assert rand.n_iter == 27  # min(max_locations, grid size)
    assert not np.array_equal(rand.weight_path, grid.weight_path)  # another order ...
    np.testing.assert_array_equal(np.sort(rand.loss), np.sort(grid.loss))  # ... of the same scores
    np.testing.assert_array_equal(rand.weights, grid.weights)
    assert rand.objective == grid.objective


def test_random_grid_search_draws_distinct_grid_points():
    res = _search("RandomGridSearch", weights=GRID, max_locations=10, rng=1)
    assert res.n_iter == 10
    assert len({tuple(w) for w in res.weight_path}) == 10
    assert set(res.weight_path.ravel()) <= {0.1, 1.0, 10.0}


def test_guided_random_grid_search_explores_the_neighbours_of_its_best_seeds():
    res = _search("GuidedRandomGridSearch", weights=GRID, seed_locations=5, explore_locations=2, rng=3)
    idx = np.searchsorted([0.1, 1.0, 10.0], res.weight_path)
    seeds, explored = idx[:5], idx[5:]
    best = seeds[np.argsort(res.loss[:5], kind="stable")[:2]]
    # every grid neighbour (one rule one step away) of the two best seeds that is not a seed, and only those:
    # fewer than PSL's cap min(27, 150, 5 + 2 * 2^3) here, so the explore phase runs out first
    neighbours = {
        tuple(b + d * np.eye(3, dtype=int)[r]) for b in best for r in range(3) for d in (1, -1) if 0 <= b[r] + d < 3
    } - {tuple(p) for p in seeds}
    assert {tuple(p) for p in explored} == neighbours and len(explored) == len(neighbours)
    assert res.n_iter == 5 + len(neighbours) < 21
    assert res.objective == res.loss.min()
    capped = _search("GuidedRandomGridSearch", weights=GRID, seed_locations=5, explore_locations=2, max_locations=7)
    assert capped.n_iter == 7  # max_locations caps seeds and neighbours together


def test_continuous_random_grid_search_samples_psl_weight_sampler():
    res = _search("ContinuousRandomGridSearch", max_locations=6, rng=2)
    # Dirichlet(0.05) draws scaled to unit L2 norm
    np.testing.assert_allclose(np.linalg.norm(res.weight_path, axis=1), 1.0, atol=1e-12)
    uni = _search("ContinuousRandomGridSearch", max_locations=6, rng=2, dirichlet=False)
    assert np.all((uni.weight_path >= 0) & (uni.weight_path < 1))
    assert res.objective == res.loss.min()


def test_hyperband_budgets_and_a_full_budget_answer():
    res = _search("Hyperband", n_brackets=3, base_bracket_size=4, survival=2, rng=0)
    # PSL's schedule: bracket b has ceil(2^b / (b + 1) * 4) configurations and b + 1 rounds at budgets
    # 2^(r - b), keeping floor(n / 2) each round: 4 | 4, 2 | 6, 3, 1
    budgets = [1.0] * 4 + [0.5] * 4 + [1.0] * 2 + [0.25] * 6 + [0.5] * 3 + [1.0]
    np.testing.assert_array_equal(res.budgets, budgets)
    full = res.budgets == 1.0
    k = int(np.flatnonzero(full)[np.argmin(res.loss[full])])
    np.testing.assert_array_equal(res.weights, res.weight_path[k])  # the best scored at full budget
    assert res.objective == res.loss[full].min()
    # survivors are configurations of their bracket's first round
    assert all(any(np.array_equal(w, v) for v in res.weight_path[4:8]) for w in res.weight_path[8:10])


def test_hyperband_truncates_admm_at_its_budget():
    """With a 40-iteration ADMM budget, a quarter of it is 10 iterations: the truncated rounds' scores
    differ from the full ones, and the answer is still one scored at full budget."""
    opts = dict(TIGHT, max_iter=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = _program().learn(
            method="Hyperband", n_brackets=3, base_bracket_size=4, survival=2, rng=0, solve_options=opts
        )
    assert res.inference_iterations <= 40 * (res.n_inferences)
    full = res.budgets == 1.0
    assert any(np.array_equal(res.weights, w) for w in res.weight_path[full])


def test_gaussian_process_prior_improves_on_its_first_point():
    res = _search("GaussianProcessPrior", max_iter=8, max_configs=2000, rng=0, initial_weights=[0.2, 0.1, 1.0])
    np.testing.assert_array_equal(res.weight_path[0], [0.2, 0.1, 1.0])  # PSL's gpp.useProvidedWeight
    assert res.n_iter <= 8
    assert res.objective <= res.loss[0]
    assert res.objective == res.loss.min()
    assert len({tuple(w) for w in res.weight_path}) == res.n_iter  # a point is never proposed twice
    rand = _search("GaussianProcessPrior", max_iter=8, max_configs=2000, rng=0, use_provided_weight=False)
    assert not np.array_equal(rand.weight_path[0], rand.initial_weights)


def test_gaussian_process_prior_follows_psl_acquisition():
    """The second candidate maximizes mean / explore + variance of a Gaussian process fitted on the first
    (scikit-learn, PSL's fixed kernel exp(-0.5 * ||u - v||) in PSL's scale-free space)."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import Matern

    w0 = np.array([1.0, 1.0, 1.0])
    res = _search("GaussianProcessPrior", max_iter=2, max_configs=300, rng=4, early_stopping=False)
    pool = np.random.default_rng(4).dirichlet(np.full(3, 0.05), size=300)  # PSL's WeightSampler, same draws
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)

    def space(w):
        lw = np.log(np.maximum(w, 1e-8))
        return lw - lw[:, :1]

    gp = GaussianProcessRegressor(Matern(2.0, "fixed", nu=0.5), alpha=1e-10, optimizer=None)
    gp.fit(space(w0[None]), [-res.loss[0]])
    mean, std = gp.predict(space(pool), return_std=True)
    np.testing.assert_array_equal(res.weight_path[1], pool[np.argmax(mean / 2.0 + std**2)])


# ----------------------------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("method", SEARCH[1:])
def test_same_rng_same_answer(method):
    a = _search(method, rng=7, **SMALL[method])
    b = _search(method, rng=7, **SMALL[method])
    np.testing.assert_array_equal(a.weight_path, b.weight_path)
    np.testing.assert_array_equal(a.loss, b.loss)
    np.testing.assert_array_equal(a.weights, b.weights)


@pytest.mark.parametrize("method", ["GridSearch", "Hyperband"])
def test_two_threads_give_the_answer_of_one(method):
    one = _search(method, rng=1, **SMALL[method])
    two = _search(method, rng=1, n_jobs=2, **SMALL[method])
    np.testing.assert_array_equal(one.weight_path, two.weight_path)
    np.testing.assert_array_equal(one.loss, two.loss)
    np.testing.assert_array_equal(one.weights, two.weights)


def test_dask_client_gives_the_answer_of_one_process():
    distributed = pytest.importorskip("distributed")
    one = _search("Hyperband", rng=1, **SMALL["Hyperband"])
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None) as client:
        res = _search("Hyperband", rng=1, client=client, **SMALL["Hyperband"])
    np.testing.assert_array_equal(one.weight_path, res.weight_path)
    np.testing.assert_array_equal(one.loss, res.loss)
    np.testing.assert_array_equal(one.weights, res.weights)


def test_warm_start_changes_time_not_answers():
    warm = _search("GridSearch", weights=GRID)
    cold = _search("GridSearch", weights=GRID, warm_start=False)
    # tolerance: the solves stop at 1e-9 residuals from different starts
    np.testing.assert_allclose(warm.loss, cold.loss, atol=1e-7)
    assert warm.n_inferences == cold.n_inferences + 1  # the warm start's own inference


def test_time_limit_returns_the_best_so_far():
    weights = ":".join(str(v) for v in np.linspace(0.05, 1.0, 40))  # 64,000 grid points
    t0 = time.perf_counter()
    with pytest.warns(ConvergenceWarning, match="time limit"):
        res = _program().learn(method="GridSearch", weights=weights, time_limit=0.5)
    elapsed = time.perf_counter() - t0
    assert res.status == "time_limit_reached" and not res.converged
    assert 0 < res.n_iter < 40**3
    assert elapsed < 5.0  # generous: the limit is checked between candidates and passed to each solve
    assert res.objective == res.loss.min()
    assert any(np.array_equal(res.weights, w) for w in res.weight_path)


@pytest.mark.parametrize("method", SEARCH)
def test_progress_counts_every_candidate_of_the_plan(method, capsys):
    """The bar's total is the number of candidates the learner scores (an upper bound for
    GuidedRandomGridSearch, whose neighbours may be fewer, and GaussianProcessPrior, whose early stopping may
    end the search); it shows the best metric so far and changes no answer."""
    quiet = _search(method, rng=3, **SMALL[method])
    capsys.readouterr()
    res = _search(method, rng=3, progress=True, **SMALL[method])
    err = capsys.readouterr().err
    np.testing.assert_array_equal(res.weight_path, quiet.weight_path)
    np.testing.assert_array_equal(res.weights, quiet.weights)
    assert method in err and f"{res.n_iter}/{res.n_iter}" in err and "best mse=" in err
    planned = int(re.search(r" 0/(\d+) ", err).group(1))  # the total when the bar was drawn first
    assert (
        planned >= res.n_iter if method in ("GuidedRandomGridSearch", "GaussianProcessPrior") else planned == res.n_iter
    )


# ----------------------------------------------------------------------------------------------- evaluators
def test_primary_evaluation_of_the_program_is_the_default():
    m = _program()
    m.evaluators = {
        "Tgt/1": [{"evaluator": "DiscreteEvaluator"}, {"evaluator": "ContinuousEvaluator", "primary": True}]
    }
    res = _search("GridSearch", m, weights="1:2")
    assert res.evaluator == "ContinuousEvaluator(mse) on Tgt"
    m.evaluators = {"Tgt/1": ["DiscreteEvaluator", "AUCEvaluator"]}  # no primary: the first
    assert _search("GridSearch", m, weights="1:2").evaluator == "DiscreteEvaluator(f1, threshold=0.5) on Tgt"


def test_categorical_evaluator_scores_as_model_evaluate():
    """Lab(A, C) with one category per item: the search's array path against Model.evaluate's frames,
    with a target without truth competing for its item's category."""
    m = Model()
    m.add_predicate("Link", 2, closed=True)
    m.add_predicate("Lab", 2, closed=False)
    m.add_rule("1: Link(A, B) & Lab(A, C) -> Lab(B, C) ^2")
    m.add_rule("1: !Lab(A, C) ^2")
    m.add_rule("Lab(A, +C) = 1 .")
    links = [("a", "b"), ("b", "c"), ("d", "c")]
    m.add_data("Link", "observations", pd.DataFrame({0: [x for x, _ in links], 1: [y for _, y in links], 2: 1.0}))
    m.add_data(
        "Lab", "observations", pd.DataFrame({0: ["a", "a", "d", "d"], 1: ["x", "y", "x", "y"], 2: [1, 0, 0, 1.0]})
    )
    m.add_data("Lab", "targets", pd.DataFrame({0: ["b", "b", "c", "c"], 1: ["x", "y", "x", "y"]}))
    m.add_data("Lab", "truth", pd.DataFrame({0: ["b", "b", "c"], 1: ["x", "y", "y"], 2: [1.0, 0.0, 1.0]}))
    spec = {"evaluator": "CategoricalEvaluator", "options": {"categoricalevaluator.categoryindexes": "1"}}
    m.evaluators = {"Lab/2": [spec]}
    res = m.learn(method="GridSearch", weights="0.5:2", solve_options=TIGHT)
    assert res.evaluator.startswith("CategoricalEvaluator(categorical_accuracy")
    for w, got in zip(res.weight_path, res.metric_values):
        m.set_weights(w)
        pred, _ = m.infer(**TIGHT)
        assert got == pytest.approx(m.evaluate(pred)["Lab"]["categorical_accuracy"], abs=1e-12)


# ----------------------------------------------------------------------------------------------- options
def test_psl_option_names_and_python_keywords_are_the_same_options():
    a = _search("RandomGridSearch", rng=0, weights="1:2", max_locations=3, evaluator="DiscreteEvaluator")
    b = _search(
        "RandomGridSearch",
        rng=0,
        **{
            "gridsearch.weights": "1:2",
            "randomgridsearch.maxlocations": "3",
            "weightlearning.evaluator": "DiscreteEvaluator",
        },
    )
    np.testing.assert_array_equal(a.weight_path, b.weight_path)
    c = _search("GaussianProcessPrior", rng=0, max_iter=2, max_configs=50, **{"gpp.earlyStopping": "false"})
    assert dict(c.options)["early_stopping"] is False
    assert learner_options("GridSearch", {"gridsearch.weights": "1", "gradientdescent.numsteps": 3}) == {
        "gridsearch.weights": "1"
    }


def test_learn_leaves_the_model_and_its_inputs_alone():
    m = _program(weights=(0.5, 0.25, 1.0))
    init = np.array([1.0, 2.0, 3.0])
    res = learn(m, method="GaussianProcessPrior", initial_weights=init, max_iter=2, max_configs=10, rng=0)
    np.testing.assert_array_equal(init, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(m.weights, [0.5, 0.25, 1.0])  # learn() does not set them; Model.learn does
    np.testing.assert_array_equal(res.initial_weights, init)


@pytest.mark.parametrize(
    "method, option, error, message",
    [
        ("GridSearch", {"weights": ""}, ValueError, "`weights` must list the grid's weights"),
        ("GridSearch", {"gridsearch.weights": ""}, ValueError, "an empty search space"),
        ("GridSearch", {"weights": []}, ValueError, "an empty search space"),
        ("GridSearch", {"weights": "1:x"}, ValueError, "got 'x' in '1:x'"),
        ("GridSearch", {"weights": "1:-2"}, ValueError, ">= 0"),
        ("GridSearch", {"weights": [1.0, np.nan]}, ValueError, "finite numbers >= 0"),
        (
            "GridSearch",
            {"hyperband.survival": 2},
            ValueError,
            "`hyperband.survival` does not apply to `method`='GridSearch'",
        ),
        ("GridSearch", {"max_iter": 2}, ValueError, "`max_iter` does not apply to `method`='GridSearch'"),
        ("GridSearch", {"n_jobs": 0}, ValueError, "`n_jobs` must be a positive integer or -1"),
        ("GridSearch", {"client": "localhost"}, TypeError, "`client` must be a dask.distributed.Client"),
        ("GridSearch", {"evaluator": "Nope"}, ValueError, "unknown PSL evaluator 'Nope'"),
        ("GridSearch", {"evaluator": {"evaluator": "ContinuousEvaluator", "predicate": "Nope"}}, ValueError, "'Nope'"),
        (
            "GridSearch",
            {"evaluator": {"evaluator": "DiscreteEvaluator", "options": {"discreteevaluator.threshold": "nan"}}},
            ValueError,
            "`discreteevaluator.threshold` must be a number in [0, 1]; got 'nan'",
        ),
        ("RandomGridSearch", {"max_locations": 0}, ValueError, "`max_locations` must be > 0"),
        ("Hyperband", {"survival": 1.5}, ValueError, "`survival` must be an integer"),
        ("GaussianProcessPrior", {"kernel_space": "XS"}, ValueError, "`kernel_space` must be one of 'SS', 'OS', 'LS'"),
        ("GaussianProcessPrior", {"gpp.explore": -1}, ValueError, "`gpp.explore` must be > 0"),
        (
            "StructuredPerceptron",
            {"n_jobs": 2},
            ValueError,
            "`n_jobs` does not apply to `method`='StructuredPerceptron'",
        ),
        ("Energy", {"gridsearch.weights": "1"}, ValueError, "`gridsearch.weights` does not apply"),
    ],
)
def test_option_errors(method, option, error, message):
    with pytest.raises(error, match=re.escape(message)):
        _program().learn(method=method, **option)


def test_unknown_learner_lists_the_search_learners():
    with pytest.raises(ValueError, match=r"`method` must be one of .*'GridSearch'.*'GaussianProcessPrior'; got 'Grid'"):
        _program().learn(method="Grid")
    fq = "org.linqs.psl.application.learning.weight.search.grid.GridSearch"
    assert _search(fq, weights="1").method == "GridSearch"


def test_search_needs_atoms_with_truth_to_score():
    m = _program()
    m.evaluators = {"Tgt/1": [{"evaluator": "CategoricalEvaluator"}]}  # arity 1: nothing left to group by
    with pytest.raises(ValueError, match="every argument is a category"):
        m.learn(method="GridSearch", weights="1")


def test_a_warm_started_candidate_that_ends_infeasible_is_solved_cold(monkeypatch):
    """A warm start must not change the answer: should ADMM started at ``x0`` report a feasible program
    infeasible (as it did before the flat-stretch projection was fixed), the candidate is solved again from zeros
    and the search gives what it gives without warm starts."""
    import tractable.hlmrf as hlmrf

    real = hlmrf.solve
    calls = []

    def flaky(model, **opts):
        calls.append("x0" in opts)
        res = real(model, **opts)
        if "x0" in opts:
            from dataclasses import replace

            return replace(res, status="infeasible", converged=False)
        return res

    cold = _search("GridSearch", weights=GRID, warm_start=False)
    monkeypatch.setattr(hlmrf, "solve", flaky)
    warm = _search("GridSearch", weights=GRID)
    assert any(calls) and not all(calls)  # warm-started, then solved cold
    np.testing.assert_array_equal(warm.weights, cold.weights)
    np.testing.assert_allclose(warm.loss, cold.loss, atol=1e-9)


@pytest.mark.filterwarnings("ignore:PSL options without meaning here")
def test_a_program_random_seed_seeds_learning(tmp_path):
    # PSL's random.seed option: Model.learn draws from it when given no rng
    import json

    from _helpers import psl_generator

    gen = psl_generator()
    program = gen.generate("citeseer", tmp_path, scale=0.3, rng=0)
    config = gen.read_config(program)
    config.setdefault("options", {})["random.seed"] = "5"  # PSL's options may be strings
    program.write_text(json.dumps(config))
    a = Model.from_json(program, split="learn")
    assert a.learn_seed == 5
    b = Model.from_json(program, split="learn")
    c = Model.from_json(program, split="learn")
    ra, rb = a.learn(method="RandomGridSearch"), b.learn(method="RandomGridSearch")
    rc = c.learn(method="RandomGridSearch", rng=5)
    np.testing.assert_array_equal(ra.weights, rb.weights)
    np.testing.assert_array_equal(ra.weights, rc.weights)
    for bad in (-1, 1.5, "x", True):
        config["options"]["random.seed"] = bad
        program.write_text(json.dumps(config))
        with pytest.raises(ValueError, match="random.seed.*must be an integer >= 0"):
            Model.from_json(program, split="learn")
