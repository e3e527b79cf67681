"""Convolutions (as ``haiku._src.conv``): ``ConvND``/``Conv1D``/``Conv2D``/``Conv3D`` and the
transposed ``ConvNDTranspose``/``Conv{1,2,3}DTranspose``; parameters ``w``
(``kernel_shape + [in, out]``, transposed: ``kernel_shape + [out, in]``) and ``b`` as Haiku's."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import fluxion.lax as lax
import fluxion.numpy as jnp

from .. import initializers
from .._base import get_parameter
from .._module import Module
from . import pad as pad_lib
from .utils import get_channel_index, replicate

__all__ = ["ConvND", "Conv1D", "Conv2D", "Conv3D", "ConvNDTranspose", "Conv1DTranspose",
           "Conv2DTranspose", "Conv3DTranspose", "compute_adjusted_padding",
           "to_dimension_numbers"]


def to_dimension_numbers(num_spatial_dims: int, channels_last: bool,
                         transpose: bool) -> Any:
    """``lax.ConvDimensionNumbers`` for Haiku's layouts (``N...C`` or ``NC...``; kernel
    ``...IO``, transposed ``...OI``).

    Example: ``to_dimension_numbers(2, True, False)``.
    """
    num_dims = num_spatial_dims + 2
    if channels_last:
        image_dn = (0, num_dims - 1) + tuple(range(1, num_dims - 1))
    else:
        image_dn = (0, 1) + tuple(range(2, num_dims))
    if transpose:
        kernel_dn = (num_dims - 2, num_dims - 1) + tuple(range(num_dims - 2))
    else:
        kernel_dn = (num_dims - 1, num_dims - 2) + tuple(range(num_dims - 2))
    return lax.ConvDimensionNumbers(lhs_spec=image_dn, rhs_spec=kernel_dn, out_spec=image_dn)


def _default_w_init(fan_in: Any) -> Callable:
    return initializers.TruncatedNormal(stddev=1.0 / np.sqrt(np.prod(fan_in)))


class ConvND(Module):
    """N-D convolution; ``w`` has shape ``kernel_shape + [in_channels // groups,
    output_channels]``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.ConvND(num_spatial_dims=1, output_channels=4, kernel_shape=3)(x))
        >>> x = jnp.ones((2, 8, 3))  # [N, W, C]
        >>> params = f.init(fluxion.random.PRNGKey(0), x)
        >>> params["conv_nd"]["w"].shape, f.apply(params, None, x).shape
        ((3, 3, 4), (2, 8, 4))
    """

    def __init__(self, num_spatial_dims: int, output_channels: int,
                 kernel_shape: int | Sequence[int], stride: int | Sequence[int] = 1,
                 rate: int | Sequence[int] = 1, padding: Any = "SAME", with_bias: bool = True,
                 w_init: Callable | None = None, b_init: Callable | None = None,
                 data_format: str = "channels_last", mask: Any = None,
                 feature_group_count: int = 1, name: str | None = None):
        super().__init__(name=name)
        if num_spatial_dims <= 0:
            raise ValueError("We only support convolution operations for `num_spatial_dims` "
                             f"greater than 0, received num_spatial_dims={num_spatial_dims}.")
        n = num_spatial_dims
        self.num_spatial_dims = n
        self.output_channels = output_channels
        self.kernel_shape = replicate(kernel_shape, n, "kernel_shape")
        self.with_bias = with_bias
        self.stride = replicate(stride, n, "strides")
        self.w_init = w_init
        self.b_init = b_init or jnp.zeros
        self.mask = mask
        self.feature_group_count = feature_group_count
        self.lhs_dilation = replicate(1, n, "lhs_dilation")
        self.kernel_dilation = replicate(rate, n, "kernel_dilation")
        self.data_format = data_format
        self.channel_index = get_channel_index(data_format)
        self.dimension_numbers = to_dimension_numbers(n, self.channel_index == -1, False)
        if isinstance(padding, str):
            self.padding: Any = padding.upper()
        elif pad_lib.is_padfn(padding):
            self.padding = pad_lib.create_from_padfn(padding, self.kernel_shape,
                                                     self.kernel_dilation, n)
        else:
            self.padding = pad_lib.create_from_tuple(padding, n)

    def __call__(self, inputs: Any, *, precision: Any = None) -> Any:
        inputs = jnp.asarray(inputs)
        unbatched_rank = self.num_spatial_dims + 1
        allowed_ranks = [unbatched_rank, unbatched_rank + 1]
        if inputs.ndim not in allowed_ranks:
            raise ValueError(f"Input to ConvND needs to have rank in {allowed_ranks}, but input "
                             f"has shape {inputs.shape}.")
        unbatched = inputs.ndim == unbatched_rank
        if unbatched:
            inputs = jnp.expand_dims(inputs, axis=0)
        cin = inputs.shape[self.channel_index]
        if cin % self.feature_group_count != 0:
            raise ValueError(f"Inputs channels {cin} should be a multiple of "
                             f"feature_group_count {self.feature_group_count}")
        w_shape = self.kernel_shape + (cin // self.feature_group_count, self.output_channels)
        if self.mask is not None and self.mask.shape != w_shape:
            raise ValueError("Mask needs to have the same shape as weights. "
                             f"Shapes are: {self.mask.shape}, {w_shape}")
        w_init = self.w_init if self.w_init is not None else _default_w_init(w_shape[:-1])
        w = get_parameter("w", w_shape, inputs.dtype, init=w_init)
        if self.mask is not None:
            w = w * self.mask
        out = lax.conv_general_dilated(inputs, w, window_strides=self.stride,
                                       padding=self.padding, lhs_dilation=self.lhs_dilation,
                                       rhs_dilation=self.kernel_dilation,
                                       dimension_numbers=self.dimension_numbers,
                                       feature_group_count=self.feature_group_count,
                                       precision=precision)
        if self.with_bias:
            if self.channel_index == -1:
                bias_shape: tuple = (self.output_channels,)
            else:
                bias_shape = (self.output_channels,) + (1,) * self.num_spatial_dims
            b = get_parameter("b", bias_shape, inputs.dtype, init=self.b_init)
            out = out + jnp.broadcast_to(b, out.shape)
        if unbatched:
            out = jnp.squeeze(out, axis=0)
        return out


def _fixed_rank(n: int, default_format: str, doc: str) -> type:
    class _Conv(ConvND):
        def __init__(self, output_channels: int, kernel_shape: int | Sequence[int],
                     stride: int | Sequence[int] = 1, rate: int | Sequence[int] = 1,
                     padding: Any = "SAME", with_bias: bool = True,
                     w_init: Callable | None = None, b_init: Callable | None = None,
                     data_format: str = default_format, mask: Any = None,
                     feature_group_count: int = 1, name: str | None = None):
            super().__init__(num_spatial_dims=n, output_channels=output_channels,
                             kernel_shape=kernel_shape, stride=stride, rate=rate,
                             padding=padding, with_bias=with_bias, w_init=w_init,
                             b_init=b_init, data_format=data_format, mask=mask,
                             feature_group_count=feature_group_count, name=name)

    _Conv.__doc__ = doc
    return _Conv


class Conv1D(_fixed_rank(1, "NWC", "")):  # type: ignore[misc]
    """1-D convolution (``ConvND`` with one spatial axis, ``NWC`` by default).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.Conv1D(8, 3)(x))
        >>> x = jnp.ones([2, 10, 4])
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).shape
        (2, 10, 8)
    """


class Conv2D(_fixed_rank(2, "NHWC", "")):  # type: ignore[misc]
    """2-D convolution (``NHWC`` by default).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.Conv2D(8, 3)(x))
        >>> x = jnp.ones([2, 10, 10, 4])
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).shape
        (2, 10, 10, 8)
        >>> params['conv2_d']['w'].shape
        (3, 3, 4, 8)
    """


class Conv3D(_fixed_rank(3, "NDHWC", "")):  # type: ignore[misc]
    """3-D convolution (``NDHWC`` by default).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.Conv3D(output_channels=2, kernel_shape=3, stride=2)(x))
        >>> x = jnp.ones((1, 4, 4, 4, 1))  # [N, D, H, W, C]
        >>> params = f.init(fluxion.random.PRNGKey(0), x)
        >>> params["conv3_d"]["w"].shape, f.apply(params, None, x).shape
        ((3, 3, 3, 1, 2), (1, 2, 2, 2, 2))
    """


def compute_adjusted_padding(input_size: int, output_size: int, kernel_size: int, stride: int,
                             padding: str, dilation: int = 1) -> tuple[int, int]:
    """The explicit padding making a transposed convolution produce ``output_size``.

    Example: ``compute_adjusted_padding(4, 8, 3, 2, "SAME") == (1, 2)``.
    """
    kernel_size = (kernel_size - 1) * dilation + 1
    if padding == "VALID":
        expected = (output_size - kernel_size + stride) // stride
        if input_size != expected:
            raise ValueError(f"The expected input size with the current set of input "
                             f"parameters is {expected} which doesn't match the actual input "
                             f"size {input_size}.")
        padding_before = 0
    elif padding == "SAME":
        expected = (output_size + stride - 1) // stride
        if input_size != expected:
            raise ValueError(f"The expected input size with the current set of input "
                             f"parameters is {expected} which doesn't match the actual input "
                             f"size {input_size}.")
        padding_needed = max(0, (input_size - 1) * stride + kernel_size - output_size)
        padding_before = padding_needed // 2
    else:
        raise ValueError(f"`padding` must be 'VALID' or 'SAME'. Passed: {padding}.")
    expanded_input_size = (input_size - 1) * stride + 1
    padded_out_size = output_size + kernel_size - 1
    pad_before = kernel_size - 1 - padding_before
    pad_after = padded_out_size - expanded_input_size - pad_before
    return (pad_before, pad_after)


class ConvNDTranspose(Module):
    """N-D transposed convolution; ``w`` has shape ``kernel_shape + [output_channels,
    in_channels]`` (as ``hk.ConvNDTranspose``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.ConvNDTranspose(1, output_channels=2, kernel_shape=3, stride=2)(x))
        >>> x = jnp.ones((1, 4, 3))
        >>> params = f.init(fluxion.random.PRNGKey(0), x)
        >>> params["conv_nd_transpose"]["w"].shape, f.apply(params, None, x).shape
        ((3, 2, 3), (1, 8, 2))
    """

    def __init__(self, num_spatial_dims: int, output_channels: int,
                 kernel_shape: int | Sequence[int], stride: int | Sequence[int] = 1,
                 output_shape: int | Sequence[int] | None = None, padding: Any = "SAME",
                 with_bias: bool = True, w_init: Callable | None = None,
                 b_init: Callable | None = None, data_format: str = "channels_last",
                 mask: Any = None, name: str | None = None):
        super().__init__(name=name)
        if num_spatial_dims <= 0:
            raise ValueError("We only support convolution operations for `num_spatial_dims` "
                             f"greater than 0, received num_spatial_dims={num_spatial_dims}.")
        n = num_spatial_dims
        self.num_spatial_dims = n
        self.output_channels = output_channels
        self.kernel_shape = replicate(kernel_shape, n, "kernel_shape")
        self.output_shape = output_shape
        if output_shape is not None:
            self.output_shape = replicate(output_shape, n, "output_shape")
            if not isinstance(padding, str):
                raise ValueError("When specifying `output_shape`, ensure that paddding is "
                                 "'VALID' or 'SAME'.")
        self.with_bias = with_bias
        self.stride = replicate(stride, n, "strides")
        self.w_init = w_init
        self.b_init = b_init or jnp.zeros
        self.mask = mask
        self.padding = padding
        self.data_format = data_format
        self.channel_index = get_channel_index(data_format)
        self.dimension_numbers = to_dimension_numbers(n, self.channel_index == -1, True)

    def __call__(self, inputs: Any, *, precision: Any = None) -> Any:
        inputs = jnp.asarray(inputs)
        unbatched_rank = self.num_spatial_dims + 1
        allowed_ranks = [unbatched_rank, unbatched_rank + 1]
        if inputs.ndim not in allowed_ranks:
            raise ValueError(f"Input to ConvNDTranspose needs to have rank in {allowed_ranks}, "
                             f"but input has shape {inputs.shape}.")
        unbatched = inputs.ndim == unbatched_rank
        if unbatched:
            inputs = jnp.expand_dims(inputs, axis=0)
        cin = inputs.shape[self.channel_index]
        w_shape = self.kernel_shape + (self.output_channels, cin)
        if self.mask is not None and self.mask.shape != w_shape:
            raise ValueError("Mask needs to have the same shape as weights. "
                             f"Shapes are: {self.mask.shape}, {w_shape}")
        w_init = (self.w_init if self.w_init is not None
                  else _default_w_init(self.kernel_shape + (cin,)))
        w = get_parameter("w", w_shape, inputs.dtype, init=w_init)
        if self.mask is not None:
            w = w * self.mask
        padding = self.padding
        if self.output_shape is not None:
            spatial = inputs.shape[2:] if self.channel_index == 1 else inputs.shape[1:-1]
            padding = tuple(compute_adjusted_padding(i, o, k, s, self.padding)
                            for i, o, k, s in zip(spatial, self.output_shape, self.kernel_shape,
                                                  self.stride))
        out = lax.conv_transpose(inputs, w, strides=self.stride, padding=padding,
                                 dimension_numbers=self.dimension_numbers, precision=precision)
        if self.with_bias:
            if self.channel_index == -1:
                bias_shape: tuple = (self.output_channels,)
            else:
                bias_shape = (self.output_channels,) + (1,) * self.num_spatial_dims
            b = get_parameter("b", bias_shape, inputs.dtype, init=self.b_init)
            out = out + jnp.broadcast_to(b, out.shape)
        if unbatched:
            out = jnp.squeeze(out, axis=0)
        return out


def _fixed_rank_t(n: int, default_format: str) -> type:
    class _ConvT(ConvNDTranspose):
        def __init__(self, output_channels: int, kernel_shape: int | Sequence[int],
                     stride: int | Sequence[int] = 1,
                     output_shape: int | Sequence[int] | None = None, padding: Any = "SAME",
                     with_bias: bool = True, w_init: Callable | None = None,
                     b_init: Callable | None = None, data_format: str = default_format,
                     mask: Any = None, name: str | None = None):
            super().__init__(num_spatial_dims=n, output_channels=output_channels,
                             kernel_shape=kernel_shape, stride=stride,
                             output_shape=output_shape, padding=padding, with_bias=with_bias,
                             w_init=w_init, b_init=b_init, data_format=data_format, mask=mask,
                             name=name)

    return _ConvT


class Conv1DTranspose(_fixed_rank_t(1, "NWC")):  # type: ignore[misc]
    """1-D transposed convolution (``NWC`` by default).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.Conv1DTranspose(output_channels=2, kernel_shape=3, stride=2)(x))
        >>> x = jnp.ones((1, 4, 3))  # [N, W, C]
        >>> f.apply(f.init(fluxion.random.PRNGKey(0), x), None, x).shape
        (1, 8, 2)
    """


class Conv2DTranspose(_fixed_rank_t(2, "NHWC")):  # type: ignore[misc]
    """2-D transposed convolution (``NHWC`` by default).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.Conv2DTranspose(8, 3, stride=2)(x))
        >>> x = jnp.ones([1, 5, 5, 4])
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).shape
        (1, 10, 10, 8)
    """


class Conv3DTranspose(_fixed_rank_t(3, "NDHWC")):  # type: ignore[misc]
    """3-D transposed convolution (``NDHWC`` by default).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.Conv3DTranspose(output_channels=2, kernel_shape=2, stride=2)(x))
        >>> x = jnp.ones((1, 2, 2, 2, 1))
        >>> f.apply(f.init(fluxion.random.PRNGKey(0), x), None, x).shape
        (1, 4, 4, 4, 2)
    """
