"""The shared compiled form of a factor graph (``tractable._compiled_graph``): built once per graph, cached on it,
dropped by every change, and the engines' forms built from it equal those of a fresh compile."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pytest

from tractable import CardinalityFactor, FactorGraph, TableFactor
from tractable import _compiled_graph as cg
from tractable.bp import _wiring as bp_wiring
from tractable.sampling import _wiring as sampling_wiring
from tractable.sampling import adaptive_mmp, gibbs, prune


def _graph(rng, n=6, binary=True):
    card = np.full(n, 2) if binary else rng.integers(2, 4, size=n)
    fg = FactorGraph(card, constant=0.5)
    for v in range(n):
        fg.add_factor(TableFactor([v], rng.normal(size=int(card[v]))))
    for v in range(n - 1):
        fg.add_factor(TableFactor([v, v + 1], rng.normal(size=(int(card[v]), int(card[v + 1])))))
    fg.add_factor(TableFactor([0, 2, 4], rng.normal(size=tuple(int(card[i]) for i in (0, 2, 4)))))
    fg.add_factor(TableFactor([], 0.25))
    if binary:
        fg.add_factor(CardinalityFactor([1, 3, 5], rng.normal(size=4)))
    return fg


def _twin(fg):
    """The same graph, built anew (nothing compiled)."""
    out = FactorGraph(fg.cardinalities, constant=fg.constant)
    out.add_factors(fg.factors)
    return out


def _equal(a, b) -> bool:
    """Structural equality: arrays by value and dtype, dataclasses and containers field by field."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
        )
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(
            _equal(getattr(a, f.name), getattr(b, f.name))
            for f in dataclasses.fields(a)
            if f.name not in ("work", "iwork", "later")  # a kernel's uninitialized scratch
        )
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return a is b or a == b


def test_the_compiled_form_is_built_once_and_reused(seed):
    fg = _graph(np.random.default_rng(seed))
    first = cg.compiled_graph(fg)
    assert cg.compiled_graph(fg) is first
    bp_wiring.compile_graph(fg)
    sampling_wiring.compile_binary(fg)
    assert cg.compiled_graph(fg) is first
    assert bp_wiring.score_plan(fg) is first.score


def test_what_the_compiled_form_holds():
    fg = _graph(np.random.default_rng(0))
    g = cg.compiled_graph(fg)
    assert [st.shape for st in g.tables] == [(2,), (2, 2), (2, 2, 2)]
    assert g.stack((2,)).positions.tolist() == list(range(6)) and g.stack((5,)) is None
    assert g.empty == (12,) and g.others == (13,)
    assert g.arity.tolist() == [len(f.variables) for f in fg.factors]
    assert g.edge_var.tolist() == [int(v) for f in fg.factors for v in f.variables]
    assert np.array_equal(g.edge_start, np.cumsum(g.arity) - g.arity)
    for v in range(fg.n_variables):  # the CSR lists each variable's edges, increasing
        edges = g.var_edges[g.var_ptr[v] : g.var_ptr[v + 1]]
        assert edges.tolist() == np.flatnonzero(g.edge_var == v).tolist()
    for arr in (g.arity, g.edge_var, g.var_edges, g.stack((2, 2)).tables):
        assert not arr.flags.writeable


def test_every_change_of_the_graph_drops_the_compiled_form():
    fg = _graph(np.random.default_rng(1))
    first = cg.compiled_graph(fg)
    fg.add_factor(TableFactor([0, 5], np.zeros((2, 2))))
    second = cg.compiled_graph(fg)
    assert second is not first and second.n_factors == first.n_factors + 1
    fg.add_factors([TableFactor([1], [0.0, 1.0])])
    third = cg.compiled_graph(fg)
    assert third is not second and third.n_factors == second.n_factors + 1
    # a shallow copy shares nothing cached; one made before a change does not see the old form either
    twin = copy.copy(fg)
    assert twin._compiled is None
    assert cg.compiled_graph(pickle.loads(pickle.dumps(fg))) is not third
    # conditioning makes a new graph with its own compiled form
    sub = fg.condition({0: 1})
    assert cg.compiled_graph(sub) is not third and cg.compiled_graph(sub).n_factors == len(sub.factors)


