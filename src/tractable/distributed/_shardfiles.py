"""Block shard files: a hinge-loss MRF's terms written chunk by chunk into per-block files, and each
block read back on its worker without a transient copy.

A *shard set* is one directory, written whole or not at all (under a temporary name, renamed when
complete)::

    manifest.json   format, version, set_id, n_variables, n_free, idx_dtype, n_shards, offset, and per
                    shard its counts (terms, copies, potentials, squared hinges, constraints, largest
                    constraint norm)
    variables.npz   free (n_free,) int64: the model index of every consensus (free) variable;
                    x_fixed (n_variables,) float64: the fixed values (0 for free variables);
                    bounds (n_shards + 1,) int64: actor ``j`` owns the consensus variables
                    ``bounds[j]:bounds[j + 1]`` (no consensus-step constraint straddles a bound)
    owner-00000/    the consensus-step constraints of owner 0 (con.idx relative to its first variable,
                    con.coef, con.const, con.kind, con.len) when the constraints have pairwise
                    disjoint supports (``constraints="auto"`` of ``hlmrf.solve``)
    shard-00000/    one block, as raw little-endian arrays per group of terms:
                    pair.* (hinges and squared hinges, weight > 0, two unknowns), single.* (the same with
                    one unknown), general.* (every other term, and general.len: its arity, int64);
                    each group has .idx (consensus index, ``idx_dtype``), .coef, .const, .weight
                    (float64) and .kind (int8, ``tractable.hlmrf._kernels.KIND_*``)

The groups are the layout the ADMM kernels vectorize (:func:`tractable.hlmrf._kernels.kernel_order`), so a
block is the concatenation of its three groups: :func:`read_block` allocates every array of the block
once and reads the files into it (``readinto``), then renumbers the variables locally in place, so the
worker's peak while building its block is the block plus one vector over the variables.

Terms are given to :class:`ShardSetWriter` in the model's numbering with fixed variables still in
them (as :meth:`tractable.hlmrf.HLMRF.add_potentials` takes them); the writer folds the fixed values
into the constants (as ``HLMRF._compile`` does), renumbers the free variables, and appends every
potential to the shard picked by a multiplicative hash of its smallest consensus variable (balanced,
and the same term always lands in the same shard). Constraints are spooled to one file while the
writer checks, as ``hlmrf.solve``'s ``constraints="auto"`` does, whether their supports are pairwise
disjoint: then they are projected in the consensus step by the actors that own their variables
(iterates feasible, certified gap), else they join the shards as terms with local copies.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid

import numpy as np

from ..hlmrf._kernels import KIND_EQ, KIND_HINGE, KIND_LEQ, KIND_SQUARED

__all__ = [
    "FORMAT",
    "VERSION",
    "ShardSetWriter",
    "read_block",
    "read_manifest",
    "read_owner_constraints",
    "read_variables",
    "shard_paths",
]

#: identifier and version of the shard-set format
FORMAT = "tractable.blockshards"
VERSION = 1
GROUPS = ("pair", "single", "general")
_FIELDS = ("idx", "coef", "const", "weight", "kind")
_MANIFEST = "manifest.json"
_VARIABLES = "variables.npz"
#: entries renumbered per piece when a block is read (bounds the temporaries)
_PIECE = 1 << 22
#: a constraint left without free variables (all fixed) may miss by this much (float rounding)
_FIXED_TOL = 1e-9
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def shard_name(i: int) -> str:
    return f"shard-{i:05d}"


class ShardSetWriter:
    """Write the terms of a hinge-loss MRF into ``n_shards`` block files, one chunk at a time.

    Parameters
    ----------
    directory : path
        The shard set to create. It must not exist, be an empty folder, or hold an earlier shard set
        (replaced once the new one is complete); anything else is refused.
    n_shards : int
        Number of blocks (at least 1).
    fixed_mask : ndarray of bool, shape (n_variables,)
    fixed_values : ndarray of float64, shape (n_variables,)
        The fixed variables and their values (ignored where the mask is False).

    Notes
    -----
    The writer keeps only vectors over the variables (the fixed values, the renumbering, a
    ``used`` mask) and the counts of each shard; every chunk is appended to the files and dropped.
    Use it as a context manager: an exception removes everything written, and :meth:`close`
    renames the complete set into place.
    """

    def __init__(self, directory, n_shards: int, fixed_mask: np.ndarray, fixed_values: np.ndarray) -> None:
        self.directory = os.path.abspath(os.fspath(directory))
        _check_target(self.directory)
        self.n_shards = int(n_shards)
        self.fixed = np.asarray(fixed_mask, bool)
        self.x_fixed = np.where(self.fixed, np.asarray(fixed_values, np.float64), 0.0)
        self.n_variables = self.fixed.size
        self.free = np.flatnonzero(~self.fixed)
        self.n_free = self.free.size
        self.idx_dtype = np.dtype(np.int32 if self.n_free < 2**31 else np.int64)
        self.renum = np.full(self.n_variables, -1, dtype=np.int64)
        self.renum[self.free] = np.arange(self.n_free)
        #: variables (model numbering) that some written term uses
        self.used = np.zeros(self.n_variables, bool)
        self.offset = 0.0
        self.set_id = uuid.uuid4().hex
        self.tmp = f"{self.directory}.partial-{self.set_id[:12]}"
        os.makedirs(self.tmp)
        self.stats = [_empty_stats() for _ in range(self.n_shards)]
        for i in range(self.n_shards):
            os.makedirs(os.path.join(self.tmp, shard_name(i)))
        # the constraints' spool: whether their supports are disjoint, and the cuts they forbid
        self.n_con = self.nnz_con = 0
        self.con_cmax = 0.0
        self.con_seen = np.zeros(self.n_free, bool)
        self.disjoint = True
        self.span = np.zeros(self.n_free + 2, np.int32)
        self.closed = False

    # ------------------------------------------------------------------ writing
    def add(self, indptr, variables, coefficients, constants, weight, kind) -> None:
        """Append terms given in the model's numbering.

        Parameters
        ----------
        indptr : ndarray of int64, shape (m + 1,)
        variables : ndarray of int64, shape (nnz,)
            Model variables (fixed ones are folded into the constants here).
        coefficients : ndarray of float64, shape (nnz,)
        constants : ndarray of float64, shape (m,)
        weight : float or ndarray of shape (m,)
            Potentials' weights (``>= 0``; 0 for constraints).
        kind : int or ndarray of int8, shape (m,)
            ``KIND_HINGE``, ``KIND_SQUARED``, ``KIND_LEQ`` or ``KIND_EQ`` (a ``>=`` constraint is given
            negated, as ``<=``).
        """
        indptr = np.asarray(indptr, np.int64)
        var = np.asarray(variables, np.int64)
        coef = np.asarray(coefficients, np.float64)
        m = indptr.size - 1
        if m == 0:
            return
        const = np.array(constants, dtype=np.float64)  # a copy: the fixed values are added to it
        weight = np.broadcast_to(np.asarray(weight, np.float64), (m,))
        kind = np.broadcast_to(np.asarray(kind, np.int8), (m,))
        lengths = np.diff(indptr)
        self.used[var] = True
        fixed = self.fixed[var]
        if fixed.any():
            rows = np.repeat(np.arange(m), lengths)
            const += np.bincount(rows[fixed], weights=coef[fixed] * self.x_fixed[var[fixed]], minlength=m)
            keep = ~fixed
            var, coef = var[keep], coef[keep]
            lengths = np.bincount(rows[keep], minlength=m)
            del rows, keep
        del fixed
        empty = lengths == 0
        if empty.any():  # every variable fixed: a constant potential, or a constraint the fixed values decide
            self._fold_constant_terms(const[empty], weight[empty], kind[empty])
            const, weight, kind, lengths = const[~empty], weight[~empty], kind[~empty], lengths[~empty]
            m = const.size
            if m == 0:
                return
        idx = self.renum[var]
        del var
        ip = np.zeros(m + 1, np.int64)
        np.cumsum(lengths, out=ip[1:])
        is_con = kind >= KIND_LEQ
        if is_con.all():
            self._spool(ip, idx, coef, const, kind)
        elif not is_con.any():
            self._route(ip, idx, coef, const, weight, kind)
        else:  # pragma: no cover - a caller's block mixes potentials and constraints
            for mask in (~is_con, is_con):
                rows = np.flatnonzero(mask)
                lp = lengths[rows]
                sub = np.zeros(rows.size + 1, np.int64)
                np.cumsum(lp, out=sub[1:])
                pos = np.repeat(ip[:-1][rows] - sub[:-1], lp) + np.arange(sub[-1])
                if mask is is_con:
                    self._spool(sub, idx[pos], coef[pos], const[rows], kind[rows])
                else:
                    self._route(sub, idx[pos], coef[pos], const[rows], weight[rows], kind[rows])

    def _route(self, ip, idx, coef, const, weight, kind) -> None:
        """Append consensus-numbered terms to their shards (hash of the smallest variable), grouped."""
        m = const.size
        lengths = np.diff(ip)
        first = np.minimum.reduceat(idx, ip[:-1])
        shard = ((first.astype(np.uint64) * _GOLDEN) >> np.uint64(33)) % np.uint64(self.n_shards)
        fast = ((lengths == 1) | (lengths == 2)) & ((kind == KIND_HINGE) | (kind == KIND_SQUARED)) & (weight > 0.0)
        group = np.where(fast, 2 - lengths, 2)  # 0 pair, 1 single, 2 general
        key = shard.astype(np.int64) * 3 + group
        order = np.argsort(key, kind="stable")
        counts = np.bincount(key, minlength=3 * self.n_shards)
        lp = lengths[order]
        ipo = np.zeros(m + 1, np.int64)
        np.cumsum(lp, out=ipo[1:])
        pos = np.repeat(ip[:-1][order] - ipo[:-1], lp) + np.arange(ipo[-1])
        idx, coef = idx[pos].astype(self.idx_dtype), coef[pos]
        del pos
        const, weight, kind = const[order], weight[order], kind[order]
        start = 0
        for k in range(3 * self.n_shards):
            stop = start + int(counts[k])
            if stop > start:
                s, g = divmod(k, 3)
                a, b = int(ipo[start]), int(ipo[stop])
                rows = slice(start, stop)
                self._append(s, GROUPS[g], lp[rows], idx[a:b], coef[a:b], const[rows], weight[rows], kind[rows])
            start = stop

    def _spool(self, ip, idx, coef, const, kind) -> None:
        """Append consensus-numbered constraints to the spool; track their disjointness and spans."""
        m = const.size
        lengths = np.diff(ip)
        rows = np.repeat(np.arange(m), lengths)
        # each constraint alone against the box, as hlmrf.solve checks before it runs
        lo = const + np.bincount(rows, weights=np.minimum(coef, 0.0), minlength=m)
        hi = const + np.bincount(rows, weights=np.maximum(coef, 0.0), minlength=m)
        scale = 1.0 + np.abs(const) + np.bincount(rows, weights=np.abs(coef), minlength=m)
        bad = (lo > 1e-9 * scale) | ((kind == KIND_EQ) & (hi < -1e-9 * scale))
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"a constraint (after fixing variables) cannot hold anywhere in the box [0, 1]: its left-hand side "
                f"lies in [{lo[j]:.6g}, {hi[j]:.6g}]."
            )
        self.con_cmax = max(self.con_cmax, float(np.sqrt(np.bincount(rows, weights=coef**2, minlength=m).max())))
        if self.disjoint:
            if np.any(self.con_seen[idx]) or np.unique(idx).size != idx.size:
                self.disjoint = False
            else:
                self.con_seen[idx] = True
        self.span += np.bincount(np.minimum.reduceat(idx, ip[:-1]) + 1, minlength=self.span.size).astype(np.int32)
        self.span -= np.bincount(np.maximum.reduceat(idx, ip[:-1]) + 1, minlength=self.span.size).astype(np.int32)
        for name, arr in (
            ("idx", idx.astype(self.idx_dtype)),
            ("coef", coef),
            ("const", const),
            ("kind", kind),
            ("len", lengths),
        ):
            with open(os.path.join(self.tmp, f"constraints.{name}"), "ab") as fh:
                np.ascontiguousarray(arr).tofile(fh)
        self.n_con += m
        self.nnz_con += int(idx.size)

    def _fold_constant_terms(self, const, weight, kind) -> None:
        pot = kind <= KIND_SQUARED
        h = np.maximum(const[pot], 0.0)
        self.offset += float(np.sum(weight[pot] * np.where(kind[pot] == KIND_SQUARED, h * h, h)))
        con = ~pot
        viol = np.where(kind[con] == KIND_EQ, np.abs(const[con]), const[con])
        if np.any(viol > _FIXED_TOL):
            raise ValueError(
                f"the fixed values violate a constraint over fixed variables only: its left-hand side is "
                f"{float(const[con][np.argmax(viol)]):.6g}."
            )

    def _append(self, s, group, lengths, idx, coef, const, weight, kind) -> None:
        folder = os.path.join(self.tmp, shard_name(s))
        for name, arr in (("idx", idx), ("coef", coef), ("const", const), ("weight", weight), ("kind", kind)):
            with open(os.path.join(folder, f"{group}.{name}"), "ab") as fh:
                np.ascontiguousarray(arr).tofile(fh)
        st = self.stats[s]
        st[f"n_{group}"] += int(const.size)
        st[f"nnz_{group}"] += int(idx.size)
        if group == "general":
            with open(os.path.join(folder, "general.len"), "ab") as fh:
                np.ascontiguousarray(lengths, dtype=np.int64).tofile(fh)
            st["max_arity"] = max(st["max_arity"], int(lengths.max(initial=1)))
        is_pot = kind <= KIND_SQUARED
        st["n_potentials"] += int(np.count_nonzero(is_pot))
        st["n_squared"] += int(np.count_nonzero(kind == KIND_SQUARED))
        n_con = int(const.size - np.count_nonzero(is_pot))
        st["n_constraints"] += n_con
        if n_con:
            rows = np.repeat(np.arange(const.size), lengths)
            con = ~is_pot[rows]
            sq = np.bincount(rows[con], weights=coef[con] ** 2, minlength=const.size)
            st["cmax"] = max(st["cmax"], float(np.sqrt(sq.max())))

    # ------------------------------------------------------------------ closing
    def close(self, extra: dict | None = None) -> list[str]:
        """Write the manifest and the variable vectors, and move the complete set into place.

        Returns
        -------
        list of str
            The shard folders, in order (the sources of :class:`~tractable.distributed.HLMRFShards`).
        """
        bounds = self._bounds()
        owners = []
        if self.n_con:
            owners = self._place_constraints(bounds)
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "set_id": self.set_id,
            "n_variables": int(self.n_variables),
            "n_free": int(self.n_free),
            "idx_dtype": self.idx_dtype.name,
            "n_shards": self.n_shards,
            "offset": self.offset,
            "constraints": "consensus" if owners else ("local" if self.n_con else "none"),
            "n_constraints": int(self.n_con),
            "constraint_cmax": self.con_cmax,
            "owners": owners,
            "shards": self.stats,
            **(extra or {}),
        }
        for i, st in enumerate(self.stats):
            with open(os.path.join(self.tmp, shard_name(i), "meta.json"), "w") as fh:
                json.dump({"set_id": self.set_id, "index": i, **{k: manifest[k] for k in _SHARD_KEYS}, **st}, fh)
        with open(os.path.join(self.tmp, _VARIABLES), "wb") as fh:
            np.savez(fh, free=self.free, x_fixed=self.x_fixed, bounds=bounds)
        with open(os.path.join(self.tmp, _MANIFEST), "w") as fh:
            json.dump(manifest, fh, indent=1)
        old = None
        if os.path.exists(self.directory):
            old = f"{self.directory}.old-{self.set_id[:12]}"
            os.rename(self.directory, old)
        os.rename(self.tmp, self.directory)
        self.closed = True
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return shard_paths(self.directory)

    def _bounds(self) -> np.ndarray:
        """The owners' ranges: equal sizes, each bound moved up to the next place that no constraint's
        span ``(min, max]`` covers when the constraints are disjoint (they are projected by one owner)."""
        w, n = self.n_shards, self.n_free
        bounds = (np.arange(w + 1, dtype=np.int64) * n) // w
        if self.n_con and self.disjoint:
            covered = np.cumsum(self.span[: n + 1]) > 0  # covered[b]: a constraint has min < b <= max
            allowed = np.flatnonzero(~covered)
            allowed = allowed[(allowed > 0) & (allowed < n)]
            inner = np.searchsorted(allowed, bounds[1:-1])
            bounds[1:-1] = np.append(allowed, n)[inner]
            bounds = np.maximum.accumulate(bounds)
        return bounds

    def _spooled(self):
        """The spooled constraints, in pieces: ``(indptr, idx, coef, const, kind)``."""
        names = ("idx", "coef", "const", "kind", "len")
        dtypes = (self.idx_dtype, np.float64, np.float64, np.int8, np.int64)
        files = {k: open(os.path.join(self.tmp, f"constraints.{k}"), "rb") for k in names}
        try:
            done = 0
            while done < self.n_con:
                m = min(_PIECE // 4, self.n_con - done)
                lengths = np.fromfile(files["len"], dtype=np.int64, count=m)
                nnz = int(lengths.sum())
                ip = np.zeros(m + 1, np.int64)
                np.cumsum(lengths, out=ip[1:])
                arrays = [
                    np.fromfile(files[k], dtype=d, count=c) for k, d, c in zip(names[:4], dtypes, (nnz, nnz, m, m))
                ]
                yield (ip, *arrays)
                done += m
        finally:
            for fh in files.values():
                fh.close()

    def _place_constraints(self, bounds) -> list:
        """Send the spooled constraints to their owners (disjoint supports) or into the shards; returns
        per owner ``[n, nnz]`` (empty when they went into the shards)."""
        owners = [[0, 0] for _ in range(self.n_shards)]
        for j in range(self.n_shards):
            os.makedirs(os.path.join(self.tmp, f"owner-{j:05d}"))
        for ip, idx, coef, const, kind in self._spooled():
            if not self.disjoint:
                self._route(ip, idx, coef, const, np.zeros(const.size), kind)
                continue
            lengths = np.diff(ip)
            owner = np.searchsorted(bounds, np.minimum.reduceat(idx, ip[:-1]), side="right") - 1
            order = np.argsort(owner, kind="stable")  # constraints of one owner stay in spool order
            lp = lengths[order]
            ipo = np.zeros(order.size + 1, np.int64)
            np.cumsum(lp, out=ipo[1:])
            pos = np.repeat(ip[:-1][order] - ipo[:-1], lp) + np.arange(ipo[-1])
            idx, coef, const, kind, owner = idx[pos], coef[pos], const[order], kind[order], owner[order]
            cuts = np.searchsorted(owner, np.arange(self.n_shards + 1))
            for j in range(self.n_shards):
                a, b = int(cuts[j]), int(cuts[j + 1])
                if b == a:
                    continue
                e0, e1 = int(ipo[a]), int(ipo[b])
                folder = os.path.join(self.tmp, f"owner-{j:05d}")
                for name, arr in (
                    ("idx", (idx[e0:e1] - bounds[j]).astype(self.idx_dtype)),
                    ("coef", coef[e0:e1]),
                    ("const", const[a:b]),
                    ("kind", kind[a:b]),
                    ("len", lp[a:b]),
                ):
                    with open(os.path.join(folder, f"con.{name}"), "ab") as fh:
                        np.ascontiguousarray(arr).tofile(fh)
                owners[j][0] += b - a
                owners[j][1] += e1 - e0
        for k in ("idx", "coef", "const", "kind", "len"):
            os.remove(os.path.join(self.tmp, f"constraints.{k}"))
        return owners if self.disjoint else []

    def abort(self) -> None:
        """Remove everything written (the earlier content of ``directory`` is left as it was)."""
        if not self.closed:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        return False


_SHARD_KEYS = ("n_variables", "n_free", "idx_dtype", "n_shards")


def _empty_stats() -> dict:
    stats = {f"{c}_{g}": 0 for g in GROUPS for c in ("n", "nnz")}
    stats.update(n_potentials=0, n_squared=0, n_constraints=0, cmax=0.0, max_arity=2)
    return stats


def _check_target(directory: str) -> None:
    if os.path.isfile(directory):
        raise ValueError(f"`directory` {directory!r} is a file; expected a folder for the shard set (created).")
    if os.path.isdir(directory) and os.listdir(directory):
        if not os.path.isfile(os.path.join(directory, _MANIFEST)):
            raise ValueError(
                f"`directory` {directory!r} is a folder that holds other files (no {_MANIFEST} of a shard set); "
                "name a new or empty folder, or an earlier shard set to replace."
            )
        read_manifest(directory)  # a shard set of this format, or a clear error


def read_manifest(directory) -> dict:
    """The manifest of a shard set (``ValueError`` naming the folder if it is not one)."""
    path = os.path.join(os.fspath(directory), _MANIFEST)
    try:
        with open(path) as fh:
            manifest = json.load(fh)
    except (OSError, ValueError) as err:
        raise ValueError(f"`directory` {os.fspath(directory)!r} is not a readable shard set ({err}).") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise ValueError(
            f"`directory` {os.fspath(directory)!r} holds no {FORMAT} shard set of version {VERSION} ({_MANIFEST})."
        )
    return manifest


def shard_paths(directory) -> list[str]:
    """The shard folders of a shard set, in order."""
    manifest = read_manifest(directory)
    return [os.path.join(os.fspath(directory), shard_name(i)) for i in range(int(manifest["n_shards"]))]


def read_variables(directory) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(free, x_fixed, bounds)`` of a shard set: vectors over the variables and the owners' ranges."""
    with np.load(os.path.join(os.fspath(directory), _VARIABLES), allow_pickle=False) as data:
        return data["free"], data["x_fixed"], data["bounds"]


