"""Tangent values and their arithmetic, below every differentiation rule: which dtypes have
tangents (:func:`is_float`, :func:`tangent_aval`), the symbolic :class:`Zero`, the
:class:`UndefinedPrimal` marker of transpose rules, and the ``add_any`` primitive that sums
tangents and cotangents. :mod:`fluxion.transforms.ad` re-exports every name.

Example:
    >>> import numpy as np
    >>> from fluxion.core.avals import ShapedArray
    >>> tangent_aval(ShapedArray((2,), np.dtype("int32"))).str_short()
    'float0[2]'
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.dtypes import ExtendedDType
from fluxion.core.primitive import Primitive
from fluxion.transforms import array_ops, jet
from fluxion.transforms.staging import abstractify

__all__ = [
    "is_float", "tangent_aval", "Zero", "UndefinedPrimal", "is_undefined", "zeros_like_aval",
    "instantiate", "add_tangents", "add_any_p", "add_any", "aval_of",
]


def is_float(dt: np.dtype) -> bool:
    """True for dtypes whose tangents are themselves (floating and complex dtypes, and a
    user-defined extended dtype whose rules' ``tangent_dtype`` is itself)."""
    if isinstance(dt, ExtendedDType):
        return dtypes.is_user_extended(dt) and dt._rules.tangent_dtype(dt) == dt
    return dt.kind in "fc" or (dt.kind == "V" and dt != dtypes.float0
                               and dtypes.issubdtype(dt, np.inexact))


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """The aval of tangents of values of ``aval``: the same for floating and complex dtypes,
    ``float0`` for integers and booleans."""
    if is_float(aval.dtype):
        return aval
    if dtypes.is_user_extended(aval.dtype):
        return aval.to_tangent_aval()
    return ShapedArray(aval.shape, dtypes.float0)


class Zero:
    """A symbolic zero tangent or cotangent of aval ``aval`` (costs nothing to carry)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    @staticmethod
    def like(x: Any) -> "Zero":
        return Zero(tangent_aval(abstractify(x)))

    # JAX's name (``jax.interpreters.ad.Zero.from_primal_value``), used by rules libraries write
    from_primal_value = like

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """Marks a linear input of a primitive being transposed (only its aval is known)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x: Any) -> bool:
    """True for an :class:`UndefinedPrimal` (a linear input in a transpose rule)."""
    return type(x) is UndefinedPrimal


def zeros_like_aval(aval: ShapedArray) -> Any:
    """A concrete (or staged) array of zeros of ``aval``; NumPy zeros for ``float0``; for a
    user-defined extended dtype, its rules' ``zero`` broadcast to the shape (JAX's)."""
    dt = aval.dtype
    if dtypes.is_user_extended(dt):
        z = dt._rules.zero(dt)
        if not aval.shape:
            return z
        # broadcast the physical zero (its element may have dimensions of its own), then view it
        el = dt._rules.physical_element_aval(dt)
        n = len(aval.shape)
        p = array_ops.broadcast_in_dim(array_ops.convert(z, el.dtype), (*aval.shape, *el.shape),
                                       tuple(range(n, n + len(el.shape))))
        return array_ops.convert(p, dt)
    return array_ops.zeros(aval)


def instantiate(t: Any) -> Any:
    """``t`` itself, or explicit zeros when it is a symbolic :class:`Zero`."""
    if type(t) is Zero:
        return zeros_like_aval(t.aval)
    return t


def add_tangents(a: Any, b: Any) -> Any:
    """Sum of two tangents (or cotangents), either possibly :class:`Zero` or ``None``."""
    if a is None or type(a) is Zero:
        return b
    if b is None or type(b) is Zero:
        return a
    return add_any(a, b)


# Tangents and cotangents are summed with their own primitive (as JAX's add_any): the machinery
# sits below lax, and the sum of two tangents of one aval never broadcasts or promotes.
add_any_p = Primitive("add_any")


def _add_any_abstract_eval(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    if x.shape != y.shape or x.dtype != y.dtype:
        raise TypeError(f"add_any: tangents of different types {x.str_short()} and "
                        f"{y.str_short()} (a differentiation rule returned a wrong tangent)")
    return x if x.weak_type == y.weak_type else x.update(weak_type=False)


def _add_any_lowering(ctx: Any, x: str, y: str) -> str:
    return ctx.op("stablehlo.add", [x, y], operand_avals=list(ctx.avals_in))


def _add_any_jvp(primals: list, tangents: list) -> tuple:
    return add_any(*primals), add_tangents(*tangents) if any(
        type(t) is not Zero for t in tangents) else Zero(aval_of(primals[0]))


def _add_any_transpose(ct: Any, x: Any, y: Any) -> list:
    return [ct if is_undefined(x) else None, ct if is_undefined(y) else None]


def _add_any_batch(axis_data: Any, args: Sequence[Any], dims: Sequence[Any]) -> tuple:
    x, y = args
    dx, dy = dims
    if dx == dy:
        return add_any_p.bind(x, y), dx
    return add_any_p.bind(array_ops.bdim_to_front(x, dx, axis_data.size),
                          array_ops.bdim_to_front(y, dy, axis_data.size)), 0


add_any_p.abstract_eval = _add_any_abstract_eval
add_any_p.lowering = _add_any_lowering
add_any_p.jvp = _add_any_jvp
add_any_p.transpose = _add_any_transpose
add_any_p.batch = _add_any_batch
add_any_p.jet = jet.linear_prop(add_any_p)


def add_any(x: Any, y: Any) -> Any:
    """The sum of two tangents (or cotangents) of the same aval; a user-defined extended dtype
    sums with its rules' ``add`` (flax's fp32_max_grad takes the maximum), as JAX's add_any."""
    dt = getattr(x, "dtype", None)
    if dtypes.is_user_extended(dt):
        return dt._rules.add(dt, x, y)
    return add_any_p.bind(x, y)


def aval_of(x: Any) -> ShapedArray:
    """The aval of an array, tracer, NumPy value or Python scalar."""
    a = getattr(x, "aval", None)
    return a if isinstance(a, ShapedArray) else abstractify(x)
