"""Max-product decoding of ``bp.loopy(task="map")``: tied max-marginals are broken consistently, and a labelling
that a factor forbids is never reported as a success.

Oracles: :func:`tractable.exact.infer` (``task="map"``) and brute force (:func:`_oracles.joint_scores`). On a
tree max-product is exact, so the decoded score must equal the MAP score (ties included: integer potentials
below make them common); on a loopy graph the result is either feasible with a success status or reports the
failure.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _oracles import joint_scores
from tractable import CardinalityFactor, ConvergenceWarning, FactorGraph, TableFactor, ZeroPartitionError
from tractable.bp import _decode, loopy
from tractable.exact import infer
from tractable.io import read_factor_graph

SCHEDULES = ["parallel", "sequential", "blocks"]
# scores are sums of a few small integers and decimals: the decoded labelling's score equals the MAP score
# up to rounding of those sums
TOL = 1e-9


def _run(fg, schedule, **kw):
    return loopy(fg, task="map", schedule=schedule, rng=0 if schedule == "sequential" else None, **kw)


def _exactly_one(n=4, bonus=0.3):
    """``n`` binary variables, exactly one on, equal unaries: every max-marginal is (1/2, 1/2)."""
    fg = FactorGraph([2] * n)
    for i in range(n):
        fg.add_factor(TableFactor([i], [0.0, bonus]))
    fg.add_factor(CardinalityFactor(range(n), [-np.inf, 0.0] + [-np.inf] * (n - 1)))
    return fg


# the model of docs/bp.md's command-line example (voters 2 and 3 tie: exactly two of 0..3 vote yes)
DOCS_MODEL = """{"format": "tractable-factor-graph", "version": 1,
 "cardinalities": [2, 2, 2, 2, 3, 3, 3],
 "factors": [
  {"type": "table", "variables": [0, 4], "log_table": [[0.5, 0, 0], [0, 1.5, "-inf"]]},
  {"type": "table", "variables": [1], "log_table": [0, 0.8]},
  {"type": "table", "variables": [5], "log_table": [0.3, 0, 1.2]},
  {"type": "cardinality", "variables": [0, 1, 2, 3], "log_potentials": ["-inf", "-inf", 0, "-inf", "-inf"]},
  {"type": "recursive_cardinality", "variables": [0, 1, 2, 3], "subsets": [[0, 1], [0, 1, 2, 3]],
   "count_potentials": [[0, 0.4, 0], [0, 0, 0, 0, 0]]},
  {"type": "cardinality", "variables": [4, 5, 6], "log_potentials": [0, 0.5, 1, 1.5], "label": 2, "n_states": 3},
  {"type": "clique", "variables": [4, 5, 6], "potential": {"type": "potts", "lam": 0.5}}
 ]}"""


# --------------------------------------------------------------------------- the reproduced failures
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_exactly_one_of_four_with_equal_unaries_decodes_a_map_not_a_forbidden_labelling(schedule):
    """Independent argmaxes of four (1/2, 1/2) max-marginals gave all off: score -inf with status converged."""
    fg = _exactly_one()
    res = _run(fg, schedule)
    assert res.status == "converged" and res.converged
    assert int(res.assignment.sum()) == 1
    assert res.score == pytest.approx(0.3, abs=TOL) and res.score == fg.score(res.assignment)
    np.testing.assert_allclose(res.marginals, 0.5)  # the reported max-marginals are the unclamped ones
    assert "ties broken: 3 tied variables clamped in 3 rounds" in res.message


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_docs_model_decodes_its_exact_map(schedule, tmp_path):
    """docs/bp.md used exact MAP because max-product decoded [0 1 0 0 2 2 2] (score -inf) there."""
    (tmp_path / "model.json").write_text(DOCS_MODEL)
    fg = read_factor_graph(tmp_path / "model.json")
    res = _run(fg, schedule)
    ref = infer(fg, task="map")
    assert res.status == "converged"
    assert res.assignment.tolist() == ref.assignment.tolist() == [0, 1, 0, 1, 2, 2, 2]
    assert res.score == pytest.approx(ref.score, abs=TOL) and ref.score == pytest.approx(8.4, abs=TOL)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_ties_are_broken_even_when_the_independent_argmaxes_are_feasible(schedule):
    """A symmetric anti-ferromagnetic chain: every max-marginal ties, all-off is allowed but scores 0, the MAP 4."""
    fg = FactorGraph([2] * 5)
    for i in range(4):
        fg.add_factor(TableFactor([i, i + 1], [[0.0, 1.0], [1.0, 0.0]]))
    res = _run(fg, schedule)
    assert res.status == "converged"
    assert res.score == pytest.approx(4.0, abs=TOL)
    assert res.assignment.tolist() in ([0, 1, 0, 1, 0], [1, 0, 1, 0, 1])


def test_each_connected_component_gets_its_own_clamp_in_the_same_round():
    """Three disjoint exactly-one-of-three blocks: two rounds of three clamps, not six rounds."""
    fg = FactorGraph([2] * 9)
    for b in range(3):
        block = list(range(3 * b, 3 * b + 3))
        for i in block:
            fg.add_factor(TableFactor([i], [0.0, 0.5]))
        fg.add_factor(CardinalityFactor(block, [-np.inf, 0.0, -np.inf, -np.inf]))
    res = loopy(fg, task="map")
    assert res.score == pytest.approx(1.5, abs=TOL)
    assert res.assignment.reshape(3, 3).sum(axis=1).tolist() == [1, 1, 1]
    assert "6 tied variables clamped in 2 rounds" in res.message


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_evidence_and_ties(schedule):
    fg = _exactly_one(5)
    res = _run(fg, schedule, evidence={0: 0, 4: 0})
    assert res.assignment[[0, 4]].tolist() == [0, 0] and int(res.assignment.sum()) == 1
    assert res.score == pytest.approx(0.3, abs=TOL) and res.status == "converged"


def test_without_ties_the_decoder_does_nothing(monkeypatch):
    """No tie: the independent argmaxes, no component search, no rerun, nothing in the message."""

    def fail(fg):
        raise AssertionError("components computed without a tie")

    monkeypatch.setattr(_decode, "components", fail)
    fg = FactorGraph([2, 3, 2])
    fg.add_factor(TableFactor([0, 1], [[0.2, -np.inf, 0.1], [0.0, 0.7, -0.3]]))
    fg.add_factor(TableFactor([1, 2], [[0.4, 0.0], [0.0, 0.3], [-np.inf, 0.9]]))
    fg.add_factor(TableFactor([0], [0.0, 0.25]))
    res = loopy(fg, task="map")
    ref = infer(fg, task="map")
    assert res.assignment.tolist() == ref.assignment.tolist() and res.score == pytest.approx(ref.score, abs=TOL)
    assert "ties" not in res.message and res.message == "loopy: converged after 3 iterations; largest message change 0"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_every_schedule_goes_through_the_same_decoder(schedule, monkeypatch):
    calls = []
    real = _decode.break_ties

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(out)
        return out

    monkeypatch.setattr(_decode, "break_ties", spy)
    res = _run(_exactly_one(), schedule)
    assert len(calls) == 1 and calls[0].rounds == 3 and res.assignment.tolist() == calls[0].assignment.tolist()


# --------------------------------------------------------------------------- failures are reported
def test_a_forbidden_decoding_after_converged_messages_is_an_error_with_a_warning():
    """A feasible loopy model (best score 2) whose clamped messages do not converge again: the decoder stops
    with its ties and the labelling it reads is forbidden. That is reported, never as a success."""
    fg = FactorGraph([2, 2, 2])
    fg.add_factor(CardinalityFactor([1, 2, 0], [-np.inf, 0.0, -1.0, 0.0]))
    fg.add_factor(TableFactor([0, 1, 2], [[[1.0, 0.0], [1.0, 1.0]], [[0.0, 0.0], [0.0, 1.0]]]))
    fg.add_factor(TableFactor([1, 2, 0], [[[-1.0, -np.inf], [-np.inf, 1.0]], [[-1.0, 1.0], [0.0, 1.0]]]))
    fg.add_factor(TableFactor([2, 0, 1], [[[0.0, -np.inf], [1.0, 1.0]], [[-np.inf, -1.0], [-np.inf, 0.0]]]))
    fg.add_factor(TableFactor([2, 0], [[0.0, 1.0], [1.0, 0.0]]))
    fg.add_factor(TableFactor([1], [1.0, 0.0]))
    assert infer(fg, task="map").score == pytest.approx(2.0)
    with pytest.warns(ConvergenceWarning, match="decoded labelling violates a hard constraint"):
        res = loopy(fg, task="map")
    assert res.score == -np.inf
    assert res.status == "error" and not res.converged
    assert res.message.startswith("loopy: the solver failed; messages converged after ")
    assert "stopped with ties left" in res.message


def test_a_forbidden_decoding_after_stopping_short_keeps_its_status_and_says_so():
    fg = FactorGraph([2] * 5)
    for i in range(4):
        fg.add_factor(TableFactor([i, i + 1], [[0.0, -np.inf], [-np.inf, 0.0]]))  # all equal
    fg.add_factor(TableFactor([0], [0.5, 0.0]))
    fg.add_factor(TableFactor([4], [0.0, 2.0]))
    with pytest.warns(ConvergenceWarning, match="violates a hard constraint"):
        res = loopy(fg, task="map", max_iter=1)
    assert res.status == "max_iter_reached" and res.score == -np.inf
    assert loopy(fg, task="map").assignment.tolist() == [1] * 5


def test_an_odd_cycle_of_not_equal_constraints_is_a_zero_partition():
    """Max-product converges at once to uniform beliefs; clamping variable 0 to either state is refuted."""
    fg = FactorGraph([2] * 3)
    for a, b in [(0, 1), (1, 2), (0, 2)]:
        fg.add_factor(TableFactor([a, b], [[-np.inf, 0.0], [0.0, -np.inf]]))
    for schedule in SCHEDULES:
        with pytest.raises(ZeroPartitionError, match="forbid every state of variable 0 once it is clamped"):
            _run(fg, schedule)


# --------------------------------------------------------------------------- random models with hard constraints
def _table(rng, shape, p_inf):
    t = rng.integers(-1, 2, size=shape).astype(float)  # small integers: ties are common
    t[rng.random(shape) < p_inf] = -np.inf
    return t


def _counts(rng, d):
    f = rng.integers(-1, 2, size=d + 1).astype(float)
    f[rng.random(d + 1) < 0.5] = -np.inf
    if not np.isfinite(f).any():
        f[rng.integers(d + 1)] = 0.0
    return f


def _tree_model(rng, n):
    """A factor graph whose factor/variable incidence graph is a tree (each factor adds 1-3 new variables)."""
    card = rng.choice([2, 3], size=n)
    scopes, v = [], 1
    while v < n:
        k = int(min(rng.integers(1, 4), n - v))
        scope = [int(rng.integers(0, v)), *range(v, v + k)]
        v += k
        counted = rng.random() < 0.5
        if counted:
            card[scope] = 2
        scopes.append((counted, scope))
    fg = FactorGraph(card)
    for counted, scope in scopes:
        if counted:
            fg.add_factor(CardinalityFactor(scope, _counts(rng, len(scope))))
        else:
            fg.add_factor(TableFactor(scope, _table(rng, tuple(card[scope]), 0.25)))
    for u in range(n):
        if rng.random() < 0.7:
            fg.add_factor(TableFactor([u], _table(rng, (int(card[u]),), 0.15)))
    return fg


def _loopy_model(rng, n):
    card = np.full(n, 2) if rng.random() < 0.5 else rng.choice([2, 3], size=n)
    fg = FactorGraph(card)
    for _ in range(int(rng.integers(n, 2 * n + 1))):
        scope = rng.choice(n, size=int(rng.integers(2, 4)), replace=False).tolist()
        if rng.random() < 0.3 and all(card[s] == 2 for s in scope):
            fg.add_factor(CardinalityFactor(scope, _counts(rng, len(scope))))
        else:
            fg.add_factor(TableFactor(scope, _table(rng, tuple(card[scope]), 0.15)))
    for u in range(n):
        if rng.random() < 0.7:
            fg.add_factor(TableFactor([u], _table(rng, (int(card[u]),), 0.1)))
    return fg


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 8), seed=st.integers(0, 2**31), schedule=st.sampled_from(SCHEDULES))
def test_on_a_tree_the_decoded_score_is_the_exact_map_score(n, seed, schedule):
    fg = _tree_model(np.random.default_rng(seed), n)
    best = float(np.max(joint_scores(fg)[1]))
    if best == -np.inf:
        with pytest.raises(ZeroPartitionError):
            _run(fg, schedule)
        return
    res = _run(fg, schedule)
    assert res.status == "converged", res.message
    assert res.score == pytest.approx(best, abs=TOL)
    assert res.score == pytest.approx(infer(fg, task="map").score, abs=TOL)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(3, 8), seed=st.integers(0, 2**31), schedule=st.sampled_from(SCHEDULES))
def test_on_a_loopy_graph_a_success_is_feasible_and_a_failure_is_reported(n, seed, schedule):
    fg = _loopy_model(np.random.default_rng(seed), n)
    best = float(np.max(joint_scores(fg)[1]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        try:
            res = _run(fg, schedule, max_iter=200)
        except ZeroPartitionError:
            assert best == -np.inf  # sound: only a model without a configuration of positive probability
            return
    assert res.score == fg.score(res.assignment) and res.score <= best + TOL
    if res.status == "converged":
        assert res.converged and np.isfinite(res.score)
    else:
        assert not res.converged and res.status in ("error", "max_iter_reached")
        assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
    if res.score == -np.inf:
        assert res.status != "converged" and "violates a hard constraint" in res.message