def is_shard_folder(source) -> bool:
    """Whether ``source`` is the folder of one shard of a shard set."""
    return isinstance(source, (str, os.PathLike)) and os.path.isfile(os.path.join(os.fspath(source), "meta.json"))


def read_block(folder):
    """Build the :class:`~tractable.hlmrf.partition.Block` of one shard folder (on the worker).

    Every array of the block is allocated once at its final size and the group files are read into
    it; the consensus indices are then renumbered locally in place, piece by piece.

    Returns
    -------
    block : Block
    meta : dict
        The shard's ``meta.json`` (counts, ``set_id``, ``n_variables``, ``n_free``, ``cmax``).
    counts : ndarray of float64, shape (block.n_local,)
        Copies of each local variable in this block.

    Raises
    ------
    ValueError
        Naming the file: a missing or truncated group file, or an index or kind out of range.
    """
    from ..hlmrf.partition import Block

    folder = os.fspath(folder)
    try:
        with open(os.path.join(folder, "meta.json")) as fh:
            meta = json.load(fh)
    except (OSError, ValueError) as err:
        raise ValueError(f"shard folder {folder!r} has no readable meta.json ({err}).") from None
    dtype = np.dtype(meta["idx_dtype"])
    n_free = int(meta["n_free"])
    n_terms = sum(int(meta[f"n_{g}"]) for g in GROUPS)
    n_copies = sum(int(meta[f"nnz_{g}"]) for g in GROUPS)
    idx = np.empty(n_copies, dtype)
    coef = np.empty(n_copies)
    const = np.empty(n_terms)
    weight = np.empty(n_terms)
    kind = np.empty(n_terms, np.int8)
    indptr = np.empty(n_terms + 1, np.int64)
    indptr[0] = 0
    t = c = 0
    for g in GROUPS:
        nt, nc = int(meta[f"n_{g}"]), int(meta[f"nnz_{g}"])
        if nt == 0:
            continue
        for name, arr, lo, hi in (
            ("idx", idx, c, c + nc),
            ("coef", coef, c, c + nc),
            ("const", const, t, t + nt),
            ("weight", weight, t, t + nt),
            ("kind", kind, t, t + nt),
        ):
            _read_into(os.path.join(folder, f"{g}.{name}"), arr[lo:hi])
        if g == "general":
            _read_into(os.path.join(folder, "general.len"), indptr[1 + t : 1 + t + nt])
        else:
            indptr[1 + t : 1 + t + nt] = 2 if g == "pair" else 1
        t, c = t + nt, c + nc
    np.cumsum(indptr[1:], out=indptr[1:])
    if indptr[-1] != n_copies:
        raise ValueError(f"shard folder {folder!r}: general.len does not match the counts of meta.json.")
    if np.any((kind < KIND_HINGE) | (kind > KIND_EQ)) or np.any(~(weight >= 0.0)):
        raise ValueError(f"shard folder {folder!r}: a term has a kind code outside 0..3 or a negative weight.")
    mark = np.zeros(n_free, bool)
    for s in range(0, n_copies, _PIECE):
        piece = idx[s : s + _PIECE]
        if piece.size and (piece.min() < 0 or piece.max() >= n_free):
            raise ValueError(f"shard folder {folder!r}: a variable index is outside 0..{n_free - 1}.")
        mark[piece] = True
    variables = np.flatnonzero(mark)
    del mark
    lookup = np.zeros(n_free, dtype)
    lookup[variables] = np.arange(variables.size, dtype=dtype)
    for s in range(0, n_copies, _PIECE):
        idx[s : s + _PIECE] = lookup[idx[s : s + _PIECE]]
    del lookup
    counts = np.bincount(idx, minlength=variables.size).astype(np.float64)
    block = Block(
        terms=np.zeros(0, np.int64),
        variables=variables,
        indptr=indptr,
        idx=idx,
        coef=coef,
        const=const,
        weight=weight,
        kind=kind,
        max_arity=int(meta["max_arity"]) if meta["n_general"] else (2 if meta["n_pair"] else 1),
        n_pair=int(meta["n_pair"]),
        n_single=int(meta["n_single"]),
    )
    return block, meta, counts


