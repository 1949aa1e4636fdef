"""Which command produced every committed results row, and how to compare a re-run with it (issue 38, item 4).

One :class:`~studies.reproduce.source.Source` per file under ``docs/results/data/`` (the smaller pages' entries in
:mod:`studies.reproduce.sources_other`, in :data:`SOURCES` at their place): the page it feeds, how its rows are read
(CSV, or a list inside a JSON file), the columns that identify a row (``key``), the columns left out of the
comparison and why (timings: CPU and wall seconds, load averages, differ from run to run), the commands that
produced it (read from the study's own commands file or the ``command`` fields the data carry, :func:`commands`),
the commit its rows reproduce at (``at``: ``HEAD``, or an older commit the page names) and how this checkout re-runs
it:

* ``rerun="rows"``: row by row (:mod:`studies.reproduce.rows`), each row's own seed; rows for which ``head`` is
  false are labelled with an older commit in the data (the ``commit`` column): a full regeneration re-runs them at
  HEAD too but does not compare them (they were recorded by other code);
* ``rerun="file"``: the whole file, by the commands ``regen`` (each a tuple of ``python`` arguments, ``{dir}`` the
  folder it writes into, ``{raw}`` the folder the row re-runs keep their raw runs in, shared so a study's runs are
  made once), then compared row by row: every row when the file is at HEAD (``at``), else only the rows ``head``
  accepts (none without it);
* ``rerun=""``: not re-run by this command; ``why`` says why (the data is metadata of another file: commands, no
  rows).

Timing columns (CPU and wall seconds, loads) are re-measured by a regeneration and never compared (``excluded``);
a source whose every number is a timing (``timing``) is regenerated and reported, not compared.  ``cpu_columns``
and ``cpu_extra_s`` give the estimated CPU of a regeneration from scratch (:func:`studies.reproduce.run.cpu_estimate`:
the recorded CPU columns summed, plus what the data do not record); sources above :data:`EXPENSIVE_S` are
expensive, never part of the ``--sample`` drift check (which draws cheap rows only).

Numbers are compared to the precision they are stored at: a re-run value may differ from the committed one by one
unit in the committed value's last decimal (:func:`studies.reproduce.compare.tolerance`), plus a per-column
absolute tolerance where the computation is not deterministic (``atol``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from studies.reproduce.regen import (
    KNOWN_TRUTH_REGEN,
    SUMO_BANDIT_REGEN,
    SUMO_LIVE_REGEN,
    WITH_KNOWN_TRUTH,
    WITH_SUMO_BANDIT,
    cmd,
)
from studies.reproduce.source import DATA as DATA
from studies.reproduce.source import ROOT as ROOT
from studies.reproduce.source import TIMING as TIMING
from studies.reproduce.source import Source as Source
from studies.reproduce.sources_other import OTHER_SOURCES

#: a source whose regeneration is estimated above this many CPU seconds is expensive (never in ``--sample``)
EXPENSIVE_S = 600.0


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


#: the commits whose sumo_bandit rows reproduce at HEAD: comparison blocks (a network's route and arm kind, every
#: model and policy) regenerated at HEAD of issue 38, item 4 (``python -m studies.sumo_bandit.run``, commands in
#: ``sumo_bandit_meta.json``); the other rows are labelled with the older commits that recorded them (before issue
#: 34 changed network speeds and the default energy prior) and are not compared.  At ``1dce12e``: Monaco, both
#: routes and both arm kinds (240 rows, 2,008 CPU s of runs) and its live drives.  At ``bde6f82`` (the study's code
#: unchanged since ``1dce12e``: its Luxembourg edge rows equal the ``1dce12e`` ones, since replaced, in every
#: regret): Luxembourg, both routes and both arm kinds (240 rows, 8,958 CPU s of runs,
#: collected by ``studies.sumo_bandit.collect``) and its live drives (636 trips).  Every committed row is at one of them
SUMO_BANDIT_AT_HEAD: frozenset[str] = frozenset({"1dce12e", "bde6f82"})


def sumo_bandit_at_head(r: Mapping[str, str]) -> bool:
    """Whether a sumo_bandit row (replay final, live route or live trip) reproduces at HEAD: its ``commit`` is one of
    :data:`SUMO_BANDIT_AT_HEAD`."""
    return r.get("commit", "") in SUMO_BANDIT_AT_HEAD


def _cheap_sumo_bandit(r: Mapping[str, str]) -> bool:
    """sumo_bandit rows at HEAD that re-run in seconds: BI on Monaco (under 2 CPU s a seed; the recorded SUMO day,
    about 30 CPU s, is paid once and cached)."""
    return sumo_bandit_at_head(r) and r["model"] == "bi" and r["network"] == "monaco"


#: the commits whose sumo_live_routes trips reproduce at HEAD: the study regenerated at HEAD of issue 38 (every
#: ``collect`` command on its page, then ``arms`` per network and ``--report-only``, into an empty folder; the page
#: names the commits per network): Monaco at ``d5ee1c3``; Luxembourg's first clock times at ``2e9e9f6``, its second
#: ones at ``cc6a52b`` and ``78f9abb`` (two processes on disjoint trips); these commits differ only in the study's
#: report and the reproduce table, not in the library or the collection (a test checks it)
SUMO_LIVE_AT_HEAD: frozenset[str] = frozenset({"d5ee1c3", "2e9e9f6", "cc6a52b", "78f9abb"})


def sumo_live_at_head(r: Mapping[str, str]) -> bool:
    """Whether a sumo_live_routes trip reproduces at HEAD: its ``commit`` is one of :data:`SUMO_LIVE_AT_HEAD`."""
    return r.get("commit", "") in SUMO_LIVE_AT_HEAD


def sumo_live_networks_at_head() -> frozenset[str]:
    """The networks every committed live trip of which reproduces at HEAD (:func:`sumo_live_at_head`)."""
    return _networks_at_head(SUMO_LIVE_AT_HEAD)


@cache
def _networks_at_head(commits: frozenset[str]) -> frozenset[str]:
    import csv

    nets: dict[str, bool] = {}
    with (ROOT / DATA / "sumo_live_routes_trips.csv").open(newline="") as f:
        for r in csv.DictReader(f):
            nets[r["network"]] = nets.get(r["network"], True) and r["commit"] in commits
    return frozenset(n for n, ok in nets.items() if ok)


def sumo_live_row_at_head(r: Mapping[str, str]) -> bool:
    """Whether a row of a sumo_live_routes data file reproduces at HEAD: its network's trips all do (the network
    from the row's ``network`` column, or from its ``trip`` id, ``<network>-<pair>-<kinds>-<k>``); the arms,
    correlations and held-out checks of a network are recomputed with its trips."""
    net = r.get("network") or r.get("trip", "").split("-")[0]
    return net in sumo_live_networks_at_head()


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
        cpu_extra_s=6500.0,
        cpu_note="measured per route (studies/reproduce/README.md): synthetic 1,030, luxembourg:A 2,106, "
        "luxembourg:B 1,341 CPU s; monaco:A and monaco:B about 1,000 each (the synthetic route's per-seed costs)",
    ),
    Source("gp_vs_bi_commands.txt", "gp_vs_bi", why="the commands behind gp_vs_bi_finals.csv (no rows)"),
    Source(
        "sumo_bandit_finals.csv",
        "sumo_bandit",
        key=("network", "route", "label", "seed"),
        excluded={"cpu_s": TIMING},
        commands_file="sumo_bandit_meta.json",
        rerun="rows",
        head=sumo_bandit_at_head,
        cheap=_cheap_sumo_bandit,
        cpu_columns=("cpu_s",),
        cpu_extra_s=75.0,
        cpu_note="the runs' recorded cpu_s, plus the two recorded SUMO days (28 and 47 CPU s, sumo_bandit_meta.json)",
    ),
    Source(
        "sumo_bandit_meta.json",
        "sumo_bandit",
        rerun="file",
        regen=SUMO_BANDIT_REGEN,
        cpu_note=WITH_SUMO_BANDIT,
    ),
    *(
        Source(
            name,
            "sumo_bandit",
            key=key,
            excluded=excl,
            commands_file="sumo_bandit_live_meta.json",
            rerun="file",
            regen=SUMO_BANDIT_REGEN,
            head=sumo_bandit_at_head,
            cpu_columns=cols,
            cpu_extra_s=extra,
            cpu_note=note,
        )
        for name, key, excl, cols, extra, note in (
            ("sumo_bandit_live_routes.csv", ("network", "route", "label", "seed"), {}, (), 0.0, WITH_SUMO_BANDIT),
            (
                "sumo_bandit_live_trips.csv",
                ("network", "route_key", "slot"),
                {"cpu_s": TIMING},
                ("cpu_s",),
                60.0,
                "the live trips' recorded cpu_s plus the saved states of the two live scenarios (estimated 60 CPU s); "
                "the replay runs whose final routes are driven are shared with sumo_bandit_finals.csv's row re-runs",
            ),
        )
    ),
    Source(
        "sumo_bandit_live_meta.json",
        "sumo_bandit",
        rerun="file",
        regen=SUMO_BANDIT_REGEN,
        cpu_note=WITH_SUMO_BANDIT,
    ),
    *(
        Source(
            f"sumo_live_routes_{name}",
            "sumo_live_routes",
            key=key,
            excluded={
                **{c: TIMING for c in ("cpu_s", "wall_s")},
                "commit": "provenance: the commit that recorded the trip",
            },
            command="python -m studies.sumo_live_routes.run --help (the commands are on the page)",
            rerun="file",
            regen=SUMO_LIVE_REGEN,
            head=sumo_live_row_at_head,
            cpu_columns=("cpu_s",) if name == "trips.csv" else (),
            cpu_extra_s=1800.0 if name == "trips.csv" else 0.0,
            cpu_note="the live trips' recorded cpu_s plus the recorded days and saved states of both networks "
            "(not recorded; estimated 1,800 CPU s; measured at HEAD: Monaco's collect 1,008 CPU s in all, its "
            "arms 48)"
            if name == "trips.csv"
            else "written by the sumo_live_routes regeneration (its CPU counted with sumo_live_routes_trips.csv)",
        )
        for name, key in (
            ("arms.csv", ("network", "edge", "next_edge")),
            ("correlation.csv", ("network", "arms", "max_lag", "lag")),
            ("holdout.csv", ("network", "arms", "window")),
            ("traversals.csv.gz", ("trip", "k")),
            ("trips.csv", ("network", "trip")),
        )
    ),
    *OTHER_SOURCES,
    Source(
        "misspecification_finals.csv",
        "misspecification",
        key=("world", "method", "seed"),
        excluded={"commit": "provenance: the commit that ran the row"},
        commands_file="misspecification_commands.txt",
        rerun="rows",
        head=misspecification_at_head,
        cheap=misspecification_at_head,  # 1-5 CPU s a row (392 edges, 150 rounds)
        cpu_extra_s=1400.0,
        cpu_note="measured: the four first methods' 400 rows 237 CPU s; TREES-TS and HP-GP-TS 200 rows about "
        "19 min wall with 1 worker (about 1,150 CPU s)",
    ),
    Source("misspecification_commands.txt", "misspecification", why="the commands behind misspecification_finals.csv"),
    Source(
        "travel_time_validation.csv",
        "travel_time_validation",
        key=("network", "start", "goal"),
        excluded={"cpu_s": TIMING},
        command="python -m studies.energy_validation.travel_time_validation collect --network monaco --pairs 40; "
        "the same with --network luxembourg",
        rerun="file",
        regen=tuple(
            cmd(
                f"-m studies.energy_validation.travel_time_validation collect --network {net} --pairs 40 "
                "--data {dir}/travel_time_validation.csv --out {dir}/travel_time_validation.md"
            )
            for net in ("monaco", "luxembourg")
        ),
        cpu_columns=("cpu_s",),
    ),
    Source(
        "twizy_trace_energy.json",
        "twizy_trace_energy",
        key=("name",),
        rows="trips",
        rerun="file",
        regen=(
            cmd(
                "-m studies.trip_logs.twizy_trace_energy --window-s 300 --data {dir}/twizy_trace_energy.json "
                "--out {dir}/twizy_trace_energy.md"
            ),
        ),
        cpu_columns=("cpu_s",),
    ),
    Source(
        "calibration.json",
        "calibration_traversals",
        rerun="file",
        regen=(
            cmd(
                "-m studies.driver.calibration --network monaco --routes 300 --train 1500 --hours 8 9 --peak 300 "
                "--probe-rounds 1 --seed 0 --data {dir}/calibration.json --out {dir}/calibration_traversals.md"
            ),
        ),
        cpu_columns=("cpu_s",),
        cpu_note="the superseded per-traversal calibration study (a SUMO day on Monaco, produced at commit f62f65a "
        "with the paper's Eq. 8 prior, which it asks for by name): regenerated, its per-trip numbers not keyed "
        "rows, nothing compared; its recorded cpu_s",
    ),
    *(
        Source(
            f"trip_logs_known_truth{suffix}",
            "trip_logs_known_truth",
            key=key,
            excluded={"cpu_s": TIMING},
            commands_file="trip_logs_known_truth_commands.txt",
            rerun="file" if key else "",
            regen=KNOWN_TRUTH_REGEN if key else (),
            why="" if key else "the commands behind the known-truth rows (no rows); the regeneration writes it again",
            cpu_columns=cols,
            cpu_extra_s=extra,
            cpu_note=note,
        )
        for suffix, key, cols, extra, note in (
            (
                ".csv",
                ("network", "condition", "n_train", "seed", "model"),
                (),
                1000.0,
                "from the study's printed CPU per cell at cfbd129 (not recorded per row; one worker on a loaded "
                "machine): monaco cells 226 CPU s (N = 1000 67, N = 10 0.7 and N = 100 7.2 each), luxembourg cells "
                "646 CPU s (N = 1000 272, N = 10 1.4 and N = 100 17.3 each), plus SUMO's two runs per network "
                "(~11 CPU s printed), matching (~6) and the floors; ~1,000 CPU s",
            ),
            ("_bias.csv", ("network", "trip"), (), 0.0, WITH_KNOWN_TRUTH),
            ("_floor.csv", ("network", "row", "n_train"), (), 0.0, WITH_KNOWN_TRUTH),
            ("_coverage.csv", ("network", "n_train", "seed"), (), 0.0, WITH_KNOWN_TRUTH),
            ("_matching.csv", ("network", "condition", "trip"), ("cpu_s",), 0.0, "the map matching's recorded cpu_s"),
            ("_commands.txt", (), (), 0.0, ""),
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
