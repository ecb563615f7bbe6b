"""Fixtures of the clique-MAP tests; the brute-force oracle is ``_oracles.brute_force_map``."""

from __future__ import annotations

import numpy as np
import pytest

from _oracles import brute_force_map


def random_phi(rng, n, m, p_neginf=0.0):
    """Node potentials uniform in [0, 2], each entry -inf with probability ``p_neginf`` (one label per
    node always stays finite)."""
    phi = rng.uniform(0.0, 2.0, size=(n, m))
    if p_neginf > 0:
        mask = rng.random((n, m)) < p_neginf
        mask[np.arange(n), rng.integers(0, m, size=n)] = False
        phi[mask] = -np.inf
    return phi


@pytest.fixture(scope="session")
def brute():
    """Best score and one best labelling over all ``m**n`` labellings (``_oracles.brute_force_map``)."""
    return brute_force_map


@pytest.fixture(scope="session")
def make_phi():
    return random_phi
