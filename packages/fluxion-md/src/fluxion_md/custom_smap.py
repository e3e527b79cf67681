"""Pair energies over multi-image neighbor lists (as ``jax_md.custom_smap``)."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import fluxion.numpy as jnp
from fluxion import ops, vmap
from fluxion_md import partition, space, util
from fluxion_md.custom_partition import (
    NeighborListFormat,
    NeighborListMultiImage,
    neighbor_list_multi_image_mask,
)
from fluxion_md.util import Array

__all__ = ["pair_neighbor_list_multi_image"]


def _per_pair_params(kwargs: dict, species: Array, species_i: Array, species_j: Array) -> dict:
    # a [n_species, n_species] parameter becomes each pair's value, as jax_md does
    return {k: (v[species_i, species_j] if jnp.ndim(v) == 2 else v) for k, v in kwargs.items()}


def pair_neighbor_list_multi_image(pair_fn: Callable[..., Array], displacement_fn: Any = None,
                                   species: Array | None = None,
                                   reduce_axis: tuple[int, ...] | None = None,
                                   ignore_unused_parameters: bool = False,
                                   fractional_coordinates: bool = True,
                                   **static_kwargs: Any) -> Callable[..., Array]:
    """``energy(R, neighbor, **kwargs)``: half the sum of ``pair_fn(r_ij, **params)`` over a
    multi-image list's edges (OrderedSparse edges count once); with ``reduce_axis`` the
    per-atom energies. Parameters given as ``[n_species, n_species]`` matrices are looked up
    per pair when ``species`` is set. The displacement is taken from the list's explicit
    image shifts (``displacement_fn`` is ignored).

    Example::

        energy = pair_neighbor_list_multi_image(energy.lennard_jones, sigma=1.0, epsilon=1.0)
        e = energy(fractional_R, nbrs)
    """
    del displacement_fn, ignore_unused_parameters
    free_displacement, _ = space.free()

    def energy_fn(R: Array, neighbor: NeighborListMultiImage, **kwargs: Any) -> Array:
        params = {**static_kwargs, **kwargs}
        spc = params.pop("species", species)
        box = neighbor.box
        n = R.shape[0]
        real = space.transform(box, R) if fractional_coordinates else R
        sparse = partition.is_sparse(neighbor.format)
        if sparse:
            mask = neighbor_list_multi_image_mask(neighbor)
            i = jnp.clip(neighbor.receivers, 0, n - 1)
            j = jnp.clip(neighbor.senders, 0, n - 1)
            shifts_real = space.transform(box, neighbor.shifts)
            ra, rb = real[i], real[j] + shifts_real
        else:
            mask = neighbor.idx < n
            j = jnp.clip(neighbor.idx, 0, n - 1)
            flat = neighbor.shifts.reshape(-1, neighbor.shifts.shape[-1])
            shifts_real = space.transform(box, flat).reshape(neighbor.shifts.shape)
            rb = (real[j] + shifts_real).reshape(-1, real.shape[-1])
            ra = jnp.broadcast_to(real[:, None, :], real[j].shape).reshape(-1, real.shape[-1])
            i = jnp.broadcast_to(jnp.arange(n)[:, None], neighbor.idx.shape)
        dR = vmap(partial(free_displacement, **params))(ra, rb)
        if not sparse:
            dR = dR.reshape(neighbor.idx.shape + (-1,))
        dr = space.distance(dR)
        if spc is not None:
            params = _per_pair_params(params, spc, spc[i], spc[j])
        pair = pair_fn(dr, **params)
        pair = jnp.where(mask, pair, jnp.zeros((), pair.dtype))
        ordered = neighbor.format is NeighborListFormat.OrderedSparse
        norm = 1.0 if ordered else 2.0
        if reduce_axis is None:
            return util.high_precision_sum(pair) / norm
        if not sparse:
            return util.high_precision_sum(pair, axis=1) / norm
        if ordered:
            raise ValueError(
                "Cannot compute per-particle energies with OrderedSparse format. OrderedSparse "
                "stores only one direction per pair, so segment_sum would assign the full pair "
                "energy to the receiver atom only. Use Sparse or Dense format for per-particle "
                "energies.")
        return ops.segment_sum(pair * mask, neighbor.receivers, n) / norm

    return energy_fn
