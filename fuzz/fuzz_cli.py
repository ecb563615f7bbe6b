"""Fuzz target: the command line's argument handling (``tractable.cli.main``) on tiny files.

The input is an argv, one argument per line (UTF-8, undecodable bytes replaced): the first line is
usually the command. An argument ``@NAME`` is replaced by the path of a fixture in a private folder:
well-formed tiny inputs of every command (``@uai``, ``@uai_binary``, ``@evid``, ``@theta``, ``@f``, ``@theta_npy``,
``@clique_npz``, ``@hlmrf``, ``@hlmrf_infeasible``, ``@json``, ``@psl``, ``@data``) and hostile ones
(``@bin`` garbage bytes, ``@empty``, ``@dir`` a folder, ``@missing``, ``@big_npz`` a header declaring
10**12 floats), and output paths (``@out``, ``@out_npy``, ``@out_npz``, ``@outdir``).

``main`` must return 0, 1, 2 or 130 and never raise; a failure (1 or 2) ends stderr with one line
``tractable[ COMMAND]: error: ...`` or ``tractable COMMAND: no solution: ...``; no temporary file
(``.*.part``) is left behind; a command exiting non-zero writes no output file. To keep each run short,
``demo`` and ``warmup`` run only with ``--help``, ``--debug`` (which re-raises by design) is dropped,
and integers between 2,000 and 10**12 (valid sizes that only make a run long) become 2000.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import re
import shutil
import tempfile

import numpy as np
from _target import instrument, main

with instrument():
    from tractable import FactorGraph, TableFactor
    from tractable.cli import main as cli_main
    from tractable.hlmrf import HLMRF
    from tractable.io import write_evidence, write_uai

CODES = {0, 1, 2, 130}
_LAST_LINE = re.compile(r"^tractable( [a-z]+)?: (error|no solution|interrupted)")


def _fixtures(folder: str) -> dict[str, str]:
    """Write the fixture files into ``folder``; returns ``@NAME`` -> path."""

    def path(name):
        return os.path.join(folder, name)

    fg = FactorGraph([2, 3, 2])
    fg.add_factor(TableFactor([0, 1], np.log([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])))
    fg.add_factor(TableFactor([1, 2], np.log([[1.0, 2.0], [3.0, 1.0], [1.0, 1.0]])))
    write_uai(path("m.uai"), fg)
    write_evidence(path("m.evid"), {0: 1})
    binary = FactorGraph([2, 2, 2])
    binary.add_factor(TableFactor([0, 1], [[1.0, 0.0], [0.0, 1.0]]))
    binary.add_factor(TableFactor([1, 2], [[0.5, 0.0], [0.0, 0.5]]))
    write_uai(path("binary.uai"), binary)
    with open(path("theta.txt"), "w") as fh:
        fh.write("0.5, -1, 2\n")
    with open(path("f.txt"), "w") as fh:
        fh.write("0 1 -inf 0.5\n")
    np.save(path("theta.npy"), np.array([0.1, 0.2, -0.3]))
    np.savez(
        path("clique.npz"), phi=np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]]), W=np.eye(2), table=np.zeros((2, 4))
    )
    model = HLMRF(3)
    model.add_potential([0, 1], [1.0, -1.0], 0.0)
    model.add_potential([2], [-1.0], 0.5, squared=True)
    model.add_constraint([0, 2], [1.0, 1.0], -1.0, "<=")
    model.save(path("hl.npz"))
    bad = HLMRF(2)
    bad.add_constraint([0, 1], [1.0, 1.0], -3.0, ">=")  # x0 + x1 >= 3 in [0, 1]^2: infeasible
    bad.save(path("hl_infeasible.npz"))
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
    import zipfile

    with zipfile.ZipFile(path("big.npz"), "w") as zf:
        zf.writestr("phi.npy", header.getvalue() + bytes(64))
    os.makedirs(path("data"))
    for name, rows in {
        "knows.txt": "a\tb\nb\tc\n",
        "targets.txt": "a\tx\nb\tx\nc\tx\n",
        "truth.txt": "a\tx\t1\nc\tx\t0\n",
    }.items():
        with open(path(os.path.join("data", name)), "w") as fh:
            fh.write(rows)
    rules = ["1.0: Knows(A, B) & Likes(A, C) -> Likes(B, C) ^2", "0.1: !Likes(A, C) ^2"]
    cfg = {
        "rules": rules,
        "predicates": {
            "Knows/2": {"observations": ["data/knows.txt"]},
            "Likes/2": {"targets": ["data/targets.txt"], "truth": ["data/truth.txt"]},
        },
    }
    with open(path("prog.json"), "w") as fh:
        json.dump(cfg, fh)
    with open(path("m.psl"), "w") as fh:
        fh.write("\n".join(rules) + "\n")
    with open(path("m.data"), "w") as fh:
        fh.write(
            "predicates:\n  Knows/2: closed\n  Likes/2: open\nobservations:\n  Knows: data/knows.txt\n"
            "targets:\n  Likes: data/targets.txt\ntruth:\n  Likes: data/truth.txt\n"
        )
    with open(path("garbage.bin"), "wb") as fh:
        fh.write(bytes(range(256)) * 4)
    open(path("empty.txt"), "w").close()
    os.makedirs(path("folder.uai"))
    return {
        "@uai": path("m.uai"), "@uai_binary": path("binary.uai"), "@evid": path("m.evid"),
        "@theta": path("theta.txt"), "@f": path("f.txt"),
        "@theta_npy": path("theta.npy"), "@clique_npz": path("clique.npz"), "@hlmrf": path("hl.npz"),
        "@hlmrf_infeasible": path("hl_infeasible.npz"), "@big_npz": path("big.npz"), "@json": path("prog.json"),
        "@psl": path("m.psl"), "@data": path("m.data"), "@bin": path("garbage.bin"), "@empty": path("empty.txt"),
        "@dir": path("folder.uai"), "@missing": path("missing.uai"),
    }  # fmt: skip


_ROOT = tempfile.mkdtemp(prefix="tractable-fuzz-cli-")
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)
_FIX = os.path.join(_ROOT, "fixtures")
os.makedirs(_FIX)
FIXTURES = _fixtures(_FIX)
_WORK = os.path.join(_ROOT, "work")  # the working folder of every run: outputs land here, emptied after
OUTPUTS = {"@out": "out.txt", "@out_npy": "out.npy", "@out_npz": "out.npz", "@outdir": "outdir"}


def argv_of(data: bytes) -> list[str] | None:
    """The argv of an input (None: an input this target does not run, see the module docstring)."""
    args = data.decode("utf-8", errors="replace").split("\n")
    if args and args[-1] == "":
        args.pop()
    out = []
    for a in args:
        if a in FIXTURES:
            a = FIXTURES[a]
        elif a in OUTPUTS:
            a = os.path.join(_WORK, OUTPUTS[a])
        elif re.fullmatch(r"[+-]?\d+", a.strip()) and 2000 < abs(int(a)) < 10**12:
            a = "2000" if int(a) > 0 else "-2000"
        if a == "--debug":
            continue
        out.append(a)
    words = [a for a in out if not a.startswith("-")]
    if words[:1] in (["demo"], ["warmup"]) and not {"-h", "--help"} & set(out):
        return None
    return out


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` in the working folder, with stdout and stderr captured; the folder emptied after."""
    import numba

    os.makedirs(_WORK, exist_ok=True)
    cwd, threads = os.getcwd(), numba.get_num_threads()
    out, err = io.StringIO(), io.StringIO()
    try:
        os.chdir(_WORK)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main(argv)
        left = sorted(os.listdir(_WORK))
    finally:
        os.chdir(cwd)
        numba.set_num_threads(threads)
        shutil.rmtree(_WORK, ignore_errors=True)
    partial = [n for n in left if n.endswith(".part")]
    assert not partial, f"temporary files left behind by {argv}: {partial}"
    if code != 0:
        written = [n for n in left if n in OUTPUTS.values() or n == "inferred-predicates"]
        assert not written, f"exit status {code} but outputs written by {argv}: {written}"
    return code, out.getvalue(), err.getvalue()


def test_one_input(data: bytes) -> None:
    argv = argv_of(data)
    if argv is None:
        return
    code, _, err = run_cli(argv)
    assert code in CODES, f"exit status {code} for {argv}: {err.strip()[-500:]}"
    if code in (1, 2):
        lines = err.strip().splitlines()
        assert lines and _LAST_LINE.match(lines[-1]), f"exit status {code} for {argv} without an error line: {err!r}"


if __name__ == "__main__":
    main(test_one_input)
