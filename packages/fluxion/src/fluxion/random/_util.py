"""Helpers shared by the samplers: key checking, shape and dtype arguments, key splitting and
the per-sampler ``jit``.

Example:
    >>> from fluxion.random import _util
    >>> _util.shape_tuple("normal", [2, 3])
    (2, 3)
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.random import _impls
from fluxion.random._keys import PRNGImpl, PRNGKeyArray, default_impl
from fluxion.random._keys import consume as _consume

__all__ = ["Shape", "UINT_DTYPES", "sampler_jit", "check_key", "use_key", "shape_tuple",
           "random_bits", "split_keys", "split_pair", "float_dtype", "int_dtype", "shape_of",
           "check_shape", "broadcast_shapes_or_check", "to_rank", "const", "check_safe_cast",
           "as_typed"]

Shape = Sequence[int]

UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
               64: np.dtype(np.uint64)}


def sampler_jit(**kw: Any) -> Any:
    """A decorator: ``fluxion.jit`` made on first call (jaxlib loads lazily). Under a
    transformation it stays one nested ``jit`` call, as JAX's samplers do, so e.g. an eager
    ``vmap`` of a sampler runs as one compiled program (bit-identical to JAX's) rather than op by op.
    ``jit`` keys its caches on the trace context, which holds ``jax_threefry_partitionable``.
    """

    def deco(fun: Any) -> Any:
        cell: list[Any] = []

        def call(*args: Any, **kwargs: Any) -> Any:
            if not cell:
                # reason: the backend loads jaxlib, which importing fluxion.random must not.
                from fluxion.backend.jit import jit
                cell.append(jit(fun, **kw))
            return cell[0](*args, **kwargs)

        call.__name__ = fun.__name__
        call.__doc__ = fun.__doc__
        return call

    return deco


def _is_arraylike(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def check_key(name: str, key: Any, allow_batched: bool = False) -> tuple[Any, bool, PRNGImpl]:
    """(key data ``uint32[..., *key_shape]``, whether the key was raw data, implementation).
    Raw key data is taken for a key of the default implementation (``jax_default_prng_impl``)."""
    if isinstance(key, PRNGKeyArray):
        data, wrapped, impl = key._base_array, False, key._impl
    elif _is_arraylike(key) or isinstance(key, (list, tuple)):
        data = key if hasattr(key, "aval") else jnp.asarray(key)
        impl = default_impl()
        kshape = impl.key_shape
        if (np.dtype(data.dtype) != np.uint32 or len(data.shape) < len(kshape)
                or tuple(data.shape[len(data.shape) - len(kshape):]) != kshape):
            raise TypeError(
                f"fluxion.random.{name}: expected a PRNG key (from fluxion.random.key) or legacy "
                f"uint32[..., {', '.join(map(str, kshape))}] key data of the default PRNG "
                f"implementation {impl.name!r}, got an array of dtype {data.dtype} and shape "
                f"{tuple(data.shape)}")
        wrapped = True
    else:
        raise TypeError(f"fluxion.random.{name}: unexpected PRNG key type {type(key)}")
    if not allow_batched and tuple(data.shape) != impl.key_shape:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{tuple(data.shape[:len(data.shape) - len(impl.key_shape)])} != (). "
                         "Use fluxion.vmap for batching.")
    return data, wrapped, impl


def use_key(name: str, key: Any) -> tuple[PRNGKeyArray, bool, PRNGImpl]:
    """Check a single key and mark it consumed by ``name``: (the key as a typed key array, raw
    data wrapped with the default implementation; whether it was raw; its implementation)."""
    data, wrapped, impl = check_key(name, key)
    _consume(key, name)
    return (as_typed(impl, data) if wrapped else key), wrapped, impl


def as_typed(impl: PRNGImpl, data: Any) -> PRNGKeyArray:
    """A typed key array over key data (no key-reuse record: the samplers' internal keys)."""
    obj = object.__new__(PRNGKeyArray)
    obj._impl, obj._base_array, obj._track = impl, data, None
    return obj


def shape_tuple(name: str, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):  # one integer is a 1-D shape, as in JAX
        shape = (shape,)
    try:
        out = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"fluxion.random.{name}: shape must be a sequence of concrete integers, "
                        f"got {shape!r}") from None
    if any(d < 0 for d in out):
        raise ValueError(f"fluxion.random.{name}: shape must be non-negative, got {out}")
    return out


def random_bits(key: PRNGKeyArray, bit_width: int, shape: tuple[int, ...]) -> Any:
    """``uint<bit_width>[*key.shape, *shape]`` bits from each key, by its implementation."""
    return _impls.random_bits(key._impl, key._base_array, bit_width, tuple(shape))


def split_keys(key: PRNGKeyArray, num: int | tuple[int, ...] = 2) -> PRNGKeyArray:
    """Keys of shape ``(*key.shape, *num)``: ``num`` new keys from each key."""
    shape = tuple(num) if isinstance(num, tuple) else (num,)
    return as_typed(key._impl, _impls.split(key._impl, key._base_array, shape))


def split_pair(key: PRNGKeyArray, num: int = 2) -> list[PRNGKeyArray]:
    """``num`` keys split from each key of ``key`` (of any shape ``B``), each of shape ``B``."""
    keys = split_keys(key, num)
    nb = len(key.shape)
    data, kshape = keys._base_array, key._impl.key_shape
    batch = tuple(data.shape[:nb])
    return [as_typed(key._impl, lax.reshape(lax.slice_in_dim(data, i, i + 1, axis=nb),
                                            (*batch, *kshape)))
            for i in range(num)]


def float_dtype(name: str, dtype: Any, kinds: tuple = (np.floating,)) -> np.dtype:
    dt = dtypes.check_and_canonicalize_user_dtype(float if dtype is None else dtype)
    if not any(dtypes.issubdtype(dt, k) for k in kinds):
        what = "a float" if kinds == (np.floating,) else "a float or complex"
        raise ValueError(f"dtype argument to `{name}` must be {what} dtype, got {dt}")
    return dt


def int_dtype(name: str, dtype: Any) -> np.dtype:
    dt = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype)
    if not dtypes.issubdtype(dt, np.integer):
        raise ValueError(f"dtype argument to `{name}` must be an int dtype, got {dt}")
    return dt


