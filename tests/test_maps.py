"""Exploration maps: counts from round records, folium HTML and static PNG."""

from __future__ import annotations

import pytest

pytest.importorskip("folium")

from evroute.experiments import ExperimentConfig, build_problem, load_rounds, run_experiment  # noqa: E402
from evroute.maps import drive_counts, exploration_map_html, exploration_map_png  # noqa: E402


def test_maps(tmp_path):
    cfg = ExperimentConfig(network="synthetic:150:1", route="A", model="bi", policy="ts", horizon=5)
    run_experiment(cfg, tmp_path / "run", progress=False)
    rounds = load_rounds(tmp_path / "run")
    pb = build_problem(cfg, 0)
    counts = drive_counts(pb.linegraph, rounds)
    assert counts.sum() == rounds["route_edges"].sum()
    assert counts[pb.route.start] == 5 and counts[pb.route.goal] == 5
    kw = dict(start=pb.route.start, goal=pb.route.goal, optimal=[pb.route.start, pb.route.goal], title="t")
    html = exploration_map_html(pb.linegraph, counts, tmp_path / "m.html", **kw).read_text()
    assert "driven 5x" in html and "optimal route" in html
    png = exploration_map_png(pb.linegraph, counts, tmp_path / "m.png", **kw)
    assert png.read_bytes()[:4] == b"\x89PNG"
