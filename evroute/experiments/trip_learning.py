"""Learn a saved edge model from trip logs on a road network: read, map-match, turn charge readings into linear
observations, update the model, save it (the map-matched path of ``evroute learn``).

Streaming: one log file is read, matched and learned at a time (memory: one trace plus the model), or, with
:class:`~evroute.experiments.trip_workers.LogWorkers`, a few files at a time on several processes, their statistics
added in input order (the same model, bit for bit; memory: ``2 x workers`` logs in flight).  Resumable: the
model file's header records the SHA-256 of every log file learned (``meta.logs``); a run skips those, and the model
is saved every ``save_every`` files and at the end, so an interrupted run continues where it stopped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evroute.energy import VehicleProfile
from evroute.errors import DataError, ParameterError
from evroute.experiments.trip_workers import LearnParams, LogWorkers, read_log, validate_logs
from evroute.linegraph import LineGraph
from evroute.models.linear_obs import LinearObsEdgeModel
from evroute.models.linear_obs_build import linear_model_from
from evroute.traces.mapmatch import MatchIndex, MatchOptions
from evroute.traces.reader import TraceColumns

#: a new model's ``noise_exponent`` (:func:`~evroute.models.linear_obs.traversal_noise_weights`; ``evroute learn
#: --noise-exponent``): 0, every edge's traversal noise alike.  The known-truth study with 2 (an s.d. proportional to
#: the edge's prior energy; 20 seeds, lux35c branch, not committed as a page): Luxembourg's long edges driven by few
#: trips learned better (RMSE against the route means at N = 1000: BI 25.0 -> 14.5 Wh, GP 25.1 -> 18.2 Wh) but
#: Monaco's exact GP worse (N = 100: 18.6 -> 23.9 Wh, 0.54 of the prior; N = 1000: 10.9 -> 15.9 Wh) with its N = 10
#: intervals too wide (96.8 % coverage), and the readings' marginal likelihood prefers 0 in 122 of 124 fits: an
#: option, not the default
LEARN_NOISE_EXPONENT = 0.0


@dataclass
class LearnReport:
    """What a run did: files and traces learned or skipped, readings, samples matched, CPU seconds by stage.

    ``traces_broken`` traces were matched in several pieces (``pieces`` pieces in all traces) and learned piece by
    piece (a long CSV trace is learned in blocks, :mod:`evroute.traces.stream`: each block counts here as a trace);
    ``windows_dropped`` charge windows spanned a break and were left out (:mod:`evroute.traces.observations`);
    ``windows_trimmed`` covered a trip's first path edge and were left out (its trip ends).
    """

    files_learned: int = 0
    files_skipped: int = 0
    traces: int = 0
    traces_unusable: int = 0
    traces_broken: int = 0
    pieces: int = 0
    windows_dropped: int = 0
    windows_trimmed: int = 0
    readings: int = 0
    samples: int = 0
    cpu_s: dict[str, float] = field(default_factory=lambda: {"read": 0.0, "match": 0.0, "learn": 0.0})


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (what the model header records per learned log)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_logs(paths: Sequence[str | Path], battery: Sequence[str | Path]) -> list[tuple[Path, Path | None]]:
    """``(log, battery output or None)`` per log: ``.csv``, ``.gpx``, or a SUMO FCD ``.xml`` with the battery
    output of the same run (``battery`` in the order of the FCD files).  Checks the files exist; reads nothing."""
    fcd = [Path(p) for p in paths if Path(p).suffix.lower() == ".xml"]
    if len(fcd) != len(battery):
        raise ParameterError(f"{len(fcd)} SUMO FCD file(s) (.xml) but {len(battery)} --battery file(s): one per FCD")
    bat = iter(Path(b) for b in battery)
    out: list[tuple[Path, Path | None]] = []
    for p in map(Path, paths):
        suffix = p.suffix.lower()
        if suffix not in (".csv", ".gpx", ".xml"):
            raise ParameterError(f"trip log {p}: unknown format {suffix!r} (use .csv, .gpx or a SUMO FCD .xml)")
        pair = next(bat) if suffix == ".xml" else None
        for f in (p, pair):
            if f is not None and not f.is_file():
                raise DataError(f"trip log {f} not found")
        out.append((p, pair))
    return out


def learn_logs(
    model: LinearObsEdgeModel,
    index: MatchIndex | LogWorkers,
    files: Sequence[tuple[Path, Path | None]],
    vehicle: VehicleProfile,
    *,
    columns: TraceColumns | None = None,
    done: dict[str, str] | None = None,
    soc_step: float | None = None,
    on_file: Callable[[Path, LearnReport], None] | None = None,
    warn: bool = True,
    kinetic_mass_kg: float | None = None,
) -> LearnReport:
    """Learn every log file not in ``done`` (digest -> name; updated in place) into ``model``.

    ``index``: the match index (the work runs in this process) or :class:`LogWorkers` (in this process or on a pool
    of processes); either way each file's statistics are added to ``model`` in the order of ``files``, so the model
    is the same bit for bit.  ``on_file(path, report)`` runs after each file (progress, periodic saves).  A file
    listed twice is learned once.  A trace matched in pieces is learned piece by piece (the windows across a break
    dropped); traces with no usable window (unmatched, less than a few metres, no charge change inside a piece) are
    counted as unusable, not learned.  ``warn``: show the reads' warnings (rows dropped, charging split off;
    ``False`` when :func:`validate_logs` read the same files and showed them).  The readings are reduced energies
    (battery energy minus the change of the vehicle's mechanical energy, :mod:`evroute.traces.mechanical`;
    ``kinetic_mass_kg`` default the vehicle's mass), the quantity ``model`` must hold (:func:`open_model`).
    """
    params = LearnParams(
        columns,
        (vehicle.max_soc - vehicle.min_soc) * vehicle.battery_capacity_wh,
        model.traversal_noise_var() if model.noise_exponent else model.noise_var,
        soc_step,
        warn,
        vehicle=vehicle,
        kinetic_mass_kg=kinetic_mass_kg,
    )
    report = LearnReport()
    done = {} if done is None else done
    todo: list[tuple[Path, Path | None, str]] = []
    seen = set(done)
    for path, battery in files:
        digest = file_digest(path) + (file_digest(battery) if battery else "")
        if digest in seen:
            report.files_skipped += 1
            continue
        seen.add(digest)
        todo.append((path, battery, digest))
    workers = index if isinstance(index, LogWorkers) else LogWorkers(index)
    outcomes = workers.outcomes(((p, b) for p, b, _ in todo), params)
    for (path, _, digest), outcome in zip(todo, outcomes, strict=True):
        usable: bool | None = None  # whether the current trace gave a reading so far
        for tr in outcome.traces:  # a CSV log's blocks: read, matched and reduced one at a time (serial run)
            if tr.first:
                report.traces += 1
                report.traces_unusable += usable is False
                usable = False
            report.samples += tr.samples
            report.pieces += tr.pieces
            report.traces_broken += tr.pieces > 1
            if tr.batch is not None:
                usable = True
                model.observe_batch(tr.batch)
                report.readings += tr.batch.readings
                report.windows_dropped += tr.dropped
                report.windows_trimmed += tr.trimmed
            if tr.trip_sum is not None:
                model.trips.add(*tr.trip_sum)
        report.traces_unusable += usable is False
        for k, v in outcome.cpu_s.items():
            report.cpu_s[k] += v
        done[digest] = path.name
        report.files_learned += 1
        if on_file is not None:
            on_file(path, report)
    return report


def fit_noise(model: LinearObsEdgeModel) -> dict[str, Any]:
    """Fit the noise of a model learned from logs and return what the model file keeps of it (``meta.trip_effect``).

    1. The readings' noise scale ``phi`` and the prior covariance's factor ``c`` by ML-II
       (:func:`evroute.models.linear_obs_build.fit_hyperparameters`, set on ``model``); with
       ``model.trip_effect_fit`` also the trip effect ``tau`` in the readings' noise
       (:func:`evroute.models.linear_obs_trip.fit_with_trip_effect`), then used as it is by the intervals.
    2. The route intervals' noise from the learned traces (:func:`route_noise`).
    """
    from evroute.models.linear_obs_build import fit_hyperparameters, fit_with_trip_effect
    from evroute.models.linear_obs_trip import TAU_BOUNDS

    if model.trip_effect_fit:  # 1. with the trip effect tau in the readings' noise, fitted with phi and c
        fit_with_trip_effect(model, (TAU_BOUNDS[0], model.trip_tau_max))
    else:
        model.trip_tau = 0.0
        fit_hyperparameters(model)
    return route_noise(model)


def route_noise(model: LinearObsEdgeModel) -> dict[str, Any]:
    """The route intervals' noise of a model learned from logs, at its current hyper-parameters, as the model file
    keeps it (``meta.trip_effect``; served by :func:`evroute.driver.query.make_belief`).

    One traversal's noise within a whole trip is ``k`` times the model's (the readings over short windows also see
    how energy is spread along an edge, which cancels over a trip) and each trip's reduced energy is scaled by ``1 +
    beta``, ``beta ~ N(0, tau^2)``.  ``(k, tau^2)`` are fitted to **out-of-fold** residuals of the learned traces
    (:func:`evroute.models.trip_effect.out_of_fold_noise`: each fold's readings taken out of the posterior exactly,
    then the posterior of ``(k, tau^2)`` under half-Cauchy priors): in-sample residuals are too small where a trace's
    own edges absorb its trip effect.  Returns :meth:`~evroute.models.predictive_noise.PredictiveNoise.to_dict` of
    the pruned mixture (every served route interval is its central interval).  With ``model.trip_effect_fit`` the
    trip effect was fitted with the readings (:func:`fit_noise`): each fold is taken out with the covariance it was
    learned with, and ``(k, tau^2)`` are fitted to those residuals as without it (the readings' ``tau`` weighs the
    readings; the intervals' is what held-out trips show).  Traces learned before their
    readings were kept (model files of format version 1) stay in the posterior but give no residual; when no trace has
    its readings, the in-sample point fit of :func:`~evroute.models.trip_effect.fit_route_noise` (``method``
    ``"whole-trip"``; ``k = 1``, ``tau^2 = 0`` from fewer than two traces)."""
    from evroute.models.trip_effect import fit_route_noise, out_of_fold_noise

    post = model.posterior()
    # with the effect in the fit the folds come out with the covariance they were learned with (its ML-II tau)
    effect = (model.prior_mean, model.trip_tau**2) if model.trip_effect_fit else None
    pn = out_of_fold_noise(post.mean, post.covariance_of, model.trips, model.noise_scale, trip_effect=effect)
    if pn is not None:
        return pn.pruned().to_dict()
    return fit_route_noise(post.mean, post.covariance_of, model.trips, model.noise_scale).to_dict()


def open_model(
    path: Path,
    linegraph: LineGraph,
    kind: str,
    vehicle: VehicleProfile,
    *,
    noise_frac: float = 0.1,
    offsets: bool = False,
    kinetic_mass_kg: float | None = None,
    noise_exponent: float = LEARN_NOISE_EXPONENT,
) -> tuple[LinearObsEdgeModel, dict[str, str], dict[str, Any]]:
    """``(model, learned logs, header meta)``: the saved model at ``path`` (any saved kind of reduced energies, made a
    linear-reading model; a file of battery energies is refused), or the physics prior of ``kind`` for reduced
    energies if the file does not exist (mean :func:`~evroute.traces.mechanical.reduced_prior_wh` of the default prior
    ``PRIORS[0]``, the speed-profile model ``evroute route`` uses without a model file; noise s.d.
    ``noise_frac sigma_det``; with ``offsets`` the shared per-metre and per-edge offsets of
    :func:`~evroute.models.linear_obs_build.offset_basis`; one traversal's noise variance the edge's prior energy to
    the power ``noise_exponent``, :func:`~evroute.models.linear_obs.traversal_noise_weights`; a saved model keeps
    its own).  The meta of a new model records the convention
    (``meta["energies"]``, :func:`~evroute.traces.mechanical.energies_meta`, kinetic mass ``kinetic_mass_kg``)."""
    from evroute.energy import PRIORS
    from evroute.models.linear_obs_build import offset_basis
    from evroute.models.store import load_model, prior_model
    from evroute.traces.mechanical import energies_meta, reduced_prior_wh, require_reduced

    if path.is_file():
        model, header = load_model(path, linegraph)
        require_reduced(header, str(path))
        meta = dict(header.get("meta", {}))
        return linear_model_from(model), dict(meta.get("logs", {})), meta
    extra: dict[str, Any] = {"learn_hyper": False} if kind == "gp-exact" else {}
    mean = reduced_prior_wh(linegraph.network, vehicle, PRIORS[0])
    base = prior_model(kind, linegraph, vehicle, noise_frac=noise_frac, mean_wh=mean, **extra)
    meta = {"energies": energies_meta(vehicle, kinetic_mass_kg, source="trip logs")}
    kw: dict[str, Any] = {}
    if offsets:
        basis, sd = offset_basis(linegraph.network.length_m)
        kw = {"basis": basis, "basis_sd": sd}
    model = linear_model_from(base, **kw)
    model.noise_exponent = float(noise_exponent)
    return model, {}, meta


__all__ = [
    "LEARN_NOISE_EXPONENT",
    "LearnReport",
    "LogWorkers",
    "MatchOptions",
    "check_logs",
    "file_digest",
    "fit_noise",
    "learn_logs",
    "open_model",
    "read_log",
    "route_noise",
    "validate_logs",
]
