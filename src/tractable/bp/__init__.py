"""Belief propagation over factor graphs with high-order factors.

:func:`loopy` runs sum-product or max-product belief propagation on any
:class:`~tractable.FactorGraph`. Every factor type brings its own message computation through a
registry (:func:`register`, :class:`FactorMessages`): dense tables are batched by shape, and a
:class:`~tractable.CardinalityFactor` over ``D`` binary variables computes all its ``D`` messages
together with the convolution tree of Tarlow et al. (2012) in O(D log^2 D) (sum-product) or by
sorting in O(D log D) (max-product), so factors over thousands of variables cost little more than
pairwise ones.
"""

from ._registry import HANDLERS, FactorMessages, register
from ._result import BPResult
from .loopy import loopy

__all__ = ["BPResult", "FactorMessages", "HANDLERS", "loopy", "register"]
