"""Discrete linear convolution and cross-correlation of 1-D arrays: ``convolve`` and
``correlate``.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.convolve(jnp.array([1.0, 2.0]), jnp.array([1.0, 1.0])).tolist()
    [1.0, 3.0, 2.0]
"""

from __future__ import annotations

from typing import Any

from fluxion import lax
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import check_arraylike, ensure_array, promote_dtypes, promote_dtypes_inexact
from fluxion.numpy.shape import stack

__all__ = ["convolve", "correlate"]


def _conv(name: str, x: Any, y: Any, mode: str, precision: Any,
          preferred_element_type: Any) -> Any:
    check_arraylike(name, x, y)
    x, y = ensure_array(x), ensure_array(y)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    if preferred_element_type is None:
        x, y = promote_dtypes_inexact(x, y)
    else:
        x, y = promote_dtypes(x, y)
    if x.shape[0] == 0 or y.shape[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {x.shape} and {y.shape}.")
    flip_out = False
    if name == "correlate":
        y = uf.conj(y)
        if x.shape[0] < y.shape[0]:
            x, y = y, x
            flip_out = True
    else:
        if x.shape[0] < y.shape[0]:
            x, y = y, x
        y = lax.rev(y, (0,))
    m = y.shape[0]
    if mode == "valid":
        pad = (0, 0)
    elif mode == "same":
        pad = (m // 2, m - m // 2 - 1)
    elif mode == "full":
        pad = (m - 1, m - 1)
    else:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    zero = lax.convert_element_type(0, x.dtype)
    parts = []
    if pad[0]:
        parts.append(lax.broadcast_in_dim(zero, (pad[0],), ()))
    parts.append(x)
    if pad[1]:
        parts.append(lax.broadcast_in_dim(zero, (pad[1],), ()))
    xp = lax.concatenate(parts, 0) if len(parts) > 1 else x
    out_len = xp.shape[0] - m + 1
    # out[k] = sum_j xp[k + j] * y[j]: the m shifted windows of xp, contracted with y.
    windows = stack([lax.slice_in_dim(xp, j, j + out_len, axis=0) for j in range(m)], axis=1)
    out = lax.dot_general(windows, y, (((1,), (0,)), ((), ())), precision,
                          preferred_element_type)
    return lax.rev(out, (0,)) if flip_out else out


@one_program_static(static_argnames=("mode", "precision", "preferred_element_type"))
def convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None,
             preferred_element_type: Any = None) -> Any:
    """Discrete linear convolution of two 1-D arrays.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.convolve(jnp.array([1.0, 2.0]), jnp.array([1.0, 1.0])).tolist()
        [1.0, 3.0, 2.0]
    """
    return _conv("convolve", a, v, mode, precision, preferred_element_type)


@one_program_static(static_argnames=("mode", "precision", "preferred_element_type"))
def correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    """Cross-correlation of two 1-D arrays (``v`` conjugated).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.correlate(jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 1.0])).tolist()
        [3.0, 5.0]
    """
    return _conv("correlate", a, v, mode, precision, preferred_element_type)
