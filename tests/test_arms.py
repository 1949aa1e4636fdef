"""Turn arms (evroute.arms): the turn-route oracle against brute force, arm bookkeeping, equivalence with edge arms
where the environment has no turn term, the arc kernel and the exact GP on arcs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from netfixtures import grid_network

from evroute.arms import make_arms
from evroute.bandit import RoutingBandit
from evroute.cli import main
from evroute.environments import make_environment
from evroute.errors import ParameterError
from evroute.experiments.registry import make_model
from evroute.kernels.arcs import arc_kernel, arc_points
from evroute.kernels.edge import GraphKernel, Points, edge_kernel
from evroute.kernels.graph_gram import dense_graph_gram
from evroute.linegraph import build_line_graph
from evroute.models.gp_arcs import ArcExactGPModel
from evroute.models.gp_exact import ExactGPConfig, ExactGPEdgeModel
from evroute.policies import Greedy

LG = build_line_graph(grid_network(3, 3, seed=1))


def brute_force(arms, weights: np.ndarray, start: int, goal: int) -> float:  # noqa: ANN001
    """Cheapest simple path of turns (every path of the line graph, enumerated) under arm ``weights``."""
    g = LG.to_networkx()
    best = np.inf
    for path in nx.all_simple_paths(g, start, goal):
        best = min(best, arms.route_cost(weights, np.asarray(path)))
    return best


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), pair=st.tuples(st.integers(0, LG.n_nodes - 1), st.integers(0, LG.n_nodes - 1)))
def test_turn_oracle_finds_the_cheapest_path_of_turns(seed: int, pair: tuple[int, int]) -> None:
    start, goal = pair
    if start == goal:
        return
    arms = make_arms(LG, "turn")
    w = np.random.default_rng(seed).exponential(1.0, arms.n_arms)
    w[np.random.default_rng(seed + 1).random(arms.n_arms) < 0.2] = 0.0  # zero weights are legal turns too
    r = arms.shortest_route(w, start, goal)
    assert r.edges[0] == start and r.edges[-1] == goal and len(set(r.edges.tolist())) == len(r.edges)
    assert all(LG.adjacency[a, b] for a, b in zip(r.edges[:-1], r.edges[1:], strict=True))
    assert r.cost == pytest.approx(arms.route_cost(w, r.edges), abs=1e-12)
    assert r.cost == pytest.approx(brute_force(arms, w, start, goal), abs=1e-12)
    opt = arms.optimal_route(w, start, goal)
    assert opt.exact and opt.cost == pytest.approx(r.cost, abs=1e-12)


def test_negative_arc_truths_use_johnson_and_agree_with_brute_force() -> None:
    arms = make_arms(LG, "turn")
    rng = np.random.default_rng(3)
    w = rng.exponential(1.0, arms.n_arms)
    w[:5] = -0.2  # a few negative turns, no negative cycle (every cycle has >= 4 turns of which few are negative)
    r = arms.optimal_route(w, 0, LG.n_nodes - 1)
    assert r.method == "johnson" and r.cost == pytest.approx(brute_force(arms, w, 0, LG.n_nodes - 1), abs=1e-12)


def test_route_arms_turn_index_and_terminal_arms() -> None:
    arms = make_arms(LG, "turn")
    t = LG.turns
    assert arms.n_arms == LG.n_arcs + LG.n_nodes and arms.n_turns == LG.n_arcs
    np.testing.assert_array_equal(arms.turn_index(t[:, 0], t[:, 1]), np.arange(LG.n_arcs))  # CSR order
    np.testing.assert_array_equal(arms.tail[: LG.n_arcs], t[:, 0])
    route = make_arms(LG).shortest_route(np.ones(LG.n_nodes), 0, LG.n_nodes - 1).edges
    played = arms.route_arms(route)
    assert len(played) == len(route) and played[-1] == arms.n_turns + route[-1] and arms.terminal[played[-1]]
    np.testing.assert_array_equal(arms.tail[played], route)  # one arm per driven edge, in driving order
    np.testing.assert_array_equal(arms.head[played[:-1]], route[1:])
    assert arms.route_arms(route[:1]).tolist() == [arms.n_turns + route[0]]  # a one-edge route: its terminal arm
    with pytest.raises(ParameterError, match="no legal turn"):
        arms.turn_index(np.array([0]), np.array([0]))
    with pytest.raises(ParameterError, match="arms must be one of"):
        make_arms(LG, "lane")
    f = arms.turn_features()
    assert f.shape == (LG.n_arcs, 3) and np.allclose(f.mean(axis=0), 0.0)  # standardised; no SUMO right of way
    uturn = make_arms(build_line_graph(grid_network(2, 2, uturns=True)), "turn")
    raw = np.asarray(uturn.linegraph.turn_features())
    is_u = (
        uturn.linegraph.network.from_node[uturn.tail[: uturn.n_turns]]
        == uturn.linegraph.network.to_node[uturn.head[: uturn.n_turns]]
    )
    assert raw[is_u, 0].max() < raw[~is_u, 0].min()  # a U-turn has the lowest cos(angle)


@pytest.mark.parametrize("env_name", ["consistent", "paper"])
def test_turn_arms_equal_edge_arms_without_a_turn_term(env_name: str) -> None:
    env = make_environment(LG, env_name, seed=2)
    edge, turn = make_arms(LG, "edge"), make_arms(LG, "turn")
    assert not env.turn_term
    np.testing.assert_array_equal(env.arm_truth(turn), env.true_mean_wh[turn.tail])
    rng = np.random.default_rng(0)
    for _ in range(20):
        s, g = rng.choice(LG.n_nodes, 2, replace=False)
        r = edge.shortest_route(rng.exponential(1.0, LG.n_nodes), s, g).edges
        assert env.route_truth(turn, r) == env.expected_energy(r)
        assert turn.route_cost(env.arm_truth(turn), r) == pytest.approx(env.expected_energy(r), abs=1e-9)
        a = env.observe_arms(turn, turn.route_arms(r), np.random.default_rng(7))
        np.testing.assert_array_equal(a, env.observe(r, np.random.default_rng(7)))  # the same draws
    # the same regret reference, and a greedy exact GP without a turn term drives the same routes with either arms
    runs, refs = [], []
    for arms in (edge, turn):
        extra = {} if arms.kind == "edge" else {"arms": arms, "turn_outputscale": 0.0}
        model = make_model("gp-exact", env, learn_hyper=False, **extra)  # type: ignore[arg-type]
        b = RoutingBandit(env, model, Greedy(), 0, LG.n_nodes - 1, seed=5, arms=arms)
        runs.append([(rec.route, rec.regret_wh) for rec in b.run(8)])
        refs.append((b.optimal.edges.tolist(), b.optimal.cost))
    assert refs[0] == refs[1]
    assert [r for r, _ in runs[0]] == [r for r, _ in runs[1]]
    np.testing.assert_allclose([g for _, g in runs[0]], [g for _, g in runs[1]], atol=1e-9)


def _kernel_parts(s3: float) -> tuple[np.ndarray, np.ndarray, Any]:
    arms = make_arms(LG, "turn")
    g = dense_graph_gram(LG.laplacian(), 2.0, 1.0)
    ctx = LG.contexts()
    feats = arms.turn_features()
    head = np.where(arms.head >= 0, arms.head, arms.tail)
    pts = arc_points(ctx, arms.tail, arms.head, feats)
    k = arc_kernel(GraphKernel(g), arms.tail, head, 3, 3, 0.6, 0.4, np.ones(3), np.full(3, 1.5), s3, np.ones(3))
    return k(pts, pts), g, (arms, ctx, pts, head, feats)


def test_arc_kernel_is_psd_reduces_to_the_edge_kernel_and_torch_agrees() -> None:
    k, g, (arms, ctx, pts, head, feats) = _kernel_parts(0.7)
    assert np.allclose(k, k.T) and np.linalg.eigvalsh(k).min() > -1e-9
    k0, _, _ = _kernel_parts(0.0)
    ke = edge_kernel(GraphKernel(g), 0.6, 0.4, np.ones(3), np.full(3, 1.5))(Points(None, ctx), Points(None, ctx))
    np.testing.assert_allclose(k0, ke[np.ix_(arms.tail, arms.tail)], atol=1e-12)  # s3 = 0: the edge kernel of tails
    term = k - k0
    c = arms.n_turns
    assert np.abs(term[c:]).max() == 0.0 and np.abs(term[:, c:]).max() == 0.0  # terminal arms: no turn term
    i, j = 3, 11  # one entry by hand: s3 k_E(heads) k_T(features)
    d = np.linalg.norm(feats[i] - feats[j])
    kt = (1 + np.sqrt(5) * d + 5 * d**2 / 3) * np.exp(-np.sqrt(5) * d)
    assert term[i, j] == pytest.approx(0.7 * ke[head[i], head[j]] * kt, rel=1e-10)
    kt_torch = arc_kernel(
        GraphKernel(torch.as_tensor(g)),
        torch.as_tensor(arms.tail),
        torch.as_tensor(head),
        3,
        3,
        torch.tensor(0.6),
        torch.tensor(0.4),
        torch.ones(3, dtype=torch.float64),
        torch.full((3,), 1.5, dtype=torch.float64),
        torch.tensor(0.7, dtype=torch.float64),
        torch.ones(3, dtype=torch.float64),
    )
    p = Points(torch.arange(arms.n_arms), torch.as_tensor(pts.x))
    np.testing.assert_allclose(kt_torch(p, p).numpy(), k, atol=1e-12)


@pytest.mark.slow
def test_arc_gp_equals_edge_gp_without_turn_term_and_learns_a_turn_term() -> None:
    env = make_environment(LG, "consistent", seed=0)
    arms = make_arms(LG, "turn")
    cfg = ExactGPConfig(learn_hyper=False, method="lowrank")
    args = (env.prior_mean_wh, env.prior_var, env.noise_var, LG.laplacian(), LG.contexts())
    edge = ExactGPEdgeModel(*args, config=cfg)
    arc = ArcExactGPModel(
        arms.lift(env.prior_mean_wh),
        *args[1:],
        arms.tail,
        arms.head,
        arms.turn_features(),
        turn_outputscale=0.0,
        config=cfg,
    )
    rng = np.random.default_rng(1)
    for _ in range(6):
        s, g = rng.choice(LG.n_nodes, 2, replace=False)
        r = make_arms(LG).shortest_route(rng.exponential(1.0, LG.n_nodes), s, g).edges
        y = env.observe(r, rng)
        edge.update(r, y)
        arc.update(arms.route_arms(r), y)
    pe, pa = edge.posterior(), arc.posterior()
    np.testing.assert_allclose(pa.mean, pe.mean[arms.tail], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(pa.variance, pe.variance[arms.tail], rtol=1e-6, atol=1e-8)
    # with a turn term the marginal likelihood is maximised over s3 and the turn lengthscales too
    fit = ArcExactGPModel(
        arms.lift(env.prior_mean_wh),
        *args[1:],
        arms.tail,
        arms.head,
        arms.turn_features(),
        config=ExactGPConfig(refit_first=4, fit_iters=5),
    )
    for _ in range(4):
        r = make_arms(LG).shortest_route(rng.exponential(1.0, LG.n_nodes), 0, LG.n_nodes - 1).edges
        fit.update(arms.route_arms(r), env.observe(r, rng))
    h = fit.hyperparameters()
    assert "outputscale_turn" in h and h["outputscale_turn"] > 0 and len(h["lengthscale_turn"]) == 3


def test_cli_turn_arms_bi_and_gp_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for model in ("bi", "gp-exact"):
        out = tmp_path / model
        argv = ["run", "--network", "synthetic:120:0", "--model", model, "--arms", "turn", "--horizon", "6"]
        assert main([*argv, "--seeds", "1", "--out", str(out), "--no-progress"]) == 0
        s = json.loads((out / "summary.json").read_text())
        assert s["arms"] == "turn" and s["regret_reference"]["exact"] and s["label"] == f"{model.upper()}-TS-TURN"
        assert json.loads((out / "config.json").read_text())["arms"] == "turn"
    capsys.readouterr()
    for bad, msg in (
        (["--arms", "lane"], "arms must be one of edge, turn"),
        (["--arms", "turn", "--model", "kr"], "cannot learn turn arms"),
        (["--model", "gp-exact", "--model-param", "turn_outputscale=0.1"], "needs --arms turn"),
        (["--arms", "turn", "--model", "gp-exact", "--model-param", "turn_outputscale=-1"], "turn_outputscale"),
    ):
        out = tmp_path / "bad"
        assert main(["run", "--network", "synthetic:120:0", *bad, "--out", str(out), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("evroute: error:") and msg in err and len(err.strip().splitlines()) == 1
        assert not out.exists()


def test_sweep_grid_over_arms(tmp_path: Path) -> None:
    grid_file = tmp_path / "grid.json"
    base = {"network": "synthetic:120:0", "model": "bi", "horizon": 4, "seeds": [0]}
    grid_file.write_text(json.dumps({"base": base, "grid": {"arms": ["edge", "turn"]}}))
    assert main(["sweep", str(grid_file), "--out", str(tmp_path / "out"), "--executor", "serial", "--no-progress"]) == 0
    found = {json.loads(p.read_text())["arms"] for p in (tmp_path / "out").glob("*/summary.json")}
    assert found == {"edge", "turn"}


def test_arc_gp_local_graph_columns_agree_with_the_dense_kernel() -> None:
    """The low-rank path (truncated local graph columns, entry-wise error <= graph_tol = 1e-6 of the mean prior
    variance) gives the dense path's posterior to that accuracy."""
    env = make_environment(LG, "consistent", seed=0)
    arms = make_arms(LG, "turn")
    posts = []
    for method in ("lowrank", "dense"):
        m = ArcExactGPModel(
            arms.lift(env.prior_mean_wh),
            env.prior_var,
            env.noise_var,
            LG.laplacian(),
            LG.contexts(),
            arms.tail,
            arms.head,
            arms.turn_features(),
            config=ExactGPConfig(method=method, learn_hyper=False),
        )
        rng = np.random.default_rng(0)
        for _ in range(5):
            r = make_arms(LG).shortest_route(rng.exponential(1.0, LG.n_nodes), 0, LG.n_nodes - 1).edges
            m.update(arms.route_arms(r), env.observe(r, rng))
        posts.append(m.posterior())
    scale = float(np.mean(posts[1].variance))
    np.testing.assert_allclose(posts[0].mean, posts[1].mean, atol=1e-4 * np.sqrt(scale))
    np.testing.assert_allclose(posts[0].variance, posts[1].variance, atol=1e-4 * scale)


