"""The worker side of distributed consensus ADMM: one block of terms and its state, as a Dask actor.

A :class:`BlockActor` lives on one worker for the whole run. It holds its block's term arrays
(:class:`tractable.hlmrf.partition.Block`), the local copies ``x`` and the multipliers ``y``. Term
data never travels again after the actor is built.

The block comes either from the driver (a block of a model split there), or is built on the worker
from a shard (a shard folder written by :class:`~tractable.distributed._shardfiles.ShardSetWriter`,
read straight into the block's arrays; an ``.npz`` file read with :meth:`tractable.hlmrf.HLMRF.load`;
or a callable that returns an :class:`~tractable.hlmrf.HLMRF`): then the driver never holds the terms.

Two ways of adding up the blocks' partial sums:

* **through the driver** (a model split by the driver): :meth:`BlockActor.step` takes the consensus
  values of the block's variables and returns its partial sums; the driver adds them.
* **among the workers** (shards): every actor also *owns* a contiguous range of the consensus
  variables. :meth:`BlockActor.step_push` runs the term half and sends each owner the partial sums of
  its range (an actor call, worker to worker); :meth:`BlockActor.update` adds what the owner received,
  takes the consensus step over its range and sends every block the new values of its variables in
  that range. The driver only sees scalars (partial norms, the stop test's residuals). The sends run
  as actor calls with ``separate_thread=False``: on the receiving worker's event loop, never queued
  behind its actor thread, so two phases never wait on each other (a worker may hold several blocks).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time

import numpy as np

from ..hlmrf import partition
from ..hlmrf._kernels import KIND_LEQ, KIND_SQUARED
from . import _shardfiles

__all__ = ["BlockActor"]

#: entries per piece of the piecewise updates of the float32 multiplier copies (bounds the temporaries)
_PIECE = 1 << 20


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


def _status_kib() -> dict:
    """``VmRSS`` and ``VmHWM`` of this process in bytes (``/proc/self/status``; zeros elsewhere)."""
    out = {"VmRSS": 0, "VmHWM": 0}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key = line.split(":", 1)[0]
                if key in out:
                    out[key] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return out


def _reset_peak() -> bool:
    """Reset this process's ``VmHWM`` to its current RSS (Linux: ``5`` into ``/proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class _Range:
    """The one pseudo-block of an owner's range (``partition.consensus_certificate`` reads its variables)."""

    def __init__(self, n: int):
        self.variables = np.arange(n)


