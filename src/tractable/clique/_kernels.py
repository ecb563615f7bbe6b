"""Compiled kernels of the clique-MAP algorithms.

They assume validated input: ``phi`` float64 (n, m) C-ordered without NaN/+inf, labels int64 in range,
and the potential given by its ``kind`` (one of the ``KIND_*`` codes below; ``_validate.kernel_args``
maps a potential to ``(kind, table, W)``) with ``table`` (m, >= n+1) float64 for SUM/MAX and ``W``
(m, m) float64 for MAJORITY (the unused one is a dummy (1, 1) array). ``-inf`` entries are allowed
everywhere; no ``inf - inf`` is ever formed.

Compilation (what a first call pays on a fresh install; see ``docs/clique.md``). numba spends it in
Python (typing and lowering, about in proportion to the IR statements) and in LLVM (optimizing and
generating machine code, for each kernel and again for every helper linked into it). So the methods
reach numba through four kernels of one signature each: :func:`_pass_labels` (alpha-pass, the batch
and generalized alpha-pass with ``p = 2``), :func:`icm_sweep`, :func:`expansion_search` and
:func:`_sweep_majority`, their arguments normalized in Python (C-ordered float64 and int64 arrays,
the potential as a code ``kind`` and arrays, never a function). Helpers (``@helper``) have no Python
wrapper and are called, not inlined (numba's ``inline="always"`` costs more than the calls it saves);
a helper with a single caller is written into that caller instead (the expansion move in
:func:`expansion_search`), since a helper is optimized and compiled to machine code on its own and
then again inside each kernel that links it. No NumPy
sort or array expression, four allocation signatures, no rewrite passes (``no_rewrites``), and loop variables
start from typed constants (``_I0``, ...), so that type inference settles in two passes instead of
four. Rarely used kernels (:func:`subset_pass_labels` for ``p >= 3``, :func:`sweep_values`,
:func:`sum_score`, :func:`argsort_stable`) compile only when reached.
"""

from __future__ import annotations

import numpy as np

from .._numba import njit

__all__ = [
    "KIND_GENERAL",
    "KIND_MAJORITY",
    "KIND_MAX",
    "KIND_SUM",
    "alpha_pass_labels",
    "argsort_stable",
    "expansion_move",
    "expansion_search",
    "icm_sweep",
    "pair_pass_labels",
    "pass_labels",
    "subset_pass_labels",
    "sum_score",
    "sweep_majority",
    "sweep_values",
]

KIND_SUM = 0  # C = sum_y table[y, n_y]
KIND_MAX = 1  # C = max_y table[y, n_y]
KIND_MAJORITY = 2  # C = sum_y W[a, y] n_y, a = argmax_y n_y (lowest index among ties)
KIND_GENERAL = 3  # any other potential: no kernel, evaluated in batches from Python

# module-level constants and functions are compile-time constants: one IR statement each where
# ``np.inf`` or ``np.empty`` costs two (a global and an attribute lookup) at every use
_INF = np.inf
_NEG_INF = -np.inf
_I64 = np.int64
_empty = np.empty
_SIGN = np.int64(-(2**63))  # the sign bit of an int64
# Loop variables start from these, not from literals: numba types ``k = 0`` as the literal 0 and
# widens it to int64 on the next pass of its type inference, which re-resolves every operation of
# the kernel; starting typed, a kernel's types settle in one pass (and a check), not three or four.
_I0 = np.int64(0)
_I1 = np.int64(1)
_IM1 = np.int64(-1)
_FALSE = np.bool_(False)
_TRUE = np.bool_(True)

#: a kernel, called from Python: compiled once per signature, without the C-callable wrapper numba
#: builds by default for first-class function use (nothing here needs it; it costs a tenth of the
#: compilation) and without numba's rewrite passes (the kernels have no array expression for them)
kernel = njit(no_cfunc_wrapper=True, no_rewrites=True)
#: a helper, called from kernels only, never from Python (it has no Python wrapper: calling one from
#: Python crashes the interpreter). Not cached either: its code is in the cache of each kernel that
#: calls it, and a cached helper would be compiled to machine code for nothing.
helper = njit(cache=False, no_cfunc_wrapper=True, no_cpython_wrapper=True, no_rewrites=True)


@helper
def _count_value(c, kind, table, W):
    """Potential value of one count vector ``c`` (m,) for the MAX and MAJORITY families (a SUM
    potential's value is kept up to date term by term, :func:`_sum_terms` and :func:`_sum_shift`)."""
    m = c.shape[0]
    if kind == KIND_MAX:
        s = _NEG_INF
        for y in range(m):
            v = table[y, c[y]]
            if v > s:
                s = v
        return s
    a = _I0
    for y in range(1, m):
        if c[y] > c[a]:
            a = y
    s = 0.0
    for y in range(m):
        s += W[a, y] * c[y]
    return s


