"""Protocols of the reproduced Bayesian-optimisation studies, shared by the scripts of ``studies/bo/``.

* **Kernelized bandits** (Chowdhury & Gopalan 2017, Sec. 6; ``studies/bo/bo_kernelized_bandits.py``): the eight
  tasks (:data:`KB_TASKS`), their seeded problem instances (:func:`kb_make_task`) and one run of a GP policy on an
  instance (:func:`kb_run_instance`, cumulative regret per round).
* **BOKE** (Zhu et al. 2025, Sec. 5; ``studies/bo/bo_boke.py``): the synthetic functions and budgets
  (:data:`BOKE_FUNCS`), the methods (:data:`BOKE_METHODS`), the noise level, the shared initial design and one run
  (:func:`boke_run_one`).
* **Time-varying BO** (BOLT paper, Table 3; ``studies/bo/tvbo_table3.py``): :func:`tvbo_rescore`, the regret of
  logged runs against the current reference maxima.

``studies/bo/bo_model_equivalence.py`` re-runs the first two against the committed per-run files, so these
functions must keep their random streams: every random draw is seeded from the trial / seed given.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from evroute.bo import (
    BOKE,
    GPEI,
    GPPI,
    GPTS,
    GPUCB,
    IGPUCB,
    KRUCB,
    BenchmarkFunction,
    BOKEPlus,
    BoxDomain,
    FiniteDomain,
    Matern,
    SquaredExponential,
    SrinivasGPUCB,
    get_function,
    run_policy,
)
from evroute.bo.base import Policy
from evroute.bo.loop import RunResult
from evroute.kernels.linalg import jittered_cholesky

# --- kernelized bandits ------------------------------------------------------------------------------------------

#: The five GP policies of the kernelized-bandits study, by the paper's names.
KB_POLICIES = {"GP-UCB": SrinivasGPUCB, "IGP-UCB": IGPUCB, "GP-TS": GPTS, "GP-EI": GPEI, "GP-PI": GPPI}
#: The eight tasks, in the order that seeds them (``rng = default_rng([KB_TASKS.index(task), trial])``).
KB_TASKS = ["rkhs-se", "rkhs-matern", "gp-se", "gp-matern", "rosenbrock", "hartmann3", "temperature", "light"]


def _sensor_field(n_sensors: int, n_train: int, n_test: int, rng: np.random.Generator, light: bool) -> tuple:
    """Synthetic sensor readings: (train (n_train, S), test (n_test, S), locations (S, 2)).

    A 40 m x 30 m room; readings = slow global trend + spatial field (SE covariance, 6 m) evolving as an AR(1)
    process in time + per-sensor offset + measurement noise.  ``light`` uses a larger, rougher field.
    """
    loc = rng.random((n_sensors, 2)) * np.array([40.0, 30.0])
    ell, amp, rho = (4.0, 60.0, 0.95) if light else (6.0, 1.5, 0.98)
    d2 = np.sum((loc[:, None] - loc[None]) ** 2, axis=2)
    chol = jittered_cholesky(amp**2 * np.exp(-d2 / (2 * ell**2)), [1e-8], relative=False, plain_first=False, layout="C")
    offset = chol @ rng.standard_normal(n_sensors) * 0.8
    n = n_train + n_test
    field = np.empty((n, n_sensors))
    state = chol @ rng.standard_normal(n_sensors)
    for i in range(n):
        state = rho * state + np.sqrt(1 - rho**2) * (chol @ rng.standard_normal(n_sensors))
        field[i] = state
    trend = (200.0 if light else 20.0) + (0.2 * amp) * np.sin(np.arange(n) * 2 * np.pi / 120)
    noise = (0.05 * amp) * rng.standard_normal((n, n_sensors))
    data = trend[:, None] + offset[None] + field + noise
    return data[:n_train], data[n_train:], loc


def kb_make_task(task: str, trial: int) -> list[dict]:
    """Build the problem instances (one for synthetic tasks, several test snapshots for sensor tasks)."""
    rng = np.random.default_rng([KB_TASKS.index(task), trial])
    if task.startswith(("rkhs", "gp-")):
        kern = SquaredExponential(0.2) if task.endswith("se") else Matern(0.2, nu=2.5)
        pts = rng.random((100, 1))
        gram = kern(pts, pts)
        y = jittered_cholesky(gram, [1e-8], relative=False, plain_first=False, layout="C") @ rng.standard_normal(100)
        f = gram @ np.linalg.solve(gram + 0.01 * np.eye(100), y) if task.startswith("rkhs") else y
        gamma: str | float = "bound"
        return [dict(points=pts, f=f, kernel=kern, gram=gram, prior_mean=None, r2=0.01 * np.ptp(f), gamma=gamma)]
    if task in ("rosenbrock", "hartmann3"):
        fn = get_function("rosenbrock", 2) if task == "rosenbrock" else get_function("hartmann3")
        lo, hi = (np.full(2, -2.0), np.full(2, 2.0)) if task == "rosenbrock" else (fn.lower, fn.upper)
        unit = rng.random((100 * fn.dim, fn.dim))
        f = np.asarray(fn.objective(lo + unit * (hi - lo)))
        kern = SquaredExponential(0.2)
        return [
            dict(
                points=unit,
                f=f,
                kernel=kern,
                gram=kern(unit, unit),
                prior_mean=None,
                r2=0.01 * np.ptp(f),
                gamma="bound",
            )
        ]
    light = task == "light"
    n_s, n_train, n_test = (41, 601, 192) if light else (54, 600, 240)  # 5 days x 120 and 2 days x 120 snapshots
    train, test, loc = _sensor_field(n_s, n_train, n_test, rng, light)
    cov = np.cov(train, rowvar=False)
    r2 = 0.05 * float(np.mean(np.diag(cov)))
    stride = 10  # a subset of the test snapshots (each one is a test function)
    return [
        dict(points=loc / 40.0, f=test[i], kernel=None, gram=cov, prior_mean=train.mean(axis=0), r2=r2, gamma=1.0)
        for i in range(0, n_test, stride)
    ]


def kb_run_instance(inst: dict, name: str, horizon: int, seed: int, b_fixed: float | None = None) -> np.ndarray:
    """Cumulative regret ``(horizon,)`` of policy ``name`` (a :data:`KB_POLICIES` key) on one instance of
    :func:`kb_make_task`; ``B = sqrt(f^T K f)`` unless ``b_fixed`` is given; noise and policy seeded from ``seed``."""
    f, r2 = inst["f"], inst["r2"]
    dom = FiniteDomain(inst["points"])
    lookup = {row.tobytes(): v for row, v in zip(dom.points, f, strict=True)}
    fc = f if inst["prior_mean"] is None else f - inst["prior_mean"]  # RKHS part of f (sensor tasks: centred)
    b = float(np.sqrt(max(fc @ inst["gram"] @ fc, 0.0))) if b_fixed is None else b_fixed
    kw = dict(lam=r2, prior_cov=inst["gram"], prior_mean=inst["prior_mean"], seed=seed)
    if inst["kernel"] is not None:
        kw["kernel"] = inst["kernel"]
    if name in ("GP-EI", "GP-PI"):
        pol = KB_POLICIES[name](dom, **kw)
    else:
        pol = KB_POLICIES[name](dom, B=b, R=float(np.sqrt(r2)), delta=0.1, gamma=inst["gamma"], **kw)
    res = run_policy(
        pol, lambda x: lookup[x.tobytes()], horizon, f_max=float(np.max(f)), noise_std=np.sqrt(r2), seed=seed + 1
    )
    return res.cumulative_regret


# --- BOKE --------------------------------------------------------------------------------------------------------

#: ``key -> (function name, dimension or None, evaluation budget)`` of the synthetic BOKE functions.
BOKE_FUNCS = {
    "forrester": ("forrester", None, 30),
    "goldstein_price": ("goldstein_price", None, 60),
    "six_hump_camel": ("six_hump_camel", None, 60),
    "hartmann3": ("hartmann3", None, 90),
    "rosenbrock4": ("rosenbrock", 4, 120),
    "sphere6": ("sphere", 6, 150),
}
#: The BOKE study's methods: the paper's four, then the labelled ``varsigma = 0.1`` sensitivity variants.
BOKE_METHODS = ["BOKE", "BOKE+", "GP-UCB", "KR-UCB", "BOKE(vs=0.1)", "BOKE+(vs=0.1)"]


def boke_make_policy(method: str, domain: BoxDomain, noisy: bool, seed: int) -> Policy:
    """The policy of ``method`` (one of :data:`BOKE_METHODS`) on ``domain`` with the study's fixed settings."""
    if method.startswith("BOKE"):
        cls = BOKEPlus if method.startswith("BOKE+") else BOKE
        return cls(domain, varsigma=0.1 if method.endswith("(vs=0.1)") else 1.0, seed=seed)
    if method == "KR-UCB":
        return KRUCB(domain, seed=seed)
    kern = SquaredExponential(0.2 * np.sqrt(domain.dim))
    return GPUCB(domain, kernel=kern, beta=2.0, lam=0.05 if noisy else 1e-4, normalize_y=True, seed=seed)


