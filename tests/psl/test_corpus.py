"""Every program of ``linqs/psl-examples``, unchanged, end to end on generated data.

The configurations in ``tests/psl/programs/`` are PSL 2.4's own (rules, comment lines, leading-zero
weights, splits as written); ``_generate.py`` writes data of the same layout. Each program must parse,
ground into a non-empty hinge-loss MRF, solve to convergence with its hard rules satisfied and its
observed atoms kept, and, through ``tractable psl``, write one PSL output file per open predicate with
one line per target atom.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from _helpers import psl_generator
from tractable.cli import main as cli_main
from tractable.psl import Model

HERE = Path(__file__).resolve().parent
# psl-examples set PSL-only options (runtime.db.intids, weight learning); from_json reports them by a warning.
pytestmark = pytest.mark.filterwarnings("ignore:PSL options without meaning here")


gen = psl_generator()

# Solver settings of these tests: residual tolerances well below the 1e-4 checks below.
SOLVE = {"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iter": 200_000}
# Hard rules hold to ADMM's residual tolerance; 1e-4 leaves two orders of magnitude for the consensus
# error of the local copies at eps 1e-7.
FEASIBILITY_TOL = 1e-4


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """All programs with generated data (seed 0, scale 1), written once for the module."""
    root = tmp_path_factory.mktemp("psl_corpus")
    return gen.generate_all(root, rng=0)


def _rows(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text().splitlines() if line.strip()]


def _partition_rows(config_path: Path, key: str, part: str, split: str = "infer") -> list[list[str]]:
    """Rows of one partition of a predicate (files or inline rows) as lists of strings."""
    spec = gen.read_config(config_path)["predicates"][key].get(part)
    if spec is None:
        return []
    files = gen.partition_files(spec, split)
    if files is None:
        inline = spec[split] if isinstance(spec, dict) else spec
        return [[str(v) for v in row] for row in inline]
    return [row for rel in files for row in _rows(config_path.parent / rel)]


def _open_predicates(config_path: Path) -> dict[str, int]:
    preds = gen.read_config(config_path)["predicates"]
    return {k.split("/")[0]: int(k.split("/")[1]) for k, v in preds.items() if "targets" in v}


# ---------------------------------------------------------------------------------------- the stored corpus


def test_every_program_of_psl_examples_is_stored():
    stored = sorted(p.name for p in gen.PROGRAMS_DIR.iterdir() if p.is_dir())
    assert stored == sorted(gen.PROGRAMS)
    readme = (gen.PROGRAMS_DIR / "README.md").read_text()
    assert "linqs/psl-examples" in readme
    for program in gen.PROGRAMS:
        config = gen.read_config(gen.config_path(program))
        assert config["rules"] and config["predicates"], program
        assert all(isinstance(r, str) for r in config["rules"]), program


def test_stored_configurations_keep_psl_syntax():
    # Comment lines, leading-zero weights and splits are kept as PSL writes them (plain JSON rejects them).
    import json

    kgi = gen.config_path("knowledge-graph-identification").read_text()
    assert '"0025: VALCAT(B, C)' in kgi
    with pytest.raises(json.JSONDecodeError):
        json.loads(gen.config_path("cora").read_text())  # '#' comment lines
    assert "// Negative prior." in gen.config_path("friendship").read_text()
    cora = gen.read_config(gen.config_path("cora"))
    assert set(cora["predicates"]["HasCat/2"]["targets"]) == {"learn", "infer"}


@pytest.mark.parametrize("program", gen.PROGRAMS)
def test_generator_writes_every_listed_file(program, tmp_path):
    path = gen.generate(program, tmp_path, rng=1)
    config = gen.read_config(path)
    for key, spec in config["predicates"].items():
        arity = int(key.split("/")[1])
        for split in ("learn", "infer"):
            for part in gen.PARTITIONS:
                if part not in spec:
                    continue
                files = gen.partition_files(spec[part], split)
                for rel in files or []:
                    assert (path.parent / rel).is_file(), (key, part, rel)
                    widths = {len(r) for r in _rows(path.parent / rel)}
                    # targets: the arguments; observations and truth: arguments then a value (PSL's layout)
                    assert widths <= ({arity} if part == "targets" else {arity, arity + 1}), (key, part, widths)
        if "targets" in spec:
            targets = {tuple(r[:arity]) for r in _partition_rows(path, key, "targets")}
            observed = {tuple(r[:arity]) for r in _partition_rows(path, key, "observations")}
            assert targets, key
            assert not targets & observed, f"{key}: an atom both observed and a target"
            truth = {tuple(r[:arity]) for r in _partition_rows(path, key, "truth")}
            assert not truth or truth == targets, key


def test_generator_is_seeded_and_scales(tmp_path):
    a = gen.generate("friendship", tmp_path / "a", rng=3)
    b = gen.generate("friendship", tmp_path / "b", rng=3)
    c = gen.generate("friendship", tmp_path / "c", rng=3, scale=2)
    rel = "../data/friendship/0/eval/friends_targets.txt"
    assert (a.parent / rel).read_text() == (b.parent / rel).read_text()
    assert len(_rows(c.parent / rel)) > 3 * len(_rows(a.parent / rel))
    with pytest.raises(ValueError, match="`program`"):
        gen.generate("no-such-program", tmp_path)
    with pytest.raises(ValueError, match="`scale`"):
        gen.generate("cora", tmp_path, scale=0)


# ---------------------------------------------------------------------------------------- end to end


@pytest.mark.parametrize("program", gen.PROGRAMS)
def test_program_parses_grounds_and_infers(program, corpus):
    path = corpus[program]
    model = Model.from_json(path)
    assert len(model.rules) == len(gen.read_config(path)["rules"])
    g = model.ground()
    assert g.n_potentials > 0
    assert sum(p for _, p, _ in g.rule_counts) == g.n_potentials
    assert sum(c for _, _, c in g.rule_counts) == g.n_constraints
    preds, res = model.infer(**SOLVE)
    assert res.converged, res.message
    x = np.asarray(res.x)
    assert np.all((x >= -1e-9) & (x <= 1 + 1e-9))
    assert g.hlmrf.max_violation(x) <= FEASIBILITY_TOL
    fixed_vars, fixed_vals = g.hlmrf.fixed
    np.testing.assert_allclose(x[fixed_vars], fixed_vals, atol=0)
    opened = _open_predicates(path)
    assert {k.lower() for k in preds} == {k.lower() for k in opened}
    for name, df in preds.items():
        key = next(k for k in gen.read_config(path)["predicates"] if k.split("/")[0].lower() == name.lower())
        arity = int(key.split("/")[1])
        targets = {tuple(r[:arity]) for r in _partition_rows(path, key, "targets")}
        assert list(df.columns) == [*range(arity), "value"]
        got = {tuple(str(v) for v in row) for row in df[list(range(arity))].itertuples(index=False)}
        assert got == targets
        assert df["value"].between(0, 1).all()
    if any("truth" in v for v in gen.read_config(path)["predicates"].values()):
        scores = model.evaluate(preds)
        assert scores and all(np.isfinite(v) for metrics in scores.values() for v in metrics.values())


def test_learn_split_grounds_its_own_data(corpus):
    infer = Model.from_json(corpus["cora"]).ground()
    learn = Model.from_json(corpus["cora"], split="learn").ground()
    assert learn.n_potentials > 0

    def targets(g):
        return set(g.atoms.loc[g.atoms["fixed_value"].isna(), "arguments"])

    # The generator draws each split's labels apart: the learn split's targets are its own.
    assert targets(learn) and targets(learn) != targets(infer)


@pytest.mark.parametrize("program", ["cora", "smokers", "simple-acquaintances", "knowledge-graph-identification"])
def test_cli_writes_psl_output_files(program, corpus, tmp_path, capsys):
    path = corpus[program]
    out = tmp_path / "out"
    assert cli_main(["psl", str(path), "--output", str(out)]) == 0
    capsys.readouterr()
    preds, _ = Model.from_json(path).infer()
    written = {f.stem.lower(): f for f in out.glob("*.txt")}
    assert set(written) == {k.lower() for k in _open_predicates(path)}
    for name, df in preds.items():
        rows = _rows(written[name.lower()])
        arity = df.shape[1] - 1
        assert all(len(r) == arity + 1 for r in rows)
        got = {tuple(r[:arity]): float(r[arity]) for r in rows}
        want = {tuple(str(v) for v in row[:-1]): row[-1] for row in df.itertuples(index=False)}
        assert got.keys() == want.keys()
        # The CLI solves the same ground program with the same options: the same values up to the printed
        # precision of the file (PSL prints floats; 1e-6 is far above float64 rounding of repr).
        np.testing.assert_allclose([got[k] for k in want], [want[k] for k in want], atol=1e-6)
