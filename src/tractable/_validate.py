"""Shared argument checks.

Every public function validates its arguments once, up front, with these helpers, so that bad input
fails with a message that names the argument, says what was expected and shows what was given.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable, Mapping, Sequence

import numpy as np

__all__ = [
    "as_float_array",
    "as_binary_assignment",
    "as_index_array",
    "check_bool",
    "check_choice",
    "check_options",
    "check_finite",
    "check_int",
    "check_magnitude",
    "check_memory",
    "check_positive",
    "check_rng",
    "check_shape",
    "resolve_method",
]


#: dtype kinds accepted as real numbers: bool, signed and unsigned integers, floats.
_REAL_KINDS = "biuf"


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def as_float_array(
    value,
    name: str,
    *,
    ndim: int | None = None,
    allow_nan: bool = False,
    allow_posinf: bool = False,
    allow_neginf: bool = True,
) -> np.ndarray:
    """Convert ``value`` to a float64 array and check its entries.

    Parameters
    ----------
    value : array_like
        The argument as given by the user.
    name : str
        The argument's name, used in error messages.
    ndim : int, optional
        Required number of dimensions.
    allow_nan, allow_posinf, allow_neginf : bool
        Which non-finite values are allowed. ``-inf`` (a forbidden configuration in log space) is
        allowed by default; NaN and ``+inf`` are not.

    Returns
    -------
    ndarray of float64
        A new array (never a view of ``value``), so callers may keep it without copying again.
    """
    try:
        given = value if isinstance(value, np.ndarray) else np.asarray(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"`{name}` must be an array of real numbers; got {_describe(value)}.") from err
    if given.dtype.kind not in _REAL_KINDS:  # complex, object, str, bytes, void, datetime: never cast silently
        raise TypeError(
            f"`{name}` must be an array of real numbers; got {_describe(value)}"
            f"{'' if isinstance(value, np.ndarray) else f' (dtype {given.dtype})'}."
        )
    arr = np.array(given, dtype=np.float64, copy=True)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"`{name}` must be a {ndim}-D array; got shape {arr.shape}.")
    if not allow_nan and np.isnan(arr).any():
        raise ValueError(f"`{name}` must not contain NaN; got NaN at index {_first(np.isnan(arr))}.")
    if not allow_posinf and np.isposinf(arr).any():
        raise ValueError(f"`{name}` must not contain +inf; got +inf at index {_first(np.isposinf(arr))}.")
    if not allow_neginf and np.isneginf(arr).any():
        raise ValueError(f"`{name}` must not contain -inf; got -inf at index {_first(np.isneginf(arr))}.")
    return arr


def _first(mask: np.ndarray):
    idx = np.argwhere(mask)[0]
    return tuple(int(i) for i in idx) if idx.size > 1 else int(idx[0]) if idx.size == 1 else ()


def as_index_array(value, name: str, *, size: int | None = None, ndim: int = 1) -> np.ndarray:
    """Convert ``value`` to an int64 array of indices; with ``size``, check ``0 <= index < size``."""
    arr = np.asarray(value)
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.dtype == bool or not (
        np.issubdtype(arr.dtype, np.integer)
        or (np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)))
    ):
        raise TypeError(f"`{name}` must contain integers; got {_describe(value)}.")
    arr = arr.astype(np.int64)
    if arr.ndim != ndim:
        raise ValueError(f"`{name}` must be a {ndim}-D array of integers; got shape {arr.shape}.")
    if size is not None and arr.size and (arr.min() < 0 or arr.max() >= size):
        bad = arr[(arr < 0) | (arr >= size)].flat[0]
        raise ValueError(f"`{name}` must contain indices in [0, {size - 1}]; got {int(bad)}.")
    return arr


def as_binary_assignment(value, name: str, n: int) -> np.ndarray:
    """Convert ``value`` to an int64 assignment of ``n`` binary variables: shape ``(n,)``, entries 0 or 1."""
    try:
        given = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"`{name}` must be a 0/1 array of shape ({n},); got {_describe(value)}.") from err
    arr = as_index_array(given, name, ndim=given.ndim)
    if arr.shape != (n,):
        raise ValueError(f"`{name}` must be a 0/1 array of shape ({n},); got {arr.shape}.")
    bad = (arr < 0) | (arr > 1)
    if bad.any():
        raise ValueError(
            f"`{name}` must be a 0/1 array of shape ({n},); got {int(arr[bad][0])} at index {_first(bad)}."
        )
    return arr


#: A request whose memory estimate exceeds this share of the physical memory is refused up front.
MEMORY_FRACTION = 0.5


def physical_memory() -> int | None:
    """Bytes of physical memory, or None where the platform does not say (then nothing is refused)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def format_bytes(n: int) -> str:
    """``n`` bytes in GiB or MiB, for messages."""
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def check_memory(count: int, bytes_each: int, name: str | Sequence[str], what: str) -> None:
    """Refuse up front a request that cannot fit in memory, instead of a ``MemoryError`` after gigabytes.

    Parameters
    ----------
    count : int
        How many items the request allocates (a Python int: no overflow), e.g. variables or entries.
    bytes_each : int
        An estimate of the bytes each item needs (a lower bound is enough to refuse the hopeless).
    name : str or sequence of str
        The argument (or arguments, whose product is ``count``) that sets ``count``, named in the message.
    what : str
        What the items are, for the message (``"variables"``, ``"table entries"``).

    Raises
    ------
    ValueError
        ``count * bytes_each`` exceeds :data:`MEMORY_FRACTION` of the physical memory; the message names
        the size asked for and what fits.
    """
    memory = physical_memory()
    if memory is None or memory <= 0:
        return
    need = int(count) * int(bytes_each)
    budget = int(memory * MEMORY_FRACTION)
    if need <= budget:
        return
    names = " * ".join(f"`{n}`" for n in ([name] if isinstance(name, str) else name))
    raise ValueError(
        f"{names} asks for {int(count)} {what}: about {format_bytes(need)} ({bytes_each} bytes each), more than "
        f"{MEMORY_FRACTION:.0%} of this machine's {format_bytes(memory)} of memory; at most about "
        f"{budget // max(int(bytes_each), 1)} fit."
    )


