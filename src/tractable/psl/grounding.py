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

**Arithmetic rules** ``sum_i c_i a_i + c_0 (<=, >=, =) 0`` join all their atoms. With summation
variables ``+X``, the groundings are the distinct bindings of the other variables in that join
(summation variables joined like any other); each summation atom then contributes every existing
atom matching the binding, and ``|X|`` is the number of distinct values of ``X`` among them.

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

from .parser import ArithmeticRule, Atom, Comparison, Constant, Literal, LogicalRule, SumVariable, Variable

__all__ = ["Predicate", "RuleGrounding", "ground_rule"]

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
    """Check predicates, arities and that every variable is bound by a query literal."""
    for a in rule.atoms():
        resolve(a, preds, rule.text)
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


def ground_rule(con, rule, preds: dict, n_variables: int, *, strict: bool = False) -> list[RuleGrounding]:
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

    Returns
    -------
    list of RuleGrounding
        One block (two for a weighted arithmetic equality: ``<=`` and ``>=`` as two hinges).
    """
    check_rule(rule, preds)
    if isinstance(rule, LogicalRule):
        blocks = [_ground_logical(con, rule, preds, n_variables)]
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


def _ground_logical(con, rule: LogicalRule, preds: dict, n_variables: int) -> RuleGrounding:
    query, lookups, filters = _split_logical(rule)
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
    for k, a in enumerate(lookups):
        joins.append(_lookup_join(a, f"l{k}", q, preds, rule.text))
        outer += [
            f"coalesce(l{k}.var, -1) AS var_l{k}",
            f"coalesce(l{k}.value, 0.0) AS val_l{k}",
            f"coalesce(l{k}.free, false) AS free_l{k}",
        ]
    sql = f"SELECT {', '.join(outer)} FROM ({inner}) AS b {' '.join(joins)}"
    res = _fetch(con, sql)
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
        raise ValueError(f"PSL rule {rule.text!r}: a logical rule needs at least one atom.")
    var = [np.asarray(res[f"var_{c}"], np.int64) for c in cols]
    val = [np.asarray(res[f"val_{c}"], float) for c in cols]
    free = [np.asarray(res[f"free_{c}"], bool) for c in cols]
    preds_of = [resolve(a, preds, rule.text).table for a, _ in _clause(rule)]
    groups = _repeat_groups(preds_of)
    return _assemble_dense(rule, var, val, free, np.array(coefs), np.full(n_rows, const0), "<=", groups)


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
    rows, var, val, free, coef, const = _summation_entries(con, rule, preds, q)
    _check_finite(rule, coef, const)
    return [
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
        )
        for sense, sign in senses
    ]


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
        raise ValueError(f"PSL rule {rule.text!r}: a coefficient is not finite in some grounding (a division by 0?).")


def _summation_entries(con, rule: ArithmeticRule, preds: dict, q: _Query):
    """Entries ``(row, var, value, free, coef)`` sorted by row, and the constants, of a summation rule.

    The groundings are the distinct bindings of the non-summation variables in the join of all atoms
    (a temporary table ``psl_bind`` with a row id); each atom then joins the bindings on its
    non-summation arguments, and ``|X|`` counts the distinct values of ``X`` per binding.
    """
    nonsum = [v for v in q.bound if v not in rule.sum_variables]
    bind_sql = q.sql([f"{q.bound[v]} AS {_col(v)}" for v in nonsum] or ["1 AS one"], distinct=True)
    if not nonsum:
        bind_sql += " LIMIT 1"
    con.execute(f"CREATE OR REPLACE TEMP TABLE psl_bind AS SELECT row_number() OVER () - 1 AS rid, * FROM ({bind_sql})")
    try:
        n_rows = con.execute("SELECT count(*) FROM psl_bind").fetchone()[0]
        card_sql: dict[str, list[str]] = {v: [] for v in rule.sum_variables}
        parts = []
        for k, (_, a) in enumerate(rule.terms):
            p = resolve(a, preds, rule.text)
            join = f"FROM psl_bind AS b JOIN {p.table} AS t ON " + (" AND ".join(_conds(a)) or "true")
            for i, t in enumerate(a.args):
                if isinstance(t, SumVariable):
                    card_sql[t.name].append(f"SELECT b.rid, t.a{i} AS x {join}")
            parts.append((k, f"SELECT b.rid, t.var, t.value, t.free {join}"))
        counts = {}
        for v, sqls in card_sql.items():
            r = _fetch(con, f"SELECT rid, count(DISTINCT x) AS n FROM ({' UNION ALL '.join(sqls)}) GROUP BY rid")
            arr = np.zeros(n_rows)
            arr[r["rid"].astype(np.int64)] = r["n"]
            counts[v] = arr
        rows, var, val, free, coef = [], [], [], [], []
        for k, sql in parts:
            r = _fetch(con, sql)
            rid = r["rid"].astype(np.int64)
            cval = np.broadcast_to(np.asarray(rule.terms[k][0].evaluate(counts), float), (n_rows,))
            rows.append(rid)
            var.append(r["var"].astype(np.int64))
            val.append(r["value"].astype(float))
            free.append(r["free"].astype(bool))
            coef.append(cval[rid])
    finally:
        con.execute("DROP TABLE IF EXISTS psl_bind")
    rows, var, val, free, coef = (np.concatenate(x) for x in (rows, var, val, free, coef))
    order = np.argsort(rows, kind="stable")
    const = np.broadcast_to(np.asarray(rule.constant.evaluate(counts), float), (n_rows,)).copy()
    return rows[order], var[order], val[order], free[order], coef[order], const


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


def _decide(rule, sense, e0, fmin, fmax, n_free, trivial):
    """Which ground rules to keep, the distance of those without free atoms, and the infeasible ones dropped.

    ``trivial`` marks the groundings PSL drops as satisfied whatever the free atoms' values; a grounding
    without free atoms is dropped too (its distance goes into the returned offset). A hard grounding that
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
    if rule.hard:
        infeasible = (fmin > _TOL) | ((fmax < -_TOL) if sense == "==" else False)
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


def _assemble(rule, *, rows, var, val, free, coef, const, sense, n_variables) -> RuleGrounding:
    """Turn per-entry arrays of the groundings of an arithmetic rule into the CSR rows of the kept ones.

    ``rows`` (nnz,) is sorted; ``var`` is -1 for atoms without a variable (closed or missing), whose
    ``coef * val`` goes into the constant. Entries of one variable in one row are merged.
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
        rule, sense, e0, fmin, fmax, n_free, _single_atom_trivial(n_atoms, fmax, sense)
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
