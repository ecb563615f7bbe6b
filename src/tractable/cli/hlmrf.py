"""``tractable hlmrf MODEL``: MPE inference in a hinge-loss MRF saved with :meth:`HLMRF.save`."""

from __future__ import annotations

import sys

from ._types import integer, non_negative, positive

__all__ = ["register"]

#: the options of ``--method admm`` only: ``(attribute, flag)``; given with highs or clarabel, an error
_ADMM_ONLY = (
    ("rho", "--rho"),
    ("eps_abs", "--eps-abs"),
    ("eps_rel", "--eps-rel"),
    ("max_iter", "--max-iter"),
    ("gap_tol", "--gap-tol"),
    ("constraints", "--constraints"),
    ("threads", "--threads"),
)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "hlmrf",
        help="MPE inference in a hinge-loss MRF (.npz written by HLMRF.save)",
        description="Find a most probable explanation of a hinge-loss MRF by consensus ADMM (or an exact "
        "reference solver) and print a summary; optionally write the assignment.",
    )
    p.add_argument("model", help="model file written by tractable.hlmrf.HLMRF.save (format tractable.hlmrf)")
    p.add_argument(
        "--method",
        default="admm",
        choices=["admm", "highs", "clarabel"],
        help="admm (default), or the exact LP (highs, p = 1 only) / QP (clarabel)",
    )
    # options default to None (not given): tractable.hlmrf.solve owns the defaults; the ranges are solve's,
    # and an ADMM option given with --method highs/clarabel is an error (_ADMM_ONLY)
    p.add_argument("--rho", type=positive, help="ADMM step size (default: that of tractable.hlmrf.solve)")
    p.add_argument("--eps-abs", type=non_negative, help="ADMM absolute tolerance (default: solve's)")
    p.add_argument("--eps-rel", type=non_negative, help="ADMM relative tolerance (default: solve's)")
    p.add_argument("--max-iter", type=integer(minimum=1), metavar="N", help="ADMM iteration budget (default: solve's)")
    p.add_argument(
        "--gap-tol", type=positive, help="ADMM target of the certified relative gap (default: solve's, 5e-4)"
    )
    p.add_argument("--time-limit", type=positive, metavar="SECONDS", help="stop after this long (any method)")
    p.add_argument(
        "--constraints",
        choices=["auto", "local", "consensus"],
        help="ADMM handling of constraints (see tractable.hlmrf.solve; default: solve's)",
    )
    p.add_argument(
        "--threads",
        type=integer(),  # its range, 0 to the cores numba sees, is checked by set_threads (before any work)
        metavar="N",
        help="run ADMM's iterations and certificates on N threads (0: every core; default 1); worth it for "
        "large models on an otherwise idle machine",
    )
    p.add_argument("--repair", action="store_true", help="project the answer onto the feasible set (any method)")
    p.add_argument("--no-progress", action="store_true", help="ADMM: no progress bar (shown when stderr is a terminal)")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the assignment here: .npy (binary) or any other name (one value per line); written only "
        "when the model has a solution",
    )
    p.set_defaults(func=_run)


def _run(args) -> int:
    import numpy as np

    from .._results import NO_SOLUTION_STATUSES
    from ..hlmrf.admm import solve
    from ..hlmrf.model import HLMRF
    from ..io._npz import check_npz
    from . import NoSolution
    from ._files import atomic_output, check_output

    if args.method != "admm":
        given = [flag for name, flag in _ADMM_ONLY if getattr(args, name) is not None]
        given += ["--no-progress"] if args.no_progress else []
        if given:
            raise ValueError(f"`{given[0]}` applies to `--method admm` only; got --method {args.method}.")
    parallel = None
    if args.threads is not None:
        from .._numba import set_threads

        parallel = set_threads(args.threads) or None
    if args.output is not None:
        check_output(args.output, "--output")
    check_npz(args.model)  # a header declaring more data than the file holds is refused before numpy allocates
    model = HLMRF.load(args.model)
    # only what the user set: solve owns the defaults, and rejects an ADMM option given to highs/clarabel
    options = dict(
        rho=args.rho,
        eps_abs=args.eps_abs,
        eps_rel=args.eps_rel,
        max_iter=args.max_iter,
        gap_tol=args.gap_tol,
        constraints=args.constraints,
        time_limit=args.time_limit,
        repair=args.repair or None,
        parallel=parallel,
    )
    if args.method == "admm" and not args.no_progress and sys.stderr.isatty():
        options["progress"] = True  # on a terminal, as every command (the API shows none by default)
    res = solve(model, method=args.method, **{k: v for k, v in options.items() if v is not None})
    print(f"model      {model!r}")
    print(f"method     {res.method}")
    print(f"status     {res.status}")
    print(f"objective  {res.objective:.10g}")
    print(f"violation  {res.max_violation:.3g}")
    print(f"bound      {res.lower_bound:.10g} (certified gap {res.gap:.3g})")
    if res.method == "admm":
        print(
            f"iterations {res.n_iter} (primal residual {res.primal_residual:.3g}, dual residual "
            f"{res.dual_residual:.3g})"
        )
    print(f"time       {res.time:.3f} s")
    if res.status in NO_SOLUTION_STATUSES:  # no assignment to write (its free values are NaN)
        raise NoSolution(f"{args.model}: {res.message}")
    if args.output:
        x = np.asarray(res.x)
        with atomic_output(args.output, binary=args.output.endswith(".npy")) as fh:
            if args.output.endswith(".npy"):
                np.save(fh, x)
            else:
                np.savetxt(fh, x, fmt="%.12g")
        print(f"wrote the assignment to {args.output}", file=sys.stderr)
    return 0
