"""Digital elevation models (DEM): read a GeoTIFF or SRTM ``.hgt`` raster and sample it at lon/lat points.

Elevations are in metres.  Sampling is bilinear between pixel centres (for ``.hgt`` files the grid
points lie on whole arc-seconds, the file's south-west corner being given by its name, e.g.
``N49E006.hgt``).  Void / nodata cells are ignored by renormalising the bilinear weights over the
valid neighbours; a point with no valid neighbour or outside the raster raises :class:`DataError`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np

from evroute.errors import DataError

HGT_VOID = -32768
_HGT_NAME = re.compile(r"^([NS])(\d{2})([EW])(\d{3})$", re.IGNORECASE)


@dataclass(eq=False)
class Dem:
    """A north-up or general affine elevation raster.

    Attributes:
        z: ``(rows, cols)`` float64 elevations in metres, NaN where void.
        transform: affine coefficients ``(a, b, c, d, e, f)`` mapping pixel *centre* indices
            ``(col, row)`` to raster coordinates: ``x = a*col + b*row + c``, ``y = d*col + e*row + f``.
        crs: the raster CRS as a string understood by pyproj (``None`` or ``"EPSG:4326"`` for lon/lat).
        source: file the DEM was read from.
    """

    z: np.ndarray
    transform: tuple[float, float, float, float, float, float]
    crs: str | None = None
    source: str = ""
    _inverse: np.ndarray = field(init=False, repr=False)
    _to_crs: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self.z = np.asarray(self.z, dtype=np.float64)
        if self.z.ndim != 2 or min(self.z.shape) < 2:
            raise DataError(f"DEM {self.source or '<array>'} must be a 2-D raster of at least 2x2 cells")
        a, b, c, d, e, f = (float(v) for v in self.transform)
        m = np.array([[a, b, c], [d, e, f], [0.0, 0.0, 1.0]])
        if abs(np.linalg.det(m[:2, :2])) < 1e-300:
            raise DataError(f"DEM {self.source or '<array>'} has a singular geotransform")
        self._inverse = np.linalg.inv(m)
        if self.crs and not _is_lonlat(self.crs):
            from pyproj import Transformer

            self._to_crs = Transformer.from_crs("EPSG:4326", self.crs, always_xy=True)

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, cols)`` of the raster."""
        rows, cols = self.z.shape
        return int(rows), int(cols)

    def sample(self, lon: Any, lat: Any) -> Any:
        """Bilinear elevation in metres at ``(lon, lat)`` in degrees (scalars or arrays of equal shape).

        Raises:
            DataError: if a point lies outside the raster or only void cells surround it.
        """
        lon_a = np.asarray(lon, dtype=np.float64)
        lat_a = np.asarray(lat, dtype=np.float64)
        scalar = lon_a.ndim == 0 and lat_a.ndim == 0
        lon_a, lat_a = np.broadcast_arrays(np.atleast_1d(lon_a), np.atleast_1d(lat_a))
        shape = lon_a.shape
        lon_f, lat_f = lon_a.ravel(), lat_a.ravel()
        if not (np.all(np.isfinite(lon_f)) and np.all(np.isfinite(lat_f))):
            raise DataError(f"DEM {self.source}: cannot sample at NaN/inf coordinates")
        if self._to_crs is not None:
            x, y = self._to_crs.transform(lon_f, lat_f)
            x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        else:
            x, y = lon_f, lat_f
        inv = self._inverse
        col = inv[0, 0] * x + inv[0, 1] * y + inv[0, 2]
        row = inv[1, 0] * x + inv[1, 1] * y + inv[1, 2]
        rows, cols = self.z.shape
        # a point within half a pixel of the outermost centres is still inside the raster
        eps = 1e-9
        outside = (col < -0.5 - eps) | (col > cols - 0.5 + eps) | (row < -0.5 - eps) | (row > rows - 0.5 + eps)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise DataError(
                f"DEM {self.source}: {int(outside.sum())} point(s) outside the raster, "
                f"e.g. lon={lon_f[i]:.6f} lat={lat_f[i]:.6f}"
            )
        col = np.clip(col, 0.0, cols - 1.0)
        row = np.clip(row, 0.0, rows - 1.0)
        c0 = np.minimum(np.floor(col).astype(np.int64), cols - 2)
        r0 = np.minimum(np.floor(row).astype(np.int64), rows - 2)
        fc, fr = col - c0, row - r0
        vals = np.stack([self.z[r0, c0], self.z[r0, c0 + 1], self.z[r0 + 1, c0], self.z[r0 + 1, c0 + 1]])
        w = np.stack([(1 - fr) * (1 - fc), (1 - fr) * fc, fr * (1 - fc), fr * fc])
        valid = np.isfinite(vals)
        w = np.where(valid, w, 0.0)
        wsum = w.sum(axis=0)
        novalid = wsum <= 0  # every neighbour with positive weight is void
        if novalid.any():
            i = int(np.flatnonzero(novalid)[0])
            raise DataError(f"DEM {self.source}: no elevation data (void) at lon={lon_f[i]:.6f} lat={lat_f[i]:.6f}")
        out = (np.where(valid, vals, 0.0) * w).sum(axis=0) / wsum
        return float(out[0]) if scalar else out.reshape(shape)


