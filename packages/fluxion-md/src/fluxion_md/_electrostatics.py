"""Ewald and particle-mesh Ewald Coulomb energies (re-exported by ``fluxion_md.energy``; mirrors
``jax_md._energy.electrostatics``).

The Coulomb sum is split at the Ewald parameter ``alpha``: a short-ranged direct part
``q_i q_j erfc(alpha r) / r`` summed over pairs, and a smooth reciprocal part summed over
wave vectors, either directly (:func:`coulomb_recip_ewald`, the structure factor at each wave
vector) or on a grid with fourth-order B-spline charge assignment and an FFT (the smooth PME of
Essmann et al., J. Chem. Phys. 103, 8577 (1995): :func:`coulomb_recip_pme`). Energies are in
units where ``1 / (4 pi eps0) = 1``; no self-energy term is subtracted (as jax-md).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion_md import energy, space
    >>> displacement, _ = space.periodic(10.0)
    >>> energy_fn = energy.coulomb(displacement, 10.0, jnp.array([1.0, -1.0]), 16)
    >>> float(energy_fn(jnp.array([[1.0, 1.0, 1.0], [3.0, 1.0, 1.0]]))) < 0
    True
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import numpy as onp

import fluxion
import fluxion.numpy as jnp
from fluxion.scipy.special import erfc
from fluxion_md import partition, smap, space, util
from fluxion_md.util import Array

__all__ = ["coulomb_direct", "coulomb_direct_pair", "coulomb_direct_neighbor_list",
           "coulomb_recip_ewald", "coulomb_recip_pme", "coulomb_ewald_neighbor_list", "coulomb",
           "coulomb_neighbor_list", "structure_factor", "optimized_bspline_4",
           "map_charges_to_grid", "b", "B", "transform_gradients"]


def _product(q1: Array, q2: Array) -> Array:
    return q1 * q2


def coulomb_direct(dr: Array, charge_sq: Array, alpha: float) -> Array:
    """The direct-space Ewald pair energy ``q_i q_j erfc(alpha r) / r``.

    Example:
        >>> round(float(coulomb_direct(jnp.array(1.0), 1.0, 0.0)), 5)
        1.0
    """
    return charge_sq * erfc(alpha * dr) / dr


def coulomb_direct_pair(displacement_fn: Callable, charge: Array, species: Array | None = None,
                        alpha: float = 0.35) -> Callable[..., Array]:
    """The direct-space Ewald energy summed over all pairs (charges combine as ``q_i q_j``).

    Example:
        >>> displacement, _ = space.free()
        >>> fn = coulomb_direct_pair(displacement, jnp.array([1.0, 1.0]), alpha=0.0)
        >>> round(float(fn(jnp.array([[0.0, 0.0], [2.0, 0.0]]))), 5)
        0.5
    """
    return smap.pair(coulomb_direct, space.canonicalize_displacement_or_metric(displacement_fn),
                     species=species, charge_sq=(_product, charge), alpha=alpha)


def coulomb_direct_neighbor_list(displacement_or_metric: Callable, box: Any, charge: Array,
                                 species: Array | None = None, alpha: float = 0.35,
                                 cutoff: float = 9.0, **neighbor_kwargs: Any
                                 ) -> tuple[Any, Callable[..., Array]]:
    """The direct-space Ewald energy over a neighbor list, cut off at ``cutoff``:
    ``(neighbor_fn, energy_fn)``.

    Example:
        >>> displacement, _ = space.periodic(20.0)
        >>> nfn, efn = coulomb_direct_neighbor_list(displacement, 20.0, jnp.array([1.0, -1.0]))
        >>> R = jnp.array([[1.0, 1.0, 1.0], [3.0, 1.0, 1.0]])
        >>> float(efn(R, nfn.allocate(R))) < 0
        True
    """
    metric = space.canonicalize_displacement_or_metric(displacement_or_metric)
    neighbor_fn = partition.neighbor_list(metric, box, cutoff, **neighbor_kwargs)

    def cut_energy(dr: Array, **kwargs: Any) -> Array:
        return jnp.where(dr < cutoff, coulomb_direct(dr, **kwargs), 0.0)
    energy_fn = smap.pair_neighbor_list(cut_energy, metric, species=species,
                                        charge_sq=(_product, charge), alpha=alpha)
    return neighbor_fn, energy_fn


def structure_factor(g: Array, R: Array, q: Any = 1) -> Array:
    """``S(g) = sum_j q_j exp(i g . R_j)`` for each wave vector ``g`` (``[n_g, dim]``).

    Example:
        >>> structure_factor(jnp.zeros((1, 3)), jnp.ones((2, 3))).tolist()
        [(2+0j)]
    """
    if isinstance(q, (fluxion.Array, onp.ndarray)):
        q = q[None, :]
    return util.high_precision_sum(q * jnp.exp(1j * jnp.einsum("id,jd->ij", g, R)), axis=1)


def coulomb_recip_ewald(charge: Array, side_length: Any, alpha: float,
                        g_max: float) -> Callable[..., Array]:
    """The reciprocal-space Ewald energy of a cubic box by a direct sum over the wave vectors
    with ``0 < |g| < g_max``.

    Example:
        >>> fn = coulomb_recip_ewald(jnp.array([1.0, -1.0]), 10.0, 0.34, 3.0)
        >>> float(fn(jnp.array([[1.0, 1.0, 1.0], [3.0, 1.0, 1.0]]))) > 0
        True
    """
    def energy_fn(position: Array, **unused_kwargs: Any) -> Array:
        dim = position.shape[-1]
        V = side_length ** dim
        dg = 2 * onp.pi / side_length
        half = onp.arange(0, g_max + dg / 2, dg)
        axis = onp.concatenate((-half[::-1], half[1:]))
        g = jnp.reshape(jnp.stack(jnp.meshgrid(axis, axis, axis), axis=-1), (-1, dim))
        g2 = jnp.sum(g ** 2, axis=-1)
        keep = (g2 < g_max ** 2) & (g2 > 1e-7)
        S2 = jnp.abs(structure_factor(g, position, charge)) ** 2
        safe_g2 = jnp.where(keep, g2, 1.0)
        terms = jnp.where(keep, jnp.exp(-safe_g2 / (4 * alpha ** 2)) / safe_g2 * S2, 0.0)
        return (2 * jnp.pi) / V * util.high_precision_sum(terms)
    return energy_fn


@partial(jnp.vectorize, signature="()->(p)")
def optimized_bspline_4(w: Array) -> Array:
    """The four weights of the cardinal B-spline of order 4 at fractional offset ``w``.

    Example:
        >>> [round(x, 4) for x in optimized_bspline_4(jnp.array(0.0)).tolist()]
        [0.1667, 0.6667, 0.1667, 0.0]
    """
    # order 3 first, then raised to order 4 (the recursion M_n from M_{n-1})
    c2 = 0.5 * w * w
    c0 = 0.5 * (1.0 - w) * (1.0 - w)
    c1 = 1.0 - c0 - c2
    d3 = w * c2 / 3.0
    d2 = ((1.0 + w) * c1 + (3.0 - w) * c2) / 3.0
    d0 = (1.0 - w) * c0 / 3.0
    d1 = 1.0 - d0 - d2 - d3
    return jnp.stack([d0, d1, d2, d3])


@fluxion.custom_jvp
def transform_gradients(box: Array, coords: Array) -> Array:
    """The identity on ``coords`` whose derivative maps tangents through ``box`` (fractional
    coordinates differentiated as real-space ones).

    Example:
        >>> transform_gradients(jnp.eye(3), jnp.ones(3)).tolist()
        [1.0, 1.0, 1.0]
    """
    return coords


@transform_gradients.defjvp
def _transform_gradients_jvp(primals: tuple, tangents: tuple) -> tuple[Array, Array]:
    box, coords = primals
    dbox, dcoords = tangents
    return coords, space.transform(dbox, coords) + space.transform(box, dcoords)


def map_charges_to_grid(position: Array, charge: Array, inverse_box: Any,
                        grid_dimensions: Any, fractional_coordinates: bool) -> Array:
    """Spread point charges over a 3-d grid with fourth-order B-splines (4 x 4 x 4 points per
    charge, periodic).

    Example:
        >>> Q = map_charges_to_grid(jnp.array([[0.5, 0.5, 0.5]]), jnp.array([1.0]), 1.0,
        ...                         onp.array([8, 8, 8]), True)
        >>> round(float(Q.sum()), 5)
        1.0
    """
    dims = onp.asarray(grid_dimensions)

    def one(r: Array, q: Array) -> tuple[Array, Array]:
        if fractional_coordinates:
            u = transform_gradients(inverse_box, r) * dims
        else:
            u = space.raw_transform(inverse_box, r) * dims
        coeffs = optimized_bspline_4(u - jnp.floor(u))
        index = jnp.mod(jnp.floor(u).astype(jnp.int32)[:, None] + jnp.arange(4), dims[:, None])
        weight = q * (coeffs[0, :, None, None] * coeffs[1, None, :, None]
                      * coeffs[2, None, None, :])
        ix = jnp.broadcast_to(index[0, :, None, None], (4, 4, 4))
        iy = jnp.broadcast_to(index[1, None, :, None], (4, 4, 4))
        iz = jnp.broadcast_to(index[2, None, None, :], (4, 4, 4))
        return jnp.stack([ix, iy, iz], axis=-1), weight

    where, weight = fluxion.vmap(one)(position, charge)
    where = jnp.reshape(where, (-1, 3))
    return jnp.zeros(tuple(int(d) for d in dims)).at[where[:, 0], where[:, 1], where[:, 2]].add(
        jnp.reshape(weight, (-1,)))


@partial(jnp.vectorize, signature="()->()")
def b(m: Array, n: int = 4) -> Array:
    """Essmann et al.'s Euler exponential spline factor ``b(m)`` for order ``n = 4``.

    Example:
        >>> round(abs(complex(b(jnp.array(0.0)))), 5)
        1.0
    """
    if n != 4:
        raise ValueError(f"b: only fourth-order splines are supported; got n={n}.")
    k = jnp.arange(n - 1)
    M = optimized_bspline_4(1.0)[1:][::-1]
    return jnp.exp(2j * jnp.pi * (n - 1) * m) / jnp.sum(M * jnp.exp(2j * jnp.pi * m * k))


def B(mx: Array, my: Array, mz: Array, n: int = 4) -> Array:
    """``|b(mx) b(my) b(mz)|^2`` (Essmann et al. eq. 4.7).

    Example:
        >>> round(float(B(jnp.array(0.0), jnp.array(0.0), jnp.array(0.0))), 5)
        1.0
    """
    return jnp.abs(b(mx)) ** 2 * jnp.abs(b(my)) ** 2 * jnp.abs(b(mz)) ** 2


def coulomb_recip_pme(charge: Array, box: Any, grid_points: Any,
                      fractional_coordinates: bool = False,
                      alpha: float = 0.34) -> Callable[..., Array]:
    """The reciprocal-space energy by smooth particle-mesh Ewald on a ``grid_points``^3 grid;
    ``charge=`` and ``box=`` may be passed per call.

    Example:
        >>> fn = coulomb_recip_pme(jnp.array([1.0, -1.0]), 10.0, 16)
        >>> float(fn(jnp.array([[1.0, 1.0, 1.0], [3.0, 1.0, 1.0]]))) > 0
        True
    """
    default_ibox = space.inverse(box)

    def energy_fn(R: Array, **kwargs: Any) -> Array:
        q = kwargs.pop("charge", charge)
        ibox = space.inverse(kwargs["box"]) if "box" in kwargs else default_ibox
        the_box = kwargs.pop("box", box)
        dim = R.shape[-1]
        dims = onp.array((grid_points,) * dim)
        Fgrid = jnp.fft.fftn(map_charges_to_grid(R, q, ibox, dims, fractional_coordinates))
        mx, my, mz = jnp.meshgrid(*[jnp.fft.fftfreq(int(g)) for g in dims])
        if jnp.isscalar(the_box) or jnp.ndim(the_box) == 0:
            m_2 = (mx ** 2 + my ** 2 + mz ** 2) * (dims[0] * ibox) ** 2
            V = (1.0 * the_box) ** dim
        else:
            m = (ibox[None, None, None, 0] * mx[..., None] * dims[0]
                 + ibox[None, None, None, 1] * my[..., None] * dims[1]
                 + ibox[None, None, None, 2] * mz[..., None] * dims[2])
            m_2 = jnp.sum(m ** 2, axis=-1)
            V = jnp.linalg.det(the_box)
        nonzero = m_2 != 0
        safe = jnp.where(nonzero, m_2, 1.0)
        kernel = jnp.where(nonzero, jnp.exp(-(jnp.pi ** 2) * safe / alpha ** 2) / safe, 0.0)
        kernel = kernel / (2 * jnp.pi * V)
        return util.high_precision_sum(kernel * B(mx, my, mz) * jnp.abs(Fgrid) ** 2)
    return energy_fn


def coulomb_ewald_neighbor_list(displacement_fn: Callable, box: Any, charge: Array,
                                species: Array | None = None, alpha: float = 0.34,
                                g_max: float = 5.0) -> tuple[Any, Callable[..., Array]]:
    """Ewald Coulomb energy of a cubic box: direct part over a neighbor list plus the
    reciprocal sum; ``(neighbor_fn, energy_fn)``.

    Example:
        >>> displacement, _ = space.periodic(20.0)
        >>> nfn, efn = coulomb_ewald_neighbor_list(displacement, 20.0, jnp.array([1.0, -1.0]))
    """
    neighbor_fn, direct_fn = coulomb_direct_neighbor_list(displacement_fn, box, charge,
                                                          species=species, alpha=alpha)
    recip_fn = coulomb_recip_ewald(charge, box, alpha, g_max)

    def total_energy(R: Array, neighbor: Any, **kwargs: Any) -> Array:
        return direct_fn(R, neighbor=neighbor, **kwargs) + recip_fn(R, **kwargs)
    return neighbor_fn, total_energy


def coulomb(displacement_fn: Callable, box: Any, charge: Array, grid_points: Any,
            species: Array | None = None, alpha: float = 0.34,
            fractional_coordinates: bool = False) -> Callable[..., Array]:
    """Particle-mesh Ewald Coulomb energy: the direct sum over all pairs plus the PME
    reciprocal part.

    Example:
        >>> displacement, _ = space.periodic(10.0)
        >>> fn = coulomb(displacement, 10.0, jnp.array([1.0, -1.0]), 16)
        >>> float(fn(jnp.array([[1.0, 1.0, 1.0], [3.0, 1.0, 1.0]]))) < 0
        True
    """
    direct_fn = coulomb_direct_pair(displacement_fn, charge, species=species, alpha=alpha)
    recip_fn = coulomb_recip_pme(charge, box, grid_points, fractional_coordinates, alpha)

    def total_energy(R: Array, **kwargs: Any) -> Array:
        return direct_fn(R, **kwargs) + recip_fn(R, **kwargs)
    return total_energy


def coulomb_neighbor_list(displacement_fn: Callable, box: Any, charge: Array, grid_points: Any,
                          species: Array | None = None, alpha: float = 0.34,
                          cutoff: float = 9.0, fractional_coordinates: bool = False
                          ) -> tuple[Any, Callable[..., Array]]:
    """Particle-mesh Ewald Coulomb energy with the direct part over a neighbor list (the
    list's box is the diagonal of a matrix ``box``); ``(neighbor_fn, energy_fn)``.

    Example:
        >>> displacement, _ = space.periodic(20.0)
        >>> nfn, efn = coulomb_neighbor_list(displacement, 20.0, jnp.array([1.0, -1.0]), 16)
        >>> R = jnp.array([[1.0, 1.0, 1.0], [3.0, 1.0, 1.0]])
        >>> float(efn(R, nfn.allocate(R))) < 0
        True
    """
    is_matrix = isinstance(box, (fluxion.Array, onp.ndarray)) and jnp.ndim(box) == 2
    nbr_box = jnp.diag(box) if is_matrix else box
    neighbor_fn, direct_fn = coulomb_direct_neighbor_list(
        displacement_fn, nbr_box, charge, species=species, alpha=alpha,
        fractional_coordinates=fractional_coordinates, cutoff=cutoff)
    recip_fn = coulomb_recip_pme(charge, box, grid_points, fractional_coordinates, alpha)

    def total_energy(R: Array, neighbor: Any, **kwargs: Any) -> Array:
        return direct_fn(R, neighbor=neighbor, **kwargs) + recip_fn(R, **kwargs)
    return neighbor_fn, total_energy
