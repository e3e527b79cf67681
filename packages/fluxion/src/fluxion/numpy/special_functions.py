"""Elementwise special functions of ``fluxion.numpy``: ``sinc``, ``i0`` and the angle conversions
``deg2rad``/``rad2deg`` (``radians``/``degrees``). Each runs as one program when called eagerly, as
the other elementwise functions of :mod:`fluxion.numpy.ufuncs` (which re-exports them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy._eager import one_program
from fluxion.numpy._util import const_like, promote_args_inexact

__all__ = ["sinc", "i0", "deg2rad", "rad2deg", "radians", "degrees"]


@one_program
def sinc(x: Any, /) -> Any:
    """Elementwise normalised sinc, ``sin(pi x) / (pi x)`` with ``sinc(0) = 1``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.sinc(0.0))
        1.0
    """
    (x,) = promote_args_inexact("sinc", x)
    zero = lax.eq(x, const_like(x, 0))
    safe = lax.select(zero, lax.add(x, const_like(x, 1)), x)
    pix = lax.mul(safe, const_like(x, np.pi))
    return lax.select(zero, lax.add(lax.mul(x, const_like(x, 0)), const_like(x, 1)),
                      lax.div(lax.sin(pix), pix))


@one_program
def i0(x: Any) -> Any:
    """Modified Bessel function of the first kind, order 0.

    Example:
        >>> import fluxion.numpy as jnp
        >>> round(float(jnp.i0(0.0)), 5)
        1.0
    """
    (x,) = promote_args_inexact("i0", x)
    if not dtypes.issubdtype(x.dtype, np.floating):
        raise ValueError(f"Unsupported input type to fluxion.numpy.i0: {x.dtype}")
    ax = lax.abs(x)
    return lax.mul(lax.exp(ax), lax.bessel_i0e(ax))


@one_program
def deg2rad(x: Any, /) -> Any:
    """Degrees to radians.

    Example:
        >>> import fluxion.numpy as jnp
        >>> round(float(jnp.deg2rad(180.0)), 5)
        3.14159
    """
    (x,) = promote_args_inexact("deg2rad", x)
    return lax.mul(x, const_like(x, np.pi / 180))


@one_program
def rad2deg(x: Any, /) -> Any:
    """Radians to degrees.

    Example:
        >>> import fluxion.numpy as jnp
        >>> round(float(jnp.rad2deg(jnp.pi)), 3)
        180.0
    """
    (x,) = promote_args_inexact("rad2deg", x)
    return lax.mul(x, const_like(x, 180 / np.pi))


radians = deg2rad
degrees = rad2deg
