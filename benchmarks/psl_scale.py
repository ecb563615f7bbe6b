"""Benchmark: a PSL program past one machine: grounding into shards, solving on Dask workers, memory per
ground rule, one process vs 2 workers.

**The program** (generated here, vectorized; ``N`` nodes, ``L = 4`` labels, ``D = 3`` random out-links per
node, 20% of the nodes observed with a one-hot label, the others targets; a local score per node and label)::

    1.0: Link(A, B) & Lab(A, C) -> Lab(B, C) ^2     # neighbours agree
    0.5: Local(A, C) -> Lab(A, C) ^2                # the local evidence pulls a label up
    0.2: !Lab(A, C) ^2                              # the prior pulls every label down
    Lab(A, +C) = 1 .                                # one label per node (hard)

The evidence and the prior pull opposite ways and the constraint couples the labels of a node, so the
optimum is interior and not trivial. About ``20 N`` ground rules (``N`` = 5,000 / 50,000 / 500,000 for
10^5 / 10^6 / 10^7).

**Stages**, each in a fresh Python process (so that its peak resident memory, ``VmHWM``, is its own):

* ``ground``: ``Model.ground()`` in one process (the whole ground program as one ``HLMRF``);
* ``ground_shards``: ``Model.ground_shards(dir, 2)``: the rules grounded in DuckDB chunk by chunk into 2
  shard files; the driver's ``tracemalloc`` peak (NumPy and Python allocations) and ``VmHWM``;
* ``solve_local``: ``hlmrf.solve`` of the one-process ground program to a certified gap of 1e-3;
* ``solve_dist``: ``tractable.distributed.solve`` of the shard set on a ``LocalCluster`` of 2 worker processes
  (1 thread each) to the same gap: per-iteration time split into the slowest worker's compute and the rest
  (communication), and each worker's memory by stage (the block's term arrays, the solver state of its
  copies, its owner vectors; the resident memory before and after building the block and the peak while
  building it).

Rows: ``bytes_per_rule_*`` are bytes per ground rule (potentials + constraints); ``build_peak_ratio`` is the
worker's peak while building its block over the block's resident size (RSS after - RSS before); the fitted
scaling model and its 10^8 / 10^9 predictions are printed and recorded as the last rows.

    TRACTABLE_BENCH_OUT=/tmp/bench_scale python benchmarks/psl_scale.py --quick   # 10^5 (about a minute)
    TRACTABLE_BENCH_OUT=/tmp/bench_scale python benchmarks/psl_scale.py --sizes 1e5 1e6 [1e7]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

# benchmarks/distributed.py would shadow Dask's `distributed` package: keep this folder off the import path
# (worker processes inherit it) and load the shared harness by file
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
_spec = importlib.util.spec_from_file_location("_harness", HERE / "_harness.py")
_harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_harness)
Recorder = _harness.Recorder

LABELS = 4
DEGREE = 3
OBSERVED = 0.2
RULES = (
    "1.0: Link(A, B) & Lab(A, C) -> Lab(B, C) ^2",
    "0.5: Local(A, C) -> Lab(A, C) ^2",
    "0.2: !Lab(A, C) ^2",
    "Lab(A, +C) = 1 .",
)
GAP_TOL = 1e-3
RULES_PER_NODE = 16.6  # measured: D L (link) + L (local) + 0.8 L (prior) + 0.8 (constraint), less the trivial ones


def generate(folder: Path, n_nodes: int, seed: int = 0) -> dict:
    """Write the program's data files (tab-separated) under ``folder``; return their paths."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    width = len(str(n_nodes))
    names = np.char.add("n", np.char.zfill(np.arange(n_nodes).astype(str), width))
    labels = np.array([f"c{k}" for k in range(LABELS)])
    truth = rng.integers(LABELS, size=n_nodes)
    src = np.repeat(np.arange(n_nodes), DEGREE)
    # homophilous links: most join nodes of one label
    dst = rng.integers(n_nodes, size=src.size)
    same = rng.random(src.size) < 0.7
    by_label = [np.flatnonzero(truth == k) for k in range(LABELS)]
    for k in range(LABELS):
        rows = np.flatnonzero(same & (truth[src] == k))
        dst[rows] = by_label[k][rng.integers(by_label[k].size, size=rows.size)]
    keep = src != dst
    pairs = np.unique(np.stack([src[keep], dst[keep]], axis=1), axis=0)
    observed = rng.random(n_nodes) < OBSERVED
    local = np.clip(0.35 * np.eye(LABELS)[truth] + rng.random((n_nodes, LABELS)) * 0.65, 0, 1).round(4)
    paths = {k: folder / f"{k}.txt" for k in ("link", "local", "lab_obs", "lab_targets")}
    _write(paths["link"], [names[pairs[:, 0]], names[pairs[:, 1]]])
    node_l = np.repeat(np.arange(n_nodes), LABELS)
    lab_l = np.tile(np.arange(LABELS), n_nodes)
    _write(paths["local"], [names[node_l], labels[lab_l], local.ravel().astype(str)])
    obs = observed[node_l]
    onehot = (truth[node_l] == lab_l).astype(float)
    _write(paths["lab_obs"], [names[node_l[obs]], labels[lab_l[obs]], onehot[obs].astype(str)])
    _write(paths["lab_targets"], [names[node_l[~obs]], labels[lab_l[~obs]]])
    return {k: str(v) for k, v in paths.items()}


