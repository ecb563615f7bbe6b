"""The partitioned ADMM iteration (tractable.hlmrf.partition) against the fused one-block kernel."""

import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tractable import ConvergenceWarning
from tractable.datasets import opinion_diffusion
from tractable.hlmrf import HLMRF, _kernels, bound, partition, solve

from .conftest import random_model

# Partitioned and fused iterations differ only in the order of the additions forming each
# variable's copy sum (ADMM is nonexpansive, so rounding differences do not grow): 1e-12 is ~1e4
# units of roundoff on values in [0, 1] and multipliers of order 1-10, after up to 80 iterations.
TOL = 1e-12


def _fused(model, constraints, n_iter, alpha, rho):
    """``n_iter`` iterations of the fused kernel (tolerances 0: it never stops early)."""
    comp = model._compile()
    terms, zc = partition._split_constraints(comp, constraints)
    n = comp.free.size
    z = np.zeros(n)
    x, y = z[terms[1]], np.zeros(terms[1].size)
    cnt = np.bincount(terms[1], minlength=n).astype(float)
    stats = np.array([0.0, np.inf, 0.0, 0.0, 0.0])
    done = _kernels.admm_run(*terms, cnt, x, y, z, rho, alpha, 0.0, 0.0, True, n_iter, stats, *zc)
    assert done == n_iter
    cert = np.empty(3)
    bound.certificate(*terms, y, z, *zc, float(cnt.max(initial=0)), cert)
    return terms, x, y, z, stats, cert


def _partitioned(part, n_iter, alpha, rho):
    z = np.zeros(part.n)
    states = [partition.block_start(b, z) for b in part.blocks]
    stats = np.array([0.0, np.inf, 0.0, 0.0, 0.0])
    for _ in range(n_iter):
        outs = [partition.block_step(b, x, y, z[b.variables], rho, alpha) for b, (x, y) in zip(part.blocks, states)]
        acc, sums = partition.combine(part, outs)
        assert not partition.consensus_step(part, acc, sums, z, stats, rho=rho, eps_abs=0.0, eps_rel=0.0)
    certs = [partition.block_certificate(b, y, z[b.variables]) for b, (_, y) in zip(part.blocks, states)]
    return states, z, stats, partition.consensus_certificate(part, certs, z)


def _global_copies(part, states, indptr):
    """The blocks' x and y scattered back to the positions of the fused kernel's copies."""
    x, y = np.full(indptr[-1], np.nan), np.full(indptr[-1], np.nan)
    for b, (xb, yb) in zip(part.blocks, states):
        starts = indptr[b.terms]
        lengths = np.diff(b.indptr)
        pos = np.repeat(starts - b.indptr[:-1], lengths) + np.arange(b.n_copies)
        x[pos], y[pos] = xb, yb
    return x, y


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_blocks=st.integers(1, 6),
    strategy=st.sampled_from(partition.STRATEGIES),
    constraints=st.sampled_from(["local", "auto"]),
    squared=st.sampled_from([False, True, "mixed"]),
    alpha=st.sampled_from([1.0, 1.6]),
)
def test_partitioned_iterates_equal_fused(seed, n_blocks, strategy, constraints, squared, alpha):
    model = random_model(seed, n=9, m=16, r=3, squared=squared)
    if seed % 3 == 0:
        model.fix([0], [0.25])
    rho, n_iter = 0.7, 80
    terms, xf, yf, zf, sf, cert = _fused(model, constraints, n_iter, alpha, rho)
    part = partition.split_terms(model, n_blocks, strategy=strategy, constraints=constraints, rng=seed)
    states, z, stats, (lb, obj, viol) = _partitioned(part, n_iter, alpha, rho)
    x, y = _global_copies(part, states, terms[0])
    np.testing.assert_allclose(z, zf, rtol=0, atol=TOL)
    np.testing.assert_allclose(x, xf, rtol=0, atol=TOL)
    np.testing.assert_allclose(y, yf, rtol=0, atol=TOL * max(1.0, np.abs(yf).max()))
    np.testing.assert_allclose(stats, sf, rtol=1e-9, atol=TOL)
    offset = model._compile().offset
    assert lb == pytest.approx(offset + cert[0], abs=TOL * max(1.0, abs(lb)))
    assert obj == pytest.approx(offset + cert[1], abs=TOL)
    assert viol == pytest.approx(cert[2], abs=TOL)


def test_one_block_is_bit_identical_to_the_fused_kernel():
    model = opinion_diffusion(200, squared=True, rng=4)
    terms, xf, yf, zf, sf, _ = _fused(model, "auto", 40, 1.0, 1.0)
    part = partition.split_terms(model, 1)
    states, z, stats, _ = _partitioned(part, 40, 1.0, 1.0)
    (blk,) = part.blocks
    np.testing.assert_array_equal(blk.variables[blk.idx], terms[1])  # same copy order
    np.testing.assert_array_equal(states[0][0], xf)
    np.testing.assert_array_equal(states[0][1], yf)
    np.testing.assert_array_equal(z, zf)


@pytest.mark.parametrize("constraints", ["local", "consensus"])
@pytest.mark.parametrize("n_partitions", [2, 5])
def test_solve_with_partitions_matches_default(constraints, n_partitions):
    model = opinion_diffusion(300, squared=constraints == "local", rng=6)
    a = solve(model, constraints=constraints)
    b = solve(model, constraints=constraints, n_partitions=n_partitions)
    assert b.converged and b.status == a.status
    # the stop test may flip one iteration on a tie of the residual norms' rounding
    assert abs(a.n_iter - b.n_iter) <= 1
    if a.n_iter == b.n_iter:
        np.testing.assert_allclose(b.x, a.x, rtol=0, atol=TOL)
        assert b.lower_bound == pytest.approx(a.lower_bound, rel=1e-12)
    assert b.gap == pytest.approx(a.gap, abs=1e-9)


