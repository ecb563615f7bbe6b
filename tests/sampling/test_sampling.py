"""Gibbs sampling, adaptive MMP and pruning against enumeration, scipy and the paper's construction."""

import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.special import betainc, logsumexp

from _oracles import joint_scores
from tractable import CardinalityFactor, ConvergenceWarning, FactorGraph, TableFactor
from tractable.exact import enumerate_marginals
from tractable.sampling import _kernels, adaptive_mmp, gibbs, prune
from tractable.sampling._wiring import compile_binary
from tractable.sampling.prune import expected_table


def _random_binary_graph(rng, n=6, p_pair=0.5, hard=False, general=True):
    fg = FactorGraph([2] * n)
    for v in range(n):
        fg.add_factor(TableFactor([v], [0.0, rng.normal(0, 1)]))
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < p_pair:
                fg.add_factor(TableFactor([i, j], rng.normal(0, 0.8, size=(2, 2))))
    if general:
        scope = rng.choice(n, size=3, replace=False)
        t = rng.normal(0, 1, size=(2, 2, 2))
        if hard:
            t[1, 1, 1] = -np.inf  # not all three on
        fg.add_factor(TableFactor(scope, t))
        f = rng.normal(0, 0.5, size=n + 1)
        if hard:
            f[-1] = -np.inf  # not all on
        fg.add_factor(CardinalityFactor(np.arange(n), f))
    return fg


@pytest.mark.parametrize("hard", [False, True])
def test_gibbs_converges_to_the_exact_marginals(seed, hard):
    rng = np.random.default_rng(seed)
    fg = _random_binary_graph(rng, hard=hard)
    exact = enumerate_marginals(fg).marginals
    res = gibbs(fg, n_sweeps=40_000, burn_in=200, rng=seed)
    # 40,000 sweeps of a 6-variable model mixing within a few sweeps: the Rao-Blackwellized estimate's
    # standard error is below 0.005; 0.02 is four of them
    assert_allclose(res.marginals, exact, atol=0.02)
    assert res.n_iter == 40_000 and res.n_updates == 40_200 * 6 and res.status == "completed"


def test_gibbs_same_seed_same_result_and_samples():
    fg = _random_binary_graph(np.random.default_rng(1))
    a = gibbs(fg, n_sweeps=300, rng=7, return_samples=True)
    b = gibbs(fg, n_sweeps=300, rng=7, return_samples=True)
    assert np.array_equal(a.samples, b.samples) and np.array_equal(a.marginals, b.marginals)
    assert a.samples.shape == (300, 6) and a.samples.dtype == np.uint8
    assert not np.array_equal(a.samples, gibbs(fg, n_sweeps=300, rng=8, return_samples=True).samples)
    # samples never leave the feasible set
    hard = _random_binary_graph(np.random.default_rng(2), hard=True)
    s = gibbs(hard, n_sweeps=500, rng=0, return_samples=True).samples
    assert np.all(np.isfinite(hard.score(s.astype(np.int64))))


def test_gibbs_starts_from_a_decoding_when_the_field_optimum_is_infeasible():
    fg = FactorGraph([2] * 4)
    for v in range(4):
        fg.add_factor(TableFactor([v], [0.0, 2.0]))  # each wants to be on
    fg.add_factor(CardinalityFactor(range(4), [0.0, 0.0, -np.inf, -np.inf, -np.inf]))  # at most one on
    res = gibbs(fg, n_sweeps=20_000, rng=0)
    assert_allclose(res.marginals, enumerate_marginals(fg).marginals, atol=0.02)
    with pytest.raises(ValueError, match=re.escape("`init` must be a feasible state")):
        gibbs(fg, n_sweeps=10, init=[1, 1, 0, 0])


@settings(max_examples=200, deadline=None)
@given(a=st.floats(1.0, 5000.0), b=st.floats(1.0, 5000.0))
def test_beta_tails_match_scipy(a, b):
    p0, p1 = _kernels.beta_tails_half(a, b)
    # the small tail is computed directly, so it keeps its relative accuracy: its prefactor is exp(log B-terms)
    # with log-gamma values of size (a + b) log(a + b) ~ 1e4, whose rounding (~1e-12 absolute) becomes the
    # relative error of the tail: 1e-8 leaves room, down to tails of 1e-290
    for ours, ref in ((p0, betainc(a, b, 0.5)), (p1, betainc(b, a, 0.5))):
        assert ours == pytest.approx(ref, rel=1e-8, abs=1e-300)


