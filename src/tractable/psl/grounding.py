"""Grounding PSL rules by SQL in DuckDB into the flat CSR arrays of an :class:`~tractable.hlmrf.HLMRF`.

Every predicate is a table of its ground atoms: the arguments ``a0 .. a{k-1}`` (VARCHAR), ``value``
(the observed value, 0 for targets), ``var`` (the HL-MRF variable of an atom of an open predicate,
``-1`` for closed predicates) and ``free`` (a target, i.e. not observed).

**Logical rules.** A rule ``B1 & ... & Bn -> H1 | ... | Hm`` is the clause ``!B1 | ... | !Bn | H1 |
... | Hm``; under the Lukasiewicz relaxation its distance to satisfaction is
``max(0, 1 - sum_l truth(l))`` over the clause literals (``truth(x) = x``, ``truth(!x) = 1 - x``), i.e.
``max(0, sum_i truth(B_i) - (n - 1) - sum_j truth(H_j))``. A grounding can have a positive distance only
when every clause literal is below 1, so the atoms of the negative clause literals (positive body
literals and negated head literals) must have nonzero values: they exist. These are the *query
literals*: one SQL query joins their tables (shared variables are equalities, constants and term
comparisons are filters) and left-joins the other literals (a missing atom has the value 0 and is
not a variable: PSL's closed world). The query returns, per literal, numpy columns of variable ids,
values and free flags; the hinge ``c·x + b`` of every grounding is then built with array operations.

**Missing atoms of open predicates.** A lookup literal of an open predicate may name an atom that is
neither observed nor a target. PSL 2.4 stops with an error there (``PersistedAtomManagementException``,
option ``pam.throw``, default true) unless an observed literal already satisfies the ground rule;
:func:`ground_rule`'s ``missing_atoms`` chooses ``"error"`` (PSL's default: a ``ValueError`` naming the
atom and the rule), ``"drop"`` (PSL with ``pam.throw = false``: the ground rule is left out) or
``"zero"`` (the atom is 0, as a closed predicate's missing atom always is).

**Arithmetic rules** ``sum_i c_i a_i + c_0 (<=, >=, =) 0`` join all their atoms. With summation
variables ``+X``, the groundings are the distinct bindings of the other variables in that join
(summation variables joined like any other); each summation atom then contributes every existing
atom matching the binding, and ``|X|`` is the number of those atoms (PSL counts the summed atoms; with
``+X`` and ``+Y`` in one atom both count its atoms; where ``+X`` appears in several atoms, an extension
PSL refuses, the number of distinct values of ``X`` among them). One known difference remains: for a
*closed* summation predicate PSL 2.4 sums over every constant of ``X`` found anywhere in the predicate's
table (the binding's missing atoms are observed 0s), so its ``|X|`` counts them too; here only the
binding's existing atoms count.

**Filter clauses** ``{X: formula}`` (PSL 2.4's ``AbstractArithmeticRule``) keep the summed atoms whose
argument for ``X`` passes the filter, evaluated per grounding: a filter atom (of a closed predicate:
an open one is an error, as in PSL) holds when its observed value, as a float32, is > 0 (a missing atom
is 0), ``!`` negates, a comparison compares the terms; in SQL an ``EXISTS`` / ``NOT EXISTS`` per atom.
``|X|`` counts the kept atoms only. A filter whose disjunctive normal form has several disjuncts splits
the rule into one rule per disjunct, grounded separately, as PSL's ``Model.addRule`` splits it (PSL's
JSON runtime instead rejects such a rule, "Expected 1 rule, found 2"; a ``.psl`` file splits it). The
bindings ignore filters (as PSL's grounding query does): a binding whose summed atoms are all filtered
out keeps its ground rule, with ``|X| = 0``, when the rule has a non-summation atom, and has none
otherwise. A coefficient that is not finite at a binding (a division by ``|X| = 0``) is an error, as in
PSL.

**Simplification, as PSL does it.** Observed atoms are folded into the constant (observed atoms of open
predicates stay in the rows as variables that :meth:`HLMRF.fix` fixes). A logical grounding is dropped
when an observed literal makes its clause true (a body atom observed at 0, a head atom observed at 1)
or when one free atom appears both positively and negatively; an arithmetic grounding with a single
atom is dropped when its inequality holds over all of ``[0, 1]``. Groundings without free atoms are
dropped too; their constant distance goes into ``offset``. Other groundings are kept even when their
hinge is never positive in the box, so that the ground program has PSL's terms. A hard grounding that
no value of its free atoms in ``[0, 1]`` satisfies is a ``ValueError`` naming the rule. Repeated atoms
in one grounding (``P(A, B) & P(B, A)`` with ``A = B``) are merged by summing their coefficients.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .parser import (
    ArithmeticRule,
    Atom,
    Comparison,
    Constant,
    Literal,
    LogicalRule,
    SumVariable,
    Variable,
    _excerpt,
)

__all__ = ["MISSING_ATOMS", "Predicate", "RuleGrounding", "ground_rule"]

#: what :func:`ground_rule` does with a ground rule that uses an atom of an open predicate that is neither
#: observed nor a target: ``"error"`` (PSL 2.4's default, ``pam.throw = true``), ``"drop"`` (the ground rule
#: is left out, as PSL does with ``pam.throw = false``), ``"zero"`` (the atom is 0, as a closed predicate's)
MISSING_ATOMS = ("error", "drop", "zero")

#: a ground rule whose largest hinge value over the box is at most this is trivially satisfied; a hard
#: one whose smallest value exceeds it is infeasible (float rounding of sums of observed values)
_TOL = 1e-9


@dataclass(frozen=True)
class Predicate:
    """A declared predicate: ``name`` as declared, ``arity``, ``closed``, and its DuckDB ``table``."""

    name: str
    arity: int
    closed: bool
    table: str

    @property
    def key(self) -> str:
        return f"{self.name}/{self.arity}"


@dataclass
class RuleGrounding:
    """The ground potentials (or constraints) of one rule, as CSR arrays.

    Attributes
    ----------
    indptr : ndarray of int64, shape (m + 1,)
    variables : ndarray of int64, shape (nnz,)
    coefficients : ndarray of float64, shape (nnz,)
    constants : ndarray of float64, shape (m,)
    senses : ndarray of str, shape (m,)
        ``"<="`` for potentials; ``"<="`` or ``"=="`` for constraints.
    n_groundings : int
        Rows returned by the grounding query (before dropping trivial ground rules).
    offset : float
        Weighted distance of the ground rules without free atoms (a constant of the objective).
    n_infeasible : int
        Hard ground rules without free atoms that the observed values alone violate: dropped, as PSL
        drops every ground rule without an open atom (``strict=True`` raises instead).
    infeasible_example : str
        One of them, described (empty when there is none).
    n_missing : int
        Ground rules (not trivially satisfied by an observed atom) that use an atom of an open predicate
        that is neither observed nor a target: dropped with ``missing_atoms="drop"``, kept with the atom at
        0 with ``"zero"`` (``"error"`` raises instead).
    missing_example : str
        One such atom (with ``"drop"``; empty otherwise).
    """

    indptr: np.ndarray
    variables: np.ndarray
    coefficients: np.ndarray
    constants: np.ndarray
    senses: np.ndarray
    n_groundings: int
    offset: float
    n_infeasible: int = 0
    infeasible_example: str = ""
    n_missing: int = 0
    missing_example: str = ""


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _id(s: str) -> str:
    """The dictionary id of a rule constant (every rule constant is in ``psl_dict``)."""
    return f"(SELECT id FROM psl_dict WHERE s = {_q(s)})"


def resolve(atom: Atom, preds: dict, rule_text: str) -> Predicate:
    """The declared predicate of ``atom`` (names are case-insensitive); ValueError if unknown or wrong arity."""
    p = preds.get(atom.predicate.lower())
    if p is None:
        known = ", ".join(sorted(q.key for q in preds.values())) or "none"
        raise ValueError(f"PSL rule {rule_text!r}: unknown predicate {atom.predicate!r} (declared: {known}).")
    if len(atom.args) != p.arity:
        raise ValueError(
            f"PSL rule {rule_text!r}: {atom} has {len(atom.args)} arguments but {p.key} has arity {p.arity}."
        )
    return p


def check_rule(rule, preds: dict) -> None:
    """Check predicates, arities, that every variable is bound by a query literal, and that filter clauses
    use closed predicates only."""
    for a in rule.atoms():
        resolve(a, preds, rule.text)
    if isinstance(rule, ArithmeticRule):
        for f in rule.filters:
            for a in f.atoms():
                p = resolve(a, preds, rule.text)
                if not p.closed:
                    # PSL 2.4: AbstractArithmeticRule.validateForGrounding
                    raise ValueError(
                        f"PSL rule {_excerpt(rule.text)}: the filter clause {{{f.variable}: ...}} uses {a} of the open "
                        f"predicate {p.key}; a filter reads observed values, so only closed predicates may appear "
                        "in filters (as in PSL 2.4)."
                    )
    if isinstance(rule, LogicalRule):
        query, lookups, comps = _split_logical(rule)
        bound = {t.name for lit in query for t in lit.args if isinstance(t, Variable)}
        for where, atoms in (("atom", [lit for lit in lookups]), ("comparison", comps)):
            for item in atoms:
                terms = item.args if where == "atom" else (item.left, item.right)
                for t in terms:
                    if isinstance(t, Variable) and t.name not in bound:
                        raise ValueError(
                            f"PSL rule {rule.text!r}: the variable {t.name} is not bound: it must appear in a "
                            "positive body literal or a negated head literal (the atoms a grounding must find "
                            f"in the data); it appears only in {item}."
                        )
    else:
        names = {t.name for a in rule.atoms() for t in a.args if isinstance(t, Variable)}
        clash = names & set(rule.sum_variables)
        if clash:
            v = sorted(clash)[0]
            raise ValueError(f"PSL rule {rule.text!r}: {v} is used both as a summation variable +{v} and as {v}.")


def _split_logical(rule: LogicalRule):
    """Query atoms, lookup atoms (with clause sign) and comparison filters of a logical rule.

    Returns
    -------
    query : list of Atom
        Atoms of the negative clause literals (positive body / negated head literals).
    lookups : list of Atom
        The other atoms.
    filters : list of Comparison
        Comparisons that a grounding must satisfy (the negation of the clause's comparison literals).
    """
    query, lookups, filters = [], [], []
    for lit, in_body in [(b, True) for b in rule.body] + [(h, False) for h in rule.head]:
        # sign in the clause: body literals flip
        positive_in_clause = lit.negated if in_body else not lit.negated
        if isinstance(lit, Comparison):
            # the clause literal (cmp xor negated-in-clause) must be false for the rule to be non-trivial
            filters.append(Comparison(lit.op, lit.left, lit.right, negated=positive_in_clause))
        elif positive_in_clause:
            lookups.append(lit.atom)
        else:
            query.append(lit.atom)
    return query, lookups, filters


def _clause(rule: LogicalRule):
    """Clause literals as (Atom, positive_in_clause) in rule order; comparisons left out."""
    out = []
    for lit, in_body in [(b, True) for b in rule.body] + [(h, False) for h in rule.head]:
        if isinstance(lit, Literal):
            out.append((lit.atom, lit.negated if in_body else not lit.negated))
    return out


class _Query:
    """Build ``SELECT ... FROM t0, t1, ... WHERE ...`` over the query atoms of one rule."""

    def __init__(self, preds: dict, text: str) -> None:
        self.preds, self.text = preds, text
        self.from_, self.where = [], []
        self.bound: dict[str, str] = {}  # variable -> first column holding it

    def add(self, atom: Atom, alias: str) -> None:
        p = resolve(atom, self.preds, self.text)
        self.from_.append(f"{p.table} AS {alias}")
        for i, t in enumerate(atom.args):
            col = f"{alias}.a{i}"
            if isinstance(t, Constant):
                self.where.append(f"{col} = {_id(t.value)}")
            else:
                name = t.name
                if name in self.bound:
                    self.where.append(f"{col} = {self.bound[name]}")
                else:
                    self.bound[name] = col

    def term(self, t) -> str:
        return _id(t.value) if isinstance(t, Constant) else self.bound[t.name]

    def filter(self, c: Comparison) -> None:
        left, right = self.term(c.left), self.term(c.right)
        op = {"==": "=", "!=": "<>", "<": "<"}[c.op]
        expr = f"{left} {op} {right}"
        self.where.append(f"NOT ({expr})" if c.negated else expr)

    def sql(self, select: list[str], distinct: bool = False) -> str:
        frm = " CROSS JOIN ".join(self.from_) if self.from_ else "(SELECT 1) AS one"
        where = (" WHERE " + " AND ".join(self.where)) if self.where else ""
        return f"SELECT {'DISTINCT ' if distinct else ''}{', '.join(select)} FROM {frm}{where}"


def _lookup_join(atom: Atom, alias: str, q: _Query, preds: dict, text: str) -> str:
    p = resolve(atom, preds, text)
    conds = [
        f"{alias}.a{i} = {q.term(t) if isinstance(t, Constant) else 'b.' + _col(t.name)}"
        for i, t in enumerate(atom.args)
    ]
    return (
        f"LEFT JOIN {p.table} AS {alias} ON " + " AND ".join(conds)
        if conds
        else f"LEFT JOIN {p.table} AS {alias} ON true"
    )


def _col(name: str) -> str:
    return '"v_' + name.replace('"', '""') + '"'


def _fetch(con, sql: str) -> dict:
    return con.execute(sql).fetchnumpy()


def ground_rule(
    con, rule, preds: dict, n_variables: int, *, strict: bool = False, missing_atoms: str = "zero"
) -> list[RuleGrounding]:
    """Ground one rule.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        Holds the predicate tables.
    rule : LogicalRule or ArithmeticRule
    preds : dict
        Lower-case predicate name -> :class:`Predicate`.
    n_variables : int
        Number of HL-MRF variables (for merging repeated atoms).
    strict : bool, default False
        Raise on a hard ground rule that the observed values alone violate, instead of dropping it
        (PSL drops every ground rule without an open atom; see :attr:`RuleGrounding.n_infeasible`).
    missing_atoms : {"zero", "error", "drop"}, default "zero"
        A ground rule of a logical rule that uses an atom of an open predicate that is neither observed
        nor a target, and that no observed atom makes trivially satisfied: ``"error"`` raises a
        ``ValueError`` naming the atom and the rule (PSL 2.4's behaviour), ``"drop"`` leaves the ground
        rule out (PSL with ``pam.throw = false``), ``"zero"`` keeps it with the atom at 0 (the closed
        world, as for closed predicates). Counted in :attr:`RuleGrounding.n_missing`. (Arithmetic rules
        never meet such atoms: their atoms come from the data, and a missing summed atom is no term.)

    Returns
    -------
    list of RuleGrounding
        One block per sense (two for a weighted arithmetic equality: ``<=`` and ``>=`` as two hinges),
        for each rule that the filter clauses split the rule into (:meth:`ArithmeticRule.filter_splits`).

    Raises
    ------
    ValueError
        An unknown predicate or wrong arity, an unbound variable, an open predicate in a filter, an
        infeasible hard ground rule, a coefficient that is not finite in a ground rule (``|X| = 0`` in a
        denominator), or a missing atom with ``missing_atoms="error"``.
    """
    if missing_atoms not in MISSING_ATOMS:
        raise ValueError(f"`missing_atoms` must be one of {', '.join(MISSING_ATOMS)}; got {missing_atoms!r}.")
    check_rule(rule, preds)
    if isinstance(rule, LogicalRule):
        blocks = [_ground_logical(con, rule, preds, n_variables, missing_atoms)]
    else:
        blocks = _ground_arithmetic(con, rule, preds, n_variables)
    if strict:
        for block in blocks:
            if block.n_infeasible:
                raise ValueError(
                    f"PSL rule {rule.text!r}: {block.n_infeasible} ground rule(s) without open atoms are infeasible "
                    f"with the observed values alone (strict); e.g. {block.infeasible_example}."
                )
    return blocks


def _logical_sql(rule: LogicalRule, preds: dict, query, lookups, filters, binding: bool = False) -> str:
    """The grounding query of a logical rule: one row per grounding, columns ``var_/val_/free_`` of each
    query atom (``q{k}``) and lookup atom (``l{k}``); ``binding`` adds the variables' ids (``"v_X"``)."""
    q = _Query(preds, rule.text)
    for k, a in enumerate(query):
        q.add(a, f"q{k}")
    for c in filters:
        q.filter(c)
    # the binding: every variable, plus the columns of the query atoms
    select = [f"{col} AS {_col(v)}" for v, col in q.bound.items()]
    for k in range(len(query)):
        select += [f"q{k}.var AS var_q{k}", f"q{k}.value AS val_q{k}", f"q{k}.free AS free_q{k}"]
    if not select:
        select = ["1 AS one"]
    inner = q.sql(select)
    joins = []
    outer = [f"b.{c}_q{k}" for k in range(len(query)) for c in ("var", "val", "free")] or ["b.*"]
    if binding:
        outer += [f"b.{_col(v)}" for v in q.bound]
    for k, a in enumerate(lookups):
        joins.append(_lookup_join(a, f"l{k}", q, preds, rule.text))
        outer += [
            f"coalesce(l{k}.var, -1) AS var_l{k}",
            f"coalesce(l{k}.value, 0.0) AS val_l{k}",
            f"coalesce(l{k}.free, false) AS free_l{k}",
        ]
    return f"SELECT {', '.join(outer)} FROM ({inner}) AS b {' '.join(joins)}"


def _observed_trivial(val: list, free: list, coefs) -> np.ndarray:
    """Groundings that an observed literal makes true (PSL: a body atom observed at 0, a head atom at 1)."""
    trivial = np.zeros(val[0].shape, bool) if val else np.zeros(0, bool)
    for j in range(len(val)):
        trivial |= ~free[j] & (val[j] == (0.0 if coefs[j] > 0 else 1.0))
    return trivial


def _ground_logical(con, rule: LogicalRule, preds: dict, n_variables: int, missing_atoms: str) -> RuleGrounding:
    query, lookups, filters = _split_logical(rule)
    res = _fetch(con, _logical_sql(rule, preds, query, lookups, filters))
    n_rows = len(next(iter(res.values()))) if res else 0
    # columns in clause order, each with its coefficient in c·x + b
    names = {id(a): f"q{k}" for k, a in enumerate(query)}
    names.update({id(a): f"l{k}" for k, a in enumerate(lookups)})
    cols, coefs = [], []
    n_neg = 0
    for atom, positive in _clause(rule):
        cols.append(names[id(atom)])
        coefs.append(-1.0 if positive else 1.0)
        n_neg += not positive
    const0 = 1.0 - n_neg
    k = len(cols)
    if k == 0:
        raise ValueError(f"PSL rule {_excerpt(rule.text)}: a logical rule needs at least one atom.")
    var = [np.asarray(res[f"var_{c}"], np.int64) for c in cols]
    val = [np.asarray(res[f"val_{c}"], float) for c in cols]
    free = [np.asarray(res[f"free_{c}"], bool) for c in cols]
    preds_of = [resolve(a, preds, rule.text).table for a, _ in _clause(rule)]
    groups = _repeat_groups(preds_of)
    # an open predicate's atoms all have a variable: var -1 in a lookup of one means the atom is missing
    open_lookups = [j for j, a in enumerate(lookups) if not resolve(a, preds, rule.text).closed]
    n_missing, example = 0, ""
    if open_lookups:
        missing = np.zeros(n_rows, bool)
        for j in open_lookups:
            missing |= np.asarray(res[f"var_l{j}"]) == -1
        # PSL reports the atom unless an observed literal already satisfies the ground rule
        missing &= ~_observed_trivial(val, free, coefs)
        n_missing = int(missing.sum())
        if n_missing and missing_atoms != "zero":  # the example costs the query again
            example = _missing_example(con, rule, preds, query, lookups, filters, cols, coefs, open_lookups)
            if missing_atoms == "error":
                raise ValueError(
                    f"PSL rule {_excerpt(rule.text)}: {example} is neither observed nor a target ({n_missing} ground "
                    "rule(s) of this rule use such atoms). PSL 2.4 stops here too; list the atom in the targets "
                    "(or observations) of its predicate, or declare the predicate closed (a closed predicate's "
                    "missing atoms are 0)."
                )
            if missing_atoms == "drop":
                keep = ~missing
                var, val, free = ([x[keep] for x in arrs] for arrs in (var, val, free))
    block = _assemble_dense(rule, var, val, free, np.array(coefs), np.full(var[0].size, const0), "<=", groups)
    block.n_groundings = n_rows
    block.n_missing, block.missing_example = n_missing, example
    return block


def _missing_example(con, rule, preds, query, lookups, filters, cols, coefs, open_lookups) -> str:
    """One missing atom of an open predicate in a non-trivial grounding, as ``the atom P('a', 'b') of the open
    predicate P/2`` (the grounding query again, with the variables' ids)."""
    res = _fetch(con, _logical_sql(rule, preds, query, lookups, filters, binding=True))
    val = [np.asarray(res[f"val_{c}"], float) for c in cols]
    free = [np.asarray(res[f"free_{c}"], bool) for c in cols]
    ok = ~_observed_trivial(val, free, coefs)
    for j in open_lookups:
        rows = np.flatnonzero((np.asarray(res[f"var_l{j}"]) == -1) & ok)
        if rows.size:
            r = int(rows[0])
            atom = lookups[j]
            args = []
            for t in atom.args:
                if isinstance(t, Constant):
                    args.append(t)
                else:
                    sid = int(res[f"v_{t.name}"][r])
                    args.append(Constant(con.execute("SELECT s FROM psl_dict WHERE id = ?", [sid]).fetchone()[0]))
            p = resolve(atom, preds, rule.text)
            return f"the atom {Atom(p.name, tuple(args))} of the open predicate {p.key}"
    return "an atom"  # pragma: no cover - the caller found one


def _repeat_groups(tables: list[str]) -> list[tuple[int, int]]:
    """Pairs of columns (i < j) over the same predicate: the only ones that can hold the same atom."""
    return [(i, j) for i in range(len(tables)) for j in range(i + 1, len(tables)) if tables[i] == tables[j]]


def _ground_arithmetic(con, rule: ArithmeticRule, preds: dict, n_variables: int) -> list[RuleGrounding]:
    q = _Query(preds, rule.text)
    for k, (_, a) in enumerate(rule.terms):
        q.add(a, f"t{k}")
    senses = {"<=": [("<=", 1.0)], ">=": [("<=", -1.0)], "=": [("==", 1.0)]}[rule.sense]
    if rule.sense == "=" and not rule.hard:  # a weighted equality is two hinges, as in PSL
        senses = [("<=", 1.0), ("<=", -1.0)]
    if not rule.sum_variables:
        k = len(rule.terms)
        select = [f"t{j}.var AS var_{j}, t{j}.value AS val_{j}, t{j}.free AS free_{j}" for j in range(k)]
        res = _fetch(con, q.sql(select))
        n_rows = len(res["var_0"])
        var = [np.asarray(res[f"var_{j}"], np.int64) for j in range(k)]
        val = [np.asarray(res[f"val_{j}"], float) for j in range(k)]
        free = [np.asarray(res[f"free_{j}"], bool) for j in range(k)]
        coef = np.array([float(c.evaluate({})) for c, _ in rule.terms])
        const = np.full(n_rows, float(rule.constant.evaluate({})))
        _check_finite(rule, coef, const)
        pairs = _repeat_groups([resolve(a, preds, rule.text).table for _, a in rule.terms])
        return [
            _assemble_dense(rule, var, val, free, sign * coef, sign * const, sense, pairs) for sense, sign in senses
        ]
    # the groundings: distinct bindings of the non-summation variables in the join of all atoms (filters
    # play no part here, as in PSL's grounding query), in a temporary table with a row id
    nonsum = [v for v in q.bound if v not in rule.sum_variables]
    bind_sql = q.sql([f"{q.bound[v]} AS {_col(v)}" for v in nonsum] or ["1 AS one"], distinct=True)
    if not nonsum:
        bind_sql += " LIMIT 1"
    con.execute(f"CREATE OR REPLACE TEMP TABLE psl_bind AS SELECT row_number() OVER () - 1 AS rid, * FROM ({bind_sql})")
    blocks = []
    try:
        n_rows = con.execute("SELECT count(*) FROM psl_bind").fetchone()[0]
        ranks = _ranks(con, rule)
        for split in rule.filter_splits():
            rows, var, val, free, coef, const, alive = _summation_entries(con, rule, preds, split, n_rows, ranks)
            for sense, sign in senses:
                blocks.append(
                    _assemble(
                        rule,
                        rows=rows,
                        var=var,
                        val=val,
                        free=free,
                        coef=sign * coef,
                        const=sign * const,
                        sense=sense,
                        n_variables=n_variables,
                        alive=alive,
                    )
                )
    finally:
        con.execute("DROP TABLE IF EXISTS psl_bind")
    return blocks


def _conds(a: Atom) -> list[str]:
    """Join conditions of atom ``t`` with the bindings ``b``: constants and non-summation variables."""
    out = []
    for i, t in enumerate(a.args):
        if isinstance(t, Constant):
            out.append(f"t.a{i} = {_id(t.value)}")
        elif isinstance(t, Variable):
            out.append(f"t.a{i} = b.{_col(t.name)}")
    return out


def _check_finite(rule, coef, const) -> None:
    if not (np.all(np.isfinite(coef)) and np.all(np.isfinite(const))):
        hint = " or |X| = 0 where a filter keeps no term of +X" if getattr(rule, "filters", ()) else ""
        raise ValueError(
            f"PSL rule {_excerpt(rule.text)}: a coefficient is not finite in some grounding (a division by 0{hint}?)."
        )


def _ranks(con, rule: ArithmeticRule) -> dict:
    """SQL numbers for the constants of the filters' comparisons, ordered as the dictionary ids: a constant's
    id, or a number between the ids of its neighbours when it is not in ``psl_dict`` (then it equals no
    argument, and ``<`` still compares strings)."""
    out = {}
    for f in rule.filters:
        for leaf in f.leaves():
            if isinstance(leaf, Comparison):
                for t in (leaf.left, leaf.right):
                    if isinstance(t, Constant) and t.value not in out:
                        lt, eq = con.execute(
                            "SELECT count(*) FILTER (WHERE s < ?), count(*) FILTER (WHERE s = ?) FROM psl_dict",
                            [t.value, t.value],
                        ).fetchone()
                        out[t.value] = str(lt + 1) if eq else f"{lt + 0.5}"
    return out


def _filter_conds(conj: tuple, name: str, col: str, preds: dict, text: str, ranks: dict) -> list[str]:
    """SQL conditions that keep a summed atom whose argument ``col`` is the value of the summation variable
    ``name``: every literal of the filter's conjunction holds.

    As PSL 2.4's ``AbstractArithmeticRule.evalFilter``: an atom holds when its observed value, as a
    float32, is > 0 (a missing atom of a closed predicate is 0); a comparison as in a logical rule.
    """
    out = []

    def term(t, in_atom: bool) -> str:
        if isinstance(t, Variable):
            return col if t.name == name else f"b.{_col(t.name)}"
        return _id(t.value) if in_atom else ranks[t.value]

    for leaf in conj:
        if isinstance(leaf, Literal):
            p = resolve(leaf.atom, preds, text)
            eqs = [f"f.a{i} = {term(t, True)}" for i, t in enumerate(leaf.atom.args)]
            sql = f"EXISTS (SELECT 1 FROM {p.table} AS f WHERE {' AND '.join(eqs)} AND CAST(f.value AS FLOAT) > 0)"
            out.append(f"NOT {sql}" if leaf.negated else sql)
        else:
            op = {"==": "=", "!=": "<>", "<": "<"}[leaf.op]
            expr = f"({term(leaf.left, False)} {op} {term(leaf.right, False)})"
            out.append(f"NOT {expr}" if leaf.negated else expr)
    return out


def _summation_entries(con, rule: ArithmeticRule, preds: dict, split: dict, n_rows: int, ranks: dict):
    """Entries ``(row, var, value, free, coef)`` sorted by row, the constants and the live rows of a
    summation rule, for one conjunction of filters (``split``: variable -> literals).

    Each atom joins the bindings ``psl_bind`` on its non-summation arguments; the filter of a summation
    variable keeps the atoms whose argument passes it. ``|X|`` is the number of kept atoms of the atom
    holding ``+X`` (PSL 2.4 counts the summed atoms; with two summation variables in one atom both count
    its kept atoms); where ``+X`` appears in several atoms (an extension: PSL refuses it), the number of
    distinct values of ``X`` among their kept atoms. A binding is live unless the rule has only summation
    atoms and the filters keep none of them (PSL then grounds nothing for it).
    """
    positions: dict[str, list] = {v: [] for v in rule.sum_variables}
    parts, union = [], {v: [] for v in rule.sum_variables}
    has_plain = False
    for k, (_, a) in enumerate(rule.terms):
        p = resolve(a, preds, rule.text)
        join = f"FROM psl_bind AS b JOIN {p.table} AS t ON " + (" AND ".join(_conds(a)) or "true")
        where = []
        for i, t in enumerate(a.args):
            if isinstance(t, SumVariable):
                positions[t.name].append(k)
                if t.name in split:
                    where += _filter_conds(split[t.name], t.name, f"t.a{i}", preds, rule.text, ranks)
        has_plain |= not any(isinstance(t, SumVariable) for t in a.args)
        where_sql = (" WHERE " + " AND ".join(where)) if where else ""
        for i, t in enumerate(a.args):
            if isinstance(t, SumVariable):
                union[t.name].append(f"SELECT b.rid, t.a{i} AS x {join}{where_sql}")
        r = _fetch(con, f"SELECT b.rid, t.var, t.value, t.free {join}{where_sql}")
        parts.append(
            (
                r["rid"].astype(np.int64),
                r["var"].astype(np.int64),
                r["value"].astype(float),
                r["free"].astype(bool),
            )
        )
    counts = {}
    for v, ks in positions.items():
        if len(ks) == 1:
            counts[v] = np.bincount(parts[ks[0]][0], minlength=n_rows).astype(float)
        else:
            r = _fetch(con, f"SELECT rid, count(DISTINCT x) AS n FROM ({' UNION ALL '.join(union[v])}) GROUP BY rid")
            arr = np.zeros(n_rows)
            arr[r["rid"].astype(np.int64)] = r["n"]
            counts[v] = arr
    if has_plain or not split:
        alive = np.ones(n_rows, bool)
    else:
        alive = np.zeros(n_rows, bool)
        for rid, *_ in parts:
            alive[rid] = True
    # every coefficient at every live binding, as PSL evaluates them (a division by |X| = 0 is an error)
    cvals = [np.broadcast_to(np.asarray(c.evaluate(counts), float), (n_rows,)) for c, _ in rule.terms]
    const = np.broadcast_to(np.asarray(rule.constant.evaluate(counts), float), (n_rows,)).copy()
    _check_finite(rule, np.concatenate([c[alive] for c in cvals]) if cvals else np.zeros(0), const[alive])
    rows = np.concatenate([p[0] for p in parts])
    var = np.concatenate([p[1] for p in parts])
    val = np.concatenate([p[2] for p in parts])
    free = np.concatenate([p[3] for p in parts])
    coef = np.concatenate([cvals[k][p[0]] for k, p in enumerate(parts)])
    order = np.argsort(rows, kind="stable")
    return rows[order], var[order], val[order], free[order], coef[order], const, alive


def _assemble_dense(rule, var, val, free, coef, const, sense, pairs) -> RuleGrounding:
    """:func:`_assemble` for groundings with one column per atom (column by column, contiguous arrays).

    Parameters
    ----------
    var : list of K ndarrays of int64, shape (R,)
        Variable of each atom (-1: closed or missing, folded into the constant).
    val : list of K ndarrays, shape (R,)
        Observed values (0 for targets and missing atoms).
    free : list of K ndarrays of bool, shape (R,)
    coef : ndarray, shape (K,)
        Coefficient of each column in ``c·x + b``.
    const : ndarray, shape (R,)
    pairs : list of (int, int)
        Columns that may hold the same atom (merged by adding the coefficients).
    """
    k, n_rows = len(var), const.size
    has_var = [v >= 0 for v in var]
    c = [np.where(h, coef[j], 0.0) for j, h in enumerate(has_var)]
    const = const.copy()
    for j in range(k):
        const += np.where(has_var[j], 0.0, coef[j] * val[j])
    opposite = np.zeros(n_rows, bool)
    duplicate = [np.zeros(n_rows, bool) for _ in range(k)]
    for i, j in pairs:
        same = has_var[i] & (var[i] == var[j]) & ~duplicate[j]
        if same.any():
            if np.sign(coef[i]) != np.sign(coef[j]):
                opposite |= same & free[i]
            duplicate[j] |= same
            c[i] = c[i] + np.where(same, c[j], 0.0)
            c[j] = np.where(same, 0.0, c[j])
    e0 = const.copy()
    fmax = np.zeros(n_rows)
    fmin = np.zeros(n_rows)
    n_free = np.zeros(n_rows, np.int64)
    for j in range(k):
        e0 += np.where(has_var[j] & ~free[j], c[j] * val[j], 0.0)
        cf = np.where(free[j], c[j], 0.0)
        fmax += np.maximum(cf, 0.0)
        fmin += np.minimum(cf, 0.0)
        n_free += cf != 0.0
    fmax += e0
    fmin += e0
    if isinstance(rule, LogicalRule):
        # PSL drops a grounding when an observed literal of the clause is true (a body atom observed at 0,
        # a head atom observed at 1) or when an atom appears both positively and negatively
        trivial = opposite
        for j in range(k):
            trivial = trivial | (~free[j] & (val[j] == (0.0 if coef[j] > 0 else 1.0)))
    else:
        trivial = _single_atom_trivial(k - np.sum(duplicate, axis=0), fmax, sense)
    keep, offset, n_infeasible, example = _decide(rule, sense, e0, fmin, fmax, n_free, trivial)
    cm = np.stack([cj[keep] for cj in c], axis=1) if k else np.zeros((int(keep.sum()), 0))
    vm = np.stack([vj[keep] for vj in var], axis=1) if k else np.zeros((int(keep.sum()), 0), np.int64)
    mask = cm != 0.0
    indptr = np.zeros(cm.shape[0] + 1, np.int64)
    np.cumsum(mask.sum(axis=1), out=indptr[1:])
    return RuleGrounding(
        indptr=indptr,
        variables=vm[mask],
        coefficients=cm[mask],
        constants=const[keep],
        senses=np.full(cm.shape[0], sense),
        n_groundings=n_rows,
        offset=offset,
        n_infeasible=n_infeasible,
        infeasible_example=example,
    )


def _single_atom_trivial(n_atoms, fmax, sense):
    """PSL's test for arithmetic ground rules: one atom, and the inequality holds over all of [0, 1]."""
    if sense != "<=":
        return np.zeros(n_atoms.shape, bool)
    return (n_atoms == 1) & (fmax <= _TOL)


def _decide(rule, sense, e0, fmin, fmax, n_free, trivial, alive=None):
    """Which ground rules to keep, the distance of those without free atoms, and the infeasible ones dropped.

    ``trivial`` marks the groundings PSL drops as satisfied whatever the free atoms' values; a grounding
    without free atoms is dropped too (its distance goes into the returned offset). Groundings that are
    not ``alive`` (every atom filtered out) do not exist: neither kept, nor counted. A hard grounding that
    no value in the box satisfies raises when it has free atoms; without free atoms the observed values
    alone break it, and it is dropped as PSL drops it (counted, with one example, for the caller's
    warning or, with ``strict``, its error).

    Returns
    -------
    keep : ndarray of bool
    offset : float
    n_infeasible : int
    example : str
    """
    offset = 0.0
    n_infeasible, example = 0, ""
    if alive is not None:
        trivial = trivial | ~alive
    if rule.hard:
        infeasible = (fmin > _TOL) | ((fmax < -_TOL) if sense == "==" else False)
        if alive is not None:
            infeasible &= alive
        with_free = infeasible & (n_free > 0)
        if np.any(with_free):
            r = int(np.flatnonzero(with_free)[0])
            raise ValueError(
                f"PSL rule {rule.text!r}: a grounding is infeasible: with the observed values its expression "
                f"lies in [{fmin[r]:.6g}, {fmax[r]:.6g}], which must be {sense} 0 "
                f"({n_free[r]} free atoms; grounding {r} of the rule's query)."
            )
        constant = np.flatnonzero(infeasible & (n_free == 0))
        if constant.size:
            r = int(constant[0])
            n_infeasible = int(constant.size)
            example = (
                f"grounding {r} of the rule's query, whose observed expression is {fmin[r]:.6g} where it must be "
                f"{sense} 0"
            )
    else:
        none = (n_free == 0) & ~trivial & (e0 > 0)
        h = e0[none]
        offset = float(rule.weight * np.sum(h * h if rule.squared else h))
    return (n_free > 0) & ~trivial, offset, n_infeasible, example


def _assemble(rule, *, rows, var, val, free, coef, const, sense, n_variables, alive=None) -> RuleGrounding:
    """Turn per-entry arrays of the groundings of an arithmetic rule into the CSR rows of the kept ones.

    ``rows`` (nnz,) is sorted; ``var`` is -1 for atoms without a variable (closed or missing), whose
    ``coef * val`` goes into the constant. Entries of one variable in one row are merged. ``alive``
    (optional, shape (m,)) marks the groundings that exist (see :func:`_summation_entries`).
    """
    n_rows = const.size
    has_var = var >= 0
    const = const + np.bincount(rows[~has_var], weights=(coef * val)[~has_var], minlength=n_rows)
    n_atoms = np.bincount(rows[~has_var], minlength=n_rows)
    rows, var, val, free, coef = rows[has_var], var[has_var], val[has_var], free[has_var], coef[has_var]
    if rows.size:
        key = rows * (n_variables + 1) + var
        order = np.argsort(key, kind="stable")
        key, rows, var, val, free, coef = key[order], rows[order], var[order], val[order], free[order], coef[order]
        first = np.ones(key.size, bool)
        first[1:] = key[1:] != key[:-1]
        if not first.all():
            starts = np.flatnonzero(first)
            coef = np.add.reduceat(coef, starts)
            rows, var, val, free = rows[starts], var[starts], val[starts], free[starts]
    n_atoms = n_atoms + np.bincount(rows, minlength=n_rows)
    nz = coef != 0.0
    rows, var, val, free, coef = rows[nz], var[nz], val[nz], free[nz], coef[nz]
    fixed_part = np.bincount(rows[~free], weights=(coef * val)[~free], minlength=n_rows)
    e0 = const + fixed_part
    fmax = e0 + np.bincount(rows[free], weights=np.maximum(coef[free], 0.0), minlength=n_rows)
    fmin = e0 + np.bincount(rows[free], weights=np.minimum(coef[free], 0.0), minlength=n_rows)
    n_free = np.bincount(rows[free], minlength=n_rows)
    keep, offset, n_infeasible, example = _decide(
        rule, sense, e0, fmin, fmax, n_free, _single_atom_trivial(n_atoms, fmax, sense), alive
    )
    lengths = np.bincount(rows, minlength=n_rows)
    entry_keep = keep[rows]
    indptr = np.zeros(int(keep.sum()) + 1, np.int64)
    np.cumsum(lengths[keep], out=indptr[1:])
    return RuleGrounding(
        indptr=indptr,
        variables=var[entry_keep],
        coefficients=coef[entry_keep],
        constants=const[keep],
        senses=np.full(int(keep.sum()), sense),
        n_groundings=n_rows,
        offset=offset,
        n_infeasible=n_infeasible,
        infeasible_example=example,
    )
