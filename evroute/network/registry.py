"""Named networks: ``load_network("monaco")`` and friends, the data directory and dataset download.

Specs understood by :func:`load_network`:

* ``synthetic``, ``synthetic:EDGES``, ``synthetic:EDGES:SEED`` -- :func:`~evroute.network.synthetic.synthetic_city`
  (default 1000 edges, seed 0), kept in the compute cache (:func:`~evroute.network.netstore.load_synthetic`);
* ``synthetic-country:EDGES``, ``synthetic-country:EDGES:SEED`` --
  :func:`~evroute.network.country.synthetic_country` (seed 0 by default; towns, villages, rural roads and motorways),
  kept in the compute cache (:func:`~evroute.network.country.load_synthetic_country`);
* ``monaco``, ``luxembourg`` -- the OSM files of the MoST / LuST scenarios, converted with netconvert
  (:func:`~evroute.network.netconvert.osm_to_sumo`) so that edge ids are SUMO ids, then read with
  :func:`~evroute.network.sumo.load_sumo_net`;
* a path: ``.net.xml`` / ``.net.xml.gz`` (SUMO) or ``.osm`` / ``.osm.xml`` / ``.osm.bz2`` / ``.osm.gz`` /
  ``.osm.pbf`` (OpenStreetMap).

One loader for OpenStreetMap files, whether named or given by path: ``loader="netconvert"`` (the default,
:data:`DEFAULT_LOADER`) converts with SUMO's netconvert, which honours turn restrictions (``restriction``
relations), joins clustered junctions and gives SUMO edge ids; ``loader="osmnx"``
(:func:`~evroute.network.osm.load_osm`) builds the graph with osmnx: every turn between two drivable ways is
allowed (turn restrictions are ignored), edge ids are ``"u-v-k"``.  So ``load_network("monaco")`` and
``load_network("/data/monaco.osm")`` give the same network.  ``.osm.pbf`` files are converted to OSM XML
first (:func:`~evroute.network.pbf.pbf_to_osm`, cached).

Data files are looked up in ``data_dir`` (argument), else ``$EVROUTE_DATA``, else
``$XDG_CACHE_HOME/evroute/data`` (``~/.cache/evroute/data``).  Converted networks are cached in
``$EVROUTE_CACHE`` (default ``$XDG_CACHE_HOME/evroute/nets``), keyed by the OSM file's SHA-256 and
the netconvert options, so repeated loads skip netconvert.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import urllib.error
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evroute.errors import DataError, ParameterError, UnknownNetworkError
from evroute.network.cachefiles import cached, clean_stale_temps, discard
from evroute.network.dem import DemSpec, drape
from evroute.network.inclines import SMOOTH_LENGTH_M, smooth_elevations, warn_steep
from evroute.network.netconvert import netconvert_options, netconvert_version, osm_to_sumo
from evroute.network.netstore import load_synthetic
from evroute.network.osm import load_osm
from evroute.network.pbf import PBF_SUFFIX, pbf_to_osm
from evroute.network.road_network import RoadNetwork
from evroute.network.sumo import load_sumo_net
from evroute.network.xmlguard import check_xml_file
from evroute.paths import cache_home, net_cache_dir  # net_cache_dir: below the cache files (no import circle)


@dataclass(frozen=True)
class Dataset:
    """An upstream data file: ``repo`` at ``commit``, file ``path``, checked against ``sha256`` (``size_bytes``
    long, under ``licence``); the registry is ``data/datasets.json`` (:func:`load_registry`)."""

    name: str
    filename: str
    repo: str
    commit: str
    path: str
    sha256: str
    has_elevation: bool
    licence: str = ""
    size_bytes: int = 0

    @property
    def url(self) -> str:
        """Raw GitHub download URL at the pinned commit."""
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.path}"


#: The dataset registry: ``data/datasets.json`` of a source checkout, else the byte-identical copy the package ships
#: (``evroute/resources/datasets.json``, for installed wheels; ``tests/test_data_folder.py`` keeps them equal).
REGISTRY_FILE = "datasets.json"


def registry_path() -> Path:
    """The registry file read: ``data/datasets.json`` next to the package in a checkout, else the shipped copy."""
    checkout = Path(__file__).resolve().parents[2] / "data" / REGISTRY_FILE
    if checkout.is_file():
        return checkout
    from evroute.paths import resource

    return Path(str(resource(REGISTRY_FILE)))


def load_registry(path: str | os.PathLike[str] | None = None) -> dict[str, Dataset]:
    """``name -> Dataset`` from the registry JSON (``{name: {filename, repo, commit, path, sha256, has_elevation,
    licence, size_bytes, description}}``); :class:`DataError` when it is unreadable or a field is missing."""
    import json

    src = Path(path) if path is not None else registry_path()
    try:
        raw = json.loads(src.read_text())
        return {
            name: Dataset(
                name,
                d["filename"],
                d["repo"],
                d["commit"],
                d["path"],
                d["sha256"],
                bool(d["has_elevation"]),
                str(d["licence"]),
                int(d["size_bytes"]),
            )
            for name, d in raw.items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataError(f"dataset registry {src} is unreadable or malformed: {exc!r}") from None


DATASETS: dict[str, Dataset] = load_registry()
NETWORK_NAMES: tuple[str, ...] = ("synthetic", *DATASETS)
SUMO_SUFFIXES = (".net.xml", ".net.xml.gz")
OSM_SUFFIXES = (".osm", ".osm.xml", ".osm.bz2", ".osm.gz", PBF_SUFFIX)
#: OSM loaders: ``netconvert`` (default; turn restrictions honoured) or ``osmnx`` (turn restrictions ignored).
LOADERS = ("netconvert", "osmnx")
DEFAULT_LOADER = "netconvert"


def default_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: ``data_dir`` if given, else ``$EVROUTE_DATA``, else ``~/.cache/evroute/data``."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    if os.environ.get("EVROUTE_DATA"):
        return Path(os.environ["EVROUTE_DATA"]).expanduser()
    return cache_home() / "data"


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def dataset_path(name: str, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Path of the data file of dataset ``name``; :class:`DataError` telling how to get it when it is missing.

    A file in evroute's own cache (neither ``data_dir`` nor ``$EVROUTE_DATA`` given) is checked against the pinned
    SHA-256 and downloaded again, with one warning, when it does not match.
    """
    ds = _dataset(name)
    p = default_data_dir(data_dir) / ds.filename
    if not p.is_file():
        raise DataError(
            f"{ds.filename} not found in {p.parent}: set EVROUTE_DATA or --data-dir to the folder holding it, "
            f"or run `evroute data fetch {name}`"
        )
    if data_dir is None and not os.environ.get("EVROUTE_DATA") and file_sha256(p) != ds.sha256:
        # evroute downloaded it into its cache: a mismatch is damage, healed by a verified download
        warnings.warn(
            f"cached dataset {p} does not match its pinned checksum (truncated, corrupted or edited): "
            "downloading it again",
            UserWarning,
            stacklevel=2,
        )
        try:
            return fetch_dataset(name)
        except DataError as exc:
            raise DataError(f"{p} is damaged and could not be downloaded again ({exc})") from None
    return p


