"""Helpers of the SUMO bandit study (``studies/sumo_bandit/run.py``): per-seed data merged by key
(:func:`merge_rows`), and the final routes of its runs scored by live SUMO energy (issue 20, item 4: the ground truth
a driver pays).

``studies/sumo_bandit/live.py`` collects, ``studies/sumo_bandit/run.py`` writes the report section
(:func:`live_section`) from two committed tables:

* :data:`FINALS` (one row per run and seed, plus the references): the run's **final route**, the route it drove in
  its last round T (``rounds.csv``; a route the learner's policy chose after T - 1 observations, exploration
  included: what the learner drives, not what a driver who stops learning would drive), keyed by
  :func:`route_key`, with its replay cost under the turn truth (mean reduced energies, Wh).  Two reference rows per
  route, seed -1: :data:`REFERENCES`, the exact optimum of the replay's turn means and of its edge means.
* :data:`TRIPS` (one row per distinct route and clock slot): the route driven in ``sumo-live``
  (:mod:`evroute.environments.sumo_live`, the same scenario as the runs' replay: network, background demand, window,
  vehicle, energy model) from the saved state of slot ``k``, the live environment's own clock with
  ``rounds_per_day = K`` (departures ``hours[0] + k (hours[1] - hours[0]) / K``), with the speed factor
  :func:`slot_speed_factor` (drawn like SUMO's, seeded per slot and shared by every route: routes driven at the same
  slot meet the same traffic and the same driver, so differences between routes are paired).  Energies: battery
  (what the driver pays) and reduced (battery minus the change of kinetic and potential energy: the replay's unit)
  over the route's complete traversals.

A route's live energy is the battery energy of its trip from the EV's insertion on the entry edge to the end of the
route (:func:`route_end_wh`: the whole trip's minus that of the exit edges, which the EV drives only so that the
route's last edge is seen complete), averaged over the slots where the EV arrived; a seed's paired difference with
another route uses the slots both arrived in.  The reduced energy of
the route's traversals (the replay's unit) is averaged over the slots whose trips have one complete traversal per
route edge (:func:`drive`'s ``matched``; the trip's run-out makes this so wherever the net allows,
:meth:`evroute.sumo.live.LiveSimulation.runout`).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evroute.stats import format_mean_se, mean_se, paired_differences, t_interval

FINALS = "sumo_bandit_live_routes.csv"
TRIPS = "sumo_bandit_live_trips.csv"
#: the live scoring's set-up (command, slots, departure times, speed-factor seed), next to the two tables
LIVE_META = "sumo_bandit_live_meta.json"
#: reference labels -> arm kind of the replay truth whose exact optimum they are
REFERENCES = {"REPLAY-OPT-TURN": "turn", "REPLAY-OPT-EDGE": "edge"}
FINAL_COLUMNS = ["network", "route", "label", "model", "policy", "arms", "seed", "route_key", "replay_turn_wh"]
TRIP_COLUMNS = [
    "network", "route_key", "slot", "depart_s", "speed_factor", "ok", "matched", "failure", "trip_battery_wh",
    "battery_wh", "reduced_wh", "travel_s", "cpu_s", "edges", "exit_edges", "exit_battery_wh",
]  # fmt: skip


#: the columns that identify one run's seed in ``--data`` (the merge key)
KEY = ["network", "route", "label", "seed"]


#: read the commit column as text (a hash such as ``1234e56`` is not a number)
COMMIT = {"commit": str}


def merge_rows(old: pd.DataFrame, new: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``old`` rows (the stored ``--data``) with ``new`` ones merged in, keyed by :data:`KEY`: a seed run again
    replaces its stored row (one row per key), and the check of that re-run against the stored value is returned:
    ``{"compared", "identical", "max_abs_diff_wh", "differing": [[network, route, label, seed, stored, new], ...]}``
    (final regrets, own truth, Wh, equal to the stored 3 decimals)."""
    both = old.merge(new, on=KEY, suffixes=("_old", ""))
    diff = (both["final_regret_wh"] - both["final_regret_wh_old"]).abs()
    bad = both[diff > 5e-4]  # rows are rounded to 3 decimals: a reproduced seed agrees to the last one
    check = {
        "compared": len(both),
        "compared_per_method": {
            f"{n} {r} {lab}": int(k) for (n, r, lab), k in both.groupby(["network", "route", "label"]).size().items()
        },
        "identical": int(len(both) - len(bad)),
        "max_abs_diff_wh": round(float(diff.max()), 3) if len(both) else 0.0,
        "differing": [
            [r.network, r.route, r.label, int(r.seed), float(r.final_regret_wh_old), float(r.final_regret_wh)]
            for r in bad.itertuples()
        ],
    }
    kept = old.merge(new[KEY], on=KEY, how="left", indicator=True)
    kept = kept[kept["_merge"] == "left_only"].drop(columns="_merge")
    out = pd.concat([kept, new], ignore_index=True).reindex(columns=list(old.columns))
    # the stored order (routes, then methods, by first appearance; seeds ascending), new routes and methods last
    first = pd.concat([old, new], ignore_index=True)
    routes = {k: i for i, k in enumerate(dict.fromkeys(zip(first["network"], first["route"], strict=True)))}
    labels = {k: i for i, k in enumerate(dict.fromkeys(first["label"]))}
    out = out.assign(
        _r=[routes[k] for k in zip(out["network"], out["route"], strict=True)], _l=out["label"].map(labels)
    )
    return out.sort_values(["_r", "_l", "seed"], kind="stable").drop(columns=["_r", "_l"]), check


