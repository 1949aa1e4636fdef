"""The known-truth study's data (:mod:`studies.trip_logs.known_truth`, module doc steps 1-3): the simulated trips of
a study folder (:func:`load_study`), their map matches kept per folder without pickle (:func:`_match_trips`), and the
reduced-energy readings of the training trips (:func:`_readings`)."""

from __future__ import annotations

import csv
import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Any, cast

import numpy as np

CONDITIONS = {  # name: (period_s, gps_sigma_m, soc_step_pct); "exact": SUMO's own log (the bound of log quality)
    "exact": (1.0, 0.0, 1e-6),
    "1s_5m_0.1pct": (1.0, 5.0, 0.1),
    "10s_15m_0.1pct": (10.0, 15.0, 0.1),
    "1s_15m_1pct": (1.0, 15.0, 1.0),
}
MATCH_FIELDS = ["network", "condition", "trip", "samples", "recall", "precision", "cpu_s"]


#: the ``learn_interval`` value of rows whose ``cover90_learn`` is the interval ``evroute route --model-file`` serves
#: from the mixture ``evroute learn`` stores (model format 2); older rows lack the field: their ``cover90_learn`` is
#: the readings' noise per traversal with the trip effect by moments
LEARN_SERVED = "served"


def learn_interval_kind(rows: list[dict]) -> str:
    """``"served"`` (every learned row records ``learn_interval`` = :data:`LEARN_SERVED`), ``"moments"`` (none does)
    or ``"mixed"``: what the rows' ``cover90_learn`` column means, for the reports' text."""
    learned = [r for r in rows if r.get("model") != "prior"]
    served = sum(r.get("learn_interval") == LEARN_SERVED for r in learned)
    return "served" if learned and served == len(learned) else ("moments" if served == 0 else "mixed")


def _read_header(path: Path) -> list[str]:
    """The column names of a CSV file's first line."""
    with path.open(newline="") as fh:
        return next(csv.reader(fh), [])


