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
        "--learn",
        nargs="?",
        const=True,
        default=None,
        metavar="METHOD",
        help="learn the rule weights on the learn split first (METHOD: a PSL learner, default the program's "
        "runtime.learn.method or StructuredPerceptron), write OUTPUT/learned.json, then infer on the infer split; "
        "also when the program sets runtime.learn",
    )
    p.add_argument(
        "--output", default="inferred-predicates", metavar="DIR", help="output folder (default: inferred-predicates)"
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="a hard ground rule that the observed values alone violate is an error (default: dropped with a "
        "warning, as PSL drops ground rules without open atoms)",
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


def _load_json(Model, path, split, database, strict=False):
    """The model of one split of a JSON program; its loading warnings on stderr (ignored options come later)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = Model.from_json(path, split=split, database=database, strict=strict)
    for w in caught:  # options PSL has and we do not are reprinted after grounding; the rest here
        text = str(w.message).splitlines()[0] if str(w.message) else w.category.__name__
        if "ignored" not in text.lower():
            print(f"tractable psl: warning: {text}", file=sys.stderr)
    return model


def _learn_into(Model, model, args) -> None:
    """Learn the weights on the learn split (method from --learn, the program, or PSL's default), write
    OUTPUT/learned.json, and set them on ``model`` (the infer split)."""
    from ..psl.learning import learner_options

    learn_model = _load_json(Model, args.program, "learn", None, args.strict)
    method = args.learn if isinstance(args.learn, str) else (learn_model.learn_method or "StructuredPerceptron")
    options = learner_options(method, learn_model.learn_options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = learn_model.learn(method=method, **options)
    for w in caught:
        print(f"tractable psl: warning: {str(w.message).splitlines()[0]}", file=sys.stderr)
    print(
        f"learning   {res.method}: {res.status} after {res.n_iter} steps in {res.time:.3f} s "
        f"(loss {float(res.loss[-1]):.6g}; weights {', '.join(f'{w:.4g}' for w in res.weights)})"
    )
    path = _write_learned(args.program, [r.text for r in learn_model.rules], args.output)
    print(f"wrote      {path}")
    model.set_weights(res)


def _write_learned(program: str, rules, output: str) -> str:
    """``output/learned.json``: the program with ``rules`` (texts with the learned weights), its data paths made
    relative to ``output``."""
    import json

    from ..psl.config import read_json

    cfg = read_json(program)
    base = os.path.dirname(os.path.abspath(program))
    os.makedirs(output, exist_ok=True)
    out_dir = os.path.abspath(output)

    def moved(value):
        if isinstance(value, str):
            return os.path.relpath(os.path.join(base, value), out_dir)
        if isinstance(value, list):  # paths, or inline atoms (lists) that stay as they are
            return [moved(v) if isinstance(v, str) else v for v in value]
        if isinstance(value, dict):
            return {k: moved(v) for k, v in value.items()}
        return value

    for spec in cfg.get("predicates", {}).values():
        for part in ("observations", "targets", "truth"):
            if part in spec:
                spec[part] = moved(spec[part])
    cfg["rules"] = list(rules)
    path = os.path.join(output, "learned.json")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(cfg, fh, indent=4)
        fh.write("\n")
    os.replace(tmp, path)  # nothing half written
    return path


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
        model = _load_json(Model, args.program, "infer" if args.learn else args.split, args.database, args.strict)
        if args.learn or model.learn_requested:
            if args.split == "learn" and args.learn:
                raise ValueError("`--learn` learns on the learn split and infers on the infer split; drop --split.")
            _learn_into(Model, model, args)
    else:
        if args.learn:
            raise ValueError("`--learn` takes a PSL 2.4 JSON program (with its learn split); got a .psl/.data pair.")
        for path in (args.program, args.data):
            if not os.path.isfile(path):
                raise OSError(f"file not found: {path}")
        model = Model.from_data_file(args.program, args.data, database=args.database, strict=args.strict)
    options = {"eps_abs": args.eps_abs, "eps_rel": args.eps_rel, "max_iter": args.max_iter, "gap_tol": args.gap_tol}
    if args.threads is not None:
        from .._numba import set_threads

        options["parallel"] = set_threads(args.threads) or None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = model.ground()
    for w in caught:
        print(f"tractable psl: warning: {str(w.message).splitlines()[0]}", file=sys.stderr)
    if model.ignored_options:  # after grounding, so that an error stays the only line on stderr
        print(f"ignored PSL options: {', '.join(model.ignored_options)}", file=sys.stderr)
    dropped = f", {g.n_infeasible_dropped} infeasible without open atoms dropped" if g.n_infeasible_dropped else ""
    print(f"grounding  {g.n_potentials} potentials, {g.n_constraints} constraints{dropped} in {g.time:.3f} s")
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
