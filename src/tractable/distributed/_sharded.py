"""Consensus ADMM over shards that the workers build, with the reduction among the workers.

The driver of :func:`tractable.distributed.solve` for :class:`~tractable.distributed.HLMRFShards`.
Each shard becomes one :class:`~tractable.distributed._block.BlockActor`, built on its worker from the
shard's files (nothing of the terms passes through the driver or the scheduler). Every actor also
owns a contiguous range of the consensus variables (``bounds``, equal sizes). One iteration is two
rounds of calls from the driver, each answered with a few numbers:

1. ``step_push``: every block runs its term half (``partition.block_step``) at the consensus values
   it holds, and sends each owner the partial sums of the variables of its range (worker to worker);
   the driver receives the three partial squared norms of each block and runs the stop test of
   ``partition.consensus_step`` on their sum;
2. ``update`` (unless the stop test holds): every owner adds the partial sums it received, in block
   order (the additions of ``partition.combine``), divides by the copy counts, clips to [0, 1], and
   sends each block the new values of its variables in the range; the driver receives the partial
   sums of the dual residual and of ``||z||``.

So the driver holds vectors over the variables only (the model's fixed values and numbering, and
the answer at the end), and the traffic per iteration, ``2 * 8 * sum_b n_local(b)`` bytes, flows
between the workers: each worker sends and receives its own share. The certified bound is computed
the same way (the blocks' parts of :func:`tractable.hlmrf.bound.block_certificate`, the per-variable
sums of the multipliers added by their owners), and the stop rules are ``hlmrf.solve``'s
(:func:`tractable.hlmrf._driver.run`). A run stopped by ``time_limit`` or ``max_iter`` returns the best
certified point met at the gap checks when it is better than the last one.
"""

from __future__ import annotations

import dataclasses
import os
import time

import numpy as np

from .._results import MAX_ITER_REACHED, TIME_LIMIT_REACHED, frozen_array, stop_message
from ..hlmrf import HLMRF, MPEResult, _driver
from ..hlmrf import admm as _admm
from ..hlmrf.bound import FEASIBILITY_TOL, gap
from . import _shardfiles
from ._block import BlockActor
from ._workers import ensure_warm

__all__ = ["run_shards"]

#: unit roundoff used by the certificate's rounding slack (as in ``hlmrf.bound.consensus_certificate``)
_U = 2.3e-16


def run_shards(driver, shards, n_partitions, options):
    """Solve ``shards`` (HLMRFShards) on ``driver``'s client; returns ``(MPEResult, timings)``."""
    if options.get("constraints") not in (None, "local"):
        raise ValueError(
            f"`constraints` must be 'local' for HLMRFShards (every shard keeps its constraints); "
            f"got {options['constraints']!r}."
        )
    if n_partitions is not None and n_partitions != len(shards):
        raise ValueError(f"`n_partitions` must equal the number of shards ({len(shards)}); got {n_partitions}.")
    options = dict(options)
    x0 = options.pop("x0", None)
    opts = _admm._validate_solve(
        HLMRF(1), "admm", {**{k: None for k in _admm._OPTIONS["admm"]}, **options, "constraints": "local"}
    )[1]
    try:
        return _Run(driver, shards, opts, x0).run()
    finally:
        driver.release()


