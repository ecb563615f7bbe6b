"""Finite inputs at the edges of float64, round 2: cardinality, exact, clique, adaptive MMP, HL-MRF references.

Every public engine either gives finite, correct answers for finite scores of any magnitude or refuses
them up front with a message naming the argument and the limit; a success status never comes with NaN,
``inf`` scores or marginals that do not sum to 1.

Oracles. Scores here are multiples of large powers of two plus O(1) numbers, and the oracle
(:func:`_exact_cardinality`) sums them *exactly* (``fractions.Fraction``), so that it is the distribution
of the model as given: a configuration's weight is ``exp(score - best)`` with the difference exact. The
engines must match it to 1e-9 (they run on an equivalent model of moderate scores, whose rounding is
~1e-13), and ``log Z`` to 1e-12 relative (the rounding of ``best`` itself dominates).
"""

from __future__ import annotations

import itertools
import math
import re
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit

from tractable import FactorGraph, TableFactor, ZeroPartitionError, cardinality, clique, exact, sampling
from tractable.hlmrf import HLMRF, solve

R = 2.0**996  # about 6.7e299: sums of a few multiples are exact
BIG = 2.0**1023  # about 9e307: two of them overflow


# ----------------------------------------------------------------------------- oracle


def _exact_cardinality(theta, f):
    """``(p_on, count_marginals, log_partition)`` by enumeration with exact scores; ``log_partition`` is
    ``±inf`` when it lies beyond float64's range. Raises ValueError when no configuration is allowed."""
    theta, f = np.asarray(theta, float), np.asarray(f, float)
    d = theta.shape[0]
    ys = np.array(list(itertools.product([0, 1], repeat=d)), dtype=np.int64).reshape(-1, d)
    scores = []
    for y in ys:
        clash = np.any((np.isposinf(theta) & (y == 0)) | (np.isneginf(theta) & (y == 1)))
        k = int(y.sum())
        if clash or f[k] == -np.inf:
            scores.append(None)
            continue
        scores.append(
            Fraction(f[k]) + sum((Fraction(t) for t, on in zip(theta, y) if on and np.isfinite(t)), Fraction())
        )
    allowed = [s for s in scores if s is not None]
    if not allowed:
        raise ValueError("no configuration")
    best = max(allowed)
    w = np.array([0.0 if s is None else math.exp(max(float(max(s - best, -2000)), -2000.0)) for s in scores])
    p = w / w.sum()
    try:
        log_z = float(best) + math.log(w.sum())
    except OverflowError:
        log_z = math.inf if best > 0 else -math.inf
    return p @ ys, np.bincount(ys.sum(axis=1), weights=p, minlength=d + 1), log_z


def _assert_matches(res, p_on, counts, log_z):
    assert res.status == "optimal"
    # 1e-9: the engines run on a model of moderate scores (see the module docstring)
    np.testing.assert_allclose(res.p_on, p_on, rtol=0, atol=1e-9)
    np.testing.assert_allclose(res.count_marginals, counts, rtol=0, atol=1e-9)
    assert abs(res.count_marginals.sum() - 1.0) < 1e-12
    assert res.log_partition == pytest.approx(log_z, rel=1e-12, abs=1e-9)


_RANGE = "must keep the log partition function and the best configuration's score within float64's range"


def _cardinality_engines():
    return {
        "marginals": cardinality.marginals,
        "fft": lambda t, f: cardinality.marginals(t, f, method="fft"),
        "chain_marginals": cardinality.chain_marginals,
        "batch_chain": lambda t, f: _row(cardinality.marginals_batch(np.asarray(t)[None], f, method="chain")),
        "batch_tree": lambda t, f: _row(cardinality.marginals_batch(np.asarray(t)[None], f, method="direct")),
    }


class _Row:
    def __init__(self, batch):
        self.status = batch.status
        self.p_on = batch.p_on[0]
        self.count_marginals = batch.count_marginals[0]
        self.log_partition = float(batch.log_partition[0])


