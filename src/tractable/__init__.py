"""tractable: fast inference in structured probabilistic graphical models.

Model objects live at the top level; algorithm families are subpackages (``tractable.exact``,
``tractable.clique``, ``tractable.cardinality``, ``tractable.hlmrf``, ...), imported on use.
"""

from ._errors import ModelError, ZeroPartitionError
from ._results import ConvergenceWarning, MAPResult, MarginalsResult, Result

__version__ = "0.1.0"

__all__ = [
    "CardinalityFactor",
    "CliqueFactor",
    "ConvergenceWarning",
    "Factor",
    "FactorGraph",
    "MAPResult",
    "MarginalsResult",
    "ModelError",
    "RecursiveCardinalityFactor",
    "Result",
    "TableFactor",
    "ZeroPartitionError",
    "__version__",
]

#: the model classes of :mod:`tractable.factorgraph`, imported when first asked for (``tractable.psl``,
#: ``tractable.hlmrf`` and the ``tractable psl`` command do not need them)
_FACTORGRAPH = frozenset(
    {"CardinalityFactor", "CliqueFactor", "Factor", "FactorGraph", "RecursiveCardinalityFactor", "TableFactor"}
)


def __getattr__(name):
    if name in _FACTORGRAPH:
        from . import factorgraph

        value = getattr(factorgraph, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _FACTORGRAPH)
