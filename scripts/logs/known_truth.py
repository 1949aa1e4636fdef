"""Known-truth study of learning from trip logs (issue 23): SUMO trips on a network written as degraded logs,
map-matched and learned; map-matching accuracy and held-out route-energy prediction error of the prior, BI and the
exact GP.

Protocol (all seeded):

1. ``--train + --test`` trips between random pairs of edges (seed 0), each the shortest legal path by length and at
   least ``--min-route-m`` long, driven once by SUMO with the EV (``sumo_ev``, battery device), departing 20 s apart
   (``evroute.sumo.triplogs.simulate_trips``).  SUMO's exact FCD + battery outputs are the truth: the route driven
   and the battery energy of each trip.
2. Per condition (sampling period, GPS noise s.d., gauge step in % of capacity), every training trip is degraded
   (``degrade``, seed 1000 + trip) and map-matched; its charge readings become linear observations.  Matching
   accuracy: the share of the true route's edges in the matched path (recall) and of the matched path's edges in the
   true route (precision), per trip.  Matcher: ``MatchOptions(sigma_m=max(noise, 5), beta_m=10 (1 s) or 30 (10 s))``
   with the default thinning at 4 sigma, which a pilot on the matching precision of 30 of the training trips (15 m
   noise, 1 Hz) preferred to Newson & Krumm's 2 sigma (0.88 vs 0.65); no held-out trip was used for it.
3. For N in ``--ns`` and each seed, N training trips drawn at random (seed) are learned by BI and by the exact GP
   (``evroute.models.store.prior_model`` priors: physics mean Eq. 8, the paper's kernel and prior variance
   ``(0.25 sigma_det)^2``).  Two choices are made per fit by the log marginal likelihood of the training readings
   alone (never the held-out trips): the noise of one traversal, ``(f sigma_det)^2`` with ``f`` in ``NOISE_FRACS``,
   and whether to add shared per-metre and per-edge offsets of the physics mean
   (``evroute.models.linear_obs.offset_basis``: prior s.d. 0.05 Wh/m and 10 Wh).  The held-out trips' energy is
   predicted as the sum of the posterior means over their true routes.  Error per held-out trip = predicted -
   SUMO's battery energy (Wh): RMSE and bias over the held-out trips; the prior alone
   (N = 0) is the physics model.

Resumable: the simulation and each (condition, N, seed) row are kept in ``--out`` (``sim/``, ``rows.csv``,
``matching.csv``); a rerun skips what is there.  ``--report`` writes the Markdown report from the committed CSV
(``docs/results/data/trip_logs_known_truth*.csv``).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

CONDITIONS = {  # name: (period_s, gps_sigma_m, soc_step_pct); "exact": SUMO's own log (the bound of log quality)
    "exact": (1.0, 0.0, 1e-6),
    "1s_5m_0.1pct": (1.0, 5.0, 0.1),
    "10s_15m_0.1pct": (10.0, 15.0, 0.1),
    "1s_15m_1pct": (1.0, 15.0, 1.0),
}
NOISE_FRACS = (0.1, 0.25, 0.5, 1.0)
ROW_FIELDS = [
    "network",
    "condition",
    "n_train",
    "seed",
    "model",
    "rmse_wh",
    "bias_wh",
    "n_test",
    "mean_energy_wh",
    "noise_frac",
    "offsets",
    "log_ml",
    "unusable",
]
MATCH_FIELDS = ["network", "condition", "trip", "samples", "recall", "precision", "cpu_s"]


def _append(path: Path, fields: list[str], rows: list[dict]) -> None:
    new = not path.is_file()
    with path.open("a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
        if new:
            w.writeheader()
        w.writerows(rows)


def _read(path: Path) -> list[dict]:
    return list(csv.DictReader(path.open())) if path.is_file() else []


def run(args: argparse.Namespace) -> int:
    from evroute.energy import VehicleProfile, network_energy_wh
    from evroute.linegraph import build_line_graph
    from evroute.models.linear_obs import linear_model_from, offset_basis
    from evroute.models.store import prior_model
    from evroute.network.registry import load_network
    from evroute.sumo.replay import sumo_net_file
    from evroute.sumo.triplogs import degrade, random_routes, simulate_trips
    from evroute.traces.formats import read_sumo_fcd
    from evroute.traces.mapmatch import MatchIndex, MatchOptions
    from evroute.traces.observations import trace_readings

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    vehicle = VehicleProfile.load("sumo_ev")
    lg = build_line_graph(load_network(args.network))
    net = lg.network
    index_of = {str(e): i for i, e in enumerate(net.edge_ids)}
    sim = out / "sim"
    routes = random_routes(lg, args.train + args.test, args.min_route_m, np.random.default_rng(0))
    if not (sim / "battery.xml").is_file():
        t0 = time.process_time()
        simulate_trips(sumo_net_file(lg), routes, sim, vehicle=vehicle, depart_gap_s=20.0)
        print(f"simulated {len(routes)} trips ({time.process_time() - t0:.1f} CPU s in Python)", file=sys.stderr)
    traces = {t.name: t for t in read_sumo_fcd(sim / "fcd.xml", sim / "battery.xml")}
    usable = (vehicle.max_soc - vehicle.min_soc) * vehicle.battery_capacity_wh
    names = [n for n in routes if n in traces]
    train, test = names[: args.train], names[args.train : args.train + args.test]
    truth = {n: np.array([index_of[e] for e in routes[n]]) for n in names}
    energy = {n: float(traces[n].soc_pct[0] - traces[n].soc_pct[-1]) / 100.0 * usable for n in names}
    e_det = network_energy_wh(net, vehicle)
    y_test = np.array([energy[n] for n in test])
    rows_csv, match_csv = out / "rows.csv", out / "matching.csv"
    if not (out / "coverage.csv").is_file():  # share of held-out route edges the N training trips drove
        test_edges = np.concatenate([truth[n] for n in test])
        cov_rows = []
        for n_train in args.ns:
            for seed in range(args.seeds):
                pick = np.random.default_rng(seed).choice(len(train), size=min(n_train, len(train)), replace=False)
                seen = np.unique(np.concatenate([truth[train[i]] for i in pick]))
                cov_rows.append(
                    dict(
                        network=args.network,
                        n_train=n_train,
                        seed=seed,
                        coverage=f"{np.isin(test_edges, seen).mean():.4f}",
                    )
                )
        _append(out / "coverage.csv", ["network", "n_train", "seed", "coverage"], cov_rows)
    done = {(r["condition"], int(r["n_train"]), int(r["seed"])) for r in _read(rows_csv)}
    prior_done = any(int(r["n_train"]) == 0 for r in _read(rows_csv))
    if not prior_done:
        pred = np.array([e_det[truth[n]].sum() for n in test])
        err = pred - y_test
        _append(
            rows_csv,
            ROW_FIELDS,
            [
                dict(
                    network=args.network,
                    condition="-",
                    n_train=0,
                    seed=0,
                    model="prior",
                    rmse_wh=f"{np.sqrt(np.mean(err**2)):.3f}",
                    bias_wh=f"{err.mean():.3f}",
                    n_test=len(test),
                    mean_energy_wh=f"{y_test.mean():.3f}",
                )
            ],
        )
    # the priors once (the kernel does not depend on the noise, which only enters the readings' covariance)
    extra = {"learn_hyper": False}
    bases = {k: prior_model(k, lg, vehicle, **(extra if k == "gp-exact" else {})) for k in ("bi", "gp-exact")}
    for cond in args.conditions:
        period, sigma, step = CONDITIONS[cond]
        index = MatchIndex(lg, MatchOptions(sigma_m=max(sigma, 5.0), beta_m=10.0 if period <= 1 else 30.0))
        basis, basis_sd = offset_basis(index.length_m)
        readings = {}
        matched_rows = []
        have_match = {r["trip"] for r in _read(match_csv) if r["condition"] == cond}
        for k, name in enumerate(train):
            log = degrade(
                traces[name], np.random.default_rng(1000 + k), gps_sigma_m=sigma, period_s=period, soc_step_pct=step
            )
            t0 = time.process_time()
            m = index.match(log.lat, log.lon)
            cpu = time.process_time() - t0
            true_set, got = set(truth[name].tolist()), set(m.path.tolist())
            if name not in have_match:
                matched_rows.append(
                    dict(
                        network=args.network,
                        condition=cond,
                        trip=name,
                        samples=len(log),
                        recall=f"{len(true_set & got) / len(true_set):.4f}",
                        precision=f"{len(true_set & got) / max(len(got), 1):.4f}",
                        cpu_s=f"{cpu:.4f}",
                    )
                )
            readings[name] = (log, m)
        if matched_rows:
            _append(match_csv, MATCH_FIELDS, matched_rows)
        for n_train in args.ns:
            for seed in range(args.seeds):
                if (cond, n_train, seed) in done:
                    continue
                pick = np.random.default_rng(seed).choice(len(train), size=min(n_train, len(train)), replace=False)
                rows = []
                for kind in ("bi", "gp-exact"):
                    best = None
                    for frac in NOISE_FRACS:
                        for offsets in (False, True):
                            kw = {"basis": basis, "basis_sd": basis_sd} if offsets else {}
                            model = linear_model_from(bases[kind], **kw)
                            model.noise_var = frac**2 * float(np.var(e_det))  # = prior_model(noise_frac=frac)
                            unusable = 0
                            for i in pick:
                                log, m = readings[train[i]]
                                r = None
                                if m.pieces == 1:
                                    r = trace_readings(log, m, index.length_m, usable, model.noise_var, soc_step=step)
                                if r is None:
                                    unusable += 1
                                    continue
                                model.observe(r.edges, r.a, r.y, r.noise_cov)
                            mu = model.posterior().mean
                            if best is None or model.log_ml > best[0]:
                                best = (model.log_ml, frac, offsets, mu, unusable)
                    assert best is not None
                    log_ml, frac, offsets, mu, unusable = best
                    err = np.array([mu[truth[n]].sum() for n in test]) - y_test
                    rows.append(
                        dict(
                            network=args.network,
                            condition=cond,
                            n_train=n_train,
                            seed=seed,
                            model=kind,
                            rmse_wh=f"{np.sqrt(np.mean(err**2)):.3f}",
                            bias_wh=f"{err.mean():.3f}",
                            n_test=len(test),
                            mean_energy_wh=f"{y_test.mean():.3f}",
                            noise_frac=frac,
                            offsets=int(offsets),
                            log_ml=f"{log_ml:.2f}",
                            unusable=unusable,
                        )
                    )
                _append(rows_csv, ROW_FIELDS, rows)
                print(
                    f"{cond} N={n_train} seed={seed}: " + ", ".join(f"{r['model']} {r['rmse_wh']}" for r in rows),
                    file=sys.stderr,
                )
    return 0


def _interval(x: np.ndarray) -> tuple[float, float]:
    """Mean and 95 % t half-width over seeds."""
    from scipy import stats

    if len(x) < 2:
        return float(x.mean()), float("nan")
    return float(x.mean()), float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))


def report(args: argparse.Namespace) -> int:
    rows = _read(Path(args.rows))
    match = _read(Path(args.matching))
    coverage = _read(Path(args.coverage))
    if not rows:
        print(f"evroute: error: {args.rows}: no rows", file=sys.stderr)
        return 2
    lines = [
        "# Trip logs: known-truth learning study (generated)",
        "",
        f"Generated by `python scripts/logs/known_truth.py --report --rows {args.rows} --matching {args.matching} "
        f"--coverage {args.coverage}` "
        "from the committed CSV files ("
        + ", ".join(f"[`{Path(f).name}`](data/{Path(f).name})" for f in (args.rows, args.matching, args.coverage))
        + "); the data were produced by `python scripts/logs/known_truth.py "
        f"{args.command}` (protocol in the script's docstring: SUMO trips on the network, degraded logs, map "
        "matching, charge readings as linear observations, held-out route-energy prediction).",
        "",
        "## Map matching (training trips)",
        "",
        "| network | condition | trips | samples | recall (mean) | precision (mean) | trips with recall 1 "
        "| samples / CPU s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["network"], r["condition"]) for r in match})
    for net, cond in keys:
        rs = [r for r in match if (r["network"], r["condition"]) == (net, cond)]
        rec = np.array([float(r["recall"]) for r in rs])
        prec = np.array([float(r["precision"]) for r in rs])
        samples = sum(int(r["samples"]) for r in rs)
        cpu = sum(float(r["cpu_s"]) for r in rs)
        lines.append(
            f"| {net} | {cond} | {len(rs)} | {samples} | {rec.mean():.3f} | {prec.mean():.3f} | "
            f"{(rec == 1).mean():.0%} | {samples / max(cpu, 1e-9):,.0f} |"
        )
    lines += [
        "",
        "## Held-out route energy",
        "",
        "RMSE and bias of the predicted battery energy of the held-out trips (Wh; mean over seeds with its 95 % "
        "t-interval); ratio = RMSE / the prior's RMSE.",
        "",
        "| network | condition | N | model | seeds | RMSE (Wh) | bias (Wh) | ratio to prior | noise f chosen "
        "| offsets chosen |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    prior = {r["network"]: float(r["rmse_wh"]) for r in rows if r["model"] == "prior"}
    for r in rows:
        if r["model"] == "prior":
            lines.append(
                f"| {r['network']} | - | 0 | prior (Eq. 8) | - | {float(r['rmse_wh']):.1f} | "
                f"{float(r['bias_wh']):+.1f} | 1 | - | - |"
            )
    verdicts = []
    groups = sorted(
        {(r["network"], r["condition"], int(r["n_train"]), r["model"]) for r in rows if r["model"] != "prior"}
    )
    for net, cond, n, model in groups:
        rs = [r for r in rows if (r["network"], r["condition"], int(r["n_train"]), r["model"]) == (net, cond, n, model)]
        rmse = np.array([float(r["rmse_wh"]) for r in rs])
        bias = np.array([float(r["bias_wh"]) for r in rs])
        m, h = _interval(rmse)
        b, hb = _interval(bias)
        ratio = m / prior[net]
        fracs = ", ".join(sorted({r["noise_frac"] for r in rs}))
        offs = f"{sum(int(r['offsets']) for r in rs)} of {len(rs)}"
        lines.append(
            f"| {net} | {cond} | {n} | {model} | {len(rs)} | {m:.1f} +- {h:.1f} | {b:+.1f} +- {hb:.1f} | {ratio:.2f} "
            f"| {fracs} | {offs} |"
        )
        if n == max(int(r["n_train"]) for r in rows):
            verdicts.append((net, cond, model, ratio, m + h))
    lines += [
        "",
        "Paired difference exact GP - BI of the held-out RMSE (same training trips per seed; mean and 95 % t-interval "
        "over seeds):",
        "",
        "| network | condition | N | seeds | GP - BI RMSE (Wh) |",
        "|---|---|---|---|---|",
    ]
    for net, cond, n in sorted({(g[0], g[1], g[2]) for g in groups}):
        by = {
            (r["model"], r["seed"]): float(r["rmse_wh"])
            for r in rows
            if (r["network"], r["condition"], int(r["n_train"])) == (net, cond, n)
        }
        seeds = sorted({s for (_, s) in by if ("bi", s) in by and ("gp-exact", s) in by})
        d = np.array([by[("gp-exact", s)] - by[("bi", s)] for s in seeds])
        if d.size:
            m, h = _interval(d)
            lines.append(f"| {net} | {cond} | {n} | {len(d)} | {m:+.1f} +- {h:.1f} |")
    if coverage:
        lines += ["", "Share of the held-out trips' route edges that the N training trips drove (mean over seeds):", ""]
        for n in sorted({int(r["n_train"]) for r in coverage}):
            c = np.array([float(r["coverage"]) for r in coverage if int(r["n_train"]) == n])
            lines.append(f"* N = {n}: {c.mean():.0%}")
    n_max = max(int(r["n_train"]) for r in rows)
    lines += ["", f"## Goal: {n_max} trips halve the prior's route-level RMSE", ""]
    for net, cond, model, ratio, upper in verdicts:
        ok = "met" if ratio <= 0.5 else "missed"
        lines.append(
            f"* {net}, {cond}, {model}: RMSE ratio {ratio:.2f} -> goal {ok}"
            + (f" (upper 95 % bound of the RMSE {upper:.1f} Wh vs half the prior's {prior[net] / 2:.1f} Wh)")
        )
    exact = [v for v in verdicts if v[1] == "exact"]
    degraded = [v for v in verdicts if v[1] != "exact"]
    if exact and degraded and not any(v[3] <= 0.5 for v in verdicts):
        best_exact = min(v[3] for v in exact)
        best_deg = min(v[3] for v in degraded)
        step = (
            f"the best degraded condition reaches {best_deg:.2f}, so the log's degradation is not what bounds the best "
            "ratio"
            if best_deg <= best_exact
            else f"the log's degradation explains only the step from {best_exact:.2f} to the degraded logs' best "
            f"{best_deg:.2f}"
        )
        lines += [
            "",
            f"What bounds it: SUMO's exact logs (no GPS noise, exact charge at 1 Hz) reach a ratio of {best_exact:.2f} "
            f"at best and {step}.  What remains with exact logs is what no log quality fixes: held-out route edges "
            "that no training trip drove (coverage above; BI cannot move them, the GP only through its kernel and the "
            "shared offsets) and the trip-to-trip variation of SUMO's energies around the edge means (stops at "
            "junctions and lights); this study does not separate the two.",
        ]
    precision = {(r["network"], r["condition"]): [] for r in match}
    for r in match:
        precision[(r["network"], r["condition"])].append(float(r["precision"]))
    for net, cond, model, ratio, _ in verdicts:
        if ratio > 1 and (net, cond) in precision:
            prec = float(np.mean(precision[(net, cond)]))
            why = (
                "; a likely cause (not isolated here): edges the trip did not drive take shares of the measured energy"
                if prec < 0.8
                else ""
            )
            lines.append(
                f"* {cond}, {model}: worse than the prior (ratio {ratio:.3f}); matched-path precision (share of "
                f"matched edges on the true route) {prec:.2f}{why}."
            )
    Path(args.output).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--network", default="monaco")
    p.add_argument("--out", default="results/trip_logs_known_truth", help="study folder (resumable)")
    p.add_argument("--train", type=int, default=200, help="training pool size (trips)")
    p.add_argument("--test", type=int, default=40, help="held-out trips")
    p.add_argument("--ns", default="10,100", help="numbers of training trips learned")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--min-route-m", type=float, default=1000.0)
    p.add_argument("--conditions", default=",".join(CONDITIONS), help=f"among {', '.join(CONDITIONS)}")
    p.add_argument("--report", action="store_true", help="write the Markdown report from --rows/--matching")
    p.add_argument("--rows", default="docs/results/data/trip_logs_known_truth.csv")
    p.add_argument("--matching", default="docs/results/data/trip_logs_known_truth_matching.csv")
    p.add_argument("--coverage", default="docs/results/data/trip_logs_known_truth_coverage.csv")
    p.add_argument("--output", default="docs/results/trip_logs_known_truth.md")
    p.add_argument("--command", default="--network monaco --train 200 --test 40 --ns 10,100 --seeds 3")
    args = p.parse_args(argv)
    if args.report:
        return report(args)
    args.ns = [int(x) for x in args.ns.split(",") if x]
    args.conditions = [c for c in args.conditions.split(",") if c]
    bad = [c for c in args.conditions if c not in CONDITIONS]
    if bad or not args.ns or min(args.ns) < 1 or args.train < max(args.ns) or args.test < 2:
        print("evroute: error: unknown condition, or --ns must be >= 1 and <= --train, --test >= 2", file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
