"""Loopy belief propagation: factor messages against dense tables, exactness on trees, fixed points, errors."""

import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from _helpers import handler_messages, normalized, random_incoming
from _oracles import brute_factor_messages, joint_scores
from tractable import CardinalityFactor, ConvergenceWarning, FactorGraph, TableFactor, ZeroPartitionError
from tractable.bp import BPResult, FactorMessages, _messages, loopy, register
from tractable.bp._registry import HANDLERS
from tractable.exact import enumerate_map, enumerate_marginals

# Message and marginal tolerance: every path computes the same sums in log space, so they agree to
# rounding (a few ulps of log-sum-exp chains over <= 2**10 terms); 1e-9 leaves a wide margin.
TOL = 1e-9


def _random_count_potential(rng, d):
    f = rng.normal(0, 1, size=d + 1)
    f[rng.random(d + 1) < 0.4] = -np.inf
    if not np.isfinite(f).any():
        f[rng.integers(d + 1)] = 0.0
    return f


@pytest.mark.parametrize("path", ["chain", "tree"])
@pytest.mark.parametrize("kind", ["sum", "max"])
@settings(max_examples=60, deadline=None)
@given(d=st.integers(1, 9), seed=st.integers(0, 2**31))
def test_cardinality_factor_messages_equal_its_dense_table(path, kind, d, seed):
    with pytest.MonkeyPatch.context() as mp:
        if path == "tree":  # force the convolution tree even for tiny factors
            mp.setattr(_messages, "CHAIN_MAX_CELLS", -1)
        _check_cardinality_messages(kind, d, seed)


def _check_cardinality_messages(kind, d, seed):
    rng = np.random.default_rng(seed)
    f = _random_count_potential(rng, d)
    incoming = random_incoming(rng, d)
    card = CardinalityFactor(np.arange(d), f)
    ref, ref_z = brute_factor_messages(card.to_table(), incoming, kind)
    if kind == "sum" and ref_z == -np.inf:  # Z_f = 0: the factor must say so
        with pytest.raises(ZeroPartitionError):
            handler_messages(card, incoming, kind)
        return
    ours, ours_z = handler_messages(card, incoming, kind)
    assert not np.isnan(ours).any()
    # rows of the reference that are all -inf: this variable's state cannot be completed
    ok = ~np.all(np.isneginf(ref), axis=1)
    assert_allclose(normalized(ours[ok], kind), normalized(ref[ok], kind), atol=TOL, rtol=TOL)
    if kind == "sum":
        assert_allclose(ours_z, ref_z, atol=TOL, rtol=TOL)


def _random_tree_graph(rng, n, p_card=0.5, n_states=(2, 3)):
    """A factor graph whose factor/variable incidence graph is a tree: each new factor joins
    one variable already in the tree with 1-3 new variables."""
    card = rng.choice(n_states, size=n)
    fg = None
    factors = []
    v_next = 1
    while v_next < n:
        k = int(min(rng.integers(1, 4), n - v_next))
        anchor = int(rng.integers(0, v_next))
        scope = [anchor, *range(v_next, v_next + k)]
        v_next += k
        if rng.random() < p_card and all(card[v] == 2 for v in scope) or len(scope) > 3:
            card[scope] = 2
            factors.append(("card", scope, _random_count_potential(rng, len(scope))))
        else:
            factors.append(("table", scope, None))
    fg = FactorGraph(card)
    for kind, scope, f in factors:
        if kind == "card":
            fg.add_factor(CardinalityFactor(scope, f))
        else:
            fg.add_factor(TableFactor(scope, rng.normal(0, 1, size=tuple(card[scope]))))
    for v in range(n):
        u = rng.normal(0, 1, size=card[v])
        u[rng.random(card[v]) < 0.15] = -np.inf
        if np.isneginf(u).all():
            u[0] = 0.0
        fg.add_factor(TableFactor([v], u))
    return fg


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 9), seed=st.integers(0, 2**31), schedule=st.sampled_from(["parallel", "sequential"]))
def test_sum_product_on_a_tree_is_exact(n, seed, schedule):
    rng = np.random.default_rng(seed)
    fg = _random_tree_graph(rng, n)
    try:
        ref = enumerate_marginals(fg)
    except ZeroPartitionError:
        with pytest.raises(ZeroPartitionError):
            loopy(fg, schedule=schedule, rng=0 if schedule == "sequential" else None)
        return
    res = loopy(fg, schedule=schedule, rng=0 if schedule == "sequential" else None)
    assert res.converged and isinstance(res, BPResult)
    for i in range(n):
        assert_allclose(res.marginals[i], ref.marginals[i], atol=TOL)
    assert_allclose(res.log_partition, ref.log_partition, atol=1e-8, rtol=1e-10)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 9), seed=st.integers(0, 2**31))
