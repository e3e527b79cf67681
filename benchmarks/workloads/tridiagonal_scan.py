"""Batched tridiagonal solve (Thomas algorithm) along the last axis of a float64 grid.

``a``, ``b``, ``c``, ``d`` have shape ``(nx, ny, nz)`` (64x64x40; quick 16x16x40): sub-, main and
super-diagonal and right-hand side of ``nx * ny`` independent systems of size ``nz``, as in
ocean-model vertical mixing (pyhpc-benchmarks' TKE kernel). Timed: one call, blocked.

``jax`` / ``fluxion``  jitted, forward elimination and back substitution as two ``lax.scan``
                       over the last axis (moved to the front), float64 (x64 enabled in the
                       worker process).
``numpy``              vectorised over the first two axes, a Python loop over the last.
``numba``              ``@njit`` loops (skipped when numba is not installed).

Every variant's result is checked once, outside timing, against ``scipy.linalg.solve_banded``
(or a dense ``numpy.linalg.solve`` when SciPy is missing).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "QUICK_SIZES", "DEFAULT_REPS",
           "QUICK_REPS", "setup", "size_label", "make_inputs", "make_solve", "reference_solve"]

NAME = "tridiagonal_scan"
DESCRIPTION = ("Thomas algorithm along the last axis of a float64 grid: two lax.scan (jitted) "
               "vs numpy (loop over the last axis) and numba")
VARIANTS = ("numpy", "jax", "fluxion", "numba")
SIZES = ([64, 64, 40],)
QUICK_SIZES = ([16, 16, 40],)
DEFAULT_REPS = 20
QUICK_REPS = 5


def size_label(size: list[int]) -> str:
    """``[64, 64, 40] -> "64x64x40"``."""
    return "x".join(str(s) for s in size)


def make_inputs(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """``(a, b, c, d)`` float64, diagonally dominant; ``a[..., 0]`` and ``c[..., -1]`` are 0."""
    rng = np.random.default_rng(0)
    a = rng.uniform(-1.0, 1.0, shape)
    c = rng.uniform(-1.0, 1.0, shape)
    a[..., 0] = 0.0
    c[..., -1] = 0.0
    b = 2.0 + np.abs(a) + np.abs(c) + rng.uniform(0.0, 1.0, shape)
    d = rng.standard_normal(shape)
    return a, b, c, d


def make_solve(xnp: Any, lax: Any) -> Callable[..., Any]:
    """``solve(a, b, c, d) -> x`` with ``lax.scan`` over the last axis, for jax or fluxion."""
    def solve(a: Any, b: Any, c: Any, d: Any) -> Any:
        a, b, c, d = (xnp.moveaxis(v, -1, 0) for v in (a, b, c, d))

        def forward(carry: Any, row: Any) -> Any:
            cp, dp = carry
            ai, bi, ci, di = row
            denom = bi - ai * cp
            cn = ci / denom
            dn = (di - ai * dp) / denom
            return (cn, dn), (cn, dn)

        def backward(x_next: Any, row: Any) -> Any:
            cp, dp = row
            x = dp - cp * x_next
            return x, x

        zero = xnp.zeros(a.shape[1:], a.dtype)
        _, (cps, dps) = lax.scan(forward, (zero, zero), (a, b, c, d))
        _, xs = lax.scan(backward, zero, (cps, dps), reverse=True)
        return xnp.moveaxis(xs, 0, -1)

    return solve


def _numpy_solve(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    n = a.shape[-1]
    cp = np.empty_like(a)
    dp = np.empty_like(a)
    cp[..., 0] = c[..., 0] / b[..., 0]
    dp[..., 0] = d[..., 0] / b[..., 0]
    for i in range(1, n):
        denom = b[..., i] - a[..., i] * cp[..., i - 1]
        cp[..., i] = c[..., i] / denom
        dp[..., i] = (d[..., i] - a[..., i] * dp[..., i - 1]) / denom
    x = np.empty_like(a)
    x[..., n - 1] = dp[..., n - 1]
    for i in range(n - 2, -1, -1):
        x[..., i] = dp[..., i] - cp[..., i] * x[..., i + 1]
    return x


def _numba_solve(numba: Any) -> Callable[..., np.ndarray]:
    @numba.njit(cache=False)
    def solve(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
        nx, ny, n = a.shape
        x = np.empty_like(a)
        cp = np.empty(n)
        dp = np.empty(n)
        for i in range(nx):
            for j in range(ny):
                cp[0] = c[i, j, 0] / b[i, j, 0]
                dp[0] = d[i, j, 0] / b[i, j, 0]
                for k in range(1, n):
                    denom = b[i, j, k] - a[i, j, k] * cp[k - 1]
                    cp[k] = c[i, j, k] / denom
                    dp[k] = (d[i, j, k] - a[i, j, k] * dp[k - 1]) / denom
                x[i, j, n - 1] = dp[n - 1]
                for k in range(n - 2, -1, -1):
                    x[i, j, k] = dp[k] - cp[k] * x[i, j, k + 1]
        return x

    return solve


def reference_solve(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Solve every system with ``scipy.linalg.solve_banded`` (dense ``numpy.linalg.solve``
    without SciPy)."""
    n = a.shape[-1]
    flat = [v.reshape(-1, n) for v in (a, b, c, d)]
    try:
        from scipy.linalg import solve_banded
    except ImportError:
        solve_banded = None
    out = np.empty_like(flat[3])
    for k, (ak, bk, ck, dk) in enumerate(zip(*flat)):
        if solve_banded is not None:
            ab = np.zeros((3, n))
            ab[0, 1:] = ck[:-1]
            ab[1] = bk
            ab[2, :-1] = ak[1:]
            out[k] = solve_banded((1, 1), ab, dk)
        else:
            m = np.diag(bk) + np.diag(ck[:-1], 1) + np.diag(ak[1:], -1)
            out[k] = np.linalg.solve(m, dk)
    return out.reshape(a.shape)


def _check(variant: str, x: Any, host: tuple[np.ndarray, ...]) -> None:
    x = np.asarray(x)
    if x.dtype != np.float64 or x.shape != host[0].shape:
        raise AssertionError(f"{variant}: got {x.dtype}{list(x.shape)}, expected float64"
                             f"{list(host[0].shape)} (is x64 enabled?)")
    ref = reference_solve(*host)
    if not np.allclose(x, ref, rtol=1e-10, atol=1e-12):
        raise AssertionError(f"{variant}: tridiagonal solve differs from the reference by "
                             f"{np.max(np.abs(x - ref)):.3g}")


def setup(variant: str, size: list[int]) -> Callable[[], Any]:
    """One call of ``variant``'s solver on a ``size`` grid, blocking until the result is ready."""
    host = make_inputs(tuple(size))
    name = backends.backend_of(variant)
    if name == "numpy":
        fn: Callable[[], Any] = lambda: _numpy_solve(*host)
    elif name == "numba":
        b = backends.load("numba")
        solve = _numba_solve(b.module)
        fn = lambda: solve(*host)
    else:
        b = backends.load(name)
        b.module.config.update("jax_enable_x64", True)  # this worker process only
        lax = importlib.import_module(name + ".lax")
        args = [b.asarray(v) for v in host]
        solve = b.jit(make_solve(b.np, lax))
        block = b.block
        fn = lambda: block(solve(*args))
    _check(variant, fn(), host)
    return fn
