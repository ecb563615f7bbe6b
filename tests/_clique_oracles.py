"""Brute-force oracles of clique factors (count-based potentials over m-state variables), written without
the library's algorithms: every labelling of the clique is enumerated. Importable as
``from _clique_oracles import ...`` anywhere under ``tests/`` (kept apart from ``_oracles.py``, which others
edit).

- ``all_labellings``: every labelling of ``n`` variables with ``m`` states, in C order;
- ``count_scores``: the potential's value at every labelling (a plain loop over count vectors);
- ``clique_messages``: the exact max-product or sum-product messages and ``log Z_f`` of a clique factor.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import logsumexp


def all_labellings(n: int, m: int) -> np.ndarray:
    """Every labelling of ``n`` variables with ``m`` states, one row each (the last changes fastest):
    shape ``(m**n, n)``, int64."""
    return np.array(list(itertools.product(range(m), repeat=n)), dtype=np.int64).reshape(m**n, n)


def count_scores(potential, ys: np.ndarray, m: int, fixed=None) -> np.ndarray:
    """``potential(counts(y) + fixed)`` for every row ``y`` of ``ys``, one count vector at a time."""
    fixed = np.zeros(m, dtype=np.int64) if fixed is None else np.asarray(fixed)
    return np.array([float(potential(np.bincount(y, minlength=m) + fixed)) for y in ys])


def clique_messages(potential, phi, kind, fixed=None):
    """Exact messages (n, m) of a clique factor and its ``log Z_f`` (``kind="sum"``; None for ``"max"``).

    ``msg[u, l] = op_{y : y_u = l} C(counts(y) + fixed) + sum_{v != u} phi[v, y_v]`` with ``op`` the maximum
    or log-sum-exp, by enumerating all ``m**n`` labellings; ``phi`` (n, m) are the incoming log messages
    (``-inf`` allowed: a node's own term is left out by summing the others, never by subtracting).
    """
    phi = np.asarray(phi, dtype=np.float64)
    n, m = phi.shape
    ys = all_labellings(n, m)
    base = count_scores(potential, ys, m, fixed)
    terms = phi[np.arange(n)[None, :], ys]  # (m**n, n)
    out = np.full((n, m), -np.inf)
    for u in range(n):
        rest = base + np.delete(terms, u, axis=1).sum(axis=1)
        for y in range(m):
            sel = rest[ys[:, u] == y]
            out[u, y] = logsumexp(sel) if kind == "sum" else sel.max()
    log_z = float(logsumexp(base + terms.sum(axis=1))) if kind == "sum" else None
    return out, log_z
