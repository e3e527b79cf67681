"""Matrix functions: expm and its Frechet derivative, sqrtm, funm, and the Sylvester solver."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact
from fluxion_scipy.linalg._decomp import schur, solve_triangular

__all__ = ["expm", "expm_frechet", "sqrtm", "funm", "solve_sylvester"]

# Pade(13) coefficients and the 1-norm bound below which it is accurate in double precision
# (Higham, "The scaling and squaring method for the matrix exponential revisited", 2005).
_B13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
        129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
        40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _square_matrix(name: str, a: Any) -> Any:
    a, = promote_inexact(name, a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: expected a square matrix (..., n, n), got shape {a.shape}")
    return a


def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Any:  # noqa: N803
    """Matrix exponential by Pade(13) scaling and squaring (batched over leading axes).

    Example:
        >>> round(float(expm(jnp.zeros((2, 2)))[0, 0]), 4)
        1.0
    """
    a = _square_matrix("expm", A)
    n = a.shape[-1]
    norm = jnp.max(jnp.sum(jnp.abs(a), axis=-2), axis=-1)
    s = jnp.ceil(jnp.log2(jnp.maximum(norm, 1e-300) / _THETA13))
    s = jnp.clip(s, 0, max_squarings)
    a = a / (2.0 ** s)[..., None, None]
    eye = jnp.broadcast_to(jnp.eye(n, dtype=a.dtype), a.shape)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    b = _B13
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
             + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    r = jnp.linalg.solve(v - u, v + u)

    def square(i: Any, r: Any) -> Any:
        keep = (i < s)[..., None, None]
        return jnp.where(keep, r @ r, r)

    r = lax.fori_loop(0, max_squarings, square, r)
    return jnp.triu(r) if upper_triangular else r


def expm_frechet(A: Any, E: Any, *, method: str | None = None,  # noqa: N803
                 compute_expm: bool = True) -> Any:
    """Frechet derivative of expm at A in direction E (and expm(A) first when ``compute_expm``),
    read off the exponential of the block matrix [[A, E], [0, A]].

    Example:
        >>> l = expm_frechet(jnp.zeros((2, 2)), jnp.eye(2), compute_expm=False)
        >>> l.tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"expm_frechet: unknown method {method!r}")
    a = _square_matrix("expm_frechet", A)
    e = _square_matrix("expm_frechet", E)
    if a.shape != e.shape:
        raise ValueError(f"expm_frechet: A and E must have one shape, got {a.shape} and {e.shape}")
    n = a.shape[-1]
    top = jnp.concatenate([a, e], axis=-1)
    bottom = jnp.concatenate([jnp.zeros_like(a), a], axis=-1)
    big = expm(jnp.concatenate([top, bottom], axis=-2))
    deriv = big[..., :n, n:]
    return (big[..., :n, :n], deriv) if compute_expm else deriv


def _complex_schur(a: Any) -> tuple[Any, Any]:
    return schur(a.astype(jnp.result_type(a, 1j)), output="complex")


def _by_superdiagonals(t: Any, diag: Any, entry: Callable[[Any, Any, Any], Any]) -> Any:
    # Fills an upper-triangular result r from its diagonal outwards: entry(r, i, j) gives the
    # entries (i, j) of one superdiagonal from the ones already filled.
    n = t.shape[-1]
    r = jnp.diag(diag)
    for d in range(1, n):
        i = jnp.arange(n - d)
        r = r.at[i, i + d].set(entry(r, i, i + d))
    return r


def sqrtm(A: Any, blocksize: int = 1) -> Any:  # noqa: N803
    """Principal matrix square root (complex result), by the Schur method.

    Example:
        >>> r = sqrtm(jnp.array([[4.0, 0.0], [0.0, 9.0]]))
        >>> r.real.tolist()
        [[2.0, 0.0], [0.0, 3.0]]
    """
    a = _square_matrix("sqrtm", A)
    if a.ndim != 2:
        raise ValueError(f"sqrtm: expected one matrix, got shape {a.shape}")
    t, z = _complex_schur(a)
    root_diag = jnp.sqrt(jnp.diagonal(t))

    def entry(r: Any, i: Any, j: Any) -> Any:
        inner = (r @ r)[i, j]  # sum over i < k < j: the (i, j) entry is not yet filled
        return (t[i, j] - inner) / (r[i, i] + r[j, j])

    r = _by_superdiagonals(t, root_diag, entry)
    return z @ r @ jnp.conj(z.T)


def funm(A: Any, func: Callable[[Any], Any], disp: bool = True) -> Any:  # noqa: N803
    """A matrix function f(A) by the Schur-Parlett recurrence; ``func`` acts elementwise on the
    eigenvalues. Needs distinct eigenvalues. With ``disp=False`` also returns an error estimate
    (the relative residual of the commutation f(T) T = T f(T)).

    Example:
        >>> f = funm(jnp.diag(jnp.array([1.0, 2.0])), jnp.exp)
        >>> [round(float(v), 4) for v in jnp.diagonal(f).real]
        [2.7183, 7.3891]
    """
    a = _square_matrix("funm", A)
    if a.ndim != 2:
        raise ValueError(f"funm: expected one matrix, got shape {a.shape}")
    t, z = _complex_schur(a)
    diag = jnp.diagonal(t)

    def entry(f: Any, i: Any, j: Any) -> Any:
        comm = (t @ f - f @ t)[i, j]
        return comm / (t[j, j] - t[i, i])

    f = _by_superdiagonals(t, func(diag).astype(t.dtype), entry)
    out = z @ f @ jnp.conj(z.T)
    if disp:
        return out
    err = jnp.linalg.norm(f @ t - t @ f) / jnp.maximum(jnp.linalg.norm(f), 1e-300)
    return out, err


def solve_sylvester(A: Any, B: Any, C: Any, *, method: str = "schur",  # noqa: N803
                    tol: float = 1e-8) -> Any:
    """Solves A X + X B = C by the Bartels-Stewart algorithm (complex Schur forms of A and B).

    Example:
        >>> x = solve_sylvester(jnp.eye(2), jnp.eye(2), 2 * jnp.ones((2, 2)))
        >>> x.tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    if method != "schur":
        raise ValueError(f"solve_sylvester: only method='schur' is supported, got {method!r}")
    a = _square_matrix("solve_sylvester", A)
    b = _square_matrix("solve_sylvester", B)
    c, = promote_inexact("solve_sylvester", C)
    m, n = a.shape[-1], b.shape[-1]
    if c.shape != (m, n):
        raise ValueError(f"solve_sylvester: C must have shape ({m}, {n}), got {c.shape}")
    r, u = _complex_schur(a)
    s, v = _complex_schur(b)
    f = jnp.conj(u.T) @ c.astype(r.dtype) @ v
    eye = jnp.eye(m, dtype=r.dtype)
    y = jnp.zeros_like(f)
    for k in range(n):
        rhs = f[:, k] - y @ s[:, k]  # columns j >= k of y are still zero
        y = y.at[:, k].set(solve_triangular(r + s[k, k] * eye, rhs))
    x = u @ y @ jnp.conj(v.T)
    real = not (jnp.iscomplexobj(jnp.asarray(A)) or jnp.iscomplexobj(jnp.asarray(B))
                or jnp.iscomplexobj(jnp.asarray(C)))
    return x.real if real else x
