"""The exact sampler's building blocks: alias tables and both count-split paths against enumeration."""

import numpy as np
import pytest
from numba import njit
from scipy.stats import chisquare

from _oracles import BinaryEnumeration
from tractable._random import streams
from tractable.cardinality._balanced import Balanced
from tractable.cardinality._kernels import alias_table


@njit
def _alias_table(w, n, thr, alias, pos, work):
    # alias_table is compiled for calls from kernels only (no Python entry point)
    alias_table(w, n, thr, alias, pos, work)


ONE = 2.0**53


def _implied(thr, alias, n):
    """Probability of each entry under the alias table: (keep_j + sum_{alias_i = j} (1 - keep_i)) / n."""
    keep = thr[:n] / ONE
    p = keep.copy()
    np.add.at(p, alias[1 : 2 * n : 2], 1.0 - keep)
    return p / n


@pytest.mark.parametrize("n", [1, 2, 3, 9, 70, 513])
def test_alias_table_reproduces_the_weights(n):
    rng = np.random.default_rng(n)
    w = np.exp(rng.normal(0, 3, n))
    w[rng.random(n) < 0.2] = 0.0  # forbidden entries
    w[rng.random(n) < 0.1] *= 1e-200  # tiny but allowed
    if not w.any():
        w[0] = 1.0
    thr = np.empty(n, dtype=np.int64)
    alias = np.empty(2 * n, dtype=np.int16)
    _alias_table(w.copy(), n, thr, alias, 0, np.empty(n, dtype=np.int64))
    assert np.array_equal(alias[0::2], np.arange(n))
    p = _implied(thr, alias, n)
    # zero weights are never drawn: they keep nothing and are nobody's alias
    assert np.all(p[w == 0] == 0.0)
    # rounding of the table: a few 2^-53 per cell, summed over at most n cells
    assert np.allclose(p, w / w.sum(), rtol=0, atol=n * 4.0 / ONE)


def test_alias_table_all_zero_weights_give_the_uniform_table():
    thr = np.empty(4, dtype=np.int64)
    alias = np.empty(8, dtype=np.int16)
    _alias_table(np.zeros(4), 4, thr, alias, 0, np.empty(4, dtype=np.int64))
    assert np.allclose(_implied(thr, alias, 4), 0.25, rtol=0, atol=1e-15)


def _joint_frequencies(d, theta, f, n, *, block_height, alias_height, seed):
    logw = np.zeros((d, 2))
    logw[:, 1] = theta
    tree = Balanced(logw, method="direct")
    rng = np.random.default_rng(seed)
    pk = tree.root * np.exp(f - f.max())  # exact count distribution (exp(-inf) = 0)
    counts = rng.choice(d + 1, size=n, p=pk / pk.sum())
    s = tree.sample(counts, streams(rng), block_height=block_height, alias_height=alias_height)
    assert s.shape == (n, d) and s.dtype == np.uint8
    assert np.array_equal(s.sum(axis=1), counts)  # every sample has the count it was given
    codes = s.astype(np.int64) @ (1 << np.arange(d - 1, -1, -1))
    return np.bincount(codes, minlength=2**d)


# D = 11 pads to 16 leaves. block_height=1: 2-leaf blocks under a tree of 7 split nodes (one with
# padding only); alias_height=1 splits every node by the walk, 4 every node by alias tables.
# block_height=3: two 8-leaf blocks under one split.
@pytest.mark.parametrize(("block_height", "alias_height"), [(1, 1), (1, 4), (3, 3), (3, 4)])
def test_sampler_joint_distribution_matches_enumeration(block_height, alias_height):
    d = 11
    rng = np.random.default_rng(5)
    theta = rng.normal(0, 1, d)
    f = rng.normal(0, 1, d + 1)
    f[3] = -np.inf
    p = BinaryEnumeration(d, unary=theta, count=f).p
    n = 200_000
    obs = _joint_frequencies(d, theta, f, n, block_height=block_height, alias_height=alias_height, seed=17)
    assert obs[p == 0].sum() == 0
    big = n * p >= 5  # chi-square needs expected counts >= 5; the rest is pooled into one cell
    o = np.r_[obs[big], obs[~big].sum()]
    e = np.r_[n * p[big], n * p[~big].sum()]
    assert chisquare(o, e).pvalue > 1e-3  # fixed seed


def test_sampler_same_state_same_samples():
    d = 40
    logw = np.zeros((d, 2))
    logw[:, 1] = np.random.default_rng(0).normal(0, 1, d)
    tree = Balanced(logw)
    counts = np.random.default_rng(1).integers(0, d + 1, 300)
    state = np.array([12345, 678910], dtype=np.uint64)
    a = tree.sample(counts, state.copy())
    b = tree.sample(counts, state.copy())
    assert np.array_equal(a, b)
    assert np.array_equal(a.sum(axis=1), counts)