def _row(batch) -> _Row:
    return _Row(batch)


# ----------------------------------------------------------------------------- cardinality: the sweep's cases


def test_count_marginals_at_1e300_sum_to_one_and_match_enumeration():
    """The sweep's case: the convolution tree gave count marginals [0, 1, 1, 0, 1] (sum 3), the chain
    [0, 1/3, 1/3, 0, 1/3]; by exact enumeration the two configurations of count 1 tie with the ones of counts
    2 and 4 at 2e300: [0, 1/2, 1/4, 0, 1/4] (``1e300 + log 2`` had lost its ``log 2``)."""
    theta, f = [1e300, 0.0, 1e300, 0.0], [-1e300, 1e300, 0.0, -1e300, 0.0]
    for name, run in _cardinality_engines().items():
        res = run(theta, f)
        np.testing.assert_allclose(res.count_marginals, [0, 0.5, 0.25, 0, 0.25], atol=1e-12, err_msg=name)
        np.testing.assert_allclose(res.p_on, [0.75, 0.25, 0.75, 0.25], atol=1e-12, err_msg=name)
        assert res.log_partition == 2e300, name
    assert cardinality.log_partition(theta, f) == 2e300


def test_moderate_scores_hidden_next_to_huge_ones_keep_their_weight():
    """``1e300 + 0.5`` is ``1e300`` in float64, yet the variable with 0.5 (next to one of 1e300 that every
    configuration that matters turns on) has ``P = sigmoid(0.5)``: the reduction keeps scores relative."""
    theta = np.array([1e300, 0.5, -0.3])
    res = cardinality.marginals(theta, np.zeros(4))
    np.testing.assert_allclose(res.p_on, [1.0, expit(0.5), expit(-0.3)], rtol=1e-12)
    assert cardinality.map_assignment(theta, np.zeros(4)).assignment.tolist() == [1, 1, 0]


@pytest.mark.parametrize("name", list(_cardinality_engines()))
def test_scores_near_1e308_give_correct_answers_not_numpy_errors(name):
    """Before: "Too many bins for data range" (NumPy, naming no argument) from the tree and an
    OverflowError from the chain. The best configuration scores BIG + 1: finite."""
    theta = np.array([BIG, 0.0, -BIG, 1.0])
    f = np.array([0.0, 1.0, -BIG, 0.0, BIG])
    p_on, counts, log_z = _exact_cardinality(theta, f)
    _assert_matches(_cardinality_engines()[name](theta, f), p_on, counts, log_z)


@pytest.mark.parametrize("name", [*_cardinality_engines(), "log_partition", "map_assignment"])
def test_a_log_partition_beyond_float64_is_refused_naming_theta_and_f(name):
    theta, f = np.array([BIG, BIG, 0.0]), np.array([0.0, 0.0, BIG, 0.0])  # best: 3 * BIG
    run = {**_cardinality_engines(), "log_partition": cardinality.log_partition}.get(name)
    run = run or cardinality.map_assignment
    with pytest.raises(ValueError, match=re.escape("`theta` and `f` " + _RANGE)):
        run(theta, f)


def test_sampling_needs_no_log_partition_and_draws_the_best_configuration():
    theta, f = np.array([BIG, BIG, 0.0]), np.array([0.0, 0.0, BIG, -np.inf])
    s = cardinality.sample(theta, f, size=50, rng=0)
    assert s.tolist() == [[1, 1, 0]] * 50


