"""Behler-Parrinello symmetry functions (mirrors ``jax_md.nn.behler_parrinello``).

A Behler-Parrinello network (Behler & Parrinello, PRL 98, 146401 (2007)) predicts each atom's
energy from hand-made descriptors of its neighbourhood: *radial* symmetry functions (sums over
neighbours of ``exp(-eta r^2) f_c(r)``) and *angular* ones (sums over neighbour pairs of
``2^(1-zeta) (1 + lambda cos theta)^zeta exp(-eta (r12^2 + r13^2 + r23^2)) f_c f_c f_c``), with the
cosine cutoff ``f_c(r) = (cos(pi r / r_c) + 1) / 2``. With ``species`` the functions are computed
per neighbour species (radial) or species pair (angular) and stacked. The default parameters of
:func:`symmetry_functions` are those of Artrith, Hiller & Behler (2013), as jax_md's.
"""

from __future__ import annotations

from functools import partial, reduce
from typing import Any, Callable

import numpy as onp

import fluxion.numpy as jnp
from fluxion import ops, vmap
from fluxion_md import partition, quantity, space, util
from fluxion_md.util import Array, f32

__all__ = ["radial_symmetry_functions", "radial_symmetry_functions_neighbor_list",
           "single_pair_angular_symmetry_function", "angular_symmetry_functions",
           "angular_symmetry_functions_neighbor_list", "symmetry_functions",
           "symmetry_functions_neighbor_list"]


def _cutoff_fn(dr: Array, cutoff_distance: float = 8.0) -> Array:
    return jnp.where((dr < cutoff_distance) & (dr > 1e-7),
                     0.5 * (jnp.cos(jnp.pi * dr / cutoff_distance) + 1), 0)


def _species_array(species: Any) -> onp.ndarray | None:
    # The species split the neighbours into fixed groups: known when the function is built.
    return None if species is None else onp.asarray(species)


def _radial_fn(etas: Array, cutoff_distance: float) -> Callable[[Array], Array]:
    def radial(eta: Array, dr: Array) -> Array:
        return jnp.exp(-eta * dr ** 2) * _cutoff_fn(dr, cutoff_distance)
    return partial(vmap(radial, (0, None)), etas)


def radial_symmetry_functions(displacement_or_metric: Callable, species: Array | None,
                              etas: Array, cutoff_distance: float) -> Callable[..., Array]:
    """``compute_fn(R) -> [N, n_etas * n_species]``: per atom, the radial symmetry function of each
    ``eta`` summed over all other atoms (of each species in turn, in sorted species order).

    Example:
        >>> g = radial_symmetry_functions(space.free()[0], None, jnp.array([1.0]), 4.0)
        >>> g(jnp.array([[0.0, 0.0], [1.0, 0.0]])).shape
        (2, 1)
    """
    metric = space.canonicalize_displacement_or_metric(displacement_or_metric)
    radial = _radial_fn(etas, cutoff_distance)
    species = _species_array(species)

    def compute_fn(R: Array, **kwargs: Any) -> Array:
        pair_metric = space.map_product(partial(metric, **kwargs))
        if species is None:
            return util.high_precision_sum(radial(pair_metric(R, R)), axis=1).T
        return jnp.hstack([util.high_precision_sum(radial(pair_metric(R, R[species == t, :])), axis=1).T
                           for t in onp.unique(species)])

    return compute_fn


