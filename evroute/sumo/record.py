"""Energy measured in SUMO: every probe traversal of an edge (edge, entry time, travel time, energy in Wh).

Every vehicle of SUMO's default type is the EV of the vehicle profile with a battery device (see
:mod:`evroute.sumo.vehicle`); SUMO reports each such vehicle's lane, position and energy of every simulation step;
:func:`evroute.sumo.attribution.attribute_steps` splits each step's energy over the lanes it covered (edges
crossed within one step get their share of distance), and :func:`steps_to_traversals` cuts each vehicle's steps
into edge traversals.  Two backends give the same steps:

* ``"output"`` (default): ``sumo`` writes ``--battery-output`` as Parquet (columnar, written by SUMO's C++),
  read with pandas;
* ``"libsumo"``: SUMO as a library, stepped from Python, reading each battery vehicle's lane, position, speed and
  its battery's charge (``device.battery.chargeLevel``, 0.01 Wh resolution, differenced per step: the net energy
  drawn) through subscriptions.

``studies/bench/bench_sumo_recording.py`` measures both on the same demand: they agree to 0.01 Wh and the Parquet output
was faster in median, within the noise of the shared machine (``docs/results/archive/sumo_benchmark.md``).

A traversal of edge ``e`` starts at the first step the vehicle is on ``e`` and ends at the first step it is on
the next normal edge; the junction (internal lanes) between them counts to ``e``.  The first and the last edge of
each trip are partial (departure and arrival positions) and are dropped, and so is any traversal whose
predecessor or successor is not a legal connection of the net (a teleport of a jammed vehicle).  Each traversal
records the edge driven next (``next_edge``): the turn ``edge -> next_edge`` it ended with, what turn arms
(:mod:`evroute.arms`) are scored on.

**Energy that telescopes.**  At the wheels, work = change of kinetic energy + change of potential energy +
dissipated work (rolling, drag, braking), and the battery pays ``W+/eta+ - W- eta- + aux`` with ``eta <= 1``, so
for every traversal ``energy - (kinetic + potential) >= 0``: the *reduced* energy (losses, resistances,
auxiliaries).  Per traversal :func:`record_traversals` stores

* ``kinetic_wh = 1/2 m_eff (v_exit^2 - v_entry^2) / 3600`` with ``m_eff = mass + rotatingMass``
  (:func:`evroute.sumo.vehicle.effective_mass_kg`, what SUMO's ``Energy`` model charges for acceleration) and
  entry/exit speeds at the traversal's boundaries: the step's change of kinetic energy is split over the lanes
  the step covered by distance, exactly like its battery energy, i.e. ``v^2`` is interpolated linearly in distance
  inside the step where the boundary falls (``entry_speed_mps``, ``exit_speed_mps``);
* ``potential_wh = m g (z_to - z_from) / 3600``, the edge's junction elevations as the network loader reads them
  (:func:`evroute.network.sumo.load_sumo_net`; ``g`` = SUMO's 9.81 m/s^2), a constant per edge;
* ``reduced_wh = energy_wh - kinetic_wh - potential_wh``.

Both potentials telescope: a vehicle's exit speed of one traversal is its entry speed of the next, consecutive
edges share their junction's height, so along a trip from rest to rest the kinetic terms sum to 0 and the potential
terms to ``m g (z_end - z_start)``.  What keeps a reduced energy from being exactly the physics' non-negative
dissipation: SUMO charges the potential per step as ``m g sin(slope) v dt`` on the lane it ends on (so inside
junctions and at lane ends it is not exactly the junction-to-junction ``m g dz``), the battery output's 1e-6 Wh
(libsumo: 0.01 Wh) resolution, and the first step after insertion (its kinetic energy is the insertion speed's).
The kinetic term uses ``m_eff`` for both energy models; ``MMPEVEM`` charges its own rotating inertia
(``m + internalMomentOfInertia / wheelRadius^2``), so there a small fraction of each kinetic change stays in the
reduced energy (it still telescopes: any fixed ``m_eff`` does).  ``MMPEVEM`` also reports NaN energy for some steps
(cause not traced here; SUMO's MMPEVEM flags operating points beyond the motor's torque or power limits, or outside
its loss map, as invalid); those traversals keep a NaN energy here and the replay leaves them out.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evroute.energy import VehicleProfile
from evroute.errors import DataError, ParameterError
from evroute.sumo.attribution import attribute_steps, lane_graph
from evroute.sumo.binaries import SumoError, import_libsumo, run_sumo_program, sumo_binary
from evroute.sumo.vehicle import SUMO_GRAVITY_MPS2, battery_params, effective_mass_kg, ev_vtype_xml

#: columns of :func:`steps_to_traversals` (without kinetic energies); ``next_edge``: the edge the vehicle drives
#: right after this traversal (every kept traversal has one: a trip's last edge is dropped), the turn taken
STEP_TRAVERSAL_COLUMNS = ("vehicle", "edge", "next_edge", "entry_s", "travel_s", "energy_wh")
#: columns of :func:`record_traversals` (module doc: energy that telescopes)
TRAVERSAL_COLUMNS = (
    *STEP_TRAVERSAL_COLUMNS,
    "kinetic_wh",
    "potential_wh",
    "reduced_wh",
    "entry_speed_mps",
    "exit_speed_mps",
)
#: version of the step-to-traversal conversion, part of the cache key of recorded days (2: energy by distance;
#: 3: kinetic and potential energy per traversal, reduced energy; 4: the next edge of every traversal, for turn arms)
ATTRIBUTION_VERSION = 4
METHODS = ("output", "libsumo")


def write_vtype_file(
    path: str | os.PathLike[str],
    vehicle: VehicleProfile | None = None,
    *,
    model: str = "Energy",
    extra: dict[str, float] | None = None,
    attributes: dict[str, str] | None = None,
) -> Path:
    """Write an additional file redefining SUMO's default vehicle type as the EV (see :func:`ev_vtype_xml`)."""
    p = Path(path)
    p.write_text(
        "<additional>\n" + ev_vtype_xml(vehicle, model=model, extra=extra, attributes=attributes) + "\n</additional>\n"
    )
    return p


