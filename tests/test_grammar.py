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


# ----------------------------------------------------------------------------------- every public name
#: The public modules: the grammar test covers every name of their ``__all__``.
PUBLIC_MODULES = (
    "tractable",
    "tractable.exact",
    "tractable.bp",
    "tractable.cardinality",
    "tractable.clique",
    "tractable.hlmrf",
    "tractable.psl",
    "tractable.crf",
    "tractable.sampling",
    "tractable.distributed",
    "tractable.io",
    "tractable.datasets",
)

#: Parameters with a default that may still be given by position: data of a model or a file, never an
#: algorithm's option (``names`` of a graph, ``weight`` of a potential, ``fg`` of a reader, scikit-learn's
#: ``fit(X, y=None)``). Everything else with a default is keyword-only.
POSITIONAL_DATA = {
    "tractable.FactorGraph.__init__": {"names"},
    "tractable.cardinality.RecursiveCardinalityModel.__init__": {"unary"},
    "tractable.hlmrf.HLMRF.add_potential": {"constant", "weight", "squared"},
    "tractable.hlmrf.HLMRF.add_constraint": {"constant", "sense"},
    "tractable.hlmrf.HLMRF.add_potentials": {"constants", "weights", "squared"},
    "tractable.hlmrf.HLMRF.add_constraints": {"constants", "senses"},
    "tractable.psl.ArithmeticRule.__init__": {"sum_variables"},
    "tractable.psl.Model.evaluate": {"predictions"},
    "tractable.psl.evaluate_predicate": {"evaluators"},
    "tractable.crf.ESSCRF.__init__": {"structure"},
    "tractable.crf.TreeCRF.__init__": {"tree"},
    "tractable.crf.RelationalGraph.__init__": {"labels", "edge_types"},
    "tractable.crf.RelationalESSCRF.fit": {"y"},
    "tractable.crf.RelationalESSCRF.score": {"y"},
    "tractable.distributed.WarmKernels.setup": {"worker"},
    "tractable.io.read_evidence": {"fg"},
    "tractable.io.write_mar": {"fg"},
    "tractable.io.write_mmp": {"fg"},
    "tractable.datasets.inpainting": {"image"},
}


def _public_names():
    import importlib

    for module in PUBLIC_MODULES:
        mod = importlib.import_module(module)
        for name in mod.__all__:
            yield module, name, getattr(mod, name)


def _signatures(module, name, obj):
    """``(qualified name, signature)`` of a public function, or of a public class's constructor and methods."""
    import inspect

    if inspect.isfunction(obj):
        yield f"{module}.{name}", inspect.signature(obj)
    elif inspect.isclass(obj) and not issubclass(obj, BaseException):
        members = [("__init__", obj.__dict__.get("__init__"))]
        for k, v in vars(obj).items():
            if isinstance(v, (classmethod, staticmethod)):
                v = v.__func__
            if inspect.isfunction(v) and not k.startswith("_"):
                members.append((k, v))
        for k, f in members:
            if f is not None and not dataclasses.is_dataclass(obj):
                yield f"{module}.{name}.{k}", inspect.signature(f)


def test_every_option_is_keyword_only():
    """Generated from every ``__all__``: a parameter with a default is keyword-only unless it is model data."""
    problems = []
    for module, name, obj in _public_names():
        for qual, sig in _signatures(module, name, obj):
            allowed = POSITIONAL_DATA.get(qual, set())
            for p in sig.parameters.values():
                if p.default is not p.empty and p.kind is p.POSITIONAL_OR_KEYWORD and p.name not in allowed:
                    problems.append(f"{qual}: `{p.name}`")
    assert not problems, "options that can be given by position: " + "; ".join(problems)


def _tiny_hlmrf():
    from tractable.datasets import opinion_diffusion

    return opinion_diffusion(30, rng=0)


