"""Argument types and shared options of the ``evroute`` command line (parsing only: nothing heavy is imported).

Option names are the same in every command: ``--from``/``--to`` for the two ends of a trip, ``--model`` for a model
KIND (``bi``, ``gp-exact``, ...) and ``--model-file`` for a saved model (``.npz``).  The spellings used before
(``--start``/``--goal``, ``--model FILE``, ``--kind``) still work for one release as *deprecated aliases*
(:func:`add_option`): each use prints one line ``evroute: warning: --start is deprecated; use --from``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from evroute.errors import ParameterError


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``evroute: error: ...``, status 2) instead of usage plus message, and options
    that are required but have deprecated aliases (:func:`add_option`: checked after parsing, so an alias counts)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: ``(dest, flag)`` of the options :func:`add_option` made required
        self.required_options: list[tuple[str, str]] = []

    def error(self, message: str) -> NoReturn:
        where = self.prog.removeprefix("evroute").strip()
        self.exit(2, f"evroute: error: {where + ': ' if where else ''}{' '.join(message.split())}\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        ns, rest = super().parse_known_args(args, namespace)
        missing = [flag for dest, flag in self.required_options if getattr(ns, dest, None) is None]
        if missing:
            self.error(f"the following arguments are required: {', '.join(missing)}")
        return ns, rest


def deprecation_warning(old: str, new: str) -> None:
    """The one line an old option spelling prints (stderr)."""
    print(f"evroute: warning: {old} is deprecated; use {new}", file=sys.stderr)


class DeprecatedAlias(argparse.Action):
    """An old spelling of option ``new``: stores into the same destination and prints :func:`deprecation_warning`.
    Hidden from ``--help``; it sets no default (the new option's default stands)."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, new: str, **kwargs: Any) -> None:
        kwargs.setdefault("default", argparse.SUPPRESS)
        kwargs.setdefault("help", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        deprecation_warning(option_string or self.option_strings[0], self.new)
        setattr(namespace, self.dest, values)


def add_option(
    p: argparse.ArgumentParser,
    flag: str,
    *,
    dest: str,
    aliases: Sequence[str] = (),
    required: bool = False,
    **kwargs: Any,
) -> None:
    """Add option ``flag`` (storing into ``dest``) and its deprecated ``aliases`` (:class:`DeprecatedAlias`, same
    ``type`` and ``choices``).  ``required`` is checked after parsing by :class:`Parser`, so an alias satisfies it."""
    p.add_argument(flag, dest=dest, **kwargs)
    same = {k: kwargs[k] for k in ("type", "choices", "metavar") if k in kwargs}
    for old in aliases:
        p.add_argument(old, dest=dest, action=DeprecatedAlias, new=flag, **same)
    if required:
        if not isinstance(p, Parser):
            raise TypeError("a required option with aliases needs an evroute.cli.args.Parser")
        p.required_options.append((dest, flag))


def add_endpoints(p: argparse.ArgumentParser, *, to: bool = True, required: bool = True, what: str = "") -> None:
    """``--from`` (and with ``to``, ``--to``): an edge id or a point ``LON,LAT``, stored as ``origin``/``dest``;
    ``--start``/``--goal`` are their deprecated aliases."""
    add_option(
        p,
        "--from",
        dest="origin",
        aliases=("--start",),
        required=required,
        metavar="FROM",
        help=f"start edge id, or a point LON,LAT{what}",
    )
    if to:
        add_option(
            p,
            "--to",
            dest="dest",
            aliases=("--goal",),
            required=required,
            metavar="TO",
            help=f"goal edge id, or a point LON,LAT{what}",
        )


def add_model_file(p: argparse.ArgumentParser, help: str) -> None:
    """``--model-file`` (a saved model, ``.npz``), stored as ``model_file``; ``--model`` is its deprecated alias in
    the commands where ``--model`` named a file."""
    add_option(p, "--model-file", dest="model_file", aliases=("--model",), default=None, metavar="FILE", help=help)


class ModelKindOrFile(argparse.Action):
    """``--model`` where it named a model file before and names a model KIND now (``evroute learn``): a value that
    looks like a file (ends in ``.npz``, has a folder, or exists) is the deprecated file spelling, stored as
    ``model_file`` with :func:`deprecation_warning`; anything else is a kind, stored as ``dest`` (and checked by the
    command)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        import os

        text = str(values)
        if text.endswith(".npz") or os.sep in text or "/" in text or os.path.exists(text):
            deprecation_warning("--model FILE", "--model-file FILE")
            namespace.model_file = text
        else:
            setattr(namespace, self.dest, text)


def positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


#: the most worker processes a command accepts: far above any machine's cores, and small enough that a typo
#: (``--workers 100000000000``) is one line instead of an ``OverflowError`` deep in multiprocessing
MAX_WORKERS = 1024


def workers_int(text: str) -> int:
    """A count of worker processes in ``1..MAX_WORKERS``."""
    n = positive_int(text)
    if n > MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_WORKERS} processes, got {n}")
    return n


def positive_metres(text: str) -> float:
    """A finite distance > 0 in metres (``inf`` / ``nan`` would let any point on Earth snap to the network)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a distance in metres, got {text!r}") from None
    if not (0 < x < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite distance > 0 in metres, got {text!r}")
    return x


def parse_seeds(text: str) -> list[int]:
    """``"5"`` -> seeds 0..4; ``"3,7,9"`` -> those seeds; ``"2-4"`` -> 2, 3, 4 (at most ``MAX_SEEDS`` seeds)."""
    from evroute.experiments.config import MAX_SEEDS

    try:
        if "," in text:
            seeds = [int(s) for s in text.split(",") if s.strip()]
            if len(seeds) > MAX_SEEDS:
                raise ParameterError(f"--seeds lists {len(seeds)} seeds, more than {MAX_SEEDS}")
            return seeds
        if "-" in text.strip().lstrip("-"):
            a, b = (int(v) for v in text.split("-"))
            if a < 0 or b < a:
                raise ParameterError(f"--seeds range {text!r} must be FIRST-LAST with 0 <= FIRST <= LAST")
            if b - a + 1 > MAX_SEEDS:
                raise ParameterError(f"--seeds range {text!r} has {b - a + 1} seeds, more than {MAX_SEEDS}")
            return list(range(a, b + 1))
        n = int(text)
    except ValueError:
        raise ParameterError(f"--seeds must be a count, a list like 0,3,5 or a range like 0-4, got {text!r}") from None
    if not 1 <= n <= MAX_SEEDS:
        raise ParameterError(f"--seeds count must be between 1 and {MAX_SEEDS}, got {n}")
    return list(range(n))


def parse_params(items: Sequence[str] | None, flag: str) -> dict[str, Any]:
    """``NAME=VALUE`` flags; a VALUE that parses as JSON (``3``, ``0.5``, ``true``, ``[1, 2]``) is that JSON value,
    anything else a string.  ``NaN`` / ``Infinity`` are strings here (rejected by numeric fields)."""
    out: dict[str, Any] = {}
    for item in items or []:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise ParameterError(f"{flag} {item!r} must look like NAME=VALUE")
        try:
            out[k.strip()] = json.loads(v, parse_constant=lambda c: c)
        except json.JSONDecodeError:
            out[k.strip()] = v
        except RecursionError:
            raise ParameterError(f"{flag} {k.strip()}: value nested too deeply to read") from None
    return out


def split_negative_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """Join ``--opt VALUE`` into ``--opt=VALUE`` when VALUE starts with ``-`` but is no option, so negative
    coordinates (``--from -0.1,51.5``) and SUMO ids (``--start -271#3``) need no ``=``."""
    takes_value: set[str] = set()
    known: set[str] = set()
    stack = [parser]
    while stack:
        p = stack.pop()
        for action in p._actions:  # noqa: SLF001 - argparse has no public walk over its actions
            known.update(action.option_strings)
            if action.option_strings and action.nargs is None:
                takes_value.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
                stack.extend(action.choices.values())
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if (
            tok in takes_value
            and nxt is not None
            and nxt.startswith("-")
            and nxt != "--"
            and nxt not in known
            and not nxt.startswith("--")
        ):
            out.append(f"{tok}={nxt}")
            i += 2
            continue
        out.append(tok)
        i += 1
    return out


def add_network_args(p: argparse.ArgumentParser, default: str | None = "synthetic:2000:0") -> None:
    p.add_argument(
        "--network",
        default=default,
        help="synthetic[:EDGES[:SEED]], synthetic-country:EDGES[:SEED], monaco, luxembourg, or a "
        ".net.xml/.osm/.osm.pbf path (default: %(default)s)",
    )
    p.add_argument("--data-dir", default=None, help="folder with monaco.osm / luxembourg.osm (default: $EVROUTE_DATA)")
    p.add_argument(
        "--dem",
        action="append",
        default=None,
        metavar="RASTER",
        help="elevation raster (GeoTIFF or SRTM .hgt) for networks without elevation; repeat for several "
        "tiles, which are mosaicked",
    )
    p.add_argument(
        "--loader",
        default=None,
        choices=["netconvert", "osmnx"],
        help="OpenStreetMap loader: netconvert (default; honours turn restrictions) or osmnx (ignores them)",
    )


def dem_arg(args: argparse.Namespace) -> str | list[str] | None:
    """The ``--dem`` option(s): None, one path, or a list of tiles."""
    if not args.dem:
        return None
    return args.dem[0] if len(args.dem) == 1 else list(args.dem)


def add_executor_args(p: argparse.ArgumentParser, default: str | None) -> None:
    from evroute.experiments.executors import EXECUTORS

    p.add_argument(
        "--executor",
        default=default,
        choices=EXECUTORS,
        help="where the seeds run: serial, a local process pool or Ray (optional extra 'ray')"
        + (" (default: %(default)s)" if default else " (default: a process pool when --workers > 1)"),
    )
    p.add_argument("--address", default=None, help="Ray cluster address (default: start a local Ray instance)")
