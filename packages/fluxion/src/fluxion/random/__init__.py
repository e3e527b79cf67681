"""``fluxion.random``: JAX's counter-based PRNG, bit for bit.

Keys are explicit: make one with :func:`key` (a typed key array, dtype ``key<fry>``) or
:func:`PRNGKey` (legacy raw ``uint32[2]`` data), derive new ones with :func:`split` and
:func:`fold_in`, and pass a key to every sampler. The generator is threefry2x32 written with lax
bit operations (see ``fluxion/random/_threefry.py``), with JAX 0.10's default
``jax_threefry_partitionable=True`` layout, so the same key, shape and dtype give the same numbers
as ``jax.random``. The samplers follow JAX's algorithms step by step.

Example:
    >>> import fluxion
    >>> key = fluxion.random.key(0)
    >>> k1, k2 = fluxion.random.split(key)
    >>> fluxion.random.normal(k1, (3,)).shape
    (3,)
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.core.config import config
from fluxion.random import _threefry as _tf
from fluxion.random._keys import (
    THREEFRY,
    KeyDtype,
    PRNGImpl,
    PRNGKeyArray,
    resolve_impl,
)
from fluxion.random._keys import (
    consume as _consume,
)

__all__ = [
    "KeyArray", "PRNGKey", "ball", "bernoulli", "beta", "binomial", "bits", "categorical",
    "cauchy", "chisquare", "choice", "clone", "dirichlet", "double_sided_maxwell",
    "exponential", "f", "fold_in", "gamma", "generalized_normal", "geometric", "gumbel", "key",
    "key_data", "key_dtype", "key_impl", "laplace", "loggamma", "logistic", "lognormal",
    "maxwell", "multivariate_normal", "normal", "orthogonal", "pareto", "permutation", "poisson",
    "rademacher", "randint", "rayleigh", "split", "t", "threefry_2x32", "triangular",
    "truncated_normal", "uniform", "wald", "weibull_min", "wrap_key_data",
]

KeyArray = PRNGKeyArray
Shape = Sequence[int]

_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
         64: np.dtype(np.uint64)}


def _jnp() -> Any:
    import fluxion.numpy as jnp  # noqa: PLC0415
    return jnp


def _jit(**kw: Any) -> Any:
    """A decorator: ``fluxion.jit`` made on first call (jaxlib loads lazily). Under a
    transformation it stays one nested ``jit`` call, as JAX's samplers do, so e.g. an eager
    ``vmap`` of a sampler runs as one compiled program (bit-identical to JAX's) rather than op by op.

    One jitted function per value of ``jax_threefry_partitionable``, since the bits a sampler
    draws depend on that flag and ``jit``'s cache key does not include it.
    """

    def deco(fun: Any) -> Any:
        cell: dict[bool, Any] = {}

        def call(*args: Any, **kwargs: Any) -> Any:
            flag = bool(config.jax_threefry_partitionable)
            j = cell.get(flag)
            if j is None:
                from fluxion.backend.jit import jit  # noqa: PLC0415
                j = cell[flag] = jit(fun, **kw)
            return j(*args, **kwargs)

        call.__name__ = fun.__name__
        call.__doc__ = fun.__doc__
        return call

    return deco


# ============================================================================== keys

def _is_arraylike(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _check_key(name: str, key: Any, allow_batched: bool = False) -> tuple[Any, bool, PRNGImpl]:
    """(key data uint32[..., 2], whether the key was raw data, implementation)."""
    if isinstance(key, PRNGKeyArray):
        data, wrapped, impl = key._base_array, False, key._impl
    elif _is_arraylike(key) or isinstance(key, (list, tuple)):
        data = key if hasattr(key, "aval") else _jnp().asarray(key)
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


def _return_keys(wrapped: bool, data: Any, impl: PRNGImpl = THREEFRY) -> Any:
    return data if wrapped else PRNGKeyArray(impl, data)


def _use(name: str, key: Any) -> tuple[Any, bool, PRNGImpl]:
    """Check a single key and mark it consumed by ``name``."""
    out = _check_key(name, key)
    _consume(key, name)
    return out


def key(seed: int | Any, *, impl: Any = None, dtype: Any = None) -> PRNGKeyArray:
    """A typed PRNG key (dtype ``key<fry>``, shape ``()``) from an integer seed.

    Example:
        >>> import fluxion
        >>> fluxion.random.key(42).dtype
        key<fry>
    """
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "fluxion.random.key")
        impl = dtype
    return PRNGKeyArray(resolve_impl(impl), _seed("key", seed))


def _seed(name: str, seed: Any) -> Any:
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{name} accepts a scalar seed, but was given a PRNG key.")
    if np.ndim(seed) if not hasattr(seed, "shape") else len(seed.shape):
        raise TypeError(f"{name} accepts a scalar seed, but was given an array of shape "
                        f"{np.shape(seed)} != (). Use fluxion.vmap for batching")
    return _tf.seed_data(seed)


def PRNGKey(seed: int | Any, *, impl: Any = None) -> Any:  # noqa: N802
    """A legacy PRNG key: raw ``uint32[2]`` key data from an integer seed.

    Example:
        >>> import fluxion
        >>> fluxion.random.PRNGKey(42).tolist()
        [0, 42]
    """
    resolve_impl(impl)
    return _seed("PRNGKey", seed)


def key_data(keys: Any) -> Any:
    """The ``uint32[..., 2]`` data of a key array (raw key data is returned as is).

    Example:
        >>> import fluxion
        >>> fluxion.random.key_data(fluxion.random.key(7)).tolist()
        [0, 7]
    """
    data, _, _ = _check_key("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> PRNGKeyArray:
    """A typed key array over ``uint32[..., 2]`` key data.

    Example:
        >>> import fluxion
        >>> k = fluxion.random.key(3)
        >>> bool(fluxion.random.wrap_key_data(fluxion.random.key_data(k)) == k)
        True
    """
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "fluxion.random.wrap_key_data")
        impl = dtype
    impl_obj = resolve_impl(impl)
    if isinstance(key_bits_array, PRNGKeyArray):
        raise TypeError("wrap_key_data: the argument is already a key array; pass key data "
                        "(fluxion.random.key_data(keys))")
    data = key_bits_array if hasattr(key_bits_array, "aval") else _jnp().asarray(key_bits_array)
    if np.dtype(data.dtype) != np.uint32:
        raise TypeError(f"wrap_key_data: key data must have dtype uint32, got {data.dtype}")
    if tuple(data.shape[-1:]) != impl_obj.key_shape:
        raise TypeError(f"wrap_key_data: key data must have trailing shape "
                        f"{impl_obj.key_shape} for {impl_obj.name}, got shape {tuple(data.shape)}")
    return PRNGKeyArray(impl_obj, data)


def key_impl(keys: Any) -> str:
    """The name of a key array's PRNG implementation (``'threefry2x32'``).

    Example:
        >>> import fluxion
        >>> fluxion.random.key_impl(fluxion.random.key(0))
        'threefry2x32'
    """
    _, _, impl = _check_key("key_impl", keys, allow_batched=True)
    return impl.name


def key_dtype(impl: Any = None) -> KeyDtype:
    """The key dtype of a PRNG implementation (``key<fry>`` for threefry2x32).

    Example:
        >>> import fluxion
        >>> str(fluxion.random.key_dtype())
        'key<fry>'
    """
    return KeyDtype(resolve_impl(impl))


def clone(key: Any) -> Any:
    """A copy of ``key`` that the key-reuse checker treats as a fresh key.

    Example:
        >>> import fluxion
        >>> k = fluxion.random.key(0)
        >>> bool(fluxion.random.clone(k) == k)
        True
    """
    if isinstance(key, PRNGKeyArray):
        return PRNGKeyArray(key._impl, key._base_array)
    data, _, _ = _check_key("clone", key, allow_batched=True)
    return data + np.uint32(0) if not hasattr(data, "aval") else data


def _shape_tuple(name: str, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        raise TypeError(f"fluxion.random.{name}: shape must be a sequence of integers, got "
                        f"{shape!r}; write ({shape},) for a 1-D shape")
    try:
        out = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"fluxion.random.{name}: shape must be a sequence of concrete integers, "
                        f"got {shape!r}") from None
    if any(d < 0 for d in out):
        raise ValueError(f"fluxion.random.{name}: shape must be non-negative, got {out}")
    return out


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """``num`` new keys (or an array of keys of shape ``num``) from one key.

    Example:
        >>> import fluxion
        >>> fluxion.random.split(fluxion.random.key(0), 3).shape
        (3,)
    """
    data, wrapped, impl = _use("split", key)
    shape = _shape_tuple("split", num) if isinstance(num, Sequence) else (int(num),)
    return _return_keys(wrapped, _tf.split_data(data, shape), impl)


def fold_in(key: Any, data: Any) -> Any:
    """A new key from a key and an integer (taken as uint32).

    Example:
        >>> import fluxion
        >>> k = fluxion.random.fold_in(fluxion.random.key(0), 7)
        >>> k.shape
        ()
    """
    kd, wrapped, impl = _use("fold_in", key)
    if np.ndim(data) if not hasattr(data, "shape") else len(data.shape):
        raise TypeError("fold_in accepts a scalar, but was given an array of shape "
                        f"{np.shape(data)} != (). Use fluxion.vmap for batching.")
    if isinstance(data, (int, np.integer)) and not hasattr(data, "aval"):
        msg = _jnp().asarray(np.asarray(int(data) % (1 << 32) if isinstance(data, int)
                                        else data).astype(np.uint32))
    else:
        msg = lax.convert_element_type(data, np.uint32)
    return _return_keys(wrapped, _tf.fold_in_data(kd, msg), impl)


def threefry_2x32(keypair: Any, count: Any) -> Any:
    """The Threefry-2x32 hash of a uint32 ``count`` array under raw key data ``keypair``
    (JAX's original layout: the flat counts split in halves).

    Example:
        >>> import numpy as np, fluxion
        >>> fluxion.random.threefry_2x32(fluxion.random.PRNGKey(0),
        ...                              np.arange(4, dtype=np.uint32)).shape
        (4,)
    """
    data = keypair if hasattr(keypair, "aval") else _jnp().asarray(keypair)
    cnt = count if hasattr(count, "aval") else _jnp().asarray(count)
    if np.dtype(data.dtype) != np.uint32 or np.dtype(cnt.dtype) != np.uint32:
        raise TypeError(f"threefry_2x32 requires uint32 arguments, got "
                        f"{[str(data.dtype), str(cnt.dtype)]}")
    return _tf.hash_counts(data, cnt)


# ============================================================================== helpers

def _bits(kd: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    return _tf.random_bits_data(kd, bit_width, shape)


def _split(kd: Any, num: int | tuple[int, ...] = 2) -> Any:
    shape = tuple(num) if isinstance(num, tuple) else (num,)
    return _tf.split_data(kd, shape)


def _pair(kd: Any, num: int = 2) -> list[Any]:
    """``num`` keys split from each key of ``uint32[*B, 2]``, each ``uint32[*B, 2]``."""
    keys = _split(kd, num)
    batch = tuple(kd.shape[:-1])
    return [lax.reshape(lax.slice_in_dim(keys, i, i + 1, axis=len(batch)), (*batch, 2))
            for i in range(num)]


def _float_dtype(name: str, dtype: Any, kinds: tuple = (np.floating,)) -> np.dtype:
    dt = dtypes.check_and_canonicalize_user_dtype(float if dtype is None else dtype)
    if not any(dtypes.issubdtype(dt, k) for k in kinds):
        what = "a float" if kinds == (np.floating,) else "a float or complex"
        raise ValueError(f"dtype argument to `{name}` must be {what} dtype, got {dt}")
    return dt


def _int_dtype(name: str, dtype: Any) -> np.dtype:
    dt = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype)
    if not dtypes.issubdtype(dt, np.integer):
        raise ValueError(f"dtype argument to `{name}` must be an int dtype, got {dt}")
    return dt


def _finfo(dtype: np.dtype) -> Any:
    return _jnp().finfo(dtype)


def _shape_of(x: Any) -> tuple[int, ...]:
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _check_shape(name: str, shape: tuple[int, ...], *param_shapes: tuple[int, ...]) -> None:
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


def _broadcast_shapes_or_check(name: str, shape: Any, *args: Any) -> tuple[int, ...]:
    arg_shapes = [_shape_of(a) for a in args]
    if shape is None:
        return tuple(np.broadcast_shapes(*arg_shapes)) if arg_shapes else ()
    shape = _shape_tuple(name, shape)
    _check_shape(name, shape, *arg_shapes)
    return shape


def _to_rank(x: Any, rank: int) -> Any:
    shp = _shape_of(x)
    if len(shp) >= rank:
        return x
    return lax.reshape(x, (1,) * (rank - len(shp)) + tuple(shp))


def _bcast(x: Any, shape: tuple[int, ...]) -> Any:
    return _jnp().broadcast_to(x, shape)


def _const(dtype: np.dtype, value: Any) -> Any:
    # A 0-d ndarray, not a NumPy scalar: np.float64/np.complex128 subclass Python's float/complex
    # and would be taken for weakly typed Python scalars.
    return np.array(value, dtype)


def _check_safe_cast(name: str, dtype: np.dtype, *args: Any) -> None:
    for a in args:
        if not dtypes.safe_to_cast(a, dtype):
            adt = dtypes.dtype(a)
            raise TypeError(f"In arguments to {name}, cannot safely cast argument of type {adt} "
                            f"to {dtype}")


# ============================================================================== bits & uniform

def bits(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Uniform random bits as unsigned integers (default ``uint32``; ``uint64`` with x64).

    Example:
        >>> import fluxion
        >>> fluxion.random.bits(fluxion.random.key(0), (2,)).dtype
        dtype('uint32')
    """
    kd, _, _ = _use("bits", key)
    dt = dtypes.default_uint_dtype() if dtype is None else (
        dtypes.check_and_canonicalize_user_dtype(dtype))
    if not dtypes.issubdtype(dt, np.unsignedinteger):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    return _bits(kd, dt.itemsize * 8, _shape_tuple("bits", shape))


def _uniform_raw(kd: Any, shape: tuple[int, ...], dtype: np.dtype, minval: Any,
                 maxval: Any) -> Any:
    full = tuple(kd.shape[:-1]) + tuple(shape)
    minval = _to_rank(lax.convert_element_type(minval, dtype), len(full))
    maxval = _to_rank(lax.convert_element_type(maxval, dtype), len(full))
    fi = _finfo(dtype)
    nbits, nmant = int(fi.bits), int(fi.nmant)
    if nbits not in (8, 16, 32, 64):
        raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}.")
    rng_bits = 8 if nmant < 8 else nbits
    b = _bits(kd, rng_bits, shape)
    udt = _UINT[nbits]
    if rng_bits != nbits:
        b = lax.convert_element_type(b, udt)
    fbits = lax.shift_right_logical(b, _const(udt, rng_bits - nmant))
    fbits = lax.bitwise_or(fbits, np.array(1.0, dtype).view(udt)[()])
    floats = lax.sub(lax.bitcast_convert_type(fbits, dtype), _const(dtype, 1.0))
    return lax.max(minval, lax.reshape(lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval),
                                       full))


