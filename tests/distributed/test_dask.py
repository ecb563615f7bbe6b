"""tractable.distributed on a LocalCluster of 2 worker processes: batch maps, consensus ADMM, bad input.

One cluster for the whole module (starting one costs seconds); the worker-loss test runs last and
waits for the nanny to bring the lost worker back.
"""

import functools
import os
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
db = pytest.importorskip("dask.bag")

from tractable.cardinality import marginals_batch  # noqa: E402
from tractable.clique import Potts, alpha_pass_batch  # noqa: E402
from tractable.datasets import opinion_diffusion  # noqa: E402
from tractable.distributed import (  # noqa: E402
    HLMRFShards,
    WorkerLostError,
    alpha_pass_batches,
    check_client,
    map_batches,
    marginals_batches,
    solve,
)
from tractable.hlmrf import HLMRF  # noqa: E402
from tractable.hlmrf import solve as solve_local  # noqa: E402

# the same kernels in the same order of additions give the same floats; 1e-12 leaves room for nothing
# but a different summation order, which would be a bug in the combine step
ITERATE_TOL = 1e-12


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
    )
    cl = distributed.Client(cluster)
    yield cl
    cl.close()
    cluster.close()


def _random_model(seed, n=8, m=14, r=3):
    """A small feasible model with all three constraint senses (constraints through a random point)."""
    rng = np.random.default_rng(seed)
    model = HLMRF(n)
    for _ in range(m):
        k = int(rng.integers(1, 4))
        var = rng.choice(n, size=k, replace=False)
        model.add_potential(var, rng.uniform(-1, 1, size=k), float(rng.uniform(-0.8, 0.8)), float(rng.uniform(0.1, 2)))
    u = rng.uniform(0.1, 0.9, size=n)
    for sense in ("<=", ">=", "==")[:r]:
        var = rng.choice(n, size=2, replace=False)
        a = rng.uniform(-1, 1, size=2)
        model.add_constraint(var, a, -float(a @ u[var]), sense=sense)
    return model


# --------------------------------------------------------------------------- batch maps


def test_map_batches_dask_array_bag_and_list(client, seed):
    rng = np.random.default_rng(seed)
    phi = rng.normal(size=(23, 6, 3))
    want = alpha_pass_batch(phi, Potts(0.3))
    for batches in (
        da.from_array(phi, chunks=(5, 6, 3)),
        da.from_array(phi, chunks=(10, 2, 3)),  # chunked along a node axis too: merged per block
        db.from_sequence(list(phi), npartitions=4),
        [phi[:7], phi[7:]],
    ):
        got = map_batches(alpha_pass_batch, batches, client=client, args=(Potts(0.3),))
        np.testing.assert_array_equal(got.assignment, want.assignment)
        np.testing.assert_array_equal(got.score, want.score)
        assert got.method == "alpha_pass" and got.status == want.status
        with pytest.raises(ValueError):
            got.assignment[0, 0] = 1


def test_per_area_helpers(client, seed):
    rng = np.random.default_rng(seed)
    phi = rng.normal(size=(30, 5, 4))
    got = alpha_pass_batches(phi, Potts(0.2), client=client, block_size=8)
    np.testing.assert_array_equal(got.assignment, alpha_pass_batch(phi, Potts(0.2)).assignment)
    theta, f = rng.normal(size=(17, 12)), rng.normal(size=(17, 13))
    want = marginals_batch(theta, f)
    got = marginals_batches(da.from_array(theta, chunks=6), da.from_array(f, chunks=6), client=client)
    np.testing.assert_array_equal(got.marginals, want.marginals)
    np.testing.assert_array_equal(got.log_partition, want.log_partition)
    got = marginals_batches(theta, f[0], client=client, block_size=5)
    np.testing.assert_array_equal(got.marginals, marginals_batch(theta, f[0]).marginals)
    bag = db.from_sequence(list(zip(theta, f)), npartitions=3)  # bag of (theta, f) instances
    got = map_batches(marginals_batch, bag, client=client)
    np.testing.assert_array_equal(got.p_on, want.p_on)


