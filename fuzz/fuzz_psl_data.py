"""Fuzz target: PSL data files (tab-separated atoms) of a tiny program, loaded and grounded.

The program (``Knows/2`` closed, ``Likes/2`` open, two rules) reads the input as one of its data files,
picked by the first byte (modulo 3): the observations of ``Knows``, the targets of ``Likes`` or the truth
of ``Likes`` (the other parts are fixed). The model is loaded and grounded; with the truth it is also
solved and evaluated. Loading either succeeds or raises ``ValueError`` naming the data file; grounding,
solving and evaluating the loaded model may raise ``ValueError`` (a model without targets has nothing
to infer), nothing else.
"""

import atexit
import json
import os
import shutil
import tempfile

from _target import check_reader, instrument, main, write

with instrument():
    from tractable.psl import Model

_DIR = tempfile.mkdtemp(prefix="tractable-fuzz-psl-")
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)
_FIXED = {"knows.txt": "a\tb\nb\tc\n", "targets.txt": "a\tx\nb\tx\nc\tx\n", "truth.txt": "a\tx\t1\n"}
for _name, _text in _FIXED.items():
    with open(os.path.join(_DIR, _name), "w", encoding="utf-8") as _fh:
        _fh.write(_text)
RULES = ["1.0: Knows(A, B) & Likes(A, C) -> Likes(B, C) ^2", "0.1: !Likes(A, C) ^2"]


def _program(role: int, path: str) -> str:
    """A JSON program in the fixture folder whose file ``role`` is ``path``."""
    parts = [os.path.join(_DIR, "knows.txt"), os.path.join(_DIR, "targets.txt"), os.path.join(_DIR, "truth.txt")]
    parts[role] = str(path)
    cfg = {
        "rules": RULES,
        "predicates": {
            "Knows/2": {"observations": [parts[0]]},
            "Likes/2": {"targets": [parts[1]], "truth": [parts[2]], "evaluations": ["DiscreteEvaluator"]},
        },
    }
    program = os.path.join(_DIR, f"program-{role}.json")
    with open(program, "w", encoding="utf-8") as fh:
        json.dump(cfg, fh)
    return program


def _load(role: int):
    def run(path):
        model = Model.from_json(_program(role, path))  # reading the data: a ValueError names the file
        try:
            model.ground()
            if role == 2:
                predictions, _ = model.infer(max_iter=200)
                model.evaluate(predictions)
        except ValueError:
            pass  # the data read, the model may still be unusable (no targets at all): any ValueError will do
        finally:
            model.close()
        return model

    run.__name__ = f"psl data file ({['observations', 'targets', 'truth'][role]})"
    return run


def test_one_input(data: bytes) -> None:
    role = data[0] % 3 if data else 0
    check_reader(_load(role), write(data[1:], ".txt"))


if __name__ == "__main__":
    main(test_one_input)
