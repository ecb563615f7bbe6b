"""``tractable solve``: exact inference on a UAI model file, result in the UAI output format."""

from __future__ import annotations

import sys

__all__ = ["register"]


def register(subparsers) -> None:
    from . import METHODS

    p = subparsers.add_parser(
        "solve",
        help="exact marginals (MAR), MAP or log partition function (PR) of a .uai model",
        description="Solve a UAI-format model exactly and print the result in the UAI output format.",
    )
    p.add_argument("model", help="model file in the UAI format (MARKOV or BAYES)")
    p.add_argument("--evid", metavar="FILE", help="evidence file (.evid)")
    p.add_argument(
        "--task",
        required=True,
        type=str.upper,
        choices=["MAR", "MAP", "PR"],
        help="MAR: all marginals; MAP: a most probable assignment; PR: log10 of the partition function",
    )
    p.add_argument(
        "--method",
        default="auto",
        choices=["auto", *METHODS],
        help="auto: enumeration for small models, variable elimination otherwise (default)",
    )
    p.add_argument(
        "--max-table-size",
        type=int,
        default=None,
        metavar="N",
        help="largest intermediate table of variable elimination (entries; default 2**25)",
    )
    p.add_argument("-o", "--output", metavar="OUT", help="write the result here instead of stdout")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from ..io.uai import read_evidence, read_uai, write_map, write_mar, write_pr
    from . import infer

    fg = read_uai(args.model)
    evidence = read_evidence(args.evid, fg) if args.evid else {}
    kwargs = {"method": args.method, "evidence": evidence, "max_table_size": args.max_table_size}
    out = args.output or sys.stdout
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
