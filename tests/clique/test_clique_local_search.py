import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tractable._results import ConvergenceWarning
from tractable.clique import (
    CountPotential,
    Entropy,
    LinearMajority,
    Makespan,
    Potts,
    SumPotential,
    _kernels,
    alpha_expansion,
    alpha_pass,
    exact_clique_map,
    icm,
)
from tractable.clique.expansion import _expansion_move_python
from tractable.clique.icm import _icm_sweep_python

ATOL = 1e-9  # sums of a few dozen terms of size <= ~10

seeds = st.integers(0, 2**32 - 1)


@settings(max_examples=60, deadline=None)
@given(seed=seeds, n=st.integers(1, 7), m=st.integers(2, 4), neginf=st.booleans())
def test_expansion_move_is_optimal(make_phi, seed, n, m, neginf):
    """The DP move equals the best move found by enumerating every vector of switched counts."""
    rng = np.random.default_rng(seed)
    phi = make_phi(rng, n, m, 0.3 if neginf else 0.0)
    table = rng.normal(size=(m, n + 1)) * 2
    labels = rng.integers(0, m, size=n)
    alpha = int(rng.integers(0, m))
    ref_v, _ = _expansion_move_python(phi, labels, alpha, table)
    new, moved = _kernels.expansion_move(phi, labels.copy(), alpha, table, 0.0)
    v = phi[np.arange(n), new].sum() + table[np.arange(m), np.bincount(new, minlength=m)].sum()
    cur = phi[np.arange(n), labels].sum() + table[np.arange(m), np.bincount(labels, minlength=m)].sum()
    if ref_v > cur + 1e-9:
        assert moved
    assert v == pytest.approx(ref_v, abs=ATOL) or (v == ref_v == -np.inf)
    assert np.all((new == labels) | (new == alpha))  # only switches to alpha


