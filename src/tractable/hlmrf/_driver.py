"""The driver loop of consensus ADMM, shared by every way of running its iterations.

An ADMM run alternates chunks of ``_CHUNK`` iterations with the driver's decisions. The iterations
run in an *executor* (the term halves of all blocks and the consensus steps, see
:mod:`tractable.hlmrf.partition`); between chunks :func:`run` applies the stop rules on the
residuals the executor reports:

- constraints with local copies (the executor's ``watch``): small residuals stop the run; every
  ``_WATCH_EVERY`` iterations while the primal residual exceeds its tolerance, the growth of the
  multipliers since a snapshot is tested for a Farkas certificate of infeasibility (when the
  primal residual stalled above ``_STALL`` times its value at the snapshot);
- every ``_CHUNK`` iterations (``_GAP_EVERY_INFEASIBLE`` while ``z`` violates a constraint) and
  whenever the residuals are small, the certified gap of ``z`` against the best bound found so far
  (every bound is valid, and the bound at ADMM's multipliers oscillates); when it misses ``gap_tol``
  by less than ``_AVG_WITHIN`` times (or at every ``_AVG_EVERY``-th check) with small residuals,
  also the bound at their exponential average (``_AVG_KEEP``);
  converged when the gap is within ``gap_tol`` and the residuals are small (or their test is off);
- the time limit; residual balancing of ``rho`` (``adaptive_rho``, first half of ``max_iter``).

Then it builds the :class:`~tractable.hlmrf.MPEResult`: the final certified bound, the check of the
violation that small residuals allow, the infeasibility certificates and the status message.

Executors (duck-typed; every array float64):

- ``z`` (n,): the consensus values, updated in place by ``step``; ``stats`` (5,): primal and dual
  residuals, their tolerances and ``||z||`` (:func:`tractable.hlmrf.partition.consensus_step`);
- ``watch``: whether some constraint keeps local copies; ``empty``: no term has a free variable (then
  ``offset``, the objective of the fixed-only potentials, is the lower bound);
- ``step(k, rho) -> int``: run up to ``k`` iterations, return how many ran before the residual test
  stopped them (``k`` when it did not; it can stop them only when ``watch``, or when the executor has a
  ``settle`` attribute and :func:`run` set it: then after the first completed iteration, consensus
  included, that passes the test);
- ``certify(averaged=False) -> (lower_bound, objective, violation)`` of ``z`` from the multipliers
  ``y`` (or their average), offset included; ``average()``: ``y_avg = keep y_avg + (1 - keep) y``;
- ``snapshot()``: keep a copy of ``y``; ``recession(since_snapshot) -> float``: the infeasibility
  measure of ``y - y_snapshot`` (or of ``y``), ``> 0`` proves infeasibility;
- ``answer(cert) -> (x, objective, violation)``: the model's variables from ``z`` (shape
  (n_variables,)), given the final ``certify()`` (None when ``empty``).

:class:`Fused` runs all terms in the compiled loop of :func:`tractable.hlmrf._kernels.admm_run`
(``solve``'s default), :class:`Blocks` the blocks of a partition one after the other in this
process (``solve(n_partitions=k)``); :mod:`tractable.distributed.consensus` calls Dask actors.
"""

from __future__ import annotations

import time

import numpy as np

from .._results import (
    CONVERGED,
    ERROR,
    INFEASIBLE,
    MAX_ITER_REACHED,
    TIME_LIMIT_REACHED,
    frozen_array,
    stop_message,
)
from . import _kernels, bound, partition
from ._result import MPEResult
from .bound import FEASIBILITY_TOL

