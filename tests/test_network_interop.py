"""Interop with the geospatial ecosystem: osmnx on ``RoadNetwork.to_networkx()``, and snapping points to edges."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import osmnx as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from netfixtures import grid_network

from evroute.cli import main
from evroute.energy import VehicleProfile, network_energy_wh
from evroute.errors import ParameterError, UnknownEdgeError
from evroute.linegraph import build_line_graph
from evroute.network import RoadNetwork, load_network, nearest_edge, nearest_edges
from evroute.network.snap import _index
from evroute.routes import resolve_endpoint, resolve_route


@pytest.fixture(scope="module")
def city():
    return load_network("synthetic:300:1")


@pytest.fixture(scope="module")
def graph(city):
    return city.to_networkx()


def test_to_networkx_is_osmnx_compatible(city, graph):
    assert graph.graph["crs"] == "EPSG:4326"
    nodes, edges = ox.graph_to_gdfs(graph)
    assert len(edges) == city.n_edges and len(nodes) == graph.number_of_nodes()
    assert str(nodes.crs) == "EPSG:4326" and {"x", "y", "elevation", "street_count"} <= set(nodes.columns)
    e = edges.reset_index().set_index("key").loc[city.edge_ids]
    np.testing.assert_allclose(e["length"], city.length_m)
    np.testing.assert_allclose(e["energy_wh"], network_energy_wh(city, VehicleProfile.load("sumo_ev")))
    np.testing.assert_allclose(e["travel_time"], city.length_m / city.speed_mps)
    np.testing.assert_allclose(e["grade"], (city.z_to_m - city.z_from_m) / city.length_m)
    for i in (0, 7, city.n_edges - 1):  # geometry is the edge polyline, its ends at the junction positions
        np.testing.assert_allclose(np.asarray(e["geometry"].iloc[i].coords), city.geometry[i])
        u, v = e["u"].iloc[i], e["v"].iloc[i]
        assert (graph.nodes[u]["junction"], graph.nodes[v]["junction"]) == (city.from_node[i], city.to_node[i])
        assert graph.nodes[u]["elevation"] == pytest.approx(city.z_from_m[i])
        assert graph.nodes[v]["elevation"] == pytest.approx(city.z_to_m[i])
    # a heavier car spends more energy on every flat or uphill edge
    base = VehicleProfile.load("sumo_ev")
    heavy = city.to_networkx(vehicle=dataclasses.replace(base, mass_kg=2 * base.mass_kg))
    up = city.z_to_m >= city.z_from_m
    ours = np.array([d["energy_wh"] for *_, d in graph.edges(keys=True, data=True)])
    theirs = np.array([d["energy_wh"] for *_, d in heavy.edges(keys=True, data=True)])
    order = [d["index"] for *_, d in graph.edges(keys=True, data=True)]
    assert np.all(theirs[up[order]] > ours[up[order]])


def test_osmnx_plot_and_routing(graph):
    import matplotlib

    matplotlib.use("Agg")
    fig, ax = ox.plot_graph(graph, show=False, close=True, node_size=0)
    assert len(ax.collections) >= 1
    nodes = list(graph.nodes)
    path = ox.routing.shortest_path(graph, nodes[0], nodes[-1], weight="length")
    assert path[0] == nodes[0] and path[-1] == nodes[-1]
    n = ox.nearest_nodes(graph, graph.nodes[nodes[3]]["x"], graph.nodes[nodes[3]]["y"])
    assert n == nodes[3]


def test_nearest_edge_agrees_with_osmnx(city, graph):
    rng = np.random.default_rng(0)
    pts = np.concatenate(city.geometry)
    lon = rng.uniform(pts[:, 0].min(), pts[:, 0].max(), 40)
    lat = rng.uniform(pts[:, 1].min(), pts[:, 1].max(), 40)
    ours, d_ours = nearest_edges(city, lon, lat)
    proj = ox.project_graph(graph)
    from pyproj import Transformer

    x, y = Transformer.from_crs("EPSG:4326", proj.graph["crs"], always_xy=True).transform(lon, lat)
    theirs = ox.nearest_edges(proj, x, y)
    tree, tf = _index(city)
    from shapely import points

    px, py = tf.transform(lon, lat)
    for k, (_, _, key) in enumerate(theirs):
        j = city.index_of(key)
        d_theirs = tree.geometries[j].distance(points(px[k], py[k]))
        # same edge, or an edge exactly as far (the two directions of one street)
        assert ours[k] == j or d_theirs == pytest.approx(d_ours[k], abs=0.05)


def _two_edges() -> RoadNetwork:
    """A long straight edge and a short one: the long edge's midpoint is far from its own far end."""
    geometry = [np.array([[6.10, 49.60], [6.12, 49.60]]), np.array([[6.1215, 49.6015], [6.1225, 49.6015]])]
    return RoadNetwork(
        name="two",
        edge_ids=np.array(["long", "short"]),
        from_node=np.array(["a", "c"]),
        to_node=np.array(["b", "d"]),
        length_m=np.array([1447.0, 72.0]),
        speed_mps=np.array([10.0, 10.0]),
        z_from_m=np.array([0, 0]),
        z_to_m=np.array([0, 0]),
        geometry=geometry,
        turns=np.empty((0, 2)),
        meta={"crs": "EPSG:4326"},
    )


