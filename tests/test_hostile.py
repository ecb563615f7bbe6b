"""Hostile input at every public boundary that takes arrays.

One table lists every public function, method and constructor of the public modules' ``__all__`` that
takes array arguments: how to build valid arguments, and which of them to corrupt. One property test
(hypothesis draws the corruption and the entry it hits) checks, for each row:

- a corruption that can never be valid (NaN, ``+inf`` where only ``-inf`` is allowed, complex, object
  and string dtypes, one dimension too many or too few) raises ``ValueError`` or ``TypeError`` whose
  message names the argument in backticks; never another exception;
- a corruption that may be valid input (``-inf`` in log-potentials, an empty array) either gives a
  result without NaN or raises ``ValueError``/``TypeError`` naming the argument (or a
  :class:`~tractable.ModelError`, e.g. a model with no configuration of positive probability);
- a huge declared size (a scalar argument) is refused up front with a ``ValueError`` naming it, not a
  ``MemoryError`` after gigabytes;
- no argument is ever mutated (every array reachable from the arguments is compared with a copy).

``test_table_covers_every_public_function`` walks the public modules and fails when a public callable
that takes arrays has no row here, so that a new function cannot skip the discipline.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import io
import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tractable
from tractable import (
    CardinalityFactor,
    CliqueFactor,
    FactorGraph,
    RecursiveCardinalityFactor,
    TableFactor,
    bp,
    cardinality,
    clique,
    crf,
    datasets,
    exact,
    hlmrf,
    sampling,
)
from tractable import io as tio

# ----------------------------------------------------------------------------- the table

#: corruptions of an array argument; the last two may be valid input for some arguments
ALWAYS_BAD = ("nan", "posinf", "complex", "object", "str", "ndim_up", "ndim_down")
MAYBE_BAD = ("neginf", "empty")


@dataclass(frozen=True)
class Arg:
    """An array argument to corrupt: where it sits in ``(args, kwargs)``, its name, what may be valid."""

    loc: tuple  # path: (position or keyword, then indices into nested lists)
    name: str  # the name the error message must show in backticks (a prefix: `subsets` for `subsets[1]`)
    ok: tuple = ()  # corruptions that are valid input here (e.g. "neginf" for log-potentials)
    skip: tuple = ()  # corruptions that do not apply (e.g. "ndim_up" for an argument that takes batches)


@dataclass(frozen=True)
class Size:
    """A scalar size argument set to a value that cannot fit in memory."""

    loc: tuple
    name: str
    value: int


@dataclass(frozen=True)
class Case:
    label: str
    fn: Callable  # fn(*args, **kwargs)
    build: Callable  # () -> (args list, kwargs dict), fresh valid arguments
    arrays: tuple = ()
    sizes: tuple = ()
    covers: tuple = field(default=())  # public names (module.qualname) this row exercises


def _rng():
    return np.random.default_rng(0)


def _fg():
    """A small binary factor graph: a chain of pairwise tables and one cardinality factor."""
    r = _rng()
    fg = FactorGraph([2, 2, 2, 2])
    for u in range(3):
        fg.add_factor(TableFactor([u, u + 1], r.normal(size=(2, 2))))
    fg.add_factor(CardinalityFactor([0, 1, 2, 3], r.normal(size=5)))
    return fg


def _factor(cls):
    """A factor of each kind over variables 0..3 of a binary graph."""
    r = _rng()
    if cls is TableFactor:
        return TableFactor([0, 1, 2, 3], r.normal(size=(2, 2, 2, 2)))
    if cls is CardinalityFactor:
        return CardinalityFactor([0, 1, 2, 3], r.normal(size=5))
    return RecursiveCardinalityFactor([0, 1, 2, 3], [[0, 1], [0, 1, 2, 3]], [r.normal(size=3), r.normal(size=5)])


def _hlmrf():
    m = hlmrf.HLMRF(4)
    m.add_potential([0, 1], [1.0, -1.0], 0.2, weight=1.0)
    m.add_potential([2, 3], [1.0, 1.0], -0.5, weight=2.0, squared=True)
    m.add_constraint([0, 3], [1.0, 1.0], -1.5)
    return m


@functools.cache
def _crf_data():
    r = _rng()
    E = r.normal(size=(30, 3))
    Y = (E[:, :1] + r.normal(scale=0.5, size=(30, 4)) > 0).astype(np.int64)
    return E, Y


@functools.cache
def _fitted(kind):
    E, Y = _crf_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a ConvergenceWarning of the tiny fit is irrelevant here
        if kind == "tree":
            return crf.TreeCRF(max_iter=50).fit(E, Y)
        if kind == "ess":
            return crf.ESSCRF(max_iter=50).fit(E, Y)
        if kind == "ccl":
            return crf.ConditionalChowLiu(max_iter=50).fit(E, Y)
        if kind == "mlc":
            return crf.MultiLabelCRF(max_iter=50).fit(E, Y)
    raise AssertionError(kind)


def _tree_args():
    r = _rng()
    return [r.normal(size=(4, 3)), np.array([[0, 1], [1, 2], [1, 3]]), r.normal(size=(3, 3, 3))], {}


def _batch_args():
    r = _rng()
    edges = np.array([[0, 1], [1, 2], [1, 3]])
    return [r.normal(size=(2, 4, 3)), [edges, edges.copy()], [r.normal(size=(3, 3, 3)), r.normal(size=(3, 3, 3))]], {}


def _phi():
    return _rng().uniform(0, 2, size=(6, 3))


def _clique(fn, *, init=False):
    def build():
        kwargs = {"init": np.array([0, 1, 2, 0, 1, 2])} if init else {}
        return [_phi(), clique.Potts(0.5)], kwargs

    arrays = [Arg((0,), "phi", ok=("neginf",))]
    if init:
        arrays.append(Arg(("init",), "init"))
    return Case(f"clique.{fn.__name__}", fn, build, tuple(arrays), covers=(f"tractable.clique.{fn.__name__}",))


def _majority(fn):
    def build():
        r = _rng()
        return [_phi(), r.uniform(0, 1, size=(3, 3))], {}

    return Case(
        f"clique.{fn.__name__}",
        fn,
        build,
        (Arg((0,), "phi", ok=("neginf",)), Arg((1,), "W")),
        covers=(f"tractable.clique.{fn.__name__}",),
    )


def _theta_f(fn, **kwargs):
    def build():
        r = _rng()
        return [r.normal(size=6), r.normal(size=7)], dict(kwargs)

    return build


_THETA_F = (Arg((0,), "theta", ok=("neginf", "posinf")), Arg((1,), "f", ok=("neginf",)))


def _tree_card():
    r = _rng()
    return [np.array([[0, 1], [1, 2], [2, 3]]), r.normal(size=(3, 2, 2)), r.normal(size=4), r.normal(size=5)], {}


def _rec_card():
    r = _rng()
    return [5, [np.array([0, 1]), np.array([0, 1, 2, 3])], [r.normal(size=3), r.normal(size=5)], r.normal(size=5)], {}


@functools.cache
def _chain_data():
    r = _rng()
    return (r.random((9, 4)) < 0.5).astype(float), r.integers(0, 3, size=9), np.array([4, 2, 3])


@functools.cache
def _fitted_chain():
    X, y, lengths = _chain_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return crf.ChainCRF(max_iter=20).fit(X, y, lengths=lengths)


def _doc_model():
    r = _rng()
    return [r.normal(size=(7, 9)), r.normal(size=(9, 9)), np.array([4, 3]), [np.array([0, 5]), np.array([1, 2, 6])]]


def _method(name):
    """A row calling ``obj.name(*args)`` (args[0] is the object)."""

    def fn(obj, *args, **kwargs):
        return getattr(obj, name)(*args, **kwargs)

    fn.__name__ = name
    return fn


def _x4():
    return np.array([0.2, 0.4, 0.6, 0.8])


def _relational_args():
    r = _rng()
    return [r.normal(size=(4, 3)), np.array([[0, 1], [1, 2], [2, 3]]), np.array([0, 1, -1, 1]), np.array([0, 0, 1])], {}


def _write_mar(stream, marginals):
    return tio.write_mar(stream, marginals)


def _crf_rows(kind, label, methods):
    x, y = ("E", "Y")
    with_xy = (Arg((1,), x), Arg((2,), y, skip=("neginf",)))
    rows = [
        Case(
            f"{label}.fit",
            lambda cls_kind, E, Y: {
                "tree": crf.TreeCRF,
                "ess": crf.ESSCRF,
                "ccl": crf.ConditionalChowLiu,
                "mlc": crf.MultiLabelCRF,
            }[cls_kind](max_iter=20).fit(E, Y),
            lambda: ([kind, *(a.copy() for a in _crf_data())], {}),
            with_xy,
            covers=(f"{label}.fit",),
        )
    ]
    for name, with_y in methods:
        n_args = 2 if with_y else 1

        def build(n_args=n_args):
            return [_fitted(kind), *(a.copy() for a in _crf_data()[:n_args])], {}

        rows.append(Case(f"{label}.{name}", _method(name), build, with_xy[:n_args], covers=(f"{label}.{name}",)))
    return rows


def _chain_rows():
    x, y, lens = Arg((1,), "X"), Arg((2,), "y", skip=("neginf",)), Arg(("lengths",), "lengths", skip=("neginf",))
    rows = [
        Case(
            "tractable.crf.ChainCRF.fit",
            lambda _, X, y, **kw: crf.ChainCRF(max_iter=20).fit(X, y, **kw),
            lambda: ([None, *(a.copy() for a in _chain_data()[:2])], {"lengths": _chain_data()[2].copy()}),
            (x, y, lens),
            covers=("tractable.crf.ChainCRF.fit",),
        )
    ]
    for name, with_y in [
        ("predict", False),
        ("predict_marginals", False),
        ("predict_proba", False),
        ("potentials", False),
        ("log_likelihood", True),
        ("score", True),
    ]:
        n = 2 if with_y else 1

        def build(n=n):
            return [_fitted_chain(), *(a.copy() for a in _chain_data()[:n])], {"lengths": _chain_data()[2].copy()}

        rows.append(
            Case(
                f"tractable.crf.ChainCRF.{name}",
                _method(name),
                build,
                (x, y)[:n] + (lens,),
                covers=(f"tractable.crf.ChainCRF.{name}",),
            )
        )
    return rows


CASES: list[Case] = [
    Case(
        "crf.chain_map",
        crf.chain_map,
        lambda: ([_rng().normal(size=(5, 3)), _rng().normal(size=(3, 3))], {"lengths": np.array([2, 3])}),
        (
            Arg((0,), "unary", ok=("neginf",)),
            Arg((1,), "transitions", ok=("neginf",)),
            Arg(("lengths",), "lengths", skip=("neginf",)),
        ),
        covers=("tractable.crf.chain_map",),
    ),
    *_chain_rows(),
    *(
        Case(
            f"datasets.{name}",
            lambda *a, _f=fn: _f(*a, clique.Potts(0.5)),
            lambda: (_doc_model(), {}),
            (
                Arg((0,), "unary", ok=("neginf",)),
                Arg((1,), "transitions", ok=("neginf",)),
                Arg((2,), "lengths", skip=("neginf",)),
                Arg((3, 1), "cliques", skip=("neginf",)),
            ),
            covers=(f"tractable.datasets.{name}",),
        )
        for name, fn in (
            ("collective_factor_graph", datasets.collective_factor_graph),
            ("collective_map", datasets.collective_map),
        )
    ),
    Case(
        "CliqueFactor",
        CliqueFactor,
        lambda: ([np.array([0, 1, 2]), clique.Potts(0.5)], {"n_states": 3, "fixed_counts": np.array([1, 0, 2])}),
        (Arg((0,), "variables", skip=("neginf",)), Arg(("fixed_counts",), "fixed_counts", skip=("neginf",))),
        covers=("tractable.CliqueFactor",),
    ),
    *(
        Case(
            f"CliqueFactor.{meth}",
            _method(meth),
            lambda arr=arr: ([CliqueFactor([0, 1, 2, 3], clique.Potts(0.5), n_states=2), arr()], {}),
            (Arg((1,), name, ok=ok, skip=("neginf",)),),
            covers=(f"tractable.CliqueFactor.{meth}",),
        )
        for meth, name, arr, ok in (
            ("evaluate", "values", lambda: np.array([[0, 1, 1, 0], [1, 1, 0, 0]]), ("empty",)),
            ("relabel", "mapping", lambda: np.array([4, 3, 2, 1]), ()),
            ("check_cardinalities", "cardinalities", lambda: np.array([2, 2, 2, 2]), ()),
        )
    ),
    # ---- tractable: factors and factor graphs
    Case(
        "TableFactor",
        TableFactor,
        lambda: ([np.array([0, 1]), _rng().normal(size=(2, 3))], {}),
        (Arg((0,), "variables", skip=("neginf",)), Arg((1,), "log_table", ok=("neginf",))),
        covers=("tractable.TableFactor",),
    ),
    Case(
        "CardinalityFactor",
        CardinalityFactor,
        lambda: ([np.array([0, 1, 2]), _rng().normal(size=4)], {}),
        (Arg((0,), "variables", skip=("neginf",)), Arg((1,), "log_potentials", ok=("neginf",))),
        covers=("tractable.CardinalityFactor",),
    ),
    Case(
        "RecursiveCardinalityFactor",
        RecursiveCardinalityFactor,
        lambda: (
            [np.arange(4), [np.array([0, 1]), np.arange(4)], [_rng().normal(size=3), _rng().normal(size=5)]],
            {},
        ),
        (
            Arg((0,), "variables", skip=("neginf",)),
            Arg((1, 0), "subsets", skip=("neginf",)),
            Arg((2, 1), "count_potentials", ok=("neginf",)),
        ),
        covers=("tractable.RecursiveCardinalityFactor",),
    ),
    Case(
        "FactorGraph",
        FactorGraph,
        lambda: ([np.array([2, 3, 2])], {}),
        (Arg((0,), "cardinalities", skip=("neginf",)),),
        covers=("tractable.FactorGraph",),
    ),
    Case(
        "FactorGraph.score",
        _method("score"),
        lambda: ([_fg(), np.array([0, 1, 1, 0])], {}),
        (Arg((1,), "assignment", skip=("neginf", "ndim_up")),),
        covers=("tractable.FactorGraph.score",),
    ),
    *(
        Case(
            f"{cls.__name__}.{meth}",
            _method(meth),
            lambda cls=cls, arr=arr: ([_factor(cls), arr()], {}),
            (Arg((1,), name, ok=ok, skip=("neginf",)),),
            covers=(f"tractable.{cls.__name__}.{meth}",),
        )
        for cls in (TableFactor, CardinalityFactor, RecursiveCardinalityFactor)
        for meth, name, arr, ok in (
            ("evaluate", "values", lambda: np.array([[0, 1, 1, 0], [1, 1, 0, 0]]), ("empty",)),
            ("relabel", "mapping", lambda: np.array([4, 3, 2, 1]), ()),
            ("check_cardinalities", "cardinalities", lambda: np.array([2, 2, 2, 2]), ()),
        )
    ),
    # ---- bp
    *(
        Case(
            f"bp.{fn.__name__}",
            fn,
            _tree_args,
            (
                Arg((0,), "unary", ok=("neginf",)),
                Arg((1,), "edges", ok=("empty",), skip=("neginf",)),
                Arg((2,), "pairwise", ok=("neginf",)),
            ),
            covers=(f"tractable.bp.{fn.__name__}",),
        )
        for fn in (bp.tree_marginals, bp.tree_map)
    ),
    Case(
        "clique.alpha_pass_batch",
        clique.alpha_pass_batch,
        lambda: ([_rng().uniform(0, 2, size=(2, 6, 3)), clique.Potts(0.5)], {}),
        (Arg((0,), "phi", ok=("neginf", "empty")),),
        covers=("tractable.clique.alpha_pass_batch",),
    ),
    Case(
        "cardinality.marginals_batch",
        cardinality.marginals_batch,
        lambda: ([_rng().normal(size=(2, 6)), _rng().normal(size=(2, 7))], {}),
        (Arg((0,), "theta", ok=("neginf", "posinf", "empty")), Arg((1,), "f", ok=("neginf",))),
        covers=("tractable.cardinality.marginals_batch",),
    ),
    Case(
        "bp.tree_marginals_batch",
        bp.tree_marginals_batch,
        _batch_args,
        (
            Arg((0,), "unary", ok=("neginf",)),
            Arg((1, 0), "edges", ok=("empty",), skip=("neginf",)),
            Arg((2, 1), "pairwise", ok=("neginf",)),
        ),
        covers=("tractable.bp.tree_marginals_batch",),
    ),
    # ---- sampling
    Case(
        "sampling.gibbs",
        lambda fg, n_sweeps, **kw: sampling.gibbs(fg, n_sweeps=n_sweeps, **kw),
        lambda: ([_fg(), 5], {"rng": 0, "init": np.array([0, 1, 0, 1]), "return_samples": True}),
        (Arg(("init",), "init", skip=("neginf",)),),
        (Size((1,), "n_sweeps", 10**13),),
        covers=("tractable.sampling.gibbs",),
    ),
    Case(
        "sampling.adaptive_mmp",
        lambda fg, **kw: sampling.adaptive_mmp(fg, max_sweeps=30, **kw),
        lambda: ([_fg()], {"rng": 0, "init": np.array([0, 1, 0, 1])}),
        (Arg(("init",), "init", skip=("neginf",)),),
        covers=("tractable.sampling.adaptive_mmp",),
    ),
    Case(
        "sampling.prune",
        sampling.prune,
        lambda: ([_fg(), np.array([True, False, True, False]), np.array([0.3, 0.5, 0.9, 0.5])], {}),
        (Arg((1,), "confident", ok=("empty",), skip=("neginf",)), Arg((2,), "mu")),
        covers=("tractable.sampling.prune",),
    ),
    # ---- exact (the only array argument besides the graph: an elimination order)
    Case(
        "exact.variable_elimination",
        lambda fg, **kw: exact.variable_elimination(fg, **kw),
        lambda: ([_fg()], {"order": np.array([3, 2, 1, 0])}),
        (Arg(("order",), "order", skip=("neginf",)),),
        covers=("tractable.exact.variable_elimination",),
    ),
    # ---- clique
    _clique(clique.alpha_pass),
    _clique(clique.clique_map),
    _clique(clique.exact_clique_map),
    _clique(clique.generalized_alpha_pass),
    _clique(clique.alpha_expansion, init=True),
    _clique(clique.icm, init=True),
    _majority(clique.majority_alpha_pass),
    _majority(clique.majority_exact),
    Case(
        "clique.score",
        clique.score,
        lambda: ([_phi(), clique.Potts(0.5), np.array([0, 1, 2, 0, 1, 2])], {}),
        (Arg((0,), "phi", ok=("neginf",)), Arg((2,), "assignment", skip=("neginf",))),
        covers=("tractable.clique.score",),
    ),
    *(
        Case(
            f"clique.{cls.__name__}",
            cls,
            lambda: ([_rng().uniform(0, 1, size=(4, 3))], {}),
            (Arg((0,), name, ok=ok),),
            covers=(f"tractable.clique.{cls.__name__}",),
        )
        for cls, name, ok in (
            (clique.MaxPotential, "table", ("neginf",)),
            (clique.SumPotential, "table", ("neginf",)),
        )
    ),
    Case(
        "clique.LinearMajority",
        clique.LinearMajority,
        lambda: ([_rng().uniform(0, 1, size=(3, 3))], {}),
        (Arg((0,), "W"),),
        covers=("tractable.clique.LinearMajority",),
    ),
    # ---- cardinality
    *(
        Case(f"cardinality.{fn.__name__}", fn, _theta_f(fn), _THETA_F, covers=(f"tractable.cardinality.{fn.__name__}",))
        for fn in (cardinality.chain_marginals, cardinality.log_partition, cardinality.map_assignment)
    ),
    Case(
        "cardinality.marginals",
        cardinality.marginals,
        _theta_f(cardinality.marginals),
        _THETA_F,
        covers=("tractable.cardinality.marginals",),
    ),
    Case(
        "cardinality.sample",
        cardinality.sample,
        _theta_f(cardinality.sample, size=3, rng=0),
        _THETA_F,
        (Size(("size",), "size", 10**13),),
        covers=("tractable.cardinality.sample",),
    ),
    Case(
        "cardinality.TreeCardinalityModel",
        cardinality.TreeCardinalityModel,
        _tree_card,
        (
            Arg((0,), "edges", ok=("empty",), skip=("neginf",)),
            Arg((1,), "pairwise", ok=("neginf",)),
            Arg((2,), "unary", ok=("neginf", "posinf")),
            Arg((3,), "count_potential", ok=("neginf",)),
        ),
        covers=("tractable.cardinality.TreeCardinalityModel",),
    ),
    Case(
        "cardinality.TreeCardinalityModel.score",
        _method("score"),
        lambda: ([cardinality.TreeCardinalityModel(*_tree_card()[0]), np.array([0, 1, 1, 0])], {}),
        (Arg((1,), "y", skip=("neginf",)),),
        covers=("tractable.cardinality.TreeCardinalityModel.score",),
    ),
    Case(
        "cardinality.RecursiveCardinalityModel",
        cardinality.RecursiveCardinalityModel,
        _rec_card,
        (
            Arg((1, 1), "subsets", skip=("neginf",)),
            Arg((2, 0), "count_potentials", ok=("neginf",)),
            Arg((3,), "unary", ok=("neginf", "posinf")),
        ),
        (Size((0,), "n_variables", 10**13),),
        covers=("tractable.cardinality.RecursiveCardinalityModel",),
    ),
    *(
        Case(
            f"cardinality.RecursiveCardinalityModel.{name}",
            _method(name),
            lambda arr=arr: ([cardinality.RecursiveCardinalityModel(*_rec_card()[0]), arr()], {}),
            (Arg((1,), argname, ok=ok, skip=skip),),
            covers=(f"tractable.cardinality.RecursiveCardinalityModel.{name}",),
        )
        for name, argname, arr, ok, skip in (
            ("with_unary", "unary", lambda: _rng().normal(size=5), ("neginf", "posinf"), ()),
            ("score", "y", lambda: np.array([0, 1, 1, 0, 1]), (), ("neginf",)),
        )
    ),
    # ---- hlmrf (rows only: its failures are reported, its files belong to another change)
    Case(
        "hlmrf.HLMRF",
        hlmrf.HLMRF,
        lambda: ([4], {}),
        (),
        (Size((0,), "n_variables", 10**13),),
        covers=("tractable.hlmrf.HLMRF",),
    ),
    Case(
        "hlmrf.local_update_reference",
        hlmrf.local_update_reference,
        lambda: (["hinge", np.array([0.2, 0.7]), np.array([1.0, -1.0]), 0.1, 1.0, 1.0], {}),
        (Arg((1,), "d"), Arg((2,), "c")),
        covers=("tractable.hlmrf.local_update_reference",),
    ),
    Case(
        "hlmrf.local_updates",
        hlmrf.local_updates,
        lambda: (
            [
                "hinge",
                np.array([0, 2, 3]),
                np.array([1.0, -1.0, 1.0]),
                np.array([0.1, -0.2]),
                np.array([1.0, 2.0]),
                np.array([0.2, 0.7, 0.4]),
            ],
            {},
        ),
        (
            Arg((1,), "indptr", skip=("neginf",)),
            Arg((2,), "coefficients"),
            Arg((3,), "constants"),
            Arg((4,), "weights"),
            Arg((5,), "d"),
        ),
        covers=("tractable.hlmrf.local_updates",),
    ),
    Case(
        "hlmrf.project_feasible",
        hlmrf.project_feasible,
        lambda: ([_hlmrf(), _x4()], {}),
        (Arg((1,), "x"),),
        covers=("tractable.hlmrf.project_feasible",),
    ),
    Case(
        "hlmrf.solve",
        lambda model, **kw: hlmrf.solve(model, max_iter=50, **kw),
        lambda: ([_hlmrf()], {"x0": _x4()}),
        (Arg(("x0",), "x0"),),
        covers=("tractable.hlmrf.solve",),
    ),
    Case(
        "hlmrf.HLMRF.add_potential",
        _method("add_potential"),
        lambda: ([_hlmrf(), np.array([0, 2]), np.array([1.0, 0.5])], {}),
        (Arg((1,), "variables", skip=("neginf",)), Arg((2,), "coefficients")),
        covers=("tractable.hlmrf.HLMRF.add_potential",),
    ),
    Case(
        "hlmrf.HLMRF.add_constraint",
        _method("add_constraint"),
        lambda: ([_hlmrf(), np.array([1, 2]), np.array([1.0, 1.0]), -1.0], {}),
        (Arg((1,), "variables", skip=("neginf",)), Arg((2,), "coefficients")),
        covers=("tractable.hlmrf.HLMRF.add_constraint",),
    ),
    Case(
        "hlmrf.HLMRF.add_potentials",
        _method("add_potentials"),
        lambda: (
            [_hlmrf(), np.array([0, 2, 3]), np.array([0, 1, 3]), np.array([1.0, -1.0, 1.0])],
            {"constants": np.array([0.1, 0.2]), "weights": np.array([1.0, 0.5])},
        ),
        (
            Arg((1,), "indptr", skip=("neginf",)),
            Arg((2,), "variables", skip=("neginf",)),
            Arg((3,), "coefficients"),
            Arg(("constants",), "constants", skip=("ndim_down",)),  # a scalar is valid: one for all
            Arg(("weights",), "weights", skip=("ndim_down",)),
        ),
        covers=("tractable.hlmrf.HLMRF.add_potentials",),
    ),
    Case(
        "hlmrf.HLMRF.add_constraints",
        _method("add_constraints"),
        lambda: (
            [_hlmrf(), np.array([0, 2, 3]), np.array([0, 1, 3]), np.array([1.0, 1.0, 1.0])],
            {"constants": np.array([-1.5, -0.9])},
        ),
        (
            Arg((1,), "indptr", skip=("neginf",)),
            Arg((2,), "variables", skip=("neginf",)),
            Arg((3,), "coefficients"),
            Arg(("constants",), "constants", skip=("ndim_down",)),
        ),
        covers=("tractable.hlmrf.HLMRF.add_constraints",),
    ),
    Case(
        "hlmrf.HLMRF.fix",
        _method("fix"),
        lambda: ([_hlmrf(), np.array([1, 2]), np.array([0.5, 0.25])], {}),
        (Arg((1,), "variables", ok=("empty",), skip=("neginf",)), Arg((2,), "values", skip=("ndim_down",))),
        covers=("tractable.hlmrf.HLMRF.fix",),
    ),
    Case(
        "hlmrf.HLMRF.with_weights",
        _method("with_weights"),
        lambda: ([_hlmrf(), np.array([0.5, 2.0])], {}),
        (Arg((1,), "weights", skip=("ndim_down",)),),
        covers=("tractable.hlmrf.HLMRF.with_weights",),
    ),
    *(
        Case(
            f"hlmrf.HLMRF.{name}",
            _method(name),
            lambda: ([_hlmrf(), _x4()], {}),
            (Arg((1,), "x"),),
            covers=(f"tractable.hlmrf.HLMRF.{name}",),
        )
        for name in ("objective", "constraint_violations", "potential_values", "max_violation")
    ),
    # ---- crf
    Case(
        "crf.chow_liu_tree",
        crf.chow_liu_tree,
        lambda: ([_crf_data()[1].copy()], {}),
        (Arg((0,), "Y", skip=("neginf",)),),
        covers=("tractable.crf.chow_liu_tree",),
    ),
    Case(
        "crf.RelationalGraph",
        crf.RelationalGraph,
        _relational_args,
        (
            Arg((0,), "features"),
            Arg((1,), "edges", ok=("empty",), skip=("neginf",)),
            Arg((2,), "labels", skip=("neginf",)),
            Arg((3,), "edge_types", skip=("neginf",)),
        ),
        covers=("tractable.crf.RelationalGraph",),
    ),
    *_crf_rows(
        "tree",
        "tractable.crf.TreeCRF",
        [("predict", False), ("predict_marginals", False), ("predict_proba", False), ("potentials", False)]
        + [("log_likelihood", True), ("score", True)],
    ),
    *_crf_rows(
        "ess",
        "tractable.crf.ESSCRF",
        [("predict", False), ("predict_marginals", False), ("predict_structure", False), ("log_likelihood", True)],
    ),
    *_crf_rows("ccl", "tractable.crf.ConditionalChowLiu", [("edge_weights", False), ("predict_structure", False)]),
    *_crf_rows(
        "mlc",
        "tractable.crf.MultiLabelCRF",
        [
            ("predict", False),
            ("predict_marginals", False),
            ("predict_proba", False),
            ("unary", False),
            ("log_likelihood", True),
            ("score", True),
        ],
    ),
    # ---- io writers (the readers take files: fuzz/ covers them)
    Case(
        "io.write_map",
        tio.write_map,
        lambda: ([io.StringIO(), np.array([0, 1, 2])], {}),
        (Arg((1,), "assignment", ok=("empty",), skip=("neginf",)),),
        covers=("tractable.io.write_map",),
    ),
    Case(
        "io.write_mar",
        _write_mar,
        lambda: ([io.StringIO(), [np.array([0.25, 0.75]), np.array([0.5, 0.2, 0.3])]], {}),
        (Arg((1, 0), "marginals", skip=("neginf",)),),
        covers=("tractable.io.write_mar",),
    ),
    Case(
        "io.write_mmp",
        tio.write_mmp,
        lambda: ([io.StringIO(), np.array([0, 1]), np.array([[0.25, 0.75], [0.5, 0.5]])], {}),
        (Arg((1,), "assignment", skip=("neginf",)), Arg((2,), "marginals", skip=("neginf",))),
        covers=("tractable.io.write_mmp",),
    ),
    # ---- datasets
    Case(
        "datasets.inpainting",
        lambda image, **kw: datasets.inpainting(image, n_neighbors=8, rng=0, **kw),
        lambda: ([(np.arange(48).reshape(6, 8) % 3 == 0).astype(np.int64)], {}),
        (Arg((0,), "image", skip=("neginf",)),),
        covers=("tractable.datasets.inpainting",),
    ),
    Case(
        "datasets.grid_factor_graph",
        datasets.grid_factor_graph,
        lambda: ([3, 3], {}),
        (),
        (Size((0,), "n_rows", 10**13), Size((1,), "n_cols", 10**13)),
        covers=("tractable.datasets.grid_factor_graph",),
    ),
    Case(
        "datasets.random_factor_graph",
        datasets.random_factor_graph,
        lambda: ([5, 4], {"rng": 0}),
        (),
        (
            Size((0,), "n_variables", 10**13),
            Size((1,), "n_factors", 10**13),
            Size(("max_cardinality",), "max_cardinality", 10**6),  # one table of 10^24 entries
        ),
        covers=("tractable.datasets.random_factor_graph",),
    ),
    Case(
        "datasets.bipartite_matching",
        datasets.bipartite_matching,
        lambda: ([4, 5], {"rng": 0, "row_counts": (0, 3), "col_counts": (0, 2)}),  # feasible at any size
        (),
        (Size((0,), "n_rows", 10**13), Size((1,), "n_cols", 10**13)),
        covers=("tractable.datasets.bipartite_matching",),
    ),
    Case(
        "datasets.clique_benchmark",
        datasets.clique_benchmark,
        lambda: (["POTTS"], {"n": 10, "m": 3, "rng": 0}),
        (),
        (Size(("n",), "n", 10**13), Size(("m",), "m", 10**13)),
        covers=("tractable.datasets.clique_benchmark",),
    ),
]

# ----------------------------------------------------------------------------- corrupting


def _get(args, kwargs, loc):
    head, *rest = loc
    value = kwargs[head] if isinstance(head, str) else args[head]
    for i in rest:
        value = value[i]
    return value


def _set(args, kwargs, loc, new):
    head, *rest = loc
    if not rest:
        if isinstance(head, str):
            kwargs[head] = new
        else:
            args[head] = new
        return
    container = _get(args, kwargs, (head, *rest[:-1]))
    container[rest[-1]] = new


def corrupt(arr: np.ndarray, how: str, where: int) -> np.ndarray:
    """A corrupted copy of ``arr``; ``where`` picks the entry that NaN or an infinity replaces."""
    arr = np.asarray(arr)
    if how in ("nan", "posinf", "neginf"):
        out = arr.astype(np.float64)  # a copy
        if out.size:
            out.flat[where % out.size] = {"nan": np.nan, "posinf": np.inf, "neginf": -np.inf}[how]
        return out
    if how == "complex":
        out = arr.astype(np.complex128)
        if out.size:
            out.flat[where % out.size] += 1j
        return out
    if how == "object":
        return arr.astype(object)
    if how == "str":
        return arr.astype(str)
    if how == "ndim_up":
        return np.stack([arr, arr], axis=-1)
    if how == "ndim_down":
        return arr[..., 0] if arr.ndim else arr[np.newaxis]
    if how == "empty":
        return arr[:0]
    raise AssertionError(how)


# ----------------------------------------------------------------------------- checking


def _arrays(value, depth=0):
    """Every ndarray reachable from ``value`` (arguments: lists, tuples, dicts)."""
    if depth > 4:
        return
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _arrays(v, depth + 1)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _arrays(v, depth + 1)


def _nan_in(value, depth=0) -> bool:
    """Whether a result holds a NaN (walks dataclasses, containers and arrays)."""
    if depth > 4 or value is None:
        return False
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "fc" and bool(np.isnan(value).any())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(_nan_in(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value))
    if isinstance(value, (list, tuple)):
        return any(_nan_in(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_nan_in(v, depth + 1) for v in value.values())
    return False


def _same(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def _run(case: Case, args, kwargs):
    before = [a.copy() for a in _arrays([args, kwargs])]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tractable.ConvergenceWarning)  # stopping early is not the point here
            result = case.fn(*args, **kwargs)
        error = None
    except Exception as err:  # noqa: BLE001 - the kind of exception is what is checked
        result, error = None, err
    after = list(_arrays([args, kwargs]))
    assert len(before) == len(after) and all(_same(a, b) for a, b in zip(before, after)), (
        f"{case.label} mutated its input"
    )
    return result, error


#: corruptions of an array's shape: the message may name the argument it no longer matches instead
SHAPE = ("ndim_up", "ndim_down", "empty")


def _check_named(case, name, how, error):
    assert isinstance(error, (ValueError, TypeError)), (
        f"{case.label}: `{name}` {how} raised {type(error).__name__}: {error}"
    )
    if how in SHAPE:  # e.g. emptying `edges` makes `pairwise` the argument of the wrong length
        named = re.search(r"`[A-Za-z_][\w\[\]]*`", str(error))
        assert named, f"{case.label}: `{name}` {how}: no argument named: {error}"
    else:
        assert f"`{name}" in str(error), f"{case.label}: `{name}` {how}: the message does not name it: {error}"


def _targets(case):
    out = []
    for i, a in enumerate(case.arrays):
        out += [("array", i, how) for how in ALWAYS_BAD + MAYBE_BAD if how not in a.skip]
    out += [("size", i, "huge") for i in range(len(case.sizes))]
    return out


_SETTINGS = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_valid_arguments_run(case):
    """The table builds valid arguments: the unmodified call succeeds without NaN or mutation."""
    args, kwargs = case.build()
    result, error = _run(case, args, kwargs)
    assert error is None, f"{case.label}: valid arguments raised {type(error).__name__}: {error}"
    assert not _nan_in(result), f"{case.label}: NaN in the result"


def check_target(case: Case, kind: str, index: int, how: str, where: int = 0) -> None:
    """Corrupt one argument of ``case`` (``kind`` "array" or "size", its ``index`` in the row, ``how``,
    at entry ``where``) and check what the call does."""
    args, kwargs = case.build()
    if kind == "size":
        size = case.sizes[index]
        _set(args, kwargs, size.loc, size.value)
        _, error = _run(case, args, kwargs)
        assert error is not None, f"{case.label}: `{size.name}`={size.value} was accepted"
        _check_named(case, size.name, f"= {size.value}", error)
        assert isinstance(error, ValueError), f"{case.label}: `{size.name}` huge raised {type(error).__name__}"
        return
    arg = case.arrays[index]
    _set(args, kwargs, arg.loc, corrupt(_get(args, kwargs, arg.loc), how, where))
    result, error = _run(case, args, kwargs)
    if how in arg.ok or how in MAYBE_BAD:
        if error is None:
            assert not _nan_in(result), f"{case.label}: `{arg.name}` {how} gave a NaN in the result"
        elif not isinstance(error, tractable.ModelError):
            _check_named(case, arg.name, how, error)
        return
    assert error is not None, f"{case.label}: `{arg.name}` {how} was accepted"
    _check_named(case, arg.name, how, error)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
@_SETTINGS
@given(data=st.data())
def test_hostile_input(case, data):
    targets = list(_targets(case))
    assert targets, f"{case.label}: the row names no argument to corrupt"
    kind, index, how = data.draw(st.sampled_from(targets), label="target")
    check_target(case, kind, index, how, data.draw(st.integers(0, 63), label="where"))


def _target_name(case, target):
    kind, index, _ = target
    return case.sizes[index].name if kind == "size" else case.arrays[index].name


# ----------------------------------------------------------------------------- coverage of the table

#: public callables that take no array argument (files, graphs, scalars only), or are not functions of data
NO_ARRAYS = {
    "tractable.Factor", "tractable.ConvergenceWarning", "tractable.ModelError", "tractable.ZeroPartitionError",
    "tractable.MAPResult", "tractable.MarginalsResult", "tractable.Result", "tractable.FactorGraph.add_factor",
    "tractable.FactorGraph.add_factors", "tractable.FactorGraph.check_evidence", "tractable.FactorGraph.condition",
    "tractable.FactorGraph.variable_index", "tractable.bp.loopy", "tractable.bp.register", "tractable.bp.BPResult",
    "tractable.bp.FactorMessages", "tractable.bp.TreeMarginals", "tractable.bp.TreeMarginalsBatch",
    "tractable.sampling.GibbsResult", "tractable.sampling.MMPResult", "tractable.exact.ZeroPartitionError",
    "tractable.exact.elimination_order", "tractable.exact.enumerate_map", "tractable.exact.enumerate_marginals",
    "tractable.exact.infer", "tractable.clique.CliqueMAPResult", "tractable.clique.CliquePotential",
    "tractable.clique.CountPotential", "tractable.clique.Entropy", "tractable.clique.Makespan",
    "tractable.clique.Potts", "tractable.clique.SquareMakespan", "tractable.cardinality.CardinalityMarginals",
    "tractable.hlmrf.MPEResult", "tractable.io.from_pgmpy", "tractable.io.read_bif", "tractable.io.read_evidence",
    "tractable.io.read_map", "tractable.io.read_mar", "tractable.io.read_uai", "tractable.io.write_evidence",
    "tractable.io.read_factor_graph", "tractable.io.write_factor_graph",
    "tractable.io.write_pr", "tractable.io.write_uai", "tractable.datasets.BipartiteMatching",
    "tractable.datasets.Inpainting", "tractable.datasets.load_yeast", "tractable.datasets.yeast_split",
    "tractable.datasets.opinion_diffusion", "tractable.crf.RelationalESSCRF", "tractable.crf.TreeCRF",
    "tractable.crf.ESSCRF", "tractable.crf.ConditionalChowLiu", "tractable.crf.MultiLabelCRF",
    "tractable.hlmrf.HLMRF.load", "tractable.hlmrf.HLMRF.save", "tractable.hlmrf.HLMRF.constraint_arrays",
    "tractable.hlmrf.HLMRF.potential_arrays", "tractable.cardinality.TreeCardinalityModel.log_partition",
    "tractable.cardinality.TreeCardinalityModel.map_assignment", "tractable.cardinality.TreeCardinalityModel.marginals",
    "tractable.cardinality.TreeCardinalityModel.sample",
    "tractable.cardinality.RecursiveCardinalityModel.log_partition",
    "tractable.cardinality.RecursiveCardinalityModel.map_assignment",
    "tractable.cardinality.RecursiveCardinalityModel.marginals",
    "tractable.cardinality.RecursiveCardinalityModel.sample",
    "tractable.cardinality.RecursiveCardinalityModel.subset_count_marginals",
    # the relational estimator takes RelationalGraph objects, whose constructor is in the table
    "tractable.crf.RelationalESSCRF.fit", "tractable.crf.RelationalESSCRF.predict",
    "tractable.crf.RelationalESSCRF.predict_marginals", "tractable.crf.RelationalESSCRF.log_likelihood",
    "tractable.crf.RelationalESSCRF.edge_information", "tractable.crf.RelationalESSCRF.structure",
    "tractable.crf.MultiLabelCRF.factor_graph", "tractable.crf.MultiLabelCRF.exact_marginals",
    "tractable.crf.RelationalESSCRF.score",
    "tractable.clique.CliqueMAPBatch",
    "tractable.cardinality.CardinalityMarginalsBatch", "tractable.clique.CliquePotential.table",
    "tractable.clique.CliquePotential.check", "tractable.clique.LinearMajority.check",
    # factors: conditioning takes a dict, to_table nothing; the handler protocol of bp takes compiled state
    *(f"tractable.{c}.{m}" for c in ("Factor", "TableFactor", "CardinalityFactor", "RecursiveCardinalityFactor",
                                      "CliqueFactor")
      for m in ("condition", "to_table")),
    "tractable.Factor.evaluate", "tractable.Factor.relabel", "tractable.Factor.check_cardinalities",
    "tractable.bp.FactorMessages.compile", "tractable.bp.FactorMessages.factor_beliefs",
    "tractable.bp.FactorMessages.log_partition", "tractable.bp.FactorMessages.messages",
    "tractable.bp.FactorMessages.check",
    "tractable.crf.ChainCRF", "tractable.crf.ChainPotentials", "tractable.datasets.CollectiveMAPResult",
    "tractable.datasets.Document", "tractable.datasets.Sentence", "tractable.datasets.SpanScores",
    "tractable.datasets.NERFeaturizer", "tractable.datasets.NERFeaturizer.fit",
    "tractable.datasets.NERFeaturizer.transform", "tractable.datasets.NERFeaturizer.fit_transform",
    "tractable.datasets.NERFeaturizer.token_features", "tractable.datasets.conll2003_available",
    "tractable.datasets.entity_spans", "tractable.datasets.iob1_to_iob2", "tractable.datasets.load_conll2003",
    "tractable.datasets.majority_weights", "tractable.datasets.repeated_token_cliques",
    "tractable.datasets.span_f1", "tractable.datasets.tag_ids",
}  # fmt: skip

PUBLIC_MODULES = [
    "tractable", "tractable.bp", "tractable.sampling", "tractable.crf", "tractable.exact", "tractable.clique",
    "tractable.cardinality", "tractable.hlmrf", "tractable.io", "tractable.datasets",
]  # fmt: skip


def _public_callables():
    names = set()
    for modname in PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not callable(obj) or isinstance(obj, dict):
                continue
            names.add(f"{modname}.{name}")
            if inspect.isclass(obj) and not dataclasses.is_dataclass(obj) and not issubclass(obj, BaseException):
                for meth, fn in vars(obj).items():
                    if not meth.startswith("_") and callable(fn) and not isinstance(fn, type):
                        names.add(f"{modname}.{name}.{meth}")
    return names


def test_table_covers_every_public_function():
    covered = {c for case in CASES for c in case.covers} | NO_ARRAYS
    missing = sorted(n for n in _public_callables() if n not in covered)
    assert not missing, f"public callables without a row in tests/test_hostile.py: {missing}"
