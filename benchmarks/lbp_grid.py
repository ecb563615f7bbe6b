"""Loopy belief propagation on Ising grids: ``tractable.bp.loopy`` against PGMax (the anchor), side by side.

Model: binary ``n x n`` grid, unary log-potentials ``(0, h_v)`` with ``h ~ N(0, 1)``, pairwise
``J [[1, -1], [-1, 1]]`` with ``J ~ N(0, 1)`` per edge (random fields and couplings, mixed signs). Both
libraries get the same arrays, run the parallel (flooding) schedule without damping for a fixed number of
iterations (``tol=0`` for ours, so it never stops early) in float64, warm (compiled outside the timings).

Per iteration: ours = ``(t(loopy, N + 1 iterations) - t(loopy, 1 iteration)) / N``, which removes the
per-call work outside the iterations (compiling the graph, the final beliefs and scoring; reported as
``ours_call_s``); PGMax = the same difference of two ``jax.jit``-compiled ``bp.run`` calls (``num_iters``
N + 1 and 1), so that neither its JIT compilation nor its dispatch counts. Best of ``--repeat`` runs each
(``2 * repeat`` of ours), alternating. Agreement: the largest difference of the marginals (sum-product) or
normalized max-marginals (max-product), and the fraction of variables with the same decoded state, ties
(both states within ``TIE``, counted in ``ties``) left out.

``--schedules`` compares instead our three schedules (``"parallel"``, ``"blocks"``, ``"sequential"``) run to
convergence on the same inputs: grids whose couplings are scaled down until loopy BP converges (``J ~ N(0,
s^2)``), and a synthetic document of linear-chain sentences whose repeated tokens are tied by Potts
``CliqueFactor`` s (``tractable.datasets.conll2003.collective_factor_graph``): iterations, wall time of the
whole call, and the largest marginal difference from the parallel schedule's fixed point (area
``lbp_schedules``).

PGMax (``pip install --no-deps pgmax==0.6.1 jax==0.4.30 jaxlib==0.4.30 ml_dtypes``; its declared
dependencies pull in tensorflow and jupyter, which it never imports, and newer jax breaks it) runs with
``jax_enable_x64``; JAX may use every core, ours runs on one. Target: ours <= PGMax per iteration.

    python benchmarks/lbp_grid.py [--quick] [--no-save] [--repeat R] [--iters N] [--schedules]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Recorder  # noqa: E402
from tractable import ConvergenceWarning, FactorGraph, TableFactor  # noqa: E402
from tractable.bp import loopy  # noqa: E402

try:
    import jax

    jax.config.update("jax_enable_x64", True)
    from pgmax import fgraph, fgroup, infer, vgroup
except ImportError:  # the anchor is optional: our columns alone, and a message
    jax = None

#: loopy's task and PGMax's temperature for each semiring
TASKS = {"sum": ("marginals", 1.0), "max": ("map", 0.0)}
#: normalized (max-)marginals of a variable's two states closer than this are a tie: its decoding is left out
#: of ``decoded_agree`` (either state is a maximizer up to rounding, and the two libraries round differently)
TIE = 1e-9


def ising(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unary log-potentials ``(n, n, 2)`` and the couplings of the right ``(n, n - 1)`` and down
    ``(n - 1, n)`` edges."""
    rng = np.random.default_rng(seed)
    h = rng.normal(size=(n, n))
    unary = np.stack([np.zeros_like(h), h], axis=-1)
    return unary, rng.normal(size=(n, n - 1)), rng.normal(size=(n - 1, n))


