"""Learned edge models saved and served: a documented, versioned file tied to its network by a content hash.

File format (``FORMAT = "evroute-model"``, ``FORMAT_VERSION = 2``; version 1 files are read too): one NumPy
``.npz`` archive (no pickles; read with ``np.load(path, allow_pickle=False)``) holding

* ``header``: a 0-d string array, a JSON object::

      {"format": "evroute-model", "format_version": 2, "kind": "bi" | "gp-exact",
       "network": {"name": ..., "hash": <sha256 of the line graph, :func:`network_hash`>, "n_edges": E},
       "vehicle": {<the vehicle profile fields>}, "hyperparameters": {...}, "observations": N,
       "evroute_version": ..., "meta": {<free-form provenance: config, seed, rounds>}}

* the sufficient statistics of the posterior, all ``float64`` or ``int64`` arrays in Wh units:

  ``kind = "bi"`` (:class:`~evroute.models.bi.BayesianEdgeModel`): ``prior_mean_wh`` ``(E,)``, ``prior_var``
  ``(E,)`` Wh^2, ``noise_var`` ``(E,)`` Wh^2, ``count`` ``(E,)`` observations per edge, ``total`` ``(E,)`` their sum
  (Wh), ``total_sq`` ``(E,)`` their sum of squares (Wh^2; absent in older files).  The posterior is the closed
  form of that module, so a loaded model's posterior equals the saved one's.

  ``kind = "gp-exact"`` (:class:`~evroute.models.gp_exact.ExactGPEdgeModel`): ``prior_mean_wh`` ``(E,)``,
  ``edges`` ``(U,)`` the distinct observed edges in first-visit order, ``counts`` ``(U,)``, ``sum_y`` ``(U,)`` (Wh),
  ``sum_y2`` ``(U,)`` (Wh^2), ``lengthscale_f`` and ``lengthscale_f2`` ``(d,)``; the header's hyperparameters hold
  ``prior_var`` (``sigma0^2``, Wh^2), ``noise_var`` (Wh^2), ``outputscale_prod``, ``outputscale_add`` (relative to
  ``sigma0^2``), ``graph_nu``, ``graph_kappa`` and the model ``config``.  The exact posterior depends on the data
  only through ``(edges, counts, sum_y)``, so it is rebuilt exactly (the kernel comes from the network).

  ``kind = "linear"`` (:class:`~evroute.models.linear_obs.LinearObsEdgeModel`, learned from linear readings of trip
  logs): the prior of its base model (the header's ``hyperparameters["base"]`` is ``"bi"`` or ``"gp-exact"``; that
  kind's arrays and hyperparameters above, with no observation; optionally ``lin_basis`` ``(E, p)`` and
  ``lin_basis_sd`` ``(p,)``, shared mean corrections) plus the sufficient statistics of the readings: ``lin_row``,
  ``lin_col``, ``lin_val`` (the sparse information matrix ``Lambda`` in COO form, Wh^-2), ``lin_h`` ``(E,)`` (Wh^-1),
  ``lin_readings`` (a count) and ``lin_yry_logdet`` (``sum y^T R^-1 y`` and ``sum log det R``, for the marginal
  likelihood); the header's ``hyperparameters["noise_scale"]`` (the readings' learned noise scale, 1 if absent) and
  ``hyperparameters["prior_scale"]`` (the learned factor of the prior covariance, 1 if absent),
  ``hyperparameters["trip_effect_fit"]`` and ``["trip_tau"]`` (the trip effect in the fit, :mod:`evroute.models.
  linear_obs_trip`; absent: off, 0) and, optionally, ``trip_ptr``, ``trip_edge``, ``trip_w``, ``trip_yr`` (per learned
  trace, what its trip-level effect is estimated from: :class:`~evroute.models.trip_effect.TripSums`) and, since
  version 2, the traces' readings (``trip_read_ptr``, ``trip_read``, ``trip_a_ptr``, ``trip_a_rc``, ``trip_a_val``:
  what the exact out-of-fold residuals take out of the posterior, :meth:`TripSums.arrays`).  The header's
  ``meta.trip_effect`` holds the route intervals' noise ``evroute learn`` fitted: since version 2 the posterior of
  ``(k, tau^2)`` from out-of-fold residuals as a mixture (``mixture``: ``k``, ``tau2``, ``weight`` lists;
  :meth:`~evroute.models.predictive_noise.PredictiveNoise.to_dict`), in version 1 files a point fitted in-sample. The
  posterior is the closed form of that module.

Other models (the sparse variational GP ``gp``, ``gp-tv``, ``kr``) are refused with one line: their posterior
depends on variational or kernel-regression state this format does not hold.

A model saved for another network (different hash), in another format or a newer version is refused by
:func:`load_model` with one line (:class:`~evroute.errors.DataError`).
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from evroute.energy import PRIORS, VehicleProfile, edge_prior
from evroute.errors import DataError, ParameterError
from evroute.io import atomic_write_bytes, dumps_strict
from evroute.linegraph import LineGraph
from evroute.models.base import EdgeModel
from evroute.models.state import base_state, prior_state  # below linear_obs too (no import circle)

FORMAT = "evroute-model"
FORMAT_VERSION = 2
#: format versions :func:`load_model` reads: 1 (before the trip readings and the out-of-fold mixture; its route
#: intervals rest on the in-sample noise fit, :func:`evroute.driver.query.interval_note`) and 2
READ_VERSIONS = (1, 2)
KINDS = ("bi", "gp-exact", "linear")


def network_hash(linegraph: LineGraph) -> str:
    """SHA-256 of what a model's edge indices mean: the line graph's edge ids, lengths, speed limits, elevations
    and legal turns (float64 / int64 bytes)."""
    net = linegraph.network
    h = hashlib.sha256()
    h.update("\n".join(net.edge_ids.tolist()).encode())
    for arr in (net.length_m, net.speed_mps, net.z_from_m, net.z_to_m):
        h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(linegraph.turns, dtype=np.int64).tobytes())
    return h.hexdigest()


def model_kind(model: EdgeModel) -> str:
    """``"bi"`` or ``"gp-exact"``; :class:`ParameterError` for a model this format cannot hold."""
    from evroute.models.bi import BayesianEdgeModel
    from evroute.models.gp_exact import ExactGPEdgeModel
    from evroute.models.linear_obs import LinearObsEdgeModel

    if isinstance(model, LinearObsEdgeModel):
        return "linear"
    if isinstance(model, BayesianEdgeModel):
        return "bi"
    if isinstance(model, ExactGPEdgeModel):
        return "gp-exact"
    raise ParameterError(
        f"saving a {type(model).__name__} is not supported (supported models: {', '.join(KINDS)}; the sparse "
        "variational GP and kernel regression keep state the model file does not hold)"
    )


def _state(model: EdgeModel) -> tuple[str, dict[str, Any], dict[str, np.ndarray], int]:
    """``(kind, hyperparameters, arrays, number of observations)`` of ``model`` (module doc)."""
    kind = model_kind(model)
    if kind == "linear":
        lin: Any = model
        if lin.base_state is None:
            raise ParameterError("this linear-reading model was not made by linear_model_from: no prior to save")
        base_kind, hyper, base_arrays = lin.base_state
        extra = {"lin_basis": lin.basis[0], "lin_basis_sd": lin.basis[1]} if lin.basis is not None else {}
        trips = lin.trips.arrays() if len(lin.trips) else {}
        out = {**base_arrays, **extra, **lin.stats.arrays(), **trips}
        hp = {**hyper, "base": base_kind, "noise_scale": lin.noise_scale, "prior_scale": lin.prior_scale}
        if lin.noise_exponent:
            hp["noise_exponent"] = lin.noise_exponent
        if lin.trip_effect_fit or lin.trip_tau:  # the trip effect in the fit (linear_obs_trip); absent: off
            hp["trip_effect_fit"], hp["trip_tau"] = bool(lin.trip_effect_fit), float(lin.trip_tau)
        return kind, hp, out, int(lin.stats.readings)
    return (kind, *base_state(model, kind))


def save_model(
    path: str | Path,
    model: EdgeModel,
    linegraph: LineGraph,
    *,
    vehicle: VehicleProfile | None = None,
    meta: dict[str, Any] | None = None,
) -> Path:
    """Write ``model`` (learned on ``linegraph`` for ``vehicle``) to ``path`` (``.npz``, atomically).

    Raises:
        ParameterError: the model kind cannot be saved (see :func:`model_kind`).
    """
    kind, hyper, arrays, n_obs = _state(model)
    if len(arrays["prior_mean_wh"]) != linegraph.n_nodes:
        raise ParameterError(f"the model has {len(arrays['prior_mean_wh'])} edges, the network {linegraph.n_nodes}")
    from evroute.version import __version__

    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "network": {
            "name": linegraph.network.name,
            "hash": network_hash(linegraph),
            "n_edges": int(linegraph.n_nodes),
        },
        "vehicle": (vehicle or VehicleProfile()).to_dict(),
        "hyperparameters": hyper,
        "observations": n_obs,
        "evroute_version": __version__,
        "meta": meta or {},
    }
    buf = io.BytesIO()
    # dict[str, Any]: mypy would match a **dict[str, ndarray] against savez_compressed's allow_pickle: bool
    payload: dict[str, Any] = {"header": np.array(dumps_strict(header, sort_keys=True)), **arrays}
    np.savez_compressed(buf, **payload)
    return atomic_write_bytes(path, buf.getvalue())


#: the most bytes a model file may unpack to (all arrays together): far above any model of a road network (a
#: Luxembourg gp-exact model is a few MB), so a crafted archive cannot exhaust memory
MAX_MODEL_BYTES = 2 << 30


def _open(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(header, arrays)`` of a model file, checked against the schema of :mod:`evroute.models.store_schema`
    (everything but the network binding); any problem is one :class:`DataError` line naming the file."""
    import zipfile
    import zlib

    from evroute.io import parse_json
    from evroute.models.store_schema import check_content

    p = Path(path)
    if not p.is_file():
        raise DataError(f"model file {str(path)!r} not found")
    try:
        with zipfile.ZipFile(p) as zf:
            unpacked = sum(i.file_size for i in zf.infolist())
        if unpacked > MAX_MODEL_BYTES:
            raise DataError(f"{path}: unpacks to {unpacked} bytes, more than the limit {MAX_MODEL_BYTES}")
        with np.load(p, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError) as exc:
        raise DataError(f"{path} is not an evroute model file ({' '.join(str(exc).split())[:80]})") from None
    raw = arrays.pop("header", None)
    if raw is None or raw.dtype.kind != "U" or raw.ndim != 0:
        raise DataError(f"{path} is not an evroute model file (no JSON header string)")
    header = parse_json(str(raw), f"{path}: header")
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        what = header.get("format") if isinstance(header, dict) else type(header).__name__
        raise DataError(f"{path} is not an evroute model file (format {what!r})")
    version = header.get("format_version")
    if version not in READ_VERSIONS or isinstance(version, bool):
        raise DataError(
            f"{path} has model format version {version}; this evroute reads versions "
            + ", ".join(map(str, READ_VERSIONS))
        )
    if header.get("kind") not in KINDS:
        raise DataError(f"{path} holds a model of unknown kind {header.get('kind')!r}")
    return header, check_content(path, header, arrays)


