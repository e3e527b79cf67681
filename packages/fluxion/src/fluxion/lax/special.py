"""Regularized incomplete gamma functions: igamma (lower, P(a, x)) and igammac (upper, Q(a, x)).

StableHLO/CHLO have no op for these, so each primitive's lowering stages a lax-level algorithm
(a power series for ``x < a + 1``-like regions, a continued fraction elsewhere, iterated with a
``while`` loop until the terms stop mattering) and inlines it. Half-precision inputs are computed
in float32.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> round(float(lax.igamma(jnp.float32(1.0), jnp.float32(1.0))), 5)  # 1 - exp(-1)
    0.63212
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax._base import DtypeSet, broadcast_operand, standard_binop

__all__ = ["igamma", "igammac", "igamma_p", "igammac_p", "igamma_grad_a", "igamma_grad_a_p",
           "random_gamma_grad", "random_gamma_grad_p", "polygamma", "polygamma_p"]

_float = DtypeSet("floating", "f")
_MAX_ITERS = 2000


def _consts(dtype: np.dtype) -> tuple[float, float]:
    info = dtypes.finfo(dtype)
    return float(info.eps), float(np.log(float(info.max)))


def _full(like: Any, value: float) -> Any:
    """A constant of ``like``'s shape and dtype."""
    from fluxion.lax.elementwise import convert_element_type
    from fluxion.lax.shape_ops import broadcast_in_dim
    return broadcast_in_dim(convert_element_type(value, like.dtype), like.shape, ())


def _log_prefactor(a: Any, x: Any) -> Any:
    """``a*log(x) - x - lgamma(a)``: the log of ``x^a e^-x / Gamma(a)``."""
    from fluxion.lax import elementwise as ew
    return ew.sub(ew.sub(ew.mul(a, ew.log(x)), x), ew.lgamma(a))


def _loop(cond_live: Any, body: Any, init: tuple) -> tuple:
    """Iterate ``body`` elementwise while any element is live (at most _MAX_ITERS times)."""
    from fluxion.lax import elementwise as ew
    from fluxion.lax.loops import while_loop
    from fluxion.lax.reductions import reduce_or

    def cond(state: tuple) -> Any:
        i, live = state[0], state[1]
        return ew.bitwise_and(ew.lt(i, np.int32(_MAX_ITERS)),
                              reduce_or(live, tuple(range(live.ndim))))

    def step(state: tuple) -> tuple:
        i, live, *vals = state
        new = body(*vals)
        vals = [ew.select(live, n, v) for n, v in zip(new, vals)]
        return (ew.add(i, np.int32(1)), ew.bitwise_and(live, cond_live(*vals)), *vals)

    return tuple(while_loop(cond, step, (np.int32(0), *init))[2:])


def _series(a: Any, x: Any, eps: float) -> Any:
    """P(a, x) by its power series (without the prefactor): sum of x^n / (a+1)...(a+n)."""
    from fluxion.lax import elementwise as ew
    one = _full(a, 1.0)

    def body(r: Any, c: Any, ans: Any) -> tuple:
        r = ew.add(r, one)
        c = ew.mul(c, ew.div(x, r))
        return r, c, ew.add(ans, c)

    init_live = ew.ge(one, one)
    _, _, ans = _loop(lambda r, c, ans: ew.gt(ew.div(c, ans), _full(a, eps)), body,
                      (init_live, a, one, one))
    return ew.div(ans, a)


