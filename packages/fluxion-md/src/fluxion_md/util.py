"""Small shared helpers of fluxion_md (mirrors ``jax_md.util``): dtypes, masks, sums, casts."""

from __future__ import annotations

import functools
from functools import partial
from types import SimpleNamespace
from typing import Any, Iterable, Optional, Union

import numpy as onp

import fluxion
import fluxion.numpy as jnp
from fluxion import jit
from fluxion.tree_util import register_pytree_node

__all__ = [
    "Array", "PyTree", "f16", "f32", "f64", "i16", "i32", "i64", "high_precision_sum",
    "is_array", "maybe_downcast", "merge_dicts", "normalize", "safe_arccos", "safe_mask",
    "safe_norm", "static_cast", "is_concrete",
    "CUSTOM_SIMULATION_TYPE", "register_custom_simulation_type", "check_custom_simulation_type",
    "register_pytree_namedtuple", "get_backend",
    # jax_md.util has no __all__, so `from jax_md.util import *` (which jax-md's own tests use)
    # also brings these imports; the same line on fluxion_md.util brings Fluxion's
    "jnp", "onp", "jit", "partial", "register_pytree_node", "Any", "Iterable", "Optional",
    "Union",
]

# types whose values simulate's dispatch must refuse (jax_md's registry)
CUSTOM_SIMULATION_TYPE: list = []


def register_custom_simulation_type(t: Any) -> None:
    """Adds ``t`` to :data:`CUSTOM_SIMULATION_TYPE`, the types simulations dispatch on.

    Example:
        >>> from fluxion_md import util
        >>> class MyState: pass
        >>> util.register_custom_simulation_type(MyState)
        >>> MyState in util.CUSTOM_SIMULATION_TYPE
        True
    """
    CUSTOM_SIMULATION_TYPE.append(t)


def check_custom_simulation_type(x: Any) -> None:
    """Raises ``ValueError`` when ``type(x)`` was registered with
    :func:`register_custom_simulation_type` (as jax_md).

    Example:
        >>> from fluxion_md import util
        >>> util.check_custom_simulation_type(1.0)
    """
    if type(x) in CUSTOM_SIMULATION_TYPE:
        raise ValueError(f"check_custom_simulation_type: {type(x).__name__} is a registered "
                         "custom simulation type")


def register_pytree_namedtuple(cls: type) -> None:
    """Registers the namedtuple class ``cls`` as a pytree whose leaves are its fields.

    Example:
        >>> from collections import namedtuple
        >>> from fluxion_md import util
        >>> P = namedtuple("P", "a b")
        >>> util.register_pytree_namedtuple(P)
    """
    register_pytree_node(cls, lambda xs: (tuple(xs), None), lambda _, xs: cls(*xs))


@functools.lru_cache
def get_backend() -> Any:
    """The default backend, as an object with ``.platform`` (``"cpu"``, ``"gpu"`` or ``"tpu"``).

    Example:
        >>> from fluxion_md import util
        >>> util.get_backend().platform in ("cpu", "gpu", "tpu")
        True
    """
    return SimpleNamespace(platform=fluxion.default_backend())

# The array class, as jax_md's (jnp.ndarray): a type hint and an isinstance target.
Array = jnp.ndarray
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


def host_value(x: Any) -> onp.ndarray | None:
    """``x``'s value as a NumPy array, or ``None`` when it is a tracer (inside ``jit``, ``grad``
    or ``vmap``: NumPy refuses a ``grad`` tracer too, as a host computation on it would drop its
    derivative). Unlike :func:`is_concrete` it runs no XLA program (a concrete Fluxion Array
    is read back): setup code computes a static value on the host with it, where one eager op
    would be one XLA compile (50-300 ms each on a TPU).

    Example:
        >>> import fluxion
        >>> host_value(jnp.arange(3)).tolist(), host_value(2.5)
        ([0, 1, 2], array(2.5))
        >>> fluxion.jit(lambda x: x + (host_value(x) is None))(1.0).tolist()
        2.0
        >>> fluxion.grad(lambda x: x * (host_value(x) is None))(1.0).tolist()
        1.0
    """
    try:
        return onp.asarray(x)
    except fluxion.errors.TracerArrayConversionError:
        return None


def static_float(x: Any) -> float | None:
    """``x`` as a Python float where its value is known while tracing (a number, an array, a
    tracer of ``grad``: its primal, without the derivative, as jax_md's ``stop_gradient``), or
    ``None`` for a ``jit`` or ``vmap`` tracer. Runs no XLA program.

    Example:
        >>> import fluxion
        >>> static_float(jnp.float32(0.5)), fluxion.grad(lambda c: c * static_float(c))(3.0).tolist()
        (0.5, 3.0)
        >>> fluxion.jit(lambda c: c + (static_float(c) is None))(1.0).tolist()
        2.0
    """
    try:  # .item() reads a grad tracer's primal (JAX's concrete_or_error); float() refuses it
        return float(x.item() if isinstance(x, (fluxion.Array, onp.ndarray)) else x)
    except fluxion.errors.ConcretizationTypeError:
        return None


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
