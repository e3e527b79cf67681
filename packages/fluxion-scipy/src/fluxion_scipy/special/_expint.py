"""Exponential, sine/cosine integrals and the dilogarithm: expi, exp1, expn, sici, spence."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact

__all__ = ["expi", "exp1", "expn", "sici", "spence"]

_EULER = 0.57721566490153286061


def _expn_cf(n: Any, x: Any, terms: int = 60) -> Any:
    # E_n(x) = exp(-x) / (x + n - 1 n/(x + n + 2 - 2 (n + 1)/(x + n + 4 - ...))), for x > 1, evaluated
    # from the tail up.
    def step(i: Any, t: Any) -> Any:
        k = terms - i
        return x + n + 2.0 * (k - 1) - k * (n + k - 1.0) / t

    t = lax.fori_loop(0, terms, step, x + n + 2.0 * terms)
    return jnp.exp(-x) / t


def _exp1_series(x: Any, terms: int = 30) -> Any:
    def step(k: Any, carry: tuple) -> tuple:
        total, term = carry
        term = -term * x / k
        return total - term / k, term

    total, _ = lax.fori_loop(1, terms + 1, step, (jnp.zeros_like(x), jnp.ones_like(x)))
    return -_EULER - jnp.log(x) + total


@fluxion.jit
def _exp1_impl(x: Any) -> Any:
    small = jnp.clip(x, 1e-30, 1.0)
    large = jnp.maximum(x, 1.0)
    value = jnp.where(x <= 1.0, _exp1_series(small), _expn_cf(1.0, large))
    value = jnp.where(x == 0, jnp.inf, value)
    return jnp.where((x < 0) | jnp.isnan(x), jnp.nan, value)


@fluxion.jit
def _expi_pos(x: Any) -> Any:
    # Ei(x) for x > 0: the power series up to 50, the asymptotic series beyond.
    xs = jnp.clip(x, 1e-30, 50.0)

    def series_step(k: Any, carry: tuple) -> tuple:
        total, term = carry
        term = term * xs / k
        return total + term / k, term

    total, _ = lax.fori_loop(1, 160, series_step, (jnp.zeros_like(xs), jnp.ones_like(xs)))
    series = _EULER + jnp.log(xs) + total
    xl = jnp.maximum(x, 50.0)

    def asym_step(k: Any, carry: tuple) -> tuple:
        total, term = carry
        term = term * k / xl
        return total + term, term

    asym, _ = lax.fori_loop(1, 40, asym_step, (jnp.ones_like(xl), jnp.ones_like(xl)))
    return jnp.where(x <= 50.0, series, jnp.exp(xl) / xl * asym)


@fluxion.custom_jvp
def _expi(x: Any) -> Any:
    pos = _expi_pos(jnp.where(x > 0, x, 1.0))
    neg = -_exp1_impl(jnp.where(x < 0, -x, 1.0))
    value = jnp.where(x > 0, pos, neg)
    return jnp.where(x == 0, -jnp.inf, jnp.where(jnp.isnan(x), jnp.nan, value))


@_expi.defjvp
def _expi_jvp(primals: tuple, tangents: tuple) -> tuple:
    x, = primals
    t, = tangents
    return _expi(x), t * jnp.exp(x) / x


def expi(x: Any) -> Any:
    """Exponential integral Ei(x) = principal value of integral_{-inf}^x exp(t)/t dt.

    Example:
        >>> float(expi(1.0))
        1.8951...
    """
    x, = promote_inexact("expi", x)
    return _expi(x)


def exp1(x: Any) -> Any:
    """Exponential integral E1(x) = integral_1^inf exp(-x t)/t dt for x >= 0 (nan for x < 0).

    Example:
        >>> float(exp1(1.0))
        0.2193...
    """
    x, = promote_inexact("exp1", x)
    return _expn(x, jnp.ones_like(x))


@fluxion.jit
def _expn_impl(n: Any, x: Any) -> Any:
    small = jnp.clip(x, 1e-30, 1.0)
    # Series for x <= 1: E_n(x) = (-x)^(n-1)/(n-1)! (psi(n) - log x) - sum_{k != n-1} (-x)^k/((k-n+1) k!).
    nm1 = n - 1.0

    def step(k: Any, carry: tuple) -> tuple:
        total, term = carry  # term = (-x)^k / k!
        denom = k - nm1
        total = total + jnp.where(denom == 0, 0.0, term / jnp.where(denom == 0, 1.0, denom))
        return total, -term * small / (k + 1.0)

    total, _ = lax.fori_loop(0, 40, step, (jnp.zeros_like(small), jnp.ones_like(small)))
    n_safe = jnp.maximum(n, 1.0)
    lead = jnp.exp(nm1 * jnp.log(small) - lax.lgamma(n_safe)) * jnp.where(
        jnp.remainder(nm1, 2.0) == 1.0, -1.0, 1.0)
    series = lead * (lax.digamma(n_safe) - jnp.log(small)) - total
    large = jnp.maximum(x, 1.0)
    value = jnp.where(x <= 1.0, series, _expn_cf(n, large))
    value = jnp.where(n == 0, jnp.exp(-x) / x, value)
    at_zero = jnp.where(n <= 1, jnp.inf, 1.0 / jnp.maximum(nm1, 1.0))
    value = jnp.where(x == 0, at_zero, value)
    bad = (n < 0) | (x < 0) | (n != jnp.floor(n)) | jnp.isnan(x) | jnp.isnan(n)
    return jnp.where(bad, jnp.nan, value)


@partial(fluxion.custom_jvp, nondiff_argnums=(0,))
def _expn_nd(n: Any, x: Any) -> Any:
    return _expn_impl(n, x)


@_expn_nd.defjvp
def _expn_nd_jvp(n: Any, primals: tuple, tangents: tuple) -> tuple:
    x, = primals
    t, = tangents
    return _expn_nd(n, x), -t * _expn_impl(n - 1.0, x)


def _expn(x: Any, n: Any) -> Any:
    return _expn_nd(n, x)


def expn(n: Any, x: Any) -> Any:
    """Generalised exponential integral E_n(x) = integral_1^inf exp(-x t)/t^n dt (n integer >= 0).

    Example:
        >>> float(expn(2, 1.0))
        0.1484...
    """
    n, x = promote_inexact("expn", n, x)
    n, x = jnp.broadcast_arrays(n, x)
    return _expn(x, n)


@fluxion.jit
def _sici_impl(x: Any) -> tuple[Any, Any]:
    ax = jnp.abs(x)
    xs = jnp.clip(ax, 1e-30, 4.0)
    x2 = xs * xs
    si = jnp.zeros_like(xs)
    ci = jnp.zeros_like(xs)
    term = xs  # (-1)^k x^(2k+1) / (2k+1)!
    for k in range(0, 20):
        if k > 0:
            term = -term * x2 / ((2 * k) * (2 * k + 1))
        si = si + term / (2 * k + 1)
    term = jnp.ones_like(xs)  # (-1)^k x^(2k) / (2k)!
    for k in range(1, 20):
        term = -term * x2 / ((2 * k - 1) * (2 * k))
        ci = ci + term / (2 * k)
    ci = _EULER + jnp.log(xs) + ci
    # |x| > 4: E1(i x) = -Ci(x) + i (Si(x) - pi/2), by its continued fraction.
    xl = jnp.maximum(ax, 4.0)
    z = 1j * xl.astype(jnp.result_type(xl, 1j))

    def cf_step(i: Any, t: Any) -> Any:
        k = (80 - i).astype(xl.dtype)
        return z + 1.0 + 2.0 * (k - 1) - (k * k) / t

    t = lax.fori_loop(0, 80, cf_step, z + 1.0 + 2.0 * 80)
    e1 = jnp.exp(-z) / t
    si_l = math.pi / 2 + jnp.imag(e1)
    ci_l = -jnp.real(e1)
    si = jnp.where(ax <= 4.0, si, si_l)
    ci = jnp.where(ax <= 4.0, ci, ci_l)
    si = jnp.where(x < 0, -si, si)
    si = jnp.where(jnp.isinf(x), jnp.sign(x) * math.pi / 2, si)
    ci = jnp.where(jnp.isinf(x), 0.0, ci)
    ci = jnp.where(x == 0, -jnp.inf, jnp.where(x < 0, jnp.nan, ci))
    return si, ci


@fluxion.custom_jvp
def _sici(x: Any) -> tuple[Any, Any]:
    return _sici_impl(x)


@_sici.defjvp
def _sici_jvp(primals: tuple, tangents: tuple) -> tuple:
    x, = primals
    t, = tangents
    si, ci = _sici(x)
    return (si, ci), (t * jnp.sin(x) / x, t * jnp.cos(x) / x)


def sici(x: Any) -> tuple[Any, Any]:
    """Sine and cosine integrals (Si(x), Ci(x)); Ci is nan for x < 0, as SciPy's real version.

    Example:
        >>> [round(float(v), 4) for v in sici(1.0)]
        [0.9461, 0.3374]
    """
    x, = promote_inexact("sici", x)
    return _sici(x)


def _li2_small(y: Any) -> Any:
    # Li2(y) = sum y^k / k^2 for |y| <= 1/2.
    def step(k: Any, carry: tuple) -> tuple:
        total, power = carry
        power = power * y
        return total + power / (k * k), power

    total, _ = lax.fori_loop(1, 56, step, (jnp.zeros_like(y), jnp.ones_like(y)))
    return total


def _li2_moderate(y: Any) -> Any:
    # Li2 on [-1, 1]: series on [-1/2, 1/2], Euler's reflection above, Landen's identity below.
    up = y > 0.5
    lo = y < -0.5
    y_mid = jnp.clip(y, -0.5, 0.5)
    y_up = jnp.clip(y, 0.5, 1.0)
    one_minus = jnp.maximum(1.0 - y_up, 1e-300)
    reflect = (math.pi ** 2 / 6 - jnp.log(y_up) * jnp.log(one_minus)
               - _li2_small(1.0 - y_up))
    reflect = jnp.where(y_up == 1.0, math.pi ** 2 / 6, reflect)
    y_lo = jnp.clip(y, -1.0, -0.5)
    landen = -_li2_small(y_lo / (y_lo - 1.0)) - 0.5 * jnp.log1p(-y_lo) ** 2
    return jnp.where(up, reflect, jnp.where(lo, landen, _li2_small(y_mid)))


@fluxion.jit
def _spence_impl(x: Any) -> Any:
    y = 1.0 - x  # spence(x) = Li2(1 - x)
    inner = _li2_moderate(jnp.clip(y, -1.0, 1.0))
    # y < -1: Li2(y) = -pi^2/6 - log(-y)^2 / 2 - Li2(1/y).
    y_far = jnp.minimum(y, -1.0)
    outer = -math.pi ** 2 / 6 - 0.5 * jnp.log(-y_far) ** 2 - _li2_moderate(1.0 / y_far)
    value = jnp.where(y < -1.0, outer, inner)
    return jnp.where((x < 0) | jnp.isnan(x), jnp.nan, value)


def spence(x: Any) -> Any:
    """Spence's function (dilogarithm) integral_1^x log(t)/(1 - t) dt = Li2(1 - x), for x >= 0.

    Example:
        >>> float(spence(0.0))  # pi**2 / 6
        1.6449...
    """
    x, = promote_inexact("spence", x)
    return _spence_impl(x)
