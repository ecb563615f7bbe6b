"""Compiled kernels of belief propagation: cardinality-factor messages (all factors of a group in one call),
exact sum-product on forests, and loopy BP's engine: the variables' belief sums (:func:`var_beliefs`) and the
whole-group update of table factors (:func:`table_pairs` for pairwise factors over binary variables,
:func:`table_general` for any others, compiled on first use).

Every cardinality kernel reads the incoming log messages ``mu[e, 0:2]`` (variable -> factor, normalized,
so the larger entry is at most 0 and no entry is NaN; one entry may be ``-inf``) of each factor's edges
``edges[indptr[a]:indptr[a + 1]]`` and writes the outgoing log messages ``out[e, 0:2]`` (factor ->
variable), up to a constant per edge. ``f[f_ptr[a]:f_ptr[a + 1]]`` is factor ``a``'s count potential.

Compilation time is part of the design (a fresh install compiles each kernel once, on its first call,
1 to 1.5 ms of CPU per statement of typed numba IR): every kernel has one signature (the callers pass
C-contiguous int64 / float64 / bool arrays), allocates nothing (the callers pass the scratch space, sized
by :func:`chain_work_size` and :func:`sort_work_sizes`), compiles no numba library routine with it
(``np.argsort``'s quicksort, as slow to compile as the kernel around it, is written out), and
writes each computation once (``inline="always"`` only for :func:`_send`, whose one call site, in the loop body
that both passes of :func:`tree_sum_product` share, is hot). Helpers that only kernels call are compiled without a
Python entry point (``no_cpython_wrapper``) and use no builtin (``max``) whose implementation numba would compile
once more for their options.
"""

from __future__ import annotations

import numpy as np

from .._numba import njit

_NINF = -np.inf


@njit(no_cpython_wrapper=True)
def _lae(x, y):
    """``log(exp(x) + exp(y))``, exact for ``-inf`` operands."""
    if x == _NINF:
        return y
    if y == _NINF:
        return x
    if x > y:
        return x + np.log1p(np.exp(y - x))
    return y + np.log1p(np.exp(x - y))


def chain_work_size(indptr, kmax) -> int:
    """Length of the float64 scratch array of :func:`chain_sum_messages` for these factors."""
    if indptr.shape[0] < 2:
        return 1
    return int(((np.diff(indptr) + 2) * (kmax + 1) + 1).max())


def sort_work_sizes(indptr) -> tuple:
    """Lengths of the float64 and int64 scratch arrays of :func:`sort_max_messages` for these factors."""
    d = int(np.diff(indptr).max()) if indptr.shape[0] > 1 else 0
    return 6 * d + 3, 2 * d + 2 * _SORT_STACK


@njit
def chain_sum_messages(indptr, edges, f_ptr, f, kmax, flip, mu, out, logz, work):
    """Sum-product messages of cardinality factors by the log-space chain, O(D * (kmax + 1)) each.

    The chain of Tarlow et al. (2012), Sec. 6.1, run on the incoming messages as per-state weights
    ``w_d(0) = mu[e_d, 0]``, ``w_d(1) = mu[e_d, 1]``: ``alpha[d, k]`` sums the weights of the first
    ``d`` variables with ``k`` of them on, ``beta[j]`` the weights of the variables after ``d`` times
    ``f(j + their count)``. The message to variable ``d`` is ``sum_j alpha[d, j] beta[j + y_d]`` and
    never involves ``w_d``: no division by the incoming message, so ``-inf`` weights (clamped
    variables) need no special case. Counts above ``kmax[a]`` (the largest count with finite ``f``)
    have zero mass and are not stored. With ``flip[a]`` the chain runs on ``1 - y`` (reversed ``f``),
    which is cheaper when only counts near ``D`` are allowed.

    ``logz[a]`` receives ``log sum_y exp(f(|y|) + sum_d w_d(y_d))``, the factor's local partition
    function given its incoming messages. ``work`` is float64 scratch of :func:`chain_work_size` entries.
    """
    for a in range(indptr.shape[0] - 1):
        e0 = indptr[a]
        d_total = indptr[a + 1] - e0
        fa = f[f_ptr[a] : f_ptr[a + 1]]
        km = kmax[a]
        y0 = 1 if flip[a] else 0  # the chain's state 0 is y = y0
        y1 = 1 - y0
        w = km + 1
        # alpha[d, k] = work[d * w + k] (d = 0 .. D), beta[j] = work[nb + j] (j = 0 .. km + 1)
        nb = (d_total + 1) * w
        work[0] = 0.0
        for k in range(1, w):
            work[k] = _NINF
        for d in range(d_total):
            e = edges[e0 + d]
            w0 = mu[e, y0]
            w1 = mu[e, y1]
            r = d * w
            work[r + w] = work[r] + w0
            for k in range(1, w):
                work[r + w + k] = _lae(work[r + k] + w0, work[r + k - 1] + w1)
        for j in range(w):
            work[nb + j] = fa[d_total - j] if y0 else fa[j]
        work[nb + w] = _NINF
        for d in range(d_total - 1, -1, -1):
            e = edges[e0 + d]
            s0 = _NINF
            s1 = _NINF
            for j in range(w):
                x = work[d * w + j]
                if x != _NINF:
                    s0 = _lae(s0, x + work[nb + j])
                    s1 = _lae(s1, x + work[nb + j + 1])
            out[e, y0] = s0
            out[e, y1] = s1
            w0 = mu[e, y0]
            w1 = mu[e, y1]
            for j in range(w):  # in place: beta[j + 1] is still the old one
                work[nb + j] = _lae(work[nb + j] + w0, work[nb + j + 1] + w1)
        z = _NINF
        for k in range(w):
            z = _lae(z, work[d_total * w + k] + (fa[d_total - k] if y0 else fa[k]))
        logz[a] = z


