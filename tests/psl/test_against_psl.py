"""Side by side with PSL 2.4 itself: the same ground program and the same inferred values.

PSL's runtime jar (shipped in ``pslpython``, run by ``benchmarks/_psl_runner.py`` on Java 17) reads the
same JSON configurations. For each program we compare

- the number of ground rules per rule: PSL's log (``Grounded N terms from rule ...``) against our ground
  potentials + constraints of that rule, and the totals of potentials and of constraints;
- the objectives: ours, and that of our ground program at PSL's values, against the exact optimum of our
  ground program (Clarabel); this check also holds where the minimizer is not unique;
- the inferred value of every target atom within 1e-3: ours against the exact solver's and against PSL's,
  both ADMMs run to tight tolerances (PSL: ``epsilon`` 1e-7, step size 10, see ``TIGHT_OPTIONS``; ours:
  ``eps`` 1e-8 with a certified relative gap of 1e-7).

Where PSL's ADMM itself does not get there (named below, with the figures measured), the test says so and
checks the rest. Covered: every program of ``linqs/psl-examples`` (on ``_generate.py`` data), Example 1 of
Bach et al. 2012, the PSL export of ``tractable.datasets.opinion_diffusion`` and a collective-classification
program with ``+``-summation constraints.

``pslpython`` (in the ``test`` extra) ships PSL's jar, so nothing is downloaded at test time; the jar needs Java
(8 or later) on PATH. Without Java, or without ``pslpython``, every test here skips with one reason line. The
whole file takes about 90 s on a 2-core machine; the three slowest programs are marked ``slow`` (``SLOW``), which
leaves about 60 s for ``make test-fast``.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from tractable.psl import Model

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


gen = _load("_psl_corpus_generate", HERE / "_generate.py")
runner = _load("_psl_runner", ROOT / "benchmarks" / "_psl_runner.py")

if shutil.which("java") is None:
    _REASON = "PSL 2.4's jar needs Java 8+ and `java` is not on PATH"
elif importlib.util.find_spec("pslpython") is None:
    _REASON = 'pslpython (PSL 2.4\'s jar) is not installed: pip install -e ".[test]"'
else:
    _REASON = runner.missing_reason()
if _REASON is not None:  # one skip for the whole file, with one reason line
    pytest.skip(f"PSL 2.4 oracle not available: {_REASON}", allow_module_level=True)
pytestmark = [
    # psl-examples set PSL-only options (runtime.db.intids, weight learning); from_json reports them by a warning.
    pytest.mark.filterwarnings("ignore:PSL options without meaning here"),
]

# Our solver at a tight setting: residuals 1e-8 and a certified relative gap of 1e-7 (stops as soon as the
# primal objective is within 1e-7 of the dual lower bound).
OURS = {"eps_abs": 1e-8, "eps_rel": 1e-8, "gap_tol": 1e-7, "max_iter": 500_000}
# Values: the bound. PSL's float32 ADMM at epsilon 1e-7 lands within ~1e-4 of the exact optimum on
# these programs; ours within ~3e-5.
VALUE_TOL = 1e-3
# Objectives (PSL's point, ours) minus the exact optimum, relative to 1 + |optimum|: ADMM stopping rules leave
# ~1e-5 here; 1e-3 still separates a different ground program (the differences seen while developing: 10-20 %).
OBJECTIVE_TOL = 1e-3
# PSL's point must satisfy the hard rules up to its tolerance (its residuals are at most ~1e-5 here).
FEASIBILITY_TOL = 1e-3

# Programs on which PSL's ADMM does not find the optimum of the ground program it reports (the ground
# counts agree, and PSL's own final objective equals ours evaluated at its point): on the generated stance
# programs its objective stays at 2.5 (step 0.1), 6.7 (step 1), 9.4 (step 10) or 9.9 (step 100) after 20 000
# iterations, against the optimum 0.4686 that Clarabel and our ADMM reach. There the ground counts and our
# solution (against the exact solver) are checked, PSL's point is not, and PSL stops after 20 000 iterations.
PSL_NOT_OPTIMAL = {"stance-4forums", "stance-createdebate"}
# Programs whose MPE assignment is not unique: every rule of lastfm and yelp is a linear hinge and they have no
# prior, so PSL, we and the exact solver may return different optimal points; there the objectives and the
# ground counts are compared. (The opinion-diffusion export is the other such case, below.)
NOT_UNIQUE = {"lastfm", "yelp"}
# Unique, but so flat (strict convexity only from imdb-er's 0.02-weight prior) that PSL's ADMM does not get
# within 1e-3 of the optimum in 200 000 iterations at any step size tried (best: 2.9e-3 off Clarabel's
# optimum, step 1, epsilon 1e-7): our values are checked against the exact solver, PSL's by its objective.
PSL_IMPRECISE = {"imdb-er"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return gen.generate_all(tmp_path_factory.mktemp("psl_oracle"), rng=0)


def _psl_point(ground, preds_psl: dict, x: np.ndarray) -> tuple[np.ndarray, list]:
    """Our variable vector with PSL's value for every target atom; also the atoms PSL did not output."""
    atoms = ground.atoms
    free = atoms[atoms["fixed_value"].isna()]
    xp = x.copy()
    missing = []
    upper = {k.upper(): v for k, v in preds_psl.items()}
    for pred, args, var in zip(free["predicate"], free["arguments"], free["variable"]):
        table = upper.get(pred.upper(), {})
        if tuple(args) in table:
            xp[var] = table[tuple(args)]
        else:
            missing.append((pred, args))
    return xp, missing


