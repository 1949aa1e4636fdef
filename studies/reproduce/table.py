"""Which command produced every committed results row, and how to compare a re-run with it (issue 38, item 4).

One :class:`Source` per file under ``docs/results/data/``: the page it feeds, how its rows are read (CSV, or a list
inside a JSON file), the columns that identify a row (``key``), the columns left out of the comparison and why
(timings: CPU and wall seconds, load averages, differ from run to run), the commands that produced it (read from
the study's own commands file or the ``command`` fields the data carry, :func:`commands`), the commit its rows
reproduce at (``at``: ``HEAD``, or an older commit the page names) and how this checkout re-runs it:

* ``rerun="rows"``: row by row (:mod:`studies.reproduce.rows`), each row's own seed; rows for which ``head`` is
  false are labelled with an older commit in the data (the ``commit`` column) and are not re-run at HEAD;
* ``rerun="file"``: the whole file, by ``regen`` (``python`` arguments with ``{dir}`` for the folder it writes into),
  then compared row by row;
* ``rerun=""``: not re-run by this command; ``why`` says why (e.g. its rows are archived with their commit, or the
  data is metadata of another file: commands and set-up, no rows).

Numbers are compared to the precision they are stored at: a re-run value may differ from the committed one by one
unit in the committed value's last decimal (:func:`studies.reproduce.compare.tolerance`), plus a per-column
absolute tolerance where the computation is not deterministic (``atol``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = "docs/results/data"

#: why timing columns are never compared
TIMING = "timing (CPU / wall seconds or load): differs from run to run"


@dataclass(frozen=True)
class Source:
    """One committed data file: where its rows come from and how a re-run is compared with them (module doc)."""

    data: str  #: file name under docs/results/data/
    page: str  #: the results page it feeds (docs/results/<page>.md, or a path from the repository root)
    key: tuple[str, ...] = ()  #: columns that identify a row (empty: metadata, no rows)
    rows: str = ""  #: for JSON: the key of the list (or dict of records) that holds the rows
    excluded: Mapping[str, str] = field(default_factory=dict)  #: column -> why it is not compared
    atol: Mapping[str, float] = field(default_factory=dict)  #: column -> extra absolute tolerance
    commands_file: str = ""  #: the study's own commands file (.txt: one per line; .json: its command fields)
    command: str = ""  #: the producing command, when the data do not record it
    at: str = "HEAD"  #: the commit the rows reproduce at
    rerun: str = ""  #: "rows", "file" or "" (module doc)
    regen: tuple[str, ...] = ()  #: for rerun="file": python arguments, {dir} = the folder it writes into
    inputs: tuple[str, ...] = ()  #: committed data files the regeneration reads from {dir} (copied there first)
    why: str = ""  #: for rerun="": why not
    head: Callable[[Mapping[str, str]], bool] | None = None  #: for rerun="rows": rows that reproduce at HEAD
    cheap: Callable[[Mapping[str, str]], bool] | None = None  #: rows cheap enough for ``--sample`` (seconds each)

    @property
    def path(self) -> Path:
        return ROOT / DATA / self.data

    @property
    def page_name(self) -> str:
        return Path(self.page).stem


#: the commits whose gp_vs_bi rows reproduce at HEAD: the regeneration at HEAD of issue 38, item 4 (BI and GP rows of a
#: route together, with the default prior of issue 38; ``python -m studies.gp_vs_bi.run``, command in
#: ``gp_vs_bi_commands.txt``): the synthetic route at ``79808c8``, monaco:B at ``5d826b9`` and ``34bef37``, monaco:A
#: at ``55832cf``, luxembourg:A at ``644830d`` and luxembourg:B at ``4dcf7c2`` (the library code the study runs is the
#: same at these commits and at HEAD; the sampled CI check re-runs them).  These are all of the file's rows: the rows
#: recorded before issue 34 changed the real networks' speeds and the default energy prior (merged at ``7991dbd``) and
#: before issue 38 changed the default model prior (merged at ``650ca28``) were all replaced.
GP_VS_BI_AT_HEAD = frozenset({"79808c8", "5d826b9", "34bef37", "55832cf", "644830d", "4dcf7c2"})


def gp_vs_bi_at_head(r: Mapping[str, str]) -> bool:
    """Whether a gp_vs_bi row reproduces at HEAD: its ``commit`` is one of :data:`GP_VS_BI_AT_HEAD`."""
    return r.get("commit", "") in GP_VS_BI_AT_HEAD


def _cheap_gp_vs_bi(r: Mapping[str, str]) -> bool:
    """gp_vs_bi rows at HEAD that re-run in seconds (the CI sample): BI's (about 1 CPU s; on Luxembourg 2-12 s, most
    of it the environment's draw) and GP-TS off Luxembourg (about 10 CPU s with the process's start; Luxembourg GP-TS
    7-15 s and its BUCB and UCB runs longer, synthetic GP-BUCB and GP-UCB 20-30 s)."""
    return gp_vs_bi_at_head(r) and (
        r["model"] == "bi" or (r["policy"] == "ts" and not r["route"].startswith("luxembourg:"))
    )


#: the commits whose misspecification rows reproduce at HEAD: GP-TS, BI-TS, BI-EB-TS and BLR-TS re-run at HEAD
#: (``python -m studies.misspecification.run --workers 2 --methods GP-TS BI-TS BI-EB-TS BLR-TS``, commit
#: ``644830d``; the rows of ``e78cdfdc735a`` they replaced came out identical), TREES-TS and HP-GP-TS re-run at
#: ``7e66d16`` (``--methods TREES-TS HP-GP-TS``; the rows of ``7fe02a665370`` they replaced came out identical): all
#: 600 rows
MISSPECIFICATION_AT_HEAD = frozenset({"644830d52200", "7e66d160c73b"})


def misspecification_at_head(r: Mapping[str, str]) -> bool:
    """Whether a misspecification row reproduces at HEAD: its ``commit`` is one of
    :data:`MISSPECIFICATION_AT_HEAD`."""
    return r.get("commit", "") in MISSPECIFICATION_AT_HEAD


_LIVE_WHY = "the SUMO-live drives of the final routes of rows archived with sumo_bandit_finals.csv"
_SUMO_BANDIT_AT = "40a3992"
_SUMO_LIVE_AT = "93f5b0b"

SOURCES: tuple[Source, ...] = (
    Source(
        "gp_vs_bi_finals.csv",
        "gp_vs_bi",
        key=("route", "run", "seed"),
        excluded={"commit": "provenance: the commit that recorded the row"},
        commands_file="gp_vs_bi_commands.txt",
        rerun="rows",
        head=gp_vs_bi_at_head,
        cheap=_cheap_gp_vs_bi,
    ),
    Source("gp_vs_bi_commands.txt", "gp_vs_bi", why="the commands behind gp_vs_bi_finals.csv (no rows)"),
    Source(
        "sumo_bandit_finals.csv",
        "sumo_bandit",
        key=("network", "route", "label", "seed"),
        excluded={"cpu_s": TIMING},
        commands_file="sumo_bandit_meta.json",
        at=_SUMO_BANDIT_AT,
        why="480 SUMO-replay runs (~10 CPU hours); recorded before the speed-profile prior and network speeds of "
        "issue 34, the page names the commit",
    ),
    Source("sumo_bandit_meta.json", "sumo_bandit", at=_SUMO_BANDIT_AT, why="the commands and set-up (no rows)"),
    Source(
        "sumo_bandit_live_routes.csv",
        "sumo_bandit",
        key=("network", "route", "label", "seed"),
        commands_file="sumo_bandit_live_meta.json",
        at=_SUMO_BANDIT_AT,
        why=_LIVE_WHY,
    ),
    Source(
        "sumo_bandit_live_trips.csv",
        "sumo_bandit",
        key=("network", "route_key", "slot"),
        excluded={"cpu_s": TIMING},
        commands_file="sumo_bandit_live_meta.json",
        at=_SUMO_BANDIT_AT,
        why=_LIVE_WHY,
    ),
    Source("sumo_bandit_live_meta.json", "sumo_bandit", at=_SUMO_BANDIT_AT, why="the live commands (no rows)"),
    Source(
        "sumo_bandit_luxembourg_timing.csv",
        "sumo_bandit",
        key=("network", "route", "label", "seed"),
        excluded={"cpu_s": TIMING},
        commands_file="sumo_bandit_luxembourg_timing.json",
        at=_SUMO_BANDIT_AT,
        why="a timing of two Luxembourg runs (its regrets reproduce with the runs of sumo_bandit_finals.csv)",
    ),
    Source("sumo_bandit_luxembourg_timing.json", "sumo_bandit", at=_SUMO_BANDIT_AT, why="its command (no rows)"),
    *(
        Source(
            f"sumo_live_routes_{name}",
            "sumo_live_routes",
            key=key,
            excluded={c: TIMING for c in ("cpu_s", "wall_s")},
            at=_SUMO_LIVE_AT,
            command="python -m studies.sumo_live_routes.run --help (the commands are on the page)",
            why="SUMO-live drives and a recorded day (hours of CPU); recorded before issue 34, the page names the "
            "commit",
        )
        for name, key in (
            ("arms.csv", ("network", "edge", "next_edge")),
            ("correlation.csv", ("network", "arms", "max_lag", "lag")),
            ("holdout.csv", ("network", "arms", "window")),
            ("traversals.csv.gz", ("trip", "k")),
            ("trips.csv", ("network", "trip")),
        )
    ),
    Source(
        "turn_coverage.json",
        "turn_coverage",
        key=("network",),
        rows="rows",
        excluded={"cpu_s": TIMING, "wall_s": TIMING},
        rerun="file",
        regen=tuple(
            (
                "-m studies.sumo.turn_coverage --networks monaco luxembourg --hours 8-9 --peak 300 --min-samples 3 "
                "--probe-rounds 1 --data {dir}/turn_coverage.json --markdown {dir}/turn_coverage.md"
            ).split()
        ),
    ),
    Source(
        "turn_coverage_probe_turns.json",
        "turn_coverage_probe_turns",
        key=("network",),
        rows="rows",
        excluded={"cpu_s": TIMING, "wall_s": TIMING},
        rerun="file",
        regen=tuple(
            (
                "-m studies.sumo.turn_coverage --networks monaco luxembourg --hours 8-9 --peak 300 --min-samples 3 "
                "--probe-rounds 1 --probe-turns --data {dir}/turn_coverage_probe_turns.json "
                "--markdown {dir}/turn_coverage_probe_turns.md"
            ).split()
        ),
    ),
    Source(
        "bench_round_turns.json",
        "bench_round_turns",
        key=("network", "arms_kind"),
        rows="rows",
        excluded={
            c: TIMING for c in ("posterior_ms", "index_ms", "oracle_ms", "update_ms", "round_ms", "round_cpu_ms")
        },
        at="a5943c5",
        why="a timing measured on the idle machine at a5943c5 (the shared machine gives other numbers); its other "
        "columns (edges, turns, arms of Luxembourg) are those of turn_coverage.json at HEAD",
    ),
    Source(
        "map_matching_compare.json",
        "map_matching_compare",
        key=("trip",),
        rows="trips",
        excluded={"hmm_cpu_s": TIMING, "sumolib_cpu_s": TIMING},
        rerun="file",
        regen=tuple(
            (
                "-m studies.trip_logs.compare_matchers --network monaco --trips 20 --min-route-m 1000 --gps-sigma-m 5 "
                "--delta-m 30 --data {dir}/map_matching_compare.json --out {dir}/map_matching_compare.md"
            ).split()
        ),
    ),
    Source(
        "bo_timing.json",
        "bo_timing",
        why="every number is a timing (CPU seconds per iteration): not compared; re-run with its command",
    ),
    *(
        Source(
            name,
            "charging",
            key=key,
            excluded=excl,
            rerun="file",
            command="OMP_NUM_THREADS=1 python -m studies.charging.charging_study",
            regen=tuple("-m studies.charging.charging_study --data {dir} --out {dir}/charging.md".split()),
            inputs=("sumo_live_routes_correlation.csv",),  # its trip correlation rho
        )
        for name, key, excl in (
            ("charging_validation.csv", ("plan_rho", "world_rho", "delta", "trip"), {}),
            ("charging_buffer.csv", ("buffer", "trip"), {}),
            (
                "charging_latency.csv",
                ("chargers", "max_stops", "trip"),
                {c: TIMING for c in ("legs_cpu_s", "search_cpu_s", "total_cpu_s", "total_wall_s", "load1")},
            ),
        )
    ),
    *(
        Source(
            name,
            "energy_validation",
            key=key,
            rerun="file",
            command="python -m studies.energy_validation.energy_validation --out docs/results/energy_validation.md",
            regen=tuple(
                "-m studies.energy_validation.energy_validation --data {dir} --out {dir}/energy_validation.md".split()
            ),
        )
        for name, key in (
            ("energy_validation_cycles.csv", ("vehicle", "cycle")),
            ("energy_validation_twizy.csv", ("trip",)),
        )
    ),
    Source(
        "energy_validation_sumo.csv",
        "energy_validation",
        key=("network", "trip"),
        command="python -m studies.energy_validation.energy_validation --out docs/results/energy_validation.md",
        why="SUMO drives of 370 trips and FASTSim on each trace; owned by the energy validation study (issue 34), "
        "which re-runs it with its command",
    ),
    Source(
        "misspecification_finals.csv",
        "misspecification",
        key=("world", "method", "seed"),
        excluded={"commit": "provenance: the commit that ran the row"},
        commands_file="misspecification_commands.txt",
        rerun="rows",
        head=misspecification_at_head,
        cheap=misspecification_at_head,  # 1-5 CPU s a row (392 edges, 150 rounds)
    ),
    Source("misspecification_commands.txt", "misspecification", why="the commands behind misspecification_finals.csv"),
    Source(
        "travel_time_validation.csv",
        "travel_time_validation",
        key=("network", "start", "goal"),
        excluded={"cpu_s": TIMING},
        command="python -m studies.energy_validation.travel_time_validation collect --network monaco --pairs 30; "
        "the same with --network luxembourg",
        why="SUMO drives of 60 routes; owned by the travel-time study (issue 34), which re-runs it with its command",
    ),
    Source(
        "twizy_trace_energy.json",
        "twizy_trace_energy",
        key=("name",),
        rows="trips",
        rerun="file",
        regen=tuple(
            "-m studies.trip_logs.twizy_trace_energy --window-s 300 --data {dir}/twizy_trace_energy.json "
            "--out {dir}/twizy_trace_energy.md".split()
        ),
    ),
    Source(
        "calibration.json",
        "calibration_traversals",
        why="the superseded per-traversal calibration study (a SUMO day on Monaco, commit f62f65a), kept with its page",
    ),
    *(
        Source(
            f"trip_logs_known_truth{suffix}",
            "trip_logs_known_truth",
            key=key,
            excluded={"cpu_s": TIMING},
            commands_file="trip_logs_known_truth_commands.txt",
            why="owned by the known-truth study (issue 35), which re-runs it with its commands",
        )
        for suffix, key in (
            (".csv", ("network", "condition", "n_train", "seed", "model")),
            ("_bias.csv", ("network", "trip")),
            ("_floor.csv", ("network", "row", "n_train")),
            ("_coverage.csv", ("network", "n_train", "seed")),
            ("_matching.csv", ("network", "condition", "trip")),
            ("_commands.txt", ()),
        )
    ),
)

BY_DATA = {s.data: s for s in SOURCES}


def pages() -> list[str]:
    """The page names of the table, in order, each once."""
    return list(dict.fromkeys(s.page_name for s in SOURCES))


def _json_commands(d: Any) -> list[str]:
    if not isinstance(d, dict):
        return []
    out = [str(d["command"])] if isinstance(d.get("command"), str) else []
    out += [str(c) for c in d.get("commands", []) if isinstance(c, str)]
    for v in d.get("networks", {}).values() if isinstance(d.get("networks"), dict) else []:
        out += _json_commands(v)
    return list(dict.fromkeys(out))


def commands(s: Source) -> list[str]:
    """The commands that produced ``s``'s rows: its commands file, the ``command`` fields of the JSON data, or
    the table's own ``command`` (empty only for a file that is itself a commands file)."""
    import json

    if s.commands_file.endswith(".txt"):
        path = ROOT / DATA / s.commands_file
        return [ln for ln in path.read_text().splitlines() if ln.strip()] if path.is_file() else []
    meta = ROOT / DATA / (s.commands_file or s.data)
    if meta.suffix == ".json" and meta.is_file():
        found = _json_commands(json.loads(meta.read_text()))
        if found:
            return found
    return [s.command] if s.command else []
