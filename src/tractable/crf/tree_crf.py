"""Tree CRFs with a fixed structure and with evidence-specific structures (Chechetka & Guestrin 2010).

Both models are

    p(Y | E) ∝ exp( sum_i <W_u[i, y_i], phi(E)> + sum_{(i, j) in T(E)} <W_p[ij, y_i, y_j], phi(E)> ),

with ``phi(E)`` the evidence feature vector with a leading 1 (``_features.py``): unary indicator
features times ``phi`` and pairwise indicator features (``k x k`` per edge) times ``phi``, the
logistic-regression style of Eq. 9. :class:`TreeCRF` uses one tree ``T`` for every example;
:class:`ESSCRF` (Eq. 5) chooses ``T(E)`` per example with the conditional Chow-Liu algorithm (Alg. 3)
and keeps one weight block ``W_p[ij]`` per candidate edge ``(i, j)``, used only by the examples whose
tree contains that edge (the indicator of Eq. 5 and 6).

The weights are learned exactly: L-BFGS on the concave conditional log-likelihood with the exact
gradient of Eq. 6 (observed minus expected features, the expectations from exact tree marginals of
:func:`tractable.bp.tree_marginals_batch`) and an L2 penalty. As in scikit-learn's
``LogisticRegression``, ``C`` is the inverse regularization strength: the objective minimized is

    - sum_n log p(Y_n | E_n) + ||w||^2 / (2 C)

(every weight is penalized, biases included, so the optimum is unique and finite even for labels
that never occur in training).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from .. import bp as _bp
from .._validate import _describe, resolve_method
from ..bp.tree import CompiledForest, forest_marginals
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
    lbfgs_outcome,
    one_blas_thread,
)
from .chow_liu import ConditionalChowLiu, chow_liu_tree

__all__ = ["ESSCRF", "METHODS", "TreeCRF"]


# --------------------------------------------------------------------------- the shared core
class _TreeMarginals(NamedTuple):
    marginals: np.ndarray  # (n, N, k)
    edge_marginals: np.ndarray  # (n, T, k, k)
    log_partition: np.ndarray  # (n,)


class _Design:
    """One training (or prediction) batch with its structures, in the arrays the core works on.

    ``cand[n, t]`` is the candidate edge (a block of ``W_p``) in slot ``t`` of row ``n``'s tree,
    ``-1`` for a fill-in slot (an edge with zero scores that completes a forest to a tree, which
    changes no probability); ``edges[n, t]`` is that slot's edge.
    """

    def __init__(
        self,
        phi: np.ndarray,
        phi_pair: np.ndarray,
        cand: np.ndarray,
        edges: np.ndarray,
        n_labels: int,
        n_states: int,
        M: int,
    ):
        self.phi, self.phi_pair = phi, phi_pair
        self.cand = cand
        self.edges = edges
        self.n, self.D = phi.shape
        self.Dp = phi_pair.shape[1]
        self.N, self.k, self.M = n_labels, n_states, M
        self.T = cand.shape[1]
        self.valid = cand >= 0
        self.all_valid = bool(self.valid.all())
        # fixed structure: cand[n] = 0 .. M-1 in every row, so no gather / scatter is needed
        self.identity = self.all_valid and self.T == M and bool((cand == np.arange(M)).all())
        self.rows = np.arange(self.n)[:, None]
        self._rooted = None

    def n_weights(self) -> int:
        return self.N * self.k * self.D + self.M * self.k * self.k * self.Dp

    def split(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cut = self.N * self.k * self.D
        return w[:cut].reshape(self.N * self.k, self.D), w[cut:].reshape(self.M * self.k * self.k, self.Dp)

    def scores(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``unary (n, N, k)`` and ``pairwise (n, T, k, k)`` log-potentials of every row."""
        wu, wp = self.split(w)
        unary = (self.phi @ wu.T).reshape(self.n, self.N, self.k)
        every = (self.phi_pair @ wp.T).reshape(self.n, self.M, self.k, self.k)
        if self.identity:
            return unary, every
        pairwise = every[self.rows, np.where(self.valid, self.cand, 0)]
        if not self.all_valid:
            pairwise[~self.valid] = 0.0
        return unary, pairwise

    def marginals(self, w: np.ndarray):
        """``(unary, pairwise, marginals)``; the marginals have ``marginals`` ``(n, N, k)``,
        ``edge_marginals`` ``(n, T, k, k)`` and ``log_partition`` ``(n,)``."""
        unary, pairwise = self.scores(w)
        return unary, pairwise, self._engine(unary, pairwise)

    def _engine(self, unary: np.ndarray, pairwise: np.ndarray):
        """Exact tree marginals of all rows at once.

        The structures are fixed for the life of a design (every L-BFGS step of a fit), so the union
        of the rows' trees is validated and rooted once (:class:`tractable.bp.tree.CompiledForest`) and
        every step calls the unchecked sum-product core :func:`tractable.bp.tree.forest_marginals`, as
        the library's grammar has internal callers do (the public
        :func:`tractable.bp.tree_marginals_batch` validates and roots all ``n`` forests on every call,
        4x the cost here).
        """
        if self._rooted is None:
            self._rooted = CompiledForest(list(self.edges), self.N)
        node_m, edge_m, logz = forest_marginals(self._rooted, unary, pairwise.reshape(self.n * self.T, self.k, self.k))
        return _TreeMarginals(node_m, edge_m.reshape(self.n, self.T, self.k, self.k), logz)

    def scatter(self, slot: np.ndarray) -> np.ndarray:
        """Per-slot ``(n, T, k, k)`` values into per-candidate ``(n, M, k, k)`` (zeros elsewhere)."""
        if self.identity:
            return slot
        full = np.zeros((self.n, self.M, self.k, self.k))
        r, t = np.nonzero(self.valid)
        full[r, self.cand[r, t]] = slot[r, t]
        return full


