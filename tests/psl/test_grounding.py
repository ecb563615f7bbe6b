"""Grounding: per construct, the ground potentials equal hinges derived by hand; random programs ground
to the objective of a brute-force evaluation of the rules over every binding of their variables."""

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _oracles import psl_arithmetic_objective, psl_logical_objective
from tractable.psl import Model
from tractable.psl.parser import Constant, Literal, LogicalRule, parse_rule


def _frame(rows):
    return pd.DataFrame([list(r) for r in rows])


def _model(rules, data, closed=(), missing_atoms="error"):
    """data: {(pred, arity): {"observations": rows, "targets": rows}}."""
    m = Model(missing_atoms=missing_atoms)
    for name, arity in data:
        m.add_predicate(name, arity, closed=name in closed)
    for r in rules:
        m.add_rule(r)
    for (name, _), parts in data.items():
        for part, rows in parts.items():
            if rows:
                m.add_data(name, part, _frame(rows))
    return m


def _var(g, pred, *args):
    a = g.atoms
    row = a[(a["predicate"] == pred) & (a["arguments"] == tuple(args))]
    assert len(row) == 1, (pred, args)
    return int(row["variable"].iloc[0])


def _rows(arrays):
    """The rows of CSR arrays as sorted lists of (variable, coefficient), with constants."""
    ind = arrays["indptr"]
    out = []
    for j in range(ind.size - 1):
        terms = sorted(
            zip(arrays["variables"][ind[j] : ind[j + 1]].tolist(), arrays["coefficients"][ind[j] : ind[j + 1]].tolist())
        )
        out.append((terms, float(arrays["constants"][j])))
    return sorted(out)


# ---------------------------------------------------------------------------------------------- by hand
def test_logical_rule_hinge_with_observed_body_folded():
    # 2: P(A) & Q(A) -> R(A) ^2 with P observed 0.7 (closed), Q and R targets:
    # distance max(0, 0.7 + q - 1 - r) = max(0, q - r - 0.3)
    m = _model(
        ["2: P(A) & Q(A) -> R(A) ^2"],
        {("P", 1): {"observations": [("a", 0.7)]}, ("Q", 1): {"targets": [("a",)]}, ("R", 1): {"targets": [("a",)]}},
        closed={"P"},
    )
    g = m.ground()
    q, r = _var(g, "Q", "a"), _var(g, "R", "a")
    pa = g.hlmrf.potential_arrays()
    assert _rows(pa) == [(sorted([(q, 1.0), (r, -1.0)]), pytest.approx(-0.3))]
    assert pa["weights"].tolist() == [2.0] and pa["squared"].tolist() == [True]
    assert g.rule_counts == (("2: P(A) & Q(A) -> R(A) ^2", 1, 0),)


def test_negated_literals_and_clause_form():
    # 1: !P(A) & Q(A) -> !R(A): body truth (1 - p) + q, head truth 1 - r:
    # max(0, (1 - p) + q - 1 - (1 - r)) = max(0, -p + q + r - 1). P is a target here (a lookup literal).
    m = _model(
        ["1: !P(A) & Q(A) -> !R(A)"],
        {("P", 1): {"targets": [("a",)]}, ("Q", 1): {"targets": [("a",)]}, ("R", 1): {"targets": [("a",)]}},
    )
    g = m.ground()
    p, q, r = (_var(g, n, "a") for n in "PQR")
    assert _rows(g.hlmrf.potential_arrays()) == [(sorted([(p, -1.0), (q, 1.0), (r, 1.0)]), -1.0)]
    # a bare disjunction is the same clause: !Q(A) | !R(A) | ... ; a prior has one literal
    m2 = _model(["3: !Q(A) ^2"], {("Q", 1): {"targets": [("a",), ("b",)]}})
    g2 = m2.ground()
    rows = _rows(g2.hlmrf.potential_arrays())
    assert rows == sorted([([(_var(g2, "Q", x), 1.0)], 0.0) for x in "ab"])


