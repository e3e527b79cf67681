"""Isoneutral mixing tensor: slopes of neutral surfaces on a staggered grid, by triads.

Isoneutral (Redi) diffusion mixes tracers along surfaces of constant locally referenced density.
Its tensor needs the slopes ``s_x = -(drho/dx) / (drho/dz)`` (and ``s_y``) of those surfaces.
On a C-grid the horizontal density gradient lives on the cell faces and the vertical one on the
cell tops, so each slope is formed by "triads" (Griffies et al. 1998): one horizontal and one
vertical gradient that share a corner, with the density derivatives ``drho/dT``, ``drho/dS``
taken in the cell the triad belongs to. Every face has four triads (two neighbouring cells x two
vertical interfaces), kept separately in the 5-D outputs ``Ai_* [x, y, z, 2, 2]``, and the
diffusivities on each face sum them up. Steep slopes are tapered smoothly
(``0.5 * (1 + tanh((slopec - |s|) / dslope))``), and a minimum "steep" diffusivity keeps
the horizontal mixing alive where the taper switches the isoneutral part off.

Density derivatives come from the simplified nonlinear equation of state of Roquet et al.
(2015): ``rho = rho0 - a0 (1 + lambda1 Ta / 2 + mu1 z) Ta + b0 (1 - lambda2 Sa / 2 - mu2 z) Sa
- nu Ta Sa`` with ``Ta = T - 10 degC``, ``Sa = S - 35 g/kg`` and ``z`` the depth (m).

This is the computation of pyhpc-benchmarks' ``isoneutral_mixing`` (Veros'
``isoneutral_diffusion_pre``), written here from the description above: float64, 3-D fields,
stencils of +-1 cell in all three directions and 2x2 triads per face.

Example:
    >>> import numpy as np
    >>> args = make_inputs(512)
    >>> [o.shape for o in kernel(np, *args)][:4]
    [(16, 16, 2), (16, 16, 2), (16, 16, 2), (16, 16, 2, 2, 2)]
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from benchmarks.kernels._grid import diff_forward, grid_shape, make_grid, shift

__all__ = ["make_inputs", "kernel", "numba_kernel", "drho_dT", "drho_dS", "OUTPUTS"]

#: Names of the kernel's outputs, in order.
OUTPUTS = ("K_11", "K_22", "K_33", "Ai_ez", "Ai_nz", "Ai_bx", "Ai_by")

# Roquet et al. (2015), simplified equation of state (their "S-EOS" coefficients).
_A0, _B0 = 1.6550e-1, 7.6554e-1
_LAMBDA1, _LAMBDA2 = 5.9520e-2, 5.4914e-4
_MU1, _MU2 = 1.4970e-4, 1.1090e-5
_NU = 2.4341e-3

ISO_SLOPEC = 1e-3     # slope at which the taper is one half
ISO_DSLOPE = 1e-3     # width of the taper
K_ISO_STEEP = 50.0    # m^2/s, the floor of the horizontal diffusivity where slopes are steep
EPSLN = 1e-20


def drho_dT(xnp: Any, T: Any, S: Any, z: Any) -> Any:
    """``d rho / d T`` (kg m^-3 K^-1) of the simplified equation of state."""
    return -_A0 * (1.0 + _LAMBDA1 * (T - 10.0) + _MU1 * z) - _NU * (S - 35.0)


def drho_dS(xnp: Any, T: Any, S: Any, z: Any) -> Any:
    """``d rho / d S`` (kg m^-3 (g/kg)^-1) of the simplified equation of state."""
    return _B0 * (1.0 - _LAMBDA2 * (S - 35.0) - _MU2 * z) - _NU * (T - 10.0)


def make_inputs(size: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """The kernel's arguments for a grid of about ``size`` cells (float64), in the order of
    :func:`kernel`'s signature after ``xnp``."""
    shape = grid_shape(size)
    g = make_grid(shape, seed)
    rng = np.random.default_rng(seed + 1)
    nz = shape[2]
    # stably stratified: warm and light at the surface (k = nz - 1), plus noise
    T = (2.0 + 18.0 * (np.arange(nz) / max(1, nz - 1)))[None, None, :] + rng.normal(0, 0.5, shape)
    S = 34.5 + 0.5 * rng.random(shape)
    K_iso = 1000.0 + 500.0 * rng.random(shape)
    return (g["maskT"], g["maskU"], g["maskV"], g["maskW"], g["dxt"], g["dxu"], g["dyt"],
            g["dyu"], g["dzt"], g["dzw"], g["cost"], g["cosu"], g["zt"], T * g["maskT"],
            S * g["maskT"], K_iso)


