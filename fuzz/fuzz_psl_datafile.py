"""Fuzz target: PSL 2.0-2.3 ``.data`` files (``tractable.psl.config.read_data_file``).

The reader parses the file only (the data files it lists are not opened): any input either gives the
``predicates`` / ``observations`` / ``targets`` / ``truth`` dictionary or raises ``ValueError`` naming the
file.
"""

from _target import check_reader, instrument, main, write

with instrument():
    from tractable.psl.config import read_data_file


def test_one_input(data: bytes) -> None:
    spec = check_reader(read_data_file, write(data, ".data"))
    if spec is not None:
        assert set(spec) == {"predicates", "observations", "targets", "truth"}, spec
        for part in ("observations", "targets", "truth"):
            assert all(isinstance(p, str) for paths in spec[part].values() for p in paths)


if __name__ == "__main__":
    main(test_one_input)
