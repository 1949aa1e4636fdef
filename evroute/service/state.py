"""What a server holds in memory: the network, the vehicle and the current model version, swapped atomically.

A :class:`ModelVersion` is immutable once published: its model, its belief (:class:`~evroute.driver.belief.
RouteBelief`, the posterior in array form) and its query context.  :attr:`ServiceState.current` is one reference;
a request reads it ONCE and answers with that version throughout, so it never mixes two models, and the response
names the version.  A new version (``POST /observe``: the current model copied and updated with driven edge
energies; ``POST /model/reload``: the model file read again) is built aside, under a lock that serialises writers,
and published by one reference assignment: requests in flight finish on the version they hold, none is dropped.
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evroute.driver.query import QueryContext, make_belief, reduced_offset_wh, trip_noise
from evroute.energy import VehicleProfile
from evroute.errors import ParameterError
from evroute.linegraph import LineGraph
from evroute.models.base import EdgeModel
from evroute.service.gpdense import DenseGP, DenseGPBelief

#: what a version serves: an edge model, or the exact GP in array form (:class:`evroute.service.gpdense.DenseGP`)
Served = EdgeModel | DenseGP


@dataclass(frozen=True)
class ModelVersion:
    """One published model.

    Attributes:
        version: 1 for the model loaded at start, +1 per swap.
        kind: ``"bi"``, ``"gp-exact"`` or ``"linear"``.
        source: where it came from (``"physics prior"``, the model file, ``"observe"``).
        observations: observations the model holds (the file's count plus those observed while serving).
        created: Unix time of publication (s).
        model: the edge model, or the exact GP in array form (never updated after publication; updates copy it).
        header: the model file's header (None for the physics prior).
        ctx: the query context serving this version's belief.
    """

    version: int
    kind: str
    source: str
    observations: int
    created: float
    model: Served
    header: dict[str, Any] | None
    ctx: QueryContext


def _kind(model: Served) -> str:
    from evroute.models.store import model_kind

    if isinstance(model, DenseGP):
        return "gp-exact"
    return model_kind(model)


class ServiceState:
    """The network, vehicle and model of a running server (module doc).

    Args:
        lg: the line graph.
        vehicle: the vehicle profile answers are computed for.
        model: the initial edge model; ``header`` its file header (None: the physics prior).
        model_path: the model file (``POST /model/reload`` reads it again); None for the prior.
        network_spec: the ``--network`` the server was started with (reported by ``GET /health``).
        chargers: the charging stations ``POST /plan`` plans through, snapped to the network
            (:func:`evroute.charging.chargers.snap_chargers`); None: ``POST /plan`` answers 422.
    """

    def __init__(
        self,
        lg: LineGraph,
        vehicle: VehicleProfile,
        model: Served,
        header: dict[str, Any] | None = None,
        *,
        model_path: str | None = None,
        network_spec: str = "",
        chargers: Any = None,
    ) -> None:
        self.lg = lg
        self.chargers = chargers
        self.vehicle = vehicle
        self.model_path = model_path
        self.network_spec = network_spec or lg.network.name
        self.started = time.time()
        self._write = threading.Lock()
        self._lazy = threading.Lock()
        self._cache: dict[str, Any] = {}
        self._offset = reduced_offset_wh(lg, vehicle, header)
        ctx = QueryContext(lg, self._belief(model, header), vehicle)
        source = str(model_path) if header is not None else "physics prior"
        n_obs = int(header.get("observations", 0)) if header else 0
        self.current = ModelVersion(1, _kind(model), source, n_obs, time.time(), model, header, ctx)

    def _belief(self, model: Served, header: dict[str, Any] | None) -> Any:
        """The belief serving ``model`` (:func:`evroute.driver.query.make_belief`; array form for a DenseGP)."""
        if not isinstance(model, DenseGP):
            return make_belief(self.lg, model, self.vehicle, header)
        reduced = bool((header or {}).get("meta", {}).get("energies", {}).get("kind") == "reduced")
        from evroute.energy import elevation_potential_wh

        floor = np.zeros(self.lg.n_nodes) if reduced else elevation_potential_wh(self.lg.network, self.vehicle)
        tau2, mult = trip_noise(header)
        return DenseGPBelief(model, floor, self._offset if reduced else None, tau2, mult)

    def _publish(self, model: Served, header: dict[str, Any] | None, source: str, observations: int) -> ModelVersion:
        """Build the belief of ``model`` and make it the current version (caller holds ``_write``)."""
        old = self.current
        ctx = old.ctx.with_belief(self._belief(model, header))
        new = ModelVersion(old.version + 1, _kind(model), source, observations, time.time(), model, header, ctx)
        self.current = new  # one reference assignment: a request holds either the old or the new version
        return new

    def observe(self, edges: np.ndarray, energies_wh: np.ndarray) -> ModelVersion:
        """Publish the current model updated with the observed battery energies ``energies_wh`` (``(k,)`` Wh) of
        the driven ``edges`` (``(k,)`` line-graph indices).  A model learned on reduced energies is updated with
        each energy minus the edge's full elevation potential (:func:`evroute.driver.query.reduced_offset_wh`)."""
        e = np.asarray(edges, dtype=np.int64).reshape(-1)
        y = np.asarray(energies_wh, dtype=np.float64).reshape(-1)
        if e.shape != y.shape or not len(e):
            raise ParameterError(f"observe needs as many energies as edges, at least one ({len(e)} and {len(y)})")
        if len(e) and (e.min() < 0 or e.max() >= self.lg.n_nodes):
            raise ParameterError(f"edge index outside 0..{self.lg.n_nodes - 1}")
        with self._write:
            old = self.current
            if isinstance(old.model, DenseGP):
                model: Served = old.model.updated(e, y - self._offset[e])
            else:
                model = copy.deepcopy(old.model)
                model.update(e, y - self._offset[e])
            return self._publish(model, old.header, "observe", old.observations + len(e))

    def reload(self) -> ModelVersion:
        """Read the model file again (e.g. after ``evroute learn`` rewrote it) and publish it."""
        if self.model_path is None:
            raise ParameterError("the server runs the physics prior: there is no model file to reload")
        model, header = load_served_model(self.model_path, self.lg, self.vehicle)
        with self._write:
            self._offset = reduced_offset_wh(self.lg, self.vehicle, header)
            return self._publish(model, header, str(self.model_path), int(header.get("observations", 0)))

    def turn_keys(self) -> np.ndarray:
        """``(C,)`` sorted ``a * E + b`` of every legal turn ``(a, b)`` (checks that a path is connected)."""
        with self._lazy:
            if "turns" not in self._cache:
                t = np.asarray(self.lg.turns, dtype=np.int64)
                self._cache["turns"] = np.sort(t[:, 0] * self.lg.n_nodes + t[:, 1])
            return self._cache["turns"]

    def matcher(self) -> Any:
        """The map matcher of the network (:class:`evroute.traces.mapmatch.MatchIndex`), built on first use."""
        with self._lazy:
            if "matcher" not in self._cache:
                from evroute.traces.mapmatch import MatchIndex

                self._cache["matcher"] = MatchIndex(self.lg)
            return self._cache["matcher"]

    def network_json(self) -> bytes:
        """``GET /network``: extent, every edge as a straight segment rounded to 1e-5 degrees (~1 m), vehicle."""
        with self._lazy:
            if "network" not in self._cache:
                import json

                net = self.lg.network
                ends = np.array([[g[0][0], g[0][1], g[-1][0], g[-1][1]] for g in net.geometry]).round(5)
                lon, lat = np.concatenate([ends[:, 0], ends[:, 2]]), np.concatenate([ends[:, 1], ends[:, 3]])
                info = {
                    "name": net.name,
                    "n_edges": self.lg.n_nodes,
                    "bounds": [[float(lon.min()), float(lat.min())], [float(lon.max()), float(lat.max())]],
                    "segments": ends.tolist(),
                    "vehicle": self.vehicle.name,
                    "min_soc": self.vehicle.min_soc,
                    "max_soc": self.vehicle.max_soc,
                    "capacity_wh": float(self.vehicle.battery_capacity_wh),
                }
                self._cache["network"] = json.dumps(info, separators=(",", ":")).encode()
            return self._cache["network"]


def load_served_model(path: str | Path, lg: LineGraph, vehicle: VehicleProfile | None) -> tuple[Served, dict[str, Any]]:
    """``(model, header)`` of a model file for serving: an exact GP in array form
    (:class:`evroute.service.gpdense.DenseGP`), other kinds as :func:`evroute.models.store.load_model` gives them.
    The file must belong to ``lg`` and its vehicle have the energy parameters of ``vehicle`` (only battery fields
    may differ) when one is given."""
    from evroute.errors import DataError
    from evroute.models.store import load_model, network_hash, read_header
    from evroute.sumo.vehicle import energy_fields

    header = read_header(path)
    trained = VehicleProfile(**header["vehicle"])
    if vehicle is not None and energy_fields(vehicle) != energy_fields(trained):
        raise ParameterError(
            f"model {path} was learned for vehicle {trained.name!r}; vehicle {vehicle.name!r} has other energy "
            "parameters (only the battery fields may differ)"
        )
    if header["kind"] != "gp-exact":
        return load_model(path, lg, serve=True)
    net = header.get("network", {})
    if net.get("hash") != network_hash(lg):
        raise DataError(
            f"model {path} was learned on network {net.get('name')!r} ({net.get('n_edges')} edges), not on "
            f"{lg.network.name!r} ({lg.n_nodes} edges): the network content differs"
        )
    try:
        return DenseGP.from_file(path, lg, header), header
    except KeyError as exc:
        raise DataError(f"model file {path} lacks {exc}") from None


def load_state(
    network: str,
    *,
    model_path: str | None = None,
    vehicle: str | None = None,
    data_dir: str | None = None,
    dem: str | list[str] | None = None,
    loader: str | None = None,
    chargers: str | None = None,
    charger_snap_m: float = 250.0,
) -> ServiceState:
    """Load the network, the vehicle (default: the model's, else :data:`~evroute.energy.vehicle.DEFAULT_VEHICLE`),
    the model (default: the BI physics prior) and the charging stations (``chargers``: a .csv, .geojson or .osm
    file, :func:`evroute.charging.chargers.read_chargers`; those farther than ``charger_snap_m`` from every road are
    left out) once, as ``evroute route`` and ``evroute plan`` do (a bad model or charger file fails before the network
    loads)."""
    from evroute.experiments.runner import load_linegraph
    from evroute.models.store import prior_model, read_header

    header = read_header(model_path) if model_path else None
    stations = None
    if chargers is not None:
        from evroute.charging.chargers import read_chargers

        stations = read_chargers(chargers)
    lg = load_linegraph(network, data_dir, dem, loader)
    if stations is not None:
        from evroute.charging.chargers import snap_chargers

        stations = snap_chargers(lg.network, stations, charger_snap_m)
    if model_path is not None and header is not None:
        chosen = VehicleProfile.load(vehicle) if vehicle is not None else None
        model, header = load_served_model(model_path, lg, chosen)
        profile = chosen or VehicleProfile(**header["vehicle"])
        return ServiceState(lg, profile, model, header, model_path=model_path, network_spec=network, chargers=stations)
    from evroute.energy.vehicle import DEFAULT_VEHICLE

    profile = VehicleProfile.load(vehicle or DEFAULT_VEHICLE)
    return ServiceState(lg, profile, prior_model("bi", lg, profile), None, network_spec=network, chargers=stations)


__all__ = ["ModelVersion", "ServiceState", "load_served_model", "load_state"]
