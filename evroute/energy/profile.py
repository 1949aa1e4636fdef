"""Energy and time of an edge driven as a speed profile: accelerate, cruise, brake (vectorised over edges).

An edge of length ``L`` (m) is entered at ``v_in``, cruised at ``v_c`` and left at ``v_out`` (m/s, ``v_in, v_out
<= v_c``).  The driver accelerates at ``a`` and brakes at ``b`` (m/s^2, :class:`DrivingStyle`), so the profile is

    accelerate  v_in -> v_p   over  d_a = (v_p^2 - v_in^2) / (2 a)
    cruise      v_p           over  d_c = L - d_a - d_b
    brake       v_p -> v_out  over  d_b = (v_p^2 - v_out^2) / (2 b)

with ``v_p = v_c`` when ``d_a + d_b <= L``, else the peak ``v_p^2 = (2 a b L + b v_in^2 + a v_out^2) / (a + b)``
(a triangle; an exit speed the edge is too short to reach is moved to the nearest reachable one).  At speed ``v``
the wheels need ``P(v) = (m_eff dv/dt + m g sin + m g C_r cos + 1/2 rho C_d A v^2) v`` (W) and the battery pays
``P / (eta+ eta_m(P))`` when ``P >= 0`` and ``max(f P eta- eta_m(f P), -P_regen)`` when braking (``f = f(v)`` the
motor's share of the braking power, :meth:`~evroute.energy.VehicleProfile.regen_fraction`: what the motor does not
take or cannot recover is lost in the friction brakes), plus the auxiliaries ``P_aux`` (:func:`battery_power_w`).
The battery energy of a constant-acceleration phase is ``int P_batt(v) dv / |dv/dt|``, computed by composite
Gauss-Legendre quadrature (4 panels of 4 nodes) on the speed interval split where ``P`` changes sign (exact for
constant efficiencies, no power cap, no regeneration fade and no battery map: the integrand is then a polynomial of
degree 3 on each piece; the cap and the motor and battery maps' breakpoints are kinks, integrated to about 0.1 %, the
fade a smooth step, integrated to 1e-4 of the recovered energy, ``tests/test_energy_regen.py``); the cruise phase is
``P_batt(v_p) d_c / v_p``.

**Speed fluctuation.**  Nobody cruises at a constant speed: traffic, bends and the driver's foot make small speed
changes whose kinetic energy goes partly to the brakes.  :attr:`DrivingStyle.speed_fluctuation_mps2` ``k`` is their
positive kinetic energy per metre cruised (``sum (dv^2)+ / distance``, the driving-cycle statistic PKE beyond the
profile's own); the cruise phase is then driven at ``v_p`` on average, speeding up at ``a`` for ``k d_c / (2 a v_p)``
s and slowing down at ``b`` for ``k d_c / (2 b v_p)`` s (small changes around ``v_p``, so the phase keeps its distance,
time and mean speed; positive kinetic work ``1/2 m_eff k d_c``, the same negative), holding ``v_p`` the rest:
``E_cruise = P_batt(F v_p) t_s + P_batt((F + m_eff a) v_p) t_a + P_batt((F - m_eff b) v_p) t_b`` with ``F`` the road
load at ``v_p``.  With constant efficiencies, no regeneration cap and a road load ``0 <= F < m_eff b`` it costs
``1/2 k d_c (m_eff - F / b) (1/eta+ - eta-)`` (J) more than the steady cruise (the road load does part of the slowing
down for free).

With ``v_in = v_out = v_c`` and no speed fluctuation the profile is a constant speed and the energy is Eq. 8 with
the same efficiencies (:func:`evroute.energy.eq8.edge_energy_wh`).  :mod:`evroute.energy.prior` turns junctions
into entry and exit speeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from evroute.energy.eq8 import regen_share
from evroute.energy.vehicle import VehicleProfile
from evroute.errors import DataError, ParameterError, check_positive, check_range

#: composite Gauss-Legendre rule on [-1, 1]: ``_PANELS`` equal panels of ``_NODES`` nodes each (exact for cubics on
#: each panel; a kink of the integrand (the regeneration cap, the motor map's breakpoints) costs O(h^2))
_PANELS, _NODES = 4, 4
_gx, _gw = np.polynomial.legendre.leggauss(_NODES)
_GX = np.concatenate([-1 + (2 * k + 1 + _gx) / _PANELS for k in range(_PANELS)])
_GW = np.tile(_gw / _PANELS, _PANELS)


@dataclass(frozen=True)
class DrivingStyle:
    """How the driver changes speed (m/s^2): mean acceleration away from a junction, mean braking into one, and the
    speed fluctuation while cruising.

    Defaults: 1.0 and 1.2 m/s^2, the mean acceleration and deceleration of passenger cars at urban junctions
    (Bokare and Maurya 2017, Transportation Research Procedia 25: 4733-4749, about 1-1.5 m/s^2 from rest, lower at
    higher speed); a speed fluctuation of 0.26 m/s^2, that of the WLTC class 3b cycle (UN GTR No. 15, built from
    in-use driving data of several regions; :func:`evroute.traces.cycles.speed_fluctuation_mps2` of
    ``studies/energy_validation/cycles/wltc_3b.csv``, FASTSim's copy: 0.2596, asserted by
    ``tests/test_energy_fluctuation.py``).  None of them is fitted to the data evroute validates on (UDDS, HWFET,
    SUMO traces, the Twizy logs).
    """

    acceleration_mps2: float = 1.0
    deceleration_mps2: float = 1.2
    #: positive kinetic energy of the speed changes while cruising, per metre cruised (m/s^2: ``sum (dv^2)+`` over
    #: distance, the driving-cycle statistic PKE, beyond the accelerate-cruise-brake profile); 0: a constant cruise
    speed_fluctuation_mps2: float = 0.26

    def __post_init__(self) -> None:
        check_positive("acceleration_mps2", self.acceleration_mps2)
        check_positive("deceleration_mps2", self.deceleration_mps2)
        check_range(
            "speed_fluctuation_mps2", self.speed_fluctuation_mps2, 0.0, self.max_fluctuation_mps2, low_open=False
        )

    @property
    def max_fluctuation_mps2(self) -> float:
        """The largest fluctuation (m/s^2): the whole cruise spent speeding up at ``a`` and slowing down at ``b``,
        ``2 a b / (a + b)``."""
        a, b = self.acceleration_mps2, self.deceleration_mps2
        return 2.0 * a * b / (a + b)


@dataclass(frozen=True)
class ProfileEnergy:
    """Energy and time of each edge's speed profile (all ``(E,)``).

    Attributes:
        battery_wh: battery energy (Wh; negative when the edge recovers more than it uses).
        time_s: driving time (s).
        kinetic_j, potential_j, rolling_j, drag_j: the work at the wheels by term (J): ``1/2 m_eff (v_out^2 -
            v_in^2)``, ``m g L sin``, ``m g C_r L cos`` and ``1/2 rho C_d A int v^2 dx``.
        peak_mps: the highest speed reached (m/s).
    """

    battery_wh: np.ndarray
    time_s: np.ndarray
    kinetic_j: np.ndarray
    potential_j: np.ndarray
    rolling_j: np.ndarray
    drag_j: np.ndarray
    peak_mps: np.ndarray

    @property
    def wheel_j(self) -> np.ndarray:
        """``(E,)`` total work at the wheels (J)."""
        return self.kinetic_j + self.potential_j + self.rolling_j + self.drag_j


def battery_power_w(
    wheel_w: np.ndarray, vehicle: VehicleProfile, speed_mps: np.ndarray | float | None = None
) -> np.ndarray:
    """Battery power (W) for wheel power ``wheel_w`` (W, any shape) at speed ``speed_mps`` (m/s, broadcast; needed
    only when the profile's regeneration fades with speed): ``P / (eta+ eta_m)`` when ``P >= 0``,
    ``max(f P eta- eta_m, -P_regen)`` when braking (``f`` the motor's share, :meth:`VehicleProfile.regen_fraction`),
    plus the auxiliaries, through the battery's efficiency map when the profile has one
    (:meth:`VehicleProfile.chemical_power_w`; the power form of :func:`evroute.energy.eq8.battery_energy_wh`)."""
    p = np.asarray(wheel_w, dtype=np.float64)
    p = p * regen_share(p, vehicle, speed_mps)
    eta_m = vehicle.motor_efficiency(p)
    out = np.where(p >= 0, p / (vehicle.propulsion_efficiency * eta_m), p * vehicle.recuperation_efficiency * eta_m)
    if vehicle.max_regen_power_kw is not None:
        out = np.maximum(out, -1000.0 * vehicle.max_regen_power_kw)
    return vehicle.chemical_power_w(out + vehicle.aux_w)


#: rows of :func:`_phase_j`'s quadrature computed at once.  Every value is computed row by row (elementwise, and each
#: row's dot product with the weights by BLAS's matrix-vector product), so blocks give the same numbers as one pass
#: as long as the BLAS kernel takes the same path for each row: it handles rows in groups and a trailing remainder
#: separately (blocks of 1 or 7 rows change last bits), so a block is a power of two, whose every block but the last
#: holds whole groups and whose last ends with the same remainder as one pass (``tests/test_warm_setup.py``: blocks
#: of 64 to 512 rows; a quarter of a million edges' prior: equal bit for bit, 31 s / 1.0 GB -> 8 s / 0.43 GB).
PHASE_BLOCK = 1 << 16


def _phase_j(
    lo: np.ndarray, hi: np.ndarray, accel: float, force0: np.ndarray, c_drag: float, vehicle: VehicleProfile
) -> np.ndarray:
    """``(E,)`` battery energy (J) of a constant-acceleration phase through speeds ``[lo, hi]`` (m/s, ``(E,)``):
    ``int_lo^hi P_batt(v) dv / |accel|`` with ``P(v) = (m_eff accel + force0 + c_drag v^2) v`` (``accel`` signed,
    m/s^2; ``force0`` ``(E,)`` grade and rolling force, N)."""
    n = len(lo)
    if n > PHASE_BLOCK:  # in blocks of rows: (n, len(_GX)) temporaries of a few MB, not GB (a million edges: 3 GB)
        out = np.empty(n)
        for s in range(0, n, PHASE_BLOCK):
            rows = slice(s, s + PHASE_BLOCK)
            out[rows] = _phase_j(lo[rows], hi[rows], accel, force0[rows], c_drag, vehicle)
        return out
    m_eff = vehicle.effective_mass_kg
    f0 = m_eff * accel + force0
    if c_drag > 0:
        root2 = -f0 / c_drag
        root = np.sqrt(np.maximum(root2, 0.0))
    else:
        root = np.zeros_like(f0)
    split = np.clip(root, lo, hi)
    total = np.zeros_like(lo)
    for a, b in ((lo, split), (split, hi)):
        mid, half = 0.5 * (a + b), 0.5 * (b - a)
        v = mid[:, None] + half[:, None] * _GX[None, :]
        p = (f0[:, None] + c_drag * v**2) * v
        total += half * (battery_power_w(p, vehicle, v) @ _GW)
    return total / abs(accel)


def _cruise_j(
    v_p: np.ndarray, d_c: np.ndarray, force0: np.ndarray, c_drag: float, vehicle: VehicleProfile, style: DrivingStyle
) -> np.ndarray:
    """``(E,)`` battery energy (J) of cruising ``d_c`` (m, ``(E,)``) at mean speed ``v_p`` (m/s, ``(E,)``) with the
    style's speed fluctuation ``k`` (module doc): for ``t_a = k d_c / (2 a v_p)`` s the car speeds up at ``a``, for
    ``t_b = k d_c / (2 b v_p)`` s it slows down at ``b`` (small changes around ``v_p``: the positive kinetic energy is
    ``1/2 m_eff k d_c`` and the mean speed stays ``v_p``), the rest of ``d_c / v_p`` it holds ``v_p``."""
    a, b, k = style.acceleration_mps2, style.deceleration_mps2, style.speed_fluctuation_mps2
    road_n = force0 + c_drag * v_p**2
    t_c = d_c / v_p
    if k == 0:
        return battery_power_w(road_n * v_p, vehicle, v_p) * t_c
    m_eff = vehicle.effective_mass_kg
    t_a, t_b = k * t_c / (2.0 * a), k * t_c / (2.0 * b)
    return (
        battery_power_w(road_n * v_p, vehicle, v_p) * (t_c - t_a - t_b)
        + battery_power_w((road_n + m_eff * a) * v_p, vehicle, v_p) * t_a
        + battery_power_w((road_n - m_eff * b) * v_p, vehicle, v_p) * t_b
    )


def profile_energy(
    length_m: ArrayLike,
    v_in_mps: ArrayLike,
    v_cruise_mps: ArrayLike,
    v_out_mps: ArrayLike,
    incline: ArrayLike,
    vehicle: VehicleProfile,
    style: DrivingStyle | None = None,
) -> ProfileEnergy:
    """Energy and time of each edge driven as an accelerate-cruise-brake profile (module doc).

    Args:
        length_m: ``(E,)`` edge lengths (m, > 0).
        v_in_mps, v_out_mps: ``(E,)`` entry and exit speeds (m/s, >= 0; above the cruise speed they are lowered to
            it).
        v_cruise_mps: ``(E,)`` cruise speeds (m/s, > 0).
        incline: ``(E,)`` sine of the slope angle.
        vehicle: the profile (its top speed is NOT applied here: :mod:`evroute.energy.prior` caps the cruise speed).
        style: accelerations (default :class:`DrivingStyle`).
    """
    st = style or DrivingStyle()
    a, b = st.acceleration_mps2, st.deceleration_mps2
    arrays = [np.asarray(x, dtype=np.float64) for x in (length_m, v_in_mps, v_cruise_mps, v_out_mps, incline)]
    length, v_in, v_c, v_out, sin_a = (np.array(x, ndmin=1) for x in np.broadcast_arrays(*arrays))
    if not all(np.all(np.isfinite(x)) for x in (length, v_in, v_c, v_out, sin_a)):
        raise DataError("speed-profile input contains NaN or inf")
    if np.any(length <= 0) or np.any(v_c <= 0) or np.any(v_in < 0) or np.any(v_out < 0):
        raise ParameterError("speed profiles need lengths and cruise speeds > 0 and entry/exit speeds >= 0")
    if np.any(np.abs(sin_a) > 1):
        raise ParameterError("incline must be in [-1, 1] (sine of the slope angle)")
    v_in = np.minimum(v_in, v_c)
    v_out2 = np.clip(np.minimum(v_out, v_c) ** 2, v_in**2 - 2 * b * length, v_in**2 + 2 * a * length)
    v_out = np.sqrt(np.maximum(v_out2, 0.0))
    peak2 = (2 * a * b * length + b * v_in**2 + a * v_out**2) / (a + b)
    v_p = np.minimum(v_c, np.sqrt(peak2))
    d_a = (v_p**2 - v_in**2) / (2 * a)
    d_b = (v_p**2 - v_out**2) / (2 * b)
    d_c = np.maximum(length - d_a - d_b, 0.0)

    v = vehicle
    cos_a = np.sqrt(1.0 - sin_a**2)
    mg = v.mass_kg * v.gravity_mps2
    force0 = mg * sin_a + mg * v.rolling_resistance * cos_a
    c_drag = 0.5 * v.air_density_kgpm3 * v.drag_coefficient * v.front_area_m2
    battery_j = (
        _phase_j(v_in, v_p, a, force0, c_drag, v)
        + _cruise_j(v_p, d_c, force0, c_drag, v, st)
        + _phase_j(v_out, v_p, -b, force0, c_drag, v)
    )
    time_s = (v_p - v_in) / a + d_c / v_p + (v_p - v_out) / b
    drag_j = c_drag * ((v_p**4 - v_in**4) / (4 * a) + v_p**2 * d_c + (v_p**4 - v_out**4) / (4 * b))
    return ProfileEnergy(
        battery_wh=battery_j / 3600.0,
        time_s=time_s,
        kinetic_j=0.5 * v.effective_mass_kg * (v_out**2 - v_in**2),
        potential_j=mg * sin_a * length,
        rolling_j=mg * v.rolling_resistance * cos_a * length,
        drag_j=drag_j,
        peak_mps=v_p,
    )


__all__ = ["DrivingStyle", "ProfileEnergy", "battery_power_w", "profile_energy"]
