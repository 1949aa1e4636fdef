"""Synthetic cities in the compute cache: a loaded city is the generated one bit for bit, a damaged entry is rebuilt
with one warning, every parameter changes the key, and the opt-out generates afresh and writes nothing."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from evroute.errors import ParameterError
from evroute.network import netstore, synthetic
from evroute.network.registry import load_network
from evroute.network.road_network import RoadNetwork

KIND = "synthetic-network"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "compute"
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(folder))
    return folder


def _entries(folder: Path) -> list[Path]:
    return sorted((folder / KIND).glob("*.npz"))


def assert_same_network(a: RoadNetwork, b: RoadNetwork) -> None:
    assert a.name == b.name
    for f in ("edge_ids", "from_node", "to_node", "length_m", "speed_mps", "z_from_m", "z_to_m", "turns"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype, f
        np.testing.assert_array_equal(x, y, err_msg=f)  # bit for bit: no tolerance
    assert len(a.geometry) == len(b.geometry)
    for ga, gb in zip(a.geometry, b.geometry, strict=True):
        assert ga.dtype == gb.dtype and ga.shape == gb.shape
    np.testing.assert_array_equal(np.concatenate(a.geometry), np.concatenate(b.geometry))
    assert a.meta.keys() == b.meta.keys()
    for k, v in a.meta.items():
        if isinstance(v, np.ndarray):
            assert v.dtype == b.meta[k].dtype, k
            np.testing.assert_array_equal(v, b.meta[k])
        else:
            assert v == b.meta[k], k


def _no_generation(*args: object, **kwargs: object) -> RoadNetwork:
    raise AssertionError("generated instead of loaded")


def test_a_loaded_city_is_the_generated_one(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = synthetic.synthetic_city(600, 4)
    first = netstore.load_synthetic(600, 4)  # generates and stores
    (entry,) = _entries(cache)
    monkeypatch.setattr(synthetic, "synthetic_city", _no_generation)
    second = netstore.load_synthetic(600, 4)  # loads
    assert _entries(cache) == [entry]
    for net in (first, second):
        assert_same_network(net, made)
    assert_same_network(load_network("synthetic:600:4"), made)  # the registry's spec goes through the cache


def test_round_trip_of_the_arrays_keeps_every_array() -> None:
    net = synthetic.synthetic_city(300, 1, curved_fraction=0.6)
    assert_same_network(netstore.network_from_arrays(netstore.network_arrays(net)), net)


@pytest.mark.parametrize("damage", ["corrupt", "truncate", "no manifest"])
def test_a_damaged_entry_is_rebuilt_with_one_warning(cache: Path, damage: str) -> None:
    made = netstore.load_synthetic(400, 2)
    (entry,) = _entries(cache)
    if damage == "corrupt":
        data = bytearray(entry.read_bytes())
        data[len(data) // 2] ^= 0xFF
        entry.write_bytes(bytes(data))
    elif damage == "truncate":
        entry.write_bytes(entry.read_bytes()[:200])
    else:
        Path(str(entry) + ".manifest.json").unlink()
    with pytest.warns(UserWarning, match="synthetic network") as rec:
        again = netstore.load_synthetic(400, 2)
    assert len([w for w in rec if "synthetic network" in str(w.message)]) == 1
    assert_same_network(again, made)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # healed: loaded without a warning
        assert_same_network(netstore.load_synthetic(400, 2), made)


def test_every_parameter_changes_the_key(cache: Path) -> None:
    netstore.load_synthetic(300, 0)
    netstore.load_synthetic(300, 0)
    assert len(_entries(cache)) == 1
    variants: list[dict[str, object]] = [
        {"n_edges": 301},
        {"seed": 1},
        {"oneway_fraction": 0.2},
        {"removal_fraction": 0.1},
        {"diagonal_fraction": 0.1},
        {"curved_fraction": 0.1},
        {"max_elevation_m": 100.0},
        {"max_incline": 0.05},
        {"origin_lonlat": (6.2, 49.6)},
        {"name": "other"},
    ]
    for i, change in enumerate(variants, start=2):
        kw: dict = {"n_edges": 300, "seed": 0, **change}
        net = netstore.load_synthetic(**kw)
        assert_same_network(net, synthetic.synthetic_city(**kw))
        assert len(_entries(cache)) == i, change


def test_the_opt_out_generates_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", "off")
    monkeypatch.setenv("EVROUTE_CACHE", str(tmp_path))
    assert_same_network(netstore.load_synthetic(300, 5), synthetic.synthetic_city(300, 5))
    assert not any(tmp_path.rglob("*"))


def test_bad_parameters_fail_before_the_cache_is_touched(cache: Path) -> None:
    with pytest.raises(ParameterError):
        netstore.load_synthetic(10, 0)
    with pytest.raises(ParameterError):
        netstore.load_synthetic(300, 0, oneway_fraction=2.0)
    assert not cache.exists()
