"""Directed line graph of a road network, edge contexts and the weighted incidence Laplacian.

The line graph L(G) has one node per road edge and one arc per legal turn ``(e1, e2)``.  Routes
are paths in L(G) from a start edge to a goal edge.  Following the reference paper, everything
downstream works on the largest strongly connected component (LCC) of L(G), so that every goal is
reachable from every start.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from evroute.errors import DataError
from evroute.network.road_network import RoadNetwork

CONTEXT_NAMES: tuple[str, ...] = ("length", "speed_limit", "incline")
#: raw turn features of :meth:`LineGraph.turn_features` (the last two only for networks read from a SUMO net)
TURN_FEATURE_NAMES: tuple[str, ...] = ("cos_angle", "sin_angle", "speed_change", "yield", "traffic_light")


@dataclass(eq=False)
class LineGraph:
    """Line graph of a :class:`RoadNetwork` restricted to its largest strongly connected component.

    Attributes:
        network: the road network restricted to the LCC; line-graph node ``i`` is ``network`` edge ``i``.
        adjacency: ``(E, E)`` CSR matrix, ``adjacency[e1, e2] = 1`` for every legal turn ``e1 -> e2``.
        parent_index: ``(E,)`` indices of the kept edges in the original (unrestricted) network.
        parent_edge_ids: ``(E0,)`` edge ids of the original network (``None``: not recorded), so that an id outside
            the component can be told from an id that does not exist.
    """

    network: RoadNetwork
    adjacency: sp.csr_matrix
    parent_index: np.ndarray
    parent_edge_ids: np.ndarray | None = None
    _cache: dict[str, object] = field(default_factory=dict, repr=False)

    @property
    def n_nodes(self) -> int:
        """Number of line-graph nodes = road edges ``E``."""
        return self.network.n_edges

    @property
    def n_arcs(self) -> int:
        """Number of line-graph arcs = legal turns ``C``."""
        return int(self.adjacency.nnz)

    def arc_pattern(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(indptr (E + 1,), heads (C,), tails (C,))`` of the turns in sorted CSR order, computed once (the
        oracles' and path searches' sparsity structure; read-only arrays, shared by every caller)."""
        if "arc_pattern" not in self._cache:
            adj = self.adjacency.tocsr()
            if not adj.has_sorted_indices:
                adj = adj.copy()
                adj.sort_indices()
            tails = np.repeat(np.arange(adj.shape[0], dtype=np.int64), np.diff(adj.indptr))
            arrays = (adj.indptr.copy(), adj.indices.copy(), tails)  # copies: the adjacency's own stay writeable
            for arr in arrays:
                arr.flags.writeable = False
            self._cache["arc_pattern"] = arrays
        pattern = self._cache["arc_pattern"]
        assert isinstance(pattern, tuple)
        return pattern

    def content_digest(self) -> str:
        """Hex BLAKE2b digest of everything :meth:`laplacian` and :meth:`contexts` are computed from: the turns in
        their CSR order (``adjacency``'s ``indptr`` and ``indices``), the edges' length, speed and end elevations, and
        the source of the code that computes them (computed once; ~0.05 s at a million edges, where building the
        Laplacian to hash it took ~1.2 s).  Equal digests, bit-identical Laplacian and contexts: a key for what is
        derived from them."""
        if "content_digest" not in self._cache:
            import hashlib
            import inspect

            net, adj = self.network, self.adjacency
            code = "".join(inspect.getsource(f) for f in (LineGraph.incidence, LineGraph.laplacian, LineGraph.contexts))
            code += inspect.getsource(standardise)
            h = hashlib.blake2b(code.encode())  # BLAKE2b: about twice SHA-256's speed without SHA instructions
            for a in (adj.indptr, adj.indices, net.length_m, net.speed_mps, net.z_from_m, net.z_to_m):
                arr = np.ascontiguousarray(a)
                h.update(f"{arr.dtype.str}{arr.shape}".encode())
                h.update(arr.data.cast("B"))
            self._cache["content_digest"] = h.hexdigest()
        digest = self._cache["content_digest"]
        assert isinstance(digest, str)
        return digest

    @contextlib.contextmanager
    def transient(self, *names: str) -> Iterator[None]:
        """Within the block, the products ``names`` (``"incidence"``, ``"laplacian"``, ...) it computes are cached as
        usual and dropped at its end unless they were cached before it: a one-off computation (an environment's
        prior draw) does not keep a Laplacian alive for the rest of a run that never reads it again (at 5 M edges
        about 0.75 GB)."""
        before = {k for k in names if k in self._cache}
        try:
            yield
        finally:
            for k in names:
                if k not in before:
                    self._cache.pop(k, None)

    @property
    def turns(self) -> np.ndarray:
        """``(C, 2)`` legal turns ``(e1, e2)`` in CSR order (sorted by ``e1``, then ``e2``)."""
        coo = self.adjacency.tocoo()
        return np.stack([coo.row, coo.col], axis=1).astype(np.int64)

    def contexts(self) -> np.ndarray:
        """``(E, 3)`` standardised edge contexts: length, speed limit, incline.

        Each column is centred and scaled to unit variance over the edges of the line graph
        (a constant column, e.g. incline on a flat network, is only centred).
        """
        if "contexts" not in self._cache:
            net = self.network
            raw = np.stack([net.length_m, net.speed_mps, net.incline], axis=1)
            self._cache["contexts"] = standardise(raw)
        contexts = self._cache["contexts"]
        assert isinstance(contexts, np.ndarray)
        return contexts

    def turn_features(self) -> np.ndarray:
        """``(C, f)`` standardised features of every turn ``(e1, e2)`` in CSR order (:attr:`turns`).

        Columns (:data:`TURN_FEATURE_NAMES`): cosine and sine of the turn angle (heading change from the last
        segment of ``e1``'s geometry to the first of ``e2``'s, positive to the left; a U-turn is ``cos = -1``), the
        speed-limit change ``v[e2] - v[e1]`` (m/s) and, for networks read from a SUMO net (``meta["loader"] ==
        "sumo"``), the right of way: the share of the turn's lane connections that must yield (SUMO link state
        minor, equal, stop: ``m = s w o Z``) and that a traffic light controls.  Standardised like :meth:`contexts`.
        """
        if "turn_features" not in self._cache:
            t = self.turns
            net = self.network
            h_out = np.array([_heading(g[-2:] if len(g) >= 2 else g, scale_x=_xscale(g)) for g in net.geometry])
            h_in = np.array([_heading(g[:2] if len(g) >= 2 else g, scale_x=_xscale(g)) for g in net.geometry])
            angle = np.angle(np.exp(1j * (h_in[t[:, 1]] - h_out[t[:, 0]])))
            cols = [np.cos(angle), np.sin(angle), net.speed_mps[t[:, 1]] - net.speed_mps[t[:, 0]]]
            rights = _sumo_right_of_way(net, t)
            if rights is not None:
                cols += [rights[:, 0], rights[:, 1]]
            self._cache["turn_features"] = standardise(np.stack(cols, axis=1)) if len(t) else np.zeros((0, len(cols)))
        feats = self._cache["turn_features"]
        assert isinstance(feats, np.ndarray)
        return feats

    def incidence(self) -> sp.csr_matrix:
        """``(E, C)`` weighted incidence matrix ``B`` of paper appendix B.1.

        For turn ``c = (e1, e2)`` with weight ``W_c = mean_length / length[e1]``:
        ``B[e1, c] = -W_c`` and ``B[e2, c] = +W_c``.  A self-loop turn (``e1 == e2``) contributes nothing.
        """
        if "incidence" not in self._cache:
            t = self.turns
            length = self.network.length_m
            w = length.mean() / length[t[:, 0]]
            c = np.arange(len(t))
            rows = np.concatenate([t[:, 0], t[:, 1]])
            cols = np.concatenate([c, c])
            vals = np.concatenate([-w, w])
            b = sp.csr_matrix((vals, (rows, cols)), shape=(self.n_nodes, len(t)))
            self._cache["incidence"] = b
        b = self._cache["incidence"]
        assert isinstance(b, sp.csr_matrix)
        return b

    def laplacian(self) -> sp.csr_matrix:
        """``(E, E)`` symmetric positive semi-definite incidence Laplacian ``Delta = B B^T``."""
        if "laplacian" not in self._cache:
            b = self.incidence()
            self._cache["laplacian"] = (b @ b.T).tocsr()
        lap = self._cache["laplacian"]
        assert isinstance(lap, sp.csr_matrix)
        return lap

    def to_networkx(self):  # -> nx.DiGraph
        """The line graph as a :class:`networkx.DiGraph` (nodes: edge indices with ``edge_id`` attribute)."""
        import networkx as nx

        g = nx.DiGraph()
        for i, eid in enumerate(self.network.edge_ids.tolist()):
            g.add_node(i, edge_id=eid)
        g.add_edges_from(map(tuple, self.turns.tolist()))
        return g


