"""Grounding a PSL program into shards, without the whole ground program in one process.

:meth:`tractable.psl.Model.ground_shards` grounds rule by rule in DuckDB, as :meth:`Model.ground` does,
but each rule in *chunks*: the rows of one of its atoms are split by a hash of one argument
(``hash(a_i) % K = c`` on a view of the atom's table), so chunk ``c`` grounds exactly the groundings
whose binding of that argument falls in hash class ``c``. Every chunk's ground rules go straight into
the files of a shard set (:mod:`tractable.distributed._shardfiles`): fixed atoms folded into the
constants, each ground rule appended to the shard of a hash of its smallest free atom. The process
keeps only vectors over the atoms (fixed values, the atom table, which atoms some rule uses) and one
chunk; the workers of :func:`tractable.distributed.solve` then build each block from its shard.

**Which atom splits a rule.** A query atom (for a logical rule: a positive body literal or a negated
head literal; for an arithmetic rule: any atom) whose predicate appears nowhere else in the rule
(filters included), split on an argument that is a variable (for an arithmetic rule with summations:
not a summation variable, so that a binding's summed atoms all fall in its chunk). The view replaces
that predicate's table for this rule only, so lookups of other atoms and the merging of repeated atoms
(which compares tables) are those of :meth:`Model.ground`. Of the candidates, the argument with the most
distinct values is taken (balanced chunks). A rule without a candidate, or with at most ``chunk_size``
groundings, is grounded in one piece.

The ground program is the one of :meth:`Model.ground` (the same ground rules, in another order), so
the optimum and the certified gap are the same.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from .grounding import Predicate, _logical_sql, _Query, _split_logical, ground_rule
from .parser import ArithmeticRule, SumVariable, Variable

__all__ = ["CHUNK_SIZE", "SHARD_THRESHOLD", "ShardedGroundModel", "count_groundings", "ground_shards"]

#: groundings per chunk by default (one chunk's query result and arrays are what the process holds)
CHUNK_SIZE = 1 << 18
#: ``Model.infer(client=...)`` grounds into shards from this many groundings on (``shards=None``)
SHARD_THRESHOLD = 1_000_000
_VIEW = "psl_shard_chunk"


@dataclass(frozen=True)
class ShardedGroundModel:
    """A PSL program grounded into a shard set (:meth:`tractable.psl.Model.ground_shards`).

    Attributes
    ----------
    shards : tractable.distributed.HLMRFShards
        One source per shard folder: ``tractable.distributed.solve(shards, client)`` builds each block
        on its worker.
    directory : str
        The shard set's folder.
    n_variables, n_free : int
        HL-MRF variables (atoms of open predicates) and the free ones among them (targets).
    rule_counts : tuple of (str, int, int)
        Per rule: its text, ground potentials and ground constraints (as :class:`GroundModel`).
    offset, rule_offsets, n_infeasible_dropped, time, load_time, rule_times
        As in :class:`~tractable.psl.model.GroundModel`.
    rule_chunks : tuple of int
        Chunks each rule was grounded in.
    rule_groundings : tuple of int
        Rows of each rule's grounding query (counted in DuckDB before grounding).
    shard_terms : tuple of int
        Ground rules in each shard.
    atoms : pandas.DataFrame
        As in :class:`GroundModel` (built on first access).
    """

    shards: object
    directory: str
    n_variables: int
    n_free: int
    rule_counts: tuple
    offset: float
    time: float
    load_time: float
    rule_times: tuple
    n_infeasible_dropped: int
    rule_offsets: tuple
    rule_chunks: tuple
    rule_groundings: tuple
    shard_terms: tuple
    _atom_parts: tuple = field(default=((), (), None), repr=False, compare=False)

    @property
    def n_potentials(self) -> int:
        return sum(c[1] for c in self.rule_counts)

    @property
    def n_constraints(self) -> int:
        return sum(c[2] for c in self.rule_counts)

    @cached_property
    def atoms(self):
        return atoms_frame(self._atom_parts)


def atoms_frame(atom_parts):
    """The atom table of a ground program (``GroundModel.atoms``) from its per-atom arrays."""
    import pandas as pd

    strings, parts, used = atom_parts
    frames = []
    for name, arg_ids, var, free, vals in parts:
        args = list(zip(*(strings[ids].tolist() for ids in arg_ids)))
        frames.append(
            pd.DataFrame(
                {
                    "predicate": name,
                    "arguments": pd.Series(args, dtype=object),
                    "variable": var,
                    "fixed_value": np.where(free, np.nan, vals),
                    "in_rules": used[var],
                }
            )
        )
    cols = ["predicate", "arguments", "variable", "fixed_value", "in_rules"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)


def _check_count(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"`{name}` must be a positive integer; got {value!r}.")
    return int(value)


# ---------------------------------------------------------------------------------------------- planning
def count_groundings(con, rule, preds: dict) -> int:
    """Rows of ``rule``'s grounding query (before trivial ground rules are dropped), counted in DuckDB.

    For a logical rule the join of its query atoms under its comparisons; for an arithmetic rule the
    join of all its atoms (an upper bound of the bindings of a rule with summations).
    """
    if isinstance(rule, ArithmeticRule):
        q = _Query(preds, rule.text)
        for k, (_, a) in enumerate(rule.terms):
            q.add(a, f"t{k}")
        sql = q.sql(["1 AS one"])
    else:
        query, _, filters = _split_logical(rule)
        sql = _logical_sql(rule, preds, query, [], filters)
    return int(con.execute(f"SELECT count(*) FROM ({sql})").fetchone()[0])


def _candidates(rule, preds: dict) -> list[tuple[str, int]]:
    """``(predicate key, argument)`` pairs that may split ``rule`` into chunks (module docstring)."""
    atoms = rule.atoms()
    every = list(atoms)
    if isinstance(rule, ArithmeticRule):
        every += rule.filter_atoms()
        query = atoms
    else:
        query = _split_logical(rule)[0]
    seen: dict[str, int] = {}
    for a in every:
        key = a.predicate.lower()
        seen[key] = seen.get(key, 0) + 1
    out = []
    for a in query:
        key = a.predicate.lower()
        if seen[key] != 1:
            continue
        for i, t in enumerate(a.args):
            if isinstance(t, Variable) and not isinstance(t, SumVariable):
                out.append((key, i))
    return out


def _plan(con, rule, preds: dict, chunk_size: int):
    """``(n_chunks, predicate key, argument, groundings)`` of one rule."""
    n_rows = count_groundings(con, rule, preds)
    k = max(1, math.ceil(n_rows / chunk_size))
    cands = _candidates(rule, preds) if k > 1 else []
    if not cands:
        return 1, None, None, n_rows
    best, best_n = None, -1
    for key, i in cands:
        table = resolve_table(preds, key)
        n = con.execute(f"SELECT approx_count_distinct(a{i}) FROM {table}").fetchone()[0] or 0
        if n > best_n:
            best, best_n = (key, i), n
    return min(k, max(best_n, 1)), best[0], best[1], n_rows


def resolve_table(preds: dict, key: str) -> str:
    return preds[key].table


def _chunk_preds(con, preds: dict, key: str, col: int, n_chunks: int, c: int) -> dict:
    """``preds`` with ``key``'s table replaced by the view of chunk ``c`` of ``n_chunks``."""
    p = preds[key]
    con.execute(f"CREATE OR REPLACE TEMP VIEW {_VIEW} AS SELECT * FROM {p.table} WHERE hash(a{col}) % {n_chunks} = {c}")
    out = dict(preds)
    out[key] = Predicate(p.name, p.arity, p.closed, _VIEW)
    return out


