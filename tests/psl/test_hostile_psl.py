"""Hostile input to the PSL readers and writer: data paths and bytes, JSON and .data programs, options,
databases, rules, and the output files (tractable.psl)."""

import gzip
import json
import os
import re
import time

import duckdb
import numpy as np
import pandas as pd
import pytest

from tractable import ConvergenceWarning
from tractable.psl import Model
from tractable.psl._output import write_predictions
from tractable.psl.config import MAX_NESTING, read_data_file, read_json
from tractable.psl.data import EXCERPT_CHARS, MAX_LINE_BYTES, excerpt, load_source
from tractable.psl.model import MAX_ARITY


def _read(path, arity=2):
    """The atoms of one data file, sorted."""
    con = duckdb.connect()
    try:
        load_source(con, path, arity, "t", "observations of P")
        return sorted(con.execute("SELECT * FROM t").fetchall())
    finally:
        con.close()


def _bytes(path, data: bytes):
    path.write_bytes(data)
    return path


def _program(tmp_path, *, predicates=None, rules=None, options=None, name="prog.json"):
    """A tiny PSL 2.4 JSON program: P observed, Q inferred, one rule."""
    (tmp_path / "q.txt").write_text("a\nb\n")
    cfg = {
        "rules": rules if rules is not None else ["1: P(A) -> Q(A) ^2"],
        "predicates": predicates or {"P/1": {"observations": [["a"], ["b", 0.5]]}, "Q/1": {"targets": ["q.txt"]}},
    }
    if options is not None:
        cfg["options"] = options
    path = tmp_path / name
    path.write_text(json.dumps(cfg))
    return path


# ---------------------------------------------------------------------------------------------- 1. paths
def test_data_paths_are_file_names_not_patterns(tmp_path):
    _bytes(tmp_path / "l1.txt", b"wrong\tfile\n")
    _bytes(tmp_path / "l[1].txt", b"right\tfile\n")
    assert _read(tmp_path / "l[1].txt") == [("right", "file", 1.0)]
    _bytes(tmp_path / "link.txt", b"other\tfile\n")
    _bytes(tmp_path / "lin?.txt", b"this\tfile\n")
    assert _read(tmp_path / "lin?.txt") == [("this", "file", 1.0)]
    _bytes(tmp_path / "ab.txt", b"other\tfile\n")
    _bytes(tmp_path / "a*.txt", b"star\tfile\n")
    assert _read(tmp_path / "a*.txt") == [("star", "file", 1.0)]
    _bytes(tmp_path / "it's {x}.txt", b"quote\tfile\n")
    assert _read(tmp_path / "it's {x}.txt") == [("quote", "file", 1.0)]
    _bytes(tmp_path / "g1.txt.gz", gzip.compress(b"wrong\tgz\n"))
    _bytes(tmp_path / "g[1].txt.gz", gzip.compress(b"right\tgz\n"))
    assert _read(tmp_path / "g[1].txt.gz") == [("right", "gz", 1.0)]
    # through a JSON program, end to end
    (tmp_path / "q1.txt").write_text("wrong\n")
    (tmp_path / "q[1].txt").write_text("right\n")
    prog = _program(tmp_path, predicates={"P/1": {"observations": [["right"]]}, "Q/1": {"targets": ["q[1].txt"]}})
    pred, _ = Model.from_json(prog).infer()
    assert pred["Q"][0].tolist() == ["right"]


def test_a_folder_is_not_a_data_file(tmp_path):
    (tmp_path / "d.txt").mkdir()
    with pytest.raises(OSError, match=re.escape(f"is not a file: {tmp_path / 'd.txt'}")):
        _read(tmp_path / "d.txt")
    m = Model()
    m.add_predicate("P", 1)
    with pytest.raises(OSError, match="is not a file"):
        m.add_data("P", "targets", tmp_path / "d.txt")


