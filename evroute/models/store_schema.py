"""The schema a model file (:mod:`evroute.models.store`) is checked against on load: a file someone hands over is
untrusted input, so every key, dtype, shape, range and the network binding is validated before any array reaches
a model, and any mismatch is one :class:`~evroute.errors.DataError` line ``<file>: ...`` (never a traceback, never
a silently different posterior).

Two stages:

* :func:`check_content` (no network needed): the header is a JSON object with the documented fields of the right
  types (``format``, ``format_version``, ``kind``, ``network`` ``{name, hash, n_edges}``, ``vehicle`` (a valid
  :class:`~evroute.energy.VehicleProfile`), ``hyperparameters`` (per kind; the exact GP's ``config`` a valid
  :class:`~evroute.models.gp_exact.ExactGPConfig`), ``observations``, ``meta``), and every array of the kind is
  present, numeric (``float`` arrays: any real dtype; ``int`` arrays: an integer dtype), finite, of the shape the
  header's ``n_edges`` implies and in range: variances and lengthscales ``> 0``, counts integers ``>= 0`` (an edge
  with no observation has total 0), edge indices distinct and in ``0..E-1``;
* :func:`check_binding`: the header's network hash is the loading network's, and the arrays' edge dimension and
  context dimension are that network's (a file whose header was copied from another file is refused too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from evroute.errors import DataError, EvrouteError

#: ``name -> (kind, shape)`` of each kind's arrays; ``kind`` ``"f"`` real or ``"i"`` integer; a shape entry ``"E"``
#: is the network's edges, ``"U"`` / ``"d"`` / ``"p"`` / ``"n"`` sizes shared between arrays, ``1`` a scalar of
#: shape ``()`` or ``(1,)``
_BI = {
    "prior_mean_wh": ("f", ("E",)),
    "prior_var": ("f", ("E",)),
    "noise_var": ("f", ("E",)),
    "count": ("i", ("E",)),
    "total": ("f", ("E",)),
}
_EXACT = {
    "prior_mean_wh": ("f", ("E",)),
    "edges": ("i", ("U",)),
    "counts": ("i", ("U",)),
    "sum_y": ("f", ("U",)),
    "sum_y2": ("f", ("U",)),
    "lengthscale_f": ("f", ("d",)),
    "lengthscale_f2": ("f", ("d",)),
}
_LINEAR = {
    "lin_row": ("i", ("n",)),
    "lin_col": ("i", ("n",)),
    "lin_val": ("f", ("n",)),
    "lin_h": ("f", ("E",)),
    "lin_readings": ("i", ()),
    "lin_yry_logdet": ("f", (2,)),
}
_BASIS = {"lin_basis": ("f", ("E", "p")), "lin_basis_sd": ("f", ("p",))}
#: optional arrays, each group present whole or not at all: BI's per-edge sum of squares (empirical Bayes,
#: :meth:`~evroute.models.bi.BayesianEdgeModel.fit_variances`) and a linear model's per-trip sums (the trip-level
#: effect, :class:`~evroute.models.trip_effect.TripSums`: ``T + 1`` offsets into ``m`` (edge, weight) pairs and
#: ``(T, 2)`` sums)
_BI_SQ = {"total_sq": ("f", ("E",))}
_TRIPS = {
    "trip_ptr": ("i", ("T1",)),
    "trip_edge": ("i", ("m",)),
    "trip_w": ("f", ("m",)),
    "trip_yr": ("f", ("T", 2)),
}
#: the traces' readings kept for the exact out-of-fold residuals (format version 2, with :data:`_TRIPS`): per trace
#: ``T + 1`` offsets into ``M`` readings ``(y, R's diagonal, R's sub-diagonal)`` and into ``N`` non-zeros of ``A``
_TRIP_READ = {
    "trip_read_ptr": ("i", ("T1",)),
    "trip_read": ("f", ("M", 3)),
    "trip_a_ptr": ("i", ("T1",)),
    "trip_a_rc": ("i", ("N", 2)),
    "trip_a_val": ("f", ("N",)),
}
#: the exact GP's scalar hyperparameters in the header: name -> strictly positive (else >= 0)
_EXACT_HYPER = {
    "prior_var": True,
    "noise_var": True,
    "outputscale_prod": False,
    "outputscale_add": False,
    "graph_nu": True,
    "graph_kappa": True,
}
#: the largest model the loader accepts (edges): far above any road network (Luxembourg: ~50,000 edges), so a
#: header cannot ask for an absurd allocation
MAX_EDGES = 50_000_000


def _fail(path: str | Path, text: str) -> DataError:
    return DataError(f"{path}: {text}")


def _int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and bool(np.isfinite(value))


def _spec(header: dict[str, Any]) -> dict[str, tuple[str, tuple[Any, ...]]]:
    kind = header["kind"]
    if kind == "bi":
        return _BI
    if kind == "gp-exact":
        return _EXACT
    base = header["hyperparameters"].get("base")
    return {**(_BI if base == "bi" else _EXACT), **_LINEAR}


def _check_header(path: str | Path, header: dict[str, Any]) -> None:
    net = header.get("network")
    if not isinstance(net, dict):
        raise _fail(path, "header field 'network' must be an object {name, hash, n_edges}")
    if not (isinstance(net.get("hash"), str) and isinstance(net.get("name"), str)):
        raise _fail(path, "header field 'network' needs a string 'name' and 'hash'")
    if not (_int(net.get("n_edges")) and 1 <= net["n_edges"] <= MAX_EDGES):
        got = net.get("n_edges")
        raise _fail(path, f"header field 'network.n_edges' must be an integer in 1..{MAX_EDGES}, got {got!r}")
    for key in ("vehicle", "hyperparameters", "meta"):
        if not isinstance(header.get(key), dict):
            raise _fail(path, f"header field {key!r} must be a JSON object, got {type(header.get(key)).__name__}")
    obs = header.get("observations")
    if not (_int(obs) and obs >= 0):
        raise _fail(path, f"header field 'observations' must be an integer >= 0, got {obs!r}")
    logs = header["meta"].get("logs", {})
    if not (isinstance(logs, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in logs.items())):
        raise _fail(path, "header field 'meta.logs' must map log digests (strings) to file names (strings)")
    _check_trip_effect(path, header["meta"].get("trip_effect"))
    from evroute.energy import VehicleProfile
    from evroute.validation import call_checked, check_params

    try:
        check_params("vehicle field", header["vehicle"], [VehicleProfile])
        call_checked("vehicle", VehicleProfile, **header["vehicle"])
    except EvrouteError as exc:
        raise _fail(path, f"header: {exc}") from None
    hp = header["hyperparameters"]
    exact = header["kind"] == "gp-exact" or (header["kind"] == "linear" and hp.get("base") == "gp-exact")
    if header["kind"] == "linear" and hp.get("base") not in ("bi", "gp-exact"):
        raise _fail(path, f"linear model with unknown base {hp.get('base')!r} (bi or gp-exact)")
    if exact:
        _check_exact_hyper(path, hp)


def _check_trip_effect(path: str | Path, effect: Any) -> None:
    """``meta.trip_effect`` (learned by ``evroute learn``, served in every route interval): absent, or an object with
    ``rel_var`` (``tau^2``) a finite number >= 0 and, when present (files since the whole-trip noise is learned),
    ``noise_mult`` a finite number >= 0 and ``trips`` an integer >= 0; its ``mixture`` (format version 2) three lists
    of one length of finite numbers >= 0, the weights summing to 1
    (:meth:`~evroute.models.predictive_noise.PredictiveNoise.from_dict`)."""
    if effect is None:
        return
    if not isinstance(effect, dict):
        raise _fail(path, f"header field 'meta.trip_effect' must be a JSON object, got {type(effect).__name__}")
    v = effect.get("rel_var")
    if not (_number(v) and v >= 0):
        raise _fail(path, f"header field 'meta.trip_effect.rel_var' must be a finite number >= 0, got {v!r}")
    k = effect.get("noise_mult", 1.0)
    if not (_number(k) and k >= 0):
        raise _fail(path, f"header field 'meta.trip_effect.noise_mult' must be a finite number >= 0, got {k!r}")
    n = effect.get("trips", 0)
    if not (_int(n) and n >= 0):
        raise _fail(path, f"header field 'meta.trip_effect.trips' must be an integer >= 0, got {n!r}")
    if "mixture" in effect:
        from evroute.models.predictive_noise import PredictiveNoise

        try:
            PredictiveNoise.from_dict(effect)
        except EvrouteError as exc:
            raise _fail(path, f"header field 'meta.trip_effect.mixture' is malformed: {exc}") from None


def _check_trip_readings(path: str | Path, a: dict[str, np.ndarray]) -> None:
    """The traces' readings (:data:`_TRIP_READ`): offsets rising from 0 to their arrays' lengths, each non-zero of
    ``A`` inside its trace's readings and edges, each reading's noise variance > 0."""
    n_trips = len(a["trip_ptr"]) - 1
    for ptr_name, arr_name in (("trip_read_ptr", "trip_read"), ("trip_a_ptr", "trip_a_val")):
        ptr = a[ptr_name]
        if not (int(ptr[0]) == 0 and int(ptr[-1]) == len(a[arr_name]) and bool((np.diff(ptr) >= 0).all())):
            raise _fail(path, f"array {ptr_name!r} must rise from 0 to the length of {arr_name!r}")
    trip = np.repeat(np.arange(n_trips), np.diff(a["trip_a_ptr"]))
    rows, cols = a["trip_a_rc"][:, 0], a["trip_a_rc"][:, 1]
    m, k = np.diff(a["trip_read_ptr"])[trip], np.diff(a["trip_ptr"])[trip]
    if not bool(((rows >= 0) & (rows < m) & (cols >= 0) & (cols < k)).all()):
        raise _fail(path, "array 'trip_a_rc' holds a reading or edge outside its trace")
    if not bool((a["trip_read"][:, 1] > 0).all()):
        raise _fail(path, "array 'trip_read' holds a reading noise variance <= 0")


def _check_exact_hyper(path: str | Path, hp: dict[str, Any]) -> None:
    for key, strict in _EXACT_HYPER.items():
        v = hp.get(key)
        if not (_number(v) and (v > 0 if strict else v >= 0)):
            bound = "> 0" if strict else ">= 0"
            raise _fail(path, f"hyperparameter {key!r} must be a finite number {bound}, got {v!r}")
    cfg = hp.get("config")
    if not isinstance(cfg, dict):
        raise _fail(path, "hyperparameter 'config' must be a JSON object (the exact GP's settings)")
    from evroute.models.gp_exact import ExactGPConfig
    from evroute.validation import call_checked, check_params

    try:
        check_params("config field", cfg, [ExactGPConfig])
        call_checked("config", ExactGPConfig, **cfg)
    except EvrouteError as exc:
        raise _fail(path, f"hyperparameters: {exc}") from None


def _as_checked(path: str | Path, name: str, arr: np.ndarray, kind: str) -> np.ndarray:
    """``arr`` as float64 / int64 after its dtype and finiteness are checked."""
    if kind == "i":
        if arr.dtype.kind not in "iu":
            raise _fail(path, f"array {name!r} must hold integers, got dtype {arr.dtype}")
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iuf":
        raise _fail(path, f"array {name!r} must hold real numbers, got dtype {arr.dtype}")
    out = arr.astype(np.float64)
    if not np.isfinite(out).all():
        raise _fail(path, f"array {name!r} holds NaN or infinite values")
    return out


def check_content(path: str | Path, header: Any, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Check ``header`` (already known to name the format, version and a known kind) and ``arrays`` (module doc);
    returns the arrays cast to float64 / int64.  Raises :class:`DataError` ``<path>: ...`` on the first mismatch."""
    _check_header(path, header)
    spec = _spec(header)
    n_edges = int(header["network"]["n_edges"])
    if header["kind"] == "linear" and ("lin_basis" in arrays or "lin_basis_sd" in arrays):
        spec = {**spec, **_BASIS}
    if "total_sq" in arrays and "count" in spec:
        spec = {**spec, **_BI_SQ}
    if header["kind"] == "linear" and any(k in arrays for k in _TRIPS):
        spec = {**spec, **_TRIPS}
    if header["kind"] == "linear" and any(k in arrays for k in _TRIP_READ):
        spec = {**spec, **_TRIPS, **_TRIP_READ}
    unknown = sorted(set(arrays) - set(spec))
    if unknown:
        raise _fail(path, f"unexpected array(s) {', '.join(map(repr, unknown))} in a {header['kind']} model")
    sizes: dict[Any, int] = {"E": n_edges}
    out: dict[str, np.ndarray] = {}
    for name, (kind, shape) in spec.items():
        if name not in arrays:
            raise _fail(path, f"array {name!r} missing (a {header['kind']} model needs {', '.join(spec)})")
        a = _as_checked(path, name, arrays[name], kind)
        if a.ndim != len(shape):
            raise _fail(path, f"array {name!r} has {a.ndim} dimension(s), expected {len(shape)}")
        for dim, want in zip(a.shape, shape, strict=True):
            expected = sizes.setdefault(want, dim) if isinstance(want, str) else want
            if dim != expected:
                what = f"{expected} (the header's n_edges)" if want == "E" else str(expected)
                raise _fail(path, f"array {name!r} has shape {a.shape}: length {dim}, expected {what}")
        out[name] = a
    _check_ranges(path, header, out, n_edges)
    return out


