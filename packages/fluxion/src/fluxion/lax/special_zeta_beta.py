"""The Hurwitz zeta function and the regularized incomplete beta function.

``zeta`` lowers to CHLO's ``zeta``. ``betainc`` stages a continued fraction (DLMF 8.17.22,
evaluated with the modified Lentz method, after the symmetry ``I_x(a, b) = 1 - I_{1-x}(b, a)``
where that converges faster) and inlines it, like the incomplete gamma functions in
:mod:`fluxion.lax.special`. As in JAX, ``betainc`` is differentiable in ``x`` only and ``zeta``
has no derivative rule.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> round(float(lax.betainc(jnp.float32(2.0), jnp.float32(3.0), jnp.float32(0.5))), 4)
    0.6875
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.core import dtypes
from fluxion.lax import _rules
from fluxion.lax import elementwise as ew
from fluxion.lax import transcendental as tr
from fluxion.lax._base import DtypeSet, binop_primitive
from fluxion.lax.special import _full, _loop, _staged_lowering, lgamma

__all__ = ["zeta", "zeta_p", "betainc", "regularized_incomplete_beta_p"]

_float = DtypeSet("floating", "f")

zeta_p = binop_primitive("zeta", _float, "chlo.zeta")


def zeta(x: Any, q: Any) -> Any:
    """The Hurwitz zeta function ``zeta(x, q) = sum_n (n + q)^-x``, elementwise (same float
    dtypes).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> round(float(lax.zeta(jnp.float32(2.0), jnp.float32(1.0))), 4)  # pi^2 / 6
        1.6449
    """
    return zeta_p.bind(x, q)


def _continued_fraction(a: Any, b: Any, x: Any, eps: float) -> Any:
    """``1 / (1 + d1 / (1 + d2 / (1 + ...)))`` for ``I_x(a, b)`` (modified Lentz)."""
    one = _full(a, 1.0)
    tiny = _full(a, float(dtypes.finfo(a.dtype).tiny) * 1e3)

    def guard(v: Any) -> Any:
        return ew.select(ew.lt(ew.abs(v), tiny), tiny, v)

    def step(c: Any, d: Any, h: Any, coef: Any) -> tuple:
        d = ew.div(one, guard(ew.add(one, ew.mul(coef, d))))
        c = guard(ew.add(one, ew.div(coef, c)))
        delta = ew.mul(c, d)
        return c, d, ew.mul(h, delta), delta

    d0 = ew.div(one, guard(ew.sub(one, ew.div(ew.mul(ew.add(a, b), x), ew.add(a, one)))))

    def body(m: Any, c: Any, d: Any, h: Any, change: Any) -> tuple:
        m = ew.add(m, one)
        two_m = ew.add(m, m)
        even = ew.div(ew.mul(ew.mul(m, ew.sub(b, m)), x),
                      ew.mul(ew.sub(ew.add(a, two_m), one), ew.add(a, two_m)))
        c, d, h, _ = step(c, d, h, even)
        odd = ew.neg(ew.div(ew.mul(ew.mul(ew.add(a, m), ew.add(ew.add(a, b), m)), x),
                            ew.mul(ew.add(a, two_m), ew.add(ew.add(a, two_m), one))))
        c, d, h, delta = step(c, d, h, odd)
        return m, c, d, h, ew.abs(ew.sub(delta, one))

    live = ew.ge(one, one)
    out = _loop(lambda *v: ew.gt(v[-1], _full(a, eps)), body,
                (live, _full(a, 0.0), one, d0, d0, one))
    return out[3]


def _betainc_impl(a: Any, b: Any, x: Any) -> Any:
    eps = float(dtypes.finfo(a.dtype).eps)
    zero, one, nan = _full(a, 0.0), _full(a, 1.0), _full(a, np.nan)
    bad = ew.bitwise_or(ew.bitwise_or(ew.lt(a, zero), ew.lt(b, zero)),
                        ew.bitwise_or(ew.lt(x, zero), ew.gt(x, one)))
    bad = ew.bitwise_or(bad, ew.bitwise_or(ew.ne(a, a), ew.bitwise_or(ew.ne(b, b), ew.ne(x, x))))
    # the limits a -> 0 (or b -> inf) put all mass at 0; b -> 0 (or a -> inf) at 1
    inf = _full(a, np.inf)
    mass_at_0 = ew.bitwise_or(ew.eq(a, zero), ew.eq(b, inf))
    mass_at_1 = ew.bitwise_or(ew.eq(b, zero), ew.eq(a, inf))
    bad = ew.bitwise_or(bad, ew.bitwise_and(mass_at_0, mass_at_1))
    # the fraction converges fast for x < (a + 1) / (a + b + 2); elsewhere use the symmetry
    direct = ew.lt(x, ew.div(ew.add(a, one), ew.add(ew.add(a, b), _full(a, 2.0))))
    aa, bb = ew.select(direct, a, b), ew.select(direct, b, a)
    xx = ew.select(direct, x, ew.sub(one, x))
    ok = ew.bitwise_not(ew.bitwise_or(bad, ew.bitwise_or(mass_at_0, mass_at_1)))
    inside = ew.bitwise_and(ok, ew.bitwise_and(ew.gt(xx, zero), ew.lt(xx, one)))
    # harmless stand-ins where the fraction is not used, so the loop's test stays finite
    aa, bb = ew.select(inside, aa, one), ew.select(inside, bb, one)
    xx = ew.select(inside, xx, _full(a, 0.5))
    log_front = ew.sub(ew.add(ew.mul(aa, tr.log(xx)), ew.mul(bb, tr.log1p(ew.neg(xx)))),
                       ew.sub(ew.add(lgamma(aa), lgamma(bb)), lgamma(ew.add(aa, bb))))
    val = ew.div(ew.mul(tr.exp(log_front), _continued_fraction(aa, bb, xx, eps)), aa)
    val = ew.select(direct, val, ew.sub(one, val))
    val = ew.select(ew.eq(x, zero), zero, ew.select(ew.eq(x, one), one, val))
    val = ew.select(mass_at_0, ew.select(ew.eq(x, zero), zero, one), val)
    val = ew.select(mass_at_1, ew.select(ew.eq(x, one), one, zero), val)
    return ew.select(bad, nan, val)


def _betainc_da_db(g: Any, a: Any, b: Any, x: Any) -> Any:
    raise ValueError("Betainc gradient with respect to a and b not supported.")


def _betainc_dx(g: Any, a: Any, b: Any, x: Any) -> Any:
    # the Beta(a, b) density: x^(a-1) (1-x)^(b-1) / B(a, b)
    log_beta = ew.sub(ew.add(lgamma(a), lgamma(b)), lgamma(ew.add(a, b)))
    one = _rules.const_like(x, 1)
    log_density = ew.sub(ew.add(ew.mul(ew.sub(b, one), tr.log1p(ew.neg(x))),
                                ew.mul(ew.sub(a, one), tr.log(x))), log_beta)
    return ew.mul(g, tr.exp(log_density))


regularized_incomplete_beta_p = binop_primitive(
    "regularized_incomplete_beta", _float, _staged_lowering("betainc", _betainc_impl))
_rules.defjvp(regularized_incomplete_beta_p, _betainc_da_db, _betainc_da_db, _betainc_dx)


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularized incomplete beta function ``I_x(a, b)``, elementwise (same float dtypes;
    ``nan`` outside ``a, b >= 0``, ``0 <= x <= 1``). Differentiable in ``x``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> round(float(lax.betainc(jnp.float32(1.0), jnp.float32(1.0), jnp.float32(0.3))), 4)
        0.3
    """
    return regularized_incomplete_beta_p.bind(a, b, x)
