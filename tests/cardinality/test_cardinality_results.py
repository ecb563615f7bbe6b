"""The library's grammar in the cardinality package: result shapes and fields, read-only arrays,
keyword-only options, method resolution, the validation-free cores and ``with_unary``."""

import dataclasses
import re

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit

from _oracles import BinaryEnumeration
from tractable.cardinality import (
    METHODS,
    CardinalityMarginals,
    RecursiveCardinalityModel,
    TreeCardinalityModel,
    chain_marginals,
    log_partition,
    map_assignment,
    marginals,
    sample,
)
from tractable.cardinality import recursive as recursive_module
from tractable.cardinality.chain import _chain_core
from tractable.cardinality.convolution_tree import _log_partition_core, _marginals_core

SUBSETS = [[0, 1, 2, 3, 4, 5], [0, 1, 2], [3, 4], [5]]


def _problem(rng, d=6):
    theta = rng.normal(0, 2, d)
    f = rng.normal(0, 1, d + 1)
    return theta, f


def _recursive(rng, unary=None, **options):
    pots = [rng.normal(0, 1, len(s) + 1) for s in SUBSETS]
    return RecursiveCardinalityModel(6, SUBSETS, pots, unary, **options)


def _all_marginals(rng):
    theta, f = _problem(rng)
    edges = [(0, 1), (1, 2), (1, 3), (4, 3), (4, 5)]
    pw = rng.normal(0, 1, (5, 2, 2))
    return {
        "marginals": marginals(theta, f),
        "chain": chain_marginals(theta, f),
        "recursive": _recursive(rng, theta).marginals(),
        "tree": TreeCardinalityModel(edges, pw, theta, f).marginals(),
    }


def test_marginals_are_rows_of_distributions(rng):
    for name, res in _all_marginals(rng).items():
        assert isinstance(res, CardinalityMarginals), name
        assert res.marginals.shape == (6, 2), name
        assert_allclose(res.marginals.sum(axis=1), 1.0, rtol=1e-14, err_msg=name)
        assert np.array_equal(res.p_on, res.marginals[:, 1]), name
        assert res.count_marginals.shape == (7,), name


def test_results_are_read_only(rng):
    for name, res in _all_marginals(rng).items():
        for arr in (res.marginals, res.p_on, res.count_marginals):
            assert not arr.flags.writeable, name
            with pytest.raises(ValueError, match="read-only"):
                arr[0] = 0.5
        with pytest.raises(dataclasses.FrozenInstanceError):
            res.log_partition = 0.0


def test_exact_status_fields(rng):
    theta, f = _problem(rng)
    results = dict(_all_marginals(rng))
    results["map"] = map_assignment(theta, f)
    results["recursive map"] = _recursive(rng, theta).map_assignment()
    results["tree map"] = TreeCardinalityModel([(0, 1)], np.zeros((1, 2, 2)), theta, f).map_assignment()
    for name, res in results.items():
        assert res.converged is True and res.n_iter == 0 and res.status == "optimal", name
        assert res.message == f"{res.method}: exact solution", name
        assert res.time >= 0, name
    assert not results["map"].assignment.flags.writeable


def test_method_is_the_name_passed(rng):
    theta, f = _problem(rng)
    for method in METHODS:
        assert marginals(theta, f, method=method).method == method
        assert _recursive(rng, theta, method=method).marginals().method == method
    assert chain_marginals(theta, f).method == "chain"
    assert list(METHODS) == ["auto", "fft", "direct"]


def test_complement_keeps_relative_accuracy():
    # P(y = 0) = sigmoid(-40) ~ 4e-18 would be 0 as 1 - P(y = 1)
    theta = np.array([40.0, -40.0, 0.0])
    want = expit(np.array([-40.0, 40.0, 0.0]))
    pw = np.zeros((0, 2, 2))
    for res in (
        marginals(theta, np.zeros(4)),
        chain_marginals(theta, np.zeros(4)),
        RecursiveCardinalityModel(3, [[0, 1, 2]], [np.zeros(4)], theta).marginals(),
        TreeCardinalityModel(np.zeros((0, 2), int), pw, theta, np.zeros(4)).marginals(),
    ):
        assert_allclose(res.marginals[:, 0], want, rtol=1e-12, err_msg=res.method)
        assert_allclose(res.marginals[:, 1], expit(theta), rtol=1e-12, err_msg=res.method)


def test_clamped_variables_give_exact_rows():
    res = marginals([np.inf, -np.inf, 0.0], [0.0, 0.0, 0.0, 0.0])
    assert_array_equal(res.marginals[:2], [[0.0, 1.0], [1.0, 0.0]])


def test_options_are_keyword_only(rng):
    theta, f = _problem(rng)
    with pytest.raises(TypeError):
        sample(theta, f, 3)
    with pytest.raises(TypeError):
        chain_marginals(theta, f, 4)
    with pytest.raises(TypeError):
        marginals(theta, f, "fft")
    with pytest.raises(TypeError):
        log_partition(theta, f, "fft")
    m = _recursive(rng, theta)
    with pytest.raises(TypeError):
        m.sample(3)
    with pytest.raises(TypeError):
        RecursiveCardinalityModel(6, SUBSETS, m.count_potentials, theta, "fft")
    with pytest.raises(TypeError):
        TreeCardinalityModel([(0, 1)], np.zeros((1, 2, 2)), theta, f).sample(3)


