"""Every file the command line writes goes through here: checked up front, written whole or not at all.

:func:`check_output` runs before a command does any work, so that a path that can never be written (a
folder, a missing folder) is refused in a second, not after an hour of inference. :func:`atomic_output`
then writes the file under a temporary name in the same folder and renames it over the destination
only when the writer finished without error: a reader of the destination sees the old file or the
whole new one, never half of one, and a run that fails or is interrupted leaves nothing behind.
:func:`atomic_folder` does the same for a set of files written into one folder (PSL's predictions).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import IO

__all__ = ["atomic_folder", "atomic_output", "check_output", "check_output_folder"]


def _mode_for(path: str) -> int:
    """The permission bits of a new file at ``path``: those of the file it replaces, else 0o666 less umask."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def check_output(path: str, flag: str) -> str:
    """Refuse an output path that can never be written; returns it (as a ``str``).

    Raises
    ------
    ValueError
        ``path`` is empty, a folder, or in a folder that does not exist; the message names ``flag``.
    """
    path = os.fspath(path)
    if not path:
        raise ValueError(f"`{flag}` must name a file; got an empty name.")
    if "\0" in path:
        raise ValueError(f"`{flag}` must name a file; got a name with a NUL byte: {path!r}.")
    if os.path.isdir(path):
        raise ValueError(f"`{flag}` must name a file; got the folder {path}.")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"`{flag}` must be in an existing folder; got {path} (no folder {folder}).")
    return path


def check_output_folder(path: str, flag: str) -> str:
    """Refuse an output folder that can never be created: an existing file, or a NUL byte in its name."""
    path = os.fspath(path)
    if not path:
        raise ValueError(f"`{flag}` must name a folder; got an empty name.")
    if "\0" in path:
        raise ValueError(f"`{flag}` must name a folder; got a name with a NUL byte: {path!r}.")
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"`{flag}` must name a folder; got the file {path}.")
    return path


@contextlib.contextmanager
def atomic_output(path: str, *, binary: bool = False) -> Iterator[IO]:
    """An open file whose content replaces ``path`` only if the ``with`` block ends without an exception.

    The file is created under a hidden temporary name in ``path``'s folder (so the final rename stays on
    one file system and is atomic), flushed and synced, given the permissions a plain ``open`` would
    give (or those of the file it replaces), then renamed to ``path``. On any exception, including
    ``KeyboardInterrupt``, the temporary file is removed and ``path`` is left as it was.

    Parameters
    ----------
    path : str
        The destination (check it first with :func:`check_output`).
    binary : bool, default False
        Open in ``"wb"`` (NumPy writers) instead of UTF-8 text with ``"\\n"`` line ends.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".part", dir=folder)
    try:
        if binary:
            fh = os.fdopen(fd, "wb")
        else:
            fh = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_folder(folder: str) -> Iterator[str]:
    """A temporary folder near ``folder``; its files are moved into ``folder`` when the block succeeds.

    Write every file of the set into the yielded folder (made in the nearest existing ancestor of
    ``folder``, so the renames stay on one file system); on success ``folder`` (and any missing parent)
    is created and
    each file is renamed into it (each rename atomic, an existing file of the same name replaced); on any
    exception the temporary folder and everything in it are removed and ``folder`` is untouched.
    """
    folder = os.fspath(folder)
    parent = os.path.dirname(os.path.abspath(folder))
    while not os.path.isdir(parent):  # the nearest existing folder: nothing is created before success
        parent = os.path.dirname(parent)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(folder))}.", suffix=".part", dir=parent)
    try:
        yield tmp
        os.makedirs(folder, exist_ok=True)
        for name in sorted(os.listdir(tmp)):
            src = os.path.join(tmp, name)
            os.chmod(src, _mode_for(os.path.join(folder, name)))
            os.replace(src, os.path.join(folder, name))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
