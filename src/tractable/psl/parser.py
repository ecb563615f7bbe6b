"""PSL rule text -> rule objects: a tokenizer and a recursive-descent parser of PSL 2.x rules.

The grammar is PSL's (2.0 to 2.4 share it):

- **logical rules** ``w: B1 & B2 -> H1 | H2 ^2`` (``>>`` for ``->``, ``H <- B`` / ``H << B`` the other
  way round, ``&&`` / ``||`` for ``&`` / ``|``, ``!`` or ``~`` for negation, parentheses around
  literals and sub-conjunctions), or a bare disjunction ``w: !A(X) | B(X)`` (a clause; a prior
  ``0.01: !P(A) ^2`` is one with a single literal). A rule without ``w:`` and ending in ``.`` is hard.
- **term comparisons** ``A == B``, ``A != B`` (also ``A ~= B`` and ``A - B``), ``A % B`` / ``A ^ B``
  (PSL's non-symmetric predicate: ``A < B`` as strings), with or without parentheses.
- **arithmetic rules** ``w: 2 * P(A) + Q(A) / 3 <= 1 ^2`` with ``<=``, ``>=``, ``=``; coefficients are
  numbers, ``|X|`` (the number of terms of the summation ``+X``), ``@Max[a, b]`` / ``@Min[a, b]`` and
  ``+ - * /`` over them; summation variables ``P(A, +C)``.
- **filter clauses** after an arithmetic rule (after its ``^2`` or its final ``.``), one per summation
  variable: ``1: P(A, +B) <= 1 ^2 {B: Q(A, B) & !R(B)}``. A filter is a formula over atoms and term
  comparisons with ``&``, ``|`` (``&`` binds tighter), parentheses and ``!`` on a single atom or
  comparison (PSL's grammar negates literals only). Its variables are the clause's summation variable
  and the rule's other (non-summation) variables. :meth:`Filter.dnf` gives its disjunctive normal form;
  PSL grounds a rule whose filter is a disjunction as one rule per disjunct (see
  :meth:`ArithmeticRule.filter_splits` and :mod:`tractable.psl.grounding`).

Arguments of atoms are variables (identifiers) or constants (single- or double-quoted strings).
A syntax error is a ``ValueError`` giving the rule text, the 1-based column and what was expected.

**Limits on hostile input** (each a ``ValueError`` stating the limit): a rule is at most
:data:`MAX_RULE_LENGTH` characters long, nests parentheses, brackets, braces, runs of prefix operators
(``!``, ``~``, unary ``-``) and coefficient operations at most :data:`MAX_NESTING` deep, has at most
:data:`MAX_RULE_ATOMS` atoms (filter atoms included) and :data:`MAX_RULE_VARIABLES` distinct variables,
and its filters expand to at most :data:`MAX_FILTER_SPLITS` rules. The parser never recurses deeper than
a few frames per nesting level, so no input raises ``RecursionError``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "MAX_FILTER_SPLITS",
    "MAX_NESTING",
    "MAX_RULE_ATOMS",
    "MAX_RULE_LENGTH",
    "MAX_RULE_VARIABLES",
    "Atom",
    "ArithmeticRule",
    "Coefficient",
    "Comparison",
    "Connective",
    "Constant",
    "Filter",
    "Literal",
    "LogicalRule",
    "SumVariable",
    "Variable",
    "parse_rule",
    "parse_rules",
]

#: the most characters of one rule (comments and surrounding blank space excluded)
MAX_RULE_LENGTH = 100_000
#: the deepest nesting of ``(`` / ``[`` / ``{`` plus a run of prefix operators ``!`` ``~`` ``-`` at any point
#: of a rule, and the deepest coefficient expression (operations inside operations); a real PSL rule nests
#: a handful of levels, and the parser uses a few Python frames per level
MAX_NESTING = 64
#: the most atoms of one rule, filter atoms included: the grounding query joins them all (DuckDB plans a
#: join of 128 tables in about a second, of 300 in about 20 s, and refuses about 1000: its expression depth)
MAX_RULE_ATOMS = 128
#: the most distinct variables of one rule (each is a column of the grounding query)
MAX_RULE_VARIABLES = 1024
#: the most rules that the filter clauses of one rule split into (the product over its filters of the
#: number of disjuncts of each filter's disjunctive normal form; each is grounded separately)
MAX_FILTER_SPLITS = 64


# ---------------------------------------------------------------------------------------------- terms
@dataclass(frozen=True)
class Variable:
    """A rule variable (an identifier)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class SumVariable:
    """A summation variable ``+X`` of an arithmetic rule."""

    name: str

    def __str__(self) -> str:
        return "+" + self.name


@dataclass(frozen=True)
class Constant:
    """A constant argument (the unquoted string)."""

    value: str

    def __str__(self) -> str:
        return "'" + self.value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class Atom:
    """``predicate(args...)``; ``predicate`` as written in the rule (names are case-insensitive)."""

    predicate: str
    args: tuple

    def __str__(self) -> str:
        return f"{self.predicate}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Literal:
    """An atom of a logical rule, possibly negated."""

    atom: Atom
    negated: bool = False

    def __str__(self) -> str:
        return ("!" if self.negated else "") + str(self.atom)


