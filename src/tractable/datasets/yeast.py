"""The yeast multi-label data and the fully connected label CRF of Lampert (2012, Sec. 4.1).

:func:`load_yeast` reads the MULAN version of the yeast gene-function data (Elisseeff & Weston
2002; 2417 genes, 103 features, 14 labels) shipped with the package (``data/yeast.npz``; source and
licence in ``data/README.md``); :func:`yeast_split` is the fixed split of the paper's Table 1: the
first 1500 rows train, the last 917 test (the sizes of MULAN's ``yeast-train`` / ``yeast-test``).

:class:`MultiLabelCRF` is the model whose marginals the paper's multi-label experiment predicts: a
fully connected pairwise CRF over the ``L`` binary labels,

    p(y | x) ∝ exp( sum_i (<w_i, x~> + b_i) y_i + sum_{i<j} eta_ij y_i y_j ),

with ``x~`` the features standardized by the training mean and standard deviation. The paper writes
it with energies ``E = -score``; here, as everywhere in the library, the tables are scores. It is fit
by L-BFGS on the exact conditional log-likelihood: with ``L = 14`` labels the ``2**14`` label
vectors are enumerated, and the enumeration is factorized into two halves of the labels, so that
the partition function of every example is ``ea @ K @ eb`` with ``ea`` ``(2**7,)``, ``eb``
``(2**7,)`` and the cross-half interaction table ``K`` ``(2**7, 2**7)`` shared by all examples:
a few matrix products per L-BFGS step instead of ``N * 2**14`` exponentials. A plain enumeration
of all ``2**L`` label vectors (``_stats_direct``) is the readable twin the tests compare against,
and the fallback when the two-block form could underflow.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

from .._results import ConvergenceWarning
from .._validate import as_float_array, check_int, check_positive
from ..factorgraph import FactorGraph, TableFactor

__all__ = ["YEAST_N_TRAIN", "MultiLabelCRF", "load_yeast", "yeast_split"]

_DATA = Path(__file__).resolve().parent / "data" / "yeast.npz"

#: rows of the training part of :func:`yeast_split` (the rest, 917 rows, is the test part)
YEAST_N_TRAIN = 1500

#: largest number of labels :class:`MultiLabelCRF` enumerates (``2**20`` label vectors)
MAX_LABELS = 20

#: the two-block partition function is used while the cross-block scores span less than this
_MAX_CROSS_RANGE = 500.0


def _one_blas_thread():
    """Run BLAS single-threaded: the products are small, and threads only contend (``threadpoolctl``
    comes with scikit-learn; without it this does nothing)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


@functools.lru_cache(maxsize=1)
def _load() -> tuple[np.ndarray, np.ndarray]:
    with np.load(_DATA, allow_pickle=False) as d:
        X = np.array(d["X"], dtype=np.float64)
        Y = np.array(d["Y"], dtype=np.uint8)
    X.flags.writeable = False
    Y.flags.writeable = False
    return X, Y


def load_yeast() -> tuple[np.ndarray, np.ndarray]:
    """The yeast multi-label data set (MULAN version; Elisseeff & Weston 2002).

    Returns
    -------
    X : ndarray of shape (2417, 103), float64, read-only
        Gene features (micro-array expression and phylogenetic profiles).
    Y : ndarray of shape (2417, 14), uint8, read-only
        ``Y[n, i] = 1`` when gene ``n`` has functional category ``i``.

    Examples
    --------
    >>> from tractable.datasets.yeast import load_yeast
    >>> X, Y = load_yeast()
    >>> X.shape, Y.shape, round(float(Y.sum(axis=1).mean()), 2)
    ((2417, 103), (2417, 14), 4.24)
    """
    return _load()


