"""Elementwise primitives: arithmetic, complex parts and selection.

Each primitive is defined with its abstract evaluation and lowering (most through the builders
``unop_primitive`` / ``binop_primitive``, which also set the batching rule), then its JVP (and
transpose, for the linear ones) on the lines right after it, then its public function. The
exponentials, logarithms, powers, roots, trigonometric and hyperbolic functions are in
:mod:`fluxion.lax.transcendental`, the conversions in :mod:`fluxion.lax.conversions`, the special
functions (``erf``, ``lgamma``, Bessel, incomplete
gamma, ...) in :mod:`fluxion.lax.special`. The bitwise ops are defined in :mod:`fluxion.lax.bitwise`,
the comparisons in :mod:`fluxion.lax.comparisons`, ``copy``, ``optimization_barrier`` and
``stop_gradient`` in :mod:`fluxion.lax.barriers`; this module exports their names too.

Operands must have equal dtypes (``jnp`` functions promote first); rank-0 operands and size-1
dimensions broadcast.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.add(jnp.ones(2), 1.0).tolist()
    [2.0, 2.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax._base import (
    DtypeSet,
    binop_primitive,
    broadcast_operand,
    dtype_kind_check,
    elementwise_lowering,
    extremum_lowering,
    type_error,
    unop_primitive,
)
from fluxion.lax.barriers import (  # noqa: F401 (defined there, exported here as before the split)
    copy,
    copy_p,
    optimization_barrier,
    optimization_barrier_p,
    stop_gradient,
    stop_gradient_p,
)
from fluxion.lax.bitwise import (  # noqa: F401 (defined there, exported here as before the split)
    and_p,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    clz,
    clz_p,
    not_p,
    or_p,
    population_count,
    population_count_p,
    shift_left,
    shift_left_p,
    shift_right_arithmetic,
    shift_right_arithmetic_p,
    shift_right_logical,
    shift_right_logical_p,
    xor_p,
)
from fluxion.lax.comparisons import (  # noqa: F401 (defined there, exported here as before the split)
    _compare_type,
    eq,
    eq_p,
    ge,
    ge_p,
    gt,
    gt_p,
    le,
    le_p,
    lt,
    lt_p,
    ne,
    ne_p,
)
from fluxion.lax.shape_ops import broadcast_in_dim_p
from fluxion.transforms import ad
from fluxion.transforms import jet as _jet

_any = DtypeSet("any", "biufc")
_num = DtypeSet("numeric", "iufc")
_signed = DtypeSet("signed integer, floating or complex", "ifc")
_float = DtypeSet("floating", "f")
_inexact = DtypeSet("floating or complex", "fc")
_ordered = DtypeSet("boolean, integer or floating", "biuf")
_real_num = DtypeSet("integer or floating", "iuf")
_complex = DtypeSet("complex", "c")
_f32_f64 = DtypeSet("float32 or float64", "",
                    lambda d: d == np.float32 or d == np.float64)
_conj_types = DtypeSet("float32, float64 or complex", "c",
                       lambda d: d == np.float32 or d == np.float64)

# A weakly typed scalar of an operand's dtype (a literal when staged), for the JVP rules below.
_c = _rules.const_like
_unb = _rules.unbroadcast


def _real_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt == np.complex64 else (
        np.dtype(np.float64) if dt == np.complex128 else dt)


def _to_complex(dt: np.dtype) -> np.dtype:
    return dt if dt.kind == "c" else np.dtype(np.complex128 if dt == np.float64 else np.complex64)


# ------------------------------------------------------------------ arithmetic, one operand

neg_p = unop_primitive("neg", _num, "stablehlo.negate")
_rules.deflinear(neg_p, lambda ct, x: [neg(ct)])
neg_p.jet = _jet.linear_prop(neg_p)


def neg(x: Any) -> Any:
    """Elementwise negation, ``-x``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.neg(jnp.array([1.0, -2.0])).tolist()
        [-1.0, 2.0]
    """
    return neg_p.bind(x)


_sign_signed_lowering = elementwise_lowering("stablehlo.sign")


def _sign_lowering(ctx: Any, x: str) -> str:
    # stablehlo.sign rejects unsigned integers: sign(x) = (x != 0) converted back.
    aval = ctx.avals_in[0]
    if aval.dtype.kind != "u":
        return _sign_signed_lowering(ctx, x)
    zero = ctx.constant(0, aval)
    nz = ctx.op1("stablehlo.compare", [x, zero], aval.update(dtype=np.dtype(bool)), [aval, aval],
                 "comparison_direction = #stablehlo<comparison_direction NE>, "
                 "compare_type = #stablehlo<comparison_type UNSIGNED>")
    return ctx.op1("stablehlo.convert", [nz], aval, [aval.update(dtype=np.dtype(bool))])


sign_p = unop_primitive("sign", _num, _sign_lowering)
_rules.defjvp_zero(sign_p)
sign_p.jet = _jet.zero_prop(sign_p)


def sign(x: Any) -> Any:
    """Elementwise sign: -1, 0 or 1 (NaN stays NaN).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.sign(jnp.array([-3.0, 0.0, 2.0])).tolist()
        [-1.0, 0.0, 1.0]
    """
    return sign_p.bind(x)


floor_p = unop_primitive("floor", _float, "stablehlo.floor")
_rules.defjvp_zero(floor_p)
floor_p.jet = _jet.zero_prop(floor_p)


def floor(x: Any) -> Any:
    """Elementwise floor.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.floor(jnp.array([-1.5, 1.5])).tolist()
        [-2.0, 1.0]
    """
    return floor_p.bind(x)


ceil_p = unop_primitive("ceil", _float, "stablehlo.ceil")
_rules.defjvp_zero(ceil_p)
ceil_p.jet = _jet.zero_prop(ceil_p)


def ceil(x: Any) -> Any:
    """Elementwise ceiling.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.ceil(jnp.array([-1.5, 1.5])).tolist()
        [-1.0, 2.0]
    """
    return ceil_p.bind(x)


class RoundingMethod:
    """How ``lax.round`` breaks ties: away from zero (0) or to the nearest even (1)."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def _round_lowering(ctx: Any, x: str, *, rounding_method: int) -> str:
    op = "stablehlo.round_nearest_even" if rounding_method == 1 else "stablehlo.round_nearest_afz"
    return ctx.op(op, [x])


