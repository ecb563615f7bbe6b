"""The documentation (README.md and docs/*.md) is checked block by block and name by name.

**1. Every block runs on its own.** Each fenced ```python block runs in a fresh namespace (a new dict: modules
are shared through ``sys.modules``, names are not) in a temporary working directory, so a block that forgets
an import fails. A block may build on the block just before it on the same page only when the last non-blank
line above its fence is the HTML comment ``<!-- continues -->`` (invisible on the rendered page): it then runs
in that block's namespace, and the chain is one test. Keep such chains rare.

**2. Shown values are checked claims**, written one of two ways:

* a doctest: a ```python block whose code lines start with ``>>>`` is run by ``doctest`` (flags
  ``NORMALIZE_WHITESPACE | ELLIPSIS``), which compares each example's output with the lines below it;
* in a script block, a trailing comment ``# -> EXPECTED`` on an expression statement (on any of its lines).
  For a ``print(...)`` call the claim is about the text it printed; for any other expression, about the
  value's ``repr`` as a Python prompt would show it. NumPy prints with ``legacy="1.25"`` in both, so a
  scalar shows as ``1.6``, not ``np.float64(1.6)``. A statement run several times (in a loop) is checked
  on all its output together; one that never runs fails the test.

  ``EXPECTED`` matches the output as follows:

  * whitespace is free (it may differ, be missing or be added between tokens);
  * ``...`` matches any text;
  * **a number matches to the digits written**: the printed number may differ by at most half a unit in the
    last written digit, so ``0.65`` accepts 0.645 to 0.655, ``3`` accepts 2.5 to 3.5 and ``1.2e-05`` accepts
    1.15e-05 to 1.25e-05 (``inf``, ``-inf`` and ``nan`` match exactly). When ``EXPECTED`` ends with
    ``(± TOL)``, ``TOL`` is instead the absolute tolerance of every number in it;
  * any other text must be equal.

  A second ``#`` after ``EXPECTED`` starts a free note, e.g. ``print(p)  # -> [0.6 0.4]  # P(rain | wet)``.

**3. Names of code in the prose resolve.** Every inline code span outside the fenced blocks that is a dotted
name (``tractable.exact.infer``, ``bp.loopy``, ``hlmrf.solve``, ``HLMRF.fix``, ``BPResult.task``),
optionally called (``hlmrf.solve(model, method="highs")``), must resolve to a real attribute when its first
part is ``tractable``, one of tractable's modules or a public name of tractable or of one of its areas; the
keywords of such a call, and the parameter names of a signature written out
(``exact.infer(fg, *, task="marginals")``), must be parameters of the callable. A span that is a path of the
repository (``tests/...``, ``benchmarks/...``, ``src/...``, or a ``name.py``) must exist. Spans whose first
part is no name of ours (``np.log``, ``res.marginals``, ``dask.array``) are not checked; ``NOT_OURS`` lists
the few that look like ours but are not.
"""

from __future__ import annotations

import ast
import dataclasses
import doctest
import importlib
import inspect
import io
import math
import pkgutil
import re
import sys
import textwrap
import tokenize
from pathlib import Path

import numpy as np
import pytest

import tractable

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CONTINUES = "<!-- continues -->"
FENCE = re.compile(r"^```(\S*)\s*$")

# Dotted names in docs that start like ours but name something else: Dask's serializer
# (`distributed.protocol.serialize`, docs/distributed.md).
NOT_OURS = {"distributed.protocol.serialize"}


# --------------------------------------------------------------------------------------------- the pages
@dataclasses.dataclass(frozen=True)
class Block:
    page: str
    line: int  # 1-based line of the block's first code line
    code: str
    continues: bool

    @property
    def doctest(self) -> bool:
        return any(line.lstrip().startswith(">>>") for line in self.code.splitlines())


def _blocks(page: Path) -> list[Block]:
    """The fenced ```python blocks of a page, with their line numbers and continuation markers."""
    lines = page.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if m.group(1) == "python":
            before = [ln.strip() for ln in lines[:i] if ln.strip()]
            marked = bool(before) and before[-1] == CONTINUES
            out.append(Block(page.name, i + 2, "\n".join(lines[i + 1 : j]) + "\n", marked))
        i = j + 1
    return out


def _chains() -> list[list[Block]]:
    chains = []
    for page in PAGES:
        for block in _blocks(page):
            if block.continues:
                assert chains and chains[-1][-1].page == block.page, (
                    f"{block.page}:{block.line}: `{CONTINUES}` before the page's first block"
                )
                chains[-1].append(block)
            else:
                chains.append([block])
    return chains


CHAINS = _chains()


