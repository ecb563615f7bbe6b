"""The worker side of distributed consensus ADMM: one block of terms and its state, as a Dask actor.

A :class:`BlockActor` lives on one worker for the whole run. It holds its block's term arrays
(:class:`tractable.hlmrf.partition.Block`), the local copies ``x`` and the multipliers ``y``; the
driver calls :meth:`BlockActor.step` once per iteration with the consensus values of the block's
variables only and gets back the block's partial sums (one per variable) and three partial norms.
Term data never travels again after the actor is built.

The block comes either from the driver (a block of a model split there), or is built on the worker
from a shard (an ``.npz`` file read with :meth:`tractable.hlmrf.HLMRF.load`, or a callable that
returns an :class:`~tractable.hlmrf.HLMRF`): then the driver never holds the terms at all.
"""

from __future__ import annotations

import hashlib
import os
import time

import numpy as np

from ..hlmrf import partition
from ..hlmrf._kernels import KIND_LEQ, KIND_SQUARED

__all__ = ["BlockActor"]


def _constraint_norm(block) -> float:
    """Largest Euclidean norm of the coefficients of the block's constraints (0 without any)."""
    rows = np.repeat(np.arange(block.n_terms), np.diff(block.indptr))
    is_con = (block.kind >= KIND_LEQ)[rows]
    if not is_con.any():
        return 0.0
    sq = np.bincount(rows[is_con], weights=block.coef[is_con] ** 2, minlength=block.n_terms)
    return float(np.sqrt(sq.max()))


def _load_shard(source):
    """The :class:`HLMRF` of a shard: ``HLMRF.load`` of a path, or the result of a callable."""
    from ..hlmrf import HLMRF

    if callable(source):
        model = source()
        if not isinstance(model, HLMRF):
            raise TypeError(f"a shard callable must return an HLMRF; got {type(model).__name__}.")
        return model
    return HLMRF.load(os.fspath(source))


class BlockActor:
    """One block of terms with its ADMM state, resident on a worker (a Dask actor).

    Parameters
    ----------
    block : tractable.hlmrf.partition.Block, optional
        A block split by the driver.
    shard : path or callable, optional
        Instead of ``block``: a model shard built here (the whole shard is one block, constraints
        with local copies).
    """

    def __init__(self, block=None, shard=None):
        self.info = {}
        if block is None:
            model = _load_shard(shard)
            part = partition.split_terms(model, 1, strategy="contiguous", constraints="local")
            block = part.blocks[0]
            fv, fx = model.fixed
            sig = hashlib.sha1(np.ascontiguousarray(fv, dtype=np.int64).tobytes())
            sig.update(np.ascontiguousarray(fx, dtype=np.float64).tobytes())
            self.info = {
                "n_variables": int(model.n_variables),
                "fixed": sig.hexdigest(),
                "counts": part.counts[block.variables],
                "offset": float(part.offset),
                "free": part.free,
                "x_fixed": part.x_fixed,
            }
        self.block = block
        self.info.update(
            variables=block.variables,
            n_terms=int(block.n_terms),
            n_copies=int(block.n_copies),
            cmax=_constraint_norm(block),
            has_constraints=bool(np.any(block.kind >= KIND_LEQ)),
            n_potentials=int(np.count_nonzero(block.kind < KIND_LEQ)),
            n_squared=int(np.count_nonzero(block.kind == KIND_SQUARED)),
            pid=os.getpid(),
        )
        self.x = np.zeros(block.n_copies)
        self.y = np.zeros(block.n_copies)
        self.y_avg = np.zeros(block.n_copies)
        self.y_snap = None

    def describe(self) -> dict:
        """What the driver needs to know of the block (shards: also the model's size and fixed values)."""
        return self.info

    def start(self, z_local) -> int:
        """Start the run: ``x = z`` on every copy, ``y = 0`` (as :func:`partition.block_start`)."""
        self.x = np.asarray(z_local, dtype=np.float64)[self.block.idx]
        self.y = np.zeros(self.block.n_copies)
        self.y_avg = np.zeros(self.block.n_copies)
        return 0

    def step(self, z_local, rho: float, alpha: float):
        """One term half (:func:`partition.block_step`); returns ``(acc, sums, seconds of compute)``."""
        t0 = time.perf_counter()
        acc, sums = partition.block_step(self.block, self.x, self.y, z_local, rho, alpha)
        return acc, sums, time.perf_counter() - t0

    def certificate(self, z_local, averaged: bool = False):
        """The block's share of the certified bound (:func:`partition.block_certificate`) at the
        multipliers, or at their exponential average."""
        return partition.block_certificate(self.block, self.y_avg if averaged else self.y, z_local)

    def average(self, keep: float) -> int:
        """Update the exponential average of the multipliers: ``y_avg = keep y_avg + (1 - keep) y``."""
        self.y_avg *= keep
        self.y_avg += (1.0 - keep) * self.y
        return 0

    def snapshot(self) -> int:
        """Keep a copy of the multipliers (the driver's divergence test compares their growth)."""
        self.y_snap = self.y.copy()
        return 0

    def recession(self, z_local, since_snapshot: bool):
        """The block's share of the infeasibility measure of the multipliers' growth since the snapshot
        (or of the multipliers themselves): :func:`partition.block_certificate` with ``recession=True``."""
        y = self.y - self.y_snap if since_snapshot and self.y_snap is not None else self.y
        return partition.block_certificate(self.block, y, z_local, recession=True)

    def memory(self) -> tuple[int, int]:
        """``(bytes held by the block's arrays and state, resident memory of this worker process)``."""
        import psutil  # a dependency of distributed

        b = self.block
        arrays = (b.indptr, b.idx, b.coef, b.const, b.weight, b.kind, b.variables, self.x, self.y)
        return int(sum(a.nbytes for a in arrays)), int(psutil.Process().memory_info().rss)
