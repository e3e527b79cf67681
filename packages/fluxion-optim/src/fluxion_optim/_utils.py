"""Small utilities: gradient scaling and a diagonal Gaussian."""

from __future__ import annotations

import math
from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import lax

__all__ = ["MultiNormalDiagFromLogScale", "multi_normal", "scale_gradient"]


class MultiNormalDiagFromLogScale:
    """A Gaussian with diagonal covariance parameterised by its mean and log standard
    deviation.

    Example:
        >>> import fluxion
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> d = optax.multi_normal(jnp.zeros(2), jnp.zeros(2))
        >>> d.sample((3,), fluxion.random.PRNGKey(0)).shape
        (3, 2)
    """

    def __init__(self, loc: Any, log_scale: Any):
        self._log_scale = jnp.asarray(log_scale)
        self._scale = jnp.exp(log_scale)
        self._mean = jnp.asarray(loc)
        self._param_shape = tuple(jnp.broadcast_shapes(self._mean.shape, self._scale.shape))

    def sample(self, shape: tuple[int, ...], key: Any) -> Any:
        """Draws samples of shape ``shape + param_shape``."""
        sample_shape = tuple(shape) + self._param_shape
        return fluxion.random.normal(key, shape=sample_shape) * self._scale + self._mean

    def log_prob(self, x: Any) -> Any:
        """Log density of ``x``, summed over the parameter axes."""
        z = (x - self._mean) / self._scale
        log_prob = -0.5 * z * z - jnp.log(self._scale) - 0.5 * math.log(2 * math.pi)
        axes = tuple(-(i + 1) for i in range(len(self._param_shape)))
        return jnp.sum(log_prob, axis=axes)

    @property
    def log_scale(self) -> Any:
        """The log standard deviation."""
        return self._log_scale

    @property
    def params(self) -> list[Any]:
        """``[mean, log_scale]``."""
        return [self._mean, self._log_scale]


def multi_normal(loc: Any, log_scale: Any) -> MultiNormalDiagFromLogScale:
    """A diagonal Gaussian with mean ``loc`` and standard deviation ``exp(log_scale)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.multi_normal(jnp.zeros(2), jnp.zeros(2)).log_prob(jnp.zeros(2)).shape
        ()
    """
    return MultiNormalDiagFromLogScale(loc=loc, log_scale=log_scale)


@fluxion.custom_vjp
def _scale_gradient(inputs: Any, scale: Any) -> Any:
    del scale
    return inputs


def _scale_gradient_fwd(inputs: Any, scale: Any) -> tuple[Any, Any]:
    return _scale_gradient(inputs, scale), scale


def _scale_gradient_bwd(scale: Any, g: Any) -> tuple[Any, None]:
    return fluxion.tree.map(lambda g_: g_ * scale, g), None


_scale_gradient.defvjp(_scale_gradient_fwd, _scale_gradient_bwd)


def scale_gradient(inputs: Any, scale: Any) -> Any:
    """Identity in the forward pass; multiplies the gradient by ``scale`` in the backward pass.

    Example:
        >>> import fluxion
        >>> import fluxion_optim as optax
        >>> float(fluxion.grad(lambda x: optax.scale_gradient(x, 0.5) * 2.0)(1.0))
        1.0
    """
    if isinstance(scale, (int, float)) and scale == 1.0:
        return inputs
    if isinstance(scale, (int, float)) and scale == 0.0:
        return lax.stop_gradient(inputs)
    return _scale_gradient(inputs, scale)
