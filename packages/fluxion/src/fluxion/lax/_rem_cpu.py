"""The CPU lowering of ``lax.rem`` on floating arrays: a vectorised exact path.

XLA:CPU emits a floating ``stablehlo.remainder`` as a call of the C library's ``fmod`` per
element, which LLVM cannot vectorise: about 4.6 ns an element on the benchmark machine, where an
add takes under 1 ns (13M ``fmodf`` calls are 60 ms of ``md_lj_neighbor``'s 180 ms neighbor-list
rebuild: the periodic displacement ``mod(dR + L/2, L)`` of every candidate pair).

Most remainders in array programs reduce by at most one divisor: a periodic wrap, an angle
already near its range. Where ``|x| < 2 |y|`` the remainder is exact in the operands' own
arithmetic: ``x`` when ``|x| < |y|``, else ``|x| - |y|`` with the sign of ``x`` (exact by
Sterbenz's lemma, as ``fmod`` is). So the lowering tests every element for that case (and a
divisor that is finite and well above the subnormals, so that flushing subnormals to zero cannot
change a result) and, through a ``stablehlo.case`` on the whole array, computes either that select
or, if any element falls outside it, ``stablehlo.remainder`` as before. The results are
bit-for-bit those of ``fmod`` (signed zeros included).

The conditional needs ``x`` in memory (it cannot fuse with its producer or consumer), so arrays
under :data:`MIN_ELEMENTS` keep the plain op (the test and the conditional cost more than they
save) and so do arrays over :data:`MAX_BYTES`, whose extra passes go to DRAM: measured on the
2-core Xeon, the 585,000-element remainder of the ``md_lj_neighbor`` force took 1-2 ms less per
step, the 13M-element one of its neighbor-list rebuild 10-17 ms more (of ~170 ms).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> x = jnp.linspace(-30.0, 30.0, 4096, dtype=jnp.float32)
    >>> bool((fluxion.jit(lambda a: jnp.mod(a, 16.8))(x) == jnp.mod(x, 16.8)).all())
    True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.lax._base import attr_i64_array, broadcast_operand

__all__ = ["MIN_ELEMENTS", "MAX_BYTES", "rem_lowering_cpu"]

#: Arrays with fewer elements lower to the plain ``stablehlo.remainder``.
MIN_ELEMENTS = 2048
#: And so do arrays of more bytes (about the last-level cache of a server core pair).
MAX_BYTES = 8 << 20


def _cmp(ctx: Any, a: str, b: str, aval: ShapedArray, direction: str) -> str:
    return ctx.op1("stablehlo.compare", [a, b], aval.update(dtype=np.dtype(np.bool_)), [aval, aval],
                   f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
                   f"compare_type = #stablehlo<comparison_type FLOAT>")


def _sel(ctx: Any, p: str, a: str, b: str, aval: ShapedArray) -> str:
    return ctx.op1("stablehlo.select", [p, a, b], aval,
                   [aval.update(dtype=np.dtype(np.bool_)), aval, aval])


def _and(ctx: Any, a: str, b: str, aval: ShapedArray) -> str:
    return ctx.op1("stablehlo.and", [a, b], aval, [aval, aval])


def _fast_rem(ctx: Any, x: str, y: str, aval: ShapedArray) -> str:
    """``fmod(x, y)`` for elements with ``|x| < 2 |y|``: ``x`` when ``|x| < |y|``, else
    ``|x| - |y|`` carrying the sign of ``x`` (exact)."""
    ax = ctx.op1("stablehlo.abs", [x], aval, [aval])
    ay = ctx.op1("stablehlo.abs", [y], aval, [aval])
    ge = _cmp(ctx, ax, ay, aval, "GE")
    d = ctx.op1("stablehlo.subtract", [ax, ay], aval, [aval, aval])
    neg = _cmp(ctx, x, ctx.constant(np.zeros((), aval.dtype), aval), aval, "LT")
    signed = _sel(ctx, neg, ctx.op1("stablehlo.negate", [d], aval, [aval]), d, aval)
    return _sel(ctx, ge, signed, x, aval)


def rem_lowering_cpu(ctx: Any, x: str, y: str) -> str:
    """``lax.rem`` for XLA:CPU: floating arrays of :data:`MIN_ELEMENTS` to :data:`MAX_BYTES`
    take the vectorised exact path when every element allows it, through a ``stablehlo.case`` (see the
    module docstring); other operands lower to ``stablehlo.remainder``.

    Example:
        >>> import fluxion, fluxion.lax as lax, fluxion.numpy as jnp
        >>> x = jnp.array([-7.5, -0.0, 3.0, 7.5] * 1024, dtype=jnp.float32)
        >>> [float(v) for v in fluxion.jit(lambda a: lax.rem(a, 5.0))(x)[:4]]
        [-2.5, -0.0, 3.0, 2.5]
    """
    out = ctx.avals_out[0]
    aval = ShapedArray(out.shape, out.dtype)
    xb = broadcast_operand(ctx, x, ctx.avals_in[0], out.shape)
    yb = broadcast_operand(ctx, y, ctx.avals_in[1], out.shape)
    plain_in = [aval, aval]
    size = math.prod(out.shape)
    if out.dtype not in (np.dtype(np.float32), np.dtype(np.float64)) or size < MIN_ELEMENTS \
            or size * out.dtype.itemsize > MAX_BYTES:
        return ctx.op1("stablehlo.remainder", [xb, yb], aval, plain_in)
    info = np.finfo(out.dtype)
    # |y| - |x| differences are multiples of ulp(|y|): at least the smallest normal for these |y|
    lowest = np.asarray(float(info.tiny) * 2.0 ** (info.nmant + 1), out.dtype)
    ax = ctx.op1("stablehlo.abs", [xb], aval, [aval])
    ay = ctx.op1("stablehlo.abs", [yb], aval, [aval])
    two_ay = ctx.op1("stablehlo.add", [ay, ay], aval, [aval, aval])
    pred = aval.update(dtype=np.dtype(np.bool_))
    ok = _and(ctx, _cmp(ctx, ax, two_ay, aval, "LT"),
              _cmp(ctx, ay, ctx.constant(lowest, aval), aval, "GE"), pred)
    ok = _and(ctx, ok, _cmp(ctx, ay, ctx.constant(np.asarray(info.max, out.dtype), aval), aval,
                            "LE"), pred)
    scalar = ShapedArray((), np.dtype(np.bool_))

    def both(rctx: Any, args: list[str]) -> list[str]:
        return [rctx.op1("stablehlo.and", args, scalar, [scalar, scalar])]

    region = ctx.region([scalar, scalar], both, [scalar])
    every = ctx.op1("stablehlo.reduce", [ok, ctx.constant(np.array(True), scalar)], scalar,
                    [pred, scalar], f"dimensions = {attr_i64_array(list(range(len(out.shape))))}",
                    [region])
    i32 = ShapedArray((), np.dtype(np.int32))
    index = ctx.op1("stablehlo.select", [every, ctx.constant(np.int32(0), i32),
                                         ctx.constant(np.int32(1), i32)], i32, [scalar, i32, i32])
    fast = ctx.region([], lambda r, _a: [_fast_rem(r, xb, yb, aval)], [aval])
    slow = ctx.region([], lambda r, _a: [r.op1("stablehlo.remainder", [xb, yb], aval, plain_in)],
                      [aval])
    return ctx.op("stablehlo.case", [index], result_avals=[aval], regions=[fast, slow],
                  operand_avals=[i32])
