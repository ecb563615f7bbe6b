"""The compiled table-factor update of loopy BP against its NumPy reference, the vectorized scoring against
``fg.score``, and one compiled signature per kernel.

The reference is the engine's NumPy path: ``TableMessages.messages`` (one array operation per shape and
variable position) plus the engine's normalization, damping and residual, reached by turning the compiled
update off (``loopy._fused_update`` returning None).
"""

import importlib
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from tractable import CardinalityFactor, FactorGraph, TableFactor, ZeroPartitionError
from tractable._results import frozen_array
from tractable.bp import _kernels, _messages, loopy
from tractable.bp._registry import HANDLERS
from tractable.bp._wiring import Workspace, compile_graph, score_plan
from tractable.bp.loopy import _Beliefs, _damp, _factor_messages, _normalize, _residual, _score

loopy_module = importlib.import_module("tractable.bp.loopy")  # the module (``tractable.bp.loopy`` is the function)

# Sum-product tolerance: the compiled update works on probabilities (one exp per cavity state, products, one
# log per message), the reference in log space (log-sum-exp per message state); both are exact to a few ulps
# of O(1) quantities, so one update agrees to ~1e-15 and 1e-12 leaves a wide margin. Max-product is compared
# bit for bit: the same additions, maxima and shifts in the same order.
TOL = 1e-12


def _random_graph(rng, n, *, binary, p_inf=0.1, p_tiny=0.0, arity=(2, 3), n_factors=None):
    """A loopy graph of unary and 2- or 3-variable table factors (plus a cardinality factor sometimes):
    ``p_inf`` of the entries -inf, ``p_tiny`` near -800 (below exp's range: the underflow fallback)."""
    card = np.full(n, 2) if binary else rng.integers(2, 4, size=n)
    fg = FactorGraph(card.tolist())
    for v in range(n):
        if rng.random() < 0.8:
            fg.add_factor(TableFactor([v], rng.normal(size=card[v])))
    for _ in range(n_factors or 2 * n):
        k = int(rng.choice(arity))
        vs = rng.choice(n, size=min(k, n), replace=False)
        t = rng.normal(0, 1.5, size=tuple(card[vs]))
        t[rng.random(t.shape) < p_inf] = -np.inf
        tiny = rng.random(t.shape) < p_tiny
        t[tiny] = -800.0 + rng.normal(size=int(tiny.sum()))
        if np.isfinite(t).any():
            fg.add_factor(TableFactor(vs, t))
    if binary and n >= 2 and rng.random() < 0.3:
        d = int(rng.integers(2, n + 1))
        fg.add_factor(CardinalityFactor(rng.choice(n, size=d, replace=False), rng.normal(size=d + 1)))
    return fg


def _random_messages(rng, wiring, kind, p_inf=0.05):
    """Normalized current messages ``nu`` (some entries -inf)."""
    nu = rng.normal(0, 2, size=(wiring.edge_var.shape[0], wiring.width))
    nu[rng.random(nu.shape) < p_inf] = -np.inf
    nu[wiring.pad] = -np.inf
    nu[np.all(np.isneginf(nu), axis=1), 0] = 0.0
    return _normalize(nu, kind)


def _reference_update(wiring, group, ws, kind, damping):
    """``(new (group rows, normalized), residual)`` of the NumPy path, or the ZeroPartitionError it raises."""
    beliefs = _Beliefs(wiring, ws.fin.copy(), ws.ninf.copy())
    eids = group[2]
    nu = ws.nu
    mu = np.full_like(nu, -np.inf)
    mu[eids] = beliefs.cavity(eids, nu[eids], kind)
    new = _damp(_factor_messages(group, mu, kind, wiring.pad), nu[eids], damping, kind)
    return new, _residual(new, nu[eids])


@pytest.mark.parametrize("kind", ["sum", "max"])
@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 7),
    binary=st.booleans(),
    damping=st.sampled_from([0.0, 0.4]),
    p_tiny=st.sampled_from([0.0, 0.3]),
)
def test_one_compiled_update_equals_the_numpy_reference(kind, seed, n, binary, damping, p_tiny):
    rng = np.random.default_rng(seed)
    fg = _random_graph(rng, n, binary=binary, p_tiny=p_tiny)
    wiring = compile_graph(fg)
    if not wiring.edge_var.shape[0]:
        return
    ws = Workspace(wiring, _random_messages(rng, wiring, kind), kind, damping)
    ws.beliefs()
    for group in wiring.groups:
        handler, compiled, eids, _ = group
        if not isinstance(handler, _messages.TableMessages):
            continue
        residual, flags = handler.update(compiled, ws)
        try:
            ref, ref_residual = _reference_update(wiring, group, ws, kind, damping)
        except ZeroPartitionError as err:  # the compiled update flags what the reference raises
            assert flags & (1 if "into a variable" in str(err) else 2), (flags, str(err))
            continue
        assert flags == 0
        ours = _normalize(ws.new[eids], kind)  # binary pairs store sum-product messages as (0, log-odds)
        if kind == "max":
            assert_array_equal(ours, ref)
            np.exp(ws.new, out=ws.new_p)  # the engine's residual of max-product, as in _ParallelStep
            assert float(np.max(np.abs(ws.new_p[eids] - ws.nu_p[eids]), initial=0.0)) == ref_residual
        else:
            assert_array_equal(np.isneginf(ours), np.isneginf(ref))  # hard zeros stay exact
            finite = np.isfinite(ref)
            assert_allclose(ours[finite], ref[finite], rtol=TOL, atol=TOL)
            assert_allclose(ws.new_p[eids], np.exp(ref), rtol=0, atol=TOL)
            assert_allclose(residual, ref_residual, rtol=0, atol=TOL)


