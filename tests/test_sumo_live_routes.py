"""The live-routes study's table helpers (:mod:`evroute.experiments.sumo_live_routes`); its report is pinned byte for
byte by ``tests/test_results_rebuild.py``."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import scipy.sparse as sp

from evroute.experiments.sumo_live_routes import (
    TRAV,
    TRIPS,
    append_rows,
    missing_tables,
    next_edges,
    prediction_fit,
    replace_network_rows,
)


def test_append_rows_writes_the_header_once_in_column_order(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    append_rows(path, [], ("a", "b"))
    assert not path.exists()  # nothing to append: no file
    append_rows(path, [{"b": 1, "a": 2}], ("a", "b"))
    append_rows(path, [{"a": 3}], ("a", "b"))
    assert path.read_text().splitlines() == ["a,b", "2,1", "3,"]


def test_replace_network_rows_keeps_the_other_networks(tmp_path: Path) -> None:
    path = tmp_path / "arms.csv"
    replace_network_rows(path, pd.DataFrame({"network": ["monaco", "luxembourg"], "x": [1, 2]}), "monaco")
    replace_network_rows(path, pd.DataFrame({"network": ["monaco"], "x": [5]}), "monaco")
    got = pd.read_csv(path)
    assert sorted(zip(got["network"], got["x"], strict=True)) == [("luxembourg", 2), ("monaco", 5)]


def test_missing_tables_names_what_the_report_needs(tmp_path: Path) -> None:
    (tmp_path / TRIPS).write_text("trip\n")
    missing = missing_tables(tmp_path)
    assert str(tmp_path / TRIPS) not in missing and str(tmp_path / TRAV) in missing and len(missing) == 4


def test_next_edges_matches_only_a_unique_legal_successor() -> None:
    # edges 0 -> 1 and 0 -> 2 are legal; traversal 0 (edge 0) ends at t = 10, when edge 1 is entered (legal) and
    # edge 3 (not a successor); traversal 3 (edge 0) ends at t = 30, when edges 1 and 2 are both entered (a tie)
    adj = sp.coo_matrix(([1, 1], ([0, 0], [1, 2])), shape=(4, 4))
    day = pd.DataFrame(
        {"edge": [0, 1, 3, 0, 1, 2], "entry_s": [0.0, 10.0, 10.0, 20.0, 30.0, 30.0], "travel_s": [10.0, 5, 5, 10, 5, 5]}
    )
    got = next_edges(day, SimpleNamespace(adjacency=adj))
    assert got.tolist() == [1, -1, -1, -1, -1, -1]


def test_prediction_fit_bias_rmse_r2_and_coverage() -> None:
    live = np.array([1.0, 2.0, 3.0, 4.0])
    f = prediction_fit(live, live + 1.0, sd=np.array([1.0, 1.0, 0.1, 0.1]))
    assert f["n"] == 4 and f["bias"] == 1.0 and f["rmse"] == 1.0
    assert f["r2"] == 1.0 - 4.0 / 5.0 and f["cover"] == 0.5
    assert np.isnan(prediction_fit(live, live)["cover"])
