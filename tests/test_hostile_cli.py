"""Hostile input at every command of the command line: the error boundary of ``tractable.cli.main``.

Every command (``demo`` and ``warmup`` only with ``--help``: they are slow) is run on hostile input of
each class: missing files, folders instead of files, empty files, binary garbage, files of another kind
(a wrong extension), negative / zero / NaN / infinite numeric options, unknown options, Ctrl-C (the
command's run function monkeypatched to raise ``KeyboardInterrupt``, or DuckDB's interrupt), an internal
error (a ``RuntimeError``), ``RecursionError`` and ``MemoryError``, and models without a solution. Each
must give its exit status (0 success, 1 no solution, 2 bad input, 130 interrupted, 70 internal error),
one line on stderr that names the command (and, for a bad file, the file), and leave no output file and
no temporary file behind.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile

import numpy as np
import pytest

from tractable import FactorGraph, TableFactor
from tractable.cli import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_NO_SOLUTION, main
from tractable.hlmrf import HLMRF
from tractable.io import write_evidence, write_uai

# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Tiny well-formed inputs of every command, and hostile ones, in one folder; name -> path."""
    d = tmp_path_factory.mktemp("inputs")
    fg = FactorGraph([2, 3, 2])
    fg.add_factor(TableFactor([0, 1], np.log([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])))
    fg.add_factor(TableFactor([1, 2], np.log([[1.0, 2.0], [3.0, 1.0], [1.0, 1.0]])))
    write_uai(d / "m.uai", fg)
    write_evidence(d / "m.evid", {0: 1})
    zero = FactorGraph([2, 2])
    zero.add_factor(TableFactor([0, 1], [[-np.inf, -np.inf], [-np.inf, -np.inf]]))
    write_uai(d / "zero.uai", zero)  # every configuration has probability 0: no solution
    (d / "theta.txt").write_text("0.5, -1, 2\n")
    (d / "f.txt").write_text("0 1 -inf 0.5\n")
    (d / "f_none.txt").write_text("-inf -inf -inf -inf\n")  # every count forbidden: no solution
    np.savez(d / "clique.npz", phi=np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]]), W=np.eye(2))
    model = HLMRF(3)
    model.add_potential([0, 1], [1.0, -1.0], 0.0)
    model.add_potential([2], [-1.0], 0.5, squared=True)
    model.save(d / "hl.npz")
    bad = HLMRF(2)
    bad.add_constraint([0, 1], [1.0, 1.0], -3.0, ">=")  # x0 + x1 >= 3 in [0, 1]^2
    bad.save(d / "hl_infeasible.npz")
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
    with zipfile.ZipFile(d / "big.npz", "w") as zf:  # declares 10**12 floats (8 TB) over 64 bytes
        zf.writestr("phi.npy", header.getvalue() + bytes(64))
    (d / "data").mkdir()
    (d / "data" / "knows.txt").write_text("a\tb\nb\tc\n")
    (d / "data" / "targets.txt").write_text("a\tx\nb\tx\nc\tx\n")
    rules = ["1.0: Knows(A, B) & Likes(A, C) -> Likes(B, C) ^2", "0.1: !Likes(A, C) ^2"]
    preds = {"Knows/2": {"observations": ["data/knows.txt"]}, "Likes/2": {"targets": ["data/targets.txt"]}}
    (d / "prog.json").write_text(json.dumps({"rules": rules, "predicates": preds}))
    (d / "infeasible.json").write_text(
        json.dumps({"rules": [*rules, "Likes(A, C) = 1 .", "Likes(A, C) = 0 ."], "predicates": preds})
    )
    (d / "badrule.json").write_text(json.dumps({"rules": ["1: Likes(A, C) -> "], "predicates": preds}))
    (d / "m.psl").write_text("\n".join(rules) + "\n")
    (d / "m.data").write_text(
        "predicates:\n  Knows/2: closed\n  Likes/2: open\nobservations:\n  Knows: data/knows.txt\n"
        "targets:\n  Likes: data/targets.txt\n"
    )
    (d / "garbage.bin").write_bytes(bytes(range(256)) * 4)
    (d / "empty.txt").write_text("")
    (d / "folder").mkdir()
    return {p.name: str(p) for p in d.iterdir()} | {"missing": str(d / "missing.uai")}


