"""Exceptions shared by every area.

:class:`ModelError` is raised when the model itself is unusable, whatever the algorithm: no
configuration has positive probability, the constraints are infeasible, ... It subclasses
``ValueError``, so code that catches bad input keeps working.
"""

from __future__ import annotations

__all__ = ["ModelError", "ZeroPartitionError"]


class ModelError(ValueError):
    """The model itself is unusable: no configuration has positive probability, it is infeasible, ..."""


class ZeroPartitionError(ModelError):
    """Every configuration of the model has zero probability (``log Z = -inf``): no marginals, no MAP.

    Raised by :mod:`tractable.exact` (also when the evidence has probability zero).
    """