# ---------------------------------------------------------------------------------------------- grounding
def _atom_vectors(model, n: int):
    """Fixed mask and values over the variables, and the atom table's parts (as ``Model.ground`` keeps)."""
    con = model._con
    strings = con.execute("SELECT s FROM psl_dict ORDER BY id").fetchnumpy()["s"]
    strings = np.concatenate([np.array([None], dtype=object), np.asarray(strings, dtype=object)])  # ids from 1
    fixed = np.zeros(n, bool)
    values = np.zeros(n)
    parts = []
    for p in model._preds.values():
        if p.closed:
            continue
        r = con.execute(f"SELECT * FROM {p.table} ORDER BY var").fetchnumpy()
        var = np.asarray(r["var"], np.int64)
        free = np.asarray(r["free"], bool)
        vals = np.asarray(r["value"], float)
        arg_ids = [np.asarray(r[f"a{i}"], np.int64) for i in range(p.arity)]
        parts.append((p.name, arg_ids, var, free, vals))
        fixed[var[~free]] = True
        values[var[~free]] = vals[~free]
    return fixed, values, strings, parts


def ground_shards(model, directory, n_shards: int, *, chunk_size: int = CHUNK_SIZE, loaded: int | None = None):
    """Ground ``model`` (a :class:`~tractable.psl.Model`) into a shard set; see :meth:`Model.ground_shards`.

    ``loaded``: the number of variables when the atom tables were just built (``Model._load``), so
    that the data are not read again.
    """
    from ..distributed import HLMRFShards
    from ..distributed._shardfiles import ShardSetWriter, kinds_of

    n_shards = _check_count(n_shards, "n_shards")
    chunk_size = _check_count(chunk_size, "chunk_size")
    if not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"`directory` must be a folder path; got {type(directory).__name__}.")
    t0 = time.perf_counter()
    n = model._load() if loaded is None else loaded
    load_time = time.perf_counter() - t0
    if n == 0:
        raise ValueError("the model has no atoms of open predicates (no `targets`): nothing to infer.")
    con, preds = model._con, model._preds
    fixed, values, strings, parts = _atom_vectors(model, n)
    counts, rule_offsets, rule_times, rule_chunks, rule_rows = [], [], [], [], []
    n_dropped = 0
    with ShardSetWriter(directory, n_shards, fixed, values) as writer:
        try:
            for rule in model._rules:
                t1 = time.perf_counter()
                unit = rule if rule.hard else replace(rule, weight=1.0)  # offsets per unit of weight
                n_chunks, key, col, n_rows = _plan(con, unit, preds, chunk_size)
                n_pot = n_con = 0
                rule_offset = 0.0
                missing, missing_example, infeasible, infeasible_example = 0, "", 0, ""
                for c in range(n_chunks):
                    chunk_preds = preds if n_chunks == 1 else _chunk_preds(con, preds, key, col, n_chunks, c)
                    for block in ground_rule(
                        con, unit, chunk_preds, n, strict=model.strict, missing_atoms=model.missing_atoms
                    ):
                        rule_offset += block.offset
                        missing += block.n_missing
                        missing_example = missing_example or block.missing_example
                        infeasible += block.n_infeasible
                        infeasible_example = infeasible_example or block.infeasible_example
                        m = block.constants.size
                        if m == 0:
                            continue
                        senses = np.asarray(block.senses)
                        if rule.hard:
                            flip = senses == ">="  # never produced by the grounding today; kept exact anyway
                            if flip.any():
                                raise ValueError(f"PSL rule {rule.text!r}: unexpected '>=' ground constraint.")
                            writer.add(
                                block.indptr,
                                block.variables,
                                block.coefficients,
                                block.constants,
                                0.0,
                                kinds_of(False, True, senses),
                            )
                            n_con += m
                        else:
                            writer.add(
                                block.indptr,
                                block.variables,
                                block.coefficients,
                                block.constants,
                                rule.weight,
                                kinds_of(rule.squared, False, senses),
                            )
                            n_pot += m
                        del block
                _warn(rule, model.missing_atoms, missing, missing_example, infeasible, infeasible_example)
                n_dropped += infeasible
                counts.append((rule.text, n_pot, n_con))
                rule_offsets.append(0.0 if rule.hard else rule_offset)
                rule_times.append(time.perf_counter() - t1)
                rule_chunks.append(n_chunks)
                rule_rows.append(n_rows)
        finally:
            con.execute(f"DROP VIEW IF EXISTS {_VIEW}")
        paths = writer.close(extra={"rules": [c[0] for c in counts], "rule_counts": [list(c[1:]) for c in counts]})
        used = writer.used
        shard_terms = tuple(sum(st[f"n_{g}"] for g in ("pair", "single", "general")) for st in writer.stats)
    offset = float(sum(r.weight * o for r, o in zip(model._rules, rule_offsets) if not r.hard))
    return ShardedGroundModel(
        shards=HLMRFShards(paths),
        directory=os.path.abspath(os.fspath(directory)),
        n_variables=n,
        n_free=int(np.count_nonzero(~fixed)),
        rule_counts=tuple(counts),
        offset=offset,
        time=time.perf_counter() - t0,
        load_time=load_time,
        rule_times=tuple(rule_times),
        n_infeasible_dropped=n_dropped,
        rule_offsets=tuple(rule_offsets),
        rule_chunks=tuple(rule_chunks),
        rule_groundings=tuple(rule_rows),
        shard_terms=shard_terms,
        _atom_parts=(strings, tuple(parts), used),
    )


