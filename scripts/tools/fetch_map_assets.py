"""Fetch (or refresh) the Leaflet files that evroute inlines into its HTML maps, from the npm registry.

    .venv/bin/python scripts/tools/fetch_map_assets.py            # fetch, verify, write evroute/resources/leaflet/
    .venv/bin/python scripts/tools/fetch_map_assets.py --check    # only verify the shipped copy against MANIFEST.json

Reproducible: the package version and its npm ``dist.integrity`` (SHA-512 of the tarball) are pinned below;
``npm pack`` downloads the tarball, the script refuses it unless its SHA-512 matches, then copies the files the
maps need plus the licence, and records each file's SHA-256 in ``MANIFEST.json`` (checked by the tests).
The Leaflet version is the one folium references (``folium.Map.default_js``); bump both together.
Needs ``npm`` on PATH (Debian package ``npm``).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "leaflet"
VERSION = "1.9.3"
INTEGRITY = "sha512-iB2cR9vAkDOu5l3HAay2obcUHZ7xwUBBjph8+PGtmW/2lYhbLizWtG7nTeYht36WfOslixQF9D/uSIzhZgGMfQ=="
LICENSE = "BSD-2-Clause"
#: tarball member -> path under the target folder
FILES = {
    "package/LICENSE": "LICENSE",
    "package/dist/leaflet.js": "leaflet.js",
    "package/dist/leaflet.css": "leaflet.css",
    "package/dist/images/layers.png": "images/layers.png",
    "package/dist/images/layers-2x.png": "images/layers-2x.png",
    "package/dist/images/marker-icon.png": "images/marker-icon.png",
    "package/dist/images/marker-icon-2x.png": "images/marker-icon-2x.png",
    "package/dist/images/marker-shadow.png": "images/marker-shadow.png",
}
TARGET = Path(__file__).resolve().parents[2] / "evroute" / "resources" / "leaflet"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def npm_integrity(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def fetch(target: Path) -> dict[str, object]:
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("fetch_map_assets: npm not found on PATH (apt-get install npm)")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [npm, "pack", f"{PACKAGE}@{VERSION}", "--silent", "--pack-destination", tmp],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        tgz = Path(tmp) / f"{PACKAGE}-{VERSION}.tgz"
        got = npm_integrity(tgz)
        if got != INTEGRITY:
            sys.exit(f"fetch_map_assets: integrity mismatch for {PACKAGE}@{VERSION}: {got} != {INTEGRITY}")
        stage = Path(tmp) / "stage"
        with tarfile.open(tgz) as tar:
            for member, rel in FILES.items():
                data = tar.extractfile(member)
                if data is None:
                    sys.exit(f"fetch_map_assets: {member} missing from the tarball")
                out = stage / rel
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(data.read())
        manifest = {
            "package": PACKAGE,
            "version": VERSION,
            "license": LICENSE,
            "npm_integrity": INTEGRITY,
            "source": f"npm pack {PACKAGE}@{VERSION}",
            "files": {rel: sha256(stage / rel) for rel in FILES.values()},
        }
        (stage / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(stage, target)
    return manifest


def check(target: Path) -> list[str]:
    """Problems with the shipped copy (empty when every file matches MANIFEST.json)."""
    try:
        manifest = json.loads((target / "MANIFEST.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        return [f"cannot read {target / 'MANIFEST.json'}: {exc}"]
    bad = []
    if manifest.get("version") != VERSION or manifest.get("npm_integrity") != INTEGRITY:
        bad.append(f"MANIFEST.json pins {manifest.get('version')}, the script pins {VERSION}")
    for rel, digest in manifest.get("files", {}).items():
        p = target / rel
        if not p.is_file() or sha256(p) != digest:
            bad.append(f"{rel}: missing or checksum mismatch")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only verify the shipped copy")
    ap.add_argument("--target", type=Path, default=TARGET)
    args = ap.parse_args()
    if not args.check:
        m = fetch(args.target)
        print(f"{PACKAGE}@{VERSION}: {len(m['files'])} files -> {args.target}")  # type: ignore[arg-type]
    problems = check(args.target)
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        print(f"{args.target}: all files match MANIFEST.json")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
