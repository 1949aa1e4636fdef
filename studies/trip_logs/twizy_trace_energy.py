"""Trace energy model on the RSK Twizy logs: public-specification profile, calibrated by leave-one-trip-out and by
leave-one-trajectory-out (T1 <-> T2, MAP with Laplace predictive intervals).

    python -m studies.trip_logs.twizy_trace_energy --out docs/results/twizy_trace_energy.md

Reads ``$EVROUTE_DATA/ev-logs/rsk-twizy/*.csv`` (or ``--data-dir``).  For every fit set (no fit: the
specification profile; then growing sets of parameters), each trip is predicted by a profile calibrated on the
other trips (windows of ``--window-s`` seconds), and the whole-trip battery energy (from the logged state of charge)
is compared with the prediction.  Then each trajectory (``T1``: one driver and road, ``T2``: another) is predicted
by MAP calibrations on the other (:func:`evroute.traces.calibrate.select_parameters`), with a 90 % predictive
interval per trip and every fold's fitted values, s.d. and bound warnings.  Writes the per-trip numbers to
``--data`` (JSON) and a Markdown report built from them alone; ``--report-only`` rebuilds the report from ``--data``
without the logs (tests/studies/test_results_rebuild.py).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from evroute.energy import VehicleProfile
from evroute.stats import t_interval
from evroute.traces import TWIZY_COLUMNS, calibrate, read_traces, score_trip, trace_energy
from evroute.traces.calibrate import FIT_PARAMETERS, FIT_SETS, select_parameters
from evroute.traces.energy import soc_resolution_wh

#: fields of a trip's score (``evroute.traces.score_trip``) kept in the per-trip data
#: the normal quantile of a central 90 % interval
Z90 = 1.6448536269514722

SCORE_FIELDS = ("error_pct", "error_wh", "error_wh_per_km", "window_rmse_wh", "distance_km", "measured_wh")


def measure(data_dir: str, window_s: float) -> dict[str, Any]:
    """Score every trip under every fit set (leave-one-trip-out); the per-trip numbers the report is built from.

    Returns a JSON-ready dict: ``trips`` (name, km, measured Wh, and per fit set the held-out error in %, Wh and Wh/km
    and the window RMSE in Wh), ``fitted`` (per fit set, the fitted parameter values of each fold), the trips'
    whole-trip potential and predicted energy under the specification profile (Wh), the state-of-charge resolution
    (Wh), and the run's CPU / wall seconds and load.
    """
    files = sorted((Path(data_dir) / "ev-logs" / "rsk-twizy").glob("T*.csv"))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    traces = read_traces(files, TWIZY_COLUMNS)
    spec = VehicleProfile.load("twizy")
    trips: list[dict[str, Any]] = [
        {"name": t.name, "distance_m": t.distance_m, "duration_s": t.duration_s, "scores": {}} for t in traces
    ]
    fitted: dict[str, list[dict[str, float]]] = {}
    for label, params in FIT_SETS.items():
        for k, trace in enumerate(traces):
            if params:
                cal = calibrate([t for j, t in enumerate(traces) if j != k], spec, params, window_s=window_s)
                vehicle = cal.vehicle
                fitted.setdefault(label, []).append(dict(cal.values))
            else:
                vehicle = spec
            s = score_trip(trace, vehicle, window_s=window_s)
            trips[k]["scores"][label] = {f: float(getattr(s, f)) for f in SCORE_FIELDS}
    e = [trace_energy(t, spec) for t in traces]
    best, held = select_parameters(traces, spec, FIT_SETS, window_s=window_s)
    loto = [
        {
            "fit": h.fit,
            "trip": h.trip,
            "measured_wh": h.measured_wh,
            "predicted_wh": h.predicted_wh,
            "sd_wh": h.sd_wh,
            "values": h.values,
            "sd": h.sd,
            "warnings": list(h.warnings),
        }
        for h in held
    ]
    return {
        "loto": loto,
        "loto_best": best,
        "window_s": window_s,
        "battery_capacity_wh": spec.battery_capacity_wh,
        "soc_resolution_wh": float(soc_resolution_wh(traces[0], spec)),
        "trips": trips,
        "fitted": fitted,
        "potential_wh": [float(x.potential_j.sum() / 3600) for x in e],
        "predicted_wh": [float(x.total_wh) for x in e],
        "cpu_s": time.process_time() - cpu0,
        "wall_s": time.perf_counter() - wall0,
        "load": os.getloadavg()[0],
    }


def _spec_rows() -> list[str]:
    """One Markdown row per field of the shipped Twizy profile that names its source: field, value, source."""
    spec = VehicleProfile.load("twizy")
    rows = []
    for field, source in (spec.sources or {}).items():
        value = getattr(spec, field)
        text = json.dumps(value) if isinstance(value, tuple) else f"{value:g}"
        rows.append(f"| {field} | {text} | {source} |")
    return rows


def _fitted_sentence() -> str:
    """Which of the profile's values the calibration below can adjust (``FIT_PARAMETERS``) and which it never does
    (the profile's other sourced fields), from the profile and the calibration's own list."""
    import dataclasses

    from evroute.traces.calibrate import with_parameters

    spec = VehicleProfile.load("twizy")
    moved: dict[str, list[str]] = {}  # fit parameter -> the profile fields setting it changes (found by setting it)
    for name, (lo, hi) in FIT_PARAMETERS.items():
        new = with_parameters(spec, {name: (lo + hi) / 2})
        moved[name] = [f.name for f in dataclasses.fields(spec) if getattr(new, f.name) != getattr(spec, f.name)]
    changed = {f for fields in moved.values() for f in fields}
    fixed = [f for f in (spec.sources or {}) if f not in changed]
    via = ", ".join(f"{n}" + (f" (sets {', '.join(fs)})" if fs and fs != [n] else "") for n, fs in moved.items())
    return (
        f"The calibration below adjusts at most {len(FIT_PARAMETERS)} values: {via}; every other value of the table "
        f"stays as the profile states it ({', '.join(fixed) or 'none'})."
    )


def build_report(d: dict[str, Any], command: str) -> list[str]:
    """The Markdown report (lines), every number and sentence computed from ``measure``'s dict ``d``."""
    trips = d["trips"]
    window_s = d["window_s"]
    lines = [
        "# Trace energy model on a real EV: Renault Twizy logs",
        "",
        f"Command: `{command}` (with `EVROUTE_DATA` pointing at the folder that holds `ev-logs/rsk-twizy/`), at commit "
        f"`{d.get('commit', 'not recorded')}`.",
        "",
        "Generated from the per-trip numbers in [`data/twizy_trace_energy.json`](data/twizy_trace_energy.json) "
        "(rebuild without the logs: `python -m studies.trip_logs.twizy_trace_energy --report-only`); every number and "
        "sentence below is computed from them.",
        "",
        f"Data: {len(trips)} trips of the RSK Twizy data set (CC-BY-4.0, NaitMalek et al.; 1 Hz CAN speed, GPS "
        "altitude, battery state of charge), "
        f"{sum(t['distance_m'] for t in trips) / 1000:.0f} km and "
        f"{sum(t['duration_s'] for t in trips) / 3600:.1f} h in all. "
        "Model: `evroute.traces.trace_energy` (Eq. 8 plus the kinetic term with the profile's rotating mass, its motor "
        "efficiency map and auxiliary power, second by second, GPS altitude "
        "median-filtered over 5 samples and averaged over 100 m of distance driven). Measured energy: the drop of the "
        "logged state of charge times the usable capacity.",
        "",
        "## Specification profile (`evroute/resources/vehicles/twizy.json`)",
        "",
        "Values and sources as the profile file states them (its `sources` field):",
        "",
        "| field | value | source |",
        "|---|---|---|",
        *_spec_rows(),
        "",
        _fitted_sentence(),
        "The auxiliary power, motor map, rotating mass "
        "and top speed came with the vehicle library (issue 34); the profile before them (commit f62f65a) "
        "under-predicted every trip by 21.7 % on average with no fit (`git show f62f65a:docs/results/"
        "twizy_trace_energy.md`).",
        "",
    ]
    res = d["soc_resolution_wh"]
    lines += [
        "## Leave-one-trip-out calibration",
        "",
        f"Each trip is predicted by a profile fitted on the other {len(trips) - 1} trips (MAP: least squares on the "
        f"energy of {window_s:g}-s windows plus priors around the specification profile, `evroute.traces.calibrate`). "
        "Error = predicted - measured.",
        "",
        "| fit set | mean error (%) | 95 % interval | mean abs. error (%) | RMSE (Wh) | mean error (Wh/km) | "
        "window RMSE (Wh) |",
        "|---|---|---|---|---|---|---|",
    ]
    summary: dict[str, tuple[float, float, float]] = {}
    for label in FIT_SETS:
        sc = [t["scores"][label] for t in trips]
        pct = np.array([s["error_pct"] for s in sc])
        wh = np.array([s["error_wh"] for s in sc])
        per_km = np.array([s["error_wh_per_km"] for s in sc])
        win = np.array([s["window_rmse_wh"] for s in sc])
        m = float(pct.mean())
        lo, hi = t_interval(pct)
        h = (hi - lo) / 2
        mae = float(np.abs(pct).mean())
        summary[label] = (m, h, mae)
        lines.append(
            f"| {label} | {m:+.1f} | [{m - h:+.1f}, {m + h:+.1f}] | {mae:.1f} | {np.sqrt(np.mean(wh**2)):.0f} | "
            f"{per_km.mean():+.1f} | {win.mean():.0f} |"
        )
    best = min(summary, key=lambda k: summary[k][2])
    spec_m, spec_h, spec_mae = summary["spec (no fit)"]
    lines += [
        "",
        f"- The specification profile {'under' if spec_m < 0 else 'over'}-predicts every trip"
        if all((t["scores"]["spec (no fit)"]["error_pct"] < 0) == (spec_m < 0) for t in trips)
        else f"- The specification profile's errors have mixed signs (mean {spec_m:+.1f} %)",
        f"  (mean {spec_m:+.1f} %, mean absolute {spec_mae:.1f} %).",
        f"- Lowest mean absolute error on held-out trips: **{best}** ({summary[best][2]:.1f} %, mean "
        f"{summary[best][0]:+.1f} +- {summary[best][1]:.1f} %, {len(trips)} trips).",
        "",
        "Per trip (held out), error in %:",
        "",
        "| trip | km | measured (Wh) | " + " | ".join(FIT_SETS) + " |",
        "|---|---|---|" + "---|" * len(FIT_SETS),
    ]
    for t in trips:
        first = t["scores"]["spec (no fit)"]
        lines.append(
            f"| {t['name']} | {first['distance_km']:.1f} | {first['measured_wh']:.0f} | "
            + " | ".join(f"{t['scores'][lab]['error_pct']:+.1f}" for lab in FIT_SETS)
            + " |"
        )
    lines += [
        "",
        "Fitted values (range over the leave-one-out folds):",
        "",
        "| fit set | parameter | min | max |",
        "|---|---|---|---|",
    ]
    for label, folds in d["fitted"].items():
        for name in folds[0]:
            vals = [f[name] for f in folds]
            lines.append(f"| {label} | {name} | {min(vals):.4g} | {max(vals):.4g} |")
    at_bound = sorted(
        {
            f"{name} ({label})"
            for label, folds in d["fitted"].items()
            for f in folds
            for name, x in f.items()
            if np.isclose(x, FIT_PARAMETERS[name][0], rtol=1e-4) or np.isclose(x, FIT_PARAMETERS[name][1], rtol=1e-4)
        }
    )
    smallest = min(t["scores"][lab]["measured_wh"] for t in trips for lab in FIT_SETS)
    lines += [
        "",
        "Parameters that ended at a bound of `FIT_PARAMETERS` in at least one fold: "
        + (", ".join(at_bound) if at_bound else "none")
        + ". A parameter at its bound means the data ask for more than the physical range allows: the windowed "
        "energy is not explained by the physics terms alone (e.g. a state-of-charge gauge that is not linear in "
        "energy, or losses the model lacks).",
        "",
        "## What limits the comparison",
        "",
        f"- State-of-charge resolution: the smallest logged step is {res:.2f} Wh "
        f"({res / d['battery_capacity_wh'] * 100:.2f} % of capacity). A trip's measured energy is the difference of "
        "two readings, so quantisation moves it by at "
        f"most {res:.2f} Wh, {res / smallest * 100:.3f} % of the smallest trip: the "
        "resolution does not limit whole-trip comparisons; the gauge's own estimation error (a battery-management "
        "estimate, not a measured energy) and the stated capacity do.",
        "- Capacity and propulsion efficiency are confounded (only energy over capacity is observed).",
    ]
    pe, tot = np.array(d["potential_wh"]), np.array(d["predicted_wh"])
    lines += [
        f"- GPS altitude: the potential term of a whole trip is {pe.min():+.0f} to {pe.max():+.0f} Wh "
        f"({np.max(np.abs(pe) / tot) * 100:.1f} % of the predicted trip energy at most) after smoothing.",
        "",
        "",
        *loto_section(d),
        "",
        f"Run time: {d['cpu_s']:.1f} s CPU, {d['wall_s']:.1f} s wall, load {d['load']:.1f} (2-core machine).",
    ]
    return lines


def loto_section(d: dict[str, Any]) -> list[str]:
    """The leave-one-trajectory-out section (T1 <-> T2): error, 90 % interval coverage, fitted values per fold."""
    rows, best = d["loto"], d["loto_best"]
    groups = sorted({r["trip"].split("_", 1)[0] for r in rows})
    lines = [
        "## Leave-one-trajectory-out (" + " <-> ".join(groups) + ") with predictive intervals",
        "",
        "Each trajectory (a driver and its roads) is predicted by MAP calibrations on the other trajectory alone "
        "(`evroute.traces.calibrate.select_parameters`, the same as `evroute learn --calibrate --fit auto`). Each "
        "trip gets a 90 % predictive interval from the Laplace approximation: the parameters' posterior covariance "
        "through the trip's energy, the windows' noise and a trip-level relative effect estimated on the training "
        "trips. Covered = the measured energy lies inside the interval.",
        "",
        "| fit set | trips | mean error (%) | mean abs. error (%) | 90 % intervals covering | mean half-width (%) |",
        "|---|---|---|---|---|---|",
    ]
    for label in FIT_SETS:
        sel = [r for r in rows if r["fit"] == label]
        err = np.array([100 * (r["predicted_wh"] - r["measured_wh"]) / r["measured_wh"] for r in sel])
        cov = [abs(r["predicted_wh"] - r["measured_wh"]) <= Z90 * r["sd_wh"] for r in sel]
        half = np.mean([100 * Z90 * r["sd_wh"] / r["predicted_wh"] for r in sel])
        mark = " (chosen)" if label == best else ""
        lines.append(
            f"| {label}{mark} | {len(sel)} | {err.mean():+.1f} | {np.abs(err).mean():.1f} | {sum(cov)} of {len(sel)} "
            f"| {half:.1f} |"
        )
    n = len([r for r in rows if r["fit"] == best])
    lines += [
        "",
        f"With {n} trips a coverage is known to about +-{100 * np.sqrt(0.09 / n):.0f} points (binomial s.e. at 90 %); "
        f"the chosen set (least held-out mean absolute error) is **{best}**.",
        "",
        f"Per trip, {best}, held out:",
        "",
        "| trip | measured (Wh) | predicted (Wh) | 90 % interval (Wh) | error (%) | covered |",
        "|---|---|---|---|---|---|",
    ]
    for r in (r for r in rows if r["fit"] == best):
        h = Z90 * r["sd_wh"]
        e = 100 * (r["predicted_wh"] - r["measured_wh"]) / r["measured_wh"]
        ok = "yes" if abs(r["predicted_wh"] - r["measured_wh"]) <= h else "no"
        lines.append(
            f"| {r['trip']} | {r['measured_wh']:.0f} | {r['predicted_wh']:.0f} | "
            f"[{r['predicted_wh'] - h:.0f}, {r['predicted_wh'] + h:.0f}] | {e:+.1f} | {ok} |"
        )
    lines += [
        "",
        "Fitted values per fold (the fold is named by the trajectory it predicts; +- the Laplace posterior s.d.); "
        "a value at a bound of `FIT_PARAMETERS` is flagged by the calibration with a warning naming the data that "
        "would identify it:",
        "",
        "| fit set | predicts | parameter | value | bounds | at a bound: warning |",
        "|---|---|---|---|---|---|",
    ]
    inside, warned = 0, 0
    for label in FIT_SETS:
        for g in groups:
            fold = next((r for r in rows if r["fit"] == label and r["trip"].split("_", 1)[0] == g), None)
            if fold is None:
                continue
            for name, x in fold["values"].items():
                lo, hi = FIT_PARAMETERS[name]
                at = min(x - lo, hi - x) <= 1e-6 * (hi - lo)
                said = [w for w in fold["warnings"] if f" {name} " in f" {w} "]
                inside += not at
                warned += bool(at and said)
                flag = ("yes: " + said[0].split(": ", 1)[1]) if at and said else ("NO WARNING" if at else "-")
                lines.append(
                    f"| {label} | {g} | {name} | {x:.4g} +- {fold['sd'][name]:.2g} | [{lo:g}, {hi:g}] | {flag} |"
                )
    lines += [
        "",
        f"{inside} fitted values lie inside their bounds; {warned} are at a bound, each with its warning"
        + (
            "."
            if all(
                any(f" {name} " in f" {w} " for w in r["warnings"])
                for r in rows
                for name, x in r["values"].items()
                if min(x - FIT_PARAMETERS[name][0], FIT_PARAMETERS[name][1] - x)
                <= 1e-6 * (FIT_PARAMETERS[name][1] - FIT_PARAMETERS[name][0])
            )
            else "; some value at a bound has NO warning (a defect)."
        ),
    ]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=os.environ.get("EVROUTE_DATA"), help="folder holding ev-logs/rsk-twizy/")
    ap.add_argument("--window-s", type=float, default=300.0, help="calibration window (s)")
    ap.add_argument("--out", default="docs/results/twizy_trace_energy.md")
    ap.add_argument("--data", default="docs/results/data/twizy_trace_energy.json", help="per-trip numbers (JSON)")
    ap.add_argument("--report-only", action="store_true", help="read no logs; rebuild --out from --data")
    args = ap.parse_args()
    data, out = Path(args.data), Path(args.out)
    if args.report_only:
        if not data.is_file():
            ap.exit(2, f"evroute: error: no per-trip data at {data} (run the study without --report-only)\n")
        d = json.loads(data.read_text())
    else:
        if not args.data_dir:
            ap.exit(2, "evroute: error: set EVROUTE_DATA or --data-dir\n")
        if not sorted((Path(args.data_dir) / "ev-logs" / "rsk-twizy").glob("T*.csv")):
            ap.exit(2, f"evroute: error: no trip logs under {args.data_dir}/ev-logs/rsk-twizy\n")
        d = measure(args.data_dir, args.window_s)
        d["command"] = f"python -m studies.trip_logs.twizy_trace_energy --window-s {args.window_s:g} --out {args.out}"
        import subprocess

        rev = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True, check=False)
        d["commit"] = rev.stdout.strip() or "unknown"
        data.parent.mkdir(parents=True, exist_ok=True)
        data.write_text(json.dumps(d, indent=1) + "\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(build_report(d, d["command"])) + "\n")
    print(f"wrote {out} from {data}")


if __name__ == "__main__":
    main()
