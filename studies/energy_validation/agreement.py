"""Do the two OSM loaders give the same time and energy for the same trips?  (issue 34, item 3)

The same OSM file loaded with ``--loader netconvert`` and ``--loader osmnx`` gives two graphs with different edges
(netconvert joins junction clusters and honours turn restrictions, osmnx does neither).  A trip is a pair of points
(lon/lat): the midpoints of two random edges of the netconvert network at least ``min_km`` apart as the crow flies.
In each network a point snaps to its nearest edge and that edge's reverse twin (the same road the other way), and
the trip is the fastest route (Dijkstra on travel time, turns as the network allows them) over the four start/goal
combinations; its time (s) and energy (Wh), both the default prior's (:func:`evroute.energy.edge_prior` with the
default vehicle: speed profiles with the junction and signal delays of :mod:`evroute.network.junctions`), are
compared.  ``studies/energy_validation/loader_agreement.py`` prints the summary;
``tests/test_speeds_realdata.py`` asserts it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evroute.errors import UnreachableError
from evroute.linegraph import LineGraph


@dataclass(frozen=True)
class Trip:
    """One trip measured on both loaders: points (lon, lat) and each loader's fastest-route time (s), energy (Wh),
    length (m) and free-flow time (s: ``length_m / speed_mps`` summed over the route, no junction delays)."""

    origin: tuple[float, float]
    dest: tuple[float, float]
    time_s: dict[str, float]
    energy_wh: dict[str, float]
    length_m: dict[str, float]
    free_s: dict[str, float]


def _candidates(lg: LineGraph, lon: float, lat: float) -> list[int]:
    """The line-graph node nearest ``(lon, lat)`` and its reverse twin when the line graph has one."""
    from evroute.network.snap import nearest_edge

    net = lg.network
    e = nearest_edge(net, lon, lat, max_distance_m=200.0)
    twin = np.flatnonzero((net.from_node == net.to_node[e]) & (net.to_node == net.from_node[e]))
    return [e, *(int(t) for t in twin[:1])]


def fastest_trip(
    lg: LineGraph, origin: tuple[float, float], dest: tuple[float, float], time_s: np.ndarray, energy: np.ndarray
):
    """``(time_s, energy_wh, length_m, free_s)`` of the fastest route between two points (see the module docstring)
    by the edge times ``time_s`` ``(E,)`` (s), with the energy of ``energy`` ``(E,)`` (Wh) and the free-flow time
    ``length_m / speed_mps`` (s)."""
    from evroute.oracle import RouteOracle

    net = lg.network
    oracle = RouteOracle(lg)
    best = None
    for s in _candidates(lg, *origin):
        for g in _candidates(lg, *dest):
            try:
                r = oracle.shortest_route(time_s, s, g)
            except UnreachableError:
                continue
            if best is None or r.cost < best.cost:
                best = r
    if best is None:
        raise UnreachableError(f"no route between {origin} and {dest}")
    e = best.edges
    free = float((net.length_m / net.speed_mps)[e].sum())
    return float(time_s[e].sum()), float(energy[e].sum()), float(net.length_m[e].sum()), free


def loader_agreement(
    name: str, n_trips: int = 20, *, seed: int = 0, min_km: float = 1.0, data_dir: str | None = None
) -> list[Trip]:
    """``n_trips`` trips on network ``name`` measured on both loaders (see the module docstring)."""
    from evroute.energy import VehicleProfile, edge_prior
    from evroute.experiments.runner import load_linegraph
    from evroute.routes import edge_midpoints

    vehicle = VehicleProfile.load()
    lgs = {ld: load_linegraph(name, data_dir, None, ld) for ld in ("netconvert", "osmnx")}
    prior = {ld: edge_prior(lg.network, vehicle) for ld, lg in lgs.items()}
    mid = edge_midpoints(lgs["netconvert"].network.geometry)
    rng = np.random.default_rng(seed)
    coslat = np.cos(np.radians(mid[:, 1].mean()))
    trips: list[Trip] = []
    for _ in range(50 * n_trips):
        if len(trips) == n_trips:
            break
        i, j = rng.choice(len(mid), size=2, replace=False)
        d_km = float(np.hypot((mid[i, 0] - mid[j, 0]) * coslat, mid[i, 1] - mid[j, 1]) * 111.2)
        if d_km < min_km:
            continue
        o, d = (float(mid[i, 0]), float(mid[i, 1])), (float(mid[j, 0]), float(mid[j, 1]))
        try:
            res = {ld: fastest_trip(lg, o, d, prior[ld].time_s, prior[ld].energy_wh) for ld, lg in lgs.items()}
        except (UnreachableError, ValueError):  # a point off the other loader's largest component
            continue
        trips.append(
            Trip(
                o,
                d,
                {k: v[0] for k, v in res.items()},
                {k: v[1] for k, v in res.items()},
                {k: v[2] for k, v in res.items()},
                {k: v[3] for k, v in res.items()},
            )
        )
    return trips


def summary(trips: list[Trip]) -> dict[str, float]:
    """Median and worst absolute relative difference (osmnx / netconvert - 1) of time, energy and the route's mean
    free-flow speed (length / free-flow time: the speeds alone, without the junctions, whatever route each graph
    offers), and the count."""
    out: dict[str, float] = {"trips": float(len(trips))}
    speed = {ld: np.array([t.length_m[ld] / t.free_s[ld] for t in trips]) for ld in ("osmnx", "netconvert")}
    for what in ("time_s", "energy_wh", "speed"):
        if what == "speed":
            rel = speed["osmnx"] / speed["netconvert"] - 1.0
        else:
            rel = np.array([getattr(t, what)["osmnx"] / getattr(t, what)["netconvert"] - 1.0 for t in trips])
        out[f"{what}_median_abs"] = float(np.median(np.abs(rel)))
        out[f"{what}_worst_abs"] = float(np.max(np.abs(rel)))
        out[f"{what}_median"] = float(np.median(rel))
    return out
