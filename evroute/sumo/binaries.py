"""Locating and running SUMO: the binaries of the eclipse-sumo wheel, its tools, and ``libsumo``.

Every failure a user can cause (SUMO not installed, a tool failing on bad input, a simulation aborting) is raised
as :class:`SumoError` with one line naming the program and its first error message.  SUMO's processes never
outlive evroute, even killed with SIGKILL (:func:`spawn_sumo_program`).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import io
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from evroute.errors import DataError
from evroute.network.netconvert import error_line, sumo_wheel_home


class SumoError(DataError):
    """SUMO is missing, or one of its programs failed (one-line message)."""


def sumo_home() -> Path:
    """``SUMO_HOME``: the eclipse-sumo wheel's folder, else ``$SUMO_HOME``.

    Raises:
        SumoError: if neither exists.
    """
    wheel = sumo_wheel_home()
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


#: runs a SUMO Python tool (``python -c _TOOL_BOOT tool.py args``): on SIGTERM (the parent-death signal of tool
#: children) it kills its whole process group, so programs the tool started (randomTrips.py's duarouter) go too
_TOOL_BOOT = (
    "import os, runpy, signal, sys; "
    "signal.signal(signal.SIGTERM, lambda *_: os.killpg(0, signal.SIGKILL)); "
    "sys.argv = sys.argv[1:]; sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0]))); "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)
_LIVE: set[subprocess.Popen[str]] = set()


def _parent_death_signal(sig: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` making the child receive ``sig`` when this process dies (Linux ``PR_SET_PDEATHSIG``).

    The setting survives ``exec`` (not ``fork``: each child's own children are the child's business).  A child
    whose parent died between ``fork`` and ``prctl`` signals itself.  ``None`` where prctl is not available.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(1, sig, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        if os.getppid() != parent:
            os.kill(os.getpid(), sig)

    return preexec


def spawn_sumo_program(
    cmd: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    stdout: int | None = subprocess.PIPE,
    stderr: int | None = subprocess.PIPE,
    stdin: int | None = subprocess.DEVNULL,
) -> subprocess.Popen[str]:
    """Start a SUMO program or tool (a ``.py`` first element) that cannot outlive this process.

    The child leads a process group of its own and gets a parent-death signal (Linux): SIGKILL for a program,
    SIGTERM for a Python tool, which then kills its group (programs it started included).  Children still running
    when this interpreter exits normally are killed too.  Stop one early with :func:`stop_sumo_program`.

    Raises:
        SumoError: the program cannot be started.
    """
    argv = [str(c) for c in cmd]
    sig = signal.SIGKILL
    if argv[0].endswith(".py"):
        argv = [sys.executable, "-c", _TOOL_BOOT, *argv]
        sig = signal.SIGTERM
    try:
        proc = subprocess.Popen(
            argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            text=True,
            env=sumo_env(),
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_parent_death_signal(sig),
        )
    except OSError as exc:
        raise SumoError(f"cannot run {argv[0]}: {exc}") from None
    _LIVE.add(proc)
    return proc


def stop_sumo_program(proc: subprocess.Popen[str]) -> None:
    """Kill a child of :func:`spawn_sumo_program` and every process of its group, and reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.communicate(timeout=10)
    _LIVE.discard(proc)


@atexit.register
def _stop_all() -> None:
    for proc in list(_LIVE):
        stop_sumo_program(proc)


def run_sumo_program(
    cmd: Sequence[str | os.PathLike[str]],
    what: str,
    *,
    timeout_s: float = 3600.0,
    cwd: str | os.PathLike[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a SUMO program or tool to completion (:func:`spawn_sumo_program`: it dies with this process).

    Args:
        cmd: the command; a ``.py`` first element runs with this Python interpreter.
        what: what is being done, for the error message (e.g. ``"duarouter on monaco.net.xml"``).

    Raises:
        SumoError: the program cannot be started, fails (its first error line) or times out.
    """
    proc = spawn_sumo_program(cmd, cwd=cwd)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise SumoError(f"{what} timed out after {timeout_s:g} s") from None
    finally:  # also on KeyboardInterrupt: the child's group does not get the terminal's Ctrl-C
        stop_sumo_program(proc)
    if proc.returncode != 0:
        raise SumoError(f"{what} failed: {error_line(err + chr(10) + out)}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


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


__all__ = [
    "SumoError",
    "import_libsumo",
    "run_sumo_program",
    "spawn_sumo_program",
    "stop_sumo_program",
    "sumo_binary",
    "sumo_env",
    "sumo_home",
    "sumo_tool",
]