def _dataset(name: str) -> Dataset:
    try:
        return DATASETS[name]
    except KeyError:
        raise UnknownNetworkError(f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)}") from None


def _download(url: str, dest: Path, timeout_s: float = 120.0) -> None:
    """Copy ``url`` to ``dest``: http(s) through :class:`pooch.HTTPDownloader`, ``file://`` (mirrors, tests) with
    :mod:`urllib`."""
    if url.startswith(("http://", "https://")):
        import pooch

        pooch.HTTPDownloader(progressbar=False, timeout=timeout_s)(url, str(dest), None)
        return
    with urllib.request.urlopen(url, timeout=timeout_s) as resp, open(dest, "wb") as out:  # noqa: S310
        shutil.copyfileobj(resp, out, 1 << 20)


def fetch_dataset(name: str, cache_dir: str | os.PathLike[str] | None = None, *, url: str | None = None) -> Path:
    """Download dataset ``name`` into ``cache_dir`` (default: the data directory) and verify its SHA-256.

    The download goes through :func:`pooch.retrieve`: written to a temporary file in the target folder and moved
    into place only when its SHA-256 matches the pinned one.  A file already present with the right checksum is
    not downloaded again; one with another checksum is replaced by a verified download.

    Args:
        name: ``"monaco"`` or ``"luxembourg"``.
        cache_dir: target folder (default :func:`default_data_dir`).
        url: download from this URL (e.g. a mirror or ``file://`` path) instead of the pinned GitHub URL.

    Returns:
        Path of the verified file.

    Raises:
        UnknownNetworkError: for an unknown name.
        DataError: when the folder cannot be written, the download fails or the checksum does not match.
    """
    import pooch

    ds = _dataset(name)
    target_dir = default_data_dir(cache_dir)
    dest = target_dir / ds.filename
    if dest.is_file() and file_sha256(dest) == ds.sha256:
        return dest
    source = url or ds.url
    created = [d for d in (target_dir, *target_dir.parents) if not d.exists()]  # removed again if the fetch fails
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create data directory {target_dir}: {exc.strerror or exc}") from None
    pooch.get_logger().setLevel("WARNING")
    try:
        got = _retrieve(source, ds, target_dir, name)
    except BaseException:
        for d in created:  # deepest first: only the folders this call made, and only while empty
            with contextlib.suppress(OSError):
                d.rmdir()
        raise
    from evroute.io import umask_mode

    os.chmod(got, umask_mode())  # pooch's temporary file is created 0600
    return Path(got)


