"""Evidence handled once for every engine (``evidence=``): answers over all variables, checked against
exact inference on the conditioned graph, and the command line's engines table."""

import re
import warnings

import numpy as np
import pytest

from _oracles import brute_force
from tractable import CardinalityFactor, ConvergenceWarning, FactorGraph, TableFactor
from tractable.bp import loopy
from tractable.cli import main
from tractable.exact import infer
from tractable.sampling import adaptive_mmp


def _tree(seed):
    """A tree-structured binary graph with a count factor on a leaf pair: loopy BP is exact on it."""
    gen = np.random.default_rng(seed)
    fg = FactorGraph([2] * 5)
    for v in range(5):
        fg.add_factor(TableFactor([v], [0.0, gen.normal()]))
    for u, v in [(0, 1), (1, 2), (1, 3)]:
        fg.add_factor(TableFactor([u, v], gen.normal(size=(2, 2))))
    fg.add_factor(CardinalityFactor([3, 4], [0.0, gen.normal(), -np.inf]))
    return fg


@pytest.mark.parametrize("evidence", [{0: 1}, {1: 0, 4: 1}, {"x3": 0}])
def test_loopy_with_evidence_matches_exact_on_a_tree(seed, evidence):
    fg = FactorGraph([2] * 5, names=[f"x{i}" for i in range(5)])
    for factor in _tree(seed).factors:
        fg.add_factor(factor)
    bp = loopy(fg, task="marginals", evidence=evidence)
    ex = infer(fg, task="marginals", evidence=evidence)
    np.testing.assert_allclose(bp.marginals, ex.marginals, atol=1e-10)
    np.testing.assert_allclose(bp.log_partition, ex.log_partition, atol=1e-10)  # log Z restricted to the evidence
    ev = fg.check_evidence(evidence)
    assert all(bp.assignment[v] == s for v, s in ev.items())
    assert len(bp.factor_marginals) == len(fg.factors)
    for factor, table in zip(fg.factors, bp.factor_marginals):  # pairwise beliefs are exact on a tree
        if table is not None and len(factor.variables) == 2:
            u, v = (int(x) for x in factor.variables)
            want = brute_force_pair(fg, ev, u, v)
            np.testing.assert_allclose(table, want, atol=1e-10)
    mp = loopy(fg, task="map", evidence=evidence)
    em = infer(fg, task="map", evidence=evidence)
    assert mp.score == pytest.approx(em.score, abs=1e-10)


def brute_force_pair(fg, ev, u, v):
    """P(y_u, y_v | evidence) by enumeration of the conditioned graph, as a table over the full states."""
    import itertools

    card = [int(c) for c in fg.cardinalities]
    table = np.zeros((card[u], card[v]))
    for a in itertools.product(*[range(c) for c in card]):
        if any(a[k] != s for k, s in ev.items()):
            continue
        table[a[u], a[v]] += np.exp(fg.score(np.array(a)))
    return table / table.sum()


def test_brute_force_oracle_agrees_on_the_tree(seed):
    fg = _tree(seed)
    log_z, marginals, _ = brute_force(fg)
    np.testing.assert_allclose(loopy(fg).log_partition, log_z, atol=1e-10)


def test_adaptive_mmp_with_evidence_decides_the_observed_states():
    fg = _tree(3)
    res = adaptive_mmp(fg, evidence={2: 1, 0: 0}, epsilon=1e-4, max_sweeps=20_000, rng=0)
    exact = infer(fg, task="marginals", evidence={2: 1, 0: 0}).marginals[:, 1]
    assert res.assignment[2] == 1 and res.assignment[0] == 0 and res.assignment.shape == (5,)
    assert res.samples_per_variable[2] == 0 and res.confidence[2] == 1.0
    clear = np.abs(exact - 0.5) > 0.05
    np.testing.assert_array_equal(res.assignment[clear], (exact[clear] > 0.5).astype(np.int64))
    assert res.score == pytest.approx(fg.score(res.assignment))