@kernel
def sum_score(phi, labels, table):
    """Score ``sum_u phi[u, y_u] + sum_y table[y, n_y]`` of a labelling under a SUM potential."""
    n, m = phi.shape
    c = np.zeros(m, _I64)
    s = 0.0
    for u in range(n):
        s += phi[u, labels[u]]
        c[labels[u]] += 1
    for y in range(m):
        s += table[y, c[y]]
    return s


@helper
def _sum_terms(c, table):
    """(sum of the finite terms, number of -inf terms) of a SUM potential at counts ``c``."""
    fin = 0.0
    ninf = _I0
    for y in range(c.shape[0]):
        t = table[y, c[y]]
        if t == _NEG_INF:
            ninf += 1
        else:
            fin += t
    return fin, ninf


@helper
def _sum_shift(fin, ninf, table, y, old, new):
    """Update ``(fin, ninf)`` of a SUM potential when the count of label ``y`` goes from ``old`` to ``new``.

    O(1) per step instead of O(m); -inf terms are counted, never subtracted, so no inf - inf arises.
    """
    t = table[y, old]
    if t == _NEG_INF:
        ninf -= 1
    else:
        fin -= t
    t = table[y, new]
    if t == _NEG_INF:
        ninf += 1
    else:
        fin += t
    return fin, ninf


@kernel
def sweep_values(C0, frm, to, kind, table, W):
    """Clique values along sweeps.

    Sweep ``p`` starts at counts ``C0[p]`` (m,); at step ``k`` (1-based) one node moves from label
    ``frm[p, k-1]`` to ``to[p, k-1]``. Returns ``out`` (P, n+1) with ``out[p, k]`` the potential after
    ``k`` steps. O(P n) for SUM potentials (two terms change per step), O(P n m) otherwise.
    """
    P, n = frm.shape
    m = C0.shape[1]
    out = _empty((P, n + 1))
    c = _empty(m, _I64)
    for p in range(P):
        for y in range(m):
            c[y] = C0[p, y]
        if kind == KIND_SUM:
            fin, ninf = _sum_terms(c, table)
            out[p, 0] = _NEG_INF if ninf > 0 else fin
            for k in range(n):
                a = frm[p, k]
                b = to[p, k]
                c[a] -= 1
                fin, ninf = _sum_shift(fin, ninf, table, a, c[a] + 1, c[a])
                c[b] += 1
                fin, ninf = _sum_shift(fin, ninf, table, b, c[b] - 1, c[b])
                out[p, k + 1] = _NEG_INF if ninf > 0 else fin
            continue
        out[p, 0] = _count_value(c, kind, table, W)
        for k in range(n):
            c[frm[p, k]] -= 1
            c[to[p, k]] += 1
            out[p, k + 1] = _count_value(c, kind, table, W)
    return out


@kernel
def _sweep_majority(C0, frm, to):
    """:func:`sweep_majority`, its rows concatenated: (P (n+1),)."""
    P, n = frm.shape
    m = C0.shape[1]
    out = _empty(P * (n + 1), _I64)
    c = _empty(m, _I64)
    for p in range(P):
        for y in range(m):
            c[y] = C0[p, y]
        for k in range(n + 1):
            if k > 0:
                c[frm[p, k - 1]] -= 1
                c[to[p, k - 1]] += 1
            a = _I0
            for y in range(1, m):
                if c[y] > c[a]:
                    a = y
            out[p * (n + 1) + k] = a
    return out


def sweep_majority(C0, frm, to):
    """Majority label (lowest index among ties) along the sweeps of :func:`sweep_values`, (P, n+1)."""
    return _sweep_majority(C0, frm, to).reshape(frm.shape[0], frm.shape[1] + 1)


@kernel
def icm_sweep(phi, labels, counts, order, kind, table, W, tol):
    """One ICM sweep in ``order``, in place on ``labels`` and ``counts``; returns the number of changes.

    Each node takes the label that maximizes ``phi[u, y] + C(counts with u relabelled y)``; it moves
    only when that beats its current label by more than ``tol`` (so ties never cycle).
    """
    m = phi.shape[1]
    changed = _I0
    for t in range(order.shape[0]):
        u = order[t]
        cur = labels[u]
        counts[cur] -= 1
        best = cur
        if kind == KIND_SUM:
            # O(m) per node: the potential without u, then one term changes per candidate label
            fin0, ninf0 = _sum_terms(counts, table)
            fin, ninf = _sum_shift(fin0, ninf0, table, cur, counts[cur], counts[cur] + 1)
            cur_val = phi[u, cur] + (_NEG_INF if ninf > 0 else fin)
            best_val = cur_val
            for y in range(m):
                if y == cur:
                    continue
                fin, ninf = _sum_shift(fin0, ninf0, table, y, counts[y], counts[y] + 1)
                v = phi[u, y] + (_NEG_INF if ninf > 0 else fin)
                if v > best_val:
                    best_val = v
                    best = y
            if best != cur and best_val > cur_val + tol:
                labels[u] = best
                counts[best] += 1
                changed += 1
            else:
                counts[cur] += 1
            continue
        counts[cur] += 1
        cur_val = phi[u, cur] + _count_value(counts, kind, table, W)
        counts[cur] -= 1
        best_val = cur_val
        for y in range(m):
            if y == cur:
                continue
            counts[y] += 1
            v = phi[u, y] + _count_value(counts, kind, table, W)
            counts[y] -= 1
            if v > best_val:
                best_val = v
                best = y
        if best != cur and best_val > cur_val + tol:
            labels[u] = best
            counts[best] += 1
            changed += 1
        else:
            counts[cur] += 1
    return changed


