"""Cumulative reductions along one axis: cumsum, cumprod, cummax, cummin, cumlogsumexp.

Each is a primitive with params ``axis`` and ``reverse``. The lowering is a ``reduce_window``
whose window spans the whole axis, padded by ``n - 1`` identity elements on one side (XLA
rewrites this into an efficient scan), as jax 0.10.2 lowers them on every platform.

On the TPU an axis longer than ``_TPU_BLOCK`` elements is scanned in blocks instead
(``_blocked_scan``): XLA's TPU compiler takes seconds over one window spanning a long axis (a
cumsum of 250,000 int32 elements: 10.9 s on a v5e, from jax's module and from ours). The axis is
padded with the identity to a multiple of ``_TPU_BLOCK``, each block is scanned by a window of
``_TPU_BLOCK``, the blocks' totals are scanned the same way (recursively, so no window is wider
than ``_TPU_BLOCK``), and each block's elements are combined with the total of the blocks before
it. Integer results are bit-identical to the one-window form, max/min of floats equal to it (NaNs
alike; a tie of -0.0 and +0.0 may keep the other zero); floating sums, products and logsumexps
add in another order and may differ by rounding. Shorter axes, and every other platform, keep
jax's one-window lowering.

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
from fluxion.lax._base import DtypeSet, attr_i64_array, type_error, value_error
from fluxion.lax.control_flow.prefix_scan import associative_scan
from fluxion.lax.windowed import combine, emit_reduce_window, identity_value
from fluxion.transforms import jet as _jet

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "cumsum_p", "cumprod_p",
           "cummax_p", "cummin_p", "cumlogsumexp_p"]


# On the TPU, axes longer than this are scanned in blocks of this many elements (see the
# module's docstring); up to it the module is jax's. Read when a program is lowered. Measured on a TPU v5e
# (tools/tpu_cumsum_compile.py, 2026-12-07; XLA compile int32/float32, then one run): n=250,000
# one window (jax) 11.1/11.5 s, 3.9 ms; blocks of 128 (three levels) 9.7/10.6 s, 3.5 ms; blocks
# of 1024 (two levels) 0.34/0.57 s, 1.6 ms. n=4,000,000: 6.4/3.6 s, 5.1 ms; 6.9/7.5 s; 0.89/0.90 s,
# 2.8/4.9 ms. n=10,000: 0.36/0.85 s; 0.63/0.40 s; 0.25/0.57 s, all ~1.4-1.7 ms.
_TPU_BLOCK = 1024


def _window_scan(ctx: Any, x: str, a: ShapedArray, axis: int, reverse: bool, kind: str) -> str:
    """One ``reduce_window`` spanning axis ``axis`` of ``x`` (aval ``a``): jax's lowering."""
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
        window, ones, padding, ones, ones, [a])


def _pad(ctx: Any, x: str, a: ShapedArray, axis: int, lo: int, hi: int, value: str
         ) -> tuple[str, ShapedArray]:
    """``x`` padded with the scalar ``value`` by ``lo``/``hi`` elements along ``axis``."""
    shape = list(a.shape)
    shape[axis] += lo + hi
    out = a.update(shape=tuple(shape))
    low, high = [0] * a.ndim, [0] * a.ndim
    low[axis], high[axis] = lo, hi
    scalar = ShapedArray((), a.dtype)
    y = ctx.op1("stablehlo.pad", [x, value], out, [a, scalar],
                f"edge_padding_high = {attr_i64_array(high)}, "
                f"edge_padding_low = {attr_i64_array(low)}, "
                f"interior_padding = {attr_i64_array([0] * a.ndim)}")
    return y, out


def _slice(ctx: Any, x: str, a: ShapedArray, axis: int, start: int, stop: int
           ) -> tuple[str, ShapedArray]:
    """Elements ``start:stop`` of ``x`` along ``axis``."""
    shape = list(a.shape)
    shape[axis] = stop - start
    out = a.update(shape=tuple(shape))
    begin, end = [0] * a.ndim, list(a.shape)
    begin[axis], end[axis] = start, stop
    y = ctx.op1("stablehlo.slice", [x], out, [a],
                f"start_indices = {attr_i64_array(begin)}, limit_indices = {attr_i64_array(end)}, "
                f"strides = {attr_i64_array([1] * a.ndim)}")
    return y, out


def _reshape(ctx: Any, x: str, a: ShapedArray, shape: tuple[int, ...]) -> tuple[str, ShapedArray]:
    out = a.update(shape=tuple(shape))
    return ctx.op1("stablehlo.reshape", [x], out, [a]), out


