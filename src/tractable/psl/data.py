"""PSL data files and data frames -> DuckDB tables of ground atoms.

A PSL data file is tab-separated: one ground atom per line, its arguments, then optionally its truth
value (default 1.0). Files are read by DuckDB's CSV reader one whole line at a time (so that no line
is skipped or re-interpreted by dialect sniffing) and split in SQL; a malformed line (a wrong number
of fields, a value that is not a number in [0, 1]) is then looked up in the file in Python to report
its line number. Blank lines are skipped. Every source becomes a DuckDB relation with the VARCHAR
columns ``a0 .. a{k-1}`` and the DOUBLE column ``value``.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["load_source"]


def _sql_string(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def load_source(con, source, arity: int, table: str, what: str) -> int:
    """Create the table ``table`` (``a0..a{arity-1}`` VARCHAR, ``value`` DOUBLE) from one data source.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    source : str, os.PathLike or pandas.DataFrame
        A tab-separated file, or a data frame whose first ``arity`` columns are the arguments and an
        optional last column the values.
    arity : int
    table : str
        Name of the table to create (a trusted identifier).
    what : str
        Description for error messages, e.g. ``"observations of Friends/2"``.

    Returns
    -------
    int
        Number of atoms read.
    """
    import pandas as pd

    cols = ", ".join(f"a{i}" for i in range(arity))
    if isinstance(source, pd.DataFrame):
        df = source
        if df.shape[1] not in (arity, arity + 1):
            raise ValueError(
                f"`data` for the {what} must have {arity} argument columns and optionally a value column; "
                f"got {df.shape[1]} columns."
            )
        args = df.iloc[:, :arity]
        if args.isna().any().any():
            row = int(np.flatnonzero(args.isna().any(axis=1).to_numpy())[0])
            raise ValueError(f"`data` for the {what} has a missing argument in row {row}.")
        frame = pd.DataFrame({f"a{i}": args.iloc[:, i].astype(str).to_numpy() for i in range(arity)})
        if df.shape[1] == arity + 1:
            vals = pd.to_numeric(df.iloc[:, arity], errors="coerce").to_numpy(dtype=float)
            bad = ~np.isfinite(vals) | (vals < 0) | (vals > 1)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"`data` for the {what}: row {row} has the value {df.iloc[row, arity]!r}; "
                    "values must be numbers in [0, 1]."
                )
            frame["value"] = vals
        else:
            frame["value"] = 1.0
        con.register(f"{table}_df", frame)
        con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT {cols}, value FROM {table}_df")
        con.unregister(f"{table}_df")
        return len(frame)

    path = os.fspath(source)
    if not os.path.isfile(path):
        raise OSError(f"data file for the {what} not found: {path}")
    lines = (
        f"SELECT rtrim(line, chr(13)) AS line FROM read_csv({_sql_string(path)}, delim=chr(1), "
        "columns={'line': 'VARCHAR'}, header=false, quote='', escape='', auto_detect=false, strict_mode=false) "
        "WHERE line IS NOT NULL AND trim(rtrim(line, chr(13))) <> ''"
    )
    split = f"SELECT string_split(line, chr(9)) AS f FROM ({lines})"
    parsed = f"{table}_parsed"
    fields = ", ".join(f"f[{i + 1}] AS a{i}" for i in range(arity))
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {parsed} AS SELECT {fields}, len(f) AS nf, "
        f"try_cast(f[{arity + 1}] AS DOUBLE) AS v FROM ({split})"
    )
    try:
        empty = " ".join(f"OR trim(coalesce(a{i}, '')) = '' " for i in range(arity))
        bad = con.execute(
            f"SELECT count(*) FROM {parsed} WHERE nf NOT IN ({arity}, {arity + 1}) {empty}"
            f"OR (nf = {arity + 1} AND (v IS NULL OR NOT isfinite(v) OR v NOT BETWEEN 0 AND 1))"
        ).fetchone()[0]
        if bad:
            _report_bad_line(path, arity, what)
        cols = ", ".join(f"a{i}" for i in range(arity))
        con.execute(
            f"CREATE OR REPLACE TABLE {table} AS SELECT {cols}, "
            f"CASE WHEN nf = {arity + 1} THEN v ELSE 1.0 END AS value FROM {parsed}"
        )
    finally:
        con.execute(f"DROP TABLE IF EXISTS {parsed}")
    return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def _report_bad_line(path: str, arity: int, what: str) -> None:
    """Find the first malformed line of ``path`` and raise a ValueError naming the file and the line."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, raw in enumerate(fh, start=1):
            line = raw.rstrip("\n").rstrip("\r")
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) not in (arity, arity + 1):
                raise ValueError(
                    f"{path}, line {number}: expected {arity} tab-separated arguments and optionally a value "
                    f"for the {what}; got {len(fields)} fields: {line[:80]!r}."
                )
            if any(not f.strip() for f in fields[:arity]):
                raise ValueError(f"{path}, line {number}: an empty argument in the {what}: {line[:80]!r}.")
            if len(fields) == arity + 1:
                try:
                    v = float(fields[-1])
                except ValueError:
                    v = float("nan")
                if not (0.0 <= v <= 1.0):
                    raise ValueError(
                        f"{path}, line {number}: the value {fields[-1]!r} of an atom in the {what} must be a "
                        "number in [0, 1]."
                    )
    raise ValueError(f"{path}: a malformed line in the {what}.")  # pragma: no cover - SQL and Python agree
