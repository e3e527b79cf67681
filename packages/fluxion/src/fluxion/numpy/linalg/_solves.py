"""Solves and inverses: ``solve``, ``inv``, ``pinv``, ``lstsq``, ``tensorinv``, ``tensorsolve``,
``matrix_power``, ``matrix_rank`` and ``cond``."""

from __future__ import annotations

import functools
import math
import operator
from typing import Any

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.lax import linalg as lax_linalg
from fluxion.numpy.linalg._common import (
    _H,
    _T,
    _arrays,
    _at_least_2d,
    _inexact,
    _jit,
    _square,
    _symmetrize,
    _where,
)
from fluxion.numpy.linalg._decompositions import svd, svdvals
from fluxion.numpy.linalg._norms import norm
from fluxion.transforms.batching import vmap
from fluxion.transforms.custom_derivatives import custom_jvp

# ============================================================================== solves, inverses

def _lu_solve_core(lu: Any, perm: Any, b: Any, trans: int) -> Any:
    """Solve ``a x = b`` (``trans=0``) or ``a^T x = b`` (``trans=1``) for one matrix given its
    LU factors; ``b`` is (m,) or (m, k)."""
    m = lu.shape[0]
    x = lax.reshape(b, (m, math.prod(b.shape[1:])))
    if trans == 0:
        x = jnp.take(x, perm, axis=0)
        x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
        x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
    else:
        x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False, transpose_a=True)
        x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True,
                                transpose_a=True)
        _, inverse = lax.sort_key_val(perm, lax.iota(perm.dtype, m))
        x = jnp.take(x, inverse, axis=0)
    return lax.reshape(x, tuple(b.shape))


def _solve_core(a: Any, b: Any) -> Any:
    """One system: ``a`` (m, m), ``b`` (m,) or (m, k). The LU factors are computed once and
    reused by the derivative rules of ``custom_linear_solve`` (JAX's scheme)."""
    lu, _, perm = lax_linalg.lu(lax.stop_gradient(a))

    def matvec(x: Any) -> Any:
        return jnp.matmul(a, x, precision=lax.Precision.HIGHEST)

    def one(v: Any) -> Any:
        return lax.custom_linear_solve(
            matvec, v,
            solve=lambda _, r: _lu_solve_core(lu, perm, r, 0),
            transpose_solve=lambda _, r: _lu_solve_core(lu, perm, r, 1))

    if b.ndim == 1:
        return one(b)
    return vmap(one, in_axes=1, out_axes=1)(b)


@_jit()
def _solve(a: Any, b: Any) -> Any:
    signature = "(m,m),(m)->(m)" if b.ndim == 1 else "(m,m),(m,n)->(m,n)"
    return jnp.vectorize(_solve_core, signature=signature)(a, b)


def solve(a: Any, b: Any) -> Any:
    """Solve ``a @ x == b`` for square ``a`` (..., m, m). As in NumPy 2 and JAX, ``b`` is a
    vector only when it is one-dimensional (m,); otherwise it is a batch of matrices (..., m, k)
    whose batch dimensions broadcast against those of ``a``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.solve(jnp.array([[2.0, 0.0], [0.0, 4.0]]), jnp.array([2.0, 2.0])).tolist()
        [1.0, 0.5]
    """
    a, b = _inexact("linalg.solve", a, b)
    ash, bsh = tuple(a.shape), tuple(b.shape)
    if a.ndim < 2:
        raise ValueError(f"linalg.solve: left-hand side a must be at least two-dimensional, got "
                         f"a.shape={ash} {_where()}")
    if ash[-1] != ash[-2]:
        raise ValueError(f"linalg.solve: a must be a (batch of) square matrices, got "
                         f"a.shape={ash} {_where()}")
    if b.ndim == 0:
        raise ValueError(f"linalg.solve: b must be at least one-dimensional, got b.shape={bsh} "
                         f"{_where()}")
    if b.ndim > 1 and a.ndim == b.ndim + 1 and ash[-1] == bsh[-1] and ash[-1] != bsh[-2]:
        raise ValueError(f"linalg.solve: invalid shapes a.shape={ash}, b.shape={bsh}. A b with "
                         "more than one dimension is a batch of matrices (NumPy 2 rules); for a "
                         "batch of vectors use solve(a, b[..., None])[..., 0]. " + _where())
    core = 1 if b.ndim == 1 else 2
    if bsh[-core] != ash[-1]:
        raise ValueError(f"linalg.solve: a.shape={ash} and b.shape={bsh} do not match: b must "
                         f"have shape (..., {ash[-1]}{', k' if core == 2 else ''}) {_where()}")
    try:
        np.broadcast_shapes(ash[:-2], bsh[:-core])
    except ValueError:
        raise ValueError(f"linalg.solve: batch dimensions of a.shape={ash} and b.shape={bsh} do "
                         f"not broadcast {_where()}") from None
    return _solve(a, b)


