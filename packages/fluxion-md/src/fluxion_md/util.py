"""Small shared helpers of fluxion_md (mirrors ``jax_md.util``): dtypes, masks, sums, casts."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as onp

import fluxion
import fluxion.numpy as jnp

__all__ = [
    "Array", "PyTree", "f16", "f32", "f64", "i16", "i32", "i64", "high_precision_sum",
    "is_array", "maybe_downcast", "merge_dicts", "normalize", "safe_arccos", "safe_mask",
    "safe_norm", "static_cast", "is_concrete",
]

Array = Any
PyTree = Any
f16 = jnp.float16
f32 = jnp.float32
f64 = jnp.float64
i16 = jnp.int16
i32 = jnp.int32
i64 = jnp.int64


def static_cast(*xs: Any) -> Any:
    """Cast Python scalars to arrays of the smallest dtype that holds them (as jax_md does).

    Example:
        >>> dt, = static_cast(0.5)
    """
    return (jnp.array(x, dtype=onp.min_scalar_type(x)) for x in xs)


def merge_dicts(a: dict, b: dict, ignore_unused_parameters: bool = False) -> dict:
    """Merge keyword dictionaries; with ``ignore_unused_parameters`` only keys of ``a`` survive.

    Example:
        >>> merge_dicts({'x': 1}, {'x': 2, 'y': 3}, True)
        {'x': 2}
    """
    if not ignore_unused_parameters:
        return {**a, **b}
    merged = dict(a)
    for key in merged:
        value = b.get(key)
        if value is not None:
            merged[key] = value
    return merged


def safe_mask(mask: Array, fn: Any, operand: Array, placeholder: Any = 0) -> Array:
    """``fn(operand)`` where ``mask`` is true, ``placeholder`` elsewhere, with NaN-free gradients.

    Example:
        >>> safe_mask(jnp.array([True, False]), jnp.sqrt, jnp.array([4.0, -1.0])).tolist()
        [2.0, 0.0]
    """
    masked = jnp.where(mask, operand, 0)
    return jnp.where(mask, fn(masked), placeholder)


def high_precision_sum(X: Array, axis: int | Iterable[int] | None = None,
                       keepdims: bool = False) -> Array:
    """Sum in the widest dtype of ``X``'s kind, returned in ``X``'s dtype.

    Example:
        >>> float(high_precision_sum(jnp.ones(3)))
        3.0
    """
    X = jnp.asarray(X)
    if jnp.issubdtype(X.dtype, jnp.integer):
        wide = jnp.int64
    elif jnp.issubdtype(X.dtype, jnp.complexfloating):
        wide = jnp.complex128
    else:
        wide = jnp.float64
    if isinstance(axis, list):
        axis = tuple(axis)
    return jnp.array(jnp.sum(X, axis=axis, dtype=wide, keepdims=keepdims), dtype=X.dtype)


def maybe_downcast(x: Any) -> Array:
    """Keep float64 arrays as they are; turn anything else into a float32 array.

    Example:
        >>> maybe_downcast(1.0).dtype
        dtype('float32')
    """
    if isinstance(x, fluxion.Array) and x.dtype == jnp.dtype("float64"):
        return x
    return jnp.array(x, f32)


def is_array(x: Any) -> bool:
    """Whether ``x`` is a fluxion or NumPy array (tracers included).

    Example:
        >>> is_array(jnp.ones(2)), is_array(1.0)
        (True, False)
    """
    return isinstance(x, (fluxion.Array, onp.ndarray))


def is_concrete(x: Any) -> bool:
    """Whether ``x`` has a value known now (not a tracer inside ``jit``/``grad``/``vmap``).

    Example:
        >>> is_concrete(jnp.ones(()))
        True
    """
    try:
        bool(jnp.any(jnp.asarray(x) != 0))
    except fluxion.errors.ConcretizationTypeError:
        return False
    return True


def safe_norm(x: Array, axis: int = -1, epsilon: float = 1e-6, keepdims: bool = False) -> Array:
    """The Euclidean norm along ``axis``, never below ``epsilon``.

    Example:
        >>> float(safe_norm(jnp.zeros(3)))
        1e-06
    """
    return jnp.maximum(jnp.sqrt(jnp.sum(x ** 2, axis=axis, keepdims=keepdims)), epsilon)


def safe_arccos(x: Array, epsilon: float = 1e-6) -> Array:
    """``arccos`` of ``x`` clipped into ``[-1 + eps, 1 - eps]`` (finite gradients).

    Example:
        >>> round(float(safe_arccos(jnp.array(0.0))), 4)
        1.5708
    """
    return jnp.arccos(jnp.clip(x, -1.0 + epsilon, 1.0 - epsilon))


def normalize(x: Array, axis: int = -1, epsilon: float = 1e-6) -> Array:
    """``x`` divided by its :func:`safe_norm` along ``axis``.

    Example:
        >>> normalize(jnp.array([3.0, 4.0])).tolist()
        [0.6, 0.8]
    """
    return x / safe_norm(x, axis=axis, epsilon=epsilon, keepdims=True)