def _retrieve(source: str, ds: Dataset, target_dir: Path, name: str) -> str:
    """:func:`pooch.retrieve` of ``source`` into ``target_dir`` checked against ``ds.sha256``; one-line errors."""
    import pooch

    try:
        return pooch.retrieve(
            source,
            known_hash=f"sha256:{ds.sha256}",
            fname=ds.filename,
            path=target_dir,
            downloader=lambda u, out, _p: _download(u, Path(out)),
            progressbar=False,
        )
    except ValueError as exc:
        if "hash" not in str(exc).lower():
            raise DataError(f"cannot download {name} from {source}: {str(exc).splitlines()[0]}") from None
        raise DataError(f"checksum mismatch for {name} from {source}: expected sha256 {ds.sha256[:16]}...") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise DataError(f"cannot download {name} from {source}: {str(reason).splitlines()[0]}") from None


#: Version of the OSM -> SUMO conversion, part of the network cache key: bump it whenever :func:`osm_to_sumo`'s output
#: for the same input changes (2: bridges and tunnels kept apart from their approach roads; 3: posted speeds resolved
#: by :mod:`evroute.network.speeds` instead of netconvert's defaults).
NET_CACHE_VERSION = 3


def _net_entry(osm_path: str | os.PathLike[str], name: str, **netconvert_kw: Any) -> tuple[Path, dict[str, object]]:
    """Cache path of the SUMO conversion of ``osm_path`` and the inputs its manifest records."""
    options = netconvert_options(**netconvert_kw)
    osm_sha = file_sha256(osm_path)
    key = hashlib.sha256()
    key.update(f"evroute-net-v{NET_CACHE_VERSION}\0".encode())
    key.update(osm_sha.encode())
    key.update("\0".join(options).encode())
    inputs = {
        "kind": "netconvert",
        "version": NET_CACHE_VERSION,
        "osm_sha256": osm_sha,
        "options": options,
        "netconvert": netconvert_version(),
    }
    return net_cache_dir() / f"{name}-{key.hexdigest()[:20]}.net.xml.gz", inputs


def converted_net_path(osm_path: str | os.PathLike[str], name: str, **netconvert_kw: Any) -> Path:
    """Cache path of the SUMO conversion of ``osm_path`` (keyed by its SHA-256, the netconvert options and
    :data:`NET_CACHE_VERSION`)."""
    return _net_entry(osm_path, name, **netconvert_kw)[0]


def _osm_xml(path: Path) -> Path:
    """``path`` itself, or for a ``.osm.pbf`` file its (cached, checksummed) OSM XML conversion."""
    if not path.name.lower().endswith(PBF_SUFFIX):
        return path
    sha = file_sha256(path)
    xml = net_cache_dir() / f"{path.name[: -len(PBF_SUFFIX)]}-{sha[:20]}.osm"
    return cached(xml, {"kind": "pbf-to-osm", "pbf_sha256": sha}, lambda out: pbf_to_osm(path, out), "OSM conversion")


