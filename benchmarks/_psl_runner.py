"""Run PSL 2.4 itself (the Java runtime shipped in ``pslpython``) on a PSL JSON configuration.

The oracle tests (``tests/psl/test_against_psl.py``) and the PSL benchmark (``benchmarks/psl.py``) call
:func:`run_psl`: it copies the configuration next to the original (data paths in it are relative to its
folder), adds our options (log level DEBUG, so that PSL reports its ground rules; ADMM tolerances; an output
folder), runs ``java -jar psl-runtime.jar`` and reads back

- the inferred values of every open predicate (PSL writes ``<PREDICATE>.txt``: arguments, then the value);
- the number of ground rules per rule (PSL logs ``Grounded N terms from rule ...`` for logical rules and
  ``Grounded N ... from rule ...`` for arithmetic ones) and the total (``Generated N terms``);
- the data loading and grounding times (log timestamps), the optimization time, iterations and objective
  PSL reports, and the wall time of the whole process.

PSL normalizes rule weights by the largest weight before inference (``Normalizing rule weight`` in its
log); this scales the objective but leaves the minimizer unchanged. PSL's ADMM runs in single precision, so
tolerances much below ``1e-6`` only make it run to its iteration cap.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

# PSL options of a tight run: ADMM tolerances 1e-7 (PSL's float32 ADMM still reaches them on these
# programs; at 1e-6 it stops up to 1.4e-3 away from the exact optimum on generated entity-resolution), an
# iteration cap well above what these programs need, and step size 10: at its default step size 1.0,
# PSL 2.4's ADMM stops on some programs (generated trust-prediction and epinions) at points whose objective,
# by PSL's own report, is 12-17% above the optimum (certified by our ADMM's duality gap and by Clarabel);
# with step size 10 it reaches that optimum.
TIGHT_OPTIONS = {
    "admmreasoner.epsilonabs": 1e-7,
    "admmreasoner.epsilonrel": 1e-7,
    "admmreasoner.maxiterations": 200000,
    "admmreasoner.stepsize": 10.0,
    # PSL starts ADMM from random values with a seed drawn per run; a fixed seed makes runs repeatable.
    "random.seed": 4,
}


def user_env() -> dict:
    """This environment as a user's shell has it: without ``PYTHONDONTWRITEBYTECODE`` (a pip install compiles
    the package's bytecode; without it every fresh process recompiles ~70 modules, about 0.13 s)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def psl_jar() -> Path | None:
    """Path of ``psl-runtime.jar`` from the installed ``pslpython``; ``None`` when it or ``java`` is missing."""
    return None if missing_reason() else _jar()


def _jar() -> Path | None:
    try:
        import pslpython
    except ImportError:
        return None
    jar = Path(pslpython.__file__).resolve().parent / "psl-runtime.jar"
    return jar if jar.exists() else None


def missing_reason() -> str | None:
    """Why PSL cannot run here (``None`` when it can): no ``java`` on PATH, or no ``pslpython`` with its jar."""
    if shutil.which("java") is None:
        return "java is not on PATH (PSL 2.4 needs Java 8+)"
    if _jar() is None:
        return "pslpython (with its psl-runtime.jar) is not installed: pip install pslpython==2.4.0"
    return None


def read_config(path) -> dict:
    """Parse a PSL JSON configuration (JSON with whole-line ``#`` / ``//`` comments)."""
    lines = Path(path).read_text().splitlines()
    return json.loads("\n".join(line for line in lines if not line.lstrip().startswith(("#", "//"))))


@dataclass(frozen=True)
class PSLRun:
    """What one PSL run reported.

    Attributes
    ----------
    values : dict
        Open predicate (upper case, as PSL names it) -> dict from argument tuple (strings) to inferred value.
    rule_counts : tuple of (str, int)
        Per rule, in the order of the configuration: PSL's printed rule and its number of ground rules.
    hard : tuple of bool
        Per rule: whether it is a hard constraint (no weight).
    n_terms : int
        Ground rules PSL generated in all (``Generated N terms``).
    loading_time, grounding_time, optimization_time, wall_time : float
        Seconds: reading the data files into PSL's database and grounding (both from PSL's log timestamps:
        ``Data loading start`` to ``Data loading complete``, ``Grounding out model.`` to ``Grounding
        complete.``), ADMM (PSL's own figure), the whole Java process.
    n_iter : int
        ADMM iterations PSL ran.
    objective : float
        PSL's final objective (with its normalized weights).
    log : str
        PSL's full log.
    """

    values: dict
    rule_counts: tuple
    hard: tuple
    n_terms: int
    loading_time: float
    grounding_time: float
    optimization_time: float
    wall_time: float
    n_iter: int
    objective: float
    log: str = field(repr=False)

    @property
    def n_potentials(self) -> int:
        """Ground rules of weighted rules."""
        return sum(c for (_, c), h in zip(self.rule_counts, self.hard) if not h)

    @property
    def n_constraints(self) -> int:
        """Ground rules of hard rules."""
        return sum(c for (_, c), h in zip(self.rule_counts, self.hard) if h)


