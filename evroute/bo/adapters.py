"""Use a GPyTorch ``ExactGP`` or a BoTorch ``Model`` where an evroute model is expected.

:class:`TorchModel` wraps a torch model so that it offers the evroute model interface: ``posterior(X)`` returning a
:class:`~evroute.bo.posterior.GaussianPosterior` (numpy, float64), ``condition(X, y)`` to replace the training data
and ``fit_hyperparameters()`` by maximising the exact marginal likelihood.  :class:`ModelUCB` is GP-UCB on any such
model: the acquisition sees only the posterior, the optimiser only the acquisition.

GPyTorch::

    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    gp = MyExactGP(train_x, train_y, likelihood)          # any gpytorch.models.ExactGP
    policy = ModelUCB(BoxDomain.unit(2), TorchModel(gp, likelihood), seed=0)

BoTorch (optional, not a dependency of evroute; install ``botorch`` compatible with the pinned torch/gpytorch)::

    from botorch.models import SingleTaskGP
    gp = SingleTaskGP(train_x, train_y[:, None])       # a BoTorch Model is a GPyTorch ExactGP with .posterior
    policy = ModelUCB(domain, TorchModel(gp, gp.likelihood), seed=0)

A BoTorch ``Model``'s ``posterior(X)`` (a ``GPyTorchPosterior``) is used directly when present; otherwise the
adapter evaluates ``likelihood``-free ``model(X)`` in eval mode (the latent ``f``, as our models return).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from evroute.bo.base import Domain, FloatArray, Policy, SeedLike
from evroute.bo.posterior import GaussianPosterior
from evroute.errors import ParameterError, check_positive

__all__ = ["ModelUCB", "TorchModel"]


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

    def _tensor(self, x: ArrayLike) -> Any:
        return self._torch.as_tensor(np.asarray(x, dtype=float), dtype=self.dtype)

    def condition(self, X: ArrayLike, y: ArrayLike) -> None:  # noqa: N803
        """Replace the training data by ``X`` ``(n, d)``, ``y`` ``(n,)`` (hyperparameters unchanged)."""
        x_t, y_t = self._tensor(np.atleast_2d(X)), self._tensor(np.asarray(y, dtype=float).reshape(-1))
        self.model.set_train_data(inputs=x_t, targets=y_t, strict=False)

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

    def posterior(self, X: ArrayLike) -> GaussianPosterior:  # noqa: N803
        """Posterior of the latent ``f`` at ``X`` ``(m, d)``: means, variances and (lazily) the joint covariance."""
        import gpytorch

        torch = self._torch
        x = self._tensor(np.atleast_2d(X))
        self.model.eval()
        with torch.no_grad(), gpytorch.settings.fast_pred_var(False):
            if hasattr(self.model, "posterior") and callable(self.model.posterior):
                mvn = self.model.posterior(x).distribution  # BoTorch: GPyTorchPosterior
            else:
                mvn = self.model(x)
            mean = mvn.mean.detach().cpu().numpy().astype(float).reshape(-1)
            var = mvn.variance.detach().cpu().numpy().astype(float).reshape(-1)

        def cov() -> FloatArray:
            with torch.no_grad():
                return mvn.covariance_matrix.detach().cpu().numpy().astype(float)

        return GaussianPosterior(mean, var, cov)


class ModelUCB(Policy):
    """GP-UCB on any model with ``posterior`` / ``condition`` (e.g. :class:`TorchModel`): each round the model is
    conditioned on the unit-cube data (hyperparameters refitted every ``refit_every`` rounds) and
    ``x = argmax mu + width sigma`` over ``n_candidates`` random points plus perturbations of the best observed one.

    Args:
        domain: a box (the model sees unit-cube coordinates) or a finite domain (arm coordinates; all arms scored).
        model: the model.
        width: UCB width on ``sigma``.
        n_candidates: random candidates per round on a box.
        refit_every: refit hyperparameters every this many rounds (0: never).
        seed: random seed.
    """

    def __init__(
        self,
        domain: Domain,
        model: Any,
        *,
        width: float = 2.0,
        n_candidates: int = 1000,
        refit_every: int = 0,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(domain, seed=seed)
        self.model = model
        self.width = check_positive("width", width, allow_zero=True)
        self.n_candidates = int(n_candidates)
        self.refit_every = int(refit_every)

    def _coords(self, x: FloatArray) -> FloatArray:
        return self.domain.to_unit(x) if hasattr(self.domain, "to_unit") else np.asarray(x, dtype=float)  # type: ignore

    def _ask(self, t: float | None) -> FloatArray:
        from evroute.bo.acquisition import upper_confidence_bound

        if self.n_obs == 0:
            return self.domain.sample(1, self.rng)[0]
        self.model.condition(self._coords(self.X), self.y)
        if self.refit_every and self.n_obs % self.refit_every == 0:
            self.model.fit_hyperparameters()
        if hasattr(self.domain, "points"):
            cand = self.domain.points  # type: ignore[attr-defined]
            vals = upper_confidence_bound(self.model.posterior(cand), self.width)
            return cand[int(np.argmax(vals))].copy()
        best = self._coords(self.X[int(np.argmax(self.y))])
        local = np.clip(best + 0.02 * self.rng.standard_normal((64, self.domain.dim)), 0.0, 1.0)
        cand = np.vstack([self.rng.random((self.n_candidates, self.domain.dim)), local])
        vals = upper_confidence_bound(self.model.posterior(cand), self.width)
        return self.domain.from_unit(cand[int(np.argmax(vals))])  # type: ignore[attr-defined]