round_p = unop_primitive("round", _float, _round_lowering)
_rules.defjvp_zero(round_p)
round_p.jet = _jet.zero_prop(round_p)


def round(x: Any, rounding_method: int = RoundingMethod.AWAY_FROM_ZERO) -> Any:
    """Elementwise rounding to the nearest integer; ties per ``rounding_method``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.round(jnp.array([0.5, 1.5, 2.5])).tolist()
        [1.0, 2.0, 3.0]
        >>> lax.round(jnp.array([0.5, 1.5, 2.5]), lax.RoundingMethod.TO_NEAREST_EVEN).tolist()
        [0.0, 2.0, 2.0]
    """
    return round_p.bind(x, rounding_method=int(rounding_method))


is_finite_p = unop_primitive("is_finite", _float, "stablehlo.is_finite", np.bool_)
_rules.defjvp_zero(is_finite_p)
is_finite_p.jet = _jet.zero_prop(is_finite_p)


def is_finite(x: Any) -> Any:
    """Elementwise: True where ``x`` is neither infinite nor NaN.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.is_finite(jnp.array([1.0, jnp.inf, jnp.nan])).tolist()
        [True, False, False]
    """
    return is_finite_p.bind(x)


abs_p = unop_primitive("abs", _signed, "stablehlo.abs", _real_of)


def _abs_jvp(g: Any, ans: Any, x: Any) -> Any:
    if _rules.aval_of(x).dtype.kind == "c":
        safe = select(eq(ans, _c(ans, 0)), add(mul(ans, _c(ans, 0)), _c(ans, 1)), ans)
        return div(real(mul(conj(x), g)), safe)
    return mul(g, sign(x))


_rules.defjvp2(abs_p, _abs_jvp)
abs_p.jet = lambda primals, series: (  # each coefficient times the sign (+1 at 0), as JAX
    abs_p.bind(*primals), [select(primals[0] < 0, neg(t), t) for t in series[0]])