class _Run:
    def __init__(self, driver, shards, opts, x0):
        self.d, self.shards, self.opts, self.x0 = driver, shards, opts, x0

    def run(self):
        d, opts = self.d, self.opts
        ensure_warm(d.client, shards=True)
        t_place = time.perf_counter()
        infos = self._place()
        free, x_fixed = self._vectors(infos)
        n = free.size
        n_copies = sum(info["n_copies"] for info in infos)
        n_pot = sum(info["n_potentials"] for info in infos)
        n_sq = sum(info["n_squared"] for info in infos)
        if opts["rho"] is None:  # the rule of hlmrf.solve's default rho, over all shards
            opts["rho"] = 0.25 if 2 * n_sq > n_pot else 1.0
        x0 = self.x0
        if x0 is not None:
            from .._validate import as_float_array

            x0 = as_float_array(x0, "x0", ndim=1, allow_neginf=False)
            if x0.shape != (x_fixed.size,):
                raise ValueError(f"`x0` must have shape ({x_fixed.size},); got {x0.shape}.")
        z0 = np.zeros(n) if x0 is None else np.clip(x0[free], 0.0, 1.0)
        offset = float(sum(info["offset"] for info in infos)) + self.set_offset
        if n_copies == 0 and self.constraints is None:
            return self._no_terms(free, x_fixed, z0, offset, infos), None
        ex = _Owners(d, infos, free, x_fixed, z0, offset, n_copies, opts, self.bounds, self.constraints)
        setup = time.perf_counter() - t_place
        n_workers = len({r.worker for r in d.remote})
        result = _driver.run(
            ex,
            **{k: opts[k] for k in _driver_options()},
            cmax=max(self.con_cmax, *(info["cmax"] for info in infos)),
            zcons=_no_constraints(),
            t0=d.t0,
            desc="ADMM (dask, shards)",
            note=f"; {len(d.remote)} shards on {n_workers} workers, sums reduced among the workers",
        )
        result = ex.best_instead(result)
        ex.timings["setup"] = setup
        return result, ex.timings

    def _place(self):
        d = self.d
        client = d.client
        sources = self.shards.sources
        where = [d.workers[i % len(d.workers)] for i in range(len(sources))]
        futures = []
        for i, src in enumerate(sources):
            fut = client.submit(
                BlockActor, shard=_portable(src), compact=True, actor=True, workers=[where[i]], pure=False
            )
            d.futures.append(fut)
            futures.append(_Result(fut))
            d.remote.append(_RemoteInfo(worker=where[i], index=i))
        d.actors = d._wait(futures, "the placement of the shards")
        infos = d._wait([a.describe(False) for a in d.actors], "the placement of the shards")
        first = infos[0]
        for i, info in enumerate(infos[1:], start=1):
            if info["n_variables"] != first["n_variables"] or info["fixed"] != first["fixed"]:
                raise ValueError(
                    f"`model` shard {i} has other variables than shard 0 (n_variables {info['n_variables']} vs "
                    f"{first['n_variables']}, or other fixed variables); every shard must be over the same variables."
                )
        return infos

    def _vectors(self, infos):
        """``(free, x_fixed)`` of the shards' model: read from the shard set's folder, or from shard 0.

        For a shard set also sets the owners' ``bounds``, the folder of the consensus-step constraints
        (when the set has them) and the set's offset and constraint norm."""
        self.set_offset, self.bounds, self.constraints, self.con_cmax = 0.0, None, None, 0.0
        if infos[0].get("set_id"):
            folder = os.path.dirname(os.path.abspath(os.fspath(self.shards.sources[0])))
            manifest = _shardfiles.read_manifest(folder)
            if manifest["set_id"] != infos[0]["set_id"]:
                raise ValueError(
                    f"`model`: the shard set in {folder!r} changed during the run (another set id); run again."
                )
            self.set_offset = float(manifest.get("offset", 0.0))
            free, x_fixed, bounds = _shardfiles.read_variables(folder)
            if manifest.get("constraints") == "consensus":
                # the owners' ranges and constraints are the set's: every shard of it, in order
                expected = _shardfiles.shard_paths(folder)
                given = [os.path.abspath(os.fspath(src)) for src in self.shards.sources]
                if given != expected:
                    raise ValueError(
                        f"`model` must list every shard of the set in {folder!r}, in order "
                        f"(HLMRFShards.from_directory): its constraints are projected by the shards' owners."
                    )
                self.bounds, self.constraints = bounds, folder
                self.con_cmax = float(manifest.get("constraint_cmax", 0.0))
            return free, x_fixed
        return self.d._wait([self.d.actors[0].model_vectors()], "the placement of the shards")[0]

    def _no_terms(self, free, x_fixed, z0, offset, infos) -> MPEResult:
        full = x_fixed.copy()
        full[free] = z0
        return MPEResult(
            x=frozen_array(full),
            objective=offset,
            converged=True,
            n_iter=0,
            primal_residual=0.0,
            dual_residual=0.0,
            max_violation=float(np.max(np.maximum(-full, full - 1.0), initial=0.0)),
            status="converged",
            time=time.perf_counter() - self.d.t0,
            method="admm",
            message=stop_message("converged", "admm", 0, "no term has a free variable"),
            rho=float(self.opts["rho"]),
            lower_bound=offset,
            gap=0.0,
        )


def _driver_options():
    return ("rho", "alpha", "eps_abs", "eps_rel", "max_iter", "time_limit", "progress", "adaptive_rho", "gap_tol")


def _no_constraints() -> tuple:
    return (np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int8))


def _portable(source):
    """A shard source as the workers read it: paths as absolute strings (the workers' working folder
    may differ), callables as they are."""
    return os.path.abspath(os.fspath(source)) if isinstance(source, (str, os.PathLike)) else source


