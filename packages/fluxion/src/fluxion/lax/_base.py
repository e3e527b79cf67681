"""Shared pieces of the lax modules: errors, shape/dtype rules and lowering helpers.

Each primitive is defined in its family module with its rules beside it; this module holds what
many families share: errors naming the user's source line, the elementwise shape and dtype rules
(:func:`standard_unop`, :func:`standard_binop`), lowering helpers, and the builders
:func:`unop_primitive` / :func:`binop_primitive` of a whole elementwise primitive (abstract eval,
lowering and batching rule; its JVP is set beside it).

Example:
    >>> from fluxion.lax._base import DtypeSet, unop_primitive
    >>> p = unop_primitive("my_sin", DtypeSet("floating", "f"), "stablehlo.sine")
    >>> from fluxion.core.avals import ShapedArray
    >>> p.abstract_eval(ShapedArray((2,), "float32")).str_short()
    'f32[2]'
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.errors import user_source_line
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules

__all__ = ["type_error", "value_error", "broadcasting_shape", "standard_binop", "standard_unop",
           "unop_primitive", "binop_primitive", "broadcast_operand", "elementwise_lowering",
           "dtype_kind_check", "same_dtypes", "attr_i64_array", "DtypeSet"]


def _at() -> str:
    return f" (at {user_source_line()})"


def type_error(fun: str, msg: str) -> TypeError:
    """A TypeError naming the function and the user's source line."""
    return TypeError(f"{fun}: {msg}{_at()}")


def value_error(fun: str, msg: str) -> ValueError:
    """A ValueError naming the function and the user's source line."""
    return ValueError(f"{fun}: {msg}{_at()}")


def broadcasting_shape(name: str, *avals: ShapedArray) -> tuple[int, ...]:
    """The result shape of an n-ary elementwise op: rank-0 operands broadcast, equal ranks are
    required otherwise, and size-1 dimensions broadcast."""
    shapes = [a.shape for a in avals if a.shape]
    if not shapes:
        return ()
    first = shapes[0]
    if all(s == first for s in shapes):  # the common case, with nothing to broadcast
        return tuple(first)
    rank = len(first)
    if any(len(s) != rank for s in shapes):
        raise type_error(name, "arrays must have the same number of dimensions, got "
                         + ", ".join(str(s) for s in shapes))
    out = []
    for sizes in zip(*shapes):
        nontrivial = {d for d in sizes if d != 1}
        if len(nontrivial) > 1:
            raise type_error(name, "incompatible shapes for broadcasting: "
                             + ", ".join(str(s) for s in shapes))
        out.append(nontrivial.pop() if nontrivial else 1)
    return tuple(out)


class DtypeSet:
    """A named set of accepted dtype kinds, e.g. ``DtypeSet("floating", "fc")``."""

    def __init__(self, name: str, kinds: str, extra: Callable[[np.dtype], bool] | None = None):
        self.name, self.kinds, self.extra = name, kinds, extra
        self._known: dict[Any, bool] = {}  # dtype -> accepted (asked on every staged operation)

    def __contains__(self, dtype: np.dtype) -> bool:
        hit = self._known.get(dtype)
        if hit is None:
            hit = self._known[dtype] = bool(
                _kind(dtype) in self.kinds or (self.extra is not None and self.extra(dtype)))
        return hit


def _kind(dtype: np.dtype) -> str:
    if isinstance(dtype, dtypes.ExtendedDType):  # keys, user-defined: no arithmetic of their own
        return "?"
    if dtype.kind in "biufc" and dtype.isbuiltin:
        return dtype.kind
    if dtypes.issubdtype(dtype, np.floating):
        return "f"
    if dtypes.issubdtype(dtype, np.signedinteger):
        return "i"
    if dtypes.issubdtype(dtype, np.unsignedinteger):
        return "u"
    return "?"


def dtype_kind_check(name: str, accepted: DtypeSet, *avals: ShapedArray) -> None:
    """Raise a TypeError naming ``name`` unless every aval's dtype is in ``accepted``."""
    for a in avals:
        if a.dtype not in accepted:
            raise type_error(name, f"does not accept dtype {a.dtype.name}; it accepts {accepted.name} "
                             "dtypes")


def same_dtypes(name: str, *avals: ShapedArray) -> np.dtype:
    """The common dtype of ``avals``; a TypeError (pointing to the promoting ``jnp`` function)
    when they differ."""
    dts = [a.dtype for a in avals]
    if any(d != dts[0] for d in dts[1:]):
        base = name.split("[")[0]
        raise type_error(f"lax.{base}", "requires arguments to have the same dtypes, got "
                         + ", ".join(d.name for d in dts)
                         + f". (Tip: jnp.{base} is a similar function that does automatic type "
                         "promotion on inputs.)")
    return dts[0]


def standard_binop(prim: Primitive, accepted: DtypeSet, result_dtype: Any = None) -> None:
    """Set the abstract eval of an elementwise n-ary op with same-dtype operands."""
    name = prim.name

    def abstract_eval(*avals: ShapedArray) -> ShapedArray:
        if len(avals) == 2:  # the common case first: one dtype, equal shapes or a scalar
            x, y = avals
            dt, xs, ys = x.dtype, x.shape, y.shape
            if y.dtype == dt and dt in accepted and (xs == ys or not xs or not ys):
                return ShapedArray(xs if xs else ys, _out_dtype(dt), x.weak_type and y.weak_type)
        dt = same_dtypes(name, *avals)
        dtype_kind_check(name, accepted, *avals)
        shape = broadcasting_shape(name, *avals)
        weak = all(a.weak_type for a in avals)
        # Like JAX: the result is weak iff every operand is, whatever the result dtype (so
        # ``lax.lt(1.0, 2.0)`` is a weakly typed bool).
        return ShapedArray(shape, _out_dtype(dt), weak)

    def _out_dtype(dt: np.dtype) -> np.dtype:
        if result_dtype is None:
            return dt
        return result_dtype(dt) if callable(result_dtype) else np.dtype(result_dtype)

    prim.abstract_eval = abstract_eval


