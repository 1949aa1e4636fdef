"""Kernels: graph Matérn on the line graph and Matérn feature kernels (NumPy; GPyTorch modules live in models)."""

from evroute.kernels.graph_matern import GraphMaternKernel, matern_spectrum
from evroute.kernels.matern import matern52, matern_rff

__all__ = ["GraphMaternKernel", "matern52", "matern_rff", "matern_spectrum"]
