"""Certified lower bounds and gaps (tractable.hlmrf.bound) and the handling of infeasible models."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog, minimize

from tractable import ConvergenceWarning
from tractable.datasets import opinion_diffusion
from tractable.hlmrf import HLMRF, solve
from tractable.hlmrf.bound import term_minima, term_minimum_reference

from .conftest import HAVE_CLARABEL, needs_clarabel, random_model, squared_cases


def _exact_term_minimum(kind, y, c, b, w, rng):
    """min over the box of F(x) + y·x by an LP (HiGHS) or, for p = 2, L-BFGS-B from several starts."""
    k = c.size
    if kind == "squared":
        f = lambda x: w * max(c @ x + b, 0.0) ** 2 + y @ x  # noqa: E731
        return min(
            minimize(f, rng.uniform(0, 1, k), bounds=[(0, 1)] * k, method="L-BFGS-B", options=dict(ftol=1e-15)).fun
            for _ in range(4)
        )
    if kind == "hinge":
        r = linprog(np.r_[y, w], A_ub=np.r_[c, -1.0][None], b_ub=[-b], bounds=[(0, 1)] * k + [(0, None)])
        return r.fun
    a = c[None]
    leq = kind == "leq"
    r = linprog(y, A_ub=a if leq else None, b_ub=[-b] if leq else None, A_eq=None if leq else a,
                b_eq=None if leq else [-b], bounds=[(0, 1)] * k)  # fmt: skip
    return r.fun if r.status == 0 else np.inf


@pytest.mark.parametrize("kind", ["hinge", "squared", "leq", "eq"])
@pytest.mark.parametrize("seed", range(40))
def test_term_minimum_matches_lp_qp(kind, seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 7))
    c, y = rng.uniform(-1, 1, k), rng.uniform(-2, 2, k)
    if seed % 5 == 0:
        c[0] = 0.0
    b, w = float(rng.uniform(-1, 1)), float(rng.uniform(0.1, 2.0))
    exact = _exact_term_minimum(kind, y, c, b, w, rng)
    ref = term_minimum_reference(kind, y, c, b, w)
    ker = term_minima(kind, [0, k], c, [b], [w], y)[0]
    if np.isinf(exact):
        assert ref == np.inf and np.isfinite(ker)  # a constraint missing the box: any finite value is valid
        return
    assert ref == pytest.approx(exact, abs=1e-7)
    assert ker <= ref + 1e-12 and ker == pytest.approx(ref, abs=1e-9)


def _infeasible(n=2):
    m = HLMRF(n)
    m.add_potential([0, 1], [1.0, -1.0])
    m.add_constraint([0, 1], [1.0, 1.0], constant=-3.0, sense=">=")  # x0 + x1 >= 3 in the unit box
    return m


@pytest.mark.parametrize("constraints", ["auto", "local", "consensus"])
def test_infeasible_model_is_never_converged(constraints):
    with pytest.warns(ConvergenceWarning, match="infeasible"):
        r = solve(_infeasible(), constraints=constraints)
    assert not r.converged and r.status == "infeasible"
    assert r.gap == np.inf and not np.isfinite(r.lower_bound)


def test_infeasible_shared_constraints():
    # each constraint alone is satisfiable; together they are not (HiGHS feasibility LP before the run)
    m = HLMRF(3)
    m.add_potential([0, 1], [1.0, -1.0])
    m.add_constraint([0, 1], [1.0, 1.0], constant=-1.5, sense=">=")
    m.add_constraint([1, 2], [1.0, 1.0], constant=-0.5, sense="<=")
    m.add_constraint([0, 2], [1.0, 1.0], constant=-0.5, sense="<=")
    for constraints in ["auto", "local"]:
        with pytest.warns(ConvergenceWarning):
            r = solve(m, constraints=constraints)
        assert not r.converged and r.status == "infeasible" and r.gap == np.inf
    with pytest.warns(ConvergenceWarning):
        r = solve(m, gap_tol=1e-3)
    assert r.gap == np.inf and not r.converged


def _with_fixed(model, seed):
    rng = np.random.default_rng(seed)
    if seed % 3 == 0:
        # fix a variable that no constraint uses, so that the model stays feasible
        used = set(np.asarray(model.constraint_arrays()["variables"]).tolist())
        free = [v for v in range(model.n_variables) if v not in used]
        if free:
            model.fix([free[0]], [float(rng.uniform(0, 1))])
    return model


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    # squared hinges: Clarabel's reference optimum
    squared=st.sampled_from([False, True, "mixed"] if HAVE_CLARABEL else [False]),
    max_iter=st.sampled_from([5, 50, 2000]),
    constraints=st.sampled_from(["auto", "local"]),
)
def test_bound_is_valid(seed, squared, max_iter, constraints):
    model = _with_fixed(random_model(seed, squared=squared), seed)
    ref = solve(model, method="highs" if squared is False else "clarabel")
    assert ref.status == "optimal"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = solve(model, max_iter=max_iter, constraints=constraints)
    assert np.isfinite(r.lower_bound)
    tol = 1e-9 if squared is False else 1e-7  # Clarabel's optimum is accurate to about 1e-8
    assert r.lower_bound <= ref.objective + tol
    if np.isfinite(r.gap):  # x feasible: its objective is an upper bound
        assert r.max_violation <= 1e-9
        assert ref.objective <= r.objective + tol
        assert r.gap == pytest.approx((r.objective - r.lower_bound) / max(abs(r.objective), 1.0))
    # the reference solvers' own bounds
    assert ref.lower_bound <= ref.objective + 1e-9 and ref.gap <= 1e-6


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("squared", [False, True, "mixed"])
def test_gap_closes_on_small_models(seed, squared):
    model = random_model(seed, squared=squared)
    r = solve(model, eps_abs=1e-10, eps_rel=1e-10, max_iter=100_000)
    if not np.isfinite(r.gap):  # constraints with local copies: make the answer feasible
        r = solve(model, eps_abs=1e-10, eps_rel=1e-10, max_iter=100_000, repair=True)
    assert r.gap <= 1e-6, (r.gap, r.max_violation)


@needs_clarabel
def test_early_stop_still_gives_a_valid_bound():
    model = random_model(3, squared="mixed", senses=("<=",), r=2)
    ref = solve(model, method="clarabel")
    with pytest.warns(ConvergenceWarning):
        r = solve(model, max_iter=5)
    assert r.status == "max_iter_reached"
    assert np.isfinite(r.lower_bound) and r.lower_bound <= ref.objective + 1e-7


@pytest.mark.parametrize("squared", squared_cases(False, True))
def test_gap_tol_stops_early(squared):
    model = opinion_diffusion(300, squared=squared, rng=0)
    opts = dict(eps_abs=0.0, eps_rel=0.0, max_iter=3000, constraints="consensus")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        full = solve(model, gap_tol=1e-7, **opts)  # a tighter target runs longer
    r = solve(model, gap_tol=1e-3, **opts)
    assert r.converged and r.status == "converged" and "gap" in r.message
    assert r.gap <= 1e-3 and r.max_violation <= 1e-9 and r.n_iter < full.n_iter
    exact = solve(model, method="highs" if not squared else "clarabel").objective
    assert r.lower_bound <= exact + 1e-7 and exact <= r.objective + 1e-7
    assert (r.objective - exact) / max(abs(r.objective), 1.0) <= 1e-3 + 1e-7


def test_gap_tol_validation():
    m = random_model(0)
    for bad in [0.0, -1.0, float("nan")]:
        with pytest.raises(ValueError, match="gap_tol"):
            solve(m, gap_tol=bad)
    with pytest.raises(ValueError, match="gap_tol"):
        solve(m, method="highs", gap_tol=1e-3)


@pytest.mark.parametrize("method", ["admm", "highs", pytest.param("clarabel", marks=needs_clarabel)])
def test_every_result_has_a_bound(method):
    m = random_model(1, senses=("<=",), r=1)
    r = solve(m, method=method)
    assert np.isfinite(r.lower_bound) and r.lower_bound <= r.objective + 1e-7


def test_infeasible_without_the_lp_check_is_never_converged(monkeypatch):
    # beyond the size of the feasibility LP, the run itself must not claim convergence
    from tractable.hlmrf import admm

    monkeypatch.setattr(admm, "_LP_CHECK_NNZ", 0)
    m = HLMRF(3)
    m.add_potential([0, 1], [1.0, -1.0])
    m.add_constraint([0, 1], [1.0, 1.0], constant=-1.5, sense=">=")
    m.add_constraint([1, 2], [1.0, 1.0], constant=-0.5, sense="<=")
    m.add_constraint([0, 2], [1.0, 1.0], constant=-0.5, sense="<=")
    for kw in [dict(), dict(max_iter=200), dict(eps_abs=1e-2, eps_rel=1e-1), dict(gap_tol=1e-2)]:
        with pytest.warns(ConvergenceWarning):
            r = solve(m, **kw)
        assert not r.converged and r.gap == np.inf and r.max_violation > 0.1