def test_torch_statistics_likelihood_equals_numpy_marginal_likelihood() -> None:
    """The arc GP's torch likelihood (autograd) and the edge GP's NumPy one are the same formula: on the edge kernel
    they agree to float64 round-off of a 12 x 12 Cholesky (relative 1e-10)."""
    from evroute.kernels.edge import GraphKernel, Points, edge_kernel
    from evroute.models.gp_arcs_mll import statistics_log_likelihood
    from evroute.models.gp_exact_mll import Hyper, marginal_log_likelihood

    rng = np.random.default_rng(3)
    u, d = 12, 2
    b = rng.normal(size=(u, u))
    g = b @ b.T / u + np.eye(u)
    x = rng.normal(size=(u, d))
    m, n = rng.normal(size=u), rng.integers(1, 5, size=u).astype(float)
    ybar, scatter = m + rng.normal(size=u), rng.random(u) * (n - 1)
    hyper = Hyper(0.7, 0.3, np.array([0.8, 1.3]), np.array([1.1, 0.6]), 0.2)
    t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64))  # noqa: E731
    k = edge_kernel(GraphKernel(t(g)), t(hyper.s1), t(hyper.s2), t(hyper.ls1), t(hyper.ls2))(
        Points(None, t(x)), Points(None, t(x))
    )
    got = float(statistics_log_likelihood(k, t(hyper.noise), t(m), t(n), t(ybar), t(scatter)))
    want = marginal_log_likelihood(hyper, g, x, m, n, ybar, scatter)
    assert got == pytest.approx(want, rel=1e-10)