@dataclass(frozen=True)
class Comparison:
    """A term comparison ``left op right`` with ``op`` in ``==``, ``!=``, ``<`` (PSL's ``%``), possibly negated."""

    op: str
    left: object
    right: object
    negated: bool = False

    def __str__(self) -> str:
        op = {"==": "==", "!=": "!=", "<": "%"}[self.op]
        return ("!" if self.negated else "") + f"({self.left} {op} {self.right})"


@dataclass(frozen=True)
class Connective:
    """``&`` or ``|`` (``op``) over two or more filter formulas (``args``): the inner nodes of a filter."""

    op: str
    args: tuple

    def __str__(self) -> str:
        return "(" + f" {self.op} ".join(map(str, self.args)) + ")"


@dataclass(frozen=True)
class Filter:
    """A filter clause ``{X: formula}`` of an arithmetic rule: the terms of the summation ``+X`` kept.

    Attributes
    ----------
    variable : str
        The summation variable ``X`` (written without ``+``).
    formula : Literal, Comparison or Connective
        Atoms (possibly negated), term comparisons (possibly negated) and ``&`` / ``|`` over them.

    Notes
    -----
    PSL 2.4 (``AbstractArithmeticRule.evalFilter``) evaluates a filter for each summed atom with ``X``
    replaced by the atom's argument: an atom of the filter is true when its observed value is > 0 (a
    missing atom is 0), ``!`` negates, ``&`` needs all parts true. Only closed predicates may appear in
    a filter. A filter whose disjunctive normal form is a disjunction splits the rule into one rule per
    disjunct (``AbstractArithmeticRule.split``): see :meth:`ArithmeticRule.filter_splits`.
    """

    variable: str
    formula: object

    def __str__(self) -> str:
        return "{" + f"{self.variable}: {self.formula}" + "}"

    def leaves(self) -> list:
        """The atoms' literals and the comparisons of the formula, in text order."""
        out, stack = [], [self.formula]
        while stack:
            f = stack.pop()
            if isinstance(f, Connective):
                stack.extend(reversed(f.args))
            else:
                out.append(f)
        return out

    def atoms(self) -> list[Atom]:
        return [lit.atom for lit in self.leaves() if isinstance(lit, Literal)]

    def dnf(self, limit: int | None = None) -> tuple:
        """The disjunctive normal form: a tuple of conjunctions, each a tuple of literals and comparisons.

        Repeated literals of a conjunction and repeated conjunctions (as sets) are merged, as PSL's
        ``Formula.flatten`` merges them; nothing else is simplified (``Q(B) & !Q(B)`` stays, and keeps no
        term). ``limit``: raise ``ValueError`` as soon as a part has more conjunctions than this.
        """
        return _dnf(self.formula, limit)


def _dnf(f, limit):
    if not isinstance(f, Connective):
        return ((f,),)
    parts = [_dnf(a, limit) for a in f.args]
    if f.op == "|":
        out = [c for p in parts for c in p]
    else:
        out = [()]
        for p in parts:
            out = [(*c, *d) for c in out for d in p]
            if limit is not None and len(out) > limit:
                raise _TooManySplits(len(out))
    seen, uniq = set(), []
    for c in out:
        c = tuple(dict.fromkeys(c))  # repeated literals merged, order kept
        key = frozenset(c)
        if key not in seen:
            seen.add(key)
            uniq.append(c)
    if limit is not None and len(uniq) > limit:
        raise _TooManySplits(len(uniq))
    return tuple(uniq)


class _TooManySplits(ValueError):
    """A filter's normal form passed the limit of :meth:`Filter.dnf` (the parser words it for the rule)."""

    def __init__(self, n: int) -> None:
        super().__init__(f"the filter's disjunctive normal form has {n} or more conjunctions, past the limit")
        self.n = n


# ---------------------------------------------------------------------------------------------- coefficients
@dataclass(frozen=True)
class Coefficient:
    """A coefficient expression of an arithmetic rule.

    ``kind`` is ``"num"`` (``value``), ``"card"`` (``|name|``, ``value`` the summation variable's name)
    or an operator over ``args``: ``"+"`` and ``"*"`` over two or more arguments (evaluated left to
    right, so ``a + b + c`` is one node and long sums stay shallow), ``"-"`` over one (negation) or two,
    ``"/"``, ``"max"`` and ``"min"`` over two.
    """

    kind: str
    value: object = None
    args: tuple = ()

    def __post_init__(self) -> None:
        # operations nested in this one (0 for a number or |X|), for the parser's limit (MAX_NESTING); not a
        # dataclass field, so not compared
        object.__setattr__(self, "_depth", 1 + max(a._depth for a in self.args) if self.args else 0)

    @staticmethod
    def number(v: float) -> Coefficient:
        return Coefficient("num", float(v))

    def cardinalities(self) -> set:
        """Names of the summation variables whose ``|X|`` this expression uses."""
        if self.kind == "card":
            return {self.value}
        out: set = set()
        for a in self.args:
            out |= a.cardinalities()
        return out

    def evaluate(self, counts: dict):
        """The value, with ``counts[name]`` the ``|name|`` of each ground rule (float or ndarray)."""
        import numpy as np

        if self.kind == "num":
            return self.value
        if self.kind == "card":
            return counts[self.value]
        a = [x.evaluate(counts) for x in self.args]
        if self.kind in ("+", "*"):
            out = a[0]
            for x in a[1:]:
                out = out + x if self.kind == "+" else out * x
            return out
        if self.kind == "-":
            return a[0] - a[1] if len(a) == 2 else -a[0]
        if self.kind == "/":
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.true_divide(a[0], a[1])
        if self.kind == "max":
            return np.maximum(a[0], a[1])
        return np.minimum(a[0], a[1])

    def __str__(self) -> str:
        if self.kind == "num":
            return f"{self.value:g}"
        if self.kind == "card":
            return f"|{self.value}|"
        if self.kind in ("max", "min"):
            return f"@{self.kind.title()}[{self.args[0]}, {self.args[1]}]"
        if self.kind == "-" and len(self.args) == 1:
            return f"-({self.args[0]})"
        return "(" + f" {self.kind} ".join(map(str, self.args)) + ")"


