"""Multi-image neighbor lists (as ``jax_md.custom_partition``): every periodic image of every
atom within the cutoff, not only the nearest one, so boxes smaller than twice the cutoff work.

An edge is ``(receiver i, sender j, shift s)`` with integer image shift ``s``; its vector is
``R_j + s @ box.T - R_i``. Sparse lists hold both directions, OrderedSparse each pair once
(``i < j`` for the zero shift, else the shift whose first non-zero component is positive),
Dense ``[N, max_neighbors]`` sorted by distance. Empty slots hold ``N``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as onp

import fluxion.numpy as jnp
from fluxion import jit, lax
from fluxion_md import dataclasses
from fluxion_md.partition import NeighborListFormat, _flat_running_count
from fluxion_md.util import Array, i32

__all__ = ["NeighborListMultiImage", "NeighborListMultiImageFns", "NeighborListFormat",
           "estimate_max_neighbors", "estimate_max_neighbors_from_box",
           "neighbor_list_multi_image", "neighbor_list_multi_image_mask"]


@dataclasses.dataclass
class NeighborListMultiImage:
    """A multi-image neighbor list.

    ``idx``: ``(receivers, senders)`` each ``[capacity]`` (Sparse/OrderedSparse) or
    ``[N, max_neighbors]`` (Dense); ``shifts``: the integer image shift of each entry
    (``[capacity, dim]`` or ``[N, max_neighbors, dim]``); ``reference_position`` /
    ``reference_box``: positions and box at the last build; ``search_shifts``: the image
    stencil the allocation searches; ``did_buffer_overflow``: more edges than capacity, or the
    box needs a wider stencil (re-allocate).

    Example::

        fns = neighbor_list_multi_image(None, box, r_cutoff=3.0)
        nbrs = fns.allocate(fractional_positions)
        nbrs.receivers, nbrs.senders, nbrs.shifts
    """

    idx: Any
    shifts: Array
    reference_position: Array
    reference_box: Array
    box: Array
    search_shifts: Array
    format: NeighborListFormat = dataclasses.static_field()
    max_occupancy: int = dataclasses.static_field()
    update_fn: Callable[..., "NeighborListMultiImage"] = dataclasses.static_field()
    did_buffer_overflow: Any = False

    def update(self, position: Array, **kwargs: Any) -> "NeighborListMultiImage":
        """The list rebuilt (or kept, within ``dr_threshold``) for new positions."""
        return self.update_fn(position, self, **kwargs)

    def _sparse_only(self, what: str) -> None:
        if self.format is NeighborListFormat.Dense:
            raise ValueError(f"{what} property not available for Dense format. Use idx directly.")

    @property
    def senders(self) -> Array:
        """Sender (neighbor) indices ``j`` (sparse formats only)."""
        self._sparse_only("senders")
        return self.idx[1]

    @property
    def receivers(self) -> Array:
        """Receiver (centre) indices ``i`` (sparse formats only)."""
        self._sparse_only("receivers")
        return self.idx[0]

    @property
    def n_edges(self) -> int:
        """The number of filled entries."""
        n = len(self.reference_position)
        filled = self.idx if self.format is NeighborListFormat.Dense else self.idx[0]
        return int(jnp.sum(filled < n))

    @property
    def max_neighbors(self) -> int:
        """The Dense list's neighbors per atom."""
        if self.format is not NeighborListFormat.Dense:
            raise ValueError("max_neighbors property only available for Dense format.")
        return self.idx.shape[1]

    @property
    def n_node(self) -> int:
        """The number of atoms."""
        return len(self.reference_position)


@dataclasses.dataclass
class NeighborListMultiImageFns:
    """``allocate(position, extra_capacity=0, box=None)`` (not jittable: it sizes the list)
    and ``update(position, neighbors, box=...)`` (jittable); unpacks as a pair.

    Example: ``allocate, update = neighbor_list_multi_image(None, box, 3.0)``.
    """

    allocate: Callable[..., NeighborListMultiImage] = dataclasses.static_field()
    update: Callable[..., NeighborListMultiImage] = dataclasses.static_field()

    def __iter__(self) -> Any:
        return iter((self.allocate, self.update))


