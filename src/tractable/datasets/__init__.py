"""Generators of the papers' synthetic benchmarks and of random test models.

Each generator lives in a module of its own. The package imports the public functions eagerly, so
that ``from tractable.datasets import clique_benchmark`` is always the function, even though a
submodule of the same name exists (``tractable.datasets.clique_benchmark`` as an attribute would
otherwise become the module once the submodule is imported).
"""

import warnings as _warnings

from .bipartite_matching import BipartiteMatching, bipartite_matching
from .clique_benchmark import CLIQUE_KINDS, clique_benchmark
from .factor_graphs import grid_factor_graph, random_factor_graph
from .inpainting import Inpainting, inpainting
from .opinion_diffusion import opinion_diffusion
from .yeast import YEAST_N_TRAIN, load_yeast, yeast_split

__all__ = [
    "BipartiteMatching",
    "CLIQUE_KINDS",
    "Inpainting",
    "YEAST_N_TRAIN",
    "bipartite_matching",
    "clique_benchmark",
    "grid_factor_graph",
    "inpainting",
    "load_yeast",
    "opinion_diffusion",
    "random_factor_graph",
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
