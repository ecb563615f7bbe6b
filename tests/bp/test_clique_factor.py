"""Clique factors with count-based potentials (Gupta et al. 2007) inside factor graphs: the factor against
brute force, its belief-propagation messages against enumeration of the clique (exact families exactly, the
alpha-pass families against their definition and their guarantees), loopy BP with cliques, and bad input."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from _clique_oracles import all_labellings, clique_messages, count_scores
from tractable import CliqueFactor, FactorGraph, TableFactor, ZeroPartitionError
from tractable.bp import HANDLERS, loopy
from tractable.bp._clique import CliqueMessages, max_product_method
from tractable.clique import (
    CountPotential,
    Entropy,
    LinearMajority,
    Makespan,
    MaxPotential,
    Potts,
    SquareMakespan,
    SumPotential,
    alpha_pass,
    majority_alpha_pass,
)
from tractable.clique._max_messages import majority_messages, relabel_messages, sum_family_messages
from tractable.exact import enumerate_map, enumerate_marginals

# Messages and log Z: the count-vector program (products of probabilities, rescaled per step) and the
# enumeration (log-sum-exp over <= 4**8 labellings) agree to a few ulps of the scores (below 50 in
# magnitude here); max-product sums the same <= 9 terms in another order. 1e-9 leaves a wide margin.
TOL = 1e-9

FAMILIES = ("potts", "entropy", "sum_table", "max_table", "makespan", "makespan2", "majority", "general")
EXACT_MAX = ("max_table", "makespan", "makespan2")


def _general(c):
    c = np.asarray(c)
    return 0.3 * c[..., 0] * c[..., -1] - 0.2 * np.abs(c[..., 1] - 1) + np.where(c[..., 0] > 3, -np.inf, 0.0)


def make_potential(kind, n_total, m, rng):
    """A random potential of family ``kind`` for ``n_total`` nodes and ``m`` labels."""
    if kind == "potts":
        return Potts(float(rng.uniform(-0.5, 1.0)))
    if kind == "entropy":
        return Entropy(float(rng.uniform(-1.0, 1.0)))
    if kind in ("sum_table", "max_table"):
        t = rng.normal(0, 1.5, size=(m, n_total + 1))
        t[rng.random(t.shape) < 0.15] = -np.inf
        t[:, 0] = np.where(np.isneginf(t[:, 0]), 0.0, t[:, 0])  # some labelling is allowed
        return SumPotential(t) if kind == "sum_table" else MaxPotential(t)
    if kind == "makespan":
        return Makespan(float(rng.uniform(0.0, 1.0)))
    if kind == "makespan2":
        return SquareMakespan(float(rng.uniform(0.0, 0.5)))
    if kind == "majority":
        return LinearMajority(rng.normal(size=(m, m)))
    return CountPotential(_general) if rng.random() < 0.7 else Makespan(float(rng.uniform(-1.0, -0.1)))


def random_incoming(rng, n, m, p_clamp=0.2, kind="max"):
    """Normalized incoming log messages (n, m); some entries -inf (never a whole row)."""
    w = rng.normal(0, 1.5, size=(n, m))
    w[rng.random((n, m)) < p_clamp] = -np.inf
    dead = np.all(np.isneginf(w), axis=1)
    w[dead, rng.integers(0, m, size=n)[dead]] = 0.0
    if kind == "sum":
        top = np.max(w, axis=1, keepdims=True)
        return w - (top + np.log(np.exp(w - top).sum(axis=1, keepdims=True)))
    return w - w.max(axis=1, keepdims=True)


def random_factor(rng, kind, n, m, with_fixed=True):
    fixed = rng.integers(0, 3, size=m) if with_fixed and rng.random() < 0.4 else np.zeros(m, dtype=np.int64)
    pot = make_potential(kind, n + int(fixed.sum()), m, rng)
    return CliqueFactor(np.arange(n), pot, n_states=m, fixed_counts=fixed), pot, fixed


def run_handler(fac, incoming, kind):
    """The handler's messages (n, m) of one factor over edges 0..n-1, and log Z_f (sum-product)."""
    handler = HANDLERS[type(fac)]
    n, m = incoming.shape
    compiled = handler.compile([fac], [np.arange(n)], np.full(n, m))
    out = np.full((n, m), -np.inf)
    handler.messages(compiled, incoming, out, kind)
    return out, handler.log_partition(compiled, incoming) if kind == "sum" else None


