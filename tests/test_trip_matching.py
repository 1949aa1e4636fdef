"""Trip logs on a road network: GPX and SUMO FCD readers (with bad input), map matching on the hand-made SUMO grid
with known truth, the Viterbi recursion against brute force, charge readings against hand-computed windows, and
``evroute learn --network`` end to end."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import dijkstra

from evroute.errors import DataError, DataWarning
from evroute.linegraph import build_line_graph
from evroute.network.registry import load_network
from evroute.traces import Trace
from evroute.traces.formats import read_sumo_fcd, read_trace_gpx
from evroute.traces.mapmatch import MatchedTrace, MatchIndex, MatchOptions, _viterbi
from evroute.traces.observations import trace_readings

ROOT = Path(__file__).resolve().parents[1]
GRID = ROOT / "data" / "sumo-tiny" / "grid.net.xml"
LOGS = ROOT / "data" / "trip-log-sumo"


@pytest.fixture(scope="module")
def grid():
    lg = build_line_graph(load_network(GRID))
    return lg, MatchIndex(lg, MatchOptions(sigma_m=5.0))


# --- GPX ---------------------------------------------------------------------------------------------------------

GPX_HEAD = (
    '<?xml version="1.0"?>\n<gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1">\n<trk><trkseg>'
)


def _gpx(tmp_path: Path, points: list[str]) -> Path:
    p = tmp_path / "t.gpx"
    p.write_text(GPX_HEAD + "\n" + "\n".join(points) + "\n</trkseg></trk></gpx>\n")
    return p


def _pt(lat: float, t: str, soc: str | None = "80.0", ele: str = "5") -> str:
    ext = f"<extensions><soc>{soc}</soc></extensions>" if soc is not None else ""
    return f'<trkpt lat="{lat}" lon="10.0"><ele>{ele}</ele><time>{t}</time>{ext}</trkpt>'


def test_gpx_reads_points_and_derives_speed(tmp_path):
    p = _gpx(tmp_path, [_pt(50.0, "2026-01-05T08:00:00Z"), _pt(50.0001, "2026-01-05T08:00:02Z", "79.9")])
    tr = read_trace_gpx(p)
    np.testing.assert_array_equal(tr.t_s, [0, 2])
    np.testing.assert_array_equal(tr.soc_pct, [80.0, 79.9])
    # 0.0001 degree of latitude is 11.12 m (mean Earth radius 6371.0088 km); over 2 s
    np.testing.assert_allclose(tr.speed_mps, [11.1195 / 2] * 2, rtol=1e-4)


@pytest.mark.parametrize(
    ("points", "reason", "line"),
    [
        ([_pt(50.0, "2026-01-05T08:00:00Z"), _pt(50.0, "2026-01-05T08:00:00Z")], "field 'time': time does not", 5),
        ([_pt(50.0, "2026-01-05T08:00:00Z"), _pt(50.0, "2026-01-05T08:00:01Z", None)], "field 'soc': track point", 5),
        ([_pt(50.0, "2026-01-05T08:00:00Z", "x"), _pt(50.0, "2026-01-05T08:00:01Z")], "field 'soc': not a", 4),
        ([_pt(50.0, "2026-01-05T08:00:00Z", "120"), _pt(50, "2026-01-05T08:00:01Z")], "field 'soc': state", 4),
        (['<trkpt lat="50" lon="10"><ele>1</ele></trkpt>', _pt(50, "2026-01-05T08:00:01Z")], "field 'time'", 4),
    ],
)
def test_gpx_bad_point_is_dropped_naming_field_and_line(tmp_path, points, reason, line):
    """A bad track point is dropped, never the file (issue 35: one bad row must not abort a batch): with a third,
    good point the track keeps two points and one warning names the reason and the line; with only the two, the
    file keeps one point and is refused with one line that names the reason and its line."""
    ok = _pt(50.0002, "2026-01-05T08:00:09Z")
    with pytest.warns(DataWarning) as rec:
        tr = read_trace_gpx(_gpx(tmp_path, [*points, ok]))
    assert len(tr) == 2 and len(rec) == 1
    assert reason in str(rec[0].message) and f"(1, first at line {line})" in str(rec[0].message)
    with pytest.raises(DataError) as exc:
        read_trace_gpx(_gpx(tmp_path, points))
    text = str(exc.value)
    assert "needs at least 2 usable track points" in text and reason in text and f"line {line}" in text
    assert "\n" not in text


@pytest.mark.parametrize(
    ("points", "message"),
    [([_pt(50.0, "2026-01-05T08:00:00Z")], "needs at least 2 usable track points"), (["<trkpt lat="], "not a GPX")],
)
def test_gpx_bad_file_is_one_line_naming_it(tmp_path, points, message):
    with pytest.raises(DataError) as exc:
        read_trace_gpx(_gpx(tmp_path, points))
    assert message in str(exc.value) and "\n" not in str(exc.value) and "t.gpx" in str(exc.value)


# --- SUMO FCD + battery --------------------------------------------------------------------------------------------


def test_sumo_fcd_reader_gives_one_trace_per_vehicle_with_the_battery_charge():
    traces = read_sumo_fcd(LOGS / "fcd.xml", LOGS / "battery.xml")
    assert [t.name for t in traces] == [f"trip_{k}" for k in range(8)]
    for t in traces:
        assert np.all(np.diff(t.t_s) == 1.0) and t.soc_pct[0] == pytest.approx(50.0)  # starts half full, 1 s steps
        assert 49.99 < t.lat.min() and t.lat.max() < 50.01 and 9.99 < t.lon.min() and t.lon.max() < 10.01


def _fcd(tmp_path: Path, fcd_vehicle: str, battery_vehicle: str) -> tuple[Path, Path]:
    fcd = tmp_path / "fcd.xml"
    bat = tmp_path / "battery.xml"
    fcd.write_text(f'<fcd-export>\n<timestep time="0.00">\n{fcd_vehicle}\n</timestep>\n</fcd-export>\n')
    bat.write_text(f'<battery-export>\n<timestep time="0.00">\n{battery_vehicle}\n</timestep>\n</battery-export>\n')
    return fcd, bat


GOOD_FCD = '<vehicle id="v" x="10.0" y="50.0" speed="3.0"/>'
GOOD_BAT = '<vehicle id="v" actualBatteryCapacity="10" maximumBatteryCapacity="20"/>'


@pytest.mark.parametrize(
    ("fcd_vehicle", "battery_vehicle", "message"),
    [
        ('<vehicle id="v" x="1000.0" y="50.0" speed="3.0"/>', GOOD_BAT, "fcd.xml:3: field 'x'/'y': not geographic"),
        ('<vehicle id="v" x="10.0" y="50.0" speed="fast"/>', GOOD_BAT, "fcd.xml:3: field 'speed': not a number"),
        ('<vehicle id="v" x="10.0" y="50.0"/>', GOOD_BAT, "fcd.xml:3: field 'speed': missing"),
        (GOOD_FCD, '<vehicle id="v" actualBatteryCapacity="30" maximumBatteryCapacity="20"/>', "battery.xml:3: field"),
        (GOOD_FCD, '<vehicle id="v" maximumBatteryCapacity="20"/>', "battery.xml:3: field 'actualBatteryCapacity'"),
        (GOOD_FCD, "<vehicle id='v'", "battery.xml:4: not a SUMO battery output"),
        (GOOD_FCD, GOOD_BAT, "no vehicle with at least 2 samples"),
    ],
)
def test_sumo_bad_input_is_one_line_naming_file_line_and_field(tmp_path, fcd_vehicle, battery_vehicle, message):
    fcd, bat = _fcd(tmp_path, fcd_vehicle, battery_vehicle)
    with pytest.raises(DataError) as exc:
        read_sumo_fcd(fcd, bat)
    assert message in str(exc.value) and "\n" not in str(exc.value)


# --- map matching --------------------------------------------------------------------------------------------------


def test_distance_table_is_the_shortest_legal_distance(grid):
    lg, index = grid
    adj = lg.adjacency.tocoo()
    import scipy.sparse as sp

    w = sp.csr_matrix((index.length_m[adj.row], (adj.row, adj.col)), shape=adj.shape)
    full = dijkstra(w)
    a, b = np.meshgrid(np.arange(lg.n_nodes), np.arange(lg.n_nodes), indexing="ij")
    got = index.route_m(a.ravel(), b.ravel()).reshape(full.shape)
    within = full <= index.options.max_route_m
    np.testing.assert_allclose(got[within], full[within], rtol=1e-12)
    assert np.all(np.isinf(got[~within]))
    for s, t in [(0, 5), (3, 17), (10, 2)]:  # the predecessors give a legal path of that length
        path = [s, *index.between(s, t), t]
        assert all(lg.adjacency[u, v] for u, v in itertools.pairwise(path))
        assert index.length_m[path[:-1]].sum() == pytest.approx(full[s, t])


def _drive(index: MatchIndex, route: list[int], spacing_m: float, sigma_m: float, rng: np.random.Generator):
    pts = []
    for e in route:
        g = np.asarray(index.linegraph.network.geometry[e])
        xy = index.project(g[:, 1], g[:, 0])
        cum = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(xy, axis=0).T))])
        s = np.arange(spacing_m / 2, cum[-1], spacing_m)
        pts.append(np.column_stack([np.interp(s, cum, g[:, 1]), np.interp(s, cum, g[:, 0])]))
    p = np.concatenate(pts)
    lat = p[:, 0] + rng.normal(0, sigma_m, len(p)) / 111_319.49
    lon = p[:, 1] + rng.normal(0, sigma_m, len(p)) / (111_319.49 * np.cos(np.radians(p[:, 0])))
    return lat, lon


@pytest.mark.parametrize("spacing_m", [8.0, 40.0])
def test_matching_recovers_known_routes_on_the_grid(grid, spacing_m):
    """Random legal routes of 6 edges on the hand-made grid (100 m blocks, two-way streets), driven at 8 m (1 s at
    30 km/h) or 40 m per sample with 5 m GPS noise: the matched path is the route, edge for edge, direction included,
    except that the first or last sample, within the noise of the junction where the route starts or ends, may be
    matched to the edge before or after it."""
    lg, index = grid
    rng = np.random.default_rng(0)
    adj = lg.adjacency.tocsr()
    for _ in range(10):
        route = [int(rng.integers(lg.n_nodes))]
        while len(route) < 6:
            nxt = [int(v) for v in adj.indices[adj.indptr[route[-1]] : adj.indptr[route[-1] + 1]]]
            back = [v for v in nxt if lg.network.to_node[v] != lg.network.from_node[route[-1]]]  # no U-turns
            route.append(int(rng.choice(back or nxt)))
        lat, lon = _drive(index, route, spacing_m, 5.0, rng)
        m = index.match(lat, lon)
        assert m.pieces == 1
        path = m.path.tolist()
        i = path.index(route[0]) if route[0] in path else -1
        assert 0 <= i <= 1 and path[i : i + len(route)] == route and len(path) - i - len(route) <= 1, (route, path)


def test_viterbi_is_the_brute_force_optimum():
    rng = np.random.default_rng(3)
    for _ in range(20):
        t_n, k = 4, 3
        emis = rng.exponential(1.0, (t_n, k))
        trans = np.where(rng.random((t_n - 1, k, k)) < 0.2, np.inf, rng.exponential(1.0, (t_n - 1, k, k)))
        best, arg = np.inf, None
        for seq in itertools.product(range(k), repeat=t_n):
            c = emis[np.arange(t_n), seq].sum() + sum(trans[t, seq[t], seq[t + 1]] for t in range(t_n - 1))
            if c < best:
                best, arg = c, seq
        choice, cuts = _viterbi(emis, trans)
        if np.isfinite(best):
            assert not cuts and tuple(choice) == arg
        else:
            assert cuts  # no feasible sequence: the chain restarted somewhere


# --- charge readings -----------------------------------------------------------------------------------------------


def test_readings_of_a_hand_made_trace():
    """Path of edges 7, 3 (100 m each); samples at 10, 60, 110, 160 m; gauge 50.0, 50.0, 49.9, 49.9 % of 10 kWh:
    one change between 60 m and 110 m -> boundary at 85 m, level 49.95 %."""
    m = MatchedTrace(
        edge=np.array([7, 7, 3, 3]),
        offset_m=np.array([10.0, 60.0, 10.0, 60.0]),
        path=np.array([7, 3]),
        path_index=np.array([0, 0, 1, 1]),
        pieces=1,
    )
    tr = Trace(
        t_s=np.arange(4.0),
        speed_mps=np.full(4, 10.0),
        altitude_m=np.zeros(4),
        soc_pct=np.array([50.0, 50.0, 49.9, 49.9]),
        lat=np.zeros(4),
        lon=np.zeros(4),
    )
    length = np.zeros(10)
    length[[3, 7]] = 100.0
    r = trace_readings(tr, m, length, 10_000.0, 4.0, soc_step=0.1)
    np.testing.assert_allclose(r.positions_m, [10.0, 85.0, 160.0])
    np.testing.assert_allclose(r.y, [5.0, 5.0])  # 0.05 % of 10 kWh each side of the threshold
    assert r.edges.tolist() == [3, 7]
    np.testing.assert_allclose(r.a, [[0.0, 0.75], [0.6, 0.15]])  # edge 7: 10-85 m, 85-100 m; edge 3: 0-60 m
    q2 = 10.0**2 / 12  # 0.1 % of 10 kWh = 10 Wh step, uniform rounding
    rho = 10.0 / 150.0  # Wh per metre over the trace
    v_mid = (rho * 50.0) ** 2 / 12  # crossing somewhere in the 50 m between samples
    np.testing.assert_allclose(
        r.noise_cov, [[q2 + v_mid + 4 * 0.75, -v_mid], [-v_mid, v_mid + q2 + 4 * 0.75]], rtol=1e-6
    )


def test_readings_of_a_hand_made_trace_in_two_pieces():
    """Piece 0 drives edge 7 (samples at 10, 40, 70 m), piece 1 edge 3 (100 m on along the path: 110, 140, 170 m);
    the gauge reads 50.0, 49.9, 49.8 | 49.7, 49.6, 49.6 % of 10 kWh.  Boundaries: start 10 m (50.0), changes at
    25 m (49.95) and 55 m (49.85); the change across the break (49.8 -> 49.7) is no boundary; change at 125 m (49.65),
    end 170 m (49.6).  The window 55 m -> 125 m spans the break and is dropped; the three others are kept, and only
    the two in piece 0 share a boundary (a covariance)."""
    m = MatchedTrace(
        edge=np.array([7, 7, 7, 3, 3, 3]),
        offset_m=np.array([10.0, 40.0, 70.0, 10.0, 40.0, 70.0]),
        path=np.array([7, 3]),
        path_index=np.array([0, 0, 0, 1, 1, 1]),
        pieces=2,
        piece=np.array([0, 0, 0, 1, 1, 1]),
    )
    tr = Trace(
        t_s=np.arange(6.0),
        speed_mps=np.full(6, 10.0),
        altitude_m=np.zeros(6),
        soc_pct=np.array([50.0, 49.9, 49.8, 49.7, 49.6, 49.6]),
        lat=np.zeros(6),
        lon=np.zeros(6),
    )
    length = np.zeros(10)
    length[[3, 7]] = 100.0
    r = trace_readings(tr, m, length, 10_000.0, 4.0, soc_step=0.1)
    assert r.dropped == 1
    np.testing.assert_allclose(r.positions_m, [10.0, 25.0, 55.0, 125.0, 170.0])
    np.testing.assert_allclose(r.y, [5.0, 10.0, 5.0])  # 0.05 %, 0.1 %, 0.05 % of 10 kWh
    assert r.edges.tolist() == [3, 7]
    np.testing.assert_allclose(r.a, [[0.0, 0.15], [0.0, 0.30], [0.45, 0.0]])  # 10-25, 25-55 m on 7; 25-70 m on 3
    q2 = 10.0**2 / 12  # 0.1 % of 10 kWh = 10 Wh step, uniform rounding
    v = (40.0 / 160.0 * 30.0) ** 2 / 12  # 0.4 % = 40 Wh over the 160 m path; each crossing within 30 m
    np.testing.assert_allclose(
        r.noise_cov,
        [[q2 + v + 4 * 0.15, -v, 0.0], [-v, 2 * v + 4 * 0.30, 0.0], [0.0, 0.0, v + q2 + 4 * 0.45]],
        rtol=1e-6,
        atol=1e-6,
    )


def test_trace_with_a_gps_jump_is_matched_and_learned_in_two_pieces(grid, tmp_path):
    """Drive edges 12, 13 (east along the grid's south side) then jump to edges 4, 7 (west along the north side,
    then south): the closest candidates across the jump are more than 150 m of road apart, so with
    ``max_route_m = 150`` no transition is feasible and the trace is cut there.  Each piece is matched edge for edge;
    the gauge (hand-made) changes twice inside each piece and once across the jump: 2 windows kept in piece 0
    (start -> change 1 -> change 2), 1 dropped (change 2 -> change 4, across the break), 2 kept in piece 1."""
    lg, _ = grid
    index = MatchIndex(lg, MatchOptions(sigma_m=5.0, max_route_m=150.0))
    rng = np.random.default_rng(0)
    lat0, lon0 = _drive(index, [12, 13], 8.0, 0.0, rng)
    lat1, lon1 = _drive(index, [4, 7], 8.0, 0.0, rng)
    n0, n = len(lat0), len(lat0) + len(lat1)
    m = index.match(np.concatenate([lat0, lat1]), np.concatenate([lon0, lon1]))
    assert m.pieces == 2 and m.path.tolist() == [12, 13, 4, 7]
    assert m.piece is not None and m.piece.tolist() == [0] * n0 + [1] * (n - n0)
    soc = np.full(n, 50.0)
    for i in (8, n0 - 6, n0, n0 + 8, n - 6):  # changes at 8, n0 - 6 (piece 0), n0 (the jump), n0 + 8, n - 6
        soc[i:] -= 0.1
    tr = Trace(np.arange(n, dtype=float), np.zeros(n), np.zeros(n), soc, m.edge * 0.0, m.edge * 0.0)
    r = trace_readings(tr, m, index.length_m, 10_000.0, 4.0, soc_step=0.1)
    assert r.dropped == 1 and len(r.y) == 4
    np.testing.assert_allclose(r.y, [5.0, 10.0, 10.0, 5.0], atol=1e-9)
    rows = {int(e): r.a[:, j] for j, e in enumerate(r.edges)}
    assert set(rows) <= {12, 13, 4, 7}
    on0 = sum(rows.get(e, 0) for e in (12, 13))
    on1 = sum(rows.get(e, 0) for e in (4, 7))
    assert np.all(on0[2:] == 0) and np.all(on1[:2] == 0)  # each window on its own piece's edges only
    assert r.noise_cov[1, 2] == 0 and r.noise_cov[0, 1] < 0 and r.noise_cov[2, 3] < 0
    # through `evroute learn`'s loop (a CSV log): both pieces learned, the window across the jump dropped
    from evroute.energy import VehicleProfile
    from evroute.experiments.trip_learning import learn_logs
    from evroute.models.linear_obs_build import linear_model_from
    from evroute.models.store import prior_model
    from evroute.traces import write_trace_csv

    vehicle = VehicleProfile.load("sumo_ev")
    lat, lon = np.concatenate([lat0, lat1]), np.concatenate([lon0, lon1])
    log = write_trace_csv(Trace(tr.t_s, np.full(n, 8.0), np.zeros(n), soc, lat, lon), tmp_path / "jump.csv")
    model = linear_model_from(prior_model("bi", lg, vehicle))
    var0 = model.posterior().variance.copy()
    rep = learn_logs(model, index, [(log, None)], vehicle)
    # learn drops the departure's windows (those over the first path edge, 12: both of piece 0's, the second spans
    # 12 and 13; trace_readings' trip ends), so piece 1's two windows are learned
    got = (rep.traces, rep.traces_broken, rep.pieces, rep.windows_dropped, rep.windows_trimmed, rep.readings)
    assert got == (1, 1, 2, 1, 2, 2)
    shrunk = np.flatnonzero(model.posterior().variance < var0 - 1e-9).tolist()
    assert shrunk == [4, 7]  # BI: independent edges a priori, only the driven ones learn
    # unbroken: the same drive without the jump (both parts of one route) is one piece, nothing dropped
    whole = index.match(*_drive(index, [12, 13, 22, 23], 8.0, 0.0, rng))
    assert whole.pieces == 1 and whole.piece is not None and set(whole.piece.tolist()) == {0}


# --- evroute learn --network ---------------------------------------------------------------------------------------


def _learn(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evroute", "learn", *args], capture_output=True, text=True)


@pytest.mark.slow
def test_learn_on_sumo_logs_creates_then_resumes_a_model(tmp_path):
    from evroute.models.store import load_model, read_header

    logs = sorted(str(p) for p in LOGS.glob("trip_*.csv"))
    model = tmp_path / "m.npz"
    base = ["--network", str(GRID), "--model-file", str(model), "--vehicle", "sumo_ev", "--model", "bi"]
    res = _learn([*logs[:5], *base])
    assert res.returncode == 0, res.stderr
    assert read_header(model)["kind"] == "linear" and len(read_header(model)["meta"]["logs"]) == 5
    res = _learn([*logs, *base])  # the first five are skipped, the last three learned
    assert res.returncode == 0, res.stderr
    assert "learned 3 log(s) (5 already in the model)" in res.stdout
    m, _ = load_model(model, build_line_graph(load_network(GRID)))
    post = m.posterior()
    assert np.all(np.isfinite(post.mean)) and post.variance.min() >= 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model", "svgp"], "--model must be bi or gp-exact"),
        (["--save-every", "0"], "--save-every must be >= 1"),
        (["--soc-step", "-1"], "--soc-step must be > 0"),
        (["BAD.xml"], "1 SUMO FCD file(s) (.xml) but 0 --battery"),
        (["BAD.txt"], "unknown format '.txt'"),
        (["BROKEN"], "broken.csv: missing column(s) 'speed_kmh'"),
    ],
)
def test_learn_network_bad_input_writes_nothing(tmp_path, extra, message):
    logs = [str(LOGS / "trip_0.csv")]
    if extra == ["BROKEN"]:
        bad = tmp_path / "broken.csv"
        text = (LOGS / "trip_1.csv").read_text().splitlines()
        # not a log of any format (a bad row is dropped instead; a log without a charge column is read: issue 35)
        text[0] = text[0].replace("speed_kmh", "v")
        bad.write_text("\n".join(text) + "\n")
        logs, extra = [*logs, str(bad)], []
    elif extra[0].startswith("BAD"):
        shutil.copy(LOGS / "trip_1.csv", tmp_path / extra[0])
        logs, extra = [*logs, str(tmp_path / extra[0])], []
    model = tmp_path / "m.npz"
    res = _learn([*logs, "--network", str(GRID), "--model-file", str(model), *extra])
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and message in res.stderr and "Traceback" not in res.stderr
    assert not model.exists()


def test_has_candidate_is_the_full_candidate_search(grid):
    """:meth:`MatchIndex.has_candidate` (one nearest-piece query, the full search only near the radius) says the same
    as the full candidate search for 3,000 points on, near and far from the grid's roads (uniform over the grid's
    extent and 300 m beyond, so every case -- surely in, surely out, in between -- occurs)."""
    rng = np.random.default_rng(3)
    _, index = grid
    lo, hi = index.piece_a.min(axis=0) - 300.0, index.piece_a.max(axis=0) + 300.0
    xy = rng.uniform(lo, hi, (3000, 2))
    full = index.candidates(xy)[0][:, 0] >= 0
    assert 0.1 < full.mean() < 0.9  # both outcomes occur
    np.testing.assert_array_equal(index.has_candidate(xy), full)


def _boundaries_loop(s, r, mech, q, rho, scale, min_window_m, *, first, last):
    """The boundaries of a piece by the plain loop over its charge changes (the reference for the vectorized one)."""
    q_wh2 = (q * scale) ** 2 / 12.0
    pos, lvl, var, mec = ([float(s[0])], [float(r[0])], [q_wh2], [float(mech[0])]) if first else ([], [], [], [])
    for i in np.flatnonzero(np.abs(np.diff(r)) > 1e-9) + 1:
        p = 0.5 * (s[i - 1] + s[i])
        dm = mech[i] - mech[i - 1]
        v = (rho * (s[i] - s[i - 1])) ** 2 / 12.0 + (max(abs(r[i] - r[i - 1]) - q, 0.0) * scale) ** 2 / 12
        if pos and p - pos[-1] < min_window_m:
            continue
        pos.append(float(p))
        lvl.append(0.5 * float(r[i - 1] + r[i]))
        var.append(float(v + dm * dm / 12.0))
        mec.append(0.5 * float(mech[i - 1] + mech[i]))
    if last:
        if len(pos) > (1 if first else 0) and s[-1] - pos[-1] < min_window_m:
            pos.pop(), lvl.pop(), var.pop(), mec.pop()
        pos.append(float(s[-1]))
        lvl.append(float(r[-1]))
        var.append(q_wh2)
        mec.append(float(mech[-1]))
    return pos, lvl, var, mec


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 80),
    step=st.sampled_from([0.5, 2.5, 5.0, 10.0]),
    first=st.booleans(),
    last=st.booleans(),
)
def test_piece_boundaries_are_the_loops(seed, n, step, first, last):
    """The vectorized boundaries of a piece (:func:`evroute.traces.observations._piece_boundaries`) are the plain
    loop's, exactly, on random pieces: positions with steps around the 5 m merge distance (ties included: steps that
    are multiples of 2.5 m), gauges that move by 0-2 steps per sample."""
    from evroute.traces.observations import _piece_boundaries

    rng = np.random.default_rng(seed)
    s = np.cumsum(rng.choice([0.0, step, 2 * step], size=n))
    r = 80.0 - 0.1 * np.cumsum(rng.integers(0, 3, n))
    mech = rng.normal(0, 5, n)
    args = (s, r, mech, 0.1, 0.05, 350.0, 5.0)
    assert _piece_boundaries(*args, first=first, last=last) == _boundaries_loop(*args, first=first, last=last)
