"""The message handlers of the built-in factor types: dense tables and cardinality factors.

:class:`TableMessages` batches all table factors of the same shape into one array operation per
variable position (the NumPy reference, used by the sequential schedule); on the parallel schedule its
compiled :meth:`~TableMessages.update` runs the whole group in one pass (:func:`_kernels.table_pairs` for
pairwise factors over binary variables, :func:`_kernels.table_general` for the rest).

:class:`CardinalityMessages` computes *all* outgoing messages of a cardinality factor over ``D``
variables together: sum-product by the convolution tree of :mod:`tractable.cardinality` (O(D log^2 D)),
or, when few counts are allowed (``f`` finite on at most ``kmax + 1`` counts near 0 or near ``D``), by
the log-space chain in O(D kmax), which is faster there; max-product by sorting, O(D log D).

A factor that counts one state ``label`` of variables with more states (``CardinalityFactor(...,
label=l, n_states=m)``) depends on each variable only through "``y = l`` or not". Its incoming message
collapses to two numbers, ``w1 = in[l]`` and ``w0 = logsumexp_{y != l} in[y]`` (``max`` for
max-product), the binary machinery runs on those, and the binary message ``(o0, o1)`` goes back as
``out[l] = o1`` and ``out[y] = o0`` for every other state: exact, as the factor's sum (or max) over a
variable's other states is the sum (max) of its incoming message over them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import ZeroPartitionError
from .._logspace import logsumexp
from ..cardinality._convolve import DEFAULT_CROSSOVER
from ..cardinality._tree import NO_CONFIGURATION
from ..cardinality.convolution_tree import _log_partition_core, _marginals_core
from ..factorgraph import CardinalityFactor, TableFactor
from . import _kernels
from ._registry import FactorMessages, register

__all__ = ["CardinalityMessages", "TableMessages"]

#: a cardinality factor runs the chain when D * (kmax + 1) is at most this; the convolution tree otherwise
CHAIN_MAX_CELLS = 8192


def _no_mass(where: str) -> ZeroPartitionError:
    return ZeroPartitionError(f"{NO_CONFIGURATION}: {where} gives every configuration zero mass.")


# --------------------------------------------------------------------------- table factors
@dataclass(frozen=True)
class _TableGroup:
    tables: np.ndarray  # (F, c_1, ..., c_k)
    edges: tuple  # k arrays of shape (F,)
    pos: np.ndarray  # (F,) positions of the factors in the list given to compile


@dataclass(frozen=True)
class _TableCompiled:
    """A group of table factors: by shape for the NumPy methods, flat for :func:`_kernels.table_update`.

    Factor ``f`` of the flat layout (the shape groups one after the other) has edges ``fedge[fptr[f]:fptr[f +
    1]]`` and log table ``tlog[tptr[f]:tptr[f + 1]]`` (C order), ``texp`` being ``exp(tlog - max)`` per factor;
    ``work``, ``iwork`` and ``later`` are the kernel's scratch, allocated here once (the arrays are private to
    one run, writable and C-contiguous: the kernel sees one type).
    """

    groups: tuple  # of _TableGroup
    pairs: np.ndarray  # the factors over two binary variables (flat indices)
    others: np.ndarray  # the rest
    fptr: np.ndarray
    fedge: np.ndarray
    tptr: np.ndarray
    tlog: np.ndarray
    texp: np.ndarray
    work: np.ndarray
    iwork: np.ndarray
    later: np.ndarray

    def __iter__(self):  # the shape groups, as the compiled form of earlier versions was
        return iter(self.groups)


def _flat_tables(groups: tuple, width: int) -> tuple:
    """The shape groups as the flat arrays of :class:`_TableCompiled` (all C-contiguous and writable)."""
    arity = [len(g.edges) for g in groups]
    counts = [g.pos.shape[0] for g in groups]
    sizes = [int(np.prod(g.tables.shape[1:], dtype=np.int64)) for g in groups]
    fptr = np.zeros(sum(counts) + 1, dtype=np.int64)
    fptr[1:] = np.cumsum(np.repeat(np.asarray(arity, dtype=np.int64), counts))
    tptr = np.zeros(sum(counts) + 1, dtype=np.int64)
    tptr[1:] = np.cumsum(np.repeat(np.asarray(sizes, dtype=np.int64), counts))
    fedge = np.concatenate([np.stack(g.edges, axis=1).reshape(-1) for g in groups] or [np.zeros(0)]).astype(np.int64)
    flat = [g.tables.reshape(g.tables.shape[0], -1) for g in groups]
    tlog = np.concatenate([t.reshape(-1) for t in flat] or [np.zeros(0)]).astype(np.float64)
    texp = []
    for t in flat:
        top = np.max(t, axis=1, keepdims=True) if t.shape[1] else np.zeros((t.shape[0], 1))
        with np.errstate(invalid="ignore"):
            texp.append(np.exp(t - np.where(np.isfinite(top), top, 0.0)).reshape(-1))
    texp = np.concatenate(texp or [np.zeros(0)]).astype(np.float64)
    kmax = max(arity, default=1) or 1
    binary = [len(g.edges) == 2 and g.tables.shape[1:] == (2, 2) for g in groups]
    kind = np.repeat(np.asarray(binary, dtype=bool), counts)
    pairs = np.flatnonzero(kind).astype(np.int64)
    others = np.flatnonzero(~kind).astype(np.int64)
    work = np.empty((kmax + 2) * width)
    iwork = np.empty(2 * kmax, dtype=np.int64)
    later = np.empty(pairs.shape[0], dtype=np.int64)
    return pairs, others, fptr, fedge, tptr, tlog, texp, work, iwork, later


class TableMessages(FactorMessages):
    """Dense log-potential tables, batched over the factors of one shape.

    :meth:`messages` is the NumPy reference (one array operation per shape and variable position);
    on the parallel schedule the engine calls :meth:`update` instead, which runs the whole group's
    cavities, messages, normalization and damping in one compiled pass (:func:`_kernels.table_update`).
    """

    def compile(self, factors, edges, cardinalities):
        tables = [fac.log_table for fac in factors]
        shapes = [t.shape for t in tables]
        if len(set(shapes)) == 1:  # the common case: one shape
            by_shape = {shapes[0]: range(len(tables))}
        else:
            by_shape = {}
            for i, shape in enumerate(shapes):
                by_shape.setdefault(shape, []).append(i)
        groups = []
        for shape, items in by_shape.items():
            n = len(items)  # concatenated, then reshaped: much faster than np.stack for many small arrays
            stack = np.concatenate([tables[i] for i in items]).reshape((n, *shape))
            ed = np.concatenate([edges[i] for i in items]).astype(np.int64, copy=False).reshape(n, len(shape))
            pos = np.asarray(items, dtype=np.int64)
            groups.append(_TableGroup(stack, tuple(ed[:, j].copy() for j in range(ed.shape[1])), pos))
        groups = tuple(groups)
        width = int(max((max(g.tables.shape[1:], default=1) for g in groups), default=1))
        if cardinalities is not None and len(cardinalities):
            width = max(width, int(np.max(cardinalities)))
        return _TableCompiled(groups, *_flat_tables(groups, width))

    def update(self, compiled, ws) -> tuple[float, int]:
        """The group's new messages on the parallel schedule, compiled: the pairwise factors over two binary
        variables in one pass on scalars (:func:`_kernels.table_pairs`), the others and the pairs it leaves
        (near an underflow, or a forbidding cavity) in log space (:func:`_kernels.table_general`, compiled on
        first use). ``ws`` is the engine's :class:`~tractable.bp._wiring.Workspace`; returns ``(residual,
        flags)`` as these kernels define them."""
        c = compiled
        is_max = ws.kind == "max"
        residual, n_later = 0.0, 0
        if c.pairs.shape[0]:
            residual, n_later = _kernels.table_pairs(
                c.pairs, c.fptr, c.fedge, c.tptr, c.tlog, c.texp, ws.edge_var, ws.fin, ws.ninf, ws.nu, ws.nu_p,
                ws.new, ws.new_p, is_max, ws.damping, c.later,
            )  # fmt: skip
        flags = 0
        for rest, n_rest in ((c.others, c.others.shape[0]), (c.later, n_later)):
            if n_rest:
                work = c.work
                if work.shape[0] < (c.iwork.shape[0] // 2 + 2) * ws.nu.shape[1]:  # compiled without cardinalities
                    work = np.empty((c.iwork.shape[0] // 2 + 2) * ws.nu.shape[1])
                r, f = _kernels.table_general(
                    rest, n_rest, c.fptr, c.fedge, c.tptr, c.tlog, ws.edge_var, ws.edge_card, ws.fin, ws.ninf,
                    ws.nu, ws.nu_p, ws.new, ws.new_p, is_max, ws.damping, work, c.iwork,
                )  # fmt: skip
                residual = max(residual, r)
                flags |= f
        return float(residual), int(flags)

    def factor_beliefs(self, compiled, incoming, kind):
        out: list = [None] * int(sum(g.pos.shape[0] for g in compiled))
        for g in compiled:
            x = self._incoming(g, incoming)
            flat = x.reshape(x.shape[0], -1)
            top = logsumexp(flat, axis=1, keepdims=True) if kind == "sum" else flat.max(axis=1, keepdims=True)
            b = np.exp(flat - top)
            b /= b.sum(axis=1, keepdims=True)
            b = b.reshape(x.shape)
            b.flags.writeable = False  # private to this call: the rows below are read-only views of it
            for i, row in zip(g.pos.tolist(), b):
                out[i] = row
        return out

    @staticmethod
    def _incoming(g: _TableGroup, incoming: np.ndarray, skip: int = -1) -> np.ndarray:
        x = g.tables
        k = len(g.edges)
        for j in range(k):
            if j == skip:
                continue
            c = x.shape[j + 1]
            shape = [x.shape[0]] + [1] * k
            shape[j + 1] = c
            x = x + incoming[g.edges[j], :c].reshape(shape)
        return x

    def messages(self, compiled, incoming, out, kind):
        for g in compiled:
            k = len(g.edges)
            for j in range(k):
                x = self._incoming(g, incoming, skip=j)
                axes = tuple(i + 1 for i in range(k) if i != j)
                if kind == "sum":
                    m = logsumexp(x, axis=axes) if axes else x
                else:
                    m = np.max(x, axis=axes) if axes else x
                out[g.edges[j], : m.shape[1]] = m

    def log_partition(self, compiled, incoming):
        total = 0.0
        for g in compiled:
            x = self._incoming(g, incoming)
            z = logsumexp(x.reshape(x.shape[0], -1), axis=1)
            if np.any(z == -np.inf):
                raise _no_mass("a table factor with its incoming messages")
            total += float(z.sum())
        return total


# --------------------------------------------------------------------------- cardinality factors
@dataclass(frozen=True)
class _CardinalityGroup:
    # the group's edges (global ids); every array below indexes the group's local edges 0..E-1
    global_edges: np.ndarray
    # per local edge: the counted state and the cardinality (None when every factor is binary and unlabelled)
    labels: tuple | None
    # all factors (max-product kernel)
    indptr: np.ndarray
    edges: np.ndarray
    f_ptr: np.ndarray
    f: np.ndarray
    # the chain subset
    chain: tuple  # (indptr, edges, f_ptr, f, kmax, flip)
    # the convolution-tree subset: (edges, f) per factor
    tree: tuple


def _flat(edge_lists, f_lists):
    indptr = np.zeros(len(edge_lists) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(e) for e in edge_lists])
    f_ptr = np.zeros(len(f_lists) + 1, dtype=np.int64)
    f_ptr[1:] = np.cumsum([len(f) for f in f_lists])
    edges = np.concatenate(edge_lists).astype(np.int64) if edge_lists else np.zeros(0, np.int64)
    f = np.concatenate(f_lists).astype(np.float64) if f_lists else np.zeros(0)
    return indptr, edges, f_ptr, f


def _collapse(compiled: _CardinalityGroup, incoming: np.ndarray, kind: str) -> np.ndarray:
    """The group's incoming messages as binary ones (E, 2): (not counted, counted) per local edge."""
    inc = incoming[compiled.global_edges]
    if compiled.labels is None:
        return np.ascontiguousarray(inc[:, :2])
    counted, card = compiled.labels
    rows = np.arange(inc.shape[0])
    w1 = inc[rows, counted]
    rest = np.where((np.arange(inc.shape[1])[None, :] < card[:, None]), inc, -np.inf)
    rest[rows, counted] = -np.inf
    w0 = logsumexp(rest, axis=1) if kind == "sum" else rest.max(axis=1)
    return np.ascontiguousarray(np.stack([w0, w1], axis=1))


