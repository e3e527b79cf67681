"""Rounding to a number of decimals: ``round`` (NumPy's ``around``).

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.round(jnp.array([1.25, 2.5]), 1).tolist()
    [1.2000000476837158, 2.5]
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import check_arraylike, check_numeric, ensure_array

__all__ = ["round", "around"]


@one_program_static(static_argnames=("decimals", "out"))
def round(a: Any, decimals: int = 0, out: None = None) -> Any:
    """Round to ``decimals`` decimal places, ties to even (as NumPy); complex parts separately.

    As JAX's: integers are returned unchanged (``decimals < 0`` is NotImplementedError there),
    booleans are refused, and ``decimals`` beyond the dtype's range (``10**decimals`` past its
    largest value) leaves floats unchanged.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.round(jnp.array([0.5, 1.25]), 1).tolist()
        [0.5, 1.2000000476837158]
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.round is not supported: arrays are "
                                  "immutable.")
    check_arraylike("round", a)
    try:  # as JAX, where decimals is a static argument of the jitted function
        hash(decimals)
    except TypeError:
        raise ValueError(f"jnp.round: decimals must be a static (hashable) integer, got "
                         f"{type(decimals).__name__} {np.shape(decimals)}; pass a Python int "
                         f"(under jit, mark it static)") from None
    decimals = operator.index(decimals)
    x = ensure_array(a)
    check_numeric("round", x)
    if x.dtype == np.bool_:
        raise ValueError(f"jnp.round: bool arrays (shape {x.shape}) cannot be rounded; the dtype "
                         "must be inexact or integer")
    if x.dtype.kind in "iu":
        if decimals < 0:
            raise NotImplementedError(f"jnp.round: integer arrays ({x.dtype}) with decimals < 0 "
                                      "are not supported (as JAX)")
        return x
    if decimals > np.log10(float(dtypes.finfo(x.dtype).max)):
        return x  # finer than the dtype resolves: nothing to round
    if x.dtype.kind == "c":
        return lax.complex(_round_real(lax.real(x), decimals), _round_real(lax.imag(x), decimals))
    return _round_real(x, decimals)


def _round_real(x: Any, decimals: int) -> Any:
    if decimals == 0:
        return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    if x.dtype == np.float16:  # like JAX: scale in float32, so 10**decimals loses nothing
        wide = lax.convert_element_type(x, np.float32, weak_type=x.weak_type)
        return lax.convert_element_type(_round_real(wide, decimals), np.float16,
                                        weak_type=x.weak_type)
    factor = lax.convert_element_type(10.0 ** decimals, x.dtype, weak_type=x.weak_type)
    return lax.div(lax.round(lax.mul(x, factor), lax.RoundingMethod.TO_NEAREST_EVEN), factor)


around = round
