"""Rows of ``tractable demo`` for clique MAP inference."""

from __future__ import annotations

__all__ = ["demo_rows"]


def demo_rows() -> list[dict]:
    """Alpha-pass on the paper's synthetic cliques, against ICM and against exact solvers."""
    from ..datasets.clique_benchmark import clique_benchmark
    from . import alpha_pass, exact_clique_map, icm, majority_alpha_pass, majority_exact

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
