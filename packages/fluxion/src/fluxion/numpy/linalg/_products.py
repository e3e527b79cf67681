"""Products and views: transposes, diagonals, traces, ``outer``, ``cross``, ``matmul``, ``vecdot``,
``tensordot`` and ``multi_dot``."""

from __future__ import annotations

import string
from typing import Any, Sequence

import fluxion.numpy as jnp
from fluxion.numpy.linalg._common import _T, _arrays, _at_least_2d

# ============================================================================== products & views

def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes of ``x`` (at least 2-D).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.matrix_transpose(jnp.ones((2, 3, 4))).shape
        (2, 4, 3)
    """
    (arr,) = _arrays("linalg.matrix_transpose", x)
    if arr.ndim < 2:
        raise ValueError(f"linalg.matrix_transpose: requires at least 2 dimensions, got shape "
                         f"{tuple(arr.shape)}")
    return _T(arr)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The ``offset`` diagonals of the matrices in ``x`` (..., m, n).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.diagonal(jnp.arange(4).reshape(2, 2)).tolist()
        [0, 3]
    """
    (arr,) = _arrays("linalg.diagonal", x)
    _at_least_2d("linalg.diagonal", arr)
    return jnp.diagonal(arr, offset=offset, axis1=-2, axis2=-1)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """Sum of the ``offset`` diagonal of the matrices in ``x`` (..., m, n).

    Example:
        >>> import fluxion.numpy as jnp
        >>> int(jnp.linalg.trace(jnp.arange(4).reshape(2, 2)))
        3
    """
    (arr,) = _arrays("linalg.trace", x)
    _at_least_2d("linalg.trace", arr)
    return jnp.trace(arr, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def outer(x1: Any, x2: Any, /) -> Any:
    """Outer product of two 1-D arrays, shape (len(x1), len(x2)).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.outer(jnp.array([1, 2]), jnp.array([1, 10])).tolist()
        [[1, 10], [2, 20]]
    """
    x1, x2 = _arrays("linalg.outer", x1, x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"linalg.outer: input arrays must be one-dimensional, got shapes "
                         f"{tuple(x1.shape)} and {tuple(x2.shape)}")
    return x1[:, None] * x2[None, :]


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Cross product of 3-vectors along ``axis`` (batch dimensions broadcast).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.cross(jnp.array([1.0, 0.0, 0.0]), jnp.array([0.0, 1.0, 0.0])).tolist()
        [0.0, 0.0, 1.0]
    """
    x1, x2 = _arrays("linalg.cross", x1, x2)
    try:
        n1, n2 = x1.shape[axis], x2.shape[axis]
    except IndexError:
        raise ValueError(f"linalg.cross: axis {axis} is out of bounds for shapes "
                         f"{tuple(x1.shape)} and {tuple(x2.shape)}") from None
    if n1 != 3 or n2 != 3:
        raise ValueError("linalg.cross: both input arrays must be (arrays of) 3-dimensional "
                         f"vectors, got shapes {tuple(x1.shape)} and {tuple(x2.shape)} with "
                         f"axis={axis}")
    return jnp.cross(x1, x2, axis=axis)


def matmul(x1: Any, x2: Any, /, *, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """Matrix product (``fluxion.numpy.matmul``) under the array-API name.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.matmul(jnp.ones((2, 3)), jnp.ones((3, 2))).tolist()
        [[3.0, 3.0], [3.0, 3.0]]
    """
    x1, x2 = _arrays("linalg.matmul", x1, x2)
    return jnp.matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """Conjugated dot product of vectors along ``axis`` (``fluxion.numpy.vecdot``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.linalg.vecdot(jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0])))
        11.0
    """
    x1, x2 = _arrays("linalg.vecdot", x1, x2)
    return jnp.vecdot(x1, x2, axis=axis, precision=precision,
                      preferred_element_type=preferred_element_type)


def tensordot(x1: Any, x2: Any, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2,
              precision: Any = None, preferred_element_type: Any = None,
              out_sharding: Any = None) -> Any:
    """Tensor contraction over ``axes`` (``fluxion.numpy.tensordot``), keyword-only ``axes``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.tensordot(jnp.ones((2, 3)), jnp.ones((3, 4)), axes=1).shape
        (2, 4)
    """
    x1, x2 = _arrays("linalg.tensordot", x1, x2)
    if out_sharding is not None:
        raise NotImplementedError("linalg.tensordot: out_sharding is not supported")
    return jnp.tensordot(x1, x2, axes=axes, precision=precision,
                         preferred_element_type=preferred_element_type)


def multi_dot(arrays: Sequence[Any], *, precision: Any = None) -> Any:
    """Product of a chain of matrices in the cheapest order (``einsum`` with an optimised
    path); the first and last may be vectors.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.multi_dot([jnp.ones(2), jnp.ones((2, 3)), jnp.ones((3, 4))]).tolist()
        [6.0, 6.0, 6.0, 6.0]
    """
    arrs = _arrays("linalg.multi_dot", *arrays)
    shapes = [tuple(a.shape) for a in arrs]
    if len(arrs) < 2:
        raise ValueError(f"linalg.multi_dot: requires at least two arrays, got {len(arrs)}")
    if not (arrs[0].ndim in (1, 2) and arrs[-1].ndim in (1, 2)
            and all(a.ndim == 2 for a in arrs[1:-1])):
        raise ValueError("linalg.multi_dot: input arrays must all be two-dimensional, except for "
                         f"the first and last, which may be one-dimensional; got shapes {shapes}")
    if any(a.shape[-1] != b.shape[0] for a, b in zip(arrs[:-1], arrs[1:])):
        raise ValueError("linalg.multi_dot: the last dimension of each array must match the first "
                         f"dimension of the next; got shapes {shapes}")
    letters = string.ascii_letters
    subs = [letters[i] + letters[i + 1] for i in range(len(arrs))]
    if arrs[0].ndim == 1:
        subs[0] = subs[0][1:]
    if arrs[-1].ndim == 1:
        subs[-1] = subs[-1][:1]
    out = "".join(sorted(set("".join(subs)), key=letters.index))
    out = "".join(c for c in out if "".join(subs).count(c) == 1)
    return jnp.einsum(",".join(subs) + "->" + out, *arrs, optimize="auto", precision=precision)
