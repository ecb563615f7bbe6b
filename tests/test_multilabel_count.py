"""Count factors over variables with more than two states (``CardinalityFactor(..., label=l, n_states=m)``):
the factor against brute force, its BP messages against its dense table (the binary collapse is exact),
loopy BP on trees with one, the unchanged binary default, and bad input."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from _oracles import all_assignments, brute_factor_messages
from tractable import CardinalityFactor, FactorGraph, TableFactor, ZeroPartitionError
from tractable.bp import HANDLERS, loopy
from tractable.exact import enumerate_map, enumerate_marginals

# Messages and log Z: the convolution tree / chain / sort on the collapsed binary messages versus
# log-sum-exp (or max) over the <= 4**7 entries of the dense table; a few ulps of scores below 30 in
# magnitude, so 1e-9 leaves a wide margin.
TOL = 1e-9


def random_count_factor(rng, d, label=None, p_ninf=0.25):
    """A random labelled factor over variables 0..d-1 with cardinalities in 2..4 (above ``label``)."""
    if label is None:
        label = int(rng.integers(0, 3))
    cards = rng.integers(label + 1, 5, size=d)
    cards = np.maximum(cards, 2)
    f = rng.normal(0, 1.5, size=d + 1)
    f[rng.random(d + 1) < p_ninf] = -np.inf
    if not np.isfinite(f).any():
        f[rng.integers(d + 1)] = 0.0
    return CardinalityFactor(np.arange(d), f, label=label, n_states=cards), cards, f


def random_incoming(rng, cards, p_clamp, kind):
    """Normalized incoming log messages (d, max card), -inf past each cardinality and at some clamps."""
    k = int(max(cards))
    w = rng.normal(0, 2, size=(len(cards), k))
    w[rng.random(w.shape) < p_clamp] = -np.inf
    w[np.arange(k)[None, :] >= cards[:, None]] = -np.inf
    for i, c in enumerate(cards):
        if np.all(np.isneginf(w[i, :c])):
            w[i, rng.integers(c)] = 0.0
    top = np.max(w, axis=1, keepdims=True)
    if kind == "sum":
        top = top + np.log(np.exp(w - top).sum(axis=1, keepdims=True))
    return w - top


def run_handler(fac, incoming, kind):
    handler = HANDLERS[CardinalityFactor]
    d = len(fac.variables)
    compiled = handler.compile([fac], [np.arange(d)], np.asarray(fac.n_states))
    out = np.full(incoming.shape, -np.inf)
    handler.messages(compiled, incoming, out, kind)
    return out, handler.log_partition(compiled, incoming) if kind == "sum" else None


def normalized(msg, kind):
    top = np.max(msg, axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    p = np.exp(msg - top)
    if kind == "sum":
        s = p.sum(axis=1, keepdims=True)
        p = p / np.where(s > 0, s, 1.0)
    return p


# --------------------------------------------------------------------------- the factor
@settings(max_examples=60, deadline=None)
@given(d=st.integers(1, 6), seed=st.integers(0, 2**31))
def test_table_evaluate_and_condition_count_the_label(d, seed):
    rng = np.random.default_rng(seed)
    fac, cards, f = random_count_factor(rng, d)
    ys = all_assignments(cards)
    ref = f[(ys == fac.label).sum(axis=1)]
    table = fac.to_table()
    assert table.shape == tuple(cards)
    assert_allclose(table.reshape(-1), ref)
    assert_allclose(fac.evaluate(ys), ref)
    observed = {int(v): int(rng.integers(cards[v])) for v in range(d) if rng.random() < 0.5}
    sub = fac.condition(observed)
    index = tuple(observed.get(v, slice(None)) for v in range(d))
    if len(observed) == d:
        assert sub == table[index]
    else:
        assert sub.label == fac.label
        assert sub.n_states.tolist() == [int(cards[v]) for v in range(d) if v not in observed]
        assert_allclose(sub.to_table(), table[index])


def test_the_binary_default_is_unchanged():
    f = np.array([0.0, 1.0, -np.inf, 0.5])
    fac = CardinalityFactor([0, 1, 2], f)
    assert fac.label is None and fac.counted == 1 and fac.n_states.tolist() == [2, 2, 2]
    assert repr(fac) == "CardinalityFactor(variables=[0, 1, 2])"
    ys = all_assignments([2, 2, 2])
    assert_allclose(fac.to_table().reshape(-1), f[ys.sum(axis=1)])
    same = CardinalityFactor([0, 1, 2], f, label=1, n_states=2)
    assert_allclose(same.to_table(), fac.to_table())
    zeros = CardinalityFactor([0, 1, 2], f, label=0, n_states=2)  # count the zeros: the table reversed
    assert_allclose(zeros.to_table(), fac.to_table()[::-1, ::-1, ::-1])
    assert CardinalityFactor([0, 1], [0.0, 1.0, 2.0], n_states=[2, 2]).label is None


def test_relabel_repr_and_graph_use():
    fac = CardinalityFactor([3, 1], [0.0, 1.0, 2.0], label=2, n_states=[3, 4])
    assert repr(fac) == "CardinalityFactor(variables=[3, 1], label=2)"
    moved = fac.relabel(np.array([9, 8, 7, 6]))
    assert moved.variables.tolist() == [6, 8] and moved.n_states.tolist() == [3, 4] and moved.label == 2
    with pytest.raises(ValueError, match="read-only"):
        fac.n_states[0] = 5
    fg = FactorGraph([2, 4, 3, 3])
    fg.add_factor(fac)
    assert fg.score([0, 2, 0, 2]) == 2.0


BAD = [
    (
        lambda: CardinalityFactor([0, 1], [0.0, 1.0, 2.0], label=1),
        ValueError,
        "`n_states` (the variables' cardinality) must be given with `label`; got label=1 and no n_states.",
    ),
    (
        lambda: CardinalityFactor([0, 1], [0.0, 1.0, 2.0], label=3, n_states=[3, 4]),
        ValueError,
        "`label` must be a state of every variable (below its `n_states`); got label=3 for a variable with n_states=3.",
    ),
    (
        lambda: CardinalityFactor([0, 1], [0.0, 1.0, 2.0], n_states=3),
        ValueError,
        "`n_states` of a CardinalityFactor without `label` must be 2 (binary variables); got 3.",
    ),
    (
        lambda: CardinalityFactor([0, 1], [0.0, 1.0, 2.0], label=0, n_states=[3, 3, 3]),
        ValueError,
        "`n_states` must be one integer or one per variable (2); got shape (3,).",
    ),
    (
        lambda: CardinalityFactor([0, 1], [0.0, 1.0, 2.0], label=0, n_states=[3, 1]),
        ValueError,
        "`n_states` must be integers >= 2; got 1.",
    ),
    (lambda: CardinalityFactor([0, 1], [0.0, 1.0, 2.0], label=-1, n_states=3), ValueError, "`label` must be >= 0"),
    (
        lambda: CardinalityFactor([0, 1], [0.0, 1.0, 2.0], label=1.5, n_states=3),
        TypeError,
        "`label` must be an integer",
    ),
    (
        lambda: CardinalityFactor(np.arange(13), np.zeros(14), label=0, n_states=4).to_table(),
        ValueError,
        "a CardinalityFactor over 13 variables has no dense table (67108864 entries, more than 2**24)",
    ),
]


@pytest.mark.parametrize("make, error, message", BAD)
def test_bad_input_names_the_argument(make, error, message):
    with pytest.raises(error, match=re.escape(message)):
        make()


def test_a_variable_with_another_cardinality_names_the_factor():
    fg = FactorGraph([3, 4])
    with pytest.raises(
        ValueError,
        match=re.escape(
            "the CardinalityFactor(variables=[0, 1], label=2) was given `n_states` 3 for variable 1, which has "
            "cardinality 4 in the graph."
        ),
    ):
        fg.add_factor(CardinalityFactor([0, 1], [0.0, 1.0, 2.0], label=2, n_states=3))
    with pytest.raises(ValueError, match=re.escape("a CardinalityFactor needs binary variables; variable 0 has")):
        fg.add_factor(CardinalityFactor([0, 1], [0.0, 1.0, 2.0]))


# --------------------------------------------------------------------------- messages
@pytest.mark.parametrize("kind", ["sum", "max"])
@settings(max_examples=100, deadline=None)
@given(d=st.integers(1, 7), seed=st.integers(0, 2**31), p_clamp=st.sampled_from([0.0, 0.25, 0.5]))
def test_messages_and_log_partition_equal_the_dense_table(kind, d, seed, p_clamp):
    rng = np.random.default_rng(seed)
    fac, cards, _ = random_count_factor(rng, d)
    if np.prod(cards) > 4**6:
        return
    incoming = random_incoming(rng, cards, p_clamp, kind)
    ref, ref_z = brute_factor_messages(fac.to_table(), incoming, kind)
    if kind == "sum" and ref_z == -np.inf:
        with pytest.raises(ZeroPartitionError):
            run_handler(fac, incoming, kind)
        return
    ours, ours_z = run_handler(fac, incoming, kind)
    assert not np.isnan(ours).any()
    pad = np.arange(incoming.shape[1])[None, :] >= cards[:, None]
    assert np.all(np.isneginf(ours[pad]))  # past each cardinality: -inf, as the engine requires
    dead = np.all(np.isneginf(ref), axis=1)
    assert np.all(np.isneginf(ours[dead]))
    assert_allclose(normalized(ours[~dead], kind), normalized(ref[~dead], kind), atol=TOL)
    if kind == "sum":
        assert_allclose(ours_z, ref_z, atol=TOL, rtol=TOL)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_binary_and_labelled_factors_in_one_group(seed):
    rng = np.random.default_rng(seed)
    binary = CardinalityFactor([0, 1, 2], rng.normal(size=4))
    labelled, cards, _ = random_count_factor(rng, 4, label=1, p_ninf=0.0)
    handler = HANDLERS[CardinalityFactor]
    e1, e2 = np.array([5, 0, 3]), np.array([1, 6, 2, 4])
    card = np.full(8, 2)
    card[e2] = cards
    compiled = handler.compile([binary, labelled], [e1, e2], card)
    for kind in ("sum", "max"):
        incoming = random_incoming(rng, card[:7], 0.0, kind)
        out = np.full_like(incoming, -np.inf)
        handler.messages(compiled, incoming, out, kind)
        for fac, e in ((binary, e1), (labelled, e2)):
            ref, _ = brute_factor_messages(fac.to_table(), incoming[e], kind)
            assert_allclose(normalized(out[e], kind), normalized(ref, kind), atol=TOL)
    z = handler.log_partition(compiled, incoming)
    ref = sum(brute_factor_messages(f.to_table(), incoming[e], "sum")[1] for f, e in ((binary, e1), (labelled, e2)))
    assert_allclose(z, ref, atol=TOL)


# --------------------------------------------------------------------------- loopy BP
def _tree_graph(rng, label, m):
    """How many of 5 tokens take ``label``: unaries, the count factor, a pendant pair off token 0."""
    fg = FactorGraph([m] * 6)
    for v in range(6):
        fg.add_factor(TableFactor([v], rng.normal(size=m)))
    f = rng.normal(size=6)
    f[rng.integers(6)] = -np.inf
    fg.add_factor(CardinalityFactor(np.arange(5), f, label=label, n_states=m))
    fg.add_factor(TableFactor([0, 5], rng.normal(size=(m, m))))
    return fg


@settings(max_examples=30, deadline=None)
@given(m=st.integers(2, 4), seed=st.integers(0, 2**31))
def test_loopy_on_a_tree_is_exact(m, seed):
    rng = np.random.default_rng(seed)
    fg = _tree_graph(rng, int(rng.integers(m)), m)
    ref = enumerate_marginals(fg)
    res = loopy(fg)
    assert res.converged
    assert_allclose(res.marginals, ref.marginals, atol=1e-8)
    assert_allclose(res.log_partition, ref.log_partition, atol=1e-8)
    assert_allclose(loopy(fg, task="map").score, enumerate_map(fg).score, atol=1e-9)


def test_labelled_count_equals_the_binary_count_of_an_indicator():
    """Counting label 2 of 3-state tokens is counting the 1s of their indicators: same count marginals."""
    rng = np.random.default_rng(7)
    u = rng.normal(size=(4, 3))
    f = np.array([0.0, 0.5, -np.inf, 1.0, 0.2])
    fg = FactorGraph([3] * 4)
    for v in range(4):
        fg.add_factor(TableFactor([v], u[v]))
    fg.add_factor(CardinalityFactor(np.arange(4), f, label=2, n_states=3))
    p3 = np.asarray(enumerate_marginals(fg).marginals)
    ind = FactorGraph([2] * 4)
    for v in range(4):  # the indicator's unary: log-sum-exp of the other states against state 2
        ind.add_factor(TableFactor([v], [np.logaddexp(u[v, 0], u[v, 1]), u[v, 2]]))
    ind.add_factor(CardinalityFactor(np.arange(4), f))
    p2 = np.asarray(loopy(ind).marginals)
    assert_allclose(p3[:, 2], p2[:, 1], atol=1e-10)
