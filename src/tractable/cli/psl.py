"""``tractable psl``: run a PSL program (PSL 2.4 JSON, or PSL 2.0-2.3 ``.psl`` + ``.data``)."""

from __future__ import annotations

import math
import os
import sys
import warnings

from . import _types
from ._files import check_output

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
    p.add_argument(
        "--split", default="infer", choices=["infer", "learn"], help="data split of a JSON program (default infer)"
    )
    p.add_argument(
        "--learn",
        nargs="?",
        const=True,
        default=None,
        metavar="METHOD",
        help="learn the rule weights first (METHOD: a PSL learner): on a JSON program's learn split (default the "
        "program's runtime.learn.method or StructuredPerceptron), writing OUTPUT/learned.json; with MODEL.psl "
        "MODEL.data on --learn-data (default MODEL.data; default learner MaxLikelihoodMPE, as PSL 2.x's CLI), "
        "writing OUTPUT/learned.psl; then infer; also when a JSON program sets runtime.learn",
    )
    p.add_argument(
        "--seed",
        type=_types.seed,
        metavar="N",
        help="seed of learning's random draws (search learners' locations, sampled pseudo-likelihood): the same "
        "seed, the same learned weights (default: the program's random.seed option, else 0)",
    )
    p.add_argument(
        "--learn-data",
        metavar="LEARN.data",
        help="with MODEL.psl MODEL.data --learn: the .data file to learn on (default MODEL.data itself)",
    )
    p.add_argument(
        "-o",
        "--output",
        default="inferred-predicates",
        metavar="DIR",
        help="output folder (default: inferred-predicates)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="a hard ground rule that the observed values alone violate is an error (default: dropped with a "
        "warning, as PSL drops ground rules without open atoms)",
    )
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bars for learning and inference (shown when stderr is a terminal)",
    )
    p.add_argument("--database", metavar="FILE", help="a DuckDB database file for the atom tables (default: memory)")
    # inference's ADMM options; learning's inferences keep their own (docs/psl.md), --threads excepted
    p.add_argument(
        "--eps-abs", type=_types.non_negative, help="ADMM absolute tolerance of inference (overrides the program's)"
    )
    p.add_argument(
        "--eps-rel", type=_types.non_negative, help="ADMM relative tolerance of inference (overrides the program's)"
    )
    p.add_argument(
        "--max-iter",
        type=_types.integer(minimum=1),
        help="ADMM iteration budget of inference (overrides the program's)",
    )
    p.add_argument(
        "--gap-tol",
        type=_types.positive,
        help="ADMM target of inference's certified relative gap (default: the program's reasoner.tolerance, else 5e-4)",
    )
    p.add_argument(
        "--threads",
        type=_types.integer(minimum=0),
        metavar="N",
        help="run ADMM on N threads (0: every core; default 1), a gradient learner's inferences included, and a "
        "search learner's candidates on N threads (default every core), as PSL uses every core",
    )
    p.add_argument(
        "--workers",
        type=_types.integer(minimum=1),
        metavar="N",
        help="solve on a Dask LocalCluster of N worker processes started for the run",
    )
    p.add_argument(
        "--scheduler", metavar="ADDRESS", help="solve on the running Dask cluster at ADDRESS (tcp://host:8786)"
    )
    p.add_argument(
        "--shards",
        choices=["auto", "yes", "no"],
        default="auto",
        help="with --workers/--scheduler: ground into one shard per worker (yes), here (no), or by size (auto: from "
        "10^6 groundings)",
    )
    p.add_argument(
        "--shard-dir", metavar="DIR", help="folder for the shard files, readable by every worker (default: temporary)"
    )
    p.set_defaults(func=_run)


def program_first(argv: list[str]) -> list[str]:
    """``--learn PROGRAM ...`` read as ``PROGRAM ... --learn``.

    ``--learn`` takes an optional METHOD, so ``tractable psl --learn cora.json`` would take the program for
    the learner and then miss the program; no learner's name ends in ``.json`` or ``.psl``.
    """
    for i, token in enumerate(argv[:-1]):
        if token == "--learn" and argv[i + 1].lower().endswith((".json", ".psl")):
            rest = argv[:i] + argv[i + 1 :]
            end = rest.index("--") if "--" in rest else len(rest)  # options end at "--"
            return rest[:end] + ["--learn"] + rest[end:]
    return list(argv)


