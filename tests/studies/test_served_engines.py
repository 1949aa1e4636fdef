"""``studies/bench/served_engines.py`` (issue 39, item 2): the served arcs and their Dijkstra costs are right, a real
engine's routes are checked against them (a corrupted route is caught), an engine that is not installed or exceeds
its CPU cap is recorded as such, and the page is rebuilt byte for byte from its committed data."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

import studies.bench.served_engines as se

ROOT = Path(__file__).resolve().parents[2]
needs_checkout = pytest.mark.skipif(not (ROOT / se.OUT).is_file(), reason="needs the source checkout")


@pytest.fixture(scope="module")
def arcs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("served") / "arcs.npz"
    info = se.served_arcs(2000, 12, path)
    assert info["network"] == "synthetic:2000:0" and info["edges"] > 1000
    return path


def test_served_arcs_reference_costs(arcs: Path) -> None:
    """The stored reference costs are SciPy's one-source Dijkstra, pair by pair (exact: the same arithmetic); the
    order is a permutation of the line-graph nodes; the served weights are non-negative reduced costs."""
    d = np.load(arcs)
    n = int(d["n"])
    indptr = np.r_[0, np.cumsum(np.bincount(d["tails"], minlength=n))]
    g = sp.csr_matrix((d["w"], d["heads"], indptr), shape=(n, n))
    for (s, t), ref in zip(d["pairs"].tolist(), d["ref"].tolist(), strict=True):
        assert dijkstra(g, directed=True, indices=s)[t] == ref
    assert np.array_equal(np.sort(d["order"]), np.arange(n))
    assert d["w"].min() >= 0


def test_cch_engine_agrees_and_a_wrong_route_is_caught(arcs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RoutingKit's CCH (the project's engine) meets every Dijkstra cost within its quantization bound ``n q``;
    a route that skips its last node is no path to the goal and reads as an infinite gap."""
    pytest.importorskip("routingkit_cch")
    r = se.measure_engine("routingkit-cch", arcs)
    assert r["queries"] == 12 and r["build_cpu_s"] > 0 and r["query_cpu_s"] >= 0
    assert r["max_gap"] <= r["error_bound"]
    real = se._engine

    def broken(*args: Any) -> Any:
        route = real(*args)
        return lambda s, t: route(s, t)[:-1] if len(route(s, t)) > 1 else route(s, t)

    monkeypatch.setattr(se, "_engine", broken)
    assert se.measure_engine("routingkit-cch", arcs)["max_gap"] == np.inf


def test_child_records_missing_package_and_cpu_cap(arcs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine whose module cannot be imported is not run; a child over its CPU cap is killed and recorded."""
    monkeypatch.setitem(se.MODULES, "pandana", "no_such_module_for_served_engines")
    assert se._child("pandana", arcs, 60)["status"].startswith("not installed")
    pytest.importorskip("routingkit_cch")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setattr(se, "_cpu_s", lambda pid: 1e9)  # as if the child had run for 30 years
    assert se._child("routingkit-cch", arcs, 60)["status"] == "over the 60 s CPU cap"


@needs_checkout
def test_page_rebuilds_from_data(tmp_path: Path) -> None:
    out = tmp_path / "page.md"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "studies.bench.served_engines", "--report-only", "--out", str(out)]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert out.read_text() == (ROOT / se.OUT).read_text()


def test_bounds_follow_the_numbers() -> None:
    """Growth exponents and extrapolations are the log-log slopes of the data; a cap gives a linear lower bound; the
    command line names the engines and caps of each group of sizes."""
    ok = {"status": "ok", "build_cpu_s": 1.0, "peak_mb": 1.0, "max_gap": 0.0, "error_bound": 1.0}
    data = {
        "sizes": [10_000, 100_000],
        "machine": "m",
        "commit": "c",
        "results": {
            "10000": {"network": "a", "edges": 10_000, "turns": 1, "dissection_order_cpu_s": 0.1,
                      "engines": {"routingkit-cch": ok | {"query_cpu_s": 1e-3}, "pandana": ok | {"query_cpu_s": 1e-3}}},
            "100000": {"network": "b", "edges": 100_000, "turns": 1, "dissection_order_cpu_s": 1.0,
                       "engines": {"routingkit-cch": ok | {"build_cpu_s": 100.0, "query_cpu_s": 2e-3},
                                   "pandana": {"status": "over the 50 s CPU cap"}}},
        },
    }  # fmt: skip
    text = "\n".join(se.bounds(data))
    # build 1 -> 100 s over 10x nodes: exponent 2, 100 s * 10.12^2 at 1M; query 1 -> 2 ms: exponent log10(2)
    assert "build grows as n^2.00" in text and f"~{100 * (1_012_093 / 100_000) ** 2:.3g} s at 1M" in text
    q = 2e-3 * (1_012_093 / 100_000) ** np.log10(2.0)
    assert f"query grows as n^0.30: ~{q * 1e3:.3g} ms at 1M (meets 5 ms)" in text
    assert f"at least {50 * 1_012_093 / 100_000:.3g} s at 1M" in text
    assert se._commands(data).endswith("--edges 10000 100000 --engines routingkit-cch pandana --cap-s 50`")
