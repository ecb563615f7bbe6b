"""Helpers shared by the belief-propagation tests (importable from every test folder, like ``_oracles``)."""

from __future__ import annotations

import numpy as np

from tractable.bp import HANDLERS


def handler_messages(factor, incoming, kind):
    """Outgoing log messages (d, 2) of one binary ``factor`` by its registered handler, and its log Z_f
    (sum-product only; None for max-product)."""
    handler = HANDLERS[type(factor)]
    d = len(factor.variables)
    compiled = handler.compile([factor], [np.arange(d)], np.full(d, 2))
    out = np.full((d, 2), -np.inf)
    handler.messages(compiled, incoming, out, kind)
    return out, handler.log_partition(compiled, incoming) if kind == "sum" else None


def normalized(m, kind):
    """Rows of log messages as probabilities: summing to 1 (sum-product) or with maximum 1 (max-product)."""
    top = np.logaddexp(m[:, 0], m[:, 1]) if kind == "sum" else m.max(axis=1)
    return np.exp(m - top[:, None])


def random_incoming(rng, d, p_clamp=0.2):
    """Normalized log messages (d, 2) into a factor; some entries -inf (a clamped variable)."""
    w = rng.normal(0, 2, size=(d, 2))
    clamp = rng.random(d) < p_clamp
    w[clamp, rng.integers(0, 2, size=d)[clamp]] = -np.inf
    return w - np.logaddexp(w[:, 0], w[:, 1])[:, None]
