"""PSL weight learning: learn on the learn split, infer and evaluate on the infer split, side by side with PSL 2.4.

**Programs.** Every psl-examples program with a ``learn`` split (``tests/psl/programs``), on data generated in
its layout (``tests/psl/_generate.py``; each split draws its own data) at the scale of :data:`SCALES` (times
``--scale``): 25 000 to 90 000 ground rules per split; and psl-examples' Cora and
CiteSeer programs on the real citation graphs (``/work/shared/data/{cora,citeseer}.npz``), learning on one random
half of the papers observed and evaluating on another random half (the same graph, a different node split).

**Both tools run as their users run them**, each in a fresh process on the same files: PSL's jar with
``runtime.learn`` and ``runtime.inference`` on (learn on the learn split, infer on the infer split), the learner
named by ``runtime.learn.method``, everything else at the program's options and PSL's defaults (JVM start
included in its wall time); ours ``python -m tractable.cli psl PROGRAM.json --learn METHOD`` (numba's cache filled
by one earlier run, as after ``tractable warmup``). ``ours_learn_s`` is the learning time ours reports in
process. Both tools' predictions on the infer split are scored by the same evaluator (ours, the program's
``evaluations``: the representative metric of the first evaluated predicate: categorical accuracy, F1 of the
DiscreteEvaluator, AUROC, or MSE of the ContinuousEvaluator, where lower is better); ``metric_delta`` is ours
minus PSL's in the direction where positive is better. ``max_weight_diff``: the largest difference of the learned
weights (PSL prints them normalized; both are compared after dividing by their sum).

A search learner draws random candidates, so its pick (and the metric on the infer split) depends on the
seed: ours runs with ``--seed 0`` (the row's time and weights) and again with seeds 1 to ``--search-seeds`` - 1
(``ours_metric_seeds``: the range, ``ours_metric_median``, ``metric_delta_median`` against PSL's one run,
which draws from Java's generator with ``random.seed`` 4).

PSL's default learner (StructuredPerceptron) runs on every program, a search learner (``--search``, default
RandomGridSearch with PSL's 150 locations) on ``--search-programs`` and the real graphs.

**Memory row.** The Python heap's peak (tracemalloc) during 10 and during 100 structured-perceptron steps on one
ground learn split: the same peak means no per-step growth (the program is grounded once).

Targets (issue: PSL weight learning): for PSL's default learner and at least one search learner, a metric no worse
than PSL's (within 1 point of accuracy / 0.01 AUC) in at most 0.1x PSL's wall time for learn + infer.

    TRACTABLE_BENCH_OUT=/tmp/bench python benchmarks/psl_learn.py [--quick] [--scale S] [--methods M ...]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "psl"))
from _generate import PROGRAMS, config_path, generate, read_config  # noqa: E402

from _harness import Recorder  # noqa: E402
from _psl_runner import _jar, missing_reason, user_env  # noqa: E402

warnings.filterwarnings("ignore", message="PSL options without meaning here")
DATA = Path("/work/shared/data")
REAL = {"cora": 7, "citeseer": 6}
#: scale of each program's generated data: 25 000 to 90 000 ground rules per split (the programs grow as
#: different powers of the number of entities, from ~1.8 for entity-resolution to ~3.4 for drug-drug-interaction)
SCALES = {
    "citeseer": 30,
    "cora": 30,
    "drug-drug-interaction": 4,
    "entity-resolution": 15,
    "epinions": 5,
    "jester": 6,
    "knowledge-graph-identification": 10,
    "lastfm": 5,
    "stance-4forums": 9,
    "stance-createdebate": 9,
    "trust-prediction": 5,
    "yelp": 5,
}
#: representative metric of each evaluator (PSL's getRepMetric) and whether higher is better
REP_METRIC = {
    "CategoricalEvaluator": ("categorical_accuracy", True),
    "DiscreteEvaluator": ("f1", True),
    "AUCEvaluator": ("auroc", True),
    "RankingEvaluator": ("auroc", True),
    "ContinuousEvaluator": ("mse", False),
}
NOTES = (
    "Learn on the learn split, infer and evaluate on the infer split. Generated data in each psl-examples "
    "program's layout at the given scale, plus Cora and CiteSeer's real graphs (learn on one random half of the "
    "papers observed, evaluate on another). Both tools in fresh processes as users run them: PSL 2.4's jar with "
    "runtime.learn on (JVM start included), ours `python -m tractable.cli psl --learn` (numba cache filled). "
    "Metric: the representative metric of the program's first evaluator, computed by the same evaluator for "
    "both; metric_delta = ours - PSL (positive is better). Weights compared after normalizing to sum 1. "
    "Target: metric no worse than PSL's (1 point / 0.01 AUC), wall <= 0.1x PSL's. Shared 2-core machine."
)


def learn_programs() -> list[str]:
    """psl-examples programs whose configuration has a ``learn`` split."""
    out = []
    for name in PROGRAMS:
        cfg = read_config(config_path(name))
        if any(isinstance(v, dict) and "learn" in v for spec in cfg["predicates"].values() for v in spec.values()):
            out.append(name)
    return out


def _write(path: Path, columns) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\t".join(map(str, row)) + "\n" for row in zip(*columns)))


def write_real_program(directory, name: str, seed: int = 0) -> Path | None:
    """psl-examples' ``name`` program (cora or citeseer) on the real graph: the learn split observes one random
    half of the labelled papers, the infer split another; the others are targets (with truth when labelled)."""
    path = DATA / f"{name}.npz"
    if not path.exists():
        return None
    d = np.load(path)
    labels, edges = d["labels"].astype(np.int64), d["edges"].astype(np.int64)
    k = REAL[name]
    root = Path(directory) / name
    (root / "cli").mkdir(parents=True, exist_ok=True)
    (root / "cli" / f"{name}.json").write_text(config_path(name).read_text())
    rng = np.random.default_rng(seed)
    cats = np.arange(1, k + 1)
    src = np.concatenate([edges[:, 0], edges[:, 1]])
    dst = np.concatenate([edges[:, 1], edges[:, 0]])
    for split in ("learn", "eval"):
        observed = (rng.random(labels.size) < 0.5) & (labels >= 0)
        obs, tgt = np.flatnonzero(observed), np.flatnonzero(~observed)
        known = tgt[labels[tgt] >= 0]
        base = root / "data" / name / "0" / split
        _write(base / "link_obs.txt", [src, dst, np.ones(src.size)])
        for fname, ids, valued in (
            ("hasCat_obs", obs, True),
            ("hasCat_targets", tgt, False),
            ("hasCat_truth", known, True),
        ):
            cols = [np.repeat(ids, k), np.tile(cats, ids.size)]
            if valued:
                cols.append((labels[np.repeat(ids, k)] + 1 == np.tile(cats, ids.size)).astype(float))
            _write(base / f"{fname}.txt", cols)
    return root / "cli" / f"{name}.json"


def _read_predictions(folder: Path) -> dict:
    """``NAME.txt`` files (arguments, then the value, tab-separated) -> upper-case name -> {args: value}."""
    out = {}
    for path in sorted(folder.glob("*.txt")):
        table = {}
        for line in path.read_text().splitlines():
            if line.strip():
                *args, value = line.split("\t")
                table[tuple(a.strip('"') for a in args)] = float(value)
        out[path.stem.upper()] = table
    return out


def _score(config: Path, values: dict) -> tuple[str, str, float, bool]:
    """(predicate, metric, value, higher_is_better) of the first evaluated predicate, by our evaluator."""
    import pandas as pd

    from tractable.psl import Model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Model.from_json(config, split="infer")
    try:
        preds = {}
        for key, spec in model.predicates.items():
            name = key.split("/")[0]
            table = values.get(name.upper())
            if spec["closed"] or table is None:
                continue
            cols = {i: [a[i] for a in table] for i in range(spec["arity"])}
            cols["value"] = list(table.values())
            preds[name] = pd.DataFrame(cols)
        metrics = model.evaluate(preds)
        for key in model.predicates:
            name = key.split("/")[0]
            if name not in metrics:
                continue
            specs = model.evaluators.get(key) or [{"evaluator": "DiscreteEvaluator"}]
            first = specs[0] if isinstance(specs[0], str) else specs[0].get("evaluator", "")
            metric, higher = REP_METRIC[first.rsplit(".", 1)[-1]]
            return name, metric, float(metrics[name][metric]), higher
    finally:
        model.close()
    return "", "", float("nan"), True


def run_psl_learn(config: Path, method: str, out: Path, timeout: float) -> dict:
    """PSL's jar: learn with ``method`` on the learn split, infer on the infer split; weights, predictions, wall."""
    out.mkdir(parents=True, exist_ok=True)
    cfg = read_config(config)
    opts = dict(cfg.get("options") or {})
    opts.update(
        {
            "runtime.learn": True,
            "runtime.inference": True,
            "runtime.learn.method": method,
            "runtime.learn.output.model.path": str(out / "learned.psl"),
            "runtime.inference.output.results.dir": str(out / "predictions"),
            "random.seed": 4,
        }
    )
    run = config.parent / f".{config.stem}.learn.json"
    run.write_text(json.dumps({**cfg, "options": opts}, indent=1))
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            ["java", "-Xmx8g", "-jar", str(_jar()), run.name],
            cwd=run.parent,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"psl_error": f"timed out after {timeout:.0f} s"}
    finally:
        run.unlink(missing_ok=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not (out / "learned.psl").exists():
        lines = (proc.stdout + proc.stderr).strip().splitlines() or ["no output"]
        # the exception's own line, not the last frame of its stack trace
        said = [ln for ln in lines if "Exception" in ln and not ln.lstrip().startswith("at ")]
        return {"psl_error": f"exit {proc.returncode}: {(said or lines)[-1].strip()[:160]}"}
    weights = [
        float(line.split(":")[0])
        for line in (out / "learned.psl").read_text().splitlines()
        if re.match(r"^[\d.eE+-]+:", line)
    ]
    return {"wall": wall, "weights": np.array(weights), "values": _read_predictions(out / "predictions")}


def run_ours_learn(config: Path, method: str, out: Path, timeout: float, seed: int | None = None) -> dict:
    """``python -m tractable.cli psl --learn METHOD [--seed S]`` in a fresh process; weights, predictions, wall."""
    cmd = [sys.executable, "-m", "tractable.cli", "psl", str(config), "--learn", method, "--output", str(out)]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=user_env())
    except subprocess.TimeoutExpired:
        return {"ours_error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1) or not (out / "learned.json").exists():
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["no output"]
        return {"ours_error": f"exit {proc.returncode}: {tail[0][:160]}"}
    learned = read_config(out / "learned.json")
    weights = [float(r.split(":")[0]) for r in learned["rules"] if re.match(r"^\s*[\d.eE+-]+\s*:", r)]
    m = re.search(r"^learning\s+\S+: (\S+) after (\d+) steps in ([\d.]+) s", proc.stdout, flags=re.M)
    g = re.search(r"^grounding\s+(\d+) potentials, (\d+) constraints", proc.stdout, flags=re.M)
    return {
        "wall": wall,
        "weights": np.array(weights),
        "values": _read_predictions(out),
        "learn_s": float(m.group(3)) if m else float("nan"),
        "steps": int(m.group(2)) if m else -1,
        "status": m.group(1) if m else "?",
        "ground_rules": int(g.group(1)) + int(g.group(2)) if g else -1,
    }


def _other_seeds(config: Path, method: str, workdir: Path, timeout: float, n_seeds: int, tag: str) -> list[float]:
    """A search learner's metric on the infer split with ``--seed 1 .. n_seeds - 1`` (its draws differ by seed)."""
    from tractable.psl.learning import LEARNERS, _resolve

    if n_seeds <= 1 or LEARNERS[_resolve(method)].family != "search":
        return []
    out = []
    for seed in range(1, n_seeds):
        res = run_ours_learn(config, method, workdir / f"{tag}-seed{seed}", timeout, seed=seed)
        if "ours_error" not in res:
            out.append(_score(config, res["values"])[2])
    return out


def row(
    rec, name: str, config: Path, method: str, use_psl: bool, timeout: float, workdir: Path, n_seeds: int = 1
) -> None:
    tag = f"{config.parent.parent.parent.name}-{config.stem}-{method}"
    # numba's cache filled by one earlier run, as `tractable warmup` (or any earlier run) does
    run_ours_learn(config, method, workdir / f"{tag}-warm", timeout)
    ours = run_ours_learn(config, method, workdir / f"{tag}-ours", timeout)
    r = {"program": name, "method": method}
    if "ours_error" in ours:
        rec.add(**r, **ours)
        return
    pred, metric, ours_metric, higher = _score(config, ours["values"])
    r.update(
        ground_rules=ours["ground_rules"],
        steps=ours["steps"],
        status=ours["status"],
        ours_learn_s=ours["learn_s"],
        ours_wall_s=ours["wall"],
        metric=f"{pred}.{metric}",
        ours_metric=ours_metric,
    )
    seeds = [ours_metric, *_other_seeds(config, method, workdir, timeout, n_seeds, tag)]
    if len(seeds) > 1:  # a search learner: its pick among random candidates varies with the seed
        r.update(
            ours_metric_seeds=f"{min(seeds):.4g}..{max(seeds):.4g} ({len(seeds)} seeds)",
            ours_metric_median=float(np.median(seeds)),
        )
    if use_psl:
        psl = run_psl_learn(config, method, workdir / f"{tag}-psl", timeout)
        if "psl_error" in psl:
            r.update(psl)
        else:
            _, _, psl_metric, _ = _score(config, psl["values"])
            sign = 1.0 if higher else -1.0
            a, b = ours["weights"], psl["weights"]
            diff = (
                float(np.max(np.abs(a / a.sum() - b / b.sum())))
                if a.size == b.size and a.sum() > 0 and b.sum() > 0
                else float("nan")
            )
            r.update(
                psl_wall_s=psl["wall"],
                wall_ratio=ours["wall"] / psl["wall"],
                psl_metric=psl_metric,
                metric_delta=sign * (ours_metric - psl_metric),
                max_weight_diff=diff,
            )
            if len(seeds) > 1:
                r["metric_delta_median"] = sign * (float(np.median(seeds)) - psl_metric)
    rec.add(**r)


def memory_rows(rec, workdir: Path, quick: bool) -> None:
    """Learning memory: the Python heap's peak (tracemalloc) during 10 and during 100 steps of the structured
    perceptron on one ground learn split (``run_full_iterations``: every step runs); equal peaks mean no
    per-step growth. The program is grounded once, before either run."""
    import tracemalloc

    from tractable.psl import Model

    scale = 1.0 if quick else SCALES["citeseer"]
    config = generate("citeseer", workdir / "memory", scale=scale, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Model.from_json(config, split="learn")
        g = model.ground()
        w0 = model.weights
        model.learn(method="StructuredPerceptron", initial_weights=w0, max_iter=2)  # imports and first calls
        peaks = {}
        for steps in (10, 100):
            tracemalloc.start()
            res = model.learn(
                method="StructuredPerceptron",
                initial_weights=w0,
                max_iter=steps,
                run_full_iterations=True,
            )
            peaks[steps] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    rec.add(
        program=f"citeseer (generated, scale {scale:g}) memory",
        method="StructuredPerceptron",
        ground_rules=g.n_potentials + g.n_constraints,
        steps=res.n_iter,
        peak_mib_10_steps=peaks[10] / 2**20,
        peak_mib_100_steps=peaks[100] / 2**20,
        peak_growth_ratio=peaks[100] / peaks[10],
    )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="two small generated programs, scale 1, no real graphs")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every program's scale (SCALES; default 1)")
    ap.add_argument("--methods", nargs="+", default=["StructuredPerceptron"], help="learners run on every program")
    ap.add_argument(
        "--search", default="RandomGridSearch", help="a search learner run on --search-programs and Cora/CiteSeer"
    )
    ap.add_argument(
        "--search-programs",
        nargs="*",
        default=["citeseer", "cora", "trust-prediction"],
        help="generated programs the search learner runs on (PSL's search takes minutes per program)",
    )
    ap.add_argument(
        "--programs",
        nargs="*",
        help="generated programs to run (default: every one with a learn split; no names: none)",
    )
    ap.add_argument("--no-real", action="store_true", help="skip the real Cora and CiteSeer graphs")
    ap.add_argument("--real", nargs="+", choices=sorted(REAL), default=sorted(REAL), help="real graphs to run")
    ap.add_argument(
        "--search-seeds",
        type=int,
        default=5,
        help="a search learner also runs with --seed 1 .. N-1 (ours_metric_seeds, ours_metric_median); 1: seed 0 only",
    )
    ap.add_argument("--no-psl", action="store_true", help="skip PSL")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per run of either tool")
    ap.add_argument("--no-save", action="store_true", help="print the rows without recording them")
    ap.add_argument(
        "--update",
        action="store_true",
        help="put the rows into the latest recorded run, replacing its rows of the same program and learner",
    )
    args = ap.parse_args(argv)
    reason = None if args.no_psl else missing_reason()
    use_psl = not args.no_psl and reason is None
    notes = NOTES + (f" PSL not run: {reason}." if reason else "")
    if reason:
        print(f"PSL not run: {reason}")
    if args.programs is not None:
        programs = args.programs
    else:
        programs = ["citeseer", "trust-prediction"] if args.quick else learn_programs()
    if args.quick:
        args.search_programs = ["citeseer"]
        args.search_seeds = min(args.search_seeds, 2)
    rec = Recorder("psl_learn", title="PSL weight learning: learn + infer + evaluate vs PSL 2.4", notes=notes)
    with tempfile.TemporaryDirectory(prefix="psl_learn_") as tmp:
        workdir = Path(tmp)
        for name in programs:
            scale = 1.0 if args.quick else SCALES.get(name, 1.0) * args.scale
            config = generate(name, workdir / "generated", scale=scale, rng=0)
            methods = args.methods + ([args.search] if args.search and name in args.search_programs else [])
            for method in methods:
                row(
                    rec,
                    f"{name} (generated, scale {scale:g})",
                    config,
                    method,
                    use_psl,
                    args.timeout,
                    workdir,
                    args.search_seeds,
                )
        memory_rows(rec, workdir, args.quick)
        if not (args.quick or args.no_real):
            for name in args.real:
                config = write_real_program(workdir / "real", name)
                if config is None:
                    print(f"{name} skipped: {DATA / name}.npz is missing")
                    continue
                for method in args.methods + ([args.search] if args.search else []):
                    row(rec, f"{name} (real graph)", config, method, use_psl, args.timeout, workdir, args.search_seeds)
    if not args.no_save:
        print(f"saved to {rec.save(update_keys=('program', 'method') if args.update else None)}")


if __name__ == "__main__":
    main()
