"""Reductions over axes: reduce_sum, reduce_max, reduce_min, reduce_prod, reduce_and/or/xor.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> float(lax.reduce_sum(jnp.ones((2, 3)), (0, 1)))
    6.0
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax._base import DtypeSet, attr_i64_array, dtype_kind_check, type_error


def _identity(kind: str, dtype: np.dtype) -> Any:
    if kind == "sum" or kind == "or" or kind == "xor":
        return np.zeros((), dtype)
    if kind == "prod":
        return np.ones((), dtype)
    if kind == "and":
        return np.array(True) if dtype == np.bool_ else np.array(-1).astype(dtype)
    if dtypes.issubdtype(dtype, np.floating):
        return np.array(-np.inf if kind == "max" else np.inf).astype(dtype)
    if dtype == np.bool_:
        return np.array(kind == "min")
    info = dtypes.iinfo(dtype)
    return np.array(info.min if kind == "max" else info.max).astype(dtype)


def _def_reduce(name: str, kind: str, hlo: str, accepted: DtypeSet) -> Primitive:
    p = Primitive(name)

    def abstract_eval(x: ShapedArray, *, axes: tuple[int, ...]) -> ShapedArray:
        dtype_kind_check(name, accepted, x)
        for a in axes:
            if not 0 <= a < x.ndim:
                raise type_error(f"lax.{name}", f"axis {a} out of range for shape {x.shape}")
        if len(set(axes)) != len(axes):
            raise type_error(f"lax.{name}", f"duplicate axes in {axes}")
        return ShapedArray(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype,
                           x.weak_type)

    def lowering(ctx: Any, x: str, *, axes: tuple[int, ...]) -> str:
        a = ctx.avals_in[0]
        scalar = ShapedArray((), a.dtype)
        init = ctx.constant(_identity(kind, a.dtype), scalar)

        def body(rctx: Any, args: list[str]) -> list[str]:
            return [rctx.op1(hlo, args, scalar, [scalar, scalar])]

        region = ctx.region([scalar, scalar], body, [scalar])
        return ctx.op("stablehlo.reduce", [x, init], operand_avals=[a, scalar], regions=[region],
                      attrs=f"dimensions = {attr_i64_array(axes)}")

    p.abstract_eval = abstract_eval
    p.lowering = lowering
    p.props["identity"] = lambda dtype: _identity(kind, dtype)
    return p


_num = DtypeSet("numeric", "iufc")
_ordered = DtypeSet("boolean, integer or floating", "biuf")
_logical = DtypeSet("boolean or integer", "biu")

reduce_sum_p = _def_reduce("reduce_sum", "sum", "stablehlo.add", _num)
reduce_prod_p = _def_reduce("reduce_prod", "prod", "stablehlo.multiply", _num)
reduce_max_p = _def_reduce("reduce_max", "max", "stablehlo.maximum", _ordered)
reduce_min_p = _def_reduce("reduce_min", "min", "stablehlo.minimum", _ordered)
reduce_and_p = _def_reduce("reduce_and", "and", "stablehlo.and", _logical)
reduce_or_p = _def_reduce("reduce_or", "or", "stablehlo.or", _logical)
reduce_xor_p = _def_reduce("reduce_xor", "xor", "stablehlo.xor", _logical)


def _axes(operand: Any, axes: Sequence[int]) -> tuple[int, ...]:
    nd = operand.ndim if hasattr(operand, "ndim") else np.ndim(operand)
    return tuple(sorted(int(a) % nd if nd else int(a) for a in axes))


def reduce_sum(operand: Any, axes: Sequence[int]) -> Any:
    """Sum of ``operand`` over ``axes``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.reduce_sum(jnp.ones((2, 3)), (1,)).tolist()
        [3.0, 3.0]
    """
    return reduce_sum_p.bind(operand, axes=_axes(operand, axes))


def reduce_prod(operand: Any, axes: Sequence[int]) -> Any:
    """Product of ``operand`` over ``axes``."""
    return reduce_prod_p.bind(operand, axes=_axes(operand, axes))


def reduce_max(operand: Any, axes: Sequence[int]) -> Any:
    """Maximum of ``operand`` over ``axes``."""
    return reduce_max_p.bind(operand, axes=_axes(operand, axes))


def reduce_min(operand: Any, axes: Sequence[int]) -> Any:
    """Minimum of ``operand`` over ``axes``."""
    return reduce_min_p.bind(operand, axes=_axes(operand, axes))


def reduce_and(operand: Any, axes: Sequence[int]) -> Any:
    """Logical/bitwise AND of ``operand`` over ``axes``."""
    return reduce_and_p.bind(operand, axes=_axes(operand, axes))


def reduce_or(operand: Any, axes: Sequence[int]) -> Any:
    """Logical/bitwise OR of ``operand`` over ``axes``."""
    return reduce_or_p.bind(operand, axes=_axes(operand, axes))


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
    """Logical/bitwise XOR of ``operand`` over ``axes``."""
    return reduce_xor_p.bind(operand, axes=_axes(operand, axes))
