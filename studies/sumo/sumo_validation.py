"""Validation of the physics prior (Eq. 8) against SUMO's battery device, free flow and peak hour.

For each network: every edge of the largest SCC is driven by EV probe trips ``[predecessor, edge, successor]``

* free flow: ``--probes`` probe trips per edge spread over 6 simulated hours, no background traffic;
* peak hour: 7:00-9:00 of the daily profile (background EVs at ``--peak`` vehicles/hour in the busiest hour)
  plus probe trips until every edge has ``--probes`` traversals (:func:`evroute.sumo.replay.record_day`).

Per edge, the mean SUMO energy is compared with Eq. 8 (bias, RMSE, R^2, scatter); per route (the named routes A
and B: Eq. 8's energy-optimal, the shortest and the fastest route) the summed means.  To say what Eq. 8 misses,
the gap is split with two refinements of Eq. 8: the auxiliaries (``constantPowerIntake`` x the measured travel
time) and Eq. 8 at the measured mean speed instead of the speed limit.  Writes ``docs/results/sumo_validation.md``
(tables) and ``docs/results/sumo_validation_*.png``; the simulations are cached, so a rerun only re-plots.

    nice -n 10 .venv/bin/python -m studies.sumo.sumo_validation --networks monaco luxembourg
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from evroute.energy import VehicleProfile, edge_energy_wh, network_energy_wh, travel_time_s
from evroute.experiments.runner import load_linegraph
from evroute.oracle import RouteOracle, optimal_route
from evroute.routes import resolve_route
from evroute.sumo.record import ATTRIBUTION_VERSION, record_traversals
from evroute.sumo.replay import DaySpec, probe_routes, record_day, sumo_net_file, write_probe_routes
from evroute.sumo.scenario import cache_key, sumo_cache_dir
from evroute.sumo.vehicle import SUMO_ONLY_DEFAULTS
from studies.common.bench import machine_line

OUT = Path("docs/results")


def free_flow(lg, n_probes: int, vehicle: VehicleProfile) -> pd.DataFrame:  # noqa: ANN001
    """Probe-only traversals (no background), cached as Parquet."""
    net_file = sumo_net_file(lg)
    key = cache_key(
        net_file,
        {
            "kind": "free-flow",
            "n": n_probes,
            "vehicle": vehicle.to_dict(),
            "edges": len(lg.network.edge_ids),
            "attribution": ATTRIBUTION_VERSION,
        },
    )
    path = sumo_cache_dir() / f"{lg.network.name}-freeflow-{key}.parquet"
    if path.is_file():
        return pd.read_parquet(path)
    probes = probe_routes(
        lg, np.zeros(lg.n_nodes, dtype=np.int64), n_probes, (0.0, 6 * 3600.0), np.random.default_rng(0), "probe"
    )
    with tempfile.TemporaryDirectory() as tmp:
        f = write_probe_routes(Path(tmp) / "probes.rou.xml", probes)
        tr = record_traversals(net_file, [f], vehicle=vehicle)
    index = {e: i for i, e in enumerate(lg.network.edge_ids.tolist())}
    tr = tr[tr["edge"].isin(index)]
    data = pd.DataFrame(
        {
            "edge": tr["edge"].map(index).to_numpy(dtype=np.int64),
            "entry_s": tr["entry_s"].to_numpy(),
            "travel_s": tr["travel_s"].to_numpy(),
            "energy_wh": tr["energy_wh"].to_numpy(),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    data.to_parquet(path, index=False)
    return data


def edge_table(lg, data: pd.DataFrame, vehicle: VehicleProfile) -> pd.DataFrame:  # noqa: ANN001
    """Per edge: SUMO mean energy and travel time, Eq. 8, Eq. 8 + auxiliaries, Eq. 8 at the measured speed."""
    net = lg.network
    g = data.groupby("edge")
    df = pd.DataFrame({"n": g.size(), "sumo_wh": g["energy_wh"].mean(), "travel_s": g["travel_s"].mean()})
    e = df.index.to_numpy()
    df["eq8_wh"] = network_energy_wh(net, vehicle)[e]
    aux_wh = SUMO_ONLY_DEFAULTS["constantPowerIntake"] * df["travel_s"] / 3600.0
    df["eq8_aux_wh"] = df["eq8_wh"] + aux_wh
    speed = np.minimum(net.length_m[e] / df["travel_s"].to_numpy(), net.speed_mps[e] * 1.3)
    df["eq8_speed_aux_wh"] = edge_energy_wh(net.length_m[e], speed, net.incline[e], vehicle) + aux_wh
    df["free_flow_s"] = travel_time_s(net.length_m, net.speed_mps)[e]
    df["grade"] = np.abs(net.incline[e])
    df["length_m"] = net.length_m[e]
    return df


def worst_edges(lg, df: pd.DataFrame, k: int = 8) -> list[dict[str, object]]:  # noqa: ANN001
    """The ``k`` edges with the largest |Eq. 8 - SUMO| (with at least 5 traversals)."""
    sub = df[df["n"] >= 5]
    top = sub.reindex((sub["eq8_wh"] - sub["sumo_wh"]).abs().sort_values(ascending=False).index[:k])
    net = lg.network
    return [
        {
            "edge": str(net.edge_ids[e]),
            "n": int(r["n"]),
            "sumo_wh": float(r["sumo_wh"]),
            "eq8_wh": float(r["eq8_wh"]),
            "length_m": float(r["length_m"]),
            "limit_kmh": float(net.speed_mps[e] * 3.6),
            "dz_m": float(net.z_to_m[e] - net.z_from_m[e]),
            "travel_s": float(r["travel_s"]),
            "free_flow_s": float(r["free_flow_s"]),
        }
        for e, r in top.iterrows()
    ]


def breakdown(df: pd.DataFrame) -> list[dict[str, object]]:
    """Eq. 8's bias and RMSE on groups of edges: by grade, by length, by slowdown (travel / free-flow time)."""
    groups = {
        "grade < 1 %": df["grade"] < 0.01,
        "grade 1-5 %": (df["grade"] >= 0.01) & (df["grade"] < 0.05),
        "grade >= 5 %": df["grade"] >= 0.05,
        "length < 50 m": df["length_m"] < 50,
        "length >= 200 m": df["length_m"] >= 200,
        "travel <= 1.2 x free flow": df["travel_s"] <= 1.2 * df["free_flow_s"],
        "travel > 2 x free flow": df["travel_s"] > 2 * df["free_flow_s"],
    }
    rows = []
    for name, mask in groups.items():
        sub = df[mask]
        if len(sub) < 2:
            continue
        r = (sub["eq8_wh"] - sub["sumo_wh"]).to_numpy()
        rel = float(np.median(np.abs(r) / np.maximum(np.abs(sub["sumo_wh"].to_numpy()), 1.0)))
        rows.append(
            {
                "group": name,
                "edges": int(len(sub)),
                "bias_wh": float(r.mean()),
                "rmse_wh": float(np.sqrt((r**2).mean())),
                "median_rel_error": rel,
                "mean_sumo_wh": float(sub["sumo_wh"].mean()),
            }
        )
    return rows


