"""The HLMRF model: construction, validation, evaluation, files, and the opinion-diffusion generator."""

import re

import numpy as np
import pytest

from tractable.datasets import opinion_diffusion
from tractable.hlmrf import HLMRF, solve


def test_objective_and_violation_by_hand():
    m = HLMRF(3)
    m.add_potential([0, 1], [1.0, -2.0], constant=0.5, weight=2.0)  # 2 max(x0 - 2 x1 + .5, 0)
    m.add_potential([2], [1.0], constant=-0.25, weight=3.0, squared=True)  # 3 max(x2 - .25, 0)^2
    m.add_constraint([0, 2], [1.0, 1.0], constant=-1.0, sense="<=")
    m.add_constraint([1], [1.0], constant=-0.5, sense="==")
    m.add_constraint([0], [1.0], constant=-0.2, sense=">=")
    x = np.array([0.9, 0.1, 0.75])
    np.testing.assert_allclose(m.objective(x), 2 * (0.9 - 0.2 + 0.5) + 3 * 0.5**2)
    np.testing.assert_allclose(m.constraint_violations(x), [0.65, 0.4, 0.0])
    assert m.max_violation(x) == pytest.approx(0.65)
    assert m.max_violation([1.5, 0.5, 0.0]) == pytest.approx(0.5)  # box violation (and x0 + x2 <= 1)
    assert (m.n_variables, m.n_potentials, m.n_constraints) == (3, 2, 3)


def test_bulk_constructors_match_single_adds(make_model):
    single = make_model(3, squared="mixed")
    p, c = single.potential_arrays(), single.constraint_arrays()
    bulk = HLMRF(single.n_variables)
    assert bulk.add_potentials(
        p["indptr"], p["variables"], p["coefficients"], p["constants"], p["weights"], p["squared"]
    ) == range(0, single.n_potentials)
    bulk.add_constraints(
        c["indptr"], c["variables"], c["coefficients"], c["constants"], np.array(["<=", "==", ">="])[c["senses"]]
    )
    x = np.random.default_rng(0).random(single.n_variables)
    assert bulk.objective(x) == single.objective(x)
    assert bulk.max_violation(x) == single.max_violation(x)
    assert solve(bulk, method="clarabel").objective == pytest.approx(
        solve(single, method="clarabel").objective, rel=1e-9
    )


def test_arrays_are_read_only_and_inputs_not_mutated():
    var = np.array([0, 1])
    coef = np.array([1.0, -1.0])
    m = HLMRF(2)
    m.add_potential(var, coef)
    var[0], coef[0] = 1, 5.0
    a = m.potential_arrays()
    np.testing.assert_array_equal(a["variables"], [0, 1])
    np.testing.assert_array_equal(a["coefficients"], [1.0, -1.0])
    with pytest.raises(ValueError):
        a["coefficients"][0] = 2.0


def test_save_load_round_trip(tmp_path, make_model):
    m = make_model(7, squared="mixed")
    m.fix([2], [0.25])
    path = tmp_path / "model.npz"
    m.save(path)
    back = HLMRF.load(path)
    assert repr(back) == repr(m)
    for key, val in m.potential_arrays().items():
        np.testing.assert_array_equal(back.potential_arrays()[key], val)
    for key, val in m.constraint_arrays().items():
        np.testing.assert_array_equal(back.constraint_arrays()[key], val)
    np.testing.assert_array_equal(back.fixed[1], [0.25])
    assert solve(back, method="clarabel").objective == pytest.approx(solve(m, method="clarabel").objective, rel=1e-12)


def test_load_rejects_other_files(tmp_path):
    np.savez(tmp_path / "x.npz", a=np.zeros(2))
    with pytest.raises(ValueError, match=re.escape("is not a tractable.hlmrf file")):
        HLMRF.load(tmp_path / "x.npz")
    (tmp_path / "y.npz").write_text("nonsense")
    with pytest.raises(ValueError, match=re.escape("`path` is not a readable .npz file")):
        HLMRF.load(tmp_path / "y.npz")
    m = HLMRF(1)
    m.add_potential([0], [1.0])
    m.save(tmp_path / "m.npz")
    data = dict(np.load(tmp_path / "m.npz"))
    np.savez(tmp_path / "v.npz", **{**data, "version": np.array(99)})
    with pytest.raises(ValueError, match=re.escape("has file format version 99; this version reads 1")):
        HLMRF.load(tmp_path / "v.npz")
    np.savez(tmp_path / "p.npz", **{**data, "pot_power": np.array([3], dtype=np.int8)})
    with pytest.raises(ValueError, match=re.escape(f"`power` must contain only 1 or 2; got 3: {tmp_path}")):
        HLMRF.load(tmp_path / "p.npz")
    del data["con_indptr"]
    np.savez(tmp_path / "k.npz", **data)
    with pytest.raises(ValueError, match=re.escape("lacks the array 'con_indptr'")):
        HLMRF.load(tmp_path / "k.npz")


