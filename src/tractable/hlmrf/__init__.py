"""MPE inference in hinge-loss Markov random fields by consensus ADMM (Bach et al. 2012).

Build an :class:`HLMRF` (potentials ``w max(c·x + b, 0)^p`` with ``p`` in {1, 2}, linear
constraints, fixed variables), then call :func:`solve`. ``method="admm"`` is the consensus-ADMM
solver of the paper with exact local updates for any arity; ``"highs"`` and ``"clarabel"`` solve
the same problem exactly as an LP / QP and serve as references.
"""

from ._result import MPEResult
from .admm import METHODS, solve
from .model import FILE_FORMAT, FILE_VERSION, HLMRF, SENSES
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


def __getattr__(name):
    # ``project_feasible`` imports SciPy (sparse matrices, HiGHS): only when it is asked for
    if name == "project_feasible":
        from .repair import project_feasible

        globals()[name] = project_feasible
        return project_feasible
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"project_feasible"})