def _tiny_psl():
    import pandas as pd

    from tractable.psl import Model

    m = Model()
    m.add_predicate("Friend", 2, closed=True)
    m.add_predicate("Votes", 2, closed=False)
    m.add_rule("1: Friend(A, B) & Votes(B, P) -> Votes(A, P) ^2")
    m.add_rule("Votes(A, +P) = 1 .")
    m.add_data("Friend", "observations", pd.DataFrame([["me", "f1"]]))
    m.add_data("Votes", "observations", pd.DataFrame([["f1", "L", 0.9], ["f1", "C", 0.1]]))
    m.add_data("Votes", "targets", pd.DataFrame([["me", "L"], ["me", "C"]]))
    return m


def _crf_data():
    gen = np.random.default_rng(0)
    X = gen.normal(size=(30, 3))
    Y = (X + 0.5 * gen.normal(size=(30, 3)) > 0).astype(np.int64)
    return X, Y


def _clique_call(name):
    from tractable import clique

    phi = np.array([[1.0, 0.0], [0.0, 1.0], [0.2, 0.0]])
    return lambda **kw: getattr(clique, name)(phi, clique.Potts(1.0), **kw)


_IO_FUNCTIONS = (
    "read_evidence",
    "read_factor_graph",
    "read_map",
    "read_mar",
    "read_uai",
    "write_evidence",
    "write_factor_graph",
    "write_map",
    "write_mar",
    "write_mmp",
    "write_pr",
    "write_uai",
)


def _io_call(name):
    """A call of ``tractable.io.<name>`` on files of the tiny graph in a fresh temporary folder."""
    import io as stdio
    import tempfile
    from pathlib import Path

    from tractable import io

    def call(**kw):
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            fg = _tiny_graph()
            io.write_uai(d / "m.uai", fg)
            io.write_factor_graph(d / "m.json", fg)
            io.write_evidence(d / "m.evid", {2: 1})
            io.write_map(d / "m.MAP", [0, 1, 0])
            io.write_mar(d / "m.MAR", np.full((3, 2), 0.5))
            args = {
                "read_evidence": (d / "m.evid",),
                "read_factor_graph": (d / "m.json",),
                "read_map": (d / "m.MAP",),
                "read_mar": (d / "m.MAR",),
                "read_uai": (d / "m.uai",),
                "write_evidence": (d / "e.evid", {0: 1}),
                "write_factor_graph": (d / "w.json", fg),
                "write_map": (stdio.StringIO(), [0, 1, 0]),
                "write_mar": (stdio.StringIO(), np.full((3, 2), 0.5)),
                "write_mmp": (stdio.StringIO(), [0, 1, 0], np.full((3, 2), 0.5)),
                "write_pr": (stdio.StringIO(), 1.5),
                "write_uai": (d / "w.uai", fg),
            }[name]
            return getattr(io, name)(*args, **kw)

    return call


def _conll_document():
    from tractable.datasets import Document, Sentence

    words = ("Jordan", "met", "Jordan")
    return Document((Sentence(words, ("NNP", "VBD", "NNP"), ("B-NP", "B-VP", "B-NP"), ("B-PER", "O", "B-LOC")),))


