"""tractable: fast inference in structured probabilistic graphical models.

Model objects live at the top level; algorithm families are subpackages (``tractable.exact``,
``tractable.clique``, ``tractable.cardinality``, ``tractable.hlmrf``, ...), imported on use.
"""

from ._errors import ModelError, ZeroPartitionError
from ._results import ConvergenceWarning, MAPResult, MarginalsResult, Result
from .factorgraph import (
    CardinalityFactor,
    CliqueFactor,
    Factor,
    FactorGraph,
    RecursiveCardinalityFactor,
    TableFactor,
)

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