def _expand(compiled: _CardinalityGroup, out2: np.ndarray, out: np.ndarray) -> None:
    """Write binary messages (E, 2) back to every state of the group's edges."""
    ge = compiled.global_edges
    if compiled.labels is None:
        out[ge, :2] = out2
        return
    counted, card = compiled.labels
    states = np.arange(out.shape[1])[None, :]
    block = np.where(states < card[:, None], out2[:, :1], -np.inf)
    block[np.arange(ge.shape[0]), counted] = out2[:, 1]
    out[ge] = block


class CardinalityMessages(FactorMessages):
    """Cardinality factors ``f(#{i : y_i = label})`` (binary variables and state 1 by default)."""

    def compile(self, factors, edges, cardinalities):
        lens = [len(e) for e in edges]
        starts = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        local = [np.arange(starts[i], starts[i + 1], dtype=np.int64) for i in range(len(edges))]
        global_edges = np.concatenate(edges).astype(np.int64) if edges else np.zeros(0, np.int64)
        labels = None
        if any(fac.label is not None for fac in factors):
            counted = np.concatenate([np.full(len(e), fac.counted, dtype=np.int64) for fac, e in zip(factors, edges)])
            card = np.concatenate([fac.n_states for fac in factors]).astype(np.int64)
            labels = (counted, card)
        chain_e, chain_f, kmax, flip, tree = [], [], [], [], []
        for fac, e in zip(factors, local):
            f = fac.log_potentials
            d = f.shape[0] - 1
            finite = np.flatnonzero(f > -np.inf)
            if finite.size == 0:  # no count allowed: the chain (which handles it) costs nothing here
                lo, hi = 0, 0
            else:
                lo, hi = int(finite[0]), int(finite[-1])
            fl = d - lo < hi
            km = d - lo if fl else hi
            if d * (km + 1) <= CHAIN_MAX_CELLS:
                chain_e.append(e)
                chain_f.append(f)
                kmax.append(km)
                flip.append(fl)
            else:
                tree.append((e, f))
        all_ptr, all_edges, all_fptr, all_f = _flat(local, [fac.log_potentials for fac in factors])
        chain = (*_flat(chain_e, chain_f), np.asarray(kmax, dtype=np.int64), np.asarray(flip, dtype=np.bool_))
        return _CardinalityGroup(global_edges, labels, all_ptr, all_edges, all_fptr, all_f, chain, tuple(tree))

    def messages(self, compiled, incoming, out, kind):
        inc = _collapse(compiled, incoming, kind)
        out2 = np.full_like(inc, -np.inf)
        if kind == "max":
            work, iwork = _kernels.sort_work_sizes(compiled.indptr)
            _kernels.sort_max_messages(
                compiled.indptr, compiled.edges, compiled.f_ptr, compiled.f, inc, out2, np.empty(work),
                np.empty(iwork, dtype=np.int64),
            )  # fmt: skip
        else:
            self._chain(compiled, inc, out2)
            for e, f in compiled.tree:
                _tree_messages(e, f, inc, out2)
        _expand(compiled, out2, out)

    @staticmethod
    def _chain(compiled, incoming, out) -> np.ndarray:
        indptr, edges, f_ptr, f, kmax, flip = compiled.chain
        logz = np.empty(indptr.shape[0] - 1)
        if logz.shape[0]:
            work = np.empty(_kernels.chain_work_size(indptr, kmax))
            _kernels.chain_sum_messages(indptr, edges, f_ptr, f, kmax, flip, incoming, out, logz, work)
            if np.any(logz == -np.inf):
                raise _no_mass("a cardinality factor with its incoming messages")
        return logz

    def log_partition(self, compiled, incoming):
        inc = _collapse(compiled, incoming, "sum")
        scratch = np.full_like(inc, -np.inf)
        total = float(self._chain(compiled, inc, scratch).sum())
        for e, f in compiled.tree:
            w0, w1 = inc[e, 0], inc[e, 1]
            theta = _theta(w0, w1)
            try:
                lz = _log_partition_core(theta, f, "auto", DEFAULT_CROSSOVER)
            except ZeroPartitionError as err:
                raise _no_mass("a cardinality factor with its incoming messages") from err
            # the core drops each free variable's w0 and each clamped variable's weight: add them back
            total += lz + float(np.where(w0 == -np.inf, w1, w0).sum())
        return total