def inv(a: Any) -> Any:
    """Inverse of square matrices ``a`` (..., n, n) (an LU solve against the identity).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.inv(jnp.array([[2.0, 0.0], [0.0, 4.0]])).tolist()
        [[0.5, 0.0], [0.0, 0.25]]
    """
    (arr,) = _arrays("linalg.inv", a)
    _square("linalg.inv", arr)
    eye = jnp.eye(arr.shape[-1], dtype=arr.dtype)
    return solve(arr, lax.broadcast(eye, tuple(arr.shape[:-2])))


def _pinv_impl(a: Any, rtol: Any, hermitian: bool) -> Any:
    m, n = a.shape[-2:]
    if m == 0 or n == 0:
        return jnp.empty(tuple(a.shape[:-2]) + (n, m), a.dtype)
    arr = jnp.conjugate(a)
    if rtol is None:
        rtol = 10.0 * max(m, n) * jnp.array(dtypes.finfo(arr.dtype).eps)
    rtol = jnp.asarray(rtol)
    u, s, vh = svd(arr, full_matrices=False, hermitian=hermitian)
    rtol = lax.expand_dims(rtol[..., None], tuple(range(s.ndim - rtol.ndim - 1)))
    cutoff = rtol * s[..., 0:1]
    s = jnp.where(s > cutoff, s, np.inf).astype(u.dtype)
    res = jnp.matmul(_T(vh), jnp.divide(_T(u), s[..., None]), precision=lax.Precision.HIGHEST)
    return lax.convert_element_type(res, arr.dtype)


_pinv_jit = _jit(static_argnames=("hermitian",))(_pinv_impl)


@functools.partial(custom_jvp, nondiff_argnums=(1, 2))
def _pinv(a: Any, rtol: Any, hermitian: bool) -> Any:
    return _pinv_jit(a, rtol, hermitian=hermitian)


@_pinv.defjvp
def _pinv_jvp(rtol: Any, hermitian: bool, primals: tuple, tangents: tuple) -> tuple:
    # Golub & Pereyra (1973): the derivative of the pseudo-inverse.
    (a,), (a_dot,) = primals, tangents
    p = _pinv(a, rtol, hermitian)
    if hermitian:
        a, a_dot = _symmetrize(a), _symmetrize(a_dot)
    m, n = a.shape[-2:]
    if m >= n:
        s = (p @ _H(p)) @ _H(a_dot)
        t = (_H(a_dot) @ _H(p)) @ p
        p_dot = -(p @ a_dot) @ p + s - (s @ a) @ p + t - (p @ a) @ t
    else:
        s = p @ (_H(p) @ _H(a_dot))
        t = _H(a_dot) @ (_H(p) @ p)
        p_dot = -p @ (a_dot @ p) + s - s @ (a @ p) + t - p @ (a @ t)
    return p, p_dot


def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Any:
    """Moore-Penrose pseudo-inverse of ``a`` (..., m, n), shape (..., n, m), from the SVD:
    singular values at most ``rtol`` times the largest are treated as zero (default
    ``10 * max(m, n) * eps``). ``rcond`` is the older name of ``rtol``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.pinv(jnp.array([[2.0, 0.0], [0.0, 0.0]])).tolist()
        [[0.5, 0.0], [0.0, 0.0]]
    """
    if rcond is not None:
        if rtol is not None:
            raise ValueError("linalg.pinv: only one of rtol and rcond may be specified")
        rtol = rcond
    (a,) = _inexact("linalg.pinv", a)
    _at_least_2d("linalg.pinv", a)
    if hermitian:
        _square("linalg.pinv (hermitian=True)", a)
    return _pinv(a, rtol, bool(hermitian))


def _lstsq(a: Any, b: Any, rcond: Any, numpy_resid: bool) -> tuple[Any, Any, Any, Any]:
    m, n = a.shape
    dtype = a.dtype
    if a.size == 0:
        s = jnp.empty(0, dtype=a.dtype)
        rank = jnp.array(0, dtype=int)
        x = jnp.zeros((n, *b.shape[1:]), dtype=a.dtype)
    else:
        eps = dtypes.finfo(dtype).eps
        if rcond is None:
            rcond = float(eps) * max(n, m)
        else:
            rcond = jnp.where(rcond < 0, eps, rcond)
        u, s, vt = svd(a, full_matrices=False)
        mask = (s > 0) & (s >= jnp.array(rcond, dtype=s.dtype) * s[0])
        rank = mask.sum()
        safe_s = jnp.where(mask, s, 1).astype(a.dtype)
        s_inv = jnp.where(mask, 1 / safe_s, 0)[:, None]
        utb = jnp.matmul(jnp.conjugate(u).T, b, precision=lax.Precision.HIGHEST)
        x = jnp.matmul(jnp.conjugate(vt).T, s_inv * utb, precision=lax.Precision.HIGHEST)
    if numpy_resid and (rank < n or m <= n):
        resid = jnp.asarray([])
    else:
        b_estimate = jnp.matmul(a, x, precision=lax.Precision.HIGHEST)
        resid = norm(b - b_estimate, axis=0) ** 2
    return x, resid, rank, s