def _check_ranges(path: str | Path, header: dict[str, Any], a: dict[str, np.ndarray], n_edges: int) -> None:
    def need(ok: bool, text: str) -> None:
        if not ok:
            raise _fail(path, text)

    if "count" in a:
        need(bool((a["prior_var"] > 0).all() and (a["noise_var"] > 0).all()), "prior_var and noise_var must be > 0")
        need(bool((a["count"] >= 0).all()), "array 'count' holds negative observation counts")
        need(bool((a["total"][a["count"] == 0] == 0).all()), "array 'total' is non-zero on edges with count 0")
    if "edges" in a:
        e = a["edges"]
        need(bool(((e >= 0) & (e < n_edges)).all()), f"array 'edges' holds indices outside 0..{n_edges - 1}")
        need(len(np.unique(e)) == len(e), "array 'edges' lists an edge twice")
        need(bool((a["counts"] >= 1).all()), "array 'counts' must be >= 1 (one entry per observed edge)")
        need(bool((a["sum_y2"] >= 0).all()), "array 'sum_y2' (sums of squares) holds negative values")
        for k in ("lengthscale_f", "lengthscale_f2"):
            need(bool((a[k] > 0).all()), f"array {k!r} must be > 0")
    if "lin_row" in a:
        for k in ("lin_row", "lin_col"):
            need(bool(((a[k] >= 0) & (a[k] < n_edges)).all()), f"array {k!r} holds indices outside 0..{n_edges - 1}")
        need(int(a["lin_readings"]) >= 0, "array 'lin_readings' must be >= 0")
    if "lin_basis_sd" in a:
        need(bool((a["lin_basis_sd"] > 0).all()), "array 'lin_basis_sd' must be > 0")
    if "total_sq" in a:
        need(bool((a["total_sq"] >= 0).all()), "array 'total_sq' must be >= 0")
    if "trip_ptr" in a:
        ptr, m = a["trip_ptr"], len(a["trip_edge"])
        need(len(ptr) == len(a["trip_yr"]) + 1, "array 'trip_ptr' must have one entry more than 'trip_yr' has rows")
        need(
            int(ptr[0]) == 0 and int(ptr[-1]) == m and bool((np.diff(ptr) >= 0).all()),
            "array 'trip_ptr' must rise from 0 to the length of 'trip_edge'",
        )
        need(bool(((a["trip_edge"] >= 0) & (a["trip_edge"] < n_edges)).all()), "array 'trip_edge' out of 0..E-1")
    if "trip_read_ptr" in a:
        _check_trip_readings(path, a)
    scale = header["hyperparameters"].get("noise_scale", 1.0) if header["kind"] == "linear" else 1.0
    need(_number(scale) and scale > 0, f"hyperparameter 'noise_scale' must be a finite number > 0, got {scale!r}")
    pscale = header["hyperparameters"].get("prior_scale", 1.0) if header["kind"] == "linear" else 1.0
    need(_number(pscale) and pscale > 0, f"hyperparameter 'prior_scale' must be a finite number > 0, got {pscale!r}")
    nexp = header["hyperparameters"].get("noise_exponent", 0.0) if header["kind"] == "linear" else 0.0
    need(_number(nexp) and 0 <= nexp <= 4, f"hyperparameter 'noise_exponent' must be a number in [0, 4], got {nexp!r}")
    tau = header["hyperparameters"].get("trip_tau", 0.0) if header["kind"] == "linear" else 0.0
    need(_number(tau) and 0 <= tau <= 1, f"hyperparameter 'trip_tau' must be a number in [0, 1], got {tau!r}")
    fit = header["hyperparameters"].get("trip_effect_fit", False) if header["kind"] == "linear" else False
    need(isinstance(fit, bool), f"hyperparameter 'trip_effect_fit' must be true or false, got {fit!r}")
    obs = {"bi": "count", "gp-exact": "counts", "linear": "lin_readings"}[header["kind"]]
    need(int(a[obs].sum()) == header["observations"], f"header 'observations' is not the sum of array {obs!r}")


def check_binding(
    path: str | Path, header: dict[str, Any], arrays: dict[str, np.ndarray], linegraph: Any, network_hash: str
) -> None:
    """The model file belongs to ``linegraph`` (whose :func:`~evroute.models.store.network_hash` is
    ``network_hash``): the header's hash, its edge count and the arrays' edge and context dimensions are the
    network's (module doc)."""
    net = header["network"]
    if net["hash"] != network_hash or net["n_edges"] != linegraph.n_nodes:
        raise DataError(
            f"model {path} was learned on network {net['name']!r} ({net['n_edges']} edges), not on "
            f"{linegraph.network.name!r} ({linegraph.n_nodes} edges): the network content differs"
        )
    if "lengthscale_f" in arrays:
        d = int(linegraph.contexts().shape[1])
        if len(arrays["lengthscale_f"]) != d:
            raise _fail(path, f"array 'lengthscale_f' has {len(arrays['lengthscale_f'])} entries, the network {d}")


__all__ = ["MAX_EDGES", "check_binding", "check_content"]
