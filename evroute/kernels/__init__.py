"""The GP core: kernels, the jittered Cholesky and the posterior type, below every model and environment.

* :mod:`evroute.kernels.base` -- the one kernel interface (:class:`Kernel`) and its composition (``*``, ``+``,
  ``scale``), for edge kernels, stationary kernels on points and the BO GPs' kernels alike;
* :mod:`evroute.kernels.stationary` -- isotropic Matérn / squared-exponential kernels on points and the arm kernel
  (the BO GPs');
* :mod:`evroute.kernels.matern` -- the one Matérn (NumPy and torch), Matérn-5/2 Gram matrices, random Fourier features;
* :mod:`evroute.kernels.graph_matern` -- the graph Matérn kernel on the line graph (dense, sparse, eigen, local);
  :mod:`evroute.kernels.graph_gram` -- its dense normalised Gram matrix and eigenpairs, memoised per process;
* :mod:`evroute.kernels.edge` -- the edge kernel ``s_1 k_G k_f + s_2 k_f'`` as composable modules (NumPy and torch);
* :mod:`evroute.kernels.arcs` -- the arc kernel of turn arms, composed from the edge kernel and turn features;
* :mod:`evroute.kernels.linalg` -- the one jittered Cholesky;
* :mod:`evroute.kernels.posterior` -- the one posterior type (:class:`GaussianPosterior`);
* :mod:`evroute.kernels.exact` -- the one exact-GP core: conditioning on a Cholesky factor, the log marginal
  likelihood with its gradient weights, and the one L-BFGS-B fit of log-parameters (both exact GPs use it);
* :mod:`evroute.kernels.indices` -- the one set of index / acquisition functions (UCB, Bayes-UCB, Thompson sampling)
  with one sign convention (everything maximises; a cost is passed negated).
"""

from evroute.kernels.base import Kernel, Product, Scaled, Sum
from evroute.kernels.edge import ContextMatern, EdgeKernel, GraphKernel, Points, edge_kernel, edge_points
from evroute.kernels.graph_matern import GraphMaternKernel, matern_spectrum
from evroute.kernels.linalg import jittered_cholesky
from evroute.kernels.matern import matern52, matern_rff
from evroute.kernels.posterior import GaussianPosterior, sample_mvn

__all__ = [
    "ContextMatern",
    "EdgeKernel",
    "GaussianPosterior",
    "GraphKernel",
    "GraphMaternKernel",
    "Kernel",
    "Product",
    "Scaled",
    "Sum",
    "Points",
    "edge_kernel",
    "edge_points",
    "jittered_cholesky",
    "matern52",
    "matern_rff",
    "matern_spectrum",
    "sample_mvn",
]
