"""Fuzz target: UAI model files (``tractable.io.read_uai``).

Any byte string either loads as a :class:`~tractable.FactorGraph` or raises ``ValueError`` naming the file.
Run by ``make fuzz``, or alone: ``python fuzz/fuzz_uai.py CORPUS_DIR fuzz/seeds/uai -max_total_time=60``.
"""

from _target import check_reader, instrument, main, write

with instrument():
    from tractable.io import read_uai


def test_one_input(data: bytes) -> None:
    fg = check_reader(read_uai, write(data, ".uai"))
    if fg is not None:  # what loads must be a usable model: every factor fits its variables
        for factor in fg.factors:
            factor.check_cardinalities(fg.cardinalities)


if __name__ == "__main__":
    main(test_one_input)
