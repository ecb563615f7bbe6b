import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _oracles import brute_force
from tractable import FactorGraph, TableFactor
from tractable.datasets import grid_factor_graph, random_factor_graph
from tractable.exact import (
    elimination_order,
    enumerate_map,
    enumerate_marginals,
    infer,
    variable_elimination,
)

# Both exact algorithms sum the same float64 terms in different orders: agreement to 1e-9 leaves
# room for rounding in log-sum-exp over up to ~10^3 terms while catching any real error.
TOL = 1e-9


@st.composite
def graphs(draw):
    seed = draw(st.integers(0, 2**31 - 1))
    n = draw(st.integers(1, 6))
    n_factors = draw(st.integers(0, 8))
    p_forbidden = draw(st.sampled_from([0.0, 0.2, 0.5]))
    return random_factor_graph(n, n_factors, max_cardinality=3, max_arity=3, scale=2.0,
                               p_forbidden=p_forbidden, rng=seed)


def _has_support(fg):
    return brute_force(fg)[0] > -np.inf


@settings(max_examples=120, deadline=None)
@given(graphs())
def test_enumeration_and_elimination_match_brute_force(fg):
    log_z, marginals, best = brute_force(fg)
    if log_z == -np.inf:
        for fn in (enumerate_marginals, enumerate_map, variable_elimination):
            with pytest.raises(ValueError, match="no configuration has non-zero probability"):
                fn(fg)
        return
    for res in (enumerate_marginals(fg), variable_elimination(fg, "marginals")):
        assert res.log_partition == pytest.approx(log_z, abs=TOL, rel=TOL)
        for m, ref in zip(res.marginals, marginals):
            np.testing.assert_allclose(m, ref, atol=TOL)
    for res in (enumerate_map(fg), variable_elimination(fg, "map")):
        assert res.score == pytest.approx(best, abs=TOL, rel=TOL)
        assert fg.score(res.assignment) == pytest.approx(res.score, abs=TOL, rel=TOL)


@settings(max_examples=80, deadline=None)
@given(graphs(), st.data())
def test_evidence_matches_brute_force_on_conditioned_graph(fg, data):
    n = fg.n_variables
    observed = data.draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n))
    evidence = {v: data.draw(st.integers(0, int(fg.cardinalities[v]) - 1)) for v in observed}
    sub = fg.condition(evidence)
    log_z, marginals, best = brute_force(sub)
    if log_z == -np.inf:
        with pytest.raises(ValueError, match="no configuration"):
            infer(fg, evidence=evidence)
        return
    for method in ("enumerate", "ve"):
        res = infer(fg, "marginals", method=method, evidence=evidence)
        assert res.log_partition == pytest.approx(log_z, abs=TOL, rel=TOL)
        for v in range(n):
            if v in evidence:
                assert res.marginals[v][evidence[v]] == 1.0
            else:
                k = int(np.flatnonzero(sub.kept_variables == v)[0])
                np.testing.assert_allclose(res.marginals[v], marginals[k], atol=TOL)
        m = infer(fg, "map", method=method, evidence=evidence)
        assert all(m.assignment[v] == s for v, s in evidence.items())
        assert m.score == pytest.approx(best, abs=TOL, rel=TOL)


def test_log_partition_of_evidence_is_log_probability():
    fg = random_factor_graph(5, 6, rng=3)
    full = enumerate_marginals(fg)
    res = infer(fg, evidence={2: 1})
    # log P(x2 = 1) = log Z(x2 = 1) - log Z
    assert np.exp(res.log_partition - full.log_partition) == pytest.approx(full.marginals[2][1], rel=1e-12)


def test_all_ones_potentials_count_configurations():
    fg = FactorGraph([2, 3, 4])
    fg.add_factor(TableFactor([0, 2], np.zeros((2, 4))))
    fg.add_factor(TableFactor([1], np.zeros(3)))
    assert variable_elimination(fg).log_partition == pytest.approx(np.log(24), rel=1e-14)


