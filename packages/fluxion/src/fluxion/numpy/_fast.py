"""Fast paths for the commonest NumPy calls: operands that need no promotion or broadcasting.

A binary ufunc on two arrays of the same dtype, weak type and shape (or a rank-0 operand), or on
an array (or a value being staged by jit) and a Python number of a compatible kind, goes straight
to its lax op. Everything else
takes the general path in ``_util.promote_args``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.backend.array import Array
from fluxion.core import dtypes
from fluxion.core.trace import EVAL, STATE, Tracer
from fluxion.lax import convert_element_type_p
from fluxion.numpy._eager import backend
from fluxion.transforms.staging import StagingTracer

__all__ = ["binary_operands"]

_dispatch: Any = None


_INT_RANGES: dict = {}
_I32 = 2 ** 31


def _fits(v: int, dt: Any) -> bool:
    r = _INT_RANGES.get(dt)
    if r is None:
        info = np.iinfo(dt)
        r = _INT_RANGES[dt] = (int(info.min), int(info.max))
    return r[0] <= v <= r[1]


def _scalar_joins(v: Any, dt: Any) -> bool:
    """Whether Python number ``v`` beside an array of ``dt`` promotes to ``dt`` itself (so the
    pair needs only ``v`` converted)."""
    kind = getattr(dt, "kind", "?")  # extended dtypes have none: the general path refuses them
    if not ((kind == "f" or kind == "c") and dt.isbuiltin or (kind in "iu" and type(v) is int)):
        return False
    if kind in "iu" and not _fits(v, dt):  # the general path wraps or raises, as JAX does
        return False
    if type(v) is int and not -_I32 <= v < _I32 and not _fits(v, dtypes.default_int_dtype()):
        return False  # as JAX: a Python int must fit the default integer type (OverflowError)
    return True


def _scalar_like(v: Any, k: Any) -> Any:
    global _dispatch
    if not _scalar_joins(v, k.dtype):
        return None
    if _dispatch is None:
        _dispatch = backend()[0]
    return _dispatch.scalar_constant(v, k.dtype, k.weak_type)


def _staged_scalar(v: Any, t: StagingTracer) -> Any:
    """Python number ``v`` beside ``t``, a value of the function being staged now, as the literal
    the general path's conversion folds to (the same program, without its ~15 us of promotion
    work per operation: ``x * 0.5``, ``x > 0`` are in most traced functions), or None."""
    aval = t.atom.aval
    if t._interp is not STATE.interp or not _scalar_joins(v, aval.dtype):
        return None
    return StagingTracer(t._interp, convert_element_type_p.fold(
        v, new_dtype=aval.dtype, weak_type=aval.weak_type))


def binary_operands(x: Any, y: Any) -> tuple[Any, Any] | None:
    """``(x, y)`` ready for the lax op when no promotion work is needed, else None."""
    tx, ty = type(x), type(y)
    if tx is Array:
        kx = x._k
        if ty is Array:
            ky = y._k
            if (kx.dtype == ky.dtype and kx.weak_type == ky.weak_type
                    and (kx.shape == ky.shape or not kx.shape or not ky.shape)):
                return x, y
            return None
        if (ty is float or ty is int) and STATE.interp is EVAL:
            c = _scalar_like(y, kx)
            if c is not None:
                return x, c
        return None
    if ty is Array:
        if (tx is float or tx is int) and STATE.interp is EVAL:
            c = _scalar_like(x, y._k)
            if c is not None:
                return c, y
        return None
    if isinstance(x, Tracer) and isinstance(y, Tracer):
        ax, ay = x.aval, y.aval
        if (ax.dtype == ay.dtype and ax.weak_type == ay.weak_type
                and (ax.shape == ay.shape or not ax.shape or not ay.shape)):
            return x, y
        return None
    if tx is StagingTracer and (ty is float or ty is int):
        c = _staged_scalar(y, x)
        return None if c is None else (x, c)
    if ty is StagingTracer and (tx is float or tx is int):
        c = _staged_scalar(x, y)
        return None if c is None else (c, y)
    return None