def _shift_n_max(box: Array, r_cutoff: float, pbc: Array) -> Array:
    # images needed along each lattice vector: the cutoff over the box's height there
    heights = 1.0 / jnp.linalg.norm(jnp.linalg.inv(box).T, axis=0)
    return jnp.where(pbc, jnp.ceil(r_cutoff / heights).astype(i32), 0)


def _shift_stencil(box: Array, r_cutoff: float, pbc: Array) -> Array:
    n_max = [int(n) for n in onp.asarray(_shift_n_max(box, r_cutoff, pbc))]
    grids = onp.meshgrid(*[onp.arange(-n, n + 1) for n in n_max], indexing="ij")
    return jnp.asarray(onp.stack([g.ravel() for g in grids], axis=-1).astype(onp.int32))


def _dist_sq(position: Array, box: Array, shifts: Array, fractional: bool) -> Array:
    """``[S, N, N]``: ``|R_j + shift_s - R_i|^2``."""
    real = position @ box.T if fractional else position
    shifts_real = shifts.astype(box.dtype) @ box.T
    d = real[None, None, :, :] + shifts_real[:, None, None, :] - real[None, :, None, :]
    return jnp.sum(d * d, axis=-1)


def _valid(dist_sq: Array, shifts: Array, r_cutoff: float) -> Array:
    n = dist_sq.shape[1]
    zero = jnp.all(shifts == 0, axis=1)
    self_pair = zero[:, None, None] & jnp.eye(n, dtype=bool)[None]
    return (dist_sq < r_cutoff ** 2) & ~self_pair


def _canonical(shifts: Array) -> Array:
    # the shift's first non-zero component is positive (or the shift is zero)
    nonzero = shifts != 0
    first = jnp.take_along_axis(shifts, jnp.argmax(nonzero, axis=1)[:, None], axis=1)[:, 0]
    return jnp.where(jnp.any(nonzero, axis=1), first > 0, True)


def _to_sparse(valid: Array, shifts: Array, capacity: int) -> tuple:
    s_count, n, _ = valid.shape
    flat = valid.ravel()
    s_idx, i_idx, j_idx = (g.ravel() for g in jnp.meshgrid(
        jnp.arange(s_count), jnp.arange(n), jnp.arange(n), indexing="ij"))
    # per row, then the rows' totals: one TPU scan of s_count * n * n elements compiles slowly
    slot = _flat_running_count(jnp.reshape(valid, (s_count * n, n))) - 1
    keep = flat & (slot < capacity)
    where = jnp.where(flat, slot, capacity)
    senders = jnp.full(capacity, n, i32).at[where].set(jnp.where(keep, j_idx, n), mode="drop")
    receivers = jnp.full(capacity, n, i32).at[where].set(jnp.where(keep, i_idx, n), mode="drop")
    edge_shifts = jnp.zeros((capacity, shifts.shape[1]), shifts.dtype).at[where].set(
        jnp.where(keep[:, None], shifts[s_idx], 0), mode="drop")
    return receivers, senders, edge_shifts, jnp.sum(flat) > capacity


