"""Belief-propagation messages of recursive cardinality factors (Tarlow et al. 2012, Sec. 5).

A :class:`~tractable.factorgraph.RecursiveCardinalityFactor` over ``D`` binary variables keeps the
binary count tree aligned with its nested subsets (:mod:`tractable._count_tree`, built once, at
construction). Its ``D`` outgoing
messages come from one pass up and one pass down that tree with the incoming messages as the leaves'
log weights: the message into leaf ``d`` from above is, by exactness of belief propagation on a tree,
``sum`` (or ``max``) over the other variables of the factor times their incoming messages with
``y_d`` fixed, which is the factor-to-variable message. The incoming messages enter as they are
(both states' log weights, ``-inf`` for a clamped state), so clamped variables need no special case
and ``log Z_f`` keeps every offset.

* Sum-product: :func:`tractable.cardinality._tree.sum_passes` (convolutions, FFT above the
  crossover), O(sum over internal nodes of w log w) with w the node's count range: O(D log^2 D)
  for balanced families, O(D^2) at worst; passes whose beliefs the error bounds cannot certify
  (scores spanning hundreds, potentials that fight the incoming messages) are redone in log space,
  exact at any magnitude, at the O(D^2) cost. A factor with no configuration of positive mass given its
  incoming messages raises :class:`~tractable.ZeroPartitionError` (sound: sum-product zeros are
  zeros of the model).
* Max-product: ``upward_max`` and a downward max-plus pass (:func:`_downward_max`), exact
  max-marginal messages in O(sum over internal nodes of w_left * w_right), O(D^2) at worst. Exact
  also when every configuration is forbidden (all arithmetic is max and +, on ``-inf`` too).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import ZeroPartitionError
from .._numba import njit
from ..cardinality._convolve import DEFAULT_CROSSOVER
from ..cardinality._tree import (
    NO_CONFIGURATION,
    _stack_rows,
    log_rows,
    root_log_partition,
    sum_passes,
    upward_checked,
    upward_max,
)
from ..factorgraph import RecursiveCardinalityFactor
from ._registry import FactorMessages, register

__all__ = ["RecursiveCardinalityMessages"]


def _no_mass() -> ZeroPartitionError:
    return ZeroPartitionError(
        f"{NO_CONFIGURATION}: a recursive cardinality factor with its incoming messages gives every "
        "configuration zero mass."
    )


@dataclass(frozen=True)
class _RecursiveGroup:
    edges: tuple  # per factor: (D,) edge ids in the order of its variables
    structures: tuple  # per factor: its count tree (tractable._count_tree.CountTree)


@njit
def _maxplus_correlate(a, b, width):
    """``out[r, j] = max_i a[r, j + i] + b[r, i]`` for ``j < width`` (``-inf`` where nothing reaches)."""
    n, wa = a.shape
    wb = b.shape[1]
    out = np.full((n, width), -np.inf)
    for r in range(n):
        for i in range(wb):
            bi = b[r, i]
            if bi == -np.inf:
                continue
            for j in range(min(width, wa - i)):
                v = a[r, j + i] + bi
                if v > out[r, j]:
                    out[r, j] = v
    return out


def _downward_max(tree, up: list, potentials) -> list:
    """Downward max-product pass in log space: per height, the max-plus message into each node from
    above (the node's own potential excluded); ``up`` is :func:`upward_max`'s output."""
    n_h = len(tree.levels)
    down = [np.full_like(u, -np.inf) for u in up]
    down[n_h - 1] = np.zeros_like(up[n_h - 1])
    for h in range(n_h - 1, 0, -1):
        nodes = tree.levels[h]
        a = down[h] if potentials.get(h) is None else down[h] + potentials[h]
        lc, rc = tree.left[nodes], tree.right[nodes]
        wc = int(max(tree.size[lc].max(), tree.size[rc].max())) + 1
        ul = _stack_rows(tree, up, lc, wc)
        ur = _stack_rows(tree, up, rc, wc)
        # into the left child: max over the right child's count i of (parent count j + i) + up_right(i)
        x = _maxplus_correlate(np.concatenate([a, a]), np.concatenate([ur, ul]), wc)
        children = np.concatenate([lc, rc])
        x[np.arange(wc)[None, :] > tree.size[children][:, None]] = -np.inf  # counts a child cannot reach
        hs = tree.height[children]
        for g in np.unique(hs):
            sel = np.nonzero(hs == g)[0]
            w = min(wc, down[g].shape[1])
            down[g][tree.row[children[sel]], :w] = x[sel, :w]
    return down


def _leaf_log_weights(structure, w: np.ndarray) -> np.ndarray:
    """(D, 2) leaf log weights: the incoming messages plus the singleton subsets' potentials."""
    return w + structure.leaf_potentials


def _leaf(structure, w: np.ndarray) -> np.ndarray:
    leaf = _leaf_log_weights(structure, w)
    if np.any(np.all(np.isneginf(leaf), axis=1)):
        raise _no_mass()
    return leaf


def _log_partition(structure, w: np.ndarray) -> float:
    """``log Z_f`` of the factor with incoming messages ``w``. Raises ZeroPartitionError when ``Z_f = 0``."""
    t, pots = structure.tree, structure.potentials_by_height
    try:
        up = upward_checked(t, _leaf(structure, w), pots, method="auto", crossover=DEFAULT_CROSSOVER)
    except ValueError as err:  # an upward message is zero everywhere, in log space too: Z_f = 0
        raise _no_mass() from err
    return root_log_partition(t, up)


class RecursiveCardinalityMessages(FactorMessages):
    """Recursive cardinality factors: all messages of a factor from one pass up and down its count tree."""

    def compile(self, factors, edges, cardinalities):
        return _RecursiveGroup(
            tuple(np.asarray(e, dtype=np.int64) for e in edges),
            tuple(fac._structure for fac in factors),
        )

    def messages(self, compiled, incoming, out, kind):
        for e, structure in zip(compiled.edges, compiled.structures):
            w = incoming[e, :2]
            if kind == "max":
                t, pots = structure.tree, structure.potentials_by_height
                up = upward_max(t, _leaf_log_weights(structure, w), pots)
                down = _downward_max(t, up, pots)
                msg = down[0] + structure.leaf_potentials
            else:
                t, pots = structure.tree, structure.potentials_by_height
                try:  # linear passes where they certify their beliefs, else log space (exact at any magnitude)
                    _, down = sum_passes(t, _leaf(structure, w), pots, method="auto", crossover=DEFAULT_CROSSOVER)
                except ValueError as err:  # no configuration of positive mass, in log space too: Z_f = 0
                    raise _no_mass() from err
                msg = log_rows(down, 0) + structure.leaf_potentials
            out[e, 0] = msg[:, 0]
            out[e, 1] = msg[:, 1]

    def log_partition(self, compiled, incoming):
        # the incoming messages are the leaves' log weights as they are: nothing to add back
        return float(sum(_log_partition(s, incoming[e, :2]) for e, s in zip(compiled.edges, compiled.structures)))


register(RecursiveCardinalityFactor, RecursiveCardinalityMessages())
