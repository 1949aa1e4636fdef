"""Layers that only point down: no evroute module imports a module of a higher layer.

The layers, bottom to top.  A module may import its own layer and the layers below, except that the entries of an
*independent* layer (marked ``|``) may not import each other.  The longest matching prefix places a module; a
module no layer names fails the test, so a new package is placed deliberately.

====  ========================================  ===========================================================
  0   errors, validation, io, paths, stats,     utilities (``stats``: mean, s.e., intervals; ``compiled``: the
      version, compiled                         numba decorators of the compiled kernels)
  1   energy                                    vehicle physics, Eq. 8 (takes a network as a plain argument)
  2   network                                   road networks, loaders, DEM (``RoadNetwork.to_networkx``
                                                attaches physics energies, hence above ``energy``)
  3   linegraph, routes, traces                 line graph, edge contexts, named routes, trip logs
  4   kernels                                   graph Matérn and Matérn kernels
  5   oracle, arms, cch, cch_junction, search   route search on the line graph, rectified oracle weights; the
                                                bandit's arms (edges or turns) and their oracle; CCH queries;
                                                compiled searches (lazy Thompson rounds, one-to-all Dijkstra)
  6   sumo | bo                                 SUMO tooling (recording, export) | single-arm BO library
  7   environments | models                     truth, feedback, exact optimum | edge models and their
                                                builders (built from a ModelPrior, never from an environment)
  8   policies                                  index policies over an edge posterior
  9   bandit, routeset                          the learning loops
 10   experiments                               composition root: environment -> model prior, learners, runner,
                                                sweeps
 11   cli, driver, charging, service, maps,     user-facing entry points (the command-line package ``cli``,
      viz, evroute                              driver answers, charging plans, the server, package root;
                                                ``evroute`` places only ``evroute/__init__.py``); ``charging``
                                                builds on ``driver`` and ``maps``
====  ========================================  ===========================================================

Every import counts: module level, inside functions and ``"module:attr"`` strings (the lazy registry entries of
:mod:`evroute.experiments.registry`).  The checks:

* **placed**: every module has a layer; the bare ``"evroute"`` entry places only ``evroute/__init__.py``.
* **direction**: no import of a higher layer, nor of another entry of an independent layer.
* **no circle**: the graph of runtime imports between modules (a package's ``__init__`` is a node; inside a layer
  too) has no cycle; a lazy import inside a function is an edge like any other, so it cannot hide a circle.
* **type-only imports** (under ``if TYPE_CHECKING:``) are exempt from the direction rule and are no edge of the
  circle graph, because they never run; in exchange they may only type: the module has
  ``from __future__ import annotations`` (annotations are never evaluated) and every name such an import binds is
  used only inside annotations (a runtime use, e.g. ``isinstance``, is reported).  So ``energy`` may type its
  ``network`` parameters with a type-only import of :mod:`evroute.network` while ``network`` imports ``energy``.
* **studies**: no module of ``evroute`` imports ``studies`` (the studies beside the package, not in the wheel),
  type-only or not.
* **private**: no module imports another module's private name (``from evroute.x import _y``) or a private module
  of another package; the exceptions are listed in :data:`PRIVATE_ALLOWED` with their reason.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent / "evroute"

#: (entries, independent): bottom to top; see the module docstring
LAYERS: tuple[tuple[tuple[str, ...], bool], ...] = (
    (
        (
            "evroute.errors",
            "evroute.validation",
            "evroute.io",
            "evroute.paths",
            "evroute.stats",
            "evroute.version",
            "evroute.compiled",
        ),
        False,
    ),
    (("evroute.energy",), False),
    (("evroute.network",), False),
    (("evroute.linegraph", "evroute.routes", "evroute.traces"), False),
    (("evroute.kernels",), False),
    (("evroute.oracle", "evroute.arms", "evroute.cch", "evroute.cch_junction", "evroute.search"), False),
    (("evroute.sumo", "evroute.bo"), True),
    (("evroute.environments", "evroute.models"), True),
    (("evroute.policies",), False),
    (("evroute.bandit", "evroute.routeset"), False),
    (("evroute.experiments",), False),
    (
        (
            "evroute.cli",
            "evroute.driver",
            "evroute.charging",
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

_STRING_IMPORT = re.compile(r"^((?:evroute|studies)(?:\.\w+)*):\w+$")
#: the package whose bare layer entry places only its ``__init__``
PACKAGE = "evroute"
#: the studies beside the package: never imported by it
STUDIES = "studies"


class Import(NamedTuple):
    """One import of an evroute (or studies) module: the module, the name imported from it (None for the module
    itself), the line, and whether it sits under ``if TYPE_CHECKING:``."""

    target: str
    name: str | None
    line: int
    type_only: bool = False


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path = ROOT) -> list[tuple[Path, str]]:
    """``(path, module name)`` of every module under ``root``, sorted by path."""
    return [(p, module_name(p, root)) for p in sorted(root.rglob("*.py"))]


def position(module: str) -> tuple[int, str] | None:
    """``(layer index, entry)`` of the longest entry that is a prefix (at a dot) of ``module``; None if none is.  The
    bare package entry (``"evroute"``) matches only the package itself."""
    best: tuple[int, str] | None = None
    for i, (entries, _) in enumerate(LAYERS):
        for e in entries:
            inside = e != PACKAGE and module.startswith(e + ".")
            if (module == e or inside) and (best is None or len(e) > len(best[1])):
                best = (i, e)
    return best


def _is_module(root: Path, dotted: str) -> bool:
    rel = dotted.replace(".", "/")
    return (root.parent / f"{rel}.py").exists() or (root.parent / rel / "__init__.py").exists()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, type_only: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Every node under ``node`` with whether it lies in the body of an ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        yield child, type_only
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield stmt, True
                yield from _walk(stmt, True)
            for stmt in child.orelse:
                yield stmt, type_only
                yield from _walk(stmt, type_only)
        else:
            yield from _walk(child, type_only)


def imports_of(path: Path, root: Path = ROOT) -> list[Import]:
    """Every evroute and studies import in ``path`` (see the module docstring)."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    ours = (root.name, STUDIES)
    out: list[Import] = []
    for node, type_only in _walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [Import(a.name, None, node.lineno, type_only) for a in node.names if a.name.split(".")[0] in ours]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] in ours:
                for a in node.names:  # ``from evroute.x import y`` may import the module evroute.x.y
                    sub = f"{target}.{a.name}"
                    if _is_module(root, sub):
                        out.append(Import(sub, None, node.lineno, type_only))
                    else:
                        out.append(Import(target, a.name, node.lineno, type_only))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = _STRING_IMPORT.match(node.value)
            if m:
                out.append(Import(m.group(1), node.value.partition(":")[2], node.lineno, type_only))
    return out


