"""The one grammar of the library (docs/conventions.md), checked across every area at once.

Each area's own tests check its details; this file checks that the areas agree: result fields and status
vocabulary, read-only results, binary marginals as (n, 2), method dispatch and option errors.
"""

import dataclasses
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from tractable import CardinalityFactor, ConvergenceWarning, FactorGraph, ModelError, TableFactor, ZeroPartitionError
from tractable._results import STATUSES

COMMON = ("time", "method", "converged", "n_iter", "status", "message")


def _tiny_graph():
    fg = FactorGraph([2, 2, 2])
    fg.add_factor(TableFactor([0, 1], np.log([[1.0, 2.0], [3.0, 4.0]])))
    fg.add_factor(TableFactor([2], np.array([0.0, 0.5])))
    return fg


def _results():
    """One result of every kind the library returns, keyed by a readable name."""
    from tractable import bp, cardinality, clique, exact, hlmrf, sampling
    from tractable.datasets import opinion_diffusion

    fg = _tiny_graph()
    theta = np.array([0.3, -1.0, 2.0])
    f = np.array([0.0, 1.0, -np.inf, 0.5])
    phi = np.array([[1.0, 0.0], [0.0, 1.0], [0.2, 0.0]])
    out = {
        "exact.enumerate_marginals": exact.enumerate_marginals(fg),
        "exact.enumerate_map": exact.enumerate_map(fg),
        "exact.variable_elimination": exact.variable_elimination(fg, task="marginals"),
        "exact.infer": exact.infer(fg, task="marginals"),
        "cardinality.marginals": cardinality.marginals(theta, f),
        "cardinality.chain_marginals": cardinality.chain_marginals(theta, f),
        "cardinality.map_assignment": cardinality.map_assignment(theta, f),
        "cardinality.RecursiveCardinalityModel": cardinality.RecursiveCardinalityModel(
            3, [[0, 1, 2], [0, 1]], [f, [0.0, 0.2, -0.3]], theta
        ).marginals(),
        "hlmrf.solve": hlmrf.solve(opinion_diffusion(60, rng=0)),
        "hlmrf.solve(highs)": hlmrf.solve(opinion_diffusion(60, rng=0), method="highs"),
        "bp.loopy": bp.loopy(fg),
        "bp.loopy(max)": bp.loopy(fg, "max"),
        "bp.tree_marginals": bp.tree_marginals(np.zeros((3, 2)), [[0, 1]], np.zeros((1, 2, 2))),
        "bp.tree_map": bp.tree_map(np.zeros((3, 2)), [[0, 1]], np.zeros((1, 2, 2))),
        "sampling.gibbs": sampling.gibbs(fg, 50, rng=0, return_samples=True),
        "sampling.adaptive_mmp": sampling.adaptive_mmp(fg, rng=0),
    }
    for name in ["alpha_pass", "generalized_alpha_pass", "alpha_expansion", "icm", "exact_clique_map", "clique_map"]:
        out[f"clique.{name}"] = getattr(clique, name)(phi, clique.Potts(1.0))
    return out


@pytest.fixture(scope="module")
def results():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return _results()


def _arrays(value):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, tuple):
        for v in value:
            yield from _arrays(v)


def test_every_result_is_a_frozen_dataclass_with_the_common_fields(results):
    for name, res in results.items():
        assert dataclasses.is_dataclass(res), name
        fields = {f.name for f in dataclasses.fields(res)}
        missing = [f for f in COMMON if f not in fields]
        assert not missing, f"{name} lacks {missing}"
        assert res.status in STATUSES, (name, res.status)
        assert isinstance(res.message, str) and isinstance(res.n_iter, int) and isinstance(res.converged, bool), name
        assert res.time >= 0, name
        with pytest.raises(dataclasses.FrozenInstanceError):
            res.time = 0.0


