"""``tractable solve``: inference on a UAI model file, result in the UAI output format.

Exact by default (enumeration or variable elimination); ``--method lbp`` runs loopy belief
propagation (:func:`tractable.bp.loopy`: sum-product for MAR and PR, where PR is the Bethe estimate,
max-product for MAP) on the model conditioned on the evidence.
"""

from __future__ import annotations

import contextlib
import sys
import warnings

__all__ = ["register"]


def register(subparsers) -> None:
    from . import METHODS

    p = subparsers.add_parser(
        "solve",
        help="marginals (MAR), MAP or log partition function (PR) of a .uai model",
        description="Solve a UAI-format model (exactly, or by loopy BP with --method lbp) and print the result "
        "in the UAI output format.",
    )
    p.add_argument("model", help="model file in the UAI format (MARKOV or BAYES)")
    p.add_argument("--evid", metavar="FILE", help="evidence file (.evid)")
    p.add_argument(
        "--task",
        required=True,
        type=str.upper,
        choices=["MAR", "MAP", "PR", "MMP"],
        help="MAR: all marginals; MAP: a most probable assignment; PR: log10 of the partition function; "
        "MMP: maximum-marginal decisions and marginals of a binary model by adaptive Gibbs sampling",
    )
    p.add_argument(
        "--method",
        default="auto",
        choices=["auto", *METHODS, "lbp"],
        help="auto: enumeration for small models, variable elimination otherwise (default); "
        "lbp: loopy belief propagation (approximate on graphs with cycles)",
    )
    p.add_argument("--max-iter", type=int, default=None, metavar="N", help="lbp: iteration budget (default 500)")
    p.add_argument("--tol", type=float, default=None, help="lbp: message change at convergence (default 1e-8)")
    p.add_argument("--damping", type=float, default=None, help="lbp: damping in [0, 1) (default 0)")
    p.add_argument(
        "--max-table-size",
        type=int,
        default=None,
        metavar="N",
        help="largest intermediate table of variable elimination (entries; default 2**25)",
    )
    p.add_argument("--epsilon", type=float, default=None, help="MMP: error probability of a final decision (1e-5)")
    p.add_argument("--max-sweeps", type=int, default=None, metavar="N", help="MMP: sweep budget (default 500)")
    p.add_argument("--seed", type=int, default=None, help="MMP: random seed (the same seed, the same result)")
    p.add_argument("-o", "--output", metavar="OUT", help="write the result here instead of stdout")
    p.set_defaults(func=_run)