#: partitions numba's quicksort may keep on its stack (it asserts the same bound); two int64 entries each
_SORT_STACK = 100
#: below this many entries a quicksort partition is insertion-sorted (numba's ``SMALL_QUICKSORT``)
_SMALL_SORT = 15


@njit
def sort_max_messages(indptr, edges, f_ptr, f, mu, out, work, iwork):
    """Max-product messages of cardinality factors by sorting, O(D log D) each.

    With ``theta_d = w_d(1) - w_d(0)`` the message to ``d`` is, up to a constant,
    ``max_k f(k) + (best sum of the theta of the other variables that are on)``. Sorting the free
    variables' ``theta`` in decreasing order with prefix sums ``S``, the best sum of ``j`` others is
    ``S[j]`` when ``d`` ranks at ``j`` or below and ``S[j + 1] - theta_d`` otherwise, so prefix and
    suffix maxima over ``j`` give every message in O(D). Variables whose incoming message forbids a
    state (``theta = ±inf``) are clamped: they shift the count instead of being sorted.
    ``work`` (float64) and ``iwork`` (int64) are scratch of :func:`sort_work_sizes` entries.
    """
    for a in range(indptr.shape[0] - 1):
        e0 = indptr[a]
        d_total = indptr[a + 1] - e0
        fa = f[f_ptr[a] : f_ptr[a + 1]]
        theta = work[:d_total]
        s = work[d_total : 2 * d_total + 1]
        pre1 = work[2 * d_total + 1 : 3 * d_total + 1]
        pre0 = work[3 * d_total + 1 : 4 * d_total + 1]
        suf1 = work[4 * d_total + 1 : 5 * d_total + 2]
        suf0 = work[5 * d_total + 2 : 6 * d_total + 3]
        free = iwork[:d_total]
        order = iwork[d_total : 2 * d_total]
        n_on = 0
        n_free = 0
        for d in range(d_total):
            e = edges[e0 + d]
            if mu[e, 0] == _NINF:
                n_on += 1
            elif mu[e, 1] != _NINF:
                theta[n_free] = mu[e, 1] - mu[e, 0]
                free[n_free] = d
                n_free += 1
        # order = np.argsort(-theta[:n_free]), numba's quicksort written out step for step (median-of-three
        # partitions, the larger part pushed on a stack, insertion sort below _SMALL_SORT entries; ``a > b`` on
        # theta is its ``-a < -b``), so ties come out in numba's order and no sorting routine is compiled
        stack = iwork[2 * d_total :]
        for i in range(n_free):
            order[i] = i
        if n_free > 1:
            stack[0] = 0
            stack[1] = n_free - 1
            top = 1
            while top > 0:
                top -= 1
                low = stack[2 * top]
                high = stack[2 * top + 1]
                while high - low >= _SMALL_SORT:
                    mid = (low + high) >> 1
                    if theta[order[mid]] > theta[order[low]]:
                        order[low], order[mid] = order[mid], order[low]
                    if theta[order[high]] > theta[order[mid]]:
                        order[high], order[mid] = order[mid], order[high]
                    if theta[order[mid]] > theta[order[low]]:
                        order[low], order[mid] = order[mid], order[low]
                    pivot = theta[order[mid]]
                    order[high], order[mid] = order[mid], order[high]
                    i = low
                    j = high - 1
                    while True:
                        while i < high and theta[order[i]] > pivot:
                            i += 1
                        while j >= low and pivot > theta[order[j]]:
                            j -= 1
                        if i >= j:
                            break
                        order[i], order[j] = order[j], order[i]
                        i += 1
                        j -= 1
                    order[i], order[high] = order[high], order[i]
                    if high - i > i - low:
                        if high > i:
                            stack[2 * top] = i + 1
                            stack[2 * top + 1] = high
                            top += 1
                        high = i - 1
                    else:
                        if i > low:
                            stack[2 * top] = low
                            stack[2 * top + 1] = i - 1
                            top += 1
                        low = i + 1
                for i in range(low + 1, high + 1):
                    r = order[i]
                    v = theta[r]
                    j = i
                    while j > low and v > theta[order[j - 1]]:
                        order[j] = order[j - 1]
                        j -= 1
                    order[j] = r
        s[0] = 0.0
        for r in range(n_free):
            s[r + 1] = s[r] + theta[order[r]]
        # free variable at rank r: others' best j-sum is s[j] (j <= r) or s[j + 1] - theta (j > r)
        # m(1) = max_j g[j + 1] + T(j), m(0) = max_j g[j] + T(j), g[k] = f[n_on + k], j = 0 .. n_free - 1
        if n_free > 0:
            suf1[n_free] = _NINF
            suf0[n_free] = _NINF
            run1 = _NINF
            run0 = _NINF
            for j in range(n_free):
                run1 = max(run1, fa[n_on + j + 1] + s[j])
                run0 = max(run0, fa[n_on + j] + s[j])
                pre1[j] = run1
                pre0[j] = run0
            for j in range(n_free - 1, -1, -1):
                suf1[j] = max(suf1[j + 1], fa[n_on + j + 1] + s[j + 1])
                suf0[j] = max(suf0[j + 1], fa[n_on + j] + s[j + 1])
            for r in range(n_free):
                i = order[r]
                t = theta[i]
                e = edges[e0 + free[i]]
                out[e, 0] = max(pre0[r], suf0[r + 1] - t)
                out[e, 1] = max(pre1[r], suf1[r + 1] - t)
        # clamped variables: j = number of free variables on, count = clamped-on others + j (+ 1): a variable
        # clamped on gets (lo, mid), one clamped off (mid, hi)
        n_off = d_total - n_on - n_free
        lo = _NINF  # max_j f[n_on - 1 + j] + s[j]
        mid = _NINF  # max_j f[n_on + j] + s[j]
        hi = _NINF  # max_j f[n_on + 1 + j] + s[j]
        for j in range(n_free + 1):
            mid = max(mid, fa[n_on + j] + s[j])
            if n_on > 0:
                lo = max(lo, fa[n_on - 1 + j] + s[j])
            if n_off > 0:
                hi = max(hi, fa[n_on + 1 + j] + s[j])
        for d in range(d_total):
            e = edges[e0 + d]
            if mu[e, 0] == _NINF:
                out[e, 0] = lo
                out[e, 1] = mid
            elif mu[e, 1] == _NINF:
                out[e, 0] = mid
                out[e, 1] = hi