# ------------------------------------------------------------------------------------ `# ->` claims
_NUM = r"(?:[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|-?inf|nan)"
_NUM_TOKEN = re.compile(rf"(?<![\w.]){_NUM}(?![\w.])")
_TOL = re.compile(r"\(±\s*([^)]+)\)\s*$")


def _claim_text(comment: str) -> str | None:
    """``EXPECTED`` of a ``# -> EXPECTED  # note`` comment, or None when the comment is no claim."""
    body = comment[1:].strip()
    if not body.startswith("->"):
        return None
    return body[2:].split(" #", 1)[0].strip()


def _half_unit(text: str) -> float:
    """Half a unit in the last written digit of a number as written: 0.65 -> 0.005, 3 -> 0.5."""
    mantissa, _, exponent = text.lower().lstrip("+-").partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals + (int(exponent) if exponent else 0))


def match_claim(expected: str, output: str) -> str | None:
    """None when ``output`` satisfies the claim ``expected`` (rules in the module docstring), else why not."""
    tol = None
    m = _TOL.search(expected)
    if m:
        tol = float(m.group(1))
        expected = expected[: m.start()].rstrip()
    pattern, numbers, pos = [r"\s*"], [], 0
    for tok in re.finditer(rf"\.\.\.|{_NUM_TOKEN.pattern}", expected):
        pattern += [re.escape(c) + r"\s*" for c in expected[pos : tok.start()] if not c.isspace()]
        if tok.group() == "...":
            pattern.append(r".*?\s*")
        else:
            numbers.append(tok.group())
            pattern.append(rf"(?<![\w.])({_NUM})(?![\w.])\s*")
        pos = tok.end()
    pattern += [re.escape(c) + r"\s*" for c in expected[pos:] if not c.isspace()]
    found = re.fullmatch("".join(pattern), output, re.S)
    if found is None:
        return f"the output {output.strip()!r} does not have the form {expected!r}"
    for want, got in zip(numbers, found.groups()):
        w, g = float(want), float(got)
        if math.isnan(w) or math.isinf(w):
            ok = (math.isnan(w) and math.isnan(g)) or w == g
        else:
            ok = abs(g - w) <= (tol if tol is not None else _half_unit(want)) * (1 + 1e-12)
        if not ok:
            bound = f"± {tol}" if tol is not None else "to the digits written"
            return f"printed {got} where the page claims {want} ({bound}); output {output.strip()!r}"
    return None


class _Claims(ast.NodeTransformer):
    """Rewrites each statement that carries a ``# -> EXPECTED`` comment so that its output is recorded."""

    def __init__(self, claims: dict[int, str], where: str):
        self.claims, self.where, self.found = claims, where, {}

    def visit_Expr(self, node):
        lines = [ln for ln in self.claims if node.lineno <= ln <= node.end_lineno]
        if not lines:
            return node
        assert len(lines) == 1, f"{self.where}: one `# ->` claim per statement (lines {lines})"
        key = lines[0]
        self.found[key] = self.claims[key]
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print":
            new = ast.Call(ast.Name("__doc_print__", ast.Load()), [ast.Constant(key), *call.args], call.keywords)
        else:
            new = ast.Call(ast.Name("__doc_show__", ast.Load()), [ast.Constant(key), call], [])
        return ast.copy_location(ast.Expr(ast.copy_location(new, node)), node)


def _instrument(block: Block) -> tuple[ast.Module, dict[int, str]]:
    claims = {}
    for tok in tokenize.generate_tokens(io.StringIO(block.code).readline):
        if tok.type == tokenize.COMMENT and (text := _claim_text(tok.string)) is not None:
            claims[tok.start[0]] = text
    tree = ast.parse(block.code, filename=block.page)
    where = f"{block.page}:{block.line}"
    visitor = _Claims(claims, where)
    tree = ast.fix_missing_locations(visitor.visit(tree))
    stray = sorted(set(claims) - set(visitor.found))
    assert not stray, f"{where}: `# ->` claims must end an expression statement; lines {stray} of the block"
    ast.increment_lineno(tree, block.line - 1)
    return tree, {k + block.line - 1: v for k, v in claims.items()}


