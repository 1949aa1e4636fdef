"""``studies/bench/benchmark_scale.py`` (issue 39, item 6): the page is rebuilt byte for byte from its committed data,
its verdicts and growth exponents follow from the numbers, a child that times out or runs out of memory is recorded
as such, and one real (small) measurement has every step with CCH and Dijkstra agreeing."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from studies.bench.benchmark_scale import _child
from studies.bench.scale_junction import JUNCTION_STEPS
from studies.bench.scale_measure import SETUP_STAGES, measure
from studies.bench.scale_report import LATER_STEPS, render, slope, value

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "benchmark_scale.md"
DATA = ROOT / "docs" / "data" / "benchmark_scale.json"
needs_checkout = pytest.mark.skipif(not DOC.is_file(), reason="needs the source checkout")


def _report(data: Path, out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [
        sys.executable,
        "-m",
        "studies.bench.benchmark_scale",
        "--report-only",
        "--data",
        str(data),
        "--out",
        str(out),
    ]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)


@needs_checkout
def test_page_is_rebuilt_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "page.md"
    res = _report(DATA, out)
    assert res.returncode == 0, res.stderr
    assert out.read_bytes() == DOC.read_bytes()


def test_missing_data_is_one_error_line_and_nothing_written(tmp_path: Path) -> None:
    res = _report(tmp_path / "absent.json", tmp_path / "page.md")
    assert res.returncode == 2 and res.stderr.startswith("evroute: error: ")
    assert len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "page.md").exists()


def _run(edges: int, cpu: float, mb: float) -> dict[str, Any]:
    """A cold run whose every step costs ``cpu`` CPU seconds, peaking at ``mb``."""
    steps = {s: {"cpu_s": cpu, "wall_s": 2 * cpu, "peak_mb": mb} for s in SETUP_STAGES + LATER_STEPS}
    return {
        "status": "ok",
        "edges": edges,
        "turns": 3 * edges,
        "steps": steps,
        "setup_peak_mb": mb,
        "peak_mb": mb,
        "load_start": 1.0,
        "load_end": 1.0,
        "cpu_total_s": 13 * cpu,
        "child_wall_s": 26 * cpu,
        "cch_vs_dijkstra": {"max_cost_gap": 0.0, "error_bound": 1.0},
    }


def _data(cpu_at_1m: float) -> dict[str, Any]:
    sizes = {}
    for n, cpu in ((10_000, cpu_at_1m / 100), (1_000_000, cpu_at_1m)):
        cold = _run(n, cpu, n / 1000)
        warm = copy.deepcopy(cold)
        sizes[str(n)] = {"requested_edges": n, "cold": cold, "warm": warm}
    return {"command": "cmd", "machine": "m", "sizes": sizes}


def test_verdicts_and_exponents_follow_from_the_numbers() -> None:
    # every step linear in the edges: exponent 1.00; 1M steps at 1 ms CPU: all time targets met (cold set-up 6 ms)
    page = render(_data(0.001))
    assert "| BI-TS round (CPU s) | 1.00 |" in page
    assert "| BI-TS round ≤ 50 ms (CPU) | 1 ms | met |" in page
    assert "| cold set-up peak memory ≤ 2 GB | 1,000 MB | met |" in page
    # 1M steps at 60 ms CPU: the round, the query and the set-up targets are missed, reach (<= 200 ms) is still met
    page = render(_data(0.060))
    assert "| BI-TS round ≤ 50 ms (CPU) | 60 ms | missed |" in page
    assert "| reach ≤ 200 ms (CPU) | 60 ms | met |" in page
    assert "| warm route query against a served model ≤ 5 ms (CCH as served, CPU) | 60 ms | missed |" in page
    assert "| 5M edges run in ≤ 8 GB | — | not measured |" in page
    d = _data(0.001)
    d["sizes"]["1000000"]["cold"]["cch_vs_dijkstra"]["max_cost_gap"] = 2.0  # beyond the stated bound
    assert "largest gap 2 Wh (stated bounds 1 to 1 Wh) | missed |" in render(d)
    d["sizes"]["1000000"]["cold"] = {"status": "timed out after 5 s"}
    assert "| BI-TS round ≤ 50 ms (CPU) | — | not measured (timed out after 5 s) |" in render(d)


def test_slope_is_the_log_log_growth() -> None:
    assert slope(1e4, 2.0, 1e6, 2.0 * 100**1.5) == pytest.approx(1.5, rel=1e-12)
    assert slope(1e4, 0.0, 1e6, 1.0) is None
    assert value({"status": "failed"}, "setup") is None


@pytest.mark.slow
def test_a_child_past_its_limits_is_recorded_not_guessed(tmp_path: Path) -> None:
    assert _child(["10000", "0", "full"], str(tmp_path), 14.0, 0.01)["status"] == "timed out after 0 s"
    res = _child(["10000", "0", "full"], str(tmp_path), 0.05, 120.0)  # 50 MB: numpy cannot even load
    assert res["status"].startswith("failed (exit 1, cap 0.05 GB)")


@pytest.mark.slow
def test_one_small_measurement_has_every_step_and_cch_agrees_with_dijkstra(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path))
    res = measure(3000, 0, queries=5)
    assert set(res["steps"]) == set(SETUP_STAGES + LATER_STEPS)
    assert all(r["cpu_s"] >= 0 and r["peak_mb"] > 0 for r in res["steps"].values())
    gap = res["cch_vs_dijkstra"]
    assert gap["max_cost_gap"] <= gap["error_bound"]  # the bound of evroute.cch (quantization), not a tolerance
    j = res["junction_cch"]  # the junction graph's CCH against Dijkstra on the same pairs, within its own bound
    assert j["max_cost_gap"] <= j["error_bound"] and 0 <= j["fallbacks"] <= j["queries"]
    assert abs(res["edges"] - 3000) <= 0.05 * 3000  # synthetic_city's size tolerance
    json.dumps(res)  # what the child prints


@pytest.mark.slow
def test_one_small_country_measurement_has_every_step(monkeypatch, tmp_path: Path) -> None:
    """Every consumer the benchmark drives (environment draw, BI-TS bandit, CCH, Dijkstra, reach) takes the synthetic
    country, CCH and Dijkstra agree, and the run records what the country is made of."""
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path))
    res = measure(3000, 0, queries=5, family="synthetic-country")
    assert res["network"] == "synthetic-country:3000:0"
    assert set(res["steps"]) == set(SETUP_STAGES + LATER_STEPS)
    gap = res["cch_vs_dijkstra"]
    assert gap["max_cost_gap"] <= gap["error_bound"]
    st = res["country_stats"]
    assert st["towns"] >= 2 and st["hamlets"] > 0 and 0.0 < st["motorway_share"] < 0.1
    json.dumps(res)


def test_bounds_section_follows_from_the_numbers() -> None:
    assert "Every target at 1M edges is met." in render(_data(0.001))
    d = _data(0.060)
    one = d["sizes"]["1000000"]["cold"]
    one["route_settled_share"], one["reach_reached_share"] = 0.5, 1.0
    page = render(d)
    # the round (60 ms) against a Dijkstra of 60 ms over 3M turns: 50,000 arcs per ms, half the graph settled: 30 ms
    assert "settles 50.0% of the 1,000,000 line-graph nodes" in page
    # the round's 60 ms over the 1.5M turns its search must scan: 40 ns per turn; SciPy's 60 ms over 3M: 20 ns
    assert "is 60 ms, that is 40 ns per turn its search must scan, against 20 ns per turn for SciPy's" in page
    assert "would have to scan 30,000 arcs per ms" in page  # 1.5M arcs in 50 ms
    assert "reach" not in page.split("## What bounds")[1].split("## Growth")[0]  # met: not listed
    assert "lazy bidirectional" not in page  # not measured: not stated
    # the lazy search's probe, when recorded: its share, draws and time per draw, against the round's 60 ms
    one["route_lazy"] = {"cpu_s": 0.3, "settled_share": 0.8, "draws": 600_000, "arcs": 2_000_000}
    page = render(d)
    assert "settles 80.0% of the nodes on route A" in page and "draws 600,000 weights in 300 ms (500 ns" in page
    assert "more than the round with every edge drawn" in page
    one["route_lazy"]["cpu_s"] = 0.03
    assert "less than the round with every edge drawn" in render(d)
    # the compiled full draw's parts and the goal-directed bound, when recorded
    assert "NumPy/SciPy" in page and "goal-directed" not in page
    one["round_parts"] = {
        "normals": 0.01, "weights": 0.01, "search": 0.03, "graph": "junction", "search_nodes": 300_000,
        "search_arcs": 1_000_000, "fallbacks": 0,
    }  # fmt: skip
    jpage = render(d)
    # on the junction graph: the round's 60 ms over the 500k arcs its search must scan (half settled): 120 ns an arc
    assert "120 ns per arc of the junction graph its search must scan" in jpage
    assert "would have to scan 10,000 arcs per ms" in jpage  # 1M arcs, half of them, in 50 ms
    assert "300,000 nodes and 1,000,000 arcs; 0 of the measured searches fell back" in jpage
    one["round_parts"] = {"normals": 0.014, "weights": 0.040, "search": 0.080}
    one["route_goal_directed"] = {
        "sigma_over_mean": [0.16, 0.29, 0.5],
        "ks": [
            {"k": 3.0, "bound_share": 0.112, "settled_share": 0.9999, "exceptions": 1366.2},
            {"k": 4.0, "bound_share": 0.011, "settled_share": 0.99991, "exceptions": 32.1},
        ],
    }
    page = render(d)
    assert "the policy's 14 ms of normals, 40 ms for the posterior, draw and rectified weights, 80 ms for" in page
    assert "sigma is 29% of |mu − p| at the median (16%-50% from" in page
    assert "1.1% of the route's cost for k = 4 (32 exceptions" in page and "11.2% for k = 3 (1,366)" in page
    assert "A* would settle 100.0% of the nodes (k = 4" in page


def test_a_size_without_cch_renders_dashes_and_says_why() -> None:
    d = _data(0.001)
    big = _run(5_000_000, 0.5, 7000.0)
    for s in ("CCH preprocessing", "CCH customization", "CCH query"):
        del big["steps"][s]
    del big["cch_vs_dijkstra"]
    d["sizes"]["5000000"] = {"requested_edges": 5_000_000, "cold": big, "warm": copy.deepcopy(big), "cch_skipped": "x"}
    page = render(d)
    assert "| CCH query | " in page and page.split("| CCH query | ")[1].split("\n")[0].endswith("| — |")
    assert "* 5,000,000 edges: x." in page
    assert "| 5M edges run in ≤ 8 GB | 7,000 MB | met |" in page
    assert "largest gap 0 Wh (stated bounds 1 to 1 Wh) | met |" in page  # agreement from the sizes with a CCH


@pytest.mark.slow
def test_a_measurement_without_cch_records_the_search_shares(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path))
    res = measure(3000, 0, queries=5, cch=False)
    assert set(res["steps"]) == set(SETUP_STAGES + LATER_STEPS) - {
        "CCH preprocessing",
        "CCH customization",
        "CCH query",
        *JUNCTION_STEPS,
    }
    assert 0.0 < res["route_settled_share"] <= 1.0 and 0.0 <= res["reach_reached_share"] <= 1.0
    assert "cch_vs_dijkstra" not in res
    lazy = res["route_lazy"]  # the lazy bidirectional search on route A (numba is a dependency)
    assert 0.0 < lazy["settled_share"] <= 2.0 and lazy["draws"] >= 2 and lazy["cpu_s"] >= 0
    assert res["round_parts"] is None  # below LAZY_TS_MIN_ARMS: no compiled full draw to time
    g = res["route_goal_directed"]
    from scipy.stats import norm

    for row in g["ks"]:  # A*'s bound and the share it must settle at least; the expected exceptions E Phi(-k)
        assert 0.0 <= row["bound_share"] and 0.0 < row["settled_share"] <= 1.0
        assert row["exceptions"] == pytest.approx(res["edges"] * norm.cdf(-row["k"]), rel=1e-12)
    lo, med, hi = g["sigma_over_mean"]
    assert 0.0 < lo <= med <= hi


@pytest.mark.slow
def test_round_parts_time_the_compiled_full_draw(monkeypatch, tmp_path: Path) -> None:
    """From LAZY_TS_MIN_ARMS (lowered) the bandit runs compiled full-draw rounds and the probe times their parts."""
    import evroute.bandit as B

    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path))
    monkeypatch.setattr(B, "LAZY_TS_MIN_ARMS", 0)
    monkeypatch.setattr(B, "LAZY_TS_EXPECTED_SHARE", -1.0)
    res = measure(3000, 0, queries=5, cch=False)
    parts = res["round_parts"]
    assert set(parts) == {"normals", "weights", "search", "graph", "search_nodes", "search_arcs", "fallbacks"}
    assert all(parts[k] >= 0.0 for k in ("normals", "weights", "search"))
    assert parts["graph"] == "junction" and parts["fallbacks"] == 0  # the city's turns meet at junctions
    assert 0 < parts["search_nodes"] < res["edges"] <= parts["search_arcs"]  # no turn restrictions: an arc per edge


def test_country_beside_the_city_side_by_side() -> None:
    """With the country's results (key ``country``), the targets table shows both networks' verdicts side by side,
    the city's sections stay, and the country's own sections follow from its numbers."""
    d = _data(0.060)
    city_only = render(d)
    d["country"] = {"sizes": _data(0.001)["sizes"], "command": "cmd --network country"}
    page = render(d)
    assert "| BI-TS round ≤ 50 ms (CPU) | 60 ms | missed | 1 ms | met |" in page
    assert "| target (issue 39, Done when) | city: measured | city: verdict | country: measured |" in page
    city_part = page.split("## The synthetic country")[0]
    assert city_part.split("## What bounds")[1].rstrip() == city_only.split("## What bounds")[1].rstrip()
    country = page.split("## The synthetic country")[1]
    assert "Generated by `cmd --network country`" in country and "Every target at 1M edges is met." in country
    assert "CCH: these rows cut each cell through the median of its edges" in country  # runs without the record
    for e in d["country"]["sizes"].values():
        e["cold"]["cch_cut_quantiles"] = [0.3, 0.5, 0.7]
    country = render(d).split("## The synthetic country")[1]
    assert "CCH: these rows cut each cell at the best of the quantiles 0.3, 0.5, 0.7 of its edges." in country
    # the country's CCH bound names its root separators and their growth (a grid's exponent is 0.5)
    for n, sep in (("10000", 10.0), ("1000000", 100.0)):
        d["country"]["sizes"][n]["cold"]["steps"]["CCH query"]["cpu_s"] = 0.006
        del d["country"]["sizes"][n]["cold"]["steps"]["junction CCH query"]  # a run before the junction graph
        d["country"]["sizes"][n]["cold"]["cch_search_space"] = {
            "root_separator": sep,
            "separator_share": 0.01,
            "ancestor_separator_nodes_median": 3 * sep,
        }
    country = render(d).split("## The synthetic country")[1]
    assert "root separators 10 at 10,000 edges, 100 at 1,000,000 edges (growth exponent 0.50" in country
    assert "through the country crosses" in country and "through the grid" not in country


def test_cch_orders_section_follows_from_the_numbers() -> None:
    d = _data(0.001)
    base = {"spec": "synthetic-country:100000:0", "edges": 100_000, "status": "ok", "distance_digest": 7}
    times = {"order_s": 1.0, "contraction_s": 0.5, "customization_s": 0.25, "query_s": 2e-4}
    d["cch_orders"] = {
        "a median": {**base, **times, "order": "median", "root_separator": 90},
        "b refined": {**base, **times, "order": "refined", "root_separator": 40, "query_s": 1e-4},
        "c inertial": {**base, **times, "order": "inertial"},
    }
    page = render(d)
    section = page.split("## CCH orders")[1]
    assert "| `synthetic-country:100000:0` (100,000 edges) | median | 1 s | 500 ms | 250 ms | 200 µs | 90 |" in section
    assert "| refined | 1 s | 500 ms | 250 ms | 100 µs | 40 |" in section
    assert "| inertial | 1 s | 500 ms | 250 ms | 200 µs | — |" in section
    assert "All orders give the same distances" in section
    d["cch_orders"]["c inertial"]["distance_digest"] = 8
    assert "**The orders' distances differ**" in render(d)


def test_the_page_names_the_commit_of_each_size_and_never_guesses_one() -> None:
    from studies.bench.scale_report import commits_line

    d = {"sizes": {"1000000": {"commit": "abc1234"}, "10000": {}, "5000000": {"commit": "abc1234"}}}
    line = commits_line(d)
    assert line == (
        "Code measured: 10,000 edges: commit not recorded (measured before the benchmark stored it); "
        "1,000,000, 5,000,000 edges at `abc1234`."
    )
    assert commits_line({"sizes": {}}) == "Code measured: no size measured."


def test_the_served_query_is_the_junction_graphs_where_measured() -> None:
    """The served-query target reads the junction-graph CCH's query where a run measured it (else the line graph's),
    its bound names the junction graph and its fallbacks, and the side-by-side lines follow from the numbers."""
    d = _data(0.060)
    one = d["sizes"]["1000000"]["cold"]
    one["steps"]["junction CCH query"]["cpu_s"] = 0.002
    one["junction_cch"] = {
        "junctions": 250_000,
        "hybrid_nodes": 250_100,
        "queries": 200,
        "fallbacks": 3,
        "error_bound": 0.5,
        "max_cost_gap": 0.01,
    }
    page = render(d)
    assert "| warm route query against a served model ≤ 5 ms (CCH as served, CPU) | 2 ms | met |" in page
    assert "query 60 ms → 2 ms (line graph → junction graph, 250,100 nodes); 3 of 200 queries fell back" in page
    assert "largest cost gap to Dijkstra 0.01 Wh (stated bound 0.5 Wh)" in page
    one["steps"]["junction CCH query"]["cpu_s"] = 0.007  # missed: the bound names the junction graph
    bounds = render(d).split("## What bounds")[1].split("## Growth")[0]
    assert "the junction-graph CCH (`evroute.cch_junction`: 250,000 junctions, 250,100 hybrid nodes" in bounds
    assert "3 of 200 queries falling back to the line graph's (60 ms)" in bounds
    del one["steps"]["junction CCH query"], one["junction_cch"]  # a run before it: the line graph's query
    assert "| warm route query against a served model ≤ 5 ms (CCH as served, CPU) | 60 ms | missed |" in render(d)
