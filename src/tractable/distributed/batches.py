"""Batch inference over Dask collections: many independent small problems, one block per task.

A batched function of the library (:func:`tractable.clique.alpha_pass_batch`,
:func:`tractable.cardinality.marginals_batch`, or any function of the same shape) solves a stack of
instances in one call. :func:`map_batches` maps it over the blocks of Dask collections:

* ``dask.array`` stacks, chunked along the batch axis (axis 0) only: one task per chunk (other axes
  are merged into one chunk first). Several arrays are zipped block by block (they must share their
  chunks along axis 0, e.g. ``theta`` and ``f``).
* ``dask.bag`` of instances (each item an array, or a tuple of arrays for several arguments): one
  task per partition, which stacks its items (so a Parquet dataset read by Dask, turned into a bag of
  rows, works the same way).
* a list of NumPy stacks (or of tuples of stacks): one task per list entry.

Every worker first registers :class:`~tractable.distributed._workers.WarmKernels` (the kernels are
loaded once per worker process, not once per task), and the client's workers are checked for the
driver's version of ``tractable`` before anything runs. The block results (frozen dataclasses whose
per-instance fields have the batch as their first axis) are concatenated in order into one result of
the same type; its ``time`` is the wall-clock time of the whole map.

Errors name the block: a ``ValueError`` raised by the batched function on block ``i`` (rows
``lo..hi - 1`` of the whole batch) is re-raised with that prefix, so an index inside a block's message
can be located in the whole stack.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from .._results import frozen_array
from ..cardinality.batch import marginals_batch
from ..clique.batch import alpha_pass_batch
from ._workers import check_client, ensure_warm

__all__ = ["alpha_pass_batches", "map_batches", "marginals_batches"]

#: instances per block when a NumPy stack is split by the per-area helpers
DEFAULT_BLOCK = 10_000


def _run_block(func, index, lo, parts, args, kwargs):
    """One task: stack the block's parts if needed, call ``func``; ValueErrors are prefixed by the block."""
    if len(parts) == 1 and not isinstance(parts[0], np.ndarray):
        items = list(parts[0])  # a bag partition: one instance per item, a tuple for several arguments
        if not items:
            raise ValueError(f"block {index} is an empty bag partition; repartition the bag (`batches`).")
        columns = list(zip(*items)) if isinstance(items[0], tuple) else [items]
        parts = [np.stack([np.asarray(x) for x in col]) for col in columns]
    try:
        return func(*parts, *args, **kwargs)
    except ValueError as err:
        n = parts[0].shape[0] if parts and hasattr(parts[0], "shape") else 0
        raise ValueError(f"block {index} (rows {lo}..{lo + n - 1}): {err}") from err


def _blocks(batches):
    """``(n_blocks, list of per-block argument lists, block sizes or None)`` of the supported collections."""
    import dask.array as da
    import dask.bag as db

    if isinstance(batches, (da.Array, db.Bag)):
        batches = (batches,)
    if isinstance(batches, list):
        if not batches:
            raise ValueError("`batches` must hold at least one block; got an empty list.")
        blocks = [list(b) if isinstance(b, tuple) else [b] for b in batches]
        for i, b in enumerate(blocks):
            if not all(isinstance(x, np.ndarray) for x in b):
                raise TypeError(f"`batches`[{i}] must be a NumPy array or a tuple of NumPy arrays.")
        return blocks, [b[0].shape[0] for b in blocks]
    if not isinstance(batches, tuple) or not batches:
        raise TypeError(
            "`batches` must be a dask.array.Array, a dask.bag.Bag, a tuple of them, or a list of NumPy stacks; "
            f"got {type(batches).__name__}."
        )
    if all(isinstance(b, da.Array) for b in batches):
        chunks0 = batches[0].chunks[0]
        cols = []
        for j, arr in enumerate(batches):
            if arr.ndim == 0:
                raise ValueError(f"`batches`[{j}] must have a batch axis (axis 0); got a 0-d array.")
            if any(math.isnan(c) for c in arr.chunks[0]):  # after a boolean mask, say
                raise ValueError(
                    f"`batches`[{j}] has chunks of unknown size along axis 0; call its .compute_chunk_sizes() first."
                )
            if arr.chunks[0] != chunks0:
                raise ValueError(
                    f"`batches`[{j}] must be chunked like `batches`[0] along axis 0 ({chunks0}); got {arr.chunks[0]}."
                )
            whole = arr.rechunk({i: -1 for i in range(1, arr.ndim)}) if arr.ndim > 1 else arr
            cols.append(list(whole.to_delayed().ravel()))
        return [list(row) for row in zip(*cols)], list(chunks0)
    if len(batches) == 1 and isinstance(batches[0], db.Bag):
        return [[d] for d in batches[0].to_delayed()], None
    raise TypeError(
        "`batches` must be one dask.bag.Bag, dask arrays chunked alike along axis 0, or a list of NumPy stacks; "
        f"got {tuple(type(b).__name__ for b in batches)}."
    )


