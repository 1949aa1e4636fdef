"""The committed configuration schema document is the one the validation layer generates."""

from pathlib import Path

from evroute.cli import main


def test_committed_schema_doc_equals_generated(capsys):
    assert main(["config", "schema"]) == 0
    generated = capsys.readouterr().out
    committed = (Path(__file__).resolve().parent.parent / "docs" / "config_schema.md").read_text()
    assert committed == generated, "docs/config_schema.md is stale: run `evroute config schema > docs/config_schema.md`"
    for field in ("horizon", "seeds", "n_inducing", "beta_scale", "mass_kg", "drift_period", "grid"):
        assert f"`{field}`" in generated