def radial_symmetry_functions_neighbor_list(displacement_or_metric: Callable, species: Array | None,
                                            etas: Array, cutoff_distance: float
                                            ) -> Callable[..., Array]:
    """:func:`radial_symmetry_functions` over a ``Dense`` or ``Sparse`` neighbor list:
    ``compute_fn(R, neighbor)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> from fluxion_md._nn import behler_parrinello as bp
        >>> R = jnp.array([[1.0, 1.0, 1.0], [2.0, 1.0, 1.0], [1.0, 2.2, 1.0]])
        >>> species = jnp.array([0, 1, 1])
        >>> displacement, _ = space.periodic(6.0)
        >>> nbrs = partition.neighbor_list(displacement, 6.0, 3.0).allocate(R)
        >>> g = bp.radial_symmetry_functions_neighbor_list(displacement, species, jnp.array([0.5, 2.0]), 3.0)
        >>> out = g(R, nbrs)  # [atoms, species x etas]
        >>> [[round(float(v), 5) for v in row] for row in out]
        [[0.0, 0.0, 0.77348, 0.13824], [0.4549, 0.1015, 0.13803, 0.00355], [0.31858, 0.03674, 0.13803, 0.00355]]
        >>> g_all_pairs = bp.radial_symmetry_functions(displacement, species, jnp.array([0.5, 2.0]), 3.0)
        >>> bool(jnp.allclose(g_all_pairs(R), out, atol=1e-6))
        True
    """
    metric = space.canonicalize_displacement_or_metric(displacement_or_metric)
    radial = _radial_fn(etas, cutoff_distance)
    species = _species_array(species)

    def sym_fn(R: Array, neighbor: partition.NeighborList, mask: Any = None, **kwargs: Any) -> Array:
        d = partial(metric, **kwargs)
        N = R.shape[0]
        if neighbor.format is partition.Dense:
            dr = space.map_neighbor(d)(R, R[neighbor.idx])
            m = True if mask is None else mask[neighbor.idx]
            m = (neighbor.idx < N)[None, :, :] & m
            return util.high_precision_sum(radial(dr) * m, axis=2).T
        if neighbor.format is partition.Sparse:
            dr = space.map_bond(d)(R[neighbor.idx[0]], R[neighbor.idx[1]])
            m = True if mask is None else mask[neighbor.idx[1]]
            m = (neighbor.idx[0] < N) & m
            return ops.segment_sum(radial(dr).T * m[:, None], neighbor.idx[0], N)
        raise ValueError("radial_symmetry_functions_neighbor_list: the neighbor list must be Dense "
                         f"or Sparse; got {neighbor.format}.")

    def compute_fn(R: Array, neighbor: partition.NeighborList, **kwargs: Any) -> Array:
        if species is None:
            return sym_fn(R, neighbor, **kwargs)
        return jnp.hstack([sym_fn(R, neighbor, jnp.asarray(species == t), **kwargs)
                           for t in onp.unique(species)])

    return compute_fn


def single_pair_angular_symmetry_function(dR12: Array, dR13: Array, eta: Array, lam: Array,
                                          zeta: Array, cutoff_distance: float) -> Array:
    """The angular symmetry function of one pair of neighbours at displacements ``dR12``,
    ``dR13`` from the central atom.

    Example:
        >>> v = single_pair_angular_symmetry_function(jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0]),
        ...                                           0.1, 1.0, 1.0, 4.0)
    """
    dR23 = dR12 - dR13
    dr12_2, dr13_2, dr23_2 = (space.square_distance(x) for x in (dR12, dR13, dR23))
    dists = [space.distance(x) for x in (dR12, dR13, dR23)]
    triplet_cutoff = reduce(lambda acc, r: acc * _cutoff_fn(r, cutoff_distance), dists, 1.0)
    cos = quantity.cosine_angle_between_two_vectors(dR12, dR13)
    return 2.0 ** (1.0 - zeta) * ((1.0 + lam * cos) ** zeta
                                  * jnp.exp(-eta * (dr12_2 + dr13_2 + dr23_2)) * triplet_cutoff)


def _batched_angular(etas: Array, lambdas: Array, zetas: Array,
                     cutoff_distance: float) -> Callable[[Array, Array], Array]:
    per_param = vmap(single_pair_angular_symmetry_function, (None, None, 0, 0, 0, None))
    return lambda dR12, dR13: per_param(dR12, dR13, etas, lambdas, zetas, cutoff_distance)


