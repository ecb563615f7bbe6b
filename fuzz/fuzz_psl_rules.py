"""Fuzz target: PSL rule files (``tractable.psl.Model.add_rules``), against declared predicates.

The rules may use ``Knows/2`` (closed), ``Likes/2`` and ``Smokes/1`` (open). Any input either adds its
rules or raises ``ValueError`` naming the file.
"""

from _target import check_reader, instrument, main, write

with instrument():
    from tractable.psl import Model

MODEL = Model()
MODEL.add_predicate("Knows", 2, closed=True)
MODEL.add_predicate("Likes", 2)
MODEL.add_predicate("Smokes", 1)


def _add(path):
    n = len(MODEL._rules)
    try:
        return MODEL.add_rules(path)
    finally:
        del MODEL._rules[n:]  # every input starts from the same model


def test_one_input(data: bytes) -> None:
    check_reader(_add, write(data, ".psl"))


if __name__ == "__main__":
    main(test_one_input)
