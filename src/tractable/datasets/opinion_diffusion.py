"""Opinion-diffusion hinge-loss MRFs on synthetic social networks (Bach et al. 2012, Example 1, Sec. 4.1).

A social network of voters with six relationship types is drawn as in Broecheler et al. (2010):
for every type, each voter's in- and out-degree is drawn from a truncated power law
``D(k) = alpha k^-gamma`` (``k >= 1``; the remaining mass is degree 0), incoming and outgoing stubs
are matched at random until no more matches are possible (self-loops and repeated edges dropped),
and voters left without any edge are removed. Each voter gets an intrinsic opinion uniform in
[-1, 1] (on the grid of multiples of 0.001 without 0, so that the exported PSL data are exact decimals
and PSL grounds every opinion potential) and two variables, its preference for the liberal (L) and
the conservative (C) party, with ``X_L + X_C <= 1``. Potentials (all with the same exponent ``p``):

* opinion, weight 0.5: ``max(|opinion| - X_L, 0)`` if the opinion is negative,
  ``max(opinion - X_C, 0)`` if it is positive;
* per edge ``(a, b)`` of type ``tau``, weight ``Lambda_tau``: ``max(X_{b,L} - X_{a,L}, 0)`` and
  ``max(X_{b,C} - X_{a,C}, 0)``.

With the default parameters ``n_voters`` between 22,050 and 66,150 gives between about 130,000 and
400,000 potentials plus constraints, 84% of them potentials, as in the paper's Sec. 4.1.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validate import check_int, check_memory, check_rng

__all__ = ["opinion_diffusion", "OpinionNetwork", "EDGE_TYPES"]

#: relationship types: (name, gamma, alpha, weight Lambda_tau); gamma in [2, 3] and alpha in (0, 1)
#: as Sec. 4.1 prescribes, mixing abundant (small gamma) and exclusive (large gamma) relationships.
EDGE_TYPES = (
    ("friend", 2.3, 0.18, 0.8),
    ("family", 2.9, 0.20, 0.9),
    ("coworker", 2.6, 0.16, 0.4),
    ("boss", 3.0, 0.12, 0.6),
    ("neighbor", 2.5, 0.12, 0.3),
    ("acquaintance", 2.2, 0.08, 0.2),
)
OPINION_WEIGHT = 0.5
#: largest degree drawn (the power law is truncated there)
MAX_DEGREE = 1000
#: a lower bound on the memory one voter takes (two variables, degrees, potentials): refuses the hopeless
_BYTES_PER_VOTER = 64


@dataclass(frozen=True)
class OpinionNetwork:
    """The social network behind an opinion-diffusion model.

    Attributes
    ----------
    opinions : ndarray of shape (n_voters,)
        Intrinsic opinions in [-1, 1] (negative: liberal).
    edges : ndarray of shape (n_edges, 2)
        Directed edges ``(a, b)``: voter ``a`` is influenced by voter ``b``.
    edge_types : ndarray of shape (n_edges,)
        Index into ``type_names`` of every edge.
    type_names : tuple of str
    type_weights : ndarray of shape (6,)
        ``Lambda_tau`` of every type.
    opinion_weight : float
    squared : bool
        Exponent 2 (True) or 1 (False) of every potential.

    Notes
    -----
    Voter ``a`` owns the model variables ``2 a`` (liberal) and ``2 a + 1`` (conservative).
    """

    opinions: np.ndarray
    edges: np.ndarray
    edge_types: np.ndarray
    type_names: tuple
    type_weights: np.ndarray
    opinion_weight: float
    squared: bool

    @property
    def n_voters(self) -> int:
        return int(self.opinions.size)

    def psl_rules(self) -> str:
        """The PSL rules (one per line) whose grounding over :meth:`write_psl`'s data is this model."""
        p = "^2" if self.squared else "^1"
        lines = [f"{self.opinion_weight!r}: Intrinsic(A, P) -> Pref(A, P) {p}"]
        for name, w in zip(self.type_names, self.type_weights):
            rel = "Rel" + name.capitalize()
            lines.append(f"{float(w)!r}: {rel}(A, B) & Pref(B, P) -> Pref(A, P) {p}")
        lines.append("Pref(A, +P) <= 1 .")
        return "\n".join(lines) + "\n"

    def write_psl(self, directory) -> dict:
        """Write the network as PSL data files plus the rules, so that PSL grounds the same model.

        Files (tab-separated, voters named ``v<index>``, parties ``L`` / ``C``): ``model.psl`` (rules),
        ``intrinsic_obs.txt`` (voter, party, |opinion|: only the party the opinion favours),
        ``rel_<type>_obs.txt`` (voter a, voter b) for each type, ``pref_targets.txt`` (voter, party).

        Returns
        -------
        dict
            Predicate or file role -> path written.
        """
        out = Path(os.fspath(directory))
        out.mkdir(parents=True, exist_ok=True)
        paths = {"rules": out / "model.psl"}
        paths["rules"].write_text(self.psl_rules())
        names = np.char.add("v", np.arange(self.n_voters).astype(str))
        nz = np.flatnonzero(self.opinions != 0)
        party = np.where(self.opinions[nz] < 0, "L", "C")
        paths["Intrinsic"] = out / "intrinsic_obs.txt"
        _write_tsv(paths["Intrinsic"], [names[nz], party, [repr(float(v)) for v in np.abs(self.opinions[nz])]])
        for t, name in enumerate(self.type_names):
            e = self.edges[self.edge_types == t]
            key = "Rel" + name.capitalize()
            paths[key] = out / f"rel_{name}_obs.txt"
            _write_tsv(paths[key], [names[e[:, 0]], names[e[:, 1]]])
        paths["Pref"] = out / "pref_targets.txt"
        _write_tsv(paths["Pref"], [np.repeat(names, 2), np.tile(["L", "C"], self.n_voters)])
        return {k: str(v) for k, v in paths.items()}