def test_solve_with_partitions_honours_gap_tol_and_max_iter():
    model = opinion_diffusion(300, rng=2)
    a = solve(model, gap_tol=1e-3, eps_abs=0.0, eps_rel=0.0)
    b = solve(model, gap_tol=1e-3, eps_abs=0.0, eps_rel=0.0, n_partitions=3)
    assert a.converged and b.converged and b.gap <= 1e-3 and b.n_iter == a.n_iter
    with pytest.warns(ConvergenceWarning):
        c = solve(model, max_iter=7, n_partitions=3)
    assert c.status == "max_iter_reached" and c.n_iter == 7


def test_split_covers_every_term_once_and_balances_copies():
    model = opinion_diffusion(400, rng=1)
    comp = model._compile()
    terms, _ = partition._split_constraints(comp, "auto")
    n_terms = terms[0].size - 1
    for strategy in partition.STRATEGIES:
        part = partition.split_terms(model, 5, strategy=strategy, rng=0)
        seen = np.concatenate([b.terms for b in part.blocks])
        np.testing.assert_array_equal(np.sort(seen), np.arange(n_terms))
        assert part.n_terms == n_terms and part.n_copies == terms[1].size
        for b in part.blocks:
            # local numbering maps back to the term's global variables and coefficients
            for t_local, t in enumerate(b.terms[:50]):
                s, e = terms[0][t], terms[0][t + 1]
                got = b.variables[b.idx[b.indptr[t_local] : b.indptr[t_local + 1]]]
                np.testing.assert_array_equal(got, terms[1][s:e])
                np.testing.assert_array_equal(b.coef[b.indptr[t_local] : b.indptr[t_local + 1]], terms[2][s:e])
            assert np.all(np.diff(b.variables) > 0) and np.all(np.diff(b.terms) > 0)
        sizes = np.array([b.n_copies for b in part.blocks])
        # runs cut where the copy count crosses multiples of n_copies / 5: sizes differ by < 2 arities
        assert sizes.max() - sizes.min() <= 2 * np.diff(terms[0]).max()
        # cut sizes by brute force
        held = np.zeros(part.n, dtype=int)
        for b in part.blocks:
            held[np.unique(b.variables)] += 1
        assert part.cut_variables == int((held >= 2).sum())
        assert part.cut_volume == int(np.maximum(held - 1, 0).sum())
        np.testing.assert_array_equal(part.counts, np.bincount(terms[1], minlength=part.n))


def test_bfs_split_cuts_fewer_variables_than_random():
    model = opinion_diffusion(1000, rng=3)
    cuts = {s: partition.split_terms(model, 8, strategy=s, rng=0).cut_volume for s in partition.STRATEGIES}
    assert cuts["bfs"] < cuts["random"]


def test_empty_blocks_and_models_without_terms():
    m = HLMRF(3)
    m.add_potential([0], [1.0])
    part = partition.split_terms(m, 4)
    assert sum(b.n_terms for b in part.blocks) == 1 and part.cut_variables == 0
    r = solve(m, n_partitions=4)
    assert r.converged and r.objective == pytest.approx(0.0, abs=1e-6)
    empty = HLMRF(2)
    r = solve(empty, n_partitions=3)
    assert r.converged and r.objective == 0.0


def test_full_maps_back_fixed_variables():
    m = random_model(3, n=5)
    m.fix([1], [0.5])
    part = partition.split_terms(m, 2)
    x = part.full(np.full(part.n, 0.25))
    assert x[1] == 0.5 and np.all(np.delete(x, 1) == 0.25)


def test_partition_bad_input():
    m = random_model(0)
    with pytest.raises(TypeError, match=re.escape("`model` must be an HLMRF; got int.")):
        partition.split_terms(3, 2)
    with pytest.raises(ValueError, match=re.escape("`n_blocks` must be >= 1; got 0.")):
        partition.split_terms(m, 0)
    with pytest.raises(ValueError, match=re.escape("`strategy` must be one of 'bfs', 'contiguous', 'random'")):
        partition.split_terms(m, 2, strategy="metis")
    part = partition.split_terms(m, 2)
    b = part.blocks[0]
    x, y = partition.block_start(b, np.zeros(part.n))
    with pytest.raises(ValueError, match=re.escape(f"`z_local` must have shape ({b.n_local},)")):
        partition.block_step(b, x, y, np.zeros(b.n_local + 1), 1.0)
    with pytest.raises(ValueError, match=re.escape(f"`x` and `y` must have shape ({b.n_copies},)")):
        partition.block_step(b, x[:-1], y, np.zeros(b.n_local), 1.0)
    with pytest.raises(ValueError, match=re.escape("`rho` must be a finite number > 0; got 0.0.")):
        partition.block_step(b, x, y, np.zeros(b.n_local), 0.0)
    with pytest.raises(ValueError, match=re.escape("`n_partitions` must be >= 1; got 0.")):
        solve(m, n_partitions=0)
    with pytest.raises(ValueError, match=re.escape("`n_partitions` > 1 runs the blocks in sequence")):
        solve(m, n_partitions=2, parallel=True)


def test_inputs_are_not_mutated():
    m = random_model(5)
    part = partition.split_terms(m, 3)
    z = np.full(part.n, 0.5)
    z0 = z.copy()
    x, y = partition.block_start(part.blocks[0], z)
    zl = z[part.blocks[0].variables]
    zl0 = zl.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        partition.block_step(part.blocks[0], x, y, zl, 1.0)
    np.testing.assert_array_equal(z, z0)
    np.testing.assert_array_equal(zl, zl0)
