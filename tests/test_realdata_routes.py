"""Named routes and short bandit runs on the real networks (need EVROUTE_DATA; skipped otherwise)."""

import numpy as np
import pytest
from netfixtures import need_osm

from evroute.experiments import ExperimentConfig, load_rounds, run_experiment
from evroute.experiments.runner import load_linegraph
from evroute.oracle import is_valid_route
from evroute.routes import resolve_route, route_table

pytestmark = pytest.mark.realdata


@pytest.mark.slow
@pytest.mark.parametrize("name", ["monaco", "luxembourg"])
def test_named_routes_resolve_in_the_largest_scc(name):
    need_osm(name)
    lg = load_linegraph(name)
    for route in ("A", "B"):
        spec = resolve_route(lg, name, route)
        entry = route_table()[name][route]
        assert (spec.start_id, spec.goal_id) == (entry["start"], entry["goal"])
        assert spec.start != spec.goal and entry["why"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["monaco", "luxembourg"])
def test_short_bi_ts_run(name, tmp_path):
    need_osm(name)
    cfg = ExperimentConfig(network=name, route="B", model="bi", policy="ts", horizon=5, seeds=(0,))
    summary = run_experiment(cfg, tmp_path / name, progress=False)
    df = load_rounds(tmp_path / name)
    lg = load_linegraph(name)
    for route in df.route:
        assert is_valid_route(lg, np.array([lg.network.index_of(e) for e in route.split()]))
    assert np.isfinite(summary["mean_final_regret_wh"])