def steps_to_traversals(
    time_s: np.ndarray,
    vehicle: Any,
    lane: Any,
    energy_wh: np.ndarray,
    legal_turns: set[tuple[str, str]] | None = None,
    *,
    kinetic_wh: np.ndarray | None = None,
) -> pd.DataFrame:
    """Cut per-step records (any order) into complete edge traversals (vectorised: millions of steps in seconds).

    Args:
        time_s, vehicle, lane, energy_wh: ``(S,)`` step time (s), vehicle id, lane id (``:...`` for a junction's
            internal lane) and energy consumed in the step (Wh, negative when recuperating); ids as arrays of str
            or pandas Categoricals.
        legal_turns: the net's connections ``(from_edge, to_edge)``; traversals entered or left through anything
            else (teleports) are dropped.  ``None`` keeps them.
        kinetic_wh: optional ``(S,)`` change of kinetic energy in the step (Wh), the vehicle's first step holding
            its kinetic energy at the end of that step (from rest before insertion), so that a vehicle's
            cumulative sum is its kinetic energy at the end of each step (:func:`kinetic_steps`).

    Returns:
        DataFrame with :data:`STEP_TRAVERSAL_COLUMNS`, sorted by entry time; with ``kinetic_wh``, also
        ``kinetic_wh`` (its sum over the traversal) and ``entry_kinetic_wh`` (the kinetic energy at entry).
    """
    t = np.asarray(time_s, dtype=np.float64)
    en = np.asarray(energy_wh, dtype=np.float64)
    with_kin = kinetic_wh is not None
    cols = STEP_TRAVERSAL_COLUMNS + (("kinetic_wh", "entry_kinetic_wh") if with_kin else ())
    kin = np.asarray(kinetic_wh, dtype=np.float64) if with_kin else np.zeros(len(t))
    if len(t) == 0:
        return pd.DataFrame({c: [] for c in cols})
    veh_code, veh_names = pd.factorize(vehicle)
    lane_code, lane_names = pd.factorize(lane)
    present = (veh_code >= 0) & (lane_code >= 0)  # column outputs write empty time steps as rows of nulls
    if not present.all():
        veh_code, lane_code, t, en, kin = veh_code[present], lane_code[present], t[present], en[present], kin[present]
    lane_names = pd.Index(lane_names).astype(str)
    internal = lane_names.str.startswith(":")
    edge_of_lane_name = lane_names.str.rsplit("_", n=1).str[0]
    edge_code_of_lane, edge_names = pd.factorize(edge_of_lane_name.where(~internal, None))  # internal: -1
    order = np.lexsort((np.arange(len(t)), t, veh_code))  # ties in time keep the input (driving) order
    v, e, t, en, kin = veh_code[order], edge_code_of_lane[lane_code[order]], t[order], en[order], kin[order]
    first = np.ones(len(v), dtype=bool)
    first[1:] = v[1:] != v[:-1]
    # kinetic energy before each row: the vehicle's cumulative sum of the rows before it
    cs = np.cumsum(kin)
    head = np.maximum.accumulate(np.where(first, np.arange(len(v)), 0))
    kin_before = cs - kin - (cs[head] - kin[head])
    # junction steps count to the edge before: forward-fill -1 within each vehicle (a vehicle's first rows stay -1)
    idx = np.maximum.accumulate(np.where((e >= 0) | first, np.arange(len(e)), 0))
    e = e[idx]
    ok = e >= 0
    v, e, t, en, kin, kin_before = v[ok], e[ok], t[ok], en[ok], kin[ok], kin_before[ok]
    new = np.ones(len(v), dtype=bool)
    new[1:] = (v[1:] != v[:-1]) | (e[1:] != e[:-1])
    starts = np.flatnonzero(new)
    sv, se, entry = v[starts], e[starts], t[starts]
    energy = np.add.reduceat(en, starts)
    same_next = np.zeros(len(starts), dtype=bool)
    same_next[:-1] = sv[1:] == sv[:-1]
    same_prev = np.zeros(len(starts), dtype=bool)
    same_prev[1:] = sv[1:] == sv[:-1]
    travel = np.full(len(starts), np.nan)
    travel[:-1] = entry[1:] - entry[:-1]
    keep = same_next & same_prev  # drop each vehicle's first (departure) and last (arrival) edge
    if legal_turns is not None:
        code = {name: i for i, name in enumerate(edge_names)}
        m = len(edge_names) + 1
        legal = np.array([code[a] * m + code[b] for a, b in legal_turns if a in code and b in code], dtype=np.int64)
        pair = np.full(len(starts), -1, dtype=np.int64)
        pair[:-1] = se[:-1] * m + se[1:]  # turn from this segment into the next
        ok_out = np.isin(pair, legal)
        ok_in = np.zeros(len(starts), dtype=bool)
        ok_in[1:] = ok_out[:-1]
        keep &= ok_in & ok_out
    tr = pd.DataFrame(
        {
            "vehicle": np.asarray(veh_names, dtype=object)[sv[keep]].astype(str),
            "edge": np.asarray(edge_names, dtype=object)[se[keep]].astype(str),
            "next_edge": np.asarray(edge_names, dtype=object)[np.append(se[1:], se[-1])[keep]].astype(str),
            "entry_s": entry[keep],
            "travel_s": travel[keep],
            "energy_wh": energy[keep],
        }
    )
    if with_kin:
        tr["kinetic_wh"] = np.add.reduceat(kin, starts)[keep]
        tr["entry_kinetic_wh"] = kin_before[starts][keep]
    return tr.sort_values(["entry_s", "vehicle"], kind="stable").reset_index(drop=True)


