"""The SUMO bandit study's helpers (studies.sumo_bandit.runner): per-seed data merged by key with a re-run check,
and the report section of final routes driven live, on hand-made tables with hand-computed numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from studies.sumo_bandit.runner import (
    live_networks,
    live_section,
    merge_rows,
    rerun_lines,
    route_key,
)

COLS = ["network", "route", "label", "seed", "final_regret_wh", "cpu_s"]


def _df(rows: list[tuple[object, ...]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLS)


def test_merge_is_keyed_keeps_stored_order_and_checks_reruns() -> None:
    old = _df([("m", "A", "BI-TS", 0, 10.0, 1.0), ("m", "A", "BI-TS", 1, 11.0, 1.0), ("m", "A", "GP-TS", 0, 5.0, 2.0)])
    new = _df(
        [
            ("m", "A", "GP-TS", 0, 6.0, 3.0),  # re-run, differs by 1 Wh
            ("m", "A", "BI-TS", 1, 11.0004, 9.0),  # re-run, same to the stored 3 decimals
            ("m", "B", "BI-TS", 0, 7.0, 1.0),  # a new route
            ("m", "A", "BI-TS", 2, 12.0, 1.0),  # a new seed
        ]
    )
    out, check = merge_rows(old, new)
    keys = list(zip(out["route"], out["label"], out["seed"], strict=True))
    assert keys == [("A", "BI-TS", 0), ("A", "BI-TS", 1), ("A", "BI-TS", 2), ("A", "GP-TS", 0), ("B", "BI-TS", 0)]
    assert out.set_index(["route", "label", "seed"]).loc[("A", "GP-TS", 0), "final_regret_wh"] == 6.0  # the re-run
    assert out.set_index(["route", "label", "seed"]).loc[("A", "BI-TS", 1), "cpu_s"] == 9.0
    assert check["compared"] == 2 and check["identical"] == 1
    assert check["compared_per_method"] == {"m A BI-TS": 1, "m A GP-TS": 1}
    assert check["max_abs_diff_wh"] == pytest.approx(1.0)
    assert check["differing"] == [["m", "A", "GP-TS", 0, 5.0, 6.0]]
    _, none = merge_rows(old, _df([("m", "C", "BI-TS", 0, 1.0, 1.0)]))
    assert none["compared"] == 0 and none["differing"] == []


def _finals() -> pd.DataFrame:
    rows = []
    runs = {
        ("BI-TS", "bi", "edge"): ["r1", "r2", "r1"],
        ("GP-EXACT-TS", "gp-exact", "edge"): ["o", "o", "o"],
        ("BI-TS-TURN", "bi", "turn"): ["o", "r3", "r3"],
    }
    for (lab, model, arms), routes in runs.items():
        for seed, r in enumerate(routes):
            rows.append(["m", "A", lab, model, "ts", arms, seed, route_key(r), 1.0])
    rows.append(["m", "A", "REPLAY-OPT-TURN", "replay", "optimum", "turn", -1, route_key("o"), 1.0])
    rows.append(["m", "A", "REPLAY-OPT-EDGE", "replay", "optimum", "edge", -1, route_key("r2"), 1.0])
    return pd.DataFrame(rows, columns=["network", "route", "label", "model", "policy", "arms", "seed", "route_key",
                                       "replay_turn_wh"])  # fmt: skip


def _trips() -> pd.DataFrame:
    battery: dict[str, list[float | None]] = {
        "o": [100.0, 110.0],
        "r1": [120.0, 130.0],
        "r2": [105.0, 125.0],
        "r3": [150.0, None],
    }
    rows: list[dict[str, object]] = []
    for i, (r, values) in enumerate(battery.items()):
        for slot, b in enumerate(values):
            exit_wh = 7.0 + i + 2 * slot  # left out of the live energy: b is what counts
            rows.append({"network": "m", "route_key": route_key(r), "slot": slot, "ok": b is not None,
                         "matched": b is not None, "trip_battery_wh": None if b is None else b + exit_wh,
                         "reduced_wh": None if b is None else b - 50.0, "cpu_s": 1.0,
                         "failure": None if b is not None else "teleported at 9 s", "edges": r,
                         "exit_edges": "x y" if slot == 1 else "x",
                         "exit_battery_wh": None if b is None else exit_wh})  # fmt: skip
    # arrived without a traversal per route edge: no reduced energy
    rows[0] |= {"matched": False, "reduced_wh": None, "failure": "traversals do not match the route: o"}
    rows.append({"network": "m", "route_key": route_key("o"), "slot": 2, "ok": False, "matched": False,
                 "trip_battery_wh": None, "reduced_wh": None, "cpu_s": 1.0, "failure": "not arrived", "edges": "o",
                 "exit_edges": None})  # fmt: skip
    return pd.DataFrame(rows)


def test_live_section_numbers_by_hand() -> None:
    """Slot 0 of route o arrived unmatched (battery counted, no reduced energy), slot 2 of o did not arrive.
    Live - optimum per seed over common slots: BI-TS [20, 10, 20] (r2: slots 5 and 15), GP [0, 0, 0], BI-TS-TURN
    [0, 50, 50] (r3 failed at slot 1: slot 0 only); GP - BI [-20, -10, -20]: mean -16.7, s.e. 3.3, t(2) 4.303 ->
    [-31.0, -2.3]; turn - edge [-20, 40, 30]: +16.7 +- 18.6, interval contains 0."""
    meta = {"command": "python x", "slots": 2, "departures": ["08:00:00", "08:30:00"]}
    text = "\n".join(live_section(_finals(), _trips(), meta))
    assert (
        "Trips: 9, of which 2 did not arrive (teleported or late) and 1 arrived without one complete traversal" in text
    )
    assert "per route edge (traversals do not match the route: o: 1) (9 CPU s for all trips)." in text
    # exit energies 7 8 9 10 (slot 0), 9 10 11 (slot 1): mean 64 / 7, pooled variance (5/3 + 1) / 2
    assert (
        "Exit edges: m A: after `o` `x` (4 trips), `x y` (4 trips), 4 of 8 trips with a run-out; their energy 9.1 Wh "
        "in mean, s.d. 1.2 Wh between the routes driven at one departure time (pooled)." in text
    )
    ok = _trips().assign(matched=lambda t: t["ok"])
    assert "and every trip that arrived has one complete traversal per route edge (9 CPU s" in "\n".join(
        live_section(_finals(), ok, meta)
    )
    assert "| BI-TS | 3 | 2 | 0 | 1.0 +- 0.0 | 71.7 +- 3.3 | 121.7 +- 3.3 | +16.7 +- 3.3 | [+2.3, +31.0] |" in text
    assert "| GP-EXACT-TS | 3 | 1 | 3 | 1.0 +- 0.0 | 60.0 +- 0.0 | 105.0 +- 0.0 | +0.0 +- 0.0 |" in text
    assert "| BI-TS-TURN | 3 | 2 | 1 | 1.0 +- 0.0 | 86.7 +- 13.3 | 135.0 +- 15.0 | +33.3 +- 16.7 |" in text
    assert (
        "| REPLAY-OPT-EDGE | -- | 1 | -- | 1.0 | 65.0 +- 10.0 | 115.0 +- 10.0 | +10.0 +- 5.0 | [-53.5, +73.5] |" in text
    )
    # over departure times: slot 0: o - (r1, r2, r1) = (-20, -5, -20) -> -15; slot 1: (-20, -15, -20) -> -18.33;
    # mean -16.67, s.e. 1.67, t(1) 12.706 -> [-37.8, +4.5]: contains 0, so the difference is not resolved
    assert "| GP-EXACT-TS - BI-TS | model | -16.7 +- 3.3 | [-31.0, -2.3] | 3 / 3 | [-37.8, +4.5] | 2 |" in text
    assert (
        "GP-EXACT-TS - BI-TS is not resolved on live battery energy: the 95 % interval over seeds lies below 0, the "
        "one over departure times contains 0 (3 of 3 seeds lower; over the 2 departure times [-37.8, +4.5])" in text
    )
    assert "| BI-TS-TURN - BI-TS | arms | +16.7 +- 18.6 |" in text
    assert "BI-TS-TURN - BI-TS is not resolved on live battery energy" in text
    assert "Live, model: of 1 paired comparisons gp-exact - bi, 0 resolve lower live energy, 0 higher" in text
    # a method the replay ran for more seeds than were driven live is named, with the set-up's reason
    meta_note = {**meta, "networks": {"m": {**meta, "missing_seeds_note": "Because."}}}
    replay = {"m-A": {"BI-TS": [0, 1, 2, 3, 4], "GP-EXACT-TS": [0, 1, 2]}}
    noted = "\n".join(live_section(_finals(), _trips(), meta_note, None, replay))
    assert (
        "Methods with seeds whose final route was not driven live: BI-TS: 3 of its 5 seeds driven (not driven: "
        "seeds 3, 4).  Because." in noted
    )
    assert "whose final route was not driven" not in text
    assert (
        "Live, arms: of 1 paired comparisons turn - edge, 0 resolve lower live energy, 0 higher, not resolved" in text
    )


def test_rerun_paragraph_by_hand() -> None:
    """Re-run check sentence from merge_rows' check."""
    _, check = merge_rows(_df([("m", "A", "GP-TS", 0, 5.0, 2.0)]), _df([("m", "A", "GP-TS", 0, 6.0, 3.0)]))
    text = "\n".join(rerun_lines({"python s": {"against": "abc", **check}}))
    assert "`python s` ran 1 seed(s) stored at commit `abc` again; 0 reproduce the stored final regret to 0.001" in text
    assert "(largest difference 1.000 Wh); differing seeds: m A GP-TS 1 of 1." in text


