"""A built wheel, installed into a fresh venv outside the checkout, runs ``evroute demo`` (package data included).

The fresh venv sees the project venv's dependencies through a ``.pth`` line (no second torch download) but not its
editable evroute (``.pth`` files of an added path are not processed), and the test checks that ``evroute`` is
imported from the new venv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _isolation() -> list[str]:
    """Build with this venv's setuptools when it is recent enough (offline, fast), else in pip's isolated build
    environment (downloads the build backend named in ``pyproject.toml``)."""
    try:
        import setuptools
    except ImportError:
        return []
    major = int(setuptools.__version__.split(".")[0])
    return ["--no-build-isolation"] if major >= 77 else []  # PEP 639 ``license = "MIT"`` needs setuptools 77


@pytest.mark.skipif(not (ROOT / "pyproject.toml").is_file(), reason="needs the source checkout")
def test_wheel_installs_outside_the_checkout_and_runs_the_demo(tmp_path):
    src = tmp_path / "src"  # a clean copy: no stale build/ or egg-info of the checkout can enter the wheel
    shutil.copytree(ROOT / "evroute", src / "evroute", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    wheels = tmp_path / "wheels"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "OMP_NUM_THREADS": "1"}
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *_isolation(), str(src), "-w", str(wheels)],
        check=True,
        env=env,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("evroute-*.whl")
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    py = target / "bin" / "python"
    new_site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(new_site, "project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True,
        env=env,
        capture_output=True,
        timeout=300,
    )
    away = tmp_path / "elsewhere"
    away.mkdir()
    where = subprocess.run(
        [str(py), "-c", "import evroute; print(evroute.__file__)"],
        cwd=away,
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout.strip()
    assert where.startswith(str(target)), where
    res = subprocess.run(
        [
            str(target / "bin" / "evroute"),
            "demo",
            "--network",
            "synthetic:300:0",
            "--horizon",
            "20",
            "--seeds",
            "1",
            "--policies",
            "ts,greedy",
        ],
        cwd=away,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert "BI-TS" in res.stdout and (away / "results" / "demo" / "regret.png").is_file()
    assert res.stderr.count("\r") == 0  # no progress bars when stderr is not a terminal
    res = subprocess.run(
        [
            str(py),
            "-m",
            "evroute",
            "run",
            "--network",
            "synthetic:300:0",
            "--horizon",
            "3",
            "--vehicle",
            "compact_ev",
            "--out",
            "r",
        ],
        cwd=away,
        capture_output=True,
        text=True,
        env=env,
    )
    assert res.returncode == 0, res.stderr