def compare_with_psl(
    config_path,
    *,
    unique: bool = True,
    psl_precise: bool = True,
    psl_optimal: bool = True,
    expect_values: dict | None = None,
):
    """Run PSL, ours and an exact solver on one program and compare them.

    Always: equal ground-rule counts per rule (PSL's log against our potentials + constraints), PSL's point
    feasible, and both objectives (ours, PSL's point under our ground program) within ``OBJECTIVE_TOL`` of
    the exact optimum (Clarabel on our ground program). Where the minimizer is unique (``unique``): our values
    within ``VALUE_TOL`` of the exact solver's, and of PSL's where PSL reaches that precision (``psl_precise``).
    Where PSL's ADMM does not reach the optimum (``psl_optimal=False``) only the counts and ours are checked.
    """
    from tractable.hlmrf import solve

    options = dict(runner.TIGHT_OPTIONS)
    if not psl_optimal:
        options["admmreasoner.maxiterations"] = 20_000
    psl = runner.run_psl(config_path, options=options, threads=1, timeout=300)
    model = Model.from_json(config_path)
    g = model.ground()
    preds, res = model.infer(**OURS)
    assert res.converged, res.message

    # The same ground program: per rule, then in total.
    ours_counts = [p + c for _, p, c in g.rule_counts]
    psl_counts = [c for _, c in psl.rule_counts]
    diff = [
        f"rule {i} ({text!r}): ours {o}, PSL {p}"
        for i, ((text, _, _), o, p) in enumerate(zip(g.rule_counts, ours_counts, psl_counts))
        if o != p
    ]
    assert not diff, "ground rule counts differ:\n" + "\n".join(diff)
    assert (g.n_potentials, g.n_constraints) == (psl.n_potentials, psl.n_constraints)

    # PSL outputs every target atom; its point is feasible and optimal for our ground program.
    exact = solve(g.hlmrf, method="clarabel")
    assert exact.converged, exact.message
    x = np.asarray(res.x)
    xp, missing = _psl_point(g, psl.values, x)
    assert not missing, f"PSL wrote no value for {missing[:5]}"
    scale = 1.0 + abs(exact.objective)
    checked = [("ours", res.objective)]
    if psl_optimal:
        assert g.hlmrf.max_violation(xp) <= FEASIBILITY_TOL
        checked.append(("PSL's point", g.hlmrf.objective(xp)))
    for who, obj in checked:
        rel = (obj - exact.objective) / scale
        assert -OBJECTIVE_TOL <= rel <= OBJECTIVE_TOL, f"objective at {who} {rel:+.2e} relative to the optimum"

    if unique:
        free = g.atoms[g.atoms["fixed_value"].isna()]
        var = free["variable"].to_numpy()
        np.testing.assert_allclose(x[var], np.asarray(exact.x)[var], atol=VALUE_TOL)
        if psl_precise and psl_optimal:
            d = np.abs(x[var] - xp[var])
            rows = [
                (float(d[i]), free["predicate"].iloc[i], free["arguments"].iloc[i], x[var[i]], xp[var[i]])
                for i in np.argsort(d)[::-1][:5]
            ]
            assert d.max() <= VALUE_TOL, f"largest differences (|d|, predicate, atom, ours, PSL): {rows}"
    if expect_values:
        for (name, args), want in expect_values.items():
            df = preds[name]
            got = df[(df[list(range(len(args)))].astype(str) == list(args)).all(axis=1)]["value"].item()
            assert got == pytest.approx(want, abs=VALUE_TOL)
    return g, res, psl


# The slowest three, measured on the shared 2-core machine: imdb-er 17 s (PSL's ADMM needs 10^4-10^5 iterations at
# epsilon 1e-7), entity-resolution 5.0 s, simple-acquaintances 4.3 s; every other test here takes 2-4 s.
SLOW = {"imdb-er", "entity-resolution", "simple-acquaintances"}


@pytest.mark.parametrize("program", [pytest.param(p, marks=pytest.mark.slow) if p in SLOW else p for p in gen.PROGRAMS])
def test_psl_examples_program_matches_psl(program, corpus):
    compare_with_psl(
        corpus[program],
        unique=program not in NOT_UNIQUE,
        psl_precise=program not in PSL_IMPRECISE,
        psl_optimal=program not in PSL_NOT_OPTIMAL,
    )


