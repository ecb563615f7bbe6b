"""MPE inference in hinge-loss Markov random fields by consensus ADMM (Bach et al. 2012).

Build an :class:`HLMRF` (potentials ``w max(c·x + b, 0)^p`` with ``p`` in {1, 2}, linear
constraints, fixed variables), then call :func:`solve`. ``method="admm"`` is the consensus-ADMM
solver of the paper with exact local updates for any arity; ``"highs"`` and ``"clarabel"`` solve
the same problem exactly as an LP / QP and serve as references.
"""

from ._result import MPEResult
from .admm import METHODS, solve
from .model import FILE_FORMAT, FILE_VERSION, HLMRF, SENSES
from .repair import project_feasible
from .updates import local_update_reference, local_updates

__all__ = [
    "FILE_FORMAT",
    "FILE_VERSION",
    "HLMRF",
    "METHODS",
    "MPEResult",
    "SENSES",
    "local_update_reference",
    "local_updates",
    "project_feasible",
    "solve",
]
