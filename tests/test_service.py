"""The routing API (``evroute serve``): answers against closed forms and the command line, bad requests as 422
naming the field (never a 500), online observations against the BI closed form, a model-file swap, metrics, the
committed OpenAPI schema, and a query path without ``scipy.stats``."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from servefixtures import NET, free_port, learned, small_lg, state

from evroute.driver.answers import BatteryState
from evroute.energy import VehicleProfile, edge_prior
from evroute.models.store import save_model
from evroute.service.app import create_app, openapi_schema
from evroute.service.state import ServiceState, load_state

warnings.filterwarnings("ignore", message=".*httpx2.*")  # starlette's test client still works with httpx
from fastapi.testclient import TestClient  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OPENAPI = ROOT / "docs" / "api" / "openapi.json"


def _client(s: ServiceState) -> TestClient:
    return TestClient(create_app(s))


def _ids(s: ServiceState, names: list[str]) -> np.ndarray:
    return np.array([s.lg.network.index_of(e) for e in names])


@pytest.mark.parametrize("kind", ["bi", "gp-exact"])
def test_route_answers_match_the_closed_forms(kind: str) -> None:
    gp = {"method": "dense", "learn_hyper": False} if kind == "gp-exact" else {}
    s = state(kind, **gp)
    c = _client(s)
    ids = s.lg.network.edge_ids
    body = {"origin": ids[3], "destination": ids[120], "charge": 0.4, "reserve": 0.1, "delta": 0.1}
    r = c.post("/route", json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    assert [a["route"] for a in out["routes"]] == ["energy-optimal", "shortest", "fastest", "risk-aware"]
    assert out["model_version"] == 1 and out["model_kind"] == kind
    belief, cap = s.current.ctx.belief, s.vehicle.battery_capacity_wh
    net = s.lg.network
    for a in out["routes"]:
        e = _ids(s, a["edges"])
        assert e[0] == 3 and e[-1] == 120 and a["n_edges"] == len(e)
        mean = belief.mean[e].sum()
        cov = belief.cov(e) if kind == "gp-exact" else np.diag(belief.var[e])
        sd = math.sqrt(cov.sum() + belief.noise_var[e].sum())
        # float64 sums of ~20 terms: relative 1e-9 is far above their rounding, far below any modelling change
        assert a["energy_wh"] == pytest.approx(mean, rel=1e-9)
        assert a["trip_sd_wh"] == pytest.approx(sd, rel=1e-9)
        assert a["length_m"] == pytest.approx(net.length_m[e].sum(), rel=1e-12)
        # expected times of the default prior's speed profiles (top speed, junction stops), as `evroute route`
        assert a["time_s"] == pytest.approx(edge_prior(net, s.vehicle).time_s[e].sum(), rel=1e-12)
        soc = 0.4 - mean / cap
        assert a["arrival_soc"] == pytest.approx(soc, rel=1e-9)
        lo, hi = a["arrival_soc_90"]
        assert [lo, hi] == pytest.approx([soc - norm.ppf(0.95) * sd / cap, soc + norm.ppf(0.95) * sd / cap], rel=1e-9)
        assert a["p_arrival_above_reserve"] == pytest.approx(norm.cdf(((0.4 - 0.1) * cap - mean) / sd), abs=1e-12)
    means = {a["route"]: a["energy_wh"] for a in out["routes"]}
    assert means["energy-optimal"] <= min(means.values()) + 1e-9  # the least posterior mean of all routes shown
    lengths = {a["route"]: a["length_m"] for a in out["routes"]}
    assert lengths["shortest"] <= min(lengths.values()) + 1e-9


def test_api_answers_equal_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    """``evroute route --json`` and ``POST /route`` run the same query (evroute.driver.query): identical numbers."""
    from evroute.cli import main

    s = load_state(NET)
    ids = s.lg.network.edge_ids
    a, b = str(ids[5]), str(ids[200])
    assert (
        main(["route", "--network", NET, "--from", a, "--to", b, "--charge", "60%", "--reserve", "15%", "--json"]) == 0
    )
    cli = json.loads(capsys.readouterr().out)
    api = _client(s).post("/route", json={"origin": a, "destination": b, "charge": 0.6, "reserve": 0.15}).json()
    assert [r["route"] for r in api["routes"]] == [r["route"] for r in cli["routes"]]
    for x, y in zip(api["routes"], cli["routes"], strict=True):
        assert x == {**y, "arrival_soc_90": x["arrival_soc_90"]} and x["arrival_soc_90"] == y["arrival_soc_90"]
    assert api["risk_aware"] == cli["risk_aware"]


def _window_state() -> ServiceState:
    lg = small_lg()
    v = VehicleProfile(min_soc=0.1, max_soc=0.9)
    return ServiceState(lg, v, learned("bi", lg), None)


E0, E1, FAR = "e0", "e50", "10.0,10.0"
BAD = [
    ("/route", {"origin": E0}, "destination"),
    ("/route", {"origin": "", "destination": E1}, "origin"),
    ("/route", {"origin": 5, "destination": E1}, "origin"),
    ("/route", {"origin": "no-such-edge", "destination": E1}, "origin"),
    ("/route", {"origin": E0, "destination": FAR}, "destination"),
    ("/route", {"origin": E0, "destination": "1,2,3"}, "destination"),
    ("/route", {"origin": E0, "destination": E1, "charge": 1.5}, "charge"),
    ("/route", {"origin": E0, "destination": E1, "charge": -0.1}, "charge"),
    ("/route", {"origin": E0, "destination": E1, "charge": "80%"}, "charge"),
    ("/route", {"origin": E0, "destination": E1, "charge": True}, "charge"),
    ("/route", {"origin": E0, "destination": E1, "charge": 0.95}, "charge"),  # above the vehicle's max_soc 0.9
    ("/route", {"origin": E0, "destination": E1, "charge": 0.5, "reserve": 0.05}, "reserve"),  # below min_soc 0.1
    ("/route", {"origin": E0, "destination": E1, "delta": 0.5}, "delta"),
    ("/route", {"origin": E0, "destination": E1, "delta": 0}, "delta"),
    ("/route", {"origin": E0, "destination": E1, "routes": ["scenic"]}, "routes"),
    ("/route", {"origin": E0, "destination": E1, "routes": []}, "routes"),
    ("/route", {"origin": E0, "destination": E1, "max_paths": 3.5}, "max_paths"),
    ("/route", {"origin": E0, "destination": E1, "max_paths": 0}, "max_paths"),
    ("/route", {"origin": E0, "destination": E1, "max_snap_m": -1}, "max_snap_m"),
    ("/route", {"origin": E0, "destination": E1, "geometry": "yes"}, "geometry"),
    ("/route", {"origin": E0, "destination": E1, "speed": 3}, "speed"),
    ("/reach", {"origin": E0}, "charge"),
    ("/reach", {"origin": "nope", "charge": 0.5}, "origin"),
    ("/reach", {"origin": E0, "charge": 0.5, "delta": 0.7}, "delta"),
    ("/energy", {}, "body"),
    ("/energy", {"edges": [E0], "trace": {"lat": [0, 0], "lon": [0, 0]}}, "body"),
    ("/energy", {"edges": []}, "edges"),
    ("/energy", {"edges": [E0, E1]}, "edges"),  # no legal turn between them
    ("/energy", {"edges": ["nope"]}, "edges"),
    ("/energy", {"trace": {"lat": [0.0, 0.1], "lon": [0.0]}}, "trace"),
    ("/energy", {"trace": {"lat": [95.0, 0.1], "lon": [0.0, 0.1]}}, "trace"),
    ("/energy", {"trace": {"lat": [40.0, 40.001], "lon": [-100.0, -100.001]}}, "trace"),  # far from every road
    ("/observe", {"edges": [E0], "energies_wh": [1.0, 2.0]}, "body"),
    ("/observe", {"edges": ["nope"], "energies_wh": [1.0]}, "edges"),
    ("/observe", {"edges": [E0], "energies_wh": ["x"]}, "energies_wh"),
    ("/observe", {"edges": [E0], "energies_wh": [1e9]}, "body"),
]


@pytest.mark.parametrize(("path", "body", "field"), BAD, ids=[f"{p}-{f}-{i}" for i, (p, _, f) in enumerate(BAD)])
def test_bad_requests_are_422_naming_the_field(path: str, body: dict, field: str) -> None:
    c = _bad_client()
    r = c.post(path, json=body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    loc = detail[0]["loc"]
    assert loc[0] == "body" and (field == "body" or field in loc), detail
    assert detail[0]["msg"]


def test_non_json_and_non_finite_bodies_are_422() -> None:
    c = _bad_client()
    r = c.post("/route", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422
    nan = b'{"origin": "e0", "destination": "e50", "charge": NaN}'
    r = c.post("/route", content=nan, headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "charge"]
    for path, raw, loc in [
        ("/observe", b'{"edges": ["e0"], "energies_wh": [NaN]}', ["body", "energies_wh", 0]),
        ("/observe", b'{"edges": ["e0"], "energies_wh": [1e400]}', ["body", "energies_wh", 0]),
        ("/energy", b'{"trace": {"lat": [Infinity, 1], "lon": [1, 2]}}', ["body", "trace", "lat", 0]),
        ("/reach", b'{"origin": NaN, "charge": 0.5}', ["body", "origin"]),
    ]:
        r = c.post(path, content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == loc, r.text
    assert c.get("/route").status_code == 405 and c.get("/nothing").status_code == 404


_CLIENT: list[TestClient] = []


def _bad_client() -> TestClient:
    if not _CLIENT:
        _CLIENT.append(_client(_window_state()))
    return _CLIENT[0]


JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["e0", "e50", "e7", "6.0,45.0", "0,0"]),
    st.lists(st.sampled_from(["e0", "e2", "energy-optimal", 1.0]), max_size=3),
)
FIELDS = ["origin", "destination", "charge", "reserve", "delta", "routes", "max_snap_m", "max_paths", "edges"]


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.sampled_from(["/route", "/reach", "/energy", "/observe"]),
    body=st.dictionaries(st.sampled_from([*FIELDS, "energies_wh", "trace"]), JSON_VALUES, max_size=5),
)
def test_random_requests_never_give_a_server_error(path: str, body: dict) -> None:
    body = {"origin": "e0", "destination": "e50", **body} if path in ("/route", "/reach") else body
    r = _bad_client().post(path, json=body)
    assert r.status_code in (200, 422), (path, body, r.text)


def test_energy_of_a_path_and_of_its_gps_trace_equal_the_route_answer() -> None:
    s = state("bi")
    c = _client(s)
    ids = s.lg.network.edge_ids
    route = c.post("/route", json={"origin": ids[10], "destination": ids[150], "routes": ["energy-optimal"]}).json()
    ans = route["routes"][0]
    out = c.post("/energy", json={"edges": ans["edges"], "geometry": True}).json()
    for key in ("energy_wh", "trip_sd_wh", "length_m", "time_s", "arrival_soc", "p_arrival_above_reserve"):
        assert out["answer"][key] == ans[key]
    # the trace a car leaves driving that route: points every ~10 m along its polyline, with 2 m of GPS noise
    poly = np.asarray(out["answer"]["geometry"])
    seg = np.hypot(*(np.diff(poly, axis=0) * [111_319.49 * np.cos(np.radians(poly[0, 1])), 111_319.49]).T)
    pts = [poly[0]]
    for a, b, d in zip(poly[:-1], poly[1:], seg, strict=True):
        n = max(int(d // 10), 1)
        pts += [a + (b - a) * (j + 1) / n for j in range(n)]
    xy = np.asarray(pts) + np.random.default_rng(0).normal(0, 2e-5, (len(pts), 2))
    tr = c.post("/energy", json={"trace": {"lat": xy[:, 1].tolist(), "lon": xy[:, 0].tolist()}}).json()
    assert tr["match"]["pieces"] == 1 and tr["match"]["matched"] == len(xy)
    assert tr["answer"]["edges"] == ans["edges"]
    assert tr["answer"]["energy_wh"] == ans["energy_wh"]


def test_observe_updates_the_bi_posterior_in_closed_form() -> None:
    s = state("bi")
    c = _client(s)
    m: Any = s.current.model
    e, name = 42, str(s.lg.network.edge_ids[42])
    m0, v0, s2 = m.posterior().mean[e], m.posterior().var[e], float(np.broadcast_to(m.noise_var, (s.lg.n_nodes,))[e])
    ys = [m0 + 30.0, m0 + 50.0, m0 + 10.0]
    r = c.post("/observe", json={"edges": [name] * 3, "energies_wh": ys})
    assert r.status_code == 200 and r.json()["model_version"] == 2
    assert r.json()["observations"] == 3
    # Gaussian conjugate update of the current posterior N(m0, v0) with 3 observations of noise s2
    post = (m0 / v0 + sum(ys) / s2) / (1 / v0 + 3 / s2)
    out = c.post("/energy", json={"edges": [name]}).json()
    assert out["model_version"] == 2
    floor = s.current.ctx.belief.mean[e] - post  # >= 0: the belief floors means at the elevation potential
    assert out["answer"]["energy_wh"] == pytest.approx(max(post, post + floor), rel=1e-12)
    assert out["answer"]["energy_sd_wh"] == pytest.approx(math.sqrt(1 / (1 / v0 + 3 / s2)), rel=1e-12)
    assert m.posterior().mean[e] == m0  # the published version 1 was never modified
    assert c.get("/model").json()["version"] == 2


def test_model_file_swap_publishes_the_new_file(tmp_path: Path) -> None:
    lg = load_state(NET).lg
    path = tmp_path / "model.npz"
    first = learned("bi", lg, seed=1)
    save_model(path, first, lg, vehicle=VehicleProfile())
    s = load_state(NET, model_path=str(path))
    c = _client(s)
    ids = lg.network.edge_ids
    body = {"origin": str(ids[0]), "destination": str(ids[30]), "routes": ["shortest"]}
    before = c.post("/route", json=body).json()
    second = learned("bi", lg, seed=2, n_obs=400)
    save_model(path, second, lg, vehicle=VehicleProfile())
    info = c.post("/model/reload").json()
    assert info["version"] == 2 and info["observations"] == 400
    after = c.post("/route", json=body).json()
    assert before["model_version"] == 1 and after["model_version"] == 2
    e = _ids(s, after["routes"][0]["edges"])
    assert after["routes"][0]["energy_wh"] == pytest.approx(s.current.ctx.belief.mean[e].sum(), rel=1e-12)
    assert after["routes"][0]["energy_wh"] != before["routes"][0]["energy_wh"]
    path.write_bytes(b"not a model")
    bad = c.post("/model/reload")
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "model"]
    assert c.get("/model").json()["version"] == 2  # a failed reload keeps the served model


def test_metrics_count_requests_errors_and_latencies() -> None:
    c = _client(state("bi"))
    for _ in range(5):
        assert c.post("/route", json={"origin": "e0", "destination": "e50"}).status_code == 200
    assert c.post("/route", json={"origin": "e0"}).status_code == 422
    c.get("/health")
    m = c.get("/metrics").json()
    r = m["endpoints"]["/route"]
    assert r["requests"] == 6 and r["errors"] == 1 and r["status"] == {"200": 5, "422": 1}
    assert 0 < r["p50_ms"] <= r["p95_ms"] <= r["p99_ms"]
    assert m["endpoints"]["/health"]["requests"] == 1 and m["rss_mb"] > 10


def test_committed_openapi_schema_is_current() -> None:
    """docs/api/openapi.json is generated by ``python scripts/docs/openapi.py``; rerun it after changing the API."""
    assert json.loads(OPENAPI.read_text()) == json.loads(json.dumps(openapi_schema()))
    paths = openapi_schema()["paths"]
    assert {"/route", "/reach", "/energy", "/observe", "/model", "/model/reload", "/health", "/metrics"} <= set(paths)


@pytest.mark.slow
def test_the_query_path_imports_no_scipy_stats() -> None:
    """A normal CDF must not cost the 0.6 s import of scipy.stats (issue 37): route, reach and energy queries on BI
    and exact-GP models leave it unimported."""
    code = (
        "import sys, warnings\nwarnings.simplefilter('ignore')\n"
        "from servefixtures import state\nfrom evroute.service.app import create_app\n"
        "from fastapi.testclient import TestClient\n"
        "for kind, gp in (('bi', {}), ('gp-exact', {'method': 'dense', 'learn_hyper': False})):\n"
        "    c = TestClient(create_app(state(kind, **gp)))\n"
        "    assert c.post('/route', json={'origin': 'e0', 'destination': 'e50', 'charge': 0.5}).status_code == 200\n"
        "    assert c.post('/reach', json={'origin': 'e0', 'charge': 0.2}).status_code == 200\n"
        "    assert c.post('/energy', json={'edges': ['e0']}).status_code == 200\n"
        "print(sorted(m for m in sys.modules if m.startswith('scipy.stats')))\n"
    )
    env = {"PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}", "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    import os

    env = {**os.environ, **env}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_serve_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from evroute.cli import main

    assert main(["serve", "--network", NET, "--port", "70000"]) == 2
    bad = tmp_path / "m.npz"
    bad.write_text("x")
    assert main(["serve", "--network", NET, "--model-file", str(bad)]) == 2
    assert main(["serve", "--network", "atlantis"]) == 2
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        assert main(["serve", "--network", NET, "--port", port]) == 2
    assert main(["serve", "--network", NET, "--host", "no-such-host.invalid"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 5 and all(x.startswith("evroute: error: ") for x in lines), lines
    assert "--port" in lines[0] and "m.npz" in lines[1] and f"127.0.0.1:{port}" in lines[3]
    assert "no-such-host.invalid" in lines[4]


@pytest.mark.slow
def test_serve_command_starts_and_answers() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "evroute", "serve", "--network", NET, "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline, health = time.monotonic() + 120, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json()
                break
            except httpx.TransportError:
                time.sleep(0.2)
        assert health is not None and health["status"] == "ok" and health["network"] == NET
        r = httpx.post(f"http://127.0.0.1:{port}/route", json={"origin": "e0", "destination": "e50"}, timeout=30)
        assert r.status_code == 200 and len(r.json()["routes"]) == 3  # no charge: no risk-aware route
    finally:
        proc.terminate()
        err = proc.communicate(timeout=30)[1]
    assert "loaded in" in err


@pytest.mark.parametrize("kind", ["bi", "gp-exact"])
def test_energy_optimal_route_is_the_path_listings_first(kind: str) -> None:
    """route_query's energy-optimal route (one Dijkstra on the cached reduced costs) is the first route of
    PathEnumerator on the posterior means, for random pairs (learned means partly below the potential)."""
    from evroute.driver.paths import PathEnumerator
    from evroute.driver.query import route_query

    gp = {"method": "dense", "learn_hyper": False} if kind == "gp-exact" else {}
    s = state(kind, **gp)
    ctx = s.current.ctx
    battery = BatteryState.from_vehicle(s.vehicle, 0.5, None)
    rng = np.random.default_rng(11)
    for a, b in rng.integers(0, s.lg.n_nodes, (25, 2)).tolist():
        got = route_query(ctx, a, b, battery, kinds=("energy-optimal",)).routes["energy-optimal"]
        want = next(PathEnumerator(s.lg, ctx.belief.mean, ctx.h0, exact=False).paths(a, b))[1]
        assert np.array_equal(got, want)


def test_asgi_factory_serves_the_network_the_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    from evroute.errors import ParameterError
    from evroute.service import asgi

    monkeypatch.delenv("EVROUTE_SERVE_NETWORK", raising=False)
    with pytest.raises(ParameterError, match="EVROUTE_SERVE_NETWORK"):
        asgi.app()
    monkeypatch.setenv("EVROUTE_SERVE_NETWORK", NET)
    monkeypatch.setenv("EVROUTE_SERVE_VEHICLE", "sumo_ev")
    c = TestClient(asgi.app())
    assert c.get("/health").json()["network"] == NET and c.get("/model").json()["source"] == "physics prior"


def test_benchmark_page_is_generated_from_its_data(tmp_path: Path) -> None:
    """docs/benchmark_serve.md is what ``studies/bench/benchmark_serve.py --from-data`` writes from the committed
    docs/data/benchmark_serve.json, byte for byte (a number edited by hand fails)."""
    data = "docs/data/benchmark_serve.json"
    out = tmp_path / "page.md"
    cmd = [sys.executable, "-m", "studies.bench.benchmark_serve", "--from-data", "--out", data, "--doc", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == (ROOT / "docs" / "benchmark_serve.md").read_text()