@helper
def _move_key(a, b):
    # phi[u, alpha] - phi[u, y] without inf - inf: a forbidden target never moves first
    if a == _NEG_INF:
        return _NEG_INF
    if b == _NEG_INF:
        return _INF
    return a - b


@helper
def _prune_caps(phi, labels, counts, alpha, table, tol, nodes, start, keys, cap, N):
    """Shrink ``cap`` (the most nodes per label an optimal expansion move can switch); returns its sum.

    In an optimal move that switches the top ``j`` nodes of label ``i``, dropping the ``j``-th one
    must not help: ``key_j + f_i(n_i - j) - f_i(n_i - j + 1) + F(k) - F(k - 1) >= 0``, with
    ``F(k) = table[alpha, n_alpha + k]`` and ``k`` the move's size. If every move has ``k <= K``, the
    last term is at most ``sigma(K)``, the largest increment of ``F`` up to ``K``; so ``j`` is at most
    the last ``j`` that passes the test with ``sigma(K)``, and summing these caps gives a smaller
    ``K``. Iterated to a fixed point, this removes only moves that are not optimal. Finite ``phi`` and
    ``table`` only (the caller's ``prune`` flag).
    """
    m = phi.shape[1]
    ca = counts[alpha]
    K = N
    while True:
        sig = -np.inf
        for k in range(1, K + 1):
            d = table[alpha, ca + k] - table[alpha, ca + k - 1]
            if d > sig:
                sig = d
        newK = _I0
        for i in range(m):
            if i == alpha:
                continue
            ni = counts[i]
            s0 = start[i]
            last = _I0
            for j in range(1, cap[i] + 1):
                u = nodes[s0 + j - 1]
                if -keys[u] + (table[i, ni - j] - table[i, ni - j + 1]) + sig > -tol:
                    last = j
            cap[i] = last
            newK += last
        if newK >= K:
            return K
        K = newK


