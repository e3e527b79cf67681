"""The threefry2x32 counter-based PRNG, written with lax bit operations.

Bit layouts follow JAX 0.10 exactly, so the same key gives the same bits:

- :func:`threefry2x32` is the Threefry-2x32 block function (20 rounds, key schedule every four
  rounds) applied elementwise to two uint32 words of counter under a pair of uint32 key words.
- :func:`hash_counts` is JAX's original ("non-partitionable") use of it: a flat uint32 count
  vector, padded to even length, is cut in halves that form the two words; the results are
  concatenated back.  ``fold_in`` always uses this layout.
- With ``jax_threefry_partitionable`` on (the default), ``split`` and ``random_bits`` hash the
  64-bit flat index of every output element (hi word, lo word), and ``random_bits`` xors the two
  result words (32 bits) or concatenates them (64 bits).

The block function is a composite of lax ops inside a non-inlined ``jit``: eagerly it runs as one
compiled call, inside ``jit`` it is one private function of the StableHLO module (like JAX's
out-of-line lowering), and every transformation handles it through the ``jit`` call primitive
and the lax rules, with no rules of its own.

Example:
    >>> import numpy as np
    >>> from fluxion.random import _threefry as tf
    >>> key = tf.seed_data(0)
    >>> np.asarray(tf.split_data(key, (2,))).shape
    (2, 2)
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.core.config import config
from fluxion.core.trace import EVAL as _EVAL
from fluxion.core.trace import STATE as _STATE

__all__ = ["threefry2x32", "hash_counts", "seed_data", "split_data", "fold_in_data",
           "random_bits_data"]

_U32 = np.dtype(np.uint32)
_ROT = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _jit(fun: Any, name: str, **kw: Any) -> Any:
    """``fluxion.jit(fun)`` under ``name`` (what programs and StableHLO show)."""
    # reason: the backend loads jaxlib, which importing fluxion.random must not.
    from fluxion.backend.jit import jit
    fun.__name__ = fun.__qualname__ = name
    return jit(fun, **kw)


def _full_u32(shape: tuple[int, ...], value: int) -> Any:
    return lax.broadcast_in_dim(np.uint32(value), tuple(shape), ())


def _rotl(x: Any, r: int) -> Any:
    return lax.bitwise_or(lax.shift_left(x, np.uint32(r)),
                          lax.shift_right_logical(x, np.uint32(32 - r)))


def _threefry2x32_unrolled(k1: Any, k2: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    ks = (k1, k2, lax.bitwise_xor(lax.bitwise_xor(k1, k2), _PARITY))
    a = lax.add(x1, ks[0])
    b = lax.add(x2, ks[1])
    for block in range(5):
        for r in _ROT[block % 2]:
            a = lax.add(a, b)
            b = lax.bitwise_xor(a, _rotl(b, r))
        a = lax.add(a, ks[(block + 1) % 3])
        b = lax.add(lax.add(b, ks[(block + 2) % 3]), np.uint32(block + 1))
    return a, b


def _rotl_dynamic(x: Any, r: Any) -> Any:
    return lax.bitwise_or(lax.shift_left(x, r), lax.shift_right_logical(x, lax.sub(np.uint32(32), r)))


def _threefry2x32_rolled(k1: Any, k2: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    """The same 20 rounds as a 5-iteration loop of 4 rounds (key words rotated in the carry).

    XLA cannot fuse across a loop, so the hash is computed once and its consumers read the
    result. Unrolled, the 20 rounds form one elementwise expression that XLA's CPU fusion copies
    into every consumer fusion (a bernoulli draw sliced a hundred ways compiled 10x larger).
    The rotation amounts of a block are literals chosen by the block's parity.
    """
    k3 = lax.bitwise_xor(lax.bitwise_xor(k1, k2), _PARITY)

    def block(i: Any, carry: tuple[Any, ...]) -> tuple[Any, ...]:
        a, b, ka, kb, kc = carry
        iu = lax.convert_element_type(i, _U32)
        even = lax.eq(lax.bitwise_and(iu, np.uint32(1)), np.uint32(0))
        for r_even, r_odd in zip(_ROT[0], _ROT[1]):
            r = lax.select(even, np.uint32(r_even), np.uint32(r_odd))
            a = lax.add(a, b)
            b = lax.bitwise_xor(a, _rotl_dynamic(b, r))
        a = lax.add(a, ka)
        b = lax.add(lax.add(b, kb), lax.add(iu, np.uint32(1)))
        return a, b, kb, kc, ka

    init = (lax.add(x1, k1), lax.add(x2, k2), k2, k3, k1)
    a, b, *_ = lax.fori_loop(np.int32(0), np.int32(5), block, init)
    return a, b


def _threefry2x32_body(k1: Any, k2: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    # JAX's choice too: the rolled loop on CPU, the unrolled rounds (one fused kernel) elsewhere,
    # chosen for the platform the program is lowered for (its devices, or export's platforms),
    # not the default backend: a CPU computation on a TPU machine, or a TPU export made on a CPU
    # machine, gets its own platform's form.
    return lax.platform_dependent(k1, k2, x1, x2, cpu=_threefry2x32_rolled,
                                  default=_threefry2x32_unrolled)


_threefry2x32_jit = None


def threefry2x32(k1: Any, k2: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    """The Threefry-2x32 block function, elementwise over uint32 operands (rank-0 key words
    broadcast against the count words).

    Example:
        >>> import numpy as np
        >>> a, b = threefry2x32(np.uint32(0), np.uint32(0), np.zeros(2, np.uint32),
        ...                     np.zeros(2, np.uint32))
        >>> a.dtype
        dtype('uint32')
    """
    global _threefry2x32_jit
    for v in (k1, k2, x1, x2):
        dt = getattr(v, "dtype", None)
        if dt is None or np.dtype(dt) != _U32:
            raise TypeError(f"threefry2x32 requires uint32 arguments, got "
                            f"{[str(getattr(u, 'dtype', type(u).__name__)) for u in (k1, k2, x1, x2)]}")
    if _threefry2x32_jit is None:
        _threefry2x32_jit = _jit(_threefry2x32_body, "threefry2x32")
    return _threefry2x32_jit(k1, k2, x1, x2)


def hash_counts(key: Any, counts: Any) -> Any:
    """JAX's original layout: hash a uint32 count array of any shape under ``key`` (uint32[2]).

    The flat counts (padded with one zero when their number is odd) are cut in two halves that
    form the two words of each block; the output halves are concatenated and unpadded.
    """
    shape = tuple(counts.shape)
    n = math.prod(shape)
    flat = lax.reshape(counts, (n,))
    if n % 2:
        flat = lax.concatenate([flat, _full_u32((1,), 0)], 0)
    half = flat.shape[0] // 2
    x1 = lax.slice(flat, (0,), (half,))
    x2 = lax.slice(flat, (half,), (2 * half,))
    y1, y2 = _hash_batched(key, x1, x2)
    batch = tuple(key.shape[:-1])
    nb = len(batch)
    out = lax.concatenate([y1, y2], nb)
    if n % 2:
        out = lax.slice(out, (0,) * (nb + 1), batch + (n,))
    return lax.reshape(out, batch + shape)


def _key_words(key: Any) -> tuple[Any, Any]:
    """The two uint32 words of key data ``uint32[*B, 2]``, each of shape ``B``."""
    batch = tuple(key.shape[:-1])
    nb = len(batch)
    w1 = lax.slice(key, (0,) * nb + (0,), batch + (1,))
    w2 = lax.slice(key, (0,) * nb + (1,), batch + (2,))
    return lax.reshape(w1, batch), lax.reshape(w2, batch)


def _hash_batched(key: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    """threefry2x32 of count words ``x1, x2`` (shape S) under every key of ``uint32[*B, 2]``:
    results of shape ``B + S`` (what vmap over the keys would compute)."""
    k1, k2 = _key_words(key)
    batch, cshape = tuple(key.shape[:-1]), tuple(x1.shape)
    if batch and cshape:
        k1 = lax.reshape(k1, batch + (1,) * len(cshape))
        k2 = lax.reshape(k2, batch + (1,) * len(cshape))
        x1 = lax.reshape(x1, (1,) * len(batch) + cshape)
        x2 = lax.reshape(x2, (1,) * len(batch) + cshape)
    elif batch:
        x1 = lax.broadcast_in_dim(x1, batch, ())
        x2 = lax.broadcast_in_dim(x2, batch, ())
    return threefry2x32(k1, k2, x1, x2)


def _iota_2x32(shape: tuple[int, ...]) -> tuple[Any, Any]:
    """(hi, lo) uint32 words of the flat (row-major) index of every element of ``shape``."""
    n = math.prod(shape)
    if n > 2 ** 32:
        raise NotImplementedError("fluxion.random: arrays of more than 2**32 random values are not "
                                  "supported")
    zeros = _full_u32(shape, 0)
    if not shape:
        return zeros, zeros
    lo = lax.reshape(lax.iota(_U32, n), shape) if n else zeros
    return zeros, lo


# ------------------------------------------------------------------------------ seeds

def _seed_body(seed: Any) -> Any:
    dt = np.dtype(seed.dtype)
    if dt.itemsize == 8:
        hi = lax.convert_element_type(lax.shift_right_logical(seed, dt.type(32)), _U32)
    else:
        hi = _full_u32((), 0)
    lo = lax.convert_element_type(seed, _U32)
    return lax.concatenate([lax.reshape(hi, (1,)), lax.reshape(lo, (1,))], 0)


def _host_seed_words(seed: np.ndarray) -> np.ndarray:
    """:func:`_seed_body` on the host, for a NumPy integer scalar of a canonical dtype: the same
    words (a cast to uint32 keeps the low 32 bits, two's complement, as XLA's convert does)."""
    hi = (seed.astype(np.uint64) >> np.uint64(32)) if seed.dtype.itemsize == 8 else 0
    return np.array([hi, seed.astype(np.uint32)], dtype=np.uint32)


_seed_jit = None


def seed_data(seed: Any) -> Any:
    """The uint32[2] threefry key of an integer scalar seed: its high and low 32-bit words.

    A Python int is first taken as int64 (an OverflowError outside that range) and, with x64
    off, wrapped to int32, as JAX does; 32-bit and narrower seeds have a zero high word. Outside
    any transformation a Python or NumPy seed's words are computed on the host, so a program's
    first key (``PRNGKey(0)``) compiles nothing (each XLA compile is 50-300 ms on a TPU); inside
    one, or for a Fluxion array, they are the ``threefry_seed`` program's.
    """
    global _seed_jit
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    if isinstance(seed, int):
        seed = np.int64(seed)
    if isinstance(seed, (np.ndarray, np.generic)):
        if not np.issubdtype(seed.dtype, np.integer):
            raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
        canon = dtypes.canonicalize_dtype(seed.dtype)
        seed = np.asarray(seed).astype(canon)
        if seed.shape == () and _STATE.interp is _EVAL:
            return jnp.asarray(_host_seed_words(seed))
        seed = jnp.asarray(seed)
    dt = getattr(seed, "dtype", None)
    if dt is None or not np.issubdtype(np.dtype(dt), np.integer):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    if getattr(seed, "shape", ()) != ():
        raise TypeError(f"PRNG key seed must be a scalar; got {seed!r}.")
    if _seed_jit is None:
        _seed_jit = _jit(_seed_body, "threefry_seed")
    return _seed_jit(seed)


# ------------------------------------------------------------------------------ split / fold_in

def _split_impl(key: Any, shape: tuple[int, ...], partitionable: bool) -> Any:
    batch = tuple(key.shape[:-1])
    if partitionable:
        hi, lo = _iota_2x32(shape)
        b1, b2 = _hash_batched(key, hi, lo)
        nd = len(batch) + len(shape)
        return lax.concatenate([lax.expand_dims(b1, (nd,)), lax.expand_dims(b2, (nd,))], nd)
    n = math.prod(shape)
    return lax.reshape(hash_counts(key, lax.iota(_U32, 2 * n)), (*batch, *shape, 2))


_split_jit = None


def split_data(key: Any, shape: Sequence[int]) -> Any:
    """uint32[*B, *shape, 2]: ``prod(shape)`` new keys from each key of data uint32[*B, 2]."""
    global _split_jit
    if _split_jit is None:
        _split_jit = _jit(_split_impl, "threefry_split", static_argnums=(1, 2))
    return _split_jit(key, tuple(int(d) for d in shape), bool(config.jax_threefry_partitionable))


def _fold_in_body(key: Any, data: Any) -> Any:
    # JAX hashes the threefry seed of the data, [0, data], in the original layout.
    return hash_counts(key, lax.concatenate([_full_u32((1,), 0), lax.reshape(data, (1,))], 0))


_fold_in_jit = None


def fold_in_data(key: Any, data: Any) -> Any:
    """uint32[2]: a new key from a key's data and a uint32 scalar."""
    global _fold_in_jit
    if _fold_in_jit is None:
        _fold_in_jit = _jit(_fold_in_body, "threefry_fold_in")
    return _fold_in_jit(key, data)


