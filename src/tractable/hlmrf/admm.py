"""MPE inference in hinge-loss MRFs by consensus ADMM (Bach et al. 2012, Sec. 2.2 and 3).

Every potential and every constraint gets local copies of its variables and Lagrange multipliers;
each iteration solves all local problems exactly (:mod:`tractable.hlmrf.updates`), averages the
copies into the consensus variables (clipped to [0, 1]) and updates the multipliers. The whole
iteration is one compiled pass over flat arrays (:func:`tractable.hlmrf._kernels.admm_run`).

:func:`solve` validates its arguments once (``_validate_solve``) and calls the core of the chosen
method from :data:`METHODS` (``_solve_admm`` here, ``_solve_highs`` / ``_solve_clarabel`` in
``_reference.py``), which trusts its input.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from .._results import (
    CONVERGED,
    ERROR,
    INFEASIBLE,
    MAX_ITER_REACHED,
    TIME_LIMIT_REACHED,
    frozen_array,
    stop_message,
    warn_stopped,
)
from .._validate import as_float_array, check_choice, check_int, check_options, check_positive, resolve_method
from . import _kernels, bound
from ._reference import _solve_clarabel, _solve_highs
from ._result import MPEResult
from .model import HLMRF

__all__ = ["solve", "METHODS"]

#: ADMM's options and their defaults (``None`` in the signature of :func:`solve` means "not given")
_ADMM_DEFAULTS = {
    "rho": 1.0,
    "eps_abs": 1e-5,
    "eps_rel": 1e-3,
    "max_iter": 25_000,
    "progress": False,
    "adaptive_rho": False,
    "over_relaxation": 1.0,
    "constraints": "auto",
    "parallel": False,
}
#: options that every method uses
_COMMON = ("time_limit", "repair")
#: method name -> the options it uses
_OPTIONS = {
    "admm": (*_ADMM_DEFAULTS, "x0", "gap_tol", *_COMMON),
    "highs": _COMMON,
    "clarabel": _COMMON,
}


def solve(
    model: HLMRF,
    method: str = "admm",
    *,
    rho: float | None = None,
    eps_abs: float | None = None,
    eps_rel: float | None = None,
    max_iter: int | None = None,
    x0=None,
    time_limit: float | None = None,
    progress: bool | None = None,
    adaptive_rho: bool | None = None,
    over_relaxation: float | None = None,
    constraints: str | None = None,
    parallel: bool | None = None,
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
    rho : float, default 1.0
        ADMM step size (initial value when ``adaptive_rho``).
    eps_abs, eps_rel : float, default 1e-5 and 1e-3
        ADMM stopping tolerances: stop when ``||r|| <= sqrt(p) eps_abs + eps_rel max(||x||, ||z||)`` and
        ``||s|| <= sqrt(p) eps_abs + eps_rel ||y||`` with ``p`` the number of local copies (Boyd et
        al. 2011, Sec. 3.3.1; PSL's defaults).
    max_iter : int, default 25_000
        ADMM iteration budget.
    x0 : array_like of shape (n_variables,), optional
        ADMM warm start (clipped to [0, 1]); default all zeros.
    time_limit : float, optional
        Seconds after which the solver stops with ``status="time_limit_reached"`` (every method:
        ADMM checks it every 10 iterations, the reference solvers take it as their own limit).
    progress : bool, default False
        Show a tqdm progress bar (ADMM).
    adaptive_rho : bool, default False
        Residual balancing (Boyd et al. 2011, Sec. 3.4.1, on residuals normalized by their
        tolerances): every 10 iterations ``rho`` is doubled when the primal residual is ten times
        further from its tolerance than the dual one, and halved in the opposite case; the
        multipliers are unscaled, so they need no rescaling. Adaptation stops after
        ``max_iter // 2`` iterations so that the final phase is plain ADMM with a fixed ``rho``.
    over_relaxation : float, default 1.0
        ``alpha`` in (0, 2): the consensus and multiplier updates use ``alpha x + (1 - alpha) z``
        (Boyd et al. 2011, Sec. 3.4.3); 1 is plain ADMM.
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
        Run the ADMM iterations on all of numba's threads (``numba.set_num_threads`` limits them);
        the iterates are those of the one-thread kernel up to the summation order of the residuals.
        Worth it on a dedicated multi-core machine; on a busy one each parallel region waits for its
        slowest thread, hence the default of one thread.
    gap_tol : float, optional
        ADMM stops as soon as the certified relative gap ``(objective(z) - lower_bound) /
        max(|objective(z)|, 1)`` of a feasible consensus iterate ``z`` (largest violation at most
        ``1e-9``) is at most ``gap_tol`` (checked every 10 iterations, one extra pass each), with
        ``status="converged"``. Every ADMM result carries ``lower_bound`` and ``gap`` anyway (one
        pass at the end); see :mod:`tractable.hlmrf.bound`.
    repair : bool, default False
        Replace the answer by :func:`tractable.hlmrf.project_feasible` of it (a nearby feasible
        point), as the paper does before measuring suboptimality (every method). An infeasible model
        is left unrepaired, with a ``ConvergenceWarning``.

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
            time_limit=time_limit,
            progress=progress,
            adaptive_rho=adaptive_rho,
            over_relaxation=over_relaxation,
            constraints=constraints,
            parallel=parallel,
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
                gap=_gap(obj, res.lower_bound, viol),
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
    if core is not _solve_admm:
        return core, dict(time_limit=time_limit)
    opt = {k: _ADMM_DEFAULTS[k] if options[k] is None else options[k] for k in _ADMM_DEFAULTS}
    x0 = options["x0"]
    if x0 is not None:
        x0 = as_float_array(x0, "x0", ndim=1, allow_neginf=False)
        if x0.shape != (model.n_variables,):
            raise ValueError(f"`x0` must have shape ({model.n_variables},); got {x0.shape}.")
    return core, dict(
        rho=check_positive(opt["rho"], "rho"),
        eps_abs=check_positive(opt["eps_abs"], "eps_abs", strict=False),
        eps_rel=check_positive(opt["eps_rel"], "eps_rel", strict=False),
        max_iter=check_int(opt["max_iter"], "max_iter", minimum=1),
        x0=x0,
        time_limit=time_limit,
        progress=bool(opt["progress"]),
        adaptive_rho=bool(opt["adaptive_rho"]),
        alpha=_check_alpha(opt["over_relaxation"]),
        constraints=check_choice(opt["constraints"], "constraints", ("local", "consensus", "auto")),
        parallel=bool(opt["parallel"]),
        gap_tol=None if options["gap_tol"] is None else check_positive(options["gap_tol"], "gap_tol"),
    )


def _check_alpha(alpha) -> float:
    alpha = check_positive(alpha, "over_relaxation")
    if not alpha < 2.0:
        raise ValueError(f"`over_relaxation` must lie in (0, 2); got {alpha}.")
    return alpha


#: iterations between convergence reports to Python (time limit, progress, adaptive rho)
_CHUNK = 10
_MU, _TAU = 10.0, 2.0


def _split_constraints(comp, mode: str):
    """Terms that keep local copies, and the disjoint constraints moved to the consensus step."""
    is_con = comp.kind >= _kernels.KIND_LEQ
    rows_con = np.flatnonzero(is_con)
    empty = (np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int8))
    terms = (comp.indptr, comp.idx, comp.coef, comp.const, comp.weight, comp.kind)
    if mode == "local" or rows_con.size == 0:
        return terms, empty
    lengths = np.diff(comp.indptr)
    owner = np.repeat(is_con, lengths)
    disjoint = np.bincount(comp.idx[owner], minlength=comp.free.size).max() <= 1
    if not disjoint:
        if mode == "auto":
            return terms, empty
        raise ValueError(
            "`constraints`='consensus' needs constraints whose variables are pairwise disjoint; "
            "two constraints share a variable (use 'local')."
        )
    keep = ~is_con

    def csr(rows_mask, entry_mask):
        ln = lengths[rows_mask]
        ip = np.zeros(ln.size + 1, dtype=np.int64)
        np.cumsum(ln, out=ip[1:])
        return ip, comp.idx[entry_mask], comp.coef[entry_mask]

    ip, ix, cf = csr(keep, ~owner)
    terms = (ip, ix, cf, comp.const[keep], comp.weight[keep], comp.kind[keep])
    ip, ix, cf = csr(is_con, owner)
    return terms, (ip, ix, cf, comp.const[is_con], comp.kind[is_con])


#: largest violation of a point whose objective certifies a gap
FEASIBILITY_TOL = 1e-9
#: constraint nonzeros up to which the feasibility LP is solved before ADMM runs
_LP_CHECK_NNZ = 100_000


def _gap(objective: float, lower_bound: float, violation: float) -> float:
    """Certified relative gap of a point with ``objective`` and largest ``violation``; inf if not feasible."""
    if not (violation <= FEASIBILITY_TOL and np.isfinite(lower_bound) and np.isfinite(objective)):
        return float("inf")
    return float(max(objective - lower_bound, 0.0) / max(abs(objective), 1.0))


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
    gap_tol=None,
):
    t0 = time.perf_counter()
    comp = model._compile()
    why, cmax = _infeasibility(comp)
    if why is not None:
        full = comp.x_fixed.copy()
        full[comp.free] = np.nan
        return MPEResult(
            x=frozen_array(full),
            objective=float("nan"),
            converged=False,
            n_iter=0,
            primal_residual=float("nan"),
            dual_residual=float("nan"),
            max_violation=float("nan"),
            status=INFEASIBLE,
            time=time.perf_counter() - t0,
            method="admm",
            message=stop_message(INFEASIBLE, "admm", 0, why),
            rho=float(rho),
        )
    terms, zcons = _split_constraints(comp, constraints)
    cert = np.zeros(3)

    def certify():
        bound.certificate(*terms[:6], y, z, *zcons, max_copies, cert)
        return comp.offset + cert[0], comp.offset + cert[1], cert[2]

    idx = terms[1]
    n_free = comp.free.size
    z = np.zeros(n_free) if x0 is None else np.clip(x0[comp.free], 0.0, 1.0)
    x = z[idx]
    y = np.zeros(idx.size)
    counts = np.bincount(idx, minlength=n_free)
    cnt = counts.astype(np.float64)
    max_copies = float(counts.max(initial=0))
    if parallel:
        vptr = np.zeros(n_free + 1, dtype=np.int64)
        np.cumsum(counts, out=vptr[1:])
        vcopies = np.argsort(idx, kind="stable")

        def step(k):
            return _kernels.admm_run_parallel(
                *terms, cnt, vptr, vcopies, x, y, z, rho, alpha, eps_abs, eps_rel, k, stats, *zcons
            )
    else:

        def step(k):
            return _kernels.admm_run(*terms, cnt, x, y, z, rho, alpha, eps_abs, eps_rel, k, stats, *zcons)

    stats = np.array([0.0, np.inf, 0.0, 0.0, 0.0])  # primal, dual, eps_pri, eps_dual, ||z||
    n_iter = 0
    status = MAX_ITER_REACHED
    by_gap = False
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=max_iter, desc="ADMM", unit="it")
    try:
        if comp.idx.size == 0:
            status = CONVERGED
        while status != CONVERGED and n_iter < max_iter:
            steps = min(_CHUNK, max_iter - n_iter)
            done = step(steps)
            n_iter += done
            if bar is not None:
                bar.update(done)
                bar.set_postfix(primal=f"{stats[0]:.2e}", dual=f"{stats[1]:.2e}", rho=f"{rho:.3g}", refresh=False)
            if done < steps or (stats[0] <= stats[2] and stats[1] <= stats[3]):
                status = CONVERGED
                break
            if gap_tol is not None:
                lb, obj, cviol = certify()
                if _gap(obj, lb, cviol) <= gap_tol:
                    status = CONVERGED
                    by_gap = True
                    break
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                status = TIME_LIMIT_REACHED
                break
            if adaptive_rho and n_iter < max_iter // 2:
                rp = stats[0] / max(stats[2], 1e-300)
                rd = stats[1] / max(stats[3], 1e-300)
                if rp > _MU * rd:
                    rho *= _TAU
                elif rd > _MU * rp:
                    rho /= _TAU
    finally:
        if bar is not None:
            bar.close()
    full = comp.x_fixed.copy()
    full[comp.free] = z
    viol = model.max_violation(full)
    objective = model.objective(full)
    lower_bound = certify()[0] if comp.idx.size else comp.offset
    gap = _gap(objective, lower_bound, viol)
    # a converged feasible model has z within |c_k| * primal residual of each constraint's local copy
    viol_tol = 1e-6 + 2.0 * cmax * (stats[0] + stats[1] / rho) / min(alpha, 1.0)
    if status == CONVERGED and not by_gap and viol > viol_tol:
        status = ERROR
        detail = (
            f"residuals below tolerance but max violation {viol:.3g} exceeds what they allow ({viol_tol:.3g}); "
            "the model is probably infeasible"
        )
    converged = status == CONVERGED
    if status == ERROR:
        pass
    elif converged:
        detail = "certified gap below gap_tol" if by_gap else "residuals below tolerance"
    else:
        budget = "time_limit" if status == TIME_LIMIT_REACHED else "max_iter"
        detail = (
            f"primal residual {stats[0]:.3g}, dual residual {stats[1]:.3g}, max violation {viol:.3g}; "
            f"the model may be infeasible, or increase {budget}"
        )
    message = stop_message(status, "admm", n_iter, detail)
    return MPEResult(
        x=frozen_array(full),
        objective=objective,
        converged=converged,
        n_iter=n_iter,
        primal_residual=float(stats[0]),
        dual_residual=float(stats[1]),
        max_violation=viol,
        status=status,
        time=time.perf_counter() - t0,
        method="admm",
        message=message,
        rho=float(rho),
        lower_bound=float(lower_bound),
        gap=gap,
    )


#: method name -> solver core ``f(model, **options) -> MPEResult``; resolved by :func:`solve`. The
#: reference solvers import SciPy's ``linprog`` / ``clarabel`` when first called.
METHODS = {
    "admm": _solve_admm,
    "highs": _solve_highs,
    "clarabel": _solve_clarabel,
}
