"""PSL programs grounded into shards (``Model.ground_shards``) and solved on a LocalCluster of 2 workers that
add up the consensus among themselves.

The shard set must hold exactly the ground program of ``Model.ground`` (compared term by term, in the
consensus numbering, after the fixed atoms are folded in), and the distributed answer must be the
one-process answer to the certified gap. One cluster for the module; the worker-loss test runs last.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

from tractable.distributed import HLMRFShards, WorkerLostError, solve  # noqa: E402
from tractable.distributed._shardfiles import read_block, read_manifest, read_owner_constraints, read_variables  # noqa: E402
from tractable.distributed.consensus import _run  # noqa: E402
from tractable.hlmrf import solve as solve_local  # noqa: E402
from tractable.hlmrf._kernels import KIND_HINGE, KIND_SQUARED  # noqa: E402
from tractable.psl import Model  # noqa: E402
from tractable.psl import shards as psl_shards  # noqa: E402

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("_psl_generate_for_shards", HERE.parent / "psl" / "_generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)

#: ADMM to a tight certified gap on both sides: two answers of the same program then agree to about 2e-7 of
#: the objective (each is within 1e-7 of the optimum)
TIGHT = dict(eps_abs=1e-9, eps_rel=1e-9, gap_tol=1e-7, max_iter=50_000)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
    )
    cl = distributed.Client(cluster)
    yield cl
    cl.close()
    cluster.close()


def _program(tmp_path, name, scale=1.0, seed=0):
    config = generate.generate(name, tmp_path / "programs", scale=scale, rng=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # ignored PSL options of the configurations
        return Model.from_json(config)


def _small_labels(n_nodes=40, seed=0):
    """Collective classification with evidence and prior pulling opposite ways and a functional constraint."""
    rng = np.random.default_rng(seed)
    m = Model()
    m.add_predicate("Link", 2, closed=True)
    m.add_predicate("Local", 2, closed=True)
    m.add_predicate("Lab", 2)
    m.add_rule("1: Link(A, B) & Lab(A, C) -> Lab(B, C) ^2")
    m.add_rule("0.5: Local(A, C) -> Lab(A, C) ^2")
    m.add_rule("0.2: !Lab(A, C) ^2")
    m.add_rule("Lab(A, +C) = 1 .")
    nodes = [f"n{i}" for i in range(n_nodes)]
    labels = ["x", "y", "z"]
    links = sorted({(a, nodes[j]) for a in nodes for j in rng.integers(n_nodes, size=3) if nodes[j] != a})
    m.add_data("Link", "observations", pd.DataFrame(links))
    m.add_data("Local", "observations", pd.DataFrame([(n, c, round(rng.random(), 3)) for n in nodes for c in labels]))
    obs = nodes[: n_nodes // 5]
    m.add_data("Lab", "observations", pd.DataFrame([(n, c, float(c == "x")) for n in obs for c in labels]))
    m.add_data("Lab", "targets", pd.DataFrame([(n, c) for n in nodes[n_nodes // 5 :] for c in labels]))
    return m


def _canonical_from_model(g):
    """Every term of the one-process ground program, consensus-numbered, as comparable tuples."""
    comp = g.hlmrf._compile()
    out = []
    for t in range(comp.const.size):
        lo, hi = comp.indptr[t], comp.indptr[t + 1]
        row = tuple(sorted(zip(comp.idx[lo:hi].tolist(), comp.coef[lo:hi].tolist())))
        out.append((int(comp.kind[t]), float(comp.weight[t]), float(comp.const[t]), row))
    return sorted(out), comp


def _canonical_from_shards(sg):
    """The same from the shard set: every shard's block (local numbering mapped back) and the owners'
    consensus-step constraints."""
    out = []
    for path in sg.shards.sources:
        b, _, counts = read_block(path)
        assert b.idx.dtype == np.int32  # half the index memory of the one-process arrays
        np.testing.assert_array_equal(counts, np.bincount(b.idx, minlength=b.n_local))
        glob = b.variables[b.idx]
        for t in range(b.n_terms):
            lo, hi = b.indptr[t], b.indptr[t + 1]
            row = tuple(sorted(zip(glob[lo:hi].tolist(), b.coef[lo:hi].tolist())))
            out.append((int(b.kind[t]), float(b.weight[t]), float(b.const[t]), row))
        # the layout the kernels vectorize: pairs, then singles, of hinges with a positive weight
        lengths = np.diff(b.indptr)
        fast = np.isin(b.kind, (KIND_HINGE, KIND_SQUARED)) & (b.weight > 0)
        assert np.all(lengths[: b.n_pair] == 2) and np.all(fast[: b.n_pair])
        assert np.all(lengths[b.n_pair : b.n_pair + b.n_single] == 1) and np.all(fast[b.n_pair : b.n_pair + b.n_single])
    manifest = read_manifest(sg.directory)
    if manifest["constraints"] == "consensus":
        _, _, bounds = read_variables(sg.directory)
        for j in range(manifest["n_shards"]):
            ip, idx, coef, const, kind = read_owner_constraints(sg.directory, j, int(bounds[j + 1] - bounds[j]))
            for t in range(const.size):
                lo, hi = ip[t], ip[t + 1]
                row = tuple(sorted(zip((idx[lo:hi] + bounds[j]).tolist(), coef[lo:hi].tolist())))
                out.append((int(kind[t]), 0.0, float(const[t]), row))
                # an owner projects only constraints over its own variables
                assert np.all((idx[lo:hi] >= 0) & (idx[lo:hi] < bounds[j + 1] - bounds[j]))
    return sorted(out)


# --------------------------------------------------------------------------- the shard set is the ground program


@pytest.mark.parametrize(
    "program",
    ["citeseer", "drug-drug-interaction", "user-modeling", "social-network-analysis", "imdb-er", "labels"],
)
def test_shards_hold_the_ground_program(tmp_path, program):
    def make():
        return _small_labels() if program == "labels" else _program(tmp_path, program)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        g = make().ground()
        # tiny chunks: every rule with a candidate atom is grounded in many pieces
        sg = make().ground_shards(tmp_path / "set", 3, chunk_size=37)
    assert sg.rule_counts == g.rule_counts
    assert sg.offset == pytest.approx(g.offset, rel=1e-12, abs=1e-12)
    assert sg.n_variables == g.hlmrf.n_variables and sum(sg.shard_terms) <= g.n_potentials + g.n_constraints
    want, comp = _canonical_from_model(g)
    free, x_fixed, bounds = read_variables(sg.directory)
    np.testing.assert_array_equal(free, comp.free)
    np.testing.assert_array_equal(x_fixed, comp.x_fixed)
    assert bounds[0] == 0 and bounds[-1] == free.size and np.all(np.diff(bounds) >= 0)
    # the same terms, bit for bit (the fixed values are folded in the same order of additions)
    assert _canonical_from_shards(sg) == want
    pd.testing.assert_frame_equal(sg.atoms, g.atoms)
    if program in ("citeseer", "labels"):
        assert max(sg.rule_chunks) > 1  # the chunked grounding was exercised
        assert read_manifest(sg.directory)["constraints"] == "consensus"
    if program == "drug-drug-interaction":  # interacts(D1, D2) = interacts(D2, D1): constraints share atoms
        assert read_manifest(sg.directory)["constraints"] == "local"


def test_shards_are_balanced(tmp_path):
    sg = _small_labels(200).ground_shards(tmp_path / "set", 4)
    terms = np.array(sg.shard_terms)
    assert terms.min() >= 0.7 * terms.mean()  # a multiplicative hash of each ground rule's smallest atom


# --------------------------------------------------------------------------- solving the shards


def test_infer_with_shards_gives_the_answer_of_one_process(client, tmp_path):
    m = _small_labels(60)
    local, r1 = m.infer(**TIGHT)
    m = _small_labels(60)
    assert m.sharded_ground is None
    remote, r2 = m.infer(client=client, shards=True, **TIGHT)
    sg = m.sharded_ground  # the counts of the ground program, as Model.ground reports them
    assert sg.rule_counts == _small_labels(60).ground().rule_counts and len(sg.shard_terms) == 2
    assert r1.converged and r2.converged and "reduced among the workers" in r2.message
    assert r2.gap <= TIGHT["gap_tol"] and r2.max_violation <= 1e-9  # the constraints in the consensus step
    assert abs(r1.objective - r2.objective) <= 2 * TIGHT["gap_tol"] * max(1.0, abs(r1.objective))
    assert r2.lower_bound <= r1.objective + 1e-9 and r1.lower_bound <= r2.objective + 1e-9
    np.testing.assert_allclose(remote["Lab"]["value"], local["Lab"]["value"], atol=1e-3)
    assert list(remote) == list(local) and remote["Lab"][[0, 1]].equals(local["Lab"][[0, 1]])


@pytest.mark.filterwarnings("ignore::tractable.ConvergenceWarning")
@pytest.mark.parametrize("program", ["citeseer", "drug-drug-interaction"])
def test_generated_programs_on_the_cluster(client, tmp_path, program):
    """A psl-examples program on generated data: the answer of one process, in 3 shards on 2 workers.

    citeseer's functional constraints are projected by the owners (certified gap); drug-drug-interaction's
    ``interacts(D1, D2) = interacts(D2, D1) .`` share atoms and keep local copies: the same iterates up to
    the order of additions, compared after a fixed number of iterations."""
    opts = TIGHT if program == "citeseer" else dict(eps_abs=1e-6, eps_rel=1e-6, max_iter=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        _, r1 = _program(tmp_path, program, scale=2).infer(**opts)
        _, r2 = _program(tmp_path, program, scale=2).infer(client=client, shards=3, shard_dir=tmp_path / "s", **opts)
    assert r1.status == r2.status and r1.n_iter == r2.n_iter
    if program == "citeseer":
        assert r1.converged and abs(r1.objective - r2.objective) <= 2 * TIGHT["gap_tol"] * max(1.0, abs(r1.objective))
    else:  # summation order only: 1e-9 of the objective after 200 iterations
        assert abs(r1.objective - r2.objective) <= 1e-9 * max(1.0, abs(r1.objective))
        assert r2.max_violation == pytest.approx(r1.max_violation, rel=1e-6, abs=1e-12)
    assert (tmp_path / "s" / "manifest.json").exists()  # a given shard_dir is kept


def test_solve_a_shard_set_directly(client, tmp_path):
    m = _small_labels(50)
    g = m.ground()
    sg = _small_labels(50).ground_shards(tmp_path / "set", 2)
    shards = HLMRFShards.from_directory(tmp_path / "set")
    assert shards.sources == sg.shards.sources
    one = solve_local(g.hlmrf, **TIGHT)
    res = solve(shards, client, **TIGHT)
    assert res.converged and abs(res.objective - one.objective) <= 2e-7 * max(1.0, one.objective)
    # the blocks' objective is the model's
    assert res.objective == pytest.approx(g.hlmrf.objective(res.x), rel=1e-12, abs=1e-12)
    # a start point and a shorter budget: the best certified point so far, feasible
    with pytest.warns(Warning, match="iteration limit"):
        short = solve(shards, client, x0=res.x, max_iter=20, eps_abs=1e-14, eps_rel=1e-14, gap_tol=1e-15)
    assert short.status == "max_iter_reached" and np.isfinite(short.gap) and short.max_violation <= 1e-9
    assert short.lower_bound <= one.objective + 1e-9 <= short.objective + 2e-9
    with pytest.warns(Warning, match="time"):
        timed = solve(shards, client, time_limit=0.05, eps_abs=1e-14, eps_rel=1e-14, gap_tol=1e-15)
    assert timed.status == "time_limit_reached" and timed.x.shape == (g.hlmrf.n_variables,)


def test_solve_details_and_memory(client, tmp_path):
    sg = _small_labels(300).ground_shards(tmp_path / "set", 2)
    res, tim = _run(sg.shards, client, n_partitions=None, strategy="bfs", rng=None, timeout=60, options=dict(TIGHT))
    assert res.converged
    mem = tim["memory"]
    terms = sum(r["n_terms"] for r in mem)
    # model + solver state per ground rule on the workers: int32 indices, float32 average of the multipliers
    assert sum(r["block"] + r["state"] for r in mem) / terms <= 100
    assert all(r["build"]["rss_before"] > 0 for r in mem)


def test_auto_threshold(client, tmp_path, monkeypatch):
    monkeypatch.setattr(psl_shards, "SHARD_THRESHOLD", 1)
    _, res = _small_labels().infer(client=client, **TIGHT)
    assert "shards on 2 workers" in res.message
    monkeypatch.setattr(psl_shards, "SHARD_THRESHOLD", 10**12)
    _, res = _small_labels().infer(client=client, **TIGHT)
    assert "blocks on 2 workers" in res.message
    m = _small_labels()
    m.ground()  # grounded here already: split here, whatever the size
    monkeypatch.setattr(psl_shards, "SHARD_THRESHOLD", 1)
    _, res = m.infer(client=client, **TIGHT)
    assert "blocks on 2 workers" in res.message


# --------------------------------------------------------------------------- bad input, nothing half written


def test_bad_input(client, tmp_path):
    m = _small_labels()
    with pytest.raises(ValueError, match=r"`n_shards` must be a positive integer; got 0"):
        m.ground_shards(tmp_path / "a", 0)
    with pytest.raises(ValueError, match=r"`chunk_size` must be a positive integer; got -1"):
        m.ground_shards(tmp_path / "a", 2, chunk_size=-1)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"`directory` .* is a file"):
        m.ground_shards(tmp_path / "file", 2)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match=r"`directory` .* holds other files"):
        m.ground_shards(tmp_path / "mine", 2)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    with pytest.raises(ValueError, match=r"`shards`=True needs a `client`"):
        m.infer(shards=True)
    with pytest.raises(TypeError, match=r"`shards` must be None, a bool or a number of shards; got str"):
        m.infer(client=client, shards="2")
    with pytest.raises(ValueError, match=r"`shards` must be a positive number of shards; got 0"):
        m.infer(client=client, shards=0)
    with pytest.raises(ValueError, match="is not a readable shard set"):
        HLMRFShards.from_directory(tmp_path / "mine")
    sg = m.ground_shards(tmp_path / "set", 2)
    # the owners project the set's constraints: a subset of its shards is refused
    with pytest.raises(ValueError, match=r"`model` must list every shard of the set"):
        solve(HLMRFShards(sg.shards.sources[:1]), client)
    # a damaged shard file is named (the worker's error comes back as it was raised)
    path = Path(sg.shards.sources[1]) / "pair.coef"
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(ValueError, match=r"shard file .*pair\.coef.* bytes; expected"):
        solve(sg.shards, client)


def test_nothing_half_written(tmp_path):
    good = _small_labels().ground_shards(tmp_path / "set", 2)
    before = read_manifest(good.directory)["set_id"]
    bad = _small_labels()
    bad.add_predicate("Other", 1)
    bad.add_rule("1: Lab(A, C) -> Other(A)")  # Other(A) is neither observed nor a target: PSL's error
    with pytest.raises(ValueError, match="is neither observed nor a target"):
        bad.ground_shards(tmp_path / "set", 2)
    assert read_manifest(tmp_path / "set")["set_id"] == before  # the earlier set is left as it was
    with pytest.raises(ValueError, match="is neither observed nor a target"):
        bad.ground_shards(tmp_path / "new", 2)
    assert sorted(os.listdir(tmp_path)) == ["set"]  # no partial folder left behind
    again = _small_labels().ground_shards(tmp_path / "set", 3)  # an earlier set is replaced whole
    manifest = read_manifest(again.directory)
    assert manifest["set_id"] != before and manifest["n_shards"] == 3
    assert sorted(os.listdir(tmp_path)) == ["set"]
    assert json.loads((tmp_path / "set" / "manifest.json").read_text())["format"] == "tractable.blockshards"


def test_lost_worker_is_named_in_a_sharded_run(client, tmp_path):
    """A worker killed during a run over shards ends it with WorkerLostError naming the worker."""
    sg = _small_labels(400).ground_shards(tmp_path / "set", 2)
    victim = sorted(client.scheduler_info()["workers"])[1]
    pid = client.run(os.getpid, workers=[victim])[victim]

    def kill():
        time.sleep(2.0)
        os.kill(pid, 9)

    killer = threading.Thread(target=kill)
    t0 = time.perf_counter()
    killer.start()
    try:
        with pytest.raises(WorkerLostError, match=f"worker {victim} \\(holding block 1\\)"):
            solve(sg.shards, client, eps_abs=1e-15, eps_rel=1e-15, gap_tol=1e-15, max_iter=10**7, timeout=30)
    finally:
        killer.join()
    assert time.perf_counter() - t0 < 90
    client.wait_for_workers(2, timeout=60)
