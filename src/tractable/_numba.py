"""The one way the library compiles kernels with numba.

``njit`` is ``numba.njit`` with ``cache=True`` (compiled code is cached on disk: next to the package
when it is writable, otherwise in numba's user cache; the ``NUMBA_CACHE_DIR`` environment variable
overrides both, which is what read-only installs and Dask workers set), ``nogil=True`` (kernels hold
no Python objects, so threads, including Dask's threaded workers, run them in parallel) and
``no_cfunc_wrapper=True`` (no C-callable wrapper is built for a kernel: nothing calls them from C, and
each wrapper costs about 10 ms of compilation).
``NUMBA_DISABLE_JIT=1`` runs every kernel as plain Python.

Python's cyclic garbage collector is paused while numba compiles (from the outermost compilation's
start to its end, restored to its earlier state): a compilation creates some 400,000 objects, and the
full collections that scan them cost 10-20% of a first call's compilation (0.4-0.5 s of the clique
kernels' 4.4 s). Loading compiled code from the cache is not a compilation and is left alone.

:func:`scalar_loops`, called first in a kernel, has LLVM optimize that kernel for size (for helpers whose loops
run over a few entries, where vectorized code only costs compilation).
"""

from __future__ import annotations

import functools
import gc

import numba
from numba.core import event, types
from numba.extending import lower_builtin, type_callable

__all__ = ["njit", "scalar_loops", "set_threads"]

#: ``numba.njit`` with the library's options; use as ``@njit`` or ``@njit(inline="always")``.
njit = functools.partial(numba.njit, cache=True, nogil=True, no_cfunc_wrapper=True)


class _PauseCollector(event.Listener):
    """Pause the garbage collector during numba's compilations (nested ones included), then restore it."""

    def __init__(self) -> None:
        self.depth = 0
        self.was_enabled = False

    def on_start(self, ev) -> None:
        if self.depth == 0:
            self.was_enabled = gc.isenabled()
            gc.disable()
        self.depth += 1

    def on_end(self, ev) -> None:
        self.depth -= 1
        if self.depth == 0 and self.was_enabled:
            gc.enable()


event.register("numba:compile", _PauseCollector())


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


def scalar_loops():
    """Nothing in Python. Called first in a kernel, it marks the compiled function ``optsize`` for LLVM.

    LLVM then optimizes the function for size: no vectorized copies of its loops (with their runtime checks
    and remainder loops; none are left in these kernels), no runtime unrolling. For loops over the unknowns of
    one term (an arity of a few) that code never runs, yet it was most of the machine code of
    :func:`tractable.hlmrf._kernels._root_multiplier` (3,200 lines of optimized IR with its Python entry point,
    compiled twice: on its own and again inside ``admm_steps``, which links it; 850 without the entry point and
    with the mark; the same iterates, bit for bit, and no slower). Only for kernels that are called, not inlined
    (an inlined body takes its caller's attributes), and never for the vectorized loops over terms.
    """


@type_callable(scalar_loops)
def _type_scalar_loops(context):
    def typer():
        return types.none

    return typer


@lower_builtin(scalar_loops)
def _lower_scalar_loops(context, builder, sig, args):
    builder.function.attributes.add("optsize")
    return context.get_dummy_value()
