"""A seeded, bounded fuzz run of every fuzz target, without atheris (part of ``make test``).

Each target of ``fuzz/`` (``fuzz/fuzz_<name>.py``: the file readers, the PSL data and evaluator options,
and the command line's argument handling) runs on its seeds and on deterministic pseudo-random mutations
of them (byte flips, inserts of random and interesting bytes, deletions, truncations, duplications and
splices: ``fuzz/_target.py``'s ``mutations``). A target raises only when its promise is broken (a reader
raising something other than a ``ValueError`` naming its file, the command line exiting other than 0, 1,
2 or 130 or leaving a partial file), so the test asserts that no input raises.

The counts keep the whole run to a few seconds: most targets take a fraction of a millisecond per input,
the ones that load a PSL program (DuckDB) or run a command take tens of milliseconds. ``make fuzz`` is
the unbounded, coverage-guided run. Set ``TRACTABLE_FUZZ_SMOKE_SEED`` to explore other mutations; a
failure names the input, which belongs in ``tests/data/fuzz/`` once it is fixed.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
SEED = int(os.environ.get("TRACTABLE_FUZZ_SMOKE_SEED", "0"))

#: inputs per target (seeds included): a few hundred where an input costs well under a millisecond
COUNTS = {
    "uai": 300, "evid": 300, "map": 300, "mar": 300, "npz": 300, "psl_rules": 300, "psl_datafile": 300,
    "psl_json": 150, "psl_eval": 150, "psl_data": 40, "cli": 120,
}  # fmt: skip


def _targets() -> list[str]:
    return sorted(p.stem.removeprefix("fuzz_") for p in FUZZ.glob("fuzz_*.py"))


@pytest.fixture(scope="module")
def fuzz_modules():
    sys.path.insert(0, str(FUZZ))
    try:
        yield lambda name: importlib.import_module(f"fuzz_{name}")
    finally:
        sys.path.remove(str(FUZZ))


def test_every_target_has_seeds_and_a_count():
    names = _targets()
    assert set(names) == set(COUNTS), f"targets without a count here (or counts without a target): {names}"
    for name in names:
        assert any((FUZZ / "seeds" / name).iterdir()), f"fuzz/seeds/{name}/ is empty"


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_target_keeps_its_promise_on_mutated_seeds(name, fuzz_modules):
    target = fuzz_modules(name)
    from _target import mutations

    t0 = time.perf_counter()
    for i, data in enumerate(mutations(name, COUNTS[name], seed=SEED)):
        try:
            target.test_one_input(data)
        except BaseException as err:  # any exception is the finding
            pytest.fail(
                f"fuzz target {name!r}, input {i} (seed {SEED}) broke its promise: {type(err).__name__}: {err}\n"
                f"input: {data[:400]!r}"
            )
    assert time.perf_counter() - t0 < 60, "the smoke run of one target must stay short"
