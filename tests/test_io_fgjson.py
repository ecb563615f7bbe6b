"""The factor-graph file format (``tractable.io.read_factor_graph`` / ``write_factor_graph``) and
``tractable solve`` on such files: round trips of every factor type, hostile files (one-line errors
naming the file and the place, exit 2 on the command line), and the engines it feeds."""

from __future__ import annotations

import gzip
import itertools
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tractable import CardinalityFactor, CliqueFactor, FactorGraph, RecursiveCardinalityFactor, TableFactor
from tractable.bp import loopy
from tractable.cli import EXIT_BAD_INPUT, EXIT_NO_SOLUTION, main
from tractable.clique import (
    CountPotential,
    Entropy,
    LinearMajority,
    Makespan,
    MaxPotential,
    Potts,
    SquareMakespan,
    SumPotential,
)
from tractable.exact import enumerate_map, enumerate_marginals
from tractable.io import fgjson, read_factor_graph, read_map, read_mar, write_evidence, write_factor_graph, write_uai

NEG = -np.inf


def _all_assignments(fg):
    return np.array(list(itertools.product(*[range(int(c)) for c in fg.cardinalities])), dtype=np.int64)


def _same_graph(a: FactorGraph, b: FactorGraph) -> None:
    """Identical variables and factors: type, scope, parameters, and the scores of every assignment."""
    assert a.cardinalities.tolist() == b.cardinalities.tolist()
    assert a.names == b.names and a.state_names == b.state_names
    assert a.constant == b.constant or (np.isneginf(a.constant) and np.isneginf(b.constant))
    assert len(a.factors) == len(b.factors)
    for fa, fb in zip(a.factors, b.factors):
        assert type(fa) is type(fb)
        assert fa.variables.tolist() == fb.variables.tolist()
        if isinstance(fa, TableFactor):
            np.testing.assert_array_equal(fa.log_table, fb.log_table)
        elif isinstance(fa, CardinalityFactor):
            np.testing.assert_array_equal(fa.log_potentials, fb.log_potentials)
            assert fa.label == fb.label and fa.n_states.tolist() == fb.n_states.tolist()
        elif isinstance(fa, RecursiveCardinalityFactor):
            assert [s.tolist() for s in fa.subsets] == [s.tolist() for s in fb.subsets]
            for pa, pb in zip(fa.count_potentials, fb.count_potentials):
                np.testing.assert_array_equal(pa, pb)
        else:
            assert type(fa.potential) is type(fb.potential)
            assert fa.n_states == fb.n_states and fa.fixed_counts.tolist() == fb.fixed_counts.tolist()
            for attr in ("lam", "f", "W"):
                if hasattr(fa.potential, attr):
                    np.testing.assert_array_equal(getattr(fa.potential, attr), getattr(fb.potential, attr))
    if np.prod(a.cardinalities.astype(float)) <= 5000:
        y = _all_assignments(a)
        np.testing.assert_array_equal(a.score(y), b.score(y))


def _every_factor_graph() -> FactorGraph:
    fg = FactorGraph([2, 2, 2, 3, 3, 3], constant=-1.5)
    fg.add_factor(TableFactor([0, 3], [[0.0, 1.0, NEG], [2.0, 3.0, 4.5]]))
    fg.add_factor(TableFactor([], np.array(0.25)))
    fg.add_factor(TableFactor([4], [0.1, 0.2, 0.30000000000000004]))
    fg.add_factor(CardinalityFactor([0, 1, 2], [0.0, 1.0, NEG, 2.0]))
    fg.add_factor(CardinalityFactor([3, 4, 5], [0.0, 1.0, NEG, 2.0], label=2, n_states=3))
    fg.add_factor(RecursiveCardinalityFactor([0, 1, 2], [[0, 1], [2, 1, 0]], [[0.0, 0.0, NEG], [0.0, 1.0, 2.0, 3.0]]))
    fg.add_factor(CliqueFactor([3, 4, 5], Potts(0.5)))
    fg.add_factor(CliqueFactor([3, 4], Entropy(-0.25)))
    fg.add_factor(CliqueFactor([4, 5], Makespan(0.7)))
    fg.add_factor(CliqueFactor([3, 5], SquareMakespan(-0.1)))
    fg.add_factor(CliqueFactor([3, 4], SumPotential([[0.0, 1.0, NEG], [0.0, 2.0, 1.0], [1.0, 1.0, 1.0]])))
    fg.add_factor(CliqueFactor([4, 5], MaxPotential(np.arange(12.0).reshape(3, 4) / 7), fixed_counts=[1, 0, 0]))
    fg.add_factor(CliqueFactor([3, 5], LinearMajority(np.array([[1.0, 0.5, 0], [0, 2, 0], [0.25, 0, 1]]))))
    return fg


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("name", ["m.json", "m.json.gz", "m.fg"])
def test_every_factor_type_round_trips(tmp_path, name):
    fg = _every_factor_graph()
    write_factor_graph(tmp_path / name, fg)
    back = read_factor_graph(tmp_path / name)
    _same_graph(fg, back)
    assert (tmp_path / name).read_bytes()[:2] == (b"\x1f\x8b" if name.endswith(".gz") else b"{\n")


