"""Cardinality potentials: convolution tree vs chain, fast-poibin and scipy, side by side.

For D = 2^10 ... 2^20, random ``theta ~ N(0, 1)`` and two count potentials:

* ``f ~ N(0, 1)`` independently per count (a rough potential: the posterior count spreads over
  the whole width of the count distribution, which may need more than one tilted pass), and
* ``f = 0`` (the Poisson-binomial case, where fast-poibin and ``scipy.stats.poisson_binom``
  apply; they compute the count distribution only, not the marginals).

Ours computes full marginals + count marginals + log Z. Accuracy is measured against the O(D^2)
log-space chain algorithm where it fits (D <= 2^14); at D = 10^5 (f = 0) against our own
direct-convolution tree (exact relative to every entry, O(D^2)): absolute error, relative error
on the bulk (entries >= 1e-10 of the maximum), and the number of tail entries that are negative
or off by more than a factor 2 (ours sets unresolved tails to exactly 0, which counts as off).
Also: 10^4 exact joint samples at D = 2^16.

At D = 10^5 (f = 0) two rows: ``marginals()`` as a user calls it, which recognises that f is affine
in the count (the model factorizes: the marginals are sigmoid(theta + b) and only the count
distribution and log Z need the tree, upward only), and the general path forced on the same input
(``_marginals_core(..., affine_shortcut=False)``: upward and downward passes, as for any other f).

Targets: D = 2^20 marginals + log Z <= 1.5 s on 2 cores; growth 2^16 -> 2^20 <= 25x;
at D = 10^5 full marginals no slower than fast-poibin's count distribution, and more accurate;
10^4 samples at D = 2^16 in <= 2 s.

    python benchmarks/cardinality.py [--quick] [--exps 16 20] [--only sweep 1e5 sample] [--repeat 3]

``--exps`` times only the listed D = 2^e of the sweep (the random inputs are the same as in a full
run); ``--only`` runs only the listed parts.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _harness import Recorder, best_time  # noqa: E402
from tractable.cardinality import chain_marginals, marginals, sample  # noqa: E402
from tractable.cardinality.convolution_tree import _marginals_core, _validate_marginals_args  # noqa: E402

CHAIN_MAX = 2**14
SCIPY_MAX = 2**14


def _fast_poibin():
    try:
        from fast_poibin import PoiBin
    except ImportError:
        return None
    return lambda p: PoiBin(p).pmf


def _rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


def sweep(rec: Recorder, exps, repeat: int, repeat_large: int = 1) -> dict:
    rng = np.random.default_rng(0)
    fpb = _fast_poibin()
    times = {}
    for e in range(10, max(exps) + 1):  # inputs drawn for every size, so that a subset sees the same data
        d = 2**e
        theta = rng.normal(0, 1, d)
        cases = [("iid N(0,1)", rng.normal(0, 1, d + 1)), ("0 (Poisson-binomial)", np.zeros(d + 1))]
        if e not in exps:
            continue
        for fname, f in cases:
            reps = repeat if d <= 2**16 else repeat_large
            t_ours, res = best_time(lambda t=theta, g=f: marginals(t, g), repeat=reps)
            times[(e, fname)] = t_ours
            row = {"D": f"2^{e}", "f": fname, "ours_s": t_ours, "passes": res.n_passes}
            if d <= CHAIN_MAX:
                t_chain, ref = best_time(lambda t=theta, g=f: chain_marginals(t, g), repeat=1)
                row.update(
                    chain_s=t_chain,
                    chain_over_ours=t_chain / t_ours,
                    marg_rel_err=_rel(res.p_on, ref.p_on),
                    count_abs_err=float(np.max(np.abs(res.count_marginals - ref.count_marginals))),
                    logz_err=abs(res.log_partition - ref.log_partition),
                )
            if fname.startswith("0"):
                p = 1 / (1 + np.exp(-theta))
                if fpb is not None:
                    t_fpb, pmf = best_time(lambda q=p: fpb(q), repeat=reps)
                    row.update(
                        fast_poibin_s=t_fpb,
                        fast_poibin_over_ours=t_fpb / t_ours,
                        fast_poibin_abs_err=float(np.max(np.abs(pmf - res.count_marginals))),
                    )
                if d <= SCIPY_MAX:
                    from scipy.stats import poisson_binom

                    ks = np.arange(d + 1)
                    t_sp, pmf = best_time(lambda k=ks, q=p: poisson_binom.pmf(k, q), repeat=1)
                    row.update(
                        scipy_s=t_sp,
                        scipy_over_ours=t_sp / t_ours,
                        scipy_abs_err=float(np.max(np.abs(pmf - res.count_marginals))),
                    )
            rec.add(**row)
    return times


def _general_path(theta, f):
    """``marginals`` with the affine shortcut off: validation, upward and downward passes."""
    theta, f = _validate_marginals_args(theta, f, "marginals")
    return _marginals_core(theta, f, "auto", 48, affine_shortcut=False)


def at_1e5(rec: Recorder, full: bool, repeat: int = 7) -> None:
    """D = 10^5, f = 0: our full marginals (as called, and the general path forced) vs fast-poibin's
    count distribution only, timed in turns in the same run (best of ``repeat`` each)."""
    fpb = _fast_poibin()
    if fpb is None:
        return
    rng = np.random.default_rng(1)
    d = 10**5
    theta = rng.normal(0, 3, d)
    p = 1 / (1 + np.exp(-theta))
    f = np.zeros(d + 1)
    fns = {"ours": lambda: marginals(theta, f), "general": lambda: _general_path(theta, f), "fpb": lambda: fpb(p)}
    best, out = {k: np.inf for k in fns}, {}
    for _ in range(repeat):  # in turns, so that the load of a shared machine hits all three alike
        for k, fn in fns.items():
            t0 = time.perf_counter()
            out[k] = fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    res, (log_odds_g, count_g, logz_g, passes_g), pmf = out["ours"], out["general"], out["fpb"]
    rows = [
        {"path": "affine shortcut (as called)", "ours_s": best["ours"], "passes": res.n_passes},
        {"path": "general (forced)", "ours_s": best["general"], "passes": passes_g},
    ]
    for row in rows:
        row.update(fast_poibin_s=best["fpb"], fast_poibin_over_ours=best["fpb"] / row["ours_s"])
    rows[1].update(
        marg_rel_err_vs_shortcut=_rel(1 / (1 + np.exp(-log_odds_g)), res.p_on),
        logz_err_vs_shortcut=abs(logz_g - res.log_partition),
    )
    if full:
        ref = marginals(theta, f, method="direct").count_marginals  # exact relative to every entry
        bulk = ref >= 1e-10 * ref.max()
        tail = (ref > 0) & ~bulk

        def bad(x):  # tail entries off by more than a factor 2, or negative
            return int(np.sum((x[tail] < 0) | (np.abs(x[tail] - ref[tail]) > ref[tail])))

        for row, count in zip(rows, [res.count_marginals, count_g]):
            row.update(
                ours_abs_err=float(np.max(np.abs(count - ref))),
                fast_poibin_abs_err=float(np.max(np.abs(pmf - ref))),
                ours_bulk_rel_err=_rel(count[bulk], ref[bulk]),
                fast_poibin_bulk_rel_err=_rel(pmf[bulk], ref[bulk]),
                ours_bad_tail_entries=bad(count),
                fast_poibin_bad_tail_entries=bad(pmf),
                fast_poibin_negative_entries=int(np.sum(pmf < 0)),
            )
    for row in rows:
        rec.add(D="10^5", f="0 (Poisson-binomial)", **row)


def sampling(rec: Recorder, d: int, n: int) -> None:
    rng = np.random.default_rng(2)
    theta = rng.normal(0, 1, d)
    f = rng.normal(0, 1, d + 1)
    sample(theta[:64], f[:65], size=2, rng=0)  # compile
    t0 = time.perf_counter()
    s = sample(theta, f, size=n, rng=0)
    t = time.perf_counter() - t0
    res = marginals(theta, f)
    se = np.sqrt(res.p_on * (1 - res.p_on) / n)
    z = float(np.max(np.abs(s.mean(0) - res.p_on) / np.maximum(se, 1e-12)))
    rec.add(D=f"2^{int(np.log2(d))}", f="iid N(0,1)", task=f"{n} joint samples", ours_s=t, max_z_vs_exact_marginals=z)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small subset, well under a minute")
    ap.add_argument("--exps", type=int, nargs="+", help="time only D = 2^e for these e (10..20)")
    ap.add_argument("--only", nargs="+", choices=["sweep", "1e5", "sample"], help="run only these parts (default: all)")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs per size up to 2^16 (default 3)")
    ap.add_argument("--repeat-large", type=int, default=1, help="best of this many runs above 2^16 (default 1)")
    args = ap.parse_args()
    parts = set(args.only or ["sweep", "1e5", "sample"])
    marginals(np.zeros(100), np.zeros(101))  # compile the numba kernels outside the timings
    chain_marginals(np.zeros(10), np.zeros(11))
    rec = Recorder(
        "cardinality",
        title="Cardinality potentials: convolution tree (marginals + log Z) vs chain, fast-poibin, scipy",
        notes=(
            "theta ~ N(0,1). `ours_s`: full marginals + count marginals + log Z; `chain`: O(D^2) log-space"
            " chain (also the accuracy reference); fast-poibin and scipy: count distribution only (f = 0)."
            " Errors: marginals max relative, count marginals max absolute. At 10^5 `path`: f = 0 is affine"
            " in the count, so `marginals` returns sigmoid(theta + b) and runs the tree upward only (affine"
            " shortcut); the general path (upward + downward) is forced on the same input for comparison."
            " Targets: 2^20 <= 1.5 s; growth 2^16 -> 2^20 <= 25x; at 10^5 no slower than fast-poibin and"
            " more accurate; 10^4 samples at 2^16 <= 2 s. The machine is shared (2 cores, other jobs"
            " running): times are noisy."
        ),
    )
    exps = args.exps or ([10, 11, 12] if args.quick else list(range(10, 21)))
    if "sweep" in parts:
        times = sweep(rec, exps, repeat=args.repeat, repeat_large=args.repeat_large)
        if 16 in exps and 20 in exps:
            for fname in ["iid N(0,1)", "0 (Poisson-binomial)"]:
                rec.add(D="2^16 -> 2^20", f=fname, task="time growth", growth=times[(20, fname)] / times[(16, fname)])
    if "1e5" in parts and not args.quick:
        at_1e5(rec, full=True)
    if "sample" in parts:
        if args.quick:
            sampling(rec, 2**12, 1000)
        else:
            sampling(rec, 2**16, 10**4)
    rec.save()
    if parts == {"sweep", "1e5", "sample"}:
        from _figures import cardinality as figure  # Tarlow et al. Fig. 3 from the results just recorded

        figure()


if __name__ == "__main__":
    main()
