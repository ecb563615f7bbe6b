import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tractable.clique import (
    CountPotential,
    Makespan,
    MaxPotential,
    Potts,
    SquareMakespan,
    _kernels,
    alpha_pass,
    exact_clique_map,
    generalized_alpha_pass,
    score,
)
from tractable.clique._validate import kernel_args
from tractable.clique.alpha_pass import _label_subsets, _sweep_values_python

# scores are sums of at most ~50 terms of size <= ~100: 1e-9 absolute covers their rounding
ATOL = 1e-9

seeds = st.integers(0, 2**32 - 1)


def _max_potential(rng, n, m, kind):
    if kind == 0:
        return MaxPotential(rng.uniform(-2.0, 3.0, size=(m, n + 1)))
    if kind == 1:
        return Makespan(rng.uniform(0.0, 2.0))
    return SquareMakespan(rng.uniform(0.0, 0.5))


@settings(max_examples=60, deadline=None)
@given(seed=seeds, n=st.integers(1, 6), m=st.integers(1, 3), kind=st.integers(0, 2), neginf=st.booleans())
def test_alpha_pass_exact_for_max_potentials(brute, make_phi, seed, n, m, kind, neginf):
    """Thm 3.1: alpha-pass finds the MAP of every MAX potential (vs all m**n labellings)."""
    rng = np.random.default_rng(seed)
    phi = make_phi(rng, n, m, 0.3 if neginf else 0.0)
    pot = _max_potential(rng, n, m, kind)
    best, _ = brute(phi, pot)
    res = alpha_pass(phi, pot)
    assert res.exact
    assert res.score == pytest.approx(best, abs=ATOL)


@settings(max_examples=60, deadline=None)
@given(seed=seeds, n=st.integers(1, 9), neginf=st.booleans())
def test_alpha_pass_exact_for_any_potential_with_two_labels(brute, make_phi, seed, n, neginf):
    """Sec. 3: with m = 2 the sweep over k covers every count vector, so any potential is solved exactly."""
    rng = np.random.default_rng(seed)
    phi = make_phi(rng, n, 2, 0.3 if neginf else 0.0)
    f = rng.normal(size=n + 1) * 3
    pot = CountPotential(lambda c: f[np.asarray(c)[..., 0]])
    best, _ = brute(phi, pot)
    res = alpha_pass(phi, pot)
    assert res.exact
    assert res.score == pytest.approx(best, abs=ATOL)
    assert exact_clique_map(phi, pot).score == pytest.approx(best, abs=ATOL)


@settings(max_examples=60, deadline=None)
@given(seed=seeds, n=st.integers(2, 8), m=st.integers(2, 4), lam=st.floats(0.01, 3.0))
def test_potts_ratios_of_alpha_pass_and_generalized(seed, n, m, lam):
    """Thm 3.4: alpha-pass >= 13/15 of the optimum for Potts; Thm 3.7: p = 2 gives >= 8/9 (phi >= 0)."""
    rng = np.random.default_rng(seed)
    phi = rng.uniform(0.0, 2.0 * lam * n, size=(n, m))  # node and clique terms of the same order
    pot = Potts(lam)
    opt = exact_clique_map(phi, pot).score
    a = alpha_pass(phi, pot)
    g = generalized_alpha_pass(phi, pot, p=2)
    assert a.score >= 13 / 15 * opt - ATOL
    assert g.score >= 8 / 9 * opt - ATOL
    assert g.score >= a.score - ATOL  # the p = 2 sweeps include the single-label ones


def _thm35_instance(n, eps):
    """Tight instance of Thm 3.5 (m = n + 3, lam = 1); each node's private label is raised by ``eps``
    so that the initial best-other labels are the private ones, as the proof assumes."""
    phi = np.zeros((n, n + 3))
    third = n // 3
    for g in range(3):
        phi[g * third : (g + 1) * third, g] = 4 * n / 3
    phi[np.arange(n), np.arange(n) + 3] = 4 * n / 3 + eps
    return phi