@njit(inline="always")
def _send(pairwise, base, s_out, s_in, work, r_in, r_out, k):
    """A normalized message through one edge of :func:`tree_sum_product` (upward and downward).

    ``work[r_out, i] = log sum_j exp(pairwise[base + i s_out + j s_in] + work[r_in, j])``, then minus its
    log normalizer, whose ``(max, log sum exp(. - max))`` is returned (``(-inf, 0)``, the row left as it
    is, when every entry is ``-inf``). Inlined (at its one call site): a call per node costs k = 2 models
    measurable time.
    """
    for i in range(k):
        m = _NINF
        for j in range(k):
            v = pairwise[base + i * s_out + j * s_in] + work[r_in, j]
            if v > m:
                m = v
        s = 0.0
        if m != _NINF:
            for j in range(k):
                s += np.exp(pairwise[base + i * s_out + j * s_in] + work[r_in, j] - m)
        work[r_out, i] = m + np.log(s) if m != _NINF else m
    m = _NINF
    for i in range(k):
        if work[r_out, i] > m:
            m = work[r_out, i]
    if m == _NINF:
        return m, 0.0
    s = 0.0
    for i in range(k):
        s += np.exp(work[r_out, i] - m)
    ls = np.log(s)
    for i in range(k):
        work[r_out, i] -= m + ls
    return m, ls


