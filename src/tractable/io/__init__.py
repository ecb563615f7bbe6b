"""Reading and writing models, evidence and results: the UAI competition formats, and the factor-graph
format of ``tractable`` (JSON, every factor type: :mod:`tractable.io.fgjson`)."""

from .fgjson import read_factor_graph, write_factor_graph
from .pgmpy_interop import from_pgmpy, read_bif
from .uai import (
    read_evidence,
    read_map,
    read_mar,
    read_uai,
    write_evidence,
    write_map,
    write_mar,
    write_mmp,
    write_pr,
    write_uai,
)

__all__ = [
    "from_pgmpy",
    "read_bif",
    "read_evidence",
    "read_factor_graph",
    "read_map",
    "read_mar",
    "read_uai",
    "write_evidence",
    "write_factor_graph",
    "write_map",
    "write_mar",
    "write_mmp",
    "write_pr",
    "write_uai",
]
