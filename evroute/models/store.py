"""Learned edge models saved and served: a documented, versioned file tied to its network by a content hash.

File format (``FORMAT = "evroute-model"``, ``FORMAT_VERSION = 1``): one NumPy ``.npz`` archive (no pickles; read
with ``np.load(path, allow_pickle=False)``) holding

* ``header``: a 0-d string array, a JSON object::

      {"format": "evroute-model", "format_version": 1, "kind": "bi" | "gp-exact",
       "network": {"name": ..., "hash": <sha256 of the line graph, :func:`network_hash`>, "n_edges": E},
       "vehicle": {<the vehicle profile fields>}, "hyperparameters": {...}, "observations": N,
       "evroute_version": ..., "meta": {<free-form provenance: config, seed, rounds>}}

* the sufficient statistics of the posterior, all ``float64`` or ``int64`` arrays in Wh units:

  ``kind = "bi"`` (:class:`~evroute.models.bi.BayesianEdgeModel`): ``prior_mean_wh`` ``(E,)``, ``prior_var``
  ``(E,)`` Wh^2, ``noise_var`` ``(E,)`` Wh^2, ``count`` ``(E,)`` observations per edge, ``total`` ``(E,)`` their sum
  (Wh).  The posterior is the closed form of that module, so a loaded model's posterior equals the saved one's.

  ``kind = "gp-exact"`` (:class:`~evroute.models.gp_exact.ExactGPEdgeModel`): ``prior_mean_wh`` ``(E,)``,
  ``edges`` ``(U,)`` the distinct observed edges in first-visit order, ``counts`` ``(U,)``, ``sum_y`` ``(U,)`` (Wh),
  ``sum_y2`` ``(U,)`` (Wh^2), ``lengthscale_f`` and ``lengthscale_f2`` ``(d,)``; the header's hyperparameters hold
  ``prior_var`` (``sigma0^2``, Wh^2), ``noise_var`` (Wh^2), ``outputscale_prod``, ``outputscale_add`` (relative to
  ``sigma0^2``), ``graph_nu``, ``graph_kappa`` and the model ``config``.  The exact posterior depends on the data
  only through ``(edges, counts, sum_y)``, so it is rebuilt exactly (the kernel comes from the network).

  ``kind = "linear"`` (:class:`~evroute.models.linear_obs.LinearObsEdgeModel`, learned from linear readings of
  trip logs): the prior of its base model (the header's ``hyperparameters["base"]`` is ``"bi"`` or ``"gp-exact"``;
  that kind's arrays and hyperparameters above, with no observation; optionally ``lin_basis`` ``(E, p)`` and
  ``lin_basis_sd`` ``(p,)``, shared mean corrections) plus the sufficient statistics of the readings: ``lin_row``,
  ``lin_col``, ``lin_val`` (the sparse information matrix ``Lambda`` in COO form, Wh^-2), ``lin_h`` ``(E,)``
  (Wh^-1), ``lin_readings`` (a count) and ``lin_yry_logdet`` (``sum y^T R^-1 y`` and ``sum log det R``, for the
  marginal likelihood).  The posterior is the closed form of that module.

Other models (the sparse variational GP ``gp``, ``gp-tv``, ``kr``) are refused with one line: their posterior
depends on variational or kernel-regression state this format does not hold.

A model saved for another network (different hash), in another format or a newer version is refused by
:func:`load_model` with one line (:class:`~evroute.errors.DataError`).
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from evroute.energy import VehicleProfile, network_energy_wh
from evroute.errors import DataError, ParameterError
from evroute.io import atomic_write_bytes
from evroute.linegraph import LineGraph
from evroute.models.base import EdgeModel

FORMAT = "evroute-model"
FORMAT_VERSION = 1
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
        out = {**base_arrays, **extra, **lin.stats.arrays()}
        return kind, {**hyper, "base": base_kind}, out, int(lin.stats.readings)
    if kind == "bi":
        arrays: dict[str, np.ndarray] = {
            k: np.asarray(getattr(model, k), dtype=np.float64) for k in ("prior_var", "noise_var", "total")
        }
        arrays["prior_mean_wh"] = np.asarray(model.prior_mean, dtype=np.float64)  # type: ignore[attr-defined]
        arrays["count"] = np.asarray(model.count, dtype=np.int64)  # type: ignore[attr-defined]
        return kind, {}, arrays, int(arrays["count"].sum())
    m: Any = model
    s = float(m.scale)
    e = np.asarray(m.order, dtype=np.int64)
    arrays = {
        "prior_mean_wh": np.asarray(m.prior_mean_wh, dtype=np.float64),
        "edges": e,
        "counts": np.asarray(m.counts[e], dtype=np.int64),
        "sum_y": np.asarray(m.sum_y[e], dtype=np.float64) * s,
        "sum_y2": np.asarray(m.sum_y2[e], dtype=np.float64) * s * s,
        "lengthscale_f": np.asarray(m.hyper.ls1, dtype=np.float64),
        "lengthscale_f2": np.asarray(m.hyper.ls2, dtype=np.float64),
    }
    hyper = {
        "prior_var": s * s,
        "noise_var": float(m.hyper.noise) * s * s,
        "outputscale_prod": float(m.hyper.s1),
        "outputscale_add": float(m.hyper.s2),
        "graph_nu": float(m.graph_nu),
        "graph_kappa": float(m.graph_kappa),
        "config": asdict(m.config),
    }
    return kind, hyper, arrays, int(arrays["counts"].sum())


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
    payload: dict[str, Any] = {"header": np.array(json.dumps(header, sort_keys=True)), **arrays}
    np.savez_compressed(buf, **payload)
    return atomic_write_bytes(path, buf.getvalue())


def _open(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"model file {str(path)!r} not found")
    try:
        with np.load(p, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        header = json.loads(str(arrays.pop("header")))
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as exc:
        raise DataError(f"{path} is not an evroute model file ({' '.join(str(exc).split())[:80]})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise DataError(f"{path} is not an evroute model file (format {header.get('format')!r})")
    version = header.get("format_version")
    if version != FORMAT_VERSION:
        raise DataError(f"{path} has model format version {version}; this evroute reads version {FORMAT_VERSION}")
    if header.get("kind") not in KINDS:
        raise DataError(f"{path} holds a model of unknown kind {header.get('kind')!r}")
    return header, arrays


def read_header(path: str | Path) -> dict[str, Any]:
    """The JSON header of a model file (checked: format, version, kind)."""
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
        DataError: not a model file, another format version, or a model of another network.
    """
    header, a = _open(path)
    net = header.get("network", {})
    if net.get("hash") != network_hash(linegraph):
        raise DataError(
            f"model {path} was learned on network {net.get('name')!r} ({net.get('n_edges')} edges), not on "
            f"{linegraph.network.name!r} ({linegraph.n_nodes} edges): the network content differs"
        )
    try:
        if header["kind"] == "bi":
            from evroute.models.bi import BayesianEdgeModel

            bi = BayesianEdgeModel(a["prior_mean_wh"], a["prior_var"], a["noise_var"])
            bi.count = a["count"].astype(np.float64)
            bi.total = a["total"].astype(np.float64)
            return bi, header
        if header["kind"] == "linear":
            return _load_linear(a, header["hyperparameters"], linegraph), header
        if not observations:
            a = {**a, "edges": a["edges"][:0], "counts": a["counts"][:0]}
        return _load_exact(a, header["hyperparameters"], linegraph, serve), header
    except KeyError as exc:
        raise DataError(f"model file {path} lacks {exc}") from None


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


