"""The physically consistent environment: exact optimum by one Dijkstra, no negative cycle, the paper's mean."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from netfixtures import grid_network

from evroute.energy import elevation_potential_wh, network_energy_wh
from evroute.environments import ConsistentConfig, ConsistentEnvironment, PaperEnvironment
from evroute.environments.consistent import lognormal_reduced_costs
from evroute.environments.paper import sample_prior_function_and_variance
from evroute.linegraph import build_line_graph
from evroute.oracle import has_negative_cycle


def _brute_force_best(lg, f: np.ndarray, start: int, goal: int) -> float:
    g = lg.network.turn_graph()
    return min(float(f[p].sum()) for p in nx.all_simple_paths(g, start, goal))


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(
    net_seed=st.integers(0, 10_000),
    env_seed=st.integers(0, 10_000),
    max_cv=st.sampled_from([0.5, 1.0, 4.0]),
    pair=st.integers(0, 10_000),
)
def test_dijkstra_optimum_is_the_best_simple_route_and_no_cycle_is_negative(net_seed, env_seed, max_cv, pair):
    # steep 3x3 grid (junctions 40-60 m apart, up to 20 m of height): the paper's environment has negative edges here
    lg = build_line_graph(grid_network(3, 3, spacing_m=50.0, seed=net_seed))
    env = ConsistentEnvironment.sample(lg, config=ConsistentConfig(max_cv=max_cv, outputscale_frac=0.5), seed=env_seed)
    f = env.true_mean_wh
    assert np.all(f - elevation_potential_wh(lg.network) >= -1e-9)
    rng = np.random.default_rng(pair)
    start, goal = (int(x) for x in rng.choice(lg.n_nodes, 2, replace=False))
    route = env.optimal_route(start, goal)
    assert route.method == "dijkstra-reduced"
    assert route.cost == pytest.approx(_brute_force_best(lg, f, start, goal), abs=1e-9)
    assert route.cost == pytest.approx(float(f[route.edges].sum()))
    assert not any(has_negative_cycle(lg, f, s) for s in range(lg.n_nodes))


def test_same_draw_as_the_paper_environment_monotone_per_edge():
    lg = build_line_graph(grid_network(4, 3, seed=1))
    paper = PaperEnvironment.sample(lg, seed=7)
    cons = ConsistentEnvironment.sample(lg, seed=7)
    np.testing.assert_array_equal(paper.prior_mean_wh, cons.prior_mean_wh)
    assert (paper.prior_var, paper.noise_var) == (cons.prior_var, cons.noise_var)
    # r_e is increasing in the paper's perturbation g_e: ranks of the perturbations agree edge by edge across seeds
    ps = np.stack([PaperEnvironment.sample(lg, seed=s).true_mean_wh for s in range(20)])
    cs = np.stack([ConsistentEnvironment.sample(lg, seed=s).true_mean_wh for s in range(20)])
    np.testing.assert_array_equal(np.argsort(ps, axis=0), np.argsort(cs, axis=0))


def test_mean_is_the_physics_energy_and_variance_is_capped():
    lg = build_line_graph(grid_network(4, 3, seed=2))
    cfg = ConsistentConfig(max_cv=1.0)
    e_det = network_energy_wh(lg.network)
    pot = elevation_potential_wh(lg.network)
    r_det = e_det - pot
    sigma0 = 0.25 * e_det.std()
    g, var = sample_prior_function_and_variance(lg, cfg, np.random.default_rng(5))
    env = ConsistentEnvironment.sample(lg, config=cfg, seed=5)  # the transform of the paper's draw of the same seed
    np.testing.assert_allclose(env.true_mean_wh, pot + lognormal_reduced_costs(r_det, g, var, sigma0, 1.0))
    # moments of the transform over many Gaussian draws with those variances
    z = np.sqrt(var) * np.random.default_rng(0).standard_normal((200_000, len(var)))
    draws = pot + lognormal_reduced_costs(r_det, z, var, sigma0, 1.0)
    target_sd = np.minimum(sigma0 * np.sqrt(var), r_det)
    assert np.all(np.abs(draws.mean(0) - e_det) < 5 * target_sd / np.sqrt(len(draws)) + 1e-9)
    np.testing.assert_allclose(draws.std(0), target_sd, rtol=0.05)
    assert draws.min() >= pot.min() - 1e-9 and np.all(draws - pot >= 0)


def test_potential_telescopes_is_the_junction_elevation_check() -> None:
    import dataclasses

    from evroute.environments.consistent import potential_telescopes
    from evroute.linegraph import build_line_graph
    from evroute.network.synthetic import synthetic_city

    lg = build_line_graph(synthetic_city(2000, 0))
    assert potential_telescopes(lg)
    t = lg.turns
    z = lg.network.z_to_m.copy()
    z[t[0, 0]] += 1e-3  # one junction's elevation differs between an edge's end and the next edge's start
    bad = build_line_graph(dataclasses.replace(lg.network, z_to_m=z))
    assert not potential_telescopes(bad)
    assert potential_telescopes(bad, tol_m=2e-3)