def _theta(w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
    """``w1 - w0`` with ``+inf`` where state 0 is forbidden and ``-inf`` where state 1 is."""
    with np.errstate(invalid="ignore"):
        theta = w1 - w0
    return theta


def _tree_messages(e: np.ndarray, f: np.ndarray, incoming: np.ndarray, out: np.ndarray) -> None:
    """All messages of one cardinality factor by the convolution tree (sum-product)."""
    w0, w1 = incoming[e, 0], incoming[e, 1]
    theta = _theta(w0, w1)
    try:
        log_odds, _, _, _ = _marginals_core(theta, f, "auto", DEFAULT_CROSSOVER)
    except ZeroPartitionError as err:
        raise _no_mass("a cardinality factor with its incoming messages") from err
    on, off = np.isposinf(theta), np.isneginf(theta)
    free = ~(on | off)
    lo, th = log_odds[free], theta[free]
    forced_on = np.isposinf(lo)  # the factor forbids y = 0 for this variable (log_odds = -inf is fine as it is)
    out[e[free], 0] = np.where(forced_on, -np.inf, 0.0)
    out[e[free], 1] = np.where(forced_on, 0.0, lo - th)
    # a clamped variable's message is the partition function of the others with the count shifted
    # (the same for all variables clamped the same way): m(y) = log sum over the others of f(y + their count)
    for mask in (on, off):
        if not mask.any():
            continue
        rest = np.delete(theta, int(np.flatnonzero(mask)[0]))
        m = np.empty(2)
        for y in (0, 1):
            g = f[y : y + rest.shape[0] + 1]
            try:
                m[y] = _log_partition_core(rest, g, "auto", DEFAULT_CROSSOVER)
            except ZeroPartitionError:
                m[y] = -np.inf
        out[e[mask], 0] = m[0]
        out[e[mask], 1] = m[1]


register(TableFactor, TableMessages())
register(CardinalityFactor, CardinalityMessages())

from . import _clique  # noqa: E402, F401  (registers the clique factors; it builds on CardinalityMessages)