def test_names_state_names_and_a_neginf_constant_round_trip(tmp_path):
    fg = FactorGraph([2, 3], ["rain", "sky"], constant=NEG, state_names=[["no", "yes"], [0, 1.5, True]])
    fg.add_factor(TableFactor([1, 0], [[0.0, NEG], [1e-300, 5e-324], [1.7976931348623157e308, -2.5]]))
    write_factor_graph(tmp_path / "m.json", fg)
    back = read_factor_graph(tmp_path / "m.json")
    _same_graph(fg, back)
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["constant"] == "-inf" and doc["names"] == ["rain", "sky"]
    assert doc["factors"][0]["log_table"][0] == [0.0, "-inf"]


def test_the_file_mirrors_the_python_api(tmp_path):
    fg = FactorGraph([3, 3, 2])
    fg.add_factor(CardinalityFactor([0, 1], [0.0, 1.0, 2.0], label=2, n_states=3))
    fg.add_factor(CliqueFactor([0, 1], Potts(0.5)))
    write_factor_graph(tmp_path / "m.json", fg)
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc == {
        "format": "tractable-factor-graph",
        "version": 1,
        "cardinalities": [3, 3, 2],
        "factors": [
            {"type": "cardinality", "variables": [0, 1], "log_potentials": [0.0, 1.0, 2.0], "label": 2, "n_states": 3},
            {"type": "clique", "variables": [0, 1], "potential": {"type": "potts", "lam": 0.5}, "n_states": 3},
        ],
    }


def test_a_hand_written_file_with_integers_nulls_and_per_variable_n_states(tmp_path):
    text = """{"format": "tractable-factor-graph", "version": 1, "cardinalities": [3, 4, 2, 2],
      "factors": [
        {"type": "table", "variables": [2, 3], "log_table": [[0, 1], [-1, "-inf"]]},
        {"type": "cardinality", "variables": [0, 1], "log_potentials": [0, 1, 3], "label": 1, "n_states": [3, 4]},
        {"type": "cardinality", "variables": [2, 3], "log_potentials": [0, 0, 0], "label": null, "n_states": null},
        {"type": "clique", "variables": [2, 3], "potential": {"type": "max", "table": [[0, 1, 2], [0, "-inf", 1]]},
         "n_states": null, "fixed_counts": null}
      ]}"""
    (tmp_path / "h.json").write_text(text)
    fg = read_factor_graph(tmp_path / "h.json")
    kinds = [type(f).__name__ for f in fg.factors]
    assert kinds == ["TableFactor", "CardinalityFactor", "CardinalityFactor", "CliqueFactor"]
    assert fg.factors[1].n_states.tolist() == [3, 4] and fg.factors[1].label == 1
    assert fg.factors[2].label is None and fg.factors[3].n_states == 2
    assert fg.score([2, 1, 1, 1]) == -np.inf
    # table -1; one variable in state 1: +1; one of two binary variables on: 0; counts (1, 1): max(1, -inf)
    assert fg.score([0, 1, 1, 0]) == -1.0 + 1.0 + 0.0 + 1.0


def _values(draw, n, allow_neginf=True):
    finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
    elements = st.one_of(finite, st.just(NEG)) if allow_neginf else finite
    return np.array(draw(st.lists(elements, min_size=n, max_size=n)), dtype=np.float64)


