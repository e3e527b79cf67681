"""Physical quantities of a system (mirrors ``jax_md.quantity``)."""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable

import numpy as onp

import fluxion
import fluxion.numpy as jnp
from fluxion import grad, lax, ops, vmap
from fluxion.tree_util import tree_map, tree_reduce
from fluxion_md import dataclasses, partition, space, util
from fluxion_md.util import Array, f32

__all__ = [
    "force", "clipped_force", "canonicalize_force", "count_dof", "volume", "kinetic_energy",
    "temperature", "pressure", "stress", "cosine_angle_between_two_vectors", "cosine_angles",
    "angle_between_two_vectors", "pair_correlation", "box_size_at_number_density",
    "nball_unit_volume", "particle_volume", "volume_fraction", "box_size_at_volume_fraction",
    "box_from_parameters", "bulk_modulus", "average_pair_correlation_results",
    "pair_correlation_neighbor_list", "is_integer", "PHopState", "phop",
]


def force(energy_fn: Callable[..., Array]) -> Callable[..., Array]:
    """The force ``-grad(energy_fn)`` with respect to positions.

    Example:
        >>> F = force(lambda R: jnp.sum(R ** 2))
        >>> F(jnp.ones(2)).tolist()
        [-2.0, -2.0]
    """
    return grad(lambda R, *args, **kwargs: -energy_fn(R, *args, **kwargs))


def clipped_force(energy_fn: Callable[..., Array], max_force: float) -> Callable[..., Array]:
    """:func:`force`, with each particle's force vector clipped to norm ``max_force``.

    Example:
        >>> F = clipped_force(lambda R: 10 * jnp.sum(R ** 2), 1.0)
        >>> F(jnp.array([[1.0, 0.0]])).tolist()
        [[-1.0, 0.0]]
    """
    force_fn = force(energy_fn)

    def wrapped(R: Array, *args: Any, **kwargs: Any) -> Array:
        F = force_fn(R, *args, **kwargs)
        norm = jnp.linalg.norm(F, axis=-1, keepdims=True)
        return jnp.where(norm > max_force, F / norm * max_force, F)
    return wrapped


def canonicalize_force(energy_or_force_fn: Callable[..., Any]) -> Callable[..., Any]:
    """A force function from either an energy function (scalar output) or a force function.

    Example:
        >>> F = canonicalize_force(lambda R: jnp.sum(R ** 2))
        >>> F(jnp.ones(2)).tolist()
        [-2.0, -2.0]
    """
    cache: dict = {}

    def force_fn(R: Any, **kwargs: Any) -> Any:
        if "fn" not in cache:
            out = fluxion.eval_shape(lambda r: energy_or_force_fn(r, **kwargs), R)
            if isinstance(out, fluxion.ShapeDtypeStruct) and out.shape == ():
                cache["fn"] = force(energy_or_force_fn)
            else:
                ok = tree_reduce(lambda a, b: a and b,
                                 tree_map(lambda x, y: x.shape == y.shape, out, R), True)
                if not ok:
                    raise ValueError("canonicalize_force: the function must return an energy "
                                     f"(a scalar) or forces shaped like R; got {out}.")
                cache["fn"] = energy_or_force_fn
        return cache["fn"](R, **kwargs)
    return force_fn


@functools.singledispatch
def count_dof(position: Any) -> int:
    """Degrees of freedom: the number of position entries (other position types register
    their own count with ``count_dof.register``, as ``rigid_body.RigidBody`` does).

    Example:
        >>> count_dof(jnp.zeros((10, 3)))
        30
    """
    util.check_custom_simulation_type(position)
    return tree_reduce(lambda acc, x: acc + x.size, position, 0)


def volume(dimension: int, box: Any) -> Array:
    """Volume of a box (scalar side, per-axis sides, or matrix).

    Example:
        >>> float(volume(3, 2.0))
        8.0
    """
    box = jnp.asarray(box)
    if box.ndim == 0:
        return box ** dimension
    if box.ndim == 1:
        return jnp.prod(box)
    if box.ndim == 2:
        return jnp.linalg.det(box)
    raise ValueError(f"volume: box must be a scalar, a vector or a matrix; got shape {box.shape}.")


def _check_motion(name: str, args: tuple, momentum: Any, velocity: Any) -> None:
    if args:
        raise ValueError(f"quantity.{name}: pass momentum= or velocity= as a keyword argument.")
    if momentum is not None and velocity is not None:
        raise ValueError(f"quantity.{name}: pass either momentum or velocity, not both.")


