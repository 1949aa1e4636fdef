"""This core's ``dgemm`` / ``dtrsm`` rates on the shapes one exact-GP round uses (``studies.bench.benchmark_gp_goals``
measures them before and after its rounds, in the same process, to tell a slow round from a slow core)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np


def blas_rates(n: int, m0: int, k: int, fresh: int, catch: int, repeats: int = 7) -> dict[str, dict[str, Any]]:
    """GFLOP/s (2 per multiply-add; best CPU time of ``repeats``) of ``dgemm`` / ``dtrsm`` on the shapes of one
    round on ``n`` edges: a square 2000^3 product (the core's peak), the fresh columns' ``K_(.U0) z`` (``n x 256`` by
    ``256 x fresh`` per block), the history / catch-up updates (``n x k`` by ``k x catch``) and the step's
    ``C L_R^-T`` (``n x k``, triangular ``k x k``)."""
    from scipy.linalg import blas

    rng = np.random.default_rng(0)

    def best(fn: Any) -> float:
        ts = []
        for _ in range(repeats):
            c0 = time.process_time()
            fn()
            ts.append(time.process_time() - c0)
        return max(min(ts), 1e-9)

    def gemm(m: int, kk: int, nn: int) -> dict[str, Any]:
        a = np.asfortranarray(rng.standard_normal((m, kk)))
        b = np.asfortranarray(rng.standard_normal((kk, nn)))
        c = np.asfortranarray(np.zeros((m, nn)))
        s = best(lambda: blas.dgemm(1.0, a, b, beta=1.0, c=c, overwrite_c=1))
        return {"shape": [m, kk, nn], "ms": 1e3 * s, "gflops": 2.0 * m * kk * nn / s / 1e9}

    out = {
        "peak (2000 x 2000 x 2000)": gemm(2000, 2000, 2000),
        f"fresh columns (E x 256 x {fresh})": gemm(n, 256, fresh),
        f"catch-up / history (E x {k} x {catch})": gemm(n, k, catch),
    }
    c = np.asfortranarray(rng.standard_normal((n, k)))
    ell = np.linalg.cholesky(np.eye(k) * k + np.ones((k, k)))
    s = best(lambda: blas.dtrsm(1.0, ell, c, side=1, lower=1, trans_a=1, overwrite_b=0))
    out[f"step C L_R^-T (E x {k}, dtrsm)"] = {"shape": [n, k, k], "ms": 1e3 * s, "gflops": n * k * k / s / 1e9}
    b = np.asfortranarray(rng.standard_normal((m0, fresh)))
    big = np.linalg.cholesky(np.eye(m0) * m0 + np.ones((m0, m0)))
    s = best(lambda: blas.dtrsm(1.0, big, blas.dtrsm(1.0, big, b, lower=1), lower=1, trans_a=1))
    out[f"fresh solves L0^-T L0^-1 B ({m0} x {m0}, {fresh} columns, dtrsm)"] = {
        "shape": [m0, m0, fresh],
        "ms": 1e3 * s,
        "gflops": 2.0 * m0 * m0 * fresh / s / 1e9,
    }
    return out
