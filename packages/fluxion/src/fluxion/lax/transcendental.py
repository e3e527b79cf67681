"""Transcendental elementwise primitives: exponentials, logarithms, powers, roots, and the
trigonometric and hyperbolic functions with their inverses.

Each primitive is defined with its abstract evaluation, lowering and batching rule (through the
builders ``unop_primitive`` / ``binop_primitive``), then its JVP on the lines right after it,
then its public function. The arithmetic the JVPs are written in is in
:mod:`fluxion.lax.elementwise`.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.exp(jnp.zeros(2)).tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.lax import _rules
from fluxion.lax._base import binop_primitive, broadcast_operand, unop_primitive
from fluxion.lax.accuracy import AccuracyMode, accuracy_attr, accuracy_params
from fluxion.lax.elementwise import (
    _float,
    _inexact,
    add,
    div,
    eq,
    integer_pow,
    mul,
    neg,
    select,
    sub,
)
from fluxion.lax.shape_ops import broadcast_in_dim
from fluxion.transforms import jet as _jet

# A weakly typed scalar of an operand's dtype (a literal when staged), for the JVP rules below.
_c = _rules.const_like


def _acc_lowering(op_name: str, complex_plain: bool = False) -> Any:
    """The lowering of a one-operand op taking ``accuracy=`` (fluxion.lax.accuracy): its
    ``result_accuracy`` attribute, left out for complex operands when ``complex_plain`` (JAX
    lowers complex sin/cos without it)."""
    def rule(ctx: Any, x: str, accuracy: Any = None) -> str:
        attrs = accuracy_attr(accuracy)
        if complex_plain and ctx.avals_in[0].dtype.kind == "c":
            attrs = ""
        return ctx.op(op_name, [x], attrs=attrs)
    return rule


def _acc_jet(prim: Any) -> None:
    """The primitive's jet rule also takes (and ignores) ``accuracy``: a series' terms are
    computed at the default accuracy."""
    rule = prim.jet

    def jet(primals: list, series: list, accuracy: Any = None, **params: Any) -> tuple:
        return rule(primals, series, **params)
    prim.jet = jet


# ------------------------------------------------------------------ exponentials, logarithms, powers, roots

exp_p = unop_primitive("exp", _inexact, _acc_lowering("stablehlo.exponential"))
_rules.defjvp2(exp_p, lambda g, ans, x, **kw: mul(g, ans))


def _exp_jet(primals: list, series: list) -> tuple:
    # v = exp(u): v' = v u', so v_k = sum_{j=1..k} j v_{k-j} u_j / k
    u = [primals[0], *series[0]]
    v = [exp(primals[0])] + [None] * len(series[0])
    for k in range(1, len(v)):
        v[k] = sum(j * v[k - j] * u[j] for j in range(1, k + 1)) / k
    return v[0], v[1:]


exp_p.jet = _exp_jet


def exp(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise exponential.

    Example:
        >>> from fluxion import lax
        >>> float(lax.exp(0.0))
        1.0
    """
    return exp_p.bind(x, **accuracy_params(accuracy))


def _exp2_lowering(ctx: Any, x: str, accuracy: Any = None) -> str:
    aval = ctx.avals_in[0]
    ln2 = ctx.constant(np.log(2.0), aval.update(shape=()))
    ln2 = broadcast_operand(ctx, ln2, aval.update(shape=()), aval.shape)
    return ctx.op("stablehlo.exponential", [ctx.op("stablehlo.multiply", [x, ln2],
                                                     operand_avals=[aval, aval])],
                  attrs=accuracy_attr(accuracy))


exp2_p = unop_primitive("exp2", _inexact, _exp2_lowering)
_rules.defjvp2(exp2_p, lambda g, ans, x, **kw: mul(g, mul(ans, _c(x, float(np.log(2.0))))))


