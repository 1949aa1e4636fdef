"""Worlds the models did not come from (issue 38): the default model prior differs from every environment's generating
values by construction; the misspecified environment draws its generating values per seed from wide ranges; its noise
families have the stated moments; its truths keep an exact optimum."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evroute.environments import ENVIRONMENTS, make_environment
from evroute.environments.misspecified import RANGES, MisspecifiedEnvironment, draw_parameters, road_classes
from evroute.environments.noise import draw_noise
from evroute.errors import ParameterError
from evroute.experiments.registry import model_prior
from evroute.linegraph import build_line_graph
from evroute.models.builders import KERNEL_FIELDS, NEUTRAL, default_prior
from evroute.network.registry import load_network
from evroute.oracle import optimal_route

NET = "synthetic:200:3"
#: environments built from a recorded SUMO day (their variances are measured, they have no generating kernel; they
#: need SUMO and a SUMO network): not simulated from any prior family, not checked here
MEASURED = {"sumo-replay", "sumo-live"}
#: every simulated environment with the parameter sets that make its different worlds
WORLDS: dict[str, list[dict[str, object]]] = {
    "consistent": [{}],
    "paper": [{}],
    "drifting": [{}],
    "misspecified": [{"truth": "gp"}, {"truth": "road-class"}],
}
SEEDS = range(12)


@pytest.fixture(scope="module")
def lg():
    return build_line_graph(load_network(NET))


def generating_values(env) -> dict[str, float]:
    """The values an environment's truth and noise were generated with, as a model prior would name them."""
    out = {"prior_var": float(env.prior_var), "noise_var": float(env.noise_var)}
    for k in KERNEL_FIELDS:
        if hasattr(env.config, k):
            out[k] = float(getattr(env.config, k))
    return out


def test_every_simulated_environment_is_checked() -> None:
    assert set(ENVIRONMENTS) == set(WORLDS) | MEASURED


@pytest.mark.parametrize("name", sorted(WORLDS))
def test_default_prior_differs_from_every_generating_value(lg, name) -> None:
    """Each of the default prior's values (variances, every kernel value the environment has) differs from the
    environment's by more than 1 % relative, for every world and seed: the default is fixed from the physics and the
    network (:mod:`evroute.models.builders`), never from an environment's fractions."""
    prior = default_prior(lg, make_environment(lg, name, WORLDS[name][0], seed=0).prior_mean_wh)
    ours = {"prior_var": prior.prior_var, "noise_var": prior.noise_var, **vars(prior.kernel)}
    seeds = SEEDS if name == "misspecified" else range(2)
    for params in WORLDS[name]:
        for seed in seeds:
            env = make_environment(lg, name, params, seed=seed)
            gen = generating_values(env)
            assert {"prior_var", "noise_var"} <= set(gen)
            for k, v in gen.items():
                assert abs(ours[k] - v) > 0.01 * abs(v), f"{name} {params} seed {seed}: default {k} = {v}"


def test_the_default_graph_order_lies_outside_every_drawn_range() -> None:
    """By construction: the model's integer ``nu = 1`` is below the misspecified worlds' continuous ``[1.5, 4]`` and
    differs from the other environments' fixed ``nu = 2``."""
    assert NEUTRAL.graph_nu < RANGES["graph_nu"][0] and NEUTRAL.graph_nu != 2.0


def test_generating_values_are_drawn_per_seed_across_their_ranges() -> None:
    """200 seeds: every value inside its range, a log-uniform (uniform) draw reaching both ends (each end's 10 % of
    the range is missed by 200 draws with probability 0.9^200 < 1e-9), reproducible, different between seeds."""
    names = tuple(RANGES)
    draws = np.array([[draw_parameters(s, names)[k] for k in names] for s in range(200)])
    for j, (lo, hi, scale) in enumerate(RANGES.values()):
        col = draws[:, j]
        assert np.all((col >= lo) & (col <= hi))
        u = np.log(col / lo) / math.log(hi / lo) if scale == "log" else (col - lo) / (hi - lo)
        assert u.min() < 0.1 and u.max() > 0.9
        assert len(np.unique(col)) == 200
    assert draw_parameters(7, names) == draw_parameters(7, names)
    # a value does not depend on which others are asked for
    assert draw_parameters(3, ("lengthscale",))["lengthscale"] == draw_parameters(3, names)["lengthscale"]


def test_misspecified_environment_uses_its_drawn_values(lg) -> None:
    env = make_environment(lg, "misspecified", {"truth": "gp"}, seed=5)
    drawn = draw_parameters(5, ("outputscale_frac", "noise_frac", "lengthscale", "graph_nu"))
    s2 = float(np.var(env.prior_mean_wh))
    assert env.prior_var == pytest.approx(drawn["outputscale_frac"] ** 2 * s2, rel=1e-12)
    assert env.noise_var == pytest.approx(drawn["noise_frac"] ** 2 * s2, rel=1e-12)
    oracle = model_prior(env, "oracle")  # the oracle ablation hands over the DRAWN kernel
    assert (oracle.kernel.lengthscale, oracle.kernel.graph_nu) == (drawn["lengthscale"], drawn["graph_nu"])
    road = make_environment(lg, "misspecified", {"truth": "road-class"}, seed=5)
    with pytest.raises(ParameterError, match="no generating graph_nu"):
        model_prior(road, "oracle")
    assert road.describe()["generating"]["class_sd"] == draw_parameters(5, ("class_sd",))["class_sd"]