@st.composite
def _graphs(draw):
    n = draw(st.integers(1, 5))
    card = draw(st.lists(st.integers(2, 3), min_size=n, max_size=n))
    constant = draw(st.one_of(st.floats(-10, 10), st.just(NEG)))
    names = draw(st.one_of(st.none(), st.just([f"v{i}" for i in range(n)])))
    fg = FactorGraph(card, names, constant=constant)
    binary = [v for v in range(n) if card[v] == 2]
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["table", "cardinality", "label", "recursive", "clique"]))
        if kind in ("cardinality", "recursive") and not binary:
            kind = "table"
        if kind == "table":
            scope = draw(st.permutations(range(n)))[: draw(st.integers(0, min(n, 3)))]
            shape = [card[v] for v in scope]
            fg.add_factor(TableFactor(scope, _values(draw, int(np.prod(shape))).reshape(shape)))
        elif kind == "cardinality":
            scope = draw(st.permutations(binary))[: draw(st.integers(1, len(binary)))]
            fg.add_factor(CardinalityFactor(scope, _values(draw, len(scope) + 1)))
        elif kind == "label":
            scope = draw(st.permutations(range(n)))[: draw(st.integers(1, n))]
            ns = [card[v] for v in scope]
            label = draw(st.integers(0, min(ns) - 1))
            fg.add_factor(CardinalityFactor(scope, _values(draw, len(scope) + 1), label=label, n_states=ns))
        elif kind == "recursive":
            scope = draw(st.permutations(binary))[: draw(st.integers(1, len(binary)))]
            sizes = sorted(set(draw(st.lists(st.integers(1, len(scope)), min_size=1, max_size=3))))
            subsets = [scope[:k] for k in sizes]  # prefixes: nested
            pots = []
            for k in sizes:
                f = _values(draw, k + 1)
                if np.isneginf(f).all():
                    f[0] = 0.0
                pots.append(f)
            fg.add_factor(RecursiveCardinalityFactor(scope, subsets, pots))
        else:
            m = draw(st.sampled_from(sorted(set(card))))
            same = [v for v in range(n) if card[v] == m]
            scope = draw(st.permutations(same))[: draw(st.integers(1, len(same)))]
            fixed = draw(st.lists(st.integers(0, 2), min_size=m, max_size=m))
            total = len(scope) + sum(fixed)
            family = draw(st.sampled_from(["potts", "entropy", "makespan", "square", "sum", "max", "majority"]))
            if family in ("sum", "max"):
                table = _values(draw, m * (total + 1)).reshape(m, total + 1)
                pot = (SumPotential if family == "sum" else MaxPotential)(table)
            elif family == "majority":
                pot = LinearMajority(_values(draw, m * m, allow_neginf=False).reshape(m, m))
            else:
                cls = {"potts": Potts, "entropy": Entropy, "makespan": Makespan, "square": SquareMakespan}[family]
                pot = cls(draw(st.floats(-5, 5)))
            fg.add_factor(CliqueFactor(scope, pot, n_states=m, fixed_counts=fixed))
    return fg


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fg=_graphs(), gz=st.booleans())
def test_random_small_graphs_round_trip(tmp_path, fg, gz):
    path = tmp_path / ("r.json.gz" if gz else "r.json")
    write_factor_graph(path, fg)
    back = read_factor_graph(path)
    _same_graph(fg, back)
    write_factor_graph(tmp_path / "again.json", back)  # the same text again
    assert (tmp_path / "again.json").read_bytes() == (gzip.decompress(path.read_bytes()) if gz else path.read_bytes())


def test_write_refuses_what_the_format_cannot_hold(tmp_path):
    fg = FactorGraph([2, 2])
    fg.add_factor(CliqueFactor([0, 1], CountPotential(lambda c: c[..., 0] * 1.0)))
    with pytest.raises(TypeError, match=r"`fg.factors\[0\]`.*CountPotential"):
        write_factor_graph(tmp_path / "x.json", fg)
    with pytest.raises(TypeError, match=re.escape("`fg` must be a tractable.FactorGraph; got dict {'cardinalities'")):
        write_factor_graph(tmp_path / "x.json", {"cardinalities": [2]})
    with pytest.raises(TypeError, match=re.escape("`path` must be a file path (str or os.PathLike); got FactorGraph(")):
        write_factor_graph(FactorGraph([2]), tmp_path / "x.json")  # swapped: the path comes first
    with pytest.raises(TypeError, match=re.escape("`path` must be a file path (str or os.PathLike); got int 3.")):
        read_factor_graph(3)
    with pytest.raises(TypeError, match=r"state_names\[0\]\[1\]"):
        write_factor_graph(tmp_path / "x.json", FactorGraph([2], state_names=[["a", ("b",)]]))
    assert not (tmp_path / "x.json").exists()


