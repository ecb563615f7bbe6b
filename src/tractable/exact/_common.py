"""What the exact algorithms share: limits, argument checks and the results they build."""

from __future__ import annotations

import time

import numpy as np

from .._errors import ZeroPartitionError
from .._results import OPTIMAL, MAPResult, MarginalsResult, frozen_array, frozen_marginals, stop_message
from .._validate import check_choice
from ..factorgraph import FactorGraph

#: Largest joint table (number of assignments) that enumeration builds by default (2**24 = 128 MiB).
DEFAULT_MAX_STATES = 2**24
#: Largest intermediate table of variable elimination by default (2**25 entries = 256 MiB).
DEFAULT_MAX_TABLE_SIZE = 2**25
#: ``infer(method="auto")`` enumerates models with at most this many assignments (2**16).
DEFAULT_ENUMERATE_BELOW = 2**16

TASKS = ("marginals", "map")


def check_graph(fg) -> FactorGraph:
    if not isinstance(fg, FactorGraph):
        raise TypeError(f"`fg` must be a FactorGraph; got {type(fg).__name__}.")
    return fg


def check_task(task) -> str:
    return check_choice(task, "task", TASKS)


def n_states(fg: FactorGraph) -> int:
    """Number of joint assignments of ``fg`` (an exact Python int)."""
    card = fg.cardinalities
    return int(np.prod(card.astype(object))) if card.size else 1


def no_support(task: str) -> ZeroPartitionError:
    return ZeroPartitionError(
        f"no configuration has non-zero probability (every assignment has score -inf), so {task} undefined."
    )


def marginals_result(marginals, log_partition: float, t0: float, method: str, detail: str = "") -> MarginalsResult:
    return MarginalsResult(
        marginals=frozen_marginals(marginals),
        log_partition=float(log_partition),
        time=time.perf_counter() - t0,
        method=method,
        status=OPTIMAL,
        message=stop_message(OPTIMAL, method, 0, detail),
    )


def map_result(assignment, score: float, t0: float, method: str, detail: str = "") -> MAPResult:
    return MAPResult(
        assignment=frozen_array(assignment, dtype=np.int64),
        score=float(score),
        time=time.perf_counter() - t0,
        method=method,
        status=OPTIMAL,
        message=stop_message(OPTIMAL, method, 0, detail),
    )
