"""The fully connected pairwise CRF over binary labels of Lampert (2012, Sec. 4.1), fit by exact likelihood.

:class:`MultiLabelCRF` is the model whose marginals the paper's multi-label experiment predicts (on the
yeast data, :func:`tractable.datasets.yeast_split`): a CRF over the ``L`` binary labels with every pair
of labels coupled,

    p(y | E) ∝ exp( sum_i (<w_i, E~> + b_i) y_i + sum_{i<j} eta_ij y_i y_j ),

with ``E~`` the evidence standardized by the training mean and standard deviation. The paper writes it
with energies ``-score``; here, as everywhere in the library, the tables are scores. It is fit by L-BFGS
on the exact conditional log-likelihood: with ``L = 14`` labels the ``2**14`` label vectors are
enumerated, and the enumeration is factorized into two halves of the labels, so that the partition
function of every example is ``ea @ K @ eb`` with ``ea`` ``(2**7,)``, ``eb`` ``(2**7,)`` and the
cross-half interaction table ``K`` ``(2**7, 2**7)`` shared by all examples: a few matrix products per
L-BFGS step instead of ``n * 2**14`` exponentials. A plain enumeration of all ``2**L`` label vectors
(:func:`_stats_direct`) is the readable twin the tests compare against, and the fallback when the
two-block form could underflow.
"""

from __future__ import annotations

import functools
import numbers
import warnings

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validate import _describe, resolve_method
from ..factorgraph import FactorGraph, TableFactor
from ._features import (
    check_C,
    check_evidence,
    check_labels,
    check_max_iter,
    check_rows,
    check_tol,
    lbfgs_outcome,
    one_blas_thread,
)

__all__ = ["MAX_LABELS", "MultiLabelCRF"]

#: largest number of labels :class:`MultiLabelCRF` enumerates (``2**20`` label vectors)
MAX_LABELS = 20

#: the two-block partition function is used while the cross-block scores span less than this
_MAX_CROSS_RANGE = 500.0

#: label vectors scored at once by the MAP enumeration (rows x ``2**L``)
_MAP_CELLS = 1 << 22


# ----------------------------------------------------------------------------- enumeration cores
@functools.lru_cache(maxsize=8)
def _states(k: int) -> np.ndarray:
    """All ``2**k`` binary vectors as a ``(2**k, k)`` float array; row ``s`` has bit ``i`` of ``s`` in column ``i``."""
    s = ((np.arange(2**k)[:, None] >> np.arange(k)) & 1).astype(np.float64)
    s.flags.writeable = False
    return s


def _pair_index(n_labels: int) -> np.ndarray:
    """The label pairs ``(i, j)``, ``i < j``, in row-major order: shape ``(L(L-1)/2, 2)``."""
    return np.stack(np.triu_indices(n_labels, 1), axis=1)


def _eta_matrix(eta: np.ndarray, n_labels: int) -> np.ndarray:
    """Strictly upper-triangular ``(L, L)`` matrix with ``E[i, j] = eta_ij``."""
    E = np.zeros((n_labels, n_labels))
    E[np.triu_indices(n_labels, 1)] = eta
    return E


def _stats_direct(U: np.ndarray, eta: np.ndarray, batch: int = 256):
    """Readable twin: ``log Z``, marginals and the summed pair expectations by enumerating all ``2**L`` vectors.

    ``U`` is ``(n, L)`` (the unary scores of every example); returns ``log_z`` ``(n,)``, ``marginals``
    ``(n, L)`` (``P(y_i = 1)``) and ``pair_sum`` ``(P,)`` (``sum_r E[y_i y_j]``).
    """
    n, L = U.shape
    S = _states(L)
    iu = np.triu_indices(L, 1)
    F = S[:, iu[0]] * S[:, iu[1]]
    pair_score = F @ eta
    log_z = np.empty(n)
    marg = np.empty((n, L))
    pair_sum = np.zeros(len(eta))
    for lo in range(0, n, batch):
        scores = U[lo : lo + batch] @ S.T + pair_score
        lz = logsumexp(scores, axis=1)
        P = np.exp(scores - lz[:, None])
        log_z[lo : lo + batch] = lz
        marg[lo : lo + batch] = P @ S
        pair_sum += P.sum(axis=0) @ F
    return log_z, marg, pair_sum


