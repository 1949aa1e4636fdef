"""The exact GP in array form (:mod:`evroute.service.gpdense`) gives the posterior of the loaded model
(:class:`evroute.driver.belief.RouteBelief`, the command line's): means, variances, route covariances, also after
online observations, and its kernel comes back from the compute cache unchanged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from servefixtures import learned, small_lg

from evroute.driver.belief import RouteBelief
from evroute.energy import VehicleProfile, elevation_potential_wh
from evroute.models.store import load_model, read_header, save_model
from evroute.service.gpdense import DenseGP, DenseGPBelief

# Both sides use the same kernel numbers (the model's serve-form columns); they differ only in the order of the
# floating-point operations of the solves (a low-rank update vs one Cholesky factor), condition numbers here are
# below 1e4: relative 1e-8 is far above that rounding and far below any modelling difference.
REL = 1e-8


@pytest.fixture()
def saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path / "cache"))
    lg = small_lg()
    path = tmp_path / "gp.npz"
    save_model(path, learned("gp-exact", lg, seed=3, n_obs=80, learn_hyper=False), lg, vehicle=VehicleProfile())
    return path


def _pair(path: Path) -> tuple[RouteBelief, DenseGPBelief, DenseGP]:
    lg = small_lg()
    pot = elevation_potential_wh(lg.network, VehicleProfile())
    model, header = load_model(path, lg, serve=True)
    gp = DenseGP.from_file(path, lg, read_header(path))
    return RouteBelief(model, pot), DenseGPBelief(gp, pot), gp


def _close(a: np.ndarray, b: np.ndarray) -> None:
    scale = float(np.max(np.abs(b)))
    assert np.max(np.abs(np.asarray(a) - np.asarray(b))) <= REL * scale


def test_array_form_equals_the_loaded_models_posterior(saved: Path) -> None:
    ref, dense, gp = _pair(saved)
    assert gp.observations == 80 and len(gp.edges) == len(np.unique(gp.edges))
    _close(dense.mean, ref.mean)
    _close(dense.var, ref.var)
    _close(dense.noise_var, ref.noise_var)
    route = np.array([0, 2, 163, 19, 162, 1, 7, 33])
    _close(dense.cov(route), ref.cov(route))
    m1, v1 = dense.route_moments(route)
    m2, v2 = ref.route_moments(route)
    assert m1 == pytest.approx(m2, rel=REL) and v1 == pytest.approx(v2, rel=REL)
    assert dense.joint and ref.joint


@pytest.mark.slow
def test_online_observations_equal_the_models_update(saved: Path) -> None:
    lg = small_lg()
    model, _ = load_model(saved, lg, serve=True)
    _, _, gp = _pair(saved)
    rng = np.random.default_rng(4)
    e = rng.integers(0, lg.n_nodes, 30)
    y = model.posterior().mean[e] + rng.normal(0, 3.0, 30)
    model.update(e, y)
    pot = elevation_potential_wh(lg.network, VehicleProfile())
    ref, dense = RouteBelief(model, pot), DenseGPBelief(gp.updated(e, y), pot)
    _close(dense.mean, ref.mean)
    _close(dense.var, ref.var)
    assert gp.updated(e, y).observations == 110 and gp.observations == 80  # the old version is unchanged


def test_the_kernel_comes_back_from_the_compute_cache(saved: Path) -> None:
    lg = small_lg()
    first = DenseGP.from_file(saved, lg, read_header(saved)).kernel
    files = list((Path(str(saved.parent / "cache")) / "serve-kernel").glob("*.npy"))
    assert len(files) == 1
    again = DenseGP.from_file(saved, lg, read_header(saved)).kernel
    assert np.array_equal(first, again)


def test_the_trip_effect_enters_the_array_forms_route_variance(saved: Path) -> None:
    """A model learned from logs carries a trip-level effect (``tau^2``); the array form adds it as RouteBelief does
    (the merged service once raised AttributeError on every exact-GP route with it)."""
    lg = small_lg()
    pot = elevation_potential_wh(lg.network, VehicleProfile())
    model, _ = load_model(saved, lg, serve=True)
    gp = DenseGP.from_file(saved, lg, read_header(saved))
    ref, dense = RouteBelief(model, pot, 0.04), DenseGPBelief(gp, pot, None, 0.04)
    route = np.array([0, 2, 163, 19, 162, 1, 7, 33])
    m1, v1 = dense.route_moments(route)
    m2, v2 = ref.route_moments(route)
    assert m1 == pytest.approx(m2, rel=REL) and v1 == pytest.approx(v2, rel=REL)
    # tau^2 (sum of the route's means)^2 on top of the noise: the closed form of the effect
    _, v0 = DenseGPBelief(gp, pot).route_moments(route)
    assert v1 - v0 == pytest.approx(0.04 * float(np.maximum(dense.mean[route], 0).sum()) ** 2, rel=1e-9)
