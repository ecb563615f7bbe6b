"""Exact marginals of many cardinality models in one call (batch inference).

Each instance ``b`` is a model ``p(y) ∝ exp(theta[b] . y + f[b](sum_d y_d))`` over ``y`` in
{0, 1}^D, all of the same size ``D`` (a posterior per bag, per document). :func:`marginals_batch`
solves a stack of them:

* ``method="chain"``: one compiled loop over the stack runs the log-space chain algorithm of
  :func:`~tractable.cardinality.chain_marginals` (Tarlow et al. 2012, Sec. 6.1; the package's
  accuracy reference) on each instance, clamped variables (``theta = ±inf``) taken out first exactly
  as the per-instance function does. O(D^2) per instance, no Python work per instance: the choice for
  many small models.
* ``method="fft"`` / ``"direct"``: the convolution tree of :func:`~tractable.cardinality.marginals`
  (O(D log^2 D)) per instance, with that convolution. Its Python overhead per instance (about a
  millisecond) is small next to its work once ``D`` is in the hundreds, where it beats the chain's O(D^2).
* ``method="auto"`` (default): ``"chain"`` for ``D <= 192``, else the convolution tree (measured on
  one core: chain 0.05 / 0.6 / 2.3 ms per model at D = 32 / 128 / 256, tree 0.6 / 1.5 / 1.9 ms).

Both agree with the per-instance functions: ``"chain"`` with :func:`chain_marginals` up to the
summation order of one offset (``log Z`` to ~1e-15 relative), the convolution tree exactly with
:func:`marginals`; the two algorithms agree to ~1e-13 (the accuracy of the convolution tree).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from .._errors import ZeroPartitionError
from .._results import OPTIMAL, Result, frozen_array, stop_message
from .._validate import as_float_array, check_choice
from ._convolve import DEFAULT_CROSSOVER, METHODS
from ._huge import needs_reduction
from ._tree import NO_CONFIGURATION
from .chain import _run_chain_stack
from .convolution_tree import _marginals_core, _moderate

__all__ = ["BATCH_METHODS", "CardinalityMarginalsBatch", "marginals_batch"]

#: largest D for which ``method="auto"`` runs the chain (near D = 200 the compiled chain and the
#: convolution tree take about the same time per instance on one core)
CHAIN_MAX = 192
#: the methods of :func:`marginals_batch`: the convolution methods of :data:`METHODS` (the convolution tree
#: per model, with that convolution) and ``"chain"`` (the compiled O(D^2) chain over the whole stack)
BATCH_METHODS = (*METHODS, "chain")


@dataclass(frozen=True)
class CardinalityMarginalsBatch(Result):
    """Exact marginals of a stack of cardinality models (one row per model).

    Attributes
    ----------
    marginals : ndarray of shape (B, D, 2)
        ``[P(y_d = 0), P(y_d = 1)]`` of every variable of every model (read-only); both columns are
        computed from the log-odds, as in :class:`~tractable.cardinality.CardinalityMarginals`.
    count_marginals : ndarray of shape (B, D + 1)
        ``P(sum_d y_d = k)`` per model (read-only).
    log_partition : ndarray of shape (B,)
        ``log Z`` per model (read-only).
    time, method, converged, n_iter, status, message
        As in every result of the library (``time`` for the whole stack, ``method`` the name
        passed); the methods are exact: ``True``, ``0``, ``"optimal"``.
    """

    marginals: np.ndarray
    count_marginals: np.ndarray
    log_partition: np.ndarray

    @property
    def p_on(self) -> np.ndarray:
        """``P(y_d = 1)``, shape ``(B, D)``: ``marginals[:, :, 1]`` (read-only)."""
        return self.marginals[:, :, 1]

    def __len__(self) -> int:
        return int(self.marginals.shape[0])


def _validate_batch(theta, f) -> tuple[np.ndarray, np.ndarray]:
    """Check a stack ``theta`` (B, D) and ``f`` (B, D + 1) or (D + 1,); return new C-ordered float64
    arrays, ``f`` broadcast to (B, D + 1)."""
    theta = np.ascontiguousarray(as_float_array(theta, "theta", ndim=2, allow_posinf=True))
    B, D = theta.shape
    f = as_float_array(f, "f", allow_posinf=False)
    if f.ndim == 1:
        f = np.broadcast_to(f, (B, f.shape[0]))
    if f.ndim != 2 or f.shape[1] != D + 1 or f.shape[0] != B:
        raise ValueError(
            f"`f` must have shape ({B}, {D + 1}) or ({D + 1},) (one score per count 0..{D} for each of the "
            f"{B} models); got {f.shape}."
        )
    f = np.ascontiguousarray(f)
    n_on = np.count_nonzero(np.isposinf(theta), axis=1)
    n_off = np.count_nonzero(np.isneginf(theta), axis=1)
    k = np.arange(D + 1)
    reachable = (k[None, :] >= n_on[:, None]) & (k[None, :] <= D - n_off[:, None])
    dead = ~np.any(reachable & (f > -np.inf), axis=1)
    if dead.any():
        b = int(np.flatnonzero(dead)[0])
        raise ZeroPartitionError(
            f"{NO_CONFIGURATION} in model {b}: with {n_on[b]} variables clamped on and {n_off[b]} clamped off "
            f"by `theta`[{b}], `f`[{b}] is -inf at every reachable count {n_on[b]}..{D - n_off[b]}."
        )
    return theta, f


def marginals_batch(theta, f, *, method: str = "auto") -> CardinalityMarginalsBatch:
    """Exact marginals, count marginals and log partition functions of a stack of cardinality models.

    Model ``b`` is ``p(y) ∝ exp(theta[b] . y + f[b](sum_d y_d))`` (Tarlow et al.'s symbols), as in
    :func:`~tractable.cardinality.marginals`.

    Parameters
    ----------
    theta : array_like of shape (B, D)
        Unary scores of ``B`` models of ``D`` binary variables; ``+inf`` / ``-inf`` clamp a variable
        on / off. ``B = 0`` and ``D = 0`` are allowed.
    f : array_like of shape (B, D + 1) or (D + 1,)
        Count scores per model, or one vector shared by all models; ``-inf`` forbids a count.
    method : {"auto", "fft", "direct", "chain"}, default "auto"
        ``"chain"``: the compiled O(D^2) chain algorithm over the whole stack in one loop;
        ``"fft"`` / ``"direct"``: the O(D log^2 D) convolution tree per model with that convolution
        (:data:`~tractable.cardinality.METHODS`); ``"auto"``: the chain for ``D <= 192``, else the
        convolution tree with its ``"auto"`` convolution (see the module docstring). ``"tree"`` is a
        deprecated name of the convolution tree with ``"auto"`` convolution.

    Returns
    -------
    CardinalityMarginalsBatch
        ``marginals`` (B, D, 2) with ``p_on`` (B, D), ``count_marginals`` (B, D + 1),
        ``log_partition`` (B,); row ``b`` is what :func:`chain_marginals` (``"chain"``) or
        :func:`marginals` (the convolution tree) returns for model ``b``.

    Raises
    ------
    ValueError, TypeError
        Wrong shapes or types, NaN, ``+inf`` in ``f``, an unknown ``method``, or a model whose log
        partition function lies beyond float64's range.
    ZeroPartitionError
        A model without a configuration of non-zero probability (named by its index); a ``ValueError`` too.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.cardinality import marginals_batch
    >>> res = marginals_batch(np.zeros((2, 3)), [0.0, 0.0, -np.inf, -np.inf])  # at most one on
    >>> np.round(res.p_on, 4)
    array([[0.25, 0.25, 0.25],
           [0.25, 0.25, 0.25]])
    >>> np.round(np.exp(res.log_partition), 6)
    array([4., 4.])
    """
    t0 = time.perf_counter()
    if method == "tree":
        warnings.warn(
            'marginals_batch(method="tree") is deprecated; use "auto", "fft" or "direct" (the convolution tree with '
            'that convolution) or "chain".',
            DeprecationWarning,
            stacklevel=2,
        )
    else:
        method = check_choice(method, "method", BATCH_METHODS)
    theta, f = _validate_batch(theta, f)
    return _marginals_batch(theta, f, method, t0)


def _marginals_batch(theta: np.ndarray, f: np.ndarray, method: str, t0: float) -> CardinalityMarginalsBatch:
    """:func:`marginals_batch` on validated input (C-ordered float64 (B, D), (B, D + 1))."""
    B, D = theta.shape
    run = method if method != "auto" else ("chain" if D <= CHAIN_MAX else "auto")
    convolution = "auto" if run == "tree" else run
    if run == "chain":
        shift = np.zeros(B)
        huge = [b for b in range(B) if needs_reduction(theta[b], f[b])]
        if huge:  # models with huge scores: their equivalent models of moderate scores (as chain_marginals)
            theta, f = theta.copy(), f.copy()
            for b in huge:
                try:
                    theta[b], f[b], shift[b] = _moderate(theta[b], f[b])
                except ValueError as err:  # a log Z beyond float64's range: say which model
                    raise type(err)(f"model {b}: {err}") from None
        (log_odds, count, logz, offset), _ = _run_chain_stack(theta, f, D)
        logz += offset  # log Z = the chain's + the offset sum_d max(theta_d, 0) of the free variables
        logz += shift
        total = count.sum(axis=1, keepdims=True)  # exp(x - log Z) need not sum to 1 after rounding: divide
        np.divide(count, total, out=count, where=total > 0)
    else:
        log_odds = np.empty((B, D))
        count = np.zeros((B, D + 1))
        logz = np.empty(B)
        for b in range(B):  # O(D log^2 D) of work per model dwarfs the loop's overhead (see the module docstring)
            try:
                log_odds[b], count[b], logz[b], _ = _marginals_core(theta[b], f[b], convolution, DEFAULT_CROSSOVER)
            except ValueError as err:  # a log Z beyond float64's range: say which model
                raise type(err)(f"model {b}: {err}") from None
    marg = np.empty((B, D, 2))
    expit(log_odds, out=marg[:, :, 1])
    expit(-log_odds, out=marg[:, :, 0])
    return CardinalityMarginalsBatch(
        marginals=frozen_array(marg),
        count_marginals=frozen_array(count),
        log_partition=frozen_array(logz),
        time=time.perf_counter() - t0,
        method=method,
        message=stop_message(OPTIMAL, method, 0, f"{B} models by the {run} algorithm"),
    )
