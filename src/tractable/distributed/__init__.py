"""Inference past one machine on Dask (``pip install 'tractable[distributed]'``).

Two ways users outgrow one process, both run on a ``dask.distributed.Client`` (a laptop's
``LocalCluster``, dask-jobqueue on a cluster, a cloud deployment):

* **millions of small independent problems**: :func:`map_batches` maps a batched function of the
  library (:func:`tractable.clique.alpha_pass_batch`, :func:`tractable.cardinality.marginals_batch`)
  over the blocks of a ``dask.array`` stack or a ``dask.bag``; :func:`alpha_pass_batches` and
  :func:`marginals_batches` do it for their areas. Kernels are warmed once per worker
  (:class:`WarmKernels`).
* **one hinge-loss MRF too large for one process**: :func:`solve` runs consensus ADMM with the
  model's terms partitioned across the workers; each partition's terms, local copies and multipliers
  stay on its worker for the whole run, and an iteration exchanges only the consensus values of the
  variables a partition touches and its partial sums. :class:`HLMRFShards` (e.g. the shard set of
  :meth:`tractable.psl.Model.ground_shards`) are built on the workers, which also add up the consensus
  among themselves.

Every entry point checks the client first (:func:`check_client`): workers without ``tractable`` or
with another version of it are named in a ``ValueError`` before any work is sent.
"""

from ._workers import WarmKernels, check_client
from .batches import alpha_pass_batches, map_batches, marginals_batches
from .consensus import HLMRFShards, WorkerLostError, solve

__all__ = [
    "HLMRFShards",
    "WarmKernels",
    "WorkerLostError",
    "alpha_pass_batches",
    "check_client",
    "map_batches",
    "marginals_batches",
    "solve",
]