# ----------------------------------------------------------------------------- hostile files

_T = '{"type": "table", "variables": [0], "log_table": [0, 1]}'


def _doc(factors=_T, cardinalities="[2, 3]", extra=""):
    return (
        f'{{"format": "tractable-factor-graph", "version": 1, "cardinalities": {cardinalities}{extra}, '
        f'"factors": [{factors}]}}'
    )


def _clique(potential, extra=""):
    return _doc(f'{{"type": "clique", "variables": [0, 1], "potential": {potential}{extra}}}', "[3, 3]")


#: name -> (file content, fragments the one-line message must hold besides the file name)
HOSTILE = {
    "not-json": ("MARKOV\n1\n2\n", ["not JSON", "line 1, column 1"]),
    "truncated": (_doc()[:-3], ["not JSON"]),
    "empty": ("", ["not JSON"]),
    "top-level-list": ("[1, 2]", ["not a tractable factor graph", "a list of 2 items"]),
    "no-format": ('{"rules": []}', ['"format": "tractable-factor-graph"', "without it"]),
    "wrong-format": (_doc().replace("tractable-factor-graph", "uai"), ['got "uai"']),
    "newer-version": (_doc().replace('"version": 1', '"version": 2'), ["version 2 is newer"]),
    "version-string": (_doc().replace('"version": 1', '"version": "1"'), ['"version" must be 1', '"1"']),
    "unknown-top-field": (_doc(extra=', "edges": []'), ['unknown field "edges"', '"cardinalities"']),
    "missing-cardinalities": (
        '{"format": "tractable-factor-graph", "version": 1, "factors": []}',
        ['needs the field "cardinalities"'],
    ),
    "cardinality-1": (_doc(cardinalities="[2, 1]"), ["cardinalities[1]", "got 1"]),
    "cardinality-float": (_doc(cardinalities="[2, 3.0]"), ["cardinalities[1] must be an integer", "3.0"]),
    "cardinality-bool": (_doc(cardinalities="[true, 3]"), ["cardinalities[0] must be an integer", "true"]),
    "cardinality-huge-int": (
        _doc(cardinalities="[2, " + "9" * 60 + "]"),
        ["cardinalities[1] must be an integer <= 9223372036854775807", "99..."],
    ),
    "cardinalities-huge-sum": (_doc(cardinalities=f"[2, {2**62}, {2**62}]"), ["`cardinalities`", "memory"]),
    "factors-not-list": (_doc().replace(f"[{_T}]", "{}"), ["factors must be a list", "an object"]),
    "factor-not-object": (_doc("[0]"), ["factors[0] must be a factor object"]),
    "unknown-factor-type": (_doc('{"type": "potts", "variables": [0]}'), ['unknown factor type "potts"', '"clique"']),
    "missing-factor-type": (_doc('{"variables": [0]}'), ["factors[0]: unknown factor type none"]),
    "unknown-factor-field": (
        _doc('{"type": "cardinality", "variables": [0], "log_potentials": [0, 1], "lable": 1}'),
        ['factors[0]: unknown field "lable" of a cardinality factor', '"label"'],
    ),
    "missing-factor-field": (_doc('{"type": "table", "variables": [0]}'), ['needs the field "log_table"']),
    "variable-out-of-range": (
        _doc('{"type": "table", "variables": [0, 2], "log_table": [[0, 1], [0, 1]]}'),
        ["factors[0].variables[1]: variable 2 is out of range", "2 variables (0..1)"],
    ),
    "negative-variable": (_doc('{"type": "table", "variables": [-1], "log_table": [0, 1]}'), ["variable -1"]),
    "float-variable": (_doc('{"type": "table", "variables": [0.0], "log_table": [0, 1]}'), ["variables[0]", "0.0"]),
    "repeated-variable": (
        _doc('{"type": "cardinality", "variables": [1, 1], "log_potentials": [0, 0, 0]}'),
        ["factors[0].variables: variable 1 appears twice"],
    ),
    "table-shape": (
        _doc('{"type": "table", "variables": [0, 1], "log_table": [[0, 1, 2], [0, 1]]}'),
        ["factors[0].log_table[1] must have 3 entries", "cardinalities [2, 3]"],
    ),
    "table-too-shallow": (
        _doc('{"type": "table", "variables": [0, 1], "log_table": [0, 1]}'),
        ["factors[0].log_table[0] must be a list of 3 numbers", "cardinalities [2, 3] of variables [0, 1]"],
    ),
    "table-too-deep": (_doc('{"type": "table", "variables": [0], "log_table": [[0], [1]]}'), ["log_table[0]"]),
    "table-string": (_doc('{"type": "table", "variables": [0], "log_table": [0, "1"]}'), ["log_table[1]", '"1"']),
    "nan": (_doc('{"type": "table", "variables": [0], "log_table": [0, NaN]}'), ["log_table[1]", "NaN"]),
    "infinity": (_doc('{"type": "table", "variables": [0], "log_table": [Infinity, 0]}'), ["log_table[0]", "Infinity"]),
    "-infinity-literal": (_doc('{"type": "table", "variables": [0], "log_table": [-Infinity, 0]}'), ["-Infinity"]),
    "+inf-string": (_doc('{"type": "table", "variables": [0], "log_table": ["inf", 0]}'), ['"inf"']),
    "overflowing-float": (_doc('{"type": "table", "variables": [0], "log_table": [0, -1e999]}'), ["out of range"]),
    "overflowing-int": (
        _doc('{"type": "table", "variables": [0], "log_table": [0, ' + "9" * 350 + "]}"),
        ["log_table[1]", "float64"],
    ),
    "duplicate-key": (_doc(extra=', "cardinalities": [2]'), ['the key "cardinalities" appears twice']),
    "deep-json": ("[" * 100_000 + "]" * 100_000, ["nested too deeply"]),
    "deep-table": (_doc('{"type": "table", "variables": [0], "log_table": ' + "[" * 500 + "]" * 500 + "}"), ["[0]"]),
    "huge-table": (
        _doc(
            '{"type": "table", "variables": [0, 1, 2], "log_table": []}', cardinalities=f"[{2**14}, {2**14}, {2**14}]"
        ),
        ["`factors[0].log_table`", "table entries", "memory"],
    ),
    "huge-clique-n-states": (
        _doc(
            '{"type": "clique", "variables": [], "potential": {"type": "potts", "lam": 1}, "n_states": ' + f"{2**60}}}"
        ),
        ["`factors[0].n_states`", "memory"],
    ),
    "clique-n-states-mismatch": (
        _clique('{"type": "potts", "lam": 1}', ', "n_states": 100000000000'),
        ["cardinality 3"],
    ),
    "huge-fixed-counts": (
        _clique('{"type": "potts", "lam": 1}', f', "fixed_counts": [{2**41}, 0, 0]'),
        ["fixed_counts[0]"],
    ),
    "unknown-potential": (_clique('{"type": "ising", "lam": 1}'), ['unknown potential type "ising"', '"potts"']),
    "potential-family-key": (_clique('{"family": "sum", "table": [[0]]}'), ["unknown potential type none"]),
    "unknown-potential-field": (_clique('{"type": "potts", "lam": 1, "beta": 2}'), ['unknown field "beta"']),
    "potential-neginf-lam": (_clique('{"type": "potts", "lam": "-inf"}'), ["potential.lam must be a finite number"]),
    "potential-neginf-W": (
        _clique('{"type": "linear_majority", "W": [[0, 0, 0], [0, 0, 0], [0, 0, "-inf"]]}'),
        ["potential.W[2][2]"],
    ),
    "potential-short-table": (_clique('{"type": "sum", "table": [[0, 1], [0, 1], [0, 1]]}'), ["factors[0] (clique)"]),
    "label-out-of-range": (
        _doc('{"type": "cardinality", "variables": [1], "log_potentials": [0, 0], "label": 3, "n_states": 3}'),
        ["factors[0] (cardinality)", "`label`"],
    ),
    "binary-cardinality-over-3-states": (
        _doc('{"type": "cardinality", "variables": [1], "log_potentials": [0, 0]}'),
        ["factors[0]", "binary variables"],
    ),
    "wrong-count-length": (
        _doc('{"type": "cardinality", "variables": [0], "log_potentials": [0, 0, 0]}'),
        ["factors[0] (cardinality)", "`log_potentials`"],
    ),
    "non-nested-subsets": (
        _doc(
            '{"type": "recursive_cardinality", "variables": [0, 1, 2], "subsets": [[0, 1], [1, 2]], '
            '"count_potentials": [[0, 0, 0], [0, 0, 0]]}',
            cardinalities="[2, 2, 2]",
        ),
        ["factors[0] (recursive_cardinality)", "nested"],
    ),
    "names-not-strings": (_doc(extra=', "names": ["a", 1]'), ["names must be a list of strings", "1"]),
    "names-too-few": (_doc(extra=', "names": ["a"]'), ["`names`"]),
    "state-names-object": (_doc(extra=', "state_names": [["a", "b"], [{}, 1, 2]]'), ["state_names[1][0]"]),
}


