"""Normalisation layers: ``BatchNorm``, ``LayerNorm``, ``RMSNorm``, ``GroupNorm``,
``InstanceNorm`` (as ``flax.nnx``: ``scale``/``bias`` Params, ``mean``/``var`` BatchStats)."""

from __future__ import annotations

from typing import Any, Callable

import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion.nn import initializers

from ..module import Module
from ..rnglib import Rngs
from ..variablelib import BatchStat, Param
from ._common import check_features

__all__ = ["BatchNorm", "LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm"]


def _axes(ndim: int, axes: Any) -> tuple:
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    return tuple(sorted(a % ndim for a in axes))


def _stats(x: Any, axes: tuple, dtype: Any, use_mean: bool = True,
           use_fast_variance: bool = True, mask: Any = None) -> tuple:
    dtype = jnp.promote_types(dtype or x.dtype, jnp.float32)
    x = jnp.asarray(x, dtype)
    if use_mean:
        mu = x.mean(axes, where=mask)
        if use_fast_variance:
            mu2 = (x * x).mean(axes, where=mask)
            var = jnp.maximum(0.0, mu2 - mu * mu)
        else:
            var = ((x - jnp.expand_dims(mu, axes)) ** 2).mean(axes, where=mask)
    else:
        mu = jnp.zeros((), dtype)
        var = (x * x).mean(axes, where=mask)
    return mu, var


def _normalize(x: Any, mean: Any, var: Any, scale: Any, bias: Any, red: tuple, feat: tuple,
               dtype: Any, epsilon: float) -> Any:
    stats_shape = [1 if i in red else d for i, d in enumerate(x.shape)]
    feature_shape = [x.shape[i] if i in feat else 1 for i in range(x.ndim)]
    mean = jnp.reshape(mean, stats_shape) if mean.ndim else mean
    var = jnp.reshape(var, stats_shape)
    y = x - mean
    mul = lax.rsqrt(var + epsilon)
    args = [x]
    if scale is not None:
        mul = mul * jnp.reshape(scale, feature_shape)
        args.append(scale)
    y = y * mul
    if bias is not None:
        y = y + jnp.reshape(bias, feature_shape)
        args.append(bias)
    out_dtype = dtype if dtype is not None else jnp.result_type(*args)
    return jnp.asarray(y, out_dtype)


class BatchNorm(Module):
    """Batch normalisation. In training (``use_running_average=False``) it normalises with the
    batch statistics and updates ``mean``/``var`` as ``momentum * old + (1 - momentum) * new``;
    in evaluation it uses them.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> bn = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
        >>> x = jnp.array([[1.0, 2.0], [3.0, 6.0]])
        >>> bn(x).round(4).tolist()
        [[-1.0, -1.0], [1.0, 1.0]]
        >>> bn.mean.value.tolist()   # running mean, momentum 0.99
        [0.02, 0.04]
    """

    def __init__(self, num_features: int, *, use_running_average: bool = False, axis: int = -1,
                 momentum: float = 0.99, epsilon: float = 1e-5, dtype: Any = None,
                 param_dtype: Any = jnp.float32, use_bias: bool = True, use_scale: bool = True,
                 bias_init: Callable = initializers.zeros, scale_init: Callable = initializers.ones,
                 axis_name: Any = None, axis_index_groups: Any = None,
                 use_fast_variance: bool = True, promote_dtype: Any = None, rngs: Rngs,
                 bias_metadata: dict = {}, scale_metadata: dict = {}):  # noqa: B006
        shape = (num_features,)
        self.mean = BatchStat(jnp.zeros(shape, jnp.float32))
        self.var = BatchStat(jnp.ones(shape, jnp.float32))
        self.scale = Param(scale_init(rngs.params(), shape, param_dtype), **scale_metadata) if use_scale else None
        self.bias = Param(bias_init(rngs.params(), shape, param_dtype), **bias_metadata) if use_bias else None
        self.num_features = num_features
        self.use_running_average = use_running_average
        self.axis = axis
        self.momentum = momentum
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance

    def set_view(self, use_running_average: bool | None = None) -> None:
        """Class method used by ``nnx.view``.

        Args:
          use_running_average: if True, the stored batch statistics will be
            used instead of computing the batch statistics on the input.
        """
        if use_running_average is not None:
            self.use_running_average = use_running_average

    def __call__(self, x: Any, use_running_average: bool | None = None, *, mask: Any = None) -> Any:
        check_features(f"BatchNorm(num_features={self.num_features})", x, self.num_features, self.axis)
        ura = self.use_running_average if use_running_average is None else use_running_average
        feat = _axes(x.ndim, self.axis)
        red = tuple(i for i in range(x.ndim) if i not in feat)
        if ura:
            mean, var = self.mean.value, self.var.value
        else:
            mean, var = _stats(x, red, self.dtype, use_fast_variance=self.use_fast_variance, mask=mask)
            if self.axis_name is not None:
                mean = lax.pmean(mean, self.axis_name)
                var = lax.pmean(var, self.axis_name)
            m = self.momentum
            self.mean.value = m * self.mean.value + (1 - m) * mean
            self.var.value = m * self.var.value + (1 - m) * var
        return _normalize(x, mean, var, self.scale.value if self.scale is not None else None,
                          self.bias.value if self.bias is not None else None, red, feat,
                          self.dtype, self.epsilon)


