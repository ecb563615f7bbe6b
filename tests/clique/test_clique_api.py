import re
from dataclasses import FrozenInstanceError, fields

import numpy as np
import pytest

from tractable.clique import (
    METHODS,
    CliqueMAPResult,
    CountPotential,
    Entropy,
    LinearMajority,
    Makespan,
    MaxPotential,
    Potts,
    SquareMakespan,
    SumPotential,
    alpha_expansion,
    alpha_pass,
    clique_map,
    exact_clique_map,
    generalized_alpha_pass,
    icm,
    majority_alpha_pass,
    majority_exact,
    score,
)
from tractable.datasets.clique_benchmark import CLIQUE_KINDS, clique_benchmark

RTOL = 1e-12  # the stored score and score() sum the same terms, possibly in another order


def _methods(pot):
    fns = [alpha_pass, generalized_alpha_pass, icm, clique_map]
    if pot.family == "sum":
        fns.append(alpha_expansion)
    if pot.family == "majority":
        fns += [lambda p, q: majority_alpha_pass(p, q.W), lambda p, q: majority_exact(p, q.W)]
    return fns


@pytest.mark.parametrize("kind", CLIQUE_KINDS)
def test_every_method_reports_the_score_of_its_labels(kind):
    phi, pot = clique_benchmark(kind, n=40, m=6, lam=0.9, rng=1)
    phi[::3, 2] = -np.inf
    for fn in _methods(pot):
        res = fn(phi, pot)
        assert isinstance(res, CliqueMAPResult)
        assert res.assignment.shape == (40,) and res.assignment.dtype == np.int64
        assert res.score == pytest.approx(score(phi, pot, res.assignment), rel=RTOL)
        assert res.score == pytest.approx(res.node_score + res.clique_score, rel=RTOL)
        assert np.isfinite(res.score) and res.time >= 0


def test_results_are_frozen_and_inputs_untouched():
    phi, pot = clique_benchmark("POTTS", n=20, m=4, rng=0)
    before = phi.copy()
    res = alpha_pass(phi, pot)
    with pytest.raises(FrozenInstanceError):
        res.score = 0.0
    with pytest.raises(ValueError):
        res.assignment[0] = 1
    np.testing.assert_array_equal(phi, before)


def test_clique_map_auto_picks_exact_methods(brute):
    rng = np.random.default_rng(0)
    phi = rng.uniform(0, 2, size=(6, 3))
    for pot, method in [
        (Makespan(0.5), "alpha_pass"),
        (LinearMajority(rng.uniform(0, 1, (3, 3))), "majority_exact"),
        (Potts(0.2), "exact"),
        (CountPotential(lambda c: np.asarray(c)[..., 0] ** 0.5), "exact"),
    ]:
        res = clique_map(phi, pot)
        assert res.method == method and res.exact
        assert res.score == pytest.approx(brute(phi, pot)[0], abs=1e-9)
    big, pot = clique_benchmark("ENTROPY", n=60, m=8, rng=3)
    res = clique_map(big, pot)
    assert res.method in ("generalized_alpha_pass+alpha_expansion", "icm+alpha_expansion") and not res.exact
    assert res.score >= generalized_alpha_pass(big, pot).score - 1e-9
    assert res.score >= icm(big, pot, rng=0).score - 1e-9
    res = clique_map(big, Makespan(-0.1))
    assert res.method in ("generalized_alpha_pass+icm", "icm")
    assert res.score >= icm(big, Makespan(-0.1), rng=0).score - 1e-9
    _, maj = clique_benchmark("MAJ-DENSE", n=80, m=70, rng=3)
    big = np.random.default_rng(4).uniform(0, 2, size=(80, 70))
    res = clique_map(big, maj)
    assert res.method in ("majority_alpha_pass+icm", "icm") and not res.exact
    assert res.score >= majority_alpha_pass(big, maj.W).score - 1e-9
    res = clique_map(phi, Potts(0.2), method="icm", rng=3, max_iter=5)
    assert res.method == "icm"


