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

Numerics. Every message is kept in log space (``-inf`` for a zero weight), shifted so that its
largest entry is 0, with the shift carried as a separate log scale. The convolutions and
correlations are direct log-sum-exp sums (:func:`._logconv.log_direct_rows`): every output entry
is shifted by its own largest term, so no entry underflows and each is accurate relative to itself,
however far below its vector's maximum it lies. (Linear-space vectors normalized to a maximum of 1
lose every count more than ~e^-745 below the maximum, and such a count can be the likely one once
the count potential or a pairwise score further up favours it; scores spanning a few hundred did
that.) Sampling draws from each conditional in log space, shifted by that conditional's own
maximum, and MAP is the same dynamic program in the max-plus semiring. So marginals, count
marginals, ``log Z``, samples and MAP are exact to rounding for any finite scores up to
:data:`MAX_SCORE`. Time O(D^2) in the worst case (a path), less for bushy trees; a log-space
product costs one ``exp``, which the Python work per node dominates except at wide convolutions.
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
from ._logconv import LOGCONV, LOGCORR, log_direct_rows
from ._result import CardinalityMarginals, exact_result
from ._tree import NO_CONFIGURATION

__all__ = ["TreeCardinalityModel"]


#: finite scores larger than this in magnitude are refused: the messages are exact in log space at any
#: magnitude, but a log weight is one float64, so a score near 1e300 swallows every O(1) weight next to
#: it (``1e300 + log 2 == 1e300``) and sums of such scores overflow; below 2**20 a sum over D variables
#: keeps an absolute precision of about ``D * 2**20 * 2**-52`` (2e-10 per 1000 variables)
MAX_SCORE = HUGE
_WHY = (
    "TreeCardinalityModel keeps each log weight in one float64, in which a huge score swallows the O(1) "
    "weights next to it; use ±inf to clamp a variable or forbid a count"
)


def _lnorm(x: np.ndarray) -> tuple[np.ndarray, float]:
    """``(x - max(x), max(x))`` of log-values ``x``; ZeroPartitionError when every entry is ``-inf``."""
    m = float(x.max())
    if m == -np.inf:
        raise ZeroPartitionError(NO_CONFIGURATION + ".")
    return x - m, m


#: operands at most this long are convolved by NumPy's vectorized ``exp`` on a stack of shifted copies
#: (about 3 ns a product); longer ones by the compiled kernel (one scalar ``exp``, about 6 ns, a product)
_SHORT = 16


def _lse0(t: np.ndarray) -> np.ndarray:
    """``log sum_i exp(t[i])`` over the first axis of log-values, each entry shifted by its own maximum."""
    m = t.max(axis=0)
    m = np.where(m > -np.inf, m, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(t - m).sum(axis=0)) + m