@dataclasses.dataclass(frozen=True)
class _RemoteInfo:
    worker: str
    index: int


class _Result:
    """A Dask future seen through the ``result(timeout=...)`` interface of actor futures."""

    def __init__(self, future):
        self.future = future

    def result(self, timeout=None):
        return self.future.result(timeout=timeout)


class _Owners:
    """The executor of ``hlmrf._driver.run`` whose blocks are actors that reduce among themselves
    (module docstring); records per-iteration timings for the benchmark."""

    empty = False

    def __init__(self, driver, infos, free, x_fixed, z0, offset, n_copies, opts, bounds=None, constraints=None):
        self.d = driver
        self.actors = driver.actors
        self.free, self.x_fixed, self.offset = free, x_fixed, offset
        self.alpha, self.eps_abs, self.eps_rel = opts["alpha"], opts["eps_abs"], opts["eps_rel"]
        self.n = free.size
        self.n_copies = int(n_copies)
        self.n_terms = int(sum(info["n_terms"] for info in infos))
        self.watch = any(info["has_constraints"] for info in infos)
        self.sqrt_p = np.sqrt(self.n_copies)
        # one call per iteration needs one actor per worker, and no stop test between the halves
        self.pipelined = not self.watch and len({r.worker for r in driver.remote}) == len(self.actors)
        self.stats = _driver._new_stats()
        self.z = np.zeros(0)  # the consensus values stay with their owners (no consensus-step constraints)
        self.best = None  # (objective, violation) of the best certified point kept by the owners
        self.n_iter = 0
        w = len(self.actors)
        self.bounds = bounds if bounds is not None else (np.arange(w + 1, dtype=np.int64) * self.n) // w
        t0 = time.perf_counter()
        wait = self.d._wait
        slack = self.n_terms + self.n
        wait(
            [
                a.connect(i, self.actors, self.bounds, driver.timeout, constraints, slack)
                for i, a in enumerate(self.actors)
            ],
            "the setup",
        )
        wait([a.send_layout() for a in self.actors], "the setup")
        owned = wait([a.own() for a in self.actors], "the setup")
        self.max_copies = max(o["max_copies"] for o in owned)
        b = self.bounds
        wait([a.seed(z0[b[j] : b[j + 1]]) for j, a in enumerate(self.actors)], "the start of the run")
        wait([a.begin() for a in self.actors], "the start of the run")
        self.timings = {
            "round": [],
            "compute": [],
            "consensus": [],
            "n_local": int(sum(info["n_local"] for info in infos)),
            "connect_s": time.perf_counter() - t0,
            "memory": wait([a.memory_report() for a in self.actors], "a memory report"),
            "cut_variables": None,
            "cut_volume": int(sum(info["n_local"] for info in infos)) - self.n,
        }

    def step(self, k: int, rho: float) -> int:
        return self._pipelined(k, rho) if self.pipelined else self._two_rounds(k, rho)

    def _residuals(self, outs_sums, stats) -> None:
        """The stop test's statistics of ``partition.consensus_step`` from the blocks' partial norms."""
        sums = np.zeros(3)
        for s in outs_sums:
            sums += s
        stats[0] = np.sqrt(sums[0])
        stats[2] = self.sqrt_p * self.eps_abs + self.eps_rel * max(np.sqrt(sums[1]), stats[4])
        stats[3] = self.sqrt_p * self.eps_abs + self.eps_rel * np.sqrt(sums[2])

    def _updated(self, ups, rho, stats) -> None:
        stats[1] = rho * np.sqrt(sum(u[0] for u in ups))
        stats[4] = np.sqrt(sum(u[1] for u in ups))

    def _two_rounds(self, k: int, rho: float) -> int:
        """Two calls per iteration: the term halves (then the stop test here), the consensus halves."""
        stats, wait, timings = self.stats, self.d._wait, self.timings
        for it in range(k):
            what = f"iteration {self.n_iter + 1}"
            t_a = time.perf_counter()
            outs = wait([a.step_push(rho, self.alpha) for a in self.actors], what)
            t_b = time.perf_counter()
            self._residuals([o[0] for o in outs], stats)
            if self.watch and _driver.residuals_small(stats):
                return it
            ups = wait([a.update(rho) for a in self.actors], what)
            t_c = time.perf_counter()
            self._updated(ups, rho, stats)
            timings["round"].append(t_c - t_a)
            timings["compute"].append(max(o[1] for o in outs) + max(u[2] for u in ups))
            timings["consensus"].append(t_c - t_b)
            self.n_iter += 1
        return k

    def _pipelined(self, k: int, rho: float) -> int:
        """One call per iteration (``BlockActor.iterate``: the consensus half of iteration ``t - 1``, then
        the term half of ``t``), and one more for the last consensus half: ``k + 1`` calls for ``k``
        iterations, with the statistics of the two-round order."""
        stats, wait, timings = self.stats, self.d._wait, self.timings
        for it in range(k):
            t_a = time.perf_counter()
            outs = wait([a.iterate(rho, self.alpha, it > 0) for a in self.actors], f"iteration {self.n_iter + 1}")
            if it > 0:
                self._updated([o[0] for o in outs], rho, stats)
            self._residuals([o[1] for o in outs], stats)
            timings["round"].append(time.perf_counter() - t_a)
            timings["compute"].append(max(o[2] for o in outs) + (max(o[0][2] for o in outs) if it > 0 else 0.0))
            timings["consensus"].append(0.0)
            self.n_iter += 1
        t_a = time.perf_counter()
        ups = wait([a.update(rho) for a in self.actors], f"iteration {self.n_iter}")
        self._updated(ups, rho, stats)
        timings["round"][-1] += time.perf_counter() - t_a
        timings["compute"][-1] += max(u[2] for u in ups)
        return k

    def _certificate(self, recession: bool = False, **kw):
        """``(bound without offset, objective without offset, violation)`` from the blocks and owners:
        the combination of :func:`partition.consensus_certificate` with the owners' shares."""
        wait = self.d._wait
        parts = wait([a.certificate_push(recession=recession, **kw) for a in self.actors], "the bound")
        owned = wait([a.certificate_owned(recession) for a in self.actors], "the bound")
        t = np.zeros(6)
        for p in parts:
            t[[0, 1, 2, 3, 5]] += p[[0, 1, 2, 3, 5]]
            t[4] = max(t[4], p[4])
        # the blocks' share of the slack of hlmrf.bound.consensus_certificate; each owner's share adds the
        # sums of its range and its constraints' dual values with a factor at least the run's
        slack = t[5] + (self.n_terms + self.n + 2) * _U * t[1] + (self.max_copies + 1.0) * _U * t[2]
        bound = t[0] - slack + sum(o[0] for o in owned)
        return bound, t[3], max(t[4], max(o[2] for o in owned))

    def certify(self, averaged: bool = False):
        lb, obj, viol = self._certificate(averaged=averaged)
        lb, obj = self.offset + lb, self.offset + obj
        if not averaged and viol <= FEASIBILITY_TOL and (self.best is None or obj < self.best[0]):
            self.d._wait([a.keep_best() for a in self.actors], "the bound")
            self.best = (obj, viol, self.n_iter)
        return lb, obj, viol

    def average(self) -> None:
        self.d._wait([a.average(_driver._AVG_KEEP) for a in self.actors], "the average of the multipliers")

    def snapshot(self) -> None:
        self.d._wait([a.snapshot() for a in self.actors], "a snapshot")

    def recession(self, since_snapshot: bool) -> float:
        return float(self._certificate(recession=True, since_snapshot=since_snapshot)[0])

    def state(self) -> tuple:  # pragma: no cover - keep_state is not offered for shards
        return ()

    def _full(self, best: bool = False) -> np.ndarray:
        parts = self.d._wait([a.owned(best) for a in self.actors], "the answer")
        full = self.x_fixed.copy()
        full[self.free] = np.concatenate(parts) if parts else np.zeros(0)
        return full

    def answer(self, cert):
        return self._full(), cert[1], cert[2]

    def best_instead(self, result: MPEResult) -> MPEResult:
        """The best certified point of the run instead of the last one, for a run stopped by its budget
        (``time_limit`` or ``max_iter``) whose last point is worse (infeasible, or a higher objective)."""
        if self.best is None or result.status not in (TIME_LIMIT_REACHED, MAX_ITER_REACHED):
            return result
        obj, viol, it = self.best
        last_ok = result.max_violation <= FEASIBILITY_TOL
        if last_ok and result.objective <= obj:
            return result
        full = self._full(best=True)
        g = gap(obj, result.lower_bound, viol)
        note = f"; returned the best certified point, of iteration {it} (certified gap {g:.2g})"
        return dataclasses.replace(
            result,
            x=frozen_array(full),
            objective=float(obj),
            max_violation=float(viol),
            gap=g,
            message=result.message + note,
        )
