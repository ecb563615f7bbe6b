"""The import graph of ``src/tractable`` follows the library's layers (``docs/architecture.md``).

Every module is parsed with ``ast``; its imports are collected wherever they are written (function-local
imports included), relative imports resolved, and ``"tractable.x.y"`` / ``"tractable.x.y:function"``
string constants counted as imports too (the command line and the demo import their providers lazily
from such tables). A module belongs to a *unit*: a top-level module (``_results``, ``factorgraph``), a
subpackage (``bp``, ``crf``, ...) or the package's ``__init__`` (``tractable``). ``LAYERS`` is the table:
a unit may import its own modules, layer 0, layer 1 from layer 2 up, and the units listed for it;
``datasets``, the demo and the command line, which sit on top, may import anything below them. The base
areas of layer 2 import none of each other, and no two units import each other, even indirectly.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "tractable"

#: unit: (layer, the units above layer 0 it may import besides its own). Every unit may import layer 0,
#: and every unit of layers 2-5 layer 1 too; ``ANY_BELOW`` lets a unit import every unit of a lower layer.
ANY_BELOW = "<any unit of a lower layer>"
LAYERS: dict[str, tuple[int, tuple[str, ...]]] = {
    # (0) private primitives, shared by every area (they may import each other)
    "_results": (0, ()),
    "_validate": (0, ()),
    "_errors": (0, ()),
    "_logspace": (0, ()),
    "_random": (0, ()),
    "_forest": (0, ()),
    "_numba": (0, ()),
    "_count_tree": (0, ()),
    # (1) the model layer and its file formats
    "factorgraph": (1, ("potentials",)),
    "_evidence": (1, ("factorgraph",)),  # conditioning a FactorGraph on evidence, and scattering back
    "_compiled_graph": (1, ("factorgraph",)),  # a FactorGraph compiled once into the arrays its engines share
    "io": (1, ("factorgraph", "potentials")),
    "potentials": (1, ()),  # the count-based clique potentials: a CliqueFactor's scores
    "tractable": (1, ("factorgraph",)),  # the package's own __init__: the public model names
    # (2) the base areas: none imports another
    "exact": (2, ()),
    "cardinality": (2, ()),
    "clique": (2, ()),
    "hlmrf": (2, ()),
    # (3) areas built on the base areas, each on the ones listed
    "bp": (3, ("cardinality", "clique")),  # count factors' and clique factors' messages
    "sampling": (3, ("bp",)),
    "crf": (3, ("bp",)),
    "distributed": (3, ("hlmrf", "clique", "cardinality")),
    "psl": (3, ("hlmrf", "distributed")),  # Dask: search learners' candidates, PSL programs on a cluster
    # (4) generators of the papers' benchmarks: they use the areas, never the other way
    "datasets": (4, (ANY_BELOW,)),
    # (5) the demo and the command line (whose `tractable demo` runs the demo)
    "demo": (5, (ANY_BELOW,)),
    "cli": (5, (ANY_BELOW, "demo")),
}


@functools.cache
def _modules() -> dict[str, tuple[Path, bool]]:
    """``{dotted name: (path, is a package __init__)}`` of every module under ``src/tractable``."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


_MODULE_STRING = re.compile(r"tractable(\.\w+)+(:\w+)?")


def _imports(name: str) -> set[str]:
    """The ``tractable`` modules ``name`` imports (each ``from m import x`` counts as ``m.x`` when that is a
    module, else as ``m``)."""
    modules = _modules()
    path, is_pkg = modules[name]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if is_pkg else name.rpartition(".")[0]
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "tractable")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                assert base, f"{name}: a relative import above the package"
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "tractable":
                continue
            for alias in node.names:
                full = f"{module}.{alias.name}"
                out.add(full if full in modules else module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if _MODULE_STRING.fullmatch(node.value):
                target = node.value.partition(":")[0]
                if target in modules:
                    out.add(target)
    return out


def _unit(module: str) -> str:
    """``tractable`` for the package's ``__init__``, else the first component below it."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "tractable"


def _allowed(unit: str, target: str) -> bool:
    """Whether a module of ``unit`` may import a module of ``target`` (by the table ``LAYERS``)."""
    layer, uses = LAYERS[unit]
    target_layer = LAYERS[target][0]
    return (
        target == unit
        or target_layer == 0
        or (target_layer == 1 and layer >= 2)
        or target in uses
        or (ANY_BELOW in uses and target_layer < layer)
    )


def _violations() -> dict[str, list[str]]:
    """``{module: [imported modules of a unit it may not import]}``."""
    out = {}
    for module in _modules():
        bad = sorted(t for t in _imports(module) if not _allowed(_unit(module), _unit(t)))
        if bad:
            out[module] = bad
    return out


def test_every_unit_has_a_layer():
    units = {_unit(m) for m in _modules()}
    missing = sorted(units - set(LAYERS))
    assert not missing, f"units without a row in LAYERS (add them at their layer): {missing}"


def test_no_module_imports_a_higher_layer_or_a_sibling_area():
    found = _violations()
    lines = [f"{m} ({_unit(m)}, layer {LAYERS[_unit(m)][0]}) imports {', '.join(v)}" for m, v in found.items()]
    assert not found, "imports against the layers of docs/architecture.md:\n" + "\n".join(lines)


def test_no_import_cycle_between_units():
    graph: dict[str, set[str]] = {}
    for module in _modules():
        graph.setdefault(_unit(module), set()).update(_unit(t) for t in _imports(module))
    for unit, targets in graph.items():
        targets.discard(unit)
    done: set[str] = set()

    def visit(unit: str, path: list[str]) -> None:
        if unit in path:
            cycle = path[path.index(unit) :] + [unit]
            pytest.fail("import cycle between units: " + " -> ".join(cycle))
        if unit in done:
            return
        for target in sorted(graph.get(unit, ())):
            visit(target, [*path, unit])
        done.add(unit)

    for unit in sorted(graph):
        visit(unit, [])


def test_the_scan_sees_relative_local_and_lazy_imports():
    """The parser itself: a relative import resolves, a function-local import counts, and the model layer
    no longer reaches into an algorithm area for its count tree."""
    assert "tractable._count_tree" in _imports("tractable.factorgraph")
    assert not any(_unit(t) == "cardinality" for t in _imports("tractable.factorgraph"))
    assert "tractable.bp" in _imports("tractable.crf.tree_crf")  # `from .. import bp as _bp`
    assert "tractable._forest" in _imports("tractable.crf.tree_crf")  # imported inside a method
    assert _allowed("crf", "bp") and not _allowed("cardinality", "clique") and not _allowed("crf", "datasets")
    assert _allowed("datasets", "clique") and not _allowed("clique", "datasets") and _allowed("cli", "demo")
