"""Consensus ADMM against the exact LP (HiGHS) and QP (Clarabel) optima."""

import re
import warnings

import numpy as np
import pytest

from tractable import ConvergenceWarning
from tractable.datasets import opinion_diffusion
from tractable.hlmrf import HLMRF, MPEResult, project_feasible, solve

from .conftest import HAVE_CLARABEL, needs_clarabel, squared_cases

TIGHT = dict(eps_abs=1e-9, eps_rel=1e-9, max_iter=200_000)


def _friends(squared):
    """Example 1 of Bach et al. (2012): one voter, two friends at 0.9 (liberal) and 0.6 (conservative)."""
    m = HLMRF(2)
    m.add_potential([0], [-1.0], constant=0.9, squared=squared)
    m.add_potential([1], [-1.0], constant=0.6, squared=squared)
    m.add_constraint([0, 1], [1.0, 1.0], constant=-1.0, sense="<=")
    return m


@pytest.mark.parametrize("constraints", ["local", "consensus"])
def test_worked_example_squared(constraints):
    # paper: with p = 2 the unique MPE is (0.65, 0.35)
    r = solve(_friends(True), constraints=constraints, **TIGHT)
    assert isinstance(r, MPEResult) and r.converged and r.status == "converged"
    np.testing.assert_allclose(r.x, [0.65, 0.35], atol=1e-7)
    np.testing.assert_allclose(r.objective, 2 * 0.25**2, rtol=1e-7)
    assert r.x.flags.writeable is False


@pytest.mark.parametrize("constraints", ["local", "consensus"])
def test_worked_example_linear(constraints):
    # paper: with p = 1 every point with x_L in [0.4, 0.9] and x_C = 1 - x_L is an MPE (objective 0.5)
    r = solve(_friends(False), constraints=constraints, **TIGHT)
    assert r.converged
    assert 0.4 - 1e-7 <= r.x[0] <= 0.9 + 1e-7
    np.testing.assert_allclose(r.x.sum(), 1.0, atol=1e-7)
    np.testing.assert_allclose(r.objective, 0.5, rtol=1e-7)
    ref = solve(_friends(False), method="highs")
    np.testing.assert_allclose(ref.objective, 0.5, rtol=1e-9)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("squared", squared_cases(False, True, "mixed"))
