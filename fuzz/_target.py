"""What every fuzz target shares: the file the input is written to, the rule each reader must keep, and
the pieces that let a target run without atheris.

A target is a module ``fuzz/fuzz_<name>.py`` with a function ``test_one_input(data: bytes)``. Under
``make fuzz`` atheris (libFuzzer) calls it with coverage-guided inputs; ``tests/test_fuzz_smoke.py``
calls it, without atheris, on seeded pseudo-random mutations of the seeds in ``fuzz/seeds/<name>/``
(:func:`mutations`). So a target imports atheris only through :func:`instrument` and :func:`main`, and
draws structure from the bytes with :class:`BytesProvider` (pure Python, the same choices under both).

:func:`check_reader` writes nothing itself: :func:`write` puts the bytes in a file (in ``/dev/shm`` where
it exists: no disk traffic at thousands of executions a second) and the reader is called on its path.
The reader must either return or raise ``ValueError`` whose message names the file; any other exception,
or a ``ValueError`` that does not say which file, propagates and the fuzzer records the input as a
crash (in ``<out>/crashes/`` under ``make fuzz``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import random
import sys
import tempfile
from collections.abc import Callable, Iterator
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


def instrument():
    """``atheris.instrument_imports`` for the library's modules, or nothing when atheris is absent."""
    try:
        import atheris
    except ImportError:
        return contextlib.nullcontext()
    return atheris.instrument_imports(include=["tractable"])


def main(test_one_input: Callable[[bytes], None]) -> None:
    """Run atheris on ``test_one_input`` with the command line's libFuzzer options."""
    import atheris

    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


class BytesProvider:
    """Structure drawn from fuzzer bytes (the methods of ``atheris.FuzzedDataProvider`` the targets use).

    Pure Python, so that a target makes the same choices under atheris and in the smoke test. Past the
    end of the data every draw returns its smallest value (0, False, an empty string).
    """

    def __init__(self, data: bytes):
        self._data = bytes(data)
        self._pos = 0

    def remaining_bytes(self) -> int:
        return len(self._data) - self._pos

    def ConsumeBytes(self, count: int) -> bytes:  # noqa: N802 (atheris's names)
        out = self._data[self._pos : self._pos + max(count, 0)]
        self._pos += len(out)
        return out

    def ConsumeIntInRange(self, lo: int, hi: int) -> int:  # noqa: N802
        span = hi - lo
        if span <= 0:
            return lo
        raw = self.ConsumeBytes((span.bit_length() + 7) // 8)
        return lo + int.from_bytes(raw, "little") % (span + 1)

    def ConsumeBool(self) -> bool:  # noqa: N802
        return bool(self.ConsumeIntInRange(0, 1))

    def ConsumeUnicode(self, count: int) -> str:  # noqa: N802
        """Up to ``count`` characters: ASCII, Latin-1 or UTF-8 (with replacement), by the first byte."""
        kind = self.ConsumeIntInRange(0, 2)
        raw = self.ConsumeBytes(count)
        if kind == 0:
            return bytes(b & 0x7F for b in raw).decode("ascii")
        if kind == 1:
            return raw.decode("latin-1")
        return raw.decode("utf-8", errors="replace")

    def PickValueInList(self, values):  # noqa: N802
        return values[self.ConsumeIntInRange(0, len(values) - 1)]


# ------------------------------------------------------------------ mutations without atheris
def seeds(name: str) -> list[bytes]:
    """The seed inputs of target ``name`` (``fuzz/seeds/<name>/``, sorted by file name)."""
    folder = Path(__file__).resolve().parent / "seeds" / name
    return [p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()] if folder.is_dir() else []


_INTERESTING = (b"\x00", b"\xff", b"\x01", b"\n", b"\r\n", b"\t", b" ", b"-", b".", b"0", b"-1", b"1e308", b"nan",
                b"inf", b"-inf", b"9" * 20, b"\xc3\x28", b"\xef\xbb\xbf", b'"', b"{", b"[", b"]", b"}", b"(", b")",
                b"/", b"..", b"*", b"?", b"%s", b"\\")  # fmt: skip


def mutate(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    """One to four random edits of ``data``: byte flips, inserts (random or interesting bytes), deletions,
    truncations, duplications of a slice, and splices with another input of ``pool``."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        pos = rng.randint(0, len(buf))
        if op == 0 and buf:  # flip bits of one byte
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1:  # insert random bytes
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 2:  # insert an interesting token
            buf[pos:pos] = rng.choice(_INTERESTING)
        elif op == 3 and buf:  # delete a slice
            end = min(len(buf), pos + rng.randint(1, 16))
            del buf[pos:end]
        elif op == 4:  # truncate
            del buf[pos:]
        elif op == 5 and buf:  # duplicate a slice
            start = rng.randrange(len(buf))
            chunk = buf[start : start + rng.randint(1, 32)]
            buf[pos:pos] = chunk * rng.randint(1, 4)
        elif pool:  # splice: our head, another input's tail
            other = rng.choice(pool)
            cut = rng.randint(0, len(other))
            buf = buf[:pos] + bytearray(other[cut:])
    return bytes(buf)


def mutations(name: str, count: int, seed: int = 0, extra: list[bytes] | None = None) -> Iterator[bytes]:
    """The seeds of target ``name`` (and ``extra``), then mutations of them: ``count`` inputs in all,
    the same for the same ``seed``."""
    pool = seeds(name) + list(extra or [])
    rng = random.Random(f"{name}:{seed}")
    for i in range(count):
        if i < len(pool):
            yield pool[i]
        elif pool:
            yield mutate(rng.choice(pool), rng, pool)
        else:
            yield bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))