def prior_state(model: EdgeModel) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    """``(kind, hyperparameters, arrays)`` of ``model``'s prior alone (its saved state with the observations removed):
    what a ``"linear"`` model file keeps of its base model."""
    kind, hyper, arrays, _ = _state(model)
    if kind == "bi":
        arrays = {**arrays, "count": np.zeros_like(arrays["count"]), "total": np.zeros_like(arrays["total"])}
    elif kind == "gp-exact":
        empty = {"edges": np.zeros(0, np.int64), "counts": np.zeros(0, np.int64)}
        arrays = {**arrays, **empty, "sum_y": np.zeros(0), "sum_y2": np.zeros(0)}
    else:
        raise ParameterError("a linear-reading model has no further base model")
    return kind, hyper, arrays


def _load_linear(a: dict[str, np.ndarray], hp: dict[str, Any], linegraph: LineGraph) -> EdgeModel:
    """The base prior (bi or gp-exact, no observation) made a linear-reading model, with the saved statistics."""
    from evroute.models.bi import BayesianEdgeModel
    from evroute.models.linear_obs import LinearStatistics, linear_model_from

    if hp.get("base") == "bi":
        base: EdgeModel = BayesianEdgeModel(a["prior_mean_wh"], a["prior_var"], a["noise_var"])
    elif hp.get("base") == "gp-exact":
        base = _load_exact(a, hp, linegraph, False)
    else:
        raise DataError(f"linear model with unknown base {hp.get('base')!r}")
    model = linear_model_from(base, basis=a.get("lin_basis"), basis_sd=a.get("lin_basis_sd"))
    model.stats = LinearStatistics.from_arrays(model.n_edges, a)
    return model


def prior_model(
    kind: str,
    linegraph: LineGraph,
    vehicle: VehicleProfile | None = None,
    *,
    outputscale_frac: float = 0.25,
    noise_frac: float = 0.1,
    **gp_params: Any,
) -> EdgeModel:
    """A model from the physics prior alone (no observation): mean Eq. 8 (``E_det``), prior variance
    ``(outputscale_frac sigma_det)^2`` and noise variance ``(noise_frac sigma_det)^2`` with ``sigma_det^2`` the
    variance of ``E_det`` over the edges (the paper's, as every environment hands its models).

    Args:
        kind: ``"bi"`` (independent edges) or ``"gp-exact"`` (the paper's kernel: graph Matérn ``nu = 2``,
            ``kappa = 1``, context lengthscale 1, product weight 0.5, unless ``gp_params`` say otherwise).
    """
    if kind not in KINDS:
        raise ParameterError(f"unknown model kind {kind!r} (use {' or '.join(KINDS)})")
    e_det = network_energy_wh(linegraph.network, vehicle)
    sigma_det2 = float(e_det.var())
    if not sigma_det2 > 0:
        raise DataError("every edge has the same physics energy: the prior variance would be 0")
    prior_var, noise_var = outputscale_frac**2 * sigma_det2, noise_frac**2 * sigma_det2
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
    "load_model",
    "model_kind",
    "network_hash",
    "prior_model",
    "prior_state",
    "read_header",
    "save_model",
]