def _cost_rows(rows: list[tuple[str, str, int, float, str]]) -> pd.DataFrame:
    """(network, label, seed, cpu_s, commit) on route A; the model from the label."""
    df = pd.DataFrame(rows, columns=["network", "label", "seed", "cpu_s", "commit"])
    df["route"], df["model"] = "A", np.where(df["label"].str.startswith("GP"), "gp-exact", "bi")
    return df


def test_network_cost_paragraph_by_hand() -> None:
    """The second network's paragraph: seeds completed over all its rows, CPU per seed compared only between rows of
    the same code (at HEAD: commit 1dce12e), the missing seeds priced at the CPU measured there.  By hand: on l at
    HEAD BI-TS 3 s (3.0x m's 1 s), GP-TS 600 s (60.0x m's 10 s), together 603 / 11 = 54.8x; GP-TS lacks 1 of 2 seeds:
    600 s = 10 CPU-minutes.  With l's GP-TS rows older (commit old), only BI-TS is compared (3.0x) and, every seed
    done, the study is complete there."""
    from studies.sumo_bandit.report import network_cost_lines

    h = "1dce12e"  # studies.reproduce.table.SUMO_BANDIT_AT_HEAD
    ref = [("m", lab, k, c, h) for lab, c in (("BI-TS", 1.0), ("GP-TS", 10.0)) for k in (0, 1)]
    meta = {"seeds": 2, "horizon": 500}
    df = _cost_rows([*ref, ("l", "BI-TS", 0, 3.0, h), ("l", "BI-TS", 1, 3.0, h), ("l", "GP-TS", 0, 600.0, h)])
    text = "\n".join(network_cost_lines(df, meta, "l", driven=frozenset({"m"})))
    assert text.startswith("**l A/B: partly done.** Seeds completed of the 2 asked: l A: BI-TS 2; GP-TS 1 (T = 500")
    assert "CPU per seed of its rows at HEAD" in text and "BI-TS 3.0 s (3.0x), GP-TS 600.0 s (60.0x)" in text
    assert "together 54.8 times their CPU per seed on m." in text
    assert "The final routes of the l runs are not driven live." in text
    assert "**Not done: l** (seeds missing of the 2): l A: GP-TS 1.  They would cost about 10 CPU-minutes: 1 " in text
    old = [
        ("l", "BI-TS", 0, 3.0, h),
        ("l", "BI-TS", 1, 3.0, h),
        ("l", "GP-TS", 0, 9.0, "old"),
        ("l", "GP-TS", 1, 9.0, "old"),
    ]
    text = "\n".join(network_cost_lines(_cost_rows([*ref, *old]), meta, "l", driven=frozenset({"l"})))
    assert text.startswith("**l A/B: complete.** 2 seeds of each of the 2 methods on l A (T = 500")
    assert "BI-TS 3.0 s (3.0x); together 3.0 times" in text and "GP-TS 9.0" not in text
    assert "Not done" not in text and "not driven live" not in text