def test_nearest_edge_uses_true_geometry_not_midpoints():
    net = _two_edges()
    lon, lat = 6.1195, 49.6002  # ~22 m north of the long edge, ~1.3 km from its midpoint, ~160 m from 'short'
    mids = np.array([g.mean(axis=0) for g in net.geometry])
    assert np.argmin(((mids - [lon, lat]) * [np.cos(np.radians(lat)), 1]) ** 2 @ [1, 1]) == 1  # midpoints: wrong
    (e,), (d,) = nearest_edges(net, lon, lat)
    assert net.edge_ids[e] == "long" and d == pytest.approx(22.2, abs=0.3)  # 0.0002 deg of latitude
    assert nearest_edge(net, lon, lat) == 0


def test_max_snapping_distance(city):
    with pytest.raises(ParameterError, match=r"is 5\d\d km from the network .* maximum snapping distance is 250 m"):
        nearest_edge(city, 6.1 + 7.0, 49.6)  # ~500 km east
    far = nearest_edge(city, 6.1 + 7.0, 49.6, max_distance_m=1e6)
    assert 0 <= far < city.n_edges
    for lon, lat in ((float("nan"), float("nan")), (6.1, 95.0), (200.0, 49.6)):
        with pytest.raises(ParameterError, match="not a valid LON,LAT"):
            nearest_edge(city, lon, lat)
    with pytest.raises(ParameterError, match="must be > 0"):
        nearest_edge(city, 6.1, 49.6, max_distance_m=0)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.floats(0, 1), st.floats(0, 1), st.integers(0, 3))
def test_nearest_edges_is_the_brute_force_minimum(fx, fy, seed):
    net = grid_network(5, 4, seed=seed)
    pts = np.concatenate(net.geometry)
    lo, hi = pts.min(axis=0) - 0.002, pts.max(axis=0) + 0.002
    lon, lat = lo + (hi - lo) * [fx, fy]
    (e,), (d,) = nearest_edges(net, lon, lat)
    tree, tf = _index(net)
    from shapely import points

    p = points(*tf.transform(lon, lat))
    dist = np.array([g.distance(p) for g in tree.geometries])
    assert d == pytest.approx(dist.min(), abs=1e-6) and dist[e] == pytest.approx(dist.min(), abs=1e-6)


def test_resolve_endpoint_ids_points_and_errors(city):
    lg = build_line_graph(city)
    eid = str(lg.network.edge_ids[5])
    assert resolve_endpoint(lg, eid) == 5
    lon, lat = lg.network.geometry[5].mean(axis=0)
    j = resolve_endpoint(lg, f"{lon},{lat}")
    assert np.allclose(lg.network.geometry[j].mean(axis=0), [lon, lat])  # edge 5 or its reverse twin
    with pytest.raises(ParameterError, match="neither an edge id nor a point"):
        resolve_endpoint(lg, "a,b")
    with pytest.raises(UnknownEdgeError):
        resolve_endpoint(lg, "-271#3")
    with pytest.raises(ParameterError, match="km from the network"):
        resolve_route(lg, lg.network.name, None, f"{lon},{lat}", "0.0,0.0")
    r = resolve_route(lg, lg.network.name, None, f"{lon},{lat}", eid)
    assert r.goal == 5 and r.start_id == str(lg.network.edge_ids[r.start])


def test_cli_route_snaps_with_max_distance(city, capsys):
    lon, lat = city.geometry[5].mean(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["route", "--network", "synthetic:300:1", f"--from={lon},{lat}", f"--to={lon + 3},{lat}"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("evroute: error: point") and "km from the network" in err
    assert err.count("\n") == 1
    code = main(
        [
            "route",
            "--network",
            "synthetic:300:1",
            f"--from={lon},{lat}",
            f"--to={lon + 0.001},{lat}",
            "--max-snap-m",
            "1000",
        ]
    )
    assert code == 0 and "energy-optimal" in capsys.readouterr().out


def test_shortest_path_on_reduced_energy_is_the_minimum_energy_route():
    """``nx.shortest_path(G, o, d, weight="energy_reduced_wh")`` (issue 25: only the signed ``energy_wh`` existed)
    finds the minimum-energy route: compared with a brute force over every simple path of a hilly grid whose
    downhill edges have negative energy; the route's energy is its reduced sum plus ``k (z_d - z_o)``."""
    import networkx as nx

    net = grid_network(3, 3, seed=4, uturns=True)
    g = net.to_networkx()
    w = {(u, v, key): d for u, v, key, d in g.edges(keys=True, data=True)}
    assert min(d["energy_wh"] for d in w.values()) < 0  # Dijkstra on energy_wh would be wrong here
    assert min(d["energy_reduced_wh"] for d in w.values()) >= 0
    k = g.graph["potential_wh_per_m"]
    for o, d in [(0, 8), (8, 0), (2, 6), (3, 5)]:
        path = nx.shortest_path(g, o, d, weight="energy_reduced_wh")
        wh = nx.path_weight(g, path, "energy_wh")
        reduced = nx.path_weight(g, path, "energy_reduced_wh")
        assert reduced + k * (g.nodes[d]["elevation"] - g.nodes[o]["elevation"]) == pytest.approx(wh, rel=1e-9)
        best = min(nx.path_weight(g, p, "energy_wh") for p in nx.all_simple_paths(g, o, d))
        assert wh == pytest.approx(best, rel=1e-9, abs=1e-9)
