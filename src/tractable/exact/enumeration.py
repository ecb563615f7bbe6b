"""Exact inference by enumerating every assignment: the oracle every other algorithm is tested against.

The joint log-table of all ``prod(cardinalities)`` assignments is built by broadcasting, so this is
limited to small models, but it has no failure modes of its own.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .._logspace import normalize_log
from .._results import MAPResult, MarginalsResult
from .._validate import check_int
from ..factorgraph import FactorGraph
from ._common import (
    DEFAULT_MAX_STATES,
    HUGE,
    check_graph,
    huge_top,
    map_result,
    marginals_result,
    n_states,
    no_support,
    safe_sum,
)

__all__ = ["enumerate_map", "enumerate_marginals"]

METHOD = "enumerate"


def _joint_log_table(fg: FactorGraph, max_states: int) -> tuple[np.ndarray, float | None]:
    """``(joint, shift)``: the log-table of every assignment is ``joint + shift``.

    ``shift`` is None (read 0) and ``joint`` the plain sum of the factors for ordinary models. When some log-potential
    is huge (:func:`._common.shifted_table`), every table is shifted by its largest entry and the sum is
    formed scaled by a power of two (exact), so no partial sum overflows; ``joint`` is then relative to its
    largest entry (0), and an entry overflows to ``-inf`` only where its weight ``exp(entry)`` is 0 anyway.
    """
    size = n_states(fg)
    if size > max_states:
        raise ValueError(
            f"enumeration needs a table of {size} assignments, more than `max_states`={max_states}; "
            "use variable_elimination (or raise `max_states`)."
        )
    card = fg.cardinalities
    tables, tops = [], []
    for factor in fg.factors:
        scope = factor.variables
        order = np.argsort(scope)
        table = np.transpose(factor.to_table(), order)
        shape = np.ones(fg.n_variables, dtype=np.int64)
        shape[scope[order]] = card[scope[order]]
        tables.append(table.reshape(shape))
        tops.append(huge_top(table))
    if all(top is None for top in tops) and not (np.isfinite(fg.constant) and abs(fg.constant) > HUGE):
        joint = np.full(tuple(card), fg.constant, dtype=np.float64)
        for table in tables:
            joint = joint + table
        return joint, None
    # scaled by 2**-k (exact), every partial sum of the shifted tables stays far from overflow
    k = (len(tables) + 2).bit_length() + 1
    joint = np.zeros(tuple(card))
    shifts = [math.ldexp(fg.constant, -k)]
    for table, top in zip(tables, tops):
        top = 0.0 if top is None else top
        joint = joint + (np.ldexp(table, -k) - math.ldexp(top, -k))
        shifts.append(math.ldexp(top, -k))
    best = float(joint.max())
    if best == -np.inf:  # no assignment avoids every -inf (the scaled sums never overflow)
        return joint, None
    with np.errstate(over="ignore"):  # beyond float64's range below the best: weight 0, as -inf
        joint = np.ldexp(joint - best, k)
    return joint, safe_sum([*shifts, best], k)  # ±inf beyond float64's range: refused by the results


def _validate_enumerate(fg, max_states) -> tuple[FactorGraph, int]:
    return check_graph(fg), check_int(max_states, "max_states", minimum=1)


def _enumerate_marginals(fg: FactorGraph, max_states: int = DEFAULT_MAX_STATES) -> MarginalsResult:
    """Core of :func:`enumerate_marginals` (trusts its input)."""
    t0 = time.perf_counter()
    joint, shift = _joint_log_table(fg, max_states)
    p, lz = normalize_log(joint)
    if lz == -np.inf:
        raise no_support("the marginals are")
    n = fg.n_variables
    marginals = [p.sum(axis=tuple(j for j in range(n) if j != i)) for i in range(n)]
    return marginals_result(marginals, lz if shift is None else lz + shift, t0, METHOD)


def _enumerate_map(fg: FactorGraph, max_states: int = DEFAULT_MAX_STATES) -> MAPResult:
    """Core of :func:`enumerate_map` (trusts its input)."""
    t0 = time.perf_counter()
    joint, shift = _joint_log_table(fg, max_states)
    flat = int(np.argmax(joint))
    best = float(joint.flat[flat])
    if best == -np.inf:
        raise no_support("the MAP assignment is")
    assignment = np.array(np.unravel_index(flat, joint.shape), dtype=np.int64).reshape(fg.n_variables)
    # with huge scores, the assignment's own score (summed without overflow) rather than best + shift
    return map_result(assignment, best if shift is None else fg.score(assignment), t0, METHOD)


def _enumerate(fg: FactorGraph, task: str) -> MarginalsResult | MAPResult:
    """``METHODS["enumerate"]``: either task on a validated graph."""
    return _enumerate_marginals(fg) if task == "marginals" else _enumerate_map(fg)


def enumerate_marginals(fg: FactorGraph, *, max_states: int = DEFAULT_MAX_STATES) -> MarginalsResult:
    """Exact marginals and log partition function by enumerating every assignment.

    Parameters
    ----------
    fg : FactorGraph
    max_states : int, default 2**24
        Largest number of joint assignments to enumerate (a hard limit): larger models raise
        ``ValueError`` before anything is allocated.

    Returns
    -------
    MarginalsResult
        ``marginals[i]`` of shape ``(cardinalities[i],)`` (an ``(n, k)`` read-only array when every
        variable has ``k`` states, a tuple of read-only arrays otherwise); ``log_partition``;
        ``method="enumerate"``, ``status="optimal"``.

    Raises
    ------
    ValueError
        If the model has more than ``max_states`` assignments.
    ZeroPartitionError
        If every assignment has probability zero (a ``ValueError`` too).

    Examples
    --------
    >>> import numpy as np
    >>> from tractable import FactorGraph, TableFactor
    >>> fg = FactorGraph([2])
    >>> _ = fg.add_factor(TableFactor([0], np.log([1.0, 3.0])))
    >>> res = enumerate_marginals(fg)
    >>> res.marginals
    array([[0.25, 0.75]])
    >>> res.status, res.method
    ('optimal', 'enumerate')
    """
    fg, max_states = _validate_enumerate(fg, max_states)
    return _enumerate_marginals(fg, max_states)


def enumerate_map(fg: FactorGraph, *, max_states: int = DEFAULT_MAX_STATES) -> MAPResult:
    """Exact MAP assignment by enumerating every assignment.

    Ties are broken towards the assignment that comes first in lexicographic (C) order.

    Parameters
    ----------
    fg : FactorGraph
    max_states : int, default 2**24
        Largest number of joint assignments to enumerate (a hard limit).

    Returns
    -------
    MAPResult
        ``assignment`` of shape ``(n_variables,)`` (int64, read-only) and its ``score``.

    Raises
    ------
    ValueError
        If the model has more than ``max_states`` assignments.
    ZeroPartitionError
        If every assignment has probability zero.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable import FactorGraph, TableFactor
    >>> fg = FactorGraph([2, 3])
    >>> _ = fg.add_factor(TableFactor([0, 1], [[0.0, 2.0, 1.0], [0.5, -np.inf, 1.5]]))
    >>> res = enumerate_map(fg)
    >>> res.assignment.tolist(), res.score
    ([0, 1], 2.0)
    """
    fg, max_states = _validate_enumerate(fg, max_states)
    return _enumerate_map(fg, max_states)
