"""SUMO's processes never outlive evroute: SIGKILL of a parent running a recording (or a Python tool) kills them."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from evroute.sumo.binaries import SumoError, run_sumo_program, spawn_sumo_program, stop_sumo_program, sumo_binary

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal: Linux only")


def _start_parent(code: str) -> tuple[subprocess.Popen[bytes], psutil.Process]:
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return proc, psutil.Process(proc.pid)


def _wait_for(parent: psutil.Process, names: set[str], n: int, timeout_s: float = 60.0) -> list[psutil.Process]:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        found = []
        for c in parent.children(recursive=True):
            try:
                if c.name() in names:
                    found.append(c)
            except psutil.Error:
                continue
        if len(found) >= n:
            return found
        time.sleep(0.05)
    raise AssertionError(f"no {names} child appeared within {timeout_s} s")


def _kill_and_check(proc: subprocess.Popen[bytes], children: list[psutil.Process]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, [p.pid for p in alive]


@pytest.mark.slow
def test_sumo_dies_with_a_killed_recording(tmp_path: Path) -> None:
    """A recording whose one vehicle departs after 10^9 s keeps ``sumo`` stepping until the parent is SIGKILLed."""
    nod, edg = tmp_path / "n.nod.xml", tmp_path / "n.edg.xml"
    nod.write_text('<nodes><node id="n0" x="0" y="0"/><node id="n1" x="500" y="0"/></nodes>')
    edg.write_text('<edges><edge id="a" from="n0" to="n1"/></edges>')
    net = tmp_path / "r.net.xml"
    run_sumo_program([sumo_binary("netconvert"), "-n", nod, "-e", edg, "-o", net], "netconvert")
    routes = tmp_path / "r.rou.xml"
    routes.write_text('<routes><vehicle id="p" depart="1e9"><route edges="a"/></vehicle></routes>')
    proc, parent = _start_parent(f"""
        from evroute.sumo.record import record_traversals
        record_traversals({str(net)!r}, [{str(routes)!r}])
    """)
    (sumo,) = _wait_for(parent, {"sumo"}, 1)
    _kill_and_check(proc, [sumo])


@pytest.mark.slow
def test_tool_and_its_children_die_with_the_parent(tmp_path: Path) -> None:
    """A Python tool (like randomTrips.py, which starts duarouter) dies with its parent, and so does its child."""
    tool = tmp_path / "tool.py"
    tool.write_text("import subprocess\nsubprocess.run(['sleep', '300'])\n")
    proc, parent = _start_parent(f"""
        from evroute.sumo.binaries import run_sumo_program
        run_sumo_program([{str(tool)!r}], "tool")
    """)
    (sleeper,) = _wait_for(parent, {"sleep"}, 1)
    tool_proc = sleeper.parent()
    _kill_and_check(proc, [sleeper, tool_proc])


def test_stop_and_timeout_kill_the_group(tmp_path: Path) -> None:
    tool = tmp_path / "tool.py"
    tool.write_text("import subprocess\nsubprocess.run(['sleep', '300'])\n")
    p = spawn_sumo_program([tool])
    (sleeper,) = _wait_for(psutil.Process(p.pid), {"sleep"}, 1)
    stop_sumo_program(p)
    assert p.returncode is not None
    psutil.wait_procs([sleeper], timeout=10)
    assert not sleeper.is_running()
    with pytest.raises(SumoError, match="timed out after 0.5 s"):
        run_sumo_program([tool], "tool", timeout_s=0.5)
