"""The HVAC power curves of the vehicle library (``hvac_power_curve`` of ``evroute/resources/vehicles/*.json``).

Source: FASTSim 3.1's thermal vehicle models (NREL; the ``thrml`` vehicle files shipped in the ``fastsim`` wheel: a
cabin thermal model with a heat pump or resistive heater and air conditioning).  For each ambient temperature the
UDDS cycle (23 min, cabin starting at ambient) is simulated with the cycle's ambient temperature set; the HVAC power
is the auxiliary energy beyond the base auxiliaries (``pwr_aux_base_watts``, the profile's ``auxiliary_power_w``)
over the cycle's duration, i.e. the trip-average HVAC draw of a 23-minute trip, warm-up or cool-down included::

    python -m studies.energy_validation.hvac_curves

prints the curves as JSON (rounded to 10 W).  The same UDDS cycle is a validation cycle of
``docs/results/energy_validation.md``, but at 22 C, where the curves are 0: the validation does not use them.
"""

from __future__ import annotations

import argparse
import json

#: FASTSim thermal vehicle file -> evroute profile
THERMAL = {
    "2020 Chevrolet Bolt EV thrml.yaml": "chevrolet_bolt_2020",
    "2022 Tesla Model 3 RWD thrml.yaml": "tesla_model3_rwd_2022",
    "2016 Nissan Leaf 30 kWh thrml.yaml": "nissan_leaf_2016",
}
TEMPS_C = (-20.0, -10.0, 0.0, 10.0, 20.0, 22.0, 25.0, 30.0, 35.0, 40.0)


def hvac_curve(vehicle_file: str, temps_c: tuple[float, ...] = TEMPS_C) -> list[list[float]]:
    """``[[ambient C, HVAC W], ...]`` of a FASTSim thermal vehicle (module doc)."""
    import fastsim as fs

    base = fs.Cycle.from_resource("udds.csv").to_dict()
    duration = base["time_seconds"][-1] - base["time_seconds"][0]
    out = []
    for temp in temps_c:
        cyc = dict(base, temp_amb_air_kelvin=[temp + 273.15] * len(base["time_seconds"]))
        sd = fs.SimDrive(fs.Vehicle.from_resource(vehicle_file), fs.Cycle.from_dict(cyc))
        sd.run()
        veh = sd.to_dict()["veh"]
        hvac_j = veh["history"]["energy_aux_joules"][-1] - veh["pwr_aux_base_watts"] * duration
        out.append([temp, round(max(hvac_j / duration, 0.0), -1)])
    return out


def main() -> None:
    argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0]).parse_args()
    print(json.dumps({name: hvac_curve(f) for f, name in THERMAL.items()}))


if __name__ == "__main__":  # pragma: no cover
    main()
