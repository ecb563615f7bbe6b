"""Benchmark: tractable.distributed on a LocalCluster of 2 worker processes vs one process.

In one run, on the same inputs:

* **Consensus ADMM** on dense opinion-diffusion HL-MRFs (``mean_degree=1.5``: about 18 potentials per
  voter) of about 10^6 and 10^7 potentials: time per iteration of the single-process solver
  (``hlmrf.solve``, fused kernel), of the in-process partitioned solver (2 blocks in sequence) and of
  :func:`tractable.distributed.solve` with 2 blocks on 2 workers; the latter split into the slowest
  worker's compute, the driver's consensus step and the rest (communication: serialization,
  transport, scheduling), whose share of the iteration is the communication share. A fixed number of
  iterations is run (tolerances 0), so every solver does the same work. Memory per worker: the peak
  RSS of each worker process (the cluster is restarted before each size) and the bytes of its block.
* **Cut size** of the partition heuristic (``"bfs"``: reverse Cuthill-McKee order) vs ``"contiguous"``
  and ``"random"``, for 2, 8 and 32 blocks: variables shared by two blocks or more, and the cut volume
  (extra partial sums per iteration).
* **Batch clique MAP**, n = 100 nodes, m = 24 labels, Potts potential: throughput of
  ``alpha_pass_batch`` in one process vs ``alpha_pass_batches`` over a dask array of 10^6 cliques
  generated on the workers, per core (target >= 80% of the in-process throughput per core). Both
  pipelines include the generation of the node scores (``numpy`` normals, per block).

Usage::

    python benchmarks/distributed.py            # full: 1e6 and 1e7 potentials, 1e6 cliques (minutes)
    python benchmarks/distributed.py --quick    # small sizes, well under a minute (CI's smoke run)
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

# this script's name shadows Dask's `distributed` package: take its folder off the import path (the
# worker processes inherit the path) and load the shared harness by file
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
_spec = importlib.util.spec_from_file_location("_harness", _HERE / "_harness.py")
_harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_harness)
Recorder = _harness.Recorder

from tractable import ConvergenceWarning  # noqa: E402
from tractable.clique import Potts, alpha_pass_batch  # noqa: E402
from tractable.datasets import opinion_diffusion  # noqa: E402
from tractable.distributed import alpha_pass_batches  # noqa: E402
from tractable.distributed.consensus import _run  # noqa: E402
from tractable.hlmrf import partition  # noqa: E402
from tractable.hlmrf import solve as solve_local  # noqa: E402

#: voters of the dense opinion-diffusion models (mean_degree=1.5: ~18 potentials per voter)
FULL_VOTERS = [56_000, 560_000]  # ~1e6 and ~1e7 potentials
QUICK_VOTERS = [1_500]
MEAN_DEGREE = 1.5
FULL_ITERS, QUICK_ITERS = 30, 10
FULL_CLIQUES, QUICK_CLIQUES = 1_000_000, 4_000
FULL_CLIQUES_LOCAL, QUICK_CLIQUES_LOCAL = 100_000, 2_000  # the in-process reference (throughput is per clique)
CLIQUE_BLOCK = 5_000
N_NODES, N_LABELS = 100, 24


def _peak_rss() -> int:
    """Peak resident memory of this process image, bytes.

    ``VmHWM`` of ``/proc/self/status`` on Linux: ``getrusage``'s ``ru_maxrss`` survives ``execve``, so a
    worker that a nanny in the driver's process forked and re-executed reports the driver's peak there
    (docs/distributed.md, "Memory of a worker"); ``ru_maxrss`` (KiB) elsewhere.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _admm(rec, client, n_voters, iters):
    model = opinion_diffusion(n_voters, mean_degree=MEAN_DEGREE, rng=0)
    size = model.n_potentials + model.n_constraints
    opts = dict(max_iter=iters, eps_abs=0.0, eps_rel=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        solve_local(model, max_iter=2)  # compile / load kernels outside the timings
        t0 = time.perf_counter()
        one = solve_local(model, **opts)
        t_one = (time.perf_counter() - t0) / one.n_iter
        t0 = time.perf_counter()
        seq = solve_local(model, n_partitions=2, **opts)
        t_seq = (time.perf_counter() - t0) / seq.n_iter
        client.restart()  # fresh worker processes: their peak RSS is this model's
        t0 = time.perf_counter()
        dist, tim = _run(model, client, n_partitions=2, strategy="bfs", rng=None, timeout=600, options=dict(opts))
        t_total = time.perf_counter() - t0
    rnd = np.array(tim["round"][1:])  # the first round also warms the actors' threads
    comp = np.array(tim["compute"][1:])
    cons = np.array(tim["consensus"][1:])
    it = float(np.mean(rnd + cons))
    rss = client.run(_peak_rss)
    rec.add(
        case=f"admm {size:.2e} terms",
        n_voters=n_voters,
        potentials=model.n_potentials,
        variables=model.n_variables,
        single_s_per_iter=t_one,
        seq2_s_per_iter=t_seq,
        dask2_s_per_iter=it,
        speedup_vs_single=t_one / it,
        worker_compute_s=float(np.mean(comp)),
        driver_consensus_s=float(np.mean(cons)),
        comm_s=float(np.mean(rnd - comp)),
        comm_share=float(np.mean(rnd - comp)) / it,
        values_sent_per_iter=tim["n_local"],
        cut_variables=tim["cut_variables"],
        setup_s=t_total - float(np.sum(rnd + cons)),
        worker_block_mib=max(m[0] for m in tim["memory"]) / 2**20,
        worker_rss_mib=max(m[1] for m in tim["memory"]) / 2**20,
        worker_peak_rss_mib=max(rss.values()) / 2**20,
        same_iterates=bool(np.array_equal(dist.x, seq.x)),
    )
    return model


def _cuts(rec, model):
    for k in (2, 8, 32):
        for strategy in partition.STRATEGIES:
            part = partition.split_terms(model, k, strategy=strategy, rng=0)
            rec.add(
                case=f"cut {k} blocks {strategy}",
                variables=part.n,
                cut_variables=part.cut_variables,
                cut_volume=part.cut_volume,
                cut_fraction=part.cut_variables / part.n,
            )


def _phi_block(seed, size):
    return np.random.default_rng(seed).normal(size=(size, N_NODES, N_LABELS))


def _cpu_seconds() -> float:
    """CPU seconds used by this process so far (all its threads)."""
    return time.process_time()


def _cliques(rec, client, n_cliques, n_local):
    """Throughput of the batched clique MAP, in wall-clock terms and in CPU terms.

    On a machine shared with other jobs the wall-clock throughput per core depends on the share of the
    CPU each process gets; cliques per CPU-second (the workers' and the driver's CPU time together for
    the distributed run) measure the overhead of the distributed pipeline itself.
    """
    import dask.array as da

    potential = Potts(0.05)
    alpha_pass_batch(_phi_block(0, 2), potential)  # compile / load outside the timings
    t0, c0 = time.perf_counter(), _cpu_seconds()
    for i in range(0, n_local, CLIQUE_BLOCK):
        alpha_pass_batch(_phi_block(i, min(CLIQUE_BLOCK, n_local - i)), potential)
    local = n_local / (time.perf_counter() - t0)
    local_cpu = n_local / (_cpu_seconds() - c0)
    n_workers = len(client.scheduler_info()["workers"])
    alpha_pass_batches(_phi_block(0, 4), potential, client=client)  # warm the workers
    phi = da.random.default_rng(0).normal(size=(n_cliques, N_NODES, N_LABELS), chunks=(CLIQUE_BLOCK, N_NODES, N_LABELS))
    w0 = sum(client.run(_cpu_seconds).values())
    t0, c0 = time.perf_counter(), _cpu_seconds()
    res = alpha_pass_batches(phi, potential, client=client)
    wall = time.perf_counter() - t0
    cpu = _cpu_seconds() - c0 + sum(client.run(_cpu_seconds).values()) - w0
    assert res.assignment.shape == (n_cliques, N_NODES)
    rec.add(
        case=f"clique MAP {n_cliques:.0e} cliques n={N_NODES} m={N_LABELS}",
        in_process_cliques_per_s=local,
        dask_cliques_per_s=n_cliques / wall,
        dask_per_core_vs_in_process=n_cliques / wall / n_workers / local,
        in_process_cliques_per_cpu_s=local_cpu,
        dask_cliques_per_cpu_s=n_cliques / cpu,
        dask_vs_in_process_per_cpu_s=n_cliques / cpu / local_cpu,
        workers=n_workers,
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only (CI smoke run)")
    ap.add_argument("--voters", type=int, nargs="*", help="opinion-diffusion sizes (voters)")
    ap.add_argument("--cliques", type=int, help="cliques of the batch MAP run")
    ap.add_argument("--only", choices=("admm", "cliques"), help="run one part only")
    args = ap.parse_args(argv)
    from distributed import Client, LocalCluster

    voters = args.voters or (QUICK_VOTERS if args.quick else FULL_VOTERS)
    iters = QUICK_ITERS if args.quick else FULL_ITERS
    n_cliques = args.cliques or (QUICK_CLIQUES if args.quick else FULL_CLIQUES)
    n_local = min(n_cliques, QUICK_CLIQUES_LOCAL if args.quick else FULL_CLIQUES_LOCAL)
    rec = Recorder(
        "distributed",
        title="tractable.distributed: Dask LocalCluster (2 workers x 1 thread) vs one process",
        notes=(
            "ADMM: dense opinion diffusion (mean_degree=1.5), fixed iterations; comm_share = (round trip - slowest "
            "worker's compute) / iteration time, target <= 0.30 at 1e7 potentials. Clique MAP: n=100, m=24, "
            "target dask_per_core_vs_in_process >= 0.8."
        ),
    )
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", memory_limit=0, silence_logs=40
        ) as cluster,
        Client(cluster) as client,
    ):
        for n_voters in voters if args.only != "cliques" else ():
            model = _admm(rec, client, n_voters, iters)
            if model.n_potentials < 2_000_000:
                _cuts(rec, model)
            del model
        if args.only != "admm":
            _cliques(rec, client, n_cliques, n_local)
    rec.save()


if __name__ == "__main__":
    main()
