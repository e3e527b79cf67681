"""Shape manipulation: reshape, transpose, ravel, squeeze, expand_dims, moveaxis, concatenate,
stack, broadcast_to, broadcast_arrays, where.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.stack([jnp.zeros(2), jnp.ones(2)]).shape
    (2, 2)
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, Sequence

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.core.errors import user_source_line
from fluxion.lax.sharding_constraint import with_out_sharding
from fluxion.numpy._eager import call_body
from fluxion.numpy._util import (
    canonical_axes,
    canonical_axis,
    check_arraylike,
    ensure_array,
    promote_dtypes,
)

__all__ = ["reshape", "transpose", "permute_dims", "ravel", "squeeze", "expand_dims", "moveaxis",
           "swapaxes", "concatenate", "concat", "stack", "hstack", "vstack", "broadcast_to",
           "broadcast_arrays", "broadcast_shapes", "where", "shape", "ndim", "size",
           "atleast_1d", "atleast_2d", "atleast_3d"]


def shape(a: Any) -> tuple[int, ...]:
    """The shape of ``a``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.shape(jnp.zeros((2, 3)))
        (2, 3)
    """
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def ndim(a: Any) -> int:
    """The number of dimensions of ``a``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.ndim(1.0)
        0
    """
    return len(shape(a))


def size(a: Any, axis: int | None = None) -> int:
    """The number of elements of ``a`` (along ``axis`` if given).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.size(jnp.zeros((2, 3)))
        6
    """
    s = shape(a)
    return int(np.prod(s, dtype=np.int64)) if axis is None else s[axis]


def _resolve_shape(newshape: Any, total: int, fun: str) -> tuple[int, ...]:
    if isinstance(newshape, (int, np.integer)) or hasattr(newshape, "__index__") and not isinstance(
            newshape, (tuple, list)):
        newshape = (operator.index(newshape),)
    dims = [operator.index(d) for d in newshape]
    neg = [i for i, d in enumerate(dims) if d == -1]
    if len(neg) > 1:
        raise ValueError(f"{fun}: can only specify one unknown dimension, got {tuple(dims)}")
    if neg:
        known = math.prod(d for d in dims if d != -1)
        if known == 0 or total % known:
            raise ValueError(f"{fun}: cannot reshape array of size {total} into shape {tuple(dims)} "
                            f"(at {user_source_line()})")
        dims[neg[0]] = total // known
    if math.prod(dims) != total:
        raise ValueError(f"{fun}: cannot reshape array of size {total} into shape {tuple(dims)} "
                        f"(at {user_source_line()})")
    return tuple(dims)


def reshape(a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None,
            copy: bool | None = None, out_sharding: Any = None) -> Any:
    """``a`` with a new shape (one dimension may be -1).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.reshape(jnp.arange(6), (2, -1)).shape
        (2, 3)
    """
    if shape is None:
        shape = newshape
    if out_sharding is not None:  # the result's sharding, given (explicit mesh axes)
        return with_out_sharding("reshape", out_sharding, reshape, a, shape, order)
    a = ensure_array(a)
    dims = _resolve_shape(shape, math.prod(a.shape), "reshape")  # math.prod: a fast int product
    if order == "F":
        return transpose(lax.reshape(transpose(a), dims[::-1]))
    if order not in ("C", "A"):
        raise NotImplementedError(f"reshape: order={order!r} is not supported")
    return lax.reshape(a, dims)


def ravel(a: Any, order: str = "C", *, out_sharding: Any = None) -> Any:
    """``a`` flattened to one dimension (``out_sharding``: the result's sharding, as
    :func:`reshape`'s).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.ravel(jnp.ones((2, 2))).shape
        (4,)
    """
    a = ensure_array(a)
    return reshape(a, (a.size,), order, out_sharding=out_sharding)


def transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
    """Permute the axes of ``a`` (reverse them by default).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.transpose(jnp.zeros((2, 3))).shape
        (3, 2)
    """
    a = ensure_array(a)
    if axes is None:
        perm = tuple(range(a.ndim))[::-1]
    else:
        perm = tuple(canonical_axis(ax, a.ndim, "transpose") for ax in axes)
        if sorted(perm) != list(range(a.ndim)):
            raise TypeError(f"transpose: axes {tuple(axes)} don't match array of shape {a.shape}")
    return lax.transpose(a, perm)


def permute_dims(a: Any, /, axes: tuple[int, ...]) -> Any:
    """The array API's ``transpose``, whose ``axes`` are required (as JAX's).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.permute_dims(jnp.zeros((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    return transpose(a, axes)


def squeeze(a: Any, axis: Any = None) -> Any:
    """Remove size-1 axes (all of them, or those in ``axis``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.squeeze(jnp.zeros((1, 2, 1))).shape
        (2,)
    """
    a = ensure_array(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(a.shape) if d == 1)
    else:
        axes = canonical_axes(axis, a.ndim, "squeeze")
        for ax in axes:
            if a.shape[ax] != 1:
                raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size not "
                                 f"equal to one, got shape={a.shape} and axis={axis}")
    return lax.squeeze(a, axes)


def expand_dims(a: Any, axis: Any) -> Any:
    """Insert size-1 axes at ``axis`` (positions in the result).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.expand_dims(jnp.zeros(2), 0).shape
        (1, 2)
    """
    a = ensure_array(a)
    try:  # one index, or any iterable of indices (range, NumPy integers), as JAX
        axes: Any = (operator.index(axis),)
    except TypeError:
        axes = tuple(operator.index(ax) for ax in axis) if hasattr(axis, "__iter__") else (axis,)
    nd = a.ndim + len(axes)
    canon = [canonical_axis(ax, nd, "expand_dims") for ax in axes]
    return lax.expand_dims(a, canon)


def moveaxis(a: Any, source: Any, destination: Any) -> Any:
    """Move axes of ``a`` from ``source`` to ``destination`` positions.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.moveaxis(jnp.zeros((2, 3, 4)), 0, -1).shape
        (3, 4, 2)
    """
    a = ensure_array(a)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of elements")
    src = [canonical_axis(s, a.ndim, "moveaxis") for s in src]
    dst = [canonical_axis(d, a.ndim, "moveaxis") for d in dst]
    perm = [i for i in range(a.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return lax.transpose(a, tuple(perm))


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    """Exchange two axes of ``a``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.swapaxes(jnp.zeros((2, 3)), 0, 1).shape
        (3, 2)
    """
    a = ensure_array(a)
    perm = list(range(a.ndim))
    i, j = canonical_axis(axis1, a.ndim, "swapaxes"), canonical_axis(axis2, a.ndim, "swapaxes")
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, tuple(perm))


def concatenate(arrays: Sequence[Any], axis: int | None = 0, dtype: Any = None) -> Any:
    """Join arrays along an existing axis (flattened first when ``axis`` is None).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.concatenate([jnp.zeros(2), jnp.ones(1)]).tolist()
        [0.0, 0.0, 1.0]
    """
    if not isinstance(arrays, (list, tuple)) and not hasattr(arrays, "shape"):
        raise TypeError("concatenate: expected a sequence of arrays")
    arrays = list(arrays)
    if not arrays:
        raise ValueError("Need at least one array to concatenate.")
    check_arraylike("concatenate", *arrays, extended=True)
    arrs = [ensure_array(a) for a in arrays]
    if axis is None:
        arrs = [ravel(a) for a in arrs]
        axis = 0
    if any(a.ndim == 0 for a in arrs):
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    nd = arrs[0].ndim
    for a in arrs[1:]:
        if a.ndim != nd:
            raise TypeError(f"concatenate: all the input arrays must have the same number of "
                             f"dimensions, got shapes {[x.shape for x in arrs]} "
                             f"(at {user_source_line()})")
    ax = canonical_axis(axis, nd, "concatenate")
    for a in arrs[1:]:
        if any(s != t for i, (s, t) in enumerate(zip(a.shape, arrs[0].shape)) if i != ax):
            # a TypeError, as jax's (NumPy raises ValueError here)
            raise TypeError(f"concatenate: the input array dimensions except for the concatenation "
                            f"axis {ax} must match exactly, got shapes {[x.shape for x in arrs]} "
                            f"(at {user_source_line()})")
    arrs = promote_dtypes(*arrs)
    if dtype is not None:
        dt = dtypes.check_and_canonicalize_user_dtype(dtype, "concatenate")
        arrs = [lax.convert_element_type(a, dt) for a in arrs]
    return lax.concatenate(arrs, ax)


concat = concatenate


def stack(arrays: Sequence[Any], axis: int = 0, out: None = None, dtype: Any = None) -> Any:
    """Join arrays of equal shape along a new axis.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.stack([jnp.zeros(2), jnp.ones(2)], axis=1).shape
        (2, 2)
    """
    arrays = list(arrays)
    if not arrays:
        raise ValueError("Need at least one array to stack.")
    check_arraylike("stack", *arrays, extended=True)
    arrs = [ensure_array(a) for a in arrays]
    shp = arrs[0].shape
    for a in arrs[1:]:
        if a.shape != shp:
            raise ValueError(f"stack: all input arrays must have the same shape, got "
                             f"{[x.shape for x in arrs]} (at {user_source_line()})")
    ax = canonical_axis(axis, len(shp) + 1, "stack")
    return concatenate([lax.expand_dims(a, (ax,)) for a in arrs], ax, dtype)


def hstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    """Stack horizontally (along axis 1, or 0 for 1-D arrays).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.hstack([jnp.zeros(2), jnp.ones(2)]).shape
        (4,)
    """
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, 0 if arrs[0].ndim == 1 else 1, dtype)


def vstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    """Stack vertically (along axis 0, after making inputs at least 2-D).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.vstack([jnp.zeros(2), jnp.ones(2)]).shape
        (2, 2)
    """
    return concatenate([atleast_2d(a) for a in tup], 0, dtype)


def atleast_1d(*arys: Any) -> Any:
    """Inputs viewed with at least one dimension.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.atleast_1d(1.0).shape
        (1,)
    """
    out = [ensure_array(a) if ndim(a) >= 1 else reshape(ensure_array(a), (1,)) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys: Any) -> Any:
    """Inputs viewed with at least two dimensions.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.atleast_2d(jnp.zeros(3)).shape
        (1, 3)
    """
    out = []
    for a in arys:
        a = ensure_array(a)
        out.append(a if a.ndim >= 2 else reshape(a, (1,) * (2 - a.ndim) + a.shape))
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys: Any) -> Any:
    """Inputs viewed with at least three dimensions.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.atleast_3d(jnp.zeros(3)).shape
        (1, 3, 1)
    """
    out = []
    for a in arys:
        a = ensure_array(a)
        if a.ndim == 0:
            a = reshape(a, (1, 1, 1))
        elif a.ndim == 1:
            a = reshape(a, (1, a.shape[0], 1))
        elif a.ndim == 2:
            a = reshape(a, a.shape + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape that ``shapes`` broadcast to.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.broadcast_shapes((2, 1), (3,))
        (2, 3)
    """
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: {tuple(tuple(s) for s in shapes)}"
                         ) from None


def broadcast_to(array: Any, shape: Any, *, out_sharding: Any = None) -> Any:
    """``array`` broadcast to ``shape`` (``out_sharding``: the result's sharding, a Sharding or a
    PartitionSpec over the ``set_mesh`` mesh, as JAX's).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.broadcast_to(jnp.arange(3), (2, 3)).shape
        (2, 3)
    """
    if out_sharding is not None:
        return with_out_sharding("broadcast_to", out_sharding, broadcast_to, array, shape)
    a = ensure_array(array)
    shp = (shape,) if isinstance(shape, int) else tuple(operator.index(d) for d in shape)
    if a.shape == shp:
        return a
    nd = len(shp)
    if a.ndim > nd:
        raise ValueError(f"broadcast_to: cannot broadcast array of shape {a.shape} to shape {shp}: "
                         "the target has fewer dimensions")
    lead = nd - a.ndim
    for i, d in enumerate(a.shape):
        if d != 1 and d != shp[lead + i]:
            raise ValueError(f"broadcast_to: incompatible shapes for broadcasting: {a.shape} and "
                             f"requested shape {shp} (at {user_source_line()})")
    return lax.broadcast_in_dim(a, shp, tuple(range(lead, nd)))


def broadcast_arrays(*args: Any) -> list[Any]:
    """The arguments broadcast against each other.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [a.shape for a in jnp.broadcast_arrays(jnp.zeros((2, 1)), jnp.zeros(3))]
        [(2, 3), (2, 3)]
    """
    shp = broadcast_shapes(*[shape(a) for a in args])
    return [broadcast_to(a, shp) for a in args]


# ``where(condition)`` is ``nonzero(condition)``, which lives in setops.py (it imports this
# module): fluxion/numpy/__init__.py hands it over (``install_nonzero``).
_NONZERO: list[Callable[..., tuple]] = []


def install_nonzero(nonzero: Callable[..., tuple]) -> None:
    """Called once by ``fluxion/numpy/__init__.py``."""
    _NONZERO[:] = [nonzero]


def where(condition: Any, x: Any = None, y: Any = None, /, *, size: int | None = None,
          fill_value: Any = None) -> Any:
    """Elementwise ``x if condition else y`` (both broadcast and promoted).

    The one-argument form is :func:`fluxion.numpy.nonzero`.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.where(jnp.array([True, False]), 1.0, 0.0).tolist()
        [1.0, 0.0]
    """
    if x is None and y is None:
        return _NONZERO[0](condition, size=size, fill_value=fill_value)
    # one of x, y missing: check_arraylike's TypeError naming its position, as JAX's
    check_arraylike("where", condition, x, y, extended=True)
    return call_body(_where, (condition, x, y))


def _where(condition: Any, x: Any, y: Any) -> Any:
    # where's body: eagerly one compiled program, as JAX's jitted where
    cond = ensure_array(condition)
    if cond.dtype != np.bool_:
        cond = lax.ne(cond, lax.convert_element_type(0, cond.dtype))
    # dtypes only: jax's where broadcasts without the jax_numpy_rank_promotion check
    x, y = promote_dtypes(x, y)
    shp = broadcast_shapes(cond.shape, shape(x), shape(y))
    return lax.select(broadcast_to(cond, shp), broadcast_to(x, shp), broadcast_to(y, shp))


_where.__name__ = "where"
