"""Factorisations and solvers: Cholesky, LU, QR, SVD, eigh, Schur, Hessenberg, polar, solve."""

from __future__ import annotations

from typing import Any

import fluxion.lax.linalg as lax_linalg
import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact

__all__ = ["cholesky", "cho_factor", "cho_solve", "lu", "lu_factor", "lu_solve", "qr",
           "qr_multiply", "svd", "eigh", "eigh_tridiagonal", "schur", "rsf2csf", "hessenberg",
           "det", "inv", "solve", "solve_triangular", "polar"]


def _square(name: str, a: Any) -> Any:
    a, = promote_inexact(name, a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: expected a square matrix (..., n, n), got shape {a.shape}")
    return a


def _h(x: Any) -> Any:
    return jnp.conj(jnp.swapaxes(x, -1, -2))


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Any:
    """Cholesky factor of a Hermitian positive-definite matrix: upper (a = U^H U) unless ``lower``.

    Example:
        >>> cholesky(jnp.array([[4.0, 2.0], [2.0, 5.0]])).tolist()
        [[2.0, 1.0], [0.0, 2.0]]
    """
    a = _square("cholesky", a)
    low = lax_linalg.cholesky(a)
    return low if lower else _h(low)


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Any, bool]:
    """Cholesky factorisation in the form ``cho_solve`` takes: ``(c, lower)``.

    Example:
        >>> c, low = cho_factor(jnp.eye(2))
        >>> low
        False
    """
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
    """Solves a x = b from ``cho_factor(a)``; ``b`` is (n,) or (n, k).

    Example:
        >>> cho_solve(cho_factor(2 * jnp.eye(2)), jnp.ones(2)).tolist()
        [0.5, 0.5]
    """
    c, lower = c_and_lower
    c, b = promote_inexact("cho_solve", c, b)
    if b.shape[0] != c.shape[-1]:
        raise ValueError(f"cho_solve: b has {b.shape[0]} rows, the factor is {c.shape}")
    vec = b.ndim == 1
    bm = b[:, None] if vec else b
    low = c if lower else _h(c)
    y = lax_linalg.triangular_solve(low, bm, left_side=True, lower=True)
    x = lax_linalg.triangular_solve(low, y, left_side=True, lower=True, transpose_a=True,
                                    conjugate_a=True)
    return x[:, 0] if vec else x


def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False,
       check_finite: bool = True) -> tuple[Any, ...]:
    """LU decomposition with partial pivoting: ``(p, l, u)`` with a = p @ l @ u, or ``(p @ l, u)``.

    Example:
        >>> p, l, u = lu(jnp.array([[1.0, 2.0], [3.0, 4.0]]))
        >>> p.shape, l.shape, u.shape
        ((2, 2), (2, 2), (2, 2))
    """
    a, = promote_inexact("lu", a)
    if a.ndim < 2:
        raise ValueError(f"lu: expected a matrix, got shape {a.shape}")
    m, n = a.shape[-2:]
    k = min(m, n)
    packed, _, perm = lax_linalg.lu(a)
    l_ = jnp.tril(packed[..., :, :k], -1) + jnp.eye(m, k, dtype=a.dtype)
    u = jnp.triu(packed[..., :k, :])
    p = jnp.swapaxes(jnp.eye(m, dtype=a.dtype)[perm], -1, -2)
    if permute_l:
        return p @ l_, u
    return p, l_, u


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, Any]:
    """Packed LU factorisation ``(lu, piv)`` (LAPACK's row-swap pivots) for ``lu_solve``.

    Example:
        >>> lu_, piv = lu_factor(jnp.array([[1.0, 2.0], [3.0, 4.0]]))
        >>> piv.tolist()
        [1, 1]
    """
    a = _square("lu_factor", a)
    packed, piv, _ = lax_linalg.lu(a)
    return packed, piv


