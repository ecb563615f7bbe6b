"""The ``tractable`` command-line tool: one module of this package per command.

``demo`` (every capability on built-in problems), ``warmup`` (compile every kernel once),
``solve`` (UAI models: exact, loopy BP or adaptive MMP), ``clique``, ``cardinality``, ``hlmrf`` and
``psl``, each registered in ``SUBCOMMANDS``. The command line sits above every area: the areas import
nothing from it.

:func:`main` is the one error boundary of every command. Whatever a command raises becomes one line on
stderr, ``tractable COMMAND: error: ...`` naming the input and what was wrong, and an exit status:

====  ==========================================================================================
0     success: the answer was printed or written (an iterative solver that stopped before
      converging still succeeds, with a ``warning:`` line saying so)
1     the model has no solution: infeasible constraints (:class:`NoSolution`, a result whose
      ``status`` is ``"infeasible"`` or ``"error"``) or no configuration of positive probability
      (:class:`~tractable.ModelError`); the summary is printed, no output file is written
2     bad input: a missing, unreadable or malformed file, a bad option (``ValueError``,
      ``TypeError``, ``OSError``, :class:`CLIError`, argparse's errors), input too deeply nested
      (``RecursionError``) or too large for memory (``MemoryError``)
130   interrupted (Ctrl-C: ``KeyboardInterrupt``, or DuckDB's ``InterruptException`` in ``psl``)
70    an internal error (a bug): one line saying so; ``tractable --debug COMMAND ...`` re-raises
      every exception with its traceback instead
====  ==========================================================================================

No output file is written, nor a partial one left, unless the run succeeded: every file goes through
:mod:`tractable.cli._files`. Warnings are printed as one ``warning:`` line each after a successful run.

:func:`entry` is the program itself (the ``tractable`` script and ``python -m tractable.cli``): :func:`main`
run as a short-lived process, with Python's cyclic garbage collector tuned for one (see there).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import warnings

from .. import __version__

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_NO_SOLUTION",
    "EXIT_OK",
    "SUBCOMMANDS",
    "CLIError",
    "NoSolution",
    "entry",
    "main",
]

#: ``"module:function"`` of functions ``register(subparsers)`` that add a subcommand; each
#: subcommand sets ``func`` (called with the parsed arguments, returns an exit status).
SUBCOMMANDS: list[str] = [
    "tractable.cli.demo:register",
    "tractable.cli.warmup:register",
    "tractable.cli.solve:register",
    "tractable.cli.clique:register",
    "tractable.cli.cardinality:register",
    "tractable.cli.hlmrf:register",
    "tractable.cli.psl:register",
]

EXIT_OK = 0
EXIT_NO_SOLUTION = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 70  # sysexits.h EX_SOFTWARE
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C


class CLIError(Exception):
    """A user error reported as one line on stderr with exit status 2."""


class NoSolution(Exception):
    """The model has no solution (infeasible): one line on stderr, exit status 1, no output file."""


class _UsageError(Exception):
    """An argparse error (unknown option, bad value), raised instead of argparse's exit."""


class _Parser(argparse.ArgumentParser):
    """argparse with its errors raised as :class:`_UsageError` (one line, exit 2) instead of a usage block."""

    def error(self, message):  # noqa: D102 (argparse's hook)
        raise _UsageError(f"{self.prog}: error: {message} (see `{self.prog} --help`)")


