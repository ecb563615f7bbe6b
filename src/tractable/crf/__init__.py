"""Tree CRFs with fixed and with evidence-specific structure (Chechetka & Guestrin 2010).

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

Both CRFs are scikit-learn estimators (``fit(E, Y)``, ``predict(E, method="map" | "max_marginal")``,
``predict_marginals(E)`` / ``predict_proba(E)`` of shape ``(n, N, k)``, ``score(E, Y)`` = mean
conditional log-likelihood). Their weights are learned exactly: L-BFGS on the concave conditional
log-likelihood with the exact gradient from tree marginals (:func:`tractable.bp.tree_marginals_batch`).
"""

from .chow_liu import ConditionalChowLiu, chow_liu_tree
from .relational import RelationalESSCRF, RelationalGraph
from .tree_crf import ESSCRF, METHODS, TreeCRF

__all__ = [
    "ConditionalChowLiu",
    "ESSCRF",
    "METHODS",
    "RelationalESSCRF",
    "RelationalGraph",
    "TreeCRF",
    "chow_liu_tree",
]
