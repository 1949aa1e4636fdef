"""Saved models: round trips (saved -> loaded posterior equal), refusals (other network, version, kind, not a model
file), a run leaving one model per seed, and the driver commands on the command line."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from evroute.cli import main
from evroute.driver.belief import RouteBelief
from evroute.energy import DEFAULT_VEHICLE, VehicleProfile
from evroute.errors import DataError, ParameterError
from evroute.experiments.runner import load_linegraph
from evroute.models.store import load_model, prior_model, read_header, save_model

NET = "synthetic:300:2"


def _observed(kind: str, lg, **gp):
    m = prior_model(kind, lg, VehicleProfile(), **gp)
    rng = np.random.default_rng(0)
    e = rng.integers(0, lg.n_nodes, 120)
    m.update(e[:60], m.posterior().mean[e[:60]] + rng.normal(0, 2, 60))
    m.update(e[60:], m.posterior().mean[e[60:]] + rng.normal(0, 2, 60))
    return m


@pytest.mark.parametrize(("kind", "gp"), [("bi", {}), ("gp-exact", {"learn_hyper": False}), ("gp-exact", {})])
def test_round_trip_posterior_equal(tmp_path, kind, gp) -> None:
    lg = load_linegraph(NET)
    m = _observed(kind, lg, **gp)
    path = save_model(tmp_path / "m.npz", m, lg, vehicle=VehicleProfile(), meta={"note": "test"})
    back, header = load_model(path, lg)
    assert header["kind"] == kind and header["observations"] == 120 and header["meta"] == {"note": "test"}
    p0, p1 = m.posterior(), back.posterior()
    scale = float(np.abs(p0.mean).max())
    assert np.allclose(p1.mean, p0.mean, rtol=0, atol=1e-10 * scale)  # rounding of two exact solves
    assert np.allclose(p1.var, p0.var, rtol=1e-9, atol=1e-12 * float(p0.var.max()))
    assert p1.noise_var is not None and p0.noise_var is not None
    assert np.allclose(p1.noise_var, p0.noise_var, rtol=1e-12)
    route = np.arange(0, 40, 3)
    assert np.allclose(RouteBelief(back).cov(route), RouteBelief(m).cov(route), rtol=1e-8, atol=1e-10)
    # served (low-rank, local graph solves): the same posterior up to the local solver's error bound
    served, _ = load_model(path, lg, serve=True)
    assert np.allclose(served.posterior().mean, p0.mean, rtol=0, atol=1e-4 * scale)


def test_refusals(tmp_path) -> None:
    lg = load_linegraph(NET)
    path = save_model(tmp_path / "m.npz", prior_model("bi", lg), lg)
    with pytest.raises(DataError, match="learned on network"):
        load_model(path, load_linegraph("synthetic:400:2"))
    with np.load(path) as z:
        arrays = dict(z)
    header = json.loads(str(arrays.pop("header")))
    header["format_version"] = 99
    buf = io.BytesIO()
    np.savez(buf, header=np.array(json.dumps(header)), **arrays)
    (tmp_path / "v99.npz").write_bytes(buf.getvalue())
    with pytest.raises(DataError, match="version 99"):
        read_header(tmp_path / "v99.npz")
    (tmp_path / "junk.npz").write_text("not a zip")
    with pytest.raises(DataError, match="not an evroute model"):
        read_header(tmp_path / "junk.npz")
    from evroute.models.kr import KernelRegressionEdgeModel

    kr = object.__new__(KernelRegressionEdgeModel)
    with pytest.raises(ParameterError, match="not supported"):
        save_model(tmp_path / "kr.npz", kr, lg)


def test_run_saves_each_seed_model_and_route_serves_it(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert main(["run", "--network", NET, "--horizon", "4", "--seeds", "2", "--out", str(out), "--no-progress"]) == 0
    for s in (0, 1):
        assert json.loads((out / f"seed_{s}" / "summary.json").read_text())["model_file"] == "model.npz"
        assert read_header(out / f"seed_{s}" / "model.npz")["meta"]["rounds"] == 4
    lg = load_linegraph(NET)
    a, b = (str(x) for x in lg.network.edge_ids[[0, 150]])
    capsys.readouterr()
    argv = ["route", "--network", NET, "--from", a, "--to", b, "--model-file", str(out / "seed_0" / "model.npz")]
    assert main([*argv, "--charge", "2%", "--reserve", "1%", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [r["route"] for r in got["routes"]] == ["energy-optimal", "shortest", "fastest", "risk-aware"]
    model, _ = load_model(out / "seed_0" / "model.npz", lg)
    belief = RouteBelief(model)
    for r in got["routes"]:
        e = lg.network.index_of  # edge id -> index
        idx = np.array([e(x) for x in r["edges"]])
        assert r["energy_wh"] == pytest.approx(belief.mean[idx].sum(), rel=1e-6)
        lo, hi = r["arrival_soc_90"]
        assert lo < r["arrival_soc"] < hi and 0 <= r["p_arrival_above_reserve"] <= 1
    risk = got["routes"][3]
    if got["risk_aware"]["feasible"]:
        assert risk["p_arrival_above_reserve"] >= 0.95 - 1e-9
        feasible = [r["energy_wh"] for r in got["routes"] if r["p_arrival_above_reserve"] >= 0.95]
        assert risk["energy_wh"] <= min(feasible) + 1e-9


def test_reach_cli_writes_geojson_and_map(tmp_path, capsys) -> None:
    lg = load_linegraph(NET)
    a = str(lg.network.edge_ids[0])
    gj, html = tmp_path / "reach.geojson", tmp_path / "reach.html"
    argv = ["reach", "--network", NET, "--from", a, "--charge", "0.2%", "--reserve", "0%"]
    assert main([*argv, "--geojson", str(gj), "--html", str(html)]) == 0
    feats = json.loads(gj.read_text())["features"]
    # 0.2 % of the default vehicle's battery (the Chevrolet Bolt's 66 kWh: 132 Wh) reaches part of the city
    budget = 0.002 * VehicleProfile.load(DEFAULT_VEHICLE).battery_capacity_wh
    assert 0 < len(feats) < lg.n_nodes
    assert all(f["properties"]["quantile_energy_wh"] <= budget + 1e-9 for f in feats)
    assert html.read_text().count("reachable") >= 1
    # more charge reaches a superset
    assert main([*argv[:-4], "--charge", "0.4%", "--reserve", "0%", "--geojson", str(tmp_path / "b.geojson")]) == 0
    more = {f["properties"]["edge_id"] for f in json.loads((tmp_path / "b.geojson").read_text())["features"]}
    assert {f["properties"]["edge_id"] for f in feats} <= more


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--charge", "abc"], "--charge must be a percentage"),
        (["--charge", "120%"], "between 0% and 100%"),
        (["--charge", "50%", "--reserve", "60%", "--delta", "0.7"], "--delta"),
        (["--model-file", "missing.npz"], "not found"),
    ],
)
def test_bad_driver_input_is_one_line(tmp_path, capsys, monkeypatch, argv, match) -> None:
    monkeypatch.chdir(tmp_path)
    lg = load_linegraph(NET)
    a, b = (str(x) for x in lg.network.edge_ids[[0, 10]])
    assert main(["route", "--network", NET, "--from", a, "--to", b, "--geojson", "x.geojson", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evroute: error:") and match in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_model_learned_on_reduced_energies_serves_battery_energy(tmp_path, capsys) -> None:
    """A model learned in an environment with reduced energies (sumo-replay: battery energy minus kinetic and
    potential energy) is served as battery energy: each route's energy is the model's sum plus ``m g dz`` between
    the route's ends (the full potential telescopes), with the same standard deviation."""
    lg = load_linegraph(NET)
    m = prior_model("bi", lg, VehicleProfile())
    plain = save_model(tmp_path / "plain.npz", m, lg, vehicle=VehicleProfile())
    reduced = save_model(
        tmp_path / "reduced.npz",
        m,
        lg,
        vehicle=VehicleProfile(),
        meta={"energies": {"kind": "reduced", "gravity_mps2": 9.81}},
    )
    a, b = (str(x) for x in lg.network.edge_ids[[0, 150]])
    got = {}
    for name, path in (("plain", plain), ("reduced", reduced)):
        capsys.readouterr()
        assert main(["route", "--network", NET, "--from", a, "--to", b, "--model-file", str(path), "--json"]) == 0
        got[name] = {r["route"]: r for r in json.loads(capsys.readouterr().out)["routes"]}
    net, v = lg.network, VehicleProfile()
    shortest_r, shortest_p = got["reduced"]["shortest"], got["plain"]["shortest"]
    assert shortest_r["edges"] == shortest_p["edges"]  # the shortest route does not depend on energies
    idx = np.array([net.index_of(x) for x in shortest_r["edges"]])
    dz = net.z_to_m[idx[-1]] - net.z_from_m[idx[0]]
    belief_sum = np.maximum(RouteBelief(m).mean[idx], 0.0).sum()  # reduced means are served clipped at 0
    assert shortest_r["energy_wh"] == pytest.approx(belief_sum + v.mass_kg * 9.81 * dz / 3600.0, rel=1e-9, abs=1e-9)
    assert shortest_r["energy_sd_wh"] == pytest.approx(shortest_p["energy_sd_wh"], rel=1e-12)
