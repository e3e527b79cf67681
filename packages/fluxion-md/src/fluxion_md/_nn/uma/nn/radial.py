"""Radial functions of UMA, as ``jax_md._nn.uma.nn.radial``: the polynomial cutoff envelope,
a Gaussian distance basis and the radial MLP (Dense, LayerNorm, SiLU, ..., Dense)."""

from __future__ import annotations

from typing import Sequence

import fluxion
import fluxion.numpy as jnp
from fluxion_md._nn._linen import LinenModule
from fluxion_md._nn.uma._layers import Dense, LayerNorm
from fluxion_md.util import Array
from fluxion_nn import bridge

__all__ = ["PolynomialEnvelope", "GaussianSmearing", "RadialMLP"]


class PolynomialEnvelope(LinenModule):
    """``1 + a d^p + b d^(p+1) + c d^(p+2)`` of the scaled distance ``d`` (zero for ``d >= 1``),
    with ``a, b, c`` making the value, slope and curvature vanish at ``d = 1``.

    Example:
        >>> env = PolynomialEnvelope(exponent=5)
        >>> env.apply({}, jnp.array([0.0, 1.0])).tolist()
        [1.0, 0.0]
    """

    exponent: int = 5

    def _coefficients(self) -> tuple[float, float, float]:
        p = float(self.exponent)
        return -(p + 1) * (p + 2) / 2, p * (p + 2), -p * (p + 1) / 2

    def __call__(self, d_scaled: Array) -> Array:
        a, b, c = self._coefficients()
        d_scaled = jnp.asarray(d_scaled)
        value = 1.0 + d_scaled ** float(self.exponent) * (a + d_scaled * (b + c * d_scaled))
        return jnp.where(d_scaled < 1.0, value, 0.0)


class GaussianSmearing(LinenModule):
    """``exp(coeff (d - mu_k)^2)`` for ``num_gaussians`` centres ``mu_k`` evenly from ``start``
    to ``stop``, ``coeff = -1 / (2 (basis_width_scalar * spacing)^2)``: ``[E, num_gaussians]``.

    Example:
        >>> GaussianSmearing(num_gaussians=4).apply({}, jnp.ones(3)).shape
        (3, 4)
    """

    start: float = 0.0
    stop: float = 5.0
    num_gaussians: int = 50
    basis_width_scalar: float = 2.0

    def __call__(self, dist: Array) -> Array:
        centres = jnp.linspace(self.start, self.stop, self.num_gaussians)
        coeff = -0.5 / (self.basis_width_scalar * (centres[1] - centres[0])) ** 2
        diff = jnp.reshape(jnp.asarray(dist), (-1, 1)) - centres.reshape(1, -1)
        return jnp.exp(coeff * diff ** 2)


class RadialMLP(LinenModule):
    """Dense layers of widths ``channels_list[1:]`` (``linear_1``, ...), each but the last
    followed by a LayerNorm (``norm_i``) and SiLU.

    Example:
        >>> mlp = RadialMLP(channels_list=(4, 8, 3))
        >>> v = mlp.init(fluxion.random.PRNGKey(0), jnp.ones((2, 4)))
        >>> sorted(v["params"])
        ['linear_1', 'linear_2', 'norm_1']
    """

    channels_list: Sequence[int]

    @bridge.compact
    def __call__(self, inputs: Array) -> Array:
        x = inputs
        last = len(self.channels_list) - 1
        for i in range(1, last + 1):
            x = Dense(features=self.channels_list[i], use_bias=True, name=f"linear_{i}")(x)
            if i < last:
                x = fluxion.nn.silu(LayerNorm(name=f"norm_{i}")(x))
        return x