def test_missing_lookup_atom_is_an_error_dropped_or_zero_and_query_atoms_must_exist():
    # 1: Link(A, B) & Lab(A) -> Lab(B): groundings only for existing links; Lab(c) is neither observed nor a target
    def model(missing_atoms):
        return _model(
            ["1: Link(A, B) & Lab(A) -> Lab(B)"],
            {
                ("Link", 2): {"observations": [("a", "b"), ("a", "c"), ("b", "a")]},
                ("Lab", 1): {"targets": [("a",), ("b",)]},
            },
            closed={"Link"},
            missing_atoms=missing_atoms,
        )

    with pytest.raises(ValueError, match=r"the atom Lab\('c'\) of the open predicate Lab/1 is neither observed"):
        model("error").ground()
    g = model("zero").ground()
    a, b = _var(g, "Lab", "a"), _var(g, "Lab", "b")
    # (a, b): la - lb ; (b, a): lb - la ; (a, c): la - 0
    assert _rows(g.hlmrf.potential_arrays()) == sorted(
        [(sorted([(a, 1.0), (b, -1.0)]), 0.0), (sorted([(a, -1.0), (b, 1.0)]), 0.0), ([(a, 1.0)], 0.0)]
    )
    with pytest.warns(UserWarning, match=r"dropped 1 ground rule\(s\) that use an atom of an open predicate"):
        g = model("drop").ground()
    assert _rows(g.hlmrf.potential_arrays()) == sorted(
        [(sorted([(a, 1.0), (b, -1.0)]), 0.0), (sorted([(a, -1.0), (b, 1.0)]), 0.0)]
    )
    with pytest.raises(ValueError, match="`missing_atoms` must be one of error, drop, zero"):
        Model(missing_atoms="ignore")


def test_term_comparisons_filter_groundings():
    data = {
        ("Link", 2): {"observations": [("a", "a"), ("a", "b"), ("b", "a")]},
        ("Lab", 1): {"targets": [("a",), ("b",)]},
    }
    m = _model(["1: Link(A, B) & (A != B) & Lab(A) -> Lab(B)"], data, closed={"Link"})
    assert m.ground().n_potentials == 2
    m = _model(["1: Link(A, B) & (A == B) & Lab(A) -> Lab(B)"], data, closed={"Link"})
    # A == B: Lab(a) -> Lab(a) has the hinge la - la = 0 for every value: trivially satisfied, dropped
    assert m.ground().n_potentials == 0
    m = _model(["1: Link(A, B) & A % B & Lab(A) -> Lab(B)"], data, closed={"Link"})
    g = m.ground()
    a, b = _var(g, "Lab", "a"), _var(g, "Lab", "b")
    assert _rows(g.hlmrf.potential_arrays()) == [(sorted([(a, 1.0), (b, -1.0)]), 0.0)]


def test_repeated_atoms_are_merged():
    # 1: F(A, B) & F(B, A) -> G(A): for A = B the body has F(a, a) twice: 2 f - 1 - g
    m = _model(["1: F(A, B) & F(B, A) -> G(A)"], {("F", 2): {"targets": [("a", "a")]}, ("G", 1): {"targets": [("a",)]}})
    g = m.ground()
    f, gg = _var(g, "F", "a", "a"), _var(g, "G", "a")
    assert _rows(g.hlmrf.potential_arrays()) == [(sorted([(f, 2.0), (gg, -1.0)]), -1.0)]


def test_trivially_satisfied_groundings_are_dropped_and_constant_ones_go_to_offset():
    # 1: P(A) -> Q(A) with P observed: P(a) = 0 is trivially satisfied (not even in the query);
    # P(b) = 0.2 with Q(b) a target: 0.2 - q <= 0.2 kept; Q(c) observed 0.9 and P(c) = 1: constant 0.1
    m = _model(
        ["1: P(A) -> Q(A) ^2"],
        {
            ("P", 1): {"observations": [("a", 0.0), ("b", 0.2), ("c", 1.0)]},
            ("Q", 1): {"targets": [("a",), ("b",)], "observations": [("c", 0.9)]},
        },
        closed={"P"},
    )
    g = m.ground()
    assert _rows(g.hlmrf.potential_arrays()) == [([(_var(g, "Q", "b"), -1.0)], pytest.approx(0.2))]
    assert g.offset == pytest.approx(0.1**2)
    assert g.atoms.set_index("arguments").loc[[("a",)], "in_rules"].tolist() == [False]