_lstsq_jit = _jit(static_argnames=("numpy_resid",))(_lstsq)


def lstsq(a: Any, b: Any, rcond: float | None = None, *,
          numpy_resid: bool = False) -> tuple[Any, Any, Any, Any]:
    """Least-squares solution of ``a @ x ~= b`` for ``a`` (m, n) and ``b`` (m,) or (m, k):
    ``(x, residuals, rank, singular_values)``. Singular values below ``rcond`` times the largest
    are dropped (default ``eps * max(m, n)``). The residuals (squared 2-norms per column) are
    always returned unless ``numpy_resid=True``, which gives NumPy's empty array when the rank is
    below ``n`` or ``m <= n`` (not usable under ``jit``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> a = jnp.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
        >>> x, res, rank, s = jnp.linalg.lstsq(a, jnp.array([1.0, 2.0, 3.0]))
        >>> x.tolist(), int(rank)
        ([1.0, 2.0], 2)
    """
    a, b = _inexact("linalg.lstsq", a, b)
    if a.ndim != 2:
        raise TypeError(f"linalg.lstsq: a must be two-dimensional, got a.shape={tuple(a.shape)} "
                        f"{_where()}")
    if b.ndim not in (1, 2):
        raise TypeError(f"linalg.lstsq: b must be one- or two-dimensional, got "
                        f"b.shape={tuple(b.shape)} {_where()}")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"linalg.lstsq: leading dimensions of a and b must match, got "
                         f"a.shape={tuple(a.shape)} and b.shape={tuple(b.shape)} {_where()}")
    vec = b.ndim == 1
    if vec:
        b = b[:, None]
    if numpy_resid:
        x, resid, rank, s = _lstsq(a, b, rcond, True)
    else:
        x, resid, rank, s = _lstsq_jit(a, b, rcond, numpy_resid=False)
    if vec:
        x = x.ravel()
        if resid.ndim:
            resid = resid.ravel()
    return x, resid, rank, s


def tensorinv(a: Any, ind: int = 2) -> Any:
    """Inverse of ``a`` seen as a linear map from its last dimensions to its first ``ind``:
    the result has shape ``a.shape[ind:] + a.shape[:ind]``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.tensorinv(jnp.eye(4).reshape(4, 2, 2), ind=1).shape
        (2, 2, 4)
    """
    (arr,) = _arrays("linalg.tensorinv", a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"linalg.tensorinv: ind must be a positive integer, got ind={ind}")
    contracting, batch = tuple(arr.shape[:ind]), tuple(arr.shape[ind:])
    flat = (math.prod(contracting), math.prod(batch))
    if flat[0] != flat[1]:
        raise ValueError(f"linalg.tensorinv: the product of the first ind={ind} dimensions must "
                         f"equal that of the remaining ones, got a.shape={tuple(arr.shape)} "
                         f"{_where()}")
    return inv(arr.reshape(flat)).reshape(*batch, *contracting)


def tensorsolve(a: Any, b: Any, axes: tuple[int, ...] | None = None) -> Any:
    """Solve the tensor equation ``tensordot(a, x, x.ndim) == b`` for ``x`` (of shape
    ``a.shape[b.ndim:]``); ``axes`` are axes of ``a`` moved to the end first.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.tensorsolve(2.0 * jnp.eye(4).reshape(2, 2, 2, 2), jnp.ones((2, 2))).tolist()
        [[0.5, 0.5], [0.5, 0.5]]
    """
    a_arr, b_arr = _arrays("linalg.tensorsolve", a, b)
    if axes is not None:
        a_arr = jnp.moveaxis(a_arr, axes, len(axes) * (a_arr.ndim - 1,))
    out_shape = tuple(a_arr.shape[b_arr.ndim:])
    if tuple(a_arr.shape[:b_arr.ndim]) != tuple(b_arr.shape):
        raise ValueError("linalg.tensorsolve: after moving axes to the end, the leading shape of "
                         f"a must match the shape of b, got a.shape={tuple(a_arr.shape)}, "
                         f"b.shape={tuple(b_arr.shape)} {_where()}")
    if b_arr.size != math.prod(out_shape):
        raise ValueError("linalg.tensorsolve: input arrays must have prod(a.shape[:b.ndim]) == "
                         f"prod(a.shape[b.ndim:]), got a.shape={tuple(a_arr.shape)}, "
                         f"b.ndim={b_arr.ndim} {_where()}")
    a_arr = a_arr.reshape(b_arr.size, math.prod(out_shape))
    return solve(a_arr, b_arr.ravel()).reshape(out_shape)


