"""The factor-graph file format of ``tractable``: every factor type of :mod:`tractable.factorgraph` in JSON.

UAI files (:mod:`tractable.io.uai`) hold dense tables only; this format holds the factors the library
exploits as they are — table, cardinality (also counting one state of multi-state variables), recursive
cardinality and count-based clique factors — so that ``tractable solve`` and every engine take them from
a file. Field names are the constructors' argument names, so a file reads like the Python that builds it::

    {"format": "tractable-factor-graph", "version": 1,
     "cardinalities": [2, 2, 2, 3, 3],
     "names": ["a", "b", "c", "d", "e"],                  optional, default "x0", "x1", ...
     "state_names": [["no", "yes"], ...],                  optional, one list per variable
     "constant": 0.0,                                      optional, default 0
     "factors": [
      {"type": "table", "variables": [0, 1], "log_table": [[0.0, 1.5], [1.5, "-inf"]]},
      {"type": "cardinality", "variables": [0, 1, 2], "log_potentials": [0, 0, 1, "-inf"]},
      {"type": "cardinality", "variables": [3, 4], "log_potentials": [0, 1, 0], "label": 2, "n_states": 3},
      {"type": "recursive_cardinality", "variables": [0, 1, 2], "subsets": [[0, 1], [0, 1, 2]],
       "count_potentials": [[0, 0, "-inf"], [0, 1, 2, 3]]},
      {"type": "clique", "variables": [3, 4], "potential": {"type": "potts", "lam": 0.5}}
     ]}

* ``"table"`` is :class:`~tractable.TableFactor` (``variables``, ``log_table``: nested lists, one level per
  variable, the first variable outermost; a factor over no variable has a number).
* ``"cardinality"`` is :class:`~tractable.CardinalityFactor` (``variables``, ``log_potentials``, and
  optionally ``label`` and ``n_states``: one integer or one per variable).
* ``"recursive_cardinality"`` is :class:`~tractable.RecursiveCardinalityFactor` (``variables``,
  ``subsets`` of graph variable indices, ``count_potentials``).
* ``"clique"`` is :class:`~tractable.CliqueFactor` (``variables``, ``potential``, and optionally
  ``n_states`` and ``fixed_counts``). The potential is an object whose ``"type"`` names its class and
  whose other fields are that class's constructor arguments: ``{"type": "potts", "lam": x}``, likewise
  ``"entropy"``, ``"makespan"``, ``"square_makespan"``; ``{"type": "sum", "table": [[...], ...]}`` and
  ``{"type": "max", "table": ...}`` (:class:`~tractable.clique.SumPotential`,
  :class:`~tractable.clique.MaxPotential`); ``{"type": "linear_majority", "W": [[...], ...]}``. The key is
  ``"type"``, not ``"family"``: :attr:`CliqueFactor.family` is the algorithmic family (``"sum"``, ``"max"``,
  ``"majority"``, ``"general"``), which several classes share. A
  :class:`~tractable.clique.CountPotential` wraps a Python function and has no file form.

Numbers are log-potentials (scores), as everywhere in the library. JSON has no infinity, so ``-inf`` (a
forbidden configuration, wherever the Python API allows it) is written as the string ``"-inf"``; NaN,
``Infinity``, ``+inf`` and numbers beyond float64's range are refused. Integers are JSON integers (not
``1.0``, not ``true``). Optional fields may be ``null`` (the Python default). Any other field, an unknown
factor or potential type, a repeated key, a repeated or out-of-range variable, a table whose shape is not
its variables' cardinalities, anything too large for this machine's memory (checked before it is
allocated), too deeply nested, or not UTF-8 raises ``ValueError`` naming the file and the place in it
(``factors[3].log_table[1]``). A file starting with the gzip magic bytes is decompressed first, whatever its
name; :func:`write_factor_graph` compresses when the name ends in ``.gz``.

Floats are written with Python's shortest round-trip representation, so ``read_factor_graph`` of a written
graph gives the same factors bit for bit (the same tables, potentials, subsets and labels).
"""

from __future__ import annotations

import gzip
import json
import math
import zlib
from pathlib import Path

