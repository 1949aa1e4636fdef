"""The compiled kernels of :mod:`evroute.search` (numba, ``cache=True``); imported only when numba is installed.

Shapes: per-node arrays are ``(N,)`` (line-graph nodes = road edges), per-arc arrays ``(C,)`` (turns) in CSR order;
energies and weights in Wh, variances in Wh^2.  The algorithms and why they are exact: :mod:`evroute.search`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from evroute.compiled import inline_cached, njit_cached
from evroute.oracle import MIN_WEIGHT_WH

_INV_2_53 = 1.0 / 9007199254740992.0
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)


# ------------------------------------------------------------------ counter-based normals and the Thompson weight


@inline_cached
def _splitmix64(x: Any) -> Any:
    """splitmix64's finaliser of a ``uint64`` (a bijection with full avalanche; Steele, Lea & Flood 2014)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@inline_cached
def _normal(key: Any, idx: Any) -> float:
    """Standard normal number of ``(key, idx)``: two uniforms in ``(0, 1)`` from hashing, one Box-Muller cosine."""
    h1 = _splitmix64(np.uint64(key) ^ _splitmix64(np.uint64(idx)))
    h2 = _splitmix64(h1)
    u1 = (float(h1 >> np.uint64(11)) + 0.5) * _INV_2_53
    u2 = (float(h2 >> np.uint64(11)) + 0.5) * _INV_2_53
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@inline_cached
def rectified_mean_scalar(mu: float, var: float) -> float:
    """``E[max(0, X)]``, ``X ~ N(mu, var)``: ``s (phi(a) + a Phi(a))``, ``a = mu / s``, with ``Phi`` from ``erfc``.

    For ``a < 0`` the two terms cancel to ``~ s phi(a) / a^2``; each is computed to relative precision ``eps``, so
    the result keeps a relative error of about ``a^2 eps`` (``1e-13`` at ``a = -30``; below that it underflows
    beneath :data:`MIN_WEIGHT_WH` for any ``s`` under 1e30 Wh anyway)."""
    if var <= 0.0:
        return max(mu, 0.0)
    s = math.sqrt(var)
    a = mu / s
    res = s * (math.exp(-0.5 * a * a) * _INV_SQRT_2PI + a * 0.5 * math.erfc(-a * _INV_SQRT_2))
    return max(res, 0.0)


@inline_cached
def _ts_weight(e: int, key: Any, m0: Any, v0: Any, cnt: Any, tot: Any, nv: Any, pot: Any) -> float:
    """Oracle weight of edge ``e`` in the round of ``key`` (module doc); ``pot`` empty: no potential."""
    prec = 1.0 / v0[e] + cnt[e] / nv[e]
    mean = (m0[e] / v0[e] + tot[e] / nv[e]) / prec
    mu = mean + math.sqrt(1.0 / prec) * _normal(key, e)
    if pot.shape[0] > 0:
        mu = mu - pot[e]
    return max(rectified_mean_scalar(mu, nv[e]), MIN_WEIGHT_WH)


@njit_cached
def normals_kernel(key: Any, idx: Any, out: Any) -> None:
    for i in range(idx.shape[0]):
        out[i] = _normal(key, idx[i])


@njit_cached
def rect_kernel(mu: Any, var: Any, out: Any) -> None:
    for i in range(mu.shape[0]):
        out[i] = rectified_mean_scalar(mu[i], var[i])


@njit_cached
def weights_kernel(key: Any, m0: Any, v0: Any, cnt: Any, tot: Any, nv: Any, pot: Any, out: Any) -> None:
    for e in range(out.shape[0]):
        out[e] = _ts_weight(e, key, m0, v0, cnt, tot, nv, pot)


# ------------------------------------------------------------------ indexed 4-ary heap with decrease-key
#
# ``hk (N,)`` keys and ``hv (N,)`` nodes of the heap; ``pos (N,)`` where each node is: its slot in the heap, ``UNSEEN``
# (not labelled in this search) or ``SETTLED``.  A node is in the heap at most once (no stale entries).

UNSEEN = -1
SETTLED = -2


@inline_cached
def _sift_up(hk: Any, hv: Any, pos: Any, i: int, key: float, v: int) -> None:
    while i > 0:
        p = (i - 1) >> 2
        if hk[p] <= key:
            break
        hk[i] = hk[p]
        hv[i] = hv[p]
        pos[hv[i]] = i
        i = p
    hk[i] = key
    hv[i] = v
    pos[v] = i


@inline_cached
def _pop(hk: Any, hv: Any, pos: Any, size: int) -> int:
    """Remove the root (read ``hk[0], hv[0]`` first) and mark it settled; the new size."""
    pos[hv[0]] = SETTLED
    size -= 1
    if size == 0:
        return 0
    key = hk[size]
    v = hv[size]
    i = 0
    while True:
        c = 4 * i + 1
        if c >= size:
            break
        best = c
        bk = hk[c]
        for cc in range(c + 1, min(c + 4, size)):
            if hk[cc] < bk:
                bk = hk[cc]
                best = cc
        if key <= bk:
            break
        hk[i] = bk
        hv[i] = hv[best]
        pos[hv[i]] = i
        i = best
    hk[i] = key
    hv[i] = v
    pos[v] = i
    return size


