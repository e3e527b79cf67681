"""Rounding to a number of decimals: ``round`` (NumPy's ``around``).

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.round(jnp.array([1.25, 2.5]), 1).tolist()
    [1.2000000476837158, 2.5]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion import lax
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import ensure_array

__all__ = ["round", "around"]


@one_program_static(static_argnames=("decimals", "out"))
def round(a: Any, decimals: int = 0, out: None = None) -> Any:
    """Round to ``decimals`` decimal places, ties to even (as NumPy).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.round(jnp.array([0.5, 1.25]), 1).tolist()
        [0.5, 1.2000000476837158]
    """
    x = ensure_array(a)
    if x.dtype.kind in "biu":
        if decimals < 0:
            raise NotImplementedError("round: integer arrays with decimals < 0 are not supported")
        return x
    if decimals == 0:
        return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    if x.dtype == np.float16:  # like JAX: scale in float32, so 10**decimals loses nothing
        wide = lax.convert_element_type(x, np.float32, weak_type=x.weak_type)
        return lax.convert_element_type(round(wide, decimals), np.float16, weak_type=x.weak_type)
    factor = lax.convert_element_type(10.0 ** decimals, x.dtype, weak_type=x.weak_type)
    return lax.div(lax.round(lax.mul(x, factor), lax.RoundingMethod.TO_NEAREST_EVEN), factor)


around = round