def _xscale(g: np.ndarray) -> float:
    """East-west scale of a lon/lat polyline (``cos(lat)``); 1 for projected coordinates (``|y| > 90``)."""
    y = float(np.mean(g[:, 1])) if len(g) else 0.0
    return float(np.cos(np.radians(y))) if abs(y) <= 90 else 1.0


def _heading(seg: np.ndarray, scale_x: float = 1.0) -> float:
    """Heading (rad, counter-clockwise from east) of the segment ``seg[0] -> seg[-1]`` (0 for a point)."""
    if len(seg) < 2:
        return 0.0
    d = np.asarray(seg[-1], dtype=np.float64) - np.asarray(seg[0], dtype=np.float64)
    return float(np.arctan2(d[1], d[0] * scale_x))


def _sumo_right_of_way(net: RoadNetwork, turns: np.ndarray) -> np.ndarray | None:
    """``(C, 2)`` per turn: share of lane connections that yield, share under a traffic light (None: no SUMO net)."""
    from pathlib import Path

    src = net.meta.get("source")
    if net.meta.get("loader") != "sumo" or not src or not Path(str(src)).is_file():
        return None
    import sumolib

    idx = {e: i for i, e in enumerate(net.edge_ids.tolist())}
    n = net.n_edges
    key = turns[:, 0] * n + turns[:, 1]
    order = np.argsort(key)
    total, yields, lights = np.zeros(len(turns)), np.zeros(len(turns)), np.zeros(len(turns))

    def pos(a: str, b: str) -> int:
        if a not in idx or b not in idx:
            return -1
        k = idx[a] * n + idx[b]
        i = int(np.searchsorted(key[order], k))
        return int(order[i]) if i < len(key) and key[order[i]] == k else -1

    for c in sumolib.xml.parse_fast(str(src), "connection", ["from", "to", "dir", "state"]):
        i = pos(c.attr_from, c.to)
        if i >= 0:
            total[i] += 1
            yields[i] += c.state in ("m", "=", "s", "w", "o", "Z")
    for c in sumolib.xml.parse_fast(str(src), "connection", ["from", "to", "tl"]):
        i = pos(c.attr_from, c.to)
        if i >= 0:
            lights[i] += 1
    total = np.maximum(total, 1.0)
    return np.stack([yields / total, np.minimum(lights / total, 1.0)], axis=1)