@_jit(static_argnums=(3, 4))
def _uniform_impl(kd: Any, minval: Any, maxval: Any, shape: tuple[int, ...],
                  dtype: np.dtype) -> Any:
    return _uniform_raw(kd, shape, dtype, minval, maxval)


def uniform(key: Any, shape: Shape = (), dtype: Any = None, minval: Any = 0.0,
            maxval: Any = 1.0) -> Any:
    """Uniform floats in ``[minval, maxval)`` (default float32; float64 with x64).

    Example:
        >>> import fluxion
        >>> float(fluxion.random.uniform(fluxion.random.key(0))) < 1.0
        True
    """
    kd, _, _ = _use("uniform", key)
    dt = _float_dtype("uniform", dtype)
    shape = _shape_tuple("uniform", shape)
    return _uniform_impl(kd, minval, maxval, shape, dt)


# ============================================================================== integers

def _convert_and_clip_integer(val: Any, dtype: np.dtype) -> Any:
    jnp = _jnp()
    vdt = np.dtype(val.dtype)
    lo = max(int(np.iinfo(dtype).min), int(np.iinfo(vdt).min))
    hi = min(int(np.iinfo(dtype).max), int(np.iinfo(vdt).max))
    clipped = lax.min(lax.max(val, _const(vdt, lo)), _const(vdt, hi))
    return jnp.asarray(clipped).astype(dtype)


