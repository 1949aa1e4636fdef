"""The page of the misspecification study (``docs/results/misspecification.md``), built from the per-seed table alone.

:func:`build_report` turns the rows of ``docs/results/data/misspecification_finals.csv``
(:mod:`studies.misspecification.design`) and the recorded commands into Markdown: per world the final regret of every
method with its tails (median, 90th percentile, worst seed, failure rate under the rule fixed in advance), the paired
differences GP-TS minus each baseline (two-sided paired t-tests, Holm-adjusted over the whole page as one family, the
per-comparison 95 % t-interval and the Bonferroni simultaneous interval, which holds for all comparisons at once at
family-wise level 5 %) and the answer, every sentence computed from the rows (statistics: :mod:`evroute.stats`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evroute.stats import PairedDifference, holm_adjust, mean_se, paired_differences, t_interval, t_test_pvalue
from studies.misspecification.design import COMPARISONS, FAILURE_RATIO, METHODS, WORLDS

#: family-wise error rate of the Holm procedure over every comparison on the page
ALPHA = 0.05

Finals = dict[tuple[str, str], dict[int, float]]


@dataclass(frozen=True)
class Tails:
    """Tail summary of one method in one world over the seeds every method finished (Wh)."""

    n: int
    mean: float
    se: float
    median: float
    p90: float
    worst: float
    worst_seed: int
    failures: int


@dataclass(frozen=True)
class Test:
    world: str
    a: str
    b: str
    pd: PairedDifference
    p: float


def finals_of(rows: Sequence[dict[str, str]]) -> Finals:
    """``(world, method) -> {seed: final cumulative regret (Wh)}``."""
    out: Finals = {}
    for r in rows:
        out.setdefault((r["world"], r["method"]), {})[int(r["seed"])] = float(r["final_regret_wh"])
    return out


def common_seeds(finals: Finals, world: str) -> list[int]:
    """Seeds of ``world`` that every method finished (tails and failures are over these only)."""
    sets = [set(finals.get((world, m.name), {})) for m in METHODS]
    return sorted(set.intersection(*sets)) if sets else []


def failures(finals: Finals, world: str, method: str, seeds: Sequence[int]) -> int:
    """Seeds where ``method``'s final regret exceeds :data:`FAILURE_RATIO` times the best method's on that seed."""
    n = 0
    for s in seeds:
        best = min(finals[(world, m.name)][s] for m in METHODS)
        n += int(finals[(world, method)][s] > FAILURE_RATIO * best)
    return n


def tails(finals: Finals, world: str, method: str) -> Tails | None:
    """:class:`Tails` of ``method`` in ``world`` over :func:`common_seeds`; None when no seed is common."""
    seeds = common_seeds(finals, world)
    if not seeds:
        return None
    v = np.array([finals[(world, method)][s] for s in seeds])
    m, se = mean_se(v)
    i = int(np.argmax(v))
    return Tails(
        len(seeds),
        m,
        se,
        float(np.median(v)),
        float(np.percentile(v, 90)),
        float(v[i]),
        seeds[i],
        failures(finals, world, method, seeds),
    )


def run_tests(finals: Finals) -> tuple[list[Test], list[float]]:
    """Every comparison of every world with at least two paired seeds, and the Holm-adjusted p-values."""
    tests = []
    for w in WORLDS:
        for a, b in COMPARISONS:
            fa, fb = finals.get((w.name, a), {}), finals.get((w.name, b), {})
            if len(set(fa) & set(fb)) >= 2:
                pd = paired_differences(fa, fb)
                tests.append(Test(w.name, a, b, pd, t_test_pvalue(pd.diffs)))
    return tests, holm_adjust([t.p for t in tests])


def verdict(t: Test, adj: float) -> str:
    if adj <= ALPHA:
        return f"{t.a} {'lower' if t.pd.mean < 0 else 'higher'}"
    return "no significant difference"


def _f(x: float, digits: int = 1) -> str:
    return "--" if math.isnan(x) else f"{x:,.{digits}f}"


def _list(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "none"


def build_report(rows: Sequence[dict[str, str]], commands: Sequence[str]) -> list[str]:
    """The Markdown lines of ``misspecification.md`` from the per-seed rows and the study's commands."""
    finals = finals_of(rows)
    tests, adjusted = run_tests(finals)
    m = len(tests)
    horizons = sorted({r["horizon"] for r in rows})
    nets = sorted({f"{r['network']} route {r['route']}" for r in rows})
    commits = sorted({r["commit"] for r in rows})
    lines = ["# Learning outside its own assumptions: GP-TS against strong baselines in misspecified worlds", ""]
    lines += [f"Command: `{c}`" for c in commands] or ["Command: (none recorded)"]
    lines += [
        "",
        "Rebuild from the committed data: `python -m studies.misspecification.run --report-only` (reads "
        "[`data/misspecification_finals.csv`](data/misspecification_finals.csv) and "
        "[`data/misspecification_commands.txt`](data/misspecification_commands.txt)); every number and sentence "
        "below is computed from that table.",
        "",
        f"Rows: {len(rows)}, on {_list(nets)}, horizon {_list(horizons)} rounds, made at "
        f"commit{'s' if len(commits) > 1 else ''} {_list([f'`{c}`' for c in commits])}.",
        "",
        "**Question.** With every model's DEFAULT prior (fixed from the physics and the network, "
        "`evroute.models.builders.default_prior`, never from an environment) and its noise learnt, where does the "
        "exact GP with Thompson sampling (GP-TS) beat strong baselines, and where not, in worlds it did not come from?",
        "",
        "**Worlds** (`--env misspecified`: every seed draws its own generating parameters from wide ranges, "
        "`evroute.environments.misspecified.RANGES`; seed s is the same world for every method):",
        "",
        "| world | environment parameters | what it tests |",
        "|---|---|---|",
    ]
    for w in WORLDS:
        lines.append(f"| {w.name} | {', '.join(f'{k}={v}' for k, v in w.params)} | {w.what} |")
    lines += ["", "**Methods** (policy: Thompson sampling):", "", "| method | model | learns |", "|---|---|---|"]
    for meth in METHODS:
        extra = ", ".join(f"{k}={v}" for k, v in meth.params)
        lines.append(f"| {meth.name} | `{meth.model}`{' (' + extra + ')' if extra else ''} | {meth.learns} |")
    lines += [
        "",
        f"**Failure** (fixed before any run): a method fails on a seed when its final regret exceeds {FAILURE_RATIO:g} "
        "times the best of the four methods' on that seed.  Tails are over the seeds every method finished; the 90th "
        "percentile interpolates linearly between order statistics.",
        "",
    ]
    lines += _answer(finals, tests, adjusted)
    lines += ["", "## Final cumulative regret and tails (Wh)", ""]
    for w in WORLDS:
        lines += [f"### {w.name}: {w.what}", ""]
        lines += [
            "| method | seeds | mean +- s.e. | median | 90th percentile | worst (seed) | failures |",
            "|---|---|---|---|---|---|---|",
        ]
        for meth in METHODS:
            tl = tails(finals, w.name, meth.name)
            if tl is None:
                got = len(finals.get((w.name, meth.name), {}))
                note = "not run" if got == 0 else "no seed finished by every method"
                lines.append(f"| {meth.name} | {got} | {note} | -- | -- | -- | -- |")
                continue
            lines.append(
                f"| {meth.name} | {tl.n} | {_f(tl.mean)} +- {_f(tl.se)} | {_f(tl.median)} | {_f(tl.p90)} | "
                f"{_f(tl.worst)} ({tl.worst_seed}) | {tl.failures} of {tl.n} |"
            )
        lines.append("")
    lines += [
        "## Paired differences GP-TS minus baseline (Wh of final regret)",
        "",
        f"Two-sided paired t-tests over the seeds both finished, Holm-adjusted over all {m} comparisons on the page; "
        f"95 % t-interval per comparison and the Bonferroni simultaneous interval (level 1 - {ALPHA:g}/{m}); negative: "
        "GP-TS lower.",
        "",
        "| world | A - B | seeds | mean | 95 % interval | simultaneous interval | Holm p | A lower in | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t, adj in zip(tests, adjusted, strict=True):
        lo, hi = t.pd.low, t.pd.high
        slo, shi = t_interval(t.pd.diffs, 1.0 - ALPHA / max(m, 1))
        lines.append(
            f"| {t.world} | {t.a} - {t.b} | {t.pd.n} | {_f(t.pd.mean)} | [{_f(lo)}, {_f(hi)}] | "
            f"[{_f(slo)}, {_f(shi)}] | {adj:.3g} | {t.pd.k_lower} of {t.pd.n} | {verdict(t, adj)} |"
        )
    return lines


def _answer(finals: Finals, tests: Sequence[Test], adjusted: Sequence[float]) -> list[str]:
    """The answer: per baseline, the worlds where GP-TS is significantly lower / higher / neither; then the tails."""
    out = ["## Answer", ""]
    if not tests:
        return [*out, "No world has two paired seeds yet: nothing to answer."]
    for _, b in COMPARISONS:
        mine = [(t, adj) for t, adj in zip(tests, adjusted, strict=True) if t.b == b]
        lower = [t.world for t, adj in mine if adj <= ALPHA and t.pd.mean < 0]
        higher = [t.world for t, adj in mine if adj <= ALPHA and t.pd.mean > 0]
        neither = [t.world for t, adj in mine if adj > ALPHA]
        out.append(
            f"- Against {b}: GP-TS has significantly lower final regret in {_list(lower)}; significantly higher in "
            f"{_list(higher)}; no significant difference in {_list(neither)} (Holm, family-wise {ALPHA:g})."
        )
    for w in WORLDS:
        tl = {meth.name: tails(finals, w.name, meth.name) for meth in METHODS}
        if any(v is None for v in tl.values()):
            continue
        worst = max(tl, key=lambda k: (tl[k].worst, k))  # type: ignore[union-attr]
        fails = {k: v.failures for k, v in tl.items() if v is not None}
        most = max(fails.values())
        gp = tl["GP-TS"]
        assert gp is not None
        out.append(
            f"- Tails in {w.name}: GP-TS fails on {gp.failures} of {gp.n} seeds (90th percentile {_f(gp.p90)} Wh, "
            f"worst {_f(gp.worst)} Wh on seed {gp.worst_seed}); the most failures: "
            f"{_list([k for k, v in fails.items() if v == most])} ({most} of {gp.n}); the single worst seed of any "
            f"method: {worst} ({_f(tl[worst].worst)} Wh)."  # type: ignore[union-attr]
        )
    return out
