import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tractable
from _oracles import brute_force
from tractable import FactorGraph, TableFactor
from tractable.datasets import grid_factor_graph, random_factor_graph
from tractable.exact import (
    METHODS,
    ZeroPartitionError,
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
    return random_factor_graph(
        n, n_factors, max_cardinality=3, max_arity=3, scale=2.0, p_forbidden=p_forbidden, rng=seed
    )


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
    for res in (enumerate_marginals(fg), variable_elimination(fg, task="marginals")):
        assert res.log_partition == pytest.approx(log_z, abs=TOL, rel=TOL)
        for m, ref in zip(res.marginals, marginals):
            np.testing.assert_allclose(m, ref, atol=TOL)
    for res in (enumerate_map(fg), variable_elimination(fg, task="map")):
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
    for method in ("enumerate", "variable_elimination"):
        res = infer(fg, task="marginals", method=method, evidence=evidence)
        assert res.log_partition == pytest.approx(log_z, abs=TOL, rel=TOL)
        for v in range(n):
            if v in evidence:
                assert res.marginals[v][evidence[v]] == 1.0
            else:
                k = int(np.flatnonzero(sub.kept_variables == v)[0])
                np.testing.assert_allclose(res.marginals[v], marginals[k], atol=TOL)
        m = infer(fg, task="map", method=method, evidence=evidence)
        assert all(m.assignment[v] == s for v, s in evidence.items())
        assert m.score == pytest.approx(best, abs=TOL, rel=TOL)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([20.0, 120.0, 400.0]), st.sampled_from([0.0, 0.3]))
def test_elimination_with_large_ranges_matches_brute_force(seed, scale, p_forbidden):
    # Log-potentials of standard deviation 120-400 give factor ranges that add up past the linear-space
    # limit of a cluster (300), so clusters are multiplied in log space, alone or next to linear ones.
    fg = random_factor_graph(6, 9, max_cardinality=3, max_arity=3, scale=scale, p_forbidden=p_forbidden, rng=seed)
    log_z, marginals, _ = brute_force(fg)
    if log_z == -np.inf:
        return
    res = variable_elimination(fg, task="marginals")
    assert res.log_partition == pytest.approx(log_z, abs=TOL, rel=TOL)
    for m, ref in zip(res.marginals, marginals):
        np.testing.assert_allclose(m, ref, atol=TOL)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_sum_to_matches_numpy_sum(data):
    from tractable.exact._tables import sum_to

    shape = tuple(data.draw(st.lists(st.integers(1, 5), max_size=6)))
    keep = data.draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)))
    table = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1))).random(shape)
    if data.draw(st.booleans()) and table.ndim >= 2:  # a non-contiguous view is summed the same way
        table = table.swapaxes(0, -1)
        shape, keep = table.shape, keep[::-1]
    before = table.copy()
    got = sum_to(table, keep)
    ref = table.sum(axis=tuple(i for i, k in enumerate(keep) if not k))
    assert got.shape == np.shape(ref)
    # the same non-negative terms summed in another order: only rounding differs
    np.testing.assert_allclose(got, ref, rtol=1e-13)
    assert np.array_equal(table, before)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_broadcast_op_matches_numpy(data):
    import tractable.exact._tables as tables

    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=7)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    a = rng.random([d if rng.random() < 0.6 else 1 for d in shape])
    b = rng.random([d if rng.random() < 0.6 else 1 for d in shape])
    op = data.draw(st.sampled_from([np.add, np.multiply]))
    threshold = tables._BROADCAST_KERNEL_FROM
    tables._BROADCAST_KERNEL_FROM = 0  # the compiled loop also for these small tables
    try:
        got = tables.broadcast_op(op, a, b, np.empty(shape))
    finally:
        tables._BROADCAST_KERNEL_FROM = threshold
    # one operation per entry, the same as NumPy's: equal to the last bit
    assert np.array_equal(got, op(a, b, out=np.empty(shape)))


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
    assert variable_elimination(fg, task="map").score == pytest.approx(enumerate_map(fg).score, rel=1e-12)


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
    infer(fg, task="map", evidence={0: 1})
    assert all(np.array_equal(a, f.log_table) for a, f in zip(before, fg.factors))


