"""Synthetic cliques of Sec. 4 of Gupta, Diwan and Sarawagi (ICML 2007).

Node potentials are uniform in ``[0, 2]`` for every (node, label). The clique potentials are the
paper's six families; the paper does not state how ``lam`` is scaled with the clique size, and
with ``n = 100`` and node potentials in ``[0, 2]`` the unscaled ``lam * sum_y n_y**2`` would make
every ``lam`` near 1 trivial. Here each potential is scaled so that it equals ``lam * n`` when all
nodes share one label, which puts the contention between node and clique potentials at
``lam`` near 1, the ranges of the paper's sweeps (``[0.8, 1.2]`` for POTTS in Sec. 4.1,
``[0.7, 1.1]`` in Sec. 4.2). The same scaling, ``lam / n``, is the one the paper uses for its CoNLL
Potts cliques (``lam = 0.9 / n``).

========== ===========================================================================
kind       clique potential
========== ===========================================================================
POTTS      ``(lam / n) * sum_y n_y**2``
ENTROPY    ``(lam / log n) * sum_y n_y log n_y``
MAKESPAN   ``lam * max_y n_y``
MAKESPAN2  ``(lam / n) * max_y n_y**2``
MAJ-DENSE  ``sum_y W[a, y] n_y``, ``W`` symmetric, ``W[i, i] = lam``, ``W[i, j] ~ U[0, 2 lam]``
MAJ-SPARSE ``W`` symmetric with ``W[i, j] ~ U[0, 2 lam]`` for all ``i, j``, about 70% zeroed
========== ===========================================================================
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_choice, check_finite, check_int, check_memory, check_rng

__all__ = ["CLIQUE_KINDS", "clique_benchmark"]

#: the synthetic families of Sec. 4
CLIQUE_KINDS = ("POTTS", "ENTROPY", "MAKESPAN", "MAKESPAN2", "MAJ-DENSE", "MAJ-SPARSE")

#: fraction of zeroed weights in MAJ-SPARSE
_SPARSITY = 0.7


def _symmetric(rng, m, low, high):
    upper = rng.uniform(low, high, size=(m, m))
    return np.triu(upper) + np.triu(upper, 1).T


def clique_benchmark(kind: str, *, n: int = 100, m: int = 24, lam: float = 1.0, rng=None):
    """One random clique of the paper's synthetic benchmark.

    Parameters
    ----------
    kind : str
        One of :data:`CLIQUE_KINDS`: ``"POTTS"``, ``"ENTROPY"``, ``"MAKESPAN"``, ``"MAKESPAN2"``,
        ``"MAJ-DENSE"``, ``"MAJ-SPARSE"``.
    n : int, default 100
        Clique size (``n >= 2``).
    m : int, default 24
        Number of labels (``m >= 1``).
    lam : float, default 1.0
        Strength of the clique potential (``lam >= 0``), scaled as in the module docstring.
    rng : None, int or numpy.random.Generator
        Source of randomness.

    Returns
    -------
    phi : ndarray of shape (n, m)
        Node potentials, uniform in ``[0, 2]``.
    potential : CliquePotential
        The clique potential (``Potts``, ``Entropy``, ``Makespan``, ``SquareMakespan`` or
        ``LinearMajority``).

    Examples
    --------
    >>> from tractable.datasets.clique_benchmark import clique_benchmark
    >>> phi, pot = clique_benchmark("POTTS", n=100, m=24, lam=1.0, rng=0)
    >>> phi.shape, pot
    ((100, 24), Potts(0.01))
    """
    from ..clique import Entropy, LinearMajority, Makespan, Potts, SquareMakespan

    check_choice(kind, "kind", CLIQUE_KINDS)
    n = check_int(n, "n", minimum=2)
    m = check_int(m, "m", minimum=1)
    check_memory(n * m, 8, ("n", "m"), "node potentials")  # phi, float64
    lam = check_finite(lam, "lam")
    if lam < 0:
        raise ValueError(f"`lam` must be >= 0; got {lam}.")
    gen = check_rng(rng)
    phi = gen.uniform(0.0, 2.0, size=(n, m))
    if kind == "POTTS":
        return phi, Potts(lam / n)
    if kind == "ENTROPY":
        return phi, Entropy(lam / math.log(n))
    if kind == "MAKESPAN":
        return phi, Makespan(lam)
    if kind == "MAKESPAN2":
        return phi, SquareMakespan(lam / n)
    if kind == "MAJ-DENSE":
        W = _symmetric(gen, m, 0.0, 2.0 * lam)
        np.fill_diagonal(W, lam)
        return phi, LinearMajority(W)
    W = _symmetric(gen, m, 0.0, 2.0 * lam)
    keep = _symmetric(gen, m, 0.0, 1.0) >= _SPARSITY
    return phi, LinearMajority(W * keep)
