"""The balanced convolution tree of a single cardinality potential, one array per level.

The ``n`` leaves are padded to ``P = 2^L`` with leaves that are always off (weights (1, 0)), so
level ``h`` holds ``2^(L-h)`` nodes whose count messages have exactly ``2^h + 1`` entries: one
(rows, width) array per level, children of row ``r`` at rows ``2r`` and ``2r + 1`` of the level
below (torch-struct's ``[0::2]`` / ``[1::2]`` pairing). The bottom levels, whose children have at
most ``crossover`` entries, are direct convolutions computed in one compiled call each way
(:mod:`._direct_levels`; the level arrays are views of its buffer); above them a level is one
batched ``scipy.fft`` call.

FFT sizes are powers of two: the convolution of two children (``w + 1`` entries each) has
``2w + 1`` entries, but only its two end entries alias under a circular convolution of length
``2w``, and both are single products (``c[0] = a[0] b[0]``, ``c[2w] = a[w] b[w]``), set exactly.
For the downward correlation only the last entry aliases; it is a dot product, done directly.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import scipy.fft as sfft

from ._convolve import DEFAULT_CROSSOVER, METHODS
from ._direct_levels import direct_top, down_direct_levels, up_direct_levels
from ._kernels import sample_descent_alias, split_table_bound

_WORKERS = max(1, min(2, os.cpu_count() or 1))
_NOISE = 1e-14  # FFT output entries below this fraction of the row maximum are rounding noise


def _clean(x: np.ndarray) -> np.ndarray:
    floor = _NOISE * x.max(axis=1, keepdims=True)
    x[x < floor] = 0.0
    return x


@functools.cache
def _block_configurations(block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``2^block`` configurations of a block of leaves for the sampler: ``masks`` (bit i = leaf i on)
    sorted by popcount, ``start`` (``block + 2``,: those with popcount r at ``start[r]:start[r + 1]``)
    and ``patterns`` (each configuration's leaf states as 8 bytes, byte i = leaf i, native byte order).
    Built once per block size (the arrays are shared: never written)."""
    cfg = np.arange(1 << block)
    pop = np.array([bin(c).count("1") for c in cfg])
    masks = cfg[np.argsort(pop, kind="stable")].astype(np.int64)
    start = np.searchsorted(np.sort(pop), np.arange(block + 2)).astype(np.int64)
    bits = ((masks[:, None] >> np.arange(8)[None, :]) & 1).astype(np.uint8)
    patterns = np.ascontiguousarray(bits).view(np.uint64).ravel()
    return masks, start, patterns


