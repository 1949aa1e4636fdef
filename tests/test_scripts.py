"""The study scripts under ``scripts/``: every path quoted in the docs exists, every script's ``--help`` runs.

Scripts are run as ``python scripts/<study>/<name>.py`` and import only from :mod:`evroute` (no ``sys.path``
edits, no loading of other scripts by file name), so a script that still imports a sibling script fails here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "scripts").rglob("*.py"))
QUOTED = re.compile(r"(?<![\w/.-])scripts/[\w./-]+?\.(?:py|sh)\b")
PATH_HACKS = re.compile(
    r"sys\.path\.(?:insert|append)|spec_from_file_location|noqa: E402|^\s*(?:import|from) _[A-Za-z]\w*", re.M
)

# Run every script's ``--help`` in ONE child process (imports are shared, about 3 s of CPU for all of them): the
# child executes each file as ``__main__`` with ``argv = [path, "--help"]`` and reports what did not exit with 0.
_HELP_CHILD = r"""
import contextlib, io, runpy, sys
bad = []
for path in sys.argv[1:]:
    sys.argv = [path, "--help"]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(path, run_name="__main__")
        bad.append(f"{path}: --help did not exit")
    except SystemExit as e:
        if e.code not in (0, None):
            bad.append(f"{path}: exit {e.code}")
        elif "usage:" not in out.getvalue():
            bad.append(f"{path}: no usage text")
    except Exception as e:  # noqa: BLE001 - reported to the parent
        bad.append(f"{path}: {type(e).__name__}: {e}")
print("\n".join(bad))
"""


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "scripts").rglob("*"))]


def test_every_quoted_script_path_exists() -> None:
    quoted: dict[str, set[str]] = {}
    for f in _doc_files():
        if f.is_file():
            for m in QUOTED.findall(f.read_text(encoding="utf-8")):
                quoted.setdefault(m, set()).add(f.relative_to(ROOT).as_posix())
    assert len(quoted) >= 20, "expected the docs to quote the study scripts"
    missing = {p: sorted(where) for p, where in quoted.items() if not (ROOT / p).is_file()}
    assert not missing, f"script paths quoted in the docs that do not exist: {missing}"


def test_scripts_are_grouped_and_import_only_from_evroute() -> None:
    assert SCRIPTS, "no scripts found"
    top = [p for p in SCRIPTS if p.count("/") == 1]
    assert not top, f"scripts outside a study folder: {top}"
    hacks = [p for p in SCRIPTS if PATH_HACKS.search((ROOT / p).read_text(encoding="utf-8"))]
    assert not hacks, f"scripts with path hacks or sibling imports: {hacks}"


def test_every_script_help_runs() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _HELP_CHILD, *SCRIPTS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    bad = [line for line in proc.stdout.splitlines() if line.strip()]
    assert not bad, "\n".join(bad)
