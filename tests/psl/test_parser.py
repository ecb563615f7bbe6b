"""The PSL rule parser: every construct of PSL 2.x rules, and syntax errors with column and expectation."""

import pytest

from tractable.psl import ArithmeticRule, LogicalRule, parse_rule, parse_rules
from tractable.psl.parser import Coefficient, Comparison, Constant, Literal, SumVariable, Variable


def _lit(s):
    return str(s)


def test_weighted_logical_rule():
    r = parse_rule("0.5: Friends(A, B) & Votes(A, P) -> Votes(B, P) ^2")
    assert isinstance(r, LogicalRule)
    assert (r.weight, r.squared, r.hard) == (0.5, True, False)
    assert [str(x) for x in r.body] == ["Friends(A, B)", "Votes(A, P)"]
    assert [str(x) for x in r.head] == ["Votes(B, P)"]


@pytest.mark.parametrize(
    "text",
    [
        "1: A(X) & B(X) -> C(X) | D(X)",
        "1: A(X) && B(X) >> C(X) || D(X)",
        "1: C(X) | D(X) <- A(X) & B(X)",
        "1: C(X) || D(X) << A(X) && B(X)",
        "1.0: (A(X) & B(X)) -> (C(X) | D(X)) ^1",
        "1: ((A(X)) & B(X)) -> C(X) | (D(X))",
    ],
)
def test_connective_spellings_give_the_same_rule(text):
    r = parse_rule(text)
    assert [str(x) for x in r.body] == ["A(X)", "B(X)"]
    assert [str(x) for x in r.head] == ["C(X)", "D(X)"]
    assert r.squared is False and r.weight == 1.0


def test_negation_priors_hard_rules_and_weights():
    r = parse_rule("0.001: !HasCat(A, N) ^2")
    assert r.body == () and r.head == (Literal(r.head[0].atom, negated=True),) and r.squared
    assert parse_rule("1: ~P(A) || ~~Q(A)").head[1].negated is False
    h = parse_rule("P(A) & Q(A) -> R(A) .")
    assert h.hard and h.weight is None
    assert parse_rule("0025: P(A) -> Q(A)").weight == 25.0  # leading zeros, as in psl-examples
    assert parse_rule("1e-3: P(A) -> Q(A)").weight == 1e-3
    assert parse_rule("0.50 : P(A) -> Q(A)").weight == 0.5


def test_constants_and_comparisons():
    r = parse_rule("1: HasCat(A, '1') & Link(A, B) & (A != B) & A == \"x\" & (B % A) -> HasCat(B, 'it\\'s')")
    assert r.body[0].atom.args == (Variable("A"), Constant("1"))
    assert r.body[2] == Comparison("!=", Variable("A"), Variable("B"))
    assert r.body[3] == Comparison("==", Variable("A"), Constant("x"))
    assert r.body[4] == Comparison("<", Variable("B"), Variable("A"))
    assert r.head[0].atom.args[1] == Constant("it's")
    assert parse_rule("1: P(A, B) & (A ~= B) -> Q(A)").body[1].op == "!="
    assert parse_rule("1: P(A, B) & !(A == B) -> Q(A)").body[1].negated


def test_arithmetic_rules():
    r = parse_rule("HasCat(A, +C) = 1 .")
    assert isinstance(r, ArithmeticRule) and r.hard and r.sense == "="
    assert r.terms[0][1].args == (Variable("A"), SumVariable("C"))
    assert r.constant.evaluate({}) == -1.0 and r.sum_variables == ("C",)
    r = parse_rule("2: 2 * P(A) + Q(A) / 4 - 1 >= 0.5 * R(A) + -S(A) ^2")
    assert r.weight == 2 and r.squared and r.sense == ">="
    assert [c.evaluate({}) for c, _ in r.terms] == [2.0, 0.25, -0.5, 1.0]
    assert r.constant.evaluate({}) == -1.0
    r = parse_rule("1: -(P(A) - 2 * Q(A)) <= 3 - 1")
    assert [c.evaluate({}) for c, _ in r.terms] == [-1.0, 2.0] and r.constant.evaluate({}) == -2.0
    r = parse_rule("1: @Max[1, |B|] * P(A, +B) <= |B| / 2")
    assert r.terms[0][0].evaluate({"B": 3.0}) == 3.0 and r.constant.evaluate({"B": 3.0}) == -1.5
    assert parse_rule("10.0: Same(R1, R2) = Same(R2, R1)").sense == "="
    assert parse_rule("1: Is(U, A, +L) = 1").weight == 1.0
    assert Coefficient("min", args=(Coefficient.number(1), Coefficient.number(2))).evaluate({}) == 1


