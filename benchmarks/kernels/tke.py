"""One time step of a turbulent kinetic energy (TKE) closure: an implicit vertical solve per
column, then horizontal diffusion and flux-limited advection.

The prognostic TKE equation of ocean models (Gaspar et al. 1990, as in Veros / pyhpc-benchmarks'
``turbulent_kinetic_energy``) is, for ``e`` on the cell tops (W points)::

    de/dt = d/dz (alpha_tke K_m de/dz) + P - c_eps e^(3/2) / L + div_h(K_h grad e) - div(u e)

with ``P`` the shear production minus buoyancy flux (an input here) and ``L`` the mixing length.
One step does:

1. vertical diffusion and dissipation implicitly (dissipation linearised as
   ``c_eps sqrt(e_old) / L * e_new``): a tridiagonal system per water column, the surface wind
   input as a flux into the top cell, the bottom at each column's deepest wet level (rows below
   it, and land, are identity rows). ``solve(a, b, c, d)`` solves it along the last axis; its
   implementation is backend-specific (two ``lax.scan`` for jax/fluxion, a loop over levels for
   NumPy);
2. negative surface values are clipped to zero and the missing energy reported as a surface flux
   correction;
3. horizontal diffusion, explicit;
4. advection by ``(u, v, w)`` with the superbee flux limiter (Roe 1985) in all three directions.

Example:
    >>> import numpy as np
    >>> args = make_inputs(512)
    >>> e, corr = kernel(np, solve_numpy, *args)
    >>> e.shape, corr.shape
    ((16, 16, 2), (16, 16))
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from benchmarks.kernels._grid import diff_forward, grid_shape, make_grid, shift

__all__ = ["make_inputs", "kernel", "solve_numpy", "make_solve_scan", "make_solve_unrolled",
           "numba_kernel", "OUTPUTS"]

OUTPUTS = ("tke", "tke_surf_corr")

DT = 3600.0          # s
C_EPS = 0.7          # dissipation constant
ALPHA_TKE = 30.0     # TKE diffusivity / viscosity
K_H_TKE = 2000.0     # m^2/s, horizontal TKE diffusivity
EPS = 1e-20


def make_inputs(size: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """The kernel's arguments (float64) for a grid of about ``size`` cells, in the order of
    :func:`kernel`'s signature after ``xnp`` and ``solve``."""
    shape = grid_shape(size)
    g = make_grid(shape, seed)
    rng = np.random.default_rng(seed + 2)
    mW = g["maskW"]
    tke = (1e-4 + 1e-3 * rng.random(shape)) * mW
    kappaM = (1e-4 + 1e-2 * rng.random(shape)) * mW
    mxl = 1.0 + 20.0 * rng.random(shape)
    forc = 1e-8 * rng.normal(0.0, 1.0, shape) * mW
    forc_surface = 5e-5 * rng.random(shape[:2])
    u = 0.2 * rng.normal(0.0, 1.0, shape) * g["maskU"]
    v = 0.2 * rng.normal(0.0, 1.0, shape) * g["maskV"]
    w = 1e-4 * rng.normal(0.0, 1.0, shape) * mW
    return (tke, kappaM, mxl, forc, forc_surface, u, v, w, g["maskU"], g["maskV"], mW,
            g["dxt"], g["dxu"], g["dyt"], g["dyu"], g["dzt"], g["dzw"], g["cost"], g["cosu"])


