"""Error-function family: erf, erfc, erfinv, erfcx, dawsn, wofz, the normal CDF and its inverse,
log_ndtr, and Owen's T."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact

__all__ = ["erf", "erfc", "erfinv", "erfcx", "dawsn", "wofz", "ndtr", "ndtri", "log_ndtr",
           "owens_t", "fresnel"]

_SQRT2 = math.sqrt(2.0)
_SQRTPI = math.sqrt(math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def erf(x: Any) -> Any:
    """The error function 2/sqrt(pi) * integral_0^x exp(-t**2) dt.

    Example:
        >>> float(erf(0.5))
        0.5204...
    """
    x, = promote_inexact("erf", x)
    return lax.erf(x)


def erfc(x: Any) -> Any:
    """The complementary error function 1 - erf(x), accurate in the right tail.

    Example:
        >>> float(erfc(0.5))
        0.4795...
    """
    x, = promote_inexact("erfc", x)
    return lax.erfc(x)


def erfinv(x: Any) -> Any:
    """Inverse of the error function on (-1, 1); +-inf at +-1, nan outside.

    Example:
        >>> float(erfinv(0.5))
        0.4769...
    """
    x, = promote_inexact("erfinv", x)
    return lax.erf_inv(x)


def _erfcx_cf(x: Any, terms: int) -> Any:
    # Laplace's continued fraction for x > 0: erfcx(x) = 1 / (sqrt(pi) (x + (1/2)/(x + 1/(x + ...)))),
    # evaluated from the tail up.
    def step(i: Any, t: Any) -> Any:
        return x + (0.5 * (terms - i)) / t

    return 1.0 / (_SQRTPI * lax.fori_loop(0, terms, step, x))


@fluxion.custom_jvp
@fluxion.jit
def _erfcx(x: Any) -> Any:
    threshold = 2.0
    small = jnp.minimum(x, threshold)
    direct = jnp.exp(small * small) * lax.erfc(small)
    large = jnp.maximum(x, threshold)
    return jnp.where(x < threshold, direct, _erfcx_cf(large, 80))


@_erfcx.defjvp
def _erfcx_jvp(primals: tuple, tangents: tuple) -> tuple:
    x, = primals
    t, = tangents
    y = _erfcx(x)
    return y, t * (2.0 * x * y - 2.0 / _SQRTPI)


def erfcx(x: Any) -> Any:
    """Scaled complementary error function exp(x**2) * erfc(x), without overflow for large x.

    Example:
        >>> float(erfcx(10.0))
        0.05614...
    """
    x, = promote_inexact("erfcx", x)
    return _erfcx(x)


_DAWSON_H = 0.25
_DAWSON_N = 25  # odd terms on each side; the neglected terms are below exp(-(N*h)**2)


@fluxion.custom_jvp
@fluxion.jit
def _dawsn(x: Any) -> Any:
    # Rybicki's sum: D(x) = 1/sqrt(pi) * sum over odd n of exp(-(x - n h)**2) / n, regrouped around
    # the even multiple n0*h of h nearest to x so that every term stays well scaled.
    h = _DAWSON_H
    n0 = 2.0 * jnp.round(x / (2.0 * h))
    xp = x - n0 * h

    def term(i: Any, total: Any) -> Any:
        n = 2.0 * i - (2 * _DAWSON_N - 1)  # the odd integers -(2N-1) .. 2N-1
        return total + jnp.exp(-(xp - n * h) ** 2) / (n0 + n)

    total = lax.fori_loop(0, 2 * _DAWSON_N, term, jnp.zeros_like(x))
    series = total / _SQRTPI
    # Near 0 the Taylor series sum_n (-2)^n x^(2n+1) / (2n+1)!! has no cancellation.
    xs = jnp.clip(x, -0.2, 0.2)
    taylor = jnp.zeros_like(x)
    term = xs
    for n in range(0, 10):
        if n > 0:
            term = term * (-2.0 * xs * xs) / (2 * n + 1)
        taylor = taylor + term
    series = jnp.where(jnp.abs(x) < 0.2, taylor, series)
    # Beyond |x| = 1e4 the asymptotic 1/(2x) (1 + 1/(2x^2)) is exact to the dtype.
    big = jnp.where(jnp.abs(x) > 1e4, x, 1e4)
    return jnp.where(jnp.abs(x) > 1e4, (1.0 + 0.5 / (big * big)) / (2.0 * big), series)


@_dawsn.defjvp
def _dawsn_jvp(primals: tuple, tangents: tuple) -> tuple:
    x, = primals
    t, = tangents
    y = _dawsn(x)
    return y, t * (1.0 - 2.0 * x * y)


def dawsn(x: Any) -> Any:
    """Dawson's integral D(x) = exp(-x**2) * integral_0^x exp(t**2) dt.

    Example:
        >>> float(dawsn(1.0))
        0.5380...
    """
    x, = promote_inexact("dawsn", x)
    return _dawsn(x)


def _weideman_coefficients(n: int) -> tuple[np.ndarray, float]:
    # Weideman (1994), "Computation of the complex error function": w(z) for Im z >= 0 as a
    # polynomial in Z = (L + iz)/(L - iz); its coefficients are a discrete Fourier transform.
    m = 2 * n
    k = np.arange(-m + 1, m)
    length = math.sqrt(n / math.sqrt(2.0))
    theta = k * np.pi / m
    t = length * np.tan(theta / 2.0)
    f = np.concatenate([[0.0], np.exp(-t * t) * (length * length + t * t)])
    a = np.real(np.fft.fft(np.fft.fftshift(f))) / (2 * m)
    return np.flipud(a[1:n + 1]), length


_W_COEFFS, _W_L = _weideman_coefficients(40)


def _wofz_upper(z: Any) -> Any:
    denom = _W_L - 1j * z
    zz = (_W_L + 1j * z) / denom
    p = jnp.zeros_like(z)
    for c in _W_COEFFS:
        p = p * zz + float(c)
    return 2.0 * p / (denom * denom) + (1.0 / _SQRTPI) / denom


@fluxion.custom_jvp
@fluxion.jit
def _wofz(z: Any) -> Any:
    lower = jnp.imag(z) < 0
    zu = jnp.where(lower, -z, z)
    w = _wofz_upper(zu)
    zl = jnp.where(lower, z, 0.0)
    return jnp.where(lower, 2.0 * jnp.exp(-zl * zl) - w, w)


@_wofz.defjvp
def _wofz_jvp(primals: tuple, tangents: tuple) -> tuple:
    z, = primals
    t, = tangents
    w = _wofz(z)
    return w, t * (-2.0 * z * w + 2j / _SQRTPI)


def wofz(z: Any) -> Any:
    """The Faddeeva function w(z) = exp(-z**2) * erfc(-i z), for complex (or real) z.

    Example:
        >>> complex(wofz(1.0 + 1.0j))
        (0.3047...+0.2082...j)
    """
    z = jnp.asarray(z)
    dtype = jnp.result_type(z, 1j)
    return _wofz(z.astype(dtype))


def ndtr(x: Any) -> Any:
    """Standard normal cumulative distribution function, accurate in both tails.

    Example:
        >>> float(ndtr(0.0))
        0.5
    """
    x, = promote_inexact("ndtr", x)
    z = x / _SQRT2
    az = jnp.abs(z)
    mid = 0.5 + 0.5 * lax.erf(z)
    tail = 0.5 * lax.erfc(az)
    return jnp.where(az < 1.0 / _SQRT2, mid, jnp.where(z > 0, 1.0 - tail, tail))


def _normal_logpdf(x: Any) -> Any:
    return -0.5 * x * x - _LOG_SQRT_2PI


def _log_ndtr_asymptotic(x: Any, order: int) -> Any:
    # log Phi(x) for x -> -inf: log(phi(x)/(-x)) + log(sum_n (-1)^n (2n-1)!! / x^(2n)).
    x2 = x * x
    total = jnp.ones_like(x)
    term = jnp.ones_like(x)
    for n in range(1, order + 1):
        term = term * (-(2 * n - 1)) / x2
        total = total + term
    return _normal_logpdf(x) - jnp.log(-x) + jnp.log(total)


@partial(fluxion.custom_jvp, nondiff_argnums=(1,))
def _log_ndtr(x: Any, series_order: int) -> Any:
    x = jnp.asarray(x)
    double = np.dtype(x.dtype) == np.dtype("float64")
    lower, upper = (-20.0, 8.0) if double else (-10.0, 5.0)
    x_up = jnp.maximum(x, upper)
    hi = jnp.log1p(-ndtr(-x_up))
    x_mid = jnp.clip(x, lower, upper)
    # Above 0, log1p of the (small, accurate) upper tail keeps full relative precision.
    mid = jnp.where(x_mid > 0, jnp.log1p(-ndtr(-x_mid)), jnp.log(ndtr(x_mid)))
    x_lo = jnp.minimum(x, lower)
    lo = _log_ndtr_asymptotic(x_lo, series_order)
    return jnp.where(x > upper, hi, jnp.where(x > lower, mid, lo))


@_log_ndtr.defjvp
def _log_ndtr_jvp(series_order: int, primals: tuple, tangents: tuple) -> tuple:
    x, = primals
    t, = tangents
    y = _log_ndtr(x, series_order)
    return y, t * jnp.exp(_normal_logpdf(x) - y)


def log_ndtr(x: Any, series_order: int = 3) -> Any:
    """Log of the standard normal CDF, accurate far into both tails.

    ``series_order`` (0..30) is the number of terms of the asymptotic series used for x far below 0.

    Example:
        >>> float(log_ndtr(-30.0))
        -454.3...
    """
    if not isinstance(series_order, int) or not 0 <= series_order <= 30:
        raise ValueError(f"log_ndtr: series_order must be an int in [0, 30], got {series_order!r}")
    x, = promote_inexact("log_ndtr", x)
    return _log_ndtr(x, series_order)


@fluxion.custom_jvp
@fluxion.jit
def _ndtri(p: Any) -> Any:
    # Newton on log Phi(x) = log q for q = min(p, 1 - p) <= 1/2, from an asymptotic start.
    p = jnp.asarray(p)
    q = jnp.minimum(p, 1.0 - p)
    qs = jnp.clip(q, jnp.finfo(p.dtype).tiny, 0.5)
    logq = jnp.log(qs)
    t = jnp.sqrt(-2.0 * logq)
    # Tail start from Abramowitz & Stegun 26.2.23 (error < 4.5e-4), then Newton in log space.
    x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
          / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t))
    steps = 4 if np.dtype(p.dtype) == np.dtype("float64") else 3
    for _ in range(steps):
        lf = _log_ndtr(x, 3)
        x = x - (lf - logq) * jnp.exp(lf - _normal_logpdf(x))
    x = jnp.where(q == 0.5, 0.0, x)
    out = jnp.where(p > 0.5, -x, x)
    out = jnp.where(p == 0.0, -jnp.inf, jnp.where(p == 1.0, jnp.inf, out))
    return jnp.where((p < 0) | (p > 1) | jnp.isnan(p), jnp.nan, out)


@_ndtri.defjvp
def _ndtri_jvp(primals: tuple, tangents: tuple) -> tuple:
    p, = primals
    t, = tangents
    x = _ndtri(p)
    return x, t * jnp.exp(-_normal_logpdf(x))


def ndtri(p: Any) -> Any:
    """Inverse of the standard normal CDF (the probit function); nan outside [0, 1].

    Example:
        >>> float(ndtri(0.975))
        1.959...
    """
    p, = promote_inexact("ndtri", p)
    return _ndtri(p)


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(48)


def _owens_t_small_a(h: Any, a: Any) -> Any:
    # T(h, a) = 1/(2 pi) integral_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx, for 0 <= a <= 1, by
    # Gauss-Legendre quadrature (the integrand is smooth on the whole interval).
    h = jnp.expand_dims(h, -1)
    a = jnp.expand_dims(a, -1)
    xs = 0.5 * a * (jnp.asarray(_GL_NODES, h.dtype) + 1.0)
    one_x2 = 1.0 + xs * xs
    f = jnp.exp(-0.5 * h * h * one_x2) / one_x2
    return jnp.sum(f * jnp.asarray(_GL_WEIGHTS, h.dtype), axis=-1) * a[..., 0] / (4.0 * math.pi)


@fluxion.custom_jvp
@fluxion.jit
def _owens_t(h: Any, a: Any) -> Any:
    ah_, aa = jnp.abs(h), jnp.abs(a)
    small = aa <= 1.0
    a_small = jnp.where(small, aa, 0.0)
    direct = _owens_t_small_a(ah_, a_small)
    # For a > 1: T(h, a) = Phi(h)/2 + Phi(ah)/2 - Phi(h) Phi(ah) - T(ah, 1/a), h >= 0.
    a_big = jnp.where(small, 2.0, aa)
    ph, pah = ndtr(ah_), ndtr(a_big * ah_)
    reflected = 0.5 * ph + 0.5 * pah - ph * pah - _owens_t_small_a(a_big * ah_, 1.0 / a_big)
    value = jnp.where(small, direct, reflected)
    value = jnp.where(jnp.isinf(aa), 0.5 * ndtr(-ah_), value)
    return jnp.sign(a) * value


@_owens_t.defjvp
def _owens_t_jvp(primals: tuple, tangents: tuple) -> tuple:
    h, a = primals
    th, ta = tangents
    y = _owens_t(h, a)
    dh = -jnp.exp(_normal_logpdf(h)) * lax.erf(a * h / _SQRT2) / 2.0
    one_a2 = 1.0 + a * a
    da = jnp.exp(-0.5 * h * h * one_a2) / (2.0 * math.pi * one_a2)
    return y, th * dh + ta * da


def owens_t(h: Any, a: Any) -> Any:
    """Owen's T function T(h, a), the bivariate-normal probability building block.

    Example:
        >>> float(owens_t(0.0, 1.0))  # atan(1) / (2 pi)
        0.125...
    """
    h, a = promote_inexact("owens_t", h, a)
    h, a = jnp.broadcast_arrays(h, a)
    return _owens_t(h, a)


@fluxion.jit
def _fresnel_impl(x: Any) -> tuple[Any, Any]:
    ax = jnp.abs(x)
    # |x| < 1/2: the power series in (pi/2) x^2.
    xs = jnp.minimum(ax, 0.5)
    u = 0.5 * math.pi * xs * xs
    c_sum, s_sum = jnp.zeros_like(xs), jnp.zeros_like(xs)
    term = jnp.ones_like(xs)  # (-1)^j u^j ... with u^n / n!
    for n in range(0, 16):
        if n > 0:
            term = term * u / n
        sign = 1.0 if (n // 2) % 2 == 0 else -1.0
        if n % 2 == 0:
            c_sum = c_sum + sign * term / (2 * n + 1)
        else:
            s_sum = s_sum + sign * term / (2 * n + 1)
    c_small, s_small = xs * c_sum, xs * s_sum
    # Otherwise: C + iS = (1 + i)/2 (1 - exp(i pi x^2/2) w((1 + i) sqrt(pi) x / 2)), x > 0.
    xl = jnp.maximum(ax, 0.5)
    cdt = jnp.result_type(xl, 1j)
    z = ((1.0 + 1.0j) * (_SQRTPI / 2.0) * xl).astype(cdt)
    phase = jnp.exp(1j * (0.5 * math.pi * xl * xl).astype(cdt))
    val = (0.5 + 0.5j) * (1.0 - phase * _wofz_upper(z))
    c_val = jnp.where(ax < 0.5, c_small, jnp.real(val))
    s_val = jnp.where(ax < 0.5, s_small, jnp.imag(val))
    c_val = jnp.where(jnp.isinf(ax), 0.5, c_val)
    s_val = jnp.where(jnp.isinf(ax), 0.5, s_val)
    sign = jnp.where(x < 0, -1.0, 1.0)
    return sign * s_val, sign * c_val


@fluxion.custom_jvp
def _fresnel(x: Any) -> tuple[Any, Any]:
    return _fresnel_impl(x)


@_fresnel.defjvp
def _fresnel_jvp(primals: tuple, tangents: tuple) -> tuple:
    x, = primals
    t, = tangents
    s, c = _fresnel(x)
    arg = 0.5 * math.pi * x * x
    return (s, c), (t * jnp.sin(arg), t * jnp.cos(arg))


def fresnel(x: Any) -> tuple[Any, Any]:
    """Fresnel integrals (S(x), C(x)) = integral_0^x (sin, cos)(pi t**2 / 2) dt, as SciPy.

    Example:
        >>> [round(float(v), 4) for v in fresnel(1.0)]
        [0.4383, 0.7799]
    """
    x, = promote_inexact("fresnel", x)
    return _fresnel(x)
