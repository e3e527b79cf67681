"""Elementwise primitives: arithmetic, transcendental functions, comparisons, select, conversions.

Every primitive here is defined once with its abstract evaluation and lowering; the autodiff and
batching rules are attached beside them by the autodiff/vmap work.

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

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.ir import Literal
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax._base import (
    DtypeSet,
    broadcast_operand,
    dtype_kind_check,
    elementwise_lowering,
    standard_binop,
    standard_unop,
    type_error,
)

_any = DtypeSet("any", "biufc")
_num = DtypeSet("numeric", "iufc")
_int = DtypeSet("integer", "iu")
_bool_or_int = DtypeSet("boolean or integer", "biu")
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


def _real_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt == np.complex64 else (
        np.dtype(np.float64) if dt == np.complex128 else dt)


# ------------------------------------------------------------------ unary

def _def_unop(name: str, accepted: DtypeSet, hlo: str, result_dtype: Any = None) -> Primitive:
    p = Primitive(name)
    standard_unop(p, accepted, result_dtype)
    p.lowering = elementwise_lowering(hlo)
    return p


neg_p = _def_unop("neg", _num, "stablehlo.negate")
sign_p = _def_unop("sign", _num, "stablehlo.sign")
_sign_signed_lowering = sign_p.lowering


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


sign_p.lowering = _sign_lowering
floor_p = _def_unop("floor", _float, "stablehlo.floor")
ceil_p = _def_unop("ceil", _float, "stablehlo.ceil")
is_finite_p = _def_unop("is_finite", _float, "stablehlo.is_finite", np.bool_)
exp_p = _def_unop("exp", _inexact, "stablehlo.exponential")
exp2_p = Primitive("exp2")
log_p = _def_unop("log", _inexact, "stablehlo.log")
expm1_p = _def_unop("expm1", _inexact, "stablehlo.exponential_minus_one")
log1p_p = _def_unop("log1p", _inexact, "stablehlo.log_plus_one")
tanh_p = _def_unop("tanh", _inexact, "stablehlo.tanh")
logistic_p = _def_unop("logistic", _inexact, "stablehlo.logistic")
sin_p = _def_unop("sin", _inexact, "stablehlo.sine")
cos_p = _def_unop("cos", _inexact, "stablehlo.cosine")
tan_p = _def_unop("tan", _inexact, "stablehlo.tan")
sqrt_p = _def_unop("sqrt", _inexact, "stablehlo.sqrt")
rsqrt_p = _def_unop("rsqrt", _inexact, "stablehlo.rsqrt")
cbrt_p = _def_unop("cbrt", _float, "stablehlo.cbrt")
not_p = _def_unop("not", _bool_or_int, "stablehlo.not")
population_count_p = _def_unop("population_count", _int, "stablehlo.popcnt")
clz_p = _def_unop("clz", _int, "stablehlo.count_leading_zeros")
imag_p = _def_unop("imag", _complex, "stablehlo.imag", _real_of)
real_p = _def_unop("real", _complex, "stablehlo.real", _real_of)
conj_p = Primitive("conj")
abs_p = _def_unop("abs", _signed, "stablehlo.abs", _real_of)
asin_p = _def_unop("asin", _inexact, "chlo.asin")
acos_p = _def_unop("acos", _inexact, "chlo.acos")
atan_p = _def_unop("atan", _inexact, "chlo.atan")
sinh_p = _def_unop("sinh", _inexact, "chlo.sinh")
cosh_p = _def_unop("cosh", _inexact, "chlo.cosh")
asinh_p = _def_unop("asinh", _inexact, "chlo.asinh")
acosh_p = _def_unop("acosh", _inexact, "chlo.acosh")
atanh_p = _def_unop("atanh", _inexact, "chlo.atanh")
erf_p = _def_unop("erf", _float, "chlo.erf")
erfc_p = _def_unop("erfc", _float, "chlo.erfc")
erf_inv_p = _def_unop("erf_inv", _float, "chlo.erf_inv")
lgamma_p = _def_unop("lgamma", _float, "chlo.lgamma")
digamma_p = _def_unop("digamma", _float, "chlo.digamma")
bessel_i0e_p = _def_unop("bessel_i0e", _float, "chlo.bessel_i0e")  # lowering replaced below
bessel_i1e_p = _def_unop("bessel_i1e", _float, "chlo.bessel_i1e")

standard_unop(exp2_p, _inexact)


def _to_complex(dt: np.dtype) -> np.dtype:
    return dt if dt.kind == "c" else np.dtype(np.complex128 if dt == np.float64 else np.complex64)


standard_unop(conj_p, _conj_types, _to_complex)


def _conj_lowering(ctx: Any, x: str) -> str:
    aval, out = ctx.avals_in[0], ctx.avals_out[0]
    if aval.dtype != out.dtype:  # real input: x + 0j (like JAX, a +0 imaginary part)
        return ctx.op1("stablehlo.convert", [x], out, [aval])
    return ctx.op1("chlo.conj", [x], out, [out])


conj_p.lowering = _conj_lowering


def _exp2_lowering(ctx: Any, x: str) -> str:
    aval = ctx.avals_in[0]
    ln2 = ctx.constant(np.log(2.0), aval.update(shape=()))
    ln2 = broadcast_operand(ctx, ln2, aval.update(shape=()), aval.shape)
    return ctx.op("stablehlo.exponential", [ctx.op("stablehlo.multiply", [x, ln2],
                                                     operand_avals=[aval, aval])])


exp2_p.lowering = _exp2_lowering

round_p = Primitive("round")
standard_unop(round_p, _float)


def _round_lowering(ctx: Any, x: str, *, rounding_method: int) -> str:
    op = "stablehlo.round_nearest_even" if rounding_method == 1 else "stablehlo.round_nearest_afz"
    return ctx.op(op, [x])


round_p.lowering = _round_lowering


class RoundingMethod:
    """How ``lax.round`` breaks ties: away from zero (0) or to the nearest even (1)."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def neg(x: Any) -> Any:
    """Elementwise negation, ``-x``."""
    return neg_p.bind(x)


