"""``qdwh``: the polar decomposition ``x = u @ h`` by the QR-based dynamically weighted Halley
iteration (Nakatsukasa, Bai and Gygi), as ``jax.lax.linalg.qdwh``; also the first step of the
TPU's singular value decomposition (:mod:`.svd`).

The iteration's weights depend only on ``eps``, so they are computed on the host: the first
(large) ones take a QR step, the later ones a cheaper Cholesky step; Halley's plain iteration then
runs in a ``while_loop`` until the iterates stop moving or ``max_iterations`` steps were taken in
all. A Newton-Schulz step refines ``u`` and ``h = u^H x`` is symmetrised.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> u, h, iters, ok = linalg.qdwh(jnp.array([[2.0, 0.0], [0.0, -3.0]]))
    >>> u.round(4).tolist(), h.round(4).tolist(), bool(ok)
    ([[1.0, 0.0], [0.0, -1.0]], [[2.0, 0.0], [0.0, 3.0]], True)
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fluxion.core import dtypes as _dt
from fluxion.lax import elementwise as _el
from fluxion.lax import reductions as _rd
from fluxion.lax import shape_ops as _so
from fluxion.lax import slicing as _sl
from fluxion.lax import transcendental as _tr
from fluxion.lax._base import value_error
from fluxion.lax.control_flow import loops as _lp
from fluxion.lax.linalg._common import (
    as_operand,
    aval_of,
    cast,
    eye_like,
    matmul,
    mH,
    real_dtype,
    shape_of,
    slice_axis,
)
from fluxion.lax.linalg.cholesky import cholesky
from fluxion.lax.linalg.qr import qr
from fluxion.lax.linalg.triangular_solve import triangular_solve

__all__ = ["qdwh"]

_CHOLESKY_CUTOFF = 100  # a weight c above this takes the (stabler) QR step


def _weights(eps: float, max_iterations: int) -> list[tuple[float, float, float]]:
    """The (a, b, c) weights of each weighted step, until the lower bound ``l`` of the scaled
    singular values reaches 1 (within ``5 eps``) or ``max_iterations`` weights were made."""
    lo, tol_l, out = eps, 10.0 * eps / 2.0, []
    while lo + tol_l < 1 and len(out) < max_iterations:
        l2 = lo * lo
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** 0.5
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** 0.5
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        lo = lo * (a + b * l2) / (1 + c * l2)
        out.append((a, b, c))
    return out


def _mask(x: Any, m: Any, n: Any, fill: Any = None) -> Any:
    """``x`` with the entries outside its leading ``m x n`` block replaced by ``fill`` (zeros)."""
    if m is None and n is None:
        return x
    shape = shape_of(x)
    keep = None
    for axis, d in enumerate((m, n)):
        if d is not None:
            inside = _el.lt(_so.broadcasted_iota(np.int32, shape, axis),
                            _so.broadcast_in_dim(cast(d, np.dtype(np.int32)), shape, ()))
            keep = inside if keep is None else _el.bitwise_and(keep, inside)
    other = _el.sub(x, x) if fill is None else fill
    return _el.select(keep, x, other)


def _const(x: Any, v: float) -> Any:
    return _so.broadcast_in_dim(np.asarray(v, aval_of(x).dtype), shape_of(x), ())


def _frobenius(x: Any) -> Any:
    ax = _el.abs(x)
    return _tr.sqrt(_rd.reduce_sum(_el.mul(ax, ax), (0, 1)))


def _qr_step(u: Any, m: Any, n: Any, a: float, b: float, c: float) -> Any:
    big_m, big_n = shape_of(u)
    e, sqrt_c = b / c, c ** 0.5
    scaled = _el.mul(u, _const(u, sqrt_c))
    eye = eye_like(u, big_n, big_n)
    if m is None:
        y = _so.concatenate([scaled, eye], 0)
    else:  # the identity right below the true rows
        y = _sl.dynamic_update_slice_in_dim(
            _so.concatenate([scaled, _el.sub(eye, eye)], 0), eye, m, 0)
    q, _ = qr(y, full_matrices=False)
    q1 = _mask(slice_axis(q, 0, 0, big_m), m, n)
    q2 = _sl.dynamic_slice_in_dim(q, big_m if m is None else m, big_n, 0)
    q2 = mH(_mask(q2, n, n))
    return _el.add(_el.mul(u, _const(u, e)), _el.mul(matmul(q1, q2), _const(u, (a - e) / sqrt_c)))


def _cholesky_step(u: Any, n: Any, a: float, b: float, c: float) -> Any:
    # u (c u^H u + I)^{-1}, through the Cholesky factor of c u^H u + I
    big_n = shape_of(u)[1]
    e = b / c
    eye = eye_like(u, big_n, big_n)
    gram = _el.add(_el.mul(matmul(mH(u), u), _const(eye, c)), eye)
    gram = _mask(gram, n, n, eye)  # identity in the padding keeps it positive definite
    lf = cholesky(gram, symmetrize_input=False)
    z = triangular_solve(lf, mH(u), left_side=True, lower=True)
    z = triangular_solve(lf, z, left_side=True, lower=True, transpose_a=True, conjugate_a=True)
    return _el.add(_el.mul(u, _const(u, e)), _el.mul(mH(z), _const(u, a - e)))


def _static_int(v: Any, what: str) -> int:
    try:
        return operator.index(v)
    except TypeError:
        raise value_error("lax.linalg.qdwh", f"the `{what}` argument must be statically "
                          "specified to use `qdwh` within transformations") from None


def qdwh(x: Any, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape: tuple[int, int] | None = None
         ) -> tuple[Any, Any, Any, Any]:
    """The polar decomposition of an ``M x N`` matrix (``M >= N``, full rank): ``(u, h,
    num_iters, is_converged)`` with ``x = u @ h``, ``u`` having orthonormal columns and ``h``
    Hermitian positive semi-definite. The iterates stop when ``|u_k - u_{k-1}|_F`` falls below
    ``(5 eps)^(1/3)`` or after ``max_iterations`` (10) steps; ``is_converged`` says which.
    ``dynamic_shape=(m, n)`` decomposes only the leading ``m x n`` block of a padded ``x``;
    ``is_hermitian`` is accepted and unused, as in JAX.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> x = jnp.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> u, h, _, _ = linalg.qdwh(x)
        >>> bool(jnp.allclose(u @ h, x, atol=1e-4)), u.shape, h.shape
        (True, (3, 2), (2, 2))
    """
    del is_hermitian  # JAX keeps the argument for compatibility and ignores it too
    max_iterations = 10 if max_iterations is None else _static_int(max_iterations,
                                                                   "max_iterations")
    x = as_operand(x)
    big_m, big_n = shape_of(x)
    if big_m < big_n:
        raise value_error("lax.linalg.qdwh", "The input matrix of shape M x N must have M >= N.")
    m = n = None
    if dynamic_shape is not None:
        m, n = dynamic_shape
        x = _mask(x, m, n)
    dt = aval_of(x).dtype
    rdt = real_dtype(dt)
    if eps is None:
        eps = float(_dt.finfo(dt).eps)
    # scale so that the largest singular value is at most 1: 1/sqrt(|x|_1 |x|_inf)
    ax = _el.abs(x)
    one_norm = _rd.reduce_max(_rd.reduce_sum(ax, (0,)), (0,))
    inf_norm = _rd.reduce_max(_rd.reduce_sum(ax, (1,)), (0,))
    alpha_inv = _el.mul(_tr.rsqrt(one_norm), _tr.rsqrt(inf_norm))
    alpha_inv = _el.select(_el.eq(one_norm, np.asarray(0, rdt)), np.asarray(1, rdt), alpha_inv)
    u = _el.mul(x, _so.broadcast_in_dim(cast(alpha_inv, dt), (big_m, big_n), ()))
    tol_norm = np.asarray((10.0 * eps / 2.0) ** (1 / 3), rdt)

    weights = _weights(eps, max_iterations)
    not_converged: Any = np.bool_(True)
    chol = [w for w in weights if w[2] <= _CHOLESKY_CUTOFF]
    for a, b, c in weights:
        if c > _CHOLESKY_CUTOFF:
            u = _qr_step(u, m, n, a, b, c)
    for a, b, c in chol:
        previous, u = u, _cholesky_step(u, n, a, b, c)
    if chol:  # the last weighted step's movement decides whether Halley's steps follow
        not_converged = _el.gt(_frobenius(_el.sub(u, previous)), tol_norm)

    def more(state: Any) -> Any:
        k, _, going = state
        return _el.bitwise_and(going, _el.lt(k, np.int32(max_iterations)))

    def halley(state: Any) -> Any:  # the weights' limit a, b, c = 3, 1, 3
        k, u, _ = state
        un = _cholesky_step(u, n, 3.0, 1.0, 3.0)
        return _el.add(k, np.int32(1)), un, _el.gt(_frobenius(_el.sub(un, u)), tol_norm)

    num_iters, u, not_converged = _lp.while_loop(
        more, halley, (np.int32(len(weights)), u, not_converged))
    u = _el.sub(_el.mul(u, _const(u, 1.5)), _el.mul(matmul(u, matmul(mH(u), u)), _const(u, 0.5)))
    h = matmul(mH(u), x)
    h = _el.mul(_el.add(h, mH(h)), _const(h, 0.5))
    return u, h, num_iters, _el.bitwise_not(not_converged)
