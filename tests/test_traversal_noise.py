"""Per-edge traversal noise (:func:`evroute.models.linear_obs.traversal_noise_weights`, the model's
``noise_exponent``): the weights' closed form, the readings' noise with a per-edge variance, the model file keeping
the exponent, and a synthetic recovery where one noise for every edge learns a long edge driven twice far from its
mean and the per-edge noise does not (issue 35: Luxembourg's error rose from N = 100 to 1000 trips)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_trip_ends import CAP, LENGTH, line_trip

from evroute.errors import ParameterError
from evroute.linegraph import build_line_graph
from evroute.models.linear_obs import (
    NOISE_FLOOR_FRAC,
    DiagonalKernel,
    LinearObsEdgeModel,
    traversal_noise_weights,
)
from evroute.models.linear_obs_build import linear_model_from
from evroute.models.store import load_model, prior_model, read_header, save_model
from evroute.network.registry import load_network
from evroute.traces.observations import trace_readings


def test_weights_closed_form() -> None:
    """Mean 1 over the edges; ``(m_i / m_j)^p`` between edges above the floor; the floor for tiny energies; all ones
    for ``p = 0`` or an all-zero prior; a negative or non-finite exponent refused."""
    m = np.array([2.0, 4.0, 8.0, -8.0, 0.0, 20.0])
    for p in (0.5, 1.0, 2.0):
        w = traversal_noise_weights(m, p)
        assert w.mean() == pytest.approx(1.0, rel=1e-12)
        assert w[2] / w[1] == pytest.approx(2.0**p, rel=1e-12)  # exact ratio of powers
        assert w[3] == w[2]  # |m|
        floor = NOISE_FLOOR_FRAC * np.abs(m).mean()
        assert w[4] / w[2] == pytest.approx((floor / 8.0) ** p, rel=1e-12)  # 0 Wh counts as the floor
    np.testing.assert_array_equal(traversal_noise_weights(m, 0.0), np.ones(6))
    np.testing.assert_array_equal(traversal_noise_weights(np.zeros(4), 2.0), np.ones(4))
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ParameterError):
            traversal_noise_weights(m, bad)


def test_readings_take_a_per_edge_noise() -> None:
    """A window's driving noise is ``sum_e a_we s_e^2``: an array of one value gives the scalar's readings bit for
    bit, and a per-edge array adds ``a (s^2 - s0^2)`` to the diagonal only (the shared boundaries unchanged)."""
    trace, matched = line_trip(0, 5, 40.0, 100.0)
    s0 = 2.0
    one = trace_readings(trace, matched, LENGTH, CAP, s0)
    same = trace_readings(trace, matched, LENGTH, CAP, np.full(len(LENGTH), s0))
    assert one is not None and same is not None
    np.testing.assert_array_equal(one.noise_band, same.noise_band)
    nv = np.array([1.0, 3.0, 0.5, 7.0, 2.0, 4.0])
    per = trace_readings(trace, matched, LENGTH, CAP, nv)
    assert per is not None
    np.testing.assert_array_equal(per.a, one.a)
    # up to the 1e-9 x max(variance) jitter each diagonal carries (7e-9 vs 2e-9 Wh^2 here)
    np.testing.assert_allclose(per.noise_band[0] - one.noise_band[0], one.a @ (nv[one.edges] - s0), atol=1e-8)
    np.testing.assert_array_equal(per.noise_band[1], one.noise_band[1])
    with pytest.raises(ParameterError):
        trace_readings(trace, matched, LENGTH, CAP, np.ones(3))  # not one per edge
    with pytest.raises(ParameterError):
        trace_readings(trace, matched, LENGTH, CAP, -nv)


def _fit(m: np.ndarray, f: np.ndarray, counts: np.ndarray, noise_sd: np.ndarray, exponent: float, rng) -> tuple:
    """``(posterior mean, phi)`` of a BI model (prior ``N(m, 25)``, nominal noise 4 Wh^2, ``noise_exponent``) fitted
    by ML-II to ``counts[e]`` whole traversals of each edge, drawn ``N(f_e, noise_sd_e^2)``."""
    model = LinearObsEdgeModel(m, DiagonalKernel(np.full(len(m), 25.0)), 1.0, 4.0, "bi")
    model.noise_exponent = exponent
    e = np.repeat(np.arange(len(m)), counts)
    model.update(e, f[e] + noise_sd[e] * rng.standard_normal(len(e)))
    phi = model.fit_noise_scale()
    return model.posterior().mean, phi


def test_per_edge_noise_recovers_a_long_edge_driven_twice() -> None:
    """40 short edges (prior 5 Wh) driven 30 times each and one long edge (prior 100 Wh) driven twice; true means
    drawn from the prior ``N(m, 25 Wh^2)``, each traversal's noise s.d. proportional to the edge's prior energy (the
    nominal 4 Wh^2 times the weights of exponent 2: 0.6 Wh on a short edge, 12.2 Wh on the long one).  Exponent 2 is
    the generative model: ML-II finds the noise scale (1) within 10 % (1,202 readings: s.e. of a variance 4 %) and
    the long edge's posterior mean has the Bayes error ``1 / (1/25 + 2/149.5) = 18.8 Wh^2``; one noise for every edge
    (exponent 0) is fitted to the short edges, believes the long edge's two readings to within ~0.7 Wh and keeps
    their mean, error ~ ``149.5 / 2 = 75 Wh^2``.  Over 200 draws (s.e. of a mean square ~10 %) the per-edge noise's
    error is within 25 % of the Bayes error and below half the single noise's."""
    rng = np.random.default_rng(35)
    m = np.concatenate([np.full(40, 5.0), [100.0]])
    counts = np.concatenate([np.full(40, 30), [2]])
    noise_sd = np.sqrt(4.0 * traversal_noise_weights(m, 2.0))
    assert noise_sd[-1] ** 2 == pytest.approx(149.5, rel=1e-2)
    err2, err0, phis = [], [], []
    for _ in range(200):
        f = m + 5.0 * rng.standard_normal(len(m))
        mu2, phi2 = _fit(m, f, counts, noise_sd, 2.0, rng)
        mu0, _ = _fit(m, f, counts, noise_sd, 0.0, rng)
        err2.append(mu2[-1] - f[-1])
        err0.append(mu0[-1] - f[-1])
        phis.append(phi2)
    mse2, mse0 = float(np.mean(np.square(err2))), float(np.mean(np.square(err0)))
    bayes = 1.0 / (1.0 / 25.0 + 2.0 / noise_sd[-1] ** 2)
    assert np.median(phis) == pytest.approx(1.0, rel=0.1)
    assert mse2 == pytest.approx(bayes, rel=0.25)
    assert mse2 < 0.5 * mse0


