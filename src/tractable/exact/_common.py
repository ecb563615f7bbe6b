"""What the exact algorithms share: limits, argument checks and the results they build."""

from __future__ import annotations

import math
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


#: a factor table with a finite entry larger than this in magnitude is shifted by its largest finite entry
#: (:func:`shifted_table`)
HUGE = 2.0**20


def shifted_table(table: np.ndarray) -> tuple[np.ndarray, float]:
    """``(table - top, top)`` with ``top`` the largest finite entry, when some finite entry exceeds
    :data:`HUGE` in magnitude; else ``(table, 0.0)`` (the table as given: ordinary models are unchanged).

    Shifting each table by its maximum keeps every sum of shifted entries at most 0, so none overflows to
    ``+inf`` (two scores near 1e308 would, and ``inf - inf`` is NaN), and a huge score that every
    labelling that matters shares cancels exactly instead of swallowing the O(1) scores added to it
    (``1e15 + 0.3`` keeps only 0.25 of the 0.3). An entry more than float64's range below its table's
    top becomes ``-inf``; :func:`refuse_overflow` tells that apart from a model without support.
    """
    top = huge_top(table)
    if top is None:
        return table, 0.0
    with np.errstate(over="ignore"):
        return table - top, top


def huge_top(table: np.ndarray) -> float | None:
    """The largest finite entry of ``table`` when some finite entry exceeds :data:`HUGE` in magnitude."""
    fin = np.isfinite(table)
    if not np.any(fin & (np.abs(np.where(fin, table, 0.0)) > HUGE)):
        return None
    return float(table[fin].max())


def safe_sum(values, k: int | None = None) -> float:
    """``sum(values)`` of finite floats without the intermediate overflow of a plain (or ``math.fsum``)
    sum; ``±inf`` only when the sum itself lies beyond float64's range. With ``k``, the values are given
    scaled by ``2**-k`` and the sum is returned unscaled."""
    values = [float(v) for v in values]
    if k is None:
        k = (len(values) + 1).bit_length() + 1  # 2**-k * sum(|values|) cannot overflow
        values = [math.ldexp(v, -k) for v in values]
    total = math.fsum(values)
    try:
        return math.ldexp(total, k)
    except OverflowError:
        return math.copysign(math.inf, total)


def out_of_range(what: str) -> ValueError:
    """The refusal of a result beyond float64's range (``what``: ``"log partition"`` or ``"score"``)."""
    return ValueError(
        "`fg` must keep the log partition function and the scores of its labellings within float64's range "
        f"(about 1.8e308); got a {what} beyond it: rescale the factors' log-potentials."
    )


def too_far_apart() -> ValueError:
    """The refusal of a model whose every labelling's shifted score overflowed (not one without support)."""
    return ValueError(
        "`fg` must hold finite scores within float64's range of each other; got log-potentials so far apart "
        "(differences beyond about 1.8e308) that every labelling's score overflows: rescale them."
    )


def marginals_result(marginals, log_partition: float, t0: float, method: str, detail: str = "") -> MarginalsResult:
    if not np.isfinite(log_partition):  # finite scores whose sums overflow float64 (near 1e308 each)
        raise out_of_range("log partition")
    return MarginalsResult(
        marginals=frozen_marginals(marginals),
        log_partition=float(log_partition),
        time=time.perf_counter() - t0,
        method=method,
        status=OPTIMAL,
        message=stop_message(OPTIMAL, method, 0, detail),
    )


def map_result(assignment, score: float, t0: float, method: str, detail: str = "") -> MAPResult:
    if not score < np.inf:  # +inf or NaN: finite scores summing past float64's range
        raise out_of_range("score")
    return MAPResult(
        assignment=frozen_array(assignment, dtype=np.int64),
        score=float(score),
        time=time.perf_counter() - t0,
        method=method,
        status=OPTIMAL,
        message=stop_message(OPTIMAL, method, 0, detail),
    )