def test_thm35_tight_instance_approaches_13_15():
    ratios = []
    for n in (15, 60, 240):
        phi = _thm35_instance(n, 1e-6)
        groups = np.repeat(np.arange(3), n // 3)
        opt = score(phi, Potts(1.0), groups)
        assert opt == pytest.approx(5 * n**2 / 3, rel=1e-9)
        res = alpha_pass(phi, Potts(1.0))
        # the proof's value: 13 n^2 / 9 + 2 n / 3, plus the eps of the n - n/3 private labels kept
        assert res.score == pytest.approx(13 * n**2 / 9 + 2 * n / 3, abs=1e-3)
        ratios.append(res.score / opt)
        if n == 15:  # subsets of 3 labels reach the optimum
            assert generalized_alpha_pass(phi, Potts(1.0), p=3).score == pytest.approx(opt, rel=1e-12)
    assert ratios[0] > ratios[1] > ratios[2] > 13 / 15
    assert ratios[2] - 13 / 15 < 2 / (5 * 240) + 1e-6  # ratio = 13/15 + 2/(5n)


@settings(max_examples=40, deadline=None)
@given(seed=seeds, P=st.integers(1, 4), n=st.integers(0, 7), m=st.integers(1, 4), code=st.integers(0, 2))
def test_sweep_kernel_matches_batched_reference(seed, P, n, m, code):
    """Specialized equals generic: the compiled sweep equals batched evaluation of the count vectors."""
    from tractable.clique import LinearMajority, SumPotential

    rng = np.random.default_rng(seed)
    out0 = rng.integers(0, m, size=(P, n))
    C0 = np.stack([np.bincount(r, minlength=m) for r in out0]).reshape(P, m)
    to = rng.integers(0, m, size=(P, n))
    # a valid sweep: the k-th step moves the k-th node from its start label
    frm = out0
    table = rng.normal(size=(m, n + 1))
    table[rng.random((m, n + 1)) < 0.2] = -np.inf
    W = rng.normal(size=(m, m))
    pot = [SumPotential(table), MaxPotential(table), LinearMajority(W)][code]
    dummy = np.zeros((1, 1))
    fast = _kernels.sweep_values(C0, frm, to, code, table if code < 2 else dummy, W if code == 2 else dummy)
    np.testing.assert_allclose(fast, _sweep_values_python(C0, frm, to, pot), rtol=1e-12, atol=1e-12)


def test_label_subsets():
    S = _label_subsets(4, 2)
    assert S.shape == (4 + 6, 2)
    assert S[0].tolist() == [0, 4] and S[-1].tolist() == [2, 3]
    assert _label_subsets(3, 5).shape == (3 + 3, 2)  # subsets of size <= m - 1 only


def test_neginf_node_potentials_are_respected(make_phi):
    rng = np.random.default_rng(3)
    phi = make_phi(rng, 40, 5, 0.5)
    for fn in (alpha_pass, generalized_alpha_pass):
        res = fn(phi, Potts(0.05))
        assert np.isfinite(res.score)
        assert np.all(np.isfinite(phi[np.arange(40), res.assignment]))


def test_single_label_clique():
    res = alpha_pass(np.ones((4, 1)), Potts(1.0))
    assert res.assignment.tolist() == [0, 0, 0, 0] and res.score == 20.0 and res.exact and res.status == "optimal"


@settings(max_examples=60, deadline=None)
@given(
    seed=seeds,
    n=st.integers(1, 30),
    m=st.integers(2, 6),
    code=st.integers(0, 2),
    neginf=st.booleans(),
    ties=st.booleans(),
)
def test_compiled_alpha_pass_matches_array_version(make_phi, seed, n, m, code, neginf, ties):
    """Specialized equals generic: the one-loop kernel and the array sweeps pick equally good labellings."""
    from tractable.clique import LinearMajority, SumPotential
    from tractable.clique.alpha_pass import _alpha_pass_arrays

    rng = np.random.default_rng(seed)
    phi = make_phi(rng, n, m, 0.3 if neginf else 0.0)
    if ties:
        phi = np.round(phi)
    table = rng.normal(size=(m, n + 1))
    table[rng.random((m, n + 1)) < 0.1] = -np.inf
    table[:, 0] = 0.0
    pot = [SumPotential(table), MaxPotential(table), LinearMajority(rng.normal(size=(m, m)))][code]
    fast = _kernels.alpha_pass_labels(phi, *kernel_args(pot, n, m))
    ref = _alpha_pass_arrays(phi, pot, kernel_args(pot, n, m))
    s_fast, s_ref = score(phi, pot, fast), score(phi, pot, ref)
    assert s_fast == pytest.approx(s_ref, abs=ATOL) or s_fast == s_ref == -np.inf


@settings(max_examples=60, deadline=None)
@given(
    seed=seeds,
    n=st.integers(1, 25),
    m=st.integers(2, 6),
    p=st.integers(1, 3),
    code=st.integers(0, 2),
    neginf=st.booleans(),
    ties=st.booleans(),
)
def test_compiled_generalized_pass_matches_array_version(make_phi, seed, n, m, p, code, neginf, ties):
    from tractable.clique import LinearMajority, SumPotential
    from tractable.clique.alpha_pass import _generalized_arrays

    rng = np.random.default_rng(seed)
    phi = make_phi(rng, n, m, 0.3 if neginf else 0.0)
    if ties:
        phi = np.round(phi)
    table = rng.normal(size=(m, n + 1))
    table[rng.random((m, n + 1)) < 0.1] = -np.inf
    table[:, 0] = 0.0
    pot = [SumPotential(table), MaxPotential(table), LinearMajority(rng.normal(size=(m, m)))][code]
    S = _label_subsets(m, p)
    fast = _kernels.subset_pass_labels(phi, S, *kernel_args(pot, n, m))
    ref = _generalized_arrays(phi, pot, kernel_args(pot, n, m), S)
    s_fast, s_ref = score(phi, pot, fast), score(phi, pot, ref)
    assert s_fast == pytest.approx(s_ref, abs=ATOL) or s_fast == s_ref == -np.inf


def _alpha_pass_by_definition(phi, pot):
    """Every candidate of Sec. 3.1 built one at a time and scored directly (slow, readable)."""
    n, m = phi.shape
    best = -np.inf
    for alpha in range(m):
        others = np.where(np.arange(m) == alpha, -np.inf, phi)
        out = np.argmax(others, axis=1)
        key = [phi[u, alpha] - phi[u, out[u]] for u in range(n)]
        order = np.argsort(-np.array(key), kind="stable")
        for k in range(n + 1):
            y = out.copy()
            y[order[:k]] = alpha
            best = max(best, score(phi, pot, y))
    return best


@pytest.mark.parametrize("kind", ["POTTS", "ENTROPY", "MAKESPAN2", "MAJ-SPARSE"])
def test_alpha_pass_equals_its_definition_on_benchmark_cliques(kind):
    from tractable.clique import majority_alpha_pass
    from tractable.datasets.clique_benchmark import clique_benchmark

    phi, pot = clique_benchmark(kind, n=30, m=6, lam=0.9, rng=5)
    assert alpha_pass(phi, pot).score == pytest.approx(_alpha_pass_by_definition(phi, pot), abs=ATOL)
    if kind == "MAJ-SPARSE":  # the modified pass: node potentials phi + W[alpha], majority must be alpha
        best = -np.inf
        for alpha in range(6):
            psi = phi + pot.W[alpha]
            others = np.where(np.arange(6) == alpha, -np.inf, psi)
            out = np.argmax(others, axis=1)
            order = np.argsort(-(psi[:, alpha] - psi[np.arange(30), out]), kind="stable")
            for k in range(31):
                y = out.copy()
                y[order[:k]] = alpha
                if np.argmax(np.bincount(y, minlength=6)) == alpha:
                    best = max(best, score(phi, pot, y))
        assert majority_alpha_pass(phi, pot.W).score == pytest.approx(best, abs=ATOL)
