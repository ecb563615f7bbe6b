"""Generators of the papers' synthetic benchmarks and loaders of real data sets.

Each generator lives in its own module and is loaded on first use, so that importing
``tractable.datasets`` stays cheap.
"""

from __future__ import annotations

import importlib

#: public name -> module (relative to this package) that defines it
_LAZY = {
    "clique_benchmark": ".clique_benchmark",
    "CLIQUE_KINDS": ".clique_benchmark",
    "opinion_diffusion": ".opinion_diffusion",
    "random_factor_graph": ".factor_graphs",
    "grid_factor_graph": ".factor_graphs",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        # importing the submodule set the package attribute of the same name to the module: replace it
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return __all__
