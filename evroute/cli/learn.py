"""``evroute learn``: learn from real trip logs.

Trace-energy path (logs without a road network): read GPS + speed + altitude + state-of-charge logs, apply the
vehicle's physics model along each trace, compare with the energy the battery gauge reports, and optionally calibrate
the profile on the logs and save it as a vehicle profile JSON that every other command takes (``--vehicle PATH``).
Everything is validated (every log, every column mapping, the profile) before anything is written.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from evroute.cli.args import DeprecatedAlias, ModelKindOrFile
from evroute.errors import ParameterError

#: ``--columns`` presets: the documented schema and the RSK Twizy data set's analysed logs.
_PRESETS = ("default", "twizy")
_COLUMN_KEYS = ("time", "time_format", "speed", "speed_unit", "altitude", "soc", "lat", "lon")


def register(sub: Any) -> None:
    """Register ``evroute learn`` on the top-level subparsers ``sub``."""
    p = sub.add_parser(
        "learn",
        help="learn from trip logs: trace energy vs the battery gauge, calibrate and save the vehicle profile",
    )
    p.set_defaults(handler=cmd_learn)
    p.add_argument(
        "logs", nargs="+", help="trip logs: CSV files (one trip each); with --network also GPX and SUMO FCD .xml"
    )
    p.add_argument("--vehicle", default="sumo_ev", help="vehicle profile name or JSON file (default: %(default)s)")
    p.add_argument(
        "--format",
        default="auto",
        help="CSV log format: auto (from each file's header), evroute, generic, teslamate, twizy (default: "
        "%(default)s; formats in docs/trip_logs.md); .gpx files are GPX",
    )
    p.add_argument(
        "--columns",
        default="default",
        help=f"column preset: {', '.join(_PRESETS)} (default: %(default)s, i.e. --format; twizy: --format twizy)",
    )
    p.add_argument(
        "--column",
        action="append",
        default=[],
        metavar="KEY=NAME",
        help=f"override one column of the preset; KEY in {', '.join(_COLUMN_KEYS)} (repeatable)",
    )
    p.add_argument(
        "--calibrate", action="store_true", help="fit the profile to the logs (MAP with priors around the profile)"
    )
    p.add_argument(
        "--fit",
        default="propulsion_efficiency,auxiliary_power_w,rolling_resistance",
        help="comma-separated parameters to fit with --calibrate, or 'auto': the set of least held-out error, leaving "
        "one trajectory (name up to the first '_') out (default: %(default)s)",
    )
    p.add_argument("--window-s", type=float, default=300.0, help="calibration window in s (default: %(default)s)")
    p.add_argument("--save-vehicle", default=None, help="write the (calibrated) profile to this JSON file")
    p.add_argument("--json", action="store_true", help="print the per-trip table as JSON")
    g = p.add_argument_group("map-matched learning (docs/trip_logs.md)")
    g.add_argument("--network", default=None, help="match the logs to this network and learn its edge energies")
    g.add_argument(
        "--model-file",
        default=None,
        metavar="FILE",
        help="model file (.npz) to update, created from the prior if missing",
    )
    g.add_argument(
        "--model",
        dest="kind",
        default="gp-exact",
        action=ModelKindOrFile,
        metavar="KIND",
        help="model kind of a new model: bi or gp-exact (default: %(default)s)",
    )
    g.add_argument("--kind", dest="kind", action=DeprecatedAlias, new="--model")
    g.add_argument("--noise-frac", type=float, default=0.1, help="new model: noise s.d. / sigma_det (default: 0.1)")
    g.add_argument("--offsets", action="store_true", help="new model: learn shared per-metre and per-edge offsets")
    g.add_argument(
        "--noise-exponent",
        type=float,
        default=None,
        help="new model: one traversal's noise variance ~ the edge's prior energy^p; 0: every edge alike "
        "(default: 0; 2: a relative noise)",
    )
    g.add_argument(
        "--trip-effect-fit",
        default=None,
        metavar="on|off",
        help="fit the trip effect (each trace's readings share one relative offset, s.d. tau) with the readings' "
        "noise by ML-II; the intervals then fit their own from held-out folds (default: the model file's setting; "
        "a new model: on)",
    )
    g.add_argument(
        "--trip-tau-max",
        type=float,
        default=1.0,
        help="with --trip-effect-fit on: the largest tau searched, in (0.001, 1] (default: %(default)s)",
    )
    g.add_argument("--battery", action="append", default=[], help="SUMO battery output of each FCD .xml log")
    g.add_argument("--soc-step", type=float, default=None, help="gauge step in %% (default: seen in each log)")
    g.add_argument("--gps-sigma-m", type=float, default=10.0, help="GPS error s.d. in m (default: %(default)s)")
    g.add_argument("--save-every", type=int, default=50, help="save the model every N files (default: %(default)s)")
    g.add_argument(
        "--workers",
        type=int,
        default=1,
        help="processes that read, match and reduce the logs; the model is the same for any count (default: 1)",
    )


def _columns(args: argparse.Namespace) -> Any:
    """The column mapping of ``--format`` / ``--columns`` / ``--column`` (``None``: detected per file)."""
    from evroute.traces import TraceColumns
    from evroute.traces.logformats import preset

    if args.columns not in _PRESETS:
        raise ParameterError(f"--columns must be one of {', '.join(_PRESETS)}, got {args.columns!r}")
    fmt = args.format
    if args.columns == "twizy":
        if fmt not in ("auto", "twizy"):
            raise ParameterError(f"--columns twizy and --format {fmt} disagree (give one)")
        fmt = "twizy"
    if fmt == "gpx":
        raise ParameterError("--format gpx: GPX logs are read by their .gpx suffix (use --format auto)")
    cols = preset(fmt)
    if not args.column:
        return cols
    cols = cols or TraceColumns()
    changes: dict[str, str] = {}
    for item in args.column:
        key, sep, name = item.partition("=")
        if not sep or not name:
            raise ParameterError(f"--column must be KEY=NAME, got {item!r}")
        if key not in _COLUMN_KEYS:
            raise ParameterError(f"--column key {key!r} unknown (known: {', '.join(_COLUMN_KEYS)})")
        changes[key] = name
    return dataclasses.replace(cols, **changes)


def cmd_learn(args: argparse.Namespace) -> int:
    """Handler of ``evroute learn`` (returns the exit status)."""
    if args.network is not None or args.model_file is not None:
        return _cmd_learn_network(args, _columns(args))
    import numpy as np

    from evroute.energy import VehicleProfile
    from evroute.errors import DataError
    from evroute.io import atomic_write_json, file_lock
    from evroute.traces import FIT_PARAMETERS, read_traces
    from evroute.traces.calibrate import prior_calibration
    from evroute.traces.tripscore import stream_trip_rows

    if not args.window_s > 0 or args.window_s != args.window_s:
        raise ParameterError(f"--window-s must be > 0, got {args.window_s}")
    fit = [f.strip() for f in args.fit.split(",") if f.strip()]
    unknown = [f for f in fit if f not in FIT_PARAMETERS] if fit != ["auto"] else []
    if unknown or not fit:
        raise ParameterError(f"--fit must name parameters among {', '.join(FIT_PARAMETERS)}, got {args.fit!r}")
    if args.save_vehicle is not None:
        target = Path(args.save_vehicle)
        if target.is_dir() or not target.parent.is_dir():
            raise ParameterError(f"--save-vehicle {target}: not a file path in an existing folder")
    vehicle = VehicleProfile.load(args.vehicle)
    values: dict[str, float] = {}
    sds: dict[str, float] = {}
    cal = prior_calibration(vehicle, window_s=args.window_s)  # no --calibrate: the profile's prior as the interval
    if args.calibrate:  # the logs with a state of charge in memory; those without are predicted below
        traces = [t for t in read_traces(args.logs, _columns(args)) if np.isfinite(t.soc_pct).all()]
        if not traces:
            raise DataError("--calibrate needs logs with a state-of-charge column (none of these has one)")
        cal = _calibrate(traces, vehicle, fit, args.window_s)
        vehicle, values, sds = cal.vehicle, cal.values, cal.sd
        for w in cal.warnings:
            print(f"evroute: warning: {w}", file=sys.stderr)
    # every log streamed (bounded memory), each trip predicted with its 90 % interval (evroute.traces.tripscore)
    rows = [r.to_dict() for p in args.logs for r in stream_trip_rows(p, _columns(args), cal, window_s=args.window_s)]
    if args.json:
        from evroute.io import dumps_strict

        out = {"vehicle": vehicle.to_dict(), "fitted": values, "fitted_sd": sds, "trips": rows}
        print(dumps_strict(out, indent=2))
    else:
        print(f"vehicle {vehicle.name}" + (" (calibrated on these logs: in-sample errors)" if args.calibrate else ""))
        for k, v in values.items():
            print(f"  {k:<24} {v:.4g} +- {sds[k]:.2g} (posterior s.d., Laplace)")
        print(f"{'trip':<24} {'km':>7} {'measured Wh':>12} {'predicted Wh':>13} {'error %':>8} {'90 % +-':>8}")
        for r in rows:
            meas = "-" if r["measured_wh"] is None else f"{r['measured_wh']:.0f}"
            err = "-" if r["error_pct"] is None else f"{r['error_pct']:+.1f}"
            print(
                f"{r['trip']:<24} {r['distance_km']:>7.1f} {meas:>12} {r['predicted_wh']:>13.0f} {err:>8} "
                f"{r['interval90_wh']:>8.0f}"
            )
    if args.save_vehicle is not None:
        with file_lock(args.save_vehicle):
            atomic_write_json(args.save_vehicle, vehicle.to_dict())
        print(f"wrote {args.save_vehicle}", file=sys.stderr)
    return 0


def _fit_noise_and_trip_effect(model: Any, meta: dict[str, Any]) -> None:
    """The readings' noise scale by ML-II, the whole-trip noise and the trip-level effect from out-of-fold
    residuals (:func:`evroute.experiments.trip_learning.fit_noise`), recorded in ``meta["trip_effect"]`` for every route
    interval served from the model; one line printed."""
    from evroute.experiments.threads import run_threads
    from evroute.experiments.trip_learning import fit_noise

    with run_threads():  # one BLAS thread, as the logs' work (on a busy machine more only spin: 2-5 times the CPU)
        effect = fit_noise(model)
    meta["trip_effect"] = effect
    phi = model.noise_scale
    sd = float(model.noise_var * phi * effect["noise_mult"]) ** 0.5
    how = "out-of-fold, posterior means" if "mixture" in effect else "in-sample fit"
    print(
        f"noise learned (ML-II): the readings' scale {phi:.3g} of the nominal (prior variance x "
        f"{model.prior_scale:.3g}); from whole trips "
        f"({effect['trips']} traces, {how}): one traversal's s.d. {sd:.2f}"
        f" Wh ({effect['noise_mult']:.3g} x the readings' variance), trip effect relative s.d. "
        f"{effect['rel_var'] ** 0.5:.3f}"
        + (f" (in the readings' fit: {model.trip_tau:.3f})" if model.trip_effect_fit else "")
    )


def _calibrate(traces: Any, vehicle: Any, fit: list[str], window_s: float) -> Any:
    """MAP calibration of ``fit`` (or, for ``["auto"]``, of the set :func:`~evroute.traces.calibrate.
    select_parameters` picks by leaving one trajectory out, which is printed with its held-out error)."""
    from evroute.traces.calibrate import FIT_SETS, calibrate, select_parameters

    if fit == ["auto"]:
        best, held = select_parameters(traces, vehicle, FIT_SETS, window_s=window_s)
        for label in FIT_SETS:
            rows = [h for h in held if h.fit == label]
            err = sum(abs(h.error_pct) for h in rows) / len(rows)
            cover = sum(h.covered() for h in rows) / len(rows)
            mark = " <- chosen" if label == best else ""
            print(f"held out: {label:<28} mean abs. error {err:5.1f} %, 90 % intervals cover {cover:4.0%}{mark}")
        fit = list(FIT_SETS[best])
    return calibrate(traces, vehicle, fit, window_s=window_s)


def _cmd_learn_network(args: argparse.Namespace, columns: Any) -> int:
    """``evroute learn LOGS --network NET --model-file FILE``: map-match the logs, learn the edge energies from their
    charge readings (linear observations), update or create the model file
    (:mod:`evroute.experiments.trip_learning`)."""
    from tqdm import tqdm

    from evroute.energy import VehicleProfile
    from evroute.errors import DataError
    from evroute.experiments.trip_learning import (
        LEARN_NOISE_EXPONENT,
        LogWorkers,
        check_logs,
        learn_logs,
        open_model,
        validate_logs,
    )
    from evroute.io import file_lock
    from evroute.linegraph import build_line_graph
    from evroute.models.store import save_model
    from evroute.network.registry import load_network
    from evroute.traces.mapmatch import MatchIndex, MatchOptions

    if args.network is None or args.model_file is None:
        raise ParameterError("map-matched learning needs both --network and --model-file")
    if args.kind not in ("bi", "gp-exact"):
        raise ParameterError(f"--model must be bi or gp-exact, got {args.kind!r}")
    if args.save_every < 1:
        raise ParameterError(f"--save-every must be >= 1, got {args.save_every}")
    from evroute.cli.args import MAX_WORKERS

    if args.workers < 1:
        raise ParameterError(f"--workers must be >= 1, got {args.workers}")
    if args.workers > MAX_WORKERS:
        raise ParameterError(f"--workers must be at most {MAX_WORKERS} processes, got {args.workers}")
    if not (args.noise_frac > 0 and args.noise_frac < 1e3):
        raise ParameterError(f"--noise-frac must be > 0, got {args.noise_frac}")
    if args.noise_exponent is not None and not 0 <= args.noise_exponent <= 4:
        raise ParameterError(f"--noise-exponent must be in [0, 4], got {args.noise_exponent}")
    if args.trip_effect_fit not in (None, "on", "off"):
        raise ParameterError(f"--trip-effect-fit must be on or off, got {args.trip_effect_fit!r}")
    if not 1e-3 < args.trip_tau_max <= 1:
        raise ParameterError(f"--trip-tau-max must be in (0.001, 1], got {args.trip_tau_max}")
    if args.soc_step is not None and not args.soc_step > 0:
        raise ParameterError(f"--soc-step must be > 0, got {args.soc_step}")
    options = MatchOptions(sigma_m=args.gps_sigma_m)
    target = Path(args.model_file)
    if target.is_dir() or not target.parent.is_dir():
        raise ParameterError(f"--model-file {target}: not a file path in an existing folder")
    if target.is_file():
        from evroute.models.store import read_header

        read_header(target)  # a bad model file fails before the logs are read and the network loads
    vehicle = VehicleProfile.load(args.vehicle)
    files = check_logs(args.logs, args.battery)
    # every error before anything is written: fewer files than --save-every are never saved before the last is read,
    # so one pass does (a 200 MB log is read once); else a first pass reads every log
    one_pass = args.workers == 1 and len(files) < args.save_every
    check = tqdm(total=len(files), desc="check", unit="log", disable=True if one_pass else None)
    if args.workers == 1 and not one_pass:
        validate_logs(files, columns, check.update)
    lg = build_line_graph(load_network(args.network))
    index = MatchIndex(lg, options)
    with LogWorkers(index, args.workers) as workers:
        if args.workers > 1:
            workers.validate(files, columns, check.update)  # the same reads, on the workers; still nothing written
        check.close()
        # the model is read, changed and written under its lock: a second run into the same file waits, then reads
        # this run's model and adds its own logs (no lost update)
        with file_lock(target, what=f"model {target}"):
            model, done, meta = open_model(
                target,
                lg,
                args.kind,
                vehicle,
                noise_frac=args.noise_frac,
                offsets=args.offsets,
                noise_exponent=LEARN_NOISE_EXPONENT if args.noise_exponent is None else args.noise_exponent,
            )
            if args.trip_effect_fit is not None:
                model.trip_effect_fit = args.trip_effect_fit == "on"
            elif not done and len(model.trips) == 0:  # a new model: the effect in the fit (issue 35's study)
                model.trip_effect_fit = True
            model.trip_tau_max = args.trip_tau_max
            bar = tqdm(total=len(files), desc="learn", unit="log", disable=None)

            def save() -> None:
                save_model(target, model, lg, vehicle=vehicle, meta={**meta, "logs": done})

            def on_file(path: Path, report: Any) -> None:
                bar.update(1)
                if report.files_learned % args.save_every == 0:
                    save()

            report = learn_logs(
                model,
                workers,
                files,
                vehicle,
                columns=columns,
                done=done,
                soc_step=args.soc_step,
                on_file=on_file,
                warn=one_pass,  # else the check above read every log and showed its warnings
            )
            bar.update(report.files_skipped)
            bar.close()
            if report.files_learned and report.readings == 0 and not done:
                raise DataError(
                    "no log gave a usable energy reading (unmatched, no charge change, or no state-of-charge column)"
                )
            if model.stats.readings:
                _fit_noise_and_trip_effect(model, meta)
            save()
    cpu = report.cpu_s
    print(
        f"learned {report.files_learned} log(s) ({report.files_skipped} already in the model), {report.traces} trace(s)"
        f" ({report.traces_unusable} unusable; {report.traces_broken} matched in pieces, {report.pieces} pieces in all,"
        f" {report.windows_dropped} windows across a break dropped, {report.windows_trimmed} over the trips' first"
        f" edges dropped), {report.readings} readings, {report.samples}"
        " samples; "
        f"CPU s: read {cpu['read']:.2f}, match {cpu['match']:.2f}, learn {cpu['learn']:.2f}"
    )
    print(f"wrote {target} ({model.stats.readings} readings in all)", file=sys.stderr)
    return 0
