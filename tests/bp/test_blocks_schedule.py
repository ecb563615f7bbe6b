"""The ``"blocks"`` schedule of loopy BP: spanning forests of pairwise factors updated by one exact sweep each.

Oracles: brute-force enumeration (exact on trees, after one iteration), a plain union-find (the spanning
forest), the readable NumPy twin of the compiled sweep, and the parallel schedule's converged messages (on
loopy graphs the two schedules share their fixed points).
"""

import re
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from _oracles import joint_scores
from tractable import (
    CardinalityFactor,
    CliqueFactor,
    ConvergenceWarning,
    FactorGraph,
    TableFactor,
    ZeroPartitionError,
)
from tractable.bp import _blocks, loopy
from tractable.bp._wiring import Workspace, compile_graph
from tractable.clique import Potts
from tractable.datasets.conll2003 import collective_factor_graph
from tractable.exact import enumerate_map, enumerate_marginals

_loopy = sys.modules["tractable.bp.loopy"]  # the module (the package exports the function under its name)

# Exact paths (the sweep against enumeration, the kernel against its twin) add the same log-space terms in
# other orders: they agree to rounding, a few ulps of sums of O(10) terms of magnitude O(10); 1e-9 is wide.
TOL = 1e-9


def _one_iteration(fg, **kwargs):
    """``loopy(fg, schedule="blocks", max_iter=1)``, whose stopping short (by design) is not a warning here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return loopy(fg, schedule="blocks", max_iter=1, **kwargs)


def _random_pairwise_forest(rng, n, *, p_drop=0.2, p_forbid=0.1, states=(2, 3)):
    """A pairwise model on a random forest over ``n`` variables (2 or 3 states): each variable after the first
    joins an earlier one (unless dropped: a new tree), tables drawn N(0, 1.5) in a random axis order, some
    entries ``-inf``; unary tables on most variables."""
    card = rng.choice(states, size=n)
    fg = FactorGraph(card)
    perm = rng.permutation(n)
    for i in range(1, n):
        if rng.random() < p_drop:
            continue
        a, b = int(perm[int(rng.integers(i))]), int(perm[i])
        if rng.random() < 0.5:
            a, b = b, a
        t = rng.normal(0, 1.5, size=(card[a], card[b]))
        t[rng.random(t.shape) < p_forbid] = -np.inf
        fg.add_factor(TableFactor([a, b], t))
    for v in range(n):
        if rng.random() < 0.8:
            u = rng.normal(0, 1, size=card[v])
            u[rng.random(card[v]) < p_forbid] = -np.inf
            fg.add_factor(TableFactor([v], u))
    return fg


def _pair_marginals(fg):
    """Exact marginal table of every factor over two variables, by enumeration ``{position: table}``."""
    ys, scores = joint_scores(fg)
    p = np.exp(scores - scores.max())
    p /= p.sum()
    out = {}
    for i, f in enumerate(fg.factors):
        if len(f.variables) == 2:
            a, b = f.variables
            table = np.zeros((fg.cardinalities[a], fg.cardinalities[b]))
            np.add.at(table, (ys[:, a], ys[:, b]), p)
            out[i] = table
    return out


# --------------------------------------------------------------------------- the spanning forest
def _union_find_forest(u, v, n):
    """The greedy forest by a plain union-find in edge order: the reference of ``spanning_forest``."""
    root = list(range(n))

    def find(a):
        while root[a] != a:
            a = root[a]
        return a

    keep = []
    for a, b in zip(u.tolist(), v.tolist()):
        ra, rb = find(a), find(b)
        keep.append(ra != rb)
        if ra != rb:
            root[ra] = rb
    return np.array(keep, dtype=bool)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 12), e=st.integers(0, 30), seed=st.integers(0, 2**31))
def test_spanning_forest_is_the_greedy_union_find(n, e, seed):
    rng = np.random.default_rng(seed)
    u, v = rng.integers(0, n, size=e), rng.integers(0, n, size=e)  # repeated pairs and self loops included
    keep = _blocks.spanning_forest(u, v, n)
    assert keep.tolist() == _union_find_forest(u, v, n).tolist()


def test_the_forest_of_an_ising_grid_spans_it_and_the_rest_close_cycles():
    n = 5
    fg = FactorGraph([2] * (n * n))
    idx = np.arange(n * n).reshape(n, n)
    pairs = [(a, b) for a, b in zip(idx[:, :-1].ravel(), idx[:, 1:].ravel())]
    pairs += [(a, b) for a, b in zip(idx[:-1].ravel(), idx[1:].ravel())]
    for a, b in pairs:
        fg.add_factor(TableFactor([int(a), int(b)], [[0.3, 0.0], [0.0, 0.3]]))
    w = compile_graph(fg, blocks=True)
    gi, tables = w.blocks
    assert gi == len(w.groups) - 1 and tables.shape == (n * n - 1, 2, 2)  # a spanning tree of the grid
    # greedy in factor order: every right edge (rows become chains), then the first column's down edges
    chosen = list(w.groups[gi][3])
    assert chosen == list(range(n * (n - 1))) + [n * (n - 1) + n * r for r in range(n - 1)]
    off = [p for g in w.groups[:gi] for p in g[3]]
    assert sorted(off + chosen) == list(range(len(pairs)))


# --------------------------------------------------------------------------- the compiled sweep against its twin
def _forest_and_workspace(fg, kind, damping=0.0):
    w = compile_graph(fg, blocks=True)
    nu = _loopy._normalize(np.where(w.pad, -np.inf, 0.0), kind)
    return w, Workspace(w, nu, kind, damping)


@pytest.mark.parametrize("kind", ["sum", "max"])
@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 10), seed=st.integers(0, 2**31))
def test_compiled_sweep_equals_its_numpy_twin(kind, n, seed):
    rng = np.random.default_rng(seed)
    fg = _random_pairwise_forest(rng, n)
    w, ws = _forest_and_workspace(fg, kind)
    if w.blocks is None:
        return
    forest = _blocks.compile_forest(w)
    # random evidence (messages from elsewhere): some entries -inf, never a whole row
    k = w.width
    ws.new[:] = rng.normal(0, 2, size=ws.new.shape)
    ws.new[rng.random(ws.new.shape) < 0.15] = -np.inf
    forest.evidence(ws)
    h = np.where(forest.hninf > 0, -np.inf, forest.hfin)
    if np.any(np.all(np.isneginf(h), axis=1)):
        return
    try:
        up, down = _blocks.forest_messages_python(forest, forest.hfin, forest.hninf, kind)
    except ZeroPartitionError:
        with pytest.raises(ZeroPartitionError, match="a tree of pairwise factors"):
            forest.update(ws)
        return
    forest.update(ws)
    nn = forest.parent.shape[0]
    child = np.flatnonzero(forest.parent >= 0)
    for rows, ref in ((forest.edge[child], up[child]), (forest.edge[nn + child], down[child])):
        got = ws.new[rows, :k]
        top = np.logaddexp.reduce(got, axis=1) if kind == "sum" else got.max(axis=1)
        assert_allclose(np.exp(got - top[:, None]), np.exp(ref), atol=TOL)


# --------------------------------------------------------------------------- exactness on trees
@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 8), seed=st.integers(0, 2**31))
def test_sum_product_on_a_pairwise_forest_is_exact_after_one_iteration(n, seed):
    rng = np.random.default_rng(seed)
    fg = _random_pairwise_forest(rng, n)
    try:
        ref = enumerate_marginals(fg)
    except ZeroPartitionError:
        with pytest.raises(ZeroPartitionError):
            _one_iteration(fg)
        return
    res = _one_iteration(fg)
    assert res.n_iter == 1
    for i in range(n):
        assert_allclose(res.marginals[i], ref.marginals[i], atol=TOL)
    assert_allclose(res.log_partition, ref.log_partition, atol=1e-8, rtol=1e-10)
    for i, table in _pair_marginals(fg).items():  # factor beliefs: the exact pair marginals on a tree
        assert_allclose(res.factor_marginals[i], table, atol=TOL)


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 8), seed=st.integers(0, 2**31))
def test_max_product_on_a_pairwise_forest_decodes_the_map_after_one_iteration(n, seed):
    rng = np.random.default_rng(seed)
    fg = _random_pairwise_forest(rng, n)
    try:
        ref = enumerate_map(fg)
    except ZeroPartitionError:
        return
    res = _one_iteration(fg, task="map")
    # continuous random potentials: the MAP is unique almost surely, so the decoding must equal it
    assert_allclose(res.score, ref.score, atol=TOL)
    assert res.assignment.tolist() == ref.assignment.tolist()


@pytest.mark.parametrize("task", ["marginals", "map"])
def test_damped_on_a_tree_with_forbidden_states_it_converges_to_the_exact_answer(task):
    fg = _random_pairwise_forest(np.random.default_rng(11), 8, p_drop=0.0, p_forbid=0.2)
    res = loopy(fg, schedule="blocks", task=task, damping=0.5, tol=1e-13)
    assert res.converged
    if task == "marginals":
        ref = enumerate_marginals(fg)
        for i in range(8):
            assert_allclose(res.marginals[i], ref.marginals[i], atol=TOL)
        assert_allclose(res.log_partition, ref.log_partition, atol=1e-8)
    else:
        assert_allclose(res.score, enumerate_map(fg).score, atol=TOL)


@pytest.mark.parametrize("task", ["marginals", "map"])
def test_on_a_tree_the_second_iteration_changes_nothing_and_converges(task):
    fg = _random_pairwise_forest(np.random.default_rng(3), 8, p_forbid=0.0)
    res = loopy(fg, schedule="blocks", task=task, tol=1e-12)
    assert res.converged and res.n_iter == 2 and res.max_residual < 1e-12


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 9), seed=st.integers(0, 2**31))
def test_a_tree_with_high_order_factors_converges_to_the_exact_marginals(n, seed):
    """A factor graph that is a tree with cardinality factors in it: the forest sweep and the other factors'
    messages alternate, and the fixed point is the exact one."""
    rng = np.random.default_rng(seed)
    m = FactorGraph([2] * (n + 3))
    for v in range(1, n):  # a chain of pairwise factors, then cardinality factors over fresh variables
        m.add_factor(TableFactor([v - 1, v], rng.normal(0, 1, size=(2, 2))))
    m.add_factor(CardinalityFactor([0, n, n + 1], rng.normal(0, 1, size=4)))
    m.add_factor(CardinalityFactor([n - 1, n + 2], rng.normal(0, 1, size=3)))
    for v in range(n + 3):
        m.add_factor(TableFactor([v], [0.0, rng.normal()]))
    ref = enumerate_marginals(m)
    res = loopy(m, schedule="blocks", tol=1e-12)
    assert res.converged
    assert_allclose(np.asarray(res.marginals), ref.marginals, atol=TOL)
    assert_allclose(res.log_partition, ref.log_partition, atol=1e-8)


def test_huge_and_underflowing_tables_stay_exact():
    """A table shifted at compile time (entries near 1e7) and one whose weights underflow (differences of
    900: the sweep's log-space path) on a chain: exact after one iteration."""
    fg = FactorGraph([2, 3, 2])
    fg.add_factor(TableFactor([0, 1], 1e7 + np.array([[0.0, 0.4, -0.3], [0.2, -0.1, 0.5]])))
    fg.add_factor(TableFactor([1, 2], np.array([[0.0, -900.0], [-900.0, 0.3], [0.1, 0.0]])))
    fg.add_factor(TableFactor([2], [0.0, 900.0]))
    ref = enumerate_marginals(fg)
    res = _one_iteration(fg)
    for i in range(3):
        assert_allclose(res.marginals[i], ref.marginals[i], atol=TOL)
    assert_allclose(res.log_partition, ref.log_partition, rtol=1e-12)


# --------------------------------------------------------------------------- fixed points on loopy graphs
def _ising(n, seed, scale):
    rng = np.random.default_rng(seed)
    fg = FactorGraph([2] * (n * n))
    for v in range(n * n):
        fg.add_factor(TableFactor([v], [0.0, rng.normal()]))
    idx = np.arange(n * n).reshape(n, n)
    for a, b in [*zip(idx[:, :-1].ravel(), idx[:, 1:].ravel()), *zip(idx[:-1].ravel(), idx[1:].ravel())]:
        j = scale * rng.normal()
        fg.add_factor(TableFactor([int(a), int(b)], [[j, -j], [-j, j]]))
    return fg


# Both schedules stop when no message moves by more than tol = 1e-12; at a contraction rate r the distance
# left to the fixed point is about tol / (1 - r), r < 0.9 on these weakly coupled grids, and marginals move
# no more than the messages: 1e-9 leaves a wide margin over 1e-11 while far below any real difference.
FIXED_POINT_TOL = 1e-9


@pytest.mark.parametrize("damping", [0.0, 0.4])
@pytest.mark.parametrize("shape", [(3, 0.8), (6, 0.5)])
def test_on_ising_grids_the_fixed_point_is_the_parallel_schedules(shape, damping, seed):
    n, scale = shape
    fg = _ising(n, seed, scale)
    par = loopy(fg, tol=1e-12, max_iter=5000)
    blk = loopy(fg, schedule="blocks", tol=1e-12, max_iter=5000, damping=damping)
    assert par.converged and blk.converged, (par.message, blk.message)
    assert_allclose(np.asarray(blk.marginals), np.asarray(par.marginals), atol=FIXED_POINT_TOL)
    assert_allclose(blk.log_partition, par.log_partition, atol=FIXED_POINT_TOL)
    for a, b in zip(blk.factor_marginals, par.factor_marginals):
        assert_allclose(a, b, atol=FIXED_POINT_TOL)
    if damping == 0.0:
        assert blk.n_iter < par.n_iter  # a tree crosses in one iteration what flooding passes edge by edge


@pytest.mark.parametrize("damping", [0.0, 0.5])
def test_on_an_ising_grid_max_product_fixed_points_agree(damping):
    # max-product need not converge on a grid (it oscillates on some instances at any damping): one that does
    fg = _ising(4, 0, 0.3)
    par = loopy(fg, task="map", tol=1e-12, max_iter=5000, damping=damping)
    blk = loopy(fg, task="map", schedule="blocks", tol=1e-12, max_iter=5000, damping=damping)
    assert par.converged and blk.converged
    assert_allclose(np.asarray(blk.marginals), np.asarray(par.marginals), atol=FIXED_POINT_TOL)
    assert _untied_agree(blk, par)


def _chains_and_cliques(seed):
    """A document of three sentences (linear chains over 3 labels) whose repeated tokens are tied by Potts
    cliques: :func:`tractable.datasets.conll2003.collective_factor_graph`."""
    rng = np.random.default_rng(seed)
    lengths = [5, 4, 6]
    unary = rng.normal(0, 1, size=(sum(lengths), 3))
    transitions = rng.normal(0, 1, size=(3, 3))
    return collective_factor_graph(unary, transitions, lengths, [[0, 6, 11], [3, 13]], lambda n: Potts(0.5 / n))


def _untied_agree(a, b, tie=1e-6):
    """Whether two decodings agree on every variable whose two best normalized max-marginals differ by more than
    ``tie`` (elsewhere either state is a maximizer up to the schedules' rounding)."""
    m = np.sort(np.asarray(a.marginals), axis=1)
    clear = m[:, -1] - m[:, -2] > tie
    return a.assignment[clear].tolist() == b.assignment[clear].tolist()


@pytest.mark.parametrize("task", ["marginals", "map"])
def test_on_chains_with_clique_factors_the_fixed_point_is_the_parallel_schedules(task, seed):
    fg = _chains_and_cliques(seed)
    assert any(isinstance(f, CliqueFactor) for f in fg.factors)
    # max-product oscillates on some of these documents without damping (seed 52): damped, it settles
    damping = 0.0 if task == "marginals" else 0.5
    par = loopy(fg, task=task, tol=1e-12, max_iter=5000, damping=damping)
    blk = loopy(fg, task=task, schedule="blocks", tol=1e-12, max_iter=5000, damping=damping)
    assert par.converged and blk.converged, (par.message, blk.message)
    assert_allclose(np.asarray(blk.marginals), np.asarray(par.marginals), atol=FIXED_POINT_TOL)
    if task == "marginals":
        assert blk.n_iter < par.n_iter  # each chain is one block: crossed in one iteration
        assert_allclose(blk.log_partition, par.log_partition, atol=FIXED_POINT_TOL)
    else:
        assert _untied_agree(blk, par)


# --------------------------------------------------------------------------- the rest of the interface
def test_evidence_conditions_the_graph_as_on_the_parallel_schedule():
    fg = _ising(3, 2, 0.6)
    ev = {0: 1, 4: 0}
    par = loopy(fg, evidence=ev, tol=1e-12, max_iter=5000)
    blk = loopy(fg, evidence=ev, schedule="blocks", tol=1e-12, max_iter=5000)
    assert_allclose(np.asarray(blk.marginals), np.asarray(par.marginals), atol=FIXED_POINT_TOL)
    assert blk.marginals[0].tolist() == [0.0, 1.0] and blk.marginals[4].tolist() == [1.0, 0.0]


def test_a_graph_without_pairwise_factors_runs_as_the_parallel_schedule():
    fg = FactorGraph([2] * 4)
    fg.add_factor(CardinalityFactor([0, 1, 2, 3], [0.0, 1.0, -0.5, 0.2, -np.inf]))
    fg.add_factor(TableFactor([0, 1, 2], np.arange(8.0).reshape(2, 2, 2) / 8))
    for v in range(4):
        fg.add_factor(TableFactor([v], [0.0, 0.3 * v]))
    par, blk = loopy(fg), loopy(fg, schedule="blocks")
    assert blk.n_iter == par.n_iter
    assert_allclose(np.asarray(blk.marginals), np.asarray(par.marginals), atol=0.0)


def test_a_forest_that_forbids_everything_raises_zero_partition():
    fg = FactorGraph([2, 2, 2])
    fg.add_factor(TableFactor([0, 1], [[0.0, -np.inf], [-np.inf, 0.0]]))  # equal
    fg.add_factor(TableFactor([1, 2], [[0.0, -np.inf], [-np.inf, 0.0]]))  # equal
    fg.add_factor(TableFactor([0], [-np.inf, 0.0]))
    fg.add_factor(TableFactor([2], [0.0, -np.inf]))
    with pytest.raises(ZeroPartitionError, match="no configuration has non-zero probability"):
        loopy(fg, schedule="blocks")


def test_rng_is_refused_with_the_blocks_schedule():
    message = "`rng` orders the updates of schedule='sequential' only; got rng=0 with schedule='blocks'."
    with pytest.raises(ValueError, match=re.escape(message)):
        loopy(_ising(2, 0, 0.5), schedule="blocks", rng=0)


def test_an_unknown_schedule_lists_the_three():
    message = "`schedule` must be one of 'parallel', 'sequential', 'blocks'; got 'trees'."
    with pytest.raises(ValueError, match=re.escape(message)):
        loopy(_ising(2, 0, 0.5), schedule="trees")


def test_stopping_short_warns_as_the_other_schedules():
    with pytest.warns(ConvergenceWarning, match="iteration limit"):
        res = loopy(_ising(4, 0, 1.0), schedule="blocks", max_iter=2)
    assert not res.converged and res.status == "max_iter_reached" and res.n_iter == 2


@pytest.mark.parametrize("kind", ["sum", "max"])
def test_damping_mixes_the_sweeps_messages_with_the_previous_ones(kind):
    """What is damped: each block factor's message, ``(1 - damping) * (the sweep's undamped message) + damping *
    (its previous message)`` in probability space (max-product rescaled to maximum 1); inside the sweep the
    messages are undamped."""
    fg = _random_pairwise_forest(np.random.default_rng(5), 7, p_drop=0.0, p_forbid=0.0)
    steps = {}
    for damping in (0.0, 0.3):
        w, ws = _forest_and_workspace(fg, kind, damping)
        step = _loopy._BlockStep(w, ws)
        old = ws.nu_p.copy()
        step()
        steps[damping] = (w, ws, old)
    w, ws0, old = steps[0.0]
    ws = steps[0.3][1]
    rows = w.groups[w.blocks[0]][2]
    p0 = np.exp(ws0.nu[rows] - (np.logaddexp.reduce(ws0.nu[rows], axis=1, keepdims=True) if kind == "sum" else 0.0))
    mixed = 0.7 * p0 + 0.3 * old[rows]
    if kind == "max":
        mixed /= mixed.max(axis=1, keepdims=True)
    assert_allclose(ws.nu_p[rows], mixed, atol=1e-12)
