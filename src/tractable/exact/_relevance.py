"""Relevant groups of variables in a factor graph shaped like a Bayesian network.

A factor is *conditional* on one of its variables ``c`` (its child) when its exponentiated table sums
to 1 over ``c`` for every configuration of its other variables (its parents): a conditional
probability table. Suppose every variable is the child of at most one conditional factor and the
parent-to-child relation has no cycle. Call *kept* the variables of the other (plain) factors,
e.g. the likelihoods that evidence leaves behind, and the variables that are no factor's child.
Then any set ``B`` of variables that holds no kept variable and holds the children of its members is
*barren*: summing the product of the factors over ``B`` gives 1, one child at a time from the
bottom up, so the factors with a child in ``B`` can be dropped without changing the distribution of
the other variables, nor ``Z`` (Shachter 1986; Baker & Boult 1990).

So the marginal of a variable ``x`` only needs the *ancestral* set ``An({x} ∪ kept)``. One
calibration of the whole graph gives every marginal, but its clusters must hold the parents of every
child together, and when a graph has many multi-parent leaves (``munin1``) that can make the
largest cluster hundreds of millions of entries although every ancestral set is small. Here:

* variables with at most one parent whose children are all of that kind too, and that are not kept,
  are *peeled* (bottom up): each one's marginal is its table times its parent's marginal, summed
  over the parent (its descendants are barren, so its parent's marginal is all it needs);
* every other variable is an ancestor of a kept variable or of a remaining leaf (which has two or
  more parents), and each remaining leaf ``l`` gets one group ``An({l} ∪ kept)`` (the kept
  variables' ancestors form the only group when there is no such leaf).

Each group's calibration is exact for all its variables.
"""

from __future__ import annotations

import numpy as np

from ..factorgraph import FactorGraph

__all__ = ["relevant_groups"]

# A factor is conditional when each sum of its exponentiated table over the child is within this of
# 1. Tables normalized in float64 (pgmpy's ``normalize``) sum to 1 within a few 1e-16; a table off by
# up to this much would change the dropped part's sum, and so each marginal, by at most about this
# much relative, far below the 1e-9 at which the tests compare exact methods.
_NORMALIZED_TOL = 1e-12


def _child_candidates(table: np.ndarray) -> list[int]:
    """Axes over which ``exp(table)`` sums to 1 for every configuration of the other axes."""
    lin = np.exp(table)
    return [a for a in range(lin.ndim) if np.all(np.abs(lin.sum(axis=a) - 1.0) <= _NORMALIZED_TOL)]


def _ancestors(seeds, parents: dict[int, tuple]) -> set:
    out = set(seeds)
    stack = list(out)
    while stack:
        for p in parents.get(stack.pop(), ()):
            if p not in out:
                out.add(p)
                stack.append(p)
    return out


def _acyclic(variables: range, parents: dict[int, tuple]) -> bool:
    """Whether the parent-to-child relation has no cycle (Kahn's algorithm)."""
    n_parents = {v: len(parents.get(v, ())) for v in variables}
    children: dict[int, list] = {}
    for c, ps in parents.items():
        for p in ps:
            children.setdefault(p, []).append(c)
    ready = [v for v, k in n_parents.items() if k == 0]
    seen = 0
    while ready:
        v = ready.pop()
        seen += 1
        for c in children.get(v, ()):
            n_parents[c] -= 1
            if n_parents[c] == 0:
                ready.append(c)
    return seen == len(n_parents)


def relevant_groups(fg: FactorGraph) -> tuple[list[tuple[list[int], list]], list[tuple[int, object, int]]] | None:
    """Groups of variables whose separate calibrations give every marginal of ``fg`` exactly.

    Parameters
    ----------
    fg : FactorGraph

    Returns
    -------
    (groups, peeled) or None
        ``groups``: ``[(variables, factors), ...]``, ancestral sets (see the module docstring) with
        the factors over them (the conditional factors of their variables and every plain factor).
        ``peeled``: ``[(x, factor, parent), ...]``, parents before children; ``factor`` is ``x``'s
        conditional factor, over ``x`` alone (``parent`` is -1) or over ``x`` and ``parent``. None
        when ``fg`` has no conditional factor or the parent relation has a cycle.
    """
    n = fg.n_variables
    factors = list(fg.factors)
    candidates = []
    for factor in factors:
        vs = [int(v) for v in factor.variables]
        candidates.append([vs[a] for a in _child_candidates(factor.to_table())] if vs else [])
    child_of: dict[int, int] = {}  # variable -> index of its conditional factor
    # factors with a single possible child first, so that a table normalized both ways (uniform) does
    # not take the child of a factor that has no other choice
    for i in sorted(range(len(factors)), key=lambda i: (len(candidates[i]) != 1, i)):
        free = [c for c in candidates[i] if c not in child_of]
        if free:
            child_of[free[0]] = i
    if not child_of:
        return None
    conditional = set(child_of.values())
    parents = {c: tuple(int(v) for v in factors[i].variables if int(v) != c) for c, i in child_of.items()}
    if not _acyclic(range(n), parents):
        return None
    kept = {v for v in range(n) if v not in child_of}
    for i, factor in enumerate(factors):
        if i not in conditional:
            kept.update(int(v) for v in factor.variables)
    n_children = dict.fromkeys(range(n), 0)
    for ps in parents.values():
        for p in ps:
            n_children[p] += 1

    def peelable(v):
        return v not in kept and n_children[v] == 0 and len(parents[v]) <= 1

    peeled = []
    stack = [v for v in range(n) if peelable(v)]
    while stack:  # children before parents
        x = stack.pop()
        peeled.append(x)
        for p in parents[x]:
            n_children[p] -= 1
            if peelable(p):
                stack.append(p)
    gone = set(peeled)
    leaves = [v for v in range(n) if v not in gone and v not in kept and n_children[v] == 0]
    if leaves:
        groups = [_ancestors(kept | {v}, parents) for v in leaves]
    else:
        groups = [_ancestors(kept, parents)] if kept else []
    plain = [f for i, f in enumerate(factors) if i not in conditional]
    out = []
    for group in groups:
        group_factors = plain + [factors[child_of[v]] for v in sorted(group) if v in child_of]
        out.append((sorted(group), group_factors))
    return out, [(x, factors[child_of[x]], parents[x][0] if parents[x] else -1) for x in reversed(peeled)]