@_jit(static_argnums=(3, 4))
def _randint_impl(kd: Any, minval: Any, maxval: Any, shape: tuple[int, ...],
                  dtype: np.dtype) -> Any:
    jnp = _jnp()
    _check_shape("randint", shape, _shape_of(minval), _shape_of(maxval))
    minval = jnp.asarray(minval)
    maxval = jnp.asarray(maxval)
    if not dtypes.issubdtype(minval.dtype, np.integer):
        minval = minval.astype(int)
    if not dtypes.issubdtype(maxval.dtype, np.integer):
        maxval = maxval.astype(int)
    top = _convert_and_clip_integer(jnp.asarray(np.array(np.iinfo(dtype).max, dtype)),
                                    np.dtype(maxval.dtype))
    maxval_out_of_range = lax.gt(maxval, top)
    minval = _to_rank(_convert_and_clip_integer(minval, dtype), len(shape))
    maxval = _to_rank(_convert_and_clip_integer(maxval, dtype), len(shape))
    maxval_out_of_range = _to_rank(maxval_out_of_range, len(shape))
    nbits = np.iinfo(dtype).bits
    if nbits not in (8, 16, 32, 64):
        raise TypeError(f"randint only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}")
    k1, k2 = _pair(kd)
    higher = _bits(k1, nbits, shape)
    lower = _bits(k2, nbits, shape)
    udt = _UINT[nbits]
    span = lax.convert_element_type(lax.sub(maxval, minval), udt)
    le = lax.le(maxval, minval)
    span = lax.select(jnp.broadcast_to(le, span.shape), jnp.ones_like(span), span)
    bump = lax.bitwise_and(maxval_out_of_range, lax.gt(maxval, minval))
    span = lax.select(jnp.broadcast_to(bump, span.shape), lax.add(span, _const(udt, 1)), span)
    mult = lax.rem(_const(udt, 2 ** (nbits // 2)), span)
    mult = lax.rem(lax.mul(mult, mult), span)
    off = lax.add(lax.mul(lax.rem(higher, span), mult), lax.rem(lower, span))
    off = lax.rem(off, span)
    return lax.add(minval, lax.convert_element_type(off, dtype))


def randint(key: Any, shape: Shape, minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Uniform integers in ``[minval, maxval)`` (default int32; int64 with x64).

    Example:
        >>> import fluxion
        >>> int(fluxion.random.randint(fluxion.random.key(0), (), 0, 10)) in range(10)
        True
    """
    jnp = _jnp()
    kd, _, _ = _use("randint", key)
    dt = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype)
    if not dtypes.issubdtype(dt, np.integer):
        raise TypeError(f"randint only accepts integer dtypes, got {dt}")
    shape = _shape_tuple("randint", shape)
    info = np.iinfo(dt)
    sdt = dt
    if info.bits < 32:
        sdt = np.dtype(np.int32)
        minval = jnp.clip(jnp.asarray(minval).astype("int32"), int(info.min), int(info.max))
        maxval = jnp.clip(jnp.asarray(maxval).astype("int32"), int(info.min), int(info.max) + 1)
    return _randint_impl(kd, minval, maxval, shape, sdt).astype(dt)


# ============================================================================== normal family

def _normal_real(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    lo = np.asarray(np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype), dtype)
    u = _uniform_raw(kd, shape, dtype, lo, np.array(1.0, dtype))
    return lax.mul(_const(dtype, np.sqrt(2)), lax.erf_inv(u))


def _normal_any(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    if dtypes.issubdtype(dtype, np.complexfloating):
        rdt = np.dtype(np.array(0, dtype).real.dtype)
        k_re, k_im = _pair(kd)
        re = lax.convert_element_type(_normal_real(k_re, shape, rdt), dtype)
        im = lax.convert_element_type(_normal_real(k_im, shape, rdt), dtype)
        z = lax.add(re, lax.mul(_const(dtype, 1j), im))
        return lax.div(z, _const(dtype, np.sqrt(2)))
    return _normal_real(kd, shape, dtype)


@_jit(static_argnums=(1, 2))
def _normal_impl(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return _normal_any(kd, shape, dtype)


def normal(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Standard normal samples (float or complex dtype).

    Example:
        >>> import fluxion
        >>> fluxion.random.normal(fluxion.random.key(0), (2, 3)).shape
        (2, 3)
    """
    kd, _, _ = _use("normal", key)
    dt = _float_dtype("normal", dtype, (np.inexact,))
    return _normal_impl(kd, _shape_tuple("normal", shape), dt)


@_jit(static_argnums=(3, 4))
def _truncated_normal_impl(kd: Any, lower: Any, upper: Any, shape: tuple[int, ...],
                           dtype: np.dtype) -> Any:
    jnp = _jnp()
    sqrt2 = _const(dtype, np.sqrt(2))
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    a = lax.erf(lax.div(lower, sqrt2))
    b = lax.erf(lax.div(upper, sqrt2))
    u = _uniform_raw(kd, shape, dtype, a, b)
    out = lax.mul(sqrt2, lax.erf_inv(u))
    lo = lax.nextafter(lower, jnp.full(_shape_of(lower), np.inf, dtype))
    hi = lax.nextafter(upper, jnp.full(_shape_of(upper), -np.inf, dtype))
    return jnp.clip(out, lo, hi)


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Shape | None = None,
                     dtype: Any = None) -> Any:
    """Standard normal samples truncated to ``[lower, upper]``.

    Example:
        >>> import fluxion
        >>> x = fluxion.random.truncated_normal(fluxion.random.key(0), -1.0, 1.0, (5,))
        >>> bool((abs(x) <= 1).all())
        True
    """
    kd, _, _ = _use("truncated_normal", key)
    dt = _float_dtype("truncated_normal", dtype)
    shape = _broadcast_shapes_or_check("truncated_normal", shape, lower, upper)
    return _truncated_normal_impl(kd, lower, upper, shape, dt)


@_jit(static_argnums=(3, 4))
def _lognormal_impl(kd: Any, sigma: Any, _unused: Any, shape: tuple[int, ...],
                    dtype: np.dtype) -> Any:
    sigma = lax.convert_element_type(sigma, dtype)
    return lax.exp(_jnp().multiply(_normal_any(kd, shape, dtype), sigma))


def lognormal(key: Any, sigma: Any = np.float32(1), shape: Shape | None = None,
              dtype: Any = None) -> Any:
    """Log-normal samples: ``exp(sigma * normal)``.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.lognormal(fluxion.random.key(0), shape=(3,)) > 0).all())
        True
    """
    kd, _, _ = _use("lognormal", key)
    dt = _float_dtype("lognormal", dtype, (np.inexact,))
    shape = _broadcast_shapes_or_check("lognormal", shape, sigma)
    _check_safe_cast("lognormal", dt, sigma)
    return _lognormal_impl(kd, sigma, 0, shape, dt)


# ============================================================================== simple transforms

@_jit(static_argnums=(1, 2))
def _exponential_impl(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return _exponential_raw(kd, shape, dtype)


def _exponential_raw(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    u = _uniform_raw(kd, shape, dtype, _const(dtype, 0), _const(dtype, 1))
    return lax.neg(lax.log1p(lax.neg(u)))


def exponential(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Standard exponential samples.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.exponential(fluxion.random.key(0), (4,)) >= 0).all())
        True
    """
    kd, _, _ = _use("exponential", key)
    return _exponential_impl(kd, _shape_tuple("exponential", shape),
                             _float_dtype("exponential", dtype))


def _simple(name: str, body: Any, doc: str) -> Any:
    impl = _jit(static_argnums=(1, 2))(body)

    def sampler(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
        kd, _, _ = _use(name, key)
        return impl(kd, _shape_tuple(name, shape), _float_dtype(name, dtype))

    sampler.__name__ = sampler.__qualname__ = name
    sampler.__doc__ = doc
    return sampler


def _laplace_body(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    fi = _finfo(dtype)
    u = _uniform_raw(kd, shape, dtype, -1.0 + float(fi.epsneg), 1.0)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def _logistic_body(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    x = _uniform_raw(kd, shape, dtype, float(_finfo(dtype).tiny), 1.0)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def _cauchy_body(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    u = _uniform_raw(kd, shape, dtype, float(_finfo(dtype).eps), 1.0)
    return lax.tan(lax.mul(_const(dtype, np.pi), lax.sub(u, _const(dtype, 0.5))))


laplace = _simple("laplace", _laplace_body, """Laplace samples (location 0, scale 1).

    Example:
        >>> import fluxion
        >>> fluxion.random.laplace(fluxion.random.key(0), (3,)).shape
        (3,)
    """)
logistic = _simple("logistic", _logistic_body, """Standard logistic samples.

    Example:
        >>> import fluxion
        >>> fluxion.random.logistic(fluxion.random.key(0), (3,)).shape
        (3,)
    """)
cauchy = _simple("cauchy", _cauchy_body, """Standard Cauchy samples.

    Example:
        >>> import fluxion
        >>> fluxion.random.cauchy(fluxion.random.key(0), (3,)).shape
        (3,)
    """)


def _gumbel_raw(kd: Any, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> Any:
    fi = _finfo(dtype)
    if mode == "highest" and dtype == np.float32:
        return _gumbel_highest(kd, shape)
    if mode in ("high", "highest"):
        both = _uniform_raw(kd, (2, *shape), dtype, 0.0, 1.0)
        high = lax.reshape(lax.slice_in_dim(both, 0, 1, axis=0), shape)
        low = lax.reshape(lax.slice_in_dim(both, 1, 2, axis=0), shape)
        alt = lax.add(lax.add(high, lax.mul(_const(dtype, 2.0 ** -int(fi.nmant)), low)),
                      _const(dtype, fi.tiny))
        x = lax.select(lax.ge(high, _const(dtype, 0.5)), high, alt)
        return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
    u = _uniform_raw(kd, shape, dtype, float(fi.tiny), 1.0)
    return lax.neg(lax.log(lax.neg(lax.log(u))))


def _gumbel_highest(kd: Any, shape: tuple[int, ...]) -> Any:
    u32 = np.dtype(np.uint32)
    b = _bits(kd, 32, (2, *shape))
    neg = lax.bitwise_not(b)
    lo_bits = lax.slice_in_dim(neg, 1, 2, axis=0)
    carry = lax.convert_element_type(lax.eq(lo_bits, np.uint32(0xFFFFFFFF)), u32)
    neg = lax.add(neg, lax.concatenate([carry, lax.broadcast_in_dim(np.uint32(1), lo_bits.shape,
                                                                     ())], 0))
    b0 = lax.slice_in_dim(b, 0, 1, axis=0)
    flip = lax.lt(b0, np.uint32(1 << 31))
    flip2 = lax.concatenate([flip, flip], 0)
    x = _safe_int_to_float(lax.select(flip2, b, neg))
    x = lax.reshape(x, shape)
    flip = lax.reshape(flip, shape)
    a = lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
    c = lax.neg(lax.log(lax.neg(lax.log(x))))
    return lax.select(flip, a, c)


def _safe_int_to_float(b: Any) -> Any:
    """uint32 bit pairs (hi, lo) -> float32 in (0, 1), using all 64 bits (JAX's helper)."""
    hi = lax.slice_in_dim(b, 0, 1, axis=0)
    lo = lax.slice_in_dim(b, 1, 2, axis=0)
    hiclz, loclz = lax.clz(hi), lax.clz(lo)
    full = lax.eq(hiclz, np.uint32(32))
    mant = lax.bitwise_or(lax.shift_left(hi, hiclz),
                          lax.select(full, lax.shift_left(lo, loclz),
                                     lax.shift_right_logical(lo, lax.sub(np.uint32(32), hiclz))))
    mant = lax.shift_right_logical(mant, np.uint32(32 - 23 - 1))
    mant = lax.bitwise_and(mant, np.uint32((1 << 23) - 1))
    lz = lax.select(full, lax.add(np.uint32(32), loclz), hiclz)
    ex = lax.shift_left(lax.sub(np.uint32(126), lz), np.uint32(23))
    ex = lax.bitwise_and(ex, np.uint32((1 << 30) - (1 << 22)))
    return lax.bitcast_convert_type(lax.bitwise_or(ex, mant), np.dtype(np.float32))


@_jit(static_argnums=(1, 2, 3))
def _gumbel_impl(kd: Any, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> Any:
    return _gumbel_raw(kd, shape, dtype, mode)


def gumbel(key: Any, shape: Shape = (), dtype: Any = None, mode: str | None = None) -> Any:
    """Standard Gumbel samples; ``mode`` 'low' (default), 'high' or 'highest' trades cost for
    resolution of the far tail.

    Example:
        >>> import fluxion
        >>> fluxion.random.gumbel(fluxion.random.key(0), (3,)).shape
        (3,)
    """
    kd, _, _ = _use("gumbel", key)
    dt = _float_dtype("gumbel", dtype)
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    return _gumbel_impl(kd, _shape_tuple("gumbel", shape), dt, mode)


# ============================================================================== discrete

@_jit(static_argnums=(2, 3))
def _bernoulli_impl(kd: Any, p: Any, shape: tuple[int, ...], mode: str) -> Any:
    jnp = _jnp()
    dtype = np.dtype(p.dtype)
    if mode == "high":
        both = _uniform_raw(kd, (2, *shape), dtype, 0.0, 1.0)
        u1 = lax.reshape(lax.slice_in_dim(both, 0, 1, axis=0), shape)
        u2 = lax.reshape(lax.slice_in_dim(both, 1, 2, axis=0), shape)
        u2 = lax.mul(u2, _const(dtype, 2.0 ** -int(_finfo(dtype).nmant)))
        return jnp.less(u2, jnp.subtract(p, u1))
    return jnp.less(_uniform_raw(kd, shape, dtype, 0.0, 1.0), p)


def bernoulli(key: Any, p: Any = 0.5, shape: Shape | None = None, mode: str = "low") -> Any:
    """Booleans that are True with probability ``p``.

    Example:
        >>> import fluxion
        >>> fluxion.random.bernoulli(fluxion.random.key(0), 0.5, (4,)).dtype
        dtype('bool')
    """
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    kd, _, _ = _use("bernoulli", key)
    dt = dtypes.dtype(p, canonicalize=True)
    if not dtypes.issubdtype(dt, np.floating):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dt}.")
    p = lax.convert_element_type(p, dt)
    if shape is None:
        shape = _shape_of(p)
    else:
        shape = _shape_tuple("bernoulli", shape)
        _check_shape("bernoulli", shape, _shape_of(p))
    return _bernoulli_impl(kd, p, shape, mode)


@_jit(static_argnums=(1, 2))
def _rademacher_impl(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return _rademacher_raw(kd, shape, dtype)


def _rademacher_raw(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    pdt = dtypes.default_float_dtype()
    u = _uniform_raw(kd, shape, pdt, 0.0, 1.0)
    b = lax.convert_element_type(lax.lt(u, _const(pdt, 0.5)), dtype)
    return lax.sub(lax.mul(_const(dtype, 2), b), _const(dtype, 1))


def rademacher(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Random signs: -1 or +1 with equal probability (default int dtype).

    Example:
        >>> import fluxion
        >>> set(fluxion.random.rademacher(fluxion.random.key(0), (8,)).tolist()) <= {-1, 1}
        True
    """
    kd, _, _ = _use("rademacher", key)
    dt = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype)
    return _rademacher_impl(kd, _shape_tuple("rademacher", shape), dt)


@_jit(static_argnums=(2, 3))
def _geometric_impl(kd: Any, p: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
    p = jnp.asarray(p)
    if not dtypes.issubdtype(p.dtype, np.inexact):
        p = p.astype(dtypes.to_inexact_dtype(p.dtype))
    pdt = np.dtype(p.dtype)
    u = _uniform_raw(kd, shape, pdt, 0.0, 1.0)
    u = lax.select(lax.eq(u, _const(pdt, 0)), jnp.ones_like(u), u)
    lq = jnp.broadcast_to(lax.log1p(lax.neg(p)), shape)
    g = lax.add(lax.floor(lax.div(lax.log(u), lq)), _const(pdt, 1))
    return g.astype(dtype)


def geometric(key: Any, p: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Geometric samples: the number of Bernoulli(p) trials up to the first success.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.geometric(fluxion.random.key(0), 0.3, (5,)) >= 1).all())
        True
    """
    kd, _, _ = _use("geometric", key)
    dt = _int_dtype("geometric", dtype)
    shape = _broadcast_shapes_or_check("geometric", shape, p)
    return _geometric_impl(kd, p, shape, dt)


@_jit(static_argnums=(2, 3, 4, 5))
def _categorical_impl(kd: Any, logits: Any, shape: tuple[int, ...], batch_shape: tuple[int, ...],
                      axis: int, mode: str) -> Any:
    jnp = _jnp()
    prefix = shape[:len(shape) - len(batch_shape)]
    nd = len(logits.shape)
    if axis >= 0:
        axis -= nd
    lshape = list(shape[len(shape) - len(batch_shape):])
    lshape.insert(axis % nd, logits.shape[axis])
    g = _gumbel_raw(kd, (*prefix, *lshape), np.dtype(logits.dtype), mode)
    lg = lax.reshape(logits, (1,) * len(prefix) + tuple(logits.shape)) if prefix else logits
    return jnp.argmax(jnp.add(g, lg), axis=axis)


def categorical(key: Any, logits: Any, axis: int = -1, shape: Shape | None = None,
                replace: bool = True, mode: str | None = None) -> Any:
    """Samples from a categorical distribution with unnormalised log-probabilities ``logits``
    along ``axis`` (the Gumbel-max trick).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fluxion.random.categorical(fluxion.random.key(0), jnp.zeros((2, 5))).shape
        (2,)
    """
    jnp = _jnp()
    kd, _, _ = _use("categorical", key)
    logits = jnp.asarray(logits)
    nd = logits.ndim
    ax = axis % nd if nd else 0
    batch_shape = tuple(d for i, d in enumerate(logits.shape) if i != ax)
    if shape is None:
        shape = batch_shape
    else:
        shape = _shape_tuple("categorical", shape)
        _check_shape("categorical", shape, batch_shape)
    mode = "low" if mode is None else mode
    if replace:
        return _categorical_impl(kd, logits, shape, batch_shape, int(axis), mode)
    prefix = shape[:len(shape) - len(batch_shape)]
    k = math.prod(prefix)
    if k > logits.shape[ax]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                         f"categories ({logits.shape[ax]}).")
    g = jnp.add(logits, _gumbel_impl(kd, tuple(logits.shape), np.dtype(logits.dtype), mode))
    idx = _top_k_indices(jnp.moveaxis(g, ax, -1), k)
    dims = (idx.ndim - 1, *range(idx.ndim - 1))
    return lax.reshape(idx, shape, dims)


def _top_k_indices(x: Any, k: int) -> Any:
    """Indices of the ``k`` largest entries along the last axis, largest first (ties: lowest
    index first), as ``lax.top_k``."""
    top_k = getattr(lax, "top_k", None)
    if top_k is not None:
        return top_k(x, k)[1]
    jnp = _jnp()
    out = []
    n = x.shape[-1]
    iota = lax.broadcasted_iota(np.dtype(np.int32), tuple(x.shape), x.ndim - 1)
    ninf = jnp.full(x.shape, -np.inf, x.dtype)
    for _ in range(k):
        i = jnp.argmax(x, axis=-1).astype(np.int32)
        out.append(i)
        hit = jnp.equal(iota, jnp.expand_dims(i, -1))
        x = jnp.where(hit, ninf, x)
    del n
    return jnp.stack(out, axis=-1)


# ============================================================================== shape-parameter

def _param_sampler_impl(name: str, body: Any, nparams: int) -> Any:
    return _jit(static_argnums=(nparams + 1, nparams + 2))(body)


def _pareto_body(kd: Any, b: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    b = lax.convert_element_type(b, dtype)
    return lax.exp(_jnp().divide(_exponential_raw(kd, shape, dtype), b))


_pareto_impl = _param_sampler_impl("pareto", _pareto_body, 1)


def pareto(key: Any, b: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Pareto samples with shape parameter ``b`` (support ``[1, inf)``).

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.pareto(fluxion.random.key(0), 3.0, (4,)) >= 1).all())
        True
    """
    kd, _, _ = _use("pareto", key)
    dt = _float_dtype("pareto", dtype)
    shape = _broadcast_shapes_or_check("pareto", shape, b)
    _check_safe_cast("pareto", dt, b)
    return _pareto_impl(kd, b, shape, dt)


@_jit(static_argnums=(4, 5))
def _triangular_impl(kd: Any, left: Any, mode: Any, right: Any, shape: tuple[int, ...],
                     dtype: np.dtype) -> Any:
    jnp = _jnp()
    left = jnp.broadcast_to(lax.convert_element_type(left, dtype), shape)
    right = jnp.broadcast_to(lax.convert_element_type(right, dtype), shape)
    mode = jnp.broadcast_to(lax.convert_element_type(mode, dtype), shape)
    fc = lax.div(lax.sub(mode, left), lax.sub(right, left))
    u = _uniform_raw(kd, shape, dtype, 0.0, 1.0)
    rl = lax.sub(right, left)
    out1 = lax.add(left, lax.sqrt(lax.mul(lax.mul(u, rl), lax.sub(mode, left))))
    out2 = lax.sub(right, lax.sqrt(lax.mul(lax.mul(lax.sub(_const(dtype, 1), u), rl),
                                           lax.sub(right, mode))))
    return lax.select(lax.lt(u, fc), out1, out2)


def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Shape | None = None,
               dtype: Any = None) -> Any:
    """Triangular-distribution samples on ``[left, right]`` with peak at ``mode``.

    Example:
        >>> import fluxion
        >>> x = fluxion.random.triangular(fluxion.random.key(0), 0.0, 0.5, 1.0, (4,))
        >>> bool(((x >= 0) & (x <= 1)).all())
        True
    """
    kd, _, _ = _use("triangular", key)
    dt = _float_dtype("triangular", dtype)
    shape = _broadcast_shapes_or_check("triangular", shape, left, mode, right)
    _check_safe_cast("triangular", dt, left, mode, right)
    return _triangular_impl(kd, left, mode, right, shape, dt)


def _maxwell_raw(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
    x = _normal_any(kd, (*shape, 3), dtype)
    return lax.sqrt(jnp.sum(lax.mul(x, x), axis=-1))


@_jit(static_argnums=(1, 2))
def _maxwell_impl(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return _maxwell_raw(kd, shape, dtype)


def maxwell(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Maxwell (chi with 3 degrees of freedom) samples.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.maxwell(fluxion.random.key(0), (4,)) >= 0).all())
        True
    """
    kd, _, _ = _use("maxwell", key)
    return _maxwell_impl(kd, _shape_tuple("maxwell", shape), _float_dtype("maxwell", dtype))


@_jit(static_argnums=(3, 4))
def _double_sided_maxwell_impl(kd: Any, loc: Any, scale: Any, shape: tuple[int, ...],
                               dtype: np.dtype) -> Any:
    jnp = _jnp()
    pshape = tuple(np.broadcast_shapes(_shape_of(loc), _shape_of(scale)))
    if not shape:
        shape = pshape
    shape = shape + pshape
    mk, rk = _pair(kd)
    m = _maxwell_raw(mk, shape, dtype)
    s = _rademacher_raw(rk, shape, dtype)
    return jnp.add(jnp.multiply(jnp.multiply(s, m), scale), loc)


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Shape = (),
                         dtype: Any = None) -> Any:
    """Double-sided Maxwell samples: a random sign times a Maxwell sample, scaled and shifted.

    Example:
        >>> import fluxion
        >>> fluxion.random.double_sided_maxwell(fluxion.random.key(0), 0.0, 1.0, (3,)).shape
        (3,)
    """
    kd, _, _ = _use("double_sided_maxwell", key)
    dt = _float_dtype("double_sided_maxwell", dtype)
    return _double_sided_maxwell_impl(kd, loc, scale, _shape_tuple("double_sided_maxwell", shape),
                                      dt)


@_jit(static_argnums=(3, 4))
def _weibull_min_impl(kd: Any, scale: Any, concentration: Any, shape: tuple[int, ...],
                      dtype: np.dtype) -> Any:
    jnp = _jnp()
    u = _uniform_raw(kd, shape, dtype, 0, 1)
    return jnp.multiply(jnp.power(lax.neg(lax.log1p(lax.neg(u))),
                                  jnp.divide(1.0, concentration)), scale)


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Shape = (),
                dtype: Any = None) -> Any:
    """Weibull samples with ``scale`` and ``concentration``.

    Example:
        >>> import fluxion
        >>> fluxion.random.weibull_min(fluxion.random.key(0), 1.0, 2.0, (3,)).shape
        (3,)
    """
    kd, _, _ = _use("weibull_min", key)
    dt = _float_dtype("weibull_min", dtype)
    return _weibull_min_impl(kd, scale, concentration, _shape_tuple("weibull_min", shape), dt)


@_jit(static_argnums=(2, 3))
def _rayleigh_impl(kd: Any, scale: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
    u = _uniform_raw(kd, shape, dtype, 0.0, 1.0)
    scale = jnp.broadcast_to(jnp.asarray(scale).astype(dtype), shape)
    return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), _const(dtype, -2))))


def rayleigh(key: Any, scale: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Rayleigh samples with ``scale``.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.rayleigh(fluxion.random.key(0), 1.0, (3,)) >= 0).all())
        True
    """
    kd, _, _ = _use("rayleigh", key)
    dt = _float_dtype("rayleigh", dtype)
    shape = _broadcast_shapes_or_check("rayleigh", shape, scale)
    _check_safe_cast("rayleigh", dt, scale)
    return _rayleigh_impl(kd, scale, shape, dt)


@_jit(static_argnums=(2, 3))
def _wald_impl(kd: Any, mean: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
    k1, k2 = _pair(kd)
    mean = jnp.broadcast_to(jnp.asarray(mean).astype(dtype), shape)
    v = _normal_any(k1, shape, dtype)
    z = _uniform_raw(k2, shape, dtype, 0.0, 1.0)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    four, half = _const(dtype, 4), _const(dtype, 2)
    sqrt_term = lax.sqrt(lax.add(lax.mul(lax.mul(four, mean), y), lax.mul(mean_sq, y_sq)))
    x = lax.sub(lax.add(mean, lax.div(lax.mul(mean_sq, y), half)),
                lax.mul(lax.div(mean, half), sqrt_term))
    return lax.select(lax.le(z, lax.div(mean, lax.add(mean, x))), x, lax.div(mean_sq, x))


def wald(key: Any, mean: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Wald (inverse Gaussian) samples with ``mean``.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.wald(fluxion.random.key(0), 1.0, (3,)) > 0).all())
        True
    """
    kd, _, _ = _use("wald", key)
    dt = _float_dtype("wald", dtype)
    shape = _broadcast_shapes_or_check("wald", shape, mean)
    _check_safe_cast("wald", dt, mean)
    return _wald_impl(kd, mean, shape, dt)


from fluxion.random._more import (  # noqa: E402
    ball,
    beta,
    binomial,
    chisquare,
    choice,
    dirichlet,
    f,
    gamma,
    generalized_normal,
    loggamma,
    multivariate_normal,
    orthogonal,
    permutation,
    poisson,
    t,
)