def rerun_lines(checks: dict[str, dict[str, Any]], *, replaced: bool = False) -> list[str]:
    """Report lines of the re-run checks of the study's commands (``{command: {"against": commit, **check}}``, the
    check of :func:`merge_rows`): seeds stored at a commit, run again; the differing seeds counted per route and
    method (each pair of values is in the meta file).  ``replaced``: every row has since been regenerated by
    ``collect`` (the re-run's values are no longer the data's)."""
    lines = []
    for command, c in checks.items():
        per: dict[str, int] = {}
        ran: dict[str, int] = {}
        for n, r, lab, *_ in c["differing"]:
            per[f"{n} {r} {lab}"] = per.get(f"{n} {r} {lab}", 0) + 1
        for k, v in c.get("compared_per_method", {}).items():
            ran[k] = int(v)
        lines.append(
            f"Re-run check: `{command}` ran {c['compared']} seed(s) stored at commit `{c.get('against', '?')}` "
            f"again; {c['identical']} reproduce the stored final regret to 0.001 Wh (largest difference "
            f"{c['max_abs_diff_wh']:.3f} Wh)"
            + (
                "; differing seeds: "
                + ", ".join(f"{k} {v}" + (f" of {ran[k]}" if k in ran else "") for k, v in per.items())
                if per
                else ""
            )
            + (
                ".  The data held the re-run values until every block was regenerated (provenance below)."
                if replaced
                else ".  The data hold the re-run values."
            )
        )
        lines.append("")
    return lines


def route_key(edges: str) -> str:
    """A short stable key of a route (its space-separated SUMO edge ids): 12 hex digits of its SHA-256."""
    return hashlib.sha256(edges.encode()).hexdigest()[:12]


def slot_speed_factor(seed: int, slot: int) -> float:
    """The EV's speed factor at clock slot ``slot`` (drawn like SUMO's for a passenger car; seeded by both)."""
    from evroute.sumo.live import draw_speed_factor

    return draw_speed_factor(np.random.default_rng([int(seed), int(slot)]))


def live_simulation(linegraph: Any, env_params: dict[str, Any], vehicle: Any, slots: int) -> Any:
    """The :class:`~evroute.sumo.live.LiveSimulation` of a replay scenario with ``slots`` departure times (saved
    states, cached), and the departure times (s since midnight): the ``sumo-live`` environment's own clock with
    ``rounds_per_day = slots``, without its replay (driving needs none)."""
    from evroute.environments import sumo_live

    cfg = sumo_live.parse_params({**env_params, "rounds_per_day": int(slots)})
    return sumo_live.live_simulation(linegraph, cfg, vehicle), cfg.departure_times_s()