def abs(x: Any) -> Any:
    """Elementwise absolute value (the magnitude, for complex inputs).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.abs(jnp.array([-1.5, 2.0])).tolist()
        [1.5, 2.0]
        >>> lax.abs(jnp.array([3 + 4j]))
        Array([5.], dtype=float32)
    """
    return abs_p.bind(x)


# ------------------------------------------------------------------ arithmetic, two operands

add_p = binop_primitive("add", _num, "stablehlo.add")
add_p.host = np.add  # integers wrap as XLA's


def _add_jvp(primals: list, tangents: list) -> tuple:
    out = add(*primals)
    oa = _rules.aval_of(out)
    tx, ty = tangents
    if type(tx) is ad.Zero and type(ty) is ad.Zero:
        return out, ad.Zero(oa)
    return out, ad.add_tangents(*[t if type(t) is ad.Zero else _rules.broadcast_to_aval(t, oa)
                                  for t in (tx, ty)])


def _add_transpose(ct: Any, x: Any, y: Any) -> list:
    return [_unb(ct, x.aval) if ad.is_undefined(x) else None,
            _unb(ct, y.aval) if ad.is_undefined(y) else None]


add_p.jvp = _add_jvp
add_p.transpose = _add_transpose
add_p.jet = _jet.linear_prop(add_p)


def add(x: Any, y: Any) -> Any:
    """Elementwise addition, ``x + y`` (same dtypes; rank-0 operands broadcast).

    Example:
        >>> from fluxion import lax
        >>> float(lax.add(1.0, 2.0))
        3.0
    """
    return add_p.bind(x, y)


sub_p = binop_primitive("sub", _num, "stablehlo.subtract")
sub_p.host = np.subtract  # integers wrap as XLA's


def _sub_jvp(primals: list, tangents: list) -> tuple:
    out = sub(*primals)
    oa = _rules.aval_of(out)
    tx, ty = tangents
    if type(ty) is ad.Zero:
        return out, _rules.broadcast_to_aval(tx, oa)
    if type(tx) is ad.Zero:
        return out, _rules.broadcast_to_aval(neg(ty), oa)
    return out, _rules.broadcast_to_aval(sub(tx, ty), oa)


def _sub_transpose(ct: Any, x: Any, y: Any) -> list:
    return [_unb(ct, x.aval) if ad.is_undefined(x) else None,
            _unb(neg(ct), y.aval) if ad.is_undefined(y) else None]


sub_p.jvp = _sub_jvp
sub_p.transpose = _sub_transpose
sub_p.jet = _jet.linear_prop(sub_p)


def sub(x: Any, y: Any) -> Any:
    """Elementwise subtraction, ``x - y``.

    Example:
        >>> from fluxion import lax
        >>> float(lax.sub(5.0, 2.0))
        3.0
    """
    return sub_p.bind(x, y)


mul_p = binop_primitive("mul", _num, "stablehlo.multiply")
mul_p.host = np.multiply  # integers wrap as XLA's
_rules.defjvp(mul_p, lambda g, x, y: mul(g, y), lambda g, x, y: mul(x, g))


def _mul_transpose(ct: Any, x: Any, y: Any) -> list:
    if ad.is_undefined(x) and ad.is_undefined(y):
        raise NotImplementedError("mul: transpose of a product of two linear values "
                                  "(the program is not linear)")
    if ad.is_undefined(x):
        return [_unb(mul(ct, y), x.aval), None]
    return [None, _unb(mul(x, ct), y.aval)]


mul_p.transpose = _mul_transpose
mul_p.jet = _jet.bilinear_prop(mul_p)


def mul(x: Any, y: Any) -> Any:
    """Elementwise multiplication, ``x * y``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.mul(jnp.arange(3), 4).tolist()
        [0, 4, 8]
    """
    return mul_p.bind(x, y)


div_p = binop_primitive("div", _num, "stablehlo.divide")
# JAX's rule, term for term (-g * x * y**-2, not -g * (x / y**2)): the rounding then matches.
_rules.defjvp(div_p, lambda g, x, y: div(g, y),
              lambda g, x, y: mul(mul(neg(g), x), integer_pow(y, -2)))


def _div_transpose(ct: Any, x: Any, y: Any) -> list:
    if ad.is_undefined(y):
        raise NotImplementedError("div: transpose with respect to the divisor (the program "
                                  "is not linear)")
    return [_unb(div(ct, y), x.aval), None]


