"""The live-routes study's table helpers (:mod:`studies.sumo_live_routes.runner`); its report is pinned byte for
byte by ``tests/studies/test_results_rebuild.py``."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from studies.sumo_live_routes.runner import (
    CORR_LAGS,
    TRAV,
    TRIPS,
    VARIANTS,
    append_rows,
    missing_tables,
    next_edges,
    prediction_fit,
    replace_network_rows,
    route_predictions,
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


def _tables(with_slope: bool) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Two live trips of two and three arms on network ``n`` (turn arms with enough traversals), every table column
    :func:`route_predictions` reads, and a correlation table of rho 0.5 for every lag."""
    trips = pd.DataFrame(
        {
            "network": "n", "trip": ["a", "b"], "od": 0, "kinds": "shortest", "route": ["r1", "r2"], "slot": 0,
            "ok": True, "speed_factor": [1.2, 0.9], "reduced_wh": [30.0, 50.0], "battery_wh": [31.0, 52.0],
            "travel_s": [60.0, 90.0],
        }
    )  # fmt: skip
    trav = pd.DataFrame(
        {
            "trip": ["a", "a", "b", "b", "b"], "k": [0, 1, 0, 1, 2], "network": "n", "edge": list("xyxyz"),
            "next_edge": list("y-yz-"), "reduced_wh": [10.0, 20.0, 12.0, 18.0, 20.0],
            "replay_mean_wh": [11.0, 19.0, 11.0, 19.0, 21.0], "replay_var_wh2": 4.0, "replay_n": 10,
            "turn_mean_wh": [10.5, 19.5, 10.5, 19.0, 21.5], "turn_var_wh2": 1.0, "turn_n": 5,
        }
    )  # fmt: skip
    for name in VARIANTS:
        trav[f"eq8_{name}_wh"] = trav["replay_mean_wh"]
    if with_slope:
        trav["eq8_dsf_wh"] = [5.0, 7.0, 5.0, 7.0, 9.0]
    corr = pd.DataFrame(
        [
            {"network": "n", "arms": kind, "max_lag": m, "lag": lag, "rho": 0.5, "se": 0.01, "pairs": 100,
             "trips": 10, "traversals": 50}
            for kind in ("edge", "turn") for m in CORR_LAGS for lag in range(m + 1)
        ]
    )  # fmt: skip
    return trips, trav, corr


def test_the_drivers_prediction_moves_the_turn_means_along_the_slope() -> None:
    """By hand: trip a (speed factor 1.2) 10.5 + 19.5 + 0.2 x (5 + 7) = 32.4 Wh; trip b (0.9) 10.5 + 19.0 + 21.5
    - 0.1 x (5 + 7 + 9) = 48.9 Wh; without the slope column there is no driver's prediction."""
    out = route_predictions(*_tables(with_slope=True))
    assert np.allclose(out.loc[["a", "b"], "turn"], [30.0, 51.0])
    assert np.allclose(out.loc[["a", "b"], "turn_driver"], [32.4, 48.9])
    assert "turn_driver" not in route_predictions(*_tables(with_slope=False)).columns


def test_leave_one_pair_out_scales_the_slope_without_the_pairs_own_trips() -> None:
    """Slope terms x = (1, 2, 1, 3) and residuals r = live - turn = (2, 4, 1, 6) on pairs (0, 0, 1, 2): pair 0's
    factor from pairs 1 and 2 alone is (1 + 18) / (1 + 9) = 1.9, pair 1's (2 + 8 + 18) / (1 + 4 + 9) = 2, pair 2's
    (2 + 8 + 1) / (1 + 4 + 1) = 11 / 6; a pair's prediction is turn + its factor x."""
    from studies.sumo_live_routes.report import leave_one_pair_out_driver

    turn = np.array([10.0, 20.0, 30.0, 40.0])
    x, r = np.array([1.0, 2.0, 1.0, 3.0]), np.array([2.0, 4.0, 1.0, 6.0])
    d = pd.DataFrame({"od": [0, 0, 1, 2], "turn": turn, "turn_driver": turn + x, "live": turn + r})
    pred, scales = leave_one_pair_out_driver(d)
    np.testing.assert_allclose(scales, [1.9, 2.0, 11.0 / 6.0])
    np.testing.assert_allclose(pred, turn + np.array([1.9, 1.9, 2.0, 11.0 / 6.0]) * x)


