"""Neighbor lists to UMA inputs, as ``jax_md._nn.uma.featurizer``: :func:`uma_featurizer`
(a ``fluxion_md.partition`` neighbor list, Sparse or Dense, with a displacement function) and
:func:`uma_multi_image_featurizer` (``fluxion_md.custom_partition``'s multi-image lists with
explicit lattice shifts). Both return the backbone's keyword inputs plus ``edge_mask``; padded
edges get a vector longer than the cutoff, so the envelope zeroes them."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import fluxion
import fluxion.numpy as jnp
from fluxion_md import partition
from fluxion_md.custom_partition import neighbor_list_multi_image_mask
from fluxion_md.util import Array

__all__ = ["uma_featurizer", "uma_multi_image_featurizer"]


def _finish(position: Array, atomic_numbers: Array, senders: Array, receivers: Array,
            vectors: Array, mask: Array, cutoff: float, charge: Array | None,
            spin: Array | None, dataset_idx: Array | None) -> dict[str, Array]:
    # Padding gets a vector beyond the cutoff: the envelope is exactly zero there and the
    # Wigner matrices stay well defined (a zero vector would not).
    far = jnp.array([cutoff + 1.0, 0.0, 0.0], dtype=vectors.dtype)
    vectors = jnp.where(mask[:, None], vectors, far)
    length = jnp.linalg.norm(vectors, axis=-1)
    return {
        "positions": position,
        "atomic_numbers": atomic_numbers,
        "batch": jnp.zeros(position.shape[0], dtype=jnp.int32),
        "edge_index": jnp.stack([senders, receivers], axis=0),
        "edge_distance_vec": vectors,
        "charge": jnp.zeros(1) if charge is None else charge,
        "spin": jnp.zeros(1) if spin is None else spin,
        "dataset_idx": jnp.zeros(1, dtype=jnp.int32) if dataset_idx is None else dataset_idx,
        "edge_mask": mask & (length < cutoff) & (length > 1e-8),
    }


def _check_position(name: str, position: Array, atomic_numbers: Array) -> tuple[Array, Array]:
    position, atomic_numbers = jnp.asarray(position), jnp.asarray(atomic_numbers)
    if position.ndim != 2 or atomic_numbers.shape != position.shape[:1]:
        raise ValueError(f"{name}: position must be [num_atoms, dim] and atomic_numbers "
                         f"[num_atoms], got shapes {tuple(position.shape)} and "
                         f"{tuple(atomic_numbers.shape)}")
    return position, atomic_numbers


def uma_featurizer(displacement_fn: Callable, cutoff: float = 5.0) -> Callable:
    """``featurize(atomic_numbers, position, neighbor, charge=None, spin=None,
    dataset_idx=None, **kwargs)`` for one system: edges ``[senders, receivers]`` from a Sparse
    neighbor list's ``idx`` (``[receivers, senders]``) or a Dense one (through
    ``partition.to_jraph``), vectors ``displacement_fn(R[sender], R[receiver], **kwargs)``,
    ``edge_mask`` true for real edges shorter than ``cutoff``; charge, spin and dataset default
    to ``[0]``.

    Example:
        >>> from fluxion_md import partition, space
        >>> disp, _ = space.free()
        >>> R = jnp.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [9.0, 0.0, 0.0]])
        >>> nbrs = partition.neighbor_list(disp, 10.0, 2.0, format=partition.Sparse,
        ...                                disable_cell_list=True).allocate(R)
        >>> feats = uma_featurizer(disp, cutoff=2.0)(jnp.array([1, 1, 8]), R, nbrs)
        >>> int(feats["edge_mask"].sum())
        2
    """

    def featurize(atomic_numbers: Array, position: Array, neighbor: Any,
                  charge: Array | None = None, spin: Array | None = None,
                  dataset_idx: Array | None = None, **kwargs: Any) -> dict[str, Array]:
        position, atomic_numbers = _check_position("uma_featurizer", position, atomic_numbers)
        if not hasattr(neighbor, "idx"):
            raise ValueError(f"Unsupported neighbor list format: {type(neighbor)}")
        if neighbor.format == partition.Sparse:
            receivers, senders = neighbor.idx[0], neighbor.idx[1]
            mask = partition.neighbor_list_mask(neighbor, True)
        else:
            graph = partition.to_jraph(neighbor)
            senders, receivers = graph.senders, graph.receivers
            if senders is None or receivers is None:
                raise ValueError("Converted neighbor list did not produce sparse edges.")
            count = position.shape[0]
            mask = (senders < count) & (receivers < count)
        displace = fluxion.vmap(partial(displacement_fn, **kwargs))
        vectors = displace(position[senders], position[receivers])
        return _finish(position, atomic_numbers, senders, receivers, vectors, mask, cutoff,
                       charge, spin, dataset_idx)

    return featurize


def uma_multi_image_featurizer(displacement_fn: Callable | None = None,
                               cutoff: float = 5.0) -> Callable:
    """Like :func:`uma_featurizer` for ``custom_partition.neighbor_list_multi_image`` lists:
    vectors ``R[sender] + shift @ box.T - R[receiver]`` from the stored lattice shifts (``box``
    from ``kwargs`` or the list), so an atom's own periodic images stay edges and only zero-shift
    self pairs are dropped. ``displacement_fn`` is unused (kept for the common signature).

    Example:
        >>> from fluxion_md import custom_partition, space
        >>> box = jnp.eye(3) * 3.0
        >>> disp, _ = space.periodic_general(box, fractional_coordinates=False)
        >>> R = jnp.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
        >>> nl = custom_partition.neighbor_list_multi_image(disp, box, 1.5,
        ...                                                 fractional_coordinates=False)
        >>> feats = uma_multi_image_featurizer(cutoff=1.5)(jnp.array([1, 1]), R, nl.allocate(R))
        >>> int(feats["edge_mask"].sum())
        2
    """
    del displacement_fn

    def featurize(atomic_numbers: Array, position: Array, neighbor: Any,
                  charge: Array | None = None, spin: Array | None = None,
                  dataset_idx: Array | None = None, **kwargs: Any) -> dict[str, Array]:
        position, atomic_numbers = _check_position("uma_multi_image_featurizer", position,
                                                   atomic_numbers)
        receivers, senders = neighbor.idx[0], neighbor.idx[1]
        self_pair = (senders == receivers) & jnp.all(neighbor.shifts == 0, axis=-1)
        mask = neighbor_list_multi_image_mask(neighbor) & ~self_pair
        box = kwargs.get("box", neighbor.box)
        shifts = neighbor.shifts.astype(position.dtype) @ box.T
        vectors = position[senders] + shifts - position[receivers]
        return _finish(position, atomic_numbers, senders, receivers, vectors, mask, cutoff,
                       charge, spin, dataset_idx)

    return featurize
