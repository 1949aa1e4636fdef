"""The live-routes study (``studies/sumo_live_routes/run.py``): its set-up, its tables and the predictions derived
from them.

Does the replay predict live SUMO trips?  Routes between random origin-destination pairs are driven live
(``sumo-live``'s :class:`~evroute.sumo.live.LiveSimulation`) and predicted from the replay's recorded day of the same
scenario.  This module holds what the script's steps (``collect``, ``arms``) and the report
(:mod:`studies.sumo_live_routes.report`) share:

* the set-up: the replay scenario of each network (:data:`SCENARIOS`, :func:`day_spec`), the clock times of the
  live trips (:func:`snapshot_times`), the route kinds (:data:`KINDS`), the Eq. 8 prior variants compared
  (:data:`VARIANTS`), the vehicle (:func:`sumo_vehicle`) and the turn arms' and within-trip correlation's settings
  (:data:`TURN_MIN`, :data:`CORR_LAGS`, :data:`HOLDOUT_WINDOW`);
* the tables under ``docs/results/data/`` (:data:`TRIPS`, :data:`TRAV`, :data:`ARMS`, :data:`CORR`,
  :data:`HOLDOUT`): appended to while trips finish (:func:`append_rows`), one network's rows replaced
  (:func:`replace_network_rows`), read and joined (:func:`load_tables`);
* each recorded traversal's next edge where a recording lacks it (:func:`next_edges`);
* per live trip, the route-level predictions with their variances and trip-correlated sds
  (:func:`route_predictions`), and a predictor's bias, RMSE, R^2 and 90 % interval coverage (:func:`prediction_fit`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

TRIPS, TRAV, ARMS = "sumo_live_routes_trips.csv", "sumo_live_routes_traversals.csv.gz", "sumo_live_routes_arms.csv"
CORR, HOLDOUT = "sumo_live_routes_correlation.csv", "sumo_live_routes_holdout.csv"
#: traversals of the replay's held-out trip windows the interval is checked on without live data (live routes: ~20)
HOLDOUT_WINDOW = 20
#: a turn arm with this many replay traversals has a mean and variance of its own (fewer: its edge's)
TURN_MIN = 2
#: the within-trip correlation fits written by ``arms`` (:mod:`evroute.sumo.trip_interval`): one rho for every
#: pair of a trip's traversals (0), and one per lag up to this many places apart next to one beyond (a diagnostic)
CORR_LAGS = (0, 10)
#: the replay scenario of each network: the whole recorded day on Monaco, the 7-9 h peak on Luxembourg (the bandit
#: study's, ``docs/results/sumo_bandit.md``)
SCENARIOS: dict[str, dict[str, Any]] = {
    "monaco": {"max_probe_rounds": 1},
    "luxembourg": {"peak_per_hour": 1800, "hours": (7, 9), "min_samples": 3, "max_probe_rounds": 2},
}
KINDS = ("shortest", "fastest", "replay", "eq8")
#: Eq. 8 prior variants compared (vehicle profile fields set on top of ``sumo_ev``): the paper's Eq. 8; with SUMO's
#: 100 W auxiliaries over the free-flow time; with the cornering drag of the edge polylines (SUMO's 0.1 m); and a
#: 20 kW regeneration limit (SUMO's ``Energy`` model has none: a check that the table can show a change for the worse)
VARIANTS: dict[str, dict[str, float]] = {
    "paper": {},
    "aux": {"auxiliary_power_w": 100.0},
    "aux_corner": {"auxiliary_power_w": 100.0, "radial_drag_m": 0.1},
    "aux_corner_regen": {"auxiliary_power_w": 100.0, "radial_drag_m": 0.1, "max_regen_power_kw": 20.0},
}
#: the Eq. 8 variant whose slope in the driver's speed factor (``eq8_dsf_wh`` of the arms table: d/ds of the edge's
#: reduced prior with every speed scaled by s, at s = 1, Wh per unit of s) turns a route's replay prediction into one
#: for a driver of known speed factor (SUMO's ``speedFactor``: the ratio of the driver's speed to the limit)
DRIVER_VARIANT = "aux"
#: the relative step of the central difference of that slope
DRIVER_STEP = 0.01
Z90 = 1.6448536269514722  # two-sided 90 % normal quantile
TRIP_COLUMNS = (
    "network",
    "trip",
    "od",
    "kinds",
    "route",
    "slot",
    "speed_factor",
    "command",
    "pred",
    "succ",
    "depart_s",
    "insert_s",
    "arrive_s",
    "ok",
    "failure",
    "battery_wh",
    "reduced_wh",
    "travel_s",
    "trip_battery_wh",
    "cpu_s",
    "wall_s",
    "commit",
)  # fmt: skip  (commit: the checkout that recorded the trip, studies/reproduce/provenance.py)
TRAV_COLUMNS = ("trip", "k", "edge", "next_edge", "energy_wh", "reduced_wh", "travel_s")


def day_spec(network: str) -> Any:
    """The :class:`~evroute.sumo.replay.DaySpec` of the network's replay scenario (:data:`SCENARIOS`)."""
    from evroute.sumo.replay import DaySpec

    return DaySpec(**SCENARIOS[network])