def _write(path: Path, columns) -> None:
    lines = columns[0].astype(object)
    for col in columns[1:]:
        lines = lines + "\t" + col.astype(object)
    path.write_text("\n".join(lines.tolist()) + "\n")


def build(paths: dict):
    """The PSL model over the generated files."""
    from tractable.psl import Model

    m = Model()
    m.add_predicate("Link", 2, closed=True)
    m.add_predicate("Local", 2, closed=True)
    m.add_predicate("Lab", 2)
    for rule in RULES:
        m.add_rule(rule)
    m.add_data("Link", "observations", paths["link"])
    m.add_data("Local", "observations", paths["local"])
    m.add_data("Lab", "observations", paths["lab_obs"])
    m.add_data("Lab", "targets", paths["lab_targets"])
    return m


# ---------------------------------------------------------------------------------------------- stages
def _status() -> dict:
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            k = line.split(":", 1)[0]
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(line.split()[1]) * 1024
    return out


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def stage_ground(args) -> dict:
    m = build(json.loads(args.paths))
    base = _status()["VmRSS"]
    _reset_peak()
    tracemalloc.start()
    t0 = time.perf_counter()
    g = m.ground()
    dt = time.perf_counter() - t0
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    st = _status()
    n_rules = g.n_potentials + g.n_constraints
    hl = g.hlmrf
    arrays = sum(a.nbytes for a in (*hl.potential_arrays().values(), *hl.constraint_arrays().values()))
    return {
        "n_rules": n_rules,
        "n_potentials": g.n_potentials,
        "n_constraints": g.n_constraints,
        "n_variables": hl.n_variables,
        "time": dt,
        "load_time": g.load_time,
        "traced_peak": traced,
        "rss_peak_delta": st["VmHWM"] - base,
        "model_bytes": arrays,
    }


def stage_ground_shards(args) -> dict:
    import tractable.distributed  # noqa: F401 - Dask's import (a second) outside the timing

    m = build(json.loads(args.paths))
    base = _status()["VmRSS"]
    _reset_peak()
    tracemalloc.start()
    t0 = time.perf_counter()
    g = m.ground_shards(args.shard_dir, args.n_shards, chunk_size=args.chunk_size or None)
    dt = time.perf_counter() - t0
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    st = _status()
    return {
        "n_rules": g.n_potentials + g.n_constraints,
        "n_free": g.n_free,
        "n_variables": g.n_variables,
        "time": dt,
        "load_time": g.load_time,
        "rule_chunks": list(g.rule_chunks),
        "rule_times": list(g.rule_times),
        "shard_terms": list(g.shard_terms),
        "traced_peak": traced,
        "rss_peak_delta": st["VmHWM"] - base,
        "offset": g.offset,
    }


def stage_solve_local(args) -> dict:
    from tractable import ConvergenceWarning
    from tractable.hlmrf import solve

    m = build(json.loads(args.paths))
    g = m.ground()
    solve(g.hlmrf, max_iter=2)  # load the kernels outside the timing
    base = _status()["VmRSS"]
    _reset_peak()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        res = solve(g.hlmrf, gap_tol=GAP_TOL, max_iter=args.max_iter)
        dt = time.perf_counter() - t0
    st = _status()
    return {
        "time": dt,
        "n_iter": res.n_iter,
        "objective": res.objective,
        "lower_bound": res.lower_bound,
        "gap": res.gap,
        "status": res.status,
        "rss_peak_delta": st["VmHWM"] - base,
        "offset": g.offset,
    }


