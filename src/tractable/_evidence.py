"""Evidence, handled once for every engine: condition a graph, then put answers back in its variables.

An engine that takes ``evidence=`` (:func:`tractable.exact.infer`, :func:`tractable.bp.loopy`,
:func:`tractable.sampling.adaptive_mmp`) runs on the graph conditioned on the evidence
(:meth:`FactorGraph.condition <tractable.FactorGraph.condition>`: observed variables removed, fully
observed factors folded into the constant) and reports its answer over *all* variables of the
original graph: an observed variable's marginal is one-hot at its state, its assignment is its state,
and a factor's belief table has the observed axes fixed at their states.
"""

from __future__ import annotations

import numpy as np

from .factorgraph import FactorGraph

__all__ = ["condition", "full_assignment", "full_factor_beliefs", "full_marginals"]


def condition(fg: FactorGraph, evidence) -> tuple[FactorGraph, dict[int, int]]:
    """Validate ``evidence`` (``None`` or ``{variable (index or name): state}``) and condition ``fg`` on it.

    Returns
    -------
    sub : FactorGraph
        ``fg`` itself when there is no evidence, else ``fg.condition(evidence)`` (its
        ``kept_variables`` are the original indices of its variables).
    evidence : dict of int to int
        The evidence keyed by variable index.
    """
    ev = fg.check_evidence({} if evidence is None else evidence)
    return (fg.condition(ev) if ev else fg), ev


def full_marginals(fg: FactorGraph, sub: FactorGraph, ev: dict[int, int], marginals) -> list[np.ndarray]:
    """Marginals of ``sub``'s variables (``marginals[i]``, shape ``(card_i,)``) as a list over all of ``fg``'s
    variables, observed ones one-hot at their state."""
    out: list = [None] * fg.n_variables
    for i, v in enumerate(sub.kept_variables):
        out[int(v)] = np.asarray(marginals[i], dtype=np.float64)
    for v, s in ev.items():
        out[v] = np.eye(int(fg.cardinalities[v]))[s]
    return out


def full_assignment(fg: FactorGraph, sub: FactorGraph, ev: dict[int, int], assignment) -> np.ndarray:
    """An assignment of ``sub``'s variables, shape ``(sub.n_variables,)``, as an int64 assignment of all of
    ``fg``'s variables (observed ones at their state)."""
    out = np.zeros(fg.n_variables, dtype=np.int64)
    out[np.asarray(sub.kept_variables, dtype=np.int64)] = np.asarray(assignment, dtype=np.int64)
    for v, s in ev.items():
        out[v] = s
    return out


def full_factor_beliefs(fg: FactorGraph, ev: dict[int, int], beliefs) -> tuple:
    """Belief tables of the conditioned graph's factors as tables of ``fg``'s factors, in ``fg.factors`` order.

    ``beliefs`` has one entry per factor of ``fg.condition(ev)`` (``None`` where not materialized).
    A factor whose variables are all observed was folded into the constant: its table is one-hot at
    the observed states when it is a table over at least one variable, else ``None``. The others get
    their conditioned belief placed at the observed states of their observed axes, zero elsewhere.
    """
    out = []
    it = iter(beliefs)
    for factor in fg.factors:
        variables = [int(v) for v in factor.variables]
        shape = tuple(int(fg.cardinalities[v]) for v in variables)
        observed = all(v in ev for v in variables)
        belief = None if observed else next(it)
        if observed:
            if variables and hasattr(factor, "log_table"):
                table = np.zeros(shape)
                table[tuple(ev[v] for v in variables)] = 1.0
                out.append(table)
            else:
                out.append(None)
        elif belief is None:
            out.append(None)
        else:
            table = np.zeros(shape)
            table[tuple(ev.get(v, slice(None)) for v in variables)] = belief
            out.append(table)
    return tuple(out)
