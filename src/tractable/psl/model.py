"""The PSL front end's model: predicates, rules and data in, a hinge-loss MRF and inferred values out.

A :class:`Model` keeps its declarations in Python and its data in DuckDB (in memory, or in a database
file given as ``database=`` so that data larger than memory work). :meth:`Model.ground` builds one
table of ground atoms per predicate (targets and observations of open predicates numbered as HL-MRF
variables, observed ones fixed), grounds every rule by one SQL query (:mod:`tractable.psl.grounding`)
and adds the resulting CSR blocks to an :class:`~tractable.hlmrf.HLMRF`. :meth:`Model.infer` solves it
with :func:`tractable.hlmrf.solve` and returns one data frame per open predicate.
"""

from __future__ import annotations

import os
import re
import sys
import time
import warnings
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType

import numpy as np

from ..hlmrf import HLMRF, MPEResult, solve
from ..hlmrf.admm import default_rho_for
from .config import MAX_NESTING, read_text, rule_depth
from .data import excerpt, load_source, short_repr
from .grounding import MISSING_ATOMS, Predicate, check_rule, ground_rule
from .parser import ArithmeticRule, Comparison, Constant, LogicalRule, parse_rule, parse_rules, strip_comments

__all__ = ["ADMM_DEFAULTS", "GroundModel", "MAX_ARITY", "Model", "PARTITIONS"]

#: The PSL front end's ADMM options beyond :func:`tractable.hlmrf.solve`'s defaults, for every inference
#: (:meth:`Model.infer`, and each inference inside :meth:`Model.learn`); a program's options and the
#: caller's arguments take precedence. Residual balancing (``adaptive_rho``) reaches the same certified
#: optimum in far fewer iterations on PSL's programs (cold solves of the psl-examples programs' learn
#: splits: knowledge-graph-identification 2,950 -> 100 iterations, jester 2,200 -> 100,
#: drug-drug-interaction 1,181 -> 103, entity-resolution 240 -> 80, never more), unlike the
#: opinion-diffusion models of docs/hlmrf.md where it brought nothing.
ADMM_DEFAULTS = MappingProxyType({"adaptive_rho": True})

#: data partitions of a predicate, as PSL names them
PARTITIONS = ("observations", "targets", "truth")
#: the most arguments of a predicate (each is a column of its atom tables and a join of its grounding)
MAX_ARITY = 64
_NAME = re.compile(r"[A-Za-z$_][A-Za-z0-9$_]*")  # fullmatch
_DUCKDB_MAGIC = b"DUCK"  # bytes 8..11 of a DuckDB database file


def _weight_scaled_rho(rules, rule_counts) -> float | None:
    """ADMM's step size for a ground program whose step size the program does not set: the solver's default
    (:func:`tractable.hlmrf.admm.default_rho_for`, tuned for weights near 1) times the mean weight of the ground
    potentials (from the rules' weights and their ``rule_counts``, so that a program grounded here and one
    grounded into shards get the same step size).

    ADMM on weights ``c w`` with step size ``c rho`` runs the same iterates as on ``w`` with ``rho``, so this
    makes PSL's inference as fast whatever the scale of the weights; learned weights (which PSL's learners
    scale to sum to 1) are far from 1. On the Cora and CiteSeer programs with learned weights: 140 -> 90 and
    160 -> 40 ADMM iterations to the certified gap; lastfm 670 -> 460; CiteSeer with its given weights (mean
    0.89) 50 -> 30. None without a weighted potential.
    """
    n = n_squared = 0
    total = 0.0
    for rule, (_, n_pot, _) in zip(rules, rule_counts):
        if not rule.hard and n_pot:
            n += n_pot
            total += float(rule.weight) * n_pot
            n_squared += n_pot if rule.squared else 0
    mean = total / n if n else 0.0
    if not (mean > 0 and np.isfinite(mean)):
        return None
    return default_rho_for(n, n_squared) * mean


def _check_database(path: str) -> None:
    """Refuse a ``database`` path that is a folder or an existing file that is not a DuckDB database."""
    if os.path.isdir(path):
        raise OSError(f"`database` {path!r} is a folder; expected a DuckDB database file (created if missing).")
    if os.path.exists(path):
        try:
            with open(path, "rb") as fh:
                head = fh.read(12)
        except OSError as err:
            raise OSError(f"`database` {path!r} cannot be read: {err.strerror}.") from None
        if head[8:12] != _DUCKDB_MAGIC:
            raise ValueError(
                f"`database` {path!r} exists but is not a DuckDB database file (no DuckDB header); name a new "
                "file or a DuckDB database."
            )


def _nonfinite_number(coef) -> float | None:
    """A non-finite number in a coefficient expression of an arithmetic rule, or None."""
    stack = [coef]
    while stack:
        c = stack.pop()
        if c.kind == "num" and not np.isfinite(c.value):
            return c.value
        stack.extend(c.args)
    return None


def _check_numbers(rule) -> None:
    """A rule's weight and coefficients must be finite (``1e309`` reads as infinity)."""
    if rule.weight is not None and not np.isfinite(rule.weight):
        raise ValueError(
            f"PSL rule {excerpt(rule.text)}: the weight must be a finite number; got {rule.weight} (a number "
            "beyond 1.8e308 overflows)."
        )
    if isinstance(rule, ArithmeticRule):
        for coef in (rule.constant, *(c for c, _ in rule.terms)):
            bad = _nonfinite_number(coef)
            if bad is not None:
                raise ValueError(
                    f"PSL rule {excerpt(rule.text)}: coefficients and constants must be finite numbers; got {bad} "
                    "(a number beyond 1.8e308 overflows)."
                )


def _check_depth(text: str) -> None:
    depth = rule_depth(strip_comments(text))
    if depth > MAX_NESTING:
        raise ValueError(
            f"PSL rule text nests parentheses and brackets {depth} deep; rules nest at most MAX_NESTING = "
            f"{MAX_NESTING} deep."
        )


