"""Conversion from pgmpy's discrete Bayesian networks (an optional dependency)."""

from __future__ import annotations

import numpy as np

from ..factorgraph import FactorGraph, TableFactor
from .uai import _check_path, _got

__all__ = ["from_pgmpy", "read_bif"]


def from_pgmpy(model) -> FactorGraph:
    """Convert a pgmpy discrete Bayesian network into a :class:`FactorGraph`.

    Parameters
    ----------
    model : pgmpy.models.DiscreteBayesianNetwork
        A network whose CPDs are ``TabularCPD`` objects.

    Returns
    -------
    FactorGraph
        One table factor per CPD, over ``[*parents, child]`` (the child last, as in a UAI
        ``BAYES`` file), with log-probabilities; variables are named after the network's nodes, in
        the order of ``model.nodes()``. ``fg.state_names[i]`` is the tuple of variable ``i``'s
        states in pgmpy's order (index = state number).

    Raises
    ------
    TypeError
        ``model`` is not a pgmpy network (it has no ``nodes`` and ``get_cpds``).
    """
    if not (callable(getattr(model, "nodes", None)) and callable(getattr(model, "get_cpds", None))):
        raise TypeError(f"`model` must be a pgmpy DiscreteBayesianNetwork; got {_got(model)}.")
    nodes = list(model.nodes())
    index = {v: i for i, v in enumerate(nodes)}
    cpds = {cpd.variable: cpd for cpd in model.get_cpds()}
    missing = [v for v in nodes if v not in cpds]
    if missing:
        raise ValueError(f"`model` has no CPD for {missing[:5]}.")
    card = [int(cpds[v].cardinality[0]) for v in nodes]
    state_names = [tuple(cpds[v].state_names[v]) for v in nodes]
    fg = FactorGraph(card, names=[str(v) for v in nodes], state_names=state_names)
    for v in nodes:
        cpd = cpds[v]
        values = np.asarray(cpd.values, dtype=np.float64)  # axes: [child, *parents]
        parents = list(cpd.variables[1:])
        for p in parents:
            if cpd.state_names[p] != cpds[p].state_names[p]:
                raise ValueError(f"the CPD of {v!r} orders the states of its parent {p!r} differently.")
        with np.errstate(divide="ignore"):
            table = np.log(np.moveaxis(values, 0, -1))
        fg.add_factor(TableFactor([index[p] for p in parents] + [index[v]], table))
    fg.network_type = "BAYES"
    return fg


def read_bif(path) -> FactorGraph:
    """Read a BIF file (optionally gzipped) with pgmpy's reader and convert it with :func:`from_pgmpy`."""
    import gzip

    _check_path(path)
    try:
        from pgmpy.readwrite import BIFReader
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("reading BIF files needs pgmpy: pip install pgmpy") from err
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as fh:
        text = fh.read()
    return from_pgmpy(BIFReader(string=text).get_model())