@njit
def tree_sum_product(order, parent, edge, child_is_v, unary, pairwise, node_m, edge_m, contrib, work):
    """Exact sum-product on a rooted forest, nodes in ``order`` (every parent before its children).

    The compiled form of :func:`tractable.bp.tree._sum_product_python` (which stays as the readable
    twin): an upward pass in reverse ``order`` (each node's message to its parent, normalized, its log
    normalizer in ``contrib``), then a downward pass in ``order`` giving each node's message from its
    parent, the edge marginals, the node marginals and the roots' log normalizers; a parent's incoming
    messages are kept as a finite sum plus a count of ``-inf`` terms, so the cavity (parent belief
    without one child) never computes ``-inf - -inf``.

    ``pairwise`` and ``edge_m`` are the (E, k, k) tables flattened (C order): the entry
    ``[y_parent, y_child]`` of node ``c``'s edge is at ``edge[c] k^2 + y_parent s_p + y_child s_c`` with
    strides ``(s_p, s_c) = (k, 1)`` when ``c`` is the edge's second node and ``(1, k)`` otherwise, so one
    loop serves both orientations and :func:`_send` both directions. Writes ``node_m`` (N, k), ``edge_m``
    in the edges' given orientation and ``contrib`` (N,); ``work`` is (5 N + 1, k) float64 scratch, zero
    on entry. Returns False when some tree has no configuration of positive mass.
    """
    n, k = unary.shape
    kk = k * k
    # rows of work: [0, n) finite part of the children's messages (fin), [n, 2n) their number of -inf
    # terms (ninf), [2n, 3n) message to the parent (up), [3n, 4n) message from the parent (down), [4n, 5n)
    # unary + children (below), 5n the cavity of the node being processed
    NI = n
    UP = 2 * n
    DN = 3 * n
    BE = 4 * n
    CAV = 5 * n
    # phase 0: the upward pass (nodes in reverse order); phase 1: the downward pass (in order). One loop body for
    # both, so that the one call site of _send serves both directions (inlined, it is compiled once)
    for phase in range(2):
        up = phase == 0
        for t in range(n):
            c = order[n - 1 - t] if up else order[t]
            p = parent[c]
            if up:
                for b in range(k):
                    work[BE + c, b] = _NINF if work[NI + c, b] > 0 else unary[c, b] + work[c, b]
                if p < 0:
                    continue
            if p >= 0:
                base = edge[c] * kk
                sp, sc = (k, 1) if child_is_v[c] else (1, k)
                if up:
                    r_in = BE + c
                    r_out = UP + c
                    s_out = sp
                    s_in = sc
                else:
                    for a in range(k):
                        u = work[UP + c, a]
                        own = 1.0 if u == _NINF else 0.0
                        if work[NI + p, a] - own > 0:
                            work[CAV, a] = _NINF
                        else:
                            work[CAV, a] = unary[p, a] + work[DN + p, a] + work[p, a] - (0.0 if own else u)
                    r_in = CAV
                    r_out = DN + c
                    s_out = sc
                    s_in = sp
                m, ls = _send(pairwise, base, s_out, s_in, work, r_in, r_out, k)
                if up:
                    if m == _NINF:
                        return False
                    contrib[c] = m + ls
                    for a in range(k):
                        v = work[UP + c, a]
                        if v == _NINF:
                            work[NI + p, a] += 1.0
                        else:
                            work[p, a] += v
                    continue
                # edge marginal [y_parent, y_child], stored as [y_u, y_v] of the edge as given
                jm = _NINF
                for a in range(k):
                    for b in range(k):
                        v = work[CAV, a] + pairwise[base + a * sp + b * sc] + work[BE + c, b]
                        if v > jm:
                            jm = v
                s = 0.0
                for a in range(k):
                    for b in range(k):
                        i = base + a * sp + b * sc
                        w = np.exp(work[CAV, a] + pairwise[i] + work[BE + c, b] - jm)
                        s += w
                        edge_m[i] = w
                for i in range(base, base + kk):
                    edge_m[i] /= s
            for b in range(k):
                work[CAV, b] = work[BE + c, b] + work[DN + c, b]
            m = _NINF
            for b in range(k):
                if work[CAV, b] > m:
                    m = work[CAV, b]
            if m == _NINF:  # a root whose tree has no configuration of positive mass (children have some)
                return False
            s = 0.0
            for b in range(k):
                s += np.exp(work[CAV, b] - m)
            ls = np.log(s)
            if p < 0:  # a root's belief is its unary plus its children's messages: its log normalizer is m + ls
                contrib[c] = m + ls
            for b in range(k):
                node_m[c, b] = np.exp(work[CAV, b] - m - ls)
    return True


# --------------------------------------------------------------------------- the loopy engine and table factors
#: a sum-product message of :func:`table_pairs` with an entry below this (before normalization: ``exp(table -
#: max table)`` times the other variable's cavity weights, the larger 1) is recomputed in log space by
#: :func:`table_general`, where nothing underflows
_TINY = 1e-200


@njit(error_model="numpy")
def var_beliefs(var_ptr, var_edges, prior_fin, prior_ninf, nu, fin, ninf):
    """Each variable's prior plus its incoming messages ``nu``, as a finite part and a count of ``-inf`` terms.

    ``fin[v, y] = prior_fin[v, y] + sum nu[e, y]`` over the finite entries of the variable's edges
    ``var_edges[var_ptr[v]:var_ptr[v + 1]]`` (summed from 0 in edge order, as ``incidence @ nu`` does),
    ``ninf[v, y] = prior_ninf[v, y] +`` the number of ``-inf`` entries, so that a cavity (one message taken
    out again) never computes ``-inf - -inf``.
    """
    n, width = fin.shape
    for v in range(n):
        for y in range(width):
            s = 0.0
            c = 0.0
            for r in range(var_ptr[v], var_ptr[v + 1]):
                u = nu[var_edges[r], y]
                if u == _NINF:
                    c += 1.0
                else:
                    s += u
            fin[v, y] = prior_fin[v, y] + s
            ninf[v, y] = prior_ninf[v, y] + c


@njit(no_cpython_wrapper=True)
def _cavity_entry(fin, ninf, u):
    """One entry of a cavity: the belief ``fin`` (with ``ninf`` ``-inf`` terms) without the message entry ``u``."""
    if u == _NINF:
        return _NINF if ninf > 1.0 else fin
    return _NINF if ninf > 0.0 else fin - u


