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

Targets: D = 2^20 marginals + log Z <= 1.5 s on 2 cores; growth 2^16 -> 2^20 <= 25x;
at D = 10^5 full marginals no slower than fast-poibin's count distribution, and more accurate;
10^4 samples at D = 2^16 in <= 2 s.

    python benchmarks/cardinality.py [--quick]
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


def sweep(rec: Recorder, exps, repeat: int) -> dict:
    rng = np.random.default_rng(0)
    fpb = _fast_poibin()
    times = {}
    for e in exps:
        d = 2**e
        theta = rng.normal(0, 1, d)
        for fname, f in [("iid N(0,1)", rng.normal(0, 1, d + 1)), ("0 (Poisson-binomial)", np.zeros(d + 1))]:
            reps = repeat if d <= 2**16 else 1
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


def at_1e5(rec: Recorder, full: bool) -> None:
    """D = 10^5, f = 0: our full marginals vs fast-poibin's count distribution only."""
    fpb = _fast_poibin()
    if fpb is None:
        return
    rng = np.random.default_rng(1)
    d = 10**5
    theta = rng.normal(0, 3, d)
    p = 1 / (1 + np.exp(-theta))
    f = np.zeros(d + 1)
    t_ours, res = best_time(lambda: marginals(theta, f), repeat=3)
    t_fpb, pmf = best_time(lambda: fpb(p), repeat=3)
    row = {
        "D": "10^5",
        "f": "0 (Poisson-binomial)",
        "ours_s": t_ours,
        "passes": res.n_passes,
        "fast_poibin_s": t_fpb,
        "fast_poibin_over_ours": t_fpb / t_ours,
    }
    if full:
        ref = marginals(theta, f, method="direct").count_marginals  # exact relative to every entry
        bulk = ref >= 1e-10 * ref.max()
        tail = (ref > 0) & ~bulk

        def bad(x):  # tail entries off by more than a factor 2, or negative
            return int(np.sum((x[tail] < 0) | (np.abs(x[tail] - ref[tail]) > ref[tail])))

        row.update(
            ours_abs_err=float(np.max(np.abs(res.count_marginals - ref))),
            fast_poibin_abs_err=float(np.max(np.abs(pmf - ref))),
            ours_bulk_rel_err=_rel(res.count_marginals[bulk], ref[bulk]),
            fast_poibin_bulk_rel_err=_rel(pmf[bulk], ref[bulk]),
            ours_bad_tail_entries=bad(res.count_marginals),
            fast_poibin_bad_tail_entries=bad(pmf),
            fast_poibin_negative_entries=int(np.sum(pmf < 0)),
        )
    rec.add(**row)


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
    args = ap.parse_args()
    marginals(np.zeros(100), np.zeros(101))  # compile the numba kernels outside the timings
    chain_marginals(np.zeros(10), np.zeros(11))
    rec = Recorder(
        "cardinality",
        title="Cardinality potentials: convolution tree (marginals + log Z) vs chain, fast-poibin, scipy",
        notes=(
            "theta ~ N(0,1). `ours_s`: full marginals + count marginals + log Z; `chain`: O(D^2) log-space"
            " chain (also the accuracy reference); fast-poibin and scipy: count distribution only (f = 0)."
            " Errors: marginals max relative, count marginals max absolute. Targets: 2^20 <= 1.5 s;"
            " growth 2^16 -> 2^20 <= 25x; at 10^5 no slower than fast-poibin and more accurate;"
            " 10^4 samples at 2^16 <= 2 s. The machine is shared (2 cores, other jobs running): times"
            " are noisy."
        ),
    )
    if args.quick:
        times = sweep(rec, [10, 11, 12], repeat=3)
        sampling(rec, 2**12, 1000)
    else:
        times = sweep(rec, list(range(10, 21)), repeat=3)
        for fname in ["iid N(0,1)", "0 (Poisson-binomial)"]:
            rec.add(D="2^16 -> 2^20", f=fname, task="time growth", growth=times[(20, fname)] / times[(16, fname)])
        at_1e5(rec, full=True)
        sampling(rec, 2**16, 10**4)
    rec.save()
    from _figures import cardinality as figure  # Tarlow et al. Fig. 3 from the results just recorded

    figure()


if __name__ == "__main__":
    main()
