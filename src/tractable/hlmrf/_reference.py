"""Reference solvers: the exact LP (HiGHS) and QP (Clarabel) of MPE inference in hinge-loss MRFs.

Each potential ``w max(c·x + b, 0)^p`` gets a slack variable ``t >= max(c·x + b, 0)`` (rows
``c·x - t <= -b`` and ``t >= 0``) whose cost is ``w t`` (``p = 1``) or ``w t^2`` (``p = 2``); the
constraints and the box ``[0, 1]`` are passed on as they are. Fixed variables are folded into the
constants first. Used by the tests and the benchmark as the exact optimum, through
``solve(model, method="highs" | "clarabel")`` (:data:`tractable.hlmrf.METHODS`).

The heavy dependencies (:func:`scipy.optimize.linprog`, ``clarabel``) are imported inside the
solvers, on first use. Both solvers trust their input (``solve`` validates it) and leave the
:class:`~tractable.ConvergenceWarning` of an unsolved problem to ``solve``.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from .._results import ERROR, INFEASIBLE, OPTIMAL, TIME_LIMIT_REACHED, frozen_array, stop_message
from . import _kernels
from ._result import MPEResult
from .bound import gap, row_dual_bound

__all__: list[str] = []


#: HiGHS treats matrix entries of this magnitude or more as infinite (its ``large_matrix_value``)
MAX_COEFFICIENT = 1e15
#: both solvers treat bounds (our constants) and HiGHS costs (our weights) of this magnitude as infinite
#: (HiGHS's ``infinite_bound`` and ``infinite_cost``, Clarabel's presolve)
MAX_CONSTANT = MAX_WEIGHT = 1e20


def _check_magnitudes(model, method: str) -> None:
    """Refuse coefficients, constants and weights the solvers cannot represent (they would read them as
    infinite: HiGHS then reports a feasible model infeasible, Clarabel fails with NaN), naming the argument,
    the potential or constraint, and the limit."""
    checks = []
    pot, con = model.potential_arrays(), model.constraint_arrays()
    for what, arrays in (("potential", pot), ("constraint", con)):
        checks.append((arrays["coefficients"], arrays["indptr"], "coefficients", what, MAX_COEFFICIENT))
        checks.append((arrays["constants"], None, "constants", what, MAX_CONSTANT))
    checks.append((pot["weights"], None, "weights", "potential", MAX_WEIGHT))
    for values, indptr, name, what, limit in checks:
        big = np.flatnonzero(np.abs(values) >= limit)
        if big.size:
            i = int(big[0])
            row = i if indptr is None else int(np.searchsorted(indptr, i, side="right") - 1)
            raise ValueError(
                f"`{name}` of {what} {row} must be below {limit:.0e} in magnitude for `method`={method!r} (the "
                f"solver reads larger values as infinite); got {float(values[i])!r}. Rescale the model, or use "
                "`method`='admm'."
            )


def _constraints_feasible(comp) -> bool:
    """Whether the hard constraints (with the box ``[0, 1]``) admit a point: an LP with zero cost (HiGHS).
    Called when a solver reports infeasibility, to tell a numerical failure from an infeasible model."""
    from scipy.optimize import linprog

    n = comp.free.size
    kind = comp.kind
    leq, eq = np.flatnonzero(kind == _kernels.KIND_LEQ), np.flatnonzero(kind == _kernels.KIND_EQ)
    if leq.size == 0 and eq.size == 0:
        return True
    res = linprog(
        np.zeros(n),
        A_ub=_term_matrix(comp, leq, n) if leq.size else None,
        b_ub=-comp.const[leq] if leq.size else None,
        A_eq=_term_matrix(comp, eq, n) if eq.size else None,
        b_eq=-comp.const[eq] if eq.size else None,
        bounds=(0.0, 1.0),
        method="highs",
    )
    return res.status != 2


def _checked_infeasible(comp, status: str, detail: str) -> tuple[str, str]:
    """An ``"infeasible"`` claim kept only when the constraints are infeasible indeed; else ``"error"``."""
    if status == INFEASIBLE and _constraints_feasible(comp):
        return ERROR, f"{detail} (reported infeasible, but the constraints admit a point: a numerical failure)"
    return status, detail


def _term_matrix(comp, rows: np.ndarray, n_free: int) -> sp.csr_matrix:
    full = sp.csr_matrix((comp.coef, comp.idx, comp.indptr), shape=(comp.indptr.size - 1, n_free))
    return full[rows]


def _result(model, comp, xfree, *, status, n_iter, t0, method, detail, theta=None) -> MPEResult:
    """The result; ``theta``: the solver's row multipliers in the order of ``comp``'s terms (for the bound)."""
    full = comp.x_fixed.copy()
    if xfree is not None:
        full[comp.free] = np.clip(xfree, 0.0, 1.0)
        objective, viol = model.objective(full), model.max_violation(full)
    else:
        full[comp.free] = np.nan
        objective, viol = float("nan"), float("nan")
    lower_bound, rel_gap = float("-inf"), float("inf")
    if theta is not None and status == OPTIMAL:
        lower_bound = row_dual_bound(comp, theta)
        rel_gap = gap(objective, lower_bound, viol)
    return MPEResult(
        x=frozen_array(full),
        objective=objective,
        converged=status == OPTIMAL,
        n_iter=int(n_iter),
        primal_residual=float("nan"),
        dual_residual=float("nan"),
        max_violation=viol,
        status=status,
        time=time.perf_counter() - t0,
        method=method,
        message=stop_message(status, method, int(n_iter), detail),
        lower_bound=lower_bound,
        gap=rel_gap,
    )


def _solve_highs(model, *, time_limit: float | None) -> MPEResult:
    """Solve the MPE linear program of a model whose potentials all have ``p = 1`` with HiGHS.

    Returns an :class:`MPEResult` with ``status`` ``"optimal"``, ``"infeasible"``,
    ``"time_limit_reached"`` or ``"error"``.
    """
    from scipy.optimize import linprog

    t0 = time.perf_counter()
    comp = model._compile()
    kind = comp.kind
    if np.any(kind == _kernels.KIND_SQUARED):
        raise ValueError("`method`='highs' solves only models whose potentials all have p = 1; use 'clarabel'.")
    _check_magnitudes(model, "highs")
    n = comp.free.size
    pot = np.flatnonzero(kind == _kernels.KIND_HINGE)
    leq = np.flatnonzero(kind == _kernels.KIND_LEQ)
    eq = np.flatnonzero(kind == _kernels.KIND_EQ)
    m = pot.size
    cost = np.concatenate([np.zeros(n), comp.weight[pot]])
    a_pot = sp.hstack([_term_matrix(comp, pot, n), -sp.identity(m, format="csr")])
    a_leq = sp.hstack([_term_matrix(comp, leq, n), sp.csr_matrix((leq.size, m))])
    a_ub = sp.vstack([a_pot, a_leq], format="csr")
    b_ub = -np.concatenate([comp.const[pot], comp.const[leq]])
    a_eq = b_eq = None
    if eq.size:
        a_eq = sp.hstack([_term_matrix(comp, eq, n), sp.csr_matrix((eq.size, m))], format="csr")
        b_eq = -comp.const[eq]
    bounds = np.column_stack([np.zeros(n + m), np.concatenate([np.ones(n), np.full(m, np.inf)])])
    options = {"presolve": True}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    if a_ub.shape[0] == 0:
        a_ub = b_ub = None
    if cost.size == 0:  # every variable fixed and no term left: nothing for HiGHS (linprog refuses an empty LP)
        return _result(
            model,
            comp,
            np.zeros(0),
            status=OPTIMAL,
            n_iter=0,
            t0=t0,
            method="highs",
            detail="nothing to optimize: every variable is fixed",
            theta=np.zeros(kind.size),
        )
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs", options=options)
    status = {0: OPTIMAL, 2: INFEASIBLE, 1: TIME_LIMIT_REACHED}.get(res.status, ERROR)
    status, detail = _checked_infeasible(comp, status, f"HiGHS: {res.message}")
    xfree = res.x[:n] if res.x is not None and status in (OPTIMAL, TIME_LIMIT_REACHED) else None
    theta = None
    if status == OPTIMAL:
        # linprog's marginals are d(objective)/d(rhs): the multipliers of the rows c·x + b <= 0 are their negatives
        theta = np.zeros(kind.size)
        if a_ub is not None:
            mu = -np.asarray(res.ineqlin.marginals)
            theta[pot], theta[leq] = mu[:m], mu[m:]
        if eq.size:
            theta[eq] = -np.asarray(res.eqlin.marginals)
    return _result(
        model,
        comp,
        xfree,
        status=status,
        n_iter=getattr(res, "nit", 0) or 0,
        t0=t0,
        method="highs",
        detail=detail,
        theta=theta,
    )


def _solve_clarabel(model, *, time_limit: float | None) -> MPEResult:
    """Solve the MPE quadratic program (any mix of ``p = 1`` and ``p = 2``) with Clarabel.

    Clarabel's interior-point method is called directly with the problem in its standard form
    (``min 1/2 v'Pv + q'v`` s.t. ``Av + s = b``, ``s`` in a product of zero and non-negative cones).
    Needs the ``clarabel`` package (``pip install tractable[ref]``).
    """
    try:
        import clarabel
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("`method`='clarabel' needs the clarabel package: pip install 'tractable[ref]'.") from err
    t0 = time.perf_counter()
    comp = model._compile()
    _check_magnitudes(model, "clarabel")
    kind = comp.kind
    n = comp.free.size
    pot = np.flatnonzero((kind == _kernels.KIND_HINGE) | (kind == _kernels.KIND_SQUARED))
    leq = np.flatnonzero(kind == _kernels.KIND_LEQ)
    eq = np.flatnonzero(kind == _kernels.KIND_EQ)
    m = pot.size
    w = comp.weight[pot]
    sq = kind[pot] == _kernels.KIND_SQUARED
    p_diag = np.concatenate([np.zeros(n), np.where(sq, 2.0 * w, 0.0)])
    p_mat = sp.diags(p_diag, format="csc")
    q = np.concatenate([np.zeros(n), np.where(sq, 0.0, w)])
    eye_m = sp.identity(m, format="csr")
    eye_n = sp.identity(n, format="csr")
    blocks = [
        sp.hstack([_term_matrix(comp, eq, n), sp.csr_matrix((eq.size, m))]),  # zero cone
        sp.hstack([_term_matrix(comp, pot, n), -eye_m]),  # c·x - t <= -b
        sp.hstack([sp.csr_matrix((m, n)), -eye_m]),  # -t <= 0
        sp.hstack([_term_matrix(comp, leq, n), sp.csr_matrix((leq.size, m))]),  # c·x <= -b
        sp.hstack([eye_n, sp.csr_matrix((n, m))]),  # x <= 1
        sp.hstack([-eye_n, sp.csr_matrix((n, m))]),  # -x <= 0
    ]
    a_mat = sp.vstack(blocks, format="csc")
    rhs = np.concatenate([-comp.const[eq], -comp.const[pot], np.zeros(m), -comp.const[leq], np.ones(n), np.zeros(n)])
    cones = []
    if eq.size:
        cones.append(clarabel.ZeroConeT(int(eq.size)))
    cones.append(clarabel.NonnegativeConeT(int(a_mat.shape[0] - eq.size)))
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    if time_limit is not None:
        settings.time_limit = float(time_limit)
    sol = clarabel.DefaultSolver(p_mat, q, a_mat, rhs, cones, settings).solve()
    name = str(sol.status)
    if name in ("Solved", "AlmostSolved"):
        status = OPTIMAL
    elif "Infeasible" in name:
        status = INFEASIBLE
    elif name == "MaxTime":
        status = TIME_LIMIT_REACHED
    else:
        status = ERROR
    status, detail = _checked_infeasible(comp, status, f"Clarabel status {name}")
    xfree = np.asarray(sol.x)[:n] if status in (OPTIMAL, TIME_LIMIT_REACHED) else None
    theta = None
    if status == OPTIMAL:
        # Clarabel's duals z satisfy P v + q + A'z = 0: they multiply the rows A v - b (<= 0 or == 0)
        dz = np.asarray(sol.z)
        ne = eq.size
        theta = np.zeros(kind.size)
        theta[eq], theta[pot], theta[leq] = dz[:ne], dz[ne : ne + m], dz[ne + 2 * m : ne + 2 * m + leq.size]
    return _result(
        model,
        comp,
        xfree,
        status=status,
        n_iter=sol.iterations,
        t0=t0,
        method="clarabel",
        detail=detail,
        theta=theta,
    )
