"""The thread policy of runs: every seed runs with a fixed BLAS thread count, whatever the process had before."""

from __future__ import annotations

import dataclasses

import pytest

from evroute.errors import ParameterError
from evroute.experiments import ExperimentConfig
from evroute.experiments import runner as R
from evroute.experiments.threads import RUN_BLAS_THREADS, run_blas_threads

CFG = ExperimentConfig(network="synthetic:150:1", route="A", model="bi", policy="ts", horizon=3, seeds=(0,))


def _blas_counts() -> set[int]:
    from threadpoolctl import ThreadpoolController

    return {int(c.num_threads) for c in ThreadpoolController().lib_controllers if c.user_api == "blas"}


@pytest.mark.parametrize("before", [1, 2])
def test_a_seed_runs_with_the_policy_count_and_restores_the_process_count(tmp_path, monkeypatch, before):
    import scipy.linalg  # noqa: F401 - numpy's and scipy's BLAS both loaded
    from threadpoolctl import threadpool_limits

    seen: list[set[int]] = []
    make = R.make_bandit

    def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        seen.append(_blas_counts())
        return make(*args, **kwargs)

    monkeypatch.setattr(R, "make_bandit", spy)
    with threadpool_limits(limits=before, user_api="blas"):
        R.run_experiment(CFG, tmp_path / f"run{before}", progress=False)
        assert _blas_counts() == {before}  # the process's count is back after the run
    assert seen == [{RUN_BLAS_THREADS}]


def test_blas_threads_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("EVROUTE_BLAS_THREADS", "2")
    assert run_blas_threads() == 2
    monkeypatch.setenv("EVROUTE_BLAS_THREADS", "-1")
    with pytest.raises(ParameterError, match="EVROUTE_BLAS_THREADS"):
        R.prepare_output(dataclasses.replace(CFG, horizon=4), tmp_path / "bad")  # not validated before
    assert not (tmp_path / "bad").exists()  # refused before anything was written
    monkeypatch.setenv("EVROUTE_BLAS_THREADS", "two")
    with pytest.raises(ParameterError, match="integer"):
        run_blas_threads()
