"""Real trip logs: read GPS + speed + altitude + state-of-charge traces, apply the physics energy model along them,
and calibrate a vehicle profile against the measured battery energy.

``reader`` (CSV logs, validated line by line) -> ``energy`` (the energy model second by second) -> ``calibrate``
(fit and score a profile on held-out trips).
"""

from evroute.traces.calibrate import FIT_PARAMETERS, Calibration, TripScore, calibrate, score_trip
from evroute.traces.energy import TraceEnergy, TraceModelOptions, measured_energy_wh, smooth_altitude, trace_energy
from evroute.traces.formats import read_traces
from evroute.traces.logformats import TWIZY_COLUMNS, TraceColumns
from evroute.traces.reader import Trace, read_trace_csv, write_trace_csv

__all__ = [
    "FIT_PARAMETERS",
    "TWIZY_COLUMNS",
    "Calibration",
    "Trace",
    "TraceColumns",
    "TraceEnergy",
    "TraceModelOptions",
    "TripScore",
    "calibrate",
    "measured_energy_wh",
    "read_trace_csv",
    "read_traces",
    "score_trip",
    "smooth_altitude",
    "trace_energy",
    "write_trace_csv",
]
