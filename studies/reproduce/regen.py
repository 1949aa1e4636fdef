"""The commands that regenerate the committed data files from scratch (:mod:`studies.reproduce.table`'s ``regen``).

Each command is a tuple of ``python`` arguments; ``{dir}`` is the folder the regeneration writes into, ``{raw}`` the
folder of the row re-runs' raw runs (shared, so a study's runs are made once, by whichever comes first).  The
commands are the studies' own (as their pages and commands files name them) with their outputs sent to ``{dir}``.
"""

from __future__ import annotations


def cmd(text: str) -> tuple[str, ...]:
    """A command line (``python`` arguments) as the table stores it."""
    return tuple(text.split())


_SUMO_DAY = (
    "--horizon 500 --env-param hours=8-9 --env-param peak_per_hour=300 --env-param min_samples=3 "
    "--env-param max_probe_rounds=1 --env-param probe_turns=true"
)
_SUMO_OUT = (
    "--runs {raw}/sumo_bandit_finals.csv --workers 1 --data {dir}/sumo_bandit_finals.csv "
    "--meta {dir}/sumo_bandit_meta.json --extra-data {dir} --out {dir}/sumo_bandit.md"
)
#: the SUMO bandit study from scratch: the replay runs (in the folder the row re-runs use: made once), their final
#: routes driven live, the Luxembourg timing, the page
SUMO_BANDIT_REGEN = (
    *(
        cmd(
            f"-m studies.sumo_bandit.run --networks {net} --routes A B --models bi gp-exact --policies ts bucb ucb "
            f"--arms edge turn --seeds 10 {_SUMO_DAY} {_SUMO_OUT}"
        )
        for net in ("monaco", "luxembourg")
    ),
    *(
        cmd(
            f"-m studies.sumo_bandit.live --runs {{raw}}/sumo_bandit_finals.csv --network {net} --routes A B "
            "--slots 6 --data {dir} --meta {dir}/sumo_bandit_meta.json"
        )
        for net in ("monaco", "luxembourg")
    ),
    cmd(
        "-m studies.sumo_bandit.run --report-only --data {dir}/sumo_bandit_finals.csv "
        "--meta {dir}/sumo_bandit_meta.json --extra-data {dir} --out {dir}/sumo_bandit.md"
    ),
)
WITH_SUMO_BANDIT = "written by the sumo_bandit page's regeneration (its CPU counted with sumo_bandit_live_trips.csv)"
SUMO_LIVE_REGEN = (
    *(
        cmd(
            f"-m studies.sumo_live_routes.run --data {{dir}} collect --network {net} --ods {ods} --times {t} "
            "--snapshots 24 --min-km 1 --max-km 3 --seed 0"
        )
        for net, ods, t in (("luxembourg", 45, 1), ("luxembourg", 45, 2), ("monaco", 50, 2))
    ),
    *(cmd(f"-m studies.sumo_live_routes.run --data {{dir}} arms --network {net}") for net in ("luxembourg", "monaco")),
    cmd("-m studies.sumo_live_routes.run --data {dir} --report-only --doc {dir}/sumo_live_routes.md"),
)
_KT = (
    "--train 1000 --test 60 --repeats 10 --seeds 20 --conditions exact --noise-fracs 0.25 "
    "--prior-fracs 0.03125,0.0625,0.125,0.25 --trip-effect-fit"
)
_KT_FILES = ("rows", ""), ("matching", "_matching"), ("coverage", "_coverage"), ("bias", "_bias"), ("floor", "_floor")
#: the known-truth study from scratch (its commands file and the floor rows' commands), collected into {dir}
KNOWN_TRUTH_REGEN = (
    cmd(
        f"studies/trip_logs/known_truth.py --network monaco --ns 1000,10,100 {_KT} --workers 2 --out {{dir}}/kt_monaco"
    ),
    cmd(
        f"studies/trip_logs/known_truth.py --network luxembourg --ns 1000,10,100 {_KT} --workers 2 "
        "--out {dir}/kt_luxembourg"
    ),
    *(
        cmd(
            f"-m studies.trip_logs.known_truth_floor --network {net} --out {{dir}}/kt_{net} --train 1000 --test 60 "
            "--repeats 10 --fit-ns 10,100,1000"
        )
        for net in ("monaco", "luxembourg")
    ),
    cmd(
        "-m studies.trip_logs.known_truth_report --collect {dir}/kt_monaco {dir}/kt_luxembourg "
        + " ".join(f"--{arg} {{dir}}/trip_logs_known_truth{suffix}.csv" for arg, suffix in _KT_FILES)
        + " --commands {dir}/trip_logs_known_truth_commands.txt --output {dir}/trip_logs_known_truth.md"
    ),
)
WITH_KNOWN_TRUTH = "written by the known-truth regeneration (its CPU counted with trip_logs_known_truth.csv)"
ENERGY_VALIDATION_REGEN = (
    cmd("-m studies.energy_validation.energy_validation --data {dir} --out {dir}/energy_validation.md"),
)
CHARGING_REGEN = (cmd("-m studies.charging.charging_study --data {dir} --out {dir}/charging.md"),)