def _write_tsv(path: Path, columns) -> None:
    rows = ["\t".join(map(str, r)) for r in zip(*columns)]
    path.write_text("\n".join(rows) + ("\n" if rows else ""))


def _degree_law(gamma: float, alpha: float, mean: float | None) -> np.ndarray:
    """Probabilities of the degrees 0..MAX_DEGREE: ``alpha k^-gamma`` for ``k >= 1`` (``mean=None``),
    or the power law ``k^-gamma`` on ``k >= k_min`` mixed with degree 0 so that the mean is ``mean``
    (smallest ``k_min`` that allows it: the tail keeps its exponent ``gamma``)."""
    k = np.arange(1, MAX_DEGREE + 1, dtype=np.float64)
    if mean is None:
        pk = alpha * k**-gamma
        return np.concatenate([[1.0 - pk.sum()], pk])
    w = k**-gamma
    # mean of the law restricted to k >= k_min, for every k_min
    tail_w = np.cumsum(w[::-1])[::-1]
    tail_kw = np.cumsum((k * w)[::-1])[::-1]
    means = tail_kw / tail_w
    k_min = int(np.searchsorted(means, mean)) + 1  # means increase with k_min
    pk = np.where(k >= k_min, w, 0.0) / tail_w[k_min - 1] * (mean / means[k_min - 1])
    return np.concatenate([[max(1.0 - pk.sum(), 0.0)], pk])


def _check_mean_degree(mean_degree) -> np.ndarray | None:
    if mean_degree is None:
        return None
    arr = np.asarray(mean_degree, dtype=object if isinstance(mean_degree, str) else None)
    if arr.dtype.kind not in "iuf" or arr.ndim > 1 or (arr.ndim == 1 and arr.size != len(EDGE_TYPES)):
        raise ValueError(
            f"`mean_degree` must be a number or a sequence of {len(EDGE_TYPES)} numbers (one per edge type); "
            f"got {mean_degree!r}."
        )
    arr = np.broadcast_to(arr.astype(np.float64), (len(EDGE_TYPES),))
    bad = ~(np.isfinite(arr) & (arr > 0) & (arr <= MAX_DEGREE))
    if bad.any():
        raise ValueError(f"`mean_degree` must be > 0 and <= {MAX_DEGREE} (finite); got {float(arr[bad][0])}.")
    return arr


