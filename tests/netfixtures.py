"""Small hand-made road networks whose properties can be counted by hand."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from evroute.network.road_network import RoadNetwork


def grid_network(
    nx_: int = 4, ny: int = 3, *, spacing_m: float = 100.0, seed: int = 0, hilly: bool = True, uturns: bool = False
) -> RoadNetwork:
    """Two-way ``nx_ x ny`` street grid; every junction turn allowed except U-turns (unless ``uturns``).

    Edge ``"a>b"`` goes from junction ``a`` to junction ``b``; elevations are random but smooth-ish.
    """
    rng = np.random.default_rng(seed)
    nodes = [(i, j) for j in range(ny) for i in range(nx_)]
    idx = {p: k for k, p in enumerate(nodes)}
    z = rng.uniform(0, 20, size=len(nodes)) if hilly else np.zeros(len(nodes))
    edges = []
    for i, j in nodes:
        for di, dj in ((1, 0), (0, 1)):
            q = (i + di, j + dj)
            if q in idx:
                edges.append((idx[(i, j)], idx[q]))
                edges.append((idx[q], idx[(i, j)]))
    u = np.array([e[0] for e in edges])
    v = np.array([e[1] for e in edges])
    turns = [(a, b) for a in range(len(edges)) for b in range(len(edges)) if v[a] == u[b] and (uturns or v[b] != u[a])]
    speeds = rng.choice([30 / 3.6, 50 / 3.6, 70 / 3.6], size=len(edges))
    lon = np.array([6.1 + 0.0013 * p[0] for p in nodes])
    lat = np.array([49.6 + 0.0009 * p[1] for p in nodes])
    return RoadNetwork(
        name=f"grid{nx_}x{ny}",
        edge_ids=np.array([f"{a}>{b}" for a, b in edges]),
        from_node=np.array([str(a) for a in u]),
        to_node=np.array([str(b) for b in v]),
        length_m=np.full(len(edges), spacing_m) * rng.uniform(0.8, 1.2, size=len(edges)),
        speed_mps=speeds,
        z_from_m=z[u],
        z_to_m=z[v],
        geometry=[np.array([[lon[a], lat[a]], [lon[b], lat[b]]]) for a, b in edges],
        turns=np.array(turns),
    )


def need_osm(name: str) -> None:
    """Skip the calling test unless ``$EVROUTE_DATA`` holds ``name.osm`` (the real-data tier)."""
    import pytest

    data = os.environ.get("EVROUTE_DATA")
    if not data:
        pytest.skip("EVROUTE_DATA is not set (point it at the folder with monaco.osm / luxembourg.osm)")
    if not (Path(data) / f"{name}.osm").is_file():
        pytest.skip(f"{name}.osm is not in EVROUTE_DATA={data}")
