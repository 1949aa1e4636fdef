"""Side-by-side check of two exact-GP implementations for ``studies/bench/bench_gp_exact.py --check``.

:func:`check` runs the bandit with one ``gp-exact`` configuration and feeds a second one, as a shadow, the same
observations, timing both (CPU and wall) round by round; :func:`check_table` renders the results as Markdown.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

_ENVS: dict[tuple[str, str], Any] = {}


def check(network: str, policy: str, rounds: int, route: str, environment: str, old: dict, new: dict) -> dict:
    """The previous and the current exact-GP implementations side by side in one run (``--check``).

    The bandit runs with the ``new`` model; the ``old`` one is a shadow fed the same observations (and, after each of
    the new model's refits, its hyperparameters: the refit itself is charged to both), so both do the same work at the
    same load, interleaved round by round.  Per round: CPU (``time.process_time``) and wall ms of each model's update
    and posterior, the rest of the round (index + oracle + environment; shared), and the largest deviation between
    the two posteriors (means relative to their largest magnitude, variances relative per edge).
    """
    from evroute.bandit import RoutingBandit
    from evroute.energy import VehicleProfile
    from evroute.environments import make_environment
    from evroute.experiments.registry import make_model
    from evroute.experiments.runner import load_linegraph
    from evroute.oracle import RouteOracle
    from evroute.policies import make_policy
    from evroute.routes import resolve_route

    lg = load_linegraph(network)
    if (network, environment) not in _ENVS:  # one draw per network: the policies' checks share it
        _ENVS.clear()
        _ENVS[network, environment] = make_environment(
            lg, environment, {}, vehicle=VehicleProfile.load("sumo_ev"), seed=0
        )
    env = _ENVS[network, environment]
    rs = resolve_route(lg, network, route, None, None)
    opt = RouteOracle(lg).shortest_route(np.maximum(env.true_mean_wh, 1e-9), rs.start, rs.goal)
    old = {k: (max(1, env.n_edges // 4) if v == "quarter" else v) for k, v in old.items()}
    m_new: Any = make_model("gp-exact", env, seed=0, **new)
    m_old: Any = make_model("gp-exact", env, seed=0, **{**old, "refit_first": 0})
    m_new.posterior()
    m_old.posterior()
    keys = ("new_update", "new_post", "old_update", "old_post", "rest", "dev_mean", "dev_var", "madds")
    cols: dict[str, list[float]] = {k: [] for k in keys}
    wall: dict[str, list[float]] = {k: [] for k in ("new_update", "new_post", "old_update", "old_post", "rest")}
    refit_cpu = []
    upd, post = m_new.update, m_new.posterior

    def timed(name: str, fn, *a):  # noqa: ANN001, ANN202
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn(*a)
        cols[name].append(1e3 * (time.process_time() - c0))
        wall[name].append(1e3 * (time.perf_counter() - w0))
        return out

    def update(e, y):  # noqa: ANN001, ANN202
        obj = m_new._post
        before = getattr(obj, "counters", {}).get("madds", 0.0)
        timed("new_update", upd, e, y)
        after = getattr(m_new._post, "counters", {}).get("madds", float("nan"))
        cols["madds"].append(after - before if m_new._post is obj else float("nan"))
        refit_cpu.append(m_new.stats.get("refit_cpu_ms", 0.0))
        if m_new.stats.get("refit"):
            timed("old_update", lambda: (m_old.set_hyper(m_new.hyper), m_old.update(e, y)))
        else:
            timed("old_update", m_old.update, e, y)

    def posterior():  # noqa: ANN202
        p = timed("new_post", post)
        q = timed("old_post", m_old.posterior)
        cols["dev_mean"].append(float(np.max(np.abs(p.mean - q.mean)) / np.max(np.abs(q.mean))))
        cols["dev_var"].append(float(np.max(np.abs(p.variance - q.variance) / q.variance)))
        return p

    m_new.update, m_new.posterior = update, posterior
    bandit = RoutingBandit(env, m_new, make_policy(policy), rs.start, rs.goal, seed=0, optimal=opt)
    load0 = os.getloadavg()[0]
    for _ in range(rounds):
        c0, w0 = time.process_time(), time.perf_counter()
        bandit.step()
        c, w = 1e3 * (time.process_time() - c0), 1e3 * (time.perf_counter() - w0)
        mine = [cols[k][-1] for k in ("new_update", "new_post", "old_update", "old_post")]
        minew = [wall[k][-1] for k in ("new_update", "new_post", "old_update", "old_post")]
        cols["rest"].append(c - sum(mine))
        wall["rest"].append(w - sum(minew))
    cols["refit"] = refit_cpu
    return {
        "network": network,
        "policy": policy,
        "edges": env.n_edges,
        "rounds": rounds,
        "old": old,
        "new": new,
        "cpu": cols,
        "wall": wall,
        "distinct_edges": int(len(m_new.order)),
        "new_method": m_new.method,
        "old_method": m_old.method,
        "counters": getattr(m_new._post, "counters", {}),
        # the last posterior's (since the last refit) multiply-adds and CPU seconds by kind of work
        "madds_by": dict(getattr(m_new._post, "madds_by", {})),
        "cpu_by": dict(getattr(m_new._post, "cpu_by", {})),
        "conditioned": int(getattr(m_new._post, "t", 0)),
        "load": (load0, os.getloadavg()[0]),
    }


def check_table(results: list[dict], lo: int, hi: int) -> str:
    """Markdown table of :func:`check` results: medians over rounds ``lo..hi`` (1-based, inclusive)."""
    head = (
        "| network | policy | edges | rounds | old | new | **CPU ms old** | **CPU ms new** | wall ms old | wall ms new "
        "| update CPU old / new | p90 CPU old / new | refit CPU s (all rounds) | max deviation mean / var "
        "| distinct edges | new: fresh / hits / snapshots | new: Mmadd per round, GFLOP/s | load avg |"
    )
    lines = [head, "|" + "---|" * 18]
    for r in results:
        c, w = r["cpu"], r["wall"]
        s = slice(lo - 1, hi)

        def tot(d: dict, who: str, s: slice = s) -> np.ndarray:
            return (np.array(d[f"{who}_update"]) + np.array(d[f"{who}_post"]) + np.array(d["rest"]))[s]

        co, cn, wo, wn = tot(c, "old"), tot(c, "new"), tot(w, "old"), tot(w, "new")
        # the old model's update excludes the refit (done once, by the new model): charge it to both
        co = co + np.array(c["refit"])[s]
        ctr = r["counters"]
        lines.append(
            f"| {r['network']} | {r['policy'].upper()} | {r['edges']} | {lo}-{min(hi, r['rounds'])} of {r['rounds']} "
            f"| {_fmt(r['old'])} ({r['old_method']} at the end) | {_fmt(r['new'])} ({r['new_method']}) "
            f"| **{np.median(co):.1f}** | **{np.median(cn):.1f}** | {np.median(wo):.1f} | {np.median(wn):.1f} "
            f"| {np.median(np.array(c['old_update'])[s]):.1f} / {np.median(np.array(c['new_update'])[s]):.1f} "
            f"| {np.percentile(co, 90):.1f} / {np.percentile(cn, 90):.1f} | {1e-3 * sum(c['refit']):.2f} "
            f"| {max(c['dev_mean']):.1e} / {max(c['dev_var']):.1e} | {r['distinct_edges']} "
            f"| {ctr.get('fresh', '-')} / {ctr.get('hits', '-')} / {ctr.get('snapshots', '-')} "
            f"| {_rate(np.array(c['madds'])[s], np.array(c['new_update'])[s])} "
            f"| {r['load'][0]:.1f}-{r['load'][1]:.1f} |"
        )
    return "\n".join(lines)


def _rate(madds: np.ndarray, cpu_ms: np.ndarray) -> str:
    """Median multiply-adds of the update per round (millions) and the rate they ran at (GFLOP/s, 2 per madd)."""
    ok = np.isfinite(madds) & (madds > 0)
    if not ok.any():
        return "-"
    return f"{np.median(madds[ok]) / 1e6:.1f}, {np.median(2 * madds[ok] / cpu_ms[ok]) / 1e6:.1f}"


def _fmt(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "defaults"
