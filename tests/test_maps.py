"""Exploration maps: counts from round records, folium HTML (self-contained, fitted, with legend) and static PNG."""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources

import numpy as np
import pytest

from evroute.experiments import ExperimentConfig, build_problem, load_rounds, run_experiment
from evroute.maps import (
    drive_counts,
    exploration_map_html,
    exploration_map_png,
    external_assets,
    leaflet_inline,
)

LEAFLET = resources.files("evroute") / "resources" / "leaflet"


@pytest.mark.slow
def test_maps(tmp_path):
    cfg = ExperimentConfig(network="synthetic:150:1", route="A", model="bi", policy="ts", horizon=5)
    run_experiment(cfg, tmp_path / "run", progress=False)
    rounds = load_rounds(tmp_path / "run")
    pb = build_problem(cfg, 0)
    counts = drive_counts(pb.linegraph, rounds)
    assert counts.sum() == rounds["route_edges"].sum()
    assert counts[pb.route.start] == 5 and counts[pb.route.goal] == 5
    kw = dict(start=pb.route.start, goal=pb.route.goal, optimal=[pb.route.start, pb.route.goal], title="t")
    html = exploration_map_html(pb.linegraph, counts, tmp_path / "m.html", **kw).read_text()
    assert "driven 5x" in html and "optimal route" in html
    png = exploration_map_png(pb.linegraph, counts, tmp_path / "m.png", **kw)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_shipped_leaflet_matches_manifest_and_folium():
    manifest = json.loads((LEAFLET / "MANIFEST.json").read_text())
    for rel, digest in manifest["files"].items():
        assert hashlib.sha256((LEAFLET / rel).read_bytes()).hexdigest() == digest, rel
    assert "LICENSE" in manifest["files"] and "BSD" in (LEAFLET / "LICENSE").read_text()
    # the inlined Leaflet is the version folium writes its map code for
    import folium

    urls = [url for name, url in folium.Map.default_js if name == "leaflet"]
    assert urls and f"leaflet@{manifest['version']}/" in urls[0]
    css, js = leaflet_inline()
    assert f'version="{manifest["version"]}"' in js and "sourceMappingURL" not in js
    assert "url(images/" not in css and css.count("url(data:image/png;base64,") == 3


def test_external_assets_detects_cdn_links():
    page = (
        '<script src="https://cdn.example/x.js"></script><link rel="stylesheet" href="//cdn.example/y.css"/>'
        '<script>var a = "https://tile.openstreetmap.org/{z}/{x}/{y}.png";</script><a href="https://osm.org">'
    )
    found = external_assets(page)
    assert len(found) == 2 and "x.js" in found[0] and "y.css" in found[1]


@pytest.fixture(scope="module")
def lux_like():
    """A synthetic city with a long corner-to-corner route driven at varying counts."""
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.oracle import RouteOracle
    from evroute.routes import resolve_route

    lg = build_line_graph(load_network("synthetic:300:1"))
    r = resolve_route(lg, "synthetic", "B")
    route = RouteOracle(lg).shortest_route(lg.network.length_m, r.start, r.goal).edges
    counts = np.zeros(lg.n_nodes)
    counts[route] = 3
    counts[route[:4]] = 40
    return lg, r, route, counts


def test_map_is_self_contained_with_keyless_basemap_bounds_and_legend(tmp_path, lux_like):
    lg, r, route, counts = lux_like
    html = exploration_map_html(
        lg, counts, tmp_path / "m.html", start=r.start, goal=r.goal, optimal=route, title="route B"
    ).read_text()
    assert external_assets(html) == []
    assert not re.search(r"<(script|link)[^>]*(src|href)=", html)  # nothing linked at all, not even local files
    assert "https://tile.openstreetmap.org/{z}/{x}/{y}.png" in html and "cartodb" not in html.lower()
    assert "evroute-legend" in html and "times driven" in html and ">40</span>" in html
    # fitted to the data: the bounds passed to fitBounds enclose the start and goal edges
    m = re.search(r"fitBounds\(\s*\[\[([-\d.]+),\s*([-\d.]+)\],\s*\[([-\d.]+),\s*([-\d.]+)\]\]", html)
    assert m, "no fitBounds call"
    south, west, north, east = map(float, m.groups())
    for e in (r.start, r.goal):
        lon, lat = lg.network.geometry[e].mean(axis=0)
        assert south <= lat <= north and west <= lon <= east
    no_tiles = exploration_map_html(lg, counts, tmp_path / "n.html", start=r.start, goal=r.goal, tiles=None)
    assert "tile.openstreetmap.org" not in no_tiles.read_text()
    with pytest.raises(ValueError, match="unknown basemap"):
        exploration_map_html(lg, counts, tmp_path / "x.html", start=r.start, goal=r.goal, tiles="cartodbpositron")


def test_map_of_a_network_without_lonlat_is_a_clean_error(tmp_path):
    from netfixtures import grid_network

    from evroute.errors import DataError
    from evroute.linegraph import build_line_graph

    net = grid_network()
    net.meta["crs"] = "local-metres"  # what load_sumo_net sets for a net without geo-projection
    lg = build_line_graph(net)
    with pytest.raises(DataError, match="no lon/lat geometry"):
        exploration_map_html(lg, np.ones(lg.n_nodes), tmp_path / "m.html", start=0, goal=1)
    assert not (tmp_path / "m.html").exists()