def test_max_product_decoding_on_a_tree_is_the_exact_map(n, seed):
    rng = np.random.default_rng(seed)
    fg = _random_tree_graph(rng, n)
    try:
        ref = enumerate_map(fg)
    except ZeroPartitionError:
        return
    res = loopy(fg, task="map")
    assert res.converged
    # continuous random potentials: the MAP is unique almost surely, so the decoding must equal it
    assert_allclose(res.score, ref.score, atol=1e-9)
    assert res.assignment.tolist() == ref.assignment.tolist()


def _loopy_graph(seed, n_side=3):
    """A small grid with attractive couplings, unaries and two cardinality factors over rows."""
    rng = np.random.default_rng(seed)
    n = n_side * n_side
    fg = FactorGraph([2] * n)
    for v in range(n):
        fg.add_factor(TableFactor([v], [0.0, rng.normal(0, 1)]))
    for r in range(n_side):
        for c in range(n_side):
            v = r * n_side + c
            if c + 1 < n_side:
                fg.add_factor(TableFactor([v, v + 1], [[0.3, 0.0], [0.0, 0.3]]))
            if r + 1 < n_side:
                fg.add_factor(TableFactor([v, v + n_side], [[0.3, 0.0], [0.0, 0.3]]))
    fg.add_factor(CardinalityFactor(list(range(n_side)), [-np.inf] + [0.0] * (n_side - 1) + [-np.inf]))
    fg.add_factor(CardinalityFactor(list(range(n - n_side, n)), rng.normal(0, 1, size=n_side + 1)))
    return fg


