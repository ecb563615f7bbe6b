"""``tractable solve``: inference on a model file, result in the UAI output format.

The model is a UAI file (table factors only) or a factor-graph file of :mod:`tractable.io.fgjson` (JSON,
optionally gzipped: table, cardinality, recursive cardinality and clique factors), told apart by the name
(``.json``, ``.json.gz``) or else by the first bytes (``{`` or the gzip magic).

What runs is looked up in ``SOLVERS``, a table from ``(task, method)`` to the engine and the
command-line options it uses: the exact methods of :mod:`tractable.exact` (``auto``, ``enumerate``,
``variable_elimination``) for ``MAR``, ``MAP`` and ``PR``; loopy belief propagation
(:func:`tractable.bp.loopy`, ``--method lbp``: sum-product for ``MAR`` and ``PR``, where ``PR`` is the
Bethe estimate, max-product for ``MAP``); adaptive Gibbs sampling (:func:`tractable.sampling.adaptive_mmp`)
for ``MMP``. Every engine takes the evidence itself (``evidence=``) and answers over all variables.
An option the chosen engine does not use is an error, never silently dropped.
"""

from __future__ import annotations

import contextlib
import sys
import warnings

from ._types import between, fraction_below_one, integer, non_negative, positive, seed

__all__ = ["SOLVERS", "register"]

_EXACT_METHODS = ("auto", "enumerate", "variable_elimination")


def _is_factor_graph_file(path) -> bool:
    """Whether ``path`` holds the JSON factor-graph format (else it is read as UAI): by its name, else by its
    first bytes (``{`` after blanks, or a gzip stream that starts so). Unreadable files go to the UAI reader,
    which reports them."""
    import gzip
    import zlib

    if str(path).lower().endswith((".json", ".json.gz")):
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            if head == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=fh) as gz:
                    head = gz.read(256)
            else:
                head = fh.read(256)
    except (OSError, EOFError, zlib.error):
        return False
    return head.lstrip(b" \t\r\n").removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")[:1] == b"{"


def _read_model(path):
    """The model of ``tractable solve``: :func:`~tractable.io.read_factor_graph` for a factor-graph file,
    :func:`~tractable.io.read_uai` otherwise."""
    from .._errors import ModelError
    from ..io import read_factor_graph, read_uai
    from . import NoSolution

    if not _is_factor_graph_file(path):
        return read_uai(path)
    try:
        return read_factor_graph(path)
    except ModelError as err:  # a factor forbids everything; the message names the file already
        raise NoSolution(str(err)) from err


#: The largest dense table of a cardinality, recursive cardinality or clique factor (``Factor.to_table``),
#: which the exact methods need.
_DENSE_MAX = 2**24


def _check_dense(fg, evidence, model) -> None:
    """Name the first structured factor that the exact methods cannot expand into a table (after the evidence)."""
    import math

    from ..factorgraph import TableFactor

    card = fg.cardinalities
    for j, factor in enumerate(fg.factors):
        if isinstance(factor, TableFactor):
            continue
        kept = [int(card[v]) for v in factor.variables if int(v) not in evidence]
        size = math.prod(kept)
        if size > _DENSE_MAX:
            potential = f", potential {factor.potential!r}" if hasattr(factor, "potential") else ""
            raise ValueError(
                f"{model}: factor {j} (a {type(factor).__name__} over {len(factor.variables)} variables{potential}) "
                f"has no dense table for the exact methods ({size:.3g} entries over its {len(kept)} unobserved "
                "variables, more than 2**24); use --method lbp, which handles it directly."
            )


def _exact(fg, task, method, evidence, options, progress):
    from ..exact import infer

    return infer(fg, task="map" if task == "MAP" else "marginals", method=method, evidence=evidence, **options)


def _lbp(fg, task, method, evidence, options, progress):
    from ..bp import loopy

    return loopy(fg, task="map" if task == "MAP" else "marginals", evidence=evidence, progress=progress, **options)


def _mmp(fg, task, method, evidence, options, progress):
    from ..sampling import adaptive_mmp

    options = dict(options)
    return adaptive_mmp(fg, evidence=evidence, rng=options.pop("seed", None), progress=progress, **options)


#: ``(task, method) -> (run, options)``: the engine of each task and method of the command, and the
#: names of the options (as keyword arguments, the flags spelled with ``_``) that it uses.
SOLVERS: dict[tuple[str, str], tuple] = {
    **{
        (t, m): (_exact, () if m == "enumerate" else ("max_table_size",))
        for t in ("MAR", "MAP", "PR")
        for m in _EXACT_METHODS
    },
    **{(t, "lbp"): (_lbp, ("max_iter", "tol", "damping", "time_limit")) for t in ("MAR", "MAP", "PR")},
    ("MMP", "auto"): (_mmp, ("epsilon", "max_sweeps", "seed", "time_limit")),
    ("MMP", "adaptive_mmp"): (_mmp, ("epsilon", "max_sweeps", "seed", "time_limit")),
}
_OPTIONS = ("max_table_size", "max_iter", "tol", "damping", "epsilon", "max_sweeps", "seed", "time_limit")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "solve",
        help="marginals (MAR), MAP, log partition function (PR) or max-marginal decisions (MMP) of a model file",
        description="Solve a model (a UAI file, or a factor-graph file with cardinality and clique factors: "
        ".json / .json.gz) exactly, by loopy BP with --method lbp, or by adaptive Gibbs sampling for --task MMP, "
        "and print the result in the UAI output format.",
    )
    p.add_argument(
        "model",
        help="model file: UAI format (MARKOV or BAYES), or tractable's factor-graph JSON (.json, .json.gz; "
        "every factor type, see docs/bp.md)",
    )
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
        choices=sorted({m for _, m in SOLVERS}, key=lambda m: (m != "auto", m)),
        help="auto: enumeration for small models, variable elimination otherwise (MMP: adaptive Gibbs "
        "sampling) (default); enumerate, variable_elimination: exact; lbp: loopy belief propagation "
        "(approximate on graphs with cycles); adaptive_mmp: MMP's sampler",
    )
    p.add_argument(
        "--max-iter", type=integer(minimum=1), default=None, metavar="N", help="lbp: iteration budget (default 500)"
    )
    p.add_argument("--tol", type=non_negative, default=None, help="lbp: message change at convergence (default 1e-8)")
    p.add_argument("--damping", type=fraction_below_one, default=None, help="lbp: damping in [0, 1) (default 0)")
    p.add_argument(
        "--max-table-size",
        type=integer(minimum=1),
        default=None,
        metavar="N",
        help="auto and variable_elimination: largest intermediate table of variable elimination (entries; "
        "default 2**25)",
    )
    p.add_argument(
        "--epsilon",
        type=between(0.0, 0.5),
        default=None,
        help="MMP: error probability of a final decision, in (0, 0.5) (1e-5)",
    )
    p.add_argument(
        "--max-sweeps", type=integer(minimum=1), default=None, metavar="N", help="MMP: sweep budget (default 500)"
    )
    p.add_argument("--seed", type=seed, default=None, help="MMP: random seed >= 0 (the same seed, the same result)")
    p.add_argument(
        "--time-limit",
        type=positive,
        default=None,
        metavar="S",
        help="lbp and MMP: stop after S seconds with the answer so far (a warning says so)",
    )
    p.add_argument(
        "-o", "--output", metavar="OUT", help="write the result here instead of stdout (only once it is complete)"
    )
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


