"""Fuzz target: PSL 2.4 JSON configurations (``tractable.psl.Model.from_json``).

Any input either builds a model or raises ``ValueError`` naming the file; a configuration that points to a
data file that does not exist may raise ``OSError`` for that other file (never for the input itself).
"""

from _target import check_reader, instrument, main, write

with instrument():
    from tractable.psl import Model


def _load(path):
    try:
        model = Model.from_json(path)
    except OSError as err:
        if err.filename is not None and str(err.filename) == str(path):
            raise
        return None
    model.close()
    return model


def test_one_input(data: bytes) -> None:
    check_reader(_load, write(data, ".json"))


if __name__ == "__main__":
    main(test_one_input)