def _run_script(block: Block, namespace: dict) -> None:
    tree, claims = _instrument(block)
    outputs: dict[int, str] = {}

    def doc_print(key, *args, **kwargs):
        kwargs.pop("file", None)
        buf = io.StringIO()
        with np.printoptions(legacy="1.25"):
            print(*args, file=buf, **kwargs)
        outputs[key + block.line - 1] = outputs.get(key + block.line - 1, "") + buf.getvalue()
        sys.stdout.write(buf.getvalue())

    def doc_show(key, value):
        with np.printoptions(legacy="1.25"):
            text = repr(value) + "\n"
        outputs[key + block.line - 1] = outputs.get(key + block.line - 1, "") + text

    namespace.update(__doc_print__=doc_print, __doc_show__=doc_show)
    exec(compile(tree, block.page, "exec"), namespace)
    for line, expected in claims.items():
        assert line in outputs, f"{block.page}:{line}: the statement of this `# ->` claim never ran"
        why = match_claim(expected, outputs[line])
        assert why is None, f"{block.page}:{line}: {why}"


def _run_doctest(block: Block, namespace: dict) -> None:
    test = doctest.DocTestParser().get_doctest(block.code, namespace, block.page, block.page, block.line - 1)
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    result = runner.run(test, out=report.append, clear_globs=False)
    namespace.update(test.globs)
    assert result.attempted > 0 and result.failed == 0, "".join(report)


