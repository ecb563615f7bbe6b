"""Random hinge-loss MRFs shared by the hlmrf tests, and the marker of the tests that need Clarabel."""

import importlib.util

import numpy as np
import pytest

from tractable.hlmrf import HLMRF

#: Clarabel (the ``ref`` extra) gives the exact optimum of the QPs (squared hinges); only the tests
#: that call it carry ``needs_clarabel``, the others run without it
HAVE_CLARABEL = importlib.util.find_spec("clarabel") is not None
needs_clarabel = pytest.mark.skipif(not HAVE_CLARABEL, reason="needs clarabel (pip install 'tractable[ref]')")


def squared_cases(*values):
    """Parameters ``squared``: a case other than ``False`` (all linear: HiGHS) needs Clarabel for its
    reference optimum."""
    return [v if v is False else pytest.param(v, marks=needs_clarabel) for v in values]


def random_model(seed, *, n=6, m=10, r=3, squared=False, senses=("<=", ">=", "=="), max_arity=4):
    """A random feasible model: constraints pass through a random point of the box."""
    rng = np.random.default_rng(seed)
    model = HLMRF(n)
    for _ in range(m):
        k = int(rng.integers(1, max_arity + 1))
        var = rng.choice(n, size=k, replace=False)
        sq = bool(rng.random() < 0.5) if squared == "mixed" else squared
        model.add_potential(
            var, rng.uniform(-1, 1, size=k), float(rng.uniform(-0.8, 0.8)), float(rng.uniform(0.1, 2.0)), squared=sq
        )
    u = rng.uniform(0.1, 0.9, size=n)
    for i in range(r):
        k = int(rng.integers(1, 4))
        var = rng.choice(n, size=k, replace=False)
        a = rng.uniform(-1, 1, size=k)
        sense = senses[i % len(senses)]
        slack = 0.0 if sense == "==" else float(rng.uniform(0, 0.3))
        b = -float(a @ u[var]) + (-slack if sense == "<=" else slack)
        model.add_constraint(var, a, b, sense=sense)
    return model


@pytest.fixture
def make_model():
    return random_model
