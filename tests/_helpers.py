"""Helpers shared by the tests (importable from every test folder, like ``_oracles``): belief propagation's
messages, and the generator of PSL programs' data."""

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


def psl_generator():
    """``tests/psl/_generate.py`` as a module, loaded once: data in the layout of the psl-examples programs."""
    import importlib.util
    import sys
    from pathlib import Path

    name = "_psl_corpus_generate"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / "psl" / "_generate.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