def read_header(path: str | Path) -> dict[str, Any]:
    """The JSON header of a model file (the whole file checked against the schema, all but the network binding)."""
    return _open(path)[0]


def load_model(
    path: str | Path, linegraph: LineGraph, *, serve: bool = False, observations: bool = True
) -> tuple[EdgeModel, dict[str, Any]]:
    """``(model, header)`` from a model file, for ``linegraph`` (its :func:`network_hash` must match).

    Args:
        serve: for the exact GP, use the low-rank posterior with local graph solves (no ``E x E`` matrix, fast to
            build; entry-wise kernel error below ``graph_tol``) instead of the saved method.
        observations: ``False``: the exact GP with its saved prior and hyperparameters but without the saved
            observations (its kernel; :mod:`evroute.service.gpdense` serves the statistics in array form).

    Raises:
        DataError: not a model file, another format version, a model of another network, or any key, dtype, shape
            or range that does not match the schema (:mod:`evroute.models.store_schema`).
    """
    from evroute.models.store_schema import check_binding

    header, a = _open(path)
    check_binding(path, header, a, linegraph, network_hash(linegraph))
    try:
        if header["kind"] == "bi":
            from evroute.models.bi import BayesianEdgeModel

            bi = BayesianEdgeModel(a["prior_mean_wh"], a["prior_var"], a["noise_var"])
            bi.count = a["count"].astype(np.float64)
            bi.total = a["total"].astype(np.float64)
            if "total_sq" in a:  # files before the empirical-Bayes statistics lack it (then fit_variances cannot run)
                bi.total_sq = a["total_sq"].astype(np.float64)
            return bi, header
        if header["kind"] == "linear":
            return _load_linear(a, header["hyperparameters"], linegraph), header
        if not observations:
            a = {**a, "edges": a["edges"][:0], "counts": a["counts"][:0]}
        return _load_exact(a, header["hyperparameters"], linegraph, serve), header
    except (KeyError, ParameterError) as exc:  # after the schema check: a combination no model accepts
        raise DataError(f"model file {path}: {' '.join(str(exc).split())}") from None