def _write_hostile(tmp_path, name):
    path = tmp_path / f"{name}.json"
    path.write_text(HOSTILE[name][0])
    return path


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_file_is_one_clear_value_error(tmp_path, name):
    path = _write_hostile(tmp_path, name)
    with pytest.raises(ValueError) as info:
        read_factor_graph(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    for fragment in HOSTILE[name][1]:
        assert fragment in message, (fragment, message)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_file_exits_2_with_one_line_naming_it(tmp_path, name, capsys):
    path = _write_hostile(tmp_path, name)
    assert main(["solve", str(path), "--task", "MAR", "-o", str(tmp_path / "r.MAR")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tractable solve: error: ") and path.name in err[0], err
    assert not (tmp_path / "r.MAR").exists()


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b'{"format": "tractable-factor-graph", "names": ["\xff"]}', "not UTF-8 text (invalid start byte at byte 48)"),
        (b"\x1f\x8b" + bytes(range(200)), "not a valid gzip file"),
        (gzip.compress(_doc().encode())[:-12], "not a valid gzip file"),
        (gzip.compress(b"\xfe\xff"), "not UTF-8"),
    ],
    ids=["not-utf8", "gzip-garbage", "gzip-truncated", "gzip-not-utf8"],
)
def test_bytes_that_are_not_utf8_json_are_refused(tmp_path, content, fragment, capsys):
    path = tmp_path / "b.json.gz"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="^" + str(path).replace("\\", "\\\\") + ": ") as info:
        read_factor_graph(path)
    assert fragment in str(info.value)
    assert main(["solve", str(path), "--task", "MAP"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0], err


def test_a_file_larger_than_memory_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(fgjson, "physical_memory", lambda: 4000)  # a budget of 2000 / 4 = 500 bytes
    big = _doc(",".join([_T] * 20))
    (tmp_path / "big.json").write_text(big)
    (tmp_path / "bomb.json.gz").write_bytes(gzip.compress(big.encode()))
    with pytest.raises(ValueError, match=r"big.json: the file holds \d+ bytes, more than"):
        read_factor_graph(tmp_path / "big.json")
    with pytest.raises(ValueError, match="bomb.json.gz: it decompresses to more than 500 bytes"):
        read_factor_graph(tmp_path / "bomb.json.gz")


def test_hostile_files_never_print_a_traceback(tmp_path):
    """In a fresh interpreter, as a user runs it: deep nesting and bad bytes are one line and exit 2."""
    exe = [sys.executable, "-m", "tractable.cli", "solve"]
    for name in ("deep-json", "deep-table", "nan", "huge-table"):
        r = subprocess.run(
            [*exe, str(_write_hostile(tmp_path, name)), "--task", "MAR"], capture_output=True, text=True, timeout=120
        )
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and f"{name}.json" in r.stderr, r.stderr


# ----------------------------------------------------------------------------- tractable solve


def _binary_graph() -> FactorGraph:
    """Binary variables, every factor type, a tree-like structure small enough to enumerate."""
    gen = np.random.default_rng(3)
    fg = FactorGraph([2] * 8)
    for v in range(8):
        fg.add_factor(TableFactor([v], gen.normal(size=2)))
    fg.add_factor(CardinalityFactor([0, 1, 2], [0.0, 0.5, 1.0, NEG]))
    fg.add_factor(RecursiveCardinalityFactor([3, 4, 5], [[3, 4], [3, 4, 5]], [[0, 0.2, -1], [0, 0, 1, NEG]]))
    fg.add_factor(CliqueFactor([2, 6, 7], Potts(0.3)))
    fg.add_factor(TableFactor([5, 6], [[0.4, 0.0], [0.0, 0.4]]))
    return fg


@pytest.mark.parametrize("method", ["auto", "enumerate", "variable_elimination"])
def test_solve_exact_on_every_factor_type_matches_enumeration(tmp_path, method, capsys):
    fg = _binary_graph()
    write_factor_graph(tmp_path / "m.json", fg)
    write_evidence(tmp_path / "m.evid", {1: 1, 4: 0})
    sub = fg.condition({1: 1, 4: 0})
    ref = enumerate_marginals(sub)
    argv = ["solve", str(tmp_path / "m.json"), "--evid", str(tmp_path / "m.evid"), "--method", method]
    assert main([*argv, "--task", "MAR", "-o", str(tmp_path / "r.MAR")]) == 0
    marg = read_mar(tmp_path / "r.MAR")
    assert marg[1].tolist() == [0.0, 1.0] and marg[4].tolist() == [1.0, 0.0]
    np.testing.assert_allclose(np.array([m for v, m in enumerate(marg) if v not in (1, 4)]), ref.marginals, atol=1e-12)
    assert main([*argv, "--task", "MAP", "-o", str(tmp_path / "r.MAP")]) == 0
    y = read_map(tmp_path / "r.MAP")
    assert y[1] == 1 and y[4] == 0
    assert fg.score(y) == pytest.approx(enumerate_map(sub).score, abs=1e-9)
    capsys.readouterr()
    assert main([*argv, "--task", "PR"]) == 0
    out = capsys.readouterr().out.split()
    assert float(out[1]) == pytest.approx(ref.log_partition / np.log(10), rel=1e-10)


def test_solve_lbp_reads_the_same_graph_as_the_library(tmp_path, capsys):
    fg = _every_factor_graph()
    write_factor_graph(tmp_path / "m.json.gz", fg)
    write_evidence(tmp_path / "m.evid", {3: 2})
    for task, kind in (("MAR", "marginals"), ("MAP", "map")):
        argv = ["solve", str(tmp_path / "m.json.gz"), "--evid", str(tmp_path / "m.evid"), "--task", task]
        assert main([*argv, "--method", "lbp", "-o", str(tmp_path / f"r.{task}")]) == 0
        res = loopy(fg, task=kind, evidence={3: 2})
        if task == "MAR":
            for a, b in zip(read_mar(tmp_path / "r.MAR"), res.marginals):
                np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)
        else:
            assert read_map(tmp_path / "r.MAP").tolist() == res.assignment.tolist()
    capsys.readouterr()


