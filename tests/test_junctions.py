"""Junction and turn delays (evroute.network.junctions) and their use in the default prior.

Closed forms: the HCM uniform delay against the mean wait of a random arrival computed by brute force, the turn speed
of a circular path, the prior's time of a signalised edge (cruise plus one stop-and-go times the stop probability
plus the HCM delay).  Junction controls parsed from a hand-written ``.net.xml``.  Free-flow time is a lower bound of
the prior's time (hypothesis).  Tolerances: 1e-12 relative where both sides are the same closed form evaluated
differently (rounding only); the brute-force wait uses a 1e-4 s grid, whose midpoint rule is exact for a piecewise
linear wait (1e-9).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evroute.energy import VehicleProfile, edge_prior, profile_energy
from evroute.errors import ParameterError
from evroute.network import load_sumo_net
from evroute.network.junctions import (
    FREE,
    SIGNAL,
    STOP,
    YIELD,
    JunctionModel,
    hcm_uniform_delay_s,
    junction_arms,
    red_standstill_s,
    signal_stop_probability,
    turn_controls,
    turn_deflection_rad,
    turn_speed_mps,
)
from evroute.network.road_network import RoadNetwork

PLAIN = VehicleProfile(mass_kg=1500.0, rolling_resistance=0.01, propulsion_efficiency=0.9, recuperation_efficiency=0.7)


def _brute_wait(cycle: float, green: float) -> float:
    """Mean wait of an arrival uniform over one cycle that starts with the red (midpoint rule on a fine grid)."""
    dt = 1e-4
    t = (np.arange(int(round(cycle / dt))) + 0.5) * dt
    return float(np.mean(np.maximum(cycle - green - t, 0.0)))


@pytest.mark.parametrize(("cycle", "green"), [(90.0, 42.0), (66.0, 20.0), (60.0, 60.0), (45.0, 0.0)])
def test_hcm_uniform_delay_is_the_mean_wait_of_a_random_arrival(cycle, green):
    d = float(hcm_uniform_delay_s(cycle, green))
    assert d == pytest.approx(_brute_wait(cycle, green), rel=1e-9, abs=1e-12)
    assert d == pytest.approx(0.5 * cycle * (1 - green / cycle) ** 2, rel=1e-12)
    # saturated (X >= 1): half the red, r / 2
    assert float(hcm_uniform_delay_s(cycle, green, 1.5)) == pytest.approx(0.5 * (cycle - green), rel=1e-12)
    # stop probability: the red share when free; the mean standstill of a stopping car is then r / 2
    p = float(signal_stop_probability(cycle, green))
    assert p == pytest.approx((cycle - green) / cycle, rel=1e-12)
    if p > 0:
        assert d / p == pytest.approx(0.5 * (cycle - green), rel=1e-12)


@pytest.mark.parametrize(("wait", "t_b"), [(13.0, 3.0), (24.0, 5.8), (2.0, 5.0), (0.0, 1.0)])
def test_red_standstill_is_the_mean_rest_of_the_red_after_braking(wait, t_b):
    """Brute force: remaining red R uniform on [0, 2 wait] (midpoint grid of 1e-5 of the red), standstill
    max(R - t_b, 0); the midpoint rule errs by O(h^2) at the kink only (1e-8)."""
    red = 2 * wait
    r = (np.arange(100_000) + 0.5) / 100_000 * red
    brute = float(np.mean(np.maximum(r - t_b, 0.0))) if red > 0 else 0.0
    assert float(red_standstill_s(wait, t_b)) == pytest.approx(brute, rel=1e-8, abs=1e-12)
    assert float(red_standstill_s(wait, 0.0)) == pytest.approx(wait, rel=1e-12)  # no braking: the HCM wait


def test_turn_speed_closed_form():
    a, r90 = 3.0, 12.0
    v = turn_speed_mps([0.0, math.pi / 3, math.pi / 2, 2 * math.pi / 3, math.pi], a, r90)
    assert v[0] == math.inf and v[-1] == 0.0
    assert v[2] == pytest.approx(math.sqrt(a * r90), rel=1e-12)  # a right angle: radius R90
    assert v[1] == pytest.approx(math.sqrt(a * r90 / math.tan(math.pi / 6)), rel=1e-12)
    assert v[3] == pytest.approx(math.sqrt(a * r90 * math.tan(math.pi / 6)), rel=1e-12)
    assert np.all(np.diff(v) < 0)  # sharper turns are slower


def test_bad_junction_parameters_are_one_error():
    with pytest.raises(ParameterError, match="through_share"):
        JunctionModel(through_share=1.5)
    with pytest.raises(ParameterError, match="default_green_s"):
        JunctionModel(default_green_s=100.0)


NET_XML = """<?xml version="1.0" encoding="UTF-8"?>
<net version="1.20" junctionCornerDetail="5" limitTurnSpeed="5.50">
    <location netOffset="0.00,0.00" convBoundary="0.00,-100.00,300.00,100.00" origBoundary="0,-100,300,100"
        projParameter="!"/>
    <edge id="WC" from="W" to="C" priority="2"><lane id="WC_0" index="0" speed="13.89" length="100.00"
        shape="0.00,0.00 100.00,0.00"/></edge>
    <edge id="NC" from="N" to="C" priority="1"><lane id="NC_0" index="0" speed="13.89" length="100.00"
        shape="100.00,100.00 100.00,0.00"/></edge>
    <edge id="CE" from="C" to="E" priority="2"><lane id="CE_0" index="0" speed="13.89" length="100.00"
        shape="100.00,0.00 200.00,0.00"/></edge>
    <edge id="CS" from="C" to="S" priority="2"><lane id="CS_0" index="0" speed="13.89" length="100.00"
        shape="100.00,0.00 100.00,-100.00"/></edge>
    <edge id="GE" from="G" to="E" priority="1"><lane id="GE_0" index="0" speed="8.33" length="100.00"
        shape="200.00,100.00 200.00,0.00"/></edge>
    <edge id="HE" from="H" to="E" priority="1"><lane id="HE_0" index="0" speed="8.33" length="100.00"
        shape="200.00,-100.00 200.00,0.00"/></edge>
    <edge id="EF" from="E" to="F" priority="2"><lane id="EF_0" index="0" speed="13.89" length="100.00"
        shape="200.00,0.00 300.00,0.00"/></edge>
    <tlLogic id="C" type="static" programID="0" offset="0">
        <phase duration="40" state="GGrr"/>
        <phase duration="3" state="yyrr"/>
        <phase duration="20" state="rrGg"/>
        <phase duration="3" state="rryy"/>
    </tlLogic>
    <junction id="W" type="dead_end" x="0.00" y="0.00" incLanes="" intLanes="" shape="0.00,0.00"/>
    <junction id="N" type="dead_end" x="100.00" y="100.00" incLanes="" intLanes="" shape="100.00,100.00"/>
    <junction id="G" type="dead_end" x="200.00" y="100.00" incLanes="" intLanes="" shape="200.00,100.00"/>
    <junction id="H" type="dead_end" x="200.00" y="-100.00" incLanes="" intLanes="" shape="200.00,-100.00"/>
    <junction id="S" type="dead_end" x="100.00" y="-100.00" incLanes="CS_0" intLanes="" shape="100.00,-100.00"/>
    <junction id="F" type="dead_end" x="300.00" y="0.00" incLanes="EF_0" intLanes="" shape="300.00,0.00"/>
    <junction id="C" type="traffic_light" x="100.00" y="0.00" incLanes="WC_0 NC_0" intLanes=""
        shape="100.00,0.00"/>
    <junction id="E" type="priority" x="200.00" y="0.00" incLanes="CE_0 GE_0 HE_0" intLanes="" shape="200.00,0.00"/>
    <connection from="WC" to="CE" fromLane="0" toLane="0" tl="C" linkIndex="0" dir="s" state="O"/>
    <connection from="WC" to="CS" fromLane="0" toLane="0" tl="C" linkIndex="1" dir="r" state="O"/>
    <connection from="NC" to="CE" fromLane="0" toLane="0" tl="C" linkIndex="2" dir="l" state="o"/>
    <connection from="NC" to="CS" fromLane="0" toLane="0" tl="C" linkIndex="3" dir="s" state="o"/>
    <connection from="CE" to="EF" fromLane="0" toLane="0" dir="s" state="M"/>
    <connection from="GE" to="EF" fromLane="0" toLane="0" dir="l" state="s"/>
    <connection from="HE" to="EF" fromLane="0" toLane="0" dir="r" state="m"/>
