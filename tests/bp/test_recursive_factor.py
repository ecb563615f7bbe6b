"""Recursive cardinality factors: the factor against brute force, its BP messages against its dense
table, exactness of loopy BP on trees that contain one, and bad input."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from _helpers import handler_messages, normalized, random_incoming
from _oracles import all_assignments, brute_factor_messages, nested_count_score, random_nested
from tractable import FactorGraph, TableFactor, ZeroPartitionError
from tractable.bp import loopy
from tractable.bp._recursive import RecursiveCardinalityMessages
from tractable.bp._registry import HANDLERS
from tractable.cardinality import RecursiveCardinalityModel
from tractable.exact import enumerate_map, enumerate_marginals
from tractable.factorgraph import RecursiveCardinalityFactor

# Messages, log Z and marginals: the count tree (direct convolutions below the crossover, every
# factor here has D <= 8) and the dense table sum or maximize the same <= 2**8 products, in
# probability space with per-row scales versus log-sum-exp; they agree to a few ulps, and 1e-9
# leaves a wide margin.
TOL = 1e-9


def random_factor(rng, d, p_ninf=0.25, variables=None):
    """A random factor over ``d`` variables (graph ids ``variables``, default random distinct ids),
    its subsets in graph ids, some counts forbidden (never all of one subset)."""
    if variables is None:
        variables = [int(v) for v in rng.choice(50, size=d, replace=False)]
    subsets = random_nested(rng, [variables[i] for i in rng.permutation(d)])
    if rng.random() < 0.3 and subsets:  # a subset is not always the whole factor
        subsets = subsets[1:]
    if rng.random() < 0.3 and subsets:  # identical subsets are allowed
        subsets.append(list(subsets[-1]))
    pots = []
    for s in subsets:
        f = rng.normal(0, 1.5, len(s) + 1)
        f[rng.random(len(s) + 1) < p_ninf] = -np.inf
        if not np.isfinite(f).any():
            f[rng.integers(len(s) + 1)] = 0.0
        pots.append(f)
    return RecursiveCardinalityFactor(variables, subsets, pots), variables, subsets, pots


# --------------------------------------------------------------------------- (a) the factor itself
@settings(max_examples=60, deadline=None)
@given(d=st.integers(1, 8), seed=st.integers(0, 2**31))
def test_table_evaluate_and_condition_equal_the_nested_sum(d, seed):
    rng = np.random.default_rng(seed)
    fac, variables, subsets, pots = random_factor(rng, d)
    ys = all_assignments([2] * d)
    ref = np.array([nested_count_score(variables, subsets, pots, y) for y in ys])
    assert_allclose(fac.evaluate(ys), ref, atol=1e-12)
    table = fac.to_table()
    assert table.shape == (2,) * d
    assert_allclose(table[tuple(ys.T)], ref, atol=1e-12)
    # condition on a random part of the variables
    fixed = [v for v in variables if rng.random() < 0.5]
    evidence = {v: int(rng.integers(2)) for v in fixed}
    sub = fac.condition(evidence)
    consistent = np.ones(len(ys), dtype=bool)
    for v, s in evidence.items():
        consistent &= ys[:, variables.index(v)] == s
    if len(fixed) == d:
        assert isinstance(sub, float)
        assert_allclose(sub, ref[consistent][0], atol=1e-12)
        return
    assert isinstance(sub, RecursiveCardinalityFactor)
    kept = [v for v in variables if v not in evidence]
    assert sub.variables.tolist() == kept
    if not fixed:
        assert sub is fac
    local = ys[consistent][:, [variables.index(v) for v in kept]]
    assert_allclose(sub.evaluate(local), ref[consistent], atol=1e-12)
    assert_allclose(sub.to_table()[tuple(local.T)], ref[consistent], atol=1e-12)


def test_condition_folds_fully_observed_subsets_and_forbidden_values():
    f = RecursiveCardinalityFactor([4, 7, 9], [[4, 7], [4, 7, 9]], [[0.0, 1.0, -np.inf], [0.0, 0.5, 0.25, 2.0]])
    # {4, 7} fully observed (count 1): its value 1.0 is folded into the other subset's potential
    sub = f.condition({4: 1, 7: 0})
    assert sub.variables.tolist() == [9]
    assert_allclose(sub.to_table(), [1.0 + 0.5, 1.0 + 0.25])
    # both on: count 2 is forbidden, so the conditioned factor is -inf everywhere
    sub = f.condition({4: 1, 7: 1})
    assert np.all(np.isneginf(sub.to_table()))
    # the value of a subset with no kept variable and no other subset left: a subset of all kept variables
    g = RecursiveCardinalityFactor([0, 1, 2], [[0, 1]], [[0.0, 3.0, 1.0]])
    sub = g.condition({0: 1, 1: 0})
    assert sub.variables.tolist() == [2]
    assert_allclose(sub.to_table(), [3.0, 3.0])
    assert g.condition({0: 1, 1: 1, 2: 0}) == 1.0


def test_attributes_relabel_repr_and_graph_use():
    f = RecursiveCardinalityFactor([5, 2, 8], [[2, 5], [8, 2, 5]], [[0.0, 1.0, 2.0], [0.0, 0.0, 0.0, -1.0]])
    assert f.variables.tolist() == [5, 2, 8] and len(f) == 3
    assert [s.tolist() for s in f.subsets] == [[5, 2], [5, 2, 8]]  # in the order of `variables`
    assert_allclose(f.count_potentials[1], [0.0, 0.0, 0.0, -1.0])
    for arr in (f.variables, f.subsets[0], f.count_potentials[0]):
        with pytest.raises(ValueError):
            arr[0] = 1
    with pytest.raises(AttributeError):
        f.variables = np.array([0, 1, 2])
    assert repr(f) == "RecursiveCardinalityFactor(variables=[5, 2, 8], n_subsets=2)"
    mapping = np.arange(10)[::-1]
    g = f.relabel(mapping)
    assert g.variables.tolist() == [4, 7, 1]
    assert [s.tolist() for s in g.subsets] == [[4, 7], [4, 7, 1]]
    assert_allclose(g.to_table(), f.to_table())
    assert g._structure is f._structure  # the count tree is shared, not rebuilt
    fg = FactorGraph([2] * 9)
    fg.add_factor(f)
    y = np.array([0, 0, 1, 0, 0, 1, 0, 0, 1])
    assert fg.score(y) == nested_count_score([5, 2, 8], [[2, 5], [8, 2, 5]], f.count_potentials, [1, 1, 1])
    big = RecursiveCardinalityFactor(range(25), [list(range(25))], [np.zeros(26)])
    with pytest.raises(ValueError, match=re.escape("over 25 variables has no dense table (2**25 entries)")):
        big.to_table()


# --------------------------------------------------------------------------- (b) messages vs the dense table
def test_handler_is_registered():
    assert isinstance(HANDLERS[RecursiveCardinalityFactor], RecursiveCardinalityMessages)


@pytest.mark.parametrize("kind", ["sum", "max"])
@settings(max_examples=150, deadline=None)
@given(d=st.integers(1, 8), seed=st.integers(0, 2**31), p_clamp=st.sampled_from([0.0, 0.25, 0.6]))
def test_messages_and_log_partition_equal_the_dense_table(kind, d, seed, p_clamp):
    rng = np.random.default_rng(seed)
    fac, *_ = random_factor(rng, d)
    incoming = random_incoming(rng, d, p_clamp)
    ref, ref_z = brute_factor_messages(fac.to_table(), incoming, kind)
    if kind == "sum" and ref_z == -np.inf:  # Z_f = 0: the factor says so too
        with pytest.raises(ZeroPartitionError):
            handler_messages(fac, incoming, kind)
        return
    ours, ours_z = handler_messages(fac, incoming, kind)
    assert not np.isnan(ours).any()
    # rows of the reference that are all -inf (max-product of a factor with no allowed configuration)
    dead = np.all(np.isneginf(ref), axis=1)
    assert np.all(np.isneginf(ours[dead]))
    assert_allclose(normalized(ours[~dead], kind), normalized(ref[~dead], kind), atol=TOL, rtol=TOL)
    if kind == "sum":
        assert_allclose(ours_z, ref_z, atol=TOL, rtol=TOL)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_a_group_of_factors_writes_only_its_edges(seed):
    rng = np.random.default_rng(seed)
    f1, *_ = random_factor(rng, 4, p_ninf=0.0)  # no forbidden count: Z_f > 0
    f2, *_ = random_factor(rng, 3, p_ninf=0.0)
    handler = HANDLERS[RecursiveCardinalityFactor]
    e1, e2 = np.array([6, 0, 2, 4]), np.array([5, 1, 3])
    compiled = handler.compile([f1, f2], [e1, e2], np.full(50, 2))
    incoming = random_incoming(rng, 8, 0.0)
    for kind in ("sum", "max"):
        out = np.full((8, 2), -np.inf)
        handler.messages(compiled, incoming, out, kind)
        assert np.all(np.isneginf(out[7]))
        for fac, e in ((f1, e1), (f2, e2)):
            ref, _ = brute_factor_messages(fac.to_table(), incoming[e], kind)
            assert_allclose(normalized(out[e], kind), normalized(ref, kind), atol=TOL)
    z = handler.log_partition(compiled, incoming)
    z1 = brute_factor_messages(f1.to_table(), incoming[e1], "sum")[1]
    z2 = brute_factor_messages(f2.to_table(), incoming[e2], "sum")[1]
    assert_allclose(z, z1 + z2, atol=TOL)


@pytest.mark.parametrize("seed", range(3))
def test_large_factor_messages_match_the_recursive_model(seed):
    """D = 300 (FFT convolutions above the crossover): the beliefs incoming + message are the exact
    marginals of the recursive cardinality model with the incoming log-odds as unary, and the
    max-product beliefs decode its MAP."""
    rng = np.random.default_rng(seed)
    d = 300
    variables = list(range(d))
    subsets = random_nested(rng, [int(v) for v in rng.permutation(d)])
    pots = [rng.normal(0, 1, len(s) + 1) for s in subsets]
    fac = RecursiveCardinalityFactor(variables, subsets, pots)
    incoming = random_incoming(rng, d, 0.05)
    model = RecursiveCardinalityModel(d, subsets, pots, incoming[:, 1] - incoming[:, 0])
    msg, log_z = handler_messages(fac, incoming, "sum")
    belief = normalized(incoming + msg, "sum")
    assert_allclose(belief, model.marginals().marginals, atol=1e-8)
    lz_offset = float(np.sum(np.where(np.isneginf(incoming[:, 0]), incoming[:, 1], incoming[:, 0])))
    assert_allclose(log_z, model.log_partition() + lz_offset, rtol=1e-10)
    msg, _ = handler_messages(fac, incoming, "max")
    assert np.argmax(incoming + msg, axis=1).tolist() == model.map_assignment().assignment.tolist()


# --------------------------------------------------------------------------- (c) loopy BP on trees
def _tree_graph(rng):
    """Two recursive cardinality factors sharing one variable, pairwise factors hanging new (binary or
    ternary) variables off them, and unary factors (some -inf): the factor graph is a tree."""
    d1, d2 = int(rng.integers(1, 6)), int(rng.integers(1, 5))
    v1 = list(range(d1))
    v2 = [int(rng.integers(d1)), *range(d1, d1 + d2 - 1)]
    n_rc = d1 + d2 - 1
    n_extra = int(rng.integers(0, 4))
    card = [2] * n_rc + [int(c) for c in rng.integers(2, 4, size=n_extra)]
    fg = FactorGraph(card)
    fg.add_factor(random_factor(rng, len(v1), variables=v1)[0])
    fg.add_factor(random_factor(rng, len(v2), variables=v2)[0])
    for k in range(n_extra):
        u = int(rng.integers(n_rc))
        fg.add_factor(TableFactor([u, n_rc + k], rng.normal(0, 1, size=(2, card[n_rc + k]))))
    for v in range(len(card)):
        t = rng.normal(0, 1, size=card[v])
        t[rng.random(card[v]) < 0.1] = -np.inf
        if np.isneginf(t).all():
            t[0] = 0.0
        fg.add_factor(TableFactor([v], t))
    return fg


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), schedule=st.sampled_from(["parallel", "sequential"]))
def test_sum_product_on_a_tree_is_exact(seed, schedule):
    fg = _tree_graph(np.random.default_rng(seed))
    try:
        ref = enumerate_marginals(fg)
    except ZeroPartitionError:
        with pytest.raises(ZeroPartitionError):
            loopy(fg, schedule=schedule, rng=0 if schedule == "sequential" else None)
        return
    res = loopy(fg, schedule=schedule, rng=0 if schedule == "sequential" else None)
    assert res.converged
    for i in range(fg.n_variables):
        assert_allclose(res.marginals[i], ref.marginals[i], atol=TOL)
    assert_allclose(res.log_partition, ref.log_partition, atol=1e-8, rtol=1e-10)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_max_product_decoding_on_a_tree_is_the_exact_map(seed):
    fg = _tree_graph(np.random.default_rng(seed))
    try:
        ref = enumerate_map(fg)
    except ZeroPartitionError:
        return
    res = loopy(fg, task="map")
    assert res.converged
    # continuous random potentials: the MAP is unique almost surely, so the decoding must equal it
    assert_allclose(res.score, ref.score, atol=1e-9)
    assert res.assignment.tolist() == ref.assignment.tolist()


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_conditioned_graph_is_exact(seed):
    rng = np.random.default_rng(seed)
    fg = _tree_graph(rng)
    evidence = {
        v: int(rng.integers(2)) for v in range(fg.n_variables) if fg.cardinalities[v] == 2 and rng.random() < 0.4
    }
    sub = fg.condition(evidence)
    if np.isneginf(sub.constant):  # the evidence hits a forbidden unary: nothing left for the factors to do
        return
    try:
        ref = enumerate_marginals(sub)
    except ZeroPartitionError:
        with pytest.raises(ZeroPartitionError):
            loopy(sub)
        return
    res = loopy(sub)
    for i in range(sub.n_variables):
        assert_allclose(res.marginals[i], ref.marginals[i], atol=TOL)
    assert_allclose(res.log_partition, ref.log_partition, atol=1e-8, rtol=1e-10)


# --------------------------------------------------------------------------- (d) bad input
@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: RecursiveCardinalityFactor([0, 1, 2], [[0, 1], [1, 2]], [[0, 0, 0], [0, 0, 0]]),
            "`subsets` must be nested (any two disjoint or one inside the other); subsets[0] and subsets[1] "
            "overlap without one containing the other.",
        ),
        (
            lambda: RecursiveCardinalityFactor([0, 1, 2], [[0, 1], [0, 1, 2]], [[0, 0, 0], [0, 0, 0]]),
            "`count_potentials[1]` must have len(subsets[1]) + 1 = 4 entries; got 3.",
        ),
        (
            lambda: RecursiveCardinalityFactor([3, 4], [[3, 5]], [[0, 0, 0]]),
            "`subsets[0]` must contain only the factor's `variables` [3, 4]; got variable 5.",
        ),
        (
            lambda: RecursiveCardinalityFactor([3, 4], [[3, 3]], [[0, 0, 0]]),
            "`subsets[0]` must not repeat a variable; got [3, 3].",
        ),
        (
            lambda: RecursiveCardinalityFactor([3, 4], [[3], []], [[0, 0], [0]]),
            "`subsets[1]` must not be empty.",
        ),
        (
            lambda: RecursiveCardinalityFactor([3, 4], [[3, 4]], [[0, 0, 0], [0, 0]]),
            "`count_potentials` must have one entry per subset (1); got 2.",
        ),
        (
            lambda: RecursiveCardinalityFactor([3, 4], [[3, 4]], [[0, np.nan, 0]]),
            "`count_potentials[0]` must not contain NaN",
        ),
        (
            lambda: RecursiveCardinalityFactor([3, 4], [[3, 4]], [[-np.inf, -np.inf, -np.inf]]),
            "`count_potentials[0]` is -inf at every count",
        ),
        (lambda: RecursiveCardinalityFactor([3, 3], [[3]], [[0, 0]]), "`variables` must list distinct variables"),
        (lambda: RecursiveCardinalityFactor([], [], []), "`variables` must not be empty; got []."),
        (
            lambda: FactorGraph([2, 3, 2]).add_factor(RecursiveCardinalityFactor([0, 1, 2], [[0, 1]], [[0, 0, 0]])),
            "a RecursiveCardinalityFactor needs binary variables; variable 1 has cardinality 3.",
        ),
    ],
)
def test_bad_input_is_a_value_error(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_bad_subsets_types_are_type_errors():
    with pytest.raises(TypeError, match=re.escape("`subsets[0]` must contain integers")):
        RecursiveCardinalityFactor([0, 1], [[0.5, 1]], [[0, 0, 0]])
    with pytest.raises(TypeError, match=re.escape("`subsets` must be a sequence of sequences of variables")):
        RecursiveCardinalityFactor([0, 1], 3, [[0, 0, 0]])
