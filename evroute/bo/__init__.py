"""Single-arm kernelized bandit / Bayesian-optimisation policies (ask/tell) and benchmark functions.

See ``docs/bo.md`` for the interface and the formulas each policy implements.
"""

from evroute.bo.base import BoxDomain, Domain, FiniteDomain, Policy, as_generator
from evroute.bo.functions import FUNCTION_NAMES, BenchmarkFunction, get_function

__all__ = [
    "FUNCTION_NAMES",
    "BenchmarkFunction",
    "BoxDomain",
    "Domain",
    "FiniteDomain",
    "Policy",
    "as_generator",
    "get_function",
]
