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

import inspect
import time
import warnings

import numpy as np

from .._results import ConvergenceWarning, warn_stopped
from .._validate import check_options, check_rng, resolve_method
from ..potentials import (
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
from . import _kernels
from ._result import CliqueMAPResult, renamed
from ._score import score
from ._validate import check_clique, kernel_args, tolerance
from .alpha_pass import _alpha_pass, _generalized_alpha_pass, alpha_pass, generalized_alpha_pass
from .batch import CliqueMAPBatch, alpha_pass_batch
from .enumeration import _exact_clique_map, exact_clique_map, n_compositions
from .expansion import _expansion_result, alpha_expansion
from .icm import _icm, _icm_labels, icm
from .majority import _majority_alpha_pass, _majority_exact, majority_alpha_pass, majority_exact

__all__ = [
    "CliqueMAPBatch",
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
    "alpha_pass_batch",
    "clique_map",
    "exact_clique_map",
    "generalized_alpha_pass",
    "icm",
    "majority_alpha_pass",
    "majority_exact",
    "score",
]


def _majority(fn):
    """``fn(phi, W)`` as a method ``f(phi, potential)`` that requires a :class:`LinearMajority`."""

    def run(phi, potential):
        if not isinstance(potential, LinearMajority):
            raise ValueError(f"`potential` must be a LinearMajority for method {fn.__name__!r}; got {potential!r}.")
        return fn(phi, potential.W)

    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


# "auto" enumerates count vectors when there are at most this many, runs the exact majority
# solver up to this many (node, label) pairs, sweeps label pairs only among this many labels (those
# whose single-label sweeps scored best), sweeps pairs for a CountPotential up to this many
# (subset, node) pairs, and polishes SUM potentials by alpha-expansion, from the pass's labelling
# and from ICM's (at most this many sweeps), while n * n * m (the work of a round of expansion
# moves) stays below this bound (by ICM beyond it)
_AUTO_EXACT = 5_000
_AUTO_MAJORITY = 5_000
_AUTO_TOP = 12
_AUTO_ICM_SWEEPS = 100
_AUTO_PAIRS = 2_000_000
_AUTO_EXPANSION = 100_000_000


def _auto(phi, potential, *, rng=None) -> CliqueMAPResult:
    """``clique_map(method="auto")``: validate once, then run the cores of the chosen methods."""
    t0 = time.perf_counter()
    phi, potential = check_clique(phi, potential)
    check_rng(rng)  # a bad `rng` is an error even where the route draws no random numbers
    # the route's intermediate steps (a start, the candidate that loses) may stop short or find only a
    # forbidden labelling; only the returned result's own stop is the caller's concern
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res, name = _auto_route(phi, potential, rng)
    for w in caught:
        if not issubclass(w.category, ConvergenceWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    res = renamed(res, name, t0)
    if not res.converged:
        warn_stopped(res.message, stacklevel=4)  # warn_stopped <- _auto <- clique_map <- the caller
    return res


def _auto_rng(rng) -> np.random.Generator:
    """The node orders of one ICM run of "auto": a fresh generator per run from a seed (``None``: 0,
    so that "auto" is deterministic by default), or the caller's ``Generator`` itself."""
    return check_rng(0 if rng is None else rng)


def _auto_route(phi, potential, rng=None):
    n, m = phi.shape
    fam = potential.family
    t0 = time.perf_counter()  # the returned time is replaced by that of the whole route

    def start():  # each node's best label, as icm / alpha_expansion start by default
        return np.argmax(phi, axis=1).astype(np.int64)

    def run_icm(labels):
        return _icm(phi, potential, labels, 100, _auto_rng(rng), t0)

    if m <= 2 or fam == "max":
        return _alpha_pass(phi, potential, t0), "alpha_pass"
    if fam == "majority" and n * m <= _AUTO_MAJORITY:
        return _majority_exact(phi, potential.W, potential, t0), "majority_exact"
    if n_compositions(n, m) <= _AUTO_EXACT:
        return _exact_clique_map(phi, potential, t0), "exact"
    if fam == "majority":
        first = _majority_alpha_pass(phi, potential.W, potential, t0)
        return _best([(run_icm(np.array(first.assignment)), "majority_alpha_pass+icm"), (run_icm(start()), "icm")])
    # generalized alpha-pass with p = 2, its label pairs restricted to the _AUTO_TOP labels whose
    # single-label sweeps scored best (the same labelling as all pairs on every benchmark POTTS
    # clique tried and 97% of the ENTROPY ones, at a fifth of the cost)
    kargs = kernel_args(potential, n, m)
    name = "generalized_alpha_pass"
    if kargs[0] != _kernels.KIND_GENERAL:
        first = _kernels.pair_pass_labels(phi, *kargs, _AUTO_TOP)
    elif n * m * (m - 1) // 2 <= _AUTO_PAIRS:  # a CountPotential is evaluated per candidate
        first = np.array(_generalized_alpha_pass(phi, potential, 2, t0).assignment)
    else:
        first, name = np.array(_alpha_pass(phi, potential, t0).assignment), "alpha_pass"
    # two starts, the sweep's best labelling and ICM's local optimum, each polished by a local search
    # that only raises the score; the better one is returned
    if fam == "sum" and n * n * m <= _AUTO_EXPANSION:
        # ICM run as `icm` runs it by default (same start, seed and budget), so that "auto" is never
        # worse than `icm`: expansion only raises its score
        table, tol = kargs[1], tolerance(phi, potential)
        plain = start()
        _icm_labels(phi, potential, plain, _AUTO_ICM_SWEEPS, _auto_rng(rng), kargs, tol)
        runs = []
        known = np.zeros(0, dtype=np.int64)
        for labels, label in ((first, name + "+alpha_expansion"), (plain, "icm+alpha_expansion")):
            rounds, converged, value = _kernels.expansion_search(phi, labels, table, tol, 100, known, -1, -1)
            runs.append((value, label, labels, rounds, converged))
            if converged:  # the second search stops if it reaches the first one's local optimum
                known = labels
        v, label, labels, rounds, converged = max(runs, key=lambda r: r[0])  # the first among equals
        return _expansion_result(phi, potential, labels, rounds, converged, t0), label
    return _best([(run_icm(first), name + "+icm"), (run_icm(start()), "icm")])


def _best(candidates):
    return max(candidates, key=lambda c: c[0].score)


#: method name -> function ``f(phi, potential, *, **options)``; ``clique_map`` resolves ``method`` here
METHODS = {
    "auto": _auto,
    "alpha_pass": alpha_pass,
    "generalized_alpha_pass": generalized_alpha_pass,
    "alpha_expansion": alpha_expansion,
    "majority_alpha_pass": _majority(majority_alpha_pass),
    "majority_exact": _majority(majority_exact),
    "icm": icm,
    "exact": exact_clique_map,
}

#: method name -> the names of its options (its keyword-only parameters)
_OPTIONS = {
    name: tuple(p.name for p in inspect.signature(fn).parameters.values() if p.kind is p.KEYWORD_ONLY)
    for name, fn in METHODS.items()
}


def clique_map(phi, potential, *, method: str = "auto", **options) -> CliqueMAPResult:
    """MAP labelling of a clique with a count-based potential, by a chosen or automatic method.

    Parameters
    ----------
    phi : array_like of shape (n, m)
        Node log-potentials (``-inf`` forbids a label); ``phi`` is Gupta et al.'s symbol for them.
    potential : CliquePotential
        The clique potential.
    method : str, default "auto"
        A key of :data:`METHODS`: ``"auto"``, ``"alpha_pass"``, ``"generalized_alpha_pass"``,
        ``"alpha_expansion"``, ``"majority_alpha_pass"``, ``"majority_exact"``, ``"icm"``,
        ``"exact"``. ``"auto"`` takes an exact method where one exists (alpha-pass for MAX potentials
        and ``m <= 2``, the matching solver for linear majority potentials, enumeration for small
        cliques). Otherwise it takes two starts, polishes both by a local search that only raises
        the score and returns the better. For SUM potentials the starts are generalized alpha-pass
        (``p = 2``, its label pairs restricted to the 12 labels whose single-label sweeps score
        best) and ICM's local optimum (as :func:`icm` with ``rng=0``, or with the ``rng`` option),
        and the search is alpha-expansion (ICM when ``n * n * m > 10^8``). For the others they are
        generalized alpha-pass (modified alpha-pass for majority potentials) and each node's best
        label, and the search is ICM.
    **options
        The chosen method's options: ``p`` (``"generalized_alpha_pass"``), ``init`` and
        ``max_iter`` (``"icm"``, ``"alpha_expansion"``), ``rng`` (``"icm"``, ``"auto"``),
        ``max_compositions`` (``"exact"``). The other methods take none. ``"auto"``'s ``rng`` (None,
        an int seed or a ``numpy.random.Generator``) orders the nodes of its ICM runs: a seed starts
        each run afresh, so that its ICM from each node's best label is ``icm`` with that seed, and
        ``None`` is the seed 0, so that ``"auto"`` gives the same answer every time; a ``Generator``
        is drawn from by the runs in turn.

    Returns
    -------
    CliqueMAPResult
        ``method`` is the name passed, except that ``"auto"`` names the steps that gave the returned
        labelling, e.g. ``"generalized_alpha_pass+alpha_expansion"``, and its ``time`` covers all
        the steps taken.

    Raises
    ------
    ValueError
        ``method`` is not a key of :data:`METHODS`, or an option does not apply to it (for example
        ``rng`` with a method that draws no random numbers).

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.clique import Potts, clique_map
    >>> phi = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.2]])
    >>> res = clique_map(phi, Potts(0.5))
    >>> res.assignment.tolist(), round(res.score, 6), res.method, res.exact, res.status
    ([2, 2, 2], 5.7, 'exact', True, 'optimal')
    >>> clique_map(phi, Potts(0.5), method="icm", max_iter=10, rng=0).method
    'icm'
    """
    fn = resolve_method(method, METHODS)
    applicable = _OPTIONS[method]
    # every option the user named counts as given, even when it is None
    check_options(method, {k: (True if v is None else v) for k, v in options.items()}, applicable)
    return fn(phi, potential, **options)