def _taper(xnp: Any, s: Any) -> Any:
    return 0.5 * (1.0 + xnp.tanh((ISO_SLOPEC - xnp.abs(s)) / ISO_DSLOPE))


def kernel(xnp: Any, maskT: Any, maskU: Any, maskV: Any, maskW: Any, dxt: Any, dxu: Any,
           dyt: Any, dyu: Any, dzt: Any, dzw: Any, cost: Any, cosu: Any, zt: Any, T: Any,
           S: Any, K_iso: Any) -> tuple[Any, ...]:
    """The isoneutral diffusivities ``K_11 K_22 K_33`` (x, y, z) and the triad slopes
    ``Ai_ez Ai_nz Ai_bx Ai_by`` (x, y, z, 2, 2) of the fields ``T``, ``S`` on the grid."""
    X, Y, Z = 0, 1, 2
    dxt3, dxu3 = dxt[:, None, None], dxu[:, None, None]
    dyt3, dyu3 = dyt[None, :, None], dyu[None, :, None]
    dzt3, dzw3 = dzt[None, None, :], dzw[None, None, :]
    cost3, cosu3 = cost[None, :, None], cosu[None, :, None]

    drdT = maskT * drho_dT(xnp, T, S, zt[None, None, :])
    drdS = maskT * drho_dS(xnp, T, S, zt[None, None, :])
    dTdx = maskU * diff_forward(xnp, T, X) / (dxu3 * cost3)
    dSdx = maskU * diff_forward(xnp, S, X) / (dxu3 * cost3)
    dTdy = maskV * diff_forward(xnp, T, Y) / dyu3
    dSdy = maskV * diff_forward(xnp, S, Y) / dyu3
    dTdz = maskW * diff_forward(xnp, T, Z) / dzw3
    dSdz = maskW * diff_forward(xnp, S, Z) / dzw3

    def nb(a: Any, axis: int, off: int) -> Any:   # a[i + off] along axis, off in {-1, 0, 1}
        return a if off == 0 else shift(xnp, a, off, axis)

    def slope(num: Any, den: Any) -> Any:
        return -num / (xnp.minimum(den, 0.0) - EPSLN)

    # --- east faces (between cells i and i + 1): triads (ip, kr) --------------------------
    K_face_x = 0.5 * (K_iso + nb(K_iso, X, 1))
    sum_x, ai_ez = 0.0, []
    for ip in (0, 1):
        rT, rS = nb(drdT, X, ip), nb(drdS, X, ip)
        row = []
        for kr in (0, 1):
            drodx = rT * dTdx + rS * dSdx
            drodz = rT * nb(nb(dTdz, X, ip), Z, kr - 1) + rS * nb(nb(dSdz, X, ip), Z, kr - 1)
            sx = slope(drodx, drodz)
            taper = _taper(xnp, sx)
            sum_x = sum_x + nb(dzw3 * 1.0, Z, kr - 1) * maskU * xnp.maximum(
                K_ISO_STEEP, K_face_x * taper)
            row.append(taper * sx * maskU)
        ai_ez.append(xnp.stack(row, axis=-1))
    K_11 = sum_x / (4.0 * dzt3)
    Ai_ez = xnp.stack(ai_ez, axis=-2)

    # --- north faces (between cells j and j + 1): triads (jp, kr) -------------------------
    K_face_y = 0.5 * (K_iso + nb(K_iso, Y, 1))
    sum_y, ai_nz = 0.0, []
    for jp in (0, 1):
        rT, rS = nb(drdT, Y, jp), nb(drdS, Y, jp)
        row = []
        for kr in (0, 1):
            drody = rT * dTdy + rS * dSdy
            drodz = rT * nb(nb(dTdz, Y, jp), Z, kr - 1) + rS * nb(nb(dSdz, Y, jp), Z, kr - 1)
            sy = slope(drody, drodz)
            taper = _taper(xnp, sy)
            sum_y = sum_y + nb(dzw3 * 1.0, Z, kr - 1) * maskV * xnp.maximum(
                K_ISO_STEEP, K_face_y * taper)
            row.append(taper * sy * maskV)
        ai_nz.append(xnp.stack(row, axis=-1))
    K_22 = sum_y / (4.0 * dzt3)
    Ai_nz = xnp.stack(ai_nz, axis=-2)

    # --- top faces (between levels k and k + 1): triads (ip or jp, kr) --------------------
    sum_bx, sum_by, ai_bx, ai_by = 0.0, 0.0, [], []
    for p in (0, 1):
        row_x, row_y = [], []
        for kr in (0, 1):
            rT, rS = nb(drdT, Z, kr), nb(drdS, Z, kr)
            drodz = rT * dTdz + rS * dSdz
            drodx = rT * nb(nb(dTdx, X, p - 1), Z, kr) + rS * nb(nb(dSdx, X, p - 1), Z, kr)
            drody = rT * nb(nb(dTdy, Y, p - 1), Z, kr) + rS * nb(nb(dSdy, Y, p - 1), Z, kr)
            sxb, syb = slope(drodx, drodz), slope(drody, drodz)
            tx, ty = _taper(xnp, sxb), _taper(xnp, syb)
            sum_bx = sum_bx + nb(dxu3 * 1.0, X, p - 1) * K_iso * tx * sxb * sxb * maskW
            sum_by = sum_by + nb(dyu3 * cosu3, Y, p - 1) * K_iso * ty * syb * syb * maskW
            row_x.append(tx * sxb * maskW)
            row_y.append(ty * syb * maskW)
        ai_bx.append(xnp.stack(row_x, axis=-1))
        ai_by.append(xnp.stack(row_y, axis=-1))
    K_33 = sum_bx / (4.0 * dxt3) + sum_by / (4.0 * dyt3 * cost3)
    Ai_bx = xnp.stack(ai_bx, axis=-2)
    Ai_by = xnp.stack(ai_by, axis=-2)
    return K_11, K_22, K_33, Ai_ez, Ai_nz, Ai_bx, Ai_by