</net>
"""


@pytest.fixture(scope="module")
def hand_net(tmp_path_factory) -> RoadNetwork:
    p = tmp_path_factory.mktemp("net") / "hand.net.xml"
    p.write_text(NET_XML)
    return load_sumo_net(p)


def test_junction_controls_parsed_from_a_hand_written_net(hand_net):
    net = hand_net
    kind, prog = turn_controls(net)
    ids = net.edge_ids
    got = {(ids[a], ids[b]): (int(k), tuple(p)) for (a, b), k, p in zip(net.turns.tolist(), kind, prog, strict=True)}
    assert got == {
        ("WC", "CE"): (SIGNAL, (66.0, 40.0)),  # link 0 green in the 40 s phase of a 66 s cycle
        ("WC", "CS"): (SIGNAL, (66.0, 40.0)),
        ("NC", "CE"): (SIGNAL, (66.0, 20.0)),  # G and g (permissive) both count as green
        ("NC", "CS"): (SIGNAL, (66.0, 20.0)),
        ("CE", "EF"): (FREE, (0.0, 0.0)),
        ("GE", "EF"): (STOP, (0.0, 0.0)),
        ("HE", "EF"): (YIELD, (0.0, 0.0)),
    }
    theta = dict(zip(map(tuple, ids[net.turns].tolist()), turn_deflection_rad(net).tolist(), strict=True))
    assert theta[("WC", "CE")] == pytest.approx(0.0, abs=1e-9)
    assert theta[("WC", "CS")] == pytest.approx(math.pi / 2, rel=1e-9)
    jm = JunctionModel()
    arms = junction_arms(net, jm)
    np.testing.assert_allclose(np.bincount(arms.edge, weights=arms.weight), 1.0, rtol=1e-12)
    by = {
        (ids[e], round(w, 6)): (p, wt, u)
        for e, w, p, wt, u in zip(arms.edge, arms.weight, arms.p_stop, arms.wait_s, arms.pass_mps, strict=True)
    }
    # WC: straight on (0.8, through share) at a red share of 26/66 waiting half the red; right turn 0.2
    p, wait, u = by[("WC", 0.8)]
    assert p == pytest.approx(26 / 66, rel=1e-12) and wait == pytest.approx(13.0, rel=1e-12) and u == math.inf
    assert by[("WC", 0.2)][2] == pytest.approx(math.sqrt(jm.lateral_accel_mps2 * jm.turn_radius_90_m), rel=1e-12)
    assert by[("GE", 1.0)][:2] == (1.0, jm.stop_wait_s)  # a stop sign: every car stops
    assert by[("HE", 1.0)][0] == 0.0 and by[("HE", 1.0)][2] == pytest.approx(20 / 3.6, rel=1e-12)
    assert by[("EF", 1.0)] == (1.0, 0.0, 0.0)  # a dead end: stop, no wait


def test_signalised_edge_time_closed_form(hand_net):
    """WC, 100 m at 13.89 m/s, ends at a signal: a car stops with the red share and then waits the HCM delay in the
    mean; when it does not stop it goes straight on (through share 0.8) at its speed or turns right (0.2) at the turn
    speed.  Time = the branches' accelerate-cruise-brake profiles."""
    net, jm = hand_net, JunctionModel()
    e = net.edge_ids.tolist().index("WC")
    v, length = float(net.speed_mps[e]), float(net.length_m[e])
    prior = edge_prior(net, PLAIN, junctions=jm)
    stop = profile_energy([length], 0.0, v, 0.0, 0.0, PLAIN)
    u = math.sqrt(jm.lateral_accel_mps2 * jm.turn_radius_90_m)
    turn = profile_energy([length], u, v, u, 0.0, PLAIN)
    p = 26 / 66
    # it stands the rest of the red (uniform on [0, 26 s]) less the peak / (2 b) its braking takes
    a, b = 1.0, 1.2
    peak = math.sqrt(2 * a * b * length / (a + b))
    stand = (26 - peak / (2 * b)) ** 2 / (2 * 26)
    expected = p * (stop.time_s[0] + stand) + (1 - p) * (0.8 * length / v + 0.2 * turn.time_s[0])
    assert prior.time_s[e] == pytest.approx(expected, rel=1e-12)
    assert stand < float(hcm_uniform_delay_s(66.0, 40.0)) / p  # less than the HCM wait of a car that does not brake
    # the stop branch: 100 m is too short to reach 13.89 m/s at 1.0 / 1.2 m/s^2 (a triangle profile)
    assert stop.time_s[0] == pytest.approx(peak / a + peak / b, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    a_lat=st.floats(0.5, 8.0),
    r90=st.floats(2.0, 50.0),
    yield_kmh=st.floats(5.0, 60.0),
    p_minor=st.floats(0.0, 1.0),
    wait=st.floats(0.0, 30.0),
    x=st.floats(0.0, 2.0),
    through=st.floats(0.0, 1.0),
)
def test_free_flow_time_is_a_lower_bound(hand_net, a_lat, r90, yield_kmh, p_minor, wait, x, through):
    jm = JunctionModel(
        lateral_accel_mps2=a_lat,
        turn_radius_90_m=r90,
        yield_speed_kmh=yield_kmh,
        minor_stop_probability=p_minor,
        stop_wait_s=wait,
        saturation=x,
        through_share=through,
    )
    for net in (hand_net, _osm_like_net()):
        t = edge_prior(net, PLAIN, junctions=jm).time_s
        assert np.all(t >= net.length_m / net.speed_mps * (1 - 1e-12))