def test_decision_posterior_is_eq_5_with_the_lag_1_effective_sample_size():
    rng = np.random.default_rng(0)
    x = (rng.random(400) < 0.6).astype(np.int64)
    x[1:] = np.where(rng.random(399) < 0.5, x[:-1], x[1:])  # positively autocorrelated
    n, m = x.shape[0], int(x.sum())
    mu = m / n
    r = np.sum((x[:-1] - mu) * (x[1:] - mu)) / (n - 1) / (mu * (1 - mu))
    ess = n * (1 - r) / (1 + r)
    p0, p1 = _kernels.decision_tails(m, n, int(np.sum(x[:-1] * x[1:])), int(x[0]), int(x[-1]))
    assert 0 < r < 1
    assert_allclose(p0, betainc(mu * ess + 1, (1 - mu) * ess + 1, 0.5), rtol=1e-10)
    assert_allclose(p0 + p1, 1.0)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), hard=st.booleans())
def test_prune_is_the_kl_optimal_factor_of_eq_6(seed, hard):
    rng = np.random.default_rng(seed)
    fg = _random_binary_graph(rng, n=6, hard=hard)
    conf = rng.random(6) < 0.4
    mu = rng.uniform(0.05, 0.95, size=6)
    if hard:
        mu[conf & (rng.random(6) < 0.3)] = 0.0  # certain decisions: zero weight must not meet -inf as NaN
    q = prune(fg, conf, mu)
    # q*(x_u) ∝ exp(sum_{x_c} q'(x_c) score(x_c, x_u)), by enumeration of all 2**6 states. Factors entirely
    # inside the confident set add a constant to the exponent (-inf when q' reaches one of their forbidden
    # configurations); a constant does not change q, so the oracle leaves them out as Eq. 7-8 do.
    rest = FactorGraph([2] * 6)
    for fac in fg.factors:
        if not conf[fac.variables].all():
            rest.add_factor(fac)
    ys, sc = joint_scores(rest)
    w = np.prod(np.where(ys[:, conf] == 1, mu[conf], 1 - mu[conf]), axis=1)
    u = np.flatnonzero(~conf)
    key = ys[:, u] @ (2 ** np.arange(len(u))[::-1])
    expected = np.full(2 ** len(u), 0.0)
    dead = np.zeros(2 ** len(u), dtype=bool)
    for k in range(2 ** len(u)):
        sel = (key == k) & (w > 0)
        dead[k] = np.any(np.isneginf(sc[sel]))
        expected[k] = np.sum(w[sel] * np.where(np.isneginf(sc[sel]), 0.0, sc[sel]))
    expected[dead] = -np.inf
    if len(u) == 0:
        assert q.n_variables == 0
        return
    assert q.kept_variables.tolist() == u.tolist()
    qy, qs = joint_scores(q)
    assert np.array_equal(np.isneginf(qs), np.isneginf(expected))
    if np.isfinite(expected).any():
        fin = np.isfinite(expected)
        # equal up to the dropped normalization constant
        assert_allclose(qs[fin] - logsumexp(qs[fin]), expected[fin] - logsumexp(expected[fin]), atol=1e-10)
    assert len(q.factors) <= len(fg.factors)  # the graph never grows


def test_pruning_a_block_with_exact_marginals_leaves_the_other_block_exact():
    rng = np.random.default_rng(3)
    a = _random_binary_graph(rng, n=4, general=False)
    fg = FactorGraph([2] * 8)
    for fac in a.factors:  # block A: variables 0-3
        fg.add_factor(fac)
    b = _random_binary_graph(rng, n=4)
    for fac in b.factors:  # block B: variables 4-7, independent of A
        fg.add_factor(fac.relabel(np.arange(4, 8)))
    exact = enumerate_marginals(fg).marginals
    conf = np.array([True, True, True, True, False, False, False, False])  # all of block A
    q = prune(fg, conf, exact[:, 1])
    assert_allclose(enumerate_marginals(q).marginals, exact[~conf], atol=1e-12)
    # within a block the contraction is the paper's approximation, not exact: pruning half of block A
    # changes the other half's marginals slightly
    half = prune(fg, [0, 1], exact[:, 1])
    m = enumerate_marginals(half).marginals
    assert_allclose(m[2:], exact[4:], atol=1e-12) and 0 < np.max(np.abs(m[:2] - exact[2:4])) < 0.01


