"""``tractable clique``: MAP labelling of one clique with a count-based potential.

The clique comes from the paper's synthetic benchmark (``--benchmark POTTS``, with ``--n``, ``--m``,
``--seed``) or from an ``.npz`` file holding ``phi`` (n, m) and, depending on ``--potential``, ``W`` (m, m)
or ``table`` (m, >= n+1). An option the chosen source does not use is an error.
"""

from __future__ import annotations

import json

import numpy as np

from ._types import finite, integer, seed

__all__ = ["register"]

_POTENTIALS = ("potts", "entropy", "makespan", "makespan2", "majority", "sum-table", "max-table")
#: the potentials of ``--npz`` that read their parameters from the file, not from ``--lam``
_FROM_FILE = {"majority": "W", "sum-table": "table", "max-table": "table"}
#: ``--benchmark``'s options and their defaults
_BENCHMARK_DEFAULTS = {"n": 100, "m": 24, "seed": 0}


def register(subparsers) -> None:
    """Add the ``clique`` subcommand."""
    from ..clique import METHODS
    from ..datasets.clique_benchmark import CLIQUE_KINDS

    p = subparsers.add_parser(
        "clique",
        help="MAP labelling of a clique with a cardinality-based potential",
        description=__doc__.splitlines()[0],
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--benchmark",
        metavar="KIND",
        type=str.upper,
        choices=CLIQUE_KINDS,
        help=f"a synthetic clique: {', '.join(CLIQUE_KINDS[:-1])} or {CLIQUE_KINDS[-1]} (any case)",
    )
    src.add_argument("--npz", metavar="FILE", help="an .npz file with `phi` (n, m), plus `W` or `table`")
    # the options of one source default to None (not given), so that one given with the other is an error
    p.add_argument(
        "--potential",
        choices=_POTENTIALS,
        help="clique potential for --npz (default potts; majority reads `W`, *-table read `table`)",
    )
    p.add_argument(
        "--lam",
        type=finite,
        help="potential strength (default 1.0; >= 0 for --benchmark); not for --potential majority or *-table",
    )
    p.add_argument("--n", type=integer(minimum=2), help="clique size for --benchmark (>= 2, default 100)")
    p.add_argument("--m", type=integer(minimum=1), help="number of labels for --benchmark (>= 1, default 24)")
    p.add_argument("--seed", type=seed, help="random seed for --benchmark (>= 0, default 0)")
    p.add_argument("--method", choices=list(METHODS), default="auto", help="algorithm (default auto)")
    p.add_argument(
        "--assignment-out", metavar="FILE", help="write the assignment (every node's label) to this .npy file"
    )
    p.set_defaults(func=_run)


def _check_options(args) -> None:
    """Refuse an option that the chosen source (``--benchmark`` or ``--npz``) does not use."""
    if args.benchmark is not None:
        if args.potential is not None:
            raise ValueError(
                f"`--potential` applies to `--npz` only (--benchmark {args.benchmark} sets its own); "
                f"got --potential {args.potential}."
            )
        if args.lam is not None and args.lam < 0:
            raise ValueError(f"`--lam` must be >= 0 with --benchmark; got {args.lam}.")
        return
    for name in _BENCHMARK_DEFAULTS:
        if getattr(args, name) is not None:
            raise ValueError(f"`--{name}` applies to `--benchmark` only; got --npz {args.npz}.")
    if args.lam is not None and args.potential in _FROM_FILE:
        raise ValueError(
            f"`--lam` does not apply to --potential {args.potential} (it reads `{_FROM_FILE[args.potential]}` "
            f"from the .npz file); got --lam {args.lam}."
        )


def _load(args):
    from ..clique import Entropy, LinearMajority, Makespan, MaxPotential, Potts, SquareMakespan, SumPotential

    lam = 1.0 if args.lam is None else args.lam
    if args.benchmark is not None:
        from ..datasets.clique_benchmark import clique_benchmark

        given = {
            k: default if getattr(args, k) is None else getattr(args, k) for k, default in _BENCHMARK_DEFAULTS.items()
        }
        return clique_benchmark(args.benchmark, n=given["n"], m=given["m"], lam=lam, rng=given["seed"])
    from ..io._npz import read_npz

    try:
        data = read_npz(args.npz)
    except OSError as err:
        raise ValueError(f"`--npz` must be a readable .npz file; got {args.npz!r} ({err.strerror or err}).") from err
    except ValueError as err:
        raise ValueError(str(err).replace("`path`", "`--npz`", 1)) from err
    if "phi" not in data:
        raise ValueError(f"`--npz` file must hold an array `phi`; found {sorted(data)}.")
    potential = args.potential or "potts"
    need = _FROM_FILE.get(potential)
    if need is not None and need not in data:
        raise ValueError(f"`--potential {potential}` needs an array `{need}` in the .npz file; found {sorted(data)}.")
    make = {
        "potts": lambda: Potts(lam),
        "entropy": lambda: Entropy(lam),
        "makespan": lambda: Makespan(lam),
        "makespan2": lambda: SquareMakespan(lam),
        "majority": lambda: LinearMajority(data["W"]),
        "sum-table": lambda: SumPotential(data["table"]),
        "max-table": lambda: MaxPotential(data["table"]),
    }
    return data["phi"], make[potential]()


def _run(args) -> int:
    from ..clique import clique_map
    from ._files import atomic_output, check_output

    _check_options(args)
    if args.assignment_out is not None:
        check_output(args.assignment_out, "--assignment-out")
    phi, pot = _load(args)
    try:
        res = clique_map(phi, pot, method=args.method)
    except ValueError as err:  # a method for another family of potentials: name the flags, not `potential`
        text = str(err)
        if not text.startswith("`potential` must be a"):
            raise
        source = f"--benchmark {args.benchmark}" if args.benchmark else f"--potential {args.potential or 'potts'}"
        raise ValueError(
            f"`--method {args.method}` does not apply to {source}: the clique potential {text[len('`potential` ') :]}"
        ) from err
    if args.assignment_out is not None:
        with atomic_output(args.assignment_out, binary=True) as fh:
            np.save(fh, np.asarray(res.assignment))
    counts = np.bincount(res.assignment, minlength=np.shape(phi)[1])
    print(
        json.dumps(
            {
                "method": res.method,
                "exact": res.exact,
                "score": res.score,
                "node_score": res.node_score,
                "clique_score": res.clique_score,
                "time_s": res.time,
                "n_iter": res.n_iter,
                "converged": res.converged,
                "status": res.status,
                "message": res.message,
                "label_counts": counts.tolist(),
            },
            indent=1,
        )
    )
    return 0
