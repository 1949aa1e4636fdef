"""Bandit study on SUMO energy: route learners in the ``sumo-replay`` environment (resumable).

Runs ``evroute run --env sumo-replay`` for every (network, route, model, policy, arms) asked, into
``RUNS/<network>-<route>/<model>-<policy>[-turn]``, then saves every completed seed's final cumulative regret to
``--data`` (CSV, one row per run and seed) and the study's set-up (command, recorded day, regret reference and its
negative-cycle check) to ``--meta`` (JSON), and writes the report ``--out`` from these two files alone:

    nice -n 10 .venv/bin/python scripts/sumo/sumo_bandit_study.py --networks monaco --routes A --models bi gp-exact \\
        --policies ts bucb --arms edge turn --seeds 10 --horizon 500 --env-param probe_turns=true --seed-major

``--arms edge turn`` runs every method with edge and with turn arms (:mod:`evroute.arms`; folders and labels of turn
arms end in ``-turn`` / ``-TURN``) and scores every run's driven routes by the turn truth too (one yardstick for both
kinds of arm), giving paired differences turn - edge per method; models after the first are compared with the first
under the same policy and arms (e.g. ``GP-EXACT-TS - BI-TS``).  ``--tables-only`` rewrites data and report from the
seeds completed so far; ``--report-only`` rebuilds the report from ``--data`` and ``--meta`` alone (no runs, no
recorded day; tests/test_results_rebuild.py).
"""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evroute.experiments import ExperimentConfig, run_experiment
from evroute.experiments.output import output_lock
from evroute.experiments.runner import prepare_output, run_seed
from evroute.experiments.sumo_bandit import merge_rows, rerun_lines
from evroute.io import atomic_write_text
from evroute.stats import format_mean_se, mean_se, paired_differences

#: Columns of the per-seed data file (``--data``); regrets in Wh, cumulative over the horizon.
COLUMNS = [
    "network",
    "route",
    "label",
    "model",
    "policy",
    "arms",
    "seed",
    "final_regret_wh",
    "final_regret_turn_truth_wh",
    "reference_wh",
    "reference_exact",
    "cpu_s",
]