def test_map_batches_tree_marginals(client, seed):
    """Any batched function of the library maps the same way: here bp's forest marginals, (B, N, k) stacks."""
    from tractable.bp import tree_marginals_batch

    rng = np.random.default_rng(seed)
    b, n, k = 12, 6, 3
    edges = np.broadcast_to(np.array([[0, 1], [1, 2], [1, 3], [3, 4], [4, 5]]), (b, 5, 2)).copy()
    unary, pairwise = rng.normal(size=(b, n, k)), rng.normal(size=(b, 5, k, k))
    want = tree_marginals_batch(unary, edges, pairwise)
    got = map_batches(
        tree_marginals_batch,
        tuple(da.from_array(a, chunks=(5,) + a.shape[1:]) for a in (unary, edges, pairwise)),
        client=client,
    )
    # each block is one vectorized pass over its own models: the same floats per model
    np.testing.assert_allclose(got.marginals, want.marginals, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(got.log_partition, want.log_partition, rtol=1e-13)


def test_map_batches_errors_name_the_block(client):
    phi = np.zeros((12, 3, 2))
    phi[9, 1] = -np.inf
    with pytest.raises(ValueError, match=r"block 2 \(rows 8\.\.11\): .*clique 1, node 1 is all -inf"):
        alpha_pass_batches(phi, Potts(1.0), client=client, block_size=4)
    with pytest.raises(TypeError, match="`batches` must be"):
        map_batches(alpha_pass_batch, "phi", client=client)
    x = da.zeros((10, 3), chunks=5)
    with pytest.raises(ValueError, match=r"`batches`\[1\] must be chunked like `batches`\[0\]"):
        map_batches(marginals_batch, (x, da.zeros((10, 4), chunks=4)), client=client)
    with pytest.raises(TypeError, match="`client` must be a dask.distributed.Client"):
        map_batches(alpha_pass_batch, [phi], client="tcp://nowhere")


def test_client_with_another_version_is_refused(client, monkeypatch):
    import tractable

    monkeypatch.setattr(tractable, "__version__", "0.0.0.other")
    with pytest.raises(ValueError, match=r"`client` has workers without tractable 0\.0\.0\.other.*: tcp://"):
        check_client(client)
    with pytest.raises(ValueError, match="without tractable"):
        solve(_random_model(0), client)
    with pytest.raises(ValueError, match="without tractable"):
        alpha_pass_batches(np.zeros((2, 2, 2)), Potts(1.0), client=client)


# --------------------------------------------------------------------------- consensus ADMM


@pytest.mark.filterwarnings("ignore::tractable.ConvergenceWarning")  # some runs stop at max_iter, on both sides
@pytest.mark.parametrize(
    ("k", "options"),
    [
        (2, {}),
        (3, {"adaptive_rho": True, "rho": 20.0, "over_relaxation": 1.0}),  # rho adapts down to 2.5
        (2, {"constraints": "local", "rho": 0.5}),
    ],
)
def test_iterates_equal_the_single_process_partitioned_solver(client, k, options):
    model = opinion_diffusion(160, rng=1)
    dist = solve(model, client, n_partitions=k, max_iter=400, **options)
    one = solve_local(model, n_partitions=k, max_iter=400, **options)
    assert dist.n_iter == one.n_iter and dist.status == one.status
    np.testing.assert_allclose(dist.x, one.x, rtol=0, atol=ITERATE_TOL)
    for field in ("objective", "primal_residual", "dual_residual", "rho", "lower_bound"):
        assert abs(getattr(dist, field) - getattr(one, field)) <= ITERATE_TOL * (1 + abs(getattr(one, field))), field
    assert dist.gap == pytest.approx(one.gap, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("model_seed", [0, 1])
def test_answer_matches_highs(client, model_seed):
    model = _random_model(model_seed)
    exact = solve_local(model, method="highs")
    res = solve(model, client, eps_abs=1e-9, eps_rel=1e-9, max_iter=20_000)
    assert res.converged and res.method == "admm"
    # converged ADMM to 1e-9 residuals on a model with O(1) coefficients: objective and feasibility to 1e-6
    assert res.objective == pytest.approx(exact.objective, abs=1e-6)
    assert res.max_violation <= 1e-6
    assert res.lower_bound <= exact.objective + 1e-9  # certified: never above the optimum


def test_random_strategy_and_time_limit(client):
    model = opinion_diffusion(200, rng=2)
    with pytest.warns(Warning, match="iteration limit"):
        res = solve(model, client, strategy="random", rng=0, max_iter=50)
    assert res.n_iter == 50 and res.status == "max_iter_reached"
    with pytest.warns(Warning, match="time"):
        res = solve(model, client, eps_abs=1e-12, eps_rel=1e-12, time_limit=0.3)
    assert res.status == "time_limit_reached" and not res.converged


def test_out_of_core_shards(client, tmp_path):
    full = _random_model(6, n=10, m=20, r=0)
    pot = full.potential_arrays()
    paths = []
    for s, rows in enumerate((range(0, 12), range(12, 20))):
        shard = HLMRF(full.n_variables)
        for j in rows:
            lo, hi = pot["indptr"][j], pot["indptr"][j + 1]
            shard.add_potential(
                pot["variables"][lo:hi], pot["coefficients"][lo:hi], pot["constants"][j], pot["weights"][j]
            )
        paths.append(str(tmp_path / f"shard{s}.npz"))
        shard.save(paths[-1])
    exact = solve_local(full, method="highs")
    for sources in (paths, [functools.partial(HLMRF.load, p) for p in paths]):
        # stop on the certified gap: objective - optimum <= objective - lower_bound <= 1e-9 (|objective| < 1)
        res = solve(HLMRFShards(sources), client, eps_abs=1e-12, eps_rel=1e-12, gap_tol=1e-9, max_iter=20_000)
        assert res.converged and res.x.shape == (full.n_variables,) and res.gap <= 1e-9
        assert res.objective == pytest.approx(exact.objective, abs=1e-6)
        assert res.objective == pytest.approx(full.objective(res.x), abs=1e-12)  # the blocks' objective is the model's


def test_bad_input(client, tmp_path):
    model = _random_model(4, m=3, r=0)
    with pytest.raises(ValueError, match=r"`n_partitions` must be at most the number of terms \(3 .*got 4"):
        solve(model, client, n_partitions=4)
    with pytest.raises(ValueError, match="`n_partitions` must be a positive int"):
        solve(model, client, n_partitions=0)
    with pytest.raises(TypeError, match="`model` must be an HLMRF or HLMRFShards"):
        solve("model.npz", client)
    with pytest.raises(TypeError, match="`client` must be a dask.distributed.Client"):
        solve(model, None)
    with pytest.raises(ValueError, match="`rho`"):
        solve(model, client, rho=-1.0)
    with pytest.raises(ValueError, match="`strategy`"):
        solve(model, client, strategy="metis")
    a, b = HLMRF(3), HLMRF(4)
    a.add_potential([0, 1], [1.0, -1.0], 0.2)
    b.add_potential([2, 3], [1.0, -1.0], 0.2)
    a.save(tmp_path / "a.npz")
    b.save(tmp_path / "b.npz")
    shards = HLMRFShards([tmp_path / "a.npz", tmp_path / "b.npz"])
    with pytest.raises(ValueError, match="`model` shard 1 has other variables than shard 0"):
        solve(shards, client)
    with pytest.raises(ValueError, match=r"`n_partitions` must equal the number of shards \(2\)"):
        solve(shards, client, n_partitions=3)
    with pytest.raises(ValueError, match="`sources` must name at least one shard"):
        HLMRFShards([])
    with pytest.raises(TypeError, match=r"`sources`\[0\] must be a path or a callable"):
        HLMRFShards([3])


def test_split_options_for_shards_are_rejected(client, tmp_path):
    # a shard is one block: no term order to choose, nothing split at random
    model = _random_model(5, m=6, r=0)
    model.save(tmp_path / "m.npz")
    shards = HLMRFShards([tmp_path / "m.npz"])
    with pytest.raises(ValueError, match=r"`strategy` must be 'bfs' \(the default\) for HLMRFShards.*got 'random'\."):
        solve(shards, client, strategy="random")
    with pytest.raises(ValueError, match=r"`strategy` must be 'bfs'.*got 'contiguous'\."):
        solve(shards, client, strategy="contiguous", max_iter=5)
    with pytest.raises(ValueError, match=r"`rng` must be None for HLMRFShards.*got 7\."):
        solve(shards, client, rng=7)
    # the defaults still run
    res = solve(shards, client, strategy="bfs", rng=None, max_iter=20_000)
    assert res.converged


def test_rng_without_the_random_strategy_is_rejected(client):
    model = _random_model(5, m=6, r=0)
    for strategy in ("bfs", "contiguous"):
        with pytest.raises(
            ValueError, match=rf"`rng` must be None unless `strategy`='random'.*got 3 with `strategy`='{strategy}'\."
        ):
            solve(model, client, strategy=strategy, rng=3)
    with pytest.raises(ValueError, match=r"`rng` must be None unless `strategy`='random'.*`strategy`='bfs'"):
        solve(model, client, rng=np.random.default_rng(0))
    # with the random strategy the seed is used: the same seed, the same partition and iterates
    a = solve(model, client, strategy="random", rng=3, n_partitions=2, max_iter=30)
    b = solve(model, client, strategy="random", rng=3, n_partitions=2, max_iter=30)
    np.testing.assert_array_equal(a.x, b.x)


def test_model_without_terms(client):
    model = HLMRF(3)
    res = solve(model, client)
    assert res.converged and res.n_iter == 0 and res.objective == 0.0
    model.add_potential([0, 1], [1.0, 1.0], -0.5)
    model.fix([0, 1], [1.0, 1.0])  # the only potential is now a constant, 1.5
    res = solve(model, client)
    want = solve_local(model)
    assert res.converged and res.objective == pytest.approx(1.5) and res.objective == want.objective
    np.testing.assert_array_equal(res.x, want.x)


def test_infeasible_model(client):
    model = HLMRF(2)
    model.add_potential([0], [1.0], 0.0)
    model.add_constraint([0, 1], [1.0, 1.0], -3.0, sense=">=")  # x0 + x1 >= 3 misses the box
    with pytest.warns(Warning, match="cannot hold"):
        res = solve(model, client)
    assert res.status == "infeasible" and not res.converged and np.isnan(res.objective)


def test_lost_worker_is_named(client):
    """A worker killed during the run ends it with WorkerLostError naming the worker (never a hang)."""
    model = opinion_diffusion(400, rng=3)
    victim = sorted(client.scheduler_info()["workers"])[1]
    pid = client.run(os.getpid, workers=[victim])[victim]

    def kill():
        time.sleep(1.0)
        os.kill(pid, 9)

    killer = threading.Thread(target=kill)
    t0 = time.perf_counter()
    killer.start()
    try:
        with pytest.raises(WorkerLostError, match=f"worker {victim} \\(holding block 1\\)"):
            solve(model, client, n_partitions=2, eps_abs=1e-14, eps_rel=1e-14, max_iter=10**7, timeout=30)
    finally:
        killer.join()
    assert time.perf_counter() - t0 < 60
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it, for whatever runs next


def test_psl_program_on_the_cluster_gives_the_answer_of_one_process(client):
    """``psl.Model.infer(client=...)``: the ground program solved on the workers, to the same certified optimum."""
    import warnings

    import pandas as pd

    from tractable.psl import Model

    m = Model()
    m.add_predicate("Link", 2, closed=True)
    m.add_predicate("Lab", 2)
    m.add_rule("1: Link(A, B) & Lab(A, C) -> Lab(B, C) ^2")
    m.add_rule("Lab(A, +C) = 1 .")
    m.add_rule("0.1: !Lab(A, C) ^2")
    rng = np.random.default_rng(0)
    nodes = [f"n{i}" for i in range(30)]
    links = [(a, b) for a in nodes for b in nodes if a != b and rng.random() < 0.1]
    m.add_data("Link", "observations", pd.DataFrame(links))
    m.add_data("Lab", "observations", pd.DataFrame([(n, c, float(c == "x")) for n in nodes[:10] for c in "xy"]))
    m.add_data("Lab", "targets", pd.DataFrame([(n, c) for n in nodes[10:] for c in "xy"]))
    tight = dict(eps_abs=1e-8, eps_rel=1e-8, gap_tol=1e-7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        local, r1 = m.infer(**tight)
        remote, r2 = m.infer(client=client, **tight)
    assert r1.converged and r2.converged
    assert abs(r1.objective - r2.objective) <= 1e-6 * max(1.0, abs(r1.objective))
    np.testing.assert_allclose(remote["Lab"]["value"], local["Lab"]["value"], atol=1e-4)
    with pytest.raises(ValueError, match="`client` runs consensus ADMM"):
        m.infer(client=client, method="highs")


def test_a_missing_shard_file_is_named_not_a_lost_worker(client, tmp_path):
    """The block's own error (its shard file not found) comes back as it is; the worker was never lost."""
    with pytest.raises(FileNotFoundError, match="nothere.npz"):
        solve(HLMRFShards([tmp_path / "nothere.npz"]), client)


def test_a_closed_client_is_refused_by_name():
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")
    cl = distributed.Client(cluster)
    cl.close()
    try:
        with pytest.raises(ValueError, match="`client` is closed"):
            solve(_random_model(0), cl)
        with pytest.raises(ValueError, match="`client` is closed"):
            map_batches(alpha_pass_batch, [np.zeros((2, 3, 2))], client=cl, args=(Potts(0.1),))
    finally:
        cluster.close()


def test_batch_arguments_are_named(client):
    """`f` (not `batches`) in marginals_batches, with its shapes; unknown chunk sizes; a `kwargs` not a dict."""
    theta_np = np.random.default_rng(0).normal(size=(20, 4))
    theta = da.from_array(theta_np, chunks=5)
    with pytest.raises(
        ValueError, match=r"`f` must be one vector of 5 count scores or a dask array of shape \(20, 5\)"
    ):
        marginals_batches(theta, da.zeros((25, 5), chunks=5), client=client)
    with pytest.raises(ValueError, match=r"`f` must be chunked like `theta` along axis 0"):
        marginals_batches(theta, da.zeros((20, 5), chunks=10), client=client)
    f_np = np.random.default_rng(1).normal(size=(20, 5))  # array_like per-model scores, as documented
    assert np.array_equal(marginals_batches(theta, f_np, client=client).p_on, marginals_batch(theta_np, f_np).p_on)
    with pytest.raises(ValueError, match=r"chunks of unknown size along axis 0; call its .compute_chunk_sizes"):
        marginals_batches(theta[theta[:, 0] > -10], np.zeros(5), client=client)
    with pytest.raises(TypeError, match="`kwargs` must be a dict of keyword arguments for `func`; got str"):
        map_batches(alpha_pass_batch, [np.zeros((2, 3, 2))], client=client, kwargs="x")
