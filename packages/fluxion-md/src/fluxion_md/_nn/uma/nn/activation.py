"""Equivariant activations of UMA, as ``jax_md._nn.uma.nn.activation``: scaled SiLU, gating of
the higher degrees by sigmoids of extra scalars, and the separable S2 activation (SiLU applied
to the values on a sphere grid)."""

from __future__ import annotations

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion_md._nn._linen import LinenModule
from fluxion_md.util import Array

__all__ = ["ScaledSiLU", "GateActivation", "SeparableS2Activation"]


class ScaledSiLU(LinenModule):
    """``silu(x) * scale_factor`` (default ``1 / 0.6``-ish, unit output variance).

    Example:
        >>> float(ScaledSiLU().apply({}, jnp.float32(0.0)))
        0.0
    """

    scale_factor: float = 1.6791767923989418

    def __call__(self, x: Array) -> Array:
        return fluxion.nn.silu(x) * self.scale_factor


class GateActivation(LinenModule):
    """SiLU on the scalar coefficient of ``input_tensors`` (``[N, K, C]``) and every other
    coefficient times ``sigmoid`` of its degree's gate in ``gating_scalars``
    (``[N, lmax * C]``): coefficients in l-major order, or with ``m_prime`` in m-major order.

    Example:
        >>> act = GateActivation(lmax=1, mmax=1, num_channels=2)
        >>> act.apply({}, jnp.zeros((3, 2)), jnp.ones((3, 4, 2))).shape
        (3, 4, 2)
    """

    lmax: int
    mmax: int
    num_channels: int
    m_prime: bool = False

    def _expand_index(self) -> np.ndarray:
        index = []
        if self.m_prime:
            index += [d - 1 for d in range(1, self.lmax + 1)]
            for m in range(1, self.mmax + 1):
                index += [d - 1 for d in range(m, self.lmax + 1)] * 2
        else:
            for d in range(1, self.lmax + 1):
                index += [d - 1] * min(2 * d + 1, 2 * self.mmax + 1)
        return np.asarray(index, np.int32)

    def __call__(self, gating_scalars: Array, input_tensors: Array) -> Array:
        gating_scalars, input_tensors = jnp.asarray(gating_scalars), jnp.asarray(input_tensors)
        index = self._expand_index()
        if gating_scalars.shape[-1] != self.lmax * self.num_channels or \
                input_tensors.shape[1] != len(index) + 1:
            raise ValueError(f"GateActivation: expected gating_scalars [N, {self.lmax * self.num_channels}]"
                             f" and input_tensors [N, {len(index) + 1}, {self.num_channels}], got "
                             f"{tuple(gating_scalars.shape)} and {tuple(input_tensors.shape)}")
        gates = fluxion.nn.sigmoid(gating_scalars)
        gates = gates.reshape(gates.shape[0], self.lmax, self.num_channels)[:, jnp.asarray(index), :]
        return jnp.concatenate([fluxion.nn.silu(input_tensors[:, :1, :]),
                                input_tensors[:, 1:, :] * gates], axis=1)


class SeparableS2Activation(LinenModule):
    """SiLU on ``input_scalars`` (becoming the scalar coefficient) and, for the other
    coefficients, SiLU of the features' values on the grid (``to_grid_mat``) projected back
    (``from_grid_mat``). With ``mapping_to_m`` the features are m-major and converted to
    l-major and back around the grid.

    Example:
        >>> from fluxion_md._nn.uma.common.so3 import create_so3_grid
        >>> g = create_so3_grid(1, 1)
        >>> act = SeparableS2Activation(1, 1, g.to_grid_mat, g.from_grid_mat)
        >>> act.apply({}, jnp.ones((3, 2)), jnp.ones((3, 4, 2))).shape
        (3, 4, 2)
    """

    lmax: int
    mmax: int
    to_grid_mat: Array
    from_grid_mat: Array
    mapping_to_m: Array | None = None

    def __call__(self, input_scalars: Array, input_tensors: Array) -> Array:
        scalars = fluxion.nn.silu(jnp.asarray(input_scalars))
        scalars = scalars.reshape(scalars.shape[0], 1, scalars.shape[-1])
        x = jnp.asarray(input_tensors)
        if self.mapping_to_m is not None:
            x = jnp.einsum("mk,zkc->zmc", self.mapping_to_m.T, x)
        grid = fluxion.nn.silu(jnp.einsum("bai,zic->zbac", self.to_grid_mat, x))
        x = jnp.einsum("bai,zbac->zic", self.from_grid_mat, grid)
        if self.mapping_to_m is not None:
            x = jnp.einsum("mk,zkc->zmc", self.mapping_to_m, x)
        return jnp.concatenate([scalars, x[:, 1:, :]], axis=1)