def _value(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _seed_summaries(folder: Path) -> dict[int, dict[str, Any]]:
    """The summaries of the seeds of ``folder`` that have completed (``seed_<k>/summary.json``)."""
    return {int(p.parent.name.split("_")[1]): json.loads(p.read_text()) for p in folder.glob("seed_*/summary.json")}


def turn_truth_finals(folders: dict[str, Path], cfg: ExperimentConfig) -> dict[str, dict[int, float]]:
    """Final cumulative regret of every run with its driven routes scored by the TURN truth (the sum of the routes'
    turn-arm means, :meth:`~evroute.environments.EnergyEnvironment.arm_truth`) against the turn-arm optimum: one
    yardstick for edge-arm and turn-arm runs (an edge-arm run's own regret is against the edge means)."""
    from evroute.arms import make_arms
    from evroute.experiments.runner import build_problem

    problem = build_problem(cfg, 0)
    env, lg = problem.env, problem.linegraph
    arms = make_arms(lg, "turn")
    truth = env.arm_truth(arms)
    best = env.optimal_route_arms(arms, problem.route.start, problem.route.goal).cost
    out: dict[str, dict[int, float]] = {}
    for label, folder in folders.items():
        out[label] = {}
        for sd in _seed_summaries(folder):
            routes = pd.read_csv(folder / f"seed_{sd}" / "rounds.csv")["route"]
            costs = [arms.route_cost(truth, np.array([lg.network.index_of(e) for e in r.split()])) for r in routes]
            out[label][sd] = float(np.sum(costs) - best * len(costs))
    return out


def collect_rows(network: str, route: str, cfgs: dict[str, tuple[ExperimentConfig, Path]]) -> list[dict[str, Any]]:
    """One row (:data:`COLUMNS`) per completed seed of every run of one route."""
    folders = {lab: out for lab, (_, out) in cfgs.items() if list(out.glob("seed_*/summary.json"))}
    if not folders:
        return []
    cfg0 = next(iter(cfgs.values()))[0]
    turn = turn_truth_finals(folders, cfg0)
    rows = []
    for lab, folder in folders.items():
        cfg = cfgs[lab][0]
        for sd, s in sorted(_seed_summaries(folder).items()):
            if sd not in turn[lab]:  # completed while the turn truth was being scored: next time
                continue
            ref = s["regret_reference"]
            rows.append(
                {
                    "network": network,
                    "route": route,
                    "label": lab,
                    "model": cfg.model,
                    "policy": cfg.policy,
                    "arms": cfg.arms,
                    "seed": sd,
                    "final_regret_wh": round(float(s["final_cumulative_regret_wh"]), 3),
                    "final_regret_turn_truth_wh": round(turn[lab][sd], 3),
                    "reference_wh": round(float(ref["wh"]), 3),
                    "reference_exact": bool(ref["exact"]),
                    "cpu_s": round(float(s["cpu_s_this_session"]) + float(s.get("setup_cpu_s_this_session", 0.0)), 2),
                }
            )
    return rows


def route_meta(cfg: ExperimentConfig) -> dict[str, Any]:
    """The recorded day and the regret reference of one route: optimum per kind of arm, and the negative-cycle check
    (no arm mean below 0 means no negative cycle: every route cost is a sum of non-negative means)."""
    from evroute.arms import make_arms
    from evroute.experiments.runner import build_problem

    problem = build_problem(cfg, 0)
    env, lg, r = problem.env, problem.linegraph, problem.route
    d = env.describe()
    day = d.get("day", {})
    out: dict[str, Any] = {
        "network_edges": int(lg.network.n_edges),
        "turns": int(lg.n_arcs),
        "start": r.start_id,
        "goal": r.goal_id,
        "traversals": int(np.sum(getattr(env, "counts"))),  # noqa: B009 (a SumoReplayEnvironment attribute)
        "probe_trips": int(day.get("probe_trips", 0)),
        "clipped_traversals": int(d["clipped_traversals"]),
        "record_cpu_s": round(float(day.get("record_cpu_s", float("nan"))), 1),  # recording the day (SUMO included)
        "record_wall_s": round(float(day.get("record_wall_s", float("nan"))), 1),
        "clipped_wh": round(float(d["clipped_wh"]), 3),
        "eq8_edges": len(d["eq8_edges"]),
        "negative_cycle_reachable": bool(d["negative_cycle_reachable"]),
        "arms": {},
    }
    turn_arms = make_arms(lg, "turn")
    edge_opt = env.optimal_route_arms(make_arms(lg, "edge"), r.start, r.goal)
    out["edge_optimum_turn_truth_wh"] = round(turn_arms.route_cost(env.arm_truth(turn_arms), edge_opt.edges), 3)
    for kind in ("edge", "turn"):
        arms = make_arms(lg, kind)
        truth = np.asarray(env.arm_truth(arms), dtype=np.float64)
        opt = env.optimal_route_arms(arms, r.start, r.goal)
        out["arms"][kind] = {
            "n": int(truth.size),
            "negative_means": int((truth < 0).sum()),
            "min_mean_wh": round(float(truth.min()), 4),
            "optimum_wh": round(float(opt.cost), 3),
            "method": str(getattr(opt, "method", "dijkstra")),
        }
    return out


def _ci(a: str, b: str, fa: dict[int, float], fb: dict[int, float]) -> tuple[str, str]:
    """Table cells and a generated sentence for the paired differences ``fa - fb`` of methods ``a`` and ``b``."""
    p = paired_differences(fa, fb)
    cell = (
        f"{format_mean_se(p.mean, p.se, signed=True)} | [{p.low:+.1f}, {p.high:+.1f}] | {p.k_lower} / {p.n}"
        if p.n >= 2
        else f"{p.mean:+.1f} | -- | {p.k_lower} / {p.n}"
    )
    if p.n < 2:
        sentence = f"{a} - {b}: one seed, no interval"
    elif p.high < 0:
        sentence = f"{a} has lower regret than {b}: the 95 % interval lies below 0 ({p.k_lower} of {p.n} seeds lower)"
    elif p.low > 0:
        sentence = f"{a} has higher regret than {b}: the 95 % interval lies above 0 ({p.k_lower} of {p.n} seeds lower)"
    else:
        sentence = f"{a} - {b} is not resolved: the 95 % interval contains 0 ({p.k_lower} of {p.n} seeds lower)"
    return cell, sentence


def _finals(df: pd.DataFrame, column: str) -> dict[str, dict[int, float]]:
    return {lab: dict(zip(g["seed"], g[column], strict=True)) for lab, g in df.groupby("label", sort=False)}


def report(df: pd.DataFrame, meta: dict[str, Any], data_name: str, meta_name: str) -> str:
    """The study's Markdown page from the per-seed data and the set-up alone (every sentence from the tables)."""
    T = int(meta["horizon"])
    lines = [
        "# Bandit study on SUMO energy (sumo-replay), exact regret reference: BI and exact GP, edge and turn arms",
        "",
        "Commands (raw runs under the ignored `results/`; the per-seed data and the set-up are committed, and "
        "`--report-only` rebuilds this page from them alone):",
        "",
        *(f"    {c}" for c in meta.get("commands", [meta["command"]])),
        "    python scripts/sumo/sumo_bandit_study.py --report-only --data docs/results/data/"
        f"{data_name} --meta docs/results/data/{meta_name} --extra-data docs/results/data --out "
        "docs/results/sumo_bandit.md",
        "",
        f"Data: per-seed final regrets [`data/{data_name}`](data/{data_name}), set-up and reference checks "
        f"[`data/{meta_name}`](data/{meta_name}).  Environment parameters: "
        + ", ".join(f"`{k}={json.dumps(v)}`" for k, v in meta["env_params"].items())
        + f"; T = {T} rounds; potential: none (the replay's energies are already reduced: battery energy minus the "
        "change of kinetic and potential energy, `docs/arms.md`).  "
        f"Machine: {meta['machine']}; run CPU time (all runs, set-up included) {df['cpu_s'].sum():.0f} s.",
        "",
        *rerun_lines(meta.get("rerun_check", {})),
    ]
    for (network, route), g in df.groupby(["network", "route"], sort=False):
        m = meta["routes"][f"{network}-{route}"]
        e, t = m["arms"]["edge"], m["arms"]["turn"]
        exact = bool(g["reference_exact"].all())
        lines += [
            f"## {network} {route} ({m['start']} -> {m['goal']})",
            "",
            f"Recorded day: {m['traversals']:,} traversals of the {m['network_edges']:,} edges, "
            f"{m['probe_trips']:,} probe trips; {m['eq8_edges']} edge(s) never traversed take Eq. 8's energy; "
            + (
                f"{m['clipped_traversals']:,} traversals had a reduced energy below 0 (together "
                f"{m['clipped_wh']:.1f} Wh) and enter the means clipped to 0 (`evroute/environments/sumo_replay.py`)."
                if m["clipped_traversals"]
                else "no traversal had a reduced energy below 0 (none clipped, `evroute/environments/sumo_replay.py`)."
            ),
            "",
            "Regret reference: "
            + (
                "exact in every run (Dijkstra on the mean reduced energies)"
                if exact
                else f"NOT exact in {int((~g['reference_exact']).sum())} run(s)"
            )
            + f".  Check: edge arms {e['negative_means']} of {e['n']:,} means below 0 (minimum {e['min_mean_wh']:.4f} "
            f"Wh), turn arms {t['negative_means']} of {t['n']:,} (minimum {t['min_mean_wh']:.4f} Wh); negative "
            f"cycle reachable: {'yes' if m['negative_cycle_reachable'] else 'no'}.  Optimum: {e['optimum_wh']:.1f} Wh "
            f"with edge means, {t['optimum_wh']:.1f} Wh with turn means; the edge-mean optimum costs "
            f"{m['edge_optimum_turn_truth_wh']:.1f} Wh under the turn means, "
            f"{m['edge_optimum_turn_truth_wh'] - t['optimum_wh']:.2f} Wh above the turn optimum (the regret per round, "
            "under the turn truth, of an edge-arm learner that has found its own optimum).",
            "",
            "Final cumulative regret (Wh, mean +- s.e. over seeds): against the run's own truth (edge arms: edge "
            "means; turn arms: turn means), and with the run's driven routes scored by the turn truth (one yardstick "
            "for both kinds of arm):",
            "",
            "| method | seeds | regret, own truth | per round | regret, turn truth | per round |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        own, turn = _finals(g, "final_regret_wh"), _finals(g, "final_regret_turn_truth_wh")
        for lab in own:
            mo, so = mean_se(list(own[lab].values()))
            mt, st = mean_se(list(turn[lab].values()))
            lines.append(
                f"| {lab} | {len(own[lab])} | {format_mean_se(mo, so)} | {mo / T:.2f} | {format_mean_se(mt, st)} | "
                f"{mt / T:.2f} |"
            )
        short = {lab: len(v) for lab, v in own.items() if len(v) < int(meta["seeds"])}
        absent = [lab for lab in m.get("methods", []) if lab not in own]
        if absent:
            lines += [
                "",
                "Asked but without a completed seed (not run before the study was stopped): " + ", ".join(absent) + ".",
            ]
        if short:  # a study stopped (seed-major) before every method had all its seeds
            lines += [
                "",
                f"Seeds completed below the {meta['seeds']} asked (the study was stopped there): "
                + ", ".join(f"{lab} {n}" for lab, n in short.items())
                + "; paired differences use the seeds both methods completed.",
            ]
        models = list(dict.fromkeys(g["model"]))
        pairs: list[tuple[str, str, str]] = []
        labels = set(own)
        for lab in own:  # GP - BI: same policy and arms, the first model as the base
            row = g[g["label"] == lab].iloc[0]
            if row["model"] != models[0]:
                base = lab.replace(str(row["model"]).upper(), str(models[0]).upper(), 1)
                if base in labels:
                    pairs.append((lab, base, "model"))
        pairs += [(lab, lab[: -len("-TURN")], "arms") for lab in own if lab.endswith("-TURN") and lab[:-5] in labels]
        lines += [
            "",
            "Paired per-seed differences of the final regret under the turn truth (Wh; negative: the first method "
            "has lower regret), with 95 % t-intervals:",
            "",
            "| difference | kind | mean +- s.e. | 95 % interval | seeds lower / seeds |",
            "|---|---|---:|---:|---:|",
        ]
        sentences = []
        for a, b, kind in pairs:
            cell, sentence = _ci(a, b, turn[a], turn[b])
            lines.append(f"| {a} - {b} | {kind} | {cell} |")
            sentences.append(f"- {sentence}.")
        lines += ["", "Generated from the table above (turn truth):", "", *sentences, ""]
        gp = [(a, b) for a, b, k in pairs if k == "model"]
        if gp:
            below = sum(paired_differences(turn[a], turn[b]).high < 0 for a, b in gp)
            above = sum(paired_differences(turn[a], turn[b]).low > 0 for a, b in gp)
            lines.append(
                f"Model: of {len(gp)} paired comparisons {', '.join(models[1:])} - {models[0]}, {below} resolve lower "
                f"regret, {above} higher regret, not resolved at 95 %: {len(gp) - below - above}."
            )
        arm_pairs = [(a, b) for a, b, k in pairs if k == "arms"]
        if arm_pairs:
            below = sum(paired_differences(turn[a], turn[b]).high < 0 for a, b in arm_pairs)
            above = sum(paired_differences(turn[a], turn[b]).low > 0 for a, b in arm_pairs)
            lines.append(
                f"Arms: of {len(arm_pairs)} paired comparisons turn - edge, {below} resolve lower regret with turn "
                f"arms, {above} higher regret, not resolved at 95 %: {len(arm_pairs) - below - above}."
            )
        lines.append("")
    return "\n".join(lines)


def _by_count(counts: dict[str, int]) -> str:
    """``"BI-TS, BI-UCB 10; GP-EXACT-TS 3"``: methods grouped by their number of seeds, most seeds first."""
    groups: dict[int, list[str]] = {}
    for lab, k in counts.items():
        groups.setdefault(k, []).append(lab)
    return "; ".join(f"{', '.join(labs)} {k}" for k, labs in sorted(groups.items(), reverse=True))


def partial_network_lines(
    df: pd.DataFrame, meta: dict[str, Any], timed: pd.DataFrame, timed_meta: dict[str, Any]
) -> list[str]:
    """The "not done" paragraph of the network timed in ``timed`` (one seed of its dearest methods,
    :func:`~evroute.experiments.sumo_bandit.read_timing`), once the study has rows of that network: per route, the
    seeds completed of the ``meta["seeds"]`` asked for every method of the complete networks (the other networks in
    ``df``), the CPU per seed measured on this network (``cpu_s``, mean over its completed seeds, both routes) and its
    ratio to the same methods' CPU per seed on the complete networks, and the CPU the missing seeds would cost: per
    seed the CPU measured here, else the timed run's, else the method's CPU per seed on the complete networks times
    the ratio of its model's methods that have a CPU per seed on this network (measured or timed; all methods
    measured here when its model has none).  Before any row of that network:
    :func:`~evroute.experiments.sumo_bandit.timing_lines`."""
    from evroute.experiments.sumo_bandit import TIMING, timing_lines

    net = str(timed["network"].iloc[0])
    seeds = int(meta["seeds"])
    here, ref = df[df["network"] == net], df[df["network"] != net]
    if here.empty or ref.empty:
        return timing_lines(timed, timed_meta, df, seeds)
    methods = list(dict.fromkeys([*ref["label"], *here["label"]]))
    routes = list(dict.fromkeys(ref["route"]))
    cpu = here.groupby("label")["cpu_s"].mean()
    cpu_ref = ref.groupby("label")["cpu_s"].mean()
    timed_cpu = timed.groupby("label", sort=False)["cpu_s"].mean()
    ran = list(dict.fromkeys(here["route"]))
    both = [lab for lab in methods if lab in cpu.index and lab in cpu_ref.index]
    ratio = float(cpu[both].sum() / cpu_ref[both].sum()) if both else float("nan")
    model_of = dict(zip(df["label"], df["model"], strict=False))
    lux = {**timed_cpu.to_dict(), **cpu.to_dict()}  # CPU per seed on this network: measured here, else timed
    factor: dict[str, float] = {}
    for model in dict.fromkeys(model_of.values()):
        labs = [lab for lab in lux if model_of.get(lab) == model and lab in cpu_ref.index]
        factor[model] = sum(lux[lab] for lab in labs) / float(cpu_ref[labs].sum()) if labs else ratio
    done, missing = [], []
    remaining, sources = 0.0, {"here": 0, "timed": 0, "scaled": 0}
    scaled: list[str] = []
    for route in routes:
        g = here[here["route"] == route]
        counts = {lab: int((g["label"] == lab).sum()) for lab in methods}
        done.append(f"{net} {route}: " + (_by_count({k: v for k, v in counts.items() if v}) or "none"))
        short = {lab: seeds - k for lab, k in counts.items() if k < seeds}
        missing.append(f"{net} {route}: " + (_by_count(short) if short else "none"))
        for lab, k in short.items():
            if lab in cpu.index:
                per, src = float(cpu[lab]), "here"
            elif lab in timed_cpu.index:
                per, src = float(timed_cpu[lab]), "timed"
            else:
                per, src = factor[model_of[lab]] * float(cpu_ref.get(lab, float("nan"))), "scaled"
                scaled.append(lab)
            remaining += k * per
            sources[src] += k
    per_seed = ", ".join(
        f"{lab} {cpu[lab]:.1f} s" + (f" ({cpu[lab] / cpu_ref[lab]:.1f}x)" if lab in cpu_ref.index else "")
        for lab in methods
        if lab in cpu.index
    )
    m = meta["routes"].get(f"{net}-{routes[0]}", timed_meta["routes"][next(iter(timed_meta["routes"]))])
    cells = ", ".join(f"{lab} {timed_cpu[lab]:.0f} CPU s" for lab in timed_cpu.index)
    stopped = [lab for lab in timed_meta["routes"][next(iter(timed_meta["routes"]))].get("methods", [])]
    stopped = [lab for lab in stopped if lab not in timed_cpu.index]
    others = sorted(set(ref["network"]))
    return [
        f"**{net} A/B: partly done.** Seeds completed (T = {int(meta['horizon'])}, the environment parameters above, "
        f"the commands at the top; the section(s) {' and '.join(f'{net} {r}' for r in ran)} above) of the {seeds} "
        f"asked: {'; '.join(done)}.  CPU per seed measured here (the data's `cpu_s`, defined as for "
        f"{', '.join(others)}: the seed's CPU, not the process's one-off loading of network and recorded day; mean "
        "over the completed seeds of both routes; in brackets the ratio to the same "
        f"method's CPU per seed on {', '.join(others)}): {per_seed}; together {ratio:.1f} times their CPU per seed "
        f"on {', '.join(others)}.",
        "",
        f"**Not done: {net}** (seeds missing of the {seeds}): {'; '.join(missing)}.  "
        + (
            f"They would cost about {remaining / 60:.0f} CPU-minutes: "
            + ", ".join(
                part
                for part in (
                    f"{sources['here']} seed-runs at the CPU per seed measured here" if sources["here"] else "",
                    f"{sources['timed']} at that of the one seed timed (below)" if sources["timed"] else "",
                    f"{sources['scaled']} ({', '.join(dict.fromkeys(scaled))}) at their CPU per seed on "
                    f"{', '.join(others)} times the ratio of their model's methods with a CPU per seed on {net} ("
                    + ", ".join(f"{mod} {factor[mod]:.1f}x" for mod in dict.fromkeys(model_of[lab] for lab in scaled))
                    + ")"
                    if sources["scaled"]
                    else "",
                )
                if part
            )
            + ".  "
            if remaining
            else ""
        )
        + f"One seed timed on {net} {timed['route'].iloc[0]} before this study (`{timed_meta['command']}`; "
        f"data [`data/{TIMING}.csv`](data/{TIMING}.csv), [`data/{TIMING}.json`](data/{TIMING}.json)): {cells}"
        + (f"; asked there but stopped before completing a seed: {', '.join(stopped)}" if stopped else "")
        + f".  Recording the day once (SUMO, {m['probe_trips']:,} probe trips, {m['traversals']:,} traversals) cost "
        f"{m['record_cpu_s']:.0f} CPU s ({m['record_wall_s']:.0f} s wall).  The final routes of the {net} runs are not "
        "driven live.",
        "",
    ]


def _machine() -> str:
    import os
    import platform

    return f"{platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} when written"


def reference_data(commit: str, data: str) -> pd.DataFrame:
    """``data`` (a path in the repository) as committed at ``commit`` (``git show``); exit 2 if there is none."""
    import io
    import subprocess

    out = subprocess.run(["git", "show", f"{commit}:{data}"], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        print(f"evroute: error: --check-against {commit}: no {data} at that commit", file=sys.stderr)
        raise SystemExit(2)
    return pd.read_csv(io.StringIO(out.stdout))


def write_data(
    rows: list[dict[str, Any]], meta: dict[str, Any], data: Path, meta_path: Path, *, check: dict[str, Any] | None
) -> None:
    """Merge ``rows`` into ``data`` (:func:`merge_rows`) and ``meta`` into ``meta_path`` (routes and commands of an
    earlier invocation kept); ``check`` (the rows against the data at a commit, :func:`reference_check`) is recorded
    under ``rerun_check`` for this command."""
    data.parent.mkdir(parents=True, exist_ok=True)
    new = pd.DataFrame(rows, columns=COLUMNS)
    if data.is_file() and meta_path.is_file():
        df, _ = merge_rows(pd.read_csv(data), new)
        old = json.loads(meta_path.read_text())
        checks = {**old.get("rerun_check", {}), **({meta["command"]: check} if check and check["compared"] else {})}
        commands = list(dict.fromkeys([*old.get("commands", [old["command"]]), meta["command"]]))
        routes = dict(old["routes"])
        for key, r in meta["routes"].items():  # a route run by several invocations: every method asked is kept
            asked = [*routes.get(key, {}).get("methods", []), *r.get("methods", [])]
            routes[key] = {**routes.get(key, {}), **r, "methods": list(dict.fromkeys(asked))}
        meta = {**old, **meta, "routes": routes, "commands": commands}
        meta["command"], meta["rerun_check"] = commands[0], checks
    else:
        df = new
    atomic_write_text(data, df.to_csv(index=False, lineterminator="\n"))
    atomic_write_text(meta_path, json.dumps(meta, indent=1, sort_keys=True) + "\n")


def report_from_files(data: Path, meta_path: Path, out: Path, extra: Path | None = None) -> None:
    """Rebuild ``out`` from the committed data alone; ``extra``: the folder of the live-scoring and timing tables
    (default: ``data``'s folder)."""
    from evroute.experiments.sumo_bandit import live_section, read_live, read_timing

    df = pd.read_csv(data)
    meta = json.loads(meta_path.read_text())
    text = report(df, meta, data.name, meta_path.name)
    extra = data.parent if extra is None else extra
    live = read_live(extra)  # the final routes driven live (scripts/sumo/sumo_bandit_live.py), when scored
    if live is not None:
        order = {k: list(r.get("methods", [])) for k, r in meta["routes"].items()}
        text += "\n".join(["", *live_section(*live, order)])
    timing = read_timing(extra)  # one seed of the dearest methods timed on a network not run
    if timing is not None:
        text += "\n".join(["", *partial_network_lines(df, meta, *timing)])
    atomic_write_text(out, text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", nargs="+", default=["monaco"])
    ap.add_argument("--routes", nargs="+", default=["A"])
    ap.add_argument("--models", nargs="+", default=["bi"])
    ap.add_argument("--policies", nargs="+", default=["ts", "bucb", "ucb"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--horizon", type=int, default=500)
    ap.add_argument("--env-param", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--arms", nargs="+", default=["edge"], choices=["edge", "turn"], help="arm kinds (evroute.arms)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--runs", default="results/sumo")
    ap.add_argument("--data", default="docs/results/data/sumo_bandit_finals.csv", help="per-seed final regrets (CSV)")
    ap.add_argument("--meta", default="docs/results/data/sumo_bandit_meta.json", help="set-up and reference checks")
    ap.add_argument("--out", default="docs/results/sumo_bandit.md", help="the report (Markdown)")
    ap.add_argument(
        "--seed-major",
        action="store_true",
        help="run seed 0 of every method, then seed 1, ... (a stopped study has equal seeds)",
    )
    ap.add_argument("--tables-only", action="store_true", help="write data and report from the seeds completed so far")
    ap.add_argument(
        "--check-against",
        metavar="COMMIT",
        help="record how the seeds run reproduce those in --data at this git commit (the re-run check)",
    )
    ap.add_argument(
        "--extra-data",
        type=Path,
        help="folder of the live-scoring (scripts/sumo/sumo_bandit_live.py) and timing tables (default: --data's)",
    )
    ap.add_argument("--report-only", action="store_true", help="no runs: rebuild --out from --data and --meta alone")
    args = ap.parse_args()
    reference = reference_data(args.check_against, args.data) if args.check_against else None
    if args.report_only:
        for p in (Path(args.data), Path(args.meta)):
            if not p.is_file():
                ap.exit(2, f"evroute: error: no study data at {p} (run the study without --report-only)\n")
        report_from_files(Path(args.data), Path(args.meta), Path(args.out), args.extra_data)
        return
    env_params = {k: _value(v) for k, v in (p.split("=", 1) for p in args.env_param)}
    rows: list[dict[str, Any]] = []
    routes_meta: dict[str, Any] = {}
    for network in args.networks:
        for route in args.routes:
            cfgs: dict[str, tuple[ExperimentConfig, Path]] = {}
            for model, policy, arms in itertools.product(args.models, args.policies, args.arms):
                cfg = ExperimentConfig(
                    network=network,
                    route=route,
                    model=model,
                    policy=policy,
                    env="sumo-replay",
                    environment=env_params,
                    horizon=args.horizon,
                    seeds=tuple(range(args.seeds)),
                    potential="elevation",
                    arms=arms,
                )
                name = f"{model}-{policy}" + ("" if arms == "edge" else f"-{arms}")
                cfgs[cfg.label] = (cfg, Path(args.runs) / f"{network}-{route}" / name)
            if not args.tables_only:
                run_route(network, route, cfgs, args)
            rows += collect_rows(network, route, cfgs)
            routes_meta[f"{network}-{route}"] = {**route_meta(next(iter(cfgs.values()))[0]), "methods": list(cfgs)}
    argv = [a for a in sys.argv[1:] if a != "--tables-only"]
    if args.check_against:  # not part of the study's command (a check of its data)
        i = argv.index("--check-against")
        argv = argv[:i] + argv[i + 2 :]
    meta = {
        "command": "python scripts/sumo/sumo_bandit_study.py " + shlex.join(argv),
        "env_params": env_params,
        "horizon": args.horizon,
        "seeds": args.seeds,
        "machine": _machine(),
        "routes": routes_meta,
    }
    check = None
    if reference is not None:  # the seeds of these runs against the data at that commit (idempotent)
        check = {"against": args.check_against, **merge_rows(reference, pd.DataFrame(rows, columns=COLUMNS))[1]}
    write_data(rows, meta, Path(args.data), Path(args.meta), check=check)
    report_from_files(Path(args.data), Path(args.meta), Path(args.out), args.extra_data)
    print(Path(args.out).read_text())


def run_route(network: str, route: str, cfgs: dict[str, tuple[ExperimentConfig, Path]], args: Any) -> None:
    """Run (or resume) every method of one route."""
    if args.seed_major:  # seed 0 of every method, then seed 1...: a stopped study has k seeds of all
        stored: set[tuple[str, int]] = set()
        if Path(args.data).is_file():  # seeds already in --data run after the missing ones (then checked: merge_rows)
            d = pd.read_csv(args.data)
            d = d[(d["network"] == network) & (d["route"] == route)]
            stored = set(zip(d["label"], d["seed"].astype(int), strict=True))
        jobs = [(seed, cfg, out) for seed in range(args.seeds) for cfg, out in cfgs.values()]
        jobs.sort(key=lambda j: (j[1].label, j[0]) in stored)  # stable: the seed-major order within each part
        for seed, cfg, out in jobs:
            out = prepare_output(cfg, out)
            with output_lock(out):
                s = run_seed(cfg, seed, out)
            print(f"{network} {route} {cfg.label} seed {seed}: {s['final_cumulative_regret_wh']:.1f} Wh", flush=True)
    for cfg, out in cfgs.values():
        s = run_experiment(cfg, out, workers=args.workers, progress=False)
        print(
            f"{network} {route} {cfg.label}: {format_mean_se(s['mean_final_regret_wh'], s['se_final_regret_wh'])} Wh",
            flush=True,
        )


if __name__ == "__main__":
    main()
