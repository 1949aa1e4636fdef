"""The sumo-replay environment on a tiny hand-made road: probe coverage, replay sampling, exact regret, CLI run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evroute.cli import main
from evroute.environments import make_environment
from evroute.environments.sumo_replay import SumoReplayEnvironment, parse_params
from evroute.errors import DataError, ParameterError
from evroute.linegraph import build_line_graph
from evroute.network.sumo import load_sumo_net
from evroute.sumo.binaries import run_sumo_program, sumo_binary
from evroute.sumo.replay import DaySpec, probe_routes

#: every test here starts a browser / SUMO or builds a large fixture (seconds of CPU each): the slow tier
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def road(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two-way road n0 -a- n1 -b- n2 -c- n3 (500, 1000 m uphill 20 m, 500 m) with turnarounds at the ends."""
    d = tmp_path_factory.mktemp("replay")
    (d / "n.nod.xml").write_text(
        '<nodes><node id="n0" x="0" y="0" z="0"/><node id="n1" x="500" y="0" z="0"/>'
        '<node id="n2" x="1500" y="0" z="20"/><node id="n3" x="2000" y="0" z="20"/></nodes>'
    )
    es = [("a", "n0", "n1"), ("b", "n1", "n2"), ("c", "n2", "n3")]
    body = "".join(
        f'<edge id="{e}" from="{u}" to="{v}" speed="13.89"/><edge id="-{e}" from="{v}" to="{u}" speed="13.89"/>'
        for e, u, v in es
    )
    (d / "n.edg.xml").write_text(f"<edges>{body}</edges>")
    net = d / "road.net.xml"
    run_sumo_program([sumo_binary("netconvert"), "-n", d / "n.nod.xml", "-e", d / "n.edg.xml", "-o", net], "nc")
    (d / "demand.rou.xml").write_text(
        "<routes>"
        + "".join(f'<vehicle id="v{k}" depart="{30 * k}"><route edges="a b c"/></vehicle>' for k in range(4))
        + "</routes>"
    )
    return d


