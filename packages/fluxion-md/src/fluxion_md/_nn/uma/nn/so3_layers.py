"""The SO(3)-equivariant linear layer of UMA, as ``jax_md._nn.uma.nn.so3_layers``."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion_md._nn._linen import LinenModule
from fluxion_md.util import Array
from fluxion_nn import bridge

__all__ = ["SO3Linear"]


def _uniform_init(bound: float) -> Callable[..., Array]:
    """Initializer drawing uniformly from ``[-bound, bound)`` (torch's Linear default)."""

    def init(key: Any, shape: Any, dtype: Any = jnp.float32) -> Array:
        return fluxion.random.uniform(key, shape, dtype, minval=-bound, maxval=bound)

    return init


def _degree_of_each_coefficient(lmax: int) -> np.ndarray:
    return np.repeat(np.arange(lmax + 1), [2 * degree + 1 for degree in range(lmax + 1)])


class SO3Linear(LinenModule):
    """One ``[out, in]`` matrix per degree (``weight``: ``[lmax+1, out, in]``, uniform in
    ``+-1/sqrt(in)``) applied to every coefficient of that degree of ``[B, (lmax+1)^2, in]``
    features, plus a ``bias`` (``[out]``, zeros) on the scalar coefficient.

    Example:
        >>> lin = SO3Linear(out_features=4, lmax=1)
        >>> x = jnp.ones((2, 4, 3))
        >>> lin.apply(lin.init(fluxion.random.PRNGKey(0), x), x).shape
        (2, 4, 4)
    """

    out_features: int
    lmax: int
    use_bias: bool = True

    @bridge.compact
    def __call__(self, input_embedding: Array) -> Array:
        x = jnp.asarray(input_embedding)
        if x.ndim != 3 or x.shape[1] != (self.lmax + 1) ** 2:
            raise ValueError(f"SO3Linear: input must be [B, {(self.lmax + 1) ** 2}, C] for "
                             f"lmax={self.lmax}, got shape {tuple(x.shape)}")
        width = x.shape[-1]
        weight = self.param("weight", _uniform_init(1.0 / math.sqrt(width)),
                            (self.lmax + 1, self.out_features, width))[...]
        per_coefficient = weight[jnp.asarray(_degree_of_each_coefficient(self.lmax))]
        out = jnp.einsum("bmi,moi->bmo", x, per_coefficient)
        if self.use_bias:
            bias = self.param("bias", fluxion.nn.initializers.zeros, (self.out_features,))[...]
            out = out.at[:, 0, :].add(bias)
        return out
