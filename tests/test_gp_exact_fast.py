"""Exact GP edge model, fast paths: incremental updates against from-scratch solves, NumPy marginal likelihood.

Tolerances (float64, unit round-off ``u = 2^-53 ~ 1.1e-16``): one conditioning step perturbs the posterior by
~``u kappa`` relative to the prior scale ``max K_ii``, with ``kappa`` the condition number of the matrix factorised:
``C[R] + s^2 I`` in a rank-``k`` round (``C = Sigma[:, R]``; ``kappa <= 1 + k max_i K_ii / s^2``) and
``A = K_UU + diag(s^2 / n_U)`` at a snapshot or from-scratch solve.  Errors of successive rounds add at worst
linearly, so after ``T`` rounds the bound is ``T u kappa`` with ``kappa`` the larger of the two; the tests assert the
means' error (relative to their largest magnitude) and the variances' (relative to ``max K_ii``) are below it.  The
condition numbers run at are ~1e3 (default noise) to ~1e5 (noise 1e-4), bounds 1e-11 to 1e-8; measured errors
are ~1e-14 to 1e-12.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import multivariate_normal

from evroute.environments import PaperEnvironment
from evroute.experiments.registry import make_model
from evroute.kernels.edge import GraphKernel, Points, edge_kernel
from evroute.kernels.matern import matern, matern_grad_factor, matern_with_grad_factor
from evroute.linegraph import build_line_graph
from evroute.models.exact_incremental import IncrementalPosterior
from evroute.models.exact_posterior import exact_solve
from evroute.models.gp_exact_mll import Hyper, MarginalLikelihood, fit_hyperparameters, marginal_log_likelihood
from evroute.network.registry import load_network
from evroute.oracle import RouteOracle

NET = "synthetic:300:1"
U = np.finfo(np.float64).eps / 2


@pytest.fixture(scope="module")
def env():
    return PaperEnvironment.sample(build_line_graph(load_network(NET)), seed=4)


def _routes(env, rng, rounds):
    """Random shortest routes (random weights, random ends): paths of the graph, edges repeated across rounds."""
    oracle = RouteOracle(env.linegraph)
    n = env.n_edges
    out = []
    while len(out) < rounds:
        s, g = rng.integers(n, size=2)
        if s == g:
            continue
        r = oracle.shortest_route(rng.uniform(0.5, 1.5, n), int(s), int(g))
        if len(r.edges):
            e = np.asarray(r.edges, dtype=np.int64)
            out.append((e, env.true_mean_wh[e] + math.sqrt(env.noise_var) * rng.standard_normal(len(e))))
    return out


def _kappa(m, k_max):
    """The larger of cond(A) (final visited block) and the bound 1 + k max K_ii / s^2 of a round's cond."""
    e, n, _, _ = m.statistics()
    k = m.kernel()
    cond_a = float(np.linalg.cond(k.columns(e)[e] + np.diag(m.hyper.noise / n)))
    return max(cond_a, 1.0 + k_max * float(np.max(k.diag())) / m.hyper.noise)


