"""Collecting whole comparison blocks of the SUMO bandit study regenerated at HEAD (studies.sumo_bandit.collect) and
the page's handling of routes with blocks of two codes (studies.sumo_bandit.report), on hand-made tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from studies.sumo_bandit import collect as C
from studies.sumo_bandit.report import report
from studies.sumo_bandit.run import COLUMNS

METHODS = ["BI-TS", "GP-EXACT-TS", "BI-TS-TURN", "GP-EXACT-TS-TURN"]


def _rows(commit: str, arms: str, shift: float, seeds: int = 3, labels: list[str] | None = None) -> list[dict]:
    out = []
    for lab in labels or C.block_labels(METHODS, arms):
        model = "gp-exact" if lab.startswith("GP") else "bi"
        for sd in range(seeds):
            wh = (100.0 if model == "bi" else 50.0) + shift + sd  # GP 50 Wh lower on every seed
            out.append(
                dict(zip(COLUMNS, ["m", "A", lab, model, "ts", arms, sd, wh, wh, 10.0, True, 1.5, commit], strict=True))
            )
    return out


def _route(traversals: int) -> dict[str, Any]:
    arm = {"n": 10, "negative_means": 0, "min_mean_wh": 0.1, "optimum_wh": 10.0, "method": "dijkstra"}
    return {
        "network_edges": 5, "turns": 9, "start": "s", "goal": "g", "traversals": traversals, "probe_trips": 2,
        "clipped_traversals": 0, "record_cpu_s": 1.0, "record_wall_s": 1.0, "clipped_wh": 0.0, "eq8_edges": 0,
        "negative_cycle_reachable": False, "edge_optimum_turn_truth_wh": 11.0, "arms": {"edge": arm, "turn": arm},
        "methods": METHODS,
    }  # fmt: skip


def _meta(command: str, traversals: int) -> dict[str, Any]:
    return {"command": command, "commands": [command], "env_params": {}, "horizon": 100, "seeds": 3,
            "machine": "test", "routes": {"m-A": _route(traversals)}}  # fmt: skip


def _write(folder: Path, rows: list[dict], meta: dict[str, Any]) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    data, meta_path = folder / "sumo_bandit_finals.csv", folder / "sumo_bandit_meta.json"
    pd.DataFrame(rows, columns=COLUMNS).to_csv(data, index=False)
    meta_path.write_text(json.dumps(meta))
    return data, meta_path


def _setup(tmp_path: Path, src_rows: list[dict]) -> tuple[Path, Path, Path]:
    old = _rows("aaaaaaa", "edge", 0.0) + _rows("aaaaaaa", "turn", 0.0)
    data, meta = _write(tmp_path / "docs", old, _meta("old command", 100))
    src = tmp_path / "new"
    new_meta = _meta("new command", 200)
    del new_meta["commands"]  # a study run once (not merged into older data) records its command alone
    _write(src, src_rows, new_meta)
    return data, meta, src


def test_a_whole_block_replaces_its_rows_and_keeps_the_old_set_up(tmp_path: Path) -> None:
    data, meta, src = _setup(tmp_path, _rows("bbbbbbb", "edge", 7.0) + _rows("bbbbbbb", "turn", 7.0, seeds=1))
    summary = C.collect(src, [("m", "A", "edge")], data, meta, [])
    assert summary == {"m:A:edge": {"rows": 6, "cpu_s": 9.0, "commit": "bbbbbbb"}}
    df = pd.read_csv(data, dtype={"commit": str})
    assert len(df) == 12  # 2 blocks x 2 methods x 3 seeds: the edge block replaced, the turn block kept
    assert set(df.loc[df["arms"] == "edge", "commit"]) == {"bbbbbbb"}
    assert set(df.loc[df["arms"] == "turn", "commit"]) == {"aaaaaaa"}
    assert df.loc[(df["label"] == "BI-TS") & (df["seed"] == 2), "final_regret_wh"].item() == 109.0
    m = json.loads(meta.read_text())
    assert m["routes"]["m-A"]["traversals"] == 200 and m[C.BEFORE]["m-A"]["traversals"] == 100
    assert m["commands"] == ["old command", "new command"]
    C.collect(src, [("m", "A", "edge")], data, meta, [])  # again: idempotent, the first old set-up kept
    assert json.loads(meta.read_text())[C.BEFORE]["m-A"]["traversals"] == 100
    assert len(pd.read_csv(data)) == 12


@pytest.mark.parametrize(
    "src_rows",
    [
        _rows("bbbbbbb", "turn", 7.0, seeds=2),  # a seed missing
        _rows("bbbbbbb", "turn", 7.0, labels=["BI-TS-TURN"]),  # a method missing
        _rows("bbbbbbb+dirty", "turn", 7.0),  # not a committed checkout
    ],
)
def test_a_half_block_or_a_dirty_one_writes_nothing(tmp_path: Path, src_rows: list[dict]) -> None:
    data, meta, src = _setup(tmp_path, src_rows)
    before = data.read_text(), meta.read_text()
    with pytest.raises(SystemExit) as e:
        C.collect(src, [("m", "A", "turn")], data, meta, [])
    assert e.value.code == 2
    assert (data.read_text(), meta.read_text()) == before


def test_bad_blocks_are_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, meta, src = _setup(tmp_path, _rows("bbbbbbb", "edge", 7.0))
    with pytest.raises(SystemExit) as e:
        C.main(["--from", str(src), "--blocks", "m:A:wheel", "--data", str(data), "--meta", str(meta)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("evroute: error: --blocks m:A:wheel") and err.count("\n") == 1


def test_the_page_pairs_only_methods_of_the_same_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import studies.reproduce.table as T

    data, meta, src = _setup(tmp_path, _rows("bbbbbbb", "edge", 7.0))
    C.collect(src, [("m", "A", "edge")], data, meta, [])
    monkeypatch.setattr(T, "SUMO_BANDIT_AT_HEAD", frozenset({"bbbbbbb"}))
    page = report(pd.read_csv(data, dtype={"commit": str}), json.loads(meta.read_text()), data.name, meta.name)
    assert "| m A edge (at HEAD) | 6 | `bbbbbbb` (6) |" in page and "| m A turn | 6 | `aaaaaaa` (6) |" in page
    assert "Recorded day (rows at HEAD): 200 traversals" in page
    assert "Recorded day (rows before issue 34): 100 traversals" in page
    assert "Rows at HEAD: Check:" in page and "Rows before issue 34: Check:" in page
    assert "| BI-TS (at HEAD) | 3 |" in page and "| BI-TS-TURN (before issue 34) | 3 |" in page
    # GP - BI within each block: 50 Wh lower on all 3 seeds (same code); turn - edge crosses codes: not compared
    assert "| GP-EXACT-TS - BI-TS | model | -50.0 +- 0.0 |" in page
    assert "| GP-EXACT-TS-TURN - BI-TS-TURN | model | -50.0 +- 0.0 |" in page
    assert "Not compared (one method at HEAD, the other before issue 34" in page
    assert "BI-TS-TURN - BI-TS, GP-EXACT-TS-TURN - GP-EXACT-TS." in page
    assert "| BI-TS-TURN - BI-TS |" not in page
    monkeypatch.setattr(T, "SUMO_BANDIT_AT_HEAD", frozenset())  # one code: turn - edge compared (-7 Wh each seed)
    page = report(pd.read_csv(data, dtype={"commit": str}), json.loads(meta.read_text()), data.name, meta.name)
    assert "| BI-TS-TURN - BI-TS | arms | -7.0 +- 0.0 |" in page and "Not compared" not in page


def _live(folder: Path, net: str, commit: str | None, note: str) -> None:
    routes = pd.DataFrame({"network": [net], "route": ["A"], "label": ["BI-TS"], "seed": [0], "route_key": ["k"]})
    trips = pd.DataFrame({"network": [net], "route_key": ["k"], "slot": [0], "battery_wh": [1.0]})
    if commit is not None:
        routes["commit"] = commit
        trips["commit"] = commit
    routes.to_csv(folder / "sumo_bandit_live_routes.csv", index=False)
    trips.to_csv(folder / "sumo_bandit_live_trips.csv", index=False)
    (folder / "sumo_bandit_live_meta.json").write_text(json.dumps({"networks": {net: {"command": note}}}))


def test_a_whole_network_s_live_drives_replace_the_committed_ones(tmp_path: Path) -> None:
    data, meta, src = _setup(tmp_path, _rows("bbbbbbb", "edge", 7.0) + _rows("bbbbbbb", "turn", 7.0))
    _live(data.parent, "m", "aaaaaaa", "old")
    old_trips = pd.read_csv(data.parent / "sumo_bandit_live_trips.csv")
    pd.concat([old_trips, old_trips.assign(network="x")]).to_csv(
        data.parent / "sumo_bandit_live_trips.csv", index=False
    )
    _live(src, "m", None, "new")  # trips written without a commit column
    pd.read_csv(src / "sumo_bandit_live_routes.csv").assign(commit="bbbbbbb").to_csv(
        src / "sumo_bandit_live_routes.csv", index=False
    )
    before = data.read_text()
    with pytest.raises(SystemExit):  # the turn block still before: not every block of m at the new commit
        C.collect(src, [("m", "A", "edge")], data, meta, ["m"])
    assert data.read_text() == before
    C.collect(src, [("m", "A", "edge"), ("m", "A", "turn")], data, meta, ["m"])
    trips = pd.read_csv(data.parent / "sumo_bandit_live_trips.csv", dtype={"commit": str})
    assert sorted(zip(trips["network"], trips["commit"], strict=True)) == [("m", "bbbbbbb"), ("x", "aaaaaaa")]
    live_meta = json.loads((data.parent / "sumo_bandit_live_meta.json").read_text())
    assert live_meta["networks"]["m"]["command"] == "new"


def test_live_commands_of_one_set_up_accumulate() -> None:
    """``live.merged_command``: a run of other routes with the same slots and speed seed adds its command once; another
    set-up (slots or seed) or no stored set-up gives the new command alone."""
    from studies.sumo_bandit.live import merged_command

    prev = {"command": "live --routes A", "slots": 6, "speed_seed": 0}
    assert merged_command(prev, "live --routes B", 6, 0) == "live --routes A; live --routes B"
    both = {**prev, "command": "live --routes A; live --routes B"}
    assert merged_command(both, "live --routes B", 6, 0) == "live --routes A; live --routes B"
    assert merged_command(prev, "live --routes B", 4, 0) == "live --routes B"
    assert merged_command(prev, "live --routes B", 6, 1) == "live --routes B"
    assert merged_command({}, "live --routes B", 6, 0) == "live --routes B"
