"""The map page of ``evroute serve`` in headless Chromium, with every non-local request refused (offline): two clicks
draw the routes and the reach area, and the numbers shown are the API's for the same request.

Needs a Chromium (Debian package ``chromium`` or ``$EVROUTE_CHROMIUM``) and ``playwright`` (drives that system
browser; no browser download); skipped outside CI when either is missing, as ``tests/test_maps_browser.py``.
"""

from __future__ import annotations

import httpx
import numpy as np
import pytest
from servefixtures import running, state
from test_maps_browser import browser  # noqa: F401 -- the shared headless-Chromium fixture

from evroute.service.app import create_app

#: every test here starts a browser / SUMO or builds a large fixture (seconds of CPU each): the slow tier
pytestmark = pytest.mark.slow


def test_two_clicks_draw_routes_whose_numbers_match_the_api(browser) -> None:  # noqa: F811
    s = state("bi")
    net = s.lg.network
    a, b = net.geometry[3], net.geometry[120]  # click near the middle of two road segments
    pa, pb = a[len(a) // 2] * 0.5 + a[(len(a) - 1) // 2] * 0.5, b[len(b) // 2] * 0.5 + b[(len(b) - 1) // 2] * 0.5
    with running(create_app(s)) as url:
        page = browser.new_page(viewport={"width": 1200, "height": 760})
        errors: list[str] = []
        outside: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

        def refuse(route) -> None:
            outside.append(route.request.url)
            route.abort("internetdisconnected")

        page.route(lambda u: not u.startswith(url), refuse)
        page.goto(url + "/", wait_until="load")
        page.wait_for_function("() => window.evroute && window.evroute.ready")
        page.fill("#charge", "35")
        page.fill("#reserve", "10")
        for p in (pa, pb):
            ll = [float(p[1]), float(p[0])]
            xy = page.evaluate("([lat, lon]) => evroute.map.latLngToContainerPoint([lat, lon])", ll)
            box = page.locator("#map").bounding_box()
            page.mouse.click(box["x"] + xy["x"], box["y"] + xy["y"])
            page.wait_for_timeout(100)
        page.wait_for_function("() => evroute.last && evroute.last.response && evroute.reach", timeout=60_000)
        last = page.evaluate("() => evroute.last")
        rows = page.evaluate(
            """() => [...document.querySelectorAll('#results tr.route')].map(tr => ({
                   route: tr.dataset.route, energy: Number(tr.dataset.energyWh), sd: Number(tr.dataset.tripSdWh),
                   soc: Number(tr.dataset.arrivalSoc), p: Number(tr.dataset.pReserve),
                   text: tr.querySelector('.energy').textContent, chosen: tr.classList.contains('chosen')}))"""
        )
        n_layers = page.evaluate("() => evroute.routeLayers")
        svg_paths = page.evaluate("() => document.querySelectorAll('#map svg path.leaflet-interactive').length")
        reach_note = page.text_content("#reachNote")
        shot = np.frombuffer(page.screenshot(), dtype=np.uint8)
        page.close()
        req = last["request"]
        api = httpx.post(f"{url}/route", json=req, timeout=60).json()
        reach = httpx.post(
            f"{url}/reach", json={"origin": req["origin"], "charge": 0.35, "reserve": 0.1, "delta": req["delta"]}
        ).json()
    assert not errors, errors
    assert not outside, outside  # the page needs nothing but the server (offline Leaflet assets)
    assert req["charge"] == pytest.approx(0.35) and req["reserve"] == pytest.approx(0.1)
    for end, e in (("start", 3), ("goal", 120)):  # the clicked segment, in one of its two directions
        snapped = net.geometry[net.index_of(api[end])]
        assert {tuple(x) for x in snapped.tolist()} == {tuple(x) for x in net.geometry[e].tolist()}
    assert [r["route"] for r in rows] == ["energy-optimal", "shortest", "fastest", "risk-aware"]
    assert n_layers == 4 and svg_paths >= 4  # one polyline per route drawn on the map
    for row, ans in zip(rows, api["routes"], strict=True):
        assert row["energy"] == ans["energy_wh"] and row["sd"] == ans["trip_sd_wh"]
        assert row["soc"] == ans["arrival_soc"] and row["p"] == ans["p_arrival_above_reserve"]
        assert row["text"] == f"{ans['energy_wh']:.1f} ± {ans['trip_sd_wh']:.1f}"
    assert [r["route"] for r in rows if r["chosen"]] == ["risk-aware"]
    assert f"{reach['n_reachable']} of {reach['n_edges']}" in reach_note
    assert shot.size > 0