def _dask(args):
    """The Dask client (and the cluster this run started) of --workers / --scheduler, or (None, None)."""
    if args.workers is None and args.scheduler is None:
        if args.shards != "auto" or args.shard_dir is not None:
            raise ValueError("`--shards` and `--shard-dir` apply to a Dask run: give `--workers` or `--scheduler`.")
        return None, None
    if args.workers is not None and args.scheduler is not None:
        raise ValueError("`--workers` starts a cluster and `--scheduler` names one: give one of them.")
    if args.threads is not None:
        raise ValueError("`--threads` runs ADMM in this process; with `--workers`/`--scheduler` the workers run it.")
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ValueError("`--workers`/`--scheduler` need Dask: pip install 'tractable[distributed]'.") from None
    if args.scheduler is not None:
        return Client(args.scheduler, timeout=30), None
    cluster = LocalCluster(
        n_workers=args.workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        memory_limit=0,
        silence_logs=40,
    )
    return Client(cluster), cluster


def _load_json(Model, path, split, database, strict=False):
    """The model of one split of a JSON program; its loading warnings on stderr (ignored options come later)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = Model.from_json(path, split=split, database=database, strict=strict)
    for w in caught:  # options PSL has and we do not are reprinted after grounding; the rest here
        if "ignored" not in str(w.message).split("\n", 1)[0].lower():
            _print_warning(w)
    return model


def _print_warning(w) -> None:
    """A warning of the library as one line on stderr, in the command line's words."""
    text = str(w.message).splitlines()[0] if str(w.message) else w.category.__name__
    print(f"tractable psl: warning: {text.replace('strict=True', '--strict')}", file=sys.stderr)


def _learn_into(Model, model, args, parallel) -> str:
    """Learn the weights on the learn split (method from --learn, the program, or PSL's default) and set
    them on ``model`` (the infer split); returns the text of OUTPUT/learned.json, written at the end."""
    from ..psl.learning import learner_options

    learn_model = _load_json(Model, args.program, "learn", None, args.strict)
    try:
        method = args.learn if isinstance(args.learn, str) else (learn_model.learn_method or "StructuredPerceptron")
        options = learner_options(method, learn_model.learn_options)
        options["rng"] = _seed(args, learn_model.learn_seed)
        _learning_threads(args, method, options, learn_model, parallel)
        options["progress"] = _progress(args)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = learn_model.learn(method=method, **options)
        for w in caught:
            _print_warning(w)
        _print_learning(res)
        text = _learned_json(args.program, [r.text for r in learn_model.rules], args.output)
    finally:
        learn_model.close()
    model.set_weights(res)
    return text


def _learning_threads(args, method: str, options: dict, learn_model, parallel) -> None:
    """A search learner scores its candidates on threads: every core (PSL's runs use every core), or
    ``--threads N``; the other learners run their inferences' ADMM on ``--threads N`` as inference does
    (``parallel``). The answer is the same whatever the number of threads."""
    from ..psl.learning import LEARNERS, _resolve

    if LEARNERS[_resolve(method)].family == "search":
        options["n_jobs"] = args.threads or -1
    elif parallel:
        options["solve_options"] = {**learn_model.solve_options, "parallel": True}


def _progress(args) -> bool:
    """Progress bars on stderr: when it is a terminal and ``--no-progress`` is not given."""
    return not args.no_progress and sys.stderr.isatty()


def _seed(args, program_seed: int | None) -> int:
    """The seed of learning's random draws: ``--seed``, else the program's ``random.seed``, else 0 (a rerun of
    the same command learns the same weights)."""
    if args.seed is None:
        return 0 if program_seed is None else program_seed
    return args.seed


def _print_learning(res) -> None:
    weights = ", ".join(f"{w:.4g}" for w in res.weights)
    if res.metric_values is not None:  # a search: candidates scored by the evaluator's metric
        losses = res.loss.tolist()  # the chosen candidate's metric (its loss is the objective)
        best = res.metric_values[losses.index(res.objective)] if res.objective in losses else math.nan
        print(
            f"learning   {res.method}: {res.status} after {res.n_iter} candidates in {res.time:.3f} s "
            f"(best {res.evaluator}: {best:.6g}; weights {weights})"
        )
        return
    print(
        f"learning   {res.method}: {res.status} after {res.n_iter} steps in {res.time:.3f} s "
        f"(objective {res.objective:.6g}; weights {weights})"
    )