def sign(x: Any) -> Any:
    """Elementwise sign: -1, 0 or 1 (NaN stays NaN)."""
    return sign_p.bind(x)


def floor(x: Any) -> Any:
    """Elementwise floor."""
    return floor_p.bind(x)


def ceil(x: Any) -> Any:
    """Elementwise ceiling."""
    return ceil_p.bind(x)


def round(x: Any, rounding_method: int = RoundingMethod.AWAY_FROM_ZERO) -> Any:  # noqa: A001
    """Elementwise rounding to the nearest integer; ties per ``rounding_method``."""
    return round_p.bind(x, rounding_method=int(rounding_method))


def is_finite(x: Any) -> Any:
    """Elementwise: True where ``x`` is neither infinite nor NaN."""
    return is_finite_p.bind(x)


def exp(x: Any) -> Any:
    """Elementwise exponential.

    Example:
        >>> from fluxion import lax
        >>> float(lax.exp(0.0))
        1.0
    """
    return exp_p.bind(x)


def exp2(x: Any) -> Any:
    """Elementwise base-2 exponential."""
    return exp2_p.bind(x)


def log(x: Any) -> Any:
    """Elementwise natural logarithm."""
    return log_p.bind(x)


def expm1(x: Any) -> Any:
    """Elementwise ``exp(x) - 1``, accurate near 0."""
    return expm1_p.bind(x)


def log1p(x: Any) -> Any:
    """Elementwise ``log(1 + x)``, accurate near 0."""
    return log1p_p.bind(x)


def tanh(x: Any) -> Any:
    """Elementwise hyperbolic tangent."""
    return tanh_p.bind(x)


def logistic(x: Any) -> Any:
    """Elementwise logistic sigmoid, ``1 / (1 + exp(-x))``."""
    return logistic_p.bind(x)


def sin(x: Any) -> Any:
    """Elementwise sine."""
    return sin_p.bind(x)


def cos(x: Any) -> Any:
    """Elementwise cosine."""
    return cos_p.bind(x)


def tan(x: Any) -> Any:
    """Elementwise tangent."""
    return tan_p.bind(x)


def sqrt(x: Any) -> Any:
    """Elementwise square root."""
    return sqrt_p.bind(x)


def rsqrt(x: Any) -> Any:
    """Elementwise reciprocal square root, ``1 / sqrt(x)``."""
    return rsqrt_p.bind(x)


def cbrt(x: Any) -> Any:
    """Elementwise cube root."""
    return cbrt_p.bind(x)


def bitwise_not(x: Any) -> Any:
    """Elementwise bitwise (or logical, for bool) NOT."""
    return not_p.bind(x)


def population_count(x: Any) -> Any:
    """Elementwise number of set bits."""
    return population_count_p.bind(x)


def clz(x: Any) -> Any:
    """Elementwise number of leading zero bits."""
    return clz_p.bind(x)


def real(x: Any) -> Any:
    """Elementwise real part of a complex array."""
    return real_p.bind(x)


def imag(x: Any) -> Any:
    """Elementwise imaginary part of a complex array."""
    return imag_p.bind(x)


def conj(x: Any) -> Any:
    """Elementwise complex conjugate."""
    return conj_p.bind(x)


def abs(x: Any) -> Any:  # noqa: A001
    """Elementwise absolute value (the magnitude, for complex inputs)."""
    return abs_p.bind(x)


def asin(x: Any) -> Any:
    """Elementwise arc sine."""
    return asin_p.bind(x)


def acos(x: Any) -> Any:
    """Elementwise arc cosine."""
    return acos_p.bind(x)


def atan(x: Any) -> Any:
    """Elementwise arc tangent."""
    return atan_p.bind(x)


def sinh(x: Any) -> Any:
    """Elementwise hyperbolic sine."""
    return sinh_p.bind(x)


def cosh(x: Any) -> Any:
    """Elementwise hyperbolic cosine."""
    return cosh_p.bind(x)


def asinh(x: Any) -> Any:
    """Elementwise inverse hyperbolic sine."""
    return asinh_p.bind(x)


def acosh(x: Any) -> Any:
    """Elementwise inverse hyperbolic cosine."""
    return acosh_p.bind(x)


def atanh(x: Any) -> Any:
    """Elementwise inverse hyperbolic tangent."""
    return atanh_p.bind(x)


def erf(x: Any) -> Any:
    """Elementwise error function."""
    return erf_p.bind(x)


def erfc(x: Any) -> Any:
    """Elementwise complementary error function."""
    return erfc_p.bind(x)


def erf_inv(x: Any) -> Any:
    """Elementwise inverse error function."""
    return erf_inv_p.bind(x)


def lgamma(x: Any) -> Any:
    """Elementwise log of the absolute value of the gamma function."""
    return lgamma_p.bind(x)


def digamma(x: Any) -> Any:
    """Elementwise digamma function (derivative of lgamma)."""
    return digamma_p.bind(x)


# CHLO has no bessel_i0e this jaxlib can compile, so it is lowered from lax ops: Cephes'
# Chebyshev expansions of exp(-|x|) I0(x) on [0, 8] and of sqrt(x) exp(-x) I0(x) on (8, inf).
_I0E_A = (-4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
          1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
          -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
          9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-09,
          -1.30002500998624804212e-08, 6.04699502254191894932e-08, -2.67079385394061173391e-07,
          1.11738753912010371815e-06, -4.41673835845875056359e-06, 1.64484480707288970893e-05,
          -5.75419501008210370398e-05, 1.88502885095841655729e-04, -5.76375574538582365885e-04,
          1.63947561694133579842e-03, -4.32430999505057594430e-03, 1.05464603945949983183e-02,
          -2.37374148058994688156e-02, 4.93052842396707084878e-02, -9.49010970480476444210e-02,
          1.71620901522208775349e-01, -3.04682672343198398683e-01, 6.76795274409476084995e-01)
