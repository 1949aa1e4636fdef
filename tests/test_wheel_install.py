"""The built wheel: what it holds (every file of ``evroute/``, no study), and, installed into a fresh venv outside the
checkout, that it runs ``evroute demo`` (package data included).

The wheel is built once per module from a clean copy of the checkout that includes ``studies/``, so the listing test
shows the packaging leaves the studies out (``[tool.setuptools.packages.find]``), not that they were never there.  The
fresh venv sees the project venv's dependencies through a ``.pth`` line (no second torch download) but not its
editable evroute (``.pth`` files of an added path are not processed), and the test checks that ``evroute`` is
imported from the new venv.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
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


#: modules of the study code that left the package for ``studies/`` (issue 33); none may come back into the wheel
STUDY_MODULES = (
    "evroute/experiments/report.py",
    "evroute/experiments/bench.py",
    "evroute/experiments/bo_protocols.py",
    "evroute/experiments/reference_book.py",
    "evroute/bo/timevarying/experiment.py",
    "evroute/bo/timevarying/report.py",
)
#: name patterns of study modules: a report builder, a study runner, a benchmark
STUDY_NAMES = ("*report*.py", "*sumo_bandit*.py", "*sumo_live_routes*.py", "*gp_vs_bi*.py", "*bench*.py")


def _shipped(root: Path) -> set[str]:
    """The files under ``root/evroute`` that the wheel must hold: the tracked ones (git), else every file there."""
    proc = subprocess.run(["git", "ls-files", "evroute"], cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode == 0 and proc.stdout.strip():
        return {f for f in proc.stdout.split() if (root / f).is_file()}
    return {p.relative_to(root).as_posix() for p in (root / "evroute").rglob("*") if p.is_file()} - {
        p.relative_to(root).as_posix() for p in (root / "evroute").rglob("__pycache__/*")
    }


def study_files(names: set[str]) -> list[str]:
    """The names of a wheel listing that are study code: under ``studies/``, or a study module of ``evroute``."""
    return sorted(
        n
        for n in names
        if n.startswith("studies/") or n in STUDY_MODULES or any(fnmatch.fnmatch(n, p) for p in STUDY_NAMES)
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built (``pip wheel --no-deps``) from a clean copy of the checkout, ``studies/`` included."""
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("needs the source checkout")
    tmp_path = tmp_path_factory.mktemp("wheel")
    src = tmp_path / "src"  # a clean copy: no stale build/ or egg-info of the checkout can enter the wheel
    for tree in ("evroute", "studies"):
        shutil.copytree(ROOT / tree, src / tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    wheels = tmp_path / "wheels"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *_isolation(), str(src), "-w", str(wheels)],
        check=True,
        env=env,
        capture_output=True,
        timeout=300,
    )
    (built,) = wheels.glob("evroute-*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_holds_every_evroute_file_and_no_study(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert not study_files(names), f"study code in the wheel: {study_files(names)}"
    missing = sorted(_shipped(ROOT) - names)
    assert not missing, f"files of evroute/ missing from the wheel (package-data in pyproject.toml?): {missing}"
    assert "evroute/py.typed" in names and "evroute/resources/routes.json" in names
    package = {n for n in names if not n.startswith("evroute-")}  # but the .dist-info folder
    assert package == {n for n in package if n.startswith("evroute/")}, sorted(package)


def test_the_listing_check_is_not_vacuous() -> None:
    """A study folder, a moved study module and a report builder are each caught; library modules are not."""
    listing = {
        "studies/gp_vs_bi/run.py",
        "evroute/experiments/report.py",
        "evroute/experiments/gp_vs_bi_report.py",
        "evroute/bo/timevarying/experiment.py",
        "evroute/experiments/runner.py",
        "evroute/bo/timevarying/policies.py",
    }
    assert study_files(listing) == sorted(
        listing - {"evroute/experiments/runner.py", "evroute/bo/timevarying/policies.py"}
    )
    assert study_files(_shipped(ROOT)) == []  # the package itself holds no study module


@pytest.mark.slow
def test_wheel_installs_outside_the_checkout_and_runs_the_demo(wheel: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # a checkout on the path would shadow the wheel
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", OMP_NUM_THREADS="1")
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
