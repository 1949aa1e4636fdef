"""The table's entries of the smaller pages (:data:`OTHER_SOURCES`): turn coverage, the round benchmark with turns,
map matching, the BO timing, charging and the energy validation.

Each is regenerated whole (``rerun="file"``) by its study's command and compared row by row at HEAD; the fields
are those of :class:`~studies.reproduce.source.Source` (described in :mod:`studies.reproduce.table`).  Their order
here is their order in :data:`studies.reproduce.table.SOURCES` (``--list`` prints them in that order).
"""

from __future__ import annotations

from studies.reproduce.regen import CHARGING_REGEN, ENERGY_VALIDATION_REGEN, cmd
from studies.reproduce.source import TIMING, Source

#: the entries, in :data:`studies.reproduce.table.SOURCES`'s order
OTHER_SOURCES: tuple[Source, ...] = (
    *(
        Source(
            f"{name}.json",
            name,
            key=("network",),
            rows="rows",
            excluded={"cpu_s": TIMING, "wall_s": TIMING},
            rerun="file",
            regen=(
                cmd(
                    "-m studies.sumo.turn_coverage --networks monaco luxembourg --hours 8-9 --peak 300 "
                    f"--min-samples 3 --probe-rounds 1{flag} --data {{dir}}/{name}.json --markdown {{dir}}/{name}.md"
                ),
            ),
            cpu_columns=("cpu_s",),
        )
        for name, flag in (("turn_coverage", ""), ("turn_coverage_probe_turns", " --probe-turns"))
    ),
    Source(
        "bench_round_turns.json",
        "bench_round_turns",
        key=("network", "arms_kind"),
        rows="rows",
        excluded={
            c: TIMING for c in ("posterior_ms", "index_ms", "oracle_ms", "update_ms", "round_ms", "round_cpu_ms")
        },
        rerun="file",
        regen=(
            cmd(
                "-m studies.bench.bench_round --networks luxembourg --arms edge,turn --rounds 100 --repeats 3 "
                "--warmup 10 --data {dir}/bench_round_turns.json --markdown {dir}/bench_round_turns.md"
            ),
        ),
        cpu_extra_s=120.0,
        cpu_note="estimated: 2 x 330 rounds of about 0.1 s on Luxembourg plus its set-up; the timings (measured on "
        "the idle machine at a5943c5, the page says so) are re-measured, never compared; edges, turns and arms are "
        "compared",
    ),
    Source(
        "map_matching_compare.json",
        "map_matching_compare",
        key=("trip",),
        rows="trips",
        excluded={"hmm_cpu_s": TIMING, "sumolib_cpu_s": TIMING},
        rerun="file",
        regen=(
            cmd(
                "-m studies.trip_logs.compare_matchers --network monaco --trips 20 --min-route-m 1000 "
                "--gps-sigma-m 5 --delta-m 30 --data {dir}/map_matching_compare.json "
                "--out {dir}/map_matching_compare.md"
            ),
        ),
        cpu_columns=("setup_cpu_s", "hmm_cpu_s", "sumolib_cpu_s"),
        cpu_extra_s=60.0,
        cpu_note="the recorded set-up and matching CPU plus the 20 SUMO trips (estimated 60 CPU s)",
    ),
    Source(
        "bo_timing.json",
        "bo_timing",
        rerun="file",
        regen=(
            cmd(
                "-m studies.bo.bo_timing --data {dir}/bo_timing.json --out {dir}/bo_timing.md --fig {dir}/bo_timing.png"
            ),
        ),
        timing=True,
        cpu_columns=("seconds",),
        cpu_extra_s=30.0,
        cpu_note="every number a timing (CPU seconds per iteration): re-measured, never compared; the timed "
        "iterations (3 repeats, their median recorded: x 3) plus set-up (estimated 30 s)",
    ),
    *(
        Source(
            name,
            "charging",
            key=key,
            excluded=excl,
            rerun="file",
            command="OMP_NUM_THREADS=1 python -m studies.charging.charging_study",
            regen=CHARGING_REGEN,
            inputs=("sumo_live_routes_correlation.csv",),  # its trip correlation rho
            cpu_columns=cols,
            cpu_extra_s=extra,
            cpu_note=note,
        )
        for name, key, excl, cols, extra, note in (
            (
                "charging_validation.csv",
                ("plan_rho", "world_rho", "delta", "trip"),
                {},
                (),
                300.0,
                "estimated: the Monte-Carlo worlds of validation and buffer, not recorded (300 CPU s)",
            ),
            ("charging_buffer.csv", ("buffer", "trip"), {}, (), 0.0, "with charging_validation.csv"),
            (
                "charging_latency.csv",
                ("chargers", "max_stops", "trip"),
                {c: TIMING for c in ("legs_cpu_s", "search_cpu_s", "total_cpu_s", "total_wall_s", "load1")},
                ("total_cpu_s",),
                0.0,
                "the recorded total_cpu_s",
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
            regen=ENERGY_VALIDATION_REGEN,
            cpu_extra_s=extra,
            cpu_note=note,
        )
        for name, key, extra, note in (
            ("energy_validation_cycles.csv", ("vehicle", "cycle"), 60.0, "estimated: FASTSim on 8 cycles (60 CPU s)"),
            ("energy_validation_twizy.csv", ("trip",), 0.0, "with energy_validation_cycles.csv (7 trips)"),
            (
                "energy_validation_sumo.csv",
                ("network", "trip"),
                1300.0,
                "estimated: 370 single-car SUMO drives at travel_time_validation's 3.1 CPU s a drive, and FASTSim on "
                "each trace; needs FASTSim (evroute[validation])",
            ),
        )
    ),
)
