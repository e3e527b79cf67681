"""Whole-array comparisons: ``isclose`` / ``allclose`` (with tolerances), ``array_equal`` and
``array_equiv``.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.isclose(jnp.array([1.0, 2.0]), jnp.array([1.0, 2.1])).tolist()
    [True, False]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core.dtypes import ExtendedDType
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import check_arraylike, ensure_array, promote_args, promote_args_inexact
from fluxion.numpy.creation import array
from fluxion.numpy.reductions import all as _all

__all__ = ["isclose", "allclose", "array_equal", "array_equiv"]


@one_program_static(static_argnames=("equal_nan",))
def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False) -> Any:
    """Elementwise ``|a - b| <= atol + rtol * |b|`` (infinities equal when of the same sign).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.isclose(1.0, 1.0 + 1e-9).tolist()
        True
    """
    if _is_key_array(a) or _is_key_array(b):  # typed PRNG keys: key equality, as JAX's
        if not (_is_key_array(a) and _is_key_array(b)) or a.dtype != b.dtype:
            other = b if _is_key_array(a) else a
            raise TypeError(f"isclose: cannot compare a key array with "
                            f"{getattr(other, 'dtype', type(other).__name__)}")
        return a == b
    a, b = promote_args("isclose", a, b)
    a, b = promote_args_inexact("isclose", a, b)
    dt = a.dtype
    if dt.kind == "c":
        dt = np.dtype(np.finfo(dt).dtype)
    rt = lax.convert_element_type(rtol, dt)
    at = lax.convert_element_type(atol, dt)
    in_range = lax.le(lax.abs(lax.sub(a, b)), lax.add(at, lax.mul(rt, lax.abs(b))))
    out = uf.logical_or(lax.eq(a, b), uf.logical_and(uf.isfinite(b), in_range))
    if equal_nan:
        out = uf.logical_or(out, uf.logical_and(uf.isnan(a), uf.isnan(b)))
    return out


@one_program_static(static_argnames=("equal_nan",))
def allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False) -> Any:
    """Whether :func:`isclose` holds everywhere.

    Example:
        >>> import fluxion.numpy as jnp
        >>> bool(jnp.allclose(jnp.ones(3), jnp.ones(3)))
        True
    """
    if not (_is_key_array(a) or _is_key_array(b)):
        check_arraylike("allclose", a, b)
    return _all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """Whether two arrays have the same shape and elements (a 0-d bool array).

    Example:
        >>> import fluxion.numpy as jnp
        >>> bool(jnp.array_equal(jnp.arange(3), jnp.arange(3)))
        True
    """
    k1, k2 = _is_key_array(a1), _is_key_array(a2)
    if k1 or k2:  # typed PRNG keys compare key by key (a key never equals other data)
        if not (k1 and k2) or a1.dtype != a2.dtype or a1.shape != a2.shape:
            return array(False, dtype=np.bool_)
        return _all(a1 == a2)
    a1, a2 = ensure_array(a1), ensure_array(a2)
    if a1.shape != a2.shape:
        return array(False, dtype=np.bool_)
    eq = uf.equal(a1, a2)
    if equal_nan:
        eq = uf.logical_or(eq, uf.logical_and(uf.isnan(a1), uf.isnan(a2)))
    return _all(eq)


def _is_key_array(x: Any) -> bool:
    return isinstance(getattr(x, "dtype", None), ExtendedDType)


def array_equiv(a1: Any, a2: Any) -> Any:
    """Whether two arrays are equal after broadcasting (False when they don't broadcast).

    Example:
        >>> import fluxion.numpy as jnp
        >>> bool(jnp.array_equiv(jnp.ones((2, 3)), jnp.ones(3)))
        True
    """
    a1, a2 = ensure_array(a1), ensure_array(a2)
    try:
        eq = uf.equal(a1, a2)
    except (ValueError, TypeError):
        return array(False)
    return _all(eq)