class LayerNorm(Module):
    """Layer normalisation over ``reduction_axes`` (default the last) with learned ``scale``
    and ``bias`` over ``feature_axes``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> ln = nnx.LayerNorm(3, rngs=nnx.Rngs(0))
        >>> ln(jnp.array([[1.0, 2.0, 3.0]])).round(4).tolist()
        [[-1.2247, 0.0, 1.2247]]
    """

    def __init__(self, num_features: int, *, epsilon: float = 1e-6, dtype: Any = None,
                 param_dtype: Any = jnp.float32, use_bias: bool = True, use_scale: bool = True,
                 bias_init: Callable = initializers.zeros, scale_init: Callable = initializers.ones,
                 reduction_axes: Any = -1, feature_axes: Any = -1, axis_name: Any = None,
                 axis_index_groups: Any = None, use_fast_variance: bool = True,
                 promote_dtype: Any = None, rngs: Rngs,
                 bias_metadata: dict = {}, scale_metadata: dict = {}):  # noqa: B006
        shape = (num_features,)
        self.scale = Param(scale_init(rngs.params(), shape, param_dtype), **scale_metadata) if use_scale else None
        self.bias = Param(bias_init(rngs.params(), shape, param_dtype), **bias_metadata) if use_bias else None
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance

    def __call__(self, x: Any, *, mask: Any = None) -> Any:
        feat = _axes(x.ndim, self.feature_axes)
        if len(feat) == 1:
            check_features(f"LayerNorm(num_features={self.num_features})", x, self.num_features, feat[0])
        red = _axes(x.ndim, self.reduction_axes)
        mean, var = _stats(x, red, self.dtype, use_fast_variance=self.use_fast_variance, mask=mask)
        return _normalize(x, mean, var, self.scale.value if self.scale is not None else None,
                          self.bias.value if self.bias is not None else None, red, feat,
                          self.dtype, self.epsilon)


class RMSNorm(Module):
    """Root-mean-square normalisation ``x / sqrt(mean(x**2) + epsilon) * scale``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> norm = nnx.RMSNorm(2, rngs=nnx.Rngs(0))
        >>> norm(jnp.array([[3.0, 4.0]])).round(4).tolist()
        [[0.8485, 1.1314]]
    """

    def __init__(self, num_features: int, *, epsilon: float = 1e-6, dtype: Any = None,
                 param_dtype: Any = jnp.float32, use_scale: bool = True,
                 scale_init: Callable = initializers.ones, reduction_axes: Any = -1,
                 feature_axes: Any = -1, axis_name: Any = None, axis_index_groups: Any = None,
                 use_fast_variance: bool = True, promote_dtype: Any = None, rngs: Rngs,
                 scale_metadata: dict = {}):  # noqa: B006
        self.scale = Param(scale_init(rngs.params(), (num_features,), param_dtype), **scale_metadata) if use_scale else None
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance

    def __call__(self, x: Any, *, mask: Any = None) -> Any:
        feat = _axes(x.ndim, self.feature_axes)
        if len(feat) == 1:
            check_features(f"RMSNorm(num_features={self.num_features})", x, self.num_features, feat[0])
        red = _axes(x.ndim, self.reduction_axes)
        mean, var = _stats(x, red, self.dtype, use_mean=False, mask=mask)
        return _normalize(x, mean, var, self.scale.value if self.scale is not None else None,
                          None, red, feat, self.dtype, self.epsilon)