def _lconv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise log-space convolution of ``a`` (n, m) and ``b`` (n, p): ``(n, m + p - 1)``.

    ``out[r, k] = log sum_j exp(a[r, j] + b[r, k - j])``, every entry a log-sum-exp shifted by its own
    largest term (exact relative to itself at any magnitude; ``-inf`` allowed).
    """
    if a.shape[1] < b.shape[1]:
        a, b = b, a
    m, p = a.shape[1], b.shape[1]
    if p == 1:  # a single count: a shift of the log-values (the first child of every node)
        return a + b
    if p <= _SHORT:
        t = np.full((p, a.shape[0], m + p - 1), -np.inf)
        for i in range(p):
            t[i, :, i : i + m] = a + b[:, i : i + 1]
        return _lse0(t)
    a, b = _as_kernel_rows(a), _as_kernel_rows(b)
    return log_direct_rows(a, b, np.empty((a.shape[0], m + p - 1)), LOGCONV)


def _lcorr(a: np.ndarray, b: np.ndarray, width: int) -> np.ndarray:
    """Row-wise log-space correlation ``out[r, j] = log sum_i exp(a[r, j + i] + b[r, i])``, ``j < width``.

    ``a`` (n, m), ``b`` (n, p); entries ``a[r, j + i]`` beyond the row count as ``-inf``.
    """
    m, p = a.shape[1], b.shape[1]
    if p <= _SHORT:
        t = np.full((p, a.shape[0], width), -np.inf)
        for i in range(min(p, m)):
            w = min(width, m - i)
            t[i, :, :w] = a[:, i : i + w] + b[:, i : i + 1]
        return _lse0(t)
    if m >= width + p - 1:  # every j sees all of b: try the certified linear correlation row by row
        out = np.empty((a.shape[0], width))
        for r in range(a.shape[0]):
            row = _linear_corr(a[r], b[r], width)
            if row is None:
                break
            out[r] = row
        else:
            return out
    a, b = _as_kernel_rows(a), _as_kernel_rows(b)
    return log_direct_rows(a, b, np.empty((a.shape[0], width)), LOGCORR)


#: the spread of ``a``'s log-values up to which :func:`_linear_corr` may drop ``b``'s small entries
_FLAT = 300.0


def _linear_corr(a: np.ndarray, b: np.ndarray, width: int):
    """``log sum_i exp(a[j + i] + b[i])`` for ``j < width`` by a linear-space direct correlation, or None.

    Valid (and used) only when every ``j`` sees every ``b[i]`` (``len(a) >= width + len(b) - 1``) and ``a``
    is finite and flat: ``spread = max(a) - min(a) <= _FLAT`` (the outside messages are, as flat as the
    count potential is). Then every output entry is at least ``exp(max(a) - spread + max(b))``; the
    entries of ``b`` more than ``cut = 700 - spread`` below its maximum add at most
    ``len(b) exp(2 spread - 700) < 2**-60`` of it and are dropped, and every product kept is at least
    ``exp(-700)`` of ``exp(max(a) + max(b))``: no underflow, and NumPy's direct correlation of
    non-negative vectors is accurate relative to every entry.
    """
    am, amin = a.max(), a.min()
    spread = am - amin
    bm = b.max()
    if not (amin > -np.inf and bm > -np.inf and 2 * spread + np.log(b.shape[0]) <= 658.0 and spread <= _FLAT):
        return None
    with np.errstate(under="ignore"):
        eb = np.exp(b - bm)
    eb[b < bm - (700.0 - spread)] = 0.0
    full = np.correlate(np.exp(a - am), eb, mode="valid")[:width]
    return np.log(full) + (am + bm)


def _mix(psi: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``out[s] = log sum_{s'} exp(psi[s, s'] + m[s'])`` for log-values ``psi`` (2, 2) and ``m`` (2, W)."""
    return _lse0(psi.T[:, :, None] + m[:, None, :])


