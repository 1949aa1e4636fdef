"""Check the physics claim on recorded SUMO data: reduced energy (battery - kinetic - potential) >= 0 per traversal.

For each network and SUMO energy model (``Energy``, ``MMPEVEM``) a small recorded day is simulated (or read from the
cache) with :func:`evroute.sumo.replay.record_day`: ``--hours`` of the daily profile at ``--peak`` background EVs
per hour in the busiest hour, probe trips until every edge has ``--min-samples`` traversals (at most
``--probe-rounds`` rounds).  Reported per day:

* the share of traversals whose reduced energy is below 0 and by how much (quantiles of those below 0, in Wh);
* edges (of those with traversals) with a negative mean, *before* (the battery energy minus the elevation potential
  ``m g eta- dz``, the reduced cost the replay used until attribution version 3) and *after* (the mean reduced
  energy, not clipped);
* whether a negative cycle is reachable in the line graph's largest SCC, before and after (edges without a
  traversal take the prior of the same kind: Eq. 8 minus that potential);
* the exact optimum of route A of the network in the replay environment (reduced means clipped at 0, one Dijkstra).

Writes ``docs/results/archive/sumo_kinetic.md`` (``--out``).

    nice -n 10 .venv/bin/python -m studies.sumo.sumo_kinetic_check --networks monaco
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from evroute.energy import VehicleProfile, elevation_potential_wh, network_energy_wh
from evroute.environments.sumo_replay import (
    SumoReplayConfig,
    SumoReplayEnvironment,
    full_potential_wh,
    reduced_prior_wh,
)
from evroute.experiments.runner import load_linegraph
from evroute.oracle import has_negative_cycle
from evroute.routes import resolve_route
from evroute.sumo.record import record_traversals
from evroute.sumo.replay import probe_routes, record_day, sumo_net_file, write_probe_routes
from evroute.sumo.vehicle import SUMO_GRAVITY_MPS2
from studies.common.bench import machine_line


def edge_means(n: int, edge: np.ndarray, values: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """``(n,)`` mean of ``values`` per edge; ``fallback`` where an edge has no traversal."""
    counts = np.bincount(edge, minlength=n)
    sums = np.bincount(edge, weights=values, minlength=n)
    return np.where(counts > 0, sums / np.maximum(counts, 1), fallback)


def shape_excess_climb_m(lg) -> np.ndarray:  # noqa: ANN001 - LineGraph
    """``(E,)`` how far each edge's SUMO shape climbs and falls beyond its end-to-end rise: ``sum |dz| - |z_end -
    z_start|`` over the 3-D shape points (m); 0 for a monotone shape."""
    import sumolib

    net = sumolib.net.readNet(str(sumo_net_file(lg)))
    out = np.zeros(lg.n_nodes)
    for i, eid in enumerate(lg.network.edge_ids.tolist()):
        z = np.asarray(net.getEdge(eid).getShape3D(), dtype=np.float64)[:, 2]
        out[i] = np.abs(np.diff(z)).sum() - abs(z[-1] - z[0])
    return out


def step_check(lg, means: np.ndarray, k: int, vehicle: VehicleProfile, model: str) -> list[str]:  # noqa: ANN001
    """The ``k`` edges with the lowest mean reduced energy, driven by 3 probe trips each without other traffic,
    recorded at 1 s and 0.1 s steps: table rows of the count, share and minimum of reduced energies below 0."""
    worst = np.argsort(means)[:k]
    counts = np.full(lg.n_nodes, 3)
    counts[worst] = 0
    probes = probe_routes(lg, counts, 3, (0.0, 600.0), np.random.default_rng(0), "p")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        routes = write_probe_routes(Path(tmp) / "p.rou.xml", probes)
        for step in (1.0, 0.1):
            tr = record_traversals(sumo_net_file(lg), [routes], vehicle=vehicle, model=model, step_length=step)
            tr = tr[tr["edge"].isin(set(lg.network.edge_ids[worst].tolist()))]
            red = tr["reduced_wh"].to_numpy()
            nan = int((~np.isfinite(red)).sum())
            red = red[np.isfinite(red)]
            rows.append(
                f"| {lg.network.name} | {model} | {step:g} s | {len(red)} | {nan} | {(red < 0).sum()} "
                f"| {100 * (red < 0).mean():.0f} % | {red.min():.2f} | {np.median(red):.2f} |"
            )
    return rows


def check(network: str, model: str, args: argparse.Namespace) -> dict[str, object]:
    lg = load_linegraph(network, args.data_dir)
    v = VehicleProfile()
    cfg = SumoReplayConfig(
        peak_per_hour=args.peak,
        hours=args.hours,
        min_samples=args.min_samples,
        max_probe_rounds=args.probe_rounds,
        model=model,
    )
    data, meta = record_day(lg, cfg.day_spec(), vehicle=v)
    n = lg.n_nodes
    finite = np.isfinite(data["reduced_wh"].to_numpy())
    nan_count = int((~finite).sum())
    data = data[finite]
    edge = data["edge"].to_numpy()
    red = data["reduced_wh"].to_numpy()
    neg = red[red < 0]
    bumpy = shape_excess_climb_m(lg)[edge] > 1.0
    has = np.bincount(edge, minlength=n) > 0
    elev = elevation_potential_wh(lg.network, v)
    before = edge_means(n, edge, data["energy_wh"].to_numpy(), network_energy_wh(lg.network, v)) - elev
    after = edge_means(n, edge, red, reduced_prior_wh(lg.network, v))
    env = SumoReplayEnvironment(
        lg,
        reduced_prior_wh(lg.network, v),
        edge,
        red,
        cfg.outputscale_frac**2 * float(network_energy_wh(lg.network, v).var()),
        cfg,
        full_potential_wh(lg.network, v, SUMO_GRAVITY_MPS2),
        meta,
        data["entry_s"].to_numpy(),
    )
    route = resolve_route(lg, network, "A", None, None)
    opt = env.optimal_route(route.start, route.goal)
    q = np.quantile(neg, [0.0, 0.01, 0.5, 0.99]) if len(neg) else np.zeros(4)
    return {
        "network": network,
        "model": model,
        "traversals": len(red),
        "nan": nan_count,
        "bumpy_share_all": float(bumpy.mean()),
        "bumpy_share_neg_wh": float(neg[bumpy[red < 0]].sum() / neg.sum()) if len(neg) else 0.0,
        "probe_traversals": int(data["probe"].sum()),
        "negative": len(neg),
        "share": len(neg) / max(len(red), 1),
        "neg_q": q,
        "neg_sum_wh": float(neg.sum()),
        "kinetic_abs_p50": float(np.median(np.abs(data["kinetic_wh"].to_numpy()))),
        "edges_with_data": int(has.sum()),
        "neg_edges_before": int((before[has] < 0).sum()),
        "neg_edges_after": int((after[has] < 0).sum()),
        "cycle_before": has_negative_cycle(lg, before, 0),
        "cycle_after": has_negative_cycle(lg, after, 0),
        "cycle_env": bool(env.describe()["negative_cycle_reachable"]),
        "optimum": f"{opt.method}, {len(opt.edges)} edges, {opt.cost:.1f} Wh reduced, "
        f"{env.route_energy_wh(opt.edges):.1f} Wh battery",
        "step_rows": step_check(lg, after, args.worst, v, model) if args.worst else [],
    }


def _yes(flag: object) -> str:
    return "yes" if flag else "no"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", nargs="+", default=["monaco"])
    ap.add_argument("--models", nargs="+", default=["Energy", "MMPEVEM"])
    ap.add_argument("--hours", default="8-9")
    ap.add_argument("--peak", type=float, default=300.0)
    ap.add_argument("--min-samples", type=int, default=3)
    ap.add_argument("--probe-rounds", type=int, default=1)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--worst", type=int, default=20, help="edges of the step-length check (0: none)")
    ap.add_argument("--out", default="docs/results/archive/sumo_kinetic.md")
    args = ap.parse_args()
    rows = [check(net, model, args) for net in args.networks for model in args.models]
    cmd = (
        "nice -n 10 .venv/bin/python -m studies.sumo.sumo_kinetic_check --networks "
        + " ".join(args.networks)
        + f" --models {' '.join(args.models)} --hours {args.hours} --peak {args.peak:g}"
        + f" --min-samples {args.min_samples} --probe-rounds {args.probe_rounds} --worst {args.worst}"
    )
    lines = [
        "# Kinetic and potential energy taken out of SUMO's traversals: reduced energy >= 0?",
        "",
        f"Command: `{cmd}` (EVROUTE_DATA holding the OSM files; recorded days cached under EVROUTE_CACHE).",
        "",
        f"Machine: {machine_line()}",
        "",
        "Reduced energy of a traversal = battery energy - 1/2 m_eff (v_exit^2 - v_entry^2) - m g dz "
        "(`evroute/sumo/record.py`). Quantiles are of the traversals below 0 only. *Before*: edge mean of the "
        "battery energy minus the elevation potential m g eta- dz (the replay's reduced cost until attribution "
        "version 3); *after*: edge mean of the reduced energy, not clipped. Edges: those with traversals. "
        "Cycles: a negative cycle reachable in the line graph's largest SCC (edges without traversals take the "
        "prior of the same kind). Optimum: route A in `sumo-replay` (reduced energies clipped at 0). NaN energy: "
        "traversals SUMO reported no finite energy for (left out everywhere). Bumpy edges: SUMO lane shapes that "
        "climb and fall more than 1 m beyond their end-to-end rise; the columns give their share of all traversals "
        "and of the Wh below 0.",
        "",
        "| network | model | traversals (probe) | NaN energy | < 0 | share | min / q01 / median / q99 of those < 0 "
        "(Wh) | sum < 0 (Wh) | on bumpy edges: traversals / Wh < 0 | median abs kinetic (Wh) | edges "
        "| neg. mean before | after | neg. cycle before | after | route A optimum |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        q = r["neg_q"]
        lines.append(
            f"| {r['network']} | {r['model']} | {r['traversals']} ({r['probe_traversals']}) | {r['nan']} "
            f"| {r['negative']} | {100 * r['share']:.2f} % | {q[0]:.2f} / {q[1]:.2f} / {q[2]:.2f} / {q[3]:.3f} "
            f"| {r['neg_sum_wh']:.1f} | {100 * r['bumpy_share_all']:.0f} % / {100 * r['bumpy_share_neg_wh']:.0f} % "
            f"| {r['kinetic_abs_p50']:.2f} | {r['edges_with_data']} | {r['neg_edges_before']} "
            f"| {r['neg_edges_after']} | {_yes(r['cycle_before'])} | {_yes(r['cycle_after'])} "
            f"| {r['optimum']} |"
        )
    if args.worst:
        lines += [
            "",
            f"Step length: the {args.worst} edges with the lowest mean reduced energy (before clipping) of each day, "
            "driven by 3 probe trips each `[predecessor, edge, successor]` without other traffic, recorded at 1 s "
            "and at 0.1 s steps (traversals of those edges only).",
            "",
            "| network | model | step | traversals | NaN energy | < 0 | share | min (Wh) | median (Wh) |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [row for r in rows for row in r["step_rows"]]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