class Balanced:
    """Upward messages of the balanced tree over ``n`` leaves (padded to a power of two)."""

    def __init__(self, leaf_logw: np.ndarray, *, method: str = "auto", crossover: int = DEFAULT_CROSSOVER):
        n, n_levels = self._init_leaves(leaf_logw, method, crossover)
        for h in range(self.top + 1, n_levels + 1):
            a = self.vec[h - 1]
            x = self._conv(a, h)
            # structural zeros: a node with fewer real leaves than 2^h cannot exceed its size
            rows = np.arange(x.shape[0])
            size = np.clip(n - rows * (1 << h), 0, 1 << h)
            part = np.nonzero(size < (1 << h))[0]
            if part.size:
                cols = np.arange(x.shape[1])
                x[part] = np.where(cols[None, :] > size[part, None], 0.0, x[part])
            mx = x.max(axis=1)
            x /= mx[:, None]
            self.vec.append(x)
            sc = self.scale[h - 1]
            self.scale.append(sc[0::2] + sc[1::2] + np.log(mx))

    def _init_leaves(self, leaf_logw: np.ndarray, method: str, crossover: int) -> tuple[int, int]:
        """Level 0 (the ``n`` leaf messages with log scales, padded with always-off leaves to
        ``2^n_levels``) and the levels ``1..top`` below the FFT crossover, in one compiled call each
        (:mod:`._direct_levels`; their rows have maxima in [2^-20, 2^20], the root's exactly 1).
        Returns ``(n, n_levels)``."""
        n = leaf_logw.shape[0]
        self.n = n
        n_levels = max(0, int(np.ceil(np.log2(n)))) if n > 1 else 0
        self.n_levels = n_levels
        pad = 1 << n_levels
        self.method = method
        self.crossover = crossover
        self.exact = not any(self._use_fft((1 << (h - 1)) + 1) for h in range(1, n_levels + 1))
        self.top = direct_top(n_levels, self._use_fft)
        self._flat, self._sflat = up_direct_levels(np.ascontiguousarray(leaf_logw, dtype=np.float64), pad, self.top)
        self.vec, self.scale = [], []
        off = sfo = 0
        for h in range(self.top + 1):
            rows, w = pad >> h, (1 << h) + 1
            self.vec.append(self._flat[off : off + rows * w].reshape(rows, w))
            self.scale.append(self._sflat[sfo : sfo + rows])
            off, sfo = off + rows * w, sfo + rows
        if self.top == n_levels and n_levels:  # the root is a direct level: normalize it to max 1
            mx = float(self.vec[-1][0].max())
            self.vec[-1][0] /= mx
            self.scale[-1][0] += np.log(mx)
        self._fft = {}  # rfft of level h - 1 at length 2^h, reused by the downward pass
        return n, n_levels

    def _down_direct(self, a: np.ndarray, sa: np.ndarray):
        """Messages into the leaves from the messages ``a`` (rows over counts 0..2^top) and log
        scales ``sa`` into the nodes of level ``top``: (n, 2) rows and (n,) log scales."""
        if self.top:
            a, sa = down_direct_levels(
                np.ascontiguousarray(a), sa, self._flat, self._sflat, 1 << self.n_levels, self.top
            )
        return a[: self.n], sa[: self.n]

    def _use_fft(self, width: int) -> bool:
        return METHODS[self.method](width, self.crossover)

    def _conv(self, level: np.ndarray, h: int) -> np.ndarray:
        """Convolve rows 2r and 2r + 1 of ``level`` (the messages of height h - 1)."""
        a, b = level[0::2], level[1::2]
        w = level.shape[1] - 1  # above the direct levels: every level is an FFT level
        n = 2 * w
        fl = sfft.rfft(level, n=n, axis=1, workers=_WORKERS)
        self._fft[h] = fl
        x = np.empty((a.shape[0], n + 1))
        x[:, :n] = sfft.irfft(fl[0::2] * fl[1::2], n=n, axis=1, workers=_WORKERS)
        x[:, 0] = a[:, 0] * b[:, 0]
        x[:, n] = a[:, w] * b[:, w]
        return _clean(x)

    @property
    def root(self) -> np.ndarray:
        """Root message over counts 0..n (normalized to max 1)."""
        return self.vec[-1][0, : self.n + 1]

    @property
    def root_scale(self) -> float:
        return float(self.scale[-1][0])

    def downward(self, root_out_log: np.ndarray):
        """Messages into the leaves from above: (n, 2) normalized rows and (n,) log scales."""
        mx = np.max(root_out_log)
        a = np.zeros((1, (1 << self.n_levels) + 1))
        a[0, : root_out_log.shape[0]] = np.exp(root_out_log - mx)
        sa = np.array([mx])
        for h in range(self.n_levels, self.top, -1):
            up = self.vec[h - 1]
            w = up.shape[1] - 1
            ul, ur = up[0::2], up[1::2]
            n = 2 * w
            fa = sfft.rfft(a, n=n, axis=1, workers=_WORKERS)  # entry n aliases; fixed below
            fu = self._fft.get(h)
            if fu is None:
                fu = sfft.rfft(up, n=n, axis=1, workers=_WORKERS)
            fl = np.conj(fu[0::2])
            fl *= fa
            fr = np.conj(fu[1::2])
            fr *= fa
            xl = np.empty((a.shape[0], w + 1))
            xr = np.empty((a.shape[0], w + 1))
            xl[:, :w] = sfft.irfft(fr, n=n, axis=1, workers=_WORKERS)[:, :w]
            xr[:, :w] = sfft.irfft(fl, n=n, axis=1, workers=_WORKERS)[:, :w]
            tail = a[:, w:]
            xl[:, w] = np.einsum("ij,ij->i", tail, ur)
            xr[:, w] = np.einsum("ij,ij->i", tail, ul)
            _clean(xl)
            _clean(xr)
            x = np.empty((2 * a.shape[0], w + 1))
            x[0::2] = xl
            x[1::2] = xr
            sc = np.empty(2 * a.shape[0])
            sup = self.scale[h - 1]
            sc[0::2] = sa + sup[1::2]
            sc[1::2] = sa + sup[0::2]
            mx = x.max(axis=1)
            zero = ~(mx > 0)
            mx[zero] = 1.0
            x /= mx[:, None]
            with np.errstate(divide="ignore"):
                sa = sc + np.log(mx)
            sa[zero] = -np.inf
            a = x
        return self._down_direct(a, sa)

    def sample(
        self, root_counts: np.ndarray, state: np.ndarray, block_height: int = 3, alias_height: int = 7
    ) -> np.ndarray:
        """Exact samples given root counts: count splits down to blocks of ``2^block_height`` leaves
        (alias tables at nodes of up to ``2^alias_height`` leaves, walks above), then each block's
        configuration in one draw (see ``sample_descent_alias``). Returns (S, n) uint8."""
        left, right, _, flat, offset, length, pad = self.flat()
        hb = min(block_height, self.n_levels)
        level_start = np.cumsum([0] + [pad >> h for h in range(self.n_levels + 1)])
        block = 1 << hb
        masks, start, patterns = _block_configurations(block)
        nz_lo, nz_hi = self._support()
        block_node0 = int(level_start[hb])
        # the (node, count) slots of the split tables: internal nodes above the blocks
        slot_base = np.zeros(left.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.where(np.arange(left.shape[0]) >= block_node0 + pad // block, length, 0), out=slot_base[1:])
        n_slots = int(slot_base[-1])
        slots = np.full((n_slots, 3), -1, dtype=np.int64)
        chunk = min(4096, max(1, root_counts.shape[0]))  # samples per sweep of the tree
        depth = self.n_levels - hb  # from the root down to the blocks
        alias_max = 1 << min(alias_height, 10)  # split tables of <= 513 entries: the draw needs n < 1024
        words = sample_descent_alias(
            root_counts.astype(np.int64),
            int(level_start[-1] - 1),
            left,
            right,
            flat,
            offset,
            length,
            nz_lo,
            nz_hi,
            alias_max,
            split_table_bound(self.n, hb, self.n_levels, alias_max),
            block_node0,
            self.vec[0].ravel(),
            masks,
            start,
            patterns,
            state,
            slot_base,
            slots,
            np.empty(n_slots),
            np.empty((2 * depth + 2, chunk), dtype=np.int32),  # count rows: two per depth
            np.empty((chunk, 8), dtype=np.uint64),  # the current group of 8 blocks of each sample
        )
        out = words.view(np.uint8)  # (S, 8 n_blocks): block b's leaves are bytes 8b .. 8b + block - 1
        if block < 8:
            out = out.reshape(out.shape[0], -1, 8)[:, :, :block].reshape(out.shape[0], -1)
        if out.shape[1] != self.n:
            out = np.ascontiguousarray(out[:, : self.n])
        return out

    def _support(self) -> tuple[np.ndarray, np.ndarray]:
        """First and last non-zero entry of each node's upward message (generic numbering of
        :meth:`flat`); the padding nodes (message [1, 0, ...]) get (0, 0)."""
        lo, hi = [], []
        for x in self.vec:
            nz = x > 0.0
            first = np.argmax(nz, axis=1)
            last = x.shape[1] - 1 - np.argmax(nz[:, ::-1], axis=1)
            lo.append(first)
            hi.append(last)
        return np.concatenate(lo).astype(np.int64), np.concatenate(hi).astype(np.int64)

    def flat(self):
        """Upward messages flattened for the sampling kernel, in the generic node numbering.

        Returns (left, right, order, flat, offset, length, n_leaves_padded): nodes are the padded
        leaves ``0..P-1`` followed by the internal nodes level by level.
        """
        pad = 1 << self.n_levels
        n_nodes = 2 * pad - 1
        level_start = [0]
        for h in range(self.n_levels + 1):
            level_start.append(level_start[-1] + (pad >> h))
        left = np.full(n_nodes, -1, dtype=np.int64)
        right = np.full(n_nodes, -1, dtype=np.int64)
        offset = np.empty(n_nodes, dtype=np.int64)
        length = np.empty(n_nodes, dtype=np.int64)
        base = 0
        for h in range(self.n_levels + 1):
            rows = pad >> h
            ids = np.arange(level_start[h], level_start[h] + rows)
            width = (1 << h) + 1
            offset[ids] = base + np.arange(rows) * width
            size = np.clip(self.n - np.arange(rows) * (1 << h), 0, 1 << h)
            length[ids] = size + 1
            base += rows * width
            if h > 0:
                child = level_start[h - 1] + 2 * np.arange(rows)
                left[ids] = child
                right[ids] = child + 1
        flat = np.concatenate([v.ravel() for v in self.vec])
        order = np.arange(n_nodes - 1, pad - 1, -1, dtype=np.int64)
        return left, right, order, flat, offset, length, pad