def test_solve_tells_formats_apart_by_name_or_content(tmp_path, capsys):
    fg = _binary_graph()
    write_factor_graph(tmp_path / "model.fg", fg)  # no .json: recognized by its first byte
    write_factor_graph(tmp_path / "model.gz", fg)  # gzip, no .json: by its magic bytes and its first byte
    (tmp_path / "padded").write_text("\ufeff \n" + (tmp_path / "model.fg").read_text())
    table_only = FactorGraph([2, 3])
    table_only.add_factor(TableFactor([0, 1], np.log([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])))
    write_uai(tmp_path / "t.uai", table_only)
    outs = []
    for name in ("model.fg", "model.gz", "padded"):
        assert main(["solve", str(tmp_path / name), "--task", "PR"]) == 0, capsys.readouterr().err
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] == outs[2]
    assert float(outs[0].split()[1]) == pytest.approx(enumerate_marginals(fg).log_partition / np.log(10))
    assert main(["solve", str(tmp_path / "t.uai"), "--task", "PR"]) == 0
    assert float(capsys.readouterr().out.split()[1]) == pytest.approx(np.log10(21.0))


def test_exact_methods_name_the_factor_they_cannot_expand(tmp_path, capsys):
    fg = FactorGraph([5] * 30)
    for v in range(30):
        fg.add_factor(TableFactor([v], np.linspace(0, 0.05 * v, 5)))
    fg.add_factor(CliqueFactor(range(30), Potts(0.05)))
    write_factor_graph(tmp_path / "big.json", fg)
    for method in ("auto", "enumerate", "variable_elimination"):
        for task in ("MAR", "MAP"):
            code = main(["solve", str(tmp_path / "big.json"), "--task", task, "--method", method])
            err = capsys.readouterr().err.strip().splitlines()
            assert code == EXIT_BAD_INPUT and len(err) == 1, err
            assert "big.json: factor 30 (a CliqueFactor over 30 variables, potential Potts(0.05))" in err[0], err
            assert "--method lbp" in err[0]
    assert main(["solve", str(tmp_path / "big.json"), "--task", "MAP", "--method", "lbp"]) == 0  # which handles it
    assert capsys.readouterr().out.split()[1:] == ["30", *["4"] * 30]
    # with 29 of the 30 variables observed the clique is small enough for the exact methods
    write_evidence(tmp_path / "e.evid", {v: 0 for v in range(1, 30)})
    assert main(["solve", str(tmp_path / "big.json"), "--evid", str(tmp_path / "e.evid"), "--task", "MAR"]) == 0