def kinetic_energy(*unused_args: Any, momentum: Any = None, velocity: Any = None,
                   mass: Any = 1.0) -> Array:
    """Kinetic energy from ``momentum`` (``p^2 / 2m``) or ``velocity`` (``m v^2 / 2``).

    Example:
        >>> float(kinetic_energy(velocity=jnp.ones((2, 3))))
        3.0
    """
    _check_motion("kinetic_energy", unused_args, momentum, velocity)
    k = (lambda v, m: v ** 2 * m) if momentum is None else (lambda p, m: p ** 2 / m)
    q = velocity if momentum is None else momentum
    ke = tree_map(lambda m, x: 0.5 * util.high_precision_sum(k(x, m)), mass, q)
    return tree_reduce(operator.add, ke, 0.0)


def temperature(*unused_args: Any, momentum: Any = None, velocity: Any = None,
                mass: Any = 1.0) -> Array:
    """Instantaneous temperature ``kT = sum(p^2 / m) / dof``.

    Example:
        >>> float(temperature(velocity=jnp.ones((2, 3))))
        1.0
    """
    _check_motion("temperature", unused_args, momentum, velocity)
    t = (lambda v, m: v ** 2 * m) if momentum is None else (lambda p, m: p ** 2 / m)
    q = velocity if momentum is None else momentum
    dof = count_dof(q)
    kT = tree_map(lambda m, x: util.high_precision_sum(t(x, m)) / dof, mass, q)
    return tree_reduce(operator.add, kT, 0.0)


def pressure(energy_fn: Callable[..., Array], position: Array, box: Any,
             kinetic_energy: float = 0.0, **kwargs: Any) -> Array:
    """Pressure from the virial: ``(2 KE - dU/d(eps)) / (d V)`` under a uniform strain ``1 + eps``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, partition, smap, space
        >>> displacement, shift = space.periodic(4.0)
        >>> R = jnp.array([[0.5, 0.5], [1.3, 0.5], [3.0, 3.0]])
        >>> from fluxion_md import quantity
        >>> displacement, shift = space.periodic_general(4.0)
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.1, 0.1], [0.3, 0.1]])   # fractional coordinates
        >>> round(float(quantity.pressure(energy_fn, R, 4.0)), 4)
        0.005
    """
    dim = position.shape[1]

    def U(eps: Array) -> Array:
        try:
            return energy_fn(position, box=box, perturbation=1 + eps, **kwargs)
        except space.UnexpectedBoxException:
            return energy_fn(position, perturbation=1 + eps, **kwargs)
    return 1 / (dim * volume(dim, box)) * (2 * kinetic_energy - grad(U)(0.0))


def stress(energy_fn: Callable[..., Array], position: Array, box: Any, mass: Any = 1.0,
           velocity: Array | None = None, **kwargs: Any) -> Array:
    """The ``[dim, dim]`` stress tensor (virial plus kinetic part when ``velocity`` is given).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, partition, smap, space
        >>> displacement, shift = space.periodic(4.0)
        >>> R = jnp.array([[0.5, 0.5], [1.3, 0.5], [3.0, 3.0]])
        >>> from fluxion_md import quantity
        >>> displacement, shift = space.periodic_general(4.0)
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.1, 0.1], [0.3, 0.1]])   # fractional coordinates
        >>> quantity.stress(energy_fn, R, 4.0).round(4).tolist()
        [[0.01, 0.0], [0.0, 0.0]]
    """
    dim = position.shape[1]
    zero = jnp.zeros((dim, dim), position.dtype)
    eye = jnp.eye(dim, dtype=position.dtype)

    def U(eps: Array) -> Array:
        try:
            return energy_fn(position, box=box, perturbation=eye + eps, **kwargs)
        except space.UnexpectedBoxException:
            return energy_fn(position, perturbation=eye + eps, **kwargs)
    VxV = 0.0
    if velocity is not None:
        V = velocity
        VxV = util.high_precision_sum(mass * V[:, None, :] * V[:, :, None], axis=0)
    return 1 / volume(dim, box) * (VxV - grad(U)(zero))


def cosine_angle_between_two_vectors(dR_12: Array, dR_13: Array) -> Array:
    """Cosine of the angle between two vectors (clipped into ``[-1, 1]``).

    Example:
        >>> round(float(cosine_angle_between_two_vectors(jnp.array([1.0, 0]), jnp.array([0, 1.0]))), 6)
        0.0
    """
    dr_12 = space.distance(dR_12) + 1e-7
    dr_13 = space.distance(dR_13) + 1e-7
    return jnp.clip(jnp.dot(dR_12, dR_13) / dr_12 / dr_13, -1.0, 1.0)


