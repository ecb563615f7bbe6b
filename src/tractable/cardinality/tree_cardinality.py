"""A tree-structured pairwise binary model plus one cardinality potential (Sec. 5.4 of Tarlow et al. 2012).

``p(y) ∝ exp(sum_d theta_d y_d + sum_{(u,v) in E} psi_uv(y_u, y_v) + f(sum_d y_d))`` with E a
forest. The paper's appendix is not available; the algorithm here is derived directly.

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
from scipy.special import expit

from .._results import MAPResult, frozen_array
from .._validate import as_float_array, as_index_array, check_int, check_rng
from ._kernels import maxplus_conv_batch
from ._result import CardinalityMarginals
from ._tree import NO_CONFIGURATION

__all__ = ["TreeCardinalityModel"]


def _norm(x: np.ndarray):
    m = x.max()
    if not m > 0:
        raise ValueError(NO_CONFIGURATION + ".")
    return x / m, float(np.log(m))


def _corr(a: np.ndarray, b: np.ndarray, width: int) -> np.ndarray:
    """``out[j] = sum_i a[j + i] b[i]`` for ``j < width``."""
    full = np.correlate(a, b, mode="full")  # full[k] = sum_n a[n + k - (len(b) - 1)] b[n]
    out = full[len(b) - 1:len(b) - 1 + width]
    if out.shape[0] < width:
        out = np.concatenate([out, np.zeros(width - out.shape[0])])
    return out


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
        Log-potential ``theta_d`` of ``y_d = 1`` (``±inf`` clamp the variable).
    f : array_like of shape (D + 1,)
        Log-potential of the count ``sum_d y_d``.

    Raises
    ------
    ValueError
        For edges out of range, self loops, repeated edges, cycles, wrong shapes, NaN or
        ``+inf`` potentials, or when no configuration has non-zero probability.

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

    def __init__(self, edges, pairwise, unary, f):
        theta = as_float_array(unary, "unary", ndim=1, allow_posinf=True)
        n = theta.shape[0]
        if n < 1:
            raise ValueError("`unary` must have at least one entry; got 0.")
        f = as_float_array(f, "f", ndim=1)
        if f.shape[0] != n + 1:
            raise ValueError(f"`f` must have n_variables + 1 = {n + 1} entries; got {f.shape[0]}.")
        if not np.any(f > -np.inf):
            raise ValueError(f"`f` is -inf at every count: {NO_CONFIGURATION}.")
        edges = np.asarray(edges)
        if edges.size == 0:
            edges = np.zeros((0, 2), dtype=np.int64)
        edges = as_index_array(edges, "edges", size=n, ndim=2)
        if edges.shape[1] != 2:
            raise ValueError(f"`edges` must have shape (E, 2); got {edges.shape}.")
        pw = as_float_array(pairwise, "pairwise")
        if pw.shape != (edges.shape[0], 2, 2):
            raise ValueError(f"`pairwise` must have shape ({edges.shape[0]}, 2, 2); got {pw.shape}.")
        if np.any(edges[:, 0] == edges[:, 1]):
            e = int(np.nonzero(edges[:, 0] == edges[:, 1])[0][0])
            raise ValueError(f"`edges` must not contain self loops; got edge {e} = {edges[e].tolist()}.")
        # union-find cycle check
        parent = list(range(n))

        def find(a):
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for e, (u, v) in enumerate(edges):
            ru, rv = find(int(u)), find(int(v))
            if ru == rv:
                raise ValueError(f"`edges` must form a forest; edge {e} = {[int(u), int(v)]} closes a cycle.")
            parent[ru] = rv
        self.n_variables = n
        self.edges = frozen_array(edges)
        self.pairwise = frozen_array(pw)
        self.unary = frozen_array(theta)
        self.f = frozen_array(f)
        self._structure()
        self._cache = None

    def _structure(self) -> None:
        n = self.n_variables
        adj: list = [[] for _ in range(n)]
        for e, (u, v) in enumerate(self.edges):
            adj[u].append((int(v), e, 0))  # psi[e][y_u, y_v]; seen from u the child is v
            adj[v].append((int(u), e, 1))
        seen = np.zeros(n, dtype=bool)
        order, par, par_edge, par_side, roots = [], np.full(n, -1), np.full(n, -1), np.zeros(n, dtype=int), []
        for r in range(n):
            if seen[r]:
                continue
            roots.append(r)
            seen[r] = True
            stack = [r]
            while stack:
                v = stack.pop()
                order.append(v)
                for c, e, side in adj[v]:
                    if not seen[c]:
                        seen[c] = True
                        par[c], par_edge[c], par_side[c] = v, e, side
                        stack.append(c)
        self._order = order  # parents before children
        self._roots = roots
        self._children = [[] for _ in range(n)]
        for v in order:
            if par[v] >= 0:
                self._children[par[v]].append(v)
        # psi[c] as a (2, 2) array indexed [state of parent, state of child]
        self._psi = np.zeros((n, 2, 2))
        for c in range(n):
            if par[c] >= 0:
                p = self.pairwise[par_edge[c]]
                self._psi[c] = p if par_side[c] == 0 else p.T

    # ------------------------------------------------------------------ passes
    def _up(self):
        n = self.n_variables
        theta = self.unary
        finite = np.isfinite(theta)
        # global shift keeps extreme theta from underflowing: theta - t with f(k) + t k
        self._tilt = float(np.median(theta[finite])) if finite.any() else 0.0
        tilt = self._tilt
        w_leaf = np.zeros((n, 2))
        w_leaf[:, 1] = np.where(finite, theta - tilt, np.where(np.isposinf(theta), 0.0, -np.inf))
        w_leaf[np.isposinf(theta), 0] = -np.inf
        self._wleaf = w_leaf
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
                    raise ValueError(NO_CONFIGURATION + ".")
                g = psi @ M[c]  # g[s] = sum_s' psi[s, s'] M_c[s']
                G[c] = (g, S[c] + self._psi[c].max())
                acc = [np.convolve(acc[s], g[s]) for s in range(2)]
                m = max(acc[0].max(), acc[1].max())
                if not m > 0:
                    raise ValueError(NO_CONFIGURATION + ".")
                acc = [a / m for a in acc]
                sc += np.log(m) + G[c][1]
                prefixes.append((acc[0], acc[1], sc))
            pref[v] = prefixes
            out = np.zeros((2, size[v] + 1))
            lw = w_leaf[v]
            mw = lw.max()
            ew = np.exp(lw - mw)
            out[0, :size[v]] = ew[0] * acc[0]
            out[1, 1:] = ew[1] * acc[1]
            M[v], s2 = _norm(out)
            S[v] = sc + mw + s2
        # merge the components at a virtual root
        comp = [M[r].sum(axis=0) for r in self._roots]
        cp = [(np.ones(1), 0.0)]
        for r, a in zip(self._roots, comp):
            x, s = _norm(np.convolve(cp[-1][0], a))
            cp.append((x, cp[-1][1] + S[r] + s))
        self._M, self._S, self._G, self._pref, self._size = M, S, G, pref, size
        self._comp, self._comp_prefix = comp, cp
        ks = np.arange(n + 1)
        with np.errstate(invalid="ignore"):
            fl = self.f + tilt * ks
        total, stot = cp[-1]
        with np.errstate(divide="ignore"):
            lb = np.log(total) + fl
        mx = lb.max()
        if not mx > -np.inf:
            raise ValueError(NO_CONFIGURATION + ".")
        belief = np.exp(lb - mx)
        self._logz = float(mx + stot + np.log(belief.sum()))
        self._count = belief / belief.sum()
        self._flog = fl

    def _ensure(self):
        if self._cache is None:
            self._up()
            self._cache = True

    def log_partition(self) -> float:
        """``log Z`` of the model."""
        self._ensure()
        return self._logz

    def marginals(self) -> CardinalityMarginals:
        """Marginals ``P(y_d = 1)``, count marginals and ``log Z`` (outward pass, see the module docs)."""
        t0 = time.perf_counter()
        self._ensure()
        n = self.n_variables
        M, S, pref = self._M, self._S, self._pref
        fl = self._flog
        fmax = fl.max()
        ef = np.exp(fl - fmax)
        # suffix products over components to form "all components but r"
        roots = self._roots
        suffix = [(np.ones(1), 0.0)]
        for r, a in zip(reversed(roots), reversed(self._comp)):
            x, s = _norm(np.convolve(suffix[-1][0], a))
            suffix.append((x, suffix[-1][1] + S[r] + s))
        suffix = suffix[::-1]
        O = [None] * n  # (2, size + 1) normalized, plus scale
        OS = np.zeros(n)
        for i, r in enumerate(roots):
            others = np.convolve(self._comp_prefix[i][0], suffix[i + 1][0])
            so = self._comp_prefix[i][1] + suffix[i + 1][1]
            o = _corr(ef, others, self._size[r] + 1)
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
            lw = self._wleaf[v]
            mw = lw.max()
            ew = np.exp(lw - mw)
            # suffix products of the children's G, per parent state
            suf = [(np.ones(1), np.ones(1), 0.0)]
            for c in reversed(kids):
                g, gs = self._G[c]
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
                width = int(self._size[c]) + 1
                h0 = _corr(O[v][0], r0, width)
                h1 = _corr(O[v][1], r1, width)
                psi = self._psi[c]
                pm = psi.max()
                e = np.exp(psi - pm)
                oc = np.vstack([e[0, 0] * h0 + e[1, 0] * h1, e[0, 1] * h0 + e[1, 1] * h1])
                O[c], s2 = _norm(oc) if oc.max() > 0 else (oc, 0.0)
                OS[c] = OS[v] + ps + qs + mw + pm + s2
        mu = expit(lm1 - lm0)
        mu = np.where(np.isneginf(lm1), 0.0, mu)
        return CardinalityMarginals(
            marginals=frozen_array(mu),
            count_marginals=frozen_array(self._count),
            log_partition=self._logz,
            time=time.perf_counter() - t0,
            method="tree_cardinality",
        )

    def score(self, y) -> float:
        """Unnormalized log-probability of an assignment ``y`` (D,)."""
        y = np.asarray(y, dtype=np.int64)
        with np.errstate(invalid="ignore"):
            sc = float(np.sum(np.where(y == 1, self.unary, 0.0)))
        for (u, v), p in zip(self.edges, self.pairwise):
            sc += float(p[y[u], y[v]])
        return sc + float(self.f[int(y.sum())])

    def map_assignment(self) -> MAPResult:
        """Exact MAP: the same dynamic program in the max-plus semiring, then backtracking.

        Returns
        -------
        MAPResult
            ``assignment`` (D,) int64, ``score``, ``time``. O(D^2) in the worst case.
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
        total = cpre[-1] + self.f
        k = int(np.argmax(total))
        if not total[k] > -np.inf:
            raise ValueError(NO_CONFIGURATION + ".")
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
        return MAPResult(assignment=frozen_array(y), score=self.score(y), time=time.perf_counter() - t0,
                         method="max_product")

    def sample(self, size: int = 1, rng=None) -> np.ndarray:
        """Exact joint samples, vectorized over samples (one Python step per node).

        Returns
        -------
        ndarray of shape (size, D), uint8
        """
        size = check_int(size, "size", minimum=0)
        rng = check_rng(rng)
        self._ensure()
        n = self.n_variables
        out = np.zeros((size, n), dtype=np.uint8)
        if size == 0:
            return out
        total = np.searchsorted(np.cumsum(self._count), rng.random(size) * self._count.sum(), side="right")
        total = np.minimum(total, n)
        k_node = np.zeros((n, size), dtype=np.int64)
        # split the total among components, last component first
        remaining = total.copy()
        for i in range(len(self._roots) - 1, -1, -1):
            r = self._roots[i]
            a = self._comp[i]
            prev = self._comp_prefix[i][0]
            j = np.arange(a.shape[0])
            idx = remaining[:, None] - j[None, :]
            ok = (idx >= 0) & (idx < prev.shape[0])
            w = np.where(ok, a[None, :] * prev[np.clip(idx, 0, prev.shape[0] - 1)], 0.0)
            k_node[r] = _draw(w, rng)
            remaining = remaining - k_node[r]
        state = np.zeros((n, size), dtype=np.int64)
        for r in self._roots:
            w = self._M[r][:, k_node[r]].T  # (size, 2)
            state[r] = _draw(w, rng)
        for v in self._order:
            kids = self._children[v]
            s = state[v]
            rem = k_node[v] - s  # count left for the children
            for i in range(len(kids) - 1, -1, -1):
                c = kids[i]
                p0, p1, _ = self._pref[v][i]
                psi = np.exp(self._psi[c] - self._psi[c].max())
                mc = self._M[c]
                width = mc.shape[1]
                j = np.arange(width)
                idx = rem[:, None] - j[None, :]
                ok = (idx >= 0) & (idx < p0.shape[0])
                pv = np.where(s[:, None] == 1, p1[np.clip(idx, 0, p0.shape[0] - 1)],
                              p0[np.clip(idx, 0, p0.shape[0] - 1)])
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
    return maxplus_conv_batch(a[None, :], b[None, :])[0]


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