_MAGNITUDES = [0.0, 1.0, -1.0, 0.5, R, -R, 2 * R, BIG, -BIG]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 5).flatmap(
        lambda d: st.tuples(
            st.lists(st.sampled_from([*_MAGNITUDES, np.inf, -np.inf]), min_size=d, max_size=d),
            st.lists(st.sampled_from([*_MAGNITUDES, -np.inf]), min_size=d + 1, max_size=d + 1),
        )
    )
)
def test_cardinality_engines_match_exact_enumeration_at_any_magnitude(model):
    theta, f = (np.array(a, dtype=float) for a in model)
    try:
        p_on, counts, log_z = _exact_cardinality(theta, f)
    except ValueError:
        with pytest.raises(ZeroPartitionError):
            cardinality.marginals(theta, f)
        return
    for run in _cardinality_engines().values():
        if not np.isfinite(log_z):
            with pytest.raises(ValueError, match=re.escape(_RANGE)):
                run(theta, f)
            continue
        _assert_matches(run(theta, f), p_on, counts, log_z)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(_MAGNITUDES), min_size=1, max_size=6),
    st.lists(st.sampled_from([*_MAGNITUDES, -np.inf]), min_size=7, max_size=7),
)
def test_map_assignment_is_exact_at_any_magnitude(theta, f):
    theta = np.array(theta)
    f = np.array(f[: theta.shape[0] + 1])
    if not np.any(f > -np.inf):
        return
    ys = np.array(list(itertools.product([0, 1], repeat=theta.shape[0])))
    exact_scores = [
        Fraction(f[y.sum()]) + sum((Fraction(t) for t, on in zip(theta, y) if on), Fraction())
        for y in ys
        if f[y.sum()] > -np.inf
    ]
    best = max(exact_scores)
    if abs(best) > Fraction(np.finfo(float).max):
        with pytest.raises(ValueError, match=re.escape(_RANGE)):
            cardinality.map_assignment(theta, f)
        return
    res = cardinality.map_assignment(theta, f)
    y = res.assignment
    got = Fraction(f[y.sum()]) + sum((Fraction(t) for t, on in zip(theta, y) if on), Fraction())
    assert got == best and res.score == float(best) and res.status == "optimal"


def test_huge_scores_used_as_clamps_on_many_variables_equal_clamping():
    """±1e300 as "hard-ish evidence" on 2000 variables: the same marginals as clamping with ±inf, and
    ``log Z`` larger by the clamped-on scores."""
    rng = np.random.default_rng(0)
    theta = rng.normal(size=2000)
    theta[:7], theta[7:12] = 1e300, -1e300
    f = np.where(np.abs(np.arange(2001) - 700) <= 3, rng.normal(size=2001), -np.inf)
    clamped = np.where(np.abs(theta) > 1e10, np.sign(theta) * np.inf, theta)
    for run in (cardinality.marginals, cardinality.chain_marginals):
        res, ref = run(theta, f), run(clamped, f)
        # 1e-12: the same moderate model up to the order of the variables
        np.testing.assert_allclose(res.p_on, ref.p_on, rtol=0, atol=1e-12)
        np.testing.assert_allclose(res.count_marginals, ref.count_marginals, rtol=0, atol=1e-12)
        assert res.log_partition == pytest.approx(7e300, rel=1e-15)


@pytest.mark.parametrize("scale", [3e3, 2e4])
def test_convolution_tree_with_widely_spread_theta_matches_the_chain(scale):
    """Before: a first pass centred far from the posterior mass (the saddle-point target bins ``theta``:
    bins 70 wide here), each pass resolving 1-3 counts, and the 64-pass budget spent on the way: count
    marginals one count off (1.0 absolute) and ``log Z`` 6% low, with status optimal. The log-space chain is
    the reference."""
    rng = np.random.default_rng(0)
    theta, f = rng.normal(size=347) * scale, rng.normal(size=348)
    ref = cardinality.chain_marginals(theta, f)
    for method in ("auto", "fft"):
        res = cardinality.marginals(theta, f, method=method)
        # 1e-9: the package's stated accuracy against the chain (docs/cardinality.md)
        np.testing.assert_allclose(res.p_on, ref.p_on, rtol=0, atol=1e-9)
        np.testing.assert_allclose(res.count_marginals, ref.count_marginals, rtol=0, atol=1e-9)
        assert res.log_partition == pytest.approx(ref.log_partition, rel=1e-12)
        assert cardinality.log_partition(theta, f, method=method) == pytest.approx(ref.log_partition, rel=1e-12)


