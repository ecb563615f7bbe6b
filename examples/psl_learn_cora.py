"""Learn the weights of a PSL program on one split of Cora, then infer and evaluate on another.

A PSL user's workflow is learn, then infer, then evaluate. The program is psl-examples' Cora model (a topic
spreads along citation links, one rule for all topics and one per topic, one topic per paper, a small negative
prior). The *learn* model observes the topics of one random half of the papers and has the true topics of the
others as its ``truth`` partition; ``Model.learn`` fits the rule weights there (PSL 2.4's default learner,
the structured perceptron, every inference warm-started from the previous one). The *infer* model observes
another random half; it runs with the hand-set weights of the program (all 1.0) and with the learned ones, and
both are scored on its own truth.

Data: ``/work/shared/data/cora.npz`` (Planetoid release of Cora, MIT licence; 2708 papers, 5278 links,
7 topics); the script says so and stops when it is missing.
"""

from pathlib import Path

import numpy as np
import pandas as pd

from tractable.psl import Model

DATA = Path("/work/shared/data/cora.npz")
K = 7
RULES = [
    "1.0: HasCat(A, C) & Link(A, B) & (A != B) >> HasCat(B, C) ^2",
    *[f"1.0: HasCat(A, '{k}') & Link(A, B) >> HasCat(B, '{k}') ^2" for k in range(1, K + 1)],
    "HasCat(A, +C) = 1 .",
    "0.001: !HasCat(A, N) ^2",
]


def one_hot(papers, labels) -> pd.DataFrame:
    """(paper, topic, value) rows: value 1 for the paper's topic, 0 for the other six."""
    cats = np.arange(1, K + 1)
    return pd.DataFrame(
        {
            "paper": np.repeat(papers, K),
            "topic": np.tile(cats, papers.size),
            "value": (labels[np.repeat(papers, K)] + 1 == np.tile(cats, papers.size)).astype(float),
        }
    )


def build(labels, edges, observed, *, with_truth: bool) -> Model:
    """The Cora program with the topics of ``observed`` papers given; the others are targets."""
    obs, tgt = np.flatnonzero(observed), np.flatnonzero(~observed)
    model = Model()
    model.add_predicate("Link", 2, closed=True)
    model.add_predicate("HasCat", 2, closed=False)
    for rule in RULES:
        model.add_rule(rule)
    model.add_data(
        "Link",
        "observations",
        pd.DataFrame({"a": np.r_[edges[:, 0], edges[:, 1]], "b": np.r_[edges[:, 1], edges[:, 0]]}),
    )
    model.add_data("HasCat", "observations", one_hot(obs, labels))
    model.add_data("HasCat", "targets", one_hot(tgt, labels).drop(columns="value"))
    if with_truth:
        model.add_data("HasCat", "truth", one_hot(tgt, labels))
    return model


def accuracy(predictions, labels, observed) -> float:
    df = predictions["HasCat"]
    scores = np.full((labels.size, K), -1.0)
    scores[df[0].astype(int).to_numpy(), df[1].astype(int).to_numpy() - 1] = df["value"].to_numpy()
    tgt = np.flatnonzero(~observed)
    return float(np.mean(scores[tgt].argmax(axis=1) == labels[tgt]))


def main() -> None:
    if not DATA.exists():
        print(f"{DATA} is missing: this example needs the Cora data set (see /work/shared/data/README.md).")
        return
    d = np.load(DATA)
    labels, edges = d["labels"].astype(int), d["edges"]
    rng = np.random.default_rng(0)
    learn_split = rng.random(labels.size) < 0.5
    infer_split = rng.random(labels.size) < 0.5

    learner = build(labels, edges, learn_split, with_truth=True)
    result = learner.learn(method="StructuredPerceptron")
    print(
        f"learned on {np.count_nonzero(~learn_split)} papers: {result.message} in {result.time:.2f} s "
        f"({result.n_inferences} inferences, {result.inference_iterations} ADMM iterations)"
    )
    for rule in result.rules:
        print(f"  {rule}")

    solver = {"eps_abs": 1e-6, "eps_rel": 1e-6}
    model = build(labels, edges, infer_split, with_truth=False)
    hand = accuracy(model.infer(**solver)[0], labels, infer_split)
    model.set_weights(result)
    learned = accuracy(model.infer(**solver)[0], labels, infer_split)
    print(
        f"accuracy on {np.count_nonzero(~infer_split)} other papers: hand-set weights {hand:.3f}, learned {learned:.3f}"
    )


if __name__ == "__main__":
    main()