def _converted_net(osm: Path, label: str) -> RoadNetwork:
    """The netconvert conversion of ``osm`` from the cache (verified; rebuilt when it fails its checks or its
    parse), read with :func:`load_sumo_net` once and then from the compute cache as arrays
    (:mod:`evroute.network.netcache`)."""
    from evroute.network.netcache import cached_network

    net_path, inputs = _net_entry(osm, label)
    cached(net_path, inputs, lambda out: osm_to_sumo(osm, out), "converted network")
    try:
        parsed = {"conversion": inputs, "net_file": net_path.name, "label": label}
        return cached_network(parsed, lambda: load_sumo_net(net_path, name=label), "parsed network")
    except DataError as exc:  # checksummed but unreadable (e.g. a conversion that was already bad): rebuild once
        warnings.warn(f"cached converted network {net_path} not used ({exc}): rebuilding it", UserWarning, stacklevel=3)
        discard(net_path)
        cached(net_path, inputs, lambda out: osm_to_sumo(osm, out), "converted network")
        return load_sumo_net(net_path, name=label)


def _check_loader(loader: str | None) -> str:
    loader = DEFAULT_LOADER if loader is None else str(loader).lower()
    if loader not in LOADERS:
        raise ParameterError(f"unknown OSM loader {loader!r}; valid: {', '.join(LOADERS)}")
    return loader


def _plausible(net: RoadNetwork, smooth_m: float) -> RoadNetwork:
    """``net`` with elevations smoothed along the roads (:mod:`evroute.network.inclines`), warning about steep edges."""
    net = smooth_elevations(net, smooth_m)
    warn_steep(net)
    return net


def load_osm_file(
    path: str | os.PathLike[str],
    *,
    name: str | None = None,
    loader: str | None = None,
    dem: DemSpec | None = None,
    smooth_m: float = SMOOTH_LENGTH_M,
) -> RoadNetwork:
    """Load an OpenStreetMap file (``.osm[.xml|.bz2|.gz|.pbf]``) with ``loader`` (default netconvert).

    With ``netconvert`` the conversion is cached (see :func:`converted_net_path`) and a DEM, when given,
    replaces every junction elevation; with ``osmnx`` the DEM fills the nodes without ``ele`` tags.  Either way
    bridge/tunnel interiors are interpolated between the structure's ends, the elevations are smoothed along the
    roads with scale ``smooth_m`` metres (0: raw; :func:`~evroute.network.inclines.smooth_elevations`) and a
    :class:`UserWarning` names the edges still steeper than :data:`~evroute.network.inclines.STEEP_GRADE`.
    A network with no elevation at all loads flat with a :class:`UserWarning`.
    """
    loader = _check_loader(loader)
    src = Path(path).expanduser()
    if not src.is_file():
        raise DataError(f"OSM file not found: {src}")
    label = name or src.name.split(".")[0]
    clean_stale_temps()
    osm = _osm_xml(src)
    check_xml_file(osm, "OpenStreetMap file")  # refused before any cache lookup, converter or parser
    if loader == "osmnx":
        net = load_osm(osm, dem=dem, name=label)
    else:
        net = _converted_net(osm, label)
        net = drape(net, dem) if dem is not None else warn_if_flat(net, label)
    net = _plausible(net, smooth_m)
    net.meta["osm_source"] = str(src)
    net.meta["osm_loader"] = loader
    return net


def warn_if_flat(net: RoadNetwork, label: str) -> RoadNetwork:
    """``net``; a :class:`UserWarning` (and ``net.meta["warning"]``) when no junction has an elevation, the same for
    OSM and SUMO files: a flat network silently removes the incline from the energy model."""
    if not (net.z_from_m.any() or net.z_to_m.any()):
        warnings.warn(
            f"{label} has no elevation data: the network is flat (pass a DEM with dem= / --dem)",
            UserWarning,
            stacklevel=3,
        )
        net.meta["warning"] = "no elevation data: the network is flat"
    return net


