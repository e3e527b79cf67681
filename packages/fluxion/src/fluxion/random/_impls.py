"""The PRNG implementations and the per-implementation table every key operation goes through.

Registered here, as in JAX 0.10: ``threefry2x32`` (the default; ``_threefry``), ``rbg`` (XLA's
RngBitGenerator for the bits, threefry on each half of the ``uint32[4]`` key to split and fold
in) and ``unsafe_rbg`` (RngBitGenerator for everything). ``fluxion.extend.random.define_prng_impl``
makes more. A key's dtype carries its implementation (``key<fry>``, ``key<rbg>``, ``key<urbg>``);
raw ``uint32`` key data means the implementation ``jax_default_prng_impl`` names.

An implementation's functions take ONE key's data. :func:`seed`, :func:`split`,
:func:`fold_in` and :func:`random_bits` below apply them to key data with any leading batch
dimensions, by ``vmap`` of the function over those dimensions, as JAX's key primitives do
(so an ``rbg`` key batch draws its bits as JAX's ``vmap`` of ``rng_bit_generator`` does);
threefry's functions are batched already and are called directly.

Example:
    >>> from fluxion.random import _impls
    >>> _impls.seed(_impls.RBG, 0).shape
    (4,)
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.random import _threefry as _tf
from fluxion.random._keys import PRNGImpl, register_prng
from fluxion.transforms.batching import vmap

__all__ = ["THREEFRY", "RBG", "UNSAFE_RBG", "seed", "split", "fold_in", "random_bits"]

_U32 = np.dtype(np.uint32)
_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32, 64: np.dtype(np.uint64)}


# ------------------------------------------------------------------------------ threefry2x32

def _threefry_split(key: Any, shape: Sequence[int]) -> Any:
    return _tf.split_data(key, tuple(shape))


def _threefry_bits(key: Any, bit_width: int, shape: Sequence[int]) -> Any:
    return _tf.random_bits_data(key, bit_width, tuple(shape))


THREEFRY = PRNGImpl((2,), _tf.seed_data, _threefry_split, _threefry_bits, _tf.fold_in_data,
                    name="threefry2x32", tag="fry")


# ------------------------------------------------------------------------------ rbg / unsafe_rbg

def _rbg_seed(seed_value: Any) -> Any:
    half = _tf.seed_data(seed_value)
    return lax.concatenate([half, half], 0)


def _rbg_split(key: Any, shape: Sequence[int]) -> Any:
    # Each uint32[2] half of the key is split with threefry (as JAX's vmap over the halves).
    shape = tuple(shape)
    halves = _tf.split_data(lax.reshape(key, (2, 2)), shape)  # (2, *shape, 2)
    halves = jnp.moveaxis(halves, 0, len(shape))              # (*shape, 2, 2)
    return lax.reshape(halves, (*shape, 4))


def _rbg_fold_in(key: Any, data: Any) -> Any:
    return lax.reshape(_tf.fold_in_data(lax.reshape(key, (2, 2)), data), (4,))


def _rbg_bits(key: Any, bit_width: int, shape: Sequence[int]) -> Any:
    if bit_width not in _UINT:
        raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
    _, bits = lax.rng_bit_generator(key, tuple(shape), dtype=_UINT[bit_width])
    return bits


def _unsafe_rbg_split(key: Any, shape: Sequence[int]) -> Any:
    # Ten rounds of the generator per new key stand in for a hash, as in JAX.
    shape = tuple(shape)
    num = math.prod(shape)
    _, keys = lax.rng_bit_generator(key, (10 * num, 4), dtype=_U32)
    return lax.reshape(lax.slice(keys, (0, 0), (10 * num, 4), (10, 1)), (*shape, 4))


def _unsafe_rbg_fold_in(key: Any, data: Any) -> Any:
    _, bits = lax.rng_bit_generator(_rbg_seed(data), (10, 4), dtype=_U32)
    return lax.bitwise_xor(key, lax.reshape(lax.slice(bits, (9, 0), (10, 4)), (4,)))


RBG = PRNGImpl((4,), _rbg_seed, _rbg_split, _rbg_bits, _rbg_fold_in, name="rbg", tag="rbg")
UNSAFE_RBG = PRNGImpl((4,), _rbg_seed, _unsafe_rbg_split, _rbg_bits, _unsafe_rbg_fold_in,
                      name="unsafe_rbg", tag="urbg")

for _impl in (THREEFRY, RBG, UNSAFE_RBG):
    register_prng(_impl)


# ------------------------------------------------------------------------------ batched use

def _over_batch(fun: Callable[..., Any], nbatch: int) -> Callable[..., Any]:
    """``fun`` of one key mapped over ``nbatch`` leading key dimensions."""
    for _ in range(nbatch):
        fun = vmap(fun)
    return fun


def _checked(impl: PRNGImpl, what: str, out: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """``out`` of the implementation's function, checked for the shape/dtype JAX expects."""
    dt = getattr(out, "dtype", None)
    got = (tuple(getattr(out, "shape", ())), np.dtype(np.float64 if dt is None else dt))
    if got != (tuple(shape), np.dtype(dtype)):
        raise TypeError(f"PRNG implementation {impl.name!r}: its {what} function returned "
                        f"{got[1]}{list(got[0])}, expected {np.dtype(dtype)}{list(shape)}")
    return out