class _Objective:
    """``f(w) = (-sum_n log p(Y_n | E_n) + ||w||^2 / (2 C)) / n`` and its exact gradient (Eq. 6)."""

    def __init__(self, design: _Design, Y: np.ndarray, C: float):
        d = design
        self.d, self.Y, self.C = d, Y, C
        self.onehot = np.zeros((d.n, d.N, d.k))
        self.onehot[d.rows, np.arange(d.N), Y] = 1.0
        self.pair_onehot = np.zeros((d.n, d.T, d.k, d.k))
        if d.T:
            ya = np.take_along_axis(Y, d.edges[:, :, 0], axis=1)
            yb = np.take_along_axis(Y, d.edges[:, :, 1], axis=1)
            self.pair_onehot[d.rows, np.arange(d.T), ya, yb] = 1.0
            self.pair_onehot[~d.valid] = 0.0

    def log_likelihood(self, w: np.ndarray) -> np.ndarray:
        """Per-row conditional log-likelihood ``log p(Y_n | E_n)``, shape ``(n,)``."""
        unary, pairwise, res = self.d.marginals(w)
        return self._ll(unary, pairwise, res)

    def _ll(self, unary, pairwise, res) -> np.ndarray:
        observed = (unary * self.onehot).sum(axis=(1, 2)) + (pairwise * self.pair_onehot).sum(axis=(1, 2, 3))
        return observed - np.asarray(res.log_partition)

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        d = self.d
        unary, pairwise, res = d.marginals(w)
        ll = self._ll(unary, pairwise, res).sum()
        ru = (self.onehot - np.asarray(res.marginals)).reshape(d.n, d.N * d.k)
        grad_u = ru.T @ d.phi
        if d.T:
            rp = self.pair_onehot - np.asarray(res.edge_marginals)
            if not d.all_valid:
                rp[~d.valid] = 0.0
            grad_p = d.scatter(rp).reshape(d.n, d.M * d.k * d.k).T @ d.phi_pair
        else:
            grad_p = np.zeros((d.M * d.k * d.k, d.Dp))
        grad = -np.concatenate([grad_u.ravel(), grad_p.ravel()]) + w / self.C
        value = -ll + 0.5 * float(w @ w) / self.C
        return value / d.n, grad / d.n


def _predict_max_marginal(model: _TreeCRFBase, design: _Design, w: np.ndarray) -> np.ndarray:
    """Each label's most probable state under its exact marginal."""
    _, _, res = design.marginals(w)
    return np.argmax(np.asarray(res.marginals), axis=2).astype(np.int64)