@pytest.mark.parametrize(
    "call, exc, message",
    [
        (lambda fg: variable_elimination(fg, task="mar"), ValueError, "`task` must be one of 'marginals', 'map'"),
        (lambda fg: variable_elimination(fg, order=[0, 1]), ValueError, "`order` must list every variable"),
        (
            lambda fg: infer(fg, method="bp"),
            ValueError,
            "`method` must be one of 'auto', 'enumerate', 'variable_elimination'; got 'bp'.",
        ),
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


def _small():
    fg = FactorGraph([2, 2, 2])
    fg.add_factor(TableFactor([0, 1], np.log([[1.0, 2.0], [3.0, 4.0]])))
    fg.add_factor(TableFactor([1, 2], np.log([[1.0, 5.0], [2.0, 1.0]])))
    return fg


@pytest.mark.parametrize(
    "run",
    [
        enumerate_marginals,
        lambda fg: variable_elimination(fg, task="marginals"),
        lambda fg: infer(fg, task="marginals"),
        lambda fg: infer(fg, task="marginals", method="variable_elimination", evidence={1: 0}),
    ],
)
def test_marginals_are_one_read_only_array_when_cardinalities_are_equal(run):
    res = run(_small())
    assert isinstance(res.marginals, np.ndarray) and res.marginals.shape == (3, 2)
    assert (res.converged, res.n_iter, res.status) == (True, 0, "optimal")
    assert res.message.startswith(f"{res.method}: exact solution")
    with pytest.raises(ValueError, match="read-only"):
        res.marginals[0][0] = 5
    with pytest.raises(ValueError, match="read-only"):
        res.marginals[:, 1] = 0.5
    with pytest.raises(AttributeError):
        res.marginals = None


@pytest.mark.parametrize(
    "run",
    [enumerate_map, lambda fg: variable_elimination(fg, task="map"), lambda fg: infer(fg, task="map", evidence={0: 1})],
)
def test_assignment_is_read_only(run):
    res = run(_small())
    assert res.assignment.dtype == np.int64 and res.status == "optimal"
    with pytest.raises(ValueError, match="read-only"):
        res.assignment[0] = 1


@pytest.mark.parametrize("method", ["auto", "enumerate", "variable_elimination"])
def test_marginals_are_a_tuple_when_cardinalities_differ(method):
    fg = random_factor_graph(4, 5, max_cardinality=3, rng=1)
    assert len(set(fg.cardinalities.tolist())) > 1
    res = infer(fg, task="marginals", method=method, evidence={0: 1})
    assert isinstance(res.marginals, tuple) and len(res.marginals) == 4
    assert [m.shape for m in res.marginals] == [(int(c),) for c in fg.cardinalities]
    with pytest.raises(ValueError, match="read-only"):
        res.marginals[1][0] = 5


def test_method_reported_is_the_method_run():
    fg = _small()
    assert set(METHODS) == {"enumerate", "variable_elimination"}
    for method in METHODS:
        assert infer(fg, method=method).method == method
        assert infer(fg, task="map", method=method).method == method
    assert infer(fg).method == "enumerate"  # 8 assignments <= enumerate_below
    assert infer(fg, enumerate_below=4).method == "variable_elimination"
    assert "picked by 'auto' for 8 assignments" in infer(fg).message


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(method="enumerate", max_table_size=100),
            "`max_table_size` does not apply to `method`='enumerate' (its options: none).",
        ),
        (
            dict(method="variable_elimination", enumerate_below=100),
            "`enumerate_below` does not apply to `method`='variable_elimination' (its options: `max_table_size`).",
        ),
        (
            dict(method="enumerate", enumerate_below=5, max_table_size=5),
            "`enumerate_below`, `max_table_size` do not apply to `method`='enumerate'",
        ),
        (dict(method="ve"), "`method` must be one of 'auto', 'enumerate', 'variable_elimination'; got 've'."),
    ],
)
def test_inapplicable_options_and_old_names_are_errors(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        infer(_small(), **kwargs)


def test_options_are_keyword_only():
    fg = _small()
    with pytest.raises(TypeError):
        infer(fg, "marginals")
    with pytest.raises(TypeError):
        variable_elimination(fg, "marginals")
    with pytest.raises(TypeError):
        enumerate_marginals(fg, 100)
    with pytest.raises(TypeError):
        enumerate_map(fg, 100)
    with pytest.raises(TypeError):
        elimination_order(fg, "min_fill")


def test_zero_partition_error_is_public_and_a_model_error():
    assert tractable.ZeroPartitionError is ZeroPartitionError
    assert issubclass(ZeroPartitionError, tractable.ModelError)
    assert issubclass(tractable.ModelError, ValueError)
    fg = _small()
    fg.add_factor(TableFactor([2], np.array([0.0, -np.inf])))
    infer(fg)  # state 0 of variable 2 is still possible
    with pytest.raises(tractable.ZeroPartitionError, match="so the marginals are undefined"):
        infer(fg, evidence={2: 1})  # evidence of probability zero
    fg.add_factor(TableFactor([2], np.array([-np.inf, 0.0])))
    for run in (enumerate_marginals, enumerate_map, variable_elimination, infer):
        with pytest.raises(tractable.ZeroPartitionError, match="no configuration has non-zero probability"):
            run(fg)


def _random_bayes_net(rng, n, max_parents=3, p_zero=0.0):
    """A Bayesian network as a FactorGraph: one normalized conditional table per variable, its axes
    in a random order (the child is found by normalization, not by its place)."""
    card = rng.integers(2, 4, size=n)
    fg = FactorGraph(card.tolist())
    for v in range(n):
        k = int(rng.integers(0, min(v, max_parents) + 1))
        parents = sorted(rng.choice(v, size=k, replace=False).tolist()) if k else []
        p = rng.dirichlet(np.ones(card[v]), size=int(np.prod(card[parents], dtype=np.int64)))
        if p_zero:
            p[rng.random(p.shape) < p_zero] = 0.0
            p[np.arange(len(p)), rng.integers(0, card[v], size=len(p))] += 0.5  # a row is never all zero
            p /= p.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            table = np.log(p).reshape([int(card[u]) for u in parents] + [int(card[v])])
        perm = rng.permutation(k + 1)
        fg.add_factor(TableFactor([(parents + [v])[i] for i in perm], np.transpose(table, perm)))
    return fg


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(3, 8), st.sampled_from([0.0, 0.3]), st.integers(0, 3))
def test_relevant_groups_of_a_bayes_net_match_brute_force(seed, n, p_zero, n_observed):
    # A table limit just below the whole graph's largest cluster makes variable elimination solve
    # the network one relevant group at a time: that must be exact, or raise the limit error.
    rng = np.random.default_rng(seed)
    fg = _random_bayes_net(rng, n, p_zero=p_zero)
    observed = rng.choice(n, size=min(n_observed, n - 1), replace=False).tolist()
    sub = fg.condition({int(v): int(rng.integers(0, fg.cardinalities[v])) for v in observed})
    log_z, marginals, _ = brute_force(sub)
    if log_z == -np.inf:
        return
    _, biggest = elimination_order(sub)
    try:
        res = variable_elimination(sub, max_table_size=max(1, biggest - 1))
    except ValueError as err:
        assert "more than `max_table_size`" in str(err)
        return
    assert res.log_partition == pytest.approx(log_z, abs=TOL, rel=TOL)
    for m, ref in zip(res.marginals, marginals):
        np.testing.assert_allclose(m, ref, atol=TOL)