@pytest.fixture(scope="module")
def env(road: Path, tmp_path_factory: pytest.TempPathFactory) -> SumoReplayEnvironment:
    lg = build_line_graph(load_sumo_net(road / "road.net.xml"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVROUTE_CACHE", str(tmp_path_factory.mktemp("cache")))
        env = make_environment(
            lg, "sumo-replay", {"route_file": str(road / "demand.rou.xml"), "hours": [0, 1], "min_samples": 3}
        )
    assert isinstance(env, SumoReplayEnvironment)
    return env


def test_probes_cover_every_edge(env: SumoReplayEnvironment) -> None:
    # the demand drives a b c only (a and c partially: first/last edges are dropped); probes fill the rest
    assert env.n_edges == 6 and env.counts.min() >= 3
    assert env.meta["probe_trips"] > 0 and env.meta["edges_short"] == 0
    ids = env.linegraph.network.edge_ids.tolist()
    assert env.counts[ids.index("b")] >= 4  # the four demand vehicles' complete traversals of b


def test_probe_routes_are_legal_triples(env: SumoReplayEnvironment) -> None:
    lg = env.linegraph
    counts = np.array([0, 3, 1, 3, 3, 3])
    probes = probe_routes(lg, counts, 3, (0.0, 100.0), np.random.default_rng(0), "p")
    assert len(probes) == 3 + 2
    idx = {e: i for i, e in enumerate(lg.network.edge_ids.tolist())}
    turns = {tuple(t) for t in lg.turns.tolist()}
    for depart, _, (p, e, s) in probes:
        assert 0.0 <= depart <= 100.0
        assert (idx[p], idx[e]) in turns and (idx[e], idx[s]) in turns
        assert idx[e] in (0, 2)


def test_truth_is_mean_of_recorded_traversals_and_observations_replay_them(env: SumoReplayEnvironment) -> None:
    for e in range(env.n_edges):
        s = env.samples_wh[env.offsets[e] : env.offsets[e + 1]]
        assert len(s) == env.counts[e] and env.true_mean_wh[e] == pytest.approx(s.mean())
    rng = np.random.default_rng(0)
    edges = np.arange(env.n_edges)
    draws = np.array([env.observe(edges, rng) for _ in range(4000)])
    for e in range(env.n_edges):  # every observation is one recorded traversal; their average is the truth
        recorded = set(env.samples_wh[env.offsets[e] : env.offsets[e + 1]].tolist())
        assert set(draws[:, e].tolist()) <= recorded
        se = np.sqrt(env.edge_var_wh2[e] / 4000) + 1e-9
        assert abs(draws[:, e].mean() - env.true_mean_wh[e]) <= 5 * se
    ids = env.linegraph.network.edge_ids.tolist()
    b, mb = ids.index("b"), ids.index("-b")
    # battery energy: 20 m up vs down, m g dz / 3600 = 99.7 Wh each way; reduced: what is dissipated, alike both ways
    assert env.route_energy_wh(np.asarray([b])) > env.route_energy_wh(np.asarray([mb])) + 150
    assert env.potential_wh[b] == pytest.approx(1830 * 9.81 * 20 / 3600) == -env.potential_wh[mb]
    assert 0 < env.true_mean_wh[mb] < env.true_mean_wh[b] < env.true_mean_wh[mb] + 20


def test_exact_optimum_is_dijkstra_and_route_energy_is_sum_of_arm_means(env: SumoReplayEnvironment) -> None:
    ids = env.linegraph.network.edge_ids.tolist()
    a, c = ids.index("a"), ids.index("c")
    r = env.optimal_route(a, c)
    assert [ids[i] for i in r.edges] == ["a", "b", "c"] and r.method == "dijkstra" and r.exact  # the only route
    assert r.cost == pytest.approx(env.true_mean_wh[r.edges].sum())  # route energy = sum of the arm means
    rise = 20.0  # z(end of c) - z(start of a): the potential's constant for this origin-destination pair
    assert env.route_energy_wh(r.edges) == pytest.approx(r.cost + 1830 * 9.81 * rise / 3600)
    d = env.describe()
    assert d["negative_reduced_costs"] == 0 and not d["negative_cycle_reachable"] and d["clipped_traversals"] == 0


def test_negative_reduced_energies_are_clipped_and_counted(env: SumoReplayEnvironment) -> None:
    """Recorded reduced energies below 0 (SUMO's discretisation) are clipped at 0 and counted: no negative cycle."""
    ids = env.linegraph.network.edge_ids.tolist()
    a, c = ids.index("a"), ids.index("c")
    reduced = np.repeat(env.true_mean_wh, 2) - np.where(np.arange(12) // 2 == a, 1e4, 0.0)  # both of a far below 0
    bad = SumoReplayEnvironment(
        env.linegraph,
        env.prior_mean_wh,
        np.repeat(np.arange(6), 2),
        np.concatenate([reduced[:-1], [np.nan]]),  # and one traversal without a finite energy
        env.prior_var,
        env.config,
        env.potential_wh,
    )
    assert bad.clipped_traversals == 2 and bad.clipped_wh == pytest.approx(2 * (env.true_mean_wh[a] - 1e4))
    assert bad.nan_traversals == 1 and bad.counts[5] == 1
    assert bad.true_mean_wh[a] == 0.0 and bad.true_mean_wh.min() >= 0.0
    assert np.all(bad.observe(np.full(20, a), np.random.default_rng(0)) == 0.0)
    assert bad.optimal_route(a, c).method == "dijkstra"
    d = bad.describe()
    assert d["clipped_traversals"] == 2 and d["nan_traversals"] == 1 and not d["negative_cycle_reachable"]


def test_prior_is_reduced_eq8(env: SumoReplayEnvironment) -> None:
    """The prior mean is Eq. 8 minus the full potential m g dz / 3600 (profile's g), >= 0, and close to the truth."""
    from evroute.energy import VehicleProfile, network_energy_wh

    net = env.linegraph.network
    v = VehicleProfile()
    dz = net.z_to_m - net.z_from_m
    np.testing.assert_allclose(env.prior_mean_wh, network_energy_wh(net, v) - v.mass_kg * v.gravity_mps2 * dz / 3600)
    assert env.prior_mean_wh.min() > 0
    ids = net.edge_ids.tolist()
    b, mb = ids.index("b"), ids.index("-b")
    # uphill: R / eta+ + (1 / eta+ - 1) m g dz = 82.9 Wh; downhill, E_mech = R - m g |dz| < 0: eta- E_mech + m g |dz|
    # = 79.9 Wh, with R = 79.2 Wh of rolling and air resistance over 1000 m at 13.89 m/s (1 %: the net's edge is
    # a little longer, junction centre to junction centre)
    assert env.prior_mean_wh[b] == pytest.approx(82.9, rel=0.01)
    assert env.prior_mean_wh[mb] == pytest.approx(79.9, rel=0.01)


def test_params_are_validated() -> None:
    assert parse_params({"hours": "7-10"}).hours == (7, 10)
    for bad in ({"hours": "25-26"}, {"model": "HBEFA"}, {"nope": 1}, {"min_samples": 0}):
        with pytest.raises(ParameterError):
            parse_params(bad)
    with pytest.raises(DataError):
        parse_params({"route_file": "/no/such.rou.xml"})
    assert DaySpec().min_samples == 10


def test_synthetic_network_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert (
        main(
            [
                "run",
                "--network",
                "synthetic:150:0",
                "--env",
                "sumo-replay",
                "--horizon",
                "2",
                "--out",
                str(tmp_path / "x"),
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith("evroute: error: ") and "SUMO" in err and "\n" not in err
    assert not (tmp_path / "x").exists()


def test_cli_run_on_replay(road: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVROUTE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--network",
                str(road / "road.net.xml"),
                "--from",
                "a",
                "--to",
                "c",
                "--env",
                "sumo-replay",
                "--env-param",
                f"route_file={road / 'demand.rou.xml'}",
                "--env-param",
                "hours=0-1",
                "--env-param",
                "min_samples=3",
                "--horizon",
                "5",
                "--seeds",
                "2",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    s = json.loads((out / "seed_0" / "summary.json").read_text())
    assert s["rounds"] == 5 and s["final_cumulative_regret_wh"] == pytest.approx(0.0, abs=1e-9)  # one route
    assert list((tmp_path / "cache" / "sumo").glob("*-day-*.parquet"))  # the recorded day is cached


def test_cli_run_without_sumo_is_one_line_error(
    road: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from evroute.sumo import binaries

    monkeypatch.setattr(binaries, "sumo_wheel_home", lambda: None)
    monkeypatch.delenv("SUMO_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--network",
                str(road / "road.net.xml"),
                "--from",
                "a",
                "--to",
                "c",
                "--env",
                "sumo-replay",
                "--env-param",
                f"route_file={road / 'demand.rou.xml'}",
                "--horizon",
                "2",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("evroute: error: SUMO program 'sumo' not found") and err.count("\n") == 1
    assert not out.exists()


def test_unrecorded_edge_takes_eq8(env: SumoReplayEnvironment) -> None:
    """An edge without any recorded traversal: its truth and every observation are Eq. 8's energy."""
    keep = np.flatnonzero(np.repeat(np.arange(env.n_edges), env.counts) != 0)  # drop every sample of edge 0
    edge = np.repeat(np.arange(env.n_edges), env.counts)[keep]
    e2 = SumoReplayEnvironment(
        env.linegraph, env.prior_mean_wh, edge, env.samples_wh[keep], env.prior_var, env.config, env.potential_wh
    )
    assert e2.eq8_edges.tolist() == [0] and e2.true_mean_wh[0] == env.prior_mean_wh[0]
    assert np.all(e2.observe(np.zeros(5, dtype=np.int64), np.random.default_rng(0)) == env.prior_mean_wh[0])
    np.testing.assert_allclose(e2.true_mean_wh[1:], env.true_mean_wh[1:])
    assert e2.describe()["eq8_edges"] == [env.linegraph.network.edge_ids[0]]


def test_time_of_day_bins(env: SumoReplayEnvironment) -> None:
    """Two 1-hour bins swept every 10 rounds: truth, observations, sparse-cell fallback and noise, by hand."""
    from dataclasses import replace

    cfg = replace(env.config, hours=(0, 2), bin_hours=1.0, rounds_per_day=10, bin_min_samples=2)
    # edge 0: bin 0 {1, 3}, bin 1 {10, 12}; edge 1: bin 0 {5} (too few: all of 5, 7, 9), bin 1 {7, 9};
    # edges 2-5: {20, 20} in both bins
    edge = [0, 0, 0, 0, 1, 1, 1] + [e for e in range(2, 6) for _ in range(4)]
    energy = [1.0, 3.0, 10.0, 12.0, 5.0, 7.0, 9.0] + [20.0] * 16
    entry = [100.0, 200.0, 3700.0, 7300.0, 50.0, 3600.0, 5000.0] + [10.0, 20.0, 4000.0, 4100.0] * 4
    tod = SumoReplayEnvironment(
        env.linegraph,
        env.prior_mean_wh,
        np.array(edge),
        np.array(energy),
        env.prior_var,
        cfg,
        env.potential_wh,
        entry_s=np.array(entry),
    )
    assert cfg.n_bins == 2 and not tod.static and tod.fallback_cells == 1
    assert [cfg.bin_of_round(t) for t in (1, 5, 6, 10, 11)] == [0, 0, 1, 1, 0]
    np.testing.assert_allclose(tod.bin_means[:, :2], [[2.0, 7.0], [11.0, 8.0]])  # 7300 s: after the window, bin 1
    assert tod.noise_var == pytest.approx((2.0 + 2.0 + 2.0) / 11)  # own cells with 2+ traversals: 11
    rng = np.random.default_rng(0)
    assert not tod.advance(1) and set(tod.observe(np.zeros(50, dtype=np.int64), rng).tolist()) == {1.0, 3.0}
    assert set(tod.observe(np.ones(80, dtype=np.int64), rng).tolist()) == {5.0, 7.0, 9.0}
    assert tod.advance(6) and tod.true_mean_wh[0] == 11.0
    assert set(tod.observe(np.zeros(50, dtype=np.int64), rng).tolist()) == {10.0, 12.0}
    ids = env.linegraph.network.edge_ids.tolist()
    r = tod.optimal_route(ids.index("a"), ids.index("c"))  # the bin's optimum, costed with the bin's means
    assert r.cost == pytest.approx(tod.bin_means[1, r.edges].sum())
    assert not tod.advance(7) and tod.advance(11) and tod.describe()["bins"] == 2
    with pytest.raises(ParameterError):
        parse_params({"bin_hours": -1})


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A flat 3 x 3 grid of 200 m blocks (netgenerate) with a few EVs turning through it: cycles everywhere."""
    d = tmp_path_factory.mktemp("grid")
    netgenerate: list[str | Path] = [sumo_binary("netgenerate"), "--grid", "--grid.number", "3", "--grid.length", "200"]
    netgenerate += ["--default.speed", "13.89", "-o", d / "grid.net.xml"]
    run_sumo_program(netgenerate, "netgenerate")
    routes = ["A0B0 B0B1 B1C1 C1C2", "C2B2 B2B1 B1A1 A1A0", "A0A1 A1B1 B1B0 B0C0", "C0C1 C1B1 B1B2 B2A2"]
    (d / "demand.rou.xml").write_text(
        "<routes>"
        + "".join(
            f'<vehicle id="v{k}" depart="{20 * k}"><route edges="{routes[k % len(routes)]}"/></vehicle>'
            for k in range(8)
        )
        + "</routes>"
    )
    return d


def test_cli_run_on_a_grid_reports_an_exact_reference(
    grid: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`evroute run --env sumo-replay` on a small recorded scenario with many cycles: the reference is exact (one
    Dijkstra, no negative cycle), and the learner subtracts no potential from energies that are already reduced."""
    monkeypatch.setenv("EVROUTE_CACHE", str(tmp_path / "cache"))
    params = {"route_file": str(grid / "demand.rou.xml"), "hours": [0, 1], "min_samples": 2}
    out = tmp_path / "run"
    argv = ["run", "--network", str(grid / "grid.net.xml"), "--from", "A0B0", "--to", "C1C2"]
    argv += ["--env", "sumo-replay", "--horizon", "6", "--seeds", "1", "--out", str(out), "--no-progress"]
    for k, v in params.items():
        argv += ["--env-param", f"{k}={'0-1' if k == 'hours' else v}"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    s = json.loads((out / "seed_0" / "summary.json").read_text())
    assert s["optimal_method"] == "dijkstra" and s["regret_reference"]["exact"] and s["potential"] == "none"
    assert "regret reference: the exact minimum-energy route" in printed and "potential: none" in printed
    lg = build_line_graph(load_sumo_net(grid / "grid.net.xml"))
    env = make_environment(lg, "sumo-replay", params)  # the cached day of the run
    d = env.describe()
    assert d["negative_reduced_costs"] == 0 and not d["negative_cycle_reachable"]
    ids = lg.network.edge_ids.tolist()
    r = env.optimal_route(ids.index("A0B0"), ids.index("C1C2"))
    assert s["optimal_wh"] == pytest.approx(r.cost) == pytest.approx(env.true_mean_wh[r.edges].sum())
