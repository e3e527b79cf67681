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
from fluxion.random import _threefry as _tf
from fluxion.random._keys import THREEFRY, PRNGImpl, PRNGKeyArray
from fluxion.random._keys import consume as _consume

__all__ = ["Shape", "UINT_DTYPES", "sampler_jit", "check_key", "use_key", "shape_tuple",
           "random_bits", "split_keys", "split_pair", "float_dtype", "int_dtype", "shape_of",
           "check_shape", "broadcast_shapes_or_check", "to_rank", "const", "check_safe_cast"]

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
    """(key data uint32[..., 2], whether the key was raw data, implementation)."""
    if isinstance(key, PRNGKeyArray):
        data, wrapped, impl = key._base_array, False, key._impl
    elif _is_arraylike(key) or isinstance(key, (list, tuple)):
        data = key if hasattr(key, "aval") else jnp.asarray(key)
        if np.dtype(data.dtype) != np.uint32 or tuple(data.shape[-1:]) != (2,):
            raise TypeError(
                f"fluxion.random.{name}: expected a PRNG key (from fluxion.random.key) or legacy "
                f"uint32[..., 2] key data, got an array of dtype {data.dtype} and shape "
                f"{tuple(data.shape)}")
        wrapped, impl = True, THREEFRY
    else:
        raise TypeError(f"fluxion.random.{name}: unexpected PRNG key type {type(key)}")
    if not allow_batched and tuple(data.shape) != (2,):
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{tuple(data.shape[:-1])} != (). Use fluxion.vmap for batching.")
    return data, wrapped, impl


def use_key(name: str, key: Any) -> tuple[Any, bool, PRNGImpl]:
    """Check a single key and mark it consumed by ``name``."""
    out = check_key(name, key)
    _consume(key, name)
    return out


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


def random_bits(kd: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    return _tf.random_bits_data(kd, bit_width, shape)


def split_keys(kd: Any, num: int | tuple[int, ...] = 2) -> Any:
    shape = tuple(num) if isinstance(num, tuple) else (num,)
    return _tf.split_data(kd, shape)


def split_pair(kd: Any, num: int = 2) -> list[Any]:
    """``num`` keys split from each key of ``uint32[*B, 2]``, each ``uint32[*B, 2]``."""
    keys = split_keys(kd, num)
    batch = tuple(kd.shape[:-1])
    return [lax.reshape(lax.slice_in_dim(keys, i, i + 1, axis=len(batch)), (*batch, 2))
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
