"""Cumulative reductions along one axis: cumsum, cumprod, cummax, cummin, cumlogsumexp.

Each is a primitive with params ``axis`` and ``reverse``. The lowering is a ``reduce_window``
whose window spans the whole axis, padded by ``n - 1`` identity elements on one side (XLA
rewrites this into an efficient scan).

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.cumsum(jnp.array([1, 2, 3])).tolist()
    [1, 3, 6]
"""

from __future__ import annotations

from typing import Any

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax._base import DtypeSet, type_error, value_error
from fluxion.lax.windowed import combine, emit_reduce_window, identity_value

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "cumsum_p", "cumprod_p",
           "cummax_p", "cummin_p", "cumlogsumexp_p"]


def _def_cumulative(name: str, kind: str, accepted: DtypeSet) -> Primitive:
    p = Primitive(name)
    fun = f"lax.{name}"

    def abstract_eval(x: ShapedArray, *, axis: int, reverse: bool) -> ShapedArray:
        if x.dtype not in accepted:
            raise type_error(fun, f"does not accept dtype {x.dtype.name}; it accepts "
                             f"{accepted.name} dtypes")
        if not 0 <= axis < x.ndim:
            raise value_error(fun, f"axis {axis} is out of bounds for an array of shape {x.shape}")
        return x

    def lowering(ctx: Any, x: str, *, axis: int, reverse: bool) -> str:
        a = ctx.avals_in[0]
        n = a.shape[axis]
        if n == 0:
            return x
        scalar = ShapedArray((), a.dtype)
        init = ctx.constant(identity_value(kind, a.dtype), scalar)
        nd = a.ndim
        window = [1] * nd
        window[axis] = n
        padding = [(0, 0)] * nd
        padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
        ones = [1] * nd
        return emit_reduce_window(
            ctx, [x], [init], [a], lambda r, args: [combine(r, kind, args[0], args[1], scalar)],
            window, ones, padding, ones, ones, ctx.avals_out)

    p.abstract_eval = abstract_eval
    p.lowering = lowering
    return p


_num = DtypeSet("numeric", "iufc")
_real = DtypeSet("integer or floating", "iuf")
_float = DtypeSet("floating", "f")

cumsum_p = _def_cumulative("cumsum", "sum", _num)
cumprod_p = _def_cumulative("cumprod", "prod", _num)
cummax_p = _def_cumulative("cummax", "max", _real)
cummin_p = _def_cumulative("cummin", "min", _real)
cumlogsumexp_p = _def_cumulative("cumlogsumexp", "logaddexp", _float)


def _axis(operand: Any, axis: int) -> int:
    nd = operand.ndim if hasattr(operand, "ndim") else len(getattr(operand, "shape", ()) or ())
    axis = int(axis)
    return axis + nd if -nd <= axis < 0 else axis


def cumsum(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Cumulative sum along ``axis`` (from the end when ``reverse``).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.cumsum(jnp.array([1.0, 2.0, 3.0]), reverse=True).tolist()
        [6.0, 5.0, 3.0]
    """
    return cumsum_p.bind(operand, axis=_axis(operand, axis), reverse=bool(reverse))


def cumprod(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Cumulative product along ``axis``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.cumprod(jnp.array([1, 2, 3])).tolist()
        [1, 2, 6]
    """
    return cumprod_p.bind(operand, axis=_axis(operand, axis), reverse=bool(reverse))


def cummax(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running maximum along ``axis``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.cummax(jnp.array([1, 3, 2])).tolist()
        [1, 3, 3]
    """
    return cummax_p.bind(operand, axis=_axis(operand, axis), reverse=bool(reverse))


def cummin(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running minimum along ``axis``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.cummin(jnp.array([3, 1, 2])).tolist()
        [3, 1, 1]
    """
    return cummin_p.bind(operand, axis=_axis(operand, axis), reverse=bool(reverse))


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running ``log(sum(exp(x)))`` along ``axis``, computed without overflow.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> [round(v, 4) for v in lax.cumlogsumexp(jnp.array([0.0, 0.0])).tolist()]
        [0.0, 0.6931]
    """
    return cumlogsumexp_p.bind(operand, axis=_axis(operand, axis), reverse=bool(reverse))