@njit(no_cpython_wrapper=True)
def _logaddexp(x, y):
    """``log(exp(x) + exp(y))`` as NumPy's ``logaddexp`` computes it (``-inf`` operands exact)."""
    if x == y:
        return x + np.log(2.0)
    d = x - y
    if d > 0:
        return x + np.log1p(np.exp(-d))
    return y + np.log1p(np.exp(d))


@njit(no_cpython_wrapper=True)
def _max_out(q0, q1, o0, o1, keep, lnew, lkeep):
    """A binary max-product message ``(q0, q1)`` shifted to maximum 0 and, with damping, mixed with the current
    one ``(o0, o1)`` and shifted again, as the engine's NumPy normalization and damping do."""
    top = q1 if q1 > q0 else q0  # max(q0, q1), without the builtin (compiled again for these options)
    q0 -= top
    q1 -= top
    if keep > 0.0:
        q0 = _logaddexp(lnew + q0, lkeep + o0)
        q1 = _logaddexp(lnew + q1, lkeep + o1)
        top = q1 if q1 > q0 else q0
        q0 -= top
        q1 -= top
    return q0, q1


@njit(no_cpython_wrapper=True)
def _sum_out(q0, q1, p0, p1, keep):
    """A binary sum-product message ``(q0, q1)`` (positive) as probabilities, mixed with the current ones
    ``(p0, p1)`` with damping: ``(r0, r1, log(r1 / r0), largest change)``."""
    inv = 1.0 / (q0 + q1)
    r0 = q0 * inv
    r1 = q1 * inv
    if keep > 0.0:
        r0 = (1.0 - keep) * r0 + keep * p0
        r1 = (1.0 - keep) * r1 + keep * p1
    c0 = abs(r0 - p0)
    c1 = abs(r1 - p1)
    return r0, r1, np.log(r1 / r0), c1 if c1 > c0 else c0  # max(c0, c1), without the builtin


@njit(error_model="numpy")
def table_pairs(
    pairs, fptr, fedge, tptr, tlog, texp, edge_var, fin, ninf, nu, nu_p, new, new_p, is_max, damping, later
):  # fmt: skip
    """New messages of the pairwise table factors ``pairs`` over two binary variables, in one pass.

    Factor ``f`` has edges ``fedge[fptr[f]:fptr[f + 1]]`` (its table's axes) and table ``tlog[tptr[f]:tptr[f] +
    4]`` (C order), ``texp`` being ``exp(tlog - max)`` per factor. For each edge ``e`` this writes the new log
    message ``new[e]`` from the variables' beliefs ``fin``, ``ninf`` (:func:`var_beliefs` of ``nu``), damped
    against the current one (``nu[e]``; ``nu_p[e]`` as normalized probabilities), on scalars.

    Max-product runs in log space exactly as the NumPy reference (:meth:`TableMessages.messages` and the
    engine's normalization and damping): the same sums, maxima and shifts. Its messages are normalized
    (maximum 0); ``new_p = exp(new)`` and the residual are left to the caller, as one vectorized ``exp``.

    Sum-product runs on probabilities: each cavity as weights (1 for its larger state, one ``exp`` for the
    other), each message ``sum texp * weights``, instead of a log-sum-exp per state of each message. A message
    is stored as ``(0, log(r1 / r0))`` for its new probabilities ``r`` (written to ``new_p``): beliefs and
    cavities only need it up to a constant, so this costs one ``log`` instead of two (the engine normalizes
    the final messages). A factor whose message has an entry below ``_TINY`` (where an underflow could matter)
    is left to :func:`table_general`, in log space, as is any factor with a cavity or a message that forbids
    both states of a variable (the general code flags them): their indices go to ``later`` (int64 scratch of
    ``len(pairs)``).

    Returns ``(the largest |new_p - nu_p| (sum-product; 0 for max-product), how many went to later)``.
    """
    keep = damping
    lkeep = np.log(damping) if damping > 0.0 else _NINF
    lnew = np.log1p(-damping)
    n_later = 0
    residual = 0.0
    for f in pairs:
        e0 = fptr[f]
        ea = fedge[e0]
        eb = fedge[e0 + 1]
        t0 = tptr[f]
        va = edge_var[ea]
        vb = edge_var[eb]
        xa0 = _cavity_entry(fin[va, 0], ninf[va, 0], nu[ea, 0])
        xa1 = _cavity_entry(fin[va, 1], ninf[va, 1], nu[ea, 1])
        xb0 = _cavity_entry(fin[vb, 0], ninf[vb, 0], nu[eb, 0])
        xb1 = _cavity_entry(fin[vb, 1], ninf[vb, 1], nu[eb, 1])
        ta = max(xa0, xa1)
        tb = max(xb0, xb1)
        if ta == _NINF or tb == _NINF:
            later[n_later] = f
            n_later += 1
            continue
        if is_max:  # to a: q[y] = max_z tlog[y, z] + mu_b[z]; to b: q[z] = max_y tlog[y, z] + mu_a[y]
            xa0 -= ta
            xa1 -= ta
            xb0 -= tb
            xb1 -= tb
            qa0 = max(tlog[t0] + xb0, tlog[t0 + 1] + xb1)
            qa1 = max(tlog[t0 + 2] + xb0, tlog[t0 + 3] + xb1)
            qb0 = max(tlog[t0] + xa0, tlog[t0 + 2] + xa1)
            qb1 = max(tlog[t0 + 1] + xa0, tlog[t0 + 3] + xa1)
            if max(qa0, qa1) == _NINF or max(qb0, qb1) == _NINF:  # a message forbids both states
                later[n_later] = f
                n_later += 1
                continue
            n0, n1 = _max_out(qa0, qa1, nu[ea, 0], nu[ea, 1], keep, lnew, lkeep)
            new[ea, 0] = n0
            new[ea, 1] = n1
            n0, n1 = _max_out(qb0, qb1, nu[eb, 0], nu[eb, 1], keep, lnew, lkeep)
            new[eb, 0] = n0
            new[eb, 1] = n1
            continue
        sa = np.exp(min(xa0, xa1) - ta)
        sb = np.exp(min(xb0, xb1) - tb)
        wa0 = 1.0 if xa0 == ta else sa
        wa1 = 1.0 if xa1 == ta else sa
        wb0 = 1.0 if xb0 == tb else sb
        wb1 = 1.0 if xb1 == tb else sb
        qa0 = texp[t0] * wb0 + texp[t0 + 1] * wb1
        qa1 = texp[t0 + 2] * wb0 + texp[t0 + 3] * wb1
        qb0 = texp[t0] * wa0 + texp[t0 + 2] * wa1
        qb1 = texp[t0 + 1] * wa0 + texp[t0 + 3] * wa1
        if min(min(qa0, qa1), min(qb0, qb1)) < _TINY:
            later[n_later] = f
            n_later += 1
            continue
        r0, r1, lodds, change = _sum_out(qa0, qa1, nu_p[ea, 0], nu_p[ea, 1], keep)
        new[ea, 0] = 0.0
        new[ea, 1] = lodds
        new_p[ea, 0] = r0
        new_p[ea, 1] = r1
        residual = max(residual, change)
        r0, r1, lodds, change = _sum_out(qb0, qb1, nu_p[eb, 0], nu_p[eb, 1], keep)
        new[eb, 0] = 0.0
        new[eb, 1] = lodds
        new_p[eb, 0] = r0
        new_p[eb, 1] = r1
        residual = max(residual, change)
    return residual, n_later


