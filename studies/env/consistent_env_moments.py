"""How far the consistent environment is from the paper's GP: mean, variance, correlation, negative cycles (measured).

Usage::

    EVROUTE_DATA=/work/shared/data OMP_NUM_THREADS=1 nice -n 10 \\
        .venv/bin/python -m studies.env.consistent_env_moments --markdown docs/results/archive/consistent_env.md

For each network the paper's perturbation covariance ``C`` is built once (dense), ``--draws`` joint draws
``g = L z`` are taken from its Cholesky factor, and each draw is turned into both environments exactly as
:class:`~evroute.environments.PaperEnvironment` (``E_det + sigma0 g``) and
:class:`~evroute.environments.ConsistentEnvironment` (log-normal reduced costs) do.  Reported over those draws,
per edge: the mean's deviation from ``E_det`` (in units of the standard error), the variance ratio consistent /
paper, the correlation of adjacent edges (every legal turn) and of all edge pairs within 2 km, paper against
consistent; and, for environment seeds 0..``--seeds``-1 drawn by the environments themselves: the share of
negative edge energies, of negative reduced costs and whether a negative-energy cycle is reachable from route A's
start.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from evroute.energy import elevation_potential_wh, network_energy_wh
from evroute.environments import ConsistentConfig, make_environment
from evroute.environments.consistent import lognormal_reduced_costs
from evroute.environments.paper import _cholesky, prior_covariance
from evroute.experiments.runner import load_linegraph
from evroute.io import atomic_write_text
from evroute.oracle import has_negative_cycle
from evroute.routes import resolve_route
from studies.common.bench import available_networks, machine_line


def _corr(x: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    xc = x - x.mean(0)
    sd = xc.std(0)
    return np.einsum("ki,ki->i", xc[:, pairs[:, 0]], xc[:, pairs[:, 1]]) / len(x) / (sd[pairs[:, 0]] * sd[pairs[:, 1]])


def study(network: str, draws: int, seeds: int) -> dict[str, str]:
    t0 = time.perf_counter()
    lg = load_linegraph(network)
    net = lg.network
    cfg = ConsistentConfig()
    e_det = network_energy_wh(net)
    pot = elevation_potential_wh(net)
    r_det = e_det - pot
    sigma0 = cfg.outputscale_frac * e_det.std()
    cov = prior_covariance(lg, cfg)
    var = np.diag(cov).copy()
    g = (_cholesky(cov) @ np.random.default_rng(0).standard_normal((lg.n_nodes, draws))).T  # (draws, E)
    paper = e_det + sigma0 * g
    cons = pot + lognormal_reduced_costs(r_det, g, var, sigma0, cfg.max_cv)
    se = np.sqrt(np.minimum(sigma0**2 * var, (cfg.max_cv * r_det) ** 2) / draws)
    z_mean = np.abs(cons.mean(0) - e_det) / np.maximum(se, 1e-12)
    vratio = cons.var(0) / paper.var(0)
    turns = lg.turns
    mid = np.array([g_.mean(0) for g_ in net.geometry])  # lon/lat of each edge's vertices' mean
    xy = np.column_stack([mid[:, 0] * 111_320 * np.cos(np.radians(mid[:, 1].mean())), mid[:, 1] * 110_540])
    rng = np.random.default_rng(1)
    cand = rng.integers(0, lg.n_nodes, size=(200_000, 2))
    cand = cand[(cand[:, 0] != cand[:, 1]) & (np.hypot(*(xy[cand[:, 0]] - xy[cand[:, 1]]).T) < 2000)][:20_000]
    out = {"network": f"{network} ({lg.n_nodes} edges)"}
    for label, pairs in (("adjacent", turns), ("within 2 km", cand)):
        cp, cc = _corr(paper, pairs), _corr(cons, pairs)
        out[label] = (
            f"{np.median(cp):.2f} / {np.median(cc):.2f}; abs. diff. median {np.median(np.abs(cp - cc)):.2f}, "
            f"90% {np.quantile(np.abs(cp - cc), 0.9):.2f}; rank-corr. of the pair values "
            f"{np.corrcoef(np.argsort(np.argsort(cp)), np.argsort(np.argsort(cc)))[0, 1]:.2f}"
        )
    out["mean"] = f"max {z_mean.max():.1f} s.e., {np.mean(z_mean < 3) * 100:.0f}% within 3 s.e."
    exact = np.minimum(sigma0**2 * var, (cfg.max_cv * r_det) ** 2) / (sigma0**2 * var)
    out["variance ratio consistent / paper"] = (
        f"exact: mean {exact.mean():.2f}, median {np.median(exact):.2f}; sampled: median {np.median(vratio):.2f}, "
        f"mean {np.mean(vratio):.2f}; capped where sigma0 sqrt(v) > max_cv r_det: "
        f"{np.mean(sigma0 * np.sqrt(var) > cfg.max_cv * r_det) * 100:.0f}% of edges"
    )
    out["total variance (sum over edges) consistent / paper"] = f"{cons.var(0).sum() / paper.var(0).sum():.2f}"
    route = resolve_route(lg, network, "A", None, None)
    neg = {"paper": [], "consistent": []}
    for s in range(seeds):
        for name in neg:
            env = make_environment(lg, name, seed=s)
            f = env.true_mean_wh
            neg[name].append(
                (np.mean(f < 0) * 100, np.mean(f - pot < -1e-9) * 100, has_negative_cycle(lg, f, route.start))
            )
    for name, v in neg.items():
        a = np.array(v, dtype=float)
        out[f"{name}: negative energies / reduced costs / seeds with a negative cycle"] = (
            f"{a[:, 0].mean():.1f}% / {a[:, 1].mean():.1f}% / {int(a[:, 2].sum())} of {seeds}"
        )
    out["seconds"] = f"{time.perf_counter() - t0:.0f}"
    print(out, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--networks", default="synthetic:2000:0,monaco,luxembourg")
    ap.add_argument("--draws", type=int, default=400)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args()
    rows = [study(n, args.draws, args.seeds) for n in available_networks(args.networks)]
    keys = [k for k in rows[0] if k != "network"]
    lines = [
        "# The consistent environment against the paper's GP environment (measured)",
        "",
        f"Command: `python -m studies.env.consistent_env_moments --networks {args.networks} --draws {args.draws} "
        f"--seeds {args.seeds}`",
        "",
        f"Machine: {machine_line()}.",
        "",
        f"Moments over {args.draws} joint draws of the paper's perturbation, each turned into both environments "
        "(default parameters, `max_cv = 1`); correlations given as paper / consistent (median over the pairs).",
        "",
        "| quantity | " + " | ".join(r["network"] for r in rows) + " |",
        "|---|" + "---|" * len(rows),
    ]
    lines += [f"| {k} | " + " | ".join(r[k] for r in rows) + " |" for k in keys]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        atomic_write_text(Path(args.markdown), text)


if __name__ == "__main__":
    main()
