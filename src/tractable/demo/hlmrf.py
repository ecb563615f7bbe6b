"""Demo rows of ``tractable demo``: a small opinion-diffusion network, ADMM against HiGHS and Clarabel."""

from __future__ import annotations

import importlib.util
import time

__all__ = ["demo_rows"]


def demo_rows() -> list[dict]:
    """Solve a 300-voter opinion-diffusion MPE problem (p = 1 and p = 2) by ADMM and exactly."""
    from ..datasets import opinion_diffusion
    from ..hlmrf.admm import solve

    rows = []
    for squared, ref_method in ((False, "highs"), (True, "clarabel")):
        model = opinion_diffusion(300, squared=squared, rng=0)
        problem = (
            f"opinion diffusion p={2 if squared else 1} ({model.n_potentials} potentials, "
            f"{model.n_constraints} constraints)"
        )
        t0 = time.perf_counter()
        res = solve(model)  # the default stop: residuals small and a certified gap <= 5e-4
        elapsed = time.perf_counter() - t0
        if ref_method == "clarabel" and importlib.util.find_spec("clarabel") is None:
            rows.append(
                {
                    "problem": problem,
                    "method": f"ADMM ({res.n_iter} it)",
                    "quality": f"objective {res.objective:.6g}, viol {res.max_violation:.0e} "
                    "(Clarabel reference: pip install 'tractable[ref]')",
                    "time": elapsed,
                }
            )
            continue
        ref = solve(model, method=ref_method)
        rel = (res.objective - ref.objective) / max(abs(ref.objective), 1e-12)
        rows.append(
            {
                "problem": problem,
                "method": f"ADMM ({res.n_iter} it)",
                "quality": f"certified gap {res.gap:.1e}; to {ref_method} {rel:.1e}, viol {res.max_violation:.0e}",
                "time": elapsed,
            }
        )
        rows.append({"problem": problem, "method": ref_method, "quality": "exact optimum", "time": ref.time})
    return rows


def warm() -> None:
    """Compile (or load from the cache) the ADMM kernels of hinges and squared hinges, with the certificate."""
    from ..datasets import opinion_diffusion
    from ..hlmrf import solve

    for squared in (False, True):
        solve(opinion_diffusion(60, squared=squared, rng=0))