def _write_program(directory: Path, rules: list[str], predicates: dict, files: dict) -> Path:
    """A PSL JSON configuration with data files (name -> rows) in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, rows in files.items():
        (directory / name).write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))
    path = directory / "program.json"
    path.write_text(json.dumps({"rules": rules, "predicates": predicates}, indent=1))
    return path


def test_example_1_of_bach_2012_matches_psl(tmp_path):
    # Bach et al. 2012, Example 1 with p = 2: one voter, two friends preferring L with 0.9 and C with 0.6,
    # preferences summing to at most one; the only MPE is X_L = 0.65, X_C = 0.35.
    path = _write_program(
        tmp_path,
        rules=["1: Friend(A, B) & Pref(B, P) -> Pref(A, P) ^2", "Pref(A, +P) <= 1 ."],
        predicates={
            "Friend/2": {"observations": ["friend_obs.txt"]},
            "Pref/2": {"observations": ["pref_obs.txt"], "targets": ["pref_targets.txt"]},
        },
        files={
            "friend_obs.txt": [("a", "b1"), ("a", "b2")],
            "pref_obs.txt": [("b1", "L", 0.9), ("b2", "C", 0.6)],
            "pref_targets.txt": [("a", "L"), ("a", "C")],
        },
    )
    g, res, psl = compare_with_psl(path, expect_values={("Pref", ("a", "L")): 0.65, ("Pref", ("a", "C")): 0.35})
    assert (g.n_potentials, g.n_constraints) == (2, 1)


@pytest.mark.parametrize("squared", [False, True])
def test_opinion_diffusion_export_matches_psl_and_the_direct_model(squared, tmp_path):
    from tractable.datasets import opinion_diffusion

    direct = opinion_diffusion(60, squared=squared, rng=4)
    net = direct.network
    paths = net.write_psl(tmp_path)
    predicates = {
        "Intrinsic/2": {"observations": [Path(paths["Intrinsic"]).name]},
        "Pref/2": {"targets": [Path(paths["Pref"]).name]},
    }
    for t in net.type_names:
        key = "Rel" + t.capitalize()
        predicates[f"{key}/2"] = {"observations": [Path(paths[key]).name]}
    rules = [r for r in net.psl_rules().splitlines() if r.strip()]
    path = tmp_path / "opinion.json"
    path.write_text(json.dumps({"rules": rules, "predicates": predicates}, indent=1))
    # The MPE is not unique, with p = 1 (Example 1) and with p = 2 alike: a voter's preference for a party that
    # no hinge pushes up may take any value under the at-most-one constraint (squared hinges are flat at zero,
    # and the program has no prior). So the ground program and the objectives are compared.
    g, res, _ = compare_with_psl(path, unique=False)
    # The PSL program grounds to the generator's own model: same potentials, constraints and optimum.
    assert (g.n_potentials, g.n_constraints) == (direct.n_potentials, direct.n_constraints)
    from tractable.hlmrf import solve

    ref = solve(direct, **OURS)
    assert res.objective == pytest.approx(ref.objective, rel=1e-5, abs=1e-7)


def test_collective_classification_with_summation_matches_psl(tmp_path):
    # A labelled graph with 4 categories: half the nodes observed (all categories, one-hot), the others
    # targets tied by a hard functional constraint per node, a weighted (squared) at-most-one summation as
    # well, link propagation per category and a negative prior.
    rng = np.random.default_rng(7)
    n, cats = 50, ["a", "b", "c", "d"]
    label = rng.integers(len(cats), size=n)
    links = {(int(u), int(v)) for u, v in rng.integers(n, size=(140, 2)) if u != v}
    observed = rng.random(n) < 0.5
    path = _write_program(
        tmp_path,
        rules=[
            "1.0: HasCat(A, C) & Link(A, B) & (A != B) >> HasCat(B, C) ^2",
            "0.5: HasCat(A, 'a') & Link(B, A) >> HasCat(B, 'a') ^2",
            "HasCat(A, +C) = 1 .",
            "2: HasCat(A, +C) <= 1 ^2",
            "0.01: !HasCat(A, C) ^2",
        ],
        predicates={
            "Link/2": {"observations": ["link_obs.txt"]},
            "HasCat/2": {"observations": ["hascat_obs.txt"], "targets": ["hascat_targets.txt"]},
        },
        files={
            "link_obs.txt": sorted(links),
            "hascat_obs.txt": [
                (i, c, float(label[i] == k)) for i in range(n) if observed[i] for k, c in enumerate(cats)
            ],
            "hascat_targets.txt": [(i, c) for i in range(n) if not observed[i] for c in cats],
        },
    )
    g, res, psl = compare_with_psl(path)
    assert g.n_constraints == int((~observed).sum())
