"""NumPy ``.npz`` and ``.npy`` files read without trusting their headers.

An ``.npy`` header declares a dtype and a shape, and NumPy allocates ``prod(shape) * itemsize`` bytes
before it reads the first value: a 100-byte file (or zip member) declaring ``shape=(10**12,)`` asks for
8 TB and dies with ``MemoryError``, or, below the machine's overcommit limit, makes the process touch
gigabytes before it finds the data missing. :func:`check_npz` and :func:`check_npy` read the headers only
and refuse, with a ``ValueError`` naming the file and the member, any array that

- declares more bytes than the file (or the zip member, by its size in the archive's directory) holds
  after its header: such a file is truncated or crafted, and loading it could never succeed;
- needs, with every other array of the file, more than ``max_bytes`` (default: half the physical
  memory, :data:`tractable._validate.MEMORY_FRACTION`): a zip member's stated size is its uncompressed
  size, so a small archive that inflates to terabytes is refused too;
- has an object dtype (a pickle: never loaded).

:func:`read_npz` and :func:`read_npy` check first, then load every array eagerly with
``allow_pickle=False``. ``OSError`` is raised only when the file cannot be opened; every problem with its
content is a ``ValueError`` naming the file.
"""

from __future__ import annotations

import math
import os
import zipfile
import zlib

import numpy as np

__all__ = ["check_npy", "check_npz", "read_npy", "read_npz"]

_HEADER_LIMIT = 10_000  # bytes of an .npy header (NumPy's own default max_header_size)
#: what reading a member can raise on corrupt content, beside ValueError
_CORRUPT = (OSError, EOFError, KeyError, NotImplementedError, zipfile.BadZipFile, zlib.error, SyntaxError)


class _Refused(ValueError):
    """Why a file is refused (the reason only: the caller names the file)."""


def _line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0][:200] if text else "no detail"


def _budget(max_bytes) -> int | None:
    if max_bytes is not None:
        return int(max_bytes)
    from .._validate import MEMORY_FRACTION, physical_memory

    memory = physical_memory()
    return None if not memory else int(memory * MEMORY_FRACTION)


def _size(n: int) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def _header(fh, where: str):
    """``(shape, dtype, header bytes)`` of the ``.npy`` stream ``fh`` at its start; refused if malformed."""
    fmt = np.lib.format
    start = fh.tell()
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, _, dtype = fmt.read_array_header_1_0(fh, max_header_size=_HEADER_LIMIT)
        elif version in ((2, 0), (3, 0)):
            shape, _, dtype = fmt.read_array_header_2_0(fh, max_header_size=_HEADER_LIMIT)
        else:
            raise ValueError(f"unknown .npy format version {version}")
    except (ValueError, *_CORRUPT) as err:
        why = f"{type(err).__name__}: {_line(err)}"
        raise _Refused(f"{where} is not an .npy array with a valid header: {why}") from err
    return shape, dtype, fh.tell() - start


def _check_one(shape, dtype, header: int, stored: int, where: str) -> int:
    """The bytes the array declares, refused if more than ``stored - header`` or an object dtype."""
    if dtype.hasobject:
        raise _Refused(f"{where} holds Python objects (a pickle), which are never loaded")
    if any(not isinstance(d, int) or d < 0 for d in shape):
        raise _Refused(f"{where} declares an invalid shape {shape}")
    need = math.prod(shape) * dtype.itemsize  # Python ints: no overflow
    if need > stored - header:
        raise _Refused(
            f"{where} declares shape {shape} of {dtype} ({_size(need)}) but holds only {max(stored - header, 0)} "
            "bytes of data: truncated or crafted"
        )
    return need


def check_npz(path, *, max_bytes: int | None = None) -> list[str]:
    """Check every ``.npy`` member's header of the ``.npz`` file ``path`` without reading its data.

    Parameters
    ----------
    path : str or os.PathLike
    max_bytes : int, optional
        The most bytes all arrays together may need (default: half the physical memory).

    Returns
    -------
    list of str
        The array names (members without their ``.npy`` suffix), in archive order.

    Raises
    ------
    OSError
        The file cannot be opened (missing, a folder, unreadable).
    ValueError
        Naming the file: not a zip archive, a member that is not an ``.npy`` array, a header declaring
        more data than the member holds, object arrays, or more than ``max_bytes`` in all.
    """
    path = os.fspath(path)
    budget = _budget(max_bytes)
    with open(path, "rb") as fh:  # a missing or unreadable file stays an OSError
        magic = fh.read(6)
        names, total = [], 0
        try:
            if magic == b"\x93NUMPY":
                raise _Refused("a single .npy array, not an .npz archive")
            if not magic:
                raise _Refused("an empty file")
            if not magic.startswith(b"PK"):
                raise _Refused(f"not a zip archive: it starts with {magic!r}")
            fh.seek(0)
            with zipfile.ZipFile(fh) as zf:
                for info in zf.infolist():
                    if info.is_dir():
                        continue
                    where = f"member {info.filename!r}"
                    if budget is not None and total + info.file_size > budget:
                        raise _Refused(
                            f"{where} inflates to {_size(info.file_size)}: with the members before it, more than "
                            f"the {_size(budget)} allowed (max_bytes)"
                        )
                    with zf.open(info) as member:
                        shape, dtype, header = _header(member, where)
                    total += _check_one(shape, dtype, header, info.file_size, where)
                    names.append(info.filename.removesuffix(".npy"))
        except (ValueError, *_CORRUPT) as err:
            why = _line(err) if isinstance(err, _Refused) else f"{type(err).__name__}: {_line(err)}"
            raise ValueError(f"`path` is not a readable .npz file: {path} ({why}).") from err
    return names


def read_npz(path, *, max_bytes: int | None = None) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` file ``path``, after :func:`check_npz` (no pickles, nothing lazy).

    Raises
    ------
    OSError
        The file cannot be opened.
    ValueError
        Naming the file: any problem :func:`check_npz` finds, or corrupt data (a bad checksum, a member
        shorter than its header says).
    """
    path = os.fspath(path)
    check_npz(path, max_bytes=max_bytes)
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (ValueError, *_CORRUPT) as err:
        raise ValueError(f"`path` is not a readable .npz file: {path} ({type(err).__name__}: {_line(err)}).") from err


def check_npy(path, *, max_bytes: int | None = None) -> None:
    """Check the header of the ``.npy`` file ``path`` against its size (see :func:`check_npz`)."""
    path = os.fspath(path)
    budget = _budget(max_bytes)
    with open(path, "rb") as fh:  # a missing or unreadable file stays an OSError
        size = os.fstat(fh.fileno()).st_size
        try:
            shape, dtype, header = _header(fh, "it")
            need = _check_one(shape, dtype, header, size, "it")
            if budget is not None and need > budget:
                raise _Refused(f"it declares {_size(need)} of data, more than the {_size(budget)} allowed (max_bytes)")
        except _Refused as err:
            raise ValueError(f"`path` is not a readable .npy file: {path} ({err}).") from err


def read_npy(path, *, max_bytes: int | None = None) -> np.ndarray:
    """The array of the ``.npy`` file ``path``, after :func:`check_npy` (no pickles)."""
    path = os.fspath(path)
    check_npy(path, max_bytes=max_bytes)
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, *_CORRUPT) as err:
        raise ValueError(f"`path` is not a readable .npy file: {path} ({type(err).__name__}: {_line(err)}).") from err