def test_the_kernel_folds_a_table_exactly_as_prune_does():
    # one adaptive sweep of run_sweeps over variable 1 alone: forced on, it reaches 3 ones in 10 samples and a
    # decision that is 0.49-confident, so it is pruned with mu = 0.3 and its general factors are folded
    rng = np.random.default_rng(0)
    t = rng.normal(size=(2, 2, 2))
    t[0, 1, 1] = -np.inf
    f = rng.normal(size=4)
    fg = FactorGraph([2, 2, 2])
    fg.add_factor(TableFactor([0, 1, 2], t))
    fg.add_factor(CardinalityFactor([0, 1, 2], f))
    fg.add_factor(TableFactor([1], [-np.inf, 0.0]))
    w = compile_binary(fg)
    x = np.array([1, 1, 0])
    stats = np.zeros((_kernels.N_STATS, 3), dtype=np.int64)
    stats[_kernels.ONES, 1], stats[_kernels.COUNT, 1], stats[_kernels.NEXT_CHECK, 1] = 2, 9, 10
    active, p0, fac_active = np.ones(3, dtype=np.bool_), np.zeros(3), np.diff(w.g_ptr)
    order, state = np.array([1, 0, 2]), np.array([1, 2], dtype=np.uint64)
    done, n_active, _, _, _ = _kernels.run_sweeps(
        1, order, 1, x, *w.kernel_args(w.nb_ptr[1:].copy()), state, np.zeros(3), np.zeros((0, 3), np.uint8), True,
        0.49, 10, active, stats, p0, np.zeros((2, 1), dtype=np.int64), 0, fac_active, 5,
    )  # fmt: skip
    assert (done, n_active, x[1], bool(active[1])) == (1, 0, 0, False)
    assert_allclose(p0[1], betainc(4, 8, 0.5), rtol=1e-10)  # 3 ones in 10 uncorrelated samples
    table = w.g_tab[w.g_tab_ptr[0] : w.g_tab_ptr[1]].reshape(2, 2, 2)
    ref = expected_table(t, [1], [0.3])
    assert_allclose(table[:, 0, :], ref) and assert_allclose(table[:, 1, :], ref)
    count = w.g_tab[w.g_tab_ptr[1] : w.g_tab_ptr[2]]
    assert_allclose(count, [*(0.7 * f[:3] + 0.3 * f[1:]), -np.inf])
    assert fac_active.tolist() == [2, 2]


def _mmp_model(seed, n=10):
    """A loopy model whose exact marginals stay away from 1/2 (decisions that sampling can settle)."""
    rng = np.random.default_rng(seed)
    fg = FactorGraph([2] * n)
    for v in range(n):
        fg.add_factor(TableFactor([v], [0.0, rng.choice([-1, 1]) * rng.uniform(1.0, 2.5)]))
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < 0.4:
                fg.add_factor(TableFactor([i, j], rng.normal(0, 0.3, size=(2, 2))))
    return fg


@pytest.mark.parametrize("epsilon", [1e-2, 1e-5])
def test_adaptive_decisions_agree_with_exact_mmp(seed, epsilon):
    fg = _mmp_model(seed)
    exact = enumerate_marginals(fg).marginals[:, 1]
    res = adaptive_mmp(fg, epsilon=epsilon, max_sweeps=20_000, rng=seed)
    assert res.converged and res.status == "converged"
    clear = np.abs(exact - 0.5) > 0.05
    assert np.array_equal(res.assignment[clear], (exact[clear] > 0.5).astype(np.int64))
    assert np.all(res.confidence >= 1 - epsilon)
    assert res.active_history[0] == 10 and np.all(np.diff(res.active_history) <= 0)
    assert np.all(np.diff(res.factor_history) <= 0)
    assert res.n_updates < (res.n_iter + 10) * 10  # pruning saved updates


