"""The library's numba set-up (`tractable._numba`): the garbage collector paused during compilations only."""

import gc

import numba
import numpy as np

import tractable._numba  # noqa: F401  (registers the listener)


def _fresh_kernel():
    # a new function object each call: numba compiles it (no cache), so the compile event fires
    @numba.njit
    def k(x):
        return np.sum(x * x)

    return k


def test_collector_is_paused_while_compiling_and_restored_after():
    seen = []

    @numba.njit
    def probe(x):
        return x + 1

    class Spy(numba.core.event.Listener):
        def on_start(self, ev):
            seen.append(("start", gc.isenabled()))

        def on_end(self, ev):
            seen.append(("end", gc.isenabled()))

    spy = Spy()
    numba.core.event.register("numba:compile", spy)
    try:
        assert gc.isenabled()
        assert probe(1) == 2
    finally:
        numba.core.event.unregister("numba:compile", spy)
    assert gc.isenabled()  # restored
    # our listener registered first: by the time the spy sees the start, collection is off
    assert ("start", False) in seen


def test_a_collector_switched_off_by_the_user_stays_off():
    gc.disable()
    try:
        assert _fresh_kernel()(np.ones(3)) == 3.0
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_failing_compilation_restores_the_collector():
    @numba.njit
    def bad(x):
        return x.no_such_attribute

    try:
        bad(1.0)
    except numba.core.errors.TypingError:
        pass
    assert gc.isenabled()