def _command_of(argv) -> str | None:
    """The subcommand ``argv`` names when only ``--debug`` comes before it (else None: every subcommand is
    registered, as ``--help``, a missing or a mistyped command needs them all)."""
    for token in argv:
        if token == "--debug":
            continue
        return None if token.startswith("-") else token
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``tractable`` parser with every subcommand of :data:`SUBCOMMANDS`, or with only the one whose module
    is named ``command`` (a fresh process running one command imports no other area)."""
    parser = _Parser(prog="tractable", description="Fast inference in structured probabilistic graphical models.")
    parser.add_argument("--version", action="version", version=f"tractable {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="on an error, raise it with its Python traceback instead of printing one line",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    targets = [t for t in SUBCOMMANDS if t.split(":")[0].rsplit(".", 1)[-1] == command] if command else []
    for target in targets or SUBCOMMANDS:
        module, func = target.split(":")
        getattr(importlib.import_module(module), func)(sub)
    if targets and command not in sub.choices:  # a module registering other names: register them all
        return build_parser()
    return parser


def _one_line(text: str) -> str:
    """``text`` up to its first line break, with every other control or line-separator character escaped
    (a file name holding ``\\f`` or ``\\x1c`` must not break the one-line contract)."""
    head = text.strip().split("\n", 1)[0].rstrip()
    return "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii") for c in head)


def _first_line(err) -> str:
    text = _one_line(str(err))
    return text if text else type(err).__name__


def _inputs(args) -> str:
    """The input files named on the command line, for messages that cannot name them otherwise."""
    names = ("model", "program", "data", "theta", "f", "npz", "evid")
    found = [str(getattr(args, n)) for n in names if isinstance(getattr(args, n, None), str)]
    return ", ".join(found) if found else "the input"


def _is_interrupt(err: BaseException) -> bool:
    """Ctrl-C: Python's ``KeyboardInterrupt``; DuckDB's ``InterruptException``, or the ``RuntimeError("Query
    interrupted")`` DuckDB raises from some calls, for the query Ctrl-C stopped; or the ``SystemError`` a
    compiled (numba) kernel raises when Ctrl-C arrived while it ran ("returned a result with an exception
    set", the ``KeyboardInterrupt`` chained to it)."""
    duckdb = sys.modules.get("duckdb")
    interrupt = getattr(duckdb, "InterruptException", None) if duckdb is not None else None
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, KeyboardInterrupt) or (interrupt is not None and isinstance(err, interrupt)):
            return True
        if duckdb is not None and type(err) is RuntimeError and str(err).startswith("Query interrupted"):
            return True
        if not isinstance(err, SystemError):
            return False
        err = err.__cause__ or err.__context__
    return False


def _classify(err: BaseException, args) -> tuple[int, str]:
    """The exit status and the one line (after ``tractable COMMAND: ``) of an exception a command raised."""
    from .._errors import ModelError

    if _is_interrupt(err):
        return EXIT_INTERRUPTED, "interrupted"
    if isinstance(err, NoSolution):
        return EXIT_NO_SOLUTION, f"no solution: {_first_line(err)}"
    if isinstance(err, ModelError):  # raised by the library, which does not know the file names
        return EXIT_NO_SOLUTION, f"no solution: {_inputs(args)}: {_first_line(err)}"
    if isinstance(err, RecursionError):
        return EXIT_BAD_INPUT, f"error: {_inputs(args)}: the input is nested too deeply to read (RecursionError)"
    if isinstance(err, MemoryError):
        detail = f" ({_first_line(err)})" if str(err) else ""
        return EXIT_BAD_INPUT, f"error: {_inputs(args)}: not enough memory for this input{detail}"
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return EXIT_BAD_INPUT, f"error: {_one_line(str(err.filename))}: {_one_line(err.strerror)}"
    if isinstance(err, (CLIError, ValueError, TypeError, OSError)):
        return EXIT_BAD_INPUT, f"error: {_first_line(err)}"
    if isinstance(err, SystemExit) and err.code in (None, 0):
        return EXIT_OK, ""
    return EXIT_INTERNAL, (
        f"internal error: {type(err).__name__}: {_first_line(err)} (a bug in tractable; run `tractable --debug "
        f"{args.command} ...` for the traceback and please report it)"
    )


def _note_warnings(command: str, caught) -> None:
    for w in caught:
        print(f"{command}: warning: {_first_line(w.message)}", file=sys.stderr)


def main(argv=None) -> int:
    """Run the ``tractable`` command line on ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    Never raises (except with ``--debug``): see the module docstring for the statuses.
    """
    argv = sys.argv[1:] if argv is None else [os.fspath(a) for a in argv]
    try:
        named = _command_of(argv)
        parser = build_parser(named)
        if named == "psl":
            from .psl import program_first

            argv = program_first(argv)
        args, extra = parser.parse_known_args(argv)
        if extra:  # reported by the command's own parser: "tractable psl: error: unrecognized arguments: ..."
            commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            commands.choices.get(getattr(args, "command", None), parser).error(
                f"unrecognized arguments: {' '.join(extra)}"
            )
    except _UsageError as err:
        print(_first_line(err), file=sys.stderr)
        return EXIT_BAD_INPUT
    except SystemExit as err:  # --help and --version print and exit 0
        return err.code if isinstance(err.code, int) else (EXIT_OK if err.code is None else EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        print("tractable: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if not getattr(args, "func", None):
        print("tractable: error: a COMMAND is required (see `tractable --help`)", file=sys.stderr)
        return EXIT_BAD_INPUT
    command = f"tractable {args.command}"
    try:
        with warnings.catch_warnings(record=True) as caught:
            code = int(args.func(args) or 0)
    except BaseException as err:
        if args.debug:
            raise
        code, line = _classify(err, args)
        if line:
            print(f"{command}: {line}", file=sys.stderr)
        return code
    _note_warnings(command, caught)
    return code


class _PipeSafe:
    """Standard output or error that a reader may close early (``tractable psl ... | head -1``, also
    ``2>&1 | head``): once a write or a flush finds the pipe closed, the rest of that stream goes to the null
    device and the command runs to its end (its output files written, its exit status its own) instead of
    failing on the closed pipe."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def _gone(self) -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self._stream.fileno())
        finally:
            os.close(null)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()

    def __getattr__(self, name):
        return getattr(self._stream, name)


#: the cyclic garbage collector's thresholds while the program runs (Python's defaults: 700, 10, 10)
GC_THRESHOLDS = (100_000, 20, 20)


def entry() -> None:
    """The ``tractable`` program: :func:`main` on ``sys.argv``, then exit with its status.

    Python's cyclic garbage collector is tuned for a process that lives for one command. Importing
    numba and loading its compiled kernels creates ~10^5 long-lived objects, and every full collection
    scans them all: with the default thresholds, collections took 0.45 s of a 1.25 s ``tractable psl``
    run on CiteSeer. So a collection runs after 100,000 new container objects instead of 700 (fewer,
    each as cheap: the short-lived ones die young either way), and the objects still alive at the end
    are frozen before the interpreter exits, which skips its final full collection (the process's memory
    goes back to the system all at once). Only here, never in :func:`main`: the library and tests calling
    :func:`main` in their own process keep their collector as it is.
    """
    gc.set_threshold(*GC_THRESHOLDS)
    # a descriptor closed before the start (`>&-`) is None in Python: the null device stands in for it (a
    # print to None would go to stdout, and a check of it for a terminal would fail)
    sys.stdout = _PipeSafe(sys.stdout if sys.stdout is not None else open(os.devnull, "w"))
    sys.stderr = _PipeSafe(sys.stderr if sys.stderr is not None else open(os.devnull, "w"))
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
