"""Indexing and broadcasting helpers shared by the rest of the package."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import fluxion.lax as lax
import fluxion.numpy as jnp

Array = Any

__all__ = ["batched_index", "one_hot", "lhs_broadcast", "replace_masked", "AllSum"]


def maybe_stop_gradient(flag: Any, x: Any) -> Any:
    """``stop_gradient(x)`` when ``flag`` is true (a Python bool or a traced boolean scalar)."""
    if isinstance(flag, (bool, np.bool_)):
        return lax.stop_gradient(x) if flag else x
    return jnp.where(flag, lax.stop_gradient(x), x)


def batched_index(values: Array, indices: Array, keepdims: bool = False) -> Array:
    """Index the last axis of ``values`` [..., D] with ``indices`` [...], keeping the other axes.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.batched_index(jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.array([1, 0])).tolist()
        [2.0, 3.0]
    """
    values = jnp.asarray(values)
    indices = jnp.asarray(indices)
    if indices.ndim != values.ndim - 1:
        raise ValueError(
            f"batched_index: argument `indices` must have rank values.ndim - 1 = {values.ndim - 1}, "
            f"got shape {indices.shape} for values of shape {values.shape}")
    picked = jnp.take_along_axis(values, indices[..., None], axis=-1)
    return picked if keepdims else jnp.squeeze(picked, axis=-1)


def one_hot(indices: Array, num_classes: int, dtype: Any = jnp.float32) -> Array:
    """One-hot encoding of integer ``indices`` along a new last axis of size ``num_classes``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.one_hot(jnp.array([0, 2]), 3).tolist()
        [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    indices = jnp.asarray(indices)
    labels = jnp.arange(num_classes).reshape((1,) * indices.ndim + (num_classes,))
    return jnp.asarray(indices[..., None] == labels, dtype=dtype)


def lhs_broadcast(source: Array, target: Array) -> Array:
    """Reshape ``source`` by appending unit axes so it broadcasts against ``target`` from the left.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.lhs_broadcast(jnp.ones(4), jnp.zeros((4, 2, 3))).shape
        (4, 1, 1)
    """
    s_shape = tuple(np.shape(source))
    t_shape = tuple(np.shape(target))
    compatible = len(s_shape) <= len(t_shape) and all(
        s == t or s == 1 for s, t in zip(s_shape, t_shape[: len(s_shape)]))
    if not compatible:
        raise ValueError(
            f"source shape {s_shape} is not compatible with target shape {t_shape} "
            "(lhs_broadcast: `source`'s shape must be a prefix of `target`'s, with 1s allowed)")
    return jnp.reshape(source, s_shape + (1,) * (len(t_shape) - len(s_shape)))


def replace_masked(data: Array, replacement: Array | None, mask: Array) -> Array:
    """Where ``mask`` (a prefix of ``data``'s shape) is 1, take ``replacement`` (zeros if None).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> x = jnp.array([[1.0, 2.0], [3.0, 4.0]])
        >>> rlax.replace_masked(x, None, jnp.array([True, False])).tolist()
        [[0.0, 0.0], [3.0, 4.0]]
    """
    if replacement is None:
        replacement = jnp.zeros_like(data)
    return jnp.where(lhs_broadcast(mask, data), replacement, data)


class AllSum:
    """Sums over array elements, then over devices along ``axis_name`` when one is given.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_rl as rlax
        >>> x = jnp.array([[1.0, 2.0], [3.0, 4.0]])
        >>> float(rlax.AllSum()(x)), rlax.AllSum()(x, axis=0).tolist()
        (10.0, [4.0, 6.0])
        >>> fluxion.vmap(rlax.AllSum("i"), axis_name="i")(x).tolist()  # each row's sum, summed over i
        [10.0, 10.0]
    """

    def __init__(self, axis_name: str | None = None):
        self._axis_name = axis_name

    def __call__(self, x: Array, axis: int | Sequence[int] | None = None) -> Array:
        total = jnp.sum(x, axis=axis)
        if self._axis_name:
            total = lax.psum(total, axis_name=self._axis_name)
        return total
