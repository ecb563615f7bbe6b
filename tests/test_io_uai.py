import re

import numpy as np
import pytest

from tractable import FactorGraph, TableFactor
from tractable.datasets import random_factor_graph
from tractable.exact import enumerate_marginals
from tractable.io import (
    read_evidence,
    read_map,
    read_mar,
    read_uai,
    write_evidence,
    write_map,
    write_mar,
    write_pr,
    write_uai,
)

MARKOV = """MARKOV
3
2 2 3
3
1 0
2 0 1
2 1 2

2
 0.436 0.564

4
 0.128 0.872
 0.920 0.080

6
 0.210 0.333 0.457
 0.811 0.000 0.189
"""


def test_read_markov_table_layout(tmp_path):
    path = tmp_path / "m.uai"
    path.write_text(MARKOV)
    fg = read_uai(path)
    assert fg.network_type == "MARKOV"
    assert fg.cardinalities.tolist() == [2, 2, 3]
    # the last variable of the scope changes fastest
    t = np.exp(fg.factors[2].log_table)
    np.testing.assert_allclose(t, [[0.210, 0.333, 0.457], [0.811, 0.0, 0.189]], rtol=1e-15)
    assert fg.factors[2].log_table[1, 1] == -np.inf
    # the joint is the product of the three tables
    p = np.exp(fg.score([1, 0, 2]))
    assert p == pytest.approx(0.564 * 0.920 * 0.457, rel=1e-14)


def test_read_bayes_network(tmp_path):
    # P(a) P(b | a): scope "2 0 1" is the CPT of variable 1 given variable 0
    path = tmp_path / "b.uai"
    path.write_text("BAYES\n2\n2 2\n2\n1 0\n2 0 1\n\n2\n0.3 0.7\n4\n0.9 0.1 0.2 0.8\n")
    fg = read_uai(path)
    res = enumerate_marginals(fg)
    assert res.log_partition == pytest.approx(0.0, abs=1e-15)
    np.testing.assert_allclose(res.marginals[1], [0.3 * 0.9 + 0.7 * 0.2, 0.3 * 0.1 + 0.7 * 0.8], rtol=1e-14)


@pytest.mark.parametrize("seed", range(5))
def test_model_round_trip(tmp_path, seed):
    fg = random_factor_graph(6, 8, max_cardinality=4, p_forbidden=0.1, rng=seed)
    path = tmp_path / "r.uai"
    write_uai(path, fg)
    back = read_uai(path)
    assert back.cardinalities.tolist() == fg.cardinalities.tolist()
    for a, b in zip(fg.factors, back.factors):
        assert a.variables.tolist() == b.variables.tolist()
        # exp then log of a float64 round-trips to a few ulps
        np.testing.assert_allclose(b.log_table, a.log_table, rtol=1e-14, atol=1e-14)
        assert np.array_equal(np.isneginf(a.log_table), np.isneginf(b.log_table))


def test_constant_is_written_as_empty_scope_factor(tmp_path):
    fg = random_factor_graph(3, 3, rng=1).condition({0: 1})
    write_uai(tmp_path / "c.uai", fg)
    back = read_uai(tmp_path / "c.uai")
    ys = np.array([[0, 0], [1, 1], [0, 1]])
    np.testing.assert_allclose(back.score(ys), fg.score(ys), rtol=1e-13)


def test_single_state_variables_are_supported(tmp_path):
    path = tmp_path / "s.uai"
    path.write_text("MARKOV\n2\n1 2\n1\n2 0 1\n2\n1 3\n")
    fg = read_uai(path)
    res = enumerate_marginals(fg)
    np.testing.assert_allclose(res.marginals[1], [0.25, 0.75], rtol=1e-15)
    toks = write_mar(None, res.marginals, fg).split()
    assert toks[:5] == ["MAR", "2", "1", "1.0", "2"]
    np.testing.assert_allclose([float(x) for x in toks[5:]], [0.25, 0.75], rtol=1e-15)