div_p.transpose = _div_transpose


def _div_jet(primals: list, series: list) -> tuple:
    # v = u / w from u = v w: v_k = (u_k - sum_{j<k} v_j w_{k-j}) / w_0
    u, w = [primals[0], *series[0]], [primals[1], *series[1]]
    v: list = [None] * len(u)
    for k in range(len(v)):
        v[k] = (u[k] - sum(v[j] * w[k - j] for j in range(k))) / w[0]
    return v[0], v[1:]


div_p.jet = _div_jet


def div(x: Any, y: Any) -> Any:
    """Elementwise division; integer division rounds toward zero (C semantics).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.div(jnp.array([7, -7]), 2).tolist()
        [3, -3]
        >>> float(lax.div(1.0, 4.0))
        0.25
    """
    return div_p.bind(x, y)


rem_p = binop_primitive("rem", _real_num, "stablehlo.remainder")


def _rem_dy(g: Any, x: Any, y: Any) -> Any:
    q = div(x, y)
    return mul(neg(g), mul(sign(q), floor(abs(q))))


_rules.defjvp(rem_p, lambda g, x, y: g, _rem_dy)
rem_p.jet = _jet.comp_prop(lambda x, y: x - y * floor(x / y))


def rem(x: Any, y: Any) -> Any:
    """Elementwise remainder with the sign of the dividend (C ``fmod`` semantics).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.rem(jnp.array([7, -7]), 3).tolist()
        [1, -1]
    """
    return rem_p.bind(x, y)


def _full_like(z: Any, value: float) -> Any:
    """The constant ``value`` in ``z``'s dtype and weak type, broadcast to ``z``'s shape (JAX's
    ``full_like(z, value)``)."""
    aval = _rules.aval_of(z)
    c = _rules.ops().convert_element_type(value, aval.dtype, weak_type=aval.weak_type)
    return broadcast_in_dim_p.bind(c, shape=aval.shape, broadcast_dimensions=()) if aval.shape else c


def _balanced(x: Any, z: Any, y: Any) -> Any:
    # The derivative of max/min (result z) in x: 1 where x alone is the result, 1/2 where x and
    # y tie, 0 elsewhere (also where z is NaN). Written as JAX's: (x == z ? 1 : 0) / (y == z ?
    # 2 : 1), so that XLA gets the same program; finite at an infinite z (z * 0 would be NaN).
    return div(select(eq(x, z), _full_like(z, 1), _full_like(z, 0)),
               select(eq(y, z), _full_like(z, 2), _full_like(z, 1)))


max_p = binop_primitive("max", _any, extremum_lowering("stablehlo.maximum"))
max_p.host = np.maximum  # integers wrap as XLA's
_rules.defjvp2(max_p, lambda g, ans, x, y: mul(g, _balanced(x, ans, y)),
               lambda g, ans, x, y: mul(g, _balanced(y, ans, x)))


max_p.jet = _jet.extremum_prop(lambda x, y: x > y, lambda p, a, b: select(p, a, b))


def max(x: Any, y: Any) -> Any:
    """Elementwise maximum (NaN-propagating).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.max(jnp.array([1.0, 5.0]), jnp.array([3.0, 2.0])).tolist()
        [3.0, 5.0]
    """
    return max_p.bind(x, y)


min_p = binop_primitive("min", _any, extremum_lowering("stablehlo.minimum"))
min_p.host = np.minimum  # integers wrap as XLA's
_rules.defjvp2(min_p, lambda g, ans, x, y: mul(g, _balanced(x, ans, y)),
               lambda g, ans, x, y: mul(g, _balanced(y, ans, x)))
min_p.jet = _jet.extremum_prop(lambda x, y: x < y, lambda p, a, b: select(p, a, b))


def min(x: Any, y: Any) -> Any:
    """Elementwise minimum (NaN-propagating).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.min(jnp.array([1.0, 5.0]), jnp.array([3.0, 2.0])).tolist()
        [1.0, 2.0]
    """
    return min_p.bind(x, y)