def _halves(U: np.ndarray, eta: np.ndarray):
    """The two-block form: ``score = a_r(y_A) + b_r(y_B) + c(y_A, y_B)`` with labels ``A = 0..h-1`` and
    ``B = h..L-1``; returns ``(h, SA, SB, a (n, 2**h), b (n, 2**(L-h)), c (2**h, 2**(L-h)))``."""
    L = U.shape[1]
    h = L // 2
    SA, SB = _states(h), _states(L - h)
    E = _eta_matrix(eta, L)
    c = SA @ E[:h, h:] @ SB.T
    a = U[:, :h] @ SA.T + ((SA @ E[:h, :h]) * SA).sum(axis=1)
    b = U[:, h:] @ SB.T + ((SB @ E[h:, h:]) * SB).sum(axis=1)
    return h, SA, SB, a, b, c


def _stats(U: np.ndarray, eta: np.ndarray):
    """``log Z``, marginals and summed pair expectations, by the two-block factorization.

    Labels ``A = 0..h-1`` and ``B = h..L-1``: ``score = a_r(y_A) + b_r(y_B) + c(y_A, y_B)`` with the
    cross term ``c = y_A^T eta_AB y_B`` the same for every example, so with ``K = exp(c)``,
    ``Z_r = sum ea_r(y_A) K(y_A, y_B) eb_r(y_B)``. Each factor is scaled by its maximum; the scaled
    ``Z`` is at least ``exp(-(max c - min c))``, so the direct enumeration takes over when ``c``
    spans more than ``_MAX_CROSS_RANGE``.
    """
    L = U.shape[1]
    if L < 2:
        return _stats_direct(U, eta)
    h, SA, SB, a, b, C = _halves(U, eta)
    gamma, c_min = C.max(), C.min()
    if gamma - c_min > _MAX_CROSS_RANGE:
        return _stats_direct(U, eta)
    alpha = a.max(axis=1)
    beta = b.max(axis=1)
    ea = np.exp(a - alpha[:, None])
    eb = np.exp(b - beta[:, None])
    K = np.exp(C - gamma)
    G = eb @ K.T  # G[r, y_A] = sum_{y_B} K(y_A, y_B) eb_r(y_B)
    H = ea @ K  # H[r, y_B] = sum_{y_A} ea_r(y_A) K(y_A, y_B)
    zp = np.einsum("ij,ij->i", ea, G)
    log_z = np.log(zp) + alpha + beta + gamma
    pA = ea * G / zp[:, None]  # p_r(y_A)
    pB = eb * H / zp[:, None]  # p_r(y_B)
    marg = np.concatenate([pA @ SA, pB @ SB], axis=1)
    pairs = np.zeros((L, L))
    pairs[:h, :h] = SA.T @ (pA.sum(axis=0)[:, None] * SA)
    pairs[h:, h:] = SB.T @ (pB.sum(axis=0)[:, None] * SB)
    joint = K * ((ea / zp[:, None]).T @ eb)  # sum_r p_r(y_A, y_B)
    pairs[:h, h:] = SA.T @ joint @ SB
    return log_z, marg, pairs[np.triu_indices(L, 1)]


