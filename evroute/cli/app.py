"""The ``evroute`` program: the top-level parser, the table of command modules and error handling.

Every command is registered the same way: a module of :mod:`evroute.cli` listed in :data:`COMMAND_MODULES` has
``register(subparsers)``, which adds its sub-parsers and sets ``handler`` (``handler(args) -> exit status``) as a
default of each.  Errors a user can cause (bad file, unknown network/edge, unreachable goal, invalid parameter, an
unwritable or full disk) are printed as one line ``evroute: error: ...`` with exit status 2; no traceback.  This
module imports nothing heavy at import time, so ``evroute --help`` answers at once.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from evroute.cli.args import Parser, split_negative_values
from evroute.errors import EvrouteError

#: the modules of :mod:`evroute.cli` that register commands, in the order ``evroute --help`` lists them
COMMAND_MODULES: tuple[str, ...] = ("experiment", "driver", "plan", "serve", "network", "learn")

DESCRIPTION = (
    "Learn energy-efficient electric-vehicle routes: evroute demo | run | sweep | plot | route | reach | model | "
    "vehicles | plan | serve | info | data | config | learn"
)


def build_parser() -> argparse.ArgumentParser:
    """The ``evroute`` parser: every module of :data:`COMMAND_MODULES` registers its commands."""
    parser = Parser(prog="evroute", description=DESCRIPTION)
    from evroute import __version__

    parser.add_argument("--version", action="version", version=f"evroute {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(f"evroute.cli.{name}").register(sub)
    return parser


def _os_error_text(exc: OSError) -> str:
    import errno

    what = exc.strerror or str(exc) or type(exc).__name__
    name = exc.filename if exc.filename is not None else None
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        if name:
            return f"disk full writing {name}: {what} (free some space and run the same command again)"
        from evroute.network.computecache import compute_cache_dir
        from evroute.network.registry import net_cache_dir

        return (
            f"disk full: {what} (the system did not say which file; besides the output files, evroute writes caches "
            f"under {net_cache_dir()} and {compute_cache_dir()}; free some space and run the same command again)"
        )
    return f"{what}: {name}" if name else what


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``evroute ARGV`` (default ``sys.argv[1:]``); returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(split_negative_values(parser, list(sys.argv[1:] if argv is None else argv)))
    import warnings

    from evroute.errors import install_warning_format

    previous = install_warning_format()
    try:
        return int(args.handler(args))
    except EvrouteError as exc:
        print(f"evroute: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except OSError as exc:  # read-only folder, full disk, a file where a folder should be, ...
        print(f"evroute: error: {_os_error_text(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "evroute: interrupted (completed rounds are saved; run the same command again to resume)", file=sys.stderr
        )
        return 130
    except RecursionError:  # json.loads of input nested ~1,000 levels deep (a vehicle file, a config, a grid)
        print("evroute: error: input nested too deeply to read (JSON with ~1,000 nested levels?)", file=sys.stderr)
        return 2
    except OverflowError as exc:  # a number too large for the quantity it sets (e.g. a count of processes)
        print(f"evroute: error: a number is too large: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    finally:
        warnings.formatwarning = previous  # type: ignore[assignment]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
