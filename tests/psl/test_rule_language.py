"""The PSL rule language past plain rules: filter clauses on summations, atoms of open predicates that are
neither observed nor targets, and the limits on hostile rule text.

Filter clauses follow PSL 2.4 (``AbstractArithmeticRule``: ``evalFilter``, ``split``, ``validateRule``,
``validateForGrounding``): a summed atom is kept when its filter holds, a filter atom holding when its
observed value is > 0; ``|X|`` counts the kept atoms; a filter whose normal form is a disjunction splits the
rule into one rule per disjunct. Ground programs are checked against a brute-force grounding written here
from those rules (constants enumerated in Python) and, where Java and ``pslpython``'s jar are installed,
against the ground rules PSL 2.4 itself writes (``runtime.inference.output.groundrules``).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tractable.psl import Model
from tractable.psl.grounding import MISSING_ATOMS, ground_rule
from tractable.psl.parser import (
    MAX_FILTER_SPLITS,
    MAX_NESTING,
    MAX_RULE_ATOMS,
    MAX_RULE_LENGTH,
    MAX_RULE_VARIABLES,
    Atom,
    Comparison,
    Connective,
    Constant,
    Filter,
    Literal,
    Variable,
    parse_rule,
    parse_rules,
)


# ---------------------------------------------------------------------------------------------- helpers
def _model(rules, data, closed=()):
    """data: {(pred, arity): {"observations": rows, "targets": rows}}; rows of observations end with a value."""
    m = Model()
    for name, arity in data:
        m.add_predicate(name, arity, closed=name in closed)
    for r in rules:
        m.add_rule(r)
    for (name, _), parts in data.items():
        for part, rows in parts.items():
            if rows:
                m.add_data(name, part, pd.DataFrame([list(r) for r in rows]))
    return m


def _atom_key(pred: str, args) -> str:
    return f"{pred.upper()}({', '.join(args)})"


def _canonical(terms: dict, const: float, sense: str):
    """A ground rule ``sum c x + const (sense) 0`` as a hashable tuple, coefficients rounded to 1e-4 (PSL
    writes float32 numbers); an equality is scaled so that its first atom's coefficient is positive."""
    terms = {k: v for k, v in terms.items() if abs(v) > 1e-9}
    if sense == "=" and terms and terms[min(terms)] < 0:
        terms = {k: -v for k, v in terms.items()}
        const = -const
    return (sense, tuple(sorted((k, round(v, 4) + 0.0) for k, v in terms.items())), round(const, 4) + 0.0)


def _ours(g) -> dict:
    """Our ground program: {(weight or None, squared): sorted list of canonical ground rules}, observed atoms
    folded into the constants."""
    atoms = g.atoms
    name = {int(v): _atom_key(p, a) for p, a, v in zip(atoms["predicate"], atoms["arguments"], atoms["variable"])}
    fixed = dict(zip(np.asarray(g.hlmrf.fixed[0]).tolist(), np.asarray(g.hlmrf.fixed[1]).tolist()))
    out: dict = {}
    for kind, arr in (("pot", g.hlmrf.potential_arrays()), ("con", g.hlmrf.constraint_arrays())):
        ind = arr["indptr"]
        for j in range(ind.size - 1):
            terms, const = {}, float(arr["constants"][j])
            for v, c in zip(arr["variables"][ind[j] : ind[j + 1]].tolist(), arr["coefficients"][ind[j] : ind[j + 1]]):
                if v in fixed:
                    const += c * fixed[v]
                else:
                    terms[name[v]] = terms.get(name[v], 0.0) + c
            if kind == "pot":
                key, sense = (float(arr["weights"][j]), bool(arr["squared"][j])), "<="
            else:
                key, sense = (None, False), "=" if int(arr["senses"][j]) == 1 else "<="
            out.setdefault(key, []).append(_canonical(terms, const, sense))
    return {k: sorted(v) for k, v in out.items()}


def _objective(g, x):
    return g.hlmrf.objective(x) + g.offset


# ---------------------------------------------------------------------------------------------- PSL's jar
def _psl_jar():
    if shutil.which("java") is None or importlib.util.find_spec("pslpython") is None:
        return None
    from pathlib import Path

    jar = Path(importlib.util.find_spec("pslpython").origin).parent / "psl-runtime.jar"
    return jar if jar.exists() else None


needs_psl = pytest.mark.skipif(_psl_jar() is None, reason="PSL 2.4's jar needs pslpython and java on PATH")
_PSL_TERM = re.compile(r"(-?[0-9.Ee+-]+) \* (\w+)\(([^)]*)\)")