def _edges(n: int, right: np.ndarray, down: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges ``(E, 2)`` (row-major variable indices: right edges, then down edges) and their tables ``(E, 2, 2)``."""
    idx = np.arange(n * n).reshape(n, n)
    pairs = np.concatenate(
        [np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1), np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)]
    )
    j = np.concatenate([right.ravel(), down.ravel()])
    return pairs, j[:, None, None] * np.array([[1.0, -1.0], [-1.0, 1.0]])


def ours_graph(unary: np.ndarray, right: np.ndarray, down: np.ndarray) -> FactorGraph:
    n = unary.shape[0]
    fg = FactorGraph([2] * (n * n))
    for v, u in enumerate(unary.reshape(-1, 2)):
        fg.add_factor(TableFactor([v], u))
    pairs, tables = _edges(n, right, down)
    for (a, b), t in zip(pairs.tolist(), tables):
        fg.add_factor(TableFactor([a, b], t))
    return fg


class PGMaxGrid:
    """The same grid in PGMax: one ``NDVarArray``, one ``PairwiseFactorGroup``, the unaries as evidence."""

    def __init__(self, unary: np.ndarray, right: np.ndarray, down: np.ndarray):
        n = unary.shape[0]
        self.variables = vgroup.NDVarArray(num_states=2, shape=(n, n))
        graph = fgraph.FactorGraph(variable_groups=self.variables)
        pairs, tables = _edges(n, right, down)
        rc = np.stack(np.unravel_index(pairs, (n, n)), axis=-1)  # (E, 2, 2): (row, col) of both ends
        group = fgroup.PairwiseFactorGroup(
            variables_for_factors=[[self.variables[tuple(a)], self.variables[tuple(b)]] for a, b in rc.tolist()],
            log_potential_matrix=tables,
        )
        graph.add_factors(group)
        self.bp = infer.build_inferer(graph.bp_state, backend="bp")
        self.arrays = self.bp.init(evidence_updates={self.variables: unary})
        self._runs: dict = {}

    def runner(self, iters: int, temperature: float):
        key = (iters, temperature)
        if key not in self._runs:
            run = jax.jit(lambda a: self.bp.run(a, num_iters=iters, damping=0.0, temperature=temperature))
            jax.block_until_ready(run(self.arrays).ftov_msgs)  # compile outside the timings
            self._runs[key] = run
        return self._runs[key]

    def time(self, iters: int, temperature: float) -> float:
        run = self.runner(iters, temperature)
        t0 = time.perf_counter()
        jax.block_until_ready(run(self.arrays).ftov_msgs)
        return time.perf_counter() - t0

    def result(self, iters: int, temperature: float) -> tuple[np.ndarray, np.ndarray]:
        """``(marginals (n * n, 2), decoded states (n * n,))`` after ``iters`` iterations."""
        beliefs = self.bp.get_beliefs(self.runner(iters, temperature)(self.arrays))
        marg = np.asarray(infer.get_marginals(beliefs)[self.variables]).reshape(-1, 2)
        states = np.asarray(infer.decode_map_states(beliefs)[self.variables]).reshape(-1)
        return marg, states


def _ours(fg: FactorGraph, task: str, iters: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        res = loopy(fg, task=task, max_iter=iters, tol=0.0)
        return time.perf_counter() - t0, res


def compare(rec: Recorder, n: int, iters: int, repeat: int, anchor: bool) -> None:
    unary, right, down = ising(n)
    fg = ours_graph(unary, right, down)
    pg = PGMaxGrid(unary, right, down) if anchor else None
    for kind, (task, temperature) in TASKS.items():
        _ours(fg, task, 2)  # warm
        ours_long, ours_one, pg_long, pg_one = [], [], [], []
        for _ in range(repeat):  # alternating, best of each; ours twice (its per-call work is the noisier)
            for _ in range(2):
                t, res = _ours(fg, task, iters + 1)
                ours_long.append(t)
                ours_one.append(_ours(fg, task, 1)[0])
            if pg is not None:
                pg_long.append(pg.time(iters + 1, temperature))
                pg_one.append(pg.time(1, temperature))
        per_it = (min(ours_long) - min(ours_one)) / iters
        row = {
            "grid": f"{n}x{n}",
            "task": f"{task} ({kind}-product)",
            "iters": iters,
            "ours_ms_per_iter": 1e3 * per_it,
            "ours_call_s": min(ours_one) - per_it,
        }
        if pg is not None:
            pg_it = (min(pg_long) - min(pg_one)) / iters
            marg, states = pg.result(iters + 1, temperature)
            ours_m = np.asarray(res.marginals)
            clear = np.abs(ours_m[:, 1] - ours_m[:, 0]) > TIE  # a decoding that rounding cannot flip
            row.update(
                pgmax_ms_per_iter=1e3 * pg_it,
                ratio=per_it / pg_it,
                target="ratio <= 1",
                marginals_max_diff=float(np.max(np.abs(ours_m - marg))),
                decoded_agree=float(np.mean(np.asarray(res.assignment)[clear] == states[clear])),
                ties=int(np.sum(~clear)),
            )
        rec.add(**row)


NOTES = (
    "Binary n x n Ising grids, unary (0, h) with h ~ N(0,1), pairwise J [[1,-1],[-1,1]] with J ~ N(0,1), both"
    " libraries on the same arrays: parallel schedule, no damping, float64, a fixed number of iterations"
    " (`iters`; ours with tol=0), warm. ms_per_iter = (time of iters+1 iterations - time of 1) / iters, best"
    " of 5 runs (10 of ours), alternating: ours through the public `tractable.bp.loopy`, PGMax 0.6.1 (jax 0.4.30,"
    " x64) through `jax.jit` of `bp.run`; ratio = ours / PGMax (target <= 1). ours_call_s: the time of one"
    " call outside its iterations (graph compilation, final beliefs, Bethe log Z or decoding and scoring)."
    " marginals_max_diff: largest |difference| of the marginals (sum-product) or normalized max-marginals"
    " (max-product) after the same iterations; decoded_agree: fraction of equal decoded states among the"
    f" variables whose two normalized (max-)marginals differ by more than {TIE} (ties: the others). PGMax may"
    " use both cores, ours one. The machine is shared (2 cores): times are noisy."
)


# --------------------------------------------------------------------------- schedules to convergence
#: the schedules compared by ``--schedules``; sequential runs a Python loop over factors, so only on small inputs
SCHEDULES = ("parallel", "blocks", "sequential")
#: the largest graph (factors) the sequential schedule is run on
SEQUENTIAL_MAX_FACTORS = 5000
#: the convergence test of every schedule run: messages within TOL_CONV, at most MAX_ITER_CONV iterations
#: (MAX_ITER_SEQUENTIAL for the sequential schedule, at about 0.2 s per iteration of a 30x30 grid)
TOL_CONV = 1e-8
MAX_ITER_CONV = 2000
MAX_ITER_SEQUENTIAL = 300


def chains_and_cliques(n_sent: int, seed: int = 0, k: int = 5, lam: float = 1.0) -> FactorGraph:
    """A synthetic document for collective labelling: ``n_sent`` sentences of 10 to 40 tokens, ``k`` labels,
    unary scores N(0, 1) and one transition table N(0, 1), every 7th token a repeated word whose occurrences
    (cliques of 2 to 6 tokens in different places) are tied by ``Potts(lam / n)``."""
    from tractable.clique import Potts
    from tractable.datasets.conll2003 import collective_factor_graph

    rng = np.random.default_rng(seed)
    lengths = rng.integers(10, 41, size=n_sent)
    n_tok = int(lengths.sum())
    unary = rng.normal(0, 1, size=(n_tok, k))
    transitions = rng.normal(0, 1, size=(k, k))
    members = rng.permutation(np.arange(0, n_tok, 7))
    sizes = rng.integers(2, 7, size=members.shape[0])
    cut = np.cumsum(sizes)
    cliques = [c for c in np.split(members, cut[cut < members.shape[0]]) if c.shape[0] >= 2]
    return collective_factor_graph(unary, transitions, lengths.tolist(), cliques, lambda n: Potts(lam / n))


def _to_convergence(fg: FactorGraph, task: str, schedule: str, damping: float, repeat: int):
    """Best wall time of ``repeat`` whole calls (warm) and the last result."""
    best, res = float("inf"), None
    for _ in range(repeat):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            res = loopy(
                fg, task=task, schedule=schedule, damping=damping, tol=TOL_CONV,
                max_iter=MAX_ITER_SEQUENTIAL if schedule == "sequential" else MAX_ITER_CONV,
                rng=0 if schedule == "sequential" else None,
            )  # fmt: skip
            best = min(best, time.perf_counter() - t0)
    return best, res


def compare_schedules(rec: Recorder, name: str, fg: FactorGraph, tasks, damping: float, repeat: int) -> None:
    for task in tasks:
        base = None
        for schedule in SCHEDULES:
            if schedule == "sequential" and len(fg.factors) > SEQUENTIAL_MAX_FACTORS:
                continue
            _to_convergence(fg, task, schedule, damping, 1)  # warm: compiled outside the timings
            wall, res = _to_convergence(fg, task, schedule, damping, 1 if schedule == "sequential" else repeat)
            row = {
                "model": name,
                "task": task,
                "damping": damping,
                "schedule": schedule,
                "converged": bool(res.converged),
                "n_iter": res.n_iter,
                "wall_s": wall,
                "ms_per_iter": 1e3 * wall / res.n_iter,
            }
            if base is None:
                base = (wall, res)
            else:
                row.update(
                    iter_ratio=res.n_iter / base[1].n_iter,
                    time_ratio=wall / base[0],
                    marginals_max_diff=float(np.max(np.abs(np.asarray(res.marginals) - np.asarray(base[1].marginals)))),
                )
            rec.add(**row)


SCHEDULE_NOTES = (
    "Our loopy BP schedules run to convergence (tol 1e-8 on every message, at most 2000 iterations, sequential 300)"
    " on the same inputs, warm: parallel (flooding, compiled), blocks (a spanning forest of the pairwise factors "
    "updated by one exact sweep per iteration, the other factors as on the parallel schedule) and sequential "
    "(factor by factor in a random order, Python per factor: small graphs only). Ising grids as in lbp_grid with "
    "couplings scaled by s (J ~ N(0, s^2); unscaled grids do not converge), in row-major factor order (the forest "
    "is a comb: every row plus the first column); max-product on grids only with weak couplings (it oscillates "
    "otherwise), damped where noted; chains+cliques: a synthetic document (sentences of 10-40 tokens, 5 labels, "
    "unary and transition scores N(0,1), every 7th token in a Potts(1/n) clique of 2-6 occurrences) built by "
    "collective_factor_graph. wall_s: the whole call, best of `repeat` (sequential: one run); iter_ratio and "
    "time_ratio: this schedule / parallel; marginals_max_diff: from the parallel schedule's converged marginals "
    "(both within tol of one fixed point). The machine is shared (2 cores): times are noisy."
)


def main_schedules(args) -> None:
    rec = Recorder("lbp_schedules", title="Loopy BP schedules to convergence: parallel vs blocks vs sequential",
                   notes=SCHEDULE_NOTES)  # fmt: skip
    repeat = args.repeat or (2 if args.quick else 3)
    # (n, coupling scale, task, damping): max-product settles on weaker couplings only (it oscillates otherwise)
    grids = [(30, 0.5, "marginals", 0.0), (30, 0.1, "map", 0.0)]
    if not args.quick:
        grids += [(30, 0.7, "marginals", 0.0), (100, 0.3, "marginals", 0.0), (100, 0.5, "marginals", 0.0)]
        grids += [(200, 0.5, "marginals", 0.0), (100, 0.1, "map", 0.5)]
    for n, scale, task, damping in grids:
        unary, right, down = ising(n)
        fg = ours_graph(unary, scale * right, scale * down)
        compare_schedules(rec, f"ising {n}x{n} s={scale}", fg, [task], damping, repeat)
    for n_sent in [5] if args.quick else [5, 50, 300]:
        fg = chains_and_cliques(n_sent)
        compare_schedules(rec, f"chains+cliques {n_sent} sentences", fg, ["marginals", "map"], 0.0, repeat)
    if not args.no_save:
        rec.save()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 30x30 grid, 20 iterations: seconds")
    ap.add_argument("--no-save", action="store_true", help="do not record the results")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs of each (default 5, quick 2)")
    ap.add_argument("--iters", type=int, default=None, help="iterations per timed run (default 100, quick 20)")
    ap.add_argument("--schedules", action="store_true", help="our schedules to convergence, not PGMax")
    args = ap.parse_args()
    if args.schedules:
        main_schedules(args)
        return
    anchor = jax is not None
    if not anchor:
        print(
            "PGMax is not installed: only our columns (pip install --no-deps pgmax==0.6.1 jax==0.4.30"
            " jaxlib==0.4.30 ml_dtypes).",
            flush=True,
        )
    rec = Recorder("lbp_grid", title="Loopy BP on Ising grids: tractable.bp.loopy vs PGMax", notes=NOTES)
    sizes = [30] if args.quick else [100, 200]
    iters = args.iters or (20 if args.quick else 100)
    repeat = args.repeat or (2 if args.quick else 5)
    for n in sizes:
        compare(rec, n, iters, repeat, anchor)
    if not args.no_save:
        rec.save()


if __name__ == "__main__":
    main()