def _pairs_network(n_roots, rng):
    """Binary roots, one 3-state leaf per pair of roots, and a one-parent child of every leaf: the
    whole graph's clique tree holds all roots together, while each leaf needs only its two roots."""
    n_leaves = n_roots * (n_roots - 1) // 2
    fg = FactorGraph([2] * n_roots + [3] * n_leaves + [2] * n_leaves)
    for r in range(n_roots):
        fg.add_factor(TableFactor([r], np.log(rng.dirichlet(np.ones(2)))))
    pairs = [(a, b) for a in range(n_roots) for b in range(a + 1, n_roots)]
    for i, (a, b) in enumerate(pairs):
        leaf = n_roots + i
        fg.add_factor(TableFactor([a, b, leaf], np.log(rng.dirichlet(np.ones(3), size=(2, 2)))))
        fg.add_factor(TableFactor([leaf, leaf + n_leaves], np.log(rng.dirichlet(np.ones(2), size=3))))
    return fg


def test_a_network_too_wide_as_a_whole_is_solved_by_relevant_groups():
    rng = np.random.default_rng(5)
    fg = _pairs_network(7, rng)  # 7 roots, 21 leaves, 21 grandchildren
    evidence = {7: 2, 30: 1}  # a leaf, and a grandchild: likelihoods on roots 0, 1 and on leaf 9
    sub = fg.condition(evidence)
    _, biggest = elimination_order(sub)
    assert biggest >= 2**7  # every root in one cluster
    ref = variable_elimination(sub)
    res = variable_elimination(sub, max_table_size=32)  # a leaf's family with its roots: 12 entries
    assert res.log_partition == pytest.approx(ref.log_partition, rel=1e-12)
    for m, r in zip(res.marginals, ref.marginals):
        np.testing.assert_allclose(m, r, atol=1e-12)
    full = infer(fg, task="marginals", method="variable_elimination", evidence=evidence, max_table_size=32)
    assert full.log_partition == pytest.approx(ref.log_partition, rel=1e-12)


