"""Use a GPyTorch ``ExactGP`` or a BoTorch ``Model`` where an evroute model (:class:`~evroute.bo.gp.ExactGP`) is
expected.

:class:`TorchModel` wraps a torch model so that it offers the interface the GP policies use: ``posterior(Z)``
returning a :class:`~evroute.kernels.posterior.GaussianPosterior` (numpy, float64), ``mean_var_grad(z)`` (by autograd),
``set_train_data(Z, y)`` / ``condition_on_observation(z, y)`` and ``fit_hyperparameters()`` by maximising the exact
marginal likelihood.  Any :class:`~evroute.bo.gp_policies.GPPolicy` then runs on it: the acquisition sees only the
posterior, the optimiser only the acquisition.

GPyTorch::

    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    gp = MyExactGP(train_x, train_y, likelihood)          # any gpytorch.models.ExactGP
    policy = GPUCB(BoxDomain.unit(2), model=TorchModel(gp, likelihood), seed=0)

BoTorch (optional, not a dependency of evroute; install ``botorch`` compatible with the pinned torch/gpytorch)::

    from botorch.models import SingleTaskGP
    gp = SingleTaskGP(train_x, train_y[:, None])       # a BoTorch Model is a GPyTorch ExactGP with .posterior
    policy = GPUCB(domain, model=TorchModel(gp, gp.likelihood), seed=0)

A BoTorch ``Model``'s ``posterior(X)`` (a ``GPyTorchPosterior``) is used directly when present; otherwise the
adapter evaluates ``likelihood``-free ``model(X)`` in eval mode (the latent ``f``, as our models return).  The model
sees unit-cube coordinates on a box and arm coordinates on a finite domain; its outputs are in its own units (a
BoTorch outcome transform is applied by its ``posterior``), so ``standardized`` is accepted and ignored.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from evroute.bo.base import FloatArray
from evroute.errors import ParameterError, check_positive
from evroute.kernels.posterior import GaussianPosterior

__all__ = ["TorchModel"]


class TorchModel:
    """Adapter from a GPyTorch ``ExactGP`` (or BoTorch ``Model``) to the evroute model interface.

    Args:
        model: a ``gpytorch.models.ExactGP`` (BoTorch's ``SingleTaskGP`` is one).
        likelihood: its Gaussian likelihood (needed by :meth:`fit_hyperparameters`).
        fit_iters: Adam iterations of :meth:`fit_hyperparameters`.
        lr: Adam learning rate.
    """

    def __init__(self, model: Any, likelihood: Any = None, *, fit_iters: int = 100, lr: float = 0.1) -> None:
        import torch

        if not hasattr(model, "set_train_data") and not hasattr(model, "posterior"):
            raise ParameterError("model must be a gpytorch ExactGP or a BoTorch Model")
        self.model = model
        self.likelihood = likelihood if likelihood is not None else getattr(model, "likelihood", None)
        self.fit_iters = int(fit_iters)
        self.lr = check_positive("lr", lr)
        self._torch = torch
        params = list(model.parameters())
        self.dtype = params[0].dtype if params else torch.float64
        self._z: FloatArray | None = None
        self._y: FloatArray | None = None

    def _tensor(self, x: ArrayLike) -> Any:
        return self._torch.as_tensor(np.asarray(x, dtype=float), dtype=self.dtype)

    def set_train_data(self, Z: ArrayLike, y: ArrayLike, *, fit: bool = False) -> None:  # noqa: N803
        """Replace the training data by ``Z`` ``(n, p)``, ``y`` ``(n,)``; refit the hyperparameters if ``fit``."""
        self._z = np.atleast_2d(np.asarray(Z, dtype=float)).copy()
        self._y = np.asarray(y, dtype=float).reshape(-1).copy()
        self.model.set_train_data(inputs=self._tensor(self._z), targets=self._tensor(self._y), strict=False)
        if fit:
            self.fit_hyperparameters()

    def condition_on_observation(self, z: ArrayLike, y: float) -> None:
        """Add one observation ``y`` at ``z`` ``(p,)`` (the model's data are replaced; ``O(n^3)`` at the next
        posterior)."""
        zv = np.asarray(z, dtype=float).reshape(1, -1)
        if self._z is None or self._y is None:
            self.set_train_data(zv, [y])
        else:
            self.set_train_data(np.vstack([self._z, zv]), np.append(self._y, float(y)))

    def fit_hyperparameters(self) -> None:
        """Maximise the exact marginal likelihood (GPyTorch's ``ExactMarginalLogLikelihood``) with Adam."""
        import gpytorch

        if self.likelihood is None:
            raise ParameterError("fit_hyperparameters needs the model's likelihood")
        model, lik = self.model, self.likelihood
        model.train()
        lik.train()
        mll = gpytorch.mlls.ExactMarginalLogLikelihood(lik, model)
        opt = self._torch.optim.Adam(model.parameters(), lr=self.lr)
        x, y = model.train_inputs[0], model.train_targets
        for _ in range(self.fit_iters):
            opt.zero_grad()
            loss = -mll(model(x), y)
            loss.backward()
            opt.step()
        model.eval()
        lik.eval()

    def _mvn(self, x: Any) -> Any:
        if hasattr(self.model, "posterior") and callable(self.model.posterior):
            return self.model.posterior(x).distribution  # BoTorch: GPyTorchPosterior
        return self.model(x)

    def posterior(self, X: ArrayLike, *, standardized: bool = False) -> GaussianPosterior:  # noqa: N803
        """Posterior of the latent ``f`` at ``X`` ``(m, p)``: means, variances and (lazily) the joint covariance."""
        import gpytorch

        torch = self._torch
        x = self._tensor(np.atleast_2d(X))
        self.model.eval()
        with torch.no_grad(), gpytorch.settings.fast_pred_var(False):
            mvn = self._mvn(x)
            mean = mvn.mean.detach().cpu().numpy().astype(float).reshape(-1)
            var = mvn.variance.detach().cpu().numpy().astype(float).reshape(-1)

        def cov() -> FloatArray:
            with torch.no_grad():
                return mvn.covariance_matrix.detach().cpu().numpy().astype(float)

        return GaussianPosterior(mean, var, cov)

    def mean_var_grad(self, z: FloatArray) -> tuple[float, float, FloatArray, FloatArray]:
        """Posterior mean and variance of ``f`` at one input ``z`` ``(p,)`` and their gradients ``(p,)`` (autograd)."""
        import gpytorch

        torch = self._torch
        x = self._tensor(np.asarray(z, dtype=float).reshape(1, -1)).requires_grad_(True)
        self.model.eval()
        with gpytorch.settings.fast_pred_var(False):
            mvn = self._mvn(x)
            mean, var = mvn.mean.reshape(-1)[0], mvn.variance.reshape(-1)[0]
            dmean = torch.autograd.grad(mean, x, retain_graph=True)[0]
            dvar = torch.autograd.grad(var, x)[0]
        as_np = lambda v: v.detach().cpu().numpy().astype(float).reshape(-1)  # noqa: E731
        return float(mean.detach()), max(float(var.detach()), 0.0), as_np(dmean), as_np(dvar)
