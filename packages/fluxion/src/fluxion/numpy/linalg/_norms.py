"""Norms: ``vector_norm``, ``matrix_norm`` and ``norm``."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

import fluxion.numpy as jnp
from fluxion.numpy.linalg._common import _arrays, _at_least_2d, _inexact, _jit, _real_dtype
from fluxion.numpy.linalg._decompositions import svd

# ============================================================================== norms

def vector_norm(x: Any, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
                ord: int | float | str = 2) -> Any:
    """Vector ``ord``-norm of ``x`` over ``axis`` (None: all elements): 2 (default), 1,
    ``inf``, ``-inf``, 0 (number of non-zeros) or any other power.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.linalg.vector_norm(jnp.array([3.0, -4.0])))
        5.0
    """
    (x,) = _arrays("linalg.vector_norm", x)
    if isinstance(axis, list):
        axis = tuple(axis)
    if ord is None or (not isinstance(ord, str) and ord == 2):
        return jnp.sqrt(jnp.sum(jnp.real(x * jnp.conjugate(x)), axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        hint = ""
        if ord == "inf":
            hint = " Use fluxion.numpy.inf instead."
        elif ord == "-inf":
            hint = " Use -fluxion.numpy.inf instead."
        raise ValueError(f"linalg.vector_norm: invalid order {ord!r} for a vector norm.{hint}")
    if ord == np.inf:
        return jnp.max(jnp.abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return jnp.min(jnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return jnp.sum(x != 0, dtype=_real_dtype(x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return jnp.sum(jnp.abs(x), axis=axis, keepdims=keepdims)
    abs_x = jnp.abs(x)
    p = np.array(ord, dtype=abs_x.dtype)
    out = jnp.sum(abs_x ** p, axis=axis, keepdims=keepdims)
    return jnp.power(out, np.array(1.0 / p, dtype=abs_x.dtype))


def _matrix_norm2(x: Any, ord: Any, axis: tuple[int, int], keepdims: bool) -> Any:
    row, col = axis
    if ord is None or ord in ("f", "fro"):
        return jnp.sqrt(jnp.sum(jnp.real(x * jnp.conjugate(x)), axis=axis, keepdims=keepdims))
    if isinstance(ord, str) and ord != "nuc":
        raise ValueError(f"linalg.norm: invalid order {ord!r} for a matrix norm")
    if ord == 1 or ord == -1:
        if not keepdims and col > row:
            col -= 1
        sums = jnp.sum(jnp.abs(x), axis=row, keepdims=keepdims)
        if ord == 1:
            return jnp.max(sums, axis=col, keepdims=keepdims, initial=0)
        return jnp.min(sums, axis=col, keepdims=keepdims)
    if ord == np.inf or ord == -np.inf:
        if not keepdims and row > col:
            row -= 1
        sums = jnp.sum(jnp.abs(x), axis=col, keepdims=keepdims)
        if ord == np.inf:
            return jnp.max(sums, axis=row, keepdims=keepdims, initial=0)
        return jnp.min(sums, axis=row, keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        xm = jnp.moveaxis(x, axis, (-2, -1))
        s = svd(xm, compute_uv=False)
        if ord == 2:
            y = jnp.max(s, axis=-1, initial=0)
        elif ord == -2:
            y = jnp.min(s, axis=-1)
        else:
            y = jnp.sum(s, axis=-1)
        return jnp.expand_dims(y, axis) if keepdims else y
    raise ValueError(f"linalg.norm: invalid order {ord!r} for a matrix norm")


@_jit(static_argnames=("ord", "axis", "keepdims"))
def _norm(x: Any, ord: Any, axis: tuple[int, ...] | None, keepdims: bool) -> Any:
    if axis is None:
        return jnp.sqrt(jnp.sum(jnp.real(x * jnp.conjugate(x)), keepdims=keepdims))
    if len(axis) == 1:
        return vector_norm(x, ord=2 if ord is None else ord, axis=axis, keepdims=keepdims)
    return _matrix_norm2(x, ord, axis, keepdims)


def norm(x: Any, ord: int | float | str | None = None,
         axis: None | tuple[int, ...] | int = None, keepdims: bool = False) -> Any:
    """Vector or matrix norm, as ``numpy.linalg.norm``: one axis gives a vector norm (see
    :func:`vector_norm`), two axes a matrix norm (``ord`` None/'fro', 'nuc', 1, -1, 2, -2, inf,
    -inf). With ``axis=None`` a 1-D or 2-D ``x`` gets its vector or matrix norm; with
    ``ord=None`` too, any ``x`` gets the 2-norm of all its elements.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.linalg.norm(jnp.array([[1.0, 2.0], [3.0, 4.0]]), ord=1))
        6.0
    """
    (x,) = _inexact("linalg.norm", x)
    nd = x.ndim
    if axis is None:
        if ord is not None:
            axis = tuple(range(nd))
    elif isinstance(axis, (tuple, list)):
        axis = tuple(_canon_axis("linalg.norm", a, nd) for a in axis)
    else:
        axis = (_canon_axis("linalg.norm", axis, nd),)
    if axis is not None and len(axis) not in (1, 2):
        raise ValueError(f"linalg.norm: improper number of axes for norm: axis={axis} (array of "
                         f"shape {tuple(x.shape)}). Pass one axis to compute a vector norm, or "
                         "two axes to compute a matrix norm.")
    if axis is not None and len(axis) == 2 and isinstance(ord, str) and \
            ord not in ("f", "fro", "nuc"):
        raise ValueError(f"linalg.norm: invalid order {ord!r} for a matrix norm")
    if axis is not None and len(axis) == 2 and axis[0] == axis[1]:
        raise ValueError(f"linalg.norm: duplicate axes given: axis={axis}")
    if isinstance(ord, (np.generic, np.ndarray)):
        ord = ord.item()
    return _norm(x, ord=ord, axis=axis, keepdims=bool(keepdims))


def _canon_axis(name: str, axis: Any, ndim: int) -> int:
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise ValueError(f"{name}: axis {a} is out of bounds for array of dimension {ndim}")
    return a % ndim


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: str | int | float = "fro") -> Any:
    """Matrix norm over the last two axes of ``x`` (..., m, n); ``ord`` as in :func:`norm`
    (default Frobenius).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.linalg.matrix_norm(jnp.eye(4)))
        2.0
    """
    (x,) = _arrays("linalg.matrix_norm", x)
    _at_least_2d("linalg.matrix_norm", x)
    return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))
