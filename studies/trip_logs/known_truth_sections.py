"""The sections of the known-truth report (:mod:`studies.trip_logs.known_truth_report`): per network its map
matching, held-out route energy, goals and bias terms, and the oracle floor, each as Markdown lines generated from
the committed rows."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from evroute.energy import PRIORS
from studies.trip_logs.known_truth_data import learn_interval_kind
from studies.trip_logs.known_truth_goals import GOAL_N, METRICS, goal_lines, has_metric
from studies.trip_logs.known_truth_goals import interval as _interval

#: the project's default prior
DEFAULT_PRIOR = PRIORS[0]
#: what each prior of ``evroute.energy.edge_prior`` is, for the report's text
PRIOR_NAMES = {
    "profile": "the default prior, the speed-profile model (each edge driven at its speed limit capped by the "
    "vehicle's top speed, with the stops and yields its end junction implies)",
    "eq8": "Eq. 8 of the reference paper (every edge at its speed limit)",
}
#: the issue's design of the study: seeds, numbers of training trips, networks
GOAL_SEEDS, GOAL_NS, GOAL_NETWORKS = 20, (10, 100, 1000, 10000), ("monaco", "luxembourg")
#: the bias terms of ``bias.csv`` (``known_truth_floor.bias_rows``), in the report's order, with their labels
BIAS_TERMS = {
    "speed_profile_wh": (
        "driven speed profile",
        "the trace model along SUMO's speeds and altitudes minus the prior's energy of the route (the default prior: "
        "its assumed speed profile with junction stops; Eq. 8: constant speed at the limits)",
    ),
    "rotating_mass_wh": ("rotating mass", "SUMO's 40 kg of rotating mass in the kinetic term"),
    "auxiliary_wh": ("auxiliary power", "SUMO's 100 W times the trip's duration"),
    "rest_wh": (
        "remainder",
        "what the trace model does not reproduce of SUMO's Energy model, e.g. its radial drag and integration step",
    ),
}


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _matching_lines(match: list[dict[str, str]]) -> list[str]:
    lines = [
        "| condition | trips | samples | recall (mean) | precision (mean) | trips with recall 1 | samples / CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    for cond in sorted({r["condition"] for r in match}):
        rs = [r for r in match if r["condition"] == cond]
        rec = np.array([float(r["recall"]) for r in rs])
        prec = np.array([float(r["precision"]) for r in rs])
        samples = sum(int(r["samples"]) for r in rs)
        cpu = sum(float(r["cpu_s"]) for r in rs)
        lines.append(
            f"| {cond} | {len(rs)} | {samples} | {rec.mean():.3f} | {prec.mean():.3f} | {(rec == 1).mean():.0%} "
            f"| {samples / max(cpu, 1e-9):,.0f} |"
        )
    return lines


def _bias_lines(bias: list[dict[str, str]], prior_bias: float) -> list[str]:
    """The split of SUMO's energy minus the prior's over the training trips (``bias.csv``), and a trip-level least
    squares of that gap on route length and edge count (the shared offsets of the learned models, fitted directly)."""
    gap = np.array([float(r["sumo_wh"]) - float(r["prior_wh"]) for r in bias])
    km = np.array([float(r["length_m"]) for r in bias]) / 1000.0
    edges = np.array([float(r["edges"]) for r in bias])
    m, h = _interval(gap)
    lines = [
        f"Over the {len(bias)} training trips (SUMO's exact logs; no held-out trip, nothing fitted), SUMO's battery "
        f"energy exceeds the prior's by {m:+.1f} +- {h:.1f} Wh per trip ({gap.sum() / km.sum():+.1f} Wh/km; the "
        f"held-out prior bias, prior - SUMO, is {prior_bias:+.1f} Wh).  The gap splits into "
        "(`known_truth_floor.bias_rows`):",
        "",
        "| term | mean per trip (Wh) | Wh/km | share of the gap | trip-to-trip s.d. (Wh) |",
        "|---|---|---|---|---|",
    ]
    shares, spread = {}, {}
    for col, (label, what) in BIAS_TERMS.items():
        x = np.array([float(r[col]) for r in bias])
        tm, th = _interval(x)
        shares[label], spread[label] = x.sum() / gap.sum(), float(x.std(ddof=1))
        lines.append(
            f"| {label}: {what} | {tm:+.1f} +- {th:.1f} | {x.sum() / km.sum():+.1f} | {shares[label]:.0%} "
            f"| {spread[label]:.1f} |"
        )
    lines.append(
        f"| total: SUMO - prior | {m:+.1f} +- {h:.1f} | {gap.sum() / km.sum():+.1f} | 100% | {gap.std(ddof=1):.1f} |"
    )
    top = max(shares, key=lambda k: abs(shares[k]))
    varies = max(spread, key=lambda k: spread[k])
    dur = np.array([float(r["duration_s"]) for r in bias])
    free = np.array([float(r["freeflow_s"]) for r in bias])
    x = np.column_stack([km, edges])
    coef, *_ = np.linalg.lstsq(x, gap, rcond=None)
    resid_sd = float(np.sqrt(np.mean((gap - x @ coef) ** 2)))
    lines += [
        "",
        f"The largest term is the {top} ({shares[top]:.0%} of the gap); the one that varies most from trip to trip "
        f"is the {varies} (s.d. {spread[varies]:.1f} Wh).  The trips took {dur.sum() / free.sum():.2f} "
        "times their free-flow time at the speed limits (total over the trips).  A least-squares fit of the per-trip "
        f"gap on route length and edge count (the shared per-metre and per-edge offsets the learned models may "
        f"choose, fitted here at trip level) gives {coef[0]:+.1f} Wh/km and {coef[1]:+.2f} Wh per edge; it leaves "
        f"a root-mean-square residual of {resid_sd:.1f} Wh per trip, against a trip-to-trip s.d. of the gap of "
        f"{gap.std(ddof=1):.1f} Wh"
        + (
            ": shared offsets remove the mean gap, not most of its spread."
            if resid_sd > 0.5 * gap.std(ddof=1)
            else ": shared offsets remove most of its spread too."
        ),
    ]
    return lines


_OLD_LEARN = "the readings' noise per traversal and the trip effect by moments, as `evroute learn` computes it"
_NEW_LEARN = (
    "the interval `evroute route --model-file` serves from the mixture `evroute learn` stores "
    "(`RouteBelief.trip_half_width` around the served mean, its edge means floored at 0)"
)
_IN_SAMPLE = (
    "in-sample fit = the same intervals with the noise fitted to the in-sample residuals of the posterior that "
    "learned those trips (`trip_effect.fit_route_noise`, a normal at the fit"
)
#: the table's note on the 90 % intervals, by what the rows' ``cover90_learn`` means (``learn_interval_kind``)
_AS_LEARN = {
    "moments": f"); {_IN_SAMPLE}); coverage as learn = {_OLD_LEARN}",
    "served": "; computed by `evroute learn`'s own function, `trip_learning.route_noise`); "
    f"{_IN_SAMPLE}, what `evroute learn` stored before model format 2); coverage as learn = {_NEW_LEARN}",
    "mixed": f"); {_IN_SAMPLE}); coverage as learn = for the rows with `learn_interval` = served, {_NEW_LEARN}; "
    f"for the older rows, {_OLD_LEARN}",
}


def _truth_sentence(p: dict[str, str], what: str, prior_name: str, as_learn: str) -> str:
    """What the held-out rows are measured against (the prior row ``p`` carries the drives' counts)."""
    repeats = int(p.get("repeats") or 0)
    drives = int(p.get("n_drives") or p["n_test"])
    if repeats:
        truth = (
            f"{p['n_test']} held-out routes, each driven {repeats} times in a second SUMO run with the same background "
            "demand (`studies/trip_logs/known_truth_repeats.py`: the first run's vehicle count and 20 s departure "
            "gaps, "
            "the repeats at seeded random slots over the whole simulated period, every drive from rest to rest; the "
            f"training trips' run untouched): {drives} held-out drives, mean SUMO energy "
            f"{float(p['mean_energy_wh']):.1f} Wh.  Two RMSEs of the predicted battery energy (Wh; mean over seeds "
            "with its 95 % t-interval): **against the route means** = the RMSE over routes of the route's mean "
            f"prediction minus the mean of its {repeats} drives' energies, with the means' sampling error removed "
            "(`sqrt(max(0, mean_r (ebar_r^2 - s_r^2 / R)))`, s_r^2 the sample variance of the route's drive errors; "
            "'raw' = without that correction), the error against the route's expected energy, which is what a "
            "learner estimates; **per drive** = the RMSE over all held-out drives, which adds each drive's own "
            "trip-level noise (stops, queues, the vehicles ahead)"
        )
    else:
        truth = (
            f"{p['n_test']} held-out trips, each driven once (no `--repeats`: no route-mean truth), mean SUMO energy "
            f"{float(p['mean_energy_wh']):.1f} Wh.  RMSE per drive of the predicted battery energy (Wh; mean over "
            "seeds with its 95 % t-interval)"
        )
    return (
        f"{truth}; bias = mean of predicted - SUMO over the drives.  Prior: {what}; per edge "
        f"`evroute.energy.edge_prior(..., {prior_name!r})` minus its `m g dz`, plus the route's boundary term; the "
        "mean and scale every learned model starts from"
        + (
            ", and the one `evroute learn` starts a new model from."
            if prior_name == DEFAULT_PRIOR
            else f"; `evroute learn` starts from the default prior ({DEFAULT_PRIOR}) instead."
        )
        + "  Ratio = RMSE / the prior's RMSE on the same metric; 90 % coverage = share of the held-out drives inside "
        "their 90 % predictive interval (mean over seeds), the interval from the route's posterior plus the "
        "whole-trip noise and trip effect fitted to the training trips' out-of-fold residuals "
        "(`trip_effect.cavity_residuals`: each of 10 folds of the N trips, one trip per fold for N <= 10, predicted "
        "by the posterior of the others; `fit_predictive_noise`: weakly-informative half-Cauchy priors, the interval "
        "a mixture over their posterior, so it carries their estimation uncertainty"
        + as_learn
        + "; p chosen = the prior s.d. / sigma_det ML-II chose (values over seeds); noise scale = the ML-II scale of "
        "the readings' noise (range over seeds); k = the whole-trip noise as a multiple of the readings' (posterior "
        "mean, range over seeds); tau = the trip effect's relative s.d. (root of the posterior mean of tau^2, mean "
        "over seeds)."
    )


def _noise_sentence(rows: list[dict[str, str]]) -> str:
    """What the learned rows' ``noise_exponent`` says about one traversal's nominal noise ('' for rows before it)."""
    exps = sorted({float(r["noise_exponent"]) for r in rows if r.get("noise_exponent") not in (None, "")})
    if not exps:
        return ""
    p = ", ".join(f"{x:g}" for x in exps)
    return (
        f"  One traversal's nominal noise variance grows as the edge's prior energy to the power {p} "
        "(`noise_exponent`, `linear_obs.traversal_noise_weights`, normalised to mean 1 over the edges; 2: an s.d. "
        "proportional to the energy; 0: every edge alike, what `evroute learn` gives a new model by default)."
    )


def _trip_fit_sentence(rows: list[dict[str, str]]) -> str:
    """What the learned rows' ``trip_tau_fit`` says about the trip effect in the readings' fit ('' where no row has
    it)."""
    learned = [r for r in rows if r["model"] != "prior"]
    taus = [float(r["trip_tau_fit"]) for r in learned if r.get("trip_tau_fit") not in (None, "")]
    if not taus:
        return ""
    which = "every learned row" if len(taus) == len(learned) else f"{len(taus)} of the {len(learned)} learned rows"
    return (
        f"  In {which} the trip effect is in the readings' fit (`--trip-effect-fit`, `evroute learn --trip-effect-fit "
        "on`): each training trip's readings share one relative offset beta ~ N(0, tau^2) of their prior energies "
        "(`evroute.models.linear_obs_trip`), tau fitted by ML-II with the noise scale, "
        f"{min(taus):.3g}-{max(taus):.3g} over those rows; the intervals' folds are taken out of the posterior with "
        "that covariance, and their own (k, tau^2) (the columns k and tau) are fitted to those out-of-fold residuals."
    )


def _rmse_cells(rs: list[dict[str, str]], col: str, prior: float | None) -> str:
    """``mean +- h | ratio`` of ``col`` over the rows ``rs`` (``- | -`` where the rows lack it)."""
    if prior is None or not has_metric(rs, col):
        return "- | -"
    m, h = _interval(np.array([float(r[col]) for r in rs]))
    return f"{m:.1f} +- {h:.1f} | {m / prior:.2f}"


def _network_lines(
    net: str,
    rows: list[dict[str, str]],
    match: list[dict[str, str]],
    coverage: list[dict[str, str]],
    bias: list,
    floor: list,
) -> list[str]:
    lines = [f"## {net}", "", "### Map matching (training trips)", "", *_matching_lines(match)]
    p = next(r for r in rows if r["model"] == "prior")
    priors = {col: float(p[col]) if p.get(col) not in (None, "") else None for col in METRICS}
    prior = float(p["rmse_wh"])
    prior_name = p.get("prior") or "eq8"  # rows before the prior was recorded: Eq. 8
    what = PRIOR_NAMES.get(prior_name, prior_name)
    raw = p.get("rmse_mean_raw_wh")
    lines += [
        "",
        "### Held-out route energy",
        "",
        _truth_sentence(p, what, prior_name, _AS_LEARN[learn_interval_kind(rows)])
        + _noise_sentence(rows)
        + _trip_fit_sentence(rows),
        "",
        "| condition | N | model | seeds | RMSE vs route means (Wh) | ratio | raw (Wh) | RMSE per drive (Wh) | ratio "
        "| bias (Wh) | 90 % coverage | coverage, in-sample fit | coverage as learn | p chosen | noise scale | k | tau "
        "| offsets chosen |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        f"| - | 0 | prior ({prior_name}) | - | "
        + (f"{float(p['rmse_mean_wh']):.1f} | 1 | {float(raw):.1f}" if raw else "- | - | -")
        + f" | {prior:.1f} | 1 | {float(p['bias_wh']):+.1f} | - | - | - | - | - | - | - | - |",
    ]
    learned = [r for r in rows if r["model"] != "prior"]
    groups = sorted({(r["condition"], int(r["n_train"]), r["model"]) for r in learned})
    ratio: dict[tuple[str, int, str], float] = {}  # per drive, for the matching-precision lines
    for cond, n, model in groups:
        rs = [r for r in learned if (r["condition"], int(r["n_train"]), r["model"]) == (cond, n, model)]
        ratio[(cond, n, model)] = float(np.mean([float(r["rmse_wh"]) for r in rs])) / prior
        b, hb = _interval(np.array([float(r["bias_wh"]) for r in rs]))
        fracs = ", ".join(sorted({r["prior_frac"] for r in rs}, key=float))
        offs = f"{sum(int(r['offsets']) for r in rs)} of {len(rs)}"
        cover = float(np.mean([float(r["cover90"]) for r in rs]))
        learn = float(np.mean([float(r["cover90_learn"]) for r in rs]))
        insample = [float(r["cover90_insample"]) for r in rs if r.get("cover90_insample")]
        ins = f"{np.mean(insample):.1%}" if len(insample) == len(rs) else "-"
        raws = (
            f"{np.mean([float(r['rmse_mean_raw_wh']) for r in rs]):.1f}" if has_metric(rs, "rmse_mean_raw_wh") else "-"
        )
        phis = [float(r["noise_scale"]) for r in rs]
        ks = [float(r["noise_mult"]) for r in rs]
        tau = float(np.mean([np.sqrt(float(r["trip_rel_var"])) for r in rs]))
        lines.append(
            f"| {cond} | {n} | {model} | {len(rs)} | {_rmse_cells(rs, 'rmse_mean_wh', priors['rmse_mean_wh'])} "
            f"| {raws} | {_rmse_cells(rs, 'rmse_wh', prior)} | {b:+.1f} +- {hb:.1f} | {cover:.1%} | {ins} "
            f"| {learn:.1%} | {fracs} | {min(phis):.3g}-{max(phis):.3g} | {min(ks):.3g}-{max(ks):.3g} | {tau:.3f} "
            f"| {offs} |"
        )
    lines += [
        "",
        "Paired difference exact GP - BI of the held-out RMSE (same training trips per seed; mean and 95 % t-interval "
        "over seeds):",
        "",
        "| condition | N | seeds | GP - BI, RMSE vs route means (Wh) | GP - BI, RMSE per drive (Wh) |",
        "|---|---|---|---|---|",
    ]
    for cond, n in sorted({(g[0], g[1]) for g in groups}):
        cell = [r for r in learned if (r["condition"], int(r["n_train"])) == (cond, n)]
        diffs = []
        for col in METRICS:
            by = {(r["model"], r["seed"]): r.get(col) for r in cell}
            seeds = sorted({s for (_, s) in by if by.get(("bi", s)) and by.get(("gp-exact", s))})
            d = np.array([float(by[("gp-exact", s)] or 0) - float(by[("bi", s)] or 0) for s in seeds])
            diffs.append((len(d), _interval(d) if d.size else None))
        if any(v for _, v in diffs):
            cells = " | ".join(f"{v[0]:+.1f} +- {v[1]:.1f}" if v else "-" for _, v in diffs)
            lines.append(f"| {cond} | {n} | {max(k for k, _ in diffs)} | {cells} |")
    if coverage:
        lines += [
            "",
            "Share of the held-out routes' edges that the N training trips drove (mean over the seeds of the rows "
            "above):",
            "",
        ]
        fitted = {(int(r["n_train"]), r["seed"]) for r in learned}
        for n in sorted({int(r["n_train"]) for r in coverage}):
            c = np.array(
                [float(r["coverage"]) for r in coverage if int(r["n_train"]) == n and (n, r["seed"]) in fitted]
            )
            if not c.size:
                continue
            lines.append(f"* N = {n}: {c.mean():.0%}")
    lines += ["", *goal_lines(rows)]
    precision = {
        c: np.mean([float(r["precision"]) for r in match if r["condition"] == c])
        for c in {r["condition"] for r in match}
    }
    n_max = max((n for _, n, _ in groups), default=0)
    for (cond, n, model), r in sorted(ratio.items()):
        if n == n_max and r > 1 and cond in precision:
            why = (
                "; a likely cause (not isolated here): edges the trip did not drive take shares of the measured energy"
                if precision[cond] < 0.8
                else ""
            )
            lines.append(
                f"* N = {n}, {cond}, {model}: worse than the prior per drive (ratio {r:.3f}); matched-path precision "
                f"(share of matched edges on the true route) {precision[cond]:.2f}{why}."
            )
    if floor:
        lines += ["", "### The oracle of per-edge means: an estimated floor", "", *_floor_lines(floor, learned)]
    if bias:
        lines += ["", "### Where the prior's bias comes from", "", *_bias_lines(bias, float(p["bias_wh"]))]
    return lines


def _floor_lines(floor: list[dict[str, str]], learned: list[dict[str, str]]) -> list[str]:
    """The oracle ablation and the shared-structure fit of ``floor.csv`` (``studies/trip_logs/known_truth_floor.py``)
    against the prior, half its RMSE and the learned models' mean RMSE at ``GOAL_N`` (exact logs), on each metric the
    floor rows carry."""
    by = {r["row"]: r for r in floor}
    oracle = by["oracle_edge_means"]
    rows = [r for r in floor if r["row"] != "trip_variance"]
    lines = [
        "From SUMO's exact logs of the first run, each trip's reduced energy per whole traversal of an edge (sample by "
        f"sample on its exact match; `{oracle['command']}`, on the study's trips), scored on the same held-out drives "
        "as the rows above (Wh):",
        "",
        "| row | trips used | RMSE vs route means (Wh) | ratio | RMSE per drive (Wh) | ratio | bias (Wh) | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = []
        for col in METRICS:
            v, pv = by["prior"].get(col), r.get(col)
            cells.append(f"{float(pv):.1f} | {float(pv) / float(v):.2f}" if v and pv else "- | -")
        lines.append(
            f"| {r['row']} | {r['n_train']} | {' | '.join(cells)} | {float(r['bias_wh']):+.1f} | {r['note']} |"
        )
    lines += [
        "",
        "`oracle_edge_means` is an **oracle ablation, not a learner**: each held-out route's edges at their mean over "
        "every other trip of the first run (leave-one-out; the prior where an edge has no whole traversal); its error "
        "is what a model predicting a route as the sum of per-edge expectations keeps, plus the means' own sampling "
        "error (an estimate, not a hard floor: a model with fewer free numbers carries less sampling error).",
        "",
    ]
    shared = [r for r in floor if r["row"].startswith("shared_fit_")]
    exact = [r for r in learned if r["condition"] == "exact" and int(r["n_train"]) == GOAL_N]
    for col, label in METRICS.items():
        if not oracle.get(col) or not by["prior"].get(col):
            continue
        prior, o = float(by["prior"][col]), float(oracle[col])
        line = (
            f"* {label}: the oracle's {o:.1f} Wh is {o / prior:.2f} x the prior's {prior:.1f} Wh, "
            + ("above" if o > prior / 2 else "at or below")
            + f" half of it; the prior's mean square splits into the oracle's {o**2 / prior**2:.0%} and "
            f"{1 - o**2 / prior**2:.0%} of per-edge systematic error (additive when the two are uncorrelated)"
        )
        fits = [r for r in shared if r.get(col)]
        if fits:
            best = min(fits, key=lambda r: float(r[col]))
            b = float(best[col])
            line += (
                f"; the best shared-structure fit (three numbers, N = {best['n_train']}) reaches {b:.1f} Wh, "
                + ("below" if b < o else "above")
                + " the oracle"
            )
        for model in sorted({r["model"] for r in exact}):
            x = [float(r[col]) for r in exact if r["model"] == model and r.get(col)]
            if x:
                line += (
                    f"; {model} at N = {GOAL_N} (exact logs) {np.mean(x):.1f} Wh = {np.mean(x) / o:.2f} x the oracle"
                )
        lines.append(line + ".")
    if "trip_variance" in by:
        tv = by["trip_variance"]
        indep = float(tv["rmse_wh"])
        resid = float(tv["note"].rsplit(" ", 1)[-1])
        lines += [
            "",
            f"Per-edge traversal variances summed along a held-out route as if independent give an s.d. of "
            f"{indep:.1f} Wh, "
            + (
                f"below the oracle's residual RMS per drive ({resid:.1f} Wh): the edges of one trip vary together (a "
                "trip effect), which the route intervals must carry."
                if indep < resid
                else f"not below the oracle's residual RMS per drive ({resid:.1f} Wh): these rows show no sign of a "
                "trip effect beyond independent edges."
            ),
        ]
    return lines
