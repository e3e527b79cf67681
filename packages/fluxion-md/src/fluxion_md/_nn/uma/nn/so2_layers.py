"""SO(2) convolutions of UMA, as ``jax_md._nn.uma.nn.so2_layers``: in an edge-aligned frame an
SO(3)-equivariant map reduces to one complex-linear map per order ``m`` (features in m-major
order: the ``m = 0`` coefficients, then for each ``m > 0`` the ``+m`` and the ``-m`` ones)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion_md._nn._linen import LinenModule
from fluxion_md._nn.uma._layers import Dense
from fluxion_md._nn.uma.nn.radial import RadialMLP
from fluxion_md.util import Array
from fluxion_nn import bridge

__all__ = ["SO2MConv", "SO2Convolution"]


class SO2MConv(LinenModule):
    """The convolution of order ``m``: a bias-free Dense ``fc`` (kernel
    ``[C_in, 2 * m_output_channels * (lmax - m + 1)]``, variance-scaling 0.5 fan-in uniform)
    on ``x_m`` of shape ``[E, 2, C_in]`` (real, imaginary), read as the four blocks
    ``r0, i0, r1, i1`` and combined as ``(r0 - i1, r1 + i0)``; each part is returned as
    ``[E, lmax - m + 1, m_output_channels]``.

    Example:
        >>> conv = SO2MConv(m=1, sphere_channels=2, m_output_channels=3, lmax=2)
        >>> x = jnp.ones((4, 2, 4))
        >>> real, imag = conv.apply(conv.init(fluxion.random.PRNGKey(0), x), x)
        >>> real.shape, imag.shape
        ((4, 2, 3), (4, 2, 3))
    """

    m: int
    sphere_channels: int
    m_output_channels: int
    lmax: int

    @bridge.compact
    def __call__(self, x_m: Array) -> tuple[Array, Array]:
        x_m = jnp.asarray(x_m)
        if x_m.ndim != 3 or x_m.shape[1] != 2:
            raise ValueError(f"SO2MConv: x_m must be [E, 2, C], got shape {tuple(x_m.shape)}")
        count = self.lmax - self.m + 1
        half = self.m_output_channels * count
        init = fluxion.nn.initializers.variance_scaling(scale=0.5, mode="fan_in",
                                                        distribution="uniform")
        y = Dense(features=2 * half, use_bias=False, kernel_init=init, name="fc")(x_m)
        edges = y.shape[0]
        blocks = y.reshape(edges, -1, half)
        real = blocks[:, 0, :] - blocks[:, 3, :]
        imag = blocks[:, 2, :] + blocks[:, 1, :]
        shape = (edges, count, self.m_output_channels)
        return real.reshape(shape), imag.reshape(shape)


class SO2Convolution(LinenModule):
    """SO(2) convolutions of every order ``0..mmax`` of m-major features ``x``
    (``[E, sum(m_size), sphere_channels]``): ``m = 0`` through the Dense ``fc_m0`` (with bias;
    ``extra_m0_output_channels`` more outputs returned apart, e.g. for gating), ``m > 0``
    through :class:`SO2MConv` ``so2_m_conv_{m}``. Unless ``internal_weights``, the inputs of each
    order are first scaled by a :class:`RadialMLP` ``rad_func`` of the edge features ``x_edge``
    (widths ``edge_channels_list`` plus the total input width).

    Example:
        >>> conv = SO2Convolution(sphere_channels=2, m_output_channels=3, lmax=2, mmax=2,
        ...                       m_size=[3, 4, 2])
        >>> x = jnp.ones((5, 9, 2))
        >>> conv.apply(conv.init(fluxion.random.PRNGKey(0), x, None), x, None).shape
        (5, 9, 3)
    """

    sphere_channels: int
    m_output_channels: int
    lmax: int
    mmax: int
    m_size: Sequence[int]
    internal_weights: bool = True
    edge_channels_list: Sequence[int] | None = None
    extra_m0_output_channels: int | None = None

    @bridge.compact
    def __call__(self, x: Array, x_edge: Array | None) -> Array | tuple[Array, Array]:
        x = jnp.asarray(x)
        rows = sum(self.m_size[m] for m in range(self.mmax + 1))
        if x.ndim != 3 or x.shape[1] != rows:
            raise ValueError(f"SO2Convolution: x must be [E, {rows}, C] for m_size="
                             f"{list(self.m_size)} and mmax={self.mmax}, got {tuple(x.shape)}")
        extra = self.extra_m0_output_channels
        m0_width = self.m_output_channels * (self.lmax + 1) + (extra or 0)
        widths = [(self.lmax - m + 1) * self.sphere_channels for m in range(self.mmax + 1)]
        fc_m0 = Dense(features=m0_width, use_bias=True, name="fc_m0")
        if self.internal_weights:
            scales = [None] * (self.mmax + 1)
        else:
            channels = list(self.edge_channels_list) + [sum(widths)]
            radial = RadialMLP(channels_list=channels, name="rad_func")(x_edge)
            scales = jnp.split(radial, np.cumsum(widths[:-1]), axis=1)
        pieces = jnp.split(x, np.cumsum([self.m_size[m] for m in range(self.mmax)]), axis=1)
        edges = x.shape[0]
        x0 = pieces[0].reshape(edges, -1)
        if scales[0] is not None:
            x0 = x0 * scales[0]
        x0 = fc_m0(x0)
        if extra is not None:
            x0_extra, x0 = x0[:, :extra], x0[:, extra:]
        out = [x0.reshape(edges, -1, self.m_output_channels)]
        for m in range(1, self.mmax + 1):
            xm = pieces[m].reshape(edges, 2, -1)
            if scales[m] is not None:
                xm = xm * scales[m][:, None, :]
            real, imag = SO2MConv(m=m, sphere_channels=self.sphere_channels,
                                  m_output_channels=self.m_output_channels, lmax=self.lmax,
                                  name=f"so2_m_conv_{m}")(xm)
            out += [real, imag]
        out = jnp.concatenate(out, axis=1)
        if extra is not None:
            return out, x0_extra
        return out
