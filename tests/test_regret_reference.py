"""Regret references without an exact optimum: best known route, lowered to driven routes, stated in summaries."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evroute.bandit import rebase_regret
from evroute.energy import elevation_potential_wh
from evroute.environments import make_environment
from evroute.experiments.runner import load_linegraph
from evroute.oracle import Route, best_known_route, best_simple_route, is_valid_route, rectified_reference_route
from evroute.routes import resolve_route

NET = "synthetic:150:0"


@pytest.fixture(scope="module")
def case():
    lg = load_linegraph(NET)
    route = resolve_route(lg, NET, "A", None, None)
    env = make_environment(lg, "paper", {"outputscale_frac": 2.0}, seed=0)  # many negative cycles
    return lg, route, env


@pytest.mark.slow
def test_best_known_route_lies_between_the_exact_optimum_and_the_rectified_reference(case):
    lg, route, env = case
    f = env.true_mean_wh
    pot = elevation_potential_wh(lg.network)
    best = best_known_route(lg, f, env.noise_var, route.start, route.goal, pot, k=20)
    assert best.method == "best-known" and not best.exact
    assert is_valid_route(lg, best.edges) and best.edges[0] == route.start and best.edges[-1] == route.goal
    assert best.cost == pytest.approx(float(f[best.edges].sum()))
    rect = [rectified_reference_route(lg, f, env.noise_var, route.start, route.goal, p) for p in (None, pot)]
    assert best.cost <= min(r.cost for r in rect) + 1e-9
    exact = best_simple_route(lg, f, route.start, route.goal, time_limit_s=120)
    assert exact.exact and exact.cost <= best.cost + 1e-9


def test_rebase_regret_hand_computed():
    rows = [
        {"round": "1", "expected_wh": "10.0"},
        {"round": "2", "expected_wh": "4.0"},
        {"round": "3", "expected_wh": "6.0"},
    ]
    out, ref, cum = rebase_regret(rows, Route(np.array([0]), 5.0, "best-known"))
    assert ref == 4.0 and cum == pytest.approx(6.0 + 0.0 + 2.0)
    assert [r["cumulative_regret_wh"] for r in out] == pytest.approx([6.0, 6.0, 8.0])
    out, ref, cum = rebase_regret(rows, Route(np.array([0]), 5.0, "dijkstra-reduced"))  # exact: unchanged
    assert ref == 5.0 and cum == pytest.approx(5.0 - 1.0 + 1.0)


@pytest.mark.slow
def test_cli_states_the_reference(tmp_path, capsys):
    from evroute.cli import main

    out = tmp_path / "run"
    rc = main(
        [
            "run",
            "--network",
            NET,
            "--env",
            "paper",
            "--env-param",
            "outputscale_frac=2",
            "--horizon",
            "3",
            "--seeds",
            "2",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert rc == 0
    s = json.loads((out / "summary.json").read_text())
    ref = s["regret_reference"]
    assert set(ref["per_seed"]) == {"0", "1"} and ref["methods"]
    assert ref["exact"] == all(r["exact"] for r in ref["per_seed"].values())
    assert "regret reference:" in capsys.readouterr().out
    rc = main(["run", "--network", NET, "--horizon", "3", "--out", str(tmp_path / "c"), "--no-progress"])
    s = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert s["regret_reference"]["exact"] and s["regret_reference"]["methods"] == ["dijkstra-reduced"]
    assert json.loads((tmp_path / "c" / "config.json").read_text())["env"] == "consistent"


def test_run_without_exact_optimum_reports_against_the_best_known_or_driven_route(tmp_path, monkeypatch):
    import pandas as pd

    import evroute.bandit as B
    from evroute.experiments import ExperimentConfig, run_experiment

    monkeypatch.setattr(B, "EXACT_TRY_CUT_ROUNDS", 0)  # no budget to certify: the best known route
    cfg = ExperimentConfig(
        network=NET,
        env="paper",
        environment={"outputscale_frac": 2.0},
        model="bi",
        policy="ts",
        horizon=30,
        seeds=(0,),
        potential="elevation",
    )
    agg = run_experiment(cfg, tmp_path / "r", progress=False)
    s = json.loads((tmp_path / "r" / "seed_0" / "summary.json").read_text())
    df = pd.read_csv(tmp_path / "r" / "seed_0" / "rounds.csv")
    assert s["optimal_method"] == "best-known" and not agg["regret_reference"]["exact"]
    assert s["optimal_wh"] <= df["expected_wh"].min() + 1e-9  # no driven route beats the reference
    assert (df["optimal_wh"] == s["optimal_wh"]).all()
    np.testing.assert_allclose(df["cumulative_regret_wh"], np.cumsum(df["expected_wh"] - s["optimal_wh"]))
    assert s["final_cumulative_regret_wh"] == pytest.approx(df["cumulative_regret_wh"].iloc[-1])
    assert df["regret_wh"].min() >= -1e-9


@pytest.mark.slow
def test_auto_reference_does_not_depend_on_the_clock(monkeypatch):
    """The certification budget is work (cut rounds, nodes), not seconds: a slow machine gets the same reference."""

    import evroute.oracle as O
    from evroute.bandit import regret_reference_route
    from evroute.environments import make_environment
    from evroute.experiments.runner import load_linegraph

    lg = load_linegraph("synthetic:120:0")
    env = make_environment(lg, "drifting", {"drift": "daily", "drift_period": 40}, seed=3)
    env.advance(4)  # a time with reachable negative cycles that takes ~15 cut rounds to certify
    fast = regret_reference_route(env, 0, lg.n_nodes - 1)
    clock = iter(range(0, 10**9, 1000))  # every reading of the clock is 1000 s after the previous one
    monkeypatch.setattr(O.time, "monotonic", lambda: float(next(clock)))
    slow = regret_reference_route(env, 0, lg.n_nodes - 1)
    assert fast.method == slow.method == "milp"
    assert np.array_equal(fast.edges, slow.edges) and fast.cost == slow.cost
