"""The registry of factor message computations: one handler per factor type.

The loopy-BP engine never special-cases a factor type. It groups the factors of a graph by type,
asks each type's handler to compile its group once (index arrays into the engine's flat message
arrays), and then, every iteration, asks the handler for the group's outgoing messages. A new factor
type plugs in by registering one handler (:func:`register`); nothing in the engine changes.

Message layout, shared by every handler. Every (factor, variable) pair of the graph is an *edge*
``e``; ``incoming[e, :card_v]`` is the log message variable -> factor and ``out[e, :card_v]`` the
log message factor -> variable, both ``(n_edges, K)`` float64 arrays with ``K`` the largest
cardinality (entries past ``card_v`` are ``-inf`` and must stay so). Incoming messages are
normalized (``logsumexp = 0`` for sum-product, ``max = 0`` for max-product); outgoing messages may
carry any constant offset (the engine normalizes them). ``-inf`` is a hard zero and must never turn
into NaN.

*Optional compiled update.* A handler may define ``update(compiled, ws) -> (residual, flags)``, used on
the parallel schedule instead of :meth:`FactorMessages.messages` plus the engine's normalization and
damping. It reads ``ws.fin``, ``ws.ninf``, ``ws.nu`` and ``ws.nu_p`` of the engine's workspace and writes
the group's new damped messages into ``ws.new`` (each row up to a constant); for sum-product it also writes
their normalized probabilities into ``ws.new_p`` and returns the largest ``|new_p - nu_p|``, for
max-product it returns 0 with rows normalized to maximum 0 (the engine computes the probabilities and the
residual). Flag 1: a cavity forbids every state; flag 2: a message does. The engine uses it only when the
class that defines ``messages`` also defines ``update`` (``TableMessages`` is the built-in example).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from ..factorgraph import Factor

__all__ = ["FactorMessages", "HANDLERS", "handler_for", "register"]


class FactorMessages(ABC):
    """How one factor type computes its belief-propagation messages (batched over a group)."""

    @abstractmethod
    def compile(self, factors: Sequence[Factor], edges: Sequence[np.ndarray], cardinalities: np.ndarray):
        """Prepare a group of factors of this type once.

        Parameters
        ----------
        factors : sequence of Factor
            The group (all of this handler's type), validated by the graph.
        edges : sequence of ndarray of int64
            ``edges[i][j]`` is the edge of ``factors[i]`` and its ``j``-th variable.
        cardinalities : ndarray of shape (n_variables,)

        Returns
        -------
        object
            Whatever :meth:`messages` and :meth:`log_partition` need (read-only after this call).
        """

    @abstractmethod
    def messages(self, compiled, incoming: np.ndarray, out: np.ndarray, kind: str) -> None:
        """Write the group's outgoing log messages into ``out`` (rows of the group's edges only).

        ``kind`` is ``"sum"`` (sum-product) or ``"max"`` (max-product).

        Raises
        ------
        ZeroPartitionError
            Every configuration of a factor has zero mass given its incoming messages.
        """

    @abstractmethod
    def log_partition(self, compiled, incoming: np.ndarray) -> float:
        """``sum_f log sum_{y_f} exp(psi_f(y_f) + sum_{v in f} incoming[e(f, v), y_v])`` over the group.

        This is each factor's local partition function given its incoming messages; the engine's
        Bethe estimate of ``log Z`` adds these up (Yedidia et al. 2005, at a fixed point).
        """

    def check(self, compiled, kind: str) -> None:  # noqa: B027 - a hook: most handlers compute every kind
        """Raise (``ValueError``, naming the factor) if the group cannot compute ``kind`` messages.

        The engine calls it once after compiling, before the first iteration, so that a model whose
        factor has no messages of the asked kind (e.g. a clique too large for exact sum-product) fails
        at once. The default accepts both kinds.
        """

    def factor_beliefs(self, compiled, incoming: np.ndarray, kind: str) -> list | None:
        """Each factor's belief ``∝ exp(psi_f(y_f) + sum_v incoming[e(f, v), y_v])`` as a dense table normalized
        to sum 1 (sum-product; for max-product the max-marginal belief, also scaled to sum 1), in the order of
        the factors given to :meth:`compile` (an entry may be ``None``: too large to materialize).

        The default returns ``None``: no beliefs for this factor type. Handlers of small factors override it.
        """
        return None


#: factor type -> its message handler
HANDLERS: dict[type, FactorMessages] = {}


def register(factor_type: type, handler: FactorMessages) -> None:
    """Register ``handler`` as the message computation of ``factor_type`` (and its subclasses).

    Raises
    ------
    TypeError
        ``factor_type`` is not a :class:`~tractable.Factor` subclass or ``handler`` is not a
        :class:`FactorMessages`.
    """
    if not (isinstance(factor_type, type) and issubclass(factor_type, Factor)):
        raise TypeError(f"`factor_type` must be a subclass of tractable.Factor; got {factor_type!r}.")
    if not isinstance(handler, FactorMessages):
        raise TypeError(f"`handler` must be a FactorMessages instance; got {type(handler).__name__}.")
    HANDLERS[factor_type] = handler


def handler_for(factor_type: type) -> FactorMessages:
    """The handler of ``factor_type``: its own, else the nearest registered base class's."""
    for cls in factor_type.__mro__:
        if cls in HANDLERS:
            return HANDLERS[cls]
    raise TypeError(
        f"no belief-propagation messages are registered for factor type {factor_type.__name__}; "
        "register a FactorMessages handler with tractable.bp.register."
    )