class BlockActor:
    """One block of terms with its ADMM state, resident on a worker (a Dask actor).

    Parameters
    ----------
    block : tractable.hlmrf.partition.Block, optional
        A block split by the driver.
    shard : path or callable, optional
        Instead of ``block``: a model shard built here (the whole shard is one block, constraints
        with local copies): a shard folder, an ``.npz`` file of :meth:`HLMRF.save`, or a callable.
    compact : bool, default False
        Keep the exponential average of the multipliers and their snapshot in float32 (the shard
        runs: every multiplier vector gives a valid bound and a valid infeasibility test, so their
        precision changes no answer's validity; the driver-split runs keep float64, to reproduce
        ``hlmrf.solve(n_partitions=k)`` bit for bit).
    """

    def __init__(self, block=None, shard=None, compact: bool = False):
        self.info = {}
        self.compact = bool(compact)
        # a block built here from a shard: its own peak (a block scattered by the driver has arrived already)
        self._peak_reset = block is None and _reset_peak()
        before = _status_kib()
        if block is None and _shardfiles.is_shard_folder(shard):
            block, meta, counts = _shardfiles.read_block(shard)
            self.info = {
                "n_variables": int(meta["n_variables"]),
                "fixed": "set:" + meta["set_id"],
                "set_id": meta["set_id"],
                "counts": counts,
                "offset": 0.0,
                "cmax": float(meta["cmax"]),
                "has_constraints": bool(meta["n_constraints"]),
                "n_potentials": int(meta["n_potentials"]),
                "n_squared": int(meta["n_squared"]),
            }
            self._vectors = None
        elif block is None:
            model = _load_shard(shard)
            part = partition.split_terms(model, 1, strategy="contiguous", constraints="local")
            block = part.blocks[0]
            del model
            fv, fx = part.free, part.x_fixed
            sig = hashlib.sha1(np.ascontiguousarray(fv, dtype=np.int64).tobytes())
            sig.update(np.ascontiguousarray(fx, dtype=np.float64).tobytes())
            self.info = {
                "n_variables": int(part.x_fixed.size),
                "fixed": sig.hexdigest(),
                "counts": part.counts[block.variables],
                "offset": float(part.offset),
            }
            self._vectors = (part.free, part.x_fixed)
        self.block = block
        built = _status_kib()
        self.info.setdefault("cmax", None)
        if self.info["cmax"] is None:
            self.info["cmax"] = _constraint_norm(block)
        if "has_constraints" not in self.info:
            self.info.update(
                has_constraints=bool(np.any(block.kind >= KIND_LEQ)),
                n_potentials=int(np.count_nonzero(block.kind < KIND_LEQ)),
                n_squared=int(np.count_nonzero(block.kind == KIND_SQUARED)),
            )
        self.info.update(
            variables=block.variables,
            n_terms=int(block.n_terms),
            n_copies=int(block.n_copies),
            n_local=int(block.n_local),
            pid=os.getpid(),
            build={"rss_before": before["VmRSS"], "rss_after": built["VmRSS"], "peak": built["VmHWM"]},
            peak_reset=self._peak_reset,
        )
        self.x = np.zeros(block.n_copies)
        self.y = np.zeros(block.n_copies)
        avg = np.float32 if self.compact else np.float64
        self.y_avg = np.zeros(block.n_copies, avg)
        self.y_snap = None
        self.peers = None

    def describe(self, vectors: bool = True) -> dict:
        """What the driver needs to know of the block (shards: also the model's size and fixed values).

        ``vectors=False`` leaves out the vectors over the variables (the block's ``variables`` and
        ``counts``), which the runs that reduce among the workers never bring to the driver."""
        if vectors:
            return self.info
        return {k: v for k, v in self.info.items() if k not in ("variables", "counts")}

    def model_vectors(self):
        """``(free, x_fixed)`` of a model shard (``None`` for a shard folder: the driver reads its set)."""
        return self._vectors

    # ------------------------------------------------------------------ the driver-reduced iteration
    def start(self, z_local) -> int:
        """Start the run: ``x = z`` on every copy, ``y = 0`` (as :func:`partition.block_start`)."""
        self.x = np.asarray(z_local, dtype=np.float64)[self.block.idx]
        self.y = np.zeros(self.block.n_copies)
        self.y_avg = np.zeros(self.block.n_copies, self.y_avg.dtype)
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
        if self.y_avg.dtype == self.y.dtype:
            self.y_avg *= keep
            self.y_avg += (1.0 - keep) * self.y
            return 0
        for s in range(0, self.y.size, _PIECE):  # float32 copy: the same formula in float64, piece by piece
            a = self.y_avg[s : s + _PIECE]
            a[:] = keep * a.astype(np.float64) + (1.0 - keep) * self.y[s : s + _PIECE]
        return 0

    def snapshot(self) -> int:
        """Keep a copy of the multipliers (the driver's divergence test compares their growth)."""
        self.y_snap = self.y.astype(np.float32) if self.compact else self.y.copy()
        return 0

    def _direction(self, since_snapshot: bool) -> np.ndarray:
        return self.y - self.y_snap if since_snapshot and self.y_snap is not None else self.y

    def recession(self, z_local, since_snapshot: bool):
        """The block's share of the infeasibility measure of the multipliers' growth since the snapshot
        (or of the multipliers themselves): :func:`partition.block_certificate` with ``recession=True``."""
        return partition.block_certificate(self.block, self._direction(since_snapshot), z_local, recession=True)

    def memory(self) -> tuple[int, int]:
        """``(bytes held by the block's arrays and state, resident memory of this worker process)``."""
        import psutil  # a dependency of distributed

        b = self.block
        arrays = (b.indptr, b.idx, b.coef, b.const, b.weight, b.kind, b.variables, self.x, self.y)
        return int(sum(a.nbytes for a in arrays)), int(psutil.Process().memory_info().rss)

    def memory_report(self) -> dict:
        """Bytes by stage and kind: the block's term arrays, the solver state of its copies, the owner's
        vectors, this process's resident memory and its peak (``VmHWM``, reset when the actor was built
        where the kernel allows it), and the resident memory and peak around the block's construction."""
        b = self.block
        block = sum(a.nbytes for a in (b.indptr, b.idx, b.coef, b.const, b.weight, b.kind, b.variables, b.terms))
        state = sum(a.nbytes for a in (self.x, self.y, self.y_avg) if a is not None)
        state += 0 if self.y_snap is None else self.y_snap.nbytes
        local = sum(getattr(self, k).nbytes for k in ("zl", "counts") if getattr(self, k, None) is not None)
        owner = sum(
            a.nbytes for a in (getattr(self, k, None) for k in ("z", "z_old", "cnt", "z_best")) if a is not None
        ) + sum(p.nbytes for p in getattr(self, "layout", {}).values())
        now = _status_kib()
        return {
            "block": int(block),
            "state": int(state),
            "local": int(local),
            "owner": int(owner),
            "n_terms": int(b.n_terms),
            "n_copies": int(b.n_copies),
            "n_potentials": int(self.info["n_potentials"]),
            "rss": now["VmRSS"],
            "peak": now["VmHWM"],
            "build": self.info["build"],
            "peak_reset": self._peak_reset,
        }

    # ------------------------------------------------------------------ the reduction among the workers
    def connect(self, index: int, peers, bounds, timeout: float, constraints=None, slack_terms: int = 0) -> int:
        """Join the run's actors: ``peers[j]`` owns the consensus variables ``bounds[j]:bounds[j + 1]``.

        ``constraints``: the shard set's folder when it projects constraints in the consensus step
        (this owner's are read from it); ``slack_terms``: the terms and variables of the whole run,
        for the rounding slack of the owner's share of the certificate."""
        self.index, self.peers, self.timeout = int(index), list(peers), float(timeout)
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.cuts = np.searchsorted(self.block.variables, self.bounds)
        self.counts = self.info.pop("counts")
        self.zl = np.zeros(self.block.n_local)
        self.layout, self.layout_counts = {}, {}
        self.inbox = {}
        lo, hi = self.bounds[self.index], self.bounds[self.index + 1]
        n_owned = int(hi - lo)
        self.z = np.zeros(n_owned)
        self.z_old = np.zeros(n_owned)
        self.z_best = None
        self.cnt = None
        self.owner_constraints = constraints
        self.slack_terms = int(slack_terms)
        # consensus values received since the last step: a step waits for one part from each owner
        self.z_expected = sum(1 for _ in self._owners())
        self.z_count = 0
        self.z_ready = threading.Condition()
        return 0

    def _send(self, calls) -> None:
        """Wait for the acknowledgements of sends to peers (``timeout`` each)."""
        for fut in calls:
            fut.result(timeout=self.timeout)

    def _owners(self):
        """``(j, lo, hi)`` for every owner ``j`` of some of this block's variables (``lo:hi`` local)."""
        for j in range(len(self.peers)):
            lo, hi = int(self.cuts[j]), int(self.cuts[j + 1])
            if hi > lo:
                yield j, lo, hi

    def send_layout(self) -> int:
        """Tell each owner which of its variables this block holds, and their copy counts (once)."""
        v = self.block.variables
        calls = []
        for j, lo, hi in self._owners():
            pos = v[lo:hi] - self.bounds[j]
            pos = pos.astype(np.int32) if self.z.size < 2**31 and pos.size else pos
            calls.append(self.peers[j].receive_layout(self.index, pos, self.counts[lo:hi], separate_thread=False))
        self._send(calls)
        return 0

    def receive_layout(self, i: int, pos, counts, separate_thread=None) -> int:
        """(Owner) block ``i`` holds the owned variables ``pos`` with ``counts`` copies."""
        self.layout[int(i)] = np.asarray(pos)
        self.layout_counts[int(i)] = np.asarray(counts, dtype=np.float64)
        return 0

    def own(self) -> dict:
        """(Owner) the copy counts of the owned variables, from every block's layout, and the owned
        range's consensus step: a :class:`~tractable.hlmrf.partition.Partition` over the range with its
        consensus-step constraints (none unless the shard set has them)."""
        self.layout = dict(sorted(self.layout.items()))
        cnt = np.zeros(self.z.size)
        for i, pos in self.layout.items():
            cnt[pos] += self.layout_counts[i]
        self.layout_counts = {}
        self.cnt = cnt
        n = self.z.size
        if self.owner_constraints is not None:
            zc = _shardfiles.read_owner_constraints(self.owner_constraints, self.index, n)
        else:
            zc = (np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int8))
        self.range = partition.Partition(
            blocks=(_Range(n),),
            counts=cnt,
            zc_indptr=zc[0],
            zc_idx=zc[1],
            zc_coef=zc[2],
            zc_const=zc[3],
            zc_kind=zc[4],
            n_terms=self.slack_terms,
            n_copies=int(cnt.sum()),
            max_copies=0,  # the run's own term of the slack is the driver's (it knows the largest count)
            strategy="owner",
            cut_variables=0,
            cut_volume=0,
            free=np.zeros(0, np.int64),
            x_fixed=np.zeros(0),
            offset=0.0,
        )
        return {
            "max_copies": float(cnt.max(initial=0.0)),
            "n_owned": int(n),
            "n_senders": len(self.layout),
            "n_constraints": int(zc[3].size),
        }

    def seed(self, z_owned) -> int:
        """(Owner) set the owned consensus values and send each block its part."""
        self.z[:] = np.asarray(z_owned, dtype=np.float64)
        self._send_z(self.z)
        return 0

    def _send_z(self, z) -> None:
        self._send(
            [self.peers[i].receive_z(self.index, z[pos], separate_thread=False) for i, pos in self.layout.items()]
        )

    def receive_z(self, j: int, values, separate_thread=None) -> int:
        """(Block) the consensus values of this block's variables owned by ``j``."""
        self.zl[self.cuts[j] : self.cuts[j + 1]] = values
        with self.z_ready:
            self.z_count += 1
            self.z_ready.notify_all()
        return 0

    def _await_z(self) -> None:
        """(Block) wait until every owner of this block's variables has sent its new values (``timeout``)."""
        with self.z_ready:
            if not self.z_ready.wait_for(lambda: self.z_count >= self.z_expected, timeout=self.timeout):
                raise TimeoutError(
                    f"block {self.index} received {self.z_count} of the {self.z_expected} parts of its consensus "
                    f"values within timeout={self.timeout:g} s"
                )
            self.z_count = 0

    def begin(self) -> int:
        """(Block) start the run at the received consensus values: ``x = z`` on every copy, ``y = 0``."""
        np.take(self.zl, self.block.idx, out=self.x)
        self.y[:] = 0.0
        self.y_avg[:] = 0.0
        return 0

    def receive(self, i: int, values, separate_thread=None) -> int:
        """(Owner) block ``i``'s partial sums over the owned variables it holds."""
        self.inbox[int(i)] = values
        return 0

    def _push(self, values) -> None:
        """(Block) send each owner the entries of ``values`` (one per local variable) in its range."""
        self._send(
            [self.peers[j].receive(self.index, values[lo:hi], separate_thread=False) for j, lo, hi in self._owners()]
        )

    def _gather(self) -> np.ndarray:
        """(Owner) the received partial sums added up over the owned variables, in block order."""
        acc = np.zeros(self.z.size)
        for i, pos in self.layout.items():
            acc[pos] += self.inbox.pop(i)
        if self.inbox:  # pragma: no cover - a block sent to an owner it has no variables of
            raise RuntimeError(f"owner {self.index} received sums from blocks {sorted(self.inbox)} it does not serve")
        return acc

    def step_push(self, rho: float, alpha: float):
        """(Block) one term half at the received consensus values; the partial sums go to their owners.

        Returns ``(sums, seconds of compute)``: the three partial squared norms of
        :func:`partition.block_step`."""
        self._await_z()
        t0 = time.perf_counter()
        acc, sums = partition.block_step(self.block, self.x, self.y, self.zl, rho, alpha)
        dt = time.perf_counter() - t0
        self._push(acc)
        return sums, dt

    def iterate(self, rho: float, alpha: float, update: bool):
        """(Owner, then block) the consensus half of the previous iteration (when ``update``), then the
        term half of the next one as soon as every owner's new values are here: one call from the
        driver per iteration. Only when every worker holds one actor (the wait for the other owners'
        values would otherwise hold the worker's one actor thread that they need) and no stop test
        runs between the halves (no constraint keeps local copies).

        Returns ``(update's (dual, znorm, seconds) or None, sums, seconds of the term half)``."""
        up = self.update(rho) if update else None
        sums, dt = self.step_push(rho, alpha)
        return up, sums, dt

    def update(self, rho: float) -> tuple[float, float, float]:
        """(Owner) the consensus half over the owned variables (:func:`partition.consensus_step` on the
        owned range: the average of the copies, clipped to [0, 1], projected onto the range's
        consensus-step constraints); the new values go to the blocks. Returns the partial sums of the
        dual residual and of ``||z||`` (both weighted by the copy counts) and the seconds of compute."""
        t0 = time.perf_counter()
        acc = self._gather()
        np.copyto(self.z_old, self.z)
        stats = np.zeros(5)
        partition.consensus_step(self.range, acc, np.zeros(3), self.z, stats, rho=rho, stop=False)
        # weighted squared norms by multiply and sum (np.dot would go to BLAS, whose threads stall on a busy
        # machine: 10-20 ms for 10^5 values, measured)
        dz = self.z - self.z_old
        dz *= dz
        dz *= self.cnt
        dual = float(dz.sum())
        np.multiply(self.z, self.z, out=dz)
        dz *= self.cnt
        znorm = float(dz.sum())
        dt = time.perf_counter() - t0
        self._send_z(self.z)
        return dual, znorm, dt

    def certificate_push(self, averaged: bool = False, recession: bool = False, since_snapshot: bool = False):
        """(Block) the block's share of the certified bound at the current consensus values (or of the
        infeasibility measure with ``recession``); the per-variable sums of the multipliers go to the
        owners, the six partial sums (:func:`partition.block_certificate`) to the driver."""
        if recession:
            y = self._direction(since_snapshot)
        else:
            y = self.y_avg if averaged else self.y
        yl, part = partition.block_certificate(self.block, y, self.zl, recession=recession)
        self._push(yl)
        return part

    def certificate_owned(self, recession: bool = False) -> tuple[float, float, float]:
        """(Owner) the owned range's share of :func:`tractable.hlmrf.bound.consensus_certificate`: the
        per-variable sums of the multipliers added up in block order, the dual values of the range's
        consensus-step constraints, their rounding slack (with the run's number of terms, so that the
        shares add up to at least the whole run's slack) and their largest violation. Returns
        ``(bound share, 0, violation)``."""
        yv = self._gather()
        return partition.consensus_certificate(self.range, [(yv, np.zeros(6))], self.z, recession=recession)

    def keep_best(self) -> int:
        """(Owner) remember the current owned values as the best certified point so far."""
        if self.z_best is None:
            self.z_best = self.z.copy()
        else:
            np.copyto(self.z_best, self.z)
        return 0

    def owned(self, best: bool = False) -> np.ndarray:
        """(Owner) the owned consensus values: current, or the best kept (:meth:`keep_best`)."""
        return self.z_best if best else self.z
