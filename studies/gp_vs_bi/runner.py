"""GP versus BI without an oracle kernel (issue 24, items 2 and 3): the study's design and its per-seed data.

The run variants of ``studies/gp_vs_bi/run.py`` (:class:`Variant`: model, policy, ``--model-param`` values,
environment ``max_cv``, seed group and stage; :data:`VARIANTS`), the paired comparisons the report tests
(:data:`COMPARISONS`), the seed counts of the design (:data:`DESIGN`), and the per-seed table of final cumulative
regrets (``docs/results/data/gp_vs_bi_finals.csv``, columns :data:`FIELDS`): read (:func:`read_csv`), merged by route,
run and seed (:func:`merge`) and written (:func:`write_csv`), with the study's recorded commands
(:func:`recorded_commands`).  The report built from the table alone is :mod:`studies.gp_vs_bi.report`.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: the routes of issue 24's design, in the report's order
ROUTES = ("synthetic:2000:0:A", "monaco:A", "monaco:B", "luxembourg:A", "luxembourg:B")
#: the environment's cap on the reduced costs' coefficient of variation: main runs, sensitivity values
MAX_CV_MAIN = 1.0
MAX_CVS = (0.5, 2.0)


@dataclass(frozen=True)
class Variant:
    """One run name: model, policy, ``--model-param`` values, environment ``max_cv``, seed group and stage.

    ``group``: which seed count it uses (``main``, ``ablation``, ``ucb``, ``sensitivity``); stage 0: not run any
    more (rows kept in the CSV from an earlier definition, see :data:`LEGACY`).
    """

    name: str
    model: str
    policy: str
    params: tuple[tuple[str, object], ...]
    group: str
    stage: int
    max_cv: float = MAX_CV_MAIN

    @property
    def init(self) -> str:
        """The prior's initialisation the run used (``default``, ``oracle``; a legacy run's own name)."""
        return LEGACY.get(self.name, str(dict(self.params).get("init", "default")))

    @property
    def refits(self) -> str:
        """When the GP refits its hyper-parameters, in words (the report's column)."""
        if not self.model.startswith("gp"):
            return "-- (conjugate)"
        first = int(dict(self.params).get("refit_first", 16))  # type: ignore[call-overload]
        return "never" if first == 0 else f"rounds {first}, {2 * first}, {4 * first}, ..."


def cv_name(v: float) -> str:
    """The suffix of a sensitivity run's name for environment ``max_cv = v`` (``CV0.5``)."""
    return f"CV{v:g}"


VARIANTS = (
    Variant("BI-TS", "bi", "ts", (), "main", 1),
    Variant("GP-EXACT-TS", "gp-exact", "ts", (), "main", 1),
    Variant("GP-EXACT-TS-ORACLE", "gp-exact", "ts", (("init", "oracle"),), "ablation", 2),
    Variant("BI-TS-ORACLE", "bi", "ts", (("init", "oracle"),), "ablation", 2),
    Variant("GP-EXACT-TS-NOREFIT", "gp-exact", "ts", (("refit_first", 0),), "ablation", 2),
    Variant("GP-EXACT-TS-ORACLE-V1", "gp-exact", "ts", (("init", "oracle"),), "ablation", 0),
    Variant("BI-BUCB", "bi", "bucb", (), "main", 3),
    Variant("GP-EXACT-BUCB", "gp-exact", "bucb", (), "main", 3),
    Variant("BI-UCB", "bi", "ucb", (), "ucb", 4),
    Variant("GP-EXACT-UCB", "gp-exact", "ucb", (), "ucb", 4),
    *(
        Variant(f"{m}-TS-{cv_name(cv)}", m.lower(), "ts", (), "sensitivity", 5, cv)
        for cv in MAX_CVS
        for m in ("BI", "GP-EXACT")
    ),
)
BY_NAME = {v.name: v for v in VARIANTS}
#: runs of an earlier definition, kept in the CSV (raw runs deleted): name -> the init they used
LEGACY = {"GP-EXACT-TS-ORACLE-V1": "oracle-v1"}

#: (A, B, what the comparison answers): differences A - B of final regret, seed by seed
COMPARISONS = (
    ("GP-EXACT-TS", "BI-TS", "GP-TS (learned) vs BI-TS"),
    ("GP-EXACT-BUCB", "BI-BUCB", "GP-BUCB (learned) vs BI-BUCB"),
    ("GP-EXACT-UCB", "BI-UCB", "GP-UCB (learned) vs BI-UCB"),
    ("GP-EXACT-TS-ORACLE", "GP-EXACT-TS", "oracle init vs default init (GP-TS)"),
    ("BI-TS-ORACLE", "BI-TS", "oracle init vs default init (BI-TS)"),
    ("GP-EXACT-TS-ORACLE", "BI-TS-ORACLE", "GP-TS vs BI-TS, both oracle init"),
    ("GP-EXACT-TS-NOREFIT", "GP-EXACT-TS", "refits off vs on (GP-TS, default init)"),
    ("GP-EXACT-TS-ORACLE", "BI-TS", "GP-TS (oracle init) vs BI-TS"),
    ("GP-EXACT-TS-NOREFIT", "BI-TS", "GP-TS (default init, no refits) vs BI-TS"),
    ("GP-EXACT-TS-ORACLE-V1", "GP-EXACT-TS", "oracle-v1 init vs default init (GP-TS)"),
    ("GP-EXACT-TS-ORACLE-V1", "BI-TS", "GP-TS (oracle-v1 init) vs BI-TS"),
    *((f"GP-EXACT-TS-{cv_name(cv)}", f"BI-TS-{cv_name(cv)}", f"GP-TS vs BI-TS at max_cv = {cv:g}") for cv in MAX_CVS),
)

#: the columns of the per-seed table, in order; ``commit``: the commit that recorded the row (the checkout's, with
#: ``+dirty`` if its evroute/ or studies/ had uncommitted changes; rows older than the column: ``git blame``'s,
#: :mod:`studies.reproduce.provenance`)
FIELDS = (
    "route",
    "run",
    "model",
    "policy",
    "init",
    "refit_first",
    "max_cv",
    "horizon",
    "seed",
    "final_regret_wh",
    "reference",
    "commit",
)

#: seeds per group in issue 24's design (the coverage table reports what finished against these)
DESIGN = {"main": 20, "ablation": 10, "ucb": 10, "sensitivity": 10}


def merge(old: Sequence[Mapping[str, object]], new: Sequence[dict[str, object]]) -> list[dict[str, object]]:
    """``old`` rows updated by ``new`` ones (same route, run and seed), in the order route, variant, seed.

    A new row with the same final regret as its old row keeps the old row's ``commit`` (a re-collected raw run
    that an earlier checkout made is still that checkout's row)."""

    def key(r: Mapping[str, object]) -> tuple[str, str, int]:
        return str(r["route"]), str(r["run"]), int(str(r["seed"]))

    rows = {key(r): {**r} for r in old}
    for r in new:
        prev = rows.get(key(r))
        same = prev is not None and prev.get("commit") and str(prev["final_regret_wh"]) == str(r["final_regret_wh"])
        rows[key(r)] = {**r, "commit": prev["commit"]} if same and prev is not None else {**r}
    for r in rows.values():
        r.setdefault("max_cv", f"{BY_NAME[str(r['run'])].max_cv:g}")
    order = {name: i for i, name in enumerate(BY_NAME)}
    rk = {r: i for i, r in enumerate(ROUTES)}
    return [rows[k] for k in sorted(rows, key=lambda k: (rk.get(k[0], len(rk)), k[0], order[k[1]], k[2]))]


def write_csv(path: Path, rows: Sequence[dict[str, object]]) -> None:
    """Write the per-seed table ``rows`` (columns :data:`FIELDS`) to ``path`` atomically, creating its folder."""
    import io

    from evroute.io import atomic_write_text

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, buf.getvalue())


def read_csv(path: Path) -> list[dict[str, str]]:
    """The rows of the per-seed table at ``path`` (every value a string, as stored)."""
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def recorded_commands(path: Path) -> list[str]:
    """The study commands recorded in ``path`` (one per line), in order; none if it does not exist."""
    if not path.is_file():
        return []
    return [ln for ln in path.read_text().splitlines() if ln.strip()]