def _exit_energy_wh(trip: Any, pred: str, route: list[str], exits: list[str], matched: bool) -> float:
    """Battery energy (Wh) the trip spent on its ``exits`` (the goal's successor and the run-out): each exit edge's
    energy in ``trip.edge_energy_wh`` (every visit of an edge summed) less the complete traversals of the same edge
    as a route edge (a goal whose successor the route also drives, e.g. one reached by a loop).  NaN if the EV did not
    arrive, if the entry edge is also an exit edge, or if an exit edge is a route edge and the route's traversals are
    not all matched."""
    if not trip.arrived or pred in exits:
        return math.nan
    on_route = set(exits) & set(route)
    if on_route and not matched:
        return math.nan
    energy = np.asarray(trip.route_energy_wh, dtype=np.float64)
    own = {e: float(energy[[i for i, r in enumerate(route) if r == e]].sum()) for e in on_route}
    return float(sum(trip.edge_energy_wh.get(e, 0.0) - own.get(e, 0.0) for e in exits))


def drive(sim: Any, edges: str, slot: int, speed_factor: float) -> dict[str, Any]:
    """Drive ``edges`` (space-separated SUMO ids) in ``sim`` (a :class:`~evroute.sumo.live.LiveSimulation`) from
    slot ``slot``: one :data:`TRIP_COLUMNS` row.

    ``ok``: the EV arrived (not teleported, in time); ``trip_battery_wh``: the battery energy of the whole trip
    ``[pred, route..., succ]`` and its run-out (Wh; the ends are the same for every route between the same start and
    goal edges, :meth:`~evroute.sumo.live.LiveSimulation.end_edges` and
    :meth:`~evroute.sumo.live.LiveSimulation.runout`, so trips of one origin-destination pair compare);
    ``matched``: the trip has one complete traversal per route edge, in order, each with a finite energy, and then
    ``battery_wh``, ``reduced_wh``, ``travel_s`` are sums over them (NaN otherwise); ``failure``: why not (empty
    when matched); ``cpu_s``: CPU s of this process; ``exit_edges``: the edges driven after the route (``succ`` and
    the run-out, space-separated) and ``exit_battery_wh`` the battery energy spent on them (part of
    ``trip_battery_wh``; :func:`_exit_energy_wh`)."""
    import time

    from evroute.errors import EvrouteError

    route = edges.split()
    cpu0 = time.process_time()
    row: dict[str, Any] = {"route_key": route_key(edges), "slot": int(slot), "speed_factor": float(speed_factor)}
    try:
        pred, succ = sim.end_edges(route[0], route[-1])
        t = sim.drive([pred, *route, succ], int(slot), speed_factor=float(speed_factor))
        matched = t.ok and bool(np.all(np.isfinite(t.route_reduced_wh)))
        failure = t.failure or ("" if matched else "a route edge's energy is not finite")
        row |= {"depart_s": t.depart_s, "ok": bool(t.arrived), "matched": matched, "failure": failure}
        exits = [succ, *t.runout]
        row["exit_edges"] = " ".join(exits)
        row["exit_battery_wh"] = _exit_energy_wh(t, pred, route, exits, matched)
        row["trip_battery_wh"] = float(t.battery_wh) if t.arrived else math.nan
        sums = {"battery_wh": t.route_energy_wh, "reduced_wh": t.route_reduced_wh, "travel_s": t.route_travel_s}
        row |= {k: float(np.sum(v)) if matched else math.nan for k, v in sums.items()}
    except EvrouteError as exc:  # SUMO failing to start or during the trip
        row |= {"depart_s": math.nan, "ok": False, "matched": False, "failure": str(exc).splitlines()[0]}
        row |= dict.fromkeys(("trip_battery_wh", "battery_wh", "reduced_wh", "travel_s"), math.nan)
    row["cpu_s"] = round(time.process_time() - cpu0, 3)
    row["edges"] = edges
    row.setdefault("exit_edges", "")
    row.setdefault("exit_battery_wh", math.nan)
    return row


def _slot_values(trips: pd.DataFrame, column: str) -> dict[str, pd.Series]:
    """Route key -> its successful trips' ``column`` by slot."""
    ok = trips[trips["ok"].astype(bool)]
    return {k: g.set_index("slot")[column].dropna() for k, g in ok.groupby("route_key")}


def _paired(a: pd.Series | None, b: pd.Series | None) -> float:
    """Mean over the slots both routes succeeded in of ``a - b`` (NaN when there is none)."""
    if a is None or b is None:
        return math.nan
    d = (a - b).dropna()
    return float(d.mean()) if len(d) else math.nan


