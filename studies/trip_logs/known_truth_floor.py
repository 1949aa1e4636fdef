"""Where the known-truth study's held-out error comes from: the prior's systematic error, the trip-level noise floor
and what shared structure removes (issue 35, item 5's diagnosis).

From SUMO's exact logs of a study folder (:func:`studies.trip_logs.known_truth_data.load_study`; no degradation, no
readings' noise), every trip's reduced energy (battery minus kinetic and potential energy,
:mod:`evroute.traces.mechanical`) is attributed sample by sample to the edge its exact match puts the sample on, so
each trip has a reduced energy per traversed edge; the whole traversals (not the trip's first or last edge) of
every edge over the pool of trips estimate the edge's **true mean**.  Rows (held-out trips of the study):

Every row is scored on the study's held-out drives (``--repeats`` R: the R drives of each held-out route in the
second run, ``known_truth_repeats``) per drive and against the route means (``known_truth_repeats.score``).

* ``prior``: the study's prior (its reduced energies plus the boundary term; the default prior unless the study's
  ``--prior`` says otherwise);
* ``oracle_edge_means`` (**an oracle ablation, not a learner**): the sum over the held-out route of the true per-edge
  means from every *other* trip of the pool (training and held-out, leave-one-out; the prior where an edge has no
  whole traversal), plus the boundary term.  Its error is what no per-edge learner can remove: the trip-level noise
  (stops, traffic, the vehicles ahead) plus the sampling error of the means;
* ``shared_fit_N``: a least-squares fit of the per-traversal energies of ``N`` training trips on shared edge
  features (the prior's reduced energy, the length, one per edge: three numbers for the whole network), applied to
  the held-out routes: how much of the prior's error shared structure removes.

``floor.csv`` holds one row per (network, row); ``--collect`` is not needed (the report reads the file).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

from evroute.energy import PRIORS
from studies.trip_logs.known_truth_repeats import score_fields

FIELDS = [
    "network",
    "row",
    "n_train",
    "rmse_wh",
    "bias_wh",
    "n_test",
    "note",
    "command",
    "rmse_mean_wh",
    "rmse_mean_raw_wh",
    "n_drives",
]
BIAS_FIELDS = [
    "network",
    "trip",
    "length_m",
    "edges",
    "duration_s",
    "freeflow_s",
    "sumo_wh",
    "prior_wh",
    "speed_profile_wh",
    "rotating_mass_wh",
    "auxiliary_wh",
    "rest_wh",
]


def bias_rows(
    network: str, train: list[str], traces: dict, truth: dict, net, vehicle, energy: dict, prior_wh: np.ndarray
) -> list[dict]:
    """Per training trip, SUMO's battery energy minus the prior's (``prior_wh``, ``(E,)`` the study prior's edge
    energies, summed over the true route, Wh) split into what the prior leaves out, from SUMO's exact log alone (no
    held-out trip, no fit):

    * ``speed_profile_wh``: the trace model (:func:`evroute.traces.energy.trace_energy`, Eq. 8 second by second with
      the kinetic term, SUMO's own altitude ``z``) along SUMO's driven speeds, minus the prior (for the default prior:
      its assumed speed profile and junction stops; for Eq. 8: constant speed at the limits);
    * ``rotating_mass_wh``: the same with SUMO's rotating mass (``SUMO_ONLY_DEFAULTS``) added to the kinetic term;
    * ``auxiliary_wh``: SUMO's constant power intake times the trip's duration (the profile sets none);
    * ``rest_wh``: what remains, i.e. what the trace model does not reproduce of SUMO's Energy model (e.g. its radial
      drag, g = 9.81, its integration step; not separated).
    """
    import dataclasses

    from evroute.sumo.vehicle import SUMO_ONLY_DEFAULTS
    from evroute.traces.energy import TraceModelOptions, trace_energy

    aux_w = vehicle.auxiliary_power_w
    aux_w = SUMO_ONLY_DEFAULTS["constantPowerIntake"] if aux_w is None else aux_w
    bare = dataclasses.replace(vehicle, auxiliary_power_w=None)
    rot = TraceModelOptions(rotating_mass_kg=SUMO_ONLY_DEFAULTS["rotatingMass"])
    out = []
    for n in train:
        tr, route = traces[n], truth[n]
        plain = trace_energy(tr, bare, altitude_m=tr.altitude_m).total_wh
        spun = trace_energy(tr, bare, rot, altitude_m=tr.altitude_m).total_wh
        duration = float(tr.t_s[-1] - tr.t_s[0])
        aux = aux_w * duration / 3600.0
        prior = float(prior_wh[route].sum())
        out.append(
            dict(
                network=network,
                trip=n,
                length_m=f"{net.length_m[route].sum():.1f}",
                edges=len(route),
                duration_s=f"{duration:.0f}",
                freeflow_s=f"{(net.length_m[route] / net.speed_mps[route]).sum():.1f}",
                sumo_wh=f"{energy[n]:.3f}",
                prior_wh=f"{prior:.3f}",
                speed_profile_wh=f"{plain - prior:.3f}",
                rotating_mass_wh=f"{spun - plain:.3f}",
                auxiliary_wh=f"{aux:.3f}",
                rest_wh=f"{energy[n] - spun - aux:.3f}",
            )
        )
    return out


def traversal_energies(st, names: list[str]) -> dict[str, dict[int, float]]:
    """Per trip, ``{edge: reduced energy of its whole traversals (Wh)}`` from SUMO's exact log (module doc); a trip's
    first and last edge and edges driven twice are left out (not one whole traversal)."""
    from evroute.traces.mechanical import path_height_m, sample_mechanical_wh

    net = st.lg.network
    out: dict[str, dict[int, float]] = {}
    for n in names:
        tr = st.traces[n]
        m = st.exact_index.match(tr.lat, tr.lon)
        z = path_height_m(m.edge, m.offset_m, st.exact_index.length_m, net.z_from_m, net.z_to_m)
        z = np.where(np.isfinite(z), z, np.interp(np.arange(len(z)), np.flatnonzero(np.isfinite(z)), z[np.isfinite(z)]))
        battery = (tr.soc_pct[0] - tr.soc_pct) / 100.0 * st.usable
        reduced = battery - sample_mechanical_wh(tr.speed_mps, z, st.sumo_v, st.m_kin)
        inc = np.diff(reduced)
        pos = m.path_index[1:]  # an increment belongs to the edge of the sample it ends at
        ok = pos >= 0
        sums = np.bincount(pos[ok], weights=inc[ok], minlength=len(m.path))
        path = m.path.tolist()
        per: dict[int, float] = {}
        for k in range(1, len(path) - 1):
            if path.count(path[k]) == 1:
                per[int(path[k])] = float(sums[k])
        out[n] = per
    return out


def _features(st) -> np.ndarray:
    """``(E, 3)`` shared features of every edge: the prior's reduced energy (Wh), the length (km), 1."""
    net = st.lg.network
    return np.column_stack([st.red_prior, np.asarray(net.length_m) / 1000.0, np.ones(len(st.red_prior))])


