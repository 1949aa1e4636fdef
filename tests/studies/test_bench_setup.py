"""``studies/bench/bench_env_setup.py``: the side-by-side check measures the package it says it measures and compares
what the two make; the committed page is what its raw numbers render to."""

from __future__ import annotations

import json
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from studies.bench import env_setup as bench_setup
from studies.bench.env_setup_report import render

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "bench_env_setup.md"
DATA = ROOT / "docs" / "data" / "bench_env_setup.json"


def _git_ok() -> bool:
    if shutil.which("git") is None:
        return False
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True).returncode == 0


needs_git = pytest.mark.skipif(not _git_ok(), reason="needs a git checkout")


@pytest.mark.slow
def test_measure_times_every_stage_and_digests_what_it_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", "off")
    a = bench_setup.measure("synthetic:300:1")
    b = bench_setup.measure("synthetic:300:1")
    assert set(a["cpu_s"]) == set(bench_setup.STAGES) == set(a["wall_s"])
    assert a["cpu_total_s"] == pytest.approx(sum(a["cpu_s"].values()))
    assert a["digest"] == b["digest"]  # same seed, same numbers
    c = bench_setup.measure("synthetic:300:2")
    assert c["digest"]["network"] != a["digest"]["network"]
    assert c["digest"]["environment"] != a["digest"]["environment"]


def test_code_tree_swaps_the_package_and_restores_it(tmp_path: Path) -> None:
    import evroute
    import evroute.routes

    other = tmp_path / "other"
    shutil.copytree(Path(evroute.__file__).parent, other / "evroute", ignore=shutil.ignore_patterns("__pycache__"))
    marker = other / "evroute" / "routes.py"
    marker.write_text(marker.read_text() + "\nBENCH_MARKER = 'other'\n")
    tree = bench_setup.CodeTree(other)
    with tree.active():
        import evroute.routes as swapped

        assert getattr(swapped, "BENCH_MARKER", None) == "other"
        assert Path(str(sys.modules["evroute"].__file__)).resolve().is_relative_to(other.resolve())
    assert sys.modules["evroute.routes"] is evroute.routes
    assert not hasattr(sys.modules["evroute.routes"], "BENCH_MARKER")
    with tree.active():  # its modules are kept between activations
        assert sys.modules["evroute.routes"] is swapped


@pytest.mark.slow
@needs_git
def test_check_against_head_finds_the_same_numbers() -> None:
    lines: list[str] = []
    data = bench_setup.check(
        "synthetic:300:0",
        "HEAD",
        repeats=1,
        fresh_repeats=1,
        warm_repeats=1,
        warmup_network="synthetic:200:0",
        profiled=False,
        log=lines.append,
    )
    assert {(r["series"], r["code"]) for r in data["runs"]} == {
        (s, c) for s in ("cold", "warm", "fresh") for c in ("baseline", "current")
    }
    assert data["identical"] == {"cold": True, "warm": True, "fresh": True}
    assert len(lines) == 6
    page = render(data, "x.json", "cmd")
    assert "identical" in page and "DIFFERENT" not in page


def test_the_committed_page_is_what_its_numbers_render_to() -> None:
    if not DATA.is_file():
        pytest.skip("needs the source checkout")
    data = json.loads(DATA.read_text())
    script = runpy.run_path(str(ROOT / "studies" / "bench" / "bench_env_setup.py"))
    page = render(data, "docs/data/bench_env_setup.json", script["COMMAND"])
    assert page == PAGE.read_text(), "docs/bench_env_setup.md differs from its data: run the script's --report-only"