def test_two_label_potts_matches_every_exact_route(brute):
    rng = np.random.default_rng(1)
    phi = rng.normal(size=(9, 2))
    tables = rng.normal(size=(2, 2, 10))
    for pot in (Potts(0.4), Entropy(0.3), SumPotential(tables[0]), MaxPotential(tables[1]), SquareMakespan(0.1)):
        best = brute(phi, pot)[0]
        for res in (alpha_pass(phi, pot), exact_clique_map(phi, pot), clique_map(phi, pot)):
            assert res.exact and res.score == pytest.approx(best, abs=1e-9)


def test_score_function():
    phi = np.array([[1.0, 0.0], [0.0, 2.0]])
    assert score(phi, Potts(0.5), [0, 0]) == 3.0
    assert score(phi, Potts(0.5), np.array([1, 1])) == 4.0
    assert score([[-np.inf, 0.0]], Potts(1.0), [0]) == -np.inf


def test_bad_input_messages():
    pot = Potts(1.0)
    with pytest.raises(ValueError, match=re.escape("`phi` must not contain NaN; got NaN at index (0, 1).")):
        alpha_pass([[0.0, np.nan]], pot)
    with pytest.raises(ValueError, match=re.escape("`phi` must not contain +inf; got +inf at index (1, 0).")):
        icm([[0.0, 1.0], [np.inf, 0.0]], pot)
    with pytest.raises(ValueError, match=re.escape("`phi` must be a 2-D array; got shape (3,).")):
        generalized_alpha_pass([1.0, 2.0, 3.0], pot)
    with pytest.raises(ValueError, match=re.escape("`phi` must have shape (n, m) with n >= 1 and m >= 1; got (0, 3).")):
        exact_clique_map(np.zeros((0, 3)), pot)
    with pytest.raises(
        ValueError, match=re.escape("`phi` must leave every node at least one label above -inf; row 1 is all -inf.")
    ):
        alpha_expansion([[0.0, 1.0], [-np.inf, -np.inf]], pot)
    with pytest.raises(
        TypeError,
        match=re.escape(
            "`potential` must be a CliquePotential (Potts, Entropy, Makespan, "
            "SquareMakespan, SumPotential, MaxPotential, LinearMajority or "
            "CountPotential); got float."
        ),
    ):
        alpha_pass(np.zeros((2, 2)), 1.0)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "`potential.table` must have shape (2, >= 4) for a clique of 3 nodes and 2 labels; got (2, 3)."
        ),
    ):
        alpha_pass(np.zeros((3, 2)), SumPotential(np.zeros((2, 3))))
    with pytest.raises(ValueError, match=re.escape("`potential.W` must have shape (2, 2) for 2 labels; got (3, 3).")):
        icm(np.zeros((3, 2)), LinearMajority(np.eye(3)))
    with pytest.raises(ValueError, match=re.escape("`p` must be >= 1; got 0.")):
        generalized_alpha_pass(np.zeros((3, 2)), pot, p=0)
    with pytest.raises(TypeError, match=re.escape("`p` must be an integer; got 1.5.")):
        generalized_alpha_pass(np.zeros((3, 2)), pot, p=1.5)
    with pytest.raises(ValueError, match=re.escape("`assignment` must have shape (3,); got (2,).")):
        score(np.zeros((3, 2)), pot, [0, 1])
    with pytest.raises(ValueError, match=re.escape("`assignment` must contain indices in [0, 1]; got 5.")):
        score(np.zeros((3, 2)), pot, [0, 1, 5])
    with pytest.raises(
        ValueError,
        match=re.escape(
            "`method` must be one of 'auto', 'alpha_pass', "
            "'generalized_alpha_pass', 'alpha_expansion', "
            "'majority_alpha_pass', 'majority_exact', 'icm', 'exact'; "
            "got 'trws'."
        ),
    ):
        clique_map(np.zeros((3, 2)), pot, method="trws")
    with pytest.raises(ValueError, match=re.escape("`p` does not apply to `method`='auto' (its options: `rng`).")):
        clique_map(np.zeros((3, 2)), pot, p=2)
    with pytest.raises(
        ValueError, match=re.escape("`potential` must be a LinearMajority for method 'majority_exact'; got Potts(1.0).")
    ):
        clique_map(np.zeros((3, 2)), pot, method="majority_exact")