def _calls():
    """How to call every public function on a small model: ``"module.name" -> call(**extra)``.

    ``extra`` is passed through as keyword arguments, so the test can also check that an unknown option
    is rejected. Classes are checked through the results and objects these calls build.
    """
    from tractable import bp, cardinality, clique, crf, datasets, exact, hlmrf, psl, sampling

    fg = _tiny_graph
    theta = np.array([0.3, -1.0, 2.0])
    f = np.array([0.0, 1.0, -np.inf, 0.5])
    phi = np.array([[1.0, 0.0], [0.0, 1.0], [0.2, 0.0]])
    unary, edges, pairwise = np.zeros((3, 2)), [[0, 1]], np.zeros((1, 2, 2))
    return {
        "tractable.exact.elimination_order": lambda **kw: exact.elimination_order(fg(), **kw),
        "tractable.crf.chain_map": lambda **kw: crf.chain_map(phi, np.zeros((2, 2)), lengths=[2, 1], **kw),
        "tractable.datasets.collective_factor_graph": lambda **kw: datasets.collective_factor_graph(
            phi, np.zeros((2, 2)), [2, 1], [[0, 2]], clique.Potts(1.0), **kw
        ),
        "tractable.datasets.collective_map": lambda **kw: datasets.collective_map(
            phi, np.zeros((2, 2)), [2, 1], [[0, 2]], clique.Potts(1.0), **kw
        ),
        "tractable.datasets.conll2003_available": lambda **kw: datasets.conll2003_available("testa", **kw),
        "tractable.datasets.entity_spans": lambda **kw: datasets.entity_spans(["B-PER", "I-PER", "O"], **kw),
        "tractable.datasets.iob1_to_iob2": lambda **kw: datasets.iob1_to_iob2(["I-PER", "B-PER"], **kw),
        "tractable.datasets.load_conll2003": None,  # reads a file: tests/test_conll2003.py
        "tractable.datasets.majority_weights": lambda **kw: datasets.majority_weights([_conll_document()], **kw),
        "tractable.datasets.repeated_token_cliques": lambda **kw: datasets.repeated_token_cliques(
            _conll_document(), **kw
        ),
        "tractable.datasets.span_f1": lambda **kw: datasets.span_f1([["B-PER", "O"]], [["B-PER", "O"]], **kw),
        "tractable.datasets.tag_ids": lambda **kw: datasets.tag_ids(["O", "B-LOC"], **kw),
        "tractable.exact.enumerate_map": lambda **kw: exact.enumerate_map(fg(), **kw),
        "tractable.exact.enumerate_marginals": lambda **kw: exact.enumerate_marginals(fg(), **kw),
        "tractable.exact.infer": lambda **kw: exact.infer(fg(), task="marginals", evidence={2: 1}, **kw),
        "tractable.exact.variable_elimination": lambda **kw: exact.variable_elimination(fg(), task="map", **kw),
        "tractable.bp.loopy": lambda **kw: bp.loopy(fg(), task="marginals", **kw),
        "tractable.bp.register": None,  # registers a handler: covered by tests/bp (a new factor type)
        "tractable.bp.tree_map": lambda **kw: bp.tree_map(unary, edges, pairwise, **kw),
        "tractable.bp.tree_marginals": lambda **kw: bp.tree_marginals(unary, edges, pairwise, **kw),
        "tractable.bp.tree_marginals_batch": lambda **kw: bp.tree_marginals_batch(
            np.zeros((2, 3, 2)), [edges, edges], [pairwise, pairwise], **kw
        ),
        "tractable.cardinality.chain_marginals": lambda **kw: cardinality.chain_marginals(theta, f, **kw),
        "tractable.cardinality.log_partition": lambda **kw: cardinality.log_partition(theta, f, **kw),
        "tractable.cardinality.map_assignment": lambda **kw: cardinality.map_assignment(theta, f, **kw),
        "tractable.cardinality.marginals": lambda **kw: cardinality.marginals(theta, f, **kw),
        "tractable.cardinality.marginals_batch": lambda **kw: cardinality.marginals_batch(
            np.stack([theta, theta]), f, **kw
        ),
        "tractable.cardinality.sample": lambda **kw: cardinality.sample(theta, f, size=2, rng=0, **kw),
        **{
            f"tractable.clique.{name}": _clique_call(name)
            for name in ("alpha_expansion", "alpha_pass", "clique_map", "exact_clique_map", "generalized_alpha_pass")
        },
        "tractable.clique.icm": lambda **kw: clique.icm(phi, clique.Potts(1.0), rng=0, **kw),
        "tractable.clique.alpha_pass_batch": lambda **kw: clique.alpha_pass_batch(
            np.stack([phi, phi]), clique.Potts(1.0), **kw
        ),
        "tractable.clique.majority_alpha_pass": lambda **kw: clique.majority_alpha_pass(phi, np.eye(2), **kw),
        "tractable.clique.majority_exact": lambda **kw: clique.majority_exact(phi, np.eye(2), **kw),
        "tractable.clique.score": lambda **kw: clique.score(phi, clique.Potts(1.0), np.array([0, 1, 0]), **kw),
        "tractable.hlmrf.local_update_reference": lambda **kw: hlmrf.local_update_reference(
            "hinge", np.array([0.2]), np.array([1.0]), 0.5, 1.0, 1.0, **kw
        ),
        "tractable.hlmrf.local_updates": lambda **kw: hlmrf.local_updates(
            "hinge", [0, 1], [1.0], [0.5], [1.0], np.array([0.2]), **kw
        ),
        "tractable.hlmrf.project_feasible": lambda **kw: hlmrf.project_feasible(
            _tiny_hlmrf(), np.zeros(_tiny_hlmrf().n_variables), **kw
        ),
        "tractable.hlmrf.solve": lambda **kw: hlmrf.solve(_tiny_hlmrf(), method="admm", **kw),
        "tractable.psl.evaluate_predicate": lambda **kw: psl.evaluate_predicate(
            __import__("pandas").DataFrame({0: ["a", "b"], "value": [0.9, 0.2]}),
            __import__("pandas").DataFrame({0: ["a", "b"], "value": [1.0, 0.0]}),
            1,
            **kw,
        ),
        "tractable.psl.evaluate_arrays": lambda **kw: psl.evaluate_arrays([0.9, 0.2], [1.0, 0.0], **kw),
        "tractable.psl.parse_rule": lambda **kw: psl.parse_rule("1: A(X) -> B(X) ^2", **kw),
        "tractable.psl.parse_rules": lambda **kw: psl.parse_rules("1: A(X) -> B(X) ^2", **kw),
        "tractable.crf.chow_liu_tree": lambda **kw: crf.chow_liu_tree(_crf_data()[1], **kw),
        "tractable.sampling.adaptive_mmp": lambda **kw: sampling.adaptive_mmp(fg(), rng=0, **kw),
        "tractable.sampling.gibbs": lambda **kw: sampling.gibbs(fg(), n_sweeps=50, rng=0, return_samples=True, **kw),
        "tractable.sampling.prune": lambda **kw: sampling.prune(
            fg(), np.array([True, False, False]), [0.2, 0, 0], **kw
        ),
        "tractable.distributed.alpha_pass_batches": lambda **kw: __import__(
            "tractable.distributed"
        ).distributed.alpha_pass_batches(np.stack([phi, phi]), clique.Potts(1.0), **kw),
        "tractable.distributed.marginals_batches": lambda **kw: __import__(
            "tractable.distributed"
        ).distributed.marginals_batches(np.stack([theta, theta]), f, **kw),
        "tractable.distributed.map_batches": lambda **kw: __import__("tractable.distributed").distributed.map_batches(
            cardinality.marginals_batch, [(np.stack([theta, theta]), np.stack([f, f]))], **kw
        ),
        "tractable.distributed.check_client": lambda **kw: __import__("tractable.distributed").distributed.check_client(
            None, allow_none=True, **kw
        ),
        "tractable.distributed.solve": None,  # needs a cluster: tests/distributed
        "tractable.io.from_pgmpy": None,  # pgmpy's models: tests/test_bnlearn_pgmpy.py
        "tractable.io.read_bif": None,  # pgmpy's reader: tests/test_bnlearn_pgmpy.py
        **{f"tractable.io.{n}": _io_call(n) for n in _IO_FUNCTIONS},
        "tractable.datasets.bipartite_matching": lambda **kw: datasets.bipartite_matching(3, 4, rng=0, **kw),
        "tractable.datasets.clique_benchmark": lambda **kw: datasets.clique_benchmark("POTTS", n=4, m=2, rng=0, **kw),
        "tractable.datasets.grid_factor_graph": lambda **kw: datasets.grid_factor_graph(2, 2, rng=0, **kw),
        "tractable.datasets.inpainting": lambda **kw: datasets.inpainting(size=(6, 6), rng=0, **kw),
        "tractable.datasets.load_yeast": lambda **kw: datasets.load_yeast(**kw),
        "tractable.datasets.opinion_diffusion": lambda **kw: datasets.opinion_diffusion(20, rng=0, **kw),
        "tractable.datasets.random_factor_graph": lambda **kw: datasets.random_factor_graph(3, 2, rng=0, **kw),
        "tractable.datasets.yeast_split": lambda **kw: datasets.yeast_split(**kw),
    }