def numba_kernel(numba: Any) -> Callable[..., tuple[np.ndarray, ...]]:
    """The kernel as explicit loops under numba ``@njit`` (serial, fastmath off, float64), as
    pyhpc-benchmarks' numba versions are written: the density derivatives and face gradients
    in one pass, then one pass over the cells computing the 2x2 triads of their east, north
    and top faces. The intermediate fields carry a one-cell halo of zeros, so a neighbour
    outside the grid reads as zero exactly like :func:`benchmarks.kernels._grid.shift` (and
    the inner loop has no bounds tests); the result equals :func:`kernel`'s to rounding."""
    a0, b0, lam1, lam2, mu1, mu2, nu = _A0, _B0, _LAMBDA1, _LAMBDA2, _MU1, _MU2, _NU
    slopec, dslope, k_steep, epsln = ISO_SLOPEC, ISO_DSLOPE, K_ISO_STEEP, EPSLN

    @numba.njit(inline="always")
    def slope(num: float, den: float) -> float:
        return -num / (min(den, 0.0) - epsln)

    @numba.njit(inline="always")
    def taper(s: float) -> float:
        return 0.5 * (1.0 + math.tanh((slopec - abs(s)) / dslope))

    @numba.njit(fastmath=False)
    def run(maskT: np.ndarray, maskU: np.ndarray, maskV: np.ndarray, maskW: np.ndarray,
            dxt: np.ndarray, dxu: np.ndarray, dyt: np.ndarray, dyu: np.ndarray,
            dzt: np.ndarray, dzw: np.ndarray, cost: np.ndarray, cosu: np.ndarray,
            zt: np.ndarray, T: np.ndarray, S: np.ndarray, K_iso: np.ndarray
            ) -> tuple[np.ndarray, ...]:
        nx, ny, nz = T.shape
        halo = (nx + 2, ny + 2, nz + 2)          # field[i + 1, j + 1, k + 1] is cell (i, j, k)
        drdT = np.zeros(halo)
        drdS = np.zeros(halo)
        dTdx = np.zeros(halo)
        dSdx = np.zeros(halo)
        dTdy = np.zeros(halo)
        dSdy = np.zeros(halo)
        dTdz = np.zeros(halo)
        dSdz = np.zeros(halo)
        Kh = np.zeros(halo)
        dzw_h = np.zeros(nz + 2)
        dxu_h = np.zeros(nx + 2)
        dyc_h = np.zeros(ny + 2)                 # dyu * cosu
        dzw_h[1:nz + 1] = dzw
        dxu_h[1:nx + 1] = dxu
        for j in range(ny):
            dyc_h[j + 1] = dyu[j] * cosu[j]
        for i in range(nx):
            for j in range(ny):
                for k in range(nz):
                    t, s = T[i, j, k], S[i, j, k]
                    I, J, K = i + 1, j + 1, k + 1
                    Kh[I, J, K] = K_iso[i, j, k]
                    drdT[I, J, K] = maskT[i, j, k] * (
                        -a0 * (1.0 + lam1 * (t - 10.0) + mu1 * zt[k]) - nu * (s - 35.0))
                    drdS[I, J, K] = maskT[i, j, k] * (
                        b0 * (1.0 - lam2 * (s - 35.0) - mu2 * zt[k]) - nu * (t - 10.0))
                    if i < nx - 1:
                        dx = dxu[i] * cost[j]
                        dTdx[I, J, K] = maskU[i, j, k] * (T[i + 1, j, k] - t) / dx
                        dSdx[I, J, K] = maskU[i, j, k] * (S[i + 1, j, k] - s) / dx
                    if j < ny - 1:
                        dTdy[I, J, K] = maskV[i, j, k] * (T[i, j + 1, k] - t) / dyu[j]
                        dSdy[I, J, K] = maskV[i, j, k] * (S[i, j + 1, k] - s) / dyu[j]
                    if k < nz - 1:
                        dTdz[I, J, K] = maskW[i, j, k] * (T[i, j, k + 1] - t) / dzw[k]
                        dSdz[I, J, K] = maskW[i, j, k] * (S[i, j, k + 1] - s) / dzw[k]

        K_11 = np.empty_like(T)
        K_22 = np.empty_like(T)
        K_33 = np.empty_like(T)
        Ai_ez = np.empty((nx, ny, nz, 2, 2))
        Ai_nz = np.empty((nx, ny, nz, 2, 2))
        Ai_bx = np.empty((nx, ny, nz, 2, 2))
        Ai_by = np.empty((nx, ny, nz, 2, 2))
        for i in range(nx):
            for j in range(ny):
                for k in range(nz):
                    I, J, K = i + 1, j + 1, k + 1
                    # east face (i + 1/2): triads of cells i, i + 1 and interfaces k - 1, k
                    mu = maskU[i, j, k]
                    k_face = 0.5 * (Kh[I, J, K] + Kh[I + 1, J, K])
                    acc = 0.0
                    for ip in range(2):
                        rT, rS = drdT[I + ip, J, K], drdS[I + ip, J, K]
                        for kr in range(2):
                            drodx = rT * dTdx[I, J, K] + rS * dSdx[I, J, K]
                            drodz = (rT * dTdz[I + ip, J, K + kr - 1]
                                     + rS * dSdz[I + ip, J, K + kr - 1])
                            sx = slope(drodx, drodz)
                            tp = taper(sx)
                            acc += dzw_h[K + kr - 1] * mu * max(k_steep, k_face * tp)
                            Ai_ez[i, j, k, ip, kr] = tp * sx * mu
                    K_11[i, j, k] = acc / (4.0 * dzt[k])

                    # north face (j + 1/2)
                    mv = maskV[i, j, k]
                    k_face = 0.5 * (Kh[I, J, K] + Kh[I, J + 1, K])
                    acc = 0.0
                    for jp in range(2):
                        rT, rS = drdT[I, J + jp, K], drdS[I, J + jp, K]
                        for kr in range(2):
                            drody = rT * dTdy[I, J, K] + rS * dSdy[I, J, K]
                            drodz = (rT * dTdz[I, J + jp, K + kr - 1]
                                     + rS * dSdz[I, J + jp, K + kr - 1])
                            sy = slope(drody, drodz)
                            tp = taper(sy)
                            acc += dzw_h[K + kr - 1] * mv * max(k_steep, k_face * tp)
                            Ai_nz[i, j, k, jp, kr] = tp * sy * mv
                    K_22[i, j, k] = acc / (4.0 * dzt[k])

                    # top face (k + 1/2): triads of levels k, k + 1 and faces i - 1, i (j - 1, j)
                    mw = maskW[i, j, k]
                    acc_x = 0.0
                    acc_y = 0.0
                    for p in range(2):
                        for kr in range(2):
                            rT, rS = drdT[I, J, K + kr], drdS[I, J, K + kr]
                            drodz = rT * dTdz[I, J, K] + rS * dSdz[I, J, K]
                            drodx = (rT * dTdx[I + p - 1, J, K + kr]
                                     + rS * dSdx[I + p - 1, J, K + kr])
                            drody = (rT * dTdy[I, J + p - 1, K + kr]
                                     + rS * dSdy[I, J + p - 1, K + kr])
                            sxb, syb = slope(drodx, drodz), slope(drody, drodz)
                            tx, ty = taper(sxb), taper(syb)
                            acc_x += dxu_h[I + p - 1] * Kh[I, J, K] * tx * sxb * sxb * mw
                            acc_y += dyc_h[J + p - 1] * Kh[I, J, K] * ty * syb * syb * mw
                            Ai_bx[i, j, k, p, kr] = tx * sxb * mw
                            Ai_by[i, j, k, p, kr] = ty * syb * mw
                    K_33[i, j, k] = acc_x / (4.0 * dxt[i]) + acc_y / (4.0 * dyt[j] * cost[j])
        return K_11, K_22, K_33, Ai_ez, Ai_nz, Ai_bx, Ai_by

    return run