def unplaced(root: Path = ROOT) -> list[str]:
    """The modules under ``root`` that no layer places."""
    return [m for _, m in modules(root) if position(m) is None]


def upward_imports(root: Path = ROOT) -> list[str]:
    """Every runtime import of a higher layer (or of another entry of an independent layer) under ``root``, as
    ``importer:line imports target (layer i > j)``; type-only imports are exempt (module docstring)."""
    found = []
    for path, importer in modules(root):
        own = position(importer)
        for imp in imports_of(path, root):
            theirs = position(imp.target)
            if own is None or theirs is None or imp.type_only:
                continue
            if theirs[0] > own[0]:
                found.append(f"{importer}:{imp.line} imports {imp.target} (layer {theirs[0]} > {own[0]})")
            elif theirs[0] == own[0] and LAYERS[own[0]][1] and theirs[1] != own[1]:
                found.append(f"{importer}:{imp.line} imports {imp.target} (independent of {own[1]} in layer {own[0]})")
    return found


def import_graph(root: Path = ROOT) -> nx.DiGraph:
    """The runtime imports between the modules under ``root``: an edge ``a -> b`` (attribute ``line``) when ``a``
    imports ``b`` anywhere (module level, in a function, a registry string), not under ``TYPE_CHECKING``."""
    g = nx.DiGraph()
    for path, importer in modules(root):
        g.add_node(importer)
        for imp in imports_of(path, root):
            if not imp.type_only and imp.target != importer and imp.target.split(".")[0] == root.name:
                g.add_edge(importer, imp.target, line=imp.line)
    return g


