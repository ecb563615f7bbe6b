"""The one way the library compiles kernels with numba.

``njit`` is ``numba.njit`` with ``cache=True`` (compiled code is cached on disk: next to the package
when it is writable, otherwise in numba's user cache; the ``NUMBA_CACHE_DIR`` environment variable
overrides both, which is what read-only installs and Dask workers set) and ``nogil=True`` (kernels hold
no Python objects, so threads, including Dask's threaded workers, run them in parallel).
``NUMBA_DISABLE_JIT=1`` runs every kernel as plain Python.
"""

from __future__ import annotations

import functools

import numba

__all__ = ["njit"]

#: ``numba.njit`` with the library's options; use as ``@njit`` or ``@njit(inline="always")``.
njit = functools.partial(numba.njit, cache=True, nogil=True)
