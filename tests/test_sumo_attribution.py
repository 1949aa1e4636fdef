"""Energy of a step split over the lanes covered in it: hand-computed cases, conservation, a short edge in SUMO."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evroute.energy import edge_energy_wh
from evroute.sumo.attribution import LaneGraph, attribute_steps, lane_graph, split_energy
from evroute.sumo.binaries import run_sumo_program, sumo_binary
from evroute.sumo.record import kinetic_steps, record_traversals, steps_to_traversals

SPEED = 13.89
# a_0 (100 m) -> junction :j (4 m) -> b_0 (6 m) -> junction :k (2 m) -> c_0 (200 m); a has a second lane a_1
CHAIN = LaneGraph(
    length={"a_0": 100.0, "a_1": 100.0, ":j_0_0": 4.0, "b_0": 6.0, ":k_0_0": 2.0, "c_0": 200.0},
    succ={"a_0": [":j_0_0"], ":j_0_0": ["b_0"], "b_0": [":k_0_0"], ":k_0_0": ["c_0"]},
)


def test_split_energy_hand_computed() -> None:
    # 10 m left on the first lane, 5 m crossed, 20 m into the last: 35 Wh over 35 m
    assert split_energy(35.0, [100.0, 5.0, 200.0], 90.0, 20.0) == pytest.approx([10.0, 5.0, 20.0])
    assert split_energy(-3.0, [50.0, 50.0], 40.0, 20.0) == pytest.approx([-1.0, -2.0])  # recuperation too
    assert split_energy(7.0, [30.0], 3.0, 9.0) == pytest.approx([7.0])  # stayed on one lane
    assert split_energy(4.0, [10.0, 6.0], 10.0, 0.0) == pytest.approx([0.0, 4.0])  # no distance: all to the last
    with pytest.raises(ValueError):
        split_energy(1.0, [], 0.0, 0.0)


def test_lane_paths() -> None:
    assert CHAIN.path("a_0", "c_0") == ["a_0", ":j_0_0", "b_0", ":k_0_0", "c_0"]
    assert CHAIN.path("a_1", "b_0") == ["a_0", ":j_0_0", "b_0"]  # lateral change to a_0, the lane a is left by
    assert CHAIN.path("a_0", "a_1") == ["a_1"]  # a lane change within the edge: nothing to split
    assert CHAIN.path("c_0", "a_0") is None  # not reachable (a teleport)
    assert CHAIN.path("a_0", "c_0", max_gap_m=11.0) is None  # 12 m of lanes in between


def test_attribute_steps_hand_computed() -> None:
    # v: two steps on a, then one step from 92 m on a to 8 m on c (8 + 4 + 6 + 2 + 8 = 28 m), then one on c
    t = np.array([0.0, 1.0, 2.0, 3.0])
    out_t, out_v, out_l, out_e = attribute_steps(
        t,
        np.array(["v"] * 4),
        np.array(["a_0", "a_0", "c_0", "c_0"]),
        np.array([80.0, 92.0, 8.0, 22.0]),
        np.array([1.0, 2.0, 28.0, 5.0]),
        CHAIN,
    )
    assert list(out_l) == ["a_0", "a_0", ":j_0_0", "b_0", ":k_0_0", "c_0", "c_0"]
    assert out_e == pytest.approx([1.0, 2.0 + 8.0, 4.0, 6.0, 2.0, 8.0, 5.0])
    assert out_t == pytest.approx([0.0, 1.0, 1.0 + 8 / 28, 1.0 + 12 / 28, 1.0 + 18 / 28, 1.0 + 20 / 28, 3.0])
    assert list(out_v) == ["v"] * 7
    tr = steps_to_traversals(out_t, out_v, out_l, out_e, legal_turns={("a", "b"), ("b", "c")})
    assert tr["edge"].tolist() == ["b"]  # b was never reported by SUMO, and now has a complete traversal
    assert tr["energy_wh"].iloc[0] == pytest.approx(8.0)  # 6 m of b and its 2 m junction
    assert tr["travel_s"].iloc[0] == pytest.approx(8 / 28)
    assert tr["entry_s"].iloc[0] == pytest.approx(1.0 + 12 / 28)


def test_attribute_steps_teleport_and_lane_change_keep_the_step() -> None:
    t = np.array([0.0, 1.0, 2.0, 0.0, 1.0])
    veh = np.array(["v", "v", "v", "w", "w"])
    lane = np.array(["a_0", "a_1", "a_1", "c_0", "a_0"])  # v changes lane within a; w teleports backwards
    out_t, out_v, out_l, out_e = attribute_steps(
        t, veh, lane, np.array([10.0, 20.0, 30.0, 5.0, 9.0]), np.array([1.0, 2.0, 3.0, 4.0, 5.0]), CHAIN
    )
    assert out_t == pytest.approx([0.0, 1.0, 2.0, 0.0, 1.0])
    assert list(out_l) == list(lane) and out_e == pytest.approx([1.0, 2.0, 3.0, 4.0, 5.0])


LANES = ["a_0", ":j_0_0", "b_0", ":k_0_0", "c_0"]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 4), st.floats(0, 1), st.floats(-5, 20)), min_size=1, max_size=30
    )
)
def test_energy_is_conserved_per_vehicle(rows: list[tuple[int, int, float, float]]) -> None:
    """Whatever the steps (forward moves, teleports backwards, standing still), each vehicle's energy is kept."""
    veh = np.array([f"v{r[0]}" for r in rows])
    lane = np.array([LANES[r[1]] for r in rows])
    pos = np.array([r[2] * CHAIN.length[LANES[r[1]]] for r in rows])
    energy = np.array([r[3] for r in rows])
    t = np.arange(len(rows), dtype=np.float64)
    out_t, out_v, out_l, out_e = attribute_steps(t, veh, lane, pos, energy, CHAIN)
    assert len(out_e) >= len(rows)
    for v in set(veh):
        assert out_e[np.asarray(out_v) == v].sum() == pytest.approx(energy[veh == v].sum(), abs=1e-9)
        tv = out_t[np.asarray(out_v) == v]
        assert np.all(np.diff(tv) >= 0)  # rows stay in driving order, times interpolated within their step
        assert tv.min() >= t[veh == v].min() and tv.max() <= t[veh == v].max()