def departure_contrasts(ka: dict[int, str], kb: dict[int, str], battery: dict[str, pd.Series]) -> list[float]:
    """Per departure time (slot, ascending), the mean over the seeds both methods have of the live battery energy
    of A's final route minus B's at that time (Wh): the contrast whose spread over departure times the interval
    over departures measures (the per-seed interval holds the departure times fixed)."""
    per_slot: dict[int, list[float]] = {}
    for s in sorted(set(ka) & set(kb)):
        a, b = battery.get(ka[s]), battery.get(kb[s])
        if a is None or b is None:
            continue
        for slot, v in (a - b).dropna().items():
            per_slot.setdefault(int(slot), []).append(float(v))
    return [float(np.mean(v)) for _, v in sorted(per_slot.items())]


def _side(low: float, high: float) -> int:
    """-1: the interval lies below 0, +1: above, 0: it contains 0 (or there is none)."""
    return -1 if high < 0 else 1 if low > 0 else 0


def _sentence(a: str, b: str, p: Any, dep: tuple[float, float, int]) -> str:
    """The verdict on A - B: resolved only when the interval over seeds (departure times fixed) and the one over
    departure times (seeds averaged) lie on the same side of 0."""
    if p.n < 2:
        return f"{a} - {b}: fewer than two seeds, no interval"
    tail = f"({p.k_lower} of {p.n} seeds lower; over the {dep[2]} departure times [{dep[0]:+.1f}, {dep[1]:+.1f}])"
    seeds, deps = _side(p.low, p.high), _side(dep[0], dep[1])
    if seeds == deps == -1:
        return f"{a}'s final routes cost less live battery energy than {b}'s: both 95 % intervals lie below 0 {tail}"
    if seeds == deps == 1:
        return f"{a}'s final routes cost more live battery energy than {b}'s: both 95 % intervals lie above 0 {tail}"
    if seeds:
        return (
            f"{a} - {b} is not resolved on live battery energy: the 95 % interval over seeds lies "
            f"{'below' if seeds < 0 else 'above'} 0, the one over departure times contains 0 {tail}"
        )
    return f"{a} - {b} is not resolved on live battery energy: the 95 % interval over seeds contains 0 {tail}"


def missing_seed_lines(runs: pd.DataFrame, replay: dict[str, list[int]], note: str | None) -> list[str]:
    """A sentence naming the methods with fewer seeds driven live than the replay ran (``replay``: label -> its
    seeds), and why (``note``, from the live set-up); none when every seed was driven."""
    short = []
    for lab, m in runs.groupby("label", sort=False):
        have, want = set(m["seed"].astype(int)), set(replay.get(str(lab), []))
        if want - have:
            missing = ", ".join(str(s) for s in sorted(want - have))
            short.append(
                f"{lab}: {len(have & want)} of its {len(want)} seeds driven (not driven: "
                f"seed{'s' if len(want - have) > 1 else ''} {missing})"
            )
    if not short:
        return []
    why = f"  {note}" if note else "  Why is not recorded."
    return ["", f"Methods with seeds whose final route was not driven live: {'; '.join(short)}.{why}"]