def test_psl_keeps_groundings_that_no_observed_literal_satisfies():
    # 1: P(A) & R(A) -> Q(A) with P(a) = 0.2 and R(a) = 0.3 observed: the hinge 0.2 + 0.3 - 1 - q is
    # never positive, but no observed literal is at its trivial value (body 0, head 1): PSL keeps it, so
    # that the ground programs have the same terms; R(b) = 0 makes b's grounding trivial (not even queried
    # by PSL's database: a body atom at 0 satisfies the clause)
    m = _model(
        ["1: P(A) & R(A) -> Q(A)", "1: P(A) -> !Q(A) | S(A)"],
        {
            ("P", 1): {"observations": [("a", 0.2), ("b", 1.0)]},
            ("R", 1): {"observations": [("a", 0.3), ("b", 0.0)]},
            ("Q", 1): {"targets": [("a",), ("b",)]},
            ("S", 1): {"observations": [("a", 1.0), ("b", 0.5)]},
        },
        closed={"P", "R", "S"},
    )
    g = m.ground()
    qa, qb = _var(g, "Q", "a"), _var(g, "Q", "b")
    assert g.rule_counts == (("1: P(A) & R(A) -> Q(A)", 1, 0), ("1: P(A) -> !Q(A) | S(A)", 1, 0))
    # rule 2: S(a) = 1 is a true head literal (dropped); b: 1 + q - 1 - 0.5 = q - 0.5
    rows = _rows(g.hlmrf.potential_arrays())
    assert rows == sorted([([(qa, -1.0)], pytest.approx(-0.5)), ([(qb, 1.0)], pytest.approx(-0.5))])


def test_hard_logical_rule_is_a_constraint_and_data_only_infeasible_grounding_is_dropped_or_strict():
    m = _model(["P(A) -> Q(A) ."], {("P", 1): {"targets": [("a",)]}, ("Q", 1): {"targets": [("a",)]}})
    g = m.ground()
    ca = g.hlmrf.constraint_arrays()
    assert _rows(ca) == [(sorted([(_var(g, "P", "a"), 1.0), (_var(g, "Q", "a"), -1.0)]), 0.0)]
    assert ca["senses"].tolist() == [0]
    m = _model(
        ["P(A) -> Q(A) ."],
        {("P", 1): {"observations": [("a", 1.0)]}, ("Q", 1): {"observations": [("a", 0.5)], "targets": [("b",)]}},
        closed={"P"},
    )
    with pytest.warns(UserWarning, match=r"'P\(A\) -> Q\(A\) \.': dropped 1 ground rule\(s\) without open atoms"):
        g = m.ground()  # PSL drops a ground rule without open atoms, even one the data alone violate
    assert g.n_infeasible_dropped == 1 and g.n_constraints == 0
    m = _model(
        ["P(A) -> Q(A) ."],
        {("P", 1): {"observations": [("a", 1.0)]}, ("Q", 1): {"observations": [("a", 0.5)], "targets": [("b",)]}},
        closed={"P"},
    )
    m.strict = True
    with pytest.raises(
        ValueError, match=r"'P\(A\) -> Q\(A\) \.': 1 ground rule\(s\) without open atoms are infeasible"
    ):
        m.ground()
    m = _model(  # infeasible whatever the open atoms' values: always an error
        ["P(A) + Q(A) >= 3 ."],
        {("P", 1): {"observations": [("a", 1.0)]}, ("Q", 1): {"targets": [("a",)]}},
        closed={"P"},
    )
    with pytest.raises(ValueError, match="a grounding is infeasible"):
        m.ground()