def normalized(msg, kind):
    """Rows as probabilities (sum 1, or maximum 1); all -inf rows stay all 0."""
    top = np.max(msg, axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    p = np.exp(msg - top)
    if kind == "sum":
        s = p.sum(axis=1, keepdims=True)
        p = p / np.where(s > 0, s, 1.0)
    return p


def clamped_alpha_pass(phi, potential, fixed, method=alpha_pass):
    """The definition of the alpha-pass messages: alpha-pass on the clique with node u clamped to label l."""
    n, m = phi.shape
    pot = potential if not np.any(fixed) else CountPotential(lambda c: potential(np.asarray(c) + fixed))
    out = np.empty((n, m))
    for u in range(n):
        for label in range(m):
            q = phi.copy()
            q[u] = -np.inf
            q[u, label] = 0.0
            out[u, label] = method(q, pot).score
    return out


# --------------------------------------------------------------------------- (a) the factor itself
@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(FAMILIES), n=st.integers(0, 5), m=st.integers(2, 3), seed=st.integers(0, 2**31))
def test_table_evaluate_and_condition_equal_the_count_potential(kind, n, m, seed):
    rng = np.random.default_rng(seed)
    fac, pot, fixed = random_factor(rng, kind, n, m)
    ys = all_labellings(n, m)
    ref = count_scores(pot, ys, m, fixed)
    table = fac.to_table()
    assert table.shape == (m,) * n
    assert_allclose(table.reshape(-1), ref, atol=1e-12)
    if n:
        assert_allclose(fac.evaluate(ys), ref, atol=1e-12)
        assert fac.evaluate(np.zeros((0, n), dtype=np.int64)).shape == (0,)
        # condition on a random subset: the table sliced
        observed = {int(v): int(rng.integers(m)) for v in range(n) if rng.random() < 0.5}
        sub = fac.condition(observed)
        index = tuple(observed.get(v, slice(None)) for v in range(n))
        if len(observed) == n:
            assert isinstance(sub, float) and np.isclose(sub, table[index]) or sub == table[index] == -np.inf
        else:
            assert_allclose(sub.to_table(), table[index], atol=1e-12)
            assert sub.variables.tolist() == [v for v in range(n) if v not in observed]


def test_attributes_relabel_repr_and_family():
    fac = CliqueFactor([4, 2, 7], Potts(0.5), n_states=3)
    assert fac.variables.tolist() == [4, 2, 7] and fac.n_states == 3 and fac.family == "sum"
    assert fac.fixed_counts.tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="read-only"):
        fac.fixed_counts[0] = 1
    assert repr(fac) == "CliqueFactor(variables=[4, 2, 7], potential=Potts(0.5), n_states=3)"
    moved = fac.relabel(np.arange(10)[::-1])
    assert moved.variables.tolist() == [5, 7, 2] and moved.potential is fac.potential
    assert fac.condition({}) is fac
    cond = fac.condition({2: 1})
    assert repr(cond) == "CliqueFactor(variables=[4, 7], potential=Potts(0.5), n_states=3, fixed_counts=[0, 1, 0])"
    assert CliqueFactor([0, 1], SumPotential(np.zeros((4, 3)))).n_states == 4  # the table fixes m
    assert CliqueFactor([0, 1], LinearMajority(np.eye(3))).family == "majority"


def test_graph_use_and_exact_inference_through_the_table():
    rng = np.random.default_rng(3)
    fg = FactorGraph([3, 3, 3, 3])
    for v in range(4):
        fg.add_factor(TableFactor([v], rng.normal(size=3)))
    fac = CliqueFactor([0, 1, 2, 3], Potts(0.4), n_states=3)
    fg.add_factor(fac)
    ys = all_labellings(4, 3)
    assert_allclose(fg.score(ys[:5]), [fg.score(y) for y in ys[:5]])
    ref = enumerate_marginals(fg)
    assert_allclose(np.exp(ref.log_partition), np.exp(fg.score(ys)).sum(), rtol=1e-12)


