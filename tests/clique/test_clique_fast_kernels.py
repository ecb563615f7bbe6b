"""The fast paths of the clique kernels against the plain versions they replace.

``pair_pass_labels`` (generalized alpha-pass with p = 2, merged sorted lists instead of a sort per
subset) must give the labelling of ``subset_pass_labels``; the pruned expansion move must reach the
value of the unpruned one; ``argsort_stable`` (insertion sort, or radix sort from ``_RADIX_MIN`` keys) must
order like NumPy's stable sort, and the passes built on it must pick the labellings of the array sweeps;
``clique_map``'s SUM route must end at an expansion local optimum at least as good as its start.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tractable.clique import (
    _AUTO_TOP,
    Entropy,
    LinearMajority,
    Makespan,
    Potts,
    SumPotential,
    _kernels,
    clique_map,
    icm,
    score,
)
from tractable.clique._validate import kernel_args, tolerance
from tractable.clique.alpha_pass import _label_subsets
from tractable.datasets.clique_benchmark import clique_benchmark

seeds = st.integers(0, 2**32 - 1)


def _potential(rng, kind, m):
    if kind == 0:
        return Potts(float(rng.uniform(0.05, 0.5)))
    if kind == 1:
        return Entropy(float(rng.uniform(0.05, 0.5)))
    if kind == 2:
        return Makespan(float(rng.uniform(0.1, 1.0)))
    return LinearMajority(rng.normal(size=(m, m)))


def _phi(rng, n, m, ties, neginf):
    # small integers make ties between keys, labels and subsets common
    phi = rng.integers(0, 3, size=(n, m)).astype(float) if ties else rng.normal(size=(n, m))
    if neginf:
        mask = rng.random((n, m)) < 0.3
        mask[np.arange(n), rng.integers(0, m, size=n)] = False
        phi[mask] = -np.inf
    return phi


@settings(max_examples=150, deadline=None)
@given(
    seed=seeds,
    n=st.integers(1, 25),
    m=st.integers(3, 7),
    kind=st.integers(0, 3),
    ties=st.booleans(),
    neginf=st.booleans(),
)
def test_pair_pass_equals_the_sort_per_subset(seed, n, m, kind, ties, neginf):
    rng = np.random.default_rng(seed)
    phi = _phi(rng, n, m, ties, neginf)
    kargs = kernel_args(_potential(rng, kind, m), n, m)
    want = _kernels.subset_pass_labels(phi, _label_subsets(m, 2), *kargs)
    got = _kernels.pair_pass_labels(phi, *kargs, m)
    np.testing.assert_array_equal(got, want)


@settings(max_examples=80, deadline=None)
@given(seed=seeds, n=st.integers(2, 30), m=st.integers(4, 9), n_top=st.integers(0, 9), kind=st.integers(0, 3))
def test_pair_pass_restricted_to_the_best_labels(seed, n, m, n_top, kind):
    """``n_top < m`` sweeps every label and the pairs of the ``n_top`` labels whose sweeps scored best."""
    rng = np.random.default_rng(seed)
    phi = rng.normal(size=(n, m))
    pot = _potential(rng, kind, m)
    kargs = kernel_args(pot, n, m)
    singles = np.array([[a, m] for a in range(m)])
    best = np.array([score(phi, pot, _kernels.subset_pass_labels(phi, singles[a : a + 1], *kargs)) for a in range(m)])
    ranked = np.argsort(-best, kind="stable")
    if 0 < n_top < m:  # the kernel ranks by its own sums: skip near-ties at the cut (rounding)
        assume(best[ranked[n_top - 1]] - best[ranked[n_top]] > 1e-9)
    top = sorted(ranked[: min(n_top, m)])
    pairs = [list(c) for c in itertools.combinations(top, 2)]
    S = np.array([list(r) for r in singles] + pairs, dtype=np.int64)
    want = _kernels.subset_pass_labels(phi, S, *kargs)
    np.testing.assert_array_equal(_kernels.pair_pass_labels(phi, *kargs, n_top), want)


@settings(max_examples=100, deadline=None)
@given(seed=seeds, n=st.integers(0, 300), values=st.integers(1, 6))
def test_argsort_stable_matches_numpy(seed, n, values):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, values, size=n).astype(float)
    keys[rng.random(n) < 0.1] = np.inf
    keys[rng.random(n) < 0.1] = -np.inf
    order = np.empty(n, dtype=np.int64)
    buf = np.empty(n, dtype=np.int64)
    _kernels.argsort_stable(keys, n, order, buf)
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))


# keys whose bit patterns are awkward for a radix sort: both zeros (equal, so tied by index),
# subnormals, the extremes, +-inf, and keys that share all but their lowest bits
_ODD_KEYS = np.array([0.0, -0.0, 5e-324, -5e-324, 2.2e-308, -2.2e-308, 1.7e308, -1.7e308, np.inf, -np.inf, 1.0, -1.0])


@settings(max_examples=60, deadline=None)
@given(seed=seeds, n=st.integers(1, 3000), mix=st.integers(0, 3))
def test_argsort_stable_matches_numpy_on_any_floats(seed, n, mix):
    """Both sorts (insertion below ``_RADIX_MIN`` keys, radix from there) order like NumPy's stable sort."""
    rng = np.random.default_rng(seed)
    keys = rng.uniform(-2.0, 2.0, size=n)
    if mix >= 1:
        keys = np.where(rng.random(n) < 0.3, rng.choice(_ODD_KEYS, size=n), keys)
    if mix >= 2:
        keys = np.nextafter(1.0, 2.0 * (rng.random(n) < 0.5)) * rng.integers(1, 3, size=n)  # last-bit ties
    if mix == 3:
        keys = -keys
    order = np.full(n + 2, -1, dtype=np.int64)  # longer than n: nothing past n is written
    buf = np.empty(n + 2, dtype=np.int64)
    _kernels.argsort_stable(keys, n, order, buf)
    np.testing.assert_array_equal(order[:n], np.argsort(keys, kind="stable"))
    assert (order[n:] == -1).all()