def test_arithmetic_rules_weighted_and_hard():
    data = {("P", 1): {"targets": [("a",)]}, ("Q", 1): {"targets": [("a",)]}, ("R", 1): {"observations": [("a", 0.5)]}}
    # 2 * P(A) + Q(A) / 4 <= R(A) + 0.25 -> 2p + q/4 - 0.5 - 0.25 <= 0
    m = _model(["3: 2 * P(A) + Q(A) / 4 <= R(A) + 0.25 ^2"], data, closed={"R"})
    g = m.ground()
    p, q = _var(g, "P", "a"), _var(g, "Q", "a")
    pa = g.hlmrf.potential_arrays()
    assert _rows(pa) == [(sorted([(p, 2.0), (q, 0.25)]), pytest.approx(-0.75))]
    assert pa["weights"].tolist() == [3.0] and pa["squared"].tolist() == [True]
    # >= is the negated hinge; weighted = is two hinges
    g = _model(["1: P(A) >= Q(A)"], data, closed={"R"}).ground()
    assert _rows(g.hlmrf.potential_arrays()) == [(sorted([(p, -1.0), (q, 1.0)]), 0.0)]
    g = _model(["1: P(A) = Q(A)"], data, closed={"R"}).ground()
    assert _rows(g.hlmrf.potential_arrays()) == sorted(
        [(sorted([(p, -1.0), (q, 1.0)]), 0.0), (sorted([(p, 1.0), (q, -1.0)]), 0.0)]
    )
    # hard: a constraint with its sense (>= is stored as <= of the negation)
    g = _model(["P(A) + Q(A) >= R(A) ."], data, closed={"R"}).ground()
    ca = g.hlmrf.constraint_arrays()
    assert _rows(ca) == [(sorted([(p, -1.0), (q, -1.0)]), 0.5)] and ca["senses"].tolist() == [0]
    g = _model(["P(A) - Q(A) = 0 ."], data, closed={"R"}).ground()
    ca = g.hlmrf.constraint_arrays()
    assert _rows(ca) == [(sorted([(p, 1.0), (q, -1.0)]), 0.0)] and ca["senses"].tolist() == [1]


def test_summation_and_cardinality():
    data = {
        ("Lab", 2): {"targets": [("a", "x"), ("a", "y"), ("a", "z"), ("b", "x")], "observations": [("b", "y", 1.0)]},
    }
    g = _model(["Lab(A, +C) = 1 ."], data).ground()
    v = {k: _var(g, "Lab", *k) for k in [("a", "x"), ("a", "y"), ("a", "z"), ("b", "x"), ("b", "y")]}
    ca = g.hlmrf.constraint_arrays()
    assert _rows(ca) == sorted(
        [
            (sorted([(v["a", "x"], 1.0), (v["a", "y"], 1.0), (v["a", "z"], 1.0)]), -1.0),
            (sorted([(v["b", "x"], 1.0), (v["b", "y"], 1.0)]), -1.0),
        ]
    )
    assert ca["senses"].tolist() == [1, 1]
    # |C| counts the summed atoms: a has 3, b has 2
    g = _model(["1: Lab(A, +C) <= |C| / 4"], data).ground()
    assert _rows(g.hlmrf.potential_arrays()) == sorted(
        [
            (sorted([(v["a", "x"], 1.0), (v["a", "y"], 1.0), (v["a", "z"], 1.0)]), -0.75),
            (sorted([(v["b", "x"], 1.0), (v["b", "y"], 1.0)]), -0.5),
        ]
    )
    # summation over a coefficient * atom with @Max
    g = _model(["1: @Max[1, |C| - 2] * Lab(A, +C) <= 1"], data).ground()
    assert _rows(g.hlmrf.potential_arrays())[0] == (
        sorted([(v["a", "x"], 1.0), (v["a", "y"], 1.0), (v["a", "z"], 1.0)]),
        -1.0,
    )


