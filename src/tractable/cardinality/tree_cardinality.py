"""A tree-structured pairwise binary model plus one cardinality potential (Sec. 5.4 of Tarlow et al. 2012).

``p(y) ∝ exp(sum_d theta_d y_d + sum_{(u,v) in E} psi_uv(y_u, y_v) + f(sum_d y_d))`` with E a
forest; ``theta`` is the ``unary`` argument and ``f`` the ``count_potential`` argument (Tarlow et
al.'s symbols are kept in the derivation). The paper's appendix is not available; the algorithm
here is derived directly.

Derivation. Root every tree of the forest. For a node v with subtree T_v define the *subtree
message* ``M_v[s](k)`` = total weight of the configurations of T_v with ``y_v = s`` and ``k``
variables on in T_v (unary and pairwise factors inside T_v included). With
``G_c[s](k) = sum_{s'} exp(psi_vc(s, s')) M_c[s'](k)`` for a child c,

    M_v[s] = exp(theta_v s) * shift_s( G_c1[s] * G_c2[s] * ... )        (* = convolution),

because the counts of disjoint subtrees add. The component roots are merged by convolution,
and ``f`` is applied to the total count at a virtual root. For marginals, the *outside message*
``O_v[s](k)`` = weight of everything outside T_v, ``f`` included, given ``y_v = s`` and the count
``k`` inside T_v. For a child c of v, with ``R_v\\c[s]`` the subtree message of v without c's
subtree (prefix and suffix convolutions of the other children),

    O_c[s'](j) = sum_s exp(psi_vc(s, s')) sum_i O_v[s](j + i) R_v\\c[s](i)   (a correlation),

and ``P(y_v = s) ∝ sum_k M_v[s](k) O_v[s](k)``. Samples go top-down: the total count, its split
among components, then at each node the children's states and counts one child at a time.

All convolutions here are direct (``numpy.convolve``): with non-negative vectors that is
accurate relative to every entry, so no tilting is needed beyond a global shift that keeps
extreme ``theta`` from underflowing. Time O(D^2) in the worst case (a path), less for bushy trees.
"""

from __future__ import annotations

import time

import numpy as np

from .._errors import ZeroPartitionError
from .._forest import check_forest, traversal
from .._logspace import normalize_log
from .._results import OPTIMAL, MAPResult, frozen_array, stop_message
from .._validate import as_binary_assignment, as_float_array, check_int, check_magnitude, check_rng
from ._convolve import _as_kernel_rows
from ._huge import HUGE
from ._kernels import MAXPLUS, direct_rows
from ._result import CardinalityMarginals, exact_result
from ._tree import NO_CONFIGURATION

__all__ = ["TreeCardinalityModel"]


#: finite scores larger than this in magnitude are refused: the messages are linear-space vectors with a log
#: scale, in which a count far below its vector's largest entry underflows to 0 and is lost even when the count
#: potential makes it likely (a score near 1e300 swallows every O(1) weight, and ``tilt * k`` overflows)
MAX_SCORE = HUGE
_WHY = "TreeCardinalityModel's messages are linear-space vectors; use ±inf to clamp a variable or forbid a count"


def _norm(x: np.ndarray):
    m = x.max()
    if not m > 0:
        raise ZeroPartitionError(NO_CONFIGURATION + ".")
    return x / m, float(np.log(m))


def _corr(a: np.ndarray, b: np.ndarray, width: int) -> np.ndarray:
    """``out[j] = sum_i a[j + i] b[i]`` for ``j < width``."""
    full = np.correlate(a, b, mode="full")  # full[k] = sum_n a[n + k - (len(b) - 1)] b[n]
    out = full[len(b) - 1 : len(b) - 1 + width]
    if out.shape[0] < width:
        out = np.concatenate([out, np.zeros(width - out.shape[0])])
    return out


class _UpPass:
    """The upward pass of a model (subtree messages, prefix products, count belief), memoized."""

    __slots__ = ("tilt", "wleaf", "M", "S", "G", "pref", "size", "comp", "comp_prefix", "logz", "count", "flog")


