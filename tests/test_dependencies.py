"""Every third-party module that ``evroute/`` or the tests import is a declared dependency.

An undeclared import works on a developer's machine (the package happens to be installed) and fails on a clean
install.  The check parses every ``import`` statement (``ast``, so imports inside functions count too), maps the
top-level module to its distribution with :func:`importlib.metadata.packages_distributions` and looks the
distribution up in ``pyproject.toml``:

* a module-level import of ``evroute/`` must be a hard dependency (``[project] dependencies``): importing the
  package must not fail;
* an import inside a function of ``evroute/`` may also be an optional extra (``ray``: the sweep checks for it and
  says which extra to install);
* the tests may also use the ``test`` extra (and, lazily, the other extras and the build backend).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: modules that exist only for type checkers (typeshed's helpers; imported under ``TYPE_CHECKING``)
TYPE_CHECKER_ONLY = {"_typeshed"}


def _norm(name: str) -> str:
    """PEP 503 normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(reqs: list[str]) -> set[str]:
    names = set()
    for req in reqs:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
        assert m, f"unparsable requirement {req!r}"
        names.add(_norm(m.group(1)))
    return names


def _declared() -> tuple[set[str], dict[str, set[str]], set[str]]:
    """Hard dependencies, extras (name -> distributions) and the build requirements."""
    toml = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = toml["project"]
    extras = {k: _requirement_names(v) for k, v in project.get("optional-dependencies", {}).items()}
    return _requirement_names(project["dependencies"]), extras, _requirement_names(toml["build-system"]["requires"])


def _type_checking_lines(tree: ast.Module) -> set[int]:
    """Line numbers inside ``if TYPE_CHECKING:`` blocks (never executed)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            lines |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _outside_functions(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and its descendants that are not inside a function body (those run when the module is imported)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _outside_functions(child)


def imports(path: Path) -> list[tuple[str, bool, int]]:
    """``(top-level module, runs at import time, line)`` of every absolute import in a Python file.

    Imports outside function bodies (module level, under ``if``/``try``, in class bodies) run at import time, except
    under ``if TYPE_CHECKING:``; imports inside functions and methods are lazy.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    eager = {id(n) for n in _outside_functions(tree)}
    skip = _type_checking_lines(tree)
    out: list[tuple[str, bool, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        at_import = id(node) in eager and node.lineno not in skip
        out.extend((n.split(".")[0], at_import, node.lineno) for n in names)
    return out


def undeclared(files: list[Path], local: set[str], hard: set[str], soft: set[str], root: Path = ROOT) -> list[str]:
    """``file:line module (distributions)`` of every import whose distribution is not declared.

    ``hard``: allowed everywhere; ``soft``: allowed only where the import is lazy (inside a function or under
    ``TYPE_CHECKING``).  ``local``: top-level names of the project's own modules.
    """
    dists = packages_distributions()
    bad = []
    for path in files:
        for mod, at_import, line in imports(path):
            if mod in sys.stdlib_module_names or mod in TYPE_CHECKER_ONLY or mod in local:
                continue
            names = {_norm(d) for d in dists.get(mod, [])}
            where = f"{path.relative_to(root)}:{line} {mod}"
            if not names:
                bad.append(f"{where} (no installed distribution provides it)")
            elif not names & (hard if at_import else hard | soft):
                bad.append(f"{where} ({', '.join(sorted(names))})")
    return bad


@pytest.mark.slow
def test_package_imports_are_declared_dependencies() -> None:
    hard, extras, _ = _declared()
    optional = set().union(*(v for k, v in extras.items() if k != "test"))
    files = sorted((ROOT / "evroute").rglob("*.py"))
    assert len(files) > 50
    assert undeclared(files, {"evroute"}, hard, optional) == []


@pytest.mark.slow
def test_test_imports_are_declared() -> None:
    hard, extras, build = _declared()
    tests = ROOT / "tests"
    files = sorted(tests.rglob("*.py"))
    local = {"evroute", "tests"} | {p.stem for p in files} | {p.name for p in tests.iterdir() if p.is_dir()}
    allowed = hard | extras["test"]
    # lazy imports may also use another extra or the build backend (the wheel test builds with setuptools)
    assert undeclared(files, local, allowed, set().union(build, *extras.values())) == []


def test_checker_flags_an_undeclared_import(tmp_path: Path) -> None:
    """The check itself: an eager import of a non-dependency is reported; a lazy one of an extra, an import under
    ``TYPE_CHECKING`` of an extra and the standard library are not."""
    mod = tmp_path / "probe.py"
    mod.write_text(
        "import json\nimport numpy\nimport pytest\nfrom typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n    import ray\n\n\ndef f():\n    import ray\n    import hypothesis\n"
    )
    bad = undeclared([mod], set(), hard={"numpy"}, soft={"ray"}, root=tmp_path)
    assert bad == ["probe.py:3 pytest (pytest)", "probe.py:12 hypothesis (hypothesis)"]
