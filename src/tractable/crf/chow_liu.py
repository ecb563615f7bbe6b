"""Tree structure learners: the Chow-Liu tree and the conditional Chow-Liu algorithm.

:func:`chow_liu_tree` is the classic algorithm of Chow & Liu (1968): the maximum spanning tree of the
complete graph over the label columns, weighted by their empirical mutual information.

:class:`ConditionalChowLiu` is Alg. 3 of Chechetka & Guestrin (2010): for every candidate edge
``(i, j)`` a multinomial logistic regression estimates ``P(y_i, y_j | E)`` over the ``k**2`` joint
labels (Eq. 9); for an evidence value ``E`` the weight of edge ``(i, j)`` is the mutual information of
that estimate (Eq. 8), and the structure is the maximum spanning tree of these weights, one tree per
evidence value. With ``min_edge_frequency > 0`` it is the regularized variant of the paper's Sec. 6.1:
only the edges that were selected in at least that fraction of the training examples' trees may be
chosen, so a structure may be a forest.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import minimum_spanning_tree
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning as _SklearnConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.utils.validation import check_is_fitted

from .._results import ERROR, MAX_ITER_REACHED, stop_message, warn_stopped
from .._validate import _describe
from ._features import (
    EvidenceMap,
    check_C,
    check_evidence,
    check_features,
    check_labels,
    check_max_iter,
    check_n_states,
    check_rows,
    check_tol,
    one_blas_thread,
)

__all__ = ["ConditionalChowLiu", "chow_liu_tree"]


def _all_pairs(n_labels: int) -> np.ndarray:
    """The candidate edges ``(i, j)``, ``i < j``, in lexicographic order, shape ``(N (N - 1) / 2, 2)``."""
    i, j = np.triu_indices(n_labels, k=1)
    return np.stack([i, j], axis=1).astype(np.int64)


def _mutual_information(joint: np.ndarray) -> np.ndarray:
    """Mutual information of joint tables ``joint[..., a, b]`` (each summing to 1), ``0 log 0 = 0``."""
    pa = joint.sum(axis=-1, keepdims=True)
    pb = joint.sum(axis=-2, keepdims=True)
    positive = joint > 0  # then pa * pb > 0 too
    ratio = np.where(positive, joint, 1.0) / np.where(positive, pa * pb, 1.0)
    terms = np.where(positive, joint * np.log(ratio), 0.0)
    return np.maximum(terms.sum(axis=(-2, -1)), 0.0)


def _max_spanning_tree(n_labels: int, pairs: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Indices into ``pairs`` of a maximum spanning tree of the complete graph.

    ``weights`` must be positive (csgraph reads a zero as "no edge"); every spanning tree has
    ``N - 1`` edges, so negating them makes the minimum spanning tree a maximum one.
    """
    if n_labels < 2:
        return np.zeros(0, dtype=np.int64)
    graph = csr_matrix((-weights, (pairs[:, 0], pairs[:, 1])), shape=(n_labels, n_labels))
    mst = minimum_spanning_tree(graph).tocoo()
    lookup = np.full((n_labels, n_labels), -1, dtype=np.int64)
    lookup[pairs[:, 0], pairs[:, 1]] = np.arange(len(pairs))
    u, v = np.minimum(mst.row, mst.col), np.maximum(mst.row, mst.col)
    return np.sort(lookup[u, v])


def _find(parent: np.ndarray, a: int) -> int:
    """Union-find root of ``a`` (with path halving)."""
    while parent[a] != a:
        parent[a] = parent[parent[a]]
        a = parent[a]
    return int(a)