def test_clique_benchmark_families():
    for kind in CLIQUE_KINDS:
        phi, pot = clique_benchmark(kind, n=50, m=5, lam=0.8, rng=4)
        assert phi.shape == (50, 5) and phi.min() >= 0 and phi.max() <= 2
        # every potential is scaled to lam * n when all nodes share a label (MAJ-SPARSE: W[0, 0] * n)
        c = np.array([50, 0, 0, 0, 0])
        expected = 0.8 * 50 if kind != "MAJ-SPARSE" else pot.W[0, 0] * 50
        assert pot(c) == pytest.approx(expected, rel=1e-12)
    _, dense = clique_benchmark("MAJ-DENSE", m=24, lam=1.0, rng=0)
    _, sparse = clique_benchmark("MAJ-SPARSE", m=24, lam=1.0, rng=0)
    for W in (dense.W, sparse.W):
        np.testing.assert_array_equal(W, W.T)
        assert W.min() >= 0 and W.max() <= 2.0
    assert np.all(np.diag(dense.W) == 1.0)
    assert 0.6 < np.mean(sparse.W == 0) < 0.8
    a, b = clique_benchmark("POTTS", rng=9), clique_benchmark("POTTS", rng=9)
    np.testing.assert_array_equal(a[0], b[0])


def test_clique_benchmark_errors():
    with pytest.raises(
        ValueError,
        match=re.escape(
            "`kind` must be one of 'POTTS', 'ENTROPY', 'MAKESPAN', 'MAKESPAN2', 'MAJ-DENSE', 'MAJ-SPARSE'; got 'potts'."
        ),
    ):
        clique_benchmark("potts")
    with pytest.raises(ValueError, match=re.escape("`lam` must be >= 0; got -1.0.")):
        clique_benchmark("POTTS", lam=-1.0)
    with pytest.raises(ValueError, match=re.escape("`n` must be >= 2; got 1.")):
        clique_benchmark("POTTS", n=1)


def test_result_fields_and_statuses(brute):
    common = ("time", "method", "converged", "n_iter", "status", "message")  # every result's (library-wide)
    names = [f.name for f in fields(CliqueMAPResult)]
    assert sorted(names) == sorted(common + ("assignment", "score", "node_score", "clique_score", "exact"))
    assert [k for k in names if k not in common] == ["assignment", "score", "node_score", "clique_score", "exact"]
    rng = np.random.default_rng(2)
    phi = rng.uniform(0, 2, size=(6, 3))
    W = rng.uniform(0, 1, (3, 3))
    optimal = [
        exact_clique_map(phi, Potts(0.2)),
        majority_exact(phi, W),
        alpha_pass(phi, Makespan(0.5)),
        generalized_alpha_pass(phi, MaxPotential(rng.normal(size=(3, 7)))),
        alpha_pass(phi[:, :2], Potts(0.2)),
        majority_alpha_pass(phi[:, :2], W[:2, :2]),
    ]
    for res in optimal:
        assert res.exact and res.status == "optimal" and res.converged
        assert res.message.partition("; ")[0] == f"{res.method}: exact solution"  # the exact solvers add a count
    for res in (alpha_pass(phi, Potts(0.2)), generalized_alpha_pass(phi, Potts(0.2)), majority_alpha_pass(phi, W)):
        assert not res.exact and res.status == "completed" and res.converged
        assert res.message == f"{res.method}: finished"
    res = clique_map(phi, Potts(0.2))
    assert res.status == "optimal" and res.message.startswith("exact: exact solution; ")  # with its detail
    big, pot = clique_benchmark("ENTROPY", n=60, m=8, rng=3)
    res = clique_map(big, pot)
    assert res.status == "converged" and res.message == f"{res.method}: converged after {res.n_iter} iterations"


def test_assignment_is_frozen():
    phi, pot = clique_benchmark("POTTS", n=20, m=4, rng=0)
    for fn in (alpha_pass, icm, clique_map):
        res = fn(phi, pot)
        assert not res.assignment.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            res.assignment[0] = 1
        with pytest.raises(FrozenInstanceError):
            res.assignment = np.zeros(20, dtype=np.int64)


