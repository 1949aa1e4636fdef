"""The unified GP core (issue 33, item 2) reproduces the numbers of the two stacks it replaced.

``data/gp_unified_reference.json`` was written by :func:`reference` on commit 92600c2 (before the routing exact GP,
the BO :class:`~evroute.bo.gp.ExactGP` and the index policies shared one kernel interface, one exact-GP core and one
set of index functions) with::

    python -c "import json, tests.test_gp_unified_equivalence as t; json.dump(t.reference(), open('...', 'w'))"

It holds, on small fixed problems: the routing exact GP's posterior means and variances after some rounds (every
edge; incremental, dense and low-rank methods), its marginal likelihood and gradient (:class:`MarginalLikelihood`)
and a hyperparameter fit; the BO GP's posterior means and variances, log marginal likelihood, the gradient of its fit
objective, and fitted hyperparameters (isotropic Matérn and the spatio-temporal kernel); and the index policies'
estimates (UCB, Bayes-UCB, Thompson sampling, on a posterior with fixed numbers).

Tolerances (float64, unit round-off ``u = 1.1e-16``).  Bit-for-bit comparison is possible only for elementwise
work (the index functions: :data:`EXACT`; negation is exact in IEEE arithmetic, so ``-((-mu) + w sigma)`` is
``mu - w sigma``): the reductions in BLAS and NumPy pick SIMD paths by the arrays' memory alignment, so even the OLD
code, called twice in one process, differs from itself (measured at 92600c2: marginal-likelihood gradients by
``3.6e-15`` absolute, and through the refits' L-BFGS-B stopping points the routing hyperparameters by ``4.5e-8``).
Where the shared core evaluates a quantity by another, equally exact algorithm than one of the old stacks (the BO
GP's posterior mean ``b L^-1 r`` instead of ``k^T (L^-T L^-1 r)``, its likelihood gradient from ``A^-1`` by LAPACK
``dpotri`` instead of ``cho_solve(L, I)``), the two differ by the round-off of a triangular solve: ``~ n u kappa(A)``
relative, with ``n <= 40`` training points and ``kappa(A) <= 1e5`` here (noise ``>= 1e-3`` of a unit signal, or a
``1e-8`` jitter on a standardised problem whose smallest eigenvalue is ~1e-3), i.e. ``<= 4e-10``: :data:`REL` =
``1e-8`` (25x margin) for every evaluation at fixed hyperparameters.  A fit is an optimiser's stopping point
(L-BFGS-B: ``ftol = 2.2e-9``), so a round-off change of its objective can move it within ``sqrt(ftol)`` ~ 5e-5
relative in the log-parameters, and a posterior after a refit by as much: :data:`FIT_REL` = ``1e-3`` (a different
local optimum moves the hyperparameters by O(1)).

Choices of the BO policies: ``tests/bo/test_prerefactor_choices.py`` (finite domains: the same arms; boxes and the
time-varying policies: within its stated tolerance or a tie) passes on the unified code.  The 80-step time-varying slice
of ``python -m studies.bo.bo_model_equivalence --slices tv --compare REF.npz`` is chaotic (a tie of the UCB, or a
reset, turns a rounding difference into another point): against a dump made at 92600c2 (``--dump``) the unified code
first departs at step 17-26 of 80 depending on the policy; 92600c2 itself departs from the committed reference of
6d19838 (``tests/bo/data/tv_slice_6d19838.npz``, another machine) at steps 15-27 in the same way, and from its own
dump not at all (measured on this machine, one BLAS thread).
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

DATA = Path(__file__).parent / "data" / "gp_unified_reference.json"

#: same operations in the same order: bit for bit
EXACT = 0.0
#: another exact algorithm for the same quantity (see the module docstring)
REL = 1e-8
#: an optimiser's stopping point (see the module docstring)
FIT_REL = 1e-3

NET = "synthetic:60:1"


def _routing_env() -> tuple[Any, Any]:
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network

    lg = build_line_graph(load_network(NET))
    return lg, lg.contexts()


def _routing_rounds(n_edges: int, rounds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    truth = 20.0 + 5.0 * rng.standard_normal(n_edges)
    out = []
    for _ in range(rounds):
        e = rng.choice(n_edges, size=int(rng.integers(2, 7)), replace=True).astype(np.int64)
        out.append((e, truth[e] + 2.0 * rng.standard_normal(len(e))))
    return out


def routing_model(method: str, refit: bool) -> Any:
    """The routing exact GP after 24 rounds (a refresh every 10; with ``refit``, refits at rounds 8 and 16)."""
    from evroute.models.gp_exact import ExactGPConfig, ExactGPEdgeModel

    lg, ctx = _routing_env()
    n = ctx.shape[0]
    prior = 20.0 + np.linspace(-2.0, 2.0, n)
    cfg = ExactGPConfig(method=method, refit_first=8 if refit else 0, refresh_every=10, fit_iters=10)
    model = ExactGPEdgeModel(prior, 25.0, 4.0, lg.laplacian(), ctx, lengthscale=1.5, config=cfg)
    for e, y in _routing_rounds(n, 24, seed=3):
        model.update(e, y)
    return model


def routing_mll() -> dict[str, Any]:
    """Marginal likelihood, gradient and a fit of the routing exact GP's statistics on a fixed problem."""
    from evroute.models.gp_exact_mll import Hyper, MarginalLikelihood, fit_hyperparameters

    rng = np.random.default_rng(11)
    u, d = 25, 3
    x = rng.standard_normal((u, d))
    g = np.exp(-0.3 * np.abs(np.subtract.outer(np.arange(u), np.arange(u))))
    n = rng.integers(1, 5, size=u).astype(float)
    ybar = rng.standard_normal(u)
    scatter = np.where(n > 1, rng.uniform(0.1, 1.0, u), 0.0)
    m = 0.1 * rng.standard_normal(u)
    hyper = Hyper(0.6, 0.4, np.array([1.0, 1.5, 0.8]), np.array([2.0, 1.0, 1.2]), 0.2)
    ll, grad = MarginalLikelihood(g, x, m, n, ybar, scatter)(hyper.pack())
    amp = rng.uniform(0.5, 1.5, u)
    ll_a, grad_a = MarginalLikelihood(g, x, m, n, ybar, scatter, amplitude=amp)(hyper.pack())
    fit = fit_hyperparameters(hyper, g, x, m, n, ybar, scatter, iters=15, learn_noise=True)
    return {
        "ll": ll,
        "grad": grad.tolist(),
        "ll_amp": ll_a,
        "grad_amp": grad_a.tolist(),
        "fit": fit.pack().tolist(),
    }


