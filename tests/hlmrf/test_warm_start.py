"""ADMM warm starts: ``solve(..., keep_state=True)`` then ``solve(other, warm_start=result)``.

A warm start changes where ADMM starts, never what it converges to: every answer is checked against the
cold solve's certified optimum (both certified to ``gap_tol``, so the objectives agree within it).
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from tractable.hlmrf import HLMRF, solve

N = 60
GAP = 1e-6


def _model(w, *, seed=0, n_pot=180, constraint=False):
    gen = np.random.default_rng(seed)
    idx = np.stack([gen.choice(N, 2, replace=False) for _ in range(n_pot)])
    coef = np.tile([1.0, -1.0], n_pot)
    const = gen.random(n_pot) - 0.5
    m = HLMRF(N)
    m.add_potentials(
        np.arange(0, 2 * n_pot + 1, 2), idx.ravel(), coef, const, np.asarray(w)[np.arange(n_pot) % 3], True
    )
    m.add_potentials(np.arange(N + 1), np.arange(N), np.ones(N), -0.3, 0.1, False)
    if constraint:
        m.add_constraint([0, 1, 2], [1.0, 1.0, 1.0], -1.0, "<=")
    return m


def _solve(m, **kw):
    return solve(m, eps_abs=1e-8, eps_rel=1e-8, gap_tol=GAP, **kw)


@pytest.mark.parametrize("constraint", [False, True])
@pytest.mark.parametrize("n_partitions", [1, 3])
def test_warm_start_reaches_the_cold_optimum(constraint, n_partitions):
    first = _solve(_model([1.0, 0.5, 0.2], constraint=constraint), keep_state=True, n_partitions=n_partitions)
    assert first.state is not None and all(not a.flags.writeable for a in first.state)
    m2 = _model([1.1, 0.4, 0.3], constraint=constraint)
    cold = _solve(m2, n_partitions=n_partitions)
    warm = _solve(m2, warm_start=first, n_partitions=n_partitions)
    assert cold.converged and warm.converged
    scale = max(abs(cold.objective), 1.0)
    assert abs(warm.objective - cold.objective) <= 2 * GAP * scale
    assert warm.lower_bound <= cold.objective + 1e-9 and cold.lower_bound <= warm.objective + 1e-9


def test_warm_start_from_the_optimum_of_the_same_model_stops_at_once():
    m = _model([1.0, 0.5, 0.2])
    first = _solve(m, keep_state=True)
    again = _solve(m, warm_start=first)
    assert again.n_iter <= 10 < first.n_iter
    assert again.rho == first.rho


@pytest.mark.parametrize("n_partitions", [1, 3])
def test_warm_start_ends_at_the_first_iteration_that_passes_the_residual_test(n_partitions):
    # a warm-started run tests the residuals after every iteration (not at the end of a chunk of 5 or 10):
    # from the optimum of the same model, one iteration passes the test and the certified gap
    kw = dict(eps_abs=1e-5, eps_rel=1e-5, gap_tol=1e-4, n_partitions=n_partitions)
    m = _model([1.0, 0.5, 0.2])
    first = solve(m, keep_state=True, **kw)
    again = solve(m, warm_start=first, **kw)
    assert again.converged and again.n_iter == 1 and again.gap <= 1e-4
    np.testing.assert_allclose(again.x, first.x, atol=1e-3)


@pytest.mark.parametrize("n_partitions", [1, 3])
def test_warm_start_with_small_residuals_and_an_open_gap_goes_on_in_chunks(n_partitions):
    # residual tolerances loose, gap tight: the residuals pass long before the gap; after the first check
    # that finds the gap open the run goes on in chunks, one certificate each (not one per iteration)
    from tractable.hlmrf import _driver

    kw = dict(eps_abs=1e-3, eps_rel=1e-3, gap_tol=1e-8, max_iter=100_000, n_partitions=n_partitions)
    first = solve(_model([1.0, 0.5, 0.2]), keep_state=True, **kw)
    m2 = _model([1.1, 0.4, 0.3])
    executor = _driver.Fused if n_partitions == 1 else _driver.Blocks
    calls = []
    certify = executor.certify

    def counted(self, *args, **kwargs):
        calls.append(1)
        return certify(self, *args, **kwargs)

    with mock.patch.object(executor, "certify", counted):
        warm = solve(m2, warm_start=first, **kw)
    cold = solve(m2, **kw)
    assert warm.converged and warm.gap <= 1e-8
    assert abs(warm.objective - cold.objective) <= 2e-8 * max(abs(cold.objective), 1.0)
    assert len(calls) <= warm.n_iter // 10 + 10 < warm.n_iter


def test_state_is_kept_only_on_request_and_not_by_reference_solvers():
    m = _model([1.0, 0.5, 0.2])
    assert _solve(m).state is None
    with pytest.raises(ValueError, match="keep_state"):
        solve(m, method="highs", keep_state=True)


def test_warm_start_errors():
    m = _model([1.0, 0.5, 0.2])
    first = _solve(m, keep_state=True)
    with pytest.raises(ValueError, match="not both"):
        solve(m, warm_start=first, x0=np.zeros(N))
    with pytest.raises(ValueError, match="keep_state=True"):
        solve(m, warm_start=_solve(m))
    with pytest.raises(TypeError, match="MPEResult"):
        solve(m, warm_start=np.zeros(N))
    with pytest.raises(ValueError, match="does not fit"):
        solve(_model([1.0, 0.5, 0.2], seed=1, n_pot=100), warm_start=first)
    with pytest.raises(ValueError, match="does not fit"):
        solve(m, warm_start=first, n_partitions=2)
    other = HLMRF(N + 1)
    with pytest.raises(ValueError, match="variables"):
        solve(other, warm_start=first)


def test_projection_onto_a_simplex_whose_breakpoints_leave_a_flat_stretch():
    """The consensus step's projection of d onto {sum x = 1} in the norm weighted by 1/sc: here g(lam) is 0 on a
    whole stretch between two breakpoints (one coordinate at 1, the others at 0), and rounding puts g(left) at
    1e-17. The projection returned the box corner (all zeros, lam = inf) as if the hyperplane missed the box;
    ADMM then reported feasible PSL programs infeasible (real Cora at some learned weights)."""
    from tractable.hlmrf import _kernels
    from tractable.hlmrf.updates import local_update_reference

    d = np.array([1.1243089211933426, 0.10699256899246556, 0.10901310557646472, 0.10989525788124083])
    d = np.concatenate([d, d[[2, 1, 1]]])
    k = d.size
    sc = np.full(k, 1.0 / 19.0)
    out = np.zeros(k)
    lam = _kernels.root_multiplier(d, sc, 0, np.ones(k), 0, -1.0, k, 1.0, 0.0, out, np.zeros(2 * k), np.int64(0))
    assert np.isfinite(lam) and out.sum() == pytest.approx(1.0, abs=1e-12)
    # sc is uniform: the Euclidean projection onto the capped simplex, by the NumPy reference (1, 0, ..., 0)
    ref = local_update_reference("eq", d, np.ones(k), -1.0, 1.0, 1.0)
    np.testing.assert_allclose(ref, np.eye(k)[0], atol=1e-12)
    np.testing.assert_allclose(out, ref, atol=1e-12)


def test_x0_from_another_weight_vector_on_a_psl_program_with_simplex_constraints():
    """A generated CiteSeer learn split (one simplex constraint per paper, consensus-step constraints): the MAP
    state at one weight vector starts ADMM at another; it converges to the certified optimum of a cold start (it
    ended 'infeasible' before the flat-stretch projection was fixed)."""
    import importlib.util
    import sys
    import tempfile
    import warnings
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "psl" / "_generate.py"
    spec = importlib.util.spec_from_file_location("_warm_start_generate", path)
    gen = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = gen
    spec.loader.exec_module(gen)
    from tractable.psl import Model

    with tempfile.TemporaryDirectory() as d, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cfg = gen.generate("citeseer", d, scale=30, rng=0)
        m = Model.from_json(cfg, split="learn")
        start = solve(m.ground().hlmrf)
        m.set_weights([0.01, 0.01, 1.0, 0.001, 0.01, 10.0, 0.1, 0.1, 0.1, 0.1])
        hl = m.ground().hlmrf
        cold = solve(hl)
        warm = solve(hl, x0=start.x)
        m.close()
    assert cold.converged and warm.converged, warm.message
    assert abs(warm.objective - cold.objective) <= 2 * 5e-4 * max(1.0, abs(cold.objective))


def _reweighted_model(seed=0):
    """Pairwise squared hinges, a linear prior, a constraint, a fixed variable and a potential over it alone."""
    m = _model([1.0, 0.5, 0.2], seed=seed, constraint=True)
    m.add_potential([N - 1], [1.0], -0.2, 0.7, False)  # over a fixed variable only: part of the offset
    m.fix([N - 1], [0.9])
    return m


@pytest.mark.parametrize("zero", [False, True])
def test_with_weights_of_a_compiled_model_solves_as_a_model_built_with_them(zero):
    """``with_weights`` keeps the compiled terms and the solver's split of them: bit for bit the same run as
    a model built from scratch with those weights, also when a weight becomes 0 (the split is redone)."""
    base = _reweighted_model()
    _solve(base)  # compiles the structure
    gen = np.random.default_rng(1)
    for _ in range(3):
        w = gen.random(base.n_potentials) + 0.1
        if zero:
            w[::7] = 0.0
        fresh = _reweighted_model()
        p = fresh.potential_arrays()
        rebuilt = HLMRF(N)
        rebuilt.add_potentials(p["indptr"], p["variables"], p["coefficients"], p["constants"], w, p["squared"])
        c = fresh.constraint_arrays()
        rebuilt.add_constraints(c["indptr"], c["variables"], c["coefficients"], c["constants"], "<=")
        rebuilt.fix([N - 1], [0.9])
        a, b = _solve(base.with_weights(w)), _solve(rebuilt)
        np.testing.assert_array_equal(a.x, b.x)
        assert a.objective == b.objective and a.lower_bound == b.lower_bound and a.n_iter == b.n_iter