def test_method_names_and_inapplicable_options():
    phi, pot = clique_benchmark("POTTS", n=10, m=3, rng=0)
    assert list(METHODS) == [
        "auto",
        "alpha_pass",
        "generalized_alpha_pass",
        "alpha_expansion",
        "majority_alpha_pass",
        "majority_exact",
        "icm",
        "exact",
    ]
    with pytest.raises(
        ValueError,
        match=re.escape(
            "`method` must be one of 'auto', 'alpha_pass', "
            "'generalized_alpha_pass', 'alpha_expansion', "
            "'majority_alpha_pass', 'majority_exact', 'icm', 'exact'; "
            "got 'ICM'."
        ),
    ) as info:
        clique_map(phi, pot, method="ICM")
    assert isinstance(info.value.__cause__, KeyError)
    with pytest.raises(
        ValueError, match=re.escape("`max_iter` does not apply to `method`='alpha_pass' (its options: none).")
    ):
        clique_map(phi, pot, method="alpha_pass", max_iter=5)
    with pytest.raises(
        ValueError, match=re.escape("`p` does not apply to `method`='icm' (its options: `init`, `max_iter`, `rng`).")
    ):
        clique_map(phi, pot, method="icm", p=2)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "`max_sweeps`, `rng` do not apply to `method`='alpha_expansion' (its options: `init`, `max_iter`)."
        ),
    ):
        clique_map(phi, pot, method="alpha_expansion", rng=0, max_sweeps=3)
    with pytest.raises(
        ValueError, match=re.escape("`init` does not apply to `method`='exact' (its options: `max_compositions`).")
    ):
        clique_map(phi, pot, method="exact", init=None)  # named, so given, even as None
    assert clique_map(phi, pot, method="generalized_alpha_pass", p=1).score == alpha_pass(phi, pot).score
    assert clique_map(phi, pot, method="exact", max_compositions=100).method == "exact"


def test_options_are_keyword_only():
    phi, pot = clique_benchmark("POTTS", n=10, m=3, rng=0)
    init = np.zeros(10, dtype=np.int64)
    calls = [
        lambda: icm(phi, pot, init),
        lambda: icm(phi, pot, None, 5),
        lambda: alpha_expansion(phi, pot, init),
        lambda: generalized_alpha_pass(phi, pot, 2),
        lambda: exact_clique_map(phi, pot, 1000),
        lambda: clique_map(phi, pot, "icm"),
        lambda: clique_benchmark("POTTS", 10),
    ]
    for call in calls:
        with pytest.raises(TypeError, match="positional argument"):
            call()


@pytest.mark.parametrize(
    ("kind", "n", "route"),
    [("POTTS", 60, "alpha_expansion"), ("MAJ-DENSE", 700, "icm"), ("MAKESPAN2", 30, "alpha_pass")],
)
def test_auto_takes_rng_and_defaults_to_seed_0(kind, n, route):
    """``rng`` orders "auto"'s ICM runs; ``None`` is the seed 0, so the default answer never changes."""
    phi, pot = clique_benchmark(kind, n=n, m=8, lam=0.9, rng=2)
    default = clique_map(phi, pot)
    assert route in default.method
    for same in (clique_map(phi, pot, rng=None), clique_map(phi, pot, rng=0), clique_map(phi, pot, method="auto")):
        assert same.assignment.tolist() == default.assignment.tolist() and same.method == default.method
    for seed in (1, 7):
        res = clique_map(phi, pot, rng=seed)
        assert res.assignment.tolist() == clique_map(phi, pot, rng=seed).assignment.tolist()  # a seed repeats
        assert res.score >= icm(phi, pot, rng=seed).score - 1e-9 * abs(res.score)  # its ICM run is icm's
    assert np.isfinite(clique_map(phi, pot, rng=np.random.default_rng(3)).score)  # a Generator is drawn from
    with pytest.raises(TypeError, match="`rng` must be"):
        clique_map(phi, pot, rng="seed")
    with pytest.raises(ValueError, match="`rng` must be a non-negative seed"):
        clique_map(phi, pot, rng=-1)


