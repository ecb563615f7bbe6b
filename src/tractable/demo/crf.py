"""Rows of ``tractable demo`` for the tree CRFs."""

from __future__ import annotations

import time

import numpy as np

__all__ = ["demo_rows"]


def demo_rows() -> list[dict]:
    """A fixed-tree CRF and an evidence-specific one on 600 rows of yeast (14 labels)."""
    from ..crf.chow_liu import ConditionalChowLiu
    from ..crf.tree_crf import ESSCRF, TreeCRF
    from ..datasets import yeast_split

    X_train, X_test, Y_train, Y_test = yeast_split()
    X_train, Y_train = X_train[:600], Y_train[:600]
    rows = []
    for name, model in [
        ("tree CRF (Chow-Liu tree)", TreeCRF(C=0.03)),
        ("ESS-CRF (conditional Chow-Liu)", ESSCRF(ConditionalChowLiu(C=0.01), C=0.03, pairwise_evidence=False)),
    ]:
        t0 = time.perf_counter()
        model.fit(X_train, Y_train)
        ll = model.score(X_test, Y_test)
        acc = float(np.mean(model.predict(X_test, method="max_marginal") == Y_test))
        rows.append(
            {
                "problem": "yeast, 14 labels, 600 train rows",
                "method": name,
                "quality": f"test log-lik {ll:.3f}, Hamming acc {acc:.3f}",
                "time": time.perf_counter() - t0,
            }
        )
    return rows


def warm() -> None:
    """Compile (or load from the cache) the tree sum-product kernels that CRF training runs, on a tiny fit."""
    from ..crf import TreeCRF

    gen = np.random.default_rng(0)
    X = gen.normal(size=(20, 3))
    Y = (X[:, :3] + 0.3 * gen.normal(size=(20, 3)) > 0).astype(np.int64)
    model = TreeCRF(C=1.0).fit(X, Y)
    model.predict(X, method="max_marginal")
