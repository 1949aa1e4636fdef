"""Turn arms on a recorded SUMO scenario: per-turn truths from the traversals' next edges, observations, CLI runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_sumo_live import road  # noqa: F401 - the straight two-way road of the live tests (module fixture)
from test_sumo_replay import grid  # noqa: F401 - the recorded 3 x 3 grid scenario (module fixture)

from evroute.arms import make_arms
from evroute.cli import main
from evroute.environments import make_environment
from evroute.environments.sumo_replay import SumoReplayEnvironment
from evroute.linegraph import build_line_graph
from evroute.network.sumo import load_sumo_net
from evroute.sumo.replay import record_day
from evroute.sumo.trip_interval import fit_day_correlation

#: every test here starts a browser / SUMO or builds a large fixture (seconds of CPU each): the slow tier
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def day(grid: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[SumoReplayEnvironment, pd.DataFrame, Path]:  # noqa: F811
    cache = tmp_path_factory.mktemp("cache")
    params = {"route_file": str(grid / "demand.rou.xml"), "hours": [0, 1], "min_samples": 2, "turn_min_samples": 2}
    lg = build_line_graph(load_sumo_net(grid / "grid.net.xml"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVROUTE_CACHE", str(cache))
        env = make_environment(lg, "sumo-replay", params)
        data, _ = record_day(lg, env.config.day_spec())
    assert isinstance(env, SumoReplayEnvironment)
    return env, data, cache


def test_turn_truth_is_the_mean_of_the_traversals_that_took_the_turn(day) -> None:  # noqa: ANN001
    env, data, _ = day
    lg = env.linegraph
    arms = make_arms(lg, "turn")
    assert env.turn_term and (data["next_edge"] >= 0).all()  # every kept traversal knows its next edge
    assert all(lg.adjacency[a, b] for a, b in data[["edge", "next_edge"]].to_numpy())  # ... and it is a legal turn
    truth = env.arm_truth(arms)
    d = data.assign(e=np.maximum(data["reduced_wh"], 0.0))
    by_turn = d.groupby(["edge", "next_edge"])["e"].agg(["mean", "count"])
    c = arms.n_turns
    own = 0
    for i in range(c):
        key = (int(arms.tail[i]), int(arms.head[i]))
        if key in by_turn.index and by_turn.loc[key, "count"] >= 2:
            assert truth[i] == pytest.approx(by_turn.loc[key, "mean"], rel=1e-12)
            own += 1
        else:  # too few traversals (or none): the edge's mean
            assert truth[i] == env.true_mean_wh[arms.tail[i]]
    np.testing.assert_array_equal(truth[c:], env.true_mean_wh)  # terminal arms: their edges
    cov = env.turn_coverage(arms)
    assert own == cov["turns_with_min_samples"] > 0 and cov["turns"] == c
    assert cov["turns_never_driven"] == c - len(by_turn)
    # a route's energy is the sum of its arms' means; the exact optimum is one Dijkstra on them (all >= 0)
    r = env.optimal_route_arms(arms, 0, lg.n_nodes - 1)
    assert r.method == "dijkstra" and r.cost == pytest.approx(truth[arms.route_arms(r.edges)].sum())
    assert env.route_truth(arms, r.edges) == pytest.approx(r.cost)
    # observations: one recorded traversal of the turn (own truth) or of the edge, never anything else
    rng = np.random.default_rng(0)
    pools = {k: set(g["e"].round(9)) for k, g in d.groupby(["edge", "next_edge"])}
    for i in range(c):
        ys = env.observe_arms(arms, np.full(40, i), rng)
        key = (int(arms.tail[i]), int(arms.head[i]))
        if key in by_turn.index and by_turn.loc[key, "count"] >= 2:
            assert set(np.round(ys, 9)) <= pools[key]
        else:
            edge_pool = set(np.round(env.samples_wh[env.offsets[key[0]] : env.offsets[key[0] + 1]], 9))
            assert set(np.round(ys, 9)) <= edge_pool


@pytest.mark.slow
def test_the_day_keeps_each_traversal_s_vehicle(day, monkeypatch) -> None:  # noqa: ANN001
    """Day format 2: every traversal names its SUMO vehicle, so a trip's traversals can be told apart (the
    within-trip correlation of :mod:`evroute.sumo.trip_interval`); a new format is a new cache key."""
    env, data, cache = day
    assert (data["vehicle"].str.startswith("probe") == data["probe"]).all()
    background = data[~data["probe"]].sort_values(["vehicle", "entry_s"])
    assert set(background["vehicle"]) == {f"v{k}" for k in range(8)}  # the demand's vehicles, 2 traversals each
    for _, g in background.groupby("vehicle"):  # consecutive traversals of one trip: the next edge, entered at once
        assert g["next_edge"].to_numpy()[:-1].tolist() == g["edge"].to_numpy()[1:].tolist()
        np.testing.assert_allclose((g["entry_s"] + g["travel_s"]).to_numpy()[:-1], g["entry_s"].to_numpy()[1:])
    assert background.groupby("vehicle").size().min() == 2
    assert data[data["probe"]].groupby("vehicle").size().max() == 1  # a probe trip completes one traversal
    assert fit_day_correlation(data, "edge").trips == 8
    import evroute.sumo.replay as replay

    before = sorted(p.name for p in Path(cache, "sumo").glob("*-day-*.parquet"))
    monkeypatch.setenv("EVROUTE_CACHE", str(cache))
    monkeypatch.setattr(replay, "DAY_FORMAT_VERSION", 1)  # a day of another format is recorded anew, not reused
    record_day(env.linegraph, env.config.day_spec())
    after = sorted(p.name for p in Path(cache, "sumo").glob("*-day-*.parquet"))
    assert len(before) == 1 and len(after) == 2


@pytest.mark.parametrize("model", ["bi", "gp-exact"])
def test_cli_turn_arms_on_the_recorded_grid(day, model: str, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    env, _, cache = day
    monkeypatch.setenv("EVROUTE_CACHE", str(cache))
    out = tmp_path / "run"
    net = env.config.route_file.replace("demand.rou.xml", "grid.net.xml")
    argv = ["run", "--network", net, "--from", "A0B0", "--to", "C1C2", "--env", "sumo-replay", "--arms", "turn"]
    argv += ["--model", model, "--horizon", "5", "--seeds", "1", "--out", str(out), "--no-progress"]
    for p in (f"route_file={env.config.route_file}", "hours=0-1", "min_samples=2", "turn_min_samples=2"):
        argv += ["--env-param", p]
    assert main(argv) == 0
    s = json.loads((out / "seed_0" / "summary.json").read_text())
    ids = env.linegraph.network.edge_ids.tolist()
    arms = make_arms(env.linegraph, "turn")
    ref = arms.optimal_route(env.arm_truth(arms), ids.index("A0B0"), ids.index("C1C2"))
    assert s["arms"] == "turn" and s["regret_reference"]["exact"] and s["optimal_wh"] == pytest.approx(ref.cost)
    rows = pd.read_csv(out / "seed_0" / "rounds.csv")
    for route, expected in zip(rows["route"], rows["expected_wh"], strict=True):
        edges = np.array([ids.index(e) for e in route.split()])
        assert expected == pytest.approx(arms.route_cost(env.arm_truth(arms), edges))
        assert expected >= ref.cost - 1e-9


def test_turn_arms_with_time_of_day_bins_are_refused(day, tmp_path: Path, capsys, monkeypatch) -> None:  # noqa: ANN001
    env, _, cache = day
    monkeypatch.setenv("EVROUTE_CACHE", str(cache))
    net = env.config.route_file.replace("demand.rou.xml", "grid.net.xml")
    out = tmp_path / "bins"
    argv = ["run", "--network", net, "--from", "A0B0", "--to", "C1C2", "--env", "sumo-replay", "--arms", "turn"]
    for p in (f"route_file={env.config.route_file}", "hours=0-1", "min_samples=2", "bin_hours=0.5"):
        argv += ["--env-param", p]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("evroute: error:") and "one time-of-day bin" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_probe_turns_cover_every_turn(grid: Path, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001, F811
    """``probe_turns``: probe trips ``[pred, e, e']`` until every turn has ``min_samples`` traversals; then every turn
    arm has a truth of its own."""
    monkeypatch.setenv("EVROUTE_CACHE", str(tmp_path / "cache"))
    lg = build_line_graph(load_sumo_net(grid / "grid.net.xml"))
    params = {"route_file": str(grid / "demand.rou.xml"), "hours": [0, 1], "min_samples": 2, "probe_turns": True}
    env = make_environment(lg, "sumo-replay", {**params, "turn_min_samples": 2, "max_probe_rounds": 3})
    assert isinstance(env, SumoReplayEnvironment)
    arms = make_arms(lg, "turn")
    cov = env.turn_coverage(arms)
    assert env.meta["turns_short"] == 0 and env.meta["probe_trips"] >= lg.n_arcs
    assert cov["turns_with_min_samples"] == cov["turns"] == lg.n_arcs and cov["probe_trips_to_cover"] == 0
    assert env.counts.min() >= 2  # covering the turns covers the edges


@pytest.mark.slow
def test_cli_turn_arms_live(road: Path, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001, F811
    """`--env sumo-live --arms turn`: each round's route is driven live (one observation per edge = per arm played);
    regret against the replay's turn truths of the same scenario."""
    monkeypatch.setenv("EVROUTE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "live"
    argv = ["run", "--network", str(road / "road.net.xml"), "--from", "b", "--to", "d", "--env", "sumo-live"]
    argv += ["--arms", "turn", "--horizon", "2", "--seeds", "1", "--out", str(out), "--no-progress"]
    for p in (f"route_file={road / 'demand.rou.xml'}", "hours=0-1", "rounds_per_day=12", "min_samples=3"):
        argv += ["--env-param", p]
    assert main(argv) == 0
    s = json.loads((out / "seed_0" / "summary.json").read_text())
    assert s["arms"] == "turn" and s["rounds"] == 2 and s["regret_reference"]["exact"]
