"""One CLI package with consistent option names (issue 33, item 4): ``--from``/``--to``, ``--model KIND``,
``--model-file FILE`` everywhere; the old spellings still work for one release and print one warning line."""

from __future__ import annotations

import pytest

from evroute.cli import build_parser, main
from evroute.cli.app import COMMAND_MODULES
from evroute.cli.args import split_negative_values

WARN = "evroute: warning: {old} is deprecated; use {new}"


def _parse(argv):
    parser = build_parser()
    return parser.parse_args(split_negative_values(parser, argv))


# (old argv, new argv, the attributes both must set, warnings the old one prints)
CASES = [
    (
        ["run", "--start", "e1", "--goal", "-e2"],
        ["run", "--from", "e1", "--to", "-e2"],
        {"origin": "e1", "dest": "-e2"},
        [("--start", "--from"), ("--goal", "--to")],
    ),
    (
        ["route", "--start", "1,2", "--goal", "3,4", "--model", "m.npz"],
        ["route", "--from", "1,2", "--to", "3,4", "--model-file", "m.npz"],
        {"origin": "1,2", "dest": "3,4", "model_file": "m.npz"},
        [("--start", "--from"), ("--goal", "--to"), ("--model", "--model-file")],
    ),
    (
        ["reach", "--start", "e1", "--charge", "50%", "--model", "m.npz"],
        ["reach", "--from", "e1", "--charge", "50%", "--model-file", "m.npz"],
        {"origin": "e1", "model_file": "m.npz"},
        [("--start", "--from"), ("--model", "--model-file")],
    ),
    (
        ["plan", "--start", "a", "--goal", "b", "--chargers", "c.csv", "--charge", "9%", "--model", "m.npz"],
        ["plan", "--from", "a", "--to", "b", "--chargers", "c.csv", "--charge", "9%", "--model-file", "m.npz"],
        {"origin": "a", "dest": "b", "model_file": "m.npz"},
        [("--start", "--from"), ("--goal", "--to"), ("--model", "--model-file")],
    ),
    (
        ["serve", "--model", "m.npz"],
        ["serve", "--model-file", "m.npz"],
        {"model_file": "m.npz"},
        [("--model", "--model-file")],
    ),
    (
        ["model", "prior", "--kind", "gp-exact", "--out", "p.npz"],
        ["model", "prior", "--model", "gp-exact", "--out", "p.npz"],
        {"kind": "gp-exact"},
        [("--kind", "--model")],
    ),
    (
        ["learn", "log.csv", "--network", "n", "--model", "m.npz", "--kind", "bi"],
        ["learn", "log.csv", "--network", "n", "--model-file", "m.npz", "--model", "bi"],
        {"model_file": "m.npz", "kind": "bi"},
        [("--model FILE", "--model-file FILE"), ("--kind", "--model")],
    ),
]


@pytest.mark.parametrize(("old", "new", "attrs", "warnings"), CASES, ids=[c[1][0] + "-" + c[1][1] for c in CASES])
def test_old_spellings_parse_as_the_new_ones_and_warn_once(capsys, old, new, attrs, warnings):
    a, b = _parse(old), _parse(new)
    assert capsys.readouterr().err.splitlines() == [WARN.format(old=o, new=n) for o, n in warnings]
    for key, value in attrs.items():
        assert getattr(a, key) == getattr(b, key) == value, key
    assert vars(a) == vars(b)
    _parse(new)
    assert capsys.readouterr().err == ""  # the new spellings print nothing


def test_an_alias_satisfies_a_required_option_and_a_missing_one_is_one_error_line(capsys):
    assert _parse(["route", "--start", "a", "--to", "b"]).origin == "a"
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        _parse(["route", "--to", "b"])
    assert exc.value.code == 2
    assert capsys.readouterr().err == "evroute: error: route: the following arguments are required: --from\n"


def test_old_aliases_are_hidden_from_help():
    sub = next(a for a in build_parser()._actions if a.dest == "command")  # noqa: SLF001
    for name in ("run", "route", "reach", "plan", "serve", "learn"):
        text = sub.choices[name].format_help()
        assert "--from" in text or name in ("serve", "learn"), name
        assert "--start" not in text and "--goal" not in text and "--kind" not in text, name


def test_every_command_is_registered_by_a_module_of_the_table():
    """One way to register a command: every sub-command has a handler set by its module's ``register``."""
    import importlib

    sub = next(a for a in build_parser()._actions if a.dest == "command")  # noqa: SLF001
    assert set(sub.choices) == {
        *"demo run sweep plot route reach model vehicles plan serve info data config learn".split()
    }
    handlers = {name: p.get_default("handler") for name, p in sub.choices.items()}
    assert all(callable(h) for h in handlers.values()), handlers
    modules = {importlib.import_module(f"evroute.cli.{m}").__name__ for m in COMMAND_MODULES}
    assert {h.__module__ for h in handlers.values()} == modules


@pytest.mark.slow
def test_route_with_old_spellings_gives_the_same_answer(capsys, tmp_path):
    """End to end: ``route --start/--goal`` prints the same answer as ``--from/--to``, plus one warning per alias."""
    net = "synthetic:300:2"
    base = ["route", "--network", net, "--json"]
    assert main([*base, "--from", "e3", "--to", "e150"]) == 0
    new = capsys.readouterr()
    assert main([*base, "--start", "e3", "--goal", "e150"]) == 0
    old = capsys.readouterr()
    assert old.out == new.out and new.err == ""
    assert old.err.splitlines() == [WARN.format(old="--start", new="--from"), WARN.format(old="--goal", new="--to")]