def test_unbound_unknown_and_arity_errors():
    data = {("P", 1): {"targets": [("a",)]}, ("Q", 2): {"targets": [("a", "b")]}}
    with pytest.raises(ValueError, match=r"variable B is not bound"):
        _model(["1: P(A) -> Q(A, B)"], data)
    with pytest.raises(ValueError, match=r"unknown predicate 'Nope'"):
        _model(["1: Nope(A) -> P(A)"], data)
    with pytest.raises(ValueError, match=r"Q\(A\) has 1 arguments but Q/2 has arity 2"):
        _model(["1: P(A) -> Q(A)"], data)
    with pytest.raises(ValueError, match=r"variable B is not bound"):
        _model(["1: P(A) & (A != B) -> P(B)"], data)
    # names are case-insensitive
    _model(["1: p(A) -> q(A, 'b')"], data).ground()


def test_example1_of_bach_2012():
    m = _model(
        ["1: Friend(A, B) & Votes(B, P) -> Votes(A, P) ^2", "Votes(A, +P) = 1 ."],
        {
            ("Friend", 2): {"observations": [("me", "f1"), ("me", "f2")]},
            ("Votes", 2): {
                "observations": [("f1", "L", 0.9), ("f1", "C", 0.1), ("f2", "L", 0.4), ("f2", "C", 0.6)],
                "targets": [("me", "L"), ("me", "C")],
            },
        },
        closed={"Friend"},
    )
    pred, res = m.infer(eps_abs=1e-8, eps_rel=1e-8, gap_tol=1e-9)
    v = pred["Votes"].set_index([0, 1])["value"]
    # tolerance: ADMM run to 1e-8 residuals; the optimum is exactly (0.65, 0.35)
    assert v[("me", "L")] == pytest.approx(0.65, abs=1e-5)
    assert v[("me", "C")] == pytest.approx(0.35, abs=1e-5)
    assert res.converged


# ---------------------------------------------------------------------------------------------- oracle
_CONSTS = ["a", "b", "c"]


@st.composite
def _programs(draw):
    """Random predicates, data and weighted logical rules over constants a, b, c."""
    preds = {"P": 1, "Q": 2, "R": 1, "S": 2}
    closed = set(draw(st.lists(st.sampled_from(sorted(preds)), unique=True, max_size=2)))
    # the data: each atom present with probability 0.7, observed or a target, values in {0, 0.3, 1}
    gen = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    data = {}
    for name, ar in preds.items():
        obs, tgt = [], []
        for atom in itertools.product(_CONSTS, repeat=ar):
            if gen.random() < 0.3:
                continue
            if name in closed or gen.random() < 0.4:
                obs.append((*atom, float(gen.choice([0.0, 0.3, 1.0]))))
            else:
                tgt.append(atom)
        data[(name, ar)] = {"observations": obs, "targets": tgt}
    data[("T", 1)] = {"observations": [], "targets": [("zz",)]}  # an open predicate with a target, always
    rules = []
    for _ in range(draw(st.integers(2, 4))):
        # query literals (positive body / negated head) bind the variables; the others use bound ones
        lits, bound = [], []
        for _ in range(draw(st.integers(1, 2))):
            name = draw(st.sampled_from(sorted(preds)))
            args = [draw(st.sampled_from(["X", "Y", "Z", "'a'"])) for _ in range(preds[name])]
            bound += [a for a in args if a[0] != "'"]
            lits.append((draw(st.sampled_from(["body", "neghead"])), f"{name}({', '.join(args)})"))
        pool = sorted(set(bound)) + ["'b'"]
        for _ in range(draw(st.integers(0, 2))):
            name = draw(st.sampled_from(sorted(preds)))
            args = [draw(st.sampled_from(pool)) for _ in range(preds[name])]
            lits.append((draw(st.sampled_from(["negbody", "head"])), f"{name}({', '.join(args)})"))
        body = [("!" if s == "negbody" else "") + t for s, t in lits if s in ("body", "negbody")]
        head = [("!" if s == "neghead" else "") + t for s, t in lits if s in ("head", "neghead")]
        if body and len(set(bound)) >= 2 and draw(st.booleans()):
            u, v = sorted(set(bound))[:2]
            body.append(draw(st.sampled_from([f"({u} != {v})", f"({u} == {v})", f"({v} != 'b')", f"{u} % {v}"])))
        body, head = draw(st.permutations(body)), draw(st.permutations(head))
        w = draw(st.sampled_from(["0.5", "2", "1.5"]))
        sq = draw(st.sampled_from(["", " ^2"]))
        if head:
            text = f"{w}: " + (" & ".join(body) + " -> " if body else "") + " | ".join(head) + sq
        else:  # no head: the body as a clause of negated literals
            text = (
                f"{w}: "
                + " | ".join(
                    b[1:] if b.startswith("!") else "!" + b
                    for b in body
                    if "(" in b and "!=" not in b and "==" not in b and "%" not in b
                )
                + sq
            )
        rules.append(text)
    # and an arithmetic rule: linear, or with a summation (and |Y|)
    if draw(st.booleans()):
        w = draw(st.sampled_from(["0.5", "2"])) + ": "
        sq = draw(st.sampled_from(["", " ^2"]))
        sense = draw(st.sampled_from(["<=", ">=", "="]))
        if draw(st.booleans()):
            c1, c2 = draw(st.sampled_from(["2 * ", "", "-0.5 * "])), draw(st.sampled_from(["", "3 * "]))
            rhs = draw(st.sampled_from(["1", "0.5", "R(X)", "S(X, 'a')"]))
            text = f"{w}{c1}P(X) + {c2}Q(X, Y) {sense} {rhs}{sq}"
        else:
            lhs = draw(st.sampled_from(["Q(X, +Y)", "Q(X, +Y) + S(X, +Y)"]))
            rhs = draw(st.sampled_from(["1", "|Y| / 3", "P(X)"]))
            text = f"{w}{lhs} {sense} {rhs}{sq}"
        rules.append(text)
    return rules, data, closed


