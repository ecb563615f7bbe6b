"""The compiled kernels of belief propagation: large cardinality factors against direct references, and one
compiled signature per kernel (a fresh install compiles each kernel once, whatever the callers pass)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from _helpers import handler_messages, normalized, random_incoming
from tractable import CardinalityFactor, FactorGraph, TableFactor, ZeroPartitionError
from tractable._results import frozen_array
from tractable.bp import _kernels, _messages, loopy, tree_map, tree_marginals, tree_marginals_batch
from tractable.bp.tree import CompiledForest, forest_marginals

TOL = 1e-9


def _sorted_max_messages(f, w):
    """Max-product messages of ``f(sum y)`` by sorting the other variables' ``theta`` for each variable."""
    d = w.shape[0]
    out = np.empty((d, 2))
    for i in range(d):
        others = np.delete(np.arange(d), i)
        on = int(np.sum(np.isneginf(w[others, 0])))
        free = others[np.isfinite(w[others]).all(axis=1)]
        best = np.r_[0.0, np.cumsum(np.sort(w[free, 1] - w[free, 0])[::-1])]  # best sum of j others' theta
        for y in (0, 1):
            out[i, y] = np.max(f[on + y : on + y + best.shape[0]] + best)
    return out


@settings(max_examples=40, deadline=None)
@given(d=st.integers(15, 200), seed=st.integers(0, 2**31), n_values=st.sampled_from([3, 1000]))
def test_max_product_messages_of_large_factors_match_a_sorted_reference(d, seed, n_values):
    # 15 or more free variables: the written-out quicksort partitions before its insertion sort; with 3 distinct
    # incoming messages most theta tie
    rng = np.random.default_rng(seed)
    f = rng.normal(0, 1, size=d + 1)
    f[rng.random(d + 1) < 0.3] = -np.inf
    f[rng.integers(d + 1)] = 0.0
    w = random_incoming(rng, d, p_clamp=0.1)
    values = random_incoming(rng, n_values, p_clamp=0.0)
    free = np.isfinite(w).all(axis=1)
    w[free] = values[rng.integers(n_values, size=int(free.sum()))]
    ours, _ = handler_messages(CardinalityFactor(np.arange(d), f), w, "max")
    ref = _sorted_max_messages(f, w)
    ok = ~np.all(np.isneginf(ref), axis=1)
    assert_allclose(normalized(ours[ok], "max"), normalized(ref[ok], "max"), atol=TOL, rtol=TOL)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_a_group_of_chain_factors_equals_each_factor_by_the_convolution_tree(seed):
    # factors of several sizes in one call, a few counts allowed near 0 (the chain) or near D (the flipped chain)
    rng = np.random.default_rng(seed)
    factors = []
    for _ in range(5):
        d = int(rng.integers(2, 40))
        k = int(rng.integers(0, min(d, 4) + 1))
        lo = int(rng.integers(0, 2)) if rng.random() < 0.5 else d - k - int(rng.integers(0, 2))
        lo = min(max(lo, 0), d - k)
        f = np.full(d + 1, -np.inf)
        f[lo : lo + k + 1] = rng.normal(size=k + 1)
        factors.append(CardinalityFactor(np.arange(d), f))
    offsets = np.cumsum([0] + [len(fac.variables) for fac in factors])
    edges = [np.arange(offsets[i], offsets[i + 1]) for i in range(len(factors))]
    incoming = random_incoming(rng, int(offsets[-1]), p_clamp=0.05)
    handler = _messages.CardinalityMessages()
    compiled = handler.compile(factors, edges, None)
    assert compiled.chain[0].shape[0] == len(factors) + 1 and not compiled.tree  # all on the chain
    out = np.full_like(incoming, -np.inf)
    try:
        handler.messages(compiled, incoming, out, "sum")
        logz = handler.log_partition(compiled, incoming)
    except ZeroPartitionError:  # some factor has no configuration given its incoming messages
        out = None
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_messages, "CHAIN_MAX_CELLS", -1)
        refs = []
        for fac, e in zip(factors, edges):
            try:
                refs.append(handler_messages(fac, incoming[e], "sum"))
            except ZeroPartitionError:
                assert out is None
                return
    assert out is not None
    assert_allclose(logz, sum(z for _, z in refs), atol=TOL, rtol=TOL)
    for (ref, _), e in zip(refs, edges):
        ok = ~np.all(np.isneginf(ref), axis=1)
        assert_allclose(normalized(out[e][ok], "sum"), normalized(ref[ok], "sum"), atol=TOL, rtol=TOL)


def _signatures(kernel) -> int:
    return len(kernel.signatures)


def test_each_kernel_compiles_one_signature_whatever_the_callers_pass():
    # int32 / float32 / read-only / Fortran-ordered inputs, batches, compiled forests, both loopy tasks and
    # cardinality factors of several sizes all reach the kernels with the same argument types
    edges = np.array([[0, 1], [2, 1]], dtype=np.int32)
    tree_marginals(frozen_array(np.zeros((3, 2))), edges, frozen_array(np.ones((2, 2, 2))))
    tree_marginals(np.zeros((3, 2), dtype=np.float32), edges.tolist(), np.zeros((2, 2, 2), dtype=np.float32))
    tree_marginals(np.asfortranarray(np.ones((3, 3))), edges, np.asfortranarray(np.ones((2, 3, 3))))
    tree_marginals(np.zeros((1, 2)), np.zeros((0, 2), dtype=np.int64), np.zeros((0, 2, 2)))
    tree_marginals_batch(np.zeros((2, 3, 2)), [edges, edges[:1]], [np.zeros((2, 2, 2)), np.zeros((1, 2, 2))])
    forest = CompiledForest([edges, edges], 3)
    forest_marginals(forest, np.zeros((2, 3, 2)), np.zeros((4, 2, 2)))
    tree_map(np.zeros((3, 2)), edges, np.zeros((2, 2, 2)))
    fg = FactorGraph([2] * 20)
    for v in range(20):
        fg.add_factor(TableFactor([v], [0.0, 0.1 * v]))
    fg.add_factor(CardinalityFactor([0, 1, 2], [0.0, 0.5, -np.inf, 0.0]))
    fg.add_factor(CardinalityFactor(np.arange(3, 20), np.linspace(0, 1, 18)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for task in ("marginals", "map"):
            loopy(fg, task=task, max_iter=3)
            loopy(fg, task=task, max_iter=3, evidence={0: 1})
    for kernel in (_kernels.tree_sum_product, _kernels.chain_sum_messages, _kernels.sort_max_messages):
        assert _signatures(kernel) == 1, kernel.signatures
