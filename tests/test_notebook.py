"""The walk-through notebook runs end to end on a small synthetic city with a short horizon."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "walkthrough.ipynb"


def test_walkthrough_notebook_executes(tmp_path, monkeypatch):
    monkeypatch.setenv("EVROUTE_NB_NETWORK", "synthetic:150:1")
    monkeypatch.setenv("EVROUTE_NB_HORIZON", "4")
    monkeypatch.setenv("EVROUTE_NB_OUT", str(tmp_path))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
                            ).execute()
    assert (tmp_path / "regret.png").exists() and (tmp_path / "gp_ts_map.html").exists()
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "GP-TS: final cumulative regret" in text
