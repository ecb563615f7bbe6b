"""Belief-propagation messages of clique factors with count-based potentials (Gupta et al. 2007).

A :class:`~tractable.CliqueFactor` over ``n`` variables with ``m`` states and potential ``C`` (of the
counts plus the factor's ``fixed_counts``) sends variable ``u`` the message

    max-product:  msg[u, l] = max_{y : y_u = l} C(counts(y)) + sum_{v != u} in[v, y_v]
    sum-product:  msg[u, l] = log sum_{y : y_u = l} exp(C(counts(y)) + sum_{v != u} in[v, y_v])

(``in`` the incoming log messages). All ``n`` messages of a factor are computed together:

* ``m = 2``, every family: the potential is a function of one count, ``f(k) = C(n - k, k)``, and the
  factor's messages are those of that :class:`~tractable.CardinalityFactor`: exact, by sorting
  (max, ``O(n log n)``) or the convolution tree (sum, ``O(n log^2 n)``).
* Max-product, ``m >= 3`` (:mod:`tractable.clique._max_messages`): alpha-pass run on the clique with
  ``u`` clamped to ``l``, for every ``(u, l)`` from one sort per label. **Exact for the MAX family**
  (``max_y f_y(n_y)``: :class:`~tractable.clique.MaxPotential`, :class:`~tractable.clique.Makespan`,
  :class:`~tractable.clique.SquareMakespan` with ``lam >= 0``), ``O(n m log n)``. For the SUM family
  (:class:`~tractable.clique.Potts`, :class:`~tractable.clique.Entropy`,
  :class:`~tractable.clique.SumPotential`) it is an **approximation from below** (the MAP of a Potts
  clique is NP-hard): every message is the score of a labelling of the other nodes, at least 4/5 of the
  exact one for Potts with ``lam >= 0`` and non-negative node potentials, ``O(n m log n + n m^2)``. For
  linear majority potentials the candidates are those of the modified alpha-pass (sorted by
  ``in + W[alpha]``), scored by their true potential, and for any other potential
  (:class:`~tractable.clique.CountPotential`, ``Makespan`` with ``lam < 0``) those of alpha-pass: lower
  bounds without a ratio guarantee, ``O(n^2 m^2)`` (majority compiled; any other potential enumerated
  as arrays, with ``O(n m^3)`` calls of the potential on count vectors).
* Sum-product, ``m >= 3`` (:mod:`tractable.clique._sum_messages`): **exact for every family**, by a
  forward-backward dynamic program over count vectors, ``O(m C(n + m, m))`` time and ``C(n + m, m)``
  memory. This is exponential in ``m`` (no family but ``m = 2`` is known to be better: Potts'
  ``lam sum_y n_y**2`` does not factor over labels), so a clique whose program exceeds
  :data:`~tractable.clique._sum_messages.MAX_COUNT_STATES` count vectors is refused with a
  ``ValueError`` naming it (:meth:`CliqueMessages.check`, run before the first iteration).
"""

from __future__ import annotations

import numpy as np

from .._errors import ZeroPartitionError
from ..cardinality._tree import NO_CONFIGURATION
from ..clique._max_messages import majority_messages, max_family_messages, relabel_messages, sum_family_messages
from ..clique._sum_messages import MAX_COUNT_STATES, count_dp, count_space, n_count_states
from ..factorgraph import CardinalityFactor, CliqueFactor
from ._messages import CardinalityMessages
from ._registry import FactorMessages, register

__all__ = ["BELIEF_TABLE_MAX", "CliqueMessages", "max_product_method"]

#: factor beliefs are returned as dense tables up to this many entries (``m**n``)
BELIEF_TABLE_MAX = 4096

_CARDINALITY = CardinalityMessages()


def _describe(fac: CliqueFactor) -> str:
    """The factor in a few words for an error message (its variables abbreviated past 8)."""
    v = fac.variables.tolist()
    shown = str(v) if len(v) <= 8 else f"[{', '.join(map(str, v[:4]))}, ..., {', '.join(map(str, v[-2:]))}]"
    return (
        f"the CliqueFactor over {len(v)} variables {shown} with potential {fac.potential!r} and {fac.n_states} states"
    )


