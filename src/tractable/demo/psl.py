"""Demo rows of ``tractable demo``: Example 1 of Bach et al. (2012) and a generated collective-classification
program, both written as PSL rules and data, grounded in DuckDB and solved by ADMM."""

from __future__ import annotations

import time

import numpy as np

__all__ = ["demo_rows", "collective_classification"]


def collective_classification(n_nodes: int = 2000, n_labels: int = 3, degree: int = 4, *, rng=0):
    """A PSL model of a homophilous graph: half the labels observed, the other half to infer.

    Edges join nodes of the same label with probability 0.8. Rules: one link-propagation rule, the
    functional constraint ``Lab(A, +C) = 1 .`` and a negative prior.

    Returns
    -------
    model : tractable.psl.Model
    truth : pandas.DataFrame
        The true labels of the targets (columns 0, 1 and ``value``).
    """
    import pandas as pd

    from ..psl.model import Model

    gen = np.random.default_rng(rng)
    labels = gen.integers(0, n_labels, n_nodes)
    by_label = [np.flatnonzero(labels == c) for c in range(n_labels)]
    src = np.repeat(np.arange(n_nodes), degree)
    same = gen.random(src.size) < 0.8
    dst = gen.integers(0, n_nodes, src.size)
    for c in range(n_labels):
        sel = same & (labels[src] == c)
        dst[sel] = gen.choice(by_label[c], sel.sum())
    keep = src != dst
    names = np.char.add("n", np.arange(n_nodes).astype(str))
    links = pd.DataFrame({0: names[src[keep]], 1: names[dst[keep]]}).drop_duplicates()
    observed = gen.random(n_nodes) < 0.5
    node = np.repeat(np.arange(n_nodes), n_labels)
    lab = np.tile(np.arange(n_labels), n_nodes)
    value = (labels[node] == lab).astype(float)
    cat = np.char.add("c", lab.astype(str))
    obs = observed[node]
    m = Model()
    m.add_predicate("Link", 2, closed=True)
    m.add_predicate("Lab", 2, closed=False)
    m.add_rule("1.0: Lab(A, C) & Link(A, B) & (A != B) -> Lab(B, C) ^2")
    m.add_rule("1.0: Lab(A, C) & Link(B, A) & (A != B) -> Lab(B, C) ^2")
    m.add_rule("Lab(A, +C) = 1 .")
    m.add_rule("0.01: !Lab(A, C) ^2")
    m.add_data("Link", "observations", links)
    m.add_data("Lab", "observations", pd.DataFrame({0: names[node[obs]], 1: cat[obs], 2: value[obs]}))
    m.add_data("Lab", "targets", pd.DataFrame({0: names[node[~obs]], 1: cat[~obs]}))
    truth = pd.DataFrame({0: names[node[~obs]], 1: cat[~obs], "value": value[~obs]})
    m.add_data("Lab", "truth", truth)
    m.evaluators["Lab/2"] = ["CategoricalEvaluator", "AUCEvaluator"]
    return m, truth


def demo_rows() -> list[dict]:
    """Example 1 (x = (0.65, 0.35)) and a 2000-node collective-classification program."""
    import pandas as pd

    from ..psl.model import Model

    rows = []
    t0 = time.perf_counter()
    m = Model()
    m.add_predicate("Friend", 2, closed=True)
    m.add_predicate("Votes", 2, closed=False)
    m.add_rule("1: Friend(A, B) & Votes(B, P) -> Votes(A, P) ^2")
    m.add_rule("Votes(A, +P) = 1 .")
    m.add_data("Friend", "observations", pd.DataFrame([["me", "f1"], ["me", "f2"]]))
    m.add_data(
        "Votes", "observations", pd.DataFrame([["f1", "L", 0.9], ["f1", "C", 0.1], ["f2", "L", 0.4], ["f2", "C", 0.6]])
    )
    m.add_data("Votes", "targets", pd.DataFrame([["me", "L"], ["me", "C"]]))
    pred, res = m.infer(eps_abs=1e-8, eps_rel=1e-8, gap_tol=1e-9)
    v = pred["Votes"].set_index(1)["value"]
    rows.append(
        {
            "problem": "PSL Example 1 (Bach et al. 2012), 2 rules",
            "method": "DuckDB grounding + ADMM",
            "quality": f"x = ({v['L']:.4f}, {v['C']:.4f}), paper (0.65, 0.35)",
            "time": time.perf_counter() - t0,
        }
    )
    t0 = time.perf_counter()
    m, _ = collective_classification()
    g = m.ground()
    pred, res = m.infer()
    acc = m.evaluate(pred)["Lab"]
    rows.append(
        {
            "problem": f"PSL collective classification, 2000 nodes ({g.n_potentials} potentials, "
            f"{g.n_constraints} constraints)",
            "method": f"DuckDB grounding ({g.time * 1e3:.0f} ms) + ADMM ({res.n_iter} it)",
            "quality": f"categorical accuracy {acc['categorical_accuracy']:.3f}, AUROC {acc['auroc']:.3f} "
            "on the targets",
            "time": time.perf_counter() - t0,
        }
    )
    return rows


def warm() -> None:
    """Ground and solve a small PSL program (DuckDB's first query, the grounding and the solver's kernels)."""
    model, _ = collective_classification(40, rng=0)
    predictions, _ = model.infer()
    model.evaluate(predictions)  # the evaluators' first use imports scipy.stats
