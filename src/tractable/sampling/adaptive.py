"""Maximum-marginal prediction by adaptive Gibbs sampling with dynamic factor-graph pruning (Lampert 2012).

Each variable's decision ``z_i = [mu_i > 1/2]`` gets a posterior from its own samples: with ``m`` ones
in ``N`` samples and a uniform prior on ``mu_i``, ``P(z_i = 0 | S) = I_{1/2}(m + 1, N - m + 1)`` (Eq. 3,
the regularized incomplete beta function); Gibbs samples are dependent, so ``N`` is replaced by the
lag-1 effective sample size ``N' = N (1 - r) / (1 + r)`` and ``m`` by ``mu N'`` (Eq. 5). As soon as a
decision is ``epsilon``-confident the variable leaves the sampler and its factors are replaced by
their expectation under ``Bernoulli(mu_i)`` (Eq. 6-8, :func:`tractable.sampling.prune`), so later
sweeps touch ever fewer variables and factors. The whole loop — sweep, posterior update, pruning —
runs in one compiled kernel (:func:`tractable.sampling._kernels.run_sweeps`).
"""

from __future__ import annotations

import time

import numpy as np

from .._compiled_graph import score as score_of
from .._evidence import condition, full_assignment, full_marginals
from .._random import streams
from .._results import (
    CONVERGED,
    MAX_ITER_REACHED,
    TIME_LIMIT_REACHED,
    frozen_array,
    stop_message,
    warn_stopped,
)
from .._validate import check_bool, check_int, check_positive, check_rng
from . import _kernels
from ._result import MMPResult
from ._wiring import check_binary, compile_binary
from .gibbs import burn, initial_state, next_chunk

__all__ = ["adaptive_mmp"]


def _check_epsilon(epsilon) -> float:
    eps = check_positive(epsilon, "epsilon")
    if not eps < 0.5:
        raise ValueError(f"`epsilon` must be in (0, 0.5); got {epsilon}.")
    return float(eps)