def test_live_set_up_per_network_and_the_older_single_form() -> None:
    """The older file (one set-up) names its network by the command's ``--network`` (default monaco); with two
    networks the section lists both commands, and each network's clock when they differ."""
    one = {"command": "python s.py --runs r --network lux --slots 2", "slots": 2, "departures": ["08:00:00"]}
    assert list(live_networks(one)) == ["lux"]
    assert list(live_networks({"command": "python s.py", "slots": 1, "departures": []})) == ["monaco"]
    both = {"networks": {"m": {"command": "python a", "slots": 2, "departures": ["08:00:00", "08:30:00"]},
                         "l": {"command": "python b", "slots": 2, "departures": ["08:00:00", "08:30:00"]}}}  # fmt: skip
    text = "\n".join(live_section(_finals(), _trips(), both))
    assert "Commands: `python a`; `python b` (data:" in text
    assert "at the 2 departure times of the live environment's clock (`rounds_per_day = 2`: 08:00:00, 08:30:00)" in text
    both["networks"]["l"] = {"command": "python b", "slots": 1, "departures": ["07:00:00"]}
    text = "\n".join(live_section(_finals(), _trips(), both))
    assert "at the 2/1 (m/l) departure times" in text
    assert "`rounds_per_day = 2/1`: m: 08:00:00, 08:30:00; l: 07:00:00" in text