def test_a_clique_too_large_for_sum_product_is_one_line_naming_it(tmp_path, capsys):
    fg = FactorGraph([6] * 60)
    fg.add_factor(CliqueFactor(range(60), Potts(0.01)))
    write_factor_graph(tmp_path / "wide.json", fg)
    assert main(["solve", str(tmp_path / "wide.json"), "--task", "MAR", "--method", "lbp"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "CliqueFactor over 60 variables" in err[0] and "sum-product" in err[0], err


def test_mmp_on_a_multi_state_graph_is_one_line(tmp_path, capsys):
    write_factor_graph(tmp_path / "m.json", _every_factor_graph())
    assert main(["solve", str(tmp_path / "m.json"), "--task", "MMP"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "binary" in err[0], err


def test_mmp_on_a_binary_graph_with_cardinality_factors(tmp_path, capsys):
    fg = FactorGraph([2] * 6)
    for v, s in enumerate([3.0, -3.0, 2.5, -2.0, 0.0, 0.0]):
        fg.add_factor(TableFactor([v], [0.0, s]))
    fg.add_factor(CardinalityFactor(range(6), [0, 0, 0, 4.0, 0, 0, 0]))  # three on: 4, 5 tie otherwise
    write_factor_graph(tmp_path / "m.json", fg)
    assert main(["solve", str(tmp_path / "m.json"), "--task", "MMP", "--seed", "1"]) == 0
    out = capsys.readouterr().out.split()
    assert out[0] == "MMP" and out[1] == "6"
    ref = enumerate_marginals(fg).marginals
    sure = np.abs(ref[:, 1] - 0.5) > 0.1
    assert sure[:4].all()
    assert np.array([int(x) for x in out[2:8]])[sure].tolist() == ref.argmax(axis=1)[sure].tolist()


def test_a_json_model_without_solution_exits_1(tmp_path, capsys):
    fg = FactorGraph([2, 2])
    fg.add_factor(CardinalityFactor([0, 1], [NEG, 0.0, NEG]))
    fg.add_factor(TableFactor([0, 1], [[0.0, NEG], [NEG, 0.0]]))  # exactly one on, and both equal
    write_factor_graph(tmp_path / "zero.json", fg)
    assert main(["solve", str(tmp_path / "zero.json"), "--task", "MAR"]) == EXIT_NO_SOLUTION
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tractable solve: no solution: ") and "zero.json" in err[0], err


def test_a_factor_forbidding_everything_is_no_solution(tmp_path, capsys):
    from tractable import ZeroPartitionError

    factor = (
        '{"type": "recursive_cardinality", "variables": [0], "subsets": [[0]], "count_potentials": [["-inf", "-inf"]]}'
    )
    (tmp_path / "z.json").write_text(_doc(factor))
    with pytest.raises(ZeroPartitionError, match=r"z.json: factors\[0\] \(recursive_cardinality\): `count_potentials"):
        read_factor_graph(tmp_path / "z.json")
    assert main(["solve", str(tmp_path / "z.json"), "--task", "MAP"]) == EXIT_NO_SOLUTION
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tractable solve: no solution: ") and err[0].count("z.json") == 1, err


def test_evidence_is_checked_against_the_json_model(tmp_path, capsys):
    write_factor_graph(tmp_path / "m.json", _binary_graph())
    (tmp_path / "bad.evid").write_text("1 8 0\n")
    assert main(["solve", str(tmp_path / "m.json"), "--evid", str(tmp_path / "bad.evid"), "--task", "MAR"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.evid" in err[0] and "0..7" in err[0], err
