"""In-process batched inference: `clique.alpha_pass_batch` and `cardinality.marginals_batch` against the
per-instance functions, row by row."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tractable.cardinality import chain_marginals, marginals, marginals_batch
from tractable.clique import (
    CountPotential,
    Entropy,
    LinearMajority,
    Makespan,
    MaxPotential,
    Potts,
    SquareMakespan,
    SumPotential,
    alpha_pass,
    alpha_pass_batch,
)

# node scores are row sums over n <= 12 entries of size <= 3: the batched sum (one reduction over the
# stack) and the per-clique sum may add in another order, ~n * eps * 3 apart
SCORE_TOL = 1e-12


def _potentials(rng, n, m):
    return [
        Potts(0.4),
        Entropy(-0.3),
        Makespan(0.7),
        Makespan(-0.5),  # negative lam: no kernel, the batched array path
        SquareMakespan(0.2),
        SumPotential(rng.normal(size=(m, n + 1))),
        MaxPotential(rng.normal(size=(m, n + 1))),
        LinearMajority(rng.normal(size=(m, m))),
        CountPotential(lambda c: -np.abs(c[..., 0] - c[..., -1]).astype(float)),
    ]


def _stack(rng, b, n, m, p_neginf=0.15):
    phi = rng.normal(size=(b, n, m))
    if m > 1:
        mask = rng.random((b, n, m)) < p_neginf
        mask[np.arange(b)[:, None], np.arange(n)[None, :], rng.integers(0, m, size=(b, n))] = False
        phi[mask] = -np.inf
    return phi


def _check_rows(phi, potential, res):
    for b in range(phi.shape[0]):
        one = alpha_pass(phi[b], potential)
        np.testing.assert_array_equal(res.assignment[b], one.assignment)
        for field in ("score", "node_score", "clique_score"):
            got, want = getattr(res, field)[b], getattr(one, field)
            if np.isneginf(want):
                assert np.isneginf(got)
            else:
                assert abs(got - want) <= SCORE_TOL * (1 + abs(want)), (field, b)
        assert res.exact == one.exact and res.status == one.status and res.n_iter == one.n_iter


@pytest.mark.parametrize("shape", [(7, 6, 4), (5, 9, 2), (3, 4, 1), (4, 12, 5)])
def test_alpha_pass_batch_equals_per_clique(seed, shape):
    rng = np.random.default_rng(seed)
    b, n, m = shape
    phi = _stack(rng, b, n, m)
    for potential in _potentials(rng, n, m):
        before = phi.copy()
        res = alpha_pass_batch(phi, potential)
        np.testing.assert_array_equal(phi, before)  # input not mutated
        assert res.assignment.shape == (b, n) and res.assignment.dtype == np.int64
        _check_rows(phi, potential, res)


@given(
    b=st.integers(0, 6),
    n=st.integers(1, 8),
    m=st.integers(1, 5),
    seed=st.integers(0, 2**31 - 1),
    which=st.integers(0, 8),
)
def test_alpha_pass_batch_property(b, n, m, seed, which):
    rng = np.random.default_rng(seed)
    phi = _stack(rng, b, n, m, p_neginf=0.3)
    potential = _potentials(rng, n, m)[which]
    res = alpha_pass_batch(phi, potential)
    assert res.assignment.shape == (b, n) and len(res) == b
    _check_rows(phi, potential, res)


def test_alpha_pass_batch_result_is_frozen():
    res = alpha_pass_batch(np.zeros((2, 3, 2)), Potts(1.0))
    with pytest.raises(ValueError):
        res.assignment[0, 0] = 1
    with pytest.raises(ValueError):
        res.score[0] = 1.0
    with pytest.raises(AttributeError):
        res.method = "x"
    assert res.method == "alpha_pass" and res.converged and res.status == "optimal" and res.time >= 0


@pytest.mark.parametrize(
    ("phi", "potential", "error", "match"),
    [
        (np.zeros((3, 2)), Potts(1.0), ValueError, "`phi` must be a 3-D array"),
        (np.full((2, 3, 2), np.nan), Potts(1.0), ValueError, "`phi` must not contain NaN"),
        (np.zeros((2, 0, 2)), Potts(1.0), ValueError, r"`phi` must have shape \(B, n, m\)"),
        (np.zeros((2, 3, 2)), "potts", TypeError, "`potential` must be a CliquePotential"),
        (np.full((2, 3, 2), np.inf), Potts(1.0), ValueError, r"`phi` must not contain \+inf"),
    ],
)
def test_alpha_pass_batch_bad_input(phi, potential, error, match):
    with pytest.raises(error, match=match):
        alpha_pass_batch(phi, potential)


def test_alpha_pass_batch_names_the_dead_node():
    phi = np.zeros((4, 3, 2))
    phi[2, 1] = -np.inf
    with pytest.raises(ValueError, match="clique 2, node 1 is all -inf"):
        alpha_pass_batch(phi, Potts(1.0))


# --------------------------------------------------------------------------- cardinality


def _cardinality_stack(rng, b, d):
    theta = rng.normal(scale=2.0, size=(b, d))
    f = rng.normal(size=(b, d + 1))
    if b > 2 and d > 2:
        theta[0, 1] = np.inf
        theta[1, :] = -np.inf
        theta[2, : d // 2] = np.inf
        f[2, d // 2 + 1] = -np.inf
    return theta, f


@pytest.mark.parametrize("d", [0, 1, 5, 30])
def test_marginals_batch_chain_equals_chain_marginals(seed, d):
    rng = np.random.default_rng(seed)
    theta, f = _cardinality_stack(rng, 6, d)
    res = marginals_batch(theta, f, method="chain")
    assert res.marginals.shape == (6, d, 2) and res.count_marginals.shape == (6, d + 1)
    for b in range(6):
        one = chain_marginals(theta[b], f[b])
        # the same compiled chain on the same numbers: the marginals are bit-identical
        np.testing.assert_array_equal(res.marginals[b], one.marginals)
        # count marginals: numba's scalar exp vs NumPy's vectorized exp differ by an ulp
        np.testing.assert_allclose(res.count_marginals[b], one.count_marginals, rtol=1e-14, atol=1e-300)
        # log Z: a compensated sum instead of math.fsum for the offset, ~1 ulp of the offset
        assert abs(res.log_partition[b] - one.log_partition) <= 1e-14 * (1 + abs(one.log_partition))


@pytest.mark.parametrize("d", [3, 40])
def test_marginals_batch_tree_equals_marginals(seed, d):
    rng = np.random.default_rng(seed)
    theta, f = _cardinality_stack(rng, 5, d)
    res = marginals_batch(theta, f, method="tree")
    for b in range(5):
        one = marginals(theta[b], f[b])
        np.testing.assert_array_equal(res.marginals[b], one.marginals)  # the same core, row by row
        np.testing.assert_array_equal(res.count_marginals[b], one.count_marginals)
        assert res.log_partition[b] == one.log_partition


def test_marginals_batch_auto_and_shared_f(seed):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(4, 20))
    f = rng.normal(size=21)
    res = marginals_batch(theta, f)
    tree = marginals_batch(theta, np.broadcast_to(f, (4, 21)), method="tree")
    # chain (auto at D = 20) vs convolution tree: two exact algorithms, ~1e-13 apart (the tree's accuracy)
    np.testing.assert_allclose(res.p_on, tree.p_on, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.log_partition, tree.log_partition, rtol=1e-12)
    assert res.method == "auto" and "chain" in res.message
    np.testing.assert_allclose(res.p_on.sum(axis=1), (res.count_marginals * np.arange(21)).sum(axis=1), rtol=1e-12)


def test_marginals_batch_empty_and_frozen():
    res = marginals_batch(np.zeros((0, 3)), np.zeros(4))
    assert res.marginals.shape == (0, 3, 2) and len(res) == 0
    res = marginals_batch(np.zeros((2, 3)), np.zeros(4))
    np.testing.assert_allclose(res.p_on, 0.5, rtol=1e-15)
    with pytest.raises(ValueError):
        res.p_on[0, 0] = 1.0
    with pytest.raises(ValueError):
        res.log_partition[0] = 1.0


@pytest.mark.parametrize(
    ("theta", "f", "kwargs", "error", "match"),
    [
        (np.zeros(3), np.zeros(4), {}, ValueError, "`theta` must be a 2-D array"),
        (np.zeros((2, 3)), np.zeros(3), {}, ValueError, r"`f` must have shape \(2, 4\) or \(4,\)"),
        (np.zeros((2, 3)), np.zeros((3, 4)), {}, ValueError, r"`f` must have shape \(2, 4\)"),
        (np.full((2, 3), np.nan), np.zeros(4), {}, ValueError, "`theta` must not contain NaN"),
        (np.zeros((2, 3)), np.full(4, np.inf), {}, ValueError, r"`f` must not contain \+inf"),
        (np.zeros((2, 3)), np.zeros(4), {"method": "fourier"}, ValueError, "`method`"),
        (np.zeros((2, 3)), np.zeros(4), {"method": "chain", "crossover": 3}, TypeError, "crossover"),
    ],
)
def test_marginals_batch_bad_input(theta, f, kwargs, error, match):
    with pytest.raises(error, match=match):
        marginals_batch(theta, f, **kwargs)


def test_marginals_batch_names_the_model_without_configuration():
    theta = np.zeros((3, 2))
    theta[1] = np.inf  # both on: only count 2 is reachable
    f = np.zeros((3, 3))
    f[1, 2] = -np.inf
    with pytest.raises(ValueError, match=r"in model 1: with 2 variables clamped on"):
        marginals_batch(theta, f)