#: iterations between convergence reports to Python (time limit, progress, adaptive rho)
_CHUNK = 10
#: the first chunk of a warm-started run: a warm start from a nearby problem often converges within a few
#: iterations (learning's inferences: 25% fewer iterations on the Cora program, 10% less time)
_WARM_FIRST_CHUNK = 5
#: residual balancing (``adaptive_rho``): rho changes by _TAU when one normalized residual is _MU times the other
_MU, _TAU = 10.0, 2.0
#: weight of the old average in the exponential average of the multipliers, updated every _CHUNK
#: iterations: ADMM's multipliers oscillate on LPs, and the bound at their average closes the gap
#: in half the iterations on the sparse p = 1 benchmarks (docs/hlmrf.md)
_AVG_KEEP = 0.8
#: the bound at the averaged multipliers is evaluated (one more pass) only when the gap is within
#: this factor of ``gap_tol``: on the benchmark models this certifies at the same iteration as
#: evaluating it at every check, with 7-11% less work in all (docs/hlmrf.md)
_AVG_WITHIN = 3.0
#: ... and at every _AVG_EVERY-th check whatever the gap, so that a lagging plain bound cannot keep
#: the averaged one from ever being tried
_AVG_EVERY = 5
#: iterations between gap checks while the iterates are not feasible (every _CHUNK otherwise)
_GAP_EVERY_INFEASIBLE = 50
#: iterations between two tests of the multipliers' growth for divergence (when the primal residual stalls)
_WATCH_EVERY = 100
#: the primal residual "stalls" when it stays above this fraction of its value at the last snapshot
_STALL = 0.5
_DIVERGED = (
    "the multipliers diverge: their growth from iteration {m} to {n} is a Farkas certificate that no "
    "point of the box satisfies the constraints"
)


def infeasible_result(comp, rho: float, why: str, t0: float) -> MPEResult:
    """The result of a model whose constraints were found infeasible before ADMM ran (free variables NaN)."""
    full = comp.x_fixed.copy()
    full[comp.free] = np.nan
    return MPEResult(
        x=frozen_array(full),
        objective=float("nan"),
        converged=False,
        n_iter=0,
        primal_residual=float("nan"),
        dual_residual=float("nan"),
        max_violation=float("nan"),
        status=INFEASIBLE,
        time=time.perf_counter() - t0,
        method="admm",
        message=stop_message(INFEASIBLE, "admm", 0, why),
        rho=float(rho),
    )


def _new_stats() -> np.ndarray:
    """The residual statistics before the first iteration: primal, dual, eps_pri, eps_dual, ||z||."""
    return np.array([0.0, np.inf, 0.0, 0.0, 0.0])


def residuals_small(stats) -> bool:
    """The residual test of Boyd et al. (2011, Sec. 3.3) on an executor's ``stats``: both residuals of the
    last iteration within their tolerances (the compiled kernels apply the same comparison)."""
    return stats[0] <= stats[2] and stats[1] <= stats[3]


class _InProcess:
    """What both in-process executors share: the model, the consensus values and the answer."""

    def __init__(self, model, comp, z, *, alpha, eps_abs, eps_rel, watch):
        self.model, self.comp, self.z = model, comp, z
        self.alpha, self.eps_abs, self.eps_rel = alpha, eps_abs, eps_rel
        self.watch = watch
        #: end a chunk after the first completed iteration that passes the residual test (set by :func:`run`)
        self.settle = False
        self.empty = comp.idx.size == 0
        self.offset = comp.offset
        self.stats = _new_stats()

    def answer(self, cert):
        full = self.comp.x_fixed.copy()
        full[self.comp.free] = self.z
        return full, self.model.objective(full), self.model.max_violation(full)