def _learn_psl_into(Model, model, args, parallel) -> str:
    """PSL 2.x's ``-learn``: learn the weights on ``--learn-data`` (default the .data file given) with
    ``--learn METHOD`` (default MaxLikelihoodMPE, PSL 2.x's CLI default), set them on ``model``; returns the
    text of OUTPUT/learned.psl (the rule file with the learned weights), written at the end."""
    path = args.learn_data or args.data
    _check_files(path)
    learn_model = Model.from_data_file(args.program, path, strict=args.strict)
    try:
        method = args.learn if isinstance(args.learn, str) else "MaxLikelihoodMPE"
        options = {"rng": _seed(args, None)}
        _learning_threads(args, method, options, learn_model, parallel)
        options["progress"] = _progress(args)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = learn_model.learn(method=method, **options)
        for w in caught:
            _print_warning(w)
        _print_learning(res)
        text = "".join(r.text + "\n" for r in learn_model.rules)
    finally:
        learn_model.close()
    model.set_weights(res)
    return text


def _learned_json(program: str, rules, output: str) -> str:
    """The text of ``output/learned.json``: the program with ``rules`` (texts with the learned weights), its
    data paths made relative to ``output``."""
    import json

    from ..psl.config import read_json

    cfg = read_json(program)
    base = os.path.dirname(os.path.abspath(program))
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
    if isinstance(cfg.get("options"), dict):  # the learned program infers; `--learn` learns again
        cfg["options"] = {k: v for k, v in cfg["options"].items() if str(k).lower() != "runtime.learn"}
    return json.dumps(cfg, indent=4) + "\n"


