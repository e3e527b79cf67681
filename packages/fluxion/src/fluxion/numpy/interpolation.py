"""One-dimensional piecewise-linear interpolation: ``interp``.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.interp(jnp.array([0.5]), jnp.array([0.0, 1.0]), jnp.array([0.0, 10.0])).tolist()
    [5.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion import lax
from fluxion.lax import sorting as lax_sorting
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._gather_util import take_along_last
from fluxion.numpy._util import check_arraylike, const_like, ensure_array, promote_dtypes_inexact
from fluxion.numpy.shape import concatenate, ravel, reshape, where
from fluxion.numpy.sorting import searchsorted

__all__ = ["interp"]


def _slice(a: Any, start: int, stop: int, axis: int) -> Any:
    return lax.slice_in_dim(a, start, stop, axis=axis)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    """One-dimensional piecewise-linear interpolation of ``(xp, fp)`` at ``x``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.interp(jnp.array([0.5, 1.5]), jnp.array([0.0, 1.0, 2.0]),
        ...            jnp.array([0.0, 10.0, 20.0])).tolist()
        [5.0, 15.0]
    """
    check_arraylike("interp", x, xp, fp)
    x, xp, fp = ensure_array(x), ensure_array(xp), ensure_array(fp)
    if xp.shape != fp.shape or xp.ndim != 1:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    xa, xpa = promote_dtypes_inexact(x, xp)
    (fpa,) = promote_dtypes_inexact(fp)
    ext_l = isinstance(left, str)
    ext_r = isinstance(right, str)
    for v in (left, right):
        if isinstance(v, str) and v != "extrapolate":
            raise ValueError(f"the only valid string value of `left`/`right` is 'extrapolate', "
                             f"but got: {v!r}")
    if xa.dtype.kind == "c":
        raise ValueError("fluxion.numpy.interp: complex x values not supported.")
    if period is not None:
        if np.ndim(period) != 0:
            raise ValueError(f"period must be a scalar; got {period}")
        period = uf.abs(period)
        xa = uf.remainder(xa, period)
        xpa = uf.remainder(xpa, period)
        xpa, fpa = lax_sorting.sort_key_val(xpa, fpa)
        m = xpa.shape[0]
        xpa = concatenate([uf.subtract(_slice(xpa, m - 1, m, 0), period), xpa,
                           uf.add(_slice(xpa, 0, 1, 0), period)])
        fpa = concatenate([_slice(fpa, m - 1, m, 0), fpa, _slice(fpa, 0, 1, 0)])
    m = xpa.shape[0]
    i = uf.clip(searchsorted(xpa, xa, side="right"), 1, m - 1)
    flat_i = reshape(ravel(i), (1, i.size))
    im1 = uf.subtract(flat_i, 1)

    def g(arr: Any, idx: Any) -> Any:
        return reshape(take_along_last(reshape(arr, (1, m)), idx), i.shape)

    fi, fim1, xpi, xpim1 = g(fpa, flat_i), g(fpa, im1), g(xpa, flat_i), g(xpa, im1)
    df = uf.subtract(fi, fim1)
    dx = uf.subtract(xpi, xpim1)
    delta = uf.subtract(xa, xpim1)
    eps = np.spacing(np.finfo(xpa.dtype).eps)
    dx0 = lax.le(lax.abs(dx), const_like(dx, eps))
    f = where(dx0, fim1, uf.add(fim1, uf.multiply(uf.divide(delta, where(dx0, 1, dx)), df)))
    if not ext_l:
        la = lax.reshape(_slice(fpa, 0, 1, 0), ()) if left is None else left
        if period is None:
            f = where(uf.less(xa, lax.reshape(_slice(xpa, 0, 1, 0), ())), la, f)
    if not ext_r:
        ra = lax.reshape(_slice(fpa, m - 1, m, 0), ()) if right is None else right
        if period is None:
            f = where(uf.greater(xa, lax.reshape(_slice(xpa, m - 1, m, 0), ())), ra, f)
    return f