@pytest.mark.parametrize("chain", CHAINS, ids=[f"{c[0].page}:{c[0].line}" for c in CHAINS])
def test_each_block_runs_on_its_own_and_its_claims_hold(chain, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # blocks that write files write them here
    namespace: dict = {"__name__": "__doc_block__"}
    for block in chain:
        (_run_doctest if block.doctest else _run_script)(block, namespace)


def test_every_page_with_code_is_checked():
    pages = {c[0].page for c in CHAINS}
    assert pages >= {"README.md", "exact.md", "cardinality.md", "bp.md", "sampling.md", "psl.md", "distributed.md"}


@pytest.mark.parametrize(
    ("expected", "output", "ok"),
    [
        ("0.65", "0.6512\n", True),
        ("0.65", "0.656\n", False),
        ("me L 0.65, me C 0.35", "me L 0.6500001, me C 0.3499\n", True),
        ("[0.3 0.2]", "[0.30561 0.22]\n", True),
        ("[0.3 0.2]", "[0.3 0.2 0.1]\n", False),
        ("array([0., -inf])", "array([  0., -inf])", True),
        ("(3, 6) ...", "(3, 6) 0.0 1.0", True),
        ("0.65 (± 0.1)", "0.7", True),
        ("1.2e-05", "1.24e-05", True),
        ("'completed'", "'converged'", False),
        ("True 3", "True 4", False),
    ],
)
def test_the_claim_convention(expected, output, ok):
    assert (match_claim(expected, output) is None) == ok


# ------------------------------------------------------------------------------------- names of code
def _modules() -> dict[str, str]:
    """First parts that name our code: tractable's modules and subpackages (``bp``, ``_validate``), modules
    inside them whose short name is unique (``partition``, ``convolution_tree``), mapped to a full name."""
    full = {}
    for info in pkgutil.walk_packages(tractable.__path__, "tractable.", onerror=lambda _: None):
        full.setdefault(info.name.rsplit(".", 1)[1], []).append(info.name)
    out = {short: names[0] for short, names in full.items() if len(names) == 1}
    for info in pkgutil.iter_modules(tractable.__path__):  # top-level ones win over nested namesakes
        out[info.name] = f"tractable.{info.name}"
    out["tractable"] = "tractable"
    return out


def _classes() -> dict[str, object]:
    """First parts that are our classes: the public names of tractable and of its areas, and any class defined
    in one of tractable's modules whose name is unique (``GroundModel``, ``Partition``, ``BlockActor``)."""
    found: dict[str, list] = {}
    for info in pkgutil.walk_packages(tractable.__path__, "tractable.", onerror=lambda _: None):
        if info.name.endswith("__main__"):  # running it would run the command line
            continue
        try:
            mod = importlib.import_module(info.name)
        except ImportError:  # an optional dependency is missing
            continue
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and obj.__module__ == info.name and name[:1].isupper():
                found.setdefault(name, []).append(obj)
    out = {name: objs[0] for name, objs in found.items() if len(objs) == 1}
    for info in pkgutil.iter_modules(tractable.__path__):
        if not info.name.startswith("_"):
            mod = importlib.import_module(f"tractable.{info.name}")
            out.update({n: getattr(mod, n) for n in getattr(mod, "__all__", ()) if n[:1].isupper()})
    out.update({n: getattr(tractable, n) for n in tractable.__all__ if n[:1].isupper()})
    return out


def _instance_attributes(cls) -> set[str]:
    """Names a class's methods assign on ``self`` (``self.solve_options = {}`` in ``__init__``)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)) if cls.__module__.startswith("tractable") else "")
    except (OSError, TypeError, SyntaxError):
        return set()
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }


def _has(obj, attr: str) -> bool:
    if hasattr(obj, attr):
        return True
    if inspect.isclass(obj):  # dataclass fields without defaults and instance attributes are no class attributes
        if dataclasses.is_dataclass(obj) and attr in {f.name for f in dataclasses.fields(obj)}:
            return True
        return any(attr in getattr(k, "__annotations__", {}) or attr in _instance_attributes(k) for k in obj.__mro__)
    return False


def _resolve(dotted: str, modules, public):
    parts = dotted.split(".")
    if parts[0] in public and parts[0] not in modules:
        obj, done = public[parts[0]], parts[0]
    else:
        done = modules[parts[0]]
        obj = importlib.import_module(done)
    for part in parts[1:]:
        if _has(obj, part):
            obj = getattr(obj, part, None)  # None: a field without a class-level value
        elif inspect.ismodule(obj):
            obj = importlib.import_module(f"{obj.__name__}.{part}")
        else:
            raise AttributeError(f"`{done}` has no attribute `{part}`")
        done += f".{part}"
    return obj


def _parameters(text: str) -> dict[str, object] | None:
    """Keywords of a call span, or the parameters of a signature span, each with its written default
    (``_NO_DEFAULT`` when none is written or it is no literal); None when neither parses."""
    try:
        node = ast.parse(text, mode="eval").body
        if isinstance(node, ast.Call):
            return {k.arg: _NO_DEFAULT for k in node.keywords if k.arg}
    except SyntaxError:
        pass
    args = text[text.index("(") + 1 : text.rindex(")")]
    try:
        fn = ast.parse(f"def _({args}): pass").body[0]
    except SyntaxError:
        return None
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = {}
    for arg, default in [*zip(positional, defaults), *zip(a.kwonlyargs, a.kw_defaults)]:
        try:
            out[arg.arg] = _NO_DEFAULT if default is None else ast.literal_eval(default)
        except ValueError:
            out[arg.arg] = _NO_DEFAULT
    return out


_NO_DEFAULT = object()
_SPAN = re.compile(r"(?<!`)`([^`]+)`(?!`)")
_DOTTED = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(\(.*\))?", re.S)
_PATH = re.compile(r"(?:src|tests|benchmarks|examples|docs|fuzz|\.ci)/[\w./-]+|[\w-]+\.py")


def _spans(page: Path):
    """(line, text) of the inline code spans of a page's prose (fenced blocks left out); a span may run over
    a line break within a paragraph, and its whitespace is then one space."""
    lines, in_fence = [], False
    for line in page.read_text().splitlines():
        fence = line.startswith("```")
        lines.append("" if fence or in_fence else re.sub(r"``.*?``", "", line))
        in_fence ^= fence
    text = "\n".join(lines)
    for paragraph in re.finditer(r"(?:[^\n]+\n?)+", text):
        for m in _SPAN.finditer(paragraph.group()):
            line = text.count("\n", 0, paragraph.start() + m.start()) + 1
            yield line, " ".join(m.group(1).split())


def _name_problems(page: Path, modules, public) -> list[str]:
    problems = []
    files = {p.name for d in ("src", "benchmarks", "examples", "tests", "fuzz") for p in (ROOT / d).rglob("*.py")}
    for n, span in _spans(page):
        where = f"{page.name}:{n}: `{span}`"
        if _PATH.fullmatch(span):
            if not ((ROOT / span).exists() if "/" in span else span in files):
                problems.append(f"{where}: no such file")
            continue
        m = _DOTTED.fullmatch(span)
        if not m or m.group(1) in NOT_OURS:
            continue
        dotted = m.group(1)
        if dotted.split(".")[0] not in modules and dotted.split(".")[0] not in public:
            continue
        try:
            obj = _resolve(dotted, modules, public)
        except (AttributeError, ImportError) as err:
            problems.append(f"{where}: {err}")
            continue
        if m.group(2) and callable(obj):
            written = _parameters(span)
            try:
                params = inspect.signature(obj).parameters
            except (TypeError, ValueError):
                continue
            if written is None:
                continue
            if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
                missing = [k for k in written if k not in params]
                if missing:
                    problems.append(f"{where}: `{dotted}` takes no parameter {', '.join(map(repr, missing))}")
            for name, default in written.items():
                real = params[name].default if name in params else inspect.Parameter.empty
                if default is not _NO_DEFAULT and real is not inspect.Parameter.empty and real != default:
                    problems.append(f"{where}: the default of `{name}` is {real!r}, not {default!r}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_names_of_code_resolve(page):
    problems = _name_problems(page, _modules(), _classes())
    assert not problems, "\n".join(problems)
