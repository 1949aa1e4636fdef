"""Known-truth study of learning from trip logs (issue 23): SUMO trips on a network written as degraded logs,
map-matched and learned; map-matching accuracy and held-out route-energy prediction error of the prior, BI and the
exact GP.

Protocol (all seeded):

1. ``--train + --test`` trips between random pairs of edges (seed 0), each the shortest legal path by length and at
   least ``--min-route-m`` long, driven once by SUMO with the EV (``sumo_ev``, battery device), departing 20 s apart
   from rest and parking at the end of the last edge (standing 5 s there before arriving:
   ``evroute.sumo.triplogs.simulate_trips(arrive_at_rest=True)``), so every trip runs from rest to rest as a driver's
   does.  SUMO's exact FCD + battery outputs are the truth: the route driven and the battery energy of each trip.
   With ``--repeats R`` (route-mean truth) each of the ``--test`` held-out routes is also driven R times in a second
   SUMO run with the same background demand (``known_truth_repeats``: the first run's vehicle count and 20 s gaps,
   the repeats at seeded random slots spread over the whole period, every drive from rest to rest; a second run
   because extra vehicles in the first would change the training trips' traffic and SUMO's draws, so the training
   trips stay bit for bit what they were); the held-out drives are then those ``test x R`` drives, and the truth of
   a route is the mean of its R drives' battery energies.
2. Per condition (sampling period, GPS noise s.d., gauge step in % of capacity), every training trip is degraded
   (``degrade``, seed 1000 + trip) and map-matched; its charge readings become linear observations.  Matching
   accuracy: the share of the true route's edges in the matched path (recall) and of the matched path's edges in the
   true route (precision), per trip.  Matcher: ``MatchOptions(sigma_m=max(noise, 5), beta_m=10 (1 s) or 30 (10 s))``
   with the default thinning at 4 sigma, which a pilot on the matching precision of 30 of the training trips (15 m
   noise, 1 Hz) preferred to Newson & Krumm's 2 sigma (0.88 vs 0.65); no held-out trip was used for it.
3. For N in ``--ns`` and each seed (N at or above the pool ``--train``: seed 0 alone, every seed draws the whole
   pool), N training trips drawn at random (seed) are learned by BI and by the exact GP
   (``evroute.models.store.prior_model`` priors: the physics mean of ``--prior``, by default the project's default
   prior, the speed-profile model of ``evroute.energy.edge_prior``, from which ``evroute learn`` starts a new model too;
   the paper's kernel; prior variance ``(p sigma_det)^2``).  The readings are **reduced energies**
   (``evroute.traces.mechanical``: battery energy minus the change of mechanical energy, SUMO's kinetic mass ``m +
   rotatingMass``, the network's heights at the matched positions, SUMO's g), the prior mean the prior's edge energy
   minus its ``m g dz``; the windows over a trip's first matched edge are dropped, as ``evroute learn`` drops them
   (``evroute.traces.observations``, trip ends: the departure from rest, its standing and a mis-matched manoeuvre
   squeezed into a small share of an edge made that edge's learned energy many times its true one).
   Hyper-parameters by ML-II on the training readings alone (never the held-out trips): the
   largest log marginal likelihood over the prior's scale ``p`` in ``--prior-fracs``, whether to add shared per-metre
   and per-edge offsets of the physics mean (``linear_obs_build.offset_basis``: prior s.d. 0.05 Wh/m and 10
   Wh), the nominal noise of one traversal ``(f sigma_det)^2`` on average over the edges (edge ``e``'s times its
   prior energy^``--noise-exponent``, normalised: ``linear_obs.traversal_noise_weights``; default 0, as ``evroute
   learn``: every edge alike), with ``f`` in ``--noise-fracs`` (it matters beside the charge quantisation of degraded
   logs; with exact logs only ``phi f^2`` does) and, for each, the readings' noise scale ``phi``
   (bounded search, :func:`~studies.trip_logs.known_truth_fit.ml2_noise_scale`).  The held-out trips' energy is
   predicted as the sum of the posterior means over their true routes plus the route's boundary term ``M(end) -
   M(start)`` (from rest to rest: ``m g (z_end - z_start)``), with three 90 % intervals: ``cover90`` from the route's
   joint posterior covariance plus the whole-trip noise and the trip effect fitted to the training trips'
   **out-of-fold** residual sums (``evroute.models.trip_effect.cavity_residuals``: each trip's sum predicted by the
   posterior of the other folds' trips, ``trip_effect.fold_count``: 10 folds (folds of 10 trips beyond N = 100),
   leave one trip out for N <= 10, same hyper-parameters; each fold's readings taken out of the posterior of all,
   exactly what refitting without them
   gives; ``fit_predictive_noise``:
   the posterior of ``(k, tau^2)`` under weakly-informative half-Cauchy priors, the interval a mixture over it, so it
   carries the fit's uncertainty from few trips; the readings' noise over short windows overstates a whole
   traversal's, hence ``k``), computed by ``evroute learn``'s own function (``evroute.experiments.trip_learning.
   route_noise``: the mixture as the model file keeps it, its negligible grid points pruned);
   ``cover90_insample`` the same with ``(k, tau^2)`` fitted to the in-sample residuals of the posterior that learned
   the trips (``fit_route_noise``, a normal at the fit: a diagnostic, too narrow where a trip's own edges absorb its
   trip effect, what ``evroute learn`` stored before model format 2); and ``cover90_learn`` the interval ``evroute
   route --model-file`` serves from that mixture (``RouteBelief.trip_half_width`` around the served mean, whose edge
   means are floored at 0).  Each row carries the code's commit.  Error per held-out drive = predicted - SUMO's
   battery energy (Wh): RMSE, bias and the share of held-out drives inside each 90 % interval; the prior alone
   (N = 0) is the physics model.  Both RMSEs per row (``known_truth_repeats.score``): ``rmse_wh`` per held-out
   drive, and with ``--repeats`` ``rmse_mean_wh`` against the route means with the means' sampling error removed
   (``rmse_mean_raw_wh`` without); the coverages are over all held-out drives.

Where the prior's bias comes from (``bias.csv``, training trips, SUMO's exact logs; no fit, no held-out trip): each
trip's SUMO energy minus the prior's, split by ``known_truth_floor.bias_rows`` into the driven speed profile, SUMO's
rotating mass, its auxiliary power and a remainder.  The floor that no per-edge learner removes (an oracle of the
true per-edge means) and a shared-structure fit: ``studies/trip_logs/known_truth_floor.py`` (``floor.csv``).

Resumable: the simulation, the training trips' matches and each (condition, N, seed) row are kept in ``--out``
(``sim/``, ``matched_COND.npz``, ``rows.csv``, ``matching.csv``, ``coverage.csv``, ``bias.csv``, and ``command.txt``:
the latest command); a rerun skips what is there, so extra seeds or N cost only their fits.  ``--workers 2`` fits
two cells at once (forked processes sharing the trips' readings), each with one BLAS thread
(``evroute.experiments.threads``: more threads made a cell several times dearer in CPU on a loaded machine).  One
study folder per network; ``studies/trip_logs/known_truth_report.py --collect FOLDER ...`` copies them into the
committed CSV files (``docs/results/data/trip_logs_known_truth*``) and writes the report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from evroute.energy import PRIORS
from evroute.experiments.trip_learning import LEARN_NOISE_EXPONENT
from studies.trip_logs.known_truth_data import (
    CONDITIONS,
    LEARN_SERVED,
    _append,
    _cpu,
    _match_trips,
    _per_route,
    _read,
    _read_header,
    _readings,
    _Serial,
    load_study,
)
from studies.trip_logs.known_truth_fit import fit_trip_effect, ml2_noise_scale
from studies.trip_logs.known_truth_repeats import score_fields

NOISE_FRACS = (0.1, 0.25, 0.5, 1.0)
ROW_FIELDS = [
    "network",
    "condition",
    "n_train",
    "seed",
    "model",
    "rmse_wh",
    "bias_wh",
    "n_test",
    "mean_energy_wh",
    "noise_frac",
    "offsets",
    "log_ml",
    "unusable",
    "cover90",
    "sd_mean_wh",
    "noise_scale",
    "trip_rel_var",
    "prior_frac",
    "noise_mult",
    "cover90_learn",
    "trip_rel_var_learn",
    "prior",
    "cover90_insample",
    "noise_mult_insample",
    "trip_rel_var_insample",
    "commit",
    "learn_interval",
    "rmse_mean_wh",
    "rmse_mean_raw_wh",
    "n_drives",
    "repeats",
    "noise_exponent",
    "trip_tau_fit",
]
Z90 = 1.6448536269514722  # the standard normal's 95 % quantile: a central 90 % interval is mean +- Z90 sd


def _command(argv: list[str]) -> str:
    """The study command as the report quotes it (``python -m studies.trip_logs.known_truth ARGS``)."""
    import shlex

    return " ".join(["python", "studies/trip_logs/known_truth.py", *(shlex.quote(a) for a in argv)])


def _commit() -> str:
    """The code's commit (short hash; ``+dirty`` when tracked files differ from it), which each row carries."""
    import subprocess

    def git(*a: str) -> str:
        return subprocess.run(["git", *a], capture_output=True, text=True, check=False).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