def test_disconnected_components_and_isolated_variables():
    fg = FactorGraph([2, 2, 3, 2])
    fg.add_factor(TableFactor([0, 1], np.log([[1.0, 2.0], [3.0, 4.0]])))
    fg.add_factor(TableFactor([2], np.log([1.0, 1.0, 2.0])))
    res = variable_elimination(fg)
    assert res.log_partition == pytest.approx(np.log(10 * 4 * 2), rel=1e-14)
    np.testing.assert_allclose(res.marginals[3], [0.5, 0.5], rtol=1e-14)
    np.testing.assert_allclose(res.marginals[2], [0.25, 0.25, 0.5], rtol=1e-14)


def test_grid_elimination_matches_enumeration():
    fg = grid_factor_graph(3, 4, n_states=3, rng=1)
    a = enumerate_marginals(fg)
    b = variable_elimination(fg)
    assert b.log_partition == pytest.approx(a.log_partition, rel=1e-12)
    for x, y in zip(a.marginals, b.marginals):
        np.testing.assert_allclose(x, y, atol=1e-12)
    assert variable_elimination(fg, "map").score == pytest.approx(enumerate_map(fg).score, rel=1e-12)


def test_map_ties_break_to_first_assignment():
    fg = FactorGraph([2, 2])
    fg.add_factor(TableFactor([0, 1], np.zeros((2, 2))))
    assert enumerate_map(fg).assignment.tolist() == [0, 0]


@pytest.mark.parametrize("heuristic", ["auto", "min_fill", "weighted_min_fill", "min_weight", "min_degree"])
def test_every_heuristic_gives_exact_results(heuristic):
    fg = grid_factor_graph(3, 4, n_states=3, rng=2)
    order, _ = elimination_order(fg, heuristic=heuristic)
    ref = enumerate_marginals(fg)
    res = variable_elimination(fg, order=order)
    assert res.log_partition == pytest.approx(ref.log_partition, rel=1e-12)


def test_min_fill_order_on_a_chain_keeps_tables_small():
    fg = FactorGraph([3] * 30)
    for v in range(29):
        fg.add_factor(TableFactor([v, v + 1], np.zeros((3, 3))))
    order, biggest = elimination_order(fg)
    assert sorted(order) == list(range(30)) and biggest == 9


def test_table_size_limit_is_checked_before_allocation():
    fg = grid_factor_graph(10, 10, rng=0)
    with pytest.raises(ValueError, match=re.escape("more than `max_table_size`=1000")):
        variable_elimination(fg, max_table_size=1000)
    with pytest.raises(ValueError, match=re.escape("more than `max_states`=65536")):
        enumerate_marginals(fg, max_states=2**16)


def test_inputs_are_not_mutated():
    fg = random_factor_graph(4, 5, rng=0)
    before = [f.log_table.copy() for f in fg.factors]
    variable_elimination(fg)
    infer(fg, "map", evidence={0: 1})
    assert all(np.array_equal(a, f.log_table) for a, f in zip(before, fg.factors))


@pytest.mark.parametrize(
    "call, exc, message",
    [
        (lambda fg: variable_elimination(fg, task="mar"), ValueError, "`task` must be one of 'marginals', 'map'"),
        (lambda fg: variable_elimination(fg, order=[0, 1]), ValueError, "`order` must list every variable"),
        (lambda fg: infer(fg, method="bp"), ValueError, "`method` must be one of 'auto', 'enumerate', 've'"),
        (lambda fg: infer(fg, evidence={9: 0}), ValueError, "unknown variable 9"),
        (lambda fg: infer(fg, evidence={0: 5}), ValueError, "`evidence` gives variable 0 the state 5"),
        (lambda fg: enumerate_marginals("model"), TypeError, "`fg` must be a FactorGraph; got str."),
        (lambda fg: elimination_order(fg, heuristic="fast"), ValueError, "`heuristic` must be one of 'auto',"),
    ],
)
def test_bad_input_messages(call, exc, message):
    fg = random_factor_graph(4, 4, rng=0)
    with pytest.raises(exc, match=re.escape(message)):
        call(fg)
