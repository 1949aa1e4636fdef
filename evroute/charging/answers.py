"""What a driver is told about a charging plan: legs, stops, arrival charges with 90 % intervals, P(reach), the
exact joint probability of keeping the reserve everywhere, the charge along the route; as text, JSON and GeoJSON.

Joint probability.  With the leg energies ``E ~ N(mu, S)`` of one trip (:func:`evroute.charging.legs.leg_covariance`:
the posterior's correlations and the trip-level effect), the plan keeps the reserve everywhere (counting on the
departure charges ``d_k``) when ``E_k <= (d_k - r) C`` for every leg: a multivariate normal probability
(:func:`joint_probability`), at least ``1 - sum eps`` by the union bound the search uses.

Charge along the route.  Along each leg the charge after the first ``i`` driven edges is ``d_k - (prefix energy) /
C`` with the prefix's variance from the same covariance (:func:`charge_profile`); ``reserve_hit_km`` says where
the mean charge would fall below the reserve on the direct route (the least-cost leg from origin to destination)
without charging.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import multivariate_normal, norm

from evroute.charging.legs import KINDS, leg_covariance
from evroute.charging.search import Plan, PlanProblem
from evroute.driver.answers import Z90
from evroute.driver.belief import RouteBelief


def joint_probability(plan: Plan, problem: PlanProblem, belief: RouteBelief) -> float:
    """``P(every arrival >= reserve)`` of ``plan`` under the joint Gaussian of its leg energies (module doc)."""
    t, s = problem.t, problem.s
    cov = leg_covariance(t, belief, plan.legs)
    upper = (plan.depart - s.reserve) * s.capacity_wh - t.mean_wh[plan.legs]
    if len(upper) == 1:
        sd = float(np.sqrt(cov[0, 0]))
        return float(norm.cdf(upper[0] / sd)) if sd > 0 else float(upper[0] >= 0)
    cov = cov + 1e-9 * np.eye(len(upper)) * max(1.0, float(np.trace(cov)))
    return float(multivariate_normal(mean=np.zeros(len(upper)), cov=cov).cdf(upper))


def charge_profile(plan: Plan, problem: PlanProblem, belief: RouteBelief, lg: Any) -> dict[str, np.ndarray]:
    """The charge along the plan: ``km`` (cumulative distance at the end of each driven edge, ``(P,)``), ``mean``,
    ``lo``, ``hi`` (charge and its 90 % interval, fractions), ``leg`` (index in the plan).  Detours are left out."""
    t, s = problem.t, problem.s
    net = lg.network
    rho = t.trip_rho
    km, mean, sd, leg_no = [], [], [], []
    dist = 0.0
    for n, (leg, dep) in enumerate(zip(plan.legs, plan.depart, strict=True)):
        e = t.driven(leg)
        if not len(e):
            continue
        if belief.joint:
            c = belief.cov(e)
            var_f = np.cumsum(np.cumsum(c, axis=0), axis=1).diagonal()
        else:
            var_f = np.cumsum(belief.var[e])
        nv = np.cumsum(belief.noise_var[e])
        ns = np.cumsum(np.sqrt(belief.noise_var[e]))
        ms = np.cumsum(belief.effect_mean[e])
        var = var_f + (1 - rho) * nv + rho * ns**2 + belief.trip_rel_var * ms**2
        km.append(dist + np.cumsum(net.length_m[e]) / 1000.0)
        dist = float(km[-1][-1])
        mean.append(dep - np.cumsum(belief.mean[e]) / s.capacity_wh)
        sd.append(np.sqrt(var) / s.capacity_wh)
        leg_no.append(np.full(len(e), n))
    m, d = np.concatenate(mean), np.concatenate(sd)
    return {"km": np.concatenate(km), "mean": m, "lo": m - Z90 * d, "hi": m + Z90 * d, "leg": np.concatenate(leg_no)}


def reserve_hit_km(profile: dict[str, np.ndarray], reserve: float) -> float | None:
    """Distance (km) where the mean charge first falls below ``reserve``; None if it never does."""
    below = np.flatnonzero(profile["mean"] < reserve)
    return float(profile["km"][below[0]]) if len(below) else None


def plan_dict(plan: Plan, problem: PlanProblem, belief: RouteBelief, lg: Any, chargers: Any) -> dict[str, Any]:
    """The plan as a JSON-ready dict (times in s, energies in Wh, charges as fractions)."""
    t, s = problem.t, problem.s
    net = lg.network
    sites = t.sites
    legs = []
    for n, leg in enumerate(plan.legs):
        src, dst = int(t.src[leg]), int(t.dst[leg])
        legs.append(
            {
                "from": sites.names[src],
                "to": sites.names[dst],
                "route": KINDS[int(t.kind[leg])],
                "length_m": float(t.length_m[leg]),
                "time_s": float(t.time_s[leg]),
                "energy_wh": float(t.mean_wh[leg]),
                "energy_sd_wh": float(np.sqrt(t.var_wh2[leg])),
                "depart_charge": float(plan.depart[n]),
                "arrival_charge": float(plan.arrive_mean[n]),
                "arrival_charge_90": [
                    float(plan.arrive_mean[n] - Z90 * plan.arrive_sd[n]),
                    float(plan.arrive_mean[n] + Z90 * plan.arrive_sd[n]),
                ],
                "p_reach": float(1.0 - plan.eps[n]),
                "edges": net.edge_ids[t.route(leg)].tolist(),
            }
        )
    stops = []
    for n, leg in enumerate(plan.legs[:-1]):
        j = int(t.dst[leg])
        c = j - 1
        stops.append(
            {
                "charger": sites.names[j],
                "lon": float(chargers.lon[c]),
                "lat": float(chargers.lat[c]),
                "power_kw": float(sites.power_kw[j]),
                "connector": chargers.connector[c],
                "availability": float(chargers.availability[c]),
                "detour_m": float(2 * sites.detour_m[j]),
                "arrival_charge": legs[n]["arrival_charge"],
                "arrival_charge_90": legs[n]["arrival_charge_90"],
                "p_reach": legs[n]["p_reach"],
                "charge_to": float(plan.targets[n]),
                "charging_time_s": float(plan.charge_s[n]),
            }
        )
    drive = float(t.time_s[plan.legs].sum())
    profile = charge_profile(plan, problem, belief, lg)
    direct = [int(i) for i in problem.by_src.get(0, []) if int(t.dst[i]) == t.sites.dest]
    no_charging = problem.make_plan([min(direct, key=lambda i: problem.leg_cost[i])], [], certified=True)
    return {
        "feasible": plan.feasible,
        "certified": plan.certified,
        "delta": s.delta if s.buffer is None else None,
        "buffer": s.buffer,
        "reserve": s.reserve,
        "start_charge": s.charge,
        "capacity_wh": s.capacity_wh,
        "total_time_s": drive + float(plan.charge_s.sum()) + s.stop_s * plan.stops,
        "driving_time_s": drive,
        "charging_time_s": float(plan.charge_s.sum()),
        "stop_time_s": s.stop_s * plan.stops,
        "energy_wh": float(t.mean_wh[plan.legs].sum()),
        "cost": plan.cost,
        "risk_bound": plan.risk,
        "p_all_reserve": joint_probability(plan, problem, belief),
        "grid_step": s.step,
        "grid_bound_s": problem.grid_bound_s(),
        "labels_settled": plan.labels,
        "stops": stops,
        "legs": legs,
        "charge_profile": {k: np.round(v, 5).tolist() for k, v in profile.items()},
        "reserve_hit_km": reserve_hit_km(charge_profile(no_charging, problem, belief, lg), s.reserve),
    }


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def plan_text(d: dict[str, Any], head: str) -> str:
    """Text of :func:`plan_dict`'s answer (``head``: the first line)."""
    out = [head]
    if d["buffer"] is None:
        rule = f"P(charge >= reserve at every stop and at the destination) >= {1 - d['delta']:g}"
    else:
        rule = f"mean arrival >= reserve + {100 * d['buffer']:g} % at every stop"
    out.append(
        f"battery {d['capacity_wh'] / 1000:g} kWh, start {_pct(d['start_charge'])} %, reserve {_pct(d['reserve'])} %; "
        f"{rule}"
    )
    if not d["feasible"]:
        out.append("NO FEASIBLE PLAN")
    for n, leg in enumerate(d["legs"]):
        lo, hi = leg["arrival_charge_90"]
        out.append(
            f"  leg {n + 1}: {leg['from']} -> {leg['to']} ({leg['route']} route) {leg['length_m'] / 1000:.2f} km, "
            f"{leg['time_s'] / 60:.1f} min, {leg['energy_wh']:.0f} +- {leg['energy_sd_wh']:.0f} Wh; arrive "
            f"{_pct(leg['arrival_charge'])} % [{_pct(lo)}, {_pct(hi)}], P(reach with reserve) {leg['p_reach']:.4f}"
        )
        if n < len(d["stops"]):
            st = d["stops"][n]
            out.append(
                f"  stop {n + 1}: {st['charger']} ({st['power_kw']:g} kW {st['connector']}, detour "
                f"{st['detour_m']:.0f} m): charge to {_pct(st['charge_to'])} %, {st['charging_time_s'] / 60:.1f} min "
                "expected"
            )
    out.append(
        f"total {d['total_time_s'] / 60:.1f} min (driving {d['driving_time_s'] / 60:.1f}, charging "
        f"{d['charging_time_s'] / 60:.1f}, stops {d['stop_time_s'] / 60:.1f}); energy {d['energy_wh']:.0f} Wh; "
        f"P(reserve kept everywhere) {d['p_all_reserve']:.4f} (union bound >= {1 - d['risk_bound']:.4f})"
    )
    hit = d["reserve_hit_km"]
    if hit is not None:
        out.append(f"without charging the mean charge would fall below the reserve at km {hit:.2f}")
    if d["stops"]:
        out.append(
            f"charge targets on a {100 * d['grid_step']:g} % grid: at most {d['grid_bound_s'] / 60:.1f} min above "
            "the optimum with free targets (same candidate legs)"
        )
    if not d["certified"]:
        out.append("the search stopped at its label limit: not certified optimal")
    return "\n".join(out)


