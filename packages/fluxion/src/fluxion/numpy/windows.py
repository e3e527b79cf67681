"""Window functions for signal processing: ``bartlett``, ``blackman``, ``hamming``,
``hanning`` and ``kaiser``.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.hanning(3).tolist()
    [0.0, 1.0, 0.0]
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._util import concrete_scalar

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _window(name: str, M: int) -> tuple[Any, int] | Any:
    m = operator.index(concrete_scalar(M, name, "M"))
    dt = dtypes.default_float_dtype()
    if m <= 1:
        return lax.broadcast_in_dim(lax.convert_element_type(1, dt), (max(m, 0),), ()), None
    return lax.iota(dt, m), m


def bartlett(M: int) -> Any:
    """The Bartlett (triangular) window of ``M`` points.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.bartlett(3).tolist()
        [0.0, 1.0, 0.0]
    """
    n, m = _window("bartlett", M)
    if m is None:
        return n
    return uf.subtract(1, uf.divide(uf.abs(uf.subtract(uf.add(uf.multiply(2, n), 1), m)), m - 1))


def blackman(M: int) -> Any:
    """The Blackman window of ``M`` points.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.blackman(3).shape
        (3,)
    """
    n, m = _window("blackman", M)
    if m is None:
        return n
    a = uf.cos(uf.divide(uf.multiply(2 * np.pi, n), m - 1))
    b = uf.cos(uf.divide(uf.multiply(4 * np.pi, n), m - 1))
    return uf.add(uf.subtract(0.42, uf.multiply(0.5, a)), uf.multiply(0.08, b))


def hamming(M: int) -> Any:
    """The Hamming window of ``M`` points.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.hamming(3).shape
        (3,)
    """
    n, m = _window("hamming", M)
    if m is None:
        return n
    return uf.subtract(0.54, uf.multiply(0.46, uf.cos(uf.divide(uf.multiply(2 * np.pi, n), m - 1))))


def hanning(M: int) -> Any:
    """The Hann window of ``M`` points.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.hanning(3).tolist()
        [0.0, 1.0, 0.0]
    """
    n, m = _window("hanning", M)
    if m is None:
        return n
    return uf.multiply(0.5, uf.subtract(1, uf.cos(uf.divide(uf.multiply(2 * np.pi, n), m - 1))))


def kaiser(M: int, beta: Any) -> Any:
    """The Kaiser window of ``M`` points with shape parameter ``beta``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.kaiser(3, 0.0).tolist()
        [1.0, 1.0, 1.0]
    """
    n, m = _window("kaiser", M)
    if m is None:
        return n
    alpha = 0.5 * (m - 1)
    r = uf.divide(uf.subtract(n, alpha), alpha)
    return uf.divide(uf.i0(uf.multiply(beta, uf.sqrt(uf.subtract(1, uf.multiply(r, r))))), uf.i0(beta))