def live_section(
    finals: pd.DataFrame,
    trips: pd.DataFrame,
    meta: dict[str, Any],
    order: dict[str, list[str]] | None = None,
    replay: dict[str, dict[str, list[int]]] | None = None,
) -> list[str]:
    """Markdown lines of the report section: per route, every method's final routes driven live against the replay
    optimum, and the paired GP - BI and turn - edge differences (every sentence generated from the table).
    ``order``: ``"network-route"`` -> method labels in the study's order (others after them, as stored);
    ``replay``: ``"network-route"`` -> label -> the seeds the replay ran (methods driven for fewer are named)."""
    ok = trips["ok"].astype(bool)
    nets = live_networks(meta)
    commands = "; ".join(f"`{m['command']}`" for m in nets.values())
    clocks = {(int(m["slots"]), ", ".join(m["departures"])) for m in nets.values()}
    if len(clocks) == 1:
        (n_slots, departures), whose = next(iter(clocks)), ""
        slots = str(n_slots)
    else:  # networks driven at other times: each network's slots and departures
        slots = "/".join(str(int(m["slots"])) for m in nets.values())
        departures = "; ".join(f"{n}: {', '.join(m['departures'])}" for n, m in nets.items())
        whose = f" ({'/'.join(nets)})"
    lines = [
        "## Final routes driven live (sumo-live)",
        "",
        f"Command{'s' if len(nets) > 1 else ''}: {commands} (data: [`data/{FINALS}`](data/{FINALS}), "
        f"[`data/{TRIPS}`](data/{TRIPS}), set-up [`data/{LIVE_META}`](data/{LIVE_META})).  "
        "Each run's final route is the route it drove in round T (what the learner drives after T - 1 "
        "observations, exploration included).  Every distinct route, and the exact optima of the replay's turn and "
        f"edge means, is driven in `sumo-live` in the runs' scenario at the {slots}{whose} departure times of the "
        "live environment's clock (`rounds_per_day = "
        f"{slots}`: {departures}), at each time with one speed factor shared by every "
        "route (seeded, drawn like SUMO's), so routes are compared in the same traffic "
        "(`studies/sumo_bandit/runner.py`).  A route's live energy is the battery energy of the trip from the "
        "EV's insertion on the entry edge (one for every route of a start and goal) to the end of the route (the "
        "junction after its last edge included), averaged over the departure times the EV arrived at.  After the "
        "route the EV drives on over one exit edge and, where that is shorter than the EV can drive in one step, a "
        "run-out of further edges, so that it is seen past the route's last edge before it arrives "
        "(`evroute/sumo/live.py`); the energy of these exit edges is left out: it is the same drive for every route "
        "of a goal, and it is not part of the route.  The live reduced energy (the replay's unit) sums the route's "
        "complete traversals, one per route edge, averaged over the trips that have them.  "
        f"Trips: {len(trips)}, of which {int((~ok).sum())} did not arrive (teleported or late) and "
        f"{_unmatched_text(trips)} ({int(trips['cpu_s'].sum())} CPU s for all trips).  "
        f"{_exit_text(finals, trips)}".rstrip(),
        "",
    ]
    trips = trips.assign(to_goal_wh=route_end_wh(trips))
    battery, reduced = _slot_values(trips, "to_goal_wh"), _slot_values(trips, "reduced_wh")
    for (network, route), g in finals.groupby(["network", "route"], sort=False):
        refs = g[g["label"].isin(list(REFERENCES))].set_index("label")
        runs = g[~g["label"].isin(list(REFERENCES))]
        rank = {lab: i for i, lab in enumerate((order or {}).get(f"{network}-{route}", []))}
        runs = runs.assign(_o=[rank.get(lab, len(rank)) for lab in runs["label"]])
        runs = runs.sort_values("_o", kind="stable").drop(columns="_o")
        opt = str(refs.loc["REPLAY-OPT-TURN", "route_key"])
        lines += [
            f"### {network} {route}",
            "",
            "Live battery energy of the final routes (Wh, mean +- s.e. over seeds; the references: over departure "
            "times) and its paired difference from the replay's turn optimum (same departure times); replay: the "
            "route's cost under the turn truth (mean reduced energies), live reduced: the same unit driven live:",
            "",
            "| method | seeds | distinct routes | = replay optimum | replay (Wh) | live reduced (Wh) "
            "| live battery (Wh) | live - optimum (Wh) | 95 % interval |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for lab, r in refs.iterrows():
            b = battery.get(str(r["route_key"]), pd.Series(dtype=float))
            rd = reduced.get(str(r["route_key"]), pd.Series(dtype=float))
            d = (b - battery[opt]).dropna() if opt in battery else pd.Series(dtype=float)
            lo, hi = t_interval(d.tolist()) if len(d) > 1 else (math.nan, math.nan)
            lines.append(
                f"| {lab} | -- | 1 | -- | {r['replay_turn_wh']:.1f} | {format_mean_se(*mean_se(rd.tolist()))} | "
                f"{format_mean_se(*mean_se(b.tolist()))} | {format_mean_se(*mean_se(d.tolist()), signed=True)} | "
                f"[{lo:+.1f}, {hi:+.1f}] |"
            )
        above: dict[str, dict[int, float]] = {}
        keys_of: dict[str, dict[int, str]] = {}
        for lab, m in runs.groupby("label", sort=False):
            keys = dict(zip(m["seed"].astype(int), m["route_key"].astype(str), strict=True))
            keys_of[str(lab)] = keys
            live = {s: float(battery[k].mean()) for s, k in keys.items() if k in battery}
            live_r = {s: float(reduced[k].mean()) for s, k in keys.items() if k in reduced}
            diff = {s: _paired(battery.get(k), battery.get(opt)) for s, k in keys.items()}
            above[str(lab)] = {s: v for s, v in diff.items() if not math.isnan(v)}
            p = paired_differences(above[str(lab)], {s: 0.0 for s in above[str(lab)]})
            ci = f"[{p.low:+.1f}, {p.high:+.1f}]" if p.n > 1 else "--"
            lines.append(
                f"| {lab} | {len(keys)} | {len(set(keys.values()))} | {sum(k == opt for k in keys.values())} | "
                f"{format_mean_se(*mean_se(m['replay_turn_wh'].tolist()))} | "
                f"{format_mean_se(*mean_se(list(live_r.values())))} | {format_mean_se(*mean_se(list(live.values())))} "
                f"| {format_mean_se(p.mean, p.se, signed=True)} | {ci} |"
            )
        pairs = _pairs(runs)
        note = nets.get(str(network), {}).get("missing_seeds_note")
        lines += missing_seed_lines(runs, (replay or {}).get(f"{network}-{route}", {}), note)
        lines += [
            "",
            "Paired per-seed differences of the final route's live battery energy (Wh; negative: the first method's "
            "routes cost less), 95 % t-intervals over seeds (each seed's difference averaged over the departure "
            "times, so the departure times are held fixed) and over departure times (each time's difference "
            "averaged over the seeds, so the traffic of a departure time varies); a difference is resolved only "
            "when both intervals lie on the same side of 0:",
            "",
            "| difference | kind | mean +- s.e. | 95 % interval over seeds | seeds lower / seeds "
            "| 95 % interval over departure times | departure times |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        sentences = []
        counts: dict[str, list[int]] = {"model": [0, 0, 0], "arms": [0, 0, 0]}
        for a, b, kind in pairs:
            p = paired_differences(above[a], above[b])
            ci = f"[{p.low:+.1f}, {p.high:+.1f}]" if p.n > 1 else "--"
            per_dep = departure_contrasts(keys_of[a], keys_of[b], battery)
            dlo, dhi = t_interval(per_dep) if len(per_dep) > 1 else (math.nan, math.nan)
            dci = f"[{dlo:+.1f}, {dhi:+.1f}]" if len(per_dep) > 1 else "--"
            lines.append(
                f"| {a} - {b} | {kind} | {format_mean_se(p.mean, p.se, signed=True)} | {ci} | {p.k_lower} / {p.n} "
                f"| {dci} | {len(per_dep)} |"
            )
            sentences.append(f"- {_sentence(a, b, p, (dlo, dhi, len(per_dep)))}.")
            side = _side(p.low, p.high) if p.n > 1 and _side(p.low, p.high) == _side(dlo, dhi) else 0
            counts[kind][{-1: 0, 1: 1, 0: 2}[side]] += 1
        lines += ["", "Generated from the table above:", "", *sentences, ""]
        for kind, what in (("model", "gp-exact - bi"), ("arms", "turn - edge")):
            c = counts[kind]
            if sum(c):
                lines.append(
                    f"Live, {kind}: of {sum(c)} paired comparisons {what}, {c[0]} resolve lower live energy, "
                    f"{c[1]} higher, not resolved at 95 % over both seeds and departure times: {c[2]}."
                )
        lines.append("")
    return lines


def route_end_wh(trips: pd.DataFrame) -> pd.Series:
    """Per trip, the battery energy to the end of the route: ``trip_battery_wh - exit_battery_wh`` (NaN where either
    is; a table without ``exit_battery_wh``: the whole trip's)."""
    if "exit_battery_wh" not in trips.columns:
        return trips["trip_battery_wh"].astype(float)
    return trips["trip_battery_wh"].astype(float) - trips["exit_battery_wh"].astype(float)


def _unmatched_text(trips: pd.DataFrame) -> str:
    """How many arrived trips lack one complete traversal per route edge, and why (the trips' failure texts)."""
    bad = trips[trips["ok"].astype(bool) & ~trips["matched"].astype(bool)]
    if bad.empty:
        return "every trip that arrived has one complete traversal per route edge"
    why = (bad["failure"] if "failure" in bad.columns else pd.Series("", index=bad.index)).fillna("").value_counts()
    reasons = "; ".join(f"{k or 'no reason given'}: {v}" for k, v in sorted(why.items(), key=lambda w: (-w[1], w[0])))
    return f"{len(bad)} arrived without one complete traversal per route edge ({reasons})"


def _exit_text(finals: pd.DataFrame, trips: pd.DataFrame) -> str:
    """The edges driven after each start-goal pair's routes (``exit_edges`` of the trips), with the trips that drove
    a run-out (more than the exit edge)."""
    if "exit_edges" not in trips.columns:
        return ""
    parts = []
    for (network, route), g in finals.groupby(["network", "route"], sort=False):
        t = trips[(trips["network"] == network) & trips["route_key"].isin(set(g["route_key"]))]
        ends = t["exit_edges"].dropna().astype(str)
        if ends.empty:
            continue
        goal = str(t["edges"].iloc[0]).split()[-1]
        runout = int((ends.str.split().str.len() > 1).sum())
        counts = sorted(ends.value_counts().items(), key=lambda ek: (-ek[1], ek[0]))
        kinds = ", ".join(f"`{e}` ({k} trips)" for e, k in counts)
        text = f"{network} {route}: after `{goal}` {kinds}, {runout} of {len(ends)} trips with a run-out"
        if "exit_battery_wh" in t.columns and t["exit_battery_wh"].notna().any():
            x = t.dropna(subset=["exit_battery_wh"])
            sd = float(np.sqrt(x.groupby("slot")["exit_battery_wh"].var(ddof=1).mean()))
            text += (
                f"; their energy {x['exit_battery_wh'].mean():.1f} Wh in mean, s.d. {sd:.1f} Wh between the routes "
                "driven at one departure time (pooled)"
            )
        parts.append(text)
    return ("Exit edges: " + "; ".join(parts) + ".") if parts else ""


def _pairs(runs: pd.DataFrame) -> list[tuple[str, str, str]]:
    """``(a, b, kind)``: GP - BI under the same policy and arms (the first model as the base), turn - edge arms."""
    labels = list(dict.fromkeys(runs["label"]))
    models = list(dict.fromkeys(runs["model"]))
    model_of = dict(zip(runs["label"], runs["model"], strict=False))
    out = []
    for lab in labels:
        if model_of[lab] != models[0]:
            base = lab.replace(str(model_of[lab]).upper(), str(models[0]).upper(), 1)
            if base in labels:
                out.append((lab, base, "model"))
    out += [(lab, lab[: -len("-TURN")], "arms") for lab in labels if lab.endswith("-TURN") and lab[:-5] in labels]
    return out


def live_networks(meta: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Network -> its live-scoring set-up (``command``, ``slots``, ``speed_seed``, ``departures``) from the
    :data:`LIVE_META` file: ``{"networks": {...}}``, or one set-up of a single network (the older form, its network
    read from the command's ``--network``, default ``monaco`` as in ``studies/sumo_bandit/live.py``)."""
    if "networks" in meta:
        return dict(meta["networks"])
    import shlex

    args = shlex.split(str(meta["command"]))
    net = args[args.index("--network") + 1] if "--network" in args[:-1] else "monaco"
    return {net: {k: meta[k] for k in ("command", "slots", "speed_seed", "departures") if k in meta}}


def read_live(data_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]] | None:
    """``(finals, trips, set-up)`` from ``data_dir`` (None when any of :data:`FINALS`, :data:`TRIPS`,
    :data:`LIVE_META` is missing)."""
    import json

    f, t, m = data_dir / FINALS, data_dir / TRIPS, data_dir / LIVE_META
    if not (f.is_file() and t.is_file() and m.is_file()):
        return None
    return pd.read_csv(f, dtype=COMMIT), pd.read_csv(t, dtype=COMMIT), json.loads(m.read_text())