def solve_numpy(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Thomas algorithm along the last axis, vectorised over the others (``a[..., 0]`` and
    ``c[..., -1]`` are ignored)."""
    n = a.shape[-1]
    cp = np.empty_like(a)
    dp = np.empty_like(a)
    cp[..., 0] = c[..., 0] / b[..., 0]
    dp[..., 0] = d[..., 0] / b[..., 0]
    for k in range(1, n):
        den = b[..., k] - a[..., k] * cp[..., k - 1]
        cp[..., k] = c[..., k] / den
        dp[..., k] = (d[..., k] - a[..., k] * dp[..., k - 1]) / den
    x = np.empty_like(a)
    x[..., -1] = dp[..., -1]
    for k in range(n - 2, -1, -1):
        x[..., k] = dp[..., k] - cp[..., k] * x[..., k + 1]
    return x


def make_solve_scan(xnp: Any, lax: Any) -> Callable[..., Any]:
    """The Thomas algorithm as two ``lax.scan`` over the last axis (jax or fluxion)."""
    def solve(a: Any, b: Any, c: Any, d: Any) -> Any:
        rows = tuple(xnp.moveaxis(v, -1, 0) for v in (a, b, c, d))

        def forward(carry: Any, row: Any) -> Any:
            cp, dp = carry
            ak, bk, ck, dk = row
            den = bk - ak * cp
            new = (ck / den, (dk - ak * dp) / den)
            return new, new

        def backward(x_next: Any, row: Any) -> Any:
            cp, dp = row
            x = dp - cp * x_next
            return x, x

        zero = xnp.zeros(rows[0].shape[1:], rows[0].dtype)
        _, (cps, dps) = lax.scan(forward, (zero, zero), rows)
        _, xs = lax.scan(backward, zero, (cps, dps), reverse=True)
        return xnp.moveaxis(xs, 0, -1)

    return solve


def make_solve_unrolled(xnp: Any) -> Callable[..., Any]:
    """The Thomas algorithm with the loop over levels unrolled in Python and no in-place
    updates (levels kept in lists, stacked at the end): for torch, eager and under
    ``torch.compile``. Same arithmetic as :func:`solve_numpy`."""
    def solve(a: Any, b: Any, c: Any, d: Any) -> Any:
        n = a.shape[-1]
        cp = [c[..., 0] / b[..., 0]]
        dp = [d[..., 0] / b[..., 0]]
        for k in range(1, n):
            den = b[..., k] - a[..., k] * cp[-1]
            cp.append(c[..., k] / den)
            dp.append((d[..., k] - a[..., k] * dp[-1]) / den)
        xs = [dp[-1]]
        for k in range(n - 2, -1, -1):
            xs.append(dp[k] - cp[k] * xs[-1])
        return xnp.stack(xs[::-1], axis=-1)

    return solve


def _superbee_flux(xnp: Any, q: Any, vel: Any, mask: Any, dx_face: Any, axis: int) -> Any:
    """Flux through the face between cells ``i`` and ``i + 1`` along ``axis`` (zero at the
    last face), second order with the superbee limiter."""
    dq = diff_forward(xnp, q, axis) * mask                 # q[i+1] - q[i] across open faces
    dq_up = shift(xnp, dq, -1, axis)                       # across the face upstream for vel > 0
    dq_down = shift(xnp, dq, 1, axis)                      # ... for vel < 0
    den = xnp.where(xnp.abs(dq) < EPS, EPS, dq)
    r = xnp.where(vel > 0.0, dq_up, dq_down) / den
    limiter = xnp.maximum(0.0, xnp.maximum(xnp.minimum(1.0, 2.0 * r), xnp.minimum(2.0, r)))
    cfl = xnp.abs(vel) * DT / dx_face
    q_mid = 0.5 * (q + shift(xnp, q, 1, axis))
    flux = vel * q_mid - 0.5 * xnp.abs(vel) * ((1.0 - limiter) + cfl * limiter) * dq
    return flux * mask


def kernel(xnp: Any, solve: Callable[..., Any], tke: Any, kappaM: Any, mxl: Any, forc: Any,
           forc_surface: Any, u: Any, v: Any, w: Any, maskU: Any, maskV: Any, maskW: Any,
           dxt: Any, dxu: Any, dyt: Any, dyu: Any, dzt: Any, dzw: Any, cost: Any,
           cosu: Any) -> tuple[Any, Any]:
    """One TKE step: returns the new ``tke`` (x, y, z) and the surface correction flux (x, y).
    ``solve(a, b, c, d)`` is the batched tridiagonal solver along the last axis."""
    X, Y, Z = 0, 1, 2
    dxt3, dxu3 = dxt[:, None, None], dxu[:, None, None]
    dyt3, dyu3 = dyt[None, :, None], dyu[None, :, None]
    dzw3 = dzw[None, None, :]
    cost3, cosu3 = cost[None, :, None], cosu[None, :, None]
    nz = tke.shape[2]
    top = np.zeros((1, 1, nz))
    top[..., -1] = 1.0
    top = xnp.asarray(top)

    # 1. implicit vertical diffusion + dissipation, one tridiagonal system per column
    sqrt_e = xnp.sqrt(xnp.maximum(0.0, tke))
    dzt_up = shift(xnp, dzt[None, None, :] * 1.0, 1, Z)
    delta = xnp.where(dzt_up > 0.0, DT / xnp.where(dzt_up > 0.0, dzt_up, 1.0), 0.0) \
        * ALPHA_TKE * 0.5 * (kappaM + shift(xnp, kappaM, 1, Z)) * maskW * shift(xnp, maskW, 1, Z)
    delta_below = shift(xnp, delta, -1, Z)
    a = -delta_below / dzw3
    c = -delta / dzw3
    b = 1.0 + (delta + delta_below) / dzw3 + DT * C_EPS * sqrt_e / mxl
    d = tke + DT * forc + top * (DT * forc_surface[:, :, None] / (0.5 * dzw3))
    wet = maskW > 0.0
    a = xnp.where(wet, a, 0.0)
    c = xnp.where(wet, c, 0.0)
    b = xnp.where(wet, b, 1.0)
    d = xnp.where(wet, d, tke)
    e = xnp.where(wet, solve(a, b, c, d), tke)

    # 2. no negative TKE at the surface: clip, and report the energy added as a flux
    e_top = e[:, :, -1]
    corr = xnp.where(e_top < 0.0, -e_top * 0.5 * dzw[-1] / DT, 0.0)
    e = xnp.maximum(e, 0.0) * top + e * (1.0 - top)

    # 3. horizontal diffusion (explicit)
    mask_x = maskW * shift(xnp, maskW, 1, X)
    mask_y = maskW * shift(xnp, maskW, 1, Y)
    flux_e = K_H_TKE * diff_forward(xnp, e, X) / (cost3 * dxu3) * mask_x
    flux_n = K_H_TKE * diff_forward(xnp, e, Y) / dyu3 * cosu3 * mask_y
    e = e + DT * maskW * ((flux_e - shift(xnp, flux_e, -1, X)) / (cost3 * dxt3)
                          + (flux_n - shift(xnp, flux_n, -1, Y)) / (cost3 * dyt3))

    # 4. advection with the superbee limiter
    fx = _superbee_flux(xnp, e, u, mask_x, cost3 * dxu3, X)
    fy = _superbee_flux(xnp, e, v * cosu3, mask_y, dyu3, Y)
    mask_z = maskW * shift(xnp, maskW, 1, Z)
    dz_face = shift(xnp, dzw3 * 1.0, 1, Z) + (1.0 - shift(xnp, xnp.ones_like(dzw3), 1, Z))
    fz = _superbee_flux(xnp, e, w, mask_z, dz_face, Z)
    e = e - DT * maskW * ((fx - shift(xnp, fx, -1, X)) / (cost3 * dxt3)
                          + (fy - shift(xnp, fy, -1, Y)) / (cost3 * dyt3)
                          + (fz - shift(xnp, fz, -1, Z)) / dzw3)
    return e, corr


def numba_kernel(numba: Any) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """The step as explicit loops under numba ``@njit`` (serial, fastmath off, float64), as
    pyhpc-benchmarks' numba versions are written: per column the tridiagonal system is built
    and solved by the Thomas algorithm in place, then the horizontal diffusion fluxes, then the
    superbee fluxes of the three directions, each a pass over the grid. Neighbours outside the
    grid read as zero, as in :func:`kernel`, so the result equals it to rounding."""
    dt, c_eps, alpha, k_h, eps = DT, C_EPS, ALPHA_TKE, K_H_TKE, EPS

    @numba.njit(inline="always")
    def limiter(r: float) -> float:
        return max(0.0, max(min(1.0, 2.0 * r), min(2.0, r)))

    @numba.njit(inline="always")
    def superbee(q_here: float, q_next: float, dq: float, dq_up: float, dq_down: float,
                 vel: float, mask: float, dx_face: float) -> float:
        den = eps if abs(dq) < eps else dq
        r = (dq_up if vel > 0.0 else dq_down) / den
        lim = limiter(r)
        cfl = abs(vel) * dt / dx_face
        q_mid = 0.5 * (q_here + q_next)
        return (vel * q_mid - 0.5 * abs(vel) * ((1.0 - lim) + cfl * lim) * dq) * mask

    @numba.njit(fastmath=False)
    def run(tke: np.ndarray, kappaM: np.ndarray, mxl: np.ndarray, forc: np.ndarray,
            forc_surface: np.ndarray, u: np.ndarray, v: np.ndarray, w: np.ndarray,
            maskU: np.ndarray, maskV: np.ndarray, maskW: np.ndarray, dxt: np.ndarray,
            dxu: np.ndarray, dyt: np.ndarray, dyu: np.ndarray, dzt: np.ndarray,
            dzw: np.ndarray, cost: np.ndarray, cosu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        nx, ny, nz = tke.shape
        e = np.empty_like(tke)
        corr = np.empty((nx, ny))
        delta = np.empty(nz)
        a = np.empty(nz)
        b = np.empty(nz)
        c = np.empty(nz)
        d = np.empty(nz)
        cp = np.empty(nz)
        dp = np.empty(nz)
        # 1. implicit vertical diffusion + dissipation: one tridiagonal system per column
        for i in range(nx):
            for j in range(ny):
                for k in range(nz):
                    if k < nz - 1:
                        inv = dt / dzt[k + 1] if dzt[k + 1] > 0.0 else 0.0
                        delta[k] = (inv * alpha * 0.5 * (kappaM[i, j, k] + kappaM[i, j, k + 1])
                                    * maskW[i, j, k] * maskW[i, j, k + 1])
                    else:
                        delta[k] = 0.0
                for k in range(nz):
                    below = delta[k - 1] if k > 0 else 0.0
                    if maskW[i, j, k] > 0.0:
                        a[k] = -below / dzw[k]
                        c[k] = -delta[k] / dzw[k]
                        b[k] = (1.0 + (delta[k] + below) / dzw[k]
                                + dt * c_eps * math.sqrt(max(0.0, tke[i, j, k])) / mxl[i, j, k])
                        d[k] = tke[i, j, k] + dt * forc[i, j, k]
                        if k == nz - 1:
                            d[k] += dt * forc_surface[i, j] / (0.5 * dzw[k])
                    else:
                        a[k] = 0.0
                        c[k] = 0.0
                        b[k] = 1.0
                        d[k] = tke[i, j, k]
                cp[0] = c[0] / b[0]
                dp[0] = d[0] / b[0]
                for k in range(1, nz):
                    den = b[k] - a[k] * cp[k - 1]
                    cp[k] = c[k] / den
                    dp[k] = (d[k] - a[k] * dp[k - 1]) / den
                x = dp[nz - 1]
                for k in range(nz - 1, -1, -1):
                    if k < nz - 1:
                        x = dp[k] - cp[k] * x
                    e[i, j, k] = x if maskW[i, j, k] > 0.0 else tke[i, j, k]
                # 2. no negative TKE at the surface: clip, and report the energy added
                top = e[i, j, nz - 1]
                corr[i, j] = -top * 0.5 * dzw[nz - 1] / dt if top < 0.0 else 0.0
                e[i, j, nz - 1] = max(top, 0.0)

        # 3. horizontal diffusion (explicit): fluxes through east and north faces
        flux_e = np.empty_like(tke)
        flux_n = np.empty_like(tke)
        for i in range(nx):
            for j in range(ny):
                for k in range(nz):
                    if i < nx - 1:
                        flux_e[i, j, k] = (k_h * (e[i + 1, j, k] - e[i, j, k]) / (cost[j] * dxu[i])
                                           * (maskW[i, j, k] * maskW[i + 1, j, k]))
                    else:
                        flux_e[i, j, k] = 0.0
                    if j < ny - 1:
                        flux_n[i, j, k] = (k_h * (e[i, j + 1, k] - e[i, j, k]) / dyu[j] * cosu[j]
                                           * (maskW[i, j, k] * maskW[i, j + 1, k]))
                    else:
                        flux_n[i, j, k] = 0.0
        e2 = np.empty_like(tke)
        for i in range(nx):
            for j in range(ny):
                for k in range(nz):
                    west = flux_e[i - 1, j, k] if i > 0 else 0.0
                    south = flux_n[i, j - 1, k] if j > 0 else 0.0
                    e2[i, j, k] = e[i, j, k] + dt * maskW[i, j, k] * (
                        (flux_e[i, j, k] - west) / (cost[j] * dxt[i])
                        + (flux_n[i, j, k] - south) / (cost[j] * dyt[j]))

        # 4. advection with the superbee limiter: masked jumps across faces, then fluxes
        dqx = np.zeros_like(tke)
        dqy = np.zeros_like(tke)
        dqz = np.zeros_like(tke)
        for i in range(nx):
            for j in range(ny):
                for k in range(nz):
                    if i < nx - 1:
                        dqx[i, j, k] = ((e2[i + 1, j, k] - e2[i, j, k])
                                        * (maskW[i, j, k] * maskW[i + 1, j, k]))
                    if j < ny - 1:
                        dqy[i, j, k] = ((e2[i, j + 1, k] - e2[i, j, k])
                                        * (maskW[i, j, k] * maskW[i, j + 1, k]))
                    if k < nz - 1:
                        dqz[i, j, k] = ((e2[i, j, k + 1] - e2[i, j, k])
                                        * (maskW[i, j, k] * maskW[i, j, k + 1]))
        fx = np.empty_like(tke)
        fy = np.empty_like(tke)
        fz = np.empty_like(tke)
        for i in range(nx):
            for j in range(ny):
                for k in range(nz):
                    q = e2[i, j, k]
                    fx[i, j, k] = superbee(
                        q, e2[i + 1, j, k] if i < nx - 1 else 0.0, dqx[i, j, k],
                        dqx[i - 1, j, k] if i > 0 else 0.0,
                        dqx[i + 1, j, k] if i < nx - 1 else 0.0, u[i, j, k],
                        maskW[i, j, k] * maskW[i + 1, j, k] if i < nx - 1 else 0.0,
                        cost[j] * dxu[i])
                    fy[i, j, k] = superbee(
                        q, e2[i, j + 1, k] if j < ny - 1 else 0.0, dqy[i, j, k],
                        dqy[i, j - 1, k] if j > 0 else 0.0,
                        dqy[i, j + 1, k] if j < ny - 1 else 0.0, v[i, j, k] * cosu[j],
                        maskW[i, j, k] * maskW[i, j + 1, k] if j < ny - 1 else 0.0, dyu[j])
                    fz[i, j, k] = superbee(
                        q, e2[i, j, k + 1] if k < nz - 1 else 0.0, dqz[i, j, k],
                        dqz[i, j, k - 1] if k > 0 else 0.0,
                        dqz[i, j, k + 1] if k < nz - 1 else 0.0, w[i, j, k],
                        maskW[i, j, k] * maskW[i, j, k + 1] if k < nz - 1 else 0.0,
                        dzw[k + 1] if k < nz - 1 else 1.0)
        out = np.empty_like(tke)
        for i in range(nx):
            for j in range(ny):
                for k in range(nz):
                    west = fx[i - 1, j, k] if i > 0 else 0.0
                    south = fy[i, j - 1, k] if j > 0 else 0.0
                    below = fz[i, j, k - 1] if k > 0 else 0.0
                    out[i, j, k] = e2[i, j, k] - dt * maskW[i, j, k] * (
                        (fx[i, j, k] - west) / (cost[j] * dxt[i])
                        + (fy[i, j, k] - south) / (cost[j] * dyt[j])
                        + (fz[i, j, k] - below) / dzw[k])
        return out, corr

    return run
