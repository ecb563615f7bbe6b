"""Collective classification of the Cora papers with a PSL program, grounded in DuckDB and solved by ADMM.

The program is psl-examples' Cora model: a topic spreads along citation links (one rule for all topics
and one per topic), every paper has exactly one topic (``HasCat(A, +C) = 1 .``, one hard constraint per
paper) and a small negative prior keeps unsupported topics low. Half of the papers have an observed
topic; the others are inferred. Built with the Python API (``tractable.psl.Model``): predicates, rules and
pandas data frames in, one data frame of inferred values per open predicate out. Compared with logistic
regression on the papers' words, which sees no links.

Data: ``/work/shared/data/cora.npz`` (Planetoid release of Cora, MIT licence; 2708 papers, 5278 links,
7 topics); the script says so and stops when it is missing.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

from tractable.psl import Model

DATA = Path("/work/shared/data/cora.npz")
RULES = [
    "1.0: HasCat(A, C) & Link(A, B) & (A != B) >> HasCat(B, C) ^2",
    *[f"1.0: HasCat(A, '{k}') & Link(A, B) >> HasCat(B, '{k}') ^2" for k in range(1, 8)],
    "HasCat(A, +C) = 1 .",
    "0.001: !HasCat(A, N) ^2",
]


def main() -> None:
    if not DATA.exists():
        print(f"{DATA} is missing: this example needs the Cora data set (see /work/shared/data/README.md).")
        return
    d = np.load(DATA)
    words = sp.csr_matrix((d["features_data"], d["features_indices"], d["features_indptr"]), d["features_shape"])
    labels, edges = d["labels"].astype(int), d["edges"]
    n, k = labels.size, 7
    rng = np.random.default_rng(0)
    observed = rng.random(n) < 0.5
    obs, tgt = np.flatnonzero(observed), np.flatnonzero(~observed)

    model = Model()
    model.add_predicate("Link", 2, closed=True)
    model.add_predicate("HasCat", 2, closed=False)
    for rule in RULES:
        model.add_rule(rule)
    # Citations in both directions; observed papers one-hot over the 7 topics ('1'..'7'); targets: all topics.
    links = pd.DataFrame({"a": np.r_[edges[:, 0], edges[:, 1]], "b": np.r_[edges[:, 1], edges[:, 0]]})
    model.add_data("Link", "observations", links)
    cats = np.arange(1, k + 1)
    model.add_data(
        "HasCat",
        "observations",
        pd.DataFrame(
            {
                "paper": np.repeat(obs, k),
                "topic": np.tile(cats, obs.size),
                "value": (labels[np.repeat(obs, k)] + 1 == np.tile(cats, obs.size)).astype(float),
            }
        ),
    )
    model.add_data("HasCat", "targets", pd.DataFrame({"paper": np.repeat(tgt, k), "topic": np.tile(cats, tgt.size)}))

    ground = model.ground()
    print(
        f"Cora: {n} papers, {edges.shape[0]} links; {tgt.size} papers to classify. Ground program: "
        f"{ground.n_potentials} potentials, {ground.n_constraints} constraints, grounded in {ground.time:.2f} s."
    )
    # Residual tolerances 1e-6: the default 1e-3 relative tolerance stops after a few dozen iterations, a little
    # short of the optimum.
    predictions, result = model.infer(eps_abs=1e-6, eps_rel=1e-6)
    print(f"ADMM: {result.message} ({result.time:.2f} s)")

    df = predictions["HasCat"]
    scores = np.zeros((n, k))
    scores[df[0].astype(int).to_numpy(), df[1].astype(int).to_numpy() - 1] = df["value"].to_numpy()
    psl_acc = np.mean(scores[tgt].argmax(axis=1) == labels[tgt])
    lr = LogisticRegression(C=1.0, max_iter=2000).fit(words[obs], labels[obs])
    lr_acc = np.mean(lr.predict(words[tgt]) == labels[tgt])
    print(f"accuracy on the unobserved papers: PSL program {psl_acc:.3f}, logistic regression on words {lr_acc:.3f}")


if __name__ == "__main__":
    main()