@kernel
def expansion_search(phi, labels, table, tol, max_iter, known, only, prune):
    """alpha-expansion moves over the labels in turn, in place on ``labels``; returns ``(rounds, converged, score)``.

    Each move is optimal, and taken only when it beats the current labelling by more than ``tol``:
    the dynamic program of Sec. 3.2.1 of [1]. For every label ``i != alpha`` the nodes labelled ``i``
    are sorted by ``phi[u, alpha] - phi[u, i]``; an optimal move switches a top prefix of each list,
    and ``D_i(k)``, the best score with ``k`` nodes of labels ``<= i`` switched, is a (max, +)
    convolution over ``i``; O(n^2 + n m) per move, on work arrays allocated once per search. The
    move is written into the search's loop, not called: as a helper of its own it was compiled by
    LLVM twice (alone, then again linked into this kernel): about 0.3 s of the area's first call,
    with no measured difference in speed (``benchmarks/clique_map.py``). A round tries ``alpha = 0, ..., m-1``.
    The search stops, converged, as soon as
    ``m`` moves in a row have failed (every label's move was tried on the current labelling), so the
    last round is usually cut short; else after ``max_iter`` rounds. ``known`` (n,) is a labelling
    already shown to be a local optimum (every move fails on it), or an empty array: the search also
    stops, converged, when it starts or a move lands on it, since every further move would fail.
    ``score`` is that of the final labelling, summed as :func:`sum_score` sums it.

    ``prune``: -1 caps the moves (:func:`_prune_caps`) when ``phi`` and ``table`` are finite (the
    caps are valid only then), 0 or 1 never or always (the tests). ``only >= 0``: a single move, of
    label ``only`` (``max_iter`` and ``known`` unused), and ``converged`` says whether it moved.
    """
    n, m = phi.shape
    counts = _empty(m, _I64)
    for y in range(m):
        counts[y] = 0
    for u in range(n):
        counts[labels[u]] += 1
    nodes = _empty(n, _I64)
    start = _empty(m + 1, _I64)
    keys = _empty(n)
    cap = _empty(m + 1, _I64)
    gkeys = _empty(n)
    order = _empty(2 * n, _I64)
    buf = _empty(n, _I64)
    D = _empty(n + 1)
    newD = _empty(n + 1)
    choice = _empty((m, n + 1), _I64)
    g = _empty(n + 1)
    if prune < 0:  # pruning needs finite phi and table (whose entries are finite or -inf)
        prune = _I1
        for u in range(n):
            for y in range(m):
                if phi[u, y] == _NEG_INF:
                    prune = _I0
        for y in range(m):
            for k in range(table.shape[1]):
                if table[y, k] == _NEG_INF:
                    prune = _I0
    done = only < 0 and known.shape[0] == n
    for u in range(n if done else 0):
        if labels[u] != known[u]:
            done = _FALSE
    rounds = 1 if done else max_iter
    moved = _FALSE
    failed = _I0  # moves in a row that changed nothing
    r = _I0  # rounds begun (a single move: 1)
    alpha = (only if only >= 0 else 0) - 1
    while not done:
        alpha += 1
        if alpha == m:
            alpha = _I0
        if only >= 0:
            if r == 1:
                break
            r = _I1
        elif alpha == 0:
            if r == max_iter:
                break
            r += 1
        # one optimal move of label alpha (see the docstring)
        # nodes grouped by label (by index), then each group sorted by decreasing move key, ties by node
        # index: a stable insertion sort per group, cheaper than one sort of all n for these small groups
        start[0] = 0
        for y in range(m):
            start[y + 1] = start[y] + counts[y]
        for y in range(m):
            choice[y, 0] = start[y]  # fill pointers, overwritten by the DP below
        for u in range(n):
            y = labels[u]
            keys[u] = 0.0 if y == alpha else -_move_key(phi[u, alpha], phi[u, y])
            nodes[choice[y, 0]] = u
            choice[y, 0] += 1
        for y in range(m):
            if y == alpha:
                continue
            lo = start[y]
            hi = start[y + 1]
            if hi - lo > 32:  # a stable sort of the group's keys (merge or radix: _argsort_stable)
                for t in range(hi - lo):
                    gkeys[t] = keys[nodes[lo + t]]
                    buf[t] = nodes[lo + t]
                _argsort_stable(gkeys, hi - lo, order, order[hi - lo :])
                for t in range(hi - lo):
                    nodes[lo + t] = buf[order[t]]
                continue
            for t in range(lo + 1, hi):
                v = nodes[t]
                kv = keys[v]
                j = t - 1
                while j >= lo and keys[nodes[j]] > kv:
                    nodes[j + 1] = nodes[j]
                    j -= 1
                nodes[j + 1] = v
        # cap[i]: most nodes of label i that an optimal move can switch (all of them unless pruned)
        N = _I0
        for i in range(m):
            cap[i] = 0 if i == alpha else counts[i]
            N += cap[i]
        if prune:
            N = _prune_caps(phi, labels, counts, alpha, table, tol, nodes, start, keys, cap, N)
        for k in range(N + 1):
            D[k] = -np.inf
        D[0] = 0.0
        total = _I0
        const = 0.0  # the value of the labels that keep all their nodes (cap 0), added at the end
        for i in range(m):
            if i == alpha:
                continue
            ni = counts[i]
            nj = cap[i]
            s0 = start[i]
            # g[j]: label i keeps its last ni - j nodes, its top j go to alpha
            keep = 0.0
            for t in range(ni):
                keep += phi[nodes[s0 + t], i]
            if nj == 0:
                const += table[i, ni] + keep
                continue
            acc_alpha = 0.0
            acc_keep = keep
            for j in range(nj + 1):
                if j > 0:
                    u = nodes[s0 + j - 1]
                    acc_alpha += phi[u, alpha]
                    # recompute the kept sum when -inf makes subtraction unsafe
                    if acc_keep == -np.inf:
                        acc_keep = 0.0
                        for t in range(j, ni):
                            acc_keep += phi[nodes[s0 + t], i]
                    else:
                        acc_keep -= phi[u, i]
                g[j] = table[i, ni - j] + acc_alpha + acc_keep
            for k in range(total + nj + 1):
                best = -np.inf
                bj = _I0
                lo = k - total
                if lo < 0:
                    lo = _I0
                hi = nj if nj < k else k
                for j in range(lo, hi + 1):
                    d = D[k - j]
                    gj = g[j]
                    if d == -np.inf or gj == -np.inf:
                        continue
                    v = d + gj
                    if v > best:
                        best = v
                        bj = j
                newD[k] = best
                choice[i, k] = bj
            for k in range(total + nj + 1):
                D[k] = newD[k]
            total += nj
        base_alpha = 0.0
        cur = 0.0
        for u in range(n):
            cur += phi[u, labels[u]]
            if labels[u] == alpha:
                base_alpha += phi[u, alpha]
        for y in range(m):
            cur += table[y, counts[y]]
        best_k = _I0
        best_v = -np.inf
        for k in range(N + 1):
            if D[k] == -np.inf:
                continue
            v = D[k] + table[alpha, k + counts[alpha]] + base_alpha + const
            if v > best_v:
                best_v = v
                best_k = k
        step_moved = best_v != -np.inf and best_k != 0 and best_v > cur + tol
        k = best_k if step_moved else _I0
        for i in range(m - 1 if step_moved else -1, -1, -1):  # apply the move
            if i == alpha or cap[i] == 0:
                continue
            j = choice[i, k]
            for t in range(j):
                labels[nodes[start[i] + t]] = alpha
            counts[i] -= j
            counts[alpha] += j
            k -= j
        if step_moved:
            moved = _TRUE
            failed = _I0
            if known.shape[0] == n:
                done = _TRUE
                for u in range(n):
                    if labels[u] != known[u]:
                        done = _FALSE
                        break
        else:
            moved = _FALSE
            failed += 1
            done = failed >= m
        if done:
            rounds = r
    s = 0.0
    for u in range(n):
        s += phi[u, labels[u]]
    for y in range(m):
        s += table[y, counts[y]]
    if only >= 0:
        return 1, moved, s
    return rounds, done, s