def chow_liu_tree(Y, *, n_states=None) -> np.ndarray:
    """The Chow-Liu tree of the label columns of ``Y``.

    Parameters
    ----------
    Y : array_like of shape (n, N)
        Labels in ``[0, n_states)``; column ``i`` is variable ``i``.
    n_states : int, optional
        Number of states of every variable (default ``max(2, Y.max() + 1)``).

    Returns
    -------
    ndarray of shape (N - 1, 2), int64
        The edges ``(i, j)``, ``i < j``, of a maximum spanning tree of the complete graph weighted
        by the empirical (plug-in) mutual information ``I(y_i; y_j)``, in lexicographic order.
    """
    n_states = check_n_states(n_states)
    Y, k = check_labels(Y, n_states)
    n, N = Y.shape
    pairs = _all_pairs(N)
    onehot = np.zeros((n, N, k))
    onehot[np.arange(n)[:, None], np.arange(N), Y] = 1.0
    flat = onehot.reshape(n, N * k)
    joint = (flat.T @ flat / n).reshape(N, k, N, k).transpose(0, 2, 1, 3)  # joint[i, j, a, b]
    mi = _mutual_information(joint[pairs[:, 0], pairs[:, 1]])
    # shift to strictly positive weights: the same tree, and csgraph sees every edge
    chosen = _max_spanning_tree(N, pairs, 1.0 + mi)
    return pairs[chosen]