def test_provenance_marks_the_networks_at_head_and_labels_the_older_trips(monkeypatch: pytest.MonkeyPatch) -> None:
    """A network all of whose trips carry a commit of ``SUMO_LIVE_AT_HEAD`` is marked (at HEAD) and named with the
    regeneration command; the others keep the before-issue-34 label; with every trip at HEAD that label is gone."""
    import studies.reproduce.table as T
    from studies.sumo_live_routes.header import at_head, provenance_lines

    trips = pd.DataFrame(
        {"network": ["a", "a", "b", "b"], "commit": ["1111111", "2222222", "93f5b0b", "93f5b0b"], "trip": list("wxyz")}
    )
    monkeypatch.setattr(T, "SUMO_LIVE_AT_HEAD", frozenset({"1111111", "2222222"}))
    assert at_head(trips).tolist() == [True, True, False, False]
    text = "\n".join(provenance_lines(trips))
    assert "| a (at HEAD) | 2 | `1111111` (1), `2222222` (1) |" in text and "| b | 2 | `93f5b0b` (2) |" in text
    assert "regenerated at commit `1111111`, `2222222`, after issue 34" in text
    assert "Networks not marked (at HEAD): These rows were recorded before issue 34" in text
    assert "before the study moved to `studies/`" in text
    monkeypatch.setattr(T, "SUMO_LIVE_AT_HEAD", frozenset({"1111111", "2222222", "93f5b0b"}))
    text = "\n".join(provenance_lines(trips))
    assert "| b (at HEAD) |" in text and "before issue 34 (merged" not in text and "moved to `studies/`" not in text
    monkeypatch.setattr(T, "SUMO_LIVE_AT_HEAD", frozenset())
    text = "\n".join(provenance_lines(trips))
    assert "(at HEAD)" not in text and text.count("These rows were recorded before issue 34") == 1


def test_compare_pairs_the_trips_and_reports_what_moved(tmp_path: Path) -> None:
    """The comparison of the committed tables with themselves pairs every trip with no change; with every live
    energy of one network 10 Wh higher, that network's paired change is +10.0 Wh and Eq. 8's bias 10 Wh lower
    (bias = prediction - live), the other network's unchanged."""
    from studies.sumo_live_routes.compare import compare_lines, network_summary
    from studies.sumo_live_routes.runner import load_tables

    data = Path(__file__).resolve().parents[2] / "docs" / "results" / "data"
    trips, trav, corr = load_tables(data)
    old = network_summary(trips, trav, corr)
    text = "\n".join(compare_lines(old, old, "abc1234"))
    for net, s in old.items():
        assert f"{len(s.rp)} trips paired; on them the live reduced energy changed by +0.0 Wh" in text, net
    net = sorted(old)[0]
    bumped = trav.copy()
    mine = bumped["trip"].isin(trips.loc[trips["network"] == net, "trip"])
    bumped.loc[mine, "reduced_wh"] += 10.0 / bumped[mine].groupby("trip")["trip"].transform("size")
    new = network_summary(trips, bumped, corr)
    lines = compare_lines(old, new, "abc1234")
    sec = lines[lines.index(f"## {net}") :]
    assert "live reduced energy changed by +10.0 Wh in mean" in "\n".join(sec[:4])
    b_old, b_new = (
        old[net].fits["Eq. 8 (paper), prior alone"]["bias"],
        new[net].fits["Eq. 8 (paper), prior alone"]["bias"],
    )
    assert b_new == pytest.approx(b_old - 10.0, abs=1e-9)  # the same predictions against live energies 10 Wh higher
    other = sorted(old)[1]
    assert new[other].fits == old[other].fits


def test_compare_refuses_a_revision_without_the_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from studies.sumo_live_routes.compare import main

    out = tmp_path / "page.md"
    with pytest.raises(SystemExit) as e:
        main(["--old", "0000000000000000000000000000000000000000", "--out", str(out)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("evroute: error: --old ") and err.count("\n") == 1
    assert not out.exists()


def test_the_committed_trips_are_at_head_and_their_commits_run_the_same_code() -> None:
    """Issue 38: every committed live trip was recorded at a commit of ``SUMO_LIVE_AT_HEAD`` (so the reproduce table
    marks the study's files at HEAD and compares them), the page marks every network (at HEAD), and those commits
    differ from each other in nothing the collection runs (the library and the study's run and runner modules)."""
    import subprocess

    from studies.reproduce.table import BY_DATA, ROOT, SUMO_LIVE_AT_HEAD

    data = ROOT / "docs" / "results" / "data"
    trips = pd.read_csv(data / TRIPS, dtype={"commit": str})
    assert set(trips["commit"]) <= SUMO_LIVE_AT_HEAD
    assert all(s.at == "HEAD" for name, s in BY_DATA.items() if name.startswith("sumo_live_routes_"))
    page = (ROOT / "docs" / "results" / "sumo_live_routes.md").read_text()
    assert all(f"| {n} (at HEAD) |" in page for n in trips["network"].unique())
    if not (ROOT / ".git").exists():
        pytest.skip("needs the git history")
    first, *rest = sorted(SUMO_LIVE_AT_HEAD)
    paths = ["evroute", "studies/sumo_live_routes/run.py", "studies/sumo_live_routes/runner.py"]
    for c in rest:
        proc = subprocess.run(["git", "diff", "--quiet", first, c, "--", *paths], cwd=ROOT, check=False)
        assert proc.returncode == 0, f"{first} and {c} differ in what the collection runs"