def _bo_data(d: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.random((n, d))
    y = np.sin(6.0 * x[:, 0]) + x[:, -1] ** 2 + 0.05 * rng.standard_normal(n)
    return x, y, rng.random((30, d))


def bo_matern() -> dict[str, Any]:
    """BO GP with an isotropic Matérn-5/2 kernel: posterior, log marginal likelihood, objective gradient, a fit."""
    from evroute.bo.gp import ExactGP
    from evroute.bo.kernels import Matern

    x, y, q = _bo_data(2, 25, 1)
    gp = ExactGP(Matern(0.3, 1.0, 2.5), 1e-3, standardize=True, fit_iters=15)
    for xi, yi in zip(x[:15], y[:15], strict=True):
        gp.condition_on_observation(xi, float(yi))
    post = gp.posterior(q)
    inc = {"mean": post.mean.tolist(), "var": post.variance.tolist()}
    gp.set_train_data(x, y)
    post = gp.posterior(q)
    lml = gp.log_marginal_likelihood()
    names, theta, _ = gp._layout()
    cache, z = gp.kernel.fit_cache(gp.train_inputs), gp.standardized_targets()
    val, grad = gp._log_posterior(theta, names, cache, z, True)
    # the old fit objective was the negative log posterior without the constant |U|/2 log(2 pi)
    val, grad = -val - 0.5 * z.size * math.log(2 * math.pi), -grad
    m0, v0, dm, dv = gp.mean_var_grad(q[0])
    gp.fit_hyperparameters()
    return {
        "incremental": inc,
        "mean": post.mean.tolist(),
        "var": post.variance.tolist(),
        "lml": lml,
        "objective": val,
        "objective_grad": grad.tolist(),
        "mean_var_grad": [m0, v0, dm.tolist(), dv.tolist()],
        "fit": [gp.kernel.variance, gp.kernel.lengthscale, gp.noise],
    }


def bo_spatio_temporal() -> dict[str, Any]:
    """The time-varying policies' GP: posterior, log marginal likelihood, a fit."""
    from evroute.bo.timevarying.gp import spatio_temporal_gp

    x, y, q = _bo_data(2, 30, 2)
    t = np.linspace(0.0, 300.0, 30)
    gp = spatio_temporal_gp(2.5, 1.5, fit_iters=10)
    z = gp.kernel.inputs(x, t)
    gp.set_train_data(z, y)
    zq = gp.kernel.inputs(q, 310.0)
    post = gp.posterior(zq, standardized=True)
    lml = gp.log_marginal_likelihood()
    gp.set_train_data(z, y, fit=True)
    k = gp.kernel
    return {
        "mean": post.mean.tolist(),
        "var": post.variance.tolist(),
        "lml": lml,
        "fit": [k.signal, k.length_s, k.length_t, gp.noise],
    }


def index_estimates() -> dict[str, Any]:
    """UCB, Bayes-UCB and Thompson-sampling estimates of the routing index policies on a fixed posterior."""
    from evroute.models.base import EdgePosterior
    from evroute.policies.index import UCB, BayesUCB, Greedy, ThompsonSampling

    rng = np.random.default_rng(4)
    mean = 20.0 + 3.0 * rng.standard_normal(50)
    var = rng.uniform(0.1, 4.0, 50)
    post = EdgePosterior(mean, var, noise_var=np.full(50, 2.0))
    out: dict[str, Any] = {}
    for name, pol in (("ucb", UCB(0.5)), ("bucb", BayesUCB()), ("ts", ThompsonSampling()), ("greedy", Greedy())):
        r = np.random.default_rng(7)
        out[name] = {
            "estimates": pol.estimates(post, 13, r).tolist(),
            "weights": pol.weights(post, 13, np.random.default_rng(7)).tolist(),
        }
    return out


def reference() -> dict[str, Any]:
    """Every number of the module docstring (one thread: BLAS summation order fixed)."""
    with threadpool_limits(1):
        out: dict[str, Any] = {}
        for method, refit in itertools.product(("incremental", "dense", "lowrank"), (False, True)):
            model = routing_model(method, refit)
            post = model.posterior()
            out[f"routing_{method}_{'refit' if refit else 'fixed'}"] = {
                "mean": post.mean.tolist(),
                "var": post.variance.tolist(),
                "hyper": model.hyper.pack().tolist(),
            }
        out["routing_mll"] = routing_mll()
        out["bo_matern"] = bo_matern()
        out["bo_spatio_temporal"] = bo_spatio_temporal()
        out["index"] = index_estimates()
        return out


@pytest.fixture(scope="module")
def frozen() -> dict[str, Any]:
    return json.loads(DATA.read_text())


@pytest.fixture(scope="module")
def now() -> dict[str, Any]:
    return reference()


def _close(a: Any, b: Any, rel: float) -> None:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if rel == 0.0:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=rel, atol=rel * max(float(np.max(np.abs(b))), 1e-300))


