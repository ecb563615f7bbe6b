"""Recursive cardinality models (Sec. 4 of Tarlow et al. 2012): nested subsets, each with a count potential.

``p(y) ∝ exp(theta . y + sum_i f_i(sum_{d in S_i} y_d))`` for a *nested* family of subsets
(any two are disjoint or one contains the other). The binary tree of count variables is aligned
with the subsets (Sec. 5.2): every subset is an internal node whose potential is a unary
potential on its count, and sum-product (or max-product) runs on that tree.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.special import expit

from .._results import MAPResult, frozen_array
from .._validate import as_float_array, as_index_array, check_choice, check_int, check_rng
from ._convolve import DEFAULT_CROSSOVER
from ._kernels import sample_descent
from ._result import CardinalityMarginals
from ._tree import (
    NO_CONFIGURATION,
    backtrack_max,
    downward,
    finish_tree,
    flat_messages,
    internal_order,
    upward,
    upward_max,
)

__all__ = ["RecursiveCardinalityModel"]


class RecursiveCardinalityModel:
    """A recursive cardinality model over ``n_variables`` binary variables.

    Parameters
    ----------
    n_variables : int
        Number of binary variables D.
    subsets : sequence of sequences of int
        The nested subsets ``S_i`` (variable indices in ``0 .. D-1``). Any two must be disjoint
        or one must contain the other. Identical subsets are allowed (their potentials add).
    potentials : sequence of array_like
        ``potentials[i]`` has shape ``(len(subsets[i]) + 1,)``: the log-potential of the count of
        ``S_i`` (``-inf`` allowed).
    unary : array_like of shape (D,), optional
        Log-potential ``theta`` of ``y_d = 1`` (``±inf`` clamp the variable). Default 0.
    method : {"auto", "fft", "direct"}
        Convolution kernel; ``"auto"`` convolves directly up to ``crossover`` entries.
    crossover : int
        Message length up to which ``"auto"`` convolves directly.

    Raises
    ------
    ValueError
        For non-nested subsets (naming the two offending subsets), indices out of range,
        repeated indices, a potential of the wrong length, NaN or ``+inf``, or a model in which
        no configuration has non-zero probability.

    Notes
    -----
    Time O(sum over internal nodes of the message length times its log) for FFT messages:
    O(D log^2 D) when the subsets allow a balanced tree, O(D^2) in the worst case. Messages are
    normalized with a log scale; with FFT convolutions every message is accurate relative to its
    largest entry (``method="direct"`` is accurate relative to every entry, at O(D^2) cost).

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.cardinality import RecursiveCardinalityModel
    >>> # two groups of two variables, at most one on in each group
    >>> m = RecursiveCardinalityModel(4, [[0, 1], [2, 3]], [[0, 0, -np.inf], [0, 0, -np.inf]])
    >>> round(float(np.exp(m.log_partition())), 6)  # (1 + 2) ** 2 configurations
    9.0
    """

    def __init__(self, n_variables, subsets, potentials, unary=None, *, method: str = "auto",
                 crossover: int = DEFAULT_CROSSOVER):
        n = check_int(n_variables, "n_variables", minimum=1)
        self.n_variables = n
        self.method = check_choice(method, "method", ("auto", "fft", "direct"))
        self.crossover = check_int(crossover, "crossover", minimum=1)
        if isinstance(subsets, np.ndarray) and subsets.ndim == 2:
            subsets = list(subsets)
        try:
            subsets = list(subsets)
            potentials = list(potentials)
        except TypeError as err:
            raise TypeError("`subsets` and `potentials` must be sequences.") from err
        if len(subsets) != len(potentials):
            raise ValueError(
                f"`potentials` must have one entry per subset ({len(subsets)}); got {len(potentials)}."
            )
        subs = []
        pots = []
        for i, (s, f) in enumerate(zip(subsets, potentials)):
            idx = as_index_array(s, f"subsets[{i}]", size=n)
            if idx.size == 0:
                raise ValueError(f"`subsets[{i}]` must not be empty.")
            if np.unique(idx).size != idx.size:
                raise ValueError(f"`subsets[{i}]` must not repeat a variable; got {idx.tolist()}.")
            f = as_float_array(f, f"potentials[{i}]", ndim=1)
            if f.shape[0] != idx.size + 1:
                raise ValueError(
                    f"`potentials[{i}]` must have len(subsets[{i}]) + 1 = {idx.size + 1} entries; "
                    f"got {f.shape[0]}."
                )
            if not np.any(f > -np.inf):
                raise ValueError(f"`potentials[{i}]` is -inf at every count: {NO_CONFIGURATION}.")
            subs.append(np.sort(idx))
            f.flags.writeable = False
            pots.append(f)
        theta = np.zeros(n) if unary is None else as_float_array(unary, "unary", ndim=1, allow_posinf=True)
        if theta.shape != (n,):
            raise ValueError(f"`unary` must have shape ({n},); got {theta.shape}.")
        theta.flags.writeable = False
        self.subsets = subs
        self.potentials = pots
        self.unary = theta
        self._build()

    # ------------------------------------------------------------------ structure
    def _build(self) -> None:
        n = self.n_variables
        subs = self.subsets
        order = sorted(range(len(subs)), key=lambda i: -subs[i].size)
        owner = np.full(n, -1)
        parent = {}
        canonical = {}  # identical subsets map to the first one
        for i in order:
            s = subs[i]
            own = np.unique(owner[s])
            if own.size == 1 and own[0] >= 0 and subs[own[0]].size == s.size:
                canonical[i] = canonical.get(int(own[0]), int(own[0]))
                continue
            if own.size > 1:
                for a in own:
                    if a >= 0 and not np.isin(s, subs[a]).all():
                        a = canonical.get(int(a), int(a))
                        raise ValueError(
                            f"`subsets` must be nested (any two disjoint or one inside the other); "
                            f"subsets[{min(a, i)}] and subsets[{max(a, i)}] overlap without one "
                            f"containing the other."
                        )
            canonical[i] = i
            parent[i] = int(own[0])
            owner[s] = i
        reps = [i for i in order if canonical[i] == i]
        children = {i: [] for i in reps}
        children[-1] = []
        for i in reps:
            children[parent[i]].append(("s", i))
        for d in range(n):
            children[int(owner[d])].append(("v", d))
        # bottom-up: smallest subsets first, then the top group
        node_of = {}
        lefts: list = []
        rights: list = []
        next_id = [n]

        def combine(items):
            ids = [node_of[x[1]] if x[0] == "s" else x[1] for x in items]
            while len(ids) > 1:
                new = []
                for k in range(0, len(ids) - 1, 2):
                    lefts.append(ids[k])
                    rights.append(ids[k + 1])
                    new.append(next_id[0])
                    next_id[0] += 1
                if len(ids) % 2:
                    new.append(ids[-1])
                ids = new
            return ids[0]

        for i in reversed(reps):
            v = combine(children[i])
            node_of[i] = v
        pot_sum = {}
        for i in range(len(subs)):
            v = node_of[canonical[i]]
            pot_sum[v] = pot_sum.get(v, 0.0) + self.potentials[i]
        root = combine(children[-1])
        self._node_of_subset = [node_of[canonical[i]] for i in range(len(subs))]
        tree = finish_tree(n, [np.array(lefts, dtype=np.int64)], [np.array(rights, dtype=np.int64)])
        assert tree.root == root or n == 1
        self._tree = tree
        # leaf potentials fold into the leaf log weights; the others go per height
        logw = np.zeros((n, 2))
        logw[:, 1] = self.unary
        logw[np.isposinf(self.unary)] = [-np.inf, 0.0]
        pots_h: dict = {}
        for v, f in pot_sum.items():
            if v < n:
                logw[v] += f
                continue
            h = int(tree.height[v])
            if h not in pots_h:
                pots_h[h] = np.zeros((tree.levels[h].shape[0], tree.widths[h]))
            pots_h[h][tree.row[v], :f.shape[0]] = f
        if np.any(np.all(np.isneginf(logw), axis=1)):
            raise ValueError(NO_CONFIGURATION + ".")
        self._leaf_logw = logw
        self._pots = pots_h
        self._cache = None

    def _passes(self):
        if self._cache is None:
            up = upward(self._tree, self._leaf_logw, self._pots, method=self.method, crossover=self.crossover)
            out = downward(self._tree, up, None, self._pots, method=self.method, crossover=self.crossover)
            self._cache = (up, out)
        return self._cache

    # ------------------------------------------------------------------ inference
    def log_partition(self) -> float:
        """``log Z`` of the model."""
        up, out = self._passes()
        return self._logz(up, out)

    def _logz(self, up, out) -> float:
        t = self._tree
        h, r = t.height[t.root], t.row[t.root]
        return float(np.log(np.sum(up.vec[h][r] * out.vec[h][r])) + up.scale[h][r] + out.scale[h][r])

    def _belief(self, v: int) -> np.ndarray:
        up, out = self._passes()
        t = self._tree
        h, r = t.height[v], t.row[v]
        b = up.vec[h][r, :t.size[v] + 1] * out.vec[h][r, :t.size[v] + 1]
        return b / b.sum()

    def marginals(self) -> CardinalityMarginals:
        """Variable marginals ``P(y_d = 1)``, marginals of the total count, and ``log Z``.

        Returns
        -------
        CardinalityMarginals
            ``marginals`` (D,), ``count_marginals`` (D + 1,) of ``sum_d y_d``, ``log_partition``.
        """
        t0 = time.perf_counter()
        up, out = self._passes()
        with np.errstate(divide="ignore"):
            lo = np.log(out.vec[0]) + out.scale[0][:, None] + self._leaf_logw
        mu = expit(lo[:, 1] - lo[:, 0])
        mu = np.where(np.isneginf(lo[:, 1]), 0.0, mu)
        counts = self._belief(self._tree.root)
        return CardinalityMarginals(
            marginals=frozen_array(mu),
            count_marginals=frozen_array(counts),
            log_partition=self._logz(up, out),
            time=time.perf_counter() - t0,
            method=f"recursive_cardinality[{self.method}]",
        )

    def subset_count_marginals(self) -> list:
        """``P(sum_{d in S_i} y_d = k)`` for every subset, in the order given.

        Returns
        -------
        list of ndarray
            Entry i has shape ``(len(subsets[i]) + 1,)``.
        """
        res = []
        for i, v in enumerate(self._node_of_subset):
            if v < self.n_variables:
                mu = self.marginals().marginals[v]
                res.append(frozen_array([1.0 - mu, mu]))
            else:
                res.append(frozen_array(self._belief(v)[: self.subsets[i].size + 1]))
        return res

    def sample(self, size: int = 1, rng=None) -> np.ndarray:
        """Exact joint samples (Sec. 5.3): root count, then top-down splits.

        Returns
        -------
        ndarray of shape (size, D), uint8
        """
        size = check_int(size, "size", minimum=0)
        rng = check_rng(rng)
        up, _ = self._passes()
        t = self._tree
        h, r = t.height[t.root], t.row[t.root]
        root = up.vec[h][r, :t.size[t.root] + 1]
        cdf = np.cumsum(root)
        counts = np.searchsorted(cdf, rng.random(size) * cdf[-1], side="right")
        counts = np.minimum(counts, t.size[t.root]).astype(np.int64)
        flat, offset, length = flat_messages(t, up)
        state = rng.integers(1, 2**63, size=2, dtype=np.uint64)
        if t.n_nodes == 1:
            return counts.astype(np.uint8)[:, None]
        return sample_descent(counts, internal_order(t), t.left, t.right, flat, offset, length,
                              self.n_variables, state)

    def score(self, y) -> float:
        """``theta . y + sum_i f_i(count_i(y))`` of an assignment (the unnormalized log-probability)."""
        y = np.asarray(y, dtype=np.int64)
        with np.errstate(invalid="ignore"):
            s = float(np.sum(np.where(y == 1, self.unary, 0.0)))
        for sub, f in zip(self.subsets, self.potentials):
            s += float(f[int(y[sub].sum())])
        return s

    def map_assignment(self) -> MAPResult:
        """Exact MAP by max-product on the count tree (max-plus convolutions), O(D^2) worst case."""
        t0 = time.perf_counter()
        msgs = upward_max(self._tree, self._leaf_logw, self._pots)
        t = self._tree
        h, r = t.height[t.root], t.row[t.root]
        root = msgs[h][r, :t.size[t.root] + 1]
        k = int(np.argmax(root))
        if not root[k] > -np.inf:
            raise ValueError(NO_CONFIGURATION + ".")
        y = backtrack_max(t, msgs, k) if t.n_nodes > 1 else np.array([k])
        y = y.astype(np.int64)
        return MAPResult(assignment=frozen_array(y), score=self.score(y), time=time.perf_counter() - t0,
                         method="max_product")
