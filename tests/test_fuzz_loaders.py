"""Fuzz / property suite over the loaders of untrusted files (issue 32): trip-log CSV files, model files, JSON configs
and vehicle profiles.  Arbitrary bytes, and valid files mutated at random, give either a result or an
:class:`~evroute.errors.EvrouteError` (which the CLI prints as one line) -- never another exception.

Kept fast: ``max_examples`` of 40-80 per property, no deadline (the first call of a loader imports its libraries).
"""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evroute.errors import EvrouteError
from evroute.traces.reader import TWIZY_COLUMNS, TraceColumns, read_trace_csv

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "data" / "trip-log-sumo" / "trip_0.csv"
NET = "synthetic:300:2"
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

#: JSON values of any shape (the header of a model file, a config, a vehicle profile, as a user could write them)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


def _quiet_call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(...)``; an :class:`EvrouteError` is the accepted refusal (returns None), warnings are allowed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kwargs)
        except EvrouteError as exc:
            assert "\n" not in str(exc).strip(), str(exc)  # one line
            return None


# --- trip-log CSV -------------------------------------------------------------------------------------------------


@FAST
@given(data=st.binary(max_size=2000))
def test_csv_reader_on_arbitrary_bytes(tmp_path, data):
    p = tmp_path / "log.csv"
    p.write_bytes(data)
    for cols in (TraceColumns(), TWIZY_COLUMNS):
        tr = _quiet_call(read_trace_csv, p, cols)
        if tr is not None:
            assert len(tr) >= 2 and np.all(np.diff(tr.t_s) > 0) and np.all(np.isfinite(tr.speed_mps))


_LINES = LOG.read_text().splitlines()


@pytest.mark.slow
@FAST
@given(
    edits=st.lists(
        st.tuples(st.integers(0, len(_LINES) - 1), st.integers(0, 5), st.text(max_size=10)), min_size=1, max_size=8
    ),
    drop=st.lists(st.integers(0, len(_LINES) - 1), max_size=5),
)
def test_csv_reader_on_mutated_valid_logs(tmp_path, edits, drop):
    """A shipped log with fields replaced by arbitrary text and lines removed: a trace of plausible rows (without
    charge when the charge column's name was lost), or one line of refusal."""
    lines = [line.split(",") for line in _LINES]
    for row, col, text in edits:
        if col < len(lines[row]):
            lines[row][col] = text
    kept = [",".join(r) for i, r in enumerate(lines) if i not in set(drop)]
    p = tmp_path / "log.csv"
    p.write_text("\n".join(kept) + "\n")
    tr = _quiet_call(read_trace_csv, p)
    if tr is not None:
        assert len(tr) >= 2 and np.all(np.diff(tr.t_s) > 0)
        # a log whose charge column was lost is read without charge (all NaN: learned from speed and position
        # only); otherwise every kept charge is a percentage
        soc = tr.soc_pct
        assert np.all(np.isnan(soc)) or np.all((soc >= 0) & (soc <= 100))
        assert np.all(np.abs(tr.lon) <= 180)
        assert np.all(tr.speed_mps <= 250 / 3.6)


@settings(max_examples=40, deadline=None)
@given(soc=st.lists(st.floats(0, 100), min_size=2, max_size=60))
def test_read_log_splits_any_gauge_into_segments_that_never_gain(tmp_path_factory, soc):
    """Any state-of-charge sequence: the segments :func:`read_log` learns from never rise more than the threshold."""
    from evroute.experiments.trip_workers import read_log
    from evroute.traces.clean import SOC_RISE_PCT

    p = tmp_path_factory.mktemp("g") / "log.csv"
    rows = ["time,speed_kmh,altitude_m,soc_pct,lat,lon"] + [f"{t},10,0,{s!r},50,10" for t, s in enumerate(soc)]
    p.write_text("\n".join(rows) + "\n")
    traces = _quiet_call(read_log, p, None) or []
    for tr in traces:
        s = tr.soc_pct
        assert float(np.max(s - np.minimum.accumulate(s))) <= SOC_RISE_PCT + 1e-9


# --- model files --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> tuple[Path, Any]:
    from evroute.experiments.runner import load_linegraph
    from evroute.models.store import prior_model, save_model

    lg = load_linegraph(NET)
    m = prior_model("gp-exact", lg, learn_hyper=False)
    e = np.arange(0, 60, 3)
    m.update(e, m.posterior().mean[e] + 1.0)
    path = save_model(tmp_path_factory.mktemp("m") / "m.npz", m, lg)
    return path, lg