nextafter_p = binop_primitive("nextafter", _float, "chlo.next_after")
# nextafter(x, y) is x moved by one ulp: slope 1 in x and 0 in y almost everywhere (JAX has no
# rule and raises; a zero derivative in x would be silently wrong).
_rules.defjvp(nextafter_p, lambda g, x, y: g, None)


def nextafter(x1: Any, x2: Any) -> Any:
    """Elementwise next representable value after ``x1`` in the direction of ``x2``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> float(lax.nextafter(jnp.float32(1.0), jnp.float32(2.0))) - 1.0
        1.1920928955078125e-07
    """
    return nextafter_p.bind(x1, x2)


integer_pow_p = Primitive("integer_pow")


def _integer_pow_abstract_eval(x: ShapedArray, *, y: int) -> ShapedArray:
    dtype_kind_check("integer_pow", _num, x)
    if y < 0 and x.dtype.kind in "iu":
        raise type_error("lax.integer_pow", f"negative exponent {y} for integer dtype {x.dtype.name}")
    return x


def _integer_pow_lowering(ctx: Any, x: str, *, y: int) -> str:
    aval = ctx.avals_in[0]
    n = -y if y < 0 else y
    acc = None
    base = x
    while n:
        if n & 1:
            acc = base if acc is None else ctx.op("stablehlo.multiply", [acc, base],
                                                  operand_avals=[aval, aval])
        n >>= 1
        if n:
            base = ctx.op("stablehlo.multiply", [base, base], operand_avals=[aval, aval])
    if acc is None:
        acc = ctx.constant(1, aval)
    if y < 0:
        one = ctx.constant(1, aval)
        acc = ctx.op("stablehlo.divide", [one, acc], operand_avals=[aval, aval])
    return acc


def _integer_pow_jvp(g: Any, x: Any, *, y: int) -> Any:
    # As JAX's rule (the same equations, so the same program reaches XLA): zeros for y = 0
    # (not g * 0, NaN where g is), x itself rather than x ** 1 for y = 2.
    if y == 0:
        return _full_like(g, 0)
    if y == 1:
        return g
    if y == 2:
        return mul(g, mul(_c(x, y), x))
    return mul(g, mul(_c(x, y), integer_pow(x, y - 1)))


integer_pow_p.abstract_eval = _integer_pow_abstract_eval
integer_pow_p.lowering = _integer_pow_lowering
_rules.defjvp(integer_pow_p, _integer_pow_jvp)
integer_pow_p.batch = _rules.unary_batch_rule(integer_pow_p)


integer_pow_p.jet = lambda primals, series, *, y: (  # x ** 0 is constant
    (integer_pow_p.bind(*primals, y=0), _jet.zero_series) if y == 0 else
    _jet.comp_prop(lambda x: _jet.pow_by_squaring(x, y))(primals, series))


def integer_pow(x: Any, y: int) -> Any:
    """Elementwise ``x ** y`` for a static Python integer ``y`` (by repeated multiplication).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.integer_pow(jnp.array([2.0, 3.0]), 3).tolist()
        [8.0, 27.0]
    """
    return integer_pow_p.bind(x, y=int(y))


def square(x: Any) -> Any:
    """Elementwise square, ``x * x``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.square(jnp.array([-2.0, 3.0])).tolist()
        [4.0, 9.0]
    """
    return mul(x, x)


def reciprocal(x: Any) -> Any:
    """Elementwise reciprocal, ``1 / x``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.reciprocal(jnp.array([2.0, 4.0])).tolist()
        [0.5, 0.25]
    """
    return integer_pow(x, -1)


# ------------------------------------------------------------------ complex numbers

def _zero_part(ct: Any) -> Any:
    # Not weakly typed (as in JAX): the cotangent of a complex input is never weak.
    return mul(ct, np.zeros((), _rules.aval_of(ct).dtype))


real_p = unop_primitive("real", _complex, "stablehlo.real", _real_of)
_rules.deflinear(real_p, lambda ct, x: [complex(ct, _zero_part(ct))])
real_p.jet = _jet.linear_prop(real_p)


def real(x: Any) -> Any:
    """Elementwise real part of a complex array.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.real(jnp.array([1 + 2j]))
        Array([1.], dtype=float32)
    """
    return real_p.bind(x)


