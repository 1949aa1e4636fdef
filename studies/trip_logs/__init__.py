"""Learning from trip logs: known-truth study, map matchers side by side, Twizy trace energy, throughput."""