def boke_noise_std(fn: BenchmarkFunction) -> float:
    """Observation-noise standard deviation of the noisy setting: 0.1 x the interquartile range of ``fn`` over
    10,000 uniform points (seeded), in the units of ``fn``."""
    v = fn(fn.domain.sample(10000, np.random.default_rng(12345)))
    q75, q25 = np.percentile(v, [75, 25])
    return 0.1 * float(q75 - q25)


def boke_initial_design(fn: BenchmarkFunction, seed: int) -> np.ndarray:
    """The ``(3 d, d)`` Latin hypercube shared by every method of one seed."""
    return fn.domain.latin_hypercube(3 * fn.dim, np.random.default_rng([7, seed]))


def boke_run_one(
    fn: BenchmarkFunction, method: str, budget: int, noisy: bool, seed: int, sigma: float, init: np.ndarray
) -> RunResult:
    """One run of the protocol: ``method`` on ``fn`` after ``init``, observation noise ``sigma`` when ``noisy``."""
    pol = boke_make_policy(method, fn.domain, noisy, seed)
    return run_policy(
        pol,
        lambda x: float(fn.objective(x)),  # run_policy takes float(objective(x)) too: same values
        budget,
        f_max=fn.f_max_objective,
        noise_std=sigma if noisy else 0.0,
        initial=init,
        seed=seed + 100,
    )


