"""Shared pieces of the ocean-grid kernels: grid shapes, synthetic grids, functional shifts.

The kernels are written without in-place updates (jax and fluxion arrays are immutable), so a
neighbour ``a[i + 1]`` is a shifted copy of ``a`` padded with zeros (:func:`shift`), and a forward
difference is :func:`diff_forward`.

Example:
    >>> import numpy as np
    >>> shift(np, np.array([1.0, 2.0, 3.0]), 1, 0).tolist()
    [2.0, 3.0, 0.0]
    >>> shift(np, np.array([1.0, 2.0, 3.0]), -1, 0).tolist()
    [0.0, 1.0, 2.0]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["grid_shape", "shift", "diff_forward", "make_grid"]


def grid_shape(size: int) -> tuple[int, int, int]:
    """``(nx, ny, nz)`` with ``nx = ny = ceil(2 size^(1/3))`` and ``nz = ceil(size^(1/3) / 4)``
    (about ``size`` cells, the aspect ratio pyhpc-benchmarks uses).

    Example:
        >>> grid_shape(4096)
        (32, 32, 4)
    """
    c = round(size ** (1.0 / 3.0), 9)
    return math.ceil(2 * c), math.ceil(2 * c), max(2, math.ceil(c / 4))


def shift(xnp: Any, a: Any, offset: int, axis: int) -> Any:
    """``b[i] = a[i + offset]`` along ``axis`` (``offset`` is +1 or -1), zero outside."""
    n = a.shape[axis]
    index = [slice(None)] * a.ndim
    pad_shape = list(a.shape)
    pad_shape[axis] = 1
    pad = xnp.zeros(tuple(pad_shape), a.dtype)
    if offset == 1:
        index[axis] = slice(1, n)
        return xnp.concatenate([a[tuple(index)], pad], axis=axis)
    if offset == -1:
        index[axis] = slice(0, n - 1)
        return xnp.concatenate([pad, a[tuple(index)]], axis=axis)
    raise ValueError(f"shift: offset must be 1 or -1, got {offset}")


def diff_forward(xnp: Any, a: Any, axis: int) -> Any:
    """``a[i + 1] - a[i]`` along ``axis``, zero in the last cell."""
    return shift(xnp, a, 1, axis) - a * _last_zero_mask(xnp, a, axis)


def _last_zero_mask(xnp: Any, a: Any, axis: int) -> Any:
    shape = [1] * a.ndim
    shape[axis] = a.shape[axis]
    m = np.ones(shape, np.float64)
    m[(slice(None),) * axis + (-1,)] = 0.0
    return xnp.asarray(m, dtype=a.dtype)


def make_grid(shape: tuple[int, int, int], seed: int = 0) -> dict[str, np.ndarray]:
    """A synthetic ocean basin: spacings, latitudes, a random bathymetry and its masks.

    Returns float64 arrays: ``dxt dxu`` (nx), ``dyt dyu cost cosu`` (ny), ``dzt dzw zt`` (nz;
    ``k = nz - 1`` is the surface, ``zt`` the depth of the cell centres in metres, positive
    down), ``maskT maskU maskV maskW`` (nx, ny, nz; 1 in water), and ``kbot`` (nx, ny; the
    deepest wet level, ``nz`` for land columns).
    """
    nx, ny, nz = shape
    rng = np.random.default_rng(seed)
    dxt = 5e4 + 1e4 * rng.random(nx)
    dyt = 5e4 + 1e4 * rng.random(ny)
    dxu = 0.5 * (dxt + np.roll(dxt, -1))
    dyu = 0.5 * (dyt + np.roll(dyt, -1))
    lat = np.linspace(-60.0, 60.0, ny)
    cost = np.cos(np.deg2rad(lat))
    cosu = np.cos(np.deg2rad(lat + 0.5 * (lat[1] - lat[0] if ny > 1 else 0.0)))
    dzt = np.linspace(200.0, 20.0, nz)       # thick at the bottom, thin at the surface
    dzw = 0.5 * (dzt + np.roll(dzt, -1))
    dzw[-1] = 0.5 * dzt[-1]
    depth_top = np.concatenate([np.cumsum(dzt[::-1])[::-1][1:], [0.0]])
    zt = depth_top + 0.5 * dzt
    kbot = rng.integers(0, max(1, nz // 2), size=(nx, ny))
    kbot[0, :] = kbot[-1, :] = nz            # land walls
    kbot[:, 0] = kbot[:, -1] = nz
    k = np.arange(nz)[None, None, :]
    maskT = (k >= kbot[:, :, None]).astype(np.float64)
    maskU = maskT * np.concatenate([maskT[1:], np.zeros_like(maskT[:1])], axis=0)
    maskV = maskT * np.concatenate([maskT[:, 1:], np.zeros_like(maskT[:, :1])], axis=1)
    maskW = maskT * np.concatenate([maskT[:, :, 1:], maskT[:, :, -1:]], axis=2)
    return {"dxt": dxt, "dxu": dxu, "dyt": dyt, "dyu": dyu, "cost": cost, "cosu": cosu,
            "dzt": dzt, "dzw": dzw, "zt": zt, "maskT": maskT, "maskU": maskU, "maskV": maskV,
            "maskW": maskW, "kbot": kbot}