def farthest_text(plan: Plan, problem: PlanProblem) -> str:
    """One line on the partial plan to the reachable charger nearest the destination (infeasible plans)."""
    far = plan.farthest
    t = problem.t
    if far is None:
        return "no charger is reachable with that probability either"
    j = int(t.dst[far.legs[-1]])
    return (
        f"farthest reachable charger: {t.sites.names[j]} ({len(far.legs)} leg(s), P(reach) "
        f"{1 - far.eps[-1]:.4f}, arrival {_pct(far.arrive_mean[-1])} %), {problem.h[j] / 60:.1f} min from the "
        "destination"
    )


def plan_geojson(d: dict[str, Any], lg: Any) -> dict[str, Any]:
    """GeoJSON of the plan: one LineString per leg and one Point per stop, with their answers as properties."""
    net = lg.network
    feats: list[dict[str, Any]] = []
    for n, leg in enumerate(d["legs"]):
        coords = np.concatenate([net.geometry[net.index_of(e)] for e in leg["edges"]])
        props = {k: v for k, v in leg.items() if k != "edges"} | {"kind": "leg", "leg": n + 1}
        feats.append(
            {"type": "Feature", "geometry": {"type": "LineString", "coordinates": coords.tolist()}, "properties": props}
        )
    for n, st in enumerate(d["stops"]):
        props = dict(st) | {"kind": "stop", "stop": n + 1}
        feats.append(
            {
                "type": "Feature",
                "geometry": {"type": "Point", "coordinates": [st["lon"], st["lat"]]},
                "properties": props,
            }
        )
    return {"type": "FeatureCollection", "features": feats}


__all__ = [
    "charge_profile",
    "farthest_text",
    "joint_probability",
    "plan_dict",
    "plan_geojson",
    "plan_text",
    "reserve_hit_km",
]