def test_no_result_holds_a_writable_array_or_a_list(results):
    for name, res in results.items():
        for field in dataclasses.fields(res):
            value = getattr(res, field.name)
            assert not isinstance(value, list), f"{name}.{field.name} is a list"
            for arr in _arrays(value):
                assert not arr.flags.writeable, f"{name}.{field.name} is writable"


def test_discrete_maximizers_are_int64_assignments_with_a_score(results):
    for name, res in results.items():
        if hasattr(res, "x"):
            continue
        if hasattr(res, "assignment"):
            assert res.assignment.dtype == np.int64 and res.assignment.ndim == 1, name
            assert isinstance(res.score, float), name


def test_binary_marginals_are_n_by_2_everywhere(results):
    for name, res in results.items():
        if hasattr(res, "marginals"):
            m = res.marginals
            assert isinstance(m, np.ndarray) and m.shape == (3, 2), (name, getattr(m, "shape", type(m)))
            np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-12, err_msg=name)


def test_marginals_are_a_tuple_when_cardinalities_differ():
    from tractable.exact import enumerate_marginals

    fg = FactorGraph([2, 3])
    fg.add_factor(TableFactor([0, 1], np.zeros((2, 3))))
    m = enumerate_marginals(fg).marginals
    assert isinstance(m, tuple) and [a.shape for a in m] == [(2,), (3,)]
    with pytest.raises(ValueError, match="read-only"):
        m[0][0] = 5.0


def test_cardinality_factor_and_its_table_give_the_same_marginals():
    from tractable.exact import enumerate_marginals

    f = np.array([0.0, 1.0, -np.inf, 0.5])
    a, b = FactorGraph([2, 2, 2]), FactorGraph([2, 2, 2])
    a.add_factor(CardinalityFactor([0, 1, 2], f))
    b.add_factor(TableFactor([0, 1, 2], CardinalityFactor([0, 1, 2], f).to_table()))
    np.testing.assert_allclose(enumerate_marginals(a).marginals, enumerate_marginals(b).marginals, atol=1e-15)


@pytest.mark.parametrize(
    "area, call",
    [
        ("exact", lambda m: m.infer(_tiny_graph(), "marginals", method="nope")),
        ("clique", lambda m: m.clique_map(np.zeros((2, 2)), m.Potts(1.0), method="nope")),
        ("hlmrf", lambda m: m.solve(m.HLMRF(1), method="nope")),
        ("cardinality", lambda m: m.marginals(np.zeros(2), np.zeros(3), method="nope")),
    ],
)
def test_an_unknown_method_lists_the_valid_names(area, call):
    import importlib

    mod = importlib.import_module(f"tractable.{area}")
    with pytest.raises(ValueError, match=re.escape("`method` must be one of ")) as err:
        call(mod)
    assert "'nope'" in str(err.value)


def test_an_option_the_method_does_not_use_is_an_error():
    from tractable import hlmrf

    with pytest.raises(ValueError, match=re.escape("`max_iter` does not apply to `method`='highs'")):
        hlmrf.solve(hlmrf.HLMRF(1), method="highs", max_iter=5)


def test_exceptions_are_public():
    assert issubclass(ZeroPartitionError, ModelError) and issubclass(ModelError, ValueError)
    fg = FactorGraph([2])
    fg.add_factor(TableFactor([0], np.array([-np.inf, -np.inf])))
    from tractable.exact import enumerate_marginals

    with pytest.raises(ZeroPartitionError):
        enumerate_marginals(fg)


def test_numba_cache_dir_is_honoured(tmp_path):
    """Kernels compile into NUMBA_CACHE_DIR when it is set (read-only installs, Dask workers)."""
    code = (
        "import numpy as np\n"
        "from tractable.cardinality import sample\n"
        "sample(np.zeros(40), np.zeros(41), size=2, rng=0)\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    env.pop("NUMBA_DISABLE_JIT", None)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=600)
    cached = [p for p in tmp_path.rglob("*") if p.suffix in (".nbi", ".nbc")]
    assert cached, "no numba cache files written under NUMBA_CACHE_DIR"
