"""ADMM warm starts: ``solve(..., keep_state=True)`` then ``solve(other, warm_start=result)``.

A warm start changes where ADMM starts, never what it converges to: every answer is checked against the
cold solve's certified optimum (both certified to ``gap_tol``, so the objectives agree within it).
"""

from __future__ import annotations

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
