"""Sweeps: serial and process-pool executors give identical results; sweeps resume."""

from __future__ import annotations

import contextlib
import json

import pandas as pd
import pytest

from evroute.errors import ParameterError
from evroute.experiments import load_rounds
from evroute.experiments.sweep import expand_grid, run_sweep

BASE = {"network": "synthetic:150:1", "route": "A", "horizon": 5, "seeds": [0, 1], "model_params": {}}


def rounds(path):
    """Per-round records without the wall-clock timing columns."""
    return load_rounds(path).drop(columns=["posterior_ms", "index_ms", "oracle_ms", "update_ms"])


def grid():
    return expand_grid(BASE, {"model": ["bi", "gp"], "policy": ["ts"]})


def test_expand_grid_names():
    g = grid()
    assert sorted(g) == ["bi-ts", "gp-ts"]
    assert g["gp-ts"].model == "gp" and g["gp-ts"].seeds == (0, 1)


@pytest.mark.slow
@pytest.mark.parametrize(("executor", "numpy_blas_threads"), [("process", None), ("process", 1), ("ray", None)])
def test_executor_equals_serial(tmp_path, executor, numpy_blas_threads):
    """A process pool and Ray (a local instance here; a cluster address for users) give the serial numbers, also
    when numpy's BLAS runs with another thread count than scipy's (as after a model limited BLAS threads before
    scipy's BLAS was loaded), which a fresh worker would not reproduce by itself."""
    if executor == "ray":
        import ray  # noqa: F401 - in the test extra: a missing Ray is a broken install, not a skip
    import scipy.linalg  # noqa: F401 - numpy's and scipy's BLAS both loaded
    from threadpoolctl import ThreadpoolController

    from evroute.experiments import runner

    runner._environment.cache_clear()  # environments cached by earlier tests were sampled with other BLAS threads
    controller = ThreadpoolController()
    numpy_blas = controller.select(
        filepath=next(lib.filepath for lib in controller.lib_controllers if "numpy" in lib.filepath)
    )
    g = grid()
    with numpy_blas.limit(limits=numpy_blas_threads) if numpy_blas_threads else contextlib.nullcontext():
        a = run_sweep(g, tmp_path / "serial", executor="serial")
        b = run_sweep(g, tmp_path / executor, executor=executor, workers=2)
    for name in g:
        pd.testing.assert_frame_equal(
            rounds(tmp_path / "serial" / name), rounds(tmp_path / executor / name), check_exact=True
        )
        assert a[name]["final_cumulative_regret_wh"] == b[name]["final_cumulative_regret_wh"]


@pytest.mark.slow
def test_sweep_resumes(tmp_path):
    g = grid()
    a = run_sweep(g, tmp_path / "serial", executor="serial")
    # resume: a deleted seed is re-run, the others are kept
    seed_dir = tmp_path / "serial" / "gp-ts" / "seed_1"
    before = rounds(tmp_path / "serial" / "gp-ts")
    (seed_dir / "summary.json").unlink()
    c = run_sweep(g, tmp_path / "serial", executor="serial")
    pd.testing.assert_frame_equal(rounds(tmp_path / "serial" / "gp-ts"), before)
    assert c["gp-ts"]["final_cumulative_regret_wh"] == a["gp-ts"]["final_cumulative_regret_wh"]
    assert json.loads((tmp_path / "serial" / "gp-ts" / "summary.json").read_text())["label"] == "GP-TS"


def test_unknown_executor(tmp_path):
    with pytest.raises(ParameterError):
        run_sweep(grid(), tmp_path, executor="dask")
