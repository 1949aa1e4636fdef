"""Benchmark pages generated from committed measurements: ``docs/benchmark_gp.md`` is what
``studies/bench/benchmark_gp_goals.py report`` writes from ``docs/data/benchmark_gp/`` (and
``docs/data/bench_env_setup.json``), byte for byte, so a number edited by hand or a sentence that no longer follows
from its data fails; a tampered measurement changes the page."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmark_gp.md"
pytestmark = pytest.mark.skipif(not DOC.is_file(), reason="needs the source checkout")


def _report(data: Path, out: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "studies.bench.benchmark_gp_goals", "report", "--data", str(data), "--out", str(out)]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)


def test_benchmark_gp_page_is_rebuilt_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "benchmark_gp.md"
    res = _report(Path("docs/data/benchmark_gp"), out)
    assert res.returncode == 0, res.stderr
    assert out.read_text() == DOC.read_text()


def test_a_changed_measurement_changes_the_page_and_missing_data_is_one_error(tmp_path: Path) -> None:
    data = tmp_path / "data" / "benchmark_gp"
    shutil.copytree(ROOT / "docs" / "data" / "benchmark_gp", data)
    for extra in ("bench_env_setup.json", "fig2_paper_references.json"):
        if (ROOT / "docs" / "data" / extra).exists():
            shutil.copy(ROOT / "docs" / "data" / extra, data.parent / extra)
    rounds = json.loads((data / "rounds.json").read_text())
    rounds["results"][0]["cpu"]["rest"] = [v + 100.0 for v in rounds["results"][0]["cpu"]["rest"]]
    (data / "rounds.json").write_text(json.dumps(rounds))
    out = tmp_path / "page.md"
    assert _report(data, out).returncode == 0
    assert out.read_text() != DOC.read_text()
    (data / "rounds.json").unlink()
    res = _report(data, tmp_path / "none.md")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "none.md").exists()
