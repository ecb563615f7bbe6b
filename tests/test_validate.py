"""Shared argument checks (`tractable._validate`): non-real input is a TypeError naming the argument, in every area."""

import re

import numpy as np
import pytest

from tractable import bp, cardinality, clique
from tractable.factorgraph import TableFactor
from tractable.hlmrf import HLMRF

# each entry: (argument name, call taking the offending array in that argument's place, shape it needs)
CALLS = {
    "cardinality.marginals": ("theta", lambda a: cardinality.marginals(a, np.zeros(3)), (2,)),
    "clique.alpha_pass": ("phi", lambda a: clique.alpha_pass(a, clique.Potts(0.5)), (3, 2)),
    "bp.tree_marginals": ("unary", lambda a: bp.tree_marginals(a, np.array([[0, 1]]), np.zeros((1, 2, 2))), (2, 2)),
    "HLMRF.add_potential": ("coefficients", lambda a: HLMRF(2).add_potential([0, 1], a), (2,)),
    "TableFactor": ("log_table", lambda a: TableFactor([0, 1], a), (2, 2)),
}

BAD = {
    "complex": lambda shape: np.zeros(shape, dtype=complex),
    "object": lambda shape: np.zeros(shape, dtype=object),
    "str": lambda shape: np.full(shape, "1.5"),
    "bytes": lambda shape: np.full(shape, b"1"),
    "datetime": lambda shape: np.zeros(shape, dtype="datetime64[s]"),
    "void": lambda shape: np.zeros(shape, dtype="V8"),
}


@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("call", list(CALLS))
def test_non_real_arrays_are_a_type_error_naming_the_argument(call, bad):
    name, fn, shape = CALLS[call]
    arr = BAD[bad](shape)
    message = f"`{name}` must be an array of real numbers; got array of shape {shape} and dtype {arr.dtype}."
    with pytest.raises(TypeError, match=re.escape(message)):
        fn(arr)


def test_complex_list_is_rejected_not_cast():
    with pytest.raises(TypeError, match=re.escape("`theta` must be an array of real numbers; got [1j, 0] (dtype")):
        cardinality.marginals([1j, 0], np.zeros(3))


@pytest.mark.parametrize("call", list(CALLS))
def test_bool_and_integer_arrays_are_numbers(call):
    _, fn, shape = CALLS[call]
    fn(np.ones(shape, dtype=bool))
    fn(np.ones(shape, dtype=np.int32))


def test_index_arrays_keep_their_rules():
    m = HLMRF(3)
    m.add_potential(np.array([0.0, 2.0]), [1.0, 1.0])  # integral floats are indices
    for bad in (np.array([0.5, 1.0]), np.array([0j, 1j]), np.array(["0", "1"]), np.array([True, False])):
        with pytest.raises(TypeError, match=re.escape("`variables` must contain integers; got array of shape (2,)")):
            m.add_potential(bad, [1.0, 1.0])


def test_numbers_in_0d_arrays_and_flags_not_given():
    """A 0-d array of reals is a number (as NumPy hands them out); a flag not given (None) is False; a bool,
    a 0-d bool array or text is no number, and text is no flag."""
    from tractable._validate import check_bool, check_finite, check_positive

    assert check_finite(np.array(0.5), "x") == 0.5 and check_positive(np.array(2), "x") == 2.0
    assert check_bool(None, "flag") is False and check_bool(np.bool_(True), "flag") is True
    for bad in (True, np.array(True), "1"):
        with pytest.raises(TypeError, match="`x` must be a real number"):
            check_finite(bad, "x")
    with pytest.raises(TypeError, match="`flag` must be True or False; got 'no'"):
        check_bool("no", "flag")
