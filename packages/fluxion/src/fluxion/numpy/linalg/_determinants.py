"""Determinants: ``slogdet`` (LU or QR, with its own JVP) and ``det`` (differentiable through a
cofactor solve, so defined for singular matrices too)."""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.lax import linalg as lax_linalg
from fluxion.numpy.linalg._common import SlogdetResult, _inexact, _is_complex, _jit, _square
from fluxion.numpy.linalg._solves import solve
from fluxion.transforms.custom_derivatives import custom_jvp

# ============================================================================== determinants

def _slogdet_1x1(a: Any) -> tuple[Any, Any]:
    d = a[..., 0, 0]
    return jnp.sign(d), jnp.real(jnp.log(jnp.abs(d)))


def _slogdet_2x2(a: Any) -> tuple[Any, Any]:
    d = a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    return jnp.sign(d), jnp.real(jnp.log(jnp.abs(d)))


def _sign_tangent(x: Any, sign: Any, ans_dot: Any) -> tuple[Any, Any]:
    """(sign tangent, real log|det| tangent) from the tangent of log det."""
    if _is_complex(x):
        sign_dot = (ans_dot - jnp.real(ans_dot).astype(ans_dot.dtype)) * sign
        return sign_dot, jnp.real(ans_dot)
    return jnp.zeros_like(sign), ans_dot


@custom_jvp
def _slogdet_small(a: Any) -> tuple[Any, Any]:
    return _slogdet_1x1(a) if a.shape[-1] == 1 else _slogdet_2x2(a)


@_slogdet_small.defjvp
def _slogdet_small_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (g,) = primals, tangents
    sign, ans = _slogdet_small(x)
    if x.shape[-1] == 1:
        ans_dot = g[..., 0, 0] / x[..., 0, 0]
    else:
        x00, x01, x10, x11 = x[..., 0, 0], x[..., 0, 1], x[..., 1, 0], x[..., 1, 1]
        d = x00 * x11 - x01 * x10
        ans_dot = (g[..., 0, 0] * x11 - g[..., 0, 1] * x10 - g[..., 1, 0] * x01
                   + g[..., 1, 1] * x00) / d
    sign_dot, ans_dot = _sign_tangent(x, sign, ans_dot)
    return (sign, ans), (sign_dot, ans_dot)


def _parity(pivots: Any) -> Any:
    """Number of row swaps recorded in LAPACK's ``pivots`` (..., k)."""
    iota = lax.broadcasted_iota(pivots.dtype, tuple(pivots.shape), pivots.ndim - 1)
    return jnp.count_nonzero(pivots != iota, axis=-1)


@custom_jvp
def _slogdet_lu(a: Any) -> tuple[Any, Any]:
    dtype = a.dtype
    lu, pivots, _ = lax_linalg.lu(a)
    diag = jnp.diagonal(lu, axis1=-2, axis2=-1)
    is_zero = jnp.any(diag == jnp.array(0, dtype=dtype), axis=-1)
    parity = _parity(pivots)
    if _is_complex(a):
        sign = jnp.prod(diag / jnp.abs(diag).astype(dtype), axis=-1)
    else:
        sign = jnp.array(1, dtype=dtype)
        parity = parity + jnp.count_nonzero(diag < 0, axis=-1)
    sign = jnp.where(is_zero, jnp.array(0, dtype=dtype),
                     sign * (-2 * (parity % 2) + 1).astype(dtype))
    logdet = jnp.where(is_zero, jnp.array(-np.inf, dtype=dtype),
                       jnp.sum(jnp.log(jnp.abs(diag)).astype(dtype), axis=-1))
    return sign, jnp.real(logdet)


@custom_jvp
def _slogdet_qr(a: Any) -> tuple[Any, Any]:
    if _is_complex(a):
        raise NotImplementedError("linalg.slogdet: method='qr' is not implemented for complex "
                                  f"inputs (got {a.dtype})")
    n = a.shape[-1]
    h, taus = lax_linalg.geqrf(a)
    d = jnp.diagonal(h, axis1=-2, axis2=-1)
    log_abs = jnp.sum(jnp.log(jnp.abs(d)), axis=-1)
    sign_d = jnp.prod(jnp.sign(d), axis=-1)
    # Each reflector with tau != 0 is a reflection (determinant -1).
    sign_t = jnp.prod(jnp.where(taus[..., :n - 1] != 0, -1, 1), axis=-1).astype(sign_d.dtype)
    return sign_d * sign_t, log_abs


def _slogdet_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (g,) = primals, tangents
    sign, ans = slogdet(x)
    ans_dot = jnp.trace(solve(x, g), axis1=-1, axis2=-2)
    sign_dot, ans_dot = _sign_tangent(x, sign, ans_dot)
    return (sign, ans), (sign_dot, ans_dot)


_slogdet_lu.defjvp(_slogdet_jvp)
_slogdet_qr.defjvp(_slogdet_jvp)


