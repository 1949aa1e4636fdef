"""Open generated HTML maps in headless Chromium: they render with no console error, also with no network.

Needs a Chromium (Debian package ``chromium``, installed by ``.ci/run``; or ``$EVROUTE_CHROMIUM``) and the
``playwright`` Python package, which drives that system browser (no browser download).  Outside CI the tests
are skipped when either is missing; in CI (``$CI`` set) a missing browser is a failure.
"""

from __future__ import annotations

import io
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from evroute.maps import exploration_map_html

#: every test here starts a browser / SUMO or builds a large fixture (seconds of CPU each): the slow tier
pytestmark = pytest.mark.slow

TILE_HOST = "tile.openstreetmap.org"
VIEWPORT = {"width": 900, "height": 650}


def _chromium() -> str | None:
    for name in (os.environ.get("EVROUTE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="module")
def browser():
    exe = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if exe is None or sync_playwright is None:
        why = "no chromium on PATH (apt-get install chromium)" if exe is None else "playwright is not installed"
        if os.environ.get("CI"):
            pytest.fail(f"the headless-browser map test must run in CI: {why}")
        pytest.skip(why)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def _tile_png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (256, 256), (236, 228, 214)).save(buf, "PNG")
    return buf.getvalue()


def _open(browser, path: Path, points: list[list[float]], *, tiles: str) -> dict:
    """Load ``path`` (``points``: lon/lat of start and goal) in a new page.

    ``tiles="serve"`` answers the basemap's tile requests with a plain PNG, ``"offline"`` fails every request.

    Returns console messages, page errors, the http(s) URLs requested, map facts measured in the page and
    the screenshot as an ``(H, W, 3)`` array.
    """
    from PIL import Image

    page = browser.new_page(viewport=VIEWPORT)
    out: dict = {"console": [], "errors": [], "requests": []}
    page.on("console", lambda m: out["console"].append((m.type, m.text, m.location.get("url", ""))))
    page.on("pageerror", lambda e: out["errors"].append(str(e)))
    png = _tile_png()

    def handle(route):
        url = route.request.url
        out["requests"].append(url)
        if tiles == "serve" and TILE_HOST in url:
            route.fulfill(status=200, content_type="image/png", body=png)
        else:
            route.abort("internetdisconnected")

    page.route(lambda url: not url.startswith(("file:", "data:", "about:")), handle)
    page.goto(path.resolve().as_uri(), wait_until="load")
    found = re.search(r"var (map_[0-9a-f]+) = L\.map", path.read_text())
    assert found, "no Leaflet map in the page"
    name = found.group(1)
    page.wait_for_function(f"() => typeof {name} !== 'undefined' && {name}._loaded")
    page.wait_for_timeout(300)
    out["facts"] = page.evaluate(
        """([name, pts]) => {
            const m = window[name];
            const legend = document.getElementById('evroute-legend').getBoundingClientRect();
            const box = m.getContainer().getBoundingClientRect();
            const px = pts.map(p => m.latLngToContainerPoint(L.latLng(p[1], p[0])));
            return {leaflet: L.version, paths: document.querySelectorAll('path.leaflet-interactive').length,
                    inView: pts.map(p => m.getBounds().contains(L.latLng(p[1], p[0]))),
                    underLegend: px.map(q => q.x + box.left >= legend.left && q.x + box.left <= legend.right
                                             && q.y + box.top >= legend.top && q.y + box.top <= legend.bottom),
                    legendVisible: legend.width > 100 && legend.height > 80 && legend.right <= box.right
                                   && legend.bottom <= box.bottom,
                    zoom: m.getZoom()};
        }""",
        [name, points],
    )
    out["shot"] = np.asarray(Image.open(io.BytesIO(page.screenshot())).convert("RGB"))
    page.close()
    return out


def _render(
    browser, tmp_path: Path, lg, counts, start: int, goal: int, optimal, *, tiles: str, name: str = "m.html"
) -> dict:
    """Write the exploration map of one route and open it (see :func:`_open`)."""
    p = exploration_map_html(lg, counts, tmp_path / name, start=start, goal=goal, optimal=optimal, title="test")
    return _open(browser, p, [lg.network.geometry[e].mean(axis=0).tolist() for e in (start, goal)], tiles=tiles)


def _pixels(shot: np.ndarray, colour: str, tol: float = 40.0) -> int:
    """Number of screenshot pixels within ``tol`` (RGB distance) of ``colour`` (``#rrggbb``)."""
    rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=np.float64)
    return int((np.linalg.norm(shot.astype(np.float64) - rgb, axis=-1) < tol).sum())