def _no_mass(fac) -> ZeroPartitionError:
    return ZeroPartitionError(
        f"{NO_CONFIGURATION}: {_describe(fac)}, with its incoming messages, gives every configuration zero mass."
    )


def max_product_method(factor: CliqueFactor) -> tuple[str, bool]:
    """``(method, exact)``: how the max-product messages of ``factor`` are computed, and whether exactly.

    ``method`` is ``"cardinality"`` (``m = 2``), ``"max_family"``, ``"sum_family"`` (finite per-label
    tables), ``"majority_alpha_pass"`` or ``"alpha_pass"`` (candidates enumerated).
    """
    if factor.n_states == 2:
        return "cardinality", True
    fam = factor.family
    if fam == "max":
        return "max_family", True
    if fam == "sum" and np.isfinite(_shifted_table(factor)).all():
        return "sum_family", False
    return ("majority_alpha_pass" if fam == "majority" else "alpha_pass"), False


def _shifted_table(factor: CliqueFactor) -> np.ndarray:
    """Per-label table of a SUM/MAX potential as a function of the factor's own counts: ``f_y(k + fixed_y)``."""
    n, m = len(factor.variables), factor.n_states
    d = factor.fixed_counts
    full = factor.potential.table(n + int(d.sum()), m)
    return np.ascontiguousarray(full[np.arange(m)[:, None], d[:, None] + np.arange(n + 1)[None, :]])