# ---------------------------------------------------------------------------------------------- 2. bytes
def test_every_byte_of_a_line_is_data_or_an_error_with_the_line(tmp_path):
    # 0x01 was the reader's delimiter: `0\x01.9` was read as 0
    with pytest.raises(ValueError, match=re.escape("x01.txt, line 1: the value '0\\x01.9'")):
        _read(_bytes(tmp_path / "x01.txt", b"a\t0\x01.9\n"), arity=1)
    with pytest.raises(ValueError, match=re.escape("line 2: the value '0.5\\x01'")):
        _read(_bytes(tmp_path / "x01end.txt", b"a\t1\nb\t0.5\x01"), arity=1)  # at the end of the file
    assert _read(_bytes(tmp_path / "data.txt", b"a\x01b\tc\x00d\t0.5\ne\tf\x01\n")) == [
        ("a\x01b", "c\x00d", 0.5),
        ("e", "f\x01", 1.0),
    ]
    # quotes, backslashes, '#' and other control bytes are data
    assert _read(_bytes(tmp_path / "q.txt", b'"a\t#b\\\n\x7f\x02\t\'c"\n')) == [
        ('"a', "#b\\", 1.0),
        ("\x7f\x02", "'c\"", 1.0),
    ]
    # lines end at \n, \r\n or a lone \r (as Java's readLine), in any mix
    expected = [("a", "b", 1.0), ("c", "d", 1.0), ("e", "f", 1.0)]
    assert _read(_bytes(tmp_path / "cr.txt", b"a\tb\rc\td\r\n\re\tf")) == expected
    assert _read(_bytes(tmp_path / "mixed.txt", b"a\tb\nc\td\r\ne\tf\n")) == expected
    assert _read(_bytes(tmp_path / "crlf.txt", b"\xef\xbb\xbfa\tb\r\nc\td\r\ne\tf\r\n")) == expected  # BOM dropped
    with pytest.raises(ValueError, match=re.escape("cr2.txt, line 3: expected 2 tab-separated")):
        _read(_bytes(tmp_path / "cr2.txt", b"a\tb\rc\td\rx\n"))


@pytest.mark.parametrize("special", [False, True], ids=["duckdb-reader", "python-reader"])
def test_line_numbers_are_exact_in_long_files(tmp_path, special):
    n = 150_000
    lines = [f"u{i}\tv{i}\t0.5" for i in range(n)]
    for i in range(10, n, 997):
        lines[i] = ""  # blank lines count
    lines[n - 7] = "bad\tline\t2"
    if special:
        lines[0] = "a\x01\tb"  # a 0x01 byte: read line by line in Python
    path = tmp_path / "long.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=re.escape(f"long.txt, line {n - 6}: the value '2'")):
        _read(path)
    lines[n - 7] = "good\tline\t1"
    path.write_text("\n".join(lines) + "\n")
    assert len(_read(path)) == n - len(range(10, n, 997))


# ---------------------------------------------------------------------------------------------- 3. output
def test_output_writes_arguments_as_psl_does_and_reads_back(tmp_path):
    args = ['O"Neil', "a'b", "x\x01y", "#c", '"q"', "back\\slash", " lead"]
    pred = {"Lab": pd.DataFrame({0: args, 1: list("pqrstuv"), "value": np.linspace(0, 1, len(args))})}
    (path,) = write_predictions(pred, tmp_path / "out")
    text = (tmp_path / "out" / "LAB.txt").read_text(encoding="utf-8")
    assert text.splitlines()[0] == 'O"Neil\tp\t0.000000'
    back = _read(path)
    assert sorted((a, b) for a, b, _ in back) == sorted(zip(args, "pqrstuv"))
    assert os.listdir(tmp_path / "out") == ["LAB.txt"]  # no temporary file left


