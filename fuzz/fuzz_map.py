"""Fuzz target: UAI ``MAP`` result files (``tractable.io.read_map``).

Any input either loads (a 1-D integer array) or raises ``ValueError`` naming the file.
"""

from _target import check_reader, instrument, main, write

with instrument():
    from tractable.io import read_map


def test_one_input(data: bytes) -> None:
    assignment = check_reader(read_map, write(data, ".MAP"))
    if assignment is not None:
        assert assignment.ndim == 1 and assignment.dtype.kind in "iu"


if __name__ == "__main__":
    main(test_one_input)
