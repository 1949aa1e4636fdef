"""Driver answers: calibration of route intervals, latency of risk-aware routes and reachable areas."""