def _load_exact(a: dict[str, np.ndarray], hp: dict[str, Any], linegraph: LineGraph, serve: bool) -> EdgeModel:
    """The exact GP of the saved statistics: constructor, saved hyperparameters, then one batch of ``n_u`` copies of
    each edge's mean with an exact refresh from the statistics (the posterior only depends on ``n_u`` and the
    means); the saved config is restored afterwards, so learning can continue as before."""
    from evroute.models.gp_exact import ExactGPConfig, ExactGPEdgeModel, Hyper

    saved = ExactGPConfig(**hp["config"])
    load_cfg = replace(saved, learn_hyper=False, refresh_every=1)
    if serve:
        load_cfg = replace(load_cfg, method="lowrank", graph_solver="local", ts_joint=False)
    model = ExactGPEdgeModel(
        a["prior_mean_wh"],
        float(hp["prior_var"]),
        float(hp["noise_var"]),
        linegraph.laplacian(),
        linegraph.contexts(),
        graph_nu=float(hp["graph_nu"]),
        graph_kappa=float(hp["graph_kappa"]),
        config=load_cfg,
    )
    model.hyper = Hyper(
        float(hp["outputscale_prod"]),
        float(hp["outputscale_add"]),
        np.asarray(a["lengthscale_f"], dtype=np.float64),
        np.asarray(a["lengthscale_f2"], dtype=np.float64),
        float(hp["noise_var"]) / float(hp["prior_var"]),
    )
    e, n = a["edges"].astype(np.int64), a["counts"].astype(np.int64)
    if len(e):
        model.update(np.repeat(e, n), np.repeat(a["sum_y"] / n, n))
        s2 = float(hp["prior_var"])
        model.sum_y2[e] = a["sum_y2"] / s2  # the scatter (only hyperparameter refits use it)
    model.config = saved if not serve else replace(saved, method="lowrank", graph_solver="local", ts_joint=False)
    return model


