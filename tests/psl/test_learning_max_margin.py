"""`tractable.psl` max-margin learning (PSL 2.1's ``FrankWolfe``) against brute force on tiny programs.

The program: targets ``Tgt(a_i)`` with observed ``Obs(a_i) = o_i`` and 0/1 truth ``t_i``, the linear rules
``w1: Obs(X) -> Tgt(X)`` and ``w2: !Tgt(X)``. Per target the energy ``w1 max(o_i - y, 0) + w2 y`` minus the
L1 loss ``|y - t_i|`` is piecewise linear in ``y`` with breakpoints ``0, o_i, 1``, so the structural SVM's
primal ``P(w) = lambda / 2 |w|^2 + (1/N) sum_i max_y [|y - t_i| + w . (phi_i(t_i) - phi_i(y))]`` is exact
from three values of ``y`` per target; a grid over ``w >= 0`` minimizes it.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tractable import ConvergenceWarning
from tractable.psl import LEARNERS, Model

TIGHT = dict(eps_abs=1e-9, eps_rel=1e-9, gap_tol=1e-9)


def _program(obs, truth, weights=(1.0, 1.0)):
    m = Model()
    m.add_predicate("Obs", 1, closed=True)
    m.add_predicate("Tgt", 1, closed=False)
    m.add_rule(f"{weights[0]}: Obs(X) -> Tgt(X)")
    m.add_rule(f"{weights[1]}: !Tgt(X)")
    names = [f"a{i}" for i in range(len(obs))]
    m.add_data("Obs", "observations", pd.DataFrame({0: names, 1: obs}))
    m.add_data("Tgt", "targets", pd.DataFrame({0: names}))
    m.add_data("Tgt", "truth", pd.DataFrame({0: names, 1: truth}))
    return m


def _phi(y, o):
    return np.array([max(o - y, 0.0), y])


def _augmented(w, obs, truth):
    """Per target, the loss-augmented maximizer's (feature difference, loss), summed."""
    psi, loss = np.zeros(2), 0.0
    for o, t in zip(obs, truth):
        y = max((0.0, o, 1.0), key=lambda y: abs(y - t) + w @ (_phi(t, o) - _phi(y, o)))
        psi += _phi(t, o) - _phi(y, o)
        loss += abs(y - t)
    return psi, loss


def _primal(w, obs, truth, lam):
    psi, loss = _augmented(w, obs, truth)
    return lam / 2 * w @ w + (loss + w @ psi) / len(obs)


def _learn(m, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return m.learn(method="FrankWolfe", solve_options=TIGHT, **kw)


OBS = np.array([1.0, 0.8, 0.6, 0.9, 0.3, 0.5])
TRUTH = np.array([1.0, 1.0, 0.0, 1.0, 0.0, 0.0])


def test_frank_wolfe_is_a_learner_by_psl_names():
    assert LEARNERS["FrankWolfe"].psl_class == "org.linqs.psl.application.learning.weight.maxmargin.FrankWolfe"
    m = _program(OBS, TRUTH)
    res = m.learn(
        method="org.linqs.psl.application.learning.weight.maxmargin.FrankWolfe",
        solve_options=TIGHT,
        **{"frankwolfe.maxiter": 50, "frankwolfe.regparam": 1.0, "frankwolfe.tolerance": 1e-6},
    )
    assert res.method == "FrankWolfe" and res.status == "converged" and "duality gap" in res.message
    assert dict(res.options)["max_iter"] == 50
    np.testing.assert_array_equal(m.weights, res.weights)


def test_first_iteration_by_hand():
    """One step from w0 = (0.7, 1.6), loss 0: the oracle's corner, PSL's line search and the primal at w0
    (weights chosen so that the loss-augmented maximizer is unique: no slope of ``y`` is 0)."""
    lam = 0.5
    w0 = np.array([0.7, 1.6])
    res = _learn(_program(OBS, TRUTH, w0), l2_regularization=lam, max_iter=1)
    psi, l1 = _augmented(w0, OBS, TRUTH)
    n = len(OBS)
    corner, l_s = -psi / (lam * n), l1 / n
    gamma = np.clip((w0 @ (w0 - corner) + l_s / lam) / ((w0 - corner) @ (w0 - corner)), 0.0, 1.0)
    expected = np.maximum((1 - gamma) * w0 + gamma * corner, 0.0)
    np.testing.assert_allclose(res.weight_path[1], expected, atol=1e-7)  # tolerance: ADMM at 1e-9
    assert res.loss[0] == pytest.approx(_primal(w0, OBS, TRUTH, lam), abs=1e-7)
    np.testing.assert_allclose(res.gradients[0], lam * w0 + psi / n, atol=1e-7)
    np.testing.assert_allclose(res.observed_incompatibility, [np.sum(np.maximum(OBS - TRUTH, 0)), TRUTH.sum()])
    assert res.n_iter == 1 and res.status == "max_iter_reached"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(2, 5),
    seed=st.integers(0, 2**31 - 1),
    lam=st.sampled_from([0.3, 1.0]),
)
def test_frank_wolfe_reaches_the_grid_minimum_of_the_structural_svm(n, seed, lam):
    gen = np.random.default_rng(seed)
    obs = np.round(gen.random(n), 2)
    truth = (gen.random(n) < 0.5).astype(float)
    w0 = np.round(gen.random(2), 2) + 0.01
    res = _learn(_program(obs, truth, w0), l2_regularization=lam, max_iter=600)
    hi = max(2.0, 1.5 * float(res.weights.max()))
    grid = np.linspace(0.0, hi, 201)
    best = min(_primal(np.array([a, b]), obs, truth, lam) for a in grid for b in grid)
    value = _primal(res.weights, obs, truth, lam)
    # tolerance: Frank-Wolfe's O(1 / (lambda k)) rate where the primal has a kink at its minimum (measured
    # 3.8e-3 above it after 400 steps at lambda = 0.1, 4e-4 after 4,000), and the grid's step (<= 0.015)
    assert value <= best + 2e-3
    assert res.loss[-1] == pytest.approx(value, abs=1e-7)  # the reported primal is the exact one
    assert np.all(res.weights >= 0)
    if res.status == "converged":  # the duality gap certifies the primal when no weight was clipped
        assert value <= best + 1e-4 or np.any(res.weight_path == 0)


