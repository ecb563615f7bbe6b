"""The default stop of ADMM: a feasible answer with a certified gap of at most 5e-4."""

import warnings

import numpy as np
import pytest

from tractable import ConvergenceWarning
from tractable.datasets import opinion_diffusion
from tractable.hlmrf import solve

from .conftest import random_model, squared_cases


@pytest.mark.parametrize("mean_degree", [None, 1.5])
@pytest.mark.parametrize("squared", squared_cases(False, True))
def test_default_answer_is_feasible_and_certified(squared, mean_degree):
    model = opinion_diffusion(400, squared=squared, mean_degree=mean_degree, rng=11)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        r = solve(model)
    assert r.converged and r.status == "converged" and "certified gap" in r.message
    assert r.max_violation <= 1e-6 and r.gap <= 5e-4
    exact = solve(model, method="clarabel" if squared else "highs").objective
    # certified, hence true against the exact optimum (Clarabel's is accurate to about 1e-8)
    assert r.lower_bound <= exact + 1e-7
    assert (r.objective - exact) / max(abs(r.objective), 1.0) <= 5e-4 + 1e-7


def test_tighter_residual_tolerances_still_give_tighter_answers():
    model = opinion_diffusion(300, squared=True, rng=2)
    loose, tight = solve(model), solve(model, eps_abs=1e-9, eps_rel=1e-9)
    assert tight.converged and tight.gap <= loose.gap and tight.n_iter > loose.n_iter


def test_uncertifiable_iterates_stop_on_residuals():
    # constraints with local copies: z is feasible only in the limit, so the residuals decide
    model = random_model(4, r=3)
    r = solve(model, constraints="local")
    assert r.converged and r.status == "converged"
    if not np.isfinite(r.gap):
        assert r.max_violation > 1e-9 and "no certified gap" in r.message


def test_gap_alone_decides_when_the_residual_test_is_off():
    model = opinion_diffusion(300, rng=5)
    a = solve(model, eps_abs=0.0, eps_rel=0.0)
    assert a.converged and a.gap <= 5e-4 and a.message.endswith("below gap_tol")
    b = solve(model)
    assert b.n_iter >= a.n_iter  # the residuals are small later than the gap
