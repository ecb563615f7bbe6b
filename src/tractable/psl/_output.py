"""Writing inferred values in PSL's output format: one ``NAME.txt`` per open predicate.

PSL's CLI writes, for every open predicate, a file named after the predicate in upper case (PSL stores
predicate names upper-cased) holding one target atom per line: its arguments, then its value,
tab-separated.
"""

from __future__ import annotations

import os

__all__ = ["write_predictions"]


def write_predictions(predictions: dict, directory) -> list[str]:
    """Write one ``NAME.txt`` per predicate of ``predictions`` into ``directory`` (created if missing).

    Parameters
    ----------
    predictions : dict
        Predicate name -> DataFrame of argument columns and ``value`` (as :meth:`Model.infer` returns).
    directory : str or os.PathLike

    Returns
    -------
    list of str
        The paths written.
    """
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    paths = []
    for name, df in predictions.items():
        path = os.path.join(directory, f"{name.upper()}.txt")
        df.to_csv(path, sep="\t", header=False, index=False, float_format="%.6f", lineterminator="\n")
        paths.append(path)
    return paths