class _Plan:
    """One clique factor compiled: its edges and how each kind of message is computed (lazy parts cached)."""

    def __init__(self, factor: CliqueFactor, edges: np.ndarray) -> None:
        self.factor = factor
        self.edges = np.asarray(edges, dtype=np.int64)
        self.n = len(factor.variables)
        self.m = factor.n_states
        self.method, self.exact = max_product_method(factor)
        self._binary = None
        self._table = None
        self._space = None
        self._belief_table = None

    # ------------------------------------------------------------------ m = 2: a cardinality factor
    def binary(self):
        """``(compiled, all_forbidden)`` of the equivalent cardinality factor (counting state 1)."""
        if self._binary is None:
            k = np.arange(self.n + 1)
            f = self.factor._count_values(np.stack([self.n - k, k], axis=1))
            dead = bool(np.all(np.isneginf(f)))
            compiled = None
            if not dead:
                surrogate = CardinalityFactor(np.arange(self.n), f)
                compiled = _CARDINALITY.compile([surrogate], [np.arange(self.n)], np.full(self.n, 2))
            self._binary = (compiled, dead)
        return self._binary

    def _binary_messages(self, phi, kind):
        compiled, dead = self.binary()
        if dead:
            if kind == "sum":
                raise _no_mass(self.factor)
            return np.full((self.n, 2), -np.inf)
        out = np.full((self.n, 2), -np.inf)
        _CARDINALITY.messages(compiled, np.ascontiguousarray(phi), out, kind)
        return out

    # ------------------------------------------------------------------ max-product
    def table(self) -> np.ndarray:
        if self._table is None:
            self._table = _shifted_table(self.factor)
        return self._table

    def max_messages(self, phi: np.ndarray) -> np.ndarray:
        if self.method == "cardinality":
            return self._binary_messages(phi, "max")
        if self.method == "max_family":
            return max_family_messages(phi, self.table())
        if self.method == "sum_family":
            return sum_family_messages(phi, self.table())
        if self.method == "majority_alpha_pass":
            W = np.ascontiguousarray(self.factor.potential.W)
            return majority_messages(phi, W, np.ascontiguousarray(self.factor.fixed_counts))
        return relabel_messages(phi, self.factor._count_values)

    # ------------------------------------------------------------------ sum-product
    def sum_states(self) -> int:
        return n_count_states(self.n, self.m)

    def check_sum(self) -> None:
        """Raise ValueError when the exact sum-product program of this factor is too large."""
        if self.m == 2 or self.sum_states() <= MAX_COUNT_STATES:
            return
        raise ValueError(
            f"{_describe(self.factor)} ({self.factor.family.upper()} family) has no sum-product messages here: "
            f"they are exact by a dynamic program over count vectors, C(n + m, m) = C({self.n + self.m}, {self.m}) = "
            f"{self.sum_states():.3g} of them for n={self.n} variables with m={self.m} states, more than the limit "
            f"{MAX_COUNT_STATES}; exact marginals of a count potential over m >= 3 states are exponential in m for "
            'every family. Use task="map" (max-product: alpha-pass messages), fewer states, or smaller cliques.'
        )

    def space(self):
        """``(nb, linear potential, log of its maximum)`` of the count-vector program (computed once)."""
        if self._space is None:
            counts, nb = count_space(self.n, self.m)
            logp = self.factor._count_values(counts)
            top = float(logp.max()) if logp.size else -np.inf
            pot = np.exp(logp - top) if np.isfinite(top) else np.zeros_like(logp)
            self._space = (nb, pot, top)
        return self._space

    def _dp(self, phi):
        """``(messages, log Z_f)`` of the count-vector program."""
        nb, pot, top = self.space()
        rowmax = phi.max(axis=1)
        if not np.isfinite(top) or not np.all(np.isfinite(rowmax)):
            raise _no_mass(self.factor)
        w = np.exp(phi - rowmax[:, None])
        msg = np.empty((self.n, self.m))
        ok, log_z = count_dp(np.ascontiguousarray(w), nb, pot, msg)
        if not ok:
            raise _no_mass(self.factor)
        return msg, float(log_z + top + rowmax.sum())

    def sum_messages(self, phi: np.ndarray) -> np.ndarray:
        if self.m == 2:
            return self._binary_messages(phi, "sum")
        self.check_sum()
        return self._dp(phi)[0]

    def log_partition(self, phi: np.ndarray) -> float:
        if self.m == 2:
            compiled, dead = self.binary()
            if dead:
                raise _no_mass(self.factor)
            return float(_CARDINALITY.log_partition(compiled, np.ascontiguousarray(phi)))
        self.check_sum()
        return self._dp(phi)[1]

    # ------------------------------------------------------------------ beliefs of small cliques
    def belief(self, phi: np.ndarray, kind: str):
        if self.m**self.n > BELIEF_TABLE_MAX:
            return None
        if self._belief_table is None:
            self._belief_table = self.factor.to_table()
        x = self._belief_table
        for j in range(self.n):
            shape = [1] * self.n
            shape[j] = self.m
            x = x + phi[j].reshape(shape)
        top = np.max(x)
        if not np.isfinite(top):
            return None
        b = np.exp(x - top)  # sum-product belief and max-marginal belief alike, scaled to sum 1
        return b / b.sum()


class CliqueMessages(FactorMessages):
    """Clique factors with count-based potentials: all messages of a factor at once (see the module docstring)."""

    def compile(self, factors, edges, cardinalities):
        return tuple(_Plan(fac, e) for fac, e in zip(factors, edges))

    def check(self, compiled, kind):
        """Raise ``ValueError`` (naming the factor) if a clique of the group has no ``kind`` messages."""
        if kind == "sum":
            for plan in compiled:
                plan.check_sum()

    def messages(self, compiled, incoming, out, kind):
        self.check(compiled, kind)
        for plan in compiled:
            phi = np.ascontiguousarray(incoming[plan.edges, : plan.m])
            msg = plan.max_messages(phi) if kind == "max" else plan.sum_messages(phi)
            out[plan.edges, : plan.m] = msg

    def log_partition(self, compiled, incoming):
        self.check(compiled, "sum")
        return float(sum(plan.log_partition(np.ascontiguousarray(incoming[plan.edges, : plan.m])) for plan in compiled))

    def factor_beliefs(self, compiled, incoming, kind):
        return [plan.belief(incoming[plan.edges, : plan.m], kind) for plan in compiled]


register(CliqueFactor, CliqueMessages())