@FAST
@given(data=st.binary(max_size=3000))
def test_model_loader_on_arbitrary_bytes(tmp_path, model_file, data):
    from evroute.models.store import load_model

    p = tmp_path / "m.npz"
    p.write_bytes(data)
    assert _quiet_call(load_model, p, model_file[1]) is None  # random bytes are never a model


@FAST
@given(flips=st.lists(st.tuples(st.integers(0, 10**9), st.integers(1, 255)), min_size=1, max_size=6))
def test_model_loader_on_corrupted_files(tmp_path, model_file, flips):
    from evroute.models.store import load_model

    raw = bytearray(model_file[0].read_bytes())
    for pos, xor in flips:
        raw[pos % len(raw)] ^= xor
    p = tmp_path / "m.npz"
    p.write_bytes(bytes(raw))
    _quiet_call(load_model, p, model_file[1])


def _arrays(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    with np.load(path) as z:
        arrays = dict(z)
    return json.loads(str(arrays.pop("header"))), arrays


ARRAY = st.one_of(
    st.lists(st.floats(), max_size=5).map(lambda v: np.array(v, dtype=np.float64)),
    st.lists(st.integers(-(2**40), 2**40), max_size=5).map(lambda v: np.array(v, dtype=np.int64)),
    st.lists(st.text(max_size=3), max_size=3).map(lambda v: np.array(v, dtype=str)),
    st.just(np.zeros((2, 3))),
    st.just(np.array(True)),
)


@FAST
@given(
    header_edits=st.lists(
        st.tuples(st.sampled_from(["network", "vehicle", "hyperparameters", "meta", "observations", "kind"]), JSON),
        max_size=3,
    ),
    nested_edits=st.lists(
        st.tuples(st.sampled_from(["network", "vehicle", "hyperparameters", "meta"]), st.text(max_size=10), JSON),
        max_size=3,
    ),
    array_edits=st.lists(
        st.tuples(
            st.sampled_from(
                ["prior_mean_wh", "edges", "counts", "sum_y", "sum_y2", "lengthscale_f", "lengthscale_f2", "x"]
            ),
            ARRAY,
        ),
        max_size=3,
    ),
)
def test_model_loader_on_mutated_headers_and_arrays(tmp_path, model_file, header_edits, nested_edits, array_edits):
    """A valid exact-GP model file with header fields, nested header keys and arrays replaced by arbitrary values:
    a model whose posterior is finite, or one line of refusal."""
    from evroute.models.store import load_model

    header, arrays = _arrays(model_file[0])
    for key, value in header_edits:
        header[key] = value
    for key, sub, value in nested_edits:
        if isinstance(header.get(key), dict):
            header[key][sub] = value
    for key, value in array_edits:
        arrays[key] = value
    buf = io.BytesIO()
    np.savez(buf, header=np.array(json.dumps(header)), **arrays)
    p = tmp_path / "m.npz"
    p.write_bytes(buf.getvalue())
    out = _quiet_call(load_model, p, model_file[1])
    if out is not None:
        post = out[0].posterior()
        assert np.all(np.isfinite(post.mean)) and np.all(post.var >= 0)


# --- JSON configs and vehicle profiles ------------------------------------------------------------------------------


@FAST
@given(value=JSON)
def test_vehicle_profile_from_any_json(tmp_path, value):
    from evroute.energy import VehicleProfile

    p = tmp_path / "v.json"
    p.write_text(json.dumps(value))
    v = _quiet_call(VehicleProfile.load, p)
    assert v is None or isinstance(v, VehicleProfile)


@pytest.mark.slow
@FAST
@given(
    value=JSON,
    base=st.dictionaries(
        st.sampled_from(["network", "horizon", "seeds", "model", "policy", "model_params", "env", "route"]),
        JSON,
        max_size=4,
    ),
)
def test_experiment_config_and_grid_from_any_json(tmp_path, value, base):
    from evroute.experiments import ExperimentConfig
    from evroute.experiments.sweep import load_grid

    for i, obj in enumerate((value, base, {"base": base, "grid": value}, {"base": base, "grid": {"horizon": value}})):
        p = tmp_path / f"c{i}.json"
        p.write_text(json.dumps(obj))
        _quiet_call(ExperimentConfig.from_file, p)
        _quiet_call(load_grid, p)


@FAST
@given(data=st.binary(max_size=500))
def test_configs_from_arbitrary_bytes(tmp_path, data):
    from evroute.energy import VehicleProfile
    from evroute.experiments import ExperimentConfig
    from evroute.experiments.sweep import load_grid

    p = tmp_path / "c.json"
    p.write_bytes(data)
    for fn in (ExperimentConfig.from_file, load_grid, VehicleProfile.load):
        _quiet_call(fn, p)