def _continued_fraction(a: Any, x: Any, eps: float) -> Any:
    """Q(a, x) by its continued fraction (without the prefactor)."""
    from fluxion.lax import elementwise as ew
    one, zero = _full(a, 1.0), _full(a, 0.0)
    big = _full(a, 1.0 / eps)
    y = ew.sub(one, a)
    z = ew.add(ew.add(x, y), one)
    pkm2, qkm2, pkm1, qkm1 = one, x, ew.add(x, one), ew.mul(z, x)
    ans = ew.div(pkm1, qkm1)
    t = one

    def body(c, y, z, pkm2, qkm2, pkm1, qkm1, ans, t):
        c, y, z = ew.add(c, one), ew.add(y, one), ew.add(z, _full(a, 2.0))
        yc = ew.mul(y, c)
        pk = ew.sub(ew.mul(pkm1, z), ew.mul(pkm2, yc))
        qk = ew.sub(ew.mul(qkm1, z), ew.mul(qkm2, yc))
        nonzero = ew.ne(qk, zero)
        r = ew.div(pk, ew.select(nonzero, qk, one))
        t = ew.select(nonzero, ew.abs(ew.div(ew.sub(ans, r), r)), one)
        ans = ew.select(nonzero, r, ans)
        rescale = ew.gt(ew.abs(pk), big)
        s = ew.select(rescale, _full(a, eps), one)
        return (c, y, z, ew.mul(pkm1, s), ew.mul(qkm1, s), ew.mul(pk, s), ew.mul(qk, s), ans, t)

    init_live = ew.ge(one, one)
    out = _loop(lambda *v: ew.gt(v[-1], _full(a, eps)), body,
                (init_live, zero, y, z, pkm2, qkm2, pkm1, qkm1, ans, t))
    return out[7]


def _igamma_impl(a: Any, x: Any, upper: bool) -> Any:
    from fluxion.lax import elementwise as ew
    dt = a.dtype
    eps, maxlog = _consts(dt)
    one, zero = _full(a, 1.0), _full(a, 0.0)
    nan = _full(a, np.nan)
    logp = _log_prefactor(a, x)
    underflow = ew.lt(logp, _full(a, -maxlog))
    pref = ew.exp(logp)
    # choose the convergent expansion per element; each is evaluated where it is not chosen on
    # harmless substitute arguments so no NaN/inf leaks into the loop's termination test
    use_cf = ew.bitwise_and(ew.gt(x, one), ew.gt(x, a)) if not upper else \
        ew.bitwise_not(ew.bitwise_or(ew.lt(x, one), ew.lt(x, a)))
    safe_a = ew.select(ew.gt(a, zero), a, one)
    safe_x = ew.select(ew.is_finite(x), ew.select(ew.gt(x, zero), x, one), one)
    x_series = ew.select(use_cf, zero, safe_x)
    x_cf = ew.select(use_cf, safe_x, ew.add(safe_a, _full(a, 2.0)))
    p_series = ew.mul(pref, _series(safe_a, x_series, eps))
    q_cf = ew.mul(pref, _continued_fraction(safe_a, x_cf, eps))
    if upper:
        val = ew.select(use_cf, q_cf, ew.sub(one, p_series))
        val = ew.select(underflow, ew.select(use_cf, zero, one), val)
        at_zero, at_inf = one, zero
    else:
        val = ew.select(use_cf, ew.sub(one, q_cf), p_series)
        val = ew.select(underflow, ew.select(use_cf, one, zero), val)
        at_zero, at_inf = zero, one
    val = ew.select(ew.eq(x, zero), at_zero, val)
    val = ew.select(ew.eq(x, _full(a, np.inf)), at_inf, val)
    a_zero = ew.eq(a, zero)
    val = ew.select(a_zero, at_inf, val)  # P(0, x) = 1 and Q(0, x) = 0 for x > 0
    bad = ew.bitwise_or(ew.bitwise_or(ew.lt(a, zero), ew.lt(x, zero)),
                        ew.bitwise_or(ew.ne(a, a), ew.ne(x, x)))
    bad = ew.bitwise_or(bad, ew.bitwise_and(a_zero, ew.eq(x, zero)))
    return ew.select(bad, nan, val)