def fit_stats(y: np.ndarray, x: np.ndarray) -> dict[str, float]:
    """Bias (mean x - y), RMSE and R^2 of predicting the SUMO values ``y`` by ``x`` (no refit)."""
    r = x - y
    return {
        "bias_wh": float(r.mean()),
        "rmse_wh": float(np.sqrt((r**2).mean())),
        "r2": float(1.0 - (r**2).sum() / ((y - y.mean()) ** 2).sum()),
    }


def routes_of(lg, network: str, vehicle: VehicleProfile) -> dict[str, np.ndarray]:  # noqa: ANN001
    net = lg.network
    energy = network_energy_wh(net, vehicle)
    oracle = RouteOracle(lg)
    out = {}
    for name in ("A", "B"):
        r = resolve_route(lg, network, name)
        out[f"{name} energy-optimal (Eq. 8)"] = optimal_route(lg, energy, r.start, r.goal).edges
        out[f"{name} shortest"] = oracle.shortest_route(net.length_m, r.start, r.goal).edges
        out[f"{name} fastest"] = oracle.shortest_route(
            travel_time_s(net.length_m, net.speed_mps), r.start, r.goal
        ).edges
    return out


def plot(network: str, tables: dict[str, pd.DataFrame], route_rows: pd.DataFrame) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    fig, axes = plt.subplots(1, len(tables), figsize=(5.2 * len(tables), 4.6), squeeze=False)
    for ax, (cond, df) in zip(axes[0], tables.items(), strict=True):
        lo = float(min(df["eq8_wh"].min(), df["sumo_wh"].min()))
        hi = float(max(df["eq8_wh"].max(), df["sumo_wh"].max()))
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="y = x")
        ax.scatter(df["eq8_wh"], df["sumo_wh"], s=4, alpha=0.4)
        ax.set_xlabel("Eq. 8 energy (Wh)")
        ax.set_ylabel("SUMO mean energy (Wh)")
        ax.set_title(f"{network}, {cond}: {len(df)} edges")
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    f = OUT / f"sumo_validation_{network}_edges.png"
    fig.savefig(f, dpi=110)
    plt.close(fig)
    files.append(f.name)
    fig, ax = plt.subplots(figsize=(8, 4.2))
    names = route_rows["route"].unique().tolist()
    x = np.arange(len(names))
    cols = [("eq8_wh", "Eq. 8"), ("sumo_free_wh", "SUMO free flow"), ("sumo_peak_wh", "SUMO peak hour")]
    for k, (c, label) in enumerate(cols):
        ax.bar(x + (k - 1) * 0.27, route_rows.set_index("route").loc[names, c], 0.27, label=label)
    ax.set_xticks(x, names, rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("route energy (Wh)")
    ax.set_title(f"{network}: routes A and B")
    ax.legend(fontsize=8)
    fig.tight_layout()
    f = OUT / f"sumo_validation_{network}_routes.png"
    fig.savefig(f, dpi=110)
    plt.close(fig)
    files.append(f.name)
    return files


def validate_network(network: str, args: argparse.Namespace, vehicle: VehicleProfile) -> dict[str, object]:
    lg = load_linegraph(network)
    t0 = time.perf_counter()
    free = free_flow(lg, args.probes, vehicle)
    t1 = time.perf_counter()
    peak, meta = record_day(
        lg, DaySpec(peak_per_hour=args.peak, hours=(7, 9), min_samples=args.probes, max_probe_rounds=2), vehicle=vehicle
    )
    t2 = time.perf_counter()
    tables = {"free flow": edge_table(lg, free, vehicle), "peak hour": edge_table(lg, peak, vehicle)}
    stats = {}
    for cond, df in tables.items():
        y = df["sumo_wh"].to_numpy()
        stats[cond] = {
            "edges": len(df),
            "traversals": int(df["n"].sum()),
            "eq8": fit_stats(y, df["eq8_wh"].to_numpy()),
            "eq8_aux": fit_stats(y, df["eq8_aux_wh"].to_numpy()),
            "eq8_speed_aux": fit_stats(y, df["eq8_speed_aux_wh"].to_numpy()),
            "travel_over_free_flow": float((df["travel_s"] / df["free_flow_s"]).median()),
            "breakdown": breakdown(df),
            "worst": worst_edges(lg, df),
        }
    rows = []
    for name, edges in routes_of(lg, network, vehicle).items():
        row = {
            "route": name,
            "edges": len(edges),
            "length_km": float(lg.network.length_m[edges].sum() / 1000),
            "eq8_wh": float(network_energy_wh(lg.network, vehicle)[edges].sum()),
        }
        for cond, key in (("free flow", "sumo_free_wh"), ("peak hour", "sumo_peak_wh")):
            df = tables[cond]
            have = np.isin(edges, df.index.to_numpy())
            row[key] = float(df.loc[edges[have], "sumo_wh"].sum()) if have.all() else float("nan")
        rows.append(row)
    route_rows = pd.DataFrame(rows)
    figs = plot(network, tables, route_rows)
    return {
        "network": network,
        "stats": stats,
        "routes": route_rows.to_dict("records"),
        "figures": figs,
        "sim_s": {"free flow": t1 - t0, "peak hour": t2 - t1},
        "peak_meta": meta,
    }


def write_report(results: list[dict[str, object]], args: argparse.Namespace) -> None:
    lines = [
        "# Eq. 8 vs SUMO: validation of the physics prior",
        "",
        "Command: `nice -n 10 .venv/bin/python -m studies.sumo.sumo_validation --networks "
        f"{' '.join(args.networks)} --probes {args.probes} --peak {args.peak:g}`",
        "",
        f"Machine: {machine_line()}",
        "",
        "EV: `sumo_ev` profile in SUMO 1.28's `Energy` model (field mapping in `evroute/sumo/vehicle.py`, "
        "SUMO-only parameters at SUMO's defaults: rotating mass 40 kg, radial drag 0.1, auxiliaries 100 W). "
        "Free flow: probe trips only; peak hour: 7:00-9:00 of the daily profile with background EVs. "
        "Predictions are not refitted: bias = mean(prediction - SUMO), R^2 = 1 - SSE / SST of SUMO's edge "
        "means. `+aux` adds 100 W x the measured mean travel time; `+speed` evaluates Eq. 8 at the measured "
        "mean speed (length / mean travel time, capped at 1.3 x the limit) instead of the limit.",
        "",
        "| network | condition | edges | traversals | travel / free-flow time (median) | Eq. 8 bias (Wh) | "
        "Eq. 8 RMSE | Eq. 8 R^2 | +aux bias | +aux R^2 | +speed+aux bias | +speed+aux R^2 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for res in results:
        for cond, s in res["stats"].items():  # type: ignore[union-attr]
            lines.append(
                f"| {res['network']} | {cond} | {s['edges']} | {s['traversals']} | "
                f"{s['travel_over_free_flow']:.2f} | {s['eq8']['bias_wh']:+.2f} | {s['eq8']['rmse_wh']:.2f} | "
                f"{s['eq8']['r2']:.3f} | {s['eq8_aux']['bias_wh']:+.2f} | {s['eq8_aux']['r2']:.3f} | "
                f"{s['eq8_speed_aux']['bias_wh']:+.2f} | {s['eq8_speed_aux']['r2']:.3f} |"
            )
    lines += [
        "",
        "Routes (sum of the edge means; `nan` where an edge of the route has no traversal):",
        "",
        "| network | route | edges | km | Eq. 8 (Wh) | SUMO free flow (Wh) | SUMO peak hour (Wh) | peak / Eq. 8 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for res in results:
        for r in res["routes"]:  # type: ignore[union-attr]
            lines.append(
                f"| {res['network']} | {r['route']} | {r['edges']} | {r['length_km']:.2f} | "
                f"{r['eq8_wh']:.1f} | {r['sumo_free_wh']:.1f} | {r['sumo_peak_wh']:.1f} | "
                f"{r['sumo_peak_wh'] / r['eq8_wh']:.2f} |"
            )
    lines += [
        "",
        "Where Eq. 8 errs (prediction - SUMO per edge; median relative error = median of "
        "abs(error) / max(abs(SUMO), 1 Wh)):",
        "",
        "| network | condition | edges | n | mean SUMO (Wh) | Eq. 8 bias (Wh) | Eq. 8 RMSE (Wh) | "
        "median relative error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for res in results:
        for cond, s in res["stats"].items():  # type: ignore[union-attr]
            for b in s["breakdown"]:
                lines.append(
                    f"| {res['network']} | {cond} | {b['group']} | {b['edges']} | {b['mean_sumo_wh']:.1f} | "
                    f"{b['bias_wh']:+.2f} | {b['rmse_wh']:.2f} | {b['median_rel_error']:.2f} |"
                )
    lines += [
        "",
        "Edges where Eq. 8 errs most (at least 5 traversals):",
        "",
        "| network | condition | edge | n | SUMO mean (Wh) | Eq. 8 (Wh) | length (m) | limit (km/h) | dz (m) | "
        "travel (s) | free-flow travel (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for res in results:
        for cond, s in res["stats"].items():  # type: ignore[union-attr]
            for w in s["worst"]:
                lines.append(
                    f"| {res['network']} | {cond} | `{w['edge']}` | {w['n']} | {w['sumo_wh']:.1f} | "
                    f"{w['eq8_wh']:.1f} | {w['length_m']:.0f} | {w['limit_kmh']:.0f} | {w['dz_m']:+.1f} | "
                    f"{w['travel_s']:.1f} | {w['free_flow_s']:.1f} |"
                )
    lines += [
        "",
        "Figures: " + ", ".join(f"`{f}`" for res in results for f in res["figures"]),
        "",  # type: ignore
        "Simulation wall time of this invocation (s; `cached` when an earlier run's simulation was reused): "
        + "; ".join(
            f"{res['network']} "
            + ", ".join(f"{k} {v:.0f}" if v > 5 else f"{k} cached" for k, v in res["sim_s"].items())  # type: ignore
            for res in results
        ),
        "",
    ]
    (OUT / "sumo_validation_table.md").write_text("\n".join(lines))
    (OUT / "sumo_validation.json").write_text(json.dumps(results, indent=1, default=str))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", nargs="+", default=["monaco", "luxembourg"])
    ap.add_argument("--probes", type=int, default=3, help="probe traversals per edge and condition")
    ap.add_argument("--peak", type=float, default=1800.0, help="background vehicles in the busiest hour")
    args = ap.parse_args()
    vehicle = VehicleProfile.load("sumo_ev")
    results = []
    for network in args.networks:
        results.append(validate_network(network, args, vehicle))
        write_report(results, args)
        print(f"{network} done: {json.dumps(results[-1]['stats'])}", flush=True)


if __name__ == "__main__":
    main()