def test_count_marginals_are_normalized_by_their_sum():
    """Scores near 2**19 (below the reduction): ``exp(x - log Z)`` had rounding of ~1e-10 per entry."""
    rng = np.random.default_rng(1)
    theta = rng.normal(size=64) * 3e5
    f = rng.normal(size=65) * 3e5
    for res in (cardinality.chain_marginals(theta, f), cardinality.marginals(theta, f)):
        assert abs(res.count_marginals.sum() - 1.0) < 1e-14
    batch = cardinality.marginals_batch(np.stack([theta, theta]), f, method="chain")
    assert np.all(np.abs(batch.count_marginals.sum(axis=1) - 1.0) < 1e-14)


# ----------------------------------------------------------------------------- cardinality: no configuration


_DEAD = [
    ("marginals", lambda: cardinality.marginals(np.zeros(3), np.full(4, -np.inf))),
    ("chain_marginals", lambda: cardinality.chain_marginals(np.zeros(3), np.full(4, -np.inf))),
    ("log_partition", lambda: cardinality.log_partition(np.zeros(3), np.full(4, -np.inf))),
    ("sample", lambda: cardinality.sample(np.zeros(3), np.full(4, -np.inf))),
    ("map_assignment", lambda: cardinality.map_assignment(np.zeros(3), np.full(4, -np.inf))),
    ("clamped", lambda: cardinality.marginals([np.inf, 0.0, 0.0], [0.0, -np.inf, -np.inf, -np.inf])),
    ("batch", lambda: cardinality.marginals_batch(np.zeros((2, 3)), [[0.0] * 4, [-np.inf] * 4])),
    (
        "recursive",
        lambda: cardinality.RecursiveCardinalityModel(
            2, [[0, 1]], [[0.0, -np.inf, -np.inf]], [np.inf, 0.0]
        ).marginals(),
    ),
    ("tree", lambda: cardinality.TreeCardinalityModel([[0, 1]], np.zeros((1, 2, 2)), np.zeros(2), [-np.inf] * 3)),
]


@pytest.mark.parametrize("name, run", _DEAD, ids=[d[0] for d in _DEAD])
def test_no_configuration_is_a_zero_partition_error(name, run):
    """docs/conventions.md: a model without a configuration of positive probability raises
    ``tractable.ZeroPartitionError`` (a ``ValueError`` too); the cardinality area raised a plain ValueError."""
    with pytest.raises(ZeroPartitionError, match="no configuration has non-zero probability"):
        run()


def test_an_all_minus_inf_count_potential_is_a_zero_partition_error():
    with pytest.raises(ZeroPartitionError):
        cardinality.RecursiveCardinalityModel(2, [[0, 1]], [[-np.inf, -np.inf, -np.inf]])


# ----------------------------------------------------------------------------- recursive / tree models


def test_recursive_and_tree_models_refuse_huge_scores_naming_the_argument():
    why = "use ±inf to clamp a variable or forbid a count"
    with pytest.raises(ValueError, match=re.escape("`unary` must hold finite values of magnitude at most 1.04858e+06")):
        cardinality.RecursiveCardinalityModel(2, [[0, 1]], [np.zeros(3)], [1e300, 0.0])
    with pytest.raises(ValueError, match=re.escape("`count_potentials[1]` must hold finite values") + ".*" + why):
        cardinality.RecursiveCardinalityModel(3, [[0, 1, 2], [0, 1]], [np.zeros(4), [0.0, -1e308, 0.0]])
    with pytest.raises(ValueError, match=re.escape("`unary` must hold finite values") + ".*" + why):
        cardinality.RecursiveCardinalityModel(2, [[0, 1]], [np.zeros(3)]).with_unary([0.0, -1e300])
    edges, pw = [[0, 1]], np.zeros((1, 2, 2))
    for name, args in [
        ("unary", (edges, pw, [1e300, 0.0], np.zeros(3))),
        ("pairwise", (edges, np.full((1, 2, 2), 1e308), np.zeros(2), np.zeros(3))),
        ("count_potential", (edges, pw, np.zeros(2), [0.0, 3e6, 0.0])),
    ]:
        with pytest.raises(ValueError, match=re.escape(f"`{name}` must hold finite values of magnitude at most")):
            cardinality.TreeCardinalityModel(*args)
    cardinality.TreeCardinalityModel(edges, pw, [np.inf, 2.0**20], [0.0, -np.inf, 0.0])  # the limit itself is fine


