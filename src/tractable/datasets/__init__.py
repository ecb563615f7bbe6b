"""Generators of the papers' synthetic benchmarks and of random test models, and loaders of real data
(the yeast multi-label data; the CoNLL-2003 named-entity files, read from the shared data folder and
never shipped or downloaded).

Each generator lives in a module of its own. The package imports the public functions eagerly, so
that ``from tractable.datasets import clique_benchmark`` is always the function, even though a
submodule of the same name exists (``tractable.datasets.clique_benchmark`` as an attribute would
otherwise become the module once the submodule is imported).
"""

import warnings as _warnings

from .bipartite_matching import BipartiteMatching, bipartite_matching
from .clique_benchmark import CLIQUE_KINDS, clique_benchmark
from .conll2003 import (
    CONLL_TAGS,
    CollectiveMAPResult,
    Document,
    NERFeaturizer,
    Sentence,
    SpanScores,
    collective_factor_graph,
    collective_map,
    conll2003_available,
    entity_spans,
    iob1_to_iob2,
    load_conll2003,
    majority_weights,
    repeated_token_cliques,
    span_f1,
    tag_ids,
)
from .factor_graphs import grid_factor_graph, random_factor_graph
from .inpainting import Inpainting, inpainting
from .opinion_diffusion import opinion_diffusion
from .yeast import YEAST_N_TRAIN, load_yeast, yeast_split

__all__ = [
    "BipartiteMatching",
    "CLIQUE_KINDS",
    "CONLL_TAGS",
    "CollectiveMAPResult",
    "Document",
    "Inpainting",
    "NERFeaturizer",
    "Sentence",
    "SpanScores",
    "YEAST_N_TRAIN",
    "bipartite_matching",
    "clique_benchmark",
    "collective_factor_graph",
    "collective_map",
    "conll2003_available",
    "entity_spans",
    "grid_factor_graph",
    "inpainting",
    "iob1_to_iob2",
    "load_conll2003",
    "load_yeast",
    "majority_weights",
    "opinion_diffusion",
    "random_factor_graph",
    "repeated_token_cliques",
    "span_f1",
    "tag_ids",
    "yeast_split",
]


def __getattr__(name: str):
    """``MultiLabelCRF``, deprecated here: it moved to :mod:`tractable.crf` (a DeprecationWarning; the alias
    is removed in the next release)."""
    if name == "MultiLabelCRF":
        _warnings.warn(
            "`tractable.datasets.MultiLabelCRF` moved to `tractable.crf.MultiLabelCRF`; this alias will be "
            "removed in the next release.",
            DeprecationWarning,
            stacklevel=2,
        )
        from ..crf.multilabel import MultiLabelCRF

        return MultiLabelCRF
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
