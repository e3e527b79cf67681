"""``hk.LayerNorm`` and ``hk.InstanceNorm`` (as ``haiku._src.layer_norm``): parameters
``scale``/``offset`` under the module's name, shaped as Haiku's so checkpoints load unchanged."""

from __future__ import annotations

import collections.abc
from typing import Any, Callable

import numpy as np

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp

from .._base import get_parameter
from .._module import Module
from .utils import get_channel_index

__all__ = ["LayerNorm", "InstanceNorm", "ERROR_IF_PARAM_AXIS_NOT_EXPLICIT"]

# As Haiku: when True, a LayerNorm normalising a non-final axis must be given `param_axis`.
ERROR_IF_PARAM_AXIS_NOT_EXPLICIT = False


def to_axes_or_slice(axis: Any) -> Any:
    """``axis`` as a slice or a tuple of ints (Haiku's accepted forms).

    Example:
        >>> from fluxion_nn.haiku._src.layer_norm import to_axes_or_slice
        >>> to_axes_or_slice(-1), to_axes_or_slice([1, 2]), to_axes_or_slice(slice(1, None))
        ((-1,), (1, 2), slice(1, None, None))
    """
    if isinstance(axis, slice):
        return axis
    if isinstance(axis, int):
        return (axis,)
    if isinstance(axis, collections.abc.Iterable) and all(isinstance(a, int) for a in axis):
        return tuple(axis)
    raise ValueError(f"`axis` should be an int, slice or iterable of ints. Got: {axis}")


def to_abs_axes(axis: Any, ndim: int) -> tuple:
    """Non-negative sorted axes of a slice or tuple for an ``ndim``-dimensional input.

    Example:
        >>> from fluxion_nn.haiku._src.layer_norm import to_abs_axes
        >>> to_abs_axes((-1,), 3), to_abs_axes(slice(1, None), 4)
        ((2,), (1, 2, 3))
    """
    if isinstance(axis, slice):
        return tuple(range(ndim)[axis])
    return tuple(sorted({a % ndim for a in axis}))


class LayerNorm(Module):
    """Layer normalisation over ``axis`` with ``scale``/``offset`` parameters.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x))
        >>> x = jnp.array([[1.0, 2.0, 3.0]])
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).round(4).tolist()
        [[-1.2247, 0.0, 1.2247]]
    """

    def __init__(self, axis: Any, create_scale: bool, create_offset: bool, eps: float = 1e-5,
                 scale_init: Callable | None = None, offset_init: Callable | None = None,
                 use_fast_variance: bool = False, name: str | None = None, *,
                 param_axis: Any = None):
        super().__init__(name=name)
        if not create_scale and scale_init is not None:
            raise ValueError("Cannot set `scale_init` if `create_scale=False`.")
        if not create_offset and offset_init is not None:
            raise ValueError("Cannot set `offset_init` if `create_offset=False`.")
        self.axis = to_axes_or_slice(axis)
        self.eps = eps
        self.create_scale = create_scale
        self.create_offset = create_offset
        self.scale_init = scale_init or jnp.ones
        self.offset_init = offset_init or jnp.zeros
        self.use_fast_variance = use_fast_variance
        self._param_axis_passed_explicitly = param_axis is not None
        self.param_axis = (-1,) if param_axis is None else to_axes_or_slice(param_axis)

    def __call__(self, inputs: Any, scale: Any = None, offset: Any = None) -> Any:
        inputs = jnp.asarray(inputs)
        if self.create_scale and scale is not None:
            raise ValueError("Cannot pass `scale` at call time if `create_scale=True`.")
        if self.create_offset and offset is not None:
            raise ValueError("Cannot pass `offset` at call time if `create_offset=True`.")
        axis = to_abs_axes(self.axis, inputs.ndim)
        mean = jnp.mean(inputs, axis=axis, keepdims=True)
        if self.use_fast_variance:
            variance = jnp.mean(jnp.square(inputs), axis=axis, keepdims=True) - jnp.square(mean)
        else:
            variance = jnp.var(inputs, axis=axis, keepdims=True)
        if ((self.create_scale or self.create_offset) and not self._param_axis_passed_explicitly
                and ERROR_IF_PARAM_AXIS_NOT_EXPLICIT and axis != (inputs.ndim - 1,)):
            raise ValueError("When axis is not the final dimension we require you to also pass "
                             f"`param_axis` in the ctor. axis={axis} ndim={inputs.ndim}")
        param_axis = to_abs_axes(self.param_axis, inputs.ndim)
        if param_axis == (inputs.ndim - 1,):
            param_shape: tuple = (inputs.shape[-1],)
        else:
            param_shape = tuple(inputs.shape[i] if i in param_axis else 1
                                for i in range(inputs.ndim))
        if self.create_scale:
            scale = get_parameter("scale", param_shape, inputs.dtype, init=self.scale_init)
        elif scale is None:
            scale = np.array(1.0, dtype=inputs.dtype)
        if self.create_offset:
            offset = get_parameter("offset", param_shape, inputs.dtype, init=self.offset_init)
        elif offset is None:
            offset = np.array(0.0, dtype=inputs.dtype)
        if fluxion.config.jax_numpy_rank_promotion != "allow":
            # as Haiku: explicit broadcasts, so strict rank promotion accepts it (Haiku skips
            # them under "allow", where they cost memory on TPUs)
            scale = jnp.broadcast_to(scale, inputs.shape)
            offset = jnp.broadcast_to(offset, inputs.shape)
            mean = jnp.broadcast_to(mean, inputs.shape)
        eps = lax.convert_element_type(self.eps, variance.dtype)
        inv = scale * lax.rsqrt(variance + eps)
        return inv * (inputs - mean) + offset


class InstanceNorm(LayerNorm):
    """Normalisation over the spatial axes (LayerNorm with per-channel parameters).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.without_apply_rng(hk.transform(lambda x: hk.InstanceNorm(True, True)(x)))
        >>> x = jnp.arange(24.0).reshape(2, 2, 2, 3)
        >>> params = f.init(fluxion.random.PRNGKey(0), x)
        >>> {k: {n: a.shape for n, a in v.items()} for k, v in params.items()}
        {'instance_norm': {'scale': (3,), 'offset': (3,)}}
        >>> [round(float(v), 4) for v in f.apply(params, x)[0, :, :, 0].ravel()]
        [-1.3416, -0.4472, 0.4472, 1.3416]
    """

    def __init__(self, create_scale: bool, create_offset: bool, eps: float = 1e-5,
                 scale_init: Callable | None = None, offset_init: Callable | None = None,
                 data_format: str = "channels_last", name: str | None = None):
        param_axis = get_channel_index(data_format)
        axis = slice(2, None) if param_axis == 1 else slice(1, -1)
        super().__init__(axis=axis, create_scale=create_scale, create_offset=create_offset,
                         eps=eps, scale_init=scale_init, offset_init=offset_init,
                         param_axis=param_axis, name=name)