def test_loopy_rng_is_for_the_sequential_schedule_only():
    with pytest.raises(ValueError, match=re.escape("`rng` orders the updates of schedule='sequential' only")):
        loopy(_tree(0), rng=0)
    loopy(_tree(0), schedule="sequential", rng=0)


def test_loopy_kind_is_a_deprecated_alias_of_task():
    fg = _tree(1)
    with pytest.warns(DeprecationWarning, match="task="):
        old = loopy(fg, kind="max")
    assert old.task == "map" and np.array_equal(old.assignment, loopy(fg, task="map").assignment)
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="not both"):
        loopy(fg, task="map", kind="max")
    with pytest.warns(DeprecationWarning, match="BPResult.kind"):
        assert old.kind == "max"
    with pytest.raises(ValueError, match=re.escape("`task` must be one of")):
        loopy(fg, task="sum")


def test_deprecated_result_names_still_read(seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = adaptive_mmp(_tree(seed), max_sweeps=50, rng=0)
    with pytest.warns(DeprecationWarning, match="decisions"):
        assert np.array_equal(res.decisions, res.assignment)
    with pytest.warns(DeprecationWarning, match="n_sweeps"):
        assert res.n_sweeps == res.n_iter
    from tractable.bp import tree_marginals

    t = tree_marginals(np.zeros((2, 2)), [[0, 1]], np.zeros((1, 2, 2)))
    with pytest.warns(DeprecationWarning, match="node_marginals"):
        assert t.node_marginals is t.marginals


@pytest.mark.parametrize(
    "args, message",
    [
        (["--task", "MMP", "--max-sweeps", "0"], "argument --max-sweeps: expected an integer >= 1; got '0'"),
        (["--task", "MMP", "--epsilon", "0"], "argument --epsilon: expected a number between 0 and 0.5"),
        (["--task", "MAR", "--method", "lbp", "--max-iter", "0"], "argument --max-iter: expected an integer >= 1"),
        (["--task", "MMP", "--method", "enumerate"], "takes no --method enumerate"),
    ],
)
def test_solve_rejects_zero_options_instead_of_running_the_defaults(tmp_path, capsys, args, message):
    from tractable.io import write_uai

    write_uai(tmp_path / "m.uai", _table_only(0))
    assert main(["solve", str(tmp_path / "m.uai"), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def _table_only(seed):
    gen = np.random.default_rng(seed)
    fg = FactorGraph([2] * 3)
    for v in range(3):
        fg.add_factor(TableFactor([v], [0.0, gen.normal()]))
    fg.add_factor(TableFactor([0, 1], gen.normal(size=(2, 2))))
    return fg


def test_solve_mmp_with_evidence_writes_all_variables(tmp_path, capsys):
    from tractable.io import write_evidence, write_uai

    write_uai(tmp_path / "m.uai", _table_only(0))
    write_evidence(tmp_path / "m.evid", {1: 1})
    assert (
        main(["solve", str(tmp_path / "m.uai"), "--evid", str(tmp_path / "m.evid"), "--task", "MMP", "--seed", "0"])
        == 0
    )
    out = capsys.readouterr().out.split("\n")
    assert out[0] == "MMP" and out[1].split()[0] == "3" and out[1].split()[2] == "1"


def test_solve_time_limit_reaches_the_iterative_engines(tmp_path, capsys):
    from tractable.io import write_uai

    write_uai(tmp_path / "m.uai", _table_only(0))
    assert main(["solve", str(tmp_path / "m.uai"), "--task", "MAR", "--method", "lbp", "--time-limit", "5"]) == 0
    capsys.readouterr()
    assert main(["solve", str(tmp_path / "m.uai"), "--task", "MAR", "--time-limit", "5"]) == 2
    assert "`--time-limit` applies to `--method lbp` and `--task MMP` only" in capsys.readouterr().err
