"""The area's first call compiles each kernel once: one signature per kernel (see ``_kernels``'s docstring)."""

import json
import subprocess
import sys

import numpy as np
import pytest

from tractable.cardinality._balanced import Balanced
from tractable.cardinality._kernels import split_table_bound

_LIST_SIGNATURES = """
import json
from numba.core.registry import CPUDispatcher
import tractable.demo.cardinality as demo
from tractable.cardinality import _direct_levels, _kernels
demo.warm()
print(json.dumps({
    f"{mod.__name__}.{name}": [str(s) for s in obj.signatures]
    for mod in (_kernels, _direct_levels)
    for name, obj in vars(mod).items()
    if isinstance(obj, CPUDispatcher)
}))
"""


def test_warm_compiles_each_kernel_for_one_signature():
    # a fresh process (this one's tests call kernels in other ways): numba's cache makes it quick
    out = subprocess.run([sys.executable, "-c", _LIST_SIGNATURES], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    signatures = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(len(s) <= 1 for s in signatures.values()), {k: s for k, s in signatures.items() if len(s) > 1}
    used = {k for k, s in signatures.items() if s}
    assert {"tractable.cardinality._kernels.sample_descent_alias", "tractable.cardinality._kernels.chain_stack"} <= used


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 100, 129, 300, 1000, 4097])
@pytest.mark.parametrize(("block_height", "alias_height"), [(3, 7), (0, 0), (1, 3), (2, 5), (3, 10)])
def test_split_table_bound_covers_every_node(n, block_height, alias_height):
    # the sampler's split tables are allocated once with this many entries: it must cover the sum of
    # len_l * len_r over the internal nodes above the blocks with at most alias_max real leaves (nodes
    # with fewer than 2 never split a count other than 0 and all: no tables)
    tree = Balanced(np.zeros((n, 2)), method="direct")
    left, right, _, _, _, length, pad = tree.flat()
    hb = min(block_height, tree.n_levels)
    alias_max = 1 << min(alias_height, 10)
    first = sum(pad >> h for h in range(hb + 1))  # id of the first node above the blocks
    above_blocks = np.arange(left.shape[0]) >= first
    small = above_blocks & (length - 1 <= alias_max) & (length - 1 >= 2) & (left >= 0)
    need = int(np.sum(length[left[small]] * length[right[small]]))
    assert split_table_bound(n, hb, tree.n_levels, alias_max) >= need