@pytest.fixture
def out(tmp_path, monkeypatch):
    """An empty working folder (the current folder of the run: PSL writes there by default)."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip().splitlines()


def _left(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


#: command -> (its valid argv as a function of the inputs and the output folder, the output it writes)
COMMANDS = {
    "solve": lambda i, o: ["solve", i["m.uai"], "--evid", i["m.evid"], "--task", "MAR", "-o", o / "r.MAR"],
    "clique": lambda i, o: ["clique", "--npz", i["clique.npz"], "--assignment-out", o / "y.npy"],
    "cardinality": lambda i, o: ["cardinality", i["theta.txt"], i["f.txt"], "-o", o / "r.npz"],
    "hlmrf": lambda i, o: ["hlmrf", i["hl.npz"], "--no-progress", "-o", o / "x.txt"],
    "psl": lambda i, o: ["psl", i["prog.json"], "--output", o / "predictions"],
    "psl-data": lambda i, o: ["psl", i["m.psl"], i["m.data"], "--output", o / "predictions"],
}
#: command -> the argv positions of its input files (in the argv above)
FILE_SLOTS = {"solve": (1, 3), "clique": (2,), "cardinality": (1, 2), "hlmrf": (1,), "psl": (1,), "psl-data": (1, 2)}


def _assert_failed(code, want, err, command, out_folder, names=()):
    assert code == want, (code, err)
    assert len(err) == 1, f"expected one line on stderr; got {err}"
    word = {EXIT_BAD_INPUT: "error", EXIT_NO_SOLUTION: "no solution", EXIT_INTERRUPTED: "interrupted"}.get(want)
    prefix = f"tractable {command.split('-')[0]}: "
    assert err[0].startswith(prefix + (word or "internal error")), err[0]
    for name in names:
        assert name in err[0], f"the line does not name {name}: {err[0]}"
    assert _left(out_folder) == [], f"files left behind: {_left(out_folder)}"


# ----------------------------------------------------------------------------- every command succeeds


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_valid_run_writes_its_output_whole(command, inputs, out, capsys):
    code, _, err = _run(COMMANDS[command](inputs, out), capsys)
    assert code == 0, err
    assert _left(out) and not [n for n in _left(out) if n.endswith(".part") or n.startswith(".")], _left(out)


@pytest.mark.parametrize("argv", [["warmup", "--help"], ["demo", "--help"], ["--help"], ["--version"]])
def test_help_and_version_exit_0(argv, capsys):
    assert main(argv) == 0
    assert capsys.readouterr().out


# ----------------------------------------------------------------------------- bad files

BAD_FILES = {
    "missing": lambda i: i["missing"],
    "folder": lambda i: i["folder"],
    "empty": lambda i: i["empty.txt"],
    "garbage": lambda i: i["garbage.bin"],
}
#: a file of another command in each slot (a wrong extension / kind), and the big-header npz
WRONG_KIND = {"solve": "hl.npz", "clique": "m.uai", "cardinality": "clique.npz", "hlmrf": "m.uai", "psl": "m.uai"}


#: (command, slot, kind) that are valid input: an empty evidence file (no evidence), an empty rule file
EMPTY_IS_VALID = {("solve", 3, "empty"), ("psl-data", 1, "empty")}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
@pytest.mark.parametrize("command", sorted(FILE_SLOTS))
def test_bad_input_file_exits_2_naming_it(command, kind, inputs, out, capsys):
    for slot in FILE_SLOTS[command]:
        if (command, slot, kind) in EMPTY_IS_VALID:
            continue
        argv = COMMANDS[command](inputs, out)
        bad = BAD_FILES[kind](inputs)
        argv[slot] = bad
        code, _, err = _run(argv, capsys)
        _assert_failed(code, EXIT_BAD_INPUT, err, command, out, names=[os.path.basename(bad)])


@pytest.mark.parametrize("command", sorted(WRONG_KIND))
def test_a_file_of_another_kind_exits_2(command, inputs, out, capsys):
    argv = COMMANDS[command](inputs, out)
    argv[FILE_SLOTS[command][0]] = inputs[WRONG_KIND[command]]
    code, _, err = _run(argv, capsys)
    _assert_failed(code, EXIT_BAD_INPUT, err, command, out, names=[WRONG_KIND[command]])


@pytest.mark.parametrize("command", ["clique", "hlmrf"])
def test_npz_header_declaring_8_terabytes_is_refused_before_allocating(command, inputs, out, capsys):
    argv = COMMANDS[command](inputs, out)
    argv[FILE_SLOTS[command][0]] = inputs["big.npz"]
    code, _, err = _run(argv, capsys)
    _assert_failed(code, EXIT_BAD_INPUT, err, command, out, names=["big.npz", "(1000000000000,)", "8 TB"])


def test_npy_header_declaring_8_terabytes_is_refused(inputs, out, capsys, tmp_path):
    with zipfile.ZipFile(inputs["big.npz"]) as zf:
        (tmp_path / "big.npy").write_bytes(zf.read("phi.npy"))
    argv = COMMANDS["cardinality"](inputs, out)
    argv[1] = tmp_path / "big.npy"
    code, _, err = _run(argv, capsys)
    _assert_failed(code, EXIT_BAD_INPUT, err, "cardinality", out, names=["big.npy", "8 TB", "`theta`"])


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_output_into_a_folder_or_a_missing_folder_exits_2(command, inputs, out, capsys):
    for target in (out / "sub" / "missing" / "x", out):
        argv = COMMANDS[command](inputs, out)
        if command.startswith("psl"):
            if target == out:
                continue  # an existing folder is what psl writes into
            (out / "a-file").write_text("")
            target = out / "a-file"  # psl's --output must be a folder, not a file
        argv[-1] = target
        code, _, err = _run(argv, capsys)
        assert code == EXIT_BAD_INPUT and len(err) == 1, err
        assert "must" in err[0] and ("--output" in err[0] or "--assignment-out" in err[0]), err[0]
        for p in out.iterdir():
            if p.name != "a-file":
                raise AssertionError(f"left behind: {p}")
        if (out / "a-file").exists():
            (out / "a-file").unlink()


# ----------------------------------------------------------------------------- bad options

NUMERIC = {
    "solve": ["--max-iter", "--tol", "--damping", "--time-limit", "--max-table-size"],
    "clique": ["--lam"],
    "cardinality": ["--size"],
    "hlmrf": ["--rho", "--eps-abs", "--eps-rel", "--max-iter", "--gap-tol", "--time-limit", "--threads"],
    "psl": ["--eps-abs", "--eps-rel", "--max-iter", "--gap-tol", "--threads"],
}
#: (command, flag, value) that are valid (every other negative / zero / NaN / inf value is refused)
VALID = {
    ("solve", "--damping", "0"),  # no damping
    ("solve", "--tol", "0"),  # run to the iteration budget (or an exact fixed point)
    ("hlmrf", "--threads", "0"),  # every core
    ("psl", "--threads", "0"),
    ("clique", "--lam", "0"),  # no clique potential
    ("clique", "--lam", "-1"),  # a potential that rewards disagreement
    ("cardinality", "--size", "0"),  # no samples
    *((c, f, "0") for c in ("hlmrf", "psl") for f in ("--eps-abs", "--eps-rel")),  # run to the iteration budget
}
EXTRA = {"solve": ["--method", "lbp"], "cardinality": ["--task", "sample"]}


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "-inf"])
@pytest.mark.parametrize(
    "command, flag", [(c, f) for c, flags in sorted(NUMERIC.items()) for f in flags], ids=lambda x: str(x)
)
def test_negative_zero_nan_inf_options(command, flag, value, inputs, out, capsys):
    argv = [*COMMANDS[command](inputs, out), *EXTRA.get(command, []), flag, value]
    if command == "solve" and flag == "--max-table-size":
        argv[argv.index("lbp") - 1 : argv.index("lbp") + 1] = []  # an option of the exact methods
    code, _, err = _run(argv, capsys)
    if (command, flag, value) in VALID:
        assert code == 0, err
        return
    _assert_failed(code, EXIT_BAD_INPUT, err, command, out, names=[flag.lstrip("-").split("-")[0]])


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_unknown_option_exits_2_with_one_line(command, inputs, out, capsys):
    code, _, err = _run([*COMMANDS[command](inputs, out), "--nope"], capsys)
    _assert_failed(code, EXIT_BAD_INPUT, err, command, out, names=["--nope"])


def test_no_command_and_bad_command_exit_2(capsys):
    assert main([]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.strip().splitlines() == [
        "tractable: error: a COMMAND is required (see `tractable --help`)"
    ]
    assert main(["nope"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tractable: error: argument COMMAND: invalid choice: 'nope'"), err


def test_control_characters_in_a_file_name_stay_on_one_line(out, capsys):
    code, _, err = _run(["solve", "no\x0csuch\u2028file\rhere.uai", "--task", "MAR"], capsys)
    assert code == EXIT_BAD_INPUT and len(err) == 1, err
    assert "no\\x0csuch\\u2028file\\rhere.uai" in err[0]


# ----------------------------------------------------------------------------- no solution


@pytest.mark.parametrize(
    "command, argv",
    [
        ("solve", lambda i, o: ["solve", i["zero.uai"], "--task", "MAR", "-o", o / "r.MAR"]),
        ("cardinality", lambda i, o: ["cardinality", i["theta.txt"], i["f_none.txt"], "-o", o / "r.npz"]),
        ("hlmrf", lambda i, o: ["hlmrf", i["hl_infeasible.npz"], "--no-progress", "-o", o / "x.txt"]),
        ("hlmrf", lambda i, o: ["hlmrf", i["hl_infeasible.npz"], "--method", "highs", "-o", o / "x.npy"]),
        ("psl", lambda i, o: ["psl", i["infeasible.json"], "--output", o / "predictions"]),
    ],
    ids=["solve-zero-partition", "cardinality-no-count", "hlmrf-admm", "hlmrf-highs", "psl"],
)
def test_a_model_without_solution_exits_1_and_writes_nothing(command, argv, inputs, out, capsys):
    code, _, err = _run(argv(inputs, out), capsys)
    _assert_failed(code, EXIT_NO_SOLUTION, err, command, out)


def test_an_existing_output_survives_a_failed_run(inputs, out, capsys):
    (out / "x.txt").write_text("keep me\n")
    code, _, err = _run(["hlmrf", inputs["hl_infeasible.npz"], "--no-progress", "-o", out / "x.txt"], capsys)
    assert code == EXIT_NO_SOLUTION
    assert (out / "x.txt").read_text() == "keep me\n" and _left(out) == ["x.txt"]


# ----------------------------------------------------------------------------- Ctrl-C, internal errors

MODULES = {"solve": "solve", "clique": "clique", "cardinality": "cardinality", "hlmrf": "hlmrf", "psl": "psl"}


def _raiser(exc):
    def run(args):
        raise exc

    return run


@pytest.mark.parametrize(
    "exc, want, words",
    [
        (KeyboardInterrupt(), EXIT_INTERRUPTED, ["interrupted"]),
        (RuntimeError("boom"), EXIT_INTERNAL, ["internal error: RuntimeError: boom", "--debug"]),
        (RecursionError("maximum recursion depth exceeded"), EXIT_BAD_INPUT, ["nested too deeply"]),
        (MemoryError(), EXIT_BAD_INPUT, ["not enough memory"]),
        (OSError(28, "No space left on device", "x.txt"), EXIT_BAD_INPUT, ["x.txt: No space left on device"]),
        (IndexError("index 3 is out of bounds"), EXIT_INTERNAL, ["internal error: IndexError"]),
    ],
    ids=["ctrl-c", "internal", "recursion", "memory", "oserror", "indexerror"],
)
@pytest.mark.parametrize("command", sorted(MODULES))
def test_exceptions_become_one_line_and_an_exit_status(command, exc, want, words, inputs, out, capsys, monkeypatch):
    import importlib

    module = importlib.import_module(f"tractable.cli.{MODULES[command]}")
    monkeypatch.setattr(module, "_run", _raiser(exc))
    code, _, err = _run(COMMANDS[command](inputs, out), capsys)
    assert code == want, err
    assert len(err) == 1 and err[0].startswith(f"tractable {command}: "), err
    for w in words:
        assert w in err[0], err[0]


def test_ctrl_c_inside_a_compiled_kernel_exits_130(inputs, out, capsys, monkeypatch):
    """numba turns a KeyboardInterrupt raised while a kernel runs into a SystemError chained to it."""
    import tractable.cli.hlmrf as hlmrf

    def kernel_interrupted(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as err:
            raise SystemError("CPUDispatcher(<function f>) returned a result with an exception set") from err

    monkeypatch.setattr(hlmrf, "_run", kernel_interrupted)
    code, _, err = _run(COMMANDS["hlmrf"](inputs, out), capsys)
    assert code == EXIT_INTERRUPTED and err == ["tractable hlmrf: interrupted"], err


def test_debug_reraises_with_the_traceback(inputs, out, monkeypatch):
    import tractable.cli.psl as psl

    monkeypatch.setattr(psl, "_run", _raiser(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        main(["--debug", "psl", inputs["prog.json"]])
    with pytest.raises(FileNotFoundError):
        main(["--debug", "solve", inputs["missing"], "--task", "MAR"])


@pytest.mark.parametrize("kind", ["InterruptException", "RuntimeError"])
def test_duckdb_interrupt_during_psl_exits_130(kind, inputs, out, capsys, monkeypatch):
    duckdb = pytest.importorskip("duckdb")
    from tractable.psl.model import Model

    def interrupted(self, *args, **kwargs):  # what DuckDB raises from a query stopped by Ctrl-C (both seen)
        if kind == "RuntimeError":
            raise RuntimeError("Query interrupted")
        raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")

    monkeypatch.setattr(Model, "ground", interrupted)
    code, _, err = _run([*COMMANDS["psl"](inputs, out), "--database", out / "atoms.db"], capsys)
    assert code == EXIT_INTERRUPTED and err == ["tractable psl: interrupted"], err
    assert _left(out) == [], _left(out)  # the database this run created is gone too


def test_ctrl_c_while_writing_leaves_no_partial_file(inputs, out, capsys, monkeypatch):
    def half_then_interrupt(fh, x, fmt=None):
        fh.write("0.5\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savetxt", half_then_interrupt)
    code, _, err = _run(COMMANDS["hlmrf"](inputs, out), capsys)
    assert code == EXIT_INTERRUPTED and err == ["tractable hlmrf: interrupted"]
    assert _left(out) == []


def test_ctrl_c_while_writing_psl_predictions_leaves_no_folder(inputs, out, capsys, monkeypatch):
    import tractable.psl._output as output

    real = output.write_predictions

    def one_then_interrupt(predictions, directory, **kwargs):
        real(predictions, directory, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(output, "write_predictions", one_then_interrupt)
    code, _, err = _run(COMMANDS["psl"](inputs, out), capsys)
    assert code == EXIT_INTERRUPTED and _left(out) == [], (err, _left(out))


def test_a_failed_psl_run_removes_the_database_it_created(inputs, out, capsys):
    argv = ["psl", inputs["badrule.json"], "--database", out / "atoms.db", "--output", out / "predictions"]
    code, _, err = _run(argv, capsys)
    _assert_failed(code, EXIT_BAD_INPUT, err, "psl", out)
    (out / "kept.db").write_text("")  # a database that existed before the run is the user's: kept
    argv[3] = out / "kept.db"
    assert _run(argv, capsys)[0] == EXIT_BAD_INPUT
    assert _left(out) == ["kept.db"]


def test_warnings_are_one_line_each(inputs, out, capsys):
    code, _, err = _run(["hlmrf", inputs["hl.npz"], "--no-progress", "--max-iter", "1"], capsys)
    assert code == 0  # the answer so far, with a warning saying so
    assert err and all(re.match(r"tractable hlmrf: warning: ", line) for line in err), err