def _assert_rendered(res: dict, colours: tuple[str, ...] = ("#f0f921",)) -> None:
    """Non-blank screenshot showing ``colours`` (default: the top of the plasma map, the most driven edges)."""
    shot = res["shot"].astype(np.float64)
    assert shot.std() > 10, "blank screenshot"
    for c in colours:
        assert _pixels(res["shot"], c) > 50, f"colour {c} not on screen"
    f = res["facts"]
    assert f["leaflet"] == "1.9.3" and f["paths"] >= 4 and f["legendVisible"]
    assert all(f["inView"]), f"start/goal off-screen: {f}"
    assert not any(f["underLegend"]), f"start/goal hidden under the legend: {f}"
    assert res["errors"] == []


@pytest.fixture(scope="module")
def city():
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.oracle import RouteOracle
    from evroute.routes import resolve_route

    lg = build_line_graph(load_network("synthetic:600:2"))
    out = {}
    for name in ("A", "B"):
        r = resolve_route(lg, "synthetic", name)
        route = RouteOracle(lg).shortest_route(lg.network.length_m, r.start, r.goal).edges
        counts = np.zeros(lg.n_nodes)
        counts[route] = 2
        counts[route[: len(route) // 2]] = 30
        out[name] = (r, route, counts)
    return lg, out


@pytest.mark.slow
@pytest.mark.parametrize("route", ["A", "B"])
def test_map_renders_with_basemap(browser, tmp_path, city, route):
    lg, routes = city
    r, path, counts = routes[route]
    res = _render(browser, tmp_path, lg, counts, r.start, r.goal, path, tiles="serve")
    _assert_rendered(res)
    assert res["console"] == [] or all(t not in ("error", "warning") for t, *_ in res["console"]), res["console"]
    assert res["requests"] and all(TILE_HOST in u for u in res["requests"])  # the keyless OSM basemap, nothing else


def test_map_renders_offline(browser, tmp_path, city):
    lg, routes = city
    r, path, counts = routes["A"]
    res = _render(browser, tmp_path, lg, counts, r.start, r.goal, path, tiles="offline")
    _assert_rendered(res)
    # offline only the basemap tiles fail; every script and style is inline
    assert all(TILE_HOST in u for u in res["requests"])
    assert [c for c in res["console"] if c[0] == "error" and TILE_HOST not in c[2]] == []


@pytest.mark.slow
@pytest.mark.realdata
def test_luxembourg_map_shows_start_and_goal(browser, tmp_path):
    from evroute.network.registry import dataset_path

    try:
        dataset_path("luxembourg")
    except Exception as exc:  # noqa: BLE001 - DataError: no data here
        pytest.skip(str(exc))
    from evroute.experiments.runner import load_linegraph
    from evroute.oracle import RouteOracle
    from evroute.routes import resolve_route

    lg = load_linegraph("luxembourg")
    for name in ("A", "B"):
        r = resolve_route(lg, "luxembourg", name)
        route = RouteOracle(lg).shortest_route(lg.network.length_m, r.start, r.goal).edges
        counts = np.zeros(lg.n_nodes)
        counts[route] = 5
        res = _render(browser, tmp_path, lg, counts, r.start, r.goal, route, tiles="offline", name=f"lux{name}.html")
        _assert_rendered(res)


def test_route_map_from_cli_renders(browser, tmp_path, city, capsys):
    from evroute.cli import main

    lg, routes = city
    r, *_ = routes["B"]
    out = tmp_path / "routes.html"
    argv = ["route", "--network", "synthetic:600:2", "--from", r.start_id, "--to", r.goal_id, "--html", str(out)]
    assert main(argv) == 0 and f"map: {out}" in capsys.readouterr().out
    points = [lg.network.geometry[e].mean(axis=0).tolist() for e in (r.start, r.goal)]
    res = _open(browser, out, points, tiles="offline")
    from evroute.maps import ROUTE_COLOURS

    _assert_rendered(res, colours=ROUTE_COLOURS[:3])  # energy-optimal, shortest and fastest all visible
    assert [c for c in res["console"] if c[0] == "error" and TILE_HOST not in c[2]] == []


def test_reach_map_from_cli_renders(browser, tmp_path, city, capsys):
    """``evroute reach --html``: the reachable segments (plasma colours) and the start render offline."""
    from evroute.cli import main

    lg, routes = city
    r, *_ = routes["A"]
    out = tmp_path / "reach.html"
    argv = ["reach", "--network", "synthetic:600:2", "--from", r.start_id, "--charge", "0.5%", "--reserve", "0%"]
    assert main([*argv, "--html", str(out)]) == 0 and f"map: {out}" in capsys.readouterr().out
    points = [lg.network.geometry[r.start].mean(axis=0).tolist()]
    res = _open(browser, out, points, tiles="offline")
    shot = res["shot"].astype(np.float64)
    assert shot.std() > 10, "blank screenshot"
    f = res["facts"]
    assert f["leaflet"] == "1.9.3" and f["paths"] >= 3 and f["legendVisible"] and all(f["inView"])
    assert not any(f["underLegend"]) and res["errors"] == []
    from evroute.maps import _colour

    assert _pixels(res["shot"], _colour(0.0), tol=60) + _pixels(res["shot"], _colour(0.5), tol=60) > 50


def test_overlapping_routes_stay_visible_and_legend_values_do_not_wrap(browser, tmp_path, city):
    """Issue 25: an energy-optimal route equal to the shortest was hidden under it, and legend text wrapped inside
    a value ("1.73" / "km").  The screenshot shows both colours along the shared route, and in the page no value
    span of the legend is broken over two lines."""
    from evroute.maps import ROUTE_COLOURS, route_map_html

    lg, routes = city
    r, path, _ = routes["A"]
    _, other, _ = routes["B"]
    labels = {
        "energy-optimal": "energy-optimal: 12.34 km, 23.4 min, 1234 Wh",
        "shortest": "shortest: 12.34 km, 23.4 min, 1234 Wh",
        "fastest": "fastest: 10.01 km, 20.1 min, 1500 Wh",
    }
    out = route_map_html(
        lg,
        {"energy-optimal": path, "shortest": path, "fastest": other},
        tmp_path / "same.html",
        start=r.start,
        goal=r.goal,
        labels=labels,
        title="route A",
    )
    points = [lg.network.geometry[e].mean(axis=0).tolist() for e in (r.start, r.goal)]
    res = _open(browser, out, points, tiles="offline")
    _assert_rendered(res, colours=ROUTE_COLOURS[:3])
    # (tolerance 60: the solid route is drawn at opacity 0.8, ~50 from its pure colour over the blank background)
    green, blue = _pixels(res["shot"], ROUTE_COLOURS[0], 60), _pixels(res["shot"], ROUTE_COLOURS[1], 60)
    # the shared route: both its colours on screen in comparable amounts (dashed on top: alternating segments; a
    # route drawn solid under a narrower one would show only its two thin margins)
    assert min(green, blue) > 300 and green > 0.5 * blue, (green, blue)
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(out.resolve().as_uri(), wait_until="load")
    spans = page.evaluate(
        "() => [...document.querySelectorAll('#evroute-legend .evroute-value')]"
        ".map(s => [s.textContent, s.getClientRects().length])"
    )
    legend = page.evaluate(
        "() => { const l = document.getElementById('evroute-legend').getBoundingClientRect();"
        " return [...document.querySelectorAll('#evroute-legend .evroute-value')]"
        ".every(s => s.getBoundingClientRect().right <= l.right + 0.5); }"
    )
    page.close()
    assert len(spans) >= 9 and all(n == 1 for _, n in spans), spans  # every value on one line
    assert legend  # and inside the legend box
    assert any("same route as energy-optimal" in t for t, _ in spans)


def test_charging_plan_map_from_cli_renders(browser, tmp_path, city, capsys):
    """``evroute plan --html`` (issue 36): the legs, the charging stop (green marker), start and destination and
    the charge-profile chart render offline with no page error; start and destination are in view, not under the
    panel."""
    import csv

    from evroute.cli import main
    from evroute.routes import edge_midpoints

    lg, routes = city
    r, *_ = routes["A"]
    mid = edge_midpoints(lg.network.geometry)
    e = np.random.default_rng(0).choice(lg.n_nodes, 8, replace=False)
    chargers = tmp_path / "ch.csv"
    with chargers.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "lon", "lat", "power_kw"])
        w.writerows([[f"c{i}", mid[k, 0], mid[k, 1] + 1e-4, 50] for i, k in enumerate(e)])
    out = tmp_path / "plan.html"
    argv = [
        "plan",
        "--network",
        "synthetic:600:2",
        "--from",
        r.start_id,
        "--to",
        r.goal_id,
        "--chargers",
        str(chargers),
        "--charge",
        "1.1%",
        "--reserve",
        "1%",
        "--html",
        str(out),
    ]
    assert main(argv) == 0 and f"map: {out}" in capsys.readouterr().out
    points = [lg.network.geometry[x].mean(axis=0).tolist() for x in (r.start, r.goal)]
    res = _open(browser, out, points, tiles="offline")
    f = res["facts"]
    assert res["shot"].astype(np.float64).std() > 10 and f["legendVisible"] and all(f["inView"])
    assert not any(f["underLegend"]) and res["errors"] == []
    assert f["paths"] >= 4  # at least two legs, one stop, start and destination
    assert _pixels(res["shot"], "#41ab5d") > 20  # the stop marker
    assert _pixels(res["shot"], "#08519c") > 20  # the profile's mean line
    assert [c for c in res["console"] if c[0] == "error" and TILE_HOST not in c[2]] == []
