"""Recursive cardinality models (Sec. 4 of Tarlow et al. 2012): nested subsets, each with a count potential.

``p(y) ∝ exp(unary . y + sum_i count_potentials[i](sum_{d in S_i} y_d))`` for a *nested* family of
subsets (any two are disjoint or one contains the other). The binary tree of count variables is
aligned with the subsets (Sec. 5.2): every subset is an internal node whose potential is a unary
potential on its count, and sum-product (or max-product) runs on that tree.

The structure (subsets, count potentials and the tree built from them) is checked and built once
into a frozen :class:`tractable._count_tree.CountTree`, the count tree of the model layer that
:class:`tractable.factorgraph.RecursiveCardinalityFactor` keeps too; a model is that structure plus
the unary scores it is evaluated with, and :meth:`RecursiveCardinalityModel.with_unary` evaluates the
same structure with other unary scores without rebuilding it.
"""

from __future__ import annotations

import time

import numpy as np

from .._count_tree import CountTree, build_structure, validate_structure
from .._errors import ZeroPartitionError
from .._logspace import logsumexp, normalize_log
from .._random import streams
from .._results import OPTIMAL, MAPResult, frozen_array, stop_message
from .._validate import as_binary_assignment, as_float_array, check_int, check_magnitude, check_rng
from ._huge import HUGE
from ._kernels import sample_descent
from ._result import CardinalityMarginals, exact_result
from ._tree import (
    NO_CONFIGURATION,
    backtrack_max,
    flat_messages,
    internal_order,
    log_rows,
    node_log_belief,
    sample_log,
    sum_passes,
    upward_max,
)
from .convolution_tree import _validate_options

__all__ = ["RecursiveCardinalityModel"]


#: finite scores larger than this in magnitude are refused: a score near 1e300 swallows every O(1) weight (the
#: multiplicities of the counts) in floating point, in log space too. Below it any scores give exact answers:
#: the linear passes certify their beliefs, and passes they cannot certify are redone in log space
MAX_SCORE = HUGE
_WHY = "larger scores swallow the counts' multiplicities in float64; use ±inf to clamp a variable or forbid a count"


def _validate_unary(unary, n: int) -> np.ndarray:
    theta = np.zeros(n) if unary is None else as_float_array(unary, "unary", ndim=1, allow_posinf=True)
    if theta.shape != (n,):
        raise ValueError(f"`unary` must have shape ({n},); got {theta.shape}.")
    check_magnitude(theta, "unary", MAX_SCORE, _WHY)
    theta.flags.writeable = False
    return theta


def _leaf_log_weights(structure: CountTree, unary: np.ndarray) -> np.ndarray:
    """(n, 2) log weights of y_d = 0 / 1: the unary scores (``+inf`` clamps on) plus the singleton
    subsets' potentials."""
    logw = np.zeros((structure.n_variables, 2))
    logw[:, 1] = unary
    logw[np.isposinf(unary)] = [-np.inf, 0.0]
    logw += structure.leaf_potentials
    if np.any(np.all(np.isneginf(logw), axis=1)):
        raise ZeroPartitionError(NO_CONFIGURATION + ".")
    logw.flags.writeable = False
    return logw