def floor_rows(st, network: str, fit_ns: list[int]) -> list[dict]:
    """The rows of ``floor.csv`` (module doc) for one loaded study."""
    pool = st.train + st.test
    trav = traversal_energies(st, pool)
    sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    for per in trav.values():
        for e, v in per.items():
            sums[e] = sums.get(e, 0.0) + v
            counts[e] = counts.get(e, 0) + 1
    rows = []

    def row(name: str, pred: np.ndarray, n_train: int, note: str) -> dict:
        """A row of the predictions ``pred`` ``(D,)`` of the held-out drives, scored per drive and against the route
        means (``known_truth_repeats.score_fields``)."""
        return dict(
            network=network,
            row=name,
            n_train=n_train,
            **score_fields(pred - st.y_test, st.drive_test),
            n_test=len(st.test),
            note=note,
        )

    routes = st.drive_routes()  # per held-out drive
    pred = np.array([w @ st.red_prior[r] for r, w in zip(routes, st.w_test, strict=True)]) + st.bnd_test
    rows.append(row("prior", pred, 0, f"{st.prior} reduced + boundary"))
    means, known, total = [], 0, 0  # per held-out route: its edges' leave-one-out means (the oracle)
    for n in st.test:
        own, r = trav[n], st.truth[n]
        mean = st.red_prior[r].copy()
        for k, e in enumerate(r.tolist()):
            c = counts.get(e, 0) - (e in own)
            total += 1
            if c > 0:
                mean[k] = (sums[e] - own.get(e, 0.0)) / c
                known += 1
        means.append(mean)
    oracle = [w @ means[i] for i, w in zip(st.drive_test, st.w_test, strict=True)]
    pred = np.array(oracle) + st.bnd_test
    rows.append(row("oracle_edge_means", pred, len(pool) - 1, f"edges with a mean {known / total:.3f}"))
    feats = _features(st)
    for n_fit in fit_ns:
        xs, ys = [], []
        for n in st.train[:n_fit]:
            for e, v in trav[n].items():
                xs.append(feats[e])
                ys.append(v)
        coef = np.linalg.lstsq(np.array(xs), np.array(ys), rcond=None)[0]
        pred = np.array([w @ (feats[r] @ coef) for r, w in zip(routes, st.w_test, strict=True)]) + st.bnd_test
        note = "coef prior x{:.3f}, {:+.2f} Wh/km, {:+.2f} Wh/edge".format(*coef)
        rows.append(row(f"shared_fit_{n_fit}", pred, n_fit, note))
    # the within-trip correlation: held-out residual variance of the oracle vs the sum of its edges' variances
    var_e = {}
    for e in counts:
        vals = [per[e] for per in trav.values() if e in per]
        if len(vals) > 1:
            var_e[e] = float(np.var(vals, ddof=1))
    indep = np.mean([sum(var_e.get(e, 0.0) for e in st.truth[n][1:-1].tolist()) for n in st.test])
    res = np.array(oracle) + st.bnd_test - st.y_test
    rows.append(
        dict(
            network=network,
            row="trip_variance",
            n_train=len(pool),
            rmse_wh=f"{np.sqrt(indep):.3f}",
            bias_wh="",
            n_test=len(st.test),
            n_drives=str(len(res)),
            note=f"sqrt of the mean sum of per-edge traversal variances (independent edges) vs the oracle's "
            f"residual RMS per held-out drive {np.sqrt(np.mean(res**2)):.3f}",
        )
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    from studies.trip_logs.known_truth_data import load_study

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--network", default="monaco")
    p.add_argument("--out", required=True, help="the known-truth study folder (its sim/ is reused)")
    p.add_argument("--train", type=int, default=1000)
    p.add_argument("--test", type=int, default=60)
    p.add_argument("--min-route-m", type=float, default=1000.0)
    p.add_argument("--fit-ns", default="10,100,1000")
    p.add_argument("--repeats", type=int, default=0, help="the study's --repeats (its held-out drives)")
    p.add_argument("--prior", default=PRIORS[0], help=f"the study's prior, among {', '.join(PRIORS)}")
    args = p.parse_args(argv)
    fit_ns = [int(x) for x in args.fit_ns.split(",") if x]
    if not fit_ns or min(fit_ns) < 1 or max(fit_ns) > args.train or args.prior not in PRIORS or args.repeats < 0:
        print(
            f"evroute: error: --fit-ns must be within 1..--train, --prior one of {', '.join(PRIORS)}, --repeats >= 0",
            file=sys.stderr,
        )
        return 2
    out = Path(args.out)
    st = load_study(args.network, out, args.train, args.test, args.min_route_m, args.prior, args.repeats)
    rows = floor_rows(st, args.network, fit_ns)
    import shlex

    command = " ".join(
        ["python -m studies.trip_logs.known_truth_floor", *(shlex.quote(a) for a in (argv or sys.argv[1:]))]
    )
    for r in rows:
        r["command"] = command
    with (out / "floor.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    for r in rows:
        print(r, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
