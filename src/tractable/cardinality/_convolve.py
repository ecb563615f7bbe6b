"""Batched convolution kernels of the convolution tree: direct, FFT and the crossover between them.

Each call convolves (or correlates) many pairs of non-negative rows at once, so one level of the
tree costs one 2-D ``scipy.fft`` call rather than one call per node.

Numerics. Direct convolution of non-negative vectors is accurate relative to every entry. FFT
convolution is accurate only relative to the largest entry of each output row (absolute error of
about ``1e-16 * max * log n``), so entries far below the maximum come back as noise or negative
numbers. Callers keep each row normalized to a maximum of 1 (plus a log scale) and arrange, by
exponential tilting, that the entries which matter sit near the maximum; negative noise is clipped
to 0 here.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.fft as sfft

from ._kernels import CONV, CORR, direct_rows

__all__ = ["DEFAULT_CROSSOVER", "METHODS", "convolve_rows", "correlate_rows"]

#: Row length up to which direct convolution is used: exact relative to every entry, and for short
#: rows no slower than an FFT call.
DEFAULT_CROSSOVER = 48


def _fft_above_crossover(width: int, crossover: int) -> bool:
    return width > crossover


def _fft_always(width: int, crossover: int) -> bool:
    return True


def _fft_never(width: int, crossover: int) -> bool:
    return False


#: The convolution methods of the package (every ``method=`` of ``tractable.cardinality``): name ->
#: rule ``use_fft(width, crossover)`` that decides, for messages of ``width`` entries, between FFT
#: and direct convolution. ``"auto"`` convolves directly up to ``crossover`` entries (the only
#: method that uses ``crossover``).
METHODS = {"auto": _fft_above_crossover, "fft": _fft_always, "direct": _fft_never}

_NOISE = 1e-14
_WORKERS = max(1, min(2, os.cpu_count() or 1))


def _as_kernel_rows(x: np.ndarray) -> np.ndarray:
    """``x`` as the one array type the kernels are compiled for: C-ordered, writable float64 (anything
    else, a read-only or strided view included, is copied), so that no second signature is compiled."""
    if x.dtype != np.float64 or not x.flags.c_contiguous or not x.flags.writeable:
        x = np.array(x, dtype=np.float64, order="C")
    return x


def _convolve_direct_python(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Slow readable reference of :func:`convolve_rows` (one ``np.convolve`` per row)."""
    return np.array([np.convolve(x, y) for x, y in zip(a, b)])


def _correlate_direct_python(a: np.ndarray, b: np.ndarray, width: int) -> np.ndarray:
    """Slow readable reference of :func:`correlate_rows`: ``out[r, j] = sum_i a[r, j+i] b[r, i]``."""
    out = np.zeros((a.shape[0], width))
    for r in range(a.shape[0]):
        for j in range(width):
            for i in range(b.shape[1]):
                if j + i < a.shape[1]:
                    out[r, j] += a[r, j + i] * b[r, i]
    return out


def _clean(out: np.ndarray) -> np.ndarray:
    """Zero the entries of FFT output rows that are at rounding-noise level (< NOISE * row max).

    They carry no information (the FFT error is about 1e-16 of the row maximum), and zeroing them
    keeps configurations that a hard constraint forbids at probability exactly 0.
    """
    floor = _NOISE * out.max(axis=1, keepdims=True)
    out[out < floor] = 0.0
    return out


def convolve_rows(a: np.ndarray, b: np.ndarray, *, method: str = "auto", crossover: int = DEFAULT_CROSSOVER):
    """Full convolution of each row of ``a`` (n, m) with the same row of ``b`` (n, p): (n, m + p - 1)."""
    m, p = a.shape[1], b.shape[1]
    if not METHODS[method](max(m, p), crossover):
        a, b = _as_kernel_rows(a), _as_kernel_rows(b)
        return direct_rows(a, b, np.zeros((a.shape[0], m + p - 1)), CONV)
    n_out = m + p - 1
    nfft = sfft.next_fast_len(n_out, real=True)
    fa = sfft.rfft(a, n=nfft, axis=1, workers=_WORKERS)
    fa *= sfft.rfft(b, n=nfft, axis=1, workers=_WORKERS)
    out = sfft.irfft(fa, n=nfft, axis=1, workers=_WORKERS)[:, :n_out]
    return _clean(out)


def correlate_rows(
    a: np.ndarray, b: np.ndarray, width: int, *, method: str = "auto", crossover: int = DEFAULT_CROSSOVER
):
    """``out[r, j] = sum_i a[r, j + i] * b[r, i]`` for ``j < width``: (n, width).

    This is the downward message of the convolution tree (Sec. 5.2.2 of Tarlow et al. 2012): the
    parent's outgoing message correlated with the sibling's upward message.
    """
    m, p = a.shape[1], b.shape[1]
    if not METHODS[method](max(m, p), crossover):
        return direct_rows(_as_kernel_rows(a), _as_kernel_rows(b), np.empty((a.shape[0], width)), CORR)
    # circular correlation of length N has no wrap-around for j < width when N >= m and
    # N >= width + p - 1
    nfft = sfft.next_fast_len(max(m, width + p - 1), real=True)
    fa = sfft.rfft(a, n=nfft, axis=1, workers=_WORKERS)
    fa *= np.conj(sfft.rfft(b, n=nfft, axis=1, workers=_WORKERS))
    out = sfft.irfft(fa, n=nfft, axis=1, workers=_WORKERS)[:, :width]
    return _clean(out)
