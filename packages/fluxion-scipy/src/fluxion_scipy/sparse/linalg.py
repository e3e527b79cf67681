"""Matrix-free iterative solvers (mirrors ``jax.scipy.sparse.linalg``): cg, gmres, bicgstab.

``A`` (and the preconditioner ``M``) may be a matrix or a function computing the product; ``b``
may be any pytree. The solutions are differentiable through ``lax.custom_linear_solve``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion.flatten_util import ravel_pytree

__all__ = ["cg", "gmres", "bicgstab"]


def _operator(a: Any, unravel: Callable) -> Callable:
    if a is None:
        return lambda v: v
    if callable(a):
        return lambda v: ravel_pytree(a(unravel(v)))[0]
    mat = jnp.asarray(a)
    return lambda v: mat @ v


def _setup(name: str, A: Any, b: Any, x0: Any, M: Any) -> tuple:  # noqa: N803
    flat_b, unravel = ravel_pytree(b)
    if not jnp.issubdtype(flat_b.dtype, jnp.inexact):
        flat_b = flat_b.astype(jnp.result_type(flat_b, 1.0))
    flat_x0 = jnp.zeros_like(flat_b) if x0 is None else ravel_pytree(x0)[0].astype(flat_b.dtype)
    if flat_x0.shape != flat_b.shape:
        raise ValueError(f"{name}: x0 and b must have the same structure and shapes, got "
                         f"{flat_x0.shape} and {flat_b.shape}")
    if not callable(A):
        a = jnp.asarray(A)
        if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] != flat_b.shape[0]:
            raise ValueError(f"{name}: A must be a square matrix matching b of size "
                             f"{flat_b.shape[0]}, got shape {a.shape}")
    return flat_b, flat_x0, unravel, _operator(A, unravel), _operator(M, unravel)


def _norm(v: Any) -> Any:
    return jnp.sqrt(jnp.real(jnp.vdot(v, v)))


def _cg_solve(matvec: Callable, b: Any, x0: Any, tol: float, atol: float, maxiter: int,
              precond: Callable) -> Any:
    bound = jnp.maximum(tol * _norm(b), atol)
    r0 = b - matvec(x0)
    z0 = precond(r0)

    def cond(state: tuple) -> Any:
        x, r, z, p, rz, k = state
        return (_norm(r) > bound) & (k < maxiter)

    def body(state: tuple) -> tuple:
        x, r, z, p, rz, k = state
        ap = matvec(p)
        alpha = rz / jnp.vdot(p, ap)
        x, r = x + alpha * p, r - alpha * ap
        z = precond(r)
        rz_new = jnp.vdot(r, z)
        p = z + (rz_new / rz) * p
        return x, r, z, p, rz_new, k + 1

    init = (x0, r0, z0, z0, jnp.vdot(r0, z0), jnp.asarray(0, jnp.int32))
    return lax.while_loop(cond, body, init)[0]


def cg(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,  # noqa: N803
       maxiter: int | None = None, M: Any = None) -> tuple[Any, None]:  # noqa: N803
    """Conjugate gradients for a symmetric (Hermitian) positive-definite ``A``: returns (x, None)
    once |b - A x| <= max(tol |b|, atol) or after ``maxiter`` (default 10 n) iterations.

    Example:
        >>> x, _ = cg(2 * jnp.eye(2), jnp.ones(2))
        >>> x.tolist()
        [0.5, 0.5]
    """
    flat_b, flat_x0, unravel, matvec, precond = _setup("cg", A, b, x0, M)
    maxiter = 10 * flat_b.shape[0] if maxiter is None else int(maxiter)

    def solve(mv: Callable, rhs: Any) -> Any:
        return _cg_solve(mv, rhs, flat_x0, tol, atol, maxiter, precond)

    # The operator is symmetric: its transpose solve is the same solve (passed explicitly).
    x = lax.custom_linear_solve(matvec, flat_b, solve, transpose_solve=solve, symmetric=True)
    return unravel(x), None


def _bicgstab_solve(matvec: Callable, b: Any, x0: Any, tol: float, atol: float, maxiter: int,
                    precond: Callable) -> Any:
    bound = jnp.maximum(tol * _norm(b), atol)
    r0 = b - matvec(x0)
    one = jnp.ones((), b.dtype)

    def cond(state: tuple) -> Any:
        x, r, *_, k, broke = state
        return (_norm(r) > bound) & (k < maxiter) & ~broke

    def body(state: tuple) -> tuple:
        x, r, rhat, p, v, rho, alpha, omega, k, _ = state
        rho_new = jnp.vdot(rhat, r)
        beta = (rho_new / rho) * (alpha / omega)
        p = r + beta * (p - omega * v)
        phat = precond(p)
        v = matvec(phat)
        alpha = rho_new / jnp.vdot(rhat, v)
        s = r - alpha * v
        shat = precond(s)
        t = matvec(shat)
        omega = jnp.vdot(t, s) / jnp.where(jnp.vdot(t, t) == 0, one, jnp.vdot(t, t))
        x = x + alpha * phat + omega * shat
        r = s - omega * t
        broke = (rho_new == 0) | (omega == 0)
        return x, r, rhat, p, v, rho_new, alpha, omega, k + 1, broke

    zeros = jnp.zeros_like(b)
    init = (x0, r0, r0, zeros, zeros, one, one, one, jnp.asarray(0, jnp.int32),
            jnp.asarray(False))
    return lax.while_loop(cond, body, init)[0]


def _transposed(matvec: Callable, like: Any) -> Callable:
    transpose = fluxion.linear_transpose(matvec, like)
    return lambda v: transpose(v)[0]


def bicgstab(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,  # noqa: N803
             maxiter: int | None = None, M: Any = None) -> tuple[Any, None]:  # noqa: N803
    """Biconjugate gradients stabilised, for general (non-symmetric) ``A``: returns (x, None).

    Example:
        >>> x, _ = bicgstab(jnp.array([[2.0, 1.0], [0.0, 1.0]]), jnp.array([3.0, 1.0]))
        >>> [round(float(v), 5) for v in x]
        [1.0, 1.0]
    """
    flat_b, flat_x0, unravel, matvec, precond = _setup("bicgstab", A, b, x0, M)
    maxiter = 10 * flat_b.shape[0] if maxiter is None else int(maxiter)

    def solve(mv: Callable, rhs: Any) -> Any:
        return _bicgstab_solve(mv, rhs, flat_x0, tol, atol, maxiter, precond)

    def transpose_solve(mv_t: Callable, rhs: Any) -> Any:
        return _bicgstab_solve(mv_t, rhs, jnp.zeros_like(rhs), tol, atol, maxiter, lambda v: v)

    x = lax.custom_linear_solve(matvec, flat_b, solve, transpose_solve=transpose_solve)
    return unravel(x), None


def _gmres_solve(matvec: Callable, b: Any, x0: Any, tol: float, atol: float, restart: int,
                 maxiter: int, precond: Callable) -> Any:
    n = b.shape[0]
    m = min(restart, n)
    pb = precond(b)
    bound = jnp.maximum(tol * _norm(pb), atol)

    def residual(x: Any) -> Any:
        return precond(b - matvec(x))

    def cycle(x: Any) -> Any:
        r = residual(x)
        beta = _norm(r)
        basis = jnp.zeros((m + 1, n), b.dtype).at[0].set(r / jnp.where(beta > 0, beta, 1.0))
        h = jnp.zeros((m + 1, m), b.dtype)

        def arnoldi(j: Any, carry: tuple) -> tuple:
            basis, h = carry
            w = precond(matvec(basis[j]))
            mask = (jnp.arange(m + 1) <= j).astype(b.dtype)
            for _ in range(2):  # classical Gram-Schmidt, twice, for orthogonality
                coeffs = (jnp.conj(basis) @ w) * mask
                w = w - coeffs @ basis
                h = h.at[:, j].add(coeffs)
            norm = _norm(w)
            h = h.at[j + 1, j].set(norm)
            basis = basis.at[j + 1].set(w / jnp.where(norm > 0, norm, 1.0))
            return basis, h

        basis, h = lax.fori_loop(0, m, arnoldi, (basis, h))
        e1 = jnp.zeros((m + 1,), b.dtype).at[0].set(beta)
        y = jnp.linalg.lstsq(h, e1)[0]
        return x + y @ basis[:m]

    def cond(state: tuple) -> Any:
        x, k = state
        return (_norm(residual(x)) > bound) & (k < maxiter)

    def body(state: tuple) -> tuple:
        x, k = state
        return cycle(x), k + 1

    return lax.while_loop(cond, body, (x0, jnp.asarray(0, jnp.int32)))[0]


def gmres(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,  # noqa: N803
          restart: int = 20, maxiter: int | None = None, M: Any = None,  # noqa: N803
          solve_method: str = "batched") -> tuple[Any, None]:
    """Restarted GMRES for general ``A``: Krylov spaces of size ``restart``, at most ``maxiter``
    restarts (default 10 n); returns (x, None). ``solve_method`` ("batched" or "incremental")
    is accepted for JAX compatibility; both run the same Arnoldi process.

    Example:
        >>> x, _ = gmres(jnp.array([[2.0, 1.0], [0.0, 1.0]]), jnp.array([3.0, 1.0]))
        >>> [round(float(v), 5) for v in x]
        [1.0, 1.0]
    """
    if solve_method not in ("batched", "incremental"):
        raise ValueError(f"gmres: solve_method must be 'batched' or 'incremental', got "
                         f"{solve_method!r}")
    flat_b, flat_x0, unravel, matvec, precond = _setup("gmres", A, b, x0, M)
    maxiter = 10 * flat_b.shape[0] if maxiter is None else int(maxiter)

    def solve(mv: Callable, rhs: Any) -> Any:
        return _gmres_solve(mv, rhs, flat_x0, tol, atol, restart, maxiter, precond)

    def transpose_solve(mv_t: Callable, rhs: Any) -> Any:
        return _gmres_solve(mv_t, rhs, jnp.zeros_like(rhs), tol, atol, restart, maxiter,
                            lambda v: v)

    x = lax.custom_linear_solve(matvec, flat_b, solve, transpose_solve=transpose_solve)
    return unravel(x), None