def snapshot_times(spec: Any, n: int) -> np.ndarray:
    """``(n,)`` departure times (s since midnight): the middles of ``n`` equal parts of the window, whole seconds."""
    a, b = spec.window
    return np.floor(a * 3600.0 + (np.arange(n) + 0.5) * (b - a) * 3600.0 / n)


def sumo_vehicle() -> Any:
    """The study's vehicle: the ``sumo_ev`` profile (the replay's, the live trips' and Eq. 8's)."""
    from evroute.energy import VehicleProfile

    return VehicleProfile.load("sumo_ev")


def next_edges(day: pd.DataFrame, lg: Any) -> np.ndarray:
    """``(N,)`` the edge each recorded traversal was left into (line-graph index; -1 where not unique or unknown).

    The recorded day keeps no vehicle ids, but a vehicle's next traversal starts exactly when this one ends
    (``entry_s + travel_s``, whole simulation steps) on a legal successor: a traversal whose end time and
    successors match exactly one recorded traversal gets that traversal's edge.  Unmatched: the vehicle's last
    complete traversal (its next edge was its partial arrival edge, not recorded, e.g. every probe traversal) and
    ties (two vehicles entering successors of the edge in the same step).  A wrong match needs another vehicle to
    enter a successor of the edge in the very step the vehicle's unrecorded next traversal began.
    """
    adj = lg.adjacency.tocsr()
    a = pd.DataFrame({"i": np.arange(len(day)), "e": day["edge"].to_numpy(), "t": day["entry_s"] + day["travel_s"]})
    b = pd.DataFrame({"f": day["edge"].to_numpy(), "t": day["entry_s"].to_numpy()})
    a["t"], b["t"] = a["t"].round(3), b["t"].round(3)
    m = a.merge(b, on="t")
    m = m[np.asarray(adj[m["e"].to_numpy(), m["f"].to_numpy()]).ravel() > 0]
    unique = m.groupby("i")["f"].agg(["size", "first"])
    unique = unique[unique["size"] == 1]
    out = np.full(len(day), -1, dtype=np.int64)
    out[unique.index.to_numpy()] = unique["first"].to_numpy()
    return out


