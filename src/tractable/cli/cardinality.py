"""``tractable cardinality``: exact inference in ``p(y) ∝ exp(theta . y + f(sum_d y_d))`` from two files.

``THETA`` holds the ``D`` unary scores and ``F`` the ``D + 1`` count scores (``-inf`` forbids a count),
each as a ``.npy`` file or a text file of numbers separated by spaces, commas or newlines (``inf`` and
``-inf`` allowed). The answer is printed as tab-separated rows, each starting with its name
(``log_partition``, ``p_on``, ``count_marginals``, ``assignment``, ``score``, ``sample``), or written to
an ``.npz`` file with ``-o``.
"""

from __future__ import annotations

import sys

import numpy as np

from ._types import integer, seed

__all__ = ["register"]

_TASKS = ("marginals", "map", "sample", "log_partition")


def register(subparsers) -> None:
    from ..cardinality import METHODS

    p = subparsers.add_parser(
        "cardinality",
        help="exact marginals, log Z, MAP or samples of a cardinality model (Tarlow et al. 2012)",
        description=__doc__.splitlines()[0],
    )
    p.add_argument("theta", metavar="THETA", help="the D unary scores (.npy or text)")
    p.add_argument("f", metavar="F", help="the D + 1 count scores, f[k] for k = 0..D (.npy or text)")
    p.add_argument("--task", choices=_TASKS, default="marginals", help="what to compute (default marginals)")
    p.add_argument(
        "--method", choices=list(METHODS), default="auto", help="convolution of the convolution tree (default auto)"
    )
    p.add_argument("--size", type=integer(minimum=0), metavar="N", help="sample: number of joint samples (default 1)")
    p.add_argument("--seed", type=seed, help="sample: random seed >= 0 (the same seed, the same samples)")
    p.add_argument("-o", "--output", metavar="OUT.npz", help="write the arrays to this .npz file instead of stdout")
    p.set_defaults(func=_run)


def _read_vector(path: str, name: str) -> np.ndarray:
    """The numbers of a ``.npy`` or text file as a 1-D float64 array; errors name the argument and file."""
    if path.lower().endswith(".npy"):
        from ..io._npz import read_npy

        try:
            arr = read_npy(path)
        except ValueError as err:
            raise ValueError(str(err).replace("`path`", f"`{name}`", 1)) from err
    else:
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read().replace(",", " ")
        except UnicodeDecodeError as err:
            raise ValueError(f"`{name}` file {path} is not UTF-8 text (nor a .npy file).") from err
        tokens = text.split()
        try:
            arr = np.array([float(t) for t in tokens])
        except ValueError as err:
            bad = next(t for t in tokens if not _is_number(t))
            raise ValueError(f"`{name}` file {path} must hold numbers only; got {bad[:40]!r}.") from err
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"`{name}` file {path} must hold real numbers; got dtype {arr.dtype}.")
    if arr.size == 0:
        raise ValueError(f"`{name}` file {path} must hold at least one number; it holds none.")
    return np.asarray(arr, dtype=np.float64).ravel()


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _row(name: str, values) -> str:
    return "\t".join([name, *(repr(float(v)) if isinstance(v, float) else str(v) for v in np.ravel(values).tolist())])


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]


def _compute(cardinality, args, theta: np.ndarray, f: np.ndarray) -> dict:
    """The arrays of the task (named as in the output)."""
    if args.task == "marginals":
        res = cardinality.marginals(theta, f, method=args.method)
        return {
            "log_partition": np.array(res.log_partition),
            "p_on": res.p_on,
            "count_marginals": res.count_marginals,
        }
    if args.task == "log_partition":
        return {"log_partition": np.array(cardinality.log_partition(theta, f, method=args.method))}
    if args.task == "map":
        res = cardinality.map_assignment(theta, f)
        return {"assignment": res.assignment, "score": np.array(res.score)}
    size = 1 if args.size is None else args.size
    return {"sample": cardinality.sample(theta, f, size=size, rng=args.seed, method=args.method)}


def _run(args) -> int:
    from .. import cardinality
    from .._count_tree import NO_CONFIGURATION
    from . import NoSolution
    from ._files import atomic_output, check_output

    if args.task != "sample" and (args.size is not None or args.seed is not None):
        flag = "--size" if args.size is not None else "--seed"
        raise ValueError(f"`{flag}` applies to --task sample only; got --task {args.task}.")
    if args.task == "map" and args.method != "auto":
        raise ValueError(f"`--method` is not used by --task map (an exact sort and scan); got {args.method}.")
    if args.output is not None:
        if not args.output.lower().endswith(".npz"):
            raise ValueError(f"`--output` must name an .npz file; got {args.output}.")
        check_output(args.output, "--output")
    theta = _read_vector(args.theta, "theta")
    f = _read_vector(args.f, "f")
    if f.size != theta.size + 1:
        raise ValueError(
            f"`f` must have D + 1 = {theta.size + 1} numbers, one per count 0..D (D = {theta.size} numbers in "
            f"{args.theta}); {args.f} holds {f.size}."
        )
    try:
        arrays = _compute(cardinality, args, theta, f)
    except ValueError as err:  # the library says so in words (a ValueError); it is a model without solution
        if NO_CONFIGURATION in str(err):
            raise NoSolution(f"{args.theta}, {args.f}: {_first_line(str(err))}") from err
        raise
    if args.output is not None:
        with atomic_output(args.output, binary=True) as fh:
            np.savez(fh, **arrays)
        print(f"wrote {', '.join(arrays)} to {args.output}", file=sys.stderr)
        return 0
    for name, values in arrays.items():
        if name == "sample":
            for row in np.atleast_2d(values):
                print(_row(name, row.astype(np.int64)))
        else:
            print(_row(name, values))
    return 0