@inline_cached
def _relax(hk: Any, hv: Any, pos: Any, size: int, touched: Any, nt: int, v: int, nd: float) -> tuple[int, int, bool]:
    """Offer label ``nd`` to node ``v`` (not settled): ``(size, touched count, improved)``."""
    p = pos[v]
    if p == UNSEEN:
        touched[nt] = v
        _sift_up(hk, hv, pos, size, nd, v)
        return size + 1, nt + 1, True
    if nd < hk[p]:
        _sift_up(hk, hv, pos, p, nd, v)
        return size, nt, True
    return size, nt, False


# ------------------------------------------------------------------ the lazy bidirectional Thompson search


@inline_cached
def weight_at(v: int, wv: Any, key: Any, m0: Any, v0: Any, cnt: Any, tot: Any, nv: Any, pot: Any) -> float:
    """Edge ``v``'s weight of this round, drawn on first use (``wv[v] < 0``: not drawn yet)."""
    if wv[v] < 0.0:
        wv[v] = _ts_weight(v, key, m0, v0, cnt, tot, nv, pot)
    return wv[v]


@njit_cached
def bidir_kernel(  # noqa: PLR0913, PLR0915 - one compiled loop over flat arrays
    indptr: Any,
    heads: Any,
    rindptr: Any,
    rtails: Any,
    start: int,
    goal: int,
    key: Any,
    m0: Any,
    v0: Any,
    cnt: Any,
    tot: Any,
    nv: Any,
    pot: Any,
    wv: Any,
    df: Any,
    pf: Any,
    posf: Any,
    hfk: Any,
    hfv: Any,
    tf: Any,
    db: Any,
    pb: Any,
    posb: Any,
    hbk: Any,
    hbv: Any,
    tb: Any,
    max_settled: int,
    path: Any,
    stats: Any,
) -> float:
    """Bidirectional Dijkstra (:class:`evroute.search.LazyThompsonEngine`); writes the route into ``path`` and
    ``stats = [route length, settled forward, settled backward, arcs scanned, weights drawn, gave up]``; returns the
    cost without the start's weight (``inf``: unreachable, or gave up after settling ``max_settled`` nodes).  Leaves
    ``posf``, ``posb`` all ``UNSEEN`` and ``wv`` all undrawn (-1) again: only the nodes it touched are reset."""
    inf = np.inf
    df[start] = 0.0
    pf[start] = -1
    tf[0] = start
    _sift_up(hfk, hfv, posf, 0, 0.0, start)
    db[goal] = 0.0
    pb[goal] = -1
    tb[0] = goal
    _sift_up(hbk, hbv, posb, 0, 0.0, goal)
    nf, ntf, nb, ntb = 1, 1, 1, 1
    mu = inf
    mu_u, mu_v = -1, -1
    settled_f, settled_b, scanned = 0, 0, 0
    gave_up = 0
    while nf > 0 and nb > 0:
        if hfk[0] + hbk[0] >= mu:
            break
        if settled_f + settled_b >= max_settled:
            gave_up = 1
            mu = inf
            mu_u = -1
            break
        if hfk[0] <= hbk[0]:  # expand the side with the smaller radius
            u = hfv[0]
            du = hfk[0]
            nf = _pop(hfk, hfv, posf, nf)
            settled_f += 1
            for j in range(indptr[u], indptr[u + 1]):
                v = heads[j]
                scanned += 1
                if posf[v] == SETTLED:
                    continue
                nd = du + weight_at(v, wv, key, m0, v0, cnt, tot, nv, pot)
                nf, ntf, better = _relax(hfk, hfv, posf, nf, tf, ntf, v, nd)
                if better:
                    df[v] = nd
                    pf[v] = u
                if posb[v] != UNSEEN and nd + db[v] < mu:
                    mu = nd + db[v]
                    mu_u, mu_v = u, v
        else:
            v = hbv[0]
            nd = hbk[0] + weight_at(v, wv, key, m0, v0, cnt, tot, nv, pot)
            nb = _pop(hbk, hbv, posb, nb)
            settled_b += 1
            for j in range(rindptr[v], rindptr[v + 1]):
                u = rtails[j]
                scanned += 1
                if posb[u] == SETTLED:
                    continue
                nb, ntb, better = _relax(hbk, hbv, posb, nb, tb, ntb, u, nd)
                if better:
                    db[u] = nd
                    pb[u] = v
                if posf[u] != UNSEEN and df[u] + nd < mu:
                    mu = df[u] + nd
                    mu_u, mu_v = u, v
    k = 0
    if mu_u >= 0:
        x = mu_u  # forward half, from the meeting turn's tail back to the start
        while x >= 0:
            path[k] = x
            k += 1
            x = pf[x]
        path[:k] = path[:k][::-1].copy()
        x = mu_v  # backward half, from the meeting turn's head on to the goal
        while x >= 0:
            path[k] = x
            k += 1
            x = pb[x]
    draws = 0
    for i in range(ntf):
        x = tf[i]
        posf[x] = UNSEEN
        if wv[x] >= 0.0:
            draws += 1
            wv[x] = -1.0
    for i in range(ntb):
        x = tb[i]
        posb[x] = UNSEEN
        if wv[x] >= 0.0:
            draws += 1
            wv[x] = -1.0
    stats[0] = k
    stats[1] = settled_f
    stats[2] = settled_b
    stats[3] = scanned
    stats[4] = draws
    stats[5] = gave_up
    return mu