def test_impossible_evidence_is_reported_by_the_grouped_path_too():
    rng = np.random.default_rng(7)
    fg = _pairs_network(7, rng)
    # leaf 7 (roots 0, 1) never takes state 2: its table stays conditional, the evidence is impossible
    factors = list(fg.factors)
    k = next(i for i, f in enumerate(factors) if f.variables.tolist() == [0, 1, 7])
    p = np.zeros((2, 2, 3))
    p[..., :2] = rng.dirichlet(np.ones(2), size=(2, 2))
    impossible = FactorGraph(fg.cardinalities.tolist())
    for i, f in enumerate(factors):
        with np.errstate(divide="ignore"):
            impossible.add_factor(TableFactor(f.variables.tolist(), np.log(p) if i == k else f.log_table))
    sub = impossible.condition({7: 2})
    assert elimination_order(sub)[1] > 32  # too wide as a whole: the relevant groups run
    with pytest.raises(ZeroPartitionError, match="no configuration has non-zero probability"):
        variable_elimination(sub, max_table_size=32)


def test_tables_that_are_not_normalized_are_not_dropped():
    rng = np.random.default_rng(6)
    fg = _pairs_network(6, rng)
    ref = variable_elimination(fg)
    # a leaf's table scaled by 1e-6: no longer conditional, so it is kept in every group
    factors = list(fg.factors)
    k = next(i for i, f in enumerate(factors) if len(f.variables) == 3)
    off = FactorGraph(fg.cardinalities.tolist())
    for i, f in enumerate(factors):
        off.add_factor(TableFactor(f.variables.tolist(), f.log_table + (np.log1p(1e-6) if i == k else 0.0)))
    res = variable_elimination(off, max_table_size=32)
    assert res.log_partition == pytest.approx(ref.log_partition + np.log1p(1e-6), rel=1e-12)
    for m, r in zip(res.marginals, ref.marginals):
        np.testing.assert_allclose(m, r, atol=1e-12)


def test_graphs_without_conditional_tables_still_raise_the_table_limit():
    fg = grid_factor_graph(6, 6, rng=0)
    with pytest.raises(ValueError, match=re.escape("more than `max_table_size`=16")):
        variable_elimination(fg, max_table_size=16)


def test_a_factor_over_no_variables_adds_its_constant():
    # a zero-arity table (what write_uai emits for a graph's nonzero constant) was read back as shape (1,)
    fg = FactorGraph([2, 2])
    fg.add_factor(TableFactor([0, 1], [[0.0, 1.0], [2.0, 0.0]]))
    fg.add_factor(TableFactor([], 1.5))
    for method in METHODS:
        assert tractable.exact.infer(fg, task="map", method=method).score == pytest.approx(3.5)
        want = 1.5 + np.log(1 + np.e + np.e**2 + 1)
        res = tractable.exact.infer(fg, task="marginals", method=method)
        assert res.log_partition == pytest.approx(want, rel=1e-14)
