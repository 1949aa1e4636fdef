"""The bucket searches of :mod:`evroute.search` (numba, ``cache=True``): one-to-all Dijkstra labels on arc weights
(:func:`buckets_kernel`, reach and :func:`evroute.search.one_to_all`) and on node weights (:func:`node_buckets_kernel`,
an arc weighing its head: :func:`evroute.search.node_weighted_route` and the Thompson rounds), one compiled body.

Shapes: ``indptr (N + 1,)``, ``heads (C,)`` the CSR; ``data`` ``(C,)`` arc weights or ``(N,)`` node weights (Wh).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evroute.search.kernels import inline_cached, njit_cached

# ------------------------------------------------------------------ one-to-all by buckets (Dial, Delta-stepping)
#
# Buckets of width ``delta`` in a ring of ``nring`` slots; each slot a singly linked list of entries ``ent[2 k] =
# node, ent[2 k + 1] = next`` in a pool (the caller retries with a bigger one when it fills).  An entry is made each
# time a label falls.


@inline_cached
def _bucket_search(
    indptr: Any,
    heads: Any,
    data: Any,
    srcs: Any,
    init: Any,
    init_pred: Any,
    target: int,
    dist: Any,
    pred: Any,
    delta: float,
    nring: int,
    ent: Any,
    done: Any,
    correcting: bool,
    node_weights: bool,
    arc_pred: bool,
) -> int:
    """Dijkstra's labels by buckets, label correcting inside a bucket (:func:`evroute.search.one_to_all`); the arc
    ``u -> v`` weighs ``data[j]`` (its CSR slot) or, with ``node_weights`` (a constant of each entry point below, so
    the compiled loop has no branch), ``data[v]`` (its head's weight); ``dist`` all ``inf`` and ``pred`` all -9999 on
    entry.  The sources ``srcs (k,)`` start at labels ``init (k,)`` (the least where one repeats) with ``pred``
    ``init_pred (k,)``; a scan that lowers ``v``'s label sets ``pred[v]`` to ``u`` or, with ``arc_pred``, to the
    arc's CSR slot ``j`` (parallel arcs stay apart).  Stops once ``target``'s bucket is emptied (``-1``: never);
    returns the number of node scans, or -1 when the entry pool ``ent`` (any integer type) is full.  ``done (N,)``
    all 0: set when a node is scanned, cleared when its label falls; ``correcting`` False promises ``delta <= min
    arc / 2`` (no scanned label ever falls, nothing to clear).

    The buckets are emptied in increasing order, each in any order; a node is scanned whenever its label fell since
    its last scan, so a label lowered into the bucket being emptied (an arc under ``delta``) is scanned again.  A
    scan never lowers a label below the current bucket (labels only grow along arcs, and ``x -> int(x / delta)`` is
    monotone in floating point), so once a bucket is empty its labels are final; with ``delta <= min arc / 2`` no
    label falls into the current bucket and every node is scanned once (Dial's algorithm).  An entry that would land
    a full ring ahead waits in the farthest slot and is moved on when reached."""
    inv = 1.0 / delta
    bhead = np.full(nring, -1, dtype=np.int64)
    top, pending, cur, scans = 0, 0, 0, 0
    for i in range(srcs.shape[0]):
        v = srcs[i]
        d = init[i]
        if d < dist[v]:
            dist[v] = d
            pred[v] = init_pred[i]
            bv = int(d * inv)
            s = bv if bv < nring else nring - 1
            ent[2 * top] = v
            ent[2 * top + 1] = bhead[s]
            bhead[s] = top
            top += 1
            pending += 1
    while pending > 0:
        slot = cur % nring
        e = bhead[slot]
        if e < 0:
            if target >= 0 and dist[target] < np.inf and int(dist[target] * inv) <= cur:
                break  # the target's bucket is empty: its label and its route are final
            cur += 1
            continue
        bhead[slot] = ent[2 * e + 1]
        u = ent[2 * e]
        if done[u]:  # scanned at its present label already (a stale entry or a duplicate)
            pending -= 1
            continue
        du = dist[u]
        b = int(du * inv)
        if b > cur:  # parked a ring ahead: move it on (its label is still live)
            s = b % nring if b - cur < nring else (cur + nring - 1) % nring
            ent[2 * e + 1] = bhead[s]
            bhead[s] = e
            continue
        pending -= 1
        done[u] = 1
        scans += 1
        for j in range(indptr[u], indptr[u + 1]):
            v = heads[j]
            nd = du + (data[v] if node_weights else data[j])
            if nd < dist[v]:
                dist[v] = nd
                pred[v] = j if arc_pred else u
                if correcting:
                    done[v] = 0
                if 2 * top + 2 > ent.shape[0]:  # the pool is full (label correcting: more label falls than arcs)
                    return -1
                bv = int(nd * inv)
                s = bv % nring if bv - cur < nring else (cur + nring - 1) % nring
                ent[2 * top] = v
                ent[2 * top + 1] = bhead[s]
                bhead[s] = top
                top += 1
                pending += 1
    return scans


@inline_cached
def _from_start(  # noqa: PLR0913 - the flat arrays of one compiled loop
    indptr: Any, heads: Any, data: Any, start: int, target: int, dist: Any, pred: Any, delta: float, nring: int,
    ent: Any, done: Any, correcting: bool, node_weights: bool,
) -> int:  # fmt: skip
    """:func:`_bucket_search` from the one source ``start`` at label 0 (``pred[start]`` stays -9999)."""
    src, init, ip = np.full(1, start, dtype=np.int64), np.zeros(1), np.full(1, -9999, dtype=np.int64)
    return _bucket_search(
        indptr, heads, data, src, init, ip, target, dist, pred, delta, nring, ent, done, correcting, node_weights, False
    )


@njit_cached
def buckets_kernel(  # noqa: PLR0913 - the flat arrays of one compiled loop
    indptr: Any, heads: Any, data: Any, start: int, target: int, dist: Any, pred: Any, delta: float, nring: int,
    ent: Any, done: Any, correcting: bool,
) -> int:  # fmt: skip
    """:func:`_from_start` with arc weights ``data (C,)``."""
    return _from_start(indptr, heads, data, start, target, dist, pred, delta, nring, ent, done, correcting, False)


@njit_cached
def node_buckets_kernel(  # noqa: PLR0913 - the flat arrays of one compiled loop
    indptr: Any, heads: Any, data: Any, start: int, target: int, dist: Any, pred: Any, delta: float, nring: int,
    ent: Any, done: Any, correcting: bool,
) -> int:  # fmt: skip
    """:func:`_from_start` with node weights ``data (N,)``: the arc ``u -> v`` weighs ``data[v]``."""
    return _from_start(indptr, heads, data, start, target, dist, pred, delta, nring, ent, done, correcting, True)


@njit_cached
def sources_buckets_kernel(  # noqa: PLR0913 - the flat arrays of one compiled loop
    indptr: Any, heads: Any, data: Any, srcs: Any, init: Any, init_pred: Any, target: int, dist: Any, pred: Any,
    delta: float, nring: int, ent: Any, done: Any, correcting: bool,
) -> int:  # fmt: skip
    """:func:`_bucket_search` from several sources with arc weights ``data (C,)``, each label's ``pred`` the CSR
    slot of the arc that set it (:mod:`evroute.search.junction`)."""
    return _bucket_search(
        indptr, heads, data, srcs, init, init_pred, target, dist, pred, delta, nring, ent, done, correcting, False, True
    )