#: what the fitting of one cell needs, set by :func:`run` before the process pool forks (its workers inherit it)
_SHARED: dict[str, Any] = {}


def _pick(n_train: int, seed: int, pool: int) -> np.ndarray:
    """The training trips of a cell: ``n_train`` of the pool's ``pool`` drawn without replacement (seed)."""
    return np.random.default_rng(seed).choice(pool, size=min(n_train, pool), replace=False)


def _cells(ns: list[int], seeds: int, pool: int) -> list[tuple[int, int]]:
    """The (N, seed) cells of the design: every seed for N below the pool's size; one (seed 0) for N at or above it,
    where every seed draws the whole pool and would repeat the same fit."""
    return [(n, seed) for n in ns for seed in range(seeds if n < pool else 1)]


def _fit_cell(cell: tuple[int, int]) -> tuple[int, int, list[dict], float]:
    """``(N, seed, rows, CPU s)``: both models learned from the cell's ``N`` training trips and scored on the held-out
    trips (module doc, step 3), from :data:`_SHARED` (a forked worker's copy)."""
    from evroute.driver.belief import RouteBelief
    from evroute.experiments.trip_learning import route_noise
    from evroute.models.linear_obs_build import linear_model_from
    from evroute.models.predictive_noise import PredictiveNoise
    from evroute.models.trip_effect import TripSums, fit_route_noise

    n_train, seed = cell
    sh = _SHARED
    st, args, cond, cache, bases = sh["study"], sh["args"], sh["cond"], sh["readings"], sh["bases"]
    basis, basis_sd, stats_for = sh["basis"], sh["basis_sd"], sh["stats_for"]
    t0 = _cpu()
    pick = _pick(n_train, seed, len(st.train))
    names = [st.train[i] for i in pick]
    var_det = float(np.var(st.e_det))
    # per noise fraction the readings' statistics are the same for both models and both mean choices (only the
    # prior kernel differs): built once, shared.  The best log marginal likelihood wins, the first in (f, offsets)
    # order on a tie.
    stats_of, unusable_of = zip(*(stats_for(names, f) for f in args.noise_fracs), strict=True)
    rows = []
    for kind in args.models:
        best: tuple | None = None
        for pf in args.prior_fracs:
            for offsets in (False, True):
                kw = {"basis": basis, "basis_sd": basis_sd} if offsets else {}
                model = linear_model_from(bases[(kind, pf)], **kw)  # noise_var only enters the readings
                for f_i, stats in enumerate(stats_of):
                    phi, log_ml = ml2_noise_scale(model, stats)
                    if best is None or log_ml > best[0]:
                        best = (log_ml, pf, args.noise_fracs[f_i], offsets, f_i, phi)
        assert best is not None
        _, pf, frac, offsets, f_i, phi = best
        kw = {"basis": basis, "basis_sd": basis_sd} if offsets else {}
        kept = [name for name in names if cache[(name, frac)] is not None]

        sums = TripSums()  # each trip's sums and readings, as evroute learn keeps them (trip_workers)
        for name in kept:
            r = cache[(name, frac)]
            sums.add(
                r.edges, r.a.sum(axis=0), float(r.y.sum()), float(r.noise_cov.sum()), (r.edges, r.a, r.y, r.noise_cov)
            )
        model = linear_model_from(bases[(kind, pf)], **kw)
        model.stats, model.noise_var, model.noise_scale = stats_of[f_i], frac**2 * var_det, phi
        model.noise_exponent = args.noise_exponent  # as the readings were built (known_truth_data._readings)
        model.trips = sums
        if args.trip_effect_fit:
            phi = fit_trip_effect(model)
        post = model.posterior()
        # the predictive noise from out-of-fold residuals, by evroute learn's own function (trip_learning.route_noise:
        # trip_effect.out_of_fold_noise, each fold's readings taken out of the posterior again, the same numbers as
        # refitting without the fold; fit_predictive_noise), as the model file keeps it (the pruned mixture)
        effect = route_noise(model)
        pn = PredictiveNoise.from_dict(effect)
        mu = post.mean
        # the in-sample diagnostic: the whole-trip noise and trip effect fitted to the training trips' in-sample
        # residual sums (trip_effect.fit_route_noise)
        rn = fit_route_noise(mu, post.covariance_of, sums, phi)
        routes = st.drive_routes()  # per held-out drive (test x R with --repeats)
        pred = np.array([w @ mu[r] for r, w in zip(routes, st.w_test, strict=True)]) + st.bnd_test
        cov_of = _per_route(st.drive_test, routes, post.covariance_of)  # once per route, not per drive
        noise_e = post.noise_var  # (E,) one traversal's noise (phi times the model's, per edge)
        assert noise_e is not None
        parts = np.array(
            [
                (w @ cov_of(i) @ w, w @ noise_e[r], max(w @ mu[r], 0.0) ** 2)
                for i, r, w in zip(st.drive_test, routes, st.w_test, strict=True)
            ]
        )
        # as served (evroute route --model-file: query.make_belief of a reduced-energy model, its mean floored at 0 per
        # edge, the mixture's central interval, RouteBelief.trip_half_width)
        served = RouteBelief(model, np.zeros(len(mu)), float(effect["rel_var"]), float(effect["noise_mult"]), pn)
        err_learn = np.array([w @ served.mean[r] for r, w in zip(routes, st.w_test, strict=True)]) + st.bnd_test
        err_learn -= st.y_test
        half_of: dict[tuple[int, bytes], float] = {}  # drives of a route with the same shares: one computation
        for i, r, w in zip(st.drive_test, routes, st.w_test, strict=True):
            if (int(i), w.tobytes()) not in half_of:
                half_of[(int(i), w.tobytes())] = served.trip_half_width(r, 0.9, w)
        half_learn = np.array([half_of[(int(i), w.tobytes())] for i, w in zip(st.drive_test, st.w_test, strict=True)])
        sd_in = np.sqrt(parts[:, 0] + rn.noise_mult * parts[:, 1] + rn.rel_var * parts[:, 2])
        err = pred - st.y_test
        if pn is None:  # fewer than two usable trips: nothing to fit the noise from (the in-sample fit's defaults)
            cover, sd, k_fit, tau2_fit = np.abs(err) <= Z90 * sd_in, sd_in, rn.noise_mult, rn.rel_var
        else:
            cover = pn.covers(err, parts[:, 0], parts[:, 1], parts[:, 2], 0.9)
            sd = np.sqrt(pn.variance(parts[:, 0], parts[:, 1], parts[:, 2]))
            k_fit, tau2_fit = pn.k_mean, pn.tau2_mean
        rows.append(
            dict(
                network=args.network,
                condition=cond,
                n_train=n_train,
                seed=seed,
                model=kind,
                **score_fields(err, st.drive_test),
                repeats=st.repeats,
                n_test=len(st.test),
                mean_energy_wh=f"{st.y_test.mean():.3f}",
                noise_frac=frac,
                offsets=int(offsets),
                log_ml=f"{model.log_ml:.2f}",
                unusable=unusable_of[f_i],
                cover90=f"{np.mean(cover):.4f}",
                sd_mean_wh=f"{sd.mean():.3f}",
                noise_scale=f"{phi:.4g}",
                trip_rel_var=f"{tau2_fit:.4g}",
                prior_frac=pf,
                noise_mult=f"{k_fit:.4g}",
                cover90_learn=f"{np.mean(np.abs(err_learn) <= half_learn):.4f}",
                trip_rel_var_learn=f"{float(effect['rel_var']):.4g}",
                prior=st.prior,
                cover90_insample=f"{np.mean(np.abs(err) <= Z90 * sd_in):.4f}",
                noise_mult_insample=f"{rn.noise_mult:.4g}",
                trip_rel_var_insample=f"{rn.rel_var:.4g}",
                commit=sh["commit"],
                learn_interval=LEARN_SERVED,
                noise_exponent=args.noise_exponent,
                trip_tau_fit=f"{model.trip_tau:.4g}" if args.trip_effect_fit else "",
            )
        )
    return n_train, seed, rows, _cpu() - t0


