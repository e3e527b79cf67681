"""Gamma-family functions: gamma, log-gamma, beta, factorial, combinations, incomplete gamma."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact

__all__ = ["gammaln", "gammasgn", "gamma", "loggamma", "betaln", "beta", "factorial", "comb",
           "digamma", "polygamma", "gammainc", "gammaincc", "multigammaln", "poch", "bernoulli"]


def gammaln(x: Any) -> Any:
    """Natural log of the absolute value of the gamma function, as ``scipy.special.gammaln``.

    Example:
        >>> float(gammaln(5.0))  # log(4!)
        3.178...
    """
    x, = promote_inexact("gammaln", x)
    return lax.lgamma(x)


def gammasgn(x: Any) -> Any:
    """Sign of the gamma function: 1 or -1, nan at the poles (0, -1, -2, ...) and for nan.

    Example:
        >>> gammasgn(jnp.array([2.5, -0.5, -1.5])).tolist()
        [1.0, -1.0, 1.0]
    """
    x, = promote_inexact("gammasgn", x)
    fl = jnp.floor(x)
    odd = jnp.remainder(fl, 2.0) == 1.0
    neg = jnp.where(odd, -1.0, 1.0).astype(x.dtype)
    out = jnp.where(x > 0, jnp.ones_like(x), neg)
    out = jnp.where(x == 0, jnp.copysign(jnp.ones_like(x), x), out)
    return jnp.where(((x < 0) & (x == fl)) | jnp.isnan(x), jnp.nan, out)


def gamma(x: Any) -> Any:
    """The gamma function for real arguments, as ``scipy.special.gamma``.

    Example:
        >>> float(gamma(5.0))
        24.0...
    """
    x, = promote_inexact("gamma", x)
    return gammasgn(x) * jnp.exp(lax.lgamma(x))


def loggamma(x: Any) -> Any:
    """Principal branch of log-gamma for real arguments: nan for negative x, as SciPy's real loggamma.

    Example:
        >>> float(loggamma(3.0))
        0.693...
    """
    x, = promote_inexact("loggamma", x)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise TypeError("loggamma: complex arguments are not supported; got dtype "
                        f"{x.dtype}")
    return jnp.where(x < 0, jnp.nan, lax.lgamma(x))


def betaln(a: Any, b: Any) -> Any:
    """Natural log of the absolute value of the beta function B(a, b).

    Example:
        >>> float(betaln(1.0, 2.0))  # log(1/2)
        -0.693...
    """
    a, b = promote_inexact("betaln", a, b)
    return lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)


def beta(a: Any, b: Any) -> Any:
    """The beta function B(a, b) = gamma(a) gamma(b) / gamma(a + b).

    Example:
        >>> float(beta(2.0, 3.0))
        0.0833...
    """
    a, b = promote_inexact("beta", a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * jnp.exp(betaln(a, b))


def factorial(n: Any, exact: bool = False) -> Any:
    """n! = gamma(n + 1) (0 for negative n); ``exact=True`` is not supported, as in JAX.

    Example:
        >>> float(factorial(4))
        24.0...
    """
    if exact:
        raise NotImplementedError("factorial: exact=True is not supported (results are floats)")
    n, = promote_inexact("factorial", n)
    return jnp.where(n < 0, 0.0, jnp.exp(lax.lgamma(n + 1))).astype(n.dtype)


def comb(N: Any, k: Any, *, repetition: bool = False) -> Any:  # noqa: N803 (SciPy's name)
    """Number of combinations of N things taken k at a time (as floats), as ``scipy.special.comb``.

    With ``repetition=True`` counts combinations with repetition, ``comb(N + k - 1, k)``.

    Example:
        >>> float(comb(5, 2))
        10.0...
    """
    N, k = promote_inexact("comb", N, k)  # noqa: N806
    if repetition:
        return comb(N + k - 1, k)
    value = jnp.exp(lax.lgamma(N + 1) - lax.lgamma(k + 1) - lax.lgamma(N - k + 1))
    return jnp.where((k < 0) | (k > N) | (N < 0), 0.0, value).astype(N.dtype)


def digamma(x: Any) -> Any:
    """The digamma function psi(x) = d/dx log gamma(x).

    Example:
        >>> float(digamma(1.0))  # -Euler's gamma
        -0.577...
    """
    x, = promote_inexact("digamma", x)
    return lax.digamma(x)


def polygamma(n: Any, x: Any) -> Any:
    """The n-th derivative of the digamma function (n a non-negative integer).

    Example:
        >>> float(polygamma(1, 1.0))  # pi**2 / 6
        1.644...
    """
    n, x = promote_inexact("polygamma", n, x)
    return lax.polygamma(n, x)


def gammainc(a: Any, x: Any) -> Any:
    """Regularized lower incomplete gamma function P(a, x).

    Example:
        >>> float(gammainc(1.0, 1.0))  # 1 - exp(-1)
        0.632...
    """
    a, x = promote_inexact("gammainc", a, x)
    return lax.igamma(a, x)


def gammaincc(a: Any, x: Any) -> Any:
    """Regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).

    Example:
        >>> float(gammaincc(1.0, 1.0))  # exp(-1)
        0.367...
    """
    a, x = promote_inexact("gammaincc", a, x)
    return lax.igammac(a, x)


def multigammaln(a: Any, d: int) -> Any:
    """Log of the multivariate gamma function of dimension ``d`` (a static positive integer).

    Example:
        >>> float(multigammaln(3.0, 1))  # = gammaln(3)
        0.693...
    """
    d = int(d) if np.ndim(d) == 0 and float(d) == int(d) else d
    if not isinstance(d, int) or d < 1:
        raise ValueError(f"multigammaln: d must be a positive integer, got {d!r}")
    a, = promote_inexact("multigammaln", a)
    js = jnp.arange(d, dtype=a.dtype) / 2.0
    terms = lax.lgamma(jnp.expand_dims(a, -1) - js)
    return jnp.sum(terms, axis=-1) + d * (d - 1) / 4.0 * float(np.log(np.pi))


def poch(z: Any, m: Any) -> Any:
    """Pochhammer symbol (z)_m = gamma(z + m) / gamma(z) (rising factorial).

    Example:
        >>> float(poch(2.0, 3.0))  # 2 * 3 * 4
        24.0...
    """
    z, m = promote_inexact("poch", z, m)
    sign = gammasgn(z + m) * gammasgn(z)
    value = sign * jnp.exp(lax.lgamma(z + m) - lax.lgamma(z))
    return jnp.where(m == 0, jnp.ones_like(value), value)


def _bernoulli_numbers(n: int) -> list[Fraction]:
    # Exact B_0..B_n by the recurrence sum_{k<m+1} C(m+1, k) B_k = 0, with B_1 = -1/2 (SciPy's sign).
    out = [Fraction(1)]
    for m in range(1, n + 1):
        acc = Fraction(0)
        binom = 1
        for k in range(m):
            acc += binom * out[k]
            binom = binom * (m + 1 - k) // (k + 1)
        out.append(-acc / (m + 1))
    return out


def bernoulli(n: int) -> Any:
    """The Bernoulli numbers B_0 .. B_n as an array of length n + 1 (B_1 = -1/2, as SciPy).

    Example:
        >>> bernoulli(4).tolist()
        [1.0, -0.5, 0.1666..., 0.0, -0.0333...]
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"bernoulli: n must be a non-negative Python integer, got {n!r}")
    values = [float(b) for b in _bernoulli_numbers(int(n))]
    return jnp.asarray(np.array(values), dtype=jnp.result_type(1.0))