def standardise(x: np.ndarray) -> np.ndarray:
    """Centre each column of ``x`` (shape ``(n, d)``) and scale it to unit (population) variance."""
    x = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise DataError("contexts contain NaN or inf")
    sd = x.std(axis=0)
    sd[sd == 0] = 1.0
    return (x - x.mean(axis=0)) / sd


def build_line_graph(network: RoadNetwork, *, largest_scc: bool = True) -> LineGraph:
    """Build the directed line graph of ``network``.

    Args:
        network: road network; its ``turns`` are the line-graph arcs.
        largest_scc: restrict to the largest strongly connected component (default, as in the paper).

    Returns:
        A :class:`LineGraph` whose node ``i`` is edge ``i`` of ``LineGraph.network``.
    """
    n = network.n_edges
    t = network.turns
    adj = sp.csr_matrix((np.ones(len(t)), (t[:, 0], t[:, 1])), shape=(n, n))
    adj.sum_duplicates()
    adj.data[:] = 1.0
    keep = np.arange(n)
    if largest_scc:
        _, labels = connected_components(adj, directed=True, connection="strong")
        counts = np.bincount(labels)
        keep = np.flatnonzero(labels == np.argmax(counts))
        if len(keep) < 2:
            raise DataError(f"network {network.name!r} has no strongly connected component with 2 or more edges")
    if len(keep) < n:
        sub = network.subnetwork(keep)
        adj = adj[keep][:, keep].tocsr()
    else:  # every edge kept: the matrix is already the component's (no row and column gathers of every turn)
        sub = network
    adj.sort_indices()
    return LineGraph(network=sub, adjacency=adj, parent_index=keep, parent_edge_ids=network.edge_ids)
