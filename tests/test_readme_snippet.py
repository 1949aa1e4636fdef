"""The README's Python snippet runs the same algorithm as the CLI default: same routes, same regret, round by round."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evroute.cli import main

README = Path(__file__).resolve().parent.parent / "README.md"


def _snippet() -> str:
    text = README.read_text()
    section = text[text.index("## Python API") :]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "no python block in the README's Python API section"
    return found.group(1)


@pytest.mark.slow
@pytest.mark.skipif(not README.is_file(), reason="needs the source checkout")
def test_readme_snippet_equals_cli_default(tmp_path, capsys):
    ns: dict = {}
    exec(compile(_snippet(), "README.md", "exec"), ns)  # noqa: S102 - the documented code, run as a user would
    records = ns["records"]
    horizon = len(records)
    assert main(["run", "--horizon", str(horizon), "--out", str(tmp_path / "cli"), "--no-progress"]) == 0
    cli = pd.read_csv(tmp_path / "cli" / "seed_0" / "rounds.csv")
    assert list(cli["route"]) == [r.route for r in records]
    np.testing.assert_allclose(cli["cumulative_regret_wh"], [r.cumulative_regret_wh for r in records], rtol=1e-9)
    out = capsys.readouterr().out
    assert f"final cumulative regret {records[-1].cumulative_regret_wh:.2f}" in out


def test_readme_snippet_needs_only_import_evroute():
    """The README's example uses the public API: one ``import evroute``, every other name reached through it."""
    import ast

    tree = ast.parse(_snippet())
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [ast.unparse(n) for n in imports] == ["import evroute"]


def test_public_names_resolve_and_import_evroute_stays_light():
    """Every name of ``evroute.__all__`` resolves (to an object of the module it names), ``dir(evroute)`` lists
    them, and ``import evroute`` imports no heavy dependency until a name is used."""
    import subprocess
    import sys

    import evroute

    for name in evroute.__all__:
        assert getattr(evroute, name) is not None, name
    assert set(evroute.__all__) <= set(dir(evroute))
    assert evroute.models.build is evroute.models.registry.build
    assert evroute.load_vehicle("sumo_ev") == evroute.VehicleProfile.load("sumo_ev")
    heavy = ("numpy", "torch", "scipy", "pandas", "networkx")
    code = f"import sys, evroute; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        evroute.nope  # noqa: B018
