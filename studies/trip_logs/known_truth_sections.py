"""The sections of the known-truth report (:mod:`studies.trip_logs.known_truth_report`): per network its map
matching, held-out route energy, goals and bias terms, and the oracle floor, each as Markdown lines generated from
the committed rows."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import numpy as np

from evroute.energy import PRIORS
from studies.trip_logs.known_truth_data import learn_interval_kind

#: the project's default prior
DEFAULT_PRIOR = PRIORS[0]
#: what each prior of ``evroute.energy.edge_prior`` is, for the report's text
PRIOR_NAMES = {
    "profile": "the default prior, the speed-profile model (each edge driven at its speed limit capped by the "
    "vehicle's top speed, with the stops and yields its end junction implies)",
    "eq8": "Eq. 8 of the reference paper (every edge at its speed limit)",
}
#: the issue's goal: learning from this many trips halves the prior's route-level RMSE
GOAL_N = 100
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


def _in_goal(c: float) -> bool:
    """Whether a mean coverage is inside 85-95 %; the rows hold each seed's share rounded to 4 decimals (57 of 60:
    0.95, 58 of 60: 0.9667), so their mean is compared within that rounding, 5e-5."""
    return 0.85 - 5e-5 <= c <= 0.95 + 5e-5


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _interval(x: np.ndarray) -> tuple[float, float]:
    """Mean and 95 % t half-width over seeds (or trips); NaN half-width for one value."""
    from scipy import stats

    if len(x) < 2:
        return float(x.mean()), float("nan")
    return float(x.mean()), float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))


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
        f"{gap.std(ddof=1):.1f} Wh: shared offsets remove the mean gap, not its spread.",
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


def _network_lines(
    net: str,
    rows: list[dict[str, str]],
    match: list[dict[str, str]],
    coverage: list[dict[str, str]],
    bias: list,
    floor: list,
) -> list[str]:
    lines = [f"## {net}", "", "### Map matching (training trips)", "", *_matching_lines(match)]
    prior_rows = [r for r in rows if r["model"] == "prior"]
    prior = float(prior_rows[0]["rmse_wh"])
    p = prior_rows[0]
    prior_name = p.get("prior") or "eq8"  # rows before the prior was recorded: Eq. 8
    what = PRIOR_NAMES.get(prior_name, prior_name)
    lines += [
        "",
        "### Held-out route energy",
        "",
        f"{p['n_test']} held-out trips, mean SUMO energy {float(p['mean_energy_wh']):.1f} Wh.  Prior: {what}; per "
        f"edge `evroute.energy.edge_prior(..., {prior_name!r})` minus its `m g dz`, plus the route's boundary term; "
        "the mean and scale every learned model starts from"
        + (
            ", and the one `evroute learn` starts a new model from."
            if prior_name == DEFAULT_PRIOR
            else f"; `evroute learn` starts from the default prior ({DEFAULT_PRIOR}) instead."
        )
        + "  RMSE and bias "
        "(predicted - SUMO) of their predicted battery energy (Wh; mean over seeds with its 95 % t-interval); "
        "ratio = RMSE / the prior's RMSE; 90 % coverage = share of the held-out trips inside their 90 % predictive "
        "interval (mean over seeds), the interval from the route's posterior plus the whole-trip noise and trip "
        "effect fitted to the training trips' out-of-fold residuals (`trip_effect.cavity_residuals`: each of 10 folds "
        "of the N trips, one trip per fold for N <= 10, predicted by the posterior of the others; "
        "`fit_predictive_noise`: weakly-informative half-Cauchy priors, the interval a mixture over their posterior, "
        "so it carries their estimation uncertainty"
        + _AS_LEARN[learn_interval_kind(rows)]
        + "; p chosen = the prior s.d. / sigma_det ML-II "
        "chose (values over seeds); noise scale = the ML-II scale of the readings' noise (range over seeds); k = the "
        "whole-trip noise as a multiple of the readings' (posterior mean, range over seeds); tau = the trip effect's "
        "relative s.d. (root of the posterior mean of tau^2, mean over seeds).",
        "",
        "| condition | N | model | seeds | RMSE (Wh) | bias (Wh) | ratio to prior | 90 % coverage "
        "| coverage, in-sample fit | coverage as learn | p chosen | noise scale | k | tau | offsets chosen |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        f"| - | 0 | prior ({prior_name}) | - | {prior:.1f} | {float(p['bias_wh']):+.1f} | 1 "
        "| - | - | - | - | - | - | - | - |",
    ]
    learned = [r for r in rows if r["model"] != "prior"]
    groups = sorted({(r["condition"], int(r["n_train"]), r["model"]) for r in learned})
    ratio: dict[tuple[str, int, str], tuple[float, float]] = {}
    cover: dict[tuple[str, int, str], float] = {}
    for cond, n, model in groups:
        rs = [r for r in learned if (r["condition"], int(r["n_train"]), r["model"]) == (cond, n, model)]
        m, h = _interval(np.array([float(r["rmse_wh"]) for r in rs]))
        b, hb = _interval(np.array([float(r["bias_wh"]) for r in rs]))
        ratio[(cond, n, model)] = (m / prior, m + h)
        fracs = ", ".join(sorted({r["prior_frac"] for r in rs}, key=float))
        offs = f"{sum(int(r['offsets']) for r in rs)} of {len(rs)}"
        cover[(cond, n, model)] = float(np.mean([float(r["cover90"]) for r in rs]))
        learn = float(np.mean([float(r["cover90_learn"]) for r in rs]))
        insample = [float(r["cover90_insample"]) for r in rs if r.get("cover90_insample")]
        ins = f"{np.mean(insample):.1%}" if len(insample) == len(rs) else "-"
        phis = [float(r["noise_scale"]) for r in rs]
        ks = [float(r["noise_mult"]) for r in rs]
        tau = float(np.mean([np.sqrt(float(r["trip_rel_var"])) for r in rs]))
        extra = (
            f"{cover[(cond, n, model)]:.1%} | {ins} | {learn:.1%} | {fracs} | {min(phis):.3g}-{max(phis):.3g} "
            f"| {min(ks):.3g}-{max(ks):.3g} | {tau:.3f}"
        )
        lines.append(
            f"| {cond} | {n} | {model} | {len(rs)} | {m:.1f} +- {h:.1f} | {b:+.1f} +- {hb:.1f} | {m / prior:.2f} "
            f"| {extra} | {offs} |"
        )
    lines += [
        "",
        "Paired difference exact GP - BI of the held-out RMSE (same training trips per seed; mean and 95 % t-interval "
        "over seeds):",
        "",
        "| condition | N | seeds | GP - BI RMSE (Wh) |",
        "|---|---|---|---|",
    ]
    for cond, n in sorted({(g[0], g[1]) for g in groups}):
        by = {
            (r["model"], r["seed"]): float(r["rmse_wh"])
            for r in learned
            if (r["condition"], int(r["n_train"])) == (cond, n)
        }
        seeds = sorted({s for (_, s) in by if ("bi", s) in by and ("gp-exact", s) in by})
        d = np.array([by[("gp-exact", s)] - by[("bi", s)] for s in seeds])
        if d.size:
            m, h = _interval(d)
            lines.append(f"| {cond} | {n} | {len(d)} | {m:+.1f} +- {h:.1f} |")
    if coverage:
        lines += [
            "",
            "Share of the held-out trips' route edges that the N training trips drove (mean over the seeds of the "
            "rows above):",
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
    ns = sorted({n for (_, n, _) in ratio})
    goal_ns = [n for n in ns if n == GOAL_N or n > GOAL_N and n == ns[-1]]  # the goal's N and the largest beyond it
    lines += ["", f"### Goal: {GOAL_N} trips halve the prior's route-level RMSE", ""]
    if GOAL_N not in ns:
        lines.append(f"* N = {GOAL_N} not in these rows: the goal is not judged on this network.")
    for n in goal_ns:
        for cond, n_, model in sorted(k for k in ratio if k[1] == n):
            r, upper = ratio[(cond, n_, model)]
            lines.append(
                f"* N = {n}, {cond}, {model}: RMSE ratio {r:.2f} -> goal "
                + (
                    "missed"
                    if r > 0.5
                    else "met"
                    if np.isfinite(upper) and upper <= prior / 2
                    else "met by the mean only, not with 95 % confidence"
                )
                + " ("
                + (
                    f"upper 95 % bound of the RMSE {upper:.1f} Wh"
                    if np.isfinite(upper)
                    else "one seed: no interval; its RMSE " + f"{r * prior:.1f} Wh"
                )
                + f" vs half the prior's {prior / 2:.1f} Wh)"
            )
    lines += ["", "### Goals: RMSE falling with N, 90 % intervals covering 85-95 % of held-out trips", ""]
    for cond, model in sorted({(c, mo) for c, _, mo in ratio}):
        seq = [ratio[(cond, n, model)][0] for n in ns if (cond, n, model) in ratio]
        mono = all(b < a for a, b in itertools.pairwise(seq))
        covs = [cover[(cond, n, model)] for n in ns if (cond, n, model) in cover]
        inside = [f"{c:.1%}" for c in covs] or ["not measured"]
        lines.append(
            f"* {cond}, {model}: RMSE ratio {' -> '.join(f'{x:.2f}' for x in seq)} over N = "
            f"{', '.join(str(n) for n in ns if (cond, n, model) in ratio)}: "
            + (
                "one N only, no trend"
                if len(seq) < 2
                else "falls monotonically"
                if mono
                else "does not fall monotonically"
            )
            + f"; coverage {', '.join(inside)}: "
            + (
                "no intervals in these rows"
                if not covs
                else "within 85-95 % at every N"
                if all(_in_goal(c) for c in covs)
                else f"outside 85-95 % at {sum(not _in_goal(c) for c in covs)} of {len(covs)} N"
            )
            + "."
        )
    n_max = ns[-1]
    at_max = {k: v[0] for k, v in ratio.items() if k[1] == n_max}
    if GOAL_N in ns and n_max > GOAL_N:
        pairs = [(c, mo) for c, n, mo in sorted(ratio) if n == n_max and (c, GOAL_N, mo) in ratio]
        worse = [f"{c} {mo}" for c, mo in pairs if ratio[(c, n_max, mo)][0] > ratio[(c, GOAL_N, mo)][0]]
        better = [f"{c} {mo}" for c, mo in pairs if ratio[(c, n_max, mo)][0] <= ratio[(c, GOAL_N, mo)][0]]
        lines += [
            "",
            f"From N = {GOAL_N} to N = {n_max} the mean held-out RMSE "
            + "; ".join(
                part
                for part in (
                    f"falls for {', '.join(better)}" if better else "",
                    f"rises for {', '.join(worse)}" if worse else "",
                )
                if part
            )
            + ".",
        ]
    exact = [v for k, v in at_max.items() if k[0] == "exact"]
    degraded = [v for k, v in at_max.items() if k[0] != "exact"]
    exact_worse = [
        mo
        for c, n, mo in sorted(ratio)
        if c == "exact"
        and n == n_max
        and (c, GOAL_N, mo) in ratio
        and n_max > GOAL_N
        and ratio[(c, n, mo)][0] > ratio[(c, GOAL_N, mo)][0]
    ]
    if exact and degraded and not any(v <= 0.5 for v in at_max.values()):
        best_exact, best_deg = round(min(exact), 2), round(min(degraded), 2)  # as printed
        step = (
            f"the best degraded condition reaches {best_deg:.2f}, so the log's degradation is not what bounds the best "
            "ratio"
            if best_deg <= best_exact
            else f"the log's degradation explains only the step from {best_exact:.2f} to the degraded logs' best "
            f"{best_deg:.2f}"
        )
        lines += [
            "",
            f"What bounds it at N = {n_max}: SUMO's exact logs (no GPS noise, exact charge at 1 Hz) reach a ratio of "
            f"{best_exact:.2f} at best and {step}.  What remains with exact logs is what no log quality fixes: "
            "held-out route edges that no training trip drove (coverage above; BI cannot move them, the GP only "
            "through its kernel and the shared offsets)"
            + (", " if exact_worse else " and ")
            + "the trip-to-trip variation of SUMO's energies around the edge means (stops at junctions and lights)"
            + (
                f" and, since more exact logs make the prediction worse ({', '.join(exact_worse)}: mean RMSE higher at "
                f"N = {n_max} than at N = {GOAL_N}), the model's own assumptions (candidates: a reading's energy "
                "spread evenly along the edges it covers, one noise variance for every edge, a traversal's energy "
                "independent of where the trip starts and stops); this study does not separate these."
                if exact_worse
                else "; this study does not separate the two."
            ),
        ]
    precision = {
        c: np.mean([float(r["precision"]) for r in match if r["condition"] == c])
        for c in {r["condition"] for r in match}
    }
    for (cond, n, model), r in sorted(at_max.items()):
        if r > 1 and cond in precision:
            why = (
                "; a likely cause (not isolated here): edges the trip did not drive take shares of the measured energy"
                if precision[cond] < 0.8
                else ""
            )
            lines.append(
                f"* N = {n}, {cond}, {model}: worse than the prior (ratio {r:.3f}); matched-path precision (share of "
                f"matched edges on the true route) {precision[cond]:.2f}{why}."
            )
    if floor:
        at_goal = {k[2]: v[0] * prior for k, v in ratio.items() if k[1] == GOAL_N and k[0] == "exact"}
        exact_rows = {k: v[0] * prior for k, v in ratio.items() if k[0] == "exact"}
        learned_best = min(((v, k[1], k[2]) for k, v in exact_rows.items()), default=None)
        lines += [
            "",
            "### The oracle of per-edge means: an estimated floor",
            "",
            *_floor_lines(floor, prior, at_goal, learned_best),
        ]
    if bias:
        lines += ["", "### Where the prior's bias comes from", "", *_bias_lines(bias, float(p["bias_wh"]))]
    return lines


def _floor_lines(
    floor: list[dict[str, str]],
    prior: float,
    at_goal: dict[str, float],
    learned_best: tuple[float, int, str] | None = None,
) -> list[str]:
    """The oracle ablation and the shared-structure fit of ``floor.csv`` (``studies/trip_logs/known_truth_floor.py``)
    against the prior, the goal of half its RMSE and the learned models' mean RMSE at ``GOAL_N`` (``at_goal``, exact
    logs, per model)."""
    by = {r["row"]: r for r in floor}
    oracle = by["oracle_edge_means"]
    o = float(oracle["rmse_wh"])
    lines = [
        "From SUMO's exact logs, each trip's reduced energy per whole traversal of an edge (sample by sample on its "
        f"exact match; `{oracle['command']}`, on the study's trips).  RMSE on the same held-out trips (Wh):",
        "",
        "| row | trips used | RMSE (Wh) | bias (Wh) | ratio to prior | note |",
        "|---|---|---|---|---|---|",
    ]
    for r in floor:
        if r["row"] == "trip_variance":
            continue
        lines.append(
            f"| {r['row']} | {r['n_train']} | {float(r['rmse_wh']):.1f} | {float(r['bias_wh']):+.1f} "
            f"| {float(r['rmse_wh']) / prior:.2f} | {r['note']} |"
        )
    shared = [r for r in floor if r["row"].startswith("shared_fit_")]
    best = min(shared, key=lambda r: float(r["rmse_wh"])) if shared else None
    b = float(best["rmse_wh"]) if best else float("inf")
    reach = min(o, b)  # the lowest error any of these sums of per-edge values reached
    below = learned_best is not None and learned_best[0] < reach  # a learned model came below both
    lines += [
        "",
        "`oracle_edge_means` is an **oracle ablation, not a learner**: each held-out route's edges at their mean "
        "over every other trip of the pool (leave-one-out; the prior where an edge has no whole traversal).  Its "
        f"RMSE, {o:.1f} Wh, estimates the floor of any model that predicts a route as the sum of per-edge "
        "expectations: the trip-level variation (stops, queues, the vehicles ahead) plus the means' own sampling "
        "error (an estimate: a model with fewer free numbers carries less sampling error and can come below it).  "
        + (
            f"It is above half the prior's RMSE ({prior / 2:.1f} Wh), and so is the best shared-structure fit "
            f"below ({b:.1f} Wh): **the goal of halving the prior's RMSE at N = {GOAL_N} is out of reach of "
            f"per-edge learning on this network**; what learning can reach is about the floor (ratio "
            f"{reach / prior:.2f})."
            if reach > prior / 2 and not below
            else f"It is above half the prior's RMSE ({prior / 2:.1f} Wh), and so is the best shared-structure fit "
            f"below ({b:.1f} Wh), but the learned {learned_best[2]} at N = {learned_best[1]} comes below both "
            f"({learned_best[0]:.1f} Wh, ratio {learned_best[0] / prior:.2f}): the oracle is not a hard floor (its "
            "means carry their sampling error), and this study does not show that halving the prior's RMSE is out "
            f"of reach; at N = {GOAL_N} it is missed (the goal lines above)."
            if reach > prior / 2 and learned_best is not None
            else f"It is {'below' if o <= prior / 2 else 'above'} half the prior's RMSE ({prior / 2:.1f} Wh)"
            + (f" and the best shared-structure fit below is under it ({b:.1f} Wh)" if o > prior / 2 else "")
            + ": the floor does not forbid the goal."
        ),
    ]
    lines += [
        "",
        f"Decomposition of the prior's mean squared error ({prior:.1f}^2 Wh^2) on these held-out trips, additive "
        "when the trip-level noise is uncorrelated with the prior's per-edge error: the oracle's is "
        f"{o**2 / prior**2:.0%} of it (trip-level noise and the means' sampling error); the other "
        f"{1 - o**2 / prior**2:.0%} is the prior's systematic error per edge, what learning can remove.  The "
        "readings' own noise adds nothing here: the exact logs' charge is read to 1e-6 % of the capacity at 1 Hz "
        "(the degraded conditions add it).",
    ]
    if best is not None:
        lines.append(
            f"A least-squares fit of the training traversals on three shared numbers (`shared_fit_N`: a scale of the "
            f"prior, a per-km and a per-edge offset) reaches {b:.1f} Wh with N = {best['n_train']}"
            + (
                f": below the oracle's {o:.1f} Wh (three numbers fitted to many traversals carry less sampling "
                "error than per-edge means), so the systematic error is mostly shared structure."
                if b < o
                else ": within 10 % of the floor, so the systematic error is mostly shared structure."
                if b <= 1.1 * o
                else f", {b - o:.1f} Wh above the floor: shared structure is not all of it."
            )
        )
    for model, rmse in sorted(at_goal.items()):
        lines.append(
            f"* N = {GOAL_N}, exact logs, {model}: mean RMSE {rmse:.1f} Wh = {rmse / o:.2f} x the oracle's "
            f"({rmse / prior:.2f} x the prior)."
        )
    if "trip_variance" in by:
        lines += [
            "",
            f"Per-edge traversal variances summed along a held-out route as if independent give an s.d. of "
            f"{float(by['trip_variance']['rmse_wh']):.1f} Wh, below the oracle's {o:.1f} Wh: the edges of one trip "
            "vary together (a trip effect), which the route intervals must carry.",
        ]
    return lines