BAD = [
    (lambda: CliqueFactor([0, 1], "potts", n_states=3), TypeError, "`potential` must be a tractable.clique."),
    (
        lambda: CliqueFactor([0, 1], Potts(1.0)).to_table(),
        ValueError,
        "the number of states of CliqueFactor(variables=[0, 1], potential=Potts(1.0), n_states=None) is not known",
    ),
    (
        lambda: CliqueFactor([0, 1], SumPotential(np.zeros((3, 3))), n_states=4),
        ValueError,
        "`n_states` must be 3, the number of labels of SumPotential(table of shape (3, 3)); got 4.",
    ),
    (lambda: CliqueFactor([0, 1], Potts(1.0), n_states=1), ValueError, "`n_states` must be >= 2; got 1."),
    (lambda: CliqueFactor([0, 0], Potts(1.0), n_states=2), ValueError, "`variables` must list distinct variables"),
    (
        lambda: CliqueFactor([0, 1], Potts(1.0), n_states=3, fixed_counts=[1, 0]),
        ValueError,
        "`fixed_counts` must have shape (3,) (one count per state); got (2,).",
    ),
    (
        lambda: CliqueFactor([0, 1], Potts(1.0), n_states=2, fixed_counts=[1, -1]),
        ValueError,
        "`fixed_counts` must be non-negative; got [1, -1].",
    ),
    (
        lambda: CliqueFactor([0, 1, 2], SumPotential(np.zeros((2, 3))), n_states=2),
        ValueError,
        "`potential.table` must have shape (2, >= 4) for a clique of 3 nodes and 2 labels",
    ),
    (
        lambda: CliqueFactor(np.arange(30), Potts(1.0), n_states=2).to_table(),
        ValueError,
        "a CliqueFactor over 30 variables with 2 states has no dense table",
    ),
]


@pytest.mark.parametrize("make, error, message", BAD)
def test_bad_input_names_the_argument(make, error, message):
    with pytest.raises(error, match=re.escape(message)):
        make()


def test_a_variable_with_another_cardinality_names_the_factor():
    fg = FactorGraph([3, 3, 4])
    with pytest.raises(
        ValueError,
        match=re.escape(
            "every variable of CliqueFactor(variables=[0, 1, 2], potential=Potts(0.5), n_states=3) must have 3 "
            "states (`n_states`); variable 2 has cardinality 4."
        ),
    ):
        fg.add_factor(CliqueFactor([0, 1, 2], Potts(0.5), n_states=3))


# --------------------------------------------------------------------------- (b) messages of one factor
def test_handler_is_registered_with_its_methods():
    assert isinstance(HANDLERS[CliqueFactor], CliqueMessages)
    cases = {
        "cardinality": CliqueFactor([0, 1], Potts(1.0), n_states=2),
        "max_family": CliqueFactor([0, 1], Makespan(1.0), n_states=3),
        "sum_family": CliqueFactor([0, 1], Potts(1.0), n_states=3),
        "majority_alpha_pass": CliqueFactor([0, 1], LinearMajority(np.eye(3))),
        "alpha_pass": CliqueFactor([0, 1], Makespan(-1.0), n_states=3),
    }
    for method, fac in cases.items():
        assert max_product_method(fac) == (method, method in ("cardinality", "max_family"))
    t = np.zeros((3, 3))
    t[0, 1] = -np.inf
    assert max_product_method(CliqueFactor([0, 1], SumPotential(t))) == ("alpha_pass", False)


@settings(max_examples=80, deadline=None)
@given(
    kind=st.sampled_from(FAMILIES),
    n=st.integers(1, 8),
    m=st.integers(2, 4),
    seed=st.integers(0, 2**31),
    p_clamp=st.sampled_from([0.0, 0.3]),
)
def test_max_product_messages_are_exact_for_max_potentials_and_two_states(kind, n, m, seed, p_clamp):
    if kind not in EXACT_MAX:
        m = 2  # every family is exact with two states
    if m**n > 4**7:
        n = 7
    rng = np.random.default_rng(seed)
    fac, pot, fixed = random_factor(rng, kind, n, m)
    incoming = random_incoming(rng, n, m, p_clamp)
    ours, _ = run_handler(fac, incoming, "max")
    ref, _ = clique_messages(pot, incoming, "max", fixed)
    assert not np.isnan(ours).any()
    assert_allclose(normalized(ours, "max"), normalized(ref, "max"), atol=TOL)