def exp2(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise base-2 exponential.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.exp2(jnp.array([0.0, 0.5])).tolist()
        [1.0, 1.41421]
    """
    return exp2_p.bind(x, **accuracy_params(accuracy))


log_p = unop_primitive("log", _inexact, _acc_lowering("stablehlo.log"))
_rules.defjvp(log_p, lambda g, x, **kw: div(g, x))


def _log_jet(primals: list, series: list) -> tuple:
    # v = log(u): u v' = u', so v_k = (u_k - sum_{j=1..k-1} j v_j u_{k-j} / k) / u_0
    u = [primals[0], *series[0]]
    v = [log(primals[0])] + [None] * len(series[0])
    for k in range(1, len(v)):
        v[k] = (u[k] - sum(j * v[j] * u[k - j] for j in range(1, k)) / k) / u[0]
    return v[0], v[1:]


log_p.jet = _log_jet


def log(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise natural logarithm.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.log(jnp.array([1.0, 2.0])).tolist()
        [0.0, 0.693147]
    """
    return log_p.bind(x, **accuracy_params(accuracy))


expm1_p = unop_primitive("expm1", _inexact, _acc_lowering("stablehlo.exponential_minus_one"))
# With AccuracyMode.HIGHEST JAX's derivative is exp(x) (at that accuracy), else expm1(x) + 1.
_rules.defjvp2(expm1_p, lambda g, ans, x, accuracy=None: (
    mul(g, exp(x, accuracy=accuracy)) if accuracy is AccuracyMode.HIGHEST
    else mul(g, add(ans, _c(ans, 1)))))
expm1_p.jet = _jet.comp_prop(lambda x: exp(x) - 1)


def expm1(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise ``exp(x) - 1``, accurate near 0.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.expm1(jnp.array([0.0, 0.5])).tolist()
        [0.0, 0.648721]
    """
    return expm1_p.bind(x, **accuracy_params(accuracy))


log1p_p = unop_primitive("log1p", _inexact, _acc_lowering("stablehlo.log_plus_one"))
_rules.defjvp(log1p_p, lambda g, x, **kw: div(g, add(x, _c(x, 1))))
log1p_p.jet = _jet.comp_prop(lambda x: log(1 + x))


def log1p(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise ``log(1 + x)``, accurate near 0.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.log1p(jnp.array([0.0, 0.5])).tolist()
        [0.0, 0.405465]
    """
    return log1p_p.bind(x, **accuracy_params(accuracy))


def _logistic_lowering(ctx: Any, x: str, accuracy: Any = None) -> str:
    # 1 / (1 + exp(-x)) on every platform, as JAX 0.10.2 lowers it (without a result_accuracy:
    # its accuracy only shapes the derivative). Not stablehlo.logistic: XLA's TPU expansion of
    # that op is less accurate (0.9253200 for jax's 0.9253019 at x = 2.5167 on a v5e, session
    # 17's chip probe; the CPU gives the same bits either way).
    a = ctx.avals_in[0]
    one = ctx.constant(1, a)
    e = ctx.op1("stablehlo.exponential", [ctx.op1("stablehlo.negate", [x], a, [a])], a, [a])
    return ctx.op1("stablehlo.divide", [one, ctx.op1("stablehlo.add", [one, e], a, [a, a])],
                   a, [a, a])


logistic_p = unop_primitive("logistic", _inexact, _logistic_lowering)
_rules.defjvp2(logistic_p, lambda g, ans, x, accuracy=None: (
    mul(g, mul(ans, logistic(neg(x)))) if accuracy is AccuracyMode.HIGHEST
    else mul(g, mul(ans, sub(_c(ans, 1), ans)))))


def _logistic_jet(primals: list, series: list) -> tuple:
    # v = logistic(u): v' = e u' with e = v (1 - v), itself a series
    u = [primals[0], *series[0]]
    v = [logistic(primals[0])] + [None] * len(series[0])
    e = [v[0] * (1 - v[0])] + [None] * len(series[0])
    for k in range(1, len(v)):
        v[k] = sum(j * e[k - j] * u[j] for j in range(1, k + 1)) / k
        e[k] = (1 - v[0]) * v[k] - sum(v[j] * v[k - j] for j in range(1, k + 1))
    return v[0], v[1:]


logistic_p.jet = _logistic_jet


def logistic(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise logistic sigmoid, ``1 / (1 + exp(-x))``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.logistic(jnp.array([0.0, 0.5])).tolist()
        [0.5, 0.622459]
    """
    return logistic_p.bind(x, **accuracy_params(accuracy))


pow_p = binop_primitive("pow", _inexact, "stablehlo.power")


def _same_shape(x: Any, y: Any) -> tuple[Any, Any]:
    # Under vmap an elementwise operand may keep size-1 dimensions (the primitive broadcasts
    # them); the selects below need both at the full shape, as JAX's integer-exponent rule does.
    # A lower-rank operand (a scalar exponent: ``dr ** f32(2)``) aligns with the trailing axes.
    if np.shape(x) == np.shape(y):
        return x, y
    shape = np.broadcast_shapes(np.shape(x), np.shape(y))

    def full(v: Any) -> Any:
        return broadcast_in_dim(v, shape, tuple(range(len(shape) - np.ndim(v), len(shape))))

    return full(x), full(y)


def _pow_dx(g: Any, ans: Any, x: Any, y: Any) -> Any:
    x, y = _same_shape(x, y)
    d = mul(y, pow(x, sub(y, _c(y, 1))))
    zero_y = eq(y, _c(y, 0))
    d = select(zero_y, mul(d, _c(d, 0)), d)
    return mul(g, d)


def _pow_dy(g: Any, ans: Any, x: Any, y: Any) -> Any:
    x, y = _same_shape(x, y)
    zero_x = eq(x, _c(x, 0))
    safe = select(zero_x, add(mul(x, _c(x, 0)), _c(x, 1)), x)
    return mul(g, select(zero_x, mul(ans, _c(ans, 0)), mul(log(safe), ans)))


_rules.defjvp2(pow_p, _pow_dx, _pow_dy)


def _pow_jet(primals: list, series: list) -> tuple:
    # x ** y = exp(y log x): the exp recurrence on the series of y log x
    w0, ws = _jet.jet_coefficients(lambda x, y: [mul(y, log(x))], primals, series)
    u = [w0[0], *ws[0]]
    v = [primals[0] ** primals[1]] + [None] * len(ws[0])
    for k in range(1, len(v)):
        v[k] = sum(j * v[k - j] * u[j] for j in range(1, k + 1)) / k
    return v[0], v[1:]


pow_p.jet = _pow_jet


def pow(x: Any, y: Any) -> Any:
    """Elementwise power ``x ** y`` for floating or complex operands.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.pow(jnp.array([2.0, 9.0]), jnp.array([3.0, 0.5])).tolist()
        [8.0, 3.0]
    """
    return pow_p.bind(x, y)


sqrt_p = unop_primitive("sqrt", _inexact, _acc_lowering("stablehlo.sqrt"))
# JAX's rule, g * (0.5 / sqrt x) (not g / (2 sqrt x)): the rounding then matches.
_rules.defjvp2(sqrt_p, lambda g, ans, x, **kw: mul(g, div(_c(x, 0.5), ans)))
sqrt_p.jet = _jet.comp_prop(lambda x: x ** 0.5)


def sqrt(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise square root.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.sqrt(jnp.array([4.0, 2.0])).tolist()
        [2.0, 1.41421]
    """
    return sqrt_p.bind(x, **accuracy_params(accuracy))


rsqrt_p = unop_primitive("rsqrt", _inexact, _acc_lowering("stablehlo.rsqrt"))
_rules.defjvp2(rsqrt_p, lambda g, ans, x, **kw: mul(g, mul(_c(x, -0.5), div(ans, x))))
rsqrt_p.jet = _jet.comp_prop(lambda x: x ** -0.5)


def rsqrt(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise reciprocal square root, ``1 / sqrt(x)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.rsqrt(jnp.array([4.0, 0.25])).tolist()
        [0.5, 2.0]
    """
    return rsqrt_p.bind(x, **accuracy_params(accuracy))


cbrt_p = unop_primitive("cbrt", _float, _acc_lowering("stablehlo.cbrt"))
_rules.defjvp2(cbrt_p, lambda g, ans, x, **kw: mul(g, mul(_c(x, 1.0 / 3.0), integer_pow(ans, -2))))


def cbrt(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise cube root.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.cbrt(jnp.array([8.0, -27.0])).tolist()
        [2.0, -3.0]
    """
    return cbrt_p.bind(x, **accuracy_params(accuracy))


# ------------------------------------------------------------------ trigonometric, hyperbolic

sin_p = unop_primitive("sin", _inexact, _acc_lowering("stablehlo.sine", complex_plain=True))
_rules.defjvp(sin_p, lambda g, x, accuracy=None: mul(g, cos(x, accuracy=accuracy)))


def _sinusoid_jet(sign: int, pair: Any, which: int) -> Any:
    """sin/cos (sign -1) or sinh/cosh (sign 1): s' = c u' and c' = sign s u', together
    (``pair(x)`` is ``(s(x), c(x))``)."""
    def rule(primals: list, series: list) -> tuple:
        x = primals[0]
        u = [x, *series[0]]
        s0, c0 = pair(x)
        s, c = [s0] + [None] * len(series[0]), [c0] + [None] * len(series[0])
        for k in range(1, len(s)):
            s[k] = sum(j * u[j] * c[k - j] for j in range(1, k + 1)) / k
            c[k] = sum(j * u[j] * s[k - j] for j in range(1, k + 1)) / k * sign
        out = (s, c)[which]
        return out[0], out[1:]
    return rule


sin_p.jet = _sinusoid_jet(-1, lambda x: (sin(x), cos(x)), 0)


def sin(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise sine.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.sin(jnp.array([0.0, 0.5])).tolist()
        [0.0, 0.479426]
    """
    return sin_p.bind(x, **accuracy_params(accuracy))


cos_p = unop_primitive("cos", _inexact, _acc_lowering("stablehlo.cosine", complex_plain=True))
_rules.defjvp(cos_p, lambda g, x, accuracy=None: neg(mul(g, sin(x, accuracy=accuracy))))
cos_p.jet = _sinusoid_jet(-1, lambda x: (sin(x), cos(x)), 1)


def cos(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise cosine.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.cos(jnp.array([0.0, 0.5])).tolist()
        [1.0, 0.877583]
    """
    return cos_p.bind(x, **accuracy_params(accuracy))


tan_p = unop_primitive("tan", _inexact, _acc_lowering("stablehlo.tan"))
_rules.defjvp2(tan_p, lambda g, ans, x, **kw: mul(g, add(_c(ans, 1), mul(ans, ans))))


def tan(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise tangent.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.tan(jnp.array([0.0, 0.5])).tolist()
        [0.0, 0.546302]
    """
    return tan_p.bind(x, **accuracy_params(accuracy))


asin_p = unop_primitive("asin", _inexact, "chlo.asin")
_rules.defjvp(asin_p, lambda g, x: mul(g, rsqrt(sub(_c(x, 1), mul(x, x)))))


def asin(x: Any) -> Any:
    """Elementwise arc sine.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.asin(jnp.array([0.0, 0.5])).tolist()
        [0.0, 0.523599]
    """
    return asin_p.bind(x)


acos_p = unop_primitive("acos", _inexact, "chlo.acos")
_rules.defjvp(acos_p, lambda g, x: neg(mul(g, rsqrt(sub(_c(x, 1), mul(x, x))))))


def acos(x: Any) -> Any:
    """Elementwise arc cosine.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.acos(jnp.array([0.0, 0.5])).tolist()
        [1.5708, 1.0472]
    """
    return acos_p.bind(x)


atan_p = unop_primitive("atan", _inexact, "chlo.atan")
_rules.defjvp(atan_p, lambda g, x: div(g, add(_c(x, 1), mul(x, x))))


def atan(x: Any) -> Any:
    """Elementwise arc tangent.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.atan(jnp.array([0.0, 0.5])).tolist()
        [0.0, 0.463648]
    """
    return atan_p.bind(x)


atan2_p = binop_primitive("atan2", _inexact, "stablehlo.atan2")
_rules.defjvp(atan2_p, lambda g, x, y: mul(g, div(y, add(mul(x, x), mul(y, y)))),
              lambda g, x, y: mul(g, div(neg(x), add(mul(x, x), mul(y, y)))))


def _atan2_jet(primals: list, series: list) -> tuple:
    # atan2(x, y) = atan(x / y) locally: v' = u' / (1 + u^2) with u = x / y
    q0, qs = _jet.jet_coefficients(lambda x, y: [div(x, y)], primals, series)
    one = _rules.const_like(q0[0], 1)
    c0, cs = _jet.jet_coefficients(lambda q: [div(one, 1 + q * q)], q0, qs)
    v = _jet.chain_terms([c0[0], *cs[0]], [q0[0], *qs[0]], atan2(*primals))
    return v[0], v[1:]


atan2_p.jet = _atan2_jet


def atan2(x: Any, y: Any) -> Any:
    """Elementwise arc tangent of ``x / y`` using the signs of both.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.atan2(jnp.array([1.0, -1.0]), jnp.array([1.0, 1.0])).tolist()
        [0.785398, -0.785398]
    """
    return atan2_p.bind(x, y)


sinh_p = unop_primitive("sinh", _inexact, "chlo.sinh")
_rules.defjvp(sinh_p, lambda g, x: mul(g, cosh(x)))
sinh_p.jet = _sinusoid_jet(1, lambda x: (sinh(x), cosh(x)), 0)


def sinh(x: Any) -> Any:
    """Elementwise hyperbolic sine.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.sinh(jnp.array([0.0, 0.5])).tolist()
        [0.0, 0.521095]
    """
    return sinh_p.bind(x)


cosh_p = unop_primitive("cosh", _inexact, "chlo.cosh")
_rules.defjvp(cosh_p, lambda g, x: mul(g, sinh(x)))
cosh_p.jet = _sinusoid_jet(1, lambda x: (sinh(x), cosh(x)), 1)


def cosh(x: Any) -> Any:
    """Elementwise hyperbolic cosine.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.cosh(jnp.array([0.0, 0.5])).tolist()
        [1.0, 1.12763]
    """
    return cosh_p.bind(x)


tanh_p = unop_primitive("tanh", _inexact, _acc_lowering("stablehlo.tanh"))

# tanh rounds to +-1 in float64 beyond |x| = 19.1 (1 - tanh 20 = 8.5e-18 < eps / 2). XLA's float64
# emulation on the TPU returns NaN for large arguments (1e3 and beyond, measured on a v5e with
# jaxlib 0.10.2; 20 is still right), which made pyhpc isoneutral's taper NaN there, in jax too:
# the TPU rule clamps float64 operands to [-20, 20] first, which changes no value.
_TANH_F64_SATURATED = 20.0


def _tanh_tpu_lowering(ctx: Any, x: str, accuracy: Any = None) -> str:
    aval = ctx.avals_in[0]
    if aval.dtype != np.float64:
        return ctx.op1("stablehlo.tanh", [x], aval, [aval], attrs=accuracy_attr(accuracy))
    scalar = aval.update(shape=(), weak_type=False)
    lo = ctx.constant(np.float64(-_TANH_F64_SATURATED), scalar)
    hi = ctx.constant(np.float64(_TANH_F64_SATURATED), scalar)
    clamped = ctx.op1("stablehlo.clamp", [lo, x, hi], aval, [scalar, aval, scalar])
    return ctx.op1("stablehlo.tanh", [clamped], aval, [aval], attrs=accuracy_attr(accuracy))


tanh_p.platform_lowerings["tpu"] = _tanh_tpu_lowering
# JAX's form, (g + g * tanh x) * (1 - tanh x), not g * (1 - tanh^2 x): the same bits as JAX's
# gradients and the same program for XLA.
# With AccuracyMode.HIGHEST JAX's form is 4 logistic(2x) logistic(-2x) (at that accuracy).
_rules.defjvp2(tanh_p, lambda g, ans, x, accuracy=None: (
    mul(g, mul(_c(x, 4), mul(logistic(mul(_c(x, 2), x), accuracy=accuracy),
                             logistic(mul(_c(x, -2), x), accuracy=accuracy))))
    if accuracy is AccuracyMode.HIGHEST
    else mul(add(g, mul(g, ans)), sub(_c(ans, 1), ans))))


def _tanh_jet(primals: list, series: list) -> tuple:
    # tanh(x) = 2 logistic(2x) - 1
    out, terms = _logistic_jet([2 * primals[0]], [[2 * t for t in series[0]]])
    return 2 * out - 1, [2 * t for t in terms]


tanh_p.jet = _tanh_jet


def tanh(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise hyperbolic tangent.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.tanh(jnp.array([0.0, 0.5])).tolist()
        [0.0, 0.462117]
    """
    return tanh_p.bind(x, **accuracy_params(accuracy))


asinh_p = unop_primitive("asinh", _inexact, "chlo.asinh")
_rules.defjvp(asinh_p, lambda g, x: mul(g, rsqrt(add(mul(x, x), _c(x, 1)))))
asinh_p.jet = _jet.comp_prop(lambda x: log(x + sqrt(x * x + 1)))


def asinh(x: Any) -> Any:
    """Elementwise inverse hyperbolic sine.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.asinh(jnp.array([0.0, 0.5])).tolist()
        [0.0, 0.481212]
    """
    return asinh_p.bind(x)


acosh_p = unop_primitive("acosh", _inexact, "chlo.acosh")
_rules.defjvp(acosh_p, lambda g, x: mul(g, rsqrt(mul(sub(x, _c(x, 1)), add(x, _c(x, 1))))))
acosh_p.jet = _jet.comp_prop(lambda x: log(x + sqrt(x * x - 1)))


def acosh(x: Any) -> Any:
    """Elementwise inverse hyperbolic cosine.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.acosh(jnp.array([1.0, 2.0])).tolist()
        [0.0, 1.31696]
    """
    return acosh_p.bind(x)


atanh_p = unop_primitive("atanh", _inexact, "chlo.atanh")
_rules.defjvp(atanh_p, lambda g, x: div(g, mul(add(_c(x, 1), x), sub(_c(x, 1), x))))
atanh_p.jet = _jet.comp_prop(lambda x: 0.5 * log(div(1 + x, 1 - x)))


def atanh(x: Any) -> Any:
    """Elementwise inverse hyperbolic tangent.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.atanh(jnp.array([0.0, 0.5])).tolist()
        [0.0, 0.549306]
    """
    return atanh_p.bind(x)


# Every primitive taking ``accuracy=``: its jet rule ignores it.
for _p in (exp_p, exp2_p, expm1_p, log_p, log1p_p, tanh_p, logistic_p, sin_p, cos_p, tan_p,
           sqrt_p, rsqrt_p, cbrt_p):
    if _p.jet is not None:
        _acc_jet(_p)