# ----------------------------------------------------------------------------- exact


def _agreeing(reward: float, unary) -> FactorGraph:
    fg = FactorGraph([2] * len(unary))
    for i, u in enumerate(unary):
        fg.add_factor(TableFactor([i], [0.0, u]))
    for i in range(len(unary) - 1):
        fg.add_factor(TableFactor([i, i + 1], [[reward, -reward], [-reward, reward]]))
    return fg


@pytest.mark.parametrize("method", ["enumerate", "variable_elimination"])
@pytest.mark.parametrize("reward", [1e15, 1e300, 1e308])
def test_exact_with_huge_cancelling_rewards_is_exact(method, reward):
    """Two variables that must agree (reward R, penalty -R): by hand ``P(both on) = sigmoid(0.3 + 0.2)``,
    ``log Z = R + log(1 + e^0.5)``. Before: NaN marginals with status optimal at 1e308 (1e308 + 1e308 =
    inf, inf - inf = NaN)."""
    fg = _agreeing(reward, [0.3, 0.2])
    res = exact.infer(fg, method=method)
    p = expit(0.5)
    # 1e-12: the huge reward cancels exactly in the shifted tables
    np.testing.assert_allclose(res.marginals, [[1 - p, p], [1 - p, p]], rtol=1e-12)
    assert res.status == "optimal" and res.log_partition == pytest.approx(reward + np.log1p(np.exp(0.5)), rel=1e-15)
    best = exact.infer(fg, method=method, task="map")
    assert best.assignment.tolist() == [1, 1] and best.score == pytest.approx(reward + 0.5, rel=1e-15)


_FG_RANGE = "`fg` must keep the log partition function and the scores of its labellings within float64's range"


@pytest.mark.parametrize("method", ["enumerate", "variable_elimination"])
def test_exact_refuses_a_log_partition_or_score_beyond_float64(method):
    fg = _agreeing(1e308, [0.0, 0.0, 0.0])  # best: 2e308
    with pytest.raises(ValueError, match=re.escape(_FG_RANGE) + ".*log partition beyond it"):
        exact.infer(fg, method=method)
    with pytest.raises(ValueError, match=re.escape(_FG_RANGE) + ".*score beyond it"):
        exact.infer(fg, method=method, task="map")


def test_exact_scores_far_apart_that_cancel_only_in_the_best_labelling():
    """Every table's entries are 2e308 apart, yet the allowed labellings score 0: enumeration sums the
    shifted tables scaled (exactly) and gets them; variable elimination, whose shifted tables lose the
    entries 2e308 below their maximum, refuses instead of reporting no support."""
    fg = FactorGraph([2, 2])
    fg.add_factor(TableFactor([0, 1], [[1e308, -1e308], [-1e308, 1e308]]))
    fg.add_factor(TableFactor([0, 1], [[-np.inf, 1e308], [1e308, -np.inf]]))
    res = exact.infer(fg, method="enumerate")
    np.testing.assert_allclose(res.marginals, [[0.5, 0.5], [0.5, 0.5]])
    assert res.log_partition == pytest.approx(np.log(2.0))
    with pytest.raises(ValueError, match=re.escape("`fg` must hold finite scores within float64's range of each")):
        exact.infer(fg, method="variable_elimination")
    fg.add_factor(TableFactor([0], [-np.inf, -np.inf]))  # now truly no support: still a ZeroPartitionError
    for method in ("enumerate", "variable_elimination"):
        with pytest.raises(ZeroPartitionError):
            exact.infer(fg, method=method)