@njit(no_cpython_wrapper=True)
def _log_message(j, k, cards, digits, tlog, t0, size, mu, width, is_max, q, s):
    """One table factor's log message to its ``j``-th variable, over its ``size`` configurations (C order):
    ``q[y]`` for ``y < cards[j]`` receives the maximum (max-product) or the log-sum-exp (sum-product) over the
    configurations with ``y_j = y`` of ``tlog + sum of the others' mu`` (added left to right, as the NumPy
    reference adds its broadcast arrays); ``mu[i * width + y]`` is variable ``i``'s cavity, ``s`` scratch."""
    for rep in range(1 if is_max else 2):
        for y in range(cards[j]):
            if rep == 0:
                q[y] = _NINF
            else:
                s[y] = 0.0
        for i in range(k):
            digits[i] = 0
        for c in range(size):
            acc = tlog[t0 + c]
            for i in range(k):
                if i != j:
                    acc += mu[i * width + digits[i]]
            y = digits[j]
            if rep == 0:
                qy = q[y]
                q[y] = acc if acc > qy else qy  # max(q[y], acc), without the builtin
            elif acc != _NINF:
                s[y] += np.exp(acc - q[y])
            i = k - 1
            while i >= 0:
                digits[i] += 1
                if digits[i] < cards[i]:
                    break
                digits[i] = 0
                i -= 1
    if not is_max:
        for y in range(cards[j]):
            if q[y] != _NINF:
                q[y] += np.log(s[y])