def _osm_like_net(tags: dict[str, str] | None = None) -> RoadNetwork:
    """A T junction J (lon/lat) without SUMO controls: a fast road A-J-B and a slow side road S-J, all two-way."""
    coords = {"A": (0.0, 0.0), "J": (0.001, 0.0), "B": (0.002, 0.0), "S": (0.001, 0.001)}
    pairs = [("A", "J"), ("J", "B"), ("S", "J")]
    edges = pairs + [(v, u) for u, v in pairs]
    speed = {frozenset(("S", "J")): 8.33}
    from evroute.network._graph import junction_turns, node_codes

    (fi, ti), _ = node_codes([u for u, _ in edges], [v for _, v in edges])
    return RoadNetwork(
        name="tee",
        edge_ids=np.array([f"{u}{v}" for u, v in edges]),
        from_node=np.array([u for u, _ in edges]),
        to_node=np.array([v for _, v in edges]),
        length_m=np.full(len(edges), 111.0),
        speed_mps=np.array([speed.get(frozenset(e), 13.89) for e in edges]),
        z_from_m=np.zeros(len(edges)),
        z_to_m=np.zeros(len(edges)),
        geometry=[np.array([coords[u], coords[v]]) for u, v in edges],
        turns=junction_turns(fi, ti),
        meta={"junction_tags": tags} if tags else {},
    )