def matrix_power(a: Any, n: int) -> Any:
    """``a`` (..., m, m) raised to the integer power ``n`` by repeated squaring (``n < 0``
    inverts first; ``n == 0`` gives identities).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.matrix_power(jnp.array([[1, 1], [0, 1]]), 3).tolist()
        [[1, 3], [0, 1]]
    """
    (arr,) = _arrays("linalg.matrix_power", a)
    if arr.ndim < 2:
        raise TypeError(f"linalg.matrix_power: {arr.ndim}-dimensional array given; the array "
                        f"must be at least two-dimensional (shape {tuple(arr.shape)})")
    if arr.shape[-2] != arr.shape[-1]:
        raise TypeError(f"linalg.matrix_power: the last two dimensions must be square, got shape "
                        f"{tuple(arr.shape)}")
    try:
        n = operator.index(n)
    except TypeError as err:
        raise TypeError(f"linalg.matrix_power: exponent must be an integer, got {n!r}") from err
    if n == 0:
        return jnp.broadcast_to(jnp.eye(arr.shape[-2], dtype=arr.dtype), tuple(arr.shape))
    if n < 0:
        arr = inv(arr)
        n = -n
    if n == 1:
        return arr
    if n == 2:
        return arr @ arr
    if n == 3:
        return (arr @ arr) @ arr
    z = result = None
    while n > 0:
        z = arr if z is None else z @ z
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else result @ z
    return result


def matrix_rank(M: Any, rtol: Any = None, *, hermitian: bool = False,
                tol: Any = None) -> Any:
    """Number of singular values of ``M`` (..., m, n) above ``rtol`` (default
    ``max(s) * max(m, n) * eps``); ``tol`` is the older name of ``rtol``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> int(jnp.linalg.matrix_rank(jnp.array([[1.0, 2.0], [2.0, 4.0]])))
        1
    """
    if tol is not None:
        if rtol is not None:
            raise ValueError("linalg.matrix_rank: only one of tol or rtol may be specified")
        rtol = tol
    (m,) = _inexact("linalg.matrix_rank", M)
    if m.ndim < 2:
        return jnp.any(m != 0).astype(np.int32)
    s = svd(m, full_matrices=False, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        rtol = s.max(-1) * np.array(max(m.shape[-2:]), s.dtype) * dtypes.finfo(s.dtype).eps
    rtol = jnp.expand_dims(rtol, np.ndim(rtol))
    return jnp.sum(s > rtol, axis=-1)


def cond(x: Any, p: Any = None) -> Any:
    """Condition number of ``x`` (..., m, n) in the norm ``p`` (None/2: ratio of extreme singular
    values; -2; or for square ``x`` any matrix norm order of :func:`norm`). Singular matrices
    give ``inf``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.linalg.cond(jnp.array([[2.0, 0.0], [0.0, 0.5]])))
        4.0
    """
    (arr,) = _arrays("linalg.cond", x)
    if arr.ndim < 2:
        raise ValueError(f"linalg.cond: input array must be at least 2D, got shape "
                         f"{tuple(arr.shape)}")
    if arr.shape[-1] == 0 or arr.shape[-2] == 0:
        raise ValueError(f"linalg.cond: input array must not be empty, got shape "
                         f"{tuple(arr.shape)}")
    if p is None or p == 2:
        s = svdvals(arr)
        return s[..., 0] / s[..., -1]
    if p == -2:
        s = svdvals(arr)
        r = s[..., -1] / s[..., 0]
    else:
        if arr.shape[-2] != arr.shape[-1]:
            raise ValueError(f"linalg.cond: for p={p!r} the array must be square, got shape "
                             f"{tuple(arr.shape)}")
        r = norm(arr, ord=p, axis=(-2, -1)) * norm(inv(arr), ord=p, axis=(-2, -1))
    # NaN from a singular matrix means infinitely ill-conditioned (but keep NaN inputs NaN).
    return jnp.where(jnp.isnan(r) & ~jnp.isnan(arr).any(axis=(-2, -1)), np.inf, r)