@pytest.fixture(scope="module")
def short_edge_road(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Flat straight road a (500 m) - b (5 m) - c (495 m) - d (500 m): at 13.89 m/s and 1 s steps b is jumped."""
    d = tmp_path_factory.mktemp("short")
    xs = [0, 500, 505, 1000, 1500]
    (d / "n.nod.xml").write_text(
        "<nodes>" + "".join(f'<node id="n{i}" x="{x}" y="0"/>' for i, x in enumerate(xs)) + "</nodes>"
    )
    (d / "n.edg.xml").write_text(
        "<edges>"
        + "".join(f'<edge id="{e}" from="n{i}" to="n{i + 1}" speed="{SPEED}"/>' for i, e in enumerate("abcd"))
        + "</edges>"
    )
    net = d / "r.net.xml"
    run_sumo_program([sumo_binary("netconvert"), "-n", d / "n.nod.xml", "-e", d / "n.edg.xml", "-o", net], "nc")
    (d / "r.rou.xml").write_text(
        '<routes><vehicle id="p" depart="0" departSpeed="max"><route edges="a b c d"/></vehicle></routes>'
    )
    return d


def test_lane_graph_of_a_net(short_edge_road: Path) -> None:
    g = lane_graph(short_edge_road / "r.net.xml")
    assert g.length["b_0"] == pytest.approx(5.0) and g.length["c_0"] == pytest.approx(495.0)
    assert g.path("a_0", "c_0") == ["a_0", ":n1_0_0", "b_0", ":n2_0_0", "c_0"]


def test_short_edge_gets_its_share_in_sumo(short_edge_road: Path) -> None:
    """The 5 m edge b, crossed within one 1 s step, gets a traversal worth Eq. 8 on its 5.1 m (with its junction).

    Constant speed on a flat road (no driver noise, no auxiliaries): energy per metre is constant, so the distance
    shares are exact up to SUMO's per-step rounding; the 0.1 s recording (b seen on its own) agrees within 1 %.
    """
    kw: dict[str, Any] = {
        "vtype_attributes": {"sigma": "0", "speedFactor": "1", "speedDev": "0"},
        "vtype_extra": {"constantPowerIntake": 0.0},
    }
    net, routes = short_edge_road / "r.net.xml", [short_edge_road / "r.rou.xml"]
    coarse = record_traversals(net, routes, step_length=1.0, **kw).set_index("edge")
    fine = record_traversals(net, routes, step_length=0.1, **kw).set_index("edge")
    assert sorted(coarse.index) == ["b", "c"] and sorted(fine.index) == ["b", "c"]
    eq8 = edge_energy_wh(np.array([5.1, 495.1]), np.array([SPEED, SPEED]), np.array([0.0, 0.0]))
    assert coarse.loc[["b", "c"], "energy_wh"].to_numpy() == pytest.approx(eq8, rel=5e-3)
    assert coarse.loc["b", "energy_wh"] == pytest.approx(fine.loc["b", "energy_wh"], rel=1e-2)
    assert coarse.loc["b", "travel_s"] == pytest.approx(5.1 / SPEED, rel=1e-2)


def test_kinetic_energy_is_split_like_energy_and_telescopes() -> None:
    """The hand-computed step above with speeds 0, 10, 4, 0 m/s: v^2 interpolated by distance at the boundaries."""
    m = 3600.0 * 2.0  # kinetic energy in Wh is then v^2
    t = np.array([0.0, 1.0, 2.0, 3.0])
    veh = np.array(["v"] * 4)
    kin = kinetic_steps(t, veh, np.array([0.0, 10.0, 4.0, 0.0]), m)
    assert kin == pytest.approx([0.0, 100.0, -84.0, -16.0])
    lanes = np.array(["a_0", "a_0", "c_0", "c_0"])
    both = np.column_stack([[1.0, 2.0, 28.0, 5.0], kin])
    out_t, out_v, out_l, out_e = attribute_steps(t, veh, lanes, np.array([80.0, 92.0, 8.0, 22.0]), both, CHAIN)
    assert out_e.shape == (7, 2) and out_e[:, 0] == pytest.approx([1.0, 10.0, 4.0, 6.0, 2.0, 8.0, 5.0])
    assert out_e[:, 1].sum() == pytest.approx(0.0, abs=1e-12)  # rest to rest: the kinetic terms telescope to 0
    tr = steps_to_traversals(
        out_t, out_v, out_l, out_e[:, 0], legal_turns={("a", "b"), ("b", "c")}, kinetic_wh=out_e[:, 1]
    )
    # b is entered 12 m into the 28 m step and left (into c) 20 m into it: v^2 = 100 - f * 84 at fraction f
    entry, leave = 100.0 - 12 / 28 * 84.0, 100.0 - 20 / 28 * 84.0
    assert tr["entry_kinetic_wh"].iloc[0] == pytest.approx(entry)
    assert tr["kinetic_wh"].iloc[0] == pytest.approx(leave - entry)