def kinetic_steps(time_s: np.ndarray, vehicle: Any, speed_mps: np.ndarray, mass_kg: float) -> np.ndarray:
    """``(S,)`` change of kinetic energy ``1/2 m (v_i^2 - v_{i-1}^2) / 3600`` (Wh) in each step (any order).

    ``v_{i-1}`` is the same vehicle's speed at its previous step; a vehicle's first step gets its kinetic energy
    ``1/2 m v_0^2`` (from rest before insertion), so the cumulative sum per vehicle is its kinetic energy.
    """
    t = np.asarray(time_s, dtype=np.float64)
    ke = 0.5 * float(mass_kg) * np.asarray(speed_mps, dtype=np.float64) ** 2 / 3600.0
    code, _ = pd.factorize(vehicle)
    order = np.lexsort((np.arange(len(t)), t, code))
    k = ke[order]
    d = np.diff(k, prepend=0.0)
    same = np.zeros(len(k), dtype=bool)
    same[1:] = code[order][1:] == code[order][:-1]
    d = np.where(same, d, k)
    out = np.empty(len(t))
    out[order] = d
    return out


def edge_rise_m(net_file: str | os.PathLike[str]) -> dict[str, float]:
    """``z_to - z_from`` (m) of every passenger edge of a SUMO net, the junction elevations of
    :func:`evroute.network.sumo.load_sumo_net` (so that consecutive edges share their junction's height)."""
    from evroute.network.sumo import load_sumo_net

    net = load_sumo_net(net_file)
    return dict(zip(net.edge_ids.tolist(), (net.z_to_m - net.z_from_m).tolist(), strict=True))


