"""The one way the library compiles kernels with numba.

``njit`` is ``numba.njit`` with ``cache=True`` (compiled code is cached on disk: next to the package
when it is writable, otherwise in numba's user cache; the ``NUMBA_CACHE_DIR`` environment variable
overrides both, which is what read-only installs and Dask workers set), ``nogil=True`` (kernels hold
no Python objects, so threads, including Dask's threaded workers, run them in parallel) and
``no_cfunc_wrapper=True`` (no C-callable wrapper is built for a kernel: nothing calls them from C, and
each wrapper costs about 10 ms of compilation).
``NUMBA_DISABLE_JIT=1`` runs every kernel as plain Python.
"""

from __future__ import annotations

import functools

import numba

__all__ = ["njit", "set_threads"]

#: ``numba.njit`` with the library's options; use as ``@njit`` or ``@njit(inline="always")``.
njit = functools.partial(numba.njit, cache=True, nogil=True, no_cfunc_wrapper=True)


def set_threads(n: int) -> bool:
    """Let numba's parallel kernels use ``n`` threads (``0``: every core numba sees); True when more than one.

    For the command line's ``--threads``: the caller passes ``parallel=True`` to the solver when this
    returns True. Raises ``ValueError`` naming ``--threads`` when ``n`` is negative or above the cores
    numba was started with (``NUMBA_NUM_THREADS``).
    """
    most = numba.config.NUMBA_NUM_THREADS
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= most:
        raise ValueError(f"`--threads` must be an integer from 0 (all) to {most} (the cores numba sees); got {n!r}.")
    n = n or most
    numba.set_num_threads(n)
    return n > 1