def _load_linear(a: dict[str, np.ndarray], hp: dict[str, Any], linegraph: LineGraph) -> EdgeModel:
    """The base prior (bi or gp-exact, no observation) made a linear-reading model, with the saved statistics."""
    from evroute.models.bi import BayesianEdgeModel
    from evroute.models.linear_obs import LinearStatistics
    from evroute.models.linear_obs_build import linear_model_from

    if hp.get("base") == "bi":
        base: EdgeModel = BayesianEdgeModel(a["prior_mean_wh"], a["prior_var"], a["noise_var"])
    elif hp.get("base") == "gp-exact":
        base = _load_exact(a, hp, linegraph, False)
    else:
        raise DataError(f"linear model with unknown base {hp.get('base')!r}")
    from evroute.models.trip_effect import TripSums

    model = linear_model_from(base, basis=a.get("lin_basis"), basis_sd=a.get("lin_basis_sd"))
    model.stats = LinearStatistics.from_arrays(model.n_edges, a)
    model.noise_scale = float(hp.get("noise_scale", 1.0))  # files before the noise was learned: 1
    model.prior_scale = float(hp.get("prior_scale", 1.0))  # files before the prior's scale was learned: 1
    model.noise_exponent = float(hp.get("noise_exponent", 0.0))  # files before per-edge traversal noise: all alike
    model.trips = TripSums.from_arrays(a)
    model.trip_effect_fit = bool(hp.get("trip_effect_fit", False))  # files before the option: off
    model.trip_tau = float(hp.get("trip_tau", 0.0))
    return model


