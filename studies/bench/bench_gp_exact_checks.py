"""Side checks of ``studies/bench/bench_gp_exact.py`` (its ``--rank-k``, ``--diag-hops`` and ``--local-tol`` options):
a rank-k covariance update by three libraries, the probed graph prior variances and the truncated local graph-kernel
columns against the exact dense kernel.  Each returns the markdown it prints."""

from __future__ import annotations

import time

import numpy as np


def rank_k(n: int, k: int, repeats: int) -> str:
    """Median ms of one rank-k update of an ``n x n`` covariance: BLAS dsyrk in place vs a full GEMM (NumPy) vs
    torch ``addmm_`` (the CUDA code path, here on the CPU), with the BLAS threads of the process."""
    import torch
    from scipy.linalg import blas

    rng = np.random.default_rng(0)
    w = np.asfortranarray(rng.standard_normal((k, n)) * 1e-3)
    sig = np.asfortranarray(np.eye(n))
    tsig, tw = torch.eye(n, dtype=torch.float64), torch.as_tensor(w)
    out = {}
    for name, fn in (
        (
            "dsyrk (lower triangle, in place)",
            lambda: blas.dsyrk(-1.0, w, beta=1.0, c=sig, trans=1, lower=1, overwrite_c=1),
        ),
        ("NumPy GEMM (Sigma -= W^T W)", lambda: np.subtract(sig, w.T @ w, out=sig)),
        ("torch addmm_", lambda: tsig.addmm_(tw.T, tw, alpha=-1.0)),
    ):
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            ts.append(1e3 * (time.perf_counter() - t0))
        out[name] = float(np.median(ts))
    return f"E = {n}, k = {k}: " + ", ".join(f"{a} {b:.1f} ms" for a, b in out.items())


def diag_probing_error(network: str, hops: list[int]) -> str:
    """Relative error of the probed graph prior variances (the low-rank path above 4000 edges) against the exact
    diagonal of the same normalised kernel (dense: only for networks that fit)."""
    from evroute.experiments.runner import load_linegraph
    from evroute.kernels.graph_matern import GraphMaternKernel

    lap = load_linegraph(network).laplacian()
    k = GraphMaternKernel(lap, 2.0, 1.0, method="sparse")
    exact = k.scale * np.diag(GraphMaternKernel(lap, 2.0, 1.0, method="sparse", normalise=False)._dense_raw())
    rows = []
    for h in hops:
        t0 = time.perf_counter()
        est, n_col = k.diag_probing(h)
        rel = np.abs(est - exact) / exact
        rows.append(
            f"| {network} | {h} | {n_col} | {time.perf_counter() - t0:.1f} | {np.median(rel):.1e} | "
            f"{np.percentile(rel, 90):.1e} | {rel.max():.1e} |"
        )
    return "\n".join(
        [
            "| network | hops | colours (solves) | s | median rel. error | p90 | max |",
            "|---|---|---|---|---|---|---|",
            *rows,
        ]
    )


def local_columns_error(network: str, tols: list[float], route: str) -> str:
    """Truncated local graph-kernel columns (:class:`LocalGraphMatern`) against the exact dense kernel: the error
    and cost per fixed radius (single columns: 64 spread edges) and per tolerance (the adaptive radius the model
    uses: set-up of all prior variances, then the columns of route ``route`` in route order, chunks of 16)."""
    from evroute.experiments.runner import load_linegraph
    from evroute.kernels.graph_matern_local import LocalGraphMatern
    from evroute.models.gp_kernels import dense_graph_gram
    from evroute.oracle import RouteOracle
    from evroute.routes import resolve_route

    lg = load_linegraph(network)
    lap = lg.laplacian()
    t0 = time.perf_counter()
    exact = dense_graph_gram(lap, 2.0, 1.0)
    t_dense = time.perf_counter() - t0
    rs = resolve_route(lg, network, route, None, None)
    path = np.asarray(RouteOracle(lg).shortest_route(np.maximum(lg.network.length_m, 1e-9), rs.start, rs.goal).edges)
    spread = np.linspace(0, lg.n_nodes - 1, 64).astype(np.int64)
    k = LocalGraphMatern(lap, 2.0, 1.0, tol=min(tols))
    rows = [
        f"Dense exact kernel (LAPACK, E = {lg.n_nodes}): {t_dense:.1f} s.",
        "",
        "| fixed radius (hops) | median nodes in the neighbourhood | ms per column | max entry error | "
        "max bound | bound / error (min) |",
        "|---|---|---|---|---|---|",
    ]
    for h in (2, 4, 6, 8, 10, 12, 16, 20, 24):
        sizes, errs, bounds, t0 = [], [], [], time.perf_counter()
        for i in spread:
            s_nodes, xs, res = k._solve(np.array([i]), h, 2)
            x = np.zeros(lg.n_nodes)
            x[s_nodes] = k.scale * xs[-1][:, 0]
            sizes.append(len(s_nodes))
            errs.append(np.abs(x - exact[:, i]).max())
            bounds.append(k.scale * k._inf_bound(res)[0])
        dt = 1e3 * (time.perf_counter() - t0) / len(spread)
        e, b = np.array(errs), np.array(bounds)
        rows.append(
            f"| {h} | {int(np.median(sizes))} | {dt:.1f} | {e.max():.1e} | {b.max():.1e} | "
            f"{np.min(b[e > 1e-12] / e[e > 1e-12]) if (e > 1e-12).any() else float('nan'):.2f} |"
        )
    rows += [
        "",
        f"Adaptive radius per tolerance; route {route} = {len(path)} edges.",
        "",
        "| tol | prior variances s (local solves) | max rel. error of the variances | route columns ms per column "
        "| max entry error (route columns) | nnz per column |",
        "|---|---|---|---|---|---|",
    ]
    d = np.diag(exact)
    for tol in tols:
        t0 = time.perf_counter()
        k = LocalGraphMatern(lap, 2.0, 1.0, tol=tol)
        t_set = time.perf_counter() - t0
        t0 = time.perf_counter()
        c, _ = k.sparse_columns(path)
        t_col = 1e3 * (time.perf_counter() - t0) / len(path)
        err = np.abs(c.toarray() - exact[:, path]).max()
        rows.append(
            f"| {tol:.0e} | {t_set:.1f} ({k.n_solves}) | {np.max(np.abs(k.diag() - d) / d):.1e} | "
            f"{t_col:.2f} | {err:.1e} | {c.nnz // len(path)} |"
        )
    return "\n".join(rows)