def net_connections(net_file: str | os.PathLike[str]) -> set[tuple[str, str]]:
    """All ``(from_edge, to_edge)`` connections between normal edges of a SUMO net (via sumolib)."""
    import sumolib

    from evroute.network.xmlguard import check_xml_file

    check_xml_file(net_file, "SUMO network file")  # no DTD, no bomb (evroute.network.xmlguard)

    out: set[tuple[str, str]] = set()
    for c in sumolib.xml.parse_fast(str(net_file), "connection", ["from", "to"]):
        if not c.attr_from.startswith(":") and not c.to.startswith(":"):
            out.add((c.attr_from, c.to))
    return out


def _sumo_args(
    net_file: Path,
    route_files: Sequence[Path],
    vtype_file: Path,
    begin: float,
    end: float | None,
    step_length: float,
    seed: int,
    extra: Iterable[str],
) -> list[str]:
    args = [
        "-n",
        str(net_file),
        "--additional-files",
        str(vtype_file),
        "-r",
        ",".join(str(p) for p in route_files),
        "-b",
        f"{begin:g}",
        "--step-length",
        f"{step_length:g}",
        "--seed",
        str(int(seed)),
        "--no-step-log",
        "true",
        "--no-warnings",
        "true",
        "--ignore-route-errors",
        "true",
        "--duration-log.disable",
        "true",
    ]
    if end is not None:
        args += ["-e", f"{end:g}"]
    return args + list(extra)