def append_rows(path: Path, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
    """Append ``rows`` (columns ``columns``, in order) to the CSV ``path``, with a header if it is new."""
    if not rows:
        return
    df = pd.DataFrame(rows).reindex(columns=list(columns))
    new = not path.is_file()
    df.to_csv(path, mode="a", header=new, index=False, float_format="%.6g")


def replace_network_rows(path: Path, out: pd.DataFrame, network: str) -> None:
    """Write ``out`` as the rows of ``network`` in the CSV ``path`` (the other networks' rows kept)."""
    if path.is_file():
        old = pd.read_csv(path)
        out = pd.concat([old[old["network"] != network], out], ignore_index=True)
    out.to_csv(path, index=False, float_format="%.6g")


def load_tables(data: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(trips, traversals, correlations)``: the trips, their traversals each joined with its arm's replay
    statistics, and the within-trip correlations fitted on the replay (``arms`` step), each row joined with its
    network's and arms' held-out check (:func:`evroute.sumo.trip_interval.holdout_coverage`)."""
    missing = missing_tables(data)
    if missing:
        raise FileNotFoundError(f"--data {data}: missing {', '.join(missing)}")
    trips = pd.read_csv(data / TRIPS, dtype={"commit": str})
    trav = pd.read_csv(data / TRAV).drop_duplicates(["trip", "k"], keep="last")  # a trip redone after a kill
    arms_ = pd.read_csv(data / ARMS)
    trav = trav.merge(trips[["trip", "network"]], on="trip")
    trav = trav.merge(arms_, on=["network", "edge", "next_edge"], how="left", validate="many_to_one")
    corr = pd.read_csv(data / CORR).merge(
        pd.read_csv(data / HOLDOUT), on=["network", "arms"], how="left", validate="many_to_one"
    )
    return trips, trav, corr


def missing_tables(data: Path) -> list[str]:
    """The paths of the report's tables that are not in the folder ``data`` (none: the report can be built)."""
    return [str(data / f) for f in (TRIPS, TRAV, ARMS, CORR, HOLDOUT) if not (data / f).is_file()]


def correlation_of(corr: pd.DataFrame, network: str, kind: str, max_lag: int) -> Any:
    """The network's :class:`evroute.sumo.trip_interval.TripCorrelation` of ``kind`` arms and ``max_lag`` in the
    table the ``arms`` step wrote."""
    from evroute.sumo.trip_interval import correlation_from_table

    return correlation_from_table(corr[corr["network"] == network], kind, max_lag)


def route_predictions(trips: pd.DataFrame, trav: pd.DataFrame, corr: pd.DataFrame) -> pd.DataFrame:
    """Per successful trip: live reduced energy and every prediction (sums over the route's arms) with its variance
    with arms independent (``edge_var``, ``turn_var``), the turn arms' prediction for the trip's driver
    (``turn_driver``: ``turn + (s - 1) driver_slope_wh`` with ``s`` the trip's speed factor and
    ``driver_slope_wh = sum eq8_dsf_wh`` over the route; only where the arms
    table has the slope, :data:`DRIVER_VARIANT`) and its sd with the replay's within-trip correlation
    (``{edge,turn}_sd_lag{max_lag}``, :func:`evroute.sumo.trip_interval.route_sd` over the route's arms in driving
    order)."""
    from evroute.sumo.trip_interval import route_sd

    ok = trips[trips["ok"].astype(bool)].set_index("trip")
    t = trav[trav["trip"].isin(ok.index)].copy()
    t["edge_var"] = t["replay_var_wh2"] * (1.0 + 1.0 / t["replay_n"].clip(lower=1))
    has_turn = t["turn_n"] >= TURN_MIN
    t["turn_pred"] = np.where(has_turn, t["turn_mean_wh"], t["replay_mean_wh"])  # fallback: the edge arm
    t["turn_var"] = np.where(has_turn, t["turn_var_wh2"] * (1.0 + 1.0 / t["turn_n"].clip(lower=1)), t["edge_var"])
    cols = {"live": "reduced_wh", "edge": "replay_mean_wh", "edge_var": "edge_var", "turn": "turn_pred"}
    cols |= {"turn_var": "turn_var", **{f"eq8_{k}": f"eq8_{k}_wh" for k in VARIANTS}}
    g = t.groupby("trip")
    out = pd.DataFrame({k: g[c].sum() for k, c in cols.items()})
    if "eq8_dsf_wh" in t.columns:  # the driver's speed factor known: the replay's means (drivers of mean factor
        # about 1) moved along Eq. 8's slope to the trip's factor
        out["driver_slope_wh"] = g["eq8_dsf_wh"].sum()  # Wh per unit of speed factor along the route
        out["turn_driver"] = out["turn"] + (ok.loc[out.index, "speed_factor"] - 1.0) * out["driver_slope_wh"]
    out["turn_share"] = g["turn_n"].apply(lambda x: float(np.mean(x >= TURN_MIN)))
    t["turn_sd1"] = np.sqrt(np.where(has_turn, t["turn_var_wh2"], t["replay_var_wh2"]))  # one traversal's sd
    t["turn_cnt"] = np.where(has_turn, t["turn_n"], t["replay_n"])
    t["edge_sd1"] = np.sqrt(t["replay_var_wh2"])
    net_of = ok["network"]
    for kind, sd_col, n_col in (("edge", "edge_sd1", "replay_n"), ("turn", "turn_sd1", "turn_cnt")):
        for max_lag in CORR_LAGS:
            fits = {n: correlation_of(corr, n, kind, max_lag) for n in net_of.unique()}
            by_trip = list(t.sort_values(["trip", "k"]).groupby("trip"))
            out[f"{kind}_sd_lag{max_lag}"] = pd.Series(
                {trip: route_sd(r[sd_col].to_numpy(), r[n_col].to_numpy(), fits[net_of[trip]]) for trip, r in by_trip}
            )
            # the model's spread of one trip alone, without the error of the replay's means
            out[f"{kind}_trip_sd_lag{max_lag}"] = pd.Series(
                {trip: route_sd(r[sd_col].to_numpy(), np.zeros(len(r)), fits[net_of[trip]]) for trip, r in by_trip}
            )
    out["live_sum_check"] = ok.loc[out.index, "reduced_wh"]
    return out.join(ok[["network", "od", "kinds", "route", "slot", "battery_wh", "travel_s"]])


def prediction_fit(live: np.ndarray, pred: np.ndarray, sd: np.ndarray | None = None) -> dict[str, float]:
    """Bias (mean pred - live), RMSE, R^2 = 1 - SSE / SST of the live values, coverage of ``pred +- Z90 sd``."""
    r = pred - live
    out = {
        "n": float(len(live)),
        "bias": float(r.mean()),
        "rmse": float(np.sqrt((r**2).mean())),
        "r2": float(1.0 - (r**2).sum() / ((live - live.mean()) ** 2).sum()),
        "cover": np.nan,
        "width": np.nan,
    }
    if sd is not None:
        out["cover"] = float(np.mean(np.abs(r) <= Z90 * sd))
        out["width"] = float(np.median(2 * Z90 * sd))
    return out
