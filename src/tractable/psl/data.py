"""PSL data files and data frames -> DuckDB tables of ground atoms.

A PSL data file is tab-separated: one ground atom per line, its arguments, then optionally its truth
value (default 1.0). Every source becomes a DuckDB relation with the VARCHAR columns ``a0 .. a{k-1}``
and the DOUBLE column ``value``.

**What a data file is.** Its path is a file name, never a pattern (DuckDB expands ``*``, ``?`` and
``[`` in the paths it reads, so such a path reaches DuckDB as a link in a private temporary folder).
Its bytes are UTF-8 (a byte-order mark at the start is dropped), gzip-compressed when they start with
gzip's magic bytes (a name ending in ``.gz`` on a file that is not gzip is an error, as is a truncated
or corrupt gzip stream). Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (as Java's ``readLine``,
which PSL reads with); every other byte is data (``0x00``, ``0x01``, quotes, ``#``, ...). A line holds
at most :data:`MAX_LINE_BYTES` bytes; blank lines (spaces only) are skipped. A malformed line (a wrong
number of fields, an empty argument, a value that is not a number in [0, 1]) is an error naming the
file, the line number and a short escaped excerpt of the line (at most :data:`EXCERPT_CHARS`
characters).

**How it is read.** The file is first scanned in Python at memory speed for the bytes DuckDB's CSV
reader would treat specially (``0x01``, a lone ``\\r``, mixed line ends); gzip is decompressed there
into a temporary file (which checks the stream's CRC and length). A clean file is then split into
lines by DuckDB's CSV reader in parallel, one whole line per row (strict mode: anything it does not
take falls back); any other file is read line by line in Python (slower, the same result). Lines are
split into fields and checked in SQL.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import tempfile
import zlib

import numpy as np

__all__ = ["EXCERPT_CHARS", "MAX_LINE_BYTES", "excerpt", "load_source", "short_repr"]

#: the longest line of a data file, in bytes (without its line end): DuckDB's default line limit
MAX_LINE_BYTES = 2 * 1024 * 1024
#: the most characters of a line quoted in an error message (an escaped ``repr`` excerpt)
EXCERPT_CHARS = 80

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_CHUNK = 1 << 22  # bytes per read of the scan
_BATCH = 1 << 16  # lines per insert of the Python reader
_GLOB = frozenset("*?[]{}")  # characters DuckDB's file system may read as a pattern


def _sql_string(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def excerpt(text, limit: int = EXCERPT_CHARS) -> str:
    """An escaped excerpt of ``text`` (str or bytes) for an error message: its ``repr``, cut so that the
    result has at most ``limit`` characters (``...`` after the closing quote marks a cut)."""
    r = repr(text[: limit + 1])
    if len(text) <= limit and len(r) <= limit:
        return r
    k = min(len(text), limit)
    while k > 0 and len(repr(text[:k])) + 3 > limit:
        k -= 1
    return repr(text[:k]) + "..."


def short_repr(value, limit: int = EXCERPT_CHARS) -> str:
    """``repr(value)`` for an error message, at most ``limit`` characters (strings and bytes as :func:`excerpt`)."""
    if isinstance(value, (str, bytes)):
        return excerpt(value, limit)
    try:
        r = repr(value)
    except ValueError:  # an int with more digits than Python converts
        r = f"<an {type(value).__name__} too long to print>"
    return r if len(r) <= limit else r[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------- reading
class _Scan:
    """Whether a byte stream fed chunk by chunk needs the Python line reader (DuckDB's CSV reader would
    cut a line at ``0x01``, its delimiter here, or take a lone ``\\r`` or mixed line ends differently)."""

    def __init__(self) -> None:
        self.special = False
        self._pending_cr = False
        self._lf = 0
        self._crlf = 0

    def feed(self, chunk: bytes) -> None:
        if self.special:
            return
        if b"\x01" in chunk or (self._pending_cr and not chunk.startswith(b"\n")):
            self.special = True
            return
        self._lf += chunk.count(b"\n")
        n_cr = chunk.count(b"\r")
        if n_cr or self._pending_cr:
            crlf = chunk.count(b"\r\n") + self._pending_cr
            ends = chunk.endswith(b"\r")
            if n_cr + self._pending_cr - ends != crlf:
                self.special = True  # a lone \r
            self._crlf += crlf
            self._pending_cr = ends
        if self._crlf and self._crlf != self._lf:
            self.special = True  # both \r\n and \n

    def finish(self) -> bool:
        if self._pending_cr:
            self.special = True
        return self.special


class _Workspace:
    """A private temporary folder, made on first use and removed by :meth:`close`."""

    def __init__(self) -> None:
        self.dir = None

    def path(self, name: str) -> str:
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix="tractable-psl-")
        return os.path.join(self.dir, name)

    def close(self) -> None:
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def _duckdb_safe(path: str) -> bool:
    """Whether DuckDB reads ``path`` as the file of that name (no pattern character, no URL, UTF-8)."""
    if _GLOB.intersection(path) or "://" in path or not path.isprintable():
        return False
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # a file name that is not UTF-8 (surrogate escapes)
        return False
    return True


def _alias(path: str, work: _Workspace) -> str:
    """A name DuckDB reads literally for the file ``path``: a link in a private folder (a copy where the
    file system has no links)."""
    target = work.path("data.txt")
    if not _duckdb_safe(target):
        raise OSError(f"the temporary folder {os.path.dirname(target)!r} has a name DuckDB reads as a pattern.")
    try:
        os.symlink(os.path.abspath(path), target)
    except OSError:
        shutil.copyfile(path, target)
    return target


def _gunzip(path: str, fh, scan: _Scan, work: _Workspace) -> str:
    """Decompress the gzip file ``path`` (open as ``fh``) into the workspace, feeding ``scan``."""
    out = work.path("data.txt")
    try:
        with gzip.GzipFile(fileobj=fh, mode="rb") as gz, open(out, "wb") as dst:
            while chunk := gz.read(_CHUNK):
                scan.feed(chunk)
                dst.write(chunk)
    except EOFError:
        raise ValueError(f"{path}: a truncated gzip file (the compressed stream ends early).") from None
    except zlib.error:
        raise ValueError(f"{path}: a corrupt gzip file (its compressed data cannot be decompressed).") from None
    except gzip.BadGzipFile as err:
        # never quote the bytes (the message of a bad member header does): name the check that failed
        why = str(err)
        if why.startswith("Not a gzipped file"):
            why = "bytes that are not gzip follow a gzip member"
        elif not why.startswith(("CRC check failed", "Incorrect length", "Unknown compression method")):
            why = "a corrupt gzip header"
        raise ValueError(f"{path}: a corrupt gzip file ({why}).") from None
    return out


def _python_lines(path: str):
    """The lines of the file ``path`` (bytes, line ends removed): ends at ``\\n``, ``\\r\\n``, lone ``\\r``."""
    with open(path, "rb") as fh:
        for raw in fh:
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if b"\r" in raw:
                yield from raw.split(b"\r")
            else:
                yield raw


def _load_lines_python(con, path: str, shown: str, table: str) -> None:
    """Create ``table(line VARCHAR)``, one row per line of ``path`` in order (blank lines included)."""
    import pandas as pd

    con.execute(f"CREATE OR REPLACE TEMP TABLE {table} (line VARCHAR)")
    batch: list[str] = []

    def flush() -> None:
        if batch:
            con.register(f"{table}_batch", pd.DataFrame({"line": batch}, dtype=object))
            con.execute(f"INSERT INTO {table} SELECT line FROM {table}_batch")
            con.unregister(f"{table}_batch")
            batch.clear()

    for number, raw in enumerate(_python_lines(path), start=1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if len(raw) > MAX_LINE_BYTES:
            raise ValueError(
                f"{shown}, line {number}: a line of {len(raw)} bytes; lines hold at most MAX_LINE_BYTES = "
                f"{MAX_LINE_BYTES} bytes: {excerpt(raw)}."
            )
        try:
            batch.append(raw.decode("utf-8"))
        except UnicodeDecodeError as err:
            raise ValueError(
                f"{shown}, line {number}: not UTF-8 text (byte {err.start + 1} of the line: {err.reason}): "
                f"{excerpt(raw)}."
            ) from None
        if len(batch) >= _BATCH:
            flush()
    flush()


def _duckdb_lines(path: str) -> str:
    """SQL reading the file ``path`` (a DuckDB-safe name) one whole line per row, blank lines as NULL."""
    return (
        f"SELECT line FROM read_csv({_sql_string(path)}, delim=chr(1), columns={{'line': 'VARCHAR'}}, "
        "header=false, quote='', escape='', comment='', auto_detect=false, strict_mode=true, "
        f"compression='none', encoding='utf-8', max_line_size={MAX_LINE_BYTES + 16})"
    )


def load_source(con, source, arity: int, table: str, what: str, *, append: bool = False) -> int:
    """Create the table ``table`` (``a0..a{arity-1}`` VARCHAR, ``value`` DOUBLE) from one data source, or
    insert the source's atoms into it (``append``).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    source : str, os.PathLike or pandas.DataFrame
        A tab-separated file (see the module docstring), or a data frame whose first ``arity`` columns
        are the arguments and an optional last column the values.
    arity : int
    table : str
        Name of the table to create (a trusted identifier).
    what : str
        Description for error messages, e.g. ``"observations of Friends/2"``.
    append : bool, default False
        Insert the atoms into the existing table ``table`` (of those columns) instead of creating it.
        Nothing is inserted when the source is malformed.

    Returns
    -------
    int
        Number of atoms read.

    Raises
    ------
    OSError
        The file does not exist, is not a file or cannot be read.
    ValueError
        A malformed line, bytes that are not UTF-8, a line over :data:`MAX_LINE_BYTES`, a file named
        ``.gz`` that is not gzip, a truncated or corrupt gzip file (each naming the file, and the line
        where there is one).
    """
    pd = sys.modules.get("pandas")  # a data frame exists only once pandas is imported: not imported for files
    cols = ", ".join(f"a{i}" for i in range(arity))
    if pd is not None and isinstance(source, pd.DataFrame):
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
                    f"`data` for the {what}: row {row} has the value {excerpt(str(df.iloc[row, arity]))}; "
                    "values must be numbers in [0, 1]."
                )
            frame["value"] = vals
        else:
            frame["value"] = 1.0
        con.register(f"{table}_df", frame)
        con.execute(f"{_into(table, append)} SELECT {cols}, value FROM {table}_df")
        con.unregister(f"{table}_df")
        return len(frame)

    path = os.fspath(source)
    if not os.path.exists(path):
        raise OSError(f"data file for the {what} not found: {path}")
    if not os.path.isfile(path):
        raise OSError(f"data file for the {what} is not a file: {path}")
    work = _Workspace()
    try:
        return _load_file(con, path, arity, table, what, work, append)
    finally:
        work.close()


def _into(table: str, append: bool) -> str:
    """The start of the statement that fills ``table`` from a ``SELECT``: inserting into it, or creating it."""
    return f"INSERT INTO {table}" if append else f"CREATE OR REPLACE TABLE {table} AS"


def _load_file(con, path: str, arity: int, table: str, what: str, work: _Workspace, append: bool) -> int:
    import duckdb

    scan = _Scan()
    with open(path, "rb") as fh:
        head = fh.read(4)
        fh.seek(0)
        if head.startswith(_GZIP_MAGIC):
            plain = _gunzip(path, fh, scan, work)
        elif head.startswith(_ZSTD_MAGIC):
            raise ValueError(f"{path}: a zstd-compressed file; data files are plain text or gzip (.gz).")
        elif path.lower().endswith(".gz"):
            raise ValueError(
                f"{path}: the name ends in .gz but the file is not gzip-compressed (it does not start with "
                "gzip's magic bytes 1f 8b); rename it or compress it."
            )
        else:
            plain = path
            while not scan.special and (chunk := fh.read(_CHUNK)):
                scan.feed(chunk)
    special = scan.finish()
    if plain == path and not _duckdb_safe(os.path.abspath(path)) and not special:
        plain = _alias(path, work)
    elif plain == path:
        plain = os.path.abspath(path)

    raw = f"{table}_lines"
    parsed = f"{table}_parsed"
    fields = ", ".join(f"f[{i + 1}] AS a{i}" for i in range(arity))

    def parse(lines_sql: str) -> None:
        # one row per line, in file order (rowid + 1 is the line number); blank lines kept and flagged
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {parsed} AS SELECT {fields}, len(f) AS nf, f[{arity + 1}] AS vs, "
            f"blank, nbytes FROM (SELECT string_split(l, chr(9)) AS f, coalesce(trim(l) = '', true) AS blank, "
            f"strlen(l) AS nbytes FROM (SELECT rtrim(line, chr(13)) AS l FROM ({lines_sql})))"
        )

    in_python = False  # the lines went through Python's reader into the table ``raw``
    try:
        lines_sql = f"SELECT line FROM {raw}"
        if special:
            in_python = True
            _load_lines_python(con, plain, path, raw)
            parse(lines_sql)
        else:
            try:
                parse(_duckdb_lines(plain))
                lines_sql = _duckdb_lines(plain)
            except duckdb.InvalidInputException:  # what DuckDB's strict reader does not take: Python's decides
                in_python = True
                _load_lines_python(con, plain, path, raw)
                parse(lines_sql)
        empty = " ".join(f"OR trim(coalesce(a{i}, '')) = '' " for i in range(arity))
        value = "try_cast(vs AS DOUBLE)"
        flags = ", ".join(f"trim(coalesce(a{i}, '')) = ''" for i in range(arity))
        bad = con.execute(
            f"SELECT rowid, nbytes, nf, vs, {flags} "
            f"FROM {parsed} WHERE NOT blank AND (nbytes > {MAX_LINE_BYTES} OR nf NOT IN ({arity}, {arity + 1}) {empty}"
            f"OR (nf = {arity + 1} AND ({value} IS NULL OR NOT isfinite({value}) OR {value} NOT BETWEEN 0 AND 1))) "
            "ORDER BY rowid LIMIT 1"
        ).fetchone()
        if bad is not None:
            _report_bad_line(con, lines_sql, bad, path, arity, what)
        cols = ", ".join(f"a{i}" for i in range(arity))
        # the statement's one row is the number of rows it wrote (DuckDB's count for INSERT and CREATE ... AS)
        (count,) = con.execute(
            f"{_into(table, append)} SELECT {cols}, "
            f"CASE WHEN nf = {arity + 1} THEN CAST(vs AS DOUBLE) ELSE 1.0 END AS value FROM {parsed} WHERE NOT blank"
        ).fetchone()
    finally:
        con.execute(f"DROP TABLE IF EXISTS {parsed}")
        if in_python:
            con.execute(f"DROP TABLE IF EXISTS {raw}")
    return int(count)


def _report_bad_line(con, lines_sql: str, bad: tuple, path: str, arity: int, what: str) -> None:
    """Raise the ValueError for the first malformed line ``bad`` (its rowid, byte count, number of fields,
    value field and per-argument emptiness, from the parsed table)."""
    rowid, nbytes, nf, vs, *empty = bad
    number = rowid + 1
    text = con.execute(f"SELECT left(line, {4 * EXCERPT_CHARS}) FROM ({lines_sql}) LIMIT 1 OFFSET {rowid}").fetchone()
    line = excerpt(text[0].rstrip("\r") if text and text[0] is not None else "")
    where = f"{path}, line {number}"
    if nbytes > MAX_LINE_BYTES:
        raise ValueError(
            f"{where}: a line of {nbytes} bytes; lines hold at most MAX_LINE_BYTES = {MAX_LINE_BYTES} bytes: {line}."
        )
    if nf not in (arity, arity + 1):
        raise ValueError(
            f"{where}: expected {arity} tab-separated arguments and optionally a value for the {what}; "
            f"got {nf} fields: {line}."
        )
    if any(empty):
        raise ValueError(f"{where}: an empty argument in the {what}: {line}.")
    raise ValueError(f"{where}: the value {excerpt(vs)} of an atom in the {what} must be a number in [0, 1].")
