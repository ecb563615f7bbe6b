"""A compiled Gibbs sampler for factor graphs over binary variables."""

from __future__ import annotations

import time

import numpy as np

from .._compiled_graph import score
from .._random import streams
from .._results import COMPLETED, TIME_LIMIT_REACHED, frozen_array, stop_message, warn_stopped
from .._validate import as_binary_assignment, check_bool, check_int, check_memory, check_positive, check_rng
from . import _kernels
from ._result import GibbsResult
from ._wiring import Wiring, check_binary, compile_binary

__all__ = ["gibbs"]

_CHUNK_SECONDS = 0.02  # sweeps run in chunks of about this long between time-limit checks


def initial_state(fg, wiring: Wiring, init) -> np.ndarray:
    """A feasible starting state: ``init`` if given, else the better state of each variable's field,
    else a max-product belief-propagation decoding. Raises ValueError if none is feasible."""
    if init is not None:
        x = as_binary_assignment(init, "init", wiring.n)
        if score(fg, x) == -np.inf:
            raise ValueError("`init` must be a feasible state (score > -inf); it violates a hard constraint.")
        return x
    x = np.where(wiring.forbid0, 1, np.where(wiring.forbid1, 0, (wiring.field > 0).astype(np.int64)))
    if wiring.g_kind.shape[0] == 0 or score(fg, x) > -np.inf:
        return x.astype(np.int64)
    return _decoded_state(fg, np.random.default_rng(0))


def _decoded_state(fg, gen) -> np.ndarray:
    """A max-product belief-propagation decoding, then one with ties broken by tiny random unary scores."""
    import warnings

    from .._results import ConvergenceWarning
    from ..bp import loopy
    from ..factorgraph import TableFactor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        x = np.array(loopy(fg, task="map", max_iter=200, damping=0.5).assignment, dtype=np.int64)
        if score(fg, x) > -np.inf:
            return x
        tilted = fg.condition({})
        for v in range(fg.n_variables):
            tilted.add_factor(TableFactor([v], [0.0, 1e-6 * gen.standard_normal()]))
        x = np.array(loopy(tilted, task="map", max_iter=200, damping=0.5).assignment, dtype=np.int64)
    if score(fg, x) == -np.inf:
        raise ValueError(
            "no feasible starting state found (the hard constraints exclude the unary-optimal state and the "
            "belief-propagation decodings); pass a feasible `init`."
        )
    return x


def next_chunk(done: int, seconds: float, previous: int) -> int:
    """Sweeps for the next kernel call: about ``_CHUNK_SECONDS`` at the rate of the last call (``done`` sweeps
    in ``seconds``), at most twice ``previous`` plus one."""
    return int(min(max(1, done * _CHUNK_SECONDS / max(seconds, 1e-9)), 2 * previous + 1))