class Fused(_InProcess):
    """All terms as one block in the compiled loop (:func:`tractable.hlmrf._kernels.admm_steps`, or
    ``admm_steps_parallel`` on numba's threads); ``terms`` and ``zcons`` as ``partition._split_constraints``
    returns them, ``z`` of shape (n,) the start."""

    def __init__(self, model, comp, terms, zcons, z, *, alpha, eps_abs, eps_rel, parallel):
        super().__init__(
            model,
            comp,
            z,
            alpha=alpha,
            eps_abs=eps_abs,
            eps_rel=eps_rel,
            watch=bool(np.any(terms[5] >= _kernels.KIND_LEQ)),
        )
        # the kernels' arguments, prepared once: term data read-only (one compiled signature),
        # the counts of the vectorized terms, and work space for the others (None when there are
        # none: then the general code is not even compiled)
        self.terms, self.zcons = _kernels.readonly(*terms), _kernels.readonly(*zcons)
        idx = terms[1]
        n_free = z.size
        self.x = z[idx]
        self.y = np.zeros(idx.size)
        self.y_avg = np.zeros(idx.size)
        self.y_snap = None
        counts = np.bincount(idx, minlength=n_free)
        (self.cnt,) = _kernels.readonly(counts.astype(np.float64))
        self.max_copies = float(counts.max(initial=0))
        self.cert = np.zeros(3)
        self.parallel = parallel
        indptr, kind, weight = self.terms[0], self.terms[5], self.terms[4]
        self.counts = _kernels.fast_counts(indptr, kind, weight)
        self.zc_counts = _kernels.constraint_counts(self.zcons[0])
        n_fast = sum(self.counts)
        self.bp = _kernels.projection_scratch(self.zcons[0])
        if parallel:
            import numba

            self.chunks = _kernels.readonly(_kernels.parallel_chunks(indptr, numba.get_num_threads()))[0]
            self.ipr = _kernels.rebased_runs(indptr, self.chunks)
            self.run_counts = _kernels.run_counts(self.ipr, kind, weight, self.chunks)
            self.scratch = _kernels.general_scratch(indptr, n_fast, self.chunks.size - 1)
        else:
            self.scratch = _kernels.general_scratch(indptr, n_fast)
            # the one-thread kernels' work arrays (the parallel ones allocate per run)
            self.work = _kernels.admm_work(n_free, self.counts, self.zcons[1].size)
            self.cert_work = bound.certificate_work(n_free, self.counts, self.zcons[1].size)
        self.cert_scratch = _kernels.general_scratch(indptr, n_fast)

    def step(self, k: int, rho: float) -> int:
        state = (
            self.x,
            self.y,
            self.z,
            float(rho),
            self.alpha,
            self.eps_abs,
            self.eps_rel,
            self.watch,
            self.settle,
            k,
            self.stats,
        )
        zcons = (*self.zcons, *self.zc_counts)
        if self.parallel:
            runs = (self.chunks, self.ipr, self.run_counts)
            return _kernels.admm_steps_parallel(*self.terms, self.cnt, *runs, *state, *zcons, self.scratch, self.bp)
        return _kernels.admm_steps(
            *self.terms, *self.counts, self.cnt, *state, *zcons, self.scratch, self.bp, self.work
        )

    def certify(self, averaged: bool = False):
        cert = self.cert
        y = self.y_avg if averaged else self.y
        zcons = (*self.zcons, *self.zc_counts)
        if self.parallel:
            runs = (self.chunks, self.ipr, self.run_counts)
            bound.certificate_pass_parallel(
                *self.terms, *runs, y, self.z, *zcons, self.max_copies, cert, self.scratch, self.bp
            )
        else:
            bound.certificate_pass(
                *self.terms,
                *self.counts,
                y,
                self.z,
                *zcons,
                self.max_copies,
                cert,
                self.cert_scratch,
                self.bp,
                self.cert_work,
            )
        return self.comp.offset + cert[0], self.comp.offset + cert[1], cert[2]

    def state(self) -> tuple:
        return (self.x, self.y)

    def set_state(self, state) -> bool:
        """Start from ``state`` (an earlier run's :meth:`state`) when its shapes match; say whether they did."""
        if len(state) != 2 or any(np.shape(a) != self.x.shape for a in state):
            return False
        self.x[:] = state[0]
        self.y[:] = state[1]
        self.y_avg[:] = state[1]  # the average starts at the multipliers, as a cold start's (both 0)
        return True

    def average(self) -> None:
        np.multiply(self.y_avg, _AVG_KEEP, out=self.y_avg)
        np.add(self.y_avg, (1.0 - _AVG_KEEP) * self.y, out=self.y_avg)

    def snapshot(self) -> None:
        self.y_snap = self.y.copy()

    def recession(self, since_snapshot: bool) -> float:
        w = self.y - self.y_snap if since_snapshot and self.y_snap is not None else self.y.copy()
        return bound.infeasibility_measure(self.terms, self.zcons, w, self.z, self.max_copies)