def test_exit_energy_of_a_goal_whose_successor_is_on_the_route() -> None:
    """Route a b c left into b again (a loop back): the exit energy is b's energy after its route traversal (27 - 20)
    plus the run-out x (3), so the battery to the end of the route is the trip's 95 less 10; NaN where that cannot be
    told apart (the entry edge also an exit edge; the route's traversals not matched) or the EV did not arrive."""
    import math
    from types import SimpleNamespace

    from studies.sumo_bandit.runner import drive

    trip = SimpleNamespace(
        ok=True, arrived=True, failure="", depart_s=0.0, runout=["x"], battery_wh=95.0,
        route_energy_wh=np.array([10.0, 20.0, 30.0]), route_reduced_wh=np.array([9.0, 19.0, 29.0]),
        route_travel_s=np.array([1.0, 2.0, 3.0]), edge_energy_wh={"p": 25.0, "a": 10.0, "b": 27.0, "c": 30.0, "x": 3.0},
    )  # fmt: skip
    sim = SimpleNamespace(end_edges=lambda first, last: ("p", "b"), drive=lambda edges, slot, speed_factor: trip)
    row = drive(sim, "a b c", 0, 1.0)
    assert row["exit_edges"] == "b x" and row["exit_battery_wh"] == pytest.approx(10.0)
    assert row["trip_battery_wh"] - row["exit_battery_wh"] == pytest.approx(85.0)  # p a b c: 25 + 10 + 20 + 30
    trip.route_reduced_wh = np.array([9.0, np.nan, 29.0])  # b's route traversal unmatched: b's split is unknown
    assert math.isnan(drive(sim, "a b c", 0, 1.0)["exit_battery_wh"])
    trip.route_reduced_wh = np.array([9.0, 19.0, 29.0])
    sim.end_edges = lambda first, last: ("x", "b")  # entered from x, which the run-out drives again
    assert math.isnan(drive(sim, "a b c", 0, 1.0)["exit_battery_wh"])
    sim.end_edges = lambda first, last: ("p", "y")  # an exit off the route: its energy whatever the matching
    trip.edge_energy_wh |= {"y": 4.0}
    assert drive(sim, "a b c", 0, 1.0)["exit_battery_wh"] == pytest.approx(7.0)