def burn(n_sweeps: int, n: int, run, t0: float, time_limit: float | None) -> tuple[int, int]:
    """``n_sweeps`` burn-in sweeps by ``run(k)`` (runs ``k`` sweeps, returns the factor evaluations), in chunks
    of about ``_CHUNK_SECONDS``; stops early once ``time_limit`` seconds have passed since ``t0``. Returns
    ``(sweeps run, evaluations)``. The chunks change nothing but the checks: a sweep's draws come from the
    random streams' state, whatever call runs it."""
    done = evals = 0
    k = max(1, 200_000 // max(n, 1))
    while done < n_sweeps:
        k = min(k, n_sweeps - done)
        t = time.perf_counter()
        evals += run(k)
        dt = time.perf_counter() - t
        done += k
        k = next_chunk(k, dt, k)
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            break
    return done, evals


def gibbs(
    fg,
    *,
    n_sweeps: int = 1000,
    burn_in: int = 0,
    rng=None,
    init=None,
    return_samples: bool = False,
    time_limit: float | None = None,
    progress: bool = False,
) -> GibbsResult:
    """Gibbs sampling (systematic scan) of a factor graph over binary variables.

    Parameters
    ----------
    fg : FactorGraph
        Binary variables; :class:`~tractable.TableFactor` s of any arity (``-inf`` entries are hard
        constraints) and :class:`~tractable.CardinalityFactor` s. Pairwise tables with finite entries
        run as flat couplings, the fastest path.
    n_sweeps : int, default 1000
        Recorded sweeps (each updates every variable once, in index order).
    burn_in : int, default 0
        Sweeps run and discarded before recording.
    rng : None, int or numpy.random.Generator
        The same seed gives the same samples.
    init : array_like of shape (n,), optional
        A feasible starting state (default: see Notes).
    return_samples : bool, default False
        Keep the state after every recorded sweep (``n_sweeps * n`` bytes).
    time_limit : float, optional
        Stop after this many seconds, burn-in included (``status="time_limit_reached"``, with a
        :class:`~tractable.ConvergenceWarning`); the marginals average the sweeps recorded (a burn-in that
        the limit cut short is followed by one short chunk of recorded sweeps; ``burn_in`` on the result
        counts the burn-in sweeps run).
    progress : bool, default False
        Show a tqdm progress bar.

    Returns
    -------
    GibbsResult
        ``marginals`` (n, 2) (Rao-Blackwellized), ``samples`` (or None), ``n_iter`` (recorded sweeps),
        ``n_updates``, ``n_factor_evaluations``, ``time``, ``status``.

    Notes
    -----
    The sweep is one compiled kernel over flat arrays (:mod:`tractable.sampling._wiring`); random
    numbers come from a xoroshiro128+ stream seeded from ``rng``. Without ``init`` the chain starts
    from each variable's better state under its own field, or, if that violates a hard constraint,
    from a max-product belief-propagation decoding (with ties broken by tiny random unary scores).
    With hard constraints the chain may not be ergodic (single-site moves cannot cross between
    separated feasible regions).

    Examples
    --------
    >>> import numpy as np
    >>> from tractable import FactorGraph, TableFactor
    >>> from tractable.sampling import gibbs
    >>> fg = FactorGraph([2, 2])
    >>> _ = fg.add_factor(TableFactor([0], [0.0, 1.0]))
    >>> _ = fg.add_factor(TableFactor([0, 1], [[1.0, 0.0], [0.0, 1.0]]))
    >>> res = gibbs(fg, n_sweeps=20_000, burn_in=100, rng=0)
    >>> res.marginals.shape, bool(abs(res.marginals[0, 1] - 0.7311) < 0.01)
    ((2, 2), True)
    """
    t0 = time.perf_counter()
    check_binary(fg)
    return_samples = check_bool(return_samples, "return_samples")
    progress = check_bool(progress, "progress")
    n_sweeps = check_int(n_sweeps, "n_sweeps", minimum=1)
    burn_in = check_int(burn_in, "burn_in", minimum=0)
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    if return_samples:
        check_memory(n_sweeps * fg.n_variables, 1, ("n_sweeps", "n_variables"), "sample entries (uint8)")
    gen = check_rng(rng)
    wiring = compile_binary(fg)
    x = initial_state(fg, wiring, init)
    n = wiring.n
    state = streams(gen)
    order = np.arange(n, dtype=np.int64)
    nb_end = wiring.nb_ptr[1:].copy()
    args = wiring.kernel_args(nb_end)
    scratch = np.zeros(n)
    no_samples = np.zeros((0, n), dtype=np.uint8)
    plain = _kernels.plain_args()
    t_sample = time.perf_counter()
    burned, evals = burn(
        burn_in,
        n,
        lambda k: _kernels.run_sweeps(k, order, n, x, *args, state, scratch, no_samples, *plain)[3],
        t0,
        time_limit,
    )
    sampling_time = time.perf_counter() - t_sample
    p_sum = np.zeros(n)
    samples = np.zeros((n_sweeps, n), dtype=np.uint8) if return_samples else no_samples
    chunk = max(1, 200_000 // max(n, 1))  # sweeps per kernel call (about 5 ms), then sized to _CHUNK_SECONDS
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n_sweeps, desc="Gibbs", unit="sweep")
    done, status = 0, COMPLETED
    try:
        while done < n_sweeps:
            k = min(chunk, n_sweeps - done)
            rows = samples[done : done + k] if return_samples else no_samples
            t_sample = time.perf_counter()
            evals += _kernels.run_sweeps(k, order, n, x, *args, state, p_sum, rows, *plain)[3]
            dt = time.perf_counter() - t_sample
            sampling_time += dt
            chunk = next_chunk(k, dt, chunk)
            done += k
            if bar is not None:
                bar.update(k)
            if time_limit is not None and done < n_sweeps and time.perf_counter() - t0 > time_limit:
                status = TIME_LIMIT_REACHED
                break
    finally:
        if bar is not None:
            bar.close()
    mu = p_sum / done
    if burned < burn_in:  # the time limit came during burn-in: one chunk of sweeps was still recorded
        status = TIME_LIMIT_REACHED
    detail = f"{done} recorded sweeps after {burned} burn-in sweeps" + (f" of {burn_in}" if burned < burn_in else "")
    msg = stop_message(status, "gibbs", done, detail)
    if status != COMPLETED:
        warn_stopped(msg)
    return GibbsResult(
        marginals=frozen_array(np.stack([1.0 - mu, mu], axis=1)),
        samples=frozen_array(samples[:done]) if return_samples else None,
        burn_in=burned,
        n_updates=(burned + done) * n,
        n_factor_evaluations=int(evals),
        sampling_time=sampling_time,
        time=time.perf_counter() - t0,
        method="gibbs",
        converged=status == COMPLETED,
        n_iter=done,
        status=status,
        message=msg,
    )
