"""Rows of ``tractable demo`` for clique MAP inference."""

from __future__ import annotations

__all__ = ["demo_rows"]


def demo_rows() -> list[dict]:
    """Alpha-pass on the paper's synthetic cliques, against ICM and against exact solvers."""
    from ..clique import alpha_pass, exact_clique_map, icm, majority_alpha_pass, majority_exact
    from ..datasets.clique_benchmark import clique_benchmark

    rows = []
    # load the compiled kernels once, so that the times below are those of the algorithms
    phi, pot = clique_benchmark("MAJ-DENSE", n=3, m=2, rng=0)
    alpha_pass(phi, pot), majority_alpha_pass(phi, pot.W), icm(phi, pot, rng=0)
    phi, pot = clique_benchmark("POTTS", n=100, m=24, lam=0.95, rng=0)
    res, base = alpha_pass(phi, pot), icm(phi, pot, rng=0)
    rows.append(
        dict(
            problem="POTTS clique n=100 m=24",
            method="alpha_pass",
            quality=f"score / ICM {res.score / base.score:.4f}",
            time=res.time,
        )
    )
    phi, pot = clique_benchmark("MAKESPAN2", n=100, m=24, lam=0.9, rng=1)
    res, base = alpha_pass(phi, pot), icm(phi, pot, rng=0)
    rows.append(
        dict(
            problem="MAKESPAN2 clique n=100 m=24",
            method="alpha_pass (exact)",
            quality=f"score / ICM {res.score / base.score:.4f}",
            time=res.time,
        )
    )
    phi, pot = clique_benchmark("POTTS", n=12, m=4, lam=0.9, rng=2)
    res, ref = alpha_pass(phi, pot), exact_clique_map(phi, pot)
    rows.append(
        dict(
            problem="POTTS clique n=12 m=4",
            method="alpha_pass",
            quality=f"ratio to exact {res.score / ref.score:.4f}",
            time=res.time,
        )
    )
    phi, pot = clique_benchmark("MAJ-SPARSE", n=40, m=6, lam=0.9, rng=3)
    res, ref = majority_alpha_pass(phi, pot.W), majority_exact(phi, pot.W)
    rows.append(
        dict(
            problem="MAJ-SPARSE clique n=40 m=6",
            method="majority_alpha_pass",
            quality=f"ratio to exact {res.score / ref.score:.4f}",
            time=res.time,
        )
    )
    return rows


def warm() -> None:
    """Compile (or load from the cache) the clique kernels: every method on each potential family."""
    import numpy as np

    from .. import clique

    phi = np.random.default_rng(0).uniform(0, 1, size=(6, 3))
    sum_family = [clique.Potts(0.3), clique.Entropy(0.3)]  # alpha-expansion's moves need a SUM potential
    for potential in [*sum_family, clique.Makespan(0.3), clique.SquareMakespan(0.3)]:
        for name in ("alpha_pass", "generalized_alpha_pass", "icm", "exact_clique_map", "clique_map"):
            getattr(clique, name)(phi, potential)
        if potential in sum_family:
            clique.alpha_expansion(phi, potential)
    clique.alpha_pass_batch(np.stack([phi, phi]), clique.Potts(0.3))
    W = np.eye(3)
    clique.majority_alpha_pass(phi, W)
    clique.majority_exact(phi, W)
