"""The report of the live-routes study (``docs/results/sumo_live_routes.md``), from its committed tables alone.

:func:`report_lines` turns the tables of :mod:`studies.sumo_live_routes.runner` (the live trips, their
traversals joined with the replay-trained arm statistics, the within-trip correlations fitted on the replay and
their held-out check; :func:`~studies.sumo_live_routes.runner.load_tables`) into the Markdown page: how it was
made, per network the predictors' bias, RMSE, R^2 and 90 % interval coverage against the live route energies with
what bounds them (:func:`correlation_lines` for the within-trip correlation), and Eq. 8's prior variants against
SUMO (:func:`eq8_section`).  It never reads the network or runs SUMO; every number and sentence comes from the
tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evroute.stats import mean_se, t_interval
from studies.sumo_live_routes.header import header_lines, provenance_lines
from studies.sumo_live_routes.runner import (
    CORR_LAGS,
    DRIVER_VARIANT,
    TURN_MIN,
    VARIANTS,
    Z90,
    correlation_of,
    prediction_fit,
    route_predictions,
    sumo_vehicle,
)

#: the predictor rows of the trip-correlated intervals (the goal is judged on the turn row, else the edge row)
ROW_EDGE_RHO = "edge arms, trip-correlated interval (one rho)"
ROW_TURN_RHO = "turn arms, trip-correlated interval (one rho)"
ROW_TURN_LAG = "turn arms, trip-correlated interval (rho by lag)"
#: the turn arms moved to the trip's driver (speed factor known, Eq. 8's slope), with the one-rho interval
ROW_TURN_DRIVER = "turn arms for the trip's driver (speed factor known), trip-correlated interval (one rho)"
#: the same with Eq. 8's slope scaled by a factor fitted on the live trips of the other origin-destination pairs
ROW_TURN_DRIVER_CAL = (
    "turn arms for the trip's driver, slope scaled on the other pairs' live trips (leave one pair out), "
    "trip-correlated interval (one rho)"
)


def report_lines(trips: pd.DataFrame, trav: pd.DataFrame, corr: pd.DataFrame) -> list[str]:
    """The Markdown lines of the report from the tables :func:`~studies.sumo_live_routes.runner.load_tables`
    returns: the header (:func:`header_lines`), one section per network (:func:`network_lines`) and the Eq. 8
    variants (:func:`eq8_section`)."""
    rp = route_predictions(trips, trav, corr)
    lines = header_lines(trips) + provenance_lines(trips)
    summary = []
    for net, d in rp.groupby("network"):
        lines += network_lines(str(net), d, trips, trav, corr)
        summary.append((str(net), d, trips[trips["network"] == net]))
    return lines + eq8_section(summary, trav)


def network_fits(d: pd.DataFrame) -> tuple[dict[str, dict[str, float]], float, int]:
    """The predictor rows of one network's table (name -> :func:`~studies.sumo_live_routes.runner.prediction_fit`),
    the pooled within-route variance of the live energies (Wh^2; NaN without a route driven twice) and its degrees
    of freedom (``d``: the network's rows of :func:`~studies.sumo_live_routes.runner.route_predictions`)."""
    live = d["live"].to_numpy()
    fits = {"Eq. 8 (paper), prior alone": prediction_fit(live, d["eq8_paper"].to_numpy())}
    fits["edge arms (replay means)"] = prediction_fit(live, d["edge"].to_numpy(), np.sqrt(d["edge_var"].to_numpy()))
    turn_ok = float(d["turn_share"].mean())
    lag = CORR_LAGS[-1]
    fits[ROW_EDGE_RHO] = prediction_fit(live, d["edge"].to_numpy(), d["edge_sd_lag0"].to_numpy())
    if turn_ok > 0:
        fits["turn arms (replay turn means)"] = prediction_fit(
            live, d["turn"].to_numpy(), np.sqrt(d["turn_var"].to_numpy())
        )
        fits[ROW_TURN_RHO] = prediction_fit(live, d["turn"].to_numpy(), d["turn_sd_lag0"].to_numpy())
        fits[ROW_TURN_LAG] = prediction_fit(live, d["turn"].to_numpy(), d[f"turn_sd_lag{lag}"].to_numpy())
    # bound: the spread of one route's live energies over clock times and speed factors (pooled within routes)
    k = d.groupby("route")["live"].transform("size")
    rep = d[k > 1]
    dof = len(rep) - rep["route"].nunique()
    wv = float((rep.groupby("route")["live"].transform(lambda x: x - x.mean()) ** 2).sum() / dof) if dof else np.nan
    if dof and turn_ok > 0:  # diagnostic: the turn arms' interval widened by the live between-run spread
        sd = np.sqrt(d["turn_var"].to_numpy() + wv)
        fits["turn arms, interval + live between-run spread (diagnostic)"] = prediction_fit(
            live, d["turn"].to_numpy(), sd
        )
    if turn_ok > 0 and "turn_driver" in d.columns:
        fits[ROW_TURN_DRIVER] = prediction_fit(live, d["turn_driver"].to_numpy(), d["turn_sd_lag0"].to_numpy())
        scaled, _ = leave_one_pair_out_driver(d)
        fits[ROW_TURN_DRIVER_CAL] = prediction_fit(live, scaled.to_numpy(), d["turn_sd_lag0"].to_numpy())
    return fits, wv, dof


def network_lines(net: str, d: pd.DataFrame, trips: pd.DataFrame, trav: pd.DataFrame, corr: pd.DataFrame) -> list[str]:
    """The section of one network: the predictors' table and the sentences on the goal, on what bounds R^2 and the
    coverage, on the correlation fits, and on the errors by turn and by the arms' replay traversals (``d``: the
    network's rows of :func:`~studies.sumo_live_routes.runner.route_predictions`)."""
    lines: list[str] = []
    tr = trips[trips["network"] == net]
    live = d["live"].to_numpy()
    fits, wv, dof = network_fits(d)
    turn_ok = float(d["turn_share"].mean())
    k = d.groupby("route")["live"].transform("size")
    rep = d[k > 1]
    r2_max = 1.0 - wv / float(live.var(ddof=1))
    driver = turn_ok > 0 and "turn_driver" in d.columns
    if driver:
        scaled, scales = leave_one_pair_out_driver(d)
    n_edges = trav[trav["network"] == net].groupby("trip").size().mean()
    lines += [
        f"## {net}",
        "",
        f"{tr['route'].nunique()} routes between {tr['od'].nunique()} origin-destination pairs, {len(tr)} live "
        f"trips ({int((~tr['ok'].astype(bool)).sum())} failed: teleport, late or unmatched; left out), "
        f"{len(d)} compared; live reduced route energy {live.mean():.1f} Wh in mean (s.d. "
        f"{live.std(ddof=1):.1f}), live battery {d['battery_wh'].mean():.1f} Wh; {n_edges:.1f} edges per route. "
        "Cost of a trip (SUMO in a worker process, niced, on a shared 2-core machine running other studies): "
        f"median {tr['cpu_s'].median():.2f} s CPU, {tr['wall_s'].median():.1f} s wall "
        f"({tr['cpu_s'].sum() / 60:.0f} CPU minutes in all).",
        "",
        "| predictor | trips | bias (Wh) | RMSE (Wh) | R^2 | 90 % interval coverage | median interval width (Wh) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, f in fits.items():
        cov = "--" if np.isnan(f["cover"]) else f"{100 * f['cover']:.1f} %"
        wid = "--" if np.isnan(f["width"]) else f"{f['width']:.1f}"
        lines.append(f"| {name} | {int(f['n'])} | {f['bias']:+.1f} | {f['rmse']:.1f} | {f['r2']:.3f} | {cov} | {wid} |")
    if turn_ok == 0:
        lines.append("| turn arms (replay turn means) | -- | -- | -- | -- | -- | -- |")
    best_row = ROW_TURN_RHO if turn_ok > 0 else ROW_EDGE_RHO
    best = fits[best_row]
    which = (
        "turn arms and the trip-correlated interval (one rho)"
        if turn_ok > 0
        else "edge arms (turn arms: the recording has no next edge) and the trip-correlated interval (one rho)"
    )
    r2_ok, cov_ok = best["r2"] >= 0.9, 0.85 <= best["cover"] <= 0.95
    bias_share = best["bias"] ** 2 / best["rmse"] ** 2
    lines += [
        "",
        f"* Goal (route-level R^2 >= 0.9 and 85-95 % coverage) with {which}: R^2 {best['r2']:.3f} "
        f"({'met' if r2_ok else 'missed'}), coverage {100 * best['cover']:.1f} % of {int(best['n'])} trips "
        f"({'met' if cov_ok else ('too narrow' if best['cover'] < 0.85 else 'too wide')}; 95 % binomial interval "
        f"{_binomial_interval(best['cover'], int(best['n']))}, trips taken as independent, though a route driven "
        "twice shares its means' error).",
        (
            f"* What bounds R^2: the same route driven at different clock times and speed factors varies with a "
            f"pooled within-route s.d. of {np.sqrt(wv):.1f} Wh ({rep['route'].nunique()} routes driven more than "
            f"once); for a predictor that knows the route but not the clock time or the driver this spread "
            f"limits R^2 to about 1 - within / total variance = {r2_max:.3f} on these trips"
            + (
                f" (the measured R^2 {best['r2']:.4f} exceeds this estimate, {r2_max:.4f}: the spread is itself "
                f"estimated, from {rep['route'].nunique()} of {d['route'].nunique()} routes at {int(k.max())} "
                "clock times at most)."
                if best["r2"] > r2_max
                else "."
            )
            if dof
            else "* No route was driven more than once here: the within-route spread (the bound on R^2 of any "
            "predictor that does not know the clock time or the driver) is not measured on this network."
        ),
        f"* The squared bias is {100 * bias_share:.0f} % of the mean squared error ({best['bias']:+.1f} Wh); the "
        f"interval's sd is {np.median(np.sqrt(d['turn_var' if turn_ok > 0 else 'edge_var'])):.1f} Wh in median "
        f"with arms independent, {np.median(d[('turn' if turn_ok > 0 else 'edge') + '_sd_lag0']):.1f} Wh "
        f"trip-correlated (one rho), against an RMSE of {best['rmse']:.1f} Wh.",
        *correlation_lines(corr, str(net), d, wv, dof, best, turn_ok > 0),
        *(driver_lines(d, tr, fits, best, rep, dof, scaled, scales) if driver else []),
    ]
    t = trav[(trav["network"] == net) & trav["trip"].isin(d.index)]
    by = t.assign(diff=t["reduced_wh"] - t["replay_mean_wh"]).groupby("direction")["diff"]
    dirs = by.agg(["size", "mean", "std"]).sort_values("size", ascending=False)
    names = {"s": "straight", "l": "left", "r": "right", "L": "sharp left", "R": "sharp right", "t": "U-turn"}
    lines.append(
        "* Live minus replay edge mean per traversal, by the turn taken at the edge's end (SUMO's connection "
        "direction): "
        + "; ".join(
            f"{names.get(str(k), k)} {r['mean']:+.1f} Wh (s.d. {r['std']:.1f}, {int(r['size'])} traversals)"
            for k, r in dirs.iterrows()
        )
        + "."
    )
    bins = pd.cut(t["replay_n"], [0, 4, 9, 29, np.inf], labels=["1-4", "5-9", "10-29", ">= 30"])
    by_n = t.assign(ad=(t["reduced_wh"] - t["replay_mean_wh"]).abs()).groupby(bins, observed=True)["ad"]
    lines.append(
        "* Mean absolute live minus replay edge mean per traversal, by the edge's replay traversals: "
        + "; ".join(
            f"{b}: {r['mean']:.1f} Wh ({int(r['size'])} traversals)" for b, r in by_n.agg(["mean", "size"]).iterrows()
        )
        + "."
    )
    if turn_ok > 0:
        lines.append(
            f"* Turn arms with >= {TURN_MIN} replay traversals: {100 * turn_ok:.1f} % of the arms driven (the rest "
            "use the edge arm's mean and variance)."
        )
    lines.append("")
    return lines


def leave_one_pair_out_driver(d: pd.DataFrame) -> tuple[pd.Series, np.ndarray]:
    """Per trip, the turn arms' prediction for its driver with Eq. 8's slope term ``x = turn_driver - turn`` scaled
    by ``c = sum x r / sum x^2`` (``r = live - turn``; least squares through 0) fitted on the trips of every other
    origin-destination pair of the network, so no trip's own live energy (nor its route's) enters its prediction;
    and the factors ``c`` (one per pair)."""
    x, r = d["turn_driver"] - d["turn"], d["live"] - d["turn"]
    sxr, sxx = (x * r).groupby(d["od"]).sum(), (x * x).groupby(d["od"]).sum()
    c = (sxr.sum() - sxr) / (sxx.sum() - sxx)  # every pair's fit without that pair
    return d["turn"] + d["od"].map(c) * x, c.to_numpy()


def goal_verdict(r2: float, cover: float) -> str:
    """The goal (route-level R^2 >= 0.9 and 85-95 % coverage of the 90 % interval) judged on both parts."""
    r2_part = "R^2 goal met" if r2 >= 0.9 else "R^2 goal missed"
    cov_part = (
        "coverage goal met"
        if 0.85 <= cover <= 0.95
        else "coverage too narrow"
        if cover < 0.85
        else ("coverage too wide")
    )
    whole = "goal met" if r2 >= 0.9 and 0.85 <= cover <= 0.95 else "goal missed"
    return f"{whole} ({r2_part}, {cov_part} for 85-95 %)"


def driver_lines(
    d: pd.DataFrame,
    tr: pd.DataFrame,
    fits: dict[str, dict[str, float]],
    best: dict[str, float],
    rep: pd.DataFrame,
    dof: int,
    scaled: pd.Series,
    scales: np.ndarray,
) -> list[str]:
    """What knowing the trip's driver (its speed factor) adds to the turn arms' prediction, from the tables
    (``scaled``, ``scales``: the prediction with Eq. 8's slope scaled and the factors, leave one pair out,
    :func:`leave_one_pair_out_driver`)."""
    fit, cal = fits[ROW_TURN_DRIVER], fits[ROW_TURN_DRIVER_CAL]
    sf = tr.set_index("trip").loc[d.index, "speed_factor"].to_numpy()
    res = d["live"] - d["turn"]
    slope = float(np.polyfit(sf - 1.0, res.to_numpy(), 1)[0])  # Wh per unit of speed factor, fitted (a check)
    model = float(d["driver_slope_wh"].mean())  # Eq. 8's, mean over trips
    text = (
        f"* Knowing the driver: the live route energies rise with the trip's speed factor (SUMO's `speedFactor`, "
        f"{sf.min():.2f}-{sf.max():.2f} here); the residual live - turn prediction grows by {slope:+.0f} Wh per unit "
        f"of speed factor (least squares), Eq. 8 (`{DRIVER_VARIANT}`) predicts {model:+.0f} Wh per unit from the "
        "routes' speeds alone. With the speed factor known (here the trip's drawn value; an app would estimate it "
        f"from the driver's own trips) and the replay's turn means moved along Eq. 8's slope, R^2 is {fit['r2']:.3f} "
        f"({best['r2']:.3f} without), RMSE {fit['rmse']:.1f} Wh ({best['rmse']:.1f} without), coverage "
        f"{100 * fit['cover']:.1f} %: {goal_verdict(fit['r2'], fit['cover'])}.  Eq. 8's slope scaled by a factor "
        f"fitted on the live trips of the other origin-destination pairs (least squares, leave one pair out: "
        f"{scales.min():.2f}-{scales.max():.2f}), a calibration that a fleet's logs would allow: R^2 {cal['r2']:.3f}, "
        f"RMSE {cal['rmse']:.1f} Wh, coverage {100 * cal['cover']:.1f} %: {goal_verdict(cal['r2'], cal['cover'])}"
    )
    if dof:  # the live spread of one route once each trip's driver term (scaled, leave one pair out) is removed
        k = rep.index
        left = d.loc[k, "live"] - (scaled.loc[k] - d.loc[k, "turn"])
        rest = left.groupby(rep["route"]).transform(lambda x: x - x.mean())
        text += (
            f"; the within-route spread left once that scaled driver's term is taken out is "
            f"{np.sqrt(float((rest**2).sum() / dof)):.1f} Wh (pooled, as above)"
        )
    return [text + "."]


def correlation_lines(
    corr: pd.DataFrame, net: str, d: pd.DataFrame, wv: float, dof: int, best: dict[str, float], turn: bool
) -> list[str]:
    """The fitted within-trip correlations and, when the coverage goal is missed, what bounds it (from the tables)."""
    kind = "turn" if turn else "edge"
    lag = CORR_LAGS[-1]
    one = correlation_of(corr, net, kind, 0)
    by = correlation_of(corr, net, kind, lag)
    edge_one = correlation_of(corr, net, "edge", 0)
    shown = [k for k in (1, 2, 3, 5, lag) if k <= lag]
    lines = [
        f"* Within-trip correlation fitted on the replay's recorded day ({kind} arms): one rho = {one.rho_far:.3f} "
        f"(s.e. {one.se_far:.3f}; {one.trips} trips with two or more traversals of arms with a variance, "
        f"{one.pairs_far} pairs; edge arms: {edge_one.rho_far:.3f}); by lag: "
        + ", ".join(f"{k} apart {by.rho_lag[k - 1]:.3f}" for k in shown)
        + f", more than {lag} apart {by.rho_far:.3f} (s.e. at most "
        f"{max((*by.se_lag, by.se_far)):.3f}).",
    ]
    ho = corr[(corr["network"] == net) & (corr["arms"] == kind)].iloc[0]
    lines.append(
        f"* Check without live data: the replay's vehicles split at random in two halves, each half fitted (means, "
        f"variances, one rho: {ho['rho_min']:.3f}-{ho['rho_max']:.3f}) and the other half's trips predicted over "
        f"their first {int(ho['window'])} traversals ({kind} arms; the {int(ho['windows'])} trips with that many, "
        "every one of an arm with 2 or more traversals in the fitted half): the trip-correlated "
        f"interval (one rho) covers {100 * ho['cover']:.1f} % of them, the independent one "
        f"{100 * ho['cover_independent']:.1f} %."
    )
    if 0.85 <= best["cover"] <= 0.95:
        return lines
    err = (d["turn" if turn else "edge"] - d["live"]).abs().to_numpy()
    trip_sd = float(np.median(d[f"{kind}_trip_sd_lag0"]))
    sd = d[f"{kind}_sd_lag0"].to_numpy()
    mean_sd = float(np.median(np.sqrt(np.maximum(sd**2 - d[f"{kind}_trip_sd_lag0"].to_numpy() ** 2, 0.0))))
    text = (
        f"* What bounds the coverage: a 90 % interval of these errors needs a half-width of "
        f"{np.quantile(err, 0.9):.1f} Wh (the 90 % quantile of |prediction - live|); the trip-correlated one (one rho) "
        f"has {Z90 * float(np.median(sd)):.1f} Wh in median. Its sd splits into the spread of one trip, "
        f"{trip_sd:.1f} Wh in median, and the error of the replay's means (sum s^2 / n), {mean_sd:.1f} Wh in median"
    )
    mse = best["rmse"] ** 2
    if dof and np.isfinite(wv):
        rest = mse - wv
        text += (
            f"; live, the same route driven at different clock times and speed factors varies with a pooled "
            f"within-route s.d. of {np.sqrt(wv):.1f} Wh"
            + (
                f", and the rest of the mean squared error, the route means' error, is {np.sqrt(rest):.1f} Wh "
                f"(root of MSE {mse:.0f} Wh^2 - within-route variance {wv:.0f} Wh^2)."
                if rest > 0
                else f", as much as the RMSE ({best['rmse']:.1f} Wh) or more: the error is all trip-to-trip spread."
            )
        )
    else:
        text += "."
    return lines + [text]


def eq8_section(summary: list[tuple[str, pd.DataFrame, pd.DataFrame]], trav: pd.DataFrame) -> list[str]:
    """Eq. 8's variants against the replay's edge means, the live edge means and the live and replay routes."""
    lines = [
        "## Eq. 8 variants against SUMO",
        "",
        "Reduced prior `E_det - m g dz` (`evroute/environments/sumo_replay.py`) of each variant "
        "(`VARIANTS` in `studies/sumo_live_routes/runner.py`; profile fields on top of `sumo_ev`). "
        "Edge rows: the edges driven live, each once, against the replay's mean of the edge and against the mean of "
        "its live traversals; route rows: "
        "the sum over the route against the replay's sum (edge arms) and against the live trip. "
        "The last column: paired difference of the absolute route error against the paper's Eq. 8 "
        "(variant - paper, mean and 95 % t-interval over the live trips; negative: the variant is closer).",
        "",
        "| network | variant | edges | edge bias vs replay | edge R^2 vs replay | edge bias vs live | edge R^2 vs live "
        "| route bias vs replay | route R^2 vs replay | route bias vs live | route R^2 vs live | abs route error "
        "vs paper (Wh) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for net, d, _ in summary:
        t = trav[(trav["network"] == net) & trav["trip"].isin(d.index)]
        e = t.groupby("edge").agg(
            live=("reduced_wh", "mean"),
            replay=("replay_mean_wh", "first"),
            **{k: (f"eq8_{k}_wh", "first") for k in VARIANTS},
        )
        base_err = np.abs(d["eq8_paper"] - d["live"]).to_numpy()
        for k in VARIANTS:
            fr, fl = (
                prediction_fit(e["replay"].to_numpy(), e[k].to_numpy()),
                prediction_fit(e["live"].to_numpy(), e[k].to_numpy()),
            )
            rr, rl = (
                prediction_fit(d["edge"].to_numpy(), d[f"eq8_{k}"].to_numpy()),
                prediction_fit(d["live"].to_numpy(), d[f"eq8_{k}"].to_numpy()),
            )
            diff = np.abs(d[f"eq8_{k}"] - d["live"]).to_numpy() - base_err
            m, _ = mean_se(diff)
            lo, hi = t_interval(diff)
            pair = "--" if k == "paper" else f"{m:+.1f} [{lo:+.1f}, {hi:+.1f}]"
            lines.append(
                f"| {net} | {k} | {len(e)} | {fr['bias']:+.2f} | {fr['r2']:.3f} | {fl['bias']:+.2f} | {fl['r2']:.3f} "
                f"| {rr['bias']:+.1f} | {rr['r2']:.3f} | {rl['bias']:+.1f} | {rl['r2']:.3f} | {pair} |"
            )
            if k != "paper":
                verdicts.append((net, k, m, lo, hi, rl["r2"]))
    lines.append("")
    v = sumo_vehicle()
    for net, d, _ in summary:  # is a stop-and-go term missing? the reduced energy against the kinetic energy moved
        t = trav[(trav["network"] == net) & trav["trip"].isin(d.index)]
        kin = (t["energy_wh"] - t["reduced_wh"] - t["potential_wh"]).to_numpy()
        y = (t["reduced_wh"] - t["eq8_aux_wh"]).to_numpy()
        x = np.column_stack([np.ones(len(t)), np.maximum(-kin, 0.0), np.maximum(kin, 0.0)])
        coef = np.linalg.lstsq(x, y, rcond=None)[0]
        phys = 1 / v.propulsion_efficiency - v.recuperation_efficiency
        lines.append(
            f"* {net}, stop and go: per live traversal, (reduced energy - Eq. 8 `aux`) = {coef[0]:+.2f} Wh "
            f"{coef[1]:+.3f} x kinetic energy braked away {coef[2]:+.3f} x kinetic energy gained (least squares, "
            f"{len(t)} traversals; braked and gained kinetic energy {np.mean(np.maximum(-kin, 0)):.1f} and "
            f"{np.mean(np.maximum(kin, 0)):.1f} Wh per traversal in mean): a stop and restart, fitted, changes the "
            f"reduced energy by {coef[1] + coef[2]:+.3f} x the kinetic energy (the efficiencies alone would give "
            f"1/eta+ - eta- = {phys:+.3f})"
            + (
                ", so a stop-and-go term of Eq. 8 has little to add here."
                if abs(coef[1] + coef[2]) <= abs(phys)
                else "."
            )
        )
    for net, k, m, lo, hi, r2 in verdicts:
        word = (
            "closer to" if hi < 0 else ("farther from" if lo > 0 else "not distinguishable from the paper's Eq. 8 on")
        )
        tail = "" if word.startswith("not") else " than the paper's Eq. 8"
        lines.append(
            f"* {net}, `{k}`: {word} the live route energies{tail} (paired absolute error {m:+.1f} Wh, 95 % "
            f"interval [{lo:+.1f}, {hi:+.1f}]; route R^2 vs live {r2:.3f})."
        )
    return lines + [""]


def _binomial_interval(share: float, n: int) -> str:
    """Clopper-Pearson 95 % interval of a share of ``n`` trials, as ``"a-b %"``."""
    from scipy.stats import beta

    k = round(share * n)
    lo = beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{100 * lo:.1f}-{100 * hi:.1f} %"