@njit(error_model="numpy")
def table_general(
    factors, n_factors, fptr, fedge, tptr, tlog, edge_var, edge_card, fin, ninf, nu, nu_p, new, new_p, is_max,
    damping, work, iwork,
):  # fmt: skip
    """New messages of the table factors ``factors[:n_factors]``, of any arity and cardinalities, in log space.

    The layout and arguments are those of :func:`table_pairs`. Each message is the maximum (max-product) or
    log-sum-exp (sum-product) over the factor's configurations of its log table plus the other variables'
    cavities (:func:`_log_message`), shifted to maximum 0 or log-sum-exp 0 and, with damping, mixed with the
    current message and shifted again, all as the NumPy reference does. Sum-product also writes ``new_p``
    (probabilities); the current messages may be stored up to a constant (see :func:`table_pairs`).

    Returns ``(the largest |new_p - nu_p| (sum-product; 0 for max-product), flags)``: flag 1 when a cavity
    forbids every state of a variable, 2 when a message does (the caller raises). ``work`` is float64 scratch of
    ``(kmax + 2) width`` entries, ``iwork`` int64 scratch of ``2 kmax`` (``kmax`` the largest arity).
    """
    width = nu.shape[1]
    kmax = iwork.shape[0] // 2
    cards = iwork[:kmax]
    digits = iwork[kmax:]
    mu = work[: kmax * width]
    q = work[kmax * width : (kmax + 1) * width]
    s = work[(kmax + 1) * width : (kmax + 2) * width]
    lkeep = np.log(damping) if damping > 0.0 else _NINF
    lnew = np.log1p(-damping)
    residual = 0.0
    flags = 0
    for g in range(n_factors):
        f = factors[g]
        e0 = fptr[f]
        k = fptr[f + 1] - e0
        for i in range(k):  # the cavities, shifted to maximum 0
            e = fedge[e0 + i]
            cards[i] = edge_card[e]
            v = edge_var[e]
            top = _NINF
            for y in range(cards[i]):
                mu[i * width + y] = _cavity_entry(fin[v, y], ninf[v, y], nu[e, y])
                top = max(top, mu[i * width + y])
            if top == _NINF:
                flags |= 1
                continue
            for y in range(cards[i]):
                mu[i * width + y] -= top
        for j in range(k):
            e = fedge[e0 + j]
            c = cards[j]
            _log_message(j, k, cards, digits, tlog, tptr[f], tptr[f + 1] - tptr[f], mu, width, is_max, q, s)
            oshift = 0.0  # the current message minus this is normalized (sum-product may store it shifted)
            if not is_max:
                oshift = _NINF
                for y in range(c):
                    oshift = _logaddexp(oshift, nu[e, y])
            ok = True
            for rep in range(2):  # shift to maximum or log-sum-exp 0; with damping, mix and shift again
                top = _NINF
                for y in range(c):
                    top = max(top, q[y])
                if top == _NINF:
                    ok = False
                    break
                if not is_max:
                    t = 0.0
                    for y in range(c):
                        t += np.exp(q[y] - top)
                    top += np.log(t)
                for y in range(c):
                    q[y] -= top
                if rep == 1 or damping == 0.0:
                    break
                for y in range(c):
                    q[y] = _logaddexp(lnew + q[y], lkeep + nu[e, y] - oshift)
            if not ok:
                flags |= 2
                continue
            for y in range(c):
                new[e, y] = q[y]
                if not is_max:
                    new_p[e, y] = np.exp(q[y])
                    residual = max(residual, abs(new_p[e, y] - nu_p[e, y]))
    return residual, flags