imag_p = unop_primitive("imag", _complex, "stablehlo.imag", _real_of)
_rules.deflinear(imag_p, lambda ct, x: [complex(_zero_part(ct), neg(ct))])
imag_p.jet = _jet.linear_prop(imag_p)


def imag(x: Any) -> Any:
    """Elementwise imaginary part of a complex array.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.imag(jnp.array([1 + 2j]))
        Array([2.], dtype=float32)
    """
    return imag_p.bind(x)


def _conj_lowering(ctx: Any, x: str) -> str:
    aval, out = ctx.avals_in[0], ctx.avals_out[0]
    if aval.dtype != out.dtype:  # real input: x + 0j (like JAX, a +0 imaginary part)
        return ctx.op1("stablehlo.convert", [x], out, [aval])
    return ctx.op1("chlo.conj", [x], out, [out])


conj_p = unop_primitive("conj", _conj_types, _conj_lowering, _to_complex)
# A real input was promoted to complex: its cotangent is the real part (as JAX).
_rules.deflinear(conj_p, lambda ct, x: [conj(ct) if x.aval.dtype.kind == "c" else real(ct)])
conj_p.jet = _jet.linear_prop(conj_p)


def conj(x: Any) -> Any:
    """Elementwise complex conjugate.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.conj(jnp.array([1 + 2j])).tolist()
        [(1-2j)]
    """
    return conj_p.bind(x)


complex_p = binop_primitive("complex", _f32_f64, "stablehlo.complex",
                            lambda dt: np.dtype(np.complex128 if dt == np.float64 else np.complex64))


def _complex_jvp(primals: list, tangents: list) -> tuple:
    out = complex(*primals)
    oa = _rules.aval_of(out)
    tx, ty = tangents
    if type(tx) is ad.Zero and type(ty) is ad.Zero:
        return out, ad.Zero(oa)
    tx = ad.instantiate(tx) if type(tx) is not ad.Zero else mul(ty, _c(ty, 0))
    ty = ad.instantiate(ty) if type(ty) is not ad.Zero else mul(tx, _c(tx, 0))
    return out, _rules.broadcast_to_aval(complex(tx, ty), oa)


def _complex_transpose(ct: Any, x: Any, y: Any) -> list:
    return [_unb(real(ct), x.aval) if ad.is_undefined(x) else None,
            _unb(imag(neg(ct)), y.aval) if ad.is_undefined(y) else None]


complex_p.jvp = _complex_jvp
complex_p.transpose = _complex_transpose
complex_p.jet = _jet.linear_prop(complex_p)


def complex(x: Any, y: Any) -> Any:
    """Elementwise ``x + 1j * y`` from two real arrays.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.complex(jnp.array([1.0]), jnp.array([2.0]))
        Array([1.+2.j], dtype=complex64)
    """
    return complex_p.bind(x, y)


# ------------------------------------------------------------------ selection

select_n_p = Primitive("select_n")


def _select_n_abstract_eval(which: ShapedArray, *cases: ShapedArray) -> ShapedArray:
    if not cases:
        raise type_error("lax.select_n", "needs at least one case")
    if which.dtype != np.bool_ and which.dtype != np.int32:
        raise type_error("lax.select_n", f"which must be bool or int32, got {which.dtype.name}")
    if which.dtype == np.bool_ and len(cases) > 2:
        raise type_error("lax.select_n", f"a bool which selects among at most 2 cases, got {len(cases)}")
    c0 = cases[0]
    for c in cases[1:]:
        if c.shape != c0.shape or c.dtype != c0.dtype:
            raise type_error("lax.select_n", "cases must have the same shapes and dtypes, got "
                             + ", ".join(a.str_short() for a in cases))
    if which.shape and which.shape != c0.shape:
        raise type_error("lax.select_n", f"which must be scalar or have the cases' shape {c0.shape}, "
                         f"got {which.shape}")
    return ShapedArray(c0.shape, c0.dtype, all(c.weak_type for c in cases))


