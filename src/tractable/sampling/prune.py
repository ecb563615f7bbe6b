"""Contraction of a binary factor graph around variables whose decisions are certain (Lampert 2012, Sec. 2.2).

Given confident variables ``C`` with estimated marginals ``mu``, the remaining variables ``U`` get the
distribution ``q(x_U) ∝ exp(E_{q'}[score(x_C, x_U)])`` with ``q'(x_C) = prod_i mu_i^x_i (1 - mu_i)^(1 - x_i)``,
which minimizes ``KL(p || q q')`` over all ``q`` (Eq. 6; the paper writes it with energies, ``score = -E``).
Factors entirely inside ``C`` only shift the normalization and are dropped; factors across the boundary
are replaced by their expectation over their confident variables (Eq. 7-8); factors with the same
scope are merged, so the graph never grows.
"""

from __future__ import annotations

import numpy as np

from .._compiled_graph import compiled_graph
from .._validate import as_float_array, as_index_array
from ..factorgraph import CardinalityFactor, FactorGraph, TableFactor
from ._wiring import check_binary

__all__ = ["prune"]


def _expect_axis(t: np.ndarray, axis: int, mu: float) -> np.ndarray:
    """``(1 - mu) t[..0..] + mu t[..1..]`` along ``axis``; a ``-inf`` entry with positive weight gives ``-inf``."""
    t0 = np.take(t, 0, axis=axis)
    t1 = np.take(t, 1, axis=axis)
    dead = ((mu < 1.0) & np.isneginf(t0)) | ((mu > 0.0) & np.isneginf(t1))
    with np.errstate(invalid="ignore"):
        v = np.where(mu < 1.0, (1.0 - mu) * np.where(np.isneginf(t0), 0.0, t0), 0.0) + np.where(
            mu > 0.0, mu * np.where(np.isneginf(t1), 0.0, t1), 0.0
        )
    return np.where(dead, -np.inf, v)


def expected_table(table: np.ndarray, axes, mus) -> np.ndarray:
    """A binary log-table with the ``axes`` variables replaced by their expectation under ``Bernoulli(mus)``.

    Parameters
    ----------
    table : ndarray of shape (2,) * k
    axes : sequence of int
        Axes (positions in the scope) of the confident variables.
    mus : sequence of float
        ``P(x = 1)`` of each of them.

    Returns
    -------
    ndarray of shape (2,) * (k - len(axes))
        The expected log-potential over the remaining axes, in their order.
    """
    out = np.asarray(table, dtype=np.float64)
    for axis, mu in sorted(zip(axes, mus), reverse=True):  # highest axis first keeps the others' positions
        out = _expect_axis(out, axis, float(mu))
    return out


def expected_count_potential(f: np.ndarray, mus: np.ndarray) -> np.ndarray:
    """``f'(k) = E[f(k + c)]`` with ``c`` the number of confident variables on (a Poisson-binomial count)."""
    p = np.ones(1)
    for mu in mus:
        p = np.convolve(p, [1.0 - mu, mu])
    n_u = f.shape[0] - 1 - len(mus)
    out = np.empty(n_u + 1)
    for k in range(n_u + 1):
        seg = f[k : k + p.shape[0]]
        live = p > 0
        out[k] = -np.inf if np.any(live & np.isneginf(seg)) else float(np.sum(p[live] * seg[live]))
    return out