class RecursiveCardinalityModel:
    """A recursive cardinality model over ``n_variables`` binary variables.

    Parameters
    ----------
    n_variables : int
        Number of binary variables D.
    subsets : sequence of sequences of int
        The nested subsets ``S_i`` (variable indices in ``0 .. D-1``). Any two must be disjoint
        or one must contain the other. Identical subsets are allowed (their potentials add).
    count_potentials : sequence of array_like
        ``count_potentials[i]`` has shape ``(len(subsets[i]) + 1,)``: the log-potential of the
        count of ``S_i`` (``-inf`` allowed).
    unary : array_like of shape (D,), optional
        Log-potential of ``y_d = 1`` (``±inf`` clamp the variable). Default 0.
    method : {"auto", "fft", "direct"}
        Convolution kernel (``tractable.cardinality.METHODS``); ``"auto"`` convolves directly up
        to ``crossover`` entries.
    crossover : int, optional
        Message length up to which ``"auto"`` convolves directly (default 48). Only for
        ``method="auto"``.

    Raises
    ------
    ValueError
        For non-nested subsets (naming the two offending subsets), indices out of range,
        repeated indices, a potential of the wrong length, NaN or ``+inf``, or finite scores larger
        than :data:`MAX_SCORE` (2**20) in magnitude.
    ZeroPartitionError
        A model in which no configuration has non-zero probability (a ``ValueError`` too).

    Notes
    -----
    The subsets, their count potentials and the count tree aligned with them are built once into
    a frozen structure; :meth:`with_unary` gives a model with other unary scores on the same
    structure, without rebuilding it. A model is immutable; its sum-product passes are computed
    on first use and memoized in a private attribute (never stale, since nothing can change).

    Time O(sum over internal nodes of the message length times its log) for FFT messages:
    O(D log^2 D) when the subsets allow a balanced tree, O(D^2) in the worst case. Messages are rows
    normalized to a maximum of 1 with a log scale, and carry a bound on each entry's error (FFT
    rounding and noise floor, underflow), amplified wherever a count potential favours a small entry;
    every belief (leaf marginals, count marginals, ``log Z``) is certified to 1e-8 of its mass
    (``tractable.cardinality._tree.BELIEF_TOL``; in practice ~1e-13). Where the bounds cannot certify
    it (scores spanning hundreds, count potentials that fight the unary scores), both passes are
    redone in log space with direct log-sum-exp convolutions: exact relative to every entry at any
    magnitude below :data:`MAX_SCORE`, at O(D^2) cost.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.cardinality import RecursiveCardinalityModel
    >>> # two groups of two variables, at most one on in each group
    >>> m = RecursiveCardinalityModel(4, [[0, 1], [2, 3]], [[0, 0, -np.inf], [0, 0, -np.inf]])
    >>> round(float(np.exp(m.log_partition())), 6)  # (1 + 2) ** 2 configurations
    9.0
    >>> m2 = m.with_unary([5.0, 0.0, 0.0, 0.0])  # same subsets and tree, other unary scores
    >>> m2.marginals().p_on.round(3)
    array([0.987, 0.007, 0.333, 0.333])
    """

    def __init__(
        self, n_variables, subsets, count_potentials, unary=None, *, method: str = "auto", crossover: int | None = None
    ):
        crossover = _validate_options(method, crossover)
        n, subs, pots = validate_structure(n_variables, subsets, count_potentials)
        for i, pot in enumerate(pots):
            check_magnitude(np.asarray(pot, dtype=np.float64), f"count_potentials[{i}]", MAX_SCORE, _WHY)
        structure = build_structure(n, subs, pots)
        self._init(structure, _validate_unary(unary, n), method, crossover)

    def _init(self, structure: CountTree, unary: np.ndarray, method: str, crossover: int) -> None:
        self._structure = structure
        self._unary = unary
        self._method = method
        self._crossover = crossover
        self._leaf_logw = _leaf_log_weights(structure, unary)
        self._memo = None  # (upward, downward) messages, computed on first use

    def with_unary(self, unary) -> RecursiveCardinalityModel:
        """The same model (subsets, count potentials, built tree, method) with other unary scores.

        Parameters
        ----------
        unary : array_like of shape (D,)
            Log-potential of ``y_d = 1`` (``±inf`` clamp the variable).

        Returns
        -------
        RecursiveCardinalityModel
            A new model that shares this one's structure (nothing is rebuilt).
        """
        model = object.__new__(type(self))
        model._init(self._structure, _validate_unary(unary, self.n_variables), self._method, self._crossover)
        return model

    # ------------------------------------------------------------------ read-only attributes
    @property
    def n_variables(self) -> int:
        """Number of binary variables D."""
        return self._structure.n_variables

    @property
    def subsets(self) -> tuple:
        """The subsets as sorted read-only index arrays, in the order given."""
        return self._structure.subsets

    @property
    def count_potentials(self) -> tuple:
        """The count potentials (read-only arrays), in the order of :attr:`subsets`."""
        return self._structure.count_potentials

    @property
    def unary(self) -> np.ndarray:
        """The unary scores, shape (D,), read-only."""
        return self._unary

    @property
    def method(self) -> str:
        """The convolution method."""
        return self._method

    @property
    def crossover(self) -> int:
        """Message length up to which ``method="auto"`` convolves directly."""
        return self._crossover

    # ------------------------------------------------------------------ inference
    def _passes(self):
        if self._memo is None:
            t = self._structure.tree
            pots = self._structure.potentials_by_height
            self._memo = sum_passes(t, self._leaf_logw, pots, method=self._method, crossover=self._crossover)
        return self._memo

    def log_partition(self) -> float:
        """``log Z`` of the model."""
        up, out = self._passes()
        return self._logz(up, out)

    def _logz(self, up, out) -> float:
        t = self._structure.tree
        return float(logsumexp(node_log_belief(t, up, out, t.root)))

    def _belief(self, v: int) -> np.ndarray:
        up, out = self._passes()
        return normalize_log(node_log_belief(self._structure.tree, up, out, v))[0]

    def marginals(self) -> CardinalityMarginals:
        """Variable marginals, marginals of the total count, and ``log Z``.

        Returns
        -------
        CardinalityMarginals
            ``marginals`` (D, 2) = ``[P(y_d = 0), P(y_d = 1)]`` (``p_on`` = ``P(y_d = 1)``),
            ``count_marginals`` (D + 1,) of ``sum_d y_d``, ``log_partition``; ``method`` is the
            model's convolution method, ``status`` ``"optimal"``.
        """
        t0 = time.perf_counter()
        up, out = self._passes()
        lo = log_rows(out, 0) + self._leaf_logw
        off = np.isneginf(lo[:, 1])
        with np.errstate(invalid="ignore"):
            log_odds = lo[:, 1] - lo[:, 0]
        log_odds[off] = -np.inf
        counts = self._belief(self._structure.tree.root)
        return exact_result(log_odds, counts, self._logz(up, out), t0, self._method)

    def subset_count_marginals(self) -> tuple:
        """``P(sum_{d in S_i} y_d = k)`` for every subset, in the order given.

        Returns
        -------
        tuple of ndarray
            Entry i has shape ``(len(subsets[i]) + 1,)`` (read-only).
        """
        res = []
        n = self.n_variables
        single = None
        for i, v in enumerate(self._structure.node_of_subset):
            if v < n:
                if single is None:
                    single = self.marginals().marginals
                res.append(frozen_array(single[v]))
            else:
                res.append(frozen_array(self._belief(v)[: self.subsets[i].size + 1]))
        return tuple(res)

    def sample(self, *, size: int = 1, rng=None) -> np.ndarray:
        """Exact joint samples (Sec. 5.3): root count, then top-down splits.

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
        up, _ = self._passes()
        t = self._structure.tree
        if up.log:
            return sample_log(t, up, size, rng)
        h, r = t.height[t.root], t.row[t.root]
        root = up.vec[h][r, : t.size[t.root] + 1]
        cdf = np.cumsum(root)
        counts = np.searchsorted(cdf, rng.random(size) * cdf[-1], side="right")
        counts = np.minimum(counts, t.size[t.root]).astype(np.int64)
        flat, offset, length = flat_messages(t, up)
        state = streams(rng)
        if t.n_nodes == 1:
            return counts.astype(np.uint8)[:, None]
        return sample_descent(counts, internal_order(t), t.left, t.right, flat, offset, length, self.n_variables, state)

    def score(self, y) -> float:
        """``unary . y + sum_i count_potentials[i](count_i(y))`` of an assignment (the unnormalized
        log-probability), ``y`` of shape (D,) with entries 0/1."""
        y = as_binary_assignment(y, "y", self.n_variables)
        with np.errstate(invalid="ignore"):
            s = float(np.sum(np.where(y == 1, self._unary, 0.0)))
        for sub, f in zip(self.subsets, self.count_potentials):
            s += float(f[int(y[sub].sum())])
        return s

    def map_assignment(self) -> MAPResult:
        """Exact MAP by max-product on the count tree (max-plus convolutions), O(D^2) worst case.

        Returns
        -------
        MAPResult
            ``assignment`` (D,) int64, ``score``, ``time``, ``method`` ``"max_product"``,
            ``status`` ``"optimal"``.
        """
        t0 = time.perf_counter()
        t = self._structure.tree
        msgs = upward_max(t, self._leaf_logw, self._structure.potentials_by_height)
        h, r = t.height[t.root], t.row[t.root]
        root = msgs[h][r, : t.size[t.root] + 1]
        k = int(np.argmax(root))
        if not root[k] > -np.inf:
            raise ZeroPartitionError(NO_CONFIGURATION + ".")
        y = backtrack_max(t, msgs, k) if t.n_nodes > 1 else np.array([k])
        y = y.astype(np.int64)
        return MAPResult(
            assignment=frozen_array(y),
            score=self.score(y),
            time=time.perf_counter() - t0,
            method="max_product",
            message=stop_message(OPTIMAL, "max_product", 0),
        )