def read_owner_constraints(directory, j: int, n: int):
    """The consensus-step constraints of owner ``j`` of a shard set, ``(indptr, idx, coef, const, kind)``
    (``idx`` relative to the owner's first variable, ``n`` its variables), ordered as the projections
    vectorize them (two unknowns, then one, then the rest)."""
    from ..hlmrf._kernels import constraint_order

    manifest = read_manifest(directory)
    m, nnz = manifest["owners"][j] if manifest.get("owners") else (0, 0)
    dtype = np.dtype(manifest["idx_dtype"])
    folder = os.path.join(os.fspath(directory), f"owner-{j:05d}")
    lengths = np.empty(m, np.int64)
    idx = np.empty(nnz, dtype)
    coef = np.empty(nnz)
    const = np.empty(m)
    kind = np.empty(m, np.int8)
    if m:
        for name, arr in (("len", lengths), ("idx", idx), ("coef", coef), ("const", const), ("kind", kind)):
            _read_into(os.path.join(folder, f"con.{name}"), arr)
        if idx.min() < 0 or idx.max() >= n:
            raise ValueError(f"shard set {os.fspath(directory)!r}: a constraint of owner {j} is outside its variables.")
    ip = np.zeros(m + 1, np.int64)
    np.cumsum(lengths, out=ip[1:])
    order = constraint_order(ip)
    lp = lengths[order]
    ipo = np.zeros(m + 1, np.int64)
    np.cumsum(lp, out=ipo[1:])
    pos = np.repeat(ip[:-1][order] - ipo[:-1], lp) + np.arange(ipo[-1])
    return ipo, idx[pos].astype(np.int64), coef[pos], const[order], kind[order]


def _read_into(path: str, out: np.ndarray) -> None:
    """Fill ``out`` (contiguous) with the bytes of the file ``path``, which must hold exactly that many."""
    try:
        with open(path, "rb") as fh:
            got = fh.readinto(memoryview(out).cast("B"))
            extra = fh.read(1)
    except OSError as err:
        raise ValueError(f"shard file {path!r} cannot be read ({err.strerror or err}).") from None
    if got != out.nbytes or extra:
        raise ValueError(f"shard file {path!r} holds {'more' if extra else got} bytes; expected {out.nbytes}.")


def kinds_of(squared: bool, hard: bool, senses) -> np.ndarray:
    """The kind codes of a block of PSL ground rules: potentials (hinge or squared) or constraints."""
    if not hard:
        return np.int8(KIND_SQUARED if squared else KIND_HINGE)
    return np.where(np.asarray(senses) == "==", KIND_EQ, KIND_LEQ).astype(np.int8)
