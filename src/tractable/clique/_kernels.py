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
    "icm_sweep",
    "subset_pass_labels",
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
    # nodes grouped by label, each group sorted by decreasing move key
    start = np.zeros(m + 1, dtype=np.int64)
    for y in range(m):
        start[y + 1] = start[y] + counts[y]
    fill = start[:m].copy()
    nodes = np.empty(n, dtype=np.int64)
    for u in range(n):
        y = labels[u]
        nodes[fill[y]] = u
        fill[y] += 1
    for y in range(m):
        if y == alpha or counts[y] < 2:
            continue
        grp = nodes[start[y] : start[y + 1]].copy()
        keys = np.empty(grp.shape[0])
        for t in range(grp.shape[0]):
            keys[t] = -_move_key(phi[grp[t], alpha], phi[grp[t], y])
        srt = np.argsort(keys, kind="mergesort")
        for t in range(grp.shape[0]):
            nodes[start[y] + t] = grp[srt[t]]
    N = n - counts[alpha]
    D = np.full(N + 1, -np.inf)
    D[0] = 0.0
    choice = np.zeros((m, N + 1), dtype=np.int64)
    total = 0
    g = np.empty(n + 1)
    for i in range(m):
        if i == alpha:
            continue
        ni = counts[i]
        s0 = start[i]
        # g[j]: label i keeps its last ni - j nodes, its top j go to alpha
        keep = 0.0
        for t in range(ni):
            keep += phi[nodes[s0 + t], i]
        acc_alpha = 0.0
        acc_keep = keep
        for j in range(ni + 1):
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
        newD = np.full(N + 1, -np.inf)
        for k in range(total + ni + 1):
            lo = k - total
            if lo < 0:
                lo = 0
            hi = ni if ni < k else k
            for j in range(lo, hi + 1):
                d = D[k - j]
                if d == -np.inf or g[j] == -np.inf:
                    continue
                v = d + g[j]
                if v > newD[k]:
                    newD[k] = v
                    choice[i, k] = j
        D = newD
        total += ni
    base_alpha = 0.0
    for u in range(n):
        if labels[u] == alpha:
            base_alpha += phi[u, alpha]
    best_k = 0
    best_v = -np.inf
    for k in range(N + 1):
        if D[k] == -np.inf:
            continue
        v = D[k] + table[alpha, k + counts[alpha]] + base_alpha
        if v > best_v:
            best_v = v
            best_k = k
    # value of the current labelling (no node moved)
    cur = 0.0
    for u in range(n):
        cur += phi[u, labels[u]]
    for y in range(m):
        cur += table[y, counts[y]]
    if best_v == -np.inf or best_k == 0 or not best_v > cur + tol:
        return labels, False
    out = labels.copy()
    k = best_k
    for i in range(m - 1, -1, -1):
        if i == alpha:
            continue
        j = choice[i, k]
        for t in range(j):
            out[nodes[start[i] + t]] = alpha
        k -= j
    return out, True


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
    suf = np.empty(n + 1)
    c = np.empty(m, dtype=np.int64)
    best_v = -np.inf
    best_alpha = -1
    best_k = 0
    for alpha in range(m):
        # node values gathered once, so that the sweep in sorted order reads small arrays only
        for u in range(n):
            o = b2[u] if b1[u] == alpha else b1[u]
            out[u] = o
            inv[u] = phi[u, alpha]
            outv[u] = phi[u, o]
            keys[u] = -_move_key(inv[u], outv[u])
        order = np.argsort(keys, kind="mergesort")
        suf[n] = 0.0
        for t in range(n - 1, -1, -1):
            suf[t] = suf[t + 1] + outv[order[t]]
        for y in range(m):
            c[y] = 0
        for u in range(n):
            c[out[u]] += 1
        fin, ninf = _sum_terms(c, table) if kind == KIND_SUM else (0.0, 0)
        pre = 0.0
        for k in range(n + 1):
            if k > 0:
                u = order[k - 1]
                pre += inv[u]
                o = out[u]
                c[o] -= 1
                c[alpha] += 1
                if kind == KIND_SUM:
                    fin, ninf = _sum_shift(fin, ninf, table, o, c[o] + 1, c[o])
                    fin, ninf = _sum_shift(fin, ninf, table, alpha, c[alpha] - 1, c[alpha])
            if kind == KIND_SUM:
                cv = -np.inf if ninf > 0 else fin
            else:
                cv = clique_value(c, kind, table, W)
            v = pre + suf[k] + cv
            if v > best_v or best_alpha < 0:
                best_v = v
                best_alpha = alpha
                best_k = k
    alpha = best_alpha
    labels = np.empty(n, dtype=np.int64)
    for u in range(n):
        o = b2[u] if b1[u] == alpha else b1[u]
        labels[u] = o
        keys[u] = -_move_key(phi[u, alpha], phi[u, o])
    order = np.argsort(keys, kind="mergesort")
    for t in range(best_k):
        labels[order[t]] = alpha
    return labels


@njit
def subset_pass_labels(phi, S, kind, table, W):
    """Generalized alpha-pass over the label subsets ``S`` (P, s), rows padded with ``m``.

    For subset ``A``, a node's in-label is its best label in ``A`` and its out-label its best label
    outside ``A``; the sweep is that of :func:`alpha_pass_labels` with in-labels in place of alpha.
    Same candidates and tie-breaking as the array version in ``alpha_pass.py``. O(P n (m + log n)).
    """
    n, m = phi.shape
    P, s = S.shape
    member = np.zeros(m + 1, dtype=np.bool_)
    in_lab = np.empty(n, dtype=np.int64)
    out_lab = np.empty(n, dtype=np.int64)
    inv = np.empty(n)
    outv = np.empty(n)
    keys = np.empty(n)
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
            bo = -1
            for y in range(m):
                if member[y]:
                    if bi < 0 or phi[u, y] > phi[u, bi]:
                        bi = y
                elif bo < 0 or phi[u, y] > phi[u, bo]:
                    bo = y
            in_lab[u] = bi
            out_lab[u] = bo
            inv[u] = phi[u, bi]
            outv[u] = phi[u, bo]
            keys[u] = -_move_key(inv[u], outv[u])
        for j in range(s):
            member[S[q, j]] = False
        order = np.argsort(keys, kind="mergesort")
        if p == P:
            labels = out_lab.copy()
            for t in range(best_k):
                labels[order[t]] = in_lab[order[t]]
            return labels
        suf[n] = 0.0
        for t in range(n - 1, -1, -1):
            suf[t] = suf[t + 1] + outv[order[t]]
        for y in range(m):
            c[y] = 0
        for u in range(n):
            c[out_lab[u]] += 1
        fin, ninf = _sum_terms(c, table) if kind == KIND_SUM else (0.0, 0)
        pre = 0.0
        for k in range(n + 1):
            if k > 0:
                u = order[k - 1]
                a = out_lab[u]
                b = in_lab[u]
                pre += inv[u]
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
            if v > best_v or best_p < 0:
                best_v = v
                best_p = p
                best_k = k
    return out_lab  # unreachable: the loop returns at p == P