def _thm36_instance(k, group):
    """Thm 3.6: m = k + 1, lam = 1, phi[u, 0] = 2n/k for all u, phi[u, i+1] = 2n in group i."""
    n = k * group
    phi = np.zeros((n, k + 1))
    phi[:, 0] = 2 * n / k
    phi[np.arange(n), 1 + np.arange(n) // group] = 2 * n
    return phi


def test_thm36_all_first_label_is_an_expansion_local_optimum_with_ratio_to_half():
    ratios = []
    for k, group in [(2, 3), (10, 10), (40, 10)]:
        phi = _thm36_instance(k, group)
        n = k * group
        res = alpha_expansion(phi, Potts(1.0), init=np.zeros(n, dtype=np.int64))
        assert res.converged and res.n_iter == 1
        assert np.all(res.assignment == 0)
        assert res.score == pytest.approx(n**2 * (1 + 2 / k), rel=1e-12)
        opt = n**2 * (2 + 1 / k)  # every group its own label
        ratios.append(res.score / opt)
        if k == 2:
            assert exact_clique_map(phi, Potts(1.0)).score == pytest.approx(opt, rel=1e-12)
        # alpha-pass escapes it
        assert alpha_pass(phi, Potts(1.0)).score >= 13 / 15 * opt
    assert ratios[0] > ratios[1] > ratios[2]
    assert ratios[2] == pytest.approx((1 + 2 / 40) / (2 + 1 / 40), rel=1e-12) and ratios[2] < 0.52


@settings(max_examples=40, deadline=None)
@given(seed=seeds, n=st.integers(1, 6), m=st.integers(2, 3), kind=st.integers(0, 2))
def test_expansion_result_is_a_local_optimum(make_phi, seed, n, m, kind):
    rng = np.random.default_rng(seed)
    phi = make_phi(rng, n, m, 0.2)
    lam = rng.uniform(0.05, 1.5)
    pot = [Potts(lam), Entropy(lam), SumPotential(rng.normal(size=(m, n + 1)))][kind]
    res = alpha_expansion(phi, pot)
    table = pot.table(n, m)
    for alpha in range(m):
        v, _ = _expansion_move_python(phi, res.assignment.copy(), alpha, table)
        assert v <= res.score + 1e-8


@settings(max_examples=40, deadline=None)
@given(seed=seeds, n=st.integers(1, 8), m=st.integers(2, 4), code=st.integers(0, 2))
def test_icm_kernel_matches_reference_sweep(seed, n, m, code):
    rng = np.random.default_rng(seed)
    phi = rng.uniform(0, 2, size=(n, m))
    table = rng.normal(size=(m, n + 1))
    W = rng.normal(size=(m, m))
    pot = [SumPotential(table), Makespan(0.7), LinearMajority(W)][code]
    tab = table if code == 0 else Makespan(0.7).table(n, m) if code == 1 else np.zeros((1, 1))
    Wk = W if code == 2 else np.zeros((1, 1))
    labels = rng.integers(0, m, size=n)
    order = rng.permutation(n)
    l1, c1 = labels.copy(), np.bincount(labels, minlength=m)
    l2, c2 = labels.copy(), np.bincount(labels, minlength=m)
    ch1 = _kernels.icm_sweep(phi, l1, c1, order, code, tab, Wk, 1e-12)
    ch2 = _icm_sweep_python(phi, l2, c2, order, pot, 1e-12)
    assert ch1 == ch2 and l1.tolist() == l2.tolist() and c1.tolist() == c2.tolist()


def test_icm_fixed_point_and_general_potential(make_phi):
    rng = np.random.default_rng(5)
    phi = make_phi(rng, 30, 4, 0.3)
    f = rng.normal(size=31)
    for pot in (Potts(0.05), CountPotential(lambda c: f[np.asarray(c)[..., 0]] + 0.01 * np.asarray(c)[..., 1] ** 2)):
        res = icm(phi, pot, rng=0)
        assert res.converged and np.isfinite(res.score)
        again = icm(phi, pot, init=res.assignment, rng=1)
        assert again.n_iter == 1 and again.assignment.tolist() == res.assignment.tolist()
    a, b = icm(phi, Potts(0.05), rng=7), icm(phi, Potts(0.05), rng=7)
    assert a.assignment.tolist() == b.assignment.tolist()


def test_non_convergence_warns():
    phi = np.array([[1.0, 0.0, 0.0]] * 6 + [[0.0, 1.0, 0.0]] * 3)
    with pytest.warns(
        ConvergenceWarning,
        match=re.escape(
            "icm: stopped at the iteration limit (1) before converging; labels still changing; raise `max_iter`"
        ),
    ):
        res = icm(phi, Potts(0.01), init=np.full(9, 2), max_iter=1, rng=0)
    assert not res.converged and res.status == "max_iter_reached" and res.n_iter == 1
    assert res.message == (
        "icm: stopped at the iteration limit (1) before converging; labels still changing; raise `max_iter`"
    )
    with pytest.warns(
        ConvergenceWarning,
        match=re.escape(
            "alpha_expansion: stopped at the iteration limit (1) before converging; moves still improving the "
            "score; raise `max_iter`"
        ),
    ):
        res = alpha_expansion(phi, Potts(0.01), init=np.full(9, 2), max_iter=1)
    assert not res.converged and res.assignment.tolist() == [0] * 6 + [1] * 3
    assert res.status == "max_iter_reached" and res.n_iter == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for res in (
            alpha_expansion(phi, Potts(0.01), init=np.full(9, 2)),
            icm(phi, Potts(0.01), init=np.full(9, 2), rng=0),
        ):
            assert res.converged and res.status == "converged"
            assert res.message == f"{res.method}: converged after {res.n_iter} iterations"


def test_local_search_errors():
    phi = np.ones((3, 2))
    with pytest.raises(
        ValueError,
        match=re.escape(
            "`potential` must be a SUM potential (Potts, Entropy or SumPotential) for alpha_expansion; "
            "got Makespan(1.0)."
        ),
    ):
        alpha_expansion(phi, Makespan(1.0))
    with pytest.raises(ValueError, match=re.escape("`max_iter` must be >= 1; got 0.")):
        alpha_expansion(phi, Potts(1.0), max_iter=0)
    with pytest.raises(ValueError, match=re.escape("`max_iter` must be >= 1; got 0.")):
        icm(phi, Potts(1.0), max_iter=0)
    with pytest.raises(ValueError, match=re.escape("`init` must have shape (3,); got (2,).")):
        icm(phi, Potts(1.0), init=[0, 1])
    with pytest.raises(ValueError, match=re.escape("`init` must contain indices in [0, 1]; got 2.")):
        alpha_expansion(phi, Potts(1.0), init=[0, 1, 2])
    with pytest.raises(
        TypeError, match=re.escape("`rng` must be None, an int seed or a numpy.random.Generator; got 'x'.")
    ):
        icm(phi, Potts(1.0), rng="x")
