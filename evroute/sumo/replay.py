"""A SUMO day recorded once: every EV traversal of every edge, with probe trips for edges traffic leaves out.

:func:`record_day` simulates the background demand of a network (:func:`evroute.sumo.scenario.background_demand`, or the
user's route files) with every vehicle an EV of the profile, and records all traversals
(:func:`evroute.sumo.record.record_traversals`: battery, kinetic, potential and reduced energy). Edges of the line
graph's largest strongly connected component with fewer than ``min_samples`` traversals then get probe trips
``[predecessor, edge, successor]`` (a complete traversal of the edge between two legal turns; with ``probe_turns``,
every turn ``edge -> successor`` short of ``min_samples`` traversals gets them, for turn arms), departing at seeded
random times of the simulated window, and the day is simulated again with background and probes together (so probes meet
the same traffic); this repeats up to ``max_probe_rounds`` times. The result is cached as Parquet (key: network bytes,
edge set, demand, vehicle, model, SUMO version, the table's :data:`DAY_FORMAT_VERSION`), so a day is simulated once
per machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from evroute.energy import VehicleProfile
from evroute.errors import DataError, ParameterError, check_positive
from evroute.io import atomic_write_json
from evroute.linegraph import LineGraph
from evroute.network.cachefiles import cached, clean_stale_temps, temp_prefix
from evroute.network.registry import file_sha256
from evroute.sumo.record import ATTRIBUTION_VERSION, record_traversals
from evroute.sumo.scenario import background_demand, cache_key, check_route_file, sumo_cache_dir, sumo_version
from evroute.sumo.vehicle import ENERGY_MODELS, energy_fields

#: version of the recorded day's table, part of its cache key (2: the SUMO vehicle id of every traversal, column
#: ``vehicle``, so that the traversals of one trip can be told apart: :mod:`evroute.sumo.trip_interval`)
DAY_FORMAT_VERSION = 2


@dataclass(frozen=True)
class DaySpec:
    """What is simulated: demand, time window, coverage target, energy model.

    Attributes:
        peak_per_hour: background vehicles inserted in the busiest hour (the daily profile scales the others).
        hours: simulated hours of the day ``[start, end)`` (or ``"7-10"``, as given on the command line).
        demand_seed: seed of the random trips and of SUMO (one recorded day per seed).
        min_samples: coverage target N: traversals wanted for every edge of the largest SCC.
        max_probe_rounds: re-simulations with probe trips at most.
        model: SUMO energy model, ``Energy`` or ``MMPEVEM``.
        route_file: the user's own demand (``.rou.xml``) instead of generated background traffic.
        step_length: SUMO step (s).
        probe_turns: probe trips until every TURN ``e -> e'`` of the largest SCC has ``min_samples`` traversals
            (turn arms, :mod:`evroute.arms`), instead of every edge.
    """

    peak_per_hour: float = 1800.0
    hours: tuple[int, int] | str = (0, 24)
    demand_seed: int = 0
    min_samples: int = 10
    max_probe_rounds: int = 3
    model: str = "Energy"
    route_file: str | None = None
    step_length: float = 1.0
    probe_turns: bool = False

    def __post_init__(self) -> None:
        hours: tuple[int, ...]
        if isinstance(self.hours, str):  # "7-10" from the command line
            try:
                hours = tuple(int(h) for h in self.hours.split("-"))
            except ValueError:
                raise ParameterError(f"hours must look like 7-10, got {self.hours!r}") from None
        else:
            hours = tuple(int(h) for h in self.hours)
        object.__setattr__(self, "hours", hours)
        check_positive("peak_per_hour", self.peak_per_hour)
        check_positive("step_length", self.step_length)
        if not 0 <= int(self.demand_seed) <= 2**32 - 1:
            raise ParameterError(f"demand_seed must be in [0, 2**32 - 1], got {self.demand_seed}")
        if int(self.min_samples) < 1 or int(self.max_probe_rounds) < 0:
            raise ParameterError("min_samples must be >= 1 and max_probe_rounds >= 0")
        if self.model not in ENERGY_MODELS:
            raise ParameterError(f"unknown SUMO energy model {self.model!r} (use {' or '.join(ENERGY_MODELS)})")
        if not (len(hours) == 2 and 0 <= hours[0] < hours[1] <= 24):
            raise ParameterError(f"hours must be [start, end) with 0 <= start < end <= 24, got {list(hours)}")
        if self.route_file is not None:
            check_route_file(self.route_file)

    @property
    def window(self) -> tuple[int, int]:
        """``hours`` as ``(start, end)`` (h of the day): ``__post_init__`` has parsed a ``"7-10"`` string."""
        if isinstance(self.hours, str):  # cannot happen after __post_init__; narrows the type
            raise TypeError(f"DaySpec.hours was not parsed: {self.hours!r}")
        return self.hours


def sumo_net_file(linegraph: LineGraph) -> Path:
    """The SUMO network file a line graph's network was read from (:class:`DataError` if it was not SUMO's)."""
    net = linegraph.network
    src = net.meta.get("source")
    if net.meta.get("loader") != "sumo" or not src or not Path(src).is_file():
        raise DataError(
            f"network {net.name!r} was not read from a SUMO .net.xml: the SUMO environments need monaco, "
            "luxembourg or a .net.xml[.gz] network"
        )
    from evroute.network.xmlguard import check_xml_file

    return check_xml_file(src, "SUMO network file")  # before sumo's Xerces reads it


def probe_routes(
    linegraph: LineGraph,
    counts: np.ndarray,
    target: int,
    window_s: tuple[float, float],
    rng: np.random.Generator,
    prefix: str,
) -> list[tuple[float, str, list[str]]]:
    """Probe trips ``(depart_s, id, [pred, edge, succ])``: ``target - counts[e]`` for every edge short of samples."""
    lg = linegraph
    ids = lg.network.edge_ids
    adj = lg.adjacency.tocsr()
    adj_t = adj.T.tocsr()
    out: list[tuple[float, str, list[str]]] = []
    for e in np.flatnonzero(counts < target):
        succ = adj.indices[adj.indptr[e] : adj.indptr[e + 1]]
        pred = adj_t.indices[adj_t.indptr[e] : adj_t.indptr[e + 1]]
        for k in range(int(target - counts[e])):
            p, s = int(rng.choice(pred)), int(rng.choice(succ))
            out.append((float(rng.uniform(*window_s)), f"{prefix}{e}_{k}", [ids[p], ids[e], ids[s]]))
    out.sort()
    return out


def probe_turn_routes(
    linegraph: LineGraph,
    turn_counts: np.ndarray,
    target: int,
    window_s: tuple[float, float],
    rng: np.random.Generator,
    prefix: str,
) -> list[tuple[float, str, list[str]]]:
    """Probe trips ``(depart_s, id, [pred, e, e'])``: ``target - turn_counts[c]`` for every turn ``c = (e, e')``
    (``linegraph.turns`` order) short of samples; each completes one traversal of ``e`` leaving into ``e'``."""
    lg = linegraph
    ids = lg.network.edge_ids
    adj_t = lg.adjacency.T.tocsr()
    turns = lg.turns
    out: list[tuple[float, str, list[str]]] = []
    for c in np.flatnonzero(turn_counts < target):
        e, s = int(turns[c, 0]), int(turns[c, 1])
        pred = adj_t.indices[adj_t.indptr[e] : adj_t.indptr[e + 1]]
        for k in range(int(target - turn_counts[c])):
            p = int(rng.choice(pred))
            out.append((float(rng.uniform(*window_s)), f"{prefix}t{c}_{k}", [ids[p], ids[e], ids[s]]))
    out.sort()
    return out


def _cpu_s() -> float:
    """CPU seconds of this process and of its finished children (the SUMO runs)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _turn_counts(linegraph: LineGraph, edge: np.ndarray, next_edge: np.ndarray) -> np.ndarray:
    """``(C,)`` traversals per turn (``linegraph.turns`` order) of traversals ``edge -> next_edge`` (-1: none)."""
    n = linegraph.n_nodes
    t = linegraph.turns
    keys = t[:, 0] * n + t[:, 1]
    order = np.argsort(keys)
    ok = next_edge >= 0
    k = edge[ok] * n + next_edge[ok]
    pos = np.clip(np.searchsorted(keys[order], k), 0, len(keys) - 1)
    hit = keys[order][pos] == k
    return np.bincount(order[pos[hit]], minlength=len(keys))


def write_probe_routes(path: Path, probes: list[tuple[float, str, list[str]]]) -> Path:
    """Write probe trips (:func:`probe_routes`) as a SUMO route file of default-type vehicles (the EV)."""
    from xml.sax.saxutils import quoteattr

    lines = ["<routes>"]
    for depart, vid, edges in probes:
        lines.append(
            f'    <vehicle id={quoteattr(vid)} depart="{depart:.1f}" departPos="base" departSpeed="max">'
            f"<route edges={quoteattr(' '.join(edges))}/></vehicle>"
        )
    lines.append("</routes>")
    path.write_text("\n".join(lines) + "\n")
    return path


def record_day(
    linegraph: LineGraph,
    spec: DaySpec | None = None,
    *,
    vehicle: VehicleProfile | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> tuple[pd.DataFrame, dict[str, object]]:
    """The recorded day on ``linegraph``'s SUMO network: traversals of LCC edges and metadata; cached.

    Returns:
        ``(traversals, meta)``: traversals with columns ``edge`` (line-graph index), ``next_edge`` (the edge driven
        next, the turn ``edge -> next_edge`` taken; -1 when it lies outside the largest SCC), ``entry_s``, ``travel_s``,
        ``energy_wh`` (battery), ``kinetic_wh``, ``potential_wh``, ``reduced_wh`` (Wh, see
        :mod:`evroute.sumo.record`), ``probe`` (bool), ``vehicle`` (SUMO's vehicle id: one trip of the background
        demand, or one probe trip; a vehicle's traversals in ``entry_s`` order are its consecutive complete
        traversals, less any dropped at a teleport); ``meta`` with the counts, probe rounds, edges still short of
        samples and the reduced energies below 0 (count, minimum).
    """
    spec = spec or DaySpec()
    vehicle = vehicle or VehicleProfile()
    net_file = sumo_net_file(linegraph)
    ids = linegraph.network.edge_ids
    physics = energy_fields(vehicle)
    params = {
        "kind": "replay-day",
        "spec": asdict(spec),
        "vehicle": physics,
        "attribution": ATTRIBUTION_VERSION,
        "day_format": DAY_FORMAT_VERSION,
        "edges": hashlib.sha256("\n".join(ids.tolist()).encode()).hexdigest(),
        "route_file": None
        if spec.route_file is None
        else hashlib.sha256(Path(spec.route_file).read_bytes()).hexdigest(),
    }
    out_dir = Path(cache_dir) if cache_dir is not None else sumo_cache_dir()
    key = cache_key(net_file, params)
    stem = linegraph.network.name.replace(":", "_").replace("/", "_")
    data_path, meta_path = out_dir / f"{stem}-day-{key}.parquet", out_dir / f"{stem}-day-{key}.json"
    inputs = {"kind": "replay-day", "net_sha256": file_sha256(net_file), "params": params, "sumo": sumo_version()}
    clean_stale_temps([out_dir])  # temporary files of interrupted runs (a missing folder is skipped)

    def build(dest: Path) -> None:
        _record(linegraph, spec, vehicle, net_file, out_dir, dest, meta_path)

    cached(data_path, inputs, build, "recorded day", companions=[meta_path])
    return pd.read_parquet(data_path), json.loads(meta_path.read_text())


def _record(
    linegraph: LineGraph,
    spec: DaySpec,
    vehicle: VehicleProfile,
    net_file: Path,
    out_dir: Path,
    data_path: Path,
    meta_path: Path,
) -> None:
    """Record the day (SUMO runs with probe rounds) and write ``data_path`` (Parquet) and ``meta_path`` (JSON)."""
    ids = linegraph.network.edge_ids
    begin, end = spec.window[0] * 3600.0, spec.window[1] * 3600.0
    if spec.route_file is not None:
        demand = Path(spec.route_file)
    else:
        demand = background_demand(
            net_file, peak_per_hour=spec.peak_per_hour, hours=spec.window, seed=spec.demand_seed, cache_dir=out_dir
        )
    index = {e: i for i, e in enumerate(ids.tolist())}
    rng = np.random.default_rng(spec.demand_seed)
    probes: list[tuple[float, str, list[str]]] = []
    wall0, cpu0 = time.perf_counter(), _cpu_s()
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix("evroute-day-")))
    rounds = 0
    try:
        while True:
            files = [demand] + ([write_probe_routes(tmp / f"probes{rounds}.rou.xml", probes)] if probes else [])
            tr = record_traversals(
                net_file,
                files,
                vehicle=vehicle,
                model=spec.model,
                begin=begin,
                step_length=spec.step_length,
                seed=spec.demand_seed,
            )
            tr = tr[tr["edge"].isin(index)]
            counts = np.bincount(tr["edge"].map(index).to_numpy(dtype=np.int64), minlength=len(ids))
            short = counts
            if spec.probe_turns:
                nxt = tr["next_edge"].map(index).fillna(-1).to_numpy(dtype=np.int64)
                short = _turn_counts(linegraph, tr["edge"].map(index).to_numpy(dtype=np.int64), nxt)
            if short.min() >= spec.min_samples or rounds >= spec.max_probe_rounds:
                break
            rounds += 1
            window = (begin, end - 600.0)
            if spec.probe_turns:
                probes += probe_turn_routes(linegraph, short, spec.min_samples, window, rng, f"probe{rounds}_")
            else:
                probes += probe_routes(linegraph, counts, spec.min_samples, window, rng, f"probe{rounds}_")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    data = pd.DataFrame(
        {
            "edge": tr["edge"].map(index).to_numpy(dtype=np.int64),
            "next_edge": tr["next_edge"].map(index).fillna(-1).to_numpy(dtype=np.int64),
            "entry_s": tr["entry_s"].to_numpy(),
            "travel_s": tr["travel_s"].to_numpy(),
            "energy_wh": tr["energy_wh"].to_numpy(),
            "kinetic_wh": tr["kinetic_wh"].to_numpy(),
            "potential_wh": tr["potential_wh"].to_numpy(),
            "reduced_wh": tr["reduced_wh"].to_numpy(),
            "probe": tr["vehicle"].str.startswith("probe").to_numpy(),
            "vehicle": tr["vehicle"].astype(str).to_numpy(),
        }
    )
    short = np.flatnonzero(counts < spec.min_samples)
    turn_counts = _turn_counts(linegraph, data["edge"].to_numpy(), data["next_edge"].to_numpy())
    meta: dict[str, object] = {
        "net_file": str(net_file),
        "spec": asdict(spec),
        "traversals": int(len(data)),
        "probe_traversals": int(data["probe"].sum()),
        "probe_trips": len(probes),
        "probe_rounds": rounds,
        "min_samples": int(counts.min()),
        "median_samples": float(np.median(counts)),
        "edges_short": int(len(short)),
        "edges_unsampled": int((counts == 0).sum()),
        "short_edge_ids": ids[short[:50]].tolist(),
        "record_wall_s": time.perf_counter() - wall0,
        "record_cpu_s": _cpu_s() - cpu0,
        "turns_short": int((turn_counts < spec.min_samples).sum()),
        "turns_unsampled": int((turn_counts == 0).sum()),
        "negative_reduced_traversals": int((data["reduced_wh"] < 0).sum()),
        "min_reduced_wh": float(data["reduced_wh"].min()) if len(data) else 0.0,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=temp_prefix(f".{data_path.name}."), suffix=".tmp", dir=out_dir)
    os.close(fd)
    atomic_write_json(meta_path, meta)
    data.to_parquet(tmp_name, index=False)
    os.chmod(tmp_name, 0o644)  # mkstemp creates 0600 files
    os.replace(tmp_name, data_path)


__all__ = [
    "DAY_FORMAT_VERSION",
    "DaySpec",
    "probe_routes",
    "probe_turn_routes",
    "record_day",
    "sumo_net_file",
    "write_probe_routes",
]
