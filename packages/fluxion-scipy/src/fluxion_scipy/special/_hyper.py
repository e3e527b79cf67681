"""Confluent and Gauss hypergeometric functions: hyp1f1, hyp2f1."""

from __future__ import annotations

from typing import Any

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact
from fluxion_scipy.special._gamma import gamma

__all__ = ["hyp1f1", "hyp2f1"]


def _series(ratio: Any, like: Any, terms: int) -> Any:
    # sum_k t_k with t_0 = 1 and t_{k+1} = t_k * ratio(k); a scan, so reverse-mode works through it.
    def body(carry: tuple, k: Any) -> tuple:
        total, term = carry
        term = term * ratio(k)
        return (total + term, term), None

    init = (jnp.ones_like(like), jnp.ones_like(like))
    (total, _), _ = lax.scan(body, init, jnp.arange(terms, dtype=like.dtype))
    return total


def _m_series(a: Any, b: Any, x: Any) -> Any:
    return _series(lambda k: (a + k) / (b + k) * x / (k + 1.0), x, 500)


@fluxion.jit
def _hyp1f1_impl(a: Any, b: Any, x: Any) -> Any:
    pos = jnp.where(x >= 0, x, 0.0)
    neg = jnp.where(x < 0, -x, 0.0)
    # Kummer's transformation keeps the series free of cancellation: M(a,b,x) = e^x M(b-a,b,-x).
    value = jnp.where(x >= 0, _m_series(a, b, pos), jnp.exp(-neg) * _m_series(b - a, b, neg))
    return jnp.where(a == 0, jnp.ones_like(value), value)


def hyp1f1(a: Any, b: Any, x: Any) -> Any:
    """Kummer's confluent hypergeometric function 1F1(a; b; x) = M(a, b, x).

    Summed as a power series (after Kummer's transformation for x < 0); accurate for |x| up to a
    few hundred. Differentiable in all three arguments.

    Example:
        >>> float(hyp1f1(1.0, 1.0, 1.0))  # e
        2.718...
    """
    a, b, x = promote_inexact("hyp1f1", a, b, x)
    a, b, x = jnp.broadcast_arrays(a, b, x)
    return _hyp1f1_impl(a, b, x)


def _f_series(a: Any, b: Any, c: Any, z: Any) -> Any:
    return _series(lambda k: (a + k) * (b + k) / ((c + k) * (k + 1.0)) * z, z, 600)


def _is_nonpos_int(v: Any) -> Any:
    return (v <= 0) & (v == jnp.floor(v))


@fluxion.jit
def _hyp2f1_impl(a: Any, b: Any, c: Any, x: Any) -> Any:
    # Pfaff's transformation moves x < 0 into (0, 1): F(a,b;c;x) = (1-x)^-a F(a,c-b;c;x/(x-1)).
    neg = x < 0
    z = jnp.where(neg, x / (x - 1.0), x)
    b2 = jnp.where(neg, c - b, b)
    prefactor = jnp.where(neg, jnp.power(jnp.where(neg, 1.0 - x, 1.0), -a), 1.0)
    z_in = jnp.clip(z, 0.0, 1.0)
    terminating = _is_nonpos_int(a) | _is_nonpos_int(b2)
    direct = _f_series(a, b2, c, jnp.where(z_in < 1.0, z_in, 0.0))
    # Near 1 (and c - a - b not an integer): the connection formula around z = 1.
    s = c - a - b2
    w = jnp.clip(1.0 - z_in, 0.0, 0.25)
    s_int = s == jnp.round(s)
    s_safe = jnp.where(s_int, s + 0.5, s)
    t1 = gamma(c) * gamma(s_safe) / (gamma(c - a) * gamma(c - b2)) * _f_series(
        a, b2, 1.0 - s_safe, w)
    t2 = (gamma(c) * gamma(-s_safe) / (gamma(a) * gamma(b2)) * jnp.power(w, s_safe)
          * _f_series(c - a, c - b2, 1.0 + s_safe, w))
    near_one = t1 + t2
    use_near = (z_in > 0.9) & ~terminating & ~s_int
    value = jnp.where(use_near, near_one, direct)
    # z == 1: Gauss's theorem when it converges.
    s_pos = jnp.where(s > 0, s, 1.0)
    gauss = gamma(c) * gamma(s_pos) / (gamma(c - a) * gamma(c - b2))
    value = jnp.where((z_in == 1.0) & ~terminating, jnp.where(s > 0, gauss, jnp.inf), value)
    value = prefactor * value
    value = jnp.where((a == 0) | (b == 0), jnp.ones_like(value), value)
    return jnp.where((x > 1) | _is_nonpos_int(c), jnp.nan, value)


def hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
    """Gauss's hypergeometric function 2F1(a, b; c; x) for real x <= 1.

    Power series for |x| < 0.9 (after Pfaff's transformation for x < 0), the connection formula
    about x = 1 beyond, Gauss's theorem at x = 1; nan for x > 1 and for c a non-positive integer.

    Example:
        >>> float(hyp2f1(1.0, 1.0, 2.0, 0.5))  # -log(1 - x)/x
        1.386...
    """
    a, b, c, x = promote_inexact("hyp2f1", a, b, c, x)
    a, b, c, x = jnp.broadcast_arrays(a, b, c, x)
    return _hyp2f1_impl(a, b, c, x)