import numpy as np

from .._errors import ModelError
from .._validate import MEMORY_FRACTION, check_memory, physical_memory
from ..factorgraph import CardinalityFactor, CliqueFactor, FactorGraph, RecursiveCardinalityFactor, TableFactor
from ..potentials import Entropy, LinearMajority, Makespan, MaxPotential, Potts, SquareMakespan, SumPotential
from .uai import _check_graph, _check_path

__all__ = ["FORMAT", "VERSION", "read_factor_graph", "write_factor_graph"]

#: The value of the ``"format"`` field that marks a file of this format.
FORMAT = "tractable-factor-graph"
#: The version this module writes (and the newest it reads).
VERSION = 1
#: How ``-inf`` is spelled in a file (JSON has no infinity).
NEG_INF = "-inf"

#: A lower bound of the memory each byte of JSON text needs while it is parsed (the text, its Python objects).
_BYTES_PER_CHAR = 4
#: Bytes each state of a variable needs at least in any engine (its marginal, a message or two).
_BYTES_PER_STATE = 16
#: The largest integer a file may hold where an index or a count is expected (what int64 holds).
_INT_MAX = 2**63 - 1
#: The largest sum of a clique factor's ``fixed_counts`` (counts of observed variables, far above any graph).
_MAX_FIXED = 2**40

_TOP_REQUIRED = ("format", "version", "cardinalities", "factors")
_TOP_OPTIONAL = ("names", "state_names", "constant")
#: factor type -> (required fields, optional fields), besides "type"
_FACTOR_FIELDS = {
    "table": (("variables", "log_table"), ()),
    "cardinality": (("variables", "log_potentials"), ("label", "n_states")),
    "recursive_cardinality": (("variables", "subsets", "count_potentials"), ()),
    "clique": (("variables", "potential"), ("n_states", "fixed_counts")),
}
#: potential type -> (class, its one constructor argument, whether that argument is a 2-D table)
_POTENTIALS = {
    "potts": (Potts, "lam", False),
    "entropy": (Entropy, "lam", False),
    "makespan": (Makespan, "lam", False),
    "square_makespan": (SquareMakespan, "lam", False),
    "sum": (SumPotential, "table", True),
    "max": (MaxPotential, "table", True),
    "linear_majority": (LinearMajority, "W", True),
}


class _Bad(ValueError):
    """Malformed content; the reader prefixes the file name."""