def map_batches(func, batches, *, client=None, args=(), kwargs=None):
    """Run a batched function over the blocks of Dask collections and concatenate the results.

    Parameters
    ----------
    func : callable
        ``func(*block_arrays, *args, **kwargs)`` -> a frozen dataclass whose array fields with the
        block's length as first axis are per instance (the library's batch results), a NumPy array
        (B, ...) or a tuple of such arrays. Must be importable on the workers (a module-level
        function), as for any Dask task.
    batches : dask.array.Array, dask.bag.Bag, tuple of dask arrays, or list of NumPy stacks
        The instances, blocked along the batch axis (see the module docstring). Each bag item is one
        instance (an array, or a tuple of arrays, one per argument of ``func``).
    client : dask.distributed.Client, optional
        Where to run. Default: the current default client if one exists, else Dask's local
        scheduler (no worker checks, no warm-up).
    args : tuple
        Further positional arguments, the same for every block (e.g. a clique potential).
    kwargs : dict, optional
        Keyword arguments of ``func``, the same for every block.

    Returns
    -------
    Same type as ``func``'s result
        The per-block results concatenated in block order; a dataclass result gets ``time`` = the
        wall-clock seconds of the whole map, ``exact`` / ``converged`` true only when true for every
        block.

    Raises
    ------
    TypeError, ValueError
        Unsupported ``batches``, misaligned chunks, a ``client`` that is not a Dask client or whose
        workers lack ``tractable`` (or have another version), or a block that ``func`` rejects (the
        message names the block and its rows).

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from tractable.clique import Potts, alpha_pass_batch
    >>> from tractable.distributed import map_batches
    >>> phi = da.from_array(np.random.default_rng(0).normal(size=(6, 5, 3)), chunks=(2, 5, 3))
    >>> res = map_batches(alpha_pass_batch, phi, args=(Potts(0.2),), client=None)
    >>> res.assignment.shape
    (6, 5)
    """
    import dask

    t0 = time.perf_counter()
    if not callable(func):
        raise TypeError(f"`func` must be callable; got {type(func).__name__}.")
    if not isinstance(args, tuple):
        raise TypeError(f"`args` must be a tuple; got {type(args).__name__}.")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"`kwargs` must be a dict of keyword arguments for `func`; got {type(kwargs).__name__}.")
    kwargs = {} if kwargs is None else dict(kwargs)
    client = check_client(client, allow_none=True)
    blocks, sizes = _blocks(batches)
    offsets = np.concatenate([[0], np.cumsum(sizes)]) if sizes is not None else np.zeros(len(blocks) + 1, int)
    if client is not None:
        ensure_warm(client)
        if all(isinstance(x, np.ndarray) for b in blocks for x in b):
            # NumPy blocks go to the workers directly (not inside the task graph through the scheduler)
            futures = [
                client.submit(_run_block, func, i, int(offsets[i]), client.scatter(b, hash=False), args, kwargs)
                for i, b in enumerate(blocks)
            ]
        else:
            tasks = [dask.delayed(_run_block)(func, i, int(offsets[i]), b, args, kwargs) for i, b in enumerate(blocks)]
            futures = client.compute(tasks)
        results = client.gather(futures)
    else:
        tasks = [dask.delayed(_run_block)(func, i, int(offsets[i]), b, args, kwargs) for i, b in enumerate(blocks)]
        results = list(dask.compute(*tasks))
    return concatenate(results, time.perf_counter() - t0)


def concatenate(results, elapsed: float | None = None):
    """Block results concatenated along the batch axis (dataclasses field by field, arrays, tuples).

    A dataclass field is per instance when it is an array whose first axis is the block's length
    (the length of the first array field); other fields must agree across blocks, except ``time``
    (set to ``elapsed``, or summed), ``exact`` / ``converged`` (all) and ``message`` (the first).
    """
    first = results[0]
    if isinstance(first, np.ndarray):
        return frozen_array(np.concatenate(results, axis=0))
    if isinstance(first, tuple):
        return tuple(concatenate([r[i] for r in results]) for i in range(len(first)))
    if not dataclasses.is_dataclass(first):
        raise TypeError(f"`func` must return a dataclass, an array or a tuple of arrays; got {type(first).__name__}.")
    arrays = [f.name for f in dataclasses.fields(first) if isinstance(getattr(first, f.name), np.ndarray)]
    lengths = [getattr(r, arrays[0]).shape[0] for r in results] if arrays else []
    out = {}
    for f in dataclasses.fields(first):
        name = f.name
        values = [getattr(r, name) for r in results]
        v0 = values[0]
        if isinstance(v0, np.ndarray) and v0.ndim >= 1 and all(v.shape[0] == n for v, n in zip(values, lengths)):
            out[name] = frozen_array(np.concatenate(values, axis=0))
        elif isinstance(v0, tuple) and lengths and all(len(v) == n for v, n in zip(values, lengths)):
            out[name] = tuple(x for v in values for x in v)  # one entry per instance (e.g. ragged arrays)
        elif name == "time":
            out[name] = float(sum(values)) if elapsed is None else float(elapsed)
        elif name in ("exact", "converged"):
            out[name] = all(values)
        elif name == "message":
            out[name] = v0
        elif name == "n_iter":
            out[name] = max(values)
        else:
            out[name] = v0
    return dataclasses.replace(first, **out)