def test_controls_inferred_without_a_sumo_net():
    net = _osm_like_net()
    kind, _ = turn_controls(net)
    ids = net.edge_ids
    got = {(ids[a], ids[b]): int(k) for (a, b), k in zip(net.turns.tolist(), kind, strict=True)}
    assert got[("SJ", "JB")] == YIELD and got[("SJ", "JA")] == YIELD  # the slower side road yields
    assert got[("AJ", "JB")] == FREE and got[("BJ", "JS")] == FREE  # straight on and right turn off the main road
    assert got[("AJ", "JS")] == YIELD  # a left turn across oncoming traffic (B-J) yields
    assert got[("BJ", "JA")] == FREE
    signals = _osm_like_net({"J": "traffic_signals"})
    kind, prog = turn_controls(signals)
    jm = JunctionModel()
    at_j = signals.to_node[signals.turns[:, 0]] == "J"
    assert at_j.sum() == 6 and np.all(kind[at_j] == SIGNAL) and np.all(kind[~at_j] == FREE)  # U-turns at dead ends
    assert np.all(prog[at_j] == (jm.default_cycle_s, jm.default_green_s))
    # straight on A-J-B, no traffic: the prior is the free-flow time; at a signal it is longer
    e = ids.tolist().index("AJ")
    free = edge_prior(net, PLAIN).time_s[e]
    assert edge_prior(signals, PLAIN).time_s[e] > free
    arms = junction_arms(net)
    through = (arms.edge == e) & np.isclose(arms.weight, jm.through_share, rtol=1e-12)
    assert through.sum() == 1 and arms.pass_mps[through][0] == math.inf


