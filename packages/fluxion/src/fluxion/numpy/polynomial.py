"""Polynomials as coefficient arrays (highest degree first): polyval, polyadd, polysub,
polymul, polydiv, polyder, polyint, poly, polyfit.

``roots`` uses a fixed number of Aberth–Ehrlich iterations (there is no eigensolver here).

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.polyval(jnp.array([1, 0, -1]), jnp.array([2, 3])).tolist()
    [3, 8]
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import (
    check_arraylike,
    concrete_array,
    ensure_array,
    promote_dtypes,
    promote_dtypes_inexact,
)
from fluxion.numpy.convolution import convolve
from fluxion.numpy.creation import arange, array
from fluxion.numpy.manipulation import trim_zeros
from fluxion.numpy.matrices import vander
from fluxion.numpy.products import matmul
from fluxion.numpy.reductions import argmax, prod
from fluxion.numpy.reductions import sum as _sum
from fluxion.numpy.shape import atleast_1d, concatenate, stack, where

__all__ = ["polyval", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint", "poly",
           "polyfit", "roots"]


@one_program_static(static_argnames=("unroll",))
def polyval(p: Any, x: Any, *, unroll: int = 16) -> Any:
    """The polynomial with coefficients ``p`` evaluated at ``x`` (Horner's scheme).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.polyval(jnp.array([2.0, 1.0]), 3.0))
        7.0
    """
    check_arraylike("polyval", p, x)
    pa, xa = promote_dtypes(ensure_array(p), ensure_array(x))
    shape = np.broadcast_shapes(pa.shape[1:], xa.shape)
    y = lax.broadcast_in_dim(lax.convert_element_type(0, xa.dtype, weak_type=xa.weak_type),
                             shape, ())
    for i in range(pa.shape[0]):
        y = uf.add(uf.multiply(y, xa), lax.index_in_dim(pa, i, 0, keepdims=False))
    return y


def polyadd(a1: Any, a2: Any) -> Any:
    """Sum of two polynomials.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.polyadd(jnp.array([1, 2]), jnp.array([1, 0, 0])).tolist()
        [1, 1, 2]
    """
    check_arraylike("polyadd", a1, a2)
    x, y = promote_dtypes(ensure_array(a1), ensure_array(a2))
    if y.shape[0] <= x.shape[0]:
        return x.at[-y.shape[0]:].add(y) if y.shape[0] else x
    return y.at[-x.shape[0]:].add(x) if x.shape[0] else y


def polysub(a1: Any, a2: Any) -> Any:
    """Difference of two polynomials.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.polysub(jnp.array([1, 2]), jnp.array([1, 0, 0])).tolist()
        [-1, 1, 2]
    """
    check_arraylike("polysub", a1, a2)
    x, y = promote_dtypes(ensure_array(a1), ensure_array(a2))
    return polyadd(x, uf.negative(y))


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Any:
    """Product of two polynomials.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.polymul(jnp.array([1.0, 1.0]), jnp.array([1.0, -1.0])).tolist()
        [1.0, 0.0, -1.0]
    """
    check_arraylike("polymul", a1, a2)
    x, y = promote_dtypes_inexact(ensure_array(a1), ensure_array(a2))
    if trim_leading_zeros and (x.shape[0] > 1 or y.shape[0] > 1):
        x, y = trim_zeros(x, trim="f"), trim_zeros(y, trim="f")
    if x.shape[0] == 0:
        x = lax.broadcast_in_dim(lax.convert_element_type(0, y.dtype), (1,), ())
    if y.shape[0] == 0:
        y = lax.broadcast_in_dim(lax.convert_element_type(0, x.dtype), (1,), ())
    return convolve(x, y, mode="full")


def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = False) -> tuple[Any, Any]:
    """Quotient and remainder of polynomial division.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [r.tolist() for r in jnp.polydiv(jnp.array([1.0, 0.0, -1.0]), jnp.array([1.0, 1.0]))]
        [[1.0, -1.0], [0.0, 0.0, 0.0]]
    """
    check_arraylike("polydiv", u, v)
    ua, va = promote_dtypes_inexact(ensure_array(u), ensure_array(v))
    m, n = ua.shape[0] - 1, va.shape[0] - 1
    scale = uf.divide(1.0, va[0])
    q = lax.broadcast_in_dim(lax.convert_element_type(0, ua.dtype), (max(m - n + 1, 1),), ())
    for k in range(0, m - n + 1):
        d = uf.multiply(scale, ua[k])
        q = q.at[k].set(d)
        ua = ua.at[k:k + n + 1].add(uf.multiply(uf.negative(d), va))
    if trim_leading_zeros:
        tol = float(np.sqrt(np.finfo(ua.dtype).eps))
        host = concrete_array(ua, "polydiv", "u (with trim_leading_zeros=True)")
        nz = np.nonzero(np.abs(host) >= tol)[0]
        start = int(nz[0]) if nz.size else host.shape[0]
        ua = ua[start:]
    return q, ua


def polyder(p: Any, m: int = 1) -> Any:
    """The ``m``-th derivative of a polynomial.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.polyder(jnp.array([1.0, 1.0, 1.0])).tolist()
        [2.0, 1.0]
    """
    check_arraylike("polyder", p)
    m = operator.index(m)
    (pa,) = promote_dtypes_inexact(ensure_array(p))
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    if m == 0:
        return pa
    n = pa.shape[0]
    grid = uf.subtract(lax.broadcast_in_dim(arange(m, n, dtype=pa.dtype), (m, max(n - m, 0)), (1,)),
                       lax.broadcast_in_dim(arange(m, dtype=pa.dtype), (m, max(n - m, 0)), (0,)))
    coeff = prod(grid, axis=0)
    return uf.multiply(pa[:-m], lax.rev(coeff, (0,)))


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """The ``m``-th antiderivative with integration constants ``k``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.polyint(jnp.array([3.0, 2.0])).tolist()
        [1.5, 2.0, 0.0]
    """
    m = operator.index(m)
    k = 0 if k is None else k
    check_arraylike("polyint", p, k, extended=True)  # key arrays: promotion's ValueError
    pa, ka = promote_dtypes_inexact(ensure_array(p), ensure_array(k))
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    ka = atleast_1d(ka)
    if ka.shape[0] == 1:
        ka = lax.broadcast_in_dim(lax.reshape(ka, ()), (m,), ())
    if ka.shape != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    if m == 0:
        return pa
    n = pa.shape[0] + m
    grid = uf.subtract(lax.broadcast_in_dim(arange(n, dtype=pa.dtype), (m, n), (1,)),
                       lax.broadcast_in_dim(arange(m, dtype=pa.dtype), (m, n), (0,)))
    coeff = lax.rev(prod(uf.maximum(1, grid), axis=0), (0,))
    return uf.true_divide(concatenate((pa, ka)), coeff)


def poly(seq_of_zeros: Any) -> Any:
    """Coefficients of the monic polynomial with the given roots (1-D input).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.poly(jnp.array([1.0, 2.0])).tolist()
        [1.0, -3.0, 2.0]
    """
    check_arraylike("poly", seq_of_zeros)
    (z,) = promote_dtypes_inexact(ensure_array(seq_of_zeros))
    z = atleast_1d(z)
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] != 0:
        raise NotImplementedError("poly of a square matrix needs eigenvalues, which Fluxion does "
                                  "not provide yet")
    if z.ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    dt = z.dtype
    if z.shape[0] == 0:
        return lax.convert_element_type(1, dt)
    a = lax.broadcast_in_dim(lax.convert_element_type(1, dt), (1,), ())
    one = lax.convert_element_type(1, dt)
    for k in range(z.shape[0]):
        a = convolve(a, stack([one, uf.negative(z[k])]), mode="full")
    _ = array
    return a


@one_program_static(static_argnames=("deg", "rcond", "full", "cov"))
def polyfit(x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False,
            w: Any = None, cov: bool = False) -> Any:
    """Least-squares polynomial fit of degree ``deg`` (solved through the normal equations of
    the column-scaled Vandermonde matrix; ``full`` and ``cov`` are not supported yet).

    Example:
        >>> import fluxion.numpy as jnp
        >>> [round(v, 3) for v in jnp.polyfit(jnp.array([0.0, 1.0, 2.0]),
        ...                                   jnp.array([1.0, 3.0, 5.0]), 1).tolist()]
        [2.0, 1.0]
    """
    if full or cov:
        raise NotImplementedError("polyfit: full=True and cov=True need numpy.linalg, which "
                                  "Fluxion does not provide yet")
    if w is None:
        check_arraylike("polyfit", x, y)
    else:
        check_arraylike("polyfit", x, y, w)
    xa, ya = ensure_array(x), ensure_array(y)
    deg = operator.index(deg)
    order = deg + 1
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if xa.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if xa.size == 0:
        raise TypeError("expected non-empty vector for x")
    if ya.ndim < 1 or ya.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if xa.shape[0] != ya.shape[0]:
        raise TypeError("expected x and y to have same length")
    lhs = vander(xa, order)
    rhs = ya
    lhs, rhs = promote_dtypes_inexact(lhs, rhs)
    if w is not None:
        (wa,) = promote_dtypes_inexact(ensure_array(w))
        if wa.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        lhs = uf.multiply(lhs, wa[:, None])
        rhs = uf.multiply(rhs, wa[:, None] if rhs.ndim == 2 else wa)
    scale = uf.sqrt(_sum(uf.multiply(lhs, lhs), axis=0))
    lhs = uf.divide(lhs, scale[None, :])
    # Normal equations, solved by Gauss-Jordan elimination with partial pivoting on the small
    # (order x order) system.
    lt = uf.conj(lhs.T)
    a = matmul(lt, lhs)
    b = matmul(lt, rhs)
    vec = b.ndim == 1
    if vec:
        b = b[:, None]
    c = _solve(a, b)
    if vec:
        c = c[:, 0]
        return uf.divide(c, scale)
    return uf.divide(c, scale[:, None])


def _solve(a: Any, b: Any) -> Any:
    n = a.shape[0]
    m = lax.concatenate([a, lax.convert_element_type(b, a.dtype)], 1)
    for k in range(n):
        col = uf.abs(m[:, k])
        col = _mask_below(col, k)
        p = argmax(col)
        rk, rp = m[k], m[p]
        m = m.at[k].set(rp).at[p].set(rk)
        piv = m[k, k]
        row = uf.divide(m[k], piv)
        m = m.at[k].set(row)
        factors = m[:, k].at[k].set(0)
        m = uf.subtract(m, uf.multiply(factors[:, None], row[None, :]))
    return m[:, n:]


def _mask_below(col: Any, k: int) -> Any:
    return where(uf.greater_equal(arange(col.shape[0]), k), col, -1)


_ = dtypes


_ROOTS_ITERS = 150


def _aberth(p: Any, k: Any) -> Any:
    """The ``n = len(p) - 1`` roots of ``p`` (complex; ``p[0] != 0`` unless ``k > 0``), where the
    first ``k`` coefficients are zeros to be ignored: those ``k`` roots come out last, as NaN."""
    n = p.shape[0] - 1
    cdt = dtypes.to_complex_dtype(p.dtype)
    rdt = np.dtype(np.finfo(cdt).dtype)
    # Drop the k leading zeros: q = [p_k, ..., p_n, 0, ..., 0] (a dynamic roll), and only the
    # first m + 1 = n + 1 - k coefficients take part in Horner's rule.
    idx = lax.rem(lax.add(lax.iota(np.int32, n + 1), k), np.int32(n + 1))
    q = lax.convert_element_type(
        lax.select(lax.lt(lax.iota(np.int32, n + 1), np.int32(n + 1) - k),
                   p[idx], lax.full_like(p, 0)), cdt)
    m = np.int32(n) - k
    active = lax.lt(lax.iota(np.int32, n), m)
    q0 = q[0]
    safe0 = lax.select(lax.eq(q0, lax.full_like(q0, 0)), lax.full_like(q0, 1), q0)
    q = lax.div(q, safe0)
    # Starting points on a circle of radius max_i |q_i|^(1/i) (a bound on the root moduli),
    # rotated off the real axis so conjugate pairs are not started symmetrically.
    absq = lax.abs(q)[1:]
    expo = lax.div(lax.full_like(absq, 1), lax.convert_element_type(lax.iota(np.int32, n) + 1, rdt))
    radius = lax.reduce_max(lax.pow(absq, expo), (0,))
    radius = lax.select(lax.gt(radius, lax.full_like(radius, 0)), radius, lax.full_like(radius, 1))
    ang = lax.add(lax.mul(lax.convert_element_type(lax.iota(np.int32, n), rdt),
                          lax.full_like(radius, 2 * np.pi / max(n, 1))), lax.full_like(radius, 0.4))
    z0 = lax.mul(lax.convert_element_type(radius, cdt),
                 lax.complex(lax.cos(ang), lax.sin(ang)))
    coeffs = [q[j] for j in range(n + 1)]
    used = [lax.le(np.int32(j), m) for j in range(n + 1)]
    zero_c = lax.full_like(z0, 0)
    eye = lax.eq(lax.broadcasted_iota(np.int32, (n, n), 0), lax.broadcasted_iota(np.int32, (n, n), 1))
    pair_ok = lax.bitwise_and(lax.bitwise_not(eye),
                              lax.broadcast_in_dim(active, (n, n), (1,)))

    def step(_: Any, z: Any) -> Any:
        val, der = zero_c, zero_c
        for c, u in zip(coeffs, used):
            nval = lax.add(lax.mul(val, z), c)
            nder = lax.add(lax.mul(der, z), val)
            val, der = lax.select(u, nval, val), lax.select(u, nder, der)
        ratio = lax.div(val, der)
        diff = lax.sub(lax.broadcast_in_dim(z, (n, n), (0,)), lax.broadcast_in_dim(z, (n, n), (1,)))
        one = lax.full_like(diff, 1)
        inv = lax.div(one, lax.select(pair_ok, diff, one))
        s = lax.reduce_sum(lax.select(pair_ok, inv, lax.full_like(diff, 0)), (1,))
        w = lax.div(ratio, lax.sub(lax.full_like(ratio, 1), lax.mul(ratio, s)))
        finite = lax.bitwise_and(lax.is_finite(lax.real(w)), lax.is_finite(lax.imag(w)))
        return lax.select(lax.bitwise_and(active, finite), lax.sub(z, w), z)

    z = lax.fori_loop(0, _ROOTS_ITERS, step, z0)
    nan = lax.full_like(z, complex(np.nan, np.nan))
    return lax.select(active, z, nan)


def roots(p: Any, *, strip_zeros: bool = True) -> Any:
    """The roots of the polynomial with coefficients ``p`` (highest degree first), as a complex
    array. Leading zeros are stripped (``strip_zeros=True``, needs concrete values) or give NaN
    roots at the end (``strip_zeros=False``, usable under ``jit``). The roots are found with a
    fixed number of Aberth–Ehrlich iterations, so their order may differ from JAX's.

    Example:
        >>> import fluxion.numpy as jnp
        >>> r = jnp.roots(jnp.array([1.0, -3.0, 2.0]))
        >>> sorted(round(float(v.real), 4) for v in r)
        [1.0, 2.0]
    """
    check_arraylike("roots", p)
    (p,) = promote_dtypes_inexact(ensure_array(p))
    p = atleast_1d(p)
    if p.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    cdt = dtypes.to_complex_dtype(p.dtype)
    if p.shape[0] < 2:
        return array([], dtype=cdt)
    p = lax.convert_element_type(p, p.dtype, weak_type=False)
    nonzero = lax.ne(p, lax.full_like(p, 0))
    # Index of the first nonzero coefficient (len(p) when all are zero).
    pos = lax.select(nonzero, lax.iota(np.int32, p.shape[0]),
                     lax.full_like(lax.iota(np.int32, p.shape[0]), p.shape[0]))
    k = lax.reduce_min(pos, (0,))
    if strip_zeros:
        try:
            k_static = int(k)
        except Exception as e:
            raise TypeError("jnp.roots: with strip_zeros=True the coefficients must be concrete;"
                            " under jit pass strip_zeros=False (leading zeros then give NaN "
                            "roots)") from e
        p = p[k_static:]
        if p.shape[0] < 2:
            return array([], dtype=cdt)
        return _aberth(p, np.int32(0))
    return _aberth(p, k)