@pytest.mark.parametrize("method", ["incremental", "dense", "lowrank"])
@pytest.mark.parametrize("refit", ["fixed", "refit"])
def test_routing_exact_gp_posterior_is_unchanged(frozen: dict, now: dict, method: str, refit: str) -> None:
    """The routing exact GP (its posterior solves and refits now on the shared core) gives the old posterior: to
    :data:`REL` with fixed hyperparameters, to :data:`FIT_REL` after refits."""
    old, new = frozen[f"routing_{method}_{refit}"], now[f"routing_{method}_{refit}"]
    rel = REL if refit == "fixed" else FIT_REL
    _close(new["hyper"], old["hyper"], rel)
    _close(new["mean"], old["mean"], rel)
    _close(new["var"], old["var"], rel)


def test_routing_marginal_likelihood_is_unchanged(frozen: dict, now: dict) -> None:
    old, new = frozen["routing_mll"], now["routing_mll"]
    for key in ("ll", "grad", "ll_amp", "grad_amp"):
        _close(new[key], old[key], REL)
    _close(new["fit"], old["fit"], FIT_REL)


def test_bo_gp_posterior_is_unchanged(frozen: dict, now: dict) -> None:
    """The BO GP's posterior through the shared core: same numbers to :data:`REL`."""
    old, new = frozen["bo_matern"], now["bo_matern"]
    for key in ("mean", "var"):
        _close(new[key], old[key], REL)
        _close(new["incremental"][key], old["incremental"][key], REL)
    for a, b in zip(new["mean_var_grad"], old["mean_var_grad"], strict=True):
        _close(a, b, REL)
    old, new = frozen["bo_spatio_temporal"], now["bo_spatio_temporal"]
    _close(new["mean"], old["mean"], REL)
    _close(new["var"], old["var"], REL)


def test_bo_gp_likelihood_and_gradient_are_unchanged(frozen: dict, now: dict) -> None:
    """One sign convention now (the log marginal likelihood, maximised): the BO fit's objective is its negative plus
    the lengthscale priors, as before."""
    old, new = frozen["bo_matern"], now["bo_matern"]
    assert math.isclose(new["lml"], old["lml"], rel_tol=REL)
    assert math.isclose(new["objective"], old["objective"], rel_tol=REL)
    _close(new["objective_grad"], old["objective_grad"], REL)
    assert math.isclose(now["bo_spatio_temporal"]["lml"], frozen["bo_spatio_temporal"]["lml"], rel_tol=REL)


def test_bo_gp_fits_are_unchanged(frozen: dict, now: dict) -> None:
    _close(now["bo_matern"]["fit"], frozen["bo_matern"]["fit"], FIT_REL)
    _close(now["bo_spatio_temporal"]["fit"], frozen["bo_spatio_temporal"]["fit"], FIT_REL)


@pytest.mark.parametrize("name", ["ucb", "bucb", "ts", "greedy"])
def test_index_policies_are_unchanged(frozen: dict, now: dict, name: str) -> None:
    """The routing index policies on the shared index functions: bit for bit (negation is exact in IEEE
    arithmetic, so ``-((-mu) + w sigma) == mu - w sigma``)."""
    _close(now["index"][name]["estimates"], frozen["index"][name]["estimates"], EXACT)
    _close(now["index"][name]["weights"], frozen["index"][name]["weights"], EXACT)
