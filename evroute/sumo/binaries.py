"""Locating and running SUMO: the binaries of the eclipse-sumo wheel, its tools, and ``libsumo``.

Every failure a user can cause (SUMO not installed, a tool failing on bad input, a simulation aborting) is raised
as :class:`SumoError` with one line naming the program and its first error message.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from evroute.errors import DataError
from evroute.network.netconvert import _error_line, _sumo_wheel_home


class SumoError(DataError):
    """SUMO is missing, or one of its programs failed (one-line message)."""


def sumo_home() -> Path:
    """``SUMO_HOME``: the eclipse-sumo wheel's folder, else ``$SUMO_HOME``.

    Raises:
        SumoError: if neither exists.
    """
    wheel = _sumo_wheel_home()
    if wheel is not None and (wheel / "bin").is_dir():
        return wheel
    env = os.environ.get("SUMO_HOME")
    if env and (Path(env) / "bin").is_dir():
        return Path(env)
    raise SumoError("SUMO not found: install eclipse-sumo (pip install eclipse-sumo==1.28.0) or set SUMO_HOME")


def sumo_binary(name: str = "sumo") -> Path:
    """Path of SUMO program ``name`` (``sumo``, ``duarouter``, ``netconvert``...), from SUMO_HOME or ``PATH``."""
    try:
        exe = sumo_home() / "bin" / name
        if exe.is_file() and os.access(exe, os.X_OK):
            return exe
    except SumoError:
        pass
    found = shutil.which(name)
    if found:
        return Path(found)
    raise SumoError(f"SUMO program {name!r} not found: install eclipse-sumo (pip install eclipse-sumo==1.28.0)")


def sumo_tool(relpath: str) -> Path:
    """Path of a SUMO Python tool, e.g. ``randomTrips.py`` (relative to ``SUMO_HOME/tools``)."""
    p = sumo_home() / "tools" / relpath
    if not p.is_file():
        raise SumoError(f"SUMO tool {relpath} not found under {p.parent}")
    return p


def sumo_env() -> dict[str, str]:
    """Environment for SUMO child processes: ``SUMO_HOME`` and the wheel's PROJ database."""
    env = dict(os.environ)
    home = sumo_home()
    env["SUMO_HOME"] = str(home)
    proj = home / "data" / "proj"
    if proj.is_dir():
        env["PROJ_DATA"] = env["PROJ_LIB"] = str(proj)
    return env


def run_sumo_program(cmd: Sequence[str | os.PathLike[str]], what: str, *, timeout_s: float = 3600.0,
                     cwd: str | os.PathLike[str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a SUMO program or tool; :class:`SumoError` with its first error line when it fails.

    Args:
        cmd: the command; a ``.py`` first element runs with this Python interpreter.
        what: what is being done, for the error message (e.g. ``"duarouter on monaco.net.xml"``).
    """
    argv = [str(c) for c in cmd]
    if argv[0].endswith(".py"):
        argv = [sys.executable, *argv]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=sumo_env(), cwd=cwd,
                              check=False)
    except subprocess.TimeoutExpired:
        raise SumoError(f"{what} timed out after {timeout_s:g} s") from None
    except OSError as exc:
        raise SumoError(f"cannot run {argv[0]}: {exc}") from None
    if proc.returncode != 0:
        raise SumoError(f"{what} failed: {_error_line(proc.stderr + chr(10) + proc.stdout)}")
    return proc


def import_libsumo() -> ModuleType:
    """Import ``libsumo`` (SUMO as a library), silencing its import-time pyarrow version note.

    Raises:
        SumoError: if libsumo is not installed.
    """
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            import libsumo
    except ImportError as exc:
        raise SumoError(f"libsumo is not available ({exc}): pip install libsumo==1.28.0") from None
    return libsumo


__all__ = ["SumoError", "import_libsumo", "run_sumo_program", "sumo_binary", "sumo_env", "sumo_home", "sumo_tool"]
