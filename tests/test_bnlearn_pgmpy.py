"""Real Bayesian networks from the bnlearn repository (shipped in pgmpy's wheel), solved through
the `.uai` file format and the CLI, compared marginal by marginal with pgmpy's variable elimination.

Every discrete network pgmpy ships (``pgmpy/utils/example_models/*.bif.gz``) is here; ``munin1``'s
whole clique tree would need a table of 2.7e8 entries, so it also checks the solution by relevant
groups. On networks of more than ``ALL_QUERIES_UP_TO`` variables pgmpy is asked for a fixed random
subset of the marginals, which keeps the test to seconds per network while the CLI still solves (and
writes) all of them."""

import os
import subprocess
import sys

import numpy as np
import pytest

pgmpy = pytest.importorskip("pgmpy")

from pgmpy.inference import VariableElimination  # noqa: E402

from tractable.io import from_pgmpy, read_bif, read_mar, write_evidence, write_uai  # noqa: E402

MODELS_DIR = os.path.join(os.path.dirname(pgmpy.__file__), "utils", "example_models")
NETWORKS = [
    "asia",
    "cancer",
    "earthquake",
    "sachs",
    "survey",
    "child",
    "insurance",
    "alarm",
    "barley",
    "hailfinder",
    "hepar2",
    "mildew",
    "water",
    "win95pts",
    "pathfinder",
    "andes",
    "diabetes",
    "pigs",
    "link",
    "munin1",
    "munin2",
    "munin3",
    "munin4",
    "munin",
]
# pgmpy answers one query per variable; above this many variables it answers N_QUERIES of them
ALL_QUERIES_UP_TO = 80
N_QUERIES = 30


def _pgmpy_model(name):
    import gzip

    from pgmpy.readwrite import BIFReader

    with gzip.open(os.path.join(MODELS_DIR, f"{name}.bif.gz"), "rt") as fh:
        return BIFReader(string=fh.read()).get_model()


@pytest.mark.slow
@pytest.mark.parametrize("name", NETWORKS)
def test_cli_marginals_match_pgmpy(tmp_path, name):
    model = _pgmpy_model(name)
    # The files round CPT entries, so rows sum to 1 only within 1e-7; pgmpy prunes barren nodes, which
    # is exact only for normalized CPTs. Normalize so both sides solve the same distribution.
    for cpd in model.get_cpds():
        cpd.normalize()
    fg = from_pgmpy(model)
    rng = np.random.default_rng(sum(map(ord, name)))  # fixed seed per network
    names = list(fg.names)
    # random evidence drawn from a forward sample so it has non-zero probability
    sample = model.simulate(1, seed=int(rng.integers(2**31)), show_progress=False).iloc[0]
    observed = rng.choice(len(names), size=min(3, len(names) - 1), replace=False)
    evidence = {int(v): fg.state_names[v].index(sample[names[v]]) for v in observed}
    write_uai(tmp_path / "net.uai", fg, network_type="BAYES")
    write_evidence(tmp_path / "net.evid", evidence)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "tractable.cli",
            "solve",
            str(tmp_path / "net.uai"),
            "--evid",
            str(tmp_path / "net.evid"),
            "--task",
            "MAR",
            "-o",
            str(tmp_path / "net.MAR"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    ours = read_mar(tmp_path / "net.MAR")
    ve = VariableElimination(model)
    pg_evidence = {names[v]: fg.state_names[v][s] for v, s in evidence.items()}
    query = [v for v in names if v not in pg_evidence]
    if len(names) > ALL_QUERIES_UP_TO:
        query = [query[i] for i in sorted(rng.choice(len(query), size=N_QUERIES, replace=False))]
    for v in query:
        factor = ve.query([v], evidence=pg_evidence, show_progress=False)
        ref = np.array([factor.get_value(**{v: s}) for s in fg.state_names[names.index(v)]])
        # both are exact; the tables pass through a text file (repr floats) and different
        # summation orders, so 1e-11 leaves room for rounding only
        np.testing.assert_allclose(ours[names.index(v)], ref, atol=1e-11, err_msg=f"{name}:{v}")
    for v, s in evidence.items():
        assert ours[v][s] == 1.0


def test_read_bif_keeps_names_and_states():
    fg = read_bif(os.path.join(MODELS_DIR, "asia.bif.gz"))
    assert fg.n_variables == 8 and "either" in fg.names
    assert fg.state_names[fg.variable_index("asia")] == ("yes", "no")
