"""Spherical-harmonic coefficient bookkeeping for UMA, as ``jax_md._nn.uma.common.so3``.

:func:`create_coefficient_mapping` lists the ``(l, m)`` of every coefficient up to ``lmax``
(``|m| <= mmax``) in l-major order and builds ``to_m``, the permutation that regroups them by
order ``m`` (for each ``m``: the ``+m`` coefficients of every ``l``, then the ``-m`` ones).
:func:`create_so3_grid` builds the matrices between coefficients and values on a
latitude/longitude grid of the sphere (real spherical harmonics from associated Legendre
functions, quadrature weights on the way back), as jax_md computes them without torch.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import fluxion.numpy as jnp
from fluxion_md.util import Array

__all__ = ["CoefficientMapping", "create_coefficient_mapping", "coefficient_idx", "SO3Grid",
           "create_so3_grid"]


class CoefficientMapping(NamedTuple):
    """Index tables of the coefficients up to ``lmax``/``mmax``: ``to_m`` (l-major to m-major
    permutation matrix), per-coefficient ``l_harmonic``, ``m_harmonic`` (``|m|``) and
    ``m_complex`` (signed ``m``), ``m_size[m]`` (coefficients of order ``m``, both signs),
    ``res_size`` and ``coefficient_idx_cache[(l, m)]`` (indices with degree <= l, order <= m).

    Example:
        >>> from fluxion_md._nn.uma.common.so3 import create_coefficient_mapping
        >>> mapping = create_coefficient_mapping(2, 1)  # degrees l <= 2, orders |m| <= 1
        >>> mapping.res_size, mapping.m_size, mapping.l_harmonic.tolist(), mapping.m_complex.tolist()
        (7, (3, 4), [0, 1, 1, 1, 2, 2, 2], [0, -1, 0, 1, -1, 0, 1])
    """

    lmax: int
    mmax: int
    to_m: Array
    l_harmonic: Array
    m_harmonic: Array
    m_complex: Array
    m_size: tuple[int, ...]
    res_size: int
    coefficient_idx_cache: dict[tuple[int, int], Array]


def _lm_tables(lmax: int, mmax: int) -> tuple[np.ndarray, np.ndarray]:
    ls, ms = [], []
    for degree in range(lmax + 1):
        top = min(mmax, degree)
        for order in range(-top, top + 1):
            ls.append(degree)
            ms.append(order)
    return np.asarray(ls, np.int32), np.asarray(ms, np.int32)


def create_coefficient_mapping(lmax: int, mmax: int) -> CoefficientMapping:
    """The :class:`CoefficientMapping` of degrees ``0..lmax`` and orders ``|m| <= mmax``.

    Example:
        >>> mapping = create_coefficient_mapping(2, 2)
        >>> mapping.res_size, mapping.m_size
        (9, (3, 4, 2))
    """
    if lmax < 0 or mmax < 0:
        raise ValueError(f"create_coefficient_mapping: lmax={lmax} and mmax={mmax} must be >= 0")
    l_np, m_np = _lm_tables(lmax, mmax)
    size = len(l_np)
    positions = np.arange(size)
    to_m = np.zeros((size, size))
    m_size = []
    row = 0
    for order in range(mmax + 1):
        group = list(positions[m_np == order])
        if order:
            group += list(positions[m_np == -order])
        for column in group:
            to_m[row, column] = 1.0
            row += 1
        m_size.append(len(group))
    cache = {}
    for degree in range(lmax + 1):
        for order in range(lmax + 1):
            keep = (l_np <= degree) & (np.abs(m_np) <= order)
            cache[(degree, order)] = jnp.asarray(positions[keep])
    return CoefficientMapping(
        lmax=lmax, mmax=mmax, to_m=jnp.asarray(to_m), l_harmonic=jnp.asarray(l_np),
        m_harmonic=jnp.asarray(np.abs(m_np)), m_complex=jnp.asarray(m_np),
        m_size=tuple(m_size), res_size=size, coefficient_idx_cache=cache)


def coefficient_idx(mapping: CoefficientMapping, lmax: int, mmax: int) -> Array:
    """Indices of the coefficients of ``mapping`` with degree <= ``lmax`` and order <= ``mmax``.

    Example:
        >>> coefficient_idx(create_coefficient_mapping(2, 2), 2, 1).tolist()
        [0, 1, 2, 3, 5, 6, 7]
    """
    if (lmax, mmax) in mapping.coefficient_idx_cache:
        return mapping.coefficient_idx_cache[(lmax, mmax)]
    l_np = np.asarray(mapping.l_harmonic)
    m_np = np.asarray(mapping.m_harmonic)
    return jnp.asarray(np.arange(len(l_np))[(l_np <= lmax) & (m_np <= mmax)])


class SO3Grid(NamedTuple):
    """Coefficient <-> sphere-grid matrices: ``to_grid_mat`` and ``from_grid_mat`` of shape
    ``[lat_resolution, long_resolution, num_coefficients]`` and the l-major ``mapping``.

    Example:
        >>> from fluxion_md._nn.uma.common.so3 import create_so3_grid
        >>> grid = create_so3_grid(2, 2)
        >>> grid.lat_resolution, grid.long_resolution, grid.to_grid_mat.shape, grid.from_grid_mat.shape
        (6, 7, (6, 7, 9), (6, 7, 9))
    """

    lmax: int
    mmax: int
    lat_resolution: int
    long_resolution: int
    mapping: CoefficientMapping
    to_grid_mat: Array
    from_grid_mat: Array
    rescale: bool


def _legendre(degree: int, order: int, x: np.ndarray) -> np.ndarray:
    """Associated Legendre function P_degree^order(x) with the Condon-Shortley phase."""
    if order > degree:
        return np.zeros_like(x)
    p_mm = np.ones_like(x)
    if order:
        root = np.sqrt((1 - x) * (1 + x))
        odd = 1.0
        for _ in range(order):
            p_mm = -p_mm * odd * root
            odd += 2.0
    if degree == order:
        return p_mm
    p_next = x * (2 * order + 1) * p_mm
    for k in range(order + 2, degree + 1):
        p_mm, p_next = p_next, ((2 * k - 1) * x * p_next - (k + order - 1) * p_mm) / (k - order)
    return p_next


def create_so3_grid(lmax: int, mmax: int, resolution: int | None = None, rescale: bool = True,
                    normalization: str = "integral") -> SO3Grid:
    """The :class:`SO3Grid` of degrees up to ``lmax`` (orders up to ``mmax``): a
    ``2 (lmax + 1)`` latitude by ``2 mmax + 1`` longitude grid (``2 (mmax + 1) + 1`` when
    ``lmax == mmax``), or ``resolution`` squared. With ``rescale`` and ``lmax != mmax`` the
    degrees above ``mmax`` are scaled by ``sqrt((2l + 1) / (2 mmax + 1))``. ``normalization``
    is accepted for jax_md's signature; like jax_md without torch, the grid uses orthonormal
    real harmonics whatever its value.

    Example:
        >>> grid = create_so3_grid(2, 2)
        >>> grid.to_grid_mat.shape, grid.from_grid_mat.shape
        ((6, 7, 9), (6, 7, 9))
    """
    n_lat = 2 * (lmax + 1)
    n_long = 2 * (mmax + 1) + 1 if lmax == mmax else 2 * mmax + 1
    if resolution is not None:
        n_lat = n_long = resolution
    mapping = create_coefficient_mapping(lmax, lmax)
    theta = np.linspace(0, np.pi, n_lat, endpoint=False) + np.pi / (2 * n_lat)
    phi = np.linspace(0, 2 * np.pi, n_long, endpoint=False)
    values = np.zeros((n_lat, n_long, (lmax + 1) ** 2))
    cos_theta = np.cos(theta)
    for degree in range(lmax + 1):
        for order in range(-degree, degree + 1):
            k = abs(order)
            norm = np.sqrt((2 * degree + 1) / (4 * np.pi) * math.factorial(degree - k)
                           / math.factorial(degree + k))
            azimuth = np.cos(order * phi) if order >= 0 else np.sin(k * phi)
            column = norm * _legendre(degree, k, cos_theta)[:, None] * azimuth[None, :]
            values[:, :, degree * degree + degree + order] = column
    to_grid = values.copy()
    weight = 2 * np.pi / n_long * np.pi / n_lat
    from_grid = values * (np.sin(theta) * weight)[:, None, None]
    if rescale and lmax != mmax:
        for degree in range(mmax + 1, lmax + 1):
            factor = np.sqrt((2 * degree + 1) / (2 * mmax + 1))
            block = slice(degree * degree, (degree + 1) ** 2)
            to_grid[:, :, block] *= factor
            from_grid[:, :, block] *= factor
    keep = np.asarray(coefficient_idx(mapping, lmax, mmax))
    return SO3Grid(lmax=lmax, mmax=mmax, lat_resolution=n_lat, long_resolution=n_long,
                   mapping=mapping, to_grid_mat=jnp.asarray(to_grid[:, :, keep]),
                   from_grid_mat=jnp.asarray(from_grid[:, :, keep]), rescale=rescale)
