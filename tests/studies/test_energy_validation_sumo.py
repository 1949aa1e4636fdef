"""(b) of the energy validation (``studies/energy_validation/sumo_traces.py``): the route check and the page's
statistics, by hand on made-up rows (the SUMO and FASTSim runs themselves are the study's command)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from studies.energy_validation.sumo_traces import _in_order, report


def test_edges_seen_in_route_order():
    route = ["a", "b", "c", "d"]
    assert _in_order(["a", "b", "c", "d"], route)
    assert _in_order(["a", "c", "d"], route)  # b driven within one step: unseen
    assert not _in_order(["a", "c", "b", "d"], route)  # out of order
    assert not _in_order(["b", "c", "d"], route)  # the first edge never seen
    assert not _in_order(["a", "b", "x", "d"], route)  # off the route
    assert not _in_order([], route)


def _rows() -> pd.DataFrame:
    """Five kept trips with profile / FASTSim ratios 0.8, 0.9, 1.0, 1.1, 1.2 and one refused by FASTSim."""
    ratio = np.array([0.8, 0.9, 1.0, 1.1, 1.2])
    kept = pd.DataFrame(
        {
            "network": "monaco",
            "vehicle": "chevrolet_bolt_2020",
            "failure": "",
            "sumo_m": 2000.0,
            "sumo_s": 300.0,
            "rise_m": [10.0, 20.0, 30.0, 40.0, 50.0],
            "fastsim_wh": 100.0,
            "fastsim_regen_eff": 0.87,
            "evroute_regen_eff": 0.97,
            "brake_wh": 80.0,
            "regen_gap_wh": [5.0, 6.0, 8.0, 9.0, 10.0],
            "trace_noblend_wh": 96.0,
            "profile_wh": 100.0 * ratio,
            "steady_wh": 95.0 * ratio,
            "eq8_wh": 90.0 * ratio,
            "trace_wh": 100.0,
            "prior_s": 330.0,
        }
    )
    why = "FASTSim: edrv charge power (28 kW) exceeds current max charge power (13 kW)"
    refused = pd.DataFrame({"network": ["monaco"], "vehicle": ["chevrolet_bolt_2020"], "failure": [why]})
    return pd.concat([kept, refused], ignore_index=True)


def test_report_statistics_by_hand():
    text = "\n".join(report(_rows(), 15.0))
    # median 1.0; numpy's linear quantiles: 10 % at 0.84, 90 % at 1.16; worst = farthest from 1 (first found: 0.8)
    assert "| monaco | chevrolet_bolt_2020 | 5 / 6 | 2.00 | profile | 1.000 | 0.840-1.160 | 0.800 |" in text
    assert "| monaco | chevrolet_bolt_2020 | 5 / 6 | 2.00 | steady | 0.950 | 0.798-1.102 | 0.760 |" in text
    assert "All 5 kept trips: profile median ratio 1.000 (10-90 % 0.840-1.160, worst 0.800), within +-15 %." in text
    assert "Not kept: 1 trips where FASTSim refuses braking beyond its charge power, 0 where" in text
    assert ", 0 for SUMO reasons" in text
    assert "median rise +30 m, 0 of 5 end lower than they start" in text
    # regeneration: gap median 8 % of FASTSim's 100 Wh; trace 100 / (100 - gap): median 100 / 92
    assert "braking energy at the wheels is 0.80 of its battery energy" in text and "reading is 8.0 % of" in text
    assert f"trace model is {100 / 92:.3f} (median)" in text
    assert "adds 4.2 % to the trace model's energy" in text  # 100 / 96 - 1
    assert (
        "By network, profile median ratio: monaco 1.000 (within; vehicle model on the trace 1.000 of FASTSim, " in text
    )
    assert "The worst trip" not in text  # the worst (0.8) is a climb: no descent to explain
    assert "median 1.100." in text  # the prior's time over SUMO's: 330 / 300


def test_report_says_outside_when_it_is():
    rows = _rows()
    rows["profile_wh"] *= 0.5
    assert "profile median ratio 0.500 (10-90 % 0.420-0.580, worst 0.400), OUTSIDE +-15 %" in "\n".join(
        report(rows, 15.0)
    )


def test_report_explains_a_worst_descent():
    rows = _rows()
    rows["trip"] = range(len(rows))
    rows.loc[0, ["rise_m", "fastsim_wh", "profile_wh"]] = [-120.0, 20.0, 90.0]  # ratio 4.5: the worst
    text = "\n".join(report(rows, 15.0))
    assert (
        "The worst trip (monaco 0) is a descent of 120 m over 2.0 km for which FASTSim's battery energy is 20 Wh"
        in text
    )