def test_evidence_formats(tmp_path):
    fg = random_factor_graph(5, 3, max_cardinality=2, rng=0)
    (tmp_path / "new.evid").write_text("2 0 1 3 0\n")
    (tmp_path / "old.evid").write_text("1\n2 0 1 3 0\n")
    assert read_evidence(tmp_path / "new.evid", fg) == {0: 1, 3: 0}
    assert read_evidence(tmp_path / "old.evid", fg) == {0: 1, 3: 0}
    write_evidence(tmp_path / "w.evid", {3: 0, 0: 1})
    assert read_evidence(tmp_path / "w.evid") == {0: 1, 3: 0}


def test_result_round_trips(tmp_path):
    marg = [np.array([0.25, 0.75]), np.array([0.1, 0.2, 0.7])]
    write_mar(tmp_path / "r.MAR", marg)
    for a, b in zip(read_mar(tmp_path / "r.MAR"), marg):
        np.testing.assert_array_equal(a, b)
    write_map(tmp_path / "r.MAP", [1, 0, 2])
    assert read_map(tmp_path / "r.MAP").tolist() == [1, 0, 2]
    assert write_pr(None, np.log(100.0)).split() == ["PR", "2.0"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("MARKOW\n1\n2\n0\n", "line 1: expected the preamble MARKOV or BAYES; got 'MARKOW'"),
        ("MARKOV\n2\n2\n", "line 3: expected the cardinality of variable 1 (an integer >= 1); got end of file"),
        (
            "MARKOV\n1\n2\n1\n1 3\n2\n1 1\n",
            "line 5: expected a variable index in 0..0 in the scope of factor 0; got '3'",
        ),
        ("MARKOV\n2\n2 2\n1\n2 1 1\n4\n1 1 1 1\n", "line 5: expected distinct variables in the scope of factor 0"),
        ("MARKOV\n1\n2\n1\n1 0\n3\n1 1 1\n", "line 6: expected the number of entries of table 0 (2); got '3'"),
        ("MARKOV\n1\n2\n1\n1 0\n2\n1 x\n", "line 7: expected 2 numbers for table 0; got 'x'"),
        ("MARKOV\n1\n2\n1\n1 0\n2\n1 -1\n", "line 7: expected a finite non-negative potential value; got '-1'"),
        ("MARKOV\n1\n2\n1\n1 0\n2\n1 nan\n", "line 7: expected a finite non-negative potential value; got 'nan'"),
        ("MARKOV\n1\n2\n1\n1 0\n2\n1 1\n7\n", "line 8: expected end of file after the last table; got '7'"),
        ("BAYES\n2\n2 2\n1\n2 0 1\n4\n1 1 1 1\n", "a BAYES network needs exactly one table per variable"),
    ],
)
def test_malformed_model_names_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.uai"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        read_uai(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    "text, message",
    [
        ("1 7 0\n", "line 1: expected a variable index in 0..2; got '7'"),
        ("1 0 2\n", "line 1: expected a state of variable 0 in 0..1; got '2'"),
        ("2 0 1 0 0\n", "line 1: expected one state for variable 0; got states 1 and 0"),
    ],
)
def test_malformed_evidence(tmp_path, text, message):
    fg = FactorGraph([2, 2, 2])
    fg.add_factor(TableFactor([0], np.zeros(2)))
    path = tmp_path / "bad.evid"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(message)):
        read_evidence(path, fg)


def test_writer_and_reader_errors(tmp_path):
    fg = random_factor_graph(3, 2, rng=0)
    with pytest.raises(ValueError, match=re.escape("`network_type` must be 'MARKOV' or 'BAYES'; got 'MRF'.")):
        write_uai(tmp_path / "x.uai", fg, network_type="MRF")
    with pytest.raises(ValueError, match=re.escape("`fg` is not a Bayesian network")):
        write_uai(tmp_path / "x.uai", fg, network_type="BAYES")
    (tmp_path / "bin.uai").write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(ValueError, match=re.escape("not a text file")):
        read_uai(tmp_path / "bin.uai")


