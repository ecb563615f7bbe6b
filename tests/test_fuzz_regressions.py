"""Regression tests for the inputs the fuzzers (``fuzz/``, ``make fuzz``, ``tests/test_fuzz_smoke.py``) found
to crash a reader or the command line.

Every file in ``tests/data/fuzz/`` is an input that once made a reader raise something other than the
``ValueError`` naming the file that every reader promises (or a ``ValueError`` that did not say which
file), or made ``tractable.cli.main`` break its contract. Its name says which reader (the prefix before
the first ``-``) and what went wrong. Each must now load, or raise ``ValueError`` naming the file; a
``cli-*.argv`` input (one argument per line, ``@NAME`` a fixture of ``fuzz/fuzz_cli.py``) must pass that
target's checks (exit status 0, 1, 2 or 130, one error line, no partial file).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tractable.hlmrf import HLMRF
from tractable.io import read_evidence, read_map, read_mar, read_uai
from tractable.io._npz import read_npy, read_npz

DATA = Path(__file__).parent / "data" / "fuzz"
FUZZ = Path(__file__).resolve().parent.parent / "fuzz"


def _psl_json(path):
    from tractable.psl import Model

    Model.from_json(path).close()


def _psl_rules(path):
    from tractable.psl import Model

    model = Model()
    model.add_predicate("Knows", 2, closed=True)
    model.add_predicate("Likes", 2)
    model.add_predicate("Smokes", 1)
    model.add_rules(path)


def _psl_datafile(path):
    from tractable.psl.config import read_data_file

    read_data_file(path)


def _cli(path):
    """Run the command-line target on the argv in ``path`` (it raises if the command line breaks its contract)."""
    sys.path.insert(0, str(FUZZ))
    try:
        import fuzz_cli
    finally:
        sys.path.remove(str(FUZZ))
    fuzz_cli.test_one_input(Path(path).read_bytes())


#: reader of each input, by the prefix of its name (the fuzz target that found it: fuzz/fuzz_<prefix>.py;
#: npz_arrays and npy: the array readers of tractable.io._npz, fuzzed by fuzz/fuzz_npz.py)
READERS = {
    "uai": read_uai, "evid": read_evidence, "mar": read_mar, "map": read_map, "npz": HLMRF.load,
    "npz_arrays": read_npz, "npy": read_npy, "psl_json": _psl_json, "psl_rules": _psl_rules,
    "psl_datafile": _psl_datafile, "cli": _cli,
}  # fmt: skip


def _cases():
    out = []
    for path in sorted(DATA.iterdir()):
        out.append(pytest.param(path, id=path.name))
    return out


def test_every_input_names_its_reader():
    assert DATA.is_dir() and any(DATA.iterdir())
    unknown = [p.name for p in DATA.iterdir() if p.name.split("-")[0] not in READERS]
    assert not unknown, f"inputs without a reader (name them <reader>-<what>.<ext>): {unknown}"


@pytest.mark.parametrize("path", _cases())
def test_input_loads_or_raises_a_value_error_naming_the_file(path):
    reader = READERS[path.name.split("-")[0]]
    try:
        reader(path)
    except ValueError as err:
        assert str(path) in str(err), f"the message does not name the file: {err}"