def _parse_synthetic(spec: str) -> RoadNetwork:
    parts = spec.split(":")
    if len(parts) > 3:
        raise ParameterError(f"bad network spec {spec!r}: use synthetic, synthetic:EDGES or synthetic:EDGES:SEED")
    try:
        n_edges = int(parts[1]) if len(parts) > 1 else 1000
        seed = int(parts[2]) if len(parts) > 2 else 0
    except ValueError:
        raise ParameterError(f"bad network spec {spec!r}: EDGES and SEED must be integers") from None
    return load_synthetic(n_edges, seed)


def _parse_country(spec: str) -> RoadNetwork:
    from evroute.network.country import load_synthetic_country

    parts = spec.split(":")
    if len(parts) not in (2, 3):
        raise ParameterError(f"bad network spec {spec!r}: use synthetic-country:EDGES or synthetic-country:EDGES:SEED")
    try:
        n_edges, seed = int(parts[1]), int(parts[2]) if len(parts) > 2 else 0
    except ValueError:
        raise ParameterError(f"bad network spec {spec!r}: EDGES and SEED must be integers") from None
    return load_synthetic_country(n_edges, seed)


def load_network(
    spec: str | os.PathLike[str],
    *,
    data_dir: str | os.PathLike[str] | None = None,
    dem: DemSpec | None = None,
    loader: str | None = None,
    smooth_m: float = SMOOTH_LENGTH_M,
) -> RoadNetwork:
    """Load a network by name or path (see the module docstring for the specs).

    Args:
        spec: ``synthetic[:EDGES[:SEED]]``, ``synthetic-country:EDGES[:SEED]``, ``monaco``, ``luxembourg`` or a
            ``.net.xml[.gz]`` / ``.osm[.bz2|.pbf]`` path.
        data_dir: folder holding ``monaco.osm`` / ``luxembourg.osm`` (default ``$EVROUTE_DATA`` / user cache).
        dem: DEM raster (GeoTIFF or ``.hgt``), or a list of tiles to mosaic, whose elevations replace the
            network's junction elevations (with ``loader="osmnx"``: used for nodes without ``ele`` tags).
        loader: OSM loader for named networks and OSM files, ``netconvert`` (default) or ``osmnx``.
        smooth_m: scale (m) of the elevation smoothing along the roads of OSM networks and of DEM-draped networks
            (0: raw elevations); SUMO nets without a DEM and synthetic networks keep their elevations.  A
            :class:`UserWarning` names the edges steeper than :data:`~evroute.network.inclines.STEEP_GRADE`.

    Raises:
        UnknownNetworkError: for a name that is neither known nor an existing file.
        DataError: for a missing or malformed data file.
        ParameterError: for a malformed ``synthetic:...`` or ``synthetic-country:...`` spec.
    """
    s = str(spec).strip()
    low = s.lower()
    loader = _check_loader(loader)
    if low == "synthetic" or low.startswith("synthetic:"):
        net = _parse_synthetic(s)
        return _plausible(drape(net, dem), smooth_m) if dem is not None else net
    if low == "synthetic-country" or low.startswith("synthetic-country:"):
        net = _parse_country(s)
        return _plausible(drape(net, dem), smooth_m) if dem is not None else net
    if low in DATASETS:
        return load_osm_file(dataset_path(low, data_dir), name=low, loader=loader, dem=dem, smooth_m=smooth_m)
    p = Path(s).expanduser()
    if low.endswith(SUMO_SUFFIXES):
        if not p.is_file():
            raise DataError(f"SUMO network file not found: {p}")
        net = load_sumo_net(p)
        return _plausible(
            drape(net, dem) if dem is not None else warn_if_flat(net, net.name), smooth_m if dem is not None else 0.0
        )
    if low.endswith(OSM_SUFFIXES):
        return load_osm_file(p, loader=loader, dem=dem, smooth_m=smooth_m)
    if p.is_file():
        raise DataError(f"unsupported network file {p}: expected {', '.join(SUMO_SUFFIXES + OSM_SUFFIXES)}")
    raise UnknownNetworkError(
        f"unknown network {s!r}; valid names: {', '.join(NETWORK_NAMES)}, synthetic:EDGES[:SEED], "
        "synthetic-country:EDGES[:SEED] or a "
        ".net.xml/.osm file"
    )
