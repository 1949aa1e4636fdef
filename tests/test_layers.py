"""Layers that only point down: no evroute module imports a module of a higher layer.

The layers, bottom to top.  A module may import its own layer and the layers below, except that the entries of an
*independent* layer (marked ``|``) may not import each other.  The longest matching prefix places a module; a
module no layer names fails the test, so a new package is placed deliberately.

====  ========================================  ===========================================================
  0   errors, validation, io, paths, stats,     utilities (``stats``: mean, s.e., intervals)
      version
  1   energy                                    vehicle physics, Eq. 8 (takes a network as a plain argument)
  2   network                                   road networks, loaders, DEM (``RoadNetwork.to_networkx``
                                                attaches physics energies, hence above ``energy``)
  3   linegraph, routes, traces                 line graph, edge contexts, named routes, trip logs
  4   kernels                                   graph Matérn and Matérn kernels
  5   oracle, arms                              route search on the line graph, rectified oracle weights; the
                                                bandit's arms (edges or turns) and their oracle
  6   sumo | bo                                 SUMO tooling (recording, export) | single-arm BO library
  7   environments | models                     truth, feedback, exact optimum | edge models and their
                                                builders (built from a ModelPrior, never from an environment)
  8   policies                                  index policies over an edge posterior
  9   bandit, routeset                          the learning loops
 10   experiments                               composition root: model registry, runner, sweeps
 11   cli, cli_learn, driver, maps, viz,        user-facing entry points (driver answers, the server, package
      service, evroute                          root)
====  ========================================  ===========================================================

Every import counts: module level, inside functions, under ``TYPE_CHECKING``, and ``"module:attr"`` strings (the
lazy registry entries of :mod:`evroute.experiments.registry`).  A second rule: no module imports another module's
private name (``from evroute.x import _y``) or a private module of another package; the exceptions are listed in
:data:`PRIVATE_ALLOWED` with their reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "evroute"

#: (entries, independent): bottom to top; see the module docstring
LAYERS: tuple[tuple[tuple[str, ...], bool], ...] = (
    (
        ("evroute.errors", "evroute.validation", "evroute.io", "evroute.paths", "evroute.stats", "evroute.version"),
        False,
    ),
    (("evroute.energy",), False),
    (("evroute.network",), False),
    (("evroute.linegraph", "evroute.routes", "evroute.traces"), False),
    (("evroute.kernels",), False),
    (("evroute.oracle", "evroute.arms"), False),
    (("evroute.sumo", "evroute.bo"), True),
    (("evroute.environments", "evroute.models"), True),
    (("evroute.policies",), False),
    (("evroute.bandit", "evroute.routeset"), False),
    (("evroute.experiments",), False),
    (
        (
            "evroute.cli",
            "evroute.cli_learn",
            "evroute.driver",
            "evroute.maps",
            "evroute.viz",
            "evroute.service",
            "evroute.__main__",
            "evroute",
        ),
        False,
    ),
)

#: (importer, imported module, name) of private imports that are allowed, with the reason
PRIVATE_ALLOWED: dict[tuple[str, str, str], str] = {
    ("evroute.models.gp_exact", "evroute.models.exact_posterior", "_chol"): "GP core refactor replaces it",
}

_STRING_IMPORT = re.compile(r"^(evroute(?:\.\w+)*):\w+$")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def position(module: str) -> tuple[int, str] | None:
    """``(layer index, entry)`` of the longest entry that is a prefix (at a dot) of ``module``; None if none is."""
    best: tuple[int, str] | None = None
    for i, (entries, _) in enumerate(LAYERS):
        for e in entries:
            if (module == e or module.startswith(e + ".")) and (best is None or len(e) > len(best[1])):
                best = (i, e)
    return best


def _is_module(root: Path, dotted: str) -> bool:
    rel = dotted.replace(".", "/")
    return (root.parent / f"{rel}.py").exists() or (root.parent / rel / "__init__.py").exists()


def imports_of(path: Path, root: Path = ROOT) -> list[tuple[str, str | None, int]]:
    """``(module, imported name or None, line)`` of every evroute import in ``path`` (see the module docstring)."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[str, str | None, int]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names if a.name.split(".")[0] == "evroute"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "evroute":
                for a in node.names:  # ``from evroute.x import y`` may import the module evroute.x.y
                    sub = f"{target}.{a.name}"
                    out.append((sub, None, node.lineno) if _is_module(root, sub) else (target, a.name, node.lineno))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = _STRING_IMPORT.match(node.value)
            if m:
                out.append((m.group(1), node.value.partition(":")[2], node.lineno))
    return out