_I0E_B = (-7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
          3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
          1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
          -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
          7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
          -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
          3.39623202570838634515e-09, 2.26666899049817806459e-08, 2.04891858946906374183e-07,
          2.89137052083475648297e-06, 6.88975834691682398426e-05, 3.36911647825569408990e-03,
          8.04490411014108831608e-01)


def _chebyshev(t: Any, coeffs: tuple) -> Any:
    """Clenshaw's recurrence for a Chebyshev series in Cephes' ``chbevl`` convention."""
    zero = sub(t, t)
    b0, b1, b2 = add(zero, coeffs[0]), zero, zero
    for cf in coeffs[1:]:
        b2, b1 = b1, b0
        b0 = add(sub(mul(t, b1), b2), cf)
    return mul(sub(b0, b2), 0.5)


def _i0e_impl(x: Any) -> Any:
    ax = abs(x)
    small = _chebyshev(sub(mul(ax, 0.5), 2.0), _I0E_A)
    safe = select(le(ax, 8.0), add(sub(ax, ax), 8.0), ax)
    large = div(_chebyshev(sub(div(32.0, safe), 2.0), _I0E_B), sqrt(safe))
    return select(le(ax, 8.0), small, large)


_I0E_PROGRAMS: dict = {}


def _i0e_lowering(ctx: Any, x: str) -> str:
    a = ctx.avals_in[0].update(weak_type=False)
    program = _I0E_PROGRAMS.get(a)
    if program is None:
        from fluxion.transforms.staging import trace_to_program  # noqa: PLC0415
        compute = np.dtype(np.float32) if dtypes.finfo(a.dtype).bits < 32 else a.dtype

        def fn(v: Any) -> Any:
            if compute != a.dtype:
                return convert_element_type(_i0e_impl(convert_element_type(v, compute)), a.dtype)
            return _i0e_impl(v)

        program, consts, _ = trace_to_program(fn, (a,), {}, in_avals=[a])
        assert not consts, consts
        _I0E_PROGRAMS[a] = program
    return ctx.lower_program_inline(program, [x])[0]


bessel_i0e_p.lowering = _i0e_lowering


def bessel_i0e(x: Any) -> Any:
    """Elementwise exponentially scaled modified Bessel function of order 0."""
    return bessel_i0e_p.bind(x)


def bessel_i1e(x: Any) -> Any:
    """Elementwise exponentially scaled modified Bessel function of order 1."""
    return bessel_i1e_p.bind(x)


def square(x: Any) -> Any:
    """Elementwise square, ``x * x``."""
    return mul(x, x)


def reciprocal(x: Any) -> Any:
    """Elementwise reciprocal, ``1 / x``."""
    return integer_pow(x, -1)


# ------------------------------------------------------------------ binary

def _def_binop(name: str, accepted: DtypeSet, hlo: str, result_dtype: Any = None) -> Primitive:
    p = Primitive(name)
    standard_binop(p, accepted, result_dtype)
    p.lowering = elementwise_lowering(hlo)
    return p


add_p = _def_binop("add", _num, "stablehlo.add")
sub_p = _def_binop("sub", _num, "stablehlo.subtract")
mul_p = _def_binop("mul", _num, "stablehlo.multiply")
div_p = _def_binop("div", _num, "stablehlo.divide")
rem_p = _def_binop("rem", _real_num, "stablehlo.remainder")
pow_p = _def_binop("pow", _inexact, "stablehlo.power")
max_p = _def_binop("max", _any, "stablehlo.maximum")
min_p = _def_binop("min", _any, "stablehlo.minimum")
atan2_p = _def_binop("atan2", _inexact, "stablehlo.atan2")
nextafter_p = _def_binop("nextafter", _float, "chlo.next_after")
and_p = _def_binop("and", _bool_or_int, "stablehlo.and")
or_p = _def_binop("or", _bool_or_int, "stablehlo.or")
xor_p = _def_binop("xor", _bool_or_int, "stablehlo.xor")
shift_left_p = _def_binop("shift_left", _int, "stablehlo.shift_left")
shift_right_arithmetic_p = _def_binop("shift_right_arithmetic", _int, "stablehlo.shift_right_arithmetic")
shift_right_logical_p = _def_binop("shift_right_logical", _int, "stablehlo.shift_right_logical")
complex_p = _def_binop("complex", _f32_f64, "stablehlo.complex",
                       lambda dt: np.dtype(np.complex128 if dt == np.float64 else np.complex64))


def add(x: Any, y: Any) -> Any:
    """Elementwise addition, ``x + y`` (same dtypes; rank-0 operands broadcast).

    Example:
        >>> from fluxion import lax
        >>> float(lax.add(1.0, 2.0))
        3.0
    """
    return add_p.bind(x, y)


def sub(x: Any, y: Any) -> Any:
    """Elementwise subtraction, ``x - y``."""
    return sub_p.bind(x, y)


def mul(x: Any, y: Any) -> Any:
    """Elementwise multiplication, ``x * y``."""
    return mul_p.bind(x, y)


def div(x: Any, y: Any) -> Any:
    """Elementwise division; integer division rounds toward zero (C semantics)."""
    return div_p.bind(x, y)


def rem(x: Any, y: Any) -> Any:
    """Elementwise remainder with the sign of the dividend (C ``fmod`` semantics)."""
    return rem_p.bind(x, y)


def pow(x: Any, y: Any) -> Any:  # noqa: A001
    """Elementwise power ``x ** y`` for floating or complex operands."""
    return pow_p.bind(x, y)


def max(x: Any, y: Any) -> Any:  # noqa: A001
    """Elementwise maximum (NaN-propagating)."""
    return max_p.bind(x, y)