def _build(position: Array, box: Array, shifts: Array, r_cutoff: float, capacity: int,
           fractional: bool, fmt: NeighborListFormat, update_fn: Callable) -> Any:
    n = position.shape[0]
    d2 = _dist_sq(position, box, shifts, fractional)
    valid = _valid(d2, shifts, r_cutoff)
    common = dict(reference_position=position, reference_box=box, box=box,
                  search_shifts=shifts, format=fmt, max_occupancy=capacity,
                  update_fn=update_fn)
    if fmt is NeighborListFormat.Dense:
        s_count = shifts.shape[0]
        per_atom = valid.transpose(1, 0, 2).reshape(n, s_count * n)
        d2_atom = d2.transpose(1, 0, 2).reshape(n, s_count * n)
        order = jnp.argsort(jnp.where(per_atom, d2_atom, jnp.inf), axis=-1)[:, :capacity]
        ok = jnp.take_along_axis(per_atom, order, axis=-1)
        return NeighborListMultiImage(
            idx=jnp.where(ok, order % n, n),
            shifts=jnp.where(ok[:, :, None], shifts[order // n], 0),
            did_buffer_overflow=jnp.any(jnp.sum(per_atom, axis=-1) > capacity), **common)
    if fmt is NeighborListFormat.OrderedSparse:
        zero = jnp.all(shifts == 0, axis=1)
        upper = jnp.arange(n)[:, None] < jnp.arange(n)[None, :]
        valid = valid & jnp.where(zero[:, None, None], upper[None],
                                  _canonical(shifts)[:, None, None])
    receivers, senders, edge_shifts, overflow = _to_sparse(valid, shifts, capacity)
    return NeighborListMultiImage(idx=(receivers, senders), shifts=edge_shifts,
                                  did_buffer_overflow=overflow, **common)


def _sphere_volume(r: float, dim: int) -> float:
    return {3: 4.0 / 3.0 * onp.pi * r ** 3, 2: onp.pi * r ** 2, 1: 2.0 * r}[dim]


def estimate_max_neighbors(r_cutoff: float, atomic_density: float = 0.1,
                           safety_factor: float = 2.0, dim: int = 3) -> int:
    """A neighbor-count estimate: ``safety_factor * density * volume(r_cutoff)`` rounded up,
    at least 1 (0 for a non-positive cutoff).

    Example:
        >>> estimate_max_neighbors(3.0, atomic_density=0.1)
        23
    """
    if r_cutoff <= 0:
        return 0
    if dim > 3:
        raise ValueError(f"dim must be 1, 2, or 3, got {dim}")
    return max(int(onp.ceil(safety_factor * atomic_density * _sphere_volume(r_cutoff, dim))),
               1)


def estimate_max_neighbors_from_box(box: Array, r_cutoff: float, n_atoms: int,
                                    safety_factor: float = 2.0, pbc: Array | None = None) -> int:
    """``estimate_max_neighbors`` with the density of ``n_atoms`` in ``box`` (non-periodic
    directions cap the radius at the box length).

    Example:
        >>> estimate_max_neighbors_from_box(jnp.eye(3) * 10.0, 3.0, 100)
        23
    """
    if r_cutoff <= 0:
        return 0
    box = onp.asarray(box, dtype=onp.float64)
    dim = box.shape[0]
    if dim > 3:
        raise ValueError(f"dim must be 1, 2, or 3, got {dim}")
    pbc = onp.ones(dim, bool) if pbc is None else onp.asarray(pbc)
    density = n_atoms / float(abs(onp.linalg.det(box)))
    r_eff = float(onp.min(onp.where(pbc, r_cutoff,
                                    onp.minimum(r_cutoff, onp.linalg.norm(box, axis=0)))))
    return max(int(onp.ceil(safety_factor * density * _sphere_volume(r_eff, dim))), 1)


def neighbor_list_multi_image(displacement_or_metric: Any, box: Array, r_cutoff: float,
                              dr_threshold: float = 0.0, capacity_multiplier: float = 1.25,
                              pbc: Array | None = None, fractional_coordinates: bool = True,
                              ordered: bool = False,
                              format: NeighborListFormat = NeighborListFormat.Sparse,  # noqa: A002
                              **kwargs: Any) -> NeighborListMultiImageFns:
    """Multi-image neighbor list functions for a (general, triclinic) periodic ``box``
    (columns are lattice vectors; ``pbc`` selects periodic directions). The displacement
    argument is ignored (images are explicit). ``update`` rebuilds unless ``dr_threshold`` > 0
    and no atom moved more than half of it; ``did_buffer_overflow`` says to re-allocate.

    Example::

        allocate, update = neighbor_list_multi_image(None, box, r_cutoff=3.0)
        nbrs = allocate(fractional_positions)
        nbrs = update(new_fractional_positions, nbrs)
    """
    del displacement_or_metric, kwargs
    default_box = jnp.asarray(box)
    dim = default_box.shape[0]
    dense = format is NeighborListFormat.Dense
    fmt = (NeighborListFormat.Dense if dense else
           NeighborListFormat.OrderedSparse if ordered or format is NeighborListFormat.OrderedSparse
           else NeighborListFormat.Sparse)
    pbc = jnp.ones(dim, dtype=bool) if pbc is None else jnp.asarray(pbc)
    cutoff = r_cutoff + dr_threshold
    num_shifts = _shift_stencil(default_box, cutoff, pbc).shape[0]
    builders: dict = {}

    def builder(capacity: int) -> Callable:
        if capacity not in builders:
            builders[capacity] = jit(lambda pos, bx, shifts: _build(
                pos, bx, shifts, cutoff, capacity, fractional_coordinates, fmt, update))
        return builders[capacity]

    def first_capacity(n: int) -> int:
        est = estimate_max_neighbors_from_box(default_box, cutoff, n, safety_factor=5.0, pbc=pbc)
        per_atom = max(int(est * capacity_multiplier), num_shifts)
        if dense:
            return per_atom
        return n * per_atom // 2 + n if fmt is NeighborListFormat.OrderedSparse else n * per_atom

    def allocate(position: Array, extra_capacity: int = 0, box: Array | None = None,
                 **kwargs: Any) -> NeighborListMultiImage:
        position = jnp.asarray(position)
        n = position.shape[0]
        extra = extra_capacity if dense else n * extra_capacity
        bx = jnp.asarray(box) if box is not None else default_box
        shifts = _shift_stencil(bx, cutoff, pbc)
        cap = first_capacity(n) + extra
        while True:
            probe = builder(cap)(position, bx, shifts)
            if not bool(probe.did_buffer_overflow):
                break
            cap *= 2
        filled = probe.idx if dense else probe.idx[0]
        occupancy = int(jnp.max(jnp.sum(filled < n, axis=1))) if dense else int(
            jnp.sum(filled < n))
        size = max(int(occupancy * capacity_multiplier) + extra, 1)
        return probe if size == cap else builder(size)(position, bx, shifts)

    def moved_too_far(position: Array, nbrs: NeighborListMultiImage, bx: Array) -> Array:
        if fractional_coordinates:
            new, old = position @ bx.T, nbrs.reference_position @ nbrs.reference_box.T
        else:
            new, old = position, nbrs.reference_position
        atom = jnp.sqrt(jnp.max(jnp.sum((new - old) ** 2, axis=-1)))
        shift = nbrs.search_shifts.astype(bx.dtype) @ (bx - nbrs.reference_box).T
        return 2.0 * atom + jnp.sqrt(jnp.max(jnp.sum(shift ** 2, axis=-1))) >= dr_threshold

    def update(position: Array, neighbors: NeighborListMultiImage | None = None,
               **kwargs: Any) -> NeighborListMultiImage:
        position = jnp.asarray(position)
        if neighbors is None:
            return allocate(position, **kwargs)
        position = position.astype(neighbors.reference_position.dtype)
        bx = jnp.asarray(kwargs.get("box", neighbors.box))
        have = jnp.max(jnp.abs(neighbors.search_shifts), axis=0).astype(i32)
        stencil_overflow = jnp.any(_shift_n_max(bx, cutoff, pbc) > have)
        build = builder(neighbors.max_occupancy)

        def rebuild(pos: Array) -> NeighborListMultiImage:
            new = build(pos, bx, neighbors.search_shifts)
            return dataclasses.replace(
                new, did_buffer_overflow=new.did_buffer_overflow | stencil_overflow)

        if dr_threshold > 0:
            return lax.cond(stencil_overflow | moved_too_far(position, neighbors, bx), rebuild,
                            lambda pos: dataclasses.replace(neighbors, box=bx), position)
        return rebuild(position)

    return NeighborListMultiImageFns(allocate, update)


def neighbor_list_multi_image_mask(neighbors: NeighborListMultiImage) -> Array:
    """``[capacity]`` booleans: which entries of a sparse multi-image list are edges.

    Example: ``mask = neighbor_list_multi_image_mask(nbrs)``.
    """
    return neighbors.idx[0] < len(neighbors.reference_position)