def _grad_series(a: Any, x: Any, enabled: Any, eps: float) -> tuple[Any, Any]:
    """The series ``S = sum x^n / ((a+1)...(a+n))`` (so ``P = x^a e^-x S / Gamma(a+1)``) and
    ``dS/da``, carried along term by term; iterates where ``enabled`` until ``dS/da`` settles."""
    from fluxion.lax import elementwise as ew
    one, zero = _full(a, 1.0), _full(a, 0.0)

    def body(r: Any, term: Any, total: Any, dterm: Any, dtotal: Any) -> tuple:
        r = ew.add(r, one)
        ratio = ew.div(x, r)
        # d/da of term_n = term_{n-1} * x / (a + n)
        dterm = ew.sub(ew.mul(dterm, ratio), ew.div(ew.mul(term, x), ew.mul(r, r)))
        term = ew.mul(term, ratio)
        return r, term, ew.add(total, term), dterm, ew.add(dtotal, dterm)

    def live(r: Any, term: Any, total: Any, dterm: Any, dtotal: Any) -> Any:
        return ew.gt(ew.abs(ew.div(dterm, dtotal)), _full(a, eps))

    _, _, total, _, dtotal = _loop(live, body, (enabled, a, one, one, zero, zero))
    return total, dtotal


def _grad_continued_fraction(a: Any, x: Any, enabled: Any, eps: float) -> tuple[Any, Any]:
    """The continued fraction ``F`` of ``Q = x^a e^-x F / Gamma(a)`` and ``dF/da``: the
    convergents ``p_k / q_k`` and their derivatives in ``a`` follow the same three-term
    recurrence; iterates where ``enabled`` until ``dF/da`` settles."""
    from fluxion.lax import elementwise as ew
    one, zero = _full(a, 1.0), _full(a, 0.0)
    big = _full(a, 1.0 / eps)
    y = ew.sub(one, a)
    z = ew.add(ew.add(x, y), one)
    p0, q0, p1, q1 = one, x, ew.add(x, one), ew.mul(z, x)
    dp0, dq0, dp1, dq1 = zero, zero, zero, ew.neg(x)  # dz/da = -1
    frac = ew.div(p1, q1)
    dfrac = ew.div(ew.sub(dp1, ew.mul(frac, dq1)), q1)

    def body(k, y, z, p0, q0, p1, q1, dp0, dq0, dp1, dq1, frac, dfrac, change):
        k, y, z = ew.add(k, one), ew.add(y, one), ew.add(z, _full(a, 2.0))
        yk = ew.mul(y, k)
        p = ew.sub(ew.mul(p1, z), ew.mul(p0, yk))
        q = ew.sub(ew.mul(q1, z), ew.mul(q0, yk))
        # y and z both move by -1 per unit of a, so d(yk)/da = -k
        dp = ew.add(ew.sub(ew.sub(ew.mul(dp1, z), p1), ew.mul(dp0, yk)), ew.mul(p0, k))
        dq = ew.add(ew.sub(ew.sub(ew.mul(dq1, z), q1), ew.mul(dq0, yk)), ew.mul(q0, k))
        ok = ew.ne(q, zero)
        safe_q = ew.select(ok, q, one)
        frac = ew.select(ok, ew.div(p, safe_q), frac)
        new_dfrac = ew.select(ok, ew.div(ew.sub(dp, ew.mul(frac, dq)), safe_q), dfrac)
        change = ew.select(ok, ew.abs(ew.sub(new_dfrac, dfrac)), one)
        s = ew.select(ew.gt(ew.abs(p), big), _full(a, eps), one)  # keep the convergents finite
        return (k, y, z, ew.mul(p1, s), ew.mul(q1, s), ew.mul(p, s), ew.mul(q, s),
                ew.mul(dp1, s), ew.mul(dq1, s), ew.mul(dp, s), ew.mul(dq, s), frac, new_dfrac,
                change)

    out = _loop(lambda *v: ew.gt(v[-1], _full(a, eps)), body,
                (enabled, zero, y, z, p0, q0, p1, q1, dp0, dq0, dp1, dq1, frac, dfrac, one))
    return out[11], out[12]