class Blocks(_InProcess):
    """The blocks of ``part`` (:func:`tractable.hlmrf.partition.split_terms`) one after the other in
    this process, as a distributed backend runs them side by side; ``z`` of shape (n,) the start."""

    def __init__(self, model, comp, part, z, *, alpha, eps_abs, eps_rel):
        watch = any(bool(np.any(blk.kind >= _kernels.KIND_LEQ)) for blk in part.blocks)
        super().__init__(model, comp, z, alpha=alpha, eps_abs=eps_abs, eps_rel=eps_rel, watch=watch)
        self.part = part
        self.states = [partition.block_start(blk, z) for blk in part.blocks]
        self.avgs = [np.zeros_like(yb) for _, yb in self.states]
        self.snaps = None

    def step(self, k: int, rho: float) -> int:
        part, z = self.part, self.z
        for it in range(k):
            outs = [
                partition.block_step(blk, xb, yb, z[blk.variables], rho, self.alpha)
                for blk, (xb, yb) in zip(part.blocks, self.states)
            ]
            acc, sums = partition.combine(part, outs)
            if partition.consensus_step(
                part, acc, sums, z, self.stats, rho=rho, eps_abs=self.eps_abs, eps_rel=self.eps_rel, stop=self.watch
            ):
                return it
            if self.settle and residuals_small(self.stats):
                return it + 1
        return k

    def state(self) -> tuple:
        return tuple(a for pair in self.states for a in pair)

    def set_state(self, state) -> bool:
        """Start from ``state`` (an earlier run's :meth:`state`) when its shapes match; say whether they did."""
        mine = self.state()
        if len(state) != len(mine) or any(np.shape(a) != b.shape for a, b in zip(state, mine)):
            return False
        for a, b in zip(state, mine):
            b[:] = a
        for ab, (_, yb) in zip(self.avgs, self.states):  # the averages start at the multipliers, as cold
            ab[:] = yb
        return True

    def certify(self, averaged: bool = False):
        ys = self.avgs if averaged else [yb for _, yb in self.states]
        outs = [partition.block_certificate(blk, yb, self.z[blk.variables]) for blk, yb in zip(self.part.blocks, ys)]
        return partition.consensus_certificate(self.part, outs, self.z)

    def average(self) -> None:
        for ab, (_, yb) in zip(self.avgs, self.states):
            ab *= _AVG_KEEP
            ab += (1.0 - _AVG_KEEP) * yb

    def snapshot(self) -> None:
        self.snaps = [yb.copy() for _, yb in self.states]

    def recession(self, since_snapshot: bool) -> float:
        if since_snapshot and self.snaps is not None:
            ws = [yb - sb for (_, yb), sb in zip(self.states, self.snaps)]
        else:
            ws = [yb.copy() for _, yb in self.states]
        outs = [
            partition.block_certificate(blk, w, self.z[blk.variables], recession=True)
            for blk, w in zip(self.part.blocks, ws)
        ]
        return partition.consensus_certificate(self.part, outs, self.z, recession=True)[0]