def _warn(rule, missing_atoms, missing, missing_example, infeasible, infeasible_example) -> None:
    """The warnings of :meth:`Model.ground`, once per rule over all its chunks."""
    if missing and missing_atoms == "drop":
        warnings.warn(
            f"PSL rule {rule.text!r}: dropped {missing} ground rule(s) that use an atom of an open "
            f"predicate that is neither observed nor a target, e.g. {missing_example} "
            "(missing_atoms='drop', PSL's pam.throw = false).",
            UserWarning,
            stacklevel=4,
        )
    if infeasible:
        warnings.warn(
            f"PSL rule {rule.text!r}: dropped {infeasible} ground rule(s) without open atoms "
            f"that the observed values alone violate, as PSL does (strict=True makes this an error); "
            f"e.g. {infeasible_example}.",
            UserWarning,
            stacklevel=4,
        )


def predictions(atom_parts, x) -> dict:
    """Per open predicate, the targets' arguments and values (``Model.infer``'s first return value)."""
    import pandas as pd

    strings, parts, used = atom_parts
    out = {}
    for name, arg_ids, var, free, _ in parts:
        cols = {i: strings[ids[free]] for i, ids in enumerate(arg_ids)}
        v = var[free]
        cols["value"] = np.clip(np.where(used[v], x[v], 0.0), 0.0, 1.0)
        out[name] = pd.DataFrame(cols)
    return out


def total_groundings(model) -> int:
    """Rows of all rules' grounding queries (the atom tables must be loaded)."""
    return sum(count_groundings(model._con, r, model._preds) for r in model._rules)
