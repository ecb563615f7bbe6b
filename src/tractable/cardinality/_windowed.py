"""Balanced convolution tree with messages kept on their numerical support (a window per row).

Same tree and passes as :mod:`._balanced`, but after every FFT level each message is cut to the
window of entries above the FFT noise floor (``_NOISE`` times the row maximum; below it FFT output
carries no information and is zeroed anyway). A count distribution over ``2^h`` leaves has width
``2^h + 1`` but its numerical support only grows like the square root of its variance, so upper
levels shrink from ``2^h`` entries to a few thousand: the passes cost far less than
O(D log^2 D) for typical inputs. Row ``r`` of level ``h`` holds the message at counts
``lo[h][r] .. lo[h][r] + width - 1``; all rows of a level share one width (zero padded), so a
level is still one batched FFT call. FFT lengths are ``2 (w - 1)`` with ``w - 1`` a fast length;
the one aliased entry of each circular convolution or correlation is a single product or dot
product, set exactly.
"""

from __future__ import annotations

import numpy as np
import scipy.fft as sfft

from ._balanced import _WORKERS, Balanced
from ._convolve import DEFAULT_CROSSOVER
from ._kernels import clean_normalize_rows, shift_rows

_NOISE = 1e-14


def _trim(x: np.ndarray, lo: np.ndarray):
    """Cut rows to the common window of their non-zero entries; width w with w - 1 a fast length."""
    nz = x > 0
    first = np.argmax(nz, axis=1)
    last = x.shape[1] - 1 - np.argmax(nz[:, ::-1], axis=1)
    width = int((last - first).max()) + 1
    w = sfft.next_fast_len(max(width - 1, 1), real=True) + 1
    if w >= x.shape[1] and not first.any():
        return x, lo
    idx = first[:, None] + np.arange(w)[None, :]
    ok = idx < x.shape[1]
    out = np.where(ok, np.take_along_axis(x, np.minimum(idx, x.shape[1] - 1), axis=1), 0.0)
    return out, lo + first


class Windowed(Balanced):
    """Upward messages on windows; :meth:`downward` returns messages into the leaves."""

    def __init__(self, leaf_logw: np.ndarray, *, method: str = "auto", crossover: int = DEFAULT_CROSSOVER):
        n, n_levels = self._init_leaves(leaf_logw, method, crossover)
        self.lo = [np.zeros((1 << n_levels) >> h, dtype=np.int64) for h in range(self.top + 1)]
        for h in range(self.top + 1, n_levels + 1):
            a = self.vec[h - 1]
            lo_c = self.lo[h - 1]
            lo = lo_c[0::2] + lo_c[1::2]
            wc = a.shape[1]  # above the direct levels: every level is an FFT level
            nfft = 2 * (wc - 1)
            fl = sfft.rfft(a, n=nfft, axis=1, workers=_WORKERS)
            self._fft[h] = fl
            x = np.empty((a.shape[0] // 2, nfft + 1))
            x[:, :nfft] = sfft.irfft(fl[0::2] * fl[1::2], n=nfft, axis=1, workers=_WORKERS)
            x[:, 0] = a[0::2, 0] * a[1::2, 0]
            x[:, nfft] = a[0::2, wc - 1] * a[1::2, wc - 1]
            # structural zeros: counts above a node's number of real leaves
            rows = np.arange(x.shape[0])
            size = np.clip(n - rows * (1 << h), 0, 1 << h)
            part = np.nonzero(size < (1 << h))[0]
            if part.size:
                cols = lo[part, None] + np.arange(x.shape[1])[None, :]
                x[part] = np.where(cols > size[part, None], 0.0, x[part])
            logmax = clean_normalize_rows(x, _NOISE, np.empty(x.shape[0]))
            if not np.all(logmax > -np.inf):
                raise ValueError("no configuration has non-zero probability.")
            x, lo = _trim(x, lo)
            self.vec.append(x)
            self.lo.append(lo)
            sc = self.scale[h - 1]
            self.scale.append(sc[0::2] + sc[1::2] + logmax)

    @property
    def root(self) -> np.ndarray:
        out = np.zeros(self.n + 1)
        v = self.vec[-1][0]
        lo = int(self.lo[-1][0])
        hi = min(self.n + 1, lo + v.shape[0])
        out[lo:hi] = v[: hi - lo]
        return out

    def downward(self, root_out_log: np.ndarray):
        """Messages into the leaves from above: (n, 2) normalized rows and (n,) log scales."""
        w_root = self.vec[-1].shape[1]
        lo_root = int(self.lo[-1][0])
        full = np.full(lo_root + w_root, -np.inf)
        m = min(root_out_log.shape[0], full.shape[0])
        full[:m] = root_out_log[:m]
        seg = full[lo_root : lo_root + w_root]
        mx = np.max(seg)
        if not mx > -np.inf:
            raise ValueError("no configuration has non-zero probability.")
        a = np.exp(seg - mx)[None, :]
        sa = np.array([mx])
        for h in range(self.n_levels, self.top, -1):
            up = self.vec[h - 1]
            wc = up.shape[1]
            lo_c = self.lo[h - 1]
            ll, lr = lo_c[0::2], lo_c[1::2]
            # a_shift(m) = a(lo_l + lo_r - lo_a + m), m = 0 .. 2 wc - 2 (zero outside a's window)
            delta = ll + lr - self.lo[h]
            ash = (
                a
                if a.shape[1] == 2 * wc - 1 and not delta.any()
                else shift_rows(a, delta, np.zeros((a.shape[0], 2 * wc - 1)))
            )
            ul, ur = up[0::2], up[1::2]
            nfft = 2 * (wc - 1)
            fa = sfft.rfft(ash, n=nfft, axis=1, workers=_WORKERS)  # entry nfft aliases: fixed below
            fu = self._fft.get(h)
            if fu is None:
                fu = sfft.rfft(up, n=nfft, axis=1, workers=_WORKERS)
            fl = np.conj(fu[0::2])
            fl *= fa
            fr = np.conj(fu[1::2])
            fr *= fa
            x = np.empty((2 * a.shape[0], wc))
            x[0::2, : wc - 1] = sfft.irfft(fr, n=nfft, axis=1, workers=_WORKERS)[:, : wc - 1]
            x[1::2, : wc - 1] = sfft.irfft(fl, n=nfft, axis=1, workers=_WORKERS)[:, : wc - 1]
            tail = ash[:, wc - 1 :]
            x[0::2, wc - 1] = np.einsum("ij,ij->i", tail, ur)
            x[1::2, wc - 1] = np.einsum("ij,ij->i", tail, ul)
            sc = np.empty(2 * a.shape[0])
            sup = self.scale[h - 1]
            sc[0::2] = sa + sup[1::2]
            sc[1::2] = sa + sup[0::2]
            sa = sc + clean_normalize_rows(x, _NOISE, np.empty(x.shape[0]))
            a = x
        return self._down_direct(a, sa)