def _append(path: Path, fields: list[str], rows: list[dict]) -> None:
    """Append ``rows`` to the CSV ``path`` (its header ``fields`` when new); an existing file keeps its own columns
    (a folder written before a column was added: the new column is left out, not shifted into others)."""
    new = not path.is_file()
    if not new:
        fields = _read_header(path) or fields
    with path.open("a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
        if new:
            w.writeheader()
        w.writerows(rows)


def _cpu() -> float:
    """CPU seconds of this process and its finished children (SUMO), user + system."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _read(path: Path) -> list[dict]:
    return list(csv.DictReader(path.open())) if path.is_file() else []


@dataclasses.dataclass
class Study:
    """What every analysis of one study folder shares (:func:`load_study`): the network, the simulated trips and the
    held-out trips' weights and boundary terms (module doc, step 3)."""

    lg: Any
    prior: str  # the prior's name (evroute.energy.PRIORS), its mean the reduced energies of that model
    vehicle: Any
    sumo_v: Any  # the vehicle with SUMO's g: reduced energies as SUMO charges them
    m_kin: float  # SUMO's kinetic mass m + rotatingMass (kg)
    usable: float  # usable capacity (Wh)
    traces: dict
    train: list[str]
    test: list[str]
    truth: dict  # trip -> (n,) edge indices of its route
    energy: dict  # trip -> SUMO battery energy (Wh)
    e_det: np.ndarray  # (E,) the prior's edge energies (Wh)
    red_prior: np.ndarray  # (E,) the prior mean of reduced energies (Wh)
    exact_index: Any  # MatchIndex for SUMO's exact logs
    w_test: list[np.ndarray]  # per held-out drive: (n,) driven share of each route edge
    bnd_test: np.ndarray  # (D,) per held-out drive: boundary term M(end) - M(start) (Wh)
    y_test: np.ndarray  # (D,) per held-out drive: SUMO battery energy (Wh)
    drive_test: np.ndarray  # (D,) per held-out drive: its route's index in ``test``
    repeats: int = 0  # drives per held-out route in the second run (0: each route's one drive in the first run)

    def drive_routes(self) -> list[np.ndarray]:
        """Per held-out drive ``(D,)``: the edge indices of its route (``truth`` of its held-out trip)."""
        return [self.truth[self.test[i]] for i in self.drive_test]


def load_study(
    network: str,
    out: Path,
    n_train: int,
    n_test: int,
    min_route_m: float,
    prior: str = "profile",
    repeats: int = 0,
) -> Study:
    """Simulate (once; kept in ``out / "sim"``) and load the study's trips (module doc, steps 1 and 3); with
    ``repeats`` R > 0 the held-out drives are the R drives of each held-out route of the second run
    (:func:`studies.trip_logs.known_truth_repeats.repeat_drives`, kept in ``out / "sim_repeats"``), else each held-out
    trip's one drive of the first run."""
    from evroute.energy import VehicleProfile, edge_prior
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.sumo.replay import sumo_net_file
    from evroute.sumo.triplogs import random_routes, simulate_trips
    from evroute.sumo.vehicle import SUMO_GRAVITY_MPS2, effective_mass_kg
    from evroute.traces.formats import read_sumo_fcd
    from evroute.traces.mapmatch import MatchIndex, MatchOptions
    from evroute.traces.mechanical import reduced_prior_wh

    out.mkdir(parents=True, exist_ok=True)
    vehicle = VehicleProfile.load("sumo_ev")
    lg = build_line_graph(load_network(network))
    net = lg.network
    index_of = {str(e): i for i, e in enumerate(net.edge_ids)}
    sim = out / "sim"
    routes = random_routes(lg, n_train + n_test, min_route_m, np.random.default_rng(0))
    if not (sim / "battery.xml").is_file():
        t0 = _cpu()
        simulate_trips(sumo_net_file(lg), routes, sim, vehicle=vehicle, depart_gap_s=20.0, arrive_at_rest=True)
        print(f"simulated {len(routes)} trips ({_cpu() - t0:.1f} CPU s incl. SUMO)", file=sys.stderr)
    traces = {t.name: t for t in read_sumo_fcd(sim / "fcd.xml", sim / "battery.xml")}
    usable = (vehicle.max_soc - vehicle.min_soc) * vehicle.battery_capacity_wh
    names = [n for n in routes if n in traces]
    train, test = names[:n_train], names[n_train : n_train + n_test]
    truth = {n: np.array([index_of[e] for e in routes[n]]) for n in names}
    energy = {n: float(traces[n].soc_pct[0] - traces[n].soc_pct[-1]) / 100.0 * usable for n in names}
    # reduced energies as SUMO charges them: its g and kinetic mass; a route's battery energy = sum + its boundary
    sumo_v = dataclasses.replace(vehicle, gravity_mps2=SUMO_GRAVITY_MPS2)
    m_kin = effective_mass_kg(vehicle)
    exact_index = MatchIndex(lg, MatchOptions(sigma_m=5.0, beta_m=10.0))
    if repeats:
        from studies.trip_logs.known_truth_repeats import repeat_drives

        drive_traces, drive_test = repeat_drives(sumo_net_file(lg), routes, train, test, repeats, out, vehicle)
    else:
        drive_traces, drive_test = [traces[n] for n in test], np.arange(len(test))
    w_test, bnd_list = [], []
    for tr, i in zip(drive_traces, drive_test, strict=True):
        w, bnd = drive_shares(tr, truth[test[i]], exact_index, net, sumo_v, m_kin)
        w_test.append(w)
        bnd_list.append(bnd)
    return Study(
        lg=lg,
        prior=prior,
        vehicle=vehicle,
        sumo_v=sumo_v,
        m_kin=m_kin,
        usable=usable,
        traces=traces,
        train=train,
        test=test,
        truth=truth,
        energy=energy,
        e_det=edge_prior(net, vehicle, prior).energy_wh,
        red_prior=reduced_prior_wh(net, vehicle, prior),
        exact_index=exact_index,
        w_test=w_test,
        bnd_test=np.array(bnd_list),
        y_test=np.array([float(tr.soc_pct[0] - tr.soc_pct[-1]) / 100.0 * usable for tr in drive_traces]),
        drive_test=np.asarray(drive_test, dtype=np.int64),
        repeats=repeats,
    )


def drive_shares(tr: Any, route: np.ndarray, exact_index: Any, net: Any, sumo_v: Any, m_kin: float) -> tuple:
    """``(w, boundary)`` of one held-out drive ``tr`` (SUMO's exact log) of ``route`` ``(n,)`` edge indices: ``w``
    ``(n,)`` the driven share of each route edge and the boundary term ``M(end) - M(start)`` (Wh).  SUMO's lanes
    start and end metres inside an edge (junctions), so the first and last edges are partly driven; their shares and
    the boundary term at the drive's real end points come from its exact log matched to the network (the drive's own
    start and end, as a driver's query gives them)."""
    from evroute.traces.mechanical import path_height_m, sample_mechanical_wh

    m = exact_index.match(tr.lat, tr.lon)
    ln = exact_index.length_m[route]
    start = m.offset_m[0] / ln[0] if m.edge[0] == route[0] else 0.0  # share of the first edge not driven
    end = m.offset_m[-1] / ln[-1] if m.edge[-1] == route[-1] else 1.0  # share of the last edge driven
    w = np.ones(len(route))
    w[-1] = min(end, 1.0)
    w[0] -= min(start, 1.0)  # a one-edge route: end - start
    z = path_height_m(m.edge[[0, -1]], m.offset_m[[0, -1]], exact_index.length_m, net.z_from_m, net.z_to_m)
    z = np.where(np.isfinite(z), z, [net.z_from_m[route[0]], net.z_to_m[route[-1]]])
    mech = sample_mechanical_wh(tr.speed_mps[[0, -1]], z, sumo_v, m_kin)
    return np.clip(w, 0.0, 1.0), float(mech[1] - mech[0])


_MATCH_FIELDS = ("edge", "offset_m", "path", "path_index", "piece")


def _save_matches(store: Path, kept: dict[str, Any]) -> None:
    """Write the matches ``{trip: MatchedTrace}`` to ``store`` (``.npz``; one set of arrays per trip), atomically."""
    arrays: dict[str, np.ndarray] = {}
    for name, m in kept.items():
        for f in _MATCH_FIELDS:
            v = getattr(m, f)
            arrays[f"{name}/{f}"] = np.zeros(0, dtype=np.int64) if v is None else np.asarray(v)
        arrays[f"{name}/pieces"] = np.asarray(m.pieces, dtype=np.int64)
        arrays[f"{name}/has_piece"] = np.asarray(m.piece is not None)
    tmp = store.with_name(store.name + ".tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, allow_pickle=False, **cast(dict[str, Any], arrays))
    tmp.replace(store)


def _load_matches(store: Path) -> dict[str, Any]:
    """The matches :func:`_save_matches` wrote (``{}`` when ``store`` is missing or unreadable: they are re-matched)."""
    from evroute.traces.mapmatch import MatchedTrace

    if not store.is_file():
        return {}
    try:
        with np.load(store, allow_pickle=False) as z:
            names = {k.rsplit("/", 1)[0] for k in z.files}
            out = {}
            for name in names:
                f = {k: z[f"{name}/{k}"] for k in _MATCH_FIELDS}
                piece = f["piece"] if bool(z[f"{name}/has_piece"]) else None
                out[name] = MatchedTrace(
                    f["edge"], f["offset_m"], f["path"], f["path_index"], int(z[f"{name}/pieces"]), piece
                )
            return out
    except (OSError, ValueError, KeyError):
        return {}


def _match_trips(st: Study, cond: str, out: Path, network: str) -> dict[str, tuple[Any, Any]]:
    """``{trip: (degraded log, match)}`` of every training trip under ``cond`` (module doc, step 2), matched once per
    study folder: the matches are kept in ``out / f"matched_{cond}.npz"`` (arrays only, read without pickle; the logs
    are re-degraded from their seeds, which is cheap and exact), the matching rows appended to ``matching.csv`` the
    first time."""
    from evroute.sumo.triplogs import degrade
    from evroute.traces.mapmatch import MatchIndex, MatchOptions

    period, sigma, step = CONDITIONS[cond]
    store = out / f"matched_{cond}.npz"
    kept: dict[str, Any] = _load_matches(store)
    index = None
    have_match = {r["trip"] for r in _read(out / "matching.csv") if r["condition"] == cond}
    matched, rows = {}, []
    for k, name in enumerate(st.train):
        log = degrade(
            st.traces[name], np.random.default_rng(1000 + k), gps_sigma_m=sigma, period_s=period, soc_step_pct=step
        )
        if name not in kept:
            if index is None:
                index = MatchIndex(st.lg, MatchOptions(sigma_m=max(sigma, 5.0), beta_m=10.0 if period <= 1 else 30.0))
            t0 = time.process_time()
            kept[name] = index.match(log.lat, log.lon)
            cpu = time.process_time() - t0
            if name not in have_match:
                true_set, got = set(st.truth[name].tolist()), set(kept[name].path.tolist())
                rows.append(
                    dict(
                        network=network,
                        condition=cond,
                        trip=name,
                        samples=len(log),
                        recall=f"{len(true_set & got) / len(true_set):.4f}",
                        precision=f"{len(true_set & got) / max(len(got), 1):.4f}",
                        cpu_s=f"{cpu:.4f}",
                    )
                )
        matched[name] = (log, kept[name])
    if index is not None:
        _save_matches(store, kept)
    if rows:
        _append(out / "matching.csv", MATCH_FIELDS, rows)
    return matched


def _readings(st: Study, matched: dict, cond: str, names: list[str], fracs: list[float], exponent: float = 0.0) -> dict:
    """``{(trip, f): Readings or None}`` (None: matched in more than one piece, unusable) of the trips ``names`` for
    each nominal noise fraction ``f`` (module doc, step 3: reduced energies); one traversal's noise ``f^2 var_det``
    times the edge's :func:`~evroute.models.linear_obs.traversal_noise_weights` of the prior mean and ``exponent``
    (what a model with that ``noise_exponent`` gives ``evroute learn``)."""
    from evroute.models.linear_obs import traversal_noise_weights
    from evroute.traces.mechanical import path_height_m, sample_mechanical_wh
    from evroute.traces.observations import trace_readings

    net, length = st.lg.network, st.exact_index.length_m
    step = CONDITIONS[cond][2]
    var_det = float(np.var(st.e_det))
    weights = traversal_noise_weights(st.red_prior, exponent)
    out: dict[tuple[str, float], Any] = {}
    for name in names:
        log, m = matched[name]
        if m.pieces != 1:
            out.update({(name, f): None for f in fracs})
            continue
        z = path_height_m(m.edge, m.offset_m, length, net.z_from_m, net.z_to_m)
        mech = sample_mechanical_wh(log.speed_mps, z, st.sumo_v, st.m_kin)
        for f in fracs:
            out[(name, f)] = trace_readings(
                log,
                m,
                length,
                st.usable,
                f**2 * var_det * weights,
                soc_step=step,
                mechanical_wh=mech,
                drop_start=True,  # as evroute learn does (trace_readings' trip ends): the departure's windows
                drop_end=False,
            )
    return out


def _per_route(drive_route: np.ndarray, routes: list[np.ndarray], fn: Any) -> Any:
    """``i -> fn(edges of held-out route i)``, each route's computed once (its drives share it)."""
    first = {int(i): r for i, r in zip(drive_route, routes, strict=True)}
    memo: dict[int, Any] = {}

    def get(i: int) -> Any:
        if int(i) not in memo:
            memo[int(i)] = fn(first[int(i)])
        return memo[int(i)]

    return get


class _Serial:
    """A stand-in for a process pool of one worker: ``imap_unordered`` in this process."""

    def __enter__(self) -> _Serial:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def imap_unordered(self, fn: Any, items: list) -> Any:
        return map(fn, items)
