"""Log-space primitives shared by every area: ``-inf``-safe log-sum-exp and normalization.

``-inf`` is a hard constraint (a forbidden configuration); these functions never turn it into NaN
(``-inf - -inf``), so all-``-inf`` slices give ``-inf`` sums and all-zero distributions.
"""

from __future__ import annotations

import numpy as np

__all__ = ["logsumexp", "normalize_log"]


def logsumexp(x: np.ndarray, axis=None, keepdims: bool = False) -> np.ndarray | float:
    """``log(sum(exp(x)))`` over ``axis``; ``-inf`` (not NaN) for slices that are all ``-inf``.

    Parameters
    ----------
    x : ndarray
        Log-values; ``-inf`` allowed, NaN and ``+inf`` not expected.
    axis : int or tuple of int, optional
        Axes to sum over (all by default).
    keepdims : bool
        Keep the summed axes with length 1.

    Returns
    -------
    ndarray or float
        A float when ``axis`` is None and ``keepdims`` is False.

    Examples
    --------
    >>> import numpy as np
    >>> float(logsumexp(np.array([-np.inf, -np.inf])))
    -inf
    >>> logsumexp(np.log([[1.0, 3.0], [2.0, 2.0]]), axis=1).round(6).tolist()
    [1.386294, 1.386294]
    """
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        out = np.squeeze(out, axis=axis) if axis is not None else out.reshape(())
    return float(out) if out.ndim == 0 else out


def normalize_log(x: np.ndarray) -> tuple[np.ndarray, float]:
    """``(p, log_sum)`` with ``p = exp(x - log_sum)`` over all entries; all zeros when all are ``-inf``."""
    m = np.max(x) if x.size else -np.inf
    if m == -np.inf:
        return np.zeros_like(x, dtype=np.float64), -np.inf
    # shifted by the maximum, normalized by the sum: at magnitudes near 1e300 ``x - logsumexp(x)`` rounds
    # (two equal entries would each get probability 1), the ratio does not
    w = np.exp(x - m)
    s = w.sum()
    return w / s, float(m + np.log(s))