class PSLError(RuntimeError):
    """PSL failed or timed out; the message ends with the tail of its log."""


_GROUNDED = re.compile(r"DEBUG \S+  - Grounded (\d+) \w+ from rule (.*)$")
_FINAL = re.compile(
    r"Final Objective: ([-\d.Ee+]+|NaN|Infinity), Violated Constraints: (\d+), Total Optimization Time: (\d+), "
    r"Total Number of Iterations: (\d+)"
)
_STAMP = re.compile(r"^(\d+)\s+\[")


def _is_hard(rule: str) -> bool:
    """A rule without a ``weight:`` prefix (PSL writes hard rules with a trailing ``.``)."""
    return re.match(r"^\s*[\d.]+\s*:", rule) is None


def _stamp(log: str, marker: str) -> float | None:
    for line in log.splitlines():
        if marker in line:
            m = _STAMP.match(line)
            if m:
                return int(m.group(1)) / 1e3
    return None


def run_psl(
    config_path,
    *,
    options: dict | None = None,
    timeout: float = 600.0,
    memory: str = "4g",
    threads: int | None = None,
) -> PSLRun:
    """Run PSL 2.4's inference on a JSON configuration and read back what it reports.

    Parameters
    ----------
    config_path : str or Path
        The PSL JSON configuration; its data paths are relative to its folder. Splits: PSL infers on
        ``infer``.
    options : dict, optional
        PSL options added to (and overriding) the configuration's, e.g. :data:`TIGHT_OPTIONS`.
    timeout : float
        Seconds before the Java process is killed (:class:`PSLError`).
    memory : str
        Java heap (``-Xmx``).
    threads : int, optional
        ``parallel.numthreads`` (PSL's default: all cores).

    Returns
    -------
    PSLRun
    """
    reason = missing_reason()
    if reason:
        raise PSLError(reason)
    config_path = Path(config_path).resolve()
    config = read_config(config_path)
    opts = dict(config.get("options") or {})
    opts.update(options or {})
    opts["runtime.log.level"] = "DEBUG"
    opts["runtime.inference"] = True
    opts["runtime.learn"] = False
    if threads is not None:
        opts["parallel.numthreads"] = int(threads)
    rules = list(config["rules"])
    with tempfile.TemporaryDirectory(prefix="psl_out_") as out:
        opts["runtime.inference.output.results.dir"] = out
        config = {**config, "options": opts}
        run_config = config_path.parent / f".{config_path.stem}.psl-oracle.json"
        run_config.write_text(json.dumps(config, indent=1))
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                ["java", f"-Xmx{memory}", "-jar", str(_jar()), run_config.name],
                cwd=run_config.parent,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            raise PSLError(f"PSL timed out after {timeout} s on {config_path}") from exc
        finally:
            run_config.unlink(missing_ok=True)
        wall = time.perf_counter() - t0
        log = proc.stdout + proc.stderr
        final = _FINAL.search(log)
        if proc.returncode != 0 or final is None:
            raise PSLError(f"PSL failed (exit {proc.returncode}) on {config_path}:\n{log[-3000:]}")
        values = {}
        for path in sorted(Path(out).glob("*.txt")):
            table = {}
            for line in path.read_text().splitlines():
                if line.strip():
                    *args, value = line.split("\t")
                    table[tuple(args)] = float(value)
            values[path.stem] = table
    counts = [(m.group(2), int(m.group(1))) for m in map(_GROUNDED.search, log.splitlines()) if m]
    if len(counts) != len(rules):
        raise PSLError(f"PSL logged ground counts for {len(counts)} of {len(rules)} rules on {config_path}")
    total = re.search(r"Generated (\d+) terms", log)
    start, end = _stamp(log, "Grounding out model."), _stamp(log, "Grounding complete.")
    load_start, load_end = _stamp(log, "Data loading start"), _stamp(log, "Data loading complete")
    return PSLRun(
        values=values,
        rule_counts=tuple(counts),
        hard=tuple(_is_hard(r) for r in rules),
        n_terms=int(total.group(1)) if total else -1,
        loading_time=(load_end - load_start) if load_start is not None and load_end is not None else float("nan"),
        grounding_time=(end - start) if start is not None and end is not None else float("nan"),
        optimization_time=int(final.group(3)) / 1e3,
        wall_time=wall,
        n_iter=int(final.group(4)),
        objective=float(final.group(1)),
        log=log,
    )
