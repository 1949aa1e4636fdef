"""What a SUMO ``.net.xml`` says about its normal edges, read through sumolib after the XML guard: their lengths and
speed limits, and the direction of each connection between them (used by :mod:`evroute.sumo.live` to pick the
predecessor, successor and run-out edges of a driven route)."""

from __future__ import annotations

import os

from evroute.errors import DataError


def direction_rank(direction: str) -> int:
    """Straight on first, then slight turns, full turns, U-turns (SUMO's connection ``dir``)."""
    return {"s": 0, "l": 1, "r": 1, "L": 2, "R": 2, "t": 3}.get(direction, 2)


def connection_directions(net_file: str | os.PathLike[str]) -> dict[tuple[str, str], str]:
    """``(from_edge, to_edge) -> dir`` (SUMO's ``s``, ``l``, ``r``, ``L``, ``R``, ``t``) of the connections between
    normal edges that passenger cars may use (both edges allow them), via sumolib."""
    import sumolib

    from evroute.network.xmlguard import check_xml_file

    check_xml_file(net_file, "SUMO network file")  # no DTD, no bomb (evroute.network.xmlguard)

    net = sumolib.net.readNet(str(net_file))
    out: dict[tuple[str, str], str] = {}
    for edge in net.getEdges():
        if not edge.allows("passenger"):
            continue
        for to_edge, conns in edge.getOutgoing().items():
            if to_edge.allows("passenger") and conns:
                out[(edge.getID(), to_edge.getID())] = min((c.getDirection() for c in conns), key=direction_rank)
    return out


def edge_lengths_speeds(net_file: str | os.PathLike[str]) -> tuple[dict[str, float], dict[str, float]]:
    """``(length, speed)``: every normal edge's length (m, its first lane's) and highest lane speed limit (m/s).

    Raises:
        DataError: the net has no lane with a speed and a length.
    """
    import sumolib

    from evroute.network.xmlguard import check_xml_file

    check_xml_file(net_file, "SUMO network file")  # no DTD, no bomb (evroute.network.xmlguard)

    length: dict[str, float] = {}
    speed: dict[str, float] = {}
    # parse_fast matches the attributes in the order SUMO writes them (id, index, allow/disallow, speed, length)
    for ln in sumolib.xml.parse_fast(str(net_file), "lane", ["id", "speed", "length"]):
        if ln.id.startswith(":"):
            continue
        e = ln.id.rsplit("_", 1)[0]
        length.setdefault(e, float(ln.length))
        speed[e] = max(speed.get(e, 0.0), float(ln.speed))
    if not length:
        raise DataError(f"no lane with a speed and a length in {net_file}")
    return length, speed


__all__ = ["connection_directions", "direction_rank", "edge_lengths_speeds"]
