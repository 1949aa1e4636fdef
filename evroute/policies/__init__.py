"""Index policies (UCB, Bayes-UCB, Thompson sampling, greedy) with rectified-Gaussian oracle weights."""

from evroute.policies.index import (
    POLICIES,
    UCB,
    BayesUCB,
    Greedy,
    IndexPolicy,
    ThompsonSampling,
    bucb_beta,
    bucb_eta,
    make_policy,
    rectified_gaussian_mean,
    ucb_beta,
)

__all__ = [
    "POLICIES",
    "UCB",
    "BayesUCB",
    "Greedy",
    "IndexPolicy",
    "ThompsonSampling",
    "bucb_beta",
    "bucb_eta",
    "make_policy",
    "rectified_gaussian_mean",
    "ucb_beta",
]