# --- time-varying BO ----------------------------------------------------------------------------------------------


def tvbo_rescore(out: str | Path, df: pd.DataFrame, logs: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Recompute every run's regret from its logged ``(t, x)`` against the current reference maxima (cached paths).

    Updates ``df['avg_regret']`` and ``logs[key]['regret']`` in place; returns them and a per-problem audit: queries,
    change of the mean regret, queries where the queried point beat the search (safeguard polish), minimum regret.
    """
    from evroute.bo.timevarying.problems import get_problem
    from studies.bo.tv_experiment import load_optimum

    audit = []
    for prob in sorted(set(df["problem"])):
        problem = get_problem(prob)
        load_optimum(problem, out)
        n = n_fix = 0
        old_sum = new_sum = 0.0
        worst = np.inf
        for path in sorted((Path(out) / "runs" / prob).glob("*/seed*.npz")):
            with np.load(path) as data:
                meta = json.loads(str(data["meta"]))
                ts, xs, old = data["t"], data["X"], data["regret"]
            key = (meta["problem"], meta["algorithm"], int(meta["seed"]))
            if key not in logs:
                continue
            ref, fixed = problem.reference_maxima(xs, ts)
            reg = ref - problem.reward(xs, ts)
            logs[key]["regret"] = reg
            sel = (df["problem"] == key[0]) & (df["algorithm"] == key[1]) & (df["seed"] == key[2])
            df.loc[sel, "avg_regret"] = float(np.mean(reg))
            n, n_fix = n + ts.size, n_fix + fixed
            old_sum, new_sum, worst = old_sum + float(np.sum(old)), new_sum + float(np.sum(reg)), min(worst, reg.min())
            scale = max(1.0, float(np.max(np.abs(ref))))
            if reg.min() < -1e-6 * scale:
                raise AssertionError(f"{key}: negative regret {reg.min():.3g} after the safeguard")
        audit.append(
            {
                "problem": prob,
                "queries": n,
                "old mean regret": round(old_sum / max(n, 1), 4),
                "new mean regret": round(new_sum / max(n, 1), 4),
                "queries beating the search": n_fix,
                "min regret": float(f"{worst:.3g}"),
            }
        )
    return df, pd.DataFrame(audit).set_index("problem")
