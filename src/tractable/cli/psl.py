"""``tractable psl``: run a PSL program (PSL 2.4 JSON, or PSL 2.0-2.3 ``.psl`` + ``.data``)."""

from __future__ import annotations

import math
import os
import sys
import warnings

__all__ = ["register"]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "psl",
        help="MAP inference in a PSL program (PSL 2.4 JSON, or .psl rules + .data file)",
        description="Ground a Probabilistic Soft Logic program in DuckDB, solve it by ADMM and write one "
        "file per open predicate in PSL's output format (arguments, then the value, tab-separated); print "
        "the evaluations when the program has truth data.",
    )
    p.add_argument("program", help="PROGRAM.json (PSL 2.4) or MODEL.psl (PSL 2.0-2.3, with MODEL.data)")
    p.add_argument("data", nargs="?", help="MODEL.data (with a MODEL.psl rule file)")
    p.add_argument("--split", default="infer", choices=["infer", "learn"], help="data split of a JSON program")
    p.add_argument(
        "--output", default="inferred-predicates", metavar="DIR", help="output folder (default: inferred-predicates)"
    )
    p.add_argument("--database", metavar="FILE", help="a DuckDB database file for the atom tables (default: memory)")
    p.add_argument("--eps-abs", type=float, help="ADMM absolute tolerance (overrides the program's option)")
    p.add_argument("--eps-rel", type=float, help="ADMM relative tolerance (overrides the program's option)")
    p.add_argument("--max-iter", type=int, help="ADMM iteration budget (overrides the program's option)")
    p.add_argument("--gap-tol", type=float, help="ADMM target of the certified relative gap (default 5e-4)")
    p.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="run ADMM on N threads (0: every core; default 1), as PSL uses every core",
    )
    p.set_defaults(func=_run)


def _run(args) -> int:
    from ..psl._output import write_predictions
    from ..psl.model import Model

    if args.data is None:
        if not args.program.lower().endswith(".json"):
            raise ValueError(
                f"`program` must be a PSL 2.4 .json file, or a .psl file followed by a .data file; got {args.program}"
            )
        for path in (args.program,):
            if not os.path.isfile(path):
                raise OSError(f"file not found: {path}")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = Model.from_json(args.program, split=args.split, database=args.database)
        for w in caught:  # options PSL has and we do not are reprinted after grounding; the rest here
            text = str(w.message).splitlines()[0] if str(w.message) else w.category.__name__
            if "ignored" not in text.lower():
                print(f"tractable psl: warning: {text}", file=sys.stderr)
    else:
        for path in (args.program, args.data):
            if not os.path.isfile(path):
                raise OSError(f"file not found: {path}")
        model = Model.from_data_file(args.program, args.data, database=args.database)
    options = {"eps_abs": args.eps_abs, "eps_rel": args.eps_rel, "max_iter": args.max_iter, "gap_tol": args.gap_tol}
    if args.threads is not None:
        from .._numba import set_threads

        options["parallel"] = set_threads(args.threads) or None
    g = model.ground()
    if model.ignored_options:  # after grounding, so that an error stays the only line on stderr
        print(f"ignored PSL options: {', '.join(model.ignored_options)}", file=sys.stderr)
    print(f"grounding  {g.n_potentials} potentials, {g.n_constraints} constraints in {g.time:.3f} s")
    predictions, res = model.infer(**{k: v for k, v in options.items() if v is not None})
    print(
        f"inference  {res.status} after {res.n_iter} iterations in {res.time:.3f} s (objective {res.objective:.6g}, "
        f"certified gap {res.gap:.3g})"
    )
    for path in write_predictions(predictions, args.output):
        print(f"wrote      {path}")
    for name, metrics in model.evaluate(predictions).items():
        shown = ", ".join(
            f"{k} {v:.4f}" if isinstance(v, float) and not math.isnan(v) else f"{k} {v}" for k, v in metrics.items()
        )
        print(f"evaluation {name}: {shown}")
    return 0 if res.converged else 1