@settings(max_examples=80, deadline=None)
@given(
    kind=st.sampled_from(("potts", "entropy", "sum_table", "general")),
    n=st.integers(1, 7),
    m=st.integers(3, 4),
    seed=st.integers(0, 2**31),
    p_clamp=st.sampled_from([0.0, 0.3]),
)
def test_max_product_messages_of_sum_and_general_potentials_are_clamped_alpha_pass(kind, n, m, seed, p_clamp):
    """The definition (alpha-pass on each clamped clique, Sec. 3.1 of Gupta et al.) and a lower bound."""
    rng = np.random.default_rng(seed)
    fac, pot, fixed = random_factor(rng, kind, n, m)
    incoming = random_incoming(rng, n, m, p_clamp)
    ours, _ = run_handler(fac, incoming, "max")
    assert not np.isnan(ours).any()
    defined = clamped_alpha_pass(incoming, pot, fixed)
    assert_allclose(ours, defined, atol=TOL)
    exact, _ = clique_messages(pot, incoming, "max", fixed)
    assert np.all(ours <= exact + TOL)  # the score of a labelling with y_u = l
    if not np.any(fixed):  # every node's best max-marginal is at least the unclamped alpha-pass score
        best = alpha_pass(incoming, pot).score
        assert np.all(np.max(incoming + ours, axis=1) >= best - TOL)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 7), m=st.integers(3, 4), seed=st.integers(0, 2**31))
def test_potts_messages_are_at_least_four_fifths_of_the_exact_ones(n, m, seed):
    """Thm 3.3 of Gupta et al. holds for each clamped clique when lam >= 0 and the node potentials are >= 0."""
    rng = np.random.default_rng(seed)
    phi = rng.uniform(0, 2, size=(n, m))
    pot = Potts(float(rng.uniform(0.01, 1.5)))
    ours, _ = run_handler(CliqueFactor(np.arange(n), pot, n_states=m), phi, "max")
    exact, _ = clique_messages(pot, phi, "max")
    assert np.all(ours >= 0.8 * exact - TOL)
    assert np.all(ours <= exact + TOL)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 6), m=st.integers(3, 4), seed=st.integers(0, 2**31), p_clamp=st.sampled_from([0.0, 0.3]))
def test_majority_messages_bound_the_modified_alpha_pass_from_above_and_the_exact_ones_from_below(n, m, seed, p_clamp):
    rng = np.random.default_rng(seed)
    pot = LinearMajority(rng.normal(size=(m, m)))
    incoming = random_incoming(rng, n, m, p_clamp)
    ours, _ = run_handler(CliqueFactor(np.arange(n), pot), incoming, "max")
    paper = clamped_alpha_pass(incoming, pot, np.zeros(m, dtype=np.int64), method=majority_alpha_pass)
    exact, _ = clique_messages(pot, incoming, "max")
    assert np.all(ours >= paper - TOL)  # its candidates, scored by the true potential, and more
    assert np.all(ours <= exact + TOL)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 9), m=st.integers(3, 5), seed=st.integers(0, 2**31), p_clamp=st.sampled_from([0.0, 0.3]))
def test_sum_kernel_equals_the_enumerated_candidates(n, m, seed, p_clamp):
    """Specialized equals generic: the O(n m^2) sweeps and the O(n^2 m^2) enumeration of the same candidates."""
    rng = np.random.default_rng(seed)
    t = rng.normal(size=(m, n + 1))
    incoming = random_incoming(rng, n, m, p_clamp)
    fast = sum_family_messages(incoming, t)
    slow = relabel_messages(incoming, lambda c: t[np.arange(m), c].sum(axis=-1))
    assert_allclose(fast, slow, atol=TOL)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 9), m=st.integers(2, 5), seed=st.integers(0, 2**31), p_clamp=st.sampled_from([0.0, 0.3]))
