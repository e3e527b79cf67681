"""``fluxion.numpy.linalg``: NumPy's linear algebra with JAX's semantics (``jax.numpy.linalg``).

Every function takes batches of matrices (the last two axes), promotes integer and boolean inputs
to the default floating dtype, and is differentiable: the decompositions carry the rules of their
``fluxion.lax.linalg`` primitives, and ``det``, ``slogdet``, ``solve`` and ``pinv`` have their own
rules, as in JAX (``det`` differentiates through a cofactor solve, so it is defined for singular
matrices too).

The factorisations come from ``fluxion.lax.linalg`` (LAPACK through jaxlib). This module is
imported on first access to ``fluxion.numpy.linalg``, so importing ``fluxion.numpy`` stays cheap.

Example:
    >>> import fluxion.numpy as jnp
    >>> a = jnp.array([[2.0, 1.0], [1.0, 3.0]])
    >>> round(float(jnp.linalg.det(a)), 4)
    5.0
    >>> jnp.linalg.solve(a, jnp.array([3.0, 4.0])).round(4).tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

import functools
import math
import operator
import string
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.core.errors import user_source_line
from fluxion.lax import linalg as lax_linalg
from fluxion.numpy._util import check_arraylike, ensure_array, promote_dtypes_inexact
from fluxion.transforms.batching import vmap
from fluxion.transforms.custom_derivatives import custom_jvp

__all__ = [
    "EigResult", "EighResult", "QRResult", "SVDResult", "SlogdetResult",
    "cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
    "lstsq", "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose",
    "multi_dot", "norm", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot",
    "tensorinv", "tensorsolve", "trace", "vecdot", "vector_norm",
]

Array = Any


# ============================================================================== result types

class EighResult(NamedTuple):
    """Result of :func:`eigh`: ``eigenvalues`` (..., n) ascending and ``eigenvectors`` (..., n, n)
    in columns.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.eigh(jnp.eye(2)).eigenvalues.tolist()
        [1.0, 1.0]
    """

    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    """Result of :func:`eig`: complex ``eigenvalues`` (..., n) and right ``eigenvectors``
    (..., n, n) in columns.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.eig(jnp.eye(2)).eigenvalues.dtype  # doctest: +SKIP
        dtype('complex64')
    """

    eigenvalues: Array
    eigenvectors: Array


class QRResult(NamedTuple):
    """Result of :func:`qr`: ``Q`` with orthonormal columns and upper-triangular ``R``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.qr(jnp.eye(2)).R.shape
        (2, 2)
    """

    Q: Array
    R: Array


class SlogdetResult(NamedTuple):
    """Result of :func:`slogdet`: the ``sign`` of the determinant and the log of its absolute
    value ``logabsdet``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.slogdet(2.0 * jnp.eye(2)).sign.tolist()
        1.0
    """

    sign: Array
    logabsdet: Array


class SVDResult(NamedTuple):
    """Result of :func:`svd`: ``U``, singular values ``S`` (descending) and ``Vh`` with
    ``a == U @ diag(S) @ Vh``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.svd(jnp.eye(2)).S.tolist()
        [1.0, 1.0]
    """

    U: Array
    S: Array
    Vh: Array


# ============================================================================== helpers

def _jit(**kw: Any) -> Callable[[Callable], Callable]:
    """``fluxion.jit(fun, inline=True, **kw)``, made on first call (jaxlib loads lazily): one
    compiled call when used eagerly, inlined when traced."""

    def deco(fun: Callable) -> Callable:
        cell: list[Callable] = []

        @functools.wraps(fun)
        def call(*args: Any, **kwargs: Any) -> Any:
            if not cell:
                # reason: the backend loads jaxlib, which importing this module must not.
                from fluxion.backend.jit import jit
                cell.append(jit(fun, inline=True, **kw))
            return cell[0](*args, **kwargs)

        return call

    return deco


def _arrays(name: str, *args: Any) -> list[Any]:
    check_arraylike(name, *args)
    return [ensure_array(a) for a in args]


def _inexact(name: str, *args: Any) -> list[Any]:
    """Check, convert and promote to a common inexact dtype (ints and bools become float)."""
    return promote_dtypes_inexact(*_arrays(name, *args))


def _where() -> str:
    return f"(at {user_source_line()})"


def _square(name: str, a: Any) -> None:
    shape = tuple(a.shape)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{name}: argument must have shape [..., n, n] (a batch of square "
                         f"matrices), got shape {shape} {_where()}")


def _at_least_2d(name: str, a: Any) -> None:
    if a.ndim < 2:
        raise ValueError(f"{name}: argument must have at least two dimensions (a matrix or a "
                         f"batch of matrices), got shape {tuple(a.shape)} {_where()}")


def _T(x: Any) -> Any:
    nd = x.ndim
    return lax.transpose(x, (*range(nd - 2), nd - 1, nd - 2))


def _H(x: Any) -> Any:
    return jnp.conjugate(_T(x))


def _symmetrize(x: Any) -> Any:
    return (x + _H(x)) / 2


def _is_complex(x: Any) -> bool:
    return dtypes.issubdtype(x.dtype, np.complexfloating)


def _real_dtype(dt: Any) -> np.dtype:
    return np.dtype(dtypes.finfo(dt).dtype)


# ============================================================================== factorisations

@_jit(static_argnames=("upper", "symmetrize_input"))
def _cholesky(a: Any, upper: bool, symmetrize_input: bool) -> Any:
    l_factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return jnp.conjugate(_T(l_factor)) if upper else l_factor


def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    """Cholesky factor of Hermitian positive-definite matrices ``a`` (..., n, n): lower ``L``
    with ``a == L @ L^H`` (or upper ``U == L^H`` with ``upper=True``). Matrices that are not
    positive definite give NaNs, as in JAX.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.cholesky(jnp.array([[4.0, 2.0], [2.0, 2.0]])).tolist()
        [[2.0, 0.0], [1.0, 1.0]]
    """
    (a,) = _inexact("linalg.cholesky", a)
    _square("linalg.cholesky", a)
    return _cholesky(a, upper=bool(upper), symmetrize_input=bool(symmetrize_input))


@_jit(static_argnames=("full_matrices", "compute_uv", "hermitian", "subset_by_index"))
def _svd(a: Any, full_matrices: bool, compute_uv: bool, hermitian: bool,
         subset_by_index: tuple[int, int] | None) -> Any:
    kw = {} if subset_by_index is None else {"subset_by_index": subset_by_index}
    if hermitian:
        vecs, vals = lax_linalg.eigh(a, **kw)
        s = lax.abs(vals)
        last = s.ndim - 1
        if not compute_uv:
            return lax.rev(lax.sort(s, dimension=last), (last,))
        sign = lax.sign(vals)
        idx = lax.broadcasted_iota(np.int32, tuple(s.shape), last)
        s, idx, sign = lax.sort((s, idx, sign), dimension=last, num_keys=1)
        s, idx, sign = (lax.rev(v, (last,)) for v in (s, idx, sign))
        u = jnp.take_along_axis(vecs, idx[..., None, :], axis=-1)
        vh = _H(u * sign[..., None, :].astype(u.dtype))
        return SVDResult(u, s, vh)
    if compute_uv:
        u, s, vh = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=True, **kw)
        return SVDResult(u, s, vh)
    return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=False, **kw)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: tuple[int, int] | None = None) -> Any:
    """Singular value decomposition of ``a`` (..., m, n): ``SVDResult(U, S, Vh)`` with singular
    values ``S`` in descending order, or only ``S`` when ``compute_uv=False``.

    ``full_matrices=False`` gives the reduced factors (``U`` (..., m, k), ``Vh`` (..., k, n),
    ``k = min(m, n)``); ``hermitian=True`` uses the eigendecomposition of the Hermitian ``a``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.svd(jnp.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False).tolist()
        [4.0, 3.0]
    """
    (a,) = _inexact("linalg.svd", a)
    _at_least_2d("linalg.svd", a)
    if hermitian:
        _square("linalg.svd (hermitian=True)", a)
    sbi = None if subset_by_index is None else tuple(int(i) for i in subset_by_index)
    return _svd(a, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                hermitian=bool(hermitian), subset_by_index=sbi)


def svdvals(x: Any, /) -> Any:
    """Singular values of ``x`` (..., m, n) in descending order, shape (..., min(m, n)).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.svdvals(jnp.array([[0.0, 2.0], [1.0, 0.0]])).tolist()
        [2.0, 1.0]
    """
    (x,) = _arrays("linalg.svdvals", x)
    _at_least_2d("linalg.svdvals", x)
    return svd(x, compute_uv=False, hermitian=False)


@_jit(static_argnames=("lower", "symmetrize_input", "subset_by_index"))
def _eigh(a: Any, lower: bool, symmetrize_input: bool,
          subset_by_index: tuple[int, int] | None) -> EighResult:
    kw = {} if subset_by_index is None else {"subset_by_index": subset_by_index}
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input, **kw)
    return EighResult(w, v)


def _uplo(name: str, uplo: str | None) -> bool:
    if uplo is None or uplo == "L":
        return True
    if uplo == "U":
        return False
    raise ValueError(f"{name}: UPLO must be one of None, 'L', or 'U', got {uplo!r}")


def eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """Eigendecomposition of Hermitian (real symmetric) matrices ``a`` (..., n, n):
    ``EighResult(eigenvalues, eigenvectors)`` with real eigenvalues in ascending order and the
    eigenvectors in the columns. ``UPLO`` ('L' or 'U') says which triangle is read when
    ``symmetrize_input=False``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> w, v = jnp.linalg.eigh(jnp.array([[2.0, 0.0], [0.0, 1.0]]))
        >>> w.tolist()
        [1.0, 2.0]
    """
    (a,) = _arrays("linalg.eigh", a)
    lower = _uplo("linalg.eigh", UPLO)
    (a,) = promote_dtypes_inexact(a)
    _square("linalg.eigh", a)
    return _eigh(a, lower=lower, symmetrize_input=bool(symmetrize_input), subset_by_index=None)


def eigvalsh(a: Any, UPLO: str | None = "L", *, symmetrize_input: bool = True) -> Any:
    """Eigenvalues of Hermitian matrices ``a`` (..., n, n), real and ascending.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.eigvalsh(jnp.array([[0.0, 1.0], [1.0, 0.0]])).tolist()
        [-1.0, 1.0]
    """
    (a,) = _inexact("linalg.eigvalsh", a)
    _square("linalg.eigvalsh", a)
    return eigh(a, UPLO, symmetrize_input=symmetrize_input).eigenvalues


def eig(a: Any) -> EigResult:
    """Eigendecomposition of general square matrices ``a`` (..., n, n):
    ``EigResult(eigenvalues, eigenvectors)``, both complex, right eigenvectors in the columns
    (normalised to unit length). CPU only, as in JAX.

    Example:
        >>> import fluxion.numpy as jnp
        >>> w, v = jnp.linalg.eig(jnp.array([[2.0, 0.0], [0.0, 3.0]]))
        >>> w.real.tolist()
        [2.0, 3.0]
    """
    (a,) = _inexact("linalg.eig", a)
    _square("linalg.eig", a)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


@_jit()
def _eigvals(a: Any) -> Any:
    return lax_linalg.eig(a, compute_left_eigenvectors=False,
                             compute_right_eigenvectors=False)[0]


def eigvals(a: Any) -> Any:
    """Eigenvalues (complex) of general square matrices ``a`` (..., n, n).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.eigvals(jnp.array([[0.0, -1.0], [1.0, 0.0]])).imag.tolist()
        [1.0, -1.0]
    """
    (a,) = _inexact("linalg.eigvals", a)
    _square("linalg.eigvals", a)
    return _eigvals(a)


@_jit(static_argnames=("mode",))
def _qr(a: Any, mode: str) -> Any:
    if mode == "raw":
        h, taus = lax_linalg.geqrf(a)
        return QRResult(_T(h), taus)
    q, r = lax_linalg.qr(a, full_matrices=(mode == "complete"))
    return r if mode == "r" else QRResult(q, r)


def qr(a: Any, mode: str = "reduced") -> Any:
    """QR decomposition of ``a`` (..., m, n): ``QRResult(Q, R)`` with ``a == Q @ R``.

    ``mode``: 'reduced' (``Q`` (..., m, k), ``R`` (..., k, n), ``k = min(m, n)``), 'complete'
    (``Q`` (..., m, m), ``R`` (..., m, n)), 'r' (only ``R``) or 'raw' (LAPACK's Householder form:
    ``QRResult(h^T, tau)``, as NumPy).

    Example:
        >>> import fluxion.numpy as jnp
        >>> q, r = jnp.linalg.qr(jnp.array([[3.0, 0.0], [4.0, 5.0]]))
        >>> abs(r[0, 0]).tolist()
        5.0
    """
    (a,) = _inexact("linalg.qr", a)
    if mode == "full":
        mode = "reduced"
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"linalg.qr: unsupported QR decomposition mode {mode!r}; expected "
                         f"'reduced', 'complete', 'r' or 'raw'")
    _at_least_2d("linalg.qr", a)
    return _qr(a, mode=mode)


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


# ============================================================================== norms

def vector_norm(x: Any, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
                ord: int | float | str = 2) -> Any:
    """Vector ``ord``-norm of ``x`` over ``axis`` (None: all elements): 2 (default), 1,
    ``inf``, ``-inf``, 0 (number of non-zeros) or any other power.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.linalg.vector_norm(jnp.array([3.0, -4.0])))
        5.0
    """
    (x,) = _arrays("linalg.vector_norm", x)
    if isinstance(axis, list):
        axis = tuple(axis)
    if ord is None or (not isinstance(ord, str) and ord == 2):
        return jnp.sqrt(jnp.sum(jnp.real(x * jnp.conjugate(x)), axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        hint = ""
        if ord == "inf":
            hint = " Use fluxion.numpy.inf instead."
        elif ord == "-inf":
            hint = " Use -fluxion.numpy.inf instead."
        raise ValueError(f"linalg.vector_norm: invalid order {ord!r} for a vector norm.{hint}")
    if ord == np.inf:
        return jnp.max(jnp.abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return jnp.min(jnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return jnp.sum(x != 0, dtype=_real_dtype(x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return jnp.sum(jnp.abs(x), axis=axis, keepdims=keepdims)
    abs_x = jnp.abs(x)
    p = np.array(ord, dtype=abs_x.dtype)
    out = jnp.sum(abs_x ** p, axis=axis, keepdims=keepdims)
    return jnp.power(out, np.array(1.0 / p, dtype=abs_x.dtype))


def _matrix_norm2(x: Any, ord: Any, axis: tuple[int, int], keepdims: bool) -> Any:
    row, col = axis
    if ord is None or ord in ("f", "fro"):
        return jnp.sqrt(jnp.sum(jnp.real(x * jnp.conjugate(x)), axis=axis, keepdims=keepdims))
    if isinstance(ord, str) and ord != "nuc":
        raise ValueError(f"linalg.norm: invalid order {ord!r} for a matrix norm")
    if ord == 1 or ord == -1:
        if not keepdims and col > row:
            col -= 1
        sums = jnp.sum(jnp.abs(x), axis=row, keepdims=keepdims)
        if ord == 1:
            return jnp.max(sums, axis=col, keepdims=keepdims, initial=0)
        return jnp.min(sums, axis=col, keepdims=keepdims)
    if ord == np.inf or ord == -np.inf:
        if not keepdims and row > col:
            row -= 1
        sums = jnp.sum(jnp.abs(x), axis=col, keepdims=keepdims)
        if ord == np.inf:
            return jnp.max(sums, axis=row, keepdims=keepdims, initial=0)
        return jnp.min(sums, axis=row, keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        xm = jnp.moveaxis(x, axis, (-2, -1))
        s = svd(xm, compute_uv=False)
        if ord == 2:
            y = jnp.max(s, axis=-1, initial=0)
        elif ord == -2:
            y = jnp.min(s, axis=-1)
        else:
            y = jnp.sum(s, axis=-1)
        return jnp.expand_dims(y, axis) if keepdims else y
    raise ValueError(f"linalg.norm: invalid order {ord!r} for a matrix norm")


@_jit(static_argnames=("ord", "axis", "keepdims"))
def _norm(x: Any, ord: Any, axis: tuple[int, ...] | None, keepdims: bool) -> Any:
    if axis is None:
        return jnp.sqrt(jnp.sum(jnp.real(x * jnp.conjugate(x)), keepdims=keepdims))
    if len(axis) == 1:
        return vector_norm(x, ord=2 if ord is None else ord, axis=axis, keepdims=keepdims)
    return _matrix_norm2(x, ord, axis, keepdims)


def norm(x: Any, ord: int | float | str | None = None,
         axis: None | tuple[int, ...] | int = None, keepdims: bool = False) -> Any:
    """Vector or matrix norm, as ``numpy.linalg.norm``: one axis gives a vector norm (see
    :func:`vector_norm`), two axes a matrix norm (``ord`` None/'fro', 'nuc', 1, -1, 2, -2, inf,
    -inf). With ``axis=None`` a 1-D or 2-D ``x`` gets its vector or matrix norm; with
    ``ord=None`` too, any ``x`` gets the 2-norm of all its elements.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.linalg.norm(jnp.array([[1.0, 2.0], [3.0, 4.0]]), ord=1))
        6.0
    """
    (x,) = _inexact("linalg.norm", x)
    nd = x.ndim
    if axis is None:
        if ord is not None:
            axis = tuple(range(nd))
    elif isinstance(axis, (tuple, list)):
        axis = tuple(_canon_axis("linalg.norm", a, nd) for a in axis)
    else:
        axis = (_canon_axis("linalg.norm", axis, nd),)
    if axis is not None and len(axis) not in (1, 2):
        raise ValueError(f"linalg.norm: improper number of axes for norm: axis={axis} (array of "
                         f"shape {tuple(x.shape)}). Pass one axis to compute a vector norm, or "
                         "two axes to compute a matrix norm.")
    if axis is not None and len(axis) == 2 and isinstance(ord, str) and \
            ord not in ("f", "fro", "nuc"):
        raise ValueError(f"linalg.norm: invalid order {ord!r} for a matrix norm")
    if axis is not None and len(axis) == 2 and axis[0] == axis[1]:
        raise ValueError(f"linalg.norm: duplicate axes given: axis={axis}")
    if isinstance(ord, (np.generic, np.ndarray)):
        ord = ord.item()
    return _norm(x, ord=ord, axis=axis, keepdims=bool(keepdims))


def _canon_axis(name: str, axis: Any, ndim: int) -> int:
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise ValueError(f"{name}: axis {a} is out of bounds for array of dimension {ndim}")
    return a % ndim


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: str | int | float = "fro") -> Any:
    """Matrix norm over the last two axes of ``x`` (..., m, n); ``ord`` as in :func:`norm`
    (default Frobenius).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.linalg.matrix_norm(jnp.eye(4)))
        2.0
    """
    (x,) = _arrays("linalg.matrix_norm", x)
    _at_least_2d("linalg.matrix_norm", x)
    return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


# ============================================================================== products & views

def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes of ``x`` (at least 2-D).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.matrix_transpose(jnp.ones((2, 3, 4))).shape
        (2, 4, 3)
    """
    (arr,) = _arrays("linalg.matrix_transpose", x)
    if arr.ndim < 2:
        raise ValueError(f"linalg.matrix_transpose: requires at least 2 dimensions, got shape "
                         f"{tuple(arr.shape)}")
    return _T(arr)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The ``offset`` diagonals of the matrices in ``x`` (..., m, n).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.diagonal(jnp.arange(4).reshape(2, 2)).tolist()
        [0, 3]
    """
    (arr,) = _arrays("linalg.diagonal", x)
    _at_least_2d("linalg.diagonal", arr)
    return jnp.diagonal(arr, offset=offset, axis1=-2, axis2=-1)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """Sum of the ``offset`` diagonal of the matrices in ``x`` (..., m, n).

    Example:
        >>> import fluxion.numpy as jnp
        >>> int(jnp.linalg.trace(jnp.arange(4).reshape(2, 2)))
        3
    """
    (arr,) = _arrays("linalg.trace", x)
    _at_least_2d("linalg.trace", arr)
    return jnp.trace(arr, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def outer(x1: Any, x2: Any, /) -> Any:
    """Outer product of two 1-D arrays, shape (len(x1), len(x2)).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.outer(jnp.array([1, 2]), jnp.array([1, 10])).tolist()
        [[1, 10], [2, 20]]
    """
    x1, x2 = _arrays("linalg.outer", x1, x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"linalg.outer: input arrays must be one-dimensional, got shapes "
                         f"{tuple(x1.shape)} and {tuple(x2.shape)}")
    return x1[:, None] * x2[None, :]


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Cross product of 3-vectors along ``axis`` (batch dimensions broadcast).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.cross(jnp.array([1.0, 0.0, 0.0]), jnp.array([0.0, 1.0, 0.0])).tolist()
        [0.0, 0.0, 1.0]
    """
    x1, x2 = _arrays("linalg.cross", x1, x2)
    try:
        n1, n2 = x1.shape[axis], x2.shape[axis]
    except IndexError:
        raise ValueError(f"linalg.cross: axis {axis} is out of bounds for shapes "
                         f"{tuple(x1.shape)} and {tuple(x2.shape)}") from None
    if n1 != 3 or n2 != 3:
        raise ValueError("linalg.cross: both input arrays must be (arrays of) 3-dimensional "
                         f"vectors, got shapes {tuple(x1.shape)} and {tuple(x2.shape)} with "
                         f"axis={axis}")
    return jnp.cross(x1, x2, axis=axis)