class _UpPass:
    """The upward pass of a model in log space (subtree messages, prefix convolutions, count belief), memoized.

    ``M[v]`` (2, size_v + 1) and ``G[c]`` (2, size_c + 1) are log-values with maximum 0 plus a log
    scale (``S[v]``, ``G[c][1]``); ``pref[v][i]`` is the log convolution of the first ``i`` children's
    ``G`` (2, ...) with its scale; ``comp[i]`` (size_r + 1,) the log count message of component ``i``
    and ``comp_prefix[i]`` the log convolution of the components before it; ``count`` (D + 1,) the
    count marginals.
    """

    __slots__ = ("wleaf", "M", "S", "G", "pref", "size", "comp", "comp_prefix", "logz", "count")


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
    attribute (never stale, since nothing can change). All passes run in log space, so the results
    are exact to rounding for any finite scores up to :data:`MAX_SCORE`, however far apart.

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
        # log weights of y_v = 0 and y_v = 1 (±inf clamp)
        w_leaf = np.zeros((n, 2))
        w_leaf[:, 1] = theta
        w_leaf[np.isposinf(theta), 0] = -np.inf
        w_leaf[np.isposinf(theta), 1] = 0.0
        u.wleaf = w_leaf
        M = [None] * n  # (2, size + 1) log, maximum 0, plus scale S
        S = np.zeros(n)
        G = [None] * n
        pref: list = [None] * n
        size = np.ones(n, dtype=np.int64)
        for v in reversed(self._order):
            kids = self._children[v]
            size[v] = 1 + sum(int(size[c]) for c in kids)
            # prefix convolutions of the children's G, both parent states at once
            acc = np.zeros((2, 1))
            sc = 0.0
            prefixes = [(acc, 0.0)]
            for c in kids:
                g, gs = _lnorm(_mix(self._psi[c], M[c]))  # g[s] = log sum_s' exp(psi[s, s'] + M_c[s'])
                G[c] = (g, S[c] + gs)
                acc, m = _lnorm(_lconv(acc, g))
                sc += m + G[c][1]
                prefixes.append((acc, sc))
            pref[v] = prefixes
            out = np.full((2, size[v] + 1), -np.inf)
            out[0, : size[v]] = w_leaf[v, 0] + acc[0]
            out[1, 1:] = w_leaf[v, 1] + acc[1]
            M[v], s2 = _lnorm(out)
            S[v] = sc + s2
        # merge the components at a virtual root
        comp = [np.logaddexp(M[r][0], M[r][1]) for r in self._roots]
        cp = [(np.zeros(1), 0.0)]
        for r, a in zip(self._roots, comp):
            x, s = _lnorm(_lconv(cp[-1][0][None, :], a[None, :])[0])
            cp.append((x, cp[-1][1] + S[r] + s))
        u.M, u.S, u.G, u.pref, u.size = M, S, G, pref, size
        u.comp, u.comp_prefix = comp, cp
        total, stot = cp[-1]
        lb = total + self._count_potential
        if not np.max(lb) > -np.inf:
            raise ZeroPartitionError(NO_CONFIGURATION + ".")
        u.count, lz = normalize_log(lb)
        u.logz = float(lz + stot)
        self._memo = u
        return u

    def log_partition(self) -> float:
        """``log Z`` of the model."""
        return self._up().logz

    def marginals(self) -> CardinalityMarginals:
        """Marginals, count marginals and ``log Z`` (outward pass in log space, see the module docs).

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
        M, pref = u.M, u.pref
        f = self._count_potential
        # outside messages are only needed up to a scale (P(y_v = s) compares the two states of one
        # message), so each is shifted to maximum 0 and its scale dropped
        roots = self._roots
        suffix = [np.zeros(1)]  # suffix convolutions over components: "all components but r"
        for a in reversed(u.comp):
            suffix.append(_lnorm(_lconv(suffix[-1][None, :], a[None, :])[0])[0])
        suffix = suffix[::-1]
        O = [None] * n  # (2, size + 1) log, maximum 0
        for i, r in enumerate(roots):
            others = _lconv(u.comp_prefix[i][0][None, :], suffix[i + 1][None, :])
            o = _lcorr(f[None, :], others, int(u.size[r]) + 1)[0]
            O[r] = _shift(np.vstack([o, o]))
        lm = np.empty((n, 2))
        for v in self._order:
            kids = self._children[v]
            lm[v] = _logsumexp_rows(M[v] + O[v])  # log masses of y_v = 0, 1 (up to a common scale)
            if not kids:
                continue
            lw = u.wleaf[v]
            # suffix convolutions of the children's G, both parent states at once
            suf = [np.zeros((2, 1))]
            for c in reversed(kids):
                suf.append(_lnorm(_lconv(suf[-1], u.G[c][0]))[0])
            suf = suf[::-1]
            for i, c in enumerate(kids):
                rest = _lconv(pref[v][i][0], suf[i + 1])
                # R_v\c[s]: own weight, shift by s
                r = np.full((2, rest.shape[1] + 1), -np.inf)
                r[0, :-1] = lw[0] + rest[0]
                r[1, 1:] = lw[1] + rest[1]
                h = _lcorr(O[v], r, int(u.size[c]) + 1)
                O[c] = _shift(_mix(self._psi[c].T, h))  # O_c[s'] = log sum_s exp(psi[s, s'] + h[s])
        with np.errstate(invalid="ignore"):
            log_odds = lm[:, 1] - lm[:, 0]
        log_odds[np.isneginf(lm[:, 1])] = -np.inf
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

        Each conditional (the total count, its split among components, a root's state, a child's
        state and count given its parent's) is drawn from its log weights shifted by their own
        maximum, so it is exact however far apart the scores are.

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
        first = np.zeros(size, dtype=np.int64)
        for i in range(len(self._roots) - 1, -1, -1):
            r = self._roots[i]
            _, k_node[r] = _draw_split(rng, remaining, u.comp[i][None, :], None, u.comp_prefix[i][0][None, :], first)
            remaining = remaining - k_node[r]
        state = np.zeros((n, size), dtype=np.int64)
        for r in self._roots:
            state[r] = _draw_log(u.M[r][:, k_node[r]].T, rng)  # (size, 2)
        for v in self._order:
            kids = self._children[v]
            s = state[v]
            rem = k_node[v] - s  # count left for the children
            for i in range(len(kids) - 1, -1, -1):
                c = kids[i]
                # (state, count) of c given the count left for children 0..i, in log space
                state[c], k_node[c] = _draw_split(rng, rem, u.M[c], self._psi[c][s], u.pref[v][i][0], s)
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


def _shift(x: np.ndarray) -> np.ndarray:
    """Log-values ``x`` shifted to maximum 0 (left as they are when every entry is ``-inf``)."""
    m = x.max()
    return x - m if m > -np.inf else x


def _logsumexp_rows(x: np.ndarray) -> np.ndarray:
    """``log sum_k exp(x[r, k])`` per row of log-values whose overall maximum is finite and at most ~0."""
    m = x.max()
    m = m if m > -np.inf else 0.0
    with np.errstate(divide="ignore"):
        return np.log(np.exp(x - m).sum(axis=1)) + m


def _draw_log(lw: np.ndarray, rng) -> np.ndarray:
    """One categorical draw per row of log weights ``lw`` (S, W); every row has a finite entry.

    Each row is shifted by its own maximum before ``exp``, so an entry is lost only if it is below
    ~e^-745 of its row's largest, i.e. if its probability is zero in float64.
    """
    m = lw.max(axis=1, keepdims=True)
    w = np.exp(lw - np.where(m > -np.inf, m, 0.0))
    cdf = np.cumsum(w, axis=1)
    x = rng.random(w.shape[0]) * cdf[:, -1]
    pick = (cdf <= x[:, None]).sum(axis=1)
    # ``x`` can round up to the row's total: fall back to the last entry of positive weight
    last = w.shape[1] - 1 - np.argmax(w[:, ::-1] > 0, axis=1)
    return np.minimum(pick, last)


def _draw_split(rng, rem: np.ndarray, a: np.ndarray, extra, p: np.ndarray, psel: np.ndarray):
    """Draw ``(row, j)`` per sample ``t`` with log weight ``extra[t, row] + a[row, j] + p[psel[t], rem[t] - j]``.

    Parameters
    ----------
    rem : ndarray of shape (S,), int
        The count to split per sample.
    a : ndarray of shape (R, W)
        Log weights of the part drawn (rows: its state), common to all samples.
    extra : ndarray of shape (S, R) or None
        Per-sample log weights of the rows.
    p : ndarray of shape (Q, L)
        Log weights of the rest's count; sample ``t`` uses row ``psel[t]``.

    Returns
    -------
    row, j : ndarray of shape (S,), int
        Only the ``min(W, L)`` values of ``j`` with ``0 <= rem - j < L`` can have positive weight, so only
        those are looked at (a path costs O(D) per node, not O(D^2)).
    """
    r_, w_ = a.shape
    lp = p.shape[1]
    width = min(w_, lp)
    j0 = np.maximum(rem - lp + 1, 0)
    j = j0[:, None] + np.arange(width)[None, :]  # (S, width)
    ok = j <= np.minimum(rem, w_ - 1)[:, None]
    pj = p[psel[:, None], np.clip(rem[:, None] - j, 0, lp - 1)]  # (S, width)
    lw = a[:, np.clip(j, 0, w_ - 1)].transpose(1, 0, 2) + pj[:, None, :]  # (S, R, width)
    if extra is not None:
        lw = lw + extra[:, :, None]
    lw = np.where(ok[:, None, :], lw, -np.inf).reshape(rem.shape[0], r_ * width)
    pick = _draw_log(lw, rng)
    return pick // width, j0 + pick % width