def lu_solve(lu_and_piv: tuple[Any, Any], b: Any, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Any:
    """Solves a x = b (``trans=0``), a^T x = b (1) or a^H x = b (2) from ``lu_factor(a)``.

    Example:
        >>> lu_solve(lu_factor(2 * jnp.eye(2)), jnp.ones(2)).tolist()
        [0.5, 0.5]
    """
    packed, piv = lu_and_piv
    if trans not in (0, 1, 2):
        raise ValueError(f"lu_solve: trans must be 0, 1 or 2, got {trans!r}")
    packed, b = promote_inexact("lu_solve", packed, b)
    n = packed.shape[-1]
    if b.shape[0] != n:
        raise ValueError(f"lu_solve: b has {b.shape[0]} rows, the factor is {packed.shape}")
    vec = b.ndim == 1
    bm = b[:, None] if vec else b
    perm = lax_linalg.lu_pivots_to_permutation(piv, n)
    if trans == 0:
        y = lax_linalg.triangular_solve(packed, bm[perm], left_side=True, lower=True,
                                        unit_diagonal=True)
        x = lax_linalg.triangular_solve(packed, y, left_side=True, lower=False)
    else:
        conj = trans == 2
        y = lax_linalg.triangular_solve(packed, bm, left_side=True, lower=False, transpose_a=True,
                                        conjugate_a=conj)
        z = lax_linalg.triangular_solve(packed, y, left_side=True, lower=True, transpose_a=True,
                                        conjugate_a=conj, unit_diagonal=True)
        x = jnp.zeros_like(z).at[perm].set(z)
    return x[:, 0] if vec else x


def qr(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full",
       pivoting: bool = False, check_finite: bool = True) -> tuple[Any, ...]:
    """QR decomposition. ``mode``: "full" or "economic" give (q, r), "r" gives (r,); with
    ``pivoting`` a column permutation p (a[:, p] = q r) is returned last.

    Example:
        >>> q, r = qr(jnp.eye(3)[:, :2], mode="economic")
        >>> q.shape, r.shape
        ((3, 2), (2, 2))
    """
    if mode not in ("full", "r", "economic"):
        raise ValueError(f"qr: mode must be 'full', 'r' or 'economic', got {mode!r}")
    a, = promote_inexact("qr", a)
    out = lax_linalg.qr(a, pivoting=pivoting, full_matrices=(mode != "economic"))
    if pivoting:
        q, r, p = out
        return (r, p) if mode == "r" else (q, r, p)
    q, r = out
    return (r,) if mode == "r" else (q, r)


def qr_multiply(a: Any, c: Any, mode: str = "right", pivoting: bool = False,
                conjugate: bool = False, overwrite_a: bool = False,
                overwrite_c: bool = False) -> tuple[Any, ...]:
    """Economic QR of ``a`` and the product of its q with ``c``: (c @ q, r) for "right",
    (q @ c, r) for "left"; ``conjugate`` uses conj(q).

    Example:
        >>> cq, r = qr_multiply(jnp.eye(2), jnp.ones((1, 2)))
        >>> cq.shape
        (1, 2)
    """
    if mode not in ("left", "right"):
        raise ValueError(f"qr_multiply: mode must be 'left' or 'right', got {mode!r}")
    out = qr(a, mode="economic", pivoting=pivoting)
    q = jnp.conj(out[0]) if conjugate else out[0]
    c = jnp.asarray(c)
    if mode == "left":
        vec = c.ndim == 1
        prod = q @ (c[:, None] if vec else c)
        prod = prod[:, 0] if vec else prod
    else:
        prod = c @ q
    return (prod,) + tuple(out[1:])


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd") -> Any:
    """Singular value decomposition: (u, s, vh) with a = u @ diag(s) @ vh, or s alone.

    Example:
        >>> svd(jnp.diag(jnp.array([3.0, 1.0])), compute_uv=False).tolist()
        [3.0, 1.0]
    """
    if lapack_driver not in ("gesdd", "gesvd"):
        raise ValueError(f"svd: lapack_driver must be 'gesdd' or 'gesvd', got {lapack_driver!r}")
    a, = promote_inexact("svd", a)
    return jnp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def eigh(a: Any, b: Any = None, lower: bool = True, eigvals_only: bool = False,
         overwrite_a: bool = False, overwrite_b: bool = False, turbo: bool = True,
         eigvals: None = None, type: int = 1, check_finite: bool = True) -> Any:  # noqa: A002
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix, or of the generalised
    problem a v = w b v with b Hermitian positive definite (``type=1``).

    Example:
        >>> eigh(jnp.diag(jnp.array([2.0, 1.0])), eigvals_only=True).tolist()
        [1.0, 2.0]
    """
    if eigvals is not None:
        raise NotImplementedError("eigh: the 'eigvals' argument is not supported")
    if type != 1:
        raise NotImplementedError(f"eigh: only type=1 is supported, got type={type}")
    a = _square("eigh", a)
    if b is None:
        v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=False)
        return w if eigvals_only else (w, v)
    b = _square("eigh", b)
    low = lax_linalg.cholesky(b)
    # C = L^-1 A L^-H has the same eigenvalues; eigenvectors map back by L^-H.
    full = jnp.tril(a) + _h(jnp.tril(a, -1)) if lower else jnp.triu(a) + _h(jnp.triu(a, 1))
    t = lax_linalg.triangular_solve(low, full, left_side=True, lower=True)
    cmat = _h(lax_linalg.triangular_solve(low, _h(t), left_side=True, lower=True))
    v, w = lax_linalg.eigh(cmat)
    if eigvals_only:
        return w
    x = lax_linalg.triangular_solve(low, v, left_side=True, lower=True, transpose_a=True,
                                    conjugate_a=True)
    return w, x


def eigh_tridiagonal(d: Any, e: Any, *, eigvals_only: bool = False, select: str = "a",
                     select_range: tuple[float, float] | None = None, tol: float | None = None,
                     key: Any = None) -> Any:
    """Eigenvalues (and, beyond JAX, eigenvectors) of the symmetric tridiagonal matrix with
    diagonal ``d`` and off-diagonal ``e``. ``select="i"`` keeps the indices in ``select_range``.

    Example:
        >>> eigh_tridiagonal(jnp.array([2.0, 2.0]), jnp.array([1.0]), eigvals_only=True).tolist()
        [1.0, 3.0]
    """
    if select not in ("a", "i"):
        raise NotImplementedError(f"eigh_tridiagonal: select must be 'a' or 'i', got {select!r}")
    d, e = promote_inexact("eigh_tridiagonal", d, e)
    n = d.shape[-1]
    if e.shape[-1] != n - 1:
        raise ValueError(f"eigh_tridiagonal: e must have {n - 1} entries for d of {n}, got "
                         f"shape {e.shape}")
    mat = jnp.diag(d) + jnp.diag(e, 1) + jnp.diag(jnp.conj(e), -1)
    v, w = lax_linalg.eigh(mat, symmetrize_input=False)
    if select == "i":
        if select_range is None:
            raise ValueError("eigh_tridiagonal: select='i' needs select_range=(lo, hi)")
        lo, hi = int(select_range[0]), int(select_range[1])
        w, v = w[lo:hi + 1], v[:, lo:hi + 1]
    return w if eigvals_only else (w, v)


def schur(a: Any, output: str = "real") -> tuple[Any, Any]:
    """Schur decomposition a = z t z^H: t quasi-upper-triangular ("real") or upper triangular
    ("complex").

    Example:
        >>> t, z = schur(jnp.array([[1.0, 2.0], [0.0, 3.0]]))
        >>> t.shape
        (2, 2)
    """
    if output not in ("real", "complex"):
        raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
    a = _square("schur", a)
    if output == "complex":
        a = a.astype(jnp.result_type(a, 1j))
    t, z = lax_linalg.schur(a)
    return t, z


def rsf2csf(T: Any, Z: Any, check_finite: bool = True) -> tuple[Any, Any]:  # noqa: N803
    """Converts a real Schur form (T, Z) into the complex one by Givens rotations on each 2x2 block.

    Example:
        >>> t, z = rsf2csf(jnp.array([[0.0, 1.0], [-1.0, 0.0]]), jnp.eye(2))
        >>> t.dtype.kind
        'c'
    """
    t, z = promote_inexact("rsf2csf", T, Z)
    if t.ndim != 2 or t.shape[0] != t.shape[1] or z.shape != t.shape:
        raise ValueError(f"rsf2csf: T and Z must be square of one shape, got {t.shape}, {z.shape}")
    cdt = jnp.result_type(t, 1j)
    t, z = t.astype(cdt), z.astype(cdt)
    n = t.shape[0]
    eps = float(jnp.finfo(t.real.dtype).eps)
    for m in range(n - 1, 0, -1):
        sub = t[m, m - 1]
        active = jnp.abs(sub) > eps * (jnp.abs(t[m - 1, m - 1]) + jnp.abs(t[m, m]))
        blk = t[m - 1:m + 1, m - 1:m + 1]
        tr = blk[0, 0] + blk[1, 1]
        disc = jnp.sqrt((blk[0, 0] - blk[1, 1]) ** 2 + 4.0 * blk[0, 1] * blk[1, 0])
        mu = 0.5 * (tr + disc) - t[m, m]
        r = jnp.sqrt(jnp.abs(mu) ** 2 + jnp.abs(sub) ** 2)
        r = jnp.where(active, r, 1.0)
        c = jnp.where(active, mu / r, 1.0)
        s = jnp.where(active, sub / r, 0.0)
        g = jnp.stack([jnp.stack([jnp.conj(c), s]), jnp.stack([-s, c])])
        gh = jnp.conj(g.T)
        t = t.at[m - 1:m + 1, m - 1:].set(g @ t[m - 1:m + 1, m - 1:])
        t = t.at[:m + 1, m - 1:m + 1].set(t[:m + 1, m - 1:m + 1] @ gh)
        z = z.at[:, m - 1:m + 1].set(z[:, m - 1:m + 1] @ gh)
        t = t.at[m, m - 1].set(0.0)
    return jnp.triu(t), z


def hessenberg(a: Any, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> Any:
    """Upper Hessenberg form h = q^H a q, and q when ``calc_q``.

    Example:
        >>> hessenberg(jnp.eye(3)).shape
        (3, 3)
    """
    a = _square("hessenberg", a)
    packed, taus = lax_linalg.hessenberg(a)
    h = jnp.triu(packed, -1)
    if not calc_q:
        return h
    n = a.shape[-1]
    if n < 2:
        return h, jnp.ones_like(a)
    reflectors = jnp.tril(packed[..., 1:, :-1], -1)
    q_sub = lax_linalg.householder_product(reflectors, taus)
    q = jnp.zeros_like(a).at[..., 0, 0].set(1.0).at[..., 1:, 1:].set(q_sub)
    return h, q


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """Determinant of a square matrix (batched over leading axes).

    Example:
        >>> float(det(jnp.array([[1.0, 2.0], [3.0, 4.0]])))
        -2.0...
    """
    return jnp.linalg.det(_square("det", a))


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """Inverse of a square matrix.

    Example:
        >>> inv(2 * jnp.eye(2)).tolist()
        [[0.5, 0.0], [0.0, 0.5]]
    """
    return jnp.linalg.inv(_square("inv", a))


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, debug: bool = False, check_finite: bool = True,
          assume_a: str = "gen") -> Any:
    """Solves a x = b. ``assume_a``: "gen", "sym", "her" or "pos" (the last three read only the
    triangle ``lower`` names); "pos" uses a Cholesky factorisation.

    Example:
        >>> solve(2 * jnp.eye(2), jnp.ones(2)).tolist()
        [0.5, 0.5]
    """
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"solve: assume_a must be 'gen', 'sym', 'her' or 'pos', got {assume_a!r}")
    a = _square("solve", a)
    a, b = promote_inexact("solve", a, b)
    if b.shape[0] != a.shape[-1]:
        raise ValueError(f"solve: a is {a.shape} but b has shape {b.shape}")
    if assume_a != "gen":
        tri = jnp.tril(a) if lower else jnp.triu(a)
        off = jnp.tril(a, -1) if lower else jnp.triu(a, 1)
        back = jnp.conj(off.T) if assume_a in ("her", "pos") else off.T
        a = tri + back
    if assume_a == "pos":
        return cho_solve((lax_linalg.cholesky(a), True), b)
    vec = b.ndim == 1
    x = jnp.linalg.solve(a, b[:, None] if vec else b)
    return x[:, 0] if vec else x


def solve_triangular(a: Any, b: Any, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False, debug: Any = None,
                     check_finite: bool = True) -> Any:
    """Solves a x = b for triangular a; ``trans`` 0/"N", 1/"T" (a^T) or 2/"C" (a^H).

    Example:
        >>> solve_triangular(jnp.array([[2.0, 0.0], [1.0, 1.0]]), jnp.array([2.0, 2.0]),
        ...                  lower=True).tolist()
        [1.0, 1.0]
    """
    codes = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}
    if trans not in codes:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    t = codes[trans]
    a = _square("solve_triangular", a)
    a, b = promote_inexact("solve_triangular", a, b)
    vec = b.ndim == a.ndim - 1
    bm = b[..., None] if vec else b
    if bm.shape[-2] != a.shape[-1]:
        raise ValueError(f"solve_triangular: a is {a.shape} but b has shape {b.shape}")
    x = lax_linalg.triangular_solve(a, bm, left_side=True, lower=lower, transpose_a=t > 0,
                                    conjugate_a=t == 2, unit_diagonal=unit_diagonal)
    return x[..., 0] if vec else x


def polar(a: Any, side: str = "right", *, method: str = "qdwh", eps: float | None = None,
          max_iterations: int | None = None) -> tuple[Any, Any]:
    """Polar decomposition a = u p ("right") or a = p u ("left"), u unitary, p Hermitian PSD.

    Computed from the SVD whatever ``method`` says ("qdwh" and "svd" are accepted).

    Example:
        >>> u, p = polar(jnp.array([[2.0, 0.0], [0.0, 3.0]]))
        >>> p.tolist()
        [[2.0, 0.0], [0.0, 3.0]]
    """
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"polar: method must be 'qdwh' or 'svd', got {method!r}")
    a, = promote_inexact("polar", a)
    u_, s, vh = jnp.linalg.svd(a, full_matrices=False)
    unitary = u_ @ vh
    if side == "right":
        p = _h(vh) @ (s[..., :, None] * vh)
    else:
        p = u_ @ (s[..., :, None] * _h(u_))
    return unitary, p