# ----------------------------------------------------------------------------- FactorGraph.score


def test_factor_graph_score_sums_huge_scores_without_overflow():
    fg = FactorGraph([2, 2])
    fg.add_factor(TableFactor([0], [1e308, -1e308]))
    fg.add_factor(TableFactor([0, 1], [[1e308, 0.0], [-np.inf, -1e308]]))
    fg.add_factor(TableFactor([1], [-1e308, 0.5]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow RuntimeWarning
        got = fg.score([[0, 0], [0, 1], [1, 0], [1, 1]])
        one = fg.score([0, 0])
    # 1e308 + 1e308 - 1e308 = 1e308 (no inf on the way); forbidden; beyond range below: -inf
    assert got.tolist() == [1e308, 1e308, -np.inf, -np.inf] and one == 1e308
    fg.add_factor(TableFactor([1], [1e308, 1e308]))
    assert fg.score([0, 0]) == np.inf  # beyond range above: +inf, which the algorithms refuse


# ----------------------------------------------------------------------------- clique


_CLIQUE_METHODS = [
    ("alpha_pass", lambda phi, pot: clique.alpha_pass(phi, pot)),
    ("generalized_alpha_pass", lambda phi, pot: clique.generalized_alpha_pass(phi, pot)),
    ("alpha_expansion", lambda phi, pot: clique.alpha_expansion(phi, pot)),
    ("icm", lambda phi, pot: clique.icm(phi, pot)),
    ("exact_clique_map", lambda phi, pot: clique.exact_clique_map(phi, pot)),
    ("clique_map", lambda phi, pot: clique.clique_map(phi, pot)),
    ("majority_alpha_pass", lambda phi, pot: clique.majority_alpha_pass(phi, np.eye(2))),
    ("majority_exact", lambda phi, pot: clique.majority_exact(phi, np.eye(2))),
    ("alpha_pass_batch", lambda phi, pot: clique.alpha_pass_batch(phi[None], pot)),
    ("score", lambda phi, pot: clique.score(phi, pot, [0, 0, 1])),
]


@pytest.mark.parametrize("name, run", _CLIQUE_METHODS, ids=[m[0] for m in _CLIQUE_METHODS])
def test_clique_methods_refuse_node_scores_whose_sum_could_overflow(name, run):
    """Before: ``score=inf`` with status optimal / converged (two nodes of 1e308 summed)."""
    phi = np.array([[1e308, 0.0], [1e308, 0.0], [0.0, 1.0]])
    msg = "`phi` must hold finite values of magnitude at most 1.66667e+299 (5e+299 / n for n = 3 nodes"
    with pytest.raises(ValueError, match=re.escape(msg)):
        run(phi, clique.Potts(1.0))
    ok = np.array([[1e299, 0.0], [1e299, 0.0], [0.0, 1.0]])  # within the limit: finite scores
    res = run(ok, clique.Potts(1.0))
    score = res if name == "score" else res.score
    assert np.all(np.isfinite(score))


def test_clique_potentials_whose_values_could_overflow_are_refused():
    phi = np.zeros((4, 2))
    with pytest.raises(ValueError, match=re.escape("`potential` Potts(1e+300) must keep its values within 5e+299")):
        clique.alpha_pass(phi, clique.Potts(1e300))
    with pytest.raises(
        ValueError, match=re.escape("`potential.W` must hold finite values of magnitude at most 5e+299")
    ):
        clique.majority_exact(phi, np.full((2, 2), 1e300))
    huge = clique.CountPotential(lambda c: np.where(c[..., 0] == 2, 1e300, 0.0))  # any function: checked on use
    for run in (clique.exact_clique_map, clique.alpha_pass, clique.icm):
        with pytest.raises(ValueError, match=re.escape("must keep its values within 5e+299 in magnitude")):
            run(np.array([[1.0, 0.0], [1.0, 0.0]]), huge)


# ----------------------------------------------------------------------------- adaptive MMP


def test_adaptive_mmp_refuses_a_decided_score_beyond_float64():
    """Before: ``score=inf`` with status converged (and an overflow RuntimeWarning from ``fg.score``)."""
    fg = FactorGraph([2, 2])
    fg.add_factor(TableFactor([0], [1e308, 0.0]))
    fg.add_factor(TableFactor([0, 1], [[1e308, 0.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=re.escape("`fg` must keep the scores of its labellings within float64's")):
        sampling.adaptive_mmp(fg, rng=0)


def test_adaptive_mmp_scores_huge_cancelling_factors_finitely():
    fg = FactorGraph([2, 2])
    fg.add_factor(TableFactor([0], [1e308, 0.0]))
    fg.add_factor(TableFactor([0, 1], [[1e308, 0.0], [0.0, 0.0]]))
    fg.add_factor(TableFactor([1], [-1e308, -np.inf]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow on the way
        res = sampling.adaptive_mmp(fg, rng=0)
    assert res.assignment.tolist() == [0, 0] and res.score == 1e308  # 1e308 + 1e308 - 1e308


# ----------------------------------------------------------------------------- HL-MRF reference solvers


def _unconstrained(coefficient=1.0, constant=0.0, weight=1.0, squared=False) -> HLMRF:
    model = HLMRF(2)
    model.add_potential([0, 1], [coefficient, -1.0], constant, weight, squared=squared)
    model.add_potential([1], [-1.0], 0.5, 1.0, squared=squared)
    return model


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"coefficient": 1e300}, "`coefficients` of potential 0 must be below 1e+15 in magnitude"),
        ({"coefficient": 1e15}, "`coefficients` of potential 0 must be below 1e+15 in magnitude"),
        ({"weight": 1e300}, "`weights` of potential 0 must be below 1e+20 in magnitude"),
        ({"constant": -1e20}, "`constants` of potential 0 must be below 1e+20 in magnitude"),
    ],
)
@pytest.mark.parametrize("method", ["highs", "clarabel"])
def test_reference_solvers_refuse_magnitudes_they_read_as_infinite(kwargs, message, method):
    """Before: HiGHS called the unconstrained (feasible) model with a coefficient of 1e300 infeasible;
    Clarabel answered "error" with NaN for a weight of 1e300."""
    if method == "clarabel":
        pytest.importorskip("clarabel")
    with pytest.raises(ValueError, match=re.escape(f"{message} for `method`={method!r}")):
        solve(_unconstrained(**kwargs), method=method)
    model = _unconstrained()
    model.add_constraint([0, 1], [1e16, 1.0], -2.0)
    with pytest.raises(ValueError, match=re.escape("`coefficients` of constraint 0 must be below 1e+15")):
        solve(model, method=method)


def test_reference_solvers_at_large_but_representable_magnitudes_never_claim_infeasible():
    """Clarabel's interior point loses its way on a weight of 1e15 and reported "infeasible" for a model
    without constraints; now that claim is checked against the constraints (HiGHS) and becomes "error"."""
    pytest.importorskip("clarabel")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the ConvergenceWarning of a result that is not optimal
        for kwargs in ({"weight": 1e15}, {"constant": 1e15}, {"coefficient": 1e14}):
            for method in ("highs", "clarabel"):
                res = solve(_unconstrained(**kwargs), method=method)
                assert res.status != "infeasible", (kwargs, method)
                if res.status == "optimal":
                    assert np.all(np.isfinite(res.x)) and np.isfinite(res.objective)
    assert solve(_unconstrained(constant=1e15), method="highs").objective == pytest.approx(1e15, rel=1e-12)