def min(x: Any, y: Any) -> Any:  # noqa: A001
    """Elementwise minimum (NaN-propagating)."""
    return min_p.bind(x, y)


def atan2(x: Any, y: Any) -> Any:
    """Elementwise arc tangent of ``x / y`` using the signs of both."""
    return atan2_p.bind(x, y)


def nextafter(x1: Any, x2: Any) -> Any:
    """Elementwise next representable value after ``x1`` in the direction of ``x2``."""
    return nextafter_p.bind(x1, x2)


def bitwise_and(x: Any, y: Any) -> Any:
    """Elementwise bitwise (logical, for bool) AND."""
    return and_p.bind(x, y)


def bitwise_or(x: Any, y: Any) -> Any:
    """Elementwise bitwise (logical, for bool) OR."""
    return or_p.bind(x, y)


def bitwise_xor(x: Any, y: Any) -> Any:
    """Elementwise bitwise (logical, for bool) XOR."""
    return xor_p.bind(x, y)


def shift_left(x: Any, y: Any) -> Any:
    """Elementwise left shift."""
    return shift_left_p.bind(x, y)


def shift_right_arithmetic(x: Any, y: Any) -> Any:
    """Elementwise arithmetic (sign-extending) right shift."""
    return shift_right_arithmetic_p.bind(x, y)


def shift_right_logical(x: Any, y: Any) -> Any:
    """Elementwise logical (zero-filling) right shift."""
    return shift_right_logical_p.bind(x, y)


def complex(x: Any, y: Any) -> Any:  # noqa: A001
    """Elementwise ``x + 1j * y`` from two real arrays."""
    return complex_p.bind(x, y)


# ------------------------------------------------------------------ integer_pow

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


integer_pow_p.abstract_eval = _integer_pow_abstract_eval
integer_pow_p.lowering = _integer_pow_lowering


def integer_pow(x: Any, y: int) -> Any:
    """Elementwise ``x ** y`` for a static Python integer ``y`` (by repeated multiplication)."""
    return integer_pow_p.bind(x, y=int(y))


# ------------------------------------------------------------------ comparisons

def _compare_type(dt: np.dtype) -> str:
    k = dt.kind
    if k == "b" or k == "u":
        return "UNSIGNED"
    if k == "i":
        return "SIGNED"
    if k == "c":
        return "FLOAT"
    if dtypes.issubdtype(dt, np.floating):
        return "FLOAT"
    if dtypes.issubdtype(dt, np.unsignedinteger):
        return "UNSIGNED"
    return "SIGNED"


def _def_compare(name: str, direction: str, accepted: DtypeSet) -> Primitive:
    p = Primitive(name)
    standard_binop(p, accepted, np.bool_)

    def rule(ctx: Any, x: str, y: str) -> str:
        out = ctx.avals_out[0]
        a, b = ctx.avals_in
        x = broadcast_operand(ctx, x, a, out.shape)
        y = broadcast_operand(ctx, y, b, out.shape)
        full = a.update(shape=out.shape)
        return ctx.op("stablehlo.compare", [x, y], operand_avals=[full, full],
                      attrs=f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
                            f"compare_type = #stablehlo<comparison_type {_compare_type(a.dtype)}>")

    p.lowering = rule
    return p


eq_p = _def_compare("eq", "EQ", _any)
ne_p = _def_compare("ne", "NE", _any)
lt_p = _def_compare("lt", "LT", _ordered)
le_p = _def_compare("le", "LE", _ordered)
gt_p = _def_compare("gt", "GT", _ordered)
ge_p = _def_compare("ge", "GE", _ordered)


def eq(x: Any, y: Any) -> Any:
    """Elementwise ``x == y`` (bool result)."""
    return eq_p.bind(x, y)


def ne(x: Any, y: Any) -> Any:
    """Elementwise ``x != y`` (bool result)."""
    return ne_p.bind(x, y)


def lt(x: Any, y: Any) -> Any:
    """Elementwise ``x < y`` (bool result)."""
    return lt_p.bind(x, y)


def le(x: Any, y: Any) -> Any:
    """Elementwise ``x <= y`` (bool result)."""
    return le_p.bind(x, y)


def gt(x: Any, y: Any) -> Any:
    """Elementwise ``x > y`` (bool result)."""
    return gt_p.bind(x, y)


def ge(x: Any, y: Any) -> Any:
    """Elementwise ``x >= y`` (bool result)."""
    return ge_p.bind(x, y)


# ------------------------------------------------------------------ select_n

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


select_n_p.abstract_eval = _select_n_abstract_eval
select_n_p.lowering = _select_n_lowering