def _fit_recording_convergence(lr: LogisticRegression, phi: np.ndarray, joint: np.ndarray) -> bool:
    """Fit ``lr``; True when it converged. scikit-learn's ConvergenceWarning is recorded, not shown (the
    caller issues one :class:`tractable.ConvergenceWarning` for all edges); any other warning passes on."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", _SklearnConvergenceWarning)
        lr.fit(phi, joint)
    converged = True
    for w in caught:
        if issubclass(w.category, _SklearnConvergenceWarning):
            converged = False
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    return converged


class _ConstantJoint:
    """Stands in for a logistic regression when one joint label is all the training data shows."""

    def __init__(self, label: int) -> None:
        self.classes_ = np.array([label])

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return np.ones((X.shape[0], 1))


class ConditionalChowLiu(BaseEstimator):
    """Evidence-specific tree structures by the conditional Chow-Liu algorithm (Chechetka & Guestrin
    2010, Alg. 3; the regularized variant of Sec. 6.1 with ``min_edge_frequency > 0``).

    Parameters
    ----------
    C : float, default 1.0
        Inverse L2 regularization strength of the edge logistic regressions (scikit-learn's ``C``): each
        minimizes ``-sum_r log P(y_ri, y_rj | E_r) + ||w||^2 / (2 C)`` over its weights ``w`` (the
        intercepts are not penalized), which is ``LogisticRegression``'s ``||w||^2 / 2 + C * loss``
        divided by ``C``. It sets how far structures move from the Chow-Liu tree: as ``C -> 0`` every
        estimate tends to the training frequencies and every structure to the (evidence-free) Chow-Liu
        tree. Noisy estimates give noisy structures, so many evidence features call for a small ``C`` (on
        yeast, 103 features and 1200 rows, ``C`` in 0.001-0.01 gives ESS-CRFs a validation
        log-likelihood 0.3-0.4 nats per example above ``C = 1``; ``benchmarks/ess_crf.py``).
    min_edge_frequency : float in [0, 1], default 0.0
        Sec. 6.1: an edge may be chosen at test time only when it was chosen in at least this
        fraction of the training examples' structures. ``0`` is the unregularized Alg. 3 (every
        structure is a spanning tree); with a positive value structures may be forests.
    n_states : int, optional
        Number of states of every label (default ``max(2, Y.max() + 1)`` in ``fit``).
    features : callable, optional
        ``features(E) -> (n, D)``, the evidence features of the logistic regressions (Eq. 9); default
        ``E`` standardized with the training mean and standard deviation.
    max_iter : int, default 1000
        Iteration budget of each logistic regression (lbfgs).
    tol : float, default 1e-4
        Tolerance of each logistic regression (scikit-learn's ``tol``).

    Attributes
    ----------
    candidate_edges_ : ndarray of shape (M, 2)
        All pairs ``(i, j)``, ``i < j``; the weights and estimators below follow this order.
    estimators_ : list of M fitted ``LogisticRegression``
        ``estimators_[m]`` estimates ``P(y_i, y_j | E)`` over the joint label ``y_i * k + y_j``
        (a constant stand-in when the training data show one joint label only).
    edge_frequency_ : ndarray of shape (M,)
        Fraction of the training examples whose (unregularized) tree contains each candidate.
    allowed_edges_ : ndarray of shape (M,), bool
        Candidates that may be chosen (``edge_frequency_ >= min_edge_frequency``).
    n_labels_, n_states_, n_features_in_ : int
    n_iter_ : int
        The most iterations any edge's logistic regression ran.
    converged_ : bool
        Whether every edge's logistic regression converged; when one did not, ``fit`` issued a
        :class:`tractable.ConvergenceWarning` naming how many (scikit-learn's own warnings are recorded
        here instead of shown).
    """

    def __init__(self, *, C=1.0, min_edge_frequency=0.0, n_states=None, features=None, max_iter=1000, tol=1e-4):
        self.C = C
        self.min_edge_frequency = min_edge_frequency
        self.n_states = n_states
        self.features = features
        self.max_iter = max_iter
        self.tol = tol

    def _check_params(self) -> None:
        check_C(self.C)
        f = self.min_edge_frequency
        if isinstance(f, bool) or not isinstance(f, numbers.Real) or not (0 <= f <= 1):
            raise ValueError(f"`min_edge_frequency` must be a number in [0, 1]; got {_describe(f)}.")
        check_max_iter(self.max_iter)
        check_tol(self.tol)
        check_n_states(self.n_states)
        check_features(self.features)

    def fit(self, E, Y):
        """Fit one logistic regression per candidate edge, then count how often each edge is chosen.

        Parameters
        ----------
        E : array_like of shape (n, d)
            Evidence, finite.
        Y : array_like of shape (n, N)
            Labels in ``[0, n_states)``.

        Returns
        -------
        self
        """
        self._check_params()
        E = check_evidence(E)
        Y, k = check_labels(Y, check_n_states(self.n_states))
        check_rows(E, Y)
        n, N = Y.shape
        self.n_states_ = k
        self.n_labels_ = N
        self.n_features_in_ = E.shape[1]
        self.feature_map_ = EvidenceMap.fit(E, self.features, bias=False)
        phi = self.feature_map_.transform(E)
        self.candidate_edges_ = _all_pairs(N)
        self.estimators_ = []
        n_iter, failed = 0, 0
        with one_blas_thread():
            for i, j in self.candidate_edges_.tolist():
                joint = Y[:, i] * k + Y[:, j]
                labels = np.unique(joint)
                if len(labels) == 1:
                    self.estimators_.append(_ConstantJoint(int(labels[0])))
                    continue
                lr = LogisticRegression(C=float(self.C), max_iter=int(self.max_iter), tol=float(self.tol))
                converged = _fit_recording_convergence(lr, phi, joint)
                self.estimators_.append(lr)
                n_iter = max(n_iter, int(np.max(lr.n_iter_)))
                failed += not converged
        self.n_iter_ = n_iter
        self.converged_ = failed == 0
        if failed:
            detail = (
                f"{failed} of {len(self.candidate_edges_)} edge logistic regressions did not converge; "
                "raise `max_iter` or `tol`, or lower `C`"
            )
            status = MAX_ITER_REACHED if n_iter >= self.max_iter else ERROR
            warn_stopped(stop_message(status, "ConditionalChowLiu: lbfgs", n_iter, detail))
        self.allowed_edges_ = np.ones(len(self.candidate_edges_), dtype=bool)
        chosen = self._choose(phi)
        counts = np.zeros(len(self.candidate_edges_))
        for row in chosen:
            counts[row[row >= 0]] += 1
        self.edge_frequency_ = counts / n
        self.allowed_edges_ = self.edge_frequency_ >= float(self.min_edge_frequency)
        return self

    # -- evidence-specific structures -------------------------------------------------------------

    def _joint_proba(self, phi: np.ndarray) -> np.ndarray:
        """Estimated ``P(y_i, y_j | E)``, shape ``(n, M, k, k)``."""
        k = self.n_states_
        out = np.zeros((phi.shape[0], len(self.estimators_), k * k))
        with one_blas_thread():
            for m, est in enumerate(self.estimators_):
                out[:, m, est.classes_] = est.predict_proba(phi)
        return out.reshape(phi.shape[0], len(self.estimators_), k, k)

    def _weights(self, phi: np.ndarray) -> np.ndarray:
        return _mutual_information(self._joint_proba(phi))

    def _choose(self, phi: np.ndarray) -> np.ndarray:
        """Candidate indices of each row's spanning tree, ``(n, N - 1)``; ``-1`` marks a slot whose
        edge is not allowed (Sec. 6.1), so the allowed entries form that row's forest."""
        N = self.n_labels_
        pairs = self.candidate_edges_
        weights = self._weights(phi)
        # allowed edges outweigh every other one, so Kruskal takes a maximum spanning forest of the
        # allowed edges first; the rest only completes it to a tree and is marked -1
        shifted = np.where(self.allowed_edges_, 2.0 + weights, 1.0)
        out = np.empty((phi.shape[0], max(N - 1, 0)), dtype=np.int64)
        for r in range(phi.shape[0]):
            out[r] = _max_spanning_tree(N, pairs, shifted[r])
        if out.size:
            out[~self.allowed_edges_[out]] = -1
        return out

    def _slots(self, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For validated ``E``: ``(cand (n, N-1), edges (n, N-1, 2))``, a spanning tree per row
        whose slots with ``cand == -1`` are fill-in edges (not part of the structure)."""
        phi = self.feature_map_.transform(E)
        cand = self._choose(phi)
        edges = self._tree_edges(cand)
        return cand, edges

    def _tree_edges(self, cand: np.ndarray) -> np.ndarray:
        """Complete each row's forest (``cand >= 0``) to a spanning tree with fill-in edges."""
        N = self.n_labels_
        edges = np.empty(cand.shape + (2,), dtype=np.int64)
        if cand.size == 0:
            return edges
        valid = cand >= 0
        edges[valid] = self.candidate_edges_[cand[valid]]
        for r in np.flatnonzero(~valid.all(axis=1)):
            parent = np.arange(N)
            for u, v in edges[r, valid[r]].tolist():
                parent[_find(parent, u)] = _find(parent, v)
            roots = sorted({_find(parent, a) for a in range(N)})
            fill = np.stack([roots[:-1], roots[1:]], axis=1)
            edges[r, ~valid[r]] = np.sort(fill, axis=1)
        return edges

    def edge_weights(self, E) -> np.ndarray:
        """The edge weights of Alg. 3: ``I(y_i; y_j)`` under the estimated ``P(y_i, y_j | E)``.

        Returns
        -------
        ndarray of shape (n, M)
            Column ``m`` is candidate ``candidate_edges_[m]``.
        """
        check_is_fitted(self, "estimators_")
        E = check_evidence(E, n_features=self.n_features_in_)
        return self._weights(self.feature_map_.transform(E))

    def predict_structure(self, E) -> tuple[np.ndarray, ...]:
        """The evidence-specific structure of every row of ``E``.

        Returns
        -------
        tuple of ndarray of shape (E_r, 2), int64
            Row ``r``'s edges ``(i, j)``, ``i < j``, in lexicographic order: a maximum spanning tree
            (``E_r = N - 1``) of :meth:`edge_weights`, or, with ``min_edge_frequency > 0``, a maximum
            spanning forest of the allowed edges. ``np.stack`` them when all are trees.
        """
        check_is_fitted(self, "estimators_")
        E = check_evidence(E, n_features=self.n_features_in_)
        cand = self._choose(self.feature_map_.transform(E))
        return tuple(self.candidate_edges_[np.sort(row[row >= 0])] for row in cand)
