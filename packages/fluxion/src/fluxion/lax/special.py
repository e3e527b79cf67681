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
from fluxion.lax._base import DtypeSet, broadcast_operand, standard_binop

__all__ = ["igamma", "igammac", "igamma_p", "igammac_p", "polygamma", "polygamma_p"]

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


_PROGRAMS: dict[tuple, Any] = {}


def _def_igamma(name: str, upper: bool) -> Primitive:
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
            from fluxion.lax.elementwise import convert_element_type
            from fluxion.transforms.staging import trace_to_program
            compute = np.dtype(np.float32) if dtypes.finfo(full.dtype).bits < 32 else full.dtype

            def fn(a: Any, x: Any) -> Any:
                if compute != full.dtype:
                    a, x = convert_element_type(a, compute), convert_element_type(x, compute)
                return convert_element_type(_igamma_impl(a, x, upper), full.dtype)

            program, consts, _ = trace_to_program(fn, (full, full), {}, in_avals=[full, full])
            assert not consts, consts
            program = _PROGRAMS[key] = program
        return ctx.lower_program_inline(program, ops)[0]

    p.lowering = lowering
    return p


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
    from fluxion.transforms import batching as bt  # noqa: PLC0415
    for p in (igamma_p, igammac_p, polygamma_p):
        p.batch = bt.elementwise_batch_rule(p)


_attach_batch_rules()


# ------------------------------------------------------------------ autodiff rules (jvp)

def _attach_ad_rules() -> None:
    from fluxion.lax import elementwise as ew  # noqa: PLC0415
    from fluxion.transforms import ad  # noqa: PLC0415

    def d_x(g: Any, a: Any, x: Any) -> Any:
        # dP/dx = x^(a-1) e^(-x) / Gamma(a)
        log_d = ew.sub(ew.sub(ew.mul(ew.sub(a, ad.const_like(a, 1)), ew.log(x)), x),
                       ew.lgamma(a))
        return ew.mul(g, ew.exp(log_d))

    def d_a(g: Any, a: Any, x: Any) -> Any:
        raise NotImplementedError(
            "lax.igamma/igammac: the derivative with respect to the shape parameter `a` is not "
            "implemented yet (JAX computes it with an igamma_grad_a series); only derivatives "
            "with respect to `x` are supported")

    ad.defjvp(igamma_p, d_a, d_x)
    ad.defjvp(igammac_p, d_a, lambda g, a, x: ew.neg(d_x(g, a, x)))

    def pg_dm(g: Any, m: Any, x: Any) -> Any:
        raise NotImplementedError("lax.polygamma: the derivative with respect to the order `m` "
                                  "is not defined (m is an integer)")

    ad.defjvp(polygamma_p, pg_dm,
              lambda g, m, x: ew.mul(g, polygamma(ew.add(m, ad.const_like(m, 1)), x)))


_attach_ad_rules()
