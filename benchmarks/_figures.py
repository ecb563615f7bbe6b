"""Figures of the benchmarks, drawn like the papers' from the recorded results.

Each function reads the latest run of a benchmark from ``results/<area>.json`` (``$TRACTABLE_BENCH_OUT/results``
when that is set, as the harness writes them) and saves one PNG under ``figures/`` next to it:

- :func:`clique_map` -> ``figures/clique_map.png``: Gupta et al. (2007) Fig. 1 -- score and time ratios of
  alpha-pass against graph-cut alpha-expansion (GCO) over the paper's lambda range, against ICM per clique
  family, and the time of each as the clique grows;
- :func:`cardinality` -> ``figures/cardinality.png``: Tarlow et al. (2012) Fig. 3 -- time of exact marginals vs
  the number of variables D, ours against the O(D^2) chain, fast-poibin and scipy;
- :func:`hlmrf` -> ``figures/hlmrf.png``: Bach et al. (2012) Fig. 1 -- time of MPE inference vs model size, our
  ADMM against PSL's ADMM and the exact HiGHS (LP) / Clarabel (QP) optimum.

matplotlib (the ``plot`` extra) is imported on use; without it each function prints a note and returns None.
Run ``python benchmarks/_figures.py [clique_map cardinality hlmrf]`` to redraw from the recorded results.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_OUT = os.environ.get("TRACTABLE_BENCH_OUT")
RESULTS_DIR = Path(_OUT) / "results" if _OUT else HERE / "results"
FIG_DIR = (Path(_OUT) if _OUT else HERE) / "figures"

#: one colour per method across every figure
OURS, GRAPH_CUT, ICM, BASELINE, REFERENCE, AUTO = "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#7f7f7f", "#9467bd"


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("  matplotlib is not installed (the `plot` extra): figures skipped.", flush=True)
        return None
    return plt


def latest_rows(area: str) -> list[dict] | None:
    """The rows of the latest recorded run of ``area`` (``results/<area>.json``), or None if there is none."""
    path = RESULTS_DIR / f"{area}.json"
    if not path.exists():
        print(f"  no results in {path}: figure skipped.", flush=True)
        return None
    runs = json.loads(path.read_text())
    return runs[-1]["rows"] if runs else None


def _number(text) -> float:
    """``"2^16"``, ``"10^5"`` or ``"0.85"`` as a number."""
    m = re.fullmatch(r"\s*(\d+)\^(\d+)\s*", str(text))
    return float(int(m.group(1)) ** int(m.group(2))) if m else float(text)


def _save(fig, name: str) -> Path:
    FIG_DIR.mkdir(parents=True, exist_ok=True)
    path = FIG_DIR / name
    fig.savefig(path, dpi=130, bbox_inches="tight")
    print(f"  figure: {path}", flush=True)
    return path


def _finite(x) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


# ----------------------------------------------------------------------------- Gupta et al. 2007, Fig. 1
def clique_map() -> Path | None:
    """Score and time ratios of alpha-pass vs graph cut and ICM (``clique_graphcut``, ``clique_icm``,
    ``clique_scaling`` results)."""
    plt = _pyplot()
    gc, icm, scaling = latest_rows("clique_graphcut"), latest_rows("clique_icm"), latest_rows("clique_scaling")
    if plt is None or gc is None:
        return None
    panels = 2 + (icm is not None) + (scaling is not None)
    fig, axes = plt.subplots(1, panels, figsize=(4.3 * panels, 3.8))
    per_lam = [r for r in gc if r["lam"] != "all"]
    lam = [float(r["lam"]) for r in per_lam]

    ax = axes[0]
    ax.axhline(1.0, color="black", lw=0.8)
    ax.plot(lam, [r["ratio_median"] for r in per_lam], "o-", color=OURS, label="alpha-pass, median")
    ax.plot(lam, [r["ratio_min"] for r in per_lam], "v--", color=OURS, alpha=0.6, label="alpha-pass, worst")
    if "auto_ratio_min" in per_lam[0]:
        ax.plot(lam, [r["auto_ratio_min"] for r in per_lam], "s-", color=AUTO, label="auto, worst")
    ax2 = ax.twinx()
    ax2.bar(lam, [r["ap_ge_gc"] for r in per_lam], width=0.025, color=OURS, alpha=0.15)
    ax2.set_ylim(0, 1.05)
    ax2.set_ylabel("fraction of cliques alpha-pass >= graph cut (bars)", fontsize=8)
    ax.set_zorder(ax2.get_zorder() + 1)
    ax.patch.set_visible(False)
    ax.set_xlabel("lambda (POTTS, n=100, m=24)")
    ax.set_ylabel("score / graph-cut score")
    ax.set_title("(a) score vs graph cut (GCO)")
    ax.legend(fontsize=7, loc="lower right")

    ax = axes[1]
    ax.semilogy(lam, [r["speedup_median"] for r in per_lam], "o-", color=OURS, label="alpha-pass, median")
    ax.semilogy(lam, [r["speedup_min"] for r in per_lam], "v--", color=OURS, alpha=0.6, label="alpha-pass, slowest")
    if "auto_ms" in per_lam[0]:
        ax.semilogy(lam, [r["gc_ms"] / r["auto_ms"] for r in per_lam], "s-", color=AUTO, label="auto (mean)")
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xlabel("lambda (POTTS, n=100, m=24)")
    ax.set_ylabel("graph-cut time / our time")
    ax.set_title("(b) speed-up over graph cut")
    ax.legend(fontsize=7)

    k = 2
    if icm is not None:
        ax = axes[k]
        k += 1
        kinds = [r["kind"] for r in icm]
        y = list(range(len(kinds)))
        ax.axvline(1.0, color="black", lw=0.8)
        ax.barh([i + 0.2 for i in y], [r["ratio_median"] - 1 for r in icm], left=1, height=0.4, color=OURS,
                label="alpha-pass, median")  # fmt: skip
        ax.plot([r["ratio_min"] for r in icm], [i + 0.2 for i in y], "v", color=OURS, label="alpha-pass, worst")
        auto = [(i, r["auto_ratio_min"]) for i, r in enumerate(icm) if "auto_ratio_min" in r]
        ax.plot([a for _, a in auto], [i - 0.2 for i, _ in auto], "s", color=AUTO, label="auto, worst")
        ax.set_yticks(y, kinds, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("score / ICM score (lambda 0.7-1.1)")
        ax.set_title("(c) score vs ICM per family")
        ax.legend(fontsize=7, loc="upper right")

    if scaling is not None:
        ax = axes[k]
        n = [r["n"] for r in scaling]
        ax.loglog(n, [r["ap_s"] for r in scaling], "o-", color=OURS, label="alpha-pass")
        ax.loglog(n, [r["icm_s"] for r in scaling], "^-", color=ICM, label="ICM")
        gcn = [(r["n"], r["gc_s"]) for r in scaling if _finite(r.get("gc_s"))]
        ax.loglog([a for a, _ in gcn], [b for _, b in gcn], "s-", color=GRAPH_CUT, label="graph cut (GCO)")
        ax.set_xlabel("clique size n (POTTS, lambda=0.9, m=24)")
        ax.set_ylabel("time per clique (s)")
        ax.set_title("(d) time vs clique size")
        ax.legend(fontsize=7)
    fig.suptitle("Clique MAP (after Gupta et al. 2007, Fig. 1)", fontsize=10)
    fig.tight_layout()
    path = _save(fig, "clique_map.png")
    plt.close(fig)
    return path


# ----------------------------------------------------------------------------- Tarlow et al. 2012, Fig. 3
def cardinality() -> Path | None:
    """Time vs D of exact marginals: ours (two count potentials) vs the chain, fast-poibin and scipy."""
    plt = _pyplot()
    rows = latest_rows("cardinality")
    if plt is None or rows is None:
        return None
    sweep = [r for r in rows if "task" not in r and "ours_s" in r and "^" in str(r["D"]) and r["D"].startswith("2^")]
    fig, ax = plt.subplots(figsize=(6.2, 4.4))
    series = [
        ("iid N(0,1)", "ours_s", OURS, "o-", "ours, f ~ N(0,1) (marginals + log Z)"),
        ("0 (Poisson-binomial)", "ours_s", OURS, "s--", "ours, f = 0"),
        ("iid N(0,1)", "chain_s", ICM, "^-", "chain, O(D^2)"),
        ("0 (Poisson-binomial)", "fast_poibin_s", BASELINE, "d-", "fast-poibin (count distribution, f = 0)"),
        ("0 (Poisson-binomial)", "scipy_s", REFERENCE, "x-", "scipy (count distribution, f = 0)"),
    ]
    for f, key, colour, style, label in series:
        pts = sorted((_number(r["D"]), r[key]) for r in sweep if r["f"] == f and _finite(r.get(key)))
        if pts:
            ax.loglog([d for d, _ in pts], [t for _, t in pts], style, color=colour, label=label, ms=4)
    d = [_number(r["D"]) for r in sweep]
    if d:  # guides: slopes of D log^2 D and D^2 through the first point of ours
        first = min((_number(r["D"]), r["ours_s"]) for r in sweep)
        grid = sorted(set(d))
        ax.loglog(grid, [first[1] * (g * math.log2(g) ** 2) / (first[0] * math.log2(first[0]) ** 2) for g in grid],
                  ":", color=OURS, lw=0.8, label="slope of D log^2 D")  # fmt: skip
    ax.set_xlabel("number of variables D")
    ax.set_ylabel("time (s)")
    ax.set_title("Cardinality potentials: exact marginals vs D\n(after Tarlow et al. 2012, Fig. 3)", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = _save(fig, "cardinality.png")
    plt.close(fig)
    return path


# ----------------------------------------------------------------------------- Bach et al. 2012, Fig. 1
def hlmrf() -> Path | None:
    """Time vs number of terms of MPE inference, p = 1 (LP) and p = 2 (QP): ADMM vs PSL vs HiGHS / Clarabel."""
    plt = _pyplot()
    rows = latest_rows("hlmrf")
    if plt is None or rows is None:
        return None
    ours_key = next((k for k in ("ours_default_s", "ours_s") if any(k in r for r in rows)), None)
    sizes = [r for r in rows if _finite(r.get("terms")) and _finite(r.get(ours_key))] if ours_key else []
    powers = sorted({r["p"] for r in sizes})
    if not powers:
        print("figure hlmrf: no rows with sizes and times to draw")
        return None
    fig, axes = plt.subplots(1, len(powers), figsize=(5.2 * len(powers), 4.0), squeeze=False)
    for ax, p in zip(axes[0], powers):
        of_p = [r for r in sizes if r["p"] == p]
        families = sorted({r.get("family", "") for r in of_p})
        for family in families:  # sparse and dense networks: one line each, solid and dashed
            pts = sorted((r for r in of_p if r.get("family", "") == family), key=lambda r: r["terms"])
            style, tag = ("--", f" ({family})") if family == "dense" else ("-", f" ({family})" if family else "")
            terms = [r["terms"] for r in pts]
            ax.plot(terms, [r[ours_key] for r in pts], "o" + style, color=OURS, label="ours (ADMM, default stop)" + tag)
            psl = [(r["terms"], r["psl_s"]) for r in pts if _finite(r.get("psl_s"))]
            ax.plot([t for t, _ in psl], [s for _, s in psl], "s" + style, color=BASELINE, label="PSL 2.4 ADMM" + tag)
        ref_name = {"highs": "HiGHS (LP, exact)", "clarabel": "Clarabel (QP, exact)"}.get(of_p[0].get("ref"), "exact")
        ok = [(r["terms"], r["ref_s"]) for r in of_p if r.get("ref_status") == "optimal"]
        stopped = [(r["terms"], r["ref_s"]) for r in of_p if _finite(r.get("ref_s")) and r["ref_status"] != "optimal"]
        ax.plot([t for t, _ in ok], [s for _, s in ok], "^", color=REFERENCE, label=ref_name)
        if stopped:
            ax.plot([t for t, _ in stopped], [s for _, s in stopped], "^", mfc="none", color=REFERENCE,
                    label=f"{ref_name.split()[0]}, stopped at its time limit")  # fmt: skip
        ax.set_yscale("log")
        ax.set_xlabel("terms (potentials + constraints)")
        ax.set_ylabel("time (s)")
        ax.set_title(f"p = {p} ({'linear' if p == 1 else 'squared'} hinges)")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("HL-MRF MPE inference on opinion diffusion (after Bach et al. 2012, Fig. 1)", fontsize=10)
    fig.tight_layout()
    path = _save(fig, "hlmrf.png")
    plt.close(fig)
    return path


FIGURES = {"clique_map": clique_map, "cardinality": cardinality, "hlmrf": hlmrf}


def main(argv=None) -> None:
    names = (sys.argv[1:] if argv is None else argv) or list(FIGURES)
    for name in names:
        FIGURES[name]()


if __name__ == "__main__":
    main()