#: What the loaders accept as a DEM: a path, several paths (tiles to mosaic) or a :class:`Dem`.
DemSpec: TypeAlias = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Dem


def _is_lonlat(crs: str) -> bool:
    s = str(crs).upper().replace(" ", "")
    if s in {"EPSG:4326", "OGC:CRS84", "WGS84", "+PROJ=LONGLAT+DATUM=WGS84+NO_DEFS"}:
        return True
    try:
        from pyproj import CRS

        c = CRS.from_user_input(crs)
        return bool(c.is_geographic) and c.equals(CRS.from_epsg(4326), ignore_axis_order=True)
    except Exception:  # noqa: BLE001 - unknown CRS strings are handled by the transformer later
        return False


def read_hgt(path: str | os.PathLike[str]) -> Dem:
    """Read an SRTM ``.hgt`` tile (big-endian int16, 1201x1201 or 3601x3601; SW corner from the file name)."""
    p = Path(path)
    m = _HGT_NAME.match(p.name.split(".")[0])
    if not m:
        raise DataError(f"cannot tell the tile corner of {p}: .hgt files must be named like N49E006.hgt")
    lat0 = int(m.group(2)) * (1 if m.group(1).upper() == "N" else -1)
    lon0 = int(m.group(4)) * (1 if m.group(3).upper() == "E" else -1)
    try:
        raw = np.fromfile(p, dtype=">i2")
    except OSError as exc:
        raise DataError(f"cannot read DEM {p}: {exc.strerror or exc}") from None
    side = int(round(np.sqrt(raw.size)))
    if side * side != raw.size or side not in (1201, 3601):
        raise DataError(f"DEM {p} is not an SRTM tile: {raw.size} samples, expected 1201^2 or 3601^2")
    z = raw.reshape(side, side).astype(np.float64)
    z[raw.reshape(side, side) == HGT_VOID] = np.nan
    step = 1.0 / (side - 1)
    # row 0 is the northern edge (lat0 + 1); column 0 the western edge (lon0); samples on the grid lines
    return Dem(z=z, transform=(step, 0.0, float(lon0), 0.0, -step, float(lat0 + 1)), crs="EPSG:4326", source=str(p))


def read_geotiff(path: str | os.PathLike[str], band: int = 1) -> Dem:
    """Read band ``band`` of a GeoTIFF (any CRS) via rasterio; nodata cells become NaN."""
    import rasterio

    p = Path(path)
    try:
        with rasterio.open(p) as src:
            z = src.read(band).astype(np.float64)
            nodata = src.nodata
            t = src.transform
            crs = src.crs.to_string() if src.crs else None
    except (rasterio.errors.RasterioError, IndexError, OSError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"cannot read DEM {p}: {msg}") from None
    if nodata is not None and np.isfinite(nodata):
        z[z == nodata] = np.nan
    # shift from pixel-corner to pixel-centre indexing
    c = t.c + 0.5 * t.a + 0.5 * t.b
    f = t.f + 0.5 * t.d + 0.5 * t.e
    return Dem(z=z, transform=(t.a, t.b, c, t.d, t.e, f), crs=crs, source=str(p))


