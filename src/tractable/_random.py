"""The compiled random-number generator of the numba kernels, seeded from a numpy ``Generator``.

Compiled samplers draw one uniform per leaf, variable or sweep, where numba's ``np.random.random``
costs about ten times more than a xoroshiro128+ step on a two-word state. Each state is seeded from
the caller's :class:`numpy.random.Generator`, so the same ``rng`` gives the same draws, and
:func:`streams` gives independent states for chains or workers (one row each).
"""

from __future__ import annotations

import numpy as np

from ._numba import njit

__all__ = ["streams", "uniform"]

_U = np.uint64


@njit(inline="always")
def uniform(state):
    """xoroshiro128+ step: a uniform double in [0, 1) from the 2-word uint64 ``state`` (updated in place)."""
    s0 = state[0]
    s1 = state[1]
    result = s0 + s1
    s1 ^= s0
    state[0] = ((s0 << _U(55)) | (s0 >> _U(9))) ^ s1 ^ (s1 << _U(14))
    state[1] = (s1 << _U(36)) | (s1 >> _U(28))
    return float(result >> _U(11)) * (1.0 / 9007199254740992.0)


def streams(rng: np.random.Generator, n: int | None = None) -> np.ndarray:
    """Fresh xoroshiro states drawn from ``rng``.

    Parameters
    ----------
    rng : numpy.random.Generator
        The caller's generator (already normalized by ``_validate.check_rng``).
    n : int, optional
        Number of independent streams (chains, workers). None gives one state.

    Returns
    -------
    ndarray of uint64, shape (2,) or (n, 2)
        Non-zero states (xoroshiro's all-zero state is absorbing). Streams are seeded from
        independent children of ``rng``'s bit generator (``Generator.spawn``), so they do not overlap.
    """
    if n is None:
        return rng.integers(1, 2**63, size=2, dtype=np.uint64)
    children = rng.spawn(n)
    return np.stack([c.integers(1, 2**63, size=2, dtype=np.uint64) for c in children])