def _igamma_da_impl(a: Any, x: Any, sample: bool) -> Any:
    """``dP(a, x)/da`` (``sample=False``), or the implicit derivative of a Gamma(a) sample ``x``,
    ``dx/da = -(dP/da) / (dP/dx)`` (``sample=True``); same-shape operands."""
    from fluxion.lax import elementwise as ew
    eps, maxlog = _consts(a.dtype)
    one, zero = _full(a, 1.0), _full(a, 0.0)
    is_nan = ew.bitwise_or(ew.ne(a, a), ew.ne(x, x))
    x_zero = ew.eq(x, zero)
    domain = ew.bitwise_or(ew.lt(x, zero), ew.le(a, zero))
    use_cf = ew.bitwise_and(ew.gt(x, one), ew.gt(x, a))
    logp = _log_prefactor(a, x)
    underflow = ew.lt(logp, _full(a, -maxlog))
    pref = ew.exp(logp)
    enabled = ew.bitwise_not(ew.bitwise_or(ew.bitwise_or(x_zero, domain),
                                           ew.bitwise_or(underflow, is_nan)))
    s_val, s_da = _grad_series(a, x, ew.bitwise_and(enabled, ew.bitwise_not(use_cf)), eps)
    f_val, f_da = _grad_continued_fraction(a, x, ew.bitwise_and(enabled, use_cf), eps)
    logx = ew.log(x)
    # d/da of the log prefactors: x^a e^-x / Gamma(a+1) (series), x^a e^-x / Gamma(a) (fraction)
    dlog_s = ew.sub(logx, ew.digamma(ew.add(a, one)))
    dlog_f = ew.sub(logx, ew.digamma(a))
    s_inner = ew.add(ew.mul(s_val, dlog_s), s_da)
    f_inner = ew.add(ew.mul(f_val, dlog_f), f_da)
    if sample:
        # divide by the density x^(a-1) e^-x / Gamma(a): the prefactor cancels (no underflow)
        series = ew.div(ew.mul(ew.neg(s_inner), x), a)
        fraction = ew.mul(f_inner, x)
    else:
        series = ew.div(ew.mul(pref, s_inner), a)
        fraction = ew.neg(ew.mul(pref, f_inner))
    val = ew.select(use_cf, fraction, series)
    val = ew.select(x_zero, zero, val)
    return ew.select(ew.bitwise_or(domain, is_nan), _full(a, np.nan), val)


_PROGRAMS: dict[tuple, Any] = {}


def _operands(*vals: Any) -> list:
    """Elementwise operands (arrays, tracers or Python scalars) as arrays of one dtype (a
    strongly typed operand's, if any) and their common shape (rank 0 and size-1 dimensions
    broadcast)."""
    from fluxion.core.avals import ShapedArray as _SA
    from fluxion.lax.elementwise import convert_element_type
    from fluxion.lax.shape_ops import broadcast_in_dim
    from fluxion.transforms.staging import abstractify
    avals = [v.aval if isinstance(getattr(v, "aval", None), _SA) else abstractify(v)
             for v in vals]
    strong = [av for av in avals if not av.weak_type]
    dt = (strong or avals)[0].dtype
    shape = tuple(np.broadcast_shapes(*(tuple(av.shape) for av in avals)))
    out = []
    for v, av in zip(vals, avals):
        v = convert_element_type(v, dt)
        if tuple(av.shape) != shape:
            v = broadcast_in_dim(v, shape, tuple(range(len(av.shape))) if av.shape else ())
        out.append(v)
    return out


def _at_precision(impl: Any, a: Any, x: Any) -> Any:
    """``impl(a, x)`` on same-shape operands, computing half-precision inputs in float32."""
    from fluxion.lax.elementwise import convert_element_type
    dt = np.dtype(a.dtype)
    compute = np.dtype(np.float32) if dtypes.finfo(dt).bits < 32 else dt
    if compute == dt:
        return impl(a, x)
    a, x = convert_element_type(a, compute), convert_element_type(x, compute)
    return convert_element_type(impl(a, x), dt)