def _split(arr, block):
    return [arr[i : i + block] for i in range(0, arr.shape[0], block)] or [arr]


def alpha_pass_batches(phi, potential, *, client=None, block_size: int | None = None):
    """:func:`tractable.clique.alpha_pass_batch` over a Dask stack (or a NumPy stack split into blocks).

    Parameters
    ----------
    phi : dask.array.Array or array_like of shape (B, n, m)
        Node log-potentials of ``B`` cliques; a Dask array is used with its chunks along axis 0 (or
        rechunked to ``block_size`` when given), a NumPy array is split into blocks of ``block_size``
        cliques.
    potential : CliquePotential
        Shared by all cliques.
    client : dask.distributed.Client, optional
        As in :func:`map_batches`.
    block_size : int, optional
        Cliques per task: default 10,000 for a NumPy ``phi``, the array's own chunks for a Dask one.

    Returns
    -------
    CliqueMAPBatch
        Row ``b`` equals :func:`tractable.clique.alpha_pass` on ``phi[b]``.
    """
    import dask.array as da

    if isinstance(phi, da.Array):
        if block_size is not None:
            phi = phi.rechunk({0: _block(block_size)})
    else:
        phi = np.asarray(phi)
        if phi.ndim != 3:
            raise ValueError(f"`phi` must be a 3-D array (B, n, m); got shape {phi.shape}.")
        phi = _split(phi, _block(block_size))
    return map_batches(alpha_pass_batch, phi, client=client, args=(potential,))


def marginals_batches(theta, f, *, method: str = "auto", client=None, block_size: int | None = None):
    """:func:`tractable.cardinality.marginals_batch` over Dask stacks (or NumPy stacks split into blocks).

    Parameters
    ----------
    theta : dask.array.Array or array_like of shape (B, D)
    f : dask.array.Array or array_like of shape (B, D + 1) or (D + 1,)
        Per-model count scores, chunked like ``theta`` along axis 0, or one vector for all models.
    method : {"auto", "fft", "direct", "chain"}
        As in :func:`~tractable.cardinality.marginals_batch`.
    client : dask.distributed.Client, optional
        As in :func:`map_batches`.
    block_size : int, optional
        Models per task: default 10,000 for NumPy inputs, the arrays' own chunks for Dask ones
        (rechunked along axis 0 to ``block_size`` when given).

    Returns
    -------
    CardinalityMarginalsBatch
    """
    import dask.array as da

    shared = np.ndim(f) == 1 and not isinstance(f, da.Array)
    kwargs = {"method": method}
    if isinstance(theta, da.Array):
        if block_size is not None:
            theta = theta.rechunk({0: _block(block_size)})
            if isinstance(f, da.Array) and f.ndim == 2:
                f = f.rechunk({0: _block(block_size)})
        if shared:
            return map_batches(_with_shared_f, theta, client=client, args=(np.asarray(f),), kwargs=kwargs)
        if not isinstance(f, da.Array) and np.ndim(f) == 2 and np.shape(f)[0] == theta.shape[0]:
            f = da.from_array(np.asarray(f), chunks=(theta.chunks[0], -1))  # array_like per-model scores
        if not isinstance(f, da.Array) or f.ndim != 2 or f.shape[0] != theta.shape[0]:
            raise ValueError(
                f"`f` must be one vector of {theta.shape[1] + 1} count scores or a dask array of shape "
                f"({theta.shape[0]}, {theta.shape[1] + 1}) chunked like `theta`; got "
                f"{type(f).__name__} of shape {np.shape(f)}."
            )
        if f.chunks[0] != theta.chunks[0]:
            raise ValueError(f"`f` must be chunked like `theta` along axis 0 ({theta.chunks[0]}); got {f.chunks[0]}.")
        return map_batches(marginals_batch, (theta, f), client=client, kwargs=kwargs)
    theta = np.asarray(theta)
    if theta.ndim != 2:
        raise ValueError(f"`theta` must be a 2-D array (B, D); got shape {theta.shape}.")
    block = _block(block_size)
    if shared:
        return map_batches(_with_shared_f, _split(theta, block), client=client, args=(np.asarray(f),), kwargs=kwargs)
    f = np.asarray(f)
    if f.shape[:1] != theta.shape[:1]:
        raise ValueError(
            f"`f` must have shape ({theta.shape[0]}, {theta.shape[1] + 1}) or ({theta.shape[1] + 1},); got {f.shape}."
        )
    return map_batches(marginals_batch, list(zip(_split(theta, block), _split(f, block))), client=client, kwargs=kwargs)


def _with_shared_f(theta, f, *, method):
    """``marginals_batch(theta, f)`` with ``f`` shared by the block's models (an argument, not a block)."""
    return marginals_batch(theta, f, method=method)


def _block(block_size) -> int:
    from .._validate import check_int

    return DEFAULT_BLOCK if block_size is None else check_int(block_size, "block_size", minimum=1)
