"""Route-set baseline (``--model routeset``): candidates, features, kernel, IGP-UCB / GP-TS, runner and CLI."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from netfixtures import grid_network

from evroute.bandit import RoutingBandit, regret_reference_route
from evroute.environments import PaperEnvironment
from evroute.errors import ParameterError
from evroute.linegraph import build_line_graph
from evroute.models import BayesianEdgeModel
from evroute.oracle import is_valid_route
from evroute.policies import ThompsonSampling, rectified_gaussian_mean
from evroute.routeset import FEATURE_NAMES, RouteSetBandit, candidate_routes, route_features, route_kernel


@pytest.fixture(scope="module")
def env() -> PaperEnvironment:
    return PaperEnvironment.sample(build_line_graph(grid_network(4, 4, seed=2)), seed=5)


def _corners(env: PaperEnvironment) -> tuple[int, int]:
    ids = env.linegraph.network.edge_ids.tolist()
    return ids.index("0>1"), ids.index("14>15")


def test_candidates_are_distinct_valid_routes_sorted_by_prior_energy(env):
    s, g = _corners(env)
    cand = candidate_routes(env.linegraph, env.prior_mean_wh, env.noise_var, s, g, k=12)
    assert len(cand) == 12
    assert len({tuple(r.tolist()) for r in cand.routes}) == 12
    for r in cand.routes:
        assert r[0] == s and r[-1] == g and is_valid_route(env.linegraph, r)
    assert np.all(np.diff(cand.costs) >= -1e-9)
    w = rectified_gaussian_mean(env.prior_mean_wh, np.full(env.n_edges, env.noise_var))
    np.testing.assert_allclose(cand.costs, [w[r].sum() for r in cand.routes])
    # the first candidate is the oracle's route under the rectified prior
    ref = RoutingBandit(
        env, BayesianEdgeModel(env.prior_mean_wh, env.prior_var, env.noise_var), ThompsonSampling(), s, g
    ).oracle.shortest_route(np.maximum(w, 1e-12), s, g)
    assert cand.costs[0] == pytest.approx(ref.cost)


def test_features_and_kernel(env):
    s, g = _corners(env)
    cand = candidate_routes(env.linegraph, env.prior_mean_wh, env.noise_var, s, g, k=6, weights="positive")
    f = route_features(env.linegraph, env.prior_mean_wh, cand.routes)
    assert f.shape == (6, len(FEATURE_NAMES))
    net = env.linegraph.network
    r = cand.routes[0]
    assert f[0, 0] == pytest.approx(net.length_m[r].sum())
    assert f[0, 5] == pytest.approx(env.prior_mean_wh[r].sum())
    assert f[0, 2] - f[0, 3] == pytest.approx(net.z_to_m[r[-1]] - net.z_from_m[r[0]])  # ascent - descent telescopes
    x, cov = route_kernel(f, cand.routes)
    assert x.shape == f.shape
    np.testing.assert_allclose(np.diag(cov), 1.0)
    np.testing.assert_allclose(cov, cov.T)
    assert np.linalg.eigvalsh(cov).min() > -1e-10


@pytest.mark.parametrize("policy", ["ts", "ucb"])
def test_policy_concentrates_on_the_best_candidate(env, policy):
    s, g = _corners(env)
    bandit = RouteSetBandit(env, s, g, policy=policy, seed=1, k=5)
    expected = np.array([env.expected_energy(r) for r in bandit.candidates.routes])
    best = int(np.argmin(expected))
    assert best != 0  # the prior's favourite is not the best route: the policy has to learn
    recs = bandit.run(200)
    share = np.mean(np.isclose([rec.expected_wh for rec in recs[-100:]], expected[best]))
    assert share > 0.8, share
    assert bandit.best_candidate_gap_wh == pytest.approx(expected[best] - bandit.optimal.cost)
    assert recs[-1].cumulative_regret_wh == pytest.approx(sum(r.regret_wh for r in recs))
    assert np.mean([r.regret_wh for r in recs[-100:]]) < np.mean([r.regret_wh for r in recs[:20]])


def test_same_regret_reference_as_the_routing_bandit(env):
    s, g = _corners(env)
    rs = RouteSetBandit(env, s, g, k=4)
    assert rs.optimal.cost == pytest.approx(regret_reference_route(env, s, g).cost)


def test_checkpoint_resume_is_identical(env):
    s, g = _corners(env)
    a = RouteSetBandit(env, s, g, policy="ts", seed=3, k=6)
    b = RouteSetBandit(env, s, g, policy="ts", seed=3, k=6)
    a.run(10)
    b.run(10)
    state = pickle.loads(pickle.dumps(a.state()))
    c = RouteSetBandit(env, s, g, policy="ts", seed=99, k=6)
    c.load_state(state)
    for rb, rc in zip(b.run(15), c.run(15), strict=True):
        assert rb.route == rc.route and rb.observed_wh == rc.observed_wh and rb.regret_wh == rc.regret_wh


def test_bad_input(env):
    s, g = _corners(env)
    with pytest.raises(ParameterError, match="ucb"):
        RouteSetBandit(env, s, g, policy="bucb")
    with pytest.raises(ParameterError, match="k must"):
        candidate_routes(env.linegraph, env.prior_mean_wh, env.noise_var, s, g, k=0)
    with pytest.raises(ParameterError, match="weights"):
        candidate_routes(env.linegraph, env.prior_mean_wh, env.noise_var, s, g, weights="raw")


def test_runner_and_cli(tmp_path, capsys):
    from evroute.cli import main
    from evroute.experiments import load_rounds

    out = tmp_path / "rs"
    rc = main(
        [
            "run",
            "--network",
            "synthetic:300:0",
            "--model",
            "routeset",
            "--policy",
            "ucb",
            "--horizon",
            "12",
            "--seeds",
            "2",
            "--model-param",
            "k=5",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert rc == 0 and "ROUTESET-UCB" in capsys.readouterr().out
    df = load_rounds(out)
    assert len(df) == 24 and set(df["seed"]) == {0, 1}
    assert (
        main(
            [
                "run",
                "--network",
                "synthetic:300:0",
                "--model",
                "routeset",
                "--policy",
                "bucb",
                "--out",
                str(tmp_path / "bad"),
            ]
        )
        == 2
    )
    assert "supports the policies" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
    rc = main(
        [
            "run",
            "--network",
            "synthetic:300:0",
            "--model",
            "kr",
            "--policy",
            "ts",
            "--horizon",
            "8",
            "--model-param",
            "hops=1",
            "--out",
            str(tmp_path / "kr"),
            "--no-progress",
        ]
    )
    assert rc == 0 and "KR-TS" in capsys.readouterr().out