def _select_n_lowering(ctx: Any, which: str, *cases: str) -> str:
    w_aval = ctx.avals_in[0]
    out = ctx.avals_out[0]
    if len(cases) == 1:
        return cases[0]
    pred_aval = ShapedArray(out.shape, np.bool_)
    if w_aval.dtype == np.bool_:
        pred = broadcast_operand(ctx, which, w_aval, out.shape)
        return ctx.op("stablehlo.select", [pred, cases[1], cases[0]],
                      operand_avals=[pred_aval, out, out])
    w = broadcast_operand(ctx, which, w_aval, out.shape)
    w_full = w_aval.update(shape=out.shape)
    result = cases[-1]
    for i in range(len(cases) - 2, -1, -1):  # which == i ? case_i : (later cases)
        k = ctx.constant(i, w_full)
        pred = ctx.op1("stablehlo.compare", [w, k], pred_aval, [w_full, w_full],
                       "comparison_direction = #stablehlo<comparison_direction EQ>, "
                       "compare_type = #stablehlo<comparison_type SIGNED>")
        result = ctx.op("stablehlo.select", [pred, cases[i], result],
                        operand_avals=[pred_aval, out, out])
    return result


def _select_n_jvp(primals: list, tangents: list) -> tuple:
    which, *cases = primals
    out = select_n(which, *cases)
    oa = _rules.aval_of(out)
    ts = tangents[1:]
    if all(type(t) is ad.Zero for t in ts) or not _rules.is_float(oa.dtype):
        return out, ad.Zero(ad.tangent_aval(oa))
    return out, select_n(which, *[ad.instantiate(t) for t in ts])


def _select_n_transpose(ct: Any, which: Any, *cases: Any) -> list:
    if ad.is_undefined(which):
        raise NotImplementedError("select_n: the predicate cannot be linear")
    # true zeros, not ct * 0: an inf/NaN cotangent must not leak into the unselected branch
    zeros = ad.zeros_like_aval(_rules.aval_of(ct))
    out: list = [None]
    for i, x in enumerate(cases):
        if ad.is_undefined(x):
            branches = [zeros] * len(cases)
            branches[i] = ct
            out.append(select_n(which, *branches))
        else:
            out.append(None)
    return out


def _select_n_batch(axis_data: Any, args: Any, dims: Any) -> Any:
    which, cases = args[0], args[1:]
    wd, cds = dims[0], dims[1:]
    case_rank = len(_rules.shape_of(cases[0])) - (cds[0] is not None)
    w_rank = len(_rules.shape_of(which)) - (wd is not None)
    if all(d == cds[0] for d in cds) and (
            (wd is None and w_rank == 0) or (wd == cds[0] and w_rank == case_rank)):
        return select_n_p.bind(which, *cases), cds[0]
    size = _rules.batch_size(args, dims)
    cs = [_rules.bdim_to_front(c, d, size) for c, d in zip(cases, cds)]
    full = _rules.shape_of(cs[0])
    if wd is None and w_rank == 0:
        w = which
    elif wd is None:
        w = _rules.broadcast_batch(which, size, 0)
    else:
        w = _rules.moveaxis(which, wd, 0)
        if w_rank == 0 and case_rank:
            w = broadcast_in_dim_p.bind(w, shape=full, broadcast_dimensions=(0,))
    return select_n_p.bind(w, *cs), 0


select_n_p.abstract_eval = _select_n_abstract_eval
select_n_p.lowering = _select_n_lowering
select_n_p.jvp = _select_n_jvp
select_n_p.transpose = _select_n_transpose
select_n_p.batch = _select_n_batch


def _select_n_extended(which: Any, *cases: Any) -> Any:
    like, (which, *data) = _rules.extended_operands(select_n_p, (which, *cases),
                                                    range(1, len(cases) + 1), {})
    shape = data[0].shape
    w_ndim = _rules.aval_of(which).ndim
    if w_ndim:  # the choice per element, repeated over the element's words
        which = _rules.ops().broadcast_in_dim(which, shape, tuple(range(w_ndim)))
    return like._with_data(select_n_p.bind(which, *data))


select_n_p.extended = _select_n_extended


def _select_n_host(which: Any, *cases: Any) -> Any:
    i = int(which)
    return cases[i] if 0 <= i < len(cases) else None  # out of range: XLA's answer, compiled


select_n_p.host = _select_n_host
select_n_p.jet = lambda primals, series: (  # the predicate's coefficients are not used
    select_n_p.bind(*primals), [select_n_p.bind(primals[0], *ts[1:]) for ts in zip(*series)])


