"""The ``evroute`` command line: one package, one way to register a command (:mod:`evroute.cli.app`).

``main`` is the console script and ``python -m evroute``; importing this package imports nothing heavy.
"""

from evroute.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