@pytest.mark.parametrize("seed", range(4))
def test_schedules_and_damping_reach_the_same_fixed_point(seed):
    fg = _loopy_graph(seed)
    runs = [
        loopy(fg, tol=1e-12, max_iter=2000),
        loopy(fg, tol=1e-12, max_iter=2000, damping=0.5),
        loopy(fg, tol=1e-12, max_iter=2000, schedule="sequential", rng=seed),
        loopy(fg, tol=1e-12, max_iter=2000, schedule="sequential", damping=0.3, rng=seed + 1),
    ]
    for r in runs:
        assert r.converged, r.message
        assert_allclose(r.marginals, runs[0].marginals, atol=1e-9)
        assert_allclose(r.log_partition, runs[0].log_partition, atol=1e-9)
    # weakly coupled: the Bethe estimate is close to, but not equal to, the exact value
    exact = enumerate_marginals(fg)
    assert np.max(np.abs(runs[0].marginals - exact.marginals)) < 0.05


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), task=st.sampled_from(["marginals", "map"]))
def test_hard_constraints_never_produce_nan(seed, task):
    rng = np.random.default_rng(seed)
    n = 8
    fg = FactorGraph([2] * n)
    for v in range(n):
        u = np.array([0.0, rng.normal(0, 3)])
        if rng.random() < 0.2:
            u[rng.integers(2)] = -np.inf
        fg.add_factor(TableFactor([v], u))
    for _ in range(3):
        scope = rng.choice(n, size=int(rng.integers(2, n + 1)), replace=False)
        fg.add_factor(CardinalityFactor(scope, _random_count_potential(rng, len(scope))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            res = loopy(fg, task=task, max_iter=50)
        except ZeroPartitionError:
            return
    assert not np.isnan(res.marginals).any()
    assert not (task == "marginals" and np.isnan(res.log_partition))


def test_a_large_cardinality_factor_uses_the_convolution_tree_and_matches_the_cardinality_package():
    from tractable.cardinality import marginals

    rng = np.random.default_rng(0)
    d = 3000
    theta = rng.normal(size=d)
    f = np.where(np.arange(d + 1) % 7 == 0, 0.0, -1.0)
    fg = FactorGraph([2] * d)
    for v in range(d):
        fg.add_factor(TableFactor([v], [0.0, theta[v]]))
    fg.add_factor(CardinalityFactor(np.arange(d), f))
    res = loopy(fg)
    ref = marginals(theta, f)
    assert_allclose(res.marginals, ref.marginals, atol=1e-9)
    assert_allclose(res.log_partition, ref.log_partition, rtol=1e-10)
    assert_allclose(loopy(fg, task="map").score, __import__("tractable").cardinality.map_assignment(theta, f).score)


def test_stopping_short_warns_and_reports_it():
    fg = _loopy_graph(0)
    with pytest.warns(ConvergenceWarning, match="iteration limit"):
        res = loopy(fg, max_iter=1)
    assert not res.converged and res.status == "max_iter_reached" and res.n_iter == 1
    with pytest.raises(ValueError, match="read-only"):
        res.assignment[0] = 1


def test_infeasible_constraints_raise_zero_partition():
    fg = FactorGraph([2, 2])
    fg.add_factor(TableFactor([0], [-np.inf, 0.0]))
    fg.add_factor(TableFactor([1], [-np.inf, 0.0]))
    fg.add_factor(CardinalityFactor([0, 1], [0.0, 0.0, -np.inf]))  # at most one on
    with pytest.raises(ZeroPartitionError, match="no configuration has non-zero probability"):
        loopy(fg)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"damping": 1.0}, "`damping` must be in [0, 1); got 1.0."),
        ({"damping": -0.1}, "`damping`"),
        ({"kind": "mean"}, "`kind` must be one of 'sum', 'max'; got 'mean'."),
        ({"schedule": "random"}, "`schedule` must be one of 'parallel', 'sequential', 'blocks'; got 'random'."),
        ({"max_iter": 0}, "`max_iter`"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        loopy(_loopy_graph(0), **kwargs)


def test_bad_factors_are_rejected_when_built():
    fg = FactorGraph([2, 3])
    with pytest.raises(ValueError, match="a CardinalityFactor needs binary variables; variable 1 has cardinality 3"):
        fg.add_factor(CardinalityFactor([0, 1], [0.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match=re.escape("`log_potentials` must have shape (3,)")):
        CardinalityFactor([0, 1], [0.0, 0.0])
    with pytest.raises(ValueError, match=re.escape("`variables` must list distinct variables; got [0, 0].")):
        CardinalityFactor([0, 0], [0.0, 0.0, 0.0])
    with pytest.raises(TypeError, match="`fg` must be a FactorGraph"):
        loopy("model.uai")


def test_options_are_keyword_only():
    with pytest.raises(TypeError):
        loopy(_loopy_graph(0), "sum", 10)


class _Parity(TableFactor):
    """A table factor type with its own (dense) messages: the engine uses whatever is registered."""


class _CountingHandler(FactorMessages):
    def __init__(self):
        self.calls = 0
        self.inner = _messages.TableMessages()

    def compile(self, factors, edges, cardinalities):
        return self.inner.compile(factors, edges, cardinalities)

    def messages(self, compiled, incoming, out, kind):
        self.calls += 1
        self.inner.messages(compiled, incoming, out, kind)

    def log_partition(self, compiled, incoming):
        return self.inner.log_partition(compiled, incoming)


def test_a_new_factor_type_plugs_in_by_registering_one_handler():
    handler = _CountingHandler()
    register(_Parity, handler)
    try:
        fg = FactorGraph([2, 2, 2])
        parity = np.where(np.indices((2, 2, 2)).sum(axis=0) % 2 == 0, 0.0, -np.inf)  # even number on
        fg.add_factor(_Parity([0, 1, 2], parity))
        fg.add_factor(TableFactor([0], [0.0, 0.7]))
        res = loopy(fg)
        assert handler.calls >= 1
        assert_allclose(res.marginals, enumerate_marginals(fg).marginals, atol=TOL)
    finally:
        del HANDLERS[_Parity]
    with pytest.raises(TypeError, match="must be a subclass of tractable.Factor"):
        register(int, handler)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 8), seed=st.integers(0, 2**31))
def test_factor_marginals_on_a_tree_are_the_exact_joint_marginals(n, seed):
    rng = np.random.default_rng(seed)
    fg = _random_tree_graph(rng, n, p_card=0.3)
    card = [int(c) for c in fg.cardinalities]
    ys, sc = joint_scores(fg)
    if not np.isfinite(sc).any():
        return
    p = np.exp(sc - sc.max())
    p /= p.sum()
    res = loopy(fg)
    for fac, belief in zip(fg.factors, res.factor_marginals):
        if isinstance(fac, CardinalityFactor):
            assert belief is None
            continue
        joint = np.zeros(tuple(card[v] for v in fac.variables))
        np.add.at(joint, tuple(ys[:, v] for v in fac.variables), p)
        assert_allclose(belief, joint, atol=TOL)


def test_evidence_on_a_forbidden_state_is_a_zero_partition_not_a_result():
    fg = FactorGraph([2, 2])
    fg.add_factor(TableFactor([0], [0.0, -np.inf]))
    fg.add_factor(TableFactor([0, 1], np.zeros((2, 2))))
    with pytest.raises(ZeroPartitionError, match=re.escape("the graph's constant is -inf")):
        loopy(fg.condition({0: 1}))


def test_progress_takes_true_or_false_only():
    """``bool("no")`` is True: a flag given as text or a number is refused, not read as on."""
    from tractable.datasets.factor_graphs import grid_factor_graph

    fg = grid_factor_graph(2, 2, rng=0)
    for bad in ("no", 1):
        with pytest.raises(TypeError, match=f"`progress` must be True or False; got {bad!r}"):
            loopy(fg, progress=bad)