def circles(root: Path = ROOT) -> list[str]:
    """Each import circle under ``root`` (a strongly connected set of modules), as ``a:line -> b:line -> ... -> a``
    along one of its cycles."""
    g = import_graph(root)
    found = []
    for comp in sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1):
        cycle = next(nx.simple_cycles(g.subgraph(comp)))
        steps = [f"{a}:{g.edges[a, b]['line']}" for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True)]
        found.append(" -> ".join([*steps, cycle[0]]) + f"  ({len(comp)} modules: {', '.join(comp)})")
    return found


def _annotation_nodes(tree: ast.AST) -> set[int]:
    """The ids of every node inside an annotation (arguments, returns, annotated assignments)."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(n) for r in roots for n in ast.walk(r)}


def _ours(module: str, root: Path) -> bool:
    return module.split(".")[0] in (root.name, STUDIES)


def type_only_misuse(root: Path = ROOT) -> list[str]:
    """Type-only imports of evroute modules that do more than type: in a module without ``from __future__ import
    annotations``, or whose bound name is used outside annotations; and every import of ``studies``, type-only or
    not.  (Type-only imports of other packages, e.g. a lazily imported dependency, are not layers' business.)"""
    found = []
    for path, importer in modules(root):
        tree = ast.parse(path.read_text(), str(path))
        bound: dict[str, int] = {}
        for node, type_only in _walk(tree):
            if type_only and isinstance(node, ast.Import):
                bound |= {a.asname or a.name.split(".")[0]: node.lineno for a in node.names if _ours(a.name, root)}
            elif type_only and isinstance(node, ast.ImportFrom) and (node.level or _ours(node.module or "", root)):
                bound |= {a.asname or a.name: node.lineno for a in node.names}
        for imp in imports_of(path, root):
            if imp.target.split(".")[0] == STUDIES:
                found.append(f"{importer}:{imp.line} imports {imp.target} (evroute never imports the studies)")
        if not bound:
            continue
        future = any(
            isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations" for a in n.names)
            for n in tree.body
        )
        if not future:
            found.append(f"{importer}: type-only imports without `from __future__ import annotations`")
        skip = _annotation_nodes(tree) | {id(n) for n, t in _walk(tree) if t}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in bound and id(node) not in skip:
                found.append(f"{importer}:{node.lineno} uses the type-only name {node.id} at runtime")
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
    for path, importer in modules(root):
        for target, name, line, _ in imports_of(path, root):
            owner = _private_package(target)
            if owner is not None and not (importer == owner or importer.startswith(owner + ".")):
                found.append(f"{importer}:{line} imports the private module {target}")
            if name and name.startswith("_") and not name.startswith("__") and target != importer:
                if (importer, target, name) not in PRIVATE_ALLOWED:
                    found.append(f"{importer}:{line} imports the private name {target}.{name}")
    return found


def test_every_module_has_a_layer():
    found = unplaced()
    assert not found, f"modules in no layer (add them to LAYERS in {Path(__file__).name}): {found}"


@pytest.mark.slow
def test_no_module_imports_a_higher_layer():
    found = upward_imports()
    assert not found, "lower layers import higher ones:\n" + "\n".join(found)


@pytest.mark.slow
def test_no_import_circle():
    found = circles()
    assert not found, "import circles (move the shared piece down):\n" + "\n".join(found)


@pytest.mark.slow
def test_type_only_imports_only_type_and_nothing_imports_the_studies():
    found = type_only_misuse()
    assert not found, "\n".join(found)


@pytest.mark.slow
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


def _all_checks(root: Path) -> list[str]:
    return unplaced(root) + upward_imports(root) + circles(root) + type_only_misuse(root) + private_imports(root)


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


def test_the_check_reports_an_unplaced_module(tmp_path):
    """A new package no layer names is reported, though the bare ``evroute`` entry is a prefix of it."""
    root = _tree(tmp_path, {"newthing/core.py": "", "models/ok.py": ""})
    assert unplaced(root) == ["evroute.newthing", "evroute.newthing.core"]
    assert position("evroute") == (len(LAYERS) - 1, "evroute") and position("evroute.newthing") is None


def test_the_check_reports_a_circle_inside_a_layer(tmp_path):
    """Two models modules importing each other (one of them lazily, inside a function) form a circle."""
    root = _tree(
        tmp_path,
        {
            "models/a.py": "from evroute.models.b import g\n\ndef f():\n    return g()\n",
            "models/b.py": "def g():\n    from evroute.models import a\n    return a\n",
            "models/c.py": "from evroute.models.a import f\n",
        },
    )
    assert upward_imports(root) == []  # one layer: the direction rule cannot see it
    (found,) = circles(root)
    assert "evroute.models.a:1 -> evroute.models.b:2 -> evroute.models.a" in found or (
        "evroute.models.b:2 -> evroute.models.a:1 -> evroute.models.b" in found
    ), found
    assert found.endswith("(2 modules: evroute.models.a, evroute.models.b)")


def test_the_check_reports_a_circle_through_a_package_init(tmp_path):
    """A module importing its own package's ``__init__``, which imports the module, is a circle."""
    root = _tree(tmp_path, {"network/x.py": "from evroute.network import load\n"})
    (tmp_path / "evroute" / "network" / "__init__.py").write_text("from evroute.network.x import y\n")
    assert len(circles(root)) == 1


def test_type_only_imports_may_point_up_but_only_type(tmp_path):
    """``energy`` types its network parameter with a type-only import of ``network``, which imports ``energy``: no
    upward import, no circle.  A runtime use of the type-only name, a module without postponed annotations and an
    import of the studies are reported."""
    typed = (
        "from __future__ import annotations\n\nfrom typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n    from evroute.network.road import RoadNetwork\n\n"
        "def energy(net: RoadNetwork) -> float:\n    x: RoadNetwork = net\n    return 1.0\n"
    )
    files = {"energy.py": typed, "network/road.py": "from evroute.energy import energy\n"}
    assert _all_checks(_tree(tmp_path / "ok", files)) == []
    misuse = typed + "\ndef check(x: object) -> bool:\n    return isinstance(x, RoadNetwork)\n"
    root = _tree(tmp_path / "bad", {**files, "energy.py": misuse, "stats.py": "import studies.common.report\n"})
    assert type_only_misuse(root) == [
        "evroute.energy:13 uses the type-only name RoadNetwork at runtime",
        "evroute.stats:1 imports studies.common.report (evroute never imports the studies)",
    ]
    eager = typed.replace("from __future__ import annotations\n", "")
    assert type_only_misuse(_tree(tmp_path / "eager", {**files, "energy.py": eager})) == [
        "evroute.energy: type-only imports without `from __future__ import annotations`"
    ]
    runtime = typed.replace("if TYPE_CHECKING:\n    from", "if True:\n    from")
    bad = _all_checks(_tree(tmp_path / "runtime", {**files, "energy.py": runtime}))
    assert any("imports evroute.network.road (layer 2 > 1)" in b for b in bad), bad
    assert any(
        b.startswith("evroute.energy:6 -> evroute.network.road:1") or "evroute.network.road:1 -> evroute.energy:6" in b
        for b in bad
    ), bad


def test_a_well_layered_tree_passes(tmp_path):
    """Downward imports at module level, in functions and in registry strings, inside and across layers: clean."""
    root = _tree(
        tmp_path,
        {
            "errors.py": "class E(Exception):\n    pass\n",
            "network/road.py": "from evroute.errors import E\n",
            "network/load.py": "from evroute.network.road import E\n\ndef f():\n    from evroute import errors\n",
            "models/bi.py": "from evroute.network import road\nREG = 'evroute.network.load:f'\n",
            "cli.py": "from evroute.models.bi import road\n",
        },
    )
    assert _all_checks(root) == []


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
