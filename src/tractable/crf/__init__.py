"""Conditional random fields over label vectors, learned exactly (Chechetka & Guestrin 2010; Lampert 2012).

* :func:`chow_liu_tree`: the Chow-Liu tree of the label columns (maximum spanning tree of the
  empirical mutual information).
* :class:`ConditionalChowLiu`: evidence-specific tree structures (Alg. 3): per candidate edge a
  logistic regression estimate of ``P(y_i, y_j | E)``, edge weight its mutual information, one
  maximum spanning tree per evidence value; ``min_edge_frequency`` is the regularization of Sec. 6.1.
* :class:`TreeCRF`: one fixed tree (default: the Chow-Liu tree of the training labels).
* :class:`ESSCRF`: a tree CRF whose tree is chosen per example by a :class:`ConditionalChowLiu`.
* :class:`RelationalGraph`, :class:`RelationalESSCRF` (Sec. 5, Alg. 4): entities with features and
  typed links; a spanning forest of the link graph per evidence, chosen by a templated conditional
  Chow-Liu, with template weights shared per relation; known labels clamped at test time.
* :class:`ChainCRF`: a linear-chain CRF over variable-length sequences with sparse per-token features
  (weights shared by all positions), trained exactly by forward-backward and L-BFGS; :func:`chain_map`
  decodes batches of chains (Viterbi). The node potentials of collective extraction
  (:mod:`tractable.datasets.conll2003`).
* :class:`MultiLabelCRF`: the fully connected pairwise CRF over binary labels of Lampert (2012,
  Sec. 4.1), exact by enumerating the ``2**L`` label vectors.

All are scikit-learn estimators with one grammar (``docs/crf.md``): options keyword-only; ``C`` the
inverse L2 regularization strength, as in scikit-learn's ``LogisticRegression`` (``fit`` minimizes
``-sum log p + ||w||^2 / (2 C)``); ``n_states`` labels per variable; ``converged_`` and ``n_iter_`` after
``fit``, a :class:`tractable.ConvergenceWarning` when it did not converge. The CRFs predict with
``predict(E, *, method="map" | "max_marginal")`` (int64), ``predict_marginals(E)`` / ``predict_proba(E)``
of shape ``(n_samples, N, k)`` (``(n_samples, L, 2)`` for binary labels, ``[..., 1]`` = ``P(y = 1)``),
``log_likelihood(E, Y)`` of shape ``(n_samples,)`` and ``score(E, Y)`` its mean (for the relational
model a sample is a graph). Their weights are learned exactly: L-BFGS on the concave conditional
log-likelihood with the exact gradient from exact marginals (trees: :func:`tractable.bp.tree_marginals_batch`).
"""

from .chain import ChainCRF, ChainPotentials, chain_map
from .chow_liu import ConditionalChowLiu, chow_liu_tree
from .multilabel import MultiLabelCRF
from .relational import RelationalESSCRF, RelationalGraph
from .tree_crf import ESSCRF, METHODS, TreeCRF

__all__ = [
    "ChainCRF",
    "ChainPotentials",
    "ConditionalChowLiu",
    "ESSCRF",
    "METHODS",
    "MultiLabelCRF",
    "RelationalESSCRF",
    "RelationalGraph",
    "TreeCRF",
    "chain_map",
    "chow_liu_tree",
]
