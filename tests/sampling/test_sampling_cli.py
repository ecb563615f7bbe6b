"""`tractable solve --task MMP`: adaptive MMP on UAI files."""

import numpy as np
import pytest

from tractable import FactorGraph, TableFactor
from tractable.cli import main
from tractable.exact import enumerate_marginals
from tractable.io import write_evidence, write_uai


def _model():
    rng = np.random.default_rng(0)
    fg = FactorGraph([2] * 6)
    for v in range(6):
        fg.add_factor(TableFactor([v], [0.0, rng.choice([-1, 1]) * rng.uniform(1.5, 2.5)]))
    for v in range(5):
        fg.add_factor(TableFactor([v, v + 1], rng.normal(0, 0.3, size=(2, 2))))
    return fg


def test_mmp_prints_decisions_and_marginals_that_match_exact_mmp(tmp_path, capsys):
    fg = _model()
    write_uai(tmp_path / "m.uai", fg)
    write_evidence(tmp_path / "m.evid", {0: 1})
    assert main(["solve", str(tmp_path / "m.uai"), "--evid", str(tmp_path / "m.evid"), "--task", "MMP",
                 "--seed", "0", "--max-sweeps", "5000"]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "MMP" and lines[2] == "MAR"
    decisions = [int(t) for t in lines[1].split()[1:]]
    exact = enumerate_marginals(fg.condition({0: 1})).marginals[:, 1]
    assert decisions == [1, *(exact > 0.5).astype(int).tolist()]
    mar = np.array([float(t) for t in lines[3].split()[1:]]).reshape(6, 3)[:, 1:]
    # adaptive MMP's marginals are the sample means when each decision became final (tens of samples for
    # clear decisions): consistent with the decisions, not accurate estimates
    assert np.allclose(mar.sum(axis=1), 1.0) and np.array_equal(mar[:, 1] > 0.5, np.array(decisions) == 1)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--task", "MAR", "--epsilon", "0.01"], "`--epsilon` applies to `--task MMP` only; got --task MAR."),
        (["--task", "MMP", "--epsilon", "0.7"], "argument --epsilon: expected a number between 0 and 0.5"),
        (["--task", "MMP", "--method", "lbp"], "`--task MMP` runs adaptive Gibbs sampling and takes no --method"),
    ],
)
def test_mmp_option_errors_exit_2(tmp_path, capsys, args, message):
    write_uai(tmp_path / "m.uai", _model())
    assert main(["solve", str(tmp_path / "m.uai"), *args]) == 2
    assert message in capsys.readouterr().err