def test_average_weights_follow_psl_recursion_when_unconverged():
    res = _learn(_program(OBS, TRUTH, (0.3, 2.0)), l2_regularization=0.2, max_iter=4, average_weights=True)
    plain = _learn(_program(OBS, TRUTH, (0.3, 2.0)), l2_regularization=0.2, max_iter=4)
    assert plain.status == "max_iter_reached"  # these weights need more than 4 steps: averaging applies
    avg = plain.weight_path[0].copy()
    for k in range(1, plain.n_iter + 1):
        avg = k / (k + 2) * avg + 2 / (k + 2) * plain.weight_path[k]
    np.testing.assert_allclose(res.weights, avg, atol=1e-9)


def test_progress_shows_the_steps_with_the_duality_gap(capsys):
    quiet = _learn(_program(OBS, TRUTH, (0.3, 2.0)), l2_regularization=0.2, max_iter=4)
    capsys.readouterr()
    shown = _learn(_program(OBS, TRUTH, (0.3, 2.0)), l2_regularization=0.2, max_iter=4, progress=True)
    err = capsys.readouterr().err
    np.testing.assert_array_equal(shown.weights, quiet.weights)
    assert "FrankWolfe" in err and "4/4" in err and "gap=" in err


def test_unnormalized_loss_scales_the_corner_by_the_label_count():
    w0 = np.array([0.7, 1.6])
    res = _learn(_program(OBS, TRUTH, w0), max_iter=1, normalize=False)
    psi, _ = _augmented(w0, OBS, TRUTH)
    np.testing.assert_allclose(res.gradients[0], w0 + psi, atol=1e-7)


def test_bad_input_is_one_clear_error():
    with pytest.raises(ValueError, match="truth values of 0 or 1.*e.g. 0.5"):
        _program(OBS, [1, 0, 0.5, 1, 0, 0]).learn(method="FrankWolfe")
    m = _program(OBS, TRUTH)
    with pytest.raises(ValueError, match="weights >= 0"):
        m.learn(method="FrankWolfe", nonnegative_weights=False)
    with pytest.raises(ValueError, match="`gradientdescent.numsteps` does not apply"):
        m.learn(method="FrankWolfe", **{"gradientdescent.numsteps": 3})
    with pytest.raises(ValueError, match="`l2_regularization` must be > 0"):
        m.learn(method="FrankWolfe", l2_regularization=0)
    np.testing.assert_array_equal(m.weights, [1.0, 1.0])  # nothing changed by a refused call


def test_the_duality_gap_target_is_gap_tol_and_tolerance_still_works_for_a_release():
    """The grammar's name for a tolerance: `gap_tol` (PSL's `frankwolfe.tolerance`); the former Python keyword
    `tolerance` gives the same weights with a DeprecationWarning."""
    a = _learn(_program(OBS, TRUTH), max_iter=50, gap_tol=1e-6)
    assert dict(a.options)["gap_tol"] == 1e-6
    with pytest.warns(DeprecationWarning, match="`tolerance` is now `gap_tol`"):
        b = _learn(_program(OBS, TRUTH), max_iter=50, tolerance=1e-6)
    np.testing.assert_array_equal(a.weights, b.weights)
    with pytest.raises(ValueError, match="given twice"):
        _learn(_program(OBS, TRUTH), gap_tol=1e-6, tolerance=1e-6)