class TreeCardinalityModel:
    """Pairwise binary forest plus a cardinality potential on all variables.

    Parameters
    ----------
    edges : array_like of shape (E, 2), int
        Edges of a forest over the variables ``0 .. D-1``.
    pairwise : array_like of shape (E, 2, 2)
        ``pairwise[e, a, b]`` is the log-potential of ``(y_u, y_v) = (a, b)`` for edge
        ``e = (u, v)`` (``-inf`` allowed).
    unary : array_like of shape (D,)
        Log-potential of ``y_d = 1`` (``±inf`` clamp the variable).
    count_potential : array_like of shape (D + 1,)
        Log-potential of the count ``sum_d y_d`` (Tarlow et al.'s ``f``).

    Raises
    ------
    ValueError
        For edges out of range, self loops, repeated edges, cycles, wrong shapes, NaN or
        ``+inf`` potentials, or finite potentials larger than :data:`MAX_SCORE` (2**20) in magnitude.
    ZeroPartitionError
        When no configuration has non-zero probability (a ``ValueError`` too).

    Notes
    -----
    A model is immutable; its upward pass is computed on first use and memoized in a private
    attribute (never stale, since nothing can change).

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.cardinality import TreeCardinalityModel
    >>> agree = np.array([[1.0, 0.0], [0.0, 1.0]])  # neighbours like to agree
    >>> m = TreeCardinalityModel([[0, 1], [1, 2]], [agree, agree], np.zeros(3), [0, 0, -np.inf, 0])
    >>> res = m.marginals()
    >>> np.round(res.count_marginals, 3)
    array([0.348, 0.303, 0.   , 0.348])
    """

    def __init__(self, edges, pairwise, unary, count_potential):
        theta = as_float_array(unary, "unary", ndim=1, allow_posinf=True)
        n = theta.shape[0]
        if n < 1:
            raise ValueError("`unary` must have at least one entry; got 0.")
        f = as_float_array(count_potential, "count_potential", ndim=1)
        if f.shape[0] != n + 1:
            raise ValueError(f"`count_potential` must have n_variables + 1 = {n + 1} entries; got {f.shape[0]}.")
        if not np.any(f > -np.inf):
            raise ZeroPartitionError(f"`count_potential` is -inf at every count: {NO_CONFIGURATION}.")
        edges = check_forest(edges, n, "edges")
        pw = as_float_array(pairwise, "pairwise")
        if pw.shape != (edges.shape[0], 2, 2):
            raise ValueError(f"`pairwise` must have shape ({edges.shape[0]}, 2, 2); got {pw.shape}.")
        for arr, name in ((theta, "unary"), (pw, "pairwise"), (f, "count_potential")):
            check_magnitude(arr, name, MAX_SCORE, _WHY)
        self._n = n
        self._edges = frozen_array(edges)
        self._pairwise = frozen_array(pw)
        self._unary = frozen_array(theta)
        self._count_potential = frozen_array(f)
        self._structure()
        self._memo = None  # _UpPass, computed on first use

    @property
    def n_variables(self) -> int:
        """Number of binary variables D."""
        return self._n

    @property
    def edges(self) -> np.ndarray:
        """The forest's edges, shape (E, 2), read-only."""
        return self._edges

    @property
    def pairwise(self) -> np.ndarray:
        """Edge log-potentials, shape (E, 2, 2), read-only."""
        return self._pairwise

    @property
    def unary(self) -> np.ndarray:
        """Unary scores, shape (D,), read-only."""
        return self._unary

    @property
    def count_potential(self) -> np.ndarray:
        """Count log-potential, shape (D + 1,), read-only."""
        return self._count_potential

    def _structure(self) -> None:
        n = self._n
        order, par, par_edge, par_side = traversal(self._edges, n)
        self._order = order.tolist()  # parents before children
        self._roots = [v for v in self._order if par[v] < 0]
        self._children = [[] for _ in range(n)]
        for v in self._order:
            if par[v] >= 0:
                self._children[par[v]].append(v)
        # psi[c] as a (2, 2) array indexed [state of parent, state of child]
        self._psi = np.zeros((n, 2, 2))
        for c in range(n):
            if par[c] >= 0:
                p = self._pairwise[par_edge[c]]
                self._psi[c] = p if par_side[c] == 0 else p.T
        self._psi.flags.writeable = False

    # ------------------------------------------------------------------ passes
    def _up(self) -> _UpPass:
        if self._memo is not None:
            return self._memo
        u = _UpPass()
        n = self._n
        theta = self._unary
        finite = np.isfinite(theta)
        # global shift keeps extreme theta from underflowing: theta - t with f(k) + t k
        tilt = u.tilt = float(np.median(theta[finite])) if finite.any() else 0.0
        w_leaf = np.zeros((n, 2))
        w_leaf[:, 1] = np.where(finite, theta - tilt, np.where(np.isposinf(theta), 0.0, -np.inf))
        w_leaf[np.isposinf(theta), 0] = -np.inf
        u.wleaf = w_leaf
        M = [None] * n  # (2, size + 1) normalized, plus scale
        S = np.zeros(n)
        G = [None] * n
        pref: list = [None] * n
        size = np.ones(n, dtype=np.int64)
        for v in reversed(self._order):
            kids = self._children[v]
            size[v] = 1 + sum(int(size[c]) for c in kids)
            # prefix products of the children's G for each parent state
            acc = [np.ones(1), np.ones(1)]
            sc = 0.0
            prefixes = [(acc[0], acc[1], 0.0)]
            for c in kids:
                psi = np.exp(self._psi[c] - self._psi[c].max()) if np.isfinite(self._psi[c].max()) else None
                if psi is None:
                    raise ZeroPartitionError(NO_CONFIGURATION + ".")
                g = psi @ M[c]  # g[s] = sum_s' psi[s, s'] M_c[s']
                G[c] = (g, S[c] + self._psi[c].max())
                acc = [np.convolve(acc[s], g[s]) for s in range(2)]
                m = max(acc[0].max(), acc[1].max())
                if not m > 0:
                    raise ZeroPartitionError(NO_CONFIGURATION + ".")
                acc = [a / m for a in acc]
                sc += np.log(m) + G[c][1]
                prefixes.append((acc[0], acc[1], sc))
            pref[v] = prefixes
            out = np.zeros((2, size[v] + 1))
            lw = w_leaf[v]
            mw = lw.max()
            ew = np.exp(lw - mw)
            out[0, : size[v]] = ew[0] * acc[0]
            out[1, 1:] = ew[1] * acc[1]
            M[v], s2 = _norm(out)
            S[v] = sc + mw + s2
        # merge the components at a virtual root
        comp = [M[r].sum(axis=0) for r in self._roots]
        cp = [(np.ones(1), 0.0)]
        for r, a in zip(self._roots, comp):
            x, s = _norm(np.convolve(cp[-1][0], a))
            cp.append((x, cp[-1][1] + S[r] + s))
        u.M, u.S, u.G, u.pref, u.size = M, S, G, pref, size
        u.comp, u.comp_prefix = comp, cp
        ks = np.arange(n + 1)
        with np.errstate(invalid="ignore"):
            fl = self._count_potential + tilt * ks
        total, stot = cp[-1]
        with np.errstate(divide="ignore"):
            lb = np.log(total) + fl
        if not np.max(lb) > -np.inf:
            raise ZeroPartitionError(NO_CONFIGURATION + ".")
        u.count, lz = normalize_log(lb)
        u.logz = float(lz + stot)
        u.flog = fl
        self._memo = u
        return u

    def log_partition(self) -> float:
        """``log Z`` of the model."""
        return self._up().logz

    def marginals(self) -> CardinalityMarginals:
        """Marginals, count marginals and ``log Z`` (outward pass, see the module docs).

        Returns
        -------
        CardinalityMarginals
            ``marginals`` (D, 2) = ``[P(y_d = 0), P(y_d = 1)]`` (``p_on`` = ``P(y_d = 1)``),
            ``count_marginals`` (D + 1,), ``log_partition``; ``method`` ``"tree_cardinality"``,
            ``status`` ``"optimal"``.
        """
        t0 = time.perf_counter()
        u = self._up()
        n = self._n
        M, S, pref = u.M, u.S, u.pref
        fl = u.flog
        fmax = fl.max()
        ef = np.exp(fl - fmax)
        # suffix products over components to form "all components but r"
        roots = self._roots
        suffix = [(np.ones(1), 0.0)]
        for r, a in zip(reversed(roots), reversed(u.comp)):
            x, s = _norm(np.convolve(suffix[-1][0], a))
            suffix.append((x, suffix[-1][1] + S[r] + s))
        suffix = suffix[::-1]
        O = [None] * n  # (2, size + 1) normalized, plus scale
        OS = np.zeros(n)
        for i, r in enumerate(roots):
            others = np.convolve(u.comp_prefix[i][0], suffix[i + 1][0])
            so = u.comp_prefix[i][1] + suffix[i + 1][1]
            o = _corr(ef, others, u.size[r] + 1)
            O[r], s2 = _norm(np.vstack([o, o]))
            OS[r] = so + fmax + s2
        lm1 = np.empty(n)
        lm0 = np.empty(n)
        for v in self._order:
            kids = self._children[v]
            # masses of y_v
            with np.errstate(divide="ignore"):
                mass = np.log(np.sum(M[v] * O[v], axis=1)) + S[v] + OS[v]
            lm0[v], lm1[v] = mass
            if not kids:
                continue
            lw = u.wleaf[v]
            mw = lw.max()
            ew = np.exp(lw - mw)
            # suffix products of the children's G, per parent state
            suf = [(np.ones(1), np.ones(1), 0.0)]
            for c in reversed(kids):
                g, gs = u.G[c]
                a0, a1 = np.convolve(suf[-1][0], g[0]), np.convolve(suf[-1][1], g[1])
                m = max(a0.max(), a1.max())
                suf.append((a0 / m, a1 / m, suf[-1][2] + gs + np.log(m)))
            suf = suf[::-1]
            for i, c in enumerate(kids):
                p0, p1, ps = pref[v][i]
                q0, q1, qs = suf[i + 1]
                rest = [np.convolve(p0, q0), np.convolve(p1, q1)]
                # R_v\c[s]: own weight, shift by s
                r0 = ew[0] * rest[0]
                r1 = np.concatenate([[0.0], ew[1] * rest[1]])
                width = int(u.size[c]) + 1
                h0 = _corr(O[v][0], r0, width)
                h1 = _corr(O[v][1], r1, width)
                psi = self._psi[c]
                pm = psi.max()
                e = np.exp(psi - pm)
                oc = np.vstack([e[0, 0] * h0 + e[1, 0] * h1, e[0, 1] * h0 + e[1, 1] * h1])
                O[c], s2 = _norm(oc) if oc.max() > 0 else (oc, 0.0)
                OS[c] = OS[v] + ps + qs + mw + pm + s2
        with np.errstate(invalid="ignore"):
            log_odds = lm1 - lm0
        log_odds[np.isneginf(lm1)] = -np.inf
        return exact_result(log_odds, u.count, u.logz, t0, "tree_cardinality")

    def score(self, y) -> float:
        """Unnormalized log-probability of an assignment ``y`` (D,) of 0/1."""
        y = as_binary_assignment(y, "y", len(self.unary))
        with np.errstate(invalid="ignore"):
            sc = float(np.sum(np.where(y == 1, self.unary, 0.0)))
        for (u, v), p in zip(self.edges, self.pairwise):
            sc += float(p[y[u], y[v]])
        return sc + float(self._count_potential[int(y.sum())])

    def map_assignment(self) -> MAPResult:
        """Exact MAP: the same dynamic program in the max-plus semiring, then backtracking.

        Returns
        -------
        MAPResult
            ``assignment`` (D,) int64, ``score``, ``time``, ``method`` ``"max_product"``, ``status``
            ``"optimal"``. O(D^2) in the worst case.
        """
        t0 = time.perf_counter()
        n = self.n_variables
        w = np.zeros((n, 2))
        w[:, 1] = self.unary
        w[np.isposinf(self.unary)] = [-np.inf, 0.0]
        ml = [None] * n
        gl = [None] * n
        pref: list = [None] * n
        for v in reversed(self._order):
            acc = [np.zeros(1), np.zeros(1)]
            prefixes = [acc]
            for c in self._children[v]:
                psi = self._psi[c]
                g = np.vstack([np.max(psi[s][:, None] + ml[c], axis=0) for s in range(2)])
                gl[c] = g
                acc = [_maxconv(acc[s], g[s]) for s in range(2)]
                prefixes.append(acc)
            pref[v] = prefixes
            m = np.full((2, acc[0].shape[0] + 1), -np.inf)
            m[0, :-1] = w[v, 0] + acc[0]
            m[1, 1:] = w[v, 1] + acc[1]
            ml[v] = m
        comps = [ml[r].max(axis=0) for r in self._roots]
        cpre = [np.zeros(1)]
        for a in comps:
            cpre.append(_maxconv(cpre[-1], a))
        total = cpre[-1] + self._count_potential
        k = int(np.argmax(total))
        if not total[k] > -np.inf:
            raise ZeroPartitionError(NO_CONFIGURATION + ".")
        y = np.zeros(n, dtype=np.int64)
        count = np.zeros(n, dtype=np.int64)
        rem = k
        for i in range(len(self._roots) - 1, -1, -1):
            r = self._roots[i]
            count[r] = _best_split(comps[i], cpre[i], rem)
            rem -= count[r]
            y[r] = int(np.argmax(ml[r][:, count[r]]))
        for v in self._order:
            kids = self._children[v]
            s, rem = y[v], count[v] - y[v]
            for i in range(len(kids) - 1, -1, -1):
                c = kids[i]
                prev = pref[v][i][s]
                cand = self._psi[c][s][:, None] + ml[c]  # (2, size_c + 1)
                best = [(_best_split(cand[sc], prev, rem), sc) for sc in range(2)]
                vals = []
                for j, sc in best:
                    idx = rem - j
                    ok = 0 <= idx < prev.shape[0]
                    vals.append(cand[sc, j] + prev[idx] if ok else -np.inf)
                j, sc = best[int(np.argmax(vals))]
                y[c], count[c] = sc, j
                rem -= j
        return MAPResult(
            assignment=frozen_array(y),
            score=self.score(y),
            time=time.perf_counter() - t0,
            method="max_product",
            message=stop_message(OPTIMAL, "max_product", 0),
        )

    def sample(self, *, size: int = 1, rng=None) -> np.ndarray:
        """Exact joint samples, vectorized over samples (one Python step per node).

        Parameters
        ----------
        size : int
            Number of samples.
        rng : None, int or numpy.random.Generator
            Source of randomness (the same seed gives the same samples).

        Returns
        -------
        ndarray of shape (size, D), uint8
        """
        size = check_int(size, "size", minimum=0)
        rng = check_rng(rng)
        u = self._up()
        n = self._n
        out = np.zeros((size, n), dtype=np.uint8)
        if size == 0:
            return out
        total = np.searchsorted(np.cumsum(u.count), rng.random(size) * u.count.sum(), side="right")
        total = np.minimum(total, n)
        k_node = np.zeros((n, size), dtype=np.int64)
        # split the total among components, last component first
        remaining = total.copy()
        for i in range(len(self._roots) - 1, -1, -1):
            r = self._roots[i]
            a = u.comp[i]
            prev = u.comp_prefix[i][0]
            j = np.arange(a.shape[0])
            idx = remaining[:, None] - j[None, :]
            ok = (idx >= 0) & (idx < prev.shape[0])
            w = np.where(ok, a[None, :] * prev[np.clip(idx, 0, prev.shape[0] - 1)], 0.0)
            k_node[r] = _draw(w, rng)
            remaining = remaining - k_node[r]
        state = np.zeros((n, size), dtype=np.int64)
        for r in self._roots:
            w = u.M[r][:, k_node[r]].T  # (size, 2)
            state[r] = _draw(w, rng)
        for v in self._order:
            kids = self._children[v]
            s = state[v]
            rem = k_node[v] - s  # count left for the children
            for i in range(len(kids) - 1, -1, -1):
                c = kids[i]
                p0, p1, _ = u.pref[v][i]
                psi = np.exp(self._psi[c] - self._psi[c].max())
                mc = u.M[c]
                width = mc.shape[1]
                j = np.arange(width)
                idx = rem[:, None] - j[None, :]
                ok = (idx >= 0) & (idx < p0.shape[0])
                pv = np.where(
                    s[:, None] == 1, p1[np.clip(idx, 0, p0.shape[0] - 1)], p0[np.clip(idx, 0, p0.shape[0] - 1)]
                )
                pv = np.where(ok, pv, 0.0)
                w0 = psi[s, 0][:, None] * mc[0][None, :] * pv
                w1 = psi[s, 1][:, None] * mc[1][None, :] * pv
                pick = _draw(np.hstack([w0, w1]), rng)
                state[c] = pick // width
                k_node[c] = pick % width
                rem = rem - k_node[c]
        out[:] = state.T.astype(np.uint8)
        return out


def _maxconv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = _as_kernel_rows(a[None, :]), _as_kernel_rows(b[None, :])
    return direct_rows(a, b, np.full((1, a.shape[1] + b.shape[1] - 1), -np.inf), MAXPLUS)[0]


def _best_split(a: np.ndarray, prev: np.ndarray, rem: int) -> int:
    """argmax_j a[j] + prev[rem - j] (ties to the smallest j)."""
    j = np.arange(a.shape[0])
    idx = rem - j
    ok = (idx >= 0) & (idx < prev.shape[0])
    vals = np.where(ok, a + prev[np.clip(idx, 0, prev.shape[0] - 1)], -np.inf)
    return int(np.argmax(vals))


def _draw(w: np.ndarray, rng) -> np.ndarray:
    """One categorical draw per row of non-negative weights ``w`` (rows need not be normalized)."""
    cdf = np.cumsum(w, axis=1)
    u = rng.random(w.shape[0]) * cdf[:, -1]
    return (cdf <= u[:, None]).sum(axis=1)
