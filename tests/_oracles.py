"""Independent oracles shared by every test folder: brute-force enumeration written without the library's
algorithms. Importable as ``from _oracles import ...`` anywhere under ``tests/`` (``pythonpath`` in
pyproject.toml).

Every brute-force enumerator of the tests lives here, one documented function each:

- ``all_assignments``: every assignment of some discrete variables, in C order;
- ``brute_force`` / ``joint_scores``: a FactorGraph by a plain loop / by its factor tables, vectorized;
- ``pairwise_scores``: a pairwise model (unary + edge scores, e.g. a forest);
- ``nested_count_score``: the score of a nested family of count potentials (recursive cardinality factor);
- ``brute_force_map``: a clique with a count-vector potential;
- ``BinaryEnumeration``: binary models with unary, count, pairwise and subset-count terms;
- ``brute_factor_messages``: the BP messages of a dense factor;
- ``psl_logical_objective`` / ``psl_arithmetic_objective``: PSL rules over every binding of their variables.
"""

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


def all_assignments(cardinalities) -> np.ndarray:
    """Every assignment of variables with these cardinalities, one row each, in C order (the last variable
    changes fastest; for binary variables the rows count up in binary): shape ``(prod(cardinalities), n)``,
    int64."""
    card = [int(c) for c in cardinalities]
    rows = list(itertools.product(*[range(c) for c in card]))
    return np.array(rows, dtype=np.int64).reshape(math.prod(card), len(card))  # () -> one empty assignment


def joint_scores(fg):
    """``(ys, scores)``: every assignment of a FactorGraph (``all_assignments``) and its score, the graph's
    constant plus each factor's dense table (``to_table``) at the assignment's states: the joint log-table
    without ``fg.score`` and without the library's algorithms."""
    ys = all_assignments(fg.cardinalities)
    scores = np.full(len(ys), float(fg.constant))
    for f in fg.factors:
        scores = scores + np.asarray(f.to_table(), dtype=np.float64)[tuple(ys[:, v] for v in f.variables)]
    return ys, scores


def pairwise_scores(unary, edges, pairwise):
    """``(ys, scores)`` of a pairwise model over every labelling: ``unary`` (n, k), ``edges`` (E, 2) and
    ``pairwise`` (E, k, k); ``score(y) = sum_i unary[i, y_i] + sum_e pairwise[e][y_u, y_v]`` (-inf allowed)."""
    unary = np.asarray(unary, dtype=np.float64)
    n, k = unary.shape
    ys = all_assignments([k] * n)
    scores = unary[np.arange(n), ys].sum(axis=1)
    for e, (u, v) in enumerate(np.asarray(edges, dtype=np.int64).reshape(-1, 2)):
        scores = scores + np.asarray(pairwise[e], dtype=np.float64)[ys[:, u], ys[:, v]]
    return ys, scores


def nested_count_score(variables, subsets, count_potentials, y) -> float:
    """``sum_s count_potentials[s][number of variables of subsets[s] that are on]`` for one assignment ``y``
    of ``variables`` (in their order); ``subsets`` name variables by their ids, as a
    ``RecursiveCardinalityFactor`` does."""
    state = dict(zip(variables, y))
    return sum(float(f[sum(state[v] for v in s)]) for s, f in zip(subsets, count_potentials))


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


def psl_logical_objective(rules, data, value) -> float:
    """The objective of weighted PSL logical rules by brute force: the sum over the rules and over EVERY binding
    of their variables to the constants of ``data`` of ``w * distance**p`` (Lukasiewicz distance to
    satisfaction, ``p = 2`` for ``^2`` rules).

    ``data`` maps ``(predicate, arity)`` to ``{partition: rows}`` (its string entries are the constants);
    ``value(predicate, arguments)`` gives an atom's truth value (0 for a missing atom).
    """
    from tractable.psl.parser import Comparison, Constant, Literal, parse_rule

    consts = sorted(
        {str(t) for parts in data.values() for rows in parts.values() for r in rows for t in r if isinstance(t, str)}
    )
    total = 0.0
    for text in rules:
        rule = parse_rule(text)
        names = sorted(
            {
                t.name
                for lit in (*rule.body, *rule.head)
                for t in (lit.atom.args if isinstance(lit, Literal) else (lit.left, lit.right))
                if not isinstance(t, Constant)
            }
        )
        for combo in itertools.product(consts, repeat=len(names)):
            env = dict(zip(names, combo))

            def term(t, env=env):
                return t.value if isinstance(t, Constant) else env[t.name]

            def truth(lit):
                if isinstance(lit, Comparison):
                    a, b = term(lit.left), term(lit.right)
                    v = {"==": a == b, "!=": a != b, "<": a < b}[lit.op]
                    return float(v != lit.negated)
                x = value(lit.atom.predicate, tuple(term(t) for t in lit.atom.args))
                return 1.0 - x if lit.negated else x

            d = sum(truth(b) for b in rule.body) - (len(rule.body) - 1) - sum(truth(h) for h in rule.head)
            d = max(d, 0.0)
            total += rule.weight * (d * d if rule.squared else d)
    return total


def psl_arithmetic_objective(text, consts, exists, value) -> float:
    """A weighted PSL arithmetic rule by brute force: every binding of the non-summation variables for which
    some binding of the summation variables makes all atoms exist; summation atoms add every existing atom;
    |Y| counts the distinct values of Y among them. ``exists(predicate, arguments)`` says whether an atom is in
    the data, ``value`` gives its truth value."""
    from tractable.psl.parser import Constant, SumVariable, Variable, parse_rule

    rule = parse_rule(text)
    plain = sorted({t.name for _, a in rule.terms for t in a.args if isinstance(t, Variable)})
    summed = list(rule.sum_variables)

    def ground(atom, env):
        return (atom.predicate, tuple(t.value if isinstance(t, Constant) else env[t.name] for t in atom.args))

    total = 0.0
    for combo in itertools.product(consts, repeat=len(plain)):
        env = dict(zip(plain, combo))
        if not any(
            all(exists(*ground(a, {**env, **dict(zip(summed, sc))})) for _, a in rule.terms)
            for sc in itertools.product(consts, repeat=len(summed))
        ):
            continue
        seen = {v: set() for v in summed}
        expanded = []  # (coefficient expression, value) per existing ground atom
        for c, a in rule.terms:
            own = [t.name for t in a.args if isinstance(t, SumVariable)]
            for sc in itertools.product(consts, repeat=len(own)):
                key = ground(a, {**env, **dict(zip(own, sc))})
                if exists(*key):
                    for name, v in zip(own, sc):
                        seen[name].add(v)
                    expanded.append((c, value(*key)))
        counts = {v: float(len(s)) for v, s in seen.items()}
        e = sum(c.evaluate(counts) * x for c, x in expanded) + rule.constant.evaluate(counts)
        sides = {"<=": [e], ">=": [-e], "=": [e, -e]}[rule.sense]
        for s in sides:
            d = max(s, 0.0)
            total += rule.weight * (d * d if rule.squared else d)
    return total
