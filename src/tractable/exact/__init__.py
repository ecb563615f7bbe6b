"""Exact inference on discrete factor graphs: ground truth for small and medium models.

Two algorithms compute the same quantities:

* **Enumeration** (:func:`enumerate_marginals`, :func:`enumerate_map`, in ``enumeration.py``) builds
  the joint log-table of all ``prod(cardinalities)`` assignments by broadcasting, so it is limited
  to small models but has no failure modes of its own: it is the oracle every other algorithm is
  tested against.
* **Variable elimination** (:func:`variable_elimination`, :func:`elimination_order`, in
  ``elimination.py``) eliminates the variables in a greedy min-fill order. For marginals it keeps
  the eliminated clusters as a clique tree and calibrates it with a second, downward pass, so that
  *all* marginals cost about twice one elimination. For MAP it runs max-product elimination and
  decodes the maximizer backwards. Its cost is exponential only in the induced width, and
  ``max_table_size`` bounds the largest intermediate table before anything is allocated.

:func:`infer` adds evidence and picks one of :data:`METHODS`. Everything is computed in log space;
``-inf`` entries (forbidden configurations) are handled without producing NaN. A model in which no
configuration has positive probability raises :class:`ZeroPartitionError`.
"""

from __future__ import annotations

import time

from .._errors import ZeroPartitionError
from .._evidence import full_assignment, full_marginals
from .._results import MAPResult, MarginalsResult
from .._validate import check_int, check_options, resolve_method
from ..factorgraph import FactorGraph
from ._common import (
    DEFAULT_ENUMERATE_BELOW,
    DEFAULT_MAX_STATES,
    DEFAULT_MAX_TABLE_SIZE,
    check_graph,
    check_task,
    map_result,
    marginals_result,
    n_states,
)
from .elimination import _variable_elimination, elimination_order, variable_elimination
from .enumeration import _enumerate, enumerate_map, enumerate_marginals

__all__ = [
    "DEFAULT_ENUMERATE_BELOW",
    "DEFAULT_MAX_STATES",
    "DEFAULT_MAX_TABLE_SIZE",
    "METHODS",
    "ZeroPartitionError",
    "elimination_order",
    "enumerate_map",
    "enumerate_marginals",
    "infer",
    "variable_elimination",
]

#: method name -> function ``f(fg, task, **options)`` on a validated graph (what :func:`infer` runs).
METHODS = {
    "enumerate": _enumerate,
    "variable_elimination": _variable_elimination,
}


def _auto(
    fg: FactorGraph,
    task: str,
    *,
    enumerate_below: int = DEFAULT_ENUMERATE_BELOW,
    max_table_size: int = DEFAULT_MAX_TABLE_SIZE,
) -> MarginalsResult | MAPResult:
    """``method="auto"``: enumerate small models, eliminate the others (the result names the choice)."""
    if n_states(fg) <= enumerate_below:
        return METHODS["enumerate"](fg, task)
    return METHODS["variable_elimination"](fg, task, max_table_size=max_table_size)


_CHOICES = {"auto": _auto, **METHODS}
# the options of infer that each method uses
_OPTIONS = {
    "auto": ("enumerate_below", "max_table_size"),
    "enumerate": (),
    "variable_elimination": ("max_table_size",),
}


def _validate_infer(fg, task, method, evidence, enumerate_below, max_table_size):
    fg = check_graph(fg)
    task = check_task(task)
    run = resolve_method(method, _CHOICES)
    options = {"enumerate_below": enumerate_below, "max_table_size": max_table_size}
    check_options(method, options, _OPTIONS[method])
    if enumerate_below is not None:
        check_int(enumerate_below, "enumerate_below", minimum=0)
    if max_table_size is not None:
        check_int(max_table_size, "max_table_size", minimum=1)
    options = {k: int(v) for k, v in options.items() if v is not None}
    ev = fg.check_evidence({} if evidence is None else evidence)
    return fg, task, run, options, ev


def infer(
    fg: FactorGraph,
    *,
    task: str = "marginals",
    method: str = "auto",
    evidence: dict | None = None,
    enumerate_below: int | None = None,
    max_table_size: int | None = None,
) -> MarginalsResult | MAPResult:
    """Exact inference with evidence, in the original graph's variables.

    Parameters
    ----------
    fg : FactorGraph
    task : {"marginals", "map"}
    method : {"auto", "enumerate", "variable_elimination"}
        A key of :data:`METHODS`, or ``"auto"``: enumeration when the (conditioned) model has at
        most ``enumerate_below`` assignments, variable elimination otherwise.
    evidence : dict, optional
        ``{variable (index or name): state}``.
    enumerate_below : int, default 2**16
        Threshold of ``method="auto"`` (only with ``"auto"``). The hard limit of enumeration
        itself is :data:`DEFAULT_MAX_STATES`.
    max_table_size : int, default 2**25
        Largest intermediate table of variable elimination (with ``"auto"`` and
        ``"variable_elimination"``); see :func:`variable_elimination`.

    Returns
    -------
    MarginalsResult or MAPResult
        Over *all* variables of ``fg``: an observed variable has a one-hot marginal / its observed
        state. ``log_partition`` is then ``log Z`` of the model restricted to the evidence, i.e.
        ``log Z + log P(evidence)``, and ``score`` is the score of the full assignment. ``method``
        is the method that ran (the one passed, or the one ``"auto"`` picked).

    Raises
    ------
    ValueError
        Unknown ``task`` or ``method``, an option the method does not use, invalid evidence.
    ZeroPartitionError
        If every assignment consistent with the evidence has probability zero.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable import FactorGraph, TableFactor
    >>> fg = FactorGraph([2, 2], names=["rain", "wet"])
    >>> _ = fg.add_factor(TableFactor([0], np.log([0.8, 0.2])))
    >>> _ = fg.add_factor(TableFactor([0, 1], np.log([[0.9, 0.1], [0.2, 0.8]])))
    >>> res = infer(fg, evidence={"wet": 1})
    >>> res.marginals.round(4)
    array([[0.3333, 0.6667],
           [0.    , 1.    ]])
    >>> res.method
    'enumerate'
    >>> infer(fg, task="map", method="variable_elimination").assignment.tolist()
    [0, 0]
    """
    t0 = time.perf_counter()
    fg, task, run, options, ev = _validate_infer(fg, task, method, evidence, enumerate_below, max_table_size)
    sub = fg.condition(ev) if ev else fg
    res = run(sub, task, **options)
    detail = f"picked by 'auto' for {n_states(sub)} assignments" if method == "auto" else ""
    if task == "marginals":
        return marginals_result(full_marginals(fg, sub, ev, res.marginals), res.log_partition, t0, res.method, detail)
    assignment = full_assignment(fg, sub, ev, res.assignment)
    return map_result(assignment, fg.score(assignment), t0, res.method, detail)
