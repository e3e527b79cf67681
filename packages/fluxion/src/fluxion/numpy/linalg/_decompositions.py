"""Factorisations: ``cholesky``, ``svd``/``svdvals``, ``eigh``/``eigvalsh``, ``eig``/``eigvals``, ``qr``."""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.lax import linalg as lax_linalg
from fluxion.numpy._util import promote_dtypes_inexact
from fluxion.numpy.linalg._common import (
    _H,
    _T,
    EighResult,
    EigResult,
    QRResult,
    SVDResult,
    _arrays,
    _at_least_2d,
    _inexact,
    _jit,
    _square,
)

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