def prune(fg: FactorGraph, confident, mu) -> FactorGraph:
    """Contract ``fg`` around the ``confident`` variables (Lampert 2012, Eq. 6-8).

    Parameters
    ----------
    fg : FactorGraph
        Binary variables; :class:`~tractable.TableFactor` and :class:`~tractable.CardinalityFactor`.
    confident : array_like of bool, shape (n,), or of int
        The variables whose decisions are certain (a mask, or their indices).
    mu : array_like of shape (n,)
        ``P(x_i = 1)`` estimates; only the confident entries are read, each in ``[0, 1]``.

    Returns
    -------
    FactorGraph
        Over the other variables in their original order (names kept; their original indices in
        ``kept_variables``): ``q(x_U) ∝ exp(E_{q'}[score])``. Table factors that reach into the
        confident set become the expected table over their remaining variables, cardinality factors
        the expected count potential over the remaining count; factors over the same variables are
        summed into one (tables) or one per kind. The normalization constant is not kept, nor are
        the constants of factors entirely inside the confident set (``-inf`` ones included: ``q'``
        reaching a configuration such a factor forbids says the marginals are inconsistent, not
        anything about ``x_U``).

    Examples
    --------
    >>> import numpy as np
    >>> from tractable import FactorGraph, TableFactor
    >>> from tractable.sampling import prune
    >>> fg = FactorGraph([2, 2])
    >>> _ = fg.add_factor(TableFactor([0, 1], [[0.0, 0.0], [0.0, 2.0]]))   # 2 when both are on
    >>> q = prune(fg, [True, False], [0.25, 0.0])                         # x0 is on a quarter of the time
    >>> q.n_variables, q.factors[0].log_table.tolist()                     # x1 gets 0.25 * 2 when on
    (1, [0.0, 0.5])
    """
    check_binary(fg)
    n = fg.n_variables
    conf = np.asarray(confident)
    if conf.dtype == bool:
        if conf.shape != (n,):
            raise ValueError(f"`confident` must be a mask of shape ({n},) or variable indices; got {conf.shape}.")
        mask = conf.copy()
    else:
        idx = as_index_array(conf, "confident")
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise ValueError(f"`confident` indices must be in [0, {n}); got {idx.tolist()}.")
        mask = np.zeros(n, dtype=bool)
        mask[idx] = True
    mu = as_float_array(mu, "mu", ndim=1, allow_neginf=False)
    if mu.shape != (n,):
        raise ValueError(f"`mu` must have shape ({n},); got {mu.shape}.")
    if np.any((mu[mask] < 0) | (mu[mask] > 1)):
        raise ValueError("`mu` must be in [0, 1] at the confident variables.")
    kept = np.flatnonzero(~mask)
    mapping = np.full(n, -1, dtype=np.int64)
    mapping[kept] = np.arange(kept.shape[0])
    graph = compiled_graph(fg)
    factor_of_edge = np.repeat(np.arange(graph.n_factors), graph.arity)
    touching = np.unique(factor_of_edge[~mask[graph.edge_var]])  # the factors over some unconfident variable
    tables: dict = {}
    counts: dict = {}
    for fi in touching.tolist():
        fac = graph.factors[fi]
        v = np.asarray(fac.variables, dtype=np.int64)
        c = mask[v]
        if isinstance(fac, CardinalityFactor):
            f0 = fac.log_potentials if fac.counted == 1 else fac.log_potentials[::-1]  # a count of zeros, reversed
            f = expected_count_potential(f0, mu[v[c]]) if c.any() else f0
            scope = tuple(sorted(mapping[v[~c]].tolist()))
            counts[scope] = counts[scope] + f if scope in counts else f
            continue
        if not isinstance(fac, TableFactor):
            raise TypeError(f"`prune` handles TableFactor and CardinalityFactor; got a {type(fac).__name__}.")
        t = expected_table(fac.log_table, np.flatnonzero(c), mu[v[c]]) if c.any() else fac.log_table
        new_vars = mapping[v[~c]]
        order = np.argsort(new_vars)
        t = np.transpose(t, order)
        scope = tuple(new_vars[order].tolist())
        tables[scope] = tables[scope] + t if scope in tables else t
    names = [fg.names[i] for i in kept]
    out = FactorGraph(np.full(kept.shape[0], 2), names)
    for scope, t in tables.items():
        out.add_factor(TableFactor(list(scope), t))
    for scope, f in counts.items():
        out.add_factor(CardinalityFactor(list(scope), f))
    kept.flags.writeable = False
    out._kept_variables = kept
    return out
