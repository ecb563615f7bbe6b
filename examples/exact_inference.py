"""Exact marginals and MAP of a small factor graph, with evidence, and the same model through a UAI file.

Run: python examples/exact_inference.py
"""

import tempfile
from pathlib import Path

import numpy as np

from tractable import FactorGraph, TableFactor
from tractable.exact import infer, variable_elimination
from tractable.io import read_uai, write_uai

# A chain rain -> sprinkler -> wet grass, as log-potentials (scores).
fg = FactorGraph([2, 2, 2], names=["rain", "sprinkler", "wet"])
fg.add_factor(TableFactor([0], np.log([0.8, 0.2])))
fg.add_factor(TableFactor([0, 1], np.log([[0.6, 0.4], [0.99, 0.01]])))
fg.add_factor(TableFactor([1, 2], np.log([[0.9, 0.1], [0.05, 0.95]])))

res = variable_elimination(fg, task="marginals")
print("P(wet) =", res.marginals[2].round(4), " log Z =", round(res.log_partition, 6))

posterior = infer(fg, task="marginals", evidence={"wet": 1})
print("P(rain | wet) =", posterior.marginals[0].round(4))

best = infer(fg, task="map", evidence={"wet": 1})
print("most probable explanation of wet grass:", dict(zip(fg.names, best.assignment.tolist())))

with tempfile.TemporaryDirectory() as d:
    path = Path(d) / "sprinkler.uai"
    write_uai(path, fg)
    again = variable_elimination(read_uai(path), task="marginals")
    print("same marginals after a UAI round trip:", np.allclose(again.marginals[2], res.marginals[2]))