def test_adaptive_same_seed_same_result_and_warns_when_stopped_short():
    fg = _mmp_model(0)
    a, b = adaptive_mmp(fg, rng=3), adaptive_mmp(fg, rng=3)
    assert np.array_equal(a.assignment, b.assignment) and np.array_equal(a.samples_per_variable, b.samples_per_variable)
    with pytest.warns(ConvergenceWarning, match="iteration limit"):
        short = adaptive_mmp(fg, max_sweeps=5, n0=20, rng=0)
    assert not short.converged and short.status == "max_iter_reached" and short.n_iter == 5
    with pytest.raises(ValueError, match="read-only"):
        short.assignment[0] = 1


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"epsilon": 0.5}, "`epsilon` must be in (0, 0.5); got 0.5."),
        ({"epsilon": 0.0}, "`epsilon`"),
        ({"max_sweeps": 0}, "`max_sweeps`"),
    ],
)
def test_adaptive_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        adaptive_mmp(_mmp_model(0), **kwargs)


def test_non_binary_models_and_nan_potentials_are_rejected():
    fg = FactorGraph([2, 3])
    with pytest.raises(ValueError, match=re.escape("`fg` must have binary variables only")):
        adaptive_mmp(fg)
    with pytest.raises(ValueError, match=re.escape("`fg` must have binary variables only")):
        gibbs(fg, n_sweeps=10)
    with pytest.raises(ValueError, match="NaN"):
        TableFactor([0], [0.0, np.nan])
    with pytest.raises(TypeError, match="`fg` must be a FactorGraph"):
        gibbs(np.zeros(3), n_sweeps=10)
    with pytest.raises(TypeError):
        gibbs(_mmp_model(0), 10)  # options are keyword-only


