"""Log-space direct convolution and correlation of rows: exact relative to every entry, at any magnitude.

The linear-space passes of the count trees keep each message as a row normalized to a maximum of 1
plus a log scale. A count whose weight is more than ~e^-745 below its row's maximum underflows to 0
there (and with FFT convolutions anything below ~1e-14 of the maximum is noise), which is lost for
good even when a count potential further up the tree makes that count the likely one. These kernels
work on the logarithms instead (``-inf`` for a zero weight): every output entry is a log-sum-exp
shifted by its own maximum, so no entry underflows and each is accurate relative to itself. They cost
two passes over the ``m * p`` products of a row pair (O(D^2) for a whole count tree), so the count
trees use them only where the linear passes cannot certify their own accuracy
(:func:`tractable.cardinality._tree.sum_passes`). Compiled on first use.
"""

from __future__ import annotations

import numpy as np

from .._numba import njit

__all__ = ["LOGCONV", "LOGCORR", "log_direct_rows"]

#: the modes of :func:`log_direct_rows`
LOGCONV, LOGCORR = 0, 1


@njit
def log_direct_rows(a, b, out, mode):
    """Row-wise log-space products of ``a`` (n, m) and ``b`` (n, p) (log-values, ``-inf`` allowed) into ``out``.

    * ``LOGCONV``: ``out[r, k] = log sum_j exp(a[r, j] + b[r, k - j])``; ``out`` (n, m + p - 1).
    * ``LOGCORR``: ``out[r, j] = log sum_i exp(a[r, j + i] + b[r, i])`` for ``j < out.shape[1]``
      (entries ``a[r, j + i]`` beyond the row count as ``-inf``).

    Every entry of ``out`` is written (``-inf`` where no product is finite); returns ``out``.
    """
    n, m = a.shape
    p = b.shape[1]
    width = out.shape[1]
    for r in range(n):
        for k in range(width):
            if mode == LOGCONV:
                lo = k - p + 1 if k - p + 1 > 0 else 0
                hi = k + 1 if k + 1 < m else m
            else:
                lo = k
                hi = k + p if k + p < m else m
            top = -np.inf
            for j in range(lo, hi):
                bj = b[r, k - j] if mode == LOGCONV else b[r, j - k]
                v = a[r, j] + bj
                if v > top:
                    top = v
            if top == -np.inf:
                out[r, k] = -np.inf
                continue
            s = 0.0
            for j in range(lo, hi):
                bj = b[r, k - j] if mode == LOGCONV else b[r, j - k]
                s += np.exp(a[r, j] + bj - top)
            out[r, k] = top + np.log(s)
    return out