def _blocked_scan(ctx: Any, x: str, a: ShapedArray, axis: int, reverse: bool, kind: str,
                  block: int) -> str:
    """The scan of ``x`` (aval ``a``) along ``axis`` with no window wider than ``block``.

    The axis (n elements) is padded with the identity to ``nb * block`` (after the end, or
    before the start when ``reverse``: the padding is where the scan ends, so the reverse
    form mirrors the forward one) and reshaped to ``(nb, block)``; a window of ``block`` scans
    each block, the blocks' totals (each block's last scanned element, its first when
    ``reverse``) are scanned the same way (recursively while ``nb > block``) and shifted by one
    block, so that each block sees the total of those before it, which is combined with its own
    scan. The result is sliced back to n elements.
    """
    n = a.shape[axis]
    if n <= block:
        return _window_scan(ctx, x, a, axis, reverse, kind)
    nb = -(-n // block)
    extra = nb * block - n
    ident = ctx.constant(identity_value(kind, a.dtype), ShapedArray((), a.dtype))
    if extra:
        x, a = _pad(ctx, x, a, axis, extra if reverse else 0, 0 if reverse else extra, ident)
    pre, post = a.shape[:axis], a.shape[axis + 1:]
    xb, ab = _reshape(ctx, x, a, pre + (nb, block) + post)
    inner = _window_scan(ctx, xb, ab, axis + 1, reverse, kind)
    last, al = _slice(ctx, inner, ab, axis + 1, *((0, 1) if reverse else (block - 1, block)))
    totals, at = _reshape(ctx, last, al, pre + (nb,) + post)
    scanned = _blocked_scan(ctx, totals, at, axis, reverse, kind, block)
    # the total of the blocks before each block: identity for the first block
    if reverse:
        before, ab4 = _slice(ctx, scanned, at, axis, 1, nb)
        before, _ = _pad(ctx, before, ab4, axis, 0, 1, ident)
    else:
        before, ab4 = _slice(ctx, scanned, at, axis, 0, nb - 1)
        before, _ = _pad(ctx, before, ab4, axis, 1, 0, ident)
    dims = [d for d in range(ab.ndim) if d != axis + 1]
    spread = ctx.op1("stablehlo.broadcast_in_dim", [before], ab, [at],
                     f"broadcast_dimensions = {attr_i64_array(dims)}")
    out = combine(ctx, kind, spread, inner, ab)
    flat, af = _reshape(ctx, out, ab, a.shape)
    if extra:
        flat, af = _slice(ctx, flat, af, axis, *((extra, n + extra) if reverse else (0, n)))
    return flat


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
        return _window_scan(ctx, x, ctx.avals_in[0], axis, reverse, kind)

    def tpu_lowering(ctx: Any, x: str, *, axis: int, reverse: bool) -> str:
        # one window up to _TPU_BLOCK elements (jax's module), blocks beyond
        return _blocked_scan(ctx, x, ctx.avals_in[0], axis, reverse, kind, _TPU_BLOCK)

    p.abstract_eval = abstract_eval
    p.lowering = lowering
    p.platform_lowerings["tpu"] = tpu_lowering
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
cumsum_p.jet = _jet.linear_prop(cumsum_p)


def cumsum(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Cumulative sum along ``axis`` (from the end when ``reverse``).

    On the TPU an axis longer than 1024 elements is scanned in blocks (see the module's
    docstring): floating results may differ from jax's there by rounding; integers do not.

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


def _scan_jet(combine: Any) -> Any:
    """cumprod/cummax/cummin: the jet of the parallel prefix scan of ``combine`` (as JAX, whose
    rules differentiate the scan, not the reduce_window)."""
    def rule(primals: list, series: list, *, axis: int, reverse: bool) -> tuple:
        return _jet.comp_prop(lambda x: associative_scan(combine, x, axis=axis,
                                                         reverse=reverse))(primals, series)
    return rule


cumprod_p.jet = _scan_jet(ew.mul)


def cumprod(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Cumulative product along ``axis``.

    On the TPU an axis longer than 1024 elements is scanned in blocks (see the module's
    docstring): floating results may differ from jax's there by rounding; integers do not.

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
cummax_p.jet = _scan_jet(ew.max)


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
cummin_p.jet = _scan_jet(ew.min)


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

    On the TPU an axis longer than 1024 elements is scanned in blocks (see the module's
    docstring): floating results may differ from jax's there by rounding; integers do not.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> [round(v, 4) for v in lax.cumlogsumexp(jnp.array([0.0, 0.0])).tolist()]
        [0.0, 0.6931]
    """
    return cumlogsumexp_p.bind(operand, axis=_axis(operand, axis), reverse=bool(reverse))
