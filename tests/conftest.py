"""Fixtures shared by every test folder."""

import os

import numpy as np
import pytest
from hypothesis import settings

# Property tests draw the same examples on every run (CI must not fail by chance); set
# HYPOTHESIS_PROFILE=explore to draw new ones, e.g. in a long local run.
settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

_SEED_ENV = "TRACTABLE_TEST_SEED"


def _seeds():
    """Seeds the `seed` fixture runs over: 0 by default; all of 0..99 with TRACTABLE_TEST_SEED=all, or one
    given seed (scikit-learn's global_random_seed contract: a test must pass for every seed in 0..99)."""
    value = os.environ.get(_SEED_ENV, "0")
    if value == "all":
        return list(range(100))
    return [int(s) for s in value.split(",")]


@pytest.fixture(params=_seeds())
def seed(request):
    """An integer seed; tests that draw random inputs take it so that any seed in 0..99 can be replayed."""
    return request.param


@pytest.fixture
def rng(seed):
    """A numpy Generator seeded by `seed`."""
    return np.random.default_rng(seed)