@pytest.mark.parametrize("truth", ["gp", "road-class"])
def test_truths_keep_non_negative_reduced_costs_and_the_exact_optimum(lg, truth) -> None:
    """Reduced costs ``f - p >= 0``, and the environment's optimum (one Dijkstra on them) costs what the general
    exact search on the energies finds (to 1e-9 Wh)."""
    for seed in range(3):
        env = make_environment(lg, "misspecified", {"truth": truth}, seed=seed)
        assert isinstance(env, MisspecifiedEnvironment)
        assert np.all(env.true_mean_wh - env.potential_wh >= -1e-9)
        assert not np.allclose(env.true_mean_wh, env.prior_mean_wh)
        for start, goal in ((0, lg.n_nodes - 1), (5, lg.n_nodes // 2)):
            ours = env.optimal_route(start, goal)
            ref = optimal_route(lg, env.true_mean_wh, start, goal, on_negative_cycle="raise")
            assert ours.cost == pytest.approx(ref.cost, abs=1e-9)


def test_road_class_truth_has_class_and_junction_structure(lg) -> None:
    """The per-class offsets shift each class's mean ratio of reduced costs; without the per-edge and junction parts
    the truth would be exactly proportional within a class (checked through the draw's own decomposition)."""
    env = make_environment(lg, "misspecified", {"truth": "road-class"}, seed=2)
    assert isinstance(env, MisspecifiedEnvironment)
    cls = road_classes(lg.network.speed_mps)
    r_det = np.maximum(env.prior_mean_wh - env.potential_wh, 0.0)
    ratio = (env.true_mean_wh - env.potential_wh)[r_det > 1.0] / r_det[r_det > 1.0]
    means = [float(np.mean(ratio[cls[r_det > 1.0] == c])) for c in np.unique(cls[r_det > 1.0])]
    assert len(means) >= 2 and np.ptp(means) > 0.01


N = 200_000


def test_gaussian_noise_variance() -> None:
    """Sample variance within 5 standard errors ``v sqrt(2 / n)``."""
    eps = draw_noise("gaussian", N, 4.0, np.random.default_rng(1))
    assert abs(eps.var() - 4.0) < 5 * 4.0 * math.sqrt(2 / N) and abs(eps.mean()) < 5 * 2.0 / math.sqrt(N)


@pytest.mark.parametrize("df", [3.0, 5.0, 10.0])
def test_student_t_noise_is_the_stated_family(df) -> None:
    """Standardised back, the noise is Student-t with ``df`` degrees of freedom (Kolmogorov-Smirnov distance below
    the 1 % critical value ``1.63 / sqrt(n)``); for ``df > 4`` its variance is ``noise_var`` within 5 standard
    errors ``v sqrt((kurtosis - 1) / n)``, kurtosis ``3 + 6 / (df - 4)``."""
    v = 9.0
    eps = draw_noise("student-t", N, v, np.random.default_rng(2), df=df)
    z = eps / (math.sqrt(v) * math.sqrt((df - 2) / df))
    assert stats.kstest(z, stats.t(df).cdf).statistic < 1.63 / math.sqrt(N)
    if df > 4:
        kurt = 3 + 6 / (df - 4)
        assert abs(eps.var() - v) < 5 * v * math.sqrt((kurt - 1) / N)
    assert stats.kurtosis(eps) > 0.5  # heavier tails than the Gaussian (excess kurtosis >= 1 for df <= 10)


def test_trip_noise_is_correlated_within_a_trip_only() -> None:
    """Trips of 4 edges: variance ``v``, covariance ``rho v`` within a trip, 0 between consecutive trips, each within
    5 standard errors (``v sqrt(2 / n)`` for the variance, ``v sqrt((1 + rho^2) / n)`` for a covariance)."""
    v, rho, trips = 4.0, 0.6, 50_000
    rng = np.random.default_rng(3)
    eps = np.stack([draw_noise("trip", 4, v, rng, trip_share=rho) for _ in range(trips)])
    cov = np.cov(eps.T)
    tol_var, tol_cov = 5 * v * math.sqrt(2 / trips), 5 * v * math.sqrt((1 + rho**2) / trips)
    assert np.all(np.abs(np.diag(cov) - v) < tol_var)
    off = cov[~np.eye(4, dtype=bool)]
    assert np.all(np.abs(off - rho * v) < tol_cov)
    between = float(np.mean(eps[1:, 0] * eps[:-1, 0]))
    assert abs(between) < 5 * v / math.sqrt(trips)


def test_environment_feedback_uses_its_noise_family(lg) -> None:
    """One route's feedback through ``observe``: mean the truth, variance ``noise_var`` (5 standard errors), and the
    trip family's edges move together."""
    env = make_environment(lg, "misspecified", {"truth": "gp", "noise": "trip", "trip_share": 0.8}, seed=1)
    rng = np.random.default_rng(4)
    edges = np.array([0, 1, 2])
    y = np.stack([env.observe(edges, rng) for _ in range(20_000)]) - env.true_mean_wh[edges]
    v = env.noise_var
    assert np.all(np.abs(y.var(axis=0) - v) < 5 * v * math.sqrt(2 / 20_000))
    assert np.corrcoef(y.T)[0, 1] == pytest.approx(0.8, abs=5 * (1 - 0.64) / math.sqrt(20_000))


def test_bad_parameters_are_one_line_errors() -> None:
    from evroute.environments import check_environment

    for params, msg in (
        ({"truth": "tree"}, "truth must be one of"),
        ({"noise": "cauchy"}, "noise must be one of"),
        ({"noise": "student-t", "df": 2.0}, "df must be > 2"),
        ({"trip_share": 1.5}, "trip_share must be in"),
        ({"noise_frac": 0.1}, "unknown parameters of the misspecified environment"),
    ):
        with pytest.raises(ParameterError, match=msg):
            check_environment("misspecified", params)
