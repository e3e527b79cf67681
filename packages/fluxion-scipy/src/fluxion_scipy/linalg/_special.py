"""Special matrices: block_diag, toeplitz, hankel, circulant, companion, dft, hadamard, ..."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import fluxion.numpy as jnp

__all__ = ["block_diag", "toeplitz", "hankel", "circulant", "companion", "convolution_matrix",
           "dft", "fiedler", "fiedler_companion", "hadamard", "helmert", "hilbert", "invhilbert",
           "pascal", "invpascal", "leslie"]


def _vector(name: str, a: Any, what: str = "a") -> Any:
    a = jnp.asarray(a)
    if a.ndim != 1:
        raise ValueError(f"{name}: {what} must be 1-D, got shape {a.shape}")
    return a


def _static_n(name: str, n: Any) -> int:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"{name}: n must be a non-negative integer, got {n!r}")
    return int(n)


def block_diag(*arrs: Any) -> Any:
    """Block-diagonal matrix of the given blocks (scalars and 1-D arrays count as one row).

    Example:
        >>> block_diag(jnp.ones((1, 1)), 2 * jnp.ones((1, 1))).tolist()
        [[1.0, 0.0], [0.0, 2.0]]
    """
    if not arrs:
        return jnp.zeros((1, 0))
    blocks = [jnp.atleast_2d(jnp.asarray(a)) for a in arrs]
    for b in blocks:
        if b.ndim > 2:
            raise ValueError(f"block_diag: blocks must be at most 2-D, got shape {b.shape}")
    dtype = jnp.result_type(*blocks)
    rows = sum(b.shape[0] for b in blocks)
    cols = sum(b.shape[1] for b in blocks)
    out = jnp.zeros((rows, cols), dtype)
    r = c = 0
    for b in blocks:
        out = out.at[r:r + b.shape[0], c:c + b.shape[1]].set(b.astype(dtype))
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def toeplitz(c: Any, r: Any = None) -> Any:
    """Toeplitz matrix with first column ``c`` and first row ``r`` (default conj(c)); batched
    over leading axes.

    Example:
        >>> toeplitz(jnp.array([1, 2, 3])).tolist()
        [[1, 2, 3], [2, 1, 2], [3, 2, 1]]
    """
    c = jnp.asarray(c)
    r = jnp.conj(c) if r is None else jnp.asarray(r)
    c, r = jnp.atleast_1d(c), jnp.atleast_1d(r)
    m, n = c.shape[-1], r.shape[-1]
    vals = jnp.concatenate([jnp.flip(r[..., 1:], -1), c], axis=-1)  # r[n-1] .. r[1], c[0] .. c[m-1]
    idx = (n - 1) + np.arange(m)[:, None] - np.arange(n)[None, :]
    return vals[..., idx]


def hankel(c: Any, r: Any = None) -> Any:
    """Hankel matrix with first column ``c`` and last row ``r`` (default zeros).

    Example:
        >>> hankel(jnp.array([1, 2, 3])).tolist()
        [[1, 2, 3], [2, 3, 0], [3, 0, 0]]
    """
    c = jnp.atleast_1d(jnp.asarray(c))
    r = jnp.zeros_like(c) if r is None else jnp.atleast_1d(jnp.asarray(r))
    m, n = c.shape[-1], r.shape[-1]
    vals = jnp.concatenate([c, r[..., 1:]], axis=-1)
    idx = np.arange(m)[:, None] + np.arange(n)[None, :]
    return vals[..., idx]


def circulant(c: Any) -> Any:
    """Circulant matrix whose first column is ``c``.

    Example:
        >>> circulant(jnp.array([1, 2, 3])).tolist()
        [[1, 3, 2], [2, 1, 3], [3, 2, 1]]
    """
    c = jnp.atleast_1d(jnp.asarray(c))
    n = c.shape[-1]
    idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % n
    return c[..., idx]


def companion(a: Any) -> Any:
    """Companion matrix of the polynomial with coefficients ``a`` (highest degree first).

    Example:
        >>> companion(jnp.array([1.0, -3.0, 2.0])).tolist()
        [[3.0, -2.0], [1.0, 0.0]]
    """
    a = _vector("companion", a)
    if a.shape[0] < 2:
        raise ValueError(f"companion: a needs at least 2 coefficients, got {a.shape[0]}")
    a = a.astype(jnp.result_type(a, 1.0))
    n = a.shape[0] - 1
    first = -a[1:] / a[0]
    return jnp.concatenate([first[None, :], jnp.eye(n - 1, n, dtype=a.dtype)], axis=0)


def convolution_matrix(a: Any, n: int, mode: str = "full") -> Any:
    """The matrix A with A @ v == convolve(a, v, mode) for v of length ``n``.

    Example:
        >>> convolution_matrix(jnp.array([1, 2]), 2).tolist()
        [[1, 0], [2, 1], [0, 2]]
    """
    a = _vector("convolution_matrix", a)
    n = _static_n("convolution_matrix", n)
    if n == 0 or a.shape[0] == 0:
        raise ValueError("convolution_matrix: a and n must be non-empty")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"convolution_matrix: mode must be 'full', 'valid' or 'same', got {mode!r}")
    m = a.shape[0]
    full = toeplitz(jnp.concatenate([a, jnp.zeros(n - 1, a.dtype)]),
                    jnp.concatenate([a[:1], jnp.zeros(n - 1, a.dtype)]))
    if mode == "full":
        return full
    if mode == "valid":
        lo, hi = min(m, n) - 1, max(m, n)
        return full[lo:hi]
    start = (min(n, m) - 1) // 2
    size = max(m, n)
    return full[start:start + size]


def dft(n: int, scale: str | None = None, *, dtype: Any = None) -> Any:
    """The n x n discrete Fourier transform matrix; ``scale`` None, "n" or "sqrtn".

    Example:
        >>> dft(2).real.tolist()
        [[1.0, 1.0], [1.0, -1.0]]
    """
    n = _static_n("dft", n)
    if scale not in (None, "n", "sqrtn"):
        raise ValueError(f"dft: scale must be None, 'n' or 'sqrtn', got {scale!r}")
    k = np.arange(n)
    mat = np.exp(-2j * np.pi * np.outer(k, k) / max(n, 1))
    if scale == "n":
        mat = mat / n
    elif scale == "sqrtn":
        mat = mat / math.sqrt(n)
    return jnp.asarray(mat, dtype or jnp.result_type(1j))


def fiedler(a: Any) -> Any:
    """Symmetric Fiedler matrix |a_i - a_j|.

    Example:
        >>> fiedler(jnp.array([1, 4])).tolist()
        [[0, 3], [3, 0]]
    """
    a = _vector("fiedler", a)
    return jnp.abs(a[:, None] - a[None, :])


def fiedler_companion(a: Any) -> Any:
    """Fiedler's pentadiagonal companion matrix of the polynomial with coefficients ``a``.

    Example:
        >>> fiedler_companion(jnp.array([1.0, 2.0, 3.0])).tolist()
        [[-2.0, -3.0], [1.0, 0.0]]
    """
    a = _vector("fiedler_companion", a)
    if a.shape[0] < 2:
        raise ValueError("fiedler_companion: a needs at least 2 coefficients")
    a = a.astype(jnp.result_type(a, 1.0))
    a = a / a[0]
    n = a.shape[0] - 1
    if n == 1:
        return -a[1:].reshape(1, 1)
    # Row 0 is (-a1, -a2, 1); an even row r >= 2 holds -a[r+1] at column r-1, -a[r+2] at r+1 and
    # 1 at r+2; the odd rows hold a single 1 (row 1 at column 0, row r >= 3 at column r-2).
    rows, cols, coef = [0, 0], [0, 1], [1, 2]
    ones_r, ones_c = [0, 1], [2, 0]
    for r in range(2, n, 2):
        rows += [r, r]
        cols += [r - 1, r + 1]
        coef += [r + 1, r + 2]
        ones_r.append(r)
        ones_c.append(r + 2)
    for r in range(3, n, 2):
        ones_r.append(r)
        ones_c.append(r - 2)
    keep = [i for i in range(len(rows)) if cols[i] < n and coef[i] <= n]
    keep1 = [i for i in range(len(ones_r)) if ones_c[i] < n]
    out = jnp.zeros((n, n), a.dtype)
    out = out.at[np.array([rows[i] for i in keep]), np.array([cols[i] for i in keep])].set(
        -a[np.array([coef[i] for i in keep])])
    return out.at[np.array([ones_r[i] for i in keep1]), np.array([ones_c[i] for i in keep1])].set(1.0)


def hadamard(n: int, dtype: Any = int) -> Any:
    """Sylvester's Hadamard matrix of order n (a power of 2).

    Example:
        >>> hadamard(2).tolist()
        [[1, 1], [1, -1]]
    """
    n = _static_n("hadamard", n)
    if n < 1 or n & (n - 1):
        raise ValueError(f"hadamard: n must be a positive power of 2, got {n}")
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return jnp.asarray(h, dtype)


def helmert(n: int, full: bool = False) -> Any:
    """Helmert matrix of order n (without its first row unless ``full``).

    Example:
        >>> helmert(2, full=True).shape
        (2, 2)
    """
    n = _static_n("helmert", n)
    h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
    d = np.arange(n) * np.arange(1, n + 1)
    h[0] = 1.0
    d[0] = n
    h = h / np.sqrt(d)[:, None]
    return jnp.asarray(h if full else h[1:], jnp.result_type(1.0))


def hilbert(n: int) -> Any:
    """Hilbert matrix 1/(i + j + 1).

    Example:
        >>> hilbert(2).tolist()
        [[1.0, 0.5], [0.5, 0.3333...]]
    """
    n = _static_n("hilbert", n)
    i = np.arange(n)
    return jnp.asarray(1.0 / (i[:, None] + i[None, :] + 1.0), jnp.result_type(1.0))


def invhilbert(n: int) -> Any:
    """Inverse of the Hilbert matrix of order n (exact integers, returned as floats).

    Example:
        >>> invhilbert(2).tolist()
        [[4.0, -6.0], [-6.0, 12.0]]
    """
    n = _static_n("invhilbert", n)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            s = i + j
            out[i, j] = ((-1) ** s * (s + 1) * math.comb(n + i, n - j - 1)
                         * math.comb(n + j, n - i - 1) * math.comb(s, i) ** 2)
    return jnp.asarray(out, jnp.result_type(1.0))


def pascal(n: int, kind: str | None = None) -> Any:
    """Pascal matrix: "symmetric" (default), "lower" or "upper" binomial-coefficient matrix.

    Example:
        >>> pascal(3).tolist()
        [[1.0, 1.0, 1.0], [1.0, 2.0, 3.0], [1.0, 3.0, 6.0]]
    """
    n = _static_n("pascal", n)
    kind = kind or "symmetric"
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"pascal: kind must be 'symmetric', 'lower' or 'upper', got {kind!r}")
    low = np.array([[math.comb(i, j) for j in range(n)] for i in range(n)], float)
    mat = {"lower": low, "upper": low.T, "symmetric": low @ low.T}[kind]
    return jnp.asarray(mat, jnp.result_type(1.0))


def invpascal(n: int, kind: str | None = None) -> Any:
    """Inverse of ``pascal(n, kind)`` (exact integers, as floats).

    Example:
        >>> invpascal(2, "lower").tolist()
        [[1.0, 0.0], [-1.0, 1.0]]
    """
    n = _static_n("invpascal", n)
    kind = kind or "symmetric"
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"invpascal: kind must be 'symmetric', 'lower' or 'upper', got {kind!r}")
    inv_low = np.array([[(-1) ** (i - j) * math.comb(i, j) for j in range(n)]
                        for i in range(n)], float)
    mat = {"lower": inv_low, "upper": inv_low.T, "symmetric": inv_low.T @ inv_low}[kind]
    return jnp.asarray(mat, jnp.result_type(1.0))


def leslie(f: Any, s: Any) -> Any:
    """Leslie population matrix: fecundities ``f`` (n,) in the first row, survival ``s`` (n-1,)
    on the subdiagonal.

    Example:
        >>> leslie(jnp.array([1.0, 2.0]), jnp.array([0.5])).tolist()
        [[1.0, 2.0], [0.5, 0.0]]
    """
    f = _vector("leslie", f, "f")
    s = _vector("leslie", s, "s")
    n = f.shape[0]
    if s.shape[0] != n - 1:
        raise ValueError(f"leslie: s must have {n - 1} entries for f of {n}, got {s.shape[0]}")
    dtype = jnp.result_type(f, s, 1.0)
    out = jnp.zeros((n, n), dtype).at[0].set(f.astype(dtype))
    return out.at[np.arange(1, n), np.arange(n - 1)].set(s.astype(dtype))