def _cross(speed_kmh: float, north: tuple[float, float], classes: dict[str, str] | None = None) -> RoadNetwork:
    """A four-way junction J (local metres) of two-way roads W-J-E (straight) and N-J-S with the north arm's far end
    at ``north`` (the south arm straight down), every road at ``speed_kmh``; ``classes`` by edge id."""
    coords = {"W": (-100.0, 0.0), "J": (0.0, 0.0), "E": (100.0, 0.0), "N": north, "S": (0.0, -100.0)}
    pairs = [("W", "J"), ("J", "E"), ("N", "J"), ("J", "S")]
    edges = pairs + [(v, u) for u, v in pairs]
    from evroute.network._graph import junction_turns, node_codes

    (fi, ti), _ = node_codes([u for u, _ in edges], [v for _, v in edges])
    meta: dict[str, object] = {"crs": "local-metres"}
    if classes:
        meta["osm_road_class"] = classes
    return RoadNetwork(
        name="cross",
        edge_ids=np.array([f"{u}{v}" for u, v in edges]),
        from_node=np.array([u for u, _ in edges]),
        to_node=np.array([v for _, v in edges]),
        length_m=np.full(len(edges), 100.0),
        speed_mps=np.full(len(edges), speed_kmh / 3.6),
        z_from_m=np.zeros(len(edges)),
        z_to_m=np.zeros(len(edges)),
        geometry=[np.array([coords[u], coords[v]]) for u, v in edges],
        turns=junction_turns(fi, ti),
        meta=meta,
    )


def _controls(net: RoadNetwork) -> dict[tuple[str, str], int]:
    kind, _ = turn_controls(net)
    ids = net.edge_ids
    return {(ids[a], ids[b]): int(k) for (a, b), k in zip(net.turns.tolist(), kind, strict=True)}


