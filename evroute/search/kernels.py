"""The compiled kernels of :mod:`evroute.search` (numba, ``cache=True``); imported only when numba is installed.

Shapes: per-node arrays are ``(N,)`` (line-graph nodes = road edges), per-arc arrays ``(C,)`` (turns) in CSR order;
energies and weights in Wh, variances in Wh^2.  The algorithms and why they are exact: :mod:`evroute.search`.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from evroute.oracle import MIN_WEIGHT_WH

_INV_2_53 = 1.0 / 9007199254740992.0
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)


# ------------------------------------------------------------------ counter-based normals and the Thompson weight


def _njit(fn: Any) -> Any:
    """Compile ``fn`` in nopython mode, cached on disk (the first process pays the compilation)."""
    return numba.njit(cache=True, nogil=True)(fn)


@_njit
def _splitmix64(x: Any) -> Any:
    """splitmix64's finaliser of a ``uint64`` (a bijection with full avalanche; Steele, Lea & Flood 2014)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@_njit
def _normal(key: Any, idx: Any) -> float:
    """Standard normal number of ``(key, idx)``: two uniforms in ``(0, 1)`` from hashing, one Box-Muller cosine."""
    h1 = _splitmix64(np.uint64(key) ^ _splitmix64(np.uint64(idx)))
    h2 = _splitmix64(h1)
    u1 = (float(h1 >> np.uint64(11)) + 0.5) * _INV_2_53
    u2 = (float(h2 >> np.uint64(11)) + 0.5) * _INV_2_53
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@_njit
def _rectified_mean(mu: float, var: float) -> float:
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


@_njit
def _ts_weight(e: int, key: Any, m0: Any, v0: Any, cnt: Any, tot: Any, nv: Any, pot: Any) -> float:
    """Oracle weight of edge ``e`` in the round of ``key`` (module doc); ``pot`` empty: no potential."""
    prec = 1.0 / v0[e] + cnt[e] / nv[e]
    mean = (m0[e] / v0[e] + tot[e] / nv[e]) / prec
    mu = mean + math.sqrt(1.0 / prec) * _normal(key, e)
    if pot.shape[0] > 0:
        mu = mu - pot[e]
    return max(_rectified_mean(mu, nv[e]), MIN_WEIGHT_WH)


@_njit
def normals_kernel(key: Any, idx: Any, out: Any) -> None:
    for i in range(idx.shape[0]):
        out[i] = _normal(key, idx[i])


@_njit
def rect_kernel(mu: Any, var: Any, out: Any) -> None:
    for i in range(mu.shape[0]):
        out[i] = _rectified_mean(mu[i], var[i])


@_njit
def weights_kernel(key: Any, m0: Any, v0: Any, cnt: Any, tot: Any, nv: Any, pot: Any, out: Any) -> None:
    for e in range(out.shape[0]):
        out[e] = _ts_weight(e, key, m0, v0, cnt, tot, nv, pot)


# ------------------------------------------------------------------ binary heap with lazy deletion


@_njit
def _heap_push(hk: Any, hv: Any, size: int, key: float, v: int) -> int:
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if hk[p] <= key:
            break
        hk[i] = hk[p]
        hv[i] = hv[p]
        i = p
    hk[i] = key
    hv[i] = v
    return size + 1