def test_admm_matches_reference_on_random_models(make_model, seed, squared):
    model = make_model(seed, squared=squared)
    ref = solve(model, method="highs" if squared is False else "clarabel")
    assert ref.status == "optimal"
    r = solve(model, **TIGHT)
    assert r.converged
    # tight tolerances: 1e-4 relative (issue), with an absolute floor for near-zero optima
    assert abs(r.objective - ref.objective) <= 1e-4 * abs(ref.objective) + 1e-6
    assert r.max_violation <= 1e-6
    if squared is False and HAVE_CLARABEL:
        clar = solve(model, method="clarabel")
        np.testing.assert_allclose(clar.objective, ref.objective, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("squared", squared_cases(False, True))
def test_admm_matches_reference_on_opinion_diffusion(squared):
    model = opinion_diffusion(150, squared=squared, rng=3)
    ref = solve(model, method="clarabel" if squared else "highs")
    for constraints in ("local", "consensus"):
        r = solve(model, constraints=constraints, eps_abs=1e-8, eps_rel=1e-7, max_iter=200_000)
        assert r.converged
        np.testing.assert_allclose(r.objective, ref.objective, rtol=1e-4)
        if constraints == "consensus":
            # iterates of the consensus variant are feasible up to rounding
            assert r.max_violation <= 1e-12


def test_consensus_mode_gives_feasible_iterates():
    model = opinion_diffusion(400, rng=1)
    r = solve(model, constraints="consensus")
    assert r.max_violation <= 1e-12
    loose = solve(model, constraints="local")
    assert loose.max_violation > r.max_violation


def test_consensus_mode_needs_disjoint_constraints():
    m = HLMRF(3)
    m.add_potential([0], [1.0])
    m.add_constraint([0, 1], [1.0, 1.0], -1.0)
    m.add_constraint([1, 2], [1.0, 1.0], -1.0)
    with pytest.raises(ValueError, match=re.escape("`constraints`='consensus' needs constraints whose variables")):
        solve(m, constraints="consensus")
    assert solve(m, constraints="auto").converged


@needs_clarabel
def test_fixed_variables_are_folded(make_model):
    model = make_model(11, squared="mixed", r=0)
    model.fix([1, 4], [0.3, 0.9])
    ref = solve(model, method="clarabel")
    r = solve(model, **TIGHT)
    assert r.x[1] == 0.3 and r.x[4] == 0.9
    assert abs(r.objective - ref.objective) <= 1e-4 * abs(ref.objective) + 1e-6
    # brute check of the folding: same optimum as substituting the values by hand
    grid = np.linspace(0, 1, 5)
    assert r.objective <= min(model.objective(np.r_[g, 0.3, r.x[2:4], 0.9, r.x[5:]]) for g in grid) + 1e-8


@needs_clarabel
def test_options_reach_the_same_optimum(make_model):
    model = make_model(5, squared=True)
    ref = solve(model, method="clarabel").objective
    for kw in (dict(adaptive_rho=True), dict(over_relaxation=1.6), dict(rho=0.2), dict(rho=5.0), dict(parallel=False)):
        r = solve(model, **TIGHT, **kw)
        assert r.converged, kw
        assert abs(r.objective - ref) <= 1e-4 * abs(ref) + 1e-6, kw


def test_warm_start_from_the_optimum_converges_fast():
    model = opinion_diffusion(200, squared=True, rng=2)
    cold = solve(model, eps_rel=1e-5)
    warm = solve(model, eps_rel=1e-5, x0=cold.x)
    assert warm.n_iter < cold.n_iter


def test_infeasible_model_is_reported():
    m = HLMRF(2)
    m.add_potential([0, 1], [1.0, -1.0])
    m.add_constraint([0, 1], [1.0, 1.0], constant=-1.5, sense=">=")  # x0 + x1 >= 1.5
    m.add_constraint([0, 1], [1.0, 1.0], constant=-1.0, sense="<=")  # x0 + x1 <= 1
    # detected before the run (HiGHS feasibility LP): no point, no certified gap
    with pytest.warns(ConvergenceWarning, match="admm: the problem is infeasible"):
        r = solve(m, max_iter=2000, repair=True)
    assert not r.converged and r.status == "infeasible" and np.isnan(r.x).all() and r.gap == np.inf
    for method in ("highs", "clarabel") if HAVE_CLARABEL else ("highs",):
        # a reference solver without an optimum stops short too: converged=False with a warning
        with pytest.warns(ConvergenceWarning, match=re.escape(f"{method}: the problem is infeasible")):
            ref = solve(m, method=method, repair=True)
        assert ref.status == "infeasible" and not ref.converged and np.isnan(ref.x).all()
    with pytest.raises(ValueError, match=re.escape("`model` is infeasible")):
        project_feasible(m, [0.5, 0.5])


def test_time_limit_and_max_iter_statuses():
    model = opinion_diffusion(300, rng=0)
    with pytest.warns(ConvergenceWarning):
        r = solve(model, max_iter=3)
    assert r.n_iter == 3 and r.status == "max_iter_reached"
    with pytest.warns(ConvergenceWarning, match=re.escape("admm: stopped at the time limit after")) as rec:
        # a gap target no rounding slack allows: only the time limit can stop the run
        r = solve(model, eps_abs=0.0, eps_rel=0.0, gap_tol=1e-15, time_limit=0.05)
    assert r.status == "time_limit_reached" and not r.converged
    assert str(rec[0].message) == r.message and r.message.endswith("or increase time_limit")
    h = solve(model, method="highs", time_limit=100.0)
    assert h.status == "optimal"


def test_repair_restores_feasibility():
    model = opinion_diffusion(300, rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = solve(model, max_iter=30, constraints="local")
        rep = solve(model, max_iter=30, repair=True, constraints="local")
    assert r.max_violation > 1e-3
    assert rep.max_violation <= 1e-12
    np.testing.assert_allclose(rep.x, project_feasible(model, r.x))
    # the exact projection moves the point no more than any other feasible point does, e.g. clip
    assert np.linalg.norm(rep.x - r.x) <= np.linalg.norm(np.clip(r.x, 0, 0.5) - r.x) + 1e-12


def test_default_answers_are_feasible_when_constraints_are_disjoint():
    model = opinion_diffusion(300, rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = solve(model, max_iter=30)
    # "auto" projects the disjoint simplex constraints in the consensus step: feasible to rounding
    assert r.max_violation <= 1e-12


def test_repair_with_overlapping_constraints_uses_l1_projection():
    m = HLMRF(3)
    m.add_potential([0], [-1.0], 1.0)
    m.add_constraint([0, 1], [1.0, 1.0], -1.0)
    m.add_constraint([1, 2], [1.0, 1.0], -1.0)
    x = project_feasible(m, [0.9, 0.9, 0.9])
    assert m.max_violation(x) <= 1e-9
    # the L1-nearest feasible point moves by 0.8 in total
    np.testing.assert_allclose(np.abs(x - 0.9).sum(), 0.8, atol=1e-9)


def test_highs_rejects_squared_potentials():
    with pytest.raises(ValueError, match=re.escape("`method`='highs' solves only models whose potentials")):
        solve(_friends(True), method="highs")


def test_progress_bar_runs(capsys):
    r = solve(_friends(True), progress=True)
    assert r.converged
    # the bar shows the certified gap of the last check and the final state
    shown = capsys.readouterr().err
    assert "gap=" in shown and f"{r.n_iter}/" in shown


def test_solve_bad_input():
    m = _friends(True)
    with pytest.raises(ValueError, match=re.escape("`method` must be one of 'admm', 'highs', 'clarabel'; got 'x'.")):
        solve(m, method="x")
    with pytest.raises(TypeError, match=re.escape("`model` must be an HLMRF; got list.")):
        solve([1], method="admm")
    with pytest.raises(ValueError, match=re.escape("`rho` must be a finite number > 0; got -1.0.")):
        solve(m, rho=-1.0)
    with pytest.raises(ValueError, match=re.escape("`max_iter` must be >= 1; got 0.")):
        solve(m, max_iter=0)
    with pytest.raises(ValueError, match=re.escape("`x0` must have shape (2,); got (3,).")):
        solve(m, x0=[0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=re.escape("`over_relaxation` must lie in (0, 2); got 2.5.")):
        solve(m, over_relaxation=2.5)
    with pytest.raises(ValueError, match=re.escape("`constraints` must be one of 'local', 'consensus', 'auto'")):
        solve(m, constraints="global")
    with pytest.raises(ValueError, match=re.escape("`time_limit` must be a finite number > 0; got 0.0.")):
        solve(m, time_limit=0.0)


@pytest.mark.parametrize("constraints", ["local", "consensus"])
def test_parallel_and_sequential_kernels_agree(constraints):
    model = opinion_diffusion(300, squared=True, rng=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = solve(model, constraints=constraints, parallel=True, max_iter=60)
        b = solve(model, constraints=constraints, parallel=False, max_iter=60)
    # same iterates; only the summation order of the residual norms may differ
    np.testing.assert_allclose(a.x, b.x, atol=1e-12)
    assert abs(a.n_iter - b.n_iter) <= 1


def test_max_iter_1_warns_and_reports_max_iter_reached():
    with pytest.warns(ConvergenceWarning) as rec:
        r = solve(_friends(True), max_iter=1)
    assert not r.converged and r.status == "max_iter_reached" and r.n_iter == 1
    assert r.message.startswith("admm: stopped at the iteration limit (1) before converging; primal residual")
    assert [str(w.message) for w in rec if w.category is ConvergenceWarning] == [r.message]
    # the warning points at the caller, not at the library
    assert rec[0].filename == __file__


@needs_clarabel
def test_converged_result_fields_and_messages():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # converged: no warning
        r = solve(_friends(True), eps_abs=1e-8, eps_rel=1e-8)
        h = solve(_friends(False), method="highs")
        c = solve(_friends(True), method="clarabel")
    assert r.status == "converged" and r.method == "admm"
    assert r.message == f"admm: converged after {r.n_iter} iterations; certified gap {r.gap:.2g} below gap_tol, " + (
        "residuals below tolerance"
    )
    assert r.gap <= 5e-4 and r.lower_bound <= r.objective
    assert h.status == "optimal" and h.converged and h.method == "highs"
    assert h.message.startswith("highs: exact solution; HiGHS: ")
    assert c.status == "optimal" and c.method == "clarabel"
    assert c.message == "clarabel: exact solution; Clarabel status Solved"


@pytest.mark.parametrize("method", ["admm", "highs", pytest.param("clarabel", marks=needs_clarabel)])
def test_result_is_frozen_and_x_read_only(method):
    import dataclasses

    r = solve(_friends(False), method=method)
    assert r.x.flags.writeable is False
    with pytest.raises(ValueError, match="read-only"):
        r.x[0] = 0.5
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.objective = 0.0
    assert isinstance(r.n_iter, int) and isinstance(r.converged, bool)


def test_unknown_method_lists_the_valid_names():
    with pytest.raises(ValueError, match=re.escape("`method` must be one of 'admm', 'highs', 'clarabel'; got 'ADMM'.")):
        solve(_friends(True), method="ADMM")
    with pytest.raises(ValueError, match=re.escape("`method` must be one of 'admm', 'highs', 'clarabel'; got None.")):
        solve(_friends(True), method=None)


@pytest.mark.parametrize("method", ["highs", "clarabel"])
@pytest.mark.parametrize(
    "option, value",
    [
        ("rho", 2.0),
        ("eps_abs", 1e-6),
        ("eps_rel", 1e-6),
        ("max_iter", 5),
        ("x0", [0.5, 0.5]),
        ("progress", False),
        ("adaptive_rho", True),
        ("over_relaxation", 1.5),
        ("constraints", "local"),
        ("parallel", False),
    ],
)
def test_admm_option_given_to_a_reference_solver_is_an_error(method, option, value):
    with pytest.raises(
        ValueError,
        match=re.escape(f"`{option}` does not apply to `method`={method!r} (its options: `time_limit`, `repair`)."),
    ):
        solve(_friends(False), method=method, **{option: value})


def test_several_inapplicable_options_are_named_together():
    with pytest.raises(ValueError, match=re.escape("`max_iter`, `rho` do not apply to `method`='highs'")):
        solve(_friends(False), method="highs", rho=2.0, max_iter=5)


@needs_clarabel
def test_reference_solvers_take_time_limit_and_repair():
    r = solve(_friends(False), method="highs", time_limit=60.0, repair=True)
    assert r.status == "optimal" and r.max_violation <= 1e-9
    r = solve(_friends(True), method="clarabel", time_limit=60.0, repair=True)
    assert r.status == "optimal"


def test_options_are_keyword_only():
    m = _friends(True)
    with pytest.raises(TypeError, match="positional argument"):
        solve(m, "admm")


def test_explicit_defaults_give_the_same_answer_as_none():
    m = _friends(True)
    a = solve(m)
    b = solve(
        m,
        rho=0.25,  # most potentials squared
        eps_abs=1e-5,
        eps_rel=1e-3,
        max_iter=25_000,
        progress=False,
        adaptive_rho=False,
        over_relaxation=1.6,
        constraints="auto",
        parallel=False,
        n_partitions=1,
        gap_tol=5e-4,
        repair=False,
    )
    np.testing.assert_array_equal(a.x, b.x)
    assert a.n_iter == b.n_iter


def test_methods_are_callables():
    from tractable.hlmrf import METHODS

    assert list(METHODS) == ["admm", "highs", "clarabel"] and all(callable(f) for f in METHODS.values())


def test_reference_solvers_import_their_dependencies_lazily():
    import subprocess
    import sys

    code = "import sys, tractable.hlmrf\nprint(*[m in sys.modules for m in ('clarabel', 'cvxpy', 'scipy.optimize')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]


@pytest.mark.parametrize("name", ["progress", "adaptive_rho", "parallel", "keep_state", "repair"])
@pytest.mark.parametrize("value", ["no", "yes", 1, 0.5])
def test_on_off_options_take_true_or_false_only(name, value):
    """A flag given as text or a number is refused: ``bool("no")`` is True, so it used to switch the option on."""
    m = HLMRF(1)
    m.add_potential([0], [1.0])
    with pytest.raises(TypeError, match=re.escape(f"`{name}` must be True or False; got {value!r}.")):
        solve(m, **{name: value})
    assert solve(m, **{name: np.bool_(False)}).converged
