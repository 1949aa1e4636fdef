"""Named routes and short bandit runs on the real networks (need EVROUTE_DATA; skipped otherwise)."""

import os
from pathlib import Path

import numpy as np
import pytest

from evroute.experiments import ExperimentConfig, load_rounds, run_experiment
from evroute.experiments.runner import load_linegraph
from evroute.oracle import is_valid_route
from evroute.routes import resolve_route, route_table

pytestmark = pytest.mark.realdata


def _need(name: str) -> None:
    data = os.environ.get("EVROUTE_DATA")
    if not data:
        pytest.skip("EVROUTE_DATA is not set (point it at the folder with monaco.osm / luxembourg.osm)")
    if not (Path(data) / f"{name}.osm").is_file():
        pytest.skip(f"{name}.osm is not in EVROUTE_DATA={data}")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["monaco", "luxembourg"])
def test_named_routes_resolve_in_the_largest_scc(name):
    _need(name)
    lg = load_linegraph(name)
    for route in ("A", "B"):
        spec = resolve_route(lg, name, route)
        entry = route_table()[name][route]
        assert (spec.start_id, spec.goal_id) == (entry["start"], entry["goal"])
        assert spec.start != spec.goal and entry["why"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["monaco", "luxembourg"])
def test_short_bi_ts_run(name, tmp_path):
    _need(name)
    cfg = ExperimentConfig(network=name, route="B", model="bi", policy="ts", horizon=5, seeds=(0,))
    summary = run_experiment(cfg, tmp_path / name, progress=False)
    df = load_rounds(tmp_path / name)
    lg = load_linegraph(name)
    for route in df.route:
        assert is_valid_route(lg, np.array([lg.network.index_of(e) for e in route.split()]))
    assert np.isfinite(summary["mean_final_regret_wh"])