@_njit
def _heap_pop(hk: Any, hv: Any, size: int) -> int:
    """Remove the root (read ``hk[0], hv[0]`` first); the new size."""
    size -= 1
    key = hk[size]
    v = hv[size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and hk[c + 1] < hk[c]:
            c += 1
        if key <= hk[c]:
            break
        hk[i] = hk[c]
        hv[i] = hv[c]
        i = c
    if size > 0:
        hk[i] = key
        hv[i] = v
    return size


# ------------------------------------------------------------------ the lazy bidirectional Thompson search


@_njit
def weight_at(
    v: int, stamp: int, wst: Any, wv: Any, key: Any, m0: Any, v0: Any, cnt: Any, tot: Any, nv: Any, pot: Any
) -> float:
    if wst[v] != stamp:
        wst[v] = stamp
        wv[v] = _ts_weight(v, key, m0, v0, cnt, tot, nv, pot)
    return wv[v]


@_njit
def bidir_kernel(  # noqa: PLR0913, PLR0915 - one compiled loop over flat arrays
    indptr: Any,
    heads: Any,
    rindptr: Any,
    rtails: Any,
    start: int,
    goal: int,
    stamp: int,
    key: Any,
    m0: Any,
    v0: Any,
    cnt: Any,
    tot: Any,
    nv: Any,
    pot: Any,
    wst: Any,
    wv: Any,
    sf: Any,
    df: Any,
    pf: Any,
    sb: Any,
    db: Any,
    pb: Any,
    hfk: Any,
    hfv: Any,
    hbk: Any,
    hbv: Any,
    path: Any,
    stats: Any,
) -> float:
    """Bidirectional Dijkstra (module doc of :class:`LazyThompsonEngine`); writes the route into ``path`` and
    ``stats = [route length, settled forward, settled backward, arcs scanned, weights drawn]``; returns the cost
    (``inf``: unreachable)."""
    inf = np.inf
    sf[start] = stamp
    df[start] = 0.0
    pf[start] = -1
    sb[goal] = stamp
    db[goal] = 0.0
    pb[goal] = -1
    nf = _heap_push(hfk, hfv, 0, 0.0, start)
    nb = _heap_push(hbk, hbv, 0, 0.0, goal)
    mu = inf
    mu_u = -1
    mu_v = -1
    settled_f = 0
    settled_b = 0
    scanned = 0
    draws_before = 0
    while nf > 0 and nb > 0:
        if hfk[0] + hbk[0] >= mu:
            break
        if nf <= nb:  # expand the smaller frontier
            du = hfk[0]
            u = hfv[0]
            nf = _heap_pop(hfk, hfv, nf)
            if du > df[u]:
                continue  # stale entry
            settled_f += 1
            for j in range(indptr[u], indptr[u + 1]):
                v = heads[j]
                scanned += 1
                if wst[v] != stamp:
                    draws_before += 1
                nd = du + weight_at(v, stamp, wst, wv, key, m0, v0, cnt, tot, nv, pot)
                if sf[v] != stamp or nd < df[v]:
                    sf[v] = stamp
                    df[v] = nd
                    pf[v] = u
                    nf = _heap_push(hfk, hfv, nf, nd, v)
                if sb[v] == stamp and nd + db[v] < mu:
                    mu = nd + db[v]
                    mu_u = u
                    mu_v = v
        else:
            dv = hbk[0]
            v = hbv[0]
            nb = _heap_pop(hbk, hbv, nb)
            if dv > db[v]:
                continue
            settled_b += 1
            if wst[v] != stamp:
                draws_before += 1
            nd = dv + weight_at(v, stamp, wst, wv, key, m0, v0, cnt, tot, nv, pot)
            for j in range(rindptr[v], rindptr[v + 1]):
                u = rtails[j]
                scanned += 1
                if sb[u] != stamp or nd < db[u]:
                    sb[u] = stamp
                    db[u] = nd
                    pb[u] = v
                    nb = _heap_push(hbk, hbv, nb, nd, u)
                if sf[u] == stamp and df[u] + nd < mu:
                    mu = df[u] + nd
                    mu_u = u
                    mu_v = v
    stats[1] = settled_f
    stats[2] = settled_b
    stats[3] = scanned
    stats[4] = draws_before
    if mu_u < 0:
        stats[0] = 0
        return inf
    k = 0  # forward half, reversed: mu_u, pf[mu_u], ..., start
    x = mu_u
    while x >= 0:
        path[k] = x
        k += 1
        x = pf[x]
    path[:k] = path[:k][::-1].copy()
    x = mu_v  # backward half: mu_v, pb[mu_v], ..., goal
    while x >= 0:
        path[k] = x
        k += 1
        x = pb[x]
    stats[0] = k
    return mu


# ------------------------------------------------------------------ one-to-all Dijkstra (reach)


@_njit
def one_to_all_kernel(indptr: Any, heads: Any, data: Any, start: int, dist: Any, pred: Any, hk: Any, hv: Any) -> int:
    dist[start] = 0.0
    n = _heap_push(hk, hv, 0, 0.0, start)
    settled = 0
    while n > 0:
        du = hk[0]
        u = hv[0]
        n = _heap_pop(hk, hv, n)
        if du > dist[u]:
            continue
        settled += 1
        for j in range(indptr[u], indptr[u + 1]):
            v = heads[j]
            nd = du + data[j]
            if nd < dist[v]:
                dist[v] = nd
                pred[v] = u
                n = _heap_push(hk, hv, n, nd, v)
    return settled
