"""The branch-free closed forms for terms with one or two unknowns against the general kernels.

Hinges, squared hinges and constraints with at most two unknowns take a vectorized route in the
ADMM term pass, the consensus step's projections and the certificate. Each is checked here against
the general code (breakpoint sweep) or the readable references, on inputs built to hit the edge
cases: targets exactly on the box's faces, zero coefficients, coinciding breakpoints.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tractable.datasets import opinion_diffusion
from tractable.hlmrf import _kernels, bound
from tractable.hlmrf.bound import term_minima, term_minimum_reference
from tractable.hlmrf.partition import _split_constraints
from tractable.hlmrf.updates import local_update_reference, local_updates

# both sides are exact up to rounding; they bracket the root differently, so they agree to a few
# ulps of the magnitudes involved (at most ~10 here)
ATOL = 1e-11

_edge = st.sampled_from([0.0, 1.0, -0.5, 1.5, 0.5, 0.25, 2.0, -1.0])


@st.composite
def small_problems(draw):
    k = draw(st.integers(1, 2))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    d = rng.uniform(-0.8, 1.8, size=k)
    c = rng.choice([-1.0, 1.0, 0.0, rng.uniform(-2, 2)], size=k, p=[0.3, 0.3, 0.1, 0.3])
    # some targets exactly on the box's faces or on each other's breakpoints
    for i in range(k):
        if draw(st.booleans()):
            d[i] = draw(_edge)
    b = float(draw(st.one_of(_edge, st.floats(-2.0, 2.0))))
    w = float(draw(st.sampled_from([0.5, 1.0, rng.uniform(0.01, 3.0)])))
    rho = float(draw(st.sampled_from([1.0, 0.25, rng.uniform(0.1, 5.0)])))
    return d, c, b, w, rho


@settings(max_examples=300, deadline=None)
@given(small_problems(), st.sampled_from(["hinge", "squared", "leq", "eq"]))
def test_closed_form_local_update_matches_reference(problem, kind):
    d, c, b, w, rho = problem
    got = local_updates(kind, [0, d.size], c, [b], [w], d, rho=rho)
    np.testing.assert_allclose(got, local_update_reference(kind, d, c, b, w, rho), atol=ATOL)


@settings(max_examples=200, deadline=None)
@given(small_problems(), st.sampled_from(["leq", "eq"]), st.integers(0, 2**32 - 1))
def test_weighted_projection_matches_breakpoint_sweep(problem, kind, seed):
    # the consensus step projects in the norm weighted by the copy counts: sc = 1 / count
    d, c, b, _, _ = problem
    k = d.size
    sc = 1.0 / np.random.default_rng(seed).integers(1, 9, size=k)
    code = _kernels.KIND_LEQ if kind == "leq" else _kernels.KIND_EQ
    fast = np.empty(k)
    n_pair, n_single = (1, 0) if k == 2 else (0, 1)
    _kernels._fast_projections(n_pair, n_single, d, sc, c, np.array([b]), np.array([code], np.int8), fast)
    general = np.empty(k)
    _kernels.local_update(code, d, sc, 0, c, 0, b, 0.0, 1.0, k, general, np.empty(2 * k), 0)
    np.testing.assert_allclose(fast, general, atol=ATOL)


@settings(max_examples=400, deadline=None)
@given(small_problems(), st.sampled_from(["hinge", "squared", "leq", "eq"]))
def test_closed_form_term_minimum_is_valid_and_exact(problem, kind):
    yv, c, b, w, _ = problem
    y = 2.0 * yv - 1.0  # linear costs of both signs
    ker = term_minima(kind, [0, y.size], c, [b], [w], y)[0]
    ref = term_minimum_reference(kind, y, c, b, w)
    if ref == np.inf:  # a constraint that misses the box: any finite value is a valid bound
        assert np.isfinite(ker)
        return
    assert ker <= ref + 1e-12
    assert abs(ker - ref) <= 1e-12 * max(1.0, abs(ref))


def _ordered(terms, order):
    indptr, idx, coef, const, weight, kind = terms
    lengths = np.diff(indptr)[order]
    ip = np.zeros(order.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=ip[1:])
    pos = np.repeat(indptr[order] - ip[:-1], lengths) + np.arange(ip[-1])
    return ip, idx[pos], coef[pos], const[order], weight[order], kind[order]


def _state(terms, n, seed):
    rng = np.random.default_rng(seed)
    z = rng.uniform(0, 1, n)
    x = np.clip(z[terms[1]] + rng.normal(0, 0.2, terms[1].size), 0, 1)
    return x, rng.normal(0, 0.5, terms[1].size), z


def test_block_pass_vectorized_prefix_matches_general_route():
    comp = opinion_diffusion(600, mean_degree=1.5, rng=3)._compile()
    terms, _ = _split_constraints(comp, "auto")
    n = comp.free.size
    n_pair, n_single = _kernels.fast_counts(terms[0], terms[5], terms[4])
    assert n_pair > 0 and n_single > 0 and n_pair + n_single == terms[5].size
    x0, y0, z = _state(terms, n, 0)
    out = []
    for counts in ((n_pair, n_single), (0, 0)):
        x, y, acc, sums = x0.copy(), y0.copy(), np.empty(n), np.empty(3)
        zz = np.empty(2 * counts[0] + counts[1])
        _kernels.block_pass(*terms, *counts, x, y, z, 1.0, 1.6, acc, sums, np.empty(8), zz)
        out.append((x, y, acc, sums))
    for fast, general in zip(*out):
        np.testing.assert_allclose(fast, general, rtol=1e-12, atol=ATOL)


def test_certificate_does_not_depend_on_the_route():
    comp = opinion_diffusion(600, squared=True, mean_degree=1.5, rng=4)._compile()
    terms, zc = _split_constraints(comp, "auto")
    x, y, z = _state(terms, comp.free.size, 1)
    fast = np.empty(3)
    bound.certificate(*terms, y, z, *zc, 10.0, fast)
    # a zero term with three unknowns in front: no leading run of simple terms, so the general
    # sweep runs everywhere (the zero term adds exactly 0 to the bound and the objective)
    indptr, idx, coef, const, weight, kind = terms
    gterms = (
        np.r_[0, indptr + 3],
        np.r_[[0, 1, 2], idx],
        np.r_[[0.0, 0.0, 0.0], coef],
        np.r_[0.0, const],
        np.r_[0.0, weight],
        np.r_[np.int8(0), kind].astype(np.int8),
    )
    assert _kernels.fast_counts(gterms[0], gterms[5], gterms[4]) == (0, 0)
    general = np.empty(3)
    bound.certificate(*gterms, np.r_[[0.0, 0.0, 0.0], y], z, *zc, 10.0, general)
    np.testing.assert_allclose(fast, general, rtol=1e-11)


def test_kernel_order_puts_simple_terms_first():
    indptr = np.array([0, 3, 4, 6, 8, 9, 11])
    kind = np.array([0, 0, 0, 2, 1, 0], np.int8)
    weight = np.array([1.0, 1.0, 1.0, 0.0, 2.0, 0.0])
    order = _kernels.kernel_order(indptr, kind, weight)
    # two unknowns first (the hinge), then one (hinge, squared), then the rest: arity 3, the
    # constraint and the weight-0 hinge, each group in the given order
    np.testing.assert_array_equal(order, [2, 1, 4, 0, 3, 5])
    ip, *_, w, k = _ordered((indptr, np.arange(11), np.ones(11), np.zeros(6), weight, kind), order)
    assert _kernels.fast_counts(ip, k, w) == (1, 2)


def test_parallel_runs_match_the_one_thread_kernel():
    # runs cut anywhere (inside the pairs, the singles or the general terms) give the same iterates
    # and bounds as the one-thread kernel, up to the order of the floating-point sums
    model = opinion_diffusion(500, mean_degree=1.5, rng=6)
    model.add_potential([0, 1, 2], [1.0, -1.0, 0.5], constant=-0.2, weight=0.7)  # a general term too
    comp = model._compile()
    terms, zc = _split_constraints(comp, "auto")
    n = comp.free.size
    cnt = np.bincount(terms[1], minlength=n).astype(float)

    def run(chunks):
        x, y, z = np.zeros(terms[1].size), np.zeros(terms[1].size), np.zeros(n)
        stats = np.array([0.0, np.inf, 0.0, 0.0, 0.0])
        state = (x, y, z, 1.0, 1.6, 0.0, 0.0, False, 30, stats)
        if chunks is None:
            _kernels.admm_run(*terms, cnt, *state, *zc)
            cert = bound.certificate(*terms, y, z, *zc, float(cnt.max()), np.empty(3))
        else:
            _kernels.admm_run_parallel(*terms, cnt, chunks, *state, *zc)
            cert = bound.certificate_parallel(*terms, chunks, y, z, *zc, float(cnt.max()), np.empty(3))
        return x, y, z, cert

    ref = run(None)
    for n_chunks in (1, 3, 7):
        chunks = _kernels.parallel_chunks(terms[0], n_chunks)
        assert chunks[0] == 0 and chunks[-1] == terms[5].size and chunks.size == n_chunks + 1
        for got, want in zip(run(chunks), ref):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)