def test_gibbs_time_limit_warns():
    fg = _mmp_model(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = gibbs(fg, n_sweeps=10**8, time_limit=0.05, rng=0)
    assert res.status == "time_limit_reached" and res.n_iter < 10**8
    assert any(issubclass(c.category, ConvergenceWarning) for c in caught)


def test_init_must_be_a_binary_state_of_the_right_shape():
    fg = _mmp_model(0)
    with pytest.raises(ValueError, match=re.escape("`init` must be a 0/1 array of shape (10,); got (3,).")):
        gibbs(fg, n_sweeps=10, init=[0, 1, 0])
    with pytest.raises(ValueError, match=re.escape("`init` must be a 0/1 array of shape (10,)")):
        adaptive_mmp(fg, init=np.full(10, 2))
    with pytest.raises(TypeError, match=re.escape("the Gibbs sampler handles TableFactor and CardinalityFactor")):
        from tractable import RecursiveCardinalityFactor

        bad = FactorGraph([2, 2])
        bad.add_factor(RecursiveCardinalityFactor([0, 1], [[0, 1]], [[0.0, 0.0, 0.0]]))
        gibbs(bad, n_sweeps=10)


def test_one_compiled_signature_serves_gibbs_burn_in_and_adaptive_mmp():
    # a fresh install compiles run_sweeps and decision_tails once: plain sweeps pass empty arrays of the
    # adaptive arguments' types, and Python calls decision_tails with the kernel's int64 counts
    rng = np.random.default_rng(0)
    fg = _random_binary_graph(rng, n=6, hard=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gibbs(fg, n_sweeps=20, rng=0)
        gibbs(fg, n_sweeps=20, burn_in=5, rng=1, return_samples=True)
        adaptive_mmp(fg, max_sweeps=5, burn_in=0, rng=0)
        adaptive_mmp(fg, max_sweeps=50, rng=0, evidence={0: 1})
    assert len(_kernels.run_sweeps.signatures) == 1, _kernels.run_sweeps.signatures
    assert len(_kernels.decision_tails.signatures) == 1, _kernels.decision_tails.signatures


def test_an_impossible_variable_is_named_as_the_caller_numbers_it():
    # with evidence, the sampler runs on the conditioned graph (variables renumbered): the error names the
    # variable by its index and name in the caller's graph
    from tractable import ZeroPartitionError

    fg = FactorGraph([2, 2, 2], ["a", "b", "c"])
    fg.add_factor(TableFactor([0, 1], np.zeros((2, 2))))
    fg.add_factor(TableFactor([2], np.array([-np.inf, -np.inf])))
    fg.add_factor(TableFactor([1, 2], np.zeros((2, 2))))
    with pytest.raises(ZeroPartitionError, match=r"variable 2 \('c'\) has both states forbidden"):
        adaptive_mmp(fg, evidence={"a": 1}, rng=0)


@pytest.mark.parametrize("call", ["gibbs", "adaptive_mmp"])
def test_time_limit_covers_burn_in(call):
    """A burn-in longer than the time limit stops at the limit (it used to run to its end first)."""
    import time

    from tractable.datasets.factor_graphs import grid_factor_graph
    from tractable.sampling import adaptive_mmp, gibbs

    fg = grid_factor_graph(2, 2, field=6.0, coupling=0.1, rng=0)  # strong fields: decided in a few sweeps
    t = time.perf_counter()
    with pytest.warns(ConvergenceWarning):
        if call == "gibbs":
            res = gibbs(fg, n_sweeps=1, burn_in=10**9, time_limit=0.1, rng=0)
            assert res.burn_in < 10**9 and res.marginals.shape == (4, 2) and np.isfinite(res.marginals).all()
        else:  # every decision final after the cut burn-in: still no success
            res = adaptive_mmp(fg, burn_in=10**9, time_limit=0.1, rng=0)
            assert "burn-in cut at" in res.message
    assert res.status == "time_limit_reached" and time.perf_counter() - t < 5.0  # the limit, not 10^9 sweeps


def test_burn_in_in_chunks_draws_the_samples_of_the_same_sweeps_recorded():
    """Burn-in runs in chunks between time checks, and a sweep's draws do not depend on the chunk: B burn-in
    sweeps then N recorded ones give the last N of B + N recorded sweeps (same seed)."""
    from tractable.datasets.factor_graphs import grid_factor_graph
    from tractable.sampling import gibbs

    fg = grid_factor_graph(3, 3, rng=1)
    burn = 300_000  # many chunks of the burn-in loop
    a = gibbs(fg, n_sweeps=50, burn_in=burn, rng=3, return_samples=True, time_limit=1e6)
    b = gibbs(fg, n_sweeps=burn + 50, burn_in=0, rng=3, return_samples=True)
    assert a.burn_in == burn and np.array_equal(a.samples, b.samples[burn:])


@pytest.mark.parametrize("name", ["progress", "return_samples"])
def test_flags_take_true_or_false_only(name):
    from tractable.datasets.factor_graphs import grid_factor_graph
    from tractable.sampling import adaptive_mmp, gibbs

    fg = grid_factor_graph(2, 2, rng=0)
    with pytest.raises(TypeError, match=f"`{name}` must be True or False; got 'no'"):
        gibbs(fg, n_sweeps=10, rng=0, **{name: "no"})
    if name == "progress":
        with pytest.raises(TypeError, match="`progress` must be True or False; got 1"):
            adaptive_mmp(fg, rng=0, progress=1)


def test_a_constant_of_minus_inf_is_a_zero_partition_for_the_samplers():
    """The graph's constant (or a factor over no variable) at -inf: no configuration has non-zero probability,
    as exact.infer and bp.loopy say (the samplers used to sample it and report success)."""
    from tractable import ZeroPartitionError
    from tractable.sampling import adaptive_mmp, gibbs

    a = FactorGraph([2, 2])
    a.add_factor(TableFactor([], -np.inf))
    a.add_factor(TableFactor([0, 1], np.zeros((2, 2))))
    b = FactorGraph([2, 2], constant=-np.inf)
    for fg in (a, b):
        for f in (gibbs, adaptive_mmp):
            with pytest.raises(ZeroPartitionError, match="no configuration has non-zero probability"):
                f(fg, rng=0)
