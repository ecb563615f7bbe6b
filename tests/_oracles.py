"""Independent oracles shared by the tests: brute-force loops written without the library's algorithms."""

from __future__ import annotations

import itertools
import math

import numpy as np


def brute_force(fg):
    """(log Z, marginals, best score) of a FactorGraph by a plain Python loop over all assignments."""
    card = [int(c) for c in fg.cardinalities]
    scores = []
    assignments = list(itertools.product(*[range(c) for c in card]))
    for a in assignments:
        s = fg.constant
        for f in fg.factors:
            s += float(f.to_table()[tuple(a[v] for v in f.variables)])
        scores.append(s)
    scores = np.array(scores)
    best = scores.max()
    if best == -math.inf:
        return -math.inf, None, best
    w = np.exp(scores - best)
    log_z = best + math.log(w.sum())
    p = w / w.sum()
    marginals = [np.zeros(c) for c in card]
    for a, pa in zip(assignments, p):
        for i, s in enumerate(a):
            marginals[i][s] += pa
    return log_z, marginals, best
