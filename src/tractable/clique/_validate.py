"""Argument checks of the clique-MAP functions, and the validated input as the kernels take it.

Every public function of :mod:`tractable.clique` runs these once, up front; the algorithms' cores
(``alpha_pass._alpha_pass``, ``icm._icm``, ...) trust their input, so internal callers such as
``clique_map(method="auto")`` call the cores without checking again.
"""

from __future__ import annotations

import numpy as np

from .._validate import as_float_array, as_index_array, check_magnitude
from ..potentials import CliquePotential
from ._kernels import KIND_GENERAL, KIND_MAJORITY, KIND_MAX, KIND_SUM

__all__ = [
    "check_assignment",
    "check_clique",
    "check_init",
    "check_magnitudes",
    "check_phi",
    "check_potential",
    "check_values",
    "kernel_args",
    "tolerance",
]

_KINDS = {"sum": KIND_SUM, "max": KIND_MAX, "majority": KIND_MAJORITY}


def check_phi(phi) -> np.ndarray:
    """Validate node potentials: (n, m) float, no NaN / +inf, every node with an allowed label.

    Returns a new C-ordered float64 array (never a view of ``phi``), so that every call reaches the
    kernels' one compiled signature.
    """
    arr = np.ascontiguousarray(as_float_array(phi, "phi", ndim=2))
    n, m = arr.shape
    if n < 1 or m < 1:
        raise ValueError(f"`phi` must have shape (n, m) with n >= 1 and m >= 1; got {arr.shape}.")
    dead = np.all(np.isneginf(arr), axis=1)
    if dead.any():
        u = int(np.flatnonzero(dead)[0])
        raise ValueError(f"`phi` must leave every node at least one label above -inf; row {u} is all -inf.")
    return arr


def check_potential(potential, n: int, m: int) -> CliquePotential:
    """Check that ``potential`` is a :class:`CliquePotential` defined for ``n`` nodes and ``m`` labels."""
    if not isinstance(potential, CliquePotential):
        raise TypeError(
            "`potential` must be a CliquePotential (Potts, Entropy, Makespan, SquareMakespan, SumPotential, "
            f"MaxPotential, LinearMajority or CountPotential); got {type(potential).__name__}."
        )
    potential.check(n, m)
    return potential


#: a labelling's score (the node scores plus the clique potential) is kept within this magnitude: half of it
#: for the sum of the n node scores, half for the potential, so that no sum the methods form overflows
MAX_SCORE = 1e300


def check_magnitudes(phi: np.ndarray, potential: CliquePotential) -> None:
    """Refuse ``phi`` (n, m), or a stack (B, n, m), and potentials whose scores could overflow float64
    (``inf`` scores, ``inf - inf = NaN`` in the sweeps): ``|phi| <= 5e299 / n``, and for the SUM / MAX /
    MAJORITY families the potential's values at most ``5e299`` in magnitude (per label times ``m`` for SUM,
    ``W`` times ``n``). A :class:`CountPotential` (any function) is checked on the result's score instead
    (:func:`._result.make_result`)."""
    n, m = phi.shape[-2:]
    half = MAX_SCORE / 2
    check_magnitude(phi, "phi", half / n, f"5e+299 / n for n = {n} nodes: the score of a labelling sums n of them")
    if potential.family in ("sum", "max"):
        width = m if potential.family == "sum" else 1
        table = potential.table(n, m)
        fin = table[np.isfinite(table)]
        if fin.size and np.abs(fin).max() * width > half:
            raise ValueError(
                f"`potential` {potential!r} must keep its values within 5e+299 in magnitude for n = {n} nodes and "
                f"m = {m} labels (so that labellings' scores stay within float64's range); its per-label function "
                f"reaches {float(np.abs(fin).max())!r}{f' (times m = {m} labels)' if width > 1 else ''}."
            )
    elif potential.family == "majority":
        w = np.asarray(potential.W, dtype=np.float64)
        check_magnitude(w * n, "potential.W", half, f"times n = {n} nodes, at most 5e+299")


def check_values(values, potential: CliquePotential) -> np.ndarray:
    """The values of a potential on count vectors, as float64, refused when a finite one exceeds ``5e299``
    in magnitude: a :class:`CountPotential` (any function) is checked where the methods evaluate it, so
    that no sum of its values with node scores overflows."""
    values = np.asarray(values, dtype=np.float64)
    fin = np.isfinite(values)
    if np.any(np.abs(values[fin]) > MAX_SCORE / 2):
        raise ValueError(
            f"`potential` {potential!r} must keep its values within 5e+299 in magnitude (so that labellings' "
            f"scores stay within float64's range); got {float(values[fin][np.argmax(np.abs(values[fin]))])!r}."
        )
    return values


def check_clique(phi, potential) -> tuple[np.ndarray, CliquePotential]:
    """``(phi, potential)`` checked together: :func:`check_phi`, then :func:`check_potential`, then
    :func:`check_magnitudes`."""
    phi = check_phi(phi)
    potential = check_potential(potential, *phi.shape)
    check_magnitudes(phi, potential)
    return phi, potential


def check_init(init, phi: np.ndarray) -> np.ndarray:
    """Initial labelling: ``None`` gives each node its best label; else an (n,) array of labels.

    Returns a new writeable int64 array, which the local searches may modify in place.
    """
    n, m = phi.shape
    if init is None:
        return np.argmax(phi, axis=1).astype(np.int64)
    y = as_index_array(init, "init", size=m)
    if y.shape != (n,):
        raise ValueError(f"`init` must have shape ({n},); got {y.shape}.")
    return y.copy()


def check_assignment(assignment, phi: np.ndarray) -> np.ndarray:
    """A labelling to score: an (n,) array of labels in ``[0, m)``."""
    n, m = phi.shape
    y = as_index_array(assignment, "assignment", size=m)
    if y.shape != (n,):
        raise ValueError(f"`assignment` must have shape ({n},); got {y.shape}.")
    return y


def kernel_args(potential: CliquePotential, n: int, m: int) -> tuple[int, np.ndarray, np.ndarray]:
    """``(kind, table, W)`` for the compiled kernels: ``kind`` one of ``_kernels.KIND_*``, and dummy
    (1, 1) arrays where unused (``KIND_GENERAL`` potentials have no kernel)."""
    # fresh writeable C-ordered copies, so that every call hits the same compiled specialization
    dummy = np.zeros((1, 1))
    kind = _KINDS.get(potential.family, KIND_GENERAL)
    if kind in (KIND_SUM, KIND_MAX):
        return kind, potential.table(n, m), dummy
    if kind == KIND_MAJORITY:
        return kind, dummy, np.array(potential.W, order="C")
    return kind, dummy, dummy


def tolerance(phi: np.ndarray, potential: CliquePotential) -> float:
    """Smallest score gain that counts as an improvement in the local-search methods.

    Rounding errors in a score of magnitude ``s`` are about ``n * eps * s``; gains below ``1e-10`` of
    the problem's scale are treated as ties so that no move cycles on rounding noise.
    """
    n, m = phi.shape
    fin = phi[np.isfinite(phi)]
    scale = float(np.abs(fin).max()) * n if fin.size else 0.0
    counts = np.zeros(m, dtype=np.int64)
    counts[0] = n
    c = abs(float(potential(counts)))
    if np.isfinite(c):
        scale += c
    return 1e-10 * (1.0 + scale)
