"""Writing inferred values in PSL's output format: one ``NAME.txt`` per open predicate.

PSL's CLI writes, for every open predicate, a file named after the predicate in upper case (PSL stores
predicate names upper-cased) holding one target atom per line: its arguments as they are (PSL 2.4's
``Constant.rawToString``: no quoting, no escaping), then its value, tab-separated. Arguments therefore
round-trip through a PSL data file as they are (``O"Neil`` stays ``O"Neil``); an argument that a data
file cannot hold (one containing a tab, ``\\n`` or ``\\r``, or one that is empty or spaces only) is
refused, as is a value that is not a number in [0, 1] (NaN: the solver found no solution) and a result
without a solution. Nothing is half written: every file is first written under a temporary name in the
output folder, and the files are renamed to their names only once all of them are written.
"""

from __future__ import annotations

import csv
import os
import re
import secrets

import numpy as np

from .data import short_repr

__all__ = ["write_predictions"]

_NAME = re.compile(r"[A-Za-z$_][A-Za-z0-9$_]*")  # a predicate name (fullmatch): a safe file name
_UNWRITABLE = re.compile(r"[\t\n\r]|^ *$")


def _check(name, df) -> None:
    import pandas as pd

    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"`predictions`: the key {short_repr(name)} is not a predicate name.")
    if not isinstance(df, pd.DataFrame) or "value" not in df.columns:
        raise TypeError(f"`predictions[{name!r}]` must be a DataFrame with argument columns and `value`.")
    values = pd.to_numeric(df["value"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values) | (values < 0) | (values > 1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        v = df["value"].iloc[row]
        shown = str(float(v)) if isinstance(v, (int, float, np.number)) and not isinstance(v, bool) else short_repr(v)
        raise ValueError(
            f"`predictions[{name!r}]`: row {row} has the value {shown}; values must "
            "be numbers in [0, 1] (NaN: the solver found no solution); nothing written."
        )
    for col in df.columns:
        if col == "value":
            continue
        args = df[col].astype(str)
        bad = args.str.contains(_UNWRITABLE).to_numpy(dtype=bool)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"`predictions[{name!r}]`: row {row} has the argument {short_repr(args.iloc[row])}, which a PSL "
                "data file cannot hold (a tab, a line break, or nothing but spaces); nothing written."
            )


def write_predictions(predictions: dict, directory, *, result=None) -> list[str]:
    """Write one ``NAME.txt`` per predicate of ``predictions`` into ``directory`` (created if missing).

    Parameters
    ----------
    predictions : dict
        Predicate name -> DataFrame of argument columns and ``value`` (as :meth:`Model.infer` returns), or
        predicate name -> columns ``{0: arguments, ..., "value": values}`` (as ``Model._infer_columns``
        returns them: the same files, written without pandas).
    directory : str or os.PathLike
    result : MPEResult, optional
        The solver's result: when given, a result without a solution (``status`` ``"infeasible"`` or
        ``"error"``) writes nothing and raises.

    Returns
    -------
    list of str
        The paths written.

    Raises
    ------
    ValueError
        A result without a solution, a value that is not a number in [0, 1], or an argument with a tab,
        a line break or nothing but spaces (nothing is written then).
    """
    from .._results import NO_SOLUTION_STATUSES

    if not isinstance(predictions, dict):
        raise TypeError(f"`predictions` must be a dict as returned by Model.infer(); got {type(predictions).__name__}.")
    if result is not None and getattr(result, "status", None) in NO_SOLUTION_STATUSES:
        raise ValueError(
            f"`result`: the solver found no solution (status {result.status!r}: {result.message}); nothing written."
        )
    if predictions and all(isinstance(table, dict) for table in predictions.values()):
        return _write_columns(predictions, directory)
    for name, df in predictions.items():
        _check(name, df)

    def write(fh, df) -> None:
        df.to_csv(
            fh,
            sep="\t",
            header=False,
            index=False,
            float_format="%.6f",
            lineterminator="\n",
            quoting=csv.QUOTE_NONE,  # PSL writes arguments as they are
        )

    return _write_all(predictions, directory, write)


def _writable(name, columns: dict) -> bool:
    """Whether :func:`write_predictions` would write these columns (a predicate name, string arguments it can
    write, values in [0, 1])."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or "value" not in columns:
        return False
    values = np.asarray(columns["value"])
    if values.dtype.kind != "f" or not (np.isfinite(values) & (values >= 0) & (values <= 1)).all():
        return False
    return all(
        all(type(a) is str and not _UNWRITABLE.search(a) for a in col) for key, col in columns.items() if key != "value"
    )


def _write_columns(columns: dict, directory) -> list[str]:
    """:func:`write_predictions` of predictions as columns (predicate name -> ``{0: arguments, ..., "value":
    values}``, as ``Model._infer_columns`` gives them): the same files, written without pandas (through it,
    with its errors, where an argument or a value cannot be written)."""
    if not all(_writable(name, cols) for name, cols in columns.items()):
        import pandas as pd

        return write_predictions({name: pd.DataFrame(cols) for name, cols in columns.items()}, directory)

    def write(fh, cols) -> None:
        # what DataFrame.to_csv(sep="\t", float_format="%.6f", quoting=QUOTE_NONE) writes: its csv writer, its
        # float format
        writer = csv.writer(fh, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_NONE, quotechar=None)
        args = [col for key, col in cols.items() if key != "value"]
        writer.writerows(zip(*args, [f"{v:.6f}" for v in np.asarray(cols["value"]).tolist()]))

    return _write_all(columns, directory, write)


def _write_all(predictions: dict, directory, write) -> list[str]:
    """``write(fh, predictions[name])`` into a temporary file per predicate, then each renamed to NAME.txt."""
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    done = []  # (temporary path, final path)
    try:
        for name, table in predictions.items():
            path = os.path.join(directory, f"{name.upper()}.txt")
            # a new file of the usual permissions (mkstemp's are private) next to its final name
            tmp = os.path.join(directory, f".{name.upper()}.txt.{os.getpid()}.{secrets.token_hex(4)}.tmp")
            fh = open(tmp, "x", encoding="utf-8", newline="")
            done.append((tmp, path))
            with fh:
                write(fh, table)
        for tmp, path in done:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in done:
            if os.path.exists(tmp):
                os.remove(tmp)
        raise
    return [path for _, path in done]