def expansion_move(phi, labels, alpha, table, tol):
    """Optimal alpha-expansion move for a SUM potential (one move of :func:`expansion_search`).

    Returns ``(new_labels, improved)``; ``new_labels`` is ``labels`` itself when the best move does not
    beat the current labelling by more than ``tol``.
    """
    out = labels.copy()
    _, moved, _ = expansion_search(phi, out, table, tol, 1, out[:0], alpha, -1)
    return (out, True) if moved else (labels, False)


@helper
def _top_labels(phi, r):
    """Each node's ``r`` best labels (n, r), by decreasing ``phi``, ties by lower label (a stable order)."""
    n, m = phi.shape
    top = _empty((n, r), _I64)
    for u in range(n):
        for t in range(r):
            b = _IM1
            for y in range(m):
                taken = _FALSE
                for q in range(t):
                    if top[u, q] == y:
                        taken = _TRUE
                        break
                if not taken and (b < 0 or phi[u, y] > phi[u, b]):
                    b = y
            top[u, t] = b
    return top


@kernel
def subset_pass_labels(phi, S, kind, table, W):
    """Generalized alpha-pass over the label subsets ``S`` (P, s), rows padded with ``m``.

    For subset ``A``, a node's in-label is its best label in ``A`` and its out-label its best label
    outside ``A``; the sweep is that of alpha-pass with in-labels in place of alpha. Same candidates
    and tie-breaking as the array version in ``alpha_pass.py``. The out-label is the first label
    outside ``A`` in the node's ``s + 1`` best labels (computed once), so a subset costs
    ``O(n (s + log n))``; in all O(n m s + P n (s + log n)).
    """
    n, m = phi.shape
    P, s = S.shape
    top = _top_labels(phi, s + 1 if s + 1 < m else m)
    r = top.shape[1]
    member = np.zeros(m + 1, dtype=np.bool_)
    in_lab = _empty(n, _I64)
    out_lab = _empty(n, _I64)
    inv = _empty(n)
    outv = _empty(n)
    keys = _empty(n)
    order = _empty(n, _I64)
    buf = _empty(n, _I64)
    s_in = _empty(n, _I64)
    s_out = _empty(n, _I64)
    s_inv = _empty(n)
    suf = _empty(n + 1)
    c = _empty(m, _I64)
    best_v = _NEG_INF
    best_p = _IM1
    best_k = _I0
    for p in range(P + 1):
        # pass P re-derives the labelling of the best subset
        q = best_p if p == P else p
        for j in range(s):
            member[S[q, j]] = True
        for u in range(n):
            bi = _IM1
            for j in range(s):
                y = S[q, j]
                if y < m and (bi < 0 or phi[u, y] > phi[u, bi]):
                    bi = y
            bo = _IM1
            for t in range(r):
                if not member[top[u, t]]:
                    bo = top[u, t]
                    break
            in_lab[u] = bi
            out_lab[u] = bo
            inv[u] = phi[u, bi]
            outv[u] = phi[u, bo]
            keys[u] = -_move_key(inv[u], outv[u])
        for j in range(s):
            member[S[q, j]] = False
        _argsort_stable(keys, n, order, buf)
        if p == P:
            labels = out_lab.copy()
            for t in range(best_k):
                labels[order[t]] = in_lab[order[t]]
            return labels
        suf[n] = 0.0
        for t in range(n - 1, -1, -1):
            u = order[t]
            s_in[t] = in_lab[u]
            s_out[t] = out_lab[u]
            s_inv[t] = inv[u]
            suf[t] = suf[t + 1] + outv[u]
        v, k = _scan_best(s_in, s_out, s_inv, suf, kind, table, W, c)
        if v > best_v or best_p < 0:
            best_v = v
            best_p = p
            best_k = k
    return out_lab  # unreachable: the loop returns at p == P


# _argsort_stable sorts fewer keys than this by insertion sort, more by radix sort (measured crossover)
_RADIX_MIN = 64