@dataclass(frozen=True)
class GroundModel:
    """A grounded PSL program.

    Attributes
    ----------
    hlmrf : HLMRF
        One variable per atom of an open predicate (targets free, observations fixed).
    rule_counts : tuple of (str, int, int)
        Per rule: its text, the number of ground potentials and of ground constraints.
    offset : float
        Weighted distance of the ground rules without free atoms (a constant the solver cannot change).
    time : float
        Seconds spent grounding (data loading included).
    rule_offsets : tuple of float
        Per rule, the *unweighted* distance of its ground rules without free atoms (0 for hard rules):
        ``offset`` is ``sum(weight_r * rule_offsets[r])``, so a new weight vector needs no regrounding.
    load_time : float
        Seconds spent reading the data into DuckDB's atom tables.
    rule_times : tuple of float
        Seconds spent grounding each rule (its SQL query and array operations).
    n_infeasible_dropped : int
        Hard ground rules without open atoms that the observed values alone violate, dropped as PSL
        drops them (:class:`Model`'s ``strict`` makes them an error).
    atoms : pandas.DataFrame
        One row per HL-MRF variable: ``predicate`` (declared name), ``arguments`` (tuple of str),
        ``variable`` (index), ``fixed_value`` (the observed value, NaN for targets) and ``in_rules``
        (whether a ground rule uses it; a target in no ground rule keeps the default value 0). Built on
        first access from arrays kept at grounding time.
    """

    hlmrf: HLMRF
    rule_counts: tuple
    offset: float
    time: float
    load_time: float = 0.0
    rule_times: tuple = ()
    n_infeasible_dropped: int = 0
    rule_offsets: tuple = ()
    _atom_parts: tuple = field(default=((), (), None), repr=False, compare=False)

    @cached_property
    def atoms(self):
        from .shards import atoms_frame

        return atoms_frame(self._atom_parts)

    @property
    def n_potentials(self) -> int:
        return self.hlmrf.n_potentials

    @property
    def n_constraints(self) -> int:
        return self.hlmrf.n_constraints

    @cached_property
    def potential_rules(self) -> np.ndarray:
        """The rule of every potential: ndarray of int64, shape (n_potentials,), read-only.

        ``potential_rules[j]`` indexes :attr:`Model.rules` (and :attr:`rule_counts`): each rule's potentials
        are contiguous, in rule order, so the weights of a new weight vector are ``w[potential_rules]``
        (weight learning: a multiply, not a regrounding).
        """
        idx = np.repeat(np.arange(len(self.rule_counts), dtype=np.int64), [c[1] for c in self.rule_counts])
        if idx.size != self.hlmrf.n_potentials:  # pragma: no cover - ground() adds potentials rule by rule
            raise RuntimeError("the ground program's potentials do not match its rule counts")
        idx.flags.writeable = False
        return idx


def _truthy(v) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() == "true")


def check_solve_options(options: dict, where: str) -> None:
    """Raise a ``TypeError`` naming the first key of ``options`` that :func:`tractable.hlmrf.solve` does not take."""
    import inspect

    names = [p for p in inspect.signature(solve).parameters if p != "model"]
    for key in options:
        if key not in names:
            raise TypeError(
                f"{where} has the option {key!r}, which tractable.hlmrf.solve does not take: {', '.join(names)}."
            )


class _ClosedConnection:
    """What a closed :class:`Model` holds instead of its DuckDB connection: any use is a clear error."""

    def close(self) -> None:
        pass

    def __getattr__(self, name):
        if name.startswith("__"):  # Python's protocols (copy, pickle) probe for these
            raise AttributeError(name)
        raise ValueError("the PSL model is closed (Model.close was called): load the program again to use it.")