# ------------------------------------------------------------------------------ random bits

_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32, 64: np.dtype(np.uint64)}


def _bits_partitionable(key: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    hi, lo = _iota_2x32(shape)
    b1, b2 = _hash_batched(key, hi, lo)
    dt = _UINT[bit_width]
    if bit_width == 64:
        h = lax.convert_element_type(b1, dt)
        lw = lax.convert_element_type(b2, dt)
        return lax.bitwise_or(lax.shift_left(h, np.uint64(32)), lw)
    x = lax.bitwise_xor(b1, b2)
    return x if bit_width == 32 else lax.convert_element_type(x, dt)


def _bits_original(key: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    batch = tuple(key.shape[:-1])
    nb = len(batch)
    size = math.prod(shape)
    max_count, r = divmod(bit_width * size, 32)
    max_count += 1 if r else 0
    if max_count >= 2 ** 32 - 1:
        raise NotImplementedError("fluxion.random: too many random bits for the original "
                                  "threefry layout")
    bits = hash_counts(key, lax.iota(_U32, max_count))
    dt = _UINT[bit_width]
    z = (0,) * nb
    if bit_width == 64:
        half = max_count // 2
        h = lax.convert_element_type(lax.slice(bits, z + (0,), batch + (half,)), dt)
        lw = lax.convert_element_type(lax.slice(bits, z + (half,), batch + (2 * half,)), dt)
        bits = lax.bitwise_or(lax.shift_left(h, np.uint64(32)), lw)
    elif bit_width in (8, 16):
        per = 32 // bit_width
        wshape = batch + (max_count, per)
        shifts = lax.mul(lax.broadcasted_iota(_U32, wshape, nb + 1), np.uint32(bit_width))
        wide = lax.broadcast_in_dim(bits, wshape, tuple(range(nb + 1)))
        parts = lax.bitwise_and(lax.shift_right_logical(wide, shifts),
                                np.uint32(np.iinfo(dt).max))
        parts = lax.reshape(parts, batch + (max_count * per,))
        bits = lax.slice(lax.convert_element_type(parts, dt), z + (0,), batch + (size,))
    return lax.reshape(bits, batch + shape)


def _bits_impl(key: Any, bit_width: int, shape: tuple[int, ...], partitionable: bool) -> Any:
    if partitionable:
        return _bits_partitionable(key, bit_width, shape)
    return _bits_original(key, bit_width, shape)


_bits_jit = None


def random_bits_data(key: Any, bit_width: int, shape: Sequence[int]) -> Any:
    """uint{bit_width}[*B, *shape] random bits from each key of data uint32[*B, 2] (B = () for
    one key)."""
    global _bits_jit
    if bit_width not in _UINT:
        raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
    if _bits_jit is None:
        _bits_jit = _jit(_bits_impl, "threefry_random_bits", static_argnums=(1, 2, 3), inline=True)
    return _bits_jit(key, int(bit_width), tuple(int(d) for d in shape),
                     bool(config.jax_threefry_partitionable))
