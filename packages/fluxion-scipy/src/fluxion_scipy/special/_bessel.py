"""Bessel functions and spherical harmonics: i0/i0e/i1/i1e, bessel_jn, sph_harm_y."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact

__all__ = ["i0", "i0e", "i1", "i1e", "bessel_jn", "sph_harm_y"]


def i0e(x: Any) -> Any:
    """Exponentially scaled modified Bessel function of order 0: exp(-|x|) I0(x).

    Example:
        >>> float(i0e(0.0))
        1.0
    """
    x, = promote_inexact("i0e", x)
    return lax.bessel_i0e(x)


def i0(x: Any) -> Any:
    """Modified Bessel function of the first kind, order 0.

    Example:
        >>> float(i0(1.0))
        1.2660...
    """
    x, = promote_inexact("i0", x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i0e(x)


def i1e(x: Any) -> Any:
    """Exponentially scaled modified Bessel function of order 1: exp(-|x|) I1(x).

    Example:
        >>> float(i1e(0.0))
        0.0
    """
    x, = promote_inexact("i1e", x)
    return lax.bessel_i1e(x)


def i1(x: Any) -> Any:
    """Modified Bessel function of the first kind, order 1.

    Example:
        >>> float(i1(1.0))
        0.5651...
    """
    x, = promote_inexact("i1", x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i1e(x)


def bessel_jn(z: Any, *, v: int, n_iter: int = 50) -> Any:
    """Bessel functions of the first kind J_0(z) .. J_v(z), stacked along a new leading axis.

    Computed by Miller's backward recurrence started ``n_iter`` orders above ``v`` and normalised
    by J_0 + 2 (J_2 + J_4 + ...) = 1; accurate while |z| is well below ``n_iter``.

    Example:
        >>> bessel_jn(jnp.array([1.0]), v=1)[:, 0].tolist()
        [0.7651..., 0.4400...]
    """
    if not isinstance(v, (int, np.integer)) or v < 0:
        raise ValueError(f"bessel_jn: v must be a non-negative integer, got {v!r}")
    if not isinstance(n_iter, (int, np.integer)) or n_iter < 1:
        raise ValueError(f"bessel_jn: n_iter must be a positive integer, got {n_iter!r}")
    z, = promote_inexact("bessel_jn", z)
    start = int(v) + int(n_iter)
    start += start % 2
    zero = z == 0
    safe = jnp.where(zero, 1.0, z)
    big = 1e10
    f_next = jnp.zeros_like(z)
    f_cur = jnp.full_like(z, 1e-30)
    norm = jnp.zeros_like(z)
    kept: dict[int, Any] = {}
    for k in range(start, 0, -1):
        # Here f_cur is J_k (unnormalised); step to J_{k-1}.
        if k <= v:
            kept[k] = f_cur
        if k % 2 == 0:
            norm = norm + 2.0 * f_cur
        f_prev = (2.0 * k / safe) * f_cur - f_next
        f_next, f_cur = f_cur, f_prev
        scale = jnp.where(jnp.abs(f_cur) > big, 1.0 / big, 1.0)
        f_cur, f_next, norm = f_cur * scale, f_next * scale, norm * scale
        kept = {j: val * scale for j, val in kept.items()}
    kept[0] = f_cur
    norm = norm + f_cur
    rows = [jnp.where(zero, 1.0 if j == 0 else 0.0, kept[j] / norm) for j in range(v + 1)]
    return jnp.stack(rows)


def _log_factorial(n: Any) -> Any:
    return lax.lgamma(n + 1.0)


def sph_harm_y(n: Any, m: Any, theta: Any, phi: Any, diff_n: int | None = None,
               n_max: int | None = None) -> Any:
    """Spherical harmonic Y_n^m(theta, phi), theta the polar and phi the azimuthal angle (SciPy's
    ``sph_harm_y`` convention, Condon-Shortley phase included).

    ``n_max`` (static) bounds the degrees; when omitted it is read from a concrete ``n``. Only
    ``diff_n`` in (None, 0) is supported.

    Example:
        >>> complex(sph_harm_y(jnp.array(0), jnp.array(0), 0.3, 0.1))
        (0.2820...+0j)
    """
    if diff_n not in (None, 0):
        raise NotImplementedError(f"sph_harm_y: diff_n={diff_n} is not supported (only 0)")
    n = jnp.asarray(n)
    m = jnp.asarray(m)
    if not jnp.issubdtype(n.dtype, jnp.integer) or not jnp.issubdtype(m.dtype, jnp.integer):
        raise TypeError(f"sph_harm_y: n and m must be integer arrays, got {n.dtype} and {m.dtype}")
    if n_max is None:
        try:
            n_max = int(np.max(np.asarray(n)))
        except Exception as e:  # a tracer: the bound must be given
            raise ValueError("sph_harm_y: pass n_max when n is traced (under jit/vmap)") from e
    theta, phi = promote_inexact("sph_harm_y", theta, phi)
    n, m, theta, phi = jnp.broadcast_arrays(n, m, theta, phi)
    dtype = theta.dtype
    am = jnp.abs(m).astype(dtype)
    nf = n.astype(dtype)
    x = jnp.cos(theta)
    s = jnp.sin(theta)
    # Fully normalised P_l^|m|(cos theta) (times the 1/sqrt(4 pi) of the harmonic): first l = |m|.
    p_mm = jnp.full_like(x, 1.0 / math.sqrt(4.0 * math.pi))
    for k in range(1, n_max + 1):
        factor = -math.sqrt((2.0 * k + 1.0) / (2.0 * k)) * s
        p_mm = jnp.where(am >= k, p_mm * factor, p_mm)
    result = jnp.where(nf == am, p_mm, 0.0)
    p_prev = p_mm
    p_cur = jnp.sqrt(2.0 * am + 3.0) * x * p_mm  # l = |m| + 1
    result = jnp.where(nf == am + 1, p_cur, result)
    for step in range(2, n_max + 1):
        ell = am + step
        a_l = jnp.sqrt((4.0 * ell * ell - 1.0) / (ell * ell - am * am))
        a_prev = jnp.sqrt((4.0 * (ell - 1) ** 2 - 1.0) / ((ell - 1) ** 2 - am * am))
        p_next = a_l * (x * p_cur - p_prev / a_prev)
        result = jnp.where(nf == ell, p_next, result)
        p_prev, p_cur = p_cur, p_next
    # Y_n^{-m} = (-1)^m conj(Y_n^m): for negative m the Legendre part changes sign when m is odd.
    odd = jnp.remainder(jnp.abs(m), 2) == 1
    legendre = jnp.where((m < 0) & odd, -result, result)
    legendre = jnp.where((jnp.abs(m) > n) | (n < 0), 0.0, legendre)
    phase = jnp.exp(1j * m.astype(dtype) * phi)
    return legendre * phase