class GroupNorm(Module):
    """Group normalisation: channels split into ``num_groups`` groups (or groups of
    ``group_size``), each normalised over the non-batch axes.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> gn = nnx.GroupNorm(4, num_groups=2, rngs=nnx.Rngs(0))
        >>> gn(jnp.array([[1.0, 3.0, 0.0, 4.0]])).round(4).tolist()
        [[-1.0, 1.0, -1.0, 1.0]]
    """

    def __init__(self, num_features: int, num_groups: int | None = 32, group_size: int | None = None,
                 *, epsilon: float = 1e-6, dtype: Any = None, param_dtype: Any = jnp.float32,
                 use_bias: bool = True, use_scale: bool = True,
                 bias_init: Callable = initializers.zeros, scale_init: Callable = initializers.ones,
                 reduction_axes: Any = None, axis_name: Any = None, axis_index_groups: Any = None,
                 use_fast_variance: bool = True, promote_dtype: Any = None, rngs: Rngs,
                 bias_metadata: dict = {}, scale_metadata: dict = {}):  # noqa: B006
        if (num_groups is None) == (group_size is None):
            raise ValueError("GroupNorm: give exactly one of num_groups and group_size")
        if group_size is not None:
            if num_features % group_size:
                raise ValueError(f"GroupNorm: num_features={num_features} is not divisible by "
                                 f"group_size={group_size}")
            num_groups = num_features // group_size
        if num_groups <= 0 or num_features % num_groups:
            raise ValueError(f"GroupNorm: num_features={num_features} is not divisible by "
                             f"num_groups={num_groups}")
        shape = (num_features,)
        self.scale = Param(scale_init(rngs.params(), shape, param_dtype), **scale_metadata) if use_scale else None
        self.bias = Param(bias_init(rngs.params(), shape, param_dtype), **bias_metadata) if use_bias else None
        self.num_features = num_features
        self.num_groups = num_groups
        self.group_size = num_features // num_groups
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance

    def __call__(self, x: Any, *, mask: Any = None) -> Any:
        check_features(f"GroupNorm(num_features={self.num_features})", x, self.num_features)
        if self.reduction_axes is not None:
            red_in = _axes(x.ndim, self.reduction_axes)
        else:
            red_in = tuple(range(1, x.ndim))
        grouped = jnp.reshape(x, tuple(x.shape[:-1]) + (self.num_groups, self.group_size))
        red = tuple(a for a in red_in if a != x.ndim - 1) + (x.ndim,)
        # a mask broadcasts against x (flax's tests give one (features,) mask for a batch)
        gm = None if mask is None else jnp.reshape(jnp.broadcast_to(mask, x.shape), grouped.shape)
        mean, var = _stats(grouped, red, self.dtype, use_fast_variance=self.use_fast_variance, mask=gm)
        mean = jnp.repeat(mean, self.group_size, axis=-1)
        var = jnp.repeat(var, self.group_size, axis=-1)
        red_x = tuple(a for a in red_in if a != x.ndim - 1)
        return _normalize(x, mean, var, self.scale.value if self.scale is not None else None,
                          self.bias.value if self.bias is not None else None, red_x,
                          (x.ndim - 1,), self.dtype, self.epsilon)


class InstanceNorm(Module):
    """Instance normalisation: every channel of every example normalised over the other
    (spatial) axes.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> norm = nnx.InstanceNorm(2, rngs=nnx.Rngs(0))
        >>> norm(jnp.array([[[1.0, 2.0], [3.0, 6.0]]])).round(4).tolist()
        [[[-1.0, -1.0], [1.0, 1.0]]]
    """

    def __init__(self, num_features: int, *, epsilon: float = 1e-6, dtype: Any = None,
                 param_dtype: Any = jnp.float32, use_bias: bool = True, use_scale: bool = True,
                 bias_init: Callable = initializers.zeros, scale_init: Callable = initializers.ones,
                 feature_axes: Any = -1, axis_name: Any = None, axis_index_groups: Any = None,
                 use_fast_variance: bool = True, promote_dtype: Any = None, rngs: Rngs,
                 bias_metadata: dict = {}, scale_metadata: dict = {}):  # noqa: B006
        shape = (num_features,)
        self.scale = Param(scale_init(rngs.params(), shape, param_dtype), **scale_metadata) if use_scale else None
        self.bias = Param(bias_init(rngs.params(), shape, param_dtype), **bias_metadata) if use_bias else None
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance

    def __call__(self, x: Any, *, mask: Any = None) -> Any:
        feat = _axes(x.ndim, self.feature_axes)
        red = tuple(i for i in range(1, x.ndim) if i not in feat)
        mean, var = _stats(x, red, self.dtype, use_fast_variance=self.use_fast_variance, mask=mask)
        return _normalize(x, mean, var, self.scale.value if self.scale is not None else None,
                          self.bias.value if self.bias is not None else None, red, feat,
                          self.dtype, self.epsilon)
