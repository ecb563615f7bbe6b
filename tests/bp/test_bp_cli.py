"""`tractable solve --method lbp`: loopy BP on UAI files, exact on tree-structured models."""

import re

import numpy as np
import pytest
from numpy.testing import assert_allclose

from tractable import FactorGraph, TableFactor
from tractable.cli import main
from tractable.exact import enumerate_map, enumerate_marginals
from tractable.io import read_map, read_mar, write_evidence, write_uai


def _chain(n=6, seed=0):
    """A chain of 3-state variables with random unary and pairwise tables (a tree: LBP is exact)."""
    rng = np.random.default_rng(seed)
    fg = FactorGraph([3] * n)
    for v in range(n):
        fg.add_factor(TableFactor([v], rng.normal(size=3)))
    for v in range(n - 1):
        fg.add_factor(TableFactor([v, v + 1], rng.normal(size=(3, 3))))
    return fg


def _solve(tmp_path, task, *extra):
    out = tmp_path / f"out.{task}"
    rc = main(["solve", str(tmp_path / "m.uai"), "--task", task, "--method", "lbp", "-o", str(out), *extra])
    assert rc == 0
    return out


def test_lbp_marginals_and_map_on_a_tree_match_exact_with_evidence(tmp_path):
    fg = _chain()
    write_uai(tmp_path / "m.uai", fg)
    write_evidence(tmp_path / "m.evid", {2: 1})
    ref = enumerate_marginals(fg.condition({2: 1}))
    mar = read_mar(_solve(tmp_path, "MAR", "--evid", str(tmp_path / "m.evid")))
    kept = [v for v in range(6) if v != 2]
    for i, v in enumerate(kept):
        assert_allclose(mar[v], ref.marginals[i], atol=1e-9)
    assert_allclose(mar[2], [0.0, 1.0, 0.0])
    best = enumerate_map(fg)
    assert read_map(_solve(tmp_path, "MAP")).tolist() == best.assignment.tolist()


def test_lbp_partition_function_on_a_tree_is_exact(tmp_path, capsys):
    fg = _chain(seed=3)
    write_uai(tmp_path / "m.uai", fg)
    assert main(["solve", str(tmp_path / "m.uai"), "--task", "PR", "--method", "lbp", "--tol", "1e-12"]) == 0
    log10_z = float(capsys.readouterr().out.split()[-1])
    assert_allclose(log10_z, enumerate_marginals(fg).log_partition / np.log(10), rtol=1e-10)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--method", "auto", "--damping", "0.5"], "`--damping` applies to `--method lbp` only; got --method auto."),
        (
            ["--method", "lbp", "--max-table-size", "9"],
            "`--max-table-size` applies to `--method auto` and `--method variable_elimination` only",
        ),
        (["--method", "lbp", "--damping", "1.5"], "argument --damping: expected a number in [0, 1); got '1.5'"),
    ],
)
def test_lbp_option_errors_exit_2_with_one_line(tmp_path, capsys, args, message):
    write_uai(tmp_path / "m.uai", _chain())
    assert main(["solve", str(tmp_path / "m.uai"), "--task", "MAR", *args]) == 2
    err = capsys.readouterr().err
    assert re.search(re.escape(message), err) and err.count("\n") == 1