def select_n(which: Any, *cases: Any) -> Any:
    """Elementwise choice among ``cases`` by ``which`` (bool: False->cases[0], True->cases[1];
    int32: the index).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.select_n(jnp.array([True, False]), jnp.zeros(2), jnp.ones(2)).tolist()
        [1.0, 0.0]
    """
    return select_n_p.bind(which, *cases)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where ``pred`` else ``on_false`` (elementwise)."""
    return select_n_p.bind(pred, on_false, on_true)


def clamp(min: Any, x: Any, max: Any) -> Any:  # noqa: A002
    """Elementwise ``min(max(x, min), max)`` with scalar or matching-shape bounds."""
    return clamp_p.bind(min, x, max)


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


clamp_p.abstract_eval = _clamp_abstract_eval
clamp_p.lowering = _clamp_lowering


# ------------------------------------------------------------------ conversions

convert_element_type_p = Primitive("convert_element_type")


def _convert_abstract_eval(x: ShapedArray, *, new_dtype: np.dtype, weak_type: bool) -> ShapedArray:
    return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_lowering(ctx: Any, x: str, *, new_dtype: np.dtype, weak_type: bool) -> str:
    a = ctx.avals_in[0]
    out = ctx.avals_out[0]
    if a.dtype == out.dtype:
        return x
    if a.dtype.kind == "c" and out.dtype.kind != "c":
        re_aval = a.update(dtype=_real_of(a.dtype))
        x = ctx.op1("stablehlo.real", [x], re_aval, [a])
        a = re_aval
        if a.dtype == out.dtype:
            return x
    if out.dtype == np.bool_ and a.dtype != np.bool_:
        zero = ctx.constant(0, a)
        return ctx.op1("stablehlo.compare", [x, zero], out, [a, a],
                       "comparison_direction = #stablehlo<comparison_direction NE>, "
                       f"compare_type = #stablehlo<comparison_type {_compare_type(a.dtype)}>")
    return ctx.op1("stablehlo.convert", [x], out, [a])


def _convert_fold(x: Any, *, new_dtype: np.dtype, weak_type: bool) -> Literal | None:
    """Convert a host scalar at trace time (a literal in staged programs, a cached constant
    eagerly) instead of emitting a conversion."""
    arr = np.asarray(x)
    if arr.shape != () or arr.dtype == object:
        return None
    if isinstance(x, int) and not isinstance(x, bool):
        # Like JAX: a Python int must fit the default integer type (int32, or int64 with x64);
        # the conversion itself then wraps (``uint8 array + 300`` adds 44).
        default_int = dtypes.canonicalize_dtype(np.dtype(np.int64))
        info = np.iinfo(default_int)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python int {x} too large to convert to {default_int.name}")
        if new_dtype.kind in "iu":
            arr = np.asarray(x, np.int64)
    if arr.dtype.kind == "c" and new_dtype.kind != "c":
        arr = arr.real
    with np.errstate(invalid="ignore", over="ignore"):
        val = arr.astype(new_dtype)
    return Literal(val, ShapedArray((), new_dtype, weak_type))


convert_element_type_p.abstract_eval = _convert_abstract_eval
convert_element_type_p.lowering = _convert_lowering
convert_element_type_p.fold = _convert_fold


def convert_element_type(operand: Any, new_dtype: Any, weak_type: bool = False) -> Any:
    """Elementwise cast of ``operand`` to ``new_dtype`` (canonicalised for the x64 mode).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.convert_element_type(jnp.array([1.7, -1.7]), jnp.int32).tolist()
        [1, -1]
    """
    new = dtypes.canonicalize_dtype(dtypes.dtype(new_dtype))
    aval = getattr(operand, "aval", None)
    if aval is not None and aval.dtype == new and aval.weak_type == weak_type:
        return operand
    return convert_element_type_p.bind(operand, new_dtype=new, weak_type=bool(weak_type))


bitcast_convert_type_p = Primitive("bitcast_convert_type")


def _bitcast_abstract_eval(x: ShapedArray, *, new_dtype: np.dtype) -> ShapedArray:
    old_bits, new_bits = dtypes.bit_width(x.dtype), dtypes.bit_width(new_dtype)
    if x.dtype == np.bool_ or new_dtype == np.bool_:
        raise type_error("lax.bitcast_convert_type", "bool is not supported")
    if old_bits == new_bits:
        shape = x.shape
    elif old_bits > new_bits:
        shape = x.shape + (old_bits // new_bits,)
    else:
        if not x.shape or x.shape[-1] != new_bits // old_bits:
            raise type_error("lax.bitcast_convert_type",
                             f"converting {x.str_short()} to {new_dtype.name} needs a last "
                             f"dimension of size {new_bits // old_bits}")
        shape = x.shape[:-1]
    return ShapedArray(shape, new_dtype, False)


def _bitcast_lowering(ctx: Any, x: str, *, new_dtype: np.dtype) -> str:
    return ctx.op("stablehlo.bitcast_convert", [x])


bitcast_convert_type_p.abstract_eval = _bitcast_abstract_eval
bitcast_convert_type_p.lowering = _bitcast_lowering


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    """Reinterpret the bits of ``operand`` as ``new_dtype`` (a trailing dimension is added or
    removed when the widths differ)."""
    return bitcast_convert_type_p.bind(operand, new_dtype=dtypes.canonicalize_dtype(np.dtype(new_dtype)))



# ------------------------------------------------------------------ batching rules (vmap)

def _attach_batch_rules() -> None:

    for p in (neg_p, sign_p, floor_p, ceil_p, is_finite_p, exp_p, exp2_p, log_p, expm1_p, log1p_p,
              tanh_p, logistic_p, sin_p, cos_p, tan_p, sqrt_p, rsqrt_p, cbrt_p, not_p,
              population_count_p, clz_p, imag_p, real_p, conj_p, abs_p, asin_p, acos_p, atan_p,
              sinh_p, cosh_p, asinh_p, acosh_p, atanh_p, erf_p, erfc_p, erf_inv_p, lgamma_p,
              digamma_p, bessel_i0e_p, bessel_i1e_p, round_p, integer_pow_p,
              convert_element_type_p):
        p.batch = _rules.unary_batch_rule(p)
    for p in (add_p, sub_p, mul_p, div_p, rem_p, pow_p, max_p, min_p, atan2_p, nextafter_p, and_p,
              or_p, xor_p, shift_left_p, shift_right_arithmetic_p, shift_right_logical_p,
              complex_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p):
        p.batch = _rules.elementwise_batch_rule(p)

    def select_n_batch(axis_data: Any, args: Any, dims: Any) -> Any:
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

    def clamp_batch(axis_data: Any, args: Any, dims: Any) -> Any:
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

    def bitcast_batch(axis_data: Any, args: Any, dims: Any, *, new_dtype: Any) -> Any:
        x, d = args[0], dims[0]
        old = getattr(x, "dtype", None)
        if old is not None and dtypes.bit_width(np.dtype(old)) != dtypes.bit_width(new_dtype):
            x, d = _rules.moveaxis(x, d, 0), 0
        return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d

    select_n_p.batch = select_n_batch
    clamp_p.batch = clamp_batch
    bitcast_convert_type_p.batch = bitcast_batch


from fluxion.lax.shape_ops import broadcast_in_dim_p  # noqa: E402  (used by the batching rules)

_attach_batch_rules()


# ------------------------------------------------------------------ reduce_precision, copy, barrier

reduce_precision_p = Primitive("reduce_precision")


def _reduce_precision_abstract_eval(x: ShapedArray, *, exponent_bits: int, mantissa_bits: int
                                    ) -> ShapedArray:
    dtype_kind_check("reduce_precision", _float, x)
    if exponent_bits < 1:
        raise ValueError(f"lax.reduce_precision: exponent_bits must be positive, got {exponent_bits}")
    if mantissa_bits < 0:
        raise ValueError(f"lax.reduce_precision: mantissa_bits must be nonnegative, got "
                         f"{mantissa_bits}")
    return x


def _reduce_precision_lowering(ctx: Any, x: str, *, exponent_bits: int, mantissa_bits: int) -> str:
    return ctx.op("stablehlo.reduce_precision", [x],
                  attrs=f"exponent_bits = {exponent_bits} : i32, mantissa_bits = {mantissa_bits} : i32")


reduce_precision_p.abstract_eval = _reduce_precision_abstract_eval
reduce_precision_p.lowering = _reduce_precision_lowering


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int) -> Any:
    """Round ``operand`` to a float format with ``exponent_bits`` and ``mantissa_bits`` (the
    result keeps ``operand``'s dtype).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> float(lax.reduce_precision(jnp.float32(1.0001), 5, 10))  # float16's format
        1.0
    """
    import operator
    return reduce_precision_p.bind(operand, exponent_bits=operator.index(exponent_bits),
                                   mantissa_bits=operator.index(mantissa_bits))


copy_p = Primitive("copy")
copy_p.abstract_eval = lambda x: x
copy_p.lowering = lambda ctx, x: x  # a fresh buffer; XLA's outputs never alias inputs here


def copy(x: Any) -> Any:
    """A copy of ``x`` (the primitive behind ``jnp.array(x, copy=True)``).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.copy(jnp.arange(3)).tolist()
        [0, 1, 2]
    """
    return copy_p.bind(x)


optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)
optimization_barrier_p.abstract_eval = lambda *avals: list(avals)


def _optimization_barrier_lowering(ctx: Any, *xs: str) -> list:
    if not xs:
        return []
    outs = ctx.op("stablehlo.optimization_barrier", list(xs))
    return outs if len(xs) > 1 else [outs]


optimization_barrier_p.lowering = _optimization_barrier_lowering


def optimization_barrier(operand: Any, /) -> Any:
    """Return ``operand`` (a pytree of arrays) unchanged, preventing XLA from moving computation
    across this point (e.g. to keep rematerialisation from being undone).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> a, b = lax.optimization_barrier((jnp.ones(2), jnp.zeros(2)))
        >>> a.tolist()
        [1.0, 1.0]
    """
    from fluxion import tree_util
    leaves, tree = tree_util.tree_flatten(operand)
    return tree_util.tree_unflatten(tree, optimization_barrier_p.bind(*leaves))


# ------------------------------------------------------------------ autodiff rules (jvp / transpose)
# Signatures (docs/internals.md, "Autodiff rules"): jvp(primals, tangents, **params) ->
# (primal_out, tangent_out) with symbolic ad.Zero tangents; transpose(ct, *args, **params) ->
# one cotangent per input (None for zero), linear inputs marked ad.UndefinedPrimal.

def _attach_ad_rules() -> None:
    from fluxion.transforms import ad  # noqa: PLC0415

    c = _rules.const_like
    unb = _rules.unbroadcast

    for p in (sign_p, floor_p, ceil_p, round_p, is_finite_p, not_p, population_count_p, clz_p,
              nextafter_p, and_p, or_p, xor_p, shift_left_p, shift_right_arithmetic_p,
              shift_right_logical_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p, bitcast_convert_type_p):
        _rules.defjvp_zero(p)

    # linear unary ops
    _rules.deflinear(neg_p, lambda ct, x: [neg(ct)])
    _rules.deflinear(conj_p, lambda ct, x: [conj(ct) if x.aval.dtype.kind == "c" else ct])
    def _zero_part(ct: Any) -> Any:
        # Not weakly typed (as in JAX): the cotangent of a complex input is never weak.
        return mul(ct, np.zeros((), _rules.aval_of(ct).dtype))

    _rules.deflinear(real_p, lambda ct, x: [complex(ct, _zero_part(ct))])
    _rules.deflinear(imag_p, lambda ct, x: [complex(_zero_part(ct), neg(ct))])
    _rules.deflinear(copy_p, lambda ct, x: [ct])
    _rules.deflinear(reduce_precision_p, lambda ct, x, **kw: [reduce_precision_p.bind(ct, **kw)])

    _rules.defjvp2(exp_p, lambda g, ans, x: mul(g, ans))
    _rules.defjvp2(exp2_p, lambda g, ans, x: mul(g, mul(ans, c(x, float(np.log(2.0))))))
    _rules.defjvp(log_p, lambda g, x: div(g, x))
    _rules.defjvp2(expm1_p, lambda g, ans, x: mul(g, add(ans, c(ans, 1))))
    _rules.defjvp(log1p_p, lambda g, x: div(g, add(x, c(x, 1))))
    _rules.defjvp2(tanh_p, lambda g, ans, x: mul(g, sub(c(ans, 1), mul(ans, ans))))
    _rules.defjvp2(logistic_p, lambda g, ans, x: mul(g, mul(ans, sub(c(ans, 1), ans))))
    _rules.defjvp(sin_p, lambda g, x: mul(g, cos(x)))
    _rules.defjvp(cos_p, lambda g, x: neg(mul(g, sin(x))))
    _rules.defjvp2(tan_p, lambda g, ans, x: mul(g, add(c(ans, 1), mul(ans, ans))))
    _rules.defjvp2(sqrt_p, lambda g, ans, x: div(g, mul(c(ans, 2), ans)))
    _rules.defjvp2(rsqrt_p, lambda g, ans, x: mul(g, mul(c(x, -0.5), div(ans, x))))
    _rules.defjvp2(cbrt_p, lambda g, ans, x: mul(g, mul(c(x, 1.0 / 3.0), integer_pow(ans, -2))))
    _rules.defjvp(asin_p, lambda g, x: mul(g, rsqrt(sub(c(x, 1), mul(x, x)))))
    _rules.defjvp(acos_p, lambda g, x: neg(mul(g, rsqrt(sub(c(x, 1), mul(x, x))))))
    _rules.defjvp(atan_p, lambda g, x: div(g, add(c(x, 1), mul(x, x))))
    _rules.defjvp(sinh_p, lambda g, x: mul(g, cosh(x)))
    _rules.defjvp(cosh_p, lambda g, x: mul(g, sinh(x)))
    _rules.defjvp(asinh_p, lambda g, x: mul(g, rsqrt(add(mul(x, x), c(x, 1)))))
    _rules.defjvp(acosh_p, lambda g, x: mul(g, rsqrt(mul(sub(x, c(x, 1)), add(x, c(x, 1))))))
    _rules.defjvp(atanh_p, lambda g, x: div(g, mul(add(c(x, 1), x), sub(c(x, 1), x))))
    _rules.defjvp(erf_p, lambda g, x: mul(g, mul(c(x, 2.0 / np.sqrt(np.pi)), exp(neg(mul(x, x))))))
    _rules.defjvp(erfc_p, lambda g, x: mul(g, mul(c(x, -2.0 / np.sqrt(np.pi)),
                                              exp(neg(mul(x, x))))))
    _rules.defjvp2(erf_inv_p, lambda g, ans, x: mul(g, mul(c(x, np.sqrt(np.pi) / 2.0),
                                                       exp(mul(ans, ans)))))
    _rules.defjvp(lgamma_p, lambda g, x: mul(g, digamma(x)))

    def _digamma_jvp(g: Any, x: Any) -> Any:
        from fluxion.lax.special import polygamma  # noqa: PLC0415  (special imports this module)
        return mul(g, polygamma(c(x, 1), x))

    _rules.defjvp(digamma_p, _digamma_jvp)
    _rules.defjvp2(bessel_i0e_p, lambda g, ans, x: mul(g, sub(bessel_i1e(x), mul(sign(x), ans))))

    def _i1e_jvp(g: Any, ans: Any, x: Any) -> Any:
        zero = eq(x, c(x, 0))
        safe = select(zero, add(mul(x, c(x, 0)), c(x, 1)), x)
        d = sub(bessel_i0e(x), mul(ans, add(sign(x), div(c(x, 1), safe))))
        return mul(g, select(zero, add(mul(x, c(x, 0)), c(x, 0.5)), d))

    _rules.defjvp2(bessel_i1e_p, _i1e_jvp)

    def _abs_jvp(g: Any, ans: Any, x: Any) -> Any:
        if _rules.aval_of(x).dtype.kind == "c":
            safe = select(eq(ans, c(ans, 0)), add(mul(ans, c(ans, 0)), c(ans, 1)), ans)
            return div(real(mul(conj(x), g)), safe)
        return mul(g, sign(x))

    _rules.defjvp2(abs_p, _abs_jvp)

    def _integer_pow_jvp(g: Any, x: Any, *, y: int) -> Any:
        if y == 0:
            return mul(g, c(g, 0))
        if y == 1:
            return g
        return mul(g, mul(c(x, y), integer_pow(x, y - 1)))

    _rules.defjvp(integer_pow_p, _integer_pow_jvp)

    # binary
    def _add_jvp(primals: list, tangents: list) -> tuple:
        out = add(*primals)
        oa = _rules.aval_of(out)
        tx, ty = tangents
        if type(tx) is ad.Zero and type(ty) is ad.Zero:
            return out, ad.Zero(oa)
        return out, ad.add_tangents(*[t if type(t) is ad.Zero else _rules.broadcast_to_aval(t, oa)
                                      for t in (tx, ty)])

    def _add_transpose(ct: Any, x: Any, y: Any) -> list:
        return [unb(ct, x.aval) if ad.is_undefined(x) else None,
                unb(ct, y.aval) if ad.is_undefined(y) else None]

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
        return [unb(ct, x.aval) if ad.is_undefined(x) else None,
                unb(neg(ct), y.aval) if ad.is_undefined(y) else None]

    add_p.jvp, add_p.transpose = _add_jvp, _add_transpose
    sub_p.jvp, sub_p.transpose = _sub_jvp, _sub_transpose

    _rules.defjvp(mul_p, lambda g, x, y: mul(g, y), lambda g, x, y: mul(x, g))

    def _mul_transpose(ct: Any, x: Any, y: Any) -> list:
        if ad.is_undefined(x) and ad.is_undefined(y):
            raise NotImplementedError("mul: transpose of a product of two linear values "
                                      "(the program is not linear)")
        if ad.is_undefined(x):
            return [unb(mul(ct, y), x.aval), None]
        return [None, unb(mul(x, ct), y.aval)]

    mul_p.transpose = _mul_transpose

    _rules.defjvp(div_p, lambda g, x, y: div(g, y),
              lambda g, x, y: mul(neg(g), div(x, mul(y, y))))

    def _div_transpose(ct: Any, x: Any, y: Any) -> list:
        if ad.is_undefined(y):
            raise NotImplementedError("div: transpose with respect to the divisor (the program "
                                      "is not linear)")
        return [unb(div(ct, y), x.aval), None]

    div_p.transpose = _div_transpose

    def _rem_dy(g: Any, x: Any, y: Any) -> Any:
        q = div(x, y)
        return mul(neg(g), mul(sign(q), floor(abs(q))))

    _rules.defjvp(rem_p, lambda g, x, y: g, _rem_dy)

    def _pow_dx(g: Any, x: Any, y: Any) -> Any:
        d = mul(y, pow(x, sub(y, c(y, 1))))
        zero_y = eq(y, c(y, 0))
        d = select(zero_y, mul(d, c(d, 0)), d)
        return mul(g, d)

    def _pow_dy(g: Any, ans: Any, x: Any, y: Any) -> Any:
        zero_x = eq(x, c(x, 0))
        safe = select(zero_x, add(mul(x, c(x, 0)), c(x, 1)), x)
        return mul(g, select(zero_x, mul(ans, c(ans, 0)), mul(log(safe), ans)))

    _rules.defjvp2(pow_p, lambda g, ans, x, y: _pow_dx(g, x, y), _pow_dy)

    def _balanced(x: Any, z: Any, y: Any) -> Any:
        # 1 where x is the result alone, 1/2 where x and y tie, 0 elsewhere
        one, half, zero = c(z, 1), c(z, 0.5), c(z, 0)
        return select(eq(x, z), select(eq(y, z), add(mul(z, zero), half),
                                       add(mul(z, zero), one)), mul(z, zero))

    _rules.defjvp2(max_p, lambda g, ans, x, y: mul(g, _balanced(x, ans, y)),
               lambda g, ans, x, y: mul(g, _balanced(y, ans, x)))
    _rules.defjvp2(min_p, lambda g, ans, x, y: mul(g, _balanced(x, ans, y)),
               lambda g, ans, x, y: mul(g, _balanced(y, ans, x)))
    _rules.defjvp(atan2_p, lambda g, x, y: mul(g, div(y, add(mul(x, x), mul(y, y)))),
              lambda g, x, y: mul(g, div(neg(x), add(mul(x, x), mul(y, y)))))

    def _complex_jvp(primals: list, tangents: list) -> tuple:
        out = complex(*primals)
        oa = _rules.aval_of(out)
        tx, ty = tangents
        if type(tx) is ad.Zero and type(ty) is ad.Zero:
            return out, ad.Zero(oa)
        tx = ad.instantiate(tx) if type(tx) is not ad.Zero else mul(ty, c(ty, 0))
        ty = ad.instantiate(ty) if type(ty) is not ad.Zero else mul(tx, c(tx, 0))
        return out, _rules.broadcast_to_aval(complex(tx, ty), oa)

    def _complex_transpose(ct: Any, x: Any, y: Any) -> list:
        return [unb(real(ct), x.aval) if ad.is_undefined(x) else None,
                unb(imag(neg(ct)), y.aval) if ad.is_undefined(y) else None]

    complex_p.jvp, complex_p.transpose = _complex_jvp, _complex_transpose

    # select_n / clamp
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

    select_n_p.jvp, select_n_p.transpose = _select_n_jvp, _select_n_transpose

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

    clamp_p.jvp = _clamp_jvp

    # conversions
    def _convert_jvp(primals: list, tangents: list, *, new_dtype: Any, weak_type: bool) -> tuple:
        (x,), (t,) = primals, tangents
        out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
        oa = _rules.aval_of(out)
        if type(t) is ad.Zero or not _rules.is_float(oa.dtype) or not _rules.is_float(_rules.aval_of(x).dtype):
            return out, ad.Zero(ad.tangent_aval(oa))
        return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)

    def _convert_transpose(ct: Any, x: Any, *, new_dtype: Any, weak_type: bool) -> list:
        a = x.aval
        if a.dtype == _rules.aval_of(ct).dtype and a.weak_type == _rules.aval_of(ct).weak_type:
            return [ct]
        return [convert_element_type_p.bind(ct, new_dtype=a.dtype, weak_type=a.weak_type)]

    convert_element_type_p.jvp = _convert_jvp
    convert_element_type_p.transpose = _convert_transpose

    def _barrier_jvp(primals: list, tangents: list) -> tuple:
        outs = optimization_barrier_p.bind(*primals)
        return outs, list(tangents)

    optimization_barrier_p.jvp = _barrier_jvp


_attach_ad_rules()


# ------------------------------------------------------------------ stop_gradient

stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.abstract_eval = lambda x: x
stop_gradient_p.lowering = lambda ctx, x: x
stop_gradient_p.batch = lambda axis_data, args, dims: (stop_gradient_p.bind(args[0]), dims[0])


def _stop_gradient_jvp(primals: list, tangents: list) -> tuple:
    from fluxion.transforms import ad  # noqa: PLC0415
    out = stop_gradient_p.bind(primals[0])
    return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))


stop_gradient_p.jvp = _stop_gradient_jvp


def stop_gradient(x: Any) -> Any:
    """``x`` (a pytree of arrays) unchanged, but with zero derivative under every
    differentiation.

    Example:
        >>> import fluxion
        >>> from fluxion import lax
        >>> float(fluxion.grad(lambda x: x * lax.stop_gradient(x))(3.0))
        3.0
    """
    from fluxion import tree_util  # noqa: PLC0415

    def one(a: Any) -> Any:
        dt = getattr(a, "dtype", None)
        if dt is None:
            dt = np.asarray(a).dtype
        if np.dtype(dt).kind not in "fc" and not dtypes.issubdtype(dt, np.inexact):
            return a
        return stop_gradient_p.bind(a)
    return tree_util.tree_map(one, x)


# ------------------------------------------------------------------ batching rules (vmap), 2

def _attach_more_batch_rules() -> None:

    copy_p.batch = _rules.unary_batch_rule(copy_p)
    reduce_precision_p.batch = _rules.unary_batch_rule(reduce_precision_p)
    optimization_barrier_p.batch = lambda axis_data, args, dims: (optimization_barrier_p.bind(*args),
                                                       list(dims))


_attach_more_batch_rules()