def stage_solve_dist(args) -> dict:
    from distributed import Client, LocalCluster
    from tractable import ConvergenceWarning
    from tractable.distributed import HLMRFShards
    from tractable.distributed.consensus import _run

    shards = HLMRFShards.from_directory(args.shard_dir)
    with (
        LocalCluster(
            n_workers=args.n_shards,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            memory_limit=0,
            silence_logs=40,
        ) as cluster,
        Client(cluster) as client,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", ConvergenceWarning)
        opts = {"gap_tol": GAP_TOL, "max_iter": args.max_iter}
        _run(shards, client, n_partitions=None, strategy="bfs", rng=None, timeout=600, options=dict(opts))  # warm
        client.restart()
        t0 = time.perf_counter()
        res, tim = _run(shards, client, n_partitions=None, strategy="bfs", rng=None, timeout=600, options=dict(opts))
        dt = time.perf_counter() - t0
        peaks = client.run(lambda: _status())
    rnd = np.array(tim["round"][1:])
    comp = np.array(tim["compute"][1:])
    return {
        "time": dt,
        "setup": tim["setup"],
        "n_iter": res.n_iter,
        "objective": res.objective,
        "lower_bound": res.lower_bound,
        "gap": res.gap,
        "status": res.status,
        "s_per_iter": float(np.mean(rnd)),
        "compute_per_iter": float(np.mean(comp)),
        "values_per_iter": tim["n_local"],
        "memory": tim["memory"],
        "worker_peaks": peaks,
    }


STAGES = {
    "ground": stage_ground,
    "ground_shards": stage_ground_shards,
    "solve_local": stage_solve_local,
    "solve_dist": stage_solve_dist,
}


def _run_stage(name: str, **kw) -> dict:
    """One stage in a fresh process (its own peak memory); returns its JSON answer."""
    cmd = [sys.executable, __file__, "--stage", name]
    for k, v in kw.items():
        cmd += [f"--{k.replace('_', '-')}", str(v)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"stage {name} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _size_row(rec, n_rules_target: int, folder: Path, *, with_local: bool, max_iter: int, chunk_size: int):
    n_nodes = max(100, int(n_rules_target / RULES_PER_NODE))
    t0 = time.perf_counter()
    paths = generate(folder / "data", n_nodes)
    gen = time.perf_counter() - t0
    kw = {"paths": json.dumps(paths), "max_iter": max_iter, "n_shards": 2, "chunk_size": chunk_size}
    shard_dir = folder / "shards"
    gs = _run_stage("ground_shards", shard_dir=shard_dir, **kw)
    one = _run_stage("ground", **kw) if with_local else None
    loc = _run_stage("solve_local", **kw) if with_local else None
    dist = _run_stage("solve_dist", shard_dir=shard_dir, **kw)
    n = gs["n_rules"]
    mem = dist["memory"]
    block = max(m["block"] for m in mem)
    pot = sum(m["n_terms"] for m in mem)
    state = sum(m["state"] for m in mem)
    local = sum(m["local"] + m["owner"] for m in mem)
    ratios = [
        (m["build"]["peak"] - m["build"]["rss_before"]) / max(m["build"]["rss_after"] - m["build"]["rss_before"], 1)
        for m in mem
    ]
    row = dict(
        case=f"{n:.2e} ground rules",
        n_rules=n,
        n_nodes=n_nodes,
        n_free=gs["n_free"],
        generate_s=gen,
        ground_shards_s=gs["time"],
        ground_shards_load_s=gs["load_time"],
        grounding_rate_rules_per_s=n / max(gs["time"] - gs["load_time"], 1e-9),
        driver_traced_peak_mib=gs["traced_peak"] / 2**20,
        driver_rss_peak_delta_mib=gs["rss_peak_delta"] / 2**20,
        driver_traced_bytes_per_rule=gs["traced_peak"] / n,
        chunks=str(gs["rule_chunks"]),
        shard_terms=str(gs["shard_terms"]),
        bytes_per_rule_block=sum(m["block"] for m in mem) / pot,
        bytes_per_rule_state=state / pot,
        bytes_per_rule_vectors=local / pot,
        bytes_per_rule_worker=(sum(m["block"] for m in mem) + state) / pot,
        worker_block_mib=block / 2**20,
        build_peak_ratio=max(ratios),
        worker_rss_mib=max(m["rss"] for m in mem) / 2**20,
        dist_iters=dist["n_iter"],
        dist_s=dist["time"],
        dist_setup_s=dist["setup"],
        dist_s_per_iter=dist["s_per_iter"],
        dist_compute_s_per_iter=dist["compute_per_iter"],
        comm_share=1 - dist["compute_per_iter"] / dist["s_per_iter"],
        dist_objective=dist["objective"],
        dist_gap=dist["gap"],
        dist_status=dist["status"],
    )
    if with_local:
        row.update(
            ground_s=one["time"],
            ground_rate_rules_per_s=one["n_rules"] / max(one["time"] - one["load_time"], 1e-9),
            one_process_rss_peak_mib=one["rss_peak_delta"] / 2**20,
            one_process_bytes_per_rule_model=one["model_bytes"] / one["n_rules"],
            same_rule_count=one["n_rules"] == n,
            local_iters=loc["n_iter"],
            local_s=loc["time"],
            local_s_per_iter=loc["time"] / max(loc["n_iter"], 1),
            local_objective=loc["objective"],
            local_gap=loc["gap"],
            objective_rel_diff=abs(loc["objective"] - dist["objective"]) / max(abs(loc["objective"]), 1.0),
        )
    rec.add(**row)
    return row


def _fit(rec, rows) -> None:
    """A per-rule linear model of grounding and iteration time and of memory, from the measured sizes.

    Per iteration on ``W`` workers: ``T(W) = a * R / W + b`` with ``a`` the seconds per ground rule of a
    worker's compute and traffic (the term half, the consensus half of its variables, and its share of the
    values sent among the workers, all proportional to the rules a worker holds under the hash partition)
    and ``b`` the fixed cost of the driver's calls and the exchanges' latency; fitted to the 2-worker runs.
    Grounding: the largest run's seconds per rule, data loading included (one driver, DuckDB). Memory per
    worker: the largest run's bytes per rule (block, solver state, vectors over its variables) times R / W.
    """
    if len(rows) < 2:
        return
    n = np.array([r["n_rules"] for r in rows], float)
    big = rows[-1]
    per_rule_ground = big["ground_shards_s"] / big["n_rules"]
    it_a, it_b = np.polyfit(n / 2, [r["dist_s_per_iter"] for r in rows], 1)
    comp_a, comp_b = np.polyfit(n / 2, [r["dist_compute_s_per_iter"] for r in rows], 1)
    per_rule_mem = big["bytes_per_rule_worker"] + big["bytes_per_rule_vectors"]
    driver_per_rule = big["driver_rss_peak_delta_mib"] * 2**20 / big["n_rules"]
    iters = big["dist_iters"]
    for r in rows:  # the fit's error on the measured points
        pred = it_a * r["n_rules"] / 2 + it_b
        rec.add(case=f"fit at {r['n_rules']:.2e}", measured_s_per_iter=r["dist_s_per_iter"], fitted_s_per_iter=pred)
    for target, workers in ((1e8, 2), (1e8, 32), (1e9, 32)):
        per_worker = target / workers
        compute = comp_a * per_worker + comp_b
        total = it_a * per_worker + it_b
        rec.add(
            case=f"predicted {target:.0e} ground rules on {workers} workers",
            grounding_s=per_rule_ground * target,
            s_per_iter=total,
            compute_s_per_iter=compute,
            comm_share=max(total - compute, 0.0) / total,
            iterations_assumed=iters,
            solve_s=total * iters,
            worker_mib=per_rule_mem * per_worker / 2**20,
            driver_mib=driver_per_rule * target / 2**20,
            assumptions=(
                f"T = {it_a:.3g} s * rules per worker + {it_b:.3g} s (fitted on 2 workers); grounding at the largest "
                "run's rate in one driver (loading included); the hash partition (every worker's share of "
                f"the traffic proportional to its rules); {iters} iterations as at the largest run; "
                "a network as fast as loopback; the driver's DuckDB memory linear in the data"
            ),
        )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10^5 ground rules only")
    ap.add_argument("--sizes", type=float, nargs="*", help="ground rules per run (e.g. 1e5 1e6 1e7)")
    ap.add_argument("--no-local", action="store_true", help="skip the one-process ground and solve")
    ap.add_argument("--max-iter", type=int, default=5000)
    ap.add_argument("--chunk-size", type=int, default=0, help="groundings per chunk (default: the library's)")
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--stage", choices=sorted(STAGES), help=argparse.SUPPRESS)
    ap.add_argument("--paths", help=argparse.SUPPRESS)
    ap.add_argument("--shard-dir", help=argparse.SUPPRESS)
    ap.add_argument("--n-shards", type=int, default=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.stage:
        print(json.dumps(STAGES[args.stage](args), default=float))
        return
    sizes = [int(s) for s in (args.sizes or ([1e5] if args.quick else [1e5, 1e6]))]
    rec = Recorder(
        "psl_scale",
        title="PSL past one machine: grounding into shards, 2 Dask workers vs one process",
        notes=(
            "Generated collective-classification program (4 rules: propagation, evidence, prior, functional "
            "constraint); certified gap 1e-3. bytes_per_rule_*: per ground rule on the workers (block arrays, "
            "solver state, vectors over the variables); build_peak_ratio: worker peak while building its block "
            "over the block's resident size (target <= 1.5); driver_*: the grounding process (tracemalloc, VmHWM)."
        ),
    )
    rows = []
    root = Path(tempfile.mkdtemp(prefix="psl-scale-"))
    try:
        for size in sizes:
            rows.append(
                _size_row(
                    rec,
                    size,
                    root / f"n{size}",
                    with_local=not args.no_local,
                    max_iter=args.max_iter,
                    chunk_size=args.chunk_size,
                )
            )
            shutil.rmtree(root / f"n{size}", ignore_errors=True)
        _fit(rec, rows)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if not args.no_save:
        rec.save()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
