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
  ``+ - * /`` over them; summation variables ``P(A, +C)``. Filter clauses ``{C: ...}`` are rejected
  with a ``ValueError`` that names them.

Arguments of atoms are variables (identifiers) or constants (single- or double-quoted strings).
A syntax error is a ``ValueError`` giving the rule text, the 1-based column and what was expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "Atom",
    "ArithmeticRule",
    "Coefficient",
    "Comparison",
    "Constant",
    "Literal",
    "LogicalRule",
    "SumVariable",
    "Variable",
    "parse_rule",
    "parse_rules",
]


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


# ---------------------------------------------------------------------------------------------- coefficients
@dataclass(frozen=True)
class Coefficient:
    """A coefficient expression of an arithmetic rule.

    ``kind`` is ``"num"`` (``value``), ``"card"`` (``|name|``, ``value`` the summation variable's name)
    or an operator ``"+" "-" "*" "/" "max" "min"`` over ``args``.
    """

    kind: str
    value: object = None
    args: tuple = ()

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
        if self.kind == "+":
            return a[0] + a[1]
        if self.kind == "-":
            return a[0] - a[1] if len(a) == 2 else -a[0]
        if self.kind == "*":
            return a[0] * a[1]
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
        return f"({self.args[0]} {self.kind} {self.args[1]})"


def _scale(c: Coefficient, s: float) -> Coefficient:
    if s == 1.0:
        return c
    if c.kind == "num":
        return Coefficient.number(c.value * s)
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
    """

    text: str
    weight: float | None
    squared: bool
    terms: tuple
    constant: Coefficient
    sense: str
    sum_variables: tuple = field(default=())

    @property
    def hard(self) -> bool:
        return self.weight is None

    def atoms(self) -> list[Atom]:
        return [a for _, a in self.terms]


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
    return ValueError(
        f"PSL syntax error in rule {line!r} at column {pos - line_start + 1}: expected {expected}, got {got}."
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
        if self.at("{"):
            raise ValueError(
                f"PSL rule {self.text[start : self.tok.pos].strip()!r}: filter clauses {{...}} are not supported."
            )
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
        text = self.text[start : self.toks[self.i - 1].pos + len(self.toks[self.i - 1].text)].strip()
        return LogicalRule(text, weight, squared, tuple(body[0]), tuple(head[0]))

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
            self.take()
            inner = self.logical_value()
            if len(inner) != 1:
                self.fail("a literal after '!' (a group of literals cannot be negated)")
            return [_negate(inner[0])]
        if self.at("("):
            # a parenthesized comparison (A != B), literal or group
            save = self.i
            self.take()
            if self._term_start() and self.peek().kind == "op" and self.peek().text in _COMPARE:
                cmp = self.comparison()
                self.expect(")")
                return [cmp]
            self.i = save
            self.take()
            lits, _, _ = self.disjunction_or_conjunction()
            self.expect(")", "')'")
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
        text = self.text[start : self.toks[self.i - 1].pos + len(self.toks[self.i - 1].text)].strip()
        terms = [(c, a) for c, a in lhs if a is not None] + [(_scale(c, -1.0), a) for c, a in rhs if a is not None]
        consts = [c for c, a in lhs if a is None] + [_scale(c, -1.0) for c, a in rhs if a is None]
        constant = Coefficient.number(0.0)
        for c in consts:
            constant = c if constant == Coefficient.number(0.0) else Coefficient("+", args=(constant, c))
        if not terms:
            raise ValueError(f"PSL rule {text!r}: an arithmetic rule needs at least one atom.")
        sum_vars = []
        for _, a in terms:
            for arg in a.args:
                if isinstance(arg, SumVariable) and arg.name not in sum_vars:
                    sum_vars.append(arg.name)
        used = set().union(*(c.cardinalities() for c, _ in terms), constant.cardinalities())
        unknown = sorted(used - set(sum_vars))
        if unknown:
            raise ValueError(
                f"PSL rule {text!r}: |{unknown[0]}| names no summation variable (write +{unknown[0]} in an atom)."
            )
        return ArithmeticRule(text, weight, squared, tuple(terms), constant, sense, tuple(sum_vars))

    def linear(self) -> list:
        """``operand ((+|-) operand)*`` as a list of (Coefficient, Atom or None)."""
        out = self.linear_operand(1.0)
        while self.at("+", "-"):
            sign = 1.0 if self.take().text == "+" else -1.0
            out.extend(self.linear_operand(sign))
        return out

    def linear_operand(self, sign: float) -> list:
        if self.at("-"):
            self.take()
            return self.linear_operand(-sign)
        if self.at("(") and self._paren_has_atom():
            self.take()
            inner = self.linear()
            self.expect(")")
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
            self.take()
            coef = Coefficient("/", args=(coef, self.coef_factor()))
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
            self.take()
            a = self.coef_atom()
            self.expect(")")
            return a
        if not (self.tok.kind == "ident" and self.peek().text == "("):
            self.fail("an atom P(A, ...)")
        return self.atom(summation=True)

    def coef_expr(self) -> Coefficient:
        """A full coefficient expression (inside parentheses or @Max/@Min): sums of products."""
        c = self.coef_term()
        while self.at("+", "-"):
            op = self.take().text
            c = Coefficient(op, args=(c, self.coef_term()))
        return c

    def coef_term(self) -> Coefficient:
        """Products and quotients of coefficient factors; a '*' followed by an atom ends it."""
        c = self.coef_factor()
        while self.at("*", "/") and not (self.at("*") and self._atom_after(1)):
            op = self.take().text
            c = Coefficient(op, args=(c, self.coef_factor()))
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
            self.take()
            close = "]" if self.at("[") else ")"
            self.expect("[" if close == "]" else "(", "'[' after " + t.text)
            a = self.coef_expr()
            self.expect(",")
            b = self.coef_expr()
            self.expect(close)
            return Coefficient(name[1:], args=(a, b))
        if self.at("("):
            self.take()
            c = self.coef_expr()
            self.expect(")")
            return c
        self.fail("a coefficient: a number, |X|, @Max[...] or @Min[...]")


def _negate(lit):
    if isinstance(lit, Literal):
        return Literal(lit.atom, not lit.negated)
    return Comparison(lit.op, lit.left, lit.right, not lit.negated)


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
        A syntax error (the rule text, the column and what was expected) or an unsupported construct.
    """
    if not isinstance(text, str):
        raise TypeError(f"`text` must be a string (a PSL rule); got {type(text).__name__}.")
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