@helper
def _argsort_stable(keys, n, order, buf):
    """Indices sorting ``keys[:n]`` ascending, ties by index (what ``np.argsort(kind="stable")`` gives).

    Writes them to ``order[:n]``; ``order`` and ``buf`` (both (>= n,) int64) are the caller's. Keys are
    finite or +-inf, never NaN. Below ``_RADIX_MIN`` keys an insertion sort, which allocates nothing;
    from there an LSD radix sort on the bytes of the keys' order-preserving 64-bit images, whose
    passes cost O(n) without a data-dependent branch (a merge sort's mispredicted comparisons, about
    ``log2 n`` per key, were most of alpha-pass's time on large cliques: 3x the radix sort's time from
    a few hundred keys on, measured on fresh keys, which a branch predictor cannot learn).

    The image: a float's bits, with the sign bit set for non-negative numbers and all bits flipped
    for negative ones, order as unsigned integers as the floats do (``-0.0`` is first made ``0.0``, so
    that the two tie as they compare); they are kept in int64, whose bytes are the same. Eight stable
    counting passes of 8 bits, skipping a byte that all keys share.
    """
    if n < _RADIX_MIN:
        for i in range(n):
            kv = keys[i]
            j = i - 1
            while j >= 0 and keys[order[j]] > kv:
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = i
        return
    ka = _empty(n, _I64)
    kb = _empty(n, _I64)
    hist = _empty(2048, _I64)  # hist[256 p + d]: keys whose byte p is d
    start = _empty(256, _I64)
    for d in range(2048):
        hist[d] = 0
    for i in range(n):
        k = keys[i]
        v = np.float64(0.0 if k == 0.0 else k).view(_I64)
        v = ~v if v < 0 else v | _SIGN
        ka[i] = v
        for p in range(8):
            hist[256 * p + ((v >> (8 * p)) & 255)] += 1
        order[i] = i
    swapped = _FALSE  # whether the keys are in kb and the indices in buf
    for p in range(8):
        s = _I0
        shared = _FALSE
        for d in range(256):
            c = hist[256 * p + d]
            if c == n:
                shared = _TRUE
                break
            start[d] = s
            s += c
        if shared:
            continue
        src_k, dst_k, src_i, dst_i = (kb, ka, buf, order) if swapped else (ka, kb, order, buf)
        for i in range(n):
            v = src_k[i]
            d = (v >> (8 * p)) & 255
            pos = start[d]
            start[d] = pos + 1
            dst_k[pos] = v
            dst_i[pos] = src_i[i]
        swapped = not swapped
    if swapped:
        for i in range(n):
            order[i] = buf[i]


@kernel
def argsort_stable(keys, n, order, buf):
    """:func:`_argsort_stable` called from Python (the tests)."""
    _argsort_stable(keys, n, order, buf)


@helper
def _before(ka, ua, kb, ub):
    """Whether (key ``ka``, node ``ua``) precedes (``kb``, ``ub``): larger key first, then lower node."""
    return ka > kb or (ka == kb and ua < ub)


@helper
def _scan_best(s_in, s_out, s_inv, suf, kind, table, W, c):
    """Best ``(value, k)`` of one sweep given in sweep order: the first ``k`` nodes take their in-label.

    Node ``t`` of the sweep has in-label ``s_in[t]`` (value ``s_inv[t]``) and out-label ``s_out[t]``;
    ``suf[t]`` (n+1,) is the sum of the out-values of nodes ``t..n-1`` (``suf[n] = 0``). One scan,
    updating two counts per step (and a SUM potential in O(1)). Ties go to the first best ``k``; the
    passes keep the first best sweep, so the labelling is the first best (subset, k). ``c`` (m,) is a
    work array. (The callers gather the sweep into these contiguous arrays themselves: passing the
    node-indexed arrays here too would cost a reference count update per array and call, 3% of
    alpha-pass.)
    """
    n = s_in.shape[0]
    m = c.shape[0]
    for y in range(m):
        c[y] = 0
    for t in range(n):
        c[s_out[t]] += 1
    fin, ninf = _sum_terms(c, table) if kind == KIND_SUM else (0.0, 0)
    pre = 0.0
    best_v = _NEG_INF
    best_k = _IM1
    for k in range(n + 1):
        if k > 0:
            a = s_out[k - 1]
            b = s_in[k - 1]
            pre += s_inv[k - 1]
            c[a] -= 1
            c[b] += 1
            if kind == KIND_SUM:
                fin, ninf = _sum_shift(fin, ninf, table, a, c[a] + 1, c[a])
                fin, ninf = _sum_shift(fin, ninf, table, b, c[b] - 1, c[b])
        if kind == KIND_SUM:
            cv = _NEG_INF if ninf > 0 else fin
        else:
            cv = _count_value(c, kind, table, W)
        v = pre + suf[k] + cv
        if v > best_v or best_k < 0:
            best_v = v
            best_k = k
    return best_v, best_k