@pytest.mark.slow
@pytest.mark.parametrize(
    "method, params",
    [
        ("incremental", {}),
        ("incremental", {"history_max": 3000}),  # a re-snapshot every round or two: the snapshot path
        ("incremental", {"noise": 1e-4}),  # low noise: ill-conditioned A
        ("dense", {}),
        ("lowrank", {"graph_tol": 1e-12}),
    ],
)
def test_updates_equal_from_scratch_solve_after_hundreds_of_rounds(env, method, params):
    """300 rounds of random routes (repeated edges) with no refresh: every representation equals ``exact_solve``."""
    m = make_model(
        "gp-exact",
        env,
        method=method,
        refresh_every=0,
        refit_first=0,
        **{k: v for k, v in params.items() if k == "graph_tol"},
    )
    if "noise" in params:
        m.hyper.noise = params["noise"]
    m.posterior()
    if "history_max" in params:
        m._post.history_max = params["history_max"]
    rounds = _routes(env, np.random.default_rng(11), 300)
    for e, y in rounds:
        m.update(e, y)
    e, n, ybar, _ = m.statistics()
    assert n.max() >= 20 and len(e) > 100  # repeated observations and a large visited block
    mu, var, _ = exact_solve(m.kernel(), m.m0, e, n, ybar, m.hyper.noise)
    post = m.posterior()
    kappa = _kappa(m, max(len(r[0]) for r in rounds))
    tol = len(rounds) * U * kappa
    kmax = float(np.max(m.kernel().diag()))
    err_mu = np.max(np.abs(post.mean / m.scale - mu)) / np.max(np.abs(mu))
    err_var = np.max(np.abs(post.variance / m.scale**2 - var)) / kmax
    assert err_mu <= tol and err_var <= tol, (err_mu, err_var, kappa)
    if method == "incremental":
        p = m._post
        assert isinstance(p, IncrementalPosterior)
        c = p.counters
        assert min(c["hits"], c["fresh"], c["catch_up"], c["snapshots"]) > 0  # every path ran
        kd = m.kernel().dense()
        a = kd[np.ix_(e, e)] + np.diag(m.hyper.noise / n)
        s = np.union1d(p.cached[:20], e[:10])  # cached (brought up to date) and fresh columns
        sig = kd[:, s] - kd[:, e] @ np.linalg.solve(a, kd[e][:, s])
        assert np.max(np.abs(p.columns(s) - sig)) <= tol * kmax


def test_incremental_refresh_and_columns_are_exact(env):
    """``columns`` (cached or fresh) and ``refresh`` agree with the textbook formula at any point of a run."""
    m = make_model("gp-exact", env, refresh_every=0, refit_first=0)
    m.posterior()
    p = m._post
    for e, y in _routes(env, np.random.default_rng(3), 60):
        m.update(e, y)
    e, n, ybar, _ = m.statistics()
    kd = m.kernel().dense()
    a = kd[np.ix_(e, e)] + np.diag(m.hyper.noise / n)
    pick = np.concatenate([p.cached[:5], np.setdiff1d(e, p.cached)[:5]])  # hits and fresh columns
    assert len(pick) == 10
    ref = kd[:, pick] - kd[:, e] @ np.linalg.solve(a, kd[e][:, pick])
    assert np.max(np.abs(p.columns(pick) - ref)) < 1e-10
    p.refresh(e, n, ybar)
    assert p.cached.size == 0 and p._h == 0
    mu, var, _ = exact_solve(m.kernel(), m.m0, e, n, ybar, m.hyper.noise)
    np.testing.assert_allclose(p.var, var, rtol=1e-10)
    np.testing.assert_allclose(p.mu, mu, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------------- marginal likelihood (NumPy)
def _data(seed, m=25, d=3):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, d))
    b = rng.standard_normal((m, m))
    g = b @ b.T / m + 0.1 * np.eye(m)
    g /= np.mean(np.diag(g))
    n = rng.integers(1, 5, m).astype(float)
    return g, x, 0.1 * rng.standard_normal(m), n, rng


def test_marginal_likelihood_equals_brute_force_density_of_the_raw_observations():
    """The statistics' likelihood == scipy.stats MVN log-density of all raw observations (K expanded to them)."""
    g, x, m_u, n, rng = _data(0)
    h = Hyper(0.7, 0.4, np.array([0.8, 1.3, 2.0]), np.array([1.5, 0.6, 0.9]), 0.23)
    idx = np.repeat(np.arange(len(n)), n.astype(int))  # observation -> edge
    y = rng.standard_normal(len(idx))
    ybar = np.bincount(idx, weights=y) / n
    sc = np.bincount(idx, weights=(y - ybar[idx]) ** 2)
    p = Points(None, x)
    k = edge_kernel(GraphKernel(g), h.s1, h.s2, h.ls1, h.ls2)(p, p)
    ref = multivariate_normal(m_u[idx], k[np.ix_(idx, idx)] + h.noise * np.eye(len(idx))).logpdf(y)
    ours = marginal_log_likelihood(h, g, x, m_u, n, ybar, sc)
    assert abs(ours - ref) < 1e-10 * abs(ref)