def run(args: argparse.Namespace) -> int:
    import multiprocessing

    from evroute.models.linear_obs import LinearStatistics
    from evroute.models.linear_obs_build import offset_basis
    from evroute.models.store import prior_model
    from studies.trip_logs.known_truth_floor import BIAS_FIELDS, bias_rows

    out = Path(args.out)
    st = load_study(args.network, out, args.train, args.test, args.min_route_m, args.prior, args.repeats)
    lg, net = st.lg, st.lg.network
    train, test, truth = st.train, st.test, st.truth
    rows_csv = out / "rows.csv"
    if args.trip_effect_fit and rows_csv.is_file() and "trip_tau_fit" not in _read_header(rows_csv):
        print(f"evroute: error: {rows_csv} has no trip_tau_fit column: use a new --out folder", file=sys.stderr)
        return 2
    (out / "command.txt").write_text(_command(args.argv) + "\n")  # the latest command: it completes the design
    if not (out / "bias.csv").is_file():
        _append(
            out / "bias.csv",
            BIAS_FIELDS,
            bias_rows(args.network, train, st.traces, truth, net, st.vehicle, st.energy, st.e_det),
        )
    have_cov = {(int(r["n_train"]), int(r["seed"])) for r in _read(out / "coverage.csv")}
    test_edges = np.concatenate([truth[n] for n in test])  # share of held-out route edges the N training trips drove
    cov_rows = []
    for n_train, seed in _cells(args.ns, args.seeds, len(train)):
        if (n_train, seed) not in have_cov:
            seen = np.unique(np.concatenate([truth[train[i]] for i in _pick(n_train, seed, len(train))]))
            cov_rows.append(
                dict(
                    network=args.network,
                    n_train=n_train,
                    seed=seed,
                    coverage=f"{np.isin(test_edges, seen).mean():.4f}",
                )
            )
    if cov_rows:
        _append(out / "coverage.csv", ["network", "n_train", "seed", "coverage"], cov_rows)
    done = {(r["condition"], int(r["n_train"]), int(r["seed"])) for r in _read(rows_csv)}
    if not any(int(r["n_train"]) == 0 for r in _read(rows_csv)):
        pred = np.array([w @ st.red_prior[r] for r, w in zip(st.drive_routes(), st.w_test, strict=True)])
        err = pred + st.bnd_test - st.y_test
        prior_row = dict(network=args.network, condition="-", n_train=0, seed=0, model="prior", prior=st.prior)
        prior_row.update(
            **score_fields(err, st.drive_test),
            repeats=st.repeats,
            n_test=len(test),
            mean_energy_wh=f"{st.y_test.mean():.3f}",
        )
        _append(rows_csv, ROW_FIELDS, [prior_row])
    # the priors once (the kernel does not depend on the noise, which only enters the readings' covariance)
    extra: dict[str, Any] = {"learn_hyper": False}
    bases = {
        (k, pf): prior_model(
            k,
            lg,
            st.vehicle,
            outputscale_frac=pf,
            prior=st.prior,
            mean_wh=st.red_prior,
            **(extra if k == "gp-exact" else {}),
        )
        for k in args.models
        for pf in args.prior_fracs
    }
    for cond in args.conditions:
        todo = [(n, seed) for n, seed in _cells(args.ns, args.seeds, len(train)) if (cond, n, seed) not in done]
        have_match = {r["trip"] for r in _read(out / "matching.csv") if r["condition"] == cond}
        if not todo and have_match >= set(train):
            continue
        t0 = _cpu()
        matched = _match_trips(st, cond, out, args.network)
        need = sorted({train[i] for n, seed in todo for i in _pick(n, seed, len(train))})
        cache = _readings(st, matched, cond, need, args.noise_fracs, args.noise_exponent)
        print(f"{cond}: {len(matched)} trips matched, {len(need)} read ({_cpu() - t0:.1f} CPU s)", file=sys.stderr)

        def stats_for(names: list[str], frac: float, cache: dict = cache) -> tuple[LinearStatistics, int]:
            stats, unusable = LinearStatistics(len(st.e_det)), 0
            for name in names:
                r = cache[(name, frac)]
                if r is None:
                    unusable += 1
                else:
                    stats.add(r.edges, r.a, r.y, r.noise_cov)
            return stats, unusable

        basis, basis_sd = offset_basis(st.exact_index.length_m)
        _SHARED.update(
            study=st,
            args=args,
            cond=cond,
            readings=cache,
            bases=bases,
            basis=basis,
            basis_sd=basis_sd,
            stats_for=stats_for,
            commit=_commit(),
        )
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(args.workers) if args.workers > 1 else _Serial() as pool:
            for n_train, seed, rows, cpu in pool.imap_unordered(_fit_cell, todo):
                _append(rows_csv, ROW_FIELDS, rows)
                print(
                    f"{cond} N={n_train} seed={seed}: "
                    + ", ".join(f"{r['model']} {r['rmse_wh']}" for r in rows)
                    + f" ({cpu:.1f} CPU s)",
                    file=sys.stderr,
                )
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--network", default="monaco")
    p.add_argument("--out", default="results/trip_logs_known_truth", help="study folder (resumable)")
    p.add_argument("--train", type=int, default=200, help="training pool size (trips)")
    p.add_argument("--test", type=int, default=40, help="held-out trips")
    p.add_argument("--ns", default="10,100", help="numbers of training trips learned")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--min-route-m", type=float, default=1000.0)
    p.add_argument("--conditions", default=",".join(CONDITIONS), help=f"among {', '.join(CONDITIONS)}")
    p.add_argument("--models", default="bi,gp-exact", help="learned models, among bi, gp-exact")
    p.add_argument("--noise-fracs", default=",".join(map(str, NOISE_FRACS)), help="grid of f (ML-II, step 3)")
    p.add_argument("--prior-fracs", default="0.25", help="grid of the prior s.d. / sigma_det (ML-II, step 3)")
    p.add_argument(
        "--noise-exponent", type=float, default=LEARN_NOISE_EXPONENT, help="one traversal's noise ~ energy^p (step 3)"
    )
    p.add_argument(
        "--trip-effect-fit",
        action="store_true",
        help="fit the trip effect tau into the readings' noise (linear_obs_trip; evroute learn --trip-effect-fit on)",
    )
    p.add_argument(
        "--prior", default=PRIORS[0], help=f"the physics prior, among {', '.join(PRIORS)} (default: the default)"
    )
    p.add_argument("--workers", type=int, default=1, help="processes fitting cells at once (1 or 2)")
    p.add_argument(
        "--repeats",
        type=int,
        default=0,
        help="drives per held-out route in a second SUMO run (route-mean truth; 0: each held-out trip's one drive)",
    )
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.ns = [int(x) for x in args.ns.split(",") if x]
    args.conditions = [c for c in args.conditions.split(",") if c]
    args.models = [m for m in args.models.split(",") if m]
    try:
        args.noise_fracs = [float(x) for x in args.noise_fracs.split(",") if x]
        args.prior_fracs = [float(x) for x in args.prior_fracs.split(",") if x]
    except ValueError:
        print("evroute: error: --noise-fracs and --prior-fracs take numbers separated by commas", file=sys.stderr)
        return 2
    bad = [c for c in args.conditions if c not in CONDITIONS] + [m for m in args.models if m not in ("bi", "gp-exact")]
    fracs = args.noise_fracs + args.prior_fracs
    if bad or not args.ns or min(args.ns) < 1 or args.train < max(args.ns) or args.test < 2:
        print(
            "evroute: error: unknown condition or model, or --ns must be >= 1 and <= --train, --test >= 2",
            file=sys.stderr,
        )
        return 2
    if args.repeats < 0 or args.repeats == 1 or args.test * args.repeats > args.train + args.test:
        print(
            "evroute: error: --repeats must be 0 or at least 2, with --test x --repeats at most --train + --test",
            file=sys.stderr,
        )
        return 2
    if args.prior not in PRIORS or args.workers not in (1, 2):
        print(f"evroute: error: --prior must be one of {', '.join(PRIORS)} and --workers 1 or 2", file=sys.stderr)
        return 2
    if not args.noise_fracs or not args.prior_fracs or not all(0 < f < 10 for f in fracs):
        print("evroute: error: --noise-fracs and --prior-fracs need values in (0, 10)", file=sys.stderr)
        return 2
    if not 0 <= args.noise_exponent <= 4:
        print(f"evroute: error: --noise-exponent must be in [0, 4], got {args.noise_exponent}", file=sys.stderr)
        return 2
    from evroute.experiments.threads import run_threads

    with run_threads():  # one BLAS thread per process (EVROUTE_BLAS_THREADS): --workers parallelises over processes
        return run(args)


if __name__ == "__main__":
    sys.exit(main())