def _def_staged(name: str, impl: Any) -> Primitive:
    """An elementwise binary float primitive lowered by staging ``impl(a, x)`` (lax-level,
    same-shape operands) once per result type and inlining it."""
    p = Primitive(name)
    standard_binop(p, _float)

    def lowering(ctx: Any, a: str, x: str) -> str:
        out = ctx.avals_out[0]
        full = ShapedArray(out.shape, out.dtype)
        ops = [broadcast_operand(ctx, v, av.update(weak_type=False), out.shape)
               for v, av in zip((a, x), ctx.avals_in)]
        key = (name, full)
        program = _PROGRAMS.get(key)
        if program is None:
            from fluxion.transforms.staging import trace_to_program
            program, consts, _ = trace_to_program(lambda a, x: _at_precision(impl, a, x),
                                                  (full, full), {}, in_avals=[full, full])
            assert not consts, consts
            program = _PROGRAMS[key] = program
        return ctx.lower_program_inline(program, ops)[0]

    p.lowering = lowering
    return p


def _def_igamma(name: str, upper: bool) -> Primitive:
    return _def_staged(name, lambda a, x: _igamma_impl(a, x, upper))


igamma_p = _def_igamma("igamma", upper=False)
igammac_p = _def_igamma("igammac", upper=True)


def igamma(a: Any, x: Any) -> Any:
    """Regularized lower incomplete gamma function ``P(a, x)``, elementwise (same dtypes).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> [round(v, 4) for v in lax.igamma(jnp.array([1.0, 2.0]), jnp.array([1.0, 3.0])).tolist()]
        [0.6321, 0.8009]
    """
    return igamma_p.bind(a, x)


def igammac(a: Any, x: Any) -> Any:
    """Regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``, elementwise.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> round(float(lax.igammac(jnp.float32(1.0), jnp.float32(1.0))), 4)  # exp(-1)
        0.3679
    """
    return igammac_p.bind(a, x)


# ------------------------------------------------------------------ derivatives in `a`

def _igamma_grad_a_impl(a: Any, x: Any) -> Any:
    return _igamma_da_impl(a, x, sample=False)


def _random_gamma_grad_impl(a: Any, x: Any) -> Any:
    return _igamma_da_impl(a, x, sample=True)


igamma_grad_a_p = _def_staged("igamma_grad_a", _igamma_grad_a_impl)
random_gamma_grad_p = _def_staged("random_gamma_grad", _random_gamma_grad_impl)


def igamma_grad_a(a: Any, x: Any) -> Any:
    """The derivative ``dP(a, x)/da`` of the regularized lower incomplete gamma function with
    respect to its shape parameter, elementwise (same float dtypes; ``nan`` for ``a <= 0`` or
    ``x < 0``). The derivative of ``igammac`` is its negative.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> round(float(lax.igamma_grad_a(jnp.float32(1.0), jnp.float32(1.0))), 4)
        -0.4317
    """
    return igamma_grad_a_p.bind(a, x)


def random_gamma_grad(a: Any, x: Any) -> Any:
    """The derivative of a Gamma(a, 1) sample ``x`` with respect to ``a`` at fixed uniform noise
    (implicit reparameterisation: ``-(dP/da) / (dP/dx)`` with ``P(a, x)`` the gamma CDF),
    elementwise; ``fluxion.random.gamma`` uses it for its gradient.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> round(float(lax.random_gamma_grad(jnp.float32(1.0), jnp.float32(1.0))), 4)
        1.1736
    """
    return random_gamma_grad_p.bind(a, x)


# ------------------------------------------------------------------ polygamma

polygamma_p = Primitive("polygamma")
standard_binop(polygamma_p, _float)


def _polygamma_lowering(ctx: Any, m: str, x: str) -> str:
    out = ctx.avals_out[0]
    ops = [broadcast_operand(ctx, v, av, out.shape) for v, av in zip((m, x), ctx.avals_in)]
    return ctx.op("chlo.polygamma", ops, operand_avals=[a.update(shape=out.shape)
                                                        for a in ctx.avals_in])


