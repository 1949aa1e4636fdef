"""Benchmarks: round latency, GP costs, set-up, graph kernels, SUMO speed (``docs/bench*.md``)."""