def check_shape(arr: np.ndarray, shape: Sequence[int | None], name: str) -> None:
    """Check ``arr.shape`` against ``shape`` (``None`` matches any length)."""
    ok = arr.ndim == len(shape) and all(s is None or s == a for s, a in zip(shape, arr.shape))
    if not ok:
        want = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        raise ValueError(f"`{name}` must have shape {want}; got {arr.shape}.")


def check_int(value, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Check that ``value`` is an integer in ``[minimum, maximum]`` and return it as ``int``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` must be an integer; got {_describe(value)}.")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"`{name}` must be >= {minimum}; got {value}.")
    if maximum is not None and value > maximum:
        raise ValueError(f"`{name}` must be <= {maximum}; got {value}.")
    return value


def check_bool(value, name: str) -> bool:
    """Check that ``value`` is ``True`` or ``False`` (a NumPy bool too) and return it as ``bool``; ``None``
    (an option not given) is ``False``.

    Never ``bool(value)``: a flag given as ``"no"`` or ``0.5`` is a mistake, not a true value.
    """
    if value is None:
        return False
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"`{name}` must be True or False; got {_describe(value)}.")


def _real_scalar(value):
    """``value``, or the number a 0-d array of reals holds (``np.array(0.5)``: a number too)."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        return value.item()
    return value


def check_positive(value, name: str, *, strict: bool = True) -> float:
    """Check that ``value`` is a finite real number ``> 0`` (``>= 0`` when ``strict=False``)."""
    value = _real_scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a real number; got {_describe(value)}.")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (strict and value == 0):
        raise ValueError(f"`{name}` must be a finite number {'>' if strict else '>='} 0; got {value}.")
    return value


def check_finite(value, name: str) -> float:
    """Check that ``value`` is a finite real number and return it as ``float``."""
    value = _real_scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a real number; got {_describe(value)}.")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"`{name}` must be finite; got {value}.")
    return value


def check_magnitude(arr: np.ndarray, name: str, limit: float, reason: str = "") -> None:
    """Refuse finite entries of ``arr`` larger than ``limit`` in magnitude (``±inf`` are left to the other checks).

    Parameters
    ----------
    arr : ndarray of float
        A validated array (no NaN).
    name : str
        The argument's name, used in the message.
    limit : float
        The largest magnitude allowed.
    reason : str
        Why, appended to the message (``"so that ..."``).

    Raises
    ------
    ValueError
        Naming ``name``, the limit, the first offending value and its index.
    """
    big = np.isfinite(arr) & (np.abs(np.where(np.isfinite(arr), arr, 0.0)) > limit)
    if big.any():
        idx = _first(big)
        raise ValueError(
            f"`{name}` must hold finite values of magnitude at most {limit:.6g}{f' ({reason})' if reason else ''}; "
            f"got {float(arr[idx])!r} at index {idx}."
        )


def check_choice(value, name: str, choices: Sequence[str]) -> str:
    """Check that ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {', '.join(repr(c) for c in choices)}; got {value!r}.")
    return value


def resolve_method(method, methods: Mapping[str, Callable], name: str = "method") -> Callable:
    """Look ``method`` up in an area's dict of callables (the one way every ``method=`` is resolved).

    Raises
    ------
    ValueError
        ``method`` is not a key of ``methods``; the message lists the valid names.
    """
    try:
        return methods[method]
    except (KeyError, TypeError) as err:
        valid = ", ".join(repr(k) for k in methods)
        raise ValueError(f"`{name}` must be one of {valid}; got {_describe(method)}.") from err


def check_options(method: str, options: Mapping[str, object], applicable: Sequence[str]) -> None:
    """Reject options that the chosen method would ignore.

    Parameters
    ----------
    method : str
        The method's name, for the message.
    options : mapping
        The options the user set: name -> value, where ``None`` means "not given".
    applicable : sequence of str
        The option names that ``method`` uses.

    Raises
    ------
    ValueError
        An option other than ``applicable`` was given (not None); never dropped silently.
    """
    given = sorted(k for k, v in options.items() if v is not None and k not in applicable)
    if given:
        ok = ", ".join(f"`{k}`" for k in applicable) or "none"
        raise ValueError(
            f"{', '.join(f'`{k}`' for k in given)} do{'es' if len(given) == 1 else ''} not apply to "
            f"`method`={method!r} (its options: {ok})."
        )


def check_rng(rng) -> np.random.Generator:
    """Normalize ``rng`` (None, int seed or Generator) to a ``numpy.random.Generator``."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, numbers.Integral) and not isinstance(rng, bool)):
        if rng is not None and rng < 0:
            raise ValueError(f"`rng` must be a non-negative seed, None or a numpy Generator; got {rng}.")
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    raise TypeError(f"`rng` must be None, an int seed or a numpy.random.Generator; got {_describe(rng)}.")
