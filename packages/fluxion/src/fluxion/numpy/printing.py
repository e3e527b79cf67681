"""Printing Fluxion arrays: NumPy's print options and ``array_repr``/``array_str``.

Fluxion arrays print through NumPy (their ``repr`` converts to a host array and formats it with
NumPy's ``array2string``), so NumPy's print options apply to them, as to JAX's arrays. As in JAX,
``array_repr`` and ``array_str`` are NumPy's own functions, and the print-option helpers forward
to NumPy's.

Example:
    >>> import fluxion.numpy as jnp
    >>> with jnp.printoptions(precision=2):
    ...     print(jnp.array([1 / 3, 2 / 3]))
    [0.33 0.67]
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
from numpy import array_repr, array_str  # JAX exports NumPy's functions under these names


def get_printoptions() -> dict[str, Any]:
    """NumPy's current print options, which also govern how Fluxion arrays print.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.get_printoptions()["precision"]
        8
    """
    return np.get_printoptions()


def set_printoptions(*args: Any, **kwargs: Any) -> None:
    """Set NumPy's print options (``precision``, ``threshold``, ``linewidth``, ...) for every
    array, Fluxion's included; the arguments are those of :func:`numpy.set_printoptions`.

    Example:
        >>> import fluxion.numpy as jnp
        >>> old = jnp.get_printoptions()
        >>> jnp.set_printoptions(precision=3)
        >>> print(jnp.array([2 / 3]))
        [0.667]
        >>> jnp.set_printoptions(**old)
    """
    return np.set_printoptions(*args, **kwargs)


def printoptions(*args: Any, **kwargs: Any) -> contextlib.AbstractContextManager[dict[str, Any]]:
    """A context manager that sets NumPy's print options inside a ``with`` block and restores
    them after; the arguments are those of :func:`numpy.printoptions`.

    Example:
        >>> import fluxion.numpy as jnp
        >>> with jnp.printoptions(precision=1, suppress=True):
        ...     print(jnp.array([0.25, 1e-9]))
        [0.2 0. ]
    """
    return np.printoptions(*args, **kwargs)


__all__ = ["array_repr", "array_str", "get_printoptions", "printoptions", "set_printoptions"]
