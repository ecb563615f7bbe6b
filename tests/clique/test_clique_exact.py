import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tractable.clique import (
    CountPotential,
    Entropy,
    LinearMajority,
    Potts,
    exact_clique_map,
    majority_alpha_pass,
    majority_exact,
)
from tractable.clique.enumeration import compositions, n_compositions

ATOL = 1e-9  # sums of a few dozen terms of size <= ~10

seeds = st.integers(0, 2**32 - 1)


def test_compositions_enumerate_every_count_vector():
    for n, m in [(0, 3), (4, 1), (5, 3), (6, 4)]:
        c = compositions(n, m)
        assert c.shape == (n_compositions(n, m), m)
        assert np.all(c.sum(1) == n) and np.all(c >= 0)
        assert len({tuple(r) for r in c}) == c.shape[0]


@settings(max_examples=60, deadline=None)
@given(seed=seeds, n=st.integers(1, 6), m=st.integers(1, 3), kind=st.integers(0, 2), neginf=st.booleans())
def test_exact_clique_map_equals_brute_force(brute, make_phi, seed, n, m, kind, neginf):
    rng = np.random.default_rng(seed)
    phi = make_phi(rng, n, m, 0.3 if neginf else 0.0)
    lam = rng.uniform(0.05, 1.0)
    tab = rng.normal(size=(n + 1,) * m) * 2  # an arbitrary function of the whole count vector
    pot = [Potts(lam), Entropy(-lam), CountPotential(lambda c: tab[tuple(np.moveaxis(np.asarray(c), -1, 0))])][kind]
    best, _ = brute(phi, pot)
    res = exact_clique_map(phi, pot)
    assert res.exact and res.score == pytest.approx(best, abs=ATOL)


@settings(max_examples=60, deadline=None)
@given(seed=seeds, n=st.integers(1, 6), m=st.integers(1, 4), neginf=st.booleans(), sparse=st.booleans())
def test_majority_exact_equals_brute_force(brute, make_phi, seed, n, m, neginf, sparse):
    rng = np.random.default_rng(seed)
    phi = make_phi(rng, n, m, 0.3 if neginf else 0.0)
    W = rng.uniform(-1.0, 2.0, size=(m, m))
    if sparse:
        W[rng.random((m, m)) < 0.7] = 0.0
    best, _ = brute(phi, LinearMajority(W))
    res = majority_exact(phi, W)
    assert res.exact and res.score == pytest.approx(best, abs=ATOL)
    approx = majority_alpha_pass(phi, W)
    assert approx.score <= best + ATOL
    if m <= 2:
        assert approx.exact and approx.score == pytest.approx(best, abs=ATOL)


def test_majority_exact_on_a_benchmark_clique_beats_the_approximations():
    from tractable.clique import icm
    from tractable.datasets.clique_benchmark import clique_benchmark

    phi, pot = clique_benchmark("MAJ-SPARSE", n=30, m=6, lam=0.9, rng=2)
    ex = majority_exact(phi, pot)
    assert ex.score >= majority_alpha_pass(phi, pot).score - ATOL
    assert ex.score >= icm(phi, pot, rng=0).score - ATOL


def test_exact_errors():
    with pytest.raises(
        ValueError,
        match=re.escape(
            "`phi` of shape (30, 5) has 46376 count vectors, more than `max_compositions`=1000; enumeration is "
            "only for small cliques"
        ),
    ):
        exact_clique_map(np.zeros((30, 5)), Potts(1.0), max_compositions=1000)
    with pytest.raises(ValueError, match=re.escape("`W` must have shape (3, 3); got (2, 2).")):
        majority_exact(np.zeros((4, 3)), np.eye(2))
    with pytest.raises(ValueError, match=re.escape("`W` must have shape (3, 3); got (3, 2).")):
        majority_alpha_pass(np.zeros((4, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match=re.escape("`W` must not contain NaN; got NaN at index (0, 0).")):
        majority_alpha_pass(np.zeros((4, 1)), [[np.nan]])


@settings(max_examples=60, deadline=None)
@given(seed=seeds, n=st.integers(1, 7), m=st.integers(1, 4), neginf=st.booleans())
def test_majority_subproblem_assignment_equals_lp(make_phi, seed, n, m, neginf):
    """Specialized equals generic: the slot assignment solves the paper's LP (2) with the tie rule."""
    from tractable.clique.majority import _solve_subproblem, _solve_subproblem_lp

    rng = np.random.default_rng(seed)
    psi = make_phi(rng, n, m, 0.4 if neginf else 0.0) + rng.normal(size=(1, m))
    alpha, k = int(rng.integers(0, m)), int(rng.integers(0, n + 1))
    fast, ref = _solve_subproblem(psi, alpha, k), _solve_subproblem_lp(psi, alpha, k)
    assert (fast is None) == (ref is None)
    if fast is not None:
        counts = np.bincount(fast, minlength=m)
        assert counts[alpha] == k and np.all(counts[:alpha] < k) and np.all(counts <= k)
        rows = np.arange(n)
        assert psi[rows, fast].sum() == pytest.approx(psi[rows, ref].sum(), abs=ATOL)
