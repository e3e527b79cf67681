"""Pooling functions ``pool``, ``avg_pool``, ``max_pool``, ``min_pool`` over channels-last
inputs ``(batch, spatial..., features)`` (as ``flax.nnx``)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import fluxion.lax as lax
import fluxion.numpy as jnp

__all__ = ["pool", "avg_pool", "max_pool", "min_pool"]


def pool(inputs: Any, init: Any, reduce_fn: Callable, window_shape: Sequence[int],
         strides: Sequence[int] | None, padding: Any) -> Any:
    """Reduce windows of ``window_shape`` with ``reduce_fn`` (``lax.reduce_window``).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax, fluxion_nn as nnx
        >>> x = jnp.arange(16.0).reshape(1, 4, 4, 1)
        >>> nnx.pool(x, -jnp.inf, lax.max, (2, 2), (2, 2), "VALID")[0, :, :, 0].tolist()
        [[5.0, 7.0], [13.0, 15.0]]
    """
    window_shape = tuple(window_shape)
    strides = tuple(strides) if strides is not None else (1,) * len(window_shape)
    if len(strides) != len(window_shape):
        raise ValueError(f"pool: strides {strides} and window_shape {window_shape} differ in length")
    single = inputs.ndim == len(window_shape) + 1
    if single:
        inputs = inputs[None]
    if inputs.ndim < len(window_shape) + 2:
        raise ValueError(f"pool: input of shape {tuple(inputs.shape)} has too few axes for "
                         f"window_shape {window_shape}")
    nbatch = inputs.ndim - len(window_shape) - 1
    dims = (1,) * nbatch + window_shape + (1,)
    strides = (1,) * nbatch + strides + (1,)
    if not isinstance(padding, str):
        padding = tuple(tuple(p) for p in padding)
        if len(padding) != len(window_shape):
            raise ValueError(f"pool: padding {padding} must have one pair per window axis")
        padding = ((0, 0),) * nbatch + padding + ((0, 0),)
    y = lax.reduce_window(inputs, init, reduce_fn, dims, strides, padding)
    return y[0] if single else y


def avg_pool(inputs: Any, window_shape: Sequence[int], strides: Sequence[int] | None = None,
             padding: Any = "VALID", count_include_pad: bool = True) -> Any:
    """Average over windows.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> x = jnp.arange(16.0).reshape(1, 4, 4, 1)
        >>> nnx.avg_pool(x, (2, 2), strides=(2, 2))[0, :, :, 0].tolist()
        [[2.5, 4.5], [10.5, 12.5]]
    """
    y = pool(inputs, 0.0, lax.add, window_shape, strides, padding)
    if count_include_pad:
        return y / np.prod(window_shape)
    div_shape = tuple(inputs.shape[:-1]) + (1,)
    if len(div_shape) - 2 == len(window_shape):
        div_shape = (1,) + div_shape[1:]
    return y / pool(jnp.ones(div_shape, inputs.dtype), 0.0, lax.add, window_shape, strides, padding)


def max_pool(inputs: Any, window_shape: Sequence[int], strides: Sequence[int] | None = None,
             padding: Any = "VALID") -> Any:
    """Maximum over windows.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> x = jnp.arange(16.0).reshape(1, 4, 4, 1)
        >>> nnx.max_pool(x, (2, 2), strides=(2, 2))[0, :, :, 0].tolist()
        [[5.0, 7.0], [13.0, 15.0]]
    """
    return pool(inputs, -jnp.inf, lax.max, window_shape, strides, padding)


def min_pool(inputs: Any, window_shape: Sequence[int], strides: Sequence[int] | None = None,
             padding: Any = "VALID") -> Any:
    """Minimum over windows.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> x = jnp.arange(16.0).reshape(1, 4, 4, 1)
        >>> nnx.min_pool(x, (2, 2), strides=(2, 2))[0, :, :, 0].tolist()
        [[0.0, 2.0], [8.0, 10.0]]
    """
    return pool(inputs, jnp.inf, lax.min, window_shape, strides, padding)
