"""Does the replay predict the live simulation?  The same learner in ``sumo-live`` and ``sumo-replay`` (same scenario).

Two subcommands:

``run``: one (environment, model, policy) over seeds, through the same path as ``evroute run`` (ExperimentConfig ->
build_problem -> make_bandit), logging every round's record and every driven edge's observation (and, live, the
trip's departure time, wall time and failures).  One folder per configuration, one file pair per seed, written
when the seed completes (a killed run redoes only the unfinished seed)::

    python -m studies.sumo.sumo_live_agreement run --env sumo-live --model bi --policy ts --seeds 0-2 --horizon 200 \
        --out results/sumo_live

``routes``: drives, live, the regret reference route and every seed's last route at ``--slots`` clock times::

    python -m studies.sumo.sumo_live_agreement routes --out results/sumo_live --slots 20

``report``: per-edge mean energy observed live vs the replay mean of the edge (bias, R^2, scatter), the same per
observation (where a live observation falls among the edge's recorded traversals), route energy per round live vs
the replay's expectation, and cumulative regret curves side by side (mean +- s.e. over seeds)::

    python -m studies.sumo.sumo_live_agreement report --out results/sumo_live --doc docs/results/sumo_live_table.md \
        --fig docs/results/sumo_live.png
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from evroute.stats import format_mean_se, mean_se, mean_se_along

NETWORK, ROUTE = "monaco", "A"


def _seeds(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def _folder(out: Path, env: str, model: str, policy: str) -> Path:
    return out / f"{env}_{model}-{policy}"


def run(args: argparse.Namespace) -> None:
    from evroute.experiments.config import ExperimentConfig
    from evroute.experiments.runner import build_problem, make_bandit, validate

    env_params = {"rounds_per_day": args.rounds_per_day}
    cfg = ExperimentConfig(
        network=NETWORK,
        route=ROUTE,
        model=args.model,
        policy=args.policy,
        env=args.env,
        environment=env_params,
        horizon=args.horizon,
        seeds=_seeds(args.seeds),
    )
    validate(cfg)
    folder = _folder(Path(args.out), args.env, args.model, args.policy)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg.to_dict(), indent=1, sort_keys=True))
    for seed in cfg.seeds:
        done = folder / f"seed_{seed}_rounds.csv"
        if done.exists():
            continue
        problem = build_problem(cfg, seed)
        bandit = make_bandit(cfg, problem, seed)
        env = problem.env
        obs: list[tuple[int, int, float]] = []
        trips: list[dict[str, object]] = []
        inner = env.observe

        def logged(
            edges: np.ndarray, rng: np.random.Generator, _inner=inner, _env=env, _obs=obs, _trips=trips
        ) -> np.ndarray:  # noqa: ANN001
            y = _inner(edges, rng)
            t = len(_trips) + 1
            _obs.extend((t, int(e), float(v)) for e, v in zip(edges, y, strict=True))
            trip = getattr(_env, "last_trip", None)
            _trips.append(
                {
                    "round": t,
                    "depart_s": getattr(trip, "depart_s", np.nan),
                    "wall_s": getattr(trip, "wall_s", np.nan),
                    "steps": getattr(trip, "steps", 0),
                    "failed_trips": getattr(_env, "failed_trips", 0),
                }
            )
            return y

        env.observe = logged  # type: ignore[method-assign]
        t0 = time.perf_counter()
        try:
            records = [bandit.step().to_dict() for _ in range(cfg.horizon)]
        finally:
            env.observe = inner  # type: ignore[method-assign]
        rounds = pd.DataFrame(records).merge(pd.DataFrame(trips), on="round")
        pd.DataFrame(obs, columns=["round", "edge", "observed_wh"]).to_csv(
            folder / f"seed_{seed}_edges.csv", index=False
        )
        tmp = done.with_suffix(".tmp")
        rounds.to_csv(tmp, index=False)
        os.replace(tmp, done)
        print(
            f"{folder.name} seed {seed}: {cfg.horizon} rounds in {time.perf_counter() - t0:.0f} s, "
            f"final cumulative regret {rounds['cumulative_regret_wh'].iloc[-1]:.1f} Wh",
            flush=True,
        )


def routes(args: argparse.Namespace) -> None:
    """Drive, live, the regret reference route and each seed's last route at ``--slots`` clock times (speed factor
    1): which is cheaper in the live world?  Writes ``OUT/routes_live.csv``."""
    from evroute.experiments.config import ExperimentConfig
    from evroute.experiments.runner import build_problem, make_bandit

    out = Path(args.out)
    cfg0 = json.loads(next(out.glob("sumo-live_*/config.json")).read_text())
    cfg = ExperimentConfig(**{**cfg0, "seeds": [0]})
    problem = build_problem(cfg, 0)
    env = problem.env
    ids = problem.linegraph.network.edge_ids.tolist()
    index = {e: i for i, e in enumerate(ids)}
    ref = make_bandit(cfg, problem, 0).optimal.edges
    named: dict[tuple[int, ...], list[str]] = {
        tuple(int(e) for e in ref): ["regret reference (best route known to the oracle)"]
    }
    cheapest: tuple[float, str] = (np.inf, "")
    for folder in sorted(out.glob("sumo-*_*")):
        for f in sorted(folder.glob("seed_*_rounds.csv")):
            r = pd.read_csv(f)
            last = tuple(index[e] for e in r["route"].iloc[-1].split())
            named.setdefault(last, []).append(f"{folder.name} seed {f.name.split('_')[1]}")
            i = int(r["expected_wh"].idxmin())
            cheapest = min(cheapest, (float(r["expected_wh"].iloc[i]), str(r["route"].iloc[i])))
    best = tuple(index[e] for e in cheapest[1].split())
    named.setdefault(best, []).insert(0, "cheapest route any run drove (replay means)")
    cands = {"; ".join(v): np.array(k) for k, v in named.items()}
    slots = np.linspace(0, int(cfg.environment["rounds_per_day"]) - 1, args.slots).astype(int)
    rows = []
    for label, edges in cands.items():
        pred, succ = env.sim.end_edges(ids[edges[0]], ids[edges[-1]])
        driven = [pred, *[ids[e] for e in edges], succ]
        for k in slots:
            trip = env.sim.drive(driven, int(k), speed_factor=1.0)
            rows.append(
                {
                    "route": label,
                    "edges": " ".join(driven[1:-1]),
                    "slot": int(k),
                    "ok": trip.ok,
                    "live_wh": float(np.sum(trip.route_reduced_wh)),  # reduced, like the replay means
                    "replay_wh": float(env.expected_energy(edges)),
                }
            )
        print(label, np.mean([r["live_wh"] for r in rows if r["route"] == label]), flush=True)
    pd.DataFrame(rows).to_csv(out / "routes_live.csv", index=False)


def _load(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    rounds, edges = [], []
    for f in sorted(folder.glob("seed_*_rounds.csv")):
        seed = int(f.name.split("_")[1])
        r = pd.read_csv(f).assign(seed=seed)
        # as `evroute run` does (evroute.bandit.rebase_regret): a reference that is not exact is lowered to the
        # cheapest route the run drove (an exact optimum never is); regret recomputed against it
        ref = min(float(r["optimal_wh"].iloc[0]), float(r["expected_wh"].min()))
        r["optimal_wh"] = ref
        r["regret_wh"] = r["expected_wh"] - ref
        r["cumulative_regret_wh"] = r["regret_wh"].cumsum()
        rounds.append(r)
        edges.append(pd.read_csv(folder / f"seed_{seed}_edges.csv").assign(seed=seed))
    if not rounds:
        return pd.DataFrame(), pd.DataFrame()
    return pd.concat(rounds, ignore_index=True), pd.concat(edges, ignore_index=True)


def _r2(y: np.ndarray, pred: np.ndarray) -> float:
    ss = float(((y - y.mean()) ** 2).sum())
    return float("nan") if ss == 0 else 1.0 - float(((y - pred) ** 2).sum()) / ss


def report(args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from evroute.environments import make_environment
    from evroute.experiments.runner import load_linegraph

    out = Path(args.out)
    lg = load_linegraph(NETWORK)
    configs = sorted({p.name.split("_", 1)[1] for p in out.glob("sumo-live_*") if any(p.glob("seed_*_rounds.csv"))})
    unfinished = sorted({p.name.split("_", 1)[1] for p in out.glob("sumo-*_*") if p.is_dir()} - set(configs))
    cfg0 = json.loads(next(out.glob("sumo-live_*/config.json")).read_text())
    replay = make_environment(lg, "sumo-replay", cfg0["environment"])
    ids = lg.network.edge_ids
    lines = [
        f"Generated by `python -m studies.sumo.sumo_live_agreement report --out {args.out} --doc {args.doc} "
        f"--fig {args.fig}`.",
        "",
    ]
    if unfinished:
        lines += [f"No live seed finished for: {', '.join(unfinished)}.", ""]
    fig, axes = plt.subplots(len(configs), 3, figsize=(15, 4.2 * len(configs)), squeeze=False)
    for row, name in enumerate(configs):
        live_r, live_e = _load(out / f"sumo-live_{name}")
        rep_r, _ = _load(out / f"sumo-replay_{name}")
        seeds = sorted(set(live_r["seed"]))
        lines += [
            f"## {name.upper()} on Monaco A: {len(seeds)} live seeds ({seeds}), "
            f"{len(set(rep_r['seed'])) if len(rep_r) else 0} replay seeds, T = {int(live_r['round'].max())}",
            "",
        ]
        # per-edge: mean of the live observations vs the replay mean
        g = live_e.groupby("edge")["observed_wh"].agg(["mean", "count"])
        rep_mean = replay.true_mean_wh[g.index.to_numpy()]
        d = g["mean"].to_numpy() - rep_mean
        w = g["count"].to_numpy()
        many = w >= 5
        # per observation: where it falls among the edge's recorded traversals (0..1; uniform if replay = live)
        pit = np.array(
            [
                np.mean(replay.samples_wh[replay.offsets[e] : replay.offsets[e + 1]] <= y)
                for e, y in zip(live_e["edge"].to_numpy(), live_e["observed_wh"].to_numpy(), strict=True)
            ]
        )
        y_obs = live_e["observed_wh"].to_numpy()
        mu_obs = replay.true_mean_wh[live_e["edge"].to_numpy()]
        route_pred = live_r["expected_wh"].to_numpy()
        route_obs = live_r["observed_wh"].to_numpy()
        lines += [
            "| comparison | n | bias live - replay (Wh) | mean abs diff (Wh) | R^2 of replay mean | corr |",
            "|---|---|---|---|---|---|",
        ]

        def row_of(label: str, y: np.ndarray, p: np.ndarray) -> str:
            return (
                f"| {label} | {len(y)} | {np.mean(y - p):+.2f} | {np.mean(np.abs(y - p)):.2f} | "
                f"{_r2(y, p):.3f} | {np.corrcoef(y, p)[0, 1]:.3f} |"
            )

        lines.append(row_of("edge means (all driven edges)", g["mean"].to_numpy(), rep_mean))
        lines.append(row_of("edge means (edges driven >= 5 times)", g["mean"].to_numpy()[many], rep_mean[many]))
        busy = replay.counts[g.index.to_numpy()] >= 100
        for label, sel in (
            ("edge means (replay >= 100 traversals)", busy),
            ("edge means (replay < 100 traversals)", ~busy),
        ):
            if sel.sum() >= 3:
                lines.append(row_of(label, g["mean"].to_numpy()[sel], rep_mean[sel]))
        lines.append(row_of("single observations", y_obs, mu_obs))
        lines.append(row_of("route energy per round", route_obs, route_pred))
        lines += [
            "",
            f"Live observations among the edge's recorded traversals (quantile; 0.5 and a uniform spread "
            f"if replay and live agree): mean {pit.mean():.3f}, share below the 10 % quantile "
            f"{np.mean(pit < 0.1):.3f}, above the 90 % quantile {np.mean(pit > 0.9):.3f}.",
            "",
        ]
        top = np.argsort(-np.abs(d) * np.sqrt(w))[:8]
        lines += [
            "Edges with the largest live - replay difference (weighted by sqrt(drives)):",
            "",
            "| edge | length (m) | drives | live mean (Wh) | replay mean (Wh) | replay traversals | Eq. 8 (Wh) |",
            "|---|---|---|---|---|---|---|",
        ]
        for i in top:
            e = int(g.index[i])
            lines.append(
                f"| {ids[e]} | {lg.network.length_m[e]:.0f} | {int(w[i])} | {g['mean'].iloc[i]:.1f} | "
                f"{rep_mean[i]:.1f} | {int(replay.counts[e])} | {replay.prior_mean_wh[e]:.1f} |"
            )
        # turn dependence: one edge, driven live into different next edges
        nxt = live_e.sort_values(["seed", "round"], kind="stable").copy()
        nxt["next"] = nxt.groupby(["seed", "round"])["edge"].shift(-1)
        by = nxt.dropna(subset=["next"]).groupby(["edge", "next"])["observed_wh"].agg(["mean", "std", "count"])
        by = by[by["count"] >= 5].reset_index()
        multi = by.groupby("edge").filter(lambda x: len(x) >= 2)
        if len(multi):
            multi = multi.assign(spread=multi.groupby("edge")["mean"].transform(lambda m: m.max() - m.min()))
            multi = multi.sort_values(["spread", "edge", "mean"], ascending=[False, True, True]).head(12)
            lines += [
                "",
                "Turn dependence: edges driven live (>= 5 times each) into different next edges:",
                "",
                "| edge | next edge | drives | live mean (Wh) | live s.d. (Wh) | replay mean (Wh) |",
                "|---|---|---|---|---|---|",
            ]
            for _, x in multi.iterrows():
                e, n = int(x["edge"]), int(x["next"])
                lines.append(
                    f"| {ids[e]} | {ids[n]} | {int(x['count'])} | {x['mean']:.1f} | {x['std']:.1f} | "
                    f"{replay.true_mean_wh[e]:.1f} |"
                )
        else:
            lines += ["", "No edge was driven live (>= 5 times each) into two different next edges.", ""]
        # regret side by side
        lines += [
            "",
            "| environment | seeds | cumulative regret at T (Wh), mean +- s.e. | last-50-round mean regret "
            "(Wh) | live wall s per round (median) | failed trips |",
            "|---|---|---|---|---|---|",
        ]
        for label, r in (("sumo-live", live_r), ("sumo-replay", rep_r)):
            if r.empty:
                continue
            T = int(r["round"].max())
            fin = r[r["round"] == T]["cumulative_regret_wh"].to_numpy()
            late = r[r["round"] > T - 50]["regret_wh"].mean()
            wall = np.nanmedian(r["wall_s"]) if label == "sumo-live" else float("nan")
            failed = int(r.groupby("seed")["failed_trips"].max().sum()) if label == "sumo-live" else 0
            lines.append(
                f"| {label} | {len(fin)} | {format_mean_se(*mean_se(fin))} | {late:.2f} | "
                f"{'' if np.isnan(wall) else f'{wall:.2f}'} | {failed if label == 'sumo-live' else ''} |"
            )
        lines.append("")
        ax = axes[row, 0]
        ax.errorbar(rep_mean, g["mean"], fmt=".", ms=3, alpha=0.6)
        lo, hi = min(rep_mean.min(), g["mean"].min()), max(rep_mean.max(), g["mean"].max())
        ax.plot([lo, hi], [lo, hi], "k--", lw=1)
        ax.set(xlabel="replay mean of edge (Wh)", ylabel="live mean of edge (Wh)", title=f"{name}: per-edge means")
        ax = axes[row, 1]
        ax.hist(pit, bins=20, range=(0, 1))
        ax.set(
            xlabel="quantile of live obs. among replay traversals", ylabel="observations", title=f"{name}: calibration"
        )
        ax = axes[row, 2]
        for label, r in (("sumo-live", live_r), ("sumo-replay", rep_r)):
            if r.empty:
                continue
            c = r.pivot(index="round", columns="seed", values="cumulative_regret_wh")
            m, s, _ = mean_se_along(c.to_numpy(), axis=1)  # no band for one seed (NaN s.e.)
            ax.plot(c.index, m, label=label)
            ax.fill_between(c.index, m - s, m + s, alpha=0.25)
        ax.set(xlabel="round", ylabel="cumulative regret vs replay means (Wh)", title=f"{name}: regret")
        ax.legend()
    rl = out / "routes_live.csv"
    if rl.exists():
        d = pd.read_csv(rl)
        lines += [
            "## The routes in the live world",
            "",
            f"Each route driven live (speed factor 1) at {d['slot'].nunique()} clock times spread over the day "
            f"(`python -m studies.sumo.sumo_live_agreement routes --out {args.out} --slots {d['slot'].nunique()}`); "
            "failed trips excluded.",
            "",
            "| route (or: last route of these runs) | edges | trips ok | live energy (Wh), mean +- s.e. | "
            "live - reference route, paired by clock time (Wh), mean +- s.e. | replay expected energy (Wh) |",
            "|---|---|---|---|---|---|",
        ]
        ref_label = d["route"].iloc[0]  # the regret reference is driven first
        ref_live = d[d["route"] == ref_label].set_index("slot")["live_wh"]
        for label, x in d.groupby("route", sort=False):
            ok = x[x["ok"]]
            diff = (ok.set_index("slot")["live_wh"] - ref_live).dropna()
            paired = "0" if label == ref_label else format_mean_se(*mean_se(diff), signed=True)
            lines.append(
                f"| {label} | {len(x['edges'].iloc[0].split())} | {len(ok)}/{len(x)} | "
                f"{format_mean_se(*mean_se(ok['live_wh']))} | {paired} | "
                f"{x['replay_wh'].iloc[0]:.1f} |"
            )
        lines.append("")
    fig.tight_layout()
    fig.savefig(args.fig, dpi=110)
    Path(args.doc).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--env", choices=["sumo-live", "sumo-replay"], required=True)
    r.add_argument("--model", default="bi")
    r.add_argument("--policy", default="ts")
    r.add_argument("--seeds", default="0-2")
    r.add_argument("--horizon", type=int, default=200)
    r.add_argument("--rounds-per-day", type=int, default=200, help="the clock sweeps 24 h every this many rounds")
    r.add_argument("--out", default="results/sumo_live")
    d = sub.add_parser("routes")
    d.add_argument("--out", default="results/sumo_live")
    d.add_argument("--slots", type=int, default=20)
    q = sub.add_parser("report")
    q.add_argument("--out", default="results/sumo_live")
    q.add_argument("--doc", default="docs/results/sumo_live_table.md")
    q.add_argument("--fig", default="docs/results/sumo_live.png")
    a = p.parse_args()
    {"run": run, "routes": routes, "report": report}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
