"""Single-arm kernelized bandit / Bayesian-optimisation policies (ask/tell) and benchmark functions.

Policies: :class:`IGPUCB`, :class:`GPTS` (Chowdhury & Gopalan 2017), :class:`SrinivasGPUCB`, :class:`GPUCB`
(fixed width), :class:`GPEI`, :class:`GPPI`, :class:`BOKE`, :class:`BOKEPlus` and :class:`KRUCB` (Zhu et al.).
The GP policies (and the time-varying ones of :mod:`evroute.bo.timevarying`) use one model, :class:`ExactGP`.
See ``docs/bo.md`` for the interface and the formulas each policy implements.
"""

from evroute.bo.acquisition import (
    expected_improvement,
    log_probability_of_improvement,
    thompson_sample,
    upper_confidence_bound,
)
from evroute.bo.base import BoxDomain, Domain, FiniteDomain, Policy, as_generator
from evroute.bo.functions import FUNCTION_NAMES, BenchmarkFunction, get_function
from evroute.bo.gp import ExactGP
from evroute.bo.gp_policies import GPEI, GPPI, GPTS, GPUCB, IGPUCB, GPPolicy, SrinivasGPUCB, info_gain_bound
from evroute.bo.kernels import Kernel  # deprecated alias of evroute.kernels.stationary.Stationary
from evroute.bo.kr import NadarayaWatson, scott_bandwidth, silverman_bandwidth
from evroute.bo.kr_policies import BOKE, KRUCB, BOKEPlus, KernelRegressionPolicy, ikr_ucb
from evroute.bo.loop import RunResult, run_policy
from evroute.bo.optim import AcquisitionOptimizer
from evroute.kernels.posterior import GaussianPosterior, sample_mvn
from evroute.kernels.stationary import ArmKernel, Matern, SquaredExponential, make_kernel

__all__ = [
    "BOKE",
    "FUNCTION_NAMES",
    "GPEI",
    "GPPI",
    "GPTS",
    "GPUCB",
    "IGPUCB",
    "KRUCB",
    "AcquisitionOptimizer",
    "ArmKernel",
    "BOKEPlus",
    "BenchmarkFunction",
    "BoxDomain",
    "Domain",
    "ExactGP",
    "FiniteDomain",
    "GaussianPosterior",
    "GPPolicy",
    "Kernel",
    "KernelRegressionPolicy",
    "Matern",
    "NadarayaWatson",
    "Policy",
    "RunResult",
    "SquaredExponential",
    "SrinivasGPUCB",
    "as_generator",
    "expected_improvement",
    "log_probability_of_improvement",
    "thompson_sample",
    "upper_confidence_bound",
    "get_function",
    "ikr_ucb",
    "info_gain_bound",
    "make_kernel",
    "run_policy",
    "scott_bandwidth",
    "silverman_bandwidth",
    "sample_mvn",
]