def run(
    ex,
    *,
    rho: float,
    alpha: float,
    eps_abs: float,
    eps_rel: float,
    max_iter: int,
    time_limit: float | None,
    progress: bool,
    adaptive_rho: bool,
    gap_tol: float,
    cmax: float,
    zcons: tuple,
    t0: float,
    desc: str = "ADMM",
    note: str = "",
    keep_state: bool = False,
    warm: bool = False,
) -> MPEResult:
    """Run ADMM on executor ``ex`` to a stop rule (module docstring) and build the result.

    Parameters
    ----------
    ex : executor
        Started at its ``z`` (see the module docstring).
    rho, alpha, eps_abs, eps_rel, max_iter, time_limit, progress, adaptive_rho, gap_tol
        As in :func:`tractable.hlmrf.solve` (``alpha`` is ``over_relaxation``, ``rho`` resolved).
    cmax : float
        Largest Euclidean norm of a constraint's coefficients (0 without constraints): how far from
        feasible small residuals let ``z`` be.
    zcons : tuple
        ``(indptr, idx, coef, const, kind)`` of the constraints in the consensus step, checked on
        the final ``z``.
    t0 : float
        ``time.perf_counter()`` at the start of the solve (time limit and ``time``).
    desc, note : str
        The progress bar's label; a remark appended to the message.
    keep_state : bool
        Keep the executor's :meth:`state` (local copies and multipliers) on the result.
    warm : bool
        The executor starts from an earlier run's state: the first chunk is :data:`_WARM_FIRST_CHUNK`
        iterations.
    """
    stats = ex.stats
    watch = ex.watch
    n_iter = 0
    status = CONVERGED if ex.empty else MAX_ITER_REACHED
    by_gap = False
    # constraints with local copies (watch): the iterates are feasible only in the limit (no certified
    # gap), the residual test stops the run, and the multipliers are watched for divergence. Feasible
    # iterates: the executor never stops on its residual test (an early return would skip a consensus
    # step); the residuals are tested here, after every chunk, with the gap
    chunk = _WARM_FIRST_CHUNK if warm else _CHUNK
    # a warm start from a nearby problem often converges within a few iterations: the executor then tests
    # the residuals after every iteration (PSL learning's inferences: 6.8 iterations per inference to 3.1 on
    # real Cora, 10.9 to 7.1 on jester), until a check finds small residuals with the gap still open
    # (executors without the attribute, the Dask ones, keep their chunks)
    if warm and not watch and not ex.empty and hasattr(ex, "settle"):
        ex.settle = True
    next_gap = chunk
    n_checks = 0
    best_lb = -np.inf
    shown_gap = np.inf  # the certified gap of the last check, for the progress bar
    residual_off = eps_abs == 0.0 and eps_rel == 0.0
    snapped, snap_primal, snap_iter, next_watch = False, np.inf, 0, _WATCH_EVERY
    infeasible_why = None
    last_cert, cert_iter, avg_lb, avg_iter = None, -1, -np.inf, -1
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=max_iter, desc=desc, unit="it")
    try:
        while status != CONVERGED and n_iter < max_iter:
            steps = min(chunk, max_iter - n_iter)
            chunk = _CHUNK
            done = ex.step(steps, rho)
            n_iter += done
            small = done < steps or residuals_small(stats)
            if watch and small:
                status = CONVERGED
                if bar is not None:
                    bar.update(done)
                break
            ex.average()
            if n_iter >= next_gap or small:
                lb, obj, cviol = last_cert = ex.certify()
                cert_iter = n_iter
                # every bound ever computed is valid (weak duality holds for any multipliers), and ADMM's
                # oscillate: the gap of z is taken against the best of them
                best_lb = max(best_lb, lb)
                gap_now = bound.gap(obj, best_lb, cviol)
                n_checks += 1
                near = gap_now <= _AVG_WITHIN * gap_tol or n_checks % _AVG_EVERY == 0
                if gap_tol < gap_now and near and np.isfinite(gap_now) and (small or residual_off):
                    # a feasible z close to certified waits for its bound: try the averaged multipliers too
                    avg_lb = ex.certify(averaged=True)[0]
                    avg_iter = n_iter
                    best_lb = max(best_lb, avg_lb)
                    gap_now = bound.gap(obj, best_lb, cviol)
                next_gap = n_iter + (_CHUNK if cviol <= FEASIBILITY_TOL else _GAP_EVERY_INFEASIBLE)
                shown_gap = gap_now
                # the gap target and small residuals (unless the residual test is off: eps_abs = eps_rel = 0)
                if gap_now <= gap_tol and (small or residual_off):
                    status, by_gap = CONVERGED, True
                elif small and getattr(ex, "settle", False):
                    ex.settle = False  # the gap needs more iterations: chunks of _CHUNK again, one check each
            if bar is not None:
                bar.update(done)
                postfix = dict(
                    gap=f"{shown_gap:.2e}", primal=f"{stats[0]:.2e}", dual=f"{stats[1]:.2e}", rho=f"{rho:.3g}"
                )
                bar.set_postfix(postfix, refresh=False)
            if by_gap:
                break
            if watch and n_iter >= next_watch and stats[0] > stats[2]:
                next_watch = n_iter + _WATCH_EVERY
                if snapped and stats[0] > _STALL * snap_primal and ex.recession(True) > 0.0:
                    status = INFEASIBLE
                    infeasible_why = _DIVERGED.format(n=n_iter, m=snap_iter)
                    break
                ex.snapshot()
                snapped, snap_primal, snap_iter = True, stats[0], n_iter
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                status = TIME_LIMIT_REACHED
                break
            if adaptive_rho and n_iter < max_iter // 2:
                rp = stats[0] / max(stats[2], 1e-300)
                rd = stats[1] / max(stats[3], 1e-300)
                if rp > _MU * rd:
                    rho *= _TAU
                elif rd > _MU * rp:
                    rho /= _TAU
    finally:
        if bar is not None:
            bar.close()

    if ex.empty:
        cert = None
        lower_bound = ex.offset
    else:
        # every bound is valid: the best seen during the run, or those of both multipliers now (those of the
        # last check when no iteration ran since)
        cert = last_cert if cert_iter == n_iter else ex.certify()
        if avg_iter == n_iter:
            avg = avg_lb
        elif warm and by_gap:
            # a warm-started run (one of a sequence, as in weight learning) that certified its gap keeps that
            # bound: the averaged multipliers' pass would cost as much as an iteration for a tighter one
            avg = -np.inf
        else:
            avg = ex.certify(averaged=True)[0]
        lower_bound = max(best_lb, cert[0], avg)
    full, objective, viol = ex.answer(cert)
    gap = bound.gap(objective, lower_bound, viol)
    # a converged feasible model has z within |c_k| * primal residual of each constraint's local copy
    viol_tol = 1e-6 + (2.0 * cmax * (stats[0] + stats[1] / rho) / min(alpha, 1.0) if cmax > 0 else 0.0)
    detail = ""
    if status == CONVERGED and not by_gap and viol > viol_tol:
        status = ERROR
        detail = (
            f"residuals below tolerance but max violation {viol:.3g} exceeds what they allow ({viol_tol:.3g}); "
            "the model is probably infeasible"
        )
        # any multipliers may certify: their growth since the last snapshot, or themselves
        for since, start in ((True, snap_iter), (False, 0)):
            if (snapped or not since) and ex.recession(since) > 0.0:
                status, infeasible_why = INFEASIBLE, _DIVERGED.format(n=n_iter, m=start)
                break
    if status != INFEASIBLE and zcons[4].size and _violated(zcons, ex.z):
        status = INFEASIBLE
        infeasible_why = "a constraint of the consensus step cannot hold anywhere in the box [0, 1]"
    if status == INFEASIBLE:
        lower_bound, gap, detail = float("-inf"), float("inf"), infeasible_why
    elif status == CONVERGED:
        if by_gap:
            detail = f"certified gap {gap:.2g} below gap_tol" + ("" if residual_off else ", residuals below tolerance")
        else:
            detail = "residuals below tolerance" + (
                "" if np.isfinite(gap) else f"; max violation {viol:.2g}, no certified gap"
            )
    elif status != ERROR:
        budget = "time_limit" if status == TIME_LIMIT_REACHED else "max_iter"
        detail = (
            f"primal residual {stats[0]:.3g}, dual residual {stats[1]:.3g}, max violation {viol:.3g}; "
            f"the model may be infeasible, or increase {budget}"
        )
    return MPEResult(
        x=frozen_array(full),
        objective=float(objective),
        converged=status == CONVERGED,
        n_iter=n_iter,
        primal_residual=float(stats[0]),
        dual_residual=float(stats[1]),
        max_violation=float(viol),
        status=status,
        time=time.perf_counter() - t0,
        method="admm",
        message=stop_message(status, "admm", n_iter, detail + note),
        rho=float(rho),
        lower_bound=float(lower_bound),
        gap=gap,
        state=_readonly_views(ex.state()) if keep_state else None,
    )


def _readonly_views(arrays) -> tuple:
    """Read-only views of the executor's last state (no copy: the executor is dropped after the run)."""
    out = []
    for a in arrays:
        v = a.view()
        v.flags.writeable = False
        out.append(v)
    return tuple(out)


def _violated(zcons, z) -> bool:
    """Whether ``z`` violates a consensus-step constraint (the projection onto one that misses the box
    leaves it violated)."""
    vals = _kernels.term_values(*zcons[:4], z)
    rows = np.repeat(np.arange(zcons[3].size), np.diff(zcons[0]))
    scale = 1.0 + np.abs(zcons[3]) + np.bincount(rows, weights=np.abs(zcons[2]), minlength=zcons[3].size)
    return bool(np.any(np.where(zcons[4] == _kernels.KIND_EQ, np.abs(vals), vals) > 1e-9 * scale))