@settings(max_examples=25, deadline=None)
@given(seed=seeds, n=st.integers(_kernels._RADIX_MIN - 4, 400), m=st.integers(2, 5), code=st.integers(0, 2))
def test_passes_on_radix_sorted_cliques_match_the_array_sweeps(seed, n, m, code):
    """Cliques large enough for the radix sort: with small-integer ``phi`` and tables every sum is exact
    and keys tie often, so the compiled passes must pick the very labelling of the array sweeps (which
    sort with NumPy)."""
    from tractable.clique import MaxPotential
    from tractable.clique.alpha_pass import _alpha_pass_arrays, _generalized_arrays

    rng = np.random.default_rng(seed)
    phi = rng.integers(0, 4, size=(n, m)).astype(float)
    phi[rng.random((n, m)) < 0.1] = -np.inf
    phi[np.arange(n), rng.integers(0, m, size=n)] = 1.0
    table = rng.integers(-3, 4, size=(m, n + 1)).astype(float)
    pot = [SumPotential(table), MaxPotential(table), LinearMajority(rng.integers(-2, 3, size=(m, m)).astype(float))]
    kargs = kernel_args(pot[code], n, m)
    np.testing.assert_array_equal(_kernels.alpha_pass_labels(phi, *kargs), _alpha_pass_arrays(phi, pot[code], kargs))
    S = _label_subsets(m, 2)
    want = _generalized_arrays(phi, pot[code], kargs, S)
    np.testing.assert_array_equal(_kernels.subset_pass_labels(phi, S, *kargs), want)
    if m >= 3:
        np.testing.assert_array_equal(_kernels.pair_pass_labels(phi, *kargs, m), want)


def _move(phi, labels, alpha, table, prune):
    """One move of ``alpha`` (the search's single-move mode), pruned or not; its score is checked
    against a fresh sum, so the counts the kernel keeps in step must be right."""
    out = labels.copy()
    _, moved, value = _kernels.expansion_search(phi, out, table, 0.0, 1, out[:0], alpha, int(prune))
    assert value == _kernels.sum_score(phi, out, table)
    return out, moved