def test_posterior_noise_and_model_file_keep_the_exponent(tmp_path) -> None:
    """The posterior's per-edge noise is ``noise_var phi`` times the weights; a model file keeps ``noise_exponent``
    (files without it load as 0: every edge alike)."""
    lg = build_line_graph(load_network("synthetic:60:3"))
    model = linear_model_from(prior_model("bi", lg))
    model.noise_exponent, model.noise_scale = 2.0, 0.5
    post = model.posterior()
    want = model.noise_var * 0.5 * traversal_noise_weights(model.prior_mean, 2.0)
    assert post.noise_var is not None
    np.testing.assert_allclose(np.asarray(post.noise_var, dtype=float), want, rtol=1e-12)
    path = save_model(tmp_path / "m.npz", model, lg)
    assert read_header(path)["hyperparameters"]["noise_exponent"] == 2.0
    back, _ = load_model(path, lg)
    assert back.noise_exponent == 2.0  # type: ignore[attr-defined]
    plain = linear_model_from(prior_model("bi", lg))
    back0, _ = load_model(save_model(tmp_path / "p.npz", plain, lg), lg)
    assert back0.noise_exponent == 0.0  # type: ignore[attr-defined]


def test_learn_rejects_a_bad_noise_exponent(tmp_path) -> None:
    """``evroute learn --noise-exponent -1``: one line ``evroute: error: ...``, exit 2, nothing written."""
    root = Path(__file__).resolve().parent.parent / "data"
    logs = sorted(str(p) for p in (root / "trip-log-sumo").glob("trip_*.csv"))[:1]
    out = tmp_path / "m.npz"
    cmd = ["learn", *logs, "--network", str(root / "sumo-tiny" / "grid.net.xml"), "--model-file", str(out)]
    res = subprocess.run(
        [sys.executable, "-m", "evroute", *cmd, "--noise-exponent", "-1"], capture_output=True, text=True
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "--noise-exponent" in res.stderr
    assert res.stderr.startswith("evroute: error:") and not out.exists()