@contextlib.contextmanager
def _warnings_as_notes():
    """Report a ConvergenceWarning as one line on stderr (the result is still written)."""
    from .._results import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        yield
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            print(f"tractable solve: warning: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _lbp(fg, task: str, evidence: dict, args):
    """Loopy BP on ``fg`` given ``evidence``; results over all variables (observed ones included)."""
    import numpy as np

    from .._results import MAPResult, MarginalsResult, frozen_array, frozen_marginals
    from ..bp import loopy

    if args.max_table_size is not None:
        raise ValueError("`--max-table-size` applies to the exact methods only; got --method lbp.")
    options = {
        k: v for k, v in (("max_iter", args.max_iter), ("tol", args.tol), ("damping", args.damping)) if v is not None
    }
    sub = fg.condition(evidence) if evidence else fg
    with _warnings_as_notes():
        res = loopy(sub, "max" if task == "MAP" else "sum", progress=sys.stderr.isatty(), **options)
    kept = sub.kept_variables
    if task == "MAP":
        assignment = np.zeros(fg.n_variables, dtype=np.int64)
        assignment[kept] = res.assignment
        for v, s in evidence.items():
            assignment[v] = s
        return MAPResult(frozen_array(assignment), float(fg.score(assignment)), res.time, "lbp", res.converged,
                         res.n_iter, res.status, res.message)  # fmt: skip
    marginals = [None] * fg.n_variables
    for i, v in enumerate(kept):
        marginals[v] = res.marginals[i]
    for v, s in evidence.items():
        marginals[v] = np.eye(int(fg.cardinalities[v]))[s]
    return MarginalsResult(frozen_marginals(marginals), res.log_partition, res.time, "lbp", res.converged,
                           res.n_iter, res.status, res.message)  # fmt: skip


def _mmp(fg, evidence: dict, args, out) -> str:
    """Adaptive MMP (:func:`tractable.sampling.adaptive_mmp`) on ``fg`` given ``evidence``; write the
    decisions (``MMP`` block, in the layout of a ``MAP`` block) and the marginals (``MAR`` block)."""
    import numpy as np

    from ..io.uai import _emit, write_mar
    from ..sampling import adaptive_mmp

    options = {"epsilon": args.epsilon, "max_sweeps": args.max_sweeps}
    sub = fg.condition(evidence) if evidence else fg
    with _warnings_as_notes():
        res = adaptive_mmp(sub, rng=args.seed, progress=sys.stderr.isatty(), **{k: v for k, v in options.items() if v})
    decisions = np.zeros(fg.n_variables, dtype=np.int64)
    marginals = np.zeros((fg.n_variables, 2))
    decisions[sub.kept_variables] = res.decisions
    marginals[sub.kept_variables] = res.marginals
    for v, s in evidence.items():
        decisions[v] = s
        marginals[v] = np.eye(2)[s]
    text = "MMP\n" + " ".join(str(x) for x in [decisions.size, *decisions.tolist()]) + "\n"
    _emit(out, text + write_mar(None, marginals, fg))
    return res.message


def _run(args) -> int:
    from ..io.uai import read_evidence, read_uai, write_map, write_mar, write_pr
    from . import infer

    fg = read_uai(args.model)
    evidence = read_evidence(args.evid, fg) if args.evid else {}
    out = args.output or sys.stdout
    mmp_only = {"epsilon": args.epsilon, "max_sweeps": args.max_sweeps, "seed": args.seed}
    if args.task == "MMP":
        if args.method not in ("auto",):
            raise ValueError(f"`--task MMP` runs adaptive Gibbs sampling and takes no --method; got {args.method}.")
        message = _mmp(fg, evidence, args, out)
        if args.output:
            print(f"wrote MMP result to {args.output} ({message})", file=sys.stderr)
        return 0
    given = [k for k, v in mmp_only.items() if v is not None]
    if given:
        raise ValueError(f"`--{given[0].replace('_', '-')}` applies to `--task MMP` only; got --task {args.task}.")
    if args.method == "lbp":
        res = _lbp(fg, args.task, evidence, args)
        if args.task == "MAP":
            write_map(out, res.assignment)
        elif args.task == "MAR":
            write_mar(out, res.marginals, fg)
        else:
            write_pr(out, res.log_partition)
        if args.output:
            print(f"wrote {args.task} result to {args.output} (lbp, {res.message})", file=sys.stderr)
        return 0
    lbp_only = {"max_iter": args.max_iter, "tol": args.tol, "damping": args.damping}
    given = [k for k, v in lbp_only.items() if v is not None]
    if given:
        raise ValueError(
            f"`--{given[0].replace('_', '-')}` applies to `--method lbp` only; got --method {args.method}."
        )
    kwargs = {"method": args.method, "evidence": evidence, "max_table_size": args.max_table_size}
    if args.task == "MAP":
        res = infer(fg, "map", **kwargs)
        write_map(out, res.assignment)
    else:
        res = infer(fg, "marginals", **kwargs)
        if args.task == "MAR":
            write_mar(out, res.marginals, fg)
        else:
            write_pr(out, res.log_partition)
    if args.output:
        print(f"wrote {args.task} result to {args.output} ({res.method}, {res.time:.3f} s)", file=sys.stderr)
    return 0
