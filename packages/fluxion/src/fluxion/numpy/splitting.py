"""Splitting arrays into pieces: ``split`` (equal sections or at indices), ``array_split``
(sections of unequal size allowed) and the axis-fixed ``hsplit``/``vsplit``/``dsplit``. Each
accepts key arrays, as JAX's (the slicing primitives move the keys' data).

Example:
    >>> import fluxion.numpy as jnp
    >>> [p.tolist() for p in jnp.split(jnp.arange(4), 2)]
    [[0, 1], [2, 3]]
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fluxion import lax
from fluxion.numpy._util import canonical_axis, check_arraylike, concrete_scalar, ensure_array

__all__ = ["split", "array_split", "hsplit", "vsplit", "dsplit"]


def _split(op: str, ary: Any, ios: Any, axis: int) -> list:
    check_arraylike(op, ary, extended=True)
    a = ensure_array(ary)
    ax = canonical_axis(axis, a.ndim, op)
    size = a.shape[ax]
    if isinstance(ios, (tuple, list)) or (hasattr(ios, "ndim") and ios.ndim > 0):
        # operator.index: a float index is a TypeError (as jax's and NumPy's), not truncated
        pts = [0] + [operator.index(concrete_scalar(i, op, "indices")) for i in ios] + [size]
        bounds = []
        for lo, hi in zip(pts[:-1], pts[1:]):
            lo = min(max(lo if lo >= 0 else lo + size, 0), size)
            hi = min(max(hi if hi >= 0 else hi + size, 0), size)
            bounds.append((lo, max(lo, hi)))
    else:
        n = int(concrete_scalar(ios, op, "number of sections"))
        if n <= 0:
            raise ValueError("number sections must be larger than 0.")
        part, r = divmod(size, n)
        if r == 0:
            sizes = [part] * n
        elif op == "array_split":
            sizes = [part + 1] * r + [part] * (n - r)
        else:
            raise ValueError(f"array split does not result in an equal division: rest is {r}")
        starts = np.cumsum([0] + sizes[:-1])
        bounds = [(int(s), int(s) + z) for s, z in zip(starts, sizes)]
    return [lax.slice_in_dim(a, lo, hi, axis=ax) for lo, hi in bounds]


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """Split ``ary`` into equal sections, or at the given indices, along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [p.tolist() for p in jnp.split(jnp.arange(4), 2)]
        [[0, 1], [2, 3]]
    """
    return _split("split", ary, indices_or_sections, axis)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """Like :func:`split`, allowing sections of unequal size.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [p.tolist() for p in jnp.array_split(jnp.arange(3), 2)]
        [[0, 1], [2]]
    """
    return _split("array_split", ary, indices_or_sections, axis)


def hsplit(ary: Any, indices_or_sections: Any) -> list:
    """Split along axis 1 (axis 0 for 1-D arrays).

    Example:
        >>> import fluxion.numpy as jnp
        >>> len(jnp.hsplit(jnp.zeros((2, 4)), 2))
        2
    """
    a = ensure_array(ary)
    return _split("hsplit", a, indices_or_sections, 0 if a.ndim == 1 else 1)


def vsplit(ary: Any, indices_or_sections: Any) -> list:
    """Split along axis 0 (arrays of at least 2 dimensions).

    Example:
        >>> import fluxion.numpy as jnp
        >>> len(jnp.vsplit(jnp.zeros((4, 2)), 2))
        2
    """
    a = ensure_array(ary)
    if a.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return _split("vsplit", a, indices_or_sections, 0)


def dsplit(ary: Any, indices_or_sections: Any) -> list:
    """Split along axis 2 (arrays of at least 3 dimensions).

    Example:
        >>> import fluxion.numpy as jnp
        >>> len(jnp.dsplit(jnp.zeros((1, 1, 4)), 2))
        2
    """
    a = ensure_array(ary)
    if a.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return _split("dsplit", a, indices_or_sections, 2)
