"""Fuzz target: UAI ``MAR`` result files (``tractable.io.read_mar``).

Any input either loads (a list of 1-D float arrays) or raises ``ValueError`` naming the file.
"""

from _target import check_reader, instrument, main, write

with instrument():
    from tractable.io import read_mar


def test_one_input(data: bytes) -> None:
    marginals = check_reader(read_mar, write(data, ".MAR"))
    if marginals is not None:
        assert all(m.ndim == 1 and m.dtype.kind == "f" for m in marginals)


if __name__ == "__main__":
    main(test_one_input)
