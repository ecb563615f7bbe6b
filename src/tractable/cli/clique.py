"""``tractable clique``: MAP labelling of one clique with a count-based potential.

The clique comes from the paper's synthetic benchmark (``--benchmark POTTS``) or from an ``.npz``
file holding ``phi`` (n, m) and, depending on ``--potential``, ``W`` (m, m) or ``table`` (m, >= n+1).
"""

from __future__ import annotations

import json

import numpy as np

__all__ = ["register"]

_POTENTIALS = ("potts", "entropy", "makespan", "makespan2", "majority", "sum-table", "max-table")


def register(subparsers) -> None:
    """Add the ``clique`` subcommand."""
    from ..clique import METHODS

    p = subparsers.add_parser(
        "clique",
        help="MAP labelling of a clique with a cardinality-based potential",
        description=__doc__.splitlines()[0],
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--benchmark",
        metavar="KIND",
        help="a synthetic clique: POTTS, ENTROPY, MAKESPAN, MAKESPAN2, MAJ-DENSE or MAJ-SPARSE",
    )
    src.add_argument("--npz", metavar="FILE", help="an .npz file with `phi` (n, m), plus `W` or `table`")
    p.add_argument(
        "--potential",
        choices=_POTENTIALS,
        default="potts",
        help="clique potential for --npz (default potts; majority reads `W`, *-table read `table`)",
    )
    p.add_argument("--lam", type=float, default=1.0, help="potential strength (default 1.0)")
    p.add_argument("--n", type=int, default=100, help="clique size for --benchmark (default 100)")
    p.add_argument("--m", type=int, default=24, help="number of labels for --benchmark (default 24)")
    p.add_argument("--seed", type=int, default=0, help="random seed for --benchmark (default 0)")
    p.add_argument("--method", choices=list(METHODS), default="auto", help="algorithm (default auto)")
    p.add_argument(
        "--assignment-out", metavar="FILE", help="write the assignment (every node's label) to this .npy file"
    )
    p.set_defaults(func=_run)


def _load(args):
    from ..clique import Entropy, LinearMajority, Makespan, MaxPotential, Potts, SquareMakespan, SumPotential

    if args.benchmark is not None:
        from ..datasets.clique_benchmark import clique_benchmark

        return clique_benchmark(args.benchmark, n=args.n, m=args.m, lam=args.lam, rng=args.seed)
    from ..io._npz import read_npz

    try:
        data = read_npz(args.npz)
    except OSError as err:
        raise ValueError(f"`--npz` must be a readable .npz file; got {args.npz!r} ({err.strerror or err}).") from err
    except ValueError as err:
        raise ValueError(str(err).replace("`path`", "`--npz`", 1)) from err
    if "phi" not in data:
        raise ValueError(f"`--npz` file must hold an array `phi`; found {sorted(data)}.")
    need = {"majority": "W", "sum-table": "table", "max-table": "table"}.get(args.potential)
    if need is not None and need not in data:
        raise ValueError(
            f"`--potential {args.potential}` needs an array `{need}` in the .npz file; found {sorted(data)}."
        )
    make = {
        "potts": lambda: Potts(args.lam),
        "entropy": lambda: Entropy(args.lam),
        "makespan": lambda: Makespan(args.lam),
        "makespan2": lambda: SquareMakespan(args.lam),
        "majority": lambda: LinearMajority(data["W"]),
        "sum-table": lambda: SumPotential(data["table"]),
        "max-table": lambda: MaxPotential(data["table"]),
    }
    return data["phi"], make[args.potential]()


def _run(args) -> int:
    from ..clique import clique_map
    from ._files import atomic_output, check_output

    if args.assignment_out is not None:
        check_output(args.assignment_out, "--assignment-out")
    phi, pot = _load(args)
    res = clique_map(phi, pot, method=args.method)
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