_FOLD = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "/": lambda x, y: x / y,
    "max": max,
    "min": min,
}


def _combine(op: str, a: Coefficient, b: Coefficient) -> Coefficient:
    """``a op b``: numbers folded (as float64, like :meth:`Coefficient.evaluate`), ``+`` and ``*`` chains
    kept as one node over their operands in order (``(a + b) + c`` is ``a + b + c``), so that a long
    sum or product is one level deep. ``x / 0`` is not folded: grounding reports it."""
    if a.kind == "num" and b.kind == "num" and not (op == "/" and b.value == 0.0):
        return Coefficient.number(_FOLD[op](a.value, b.value))
    if op in ("+", "*"):
        left = a.args if a.kind == op else (a,)
        return Coefficient(op, args=(*left, b))
    if op == "-":  # a - b is a + (-b) exactly
        left = a.args if a.kind == "+" else (a,)
        return Coefficient("+", args=(*left, _scale(b, -1.0)))
    return Coefficient(op, args=(a, b))


def _scale(c: Coefficient, s: float) -> Coefficient:
    """``s * c`` for ``s`` = +1 or -1 (a side of the relation, a sign before a group): exact in any order,
    so a negation of a negation cancels and nested signs add no depth."""
    if s == 1.0:
        return c
    if c.kind == "num":
        return Coefficient.number(c.value * s)
    if s == -1.0:
        return c.args[0] if c.kind == "-" and len(c.args) == 1 else Coefficient("-", args=(c,))
    return Coefficient("*", args=(Coefficient.number(s), c))


# ---------------------------------------------------------------------------------------------- rules
@dataclass(frozen=True)
class LogicalRule:
    """A logical rule ``weight: body -> head``, as the clause ``!B1 | ... | !Bn | H1 | ... | Hm``.

    Attributes
    ----------
    text : str
        The rule as written.
    weight : float or None
        ``None`` for a hard rule.
    squared : bool
        ``^2``.
    body, head : tuple of Literal or Comparison
        A bare disjunction has an empty body.
    """

    text: str
    weight: float | None
    squared: bool
    body: tuple
    head: tuple

    @property
    def hard(self) -> bool:
        return self.weight is None

    def atoms(self) -> list[Atom]:
        return [lit.atom for lit in (*self.body, *self.head) if isinstance(lit, Literal)]


@dataclass(frozen=True)
class ArithmeticRule:
    """A linear arithmetic rule, normalized to ``sum_i coef_i * atom_i + constant (sense) 0``.

    Attributes
    ----------
    text : str
    weight : float or None
        ``None`` for a hard rule (a constraint).
    squared : bool
    terms : tuple of (Coefficient, Atom)
        Both sides moved to the left (right-hand atoms with negated coefficients).
    constant : Coefficient
        Left-hand constants minus right-hand ones.
    sense : {"<=", ">=", "="}
    sum_variables : tuple of str
        The summation variables, in order of appearance.
    filters : tuple of Filter
        The filter clauses, in text order (at most one per summation variable).
    """

    text: str
    weight: float | None
    squared: bool
    terms: tuple
    constant: Coefficient
    sense: str
    sum_variables: tuple = field(default=())
    filters: tuple = field(default=())

    @property
    def hard(self) -> bool:
        return self.weight is None

    def atoms(self) -> list[Atom]:
        """The atoms of the expression (filter atoms are :meth:`filter_atoms`)."""
        return [a for _, a in self.terms]

    def filter_atoms(self) -> list[Atom]:
        """The atoms of the filter clauses."""
        return [a for f in self.filters for a in f.atoms()]

    def filter_splits(self) -> list[dict]:
        """The rules that PSL grounds for this one, as their filters: a list of ``{variable: conjunction}``.

        Each filter is put in disjunctive normal form; a filter with several disjuncts splits the rule
        into one rule per disjunct, and several such filters into the product of their disjuncts, as
        PSL 2.4's ``AbstractArithmeticRule.split`` does (PSL's ``Model.addRule`` adds the split rules
        instead of the written one). A conjunction is a tuple of literals and comparisons, all of which
        must hold for a summed atom to be kept. A rule without filters gives ``[{}]``.
        """
        out = [{}]
        for f in self.filters:
            out = [{**d, f.variable: c} for d in out for c in f.dnf(MAX_FILTER_SPLITS)]
        return out