def angular_symmetry_functions(displacement: Callable, species: Array | None, etas: Array,
                               lambdas: Array, zetas: Array, cutoff_distance: float
                               ) -> Callable[..., Array]:
    """``compute_fn(R) -> [N, n_params * n_species (n_species + 1) / 2]``: per atom, the angular
    symmetry functions summed over all pairs of other atoms (per species pair ``i <= j``).

    Example:
        >>> g = angular_symmetry_functions(space.free()[0], None, jnp.array([0.1]), jnp.array([1.0]),
        ...                                jnp.array([1.0]), 4.0)
        >>> g(jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])).shape
        (3, 1)
    """
    batched = _batched_angular(etas, lambdas, zetas, cutoff_distance)
    all_pairs = vmap(vmap(vmap(batched, (0, None)), (None, 0)), 0)
    species = _species_array(species)

    def compute_fn(R: Array, **kwargs: Any) -> Array:
        d = space.map_product(partial(displacement, **kwargs))
        if species is None:
            dR = d(R, R)
            return jnp.sum(all_pairs(dR, dR), axis=(1, 2))
        types = onp.unique(species)
        dRs = [d(R[species == s, :], R) for s in types]
        return jnp.hstack([jnp.sum(all_pairs(dRs[i], dRs[j]), axis=(1, 2))
                           for i in range(len(types)) for j in range(i, len(types))])

    return compute_fn


def angular_symmetry_functions_neighbor_list(displacement: Callable, species: Array | None,
                                             etas: Array, lambdas: Array, zetas: Array,
                                             cutoff_distance: float) -> Callable[..., Array]:
    """:func:`angular_symmetry_functions` over a ``Dense`` or ``Sparse`` neighbor list:
    ``compute_fn(R, neighbor)``. With species, the pair masks are ``species == i`` for the
    integers ``i`` up to the number of species, as jax_md's.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> from fluxion_md._nn import behler_parrinello as bp
        >>> R = jnp.array([[1.0, 1.0, 1.0], [2.0, 1.0, 1.0], [1.0, 2.2, 1.0]])
        >>> species = jnp.array([0, 1, 1])
        >>> displacement, _ = space.periodic(6.0)
        >>> nbrs = partition.neighbor_list(displacement, 6.0, 3.0).allocate(R)
        >>> g = bp.angular_symmetry_functions_neighbor_list(
        ...     displacement, species, jnp.array([0.1]), jnp.array([1.0]), jnp.array([1.0]), 3.0)
        >>> [[round(float(v), 5) for v in row] for row in g(R, nbrs)]  # [atoms, species pairs]
        [[0.0, 0.0, 0.28176], [0.0, 0.23107, 0.0], [0.0, 0.24911, 0.0]]
    """
    batched = _batched_angular(etas, lambdas, zetas, cutoff_distance)
    species = _species_array(species)

    def sym_fn(R: Array, neighbor: partition.NeighborList, mask_i: Any = None, mask_j: Any = None,
               **kwargs: Any) -> Array:
        d = partial(displacement, **kwargs)
        N = R.shape[0]
        if neighbor.format is partition.Dense:
            dR = space.map_neighbor(d)(R, R[neighbor.idx])
            all_angular = vmap(vmap(vmap(batched, (0, None)), (None, 0)), 0)(dR, dR)
            mi = True if mask_i is None else mask_i[neighbor.idx]
            mj = True if mask_j is None else mask_j[neighbor.idx]
            mi = ((neighbor.idx < N) & mi)[:, :, None, None]
            mj = ((neighbor.idx < N) & mj)[:, None, :, None]
            return util.high_precision_sum(all_angular * mi * mj, axis=(1, 2))
        if neighbor.format is partition.Sparse:
            # jax_md's sparse branch, number for number: every pair of edge slots (j, i) is
            # summed onto edge j's centre, with no species or same-centre mask (jax_md builds the
            # mask and leaves it unused); documented in docs/md.md.
            dR = space.map_bond(d)(R[neighbor.idx[0]], R[neighbor.idx[1]])
            all_angular = vmap(vmap(batched, (0, None)), (None, 0))(dR, dR)
            all_angular = jnp.reshape(all_angular, (-1,) + all_angular.shape[2:])
            seg = jnp.repeat(neighbor.idx[0], len(neighbor.idx[0]))
            return ops.segment_sum(all_angular, seg, N)
        raise ValueError("angular_symmetry_functions_neighbor_list: the neighbor list must be "
                         f"Dense or Sparse; got {neighbor.format}.")

    def compute_fn(R: Array, neighbor: partition.NeighborList, **kwargs: Any) -> Array:
        if species is None:
            return sym_fn(R, neighbor, **kwargs)
        n_types = len(onp.unique(species))
        return jnp.hstack([sym_fn(R, neighbor, jnp.asarray(species == i), jnp.asarray(species == j))
                           for i in range(n_types) for j in range(i, n_types)])

    return compute_fn