def shape_of(x: Any) -> tuple[int, ...]:
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def check_shape(name: str, shape: tuple[int, ...], *param_shapes: tuple[int, ...]) -> None:
    if param_shapes:
        try:
            full = tuple(np.broadcast_shapes(shape, *param_shapes))
        except ValueError:
            full = None
        if full != tuple(shape):
            raise ValueError(
                f"{name} parameter shapes must be broadcast-compatible with shape argument, and "
                "the result of broadcasting the shapes must equal the shape argument, but got "
                f"result {full} for shape argument {shape}.")


def broadcast_shapes_or_check(name: str, shape: Any, *args: Any) -> tuple[int, ...]:
    arg_shapes = [shape_of(a) for a in args]
    if shape is None:
        return tuple(np.broadcast_shapes(*arg_shapes)) if arg_shapes else ()
    shape = shape_tuple(name, shape)
    check_shape(name, shape, *arg_shapes)
    return shape


def to_rank(x: Any, rank: int) -> Any:
    shp = shape_of(x)
    if len(shp) >= rank:
        return x
    return lax.reshape(x, (1,) * (rank - len(shp)) + tuple(shp))


def const(dtype: np.dtype, value: Any) -> Any:
    # A 0-d ndarray, not a NumPy scalar: np.float64/np.complex128 subclass Python's float/complex
    # and would be taken for weakly typed Python scalars.
    return np.array(value, dtype)


def check_safe_cast(name: str, dtype: np.dtype, *args: Any) -> None:
    for a in args:
        if not dtypes.safe_to_cast(a, dtype):
            adt = dtypes.dtype(a)
            raise TypeError(f"In arguments to {name}, cannot safely cast argument of type {adt} "
                            f"to {dtype}")
