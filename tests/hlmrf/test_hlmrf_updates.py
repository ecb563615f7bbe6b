"""Local updates (Sec. 3 of Bach et al. 2012, extended to any arity) against a QP oracle."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tractable.hlmrf import local_update_reference, local_updates

cp = pytest.importorskip("cvxpy")


def _oracle(kind, d, c, b, w, rho):
    """Solve the local problem with cvxpy + Clarabel (an interior-point method)."""
    x = cp.Variable(d.size)
    s = c @ x + b
    cons = [x >= 0, x <= 1]
    prox = (rho / 2) * cp.sum_squares(x - d)
    if kind == "hinge":
        obj = w * cp.pos(s) + prox
    elif kind == "squared":
        obj = w * cp.square(cp.pos(s)) + prox
    else:
        obj = prox
        cons.append(s <= 0 if kind == "leq" else s == 0)
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    if prob.status not in ("optimal", "optimal_inaccurate"):
        return None
    return np.asarray(x.value)


def _objective(kind, x, d, c, b, w, rho):
    s = c @ x + b
    f = {"hinge": w * max(s, 0), "squared": w * max(s, 0) ** 2}.get(kind, 0.0)
    return f + rho / 2 * np.sum((x - d) ** 2)


@st.composite
def local_problems(draw):
    k = draw(st.integers(1, 6))
    kind = draw(st.sampled_from(["hinge", "squared", "leq", "eq"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    # d partly outside the box so that bounds are active; some zero coefficients
    d = rng.uniform(-0.6, 1.6, size=k)
    c = rng.uniform(-2, 2, size=k) * (rng.random(k) < 0.85)
    b = float(rng.uniform(-1.5, 1.5))
    w = float(rng.choice([0.0, rng.uniform(0.01, 3.0)], p=[0.1, 0.9]))
    rho = float(rng.uniform(0.1, 5.0))
    return kind, d, c, b, w, rho


@settings(max_examples=80, deadline=None)
@given(local_problems())
def test_local_update_matches_qp_oracle(problem):
    kind, d, c, b, w, rho = problem
    x_kernel = local_updates(kind, [0, d.size], c, [b], [w], d, rho=rho)
    x_ref = local_update_reference(kind, d, c, b, w, rho)
    # the two exact implementations agree to rounding
    np.testing.assert_allclose(x_kernel, x_ref, atol=1e-10)
    s = c @ x_kernel + b
    lo, hi = np.sum(np.minimum(c, 0)), np.sum(np.maximum(c, 0))
    feasible = kind in ("hinge", "squared") or (lo + b <= 0 and (kind == "leq" or 0 <= hi + b))
    if not feasible:
        # the hyperplane misses the box: the box corner closest to it (c·x smallest, or largest for
        # an equality whose left side is negative on the whole box)
        sgn = -1.0 if kind == "eq" and hi + b < 0 else 1.0
        corner = np.where(sgn * c > 0, 0.0, np.where(sgn * c < 0, 1.0, np.clip(d, 0, 1)))
        np.testing.assert_allclose(x_kernel, corner)
        return
    x_qp = _oracle(kind, d, c, b, w, rho)
    assert x_qp is not None
    assert np.all((x_kernel >= 0) & (x_kernel <= 1))
    if kind == "leq":
        assert s <= 1e-12
    elif kind == "eq":
        assert abs(s) <= 1e-12 * max(1.0, np.abs(c).sum())
    # strictly convex problems: the minimizer is unique; the interior-point oracle is accurate to ~1e-7
    np.testing.assert_allclose(x_kernel, x_qp, atol=2e-6)
    assert _objective(kind, x_kernel, d, c, b, w, rho) <= _objective(kind, x_qp, d, c, b, w, rho) + 1e-9


@pytest.mark.parametrize("k", [1, 2, 3, 6, 40])
def test_hyperplane_projection_any_arity(k):
    # a d far outside the box with a binding hinge: exercises the breakpoint search
    rng = np.random.default_rng(k)
    d = rng.uniform(-1, 2, size=k)
    c = rng.uniform(-1, 1, size=k)
    u = rng.uniform(0, 1, size=k)  # the hyperplane c·x + b = 0 passes through u, inside the box
    if c @ (np.clip(d, 0, 1) - u) < 0:
        c = -c
    b = -float(c @ u)
    x = local_updates("hinge", [0, k], c, [b], [1e6], d, rho=1.0)
    # with a huge weight the hinge side is too steep: the answer lies on the hyperplane
    assert abs(c @ x + b) < 1e-10
    np.testing.assert_allclose(x, local_update_reference("hinge", d, c, b, 1e6, 1.0), atol=1e-10)


def test_clip_first_fast_path():
    # alpha^(1) of the paper: clip(d) already satisfies c·x + b <= 0
    x = local_updates("squared", [0, 2], [1.0, 1.0], [-5.0], [1.0], [1.5, -0.5], rho=1.0)
    np.testing.assert_array_equal(x, [1.0, 0.0])


def test_batch_mixes_kinds():
    kinds = ["hinge", "squared", "leq", "eq"]
    d = np.array([0.2, 0.9, 1.3, 0.5, -0.1, 0.7, 0.6, 0.6])
    c = np.array([1.0, -1.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    b = np.array([0.5, -0.3, -1.0, -1.0])
    w = np.array([1.0, 2.0, 0.0, 0.0])
    out = local_updates(kinds, [0, 2, 4, 6, 8], c, b, w, d, rho=1.5)
    for t, kind in enumerate(kinds):
        sl = slice(2 * t, 2 * t + 2)
        np.testing.assert_allclose(out[sl], local_update_reference(kind, d[sl], c[sl], b[t], w[t], 1.5), atol=1e-12)


def test_local_updates_bad_input():
    import re

    with pytest.raises(ValueError, match=re.escape("`kind` must be one of 'hinge', 'squared', 'leq', 'eq'; got 'x'.")):
        local_updates("x", [0, 1], [1.0], [0.0], [1.0], [0.5])
    with pytest.raises(ValueError, match=re.escape("have inconsistent sizes")):
        local_updates("hinge", [0, 2], [1.0], [0.0], [1.0], [0.5])
    with pytest.raises(ValueError, match=re.escape("`rho` must be a finite number > 0; got 0.0.")):
        local_updates("hinge", [0, 1], [1.0], [0.0], [1.0], [0.5], rho=0.0)