def _flat(marginals) -> np.ndarray:
    """The marginals of every variable end to end (an (n, k) array or a tuple of per-variable arrays)."""
    return np.concatenate([np.ravel(m) for m in marginals]) if len(marginals) else np.zeros(0)


def _both_engines(fg, **options):
    """``loopy`` with the compiled table update and with the NumPy reference path (or their errors)."""
    out = []
    for fused in (True, False):
        with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not fused:
                mp.setattr(loopy_module, "_fused_update", lambda handler: None)
            try:
                out.append(loopy(fg, **options))
            except ZeroPartitionError as err:
                out.append(err)
    return out


@pytest.mark.parametrize("task", ["marginals", "map"])
@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 8),
    binary=st.booleans(),
    damping=st.sampled_from([0.0, 0.5]),
    p_tiny=st.sampled_from([0.0, 0.2]),
)
def test_loopy_gives_the_answers_of_the_numpy_engine(task, seed, n, binary, damping, p_tiny):
    rng = np.random.default_rng(seed)
    fg = _random_graph(rng, n, binary=binary, p_tiny=p_tiny)
    # 12 iterations: long enough to run every path, short enough that chaotic (non-converging) sum-product
    # runs do not amplify rounding past the tolerance
    fast, ref = _both_engines(fg, task=task, max_iter=12, tol=1e-10, damping=damping)
    if isinstance(ref, Exception):
        assert isinstance(fast, ZeroPartitionError) and str(fast) == str(ref)
        return
    assert (fast.n_iter, fast.status, fast.converged) == (ref.n_iter, ref.status, ref.converged)
    if task == "map":  # the same numbers, bit for bit
        assert_array_equal(_flat(fast.marginals), _flat(ref.marginals))
        assert_array_equal(fast.assignment, ref.assignment)
        assert fast.max_residual == ref.max_residual
        for a, b in zip(fast.factor_marginals, ref.factor_marginals):
            assert (a is None) == (b is None) and (a is None or np.array_equal(a, b))
    else:
        assert_allclose(_flat(fast.marginals), _flat(ref.marginals), rtol=0, atol=1e-10)
        assert_allclose(fast.log_partition, ref.log_partition, rtol=1e-10, atol=1e-10)
        assert_allclose(fast.max_residual, ref.max_residual, rtol=1e-6, atol=1e-12)
    assert fast.score == ref.score


@pytest.mark.parametrize("task", ["marginals", "map"])
def test_an_ising_grid_runs_the_binary_pairs_and_matches_the_reference(task, rng):
    from tractable.datasets.factor_graphs import grid_factor_graph

    fg = grid_factor_graph(12, 12, coupling=1.0, rng=rng)
    fast, ref = _both_engines(fg, task=task, max_iter=200, tol=1e-9)
    assert (fast.n_iter, fast.converged) == (ref.n_iter, ref.converged)
    if task == "map":
        assert_array_equal(fast.marginals, ref.marginals)
        assert_array_equal(fast.assignment, ref.assignment)
    else:
        assert_allclose(fast.marginals, ref.marginals, rtol=0, atol=TOL)
        assert_allclose(fast.log_partition, ref.log_partition, rtol=TOL)


def test_zero_partitions_are_reported_as_by_the_numpy_engine():
    # a pairwise table that forbids everything: its messages forbid every state of a variable
    fg = FactorGraph([2, 2, 2])
    fg.add_factor(TableFactor([0, 1], np.full((2, 2), -np.inf)))
    fg.add_factor(TableFactor([1, 2], np.zeros((2, 2))))
    for task in ("marginals", "map"):
        fast, ref = _both_engines(fg, task=task)
        assert isinstance(fast, ZeroPartitionError) and str(fast) == str(ref)
        with pytest.raises(ZeroPartitionError, match=re.escape("a factor's messages forbid every state")):
            loopy(fg, task=task)
    # contradicting hard unaries and a hard pairwise constraint: a cavity forbids both states
    fg = FactorGraph([2, 2, 2])
    fg.add_factor(TableFactor([0], [0.0, -np.inf]))
    fg.add_factor(TableFactor([1], [-np.inf, 0.0]))
    fg.add_factor(TableFactor([0, 1], [[0.0, -np.inf], [-np.inf, 0.0]]))  # equal
    fg.add_factor(TableFactor([1, 2], np.zeros((2, 2))))
    fg.add_factor(TableFactor([0, 2], np.zeros((2, 2))))
    for task in ("marginals", "map"):
        fast, ref = _both_engines(fg, task=task)
        assert isinstance(fast, ZeroPartitionError) and str(fast) == str(ref)