def test_bad_input_messages():
    m = HLMRF(3)
    with pytest.raises(ValueError, match=re.escape("`n_variables` must be >= 1; got 0.")):
        HLMRF(0)
    with pytest.raises(ValueError, match=re.escape("`coefficients` must not contain NaN; got NaN at index 0.")):
        m.add_potential([0], [np.nan])
    with pytest.raises(ValueError, match=re.escape("`coefficients` must not contain +inf")):
        m.add_potential([0], [np.inf])
    with pytest.raises(ValueError, match=re.escape("`weight` must be >= 0; got -1.0.")):
        m.add_potential([0], [1.0], weight=-1.0)
    with pytest.raises(ValueError, match=re.escape("`weight` must be finite; got nan.")):
        m.add_potential([0], [1.0], weight=np.nan)
    with pytest.raises(ValueError, match=re.escape("`variables` must contain indices in [0, 2]; got 3.")):
        m.add_potential([3], [1.0])
    with pytest.raises(TypeError, match=re.escape("`squared` must be a bool (p = 2 if True, p = 1 if False); got 3.")):
        m.add_potential([0], [1.0], squared=3)
    msg = "`coefficients` must have the shape of `variables` (2,); got (1,)."
    with pytest.raises(ValueError, match=re.escape(msg)):
        m.add_potential([0, 1], [1.0])
    with pytest.raises(ValueError, match=re.escape("`sense` must be one of '<=', '==', '>='; got '<'.")):
        m.add_constraint([0], [1.0], sense="<")
    with pytest.raises(ValueError, match=re.escape("`constant` must be finite; got inf.")):
        m.add_constraint([0], [1.0], constant=np.inf)
    with pytest.raises(ValueError, match=re.escape("`weights` must be >= 0; got -2.0.")):
        m.add_potentials([0, 1], [0], [1.0], 0.0, [-2.0])
    with pytest.raises(ValueError, match=re.escape("`indptr` must start at 0 and be non-decreasing")):
        m.add_potentials([1, 2], [0], [1.0])
    with pytest.raises(ValueError, match=re.escape("`variables` and `coefficients` must have indptr[-1] = 2 entries")):
        m.add_potentials([0, 2], [0], [1.0])
    with pytest.raises(ValueError, match=re.escape("`constants` must be a scalar or have shape (1,); got (2,).")):
        m.add_potentials([0, 1], [0], [1.0], [0.0, 1.0])
    with pytest.raises(TypeError, match=re.escape("`squared` must be a bool or an array of bools; got dtype int64.")):
        m.add_potentials([0, 1], [0], [1.0], squared=np.array([2]))
    with pytest.raises(ValueError, match=re.escape("`senses` must be one of '<=', '==', '>='; got '=<'.")):
        m.add_constraints([0, 1, 2], [0, 1], [1.0, 1.0], 0.0, ["<=", "=<"])
    with pytest.raises(ValueError, match=re.escape("`values` must lie in [0, 1]; got 1.5.")):
        m.fix([0], [1.5])
    with pytest.raises(ValueError, match=re.escape("`values` must be a scalar or have shape (2,); got (3,).")):
        m.fix([0, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=re.escape("`x` must have shape (3,); got (2,).")):
        m.objective([0.1, 0.2])
    assert m.n_potentials == 0 and m.n_constraints == 0  # nothing was added by the failed calls


def test_constraints_contradicting_fixed_values():
    m = HLMRF(2)
    m.add_constraint([0, 1], [1.0, 1.0], constant=-1.0)
    m.fix([0], [0.7])
    with pytest.raises(
        ValueError,
        match=re.escape(
            "constraint 0 cannot hold (checked with `values`): it has no free variable and its left-hand side is "
            "0.5, which must be <= 0."
        ),
    ):
        m.fix([1], [0.8])
    assert list(m.fixed[0]) == [0]  # the failed fix left the model unchanged
    with pytest.raises(ValueError, match=re.escape("constraint 1 cannot hold (checked with `constant`)")):
        m.add_constraint([0], [1.0], constant=-0.5, sense="==")  # the model's index of the new constraint
    assert m.n_constraints == 1


@pytest.mark.parametrize("sense, constant", [("<=", 1.0), ("==", 0.5), (">=", -2.0)])
def test_a_constraint_over_no_variable_that_cannot_hold_is_refused(sense, constant):
    """``1 <= 0`` over no variable: refused when added, as one over fixed variables only (it used to reach
    the solvers, which reported it optimal with its violation)."""
    m = HLMRF(1)
    m.add_potential([0], [1.0])
    with pytest.raises(ValueError, match=re.escape("constraint 0 cannot hold (checked with `constant`)")):
        m.add_constraint([], [], constant=constant, sense=sense)
    with pytest.raises(ValueError, match=re.escape("constraint 0 cannot hold (checked with `constants`)")):
        m.add_constraints([0, 0], np.zeros(0, np.int64), np.zeros(0), [constant], [sense])
    assert m.n_constraints == 0
    m.add_constraint([], [], constant=0.0, sense=sense)  # 0 <= 0 holds
    assert m.n_constraints == 1


def test_opinion_diffusion_matches_paper_statistics():
    # Sec. 4.1: 22,050 voters -> about 130,000 potentials + constraints, 83-85% potentials
    m = opinion_diffusion(22_050, rng=0)
    total = m.n_potentials + m.n_constraints
    assert 120_000 <= total <= 145_000
    assert 0.83 <= m.n_potentials / total <= 0.86
    net = m.network
    assert m.n_variables == 2 * net.n_voters and m.n_constraints == net.n_voters
    assert m.n_potentials == 2 * len(net.edges) + np.count_nonzero(net.opinions)
    assert net.n_voters < 22_050  # isolated voters removed
    degree = np.bincount(net.edges.ravel(), minlength=net.n_voters)
    assert degree.min() >= 1
    assert np.all(net.edges[:, 0] != net.edges[:, 1])
    assert len(net.type_names) == 6 and np.all((net.type_weights > 0) & (net.type_weights < 1))
    assert np.all(np.abs(net.opinions) <= 1)
    p = m.potential_arrays()
    assert np.all(p["weights"][: np.count_nonzero(net.opinions)] == 0.5)
    assert not p["squared"].any() and opinion_diffusion(50, squared=True, rng=0).potential_arrays()["squared"].all()


def test_opinion_diffusion_is_seeded():
    a, b = opinion_diffusion(500, rng=7), opinion_diffusion(500, rng=7)
    np.testing.assert_array_equal(a.network.edges, b.network.edges)
    np.testing.assert_array_equal(a.network.opinions, b.network.opinions)
    assert not np.array_equal(opinion_diffusion(500, rng=8).network.opinions[:10], a.network.opinions[:10])
    with pytest.raises(ValueError, match=re.escape("`n_voters` must be >= 2; got 1.")):
        opinion_diffusion(1)
    with pytest.raises(TypeError, match=re.escape("`squared` must be a bool; got 'yes'.")):
        opinion_diffusion(10, squared="yes")


@pytest.mark.parametrize("mean_degree", [0.3, 1.5, 4.0])
def test_opinion_diffusion_mean_degree_law(mean_degree):
    # the degree law: exact mean, sums to 1, power-law tail with each type's own exponent
    from tractable.datasets.opinion_diffusion import EDGE_TYPES, MAX_DEGREE, _degree_law

    k = np.arange(MAX_DEGREE + 1)
    for _, gamma, alpha, _ in EDGE_TYPES:
        p = _degree_law(gamma, alpha, mean_degree)
        assert p.sum() == pytest.approx(1.0, abs=1e-12) and np.all(p >= 0)
        assert (k * p).sum() == pytest.approx(mean_degree, rel=1e-12)
        support = np.flatnonzero(p[1:]) + 1
        assert np.all(np.diff(support) == 1) and support[-1] == MAX_DEGREE  # k_min .. MAX_DEGREE
        ks = support[:-1]
        np.testing.assert_allclose(p[ks] / p[ks + 1], ((ks + 1) / ks) ** gamma, rtol=1e-12)
        # the smallest k_min that reaches the mean: the next smaller one could not
        if support[0] > 1:
            w = k[support[0] - 1 :] ** -gamma
            assert (k[support[0] - 1 :] * w).sum() / w.sum() < mean_degree


def test_opinion_diffusion_mean_degree_sets_the_density():
    n = 20_000
    m = opinion_diffusion(n, mean_degree=1.5, rng=2)
    net = m.network
    per_type = np.bincount(net.edge_types, minlength=6) / n
    # stubs beyond the smaller of the in/out totals, self-loops and repeated edges are dropped: a
    # few percent (up to ~12% for the heavy-tailed types at this size), never more edges than drawn
    assert np.all((per_type >= 0.85 * 1.5) & (per_type <= 1.02 * 1.5)), per_type
    assert 15 <= m.n_potentials / net.n_voters <= 19  # about 1 + 2 * 6 * 1.5 = 19 per voter
    dense = opinion_diffusion(2000, mean_degree=[0.5, 1, 1.5, 2, 2.5, 3], rng=1)
    counts = np.bincount(dense.network.edge_types, minlength=6)
    assert np.all(np.diff(counts) > 0)  # one density per type, in order
    sparse = opinion_diffusion(2000, rng=1)
    assert sparse.n_potentials < opinion_diffusion(2000, mean_degree=1.0, rng=1).n_potentials


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), 1001, "1.5", True, [1.0, 2.0], [[1.0] * 6]])
def test_opinion_diffusion_mean_degree_validation(bad):
    with pytest.raises(ValueError, match=re.escape("`mean_degree` must be")):
        opinion_diffusion(100, mean_degree=bad, rng=0)


