"""Integer and bit functions: ``gcd`` / ``lcm``, ``bitwise_count`` (population count), and
``packbits`` / ``unpackbits``.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.gcd(jnp.array([12, 7]), jnp.array([18, 0])).tolist()
    [6, 7]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import check_arraylike, const_like, ensure_array, promote_args, promote_dtypes
from fluxion.numpy.reductions import sum as _sum
from fluxion.numpy.shape import broadcast_arrays, ravel, reshape, swapaxes, where

__all__ = ["gcd", "lcm", "bitwise_count", "packbits", "unpackbits"]


def _gcd_steps(dt: np.dtype) -> int:
    bits = 1 if dt == np.bool_ else np.iinfo(dt).bits
    # Euclid's algorithm needs at most ~log_phi(2**bits) steps (Lamé's theorem).
    return int(bits * 1.4405) + 3


@one_program_static()
def gcd(x1: Any, x2: Any) -> Any:
    """Elementwise greatest common divisor of integers (non-negative).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.gcd(jnp.array([12, 7]), jnp.array([18, 0])).tolist()
        [6, 7]
    """
    check_arraylike("gcd", x1, x2)
    x1, x2 = promote_dtypes(ensure_array(x1), ensure_array(x2))
    if not dtypes.issubdtype(x1.dtype, np.integer):
        raise ValueError("Arguments to fluxion.numpy.gcd must be integers.")
    a, b = broadcast_arrays(uf.abs(x1), uf.abs(x2))
    # Unrolled Euclid (no while_loop needed): a fixed bound on the number of steps.
    zero = const_like(b, 0)
    for _ in range(_gcd_steps(a.dtype)):
        nz = lax.ne(b, zero)
        safe_b = lax.select(nz, b, lax.add(lax.broadcast_in_dim(const_like(b, 1), b.shape, ()), zero))
        a, b = lax.select(nz, b, a), lax.select(nz, lax.rem(a, safe_b), b)
    return a


@one_program_static()
def lcm(x1: Any, x2: Any) -> Any:
    """Elementwise least common multiple of integers.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.lcm(jnp.array([4, 0]), jnp.array([6, 3])).tolist()
        [12, 0]
    """
    check_arraylike("lcm", x1, x2)
    x1, x2 = promote_dtypes(ensure_array(x1), ensure_array(x2))
    x1, x2 = uf.abs(x1), uf.abs(x2)
    if not dtypes.issubdtype(x1.dtype, np.integer):
        raise ValueError("Arguments to fluxion.numpy.lcm must be integers.")
    d = gcd(x1, x2)
    safe = where(lax.eq(d, const_like(d, 0)), const_like(d, 1), d)
    return where(lax.eq(d, const_like(d, 0)), const_like(d, 0), uf.multiply(x1, uf.floor_divide(x2, safe)))


def bitwise_count(x: Any, /) -> Any:
    """Number of 1 bits in ``|x|`` (uint8).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.bitwise_count(jnp.array([7, -1])).tolist()
        [3, 1]
    """
    (x,) = promote_args("bitwise_count", x)
    if x.dtype == np.bool_:
        x = lax.convert_element_type(x, np.uint8)
    return lax.convert_element_type(lax.population_count(uf.abs(x)), np.uint8)


@one_program_static(static_argnames=("axis", "bitorder"))
def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
    """Pack the truth values of ``a`` into uint8 bytes along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.packbits(jnp.array([1, 0, 1])).tolist()
        [160]
    """
    check_arraylike("packbits", a)
    arr = ensure_array(a)
    if not (dtypes.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
        raise TypeError("Expected an input array of integer or boolean data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    arr = lax.convert_element_type(lax.ne(arr, const_like(arr, 0)), np.uint8)
    if axis is None:
        arr, axis = ravel(arr), 0
    arr = swapaxes(arr, axis, -1)
    rem = arr.shape[-1] % 8
    if rem:
        pad = lax.broadcast_in_dim(lax.convert_element_type(0, np.uint8),
                                   arr.shape[:-1] + (8 - rem,), ())
        arr = lax.concatenate([arr, pad], arr.ndim - 1)
    arr = reshape(arr, arr.shape[:-1] + (arr.shape[-1] // 8, 8))
    shifts = np.arange(8, dtype=np.uint8)
    if bitorder == "big":
        shifts = shifts[::-1]
    sh = lax.broadcast_in_dim(ensure_array(shifts.copy()), arr.shape, (arr.ndim - 1,))
    packed = lax.convert_element_type(_sum(lax.shift_left(arr, sh), axis=-1), np.uint8)
    return swapaxes(packed, axis, -1)


@one_program_static(static_argnames=("axis", "count", "bitorder"))
def unpackbits(a: Any, axis: int | None = None, count: int | None = None,
               bitorder: str = "big") -> Any:
    """Unpack uint8 bytes into bits (0/1 uint8) along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.unpackbits(jnp.array([160], jnp.uint8)).tolist()
        [1, 0, 1, 0, 0, 0, 0, 0]
    """
    check_arraylike("unpackbits", a)
    arr = ensure_array(a)
    if arr.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    bits = (np.uint8(1) << np.arange(8, dtype=np.uint8)).astype(np.uint8)
    if bitorder == "big":
        bits = bits[::-1].copy()
    if axis is None:
        arr, axis = ravel(arr), 0
    arr = swapaxes(arr, axis, -1)
    shp = arr.shape + (8,)
    x = lax.broadcast_in_dim(arr, shp, tuple(range(arr.ndim)))
    b = lax.broadcast_in_dim(ensure_array(bits), shp, (arr.ndim,))
    un = lax.convert_element_type(lax.gt(lax.bitwise_and(x, b), lax.convert_element_type(
        0, np.uint8)), np.uint8)
    un = reshape(un, un.shape[:-2] + (-1,))
    if count is not None:
        n = un.shape[-1]
        if count > n:
            pad = lax.broadcast_in_dim(lax.convert_element_type(0, np.uint8),
                                       un.shape[:-1] + (count - n,), ())
            un = lax.concatenate([un, pad], un.ndim - 1)
        else:
            un = lax.slice_in_dim(un, 0, count, axis=un.ndim - 1)
    return swapaxes(un, axis, -1)