def record_traversals(
    net_file: str | os.PathLike[str],
    route_files: Sequence[str | os.PathLike[str]],
    *,
    vehicle: VehicleProfile | None = None,
    model: str = "Energy",
    begin: float = 0.0,
    end: float | None = None,
    step_length: float = 1.0,
    seed: int = 0,
    method: str = "output",
    vtype_extra: dict[str, float] | None = None,
    vtype_attributes: dict[str, str] | None = None,
    sumo_args: Sequence[str] = (),
    timeout_s: float = 3600.0,
) -> pd.DataFrame:
    """Simulate ``route_files`` on ``net_file`` and return every complete EV edge traversal.

    Args:
        net_file: SUMO network.
        route_files: demand (vehicles without a type become the EV; typed vehicles are background only).
        vehicle, model: the EV (profile and ``"Energy"`` / ``"MMPEVEM"``), see :mod:`evroute.sumo.vehicle`.
        begin, end: simulated time window in s (``end=None``: until every vehicle has arrived).
        step_length: simulation step in s.
        seed: SUMO's random seed (driver imperfection, departure lanes...).
        method: ``"output"`` (Parquet battery output) or ``"libsumo"``.
        vtype_extra, vtype_attributes: passed to :func:`evroute.sumo.vehicle.ev_vtype_xml`.
        sumo_args: further ``sumo`` options.

    Returns:
        DataFrame with :data:`TRAVERSAL_COLUMNS`: ``entry_s`` and ``travel_s`` in s; ``energy_wh`` (battery),
        ``kinetic_wh``, ``potential_wh`` and ``reduced_wh`` in Wh; entry and exit speed in m/s (module doc).
        Edges the network loader leaves out (not for passenger cars) have a NaN potential and reduced energy.

    Raises:
        SumoError: SUMO or libsumo missing, or the simulation failing (its first error line).
    """
    if method not in METHODS:
        raise ParameterError(f"unknown recording method {method!r} (use {' or '.join(METHODS)})")
    if step_length <= 0:
        raise ParameterError(f"step_length must be > 0, got {step_length}")
    net = Path(net_file)
    routes = [Path(p) for p in route_files]
    for p in [net, *routes]:
        if not p.is_file():
            raise DataError(f"file not found: {p}")
    from evroute.network.cachefiles import temp_prefix

    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix("evroute-sumo-")))
    try:
        vt = write_vtype_file(tmp / "ev.add.xml", vehicle, model=model, extra=vtype_extra, attributes=vtype_attributes)
        args = _sumo_args(net, routes, vt, begin, end, step_length, seed, sumo_args)
        if method == "output":
            steps = _steps_from_output(args, tmp, timeout_s)
        else:
            steps = _steps_from_libsumo(args, step_length, end, battery_params(vehicle or VehicleProfile())[1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    t, veh, lane, pos, energy, speed = steps
    m_eff = effective_mass_kg(vehicle, vtype_extra)
    both = np.column_stack([energy, kinetic_steps(t, veh, speed, m_eff)])
    t2, v2, l2, e2 = attribute_steps(t, veh, lane, pos, both, lane_graph(net))
    tr = steps_to_traversals(t2, v2, l2, e2[:, 0], legal_turns=net_connections(net), kinetic_wh=e2[:, 1])
    mass = (vehicle or VehicleProfile()).mass_kg
    rise = tr["edge"].map(edge_rise_m(net)).to_numpy(dtype=np.float64)
    entry_ke = tr.pop("entry_kinetic_wh").to_numpy()
    tr["potential_wh"] = mass * SUMO_GRAVITY_MPS2 * rise / 3600.0
    tr["reduced_wh"] = tr["energy_wh"] - tr["kinetic_wh"] - tr["potential_wh"]
    tr["entry_speed_mps"] = np.sqrt(np.maximum(2.0 * 3600.0 * entry_ke / m_eff, 0.0))
    tr["exit_speed_mps"] = np.sqrt(np.maximum(2.0 * 3600.0 * (entry_ke + tr["kinetic_wh"].to_numpy()) / m_eff, 0.0))
    return tr[list(TRAVERSAL_COLUMNS)]


def _steps_from_output(args: list[str], tmp: Path, timeout_s: float) -> tuple[np.ndarray, ...]:
    out = tmp / "battery.parquet"
    run_sumo_program(
        [sumo_binary("sumo"), *args, "--battery-output", str(out), "--battery-output.precision", "6"],
        "sumo",
        timeout_s=timeout_s,
    )
    if not out.is_file():
        raise SumoError("sumo wrote no battery output (no vehicle of the default type was simulated)")
    cols = [
        "timestep_time",
        "vehicle_id",
        "vehicle_lane",
        "vehicle_posOnLane",
        "vehicle_energyConsumed",
        "vehicle_speed",
    ]
    import pyarrow.parquet as pq

    try:
        names = set(pq.read_schema(out).names)
        if not set(cols) <= names:  # only empty time steps: SUMO writes no vehicle columns
            return (np.zeros(0), np.zeros(0, dtype=str), np.zeros(0, dtype=str), np.zeros(0), np.zeros(0), np.zeros(0))
        # ids dictionary-encoded (pandas Categoricals): millions of steps, a few thousand distinct ids
        df = pq.read_table(out, columns=cols, read_dictionary=cols[:3]).to_pandas()
    except Exception as exc:  # noqa: BLE001 - pyarrow errors on an empty/odd file
        raise SumoError(f"cannot read SUMO's battery output: {str(exc).splitlines()[0]}") from None
    times = df["timestep_time"].cat.categories.astype(np.float64).to_numpy()[df["timestep_time"].cat.codes.to_numpy()]
    return (
        times,
        df["vehicle_id"],
        df["vehicle_lane"],
        df["vehicle_posOnLane"].to_numpy(dtype=np.float64),
        df["vehicle_energyConsumed"].to_numpy(dtype=np.float64),
        df["vehicle_speed"].to_numpy(dtype=np.float64),
    )


def _steps_from_libsumo(
    args: list[str], step_length: float, end: float | None, charge_wh: float
) -> tuple[np.ndarray, ...]:
    """Per-step records through libsumo; ``charge_wh``: the EV's initial battery charge (Wh)."""
    ls = import_libsumo()
    from traci import constants as tc

    try:
        ls.start([str(sumo_binary("sumo")), *args])
    except Exception as exc:  # noqa: BLE001 - libsumo.TraCIException / FatalTraCIError
        raise SumoError(f"sumo (libsumo) failed to start: {str(exc).splitlines()[0]}") from None
    times: list[float] = []
    vehs: list[str] = []
    lanes: list[str] = []
    positions: list[float] = []
    energy: list[float] = []
    speeds: list[float] = []
    last: dict[str, float] = {}
    var_lane, var_pos, var_speed = tc.VAR_LANE_ID, tc.VAR_LANEPOSITION, tc.VAR_SPEED
    key = "device.battery.chargeLevel"
    try:
        stop = np.inf if end is None else end
        while ls.simulation.getMinExpectedNumber() > 0 and ls.simulation.getTime() < stop:
            ls.simulationStep()
            for vid in ls.simulation.getDepartedIDList():
                if ls.vehicle.getParameter(vid, "has.battery.device") == "true":
                    ls.vehicle.subscribe(vid, [var_lane, var_pos, var_speed])
                    ls.vehicle.subscribeParameterWithKey(vid, key)
            t = ls.simulation.getTime() - step_length  # the step's own time, as in SUMO's outputs
            for vid, res in ls.vehicle.getAllSubscriptionResults().items():
                total = charge_wh - float(res[tc.VAR_PARAMETER_WITH_KEY][1])  # net energy drawn so far (Wh)
                times.append(t)
                vehs.append(vid)
                lanes.append(res[var_lane])
                positions.append(float(res[var_pos]))
                speeds.append(float(res[var_speed]))
                energy.append(total - last.get(vid, 0.0))
                last[vid] = total
    except Exception as exc:  # noqa: BLE001
        raise SumoError(f"sumo (libsumo) failed: {str(exc).splitlines()[0]}") from None
    finally:
        ls.close()
    return (
        np.asarray(times),
        np.asarray(vehs),
        np.asarray(lanes),
        np.asarray(positions),
        np.asarray(energy),
        np.asarray(speeds),
    )


__all__ = [
    "ATTRIBUTION_VERSION",
    "METHODS",
    "STEP_TRAVERSAL_COLUMNS",
    "TRAVERSAL_COLUMNS",
    "edge_rise_m",
    "kinetic_steps",
    "net_connections",
    "record_traversals",
    "steps_to_traversals",
    "write_vtype_file",
]
