"""First impression: what a new user's first calls pay for numba's compilation, per area.

Every measurement runs in a fresh Python process whose ``NUMBA_CACHE_DIR`` is a new, empty temporary folder, so
nothing is cached (as on a fresh install), and then again in a fresh process with the same, now filled, folder
(what every later run pays: loading the cached machine code).

1. Per area of ``tractable.demo.DEMOS``: import time of the area's modules; the first ``warm()`` (compilation +
   the tiny calls) and a second ``warm()`` in the same process (warm calls); then ``warm()`` in a new process
   with the filled cache. ``compile_s`` = first - second warm, ``cache_load_s`` = filled-cache first - warm.
   Target: ``compile_s <= 2`` per area. A numba compile-event listener in the child counts the kernels
   compiled, numba's own compile seconds and the slowest kernels (exclusive of kernels they compile inside).
2. ``collect_rows(warm=True)`` in a fresh process with an empty cache, then ``collect_rows(warm=False)`` again in
   the same process: each demo row's first time vs its warm time. Target: every row within 3x.
3. ``python -m tractable.cli demo`` end to end, with an empty cache and again with the filled one.
4. ``--calls``: the first call of each public function of :data:`CALLS` alone, in a fresh process with an empty
   cache: what a user who calls only that function pays (``compile_s`` = first - second call, CPU seconds too).
   Target: ``compile_s <= 2``.

    python benchmarks/first_call.py                      # everything (several minutes)
    python benchmarks/first_call.py --quick              # 'exact inference' and 'cardinality' only, part 1 only
    python benchmarks/first_call.py --areas exact psl    # these areas (name or module suffix), part 1 only
    python benchmarks/first_call.py --areas exact --demo # ... and parts 2-3 too
    python benchmarks/first_call.py --calls              # part 4 only (every public call of CALLS)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MARK = "FIRST_CALL_JSON "
QUICK_AREAS = ["exact inference", "cardinality"]
COMPILE_TARGET_S = 2.0
ROW_TARGET_RATIO = 3.0
CHILD_TIMEOUT_S = 1800


def _lines(*lines: str) -> str:
    return "\n".join(lines) + "\n"


_FG = _lines(
    "from tractable.datasets.factor_graphs import grid_factor_graph",
    "fg = grid_factor_graph(3, 3, n_states=2, coupling=0.5, rng=0)",
)
_CARD_FG = _FG + _lines(
    "from tractable.factorgraph import CardinalityFactor",
    "fg.add_factor(CardinalityFactor([0, 1, 2], [0.0, 0.1, 0.2, -0.1]))",
)
_PHI = _lines(
    "import numpy as np",
    "from tractable import clique",
    "phi = np.random.default_rng(0).uniform(0, 1, size=(6, 3))",
)
_THETA = _lines(
    "import numpy as np",
    "from tractable import cardinality",
    "rng = np.random.default_rng(0)",
    "theta, f = rng.normal(size=300), rng.normal(size=301)",
)
_TREE = _lines("import numpy as np", "unary, edges, pairwise = np.zeros((3, 2)), [[0, 1], [1, 2]], np.zeros((2, 2, 2))")
_CRF = _lines(
    "import numpy as np",
    "from tractable.crf import TreeCRF",
    "gen = np.random.default_rng(0)",
    "X = gen.normal(size=(20, 3))",
    "Y = (X + 0.3 * gen.normal(size=(20, 3)) > 0).astype(np.int64)",
)
_RECURSIVE = "cardinality.RecursiveCardinalityModel(6, [[0, 1, 2, 3, 4, 5], [0, 1, 2]], [f[:7], [0.0, 0.1, 0.2, 0.3]], "
_LOOPY = "from tractable.bp import loopy"
_TREE_CARD = "cardinality.TreeCardinalityModel([[0, 1], [1, 2], [2, 3]], np.zeros((3, 2, 2)), theta[:4], f[:5])"
#: (area, the call, setup code, call code): one public function each, as a user's first call of it
CALLS = [
    ("exact inference", "exact.infer(task='marginals')", _FG + "from tractable.exact import infer", "infer(fg)"),
    ("exact inference", "exact.infer(task='map')", _FG + "from tractable.exact import infer", "infer(fg, task='map')"),
    ("clique MAP", "clique.alpha_pass", _PHI, "clique.alpha_pass(phi, clique.Potts(0.3))"),
    ("clique MAP", "clique.generalized_alpha_pass", _PHI, "clique.generalized_alpha_pass(phi, clique.Potts(0.3))"),
    ("clique MAP", "clique.alpha_expansion", _PHI, "clique.alpha_expansion(phi, clique.Potts(0.3))"),
    ("clique MAP", "clique.icm", _PHI, "clique.icm(phi, clique.Potts(0.3))"),
    ("clique MAP", "clique.clique_map", _PHI, "clique.clique_map(phi, clique.Potts(0.3))"),
    ("clique MAP", "clique.majority_alpha_pass", _PHI, "clique.majority_alpha_pass(phi, np.eye(3))"),
    ("cardinality", "cardinality.marginals", _THETA, "cardinality.marginals(theta, f)"),
    ("cardinality", "cardinality.sample", _THETA, "cardinality.sample(theta, f, size=2, rng=0)"),
    ("cardinality", "cardinality.map_assignment", _THETA, "cardinality.map_assignment(theta, f)"),
    ("cardinality", "RecursiveCardinalityModel.marginals", _THETA, _RECURSIVE + "theta[:6]).marginals()"),
    ("cardinality", "TreeCardinalityModel.marginals", _THETA, _TREE_CARD + ".marginals()"),
    (
        "HL-MRF",
        "hlmrf.solve",
        _lines("from tractable.datasets import opinion_diffusion", "from tractable.hlmrf import solve"),
        "solve(opinion_diffusion(60, rng=0))",
    ),
    (
        "PSL",
        "psl.Model.infer",
        _lines("from tractable.demo.psl import collective_classification"),
        "collective_classification(40, rng=0)[0].infer()",
    ),
    ("belief propagation", "bp.loopy(task='marginals')", _CARD_FG + _LOOPY, "loopy(fg)"),
    ("belief propagation", "bp.loopy(task='map')", _CARD_FG + _LOOPY, "loopy(fg, task='map')"),
    (
        "belief propagation",
        "bp.tree_marginals",
        _TREE + "from tractable.bp import tree_marginals",
        "tree_marginals(unary, edges, pairwise)",
    ),
    ("sampling", "sampling.gibbs", _CARD_FG + "from tractable.sampling import gibbs", "gibbs(fg, n_sweeps=5, rng=0)"),
    (
        "sampling",
        "sampling.adaptive_mmp",
        _CARD_FG + "from tractable.sampling import adaptive_mmp",
        "adaptive_mmp(fg, max_sweeps=5, rng=0)",
    ),
    ("tree CRFs", "crf.TreeCRF.fit", _CRF, "TreeCRF(C=1.0).fit(X, Y)"),
]


# ---------------------------------------------------------------------------------------------------------------
# child processes (no import of numpy, numba or tractable before the timers start)


class _CompileLog:
    """numba:compile events: kernels compiled, top-level compile seconds, exclusive seconds per kernel."""

    def __init__(self) -> None:
        from numba.core import event

        log = self
        self.stack: list[list] = []
        self.total = 0.0
        self.count = 0
        self.per_kernel: dict[str, float] = {}

        class Listener(event.Listener):
            def on_start(self, ev):
                fn = ev.data["dispatcher"].py_func
                name = f"{fn.__module__.removeprefix('tractable.')}.{fn.__qualname__}"
                log.stack.append([name, time.perf_counter(), 0.0])

            def on_end(self, ev):
                name, t0, inner = log.stack.pop()
                incl = time.perf_counter() - t0
                log.per_kernel[name] = log.per_kernel.get(name, 0.0) + incl - inner
                log.count += 1
                if log.stack:
                    log.stack[-1][2] += incl
                else:
                    log.total += incl

        event.register("numba:compile", Listener())

    def take(self) -> dict:
        out = {
            "numba_compile_s": self.total,
            "kernels_compiled": self.count,
            "slowest": sorted(self.per_kernel.items(), key=lambda kv: -kv[1])[:8],
        }
        self.total, self.count, self.per_kernel = 0.0, 0, {}
        return out


def _emit(obj) -> None:
    sys.stdout.flush()
    print(MARK + json.dumps(obj), flush=True)


def child_area(module: str) -> None:
    """Import the area's modules, then time warm() twice; print the numbers as one JSON line."""
    import importlib

    t0 = time.perf_counter()
    mod = importlib.import_module(module)
    # warm() imports the area's library package lazily; import it here so that warm() times calls only
    suffix = module.rsplit(".", 1)[1]
    for name in (f"tractable.{suffix}", "tractable.datasets"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    import_s = time.perf_counter() - t0
    log = _CompileLog()
    times = []
    for _ in range(2):
        w0, c0 = time.perf_counter(), time.process_time()
        mod.warm()
        times.append((time.perf_counter() - w0, time.process_time() - c0, log.take()))
    (first, first_cpu, first_log), (second, second_cpu, second_log) = times
    _emit(
        {
            "import_s": import_s,
            "first_s": first,
            "first_cpu_s": first_cpu,
            "second_s": second,
            "second_cpu_s": second_cpu,
            "first_log": first_log,
            "second_log": second_log,
        }
    )


def child_call(i: int) -> None:
    """Run the setup of ``CALLS[i]``, then time its call twice (first: compilation included)."""
    import warnings

    warnings.simplefilter("ignore")
    _, _, setup, call = CALLS[i]
    ns: dict = {}
    exec(setup, ns)  # noqa: S102 - the benchmark's own code
    log = _CompileLog()
    times = []
    for _ in range(2):
        w0, c0 = time.perf_counter(), time.process_time()
        exec(call, ns)  # noqa: S102
        times.append((time.perf_counter() - w0, time.process_time() - c0, log.take()))
    (first, first_cpu, first_log), (second, second_cpu, _) = times
    _emit(
        {"first_s": first, "first_cpu_s": first_cpu, "second_s": second, "second_cpu_s": second_cpu, "log": first_log}
    )


def measure_call(i: int) -> dict:
    area, label, _, _ = CALLS[i]
    cache = tempfile.mkdtemp(prefix="tractable-first-call-one-")
    try:
        out = _child_json(["--child-call", str(i)], cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    compile_s = out["first_s"] - out["second_s"]
    return dict(
        section="public calls",
        area=area,
        call=label,
        first_s=out["first_s"],
        warm_s=out["second_s"],
        compile_s=compile_s,
        compile_cpu_s=out["first_cpu_s"] - out["second_cpu_s"],
        target_compile_le_2s=compile_s <= COMPILE_TARGET_S,
        kernels_compiled=out["log"]["kernels_compiled"],
        slowest_kernels_s=_slowest(out["log"]),
    )


def child_baseline() -> None:
    """numba's fixed cost per process: import, then one trivial cached kernel (first call, second call)."""
    t0 = time.perf_counter()
    import numba

    import_s = time.perf_counter() - t0
    log = _CompileLog()
    f = numba.njit(cache=True)(_trivial)
    t1, c1 = time.perf_counter(), time.process_time()
    f(1.0)
    first, first_cpu = time.perf_counter() - t1, time.process_time() - c1
    t2 = time.perf_counter()
    f(1.0)
    second = time.perf_counter() - t2
    _emit(
        {
            "import_s": import_s,
            "first_s": first,
            "first_cpu_s": first_cpu,
            "second_s": second,
            "first_log": log.take(),
        }
    )


def _trivial(x):
    return x + 1.0


def child_demo(repeats: int) -> None:
    """collect_rows(warm=True) once, then collect_rows(warm=False) `repeats` times; print rows as JSON.

    Each area's ``warm()`` is wrapped so that the kernels compiled by its ``demo_rows()`` (after the warm-up, so
    missed by it) are counted apart.
    """
    import importlib

    t0 = time.perf_counter()
    from tractable.demo import DEMOS, collect_rows

    import_s = time.perf_counter() - t0
    log = _CompileLog()
    warm_log: dict[str, dict] = {}
    rows_log: dict[str, dict] = {}
    for area, name in DEMOS:
        module = importlib.import_module(name)

        def wrapped(_orig=module.warm, _area=area):
            log.take()
            _orig()
            warm_log[_area] = log.take()

        module.warm = wrapped
    warm: dict[str, float] = {}
    rows_s: dict[str, float] = {}

    def progress(area, w, r):
        warm[area] = w
        rows_s[area] = r
        rows_log[area] = log.take()

    first = collect_rows(progress=progress, warm=True)
    again = []
    again_rows_s = []
    for _ in range(repeats):
        per_area: dict[str, float] = {}
        again.append(collect_rows(progress=lambda a, w, r, d=per_area: d.__setitem__(a, r), warm=False))
        again_rows_s.append(per_area)
    _emit(
        {
            "import_s": import_s,
            "warm_s": warm,
            "rows_first_s": rows_s,
            "rows_again_s": again_rows_s,
            "warm_log": warm_log,
            "rows_log": rows_log,
            "first": [_plain(r) for r in first],
            "again": [[_plain(r) for r in rows] for rows in again],
        }
    )


def _plain(row: dict) -> dict:
    return {k: (float(v) if k == "time" else str(v)) for k, v in row.items()}


# ---------------------------------------------------------------------------------------------------------------
# parent


#: PYTHONPATH of the child processes: a snapshot of the package (see ``--no-snapshot``), or unchanged
CHILD_PYTHONPATH: str | None = None


def _run(
    args: list[str], cache_dir: str, *, python_args=None, check: bool = True
) -> tuple[float, subprocess.CompletedProcess]:
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = cache_dir
    if CHILD_PYTHONPATH:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (CHILD_PYTHONPATH, env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, *(python_args or [os.path.abspath(__file__)]), *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    wall = time.perf_counter() - t0
    if check and proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise RuntimeError(f"{' '.join(cmd)} failed with exit status {proc.returncode}")
    return wall, proc


def _child_json(args: list[str], cache_dir: str) -> dict:
    _, proc = _run(args, cache_dir)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    raise RuntimeError(f"no result from child {args}: {proc.stdout[-2000:]} {proc.stderr[-2000:]}")


def _cache_size(path: str) -> tuple[int, float]:
    n, size = 0, 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            n += f.endswith(".nbc")
            size += os.path.getsize(os.path.join(dirpath, f))
    return n, size / 2**20


def _short(name: str) -> str:
    return ".".join(name.replace(".<locals>", "").split(".")[-2:])


def _slowest(log: dict, k: int = 3) -> str:
    return "; ".join(f"{_short(name)} {s:.2f}" for name, s in log["slowest"][:k])


def measure_area(area: str, module: str, keep_log: dict) -> dict:
    cache = tempfile.mkdtemp(prefix="tractable-first-call-")
    try:
        fresh = _child_json(["--child-area", module], cache)
        n_files, mib = _cache_size(cache)
        cached = _child_json(["--child-area", module], cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    keep_log[area] = {"fresh": fresh, "cached": cached}
    compile_s = fresh["first_s"] - fresh["second_s"]
    return dict(
        section="areas",
        area=area,
        import_s=fresh["import_s"],
        first_warm_s=fresh["first_s"],
        warm_s=fresh["second_s"],
        compile_s=compile_s,
        compile_cpu_s=fresh["first_cpu_s"] - fresh["second_cpu_s"],
        target_compile_le_2s=compile_s <= COMPILE_TARGET_S,
        numba_compile_s=fresh["first_log"]["numba_compile_s"],
        kernels_compiled=fresh["first_log"]["kernels_compiled"],
        cache_files=n_files,
        cache_mib=mib,
        cached_import_s=cached["import_s"],
        cached_first_warm_s=cached["first_s"],
        cached_warm_s=cached["second_s"],
        cache_load_s=cached["first_s"] - cached["second_s"],
        kernels_recompiled=cached["first_log"]["kernels_compiled"],
        slowest_kernels_s=_slowest(fresh["first_log"]),
    )


def measure_baseline() -> dict:
    cache = tempfile.mkdtemp(prefix="tractable-first-call-base-")
    try:
        fresh = _child_json(["--child-baseline"], cache)
        cached = _child_json(["--child-baseline"], cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return dict(
        section="numba baseline (one trivial kernel)",
        area="-",
        import_s=fresh["import_s"],
        first_warm_s=fresh["first_s"],
        warm_s=fresh["second_s"],
        compile_s=fresh["first_s"] - fresh["second_s"],
        compile_cpu_s=fresh["first_cpu_s"],
        numba_compile_s=fresh["first_log"]["numba_compile_s"],
        kernels_compiled=fresh["first_log"]["kernels_compiled"],
        cached_import_s=cached["import_s"],
        cached_first_warm_s=cached["first_s"],
        cached_warm_s=cached["second_s"],
        cache_load_s=cached["first_s"] - cached["second_s"],
        kernels_recompiled=cached["first_log"]["kernels_compiled"],
    )


def measure_demo(rec, repeats: int) -> None:
    cache = tempfile.mkdtemp(prefix="tractable-first-call-demo-")
    try:
        out = _child_json(["--child-demo", str(repeats)], cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    for area, w in out["warm_s"].items():
        again = min(a[area] for a in out["rows_again_s"])
        rec.add(
            section="demo warm-up",
            area=area,
            first_warm_s=w,
            rows_first_s=out["rows_first_s"][area],
            rows_warm_s=again,
            ratio=out["rows_first_s"][area] / again,
            rows_kernels_compiled=out["rows_log"][area]["kernels_compiled"],
            rows_numba_compile_s=out["rows_log"][area]["numba_compile_s"],
            rows_slowest_kernels_s=_slowest(out["rows_log"][area]),
        )
    for i, row in enumerate(out["first"]):
        warm = min(rows[i]["time"] for rows in out["again"])
        ratio = row["time"] / warm if warm > 0 else float("nan")
        rec.add(
            section="demo rows",
            area=row["area"],
            problem=row["problem"],
            method=row["method"],
            first_s=row["time"],
            warm_s=warm,
            ratio=ratio,
            target_within_3x=bool(ratio <= ROW_TARGET_RATIO),
        )


def measure_cli(rec) -> None:
    cache = tempfile.mkdtemp(prefix="tractable-first-call-cli-")
    try:
        for case in ("empty cache", "filled cache"):
            wall, proc = _run(["demo"], cache, python_args=["-m", "tractable.cli"], check=False)
            reported_warm = reported_total = float("nan")
            for line in proc.stdout.splitlines():
                if line.startswith("kernels compiled or loaded from the cache first,"):
                    reported_warm = float(line.split(",", 1)[1].split(" s", 1)[0])
                if " problems solved in " in line:
                    reported_total = float(line.rsplit(" in ", 1)[1].split(" s", 1)[0])
            rec.add(
                section="cli demo",
                case=case,
                wall_s=wall,
                demo_reported_warmup_s=reported_warm,
                demo_reported_total_s=reported_total,
                rc=proc.returncode,
                **({"error": proc.stderr.strip().splitlines()[-1][:200]} if proc.returncode else {}),
            )
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"areas {QUICK_AREAS} only, part 1 only")
    parser.add_argument("--areas", nargs="+", help="these areas only (DEMOS names or module suffixes), part 1 only")
    parser.add_argument("--demo", action="store_true", help="run parts 2-3 (demo rows, cli demo) even with --areas")
    parser.add_argument("--demo-repeats", type=int, default=2, help="warm collect_rows runs (best is the warm time)")
    parser.add_argument(
        "--no-snapshot",
        action="store_true",
        help="run the children on the live source tree (default: on a copy made at the start, so that edits "
        "during the run neither mix code versions nor invalidate the cache between a fresh and a cached run)",
    )
    parser.add_argument("--calls", action="store_true", help="part 4 only: each public call of CALLS alone")
    parser.add_argument("--child-area", help=argparse.SUPPRESS)
    parser.add_argument("--child-call", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-demo", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-baseline", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_baseline:
        return child_baseline()
    if args.child_area:
        return child_area(args.child_area)
    if args.child_call is not None:
        return child_call(args.child_call)
    if args.child_demo is not None:
        return child_demo(args.child_demo)

    sys.path.insert(0, HERE)
    from _harness import Recorder
    from tractable.demo import DEMOS

    by_name = {a: (a, m) for a, m in DEMOS} | {m.rsplit(".", 1)[1]: (a, m) for a, m in DEMOS}
    if args.areas:
        unknown = [a for a in args.areas if a not in by_name]
        if unknown:
            parser.error(f"--areas: unknown {unknown}; choose from {sorted(by_name)}")
        wanted = {by_name[a][0] for a in args.areas}
    elif args.quick:
        wanted = set(QUICK_AREAS)
    else:
        wanted = {a for a, _ in DEMOS}
    areas = [(a, m) for a, m in DEMOS if a in wanted]
    run_demo_parts = args.demo or not (args.quick or args.areas)
    snapshot = None if args.no_snapshot else _snapshot()

    rec = Recorder(
        "first_call",
        title="First calls: numba compilation per area on a fresh install, and cache loading afterwards",
        notes="Each area in a fresh process with an empty `NUMBA_CACHE_DIR`: `import_s` (the demo module and "
        "the area's package), `first_warm_s` = first `warm()` of `tractable.demo.<area>` (compilation + tiny "
        "calls), `warm_s` = second `warm()` in the same process; `compile_s` = first - second (`compile_cpu_s` "
        "the same in process CPU time); then a fresh process with the same, filled cache: `cache_load_s` = its "
        "first `warm()` - its second. `numba_compile_s`, `kernels_compiled` (signatures) and `slowest_kernels_s` "
        "(exclusive compile seconds) come from numba's compile events; `kernels_recompiled` = compiled again "
        "with the filled cache (not cacheable, or their source changed meanwhile). Target: `compile_s` <= 2 per "
        "area. `demo rows`: `collect_rows(warm=True)` in a fresh process with an empty cache, each row's time vs "
        "the best of later `collect_rows(warm=False)` runs in the same process; target: every row within 3x. "
        "`numba baseline`: the same for one trivial cached kernel, numba's fixed cost per process (LLVM and "
        "target set-up) that every area's first `warm()` includes. `cli demo`: `python -m tractable.cli demo` "
        "wall time, empty then filled cache. Shared 2-core machine "
        "(other jobs running): times noisy, wall times inflated by contention. The children run on a byte-compiled "
        "copy of the package taken at the start (other edits of the tree during the run do not reach them). "
        "`public calls`: one public function's first call alone, in a fresh process with an empty cache (its "
        "setup untimed): `compile_s` = first - second call; target `compile_s` <= 2.",
    )
    if args.calls or not (args.quick or args.areas):
        for i, (area, label, _, _) in enumerate(CALLS):
            print(f"- {label}", flush=True)
            try:
                rec.add(**measure_call(i))
            except (RuntimeError, subprocess.SubprocessError) as exc:
                rec.add(section="public calls", area=area, call=label, error=str(exc)[:200])
        if args.calls:
            if snapshot is not None:
                shutil.rmtree(snapshot, ignore_errors=True)
            rec.save(update_keys=("section", "area", "call"))
            return
    logs: dict = {}
    print("- numba baseline", flush=True)
    baseline = measure_baseline()
    for area, module in areas:
        print(f"- {area}", flush=True)
        try:
            rec.add(**measure_area(area, module, logs))
        except (RuntimeError, subprocess.SubprocessError) as exc:
            rec.add(section="areas", area=area, error=str(exc)[:200])
    rec.add(**baseline)
    if run_demo_parts:
        print("- demo rows", flush=True)
        try:
            measure_demo(rec, args.demo_repeats)
        except (RuntimeError, subprocess.SubprocessError) as exc:
            rec.add(section="demo rows", error=str(exc)[:200])
        print("- cli demo", flush=True)
        measure_cli(rec)
    missed = [r["area"] for r in rec.rows if r.get("section") == "areas" and r.get("target_compile_le_2s") is False]
    for area in missed:
        print(f"{area}: slowest kernels (exclusive compile s):", flush=True)
        for name, s in logs[area]["fresh"]["first_log"]["slowest"]:
            print(f"    {s:6.2f}  {name}", flush=True)
    if snapshot is not None:
        shutil.rmtree(snapshot, ignore_errors=True)
    rec.save()


def _snapshot() -> str:
    """Copy the installed ``tractable`` package (no caches) to a temp folder, byte-compile it, and point the
    children's PYTHONPATH at it."""
    import compileall

    import tractable

    global CHILD_PYTHONPATH
    src = os.path.dirname(os.path.abspath(tractable.__file__))
    dst = tempfile.mkdtemp(prefix="tractable-first-call-src-")
    shutil.copytree(src, os.path.join(dst, "tractable"), ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(os.path.join(dst, "tractable"), quiet=1)  # as pip does on install
    CHILD_PYTHONPATH = dst
    return dst


if __name__ == "__main__":
    main()
