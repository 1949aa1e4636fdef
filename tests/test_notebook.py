"""The walk-through notebook runs end to end: on a small synthetic city with a short horizon, and on Monaco
(in minutes, no exact integer program) when ``EVROUTE_DATA`` holds ``monaco.osm``."""

from __future__ import annotations

import os
from pathlib import Path

import ipykernel  # noqa: F401 - the kernel the notebook runs in
import nbclient
import nbformat
import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "walkthrough.ipynb"


def _execute(tmp_path: Path, monkeypatch, network: str, horizon: int, timeout_s: int) -> str:
    monkeypatch.setenv("EVROUTE_NB_NETWORK", network)
    monkeypatch.setenv("EVROUTE_NB_HORIZON", str(horizon))
    monkeypatch.setenv("EVROUTE_NB_OUT", str(tmp_path))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(
        nb, timeout=timeout_s, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    assert (tmp_path / "regret.png").exists() and (tmp_path / "gp_ts_map.html").exists()
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


@pytest.mark.slow
def test_walkthrough_notebook_executes(tmp_path, monkeypatch):
    text = _execute(tmp_path, monkeypatch, "synthetic:150:1", 4, 300)
    assert "GP-TS: final cumulative regret" in text and "regret reference:" in text


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.skipif(not os.environ.get("EVROUTE_DATA"), reason="EVROUTE_DATA not set (needs monaco.osm)")
def test_walkthrough_notebook_on_monaco(tmp_path, monkeypatch):
    if not (Path(os.environ["EVROUTE_DATA"]) / "monaco.osm").is_file():
        pytest.skip("monaco.osm not in EVROUTE_DATA")
    text = _execute(tmp_path, monkeypatch, "monaco", 20, 900)  # each cell well within 15 minutes
    assert "monaco:" in text and "GP-TS: final cumulative regret" in text
