"""Bandit study on SUMO energy: route learners in the ``sumo-replay`` environment (resumable).

Runs ``evroute run --env sumo-replay`` for every (network, route, model, policy) asked, into
``RUNS/<network>-<route>/<model>-<policy>``, then writes ``DOCS/sumo_bandit_<network>-<route>.md`` (the table and
figure of ``scripts/tools/summarise_runs.py``) plus paired per-seed differences against ``--baseline`` and, per
policy, of every further model against the first one (e.g. ``GP-EXACT-UCB - BI-UCB``).

    nice -n 10 .venv/bin/python scripts/sumo/sumo_bandit_study.py --networks monaco --routes A --models bi gp-exact \\
        --policies ts bucb ucb --seeds 5 --horizon 500

``--arms edge turn`` runs every method with edge and with turn arms (:mod:`evroute.arms`; folders and labels of turn
arms end in ``-turn`` / ``-TURN``) and adds every run's regret with its routes scored by the turn truth (one
yardstick for both kinds of arm) and the paired differences turn - edge per method under it (e.g. with
``--env-param probe_turns=true``, a day whose probes cover every turn).
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd

from evroute.energy import VehicleProfile
from evroute.experiments import ExperimentConfig, run_experiment
from evroute.experiments.output import output_lock
from evroute.experiments.report import write_runs_summary
from evroute.experiments.runner import prepare_output, run_seed
from evroute.io import atomic_write_text
from evroute.stats import format_mean_se, mean_se, paired_differences


def _value(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _seed_summaries(folder: Path) -> dict[int, dict[str, object]]:
    """The summaries of the seeds of ``folder`` that have completed (``seed_<k>/summary.json``)."""
    return {int(p.parent.name.split("_")[1]): json.loads(p.read_text()) for p in folder.glob("seed_*/summary.json")}


def _finals(folders: dict[str, Path]) -> dict[str, dict[int, float]]:
    return {
        label: {sd: float(s["final_cumulative_regret_wh"]) for sd, s in _seed_summaries(f).items()}
        for label, f in folders.items()
    }


def _paired_rows(finals: dict[str, dict[int, float]], pairs: list[tuple[str, str]]) -> list[str]:
    """``| a - b | mean difference +- s.e. | seeds where a is lower / seeds |`` over the seeds both ran."""
    lines = []
    for a, b in pairs:
        p = paired_differences(finals[a], finals[b])
        lines.append(f"| {a} - {b} | {format_mean_se(p.mean, p.se, signed=True)} | {p.k_lower} / {p.n} |")
    return lines


def paired_table(folders: dict[str, Path], baseline: str) -> str:
    finals = _finals(folders)
    if baseline not in finals:
        return ""
    lines = [
        f"Paired per-seed differences of the final cumulative regret against {baseline} (Wh; negative: lower "
        "regret than the baseline):",
        "",
        "| difference | mean +- s.e. | seeds lower / seeds |",
        "|---|---|---|",
    ]
    turn = baseline.endswith("-TURN")  # each kind of arm has its own truth: compare like with like here
    same = [lab for lab in finals if lab != baseline and lab.endswith("-TURN") == turn]
    lines += _paired_rows(finals, [(label, baseline) for label in same])
    return "\n".join(lines) + "\n"


def model_table(folders: dict[str, Path], models: list[str], policies: list[str]) -> str:
    """Paired per-seed differences between each model and the first one, policy by policy (e.g. GP - BI)."""
    finals = _finals(folders)
    base = models[0].upper()
    pairs = [(f"{m.upper()}-{p.upper()}", f"{base}-{p.upper()}") for m in models[1:] for p in policies]
    pairs = [(a, b) for a, b in pairs if a in finals and b in finals]
    if not pairs:
        return ""
    lines = [
        f"Paired per-seed differences against {base} under the same policy (Wh; negative: lower regret than {base}):",
        "",
        "| difference | mean +- s.e. | seeds lower / seeds |",
        "|---|---|---|",
    ]
    return "\n".join(lines + _paired_rows(finals, pairs)) + "\n"


def common_reference_table(
    folders: dict[str, Path], cfg: ExperimentConfig, models: list[str], policies: list[str], baseline: str
) -> str:
    """Final regret of every run against one reference per route: the cheapest route known to any run.

    Where no exact optimum exists (negative-energy cycles of the empirical means), each run measures regret
    against the best route known (:func:`evroute.oracle.best_known_route`) lowered to the cheapest route *that run*
    drove, so two runs of one seed may use different references.  Shifting every run to the lowest of these
    references, ``R*``, makes the runs comparable: a run's final regret against ``R*`` is its own plus
    ``T (r_run - R*)``, and paired differences become differences of total expected energy.  Also given: the true
    energy of the route the rectified oracle picks with perfect knowledge of the means (what a learner that has
    converged drives), as regret per round against ``R*``, and each method's regret per round above that route
    (negative: it drove cheaper routes on average).
    """
    from evroute.bandit import regret_reference_route
    from evroute.energy import elevation_potential_wh
    from evroute.experiments.runner import build_problem

    problem = build_problem(cfg, 0)
    if not problem.env.static:  # the reference follows the truth: one per round, the same for every run
        return ""
    finals = _finals(folders)
    refs = {
        label: {sd: float(s["regret_reference"]["wh"]) for sd, s in _seed_summaries(f).items()}  # type: ignore
        for label, f in folders.items()
    }
    if any(s["regret_reference"]["exact"] for f in folders.values() for s in _seed_summaries(f).values()):  # type: ignore
        return ""
    r_star = min(min(r.values()) for r in refs.values())
    shifted = {
        lab: {sd: fin + cfg.horizon * (refs[lab][sd] - r_star) for sd, fin in finals[lab].items()} for lab in finals
    }
    pot = elevation_potential_wh(problem.linegraph.network, VehicleProfile.load(cfg.vehicle))
    rect = regret_reference_route(problem.env, problem.route.start, problem.route.goal, "rectified", pot)
    lines = [
        f"Against one reference for all runs, the cheapest route known to any run: R* = {r_star:.1f} Wh "
        f"(the perfect-knowledge rectified route costs {rect.cost:.1f} Wh, {rect.cost - r_star:.1f} Wh per round "
        "above R*).  Final cumulative regret against R* (Wh, mean +- s.e.):",
        "",
        "| method | final regret vs R* | per round | per round above the rectified route | same, last fifth |",
        "|---|---|---|---|---|",
    ]
    for lab, v in shifted.items():
        m, se = mean_se(list(v.values()))
        per_round = m / cfg.horizon
        above = per_round - (rect.cost - r_star)
        last = (
            np.mean(
                [
                    pd.read_csv(folders[lab] / f"seed_{sd}" / "rounds.csv")["expected_wh"]
                    .to_numpy()[-max(1, cfg.horizon // 5) :]
                    .mean()
                    for sd in v
                ]
            )
            - rect.cost
        )
        lines.append(f"| {lab} | {format_mean_se(m, se)} | {per_round:.1f} | {above:+.1f} | {last:+.1f} |")
    base = models[0].upper()
    pairs = [(f"{m.upper()}-{p.upper()}", f"{base}-{p.upper()}") for m in models[1:] for p in policies]
    pairs = [(a, b) for a, b in pairs if a in shifted and b in shifted]
    if baseline in shifted:
        pairs += [(lab, baseline) for lab in shifted if lab != baseline and (lab, baseline) not in pairs]
    lines += [
        "",
        "Paired per-seed differences of the final regret against R* (Wh; negative: the first method has "
        "lower regret; with one reference these are differences of total expected energy):",
        "",
        "| difference | mean +- s.e. | seeds lower / seeds |",
        "|---|---|---|",
        *_paired_rows(shifted, pairs),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", nargs="+", default=["monaco"])
    ap.add_argument("--routes", nargs="+", default=["A"])
    ap.add_argument("--models", nargs="+", default=["bi"])
    ap.add_argument("--policies", nargs="+", default=["ts", "bucb", "ucb"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--horizon", type=int, default=500)
    ap.add_argument("--env-param", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--baseline", default="BI-TS")
    ap.add_argument("--arms", nargs="+", default=["edge"], choices=["edge", "turn"], help="arm kinds (evroute.arms)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--runs", default="results/sumo")
    ap.add_argument("--docs", default="docs/results")
    ap.add_argument("--tag", default="", help="suffix of the table/figure names")
    ap.add_argument(
        "--seed-major",
        action="store_true",
        help="run seed 0 of every method, then seed 1, ... (a stopped study has equal seeds)",
    )
    ap.add_argument("--tables-only", action="store_true", help="write the tables from the seeds completed so far")
    args = ap.parse_args()
    env_params = {k: _value(v) for k, v in (p.split("=", 1) for p in args.env_param)}
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
            if args.tables_only:
                write_tables(network, route, {lab: out for lab, (_, out) in cfgs.items()}, cfg, args)
                continue
            if args.seed_major:  # seed 0 of every method, then seed 1...: a stopped study has k seeds of all
                for seed in range(args.seeds):
                    for cfg, out in cfgs.values():
                        out = prepare_output(cfg, out)
                        with output_lock(out):
                            s = run_seed(cfg, seed, out)
                        print(
                            f"{network} {route} {cfg.label} seed {seed}: {s['final_cumulative_regret_wh']:.1f} Wh",
                            flush=True,
                        )
            for cfg, out in cfgs.values():
                s = run_experiment(cfg, out, workers=args.workers, progress=False)
                print(
                    f"{network} {route} {cfg.label}: "
                    f"{format_mean_se(s['mean_final_regret_wh'], s['se_final_regret_wh'])} Wh",
                    flush=True,
                )
            write_tables(network, route, {lab: out for lab, (_, out) in cfgs.items()}, cfg, args)


def write_tables(
    network: str, route: str, folders: dict[str, Path], cfg: ExperimentConfig, args: argparse.Namespace
) -> None:
    """The per-route Markdown and figure from the seeds completed so far (a partial study: fewer seeds)."""
    folders = {lab: f for lab, f in folders.items() if list(f.glob("seed_*/summary.json"))}
    done = {
        lab: sorted(int(p.parent.name.split("_")[1]) for p in f.glob("seed_*/summary.json"))
        for lab, f in folders.items()
    }
    stem = Path(args.docs) / f"sumo_bandit_{network}-{route}{args.tag}"
    n_seeds = sorted({len(v) for v in done.values()})
    seeds_text = f"{n_seeds[0]} seeds" if len(n_seeds) == 1 else f"{n_seeds[0]}-{n_seeds[-1]} seeds"
    title = f"sumo-replay, {network} {route}, T={args.horizon}, {seeds_text}"
    argv = [*map(str, folders.values()), "--out", str(stem), "--title", title]
    text = write_runs_summary(list(folders.values()), stem, title, argv)
    print(text)
    if len(n_seeds) > 1:
        text += (
            "\nSeeds completed per method (the study was stopped before every method had all of them): "
            + ", ".join(f"{lab} {len(v)}" for lab, v in done.items())
            + ".\n"
        )
    common = common_reference_table(folders, cfg, args.models, args.policies, args.baseline)
    if common:  # the runs' own references differ: only differences against one reference are shown
        text += (
            "\nIn the table above every run measures regret against its own reference (the best route known, "
            "lowered to the cheapest route that run drove); compare methods below, against one reference.\n"
        )
        atomic_write_text(stem.with_suffix(".md"), text + "\n" + common)
        return
    atomic_write_text(
        stem.with_suffix(".md"),
        text
        + "\n"
        + paired_table(folders, args.baseline)
        + "\n"
        + model_table(folders, args.models, args.policies)
        + arms_table(folders, cfg),
    )


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


def arms_table(folders: dict[str, Path], cfg: ExperimentConfig) -> str:
    """Paired per-seed differences turn arms - edge arms of each method run with both (``X-TURN - X``), with every
    run's routes scored by the turn truth (:func:`turn_truth_finals`)."""
    labels = list(folders)
    pairs = [(lab, lab[: -len("-TURN")]) for lab in labels if lab.endswith("-TURN") and lab[: -len("-TURN")] in labels]
    if not pairs or not build_static(cfg):
        return ""
    finals = turn_truth_finals(folders, cfg)
    lines = [
        "\nFinal cumulative regret with every run's routes scored by the turn truth (sum of the routes' turn means, "
        "against the turn-arm optimum; Wh, mean +- s.e.):",
        "",
        "| method | final regret (turn truth) |",
        "|---|---|",
        *[f"| {lab} | {format_mean_se(*mean_se(list(v.values())))} |" for lab, v in finals.items()],
        "",
        "Paired per-seed differences turn arms - edge arms under the turn truth (Wh; negative: turn arms have lower "
        "regret):",
        "",
        "| difference | mean +- s.e. | seeds lower / seeds |",
        "|---|---|---|",
    ]
    return "\n".join(lines + _paired_rows(finals, pairs)) + "\n"


def build_static(cfg: ExperimentConfig) -> bool:
    """Whether the study's environment is static (turn arms need one time-of-day bin)."""
    from evroute.experiments.runner import build_problem

    return bool(build_problem(cfg, 0).env.static)


if __name__ == "__main__":
    main()
