"""MPE inference in an opinion-diffusion hinge-loss MRF: ADMM against the exact LP/QP optimum.

Builds the social-network model of Bach et al. (2012, Example 1) with a few thousand voters, solves it
with consensus ADMM and with the exact reference solver, and prints how the two answers compare.
Run: ``python examples/hlmrf_opinion.py [n_voters]``.
"""

import sys

import numpy as np

from tractable.datasets import opinion_diffusion
from tractable.hlmrf import solve

n_voters = int(sys.argv[1]) if len(sys.argv) > 1 else 3000

for squared, reference in ((False, "highs"), (True, "clarabel")):
    model = opinion_diffusion(n_voters, squared=squared, rng=0)
    print(f"p = {2 if squared else 1}: {model}")
    exact = solve(model, method=reference)
    admm = solve(model, constraints="consensus", eps_rel=1e-4)
    gap = (admm.objective - exact.objective) / exact.objective
    print(f"  {reference:8s} objective {exact.objective:.6f} in {exact.time:.2f} s")
    print(
        f"  admm     objective {admm.objective:.6f} in {admm.time:.2f} s ({admm.n_iter} iterations), "
        f"relative gap {gap:.1e}, max violation {admm.max_violation:.1e}"
    )
    print(f"  {admm.message}")  # e.g. "admm: converged after 212 iterations; residuals below tolerance"
    # each voter's preferences: variable 2a is liberal, 2a + 1 conservative
    pref = np.asarray(admm.x).reshape(-1, 2)
    leaning = np.where(pref[:, 0] > pref[:, 1], "L", "C")
    print(f"  voters leaning liberal: {np.mean(leaning == 'L'):.1%}")
