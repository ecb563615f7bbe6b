"""The Dask client and its workers: checks before a run, and kernels warmed once per worker.

:func:`check_client` refuses, before any work is sent, a client that is not a
``dask.distributed.Client``, has no workers, or whose workers do not import the same version of
``tractable`` as the driver (``Client.get_versions``): a mismatch would otherwise surface as an
unpickling error deep inside the first task, or as silently different answers.

:class:`WarmKernels` is a worker plugin: when it is registered (and on every worker that joins
later) it calls the batched functions on tiny inputs, so that numba loads (or compiles) their
kernels once per worker process, before the first real block arrives; the numba on-disk cache
(``NUMBA_CACHE_DIR``, see :mod:`tractable._numba`) makes that a load on every worker but the first.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["WarmKernels", "WarmShardKernels", "check_client", "warm", "warm_shards"]

#: name under which the warm-up plugin is registered (registering it again replaces nothing)
PLUGIN_NAME = "tractable-warm-kernels"
SHARD_PLUGIN_NAME = "tractable-warm-shard-kernels"


def _import_distributed():
    try:
        import distributed
    except ImportError as err:  # pragma: no cover - the extra is installed in every test environment
        raise ImportError(
            "tractable.distributed needs Dask's distributed scheduler: pip install 'tractable[distributed]'."
        ) from err
    return distributed


def check_client(client, *, allow_none: bool = False):
    """Check ``client`` and its workers before a run; return it.

    Parameters
    ----------
    client : dask.distributed.Client or None
        ``None`` is accepted only with ``allow_none`` (then the default client is used when one
        exists, else ``None`` is returned: Dask's local scheduler runs the work).
    allow_none : bool

    Raises
    ------
    TypeError
        ``client`` is not a ``dask.distributed.Client``.
    ValueError
        The client is closed, the cluster has no workers, or a worker lacks ``tractable`` or has another
        version of it (the message names the workers and their versions).
    """
    distributed = _import_distributed()
    if client is None:
        if not allow_none:
            raise TypeError("`client` must be a dask.distributed.Client; got None.")
        try:
            client = distributed.default_client()
        except ValueError:
            return None
    if not isinstance(client, distributed.Client):
        raise TypeError(f"`client` must be a dask.distributed.Client; got {type(client).__name__}.")
    if client.status in ("closing", "closed"):
        raise ValueError(f"`client` is {client.status}; connect a new one (Client(...)) for the run.")
    from .. import __version__

    versions = client.get_versions(packages=["tractable"])
    workers = versions.get("workers", {})
    if not workers:
        raise ValueError("`client` has no workers; start some (e.g. LocalCluster(n_workers=2)) before the run.")
    bad = {}
    for addr, info in workers.items():
        found = (info.get("packages") or {}).get("tractable")
        if found != __version__:
            bad[addr] = found
    if bad:
        listed = ", ".join(f"{a}: {'not installed' if v is None else v}" for a, v in sorted(bad.items()))
        raise ValueError(
            f"`client` has workers without tractable {__version__} (the driver's version): {listed}. "
            "Install the same version on every worker."
        )
    return client


def warm() -> int:
    """Call every batched function on a tiny input, so that numba loads its kernels; returns 0.

    Runs on a worker (through :class:`WarmKernels`) or in the driver. Every kernel specialization
    that a real call uses is reached: alpha-pass for SUM / MAX / majority potentials, the chain over
    a stack, and one ADMM block step.
    """
    from ..cardinality.batch import marginals_batch
    from ..clique import LinearMajority, Makespan, Potts
    from ..clique.batch import alpha_pass_batch

    phi = np.zeros((1, 2, 2))
    for potential in (Potts(1.0), Makespan(1.0), LinearMajority(np.eye(2))):
        alpha_pass_batch(phi, potential)
    marginals_batch(np.zeros((1, 2)), np.zeros(3), method="chain")
    from ..hlmrf import HLMRF, partition

    model = HLMRF(2)
    model.add_potential([0, 1], [1.0, -1.0], 0.5)
    model.add_constraint([0, 1], [1.0, 1.0], -1.0)
    block = partition.split_terms(model, 1, strategy="contiguous", constraints="local").blocks[0]
    x, y = partition.block_start(block, np.zeros(2))
    partition.block_step(block, x, y, np.zeros(2), 1.0, 1.0)
    partition.block_certificate(block, y, np.zeros(2))
    return 0


def warm_shards() -> int:
    """Load the kernels of the runs over shards, which :func:`warm` leaves out: the blocks of shard
    folders (``int32`` indices), an owner's consensus half and its share of the bound (with and without
    consensus-step constraints of one, two and more unknowns); returns 0."""
    from ..hlmrf import HLMRF, partition

    model = HLMRF(6)
    model.add_potential([0, 2, 3], [1.0, -1.0, 1.0], 0.5)
    model.add_constraints([0, 2, 3, 6], [0, 1, 2, 3, 4, 5], np.ones(6), -1.0, "==")
    for cons in ("local", "consensus"):
        part = partition.split_terms(model, 1, strategy="contiguous", constraints=cons)
        blk = part.blocks[0]
        blk = dataclasses.replace(blk, idx=blk.idx.astype(np.int32))
        x, y = partition.block_start(blk, np.zeros(part.n))
        partition.block_step(blk, x, y, np.zeros(blk.n_local), 1.0, 1.0)
        partition.block_certificate(blk, y, np.zeros(blk.n_local))
        partition.block_certificate(blk, y, np.zeros(blk.n_local), recession=True)
        z = np.zeros(part.n)
        partition.consensus_step(part, np.zeros(part.n), np.zeros(3), z, np.zeros(5), rho=1.0, stop=False)
        parts = [(np.zeros(b.n_local), np.zeros(6)) for b in part.blocks]
        partition.consensus_certificate(part, parts, z)
        partition.consensus_certificate(part, parts, z, recession=True)
    return 0


try:
    from distributed.diagnostics.plugin import WorkerPlugin as _WorkerPlugin
except ImportError:  # pragma: no cover - without the extra the plugin is never registered
    _WorkerPlugin = object


class WarmKernels(_WorkerPlugin):
    """Worker plugin that runs :func:`warm` once per worker process (at registration or start)."""

    idempotent = True  # registering it again (each map_batches call does) leaves the plugin as is

    def setup(self, worker=None):
        warm()


class WarmShardKernels(_WorkerPlugin):
    """Worker plugin that runs :func:`warm_shards` once per worker process (runs over shards)."""

    idempotent = True

    def setup(self, worker=None):
        warm_shards()


def ensure_warm(client, shards: bool = False) -> None:
    """Register :class:`WarmKernels` (and, for runs over shards, :class:`WarmShardKernels`) on ``client``
    (a no-op when they are registered already).

    A worker lost while a plugin is broadcast is not an error here: the run that follows names it
    (``WorkerLostError``) when it places a block there."""
    plugins = [(WarmKernels(), PLUGIN_NAME)] + ([(WarmShardKernels(), SHARD_PLUGIN_NAME)] if shards else [])
    for plugin, name in plugins:
        try:
            client.register_plugin(plugin, name=name)
        except (OSError, TimeoutError):  # CommClosedError is an OSError
            pass