@settings(max_examples=120, deadline=None)
@given(seed=seeds, n=st.integers(1, 60), m=st.integers(2, 6), kind=st.integers(0, 2), spread=st.integers(1, 6))
def test_pruned_expansion_move_reaches_the_same_value(seed, n, m, kind, spread):
    """Pruning each label's share of the move (finite input) never loses the best move's value."""
    rng = np.random.default_rng(seed)
    phi = rng.uniform(0, 2, size=(n, m))
    if kind == 0:
        table = Potts(float(rng.uniform(0.01, 1.0))).table(n, m)
    elif kind == 1:
        table = Entropy(float(rng.uniform(0.01, 1.0))).table(n, m)
    else:  # an arbitrary SUM potential, not convex
        table = SumPotential(rng.normal(size=(m, n + 1)) * 2).table(n, m)
    labels = rng.integers(0, min(spread, m), size=n)
    alpha = int(rng.integers(0, m))
    cur = _kernels.sum_score(phi, labels, table)
    plain, moved_plain = _move(phi, labels, alpha, table, False)
    pruned, moved_pruned = _move(phi, labels, alpha, table, True)
    v_plain = _kernels.sum_score(phi, plain, table)
    v_pruned = _kernels.sum_score(phi, pruned, table)
    # sums of <= 60 terms of size <= ~60: rounding well below 1e-9
    assert v_pruned == pytest.approx(v_plain, abs=1e-9)
    assert moved_plain == moved_pruned or abs(v_plain - cur) < 1e-9
    assert np.all((pruned == labels) | (pruned == alpha))


@pytest.mark.parametrize("kind", ["POTTS", "ENTROPY"])
@pytest.mark.parametrize("lam", [0.8, 0.9, 1.1])
def test_auto_sum_route_ends_at_an_expansion_local_optimum(kind, lam):
    phi, pot = clique_benchmark(kind, n=80, m=10, lam=lam, rng=int(lam * 100))
    n, m = phi.shape
    res = clique_map(phi, pot)
    assert res.method in ("generalized_alpha_pass+alpha_expansion", "icm+alpha_expansion")
    assert res.converged and res.status == "converged"
    kargs = kernel_args(pot, n, m)
    start = _kernels.pair_pass_labels(phi, *kargs, _AUTO_TOP)
    # both starts are polished by moves that only raise the score (sums of 80 terms: 1e-9 is rounding)
    assert res.score >= score(phi, pot, start) - 1e-9
    assert res.score >= icm(phi, pot, rng=0).score - 1e-9
    tol = tolerance(phi, pot)
    for alpha in range(m):
        _, moved = _kernels.expansion_move(phi, np.array(res.assignment), alpha, kargs[1], tol)
        assert not moved


def _canonical(sig):
    """Whether a compiled signature takes only C-ordered writeable float64 / int64 arrays and int64 /
    float64 scalars (what the methods normalize their input to)."""
    import numba

    for t in sig:
        if isinstance(t, numba.types.Array):
            if t.layout != "C" or not t.mutable or t.dtype not in (numba.float64, numba.int64):
                return False
        elif t not in (numba.int64, numba.float64):
            return False
    return True


def test_the_methods_reach_one_signature_per_kernel():
    """Fortran-ordered, int32, read-only, list and Python-int inputs are normalized before the
    kernels, so that numba compiles each of them once (a fresh install's first call pays for that)."""
    rng = np.random.default_rng(0)
    phi = np.asfortranarray(rng.uniform(0, 2, size=(9, 4)).astype(np.float32))
    phi.flags.writeable = False
    init = np.zeros(9, dtype=np.int32)
    for pot in (Potts(0.2), Entropy(0.2), Makespan(0.3), LinearMajority(np.eye(4))):
        clique_map(phi, pot, method="alpha_pass")
        clique_map(phi, pot, method="generalized_alpha_pass")
        icm(phi.tolist(), pot, init=init, rng=0)
        clique_map(phi, pot, rng=0)
        if pot.family == "sum":
            clique_map(phi, pot, method="alpha_expansion", init=init)
        if pot.family == "majority":
            clique_map(phi, pot, method="majority_alpha_pass")
    from tractable.clique import alpha_pass_batch

    alpha_pass_batch(np.stack([phi, phi]), Potts(0.2))
    for kernel in (_kernels._pass_labels, _kernels.icm_sweep, _kernels.expansion_search, _kernels._sweep_majority):
        assert kernel.signatures, kernel
        assert all(_canonical(sig) for sig in kernel.signatures), (kernel, kernel.signatures)