def cosine_angles(dR: Array) -> Array:
    """``[N, N, N]`` cosines of all angles from ``[N, N, dim]`` displacements.

    Example:
        >>> cosine_angles(jnp.ones((2, 2, 3))).shape
        (2, 2, 2)
    """
    fn = vmap(vmap(vmap(cosine_angle_between_two_vectors, (0, None)), (None, 0)), 0)
    return fn(dR, dR)


def angle_between_two_vectors(dR_12: Array, dR_13: Array) -> Array:
    """The angle (radians) between two vectors.

    Example:
        >>> round(float(angle_between_two_vectors(jnp.array([1.0, 0]), jnp.array([0, 1.0]))), 4)
        1.5708
    """
    return jnp.arccos(cosine_angle_between_two_vectors(dR_12, dR_13))


def _average_pair_correlation(gofr: Any, species: Any = None) -> Any:
    if species is None:
        return jnp.mean(gofr, axis=0)
    return [jnp.mean(g, axis=0) for g in gofr]


def pair_correlation(displacement_or_metric: Callable, radii: Array, sigma: float,
                     species: Array | None = None, eps: float = 1e-7,
                     compute_average: bool = False) -> Callable[[Array], Any]:
    """Smoothed, unnormalised per-particle radial distribution ``g_fn(R) -> [N, len(radii)]``.

    Each pair adds a Gaussian of width ``sigma`` at its distance, divided by ``r^(dim-1)``.

    Example:
        >>> g = pair_correlation(space.free()[0], jnp.linspace(0.5, 2.0, 4), 0.1)
        >>> g(jnp.array([[0.0, 0.0], [1.0, 0.0]])).shape
        (2, 4)
    """
    d = space.map_product(space.canonicalize_displacement_or_metric(displacement_or_metric))
    inv_rad = 1 / (radii + eps)

    def pairwise(dr: Array, dim: int) -> Array:
        return jnp.exp(-f32(0.5) * (dr - radii) ** 2 / sigma ** 2) * inv_rad ** (dim - 1)
    pairwise = vmap(vmap(pairwise, (0, None)), (0, None))

    if species is None:
        def g_fn(R: Array) -> Any:
            dim = R.shape[-1]
            mask = 1 - jnp.eye(R.shape[0], dtype=R.dtype)
            g = jnp.sum(mask[:, :, None] * pairwise(d(R, R), dim), axis=(1,))
            return _average_pair_correlation(g) if compute_average else g
        return g_fn

    if not jnp.issubdtype(jnp.asarray(species).dtype, jnp.integer):
        raise TypeError("pair_correlation: species must be an integer array; got dtype "
                        f"{jnp.asarray(species).dtype}.")
    species_np = onp.asarray(species)
    types = onp.unique(species_np)

    def g_fn(R: Array) -> Any:
        dim = R.shape[-1]
        mask = 1 - jnp.eye(R.shape[0], dtype=R.dtype)
        out = []
        for s in types:
            sel = onp.where(species_np == s)[0]
            out.append(jnp.sum(mask[:, sel, None] * pairwise(d(R[sel], R), dim), axis=(1,)))
        return _average_pair_correlation(out, species) if compute_average else out
    return g_fn


def is_integer(x: Array) -> bool:
    """Whether ``x`` has an ``int32`` or ``int64`` dtype (jax_md's species check).

    Example:
        >>> is_integer(jnp.array([0, 1])), is_integer(jnp.array([0.5]))
        (True, False)
    """
    return x.dtype == jnp.int32 or x.dtype == jnp.int64


def average_pair_correlation_results(gofr: Any, species: Array | None = None) -> Array:
    """Averages per-particle pair correlations over particles: ``mean(gofr, 0)`` without
    species; with species, ``out[a, b]`` is the mean over particles of species ``b`` of the
    correlation with species ``a`` (``gofr`` a list per species, as the species ``g_fn`` gives).

    Example:
        >>> average_pair_correlation_results(jnp.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
        [2.0, 3.0]
    """
    if species is None:
        return jnp.mean(gofr, axis=0)
    species = jnp.asarray(species)
    types = jnp.unique(species)  # sorted
    return jnp.array([[jnp.mean(gofr[a][species == s], axis=0) for s in types]
                      for a in range(types.size)])