def standard_unop(prim: Primitive, accepted: DtypeSet, result_dtype: Any = None) -> None:
    """Set the abstract eval of an elementwise unary op."""
    name = prim.name

    def abstract_eval(x: ShapedArray, **params: Any) -> ShapedArray:
        dtype_kind_check(name, accepted, x)
        if result_dtype is None:
            return x
        out_dt = result_dtype(x.dtype) if callable(result_dtype) else np.dtype(result_dtype)
        return ShapedArray(x.shape, out_dt, x.weak_type)

    prim.abstract_eval = abstract_eval


def attr_i64_array(values: Sequence[int]) -> str:
    """An MLIR ``array<i64: ...>`` attribute of ``values``."""
    return f"array<i64: {', '.join(str(int(v)) for v in values)}>" if len(values) else "array<i64>"


def broadcast_operand(ctx: Any, x: str, aval: ShapedArray, shape: tuple[int, ...]) -> str:
    """``x`` (of ``aval``) broadcast to ``shape`` in the lowering, when it differs."""
    if aval.shape == tuple(shape):
        return x
    out = aval.update(shape=shape)
    # broadcast_in_dim also expands size-1 operand dimensions, so equal ranks map one to one.
    dims = range(len(shape)) if aval.shape else ()
    return ctx.op1("stablehlo.broadcast_in_dim", [x], out, [aval],
                   f"broadcast_dimensions = {attr_i64_array(list(dims))}")


def elementwise_lowering(op_name: str) -> Callable[..., str]:
    """A lowering rule emitting ``op_name`` on operands broadcast to the output shape."""

    def rule(ctx: Any, *args: str) -> str:
        out = ctx.avals_out[0]
        ops, in_avals = [], []
        for x, a in zip(args, ctx.avals_in):
            ops.append(broadcast_operand(ctx, x, a, out.shape))
            in_avals.append(a if a.shape == out.shape else a.update(shape=out.shape))
        return ctx.op(op_name, ops, operand_avals=in_avals)

    return rule


def emit_extremum(ctx: Any, op_name: str, x: str, y: str, aval: ShapedArray) -> str:
    """``stablehlo.maximum``/``minimum`` of two same-shape values of ``aval``; complex values are
    ordered lexicographically (real part, then imaginary part) as NumPy and JAX order them, where
    XLA's own complex maximum compares only one part."""
    if aval.dtype.kind != "c":
        return ctx.op1(op_name, [x, y], aval, [aval, aval])
    direction = "GT" if op_name == "stablehlo.maximum" else "LT"
    part = aval.update(dtype=np.dtype(np.float32 if aval.dtype == np.complex64 else np.float64))
    pred = aval.update(dtype=np.dtype(bool))

    def cmp(a: str, b: str, how: str) -> str:
        return ctx.op1("stablehlo.compare", [a, b], pred, [part, part],
                       f"comparison_direction = #stablehlo<comparison_direction {how}>, "
                       "compare_type = #stablehlo<comparison_type FLOAT>")

    rx, ry = (ctx.op1("stablehlo.real", [v], part, [aval]) for v in (x, y))
    ix, iy = (ctx.op1("stablehlo.imag", [v], part, [aval]) for v in (x, y))
    pick_x = ctx.op1("stablehlo.select", [cmp(rx, ry, "EQ"), cmp(ix, iy, direction),
                                          cmp(rx, ry, direction)], pred, [pred, pred, pred])
    return ctx.op1("stablehlo.select", [pick_x, x, y], aval, [pred, aval, aval])


def extremum_lowering(op_name: str) -> Callable[..., str]:
    """The lowering of ``max``/``min``: :func:`emit_extremum` on operands broadcast to the output."""

    def rule(ctx: Any, x: str, y: str) -> str:
        out = ctx.avals_out[0]
        (a, b), full = ctx.avals_in, ctx.avals_in[0].update(shape=out.shape)
        return emit_extremum(ctx, op_name, broadcast_operand(ctx, x, a, out.shape),
                             broadcast_operand(ctx, y, b, out.shape), full)

    return rule


def unop_primitive(name: str, accepted: DtypeSet, lowering: str | Callable[..., str],
                   result_dtype: Any = None) -> Primitive:
    """An elementwise one-operand primitive: the standard abstract eval (:func:`standard_unop`),
    ``lowering`` (a StableHLO/CHLO op name, or a lowering rule) and the shape-preserving
    batching rule."""
    p = Primitive(name)
    standard_unop(p, accepted, result_dtype)
    p.lowering = elementwise_lowering(lowering) if isinstance(lowering, str) else lowering
    p.batch = _rules.unary_batch_rule(p)
    return p


def binop_primitive(name: str, accepted: DtypeSet, lowering: str | Callable[..., str],
                    result_dtype: Any = None) -> Primitive:
    """An elementwise n-ary primitive with same-dtype operands: the standard abstract eval
    (:func:`standard_binop`), ``lowering`` (a StableHLO/CHLO op name, or a lowering rule) and the
    broadcasting batching rule."""
    p = Primitive(name)
    standard_binop(p, accepted, result_dtype)
    p.lowering = elementwise_lowering(lowering) if isinstance(lowering, str) else lowering
    p.batch = _rules.elementwise_batch_rule(p)
    return p