def test_majority_kernel_equals_the_enumerated_candidates(n, m, seed, p_clamp):
    """Specialized equals generic, with ties in the counts (integer weights) and fixed counts."""
    rng = np.random.default_rng(seed)
    W = np.round(rng.normal(size=(m, m)) * 2) / 2
    fixed = rng.integers(0, 3, size=m)
    pot = LinearMajority(W)
    incoming = random_incoming(rng, n, m, p_clamp)
    fast = majority_messages(incoming, W, fixed)
    slow = relabel_messages(incoming, lambda c: pot(c + fixed), sweep_phi=lambda a: incoming + W[a][None, :])
    assert np.array_equal(np.isneginf(fast), np.isneginf(slow))
    assert_allclose(fast[np.isfinite(fast)], slow[np.isfinite(slow)], atol=TOL)


@settings(max_examples=80, deadline=None)
@given(
    kind=st.sampled_from(FAMILIES),
    n=st.integers(1, 7),
    m=st.integers(2, 4),
    seed=st.integers(0, 2**31),
    p_clamp=st.sampled_from([0.0, 0.3]),
)
def test_sum_product_messages_and_log_partition_are_exact(kind, n, m, seed, p_clamp):
    if m**n > 4**6:
        n = 6
    rng = np.random.default_rng(seed)
    fac, pot, fixed = random_factor(rng, kind, n, m)
    incoming = random_incoming(rng, n, m, p_clamp, kind="sum")
    ref, ref_z = clique_messages(pot, incoming, "sum", fixed)
    if ref_z == -np.inf:
        with pytest.raises(ZeroPartitionError):
            run_handler(fac, incoming, "sum")
        return
    ours, ours_z = run_handler(fac, incoming, "sum")
    assert not np.isnan(ours).any()
    assert np.array_equal(np.isneginf(ours), np.isneginf(ref))  # hard zeros are exact zeros
    assert_allclose(normalized(ours, "sum"), normalized(ref, "sum"), atol=TOL)
    assert_allclose(ours_z, ref_z, atol=TOL, rtol=TOL)


def test_a_group_of_factors_writes_only_its_edges():
    rng = np.random.default_rng(5)
    f1 = CliqueFactor(np.arange(4), Potts(0.3), n_states=3)
    f2 = CliqueFactor(np.arange(3), Makespan(0.7), n_states=3)
    handler = HANDLERS[CliqueFactor]
    e1, e2 = np.array([6, 0, 2, 4]), np.array([5, 1, 3])
    compiled = handler.compile([f1, f2], [e1, e2], np.full(10, 3))
    for kind in ("sum", "max"):
        incoming = random_incoming(rng, 8, 3, 0.0, kind)
        out = np.full((8, 3), -np.inf)
        handler.messages(compiled, incoming, out, kind)
        assert np.all(np.isneginf(out[7]))
        for fac, e in ((f1, e1), (f2, e2)):
            ref, _ = clique_messages(fac.potential, incoming[e], kind)
            ours = out[e]
            if kind == "max" and fac is f1:  # Potts: alpha-pass messages
                ref = clamped_alpha_pass(incoming[e], fac.potential, fac.fixed_counts)
            assert_allclose(normalized(ours, kind), normalized(ref, kind), atol=TOL)
    z = handler.log_partition(compiled, incoming)
    z1 = clique_messages(f1.potential, incoming[e1], "sum")[1]
    z2 = clique_messages(f2.potential, incoming[e2], "sum")[1]
    assert_allclose(z, z1 + z2, atol=TOL)


