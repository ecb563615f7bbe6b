"""Infeasible models found during the ADMM run: diverging multipliers (a Farkas certificate) and
consensus-step constraints that miss the box, with the cheap checks before the run switched off."""

import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tractable import ConvergenceWarning
from tractable.datasets import opinion_diffusion
from tractable.hlmrf import HLMRF, admm, solve
from tractable.hlmrf.bound import infeasibility_measure
from tractable.hlmrf.partition import _split_constraints

from .conftest import random_model


@pytest.fixture
def no_precheck(monkeypatch):
    """Skip every check before the run, so that only the run itself can find infeasibility."""
    original = admm._infeasibility
    monkeypatch.setattr(admm, "_infeasibility", lambda comp: (None, original(comp)[1]))


def _triangle(m, a, b, c):
    # each constraint alone is satisfiable; together they need x_a + x_b >= 1.5 and x_a + x_b <= 1
    m.add_constraint([a, b], [1.0, 1.0], constant=-1.5, sense=">=")
    m.add_constraint([b, c], [1.0, 1.0], constant=-0.5, sense="<=")
    m.add_constraint([a, c], [1.0, 1.0], constant=-0.5, sense="<=")
    return m


def _shared():
    m = HLMRF(3)
    m.add_potential([0, 1], [1.0, -1.0])
    return _triangle(m, 0, 1, 2)


def _single():
    m = HLMRF(2)
    m.add_potential([0, 1], [1.0, -1.0])
    m.add_constraint([0, 1], [1.0, 1.0], constant=-3.0, sense=">=")  # x0 + x1 >= 3 in the unit box
    return m


def _assert_infeasible(r):
    assert r.status == "infeasible" and not r.converged
    assert r.gap == np.inf and r.lower_bound == -np.inf
    assert r.max_violation > 0.1 and np.all(np.isfinite(r.x))  # the last iterate is kept


@pytest.mark.parametrize("n_partitions", [1, 3])
@pytest.mark.parametrize(
    ("make", "constraints", "why"),
    [
        (_shared, "auto", "multipliers diverge"),
        (_shared, "local", "multipliers diverge"),
        (_single, "local", "multipliers diverge"),
        # the run's end: the multipliers (a certificate of their own) or the consensus-step projection
        (_single, "auto", "multipliers diverge|consensus step cannot hold"),
        (_single, "consensus", "multipliers diverge|consensus step cannot hold"),
    ],
)
def test_run_detects_infeasibility_in_every_constraint_mode(no_precheck, make, constraints, why, n_partitions):
    with pytest.warns(ConvergenceWarning, match=why):
        r = solve(make(), constraints=constraints, n_partitions=n_partitions)
    _assert_infeasible(r)
    assert re.search(why, r.message) and r.message.startswith("admm: the problem is infeasible")


@pytest.mark.parametrize("constraints", ["auto", "local"])
@pytest.mark.parametrize("kw", [{}, {"gap_tol": 1e-3}, {"parallel": True}, {"adaptive_rho": True}])
def test_many_constraints_beyond_the_lp_check(monkeypatch, constraints, kw):
    # a real network plus three infeasible triangles; the feasibility LP is skipped (too many nonzeros)
    monkeypatch.setattr(admm, "_LP_CHECK_NNZ", 0)
    m = opinion_diffusion(300, rng=1)
    rng = np.random.default_rng(0)
    for _ in range(3):
        _triangle(m, *(2 * rng.choice(m.n_variables // 2, 3, replace=False)))
    with pytest.warns(ConvergenceWarning, match="multipliers diverge"):
        r = solve(m, constraints=constraints, **kw)
    _assert_infeasible(r)
    assert r.n_iter < 2000


@pytest.mark.parametrize("constraints", ["consensus", "auto", "local"])
def test_many_disjoint_constraints_are_checked_before_the_run(constraints):
    # disjoint constraints x_2i + x_2i+1 <= 1, one of them x_14 + x_15 >= 3: the exact per-constraint
    # check decides at any size, in every mode
    n = 4000
    senses = ["<="] * (n // 2)
    senses[7] = ">="
    constants = np.full(n // 2, -1.0)
    constants[7] = -3.0
    m = HLMRF(n)
    m.add_constraints(np.arange(0, n + 1, 2), np.arange(n), np.ones(n), constants, senses)
    m.add_potentials(np.arange(n + 1), np.arange(n), -np.ones(n), np.full(n, 0.7), np.ones(n))
    with pytest.warns(ConvergenceWarning, match="constraint 7 .* cannot hold anywhere"):
        r = solve(m, constraints=constraints)
    assert r.status == "infeasible" and r.n_iter == 0


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    squared=st.sampled_from([False, True, "mixed"]),
    constraints=st.sampled_from(["auto", "local"]),
    max_iter=st.sampled_from([150, 400, 3000]),
    rho=st.sampled_from([0.05, 1.0, 20.0]),
)
def test_feasible_models_are_never_called_infeasible(seed, squared, constraints, max_iter, rho):
    # constraints through a random interior point, equalities included, with tight tolerances so
    # that the run is long enough for several divergence tests
    model = random_model(seed, squared=squared, r=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = solve(model, constraints=constraints, max_iter=max_iter, rho=rho, eps_abs=1e-12, eps_rel=1e-12)
    assert r.status != "infeasible"


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.sampled_from([1e-3, 1.0, 1e6]))
def test_measure_is_never_positive_on_a_feasible_model(seed, scale):
    # h(w) <= 0 for every direction w when a feasible point exists (bound.py's derivation)
    model = random_model(seed, r=4, senses=("<=", "==", ">="))
    comp = model._compile()
    rng = np.random.default_rng(seed)
    for mode in ("local", "auto"):
        terms, zc = _split_constraints(comp, mode)
        w = scale * rng.normal(size=terms[1].size)
        assert infeasibility_measure(terms, zc, w, np.zeros(comp.free.size), 10.0) <= 0.0


def test_measure_certifies_the_farkas_direction():
    # x0 + x1 >= 1.5 with x0 + x1 <= 1: w = +1 on the first constraint's copies, -1 on the second's
    m = HLMRF(2)
    m.add_constraint([0, 1], [1.0, 1.0], constant=-1.5, sense=">=")
    m.add_constraint([0, 1], [1.0, 1.0], constant=-1.0, sense="<=")
    terms, zc = _split_constraints(m._compile(), "local")
    # h(w) = min_{C1} (x0 + x1) + min_{C2} -(x0 + x1) + min_box 0 = 1.5 - 1
    w = np.array([1.0, 1.0, -1.0, -1.0])
    assert infeasibility_measure(terms, zc, w, np.zeros(2), 1.0) == pytest.approx(0.5, abs=1e-12)
    assert infeasibility_measure(terms, zc, -w, np.zeros(2), 1.0) < 0


@pytest.mark.parametrize("method", ["admm", "highs", "clarabel"])
def test_every_variable_fixed_is_solved_by_every_method(method):
    """Nothing left to optimize: every method returns the fixed values, optimal, with their objective (HiGHS
    used to fail on the empty linear program)."""
    if method == "clarabel":
        pytest.importorskip("clarabel")
    m = HLMRF(2)
    m.add_potential([0, 1], [1.0, 1.0])
    m.fix([0, 1], [0.3, 0.4])
    r = solve(m, method=method)
    assert r.converged and list(r.x) == [0.3, 0.4] and r.objective == pytest.approx(0.7, abs=1e-12)
