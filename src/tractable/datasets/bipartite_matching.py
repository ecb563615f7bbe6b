"""Generalized bipartite matching (Tarlow et al. 2012, Sec. 6.2).

Binary variables ``y[i, j]`` on an ``n_rows x n_cols`` grid with a score ``unary[i, j]`` for
``y[i, j] = 1`` and hard count constraints: every row has between ``row_counts[0]`` and
``row_counts[1]`` ones and every column between ``col_counts[0]`` and ``col_counts[1]`` ones
(inclusive). The score is

    score(y) = sum_ij unary[i, j] y[i, j] + sum_i f_r(sum_j y[i, j]) + sum_j f_c(sum_i y[i, j]),

with ``f_r``, ``f_c`` equal to 0 inside the ranges and ``-inf`` outside. The paper's experiment uses
rows with 2 or 3 ones and columns with 1 or 2; its paper-to-reviewer form has rows (papers) with 3-4
ones and columns (reviewers) with 6-8. Exact bipartite matching is the case of both ranges ``(1, 1)``,
so computing the marginals is #P-complete in general; loopy BP with cardinality factors is the paper's
approximation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import as_float_array, check_int, check_memory, check_positive, check_rng
from ..factorgraph import CardinalityFactor, FactorGraph, TableFactor

__all__ = ["BipartiteMatching", "bipartite_matching"]


def _check_range(value, name: str, n: int, what: str) -> tuple[int, int]:
    try:
        lo, hi = value
    except (TypeError, ValueError) as err:
        raise ValueError(f"`{name}` must be an inclusive range (lo, hi) of counts; got {value!r}.") from err
    lo = check_int(lo if not isinstance(lo, np.integer) else int(lo), f"{name}[0]")
    hi = check_int(hi if not isinstance(hi, np.integer) else int(hi), f"{name}[1]")
    if not 0 <= lo <= hi <= n:
        raise ValueError(f"`{name}` must satisfy 0 <= lo <= hi <= {n} (the number of {what}); got ({lo}, {hi}).")
    return lo, hi


@dataclass(frozen=True)
class BipartiteMatching:
    """A generalized bipartite matching problem (Tarlow et al. 2012, Sec. 6.2).

    Attributes
    ----------
    unary : ndarray of shape (n_rows, n_cols), read-only
        Score of ``y[i, j] = 1`` (state 0 scores 0).
    row_counts : tuple (lo, hi)
        Inclusive range of the number of ones in every row, ``0 <= lo <= hi <= n_cols``.
    col_counts : tuple (lo, hi)
        Inclusive range of the number of ones in every column, ``0 <= lo <= hi <= n_rows``.

    Notes
    -----
    Variable ``i * n_cols + j`` of :meth:`factor_graph` is ``y[i, j]`` (row-major). Constructing the
    dataclass directly validates the same way :func:`bipartite_matching` does, including feasibility:
    the ranges admit a 0/1 matrix iff ``n_rows * row_lo <= n_cols * col_hi`` and
    ``n_cols * col_lo <= n_rows * row_hi`` (a common total of ones exists; nearly-regular row and column
    sums with that total are then realizable by the Gale-Ryser theorem).
    """

    unary: np.ndarray
    row_counts: tuple
    col_counts: tuple

    def __post_init__(self) -> None:
        unary = as_float_array(self.unary, "unary", ndim=2, allow_neginf=False)
        n_rows, n_cols = unary.shape
        if n_rows < 1 or n_cols < 1:
            raise ValueError(f"`unary` must have at least one row and one column; got shape {unary.shape}.")
        row = _check_range(self.row_counts, "row_counts", n_cols, "columns")
        col = _check_range(self.col_counts, "col_counts", n_rows, "rows")
        if n_rows * row[0] > n_cols * col[1]:
            raise ValueError(
                f"`row_counts` and `col_counts` are infeasible: {n_rows} rows with at least {row[0]} ones need "
                f"{n_rows * row[0]} ones, but {n_cols} columns with at most {col[1]} ones hold only {n_cols * col[1]}."
            )
        if n_cols * col[0] > n_rows * row[1]:
            raise ValueError(
                f"`row_counts` and `col_counts` are infeasible: {n_cols} columns with at least {col[0]} ones need "
                f"{n_cols * col[0]} ones, but {n_rows} rows with at most {row[1]} ones hold only {n_rows * row[1]}."
            )
        unary.flags.writeable = False
        object.__setattr__(self, "unary", unary)
        object.__setattr__(self, "row_counts", row)
        object.__setattr__(self, "col_counts", col)

    @property
    def n_rows(self) -> int:
        return int(self.unary.shape[0])

    @property
    def n_cols(self) -> int:
        return int(self.unary.shape[1])

    @property
    def n_variables(self) -> int:
        return int(self.unary.size)

    def is_feasible(self, y) -> bool:
        """Whether the 0/1 matrix ``y`` (shape ``(n_rows, n_cols)``, or flat row-major) meets every count range."""
        y = np.asarray(y).reshape(self.unary.shape)
        r, c = y.sum(axis=1), y.sum(axis=0)
        (rlo, rhi), (clo, chi) = self.row_counts, self.col_counts
        return bool(np.all((r >= rlo) & (r <= rhi)) and np.all((c >= clo) & (c <= chi)))

    def factor_graph(self) -> FactorGraph:
        """The model as a factor graph.

        Returns
        -------
        FactorGraph
            ``n_rows * n_cols`` binary variables (variable ``i * n_cols + j`` is ``y[i, j]``), one unary
            :class:`~tractable.TableFactor` ``[0, unary[i, j]]`` per variable (in variable order), then
            one :class:`~tractable.CardinalityFactor` per row (rows in order) and one per column, each
            0 on the counts inside its range and ``-inf`` outside.
        """
        n_rows, n_cols = self.unary.shape
        fg = FactorGraph(np.full(n_rows * n_cols, 2))
        fg.add_factors(TableFactor([v], [0.0, u]) for v, u in enumerate(self.unary.ravel().tolist()))
        index = np.arange(n_rows * n_cols).reshape(n_rows, n_cols)
        f_row = np.full(n_cols + 1, -np.inf)
        f_row[self.row_counts[0] : self.row_counts[1] + 1] = 0.0
        f_col = np.full(n_rows + 1, -np.inf)
        f_col[self.col_counts[0] : self.col_counts[1] + 1] = 0.0
        fg.add_factors(CardinalityFactor(index[i], f_row) for i in range(n_rows))
        fg.add_factors(CardinalityFactor(index[:, j], f_col) for j in range(n_cols))
        return fg


def bipartite_matching(
    n_rows: int,
    n_cols: int,
    *,
    row_counts=(2, 3),
    col_counts=(1, 2),
    unary_scale: float = 1.0,
    rng=None,
) -> BipartiteMatching:
    """A random generalized bipartite matching problem (Tarlow et al. 2012, Sec. 6.2).

    The paper draws "random parameter settings" without giving their distribution; here every
    ``unary[i, j]`` is drawn independently from ``N(0, unary_scale^2)``.

    Parameters
    ----------
    n_rows, n_cols : int
        Grid size (e.g. papers x reviewers), each >= 1.
    row_counts : (int, int), default (2, 3)
        Inclusive range of the number of ones in every row (the paper's setting), within ``[0, n_cols]``.
    col_counts : (int, int), default (1, 2)
        Inclusive range of the number of ones in every column (the paper's setting), within ``[0, n_rows]``.
    unary_scale : float, default 1.0
        Standard deviation of the unary scores (>= 0).
    rng : None, int or numpy.random.Generator

    Returns
    -------
    BipartiteMatching
        ``unary`` of shape ``(n_rows, n_cols)`` (read-only), the two ranges and
        :meth:`~BipartiteMatching.factor_graph`.

    Raises
    ------
    ValueError
        A range outside ``[0, n]`` or with ``lo > hi``, or ranges that no 0/1 matrix meets
        (``n_rows * row_lo > n_cols * col_hi`` or ``n_cols * col_lo > n_rows * row_hi``).

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.datasets.bipartite_matching import bipartite_matching
    >>> problem = bipartite_matching(4, 5, row_counts=(2, 3), col_counts=(1, 2), rng=0)
    >>> problem.unary.shape, problem.row_counts, problem.col_counts
    ((4, 5), (2, 3), (1, 2))
    >>> fg = problem.factor_graph()
    >>> fg.n_variables, len(fg.factors)  # 20 unary factors, 4 row and 5 column cardinality factors
    (20, 29)
    >>> y = np.zeros((4, 5), dtype=int)
    >>> y[[0, 0, 1, 1, 2, 2, 3, 3], [0, 1, 2, 3, 4, 0, 1, 2]] = 1
    >>> bool(np.isclose(fg.score(y.ravel()), problem.unary[y == 1].sum()))
    True
    >>> fg.score(np.zeros(20, dtype=int))  # rows with no ones are forbidden
    -inf
    """
    n_rows = check_int(n_rows, "n_rows", minimum=1)
    n_cols = check_int(n_cols, "n_cols", minimum=1)
    check_memory(n_rows * n_cols, 8, ("n_rows", "n_cols"), "unary scores")  # float64
    # check the ranges before drawing, so that a bad range fails the same way whatever the rng
    row = _check_range(row_counts, "row_counts", n_cols, "columns")
    col = _check_range(col_counts, "col_counts", n_rows, "rows")
    unary_scale = check_positive(unary_scale, "unary_scale", strict=False)
    rng = check_rng(rng)
    unary = unary_scale * rng.standard_normal((n_rows, n_cols))
    return BipartiteMatching(unary, row, col)
