"""Gaussian kernel density estimation (mirrors ``jax.scipy.stats.gaussian_kde``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion.tree_util import register_pytree_node_class
from fluxion_scipy._util import promote_inexact
from fluxion_scipy.special import logsumexp, ndtr

__all__ = ["gaussian_kde"]


@register_pytree_node_class
class gaussian_kde:  # noqa: N801 (SciPy's name)
    """A Gaussian kernel density estimate of ``dataset`` (shape (d, n), or (n,) for d = 1).

    ``bw_method`` is "scott" (default), "silverman", a scalar factor, or a callable of the
    estimator returning the factor; ``weights`` (n,) weight the points. A pytree: it can be passed
    through ``jit`` and ``vmap``.

    Example:
        >>> kde = gaussian_kde(jnp.array([0.0, 1.0, 2.0]))
        >>> kde.pdf(jnp.array([1.0])).shape
        (1,)
    """

    def __init__(self, dataset: Any, bw_method: str | Any | Callable[[Any], Any] | None = None,
                 weights: Any = None) -> None:
        dataset, = promote_inexact("gaussian_kde", dataset)
        if jnp.issubdtype(dataset.dtype, jnp.complexfloating):
            raise NotImplementedError("gaussian_kde: complex data is not supported")
        dataset = jnp.atleast_2d(dataset)
        d, n = dataset.shape
        if n < 2:
            raise ValueError(f"gaussian_kde: the dataset needs more than one point, got shape "
                             f"{dataset.shape}")
        if weights is None:
            w = jnp.full((n,), 1.0 / n, dataset.dtype)
        else:
            w = jnp.asarray(weights, dataset.dtype)
            if w.shape != (n,):
                raise ValueError(f"gaussian_kde: weights must have shape ({n},), got {w.shape}")
            w = w / jnp.sum(w)
        self.dataset, self.weights = dataset, w
        self.neff = 1.0 / jnp.sum(w * w)
        if bw_method is None or bw_method == "scott":
            factor = self.neff ** (-1.0 / (d + 4))
        elif bw_method == "silverman":
            factor = (self.neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
        elif callable(bw_method):
            factor = bw_method(self)
        elif isinstance(bw_method, str):
            raise ValueError(f"gaussian_kde: bw_method must be 'scott', 'silverman', a scalar or a "
                             f"callable, got {bw_method!r}")
        else:
            factor = jnp.asarray(bw_method, dataset.dtype)
        mean = jnp.sum(dataset * w, axis=1, keepdims=True)
        centred = dataset - mean
        data_cov = (centred * w) @ centred.T / (1.0 - jnp.sum(w * w))
        self.factor = factor
        self.covariance = data_cov * factor ** 2
        self.inv_cov = jnp.linalg.inv(self.covariance)

    def tree_flatten(self) -> tuple[tuple, None]:
        """Children for the pytree registry."""
        return (self.dataset, self.weights, self.neff, self.factor, self.covariance,
                self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux: Any, children: tuple) -> gaussian_kde:
        """Rebuilds an estimator from its children."""
        obj = object.__new__(cls)
        (obj.dataset, obj.weights, obj.neff, obj.factor, obj.covariance, obj.inv_cov) = children
        return obj

    @property
    def d(self) -> int:
        """Number of dimensions."""
        return self.dataset.shape[0]

    @property
    def n(self) -> int:
        """Number of data points."""
        return self.dataset.shape[1]

    def _points(self, points: Any) -> Any:
        points = jnp.atleast_2d(jnp.asarray(points, self.dataset.dtype))
        if points.shape[0] != self.d:
            if points.shape[1] == self.d and points.ndim == 2 and points.shape[0] == 1:
                points = points.T
            else:
                raise ValueError(f"gaussian_kde: points must have {self.d} rows, got shape "
                                 f"{points.shape}")
        return points

    def _log_kernel_sums(self, points: Any, cov: Any, centres: Any, weights: Any) -> Any:
        # log sum_i weights_i N(points_j; centres_i, cov), for each column j of points.
        chol = jnp.linalg.cholesky(cov)
        diff = points[:, None, :] - centres[:, :, None]  # (d, n, m)
        flat = diff.reshape(self.d, -1)
        y = jnp.linalg.solve(chol, flat).reshape(diff.shape)
        log_norm = jnp.sum(jnp.log(jnp.diagonal(chol))) + 0.5 * self.d * math.log(2 * math.pi)
        log_k = -0.5 * jnp.sum(y * y, axis=0) - log_norm  # (n, m)
        return logsumexp(log_k, axis=0, b=weights[:, None])

    def evaluate(self, points: Any) -> Any:
        """The density at ``points`` (shape (d, m), or (m,) for d = 1): an (m,) array.

        Example:
            >>> gaussian_kde(jnp.array([0.0, 1.0])).evaluate(jnp.array([0.5])).shape
            (1,)
        """
        return jnp.exp(self.logpdf(points))

    __call__ = evaluate

    def pdf(self, x: Any) -> Any:
        """Same as ``evaluate``.

        Example:
            >>> gaussian_kde(jnp.array([0.0, 1.0])).pdf(jnp.array([0.5])).shape
            (1,)
        """
        return self.evaluate(x)

    def logpdf(self, x: Any) -> Any:
        """Log of the density at ``x``, computed in log space.

        Example:
            >>> gaussian_kde(jnp.array([0.0, 1.0])).logpdf(jnp.array([0.5])).shape
            (1,)
        """
        return self._log_kernel_sums(self._points(x), self.covariance, self.dataset, self.weights)

    def integrate_gaussian(self, mean: Any, cov: Any) -> Any:
        """Integral of the estimate times the Gaussian N(mean, cov).

        Example:
            >>> kde = gaussian_kde(jnp.array([0.0, 1.0]))
            >>> kde.integrate_gaussian(jnp.array([0.0]), jnp.eye(1)).shape
            ()
        """
        mean = jnp.asarray(mean, self.dataset.dtype).reshape(self.d, 1)
        cov = jnp.asarray(cov, self.dataset.dtype).reshape(self.d, self.d)
        return jnp.exp(self._log_kernel_sums(mean, self.covariance + cov, self.dataset,
                                             self.weights))[0]

    def integrate_box_1d(self, low: Any, high: Any) -> Any:
        """Probability mass of a 1-D estimate between ``low`` and ``high``.

        Example:
            >>> float(gaussian_kde(jnp.array([0.0, 1.0])).integrate_box_1d(-100.0, 100.0))
            1.0
        """
        if self.d != 1:
            raise ValueError(f"gaussian_kde.integrate_box_1d: needs 1-D data, got d={self.d}")
        sd = jnp.sqrt(self.covariance[0, 0])
        centres = self.dataset[0]
        mass = ndtr((high - centres) / sd) - ndtr((low - centres) / sd)
        return jnp.sum(self.weights * mass)

    def integrate_kde(self, other: gaussian_kde) -> Any:
        """Integral of the product of two estimates of the same dimension.

        Example:
            >>> kde = gaussian_kde(jnp.array([0.0, 1.0]))
            >>> kde.integrate_kde(kde).shape
            ()
        """
        if other.d != self.d:
            raise ValueError(f"gaussian_kde.integrate_kde: dimensions differ ({self.d} vs "
                             f"{other.d})")
        log_sums = self._log_kernel_sums(other.dataset, self.covariance + other.covariance,
                                         self.dataset, self.weights)
        return jnp.sum(other.weights * jnp.exp(log_sums))

    def resample(self, key: Any, shape: Any = ()) -> Any:
        """Draws of shape (d, *shape) from the estimate.

        Example:
            >>> import fluxion.random as jr
            >>> gaussian_kde(jnp.array([0.0, 1.0])).resample(jr.key(0), (5,)).shape
            (1, 5)
        """
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        k_noise, k_pick = jr.split(key)
        noise = jr.multivariate_normal(k_noise, jnp.zeros(self.d, self.dataset.dtype),
                                       self.covariance, shape)
        idx = jr.choice(k_pick, self.n, shape, p=self.weights)
        return self.dataset[:, idx] + jnp.moveaxis(noise, -1, 0)

    def integrate_box(self, low_bounds: Any, high_bounds: Any, maxpts: Any = None) -> Any:
        """Not supported (as in JAX): raises NotImplementedError."""
        raise NotImplementedError("gaussian_kde.integrate_box is not supported")

    def set_bandwidth(self, bw_method: Any = None) -> None:
        """Not supported (as in JAX; the estimator is immutable): raises NotImplementedError."""
        raise NotImplementedError("gaussian_kde.set_bandwidth is not supported; build a new "
                                  "gaussian_kde with the new bw_method")