# --------------------------------------------------------------------------- the blocks schedule: pairwise forests
@njit(error_model="numpy")
def forest_messages(parent, var, edge, psi, texp, hfin, hninf, nu, nu_p, new, new_p, is_max, damping, work):
    """Every message of a forest of pairwise factors given its variables' evidence, in one two-pass sweep.

    One iteration of loopy BP's ``"blocks"`` schedule for all its trees at once: the forest's nodes are
    variables, its edges pairwise factors. Nodes ``0 .. N-1`` are numbered parents first; node ``c`` is variable
    ``var[c]``, and a non-root's parent factor has log table ``psi[c]`` (K, K) as ``[y_parent, y_c]`` (``-inf``
    past either cardinality) and ``psi[N + c]`` as ``[y_c, y_parent]``, ``texp`` their exponentials scaled to
    maximum 1, edge ``edge[c]`` to the parent's variable and ``edge[N + c]`` to ``c``'s. The evidence of
    variable ``v`` is ``hfin[v]`` with ``hninf[v]`` ``-inf`` terms (:func:`var_beliefs` of its prior and its
    messages from the factors outside the forest).

    The upward pass (children first) sends each node's evidence plus its children's messages through its
    parent factor, the downward pass the parent's evidence plus its own parent's message plus its other
    children's (a cavity of finite sums and ``-inf`` counts, as :func:`tree_sum_product` keeps them): ``q[i] =
    OP_j table[i, j] + x[j]``, OP the maximum (``is_max``) or log-sum-exp. These are the exact BP messages of
    the forest given the evidence, the converged messages of its factors with the rest held fixed.
    Max-product shifts each to maximum 0. Sum-product runs on probabilities, as :func:`table_pairs` does:
    weights ``w = exp(x - max x)``, ``s = texp w``, probabilities ``s / sum s`` and the log message ``log(s /
    max s)`` (up to a constant): ``k - 1`` exponentials and ``k - 1`` logarithms instead of ``k^2`` and ``k +
    1``; a message with an entry below ``_TINY`` (where an underflow could matter, or a forbidden state) is
    recomputed in log space.

    After the sweep every message is written to ``new`` damped against the current ``nu`` / ``nu_p`` as the
    engine damps (in probability space), max-product shifted back to maximum 0, sum-product stored up to a
    constant (``log(p / max p)``, as :func:`table_pairs` stores its messages) with its probabilities in
    ``new_p``; the sweep itself runs on the undamped messages, kept in ``work`` (float64 scratch of shape (6 N
    + 1, K)). No helper function is called: an array passed to one costs reference counting per call, which
    here cost more than the messages.

    Returns ``(ok, the largest |new_p - nu_p|)`` (max-product: 0; the engine computes ``new_p`` and the residual
    of all rows at once), ``ok`` False when a message forbids every state (no configuration of positive mass).
    """
    n = parent.shape[0]
    k = psi.shape[1]
    # rows of work: [0, n) finite part of the children's messages, [n, 2n) their -inf counts, [2n, 4n) the
    # messages (to the parent, then from it), [4n, 6n) their probabilities (sum-product), 6n the node's
    # evidence (upward) or its parent's cavity (downward)
    NI = n
    MSG = 2 * n
    PR = 4 * n
    CAV = 6 * n
    for r in range(2 * n):
        for a in range(k):
            work[r, a] = 0.0
    for step in range(2 * n):
        if step < n:  # upward, children first
            c = n - 1 - step
            p = parent[c]
            if p < 0:
                continue
            v = var[c]
            for b in range(k):
                work[CAV, b] = _NINF if hninf[v, b] + work[NI + c, b] > 0.0 else hfin[v, b] + work[c, b]
            r = c
        else:  # downward, parents first: the parent's cavity without this child's message
            c = step - n
            p = parent[c]
            if p < 0:
                for a in range(k):
                    work[MSG + n + c, a] = 0.0
                continue
            vp = var[p]
            for a in range(k):
                u = work[MSG + c, a]
                own = 1.0 if u == _NINF else 0.0
                if hninf[vp, a] + work[NI + p, a] - own > 0.0:
                    work[CAV, a] = _NINF
                else:
                    work[CAV, a] = hfin[vp, a] + work[p, a] - (0.0 if own else u) + work[MSG + n + p, a]
            r = n + c
        # the message q[i] = OP_j psi[r, i, j] + work[CAV, j] into row MSG + r (probabilities: PR + r)
        top = _NINF
        for j in range(k):
            top = max(top, work[CAV, j])
        if top == _NINF:
            return False, 0.0
        fast = not is_max
        if fast:
            for j in range(k):
                x = work[CAV, j]
                work[PR + r, j] = 1.0 if x == top else np.exp(x - top)  # w, overwritten below
            total = 0.0
            smax = 0.0
            imax = 0
            for i in range(k):
                s = 0.0
                for j in range(k):
                    s += texp[r, i, j] * work[PR + r, j]
                work[MSG + r, i] = s
                total += s
                fast = fast and s >= _TINY
                if s > smax:
                    smax = s
                    imax = i
            if fast:
                for i in range(k):
                    s = work[MSG + r, i]
                    work[PR + r, i] = s / total
                    work[MSG + r, i] = 0.0 if i == imax else np.log(s / smax)
        if not fast:  # max-product, and sum-product near an underflow: in log space
            top = _NINF
            for i in range(k):
                m = _NINF
                for j in range(k):
                    m = max(m, psi[r, i, j] + work[CAV, j])
                if not is_max and m != _NINF:
                    s = 0.0
                    for j in range(k):
                        s += np.exp(psi[r, i, j] + work[CAV, j] - m)
                    m += np.log(s)
                work[MSG + r, i] = m
                top = max(top, m)
            if top == _NINF:
                return False, 0.0
            if not is_max:
                s = 0.0
                for i in range(k):
                    s += np.exp(work[MSG + r, i] - top)
                top += np.log(s)
            for i in range(k):
                work[MSG + r, i] -= top
                if not is_max:
                    work[PR + r, i] = np.exp(work[MSG + r, i])
        if step < n:
            for a in range(k):
                u = work[MSG + c, a]
                if u == _NINF:
                    work[NI + p, a] += 1.0
                else:
                    work[p, a] += u
    # the messages out, damped
    lkeep = np.log(damping) if damping > 0.0 else _NINF
    lnew = np.log1p(-damping)
    residual = 0.0
    for r in range(2 * n):
        if parent[r % n] < 0:
            continue
        e = edge[r]
        if is_max:
            if damping == 0.0:
                for y in range(k):
                    new[e, y] = work[MSG + r, y]
                continue
            top = _NINF
            for y in range(k):
                x = _logaddexp(lnew + work[MSG + r, y], lkeep + nu[e, y])
                new[e, y] = x
                top = max(top, x)
            for y in range(k):
                new[e, y] -= top
            continue
        if damping == 0.0:
            for y in range(k):
                q = work[PR + r, y]
                new[e, y] = work[MSG + r, y]
                new_p[e, y] = q
                residual = max(residual, abs(q - nu_p[e, y]))
            continue
        top = 0.0
        for y in range(k):
            q = (1.0 - damping) * work[PR + r, y] + damping * nu_p[e, y]
            new_p[e, y] = q
            top = max(top, q)
            residual = max(residual, abs(q - nu_p[e, y]))
        for y in range(k):
            q = new_p[e, y]
            new[e, y] = 0.0 if q == top else (np.log(q / top) if q > 0.0 else _NINF)
    return True, residual