def opinion_diffusion(n_voters: int, *, squared: bool = False, mean_degree=None, rng=None):
    """An opinion-diffusion hinge-loss MRF on a random social network (Bach et al. 2012, Sec. 4.1).

    Parameters
    ----------
    n_voters : int
        Number of voters drawn before isolated voters are removed (``>= 2``; the model keeps about
        96% of them).
    squared : bool
        Squared hinge potentials (``p = 2``) instead of linear ones (``p = 1``).
    mean_degree : float or sequence of 6 floats, optional
        Expected out-degree (= in-degree) of a voter in each relationship type (one number for all
        types, or one per type of :data:`EDGE_TYPES`), in (0, 1000]. Default: the paper's laws
        ``alpha k^-gamma`` (about 0.1 to 0.6 per type, some 5 potentials per voter). When given, each
        type's degrees follow ``k^-gamma`` (same ``gamma``) on ``k >= k_min``, mixed with degree 0,
        with the smallest ``k_min`` that reaches the mean; every voter then has about
        ``1 + 2 * sum(mean_degree)`` potentials (``mean_degree=1.5``: about 18) before self-loops and
        repeated edges are dropped.
    rng : None, int or numpy.random.Generator
        Randomness of the network and the opinions.

    Returns
    -------
    HLMRF
        With ``2 * network.n_voters`` variables (voter ``a``: ``2 a`` liberal, ``2 a + 1``
        conservative), one opinion potential per voter with a non-zero opinion, two potentials per
        edge and one constraint ``X_L + X_C <= 1`` per voter; ``model.network`` is the
        :class:`OpinionNetwork` (with :meth:`OpinionNetwork.write_psl` to export it for PSL).

    Examples
    --------
    >>> from tractable.datasets import opinion_diffusion
    >>> m = opinion_diffusion(1000, rng=0)
    >>> m.n_constraints == m.network.n_voters
    True
    """
    from ..hlmrf import HLMRF

    n_voters = check_int(n_voters, "n_voters", minimum=2)
    check_memory(n_voters, _BYTES_PER_VOTER, "n_voters", "voters")
    if not isinstance(squared, (bool, np.bool_)):
        raise TypeError(f"`squared` must be a bool; got {squared!r}.")
    means = _check_mean_degree(mean_degree)
    rng = check_rng(rng)
    src_all, dst_all, typ_all = [], [], []
    for t, (_, gamma, alpha, _) in enumerate(EDGE_TYPES):
        probs = _degree_law(gamma, alpha, None if means is None else float(means[t]))
        outdeg = rng.choice(MAX_DEGREE + 1, size=n_voters, p=probs)
        indeg = rng.choice(MAX_DEGREE + 1, size=n_voters, p=probs)
        out_stubs = rng.permutation(np.repeat(np.arange(n_voters), outdeg))
        in_stubs = rng.permutation(np.repeat(np.arange(n_voters), indeg))
        n = min(out_stubs.size, in_stubs.size)
        src_all.append(out_stubs[:n])
        dst_all.append(in_stubs[:n])
        typ_all.append(np.full(n, t))
    src, dst, typ = (np.concatenate(a) for a in (src_all, dst_all, typ_all))
    keep = src != dst
    src, dst, typ = src[keep], dst[keep], typ[keep]
    # drop repeated (a, b, type) edges: PSL data are sets of atoms
    key = (typ * n_voters + src) * n_voters + dst
    _, first = np.unique(key, return_index=True)
    first.sort()
    src, dst, typ = src[first], dst[first], typ[first]
    # remove isolated voters and renumber
    used = np.zeros(n_voters, dtype=bool)
    used[src] = True
    used[dst] = True
    renum = np.cumsum(used) - 1
    src, dst = renum[src], renum[dst]
    n_kept = int(used.sum())
    # uniform on the grid {±0.001, ±0.002, ..., ±1}: the exported PSL data then carry exact decimal values,
    # and no opinion is so close to 0 that PSL would drop its ground rule
    u = rng.uniform(-1.0, 1.0, size=n_voters)[used]
    opinions = np.sign(u) * np.maximum(np.ceil(np.abs(u) * 1000.0), 1.0) / 1000.0
    weights = np.array([w for *_, w in EDGE_TYPES])
    network = OpinionNetwork(
        opinions=opinions,
        edges=np.column_stack([src, dst]),
        edge_types=typ,
        type_names=tuple(name for name, *_ in EDGE_TYPES),
        type_weights=weights,
        opinion_weight=OPINION_WEIGHT,
        squared=bool(squared),
    )
    for a in (network.opinions, network.edges, network.edge_types, network.type_weights):
        a.flags.writeable = False

    model = HLMRF(2 * n_kept)
    # opinion potentials: max(|op| - X_party, 0)
    voters = np.flatnonzero(opinions != 0)
    var = 2 * voters + (opinions[voters] > 0)
    model.add_potentials(
        np.arange(voters.size + 1), var, -np.ones(voters.size), np.abs(opinions[voters]), OPINION_WEIGHT, bool(squared)
    )
    # edge potentials: max(X_{b,P} - X_{a,P}, 0) for both parties P
    n_e = src.size
    a_var = np.stack([2 * src, 2 * src + 1], axis=1).ravel()  # (2 n_e,) edge e -> rows 2e (L), 2e + 1 (C)
    b_var = np.stack([2 * dst, 2 * dst + 1], axis=1).ravel()
    variables = np.stack([b_var, a_var], axis=1).ravel()
    coefs = np.tile([1.0, -1.0], 2 * n_e)
    model.add_potentials(np.arange(0, 4 * n_e + 1, 2), variables, coefs, 0.0, np.repeat(weights[typ], 2), bool(squared))
    # X_L + X_C <= 1
    model.add_constraints(np.arange(0, 2 * n_kept + 1, 2), np.arange(2 * n_kept), np.ones(2 * n_kept), -1.0, "<=")
    model.network = network
    return model
