"""Huber loss and gradient clipping."""

from __future__ import annotations

from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion.tree_util import tree_map
from fluxion_rl import _checks

Array = Any

__all__ = ["huber_loss", "clip_gradient"]


def huber_loss(x: Array, delta: float = 1.0) -> Array:
    """Elementwise Huber loss: ``0.5 x^2`` for ``|x| <= delta``, linear with slope ``delta`` beyond.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.huber_loss(jnp.array([0.5, 3.0])).tolist()
        [0.125, 2.5]
    """
    _checks.kinds("huber_loss", x=(x, "float"))
    abs_x = jnp.abs(x)
    quadratic = jnp.minimum(abs_x, delta)
    # abs_x - quadratic equals max(abs_x - delta, 0) without a second kink in the gradient.
    linear = abs_x - quadratic
    return 0.5 * quadratic**2 + delta * linear


@fluxion.custom_gradient
def _clip_gradient(x, gradient_min, gradient_max):
    def backward(g):
        return tree_map(lambda gi: jnp.clip(gi, gradient_min, gradient_max), g), 0.0, 0.0

    return x, backward


def clip_gradient(x: Any, gradient_min: float, gradient_max: float) -> Any:
    """Identity in the forward pass; the backward pass clips the gradient to ``[min, max]``.

    ``grad(lambda x: 0.5 * clip_gradient(x, -1, 1) ** 2)`` equals ``grad(huber_loss)``.
    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> import fluxion
        >>> float(fluxion.grad(lambda x: 3 * rlax.clip_gradient(x, -1.0, 1.0))(2.0))
        1.0
    """
    _checks.kinds("clip_gradient", x=(x, "float"))
    return _clip_gradient(x, gradient_min, gradient_max)
