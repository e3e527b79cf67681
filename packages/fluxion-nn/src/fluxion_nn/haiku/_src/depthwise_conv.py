"""Depthwise convolutions (as ``haiku._src.depthwise_conv``): ``DepthwiseConvND`` and
``DepthwiseConv{1,2,3}D``; ``w`` is ``kernel_shape + [1, channel_multiplier * in_channels]``
and ``b`` ``[channel_multiplier * in_channels]``, as Haiku's."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import fluxion.lax as lax
import fluxion.numpy as jnp

from .. import initializers
from .._base import get_parameter
from .._module import Module
from .utils import get_channel_index, replicate

__all__ = ["DepthwiseConvND", "DepthwiseConv1D", "DepthwiseConv2D", "DepthwiseConv3D",
           "SeparableDepthwiseConv2D"]

DIMENSION_NUMBERS = {1: ("NWC", "WIO", "NWC"), 2: ("NHWC", "HWIO", "NHWC"),
                     3: ("NDHWC", "DHWIO", "NDHWC")}
DIMENSION_NUMBERS_NCSPATIAL = {1: ("NCH", "HIO", "NCH"), 2: ("NCHW", "HWIO", "NCHW"),
                               3: ("NCDHW", "DHWIO", "NCDHW")}


class DepthwiseConvND(Module):
    """N-D depthwise convolution: each input channel convolved with its own
    ``channel_multiplier`` filters.

    Example: ``y = hk.DepthwiseConvND(2, 3, num_spatial_dims=2, data_format="NHWC")(x)``.
    """

    def __init__(self, channel_multiplier: int, kernel_shape: int | Sequence[int],
                 num_spatial_dims: int, data_format: str, stride: int | Sequence[int] = 1,
                 rate: int | Sequence[int] = 1, padding: Any = "SAME", with_bias: bool = True,
                 w_init: Callable | None = None, b_init: Callable | None = None,
                 name: str | None = None):
        super().__init__(name=name)
        self.num_spatial_dims = num_spatial_dims
        self.kernel_shape = replicate(kernel_shape, num_spatial_dims, "kernel_shape")
        self.lhs_dilation = (1,) * len(self.kernel_shape)
        self.rhs_dilation = replicate(rate, num_spatial_dims, "rhs_dilation")
        self.channel_multiplier = channel_multiplier
        self.padding = padding
        self.stride = replicate(stride, num_spatial_dims, "strides")
        self.data_format = data_format
        self.channel_index = get_channel_index(data_format)
        self.with_bias = with_bias
        self.w_init = w_init
        self.b_init = b_init or jnp.zeros
        table = DIMENSION_NUMBERS if self.channel_index == -1 else DIMENSION_NUMBERS_NCSPATIAL
        self.dn = table[num_spatial_dims]

    def __call__(self, inputs: Any) -> Any:
        channel_index = get_channel_index(self.data_format)
        cin = inputs.shape[channel_index]
        w_shape = self.kernel_shape + (1, self.channel_multiplier * cin)
        w_init = self.w_init
        if w_init is None:
            w_init = initializers.TruncatedNormal(stddev=1.0 / np.sqrt(np.prod(w_shape[:-1])))
        w = get_parameter("w", w_shape, inputs.dtype, init=w_init)
        out = lax.conv_general_dilated(inputs, w, window_strides=self.stride,
                                       padding=self.padding, lhs_dilation=self.lhs_dilation,
                                       rhs_dilation=self.rhs_dilation,
                                       dimension_numbers=self.dn, feature_group_count=cin)
        if self.with_bias:
            if channel_index == -1:
                b_shape: tuple = (self.channel_multiplier * cin,)
            else:
                b_shape = (self.channel_multiplier * cin, 1, 1)
            b = get_parameter("b", b_shape, inputs.dtype, init=self.b_init)
            out = out + jnp.broadcast_to(b, out.shape)
        return out


def _fixed(n: int, default_format: str) -> type:
    class _Depthwise(DepthwiseConvND):
        def __init__(self, channel_multiplier: int, kernel_shape: int | Sequence[int],
                     stride: int | Sequence[int] = 1, rate: int | Sequence[int] = 1,
                     padding: Any = "SAME", with_bias: bool = True,
                     w_init: Callable | None = None, b_init: Callable | None = None,
                     data_format: str = default_format, name: str | None = None):
            super().__init__(channel_multiplier=channel_multiplier, kernel_shape=kernel_shape,
                             num_spatial_dims=n, data_format=data_format, stride=stride,
                             rate=rate, padding=padding, with_bias=with_bias, w_init=w_init,
                             b_init=b_init, name=name)

    return _Depthwise


class DepthwiseConv1D(_fixed(1, "NWC")):  # type: ignore[misc]
    """1-D depthwise convolution (``NWC`` by default).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.DepthwiseConv1D(channel_multiplier=2, kernel_shape=3)(x))
        >>> x = jnp.ones((1, 8, 3))
        >>> params = f.init(fluxion.random.PRNGKey(0), x)
        >>> params["depthwise_conv1_d"]["w"].shape, f.apply(params, None, x).shape
        ((3, 1, 6), (1, 8, 6))
    """


class DepthwiseConv2D(_fixed(2, "NHWC")):  # type: ignore[misc]
    """2-D depthwise convolution (``NHWC`` by default).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.DepthwiseConv2D(channel_multiplier=1, kernel_shape=3)(x))
        >>> x = jnp.ones((1, 5, 5, 3))
        >>> params = f.init(fluxion.random.PRNGKey(0), x)
        >>> params["depthwise_conv2_d"]["w"].shape, f.apply(params, None, x).shape
        ((3, 3, 1, 3), (1, 5, 5, 3))
    """


class DepthwiseConv3D(_fixed(3, "NDHWC")):  # type: ignore[misc]
    """3-D depthwise convolution (``NDHWC`` by default).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.DepthwiseConv3D(channel_multiplier=1, kernel_shape=2)(x))
        >>> x = jnp.ones((1, 3, 3, 3, 2))
        >>> f.apply(f.init(fluxion.random.PRNGKey(0), x), None, x).shape
        (1, 3, 3, 3, 2)
    """


class SeparableDepthwiseConv2D(Module):
    """A 2-D depthwise convolution split into a ``[k0, 1]`` depthwise convolution (with the
    ``channel_multiplier`` and ``stride``) followed by a ``[1, k1]`` one, as Haiku's.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.SeparableDepthwiseConv2D(channel_multiplier=2, kernel_shape=3)(x))
        >>> x = jnp.ones((1, 5, 5, 3))
        >>> f.apply(f.init(fluxion.random.PRNGKey(0), x), None, x).shape
        (1, 5, 5, 6)
    """

    def __init__(self, channel_multiplier: int, kernel_shape: int | Sequence[int],
                 stride: int | Sequence[int] = 1, padding: Any = "SAME", with_bias: bool = True,
                 w_init: Callable | None = None, b_init: Callable | None = None,
                 data_format: str = "NHWC", name: str | None = None):
        super().__init__(name=name)
        k = replicate(kernel_shape, 2, "kernel_shape")
        self._conv1 = DepthwiseConv2D(channel_multiplier=channel_multiplier,
                                      kernel_shape=[k[0], 1], stride=stride, padding=padding,
                                      with_bias=False, w_init=w_init, b_init=b_init,
                                      data_format=data_format)
        self._conv2 = DepthwiseConv2D(channel_multiplier=1, kernel_shape=[1, k[1]], stride=1,
                                      padding=padding, with_bias=with_bias, w_init=w_init,
                                      b_init=b_init, data_format=data_format)

    def __call__(self, inputs: Any) -> Any:
        return self._conv2(self._conv1(inputs))