def test_a_factor_list_grown_behind_the_cache_is_recompiled():
    fg = _graph(np.random.default_rng(2))
    first = cg.compiled_graph(fg)
    fg._factors.append(TableFactor([0], [0.0, 1.0]))  # not through add_factor: the count still tells
    assert cg.compiled_graph(fg) is not first


@pytest.mark.parametrize("binary", [True, False])
def test_engine_forms_from_the_cache_equal_fresh_ones(seed, binary):
    rng = np.random.default_rng(seed)
    fg = _graph(rng, binary=binary)
    table = np.zeros((int(fg.cardinalities[1]), int(fg.cardinalities[2])))
    table[0, 1], table[1, 0] = -np.inf, 2.0**22  # a hard zero, and a huge entry (bp shifts the table)
    fg.add_factor(TableFactor([1, 2], table))
    cg.compiled_graph(fg)  # cached
    for mode in ({}, {"per_factor": True}, {"blocks": True}):
        cached = bp_wiring.compile_graph(fg, **mode)
        fresh = bp_wiring.compile_graph(_twin(fg), **mode)  # compiled from scratch
        assert _equal(
            dataclasses.replace(cached, groups=[g[1:] for g in cached.groups]),
            dataclasses.replace(fresh, groups=[g[1:] for g in fresh.groups]),
        )
    if binary:
        assert _equal(vars(sampling_wiring.compile_binary(fg)), vars(sampling_wiring.compile_binary(_twin(fg))))


def test_sampler_arrays_do_not_alias_the_cache():
    """Adaptive MMP rewrites its arrays as it prunes: none may be a view of the shared compiled form."""
    fg = _graph(np.random.default_rng(3))
    w = sampling_wiring.compile_binary(fg)
    shared = [a for st in cg.compiled_graph(fg).tables for a in (st.tables, st.variables)]
    for name, arr in vars(w).items():
        if isinstance(arr, np.ndarray):
            assert arr.flags.writeable, name
            assert not any(np.shares_memory(arr, s) for s in shared), name


def _needs_bp_start(n=12):
    """A chain whose unary-optimal state violates hard constraints: the samplers start from a BP decoding."""
    fg = FactorGraph([2] * n)
    for v in range(n):
        fg.add_factor(TableFactor([v], [0.0, 1.0]))
    for v in range(n - 1):
        fg.add_factor(TableFactor([v, v + 1], [[0.0, 0.0], [0.0, -np.inf]]))
    return fg


@pytest.mark.filterwarnings("ignore::tractable.ConvergenceWarning")
@pytest.mark.parametrize("run", [adaptive_mmp, gibbs])
def test_a_sampler_compiles_the_graph_once(monkeypatch, run):
    built = []
    real = cg._build

    def counting(fg):
        built.append(fg)
        return real(fg)

    monkeypatch.setattr(cg, "_build", counting)
    fg = _needs_bp_start()
    if run is adaptive_mmp:
        run(fg, rng=0, max_sweeps=5)
    else:
        run(fg, rng=0, n_sweeps=5)
    assert built == [fg]  # the sampler's arrays and the BP decoding of its start share one compile


def test_prune_reads_the_compiled_form(monkeypatch):
    fg = _graph(np.random.default_rng(4))
    g = cg.compiled_graph(fg)
    monkeypatch.setattr(cg, "_build", lambda fg: pytest.fail("compiled twice"))
    mask = np.arange(fg.n_variables) < 3
    q = prune(fg, mask, np.full(fg.n_variables, 0.3))
    assert q.n_variables == 3 and cg.compiled_graph(fg) is g


def test_score_by_the_plan_is_the_graphs_score(seed):
    """The same float as ``fg.score``, also where a factor forbids the assignment or partial sums overflow."""
    rng = np.random.default_rng(seed)
    fg = _graph(rng)
    fg.add_factor(TableFactor([2, 3], [[0.0, -np.inf], [1.5e308, 1.5e308]]))
    fg.add_factor(TableFactor([3, 4], [[0.0, 0.0], [1.5e308, -1.5e308]]))
    for x in np.array(np.meshgrid(*[[0, 1]] * fg.n_variables)).reshape(fg.n_variables, -1).T:
        assert cg.score(fg, x) == fg.score(x)
