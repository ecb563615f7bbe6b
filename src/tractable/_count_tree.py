"""The count tree of a recursive cardinality potential (Tarlow et al. 2012, Sec. 5.2): a model concept.

A recursive cardinality potential over ``D`` binary variables is a *nested* family of subsets (any two
disjoint or one inside the other), each with a count potential. Its count tree is a binary tree whose
leaves are the variables and whose internal nodes are partial counts ``z_p = z_left + z_right``, aligned
with the subsets so that every subset is one node; each subset's potential is then a unary potential on
that node's count. The structure (the checked subsets and potentials, the tree, where each potential
sits) depends on the model only, not on the unary scores or the incoming messages, so it is checked and
built once, when the model is built:

* :func:`validate_structure` checks the arguments (the messages name them);
* :func:`build_structure` aligns the tree with the subsets, rejecting non-nested families, and returns a
  frozen :class:`CountTree`.

Both :class:`tractable.factorgraph.RecursiveCardinalityFactor` and
:class:`tractable.cardinality.RecursiveCardinalityModel` keep one; the passes over it (sum-product and
max-product) live in ``tractable.cardinality._tree`` and the factor's BP messages in
``tractable.bp._recursive``. This module sits below both the model layer and the algorithm areas: it
imports only the shared primitives.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ._errors import ZeroPartitionError
from ._validate import as_float_array, as_index_array, check_int, check_memory

__all__ = ["NO_CONFIGURATION", "BinaryTree", "CountTree", "build_structure", "finish_tree", "validate_structure"]

#: the phrase of every error about a model in which no configuration has positive probability
NO_CONFIGURATION = "no configuration has non-zero probability"

#: a lower bound of the bytes the model's structure holds per variable (it refuses only the hopeless)
_BYTES_PER_VARIABLE = 64


@dataclass(frozen=True)
class BinaryTree:
    """Structure of a binary count tree (read-only arrays indexed by node id).

    The leaves are nodes ``0 .. n_leaves - 1`` (the binary variables); an internal node has a larger id
    than its children. Nodes are grouped by height, so that one pass handles a whole level at once.
    """

    n_leaves: int
    left: np.ndarray  # (n_nodes,) child ids, -1 for leaves
    right: np.ndarray
    size: np.ndarray  # number of leaves below each node
    height: np.ndarray
    row: np.ndarray  # row of the node in its height's message array
    levels: tuple  # levels[h] = node ids of height h (levels[0] = leaves)
    widths: tuple  # widths[h] = max size + 1 over the nodes of height h
    root: int

    @property
    def n_nodes(self) -> int:
        return self.left.shape[0]


def _tree_sizes(left, right, n_leaves, size, height):
    """Fill leaf counts and heights of internal nodes (children have smaller ids than parents);
    compiled on first use by :func:`_compiled_tree_sizes`."""
    for v in range(n_leaves, left.shape[0]):
        size[v] = size[left[v]] + size[right[v]]
        height[v] = 1 + max(height[left[v]], height[right[v]])


@functools.cache
def _compiled_tree_sizes():
    """:func:`_tree_sizes` compiled on first use, so that ``import tractable`` does not import numba."""
    from ._numba import njit

    return njit(_tree_sizes)


def finish_tree(n_leaves: int, left_list, right_list) -> BinaryTree:
    """Assemble a :class:`BinaryTree` from lists of (left, right) children of new ids in order."""
    empty = np.zeros(0, np.int64)
    lefts = np.concatenate([np.asarray(x, dtype=np.int64) for x in left_list]) if left_list else empty
    rights = np.concatenate([np.asarray(x, dtype=np.int64) for x in right_list]) if right_list else empty
    n_int = lefts.shape[0]
    n_nodes = n_leaves + n_int
    left = np.full(n_nodes, -1, dtype=np.int64)
    right = np.full(n_nodes, -1, dtype=np.int64)
    left[n_leaves:] = lefts
    right[n_leaves:] = rights
    size = np.ones(n_nodes, dtype=np.int64)
    height = np.zeros(n_nodes, dtype=np.int64)
    # internal ids are created after their children (children ids < parent id)
    _compiled_tree_sizes()(left, right, n_leaves, size, height)
    order = np.argsort(height, kind="stable")
    n_h = int(height.max()) + 1 if n_nodes else 1
    bounds = np.searchsorted(height[order], np.arange(n_h + 1))
    levels = [order[bounds[h] : bounds[h + 1]] for h in range(n_h)]
    row = np.empty(n_nodes, dtype=np.int64)
    widths = []
    for nodes in levels:
        row[nodes] = np.arange(nodes.shape[0])
        widths.append(int(size[nodes].max()) + 1)
    root = int(levels[-1][0]) if n_nodes else 0
    for arr in (left, right, size, height, row, *levels):
        arr.flags.writeable = False
    return BinaryTree(n_leaves, left, right, size, height, row, tuple(levels), tuple(widths), root)


@dataclass(frozen=True, eq=False)
class CountTree:
    """The unary-independent part of a recursive cardinality model, built once (read-only arrays,
    immutable containers)."""

    n_variables: int
    subsets: tuple  # sorted index arrays
    count_potentials: tuple
    tree: BinaryTree
    node_of_subset: tuple  # tree node of each subset (identical subsets share one)
    leaf_potentials: np.ndarray  # (n, 2): potentials of singleton subsets, folded into the leaves
    potentials_by_height: MappingProxyType  # {height: (n_h, w_h) log potentials of internal nodes}


def validate_structure(n_variables, subsets, count_potentials):
    """Check the structure arguments; return ``(n, subsets, count_potentials)`` as read-only arrays.

    Raises
    ------
    TypeError
        ``subsets`` or ``count_potentials`` is not a sequence.
    ValueError
        Lengths that do not match, an empty subset or one that repeats a variable or names one outside
        ``0 .. n_variables - 1``, a count potential of the wrong length, with NaN or ``+inf``, or ``-inf``
        at every count.
    """
    n = check_int(n_variables, "n_variables", minimum=1)
    # the structure keeps a few int64 / float64 arrays per variable (unary, leaf order, count tree)
    check_memory(n, _BYTES_PER_VARIABLE, "n_variables", "variables")
    if isinstance(subsets, np.ndarray) and subsets.ndim == 2:
        subsets = list(subsets)
    try:
        subsets = list(subsets)
        count_potentials = list(count_potentials)
    except TypeError as err:
        raise TypeError("`subsets` and `count_potentials` must be sequences.") from err
    if len(subsets) != len(count_potentials):
        raise ValueError(
            f"`count_potentials` must have one entry per subset ({len(subsets)}); got {len(count_potentials)}."
        )
    subs = []
    pots = []
    for i, (s, f) in enumerate(zip(subsets, count_potentials)):
        idx = as_index_array(s, f"subsets[{i}]", size=n)
        if idx.size == 0:
            raise ValueError(f"`subsets[{i}]` must not be empty.")
        if np.unique(idx).size != idx.size:
            raise ValueError(f"`subsets[{i}]` must not repeat a variable; got {idx.tolist()}.")
        f = as_float_array(f, f"count_potentials[{i}]", ndim=1)
        if f.shape[0] != idx.size + 1:
            raise ValueError(
                f"`count_potentials[{i}]` must have len(subsets[{i}]) + 1 = {idx.size + 1} entries; got {f.shape[0]}."
            )
        if not np.any(f > -np.inf):
            raise ZeroPartitionError(f"`count_potentials[{i}]` is -inf at every count: {NO_CONFIGURATION}.")
        idx = np.sort(idx)
        idx.flags.writeable = False
        f.flags.writeable = False
        subs.append(idx)
        pots.append(f)
    return n, tuple(subs), tuple(pots)


def build_structure(n: int, subs: tuple, pots: tuple) -> CountTree:
    """Align a binary count tree with the validated nested subsets (rejecting non-nested ones).

    ``subs`` and ``pots`` are :func:`validate_structure`'s output (or trusted equivalents: sorted
    read-only index arrays, count potentials of the right lengths, which may be ``-inf`` everywhere).

    Raises
    ------
    ValueError
        Two subsets overlap without one containing the other (the message names both).
    """
    order = sorted(range(len(subs)), key=lambda i: -subs[i].size)
    owner = np.full(n, -1)
    parent = {}
    canonical = {}  # identical subsets map to the first one
    for i in order:
        s = subs[i]
        own = np.unique(owner[s])
        if own.size == 1 and own[0] >= 0 and subs[own[0]].size == s.size:
            canonical[i] = canonical.get(int(own[0]), int(own[0]))
            continue
        if own.size > 1:
            for a in own:
                if a >= 0 and not np.isin(s, subs[a]).all():
                    a = canonical.get(int(a), int(a))
                    raise ValueError(
                        f"`subsets` must be nested (any two disjoint or one inside the other); "
                        f"subsets[{min(a, i)}] and subsets[{max(a, i)}] overlap without one "
                        f"containing the other."
                    )
        canonical[i] = i
        parent[i] = int(own[0])
        owner[s] = i
    reps = [i for i in order if canonical[i] == i]
    children = {i: [] for i in reps}
    children[-1] = []
    for i in reps:
        children[parent[i]].append(("s", i))
    for d in range(n):
        children[int(owner[d])].append(("v", d))
    # bottom-up: smallest subsets first, then the top group
    node_of = {}
    lefts: list = []
    rights: list = []
    next_id = [n]

    def combine(items):
        ids = [node_of[x[1]] if x[0] == "s" else x[1] for x in items]
        while len(ids) > 1:
            new = []
            for k in range(0, len(ids) - 1, 2):
                lefts.append(ids[k])
                rights.append(ids[k + 1])
                new.append(next_id[0])
                next_id[0] += 1
            if len(ids) % 2:
                new.append(ids[-1])
            ids = new
        return ids[0]

    for i in reversed(reps):
        node_of[i] = combine(children[i])
    pot_sum = {}
    for i in range(len(subs)):
        v = node_of[canonical[i]]
        pot_sum[v] = pot_sum.get(v, 0.0) + pots[i]
    root = combine(children[-1])
    tree = finish_tree(n, [np.array(lefts, dtype=np.int64)], [np.array(rights, dtype=np.int64)])
    assert tree.root == root or n == 1
    # leaf potentials fold into the leaf log weights; the others go per height
    leaf = np.zeros((n, 2))
    pots_h: dict = {}
    for v, f in pot_sum.items():
        if v < n:
            leaf[v] += f
            continue
        h = int(tree.height[v])
        if h not in pots_h:
            pots_h[h] = np.zeros((tree.levels[h].shape[0], tree.widths[h]))
        pots_h[h][tree.row[v], : f.shape[0]] = f
    for arr in (leaf, *pots_h.values()):
        arr.flags.writeable = False
    return CountTree(
        n, subs, pots, tree, tuple(node_of[canonical[i]] for i in range(len(subs))), leaf, MappingProxyType(pots_h)
    )