def _object_results():
    """Results of the public classes' own inference methods and of the estimators' predictions."""
    from tractable import cardinality, crf, hlmrf

    theta = np.array([0.3, -1.0, 2.0])
    f = np.array([0.0, 1.0, -np.inf, 0.5])
    rec = cardinality.RecursiveCardinalityModel(3, [[0, 1, 2], [0, 1]], [f, [0.0, 0.2, -0.3]], theta)
    tree = cardinality.TreeCardinalityModel([[0, 1], [1, 2]], np.zeros((2, 2, 2)), theta, f)
    X, Y = _crf_data()
    out = {
        "cardinality.RecursiveCardinalityModel.marginals": rec.marginals(),
        "cardinality.RecursiveCardinalityModel.map_assignment": rec.map_assignment(),
        "cardinality.TreeCardinalityModel.marginals": tree.marginals(),
        "cardinality.TreeCardinalityModel.map_assignment": tree.map_assignment(),
        "hlmrf.solve(highs)": hlmrf.solve(_tiny_hlmrf(), method="highs"),
        "bp.loopy(map)": __import__("tractable.bp").bp.loopy(_tiny_graph(), task="map"),
        "psl.Model.infer": _tiny_psl().infer()[1],
    }
    for est in (crf.TreeCRF(C=1.0), crf.ESSCRF(crf.ConditionalChowLiu(C=1.0), C=1.0)):
        est.fit(X, Y)
        assert est.predict(X).dtype == np.int64, type(est).__name__
    return out


