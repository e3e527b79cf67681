"""Membrane (triangulated surface) energies of Vutukuri et al. (2020) and Gompper & Kroll (1996),
as ``jax_md.energy``'s: local area and global volume conservation, discrete bending. Re-exported by
:mod:`fluxion_md.energy`."""

from __future__ import annotations

from typing import Callable

import fluxion.numpy as jnp
from fluxion import vmap
from fluxion_md import quantity, space, util
from fluxion_md.util import Array

__all__ = ["triangle_area_potential", "volume_potential", "bending_potential"]


def _calc_triangle_areas(R_mem: Array, triangles: Array, displacement_fn: Callable) -> Array:
    R0 = R_mem[triangles[:, 0]]
    d = vmap(displacement_fn)
    dR1 = d(R_mem[triangles[:, 1]], R0)
    dR2 = d(R_mem[triangles[:, 2]], R0)
    cos = vmap(quantity.cosine_angle_between_two_vectors)(dR1, dR2)
    return 0.5 * space.distance(dR1) * space.distance(dR2) * jnp.sqrt(1 - cos ** 2)


def triangle_area_potential(R_mem: Array, triangles: Array, displacement_fn: Callable, A_0: Array,
                            k: Array) -> Array:
    """Local area conservation ``k/2 * sum((A - A_0)^2 / A_0)`` over the triangles (vertex indices
    ``[n_triangles, 3]``) of a membrane.

    Example:
        >>> R = jnp.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
        >>> float(triangle_area_potential(R, jnp.array([[0, 1, 2]]), space.free()[0], 0.5, 1.0))
        0.0
    """
    areas = _calc_triangle_areas(R_mem, triangles, displacement_fn)
    return 0.5 * k * util.high_precision_sum((areas - A_0) ** 2 / A_0)


def _calc_volume(R_mem: Array, triangles: Array) -> Array:
    a, b, c = (R_mem[triangles[:, i]] for i in range(3))
    det = (a[:, 0] * (b[:, 1] * c[:, 2] - c[:, 1] * b[:, 2])
           - a[:, 1] * (b[:, 0] * c[:, 2] - c[:, 0] * b[:, 2])
           + a[:, 2] * (b[:, 0] * c[:, 1] - c[:, 0] * b[:, 1]))
    return jnp.abs(util.high_precision_sum(det)) / 6


def volume_potential(R_mem: Array, triangles: Array, V_0: float, k: float) -> Array:
    """Global volume conservation ``k (V - V_0)^2 / (2 V_0)`` of a closed triangulated surface in
    unwrapped coordinates (its volume from the signed tetrahedra on the origin).

    Example:
        >>> R = jnp.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
        >>> tri = jnp.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
        >>> round(float(volume_potential(R, tri, 1 / 6, 1.0)), 6)
        0.0
    """
    V = _calc_volume(R_mem, triangles)
    return k * (V - V_0) ** 2 / (2 * V_0)


def bending_potential(R_mem: Array, triangles: Array, displacement_fn: Callable,
                      kappa: Array) -> Array:
    """Discrete bending energy of a triangulated surface (cotangent weights per vertex, Gompper &
    Kroll 1996), ``kappa / 8 * sum(|rho_i|^2 / sigma_i)``.

    Example:
        >>> R = jnp.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
        >>> tri = jnp.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
        >>> e = bending_potential(R, tri, space.free()[0], 1.0)
    """
    d = vmap(displacement_fn)
    cos = vmap(quantity.cosine_angle_between_two_vectors)
    N = R_mem.shape[0]
    t0, t1, t2 = triangles[:, 0], triangles[:, 1], triangles[:, 2]
    R0, R1, R2 = R_mem[t0], R_mem[t1], R_mem[t2]
    dR01, dR12, dR20 = d(R1, R0), d(R2, R1), d(R0, R2)
    dr01, dr12, dr20 = space.distance(dR01), space.distance(dR12), space.distance(dR20)

    def cot(c: Array) -> Array:
        return c / (jnp.sqrt(1 - c ** 2) + 1e-7)

    cot01, cot12, cot20 = cot(cos(dR20, -dR12)), cot(cos(dR01, -dR20)), cot(cos(dR12, -dR01))
    sigma = jnp.zeros(N)
    sigma = sigma.at[t0].add(dr01 ** 2 * cot01 + dr20 ** 2 * cot20)
    sigma = sigma.at[t1].add(dr01 ** 2 * cot01 + dr12 ** 2 * cot12)
    sigma = sigma.at[t2].add(dr12 ** 2 * cot12 + dr20 ** 2 * cot20)
    sigma = sigma / 8
    rho = jnp.zeros((N, 3))
    rho = rho.at[t0].add(cot20[:, None] * dR20 - cot01[:, None] * dR01)
    rho = rho.at[t1].add(cot01[:, None] * dR01 - cot12[:, None] * dR12)
    rho = rho.at[t2].add(cot12[:, None] * dR12 - cot20[:, None] * dR20)
    per_particle = jnp.sum(rho * rho, axis=1) / (sigma + 1e-7)
    return (kappa / 8) * util.high_precision_sum(per_particle)
