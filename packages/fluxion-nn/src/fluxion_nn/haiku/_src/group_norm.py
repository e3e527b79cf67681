"""``hk.GroupNorm`` (as ``haiku._src.group_norm``): channels split in ``groups``, normalised per
group over ``axis``; ``scale``/``offset`` per channel, shaped as Haiku's."""

from __future__ import annotations

import collections.abc
from typing import Any, Callable

import fluxion.lax as lax
import fluxion.numpy as jnp

from .._base import get_parameter
from .._module import Module
from .utils import get_channel_index

__all__ = ["GroupNorm"]


class GroupNorm(Module):
    """Group normalisation (https://arxiv.org/abs/1803.08494) as ``hk.GroupNorm``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.without_apply_rng(hk.transform(lambda x: hk.GroupNorm(groups=2)(x)))
        >>> x = jnp.arange(24.0).reshape(1, 2, 2, 6)
        >>> params = f.init(fluxion.random.PRNGKey(0), x)
        >>> {k: {n: a.shape for n, a in v.items()} for k, v in params.items()}
        {'group_norm': {'scale': (6,), 'offset': (6,)}}
        >>> [round(float(v), 4) for v in f.apply(params, x)[0, 0, 0]]
        [-1.4798, -1.3318, -1.1838, -1.4798, -1.3318, -1.1838]
    """

    def __init__(self, groups: int, axis: Any = slice(1, None), create_scale: bool = True,
                 create_offset: bool = True, eps: float = 1e-5,
                 scale_init: Callable | None = None, offset_init: Callable | None = None,
                 data_format: str = "channels_last", name: str | None = None):
        super().__init__(name=name)
        if isinstance(axis, slice):
            self.axis: Any = axis
        elif isinstance(axis, int):
            self.axis = (axis,)
        elif isinstance(axis, collections.abc.Iterable) and all(isinstance(a, int) for a in axis):
            self.axis = axis
        else:
            raise ValueError("`axis` should be an int, slice or iterable of ints.")
        self.groups = groups
        self.eps = eps
        self.data_format = data_format
        self.channel_index = get_channel_index(data_format)
        self.create_scale = create_scale
        self.create_offset = create_offset
        self.rank: int | None = None
        if create_scale:
            self.scale_init = scale_init if scale_init is not None else jnp.ones
        elif scale_init is not None:
            raise ValueError("Cannot set `scale_init` if `create_scale=False`.")
        if create_offset:
            self.offset_init = offset_init if offset_init is not None else jnp.zeros
        elif offset_init is not None:
            raise ValueError("Cannot set `offset_init` if `create_offset=False`.")

    def __call__(self, x: Any, scale: Any = None, offset: Any = None) -> Any:
        if self.rank is not None and x.ndim != self.rank:
            raise ValueError("The rank of the inputs cannot change between calls, the original "
                             f"call was rank={self.rank} but this call was rank={x.ndim}.")
        if self.create_scale and scale is not None:
            raise ValueError("Cannot pass `scale` at call time if `create_scale=True`.")
        if self.create_offset and offset is not None:
            raise ValueError("Cannot pass `offset` at call time if `create_offset=True`.")
        channels = x.shape[self.channel_index]
        if channels % self.groups != 0:
            raise ValueError("The number of channels must be divisible by the number of groups, "
                             f"was channels={channels}, groups={self.groups}")
        if self.rank is None:
            self._initialize(x, channels)
        if self.channel_index == -1:
            params_shape: tuple = (x.shape[-1],)
        else:
            params_shape = (x.shape[1],) + (1,) * (self.rank - 2)
        if self.create_scale:
            scale = get_parameter("scale", params_shape, x.dtype, self.scale_init)
        if self.create_offset:
            offset = get_parameter("offset", params_shape, x.dtype, self.offset_init)
        x = x.reshape(self.group_shape)
        mean = jnp.mean(x, self.axis, keepdims=True)
        var = jnp.var(x, self.axis, keepdims=True)
        x = (x - mean) * lax.rsqrt(var + self.eps)
        x = x.reshape(self.first_input_shape)
        if scale is not None:
            x = x * lax.broadcast_to_rank(scale, x.ndim)
        if offset is not None:
            x = x + lax.broadcast_to_rank(offset, x.ndim)
        return x

    def _initialize(self, x: Any, channels: int) -> None:
        self.rank = x.ndim
        if isinstance(self.axis, slice):
            self.axis = tuple(range(self.rank))[self.axis]
        if self.channel_index == -1:
            self.axis = tuple(a if a != self.rank - 1 else a + 1 for a in self.axis)
            self.group_shape = ((-1,) + tuple(x.shape[1:-1])
                                + (self.groups, channels // self.groups))
        else:
            self.axis = tuple(a if a == 0 else a + 1 for a in self.axis)
            self.group_shape = ((-1, self.groups, channels // self.groups)
                                + tuple(x.shape[2:]))
        self.first_input_shape = (-1,) + tuple(x.shape[1:])
