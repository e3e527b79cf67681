"""Making and deriving keys: ``key`` / ``PRNGKey`` from a seed, ``split`` and ``fold_in``, the
conversions between typed keys and their data, and the raw ``threefry_2x32`` hash.

Example:
    >>> import fluxion
    >>> k1, k2 = fluxion.random.split(fluxion.random.key(0))
    >>> k1.shape
    ()
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.random import _impls
from fluxion.random import _threefry as _tf
from fluxion.random._keys import KeyDtype, PRNGImpl, PRNGKeyArray, PRNGSpec, prngs, resolve_impl
from fluxion.random._util import check_key, shape_tuple, use_key

__all__ = ["key", "PRNGKey", "key_data", "wrap_key_data", "key_impl", "key_dtype", "clone",
           "split", "fold_in", "threefry_2x32"]


def _return_keys(wrapped: bool, data: Any, impl: PRNGImpl) -> Any:
    return data if wrapped else PRNGKeyArray(impl, data)


def key(seed: int | Any, *, impl: Any = None, dtype: Any = None) -> PRNGKeyArray:
    """A typed PRNG key (shape ``()``) from an integer seed, of the implementation ``impl``
    (or ``dtype``): a name (``'threefry2x32'``, ``'rbg'``, ``'unsafe_rbg'``), a key dtype or a
    ``define_prng_impl`` result; by default the one ``jax_default_prng_impl`` names (threefry2x32,
    dtype ``key<fry>``).

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
    impl_obj = resolve_impl(impl)
    return PRNGKeyArray(impl_obj, _seed("key", seed, impl_obj))


def _seed(name: str, seed: Any, impl: PRNGImpl) -> Any:
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{name} accepts a scalar seed, but was given a PRNG key.")
    if np.ndim(seed) if not hasattr(seed, "shape") else len(seed.shape):
        raise TypeError(f"{name} accepts a scalar seed, but was given an array of shape "
                        f"{np.shape(seed)} != (). Use fluxion.vmap for batching")
    return _impls.seed(impl, seed)


def PRNGKey(seed: int | Any, *, impl: Any = None) -> Any:
    """A legacy PRNG key: raw key data from an integer seed (``uint32[2]`` for threefry2x32, the
    default; ``uint32[4]`` for ``'rbg'``). The data carries no implementation: samplers take raw
    data for a key of the default implementation (``jax_default_prng_impl``).

    Example:
        >>> import fluxion
        >>> fluxion.random.PRNGKey(42).tolist()
        [0, 42]
    """
    return _seed("PRNGKey", seed, resolve_impl(impl))


def key_data(keys: Any) -> Any:
    """The ``uint32[..., *key_shape]`` data of a key array (raw key data is returned as is).

    Example:
        >>> import fluxion
        >>> fluxion.random.key_data(fluxion.random.key(7)).tolist()
        [0, 7]
    """
    data, _, _ = check_key("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> PRNGKeyArray:
    """A typed key array over ``uint32[..., *key_shape]`` key data (``impl``/``dtype`` as for
    :func:`key`; by default ``jax_default_prng_impl``).

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
    data = key_bits_array if hasattr(key_bits_array, "aval") else jnp.asarray(key_bits_array)
    if np.dtype(data.dtype) != np.uint32:
        raise TypeError(f"wrap_key_data: key data must have dtype uint32, got {data.dtype}")
    ks = impl_obj.key_shape
    if len(data.shape) < len(ks) or tuple(data.shape[len(data.shape) - len(ks):]) != ks:
        raise TypeError(f"wrap_key_data: key data must have trailing shape "
                        f"{impl_obj.key_shape} for {impl_obj.name}, got shape {tuple(data.shape)}")
    return PRNGKeyArray(impl_obj, data)


def key_impl(keys: Any) -> str | PRNGSpec:
    """A key array's PRNG implementation: its name if registered (``'threefry2x32'``,
    ``'rbg'``, ...), else a :class:`PRNGSpec` (``define_prng_impl``'s implementations), as JAX's.

    Example:
        >>> import fluxion
        >>> fluxion.random.key_impl(fluxion.random.key(0))
        'threefry2x32'
    """
    _, _, impl = check_key("key_impl", keys, allow_batched=True)
    return impl.name if prngs.get(impl.name) is impl else PRNGSpec(impl)


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
    data, _, _ = check_key("clone", key, allow_batched=True)
    return data + np.uint32(0) if not hasattr(data, "aval") else data


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """``num`` new keys (or an array of keys of shape ``num``) from one key.

    Example:
        >>> import fluxion
        >>> fluxion.random.split(fluxion.random.key(0), 3).shape
        (3,)
    """
    data, wrapped, impl = use_key("split", key)
    data = data._base_array
    shape = shape_tuple("split", num) if isinstance(num, Sequence) else (int(num),)
    return _return_keys(wrapped, _impls.split(impl, data, shape), impl)


def fold_in(key: Any, data: Any) -> Any:
    """A new key from a key and an integer (taken as uint32).

    Example:
        >>> import fluxion
        >>> k = fluxion.random.fold_in(fluxion.random.key(0), 7)
        >>> k.shape
        ()
    """
    kd, wrapped, impl = use_key("fold_in", key)
    kd = kd._base_array
    if np.ndim(data) if not hasattr(data, "shape") else len(data.shape):
        raise TypeError("fold_in accepts a scalar, but was given an array of shape "
                        f"{np.shape(data)} != (). Use fluxion.vmap for batching.")
    if isinstance(data, (int, np.integer)) and not hasattr(data, "aval"):
        msg = jnp.asarray(np.asarray(int(data) % (1 << 32) if isinstance(data, int)
                                        else data).astype(np.uint32))
    else:
        msg = lax.convert_element_type(data, np.uint32)
    return _return_keys(wrapped, _impls.fold_in(impl, kd, msg), impl)


def threefry_2x32(keypair: Any, count: Any) -> Any:
    """The Threefry-2x32 hash of a uint32 ``count`` array under raw key data ``keypair``
    (JAX's original layout: the flat counts split in halves).

    Example:
        >>> import numpy as np, fluxion
        >>> fluxion.random.threefry_2x32(fluxion.random.PRNGKey(0),
        ...                              np.arange(4, dtype=np.uint32)).shape
        (4,)
    """
    data = keypair if hasattr(keypair, "aval") else jnp.asarray(keypair)
    cnt = count if hasattr(count, "aval") else jnp.asarray(count)
    if np.dtype(data.dtype) != np.uint32 or np.dtype(cnt.dtype) != np.uint32:
        raise TypeError(f"threefry_2x32 requires uint32 arguments, got "
                        f"{[str(data.dtype), str(cnt.dtype)]}")
    return _tf.hash_counts(data, cnt)