def test_rng_is_rejected_by_methods_without_randomness():
    phi, pot = clique_benchmark("POTTS", n=10, m=3, rng=0)
    for method in ("alpha_pass", "generalized_alpha_pass", "alpha_expansion", "exact"):
        for rng in (0, None):  # named, so given, even as None
            with pytest.raises(ValueError, match=re.escape(f"`rng` does not apply to `method`={method!r}")):
                clique_map(phi, pot, method=method, rng=rng)
    phi, maj = clique_benchmark("MAJ-DENSE", n=10, m=3, rng=0)
    for method in ("majority_alpha_pass", "majority_exact"):
        with pytest.raises(ValueError, match=re.escape(f"`rng` does not apply to `method`={method!r}")):
            clique_map(phi, maj, method=method, rng=0)
    assert clique_map(phi, maj, method="icm", rng=0).method == "icm"


def test_exact_and_one_pass_majority_methods_report_no_iterations():
    """The library's convention (``_results.Result``): ``n_iter`` is 0 for exact and one-pass methods;
    the exact methods' ``message`` counts the subproblems they solved."""
    phi, pot = clique_benchmark("POTTS", n=8, m=3, lam=0.9, rng=0)
    res = exact_clique_map(phi, pot)
    assert res.n_iter == 0 and res.status == "optimal"
    assert re.fullmatch(
        r"exact: exact solution; [1-9]\d* of 45 count vectors solved as assignment problems", res.message
    )
    phi, maj = clique_benchmark("MAJ-DENSE", n=30, m=5, lam=0.9, rng=0)
    res = majority_exact(phi, maj.W)
    assert res.n_iter == 0 and res.status == "optimal"
    assert re.fullmatch(r"majority_exact: exact solution; \d+ matching problems solved", res.message)
    for m in (2, 5):
        res = majority_alpha_pass(phi[:, :m], maj.W[:m, :m])
        assert res.n_iter == 0 and res.status == ("optimal" if m == 2 else "completed")


def test_a_labelling_of_score_minus_inf_is_never_a_success():
    """Every labelling forbidden: the methods optimal for the potential raise ZeroPartitionError; the local
    searches return their labelling with status "error" and a warning (they cannot tell)."""
    import warnings

    from tractable import ConvergenceWarning, ZeroPartitionError
    from tractable.clique import SumPotential, alpha_expansion, alpha_pass, clique_map, exact_clique_map, icm

    pot = SumPotential(np.array([[0.0, -np.inf, -np.inf]] * 2))  # each label at most 0 nodes: none allowed
    phi = np.zeros((2, 2))
    for f in (alpha_pass, clique_map, exact_clique_map):
        with pytest.raises(ZeroPartitionError, match="every labelling of the clique has score -inf"):
            f(phi, pot)
    for f in (icm, alpha_expansion):
        with pytest.warns(ConvergenceWarning, match="score -inf"):
            r = f(phi, pot)
        assert r.status == "error" and not r.converged and r.score == -np.inf
    ok = SumPotential(np.array([[0.0, 0.0, -np.inf]] * 2))  # at most one node per label: allowed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert exact_clique_map(phi, ok).score == 0.0


def test_auto_warns_about_its_result_only_not_about_its_intermediate_steps(monkeypatch):
    """A start or a losing candidate of "auto" that stops short (or finds a forbidden labelling) is not the
    caller's concern; the returned result's own stop is, once, with its detail."""
    import warnings

    import tractable.clique as cq
    from tractable import ConvergenceWarning
    from tractable.clique._result import make_result

    phi = np.random.default_rng(0).normal(size=(6, 3))
    pot = Potts(0.3)
    real = cq._auto_route

    def noisy(phi, potential, rng=None):
        warnings.warn("an intermediate step stopped short", ConvergenceWarning, stacklevel=2)
        return real(phi, potential, rng)

    monkeypatch.setattr(cq, "_auto_route", noisy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert clique_map(phi, pot).converged

    def short(phi, potential, rng=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = make_result(
                phi,
                potential,
                np.zeros(6, np.int64),
                "icm",
                0.0,
                exact=False,
                status="max_iter_reached",
                n_iter=100,
                detail="a detail",
            )
        return res, "icm"

    monkeypatch.setattr(cq, "_auto_route", short)
    with pytest.warns(ConvergenceWarning) as record:
        res = clique_map(phi, pot)
    assert len(record) == 1 and res.message == "icm: stopped at the iteration limit (100) before converging; a detail"