def _write_outputs(predictions, learned: tuple | None, output: str) -> list[str]:
    """Write the learned program (``(file name, text)``, if any) and one NAME.txt per open predicate into
    ``output``, all or nothing; ``predictions`` as ``Model.infer`` or ``Model._infer_columns`` give them."""
    from ..psl._output import write_predictions
    from ._files import atomic_folder

    with atomic_folder(output) as tmp:
        names = [os.path.basename(p) for p in write_predictions(predictions, tmp)]
        if learned is not None:
            name, text = learned
            with open(os.path.join(tmp, name), "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
            names.insert(0, name)
    return [os.path.join(output, n) for n in names]


def _remove_new_database(path: str | None, existed: bool) -> None:
    """After a failed run, remove the DuckDB file (and its write-ahead log) that this run created."""
    if path is None or existed:
        return
    for name in (path, path + ".wal"):
        try:
            os.unlink(name)
        except OSError:
            pass


def _preload_solver() -> None:
    """Load the ADMM kernels (numba's cache, or compile them on a first run) on a tiny problem of the types
    a PSL program's inference uses: the same compiled signatures (``tests/psl/test_cli.py`` checks it)."""
    try:
        import numpy as np

        from ..hlmrf import HLMRF, solve
        from ..psl.model import ADMM_DEFAULTS

        # hinges and squared hinges, a categorical constraint over three atoms (the general projection a
        # functional or partial-functional rule needs) and an observed atom
        m = HLMRF(4)
        ind = np.array([0, 2, 4], np.int64)
        m.add_potentials(ind, np.array([0, 3, 1, 3], np.int64), np.array([1.0, -1.0, 1.0, -1.0]), 0.0, 1.0, False)
        m.add_potentials(ind, np.array([1, 3, 2, 3], np.int64), np.array([1.0, -1.0, -1.0, 1.0]), 0.5, 1.0, True)
        m.add_constraints(np.array([0, 3], np.int64), np.array([0, 1, 2], np.int64), np.ones(3), -1.0, "==")
        m.fix(np.array([3], np.int64), np.array([0.5]))
        solve(m, **ADMM_DEFAULTS)
    except Exception:  # pragma: no cover - the real inference reports any problem
        pass


def _run(args) -> int:
    import threading

    from ._files import check_output_folder

    check_output_folder(args.output, "--output")
    if args.database is not None:
        check_output(args.database, "--database")
    _check_inputs(args)
    # the solver's kernels load (from numba's cache) in the background while the program is read and grounded:
    # DuckDB's queries release the GIL (0.06-0.1 s of a 0.9 s run on CiteSeer)
    preload = threading.Thread(target=_preload_solver, name="tractable-preload", daemon=True)
    preload.start()
    existed = args.database is not None and os.path.exists(args.database)
    model = None
    try:
        model = _open(args)
        return _solve(args, model)
    except BaseException:
        if model is not None:
            model.close()
            model = None
        _remove_new_database(args.database, existed)
        raise
    finally:
        if model is not None:
            model.close()
        # never exit while the thread is inside numba's loader or compiler: an interpreter that shuts down
        # under it can crash (an error found early otherwise ended, rarely, in a segmentation fault)
        preload.join()


def _check_inputs(args) -> None:
    """The checks of the command line and the input files that read nothing (before any work starts)."""
    if args.data is None:
        if not args.program.lower().endswith(".json"):
            raise ValueError(
                f"`program` must be a PSL 2.4 .json file, or a .psl file followed by a .data file; got {args.program}"
            )
        if args.learn and args.split == "learn":
            raise ValueError("`--learn` learns on the learn split and infers on the infer split; drop --split.")
        if args.learn_data is not None:
            raise ValueError("`--learn-data` is for MODEL.psl MODEL.data; a JSON program has its learn split.")
        _check_files(args.program)
        return
    if args.learn_data is not None and not args.learn:
        raise ValueError("`--learn-data` names the data to learn on: it needs `--learn`.")
    _check_files(args.program, args.data)
    if args.learn and args.learn_data is not None:
        _check_files(args.learn_data)


def _open(args):
    """The model of the program (JSON, or .psl + .data), after :func:`_check_inputs`."""
    from ..psl.model import Model

    if args.data is None:
        return _load_json(Model, args.program, "infer" if args.learn else args.split, args.database, args.strict)
    return Model.from_data_file(args.program, args.data, database=args.database, strict=args.strict)


def _check_files(*paths: str) -> None:
    for path in paths:
        if os.path.isdir(path):
            raise ValueError(f"`program` must be a file; got the folder {path}.")
        if not os.path.isfile(path):
            raise FileNotFoundError(2, "file not found", path)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _print_grounding(g) -> None:
    dropped = f", {g.n_infeasible_dropped} infeasible without open atoms dropped" if g.n_infeasible_dropped else ""
    print(
        f"grounding  {_count(g.n_potentials, 'potential')}, {_count(g.n_constraints, 'constraint')}{dropped} in "
        f"{g.time:.3f} s"
    )


def _solve(args, model) -> int:
    from .._results import NO_SOLUTION_STATUSES
    from ..psl.model import Model
    from . import NoSolution

    parallel = None
    if args.threads is not None and args.workers is None and args.scheduler is None:
        from .._numba import set_threads

        # checked before learning (a search learner's candidates run on --threads too); with Dask, _dask refuses it
        parallel = set_threads(args.threads) or None
    learned = None
    if args.data is None and (args.learn or model.learn_requested):
        learned = ("learned.json", _learn_into(Model, model, args, parallel))
    elif args.data is not None and args.learn:
        learned = ("learned.psl", _learn_psl_into(Model, model, args, parallel))
    elif args.seed is not None:
        raise ValueError("`--seed` seeds weight learning: give `--learn` (or a program with runtime.learn).")
    options = {"eps_abs": args.eps_abs, "eps_rel": args.eps_rel, "max_iter": args.max_iter, "gap_tol": args.gap_tol}
    options["parallel"] = parallel
    client, cluster = _dask(args)
    try:
        if client is not None:
            options.update(
                client=client, shards={"auto": None, "yes": True, "no": False}[args.shards], shard_dir=args.shard_dir
            )
        if client is None or args.shards == "no":
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                g = model.ground()
            for w in caught:
                _print_warning(w)
            _print_grounding(g)
        if model.ignored_options:  # after grounding, so that an error stays the only line on stderr
            print(f"ignored PSL options: {', '.join(model.ignored_options)}", file=sys.stderr)
        options = {k: v for k, v in options.items() if v is not None}
        if client is None and _progress(args):
            options["progress"] = True
        # in this process: the predictions as columns, written and evaluated without importing pandas
        columns = client is None
        predictions, res = model._infer_columns(**options) if columns else model.infer(**options)
        sharded = getattr(model, "sharded_ground", None)
        if client is not None and sharded is not None:
            print(
                f"grounding  {_count(sharded.n_potentials, 'potential')}, "
                f"{_count(sharded.n_constraints, 'constraint')} into {_count(len(sharded.shard_terms), 'shard')} "
                f"in {sharded.time:.3f} s"
            )
        elif client is not None and args.shards == "auto" and model._ground is not None:  # grounded here, small
            _print_grounding(model._ground)
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    print(
        f"inference  {res.status} after {res.n_iter} iterations in {res.time:.3f} s (objective {res.objective:.6g}, "
        f"certified gap {res.gap:.3g})"
    )
    if res.status in NO_SOLUTION_STATUSES:  # no values to write: the free atoms are NaN
        raise NoSolution(f"{args.program}: {res.message}")
    for path in _write_outputs(predictions, learned, args.output):
        print(f"wrote      {path}")
    for name, metrics in (model._evaluate_columns(predictions) if columns else model.evaluate(predictions)).items():
        shown = ", ".join(
            f"{k} {v:.4f}" if isinstance(v, float) and not math.isnan(v) else f"{k} {v}" for k, v in metrics.items()
        )
        print(f"evaluation {name}: {shown}")
    return 0
