"""The SUMO bandit study's page (``docs/results/sumo_bandit.md``) from its committed tables alone.

:func:`report` turns the per-seed final regrets (``studies/sumo_bandit/run.py --data``) and the study's set-up
(``--meta``) into the Markdown page: per network and route the recorded day, the exact regret reference and its checks,
every method's final regret and the paired GP - BI and turn - edge differences.  :func:`report_from_files` adds the
final routes driven live (:func:`~studies.sumo_bandit.runner.live_section`) and, for a network run after the
others, what ran there and its CPU (:func:`network_cost_lines`).  It never runs SUMO or a learner; every number
and sentence comes from the tables.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from evroute.io import atomic_write_text
from evroute.stats import format_mean_se, mean_se, paired_differences
from studies.sumo_bandit.runner import rerun_lines


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


def _resolved(finals: dict[str, dict[int, float]], pairs: list[tuple[str, str]]) -> tuple[int, int]:
    """How many paired differences ``a - b`` have their 95 % interval below 0 and how many above 0."""
    diffs = [paired_differences(finals[a], finals[b]) for a, b in pairs]
    return sum(p.high < 0 for p in diffs), sum(p.low > 0 for p in diffs)


def _finals(df: pd.DataFrame, column: str) -> dict[str, dict[int, float]]:
    return {lab: dict(zip(g["seed"], g[column], strict=True)) for lab, g in df.groupby("label", sort=False)}


def at_head(df: pd.DataFrame) -> pd.Series:
    """Per row: whether it was regenerated at HEAD (its ``commit`` in
    :data:`studies.reproduce.table.SUMO_BANDIT_AT_HEAD`); the other rows predate issue 34."""
    from studies.reproduce.table import SUMO_BANDIT_AT_HEAD

    if "commit" not in df.columns:
        return pd.Series(False, index=df.index)
    return df["commit"].astype(str).isin(SUMO_BANDIT_AT_HEAD)


def provenance_lines(df: pd.DataFrame) -> list[str]:
    """The commits that recorded the per-seed rows, per comparison block (network, route, arm kind), which blocks
    are at HEAD and the label of the older ones."""
    from collections import Counter

    from studies.reproduce.provenance import before_issue34_sentence, commit_table

    if "commit" not in df.columns:
        return []
    head = at_head(df)
    groups = {
        f"{n} {r} {a}{' (at HEAD)' if head[g.index].all() else ''}": Counter(
            g["commit"].fillna("unlabelled").astype(str)
        )
        for (n, r, a), g in df.groupby(["network", "route", "arms"], sort=False)
    }
    new = sorted(set(df.loc[head, "commit"].astype(str)))
    lines = [
        "Provenance: each row carries the commit that recorded it (column `commit`; rows recorded before the column "
        "existed: the commit that last wrote the row's line, `python -m studies.reproduce.provenance`).  Per-seed "
        "rows per comparison block (network, route, arm kind: every model and policy, regenerated together) and "
        "commit:",
        "",
        *commit_table(groups, "block"),
        "",
    ]
    if new:
        which = "Every block was" if head.all() else "Blocks marked (at HEAD) were"
        lines += [
            f"{which} regenerated at commit {', '.join(f'`{c}`' for c in new)}, after issue 34, "
            "their recorded SUMO day simulated again (`python -m studies.sumo_bandit.collect`); "
            "`python -m studies.reproduce.run --pages sumo_bandit` re-runs them row by row and compares."
            + (
                ""
                if head.all()
                else "  Comparisons below pair only methods of the same code: a pair with one method at HEAD and "
                "one before issue 34 is named and not compared."
            ),
            "",
        ]
    if not head.all():
        lines += [
            ("Blocks not marked (at HEAD): " if new else "")
            + before_issue34_sentence("`sumo_bandit_study` under `scripts/sumo/`"),
            "",
        ]
    return lines


def _day_lines(m: dict[str, Any], label: str) -> list[str]:
    """A route's recorded day (``m``: its set-up in the study's meta), ``label`` naming the rows it belongs to."""
    return [
        f"Recorded day{label}: {m['traversals']:,} traversals of the {m['network_edges']:,} edges, "
        f"{m['probe_trips']:,} probe trips; {m['eq8_edges']} edge(s) never traversed take Eq. 8's energy; "
        + (
            f"{m['clipped_traversals']:,} traversals had a reduced energy below 0 (together "
            f"{m['clipped_wh']:.1f} Wh) and enter the means clipped to 0 (`evroute/environments/sumo_replay.py`)."
            if m["clipped_traversals"]
            else "no traversal had a reduced energy below 0 (none clipped, `evroute/environments/sumo_replay.py`)."
        ),
        "",
    ]


def _reference_text(m: dict[str, Any]) -> str:
    e, t = m["arms"]["edge"], m["arms"]["turn"]
    return (
        f"Check: edge arms {e['negative_means']} of {e['n']:,} means below 0 (minimum {e['min_mean_wh']:.4f} "
        f"Wh), turn arms {t['negative_means']} of {t['n']:,} (minimum {t['min_mean_wh']:.4f} Wh); negative "
        f"cycle reachable: {'yes' if m['negative_cycle_reachable'] else 'no'}.  Optimum: {e['optimum_wh']:.1f} Wh "
        f"with edge means, {t['optimum_wh']:.1f} Wh with turn means; the edge-mean optimum costs "
        f"{m['edge_optimum_turn_truth_wh']:.1f} Wh under the turn means, "
        f"{m['edge_optimum_turn_truth_wh'] - t['optimum_wh']:.2f} Wh above the turn optimum (the regret per round, "
        "under the turn truth, of an edge-arm learner that has found its own optimum)."
    )


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
        "    python -m studies.sumo_bandit.run --report-only --data docs/results/data/"
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
        *rerun_lines(meta.get("rerun_check", {}), replaced=bool(at_head(df).all())),
        *provenance_lines(df),
    ]
    for (network, route), g in df.groupby(["network", "route"], sort=False):
        key = f"{network}-{route}"
        head = at_head(g)
        eras = [(meta["routes"][key], "")] if head.all() or not head.any() else []
        if not eras:  # a route with blocks of both: each set-up with the rows it belongs to
            old = meta.get("routes_before_issue34", {}).get(key, meta["routes"][key])
            eras = [(meta["routes"][key], " (rows at HEAD)"), (old, " (rows before issue 34)")]
        elif not head.any() and key in meta.get("routes_before_issue34", {}):
            eras = [(meta["routes_before_issue34"][key], "")]
        m = eras[0][0]
        exact = bool(g["reference_exact"].all())
        lines += [f"## {network} {route} ({m['start']} -> {m['goal']})", ""]
        for em, label in eras:
            lines += _day_lines(em, label)
        lines += [
            "Regret reference: "
            + (
                "exact in every run (Dijkstra on the mean reduced energies)"
                if exact
                else f"NOT exact in {int((~g['reference_exact']).sum())} run(s)"
            )
            + ".  "
            + "  ".join(
                (f"{label.strip(' ()')[0].upper()}{label.strip(' ()')[1:]}: " if label else "") + _reference_text(em)
                for em, label in eras
            ),
            "",
            "Final cumulative regret (Wh, mean +- s.e. over seeds): against the run's own truth (edge arms: edge "
            "means; turn arms: turn means), and with the run's driven routes scored by the turn truth (one yardstick "
            "for both kinds of arm):",
            "",
            "| method | seeds | regret, own truth | per round | regret, turn truth | per round |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        own, turn = _finals(g, "final_regret_wh"), _finals(g, "final_regret_turn_truth_wh")
        mixed = len(eras) > 1  # a route with blocks of both codes: each method says which
        for lab in own:
            mo, so = mean_se(list(own[lab].values()))
            mt, st = mean_se(list(turn[lab].values()))
            tag = (" (at HEAD)" if head[g.index[g["label"] == lab]].all() else " (before issue 34)") if mixed else ""
            lines.append(
                f"| {lab}{tag} | {len(own[lab])} | {format_mean_se(mo, so)} | {mo / T:.2f} | "
                f"{format_mean_se(mt, st)} | {mt / T:.2f} |"
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
        era = {lab: bool(head[g.index[g["label"] == lab]].all()) for lab in own}
        split = [(a, b) for a, b, _ in pairs if era[a] != era[b]]
        pairs = [(a, b, k) for a, b, k in pairs if era[a] == era[b]]
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
        if split:
            lines += [
                "",
                "Not compared (one method at HEAD, the other before issue 34: different code and recorded day): "
                + ", ".join(f"{a} - {b}" for a, b in split)
                + ".",
            ]
        lines += ["", "Generated from the table above (turn truth):", "", *sentences, ""]
        gp = [(a, b) for a, b, k in pairs if k == "model"]
        if gp:
            below, above = _resolved(turn, gp)
            lines.append(
                f"Model: of {len(gp)} paired comparisons {', '.join(models[1:])} - {models[0]}, {below} resolve lower "
                f"regret, {above} higher regret, not resolved at 95 %: {len(gp) - below - above}."
            )
        arm_pairs = [(a, b) for a, b, k in pairs if k == "arms"]
        if arm_pairs:
            below, above = _resolved(turn, arm_pairs)
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


def network_cost_lines(
    df: pd.DataFrame, meta: dict[str, Any], net: str, driven: frozenset[str] = frozenset()
) -> list[str]:
    """What ran on ``net`` (a network after the first of the study) and its CPU: per route, the seeds completed of
    the ``meta["seeds"]`` asked for every method of the study; the CPU per seed measured there (the data's ``cpu_s``:
    the seed's CPU, not the process's one-off loading; mean over the completed seeds of both routes) and its ratio to
    the same method's CPU per seed on the other networks, compared only between rows of the same code (the rows at
    HEAD when ``net`` has any, else the older ones); and, while seeds are missing, what they would cost: per seed the
    CPU measured there, else the method's CPU per seed on the other networks times the ratio of its model's methods
    measured on both (all methods' ratio when its model has none).  ``driven``: the networks whose final routes are
    driven live."""
    seeds = int(meta["seeds"])
    here_all, ref_all = df[df["network"] == net], df[df["network"] != net]
    head = at_head(df)
    code = bool(head[here_all.index].any())  # the code the CPU is compared at
    here = here_all[head[here_all.index] == code]
    ref = ref_all[head[ref_all.index] == code]
    methods = list(dict.fromkeys([*ref_all["label"], *here_all["label"]]))
    routes = list(dict.fromkeys(df["route"]))
    cpu = here.groupby("label")["cpu_s"].mean()
    cpu_ref = ref.groupby("label")["cpu_s"].mean()
    both = [lab for lab in methods if lab in cpu.index and lab in cpu_ref.index]
    ratio = float(cpu[both].sum() / cpu_ref[both].sum()) if both else float("nan")
    model_of = dict(zip(df["label"], df["model"], strict=False))
    factor: dict[str, float] = {}
    for model in dict.fromkeys(model_of.values()):
        labs = [lab for lab in cpu.index if model_of.get(lab) == model and lab in cpu_ref.index]
        factor[model] = float(cpu[labs].sum() / cpu_ref[labs].sum()) if labs else ratio
    done, missing, scaled = [], [], []
    remaining, measured, n_scaled = 0.0, 0, 0
    for route in routes:
        g = here_all[here_all["route"] == route]
        counts = {lab: int((g["label"] == lab).sum()) for lab in methods}
        done.append(f"{net} {route}: " + (_by_count({k: v for k, v in counts.items() if v}) or "none"))
        short = {lab: seeds - k for lab, k in counts.items() if k < seeds}
        missing.append(f"{net} {route}: " + (_by_count(short) if short else "none"))
        for lab, k in short.items():
            if lab in cpu.index:
                remaining, measured = remaining + k * float(cpu[lab]), measured + k
            else:
                remaining += k * factor[model_of[lab]] * float(cpu_ref.get(lab, float("nan")))
                n_scaled += k
                scaled.append(lab)
    others = sorted(set(ref_all["network"]))
    which = "rows at HEAD" if code else "rows before issue 34"
    per_seed = ", ".join(
        f"{lab} {cpu[lab]:.1f} s" + (f" ({cpu[lab] / cpu_ref[lab]:.1f}x)" if lab in cpu_ref.index else "")
        for lab in methods
        if lab in cpu.index
    )
    complete = all(m.endswith(": none") for m in missing)
    seeds_text = (
        f"{seeds} seeds of each of the {len(methods)} methods on {' and '.join(f'{net} {r}' for r in routes)}"
        if complete
        else f"Seeds completed of the {seeds} asked: {'; '.join(done)}"
    )
    compared = f"; together {ratio:.1f} times their CPU per seed on {', '.join(others)}" if both else ""
    lines = [
        f"**{net} A/B: {'complete' if complete else 'partly done'}.** {seeds_text} (T = {int(meta['horizon'])}, the "
        "environment parameters above, the commands at the top).  CPU per seed of its "
        f"{which} (the data's `cpu_s`, defined as for {', '.join(others)}: the seed's CPU, not the process's one-off "
        "loading of network and recorded day; mean over the completed seeds of both routes; in brackets the ratio to "
        f"the same method's CPU per seed on the {which} of {', '.join(others)}): {per_seed or 'none'}{compared}."
        + ("" if net in driven else f"  The final routes of the {net} runs are not driven live."),
        "",
    ]
    if complete:
        return lines
    cost = ""
    if remaining:
        parts = [f"{measured} seed-runs at the CPU per seed measured there" if measured else ""]
        if n_scaled:
            parts.append(
                f"{n_scaled} ({', '.join(dict.fromkeys(scaled))}) at their CPU per seed on {', '.join(others)} times "
                "the ratio of their model's methods measured on both ("
                + ", ".join(f"{mod} {factor[mod]:.1f}x" for mod in dict.fromkeys(model_of[lab] for lab in scaled))
                + ")"
            )
        cost = f"  They would cost about {remaining / 60:.0f} CPU-minutes: {', '.join(p for p in parts if p)}."
    return [*lines, f"**Not done: {net}** (seeds missing of the {seeds}): {'; '.join(missing)}.{cost}", ""]


def live_provenance(finals: pd.DataFrame, trips: pd.DataFrame) -> list[str]:
    """Rows of the live tables (final routes, trips) per network and the commit that recorded them."""
    if "commit" not in finals.columns or "commit" not in trips.columns:
        return []
    cells = []
    for net in dict.fromkeys([*finals["network"], *trips["network"]]):
        parts = []
        for name, t in (("final routes", finals), ("trips", trips)):
            c = t.loc[t["network"] == net, "commit"].fillna("unlabelled").astype(str).value_counts()
            parts.append(f"{name} " + ", ".join(f"`{k}` ({n})" for k, n in sorted(c.items(), key=lambda kv: -kv[1])))
        cells.append(f"{net}: " + "; ".join(parts))
    return [
        "Live rows per network and commit (the networks whose blocks are all at HEAD were driven again from the "
        "runs at HEAD): " + "; ".join(cells) + ".",
        "",
    ]


def report_from_files(data: Path, meta_path: Path, out: Path, extra: Path | None = None) -> None:
    """Rebuild ``out`` from the committed data alone; ``extra``: the folder of the live-scoring tables
    (default: ``data``'s folder)."""
    from studies.sumo_bandit.runner import live_section, read_live

    df = pd.read_csv(data, dtype={"commit": str})
    meta = json.loads(meta_path.read_text())
    text = report(df, meta, data.name, meta_path.name)
    extra = data.parent if extra is None else extra
    live = read_live(extra)  # the final routes driven live (studies/sumo_bandit/live.py), when scored
    if live is not None:
        order = {k: list(r.get("methods", [])) for k, r in meta["routes"].items()}
        replay = {
            f"{n}-{r}": {str(lab): sorted(int(s) for s in g2["seed"]) for lab, g2 in g.groupby("label")}
            for (n, r), g in df.groupby(["network", "route"])
        }
        text += "\n".join(["", *live_section(*live, order, replay), "", *live_provenance(live[0], live[1])])
    driven = frozenset(live[1]["network"]) if live is not None else frozenset()
    for net in list(dict.fromkeys(df["network"]))[1:]:  # the networks run after the first: what ran, its CPU
        text += "\n".join(["", *network_cost_lines(df, meta, str(net), driven=driven)])
    atomic_write_text(out, text)