def merge_dems(paths: Sequence[str | os.PathLike[str]]) -> Dem:
    """Mosaic DEM tiles (GeoTIFF or SRTM ``.hgt``, all in one CRS) into one :class:`Dem` with ``rasterio.merge``.

    The mosaic takes the first tile's resolution; where tiles overlap the first one wins (for SRTM tiles the
    shared edge rows/columns hold the same samples).  Nodata / void cells become NaN.

    Raises:
        DataError: if a file is missing or unreadable, or the tiles are in different CRSs.
    """
    import rasterio
    from rasterio.merge import merge

    files = [Path(p) for p in paths]
    for p in files:
        if not p.is_file():
            raise DataError(f"DEM file not found: {p}")
    try:
        datasets = [rasterio.open(p) for p in files]
    except (rasterio.errors.RasterioError, OSError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"cannot read DEM tiles {', '.join(map(str, files))}: {msg}") from None
    try:
        crss = {ds.crs.to_string() if ds.crs else None for ds in datasets}
        if len(crss) > 1:
            raise DataError(f"DEM tiles are in different CRSs ({', '.join(sorted(map(str, crss)))}): reproject them")
        nodata = datasets[0].nodata
        fill = nodata if nodata is not None and np.isfinite(nodata) else HGT_VOID
        try:
            z, t = merge(datasets, indexes=[1], nodata=fill)
        except (rasterio.errors.RasterioError, ValueError) as exc:
            raise DataError(f"cannot merge DEM tiles {', '.join(map(str, files))}: {exc}") from None
        crs = crss.pop()
    finally:
        for ds in datasets:
            ds.close()
    z = z[0].astype(np.float64)
    z[z == fill] = np.nan
    c = t.c + 0.5 * t.a + 0.5 * t.b  # pixel-corner to pixel-centre indexing
    f = t.f + 0.5 * t.d + 0.5 * t.e
    return Dem(z=z, transform=(t.a, t.b, c, t.d, t.e, f), crs=crs, source="+".join(map(str, files)))


def read_dem(path: DemSpec) -> Dem:
    """Read a DEM: a GeoTIFF (``.tif``/``.tiff``, any CRS), an SRTM ``.hgt`` tile, or a list of tiles to mosaic.

    A :class:`Dem` passes through; a list or tuple of several paths is merged with :func:`merge_dems`.

    Raises:
        DataError: if a file is missing, unreadable or not a supported raster.
    """
    if isinstance(path, Dem):
        return path
    if not isinstance(path, (str, os.PathLike)):  # several tiles
        if not path:
            raise DataError("no DEM file given")
        return read_dem(path[0]) if len(path) == 1 else merge_dems(path)
    p = Path(path)
    if not p.is_file():
        raise DataError(f"DEM file not found: {p}")
    if p.suffix.lower() == ".hgt":
        return read_hgt(p)
    return read_geotiff(p)


def drape(network: Any, dem: DemSpec) -> Any:
    """Copy of ``network`` (a :class:`RoadNetwork`) with junction elevations sampled from ``dem``.

    Every junction gets one elevation, sampled at the mean lon/lat of the edge end points touching it,
    so that consecutive edges agree on the height of the junction they share.  Junctions inside bridges and tunnels
    (only edges of ``network.meta["structures"]`` touch them) are interpolated between the structures' ends instead,
    and lengths become the slope lengths for the new elevations (:mod:`evroute.network.elevation`).
    """
    from evroute.network._graph import node_codes
    from evroute.network.polylines import as_polylines
    from evroute.network.road_network import RoadNetwork

    d = read_dem(dem)
    (fi, ti), uniq = node_codes(network.from_node, network.to_node)
    packed = as_polylines(network.geometry)
    starts, ends = packed.first(), packed.last()
    idx = np.concatenate([fi, ti])
    pts = np.concatenate([starts, ends])
    cnt = np.bincount(idx, minlength=len(uniq)).astype(np.float64)
    lon = np.bincount(idx, weights=pts[:, 0], minlength=len(uniq)) / cnt
    lat = np.bincount(idx, weights=pts[:, 1], minlength=len(uniq)) / cnt
    z = d.sample(lon, lat)
    meta = dict(network.meta)
    meta["elevation"] = f"dem:{d.source}"
    from evroute.network.elevation import interpolate_structures, slope_length

    old_dz = network.z_to_m - network.z_from_m
    horizontal = np.sqrt(np.maximum(network.length_m**2 - old_dz**2, 0.0))
    structure = np.isin(network.edge_ids, np.asarray(network.meta.get("structures", []), dtype=str))
    z, n_int = interpolate_structures(fi, ti, z, np.maximum(horizontal, 1e-3), structure)
    if n_int:
        meta["interpolated_structure_junctions"] = n_int
    return RoadNetwork(
        name=network.name,
        edge_ids=network.edge_ids,
        from_node=network.from_node,
        to_node=network.to_node,
        length_m=slope_length(horizontal, z[ti] - z[fi]),
        speed_mps=network.speed_mps,
        z_from_m=z[fi],
        z_to_m=z[ti],
        geometry=network.geometry,
        turns=network.turns,
        meta=meta,
    ).with_speed_limits(network.speed_limit_mps)