def _run_psl(tmp_path, rules, data, closed):
    """Run PSL 2.4 on a program (rules in a .psl file, so that PSL may split them); return its exit code, log
    and ground program in the form of :func:`_ours` (rule weights restored from PSL's normalized ones)."""
    preds = {}
    for (name, arity), parts in data.items():
        spec = {}
        for part in ("observations", "targets"):
            if part == "targets" and name in closed:
                continue
            f = f"{name}_{part}.txt"
            (tmp_path / f).write_text("".join("\t".join(map(str, r)) + "\n" for r in parts.get(part, [])))
            spec[part] = [f]
        preds[f"{name}/{arity}"] = spec
    (tmp_path / "rules.psl").write_text("\n".join(rules) + "\n")
    options = {
        "runtime.log.level": "DEBUG",
        "runtime.inference.output.groundrules": True,
        "runtime.inference.output.groundrules.path": str(tmp_path / "ground.txt"),
        "runtime.inference.output.results.dir": str(tmp_path / "out"),
        "parallel.numthreads": 1,
    }
    (tmp_path / "program.json").write_text(json.dumps({"rules": "rules.psl", "predicates": preds, "options": options}))
    proc = subprocess.run(
        ["java", "-jar", str(_psl_jar()), "program.json"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    log = proc.stdout + proc.stderr
    observed = {
        _atom_key(name, map(str, r[:arity])): float(r[arity])
        for (name, arity), parts in data.items()
        for r in parts.get("observations", [])
    }
    targets = {_atom_key(name, map(str, r)) for (name, _), parts in data.items() for r in parts.get("targets", [])}
    weights = [float(r.split(":")[0]) for r in rules if re.match(r"^\s*[\d.]+\s*:", r)]
    top = max(weights, default=1.0)
    out: dict = {}
    path = tmp_path / "ground.txt"
    for line in path.read_text().splitlines()[1:] if path.exists() else []:
        w, sq, text = line.split("\t")
        m = re.match(r"^(.*) (<=|>=|=) (-?[0-9.Ee+-]+)$", text)
        if m is None:  # a logical ground rule
            continue
        lhs, op, k = m.groups()
        terms, const = {}, -float(k)
        for c, pred, args in _PSL_TERM.findall(lhs):
            key = _atom_key(pred, [a.strip().strip("'") for a in args.split(",")])
            if key in targets:
                terms[key] = terms.get(key, 0.0) + float(c)
            else:
                const += float(c) * observed.get(key, 0.0)  # a closed predicate's missing atom is 0
        if op == ">=":
            terms, const = {a: -c for a, c in terms.items()}, -const
        if w == ".":
            key, sense = (None, False), "=" if op == "=" else "<="
        else:
            key, sense = (round(float(w) * top, 6), sq == "true"), "<="
        out.setdefault(key, []).append(_canonical(terms, const, sense))
    return proc.returncode, log, {k: sorted(v) for k, v in out.items()}


# ---------------------------------------------------------------------------------------------- parsing
def test_filter_clauses_parse_into_the_rule():
    r = parse_rule("1: P(A, +B) <= 1 ^2 {B: Q(A, B)}")
    assert r.squared and r.text == "1: P(A, +B) <= 1 ^2 {B: Q(A, B)}"
    assert r.filters == (Filter("B", Literal(Atom("Q", (Variable("A"), Variable("B"))))),)
    assert r.filter_atoms() == [Atom("Q", (Variable("A"), Variable("B")))]
    # several clauses (one per summation variable), after the '.' of a hard rule; & binds tighter than |
    r = parse_rule("T(A, +B, +C) <= 1 . {B: !Q(A, B) | R(B) & B != 'x'} {C: (C % A)}")
    f_b, f_c = r.filters
    q = Literal(Atom("Q", (Variable("A"), Variable("B"))), negated=True)
    rb = Literal(Atom("R", (Variable("B"),)))
    ne = Comparison("!=", Variable("B"), Constant("x"))
    assert f_b.formula == Connective("|", (q, Connective("&", (rb, ne))))
    assert f_c.formula == Comparison("<", Variable("C"), Variable("A"))
    assert f_b.dnf() == ((q,), (rb, ne))
    # PSL splits the rule into one per disjunct, times the other filters' disjuncts
    assert r.filter_splits() == [{"B": (q,), "C": (f_c.formula,)}, {"B": (rb, ne), "C": (f_c.formula,)}]
    assert parse_rule("P(A, +B) = 1 .").filter_splits() == [{}]
    # the spellings of PSL's grammar: && and ||, ~ for !, parenthesized literals, ^ / - as comparisons
    r1 = parse_rule("1: P(A, +B) <= 1 {B: (Q(A, B) && ~R(B)) || (B - A)}")
    r2 = parse_rule("1: P(A, +B) <= 1 {B: Q(A, B) & !(R(B)) | B != A}")
    assert r1.filters == r2.filters
    # a rule after a filtered one in a file
    rules = parse_rules("1: P(A, +B) <= 1 {B: Q(A, B)}\nP(A, +B) = 1 . {B: R(B)}\n2: P(A, B) -> R(B)")
    assert [type(r).__name__ for r in rules] == ["ArithmeticRule", "ArithmeticRule", "LogicalRule"]
    assert rules[1].text == "P(A, +B) = 1 . {B: R(B)}"


def test_filter_normal_form_merges_repeats_as_psl_flatten_does():
    f = parse_rule("1: P(A, +B) <= 1 {B: (Q(B) | R(B)) & (Q(B) | R(B)) & Q(B)}").filters[0]
    q, r = Literal(Atom("Q", (Variable("B"),))), Literal(Atom("R", (Variable("B"),)))
    # Q&Q&Q, Q&R&Q, R&Q&Q, R&R&Q: repeats merged within each (Q; Q&R; R&Q; R&Q), then equal sets: Q | Q&R
    assert f.dnf() == ((q,), (q, r))
    # a contradiction is kept (it keeps no term), as in PSL
    f = parse_rule("1: P(A, +B) <= 1 {B: Q(B) & !Q(B)}").filters[0]
    assert f.dnf() == ((q, Literal(q.atom, negated=True)),)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "1: P(A, +B) <= 1 {C: Q(C)}",
            "the filter clause {C: ...} names C, which is not a summation variable of the rule (summation variables: "
            "+B)",
        ),
        (
            "1: P(A, B) <= 1 {B: Q(B)}",
            "names B, which is not a summation variable of the rule (summation variables: none)",
        ),
        (
            "1: P(A, +B) <= 1 {B: Q(B)} {B: R(B)}",
            "two filter clauses for +B; write one, joining their formulas with '&'",
        ),
        (
            "1: P(A, +B) + S(A, +C) <= 1 {B: Q(B, C)}",
            "the filter clause {B: ...} uses the variable C, which is another summation variable; a filter may use its "
            "own variable B and the rule's other variables (A).",
        ),
        ("1: P(A, +B) <= 1 {B: Q(Z, B)}", "uses the variable Z, which is not in the rule's expression"),
        ("1: P(A, +B) <= 1 {B: !(Q(B) & R(B))}", "expected an atom or a comparison after '!' (PSL's grammar negates"),
        ("1: P(A, +B) <= 1 {+B: Q(B)}", "expected the summation variable's name without '+'"),
        ("1: P(A, +B) <= 1 {B Q(B)}", "expected ':' after the filter clause's variable"),
        ("1: P(A, +B) <= 1 {B: Q(+B)}", "expected a variable or a quoted constant"),
        ("1: P(A, +B) <= 1 {B: Q(B)", "expected '}' closing the filter clause"),
        ("1: P(A) -> Q(A) {A: R(A)}", "only arithmetic rules have them"),
        ("1: P(+B, +B) <= 1", "+B appears twice in P(+B, +B); a summation variable sums over one argument"),
        ("P(A) -> Q(A) . {A: R(A)}", "only arithmetic rules have them"),
    ],
)
def test_invalid_filter_clauses_are_value_errors_naming_the_problem(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_rule(text)


def test_a_filter_splitting_into_too_many_rules_is_refused():
    # (Q1 | R1) & ... & (Q7 | R7) has 2^7 = 128 disjuncts
    f = " & ".join(f"(Q{i}(B) | R{i}(B))" for i in range(7))
    with pytest.raises(ValueError, match=re.escape(f"split it into more than MAX_FILTER_SPLITS = {MAX_FILTER_SPLITS}")):
        parse_rule(f"1: P(A, +B) <= 1 {{B: {f}}}")
    # the product over filters counts: 8 x 16 = 128
    fb = " | ".join(f"Q{i}(B)" for i in range(8))
    fc = " | ".join(f"R{i}(C)" for i in range(16))
    with pytest.raises(ValueError, match="MAX_FILTER_SPLITS"):
        parse_rule(f"1: T(A, +B, +C) <= 1 {{B: {fb}}} {{C: {fc}}}")
    assert len(parse_rule(f"1: T(A, +B, +C) <= 1 {{B: {fb}}} {{C: R0(C) | R1(C)}}").filter_splits()) == 16


# ---------------------------------------------------------------------------------------------- grounding by hand
def _filter_data():
    return {
        ("P", 2): {
            "targets": [("a", "b1"), ("a", "b2"), ("a", "b3"), ("c", "b1"), ("d", "b2")],
            "observations": [("c", "b4", 0.4)],
        },
        ("Z", 1): {"targets": [("a",), ("c",), ("d",)]},
        ("Q", 2): {"observations": [("a", "b1", 1.0), ("a", "b2", 0.5), ("a", "b3", 0.0), ("c", "b4", 1.0)]},
        ("R", 1): {"observations": [("b1", 1.0), ("b3", 1.0)]},
    }


def test_filter_keeps_the_terms_whose_filter_holds_and_cardinality_counts_them():
    data = _filter_data()
    # {B: Q(A, B)}: Q(a, b1) = 1 and Q(a, b2) = 0.5 hold (> 0), Q(a, b3) = 0 and missing atoms do not.
    # a: P(a,b1) + P(a,b2) <= |B| / 2 = 1; c: P(c,b4) (observed 0.4) <= 0.5, no free atom, satisfied; d: nothing
    # kept and no other atom: no ground rule at all (PSL grounds nothing when every atom is filtered out)
    g = _model(["1: P(A, +B) <= |B| / 2 {B: Q(A, B)}"], data, closed={"Q", "R"}).ground()
    assert _ours(g) == {(1.0, False): [_canonical({"P(a, b1)": 1, "P(a, b2)": 1}, -1.0, "<=")]}
    assert g.offset == 0.0
    # negated: {B: !Q(A, B)} keeps b3 (value 0) for a, b1 for c (missing), b2 for d; P(c, b4) is filtered out
    g = _model(["2: P(A, +B) <= |B| - 1 ^2 {B: !Q(A, B)}"], data, closed={"Q", "R"}).ground()
    # a: P(a,b3) <= 0; c: P(c,b1) <= 0; d: P(d,b2) <= 0 (single atoms, not trivial: x <= 0 binds)
    assert _ours(g) == {
        (2.0, True): sorted(
            _canonical({f"P({a}, {b})": 1}, 0.0, "<=") for a, b in [("a", "b3"), ("c", "b1"), ("d", "b2")]
        )
    }
    # with a plain atom the grounding stays when every summed atom is filtered out, with |B| = 0 (d here)
    g = _model(["1: Z(A) + P(A, +B) >= |B| {B: Q(A, B) & R(B)}"], data, closed={"Q", "R"}).ground()
    # a: only b1 passes both, |B| = 1; c and d keep nothing: Z(c) >= 0 and Z(d) >= 0 hold on [0, 1] (dropped)
    assert _ours(g) == {(1.0, False): [_canonical({"Z(a)": -1, "P(a, b1)": -1}, 1.0, "<=")]}


def test_a_disjunctive_filter_splits_the_rule_as_psl_does():
    data = _filter_data()
    # {B: Q(A, B) | R(B)} is two rules: one filtered by Q(A, B), one by R(B) (PSL 2.4 Model.addRule -> split)
    g = _model(["1: Z(A) + P(A, +B) <= 1 {B: Q(A, B) | R(B)}"], data, closed={"Q", "R"}).ground()
    # by Q(A, B): a keeps b1, b2; c keeps the observed P(c, b4) = 0.4 (two atoms: PSL's single-atom test does
    # not apply, the ground rule stays); d keeps nothing: Z(d) <= 1 holds on [0, 1]
    by_q = [
        _canonical({"Z(a)": 1, "P(a, b1)": 1, "P(a, b2)": 1}, -1.0, "<="),
        _canonical({"Z(c)": 1}, 0.4 - 1.0, "<="),
    ]
    # by R(B): a keeps b1, b3; c keeps b1; d nothing
    by_r = [
        _canonical({"Z(a)": 1, "P(a, b1)": 1, "P(a, b3)": 1}, -1.0, "<="),
        _canonical({"Z(c)": 1, "P(c, b1)": 1}, -1.0, "<="),
    ]
    assert _ours(g) == {(1.0, False): sorted(by_q + by_r)}
    assert g.rule_counts[0][1] == 4


def test_filter_comparisons_and_constants_missing_from_the_data():
    data = _filter_data()
    closed = {"Q", "R"}
    # 'b2' is in the data, 'zz' and 'b0' are not; % is PSL's string order
    cases = {
        "1: P(A, +B) <= 0 {B: B == 'b2'}": [("a", "b2"), ("d", "b2")],
        "1: P(A, +B) <= 0 {B: B != 'zz' & B % 'b2'}": [("a", "b1"), ("c", "b1")],
        "1: P(A, +B) <= 0 {B: B == 'zz'}": [],
        "1: P(A, +B) <= 0 {B: 'b0' % B & !(B % 'b3')}": [("a", "b3")],  # b4 is observed: no free atom
        "1: P(A, +B) <= 0 {B: !Q(A, 'zz') & A == 'a'}": [("a", "b1"), ("a", "b2"), ("a", "b3")],
    }
    for rule, kept in cases.items():
        g = _model([rule], data, closed=closed).ground()
        want = {}
        for a, b in kept:
            want.setdefault(a, {})[f"P({a}, {b})"] = 1.0
        expected = sorted(_canonical(t, 0.0, "<=") for t in want.values())
        assert _ours(g) == ({(1.0, False): expected} if expected else {}), rule


def test_cardinality_counts_kept_atoms_for_two_summation_variables_in_one_atom():
    # PSL 2.4 counts the summed atoms: with T(A, +B, +C), |B| = |C| = the number of kept T atoms
    data = {
        ("T", 3): {"targets": [("a", "b1", "c1"), ("a", "b1", "c2"), ("a", "b2", "c1")]},
        ("R", 1): {"observations": [("b1", 1.0), ("c1", 1.0)]},
    }
    t = {f"T(a, {b}, {c})": 1.0 for b, c in [("b1", "c1"), ("b1", "c2"), ("b2", "c1")]}
    g = _model(["1: T(A, +B, +C) <= |B| - 1", "2: T(A, +B, +C) <= |C| * 0.5"], data, closed={"R"}).ground()
    assert _ours(g) == {(1.0, False): [_canonical(t, -2.0, "<=")], (2.0, False): [_canonical(t, -1.5, "<=")]}
    # {B: R(B)} {C: !R(C)}: only (b1, c2) is kept: |B| = |C| = 1
    g = _model(["1: T(A, +B, +C) <= |C| - 1 {B: R(B)} {C: !R(C)}"], data, closed={"R"}).ground()
    assert _ours(g) == {(1.0, False): [_canonical({"T(a, b1, c2)": 1.0}, 0.0, "<=")]}


def test_division_by_a_cardinality_that_a_filter_makes_zero_is_an_error():
    data = _filter_data()
    # d keeps no P atom under {B: Q(A, B)} but has Z(d): |B| = 0 divides (PSL 2.4: ArithmeticException)
    m = _model(["1: Z(A) + P(A, +B) / |B| <= 1 {B: Q(A, B)}"], data, closed={"Q", "R"})
    with pytest.raises(
        ValueError, match=re.escape("a coefficient is not finite in some grounding (a division by 0 or")
    ):
        m.ground()


def test_filters_use_closed_predicates_only():
    data = _filter_data()
    with pytest.raises(
        ValueError,
        match=re.escape(
            "the filter clause {B: ...} uses Z(B) of the open predicate Z/1; a filter reads observed values, so only "
            "closed predicates may appear in filters (as in PSL 2.4)."
        ),
    ):
        _model(["1: P(A, +B) <= 1 {B: Z(B)}"], data, closed={"Q", "R"})
    with pytest.raises(ValueError, match=re.escape("unknown predicate 'Nope'")):
        _model(["1: P(A, +B) <= 1 {B: Nope(B)}"], data, closed={"Q", "R"})
    with pytest.raises(ValueError, match=re.escape("Q(B) has 1 arguments but Q/2 has arity 2")):
        _model(["1: P(A, +B) <= 1 {B: Q(B)}"], data, closed={"Q", "R"})


def test_filter_atoms_are_true_above_zero_in_float32_as_psl_reads_them():
    # PSL stores values as float32: 1e-50 is 0 there, 1e-30 is not
    data = {("P", 1): {"targets": [("x",), ("y",)]}, ("R", 1): {"observations": [("x", 1e-50), ("y", 1e-30)]}}
    g = _model(["1: P(+B) <= 0 {B: R(B)}"], data, closed={"R"}).ground()
    assert _ours(g) == {(1.0, False): [_canonical({"P(y)": 1.0}, 0.0, "<=")]}


# ---------------------------------------------------------------------------------------------- brute force
_CONSTS = ["a", "b", "c", "d"]
_LITERALS = ["Q(A, B)", "Q(B, A)", "R(B)", "B != A", "B == 'b'", "B % 'c'", "A == 'a'", "Q(B, 'zz')", "B % 'zz'"]


def _holds(lit: str, env: dict, values: dict) -> bool:
    """One filter literal (as written in _LITERALS, possibly with a leading '!') by hand."""
    if lit.startswith("!("):
        return not _holds(lit[2:-1], env, values)
    m = re.fullmatch(r"(\w)\((\w|'\w+'), (\w|'\w+')\)|(\w)\((\w)\)", lit)
    if m:
        if m.group(1):
            pred, args = m.group(1), [m.group(2), m.group(3)]
        else:
            pred, args = m.group(4), [m.group(5)]
        key = (pred, tuple(a.strip("'") if a.startswith("'") else env[a] for a in args))
        return values.get(key, 0.0) > 0
    left, op, right = lit.split(" ")
    lv = left.strip("'") if left.startswith("'") else env[left]
    rv = right.strip("'") if right.startswith("'") else env[right]
    return {"==": lv == rv, "!=": lv != rv, "%": lv < rv}[op]


@st.composite
def _filtered_programs(draw):
    """A weighted summation rule with a filter written as explicit disjuncts, and random data."""
    gen = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    values, present, targets = {}, set(), set()
    for a, b in itertools.product(_CONSTS, repeat=2):
        if gen.random() < 0.6:
            present.add(("P", (a, b)))
            if gen.random() < 0.7:
                targets.add(("P", (a, b)))
            else:
                values[("P", (a, b))] = float(gen.choice([0.0, 0.4, 1.0]))
        if gen.random() < 0.6:
            values[("Q", (a, b))] = float(gen.choice([0.0, 0.3, 1.0]))
    for a in _CONSTS:
        if gen.random() < 0.6:
            values[("R", (a,))] = float(gen.choice([0.0, 0.3, 1.0]))
        if gen.random() < 0.7:
            present.add(("Z", (a,)))
            targets.add(("Z", (a,)))
    disjuncts = []
    for _ in range(draw(st.integers(1, 2))):
        conj = draw(st.lists(st.sampled_from(_LITERALS), min_size=1, max_size=2, unique=True))
        conj = [f"!({c})" if draw(st.booleans()) else c for c in conj]
        if set(conj) not in [set(d) for d in disjuncts]:  # equal disjuncts are one rule (as PSL's flatten)
            disjuncts.append(conj)
    plain = draw(st.booleans())
    coef = draw(st.sampled_from(["", "0.5 * ", "|B| * "]))
    rhs = draw(st.sampled_from(["1", "|B| / 2", "|B| - 1"]))
    sense = draw(st.sampled_from(["<=", ">=", "="]))
    sq = draw(st.sampled_from(["", " ^2"]))
    text = (
        f"1.5: {'Z(A) + ' if plain else ''}{coef}P(A, +B) {sense} {rhs}{sq} "
        + "{B: "
        + " | ".join(" & ".join(c) for c in disjuncts)
        + "}"
    )
    return text, disjuncts, plain, coef, rhs, sense, sq == " ^2", values, present, targets


def _brute_objective(program, x_of) -> float:
    """PSL 2.4's ground potentials of the rule, written out: one rule per disjunct; per binding A (every A with
    some P(A, b), and Z(A) when the rule has it), the P atoms that exist and pass the disjunct; |B| their number;
    no grounding when nothing is left and there is no Z atom."""
    _, disjuncts, plain, coef, rhs, sense, squared, values, present, _ = program
    total = 0.0
    for conj in disjuncts:
        for a in _CONSTS:
            if not any(("P", (a, b)) in present for b in _CONSTS) or (plain and ("Z", (a,)) not in present):
                continue
            kept = [
                b
                for b in _CONSTS
                if ("P", (a, b)) in present and all(_holds(lit, {"A": a, "B": b}, values) for lit in conj)
            ]
            if not kept and not plain:
                continue
            n = float(len(kept))
            c = {"": 1.0, "0.5 * ": 0.5, "|B| * ": n}[coef]
            lhs = (x_of("Z", (a,)) if plain else 0.0) + sum(c * x_of("P", (a, b)) for b in kept)
            r = {"1": 1.0, "|B| / 2": n / 2, "|B| - 1": n - 1}[rhs]
            e = lhs - r
            for d in {"<=": [e], ">=": [-e], "=": [e, -e]}[sense]:
                h = max(d, 0.0)
                total += 1.5 * (h * h if squared else h)
    return total


@settings(max_examples=30, deadline=None)
@given(_filtered_programs(), st.integers(0, 2**31 - 1))
def test_filtered_summations_ground_to_the_brute_force_objective(program, seed):
    text, *_, values, present, targets = program
    data = {
        ("P", 2): {
            "targets": [args for p, args in sorted(targets) if p == "P"],
            "observations": [(*args, values[("P", args)]) for p, args in sorted(present - targets) if p == "P"],
        },
        ("Z", 1): {"targets": [args for p, args in sorted(targets) if p == "Z"]},
        ("Q", 2): {"observations": [(*args, v) for (p, args), v in sorted(values.items()) if p == "Q"]},
        ("R", 1): {"observations": [(*args, v) for (p, args), v in sorted(values.items()) if p == "R"]},
        ("W", 1): {"targets": [("w",)]},  # a target always, so that the model has one
    }
    g = _model([text], data, closed={"Q", "R"}).ground()
    rng = np.random.default_rng(seed)
    x = rng.random(g.hlmrf.n_variables)
    fv, fx = g.hlmrf.fixed
    x[np.asarray(fv)] = fx
    index = {(p, tuple(a)): int(v) for p, a, v in zip(g.atoms["predicate"], g.atoms["arguments"], g.atoms["variable"])}

    def x_of(pred, args):
        return x[index[(pred, args)]]

    # tolerance: sums of a few dozen float terms
    assert _objective(g, x) == pytest.approx(_brute_objective(program, x_of), rel=1e-9, abs=1e-9)


# ---------------------------------------------------------------------------------------------- against PSL 2.4
@needs_psl
def test_filter_clauses_ground_as_psl_2_4_does(tmp_path):
    data = {
        ("P", 2): {
            "targets": [("a", "b1"), ("a", "b2"), ("a", "b3"), ("c", "b1"), ("c", "b3"), ("d", "b2")],
            "observations": [("c", "b4", 0.4), ("d", "b3", 1.0)],
        },
        ("Z", 1): {"targets": [("a",), ("c",), ("d",)]},
        ("T", 3): {"targets": [("a", "b1", "c1"), ("a", "b1", "c2"), ("a", "b2", "c1"), ("c", "b3", "c1")]},
        ("Q", 2): {
            "observations": [("a", "b1", 1.0), ("a", "b2", 0.5), ("a", "b3", 0.0), ("c", "b4", 1.0), ("b2", "a", 0.3)]
        },
        ("R", 1): {"observations": [("b1", 1.0), ("b3", 1.0), ("c1", 0.2)]},
    }
    closed = {"Q", "R"}
    rules = [
        "1: Z(A) + P(A, +B) <= 1 {B: Q(A, B)}",
        "2: P(A, +B) <= |B| / 2 ^2 {B: !Q(A, B)}",
        "3: Z(A) + P(A, +B) >= 0.5 * |B| {B: Q(A, B) & R(B)}",
        "4: Z(A) + |B| * P(A, +B) <= |B| {B: Q(A, B) | Q(B, A)}",  # split in two rules
        "5: T(A, +B, +C) <= |B| - 1 {B: R(B)} {C: C != 'c2'}",
        "6: P(A, +B) = 1 {B: B % 'b3' | B == 'b3'}",  # weighted equality: two hinges per split rule
        "7: Z(A) + P(A, +B) <= |B| ^2 {B: (Q(A, B) | R(B)) & B != 'zz'}",
        "8: P(A, +B) <= 0.5 {B: !Q(B, 'nope') & !(A == 'd')}",
        "P(A, +B) <= 1 . {B: Q(A, B) | R(B)}",
    ]
    rc, log, psl = _run_psl(tmp_path, rules, data, closed)
    assert rc == 0, log[-3000:]
    assert "Rule is being split" in log
    ours = _ours(_model(rules, data, closed=closed).ground())
    assert ours == psl


@needs_psl
def test_an_open_predicate_in_a_filter_is_refused_as_by_psl_2_4(tmp_path):
    data = {("P", 2): {"targets": [("a", "b")]}, ("L", 1): {"targets": [("b",)]}}
    rc, log, _ = _run_psl(tmp_path, ["1: P(A, +B) <= 1 {B: L(B)}"], data, set())
    assert rc != 0 and "Open predicate (L) not allowed in filter" in log
    with pytest.raises(ValueError, match=re.escape("uses L(B) of the open predicate L/1")):
        _model(["1: P(A, +B) <= 1 {B: L(B)}"], data)


# ---------------------------------------------------------------------------------------------- missing atoms
_LINKS = {
    ("Link", 2): {"observations": [("a", "b", 1.0), ("a", "c", 1.0), ("b", "d", 1.0)]},
    ("Lab", 1): {"targets": [("a",), ("b",)], "observations": [("d", 1.0)]},
}
_LINK_RULE = "1: Link(A, B) & Lab(A) -> Lab(B)"


def _ground_directly(rule, data, closed, **kw):
    """Ground one rule on a model's tables with ground_rule's options (the model itself grounds no rule)."""
    m = _model([], data, closed=closed)
    g = m.ground()
    return ground_rule(m._con, parse_rule(rule), m._preds, g.hlmrf.n_variables, **kw)


def test_a_missing_atom_of_an_open_predicate_names_the_atom_and_the_rule():
    # Lab(c) is neither observed nor a target; the grounding (a, c) uses it; (b, d) uses the observed Lab(d)
    with pytest.raises(ValueError) as info:
        _ground_directly(_LINK_RULE, _LINKS, {"Link"}, missing_atoms="error")
    assert str(info.value) == (
        "PSL rule '1: Link(A, B) & Lab(A) -> Lab(B)': the atom Lab('c') of the open predicate Lab/1 is neither "
        "observed nor a target (1 ground rule(s) of this rule use such atoms). PSL 2.4 stops here too; list the atom "
        "in the targets (or observations) of its predicate, or declare the predicate closed (a closed predicate's "
        "missing atoms are 0)."
    )
    # "drop" leaves the ground rule out (PSL with pam.throw = false); "zero" keeps it with Lab(c) = 0
    (drop,) = _ground_directly(_LINK_RULE, _LINKS, {"Link"}, missing_atoms="drop")
    (zero,) = _ground_directly(_LINK_RULE, _LINKS, {"Link"}, missing_atoms="zero")
    assert (drop.n_missing, zero.n_missing) == (1, 1)
    assert drop.missing_example == "the atom Lab('c') of the open predicate Lab/1"
    # (a, b) stays; (a, c) only with "zero" (la - 0); (b, d) is satisfied by the observed head Lab(d) = 1
    assert (drop.constants.size, zero.constants.size) == (1, 2)
    assert drop.n_groundings == zero.n_groundings == 3
    # the default of ground_rule is "zero" (the closed world of earlier versions)
    (default,) = _ground_directly(_LINK_RULE, _LINKS, {"Link"})
    assert default.constants.size == 2
    with pytest.raises(ValueError, match=re.escape("`missing_atoms` must be one of error, drop, zero; got 'raise'")):
        _ground_directly(_LINK_RULE, _LINKS, {"Link"}, missing_atoms="raise")
    assert MISSING_ATOMS == ("error", "drop", "zero")


def test_a_missing_atom_in_a_trivially_satisfied_ground_rule_is_no_error():
    # PSL checks triviality first: Link(a, c) observed at 0 makes the ground rule of (a, c) true
    data = {
        ("Link", 2): {"observations": [("a", "b", 1.0), ("a", "c", 0.0)]},
        ("Lab", 1): {"targets": [("a",), ("b",)]},
    }
    (block,) = _ground_directly(_LINK_RULE, data, {"Link"}, missing_atoms="error")
    assert block.n_missing == 0 and block.constants.size == 1
    # a closed predicate's missing atom is 0, never an error
    data = {("Link", 2): {"observations": [("a", "b", 1.0)]}, ("Lab", 1): {"observations": [("a", 1.0)]}}
    data[("Out", 1)] = {"targets": [("a",)]}
    (block,) = _ground_directly("1: Link(A, B) & Out(A) -> Lab(B)", data, {"Link", "Lab"}, missing_atoms="error")
    assert block.n_missing == 0 and block.constants.size == 1


@needs_psl
def test_missing_open_atoms_fail_in_psl_2_4_too(tmp_path):
    for sub in ("missing", "full"):
        (tmp_path / sub).mkdir()
    rc, log, _ = _run_psl(tmp_path / "missing", [_LINK_RULE], _LINKS, {"Link"})
    assert rc != 0 and "PersistedAtomManagementException" in log and "Offending atom(s): [LAB('c')]" in log
    # with Lab(c) a target PSL grounds two rules ((b, d) is satisfied by Lab(d) = 1), as we do
    full = {**_LINKS, ("Lab", 1): {"targets": [("a",), ("b",), ("c",)], "observations": [("d", 1.0)]}}
    rc, log, _ = _run_psl(tmp_path / "full", [_LINK_RULE], full, {"Link"})
    assert rc == 0, log[-3000:]
    assert re.search(r"Grounded 2 terms from rule", log)
    (block,) = _ground_directly(_LINK_RULE, full, {"Link"}, missing_atoms="error")
    assert block.constants.size == 2


# ---------------------------------------------------------------------------------------------- limits
def _deep(n: int) -> dict:
    """Rules nested n levels deep, one per construct that nests."""
    return {
        "parentheses": "1: " + "(" * n + "P(A)" + ")" * n + " -> Q(A)",
        "negations": "1: " + "!" * n + "P(A) -> Q(A)",
        "arithmetic groups": "1: " + "(" * n + "P(A)" + ")" * n + " <= 1",
        "unary minus": "1: " + "-" * n + "P(A) <= 1",
        "coefficient groups": "1: " + "(" * n + "2" + ")" * n + " * P(A) <= 1",
        "@Max": "1: " + "@Max[1, " * n + "|B|" + "]" * n + " * P(A, +B) <= 1",
        "atom groups": "1: 2 * " + "(" * n + "P(A)" + ")" * n + " <= 1",
        "filter groups": "1: P(A, +B) <= 1 {B: " + "(" * (n - 1) + "Q(B)" + ")" * (n - 1) + "}",
        "filter negations": "1: P(A, +B) <= 1 {B: " + "!" * (n - 1) + "Q(B)}",
    }


@pytest.mark.parametrize("construct", list(_deep(1)))
def test_deep_nesting_is_a_value_error_stating_the_limit(construct):
    # at the limit it parses; past it, and at 10^4 levels, a ValueError (never a RecursionError)
    parse_rule(_deep(MAX_NESTING)[construct])
    for n in (MAX_NESTING + 1, 10_000):
        with pytest.raises(ValueError, match=re.escape(f"nested more than MAX_NESTING = {MAX_NESTING} levels deep")):
            parse_rule(_deep(n)[construct])


def test_long_flat_expressions_are_not_deep():
    # sums, products and constants of thousands of terms are one level deep: no limit but the length
    r = parse_rule("1: P(A) + " + " + ".join(["1"] * 5000) + " <= 0")
    assert r.constant.evaluate({}) == 5000.0
    r = parse_rule("1: (" + " + ".join(["|B|"] * 3000) + ") * P(A, +B) <= 1")
    assert r.terms[0][0].evaluate({"B": 2.0}) == 6000.0
    r = parse_rule("1: P(A) <= " + " * ".join(["|B|"] * 3000) + " + Q(A, +B)")
    assert r.constant.evaluate({"B": 1.0}) == -1.0
    # alternating * and / nest (each / divides what comes before it): past MAX_NESTING operations, refused
    with pytest.raises(
        ValueError,
        match=re.escape(f"nested more than MAX_NESTING = {MAX_NESTING} levels deep at column")
        + ".*"
        + re.escape("(a coefficient's operations: @Max/@Min and alternating '*' and '/' nest)"),
    ):
        parse_rule("1: P(A, +B) <= " + " / 2 * ".join(["|B|"] * 100))
    # signs before nested groups cancel: -(-(...(|B| * P(A, +B)))) adds no coefficient level (each '-(' is two
    # levels of the text)
    k = MAX_NESTING // 2
    r = parse_rule("1: " + "-(" * k + "|B| * P(A, +B)" + ")" * k + " <= 1")
    assert r.terms[0][0] == parse_rule("1: |B| * P(A, +B) <= 1").terms[0][0]


def test_too_many_atoms_are_refused_before_grounding():
    text = "1: " + " & ".join(f"P(X{i}, X{i + 1})" for i in range(1000)) + " -> Q(X0)"
    msg = f"1001 atoms; a rule has at most MAX_RULE_ATOMS = {MAX_RULE_ATOMS} (filter atoms included"  # and the head
    with pytest.raises(ValueError, match=re.escape(msg)):
        parse_rule(text)
    m = Model()
    m.add_predicate("P", 2, closed=True)
    m.add_predicate("Q", 1)
    with pytest.raises(ValueError, match=re.escape(msg)):
        m.add_rule(text)
    with pytest.raises(ValueError, match=re.escape("1000 atoms; a rule has at most MAX_RULE_ATOMS")):
        parse_rule("1: " + " + ".join(f"P(X{i}, X{i + 1})" for i in range(1000)) + " <= 1")
    filt = " & ".join(f"R(B, 'c{i}')" for i in range(MAX_RULE_ATOMS))
    with pytest.raises(ValueError, match=re.escape(f"{MAX_RULE_ATOMS + 1} atoms")):
        parse_rule(f"1: P(A, +B) <= 1 {{B: {filt}}}")
    text = "1: P(A) | Q(A) | " + " | ".join(f"R{i}(A)" for i in range(MAX_RULE_ATOMS - 2))
    assert len(parse_rule(text).head) == MAX_RULE_ATOMS


def test_a_rule_at_the_atom_limit_grounds():
    # a chain of MAX_RULE_ATOMS - 1 closed atoms and a head: one grounding per path of the data (two here)
    n = MAX_RULE_ATOMS - 1
    text = "1: " + " & ".join(f"P(X{i}, X{i + 1})" for i in range(n)) + " -> Q(X0)"
    m = _model(
        [text],
        {("P", 2): {"observations": [("a", "a", 1.0), ("b", "b", 1.0)]}, ("Q", 1): {"targets": [("a",), ("b",)]}},
        closed={"P"},
    )
    assert m.ground().n_potentials == 2


def test_too_many_variables_and_too_long_rules_are_refused():
    text = "1: P(" + ", ".join(f"X{i}" for i in range(2000)) + ") -> Q(X0)"
    with pytest.raises(
        ValueError,
        match=re.escape(f"2000 distinct variables; a rule has at most MAX_RULE_VARIABLES = {MAX_RULE_VARIABLES}."),
    ):
        parse_rule(text)
    long = "1: " + " + ".join(["P(A)"] * 20_000) + " <= 1"
    assert len(long) > MAX_RULE_LENGTH
    msg = f"characters long; a rule has at most MAX_RULE_LENGTH = {MAX_RULE_LENGTH}."
    with pytest.raises(ValueError, match=re.escape(msg)):
        parse_rule(long)
    with pytest.raises(ValueError, match=re.escape(msg)):
        parse_rules("1: P(A) -> Q(A)\n" + long + "\n")
    # a syntax error in a long rule quotes an excerpt, not the whole rule
    with pytest.raises(ValueError) as info:
        parse_rule("1: " + " + ".join(["P(A)"] * 10_000) + " <= ")
    assert len(str(info.value)) < 600 and "at column" in str(info.value)


def test_a_rule_with_many_variables_grounds():
    # 1024 variables in 16 atoms of arity 64: one grounding per combination of the two rows (2^16)
    atoms = [f"P({', '.join(f'X{64 * k + i}' for i in range(64))})" for k in range(16)]
    m = Model()
    m.add_predicate("P", 64, closed=True)
    m.add_predicate("Q", 1)
    m.add_rule("1: " + " & ".join(atoms) + " -> Q(X0)")
    m.add_data("P", "observations", pd.DataFrame([[f"{c}{i}" for i in range(64)] + [1.0] for c in "cd"]))
    m.add_data("Q", "targets", pd.DataFrame([["c0"], ["d0"]]))
    assert m.ground().n_potentials == 2**16
