"""Weighted averages and the second moments built on them: ``average``, ``cov`` and
``corrcoef``.

Example:
    >>> import fluxion.numpy as jnp
    >>> float(jnp.average(jnp.array([1.0, 3.0]), weights=jnp.array([3.0, 1.0])))
    1.5
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy import reductions as red
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import (
    canonical_axes,
    canonical_axis,
    check_arraylike,
    ensure_array,
    promote_args_inexact,
    promote_dtypes_inexact,
)
from fluxion.numpy.creation import full
from fluxion.numpy.matrices import diag
from fluxion.numpy.products import dot
from fluxion.numpy.shape import atleast_2d, broadcast_to, concatenate, squeeze, transpose

__all__ = ["average", "cov", "corrcoef"]


@one_program_static(static_argnames=("axis", "returned", "keepdims"))
def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
            keepdims: bool = False) -> Any:
    """Weighted average along ``axis`` (``returned`` also gives the sum of weights).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.average(jnp.array([1.0, 3.0]), weights=jnp.array([3.0, 1.0])))
        1.5
    """
    check_arraylike("average", a)
    a = ensure_array(a)
    axes = canonical_axes(axis, a.ndim, "average")
    if weights is None:
        (a,) = promote_dtypes_inexact(a)
        avg = red.mean(a, axis=axis, keepdims=keepdims)
        count = math.prod(a.shape[d] for d in axes)
        wsum = lax.convert_element_type(count, avg.dtype)
    else:
        check_arraylike("average", weights)
        a, w = promote_dtypes_inexact(a, ensure_array(weights))
        if a.shape != w.shape:
            if axis is None:
                raise ValueError("Axis must be specified when shapes of a and weights differ.")
            ax_tuple = axes if isinstance(axis, (tuple, list)) else (canonical_axis(
                axis, a.ndim, "average"),)
            if w.shape != tuple(a.shape[d] for d in ax_tuple):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            new_shape = tuple(d if i in ax_tuple else 1 for i, d in enumerate(a.shape))
            order = tuple(int(i) for i in np.argsort(ax_tuple))
            w = lax.reshape(lax.transpose(w, order) if order != tuple(range(len(order))) else w,
                            new_shape)
        wsum = red.sum(w, axis=axis, keepdims=keepdims)
        avg = uf.divide(red.sum(uf.multiply(a, w), axis=axis, keepdims=keepdims), wsum)
    if returned:
        if avg.shape != getattr(wsum, "shape", ()):
            wsum = broadcast_to(wsum, avg.shape)
        return avg, wsum
    return avg


@one_program_static(static_argnames=("rowvar", "bias", "ddof", "dtype"))
def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights: Any = None, aweights: Any = None, dtype: Any = None) -> Any:
    """Covariance matrix of the variables in the rows (``rowvar``) or columns of ``m``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.cov(jnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
        [[1.0, -1.0], [-1.0, 1.0]]
    """
    if y is not None:
        m, y = promote_args_inexact("cov", m, y)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    else:
        (m,) = promote_args_inexact("cov", m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is not None and not dtypes.issubdtype(dtype, np.inexact):
        raise ValueError(f"cov: dtype must be a subclass of float or complex; got dtype={dtype}")
    X = atleast_2d(m)
    if not rowvar and m.ndim != 1:
        X = transpose(X)
    if X.shape[0] == 0:
        return lax.reshape(full((0,), 0.0), (0, 0))
    if y is not None:
        ya = atleast_2d(y)
        if not rowvar and ya.shape[0] != 1:
            ya = transpose(ya)
        X = concatenate((X, ya), axis=0)
    if X.shape[1] == 0:
        shp = () if X.shape[0] == 1 else (X.shape[0], X.shape[0])
        return full(shp, np.nan, dtype=X.dtype)
    if ddof is None:
        ddof = 1 if not bias else 0
    w = None
    if fweights is not None:
        fw = ensure_array(fweights)
        if fw.ndim > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if fw.shape[0] != X.shape[1]:
            raise RuntimeError("incompatible numbers of samples and fweights")
        if not dtypes.issubdtype(fw.dtype, np.integer):
            raise TypeError("fweights must be integer.")
        w = uf.abs(fw)
    aw = None
    if aweights is not None:
        aw = ensure_array(aweights)
        if aw.ndim > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if aw.shape[0] != X.shape[1]:
            raise RuntimeError("incompatible numbers of samples and aweights")
        aw = uf.abs(aw)
        w = aw if w is None else uf.multiply(w, aw)
    if dtype is not None:
        dt = dtypes.check_and_canonicalize_user_dtype(dtype, "cov")
        X = lax.convert_element_type(X, dt)
        w = lax.convert_element_type(w, dt) if w is not None else None
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = lax.slice(w_sum, (0,), (1,)) if getattr(w_sum, "ndim", 0) else w_sum
    w_sum = lax.reshape(w_sum, ()) if getattr(w_sum, "ndim", 0) else w_sum
    if w is None:
        f = X.shape[1] - ddof
    elif ddof == 0:
        f = w_sum
    elif aw is None:
        f = uf.subtract(w_sum, ddof)
    else:
        f = uf.subtract(w_sum, uf.divide(uf.multiply(ddof, red.sum(uf.multiply(w, aw))), w_sum))
    X = uf.subtract(X, lax.broadcast_in_dim(avg, avg.shape + (1,), (0,)))
    XT = transpose(X) if w is None else transpose(uf.multiply(X, lax.broadcast_in_dim(
        w, (1,) + w.shape, (1,))))
    return squeeze(uf.true_divide(dot(X, uf.conj(XT)), f))


@one_program_static(static_argnames=("rowvar", "dtype"))
def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None) -> Any:
    """Pearson correlation coefficients.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.corrcoef(jnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
        [[1.0, -1.0], [-1.0, 1.0]]
    """
    check_arraylike("corrcoef", x)
    if dtype is not None and not dtypes.issubdtype(dtype, np.inexact):
        raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got "
                         f"dtype={dtype}")
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return uf.divide(c, c)
    d = diag(c)
    sd = lax.convert_element_type(uf.sqrt(uf.real(d)), c.dtype)
    c = uf.divide(uf.divide(c, lax.broadcast_in_dim(sd, sd.shape + (1,), (0,))),
                  lax.broadcast_in_dim(sd, (1,) + sd.shape, (1,)))
    re = uf.clip(uf.real(c), -1, 1)
    if c.dtype.kind == "c":
        return lax.complex(re, uf.clip(uf.imag(c), -1, 1))
    return re