def upward_imports(root: Path = ROOT) -> list[str]:
    """Every import of a higher layer under ``root``, as ``importer:line imports target (layer i > j)``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        importer = module_name(path, root)
        own = position(importer)
        for target, _, line in imports_of(path, root):
            theirs = position(target)
            if own is None or theirs is None:
                continue
            if theirs[0] > own[0]:
                found.append(f"{importer}:{line} imports {target} (layer {theirs[0]} > {own[0]})")
            elif theirs[0] == own[0] and LAYERS[own[0]][1] and theirs[1] != own[1]:
                found.append(f"{importer}:{line} imports {target} (independent of {own[1]} in layer {own[0]})")
    return found


def _private_package(module: str) -> str | None:
    """The package a private module (a dotted part starting with ``_``) belongs to, else None."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def private_imports(root: Path = ROOT) -> list[str]:
    """Private names of other modules and private modules of other packages imported under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        importer = module_name(path, root)
        for target, name, line in imports_of(path, root):
            owner = _private_package(target)
            if owner is not None and not (importer == owner or importer.startswith(owner + ".")):
                found.append(f"{importer}:{line} imports the private module {target}")
            if name and name.startswith("_") and not name.startswith("__") and target != importer:
                if (importer, target, name) not in PRIVATE_ALLOWED:
                    found.append(f"{importer}:{line} imports the private name {target}.{name}")
    return found


def test_every_module_has_a_layer():
    unplaced = [module_name(p) for p in sorted(ROOT.rglob("*.py")) if position(module_name(p)) is None]
    assert not unplaced, f"modules in no layer (add them to LAYERS in {Path(__file__).name}): {unplaced}"


def test_no_module_imports_a_higher_layer():
    found = upward_imports()
    assert not found, "lower layers import higher ones:\n" + "\n".join(found)


def test_no_private_cross_module_imports():
    found = private_imports()
    assert not found, "private cross-module imports:\n" + "\n".join(found)


def _tree(root: Path, files: dict[str, str]) -> Path:
    """A fake ``evroute`` package under ``root`` with ``files`` (relative path -> source) and empty inits."""
    pkg = root / "evroute"
    for rel, text in files.items():
        f = pkg / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    for d in [pkg, *(p for p in pkg.rglob("*") if p.is_dir())]:
        (d / "__init__.py").touch()
    return pkg


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from evroute.bandit import RoutingBandit\n", "evroute.models.bad:1 imports evroute.bandit (layer 9 > 7)"),
        (
            "def f():\n    import evroute.experiments.runner\n",
            "evroute.models.bad:2 imports evroute.experiments.runner",
        ),
        ("REG = {'x': 'evroute.routeset:build'}\n", "evroute.models.bad:1 imports evroute.routeset (layer 9 > 7)"),
        (
            "from ..environments import base\n",
            "evroute.models.bad:1 imports evroute.environments.base (independent of evroute.models in layer 7)",
        ),
        ("from evroute.kernels import matern\n", None),
    ],
)
def test_the_check_reports_upward_imports(tmp_path, source, expected):
    """A models module that reaches up (plain, lazy, registry string, relative) is reported; downward is not."""
    root = _tree(tmp_path, {"models/bad.py": source, "environments/base.py": "", "kernels/matern.py": ""})
    found = upward_imports(root)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(expected), found


def test_the_check_reports_private_imports(tmp_path):
    root = _tree(
        tmp_path,
        {
            "network/_graph.py": "",
            "network/netconvert.py": "def _hidden():\n    pass\n",
            "network/ok.py": "from evroute.network._graph import x\n",
            "sumo/a.py": "from evroute.network.netconvert import _hidden\n",
            "sumo/b.py": "from evroute.network import _graph\n",
        },
    )
    assert private_imports(root) == [
        "evroute.sumo.a:1 imports the private name evroute.network.netconvert._hidden",
        "evroute.sumo.b:1 imports the private module evroute.network._graph",
    ]