@_jit(static_argnames=("method",))
def _slogdet(a: Any, method: str) -> SlogdetResult:
    if method == "lu":
        if a.shape[-1] in (1, 2):
            return SlogdetResult(*_slogdet_small(a))
        return SlogdetResult(*_slogdet_lu(a))
    return SlogdetResult(*_slogdet_qr(a))


def slogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
    """Sign and log of the absolute value of the determinant of ``a`` (..., n, n):
    ``SlogdetResult(sign, logabsdet)``, ``det == sign * exp(logabsdet)``. ``method`` is 'lu'
    (the default) or 'qr' (real inputs only).

    Example:
        >>> import fluxion.numpy as jnp
        >>> s, l = jnp.linalg.slogdet(jnp.array([[0.0, 2.0], [3.0, 0.0]]))
        >>> float(s), round(float(l), 4)
        (-1.0, 1.7918)
    """
    (a,) = _inexact("linalg.slogdet", a)
    _square("linalg.slogdet", a)
    if method is None:
        method = "lu"
    if method not in ("lu", "qr"):
        raise ValueError(f"linalg.slogdet: unknown method {method!r}; supported methods are "
                         "'lu' (None) and 'qr'")
    return _slogdet(a, method=method)


def _cofactor_solve(a: Any, b: Any) -> tuple[Any, Any]:
    """``(det(a), adj(a) @ b)`` for square ``a`` and ``b`` (..., m, m), finite also where ``a``
    is singular: the derivative of det at ``a`` along ``b`` is the trace of the second value."""
    m = a.shape[-1]
    if m == 1:
        return a[..., 0, 0], b
    lu, pivots, perm = lax_linalg.lu(a)
    dtype = a.dtype
    batch = tuple(np.broadcast_shapes(tuple(lu.shape[:-2]), tuple(b.shape[:-2])))
    x = jnp.broadcast_to(b, batch + tuple(b.shape[-2:]))
    lu = jnp.broadcast_to(lu, batch + tuple(lu.shape[-2:]))
    perm = jnp.broadcast_to(perm, batch + (m,))
    diag = jnp.diagonal(lu, axis1=-2, axis2=-1)
    sign = (-2 * (_parity(pivots) % 2) + 1).astype(dtype)
    # partial[..., -1] is det(a); partial[..., -2] is det(a) / u_mm (without the sign's help
    # when u_mm is zero, which is the case the cofactor formula is for).
    partial = jnp.cumprod(diag, axis=-1) * sign[..., None]
    lu = lu.at[..., -1, -1].set(1.0 / partial[..., -2])
    # Matrices whose remaining triangular factor is singular too (rank < m - 1) have a zero
    # adjugate: find them by a solve that overflows.
    probe = lax_linalg.triangular_solve(lu, jnp.ones(tuple(x.shape[:-1]) + (1,), x.dtype),
                                left_side=True, lower=False)[..., 0]
    bad = jnp.any(jnp.logical_or(jnp.isnan(probe), jnp.isinf(probe)), axis=-1)
    bad = bad[..., None, None]
    # Their result is zero whatever the solves give: solve with the identity there instead, so
    # no inf or NaN is formed (not even in the transposed solves of reverse mode).
    lu = jnp.where(bad, jnp.eye(m, dtype=dtype), lu)
    x = jnp.where(bad, jnp.zeros_like(x), x)
    x = jnp.take_along_axis(x, perm[..., :, None], axis=-2)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    x = jnp.concatenate((x[..., :-1, :] * partial[..., -1, None, None], x[..., -1:, :]), axis=-2)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
    x = jnp.where(bad, jnp.zeros_like(x), x)
    return partial[..., -1], x


def _det_2x2(a: Any) -> Any:
    return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]


def _det_3x3(a: Any) -> Any:
    return (a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2]
            + a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0]
            + a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1]
            - a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0]
            - a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1]
            - a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2])


@custom_jvp
def _det_lu(a: Any) -> Any:
    sign, logdet = slogdet(a)
    return sign * jnp.exp(logdet).astype(sign.dtype)


@_det_lu.defjvp
def _det_lu_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (g,) = primals, tangents
    y, z = _cofactor_solve(x, g)
    return y, jnp.trace(z, axis1=-1, axis2=-2)


@_jit()
def _det(a: Any) -> Any:
    n = a.shape[-1]
    if n == 2:
        return _det_2x2(a)
    if n == 3:
        return _det_3x3(a)
    return _det_lu(a)


def det(a: Any) -> Any:
    """Determinant of ``a`` (..., n, n), shape (...). Its derivative is defined at singular
    matrices too (through the adjugate), as in JAX.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.linalg.det(jnp.array([[1.0, 2.0], [3.0, 4.0]])))
        -2.0
    """
    (a,) = _inexact("linalg.det", a)
    _square("linalg.det", a)
    return _det(a)