def yeast_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The fixed train/test split of Lampert (2012, Table 1): first 1500 rows train, last 917 test.

    Returns
    -------
    X_train, X_test, Y_train, Y_test : read-only arrays
        In scikit-learn's ``train_test_split`` order; shapes (1500, 103), (917, 103), (1500, 14),
        (917, 14).
    """
    X, Y = _load()
    return X[:YEAST_N_TRAIN], X[YEAST_N_TRAIN:], Y[:YEAST_N_TRAIN], Y[YEAST_N_TRAIN:]


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

    ``U`` is ``(N, L)`` (the unary scores of every example); returns ``log_z`` ``(N,)``, ``marginals``
    ``(N, L)`` (``P(y_i = 1)``) and ``pair_sum`` ``(P,)`` (``sum_n E[y_i y_j]``).
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


def _stats(U: np.ndarray, eta: np.ndarray):
    """``log Z``, marginals and summed pair expectations, by the two-block factorization.

    Labels ``A = 0..h-1`` and ``B = h..L-1``: ``score = a_n(y_A) + b_n(y_B) + c(y_A, y_B)`` with the
    cross term ``c = y_A^T eta_AB y_B`` the same for every example, so with ``K = exp(c)``,
    ``Z_n = sum ea_n(y_A) K(y_A, y_B) eb_n(y_B)``. Each factor is scaled by its maximum; the scaled
    ``Z`` is at least ``exp(-(max c - min c))``, so the direct enumeration takes over when ``c``
    spans more than ``_MAX_CROSS_RANGE``.
    """
    n, L = U.shape
    if L < 2:
        return _stats_direct(U, eta)
    h = L // 2
    SA, SB = _states(h), _states(L - h)
    E = _eta_matrix(eta, L)
    C = SA @ E[:h, h:] @ SB.T
    gamma, c_min = C.max(), C.min()
    if gamma - c_min > _MAX_CROSS_RANGE:
        return _stats_direct(U, eta)
    a = U[:, :h] @ SA.T + ((SA @ E[:h, :h]) * SA).sum(axis=1)
    b = U[:, h:] @ SB.T + ((SB @ E[h:, h:]) * SB).sum(axis=1)
    alpha = a.max(axis=1)
    beta = b.max(axis=1)
    ea = np.exp(a - alpha[:, None])
    eb = np.exp(b - beta[:, None])
    K = np.exp(C - gamma)
    G = eb @ K.T  # G[n, y_A] = sum_{y_B} K(y_A, y_B) eb_n(y_B)
    H = ea @ K  # H[n, y_B] = sum_{y_A} ea_n(y_A) K(y_A, y_B)
    zp = np.einsum("ij,ij->i", ea, G)
    log_z = np.log(zp) + alpha + beta + gamma
    pA = ea * G / zp[:, None]  # p_n(y_A)
    pB = eb * H / zp[:, None]  # p_n(y_B)
    marg = np.concatenate([pA @ SA, pB @ SB], axis=1)
    pairs = np.zeros((L, L))
    pairs[:h, :h] = SA.T @ (pA.sum(axis=0)[:, None] * SA)
    pairs[h:, h:] = SB.T @ (pB.sum(axis=0)[:, None] * SB)
    joint = K * ((ea / zp[:, None]).T @ eb)  # sum_n p_n(y_A, y_B)
    pairs[:h, h:] = SA.T @ joint @ SB
    return log_z, marg, pairs[np.triu_indices(L, 1)]


def _unpack(theta: np.ndarray, L: int, D: int):
    W = theta[: L * D].reshape(L, D)
    b = theta[L * D : L * D + L]
    eta = theta[L * D + L :]
    return W, b, eta


def _objective(theta: np.ndarray, Xs: np.ndarray, Y: np.ndarray, l2: float, stats=_stats):
    """Mean negative conditional log-likelihood + ``l2/2 (||W||^2 + ||eta||^2)`` and its exact gradient.

    ``Xs`` are standardized features ``(N, D)``, ``Y`` ``(N, L)`` float 0/1; ``theta`` packs ``W``
    ``(L, D)``, ``b`` ``(L,)``, ``eta`` ``(L(L-1)/2,)``. The biases are not regularized.
    """
    n, L = Y.shape
    D = Xs.shape[1]
    W, b, eta = _unpack(theta, L, D)
    U = Xs @ W.T + b
    log_z, marg, pair_sum = stats(U, eta)
    iu = np.triu_indices(L, 1)
    y_pairs = Y[:, iu[0]] * Y[:, iu[1]]
    score_obs = np.einsum("ij,ij->i", U, Y) + y_pairs @ eta
    f = float(np.mean(log_z - score_obs)) + 0.5 * l2 * (float(np.sum(W * W)) + float(eta @ eta))
    R = (marg - Y) / n
    gW = R.T @ Xs + l2 * W
    gb = R.sum(axis=0)
    geta = (pair_sum - y_pairs.sum(axis=0)) / n + l2 * eta
    return f, np.concatenate([gW.ravel(), gb, geta])


# ----------------------------------------------------------------------------- the model
class MultiLabelCRF:
    """Fully connected pairwise CRF over binary labels (Lampert 2012, Sec. 4.1), fit by exact likelihood.

    ``p(y | x) ∝ exp(sum_i u_i(x) y_i + sum_{i<j} eta_ij y_i y_j)`` with ``u_i(x) = <w_i, x~> + b_i``
    and ``x~ = (x - mean_) / scale_`` standardized with the training statistics.

    Parameters
    ----------
    l2 : float, default 1.0
        Weight of the penalty ``l2/2 (||W||^2 + ||eta||^2)`` added to the **mean** negative conditional
        log-likelihood (biases are not penalized). Small values give peaked marginals, large ones
        marginals near the label frequencies: the regularization sweep of the paper's Fig. 1-2 (whose
        ``C`` grows as ``l2`` shrinks). Values from ``1e-3`` to ``1e1`` span that range on yeast.
    max_iter : int, default 1000
        L-BFGS iteration budget.
    tol : float, default 1e-6
        L-BFGS gradient tolerance (scipy's ``gtol``).

    Attributes (after :meth:`fit`)
    ------------------------------
    coef_ : ndarray (L, D)
        Weights ``w_i`` on the standardized features.
    intercept_ : ndarray (L,)
        Biases ``b_i``.
    pairwise_ : ndarray (L(L-1)/2,)
        ``eta_ij`` for the pairs ``pairs_``.
    pairs_ : ndarray (L(L-1)/2, 2)
        The label pairs ``(i, j)``, ``i < j``, row-major.
    mean_, scale_ : ndarray (D,)
        Training mean and standard deviation of the features (1 where the deviation is 0).
    n_iter_ : int
    converged_ : bool
        ``False`` (with a ``ConvergenceWarning``) when L-BFGS used ``max_iter``.

    Examples
    --------
    >>> from tractable.datasets.yeast import MultiLabelCRF, yeast_split
    >>> X_train, X_test, Y_train, Y_test = yeast_split()
    >>> crf = MultiLabelCRF(l2=1.0).fit(X_train[:300], Y_train[:300])
    >>> crf.exact_marginals(X_test[:2]).shape
    (2, 14)
    >>> fg = crf.factor_graph(X_test[0])
    >>> fg.n_variables, len(fg.factors)
    (14, 105)
    """

    def __init__(self, l2: float = 1.0, *, max_iter: int = 1000, tol: float = 1e-6) -> None:
        self.l2 = check_positive(l2, "l2", strict=False)
        self.max_iter = check_int(max_iter, "max_iter", minimum=1)
        self.tol = check_positive(tol, "tol")

    def __repr__(self) -> str:
        return f"MultiLabelCRF(l2={self.l2}, max_iter={self.max_iter}, tol={self.tol})"

    # -------------------------------------------------------------- checks
    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise ValueError("this MultiLabelCRF is not fitted yet; call `fit(X, Y)` first.")

    def _check_X(self, X, name: str = "X") -> np.ndarray:
        X = as_float_array(X, name, ndim=2, allow_neginf=False)
        if X.shape[1] != self.coef_.shape[1]:
            raise ValueError(f"`{name}` must have {self.coef_.shape[1]} features (columns); got {X.shape[1]}.")
        return X

    @staticmethod
    def _check_Y(Y, n: int) -> np.ndarray:
        Y = np.asarray(Y)
        if Y.dtype.kind not in "biuf":  # complex, object, str: never cast silently
            raise TypeError(f"`Y` must be an array of 0/1 labels; got dtype {Y.dtype}.")
        if Y.ndim != 2 or Y.shape[0] != n:
            raise ValueError(f"`Y` must have shape ({n}, n_labels); got {Y.shape}.")
        if not np.isin(Y, (0, 1)).all():
            raise ValueError("`Y` must contain only 0 and 1.")
        if not 1 <= Y.shape[1] <= MAX_LABELS:
            raise ValueError(f"`Y` must have 1..{MAX_LABELS} labels (columns); got {Y.shape[1]}.")
        return Y.astype(np.float64)

    def _standardize(self, X: np.ndarray) -> np.ndarray:
        return (X - self.mean_) / self.scale_

    # -------------------------------------------------------------- fitting
    def fit(self, X, Y) -> MultiLabelCRF:
        """Fit by L-BFGS on the exact mean conditional log-likelihood plus the ``l2`` penalty.

        Starts from ``W = 0``, ``eta = 0`` and the biases at the logits of the label frequencies;
        deterministic.
        """
        from scipy.optimize import minimize  # imported on use: `import tractable.datasets` stays light

        X = as_float_array(X, "X", ndim=2, allow_neginf=False)
        Y = self._check_Y(Y, X.shape[0])
        n, L = Y.shape
        D = X.shape[1]
        mean = X.mean(axis=0)
        scale = X.std(axis=0)
        scale[scale == 0] = 1.0
        Xs = (X - mean) / scale
        freq = np.clip(Y.mean(axis=0), 1.0 / (n + 2), 1.0 - 1.0 / (n + 2))
        theta0 = np.zeros(L * D + L + L * (L - 1) // 2)
        theta0[L * D : L * D + L] = np.log(freq / (1 - freq))
        with _one_blas_thread():
            res = minimize(
                _objective,
                theta0,
                args=(Xs, Y, self.l2),
                jac=True,
                method="L-BFGS-B",
                options={"maxiter": self.max_iter, "gtol": self.tol, "maxcor": 20},
            )
        W, b, eta = _unpack(res.x, L, D)
        self.mean_, self.scale_ = mean, scale
        self.coef_, self.intercept_, self.pairwise_ = W.copy(), b.copy(), eta.copy()
        self.pairs_ = _pair_index(L)
        self.n_iter_ = int(res.nit)
        self.converged_ = bool(res.nit < self.max_iter)
        self.objective_ = float(res.fun)
        if not self.converged_:
            warnings.warn(
                f"MultiLabelCRF.fit stopped after `max_iter`={self.max_iter} L-BFGS iterations ({res.message}).",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    # -------------------------------------------------------------- inference
    def unary(self, X) -> np.ndarray:
        """Unary scores ``u_i(x)`` (score of ``y_i = 1``) of every row: shape ``(N, L)``."""
        self._check_fitted()
        X = self._check_X(np.atleast_2d(X))
        return self._standardize(X) @ self.coef_.T + self.intercept_

    def exact_marginals(self, X) -> np.ndarray:
        """Exact ``P(y_i = 1 | x)`` of every row by enumerating all ``2**L`` label vectors: shape ``(N, L)``."""
        _, marg, _ = _stats(self.unary(X), self.pairwise_)
        return np.clip(marg, 0.0, 1.0)

    def predict(self, X) -> np.ndarray:
        """Exact maximum-marginal prediction (``P(y_i = 1 | x) > 1/2``): ``(N, L)`` uint8."""
        return (self.exact_marginals(X) > 0.5).astype(np.uint8)

    def log_likelihood(self, X, Y) -> float:
        """Mean exact conditional log-likelihood ``(1/N) sum_n log p(y_n | x_n)`` (no penalty)."""
        U = self.unary(X)
        Y = self._check_Y(Y, U.shape[0])
        if Y.shape[1] != U.shape[1]:
            raise ValueError(f"`Y` must have {U.shape[1]} labels (columns); got {Y.shape[1]}.")
        log_z, _, _ = _stats(U, self.pairwise_)
        iu = np.triu_indices(U.shape[1], 1)
        score = np.einsum("ij,ij->i", U, Y) + (Y[:, iu[0]] * Y[:, iu[1]]) @ self.pairwise_
        return float(np.mean(score - log_z))

    def factor_graph(self, x) -> FactorGraph:
        """The CRF conditioned on one input ``x`` ``(D,)`` as a binary factor graph.

        One unary ``TableFactor([i], [0, u_i(x)])`` per label (factors ``0..L-1``), then one pairwise
        ``TableFactor([i, j], [[0, 0], [0, eta_ij]])`` per pair ``i < j`` in :attr:`pairs_` order.
        """
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 1:
            raise ValueError(f"`x` must be one input row of shape (D,); got shape {x.shape}.")
        u = self.unary(x[None, :])[0]
        L = len(u)
        fg = FactorGraph([2] * L)
        for i in range(L):
            fg.add_factor(TableFactor([i], [0.0, u[i]]))
        for (i, j), e in zip(self.pairs_, self.pairwise_):
            fg.add_factor(TableFactor([int(i), int(j)], [[0.0, 0.0], [0.0, float(e)]]))
        return fg