def pair_correlation_neighbor_list(displacement_or_metric: Callable, box_size: Any,
                                   radii: Array, sigma: float, species: Array | None = None,
                                   dr_threshold: float = 0.5, eps: float = 1e-7,
                                   fractional_coordinates: bool = False,
                                   format: Any = partition.Dense,
                                   compute_average: bool = False) -> tuple[Any, Callable]:
    """:func:`pair_correlation` over a neighbor list: returns ``(neighbor_fn, g_fn)`` with
    ``g_fn(R, neighbor)``; the list's cutoff is ``max(radii) + sigma``. Dense and Sparse lists
    (not OrderedSparse, as jax_md).

    Example:
        >>> disp, _ = space.periodic(4.0)
        >>> neighbor_fn, g_fn = pair_correlation_neighbor_list(disp, 4.0,
        ...                                                     jnp.linspace(0.5, 1.5, 3), 0.1)
        >>> R = jnp.array([[0.0, 0.0], [1.0, 0.0], [2.0, 2.0]])
        >>> g_fn(R, neighbor_fn.allocate(R)).shape
        (3, 3)
    """
    metric = space.canonicalize_displacement_or_metric(displacement_or_metric)
    inv_rad = 1 / (radii + eps)

    def pairwise(dr: Array, dim: int) -> Array:
        return jnp.exp(-f32(0.5) * (dr - radii) ** 2 / sigma ** 2) * inv_rad ** (dim - 1)

    neighbor_fn = partition.neighbor_list(displacement_or_metric, box_size,
                                          jnp.max(radii) + sigma, dr_threshold, format=format)
    if species is not None and not (hasattr(species, "dtype") and is_integer(species)):
        raise TypeError("Malformed species; expecting array of integers. "
                        "(pair_correlation_neighbor_list: got "
                        f"{getattr(species, 'dtype', type(species).__name__)})")
    types = None if species is None else jnp.unique(species)

    def per_species(R: Array, neighbor: Any, other_species: Any) -> list[Array]:
        N, dim = R.shape
        mask = partition.neighbor_list_mask(neighbor)
        if neighbor.format is partition.Dense:
            dists = space.map_neighbor(metric)(R, R[neighbor.idx])
            values = vmap(vmap(pairwise, (0, None)), (0, None))(dists, dim)
            masks = [mask] if types is None else [mask * (other_species == s) for s in types]
            return [jnp.sum(m[:, :, None] * values, axis=(1,)) for m in masks]
        if neighbor.format is partition.Sparse:
            dr = space.map_bond(metric)(R[neighbor.idx[0]], R[neighbor.idx[1]])
            values = vmap(pairwise, (0, None))(dr, dim)
            masks = [mask] if types is None else [mask * (other_species == s) for s in types]
            return [ops.segment_sum(m[:, None] * values, neighbor.idx[0], N) for m in masks]
        raise NotImplementedError("Pair correlation function does not support OrderedSparse "
                                  "neighbor lists. (pair_correlation_neighbor_list)")

    def g_fn(R: Array, neighbor: Any) -> Any:
        if types is None:
            g = per_species(R, neighbor, None)[0]
        else:
            idx = neighbor.idx if neighbor.format is partition.Dense else neighbor.idx[1]
            g = per_species(R, neighbor, species[idx])
        return average_pair_correlation_results(g, species) if compute_average else g

    return neighbor_fn, g_fn


def nball_unit_volume(spatial_dimension: int) -> Array:
    """Volume of the unit ball in ``spatial_dimension`` dimensions.

    Example:
        >>> round(float(nball_unit_volume(2)), 5)
        3.14159
    """
    return jnp.pi ** (spatial_dimension / 2) / jnp.exp(
        lax.lgamma(jnp.asarray(spatial_dimension / 2 + 1, dtype=jnp.result_type(float))))


def particle_volume(radii: Array, spatial_dimension: int, particle_count: Any = 1,
                    species: Array | None = None) -> Array:
    """Total volume of spheres of the given ``radii`` (per species with ``particle_count``).

    Example:
        >>> round(float(particle_volume(jnp.array(1.0), 2)), 5)
        3.14159
    """
    vol = nball_unit_volume(spatial_dimension) * radii ** spatial_dimension
    if species is not None:
        particle_count = jnp.bincount(jnp.asarray(species))
    return jnp.sum(particle_count * vol)


def volume_fraction(box: Any, radii: Array, spatial_dimension: int, particle_count: Any = 1,
                    species: Array | None = None) -> Array:
    """Packing fraction: particle volume over box volume.

    Example:
        >>> round(float(volume_fraction(2.0, jnp.array(1.0), 2)), 4)
        0.7854
    """
    return particle_volume(radii, spatial_dimension, particle_count, species) / volume(
        spatial_dimension, box)