def test_opinion_diffusion_psl_export(tmp_path):
    m = opinion_diffusion(120, squared=True, rng=1)
    paths = m.network.write_psl(tmp_path)
    rules = (tmp_path / "model.psl").read_text().splitlines()
    assert len(rules) == 8 and rules[-1] == "Pref(A, +P) <= 1 ." and all(r.endswith("^2") for r in rules[:-1])
    net = m.network
    n_edges = sum(len((tmp_path / f"rel_{t}_obs.txt").read_text().splitlines()) for t in net.type_names)
    assert n_edges == len(net.edges)
    assert len((tmp_path / "pref_targets.txt").read_text().splitlines()) == 2 * net.n_voters
    intrinsic = [line.split("\t") for line in (tmp_path / "intrinsic_obs.txt").read_text().splitlines()]
    assert len(intrinsic) == np.count_nonzero(net.opinions)
    v, party, val = intrinsic[0]
    i = int(v[1:])
    assert party == ("L" if net.opinions[i] < 0 else "C") and float(val) == abs(net.opinions[i])
    assert set(paths) >= {"rules", "Intrinsic", "Pref"}


def _saved_bytes(tmp_path) -> bytes:
    m = HLMRF(2)
    m.add_potential([0, 1], [1.0, -1.0])
    m.save(tmp_path / "m.npz")
    return (tmp_path / "m.npz").read_bytes()


