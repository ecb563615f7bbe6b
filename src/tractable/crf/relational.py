"""Relational CRFs with evidence-specific tree structure (Chechetka & Guestrin 2010, Sec. 5, Alg. 4).

A :class:`RelationalGraph` holds entities (rows of ``features``), typed undirected links between them
and partially known labels (``-1`` = unknown). :class:`RelationalESSCRF` is a relational CRF whose
structure depends on the evidence: for every graph it keeps a spanning forest of the link graph, so
that learning and inference are exact.

The model, for one graph with links ``L`` and evidence-specific forest ``T(E) ⊆ L``::

    p(y | E) ∝ exp( sum_i  coef_[y_i] . x_i + intercept_[y_i]
                  + sum_{(u, v) in T(E)}  sum_g  g_uv[g] * pairwise_[r_uv, g, y_u, y_v] )

with shared unary weights (label x features) and one symmetric ``k x k`` template per relation
``r`` and pair feature ``g`` (``g_uv = [1]``, or ``[1, cos(x_u, x_v)]`` with
``pair_features="cosine"``).

Structure (the *templated* conditional Chow-Liu algorithm, Alg. 3 with shared weights): a template
model of ``P(y_u, y_v | x_u, x_v, r)`` -- a logistic regression over the ``k^2`` joint labels of a
link, whose features are the CRF's own (two unary terms and the pair template), i.e. a two-node CRF
(Eq. 9) -- is trained on the links with at least one known label (an unknown end is marginalized).
Every link is weighted by the mutual information of its estimated ``P(y_u, y_v | E)``; the structure
is the maximum spanning forest of the link graph under these weights (``scipy.sparse.csgraph``).

Weights: exact L-BFGS on the conditional log-likelihood of the known labels, the unknown ones
marginalized (the semi-supervised FACES setting): on a forest ``log p(y_known | E) = log Z(known
labels clamped) - log Z(free)``, both by exact tree sum-product (:func:`tractable.bp.tree_marginals`),
and the gradient is the difference of the clamped and free marginals (Eq. 12). ``C`` is the inverse
L2 regularization strength, as in scikit-learn's logistic regression: the objective is
``-sum_graphs log p(known labels | E) + ||w||^2 / (2 C)`` (intercepts unpenalized), which L-BFGS
minimizes in scikit-learn's form ``0.5 ||w||^2 + C * NLL`` (the same minimizer).
Prediction conditions on the known labels, which are evidence at test time: a link with a known end
becomes a unary term of its other end (it closes no cycle of the conditional model), so prediction uses
*every* such link plus the maximum spanning forest of the links between entities of unknown label, and
runs exact max-product (:func:`tractable.bp.tree_map`) or sum-product on that forest.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.sparse.csgraph import minimum_spanning_tree
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._logspace import logsumexp
from .._validate import as_float_array, as_index_array, check_choice, resolve_method
from ..bp import tree_map, tree_marginals_batch
from ..bp.tree import CompiledForest, forest_marginals
from ._features import check_C, check_max_iter, check_n_states, check_no_y, check_tol, lbfgs_outcome

__all__ = ["PAIR_FEATURES", "RelationalESSCRF", "RelationalGraph"]

PAIR_FEATURES = ("cosine", "none")


# --------------------------------------------------------------------------- data
def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape}"
    return type(value).__name__


def _frozen_csr(x, name: str) -> sp.csr_matrix:
    x = sp.csr_matrix(x, dtype=np.float64, copy=True)
    if x.ndim != 2:
        raise ValueError(f"`{name}` must be 2-D (N, F); got shape {x.shape}.")
    x.sum_duplicates()
    if np.isnan(x.data).any():
        raise ValueError(f"`{name}` must not contain NaN.")
    if np.isinf(x.data).any():
        raise ValueError(f"`{name}` must not contain +inf or -inf.")
    for arr in (x.data, x.indices, x.indptr):
        arr.flags.writeable = False
    return x


@dataclass(frozen=True, eq=False, init=False)
class RelationalGraph:
    """Entities with features, typed undirected links and partially known labels (read-only).

    Parameters
    ----------
    features : array_like or scipy sparse matrix of shape (N, F)
        One row of evidence features per entity (dense rows are kept as float64, sparse ones as CSR).
    edges : array_like of shape (E, 2), int
        Undirected links, each listed once (``(u, v)`` and ``(v, u)`` are the same link); no self loops.
    labels : array_like of shape (N,), int, optional
        Label of each entity, ``-1`` where unknown (the default: all unknown).
    edge_types : array_like of shape (E,), int, optional
        Relation of each link, ``0 .. R-1`` (default: all 0, one relation).

    Raises
    ------
    ValueError
        NaN or infinite features, self loops, duplicate links, nodes out of ``[0, N)``, labels below
        ``-1``, negative edge types, or lengths that do not match; the message names the argument.

    Examples
    --------
    >>> g = RelationalGraph([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [[0, 1], [1, 2]], labels=[0, -1, 1])
    >>> g
    RelationalGraph(n_nodes=3, n_edges=2, n_features=2, n_labeled=2, n_relations=1)
    """

    features: np.ndarray | sp.csr_matrix
    edges: np.ndarray
    labels: np.ndarray
    edge_types: np.ndarray

    def __init__(self, features, edges, labels=None, edge_types=None) -> None:
        if sp.issparse(features):
            x = _frozen_csr(features, "features")
        else:
            x = as_float_array(features, "features", ndim=2, allow_neginf=False)
            x.flags.writeable = False
        n = x.shape[0]
        e = np.asarray(edges)
        if e.size == 0:
            e = np.zeros((0, 2), dtype=np.int64)
        e = as_index_array(e, "edges", ndim=2)
        if e.shape[1] != 2:
            raise ValueError(f"`edges` must have shape (E, 2); got {e.shape}.")
        if e.size and (e.min() < 0 or e.max() >= n):
            bad = e[(e < 0) | (e >= n)].flat[0]
            raise ValueError(f"`edges` must contain node indices in [0, {n - 1}] (rows of `features`); got {bad}.")
        loops = np.flatnonzero(e[:, 0] == e[:, 1])
        if loops.size:
            i = int(loops[0])
            raise ValueError(f"`edges` must not contain self loops; got edge {i} = {e[i].tolist()}.")
        key = np.minimum(e[:, 0], e[:, 1]) * n + np.maximum(e[:, 0], e[:, 1])
        uniq, first, counts = np.unique(key, return_index=True, return_counts=True)
        if uniq.size < key.size:
            dup = int(np.flatnonzero(counts > 1)[0])
            later = np.flatnonzero(key == uniq[dup])
            raise ValueError(
                f"`edges` must list each undirected link once; edges {int(later[0])} and {int(later[1])} "
                f"both join {sorted(e[later[0]].tolist())}."
            )
        if labels is None:
            y = np.full(n, -1, dtype=np.int64)
        else:
            y = as_index_array(labels, "labels")
            if y.shape[0] != n:
                raise ValueError(f"`labels` must have length {n} (one per row of `features`); got {y.shape[0]}.")
            if y.size and y.min() < -1:
                raise ValueError(f"`labels` must be >= 0, or -1 for unknown; got {int(y.min())}.")
        if edge_types is None:
            t = np.zeros(e.shape[0], dtype=np.int64)
        else:
            t = as_index_array(edge_types, "edge_types")
            if t.shape[0] != e.shape[0]:
                raise ValueError(
                    f"`edge_types` must have length {e.shape[0]} (one per row of `edges`); got {t.shape[0]}."
                )
            if t.size and t.min() < 0:
                raise ValueError(f"`edge_types` must be >= 0; got {int(t.min())}.")
        for arr in (e, y, t):
            arr.flags.writeable = False
        object.__setattr__(self, "features", x)
        object.__setattr__(self, "edges", e)
        object.__setattr__(self, "labels", y)
        object.__setattr__(self, "edge_types", t)

    @property
    def n_nodes(self) -> int:
        return int(self.features.shape[0])

    @property
    def n_edges(self) -> int:
        return int(self.edges.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.features.shape[1])

    @property
    def n_relations(self) -> int:
        """``max(edge_types) + 1`` (1 for a graph without links)."""
        return int(self.edge_types.max()) + 1 if self.edge_types.size else 1

    @property
    def known(self) -> np.ndarray:
        """Boolean mask of the entities whose label is known."""
        return self.labels >= 0

    def __repr__(self) -> str:
        return (
            f"RelationalGraph(n_nodes={self.n_nodes}, n_edges={self.n_edges}, n_features={self.n_features}, "
            f"n_labeled={int(self.known.sum())}, n_relations={self.n_relations})"
        )


def _union(graphs) -> tuple[RelationalGraph, np.ndarray]:
    """The disjoint union of ``graphs`` (one graph is returned as is) and each graph's first node."""
    if len(graphs) == 1:
        return graphs[0], np.zeros(1, dtype=np.int64)
    sizes = np.array([g.n_nodes for g in graphs])
    offsets = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
    if any(sp.issparse(g.features) for g in graphs):
        x = sp.vstack([sp.csr_matrix(g.features) for g in graphs], format="csr")
    else:
        x = np.vstack([g.features for g in graphs])
    e = np.concatenate([g.edges + o for g, o in zip(graphs, offsets)])
    y = np.concatenate([g.labels for g in graphs])
    t = np.concatenate([g.edge_types for g in graphs])
    return RelationalGraph(x, e, y, t), offsets


# --------------------------------------------------------------------------- parameters
class _Layout:
    """Packing of (unary weights ``(k, F)``, intercepts ``(k,)``, pair templates ``(R, G, k, k)``)."""

    def __init__(self, k: int, f: int, r: int, g: int):
        self.k, self.f, self.r, self.g = k, f, r, g
        self.sizes = (k * f, k, r * g * k * k)
        self.size = sum(self.sizes)
        penalized = np.ones(self.size, dtype=bool)
        penalized[k * f : k * f + k] = False
        self.penalized = penalized

    def unpack(self, theta: np.ndarray):
        k, f, r, g = self.k, self.f, self.r, self.g
        a, b = self.sizes[0], self.sizes[0] + self.sizes[1]
        coef = theta[:a].reshape(k, f)
        intercept = theta[a:b]
        pw = theta[b:].reshape(r, g, k, k)
        return coef, intercept, 0.5 * (pw + np.swapaxes(pw, -1, -2))

    def pack(self, d_coef, d_intercept, d_pw) -> np.ndarray:
        d_pw = 0.5 * (d_pw + np.swapaxes(d_pw, -1, -2))
        return np.concatenate([d_coef.ravel(), d_intercept.ravel(), d_pw.ravel()])


def _pair_features(graph: RelationalGraph, kind: str) -> np.ndarray:
    """``(E, G)`` features of each link: ``[1]``, or ``[1, cos(x_u, x_v)]``."""
    ones = np.ones((graph.n_edges, 1))
    if kind == "none":
        return ones
    x, e = graph.features, graph.edges
    if sp.issparse(x):
        norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
        dots = np.asarray(x[e[:, 0]].multiply(x[e[:, 1]]).sum(axis=1)).ravel()
    else:
        norms = np.linalg.norm(x, axis=1)
        dots = np.einsum("ij,ij->i", x[e[:, 0]], x[e[:, 1]])
    denom = norms[e[:, 0]] * norms[e[:, 1]]
    cos = np.divide(dots, denom, out=np.zeros_like(dots), where=denom > 0)
    return np.column_stack([ones, cos])


def _unary(x, coef, intercept) -> np.ndarray:
    return np.asarray(x @ np.ascontiguousarray(coef.T)) + intercept


def _clamp(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Scores with every label but the known one forbidden (``-inf``) at entities with known labels."""
    out = scores.copy()
    known = np.flatnonzero(labels >= 0)
    keep = out[known, labels[known]]
    out[known] = -np.inf
    out[known, labels[known]] = keep
    return out


def _template_design(types: np.ndarray, gfeat: np.ndarray, n_relations: int) -> np.ndarray:
    """``(E, R * G)`` rows ``onehot(types[e]) (x) gfeat[e]``: pair scores are ``design @ templates``."""
    e, g = gfeat.shape
    out = np.zeros((e, n_relations, g))
    out[np.arange(e), types] = gfeat
    return out.reshape(e, n_relations * g)


def _edge_scores(design: np.ndarray, pw_templates: np.ndarray) -> np.ndarray:
    """``(E, k, k)`` pairwise scores ``sum_g gfeat[e, g] * pw_templates[types[e], g]``."""
    k = pw_templates.shape[-1]
    return (design @ pw_templates.reshape(-1, k * k)).reshape(-1, k, k)


def _template_grad(design: np.ndarray, d_psi: np.ndarray, layout) -> np.ndarray:
    """Gradient with respect to the pair templates, given ``d_psi`` (E, k, k) for the edge scores."""
    k = layout.k
    return (design.T @ d_psi.reshape(-1, k * k)).reshape(layout.r, layout.g, k, k)


class _PairProblem:
    """Negative log-likelihood of the template model of ``P(y_u, y_v | E)`` on links (a two-node CRF)."""

    def __init__(self, graph: RelationalGraph, gfeat: np.ndarray, layout: _Layout, C: float):
        y = graph.labels
        e = graph.edges
        keep = (y[e[:, 0]] >= 0) | (y[e[:, 1]] >= 0)
        self.e = e[keep]
        self.design = _template_design(graph.edge_types[keep], gfeat[keep], layout.r)
        k = layout.k
        m = self.e.shape[0]
        ar = np.arange(k)
        lab_u, lab_v = y[self.e[:, 0]], y[self.e[:, 1]]
        bad_u = (lab_u[:, None] >= 0) & (ar[None, :] != lab_u[:, None])  # (m, k): label excluded at u
        bad_v = (lab_v[:, None] >= 0) & (ar[None, :] != lab_v[:, None])
        mask = np.where(bad_u[:, :, None] | bad_v[:, None, :], -np.inf, 0.0)
        self.mask = mask
        # incidence (m x N) of each end, for summing per-link gradients back to entities
        n = graph.n_nodes
        rows = np.arange(m)
        self.inc_u = sp.csr_matrix((np.ones(m), (self.e[:, 0], rows)), shape=(n, m))
        self.inc_v = sp.csr_matrix((np.ones(m), (self.e[:, 1], rows)), shape=(n, m))
        self.x = graph.features
        self.layout = layout
        self.C = C

    def value_and_grad(self, theta: np.ndarray):
        lay = self.layout
        coef, intercept, pw = lay.unpack(theta)
        s = _unary(self.x, coef, intercept)
        t = s[self.e[:, 0]][:, :, None] + s[self.e[:, 1]][:, None, :] + _edge_scores(self.design, pw)
        m, k = t.shape[0], lay.k
        flat = t.reshape(m, k * k)
        lz_free = logsumexp(flat, axis=1)
        lz_obs = logsumexp((t + self.mask).reshape(m, k * k), axis=1)
        nll = float(np.sum(lz_free - lz_obs))
        p_free = np.exp(flat - lz_free[:, None]).reshape(m, k, k)
        p_obs = np.exp((t + self.mask).reshape(m, k * k) - lz_obs[:, None]).reshape(m, k, k)
        d = p_free - p_obs  # d nll / d t
        d_s = self.inc_u @ d.sum(axis=2) + self.inc_v @ d.sum(axis=1)  # (N, k)
        d_coef = np.asarray((self.x.T @ d_s).T) if sp.issparse(self.x) else d_s.T @ self.x
        grad = self.C * lay.pack(d_coef, d_s.sum(axis=0), _template_grad(self.design, d, lay))
        w = theta * lay.penalized
        return self.C * nll + 0.5 * float(w @ w), grad + w


def _pair_joint(graph, gfeat, coef, intercept, pw) -> np.ndarray:
    """``(E, k, k)`` estimated ``P(y_u, y_v | E)`` of every link of ``graph``."""
    s = _unary(graph.features, coef, intercept)
    e = graph.edges
    design = _template_design(graph.edge_types, gfeat, pw.shape[0])
    t = s[e[:, 0]][:, :, None] + s[e[:, 1]][:, None, :] + _edge_scores(design, pw)
    m, k = t.shape[0], s.shape[1]
    flat = t.reshape(m, k * k)
    return np.exp(flat - logsumexp(flat, axis=1, keepdims=True)).reshape(m, k, k)


def _mutual_information(joint: np.ndarray) -> np.ndarray:
    """Mutual information (nats) of each ``(k, k)`` joint distribution in ``joint`` (E, k, k)."""
    pu = joint.sum(axis=2, keepdims=True)
    pv = joint.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = joint * (np.log(joint) - np.log(pu) - np.log(pv))
    return np.maximum(np.where(joint > 0, terms, 0.0).sum(axis=(1, 2)), 0.0)


def _max_spanning_forest(n: int, edges: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Indices (sorted) of the links of a maximum-weight spanning forest of the graph ``edges``."""
    if edges.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    lo = np.minimum(edges[:, 0], edges[:, 1])
    hi = np.maximum(edges[:, 0], edges[:, 1])
    # every spanning forest has the same number of links, so maximizing w = minimizing (c - w) > 0
    cost = (weights.max() + 1.0) - weights
    g = sp.csr_matrix((cost, (lo, hi)), shape=(n, n))
    t = minimum_spanning_tree(g).tocoo()
    a, b = np.minimum(t.row, t.col), np.maximum(t.row, t.col)
    key = lo.astype(np.int64) * n + hi
    order = np.argsort(key)
    idx = order[np.searchsorted(key[order], a.astype(np.int64) * n + b)]
    return np.sort(idx)


class _CRFProblem:
    """Negative conditional log-likelihood of the known labels of a graph under the tree CRF on a forest."""

    def __init__(self, graph: RelationalGraph, forest: np.ndarray, gfeat: np.ndarray, layout: _Layout, C: float):
        self.x = graph.features
        self.labels = graph.labels
        self.fe = graph.edges[forest]
        self.design = _template_design(graph.edge_types[forest], gfeat[forest], layout.r)
        self.layout = layout
        self.C = C
        # the clamped and the free model share one forest: validated and rooted once, reused by every
        # L-BFGS evaluation
        self.forest = CompiledForest([self.fe, self.fe], graph.n_nodes)

    def _inference(self, theta: np.ndarray):
        coef, intercept, pw = self.layout.unpack(theta)
        s = _unary(self.x, coef, intercept)
        psi = _edge_scores(self.design, pw)
        return forest_marginals(self.forest, np.stack([_clamp(s, self.labels), s]), np.concatenate([psi, psi]))

    def negative_log_likelihood(self, theta: np.ndarray) -> float:
        lz_obs, lz_free = self._inference(theta)[2]
        return float(lz_free - lz_obs)

    def value_and_grad(self, theta: np.ndarray):
        lay = self.layout
        node_m, edge_m, logz = self._inference(theta)
        lz_obs, lz_free = logz
        nll = float(lz_free - lz_obs)
        d_s = node_m[1] - node_m[0]  # d nll / d unary
        d_coef = np.asarray((self.x.T @ d_s).T) if sp.issparse(self.x) else d_s.T @ self.x
        if self.fe.shape[0]:
            ne = self.fe.shape[0]
            d_psi = edge_m[ne:] - edge_m[:ne]
        else:
            d_psi = np.zeros((0, lay.k, lay.k))
        grad = self.C * lay.pack(d_coef, d_s.sum(axis=0), _template_grad(self.design, d_psi, lay))
        w = theta * lay.penalized
        return self.C * nll + 0.5 * float(w @ w), grad + w


def _lbfgs(problem, theta0: np.ndarray, max_iter: int, tol: float, what: str):
    """``(theta, n_iter, objective, converged)``; a ConvergenceWarning (at the caller of ``fit``) when it
    did not converge."""
    res = minimize(
        problem.value_and_grad,
        theta0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol, "ftol": 64 * np.finfo(float).eps},
    )
    converged, n_iter = lbfgs_outcome(res, f"RelationalESSCRF: L-BFGS-B on the {what}", stacklevel=5)
    return res.x, n_iter, float(res.fun), converged


def _graph_list(graph_or_list) -> list:
    """``graph_or_list`` as a non-empty list of RelationalGraph (a TypeError naming it otherwise)."""
    graphs = [graph_or_list] if isinstance(graph_or_list, RelationalGraph) else graph_or_list
    if not isinstance(graphs, (list, tuple)) or not graphs:
        raise TypeError(
            f"`graph_or_list` must be a RelationalGraph or a non-empty list of them; got {_describe(graph_or_list)}."
        )
    return list(graphs)


def _predict_map(s: np.ndarray, forest_edges: np.ndarray, psi: np.ndarray) -> np.ndarray:
    """The jointly most probable labelling (exact max-product on the forest)."""
    return np.array(tree_map(s, forest_edges, psi).assignment, dtype=np.int64)


def _predict_max_marginal(s: np.ndarray, forest_edges: np.ndarray, psi: np.ndarray) -> np.ndarray:
    """Each entity's most probable label under its exact marginal."""
    marginals = tree_marginals_batch(s[None], [forest_edges], [psi]).marginals[0]
    return np.argmax(np.asarray(marginals), axis=1).astype(np.int64)


#: ``predict(graph, method=...)``, as the propositional CRFs' ``METHODS``
_METHODS = {"map": _predict_map, "max_marginal": _predict_max_marginal}


# --------------------------------------------------------------------------- estimator
class RelationalESSCRF(BaseEstimator):
    """Relational CRF with evidence-specific tree structure (Chechetka & Guestrin 2010, Alg. 4).

    Parameters
    ----------
    C : float, default 1.0
        Inverse L2 regularization strength of the CRF weights, as scikit-learn's ``LogisticRegression``:
        ``fit`` minimizes ``-sum_graphs log p(known labels | E) + ||w||^2 / (2 C)`` over the weights ``w``
        (unary weights and pair templates; the intercepts are not penalized). L-BFGS runs on ``C`` times
        that, ``0.5 ||w||^2 + C * NLL`` (scikit-learn's form, the same minimizer). Smaller is stronger.
    structure_C : float, default 1.0
        The same for the template model of ``P(y_u, y_v | E)`` that scores the links, whose likelihood is
        that of the links' known ends (an unknown end marginalized).
    pair_features : {"cosine", "none"}, default "cosine"
        Features of a link that multiply the ``k x k`` pair templates: ``[1, cos(x_u, x_v)]`` or ``[1]``.
    n_states : int, optional
        Number of labels ``k`` (each entity's label is one of ``0 .. k-1``); by default
        ``max(2, max(known labels) + 1)`` of the training graphs.
    n_classes : int, optional
        Deprecated alias of ``n_states`` (a ``DeprecationWarning`` in ``fit``); removed in the next release.
    max_iter : int, default 500
        L-BFGS iteration budget of each of the two fits (structure model, CRF).
    tol : float, default 1e-4
        L-BFGS tolerance on the largest gradient entry (``gtol``) of the objective in scikit-learn's form.

    Attributes
    ----------
    n_states_, n_features_in_, n_relations_ : int
    coef_ : ndarray of shape (n_states_, n_features_in_)
        Unary weights (label x features), shared by all entities.
    intercept_ : ndarray of shape (n_states_,)
    pairwise_ : ndarray of shape (n_relations_, G, n_states_, n_states_)
        Symmetric pair templates per relation and pair feature (``G = 2`` for ``"cosine"``, else 1).
    structure_coef_, structure_intercept_, structure_pairwise_
        The same for the template model that chooses the structure.
    n_iter_, structure_n_iter_ : int
        L-BFGS iterations of the CRF fit and of the structure model's fit.
    converged_, structure_converged_ : bool
        Whether each fit met ``tol`` (otherwise it issued a :class:`tractable.ConvergenceWarning`).
    objective_ : float
        The CRF fit's final objective, in scikit-learn's form.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 10)
    >>> x = rng.normal(size=(20, 3)) + y[:, None]
    >>> edges = [(i, i + 1) for i in range(19) if y[i] == y[i + 1]] + [(0, 10), (3, 15)]
    >>> g = RelationalGraph(x, edges, labels=np.where(np.arange(20) % 2 == 0, y, -1))
    >>> model = RelationalESSCRF(C=1.0).fit(g)
    >>> model.predict(g).shape, model.predict_marginals(g).sum(axis=1).round(6).min()
    ((20,), np.float64(1.0))
    >>> model.log_likelihood(g).shape, model.converged_
    ((1,), True)
    """

    def __init__(
        self,
        *,
        C=1.0,
        structure_C=1.0,
        pair_features="cosine",
        n_states=None,
        n_classes=None,
        max_iter=500,
        tol=1e-4,
    ):
        self.C = C
        self.structure_C = structure_C
        self.pair_features = pair_features
        self.n_states = n_states
        self.n_classes = n_classes
        self.max_iter = max_iter
        self.tol = tol

    @property
    def n_classes_(self) -> int:
        """Deprecated alias of :attr:`n_states_` (removed in the next release)."""
        warnings.warn("`RelationalESSCRF.n_classes_` is deprecated; use `n_states_`.", DeprecationWarning, stacklevel=2)
        return self.n_states_

    # ---- checks
    def _check_params(self) -> int | None:
        """Check the parameters; return ``n_states`` (``n_classes`` converted, with its DeprecationWarning)."""
        check_C(self.C)
        check_C(self.structure_C, "structure_C")
        check_choice(self.pair_features, "pair_features", PAIR_FEATURES)
        n_states = check_n_states(self.n_states)
        if self.n_classes is not None:
            warnings.warn(
                "`n_classes` is deprecated and will be removed in the next release; use `n_states` (same meaning).",
                DeprecationWarning,
                stacklevel=3,
            )
            if n_states is not None:
                raise ValueError(
                    f"give `n_states` or the deprecated `n_classes`, not both; got n_states={self.n_states!r} "
                    f"and n_classes={self.n_classes!r}."
                )
            n_states = check_n_states(self.n_classes, "n_classes")
        check_max_iter(self.max_iter)
        check_tol(self.tol)
        return n_states

    def _check_graph(self, graph, name: str = "graph", *, fitted: bool = True) -> RelationalGraph:
        """``graph`` is a RelationalGraph and, for a fitted model (``fitted``), fits its features,
        relations and labels."""
        if not isinstance(graph, RelationalGraph):
            raise TypeError(f"`{name}` must be a RelationalGraph; got {_describe(graph)}.")
        if fitted:
            if graph.n_features != self.n_features_in_:
                raise ValueError(
                    f"`{name}` has {graph.n_features} features per entity; the model was fitted with "
                    f"{self.n_features_in_}."
                )
            if graph.n_edges and graph.edge_types.max() >= self.n_relations_:
                raise ValueError(
                    f"`{name}.edge_types` must be < {self.n_relations_} (relations seen in fit); "
                    f"got {int(graph.edge_types.max())}."
                )
            if graph.labels.max(initial=-1) >= self.n_states_:
                raise ValueError(
                    f"`{name}.labels` must be < {self.n_states_} (the model's `n_states_`) or -1; "
                    f"got {int(graph.labels.max())}."
                )
        return graph

    # ---- structure
    def _layout(self) -> _Layout:
        g = 2 if self.pair_features == "cosine" else 1
        return _Layout(self.n_states_, self.n_features_in_, self.n_relations_, g)

    def edge_information(self, graph: RelationalGraph) -> np.ndarray:
        """Mutual information (nats) of the estimated ``P(y_u, y_v | E)`` of every link of ``graph``, (E,)."""
        check_is_fitted(self, "coef_")
        graph = self._check_graph(graph)
        return self._edge_information(graph, _pair_features(graph, self.pair_features))

    def _edge_information(self, graph, gfeat) -> np.ndarray:
        joint = _pair_joint(graph, gfeat, self.structure_coef_, self.structure_intercept_, self.structure_pairwise_)
        return _mutual_information(joint)

    def structure(self, graph: RelationalGraph, *, clamped: bool = False) -> np.ndarray:
        """Indices (into ``graph.edges``, sorted) of the links of the evidence-specific structure.

        Parameters
        ----------
        graph : RelationalGraph
        clamped : bool, default False
            False: the maximum spanning forest of the whole link graph under the links' mutual
            information (the structure of the likelihood in :meth:`fit` and :meth:`log_likelihood`).
            True: the structure of :meth:`predict` given the graph's known labels: the maximum spanning
            forest of the links between entities of unknown label, plus every link with a known end
            (a known label is evidence, so such a link is a unary term of its other end and closes no
            cycle of the conditional model).
        """
        check_is_fitted(self, "coef_")
        graph = self._check_graph(graph)
        gfeat = _pair_features(graph, self.pair_features)
        if not clamped:
            return self._structure(graph, gfeat)
        forest, folded = self._clamped_structure(graph, gfeat)
        return np.sort(np.concatenate([forest, folded]))

    def _structure(self, graph, gfeat) -> np.ndarray:
        return _max_spanning_forest(graph.n_nodes, graph.edges, self._edge_information(graph, gfeat))

    def _clamped_structure(self, graph, gfeat):
        """(forest over the links between unknown entities, links with exactly one known end)."""
        e = graph.edges
        ku, kv = graph.known[e[:, 0]], graph.known[e[:, 1]]
        inner = np.flatnonzero(~ku & ~kv)
        mi = self._edge_information(graph, gfeat)
        forest = inner[_max_spanning_forest(graph.n_nodes, e[inner], mi[inner])]
        return forest, np.flatnonzero(ku != kv)

    # ---- fit
    def fit(self, graph_or_list, y=None):
        """Learn the structure model and the CRF weights from the known labels of one graph or a list.

        Parameters
        ----------
        graph_or_list : RelationalGraph or sequence of RelationalGraph
            Training graphs; only their known labels (``>= 0``) enter the likelihood.
        y : None
            Present for scikit-learn compatibility only: the labels are part of the graphs. Anything but
            ``None`` is a ``ValueError``.

        Returns
        -------
        self
        """
        check_no_y(y, "fit")
        n_states = self._check_params()
        graphs = _graph_list(graph_or_list)
        for i, g in enumerate(graphs):
            self._check_graph(g, f"graph_or_list[{i}]", fitted=False)
        nf = {g.n_features for g in graphs}
        if len(nf) > 1:
            raise ValueError(f"`graph_or_list` graphs must have the same number of features; got {sorted(nf)}.")
        graph, _ = _union(graphs)
        if not graph.known.any():
            raise ValueError("`graph_or_list` has no known label (all labels are -1); nothing to learn from.")
        top = int(graph.labels.max())
        if n_states is not None and top >= n_states:
            name = "n_states" if self.n_states is not None else "n_classes"
            raise ValueError(f"`graph_or_list` labels must be < `{name}` = {n_states}; got {top}.")
        self.n_states_ = n_states if n_states is not None else max(2, top + 1)
        self.n_features_in_ = graph.n_features
        self.n_relations_ = graph.n_relations
        layout = self._layout()
        gfeat = _pair_features(graph, self.pair_features)
        tol, max_iter = float(self.tol), int(self.max_iter)

        # 1. the template model of P(y_u, y_v | E) (Alg. 3, shared weights)
        pair = _PairProblem(graph, gfeat, layout, float(self.structure_C))
        theta = np.zeros(layout.size)
        if pair.e.shape[0]:
            theta, self.structure_n_iter_, _, self.structure_converged_ = _lbfgs(
                pair, theta, max_iter, tol, "structure model"
            )
        else:
            self.structure_n_iter_, self.structure_converged_ = 0, True
        self.structure_coef_, self.structure_intercept_, self.structure_pairwise_ = (
            np.array(a) for a in layout.unpack(theta)
        )
        # 2. evidence-specific forest, then exact L-BFGS on the CRF (warm start: the structure model)
        forest = self._structure(graph, gfeat)
        crf = _CRFProblem(graph, forest, gfeat, layout, float(self.C))
        theta, self.n_iter_, self.objective_, self.converged_ = _lbfgs(crf, theta, max_iter, tol, "CRF likelihood")
        self.coef_, self.intercept_, self.pairwise_ = (np.array(a) for a in layout.unpack(theta))
        return self

    # ---- inference
    def _model(self, graph: RelationalGraph):
        """Unary scores, forest and pair scores of the model conditioned on the graph's known labels.

        A link with one known end ``a`` adds ``pair score[y_a, :]`` to its other end's unary scores; links
        between two known entities are constants; the forest spans the links between unknown entities.
        """
        gfeat = _pair_features(graph, self.pair_features)
        forest, folded = self._clamped_structure(graph, gfeat)
        e, y = graph.edges, graph.labels
        s = _unary(graph.features, self.coef_, self.intercept_)
        psi = _edge_scores(_template_design(graph.edge_types, gfeat, self.n_relations_), self.pairwise_)
        u_known = graph.known[e[folded, 0]]
        a, b = folded[u_known], folded[~u_known]  # links (known, unknown) and (unknown, known)
        np.add.at(s, e[a, 1], psi[a, y[e[a, 0]], :])
        np.add.at(s, e[b, 0], psi[b, :, y[e[b, 1]]])
        return _clamp(s, y), e[forest], psi[forest]

    def predict(self, graph: RelationalGraph, *, method: str = "map") -> np.ndarray:
        """The labels of every entity of ``graph`` given its known labels (exact, on the forest of
        :meth:`structure` with ``clamped=True``).

        Parameters
        ----------
        graph : RelationalGraph
        method : {"map", "max_marginal"}, default "map"
            ``"map"``: the jointly most probable labelling (exact max-product); ``"max_marginal"``: each
            entity's most probable label.

        Returns
        -------
        ndarray of shape (N,), int64
            Known labels are returned as they are.
        """
        fn = resolve_method(method, _METHODS)
        check_is_fitted(self, "coef_")
        graph = self._check_graph(graph)
        s, fe, psi = self._model(graph)
        y = fn(s, fe, psi)
        known = graph.known
        y[known] = graph.labels[known]
        return y

    def predict_marginals(self, graph: RelationalGraph) -> np.ndarray:
        """Exact marginals ``P(y_i | E, known labels)`` (on the forest of :meth:`structure` with ``clamped=True``).

        Returns
        -------
        ndarray of shape (N, n_states_)
            Row ``i`` is entity ``i``'s distribution; rows of known labels are one-hot.
        """
        check_is_fitted(self, "coef_")
        graph = self._check_graph(graph)
        s, fe, psi = self._model(graph)
        return np.array(tree_marginals_batch(s[None], [fe], [psi]).marginals[0])

    def log_likelihood(self, graph_or_list) -> np.ndarray:
        """``log p(known labels | E)`` of every graph, the unknown labels marginalized (no penalty).

        The likelihood that :meth:`fit` maximizes, each graph on the spanning forest of its whole link graph
        (``structure(graph)``); a graph is one sample.

        Parameters
        ----------
        graph_or_list : RelationalGraph or sequence of RelationalGraph

        Returns
        -------
        ndarray of shape (n_graphs,)
            Shape ``(1,)`` for one graph.
        """
        check_is_fitted(self, "coef_")
        graphs = _graph_list(graph_or_list)
        name = "graph" if isinstance(graph_or_list, RelationalGraph) else "graph_or_list[{}]"
        layout = self._layout()
        theta = np.concatenate([self.coef_.ravel(), self.intercept_, self.pairwise_.ravel()])
        out = np.empty(len(graphs))
        for i, graph in enumerate(graphs):
            graph = self._check_graph(graph, name.format(i))
            gfeat = _pair_features(graph, self.pair_features)
            forest = self._structure(graph, gfeat)
            out[i] = -_CRFProblem(graph, forest, gfeat, layout, 1.0).negative_log_likelihood(theta)
        return out

    def score(self, graph_or_list, y=None) -> float:
        """Mean of :meth:`log_likelihood` over the graphs (higher is better).

        Parameters
        ----------
        graph_or_list : RelationalGraph or sequence of RelationalGraph
        y : None
            Present for scikit-learn compatibility only; anything but ``None`` is a ``ValueError``.

        Returns
        -------
        float
        """
        check_no_y(y, "score")
        return float(np.mean(self.log_likelihood(graph_or_list)))