def _solver(task: str, method: str, given: dict):
    """The engine of ``(task, method)``; an error for a method the task has not, or an option it does not use."""
    if (task, method) not in SOLVERS:
        if task == "MMP":
            raise ValueError(f"`--task MMP` runs adaptive Gibbs sampling and takes no --method {method}.")
        methods = sorted(m for t, m in SOLVERS if t == task)
        raise ValueError(f"`--method` of --task {task} must be one of {methods}; got {method}.")
    run, uses = SOLVERS[(task, method)]
    unused = [k for k in given if k not in uses]
    if unused:
        flag = f"--{unused[0].replace('_', '-')}"
        users = [(t, m) for (t, m), (_, u) in SOLVERS.items() if unused[0] in u]
        if any(t == "MMP" for t, _ in users) and any(m == "lbp" for _, m in users):
            where, got = "`--method lbp` and `--task MMP`", f"--task {task} --method {method}"
        elif all(t == "MMP" for t, _ in users):
            where, got = "`--task MMP`", f"--task {task}"
        elif all(m == "lbp" for _, m in users):
            where, got = "`--method lbp`", f"--method {method}"
        else:  # the exact methods that use it (enumeration builds no tables)
            methods = sorted({m for _, m in users}, key=lambda m: (m != "auto", m))
            where = " and ".join(f"`--method {m}`" for m in methods)
            got = "--task MMP" if task == "MMP" else f"--method {method}"
        raise ValueError(f"`{flag}` applies to {where} only; got {got}.")
    return run


def _run(args) -> int:
    from ..io.uai import read_evidence, write_map, write_mar, write_mmp, write_pr
    from ._files import atomic_output, check_output

    given = {k: getattr(args, k) for k in _OPTIONS if getattr(args, k) is not None}
    run = _solver(args.task, args.method, given)
    if args.output is not None:
        check_output(args.output, "--output")
    fg = _read_model(args.model)
    evidence = read_evidence(args.evid, fg) if args.evid else {}
    if run is _exact:
        _check_dense(fg, evidence, args.model)
    with _warnings_as_notes():
        try:
            res = run(fg, args.task, args.method, evidence, given, sys.stderr.isatty())
        except ValueError as err:  # the engine names its argument `fg`: here it is the model file
            text = str(err)
            if not text.startswith("`fg` "):
                raise
            raise type(err)(f"{args.model}: the model {text[len('`fg` ') :]}") from err
    if args.task == "MAP":
        text = write_map(None, res.assignment)
    elif args.task == "MAR":
        text = write_mar(None, res.marginals, fg)
    elif args.task == "PR":
        text = write_pr(None, res.log_partition)
    else:
        text = write_mmp(None, res.assignment, res.marginals, fg)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    with atomic_output(args.output) as fh:
        fh.write(text)
    # the engines' messages start with the method's name ("enumerate: exact solution"); never print it twice
    note = res.message if res.message.startswith(f"{res.method}:") else f"{res.method}: {res.message}"
    print(f"wrote {args.task} result to {args.output} ({note})", file=sys.stderr)
    return 0