def adaptive_mmp(
    fg,
    *,
    epsilon: float = 1e-5,
    max_sweeps: int = 500,
    burn_in: int = 10,
    n0: int = 20,
    rng=None,
    init=None,
    evidence: dict | None = None,
    time_limit: float | None = None,
    progress: bool = False,
) -> MMPResult:
    """Maximum-marginal decisions of a binary factor graph by adaptive Gibbs sampling (Lampert 2012).

    Parameters
    ----------
    fg : FactorGraph
        Binary variables; table factors of any arity and cardinality factors (as :func:`gibbs`).
        Scores, not energies: Lampert's ``p ∝ exp(-E)`` is ``p ∝ exp(score)`` with ``score = -E``.
    epsilon : float in (0, 0.5), default 1e-5
        A decision is final once its posterior probability of being wrong is at most ``epsilon``.
    max_sweeps : int, default 500
        Sweeps after burn-in (each updates every still-uncertain variable once).
    burn_in : int, default 10
        Sweeps over all variables before samples are counted.
    n0 : int, default 20
        Samples a variable needs before its decision may become final (the first estimate of the
        autocorrelation, Sec. 2.1).
    rng : None, int or numpy.random.Generator
        The same seed gives the same result.
    init : array_like of shape (n,), optional
        A feasible starting state (default as :func:`gibbs`).
    evidence : dict, optional
        ``{variable (index or name): state}``: sampling runs on the graph conditioned on it, and the
        result is over all variables (an observed variable's decision is its state, its marginal
        one-hot, its confidence 1 and its sample count 0).
    time_limit : float, optional
        Seconds after which sampling stops, burn-in included (``status="time_limit_reached"``).
    progress : bool, default False
        Show a tqdm progress bar with the number of variables still sampled.

    Returns
    -------
    MMPResult
        ``assignment`` (n,) int64, ``marginals`` (n, 2), ``confidence``, ``samples_per_variable``,
        ``n_iter`` (sweeps), ``n_updates``, ``n_factor_evaluations``, ``active_history``,
        ``factor_history``, ``converged`` (every decision final), ``time``, ``status``.

    Raises
    ------
    ValueError
        Non-binary variables, ``epsilon`` outside (0, 0.5), ``max_sweeps < 1``, no feasible start, or a
        decided assignment whose score lies beyond float64's range (finite log-potentials near 1e308 that
        add up past it).

    Notes
    -----
    The lag-1 autocorrelation is clipped to ``[0, 1)`` (a negative estimate would claim more
    effective samples than samples) and taken as 0 while a variable's samples are all equal. The
    pruning uses the variable's sample mean at that moment as ``mu``. A decision is tested at
    ``n0`` samples and, after each failed test, again after another 1/16 of its samples (at least one):
    the paper's test after every sample costs more than the sampling for variables whose marginal is
    close to 1/2, and this schedule delays a final decision by at most 1/16 of its samples.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable import FactorGraph, TableFactor
    >>> from tractable.sampling import adaptive_mmp
    >>> fg = FactorGraph([2, 2, 2])
    >>> for v, t in enumerate([2.0, -2.0, 0.5]):
    ...     _ = fg.add_factor(TableFactor([v], [0.0, t]))
    >>> _ = fg.add_factor(TableFactor([1, 2], [[0.0, 0.0], [0.0, 1.0]]))
    >>> res = adaptive_mmp(fg, epsilon=1e-3, rng=0)
    >>> res.assignment.tolist(), res.converged
    ([1, 0, 1], True)
    """
    t0 = time.perf_counter()
    check_binary(fg)
    progress = check_bool(progress, "progress")
    eps = _check_epsilon(epsilon)
    full, (fg, observed) = fg, condition(fg, evidence)
    if observed and init is not None and np.shape(init) == (full.n_variables,):
        init = np.asarray(init)[fg.kept_variables]
    max_sweeps = check_int(max_sweeps, "max_sweeps", minimum=1)
    burn_in = check_int(burn_in, "burn_in", minimum=0)
    n0 = check_int(n0, "n0", minimum=1)
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    gen = check_rng(rng)
    w = compile_binary(fg)
    x = initial_state(fg, w, init)
    n = w.n
    state = streams(gen)
    nb_end = w.nb_ptr[1:].copy()
    args = w.kernel_args(nb_end)
    no_samples = np.zeros((0, n), dtype=np.uint8)
    p_sum = np.zeros(n)
    evals = 0
    t_sample = time.perf_counter()
    start, plain = np.arange(n, dtype=np.int64), _kernels.plain_args()
    burned, evals = burn(
        burn_in,
        n,
        lambda k: _kernels.run_sweeps(k, start, n, x, *args, state, p_sum, no_samples, *plain)[3],
        t0,
        time_limit,
    )
    sampling_time = time.perf_counter() - t_sample
    order = np.arange(n, dtype=np.int64)
    active = np.ones(n, dtype=np.bool_)
    stats = np.zeros((_kernels.N_STATS, n), dtype=np.int64)  # per-variable sample statistics, rows as named
    stats[_kernels.NEXT_CHECK] = n0
    ones, count, lag, first, last = (
        stats[r] for r in (_kernels.ONES, _kernels.COUNT, _kernels.LAG, _kernels.FIRST, _kernels.LAST)
    )
    p0 = np.full(n, 0.5)
    hist = np.zeros((2, min(max_sweeps, 1024)), dtype=np.int64)  # active variables, factors; grown as needed
    fac_active = np.diff(w.g_ptr).astype(np.int64)
    n_factors = n + w.nb_idx.shape[0] // 2 + fac_active.shape[0]
    n_active, done, updates = n, 0, burned * n
    status = MAX_ITER_REACHED
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=max_sweeps, desc="adaptive MMP", unit="sweep")
    try:
        k = max(1, 200_000 // max(n, 1))  # sweeps per kernel call (about 5 ms), then sized by next_chunk
        while done < max_sweeps and n_active > 0:
            k = min(k, max_sweeps - done)
            if done + k > hist.shape[1]:
                grown = np.zeros((2, min(max_sweeps, max(2 * hist.shape[1], done + k))), dtype=np.int64)
                grown[:, :done] = hist[:, :done]
                hist = grown
            t_sample = time.perf_counter()
            k_done, n_active, upd, ev, n_factors = _kernels.run_sweeps(
                k, order, n_active, x, *args, state, p_sum, no_samples, True, eps, n0, active, stats, p0, hist, done,
                fac_active, n_factors,
            )  # fmt: skip
            dt = time.perf_counter() - t_sample
            sampling_time += dt
            k = next_chunk(k_done, dt, k)
            done += k_done
            updates += upd
            evals += ev
            if bar is not None:
                bar.update(k_done)
                bar.set_postfix(active=n_active)
            if n_active > 0 and time_limit is not None and time.perf_counter() - t0 > time_limit:
                status = TIME_LIMIT_REACHED
                break
    finally:
        if bar is not None:
            bar.close()
    if n_active == 0:
        status = CONVERGED
    if burned < burn_in:  # the time limit came during burn-in: never a success, whatever the decisions
        status = TIME_LIMIT_REACHED
    for i in order[:n_active]:  # still uncertain: their posterior at the end
        if count[i] > 0:
            p0[i] = _kernels.decision_tails(ones[i], count[i], lag[i], first[i], last[i])[0]
    mu = np.where(count > 0, ones / np.maximum(count, 1), 0.5)
    assignment = (p0 < 0.5).astype(np.int64)
    confidence = np.maximum(p0, 1.0 - p0)
    marginals = np.stack([1.0 - mu, mu], axis=1)
    if observed:  # back to all of the graph's variables
        kept = fg.kept_variables
        assignment = full_assignment(full, fg, observed, assignment)
        marginals = np.stack(full_marginals(full, fg, observed, marginals))
        sub_confidence, sub_count = confidence, count
        confidence, count = np.ones(full.n_variables), np.zeros(full.n_variables, dtype=np.int64)
        confidence[kept], count[kept] = sub_confidence, sub_count
    score = score_of(full, assignment)  # as full.score: summed without intermediate overflow, +inf only beyond range
    if score == np.inf:
        raise ValueError(
            "`fg` must keep the scores of its labellings within float64's range (about 1.8e308); got a decided "
            "assignment whose score overflows: rescale the factors' log-potentials."
        )
    detail = f"{n - n_active} of {n} decisions {eps:g}-confident after {done} sweeps"
    if burned < burn_in:
        detail += f" (burn-in cut at {burned} of {burn_in} sweeps)"
    msg = stop_message(status, "adaptive_mmp", done, detail)
    if status != CONVERGED:
        warn_stopped(msg)
    return MMPResult(
        assignment=frozen_array(assignment),
        score=score,
        marginals=frozen_array(marginals),
        confidence=frozen_array(confidence),
        samples_per_variable=frozen_array(count),
        n_updates=int(updates),
        n_factor_evaluations=int(evals),
        active_history=frozen_array(hist[0, :done]),
        factor_history=frozen_array(hist[1, :done]),
        sampling_time=sampling_time,
        time=time.perf_counter() - t0,
        method="adaptive_mmp",
        converged=status == CONVERGED,
        n_iter=int(done),
        status=status,
        message=msg,
    )
