"""The UAI inference-competition file formats.

Model files (``.uai``), as read by libDAI, OpenGM, toulbar2 and Merlin::

    MARKOV                      (or BAYES)
    3                           number of variables
    2 2 3                       their cardinalities
    2                           number of factors
    1 0                         factor scopes: arity, then variable indices
    2 0 1
                                one table per factor, in the order of the scopes:
    2                           number of entries
    0.4 0.6                     values; the LAST variable of the scope changes fastest
    4
    1 2 3 4

Values are potentials (probabilities, not logs); zeros are forbidden configurations. In a
``BAYES`` file each factor is the conditional probability table of its scope's last variable given
the others, and every variable is the child of exactly one table.

Evidence files (``.evid``): ``k v_1 s_1 ... v_k s_k`` (the 2014 format), or the older format with
a leading number of evidence samples (``1 k v_1 s_1 ...``), of which the first sample is used.

Result files: ``MAR`` (``n card_0 p_0 ... card_1 ...``), ``MAP`` (``n s_0 ... s_{n-1}``) and ``PR``
(``log10 Z``), each after its header line.

A malformed file raises ``ValueError`` naming the file, the line and what was expected.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .._validate import as_float_array, as_index_array
from ..factorgraph import FactorGraph, TableFactor

__all__ = [
    "read_evidence",
    "read_map",
    "read_mar",
    "read_uai",
    "write_evidence",
    "write_map",
    "write_mar",
    "write_mmp",
    "write_pr",
    "write_uai",
]


#: The largest table :func:`read_uai` accepts: 2**36 entries, 512 GiB as float64 (its file would be larger).
MAX_TABLE_ENTRIES = 2**36


#: The largest state or variable index a result or evidence file may hold (what an int64 array holds).
_INT64_MAX = 2**63 - 1


def _got(value) -> str:
    """``value`` for a message: its type and a short repr (``str 'model.uai'``)."""
    if value is None:
        return "None"
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    name = type(value).__name__
    return text if text.startswith(name) else f"{name} {text}"


def _check_path(value, name: str = "path", writer: str | None = None) -> None:
    """Raise ``TypeError`` unless ``value`` is a file path (``str`` or ``os.PathLike``).

    ``writer`` is a writer's signature, shown when a graph was passed where its path goes (swapped
    arguments: ``write_uai(fg, "model.uai")``).
    """
    if isinstance(value, (str, os.PathLike)):
        return
    hint = f" (the path comes first: {writer})" if writer and isinstance(value, FactorGraph) else ""
    raise TypeError(f"`{name}` must be a file path (str or os.PathLike); got {_got(value)}{hint}.")


def _check_graph(value, name: str = "fg", *, optional: bool = False) -> None:
    """Raise ``TypeError`` unless ``value`` is a :class:`FactorGraph` (or None when ``optional``)."""
    if isinstance(value, FactorGraph) or (optional and value is None):
        return
    raise TypeError(f"`{name}` must be a tractable.FactorGraph{' or None' if optional else ''}; got {_got(value)}.")


def _check_target(value) -> None:
    """``path_or_stream`` of the result writers: None, a file path or a writable text stream."""
    if value is None or isinstance(value, (str, os.PathLike)) or callable(getattr(value, "write", None)):
        return
    raise TypeError(
        f"`path_or_stream` must be a file path (str or os.PathLike), a writable text stream or None; got {_got(value)}."
    )


class _Tokens:
    """Whitespace-separated tokens of a file, with their line numbers, for precise error messages."""

    def __init__(self, path) -> None:
        self.path = str(path)
        try:
            text = Path(path).read_text()
        except UnicodeDecodeError as err:
            raise ValueError(f"{self.path}: not a text file ({err.reason}).") from err
        self.tokens: list[str] = []
        self.lines: list[int] = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            for tok in line.split():
                self.tokens.append(tok)
                self.lines.append(lineno)
        self.n_lines = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
        self.pos = 0

    def where(self) -> str:
        """``"line N"`` of the next token (the last line at the end of the file)."""
        return f"line {self.lines[self.pos] if self.pos < len(self.tokens) else self.n_lines}"

    def error(self, expected: str, got: str | None = None) -> ValueError:
        if self.pos < len(self.tokens):
            where = f"line {self.lines[self.pos]}"
            got = got if got is not None else f"{self.tokens[self.pos]!r}"
        else:
            where = f"line {self.n_lines}"
            got = got if got is not None else "end of file"
        return ValueError(f"{self.path}, {where}: expected {expected}; got {got}.")

    def word(self, expected: str) -> str:
        if self.pos >= len(self.tokens):
            raise self.error(expected)
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def int(self, expected: str, minimum: int = 0, maximum: int | None = None) -> int:
        if self.pos >= len(self.tokens):
            raise self.error(expected)
        tok = self.tokens[self.pos]
        try:
            value = int(tok)
        except ValueError:
            raise self.error(expected) from None
        if value < minimum or (maximum is not None and value > maximum):
            raise self.error(expected)
        self.pos += 1
        return value

    def floats(self, count: int, expected: str) -> np.ndarray:
        if self.pos + count > len(self.tokens):
            self.pos = len(self.tokens)
            raise self.error(expected)
        chunk = self.tokens[self.pos : self.pos + count]
        try:
            values = np.array(chunk, dtype=np.float64)
        except ValueError:
            for tok in chunk:
                try:
                    float(tok)
                except ValueError:
                    self.pos = self.pos + chunk.index(tok)
                    raise self.error(expected) from None
            raise  # pragma: no cover
        bad = np.flatnonzero(~np.isfinite(values) | (values < 0))
        if bad.size:
            self.pos += int(bad[0])
            raise self.error("a finite non-negative potential value")
        self.pos += count
        return values

    def done(self) -> bool:
        return self.pos >= len(self.tokens)


def read_uai(path) -> FactorGraph:
    """Read a ``.uai`` model file (``MARKOV`` or ``BAYES``) into a :class:`FactorGraph`.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    FactorGraph
        One :class:`TableFactor` per table, with log-potentials ``log(value)`` (``-inf`` for
        zeros). The graph has the attribute ``network_type`` (``"MARKOV"`` or ``"BAYES"``).

    Raises
    ------
    ValueError
        Naming the file and line of the first malformed token.
    TypeError
        ``path`` is not a file path.
    """
    _check_path(path)
    tok = _Tokens(path)
    kind = tok.word("the preamble MARKOV or BAYES").upper()
    if kind not in ("MARKOV", "BAYES"):
        tok.pos -= 1
        raise tok.error("the preamble MARKOV or BAYES")
    n = tok.int("the number of variables (a non-negative integer)")
    card = [tok.int(f"the cardinality of variable {i} (an integer >= 1)", minimum=1) for i in range(n)]
    if any(c > MAX_TABLE_ENTRIES for c in card):
        i = next(i for i, c in enumerate(card) if c > MAX_TABLE_ENTRIES)
        tok.pos -= n - i
        raise tok.error(f"the cardinality of variable {i} (at most 2**{MAX_TABLE_ENTRIES.bit_length() - 1})")
    n_factors = tok.int("the number of factors (a non-negative integer)")
    scopes = []
    for j in range(n_factors):
        arity = tok.int(f"the number of variables of factor {j}", maximum=n)
        start = tok.pos
        scope = [
            tok.int(f"a variable index in 0..{n - 1} in the scope of factor {j}", maximum=n - 1) for _ in range(arity)
        ]
        if len(set(scope)) != len(scope):
            tok.pos = start
            raise tok.error(f"distinct variables in the scope of factor {j}", got=f"{scope}")
        scopes.append(scope)
    tables = []
    for j, scope in enumerate(scopes):
        size = math.prod(card[v] for v in scope)  # a Python int: never overflows
        if size > MAX_TABLE_ENTRIES:
            raise ValueError(
                f"{tok.path}, {tok.where()}: table {j} declares {size} (about 2^{math.log2(size):.1f}) entries "
                f"(cardinalities {[card[v] for v in scope]}); at most 2**{MAX_TABLE_ENTRIES.bit_length() - 1} "
                "are supported."
            )
        count = tok.int(f"the number of entries of table {j} ({size})", minimum=size, maximum=size)
        values = tok.floats(count, f"{count} numbers for table {j}")
        tables.append(values.reshape([card[v] for v in scope]))
    if not tok.done():
        raise tok.error("end of file after the last table")
    if kind == "BAYES":
        children = [s[-1] if s else None for s in scopes]
        if None in children or sorted(children) != list(range(n)):
            raise ValueError(
                f"{tok.path}: a BAYES network needs exactly one table per variable, with the variable last in "
                f"its scope; got children {children}."
            )
    # A variable with a single state is legal in the format; FactorGraph needs >= 2 states, so such
    # variables get a second, impossible state.
    full_card = [max(c, 2) for c in card]
    fg = FactorGraph(full_card)
    with np.errstate(divide="ignore"):
        for scope, table in zip(scopes, tables):
            log_table = np.log(table)
            pad = [(0, full_card[v] - card[v]) for v in scope]
            if any(p[1] for p in pad):
                log_table = np.pad(log_table, pad, constant_values=-np.inf)
            fg.add_factor(TableFactor(scope, log_table))
        for v in range(n):
            if card[v] == 1:
                fg.add_factor(TableFactor([v], np.array([0.0, -np.inf])))
    fg.network_type = kind
    fg.uai_cardinalities = np.array(card, dtype=np.int64)
    return fg


def write_uai(path, fg: FactorGraph, *, network_type: str = "MARKOV") -> None:
    """Write a :class:`FactorGraph` of table factors as a ``.uai`` file.

    Potentials are written as ``exp(log_table)`` with full float precision (``repr``), so reading the
    file back gives the same tables up to the ``exp``/``log`` round trip. The graph's ``constant`` is
    written as an extra zero-arity factor when it is not 0. ``network_type="BAYES"`` requires one
    normalized table per variable with the variable last in its scope.

    Raises ``TypeError`` when ``path`` is not a file path or ``fg`` not a :class:`FactorGraph` (e.g.
    swapped: the path comes first).
    """
    _check_path(path, writer="write_uai(path, fg)")
    _check_graph(fg)
    if network_type not in ("MARKOV", "BAYES"):
        raise ValueError(f"`network_type` must be 'MARKOV' or 'BAYES'; got {network_type!r}.")
    factors = list(fg.factors)
    lines = [network_type, str(fg.n_variables), " ".join(str(int(c)) for c in fg.cardinalities)]
    extra = [] if fg.constant == 0.0 or network_type == "BAYES" else [np.array(fg.constant)]
    if network_type == "BAYES":
        children = sorted(int(f.variables[-1]) for f in factors if len(f.variables))
        if len(factors) != fg.n_variables or children != list(range(fg.n_variables)):
            raise ValueError("`fg` is not a Bayesian network: it needs one table per variable, the variable last.")
    lines.append(str(len(factors) + len(extra)))
    for f in factors:
        lines.append(" ".join(str(x) for x in [len(f.variables), *map(int, f.variables)]))
    lines.extend("0" for _ in extra)
    lines.append("")
    for table in [f.to_table() for f in factors] + extra:
        values = np.exp(np.asarray(table, dtype=np.float64)).ravel()
        lines.append(str(values.size))
        lines.append(" ".join(repr(float(x)) for x in values))
        lines.append("")
    Path(path).write_text("\n".join(lines) + "\n")


def read_evidence(path, fg: FactorGraph | None = None) -> dict[int, int]:
    """Read a ``.evid`` file into ``{variable: state}``; with ``fg``, check indices and states."""
    _check_path(path)
    _check_graph(fg, optional=True)
    tok = _Tokens(path)
    if tok.done():
        return {}
    n_tok = len(tok.tokens)
    if n_tok % 2 == 0:  # old format: number of samples, then k and pairs for each sample
        n_samples = tok.int("the number of evidence samples", minimum=1)
        if n_samples != 1 and tok.done():
            raise tok.error("an evidence sample")
    k = tok.int("the number of observed variables")
    evidence: dict[int, int] = {}
    for _ in range(k):
        n = fg.n_variables if fg is not None else None
        v = tok.int(
            f"a variable index{'' if n is None else f' in 0..{n - 1}'}", maximum=_INT64_MAX if n is None else n - 1
        )
        hi = None if fg is None else int(getattr(fg, "uai_cardinalities", fg.cardinalities)[v]) - 1
        s = tok.int(
            f"a state of variable {v}{'' if hi is None else f' in 0..{hi}'}", maximum=_INT64_MAX if hi is None else hi
        )
        if v in evidence and evidence[v] != s:
            tok.pos -= 2
            raise tok.error(f"one state for variable {v}", got=f"states {evidence[v]} and {s}")
        evidence[v] = s
    if n_tok % 2 == 1 and not tok.done():
        raise tok.error("end of file after the evidence")
    return evidence


def write_evidence(path, evidence: dict[int, int]) -> None:
    """Write ``{variable: state}`` as a ``.evid`` file (2014 format)."""
    _check_path(path)
    if not isinstance(evidence, Mapping):
        raise TypeError(f"`evidence` must be a mapping {{variable: state}}; got {_got(evidence)}.")
    items = sorted((int(v), int(s)) for v, s in evidence.items())
    Path(path).write_text(" ".join(str(x) for x in [len(items), *[t for p in items for t in p]]) + "\n")


def _check_marginals(marginals) -> list[np.ndarray]:
    """``marginals`` as a list of 1-D float64 distributions (entries in [0, 1])."""
    if isinstance(marginals, np.ndarray):
        marginals = as_float_array(marginals, "marginals", ndim=2, allow_neginf=False)
    try:
        rows = list(marginals)
    except TypeError as err:
        raise TypeError(f"`marginals` must be a sequence of distributions; got {type(marginals).__name__}.") from err
    out = []
    for i, m in enumerate(rows):
        m = as_float_array(m, f"marginals[{i}]", ndim=1, allow_neginf=False)
        # rounding may leave a probability a few ulps outside [0, 1]; 1e-9 tolerates it and nothing else
        if m.size and (m.min() < -1e-9 or m.max() > 1 + 1e-9):
            raise ValueError(f"`marginals[{i}]` must contain probabilities in [0, 1]; got {m.tolist()}.")
        out.append(m)
    return out


def _format_mar(marginals) -> str:
    parts = [str(len(marginals))]
    for m in marginals:
        parts.append(str(m.size))
        parts.extend(repr(float(x)) for x in m)
    return "MAR\n" + " ".join(parts) + "\n"


def _strip_padding(marginals, fg: FactorGraph | None):
    card = getattr(fg, "uai_cardinalities", None) if fg is not None else None
    if card is None:
        return marginals
    return [np.asarray(m)[: int(c)] for m, c in zip(marginals, card)]


def write_mar(path_or_stream, marginals, fg: FactorGraph | None = None) -> str:
    """Write marginals in the ``MAR`` format; return the text.

    ``marginals[i]`` is variable ``i``'s distribution: an ``(n, k)`` array or a sequence of
    ``(card_i,)`` arrays, as in :class:`~tractable.MarginalsResult`.

    ``path_or_stream`` may be a path, a writable text stream, or ``None`` (only return the text).
    """
    _check_target(path_or_stream)
    _check_graph(fg, optional=True)
    return _emit(path_or_stream, _format_mar(_strip_padding(_check_marginals(marginals), fg)))


def write_map(path_or_stream, assignment) -> str:
    """Write an assignment in the ``MAP`` format; return the text."""
    _check_target(path_or_stream)
    a = as_index_array(assignment, "assignment")
    if a.size and a.min() < 0:
        raise ValueError(f"`assignment` must contain states >= 0; got {int(a.min())}.")
    return _emit(path_or_stream, "MAP\n" + " ".join(str(x) for x in [a.size, *a.tolist()]) + "\n")


def write_pr(path_or_stream, log_partition: float) -> str:
    """Write ``log10 Z`` in the ``PR`` format (the competition's convention); return the text."""
    _check_target(path_or_stream)
    if isinstance(log_partition, bool) or not isinstance(log_partition, (numbers.Real, np.ndarray)):
        raise TypeError(f"`log_partition` must be a real number; got {_got(log_partition)}.")
    return _emit(path_or_stream, f"PR\n{float(log_partition / np.log(10.0))!r}\n")


def write_mmp(path_or_stream, assignment, marginals, fg: FactorGraph | None = None) -> str:
    """Write maximum-marginal decisions and the marginals behind them; return the text.

    An ``MMP`` block laid out as a ``MAP`` block (the number of variables, then each decision),
    followed by a ``MAR`` block of ``marginals`` (as :func:`write_mar`).
    """
    _check_target(path_or_stream)
    _check_graph(fg, optional=True)
    a = as_index_array(assignment, "assignment")
    if a.size and a.min() < 0:
        raise ValueError(f"`assignment` must contain states >= 0; got {int(a.min())}.")
    text = "MMP\n" + " ".join(str(x) for x in [a.size, *a.tolist()]) + "\n"
    return _emit(path_or_stream, text + _format_mar(_strip_padding(_check_marginals(marginals), fg)))


def _emit(target, text: str) -> str:
    if target is None:
        return text
    if isinstance(target, (str, os.PathLike)):
        Path(target).write_text(text)
    else:
        target.write(text)
    return text


def read_mar(path) -> list[np.ndarray]:
    """Read a ``MAR`` result file into a list of marginal vectors."""
    _check_path(path)
    tok = _Tokens(path)
    if tok.word("the header MAR") != "MAR":
        tok.pos -= 1
        raise tok.error("the header MAR")
    n = tok.int("the number of variables")
    out = []
    for i in range(n):
        c = tok.int(f"the cardinality of variable {i}", minimum=1)
        out.append(tok.floats(c, f"{c} probabilities for variable {i}"))
    return out


def read_map(path) -> np.ndarray:
    """Read a ``MAP`` result file into an assignment array."""
    _check_path(path)
    tok = _Tokens(path)
    if tok.word("the header MAP") != "MAP":
        tok.pos -= 1
        raise tok.error("the header MAP")
    n = tok.int("the number of variables")
    return np.array([tok.int(f"the state of variable {i}", maximum=_INT64_MAX) for i in range(n)], dtype=np.int64)
