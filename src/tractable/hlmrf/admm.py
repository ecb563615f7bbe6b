"""MPE inference in hinge-loss MRFs by consensus ADMM (Bach et al. 2012, Sec. 2.2 and 3).

Every potential and every constraint gets local copies of its variables and Lagrange multipliers;
each iteration solves all local problems exactly (:mod:`tractable.hlmrf.updates`), averages the
copies into the consensus variables (clipped to [0, 1]) and updates the multipliers. An iteration
is a term half and a consensus half (:mod:`tractable.hlmrf.partition`); the default path runs both
in one compiled loop over flat arrays (:func:`tractable.hlmrf._kernels.admm_run`), ``n_partitions``
runs the term half block by block.

Stopping: every few iterations one pass computes a certified lower bound from the multipliers
(:mod:`tractable.hlmrf.bound`; also at their exponential average, which closes the gap faster on
LPs); the run stops when the residuals are small and the certified gap of the (feasible) consensus
point is at most ``gap_tol`` (5e-4), or on small residuals alone when the iterates cannot be
certified (constraints with local copies). The growth of the multipliers is tested for a Farkas
certificate of infeasibility. These rules and the building of the result are
:func:`tractable.hlmrf._driver.run`, which :mod:`tractable.distributed` runs on Dask actors too.

:func:`solve` validates its arguments once (``_validate_solve``) and calls the core of the chosen
method from :data:`METHODS` (``_solve_admm`` here, ``_solve_highs`` / ``_solve_clarabel`` in
``_reference.py``), which trusts its input.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from .._results import frozen_array, warn_stopped
from .._validate import (
    as_float_array,
    check_bool,
    check_choice,
    check_int,
    check_options,
    check_positive,
    resolve_method,
)
from . import _driver, _kernels, partition
from ._result import MPEResult
from .bound import gap
from .model import HLMRF
from .partition import _split_constraints

__all__ = ["solve", "METHODS"]

#: ADMM's options and their defaults (``None`` in the signature of :func:`solve` means "not given")
_ADMM_DEFAULTS = {
    "rho": None,  # chosen from the model: _default_rho
    "eps_abs": 1e-5,
    "eps_rel": 1e-3,
    "max_iter": 25_000,
    "progress": False,
    "adaptive_rho": False,
    "over_relaxation": 1.6,
    "constraints": "auto",
    "parallel": False,
    "n_partitions": 1,
}
#: options that every method uses
_COMMON = ("time_limit", "repair")
#: method name -> the options it uses
_OPTIONS = {
    "admm": (*_ADMM_DEFAULTS, "x0", "warm_start", "keep_state", "gap_tol", *_COMMON),
    "highs": _COMMON,
    "clarabel": _COMMON,
}


def solve(
    model: HLMRF,
    *,
    method: str = "admm",
    rho: float | None = None,
    eps_abs: float | None = None,
    eps_rel: float | None = None,
    max_iter: int | None = None,
    x0=None,
    warm_start: MPEResult | None = None,
    keep_state: bool | None = None,
    time_limit: float | None = None,
    progress: bool | None = None,
    adaptive_rho: bool | None = None,
    over_relaxation: float | None = None,
    constraints: str | None = None,
    parallel: bool | None = None,
    n_partitions: int | None = None,
    gap_tol: float | None = None,
    repair: bool = False,
) -> MPEResult:
    """Find a most probable explanation (MPE) of a hinge-loss MRF.

    Minimizes ``sum_j w_j max(c_j·x + b_j, 0)^p_j`` over ``x`` in ``[0, 1]^n`` subject to the
    model's linear constraints and fixed variables.

    Parameters
    ----------
    model : HLMRF
    method : {"admm", "highs", "clarabel"}
        ``"admm"``: consensus ADMM (Bach et al. 2012) with exact local updates for any arity.
        ``"highs"``: the exact linear program (all potentials with ``p = 1``) solved by HiGHS through
        :func:`scipy.optimize.linprog`. ``"clarabel"``: the exact quadratic program solved by the
        Clarabel interior-point solver (the ``ref`` extra). See :data:`METHODS`.
    rho : float, default 1.0 or 0.25
        ADMM step size (initial value when ``adaptive_rho``). Default: 0.25 when most potentials are
        squared hinges, else 1.0 (the fastest certified convergence measured on the opinion-diffusion
        benchmarks; docs/hlmrf.md).
    eps_abs, eps_rel : float, default 1e-5 and 1e-3
        Residual tolerances of Boyd et al. (2011, Sec. 3.3.1; PSL's defaults): the residuals are small
        when ``||r|| <= sqrt(p) eps_abs + eps_rel max(||x||, ||z||)`` and ``||s|| <= sqrt(p) eps_abs +
        eps_rel ||y||`` with ``p`` the number of local copies. See "Stopping" below for how they
        combine with ``gap_tol``; ``0`` switches the residual test off.
    max_iter : int, default 25_000
        ADMM iteration budget.
    x0 : array_like of shape (n_variables,), optional
        ADMM warm start (clipped to [0, 1]); default all zeros.
    warm_start : MPEResult, optional
        The result of an earlier ADMM solve, with ``keep_state=True``, of a model with the same
        potentials and constraints in the same order (weights and fixed values may differ, as in weight
        learning): ADMM starts from its consensus values, local copies, multipliers and ``rho`` (unless
        ``rho`` is given). A state whose shapes do not match this model's terms is a ``ValueError``.
        Not with ``x0``.
    keep_state : bool, default False
        Keep ADMM's last local copies and multipliers on the result (``MPEResult.state``, as large
        as the model's term arrays) for a later ``warm_start``.
    time_limit : float, optional
        Seconds after which the solver stops with ``status="time_limit_reached"`` (every method:
        ADMM checks it every 10 iterations, the reference solvers take it as their own limit).
    progress : bool, default False
        Show a tqdm progress bar (ADMM) with the certified gap of the last check, the residuals and
        ``rho``.
    adaptive_rho : bool, default False
        Residual balancing (Boyd et al. 2011, Sec. 3.4.1, on residuals normalized by their
        tolerances): every 10 iterations ``rho`` is doubled when the primal residual is ten times
        further from its tolerance than the dual one, and halved in the opposite case; the
        multipliers are unscaled, so they need no rescaling. Adaptation stops after
        ``max_iter // 2`` iterations so that the final phase is plain ADMM with a fixed ``rho``.
    over_relaxation : float, default 1.6
        ``alpha`` in (0, 2): the consensus and multiplier updates use ``alpha x + (1 - alpha) z``
        (Boyd et al. 2011, Sec. 3.4.3); 1 is plain ADMM (the paper's and PSL's). 1.6 cut the
        iterations to a certified gap of 5e-4 by a third or more on the benchmarks.
    constraints : {"auto", "local", "consensus"}, default "auto"
        ADMM's treatment of the hard constraints. ``"local"``: as in the paper, every constraint has
        local copies and its update is a projection (iterates are feasible only in the limit).
        ``"consensus"``: constraints whose variables are pairwise disjoint (such as the simplex
        constraints ``X_L + X_C <= 1`` of PSL's functional predicates) join the box in the consensus
        step, which becomes a weighted projection onto box ∩ constraints; every iterate is then
        feasible, and it is still exact ADMM. Raises ``ValueError`` when two constraints share a
        variable. ``"auto"`` (the default): ``"consensus"`` when the constraints are disjoint, else
        ``"local"``, so that answers are feasible without repair whenever the model allows it.
    parallel : bool, default False
        Run the ADMM iterations and the certificates on all of numba's threads
        (``numba.set_num_threads`` limits them), each on a contiguous run of terms; the iterates are
        those of the one-thread kernel up to the summation order of the sums. Worth it on a
        dedicated multi-core machine for large models (about 1.5x per iteration on the dense
        benchmark models with 2 threads, no gain on the sparse ones); on a busy one each parallel
        region waits for its slowest thread, hence the default of one thread.
    n_partitions : int, default 1
        Split the terms into this many blocks (:func:`tractable.hlmrf.partition.split_terms`, BFS
        order) and run each iteration as the blocks' term halves one after the other plus one
        consensus step (:mod:`tractable.hlmrf.partition`): what a distributed backend does, in one
        process. The iterates equal those of the default ``1`` up to the order of floating-point
        additions; it is slower (Python loop over the blocks) and exists to check and demonstrate
        the partitioned iteration. Not with ``parallel=True``.
    gap_tol : float, default 5e-4
        Target of the certified relative gap ``(objective(z) - lower_bound) / max(|objective(z)|, 1)``
        of a feasible consensus iterate ``z`` (largest violation at most ``1e-9``); see "Stopping".
        Every ADMM result carries ``lower_bound`` and ``gap``; see :mod:`tractable.hlmrf.bound`.
    repair : bool, default False
        Replace the answer by :func:`tractable.hlmrf.project_feasible` of it (a nearby feasible
        point), as the paper does before measuring suboptimality (every method). An infeasible model
        is left unrepaired, with a ``ConvergenceWarning``.

    Stopping (ADMM). Every 10 iterations (every 50 while the iterates violate a constraint) one
    extra pass computes the certified gap of the current ``z``. ADMM stops with
    ``status="converged"`` when the gap is at most ``gap_tol`` and the residuals are small (the
    residual test is off when ``eps_abs = eps_rel = 0``: then the gap alone decides): the answer is
    then feasible and provably within ``gap_tol`` (relative) of the optimum. When the constraints
    keep local copies (``constraints="local"``, or shared constraints), the iterates are feasible
    only in the limit and cannot be certified: small residuals stop the run (``gap`` is ``inf``
    unless the iterate happens to be feasible). A feasible ``z`` with small residuals but a larger
    gap runs on to the gap target or ``max_iter``. So with ``constraints="consensus"`` (the default
    whenever the constraints are disjoint) the default answer is feasible and within 5e-4 of the
    optimum, and says so through ``gap``. The divergence of the multipliers is tested too (an
    infeasible model ends with ``status="infeasible"``).

    The options from ``rho`` to ``gap_tol`` (and ``x0``) are ADMM's: giving one with
    ``method="highs"`` or ``"clarabel"`` raises ``ValueError``. ``None`` means "not given" (the
    default above applies).

    Returns
    -------
    MPEResult
        ``status`` is ``"converged"``, ``"max_iter_reached"`` or ``"time_limit_reached"`` (ADMM),
        ``"optimal"``, ``"time_limit_reached"``, ``"infeasible"`` or ``"error"`` (reference solvers);
        ``method`` is the name passed.

    Raises
    ------
    ValueError
        Unknown ``method``, an option that ``method`` does not use, or an option out of range.

    Warns
    -----
    ConvergenceWarning
        Whenever the result has ``converged=False``: ADMM stopped before meeting its tolerances (an
        infeasible model never meets them; its result has a large ``max_violation``), or a
        reference solver found no optimum (``status`` says why).

    Examples
    --------
    >>> from tractable.hlmrf import HLMRF, solve
    >>> m = HLMRF(2)
    >>> m.add_potential([0, 1], [-1.0, 1.0], constant=0.5)  # max(0.5 - x0 + x1, 0)
    0
    >>> res = solve(m, eps_abs=1e-8, eps_rel=1e-8)
    >>> res.status, round(res.objective, 6)
    ('converged', 0.0)
    >>> solve(m, method="highs").status
    'optimal'
    >>> solve(m, method="highs", max_iter=5)
    Traceback (most recent call last):
    ...
    ValueError: `max_iter` does not apply to `method`='highs' (its options: `time_limit`, `repair`).
    """
    core, kwargs = _validate_solve(
        model,
        method,
        dict(
            rho=rho,
            eps_abs=eps_abs,
            eps_rel=eps_rel,
            max_iter=max_iter,
            x0=x0,
            warm_start=warm_start,
            keep_state=keep_state,
            time_limit=time_limit,
            progress=progress,
            adaptive_rho=adaptive_rho,
            over_relaxation=over_relaxation,
            constraints=constraints,
            parallel=parallel,
            n_partitions=n_partitions,
            gap_tol=gap_tol,
            repair=repair,
        ),
    )
    res = core(model, **kwargs)
    if not res.converged:
        warn_stopped(res.message)
    if repair and np.all(np.isfinite(res.x)):
        from .repair import project_feasible

        t0 = time.perf_counter()
        try:
            xr = project_feasible(model, res.x)
        except ValueError as err:
            warn_stopped(f"no repair: {err}")
        else:
            obj, viol = model.objective(xr), model.max_violation(xr)
            res = replace(
                res,
                x=frozen_array(xr),
                objective=obj,
                max_violation=viol,
                gap=gap(obj, res.lower_bound, viol),
                time=res.time + time.perf_counter() - t0,
            )
    return res


def _validate_solve(model, method, options):
    """Check the arguments of :func:`solve`; return the core and its keyword arguments (defaults applied)."""
    if not isinstance(model, HLMRF):
        raise TypeError(f"`model` must be an HLMRF; got {type(model).__name__}.")
    core = resolve_method(method, METHODS)
    check_options(method, options, _OPTIONS[method])
    time_limit = options["time_limit"]
    time_limit = None if time_limit is None else check_positive(time_limit, "time_limit")
    check_bool(options["repair"], "repair")
    if core is not _solve_admm:
        return core, dict(time_limit=time_limit)
    opt = {k: _ADMM_DEFAULTS[k] if options[k] is None else options[k] for k in _ADMM_DEFAULTS}
    x0 = options["x0"]
    if x0 is not None:
        x0 = as_float_array(x0, "x0", ndim=1, allow_neginf=False)
        if x0.shape != (model.n_variables,):
            raise ValueError(f"`x0` must have shape ({model.n_variables},); got {x0.shape}.")
    warm = options["warm_start"]
    if warm is not None:
        if x0 is not None:
            raise ValueError("give `x0` or `warm_start`, not both (`warm_start` carries its own start).")
        if not isinstance(warm, MPEResult) or warm.method != "admm":
            raise TypeError(f"`warm_start` must be an MPEResult of an ADMM solve; got {type(warm).__name__}.")
        if warm.state is None:
            raise ValueError("`warm_start` has no ADMM state: solve the earlier model with `keep_state=True`.")
        if warm.x.shape != (model.n_variables,):
            raise ValueError(
                f"`warm_start` comes from a model of {warm.x.shape[0]} variables; this one has {model.n_variables}."
            )
    n_partitions = check_int(opt["n_partitions"], "n_partitions", minimum=1)
    if n_partitions > 1 and opt["parallel"]:
        raise ValueError(
            f"`n_partitions` > 1 runs the blocks in sequence; it excludes `parallel`=True; got {n_partitions}."
        )
    return core, dict(
        rho=None if opt["rho"] is None else check_positive(opt["rho"], "rho"),
        eps_abs=check_positive(opt["eps_abs"], "eps_abs", strict=False),
        eps_rel=check_positive(opt["eps_rel"], "eps_rel", strict=False),
        max_iter=check_int(opt["max_iter"], "max_iter", minimum=1),
        x0=x0,
        warm_start=warm,
        keep_state=check_bool(options["keep_state"], "keep_state"),
        time_limit=time_limit,
        progress=check_bool(opt["progress"], "progress"),
        adaptive_rho=check_bool(opt["adaptive_rho"], "adaptive_rho"),
        alpha=_check_alpha(opt["over_relaxation"]),
        constraints=check_choice(opt["constraints"], "constraints", ("local", "consensus", "auto")),
        parallel=check_bool(opt["parallel"], "parallel"),
        n_partitions=n_partitions,
        gap_tol=_DEFAULT_GAP_TOL if options["gap_tol"] is None else check_positive(options["gap_tol"], "gap_tol"),
    )


def _check_alpha(alpha) -> float:
    alpha = check_positive(alpha, "over_relaxation")
    if not alpha < 2.0:
        raise ValueError(f"`over_relaxation` must lie in (0, 2); got {alpha}.")
    return alpha


#: default target of the certified relative gap
_DEFAULT_GAP_TOL = 5e-4


def default_rho_for(n_potentials: int, n_squared: int) -> float:
    """ADMM's default step size for weights near 1: 0.25 when squared hinges are the majority of the
    ``n_potentials`` potentials, else 1.0 (measured, docs/hlmrf.md). The PSL front end scales it by the mean
    weight (:func:`tractable.psl.model._weight_scaled_rho`)."""
    return 0.25 if 2 * n_squared > n_potentials else 1.0


def _default_rho(comp) -> float:
    """:func:`default_rho_for` the compiled model's potential terms."""
    pot = comp.kind < _kernels.KIND_LEQ
    return default_rho_for(int(np.count_nonzero(pot)), int(np.count_nonzero(comp.kind[pot] == _kernels.KIND_SQUARED)))


#: constraint nonzeros up to which the feasibility LP is solved before ADMM runs
_LP_CHECK_NNZ = 100_000


def _infeasibility(comp) -> tuple[str | None, float]:
    """Why the constraints and the box have no common point (None when none was found), and the
    largest Euclidean norm of a constraint's coefficients.

    Each constraint alone against the box (exact, any size; this decides the question when the
    constraints are pairwise disjoint); otherwise, up to ``_LP_CHECK_NNZ`` nonzeros, the feasibility
    LP over the constraint rows and the box with HiGHS.
    """
    rows = np.flatnonzero(comp.kind >= _kernels.KIND_LEQ)
    if rows.size == 0:
        return None, 0.0
    lengths = np.diff(comp.indptr)
    owner = np.repeat(comp.kind >= _kernels.KIND_LEQ, lengths)
    term = np.repeat(np.arange(lengths.size), lengths)[owner]
    c = comp.coef[owner]
    lo = comp.const + np.bincount(term, weights=np.minimum(c, 0.0), minlength=lengths.size)
    hi = comp.const + np.bincount(term, weights=np.maximum(c, 0.0), minlength=lengths.size)
    scale = 1.0 + np.abs(comp.const) + np.bincount(term, weights=np.abs(c), minlength=lengths.size)
    cmax = float(np.sqrt(np.bincount(term, weights=c * c, minlength=lengths.size).max()))
    tol = 1e-9 * scale
    bad = (lo > tol) | ((comp.kind == _kernels.KIND_EQ) & (hi < -tol))
    bad[comp.kind < _kernels.KIND_LEQ] = False
    if bad.any():
        j = int(np.flatnonzero(bad)[0]) - comp.n_potentials
        return f"constraint {j} (after fixing variables) cannot hold anywhere in the box [0, 1]", cmax
    idx = comp.idx[owner]
    if np.bincount(idx, minlength=comp.free.size).max() <= 1 or idx.size > _LP_CHECK_NNZ:
        return None, cmax
    import scipy.sparse as sp
    from scipy.optimize import linprog

    n = comp.free.size
    a = sp.csr_matrix((comp.coef, comp.idx, comp.indptr), shape=(lengths.size, n))
    leq = rows[comp.kind[rows] == _kernels.KIND_LEQ]
    eq = rows[comp.kind[rows] == _kernels.KIND_EQ]
    res = linprog(
        np.zeros(n),
        A_ub=a[leq] if leq.size else None,
        b_ub=-comp.const[leq] if leq.size else None,
        A_eq=a[eq] if eq.size else None,
        b_eq=-comp.const[eq] if eq.size else None,
        bounds=(0.0, 1.0),
        method="highs",
    )
    if res.status == 2:
        return "the constraints have no common point in the box [0, 1] (HiGHS feasibility LP)", cmax
    return None, cmax


def _solve_admm(
    model,
    *,
    rho,
    eps_abs,
    eps_rel,
    max_iter,
    x0,
    time_limit,
    progress,
    adaptive_rho,
    alpha,
    constraints,
    parallel,
    n_partitions=1,
    gap_tol=_DEFAULT_GAP_TOL,
    warm_start=None,
    keep_state=False,
):
    t0 = time.perf_counter()
    comp = model._compile()
    if rho is None:
        rho = warm_start.rho if warm_start is not None and np.isfinite(warm_start.rho) else _default_rho(comp)
    if warm_start is not None:
        x0 = np.asarray(warm_start.x, float)
    # the constraints' feasibility depends on the structure alone: once per shared structure (with_weights)
    if "infeasibility" not in comp.shared:
        comp.shared["infeasibility"] = _infeasibility(comp)
    why, cmax = comp.shared["infeasibility"]
    if why is not None:
        return _driver.infeasible_result(comp, rho, why, t0)
    terms, zcons = _split_constraints(comp, constraints)
    z = np.zeros(comp.free.size) if x0 is None else np.clip(x0[comp.free], 0.0, 1.0)
    tols = dict(alpha=alpha, eps_abs=eps_abs, eps_rel=eps_rel)
    if n_partitions > 1:
        part = partition.split_terms(model, n_partitions, constraints=constraints)
        ex = _driver.Blocks(model, comp, part, z, **tols)
    else:
        ex = _driver.Fused(model, comp, terms, zcons, z, parallel=parallel, **tols)
    if warm_start is not None and not ex.set_state(warm_start.state):
        raise ValueError(
            "`warm_start`: its ADMM state does not fit this model's terms (another model, other constraints, "
            "other fixed variables or another `n_partitions`/`constraints`)."
        )
    return _driver.run(
        ex,
        rho=rho,
        max_iter=max_iter,
        time_limit=time_limit,
        progress=progress,
        adaptive_rho=adaptive_rho,
        gap_tol=gap_tol,
        cmax=cmax,
        zcons=zcons,
        t0=t0,
        keep_state=keep_state,
        warm=warm_start is not None,
        **tols,
    )


def _solve_highs(model, **options):
    """:func:`tractable.hlmrf._reference._solve_highs`, imported on first use (SciPy is not imported for ADMM)."""
    from ._reference import _solve_highs as core

    return core(model, **options)


def _solve_clarabel(model, **options):
    """:func:`tractable.hlmrf._reference._solve_clarabel`, imported on first use."""
    from ._reference import _solve_clarabel as core

    return core(model, **options)


#: method name -> solver core ``f(model, **options) -> MPEResult``; resolved by :func:`solve`. The
#: reference solvers import SciPy's ``linprog`` / ``clarabel`` when first called.
METHODS = {
    "admm": _solve_admm,
    "highs": _solve_highs,
    "clarabel": _solve_clarabel,
}