# ------------------------------------------------------------------ node order for locality, relabelled CSR, arcs


@njit_cached
def bfs_order_kernel(indptr: Any, heads: Any, order: Any, seen: Any) -> None:
    """``order (N,)``: the nodes in breadth-first order from node 0 (then from the least unseen node, and so on)."""
    n = seen.shape[0]
    head, tail, root = 0, 0, 0
    while tail < n:
        if head == tail:
            while seen[root]:
                root += 1
            order[tail] = root
            seen[root] = 1
            tail += 1
        u = order[head]
        head += 1
        for j in range(indptr[u], indptr[u + 1]):
            v = heads[j]
            if not seen[v]:
                seen[v] = 1
                order[tail] = v
                tail += 1


@njit_cached
def relabel_kernel(indptr: Any, heads: Any, perm: Any, inv: Any, pindptr: Any, pheads: Any) -> None:
    """The CSR of the graph with node ``perm[i]`` renamed ``i`` (``inv`` the inverse), each row's heads sorted."""
    pindptr[0] = 0
    k = 0
    for i in range(perm.shape[0]):
        u = perm[i]
        lo = k
        for j in range(indptr[u], indptr[u + 1]):
            x = inv[heads[j]]
            m = k  # insertion sort: rows hold a handful of turns
            while m > lo and pheads[m - 1] > x:
                pheads[m] = pheads[m - 1]
                m -= 1
            pheads[m] = x
            k += 1
        pindptr[i + 1] = k


@njit_cached
def reduced_arcs_kernel(indptr: Any, heads: Any, w: Any, h: Any, out: Any, stats: Any) -> None:
    """``out (C,)``: every arc's ``max(w[v] + h[u] - h[v], 0)`` (the numbers of :func:`evroute.driver.paths.reweight`,
    in its order of operations); ``stats (4,)``: the least arc before clipping, the least, largest and sum of the
    clipped arcs (``inf, inf, 0, 0`` without arcs; a NaN arc makes the sum NaN)."""
    least, lo, hi, total = np.inf, np.inf, 0.0, 0.0
    for u in range(indptr.shape[0] - 1):
        hu = h[u]
        for j in range(indptr[u], indptr[u + 1]):
            v = heads[j]
            a = w[v] + hu - h[v]
            if a < least:
                least = a
            c = a if a > 0.0 else 0.0
            if a != a:  # NaN stays NaN (the caller refuses it)
                c = a
            out[j] = c
            total += c
            if c < lo:
                lo = c
            if c > hi:
                hi = c
    stats[0] = least
    stats[1] = lo
    stats[2] = hi
    stats[3] = total


@njit_cached
def gather2_kernel(perm: Any, a: Any, b: Any, ap: Any, bp: Any) -> None:
    """``ap[i] = a[perm[i]]``, ``bp[i] = b[perm[i]]`` (two node arrays into the new names, one pass)."""
    for i in range(perm.shape[0]):
        k = perm[i]
        ap[i] = a[k]
        bp[i] = b[k]


@njit_cached
def unpermute_kernel(perm: Any, dist: Any, pred: Any, dist_out: Any, pred_out: Any) -> None:
    """Labels and predecessors of a search in the new names (``perm[i]`` renamed ``i``) into the original names;
    a negative predecessor (none) is kept."""
    for i in range(perm.shape[0]):
        k = perm[i]
        dist_out[k] = dist[i]
        p = pred[i]
        pred_out[k] = perm[p] if p >= 0 else p


@njit_cached
def reach_costs_kernel(perm: Any, dist: Any, pred: Any, w: Any, h: Any, start: int, budget: float, *out: Any) -> None:
    """From a search in the new names (``perm[i]`` renamed ``i``) over the arcs ``max(w[v] + h[u] - h[v], 0)``, into
    ``out = (cost (N,), within (N,) bool, pred (N,))`` in the original names: each node's route cost ``w[start] +
    dist - h[start] + h[v]`` (in this order of operations; ``inf`` where unreached), ``cost <= budget``, and the
    predecessors (a negative one kept); ``start`` is an original name."""
    cost, within, pred_out = out
    ws, hs = w[start], h[start]
    for i in range(perm.shape[0]):
        k = perm[i]
        d = dist[i]
        c = ws + d - hs + h[k] if d < np.inf else np.inf
        cost[k] = c
        within[k] = c <= budget
        p = pred[i]
        pred_out[k] = perm[p] if p >= 0 else p
