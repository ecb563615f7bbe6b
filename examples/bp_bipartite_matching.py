"""Marginals of a constrained assignment: papers to reviewers, each paper 3-4 reviewers, each reviewer 6-8 papers.

Loopy belief propagation with one cardinality factor per paper and per reviewer (Tarlow et al. 2012, Sec. 6.2)
against two quick answers: the unary scores alone (constraints ignored) and the single best assignment
from an integer program (HiGHS). A long block-Gibbs run would give the ground truth; here we check that
LBP's marginals respect the constraints in expectation, which the unaries alone do not.
"""

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.special import expit

from tractable.bp import loopy
from tractable.datasets import bipartite_matching

problem = bipartite_matching(30, 15, row_counts=(3, 4), col_counts=(6, 8), rng=0)
fg = problem.factor_graph()
res = loopy(fg, damping=0.2)
p = res.marginals[:, 1].reshape(30, 15)
print(f"loopy BP: {res.status} after {res.n_iter} iterations, {1e3 * res.time / res.n_iter:.2f} ms per iteration")
print(f"expected reviewers per paper: {p.sum(1).min():.2f} .. {p.sum(1).max():.2f}   (allowed 3-4)")
print(f"expected papers per reviewer: {p.sum(0).min():.2f} .. {p.sum(0).max():.2f}   (allowed 6-8)")
q = expit(problem.unary)
print(f"unaries alone: papers get {q.sum(1).min():.2f} .. {q.sum(1).max():.2f} reviewers (constraints ignored)")

# the MAP assignment by an integer program: maximize the unary score subject to the count ranges
r, c = problem.unary.shape
rows = np.kron(np.eye(r), np.ones(c))
cols = np.kron(np.ones(r), np.eye(c))
lp = milp(-problem.unary.ravel(), integrality=np.ones(r * c), bounds=Bounds(0, 1),
          constraints=[LinearConstraint(rows, 3, 4), LinearConstraint(cols, 6, 8)])  # fmt: skip
best = lp.x.round().astype(int)
decoded = loopy(fg, task="map", damping=0.2)
print(f"MAP (HiGHS): score {fg.score(best):.3f}; LBP max-product decoding: {decoded.score:.3f}")