def test_right_of_way_follows_netconvert():
    """netconvert's guessed junction types (NBNodeTypeComputer, NBEdgePriorityComputer in SUMO's netbuild)."""
    # equal roads below 49 km/h: right before left, every turn at J yields
    got = _controls(_cross(30.0, (0.0, 100.0)))
    at_j = [k for k in got if k[0].endswith("J")]
    assert len(at_j) == 12 and all(got[k] == YIELD for k in at_j)
    # equal roads at 50 km/h: a priority junction whose major road is the most opposite pair of approaches (W-E,
    # straight; N-S bent by 30 degrees); N and S yield, the major road's left turn yields to the oncoming major road
    got = _controls(_cross(50.0, (-57.7, 100.0)))
    assert got[("WJ", "JE")] == FREE and got[("EJ", "JW")] == FREE and got[("WJ", "JS")] == FREE  # right turn
    assert got[("NJ", "JS")] == YIELD and got[("SJ", "JE")] == YIELD and got[("SJ", "JW")] == YIELD
    assert got[("WJ", "JN")] == YIELD and got[("EJ", "JS")] == YIELD  # left across the oncoming major road
    # the class decides before the angle: a primary N-S road through residential W-E arms is the major road
    primary = {e: "primary" for e in ("NJ", "JN", "SJ", "JS")}
    got = _controls(_cross(50.0, (-57.7, 100.0), primary))
    assert got[("NJ", "JS")] == FREE and got[("WJ", "JE")] == YIELD and got[("EJ", "JW")] == YIELD


SHIFTED_XML = """<?xml version="1.0" encoding="UTF-8"?>
<net version="1.20" junctionCornerDetail="5" limitTurnSpeed="5.50">
    <location netOffset="0.00,0.00" convBoundary="0.00,-10.00,200.00,10.00" origBoundary="0,-10,200,10"
        projParameter="!"/>
    <edge id="AB" from="A" to="B" priority="2"><lane id="AB_0" index="0" speed="13.89" length="94.00"
        shape="0.00,-1.60 94.00,-1.60"/></edge>
    <edge id="BC" from="B" to="C" priority="2"><lane id="BC_0" index="0" speed="13.89" length="94.00"
        shape="106.00,-1.60 200.00,-1.60"/></edge>
    <edge id="BD" from="B" to="D" priority="2"><lane id="BD_0" index="0" speed="13.89" length="94.00"
        shape="101.60,-6.00 101.60,-100.00"/></edge>
    <junction id="A" type="dead_end" x="0.00" y="0.00" incLanes="" intLanes="" shape="0.00,0.00"/>
    <junction id="B" type="priority" x="100.00" y="0.00" incLanes="AB_0" intLanes="" shape="94,0 106,0 106,-6 94,-6"/>
    <junction id="C" type="dead_end" x="200.00" y="0.00" incLanes="BC_0" intLanes="" shape="200.00,0.00"/>
    <junction id="D" type="dead_end" x="100.00" y="-100.00" incLanes="BD_0" intLanes="" shape="100.00,-100.00"/>
    <connection from="AB" to="BC" fromLane="0" toLane="0" dir="s" state="M"/>
    <connection from="AB" to="BD" fromLane="0" toLane="0" dir="r" state="M"/>
</net>
"""


def test_sumo_turn_angles_come_from_the_lane_shapes(tmp_path):
    """A straight road through a junction whose right-hand lane (1.6 m off the centre line) stops 6 m before the
    junction centre: the drawn geometry's stubs to the centre bend it by 2 atan(1.6 / 6) = 30 degrees; the lane
    shapes say straight on (0) and a right angle for the right turn (1e-9 rad: rounding of the stored headings)."""
    p = tmp_path / "shifted.net.xml"
    p.write_text(SHIFTED_XML)
    net = load_sumo_net(p)
    ids = net.edge_ids.tolist()
    theta = dict(zip([(ids[a], ids[b]) for a, b in net.turns.tolist()], turn_deflection_rad(net), strict=True))
    assert theta[("AB", "BC")] == pytest.approx(0.0, abs=1e-9)
    assert theta[("AB", "BD")] == pytest.approx(math.pi / 2, abs=1e-6)
    drawn = dataclasses.replace(net, meta={k: v for k, v in net.meta.items() if k != "lane_headings"})
    bent = dict(zip([(ids[a], ids[b]) for a, b in drawn.turns.tolist()], turn_deflection_rad(drawn), strict=True))
    assert bent[("AB", "BC")] == pytest.approx(2 * math.atan(1.6 / 6.0), rel=1e-6)