@kernel
def _pass_labels(phi, kind, table, W, n_top):
    """alpha-pass, then optionally label pairs, on each clique of a stack ``phi`` (B, n, m); (B n,) labels.

    Every label ``alpha`` is swept (Sec. 3.1 of [1]): the nodes sorted by decreasing
    ``phi[u, alpha] - phi[u, o_u]`` (``o_u`` the node's best label other than alpha; ties: lower node),
    the top ``k`` take alpha and the others ``o_u``, for every ``k``. With ``n_top >= 2`` and ``m >= 3``
    the pairs ``a < b`` of the ``min(n_top, m)`` labels whose single sweeps scored best (ties: lower
    label) are swept next (generalized alpha-pass with ``p = 2``, all pairs when ``n_top >= m``): a
    node takes its better label of the pair or its best label outside it. The first best
    (subset, k) wins: the candidates, subset order and tie-breaking of ``subset_pass_labels`` on the
    singles and then the pairs.

    A pair costs no sort: a node whose best label ``t1`` is outside ``A = {a, b}`` has key
    ``max(phi[u, a], phi[u, b]) - phi[u, t1]``; the single sweep of ``a`` already lists these nodes
    sorted by ``phi[u, a] - phi[u, t1]`` (the nodes whose best label is ``a`` left out), so their order
    for ``A`` is a merge of the lists of ``a`` and ``b`` (first occurrence of each node). The few nodes
    whose best label is in ``A`` are sorted apart and merged in. O(m n log n + P n) in all for ``P``
    pairs, against O(P n log n) for a sort per subset.
    """
    B, n, m = phi.shape
    nc = (n_top if n_top < m else m) if m >= 3 and n_top >= 2 else 0
    n_pass = m + ((nc * (nc - 1)) >> 1)
    ln = n if nc > 0 else 0  # the sorted lists are kept only when pairs are swept
    out = _empty(B * n, _I64)
    top = _empty(3 * n, _I64)  # top[3 u + t]: node u's t-th best label (-1: none)
    in_lab = _empty(n, _I64)
    out_lab = _empty(n, _I64)
    inv = _empty(n)
    outv = _empty(n)
    keys = _empty(n)
    order = _empty(n, _I64)
    buf = _empty(n, _I64)
    best_order = _empty(n, _I64)
    s_in = _empty(n, _I64)
    s_out = _empty(n, _I64)
    s_inv = _empty(n)
    suf = _empty(n + 1)
    c = _empty(m, _I64)
    single = _empty(m)  # best value of each single-label sweep
    cand = _empty(m, _I64)  # labels whose pairs are swept, increasing
    lists = _empty(m * ln, _I64)  # per label a, its list and the nodes' move keys
    lkeys = _empty(m * ln)
    llen = _empty(m, _I64)
    nbest = _empty(m + 1, _I64)  # nodes by best label: byb[nbest[y]:nbest[y+1]]
    byb = _empty(ln, _I64)
    grp = _empty(ln, _I64)
    rest = _empty(ln, _I64)
    stamp = _empty(ln, _I64)
    for u in range(ln):
        stamp[u] = 0
    pid = _I0
    for bi in range(B):
        p = phi[bi]
        for u in range(n):  # each node's best labels, first maxima (ties: the lower label)
            t0 = _I0
            t1 = _IM1
            for y in range(1, m):
                v = p[u, y]
                if v > p[u, t0]:
                    t1 = t0
                    t0 = y
                elif t1 < 0 or v > p[u, t1]:
                    t1 = y
            t2 = _IM1
            for y in range(m if nc > 0 else 0):  # the third, for the pairs
                if y != t0 and y != t1 and (t2 < 0 or p[u, y] > p[u, t2]):
                    t2 = y
            top[3 * u] = t0
            top[3 * u + 1] = t1
            top[3 * u + 2] = t2
        if nc > 0:
            for y in range(m + 1):
                nbest[y] = 0
            for u in range(n):
                nbest[top[3 * u] + 1] += 1
            for y in range(m):
                nbest[y + 1] += nbest[y]
                llen[y] = nbest[y]  # fill pointers
            for u in range(n):
                byb[llen[top[3 * u]]] = u
                llen[top[3 * u]] += 1
        best_v = _NEG_INF
        best_a = _IM1
        best_b = _IM1
        best_k = _I0
        ia = _I0
        ib = _I0
        for pp in range(n_pass + 1):  # the last pass rebuilds the order of the best pair, if a pair won
            if pp < m:
                a = pp
                b = _IM1
                for u in range(n):
                    o = top[3 * u + 1] if top[3 * u] == a else top[3 * u]
                    out_lab[u] = o
                    inv[u] = p[u, a]
                    outv[u] = p[u, o]
                    keys[u] = -_move_key(inv[u], outv[u])
                _argsort_stable(keys, n, order, buf)
                L = a * ln
                for t in range(ln):  # the list of a: nodes whose best label is not a, in sweep order
                    u = order[t]
                    if top[3 * u] != a:
                        lists[L] = u
                        lkeys[L] = -keys[u]
                        L += 1
                llen[a] = L - a * ln
            else:
                if pp == n_pass:
                    if best_b < 0:
                        break
                    a = best_a
                    b = best_b
                else:
                    if pp == m:  # the nc best single labels (ties: lower label), in increasing order
                        for y in range(m):
                            cand[y] = 0
                        for _ in range(nc):
                            bj = _IM1
                            for y in range(m):
                                if cand[y] == 0 and (bj < 0 or single[y] > single[bj]):
                                    bj = y
                            cand[bj] = 1
                        q = _I0
                        for y in range(m):
                            if cand[y] == 1:
                                cand[q] = y
                                q += 1
                        ib = _I0
                    ib += 1
                    if ib == nc:
                        ia += 1
                        ib = ia + 1
                    a = cand[ia]
                    b = cand[ib]
                pid += 1
                # nodes whose best label is in A, sorted apart (insertion sort; few nodes); keys[u]
                # is now the node's move key (larger first)
                ng = _I0
                for t in range(nbest[a], nbest[a + 1] + nbest[b + 1] - nbest[b]):
                    u = byb[t] if t < nbest[a + 1] else byb[t - nbest[a + 1] + nbest[b]]
                    i_l = a if p[u, a] >= p[u, b] else b
                    o_l = top[3 * u + 1]
                    if o_l == a or o_l == b:
                        o_l = top[3 * u + 2]
                    in_lab[u] = i_l
                    out_lab[u] = o_l
                    inv[u] = p[u, i_l]
                    outv[u] = p[u, o_l]
                    keys[u] = _move_key(inv[u], outv[u])
                    stamp[u] = pid
                    j = ng - 1
                    while j >= 0 and _before(keys[u], u, keys[grp[j]], grp[j]):
                        grp[j + 1] = grp[j]
                        j -= 1
                    grp[j + 1] = u
                    ng += 1
                # the other nodes: merge of the lists of a and b, first occurrence of each node
                nr = _I0
                xa = a * n
                xb = b * n
                ea = xa + llen[a]
                eb = xb + llen[b]
                while xa < ea or xb < eb:
                    if xb >= eb or (xa < ea and _before(lkeys[xa], lists[xa], lkeys[xb], lists[xb])):
                        u = lists[xa]
                        kk = lkeys[xa]
                        xa += 1
                    else:
                        u = lists[xb]
                        kk = lkeys[xb]
                        xb += 1
                    if stamp[u] == pid:
                        continue
                    stamp[u] = pid
                    i_l = a if p[u, a] >= p[u, b] else b
                    o_l = top[3 * u]
                    in_lab[u] = i_l
                    out_lab[u] = o_l
                    inv[u] = p[u, i_l]
                    outv[u] = p[u, o_l]
                    keys[u] = kk
                    rest[nr] = u
                    nr += 1
                # the sweep's order: merge of the two sorted sequences
                i = _I0
                j = _I0
                for t in range(n):
                    if j >= nr or (i < ng and _before(keys[grp[i]], grp[i], keys[rest[j]], rest[j])):
                        order[t] = grp[i]
                        i += 1
                    else:
                        order[t] = rest[j]
                        j += 1
                if pp == n_pass:
                    for t in range(n):
                        best_order[t] = order[t]
                    break
            # the sweep in sweep order, in contiguous arrays (a single label's in-label is a)
            suf[n] = 0.0
            if b < 0:
                for t in range(n - 1, -1, -1):
                    u = order[t]
                    s_in[t] = a
                    s_out[t] = out_lab[u]
                    s_inv[t] = inv[u]
                    suf[t] = suf[t + 1] + outv[u]
            else:
                for t in range(n - 1, -1, -1):
                    u = order[t]
                    s_in[t] = in_lab[u]
                    s_out[t] = out_lab[u]
                    s_inv[t] = inv[u]
                    suf[t] = suf[t + 1] + outv[u]
            v, k = _scan_best(s_in, s_out, s_inv, suf, kind, table, W, c)
            if pp < m:
                single[a] = v
            if v > best_v or best_a < 0:
                best_v = v
                best_a = a
                best_b = b
                best_k = k
                if b < 0:  # a pair's order is built again at the end (cheaper than a copy per improvement)
                    for t in range(n):
                        best_order[t] = order[t]
        # the labelling of the best (subset, k): out-labels, then the first k nodes take their in-label
        for u in range(n):
            y = top[3 * u]
            if y == best_a or y == best_b:
                y = top[3 * u + 1]
                if y == best_a or y == best_b:
                    y = top[3 * u + 2]
            out[bi * n + u] = y
        for t in range(best_k):
            u = best_order[t]
            out[bi * n + u] = best_a if best_b < 0 or p[u, best_a] >= p[u, best_b] else best_b
    return out


def pass_labels(phi, kind, table, W, n_top):
    """alpha-pass, then optionally label pairs, on each clique of a stack ``phi`` (B, n, m); (B, n) labels.

    See :func:`_pass_labels`, the kernel (which returns the rows concatenated).
    """
    return _pass_labels(phi, kind, table, W, n_top).reshape(phi.shape[0], phi.shape[1])


def alpha_pass_labels(phi, kind, table, W):
    """alpha-pass labelling of one clique ``phi`` (n, m): :func:`_pass_labels` on a stack of one."""
    return _pass_labels(phi[None], kind, table, W, 0)


def pair_pass_labels(phi, kind, table, W, n_top):
    """Generalized alpha-pass (``p = 2``, pairs among the ``n_top`` best labels; ``m >= 3``) of one clique."""
    return _pass_labels(phi[None], kind, table, W, n_top)