# ---------------------------------------------------------------------------------------------- tokens
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")
  | (?P<number>\d+(?:\.\d+)?(?:[eE]-?\d+)?)
  | (?P<func>@[A-Za-z]+)
  | (?P<ident>[A-Za-z$_][A-Za-z0-9$_]*)
  | (?P<op>->|>>|<-|<<|<=|>=|==|!=|~=|&&|\|\||[&|!~()\[\]{},:.^+\-*/%=])
    """,
    re.VERBOSE,
)
_ESCAPES = {"\\\\": "\\", "\\'": "'", '\\"': '"', "\\t": "\t", "\\n": "\n", "\\r": "\r"}


@dataclass(frozen=True)
class _Tok:
    kind: str  # string, number, ident, func, op, end
    text: str
    pos: int


def _tokenize(text: str) -> list[_Tok]:
    toks = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise _syntax(text, pos, "a rule token", repr(text[pos]))
        kind = m.lastgroup
        if kind != "ws":
            toks.append(_Tok(kind, m.group(), pos))
        pos = m.end()
    toks.append(_Tok("end", "", len(text)))
    return toks


def _syntax(text: str, pos: int, expected: str, got: str) -> ValueError:
    line_start = text.rfind("\n", 0, pos) + 1
    line_end = text.find("\n", pos)
    line = text[line_start : line_end if line_end >= 0 else len(text)].strip()
    if len(got) > _EXCERPT:
        got = got[:_EXCERPT] + "..."
    return ValueError(
        f"PSL syntax error in rule {_excerpt(line)} at column {pos - line_start + 1}: expected {expected}, got {got}."
    )


def _unquote(s: str) -> str:
    return re.sub(r"\\.", lambda m: _ESCAPES.get(m.group(), m.group()[1]), s[1:-1])


_COMPARE = {"==": "==", "!=": "!=", "~=": "!=", "-": "!=", "%": "<", "^": "<"}
_RELATIONS = ("<=", ">=", "=")


class _Parser:
    """Recursive descent over the token list of one text (one rule or a whole ``.psl`` file)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.depth = 0  # nesting of the construct being parsed (MAX_NESTING)
        self.rule_start = 0

    def enter(self, tok: _Tok) -> None:
        """One level deeper (a group, a prefix operator, @Max/@Min): refused past MAX_NESTING, long before
        Python's recursion limit (the parser uses at most three frames per level)."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            self._too_deep(tok, "parentheses, brackets, braces, '!' / '~' / '-' prefixes and @Max/@Min count")

    def leave(self) -> None:
        self.depth -= 1

    def _too_deep(self, tok: _Tok, what: str):
        line_start = self.text.rfind("\n", 0, tok.pos) + 1
        raise ValueError(
            f"PSL rule {_excerpt(self._rest(self.rule_start))}: nested more than MAX_NESTING = {MAX_NESTING} levels "
            f"deep at column {tok.pos - line_start + 1} ({what}); a rule nests at most {MAX_NESTING} levels."
        )

    def combine(self, op: str, a: Coefficient, b: Coefficient, tok: _Tok) -> Coefficient:
        """:func:`_combine`, refusing a coefficient whose operations nest deeper than MAX_NESTING (chains of
        ``+`` or of ``*`` are one level; each ``/``, and each ``*`` after a ``/``, nests one more)."""
        c = _combine(op, a, b)
        if c._depth > MAX_NESTING:
            self._too_deep(tok, "a coefficient's operations: @Max/@Min and alternating '*' and '/' nest")
        return c

    # -- helpers
    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def at(self, *texts: str) -> bool:
        return self.tok.kind == "op" and self.tok.text in texts

    def take(self) -> _Tok:
        t = self.tok
        self.i += 1
        return t

    def expect(self, text: str, what: str | None = None) -> _Tok:
        if not self.at(text):
            self.fail(what or repr(text))
        return self.take()

    def fail(self, expected: str):
        t = self.tok
        raise _syntax(self.text, t.pos, expected, "the end of the rule" if t.kind == "end" else repr(t.text))

    # -- rules
    def rule(self):
        start = self.tok.pos
        self.rule_start, self.depth = start, 0
        weight = None
        if self.tok.kind == "number" and self.peek().kind == "op" and self.peek().text == ":":
            weight = float(self.take().text)
            self.take()
        elif self.at("-") and self.peek().kind == "number" and self.peek(2).text == ":":
            raise ValueError(
                f"PSL rule {self._rest(start)!r}: a weight must be >= 0; got -{self.peek().text} "
                "(negate the rule instead)."
            )
        # the relation decides logical vs arithmetic: scan to the rule's end
        arithmetic = self._has_relation()
        if arithmetic:
            r = self.arithmetic_rule(start, weight)
        else:
            r = self.logical_rule(start, weight)
        _check_size(r)
        return r

    def _rest(self, start: int) -> str:
        end = self.text.find("\n", start)
        return self.text[start : end if end >= 0 else len(self.text)].strip()

    def _has_relation(self) -> bool:
        """Whether the rule starting here is arithmetic (a relation comes before the rule's end)."""
        depth = 0
        toks = self.toks
        for j in range(self.i, len(toks)):
            t = toks[j]
            if t.kind == "end":
                return False
            if t.kind == "op":
                if t.text in ("(", "[", "{"):
                    depth += 1
                elif t.text in (")", "]", "}"):
                    depth -= 1
                    nxt = toks[j + 1]
                    if depth == 0 and nxt.kind == "ident":  # a new rule begins after this one
                        return False
                elif t.text in _RELATIONS:
                    return True
                elif t.text in ("->", ">>", "<-", "<<", "&", "&&", "!", "~", "^", "||", "."):
                    if t.text != "." or depth == 0:
                        return False
                elif t.text == "|" and not (toks[j + 1].kind == "ident" and toks[j + 2].text == "|"):
                    if j < 2 or toks[j - 1].kind != "ident" or toks[j - 2].text != "|":
                        return False
            elif t.kind == "number" and j > self.i and toks[j + 1].text == ":":
                return False
        return False

    def _finish(self, start: int, weight, squared_allowed: bool = True):
        """Parse the rule's tail: ``^2`` for weighted rules, ``.`` for hard ones."""
        squared = False
        if weight is not None:
            if self.at("^"):
                self.take()
                t = self.tok
                if t.kind != "number" or t.text not in ("1", "2"):
                    self.fail("1 or 2 after '^'")
                squared = self.take().text == "2"
            if self.at("."):
                self.fail("the end of a weighted rule (a weighted rule has no final '.')")
        else:
            if self.at("^"):
                self.fail("'.' (a hard rule has no exponent)")
            self.expect(".", "'.' at the end of a hard rule (or a weight 'w:' in front of a weighted one)")
        return squared

    def logical_rule(self, start: int, weight) -> LogicalRule:
        first = self.disjunction_or_conjunction()
        if self.at("->", ">>"):
            self.take()
            body, head = first, self.disjunction_or_conjunction()
        elif self.at("<-", "<<"):
            self.take()
            head, body = first, self.disjunction_or_conjunction()
        else:
            if first[1] == "&":
                self.fail("'->' after a conjunction (a rule without implication is a disjunction)")
            body, head = ([], None, 0), first
        if body[1] == "|":
            self._fail_at(body[2], "'&' (the body of a rule is a conjunction)", "'|'")
        if head[1] == "&":
            self._fail_at(head[2], "'|' (the head of a rule is a disjunction)", "'&'")
        squared = self._finish(start, weight)
        if self.at("{"):
            self.fail(
                "the end of the rule (filter clauses {X: ...} select the terms of a summation +X: only arithmetic "
                "rules have them)"
            )
        return LogicalRule(self._text(start), weight, squared, tuple(body[0]), tuple(head[0]))

    def _text(self, start: int) -> str:
        """The rule's text, from ``start`` to the end of the last token taken."""
        last = self.toks[self.i - 1]
        return self.text[start : last.pos + len(last.text)].strip()

    def _fail_at(self, pos: int, expected: str, got: str):
        raise _syntax(self.text, pos, expected, got)

    def disjunction_or_conjunction(self):
        """Literals joined by one connective: (literals, '&' or '|' or None, position of the connective)."""
        lits = list(self.logical_value())
        conn, pos = None, 0
        while self.at("&", "&&", "|", "||"):
            c = "&" if self.tok.text in ("&", "&&") else "|"
            if conn is not None and c != conn:
                self.fail(f"{conn!r} (mixing '&' and '|' needs parentheses)")
            if conn is None:
                pos = self.tok.pos
            conn = c
            self.take()
            lits.extend(self.logical_value())
        return lits, conn, pos

    def logical_value(self) -> list:
        """One literal, or a parenthesized conjunction / disjunction (flattened)."""
        if self.at("!", "~"):
            self.enter(self.take())
            inner = self.logical_value()
            if len(inner) != 1:
                self.fail("a literal after '!' (a group of literals cannot be negated)")
            self.leave()
            return [_negate(inner[0])]
        if self.at("("):
            # a parenthesized comparison (A != B), literal or group
            self.enter(self.take())
            if self._term_start() and self.peek().kind == "op" and self.peek().text in _COMPARE:
                cmp = self.comparison()
                self.expect(")")
                self.leave()
                return [cmp]
            lits, _, _ = self.disjunction_or_conjunction()
            self.expect(")", "')'")
            self.leave()
            return lits
        if self.tok.kind == "ident" and self.peek().text == "(":
            return [Literal(self.atom(summation=False))]
        if self._term_start():
            return [self.comparison()]
        self.fail("a literal: an atom P(A, ...), '!' or a comparison such as (A != B)")

    def _term_start(self) -> bool:
        return self.tok.kind == "string" or (self.tok.kind == "ident" and self.peek().text != "(")

    def comparison(self) -> Comparison:
        left = self.term()
        if not (self.tok.kind == "op" and self.tok.text in _COMPARE):
            self.fail("a comparison operator '==', '!=' or '%'")
        op = _COMPARE[self.take().text]
        right = self.term()
        return Comparison(op, left, right)

    def term(self, summation: bool = False):
        t = self.tok
        if t.kind == "string":
            self.take()
            return Constant(_unquote(t.text))
        if t.kind == "ident":
            self.take()
            return Variable(t.text)
        if summation and self.at("+") and self.peek().kind == "ident":
            self.take()
            return SumVariable(self.take().text)
        if t.kind == "number":
            self.fail("a variable or a quoted constant (constants are quoted: '" + t.text + "')")
        self.fail("a variable or a quoted constant")

    def atom(self, summation: bool) -> Atom:
        name = self.take().text
        self.expect("(")
        args = [self.term(summation)]
        while self.at(","):
            self.take()
            args.append(self.term(summation))
        self.expect(")", "',' or ')' in the arguments of " + name)
        return Atom(name, tuple(args))

    # -- arithmetic
    def arithmetic_rule(self, start: int, weight) -> ArithmeticRule:
        lhs = self.linear()
        if not self.at(*_RELATIONS):
            self.fail("'<=', '>=' or '='")
        sense = self.take().text
        rhs = self.linear()
        squared = self._finish(start, weight)
        filters = []
        while self.at("{"):
            filters.append(self.filter_clause())
        text = self._text(start)
        terms = [(c, a) for c, a in lhs if a is not None] + [(_scale(c, -1.0), a) for c, a in rhs if a is not None]
        consts = [c for c, a in lhs if a is None] + [_scale(c, -1.0) for c, a in rhs if a is None]
        constant = Coefficient.number(0.0)
        for k, c in enumerate(consts):  # left to right, as written
            constant = c if k == 0 else _combine("+", constant, c)
        if not terms:
            raise ValueError(f"PSL rule {_excerpt(text)}: an arithmetic rule needs at least one atom.")
        sum_vars = []
        for _, a in terms:
            own = [arg.name for arg in a.args if isinstance(arg, SumVariable)]
            if len(set(own)) < len(own):
                v = next(x for x in own if own.count(x) > 1)
                raise ValueError(
                    f"PSL rule {_excerpt(text)}: +{v} appears twice in {a}; a summation variable sums over one "
                    "argument (PSL 2.4 refuses it too)."
                )
            for name in own:
                if name not in sum_vars:
                    sum_vars.append(name)
        used = set().union(*(c.cardinalities() for c, _ in terms), constant.cardinalities())
        unknown = sorted(used - set(sum_vars))
        if unknown:
            raise ValueError(
                f"PSL rule {_excerpt(text)}: |{unknown[0]}| names no summation variable (write +{unknown[0]} in an "
                "atom)."
            )
        rule = ArithmeticRule(text, weight, squared, tuple(terms), constant, sense, tuple(sum_vars), tuple(filters))
        _check_filters(rule)
        return rule

    # -- filter clauses
    def filter_clause(self) -> Filter:
        """``{X: formula}``."""
        self.enter(self.take())
        if self.at("+") and self.peek().kind == "ident":
            self.fail("the summation variable's name without '+' (a filter clause is {X: formula})")
        if self.tok.kind != "ident":
            self.fail("a summation variable's name after '{' (a filter clause is {X: formula})")
        name = self.take().text
        self.expect(":", "':' after the filter clause's variable")
        formula = self.filter_or()
        self.expect("}", "'}' closing the filter clause (or '&', '|')")
        self.leave()
        return Filter(name, formula)

    def filter_or(self):
        """Conjunctions joined by ``|`` (``&`` binds tighter, as in PSL's grammar)."""
        items = [self.filter_and()]
        while self.at("|", "||"):
            self.take()
            items.append(self.filter_and())
        return items[0] if len(items) == 1 else Connective("|", tuple(items))

    def filter_and(self):
        items = [self.filter_value()]
        while self.at("&", "&&"):
            self.take()
            items.append(self.filter_value())
        return items[0] if len(items) == 1 else Connective("&", tuple(items))

    def filter_value(self):
        """An atom, a comparison, ``!`` before one of them, or a parenthesized formula."""
        if self.at("!", "~"):
            neg = self.take()
            self.enter(neg)
            inner = self.filter_value()
            self.leave()
            if isinstance(inner, Connective):
                self._fail_at(
                    neg.pos,
                    "an atom or a comparison after '!' (PSL's grammar negates single literals; write !(a & b) "
                    "as !a | !b and !(a | b) as !a & !b)",
                    "a group",
                )
            return _negate(inner)
        if self.at("("):
            self.enter(self.take())
            inner = self.filter_or()
            self.expect(")", "')' (or '&', '|')")
            self.leave()
            return inner
        if self.tok.kind == "ident" and self.peek().text == "(":
            return Literal(self.atom(summation=False))
        if self._term_start():
            return self.comparison()
        self.fail("a filter literal: an atom P(A, ...), a comparison such as A != B, '!' or '('")

    def linear(self) -> list:
        """``operand ((+|-) operand)*`` as a list of (Coefficient, Atom or None)."""
        out = self.linear_operand(1.0)
        while self.at("+", "-"):
            sign = 1.0 if self.take().text == "+" else -1.0
            out.extend(self.linear_operand(sign))
        return out

    def linear_operand(self, sign: float) -> list:
        if self.at("-"):
            self.enter(self.take())
            out = self.linear_operand(-sign)
            self.leave()
            return out
        if self.at("(") and self._paren_has_atom():
            self.enter(self.take())
            inner = self.linear()
            self.expect(")")
            self.leave()
            return [(_scale(c, sign), a) for c, a in inner]
        coef = Coefficient.number(1.0)
        if not self._atom_after(0):
            coef = self.coef_term()
            if self.at("*"):
                self.take()
            elif not self._atom_after(0):
                return [(_scale(coef, sign), None)]
        atom = self.coef_atom()
        if self.at("/"):
            tok = self.take()
            coef = self.combine("/", coef, self.coef_factor(), tok)
        return [(_scale(coef, sign), atom)]

    def _atom_after(self, k: int) -> bool:
        j = self.i + k
        while self.toks[j].text == "(":
            j += 1
        return self.toks[j].kind == "ident" and self.toks[j + 1].text == "("

    def _paren_has_atom(self) -> bool:
        """Whether the group opened here holds an atom (a linear expression, not a coefficient)."""
        depth = 0
        for j in range(self.i, len(self.toks)):
            t = self.toks[j]
            if t.text == "(":
                depth += 1
            elif t.text == ")":
                depth -= 1
                if depth == 0:
                    return False
            elif t.kind == "ident" and self.toks[j + 1].text == "(":
                return True
            elif t.kind == "end":
                return False
        return False

    def coef_atom(self) -> Atom:
        if self.at("("):
            self.enter(self.take())
            a = self.coef_atom()
            self.expect(")")
            self.leave()
            return a
        if not (self.tok.kind == "ident" and self.peek().text == "("):
            self.fail("an atom P(A, ...)")
        return self.atom(summation=True)

    def coef_expr(self) -> Coefficient:
        """A full coefficient expression (inside parentheses or @Max/@Min): sums of products."""
        c = self.coef_term()
        while self.at("+", "-"):
            tok = self.take()
            c = self.combine(tok.text, c, self.coef_term(), tok)
        return c

    def coef_term(self) -> Coefficient:
        """Products and quotients of coefficient factors; a '*' followed by an atom ends it."""
        c = self.coef_factor()
        while self.at("*", "/") and not (self.at("*") and self._atom_after(1)):
            tok = self.take()
            c = self.combine(tok.text, c, self.coef_factor(), tok)
        return c

    def coef_factor(self) -> Coefficient:
        t = self.tok
        if t.kind == "number":
            self.take()
            return Coefficient.number(float(t.text))
        if self.at("-") and self.peek().kind == "number":
            self.take()
            return Coefficient.number(-float(self.take().text))
        if self.at("|"):
            self.take()
            if self.tok.kind != "ident":
                self.fail("a summation variable's name in |X|")
            name = self.take().text
            self.expect("|", "'|' closing |X|")
            return Coefficient("card", name)
        if t.kind == "func":
            name = t.text.lower()
            if name not in ("@max", "@min"):
                self.fail("@Max or @Min")
            self.enter(self.take())
            close = "]" if self.at("[") else ")"
            self.expect("[" if close == "]" else "(", "'[' after " + t.text)
            a = self.coef_expr()
            self.expect(",")
            b = self.coef_expr()
            self.expect(close)
            self.leave()
            return self.combine(name[1:], a, b, t)
        if self.at("("):
            self.enter(self.take())
            c = self.coef_expr()
            self.expect(")")
            self.leave()
            return c
        self.fail("a coefficient: a number, |X|, @Max[...] or @Min[...]")


def _negate(lit):
    if isinstance(lit, Literal):
        return Literal(lit.atom, not lit.negated)
    return Comparison(lit.op, lit.left, lit.right, not lit.negated)


#: rule text quoted in error messages is cut to about this many characters
_EXCERPT = 200


def _excerpt(text: str, limit: int = _EXCERPT) -> str:
    """``repr(text)`` for an error message, cut to about ``limit`` characters (``...`` marks a cut)."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + "..."


def _variables(rule) -> set:
    """Every variable name of a rule (summation variables, comparisons and filters included)."""
    if isinstance(rule, LogicalRule):
        items = [*rule.body, *rule.head]
    else:
        items = [a for _, a in rule.terms] + [x for f in rule.filters for x in f.leaves()]
    names = set()
    for x in items:
        if isinstance(x, Literal):
            terms = x.atom.args
        elif isinstance(x, Comparison):
            terms = (x.left, x.right)
        else:
            terms = x.args
        names.update(t.name for t in terms if isinstance(t, (Variable, SumVariable)))
    return names


def _check_size(rule) -> None:
    """A parsed rule within MAX_RULE_LENGTH, MAX_RULE_ATOMS and MAX_RULE_VARIABLES."""
    if len(rule.text) > MAX_RULE_LENGTH:
        raise ValueError(
            f"PSL rule {_excerpt(rule.text)}: {len(rule.text)} characters long; a rule has at most MAX_RULE_LENGTH "
            f"= {MAX_RULE_LENGTH}."
        )
    n_atoms = len(rule.atoms()) + (len(rule.filter_atoms()) if isinstance(rule, ArithmeticRule) else 0)
    if n_atoms > MAX_RULE_ATOMS:
        raise ValueError(
            f"PSL rule {_excerpt(rule.text)}: {n_atoms} atoms; a rule has at most MAX_RULE_ATOMS = {MAX_RULE_ATOMS} "
            "(filter atoms included: its grounding query joins them all)."
        )
    n_vars = len(_variables(rule))
    if n_vars > MAX_RULE_VARIABLES:
        raise ValueError(
            f"PSL rule {_excerpt(rule.text)}: {n_vars} distinct variables; a rule has at most MAX_RULE_VARIABLES = "
            f"{MAX_RULE_VARIABLES}."
        )


def _check_filters(rule: ArithmeticRule) -> None:
    """PSL's checks of filter clauses (``AbstractArithmeticRule.validateRule``), one clause per variable, and
    the number of rules the filters split into."""
    text = _excerpt(rule.text)
    plain = sorted({t.name for _, a in rule.terms for t in a.args if isinstance(t, Variable)})
    seen = set()
    for f in rule.filters:
        if f.variable not in rule.sum_variables:
            raise ValueError(
                f"PSL rule {text}: the filter clause {{{f.variable}: ...}} names {f.variable}, which is not a "
                f"summation variable of the rule (summation variables: "
                f"{', '.join('+' + v for v in rule.sum_variables) or 'none'}); a filter selects the terms of a "
                f"summation +{f.variable}."
            )
        if f.variable in seen:
            raise ValueError(
                f"PSL rule {text}: two filter clauses for +{f.variable}; write one, joining their formulas with '&' "
                "(PSL 2.4 would silently keep only the last one)."
            )
        seen.add(f.variable)
        for name in sorted(_variables_of(f) - {f.variable} - set(plain)):
            kind = "another summation variable" if name in rule.sum_variables else "not in the rule's expression"
            raise ValueError(
                f"PSL rule {text}: the filter clause {{{f.variable}: ...}} uses the variable {name}, which is {kind}; "
                f"a filter may use its own variable {f.variable} and the rule's other variables "
                f"({', '.join(plain) or 'none'})."
            )
    n = 1
    for f in rule.filters:
        try:
            n *= len(f.dnf(MAX_FILTER_SPLITS))
        except _TooManySplits as err:
            n *= err.n
        if n > MAX_FILTER_SPLITS:
            raise ValueError(
                f"PSL rule {text}: its filter clauses split it into more than MAX_FILTER_SPLITS = {MAX_FILTER_SPLITS} "
                "rules (PSL grounds one rule per disjunct of each filter's disjunctive normal form, and the "
                "product over filters); write fewer '|' alternatives."
            )


def _variables_of(f: Filter) -> set:
    names = set()
    for x in f.leaves():
        terms = x.atom.args if isinstance(x, Literal) else (x.left, x.right)
        names.update(t.name for t in terms if isinstance(t, Variable))
    return names


def parse_rule(text: str):
    """Parse one PSL rule.

    Parameters
    ----------
    text : str
        The rule, e.g. ``"0.5: Friends(A, B) & Votes(A, P) -> Votes(B, P) ^2"``.

    Returns
    -------
    LogicalRule or ArithmeticRule

    Raises
    ------
    ValueError
        A syntax error (the rule text, the column and what was expected), an invalid filter clause, or a
        rule past one of the limits (:data:`MAX_RULE_LENGTH`, :data:`MAX_NESTING`, :data:`MAX_RULE_ATOMS`,
        :data:`MAX_RULE_VARIABLES`, :data:`MAX_FILTER_SPLITS`), naming the limit.
    """
    if not isinstance(text, str):
        raise TypeError(f"`text` must be a string (a PSL rule); got {type(text).__name__}.")
    body = strip_comments(text).strip()
    if len(body) > MAX_RULE_LENGTH:  # refused before tokenizing
        raise ValueError(
            f"PSL rule {_excerpt(body)}: {len(body)} characters long; a rule has at most MAX_RULE_LENGTH = "
            f"{MAX_RULE_LENGTH}."
        )
    rules = parse_rules(text)
    if len(rules) != 1:
        if not rules:
            raise ValueError("PSL syntax error: `text` holds no rule.")
        raise ValueError(f"`text` must hold one rule; got {len(rules)}: {[r.text for r in rules]}.")
    return rules[0]


def parse_rules(text: str) -> list:
    """Parse a sequence of PSL rules (a ``.psl`` file's text; ``#`` and ``//`` start comments).

    Returns
    -------
    list of LogicalRule or ArithmeticRule

    Raises
    ------
    ValueError
        As :func:`parse_rule`, for the first rule in error.
    """
    text = strip_comments(text)
    p = _Parser(text)
    rules = []
    while p.tok.kind != "end":
        rules.append(p.rule())
    return rules


def strip_comments(text: str, quotes: str = "'\"") -> str:
    """Cut ``#`` and ``//`` comments outside strings quoted by one of ``quotes`` (lines and columns are kept).

    Rules quote constants with ``'`` or ``"``; JSON configurations (``quotes='"'``) only with ``"``.
    """
    out = []
    for line in text.split("\n"):
        quote = None
        cut = len(line)
        k = 0
        while k < len(line):
            ch = line[k]
            if quote:
                if ch == "\\":
                    k += 1
                elif ch == quote:
                    quote = None
            elif ch in quotes:
                quote = ch
            elif ch == "#" or line.startswith("//", k):
                cut = k
                break
            k += 1
        out.append(line[:cut])
    return "\n".join(out)
