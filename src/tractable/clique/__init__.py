"""MAP inference on cliques with cardinality-based potentials (Gupta, Diwan and Sarawagi, ICML 2007).

A clique of ``n`` nodes with node log-potentials ``phi`` (n, m) and a clique potential that depends
only on the label counts; every method maximizes ``F(y) = sum_u phi[u, y_u] + C(counts(y))`` and
returns a :class:`CliqueMAPResult`.

Potentials: :class:`Potts`, :class:`Entropy`, :class:`Makespan`, :class:`SquareMakespan`,
:class:`SumPotential`, :class:`MaxPotential`, :class:`LinearMajority`, :class:`CountPotential`.

Methods: :func:`alpha_pass`, :func:`generalized_alpha_pass`, :func:`alpha_expansion`,
:func:`majority_alpha_pass`, :func:`majority_exact`, :func:`icm`, :func:`exact_clique_map`, and
:func:`clique_map`, which picks one.
"""

from __future__ import annotations

import time
from dataclasses import replace

from .._validate import check_choice
from ._result import CliqueMAPResult, check_phi, check_potential, score
from .alpha_pass import alpha_pass, generalized_alpha_pass
from .baselines import icm
from .expansion import alpha_expansion
from .majority import majority_alpha_pass, majority_exact
from .potentials import (
    CliquePotential,
    CountPotential,
    Entropy,
    LinearMajority,
    Makespan,
    MaxPotential,
    Potts,
    SquareMakespan,
    SumPotential,
)
from .reference import exact_clique_map, n_compositions

__all__ = [
    "CliqueMAPResult",
    "CliquePotential",
    "CountPotential",
    "Entropy",
    "LinearMajority",
    "METHODS",
    "Makespan",
    "MaxPotential",
    "Potts",
    "SquareMakespan",
    "SumPotential",
    "alpha_expansion",
    "alpha_pass",
    "clique_map",
    "exact_clique_map",
    "generalized_alpha_pass",
    "icm",
    "majority_alpha_pass",
    "majority_exact",
    "score",
]


def _majority(fn):
    def run(phi, potential, **options):
        if not isinstance(potential, LinearMajority):
            raise ValueError(f"`potential` must be a LinearMajority for method {fn.__name__!r}; got {potential!r}.")
        return fn(phi, potential.W, **options)

    return run


#: method name -> function ``f(phi, potential, **options)``
METHODS = {
    "alpha_pass": alpha_pass,
    "generalized_alpha_pass": generalized_alpha_pass,
    "alpha_expansion": alpha_expansion,
    "majority_alpha_pass": _majority(majority_alpha_pass),
    "majority_exact": _majority(majority_exact),
    "icm": icm,
    "exact": exact_clique_map,
}

# "auto" enumerates count vectors when there are at most this many, runs the exact majority
# solver up to this many (node, label) pairs, and generalized alpha-pass with p = 2 up to this many
# (subset, node) pairs
_AUTO_EXACT = 5_000
_AUTO_MAJORITY = 5_000
_AUTO_PAIRS = 2_000_000


def _auto(phi, potential):
    n, m = phi.shape
    fam = potential.family
    if m <= 2 or fam == "max":
        return alpha_pass(phi, potential), "alpha_pass"
    if fam == "majority" and n * m <= _AUTO_MAJORITY:
        return majority_exact(phi, potential.W), "majority_exact"
    if n_compositions(n, m) <= _AUTO_EXACT:
        return exact_clique_map(phi, potential), "exact"
    if fam == "majority":
        first = majority_alpha_pass(phi, potential.W)
        return _best([(icm(phi, potential, init=first.labels, rng=0), "majority_alpha_pass+icm"),
                      (icm(phi, potential, rng=0), "icm")])
    p = 2 if n * m * (m - 1) // 2 <= _AUTO_PAIRS else 1
    first = generalized_alpha_pass(phi, potential, p=p)
    name = "generalized_alpha_pass" if p == 2 else "alpha_pass"
    # two starts, the sweep's best labelling and ICM's local optimum, each polished by a local search
    # that only raises the score; the better one is returned
    plain = icm(phi, potential, rng=0)
    if fam == "sum":
        return _best([(alpha_expansion(phi, potential, init=first.labels), name + "+alpha_expansion"),
                      (alpha_expansion(phi, potential, init=plain.labels), "icm+alpha_expansion")])
    return _best([(icm(phi, potential, init=first.labels, rng=0), name + "+icm"), (plain, "icm")])


def _best(candidates):
    return max(candidates, key=lambda c: c[0].score)


def clique_map(phi, potential, method: str = "auto", **options) -> CliqueMAPResult:
    """MAP labelling of a clique with a count-based potential, by a chosen or automatic method.

    Parameters
    ----------
    phi : array_like of shape (n, m)
        Node log-potentials (``-inf`` forbids a label).
    potential : CliquePotential
        The clique potential.
    method : str, default "auto"
        One of ``"auto"``, ``"alpha_pass"``, ``"generalized_alpha_pass"``, ``"alpha_expansion"``,
        ``"majority_alpha_pass"``, ``"majority_exact"``, ``"icm"``, ``"exact"``. ``"auto"`` takes an
        exact method where one exists (alpha-pass for MAX potentials and ``m <= 2``, the matching
        solver for linear majority potentials, enumeration for small cliques). Otherwise it starts
        from generalized alpha-pass (``p = 2``; modified alpha-pass for majority potentials) and from
        ICM's local optimum, polishes both by a local search that only raises the score
        (alpha-expansion for SUM potentials, ICM for the others) and returns the better.
    **options
        Passed to the chosen method (not with ``"auto"``).

    Returns
    -------
    CliqueMAPResult
        With ``"auto"``, ``method`` names the steps that gave the returned labelling, e.g.
        ``"generalized_alpha_pass+alpha_expansion"``, and ``time`` covers all the steps taken.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.clique import Potts, clique_map
    >>> phi = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.2]])
    >>> res = clique_map(phi, Potts(0.5))
    >>> res.labels.tolist(), round(res.score, 6), res.method, res.exact
    ([2, 2, 2], 5.7, 'exact', True)
    """
    t0 = time.perf_counter()
    check_choice(method, "method", ["auto", *METHODS])
    if method != "auto":
        return METHODS[method](phi, potential, **options)
    if options:
        raise ValueError(f"`method`='auto' takes no options; got {sorted(options)}.")
    phi = check_phi(phi)
    potential = check_potential(potential, *phi.shape)
    res, name = _auto(phi, potential)
    return replace(res, method=name, time=time.perf_counter() - t0)
