"""Probabilistic Soft Logic (PSL) front end: PSL programs grounded by SQL in DuckDB, solved by ADMM.

PSL programs (PSL 2.4 JSON configurations, or PSL 2.0-2.3 ``.psl`` rule files with ``.data`` files)
are parsed (:mod:`~tractable.psl.parser`), grounded by one DuckDB query per rule into the flat arrays
of a hinge-loss MRF (:mod:`~tractable.psl.grounding`) and solved by :func:`tractable.hlmrf.solve`. Rule
weights are learned from a ``truth`` partition by PSL's learners (:mod:`~tractable.psl.learning`,
:mod:`~tractable.psl.search`, :meth:`Model.learn`).
See ``docs/psl.md`` for the semantics and the differences from PSL.
"""

from .evaluation import EVALUATORS, evaluate_arrays, evaluate_predicate
from .learning import LEARNERS, LearnResult
from .model import PARTITIONS, GroundModel, Model
from .parser import ArithmeticRule, LogicalRule, parse_rule, parse_rules

__all__ = [
    "EVALUATORS",
    "PARTITIONS",
    "ArithmeticRule",
    "GroundModel",
    "LEARNERS",
    "LearnResult",
    "LogicalRule",
    "Model",
    "evaluate_arrays",
    "evaluate_predicate",
    "parse_rule",
    "parse_rules",
]