def test_a_file_of_rules_with_comments():
    text = """
    # a comment
    1: P(A) -> Q(A)   // trailing comment
    P(A) + Q(A) <= 1 .
    2: !P(A) ^2
    Q(A) = 1 .
    1: P(A) | Q(A)
    0.3: P(A) & Q(A, '#not a comment') -> R(A)
    Q(X) = 0.5 .
    """
    rules = parse_rules(text)
    assert [type(r).__name__ for r in rules] == [
        "LogicalRule",
        "ArithmeticRule",
        "LogicalRule",
        "ArithmeticRule",
        "LogicalRule",
        "LogicalRule",
        "ArithmeticRule",
    ]
    assert rules[5].body[1].atom.args[1] == Constant("#not a comment")


# a sample of rules from linqs/psl-examples (2.4), parsed unchanged
_EXAMPLES = [
    "1.0: HasCat(A, C) & Link(A, B) & (A != B) >> HasCat(B, C) ^2",
    "interacts(D1, D2) = interacts(D2, D1) .",
    "SameAuthor(A, A) = 1.0 .",
    "0.5 : !Trusts(A, B) ^2",
    "0.014:  RATING(U, J) >> RATINGPRIOR('0') ^2",
    "0025: VALCAT(B, C) & SAMEENTITY(A, B) & CAT(A, C) -> CAT(B, C) ^2",
    "Votes(A, +B) <= 1 .",
    "1: !disagrees(A1, A2) & (A1 != A2) & responds(A1, A2) & participates(A1, T) & participates(A2, T) "
    "& !isProAuth(A1, T) -> !isProAuth(A2, T) ^2",
    "1: Friend(U, V) & ~Is(V, A, L)-> ~Is(U, A, L) ^2",
    "10.0: Same(R1, R2) = Same(R2, R1)",
]


@pytest.mark.parametrize("text", _EXAMPLES)
def test_psl_examples_rules_parse(text):
    r = parse_rule(text)
    assert r.text == text.strip()


@pytest.mark.parametrize(
    "text, column, expected",
    [
        ("1: P(A) -> ", 12, "expected a literal"),
        ("P(A) -> Q(A)", 13, "expected '.' at the end of a hard rule"),
        ("1: P(A, 1) -> Q(A)", 9, "constants are quoted"),
        ("1: P(A) & Q(A) | R(A) -> S(A)", 16, "mixing '&' and '|'"),
        ("1: P(A) -> Q(A) ^3", 18, "1 or 2 after '^'"),
        ("1: P(A) -> Q(A) .", 17, "a weighted rule has no final '.'"),
        ("1: P(A) | Q(A) -> R(A)", 9, "the body of a rule is a conjunction"),
        ("1: P(A) -> Q(A) & R(A)", 17, "the head of a rule is a disjunction"),
        ("1: P(A -> Q(A)", 8, "',' or ')'"),
        ("1: P(A) ? Q(A)", 9, "a rule token"),
        ("1: 2 * P(A) <= ", 16, "a coefficient"),
    ],
)
def test_syntax_errors_name_rule_column_and_expectation(text, column, expected):
    with pytest.raises(ValueError) as info:
        parse_rule(text)
    msg = str(info.value)
    assert repr(text.strip()) in msg
    assert f"at column {column}:" in msg
    assert expected in msg


def test_unsupported_and_invalid_constructs():
    with pytest.raises(ValueError, match="only arithmetic rules have them"):
        parse_rule("1: P(A) -> Q(A) {A: R(A)}")
    with pytest.raises(ValueError, match="weight must be >= 0"):
        parse_rule("-1: P(A) -> Q(A)")
    with pytest.raises(ValueError, match=r"\|C\| names no summation variable"):
        parse_rule("1: P(A, +B) <= |C|")
    with pytest.raises(ValueError, match="holds no rule"):
        parse_rule("  # only a comment")
    with pytest.raises(ValueError, match="must hold one rule; got 2"):
        parse_rule("1: P(A) -> Q(A)\n2: Q(A) -> P(A)")
    with pytest.raises(TypeError, match="`text` must be a string"):
        parse_rule(3)
