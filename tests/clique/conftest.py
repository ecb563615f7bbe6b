"""Oracles of the clique-MAP tests: brute-force enumeration of all m**n labellings."""

from __future__ import annotations

import itertools

import numpy as np
import pytest


def brute_force_map(phi, potential):
    """Best score and one best labelling over all ``m**n`` labellings (tiny cliques only)."""
    phi = np.asarray(phi, dtype=np.float64)
    n, m = phi.shape
    Y = np.array(list(itertools.product(range(m), repeat=n)), dtype=np.int64).reshape(-1, n)
    node = phi[np.arange(n), Y].sum(axis=1)
    counts = (Y[:, :, None] == np.arange(m)).sum(axis=1)
    total = node + np.asarray(potential(counts), dtype=np.float64)
    i = int(np.argmax(total))
    return float(total[i]), Y[i]


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
    return brute_force_map


@pytest.fixture(scope="session")
def make_phi():
    return random_phi