def _map_direct(U: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """Readable twin of :func:`_map`: the most probable label vector of every row by scoring all ``2**L``."""
    L = U.shape[1]
    S = _states(L)
    iu = np.triu_indices(L, 1)
    scores = U @ S.T + (S[:, iu[0]] * S[:, iu[1]]) @ eta
    return S[np.argmax(scores, axis=1)].astype(np.int64)


def _map(U: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """The most probable label vector of every row, ``(n, L)`` int64, by the two-block form (in score
    space, exact), a batch of rows at a time; ties go to the first label vector in :func:`_states` order."""
    n, L = U.shape
    h, SA, SB, a, b, c = _halves(U, eta)
    out = np.empty((n, L), dtype=np.int64)
    step = max(1, _MAP_CELLS >> L)
    for lo in range(0, n, step):
        total = a[lo : lo + step, :, None] + b[lo : lo + step, None, :] + c
        best = np.argmax(total.reshape(total.shape[0], -1), axis=1)
        ia, ib = np.divmod(best, c.shape[1])
        out[lo : lo + step, :h] = SA[ia]
        out[lo : lo + step, h:] = SB[ib]
    return out


def _unpack(theta: np.ndarray, L: int, D: int):
    W = theta[: L * D].reshape(L, D)
    b = theta[L * D : L * D + L]
    eta = theta[L * D + L :]
    return W, b, eta


def _objective(theta: np.ndarray, Xs: np.ndarray, Y: np.ndarray, C: float, stats=_stats):
    """``(-sum_r log p(Y_r | E_r) + (||W||^2 + ||eta||^2) / (2 C)) / n`` and its exact gradient.

    ``Xs`` are standardized features ``(n, D)``, ``Y`` ``(n, L)`` float 0/1; ``theta`` packs ``W``
    ``(L, D)``, ``b`` ``(L,)``, ``eta`` ``(L(L-1)/2,)``. The biases are not regularized. Divided by ``n``
    (the same minimizer) so that L-BFGS's tolerances do not depend on the size of the data.
    """
    n, L = Y.shape
    D = Xs.shape[1]
    W, b, eta = _unpack(theta, L, D)
    U = Xs @ W.T + b
    log_z, marg, pair_sum = stats(U, eta)
    iu = np.triu_indices(L, 1)
    y_pairs = Y[:, iu[0]] * Y[:, iu[1]]
    score_obs = np.einsum("ij,ij->i", U, Y) + y_pairs @ eta
    lam = 1.0 / (C * n)
    f = float(np.mean(log_z - score_obs)) + 0.5 * lam * (float(np.sum(W * W)) + float(eta @ eta))
    R = (marg - Y) / n
    gW = R.T @ Xs + lam * W
    gb = R.sum(axis=0)
    geta = (pair_sum - y_pairs.sum(axis=0)) / n + lam * eta
    return f, np.concatenate([gW.ravel(), gb, geta])


def _predict_map(U: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """The jointly most probable label vector (exact, by enumeration)."""
    return _map(U, eta)


def _predict_max_marginal(U: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """Each label's most probable value: ``P(y_i = 1 | E) > 1/2`` (exact marginals, by enumeration)."""
    _, marg, _ = _stats(U, eta)
    return (marg > 0.5).astype(np.int64)


#: ``predict(E, method=...)``, the keys of :data:`tractable.crf.METHODS`
_METHODS = {"map": _predict_map, "max_marginal": _predict_max_marginal}


# ----------------------------------------------------------------------------- the estimator
class MultiLabelCRF(BaseEstimator):
    """Fully connected pairwise CRF over binary labels (Lampert 2012, Sec. 4.1), fit by exact likelihood.

    ``p(y | E) ∝ exp(sum_i u_i(E) y_i + sum_{i<j} eta_ij y_i y_j)`` with ``u_i(E) = <w_i, E~> + b_i`` and
    ``E~ = (E - mean_) / scale_`` standardized with the training statistics. Every quantity is exact: the
    ``2**L`` label vectors are enumerated (``L <= 20``; ``L = 14`` on yeast).

    Parameters
    ----------
    C : float, default 1.0
        Inverse L2 regularization strength, as scikit-learn's ``LogisticRegression``: ``fit`` minimizes
        ``-sum_r log p(Y_r | E_r) + (||W||^2 + ||eta||^2) / (2 C)`` (the biases ``b`` are not penalized).
        Small values give marginals near the label frequencies, large ones peaked marginals: the
        regularization sweep of the paper's Fig. 1-2. On the 1500 yeast training rows, ``C`` from
        ``1e-4`` to ``1`` spans that range.
    l2 : float, optional
        Deprecated (removed in the next release): the old parameter, the weight of the penalty
        ``l2 / 2 (||W||^2 + ||eta||^2)`` added to the **mean** negative log-likelihood. It is the same
        objective divided by ``n_samples`` with ``C = 1 / (n_samples * l2)``, which is what ``fit`` uses
        (with a ``DeprecationWarning``); e.g. ``l2=0.1`` on 1500 rows is ``C = 1 / 150``. Give ``C`` or
        ``l2``, not both.
    max_iter : int, default 1000
        L-BFGS iteration budget.
    tol : float, default 1e-6
        L-BFGS gradient tolerance (scipy's ``gtol``) on the objective divided by ``n_samples``.

    Attributes
    ----------
    coef_ : ndarray of shape (L, D)
        Weights ``w_i`` on the standardized features.
    intercept_ : ndarray of shape (L,)
        Biases ``b_i``.
    pairwise_ : ndarray of shape (L(L-1)/2,)
        ``eta_ij`` for the pairs ``pairs_``.
    pairs_ : ndarray of shape (L(L-1)/2, 2)
        The label pairs ``(i, j)``, ``i < j``, row-major.
    mean_, scale_ : ndarray of shape (D,)
        Training mean and standard deviation of the features (1 where the deviation is 0).
    n_labels_, n_states_, n_features_in_ : int
        ``L``, 2 (binary labels) and ``D``.
    C_ : float
        The ``C`` the fit used (converted from ``l2`` when that was given).
    n_iter_ : int
        L-BFGS iterations.
    converged_ : bool
        Whether L-BFGS met ``tol`` (otherwise a :class:`tractable.ConvergenceWarning` was issued).
    objective_ : float
        The final objective divided by ``n_samples``.

    Examples
    --------
    >>> from tractable.crf import MultiLabelCRF
    >>> from tractable.datasets import yeast_split
    >>> X_train, X_test, Y_train, Y_test = yeast_split()
    >>> crf = MultiLabelCRF(C=1 / 300).fit(X_train[:300], Y_train[:300])
    >>> crf.predict_marginals(X_test[:2]).shape, crf.log_likelihood(X_test[:2], Y_test[:2]).shape
    ((2, 14, 2), (2,))
    >>> fg = crf.factor_graph(X_test[0])
    >>> fg.n_variables, len(fg.factors)
    (14, 105)
    """

    def __init__(self, *, C=1.0, l2=None, max_iter=1000, tol=1e-6):
        self.C = C
        self.l2 = l2
        self.max_iter = max_iter
        self.tol = tol

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        return tags

    # -------------------------------------------------------------- checks
    def _resolve_C(self, n_samples: int) -> float:
        """``C``, or the deprecated ``l2`` converted to it (``C = 1 / (n_samples * l2)``) with a warning."""
        if self.l2 is None:
            return check_C(self.C)
        l2 = check_C(self.l2, "l2")
        if isinstance(self.C, bool) or not isinstance(self.C, numbers.Real) or self.C != 1.0:
            raise ValueError(
                f"give `C` or the deprecated `l2`, not both; got C={_describe(self.C)} and l2={_describe(self.l2)}."
            )
        C = check_C(1.0 / (n_samples * l2))
        warnings.warn(
            "`l2` is deprecated and will be removed in the next release; use `C` = 1 / (n_samples * l2) "
            f"(here, with {n_samples} rows, C = {C:.6g}).",
            DeprecationWarning,
            stacklevel=3,
        )
        return C

    def _check_Y(self, Y, n_labels: int | None = None) -> np.ndarray:
        Y, _ = check_labels(Y, 2, n_labels=n_labels)
        if Y.shape[1] > MAX_LABELS:
            raise ValueError(f"`Y` must have 1..{MAX_LABELS} labels (columns); got {Y.shape[1]}.")
        return Y

    def _fitted_E(self, E) -> np.ndarray:
        check_is_fitted(self, "coef_")
        return check_evidence(E, n_features=self.n_features_in_)

    def _unary(self, E: np.ndarray) -> np.ndarray:
        return ((E - self.mean_) / self.scale_) @ self.coef_.T + self.intercept_

    # -------------------------------------------------------------- fitting
    def fit(self, E, Y):
        """Fit by L-BFGS on the exact conditional log-likelihood plus the L2 penalty (see ``C``).

        Starts from ``W = 0``, ``eta = 0`` and the biases at the logits of the label frequencies;
        deterministic.

        Parameters
        ----------
        E : array_like of shape (n_samples, D)
            Evidence (features), finite.
        Y : array_like of shape (n_samples, L)
            Binary labels (0 / 1), ``1 <= L <= 20``.

        Returns
        -------
        self
        """
        max_iter = check_max_iter(self.max_iter)
        tol = check_tol(self.tol)
        E = check_evidence(E)
        Y = self._check_Y(Y)
        check_rows(E, Y)
        C = self._resolve_C(E.shape[0])
        Yf = Y.astype(np.float64)
        n, L = Y.shape
        D = E.shape[1]
        mean = E.mean(axis=0)
        scale = E.std(axis=0)
        scale[scale == 0] = 1.0
        Xs = (E - mean) / scale
        freq = np.clip(Yf.mean(axis=0), 1.0 / (n + 2), 1.0 - 1.0 / (n + 2))
        theta0 = np.zeros(L * D + L + L * (L - 1) // 2)
        theta0[L * D : L * D + L] = np.log(freq / (1 - freq))
        with one_blas_thread():
            res = minimize(
                _objective,
                theta0,
                args=(Xs, Yf, C),
                jac=True,
                method="L-BFGS-B",
                options={"maxiter": max_iter, "gtol": tol, "maxcor": 20},
            )
        W, b, eta = _unpack(res.x, L, D)
        self.mean_, self.scale_ = mean, scale
        self.coef_, self.intercept_, self.pairwise_ = W.copy(), b.copy(), eta.copy()
        self.pairs_ = _pair_index(L)
        self.n_labels_, self.n_states_, self.n_features_in_ = L, 2, D
        self.C_ = C
        self.converged_, self.n_iter_ = lbfgs_outcome(res, "MultiLabelCRF: L-BFGS-B")
        self.objective_ = float(res.fun)
        return self

    # -------------------------------------------------------------- inference
    def unary(self, E) -> np.ndarray:
        """Unary scores ``u_i(E)`` (the score of ``y_i = 1``; ``y_i = 0`` scores 0) of every row.

        Returns
        -------
        ndarray of shape (n_samples, L)
        """
        return self._unary(self._fitted_E(E))

    def predict_marginals(self, E) -> np.ndarray:
        """Exact marginals of every label (all ``2**L`` label vectors enumerated).

        Returns
        -------
        ndarray of shape (n_samples, L, 2)
            ``[r, i]`` is ``[P(y_i = 0 | E_r), P(y_i = 1 | E_r)]``, as every binary model of the library.
        """
        U = self._unary(self._fitted_E(E))
        with one_blas_thread():
            _, marg, _ = _stats(U, self.pairwise_)
        p = np.clip(marg, 0.0, 1.0)
        return np.stack([1.0 - p, p], axis=2)

    def predict_proba(self, E) -> np.ndarray:
        """Same as :meth:`predict_marginals`: shape ``(n_samples, L, 2)``; ``[:, :, 1]`` is ``P(y_i = 1)``."""
        return self.predict_marginals(E)

    def exact_marginals(self, E) -> np.ndarray:
        """Deprecated (removed in the next release): ``P(y_i = 1 | E)``, shape ``(n_samples, L)``.

        Use ``predict_marginals(E)[:, :, 1]``.
        """
        warnings.warn(
            "`MultiLabelCRF.exact_marginals(E)` is deprecated; use `predict_marginals(E)[:, :, 1]` "
            "(shape (n_samples, L, 2), as every binary model of the library).",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.predict_marginals(E)[:, :, 1]

    def predict(self, E, *, method: str = "max_marginal") -> np.ndarray:
        """The labels of every row of ``E`` (exact, by enumeration).

        Parameters
        ----------
        E : array_like of shape (n_samples, D)
        method : {"max_marginal", "map"}, default "max_marginal"
            ``"max_marginal"``: each label's most probable value, ``P(y_i = 1 | E) > 1/2`` (the maximum
            marginal prediction of Lampert's experiments, hence this model's default); ``"map"``: the
            jointly most probable label vector.

        Returns
        -------
        ndarray of shape (n_samples, L), int64
        """
        fn = resolve_method(method, _METHODS)
        U = self._unary(self._fitted_E(E))
        with one_blas_thread():
            return fn(U, self.pairwise_)

    def log_likelihood(self, E, Y) -> np.ndarray:
        """Exact conditional log-likelihood of every row (no penalty).

        Parameters
        ----------
        E : array_like of shape (n_samples, D)
        Y : array_like of shape (n_samples, L)

        Returns
        -------
        ndarray of shape (n_samples,)
            ``log p(Y_r | E_r)``.
        """
        E = self._fitted_E(E)
        Y = self._check_Y(Y, n_labels=self.n_labels_).astype(np.float64)
        check_rows(E, Y)
        U = self._unary(E)
        with one_blas_thread():
            log_z, _, _ = _stats(U, self.pairwise_)
        iu = np.triu_indices(U.shape[1], 1)
        score = np.einsum("ij,ij->i", U, Y) + (Y[:, iu[0]] * Y[:, iu[1]]) @ self.pairwise_
        return score - log_z

    def score(self, E, Y) -> float:
        """Mean conditional log-likelihood: the mean of :meth:`log_likelihood` (higher is better).

        Returns
        -------
        float
        """
        return float(np.mean(self.log_likelihood(E, Y)))

    def factor_graph(self, e) -> FactorGraph:
        """The CRF conditioned on one evidence row ``e`` of shape ``(D,)`` as a binary factor graph.

        One unary ``TableFactor([i], [0, u_i(e)])`` per label (factors ``0..L-1``), then one pairwise
        ``TableFactor([i, j], [[0, 0], [0, eta_ij]])`` per pair ``i < j`` in :attr:`pairs_` order.
        """
        check_is_fitted(self, "coef_")
        arr = np.asarray(e)
        if arr.ndim != 1:
            raise ValueError(f"`e` must be one evidence row of shape (D,); got {_describe(e)}.")
        u = self.unary(arr[None, :])[0]
        L = len(u)
        fg = FactorGraph([2] * L)
        for i in range(L):
            fg.add_factor(TableFactor([i], [0.0, u[i]]))
        for (i, j), eta in zip(self.pairs_, self.pairwise_):
            fg.add_factor(TableFactor([int(i), int(j)], [[0.0, 0.0], [0.0, float(eta)]]))
        return fg
