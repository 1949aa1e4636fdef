"""``evroute serve``: load the network, vehicle and model once, then answer HTTP requests (uvicorn).

Importing this module imports nothing heavy (``evroute --help`` stays fast); FastAPI and uvicorn are imported by
:func:`cmd_serve`.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from evroute.cli.args import add_model_file, add_network_args
from evroute.errors import ParameterError


def register(sub: Any) -> None:
    """Register ``serve`` on the top-level subparsers ``sub``."""
    p = sub.add_parser(
        "serve", help="a warm routing API (POST /route, /reach, /plan, /energy, /observe) and a map page"
    )
    p.set_defaults(handler=cmd_serve)
    add_network_args(p)
    add_model_file(p, "saved model (.npz; default: the physics prior, BI)")
    p.add_argument(
        "--vehicle",
        default=None,
        help="vehicle profile name or JSON file (default: the model's, else the default vehicle)",
    )
    p.add_argument(
        "--chargers", default=None, help="charging stations for POST /plan: .csv, .geojson or .osm (docs/charging.md)"
    )
    p.add_argument(
        "--charger-snap-m",
        type=float,
        default=250.0,
        help="chargers farther than this from every road are left out (default: %(default)s m)",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s, this machine only)")
    p.add_argument("--port", type=int, default=8000, help="TCP port (default: %(default)s)")
    p.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"])


def cmd_serve(args: argparse.Namespace) -> int:
    """``evroute serve``: everything is loaded before the port opens (a bad input fails with one line)."""
    if not 0 <= args.port <= 65535:
        raise ParameterError(f"--port must be between 0 and 65535, got {args.port}")
    if not args.charger_snap_m > 0:
        raise ParameterError(f"--charger-snap-m must be > 0, got {args.charger_snap_m}")
    try:
        import uvicorn
    except ImportError:
        raise ParameterError("evroute serve needs FastAPI and uvicorn: pip install 'evroute[serve]'") from None
    _check_listen(args.host, args.port)  # before the (seconds-long) load: a busy port fails at once, in one line
    from evroute.service.app import create_app
    from evroute.service.state import load_state

    t0 = time.perf_counter()
    dem = None if not args.dem else (args.dem[0] if len(args.dem) == 1 else list(args.dem))
    state = load_state(
        args.network,
        model_path=args.model_file,
        vehicle=args.vehicle,
        data_dir=args.data_dir,
        dem=dem,
        loader=args.loader,
        chargers=args.chargers,
        charger_snap_m=args.charger_snap_m,
    )
    app = create_app(state)
    v = state.current
    print(
        f"evroute serve: {state.lg.network.name} ({state.lg.n_nodes} edges), vehicle {state.vehicle.name}, "
        f"model {v.source} ({v.kind}, version {v.version}); loaded in {time.perf_counter() - t0:.2f} s; "
        f"http://{args.host}:{args.port}/",
        file=sys.stderr,
        flush=True,
    )
    from threadpoolctl import threadpool_limits

    # one BLAS thread per request: concurrency comes from the requests (several BLAS threads per small product
    # only contend for the cores, and spin)
    threadpool_limits(1)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)
    return 0


def _check_listen(host: str, port: int) -> None:
    """:class:`ParameterError` when ``host:port`` cannot be listened on (in use, not an address of this machine)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, addr = infos[0]
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
            sock.bind(addr)
    except OSError as exc:
        raise ParameterError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


__all__ = ["cmd_serve", "register"]