@pytest.mark.parametrize(
    "content, message",
    [
        (lambda good: good[: len(good) // 2], "(BadZipFile: File is not a zip file)"),  # truncated
        (lambda good: b"", "(an empty file)."),
        (lambda good: b"n_variables = 3\n", "(not a zip archive: it starts with b'n_vari')."),  # text renamed .npz
    ],
)
def test_load_corrupt_file_is_a_value_error_naming_the_file(tmp_path, content, message):
    path = tmp_path / "broken.npz"
    path.write_bytes(content(_saved_bytes(tmp_path)))
    with pytest.raises(ValueError, match=re.escape(f"`path` is not a readable .npz file: {path} ")) as info:
        HLMRF.load(path)
    assert message in str(info.value)


def test_load_npy_and_malformed_arrays(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros(3))
    with pytest.raises(ValueError, match=re.escape("a single .npy array, not an .npz archive")):
        HLMRF.load(tmp_path / "a.npy")
    np.savez(tmp_path / "nv.npz", format=np.array("tractable.hlmrf"))  # no version
    with pytest.raises(
        ValueError, match=re.escape(f"`path` has no readable version; this version reads 1: {tmp_path}")
    ):
        HLMRF.load(tmp_path / "nv.npz")
    _saved_bytes(tmp_path)
    data = dict(np.load(tmp_path / "m.npz"))
    np.savez(tmp_path / "n.npz", **{**data, "n_variables": np.array("two")})
    with pytest.raises(ValueError, match=re.escape("`path` must hold a positive integer `n_variables`")):
        HLMRF.load(tmp_path / "n.npz")
    np.savez(tmp_path / "i.npz", **{**data, "pot_variables": np.array([0, 7])})
    with pytest.raises(ValueError, match=re.escape(f"`path` holds an invalid tractable.hlmrf model: {tmp_path}")):
        HLMRF.load(tmp_path / "i.npz")


def test_load_missing_file_stays_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape("absent.npz")):
        HLMRF.load(tmp_path / "absent.npz")


def test_opinion_diffusion_refuses_a_network_that_cannot_fit():
    with pytest.raises(ValueError, match=r"`n_voters` asks for 1000000000000 voters"):
        opinion_diffusion(10**12, rng=0)