def test_table_size_past_int64_is_reported_not_overflowed(tmp_path):
    path = tmp_path / "big.uai"
    path.write_text(f"MARKOV\n2\n{2**35} {2**35}\n1\n2 0 1\n0\n")
    message = (
        f"{path}, line 6: table 0 declares {2**70} (about 2^70.0) entries (cardinalities [{2**35}, {2**35}]); "
        "at most 2**36 are supported."
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        read_uai(path)
    path.write_text(f"MARKOV\n2\n2 {10**30}\n0\n")
    with pytest.raises(
        ValueError,
        match=re.escape(f"{path}, line 3: expected the cardinality of variable 1 (at most 2**36); got '{10**30}'."),
    ):
        read_uai(path)


def test_arguments_of_the_wrong_type_are_named(tmp_path):
    """Every reader and writer checks its arguments' types first: a TypeError naming the argument."""
    import io

    from tractable.io import from_pgmpy, read_bif, write_mmp

    fg = random_factor_graph(3, 2, rng=0)
    path = str(tmp_path / "m.uai")
    as_path = "`path` must be a file path (str or os.PathLike); got "
    cases = [
        (lambda: write_uai(fg, path), as_path + "FactorGraph(n_variables=3, n_factors=2) (the path comes first: "),
        (lambda: write_uai(path, "model.uai"), "`fg` must be a tractable.FactorGraph; got str 'model.uai'."),
        (lambda: write_uai(path, None), "`fg` must be a tractable.FactorGraph; got None."),
        (lambda: read_uai(None), as_path + "None."),
        (lambda: read_uai(fg), as_path + "FactorGraph(n_variables=3, n_factors=2)."),
        (lambda: read_evidence(3), as_path + "int 3."),
        (lambda: read_evidence(path, "fg"), "`fg` must be a tractable.FactorGraph or None; got str 'fg'."),
        (lambda: write_evidence({0: 1}, path), as_path + "dict {0: 1}."),
        (lambda: write_evidence(path, [(0, 1)]), "`evidence` must be a mapping {variable: state}; got list [(0, 1)]."),
        (lambda: read_mar(1.5), as_path + "float 1.5."),
        (lambda: read_map(["x"]), as_path + "list ['x']."),
        (lambda: write_mar(3, [[0.5, 0.5]]), "`path_or_stream` must be a file path (str or os.PathLike), a writable"),
        (lambda: write_mar(None, [[0.5, 0.5]], "fg"), "`fg` must be a tractable.FactorGraph or None; got str 'fg'."),
        (lambda: write_map(b"x.map", [0]), "`path_or_stream` must be a file path (str or os.PathLike), a writable"),
        (lambda: write_pr(None, "1.5"), "`log_partition` must be a real number; got str '1.5'."),
        (lambda: write_pr(None, True), "`log_partition` must be a real number; got bool True."),
        (lambda: write_mmp(None, [0], [[1.0, 0.0]], 7), "`fg` must be a tractable.FactorGraph or None; got int 7."),
        (lambda: from_pgmpy("net.bif"), "`model` must be a pgmpy DiscreteBayesianNetwork; got str 'net.bif'."),
        (lambda: read_bif(None), as_path + "None."),
    ]
    for call, message in cases:
        with pytest.raises(TypeError, match=re.escape(message)):
            call()
    assert not list(tmp_path.iterdir())  # nothing was written
    # what the types allow still works: a str or os.PathLike path, a text stream, None (only the text)
    write_uai(tmp_path / "m.uai", fg)
    assert read_uai(path).n_variables == 3
    stream = io.StringIO()
    assert write_pr(stream, np.float64(0.0)) == stream.getvalue() == "PR\n0.0\n"
    assert write_mar(None, [[0.5, 0.5]], None) == "MAR\n1 2 0.5 0.5\n"
