"""Linear-chain CRFs over variable-length sequences with sparse features, trained exactly.

:class:`TreeCRF` cannot hold the sequence labelling models of information extraction: it keeps one
evidence vector per example and unary weights per label *position* (no weight tying across
positions), over a fixed number of labels per example, with dense evidence. A named-entity tagger has
sentences of every length, one sparse feature vector per *token* (word identity, shape, affixes,
neighbours' words: hundreds of thousands of indicator columns) and weights shared by all positions.
:class:`ChainCRF` is that model:

    score(y | x) = sum_t <W[:, y_t], x_t> + sum_{t>0} T[y_{t-1}, y_t] + s[y_0] + e[y_{T-1}],
    p(y | x) = exp(score(y | x)) / Z(x),

with ``x_t`` row ``t`` of a sparse ``(n_tokens, n_features)`` matrix, ``W`` the ``(n_features, k)``
state weights, ``T`` the ``(k, k)`` transition weights and ``s``, ``e`` start and end weights (a
constant feature column gives each state a bias). ``fit`` minimizes the penalized negative
conditional log-likelihood

    - sum_n log p(y_n | x_n) + ||w||^2 / (2 C)

(scikit-learn's ``C``, every weight penalized, as the library's other CRFs) by L-BFGS with the exact
gradient, observed minus expected feature counts; the expectations come from forward-backward.

Forward-backward runs in a compiled kernel in probability space with one normalizer per position
(the scaling of Rabiner 1989): ``O(n_tokens k^2)`` multiplications and no exponential in the inner
loop, about 10x fewer operations than log space; a kernel that meets an underflow (scores whose
differences exceed float64's exponent range, never the case for penalized weights) reruns that batch
in log space. MAP decoding is Viterbi in log space (:func:`chain_map`). ``_eliminate`` max-eliminates a chain onto some
of its positions, exactly (what a chain cluster sends the cliques of collective extraction,
:func:`tractable.datasets.conll2003.collective_map`). ``_forward_backward_python`` and
``_eliminate_python`` are the readable twins of the kernels, used by the tests.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._numba import njit
from .._results import ERROR, MAX_ITER_REACHED, TIME_LIMIT_REACHED, stop_message, warn_stopped
from .._validate import _describe, as_float_array
from ._features import check_C, check_max_iter, check_n_states, check_tol

__all__ = ["ChainCRF", "ChainPotentials", "chain_map"]


# --------------------------------------------------------------------------- kernels
@njit
def _fb_scaled(unary, offsets, trans, start, end, marg, pair, logz):  # pragma: no cover - compiled
    """Forward-backward of every sequence in probability space with per-position scaling.

    ``unary (N, k)``: state scores; ``offsets (S + 1,)``: sequence ``s`` is rows
    ``offsets[s]:offsets[s + 1]`` (each non-empty). Writes the node marginals into ``marg (N, k)``,
    adds the expected transition counts of all sequences into ``pair (k, k)`` and writes
    ``log Z`` of each sequence into ``logz (S,)``. Returns False on an underflow (a normalizer that is
    0 or not finite), after which the outputs are garbage and the caller reruns in log space.

    With ``E[t, j] = exp(u[t, j] - m_t)`` (``m_t`` the row maximum, start and end scores folded into
    the first and last rows) and ``A = exp(T - max T)``, the scaled forward messages are
    ``a_t = (a_{t-1} A) * E[t] / c_t`` (``a_t`` sums to 1) and ``log Z = sum_t (m_t + log c_t) +
    (len - 1) max T``; the backward messages ``b_t = A (E[t+1] * b_{t+1}) / c_{t+1}`` give the
    marginals ``a_t * b_t`` and the pairwise marginals ``a_{t-1, i} A[i, j] E[t, j] b_{t, j} / c_t``.
    """
    n_tok, k = unary.shape
    tmax = trans.max()
    A = np.exp(trans - tmax)
    E = np.empty((n_tok, k))
    alpha = np.empty((n_tok, k))
    scale = np.empty(n_tok)
    beta = np.empty(k)
    nxt = np.empty(k)
    for s in range(offsets.shape[0] - 1):
        a, b = offsets[s], offsets[s + 1]
        total = 0.0
        for t in range(a, b):
            m = -np.inf
            for j in range(k):
                v = unary[t, j]
                if t == a:
                    v += start[j]
                if t == b - 1:
                    v += end[j]
                E[t, j] = v
                if v > m:
                    m = v
            c = 0.0
            for j in range(k):
                E[t, j] = np.exp(E[t, j] - m)
                if t == a:
                    x = E[t, j]
                else:
                    acc = 0.0
                    for i in range(k):
                        acc += alpha[t - 1, i] * A[i, j]
                    x = acc * E[t, j]
                alpha[t, j] = x
                c += x
            if not (c > 0.0 and c < np.inf):
                return False
            for j in range(k):
                alpha[t, j] /= c
            scale[t] = c
            total += m + np.log(c)
            if t > a:
                total += tmax
        logz[s] = total
        for j in range(k):
            beta[j] = 1.0
            marg[b - 1, j] = alpha[b - 1, j]
        for t in range(b - 1, a, -1):
            for j in range(k):
                nxt[j] = E[t, j] * beta[j] / scale[t]
            for i in range(k):
                ai = alpha[t - 1, i]
                acc = 0.0
                for j in range(k):
                    w = A[i, j] * nxt[j]
                    acc += w
                    pair[i, j] += ai * w
                beta[i] = acc
            for i in range(k):
                marg[t - 1, i] = alpha[t - 1, i] * beta[i]
    return True


@njit
def _lse_into(vec, k):  # pragma: no cover - compiled
    m = -np.inf
    for j in range(k):
        if vec[j] > m:
            m = vec[j]
    if m == -np.inf:
        return m
    acc = 0.0
    for j in range(k):
        acc += np.exp(vec[j] - m)
    return m + np.log(acc)


@njit
def _fb_log(unary, offsets, trans, start, end, marg, pair, logz):  # pragma: no cover - compiled
    """The same outputs as :func:`_fb_scaled`, in log space (the fallback: no underflow, ``k`` times the
    exponentials). Returns False when a sequence has no labelling of finite score."""
    n_tok, k = unary.shape
    u = np.empty((n_tok, k))
    alpha = np.empty((n_tok, k))
    beta = np.empty((n_tok, k))
    tmp = np.empty(k)
    for s in range(offsets.shape[0] - 1):
        a, b = offsets[s], offsets[s + 1]
        for t in range(a, b):
            for j in range(k):
                v = unary[t, j]
                if t == a:
                    v += start[j]
                if t == b - 1:
                    v += end[j]
                u[t, j] = v
        for j in range(k):
            alpha[a, j] = u[a, j]
        for t in range(a + 1, b):
            for j in range(k):
                for i in range(k):
                    tmp[i] = alpha[t - 1, i] + trans[i, j]
                alpha[t, j] = _lse_into(tmp, k) + u[t, j]
        z = _lse_into(alpha[b - 1], k)
        if not np.isfinite(z):
            return False
        logz[s] = z
        for j in range(k):
            beta[b - 1, j] = 0.0
        for t in range(b - 1, a, -1):
            for i in range(k):
                for j in range(k):
                    tmp[j] = trans[i, j] + u[t, j] + beta[t, j]
                beta[t - 1, i] = _lse_into(tmp, k)
        for t in range(a, b):
            for j in range(k):
                marg[t, j] = np.exp(alpha[t, j] + beta[t, j] - z)
            if t > a:
                for i in range(k):
                    for j in range(k):
                        pair[i, j] += np.exp(alpha[t - 1, i] + trans[i, j] + u[t, j] + beta[t, j] - z)
    return True


@njit
def _viterbi(unary, offsets, trans, out, scores):  # pragma: no cover - compiled
    """Max-product on every sequence (start and end already folded into ``unary``): the best labels into
    ``out (N,)`` and their scores into ``scores (S,)``. Ties go to the lowest state."""
    n_tok, k = unary.shape
    delta = np.empty(k)
    new = np.empty(k)
    back = np.empty((n_tok, k), dtype=np.int64)
    for s in range(offsets.shape[0] - 1):
        a, b = offsets[s], offsets[s + 1]
        for j in range(k):
            delta[j] = unary[a, j]
        for t in range(a + 1, b):
            for j in range(k):
                best, arg = -np.inf, 0
                for i in range(k):
                    v = delta[i] + trans[i, j]
                    if v > best:
                        best, arg = v, i
                new[j] = best + unary[t, j]
                back[t, j] = arg
            for j in range(k):
                delta[j] = new[j]
        best, arg = -np.inf, 0
        for j in range(k):
            if delta[j] > best:
                best, arg = delta[j], j
        scores[s] = best
        out[b - 1] = arg
        for t in range(b - 1, a, -1):
            out[t - 1] = back[t, out[t]]


@njit
def _eliminate_kernel(u, tr, pos, un, pw):  # pragma: no cover - compiled
    """The compiled :func:`_eliminate_python` (outputs ``un (r, k)`` and ``pw (r - 1, k, k)`` preallocated):
    ``O(n k^2)`` outside the kept positions, ``O(k^3)`` per position between two of them."""
    n, k = u.shape
    r = pos.shape[0]
    f = np.empty(k)
    g = np.empty(k)
    for i in range(r):
        for j in range(k):
            un[i, j] = u[pos[i], j]
    if pos[0] > 0:
        for j in range(k):
            f[j] = u[0, j]
        for t in range(1, pos[0] + 1):
            for j in range(k):
                best = -np.inf
                for i in range(k):
                    v = f[i] + tr[i, j]
                    if v > best:
                        best = v
                g[j] = best
            if t < pos[0]:
                for j in range(k):
                    f[j] = g[j] + u[t, j]
        for j in range(k):
            un[0, j] += g[j]
    if pos[r - 1] < n - 1:
        for j in range(k):
            f[j] = u[n - 1, j]
        for t in range(n - 2, pos[r - 1] - 1, -1):
            for i in range(k):
                best = -np.inf
                for j in range(k):
                    v = tr[i, j] + f[j]
                    if v > best:
                        best = v
                g[i] = best
            if t > pos[r - 1]:
                for i in range(k):
                    f[i] = g[i] + u[t, i]
        for i in range(k):
            un[r - 1, i] += g[i]
    m = np.empty((k, k))
    nxt = np.empty((k, k))
    for a in range(r - 1):
        for i in range(k):
            for j in range(k):
                m[i, j] = tr[i, j]
        for t in range(pos[a] + 1, pos[a + 1]):
            for i in range(k):
                for l2 in range(k):
                    best = -np.inf
                    for j in range(k):
                        v = m[i, j] + u[t, j] + tr[j, l2]
                        if v > best:
                            best = v
                    nxt[i, l2] = best
            for i in range(k):
                for j in range(k):
                    m[i, j] = nxt[i, j]
        for i in range(k):
            for j in range(k):
                pw[a, i, j] = m[i, j]


def _eliminate(u: np.ndarray, tr: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_eliminate_python` by the compiled kernel."""
    k = u.shape[1]
    un = np.empty((pos.shape[0], k))
    pw = np.empty((pos.shape[0] - 1, k, k))
    _eliminate_kernel(np.ascontiguousarray(u), np.ascontiguousarray(tr), np.ascontiguousarray(pos, np.int64), un, pw)
    return un, pw