def test_messages_near_an_underflow_stay_finite_and_exact():
    # tables with entries near -800: exp(-800) is 0 in float64, so the probability-space messages would lose
    # them; the update recomputes them in log space (and they are not hard zeros)
    fg = FactorGraph([2, 2, 2])
    fg.add_factor(TableFactor([0], [0.0, 2.0]))
    fg.add_factor(TableFactor([0, 1], [[0.0, -800.0], [-800.0, -1.0]]))
    fg.add_factor(TableFactor([1, 2], [[-790.0, 0.0], [0.0, -805.0]]))
    fg.add_factor(TableFactor([0, 2], [[0.5, -0.5], [-0.5, 0.5]]))
    for task in ("marginals", "map"):
        fast, ref = _both_engines(fg, task=task, max_iter=50, tol=1e-12)
        assert np.all(fast.marginals > 0) if task == "marginals" else True
        assert_allclose(fast.marginals, ref.marginals, rtol=TOL, atol=1e-300)
        assert fast.n_iter == ref.n_iter


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 7))
def test_the_vectorized_score_is_fg_score_exactly(seed, n):
    rng = np.random.default_rng(seed)
    fg = _random_graph(rng, n, binary=bool(rng.random() < 0.5), p_inf=0.1)
    fg.add_factor(TableFactor([], 1.25))  # a factor over no variable
    if rng.random() < 0.5:
        fg.add_factor(_Shifted([0], np.zeros(int(fg.cardinalities[0]))))  # its own evaluate
    ys = np.stack([rng.integers(0, c, size=5) for c in fg.cardinalities], axis=1)
    plan = score_plan(fg)
    for y in ys:
        with np.errstate(over="ignore", invalid="ignore"):
            assert _score(plan, y) == fg.score(y)
    assert _score(compile_graph(fg).score, ys[0]) == fg.score(ys[0])


class _Shifted(TableFactor):
    """A table factor whose evaluate adds 0.5 (scoring must call it, not index its table)."""

    def evaluate(self, values):
        return super().evaluate(values) + 0.5


class _OwnMessages(_messages.TableMessages):
    """Overrides ``messages`` only: the engine must not use the inherited compiled update."""

    def __init__(self):
        self.calls = 0

    def messages(self, compiled, incoming, out, kind):
        self.calls += 1
        super().messages(compiled, incoming, out, kind)


class _Parity(TableFactor):
    pass


def test_a_handler_that_overrides_messages_only_gets_them_called():
    handler = _OwnMessages()
    HANDLERS[_Parity] = handler
    try:
        assert loopy_module._fused_update(handler) is None
        assert loopy_module._fused_update(_messages.TableMessages()) is not None
        fg = FactorGraph([2, 2, 2])
        fg.add_factor(_Parity([0, 1], [[0.3, 0.0], [0.0, 0.3]]))
        fg.add_factor(TableFactor([1, 2], [[0.3, 0.0], [0.0, -0.3]]))
        fg.add_factor(TableFactor([0], [0.0, 1.0]))
        loopy(fg)
        assert handler.calls > 0
    finally:
        del HANDLERS[_Parity]


def test_each_engine_kernel_compiles_one_signature_whatever_the_callers_pass():
    # binary pairs, multi-state and 3-variable tables (the general kernel), both tasks, damping, evidence,
    # read-only and Fortran-ordered tables: the kernels see the same argument types every time
    rng = np.random.default_rng(3)
    graphs = [_random_graph(rng, 6, binary=True), _random_graph(rng, 6, binary=False, p_tiny=0.3)]
    fg = FactorGraph([2, 3, 2])
    fg.add_factor(TableFactor([0, 1], np.asfortranarray(rng.normal(size=(2, 3)))))
    fg.add_factor(TableFactor([1, 2], frozen_array(rng.normal(size=(3, 2)))))
    fg.add_factor(TableFactor([0, 2], rng.normal(size=(2, 2)).astype(np.float32)))
    graphs.append(fg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for g in graphs:
            for task in ("marginals", "map"):
                for damping in (0.0, 0.3):
                    try:
                        loopy(g, task=task, max_iter=4, damping=damping)
                        loopy(g, task=task, max_iter=4, evidence={0: 1})
                    except ZeroPartitionError:
                        pass
    for kernel in (_kernels.var_beliefs, _kernels.table_pairs, _kernels.table_general):
        assert len(kernel.signatures) == 1, kernel.signatures
