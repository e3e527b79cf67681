"""Interatomic potentials (mirrors ``jax_md.energy``).

Pair potentials are plain functions of distances (``lennard_jones(dr, sigma, epsilon)``); the
``*_pair`` forms lift them to all pairs of a system, the ``*_neighbor_list`` forms return
``(neighbor_fn, energy_fn)`` for large systems. Many-body potentials (EAM, Stillinger-Weber,
Tersoff, Gupta) follow the same pattern.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import numpy as onp

import fluxion.numpy as jnp
from fluxion import lax
from fluxion_md import partition, smap, space, util
from fluxion_md._cutoff import multiplicative_isotropic_cutoff
from fluxion_md.util import Array, f32, host_value, maybe_downcast

__all__ = [
    "simple_spring", "simple_spring_bond", "soft_sphere", "soft_sphere_pair",
    "soft_sphere_neighbor_list", "lennard_jones", "lennard_jones_pair",
    "lennard_jones_neighbor_list", "morse", "morse_pair", "morse_neighbor_list",
    "multiplicative_isotropic_cutoff", "dsf_coulomb", "bks", "bks_pair", "bks_neighbor_list",
    "bks_silica_pair", "bks_silica_neighbor_list", "BKS_SILICA_DICT", "gupta_potential",
    "gupta_gold55", "GUPTA_GOLD55_DICT", "stillinger_weber", "stillinger_weber_neighbor_list",
    "load_lammps_tersoff_parameters", "tersoff", "tersoff_neighbor_list",
    "tersoff_from_lammps_parameters", "tersoff_from_lammps_parameters_neighbor_list",
    "load_lammps_eam_parameters", "eam", "eam_from_lammps_parameters", "eam_neighbor_list",
    "eam_from_lammps_parameters_neighbor_list", "BehlerParrinelloEnergy", "behler_parrinello",
    "behler_parrinello_neighbor_list", "triangle_area_potential", "volume_potential",
    "bending_potential", "EnergyGraphNet", "graph_network",
    "graph_network_neighbor_list", "canonicalize_node_state", "node_state_or_default",
    "dense_graph_input", "neighbor_graph_input", "coulomb_direct_pair",
    "coulomb_direct_neighbor_list", "coulomb_recip_ewald", "coulomb_recip_pme",
    "coulomb_ewald_neighbor_list", "coulomb", "coulomb_neighbor_list", "edip",
    "edip_neighbor_list", "nequip_neighbor_list", "load_gnome_model_neighbor_list",
    "uma_neighbor_list",
]

NeighborFn = partition.NeighborListFns
NeighborList = partition.NeighborList
NeighborListFormat = partition.NeighborListFormat


def _per(per_particle: bool) -> Any:
    return (1,) if per_particle else None


def _check_species_arg(fn_name: str, species: Any) -> None:
    if species is not None and not isinstance(species, int):
        if not jnp.issubdtype(jnp.asarray(species).dtype, jnp.integer):
            raise ValueError(f"energy.{fn_name}: species must be an integer array; "
                             f"got dtype {jnp.asarray(species).dtype}.")


def _in_units_of(r: Any, sigma: Array) -> Array:
    """``maybe_downcast(r) * jnp.max(sigma)`` (``sigma`` already downcast): a cutoff in units of
    the largest ``sigma``. Where neither is a tracer it is computed on the host, the same value
    and dtype (the max is exact, the product one IEEE multiply in that dtype), so setting up an
    energy compiles no eager ``reduce_max`` and ``mul`` (50-300 ms each on a TPU)."""
    r = maybe_downcast(r)
    r_host, sigma_host = host_value(r), host_value(sigma)
    if r_host is None or sigma_host is None:
        return r * jnp.max(sigma)
    dtype = jnp.result_type(r, sigma)
    return jnp.asarray(r_host.astype(dtype) * onp.max(sigma_host).astype(dtype), dtype)


# ----------------------------------------------------------------------------- pair potentials

def simple_spring(dr: Array, length: Array = 1, epsilon: Array = 1, alpha: Array = 2,
                  **unused_kwargs: Any) -> Array:
    """Spring energy ``epsilon / alpha * |dr - length| ** alpha``.

    Example:
        >>> float(simple_spring(jnp.array(2.0)))
        0.5
    """
    return epsilon / alpha * jnp.abs(dr - length) ** alpha


def simple_spring_bond(displacement_or_metric: Callable, bond: Array, bond_type: Array | None = None,
                       length: Array = 1, epsilon: Array = 1, alpha: Array = 2) -> Callable:
    """Total :func:`simple_spring` energy of the bonds ``bond`` (``[n, 2]`` indices).

    Example:
        >>> E = simple_spring_bond(space.free()[0], jnp.array([[0, 1]]))
        >>> float(E(jnp.array([[0.0, 0.0], [2.0, 0.0]])))
        0.5
    """
    return smap.bond(simple_spring, space.canonicalize_displacement_or_metric(displacement_or_metric),
                     bond, bond_type, ignore_unused_parameters=True, length=maybe_downcast(length),
                     epsilon=maybe_downcast(epsilon), alpha=maybe_downcast(alpha))


def soft_sphere(dr: Array, sigma: Array = 1, epsilon: Array = 1, alpha: Array = 2,
                **unused_kwargs: Any) -> Array:
    """Soft-sphere repulsion ``epsilon / alpha * (1 - dr / sigma) ** alpha`` for ``dr < sigma``.

    Example:
        >>> float(soft_sphere(jnp.array(0.5)))
        0.125
    """
    dr = dr / sigma

    def fn(x: Array) -> Array:
        return epsilon / alpha * (f32(1.0) - x) ** alpha
    if isinstance(alpha, int) or jnp.issubdtype(jnp.asarray(alpha).dtype, jnp.integer):
        return jnp.where(dr < 1.0, fn(dr), f32(0.0))
    return util.safe_mask(dr < 1.0, fn, dr, f32(0.0))


def soft_sphere_pair(displacement_or_metric: Callable, species: Array | None = None,
                     sigma: Array = 1.0, epsilon: Array = 1.0, alpha: Array = 2.0,
                     per_particle: bool = False) -> Callable:
    """Soft-sphere energy of all pairs: ``energy_fn(R)``.

    Example:
        >>> E = soft_sphere_pair(space.free()[0])
        >>> float(E(jnp.array([[0.0, 0.0], [0.5, 0.0]])))
        0.125
    """
    _check_species_arg("soft_sphere_pair", species)
    return smap.pair(soft_sphere, space.canonicalize_displacement_or_metric(displacement_or_metric),
                     ignore_unused_parameters=True, species=species, sigma=maybe_downcast(sigma),
                     epsilon=maybe_downcast(epsilon), alpha=maybe_downcast(alpha),
                     reduce_axis=_per(per_particle))


def soft_sphere_neighbor_list(displacement_or_metric: Callable, box_size: Any,
                              species: Array | None = None, sigma: Array = 1.0,
                              epsilon: Array = 1.0, alpha: Array = 2.0, dr_threshold: float = 0.2,
                              per_particle: bool = False, fractional_coordinates: bool = False,
                              format: Any = partition.OrderedSparse,
                              neighbor_list_fn: Callable = partition.neighbor_list,
                              pair_neighbor_list_fn: Callable = smap.pair_neighbor_list,
                              **neighbor_kwargs: Any) -> tuple[NeighborFn, Callable]:
    """``(neighbor_fn, energy_fn)`` for soft spheres with a neighbor list (cutoff ``max(sigma)``).

    Example:
        >>> disp, _ = space.periodic(5.0)
        >>> neighbor_fn, E = soft_sphere_neighbor_list(disp, 5.0)
    """
    _check_species_arg("soft_sphere_neighbor_list", species)
    sigma = maybe_downcast(sigma)
    # the cutoff max(sigma) read on the host (exact: no eager reduce_max to compile); a traced
    # sigma gives a traced cutoff, which neighbor_list takes as jax_md's does
    sigma_host = host_value(sigma)
    r_cutoff = jnp.max(sigma) if sigma_host is None else float(onp.max(sigma_host))
    neighbor_fn = neighbor_list_fn(displacement_or_metric, box_size, r_cutoff,
                                   maybe_downcast(dr_threshold),
                                   fractional_coordinates=fractional_coordinates, format=format,
                                   **neighbor_kwargs)
    energy_fn = pair_neighbor_list_fn(
        soft_sphere, space.canonicalize_displacement_or_metric(displacement_or_metric),
        ignore_unused_parameters=True, species=species, sigma=sigma,
        epsilon=maybe_downcast(epsilon), alpha=maybe_downcast(alpha),
        reduce_axis=_per(per_particle))
    return neighbor_fn, energy_fn


def lennard_jones(dr: Array, sigma: Array = 1, epsilon: Array = 1, **unused_kwargs: Any) -> Array:
    """Lennard-Jones energy ``4 epsilon ((sigma/dr)^12 - (sigma/dr)^6)`` (0 where it is not finite).

    Example:
        >>> float(lennard_jones(jnp.array(1.0)))
        0.0
    """
    idr = sigma / dr
    idr = idr * idr
    idr6 = idr * idr * idr
    idr12 = idr6 * idr6
    return jnp.nan_to_num(f32(4) * epsilon * (idr12 - idr6))


def lennard_jones_pair(displacement_or_metric: Callable, species: Array | None = None,
                       sigma: Array = 1.0, epsilon: Array = 1.0, r_onset: Array = 2.0,
                       r_cutoff: Array = 2.5, per_particle: bool = False) -> Callable:
    """Lennard-Jones energy of all pairs, smoothly cut off between ``r_onset`` and ``r_cutoff``
    (both in units of ``max(sigma)``).

    Example:
        >>> E = lennard_jones_pair(space.free()[0])
        >>> round(float(E(jnp.array([[0.0, 0.0], [2 ** (1 / 6), 0.0]]))), 6)
        -1.0
    """
    _check_species_arg("lennard_jones_pair", species)
    sigma = maybe_downcast(sigma)
    r_onset = _in_units_of(r_onset, sigma)
    r_cutoff = _in_units_of(r_cutoff, sigma)
    return smap.pair(multiplicative_isotropic_cutoff(lennard_jones, r_onset, r_cutoff),
                     space.canonicalize_displacement_or_metric(displacement_or_metric),
                     ignore_unused_parameters=True, species=species, sigma=sigma,
                     epsilon=maybe_downcast(epsilon), reduce_axis=_per(per_particle))


def lennard_jones_neighbor_list(displacement_or_metric: Callable, box_size: Any,
                                species: Array | None = None, sigma: Array = 1.0,
                                epsilon: Array = 1.0, r_onset: float = 2.0, r_cutoff: float = 2.5,
                                dr_threshold: float = 0.5, per_particle: bool = False,
                                fractional_coordinates: bool = False,
                                format: Any = partition.OrderedSparse,
                                neighbor_list_fn: Callable = partition.neighbor_list,
                                pair_neighbor_list_fn: Callable = smap.pair_neighbor_list,
                                **neighbor_kwargs: Any) -> tuple[NeighborFn, Callable]:
    """``(neighbor_fn, energy_fn)`` for Lennard-Jones with a neighbor list.

    Example:
        >>> import fluxion.numpy as jnp
        >>> R = jnp.array([[1.0, 1.0], [2.0, 1.0], [1.0, 2.2], [5.0, 5.0]])
        >>> disp, _ = space.periodic(10.0)
        >>> neighbor_fn, E = lennard_jones_neighbor_list(disp, 10.0)
        >>> nbrs = neighbor_fn.allocate(R)
        >>> round(float(E(R, nbrs)), 4), round(float(lennard_jones_pair(disp)(R)), 4)
        (-1.1474, -1.1474)
    """
    _check_species_arg("lennard_jones_neighbor_list", species)
    sigma = maybe_downcast(sigma)
    r_onset = _in_units_of(r_onset, sigma)
    r_cutoff = _in_units_of(r_cutoff, sigma)
    neighbor_fn = neighbor_list_fn(displacement_or_metric, box_size, r_cutoff,
                                   maybe_downcast(dr_threshold),
                                   fractional_coordinates=fractional_coordinates, format=format,
                                   **neighbor_kwargs)
    energy_fn = pair_neighbor_list_fn(
        multiplicative_isotropic_cutoff(lennard_jones, r_onset, r_cutoff),
        space.canonicalize_displacement_or_metric(displacement_or_metric),
        ignore_unused_parameters=True, species=species, sigma=sigma,
        epsilon=maybe_downcast(epsilon), reduce_axis=_per(per_particle))
    return neighbor_fn, energy_fn


def morse(dr: Array, sigma: Array = 1.0, epsilon: Array = 5.0, alpha: Array = 5.0,
          **unused_kwargs: Any) -> Array:
    """Morse energy ``epsilon (1 - exp(-alpha (dr - sigma)))^2 - epsilon``.

    Example:
        >>> float(morse(jnp.array(1.0)))
        -5.0
    """
    U = epsilon * (f32(1) - jnp.exp(-alpha * (dr - sigma))) ** f32(2) - epsilon
    return jnp.nan_to_num(jnp.array(U, dtype=dr.dtype))


def morse_pair(displacement_or_metric: Callable, species: Array | None = None,
               sigma: Array = 1.0, epsilon: Array = 5.0, alpha: Array = 5.0,
               r_onset: float = 2.0, r_cutoff: float = 2.5, per_particle: bool = False) -> Callable:
    """Morse energy of all pairs, cut off between ``r_onset`` and ``r_cutoff`` (absolute).

    Example:
        >>> E = morse_pair(space.free()[0])
        >>> float(E(jnp.array([[0.0, 0.0], [1.0, 0.0]])))
        -5.0
    """
    _check_species_arg("morse_pair", species)
    return smap.pair(multiplicative_isotropic_cutoff(morse, r_onset, r_cutoff),
                     space.canonicalize_displacement_or_metric(displacement_or_metric),
                     ignore_unused_parameters=True, species=species, sigma=maybe_downcast(sigma),
                     epsilon=maybe_downcast(epsilon), alpha=maybe_downcast(alpha),
                     reduce_axis=_per(per_particle))


def morse_neighbor_list(displacement_or_metric: Callable, box_size: Any,
                        species: Array | None = None, sigma: Array = 1.0, epsilon: Array = 5.0,
                        alpha: Array = 5.0, r_onset: float = 2.0, r_cutoff: float = 2.5,
                        dr_threshold: float = 0.5, per_particle: bool = False,
                        fractional_coordinates: bool = False,
                        format: Any = partition.OrderedSparse,
                        neighbor_list_fn: Callable = partition.neighbor_list,
                        pair_neighbor_list_fn: Callable = smap.pair_neighbor_list,
                        **neighbor_kwargs: Any) -> tuple[NeighborFn, Callable]:
    """``(neighbor_fn, energy_fn)`` for the Morse potential with a neighbor list.

    Example:
        >>> disp, _ = space.periodic(10.0)
        >>> neighbor_fn, E = morse_neighbor_list(disp, 10.0)
    """
    _check_species_arg("morse_neighbor_list", species)
    r_onset = maybe_downcast(r_onset)
    r_cutoff = maybe_downcast(r_cutoff)
    neighbor_fn = neighbor_list_fn(displacement_or_metric, box_size, r_cutoff,
                                   maybe_downcast(dr_threshold),
                                   fractional_coordinates=fractional_coordinates, format=format,
                                   **neighbor_kwargs)
    energy_fn = pair_neighbor_list_fn(
        multiplicative_isotropic_cutoff(morse, r_onset, r_cutoff),
        space.canonicalize_displacement_or_metric(displacement_or_metric),
        ignore_unused_parameters=True, species=species, sigma=maybe_downcast(sigma),
        epsilon=maybe_downcast(epsilon), alpha=maybe_downcast(alpha),
        reduce_axis=_per(per_particle))
    return neighbor_fn, energy_fn


# ----------------------------------------------------------------------------- electrostatics

def _erfc(x: Any) -> Array:
    # jax.scipy.special.erfc's promotion: a Python number stays weakly typed, so float32 energies
    # stay float32 with x64 on; integers become floats.
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x * 1.0
    return lax.erfc(x)


def dsf_coulomb(r: Array, Q_sq: Array, alpha: Array = 0.25, cutoff: float = 8.0) -> Array:
    """Damped shifted-force Coulomb energy (kcal/mol, charges in e, distances in Angstrom).

    Example:
        >>> float(dsf_coulomb(jnp.array(9.0), 1.0))
        0.0
    """
    qqr2e = 332.06371
    cutoffsq = cutoff * cutoff
    erfcc = _erfc(alpha * cutoff)
    erfcd = jnp.exp(-alpha * alpha * cutoffsq)
    f_shift = -(erfcc / cutoffsq + 2 / jnp.sqrt(jnp.pi) * alpha * erfcd / cutoff)
    e_shift = erfcc / cutoff - f_shift * cutoff
    e = qqr2e * Q_sq / r * (lax.erfc(alpha * r) - r * e_shift - r ** 2 * f_shift)
    return jnp.where(r < cutoff, e, 0.0)


def bks(dr: Array, Q_sq: Array, exp_coeff: Array, exp_decay: Array, attractive_coeff: Array,
        repulsive_coeff: Array, coulomb_alpha: Array, cutoff: float, **unused_kwargs: Any) -> Array:
    """The BKS silica pair energy: DSF Coulomb + Buckingham + an r^-24 core.

    Example:
        >>> e = bks(jnp.array(2.0), 1.0, 1.0, 1.0, -1.0, 1.0, 0.25, 8.0)
    """
    energy = (dsf_coulomb(dr, Q_sq, coulomb_alpha, cutoff) + exp_coeff * jnp.exp(-dr / exp_decay)
              + attractive_coeff / dr ** 6 + repulsive_coeff / dr ** 24)
    return jnp.where(dr < cutoff, energy, 0.0)


def bks_pair(displacement_or_metric: Callable, species: Array, Q_sq: Array, exp_coeff: Array,
             exp_decay: Array, attractive_coeff: Array, repulsive_coeff: Array,
             coulomb_alpha: Array, cutoff: float) -> Callable:
    """BKS energy of all pairs with per-species ``[n_species, n_species]`` parameters.

    Example: all pairs include each particle with itself (r = 0, where BKS's 1/r terms are infinite),
    so the all-pairs energy is nan, as in jax_md; the neighbor-list form leaves those pairs out.

        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> displacement, shift = space.periodic(10.0)
        >>> R, species = jnp.array([[0.5, 0.5], [2.5, 0.5], [6.0, 6.0]]), jnp.array([0, 1, 1])  # Si, O, O
        >>> energy_fn = energy.bks_pair(displacement, species, **energy.BKS_SILICA_DICT, cutoff=3.0)
        >>> float(energy_fn(R))
        nan
        >>> neighbor_fn, nl_energy_fn = energy.bks_neighbor_list(displacement, 10.0, species,
        ...                                                      **energy.BKS_SILICA_DICT, cutoff=3.0)
        >>> round(float(nl_energy_fn(R, neighbor_fn.allocate(R))), 2)
        -56.45
    """
    _check_species_arg("bks_pair", species)
    return smap.pair(bks, displacement_or_metric, species=species, ignore_unused_parameters=True,
                     Q_sq=maybe_downcast(Q_sq), exp_coeff=maybe_downcast(exp_coeff),
                     exp_decay=maybe_downcast(exp_decay),
                     attractive_coeff=maybe_downcast(attractive_coeff),
                     repulsive_coeff=maybe_downcast(repulsive_coeff), coulomb_alpha=coulomb_alpha,
                     cutoff=cutoff)


def bks_neighbor_list(displacement_or_metric: Callable, box_size: Any, species: Array,
                      Q_sq: Array, exp_coeff: Array, exp_decay: Array, attractive_coeff: Array,
                      repulsive_coeff: Array, coulomb_alpha: Array, cutoff: float,
                      dr_threshold: float = 0.8, fractional_coordinates: bool = False,
                      format: Any = partition.OrderedSparse,
                      neighbor_list_fn: Callable = partition.neighbor_list,
                      pair_neighbor_list_fn: Callable = smap.pair_neighbor_list,
                      **neighbor_kwargs: Any) -> tuple[NeighborFn, Callable]:
    """``(neighbor_fn, energy_fn)`` for the BKS potential.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> displacement, shift = space.periodic(10.0)
        >>> R = jnp.array([[0.5, 0.5], [2.5, 0.5], [6.0, 6.0]])
        >>> neighbor_fn, energy_fn = energy.bks_neighbor_list(displacement, 10.0, jnp.array([0, 1, 1]),
        ...                                                     **energy.BKS_SILICA_DICT, cutoff=3.0)
        >>> round(float(energy_fn(R, neighbor_fn.allocate(R))), 2)
        -56.45
    """
    _check_species_arg("bks_neighbor_list", species)
    neighbor_fn = neighbor_list_fn(displacement_or_metric, box_size, cutoff,
                                   maybe_downcast(dr_threshold),
                                   fractional_coordinates=fractional_coordinates, format=format,
                                   **neighbor_kwargs)
    energy_fn = pair_neighbor_list_fn(
        bks, space.canonicalize_displacement_or_metric(displacement_or_metric), species=species,
        ignore_unused_parameters=True, Q_sq=maybe_downcast(Q_sq),
        exp_coeff=maybe_downcast(exp_coeff), exp_decay=maybe_downcast(exp_decay),
        attractive_coeff=maybe_downcast(attractive_coeff),
        repulsive_coeff=maybe_downcast(repulsive_coeff), coulomb_alpha=coulomb_alpha,
        cutoff=cutoff)
    return neighbor_fn, energy_fn


CHARGE_OXYGEN = -0.977476019
CHARGE_SILICON = 1.954952037
BKS_SILICA_DICT: dict[str, Any] = {
    "Q_sq": [[CHARGE_SILICON ** 2, CHARGE_SILICON * CHARGE_OXYGEN],
             [CHARGE_SILICON * CHARGE_OXYGEN, CHARGE_OXYGEN ** 2]],
    "exp_coeff": [[0, 471671.1243], [471671.1243, 23138.64826]],
    "exp_decay": [[1, 0.19173537], [0.19173537, 0.356855265]],
    "attractive_coeff": [[0, -2156.074422], [-2156.074422, -1879.223108]],
    "repulsive_coeff": [[78940848.06, 668.7557239], [668.7557239, 2605.841269]],
    "coulomb_alpha": 0.25,
}


def _bks_silica_self(Q_sq: Any, alpha: float, cutoff: float) -> Array:
    cutoffsq = cutoff * cutoff
    erfcc = _erfc(alpha * cutoff)
    erfcd = jnp.exp(-alpha * alpha * cutoffsq)
    f_shift = -(erfcc / cutoffsq + 2.0 / jnp.sqrt(jnp.pi) * alpha * erfcd / cutoff)
    e_shift = erfcc / cutoff - f_shift * cutoff
    return -(e_shift / 2.0 + alpha / jnp.sqrt(jnp.pi)) * Q_sq * 332.06371


def bks_silica_pair(displacement_or_metric: Callable, species: Array, cutoff: float = 8.0) -> Callable:
    """BKS silica (species 0 = Si, 1 = O), including the DSF self energy.

    Example: as for :func:`bks_pair`, the all-pairs energy is nan (the r = 0 self pairs, as in
    jax_md); :func:`bks_silica_neighbor_list` is the form to use.

        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> displacement, shift = space.periodic(10.0)
        >>> R, species = jnp.array([[0.5, 0.5], [2.5, 0.5], [6.0, 6.0]]), jnp.array([0, 1, 1])  # Si, O, O
        >>> float(energy.bks_silica_pair(displacement, species, cutoff=3.0)(R))
        nan
        >>> neighbor_fn, energy_fn = energy.bks_silica_neighbor_list(displacement, 10.0, species, cutoff=3.0)
        >>> round(float(energy_fn(R, neighbor_fn.allocate(R))), 2)
        -661.23
    """
    pair_fn = bks_pair(displacement_or_metric, species, cutoff=cutoff, **BKS_SILICA_DICT)
    n0 = jnp.sum(jnp.asarray(species) == 0)
    n1 = jnp.sum(jnp.asarray(species) == 1)
    e_self = partial(_bks_silica_self, alpha=0.25, cutoff=cutoff)

    def energy_fn(R: Array, **kwargs: Any) -> Array:
        return pair_fn(R, **kwargs) + n0 * e_self(CHARGE_SILICON ** 2) + n1 * e_self(
            CHARGE_OXYGEN ** 2)
    return energy_fn


def bks_silica_neighbor_list(displacement_or_metric: Callable, box_size: Any, species: Array,
                             cutoff: float = 8.0, dr_threshold: float = 1.0,
                             fractional_coordinates: bool = False,
                             format: Any = partition.OrderedSparse,
                             neighbor_list_fn: Callable = partition.neighbor_list,
                             pair_neighbor_list_fn: Callable = smap.pair_neighbor_list,
                             **neighbor_kwargs: Any) -> tuple[NeighborFn, Callable]:
    """``(neighbor_fn, energy_fn)`` for BKS silica with a neighbor list.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> displacement, shift = space.periodic(10.0)
        >>> R = jnp.array([[0.5, 0.5], [2.5, 0.5], [6.0, 6.0]])
        >>> neighbor_fn, energy_fn = energy.bks_silica_neighbor_list(displacement, 10.0, jnp.array([0, 1, 1]),
        ...                                                            cutoff=3.0)
        >>> round(float(energy_fn(R, neighbor_fn.allocate(R))), 2)
        -661.23
    """
    neighbor_fn, pair_fn = bks_neighbor_list(
        displacement_or_metric, box_size, species, cutoff=cutoff, dr_threshold=dr_threshold,
        fractional_coordinates=fractional_coordinates, format=format,
        neighbor_list_fn=neighbor_list_fn, pair_neighbor_list_fn=pair_neighbor_list_fn,
        **{**BKS_SILICA_DICT, **neighbor_kwargs})
    n0 = jnp.sum(jnp.asarray(species) == 0)
    n1 = jnp.sum(jnp.asarray(species) == 1)
    e_self = partial(_bks_silica_self, alpha=0.25, cutoff=cutoff)

    def energy_fn(R: Array, neighbor: NeighborList, **kwargs: Any) -> Array:
        return pair_fn(R, neighbor, **kwargs) + n0 * e_self(CHARGE_SILICON ** 2) + n1 * e_self(
            CHARGE_OXYGEN ** 2)
    return neighbor_fn, energy_fn


from fluxion_md._edip import edip, edip_neighbor_list  # noqa: E402  (bond-order silicon)
from fluxion_md._electrostatics import (  # noqa: E402  (Ewald / particle-mesh Ewald Coulomb)
    coulomb,
    coulomb_direct_neighbor_list,
    coulomb_direct_pair,
    coulomb_ewald_neighbor_list,
    coulomb_neighbor_list,
    coulomb_recip_ewald,
    coulomb_recip_pme,
)
from fluxion_md._gnome_energy import (  # noqa: E402  (NequIP / GNoME over fluxion_md.nn)
    load_gnome_model_neighbor_list,
    nequip_neighbor_list,
)
from fluxion_md._graph_energy import (  # noqa: E402  (learned potentials over fluxion_md.nn)
    BehlerParrinelloEnergy,
    EnergyGraphNet,
    behler_parrinello,
    behler_parrinello_neighbor_list,
    canonicalize_node_state,
    dense_graph_input,
    graph_network,
    graph_network_neighbor_list,
    neighbor_graph_input,
    node_state_or_default,
)
from fluxion_md._many_body import (  # noqa: E402  (many-body potentials use the pair helpers)
    GUPTA_GOLD55_DICT,
    eam,
    eam_from_lammps_parameters,
    eam_from_lammps_parameters_neighbor_list,
    eam_neighbor_list,
    gupta_gold55,
    gupta_potential,
    load_lammps_eam_parameters,
    load_lammps_tersoff_parameters,
    stillinger_weber,
    stillinger_weber_neighbor_list,
    tersoff,
    tersoff_from_lammps_parameters,
    tersoff_from_lammps_parameters_neighbor_list,
    tersoff_neighbor_list,
)
from fluxion_md._membrane import (  # noqa: E402  (membrane energies)
    _calc_triangle_areas,  # noqa: F401  (jax_md's private helpers; its tests call them)
    _calc_volume,  # noqa: F401
    bending_potential,
    triangle_area_potential,
    volume_potential,
)
from fluxion_md._nn import gnome, nequip  # noqa: E402, F401  (jax_md.energy.gnome / .nequip)
from fluxion_md._uma_energy import uma_neighbor_list  # noqa: E402, F401  (UMA over fluxion_md._nn.uma)
