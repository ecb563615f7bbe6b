"""Compiled kernels of the clique-MAP algorithms.

They assume validated input: ``phi`` float64 (n, m) without NaN/+inf, labels int64 in range, and the
potential given by its ``kind`` (one of the ``KIND_*`` codes below; ``_validate.kernel_args`` maps a
potential to ``(kind, table, W)``) with ``table`` (m, >= n+1) float64 for SUM/MAX and ``W`` (m, m)
float64 for MAJORITY (the unused one is a dummy (1, 1) array). ``-inf`` entries are allowed
everywhere; no ``inf - inf`` is ever formed.
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
    "clique_value",
    "expansion_move",
    "expansion_search",
    "icm_sweep",
    "pair_pass_labels",
    "subset_pass_labels",
    "sum_score",
    "sweep_majority",
    "sweep_values",
]

KIND_SUM = 0  # C = sum_y table[y, n_y]
KIND_MAX = 1  # C = max_y table[y, n_y]
KIND_MAJORITY = 2  # C = sum_y W[a, y] n_y, a = argmax_y n_y (lowest index among ties)
KIND_GENERAL = 3  # any other potential: no kernel, evaluated in batches from Python


@njit
def clique_value(c, kind, table, W):
    """Potential value of one count vector ``c`` (m,) for the SUM / MAX / MAJORITY families."""
    m = c.shape[0]
    if kind == KIND_SUM:
        s = 0.0
        for y in range(m):
            s += table[y, c[y]]
        return s
    if kind == KIND_MAX:
        s = -np.inf
        for y in range(m):
            v = table[y, c[y]]
            if v > s:
                s = v
        return s
    a = 0
    for y in range(1, m):
        if c[y] > c[a]:
            a = y
    s = 0.0
    for y in range(m):
        s += W[a, y] * c[y]
    return s


@njit
def sum_score(phi, labels, table):
    """Score ``sum_u phi[u, y_u] + sum_y table[y, n_y]`` of a labelling under a SUM potential."""
    n, m = phi.shape
    c = np.zeros(m, dtype=np.int64)
    s = 0.0
    for u in range(n):
        s += phi[u, labels[u]]
        c[labels[u]] += 1
    for y in range(m):
        s += table[y, c[y]]
    return s


@njit
def _sum_terms(c, table):
    """(sum of the finite terms, number of -inf terms) of a SUM potential at counts ``c``."""
    fin = 0.0
    ninf = 0
    for y in range(c.shape[0]):
        t = table[y, c[y]]
        if t == -np.inf:
            ninf += 1
        else:
            fin += t
    return fin, ninf


@njit
def _sum_shift(fin, ninf, table, y, old, new):
    """Update ``(fin, ninf)`` of a SUM potential when the count of label ``y`` goes from ``old`` to ``new``.

    O(1) per step instead of O(m); -inf terms are counted, never subtracted, so no inf - inf arises.
    """
    t = table[y, old]
    if t == -np.inf:
        ninf -= 1
    else:
        fin -= t
    t = table[y, new]
    if t == -np.inf:
        ninf += 1
    else:
        fin += t
    return fin, ninf


@njit
def sweep_values(C0, frm, to, kind, table, W):
    """Clique values along sweeps.

    Sweep ``p`` starts at counts ``C0[p]`` (m,); at step ``k`` (1-based) one node moves from label
    ``frm[p, k-1]`` to ``to[p, k-1]``. Returns ``out`` (P, n+1) with ``out[p, k]`` the potential after
    ``k`` steps. O(P n) for SUM potentials (two terms change per step), O(P n m) otherwise.
    """
    P, n = frm.shape
    m = C0.shape[1]
    out = np.empty((P, n + 1))
    c = np.empty(m, dtype=np.int64)
    for p in range(P):
        for y in range(m):
            c[y] = C0[p, y]
        if kind == KIND_SUM:
            fin, ninf = _sum_terms(c, table)
            out[p, 0] = -np.inf if ninf > 0 else fin
            for k in range(n):
                a = frm[p, k]
                b = to[p, k]
                c[a] -= 1
                fin, ninf = _sum_shift(fin, ninf, table, a, c[a] + 1, c[a])
                c[b] += 1
                fin, ninf = _sum_shift(fin, ninf, table, b, c[b] - 1, c[b])
                out[p, k + 1] = -np.inf if ninf > 0 else fin
            continue
        out[p, 0] = clique_value(c, kind, table, W)
        for k in range(n):
            c[frm[p, k]] -= 1
            c[to[p, k]] += 1
            out[p, k + 1] = clique_value(c, kind, table, W)
    return out


@njit
def sweep_majority(C0, frm, to):
    """Majority label (lowest index among ties) along the sweeps of :func:`sweep_values`, (P, n+1)."""
    P, n = frm.shape
    m = C0.shape[1]
    out = np.empty((P, n + 1), dtype=np.int64)
    c = np.empty(m, dtype=np.int64)
    for p in range(P):
        for y in range(m):
            c[y] = C0[p, y]
        for k in range(n + 1):
            if k > 0:
                c[frm[p, k - 1]] -= 1
                c[to[p, k - 1]] += 1
            a = 0
            for y in range(1, m):
                if c[y] > c[a]:
                    a = y
            out[p, k] = a
    return out


@njit
def icm_sweep(phi, labels, counts, order, kind, table, W, tol):
    """One ICM sweep in ``order``, in place on ``labels`` and ``counts``; returns the number of changes.

    Each node takes the label that maximizes ``phi[u, y] + C(counts with u relabelled y)``; it moves
    only when that beats its current label by more than ``tol`` (so ties never cycle).
    """
    m = phi.shape[1]
    changed = 0
    for t in range(order.shape[0]):
        u = order[t]
        cur = labels[u]
        counts[cur] -= 1
        best = cur
        if kind == KIND_SUM:
            # O(m) per node: the potential without u, then one term changes per candidate label
            fin0, ninf0 = _sum_terms(counts, table)
            fin, ninf = _sum_shift(fin0, ninf0, table, cur, counts[cur], counts[cur] + 1)
            cur_val = phi[u, cur] + (-np.inf if ninf > 0 else fin)
            best_val = cur_val
            for y in range(m):
                if y == cur:
                    continue
                fin, ninf = _sum_shift(fin0, ninf0, table, y, counts[y], counts[y] + 1)
                v = phi[u, y] + (-np.inf if ninf > 0 else fin)
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
        cur_val = phi[u, cur] + clique_value(counts, kind, table, W)
        counts[cur] -= 1
        best_val = cur_val
        for y in range(m):
            if y == cur:
                continue
            counts[y] += 1
            v = phi[u, y] + clique_value(counts, kind, table, W)
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


@njit
def _move_key(a, b):
    # phi[u, alpha] - phi[u, y] without inf - inf: a forbidden target never moves first
    if a == -np.inf:
        return -np.inf
    if b == -np.inf:
        return np.inf
    return a - b


@njit
def _all_finite(phi, table):
    """Whether ``phi`` and ``table`` have no ``-inf`` (then expansion moves may be pruned)."""
    for x in phi.ravel():
        if not np.isfinite(x):
            return False
    for x in table.ravel():
        if not np.isfinite(x):
            return False
    return True


@njit
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
        newK = 0
        for i in range(m):
            if i == alpha:
                continue
            ni = counts[i]
            s0 = start[i]
            last = 0
            for j in range(1, cap[i] + 1):
                u = nodes[s0 + j - 1]
                if -keys[u] + (table[i, ni - j] - table[i, ni - j + 1]) + sig > -tol:
                    last = j
            cap[i] = last
            newK += last
        if newK >= K:
            return K
        K = newK


@njit
def _expansion_step(
    phi, labels, counts, alpha, table, tol, prune, nodes, start, keys, cap, gkeys, order, buf, D, newD, choice, g
):
    """One optimal alpha-expansion move, in place on ``labels`` and ``counts``; True when it moved.

    ``prune`` (finite ``phi`` and ``table`` only) bounds each label's share of the move first
    (:func:`_prune_caps`). The work arrays (``nodes``/``buf`` (n,) int64, ``order`` (2n,) int64,
    ``start``/``cap`` (m+1,) int64, ``keys``/``gkeys`` (n,), ``D``/``newD``/``g`` (n+1,), ``choice``
    (m, n+1)) are the caller's, so that a whole search allocates them once.
    """
    n, m = phi.shape
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
    N = 0
    for i in range(m):
        cap[i] = 0 if i == alpha else counts[i]
        N += cap[i]
    if prune:
        N = _prune_caps(phi, labels, counts, alpha, table, tol, nodes, start, keys, cap, N)
    for k in range(N + 1):
        D[k] = -np.inf
    D[0] = 0.0
    total = 0
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
            bj = 0
            lo = k - total
            if lo < 0:
                lo = 0
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
    best_k = 0
    best_v = -np.inf
    for k in range(N + 1):
        if D[k] == -np.inf:
            continue
        v = D[k] + table[alpha, k + counts[alpha]] + base_alpha + const
        if v > best_v:
            best_v = v
            best_k = k
    if best_v == -np.inf or best_k == 0 or not best_v > cur + tol:
        return False
    k = best_k
    for i in range(m - 1, -1, -1):
        if i == alpha or cap[i] == 0:
            continue
        j = choice[i, k]
        for t in range(j):
            labels[nodes[start[i] + t]] = alpha
        counts[i] -= j
        counts[alpha] += j
        k -= j
    return True


@njit
def expansion_move(phi, labels, alpha, table, tol):
    """Optimal alpha-expansion move for a SUM potential by the dynamic program of Sec. 3.2.1 of [1].

    For every label ``i != alpha`` the nodes labelled ``i`` are sorted by ``phi[u, alpha] - phi[u, i]``;
    an optimal move switches a top prefix of each list. ``D_i(k)``, the best score with ``k`` nodes of
    labels ``<= i`` switched, is a (max, +) convolution over ``i``; O(n^2 + n m) per move.

    Returns ``(new_labels, improved)``; ``new_labels`` is ``labels`` itself when the best move does not
    beat the current labelling by more than ``tol``.
    """
    n, m = phi.shape
    counts = np.zeros(m, dtype=np.int64)
    for u in range(n):
        counts[labels[u]] += 1
    out = labels.copy()
    moved = _expansion_step(
        phi,
        out,
        counts,
        alpha,
        table,
        tol,
        _all_finite(phi, table),
        np.empty(n, dtype=np.int64),
        np.empty(m + 1, dtype=np.int64),
        np.empty(n),
        np.empty(m + 1, dtype=np.int64),
        np.empty(n),
        np.empty(2 * n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n + 1),
        np.empty(n + 1),
        np.empty((m, n + 1), dtype=np.int64),
        np.empty(n + 1),
    )
    return (out, True) if moved else (labels, False)


@njit
def _same(a, b):
    for u in range(a.shape[0]):
        if a[u] != b[u]:
            return False
    return True


@njit
def expansion_search(phi, labels, table, tol, max_iter, known):
    """alpha-expansion moves over the labels in turn, in place on ``labels``; returns ``(rounds, converged)``.

    A round tries ``alpha = 0, ..., m-1``. The search stops, converged, as soon as ``m`` moves in a
    row have failed (every label's move was tried on the current labelling), so the last round is
    usually cut short; else after ``max_iter`` rounds. ``known`` (n,) is a labelling already shown to
    be a local optimum (every move fails on it), or an empty array: the search also stops, converged,
    when it starts or a move lands on it, since every further move would fail.
    """
    n, m = phi.shape
    counts = np.zeros(m, dtype=np.int64)
    for u in range(n):
        counts[labels[u]] += 1
    nodes = np.empty(n, dtype=np.int64)
    start = np.empty(m + 1, dtype=np.int64)
    keys = np.empty(n)
    cap = np.empty(m + 1, dtype=np.int64)
    gkeys = np.empty(n)
    order = np.empty(2 * n, dtype=np.int64)
    buf = np.empty(n, dtype=np.int64)
    D = np.empty(n + 1)
    newD = np.empty(n + 1)
    choice = np.empty((m, n + 1), dtype=np.int64)
    g = np.empty(n + 1)
    prune = _all_finite(phi, table)
    if known.shape[0] == n and _same(labels, known):
        return 1, True
    failed = 0  # moves in a row that changed nothing
    for r in range(1, max_iter + 1):
        for alpha in range(m):
            if _expansion_step(
                phi,
                labels,
                counts,
                alpha,
                table,
                tol,
                prune,
                nodes,
                start,
                keys,
                cap,
                gkeys,
                order,
                buf,
                D,
                newD,
                choice,
                g,
            ):
                failed = 0
                if known.shape[0] == n and _same(labels, known):
                    return r, True
            else:
                failed += 1
                if failed >= m:
                    return r, True
    return max_iter, False


@njit
def alpha_pass_labels(phi, kind, table, W):
    """alpha-pass in one compiled loop (SUM / MAX / MAJORITY codes); returns the best labelling.

    Same candidates and tie-breaking as the array version in ``alpha_pass.py`` (first best over
    labels, then over ``k``; stable sort by decreasing gain). O(n m log n + n m^2).
    """
    n, m = phi.shape
    b1 = np.empty(n, dtype=np.int64)
    b2 = np.empty(n, dtype=np.int64)
    for u in range(n):
        i1 = 0
        for y in range(1, m):
            if phi[u, y] > phi[u, i1]:
                i1 = y
        i2 = 1 if i1 == 0 else 0
        for y in range(m):
            if y != i1 and phi[u, y] > phi[u, i2]:
                i2 = y
        b1[u] = i1
        b2[u] = i2
    out = np.empty(n, dtype=np.int64)
    inv = np.empty(n)
    outv = np.empty(n)
    keys = np.empty(n)
    order = np.empty(n, dtype=np.int64)
    buf = np.empty(n, dtype=np.int64)
    best_order = np.empty(n, dtype=np.int64)
    s_in = np.empty(n, dtype=np.int64)
    s_out = np.empty(n, dtype=np.int64)
    s_inv = np.empty(n)
    suf = np.empty(n + 1)
    c = np.empty(m, dtype=np.int64)
    best_v = -np.inf
    best_alpha = -1
    best_k = 0
    for alpha in range(m):
        # node values gathered once, so that the sort reads small arrays only
        for u in range(n):
            o = b2[u] if b1[u] == alpha else b1[u]
            out[u] = o
            inv[u] = phi[u, alpha]
            outv[u] = phi[u, o]
            keys[u] = -_move_key(inv[u], outv[u])
        _argsort_stable(keys, n, order, buf)
        # the sweep in sorted order (every in-label is alpha, so no array of in-labels is read)
        suf[n] = 0.0
        for t in range(n - 1, -1, -1):
            u = order[t]
            s_in[t] = alpha
            s_out[t] = out[u]
            s_inv[t] = inv[u]
            suf[t] = suf[t + 1] + outv[u]
        v, k = _scan_best(s_in, s_out, s_inv, suf, kind, table, W, c)
        if v > best_v or best_alpha < 0:
            best_v = v
            best_alpha = alpha
            best_k = k
            for t in range(n):
                best_order[t] = order[t]
    alpha = best_alpha
    labels = np.empty(n, dtype=np.int64)
    for u in range(n):
        labels[u] = b2[u] if b1[u] == alpha else b1[u]
    for t in range(best_k):
        labels[best_order[t]] = alpha
    return labels


@njit
def _top_labels(phi, r):
    """Each node's ``r`` best labels (n, r), by decreasing ``phi``, ties by lower label (a stable order)."""
    n, m = phi.shape
    top = np.empty((n, r), dtype=np.int64)
    for u in range(n):
        for t in range(r):
            b = -1
            for y in range(m):
                taken = False
                for q in range(t):
                    if top[u, q] == y:
                        taken = True
                        break
                if not taken and (b < 0 or phi[u, y] > phi[u, b]):
                    b = y
            top[u, t] = b
    return top


@njit
def subset_pass_labels(phi, S, kind, table, W):
    """Generalized alpha-pass over the label subsets ``S`` (P, s), rows padded with ``m``.

    For subset ``A``, a node's in-label is its best label in ``A`` and its out-label its best label
    outside ``A``; the sweep is that of :func:`alpha_pass_labels` with in-labels in place of alpha.
    Same candidates and tie-breaking as the array version in ``alpha_pass.py``. The out-label is the
    first label outside ``A`` in the node's ``s + 1`` best labels (computed once), so a subset costs
    ``O(n (s + log n))``; in all O(n m s + P n (s + log n)).
    """
    n, m = phi.shape
    P, s = S.shape
    top = _top_labels(phi, s + 1 if s + 1 < m else m)
    r = top.shape[1]
    member = np.zeros(m + 1, dtype=np.bool_)
    in_lab = np.empty(n, dtype=np.int64)
    out_lab = np.empty(n, dtype=np.int64)
    inv = np.empty(n)
    outv = np.empty(n)
    keys = np.empty(n)
    order = np.empty(n, dtype=np.int64)
    buf = np.empty(n, dtype=np.int64)
    s_in = np.empty(n, dtype=np.int64)
    s_out = np.empty(n, dtype=np.int64)
    s_inv = np.empty(n)
    suf = np.empty(n + 1)
    c = np.empty(m, dtype=np.int64)
    best_v = -np.inf
    best_p = -1
    best_k = 0
    for p in range(P + 1):
        # pass P re-derives the labelling of the best subset
        q = best_p if p == P else p
        for j in range(s):
            member[S[q, j]] = True
        for u in range(n):
            bi = -1
            for j in range(s):
                y = S[q, j]
                if y < m and (bi < 0 or phi[u, y] > phi[u, bi]):
                    bi = y
            bo = -1
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
        v, k = _sweep_best(order, in_lab, out_lab, inv, outv, kind, table, W, c, suf, s_in, s_out, s_inv)
        if v > best_v or best_p < 0:
            best_v = v
            best_p = p
            best_k = k
    return out_lab  # unreachable: the loop returns at p == P


# _argsort_stable sorts fewer keys than this by merge sort, more by radix sort (measured crossover)
_RADIX_MIN = 64


@njit
def _argsort_stable(keys, n, order, buf):
    """Indices sorting ``keys[:n]`` ascending, ties by index (what ``np.argsort(kind="stable")`` gives).

    Writes them to ``order[:n]``; ``order`` and ``buf`` (both (>= n,) int64) are the caller's. Below
    ``_RADIX_MIN`` keys a merge sort, which allocates nothing; from there an LSD radix sort, whose
    passes cost O(n) without a data-dependent branch (a merge sort's mispredicted comparisons, about
    ``log2 n`` per key, were most of alpha-pass's time on large cliques: 3x the radix sort's time from
    a few hundred keys on, measured on fresh keys, which a branch predictor cannot learn). Keys are
    finite or +-inf, never NaN.
    """
    if n >= _RADIX_MIN:
        _radix_argsort(keys, n, order, buf)
    else:
        _merge_argsort(keys, n, order, buf)


@njit
def _merge_argsort(keys, n, order, buf):
    """:func:`_argsort_stable` by merge sort: insertion sort of runs of 16, then bottom-up merges."""
    run = 16
    for i in range(n):
        order[i] = i
    for lo in range(0, n, run):
        hi = min(lo + run, n)
        for i in range(lo + 1, hi):
            v = order[i]
            kv = keys[v]
            j = i - 1
            while j >= lo and keys[order[j]] > kv:
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = v
    src = order
    dst = buf
    width = run
    swapped = False
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                if keys[src[j]] < keys[src[i]]:
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
        src, dst = dst, src
        swapped = not swapped
        width *= 2
    if swapped:
        for i in range(n):
            order[i] = src[i]


@njit
def _radix_argsort(keys, n, order, buf):
    """:func:`_argsort_stable` by LSD radix sort on the bytes of the keys' order-preserving uint64 images.

    A float's bits, with the sign bit set for non-negative numbers and all bits flipped for negative
    ones, order as unsigned integers as the floats do (``-0.0`` is first made ``0.0``, so that the
    two tie as they compare). Eight stable passes of 8 bits, skipping a byte that all keys share.
    """
    ka = np.empty(n, dtype=np.uint64)
    kb = np.empty(n, dtype=np.uint64)
    fb = kb.view(np.float64)
    for i in range(n):
        k = keys[i]
        fb[i] = 0.0 if k == 0.0 else k
    sign = np.uint64(1) << np.uint64(63)
    for i in range(n):
        v = kb[i]
        ka[i] = ~v if v & sign else v | sign
    hist = np.zeros((8, 256), dtype=np.int64)
    byte = np.uint64(255)
    for i in range(n):
        v = ka[i]
        for p in range(8):
            hist[p, (v >> np.uint64(8 * p)) & byte] += 1
    for i in range(n):
        order[i] = i
    start = np.empty(256, dtype=np.int64)
    swapped = False  # whether the keys are in kb and the indices in buf
    for p in range(8):
        s = 0
        shared = False
        for d in range(256):
            c = hist[p, d]
            if c == n:
                shared = True
                break
            start[d] = s
            s += c
        if shared:
            continue
        if swapped:
            _radix_pass(kb, ka, buf, order, start, np.uint64(8 * p), n)
        else:
            _radix_pass(ka, kb, order, buf, start, np.uint64(8 * p), n)
        swapped = not swapped
    if swapped:
        for i in range(n):
            order[i] = buf[i]


@njit
def _radix_pass(src_k, dst_k, src_i, dst_i, start, shift, n):
    """One stable counting-sort pass on the byte of ``src_k`` at ``shift``; ``start`` (256,): each byte's first slot."""
    byte = np.uint64(255)
    for i in range(n):
        v = src_k[i]
        d = (v >> shift) & byte
        pos = start[d]
        start[d] = pos + 1
        dst_k[pos] = v
        dst_i[pos] = src_i[i]


@njit
def _before(ka, ua, kb, ub):
    """Whether (key ``ka``, node ``ua``) precedes (``kb``, ``ub``): larger key first, then lower node."""
    return ka > kb or (ka == kb and ua < ub)


@njit
def _sweep_best(order, in_lab, out_lab, inv, outv, kind, table, W, c, suf, s_in, s_out, s_inv):
    """Best ``(value, k)`` of one sweep: the first ``k`` nodes of ``order`` take their in-label.

    Gathers the sweep in ``order`` into ``s_in``, ``s_out``, ``s_inv`` (n,) and the suffix sums of the
    out-values into ``suf`` (n+1,), so that :func:`_scan_best` reads contiguous arrays, then scans it.
    ``c`` (m,) is a work array.
    """
    n = order.shape[0]
    suf[n] = 0.0
    for t in range(n - 1, -1, -1):
        u = order[t]
        s_in[t] = in_lab[u]
        s_out[t] = out_lab[u]
        s_inv[t] = inv[u]
        suf[t] = suf[t + 1] + outv[u]
    return _scan_best(s_in, s_out, s_inv, suf, kind, table, W, c)


@njit
def _scan_best(s_in, s_out, s_inv, suf, kind, table, W, c):
    """Best ``(value, k)`` of one sweep given in sweep order: the first ``k`` nodes take their in-label.

    Node ``t`` of the sweep has in-label ``s_in[t]`` (value ``s_inv[t]``) and out-label ``s_out[t]``;
    ``suf[t]`` (n+1,) is the sum of the out-values of nodes ``t..n-1`` (``suf[n] = 0``).
    Ties go to the first best ``k``; :func:`alpha_pass_labels`, :func:`subset_pass_labels` and
    :func:`pair_pass_labels` keep the first best sweep, so the labelling is the first best (subset, k).
    ``c`` (m,) is a work array.
    """
    n = s_in.shape[0]
    m = c.shape[0]
    for y in range(m):
        c[y] = 0
    for t in range(n):
        c[s_out[t]] += 1
    fin, ninf = _sum_terms(c, table) if kind == KIND_SUM else (0.0, 0)
    pre = 0.0
    best_v = -np.inf
    best_k = -1
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
            cv = -np.inf if ninf > 0 else fin
        else:
            cv = clique_value(c, kind, table, W)
        v = pre + suf[k] + cv
        if v > best_v or best_k < 0:
            best_v = v
            best_k = k
    return best_v, best_k


@njit
def pair_pass_labels(phi, kind, table, W, n_top):
    """Generalized alpha-pass with ``p = 2``: every label, then the pairs ``a < b`` (``m >= 3``).

    With ``n_top >= m`` every pair is swept (the full generalized alpha-pass); else only the pairs of
    the ``n_top`` labels whose single-label sweeps scored best (ties: lower label), in the same order.

    The same candidates, subset order and tie-breaking as :func:`subset_pass_labels` on the subsets
    of ``_label_subsets(m, 2)``, without a sort per subset. A node whose best label ``t1`` is outside
    subset ``A`` has out-label ``t1`` and key ``max_{a in A} phi[u, a] - phi[u, t1]``; per label ``a``
    the nodes are sorted once by ``phi[u, a] - phi[u, t1]``, so these nodes' order for ``A = {a, b}``
    is a merge of two sorted lists (first occurrence of each node). The few nodes whose best label is
    in ``A`` (their out-label is their second or third label) are sorted apart and merged in.
    O(m n log n + m^2 n) in all (``n_top >= m``), against O(m^2 n log n) for a sort per subset.
    """
    n, m = phi.shape
    top = _top_labels(phi, 3)
    # per label a: nodes by decreasing phi[u, a] - phi[u, t1] (ties: lower node), with these keys
    lists = np.empty((m, n), dtype=np.int64)
    lkeys = np.empty((m, n))
    keys = np.empty(n)
    buf = np.empty(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    for a in range(m):
        for u in range(n):
            keys[u] = -_move_key(phi[u, a], phi[u, top[u, 0]])
        _argsort_stable(keys, n, order, buf)
        for t in range(n):
            lists[a, t] = order[t]
            lkeys[a, t] = -keys[order[t]]
    # nodes by best label
    nbest = np.zeros(m + 1, dtype=np.int64)
    for u in range(n):
        nbest[top[u, 0] + 1] += 1
    for y in range(m):
        nbest[y + 1] += nbest[y]
    byb = np.empty(n, dtype=np.int64)
    fill = nbest[:m].copy()
    for u in range(n):
        byb[fill[top[u, 0]]] = u
        fill[top[u, 0]] += 1
    in_lab = np.empty(n, dtype=np.int64)
    out_lab = np.empty(n, dtype=np.int64)
    inv = np.empty(n)
    outv = np.empty(n)
    key = np.empty(n)  # each node's key in the current subset
    grp = np.empty(n, dtype=np.int64)
    rest = np.empty(n, dtype=np.int64)
    stamp = np.full(n, -1, dtype=np.int64)
    c = np.empty(m, dtype=np.int64)
    s_in = np.empty(n, dtype=np.int64)
    s_out = np.empty(n, dtype=np.int64)
    s_inv = np.empty(n)
    suf = np.empty(n + 1)
    best_v = -np.inf
    best_a = -1
    best_b = -1
    best_k = 0
    pid = 0
    single = np.empty(m)  # best value of each single-label sweep
    cand = np.arange(m)  # labels whose pairs are swept, increasing
    nc = m if n_top >= m else n_top
    n_pass = m + nc * (nc - 1) // 2
    ia_c = 0
    ib_c = 0
    for pp in range(n_pass + 1):
        if pp == n_pass:  # re-derive the labelling of the best subset
            a = best_a
            b = best_b
        elif pp < m:
            a = pp
            b = -1
        else:
            if pp == m:
                if nc < m:  # the nc best single labels (stable: ties by lower label), increasing
                    sel = np.argsort(-single, kind="mergesort")[:nc]
                    cand = np.sort(sel)
                ia_c = 0
                ib_c = 0
            ib_c += 1
            if ib_c == nc:
                ia_c += 1
                ib_c = ia_c + 1
            a = cand[ia_c]
            b = cand[ib_c]
        pid += 1
        # nodes whose best label is in A, sorted apart (insertion sort; few nodes)
        ng = 0
        for sel in range(2):
            y = a if sel == 0 else b
            if y < 0:
                continue
            for t in range(nbest[y], nbest[y + 1]):
                u = byb[t]
                if b < 0:
                    i_l = a
                    o_l = top[u, 1]
                else:
                    i_l = a if phi[u, a] >= phi[u, b] else b
                    o_l = top[u, 1]
                    if o_l == a or o_l == b:
                        o_l = top[u, 2]
                in_lab[u] = i_l
                out_lab[u] = o_l
                inv[u] = phi[u, i_l]
                outv[u] = phi[u, o_l]
                key[u] = _move_key(inv[u], outv[u])
                stamp[u] = pid
                j = ng - 1
                while j >= 0 and _before(key[u], u, key[grp[j]], grp[j]):
                    grp[j + 1] = grp[j]
                    j -= 1
                grp[j + 1] = u
                ng += 1
        # the other nodes: merge of the lists of a and b, first occurrence of each node
        nr = 0
        ia = 0
        ib = 0 if b >= 0 else n
        while ia < n or ib < n:
            if ib >= n or (ia < n and _before(lkeys[a, ia], lists[a, ia], lkeys[b, ib], lists[b, ib])):
                u = lists[a, ia]
                kk = lkeys[a, ia]
                ia += 1
            else:
                u = lists[b, ib]
                kk = lkeys[b, ib]
                ib += 1
            if stamp[u] == pid:
                continue
            stamp[u] = pid
            if b < 0:
                i_l = a
            else:
                i_l = a if phi[u, a] >= phi[u, b] else b
            o_l = top[u, 0]
            in_lab[u] = i_l
            out_lab[u] = o_l
            inv[u] = phi[u, i_l]
            outv[u] = phi[u, o_l]
            key[u] = kk
            rest[nr] = u
            nr += 1
        # final order: merge of the two sorted sequences
        i = 0
        j = 0
        for t in range(n):
            if j >= nr or (i < ng and _before(key[grp[i]], grp[i], key[rest[j]], rest[j])):
                order[t] = grp[i]
                i += 1
            else:
                order[t] = rest[j]
                j += 1
        if pp == n_pass:
            labels = out_lab.copy()
            for t in range(best_k):
                labels[order[t]] = in_lab[order[t]]
            return labels
        v, k = _sweep_best(order, in_lab, out_lab, inv, outv, kind, table, W, c, suf, s_in, s_out, s_inv)
        if pp < m:
            single[a] = v
        if v > best_v or best_a < 0:
            best_v = v
            best_a = a
            best_b = b
            best_k = k
    return out_lab  # unreachable: the loop returns at the last pass
