"""What every fuzz target shares: the file the input is written to, and the one rule each reader must keep.

A target hands atheris a function of the fuzzer's bytes. :func:`check_reader` writes the bytes to a file
(in ``/dev/shm`` where it exists: no disk traffic at thousands of executions a second) and calls the reader
on its path. The reader must either return or raise ``ValueError`` whose message names the file; any other
exception, or a ``ValueError`` that does not say which file, propagates and atheris records the input as a
crash (in ``fuzz/crashes/`` under ``make fuzz``).
"""

from __future__ import annotations

import atexit
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
_FD, _PATH = tempfile.mkstemp(prefix="tractable-fuzz-", dir=_DIR)
os.close(_FD)


def input_path(suffix: str) -> Path:
    """The path each execution writes its input to (one per process and suffix; removed at exit)."""
    path = Path(_PATH + suffix)
    _CREATED.add(path)
    return path


_CREATED: set[Path] = {Path(_PATH)}


def _cleanup() -> None:
    for path in _CREATED:
        try:
            path.unlink()
        except OSError:
            pass


atexit.register(_cleanup)


def write(data: bytes, suffix: str) -> Path:
    path = input_path(suffix)
    path.write_bytes(data)
    return path


def check_reader(reader: Callable, path: Path) -> object:
    """Call ``reader(path)``: a result, or a ``ValueError`` naming ``path``; anything else propagates."""
    try:
        return reader(path)
    except ValueError as err:
        if str(path) not in str(err) and path.name not in str(err):
            raise AssertionError(f"{reader.__name__} raised a ValueError that does not name the file: {err}") from err
        return None


def main(test_one_input: Callable[[bytes], None]) -> None:
    """Run atheris on ``test_one_input`` with the command line's libFuzzer options."""
    import atheris

    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
