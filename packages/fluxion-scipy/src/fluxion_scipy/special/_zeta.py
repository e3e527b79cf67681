"""The Hurwitz zeta function and the regularized incomplete beta function."""

from __future__ import annotations

import math
from typing import Any

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact
from fluxion_scipy.special._gamma import _bernoulli_numbers

__all__ = ["zeta", "betainc"]

_EM_TERMS = 12  # direct terms before the Euler-Maclaurin tail
_EM_ORDER = 8   # Bernoulli corrections in the tail
# B_{2j} / (2j)!, j = 1.._EM_ORDER.
_EM_COEFFS = [float(b) / math.factorial(2 * j)
              for j, b in ((j, _bernoulli_numbers(2 * _EM_ORDER)[2 * j])
                           for j in range(1, _EM_ORDER + 1))]


def _zeta_series(x: Any, q: Any) -> Any:
    # Euler-Maclaurin: sum_{k<N} (q+k)^-x + (q+N)^(1-x)/(x-1) + (q+N)^-x/2
    #                  + sum_j B_2j/(2j)! x(x+1)..(x+2j-2) (q+N)^(-x-2j+1).
    total = jnp.zeros_like(x)
    for k in range(_EM_TERMS):
        total = total + jnp.power(q + k, -x)
    a = q + _EM_TERMS
    total = total + jnp.power(a, 1.0 - x) / (x - 1.0) + 0.5 * jnp.power(a, -x)
    rising = x
    for j, coeff in enumerate(_EM_COEFFS, start=1):
        if j > 1:
            rising = rising * (x + 2 * j - 3) * (x + 2 * j - 2)
        total = total + coeff * rising * jnp.power(a, -x - 2 * j + 1)
    return total


@fluxion.custom_jvp
def _zeta(x: Any, q: Any) -> Any:
    return lax.zeta(x, q)


@_zeta.defjvp
def _zeta_jvp(primals: tuple, tangents: tuple) -> tuple:
    # The derivatives of the Euler-Maclaurin sum (zeta itself comes from the primitive).
    _, tangent = fluxion.jvp(_zeta_series, primals, tangents)
    return _zeta(*primals), tangent


def zeta(x: Any, q: Any | None = None) -> Any:
    """Hurwitz zeta function sum_n (n + q)**-x (Riemann's zeta when ``q`` is None).

    Differentiable in both arguments.

    Example:
        >>> round(float(zeta(2.0)), 4)  # pi**2 / 6
        1.6449
    """
    if q is None:
        q = 1.0
    x, q = promote_inexact("zeta", x, q)
    x, q = jnp.broadcast_arrays(x, q)
    return _zeta(x, q)


def betainc(a: Any, b: Any, x: Any) -> Any:
    """Regularized incomplete beta function I_x(a, b) (differentiable in ``x``, as JAX).

    Example:
        >>> round(float(betainc(2.0, 3.0, 0.5)), 4)
        0.6875
    """
    a, b, x = promote_inexact("betainc", a, b, x)
    a, b, x = jnp.broadcast_arrays(a, b, x)
    return lax.betainc(a, b, x)