def seed(impl: PRNGImpl, seed_value: Any) -> Any:
    """One key's data (``uint32[*impl.key_shape]``) from an integer scalar seed."""
    if impl is THREEFRY or impl is RBG or impl is UNSAFE_RBG:
        return impl.seed(seed_value)
    if isinstance(seed_value, (bool, np.bool_)):
        raise TypeError(f"PRNG key seed must be an integer; got {seed_value!r}")
    if isinstance(seed_value, int):
        seed_value = np.int64(seed_value)
    if isinstance(seed_value, (np.ndarray, np.generic)):
        seed_value = jnp.asarray(np.asarray(seed_value).astype(
            dtypes.canonicalize_dtype(seed_value.dtype)))
    return _checked(impl, "seed", jnp.asarray(impl.seed(seed_value)), impl.key_shape, _U32)


def split(impl: PRNGImpl, data: Any, shape: tuple[int, ...]) -> Any:
    """``uint32[*B, *shape, *key_shape]``: new keys from each key of ``data``."""
    if impl is THREEFRY:
        return _tf.split_data(data, shape)
    nb = len(data.shape) - len(impl.key_shape)
    out = _over_batch(lambda k: jnp.asarray(impl.split(k, shape)), nb)(data)
    return _checked(impl, "split", out, (*data.shape[:nb], *shape, *impl.key_shape), _U32)


def fold_in(impl: PRNGImpl, data: Any, msg: Any) -> Any:
    """A key's data with the uint32 scalar ``msg`` folded in (``data`` of any batch shape)."""
    if impl is THREEFRY and len(data.shape) == 1:
        return _tf.fold_in_data(data, msg)
    nb = len(data.shape) - len(impl.key_shape)
    out = _over_batch(lambda k: jnp.asarray(impl.fold_in(k, msg)), nb)(data)
    return _checked(impl, "fold_in", out, tuple(data.shape), _U32)


def random_bits(impl: PRNGImpl, data: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    """``uint<bit_width>[*B, *shape]`` random bits from each key of ``data``."""
    if impl is THREEFRY:
        return _tf.random_bits_data(data, bit_width, shape)
    if bit_width not in _UINT:
        raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
    nb = len(data.shape) - len(impl.key_shape)
    out = _over_batch(lambda k: jnp.asarray(impl.random_bits(k, bit_width, shape)), nb)(data)
    return _checked(impl, "random_bits", out, (*data.shape[:nb], *shape), _UINT[bit_width])
