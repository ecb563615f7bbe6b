"""Fuzz target: UAI evidence files (``tractable.io.read_evidence``), alone and against a model.

The first byte picks whether the evidence is read alone or checked against a small model (variables of 2,
3 and 2 states); the rest is the file. Any input either loads or raises ``ValueError`` naming the file, and
evidence read against the model is valid for it (``FactorGraph.check_evidence`` accepts it).
"""

from _target import check_reader, instrument, main, write

with instrument():
    from tractable import FactorGraph
    from tractable.io import read_evidence

MODEL = FactorGraph([2, 3, 2])


def test_one_input(data: bytes) -> None:
    with_model = bool(data[:1]) and data[0] & 1
    path = write(data[1:], ".evid")
    if with_model:
        evidence = check_reader(lambda p: read_evidence(p, MODEL), path)
        if evidence is not None:
            MODEL.check_evidence(evidence)
    else:
        check_reader(read_evidence, path)


if __name__ == "__main__":
    main(test_one_input)