class _Invalid:
    """What the JSON parser gives for a number with no float64 value (NaN, Infinity, 1e999, huge integers),
    so that the check of the field that holds it names the place."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _parse_float(text: str):
    x = float(text)
    return _Invalid(text) if math.isinf(x) else x


def _parse_int(text: str):
    return _Invalid(text) if len(text) > 400 else int(text)  # beyond float64, and Python's 4300-digit limit


def _parse_constant(text: str):
    return _Invalid(text)


def _object(pairs):
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _Bad(f"the key {_show(dup)} appears twice in one object")
    return obj


def _show(value) -> str:
    """A short description of a JSON value for a message (never a recursive repr)."""
    if isinstance(value, _Invalid):
        return value.text[:40]
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    if isinstance(value, str):
        text = json.dumps(value)
        return text if len(text) <= 40 else text[:37] + '..."'
    if isinstance(value, list):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__  # pragma: no cover - JSON has no other values


def _kind(value) -> str:
    if isinstance(value, _Invalid):
        return f"a number out of range ({_show(value)})" if value.text[-1:].isdigit() else value.text
    return _show(value)


# ----------------------------------------------------------------------------- reading: bytes to JSON


def _read_text(path) -> str:
    """The file's text: gunzipped if it starts with the gzip magic bytes; refused if it cannot fit in memory."""
    name = str(path)
    memory = physical_memory()
    budget = None if not memory else int(memory * MEMORY_FRACTION) // _BYTES_PER_CHAR
    with open(path, "rb") as fh:
        if fh.read(2) == b"\x1f\x8b":
            fh.seek(0)
            raw = _gunzip(fh, name, budget)
        else:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(0)
            if budget is not None and size > budget:
                raise _Bad(f"the file holds {size} bytes, more than this machine's memory can parse (about {budget})")
            raw = fh.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _Bad(f"not UTF-8 text ({err.reason} at byte {err.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _gunzip(fh, name: str, budget: int | None) -> bytes:
    chunks, total = [], 0
    try:
        with gzip.GzipFile(fileobj=fh, mode="rb") as gz:
            while True:
                chunk = gz.read(1 << 20)
                if not chunk:
                    break
                total += len(chunk)
                if budget is not None and total > budget:
                    raise _Bad(
                        f"it decompresses to more than {budget} bytes, more than this machine's memory can parse"
                    )
                chunks.append(chunk)
    except (OSError, EOFError, zlib.error) as err:
        raise _Bad(f"not a valid gzip file ({err or type(err).__name__})") from None
    return b"".join(chunks)


def _parse(text: str):
    try:
        return json.loads(
            text,
            parse_float=_parse_float,
            parse_int=_parse_int,
            parse_constant=_parse_constant,
            object_pairs_hook=_object,
        )
    except json.JSONDecodeError as err:
        raise _Bad(f"not JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None
    except RecursionError:
        raise _Bad("not readable: the JSON is nested too deeply") from None


# ----------------------------------------------------------------------------- reading: checks of JSON values


def _fields(value, where: str, required, optional, what: str) -> dict:
    if not isinstance(value, dict):
        raise _Bad(f"{where} must be an object ({what}); got {_show(value)}")
    allowed = (*required, *optional)
    for key in value:
        if key not in allowed:
            listed = ", ".join(f'"{k}"' for k in allowed)
            raise _Bad(f"{where}: unknown field {_show(key)} of {what} (its fields are {listed})")
    for key in required:
        if key not in value:
            raise _Bad(f'{where}: {what} needs the field "{key}"')
    return value


def _int(value, where: str, lo: int = 0, hi: int = _INT_MAX) -> int:
    if type(value) is not int:
        raise _Bad(f"{where} must be an integer; got {_kind(value)}")
    if value < lo:
        raise _Bad(f"{where} must be an integer >= {lo}; got {_show(value)}")
    if value > hi:
        raise _Bad(f"{where} must be an integer <= {hi}; got {_show(value)}")
    return value


def _int_list(value, where: str, lo: int = 0, hi: int = _INT_MAX) -> list[int]:
    if not isinstance(value, list):
        raise _Bad(f"{where} must be a list of integers; got {_show(value)}")
    for i, x in enumerate(value):
        if type(x) is not int or not lo <= x <= hi:
            _int(x, f"{where}[{i}]", lo, hi)
    return value


def _float(value, where: str, allow_neginf: bool = True) -> float:
    return float(_floats([value], where, allow_neginf, flat=True)[0])


def _floats(leaves: list, where, allow_neginf: bool, shape=(), flat: bool = False) -> np.ndarray:
    """The leaves (JSON numbers, ``"-inf"``) as a float64 array; ``where(i)`` names leaf ``i`` in a message."""
    if all(type(x) is float or type(x) is int for x in leaves):
        try:
            return np.array(leaves, dtype=np.float64)
        except OverflowError:  # an integer beyond float64's range: found below
            pass
    out = np.empty(len(leaves))
    for i, x in enumerate(leaves):
        t = type(x)
        place = where if flat else where(i)
        try:
            ok = t is float or t is int
            out[i] = float(x) if ok else -np.inf
        except OverflowError:
            raise _Bad(f"{place} must be a number within float64's range; got {_show(x)}") from None
        if ok:
            continue
        if x == NEG_INF and t is str:
            if allow_neginf:
                continue
            raise _Bad(f'{place} must be a finite number; got "-inf"')
        want = 'a number or "-inf"' if allow_neginf else "a finite number"
        raise _Bad(f"{place} must be {want}; got {_kind(x)}")
    return out


def _array(value, where: str, ndim: int, allow_neginf: bool, shape=None, why: str = "") -> np.ndarray:
    """Nested lists of ``ndim`` levels as a float64 array (of ``shape`` when given), checked level by level
    without recursion: a ragged or mis-shaped list is named by its place, before anything is allocated."""
    level = [value]
    dims: list[int] = []

    def place(i: int) -> str:
        idx = np.unravel_index(i, dims) if dims else ()
        return where + "".join(f"[{int(j)}]" for j in idx)

    for d in range(ndim):
        if shape is not None:
            want = shape[d]
        else:  # the first row sets the length of every row of this level
            want = len(level[0]) if level and isinstance(level[0], list) else 0
        nxt: list = []
        for i, item in enumerate(level):
            if not isinstance(item, list):
                what = f"a list of {want} numbers or lists" if shape is not None else f"a {ndim - d}-level nested list"
                raise _Bad(f"{place(i)} must be {what}{why}; got {_show(item)}")
            if len(item) != want:
                raise _Bad(f"{place(i)} must have {want} entries{why}; got {len(item)}")
            nxt.extend(item)
        dims.append(want)
        level = nxt
    out = _floats(level, place, allow_neginf)
    return out.reshape(dims)


# ----------------------------------------------------------------------------- reading: the graph


def read_factor_graph(path) -> FactorGraph:
    """Read a factor-graph file (JSON, or gzipped JSON) written by :func:`write_factor_graph` or by hand.

    The format is described in :mod:`tractable.io.fgjson` and in ``docs/bp.md`` ("Factor-graph files").

    Parameters
    ----------
    path : str or os.PathLike
        A ``.json`` file, or a gzip-compressed one (recognized by its first bytes, whatever its name).

    Returns
    -------
    FactorGraph
        With the file's cardinalities, names, state names, constant and factors, in the file's order.

    Raises
    ------
    ValueError
        A malformed file: the message names the file and the place in it (``factors[2].variables``) and
        says what was expected (see the module's docstring for the checks).
    tractable.ZeroPartitionError
        A factor forbids every configuration (a count potential that is ``-inf`` at every count): the
        model has no solution (a ``ValueError`` too).
    OSError
        The file cannot be opened.
    TypeError
        ``path`` is not a file path.
    """
    _check_path(path)
    name = str(path)
    try:
        return _build(_parse(_read_text(path)))
    except _Bad as err:
        raise ValueError(f"{name}: {err}.") from None
    except ModelError as err:
        raise type(err)(f"{name}: {err}") from None


def _build(doc) -> FactorGraph:
    if not isinstance(doc, dict) or "format" not in doc:
        got = "an object without it" if isinstance(doc, dict) else _show(doc)
        raise _Bad(f'not a tractable factor graph: expected an object with "format": "{FORMAT}"; got {got}')
    if doc["format"] != FORMAT:
        raise _Bad(f'not a tractable factor graph: expected "format": "{FORMAT}"; got {_show(doc["format"])}')
    version = doc.get("version")
    if type(version) is int and version > VERSION:
        raise _Bad(f"the file's version {version} is newer than this tractable reads ({VERSION}); upgrade tractable")
    if version != VERSION or type(version) is not int:
        raise _Bad(f'"version" must be {VERSION}; got {_show(version) if "version" in doc else "none"}')
    _fields(doc, "the file", _TOP_REQUIRED, _TOP_OPTIONAL, "a factor graph")
    card = _int_list(doc["cardinalities"], "cardinalities", lo=2)
    _check_size(len(card) + sum(card), _BYTES_PER_STATE, "cardinalities", "variable states (marginals, messages)")
    names = doc.get("names")
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(s, str) for s in names):
            bad = names if not isinstance(names, list) else next(s for s in names if not isinstance(s, str))
            raise _Bad(f"names must be a list of strings; got {_show(bad)}")
    state_names = doc.get("state_names")
    if state_names is not None:
        if not isinstance(state_names, list):
            raise _Bad(f"state_names must be a list of one list per variable; got {_show(state_names)}")
        for i, states in enumerate(state_names):
            if not isinstance(states, list):
                raise _Bad(f"state_names[{i}] must be a list of state names; got {_show(states)}")
            for s, x in enumerate(states):
                if isinstance(x, (list, dict, _Invalid)):
                    raise _Bad(f"state_names[{i}][{s}] must be a string or a number; got {_kind(x)}")
    constant = 0.0 if doc.get("constant") is None else _float(doc["constant"], "constant")
    try:
        fg = FactorGraph(card, names, constant=constant, state_names=state_names)
    except (TypeError, ValueError) as err:
        raise _Bad(str(err).rstrip(".")) from None
    factors = doc["factors"]
    if not isinstance(factors, list):
        raise _Bad(f"factors must be a list of factor objects; got {_show(factors)}")
    for j, spec in enumerate(factors):
        where = f"factors[{j}]"
        factor = _factor(spec, where, fg.cardinalities)
        try:
            fg.add_factor(factor)
        except (TypeError, ValueError) as err:
            raise _Bad(f"{where}: {str(err).rstrip('.')}") from None
    return fg


def _check_size(count: int, bytes_each: int, name: str, what: str) -> None:
    try:
        check_memory(count, bytes_each, name, what)
    except ValueError as err:
        raise _Bad(str(err).rstrip(".")) from None


def _type_of(spec: dict, where: str, types, what: str) -> str:
    """The ``"type"`` of the object ``spec`` at ``where``, one of ``types`` (a factor's or a potential's)."""
    kind = spec.get("type")
    if not isinstance(kind, str) or kind not in types:
        known = ", ".join(f'"{k}"' for k in types)
        got = _show(kind) if "type" in spec else "none"
        raise _Bad(f"{where}: unknown {what} type {got} (the types are {known})")
    return kind


def _factor(spec, where: str, card: np.ndarray):
    if not isinstance(spec, dict):
        raise _Bad(f"{where} must be a factor object; got {_show(spec)}")
    kind = _type_of(spec, where, _FACTOR_FIELDS, "factor")
    required, optional = _FACTOR_FIELDS[kind]
    _fields(spec, where, ("type", *required), optional, f"a {kind} factor")
    variables = _variables(spec["variables"], f"{where}.variables", len(card))
    try:
        if kind == "table":
            return _table(spec, where, variables, card)
        if kind == "cardinality":
            return _cardinality(spec, where, variables, card)
        if kind == "recursive_cardinality":
            return _recursive(spec, where, variables)
        return _clique(spec, where, variables, card)
    except _Bad:
        raise
    except ModelError as err:  # a factor forbidding every configuration: the model has no solution
        raise type(err)(f"{where} ({kind}): {str(err).rstrip('.')}.") from None
    except (TypeError, ValueError) as err:  # the constructor's own check, naming its argument
        raise _Bad(f"{where} ({kind}): {str(err).rstrip('.')}") from None


def _variables(value, where: str, n: int) -> list[int]:
    if not isinstance(value, list):
        raise _Bad(f"{where} must be a list of variable indices; got {_show(value)}")
    seen: set[int] = set()
    for i, v in enumerate(value):
        if type(v) is not int:
            raise _Bad(f"{where}[{i}] must be a variable index (an integer); got {_kind(v)}")
        if not 0 <= v < n:
            raise _Bad(f"{where}[{i}]: variable {v} is out of range; the graph has {n} variables (0..{n - 1})")
        if v in seen:
            raise _Bad(f"{where}: variable {v} appears twice; a factor's variables must be distinct")
        seen.add(v)
    return value


def _table(spec, where: str, variables: list[int], card: np.ndarray) -> TableFactor:
    shape = tuple(int(card[v]) for v in variables)
    _check_size(math.prod(shape), 8, f"{where}.log_table", f"table entries (shape {shape})")
    why = f" (cardinalities {list(shape)} of variables {variables})" if variables else ""
    table = _array(spec["log_table"], f"{where}.log_table", len(shape), True, shape=shape, why=why)
    return TableFactor(variables, table)


def _cardinality(spec, where: str, variables: list[int], card: np.ndarray) -> CardinalityFactor:
    f = _array(spec["log_potentials"], f"{where}.log_potentials", 1, True)
    label = spec.get("label")
    if label is not None:
        label = _int(label, f"{where}.label")
    n_states = spec.get("n_states")
    if isinstance(n_states, list):
        n_states = _int_list(n_states, f"{where}.n_states", lo=2)
    elif n_states is not None:
        n_states = _int(n_states, f"{where}.n_states", lo=2)
    return CardinalityFactor(variables, f, label=label, n_states=n_states)


def _recursive(spec, where: str, variables: list[int]) -> RecursiveCardinalityFactor:
    subsets = spec["subsets"]
    if not isinstance(subsets, list):
        raise _Bad(f"{where}.subsets must be a list of lists of variables; got {_show(subsets)}")
    subsets = [_int_list(s, f"{where}.subsets[{i}]") for i, s in enumerate(subsets)]
    pots = spec["count_potentials"]
    if not isinstance(pots, list):
        raise _Bad(f"{where}.count_potentials must be a list of lists of numbers; got {_show(pots)}")
    pots = [_array(p, f"{where}.count_potentials[{i}]", 1, True) for i, p in enumerate(pots)]
    return RecursiveCardinalityFactor(variables, subsets, pots)


def _clique(spec, where: str, variables: list[int], card: np.ndarray) -> CliqueFactor:
    n_states = spec.get("n_states")
    if n_states is not None:
        n_states = _int(n_states, f"{where}.n_states", lo=2)
        if variables and n_states != int(card[variables[0]]):  # before anything of n_states entries is built
            raise _Bad(
                f"{where}.n_states is {n_states}, but variable {variables[0]} of the clique has cardinality "
                f"{int(card[variables[0]])}"
            )
        _check_size(n_states, 8, f"{where}.n_states", "states")
    fixed = spec.get("fixed_counts")
    if fixed is not None:
        fixed = _int_list(fixed, f"{where}.fixed_counts", hi=_MAX_FIXED)
        if sum(fixed) > _MAX_FIXED:
            raise _Bad(f"{where}.fixed_counts must sum to at most 2**40; got {sum(fixed)}")
    potential = _potential(spec["potential"], f"{where}.potential")
    return CliqueFactor(variables, potential, n_states=n_states, fixed_counts=fixed)


def _potential(spec, where: str):
    if not isinstance(spec, dict):
        raise _Bad(f'{where} must be an object such as {{"type": "potts", "lam": 1.0}}; got {_show(spec)}')
    kind = _type_of(spec, where, _POTENTIALS, "potential")
    cls, arg, tabled = _POTENTIALS[kind]
    _fields(spec, where, ("type", arg), (), f"a {kind} potential")
    if tabled:
        value = _array(spec[arg], f"{where}.{arg}", 2, cls is not LinearMajority)
    else:
        value = _float(spec[arg], f"{where}.{arg}", allow_neginf=False)
    try:
        return cls(value)
    except (TypeError, ValueError) as err:
        raise _Bad(f"{where}: {str(err).rstrip('.')}") from None


# ----------------------------------------------------------------------------- writing


def _encode(arr: np.ndarray):
    """An array as nested lists of floats, ``-inf`` as ``"-inf"`` (a 0-d array as one number)."""
    arr = np.asarray(arr, dtype=np.float64)
    neg = np.isneginf(arr)
    if not neg.any():
        return arr.tolist()
    obj = arr.astype(object)
    obj[neg] = NEG_INF
    return obj.tolist()


def _potential_spec(potential, where: str) -> dict:
    for kind, (cls, arg, _) in _POTENTIALS.items():
        if type(potential) is cls:
            if arg == "lam":
                return {"type": kind, "lam": float(potential.lam)}
            if arg == "table":
                return {"type": kind, "table": _encode(potential.f)}
            return {"type": kind, "W": _encode(potential.W)}
    raise TypeError(
        f"{where} has the potential {potential!r}, which has no file form (only "
        "Potts, Entropy, Makespan, SquareMakespan, SumPotential, MaxPotential and LinearMajority have one; a "
        "CountPotential wraps a Python function)."
    )


def _factor_spec(factor, where: str) -> dict:
    variables = [int(v) for v in factor.variables]
    if type(factor) is TableFactor:
        return {"type": "table", "variables": variables, "log_table": _encode(factor.log_table)}
    if type(factor) is CardinalityFactor:
        out = {"type": "cardinality", "variables": variables, "log_potentials": _encode(factor.log_potentials)}
        if factor.label is not None:
            ns = [int(c) for c in factor.n_states]
            out["label"] = int(factor.label)
            out["n_states"] = ns[0] if ns and all(c == ns[0] for c in ns) else ns
        return out
    if type(factor) is RecursiveCardinalityFactor:
        return {
            "type": "recursive_cardinality",
            "variables": variables,
            "subsets": [[int(v) for v in s] for s in factor.subsets],
            "count_potentials": [_encode(f) for f in factor.count_potentials],
        }
    if type(factor) is CliqueFactor:
        out = {"type": "clique", "variables": variables, "potential": _potential_spec(factor.potential, where)}
        if factor.n_states is not None:
            out["n_states"] = int(factor.n_states)
            if factor.fixed_counts.any():
                out["fixed_counts"] = [int(c) for c in factor.fixed_counts]
        return out
    raise TypeError(
        f"{where} is a {type(factor).__name__}, which the factor-graph format has no type for (it holds TableFactor, "
        "CardinalityFactor, RecursiveCardinalityFactor and CliqueFactor)."
    )


def _json_scalar(x) -> bool:
    if isinstance(x, (bool, str)) or x is None:
        return True
    if isinstance(x, (int, np.integer)):
        return True
    return isinstance(x, (float, np.floating)) and math.isfinite(x)


def _dumps(fg: FactorGraph) -> str:
    head: dict = {"format": FORMAT, "version": VERSION, "cardinalities": [int(c) for c in fg.cardinalities]}
    if list(fg.names) != [f"x{i}" for i in range(fg.n_variables)]:
        head["names"] = list(fg.names)
    if fg.state_names is not None:
        for i, states in enumerate(fg.state_names):
            for s, x in enumerate(states):
                if not _json_scalar(x):
                    raise TypeError(
                        f"`fg.state_names[{i}][{s}]` is {x!r}; only strings, finite numbers, booleans and None can be "
                        "written as JSON."
                    )
        head["state_names"] = [[x.item() if isinstance(x, np.generic) else x for x in s] for s in fg.state_names]
    if fg.constant != 0.0:
        head["constant"] = NEG_INF if fg.constant == -np.inf else float(fg.constant)
    factors = [_factor_spec(f, f"`fg.factors[{j}]`") for j, f in enumerate(fg.factors)]
    lines = ["{"]
    lines += [f"  {json.dumps(k)}: {json.dumps(v, allow_nan=False)}," for k, v in head.items()]
    body = ",\n".join(f"    {json.dumps(f, allow_nan=False)}" for f in factors)
    lines += ['  "factors": [', *([body] if body else []), "  ]", "}"]
    return "\n".join(lines) + "\n"


def write_factor_graph(path, fg: FactorGraph) -> None:
    """Write a :class:`FactorGraph` with factors of every type as a factor-graph file (JSON).

    The format is described in :mod:`tractable.io.fgjson` and in ``docs/bp.md`` ("Factor-graph files"):
    one factor per line, ``-inf`` as the string ``"-inf"``, floats in their shortest round-trip form, so
    :func:`read_factor_graph` gives back the same factors. A name ending in ``.gz`` (``model.json.gz``) is
    written gzip-compressed.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (as :func:`write_uai`, the path comes first).
    fg : FactorGraph
        Its factors are :class:`~tractable.TableFactor`, :class:`~tractable.CardinalityFactor`,
        :class:`~tractable.RecursiveCardinalityFactor` or :class:`~tractable.CliqueFactor`. Names, state
        names (strings, numbers, booleans) and the constant are written too; ``kept_variables`` is not.

    Raises
    ------
    TypeError
        ``path`` is not a file path, ``fg`` is not a FactorGraph (e.g. swapped: the path comes first), a
        factor of another class, a clique potential with no file form
        (:class:`~tractable.clique.CountPotential`), or a state name that JSON cannot hold.
    """
    _check_path(path, writer="write_factor_graph(path, fg)")
    _check_graph(fg)
    data = _dumps(fg).encode("utf-8")
    if str(path).lower().endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    Path(path).write_bytes(data)