def _eliminate_python(u: np.ndarray, tr: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Max-eliminate every position of one sentence's chain but ``pos`` (increasing): exact.

    Returns ``(unary (r, k), pairwise (r - 1, k, k))`` over the kept positions: ``unary[0]`` gains the
    max-message of the positions before ``pos[0]``, ``unary[-1]`` that of the positions after
    ``pos[-1]``, and ``pairwise[a][i, j]`` is the best score of the positions strictly between
    ``pos[a]`` and ``pos[a + 1]`` (with both transitions) given labels ``i`` and ``j`` there, so that
    ``max`` over the eliminated labels of the chain's score is the kept model's score.
    """
    n = u.shape[0]
    un = u[pos].copy()
    if pos[0] > 0:
        f = u[0]
        for t in range(1, int(pos[0])):
            f = np.max(f[:, None] + tr, axis=0) + u[t]
        un[0] += np.max(f[:, None] + tr, axis=0)
    if pos[-1] < n - 1:
        g = u[n - 1]
        for t in range(n - 2, int(pos[-1]), -1):
            g = np.max(tr + g[None, :], axis=1) + u[t]
        un[-1] += np.max(tr + g[None, :], axis=1)
    pw = np.empty((len(pos) - 1, *tr.shape))
    for a in range(len(pos) - 1):
        m = tr
        for t in range(int(pos[a]) + 1, int(pos[a + 1])):
            m = np.max((m + u[t][None, :])[:, :, None] + tr[None, :, :], axis=1)
        pw[a] = m
    return un, pw


def _forward_backward(unary, offsets, trans, start, end):
    """``(marginals (N, k), expected transition counts (k, k), log Z (S,))`` of every sequence, by the
    scaled kernel, or the log-space kernel where the scaled one underflows."""
    n_tok, k = unary.shape
    marg = np.empty((n_tok, k))
    pair = np.zeros((k, k))
    logz = np.empty(offsets.shape[0] - 1)
    if not _fb_scaled(unary, offsets, trans, start, end, marg, pair, logz):
        pair[:] = 0.0
        if not _fb_log(unary, offsets, trans, start, end, marg, pair, logz):
            raise ValueError("no labelling of some sequence has a finite score (its scores are all -inf).")
    return marg, pair, logz


def _forward_backward_python(unary, offsets, trans, start, end):
    """The readable twin of :func:`_forward_backward`: log space, one sequence and one position at a time."""
    from scipy.special import logsumexp

    n_tok, k = unary.shape
    marg = np.empty((n_tok, k))
    pair = np.zeros((k, k))
    logz = np.empty(len(offsets) - 1)
    for s in range(len(offsets) - 1):
        u = unary[offsets[s] : offsets[s + 1]].copy()
        u[0] += start
        u[-1] += end
        n = len(u)
        alpha = np.empty((n, k))
        beta = np.zeros((n, k))
        alpha[0] = u[0]
        for t in range(1, n):
            alpha[t] = logsumexp(alpha[t - 1][:, None] + trans, axis=0) + u[t]
        for t in range(n - 1, 0, -1):
            beta[t - 1] = logsumexp(trans + (u[t] + beta[t])[None, :], axis=1)
        logz[s] = logsumexp(alpha[-1])
        marg[offsets[s] : offsets[s + 1]] = np.exp(alpha + beta - logz[s])
        for t in range(1, n):
            pair += np.exp(alpha[t - 1][:, None] + trans + (u[t] + beta[t])[None, :] - logz[s])
    return marg, pair, logz


# --------------------------------------------------------------------------- validation
def _check_offsets(lengths, n_rows: int, name: str = "lengths", rows_of: str = "X") -> np.ndarray:
    if isinstance(lengths, (str, bytes)) or np.ndim(lengths) != 1:
        raise ValueError(f"`{name}` must be a 1-D sequence of positive integers; got {_describe(lengths)}.")
    arr = np.asarray(lengths)
    if arr.size == 0 or arr.dtype.kind not in "iu":
        raise ValueError(f"`{name}` must be a non-empty 1-D sequence of positive integers; got {_describe(lengths)}.")
    if arr.min() < 1:
        at = int(np.argmax(arr < 1))
        raise ValueError(f"`{name}` must contain positive integers; got {int(arr[at])} at index {at}.")
    if int(arr.sum()) != n_rows:
        raise ValueError(f"`{name}` must sum to the number of rows of `{rows_of}` ({n_rows}); got {int(arr.sum())}.")
    return np.concatenate([[0], np.cumsum(arr.astype(np.int64))]).astype(np.int64)


def _as_matrix(x, name: str):
    """A 2-D float64 CSR matrix (sparse input) or C-contiguous array (dense input), finite."""
    if sp.issparse(x):
        m = sp.csr_matrix(x, dtype=np.float64)
        if m.ndim != 2:
            raise ValueError(f"`{name}` must be 2-D; got shape {m.shape}.")
        if m.nnz and not np.all(np.isfinite(m.data)):
            raise ValueError(f"`{name}` must contain finite values; got {m.data[~np.isfinite(m.data)][0]}.")
        m.sum_duplicates()
        return m
    arr = as_float_array(x, name, ndim=2, allow_neginf=False)
    return np.ascontiguousarray(arr)


def _check_X(X, lengths, n_features: int | None = None, name: str = "X"):
    """``(matrix (N, D), offsets (S + 1,))`` from a list of per-sequence matrices, or one matrix and
    ``lengths``."""
    if lengths is None:
        if sp.issparse(X) or (isinstance(X, np.ndarray) and X.ndim == 2):
            raise ValueError(
                f"`{name}` is one matrix: give `lengths` (the number of rows of each sequence), or a list of "
                "per-sequence matrices."
            )
        if isinstance(X, (str, bytes)) or not isinstance(X, Sequence | np.ndarray) or len(X) == 0:
            raise ValueError(
                f"`{name}` must be a non-empty list of (n_tokens, n_features) matrices; got {_describe(X)}."
            )
        parts = [_as_matrix(x, f"{name}[{i}]") for i, x in enumerate(X)]
        widths = {p.shape[1] for p in parts}
        if len(widths) != 1:
            raise ValueError(f"`{name}` matrices must all have the same number of columns; got {sorted(widths)}.")
        for i, p in enumerate(parts):
            if p.shape[0] == 0:
                raise ValueError(f"`{name}[{i}]` must have at least one row (token); got shape {p.shape}.")
        offsets = np.concatenate([[0], np.cumsum([p.shape[0] for p in parts])]).astype(np.int64)
        mat = sp.vstack(parts, format="csr") if any(sp.issparse(p) for p in parts) else np.vstack(parts)
    else:
        mat = _as_matrix(X, name)
        offsets = _check_offsets(lengths, mat.shape[0], rows_of=name)
    if n_features is not None and mat.shape[1] != n_features:
        raise ValueError(f"`{name}` must have {n_features} columns (as in fit); got {mat.shape[1]}.")
    if mat.shape[1] == 0:
        raise ValueError(f"`{name}` must have at least one column (feature); got shape {mat.shape}.")
    return mat, offsets


def _check_y(y, offsets: np.ndarray, lengths_given: bool, n_states: int | None, name: str = "y"):
    """Labels as one int64 array (N,) matching ``offsets``, and the number of states."""
    n_tok = int(offsets[-1])
    if lengths_given:
        parts = [y]
    else:
        if isinstance(y, (str, bytes)) or not isinstance(y, Sequence | np.ndarray):
            raise ValueError(f"`{name}` must be a list of 1-D label arrays, one per sequence; got {_describe(y)}.")
        if len(y) != len(offsets) - 1:
            raise ValueError(f"`{name}` must have one label array per sequence ({len(offsets) - 1}); got {len(y)}.")
        parts = list(y)
    flat = []
    for i, p in enumerate(parts):
        arr = np.asarray(p)
        where = name if lengths_given else f"{name}[{i}]"
        if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iub"):
            raise ValueError(f"`{where}` must be a 1-D array of integer labels; got {_describe(p)}.")
        if not lengths_given and arr.size != offsets[i + 1] - offsets[i]:
            raise ValueError(
                f"`{where}` must have one label per token ({int(offsets[i + 1] - offsets[i])}); got {arr.size}."
            )
        flat.append(arr.astype(np.int64))
    lab = np.concatenate(flat) if flat else np.zeros(0, np.int64)
    if lab.size != n_tok:
        raise ValueError(f"`{name}` must have one label per row of `X` ({n_tok}); got {lab.size}.")
    k = max(2, int(lab.max()) + 1) if n_states is None else n_states
    bad = (lab < 0) | (lab >= k)
    if bad.any():
        at = int(np.argmax(bad))
        raise ValueError(f"`{name}` must contain labels in [0, {k - 1}]; got {int(lab[at])} at token {at}.")
    return lab, k


# --------------------------------------------------------------------------- public decoding
def chain_map(unary, transitions, *, lengths=None) -> tuple[np.ndarray, np.ndarray]:
    """MAP labellings of a batch of chains (Viterbi, exact, in log space).

    Sequence ``s`` is rows ``offsets[s]:offsets[s + 1]`` of ``unary`` (``offsets`` the cumulative
    ``lengths``) and scores ``sum_t unary[t, y_t] + sum_{t>0} transitions[y_{t-1}, y_t]``.

    Parameters
    ----------
    unary : array_like of shape (n_tokens, k)
        Node log-potentials (``-inf`` forbids a state); start and end scores belong in the first and
        last row of each sequence (:meth:`ChainCRF.potentials` returns them so).
    transitions : array_like of shape (k, k)
        ``transitions[a, b]``: the score of state ``b`` following state ``a``.
    lengths : sequence of int, optional
        The number of rows of each sequence (positive, summing to ``n_tokens``); default one sequence.

    Returns
    -------
    labels : ndarray of shape (n_tokens,), int64
        The best labelling of every sequence (ties to the lowest state).
    scores : ndarray of shape (n_sequences,)
        Their scores.

    Raises
    ------
    ValueError
        Shapes that do not match, NaN or ``+inf`` scores, bad ``lengths``, or a sequence whose every
        labelling scores ``-inf``.

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.crf import chain_map
    >>> unary = [[1.0, 0.0], [0.0, 0.5], [0.2, 0.0]]  # a chain of two tokens, then one of one token
    >>> labels, scores = chain_map(unary, [[0.0, -1.0], [-1.0, 0.0]], lengths=[2, 1])
    >>> labels.tolist(), scores.round(2).tolist()  # switching to state 1 would cost 1 for a gain of 0.5
    ([0, 0, 0], [1.0, 0.2])
    """
    u = as_float_array(unary, "unary", ndim=2)
    if u.shape[0] == 0:
        raise ValueError(f"`unary` must have at least one row; got shape {u.shape}.")
    k = u.shape[1]
    tr = as_float_array(transitions, "transitions", ndim=2)
    if tr.shape != (k, k):
        raise ValueError(f"`transitions` must have shape ({k}, {k}); got {tr.shape}.")
    offsets = (
        np.array([0, u.shape[0]], dtype=np.int64)
        if lengths is None
        else _check_offsets(lengths, u.shape[0], "lengths", "unary")
    )
    out = np.zeros(u.shape[0], dtype=np.int64)
    scores = np.empty(offsets.shape[0] - 1)
    _viterbi(u, offsets, tr, out, scores)
    if np.isneginf(scores).any():
        s = int(np.argmax(np.isneginf(scores)))
        raise ValueError(f"every labelling of sequence {s} scores -inf (its `unary` and `transitions` forbid all).")
    return out, scores


class ChainPotentials(NamedTuple):
    """The chain model of a batch of sequences (:meth:`ChainCRF.potentials`)."""

    #: (n_tokens, k): state scores, start scores added to each sequence's first row, end to its last
    unary: np.ndarray
    #: (k, k): transition scores, shared by all positions
    transitions: np.ndarray
    #: (n_sequences + 1,): sequence ``s`` is rows ``offsets[s]:offsets[s + 1]``
    offsets: np.ndarray


# --------------------------------------------------------------------------- the estimator
class _Objective:
    """``f(w) = (-sum_n log p(y_n | x_n) + ||w||^2 / (2 C)) / n_sequences`` and its exact gradient."""

    def __init__(self, X, offsets, y, k, C):
        self.X, self.offsets, self.y, self.k, self.C = X, offsets, y, k, C
        self.D = X.shape[1]
        n_tok = y.shape[0]
        onehot = np.zeros((n_tok, k))
        onehot[np.arange(n_tok), y] = 1.0
        self.obs_W = np.asarray(X.T @ onehot)  # (D, k), observed state features
        self.obs_T = np.zeros((k, k))
        inner = np.ones(n_tok, dtype=bool)
        inner[offsets[:-1]] = False
        idx = np.flatnonzero(inner)
        np.add.at(self.obs_T, (y[idx - 1], y[idx]), 1.0)
        self.first, self.last = offsets[:-1], offsets[1:] - 1
        self.obs_s = np.bincount(y[self.first], minlength=k).astype(np.float64)
        self.obs_e = np.bincount(y[self.last], minlength=k).astype(np.float64)
        self.n_seq = offsets.shape[0] - 1
        self.n_eval = 0

    def split(self, w):
        D, k = self.D, self.k
        W = w[: D * k].reshape(D, k)
        T = w[D * k : D * k + k * k].reshape(k, k)
        s = w[D * k + k * k : D * k + k * k + k]
        e = w[D * k + k * k + k :]
        return W, T, s, e

    def n_weights(self) -> int:
        return self.D * self.k + self.k * self.k + 2 * self.k

    def __call__(self, w):
        self.n_eval += 1
        W, T, s, e = self.split(w)
        unary = np.asarray(self.X @ W)
        marg, pair, logz = _forward_backward(np.ascontiguousarray(unary), self.offsets, T, s, e)
        observed = (
            float(np.sum(self.obs_W * W)) + float(np.sum(self.obs_T * T)) + float(self.obs_s @ s + self.obs_e @ e)
        )
        nll = float(logz.sum()) - observed
        grad = np.concatenate(
            [
                (np.asarray(self.X.T @ marg) - self.obs_W).ravel(),
                (pair - self.obs_T).ravel(),
                marg[self.first].sum(axis=0) - self.obs_s,
                marg[self.last].sum(axis=0) - self.obs_e,
            ]
        )
        grad += w / self.C
        value = nll + 0.5 * float(w @ w) / self.C
        return value / self.n_seq, grad / self.n_seq


class _Stop:
    """L-BFGS callback: stop when the objective improved by less than ``tol`` (relative) over the last
    ``period`` iterations (crfsuite's ``delta`` / ``period`` rule), or after ``time_limit`` seconds."""

    def __init__(self, tol, period, time_limit):
        self.tol, self.period, self.time_limit = tol, period, time_limit
        self.history: list[float] = []
        self.t0 = time.perf_counter()
        self.reason = None

    def __call__(self, intermediate_result):
        f = float(intermediate_result.fun)
        self.history.append(f)
        if len(self.history) > self.period:
            old = self.history[-1 - self.period]
            if (old - f) <= self.tol * max(abs(f), 1e-300):
                self.reason = "converged"
                raise StopIteration
        if self.time_limit is not None and time.perf_counter() - self.t0 > self.time_limit:
            self.reason = "time_limit_reached"
            raise StopIteration


class ChainCRF(BaseEstimator):
    """A linear-chain CRF over variable-length sequences with sparse features, trained exactly (L-BFGS, L2).

    Parameters
    ----------
    C : float, default 1.0
        Inverse L2 regularization strength, as scikit-learn's ``LogisticRegression``: ``fit`` minimizes
        ``-sum_n log p(y_n | x_n) + ||w||^2 / (2 C)`` over all weights (state, transition, start, end).
        crfsuite's ``c2`` is ``1 / (2 C)``.
    n_states : int, optional
        Number of states ``k`` (default ``max(2, max label + 1)`` in ``fit``).
    max_iter : int, default 500
        L-BFGS iteration budget.
    tol : float, default 1e-5
        Stop when the objective improved by less than ``tol`` (relative) over the last 10 iterations
        (crfsuite's ``delta`` and ``period``), or when L-BFGS meets its own tests.
    time_limit : float, optional
        Seconds of training after which to stop (``converged_=False``, a ConvergenceWarning).

    Attributes
    ----------
    state_weights_ : ndarray of shape (n_features, k)
        ``W``: the score of state ``a`` at a token is ``x_t @ W[:, a]``.
    transition_weights_ : ndarray of shape (k, k)
        ``T[a, b]``: the score of state ``b`` following ``a``.
    start_weights_, end_weights_ : ndarray of shape (k,)
        Scores of the first and last state of a sequence.
    n_states_, n_features_in_ : int
    n_iter_ : int
        L-BFGS iterations.
    n_evaluations_ : int
        Objective and gradient evaluations (one forward-backward over the training set each).
    converged_ : bool
        Whether the ``tol`` rule (or L-BFGS's own test) stopped it; otherwise a ConvergenceWarning.
    objective_ : float
        The final objective divided by the number of training sequences.
    fit_time_ : float
        Seconds spent in ``fit``.

    Notes
    -----
    Sequences come as a list of ``(T_i, D)`` matrices (sparse or dense) with a list of ``(T_i,)`` label
    arrays, or as one ``(sum T_i, D)`` matrix and one label array with ``lengths=[T_0, T_1, ...]`` (the
    hmmlearn convention). One objective evaluation costs two sparse products (``X @ W`` and
    ``X.T @ G``, ``O(nnz k)``) and one forward-backward, ``O(n_tokens k^2)``; memory is a few
    ``n_features x k`` arrays (L-BFGS keeps 10 pairs of them).

    Examples
    --------
    >>> import numpy as np
    >>> from tractable.crf import ChainCRF
    >>> X = [np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), np.array([[0.0, 1.0]])]
    >>> y = [np.array([0, 1, 1]), np.array([1])]
    >>> crf = ChainCRF(C=10.0).fit(X, y)
    >>> [p.tolist() for p in crf.predict(X)]
    [[0, 1, 1], [1]]
    """

    def __init__(self, *, C=1.0, n_states=None, max_iter=500, tol=1e-5, time_limit=None):
        self.C = C
        self.n_states = n_states
        self.max_iter = max_iter
        self.tol = tol
        self.time_limit = time_limit

    def fit(self, X, y, *, lengths=None):
        """Learn the weights by L-BFGS on the exact penalized conditional log-likelihood.

        Parameters
        ----------
        X : list of (T_i, n_features) matrices, or one (n_tokens, n_features) matrix with ``lengths``
            Token features, sparse (``scipy.sparse``) or dense, finite.
        y : list of (T_i,) int arrays, or one (n_tokens,) int array with ``lengths``
            Labels in ``[0, n_states)``.
        lengths : sequence of int, optional
            Rows per sequence when ``X`` and ``y`` are single arrays.

        Returns
        -------
        self
        """
        t0 = time.perf_counter()
        C = check_C(self.C)
        max_iter = check_max_iter(self.max_iter)
        tol = check_tol(self.tol)
        n_states = check_n_states(self.n_states)
        if self.time_limit is not None and (
            isinstance(self.time_limit, bool)
            or not isinstance(self.time_limit, numbers.Real)
            or not self.time_limit > 0
        ):
            raise ValueError(f"`time_limit` must be None or a number > 0; got {_describe(self.time_limit)}.")
        mat, offsets = _check_X(X, lengths)
        labels, k = _check_y(y, offsets, lengths is not None, n_states)
        objective = _Objective(mat, offsets, labels, k, C)
        stop = _Stop(tol, 10, self.time_limit)
        # no BLAS thread limit here (the other CRFs set one): the products are sparse, and threadpoolctl's
        # context costs about 12 ms per use, more than a whole prediction
        res = minimize(
            objective,
            np.zeros(objective.n_weights()),
            jac=True,
            method="L-BFGS-B",
            callback=stop,
            options={"maxiter": max_iter, "gtol": 1e-10, "ftol": 1e3 * np.finfo(float).eps, "maxcor": 10},
        )
        W, T, s, e = objective.split(res.x)
        self.state_weights_ = W.copy()
        self.transition_weights_ = T.copy()
        self.start_weights_ = s.copy()
        self.end_weights_ = e.copy()
        self.n_states_ = k
        self.n_features_in_ = mat.shape[1]
        self.n_iter_ = int(res.nit)
        self.n_evaluations_ = objective.n_eval
        self.objective_ = float(res.fun)
        if stop.reason == "converged" or res.status == 0:
            self.converged_ = True
        else:
            self.converged_ = False
            status = MAX_ITER_REACHED if res.status == 1 else ERROR
            if stop.reason == "time_limit_reached":
                status = TIME_LIMIT_REACHED
                detail = f"time limit of {self.time_limit} s reached"
            else:
                detail = f"{res.message}; raise `max_iter` or `tol`"
            warn_stopped(stop_message(status, "ChainCRF: L-BFGS-B", self.n_iter_, detail), stacklevel=2)
        self.fit_time_ = time.perf_counter() - t0
        return self

    # ------------------------------------------------------------------ inference
    def _fitted(self, X, lengths):
        check_is_fitted(self, "state_weights_")
        return _check_X(X, lengths, self.n_features_in_)

    def _split_out(self, arr, offsets, lengths):
        return arr if lengths is not None else [arr[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]

    def potentials(self, X, *, lengths=None) -> ChainPotentials:
        """The chain model of every sequence: node scores (start and end folded in) and transitions.

        Parameters
        ----------
        X : list of (T_i, n_features) matrices, or one matrix with ``lengths``
        lengths : sequence of int, optional

        Returns
        -------
        ChainPotentials
            ``unary (n_tokens, k)``, ``transitions (k, k)``, ``offsets (n_sequences + 1,)``; the score of a
            labelling of sequence ``s`` is ``sum_t unary[t, y_t] + sum_{t>0} transitions[y_{t-1}, y_t]`` over
            its rows, as :func:`chain_map` and a chain of ``TableFactor`` take it.
        """
        mat, offsets = self._fitted(X, lengths)
        unary = np.array(mat @ self.state_weights_, dtype=np.float64)
        unary[offsets[:-1]] += self.start_weights_
        unary[offsets[1:] - 1] += self.end_weights_
        return ChainPotentials(unary, self.transition_weights_.copy(), offsets)

    def predict(self, X, *, lengths=None):
        """The MAP labelling of every sequence (Viterbi).

        Returns
        -------
        list of ndarray of shape (T_i,), int64, or one (n_tokens,) array when ``lengths`` is given
        """
        pot = self.potentials(X, lengths=lengths)
        out = np.zeros(pot.unary.shape[0], dtype=np.int64)
        _viterbi(pot.unary, pot.offsets, pot.transitions, out, np.empty(pot.offsets.shape[0] - 1))
        return self._split_out(out, pot.offsets, lengths)

    def predict_marginals(self, X, *, lengths=None):
        """Exact marginals ``P(y_t = a | x)`` of every token (forward-backward).

        Returns
        -------
        list of ndarray of shape (T_i, k), or one (n_tokens, k) array when ``lengths`` is given
        """
        mat, offsets = self._fitted(X, lengths)
        unary = np.ascontiguousarray(mat @ self.state_weights_, dtype=np.float64)
        marg, _, _ = _forward_backward(unary, offsets, self.transition_weights_, self.start_weights_, self.end_weights_)
        return self._split_out(marg, offsets, lengths)

    def predict_proba(self, X, *, lengths=None):
        """Same as :meth:`predict_marginals`."""
        return self.predict_marginals(X, lengths=lengths)

    def log_likelihood(self, X, y, *, lengths=None) -> np.ndarray:
        """Conditional log-likelihood ``log p(y_n | x_n)`` of every sequence (no penalty).

        Returns
        -------
        ndarray of shape (n_sequences,)
        """
        mat, offsets = self._fitted(X, lengths)
        labels, _ = _check_y(y, offsets, lengths is not None, self.n_states_)
        unary = np.ascontiguousarray(mat @ self.state_weights_, dtype=np.float64)
        _, _, logz = _forward_backward(unary, offsets, self.transition_weights_, self.start_weights_, self.end_weights_)
        per_tok = unary[np.arange(labels.shape[0]), labels]
        inner = np.ones(labels.shape[0], dtype=bool)
        inner[offsets[:-1]] = False
        trans = np.where(inner[1:], self.transition_weights_[labels[:-1], labels[1:]], 0.0)
        per_tok[1:] += trans
        seq = np.add.reduceat(per_tok, offsets[:-1])
        seq += self.start_weights_[labels[offsets[:-1]]] + self.end_weights_[labels[offsets[1:] - 1]]
        return seq - logz

    def score(self, X, y, *, lengths=None) -> float:
        """Mean conditional log-likelihood per sequence (higher is better)."""
        return float(np.mean(self.log_likelihood(X, y, lengths=lengths)))
