"""The misspecification study's design (issue 38, items 1-3) and its per-seed table.

Worlds (:data:`WORLDS`: the ``misspecified`` environment's truth and noise families, generating parameters drawn per
seed, :mod:`evroute.environments.misspecified`), methods (:data:`METHODS`: the exact GP and three baselines, every
one with the DEFAULT prior of :func:`evroute.models.builders.default_prior` and its noise learnt where the model can),
the comparisons the report tests (:data:`COMPARISONS`), the failure rule fixed before any run (:data:`FAILURE_RATIO`)
and the per-seed CSV (:data:`FIELDS`; :func:`read_csv`, :func:`merge`, :func:`write_csv`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: the network and route of every run: a small synthetic city (392 edges) so that the whole grid fits ~25 CPU minutes
NETWORK, ROUTE = "synthetic:400:0", "A"
HORIZON = 150
SEEDS = 20
#: a seed FAILS for a method when its final regret exceeds this multiple of the best method's on that seed (fixed
#: before any run, issue 38: "e.g. final regret > 2x the best policy's on that seed")
FAILURE_RATIO = 2.0


@dataclass(frozen=True)
class World:
    """One cell of the grid: a name, its ``--env-param`` values and what it tests."""

    name: str
    params: tuple[tuple[str, object], ...]
    what: str


WORLDS = (
    World("gp-gauss", (("truth", "gp"), ("noise", "gaussian")), "the GP's own family, parameters drawn per seed"),
    World("gp-t3", (("truth", "gp"), ("noise", "student-t"), ("df", 3.0)), "GP truth, Student-t noise (3 d.o.f.)"),
    World("gp-trip", (("truth", "gp"), ("noise", "trip"), ("trip_share", 0.5)), "GP truth, trip-correlated noise"),
    World("road-gauss", (("truth", "road-class"), ("noise", "gaussian")), "road-class and junction truth"),
    World(
        "road-trip", (("truth", "road-class"), ("noise", "trip"), ("trip_share", 0.5)), "road-class truth, trip noise"
    ),
)


@dataclass(frozen=True)
class Method:
    """One learner: model, policy and ``--model-param`` values, and how it learns."""

    name: str
    model: str
    policy: str
    params: tuple[tuple[str, object], ...]
    learns: str


METHODS = (
    Method("GP-TS", "gp-exact", "ts", (("learn_noise", True),), "kernel and noise by ML-II at rounds 16, 32, 64, 128"),
    Method("BI-TS", "bi", "ts", (), "nothing: the default prior's variances"),
    Method("BI-EB-TS", "bi", "ts", (("refit_first", 16),), "noise and prior variance by empirical Bayes, same rounds"),
    Method(
        "BLR-TS", "blr", "ts", (("refit_first", 16),), "shared feature coefficients; variances by ML-II, same rounds"
    ),
)
BY_NAME = {m.name: m for m in METHODS}
#: (A, B): paired differences A - B of final regret, per world
COMPARISONS = tuple(("GP-TS", m.name) for m in METHODS if m.name != "GP-TS")

#: the columns of the per-seed table
FIELDS = ("world", "method", "model", "policy", "network", "route", "horizon", "seed", "final_regret_wh", "commit")


def merge(old: Sequence[Mapping[str, object]], new: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """``old`` rows updated by ``new`` ones (same world, method and seed), in design order."""
    rows = {(str(r["world"]), str(r["method"]), int(str(r["seed"]))): dict(r) for r in [*old, *new]}
    wk = {w.name: i for i, w in enumerate(WORLDS)}
    mk = {m.name: i for i, m in enumerate(METHODS)}
    return [rows[k] for k in sorted(rows, key=lambda k: (wk.get(k[0], len(wk)), k[0], mk.get(k[1], len(mk)), k))]


def write_csv(path: Path, rows: Sequence[Mapping[str, object]]) -> None:
    """Write ``rows`` (columns :data:`FIELDS`) to ``path`` atomically."""
    from evroute.io import atomic_write_text

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, buf.getvalue())


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))