@pytest.mark.parametrize("arg", ["a\tb", "a\nb", "a\rb", "", "   "])
def test_output_refuses_arguments_a_data_file_cannot_hold(tmp_path, arg):
    pred = {
        "Ok": pd.DataFrame({0: ["x"], "value": [0.5]}),
        "Lab": pd.DataFrame({0: ["fine", arg], "value": [0.5, 0.5]}),
    }
    with pytest.raises(ValueError, match=re.escape("`predictions['Lab']`: row 1 has the argument")):
        write_predictions(pred, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written, not even the valid predicate


def _infeasible():
    m = Model()
    m.add_predicate("Lab", 1)
    m.add_rule("Lab(A) = 1 .")
    m.add_rule("Lab(A) = 0 .")
    m.add_data("Lab", "targets", pd.DataFrame([["a"]]))
    return m


def test_no_output_without_a_solution(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "LAB.txt").write_text("an earlier run\n")
    with pytest.warns(ConvergenceWarning, match="infeasible"):
        pred, res = _infeasible().infer(method="highs")
    assert res.status == "infeasible"
    with pytest.raises(ValueError, match=re.escape("`result`: the solver found no solution (status 'infeasible'")):
        write_predictions(pred, out, result=res)
    with pytest.raises(ValueError, match=re.escape("row 0 has the value nan; values must be numbers in [0, 1]")):
        write_predictions(pred, out)
    assert os.listdir(out) == ["LAB.txt"] and (out / "LAB.txt").read_text() == "an earlier run\n"


def test_output_is_written_under_temporary_names_then_renamed(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "A.txt").write_text("old A\n")
    (out / "B.txt").write_text("old B\n")
    pred = {"A": pd.DataFrame({0: ["x"], "value": [0.5]}), "B": pd.DataFrame({0: ["y"], "value": [0.5]})}
    real = pd.DataFrame.to_csv
    calls = []

    def failing(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_csv", failing)
    with pytest.raises(OSError, match="disk full"):
        write_predictions(pred, out)
    assert sorted(os.listdir(out)) == ["A.txt", "B.txt"]  # no temporary file left, the old files untouched
    assert (out / "A.txt").read_text() == "old A\n"
    monkeypatch.setattr(pd.DataFrame, "to_csv", real)
    write_predictions(pred, out)
    assert (out / "A.txt").read_text() == "x\t0.500000\n"


# ---------------------------------------------------------------------------------------------- 5. limits
def test_arity_is_at_most_max_arity(tmp_path):
    msg = f"more than MAX_ARITY = {MAX_ARITY} arguments"
    for arity in ("100000000000000000000", str(MAX_ARITY + 1), "9" * 100_000):
        prog = _program(tmp_path, predicates={f"P/{arity}": {"targets": [["a"]]}}, rules=[])
        t0 = time.perf_counter()
        with pytest.raises(ValueError, match=re.escape(msg)):
            Model.from_json(prog)
        assert time.perf_counter() - t0 < 5
    (tmp_path / "m.data").write_text("predicates:\n  P/100000000000000000000: open\n")
    with pytest.raises(ValueError, match=re.escape(msg)):
        read_data_file(tmp_path / "m.data")
    with pytest.raises(ValueError, match=re.escape(f"`arity` must be at most MAX_ARITY = {MAX_ARITY}; got 10")):
        Model().add_predicate("P", 10**20)
    m = Model()
    m.add_predicate("P", MAX_ARITY)
    assert m.predicates == {f"P/{MAX_ARITY}": {"arity": MAX_ARITY, "closed": False}}


def test_deep_json_is_a_clear_error(tmp_path):
    msg = f"a PSL JSON configuration nests at most MAX_NESTING = {MAX_NESTING} deep"
    (tmp_path / "deep.json").write_text("[" * 100_000)
    with pytest.raises(ValueError, match=re.escape(f"deep.json: lists and objects nested 100000 deep; {msg}")):
        read_json(tmp_path / "deep.json")
    nested = "x"
    for _ in range(MAX_NESTING - 1):
        nested = [nested]
    prog = _program(tmp_path, options={"some.option": nested})  # in the program and its options: MAX_NESTING + 1
    with pytest.raises(ValueError, match=re.escape(msg)):
        read_json(prog)
    prog = _program(tmp_path, options={"some.option": nested[0]})
    assert read_json(prog)["options"]["some.option"] == nested[0]
    # brackets inside strings do not count
    prog = _program(tmp_path, options={"some.option": "[" * 1000})
    assert read_json(prog)["options"]["some.option"] == "[" * 1000
    (tmp_path / "nan.json").write_text('{"predicates": {"P/1": {}}, "options": {"reasoner.tolerance": NaN}}')
    with pytest.raises(ValueError, match=re.escape("nan.json: not a PSL JSON configuration: NaN is not a JSON number")):
        read_json(tmp_path / "nan.json")


def test_deep_data_file_is_a_clear_error(tmp_path):
    deep = "predicates:\n" + "".join(" " * (k + 1) + f"k{k}:\n" for k in range(5000))
    (tmp_path / "deep.data").write_text(deep)
    with pytest.raises(ValueError, match=re.escape(f"blocks nested more than MAX_NESTING = {MAX_NESTING} deep")):
        read_data_file(tmp_path / "deep.data")
    (tmp_path / "flow.data").write_text("predicates:\n  P/1: " + "[" * 5000 + "open" + "]" * 5000 + "\n")
    with pytest.raises(ValueError, match=re.escape("flow.data, line 2: [...] lists nested more than MAX_NESTING")):
        read_data_file(tmp_path / "flow.data")


def test_deep_rules_are_a_clear_error(tmp_path):
    m = Model()
    m.add_predicate("A", 1)
    m.add_predicate("B", 1)
    deep = "1: " + "(" * 5000 + "A(X)" + ")" * 5000 + " -> B(X)"
    with pytest.raises(ValueError, match=re.escape(f"rules nest at most MAX_NESTING = {MAX_NESTING} deep")):
        m.add_rule(deep)
    (tmp_path / "deep.psl").write_text("1: A(X) -> B(X)\n" + deep + "\n")
    with pytest.raises(ValueError, match=re.escape("deep.psl: PSL rule text nests parentheses and brackets 5001 deep")):
        m.add_rules(tmp_path / "deep.psl")
    m.add_rule("1: " + "(" * 10 + "A(X)" + ")" * 10 + " -> B(X)")  # within the limit


def test_data_duckdb_cannot_read_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=re.escape("utf8.txt, line 2: not UTF-8 text (byte 2 of the line")):
        _read(_bytes(tmp_path / "utf8.txt", b"a\tb\nc\xff\td\n"))
    with pytest.raises(
        ValueError, match=re.escape("plain.gz: the name ends in .gz but the file is not gzip-compressed")
    ):
        _read(_bytes(tmp_path / "plain.gz", b"a\tb\n"))
    long = b"a\tb\n" + b"x" * (MAX_LINE_BYTES + 1) + b"\tc\n"
    with pytest.raises(ValueError, match=re.escape(f"long.txt, line 2: a line of {MAX_LINE_BYTES + 3} bytes")) as info:
        _read(_bytes(tmp_path / "long.txt", long))
    assert f"MAX_LINE_BYTES = {MAX_LINE_BYTES}" in str(info.value) and len(str(info.value)) < 300
    assert _read(_bytes(tmp_path / "notlong.txt", b"x" * (MAX_LINE_BYTES - 2) + b"\tc\n"))[0][1] == "c"
    with pytest.raises(ValueError, match=re.escape("zstd.txt: a zstd-compressed file")):
        _read(_bytes(tmp_path / "zstd.txt", b"\x28\xb5\x2f\xfd" + b"\x00" * 20))


def test_gzip_errors_name_the_file_and_quote_no_compressed_bytes(tmp_path):
    for name in ("bad.txt.gz", "bad.txt"):  # gzip is recognized by its bytes, whatever the name
        with pytest.raises(ValueError, match=re.escape(f"{name}, line 2: not UTF-8 text")) as info:
            _read(_bytes(tmp_path / name, gzip.compress(b"a\tb\nc\xff\td\n")))
        assert "\\x1f" not in str(info.value) and "\\x8b" not in str(info.value)
    data = gzip.compress(os.urandom(200_000))
    with pytest.raises(ValueError, match=re.escape("cut.gz: a truncated gzip file")):
        _read(_bytes(tmp_path / "cut.gz", data[: len(data) // 2]))  # DuckDB read the first half silently
    with pytest.raises(ValueError, match=re.escape("tail.gz: a corrupt gzip file (bytes that are not gzip follow")):
        _read(_bytes(tmp_path / "tail.gz", gzip.compress(b"a\tb\n") + b"garbage!"))
    crc = bytearray(gzip.compress(b"a\tb\n"))
    crc[-8] ^= 0xFF
    with pytest.raises(ValueError, match=re.escape("crc.gz: a corrupt gzip file (CRC check failed")):
        _read(_bytes(tmp_path / "crc.gz", bytes(crc)))
    assert _read(_bytes(tmp_path / "ok.gz", gzip.compress(b"a\tb\t0.25\n"))) == [("a", "b", 0.25)]


def test_database_must_be_a_duckdb_file(tmp_path):
    with pytest.raises(OSError, match=re.escape("is a folder; expected a DuckDB database file")):
        Model(database=tmp_path)
    (tmp_path / "notes.txt").write_text("not a database\n")
    with pytest.raises(ValueError, match=re.escape("exists but is not a DuckDB database file")):
        Model(database=tmp_path / "notes.txt")
    assert (tmp_path / "notes.txt").read_text() == "not a database\n"
    Model(database=tmp_path / "new.duckdb").close()
    Model(database=tmp_path / "new.duckdb").close()  # an existing DuckDB file is fine


def test_data_file_predicates_must_be_a_mapping(tmp_path):
    for body in ("predicates: foo\n", "predicates:\n  - open\n", "predicates:\n"):
        (tmp_path / "m.data").write_text(body)
        with pytest.raises(ValueError, match=re.escape("`predicates` must map 'Name/arity' keys to open or closed")):
            read_data_file(tmp_path / "m.data")
    (tmp_path / "m.data").write_text("predicates:\n  P/1: open\ntargets:\n  P:\n    k: v\n")
    with pytest.raises(ValueError, match=re.escape("`targets` of P: expected a data file path or a list of paths")):
        read_data_file(tmp_path / "m.data")


def test_a_hash_inside_a_quoted_data_path_is_kept(tmp_path):
    (tmp_path / "q#1.txt").write_text("a\n")
    (tmp_path / "p#2.txt").write_text("a\n")
    (tmp_path / "m.data").write_text(
        "predicates:  # the predicates\n  P/1: closed\n  Q/1: open\n"
        "observations:\n  P: p#2.txt  # unquoted: '#' after a space starts a comment\n"
        'targets:\n  Q: "q#1.txt" # quoted\n'
    )
    spec = read_data_file(tmp_path / "m.data")
    assert spec["targets"]["Q"] == [str(tmp_path / "q#1.txt")]
    assert spec["observations"]["P"] == [str(tmp_path / "p#2.txt")]
    (tmp_path / "m.psl").write_text("1: P(A) -> Q(A)\n")
    pred, _ = Model.from_data_file(tmp_path / "m.psl", tmp_path / "m.data").infer()
    assert pred["Q"][0].tolist() == ["a"]


def test_evaluations_may_be_one_name(tmp_path):
    prog = _program(tmp_path)
    cfg = json.loads(prog.read_text())
    cfg["predicates"]["Q/1"].update(truth=[["a", 1], ["b", 0]], evaluations="DiscreteEvaluator")
    prog.write_text(json.dumps(cfg))
    m = Model.from_json(prog)
    assert m.evaluators == {"Q/1": ["DiscreteEvaluator"]}
    metrics = m.evaluate()["Q"]
    assert {"accuracy", "f1"} <= set(metrics) and "mae" not in metrics  # the Discrete evaluator only
    for bad in (5, [], ["NoSuchEvaluator"], [{"options": {}}]):
        cfg["predicates"]["Q/1"]["evaluations"] = bad
        prog.write_text(json.dumps(cfg))
        with pytest.raises(ValueError, match="`evaluations`"):
            Model.from_json(prog)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("admmreasoner.maxiterations", True, "an integer >= 1"),
        ("admmreasoner.maxiterations", 1.9, "an integer >= 1"),
        ("admmreasoner.maxiterations", "1.9", "an integer >= 1"),
        ("admmreasoner.maxiterations", 0, "an integer >= 1"),
        ("admmreasoner.stepsize", 1e309, "a finite number > 0"),
        ("admmreasoner.stepsize", "inf", "a finite number > 0"),
        ("admmreasoner.epsilonabs", "nan", "a finite number >= 0"),
        ("admmreasoner.epsilonabs", False, "a finite number >= 0"),
        ("reasoner.tolerance", [1], "a finite number > 0"),
        ("runtime.learn", 1, "true or false"),
    ],
)
def test_options_are_type_checked(tmp_path, key, value, expected):
    text = json.dumps({"predicates": {"Q/1": {"targets": [["a"]]}}, "options": {key: 0}})
    (tmp_path / "o.json").write_text(
        text.replace(": 0}", ": " + ("1e309" if value == 1e309 else json.dumps(value)) + "}")
    )
    with pytest.raises(ValueError, match=re.escape(f"option {key!r} must be {expected}; got")):
        Model.from_json(tmp_path / "o.json")


def test_options_accept_numbers_and_strings_of_numbers(tmp_path):
    options = {
        "admmreasoner.maxiterations": "25000",
        "admmreasoner.epsilonabs": "1e-6",
        "admmreasoner.epsilonrel": 0,
        "admmreasoner.stepsize": 2,
        "reasoner.tolerance": 1e-4,
        "runtime.learn": "False",
    }
    m = Model.from_json(_program(tmp_path, options=options))
    assert m.solve_options == {"max_iter": 25000, "eps_abs": 1e-6, "eps_rel": 0.0, "rho": 2.0, "gap_tol": 1e-4}
    assert m.learn_requested is False
    m = Model.from_json(_program(tmp_path, options={"admmreasoner.maxiterations": 1e4}))
    assert m.solve_options["max_iter"] == 10000 and isinstance(m.solve_options["max_iter"], int)


def test_weights_and_coefficients_must_be_finite(tmp_path):
    for rule in ("1e309: P(A) -> Q(A) ^2", "1: 1e309 * Q(A) <= 1 ^2", "Q(A) <= 1e309 ."):
        with pytest.raises(ValueError, match="must be (a )?finite number"):
            Model.from_json(_program(tmp_path, rules=[rule]))
    (tmp_path / "r.psl").write_text("1: P(A) -> Q(A)\n1e400: P(A) -> Q(A)\n")
    m = Model()
    m.add_predicate("P", 1)
    m.add_predicate("Q", 1)
    with pytest.raises(
        ValueError, match=re.escape("r.psl: PSL rule '1e400: P(A) -> Q(A)': the weight must be a finite")
    ):
        m.add_rules(tmp_path / "r.psl")


# ---------------------------------------------------------------------------------------------- 6. excerpts
def test_errors_quote_a_short_escaped_excerpt(tmp_path):
    for text in ("\x00" * 10_000, "é" * 10_000, "'\"" * 1000, b"\xff" * 1000, "short"):
        e = excerpt(text)
        assert len(e) <= EXCERPT_CHARS and e.startswith(("'", '"', "b'", 'b"'))
    assert excerpt("short") == "'short'"
    path = _bytes(tmp_path / "bad.txt", b"\x00" * 100_000 + b"\t" + b"\x07" * 100_000 + b"\tx\td\n")
    with pytest.raises(ValueError, match=re.escape("bad.txt, line 1: expected 2 tab-separated")) as info:
        _read(path)
    quoted = str(info.value).split("fields: ", 1)[1][:-1]
    assert len(quoted) <= EXCERPT_CHARS and quoted.startswith("'\\x00\\x00")
    with pytest.raises(ValueError) as info:
        _read(_bytes(tmp_path / "value.txt", b"a\tb\t" + b"9" * 100_000 + b"\n"))
    assert len(str(info.value)) < len(str(tmp_path)) + 250
