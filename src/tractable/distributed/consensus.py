"""Consensus ADMM for hinge-loss MRFs across the workers of a Dask cluster.

The ADMM iteration of :func:`tractable.hlmrf.solve` splits into a term half (multiplier update,
exact local updates, per-variable partial sums) that touches only one block of terms, and a
consensus half over the variables (:mod:`tractable.hlmrf.partition`). Here the blocks live on the
workers as Dask actors (:class:`~tractable.distributed._block.BlockActor`): each block's term
arrays, local copies and multipliers stay on its worker for the whole run. One iteration is

1. **broadcast**: the driver sends each block the consensus values ``z`` of the variables it touches
   (``n_local`` floats; nothing else, term data never moves again);
2. every worker runs the block's term half (``partition.block_step``) on its own;
3. **reduce**: each block returns one partial sum per variable it touches plus three partial norms;
   the driver adds them (``partition.combine``) and runs the consensus half
   (``partition.consensus_step``: new ``z``, residuals, stop test).

Every iteration needs the new consensus, so iterations are not batched; the traffic per iteration is
``2 * 8 * sum_b n_local(b)`` bytes, i.e. the variables plus the cut (a variable with copies in ``k``
blocks travels ``k`` times). :func:`tractable.hlmrf.partition.split_terms`' ``"bfs"`` order keeps the
cut small (``strategy="random"`` is the baseline). For the same partition the iterates are those of
``hlmrf.solve(model, n_partitions=k)`` bit for bit: the same kernels run in the same order of additions.

Every wait on a worker has a timeout; a worker that leaves the cluster during the run (or stops
answering) ends the run with a :class:`WorkerLostError` that names it, and the actors are released in
every case. The certified lower bound and the gap are computed the same way, block by block.

Out of core: ``solve(HLMRFShards([...]), client)`` builds every block on a worker from its own shard
(a shard folder of :meth:`tractable.psl.Model.ground_shards`, an ``.npz`` file or a callable), and the
workers add up the partial sums among themselves (each owns a range of the variables;
:mod:`tractable.distributed._sharded`), so the driver holds only vectors over the variables and
exchanges a few numbers per iteration.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass

import numpy as np

from .._results import CONVERGED, frozen_array, stop_message, warn_stopped
from .._validate import check_choice, check_positive
from ..hlmrf import HLMRF, MPEResult, _driver, partition
from ..hlmrf import admm as _admm
from ..hlmrf.bound import gap
from ._block import BlockActor
from ._workers import check_client, ensure_warm

__all__ = ["HLMRFShards", "WorkerLostError", "solve"]


class WorkerLostError(RuntimeError):
    """A worker holding a block of the run left the cluster or stopped answering."""


@dataclass(frozen=True)
class HLMRFShards:
    """A hinge-loss MRF given as shards that the workers build themselves (out-of-core models).

    Each source is one of

    * a **shard folder** of a shard set (written term by term by
      :meth:`tractable.psl.Model.ground_shards`, or by ``ShardSetWriter``; see
      :meth:`from_directory`): the block's arrays, read on the worker straight into their final
      place, with the variables' numbering and fixed values in the set's folder;
    * a path to an ``.npz`` file written by :meth:`tractable.hlmrf.HLMRF.save`;
    * a callable without arguments that returns an :class:`~tractable.hlmrf.HLMRF` (e.g. a function
      that grounds one slice of a PSL program).

    Every shard is a model over the *same* variables (same ``n_variables``, same fixed variables and
    values; the shards of one set share its id) holding a part of the potentials and constraints;
    the model is their union. A shard is one block of the run; paths must be readable on the
    workers (and, for shard folders, the set's folder on the driver).

    Parameters
    ----------
    sources : sequence of path or callable
    """

    sources: tuple

    def __init__(self, sources):
        if isinstance(sources, (str, os.PathLike)) or callable(sources):
            sources = [sources]
        try:
            sources = tuple(sources)
        except TypeError as err:
            raise TypeError(
                f"`sources` must be a sequence of paths or callables; got {type(sources).__name__}."
            ) from err
        if not sources:
            raise ValueError("`sources` must name at least one shard; got an empty sequence.")
        for i, s in enumerate(sources):
            if not (isinstance(s, (str, os.PathLike)) or callable(s)):
                raise TypeError(
                    f"`sources`[{i}] must be a path or a callable returning an HLMRF; got {type(s).__name__}."
                )
        object.__setattr__(self, "sources", sources)

    @classmethod
    def from_directory(cls, directory) -> HLMRFShards:
        """The shards of a shard set (the folder of :meth:`tractable.psl.Model.ground_shards`).

        Raises
        ------
        ValueError
            ``directory`` holds no shard set of this version (its ``manifest.json``).
        """
        from ._shardfiles import shard_paths

        return cls(shard_paths(directory))

    def __len__(self) -> int:
        return len(self.sources)


@dataclass(frozen=True)
class _Remote:
    """The driver's view of a block held by an actor: its variables and where it lives."""

    variables: np.ndarray
    worker: str
    index: int


def solve(
    model,
    client,
    *,
    n_partitions: int | None = None,
    strategy: str = "bfs",
    rng=None,
    timeout: float = 300.0,
    rho: float | None = None,
    eps_abs: float | None = None,
    eps_rel: float | None = None,
    max_iter: int | None = None,
    x0=None,
    time_limit: float | None = None,
    progress: bool | None = None,
    adaptive_rho: bool | None = None,
    over_relaxation: float | None = None,
    constraints: str | None = None,
    gap_tol: float | None = None,
) -> MPEResult:
    """MPE of a hinge-loss MRF by consensus ADMM with its terms spread over a Dask cluster.

    Parameters
    ----------
    model : HLMRF or HLMRFShards
        The model, in the driver's memory (it is split here and each block is sent once), or as
        shards that the workers build (out of core; one block per shard; the consensus is added up
        among the workers, and a run stopped by ``time_limit`` or ``max_iter`` returns the best
        certified point met).
    client : dask.distributed.Client
        Its workers must run the driver's version of ``tractable`` (checked first).
    n_partitions : int, optional
        Number of blocks (default: one per worker; for shards, the number of shards, the only
        value accepted). Blocks are placed on the workers round robin.
    strategy : {"bfs", "contiguous", "random"}, default "bfs"
        How :func:`tractable.hlmrf.partition.split_terms` orders the terms before cutting them into
        blocks (``"bfs"`` keeps the shared variables few). Not for shards (another value raises
        ``ValueError``).
    rng : None, int or numpy.random.Generator
        Seed of ``strategy="random"``; with another strategy, or with shards, it must be None
        (``ValueError``).
    timeout : float, default 300
        Seconds to wait for any one exchange with the workers before the run stops with a
        :class:`WorkerLostError`.
    rho, eps_abs, eps_rel, max_iter, x0, time_limit, progress, adaptive_rho, over_relaxation, constraints, gap_tol
        As in :func:`tractable.hlmrf.solve` with ``method="admm"`` (same defaults, same checks).
        Shards keep every constraint with local copies (``constraints`` must be None or ``"local"``).

    Returns
    -------
    MPEResult
        As :func:`tractable.hlmrf.solve` (``method="admm"``): the same iterates as
        ``hlmrf.solve(model, n_partitions=n_partitions)`` for the same partition, and the certified
        ``lower_bound`` / ``gap``.

    Raises
    ------
    TypeError
        ``model`` is neither an HLMRF nor HLMRFShards, or ``client`` is not a Dask client.
    ValueError
        Workers without the driver's ``tractable``; ``n_partitions`` larger than the number of terms
        (or, for shards, different from the number of shards); shards over different variables;
        ``strategy`` or ``rng`` given where they are not used; an option out of range.
    WorkerLostError
        A worker holding a block left the cluster or did not answer within ``timeout``.

    Warns
    -----
    ConvergenceWarning
        When the result has ``converged=False``.
    """
    result, _ = _run(
        model,
        client,
        n_partitions=n_partitions,
        strategy=strategy,
        rng=rng,
        timeout=timeout,
        options=dict(
            rho=rho,
            eps_abs=eps_abs,
            eps_rel=eps_rel,
            max_iter=max_iter,
            x0=x0,
            time_limit=time_limit,
            progress=progress,
            adaptive_rho=adaptive_rho,
            over_relaxation=over_relaxation,
            constraints=constraints,
            gap_tol=gap_tol,
        ),
    )
    if not result.converged:
        warn_stopped(result.message)
    return result


def _validated_options(model_for_checks, options) -> dict:
    """The ADMM options through ``hlmrf.solve``'s own validation (same defaults, same messages)."""
    given = {k: None for k in _admm._OPTIONS["admm"]}
    given.update(options)
    _, kwargs = _admm._validate_solve(model_for_checks, "admm", given)
    return kwargs


def _run(model, client, *, n_partitions, strategy, rng, timeout, options):
    """:func:`solve`, also returning what the benchmark reports (None when no block ran): per iteration
    ``round`` (seconds from sending ``z`` to the last partial sum), ``compute`` (the slowest block's
    kernel seconds) and ``consensus`` (the driver's combine + consensus step); ``n_local`` (values sent
    each way per iteration), ``memory`` (per block: bytes of its arrays, RSS of its worker),
    ``cut_variables`` and ``cut_volume``."""
    t0 = time.perf_counter()
    if not isinstance(model, (HLMRF, HLMRFShards)):
        raise TypeError(f"`model` must be an HLMRF or HLMRFShards; got {type(model).__name__}.")
    client = check_client(client)
    timeout = check_positive(timeout, "timeout")
    strategy = check_choice(strategy, "strategy", partition.STRATEGIES)
    sharded = isinstance(model, HLMRFShards)
    _check_split_options(strategy, rng, sharded)
    workers = sorted(client.scheduler_info()["workers"])
    if sharded:
        from ._sharded import run_shards

        return run_shards(_Driver(client, workers, timeout, t0), model, n_partitions, options)
    opts = _validated_options(model, options)
    n_terms = model.n_potentials + model.n_constraints
    if n_partitions is None:
        n_partitions = max(1, min(len(workers), n_terms))
    if not isinstance(n_partitions, (int, np.integer)) or isinstance(n_partitions, bool) or n_partitions < 1:
        raise ValueError(f"`n_partitions` must be a positive int; got {n_partitions!r}.")
    if n_terms > 0 and n_partitions > n_terms:
        raise ValueError(
            f"`n_partitions` must be at most the number of terms ({n_terms} potentials and constraints); "
            f"got {n_partitions}."
        )
    comp = model._compile()
    if opts["rho"] is None:
        opts["rho"] = _admm._default_rho(comp)
    why, opts["cmax"] = _admm._infeasibility(comp)
    if why is not None:
        return _driver.infeasible_result(comp, opts["rho"], why, t0), None
    if comp.idx.size == 0:
        return _no_terms(model, comp, opts, t0), None
    return _Driver(client, workers, timeout, t0).run(model, n_partitions, strategy, rng, opts)


def _check_split_options(strategy: str, rng, sharded: bool) -> None:
    """Reject the split options that the run would not use: ``strategy`` and ``rng`` for shards (each
    shard is one block, nothing is split), ``rng`` unless ``strategy="random"`` (the seed of its order)."""
    if sharded and strategy != "bfs":
        raise ValueError(
            f"`strategy` must be 'bfs' (the default) for HLMRFShards: each shard is one block and no term "
            f"order is used; got {strategy!r}."
        )
    if sharded and rng is not None:
        raise ValueError(
            f"`rng` must be None for HLMRFShards: each shard is one block and nothing is split at random; got {rng!r}."
        )
    if rng is not None and strategy != "random":
        raise ValueError(
            f"`rng` must be None unless `strategy`='random' (it seeds the random term order); got {rng!r} with "
            f"`strategy`={strategy!r}."
        )


def _no_terms(model, comp, opts, t0) -> MPEResult:
    """A model whose potentials and constraints all involve fixed variables only: nothing to send."""
    full = comp.x_fixed.copy()
    x0 = opts["x0"]
    full[comp.free] = 0.0 if x0 is None else np.clip(x0[comp.free], 0.0, 1.0)
    objective = model.objective(full)
    viol = model.max_violation(full)
    return MPEResult(
        x=frozen_array(full),
        objective=objective,
        converged=True,
        n_iter=0,
        primal_residual=0.0,
        dual_residual=0.0,
        max_violation=viol,
        status=CONVERGED,
        time=time.perf_counter() - t0,
        method="admm",
        message=stop_message(CONVERGED, "admm", 0, "no term has a free variable"),
        rho=float(opts["rho"]),
        lower_bound=float(comp.offset),
        gap=gap(objective, comp.offset, viol),
    )


#: seconds between two looks for a lost worker while a call is pending
_POLL = 2.0


class _Driver:
    """One distributed run: places the actors, iterates, always releases them."""

    def __init__(self, client, workers, timeout, t0):
        self.client = client
        self.workers = workers
        self.timeout = timeout
        self.t0 = t0
        self.futures = []
        self.actors = []
        self.remote = []

    # ------------------------------------------------------------------ exchanges
    def _wait(self, calls, what):
        """Results of actor calls, in order; a lost or silent worker raises WorkerLostError.

        A call that has not answered after ``_POLL`` seconds makes the driver look for a worker of the
        run that left the cluster (a call to a live worker may wait on a lost peer), so a loss is
        reported within seconds, not after ``timeout``."""
        out = []
        for i, fut in enumerate(calls):
            try:
                deadline = time.perf_counter() + self.timeout
                while True:
                    left = deadline - time.perf_counter()
                    try:
                        out.append(fut.result(timeout=max(min(_POLL, left), 1e-3)))
                        break
                    except TimeoutError:
                        if left <= _POLL or self._lost(i) is not None:
                            raise
            except Exception as err:  # noqa: BLE001 - classified below, re-raised otherwise
                lost = self._lost(i)
                if lost is None and (
                    not isinstance(err, (TimeoutError, OSError)) or getattr(err, "filename", None) is not None
                ):  # an error of the block itself (a shard file not found names its file): not a lost worker
                    raise
                addr = lost or self.remote[i].worker
                raise WorkerLostError(
                    f"worker {addr} (holding {self._holding(addr) if lost else f'block {i}'}) was lost during {what}"
                    f"{'' if lost else f' (no answer within timeout={self.timeout:g} s)'}; the run was stopped "
                    "and its other blocks released."
                ) from err
        return out

    def _lost(self, i):
        """The address of a worker of the run that has left the cluster (block ``i``'s first), else None.

        In a run that reduces among the workers, a call to block ``i`` also waits on its peers, so a
        lost peer is named when block ``i``'s own worker is still there."""
        mine = [self.remote[i].worker] if i < len(self.remote) else []
        others = [r.worker for r in self.remote if r.worker not in mine]
        try:
            alive = set(self.client.scheduler_info()["workers"])
        except Exception:  # noqa: BLE001 - the scheduler itself is gone: report the block's worker
            return mine[0] if mine else None
        for addr in mine + others:
            if addr not in alive:
                return addr
        return None

    def _holding(self, addr) -> str:
        """``"block i"`` (or ``"blocks i, j"``) held by the worker ``addr``."""
        held = [str(r.index) for r in self.remote if r.worker == addr]
        return ("block " if len(held) == 1 else "blocks ") + ", ".join(held) if held else "no block"

    def release(self):
        futures, self.futures, self.actors = self.futures, [], []
        if futures:
            try:
                self.client.cancel(futures)
            except Exception:  # noqa: BLE001 - the cluster may be gone; nothing left to free then
                pass

    # ------------------------------------------------------------------ placement
    def _place(self, model, n_partitions, strategy, rng, opts):
        """Split the model, send each block to its worker once and build the actors; return the
        driver-side Partition (blocks replaced by _Remote views)."""
        client = self.client
        part = partition.split_terms(model, n_partitions, strategy=strategy, constraints=opts["constraints"], rng=rng)
        where = [self.workers[i % len(self.workers)] for i in range(n_partitions)]
        actor_futures = []
        for i in range(n_partitions):
            self.remote.append(_Remote(variables=np.zeros(0, np.int64), worker=where[i], index=i))
            # the block goes straight to its worker, once; the driver keeps no reference to it
            try:
                [data] = client.scatter([part.blocks[i]], workers=[where[i]], direct=True, hash=False)
            except (OSError, TimeoutError) as err:  # the worker left before its block arrived
                lost = self._lost(i)
                if lost is None:
                    raise
                raise WorkerLostError(
                    f"worker {lost} (holding {self._holding(lost)}) was lost during the placement of the blocks; "
                    "the run was stopped and its other blocks released."
                ) from err
            fut = client.submit(BlockActor, data, actor=True, workers=[where[i]], pure=False)
            self.futures.append(data)
            self.futures.append(fut)
            actor_futures.append(_Result(fut))
        self.actors = self._wait(actor_futures, "the placement of the blocks")
        infos = self._wait([a.describe() for a in self.actors], "the placement of the blocks")
        self.remote = [_Remote(variables=info["variables"], worker=where[i], index=i) for i, info in enumerate(infos)]
        self.infos = infos
        return dataclasses.replace(part, blocks=tuple(self.remote))

    # ------------------------------------------------------------------ the run
    def run(self, model, n_partitions, strategy, rng, opts):
        try:
            return self._run(model, n_partitions, strategy, rng, opts)
        finally:
            self.release()

    def _run(self, model, n_partitions, strategy, rng, opts):
        """Place the blocks and run ``hlmrf.solve``'s driver loop (``hlmrf._driver.run``) on them."""
        ensure_warm(self.client)
        part = self._place(model, n_partitions, strategy, rng, opts)
        x0 = opts["x0"]
        z = np.zeros(part.n) if x0 is None else np.clip(x0[part.free], 0.0, 1.0)
        ex = _Actors(self, part, z, model=model, opts=opts)
        n_workers = len({r.worker for r in self.remote})
        result = _driver.run(
            ex,
            **{k: opts[k] for k in _RUN_OPTIONS},
            cmax=opts["cmax"],
            zcons=part.consensus_constraints(),
            t0=self.t0,
            desc="ADMM (dask)",
            note=f"; {len(self.remote)} blocks on {n_workers} workers",
        )
        return result, ex.timings


#: the options of ``_driver.run`` taken as validated
_RUN_OPTIONS = ("rho", "alpha", "eps_abs", "eps_rel", "max_iter", "time_limit", "progress", "adaptive_rho", "gap_tol")


class _Actors:
    """The executor of ``hlmrf._driver.run`` whose blocks are the run's actors: each call goes to every
    block at once and waits (``_Driver._wait``) for all of them; records the per-iteration timings."""

    empty = False

    def __init__(self, driver, part, z, *, model, opts):
        self.driver, self.part, self.z, self.model = driver, part, z, model
        self.alpha, self.eps_abs, self.eps_rel = opts["alpha"], opts["eps_abs"], opts["eps_rel"]
        self.actors, self.blocks = driver.actors, part.blocks
        # constraints with local copies: feasible only in the limit (as in hlmrf.solve)
        self.watch = any(info["has_constraints"] for info in driver.infos)
        self.stats = _driver._new_stats()
        self.n_iter = 0
        driver._wait([a.start(z[b.variables]) for a, b in self._pairs()], "the start of the run")
        n_local = int(sum(b.variables.size for b in self.blocks))
        self.timings = {"round": [], "compute": [], "consensus": [], "n_local": n_local}
        self.timings["memory"] = driver._wait([a.memory() for a in self.actors], "a memory report")
        self.timings["cut_variables"], self.timings["cut_volume"] = part.cut_variables, part.cut_volume

    def _pairs(self):
        return zip(self.actors, self.blocks)

    def step(self, k: int, rho: float) -> int:
        part, z, stats, timings = self.part, self.z, self.stats, self.timings
        for it in range(k):
            t_a = time.perf_counter()
            outs = self.driver._wait(
                [a.step(z[b.variables], rho, self.alpha) for a, b in self._pairs()], f"iteration {self.n_iter + 1}"
            )
            t_b = time.perf_counter()
            acc, sums = partition.combine(part, [(o[0], o[1]) for o in outs])
            stop = partition.consensus_step(
                part, acc, sums, z, stats, rho=rho, eps_abs=self.eps_abs, eps_rel=self.eps_rel, stop=self.watch
            )
            timings["round"].append(t_b - t_a)
            timings["compute"].append(max(o[2] for o in outs))
            timings["consensus"].append(time.perf_counter() - t_b)
            if stop:
                return it
            self.n_iter += 1
        return k

    def certify(self, averaged: bool = False):
        calls = [a.certificate(self.z[b.variables], averaged) for a, b in self._pairs()]
        return partition.consensus_certificate(self.part, self.driver._wait(calls, "the bound"), self.z)

    def average(self) -> None:
        self.driver._wait([a.average(_driver._AVG_KEEP) for a in self.actors], "the average of the multipliers")

    def snapshot(self) -> None:
        self.driver._wait([a.snapshot() for a in self.actors], "a snapshot")

    def recession(self, since_snapshot: bool) -> float:
        calls = [a.recession(self.z[b.variables], since_snapshot) for a, b in self._pairs()]
        outs = self.driver._wait(calls, "the divergence test")
        return partition.consensus_certificate(self.part, outs, self.z, recession=True)[0]

    def answer(self, cert):
        full = self.part.full(self.z)
        # the driver holds the model: the objective exactly as hlmrf.solve computes it
        return full, self.model.objective(full), self.model.max_violation(full)


class _Result:
    """A Dask future seen through the ``result(timeout=...)`` interface of actor futures."""

    def __init__(self, future):
        self.future = future

    def result(self, timeout=None):
        return self.future.result(timeout=timeout)