def _unbound(rule):
    """Variables outside the positive body literals and negated head literals (written out independently)."""
    query = [lit for lit in rule.body if isinstance(lit, Literal) and not lit.negated]
    query += [lit for lit in rule.head if isinstance(lit, Literal) and lit.negated]
    bound = {t.name for lit in query for t in lit.atom.args if not isinstance(t, Constant)}
    used = set()
    for lit in (*rule.body, *rule.head):
        terms = lit.atom.args if isinstance(lit, Literal) else (lit.left, lit.right)
        used |= {t.name for t in terms if not isinstance(t, Constant)}
    return used - bound


@settings(max_examples=60, deadline=None)
@given(_programs(), st.integers(0, 2**31 - 1))
def test_random_programs_ground_to_the_brute_force_objective(program, seed):
    rules, data, closed = program
    unbound = [r for r in rules if isinstance(parse_rule(r), LogicalRule) and _unbound(parse_rule(r))]
    if unbound:
        with pytest.raises(ValueError, match="is not bound"):
            _model(rules, data, closed=closed)
        return
    # the oracle reads an open atom that is neither observed nor a target as 0
    m = _model(rules, data, closed=closed, missing_atoms="zero")
    g = m.ground()
    rng = np.random.default_rng(seed)
    x = rng.random(g.hlmrf.n_variables)
    fv, fx = g.hlmrf.fixed
    x[np.asarray(fv)] = fx
    known = {}
    for pred, args, var in zip(g.atoms["predicate"], g.atoms["arguments"], g.atoms["variable"]):
        known[(pred, args)] = x[var]
    for (name, _), parts in data.items():
        if name in closed:
            for *args, v in parts["observations"]:
                known[(name, tuple(args))] = v

    def value(pred, args):
        return known.get((pred, args), 0.0)

    logical = [r for r in rules if isinstance(parse_rule(r), LogicalRule)]
    expected = psl_logical_objective(logical, data, value)
    present = {(name, tuple(r[:ar])) for (name, ar), parts in data.items() for rows in parts.values() for r in rows}
    consts = sorted({a for _, args in present for a in args} | {"a"})
    for r in rules:
        if r not in logical:
            expected += psl_arithmetic_objective(r, consts, lambda p, args: (p, args) in present, value)
    # tolerance: sums of a few dozen float terms; dropped groundings contribute at most 1e-9 each
    assert g.hlmrf.objective(x) + g.offset == pytest.approx(expected, rel=1e-9, abs=1e-7)
