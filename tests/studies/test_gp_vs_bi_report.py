"""docs/results/gp_vs_bi.md is rebuilt from its committed per-seed data: every number and sentence comes from the CSV.

Runs the study script with ``--report-only`` on ``docs/results/data/gp_vs_bi_finals.csv`` into a temporary file and
compares it with the committed report, line for line except the ``Command:`` line (which records the study run, not
the rebuild).  A hand-edited number, a stale sentence or a CSV changed without regenerating the report fails here.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "docs" / "results" / "gp_vs_bi.md"
DATA = ROOT / "docs" / "results" / "data" / "gp_vs_bi_finals.csv"
SCRIPT = ROOT / "studies" / "gp_vs_bi" / "run.py"

pytestmark = pytest.mark.skipif(not SCRIPT.is_file(), reason="needs the source checkout")


def _without_command(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("Command: `")]


@pytest.mark.slow
def test_report_rebuilds_from_committed_per_seed_data(tmp_path: Path) -> None:
    out = tmp_path / "gp_vs_bi.md"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, "-m", "studies.gp_vs_bi.run", "--report-only", "--data", str(DATA), "--out", str(out)],
        check=True,
        cwd=ROOT,
        env=env,
        capture_output=True,
    )
    committed = REPORT.read_text()
    assert committed.count("Command: `") >= 1  # the study's commands are recorded at the top
    assert _without_command(out.read_text()) == _without_command(committed)


def test_committed_data_pairs_every_comparison_by_seed() -> None:
    rows = list(csv.DictReader(DATA.open(newline="")))
    assert rows
    seen: dict[tuple[str, str], list[int]] = {}
    for r in rows:
        seen.setdefault((r["route"], r["run"]), []).append(int(r["seed"]))
        assert r["init"] in {"default", "oracle", "oracle-v1"}
        assert (r["init"] == "oracle-v1") == r["run"].endswith("-ORACLE-V1")  # the earlier oracle is named apart
    for seeds in seen.values():
        assert len(seeds) == len(set(seeds)), "a seed is recorded twice for one run"


def test_merge_replaces_a_rerun_seed_and_keeps_the_design_order(tmp_path: Path) -> None:
    from studies.gp_vs_bi.runner import FIELDS, merge, read_csv, write_csv

    def row(route: str, run: str, seed: int, final: str) -> dict[str, object]:
        return {"route": route, "run": run, "seed": seed, "final_regret_wh": final}

    old = [row("monaco:A", "GP-EXACT-TS", 1, "5"), row("monaco:A", "BI-TS", 0, "3"), row("new:X", "BI-TS", 0, "9")]
    new = [row("monaco:A", "GP-EXACT-TS", 1, "4"), row("synthetic:2000:0:A", "BI-TS", 2, "1")]
    merged = merge(old, new)
    assert [(r["route"], r["run"], r["seed"], r["final_regret_wh"]) for r in merged] == [
        ("synthetic:2000:0:A", "BI-TS", 2, "1"),  # routes in ROUTES order, unknown routes last
        ("monaco:A", "BI-TS", 0, "3"),  # variants in VARIANTS order
        ("monaco:A", "GP-EXACT-TS", 1, "4"),  # the re-run seed replaces the stored one
        ("new:X", "BI-TS", 0, "9"),
    ]
    assert {r["max_cv"] for r in merged} == {"1"}  # filled in from the variant where a row lacks it
    path = tmp_path / "finals.csv"
    write_csv(path, merged)
    back = read_csv(path)
    assert list(back[0]) == list(FIELDS) and len(back) == 4
    assert back[2]["final_regret_wh"] == "4" and back[2]["refit_first"] == ""