def test_every_public_name_has_a_grammar_row():
    """Generated from every ``__all__``: a new public function without a row here fails, as in test_hostile."""
    import inspect

    calls = _calls()
    missing = [
        f"{module}.{name}"
        for module, name, obj in _public_names()
        if inspect.isfunction(obj) and f"{module}.{name}" not in calls
    ]
    assert not missing, f"public functions without a row in _calls(): {missing}"


def test_every_public_result_type_derives_from_the_one_result_base():
    import inspect

    from tractable._results import Result

    for module, name, obj in _public_names():
        if inspect.isclass(obj) and (name.endswith("Result") or name.endswith("Marginals") or "Batch" in name):
            assert issubclass(obj, Result) and dataclasses.is_dataclass(obj), f"{module}.{name}"
            assert obj.__dataclass_params__.frozen, f"{module}.{name} is not frozen"


def _results():
    """One result of every kind the library returns: every public function's, keyed by its name."""
    import importlib.util

    from tractable._results import Result

    out = {}
    for qual, call in _calls().items():
        if call is None:
            continue
        if ".distributed." in qual and importlib.util.find_spec("distributed") is None:
            continue
        res = call()
        if isinstance(res, Result):
            out[qual] = res
    out.update(_object_results())
    return out


@pytest.fixture(scope="module")
def results():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return _results()


@pytest.mark.parametrize("qual", sorted(k for k, v in _calls().items() if v is not None))
def test_an_unknown_option_is_rejected(qual):
    """Generated from every ``__all__``: a misspelt option is an error, never silently ignored."""
    import importlib.util

    if ".distributed." in qual and importlib.util.find_spec("distributed") is None:
        pytest.skip("dask.distributed is not installed")
    with pytest.raises((TypeError, ValueError), match="not_an_option"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _calls()[qual](not_an_option=1)


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
            assert res.assignment.dtype == np.int64, name
            if res.assignment.ndim == 1:
                assert isinstance(res.score, float), name


def test_binary_marginals_are_n_by_2_everywhere(results):
    for name, res in results.items():
        if hasattr(res, "marginals") and not hasattr(res, "x"):
            m = res.marginals
            assert isinstance(m, np.ndarray) and m.shape[-1] == 2, (name, getattr(m, "shape", type(m)))
            np.testing.assert_allclose(m.sum(axis=-1), 1.0, atol=1e-12, err_msg=name)


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
        ("exact", lambda m: m.infer(_tiny_graph(), task="marginals", method="nope")),
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
