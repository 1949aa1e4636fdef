"""Charging curves: a vehicle's DC charging power as a function of the state of charge, and charging times.

A curve is piecewise linear in the state of charge ``s`` (fraction of the capacity): points ``(s_i, P_i)`` (kW),
held constant outside ``[s_0, s_n]``.  At a charger of power ``p`` (kW) the battery takes

    P(s) = min(curve(s), dc_max_kw, p)                                        [kW]

(power into the battery: charging losses are left out, as the published curves measure the car side), so charging
from ``a`` to ``b`` takes

    T(a, b) = 3600 C / 1000 * integral_a^b ds / P(s)                          [s],   C the capacity in Wh.

``P`` is piecewise linear (a linear piece cut by the constant ``min(dc_max_kw, p)`` stays piecewise linear with one
more breakpoint), so the integral is exact per piece: ``(s1 - s0) / P`` where ``P`` is constant and
``ln(P1 / P0) / k`` where ``P = P0 + k (s - s0)``.  :class:`ChargeTimer` tabulates the cumulative ``T(0, s)`` at the
breakpoints and evaluates it anywhere in closed form.

Where a curve comes from: :func:`charging_curve` takes the vehicle library's ``charging_curve`` (every real-car
profile has one, its source in the profile's ``sources``), else a ``charging`` entry
(``{"dc_max_kw": float, "curve": [[soc_fraction, kW], ...], "source": "..."}``), and otherwise :data:`CURVES`, a
small sourced table for the two generic profiles (``sumo_ev``, ``compact_ev``) that are no real car.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from evroute.errors import DataError, ParameterError

#: Charging curves of the shipped generic profiles that have none of their own (``charging_curve`` in the vehicle
#: JSON), keyed by profile name.  Values are read off published curves of a real car of the same battery size, rounded.
CURVES: dict[str, dict[str, Any]] = {
    "sumo_ev": {  # 35 kWh: a VW e-Golf (35.8 kWh, 2017) on CCS
        "dc_max_kw": 40.0,
        "curve": [[0.0, 36.0], [0.1, 40.0], [0.75, 40.0], [0.8, 32.0], [0.9, 20.0], [1.0, 7.0]],
        "source": "VW e-Golf 35.8 kWh: 40 kW CCS maximum (Volkswagen, inside.volkswagen.com 'Electric and "
        "carefree'; sauliala.fi); flat to about 75 % then the usual CC-CV taper (shape assumed, evroute)",
    },
    "compact_ev": {  # 40 kWh: a Nissan Leaf 40 kWh on CHAdeMO 50 kW
        "dc_max_kw": 46.0,
        "curve": [[0.0, 40.0], [0.1, 45.0], [0.5, 45.0], [0.8, 30.0], [0.9, 20.0], [1.0, 6.0]],
        "source": "Nissan Leaf 40 kWh: nearly 45 kW at optimal battery temperature, decreasing from 50 % "
        "(lecircuitelectrique.com/en/nissan-leaf); taper above 80 % assumed (evroute)",
    },
}


@dataclass(frozen=True)
class ChargingCurve:
    """A vehicle's charging power (kW) against state of charge (fraction), piecewise linear.

    Attributes:
        soc: ``(n,)`` increasing states of charge in ``[0, 1]``.
        kw: ``(n,)`` charging power at each (kW, ``> 0``).
        dc_max_kw: the car's maximum charging power (kW).
        source: where the numbers come from.
    """

    soc: np.ndarray
    kw: np.ndarray
    dc_max_kw: float
    source: str = ""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], what: str = "charging curve") -> ChargingCurve:
        """From the vehicle library's shape ``{"dc_max_kw": .., "curve": [[soc, kW], ...], "source": ..}``;
        :class:`DataError` naming the problem otherwise."""
        try:
            pts = np.asarray(d["curve"], dtype=np.float64)
            dc_max = float(d["dc_max_kw"])
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{what}: needs 'dc_max_kw' (kW) and 'curve' [[soc, kW], ...] ({exc})") from None
        if pts.ndim != 2 or pts.shape[1] != 2 or len(pts) < 1:
            raise DataError(f"{what}: 'curve' must be a list of [soc_fraction, kW] pairs")
        s, p = pts[:, 0], pts[:, 1]
        if not (np.all(np.isfinite(pts)) and np.all((s >= 0) & (s <= 1)) and np.all(np.diff(s) > 0)):
            raise DataError(f"{what}: curve states of charge must be increasing fractions in [0, 1]")
        if not (np.all(p > 0) and np.isfinite(dc_max) and dc_max > 0):
            raise DataError(f"{what}: charging powers must be > 0 kW")
        return cls(s, p, dc_max, str(d.get("source", "")))

    def power_kw(self, soc: np.ndarray | float, charger_kw: float = np.inf) -> np.ndarray:
        """``min(curve(soc), dc_max_kw, charger_kw)`` (kW), element-wise."""
        return np.minimum(np.interp(soc, self.soc, self.kw), min(self.dc_max_kw, charger_kw))

    def to_dict(self) -> dict[str, Any]:
        return {
            "dc_max_kw": self.dc_max_kw,
            "curve": np.column_stack([self.soc, self.kw]).tolist(),
            "source": self.source,
        }


def charging_curve(vehicle: Any) -> ChargingCurve:
    """The charging curve of a vehicle profile: the vehicle library's ``charging_curve`` (``[[soc, kW], ...]``,
    its source in the profile's ``sources``; :mod:`evroute.energy.vehicle`), else a ``charging`` entry of the shape
    ``{"dc_max_kw": .., "curve": [[soc, kW], ...], "source": ..}``, else :data:`CURVES` by the profile's name.
    :class:`ParameterError` if none has one."""
    name = getattr(vehicle, "name", str(vehicle))
    library = getattr(vehicle, "charging_curve", None)
    if library is not None and len(library) > 0:
        sources = getattr(vehicle, "sources", None) or {}
        source = sources.get("charging_curve", "") if isinstance(sources, Mapping) else ""
        pts = [[float(s), float(k)] for s, k in library]
        entry = {"dc_max_kw": max(k for _, k in pts), "curve": pts, "source": str(source)}
        return ChargingCurve.from_dict(entry, f"vehicle {name!r} charging_curve")
    own = getattr(vehicle, "charging", None)
    if own is not None:
        return ChargingCurve.from_dict(own if isinstance(own, Mapping) else vars(own), f"vehicle {name!r} charging")
    if name not in CURVES:
        raise ParameterError(
            f"vehicle {name!r} has no charging curve (add 'charging_curve': [[soc, kW], ...] to its JSON, as the "
            f"vehicle library's profiles have; known without one: {', '.join(sorted(CURVES))})"
        )
    return ChargingCurve.from_dict(CURVES[name], f"charging curve of {name!r}")


class ChargeTimer:
    """Exact charging times of one vehicle at a charger of power ``charger_kw`` (module doc).

    Args:
        curve: the vehicle's curve; capacity_wh: its battery capacity (Wh); charger_kw: the charger's power (kW).
    """

    def __init__(self, curve: ChargingCurve, capacity_wh: float, charger_kw: float) -> None:
        if not charger_kw > 0:
            raise ParameterError(f"charger power must be > 0 kW, got {charger_kw}")
        self.cap = min(curve.dc_max_kw, float(charger_kw))
        self.curve = curve
        # breakpoints of min(curve, cap): the curve's own, its crossings with cap, and 0 and 1
        x = np.concatenate([[0.0], curve.soc, [1.0]])
        y = np.interp(x, curve.soc, curve.kw)
        cross = []
        for i in range(len(x) - 1):
            (a, b), (ya, yb) = (x[i], x[i + 1]), (y[i], y[i + 1])
            if b > a and (ya - self.cap) * (yb - self.cap) < 0:
                cross.append(a + (self.cap - ya) * (b - a) / (yb - ya))
        self.x = np.unique(np.clip(np.concatenate([x, cross]), 0.0, 1.0))
        self.p = curve.power_kw(self.x, self.cap)
        self.scale = 3600.0 * float(capacity_wh) / 1000.0  # s per (fraction / kW)
        seg = self._piece(self.x[:-1], self.p[:-1], self.p[1:], np.diff(self.x))
        self.cum = np.concatenate([[0.0], np.cumsum(seg)])  # T(0, x_i), s

    def _piece(self, x0: np.ndarray, p0: np.ndarray, p1: np.ndarray, dx: np.ndarray) -> np.ndarray:
        """Exact ``scale * integral dx / P`` over pieces of width ``dx`` where ``P`` goes linearly ``p0 -> p1``
        (over the full piece ``x0 .. x0 + dx0``; here evaluated on partial widths with ``p1`` at the end)."""
        dp = p1 - p0
        lin = np.abs(dp) > 1e-12 * np.maximum(p0, 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(lin, dx * np.log(p1 / p0) / np.where(lin, dp, 1.0), dx / p0)
        return self.scale * t

    def time_to(self, soc: np.ndarray | float) -> np.ndarray:
        """``T(0, soc)`` (s) for states of charge in ``[0, 1]`` (clipped), element-wise."""
        s = np.clip(np.asarray(soc, dtype=np.float64), 0.0, 1.0)
        i = np.clip(np.searchsorted(self.x, s, side="right") - 1, 0, len(self.x) - 2)
        x0, p0 = self.x[i], self.p[i]
        ps = self.curve.power_kw(s, self.cap)
        return self.cum[i] + self._piece(x0, p0, ps, s - x0)

    def time(self, a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
        """``T(a, b)`` (s) to charge from ``a`` to ``b`` (0 where ``b <= a``)."""
        return np.maximum(self.time_to(b) - self.time_to(a), 0.0)


__all__ = ["CURVES", "ChargeTimer", "ChargingCurve", "charging_curve"]
