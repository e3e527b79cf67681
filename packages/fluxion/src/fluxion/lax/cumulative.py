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

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import elementwise as ew
from fluxion.lax import reductions as rd
from fluxion.lax import shape_ops as so
from fluxion.lax import sharding_rules as _sh
from fluxion.lax import transcendental as tr
from fluxion.lax._base import DtypeSet, type_error, value_error
from fluxion.lax.windowed import combine, emit_reduce_window, identity_value

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "cumsum_p", "cumprod_p",
           "cummax_p", "cummin_p", "cumlogsumexp_p"]


def _def_cumulative(name: str, kind: str, accepted: DtypeSet) -> Primitive:
    """A cumulative primitive combining with ``kind``: its shape rule, lowering and batching
    rule (autodiff rules are set per primitive)."""
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
    p.batch = _rules.axis_param_batch_rule(p, ("axis",))
    return p


_num = DtypeSet("numeric", "iufc")
_real = DtypeSet("integer or floating", "iuf")
_float = DtypeSet("floating", "f")


def _axis(operand: Any, axis: int) -> int:
    nd = operand.ndim if hasattr(operand, "ndim") else len(getattr(operand, "shape", ()) or ())
    axis = int(axis)
    return axis + nd if -nd <= axis < 0 else axis


cumsum_p = _def_cumulative("cumsum", "sum", _num)
cumsum_p.sharding = _sh.unsharded_dim(
    "Input should be unsharded over the axis being reduced. Got input type={t} and "
    "axis={d}", "axis")
_rules.deflinear(cumsum_p, lambda ct, x, *, axis, reverse: [
    cumsum_p.bind(ct, axis=axis, reverse=not reverse)])


def cumsum(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Cumulative sum along ``axis`` (from the end when ``reverse``).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.cumsum(jnp.array([1.0, 2.0, 3.0]), reverse=True).tolist()
        [6.0, 5.0, 3.0]
    """
    return cumsum_p.bind(operand, axis=_axis(operand, axis), reverse=bool(reverse))


cumprod_p = _def_cumulative("cumprod", "prod", _num)
cumprod_p.sharding = _sh.unsharded_dim(
    "Input should be unsharded over the axis being reduced. Got input type={t} and "
    "axis={d}", "axis")


def _cumprod_jvp(primals: list, tangents: list, *, axis: int, reverse: bool) -> tuple:
    # d out_i = out_i * sum_{j <= i} t_j / x_j  (valid away from zeros of x)
    (x,), (t,) = primals, tangents
    out = cumprod_p.bind(x, axis=axis, reverse=reverse)
    return out, ew.mul(out, cumsum_p.bind(ew.div(t, x), axis=axis, reverse=reverse))


cumprod_p.jvp = _cumprod_jvp


def cumprod(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Cumulative product along ``axis``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.cumprod(jnp.array([1, 2, 3])).tolist()
        [1, 2, 6]
    """
    return cumprod_p.bind(operand, axis=_axis(operand, axis), reverse=bool(reverse))


def _cumulative_extremum_jvp(prim: Primitive) -> Any:
    """The JVP of cummax/cummin: the tangent of the element holding the running extremum (the
    last one on ties)."""

    def rule(primals: list, tangents: list, *, axis: int, reverse: bool) -> tuple:
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axis=axis, reverse=reverse)
        xa = _rules.aval_of(x)
        idx = so.broadcasted_iota(np.int32, xa.shape, axis)
        if reverse:
            idx = ew.sub(_rules.const_like(idx, xa.shape[axis] - 1), idx)
        at = ew.select(ew.eq(x, out), idx, ew.mul(idx, _rules.const_like(idx, 0)))
        src = cummax_p.bind(at, axis=axis, reverse=reverse)
        if reverse:
            src = ew.sub(_rules.const_like(src, xa.shape[axis] - 1), src)
        # gather t along axis at src via a one-hot contraction
        n = xa.shape[axis]
        oh_shape = xa.shape + (n,)
        nd = xa.ndim
        onehot = ew.eq(so.broadcast_in_dim(src, oh_shape, tuple(range(nd))),
                       so.broadcasted_iota(np.int32, oh_shape, nd))
        perm = tuple(i for i in range(nd) if i != axis) + (axis,)
        tt = so.transpose(t, perm)  # axis last
        tt_b = so.broadcast_in_dim(tt, oh_shape, tuple(i for i in range(nd + 1) if i != axis))
        zero = ew.mul(tt_b, _rules.const_like(tt_b, 0))
        return out, rd.reduce_sum(ew.select(onehot, tt_b, zero), (nd,))

    return rule


cummax_p = _def_cumulative("cummax", "max", _real)
cummax_p.sharding = _sh.unsharded_dim(
    "Input should be unsharded over the axis being reduced. Got input type={t} and "
    "axis={d}", "axis")
cummax_p.jvp = _cumulative_extremum_jvp(cummax_p)


def cummax(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running maximum along ``axis``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.cummax(jnp.array([1, 3, 2])).tolist()
        [1, 3, 3]
    """
    return cummax_p.bind(operand, axis=_axis(operand, axis), reverse=bool(reverse))


cummin_p = _def_cumulative("cummin", "min", _real)
cummin_p.sharding = _sh.unsharded_dim(
    "Input should be unsharded over the axis being reduced. Got input type={t} and "
    "axis={d}", "axis")
cummin_p.jvp = _cumulative_extremum_jvp(cummin_p)


def cummin(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running minimum along ``axis``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.cummin(jnp.array([3, 1, 2])).tolist()
        [3, 1, 1]
    """
    return cummin_p.bind(operand, axis=_axis(operand, axis), reverse=bool(reverse))


cumlogsumexp_p = _def_cumulative("cumlogsumexp", "logaddexp", _float)
cumlogsumexp_p.sharding = _sh.unsharded_dim(
    "Input should be unsharded over the axis being reduced. Got input type={t} and "
    "axis={d}", "axis")


def _cumlogsumexp_jvp(primals: list, tangents: list, *, axis: int, reverse: bool) -> tuple:
    # d out_i = sum_{j <= i} t_j exp(x_j - out_i), with x shifted by its (finite) max so that
    # the exponentials cannot overflow
    (x,), (t,) = primals, tangents
    out = cumlogsumexp_p.bind(x, axis=axis, reverse=reverse)
    xa = _rules.aval_of(x)
    m = rd.reduce_max(x, tuple(range(xa.ndim)))
    m = ew.select(ew.is_finite(m), m, ew.mul(m, _rules.const_like(m, 0)))
    w = tr.exp(ew.sub(x, m))
    num = cumsum_p.bind(ew.mul(t, w), axis=axis, reverse=reverse)
    return out, ew.mul(num, tr.exp(ew.sub(m, out)))


cumlogsumexp_p.jvp = _cumlogsumexp_jvp


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running ``log(sum(exp(x)))`` along ``axis``, computed without overflow.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> [round(v, 4) for v in lax.cumlogsumexp(jnp.array([0.0, 0.0])).tolist()]
        [0.0, 0.6931]
    """
    return cumlogsumexp_p.bind(operand, axis=_axis(operand, axis), reverse=bool(reverse))