def matmul(x1: Any, x2: Any, /, *, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """Matrix product (``fluxion.numpy.matmul``) under the array-API name.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.matmul(jnp.ones((2, 3)), jnp.ones((3, 2))).tolist()
        [[3.0, 3.0], [3.0, 3.0]]
    """
    x1, x2 = _arrays("linalg.matmul", x1, x2)
    return jnp.matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """Conjugated dot product of vectors along ``axis`` (``fluxion.numpy.vecdot``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.linalg.vecdot(jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0])))
        11.0
    """
    x1, x2 = _arrays("linalg.vecdot", x1, x2)
    return jnp.vecdot(x1, x2, axis=axis, precision=precision,
                      preferred_element_type=preferred_element_type)


def tensordot(x1: Any, x2: Any, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2,
              precision: Any = None, preferred_element_type: Any = None,
              out_sharding: Any = None) -> Any:
    """Tensor contraction over ``axes`` (``fluxion.numpy.tensordot``), keyword-only ``axes``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.tensordot(jnp.ones((2, 3)), jnp.ones((3, 4)), axes=1).shape
        (2, 4)
    """
    x1, x2 = _arrays("linalg.tensordot", x1, x2)
    if out_sharding is not None:
        raise NotImplementedError("linalg.tensordot: out_sharding is not supported")
    return jnp.tensordot(x1, x2, axes=axes, precision=precision,
                         preferred_element_type=preferred_element_type)


def multi_dot(arrays: Sequence[Any], *, precision: Any = None) -> Any:
    """Product of a chain of matrices in the cheapest order (``einsum`` with an optimised
    path); the first and last may be vectors.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.multi_dot([jnp.ones(2), jnp.ones((2, 3)), jnp.ones((3, 4))]).tolist()
        [6.0, 6.0, 6.0, 6.0]
    """
    arrs = _arrays("linalg.multi_dot", *arrays)
    shapes = [tuple(a.shape) for a in arrs]
    if len(arrs) < 2:
        raise ValueError(f"linalg.multi_dot: requires at least two arrays, got {len(arrs)}")
    if not (arrs[0].ndim in (1, 2) and arrs[-1].ndim in (1, 2)
            and all(a.ndim == 2 for a in arrs[1:-1])):
        raise ValueError("linalg.multi_dot: input arrays must all be two-dimensional, except for "
                         f"the first and last, which may be one-dimensional; got shapes {shapes}")
    if any(a.shape[-1] != b.shape[0] for a, b in zip(arrs[:-1], arrs[1:])):
        raise ValueError("linalg.multi_dot: the last dimension of each array must match the first "
                         f"dimension of the next; got shapes {shapes}")
    letters = string.ascii_letters
    subs = [letters[i] + letters[i + 1] for i in range(len(arrs))]
    if arrs[0].ndim == 1:
        subs[0] = subs[0][1:]
    if arrs[-1].ndim == 1:
        subs[-1] = subs[-1][:1]
    out = "".join(sorted(set("".join(subs)), key=letters.index))
    out = "".join(c for c in out if "".join(subs).count(c) == 1)
    return jnp.einsum(",".join(subs) + "->" + out, *arrs, optimize="auto", precision=precision)
