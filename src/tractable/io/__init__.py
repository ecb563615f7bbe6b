"""Reading and writing models, evidence and results (UAI competition formats)."""

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
    "read_map",
    "read_mar",
    "read_uai",
    "write_evidence",
    "write_map",
    "write_mar",
    "write_mmp",
    "write_pr",
    "write_uai",
]