@pytest.mark.parametrize("seed", [1, 2])
def test_marginal_likelihood_gradient_equals_finite_differences(seed):
    """Central differences, step 1e-5 in the log-parameters: truncation ~ step^2 |f'''| ~ 1e-10, round-off ~
    u |f| / step ~ 1e-9 (|f| ~ 50): agreement to 1e-6 of the largest gradient entry."""
    g, x, m_u, n, rng = _data(seed)
    ybar = rng.standard_normal(len(n))
    sc = np.where(n > 1, 0.3 * (n - 1) * rng.random(len(n)), 0.0)
    f = MarginalLikelihood(g, x, m_u, n, ybar, sc)
    th = Hyper(0.7, 0.4, rng.uniform(0.5, 2, 3), rng.uniform(0.5, 2, 3), 0.23).pack()
    _, grad = f(th)
    fd = np.array([(f(th + 1e-5 * e, grad=False)[0] - f(th - 1e-5 * e, grad=False)[0]) / 2e-5 for e in np.eye(len(th))])
    assert np.max(np.abs(fd - grad)) < 1e-6 * np.max(np.abs(grad))


def _torch_fit(h, g, x, m_u, n, ybar, sc, iters):
    """The previous fit (torch autograd, L-BFGS with strong Wolfe line search), as the reference."""
    as_t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64))  # noqa: E731
    raw = [as_t(v).clone().requires_grad_(True) for v in (np.log(h.s1), np.log(h.s2), np.log(h.ls1), np.log(h.ls2))]
    noise = torch.tensor(h.noise, dtype=torch.float64)
    gt, xt, mt, nt, yt, st = (as_t(a) for a in (g, x, m_u, n, ybar, sc))
    scale = 1.0 / float(n.sum())

    def loss():
        p = Points(None, xt)
        k = edge_kernel(GraphKernel(gt), raw[0].exp(), raw[1].exp(), raw[2].exp(), raw[3].exp())(p, p)
        l_ = torch.linalg.cholesky(k + torch.diag(noise / nt))
        z = torch.linalg.solve_triangular(l_, (yt - mt)[:, None], upper=False)
        ll = -0.5 * (z * z).sum() - torch.log(torch.diagonal(l_)).sum() - 0.5 * len(nt) * math.log(2 * math.pi)
        ll = ll - (0.5 * (nt - 1) * torch.log(2 * math.pi * noise) + st / (2 * noise) + 0.5 * torch.log(nt)).sum()
        return -ll * scale

    opt = torch.optim.LBFGS(raw, lr=1.0, max_iter=iters, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        v = loss()
        v.backward()
        return v

    opt.step(closure)
    r = [v.detach().numpy() for v in raw]
    return Hyper(float(np.exp(r[0])), float(np.exp(r[1])), np.exp(r[2]), np.exp(r[3]), h.noise)


@pytest.mark.slow
def test_fit_reaches_the_torch_fits_optimum():
    """Same data, same start: the NumPy/SciPy fit's marginal likelihood at its optimum equals the torch fit's (both
    run to convergence; the objective is divided by N, so 1e-6 of it is the optimisers' stopping tolerance scale)."""
    g, x, m_u, n, rng = _data(5, m=40)
    truth = Hyper(0.6, 0.3, np.array([0.7, 1.5, 1.0]), np.array([2.0, 0.8, 1.2]), 0.05)
    p = Points(None, x)
    k = edge_kernel(GraphKernel(g), truth.s1, truth.s2, truth.ls1, truth.ls2)(p, p)
    f = m_u + np.linalg.cholesky(k + 1e-10 * np.eye(len(n))) @ rng.standard_normal(len(n))
    idx = np.repeat(np.arange(len(n)), n.astype(int))
    y = f[idx] + math.sqrt(truth.noise) * rng.standard_normal(len(idx))
    ybar = np.bincount(idx, weights=y) / n
    sc = np.bincount(idx, weights=(y - ybar[idx]) ** 2)
    start = Hyper(0.5, 0.5, np.ones(3), np.ones(3), truth.noise)
    data = (g, x, m_u, n, ybar, sc)
    ours = fit_hyperparameters(start, *data, iters=200)
    ref = _torch_fit(start, *data, iters=200)
    ll0, ll_ours, ll_ref = (marginal_log_likelihood(h, *data) for h in (start, ours, ref))
    assert ll_ours > ll0 + 1.0  # the fit moved
    assert abs(ll_ours - ll_ref) <= 1e-6 * n.sum()


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_matern_with_grad_factor_equals_the_separate_functions(nu):
    r = np.abs(np.random.default_rng(0).standard_normal((7, 5))) * 2
    r[0, 0] = 0.0
    k, h = matern_with_grad_factor(r, nu)
    np.testing.assert_allclose(k, matern(r, 1.0, nu), rtol=1e-14)
    np.testing.assert_allclose(h, matern_grad_factor(r, 1.0, nu), rtol=1e-14)


class _OnesKernel:
    """A kernel source of ``n`` edges that is never evaluated (for the incremental posterior's sizing)."""

    def __init__(self, n):
        self.n = n

    def diag(self):
        return np.ones(self.n)


@pytest.mark.parametrize("n", [5644, 100599])
def test_default_history_holds_1024_columns_on_large_networks(n):
    """The default history cap is ``2^25`` entries (unchanged up to 32768 edges) or 1024 columns: at 100k edges a
    fixed ``2^25`` would hold 333 columns, less than one round of a 335-edge route (every cached column dropped)."""
    p = IncrementalPosterior(_OnesKernel(n), np.zeros(n), 0.1)
    assert p.history_max == max(2**25, 1024 * n)
    assert p.history_max // n >= 1024
    assert IncrementalPosterior(_OnesKernel(n), np.zeros(n), 0.1, history_max=3000).history_max == 3000


def test_history_shorter_than_a_round_drops_every_cached_column_and_stays_exact(env):
    """The mechanism behind the default above, on a small graph: with a history cap below one round's update factor,
    no cached column is ever caught up (each re-driven edge is computed fresh); with room for the factors, re-driven
    edges are caught up.  Both equal the from-scratch solve."""
    rounds = _routes(env, np.random.default_rng(5), 40)
    rounds = [(e, y) for e, y in rounds for _ in range(2)]  # every route driven twice in a row: cache hits
    k_min = min(len(e) for e, _ in rounds)
    out = {}
    for cap in ("short", "roomy"):
        m = make_model("gp-exact", env, refresh_every=0, refit_first=0)
        m.posterior()
        p = m._post
        p.history_max = (k_min - 1) * p.n if cap == "short" else 4096 * p.n
        for e, y in rounds:
            m.update(e, y)
        e, n, ybar, _ = m.statistics()
        mu, var, _ = exact_solve(m.kernel(), m.m0, e, n, ybar, m.hyper.noise)
        kmax = float(np.max(m.kernel().diag()))
        tol = len(rounds) * U * _kappa(m, max(len(r[0]) for r in rounds))
        assert np.max(np.abs(p.mu - mu)) / np.max(np.abs(mu)) <= tol
        assert np.max(np.abs(p.var - var)) / kmax <= tol
        out[cap] = dict(p.counters)
    assert out["short"]["catch_up"] == 0 and out["roomy"]["catch_up"] > 0
    assert out["short"]["fresh"] > out["roomy"]["fresh"]


@pytest.mark.parametrize("method", ["incremental", "lowrank"])
def test_kernel_columns_added_in_pieces_equal_one_call(env, method):
    """``K_{.U}`` built piece by piece (pieces across the 256-column blocks) is the kernel's columns of each piece bit
    for bit, and one call's to rounding (the local graph solves group a call's columns in ~16-column chunks, so
    their rounding depends on the call; the dense graph Gram's columns do not)."""
    m = make_model("gp-exact", env, method=method, refit_first=0)
    m.posterior()
    p = m._post
    p.PIECE = 48
    e = np.random.default_rng(0).permutation(p.n)[:300]
    p._add_edges(e[:7])
    p._add_edges(e)  # 293 more: pieces of 48 from the first new edge, blocks of 256 from column 7
    assert np.array_equal(p.edges, e)
    k = m.kernel()
    pieces = [k.columns(e[:7])] + [k.columns(e[i : i + 48]) for i in range(7, 300, 48)]
    assert np.array_equal(p.kxu, np.hstack(pieces))
    one = np.hstack([k.columns(e[:7]), k.columns(e[7:])])  # one call per _add_edges
    assert np.max(np.abs(p.kxu - one)) <= 16 * U * np.max(one)  # a few roundings of a local solve
    if method == "incremental":  # dense graph Gram
        assert np.array_equal(p.kxu, one)
