"""Independent oracles shared by every test folder: brute-force enumeration written without the library's
algorithms. Importable as ``from _oracles import ...`` anywhere under ``tests/`` (``pythonpath`` in
pyproject.toml)."""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import logsumexp


def brute_force(fg):
    """(log Z, marginals, best score) of a FactorGraph by a plain Python loop over all assignments."""
    card = [int(c) for c in fg.cardinalities]
    scores = []
    assignments = list(itertools.product(*[range(c) for c in card]))
    for a in assignments:
        s = fg.constant
        for f in fg.factors:
            s += float(f.to_table()[tuple(a[v] for v in f.variables)])
        scores.append(s)
    scores = np.array(scores)
    best = scores.max()
    if best == -math.inf:
        return -math.inf, None, best
    w = np.exp(scores - best)
    log_z = best + math.log(w.sum())
    p = w / w.sum()
    marginals = [np.zeros(c) for c in card]
    for a, pa in zip(assignments, p):
        for i, s in enumerate(a):
            marginals[i][s] += pa
    return log_z, marginals, best


def brute_force_map(phi, potential):
    """Best score and one best labelling of a clique over all ``m**n`` labellings (tiny cliques only)."""
    phi = np.asarray(phi, dtype=np.float64)
    n, m = phi.shape
    Y = np.array(list(itertools.product(range(m), repeat=n)), dtype=np.int64).reshape(-1, n)
    node = phi[np.arange(n), Y].sum(axis=1)
    counts = (Y[:, :, None] == np.arange(m)).sum(axis=1)
    total = node + np.asarray(potential(counts), dtype=np.float64)
    i = int(np.argmax(total))
    return float(total[i]), Y[i]


class BinaryEnumeration:
    """Every one of the ``2**n`` configurations of ``n`` binary variables with its probability.

    The score is ``sum_d unary[d] y_d + count[sum(y)] + sum_e pairwise[e][y_u, y_v]
    + sum_s subset_counts[s][sum(y[subsets[s]])]`` (any term may be left out).

    Attributes
    ----------
    ys : ndarray of shape (2**n, n)
        All configurations (lexicographic).
    scores, p : ndarray of shape (2**n,)
        Their scores and probabilities.
    log_partition, best : float
        ``log Z`` and the largest score.
    p_on : ndarray of shape (n,)
        ``P(y_d = 1)``.
    marginals : ndarray of shape (n, 2)
        ``[P(y_d = 0), P(y_d = 1)]``, the library's marginals shape.
    count_marginals : ndarray of shape (n + 1,)
        ``P(sum y = k)``.
    """

    def __init__(self, n, *, unary=None, count=None, edges=(), pairwise=(), subsets=(), subset_counts=()):
        ys = np.array(list(itertools.product([0, 1], repeat=n)), dtype=np.int64).reshape(-1, n)
        sc = np.zeros(ys.shape[0])
        if unary is not None:
            with np.errstate(invalid="ignore"):
                sc = sc + np.where(ys == 1, np.asarray(unary, dtype=float), 0.0).sum(1)
        if count is not None:
            sc = sc + np.asarray(count, dtype=float)[ys.sum(1)]
        for (u, v), pw in zip(edges, pairwise):
            sc = sc + np.asarray(pw)[ys[:, u], ys[:, v]]
        for s, f in zip(subsets, subset_counts):
            sc = sc + np.asarray(f)[ys[:, list(s)].sum(1)]
        self.ys, self.scores = ys, sc
        self.log_partition = float(logsumexp(sc))
        self.best = float(sc.max())
        with np.errstate(invalid="ignore"):
            self.p = np.exp(sc - self.log_partition)
        self.p_on = self.p @ ys
        self.marginals = np.stack([1.0 - self.p_on, self.p_on], axis=1)
        self.count_marginals = np.bincount(ys.sum(1), weights=self.p, minlength=n + 1)

    def subset_count_marginals(self, subsets):
        """``P(sum y[s] = k)`` for each subset ``s``."""
        return [np.bincount(self.ys[:, list(s)].sum(1), weights=self.p, minlength=len(s) + 1) for s in subsets]


def brute_factor_messages(log_table, incoming, kind):
    """Factor-to-variable log messages and log Z_f of a dense factor by enumerating its table.

    ``m_i(y) = op_{x: x_i = y} log_table(x) + sum_{j != i} incoming[j, x_j]`` with ``op`` log-sum-exp
    (``kind="sum"``) or max, and ``log Z_f = logsumexp_x log_table(x) + sum_j incoming[j, x_j]``.

    Parameters
    ----------
    log_table : ndarray of shape (c_1, ..., c_d)
    incoming : ndarray of shape (d, max c)
        Log messages variable -> factor (entries past ``c_j`` unused).

    Returns
    -------
    messages : ndarray of shape (d, max c)
        ``-inf`` past each variable's cardinality.
    log_z : float
    """
    t = np.asarray(log_table, dtype=np.float64)
    d = t.ndim
    xs = np.array(list(itertools.product(*[range(c) for c in t.shape])), dtype=np.int64).reshape(-1, d)
    base = t[tuple(xs.T)]
    inc = np.asarray(incoming, dtype=np.float64)
    terms = np.stack([inc[j, xs[:, j]] for j in range(d)], axis=1) if d else np.zeros((1, 0))
    out = np.full((d, inc.shape[1]), -np.inf)
    for i in range(d):
        rest = base + terms.sum(axis=1) - terms[:, i] if np.isfinite(terms[:, i]).all() else None
        if rest is None:  # -inf incoming entries: sum the others explicitly (never -inf - -inf)
            rest = base + np.delete(terms, i, axis=1).sum(axis=1)
        for y in range(t.shape[i]):
            sel = rest[xs[:, i] == y]
            out[i, y] = logsumexp(sel) if kind == "sum" else sel.max()
    return out, float(logsumexp(base + terms.sum(axis=1)))


def random_nested(rng, items, depth=0):
    """A random nested family of subsets of ``items``: split into groups, recurse, keep some groups."""
    out = []
    if len(items) == 0:
        return out
    if rng.random() < 0.8 or depth == 0:
        out.append(list(items))
    if len(items) > 1 and depth < 4:
        cuts = np.sort(
            rng.choice(np.arange(1, len(items)), size=rng.integers(1, min(3, len(items) - 1) + 1), replace=False)
        )
        for part in np.split(np.array(items), cuts):
            out += random_nested(rng, list(part), depth + 1)
    return out
