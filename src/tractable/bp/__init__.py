"""Belief propagation: exact on trees and forests, loopy over factor graphs with high-order factors.

:func:`tree_marginals`, :func:`tree_marginals_batch` and :func:`tree_map` are exact sum-product and
max-product on forest-structured pairwise models, vectorized by tree level (the inference engine of
the tree CRFs in :mod:`tractable.crf`).

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
from .tree import TreeMarginals, TreeMarginalsBatch, tree_map, tree_marginals, tree_marginals_batch

__all__ = [
    "BPResult",
    "FactorMessages",
    "HANDLERS",
    "TreeMarginals",
    "TreeMarginalsBatch",
    "loopy",
    "register",
    "tree_map",
    "tree_marginals",
    "tree_marginals_batch",
]
