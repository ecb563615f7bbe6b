"""Exact inference with cardinality and recursive cardinality potentials (Tarlow et al. 2012).

Binary variables ``y`` in {0, 1}^D with ``p(y) ∝ exp(theta . y + f(sum_d y_d))``:
:func:`marginals`, :func:`log_partition`, :func:`sample` and :func:`map_assignment` use the
convolution tree (O(D log^2 D)); :class:`RecursiveCardinalityModel` handles nested subsets with
their own count potentials; :class:`TreeCardinalityModel` a tree-structured pairwise model plus one
cardinality potential; :func:`chain_marginals` is the O(D^2) chain baseline. ``theta`` and ``f`` are
Tarlow et al.'s symbols for the unary and count scores.

Marginals come as a frozen :class:`CardinalityMarginals` (``marginals`` of shape (D, 2),
``p_on = marginals[:, 1]``), MAP assignments as a ``MAPResult``. The ``method=`` of :func:`marginals`,
:func:`log_partition`, :func:`sample` and :class:`RecursiveCardinalityModel` is a convolution method of
:data:`METHODS` (``"auto"``, ``"fft"``, ``"direct"``); :func:`marginals_batch` takes these too (the
convolution tree per model with that convolution) and ``"chain"`` (the compiled O(D^2) chain over the whole
stack), and its ``"auto"`` runs the chain for ``D <= 192``. :func:`map_assignment`,
:func:`chain_marginals` and :class:`TreeCardinalityModel` take no ``method``.
"""

from ._convolve import METHODS
from ._result import CardinalityMarginals
from .batch import CardinalityMarginalsBatch, marginals_batch
from .chain import chain_marginals
from .convolution_tree import log_partition, map_assignment, marginals, sample
from .recursive import RecursiveCardinalityModel
from .tree_cardinality import TreeCardinalityModel

__all__ = [
    "CardinalityMarginals",
    "CardinalityMarginalsBatch",
    "METHODS",
    "RecursiveCardinalityModel",
    "TreeCardinalityModel",
    "chain_marginals",
    "log_partition",
    "map_assignment",
    "marginals",
    "marginals_batch",
    "sample",
]