polygamma_p.lowering = _polygamma_lowering


def polygamma(m: Any, x: Any) -> Any:
    """The polygamma function ``psi^(m)(x)``, the ``m``-th derivative of digamma, elementwise
    (``m`` a non-negative integer value of the same float dtype as ``x``).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> round(float(lax.polygamma(jnp.float32(1.0), jnp.float32(1.0))), 4)  # pi^2 / 6
        1.6449
    """
    return polygamma_p.bind(m, x)


# ------------------------------------------------------------------ batching rules (vmap)

def _attach_batch_rules() -> None:
    for p in (igamma_p, igammac_p, igamma_grad_a_p, random_gamma_grad_p, polygamma_p):
        p.batch = _rules.elementwise_batch_rule(p)


_attach_batch_rules()


# ------------------------------------------------------------------ autodiff rules (jvp)

def _attach_ad_rules() -> None:
    from fluxion.lax import elementwise as ew  # noqa: PLC0415
    from fluxion.transforms import ad  # noqa: PLC0415

    def d_x(g: Any, a: Any, x: Any) -> Any:
        # dP/dx = x^(a-1) e^(-x) / Gamma(a)
        log_d = ew.sub(ew.sub(ew.mul(ew.sub(a, _rules.const_like(a, 1)), ew.log(x)), x),
                       ew.lgamma(a))
        return ew.mul(g, ew.exp(log_d))

    def d_a(g: Any, a: Any, x: Any) -> Any:
        return ew.mul(g, igamma_grad_a(a, x))

    _rules.defjvp(igamma_p, d_a, d_x)
    _rules.defjvp(igammac_p, lambda g, a, x: ew.neg(d_a(g, a, x)),
              lambda g, a, x: ew.neg(d_x(g, a, x)))

    def through_impl(impl: Any) -> Any:
        # Second derivatives in `a` have no closed form: differentiate the staged series /
        # continued fraction in forward mode (the loops carry tangents), as JAX does.
        def rule(g: Any, a: Any, x: Any) -> Any:
            a, x, g = _operands(a, x, g)
            return ad.jvp(lambda a_: _at_precision(impl, a_, x), (a,), (g,))[1]
        return rule

    def gd_x(g: Any, a: Any, x: Any) -> Any:
        # d/dx dP/da = d/da (x^(a-1) e^-x / Gamma(a)) = density * (log x - digamma(a))
        density = ew.exp(ew.sub(ew.sub(ew.mul(ew.sub(a, _rules.const_like(a, 1)), ew.log(x)), x),
                                ew.lgamma(a)))
        return ew.mul(g, ew.mul(density, ew.sub(ew.log(x), ew.digamma(a))))

    _rules.defjvp(igamma_grad_a_p, through_impl(_igamma_grad_a_impl), gd_x)

    def rg_x(g: Any, ans: Any, a: Any, x: Any) -> Any:
        # ans = -P_a / P_x, so d ans/dx = -P_ax / P_x - ans * P_xx / P_x with
        # P_ax / P_x = log x - digamma(a) and P_xx / P_x = (a - 1) / x - 1
        dlog_density = ew.sub(ew.div(ew.sub(a, _rules.const_like(a, 1)), x), _rules.const_like(x, 1))
        d = ew.neg(ew.add(ew.sub(ew.log(x), ew.digamma(a)), ew.mul(ans, dlog_density)))
        return ew.mul(g, d)

    rg_a = through_impl(_random_gamma_grad_impl)
    _rules.defjvp2(random_gamma_grad_p, lambda g, ans, a, x: rg_a(g, a, x), rg_x)

    def pg_dm(g: Any, m: Any, x: Any) -> Any:
        raise NotImplementedError("lax.polygamma: the derivative with respect to the order `m` "
                                  "is not defined (m is an integer)")

    _rules.defjvp(polygamma_p, pg_dm,
              lambda g, m, x: ew.mul(g, polygamma(ew.add(m, _rules.const_like(m, 1)), x)))


_attach_ad_rules()
