"""The sumo-live environment on a tiny hand-made road: energy conservation against SUMO's own battery output,
determinism, the environment contract (truth and optimum from the replay), failed trips, bad input, CLI run."""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from evroute.cli import main
from evroute.energy import VehicleProfile
from evroute.environments import make_environment
from evroute.environments.sumo_live import SumoLiveEnvironment, parse_params
from evroute.errors import DataError, ParameterError
from evroute.linegraph import build_line_graph
from evroute.network.sumo import load_sumo_net
from evroute.sumo.binaries import SumoError, run_sumo_program, sumo_binary
from evroute.sumo.live import LiveSimulation

#: every test here starts a browser / SUMO or builds a large fixture (seconds of CPU each): the slow tier
pytestmark = pytest.mark.slow

EDGES = [
    ("a", "n0", "n1", 500),
    ("b", "n1", "n2", 500),
    ("c", "n2", "n3", 1000),
    ("d", "n3", "n4", 500),
    ("e", "n4", "n5", 500),
]
BLOCK_UNTIL = 600  # s: a background car stops on c from its arrival (~65 s) to 600 s


@pytest.fixture(scope="module")
def road(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two-way straight road a b c d e (c: 1000 m, +20 m), a stopped car blocking c until 600 s, light traffic."""
    d = tmp_path_factory.mktemp("live")
    xs = np.cumsum([0] + [length for *_, length in EDGES])
    zs = [0, 0, 0, 20, 20, 20]
    nodes = "".join(f'<node id="n{i}" x="{x}" y="0" z="{z}"/>' for i, (x, z) in enumerate(zip(xs, zs, strict=True)))
    (d / "n.nod.xml").write_text(f"<nodes>{nodes}</nodes>")
    body = "".join(
        f'<edge id="{e}" from="{u}" to="{v}" speed="13.89"/><edge id="-{e}" from="{v}" to="{u}" speed="13.89"/>'
        for e, u, v, _ in EDGES
    )
    (d / "n.edg.xml").write_text(f"<edges>{body}</edges>")
    run_sumo_program(
        [sumo_binary("netconvert"), "-n", d / "n.nod.xml", "-e", d / "n.edg.xml", "-o", d / "road.net.xml"],
        "netconvert",
    )
    cars = "".join(
        f'<vehicle id="v{k}" depart="{600 + 200 * k}"><route edges="a b c d e"/></vehicle>' for k in range(10)
    )
    (d / "demand.rou.xml").write_text(
        '<routes><vehicle id="blocker" depart="0"><route edges="b c d e"/>'
        f'<stop lane="c_0" endPos="400" until="{BLOCK_UNTIL}"/></vehicle>{cars}</routes>'
    )
    return d


def _params(road: Path, **extra: object) -> dict[str, object]:
    return {
        "route_file": str(road / "demand.rou.xml"),
        "hours": [0, 1],
        "rounds_per_day": 12,
        "min_samples": 3,
        **extra,
    }


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _env(road: Path, cache: Path, **extra: object) -> SumoLiveEnvironment:
    lg = build_line_graph(load_sumo_net(road / "road.net.xml"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVROUTE_CACHE", str(cache))
        env = make_environment(lg, "sumo-live", _params(road, **extra))
    assert isinstance(env, SumoLiveEnvironment)
    return env


@pytest.fixture(scope="module")
def env(road: Path, cache: Path) -> SumoLiveEnvironment:
    return _env(road, cache)


def _idx(env: SumoLiveEnvironment, *ids: str) -> np.ndarray:
    pos = {e: i for i, e in enumerate(env.linegraph.network.edge_ids.tolist())}
    return np.array([pos[e] for e in ids], dtype=np.int64)


def test_live_trip_energy_sums_to_sumo_battery_output(env: SumoLiveEnvironment, tmp_path: Path) -> None:
    """Per-edge energies of one trip (route b c d, driven as a [b c d] e) sum to the total SUMO's battery output
    writes for the EV; the route edges' values are their complete traversals; uphill c costs most."""
    out = tmp_path / "battery.xml"
    s = env.sim
    sim = LiveSimulation(
        s.net_file,
        s.route_files,
        s.snapshots,
        s.snapshot_times_s,
        step_length=1.0,
        sumo_args=["--battery-output", str(out), "--battery-output.precision", "6"],
    )
    trip = sim.drive(["a", "b", "c", "d", "e"], 3, speed_factor=1.0)  # 900 s: the blocker is gone
    assert trip.ok and trip.depart_s == 900.0 and trip.insert_s >= 900.0
    rows = [
        v for ts in ET.parse(out).getroot().iter("timestep") for v in ts.iter("vehicle") if v.get("id") == "evroute_ev"
    ]
    sumo_total = float(rows[-1].attrib["totalEnergyConsumed"]) - float(rows[-1].attrib["totalEnergyRegenerated"])
    assert sum(trip.edge_energy_wh.values()) == pytest.approx(trip.battery_wh, abs=1e-9)
    assert trip.battery_wh == pytest.approx(sumo_total, abs=0.01)  # charge level read at 0.01 Wh
    assert set(trip.edge_energy_wh) == {"a", "b", "c", "d", "e"}
    np.testing.assert_allclose(trip.route_energy_wh, [trip.edge_energy_wh[e] for e in "bcd"], atol=1e-9)
    b, c, d = trip.route_energy_wh
    assert c > b > 0 and c > d > 0  # 20 m up on c: ~ +54 Wh of potential energy
    # reduced energies: the potential m g dz = 99.7 Wh taken out of c; b, c, d are driven at about the speed limit,
    # so the kinetic terms are a few Wh (the driver's speed noise)
    assert np.all(trip.route_reduced_wh > 0)
    assert trip.route_reduced_wh == pytest.approx(trip.route_energy_wh - [0.0, 1830 * 9.81 * 20 / 3600, 0.0], abs=10)
    assert trip.route_travel_s.sum() == pytest.approx(2000 / 13.89, rel=0.25)
    sim.close()


def test_observe_is_deterministic_and_follows_the_clock(road: Path, cache: Path, env: SumoLiveEnvironment) -> None:
    route = _idx(env, "b", "c", "d")
    env.advance(4)
    y = env.observe(route, np.random.default_rng(7))
    assert env.last_trip.depart_s == 900.0 and env.last_trip.edges == ["a", "b", "c", "d", "e"]
    np.testing.assert_array_equal(y, env.last_trip.route_reduced_wh)
    other = _env(road, cache)  # another environment (fresh simulation), same round and seed: same energies
    other.advance(4)
    np.testing.assert_array_equal(other.observe(route, np.random.default_rng(7)), y)
    other.advance(16)  # the clock wraps every rounds_per_day = 12 rounds: round 16 is round 4's time
    np.testing.assert_array_equal(other.observe(route, np.random.default_rng(7)), y)
    assert other.last_trip.depart_s == 900.0
    other.advance(5)
    z = other.observe(route, np.random.default_rng(7))
    assert other.last_trip.depart_s == 1200.0 and not np.array_equal(z, y)  # another time, other traffic
    other.observe(route, np.random.default_rng(7))  # a learner not calling advance(): the clock still moves on
    assert other.t == 6 and other.last_trip.depart_s == 1500.0


def test_environment_contract_truth_and_optimum_are_the_replays(env: SumoLiveEnvironment) -> None:
    ref = env.reference
    assert ref.name == "sumo-replay" and env.name == "sumo-live" and env.static
    np.testing.assert_array_equal(env.truth(), ref.true_mean_wh)
    np.testing.assert_array_equal(env.prior_mean_wh, ref.prior_mean_wh)
    assert env.noise_var == ref.noise_var and env.prior_var == ref.prior_var
    start, goal = _idx(env, "b", "d")
    opt = env.optimal_route(int(start), int(goal))
    assert env.linegraph.network.edge_ids[opt.edges].tolist() == ["b", "c", "d"]
    assert opt.cost == pytest.approx(env.expected_energy(opt.edges))
    assert not env.advance(2)  # no time-of-day bins: the truth never changes
    d = env.describe()
    assert d["name"] == "sumo-live" and d["regret_reference"] == "sumo-replay means" and d["trips"] >= 1
    assert env.sim.end_edges("b", "d") == ("a", "e")  # straight on, not the U-turns -b / -d
    assert env.sim.end_edges("a", "-a") == ("-a", "a")  # only the U-turns at the road's end n0


def test_blocked_trip_is_teleported_then_driven_again_one_clock_step_later(env: SumoLiveEnvironment) -> None:
    """Round 1 departs at 0 s: the EV queues behind the stopped car for more than SUMO's 300 s teleport time, is
    teleported, and the route is driven again from the next saved state (300 s), which arrives."""
    before_trips, before_failed = env.trips, env.failed_trips
    env.advance(1)
    y = env.observe(_idx(env, "b", "c", "d"), np.random.default_rng(0))
    assert np.all(np.isfinite(y)) and env.last_trip.ok and env.last_trip.depart_s == 300.0
    assert env.trips - before_trips == 2 and env.failed_trips - before_failed == 1
    assert "teleported" in env.failures[-1] and "depart 0 s" in env.failures[-1]


def test_trip_not_arriving_in_time_fails_clearly(road: Path, cache: Path) -> None:
    env = _env(road, cache, max_trip_s=60.0, max_attempts=2)  # 2000 m at 13.89 m/s takes 144 s
    env.advance(4)
    with pytest.raises(SumoError, match=r"failed 2 trips .*not arrived 60 s after departure at 900 s"):
        env.observe(_idx(env, "b", "c", "d"), np.random.default_rng(0))
    assert env.failed_trips == 2


def test_bad_input(env: SumoLiveEnvironment) -> None:
    assert parse_params({"max_trip_s": 100}).max_trip_s == 100.0
    for bad in (
        {"max_trip_s": 0},
        {"max_attempts": 0},
        {"nope": 1},
        {"hours": "0-1", "rounds_per_day": 5000},
        {"model": "HBEFA"},
    ):
        with pytest.raises(ParameterError):
            parse_params(bad)
    with pytest.raises(DataError):
        parse_params({"route_file": "/no/such.rou.xml"})
    with pytest.raises(ParameterError, match="consecutive"):
        env.observe(_idx(env, "b", "d"), np.random.default_rng(0))
    with pytest.raises(ParameterError, match="no connection"):
        env.sim.drive(["a", "c", "d"], 0)
    with pytest.raises(ParameterError, match="out of range"):
        env.sim.drive(["a", "b", "c"], 12)


def _rounds(path: Path) -> list[tuple[str, str, str]]:
    with open(path) as f:
        return [(r["route"], r["observed_wh"], r["regret_wh"]) for r in csv.DictReader(f)]


def test_cli_run_is_deterministic(road: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVROUTE_CACHE", str(cache))
    args = [
        "run",
        "--network",
        str(road / "road.net.xml"),
        "--from",
        "b",
        "--to",
        "d",
        "--env",
        "sumo-live",
        "--env-param",
        f"route_file={road / 'demand.rou.xml'}",
        "--env-param",
        "hours=0-1",
        "--env-param",
        "rounds_per_day=12",
        "--env-param",
        "min_samples=3",
        "--horizon",
        "3",
        "--seeds",
        "1",
        "--no-progress",
    ]
    assert main([*args, "--out", str(tmp_path / "r1")]) == 0
    assert main([*args, "--out", str(tmp_path / "r2")]) == 0
    r1, r2 = _rounds(tmp_path / "r1" / "seed_0" / "rounds.csv"), _rounds(tmp_path / "r2" / "seed_0" / "rounds.csv")
    assert len(r1) == 3 and r1 == r2
    assert all(float(o) > 0 for _, o, _ in r1)


def test_cli_errors_are_one_line(
    road: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "run",
                "--network",
                "synthetic:150:0",
                "--env",
                "sumo-live",
                "--horizon",
                "2",
                "--out",
                str(tmp_path / "x"),
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("evroute: error: ") and "SUMO" in err and err.count("\n") == 1
    from evroute.sumo import binaries

    monkeypatch.setattr(binaries, "sumo_wheel_home", lambda: None)
    monkeypatch.delenv("SUMO_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("EVROUTE_CACHE", str(tmp_path / "cache"))
    assert (
        main(
            [
                "run",
                "--network",
                str(road / "road.net.xml"),
                "--from",
                "b",
                "--to",
                "d",
                "--env",
                "sumo-live",
                "--env-param",
                f"route_file={road / 'demand.rou.xml'}",
                "--horizon",
                "2",
                "--out",
                str(tmp_path / "y"),
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("evroute: error: SUMO program 'sumo' not found") and err.count("\n") == 1
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_vehicle_profile_drives_the_ev(road: Path, cache: Path) -> None:
    """A heavier vehicle profile: the live EV (same state, route, speed factor) draws more energy uphill."""
    lg = build_line_graph(load_sumo_net(road / "road.net.xml"))
    heavy = VehicleProfile(mass_kg=2 * VehicleProfile().mass_kg)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVROUTE_CACHE", str(cache))
        light_env = make_environment(lg, "sumo-live", _params(road))
        heavy_env = make_environment(lg, "sumo-live", _params(road), vehicle=heavy)
    assert isinstance(light_env, SumoLiveEnvironment) and isinstance(heavy_env, SumoLiveEnvironment)
    light = light_env.sim.drive(["a", "b", "c", "d", "e"], 3, speed_factor=1.0)
    heavy_trip = heavy_env.sim.drive(["a", "b", "c", "d", "e"], 3, speed_factor=1.0)
    assert heavy_trip.route_energy_wh[1] > 1.5 * light.route_energy_wh[1]


def test_sumo_failing_to_start_is_one_line_error(env: SumoLiveEnvironment, tmp_path: Path) -> None:
    bad = tmp_path / "state_bad.xml.gz"
    bad.write_bytes(b"not a state")
    s = env.sim
    sim = LiveSimulation(s.net_file, s.route_files, [bad], [0.0], step_length=1.0)
    with pytest.raises(SumoError, match="failed to start from state_bad.xml.gz") as exc:
        sim.drive(["a", "b", "c", "d", "e"], 0)
    assert "\n" not in str(exc.value)
    trip = env.sim.drive(["a", "b", "c", "d", "e"], 3, speed_factor=1.0)  # SUMO usable again after the failure
    assert trip.ok


def test_time_of_day_bins_follow_the_replay(road: Path, cache: Path) -> None:
    """With two half-hour bins the truth is the replay's bin mean of the clock's bin, and the EV departs in it."""
    env = _env(road, cache, bin_hours=0.5)
    assert not env.static
    np.testing.assert_array_equal(env.truth(), env.reference.bin_means[0])
    assert env.advance(7)  # round 7 departs at 1800 s: the second bin
    np.testing.assert_array_equal(env.truth(), env.reference.bin_means[1])
    env.observe(_idx(env, "b", "c", "d"), np.random.default_rng(0))
    assert env.last_trip.depart_s == 1800.0


def test_bandit_study_trip_row_is_the_simulations_trip(env: SumoLiveEnvironment) -> None:
    """The live scoring of the SUMO bandit study's final routes (:func:`studies.sumo_bandit.runner.drive`): a
    row sums the route's complete traversals of the same trip (a trip from a saved state is deterministic); a
    teleported trip (0 s: behind the stopped car) is a failed row with NaN energies, not an error."""
    import math

    from studies.sumo_bandit.runner import drive, route_key

    row = drive(env.sim, "b c d", 3, 1.0)
    trip = env.sim.drive(["a", "b", "c", "d", "e"], 3, speed_factor=1.0)
    assert row["ok"] and row["matched"] and row["route_key"] == route_key("b c d") and row["depart_s"] == 900.0
    assert row["exit_edges"] == "e" and trip.runout == []  # e: 500 m, no run-out needed
    assert row["exit_battery_wh"] == pytest.approx(trip.edge_energy_wh["e"], abs=1e-9)
    assert row["trip_battery_wh"] == pytest.approx(trip.battery_wh, abs=1e-9)  # a b c d e: more than b c d
    assert row["trip_battery_wh"] > row["battery_wh"]
    assert row["battery_wh"] == pytest.approx(float(trip.route_energy_wh.sum()), abs=1e-9)
    assert row["reduced_wh"] == pytest.approx(float(trip.route_reduced_wh.sum()), abs=1e-9)
    assert row["travel_s"] == pytest.approx(float(trip.route_travel_s.sum()), abs=1e-9)
    failed = drive(env.sim, "b c d", 0, 1.0)
    assert not failed["ok"] and not failed["matched"] and "teleported" in failed["failure"]
    assert math.isnan(failed["trip_battery_wh"]) and math.isnan(failed["battery_wh"])
