"""The report of the GP versus BI study (``docs/results/gp_vs_bi.md``), built from the per-seed table alone.

:func:`build_report` turns the rows of ``docs/results/data/gp_vs_bi_finals.csv`` (:mod:`studies.gp_vs_bi.runner`)
and the study's recorded commands into the Markdown page: seeds finished against the design, per route the final
regrets of every run and the paired differences of :data:`~studies.gp_vs_bi.runner.COMPARISONS` (two-sided
paired t-tests over the seeds both runs finished, Holm-adjusted over the whole page as one family, with the
per-comparison 95 % t-interval and the Bonferroni simultaneous one), the ``max_cv`` sensitivity and the plain
answers.  Every number and sentence is computed from the rows (statistics: :mod:`evroute.stats`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evroute.stats import (
    PairedDifference,
    format_mean_se,
    holm_adjust,
    mean_se,
    paired_differences,
    t_interval,
    t_test_pvalue,
)
from studies.gp_vs_bi.runner import (
    COMPARISONS,
    DESIGN,
    LEGACY,
    MAX_CV_MAIN,
    MAX_CVS,
    ROUTES,
    VARIANTS,
    cv_name,
)

#: family-wise error rate of the Holm procedure over every comparison in the report
ALPHA = 0.05


@dataclass(frozen=True)
class Test:
    """One paired comparison on one route, its two-sided t-test p-value and (filled later) Holm-adjusted p."""

    route: str
    a: str
    b: str
    label: str
    pd: PairedDifference
    p: float


def verdict(a: str, b: str, mean: float, adj_p: float) -> str:
    """The sentence of one comparison, from its mean difference and Holm-adjusted p-value."""
    if math.isnan(adj_p):
        return f"fewer than 2 paired seeds: no test of {a} against {b}"
    if adj_p <= ALPHA:
        return f"{a} has {'lower' if mean < 0 else 'higher'} regret than {b} (Holm-adjusted p <= {ALPHA})"
    return f"no significant difference between {a} and {b} at family-wise level {ALPHA} (Holm)"


def finals_of(rows: Sequence[dict[str, str]]) -> dict[tuple[str, str], dict[int, float]]:
    """``(route, run) -> {seed: final cumulative regret (Wh)}`` of the per-seed rows."""
    out: dict[tuple[str, str], dict[int, float]] = {}
    for r in rows:
        out.setdefault((r["route"], r["run"]), {})[int(r["seed"])] = float(r["final_regret_wh"])
    return out


def run_tests(finals: dict[tuple[str, str], dict[int, float]], routes: Sequence[str]) -> tuple[list[Test], list[float]]:
    """Every comparison with at least one paired seed, and the Holm-adjusted p-values over all of them."""
    tests = []
    for route in routes:
        for a, b, label in COMPARISONS:
            fa, fb = finals.get((route, a), {}), finals.get((route, b), {})
            if set(fa) & set(fb):
                pd = paired_differences(fa, fb)
                tests.append(Test(route, a, b, label, pd, t_test_pvalue(pd.diffs)))
    return tests, holm_adjust([t.p for t in tests])


def simultaneous(pd: PairedDifference, m: int) -> tuple[float, float]:
    """Bonferroni simultaneous interval of the mean difference: the t-interval at level ``1 - ALPHA / m``."""
    return t_interval(pd.diffs, 1.0 - ALPHA / max(m, 1))


def coverage_lines(finals: dict[tuple[str, str], dict[int, float]], routes: Sequence[str], sens: set[str]) -> list[str]:
    """Seeds finished per route and run group against the design (:data:`DESIGN`)."""
    groups = ("main", "ablation", "ucb", "sensitivity")
    head = "| route | " + " | ".join(
        f"{g} ({', '.join(v.name for v in VARIANTS if v.group == g and v.stage)}; design {DESIGN[g]} seeds)"
        for g in groups
    )
    lines = [head + " |", "|---" * (len(groups) + 1) + "|"]
    for route in ROUTES:
        cells = []
        for g in groups:
            names = [v.name for v in VARIANTS if v.group == g and v.stage]
            if g == "sensitivity" and route not in sens:
                cells.append("-- (not planned)" if sens else "not run")
                continue
            got = [len(finals.get((route, n), {})) for n in names]
            cells.append("not run" if not any(got) else " / ".join(str(k) for k in got))
        lines.append(f"| {route} | " + " | ".join(cells) + " |")
    extra = [r for r in routes if r not in ROUTES]
    if extra:
        lines += ["", f"Other routes in the data: {', '.join(extra)}."]
    return lines


def build_report(rows: Sequence[dict[str, str]], commands: Sequence[str]) -> list[str]:
    """The Markdown of ``gp_vs_bi.md`` from the per-seed rows alone (``commands``: the study's commands)."""
    routes = list(dict.fromkeys(r["route"] for r in rows))
    finals = finals_of(rows)
    horizons = sorted({r["horizon"] for r in rows})
    refs = sorted({r["reference"] for r in rows})
    sens = {r["route"] for r in rows if float(r.get("max_cv") or MAX_CV_MAIN) != MAX_CV_MAIN}
    tests, adjusted = run_tests(finals, routes)
    m_tests = sum(not math.isnan(p) for p in adjusted)
    legacy = [t for t in tests if t.a in LEGACY]
    lines = [
        "# GP versus BI without an oracle kernel (issue 24, items 2 and 3)",
        "",
        *[f"Command: `{c}`" for c in commands],
        "",
        "Generated by `studies/gp_vs_bi/run.py` from the per-seed data in "
        "[`data/gp_vs_bi_finals.csv`](data/gp_vs_bi_finals.csv) (the study's commands: "
        "[`data/gp_vs_bi_commands.txt`](data/gp_vs_bi_commands.txt)); every number and sentence below is computed "
        "from them.",
        "",
        f"Protocol: consistent environment, elevation potential, T = {', '.join(horizons) or '--'} rounds, "
        f"regret against the exact optimum ({', '.join(refs) or '--'}). GP = exact GP posterior (`gp-exact`). "
        f"Init `default` = the neutral model prior of the code that recorded the row ({prior_text(rows)}); "
        "`oracle` (ablation) = the environment's generating kernel and noise variance and its ACTUAL per-edge "
        "marginal variances after the cap (`min(sigma0^2 v_e, (max_cv r_det(e))^2)`, "
        "`ConsistentEnvironment.marginal_variances`): BI takes them as per-edge prior variances, the GP scales its "
        "kernel per edge so that its prior variances are them. BI runs use the default prior unless named -ORACLE. "
        "Seed s draws the same environment for every run of a route and `max_cv`, so differences are paired by seed. "
        f"Environment `max_cv` = {MAX_CV_MAIN:g} unless a run is named -CV<value>.",
        "",
    ]
    lines += provenance_lines(rows)
    if legacy:
        lines += [
            "`oracle-v1` (runs named -ORACLE-V1, kept from an earlier definition; their raw runs are gone): the "
            "generating kernel and noise with the paper's scalar prior variance `sigma0^2` instead of the actual "
            "(capped) variances, the oracle of commit ed0d7ae.",
            "",
        ]
    lines += [
        f"Coverage against issue 24's design (seeds finished per run; design: {DESIGN['main']} seeds for the TS "
        f"and BUCB pairs, {DESIGN['ucb']} for UCB, {DESIGN['ablation']} for the ablations, {DESIGN['sensitivity']} "
        "for the max_cv sensitivity); only what is listed here was measured:",
        "",
        *coverage_lines(finals, routes, sens),
        "",
        f"Multiple comparisons: every comparison in this file ({m_tests} tests over all routes) is one family; "
        f"two-sided paired t-tests, Holm step-down adjusted, family-wise error rate {ALPHA}. Two intervals of the "
        "mean difference are given: the per-comparison 95 % Student-t interval and the simultaneous one "
        f"(Bonferroni, t-interval at level 1 - {ALPHA}/{m_tests}: all of them hold together with probability "
        f">= {1 - ALPHA:.2f}; Bonferroni is more conservative than Holm, so a comparison can be significant under "
        "Holm while its simultaneous interval still contains 0).",
        "",
    ]
    for route in routes:
        lines += [
            f"## {route}",
            "",
            "Final cumulative regret (Wh), mean +- 1 s.e. over the seeds that finished, and its tail: the median, "
            "the 90th percentile (linear interpolation) and the worst seed:",
            "",
            "| run | model | policy | init | hyper-parameter refits | max_cv | seeds | final regret (Wh) | median "
            "| 90th percentile | worst seed (Wh) |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for v in VARIANTS:
            f = finals.get((route, v.name))
            if f:
                worst = max(f, key=lambda s: f[s])
                vals = sorted(f.values())
                lines.append(
                    f"| {v.name} | {v.model} | {v.policy} | {v.init} | {v.refits} | {v.max_cv:g} | {len(f)} | "
                    f"{format_mean_se(*mean_se(f.values()), 1)} | {float(np.median(vals)):.1f} | "
                    f"{float(np.percentile(vals, 90)):.1f} | {f[worst]:.1f} (seed {worst}) |"
                )
        lines += [
            "",
            "Paired differences A - B of final regret (Wh) over the seeds both runs finished (the means of A and B "
            "are over those seeds, so they can differ from the table above when one run has more seeds):",
            "",
            "| comparison | A - B | seeds | mean A | mean B | A - B: mean +- s.e. | A - B: median | 95 % t-interval "
            "| simultaneous interval | A lower in | p | Holm p |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        sentences = []
        for t, adj in zip(tests, adjusted, strict=True):
            if t.route != route:
                continue
            pd = t.pd
            lo, hi = simultaneous(pd, m_tests)
            lines.append(
                f"| {t.label} | {t.a} - {t.b} | {pd.n} | {_mean_over(finals[(route, t.a)], pd.seeds):.1f} | "
                f"{_mean_over(finals[(route, t.b)], pd.seeds):.1f} | "
                f"{format_mean_se(pd.mean, pd.se, 1, signed=True)} | {statistics.median(pd.diffs):+.1f} | "
                f"[{pd.low:+.1f}, {pd.high:+.1f}] | "
                f"[{lo:+.1f}, {hi:+.1f}] | {pd.k_lower} of {pd.n} | {t.p:.2g} | {adj:.2g} |"
            )
            sentences.append(
                f"* {t.label}: {verdict(t.a, t.b, pd.mean, adj)}; A lower in {pd.k_lower} of {pd.n} seeds."
            )
        lines += ["", *sentences, ""]
    lines += sensitivity_lines(tests, adjusted, finals, sens, m_tests)
    lines += ["## Answer", "", *answer(tests, adjusted)]
    return lines


def prior_text(rows: Sequence[dict[str, str]]) -> str:
    """What the ``default`` init was in the rows: the prior of :data:`evroute.models.builders.NEUTRAL` for rows that
    reproduce at HEAD (:func:`studies.reproduce.table.gp_vs_bi_at_head`), the paper's fractions for the older ones
    (recorded before issue 38 changed the default prior)."""
    from evroute.models.builders import NEUTRAL
    from studies.reproduce.table import gp_vs_bi_at_head

    now = any(gp_vs_bi_at_head(r) for r in rows)
    old = not all(gp_vs_bi_at_head(r) for r in rows)
    parts = []
    if now:
        parts.append(
            f"{'in the rows that reproduce at HEAD, ' if old else ''}`default_prior` of `evroute/models/builders.py`: "
            f"prior standard deviation {NEUTRAL.prior_cv:g} times the root mean square of the edges' physics "
            f"energies, initial noise standard deviation {NEUTRAL.noise_to_prior:g} of that (learnt), graph "
            f"Matern nu = {NEUTRAL.graph_nu:g} and kappa = {NEUTRAL.correlation_m:g} m over the mean edge length, "
            f"product weight {NEUTRAL.product_weight:g}, context lengthscale sqrt(3), fixed from sources that owe "
            "nothing to the environments (issue 38; none is an environment's generating value, "
            "`tests/test_misspecified.py`)"
        )
    if old:
        parts.append(
            f"{'in the older rows' if now else 'in these rows'} (recorded before issue 38) its prior and noise "
            "standard deviations were the paper's fractions 0.25 and 0.1 of sigma_det, the same fractions the "
            "consistent environment generates with, and its kernel was of the environment's family; only the "
            'lengthscale differed: for these rows "without the truth" below means without the true lengthscale and '
            "per-edge variances, not without the environment's scale and noise"
        )
    return "; ".join(parts)


def provenance_lines(rows: Sequence[dict[str, str]]) -> list[str]:
    """The commits that recorded the rows, per route (the data's ``commit`` column), and which rows reproduce at
    HEAD (:func:`studies.reproduce.table.gp_vs_bi_at_head`: those ``python -m studies.reproduce.run`` re-runs)."""
    from studies.reproduce.table import gp_vs_bi_at_head

    per: dict[str, dict[str, int]] = {}
    at_head: dict[str, int] = {}
    for r in rows:
        c = per.setdefault(r["route"], {})
        c[r.get("commit") or "unlabelled"] = c.get(r.get("commit") or "unlabelled", 0) + 1
        at_head[r["route"]] = at_head.get(r["route"], 0) + gp_vs_bi_at_head(r)
    lines = [
        "Provenance: each row carries the commit that recorded it (column `commit`; rows recorded before the column "
        "existed: the commit that last wrote the row's line, `python -m studies.reproduce.provenance`).  Rows per "
        "route and commit:",
        "",
        "| route | rows | commit (rows) |",
        "|---|---:|---|",
    ]
    for route, c in per.items():
        cells = ", ".join(f"`{k}` ({n})" for k, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))
        lines.append(f"| {route} | {sum(c.values())} | {cells} |")
    lines += [""]
    new = [route for route in per if at_head[route] == sum(per[route].values())]
    old = [route for route in per if at_head[route] == 0]
    mixed = [route for route in per if route not in new and route not in old]
    sentences = []
    if new:
        sentences.append(
            f"Every row of {', '.join(new)} reproduces at HEAD: BI's and the GP's rows of a route were recorded "
            "together, by the code of their commit (`python -m studies.reproduce.run --pages gp_vs_bi` re-runs them "
            "and compares; CI re-runs a seeded sample)."
        )
    if old:
        sentences.append(
            f"The rows of {', '.join(old)} do not reproduce at HEAD: they were recorded before issue 34 changed the "
            "networks' speeds and the default energy prior (merged at commit `7991dbd`), from which the consistent "
            "environment draws its energies, and before issue 38 changed the default model prior.  Each comes "
            "from the code at (or, for a run that took longer than a commit, just before) its commit: `git checkout "
            "<commit>`, then the study command that names its route and stage (before commit `16c07d3` the study "
            "was `gp_vs_bi` under `scripts/paper/`).  Every sentence below about these routes describes that code, "
            "not HEAD."
        )
    for route in mixed:
        sentences.append(
            f"Of the {sum(per[route].values())} rows of {route}, {at_head[route]} reproduce at HEAD; the others come "
            "from the code of their commits (`git checkout <commit>`), so its comparisons can pair rows of "
            "different code."
        )
    return lines + [" ".join(sentences), ""] if sentences else lines


def _mean_over(values: dict[int, float], seeds: Sequence[int]) -> float:
    return float(sum(values[s] for s in seeds) / len(seeds))


def _answer_word(t: Test, adj: float) -> str:
    pd = t.pd
    if math.isnan(adj):
        return "not tested (fewer than 2 paired seeds)"
    if adj > ALPHA:
        return "no significant difference"
    if t.a.startswith("GP") and t.b.startswith("BI"):
        return f"yes, GP lower by {-pd.mean:.1f} Wh" if pd.mean < 0 else f"no, BI lower by {pd.mean:.1f} Wh"
    return f"yes, {t.a} {'lower' if pd.mean < 0 else 'higher'} by {abs(pd.mean):.1f} Wh"


def _answer_line(q: str, t: Test, adj: float) -> str:
    pd = t.pd
    return (
        f"* {q}, {t.route}? {_answer_word(t, adj)} (mean difference {pd.mean:+.1f} Wh, 95 % interval "
        f"[{pd.low:+.1f}, {pd.high:+.1f}], Holm p = {adj:.2g}, {t.a} lower in {pd.k_lower} of {pd.n} seeds)."
    )


def sensitivity_lines(
    tests: Sequence[Test],
    adjusted: Sequence[float],
    finals: dict[tuple[str, str], dict[int, float]],
    sens: set[str],
    m: int,
) -> list[str]:
    """The max_cv sensitivity table (GP-TS minus BI-TS at each max_cv, the main runs at MAX_CV_MAIN)."""
    out: list[str] = []
    for route in sorted(sens):
        rows = []
        for cv in sorted({MAX_CV_MAIN, *MAX_CVS}):
            a, b = (
                ("GP-EXACT-TS", "BI-TS")
                if cv == MAX_CV_MAIN
                else (f"GP-EXACT-TS-{cv_name(cv)}", f"BI-TS-{cv_name(cv)}")
            )
            hit = [(t, adj) for t, adj in zip(tests, adjusted, strict=True) if (t.route, t.a, t.b) == (route, a, b)]
            if hit:
                rows.append((cv, *hit[0]))
        if not rows:
            continue
        out += [
            f"## max_cv sensitivity, {route}",
            "",
            "GP-TS minus BI-TS (final regret, Wh) in environments with different caps on the reduced costs' "
            f"coefficient of variation (max_cv = {MAX_CV_MAIN:g}: the main runs above, with their seeds; a larger "
            "cap keeps more of the paper's variance, `docs/results/consistent_env.md` measures what max_cv = 1 "
            "keeps):",
            "",
            "| max_cv | seeds | BI-TS | GP-TS | GP - BI: mean +- s.e. | 95 % t-interval | simultaneous interval "
            "| GP lower in | Holm p |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        means = []
        for cv, t, adj in rows:
            pd = t.pd
            lo, hi = simultaneous(pd, m)
            means.append(pd.mean)
            out.append(
                f"| {cv:g} | {pd.n} | {_mean_over(finals[(route, t.b)], pd.seeds):.1f} | "
                f"{_mean_over(finals[(route, t.a)], pd.seeds):.1f} | {format_mean_se(pd.mean, pd.se, 1, signed=True)} "
                f"| [{pd.low:+.1f}, {pd.high:+.1f}] | [{lo:+.1f}, {hi:+.1f}] | {pd.k_lower} of {pd.n} | {adj:.2g} |"
            )
        sig = [f"{cv:g}" for cv, _t, adj in rows if adj <= ALPHA]
        trend = (
            "grows"
            if all(x > y for x, y in zip(means[:-1], means[1:], strict=True))
            else "shrinks"
            if all(x < y for x, y in zip(means[:-1], means[1:], strict=True))
            else "is not monotone"
        )
        out += [
            "",
            f"* GP-TS and BI-TS differ significantly (Holm) at {len(sig)} of the {len(rows)} caps max_cv = "
            f"{', '.join(f'{cv:g}' for cv, *_ in rows)} ({'at ' + ', '.join(sig) if sig else 'at none'}).",
            f"* In the means (not a test), the GP's advantage BI - GP {trend} as max_cv increases over "
            f"{', '.join(f'{cv:g}' for cv, *_ in rows)} ({', '.join(f'{-x:+.1f}' for x in means)} Wh).",
            "",
        ]
    return out


def answer(tests: Sequence[Test], adjusted: Sequence[float]) -> list[str]:
    """The plain answers, one line per question and route, from the Holm-tested comparisons."""
    out = []
    questions = (
        ("GP-EXACT-TS", "BI-TS", "Without the truth, does GP-TS beat BI-TS"),
        ("GP-EXACT-BUCB", "BI-BUCB", "Without the truth, does GP-BUCB beat BI-BUCB"),
        ("GP-EXACT-UCB", "BI-UCB", "Without the truth, does GP-UCB beat BI-UCB"),
        ("GP-EXACT-TS-NOREFIT", "GP-EXACT-TS", "Do the refits matter (GP-TS without minus with refits)"),
        ("GP-EXACT-TS-ORACLE", "GP-EXACT-TS", "Does the oracle matter for the GP (GP-TS oracle minus default init)"),
        ("BI-TS-ORACLE", "BI-TS", "Does the oracle matter for BI (BI-TS oracle minus default init)"),
        ("GP-EXACT-TS-ORACLE", "BI-TS-ORACLE", "Told the truth, does GP-TS beat BI-TS (both oracle init)"),
        ("GP-EXACT-TS-ORACLE-V1", "GP-EXACT-TS", "Did the earlier oracle-v1 matter (GP-TS oracle-v1 minus default)"),
    )
    pairs: dict[tuple[str, str], list[tuple[Test, float]]] = {(t.a, t.b): [] for t in tests}
    for t, adj in zip(tests, adjusted, strict=True):
        pairs[(t.a, t.b)].append((t, adj))
    for a, b, q in questions:
        for t, adj in pairs.get((a, b), []):
            out.append(_answer_line(q, t, adj))
    main = [
        (t, adj) for t, adj in zip(tests, adjusted, strict=True) if (t.a, t.b) in {(a, b) for a, b, _ in questions[:3]}
    ]
    if main:
        gp = [f"{t.route} {t.b[3:]}" for t, adj in main if adj <= ALPHA and t.pd.mean < 0]
        bi = [f"{t.route} {t.b[3:]}" for t, adj in main if adj <= ALPHA and t.pd.mean > 0]
        ns = [f"{t.route} {t.b[3:]}" for t, adj in main if not adj <= ALPHA]
        out += [
            "",
            f"Summary over the {len(main)} tested (route, policy) pairs with learned hyper-parameters: the GP has "
            f"lower regret than BI (Holm p <= {ALPHA}) in {len(gp)} ({', '.join(gp) or 'none'}); BI lower in {len(bi)} "
            f"({', '.join(bi) or 'none'}); no significant difference in {len(ns)} ({', '.join(ns) or 'none'}).",
        ]
    out.append("")
    for (a, b), what in (
        (("GP-EXACT-TS-ORACLE", "GP-EXACT-TS"), "oracle (actual variances) vs default init, GP-TS"),
        (("BI-TS-ORACLE", "BI-TS"), "oracle (actual variances) vs default init, BI-TS"),
        (("GP-EXACT-TS-ORACLE", "BI-TS-ORACLE"), "GP-TS vs BI-TS, both oracle init"),
        (("GP-EXACT-TS-NOREFIT", "GP-EXACT-TS"), "refits off vs on, GP-TS"),
    ):
        hits = pairs.get((a, b), [])
        if hits:
            sig = [f"{t.route} ({'lower' if t.pd.mean < 0 else 'higher'})" for t, adj in hits if adj <= ALPHA]
            out.append(
                f"* Ablation ({what}): significant difference (Holm) on {len(sig)} of the {len(hits)} routes tested"
                f"{': ' + ', '.join(sig) if sig else ''}."
            )
    return out