def test_unknown_method_lists_the_valid_names(rng):
    theta, f = _problem(rng)
    msg = "`method` must be one of 'auto', 'fft', 'direct'; got 'fast'."
    for call in (
        lambda: marginals(theta, f, method="fast"),
        lambda: log_partition(theta, f, method="fast"),
        lambda: sample(theta, f, method="fast"),
        lambda: _recursive(rng, method="fast"),
    ):
        with pytest.raises(ValueError, match=re.escape(msg)):
            call()


def test_crossover_only_applies_to_auto(rng):
    theta, f = _problem(rng)
    msg = "`crossover` does not apply to `method`='fft' (its options: none)."
    for call in (
        lambda: marginals(theta, f, method="fft", crossover=10),
        lambda: sample(theta, f, method="fft", crossover=10),
        lambda: _recursive(rng, method="fft", crossover=10),
    ):
        with pytest.raises(ValueError, match=re.escape(msg)):
            call()
    with pytest.raises(ValueError, match=re.escape("`crossover` must be >= 1; got 0.")):
        marginals(theta, f, crossover=0)
    assert _recursive(rng, method="auto", crossover=8).crossover == 8


def test_cores_match_the_public_functions_without_validation(rng):
    theta, f = _problem(rng, d=300)
    theta[[3, 7]] = [np.inf, -np.inf]
    f.flags.writeable = False  # the cores neither copy nor modify their input
    t0, f0 = theta.copy(), f.copy()
    res = marginals(theta, f)
    log_odds, count, logz, n_passes = _marginals_core(theta, f, "auto", 48)
    assert_array_equal(expit(log_odds), res.p_on)
    assert_array_equal(count, res.count_marginals)
    assert logz == res.log_partition and n_passes == res.n_passes
    assert log_odds[3] == np.inf and log_odds[7] == -np.inf
    assert _log_partition_core(theta, f, "auto", 48) == log_partition(theta, f)
    chain = chain_marginals(theta, f)
    log_odds, count, logz = _chain_core(theta, f)
    assert_array_equal(expit(log_odds), chain.p_on)
    assert logz == chain.log_partition
    assert_array_equal(theta, t0)
    assert_array_equal(f, f0)


def test_core_gives_the_outgoing_messages_of_belief_propagation(rng):
    # log_odds - theta is the sum-product message of the factor exp(f(count)) to each variable
    theta, f = _problem(rng)
    log_odds = _marginals_core(theta, f)[0]
    for d in range(6):
        cavity = np.delete(theta, d)
        on = BinaryEnumeration(5, unary=cavity, count=f[1:]).log_partition
        off = BinaryEnumeration(5, unary=cavity, count=f[:-1]).log_partition
        assert_allclose(log_odds[d] - theta[d], on - off, rtol=1e-10)


def test_sampling_with_several_passes_is_reproducible():
    rng = np.random.default_rng(6)
    d = 1500
    theta = rng.normal(0, 1, d)
    f = np.full(d + 1, -np.inf)
    f[20] = 0.0
    f[1400] = 0.0
    a = sample(theta, f, size=40, rng=5)
    assert_array_equal(a, sample(theta, f, size=40, rng=5))
    assert set(a.sum(axis=1).tolist()) <= {20, 1400}


def test_with_unary_shares_the_structure(rng, monkeypatch):
    m = _recursive(rng, rng.normal(size=6))
    unary = rng.normal(0, 2, 6)
    unary[2] = np.inf

    def rebuild(*args, **kwargs):
        raise AssertionError("with_unary must not rebuild the structure")

    monkeypatch.setattr(recursive_module, "build_structure", rebuild)
    with pytest.raises(AssertionError, match="must not rebuild"):  # the constructor builds
        RecursiveCardinalityModel(6, SUBSETS, m.count_potentials, unary)
    m2 = m.with_unary(unary)
    monkeypatch.undo()
    assert m2._structure is m._structure
    fresh = RecursiveCardinalityModel(6, SUBSETS, m.count_potentials, unary)
    a, b = m2.marginals(), fresh.marginals()
    assert_array_equal(a.marginals, b.marginals)
    assert_array_equal(a.count_marginals, b.count_marginals)
    assert a.log_partition == b.log_partition
    for x, y in zip(m2.subset_count_marginals(), fresh.subset_count_marginals()):
        assert_array_equal(x, y)
    assert_array_equal(m2.map_assignment().assignment, fresh.map_assignment().assignment)
    assert_array_equal(m2.sample(size=50, rng=3), fresh.sample(size=50, rng=3))
    assert (m2.method, m2.crossover) == (m.method, m.crossover)
    # the original model is unchanged
    assert_array_equal(m.marginals().marginals, _recursive_like(m).marginals().marginals)
    with pytest.raises(ValueError, match=re.escape("`unary` must have shape (6,); got (5,).")):
        m.with_unary(np.zeros(5))


def _recursive_like(m):
    return RecursiveCardinalityModel(m.n_variables, m.subsets, m.count_potentials, m.unary)


def test_models_are_read_only(rng):
    theta, f = _problem(rng)
    m = _recursive(rng, theta)
    t = TreeCardinalityModel([(0, 1)], np.zeros((1, 2, 2)), theta, f)
    for arr in (m.unary, m.subsets[0], m.count_potentials[0], t.unary, t.count_potential, t.edges, t.pairwise):
        assert not arr.flags.writeable
    with pytest.raises(AttributeError):
        m.unary = theta
    with pytest.raises(AttributeError):
        t.count_potential = f
    assert isinstance(m.subset_count_marginals(), tuple)
