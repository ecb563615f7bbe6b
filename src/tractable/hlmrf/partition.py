"""Consensus ADMM over a partition of the terms: the building blocks of a distributed solver.

One iteration of consensus ADMM (see :mod:`tractable.hlmrf.admm`) has two halves:

* a **term half** that touches only a term's own local copies ``x_j``, multipliers ``y_j`` and the
  consensus values ``z_v`` of the variables it reads: the multiplier update of the previous
  iteration ``y_j += rho (x_j - z_v)``, the exact local update, over-relaxation, and the
  per-variable partial sums ``sum_j (x_j + y_j / rho)`` together with the partial squared norms of
  the residual and of its tolerances;
* a **consensus half** over the variables: add up the partial sums of all blocks, divide by the
  number of copies, clip to [0, 1], project onto the consensus-step constraints, and form the
  residuals and the stop test (Boyd et al. 2011, Sec. 3.3).

So the terms can be split into blocks, each with its *own* numbering of the variables it touches
(``Block.variables`` maps them back), and each block can live in another process or machine: per
iteration it receives the consensus values of its variables and sends back one partial sum per
variable plus three numbers. :func:`block_step` is the term half of one block,
:func:`consensus_step` the consensus half, :func:`combine` adds up the blocks' partials. The
single-process solver runs exactly these kernels: its fused loop
(``tractable.hlmrf._kernels.admm_run``) is the one-block case, and ``solve(..., n_partitions=k)``
runs :func:`split_terms`' blocks one after the other with the functions below. The iterates do not
depend on the partition except through the order of floating-point additions.

The certified lower bound (:mod:`tractable.hlmrf.bound`) splits the same way:
:func:`block_certificate` per block, :func:`consensus_certificate` once.

Splitting
---------
Communication per iteration is one value per (block, variable) pair with a copy in the block, so a
good split keeps the copies of each variable in few blocks. :func:`split_terms` orders the terms,
then cuts the order into ``n_blocks`` contiguous runs with about equal numbers of copies (the work
of a block is proportional to its copies):

* ``"bfs"`` (default): reverse Cuthill–McKee order (a breadth-first search that visits
  low-degree neighbours first) of the bipartite term–variable graph, restricted to the terms; terms
  that share variables end up close in the order, so each run is a connected, compact region of the
  network and only the variables on its boundary are shared;
* ``"contiguous"``: the term list's own order (the model's potentials and constraints, grouped for
  the kernels: see ``Block.terms``);
* ``"random"``: a random order, the baseline without locality.

``Partition.cut_variables`` (variables with copies in two blocks or more) and
``Partition.cut_volume`` (the sum over the variables of the number of blocks holding a copy,
minus one: the extra partial sums sent per iteration) measure the split.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import as_float_array, check_choice, check_int, check_positive, check_rng
from . import _kernels, bound
from .model import HLMRF

__all__ = [
    "STRATEGIES",
    "Block",
    "Partition",
    "split_terms",
    "block_start",
    "block_step",
    "combine",
    "consensus_step",
    "block_certificate",
    "consensus_certificate",
]

#: the term orders of :func:`split_terms`
STRATEGIES = ("bfs", "contiguous", "random")


@dataclass(frozen=True, eq=False)
class Block:
    """One block of terms with its own numbering of the variables it touches.

    Attributes
    ----------
    terms : ndarray of shape (n_terms,)
        Increasing positions of the block's terms in the partition's term list (the model's
        potentials and the constraints that keep local copies, in the kernels' order:
        hinges and squared hinges with two unknowns, then with one, then the rest, each group in
        the model's order).
    variables : ndarray of shape (n_local,)
        Increasing consensus index of each local variable.
    indptr : ndarray of shape (n_terms + 1,)
        Term ``t`` owns the copies ``indptr[t]:indptr[t + 1]``.
    idx : ndarray of shape (n_copies,)
        Local variable of each copy (an index into ``variables``).
    coef : ndarray of shape (n_copies,)
    const, weight : ndarray of shape (n_terms,)
    kind : ndarray of shape (n_terms,)
        ``int8`` codes: 0 hinge, 1 squared hinge, 2 constraint ``<= 0``, 3 constraint ``== 0``.
    max_arity : int
        Largest number of copies of one term (at least 1).
    n_pair, n_single : int
        The block's leading terms that take the vectorized local update
        (:func:`tractable.hlmrf._kernels.fast_counts`): hinges and squared hinges with two unknowns,
        then with one.
    """

    terms: np.ndarray
    variables: np.ndarray
    indptr: np.ndarray
    idx: np.ndarray
    coef: np.ndarray
    const: np.ndarray
    weight: np.ndarray
    kind: np.ndarray
    max_arity: int
    n_pair: int = 0
    n_single: int = 0

    @property
    def n_terms(self) -> int:
        return self.kind.size

    @property
    def n_copies(self) -> int:
        return self.idx.size

    @property
    def n_local(self) -> int:
        return self.variables.size

    def arrays(self) -> tuple:
        """``(indptr, idx, coef, const, weight, kind)``, the term arrays of the kernels."""
        return self.indptr, self.idx, self.coef, self.const, self.weight, self.kind


@dataclass(frozen=True, eq=False)
class Partition:
    """The terms of a compiled model split into blocks, plus what the consensus step needs.

    Attributes
    ----------
    blocks : tuple of Block
    counts : ndarray of shape (n,)
        Number of copies of each consensus variable over all blocks (float64).
    zc_indptr, zc_idx, zc_coef, zc_const, zc_kind : ndarray
        The constraints handled in the consensus step (pairwise disjoint supports, consensus
        numbering; CSR like a block's terms), empty unless ``constraints`` put them there.
    n_terms, n_copies : int
        Totals over the blocks.
    max_copies : int
        Largest number of copies of one variable.
    strategy : str
    cut_variables : int
        Variables with copies in two blocks or more.
    cut_volume : int
        Sum over the variables of (number of blocks holding a copy - 1).
    free : ndarray of shape (n,)
        Model index of each consensus variable (fixed variables are folded into the constants).
    x_fixed : ndarray of shape (n_variables,)
        The model's fixed values (0 for free variables).
    offset : float
        Objective of the potentials over fixed variables only.
    """

    blocks: tuple
    counts: np.ndarray
    zc_indptr: np.ndarray
    zc_idx: np.ndarray
    zc_coef: np.ndarray
    zc_const: np.ndarray
    zc_kind: np.ndarray
    n_terms: int
    n_copies: int
    max_copies: int
    strategy: str
    cut_variables: int
    cut_volume: int
    free: np.ndarray
    x_fixed: np.ndarray
    offset: float

    @property
    def n(self) -> int:
        """Number of consensus (free) variables."""
        return self.counts.size

    def consensus_constraints(self) -> tuple:
        """``(zc_indptr, zc_idx, zc_coef, zc_const, zc_kind)``."""
        return self.zc_indptr, self.zc_idx, self.zc_coef, self.zc_const, self.zc_kind

    def full(self, z) -> np.ndarray:
        """The model's variables (fixed values included) from consensus values ``z`` of shape (n,)."""
        x = self.x_fixed.copy()
        x[self.free] = z
        return x


def _split_constraints(comp, mode: str):
    """Terms that keep local copies (in the kernels' order), and the disjoint constraints moved to
    the consensus step.

    Only the weights depend on more than the model's structure (and only through which of them are 0):
    a compiled model that shares its structure (``comp.shared``, see ``HLMRF.with_weights``) computes
    the split once, and later calls gather the new weights."""
    zero = comp.weight[: comp.n_potentials] <= 0.0
    hit = comp.shared.get(("split", mode))
    if hit is not None and np.array_equal(hit[0], zero):
        _, rows, terms, zcons = hit
        return (*terms[:4], comp.weight[rows], terms[5]), zcons
    rows, zcons = _split_rows(comp, mode)
    ip, pos = _permuted_rows(comp.indptr, rows)
    terms = (ip, comp.idx[pos], comp.coef[pos], comp.const[rows], comp.weight[rows], comp.kind[rows])
    comp.shared[("split", mode)] = (zero, rows, terms, zcons)
    return terms, zcons


def _split_rows(comp, mode: str):
    """The terms with local copies as term ids in the kernels' order, and the consensus constraints."""
    is_con = comp.kind >= _kernels.KIND_LEQ
    rows_con = np.flatnonzero(is_con)
    empty = (np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int8))
    if mode == "local" or rows_con.size == 0:
        return _kernels.kernel_order(comp.indptr, comp.kind, comp.weight), empty
    lengths = np.diff(comp.indptr)
    owner = np.repeat(is_con, lengths)
    disjoint = np.bincount(comp.idx[owner], minlength=comp.free.size).max() <= 1
    if not disjoint:
        if mode == "auto":
            return _kernels.kernel_order(comp.indptr, comp.kind, comp.weight), empty
        raise ValueError(
            "`constraints`='consensus' needs constraints whose variables are pairwise disjoint; "
            "two constraints share a variable (use 'local')."
        )
    keep = np.flatnonzero(~is_con)
    ip = np.zeros(keep.size + 1, dtype=np.int64)
    np.cumsum(lengths[keep], out=ip[1:])
    rows = keep[_kernels.kernel_order(ip, comp.kind[keep], comp.weight[keep])]
    ln = lengths[is_con]
    ip = np.zeros(ln.size + 1, dtype=np.int64)
    np.cumsum(ln, out=ip[1:])
    ix, cf = comp.idx[owner], comp.coef[owner]
    order = _kernels.constraint_order(ip)
    ip, pos = _permuted_rows(ip, order)
    return rows, (ip, ix[pos], cf[pos], comp.const[is_con][order], comp.kind[is_con][order])


def _permuted_rows(indptr, order):
    """``(indptr, positions)`` of CSR rows taken in ``order``: the new row pointer and, for each new
    entry, its position in the old arrays."""
    lengths = np.diff(indptr)[order]
    ip = np.zeros(order.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=ip[1:])
    return ip, np.repeat(indptr[order] - ip[:-1], lengths) + np.arange(ip[-1])


def _term_order(indptr, idx, n: int, strategy: str, rng) -> np.ndarray:
    """A permutation of the terms (see the module docstring)."""
    n_terms = indptr.size - 1
    if strategy == "contiguous" or n_terms == 0:
        return np.arange(n_terms)
    if strategy == "random":
        return rng.permutation(n_terms)
    import scipy.sparse as sp
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    rows = np.repeat(np.arange(n_terms), np.diff(indptr))
    a = sp.csr_matrix((np.ones(idx.size), (rows, idx)), shape=(n_terms, n))
    graph = sp.bmat([[None, a], [a.T, None]], format="csr")
    order = reverse_cuthill_mckee(graph, symmetric_mode=True)
    return order[order < n_terms]


def _block(terms, rows, n: int) -> Block:
    indptr, idx, coef, const, weight, kind = terms
    ip, pos = _permuted_rows(indptr, rows)
    lengths = np.diff(ip)
    gidx = idx[pos]
    variables = np.unique(gidx)
    n_pair, n_single = _kernels.fast_counts(ip, kind[rows], weight[rows])
    return Block(
        terms=rows,
        variables=variables,
        indptr=ip,
        idx=np.searchsorted(variables, gidx).astype(np.int64),
        coef=np.ascontiguousarray(coef[pos]),
        const=const[rows].copy(),
        weight=weight[rows].copy(),
        kind=kind[rows].copy(),
        max_arity=int(max(lengths.max(initial=1), 1)),
        n_pair=int(n_pair),
        n_single=int(n_single),
    )


def split_terms(
    model: HLMRF, n_blocks: int, *, strategy: str = "bfs", constraints: str = "auto", rng=None
) -> Partition:
    """Split a model's terms into ``n_blocks`` blocks for :func:`block_step`.

    Parameters
    ----------
    model : HLMRF
    n_blocks : int
        Number of blocks, at least 1 (blocks may be empty when there are fewer terms).
    strategy : {"bfs", "contiguous", "random"}, default "bfs"
        Term order that is cut into runs of about equal numbers of copies (module docstring).
    constraints : {"auto", "local", "consensus"}, default "auto"
        Which constraints join the consensus step, as in :func:`tractable.hlmrf.solve`.
    rng : int or numpy.random.Generator, optional
        Seed of ``strategy="random"``.

    Returns
    -------
    Partition

    Raises
    ------
    TypeError
        ``model`` is not an :class:`HLMRF`.
    ValueError
        ``n_blocks < 1``, an unknown ``strategy`` or ``constraints``, or ``constraints="consensus"``
        with constraints that share a variable.
    """
    if not isinstance(model, HLMRF):
        raise TypeError(f"`model` must be an HLMRF; got {type(model).__name__}.")
    n_blocks = check_int(n_blocks, "n_blocks", minimum=1)
    strategy = check_choice(strategy, "strategy", STRATEGIES)
    constraints = check_choice(constraints, "constraints", ("auto", "local", "consensus"))
    gen = check_rng(rng) if strategy == "random" else None
    comp = model._compile()
    terms, zc = _split_constraints(comp, constraints)
    n = comp.free.size
    indptr, idx = terms[0], terms[1]
    order = _term_order(indptr, idx, n, strategy, gen)
    lengths = np.diff(indptr)[order]
    before = np.cumsum(lengths) - lengths
    total = max(int(idx.size), 1)
    which = np.minimum(before * n_blocks // total, n_blocks - 1)
    blocks = tuple(_block(terms, np.sort(order[which == b]), n) for b in range(n_blocks))
    counts = np.bincount(idx, minlength=n)
    held = np.zeros(n, dtype=np.int64)
    for blk in blocks:
        held[blk.variables] += 1
    return Partition(
        blocks=blocks,
        counts=counts.astype(np.float64),
        zc_indptr=zc[0],
        zc_idx=zc[1],
        zc_coef=zc[2],
        zc_const=zc[3],
        zc_kind=zc[4],
        n_terms=int(indptr.size - 1),
        n_copies=int(idx.size),
        max_copies=int(counts.max(initial=0)),
        strategy=strategy,
        cut_variables=int(np.count_nonzero(held >= 2)),
        cut_volume=int(np.maximum(held - 1, 0).sum()),
        free=comp.free,
        x_fixed=comp.x_fixed,
        offset=comp.offset,
    )


def block_start(block: Block, z) -> tuple[np.ndarray, np.ndarray]:
    """The state a block keeps between iterations, at the start: ``x = z`` on every copy, ``y = 0``.

    Parameters
    ----------
    block : Block
    z : array_like of shape (n,)
        Starting consensus values (all of them, consensus numbering).

    Returns
    -------
    x, y : ndarray of shape (block.n_copies,)
    """
    z = as_float_array(z, "z", ndim=1)
    return z[block.variables][block.idx], np.zeros(block.n_copies)


def block_step(block: Block, x: np.ndarray, y: np.ndarray, z_local, rho: float, alpha: float = 1.0):
    """The term half of one ADMM iteration for one block (``x`` and ``y`` updated in place).

    Parameters
    ----------
    block : Block
    x, y : ndarray of shape (block.n_copies,)
        The block's state: over-relaxed local copies and unscaled multipliers (from
        :func:`block_start`, then from the previous call).
    z_local : array_like of shape (block.n_local,)
        Current consensus values of the block's variables, ``z[block.variables]``.
    rho : float
        Penalty (> 0); the multiplier update of the previous iteration uses it too.
    alpha : float, default 1.0
        Over-relaxation in (0, 2).

    Returns
    -------
    acc : ndarray of shape (block.n_local,)
        ``sum_j (x_j + y_j / rho)`` over the block's copies of each local variable.
    sums : ndarray of shape (3,)
        Partial squared norms of the previous iteration: ``sum (x_j - z_v)^2``, ``sum x_j^2``,
        ``sum y_j^2`` over the block's copies.
    """
    if x.shape != (block.n_copies,) or y.shape != (block.n_copies,):
        raise ValueError(f"`x` and `y` must have shape ({block.n_copies},); got {x.shape} and {y.shape}.")
    zl = _writable(as_float_array(z_local, "z_local", ndim=1))
    if zl.shape != (block.n_local,):
        raise ValueError(f"`z_local` must have shape ({block.n_local},); got {zl.shape}.")
    rho = check_positive(rho, "rho")
    acc = np.empty(block.n_local)
    sums = np.empty(3)
    n_fast = block.n_pair + block.n_single
    scratch = _kernels.general_scratch(block.indptr, n_fast)
    zz = np.empty(2 * block.n_pair + block.n_single)
    _kernels.block_pass(
        *_kernels.readonly(*block.arrays()),
        int(block.n_pair),
        int(block.n_single),
        x,
        y,
        zl,
        rho,
        float(alpha),
        acc,
        sums,
        scratch,
        zz,
    )
    return acc, sums


def _writable(a: np.ndarray) -> np.ndarray:
    """``a``, or a writable copy of it: the kernels take state vectors writable (one signature)."""
    return a if a.flags.writeable and a.flags.c_contiguous else np.array(a, order="C")


def combine(partition: Partition, parts) -> tuple[np.ndarray, np.ndarray]:
    """Add up the blocks' :func:`block_step` outputs into the consensus numbering.

    Parameters
    ----------
    partition : Partition
    parts : sequence of (acc, sums)
        One per block, in the order of ``partition.blocks``.

    Returns
    -------
    acc : ndarray of shape (n,)
    sums : ndarray of shape (3,)
    """
    acc = np.zeros(partition.n)
    sums = np.zeros(3)
    for blk, (a, s) in zip(partition.blocks, parts, strict=True):
        acc[blk.variables] += a
        sums += s
    return acc, sums


def consensus_step(
    partition: Partition,
    acc: np.ndarray,
    sums,
    z: np.ndarray,
    stats: np.ndarray,
    *,
    rho: float,
    eps_abs: float = 1e-5,
    eps_rel: float = 1e-3,
    stop: bool = True,
) -> bool:
    """The consensus half of one ADMM iteration: the stop test, then the new ``z`` (in place).

    Parameters
    ----------
    partition : Partition
    acc : ndarray of shape (n,)
        The blocks' partial sums added up (:func:`combine`); overwritten.
    sums : array_like of shape (3,)
        The blocks' partial squared norms added up.
    z : ndarray of shape (n,)
        Consensus values, replaced by the new ones unless the stop test holds.
    stats : ndarray of shape (5,)
        ``(primal residual, dual residual, primal tolerance, dual tolerance, ||z||)`` (weighted by
        the copy counts), carried between calls; start from ``[0, inf, 0, 0, 0]``.
    rho, eps_abs, eps_rel : float
        As in :func:`tractable.hlmrf.solve`.
    stop : bool, default True
        False: compute the residuals and their tolerances into ``stats`` but always take the step
        (the caller applies its own stop rule, as :func:`tractable.hlmrf.solve` does when the
        iterates are feasible and the certified gap decides).

    Returns
    -------
    bool
        True when ``stop`` and the residuals of the previous iteration are below their tolerances; ``z`` is then
        that iteration's consensus, the answer.
    """
    zc, zc_counts, counts, general = _consensus_args(partition)
    return bool(
        _kernels.consensus_step(
            acc,
            np.array(sums, dtype=np.float64),
            z,
            counts,
            float(rho),
            float(eps_abs),
            float(eps_rel),
            bool(stop),
            int(partition.n_copies),
            stats,
            *zc,
            *zc_counts,
            np.empty(partition.n),
            np.empty(partition.zc_idx.size),
            np.empty(partition.zc_idx.size),
            np.empty(2 * _kernels.max_arity(zc[0]) + 1) if general else None,
            np.empty(partition.zc_idx.size),
        )
    )


def _consensus_args(partition: Partition) -> tuple:
    """The consensus kernels' arguments that do not change during a run, prepared once per partition:
    the consensus-step constraints and the copy counts read-only (one compiled signature), the counts
    of the constraints with two and one unknowns, and whether some have more (then the kernels need
    work space and their general code)."""
    args = partition.__dict__.get("_kernel_args")
    if args is None:
        zc = _kernels.readonly(*partition.consensus_constraints())
        zc_counts = _kernels.constraint_counts(zc[0])
        args = (zc, zc_counts, _kernels.readonly(partition.counts)[0], sum(zc_counts) < zc[0].size - 1)
        object.__setattr__(partition, "_kernel_args", args)  # a cache, not a field of the frozen dataclass
    return args


def block_certificate(
    block: Block, y: np.ndarray, z_local, *, recession: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The block's share of the certified lower bound and of the objective at ``z``.

    With ``recession=True`` the potentials count as zero (only the box and the constraints stay), so
    that :func:`consensus_certificate` returns the infeasibility measure of a multiplier *direction*
    ``y`` (see :func:`tractable.hlmrf.bound.infeasibility_measure`).

    Parameters
    ----------
    block : Block
    y : ndarray of shape (block.n_copies,)
        The block's multipliers.
    z_local : array_like of shape (block.n_local,)
        ``z[block.variables]``.

    Returns
    -------
    y_sum : ndarray of shape (block.n_local,)
        Sum of ``y`` over the block's copies of each local variable.
    part : ndarray of shape (6,)
        See :func:`tractable.hlmrf.bound.block_certificate`.
    """
    zl = _writable(as_float_array(z_local, "z_local", ndim=1))
    yl = np.empty(block.n_local)
    part = np.empty(6)
    arrays = list(_kernels.readonly(*block.arrays()))
    counts = (int(block.n_pair), int(block.n_single))
    if recession:
        # no potential takes the vectorized loop then (it needs a positive weight)
        arrays[4] = _kernels.readonly(np.zeros(block.n_terms))[0]
        counts = (0, 0)
    scratch = _kernels.general_scratch(block.indptr, sum(counts))
    y = _writable(np.asarray(y, dtype=np.float64))
    work = np.empty(2 * counts[0] + counts[1])
    bound.block_certificate(*arrays, *counts, y, zl, yl, part, scratch, work)
    return yl, part


def consensus_certificate(partition: Partition, parts, z, *, recession: bool = False) -> tuple[float, float, float]:
    """Combine the blocks' :func:`block_certificate` outputs.

    Parameters
    ----------
    partition : Partition
    parts : sequence of (y_sum, part)
        One per block, in the order of ``partition.blocks``.
    z : array_like of shape (n,)

    Returns
    -------
    lower_bound, objective, max_violation : float
        A certified lower bound on the optimum, the objective of ``z`` and its largest constraint
        violation (fixed-only potentials included, as in :class:`tractable.hlmrf.MPEResult`). For
        parts computed with ``recession=True`` the first value is the infeasibility measure instead
        (positive: the model is infeasible; offset not added).
    """
    yv = np.zeros(partition.n)
    total = np.zeros(6)
    for blk, (yl, part) in zip(partition.blocks, parts, strict=True):
        yv[blk.variables] += yl
        total[[0, 1, 2, 3, 5]] += part[[0, 1, 2, 3, 5]]
        total[4] = max(total[4], part[4])
    out = np.empty(3)
    zc, zc_counts, _, general = _consensus_args(partition)
    bound.consensus_certificate(
        yv,
        _writable(as_float_array(z, "z", ndim=1)),
        *zc,
        *zc_counts,
        total,
        int(partition.n_terms),
        float(partition.max_copies),
        out,
        np.empty(2 * _kernels.max_arity(zc[0]) + 1) if general else None,
        bound.consensus_work(partition.n, partition.zc_idx.size),
    )
    if recession:
        return float(out[0]), float(partition.offset + out[1]), float(out[2])
    return float(partition.offset + out[0]), float(partition.offset + out[1]), float(out[2])
