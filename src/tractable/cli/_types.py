"""Argument types of the command line: the parser refuses a bad value and names the flag.

Each is an ``argparse`` ``type=``: ``--max-iter 0`` ends with ``tractable psl: error: argument --max-iter:
expected an integer >= 1; got '0'`` (exit status 2) before any file is read, instead of an error from the
library, after the work before it, that names the keyword argument (``max_iter``) the user never typed.
The ranges are the library's own (``hlmrf.solve``, ``bp.loopy``, ``sampling.adaptive_mmp``, ...).
"""

from __future__ import annotations

import argparse
import math

__all__ = ["between", "finite", "fraction_below_one", "integer", "non_negative", "positive", "seed"]


def integer(minimum: int | None = None, maximum: int | None = None):
    """An integer in ``[minimum, maximum]``."""
    if minimum is not None and maximum is not None:
        want = f"an integer from {minimum} to {maximum}"
    elif minimum is not None:
        want = f"an integer >= {minimum}"
    elif maximum is not None:
        want = f"an integer <= {maximum}"
    else:
        want = "an integer"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {want}; got {text!r}") from None
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"expected {want}; got {text!r}")
        return value

    parse.__name__ = "integer"  # argparse names the type in its own messages
    return parse


def _real(text: str, want: str, ok) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {want}; got {text!r}") from None
    if not math.isfinite(value) or not ok(value):
        raise argparse.ArgumentTypeError(f"expected {want}; got {text!r}")
    return value


def positive(text: str) -> float:
    """A finite number ``> 0``."""
    return _real(text, "a finite number > 0", lambda v: v > 0)


def non_negative(text: str) -> float:
    """A finite number ``>= 0``."""
    return _real(text, "a finite number >= 0", lambda v: v >= 0)


def finite(text: str) -> float:
    """A finite number."""
    return _real(text, "a finite number", lambda v: True)


def between(low: float, high: float):
    """A number in the open interval ``(low, high)``."""

    def parse(text: str) -> float:
        return _real(text, f"a number between {low:g} and {high:g} (both excluded)", lambda v: low < v < high)

    parse.__name__ = "number"
    return parse


def fraction_below_one(text: str) -> float:
    """A number in ``[0, 1)``."""
    return _real(text, "a number in [0, 1)", lambda v: 0 <= v < 1)


#: a random seed: what ``numpy.random.default_rng`` takes
seed = integer(minimum=0)