def prior_model(
    kind: str,
    linegraph: LineGraph,
    vehicle: VehicleProfile | None = None,
    *,
    outputscale_frac: float = 0.25,
    noise_frac: float = 0.1,
    prior: str = PRIORS[0],
    mean_wh: np.ndarray | None = None,
    **gp_params: Any,
) -> EdgeModel:
    """A model from the physics prior alone (no observation): mean the ``prior`` model's edge energies (``E_det``,
    :func:`evroute.energy.edge_prior`: the speed-profile model by default, ``"eq8"`` the paper's), prior variance
    ``(outputscale_frac sigma_det)^2`` and noise variance ``(noise_frac sigma_det)^2`` with ``sigma_det^2`` the
    variance of ``E_det`` over the edges (the paper's, as every environment hands its models).

    Args:
        kind: ``"bi"`` (independent edges) or ``"gp-exact"`` (the paper's kernel: graph Matérn ``nu = 2``,
            ``kappa = 1``, context lengthscale 1, product weight 0.5, unless ``gp_params`` say otherwise).
        mean_wh: ``(E,)`` prior mean instead of ``E_det`` (e.g. reduced energies,
            :func:`evroute.traces.mechanical.reduced_prior_wh`); the variances still scale with ``sigma_det``.
    """
    if kind not in KINDS:
        raise ParameterError(f"unknown model kind {kind!r} (use {' or '.join(KINDS)})")
    e_det = edge_prior(linegraph.network, vehicle, prior).energy_wh
    sigma_det2 = float(e_det.var())
    if not sigma_det2 > 0:
        raise DataError("every edge has the same physics energy: the prior variance would be 0")
    prior_var, noise_var = outputscale_frac**2 * sigma_det2, noise_frac**2 * sigma_det2
    if mean_wh is not None:
        mean = np.asarray(mean_wh, dtype=np.float64)
        if mean.shape != e_det.shape or not np.isfinite(mean).all():
            raise ParameterError(f"prior mean of shape {mean.shape} (finite) needed for {len(e_det)} edges")
        e_det = mean
    if kind == "bi":
        from evroute.models.bi import BayesianEdgeModel

        return BayesianEdgeModel(e_det, prior_var, noise_var)
    from evroute.models.gp_exact import ExactGPConfig, ExactGPEdgeModel

    init: dict[str, Any] = {  # the initial kernel values (floats; the model's other keywords stay at their defaults)
        k: float(gp_params.pop(k))
        for k in ("graph_nu", "graph_kappa", "lengthscale", "product_weight")
        if k in gp_params
    }
    cfg = ExactGPConfig(**gp_params)
    return ExactGPEdgeModel(
        e_det, prior_var, noise_var, linegraph.laplacian(), linegraph.contexts(), config=cfg, **init
    )


__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "KINDS",
    "READ_VERSIONS",
    "load_model",
    "model_kind",
    "network_hash",
    "prior_model",
    "prior_state",
    "read_header",
    "save_model",
]
