"""Baselines of the generalized bipartite matching experiment (Tarlow et al. 2012, Sec. 6.2, Fig. 4).

* :func:`node_marginals`: the naive approximation, ``sigmoid(unary)`` (the count constraints ignored).
* :func:`lp_map`: the exact MAP by an integer program (HiGHS through ``scipy.optimize.milp``), its
  0/1 assignment taken as "marginals", as the paper's LP baseline.
* :func:`enumerate_marginals`: the exact marginals of small grids by enumeration (ground truth).
* :func:`block_gibbs`: the paper's block Gibbs sampler (the ground truth of medium grids). Each step
  picks rows ``i1 != i2`` and columns ``j1 != j2`` at random and resamples the four variables
  ``y[i1, j1], y[i1, j2], y[i2, j1], y[i2, j2]`` from their exact conditional given all other
  variables: the 16 block configurations weighted by ``exp(unary . block)``, those that would put a
  row count of ``i1``, ``i2`` or a column count of ``j1``, ``j2`` outside its range having weight 0.
  Started from a feasible point (the LP solution), every state stays feasible.

  Ergodicity is not guaranteed: the paper notes the sampler is not ergodic for disjoint count sets
  (e.g. "3 or 10"); this implementation only supports ranges ``lo..hi``, for which one 2x2 block can
  move a count by one or swap a 2x2 permutation pattern, which connects the feasible set in the
  cases we checked (the tests compare with enumeration), but no proof is claimed. Resampling only the
  configurations that keep the block's row and column sums (2x2 "swaps") would keep every row and
  column count fixed at the initial state's and is *not* ergodic for ranges wider than one count; it
  is not what this sampler does.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.special import expit

from tractable._numba import njit
from tractable._random import streams, uniform
from tractable._validate import check_int, check_rng
from tractable.datasets.bipartite_matching import BipartiteMatching

__all__ = ["GibbsResult", "LPSolution", "block_gibbs", "enumerate_marginals", "lp_map", "node_marginals"]


def _as_marginals(p_on: np.ndarray) -> np.ndarray:
    p_on = np.asarray(p_on, dtype=np.float64).ravel()
    return np.stack([1.0 - p_on, p_on], axis=1)


def node_marginals(problem: BipartiteMatching) -> np.ndarray:
    """``sigmoid(unary)`` per variable, the count constraints ignored; shape ``(n_rows * n_cols, 2)``."""
    u = problem.unary.ravel()
    return _as_marginals(expit(u))


@dataclass(frozen=True)
class LPSolution:
    """The exact MAP of :func:`lp_map`.

    Attributes
    ----------
    assignment : ndarray of int64, shape (n_rows * n_cols,)
        The 0/1 maximizer (row-major, as the factor graph's variables).
    marginals : ndarray of shape (n_rows * n_cols, 2)
        The assignment as 0/1 "marginals" (the paper's LP baseline).
    score : float
        ``sum(unary * y)``.
    time : float
        Wall-clock seconds of the solve (model building included).
    status : str
        scipy's message.
    """

    assignment: np.ndarray
    marginals: np.ndarray
    score: float
    time: float
    status: str


def lp_map(problem: BipartiteMatching) -> LPSolution:
    """Exact MAP by ``scipy.optimize.milp`` (HiGHS): maximize ``sum unary * y`` over binary ``y`` whose row and
    column sums lie in their ranges. (The constraint matrix is a bipartite incidence matrix, totally unimodular,
    so the LP relaxation is already integral; the solver is told the variables are binary all the same.)"""
    t0 = time.perf_counter()
    n_rows, n_cols = problem.unary.shape
    n = n_rows * n_cols
    index = np.arange(n).reshape(n_rows, n_cols)
    rows = np.concatenate([np.repeat(np.arange(n_rows), n_cols), n_rows + np.repeat(np.arange(n_cols), n_rows)])
    cols = np.concatenate([index.ravel(), index.T.ravel()])
    a = sparse.csr_array((np.ones(2 * n), (rows, cols)), shape=(n_rows + n_cols, n))
    (rlo, rhi), (clo, chi) = problem.row_counts, problem.col_counts
    lb = np.concatenate([np.full(n_rows, rlo), np.full(n_cols, clo)]).astype(float)
    ub = np.concatenate([np.full(n_rows, rhi), np.full(n_cols, chi)]).astype(float)
    res = milp(
        -problem.unary.ravel(),
        constraints=LinearConstraint(a, lb, ub),
        integrality=np.ones(n),
        bounds=Bounds(0.0, 1.0),
    )
    if res.x is None:
        raise RuntimeError(f"HiGHS found no solution: {res.message}")
    y = np.round(res.x).astype(np.int64)
    elapsed = time.perf_counter() - t0
    return LPSolution(y, _as_marginals(y), float(problem.unary.ravel() @ y), elapsed, str(res.message))


def enumerate_marginals(problem: BipartiteMatching) -> np.ndarray:
    """Exact marginals ``(n_rows * n_cols, 2)`` by enumerating all ``2**(n_rows * n_cols)`` assignments.

    Uses :func:`tractable.exact.enumerate_marginals` on :meth:`~BipartiteMatching.factor_graph` (its
    cardinality factors expand to dense tables of ``2**D`` entries); grids of up to ~20 variables.
    """
    from tractable.exact import enumerate_marginals as _enumerate

    return np.asarray(_enumerate(problem.factor_graph()).marginals)


# ---------------------------------------------------------------- block Gibbs


@dataclass(frozen=True)
class GibbsResult:
    """Output of :func:`block_gibbs`.

    Attributes
    ----------
    marginals : ndarray of shape (n_rows * n_cols, 2)
        Running average of the states after each kept sweep.
    stderr : ndarray of shape (n_rows * n_cols,)
        Monte-Carlo standard error of ``P(y = 1)`` by batch means (``n_batches`` contiguous batches of
        sweeps; valid when a batch is much longer than the chain's autocorrelation time).
    final : ndarray of int64, shape (n_rows * n_cols,)
        The last state.
    trace : ndarray of int8, shape (n_sweeps, n_rows * n_cols) or (0, n_rows * n_cols)
        The state after every sweep (burn-in included), when asked for.
    n_sweeps, burn_in, blocks_per_sweep : int
    n_moves : int
        Block updates that changed the state.
    time : float
        Wall-clock seconds of the sweeps (compilation excluded once warm).
    """

    marginals: np.ndarray
    stderr: np.ndarray
    final: np.ndarray
    trace: np.ndarray
    n_sweeps: int
    burn_in: int
    blocks_per_sweep: int
    n_moves: int
    time: float


@njit
def _gibbs_sweeps(unary, y, rlo, rhi, clo, chi, n_sweeps, blocks_per_sweep, burn_in, state, batch_sum, trace):
    """Run ``n_sweeps`` sweeps of random 2x2 block updates on ``y`` (int8, updated in place).

    After sweep ``s >= burn_in`` the state is added to ``batch_sum[b]`` for its batch ``b``; with a
    non-empty ``trace`` the state after every sweep is stored there. Returns the number of moves.
    """
    n_rows, n_cols = y.shape
    n_batches = batch_sum.shape[0]
    n_kept = n_sweeps - burn_in
    row_sum = np.zeros(n_rows, np.int64)
    col_sum = np.zeros(n_cols, np.int64)
    for i in range(n_rows):
        for j in range(n_cols):
            row_sum[i] += y[i, j]
            col_sum[j] += y[i, j]
    logw = np.empty(16)
    n_moves = 0
    for s in range(n_sweeps):
        for _ in range(blocks_per_sweep):
            i1 = min(int(uniform(state) * n_rows), n_rows - 1)
            i2 = min(int(uniform(state) * (n_rows - 1)), n_rows - 2)
            if i2 >= i1:
                i2 += 1
            j1 = min(int(uniform(state) * n_cols), n_cols - 1)
            j2 = min(int(uniform(state) * (n_cols - 1)), n_cols - 2)
            if j2 >= j1:
                j2 += 1
            a = y[i1, j1]
            b = y[i1, j2]
            c = y[i2, j1]
            d = y[i2, j2]
            # counts of the two rows and two columns without the block
            r1 = row_sum[i1] - a - b
            r2 = row_sum[i2] - c - d
            c1 = col_sum[j1] - a - c
            c2 = col_sum[j2] - b - d
            best = -np.inf
            for k in range(16):
                ka = k & 1
                kb = (k >> 1) & 1
                kc = (k >> 2) & 1
                kd = (k >> 3) & 1
                n1 = r1 + ka + kb
                n2 = r2 + kc + kd
                m1 = c1 + ka + kc
                m2 = c2 + kb + kd
                if n1 < rlo or n1 > rhi or n2 < rlo or n2 > rhi or m1 < clo or m1 > chi or m2 < clo or m2 > chi:
                    logw[k] = -np.inf
                else:
                    w = 0.0
                    if ka:
                        w += unary[i1, j1]
                    if kb:
                        w += unary[i1, j2]
                    if kc:
                        w += unary[i2, j1]
                    if kd:
                        w += unary[i2, j2]
                    logw[k] = w
                    if w > best:
                        best = w
            total = 0.0
            for k in range(16):
                logw[k] = math.exp(logw[k] - best)  # exp(-inf) = 0
                total += logw[k]
            t = uniform(state) * total
            new = 15
            acc = 0.0
            for k in range(16):
                acc += logw[k]
                if t < acc:
                    new = k
                    break
            while logw[new] == 0.0:  # rounding at the top end: take the last allowed configuration
                new -= 1
            ka = new & 1
            kb = (new >> 1) & 1
            kc = (new >> 2) & 1
            kd = (new >> 3) & 1
            if ka != a or kb != b or kc != c or kd != d:
                n_moves += 1
                y[i1, j1] = ka
                y[i1, j2] = kb
                y[i2, j1] = kc
                y[i2, j2] = kd
                row_sum[i1] = r1 + ka + kb
                row_sum[i2] = r2 + kc + kd
                col_sum[j1] = c1 + ka + kc
                col_sum[j2] = c2 + kb + kd
        if s >= burn_in:
            bi = ((s - burn_in) * n_batches) // n_kept
            for i in range(n_rows):
                for j in range(n_cols):
                    batch_sum[bi, i, j] += y[i, j]
        if trace.shape[0] > 0:
            for i in range(n_rows):
                for j in range(n_cols):
                    trace[s, i * n_cols + j] = y[i, j]
    return n_moves


def block_gibbs(
    problem: BipartiteMatching,
    n_sweeps: int,
    *,
    rng=None,
    init=None,
    burn_in: int = 0,
    blocks_per_sweep: int | None = None,
    n_batches: int = 20,
    trace: bool = False,
) -> GibbsResult:
    """The paper's 2x2 block Gibbs sampler; running-average marginals ``(n_rows * n_cols, 2)``.

    Parameters
    ----------
    problem : BipartiteMatching
        At least 2 rows and 2 columns.
    n_sweeps : int
        Number of sweeps, each of ``blocks_per_sweep`` random block updates.
    rng : None, int or numpy.random.Generator
    init : array_like of 0/1, shape (n_rows, n_cols) or (n_rows * n_cols,), optional
        A feasible starting state; default :func:`lp_map`'s solution (as the paper).
    burn_in : int, default 0
        Sweeps run before the averaging starts.
    blocks_per_sweep : int, optional
        Default ``ceil(n_rows * n_cols / 4)`` (each variable is in one block per sweep on average).
    n_batches : int, default 20
        Batches of the batch-means standard error.
    trace : bool, default False
        Keep the state after every sweep (``n_sweeps * n_rows * n_cols`` bytes).

    Returns
    -------
    GibbsResult
    """
    n_rows, n_cols = problem.unary.shape
    if n_rows < 2 or n_cols < 2:
        raise ValueError(f"`problem` needs at least 2 rows and 2 columns for 2x2 blocks; got {n_rows}x{n_cols}.")
    burn_in = check_int(burn_in, "burn_in", minimum=0)
    n_batches = check_int(n_batches, "n_batches", minimum=2)
    n_sweeps = check_int(n_sweeps, "n_sweeps", minimum=burn_in + n_batches)
    n = n_rows * n_cols
    bps = -(-n // 4) if blocks_per_sweep is None else check_int(blocks_per_sweep, "blocks_per_sweep", minimum=1)
    rng = check_rng(rng)
    y0 = lp_map(problem).assignment if init is None else np.asarray(init)
    y0 = y0.reshape(n_rows, n_cols)
    if not (np.isin(y0, (0, 1)).all() and problem.is_feasible(y0)):
        raise ValueError("`init` must be a feasible 0/1 state (every row and column count inside its range).")
    y = np.ascontiguousarray(y0, dtype=np.int8)
    batch_sum = np.zeros((n_batches, n_rows, n_cols))
    tr = np.zeros((n_sweeps if trace else 0, n), dtype=np.int8)
    (rlo, rhi), (clo, chi) = problem.row_counts, problem.col_counts
    t0 = time.perf_counter()
    n_moves = _gibbs_sweeps(
        np.ascontiguousarray(problem.unary), y, rlo, rhi, clo, chi, n_sweeps, bps, burn_in, streams(rng), batch_sum, tr
    )
    elapsed = time.perf_counter() - t0
    n_kept = n_sweeps - burn_in
    sizes = np.bincount((np.arange(n_kept) * n_batches) // n_kept, minlength=n_batches)
    means = batch_sum.reshape(n_batches, n) / sizes[:, None]
    p_on = batch_sum.reshape(n_batches, n).sum(axis=0) / n_kept
    stderr = means.std(axis=0, ddof=1) / math.sqrt(n_batches)
    return GibbsResult(
        marginals=_as_marginals(p_on),
        stderr=stderr,
        final=y.ravel().astype(np.int64),
        trace=tr,
        n_sweeps=n_sweeps,
        burn_in=burn_in,
        blocks_per_sweep=bps,
        n_moves=int(n_moves),
        time=elapsed,
    )