def _predict_map(model: _TreeCRFBase, design: _Design, w: np.ndarray) -> np.ndarray:
    """The jointly most probable labelling of each row (exact max-product on its tree)."""
    unary, pairwise = design.scores(w)
    out = np.empty((design.n, design.N), dtype=np.int64)
    for r in range(design.n):
        out[r] = _bp.tree_map(unary[r], design.edges[r], pairwise[r]).assignment
    return out


#: ``predict(E, method=...)``: ``"map"`` (joint maximizer) or ``"max_marginal"`` (per-label maximizer)
METHODS: dict[str, Callable] = {"map": _predict_map, "max_marginal": _predict_max_marginal}


class _TreeCRFBase(BaseEstimator):
    """Everything but the structure: validation, L-BFGS, prediction (scikit-learn conventions)."""

    # subclasses: _fit_structure(E, Y, k) -> M, _slots(E) -> (cand, edges)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        return tags

    def fit(self, E, Y):
        """Learn the structure (if any is to be learned), then the weights, exactly.

        Parameters
        ----------
        E : array_like of shape (n, d)
            Evidence, finite.
        Y : array_like of shape (n, N)
            Labels in ``[0, n_states)``, column ``i`` is variable ``i``.

        Returns
        -------
        self
        """
        C = check_C(self.C)
        max_iter = check_max_iter(self.max_iter)
        tol = check_tol(self.tol)
        n_states = check_n_states(self.n_states)
        check_features(self.features)
        if not isinstance(self.pairwise_evidence, bool | np.bool_):
            raise ValueError(f"`pairwise_evidence` must be True or False; got {_describe(self.pairwise_evidence)}.")
        self._check_structure_param()
        E = check_evidence(E)
        Y, k = check_labels(Y, n_states)
        check_rows(E, Y)
        self.n_states_ = k
        self.n_labels_ = Y.shape[1]
        self.n_features_in_ = E.shape[1]
        self.feature_map_ = EvidenceMap.fit(E, self.features, bias=True)
        with one_blas_thread():
            M = self._fit_structure(E, Y, k)
            design = self._design(E, M)
            objective = _Objective(design, Y, C)
            res = minimize(
                objective,
                np.zeros(design.n_weights()),
                jac=True,
                method="L-BFGS-B",
                options={"maxiter": max_iter, "gtol": tol, "ftol": 1e3 * np.finfo(float).eps},
            )
        wu, wp = design.split(res.x)
        self.unary_weights_ = wu.reshape(design.N, k, design.D).copy()
        self.pairwise_weights_ = wp.reshape(M, k, k, design.Dp).copy()
        self.converged_, self.n_iter_ = lbfgs_outcome(res, f"{type(self).__name__}: L-BFGS-B")
        self.objective_ = float(res.fun)
        return self

    def _weights(self) -> np.ndarray:
        return np.concatenate([self.unary_weights_.ravel(), self.pairwise_weights_.ravel()])

    def _design(self, E: np.ndarray, M: int) -> _Design:
        cand, edges = self._slots(E)
        phi = self.feature_map_.transform(E)
        phi_pair = phi if self.pairwise_evidence else phi[:, :1]
        return _Design(phi, phi_pair, cand, edges, self.n_labels_, self.n_states_, M)

    def _fitted_design(self, E) -> _Design:
        check_is_fitted(self, "unary_weights_")
        E = check_evidence(E, n_features=self.n_features_in_)
        return self._design(E, self.pairwise_weights_.shape[0])

    def predict(self, E, *, method: str = "map") -> np.ndarray:
        """The labels of every row of ``E``.

        Parameters
        ----------
        E : array_like of shape (n_samples, d)
        method : {"map", "max_marginal"}, default "map"
            ``"map"``: the jointly most probable labelling (exact max-product on the row's tree);
            ``"max_marginal"``: each label's most probable state (:data:`METHODS`).

        Returns
        -------
        ndarray of shape (n_samples, N), int64
        """
        fn = resolve_method(method, METHODS)
        design = self._fitted_design(E)
        with one_blas_thread():
            return fn(self, design, self._weights())

    def predict_marginals(self, E) -> np.ndarray:
        """Exact marginals ``P(y_i = a | E)`` of every row.

        Parameters
        ----------
        E : array_like of shape (n_samples, d)

        Returns
        -------
        ndarray of shape (n_samples, N, k)
            ``[r, i]`` is label ``i``'s distribution given row ``r``; ``[..., 1]`` is ``P(y_i = 1)`` for
            binary labels.
        """
        design = self._fitted_design(E)
        with one_blas_thread():
            _, _, res = design.marginals(self._weights())
        return np.array(res.marginals)

    def predict_proba(self, E) -> np.ndarray:
        """Same as :meth:`predict_marginals`: shape ``(n_samples, N, k)``; ``[:, :, 1]`` is ``P(y_i = 1)``
        for binary labels."""
        return self.predict_marginals(E)

    def log_likelihood(self, E, Y) -> np.ndarray:
        """Conditional log-likelihood of every row (no penalty).

        Parameters
        ----------
        E : array_like of shape (n_samples, d)
        Y : array_like of shape (n_samples, N)

        Returns
        -------
        ndarray of shape (n_samples,)
            ``log p(Y_r | E_r)``, exact.
        """
        design = self._fitted_design(E)
        Y, _ = check_labels(Y, self.n_states_, n_labels=self.n_labels_)
        check_rows(design.phi, Y)
        with one_blas_thread():
            return _Objective(design, Y, 1.0).log_likelihood(self._weights())

    def score(self, E, Y) -> float:
        """Mean conditional log-likelihood ``mean_r log p(Y_r | E_r)``: the mean of :meth:`log_likelihood`
        (higher is better).

        Returns
        -------
        float
        """
        return float(np.mean(self.log_likelihood(E, Y)))

    def potentials(self, E) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The tree model of every row: ``(unary (n, N, k), edges (n, T, 2), pairwise (n, T, k, k))``,
        log-potentials as :func:`tractable.bp.tree_marginals_batch` takes them.

        For an :class:`ESSCRF` whose structure may be a forest, the forest is completed to a tree
        by edges whose ``pairwise`` scores are 0 (they change no probability).
        """
        design = self._fitted_design(E)
        unary, pairwise = design.scores(self._weights())
        return np.array(unary), design.edges.copy(), np.array(pairwise)


class TreeCRF(_TreeCRFBase):
    """A tree-structured CRF with one fixed structure, weights learned exactly (L-BFGS).

    Parameters
    ----------
    tree : array_like of shape (E, 2), optional
        The edges of a tree (or forest) over the ``N`` label columns; ``None`` learns the
        :func:`chow_liu_tree` of the training labels in ``fit``.
    C : float, default 1.0
        Inverse L2 regularization strength, as scikit-learn's ``LogisticRegression``: ``fit`` minimizes
        ``-sum_r log p(Y_r | E_r) + ||w||^2 / (2 C)`` over all weights ``w`` (biases included, so the
        optimum is unique and finite even for a state never seen in training). Smaller is stronger.
    n_states : int, optional
        Number of states of every label (default ``max(2, Y.max() + 1)`` in ``fit``).
    features : callable, optional
        ``features(E) -> (n, D)``: the evidence feature vector ``phi(E)`` multiplying every label
        indicator (a 1 is prepended as bias); default ``E`` standardized with the training mean and
        standard deviation.
    max_iter : int, default 500
        L-BFGS iteration budget.
    tol : float, default 1e-5
        L-BFGS gradient tolerance (``gtol``) on the objective divided by ``n_samples``.
    pairwise_evidence : bool, default True
        Pairwise features are the label-pair indicators times ``phi(E)``; ``False``: the indicators alone.

    Attributes
    ----------
    tree_ : ndarray of shape (E, 2)
        The structure used.
    unary_weights_ : ndarray of shape (N, k, D + 1)
        ``W_u[i, a]``, the weights of ``[y_i = a] * phi(E)``.
    pairwise_weights_ : ndarray of shape (E, k, k, D + 1)
        ``W_p[e, a, b]``, the weights of ``[y_u = a, y_v = b] * phi(E)`` for ``tree_[e] = (u, v)``.
    n_labels_, n_states_, n_features_in_ : int
    n_iter_ : int
        L-BFGS iterations.
    converged_ : bool
        Whether L-BFGS met ``tol`` (otherwise a :class:`tractable.ConvergenceWarning` was issued).
    objective_ : float
        The final objective divided by ``n_samples``.
    """

    def __init__(
        self, tree=None, *, C=1.0, n_states=None, features=None, max_iter=500, tol=1e-5, pairwise_evidence=True
    ):
        self.tree = tree
        self.C = C
        self.n_states = n_states
        self.features = features
        self.max_iter = max_iter
        self.tol = tol
        self.pairwise_evidence = pairwise_evidence

    def _check_structure_param(self) -> None:
        pass

    def _fit_structure(self, E: np.ndarray, Y: np.ndarray, k: int) -> int:
        from .._forest import check_forest

        if self.tree is None:
            self.tree_ = chow_liu_tree(Y, n_states=k)
        else:
            self.tree_ = check_forest(self.tree, Y.shape[1], "tree")
        return self.tree_.shape[0]

    def _slots(self, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n, m = E.shape[0], self.tree_.shape[0]
        cand = np.broadcast_to(np.arange(m, dtype=np.int64), (n, m))
        edges = np.ascontiguousarray(np.broadcast_to(self.tree_, (n, m, 2)))
        return cand, edges


class ESSCRF(_TreeCRFBase):
    """A tree CRF with evidence-specific structure (Chechetka & Guestrin 2010, Eq. 5, Alg. 2).

    Each example's tree is chosen from its evidence by ``structure`` (a :class:`ConditionalChowLiu`);
    every candidate edge ``(i, j)`` has its own pairwise weights, which enter an example's model only
    when its tree contains that edge. Given the structures the conditional log-likelihood is concave
    and its gradient (Eq. 6) exact, so the weights are learned exactly.

    Parameters
    ----------
    structure : ConditionalChowLiu, optional
        The structure learner (cloned and fit in ``fit``); default ``ConditionalChowLiu()``. Use
        ``ConditionalChowLiu(min_edge_frequency=...)`` for the regularized variant of Sec. 6.1.
    C, n_states, features, max_iter, tol, pairwise_evidence
        As in :class:`TreeCRF` (the objective penalizes every candidate edge's weights).

    Attributes
    ----------
    structure_ : ConditionalChowLiu
        The fitted structure learner.
    candidate_edges_ : ndarray of shape (M, 2)
        All pairs ``(i, j)``, ``i < j``.
    unary_weights_ : ndarray of shape (N, k, D + 1)
    pairwise_weights_ : ndarray of shape (M, k, k, D + 1)
        ``W_p[m, a, b]`` for candidate ``candidate_edges_[m]``.
    n_labels_, n_states_, n_features_in_, n_iter_, converged_, objective_
        As in :class:`TreeCRF` (the weights' fit; ``structure_.converged_`` is the structure learner's).
    """

    def __init__(
        self, structure=None, *, C=1.0, n_states=None, features=None, max_iter=500, tol=1e-5, pairwise_evidence=True
    ):
        self.structure = structure
        self.C = C
        self.n_states = n_states
        self.features = features
        self.max_iter = max_iter
        self.tol = tol
        self.pairwise_evidence = pairwise_evidence

    def _check_structure_param(self) -> None:
        if self.structure is not None and not isinstance(self.structure, ConditionalChowLiu):
            raise ValueError(
                f"`structure` must be None or a ConditionalChowLiu instance; got {_describe(self.structure)}."
            )

    def _fit_structure(self, E: np.ndarray, Y: np.ndarray, k: int) -> int:
        learner = ConditionalChowLiu() if self.structure is None else clone(self.structure)
        if learner.n_states is None:
            learner.set_params(n_states=k)
        elif learner.n_states != k:
            raise ValueError(
                f"`structure` must have the CRF's number of states; got n_states={learner.n_states!r}, not {k}."
            )
        self.structure_ = learner.fit(E, Y)
        self.candidate_edges_ = self.structure_.candidate_edges_
        return self.candidate_edges_.shape[0]

    def _slots(self, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.structure_._slots(E)

    def predict_structure(self, E) -> tuple[np.ndarray, ...]:
        """Each row's tree (or forest), as :meth:`ConditionalChowLiu.predict_structure`."""
        check_is_fitted(self, "structure_")
        return self.structure_.predict_structure(E)