def box_size_at_volume_fraction(volume_fraction: float, radii: Array, spatial_dimension: int,
                                particle_count: Any = 1, species: Array | None = None) -> Array:
    """Side of the cubic box that gives ``volume_fraction``.

    Example:
        >>> round(float(box_size_at_volume_fraction(0.5, jnp.array(1.0), 2)), 4)
        2.5066
    """
    v = particle_volume(radii, spatial_dimension, particle_count, species)
    return (v / volume_fraction) ** (1 / spatial_dimension)


def box_size_at_number_density(particle_count: int, number_density: float,
                               spatial_dimension: int) -> Array:
    """Side of the cubic box holding ``particle_count`` particles at ``number_density``.

    Example:
        >>> float(box_size_at_number_density(1000, 1.0, 3))
        10.0
    """
    return jnp.power(particle_count / number_density, 1 / spatial_dimension)


def box_from_parameters(a: float, b: float, c: float, alpha: float, beta: float,
                        gamma: float) -> Array:
    """Upper-triangular box matrix from lattice lengths and angles (degrees).

    Example:
        >>> box_from_parameters(1.0, 1.0, 1.0, 90.0, 90.0, 90.0).round(6).tolist()[0]
        [1.0, 0.0, 0.0]
    """
    alpha = alpha * jnp.pi / 180
    beta = beta * jnp.pi / 180
    gamma = gamma * jnp.pi / 180
    yy = b * jnp.sin(gamma)
    xy = b * jnp.cos(gamma)
    xz = c * jnp.cos(beta)
    yz = (b * c * jnp.cos(alpha) - xy * xz) / yy
    zz = jnp.sqrt(c ** 2 - xz ** 2 - yz ** 2)
    return jnp.array([[a, xy, xz], [0, yy, yz], [0, 0, zz]])


def bulk_modulus(elastic_tensor: Array) -> Array:
    """Bulk modulus from a ``[d, d, d, d]`` elastic tensor: ``sum_ij C_iijj / d^2``.

    Example:
        >>> float(bulk_modulus(jnp.ones((3, 3, 3, 3))))
        1.0
    """
    return jnp.einsum("iijj->", elastic_tensor) / elastic_tensor.shape[0] ** 2


@dataclasses.dataclass
class PHopState:
    """The state of a :func:`phop` measurement: the last ``window_size`` (unwrapped) positions and
    the latest phop value per particle.

    Example:
        >>> PHopState(jnp.zeros((4, 2, 3)), jnp.zeros(2)).phop.shape
        (2,)
    """

    position_buffer: Array
    phop: Array


def phop(displacement: Callable[..., Array], window_size: int) -> tuple[Callable, Callable]:
    """``(init_fn, update_fn)`` of the phop rearrangement indicator (Candelier et al. 2010), as
    ``jax_md.quantity.phop``.

    The state holds the last ``window_size`` positions; with ``A`` the older half and ``B`` the
    newer one, ``update_fn(state, R)`` sets ``phop = sqrt(mean_t,d[(R_A - mean(R_B))**2 *
    (R_B - mean(R_A))**2])`` per particle, then pushes ``R`` unwrapped next to the newest position
    through ``displacement``.

    Example:
        >>> init_fn, update_fn = phop(lambda a, b: a - b, 4)
        >>> state = update_fn(update_fn(init_fn(jnp.zeros((1, 2))), jnp.ones((1, 2))), jnp.ones((1, 2)))
        >>> round(float(state.phop[0]), 4)
        0.3536
    """
    half = window_size // 2
    displacement = space.map_bond(displacement)

    def init_fn(position: Array) -> PHopState:
        buffer = jnp.tile(position, (window_size, 1, 1))
        return PHopState(buffer, jnp.zeros((position.shape[0],)))

    def update_fn(state: PHopState, position: Array) -> PHopState:
        a_pos = state.position_buffer[:half]
        b_pos = state.position_buffer[half:]
        a_mean = jnp.mean(a_pos, axis=0)
        b_mean = jnp.mean(b_pos, axis=0)
        value = jnp.sqrt(jnp.mean((a_pos - b_mean) ** 2 * (b_pos - a_mean) ** 2, axis=(0, 2)))
        buff = state.position_buffer
        position = displacement(position, buff[-1]) + buff[-1]
        buff = jnp.concatenate((buff, position[None, :, :]))[1:]
        return PHopState(buff, value)

    return init_fn, update_fn