def _default_parameters(radial_etas: Any, angular_etas: Any, lambdas: Any,
                        zetas: Any) -> tuple[Array, Array, Array, Array]:
    bohr_sq = f32(0.529177 ** 2)
    if radial_etas is None:
        radial_etas = jnp.array([9e-4, 0.01, 0.02, 0.035, 0.06, 0.1, 0.2, 0.4], f32) / bohr_sq
    if angular_etas is None:
        angular_etas = jnp.array([1e-4] * 4 + [0.003] * 4 + [0.008] * 2 + [0.015] * 4
                                 + [0.025] * 4 + [0.045] * 4, f32) / bohr_sq
    if lambdas is None:
        lambdas = jnp.array([-1, 1] * 4 + [1] * 14, f32)
    if zetas is None:
        zetas = jnp.array([1, 1, 2, 2] * 2 + [1, 2] + [1, 2, 4, 16] * 3, f32)
    return radial_etas, angular_etas, lambdas, zetas


def symmetry_functions(displacement: Callable, species: Array | None = None,
                       radial_etas: Array | None = None, angular_etas: Array | None = None,
                       lambdas: Array | None = None, zetas: Array | None = None,
                       cutoff_distance: float = 8.0) -> Callable[..., Array]:
    """Radial and angular symmetry functions side by side, ``compute_fn(R) -> [N, features]``,
    with Artrith et al.'s parameters by default (8 radial, 22 angular).

    Example:
        >>> g = symmetry_functions(space.free()[0])
        >>> g(jnp.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])).shape
        (3, 30)
    """
    radial_etas, angular_etas, lambdas, zetas = _default_parameters(radial_etas, angular_etas,
                                                                    lambdas, zetas)
    radial = radial_symmetry_functions(displacement, species, etas=radial_etas,
                                       cutoff_distance=cutoff_distance)
    angular = angular_symmetry_functions(displacement, species, etas=angular_etas, lambdas=lambdas,
                                         zetas=zetas, cutoff_distance=cutoff_distance)
    return lambda R, **kwargs: jnp.hstack((radial(R, **kwargs), angular(R, **kwargs)))


def symmetry_functions_neighbor_list(displacement: Callable, species: Array | None,
                                     radial_etas: Array | None = None,
                                     angular_etas: Array | None = None,
                                     lambdas: Array | None = None, zetas: Array | None = None,
                                     cutoff_distance: float = 8.0) -> Callable[..., Array]:
    """:func:`symmetry_functions` over a neighbor list: ``compute_fn(R, neighbor)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> from fluxion_md._nn import behler_parrinello as bp
        >>> R = jnp.array([[1.0, 1.0, 1.0], [2.0, 1.0, 1.0], [1.0, 2.2, 1.0]])
        >>> species = jnp.array([0, 1, 1])
        >>> displacement, _ = space.periodic(6.0)
        >>> nbrs = partition.neighbor_list(displacement, 6.0, 3.0).allocate(R)
        >>> out = bp.symmetry_functions_neighbor_list(displacement, species)(R, nbrs)
        >>> out.shape, round(float(out.sum()), 4)
        ((3, 82), 76.8085)
    """
    radial_etas, angular_etas, lambdas, zetas = _default_parameters(radial_etas, angular_etas,
                                                                    lambdas, zetas)
    radial = radial_symmetry_functions_neighbor_list(displacement, species, etas=radial_etas,
                                                     cutoff_distance=cutoff_distance)
    angular = angular_symmetry_functions_neighbor_list(displacement, species, etas=angular_etas,
                                                       lambdas=lambdas, zetas=zetas,
                                                       cutoff_distance=cutoff_distance)
    return lambda R, neighbor, **kwargs: jnp.hstack((radial(R, neighbor, **kwargs),
                                                     angular(R, neighbor, **kwargs)))