def select_n(which: Any, *cases: Any) -> Any:
    """Elementwise choice among ``cases`` by ``which`` (bool: False->cases[0], True->cases[1];
    int32: the index).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.select_n(jnp.array([True, False]), jnp.zeros(2), jnp.ones(2)).tolist()
        [1.0, 0.0]
    """
    if not cases:  # JAX's ValueError (checked before which's dtype)
        raise ValueError("lax.select_n: needs at least one case")
    return select_n_p.bind(which, *cases)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where ``pred`` else ``on_false`` (elementwise).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.select(jnp.array([True, False]), jnp.array([1, 2]), jnp.array([10, 20])).tolist()
        [1, 20]
    """
    return select_n_p.bind(pred, on_false, on_true)


clamp_p = Primitive("clamp")


def _clamp_abstract_eval(lo: ShapedArray, x: ShapedArray, hi: ShapedArray) -> ShapedArray:
    for b, nm in ((lo, "min"), (hi, "max")):
        if b.dtype != x.dtype:
            raise type_error("lax.clamp", f"{nm} dtype {b.dtype.name} differs from operand dtype "
                             f"{x.dtype.name}")
        if b.shape and b.shape != x.shape:
            raise type_error("lax.clamp", f"{nm} must be a scalar or have the operand's shape "
                             f"{x.shape}, got {b.shape}")
    dtype_kind_check("clamp", _ordered, x)
    return x


def _clamp_lowering(ctx: Any, lo: str, x: str, hi: str) -> str:
    a_lo, a_x, a_hi = ctx.avals_in
    return ctx.op("stablehlo.clamp", [lo, x, hi], operand_avals=[a_lo, a_x, a_hi])


def _clamp_jvp(primals: list, tangents: list) -> tuple:
    lo, x, hi = primals
    out = clamp(lo, x, hi)
    oa = _rules.aval_of(out)
    tl, tx, th = tangents
    acc = None
    zero = ad.zeros_like_aval(ad.tangent_aval(oa))
    if type(tx) is not ad.Zero:
        acc = select(bitwise_and(gt(x, lo), lt(x, hi)), tx, zero)
    if type(tl) is not ad.Zero:
        tl_b = _rules.broadcast_to_aval(tl, oa)
        acc = ad.add_tangents(acc, select(gt(lo, x), tl_b, zero))
    if type(th) is not ad.Zero:
        th_b = _rules.broadcast_to_aval(th, oa)
        acc = ad.add_tangents(acc, select(lt(hi, x), th_b, zero))
    return out, acc


def _clamp_batch(axis_data: Any, args: Any, dims: Any) -> Any:
    lo, x, hi = args
    ld, xd, hd = dims
    if ld is None and hd is None and not _rules.shape_of(lo) and not _rules.shape_of(hi):
        return clamp_p.bind(lo, x, hi), xd
    size = _rules.batch_size(args, dims)
    x_rank = len(_rules.shape_of(x)) - (xd is not None)
    x = _rules.bdim_to_front(x, xd, size)
    full = _rules.shape_of(x)
    ops = []
    for b, d in ((lo, ld), (hi, hd)):
        b_rank = len(_rules.shape_of(b)) - (d is not None)
        if d is None and b_rank == 0:
            ops.append(b)
            continue
        b = _rules.bdim_to_front(b, d, size)
        if b_rank == 0 and x_rank:
            b = broadcast_in_dim_p.bind(b, shape=full, broadcast_dimensions=(0,))
        ops.append(b)
    return clamp_p.bind(ops[0], x, ops[1]), 0


clamp_p.abstract_eval = _clamp_abstract_eval
clamp_p.lowering = _clamp_lowering
clamp_p.jvp = _clamp_jvp
clamp_p.batch = _clamp_batch
clamp_p.jet = _jet.comp_prop(lambda lo, x, hi: min(max(lo, x), hi))


def clamp(min: Any, x: Any, max: Any) -> Any:
    """Elementwise ``min(max(x, min), max)`` with scalar or matching-shape bounds.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.clamp(0.0, jnp.array([-1.0, 0.5, 2.0]), 1.0).tolist()
        [0.0, 0.5, 1.0]
    """
    return clamp_p.bind(min, x, max)
