"""``studies/bench/junction_cch.py``: the page is rebuilt byte for byte from its committed data, missing data is one
error line with nothing written, and one small real measurement agrees between the two engines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "junction_cch.md"
DATA = ROOT / "docs" / "data" / "junction_cch.json"


def _report(data: Path, out: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "studies.bench.junction_cch", "--report-only", "--data", str(data), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.skipif(not DOC.is_file(), reason="needs the source checkout")
def test_page_is_rebuilt_byte_for_byte(tmp_path: Path) -> None:
    res = _report(DATA, tmp_path / "page.md")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "page.md").read_bytes() == DOC.read_bytes()


def test_missing_data_is_one_error_line_and_nothing_written(tmp_path: Path) -> None:
    res = _report(tmp_path / "absent.json", tmp_path / "page.md")
    assert res.returncode == 2 and res.stderr.startswith("evroute: error: ")
    assert len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "page.md").exists()


def test_one_small_measurement_agrees_between_the_engines() -> None:
    pytest.importorskip("routingkit_cch")
    from studies.bench.junction_cch import measure, render

    r = measure("synthetic:3000:0", 20)
    assert r["turn_free"] and r["fallbacks"] <= r["pairs"] and r["gap_within_bounds"]
    assert r["hybrid_nodes"] >= r["junctions"] and r["new_query"]["median_s"] > 0
    assert "`synthetic:3000:0`" in render({"synthetic:3000:0": r})
