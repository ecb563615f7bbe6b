"""Random discrete factor graphs: test instances and demo problems."""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_finite, check_int, check_memory, check_positive, check_rng
from ..factorgraph import FactorGraph, TableFactor

__all__ = ["grid_factor_graph", "random_factor_graph"]


#: lower bounds of the memory a variable and a small table factor take in a FactorGraph (measured: about 280
#: bytes per variable or factor in a random graph, 1,250 bytes per variable of a binary grid); they refuse only
#: requests that cannot fit
_BYTES_PER_VARIABLE = 16
_BYTES_PER_FACTOR = 256


def random_factor_graph(
    n_variables: int,
    n_factors: int,
    *,
    max_cardinality: int = 3,
    max_arity: int = 3,
    scale: float = 1.0,
    p_forbidden: float = 0.0,
    rng=None,
) -> FactorGraph:
    """A random factor graph with Gaussian log-tables.

    Parameters
    ----------
    n_variables : int
        Number of variables (each with 2..``max_cardinality`` states).
    n_factors : int
        Number of factors, each over 1..``max_arity`` distinct random variables.
    scale : float
        Standard deviation of the log-potentials.
    p_forbidden : float in [0, 1)
        Probability that an entry is ``-inf`` (a forbidden configuration).
    rng : None, int or numpy.random.Generator

    Returns
    -------
    FactorGraph
    """
    n_variables = check_int(n_variables, "n_variables", minimum=1)
    n_factors = check_int(n_factors, "n_factors", minimum=0)
    max_cardinality = check_int(max_cardinality, "max_cardinality", minimum=2)
    max_arity = check_int(max_arity, "max_arity", minimum=1)
    check_memory(n_variables, _BYTES_PER_VARIABLE, "n_variables", "variables")
    check_memory(n_factors, _BYTES_PER_FACTOR, "n_factors", "factors")
    scale = check_positive(scale, "scale", strict=False)
    if not 0.0 <= p_forbidden < 1.0:
        raise ValueError(f"`p_forbidden` must be in [0, 1); got {p_forbidden}.")
    rng = check_rng(rng)
    card = rng.integers(2, max_cardinality + 1, size=n_variables)
    fg = FactorGraph(card)
    for _ in range(n_factors):
        k = int(rng.integers(1, min(max_arity, n_variables) + 1))
        scope = rng.choice(n_variables, size=k, replace=False)
        check_memory(
            math.prod(int(c) for c in card[scope]), 8, ("max_cardinality", "max_arity"), "entries of one table"
        )
        table = scale * rng.standard_normal(tuple(card[scope]))
        if p_forbidden:
            table[rng.random(table.shape) < p_forbidden] = -np.inf
        fg.add_factor(TableFactor(scope, table))
    return fg


def grid_factor_graph(
    n_rows: int, n_cols: int, *, n_states: int = 2, coupling: float = 1.0, field: float = 1.0, rng=None
) -> FactorGraph:
    """A grid-structured pairwise model (an Ising/Potts grid with random couplings and fields).

    Unary log-potentials are ``N(0, field^2)``; each edge gets ``J * [y_u == y_v]`` with
    ``J ~ N(0, coupling^2)`` (mixed attractive and repulsive couplings).
    """
    n_rows = check_int(n_rows, "n_rows", minimum=1)
    n_cols = check_int(n_cols, "n_cols", minimum=1)
    n_states = check_int(n_states, "n_states", minimum=2)
    # one unary and up to two pairwise factors per variable
    check_memory(n_rows * n_cols, _BYTES_PER_VARIABLE + 3 * _BYTES_PER_FACTOR, ("n_rows", "n_cols"), "variables")
    coupling = check_finite(coupling, "coupling")
    field = check_finite(field, "field")
    rng = check_rng(rng)
    n = n_rows * n_cols
    fg = FactorGraph([n_states] * n)
    eye = np.eye(n_states)
    for v in range(n):
        fg.add_factor(TableFactor([v], field * rng.standard_normal(n_states)))
    for r in range(n_rows):
        for c in range(n_cols):
            v = r * n_cols + c
            if c + 1 < n_cols:
                fg.add_factor(TableFactor([v, v + 1], coupling * rng.standard_normal() * eye))
            if r + 1 < n_rows:
                fg.add_factor(TableFactor([v, v + n_cols], coupling * rng.standard_normal() * eye))
    return fg
