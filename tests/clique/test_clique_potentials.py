import re

import numpy as np
import pytest

from tractable.clique import (
    CountPotential,
    Entropy,
    LinearMajority,
    Makespan,
    MaxPotential,
    Potts,
    SquareMakespan,
    SumPotential,
)

COUNTS = np.array([[3, 0, 2], [0, 5, 0], [1, 1, 3], [2, 2, 1]])


def test_named_potentials_match_their_definitions():
    c = COUNTS.astype(float)
    np.testing.assert_allclose(Potts(0.7)(COUNTS), 0.7 * (c**2).sum(1))
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = np.where(c > 0, c * np.log(c), 0.0).sum(1)
    np.testing.assert_allclose(Entropy(1.3)(COUNTS), 1.3 * ent)
    np.testing.assert_allclose(Makespan(0.5)(COUNTS), 0.5 * c.max(1))
    np.testing.assert_allclose(SquareMakespan(0.5)(COUNTS), 0.5 * c.max(1) ** 2)
    W = np.arange(9.0).reshape(3, 3)
    a = [0, 1, 2, 0]  # majority with ties to the lowest label: [2, 2, 1] -> 0
    np.testing.assert_allclose(LinearMajority(W)(COUNTS), [W[a[i]] @ c[i] for i in range(4)])


@pytest.mark.parametrize("pot", [Potts(0.3), Entropy(0.8), Makespan(1.1), SquareMakespan(0.2)])
def test_named_potentials_equal_their_tables(pot):
    """Specialized equals generic: each named SUM/MAX potential equals its table family."""
    n, m = 5, 3
    table = pot.table(n, m)
    generic = SumPotential(table) if pot.family == "sum" else MaxPotential(table)
    np.testing.assert_allclose(pot(COUNTS), generic(COUNTS), rtol=1e-14)


def test_families_and_scalar_call():
    assert Potts(1.0).family == "sum" and Entropy(1.0).family == "sum"
    assert Makespan(1.0).family == "max" and SquareMakespan(0.0).family == "max"
    # lam < 0: lam * max n_y = min_y lam * n_y is not a MAX potential
    assert Makespan(-1.0).family == "general" and SquareMakespan(-1.0).family == "general"
    assert LinearMajority(np.eye(2)).family == "majority"
    assert isinstance(Potts(1.0)([1, 2]), float) and Potts(1.0)([1, 2]) == 5.0


def test_tables_allow_neginf_and_counts_beyond_n_fail():
    t = np.array([[0.0, -np.inf, 1.0], [0.0, 2.0, 3.0]])
    assert SumPotential(t)([1, 1]) == -np.inf
    assert MaxPotential(t)([1, 1]) == 2.0
    with pytest.raises(
        ValueError,
        match=re.escape(
            "`potential.table` must have shape (2, >= 4) for a clique of 3 nodes and 2 labels; got (2, 3)."
        ),
    ):
        SumPotential(t)([3, 0])


def test_count_potential_batched_and_row_functions():
    vec = CountPotential(lambda c: np.asarray(c)[..., 0] * 2.0)
    row = CountPotential(lambda c: float(c[0] * 2 if len(c) == 3 else np.nan))  # only one vector at a time
    np.testing.assert_allclose(vec(COUNTS), 2.0 * COUNTS[:, 0])
    np.testing.assert_allclose(row(COUNTS), 2.0 * COUNTS[:, 0])


def test_potential_errors():
    with pytest.raises(ValueError, match=re.escape("`lam` must be finite; got inf.")):
        Potts(np.inf)
    with pytest.raises(TypeError, match=re.escape("`lam` must be a real number; got 'a'.")):
        Entropy("a")
    with pytest.raises(ValueError, match=re.escape("`table` must be a 2-D array; got shape (3,).")):
        SumPotential([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=re.escape("`table` must not contain NaN; got NaN at index (0, 1).")):
        MaxPotential([[0.0, np.nan]])
    with pytest.raises(
        ValueError, match=re.escape("`table` must have shape (m, n + 1) with m >= 1 and n >= 0; got (0, 3).")
    ):
        SumPotential(np.zeros((0, 3)))
    with pytest.raises(ValueError, match=re.escape("`W` must be a square (m, m) array; got shape (2, 3).")):
        LinearMajority(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=re.escape("`W` must not contain -inf; got -inf at index (0, 0).")):
        LinearMajority([[-np.inf, 0.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match=re.escape("`potential.W` must have shape (3, 3) for 3 labels; got (2, 2).")):
        LinearMajority(np.eye(2))([1, 1, 1])
    with pytest.raises(TypeError, match=re.escape("`fn` must be callable; got int.")):
        CountPotential(3)
    with pytest.raises(
        ValueError, match=re.escape("`potential` must return finite values or -inf; got nan for counts [0, 5, 0].")
    ):
        CountPotential(lambda c: np.where(c[..., 0] == 0, np.nan, 1.0))(COUNTS)
    with pytest.raises(ValueError, match=re.escape("`counts` must be non-negative; got -1.")):
        Potts(1.0)([2, -1])
    with pytest.raises(TypeError, match=re.escape("`counts` must contain integers; got dtype float64.")):
        Potts(1.0)([0.5, 1.0])
    with pytest.raises(ValueError, match=re.escape("is not a SUM or MAX potential; it has no per-label table.")):
        LinearMajority(np.eye(2)).table(3, 2)
