"""Time-varying Bayesian optimisation: BOLT and the TVBO baselines, clocks and benchmarks (the Table 3 experiment is
the study ``studies/bo/`` runs: ``studies.bo.tv_experiment``).

See ``docs/tvbo.md``.  The policies use the ask/tell interface of :mod:`evroute.bo` (maximisation), with the current
time ``t`` in seconds passed to ``ask(t)`` and ``tell(x, y, t)``.
"""

from evroute.bo.timevarying.bolt import (
    ResponseTimeModel,
    integrated_w2_removal,
    integrated_w2_to_prior,
    optimal_dataset_size,
    squared_norm_u,
)
from evroute.bo.timevarying.clock import Clock, RealTimeClock, SimulatedClock, make_clock
from evroute.bo.timevarying.datasets import DataManager, EventReset, KeepAll, PeriodicReset, W2Budget, W2Cap
from evroute.bo.timevarying.gp import GPHyper, HyperBounds, SpatioTemporalKernel, spatio_temporal_gp
from evroute.bo.timevarying.policies import (
    ABO,
    ALGORITHMS,
    BOLT,
    ETGPUCB,
    RGPUCB,
    TVGPUCB,
    WDBO,
    StaticGPUCB,
    TimeVaryingGPUCB,
    make_policy,
)
from evroute.bo.timevarying.problems import PROBLEMS, TVProblem, get_problem

__all__ = [
    "ABO",
    "ALGORITHMS",
    "BOLT",
    "ETGPUCB",
    "PROBLEMS",
    "RGPUCB",
    "TVGPUCB",
    "WDBO",
    "Clock",
    "DataManager",
    "EventReset",
    "GPHyper",
    "HyperBounds",
    "KeepAll",
    "PeriodicReset",
    "RealTimeClock",
    "ResponseTimeModel",
    "SimulatedClock",
    "SpatioTemporalKernel",
    "StaticGPUCB",
    "TVProblem",
    "TimeVaryingGPUCB",
    "W2Budget",
    "W2Cap",
    "get_problem",
    "integrated_w2_removal",
    "integrated_w2_to_prior",
    "make_clock",
    "make_policy",
    "optimal_dataset_size",
    "spatio_temporal_gp",
    "squared_norm_u",
]
