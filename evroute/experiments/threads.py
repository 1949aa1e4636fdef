"""The thread policy of runs: how many BLAS threads a seed's run uses.

A fixed count (:data:`RUN_BLAS_THREADS`, one by default) for the whole seed -- environment, regret reference, model
and policy -- whatever the process's count was before: the numbers of a seed then do not depend on the executor, on
which jobs a pool worker ran before, or on the machine's core count.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from evroute.errors import ParameterError

#: BLAS threads of a seed's run (``EVROUTE_BLAS_THREADS`` overrides; ``0`` leaves them as they are).  One: two made
#: every measured policy slower or no faster on a loaded 2-core machine (``docs/benchmark_gp_history.md``,
#: "Threads"), sweeps parallelise over processes, and a fixed count makes a seed's numbers independent of the
#: executor, of the order in which a pool worker ran its jobs and of the machine's core count (another count sums in
#: another order: other last bits).
RUN_BLAS_THREADS = 1


def run_blas_threads() -> int:
    """The BLAS thread count of a run: ``EVROUTE_BLAS_THREADS`` when set (an integer >= 0), else
    :data:`RUN_BLAS_THREADS`."""
    text = os.environ.get("EVROUTE_BLAS_THREADS", "").strip()
    if not text:
        return RUN_BLAS_THREADS
    try:
        n = int(text)
    except ValueError:
        raise ParameterError(f"EVROUTE_BLAS_THREADS must be an integer >= 0, got {text!r}") from None
    if n < 0:
        raise ParameterError(f"EVROUTE_BLAS_THREADS must be an integer >= 0, got {text!r}")
    return n


@contextlib.contextmanager
def run_threads() -> Iterator[None]:
    """Run with :func:`run_blas_threads` BLAS threads (restored afterwards); a model's ``threads`` parameter still
    applies from its construction on."""
    n = run_blas_threads()
    if n == 0:
        yield
        return
    import scipy.linalg  # noqa: F401  (load scipy's BLAS too: a limit reaches the libraries already loaded only)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=n, user_api="blas"):
        yield