def test_factor_beliefs_of_a_small_clique_are_its_normalized_table():
    rng = np.random.default_rng(2)
    fac = CliqueFactor([0, 1, 2], Entropy(0.5), n_states=3)
    handler = HANDLERS[CliqueFactor]
    compiled = handler.compile([fac], [np.arange(3)], np.full(3, 3))
    incoming = random_incoming(rng, 3, 3, 0.2, "sum")
    (belief,) = handler.factor_beliefs(compiled, incoming, "sum")
    x = fac.to_table() + incoming[0][:, None, None] + incoming[1][None, :, None] + incoming[2][None, None, :]
    assert_allclose(belief, np.exp(x) / np.exp(x).sum(), atol=1e-12)
    big = CliqueFactor(np.arange(9), Potts(1.0), n_states=3)  # 3**9 > 4096 entries: no table
    compiled = handler.compile([big], [np.arange(9)], np.full(9, 3))
    assert handler.factor_beliefs(compiled, np.zeros((9, 3)), "max") == [None]


def test_sum_product_is_refused_for_a_large_clique_and_max_product_is_not():
    fac = CliqueFactor(np.arange(100), Potts(0.01), n_states=24)
    handler = HANDLERS[CliqueFactor]
    compiled = handler.compile([fac], [np.arange(100)], np.full(100, 24))
    message = "(SUM family) has no sum-product messages here: they are exact by a dynamic program over count vectors"
    with pytest.raises(ValueError, match=re.escape(message)) as err:
        handler.check(compiled, "sum")
    assert "the CliqueFactor over 100 variables [0, 1, 2, 3, ..., 98, 99] with potential Potts(0.01)" in str(err.value)
    handler.check(compiled, "max")
    rng = np.random.default_rng(0)
    phi = rng.uniform(0, 2, size=(100, 24))
    out = np.full((100, 24), -np.inf)
    handler.messages(compiled, phi, out, "max")
    best = alpha_pass(phi, fac.potential).score
    assert np.all(np.max(phi + out, axis=1) >= best - 1e-9)


def test_a_factor_that_forbids_every_count_has_no_mass():
    t = np.full((3, 4), -np.inf)
    for m, pot in ((3, SumPotential(t)), (2, SumPotential(t[:2]))):
        fac = CliqueFactor([0, 1, 2], pot)
        with pytest.raises(ZeroPartitionError, match="gives every configuration zero mass"):
            run_handler(fac, np.zeros((3, m)), "sum")
        out, _ = run_handler(fac, np.zeros((3, m)), "max")
        assert np.all(np.isneginf(out))


# --------------------------------------------------------------------------- (c) loopy BP with cliques
def _tree_graph(rng, potential, m, n_clique=4):
    """A clique over 0..n-1, unaries everywhere, and a pendant chain off variable 0 (a tree of factors)."""
    n = n_clique + 2
    fg = FactorGraph([m] * n)
    for v in range(n):
        fg.add_factor(TableFactor([v], rng.normal(size=m)))
    fg.add_factor(CliqueFactor(np.arange(n_clique), potential, n_states=m))
    fg.add_factor(TableFactor([0, n_clique], rng.normal(size=(m, m))))
    fg.add_factor(TableFactor([n_clique, n_clique + 1], rng.normal(size=(m, m))))
    return fg


@settings(max_examples=25, deadline=None)
@given(
    kind=st.sampled_from(FAMILIES),
    m=st.integers(2, 3),
    seed=st.integers(0, 2**31),
    schedule=st.sampled_from(["parallel", "sequential"]),
)
def test_sum_product_on_a_tree_is_exact(kind, m, seed, schedule):
    rng = np.random.default_rng(seed)
    fg = _tree_graph(rng, make_potential(kind, 4, m, rng), m)
    ref = enumerate_marginals(fg)
    res = loopy(fg, task="marginals", schedule=schedule, rng=0 if schedule == "sequential" else None)
    assert res.converged
    assert_allclose(res.marginals, ref.marginals, atol=1e-8)
    assert_allclose(res.log_partition, ref.log_partition, atol=1e-8)


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(EXACT_MAX), m=st.integers(2, 3), seed=st.integers(0, 2**31))
def test_max_product_on_a_tree_with_a_max_potential_finds_the_map(kind, m, seed):
    rng = np.random.default_rng(seed)
    fg = _tree_graph(rng, make_potential(kind, 4, m, rng), m)
    res = loopy(fg, task="map")
    assert_allclose(res.score, enumerate_map(fg).score, atol=1e-9)


