"""Building matrices: triangles (``tri``, ``tril``, ``triu``), diagonals (``diag``,
``diagflat``, ``diagonal``) and Vandermonde matrices (``vander``).

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.tri(2, dtype=jnp.int32).tolist()
    [[1, 0], [1, 1]]
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import canonical_axis, check_arraylike, check_numeric, concrete_scalar, ensure_array
from fluxion.numpy.shape import moveaxis, ravel, reshape

__all__ = ["tri", "tril", "triu", "diag", "diagflat", "diagonal", "vander"]


def _tri_mask(n: int, m: int, k: int) -> Any:
    rows = lax.broadcasted_iota(np.int32, (n, m), 0)
    cols = lax.broadcasted_iota(np.int32, (n, m), 1)
    return lax.ge(lax.add(rows, lax.convert_element_type(k, np.int32)), cols)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Any:
    """Ones at and below the ``k``-th diagonal of an ``N`` x ``M`` matrix (float32 default).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.tri(2, 3, 1).tolist()
        [[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    """
    dt = np.dtype(np.float32) if dtype is None else dtypes.check_and_canonicalize_user_dtype(
        dtype, "tri")
    n = operator.index(N)
    m = n if M is None else operator.index(M)
    return lax.convert_element_type(_tri_mask(n, m, operator.index(k)), dt)


def _tri_select(name: str, m: Any, k: int, lower: bool) -> Any:
    check_arraylike(name, m, extended=True)
    m = ensure_array(m)
    if m.ndim < 2:
        raise ValueError(f"Argument to fluxion.numpy.{name} must be at least 2D")
    n, mm = m.shape[-2:]
    mask = _tri_mask(n, mm, k if lower else k - 1)
    mask = lax.broadcast_in_dim(mask, m.shape, (m.ndim - 2, m.ndim - 1))
    zero = lax.full_like(m, 0)  # key arrays: keys of zero data, as JAX's
    return lax.select(mask, m, zero) if lower else lax.select(mask, zero, m)


@one_program_static(static_argnames=("k",))
def tril(m: Any, k: int = 0) -> Any:
    """``m`` with the elements above the ``k``-th diagonal zeroed (over the last two axes).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.tril(jnp.ones((2, 2))).tolist()
        [[1.0, 0.0], [1.0, 1.0]]
    """
    return _tri_select("tril", m, operator.index(k), True)


@one_program_static(static_argnames=("k",))
def triu(m: Any, k: int = 0) -> Any:
    """``m`` with the elements below the ``k``-th diagonal zeroed.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.triu(jnp.ones((2, 2))).tolist()
        [[1.0, 1.0], [0.0, 1.0]]
    """
    return _tri_select("triu", m, operator.index(k), False)


@one_program_static(static_argnames=("offset", "axis1", "axis2"))
def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The ``offset`` diagonal over ``axis1``/``axis2`` (moved to the last axis of the result).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.diagonal(jnp.arange(9).reshape(3, 3)).tolist()
        [0, 4, 8]
    """
    check_arraylike("diagonal", a, extended=True)
    a = ensure_array(a)
    if a.ndim < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")
    offset = operator.index(concrete_scalar(offset, "diagonal", "offset"))
    ax1 = canonical_axis(axis1, a.ndim, "diagonal")
    ax2 = canonical_axis(axis2, a.ndim, "diagonal")
    if ax1 == ax2:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    n, m = a.shape[ax1], a.shape[ax2]
    a = moveaxis(a, (ax1, ax2), (-2, -1))
    size = max(0, min(n + min(offset, 0), m - max(offset, 0)))
    batch = a.shape[:-2]
    if size == 0:
        return reshape(a, batch + (0,)) if a.size == 0 else lax.slice_in_dim(
            reshape(a, batch + (n * m,)), 0, 0, axis=len(batch))
    # Element (i, i + offset) of an n x m matrix sits at flat index i*(m+1) + offset (and
    # (i - offset, i) at -offset*m + i*(m+1)): a strided slice of the flattened matrix.
    flat = reshape(a, batch + (n * m,))
    start = offset if offset >= 0 else -offset * m
    return lax.slice_in_dim(flat, start, start + (size - 1) * (m + 1) + 1, m + 1, len(batch))


@one_program_static(static_argnames=("k",))
def diag(v: Any, k: int = 0) -> Any:
    """The ``k``-th diagonal of a 2-D array, or a 2-D array with 1-D ``v`` on that diagonal.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.diag(jnp.array([1, 2])).tolist()
        [[1, 0], [0, 2]]
    """
    check_arraylike("diag", v, extended=True)
    v = ensure_array(v)
    k = operator.index(k)
    if v.ndim == 2:
        return diagonal(v, offset=k)
    if v.ndim != 1:
        raise ValueError("diag input must be 1d or 2d")
    L = v.shape[0]
    n = L + abs(k)
    zero = lax.full_like(v, 0, shape=())  # key arrays: a key of zero data
    parts = []
    if k < 0:
        parts.append(lax.broadcast_in_dim(zero, (-k,), ()))
    parts.append(v)
    if k > 0:
        parts.append(lax.broadcast_in_dim(zero, (k,), ()))
    vp = lax.concatenate(parts, 0) if len(parts) > 1 else v
    rows = lax.broadcasted_iota(np.int32, (n, n), 0)
    cols = lax.broadcasted_iota(np.int32, (n, n), 1)
    mask = lax.eq(lax.add(rows, lax.convert_element_type(k, np.int32)), cols)
    return lax.select(mask, lax.broadcast_in_dim(vp, (n, n), (0,)),
                      lax.broadcast_in_dim(zero, (n, n), ()))


def diagflat(v: Any, k: int = 0) -> Any:
    """A 2-D array with the flattened ``v`` on the ``k``-th diagonal.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.diagflat(jnp.array([[1, 2]])).tolist()
        [[1, 0], [0, 2]]
    """
    check_arraylike("diagflat", v, extended=True)
    out = diag(ravel(ensure_array(v)), k)
    return lax.convert_element_type(out, out.dtype, weak_type=False)


@one_program_static(static_argnames=("N", "increasing"))
def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    """The Vandermonde matrix: columns are powers of ``x``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.vander(jnp.array([2, 3]), 3).tolist()
        [[4, 2, 1], [9, 3, 1]]
    """
    check_arraylike("vander", x, extended=True)
    x = ensure_array(x)
    if x.ndim != 1:  # as JAX: checked before the dtype
        raise ValueError("x must be a one-dimensional array")
    check_numeric("vander", x)
    n = x.shape[0] if N is None else operator.index(N)
    if n < 0:
        raise ValueError("N must be nonnegative")
    io = lax.iota(x.dtype, n)
    if not increasing:
        io = lax.sub(lax.convert_element_type(n - 1, x.dtype), io)
    return uf.power(lax.broadcast_in_dim(x, x.shape + (1,), (0,)),
                    lax.broadcast_in_dim(io, (1, n), (1,)))
