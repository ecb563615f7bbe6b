"""The yeast multi-label data of Lampert (2012, Sec. 4.1).

:func:`load_yeast` reads the MULAN version of the yeast gene-function data (Elisseeff & Weston
2002; 2417 genes, 103 features, 14 labels) shipped with the package (``data/yeast.npz``; source and
licence in ``data/README.md``); :func:`yeast_split` is the fixed split of the paper's Table 1: the
first 1500 rows train, the last 917 test (the sizes of MULAN's ``yeast-train`` / ``yeast-test``).

The fully connected label CRF of the paper's multi-label experiment is
:class:`tractable.crf.MultiLabelCRF` (``tractable.datasets.MultiLabelCRF`` is a deprecated alias, removed
in the next release).
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import numpy as np

__all__ = ["YEAST_N_TRAIN", "load_yeast", "yeast_split"]

_DATA = Path(__file__).resolve().parent / "data" / "yeast.npz"

#: rows of the training part of :func:`yeast_split` (the rest, 917 rows, is the test part)
YEAST_N_TRAIN = 1500


@functools.lru_cache(maxsize=1)
def _load() -> tuple[np.ndarray, np.ndarray]:
    with np.load(_DATA, allow_pickle=False) as d:
        X = np.array(d["X"], dtype=np.float64)
        Y = np.array(d["Y"], dtype=np.uint8)
    X.flags.writeable = False
    Y.flags.writeable = False
    return X, Y


def load_yeast() -> tuple[np.ndarray, np.ndarray]:
    """The yeast multi-label data set (MULAN version; Elisseeff & Weston 2002).

    Returns
    -------
    X : ndarray of shape (2417, 103), float64, read-only
        Gene features (micro-array expression and phylogenetic profiles).
    Y : ndarray of shape (2417, 14), uint8, read-only
        ``Y[n, i] = 1`` when gene ``n`` has functional category ``i``.

    Examples
    --------
    >>> from tractable.datasets.yeast import load_yeast
    >>> X, Y = load_yeast()
    >>> X.shape, Y.shape, round(float(Y.sum(axis=1).mean()), 2)
    ((2417, 103), (2417, 14), 4.24)
    """
    return _load()


def yeast_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The fixed train/test split of Lampert (2012, Table 1): first 1500 rows train, last 917 test.

    Returns
    -------
    X_train, X_test, Y_train, Y_test : read-only arrays
        In scikit-learn's ``train_test_split`` order; shapes (1500, 103), (917, 103), (1500, 14),
        (917, 14).
    """
    X, Y = _load()
    return X[:YEAST_N_TRAIN], X[YEAST_N_TRAIN:], Y[:YEAST_N_TRAIN], Y[YEAST_N_TRAIN:]


def __getattr__(name: str):
    """``MultiLabelCRF``, deprecated here: it moved to :mod:`tractable.crf` (a DeprecationWarning)."""
    if name == "MultiLabelCRF":
        warnings.warn(
            "`tractable.datasets.yeast.MultiLabelCRF` moved to `tractable.crf.MultiLabelCRF`; this alias will be "
            "removed in the next release.",
            DeprecationWarning,
            stacklevel=2,
        )
        from ..crf.multilabel import MultiLabelCRF

        return MultiLabelCRF
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