def test_max_product_with_potts_scores_a_labelling_no_better_than_the_map():
    rng = np.random.default_rng(1)
    fg = _tree_graph(rng, Potts(0.4), 3)
    res = loopy(fg, task="map")
    assert np.isfinite(res.score) and res.score <= enumerate_map(fg).score + 1e-9


def test_evidence_conditions_the_clique():
    rng = np.random.default_rng(4)
    fg = _tree_graph(rng, Potts(0.3), 3)
    res = loopy(fg, evidence={1: 2, 4: 0})
    ref = enumerate_marginals(fg.condition({1: 2, 4: 0}))
    assert_allclose(np.delete(np.asarray(res.marginals), [1, 4], axis=0), ref.marginals, atol=1e-8)
    assert_allclose(res.marginals[1], [0.0, 0.0, 1.0])


def test_loopy_marginals_refuse_a_large_clique_before_iterating():
    fg = FactorGraph([24] * 100)
    fg.add_factor(CliqueFactor(np.arange(100), Potts(0.01), n_states=24))
    with pytest.raises(ValueError, match=re.escape("has no sum-product messages here")):
        loopy(fg, task="marginals", max_iter=1)
    res = loopy(fg, task="map", max_iter=5)
    assert np.isfinite(res.score)


def test_forbidden_counts_and_states_never_give_nan():
    # at most two variables of the clique take label 0; variable 2 may not take label 1
    t = np.zeros((3, 5))
    t[0, 3:] = -np.inf
    fg = FactorGraph([3] * 4)
    fg.add_factor(CliqueFactor(np.arange(4), SumPotential(t)))
    fg.add_factor(TableFactor([2], [0.0, -np.inf, 0.5]))
    for v, top in ((0, 2.0), (1, 1.9), (3, 1.8)):  # distinct, so that the max-marginals do not tie
        fg.add_factor(TableFactor([v], [top, 0.0, 0.1]))
    ref = enumerate_marginals(fg)
    res = loopy(fg)
    assert not np.isnan(res.marginals).any()
    assert_allclose(res.marginals, ref.marginals, atol=1e-8)
    mp = loopy(fg, task="map")
    assert np.isfinite(mp.score) and mp.score <= enumerate_map(fg).score + 1e-9


def test_loopy_factor_marginals_of_a_small_clique_on_a_tree_are_exact():
    rng = np.random.default_rng(8)
    fg = _tree_graph(rng, Entropy(0.4), 3)
    res = loopy(fg)
    fi = next(i for i, f in enumerate(fg.factors) if isinstance(f, CliqueFactor))
    ys = all_labellings(6, 3)
    p = np.exp(fg.score(ys) - enumerate_marginals(fg).log_partition)
    joint = np.zeros((3,) * 4)
    np.add.at(joint, tuple(ys[:, :4].T), p)
    assert_allclose(res.factor_marginals[fi], joint, atol=1e-8)


def test_a_clique_built_without_n_states_takes_the_graphs_cardinality():
    """``CliqueFactor(variables, Potts(...))``: the graph it joins gives its number of states; alone it has no
    table; variables of different cardinalities are an error naming the factor."""
    from tractable import FactorGraph, TableFactor
    from tractable.bp import loopy
    from tractable.clique import Potts
    from tractable.exact import enumerate_map

    fac = CliqueFactor([0, 1, 2], Potts(0.5))
    with pytest.raises(ValueError, match="is not known yet: give `n_states`"):
        fac.to_table()
    with pytest.raises(ValueError, match="`fixed_counts` needs `n_states`"):
        CliqueFactor([0, 1], Potts(0.5), fixed_counts=[1, 0])
    fg = FactorGraph([3, 3, 3])
    for i, u in enumerate([0.3, -0.1, 0.2]):
        fg.add_factor(TableFactor([i], [0.0, u, 0.1]))
    fg.add_factor(fac)
    assert fg.factors[-1].n_states == 3 and fac.n_states is None
    np.testing.assert_array_equal(loopy(fg, task="map").assignment, enumerate_map(fg).assignment)
    with pytest.raises(ValueError, match="must have 3 states"):
        FactorGraph([3, 2, 3]).add_factor(CliqueFactor([0, 1, 2], Potts(0.5)))