class Model:
    """A PSL program: predicates, rules and data; grounded in DuckDB and solved by ADMM.

    Parameters
    ----------
    database : str or os.PathLike, optional
        A DuckDB database file that holds the atom tables (created if missing; tables of earlier
        models in it are replaced). Default: an in-memory database. A folder is an ``OSError``, an
        existing file that is not a DuckDB database a ``ValueError``.
    strict : bool, default False
        A hard ground rule that the observed values alone violate (it has no open atom, e.g.
        ``Knows(A, B) = Knows(B, A) .`` with ``Knows(1, 2) = 1`` and ``Knows(2, 1) = 0`` both observed)
        is dropped, as PSL drops every ground rule without an open atom, with one warning per rule (the
        count and an example) and the count in :attr:`GroundModel.n_infeasible_dropped`; ``strict=True``
        makes it an error instead.
    missing_atoms : {"error", "drop", "zero"}, default "error"
        A ground rule that uses an atom of an open predicate that is neither observed nor a target
        (and that no observed literal already satisfies): ``"error"`` is a ``ValueError`` naming the
        atom and the rule, as PSL 2.4 stops (its ``pam.throw``, true by default); ``"drop"`` leaves such
        ground rules out with one warning per rule (PSL's ``pam.throw = false``); ``"zero"`` treats the
        atom as 0, as if observed.

    Attributes
    ----------
    solve_options : dict
        Options passed to :func:`tractable.hlmrf.solve` by :meth:`infer` (set from a JSON
        configuration's ``options``; arguments of :meth:`infer` take precedence), on top of
        :data:`ADMM_DEFAULTS`.
    learn_options : dict
        A configuration's weight-learning options under their PSL names (``gradientdescent.*``,
        ``minimizer.*``, ``votedperceptron.*``, ...), for :meth:`learn`.
    learn_method, learn_requested
        A configuration's ``runtime.learn.method`` (or None) and ``runtime.learn`` (False by default).
    learn_seed : int or None
        A configuration's ``random.seed``: the seed :meth:`learn` draws with when given no ``rng`` (the
        search learners' locations, random initial weights, pseudo-likelihood's samples), as PSL seeds
        its random numbers from it. None: fresh randomness, unless ``rng`` is given.
    ignored_options : list of str
        Options of a configuration that have no meaning here (reported with a warning).
    evaluators : dict
        Predicate key -> list of evaluator names from a JSON configuration.

    Examples
    --------
    Example 1 of Bach et al. (2012): a voter whose two friends vote 0.9 and 0.6 for two parties.

    >>> import pandas as pd
    >>> from tractable.psl import Model
    >>> m = Model()
    >>> m.add_predicate("Friend", 2, closed=True)
    >>> m.add_predicate("Votes", 2, closed=False)
    >>> _ = m.add_rule("1: Friend(A, B) & Votes(B, P) -> Votes(A, P) ^2")
    >>> _ = m.add_rule("Votes(A, +P) = 1 .")
    >>> m.add_data("Friend", "observations", pd.DataFrame([["me", "f1"], ["me", "f2"]]))
    >>> m.add_data("Votes", "observations", pd.DataFrame([["f1", "L", 0.9], ["f1", "C", 0.1],
    ...                                                   ["f2", "L", 0.4], ["f2", "C", 0.6]]))
    >>> m.add_data("Votes", "targets", pd.DataFrame([["me", "L"], ["me", "C"]]))
    >>> pred, res = m.infer(eps_abs=1e-8, eps_rel=1e-8, gap_tol=1e-9)
    >>> pred["Votes"].set_index(1)["value"].round(2).to_dict()
    {'C': 0.35, 'L': 0.65}
    """

    def __init__(self, *, database=None, strict: bool = False, missing_atoms: str = "error") -> None:
        import duckdb

        if not isinstance(strict, bool):
            raise TypeError(f"`strict` must be True or False; got {short_repr(strict)}.")
        self.strict = strict
        if missing_atoms not in MISSING_ATOMS:
            raise ValueError(
                f"`missing_atoms` must be one of {', '.join(MISSING_ATOMS)}; got {short_repr(missing_atoms)}."
            )
        self.missing_atoms = missing_atoms

        if database is not None and not isinstance(database, (str, os.PathLike)):
            raise TypeError(f"`database` must be None or a file path; got {type(database).__name__}.")
        self.database = None if database is None else os.fspath(database)
        if self.database is not None:
            _check_database(self.database)
        try:
            self._con = duckdb.connect(self.database or ":memory:")
        except duckdb.Error as err:
            msg = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise OSError(f"`database` {self.database!r}: DuckDB cannot open it ({excerpt(msg)}).") from None
        self._preds: dict[str, Predicate] = {}
        self._rules: list = []
        self._data: dict[tuple[str, str], list] = {}
        self._ground: GroundModel | None = None
        self._predictions: dict | None = None
        self.solve_options: dict = {}
        self.learn_options: dict = {}
        self.learn_method: str | None = None
        self.learn_requested: bool = False
        self.learn_seed: int | None = None
        self.ignored_options: list[str] = []
        self.evaluators: dict = {}

    # ------------------------------------------------------------------ declarations
    def add_predicate(self, name: str, arity: int, *, closed: bool = False) -> None:
        """Declare a predicate.

        Parameters
        ----------
        name : str
            An identifier; matched case-insensitively in rules.
        arity : int
            Number of arguments, from 1 to :data:`MAX_ARITY`.
        closed : bool, default False
            A closed predicate is fully observed; an open one has targets to infer.
        """
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(f"`name` must be an identifier (letters, digits, _ and $); got {short_repr(name)}.")
        if isinstance(arity, bool) or not isinstance(arity, (int, np.integer)) or arity < 1:
            raise ValueError(f"`arity` must be an integer >= 1; got {short_repr(arity)}.")
        if arity > MAX_ARITY:
            raise ValueError(f"`arity` must be at most MAX_ARITY = {MAX_ARITY}; got {short_repr(arity)}.")
        if not isinstance(closed, (bool, np.bool_)):
            raise TypeError(f"`closed` must be a bool; got {short_repr(closed)}.")
        key = name.lower()
        if key in self._preds:
            raise ValueError(f"`name` {short_repr(name)}: the predicate {self._preds[key].key} is already declared.")
        self._preds[key] = Predicate(name, int(arity), bool(closed), f"psl_p{len(self._preds)}")
        self._changed()

    @property
    def predicates(self) -> dict:
        """Declared predicates: ``"Name/arity"`` -> ``{"arity", "closed"}``."""
        return {p.key: {"arity": p.arity, "closed": p.closed} for p in self._preds.values()}

    @property
    def rules(self) -> tuple:
        """The parsed rules (:class:`~tractable.psl.parser.LogicalRule` / ``ArithmeticRule``)."""
        return tuple(self._rules)

    def add_rule(self, text: str):
        """Parse one rule and add it; its predicates must be declared.

        Returns
        -------
        LogicalRule or ArithmeticRule
        """
        if not isinstance(text, str):
            raise TypeError(f"`text` must be a rule string; got {type(text).__name__}.")
        _check_depth(text)
        try:
            rule = parse_rule(text)
        except RecursionError:
            raise ValueError(f"PSL rule {excerpt(text)} nests too deeply to parse.") from None
        _check_numbers(rule)
        check_rule(rule, self._preds)
        self._rules.append(rule)
        self._changed()
        return rule

    def add_rules(self, path) -> list:
        """Add every rule of a ``.psl`` file (comments start with ``#`` or ``//``).

        Returns
        -------
        list of LogicalRule or ArithmeticRule
        """
        text = read_text(path)
        try:
            _check_depth(text)
            try:
                rules = parse_rules(text)
            except RecursionError:
                raise ValueError("PSL rules nest too deeply to parse.") from None
            for r in rules:
                _check_numbers(r)
                check_rule(r, self._preds)
        except ValueError as err:
            raise ValueError(f"{os.fspath(path)}: {err}") from None
        self._rules.extend(rules)
        self._changed()
        return rules

    def _pred(self, predicate: str) -> Predicate:
        if not isinstance(predicate, str):
            raise TypeError(f"`predicate` must be a predicate name; got {type(predicate).__name__}.")
        name = predicate.split("/")[0].lower()
        p = self._preds.get(name)
        if p is None or ("/" in predicate and predicate.split("/")[1] != str(p.arity)):
            known = ", ".join(q.key for q in self._preds.values()) or "none"
            raise ValueError(f"`predicate` {short_repr(predicate)} is not declared (declared: {known}).")
        return p

    def add_data(self, predicate: str, partition: str, data) -> None:
        """Add ground atoms of a predicate to a partition.

        Parameters
        ----------
        predicate : str
            A declared predicate's name (or ``"Name/arity"``).
        partition : {"observations", "targets", "truth"}
        data : str, os.PathLike or pandas.DataFrame
            A tab-separated file (arguments, then an optional value, default 1.0) or a data frame with
            the arguments in its first columns and an optional value column last. Files are read when
            the model is grounded.
        """
        pd = sys.modules.get("pandas")  # a data frame exists only once pandas is imported: not imported for files
        p = self._pred(predicate)
        if partition not in PARTITIONS:
            raise ValueError(f"`partition` must be one of {', '.join(PARTITIONS)}; got {short_repr(partition)}.")
        if partition == "targets" and p.closed:
            raise ValueError(f"`partition` 'targets' for the closed predicate {p.key}: closed predicates have none.")
        if pd is not None and isinstance(data, pd.DataFrame):
            if data.shape[1] not in (p.arity, p.arity + 1):
                raise ValueError(
                    f"`data` for the {partition} of {p.key} must have {p.arity} argument columns and optionally "
                    f"a value column; got {data.shape[1]} columns."
                )
            data = data.copy()
        elif isinstance(data, (str, os.PathLike)):
            data = os.fspath(data)
            if not os.path.exists(data):
                raise OSError(f"data file for the {partition} of {p.key} not found: {data}")
            if not os.path.isfile(data):
                raise OSError(f"data file for the {partition} of {p.key} is not a file: {data}")
        else:
            raise TypeError(f"`data` must be a file path or a pandas DataFrame; got {type(data).__name__}.")
        self._data.setdefault((p.name.lower(), partition), []).append(data)
        self._changed()

    def _changed(self) -> None:
        self._ground = None
        self._sharded_ground = None
        self._predictions = None

    # ------------------------------------------------------------------ grounding
    def _load(self) -> int:
        """Create the atom tables; return the number of HL-MRF variables.

        Arguments are dictionary-encoded: ``psl_dict`` numbers every constant of the data and of the
        rules in string order (so that ``<`` on ids is ``<`` on strings), and the atom tables hold
        BIGINT ids, which DuckDB joins about twice as fast as strings. Observations are grouped by atom
        (a repeated atom must repeat its value), targets made distinct.
        """
        con = self._con
        for key, p in self._preds.items():
            for part in ("observations", "targets", "truth"):
                self._load_partition(p, part, self._data.get((key, part), []))
        self._build_dictionary()
        offset = 0
        for p in self._preds.values():
            args = ", ".join(f"a{i}" for i in range(p.arity))
            ids = ", ".join(f"d{i}.id AS a{i}" for i in range(p.arity))

            def encoded(part: str, p=p, ids=ids) -> str:
                joins = " ".join(f"JOIN psl_dict AS d{i} ON d{i}.s = r.a{i}" for i in range(p.arity))
                return f"SELECT {ids}, r.value FROM {p.table}_{part} AS r {joins}"

            con.execute(
                f"CREATE OR REPLACE TEMP TABLE psl_obs AS SELECT {args}, min(value) AS value, max(value) AS vmax "
                f"FROM ({encoded('observations')}) GROUP BY {args}"
            )
            dup = con.execute(f"SELECT {args} FROM psl_obs WHERE vmax <> value LIMIT 1").fetchone()
            if dup:
                raise ValueError(
                    f"the observations of {p.key} list the atom {p.name}{self._decode(dup)} twice with different "
                    "values."
                )
            if p.closed:
                con.execute(
                    f"CREATE OR REPLACE TABLE {p.table} AS SELECT {args}, value, CAST(-1 AS BIGINT) AS var, "
                    "false AS free FROM psl_obs"
                )
                continue
            con.execute(f"CREATE OR REPLACE TEMP TABLE psl_tgt AS SELECT DISTINCT {args} FROM ({encoded('targets')})")
            both = con.execute(f"SELECT {args} FROM psl_obs JOIN psl_tgt USING ({args}) LIMIT 1").fetchone()
            if both:
                raise ValueError(
                    f"the atom {p.name}{self._decode(both)} is both observed and a target of {p.key}; "
                    "an atom is either observed or inferred."
                )
            # variables in a deterministic order (targets, then observations, each by argument ids): a sorted
            # table numbered by its row ids (a parallel sort, unlike a window function)
            con.execute(
                f"CREATE OR REPLACE TEMP TABLE psl_sorted AS SELECT * FROM ("
                f"SELECT {args}, 0.0 AS value, true AS free FROM psl_tgt UNION ALL "
                f"SELECT {args}, value, false AS free FROM psl_obs) ORDER BY free DESC, {args}"
            )
            con.execute(
                f"CREATE OR REPLACE TABLE {p.table} AS SELECT {args}, value, "
                f"CAST({offset} + rowid AS BIGINT) AS var, free FROM psl_sorted"
            )
            offset += con.execute(f"SELECT count(*) FROM {p.table}").fetchone()[0]
        for tmp in ("psl_obs", "psl_tgt", "psl_sorted"):
            con.execute(f"DROP TABLE IF EXISTS {tmp}")
        return offset

    def _decode(self, ids) -> tuple:
        """The argument strings of dictionary ids."""
        return tuple(self._con.execute("SELECT s FROM psl_dict WHERE id = ?", [int(i)]).fetchone()[0] for i in ids)

    def _build_dictionary(self) -> None:
        """``psl_dict(s, id)``: every argument of the observations and targets and every rule constant."""
        cols = [
            f"SELECT a{i} AS s FROM {p.table}_{part}"
            for p in self._preds.values()
            for part in ("observations", "targets")
            for i in range(p.arity)
        ]
        consts = {t.value for r in self._rules for a in r.atoms() for t in a.args if isinstance(t, Constant)}
        for r in self._rules:
            if isinstance(r, LogicalRule):
                for lit in (*r.body, *r.head):
                    if isinstance(lit, Comparison):
                        consts |= {t.value for t in (lit.left, lit.right) if isinstance(t, Constant)}
        self._con.execute("CREATE OR REPLACE TEMP TABLE psl_rule_constants (s VARCHAR)")
        if consts:
            self._con.executemany("INSERT INTO psl_rule_constants VALUES (?)", [[c] for c in sorted(set(consts))])
        cols.append("SELECT s FROM psl_rule_constants")
        self._con.execute(
            "CREATE OR REPLACE TABLE psl_dict AS SELECT s, CAST(row_number() OVER (ORDER BY s) AS BIGINT) AS id "
            f"FROM (SELECT DISTINCT s FROM ({' UNION ALL '.join(cols)}))"
        )

    def _load_partition(self, p: Predicate, part: str, sources: list) -> None:
        con = self._con
        table = f"{p.table}_{part}"
        cols = ", ".join(f"a{i} VARCHAR" for i in range(p.arity))
        con.execute(f"CREATE OR REPLACE TABLE {table} ({cols}, value DOUBLE)")
        for src in sources:
            load_source(con, src, p.arity, table, f"{part} of {p.key}", append=True)

    def ground(self) -> GroundModel:
        """Ground every rule into an HL-MRF.

        Returns
        -------
        GroundModel
            The :class:`~tractable.hlmrf.HLMRF`, the atom table, per-rule counts and the time spent.

        Raises
        ------
        ValueError
            Malformed data (file and line), an atom both observed and a target, an infeasible hard
            ground rule (naming the rule), or a model without atoms of open predicates (nothing to infer;
            open atoms that are all observed leave nothing to infer either, and are no error).
        """
        if self._ground is not None:
            return self._ground
        t0 = time.perf_counter()
        n = self._load()
        load_time = time.perf_counter() - t0
        if n == 0:
            raise ValueError("the model has no atoms of open predicates (no `targets`): nothing to infer.")
        hl = HLMRF(n)
        counts = []
        rule_offsets = []
        used = np.zeros(n, bool)
        rule_times = []
        n_dropped = 0
        for rule in self._rules:
            t1 = time.perf_counter()
            n_pot = n_con = 0
            rule_offset = 0.0
            # grounded at weight 1: the offset per unit of weight, so that new weights need no regrounding
            unit = rule if rule.hard else replace(rule, weight=1.0)
            for block in ground_rule(
                self._con, unit, self._preds, n, strict=self.strict, missing_atoms=self.missing_atoms
            ):
                m = block.constants.size
                rule_offset += block.offset
                if block.n_missing and self.missing_atoms == "drop":
                    warnings.warn(
                        f"PSL rule {rule.text!r}: dropped {block.n_missing} ground rule(s) that use an atom of an open "
                        f"predicate that is neither observed nor a target, e.g. {block.missing_example} "
                        "(missing_atoms='drop', PSL's pam.throw = false).",
                        UserWarning,
                        stacklevel=2,
                    )
                if block.n_infeasible:
                    n_dropped += block.n_infeasible
                    warnings.warn(
                        f"PSL rule {rule.text!r}: dropped {block.n_infeasible} ground rule(s) without open atoms "
                        f"that the observed values alone violate, as PSL does (strict=True makes this an error); "
                        f"e.g. {block.infeasible_example}.",
                        UserWarning,
                        stacklevel=2,
                    )
                if m == 0:
                    continue
                used[block.variables] = True
                if rule.hard:
                    hl.add_constraints(block.indptr, block.variables, block.coefficients, block.constants, block.senses)
                    n_con += m
                else:
                    hl.add_potentials(
                        block.indptr, block.variables, block.coefficients, block.constants, rule.weight, rule.squared
                    )
                    n_pot += m
            counts.append((rule.text, n_pot, n_con))
            rule_offsets.append(0.0 if rule.hard else rule_offset)
            rule_times.append(time.perf_counter() - t1)
        strings = self._con.execute("SELECT s FROM psl_dict ORDER BY id").fetchnumpy()["s"]
        strings = np.concatenate([np.array([None], dtype=object), np.asarray(strings, dtype=object)])  # ids from 1
        parts = []
        fixed_vars, fixed_vals = [], []
        for p in self._preds.values():
            if p.closed:
                continue
            r = self._con.execute(f"SELECT * FROM {p.table} ORDER BY var").fetchnumpy()
            var = np.asarray(r["var"], np.int64)
            free = np.asarray(r["free"], bool)
            vals = np.asarray(r["value"], float)
            arg_ids = [np.asarray(r[f"a{i}"], np.int64) for i in range(p.arity)]
            parts.append((p.name, arg_ids, var, free, vals))
            fixed_vars.append(var[~free])
            fixed_vals.append(vals[~free])
        if fixed_vars and np.concatenate(fixed_vars).size:
            hl.fix(np.concatenate(fixed_vars), np.concatenate(fixed_vals))
        offset = float(sum(r.weight * o for r, o in zip(self._rules, rule_offsets) if not r.hard))
        self._ground = GroundModel(
            hl,
            tuple(counts),
            offset,
            time.perf_counter() - t0,
            load_time,
            tuple(rule_times),
            _atom_parts=(strings, tuple(parts), used),
            n_infeasible_dropped=n_dropped,
            rule_offsets=tuple(rule_offsets),
        )
        return self._ground

    def ground_shards(self, directory, n_shards: int, *, chunk_size: int | None = None):
        """Ground every rule into a shard set, never holding the whole ground program in this process.

        Each rule is grounded in DuckDB in chunks of about ``chunk_size`` groundings (the rows of one
        of its atoms split by a hash of one argument), and every chunk's ground rules go straight
        into the files of ``n_shards`` shards (observed atoms folded into the constants, each ground
        rule in the shard of a hash of its smallest free atom). This process keeps vectors over the
        atoms and one chunk; the workers of :func:`tractable.distributed.solve` build each block from
        its shard. The ground rules are those of :meth:`ground` (in another order). See
        :mod:`tractable.psl.shards`.

        Parameters
        ----------
        directory : str or os.PathLike
            The shard set's folder: new, empty, or an earlier shard set (replaced). It must be readable
            by the workers (a shared file system on a cluster). Written whole or not at all.
        n_shards : int
            Number of shards: the blocks of the distributed run (typically one per worker).
        chunk_size : int, optional
            Groundings per chunk (default :data:`tractable.psl.shards.CHUNK_SIZE`, 2^18): the largest
            query result and arrays held at once.

        Returns
        -------
        ShardedGroundModel
            ``shards`` (:class:`~tractable.distributed.HLMRFShards` over the shard folders), per-rule
            counts, offsets and times, ``rule_chunks``, ``shard_terms`` and the ``atoms`` table.

        Raises
        ------
        ValueError
            As :meth:`ground`; a ``directory`` that is a file or a folder of other files; a
            non-positive ``n_shards`` or ``chunk_size``.
        """
        from .shards import CHUNK_SIZE, ground_shards

        return ground_shards(self, directory, n_shards, chunk_size=CHUNK_SIZE if chunk_size is None else chunk_size)

    # ------------------------------------------------------------------ inference
    def infer(
        self, *, client=None, shards: bool | int | None = None, shard_dir=None, **solve_options
    ) -> tuple[dict, MPEResult]:
        """Ground (if needed) and find the MPE assignment of the targets.

        Parameters
        ----------
        client : dask.distributed.Client, optional
            Solve on this Dask cluster: consensus ADMM with the ground program's terms split into one
            block per worker (:func:`tractable.distributed.solve`), the same certified answer as in one
            process. ``solve_options`` are then :func:`tractable.distributed.solve`'s.
        shards : bool or int, optional
            With a ``client``: ground into shards (:meth:`ground_shards`), so that neither this process
            nor any worker holds the whole ground program, the workers build their blocks from the
            shard files and add up the consensus among themselves. ``True``: one shard per worker; an
            int: that many shards; ``False``: ground here and split (:meth:`ground`); ``None``
            (default): shards when the program has at least
            :data:`tractable.psl.shards.SHARD_THRESHOLD` groundings (counted in DuckDB first) and was
            not grounded here already. Without a ``client`` it must be None or False.
        shard_dir : str or os.PathLike, optional
            Where the shard set is written (:meth:`ground_shards`'s ``directory``; kept after the run).
            Default: a temporary folder, removed after the run (on this machine: fine for a
            ``LocalCluster``; a cluster of other machines needs a shared folder).
        **solve_options
            Passed to :func:`tractable.hlmrf.solve` (``method``, ``eps_abs``, ``max_iter``...), over
            :attr:`solve_options` (which apply to ADMM only: ``method="clarabel"`` or ``"highs"`` solves
            exactly without them). Where neither sets ``rho``, ADMM's step size starts at the solver's
            default times the mean weight of the ground potentials (inference as fast at any scale of the
            weights; see docs/psl.md).

        Returns
        -------
        predictions : dict
            Open predicate name -> pandas DataFrame with one column per argument (named 0, 1, ...) and
            ``value``, one row per target atom (targets in no ground rule keep the value 0).
        result : MPEResult
            The solver's result over all HL-MRF variables.
        """
        import pandas as pd

        if client is None:
            check_solve_options(solve_options, "`infer`")
        method, opts = self._solve_opts(solve_options)
        if shards is not None and not isinstance(shards, (bool, int, np.integer)):
            raise TypeError(f"`shards` must be None, a bool or a number of shards; got {type(shards).__name__}.")
        if client is None and shards not in (None, False):
            raise ValueError(f"`shards`={shards!r} needs a `client` (the shards are solved on a Dask cluster).")
        if client is not None:
            if method != "admm":
                raise ValueError(f"`client` runs consensus ADMM on the cluster; `method`={method!r} does not apply.")
            sharded = self._infer_sharded(client, shards, shard_dir, opts)
            if sharded is not None:
                return sharded
        columns, res = self._solve_columns(method, opts, client)
        out = {name: pd.DataFrame(cols) for name, cols in columns.items()}
        self._predictions = {name: df.copy() for name, df in out.items()}  # the caller may change its frames
        return out, res

    def _scaled_step(self, opts: dict, rule_counts) -> dict:
        """ADMM's options with the step size of :func:`_weight_scaled_rho` where neither the caller, the program
        nor a warm start sets one."""
        if opts.get("rho") is not None or opts.get("warm_start") is not None:
            return opts
        rho = _weight_scaled_rho(self._rules, rule_counts)
        return opts if rho is None else {**opts, "rho": rho}

    def _solve_opts(self, solve_options: dict) -> tuple[str, dict]:
        """The method and the solver's options of :meth:`infer`'s ``solve_options`` (which it consumes)."""
        method = solve_options.pop("method", "admm")
        # the configuration's options are ADMM's (admmreasoner.*): the exact reference solvers take none
        return method, {**(ADMM_DEFAULTS | self.solve_options if method == "admm" else {}), **solve_options}

    def _solve_columns(self, method: str, opts: dict, client=None) -> tuple[dict, MPEResult]:
        """Ground (if needed) and solve here (or on ``client``, from :meth:`ground`): the predictions as columns,
        open predicate name -> ``{0: arguments, ..., "value": values}`` (the columns of :meth:`infer`'s frames)."""
        g = self.ground()
        if method == "admm":
            opts = self._scaled_step(opts, g.rule_counts)
        if client is not None:
            if method != "admm":
                raise ValueError(f"`client` runs consensus ADMM on the cluster; `method`={method!r} does not apply.")
            from ..distributed import solve as distributed_solve

            res = distributed_solve(g.hlmrf, client, **opts)
        else:
            res = solve(g.hlmrf, method=method, **opts)
        x = np.asarray(res.x)
        strings, parts, used = g._atom_parts
        out = {}
        for name, arg_ids, var, free, _ in parts:
            # targets only (observed atoms of open predicates are inputs), in variable order
            cols = {i: strings[ids[free]] for i, ids in enumerate(arg_ids)}
            v = var[free]
            cols["value"] = np.clip(np.where(used[v], x[v], 0.0), 0.0, 1.0)
            out[name] = cols
        return out, res

    def _infer_columns(self, **solve_options) -> tuple[dict, MPEResult]:
        """:meth:`infer` in this process, its predictions as columns (see :meth:`_solve_columns`), not data frames:
        the command line writes and evaluates them without importing pandas (:meth:`_evaluate_columns`)."""
        method, opts = self._solve_opts(solve_options)
        return self._solve_columns(method, opts)

    def _infer_sharded(self, client, shards, shard_dir, opts):
        """``infer`` through a shard set (see its ``shards``), or None when the program is solved from
        :meth:`ground` instead."""
        import shutil
        import tempfile

        from ..distributed import check_client
        from ..distributed import solve as distributed_solve
        from .shards import CHUNK_SIZE, SHARD_THRESHOLD, ground_shards, predictions, total_groundings

        if shards is False or (shards is None and self._ground is not None):
            return None
        if not isinstance(shards, bool) and shards is not None and shards < 1:
            raise ValueError(f"`shards` must be a positive number of shards; got {shards!r}.")
        client = check_client(client)
        n_shards = len(client.scheduler_info()["workers"]) if shards is None or shards is True else int(shards)
        loaded = self._load()
        if shards is None and total_groundings(self) < SHARD_THRESHOLD:
            return None
        tmp = None
        if shard_dir is None:
            tmp = tempfile.mkdtemp(prefix="tractable-psl-shards-")
            shard_dir = os.path.join(tmp, "shards")
        try:
            g = ground_shards(self, shard_dir, n_shards, chunk_size=CHUNK_SIZE, loaded=loaded)
            res = distributed_solve(g.shards, client, **self._scaled_step(opts, g.rule_counts))
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
        out = predictions(g._atom_parts, np.asarray(res.x))
        self._predictions = {name: df.copy() for name, df in out.items()}  # the caller may change its frames
        self._sharded_ground = g
        return out, res

    @property
    def sharded_ground(self):
        """The :class:`~tractable.psl.shards.ShardedGroundModel` of the last :meth:`infer` that grounded into
        shards (its counts, times and atom table; its files are gone unless ``shard_dir`` kept them), or None."""
        return getattr(self, "_sharded_ground", None)

    def evaluate(self, predictions: dict | None = None) -> dict:
        """Compare inferred values with the ``truth`` partition.

        Parameters
        ----------
        predictions : dict, optional
            As returned by :meth:`infer`; default the last inference (run now if there was none).

        Returns
        -------
        dict
            Predicate name -> metric name -> value, for every open predicate with truth data (see
            :func:`tractable.psl.evaluation.evaluate_predicate` for the metrics).

        Raises
        ------
        ValueError
            A key of ``predictions`` that is not an open predicate (names in any case), a frame without the
            argument or ``value`` columns or with values outside [0, 1].
        TypeError
            ``predictions`` not a dict of pandas DataFrames.
        """
        import pandas as pd

        from .evaluation import evaluate_predicate

        if predictions is None:
            predictions = self._predictions if self._predictions is not None else self.infer()[0]
        if not isinstance(predictions, dict):
            raise TypeError(f"`predictions` must be a dict as returned by infer(); got {type(predictions).__name__}.")
        open_names = {p.name.lower(): p.name for p in self._preds.values() if not p.closed}
        given = {}
        for key, frame in predictions.items():
            name = open_names.get(key.lower()) if isinstance(key, str) else None
            if name is None:
                raise ValueError(
                    f"`predictions` has the key {short_repr(key)}; its keys are open predicates of the model: "
                    f"{', '.join(open_names.values()) or 'none'}."
                )
            if not isinstance(frame, pd.DataFrame):
                raise TypeError(f"`predictions[{key!r}]` must be a pandas DataFrame; got {type(frame).__name__}.")
            given[name] = frame
        predictions = given
        if self._ground is None and self.sharded_ground is None:  # a sharded run loaded the truth already
            self.ground()
        out = {}
        for p in self._preds.values():
            if p.closed or p.name not in predictions or not self._data.get((p.name.lower(), "truth")):
                continue
            truth = self._con.execute(f"SELECT * FROM {p.table}_truth").df()
            truth.columns = [*range(p.arity), "value"]
            specs = self.evaluators.get(p.key)
            pred = predictions[p.name]
            if any(
                isinstance(e, dict) and _truthy((e.get("options") or {}).get("eval.includeobs")) for e in specs or []
            ):
                # PSL's eval.includeobs: observed atoms of the predicate count as predictions
                obs = self._con.execute(f"SELECT * FROM {p.table}_observations").df()
                obs.columns = [*range(p.arity), "value"]
                pred = pd.concat([pred, obs], ignore_index=True)
            out[p.name] = evaluate_predicate(pred, truth, p.arity, specs, predicate=p.name)
        return out

    def _evaluate_columns(self, columns: dict) -> dict:
        """:meth:`evaluate` of :meth:`_infer_columns`' predictions: the same metrics, computed without pandas
        where the atoms allow (else, and with ``eval.includeobs``, by :meth:`evaluate` on data frames)."""
        from .evaluation import _evaluate_columns

        if self._ground is None and self.sharded_ground is None:
            self.ground()
        out = {}
        for p in self._preds.values():
            if p.closed or p.name not in columns or not self._data.get((p.name.lower(), "truth")):
                continue
            specs = self.evaluators.get(p.key)
            pred = columns[p.name]
            if any(
                isinstance(e, dict) and _truthy((e.get("options") or {}).get("eval.includeobs")) for e in specs or []
            ):
                # PSL's eval.includeobs: observed atoms of the predicate count as predictions (after the targets)
                obs = list(self._con.execute(f"SELECT * FROM {p.table}_observations").fetchnumpy().values())
                if any(isinstance(c, np.ma.MaskedArray) for c in obs) or len(pred) != len(obs):
                    pred = None
                else:
                    keys = [*range(p.arity), "value"]
                    pred = {k: np.concatenate([np.asarray(pred[k]), np.asarray(c)]) for k, c in zip(keys, obs)}
            metrics = None
            if pred is not None:
                truth = list(self._con.execute(f"SELECT * FROM {p.table}_truth").fetchnumpy().values())
                metrics = _evaluate_columns(pred, truth, p.arity, specs, predicate=p.name)
            if metrics is None:
                import pandas as pd

                return self.evaluate({name: pd.DataFrame(cols) for name, cols in columns.items()})
            out[p.name] = metrics
        return out

    # ------------------------------------------------------------------ weight learning
    def learn(self, *, method: str = "StructuredPerceptron", **options):
        """Learn the weights of the weighted rules from the ``truth`` partition, and set them.

        The model (typically ``Model.from_json(path, split="learn")``) is grounded once; every inference
        inside learning warm-starts from the previous one. The learned weights replace the rules' weights
        (:meth:`set_weights`), so that a following :meth:`infer` uses them; pass ``result.weights`` (or
        the result) to :meth:`set_weights` of a model of the infer split.

        Parameters
        ----------
        method : str, default "StructuredPerceptron"
            A PSL learner's class name (:data:`tractable.psl.LEARNERS`): ``"StructuredPerceptron"``,
            ``"Energy"``, ``"SquaredError"``, ``"BinaryCrossEntropy"`` (PSL 2.4), ``"MaxLikelihoodMPE"``
            (PSL 2.3), ``"MaxPseudoLikelihood"`` (PSL 2.2), ``"FrankWolfe"`` (PSL 2.1's max-margin
            learner), or PSL 2.4's search learners ``"GridSearch"``,
            ``"RandomGridSearch"``, ``"GuidedRandomGridSearch"``, ``"ContinuousRandomGridSearch"``,
            ``"Hyperband"``, ``"GaussianProcessPrior"`` (:mod:`tractable.psl.search`: candidates scored by MAP
            inference and the learning evaluator, ``evaluator`` / ``weightlearning.evaluator``, default the
            program's primary evaluation); a fully qualified Java class name works too.
        **options
            The learner's options, as PSL's option names (``**{"gradientdescent.numsteps": 100}``) or as
            Python keywords (``max_iter=100``): see docs/psl.md. For every learner also
            ``initial_weights`` (default: the rules' weights), ``rng``, ``time_limit``, ``warm_start``
            (default True), ``progress`` (default False: a tqdm bar over the steps or candidates) and
            ``solve_options`` (a dict for :func:`tractable.hlmrf.solve`; default
            :attr:`solve_options`; ADMM's inferences inside learning stop at a certified relative gap of
            ``LEARNING_GAP_TOL`` = 5e-3 unless these set ``gap_tol``). The search learners also take
            ``n_jobs`` (threads, default 1; -1 every core) and ``client`` (a ``dask.distributed.Client``).
            An option the learner does not use is a ``ValueError``.

        Returns
        -------
        LearnResult

        Raises
        ------
        ValueError
            An unknown learner (the message lists the valid ones), an unknown or unused option, no truth
            data, truth for an atom that is not a target, negative or non-finite initial weights.
        """
        from .learning import learn

        if "solve_options" not in options:
            opts = dict(self.solve_options)
            if opts:
                options["solve_options"] = opts
        if "rng" not in options and self.learn_seed is not None:
            options["rng"] = self.learn_seed
        result = learn(self, method=method, **options)
        self.set_weights(result.weights)
        return result

    @property
    def weights(self) -> np.ndarray:
        """The weights of the weighted rules, in rule order (a copy)."""
        return np.array([r.weight for r in self._rules if not r.hard], dtype=float)

    def set_weights(self, weights) -> None:
        """Set the weights of the weighted rules (hard rules keep none).

        Parameters
        ----------
        weights : array_like of shape (n_weighted_rules,), or LearnResult
            One weight ``>= 0`` per weighted rule, in rule order. A :class:`~tractable.psl.LearnResult`
            must come from a model with the same weighted rules (compared without their weights).

        The rules' texts show the new weights. A model already grounded is not grounded again: its
        HL-MRF gets the new weights by one multiply (:meth:`~tractable.hlmrf.HLMRF.with_weights`, every
        potential knows its rule: :attr:`GroundModel.potential_rules`) and the offset from the rules'
        unweighted offsets.
        """
        from .learning import LearnResult, _check_weights, rule_body, rule_text_with_weight

        weighted = [i for i, r in enumerate(self._rules) if not r.hard]
        if isinstance(weights, LearnResult):
            ours = [rule_body(self._rules[i].text) for i in weighted]
            theirs = [rule_body(t) for t in weights.rules]
            if ours != theirs:
                diff = next((f"{a!r} vs {b!r}" for a, b in zip(ours, theirs) if a != b), f"{len(theirs)} rules")
                raise ValueError(
                    f"`weights`: the LearnResult was learned for other rules than this model's {len(ours)} weighted "
                    f"rules ({diff})."
                )
            weights = weights.weights
        w = _check_weights(weights, len(weighted), "weights")
        for i, wi in zip(weighted, w):
            r = self._rules[i]
            self._rules[i] = replace(r, weight=float(wi), text=rule_text_with_weight(r.text, wi))
        g = self._ground
        self._changed()
        if g is not None:  # a multiply, not a regrounding
            per_rule = np.array([r.weight for r in self._rules], dtype=float)
            self._ground = replace(
                g,
                hlmrf=g.hlmrf.with_weights(per_rule[g.potential_rules]),
                rule_counts=tuple((r.text, c[1], c[2]) for r, c in zip(self._rules, g.rule_counts)),
                offset=float(sum(r.weight * o for r, o in zip(self._rules, g.rule_offsets) if not r.hard)),
            )

    # ------------------------------------------------------------------ files
    @classmethod
    def from_json(
        cls, path, *, split: str = "infer", database=None, strict: bool = False, missing_atoms: str | None = None
    ) -> Model:
        """Build a model from a PSL 2.4 JSON configuration (see :mod:`tractable.psl.config`)."""
        from .config import model_from_json

        return model_from_json(cls, path, split=split, database=database, strict=strict, missing_atoms=missing_atoms)

    @classmethod
    def from_data_file(
        cls, psl_path, data_path, *, database=None, strict: bool = False, missing_atoms: str = "error"
    ) -> Model:
        """Build a model from PSL 2.0-2.3 CLI files: a ``.psl`` rule file and a ``.data`` file."""
        from .config import model_from_data_file

        return model_from_data_file(
            cls, psl_path, data_path, database=database, strict=strict, missing_atoms=missing_atoms
        )

    def close(self) -> None:
        """Close the DuckDB connection (again: nothing). What needs it afterwards (grounding, learning,
        evaluating against the truth) is a ``ValueError``; a model grounded before still infers."""
        self._con.close()
        self._con = _ClosedConnection()

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Model(predicates={len(self._preds)}, rules={len(self._rules)}, database={self.database!r})"
