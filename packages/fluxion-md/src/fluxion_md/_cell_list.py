"""Cell lists, as ``jax_md.partition``'s: particles binned into cells no smaller than a minimum
size, each cell a fixed number of slots (:func:`cell_list`, :class:`CellList`,
:func:`count_cell_filling`). :mod:`fluxion_md.partition` re-exports them and draws its neighbor
lists' candidate pairs from a cell list's neighbouring cells (``_cell_candidates``)."""

from __future__ import annotations

import logging
from functools import partial, reduce
from operator import mul
from typing import Any, Callable

import numpy as onp

import fluxion.numpy as jnp
from fluxion import jit
from fluxion_md import dataclasses
from fluxion_md.util import Array, i32, is_array

__all__ = ["CellList", "CellListFns", "cell_list", "count_cell_filling"]


@dataclasses.dataclass
class CellList:
    """Particles binned into a grid of cells of fixed capacity.

    ``position_buffer``: ``[*cells, capacity, dim]``; ``id_buffer``: ``[*cells, capacity, 1]`` (empty
    slots hold ``N``); ``particle_cell_id``: ``[N, dim]`` integer cell coordinates.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition
        >>> cell_fn = partition.cell_list(4.0, minimum_cell_size=2.0)
        >>> cells = cell_fn.allocate(jnp.array([[0.5, 0.5], [1.0, 0.5], [3.0, 3.0]]))
        >>> cells.id_buffer.shape, cells.particle_cell_id.tolist()  # 2 x 2 cells of capacity 2
        ((2, 2, 2, 1), [[0, 0], [0, 0], [1, 1]])
    """
    position_buffer: Array
    id_buffer: Array
    particle_cell_id: Array
    named_buffer: dict[str, Array]
    did_buffer_overflow: Array
    cell_capacity: int = dataclasses.static_field()
    cell_size: Any = dataclasses.static_field()
    update_fn: Callable[..., "CellList"] = dataclasses.static_field()

    def update(self, position: Array, **kwargs: Any) -> "CellList":
        """Rebin ``position`` with this list's capacity (the overflow flag is sticky)."""
        return self.update_fn(position, (self.cell_capacity, self.did_buffer_overflow), **kwargs)

    @property
    def kwarg_buffers(self) -> dict[str, Array]:
        """The old name of ``named_buffer`` (deprecated; logs a warning, as jax_md)."""
        logging.getLogger(__name__).warning(
            "kwarg_buffers renamed to named_buffer. The name kwarg_buffers will be depricated.")
        return self.named_buffer


@dataclasses.dataclass
class CellListFns:
    """``(allocate, update)`` functions of a cell list.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition
        >>> allocate, update = partition.cell_list(4.0, minimum_cell_size=2.0)
        >>> cells = allocate(jnp.array([[0.5, 0.5], [1.0, 0.5], [3.0, 3.0]]))
        >>> update(jnp.array([[3.5, 0.5], [1.0, 0.5], [3.0, 3.0]]), cells).particle_cell_id.tolist()
        [[1, 0], [0, 0], [1, 1]]
    """
    allocate: Callable[..., CellList] = dataclasses.static_field()
    update: Callable[..., CellList] = dataclasses.static_field()

    def __iter__(self) -> Any:
        return iter((self.allocate, self.update))


def _cell_dimensions(dim: int, box_size: Any, minimum_cell_size: Any) -> tuple[Any, Any, Any, int]:
    if isinstance(box_size, (int, float)):
        box_size = float(box_size)
    box_size = onp.asarray(box_size, dtype=onp.float64) if not isinstance(box_size, float) \
        else box_size
    cells_per_side = onp.floor(box_size / minimum_cell_size)
    cell_size = box_size / cells_per_side
    cells_per_side = onp.array(cells_per_side, dtype=onp.int32)
    if onp.ndim(box_size) >= 1:
        flat = onp.reshape(cells_per_side, (-1,))
        if flat.size != dim:
            raise ValueError(f"cell_list: box_size has {flat.size} entries but positions are {dim}-d.")
        if onp.any(flat < 3):
            raise ValueError("cell_list: the box must be at least 3x the cell size along every axis; "
                             f"got {flat.tolist()} cells per side.")
        count = reduce(mul, [int(c) for c in flat], 1)
    else:
        count = int(cells_per_side) ** dim
    return box_size, cell_size, cells_per_side, int(count)


def _hash_multipliers(dim: int, cells_per_side: Any) -> onp.ndarray:
    cps = onp.reshape(onp.asarray(cells_per_side), (-1,))
    if cps.size == 1:
        cps = onp.repeat(cps, dim)
    return onp.cumprod(onp.concatenate([[1], cps[:-1]])).astype(onp.int32)


def _cells_per_side_vector(dim: int, cells_per_side: Any) -> onp.ndarray:
    cps = onp.reshape(onp.asarray(cells_per_side), (-1,)).astype(onp.int32)
    return onp.repeat(cps, dim) if cps.size == 1 else cps


def _particle_cells(position: Array, cell_size: Any, cps: onp.ndarray) -> Array:
    index = jnp.array(position / jnp.asarray(cell_size, position.dtype), dtype=i32)
    return jnp.mod(index, jnp.asarray(cps))


def count_cell_filling(position: Array, box_size: Any, minimum_cell_size: float) -> Array:
    """How many particles fall in each cell of the grid (flat ``[cell_count]``).

    Example:
        >>> int(count_cell_filling(jnp.zeros((4, 2)), 3.0, 1.0).sum())
        4
    """
    dim = int(position.shape[1])
    _, cell_size, cells_per_side, cell_count = _cell_dimensions(dim, box_size, minimum_cell_size)
    cps = _cells_per_side_vector(dim, cells_per_side)
    hashes = jnp.sum(_particle_cells(position, cell_size, cps) * _hash_multipliers(dim, cps), axis=1)
    return jnp.zeros((cell_count,), i32).at[hashes].add(1)


@partial(jit, static_argnums=(2,))
def _cell_filling(position: Array, cell_size: Array, cps: tuple) -> Array:
    cells = _particle_cells(position, cell_size, onp.asarray(cps))
    hashes = jnp.sum(cells * _hash_multipliers(len(cps), onp.asarray(cps)), axis=1)
    return jnp.zeros((int(onp.prod(cps)),), i32).at[hashes].add(1)


@partial(jit, static_argnums=(2, 3))
def _bin_particles(position: Array, cell_size: Array, cps: tuple, capacity: int) -> tuple:
    """Sort particles into ``capacity`` slots per cell (one compiled program per shape)."""
    N, dim = position.shape
    cell_count = int(onp.prod(cps))
    cells = _particle_cells(position, cell_size, onp.asarray(cps))
    hashes = jnp.sum(cells * _hash_multipliers(dim, onp.asarray(cps)), axis=1)
    order = jnp.argsort(hashes)
    sorted_hash = hashes[order]
    # a particle's rank within its cell: its sorted position minus where its cell starts (the
    # exclusive running count of the cells' fillings), O(N + cells) where a searchsorted of
    # the sorted hashes compared every pair (N^2: 16M compares at N = 4000)
    filling = jnp.zeros((cell_count,), i32).at[hashes].add(1)
    start = jnp.cumsum(filling) - filling
    rank = jnp.arange(N, dtype=i32) - start[sorted_hash]
    # within a cell, jax_md's slot: the particle's index in the sorted order modulo capacity
    # (distinct within a cell while it holds at most `capacity`; `rank` detects overflow)
    within = jnp.arange(N, dtype=i32) % capacity
    slot = jnp.where(rank < capacity, sorted_hash * capacity + within, cell_count * capacity)
    pos_buf = jnp.zeros((cell_count * capacity, dim), position.dtype)
    pos_buf = pos_buf.at[slot].set(position[order], mode="drop")
    id_buf = jnp.full((cell_count * capacity, 1), N, i32)
    id_buf = id_buf.at[slot].set(order.astype(i32)[:, None], mode="drop")
    return pos_buf, id_buf, cells, order, slot, jnp.any(rank >= capacity)


@jit
def _cell_candidates(id_buffer: Array, position_buffer: Array, particle_cell_id: Array) -> tuple:
    """Ids and positions of the particles in the 3^d cells around each particle's cell:
    ``[N, 3^d * capacity]`` and ``[N, 3^d * capacity, dim]``. The positions come from the cell
    list's buffer a cell at a time (as jax_md), not one particle at a time from ``position``."""
    N, dim = particle_cell_id.shape
    grid = id_buffer.shape[:dim]
    capacity = id_buffer.shape[dim]
    cps = onp.array(grid[::-1], onp.int32)
    mult = _hash_multipliers(dim, cps)
    shifts = onp.stack(onp.meshgrid(*[onp.arange(-1, 2)] * dim, indexing="ij"), -1)
    shifts = shifts.reshape(-1, dim).astype(onp.int32)
    cells = jnp.mod(particle_cell_id[:, None, :] + shifts[None], jnp.asarray(cps))
    flat = jnp.reshape(jnp.sum(cells * mult, axis=-1), (-1,))
    width = shifts.shape[0] * capacity
    ids = jnp.reshape(jnp.reshape(id_buffer, (-1, capacity))[flat], (N, width))
    pos = jnp.reshape(jnp.reshape(position_buffer, (-1, capacity, dim))[flat], (N, width, dim))
    return ids, pos


def cell_list(box_size: Any, minimum_cell_size: float,
              buffer_size_multiplier: float = 1.25) -> CellListFns:
    """Build ``(allocate, update)`` for a cell list with cells at least ``minimum_cell_size`` wide.

    Example:
        >>> R = jnp.array([[0.5, 0.5], [2.5, 2.5]])
        >>> cl = cell_list(3.0, 1.0).allocate(R)
        >>> cl.id_buffer.shape
        (3, 3, 1, 1)
    """
    if is_array(box_size):
        box_size = onp.array(box_size)
        if box_size.ndim == 2:
            box_size = onp.diag(box_size)
    if onp.any(onp.asarray(box_size) <= 0):
        raise ValueError(f"cell_list: box_size must be positive; got {box_size!r}.")

    def build(position: Array, capacity_and_overflow: Any = None, extra_capacity: int = 0,
              **kwargs: Any) -> CellList:
        N, dim = position.shape
        if dim not in (2, 3):
            raise ValueError(f"cell_list: positions must be 2-d or 3-d; got shape {position.shape}.")
        _, cell_size, cells_per_side, cell_count = _cell_dimensions(dim, box_size, minimum_cell_size)
        cps = tuple(int(c) for c in _cells_per_side_vector(dim, cells_per_side))
        cell_size_arr = jnp.asarray(cell_size, position.dtype)
        if capacity_and_overflow is None:
            filling = onp.asarray(_cell_filling(position, cell_size_arr, cps))
            capacity = int(int(filling.max()) * buffer_size_multiplier) + extra_capacity
            overflow = jnp.zeros((), bool)
        else:
            capacity, overflow = capacity_and_overflow
        pos_buf, id_buf, cells, order, slot, spilled = _bin_particles(position, cell_size_arr, cps,
                                                                      int(capacity))
        shape = cps[::-1] + (capacity,)
        cell_count = int(onp.prod(cps))
        named = {}
        for k, v in kwargs.items():
            if not is_array(v) or v.shape[0] != N:
                raise ValueError(f"cell_list: named data {k!r} must be an array of shape ({N}, ...); "
                                 f"got {getattr(v, 'shape', type(v))}.")
            tail = v.shape[1:] if v.ndim > 1 else (1,)
            buf = jnp.full((cell_count * capacity,) + tail, 10 ** 5, v.dtype)
            buf = buf.at[slot].set(jnp.reshape(v[order], (N,) + tail), mode="drop")
            named[k] = jnp.reshape(buf, shape + tail)
        return CellList(jnp.reshape(pos_buf, shape + (dim,)), jnp.reshape(id_buf, shape + (1,)),
                        cells, named, overflow | spilled, capacity, cell_size, build)

    def allocate_fn(position: Array, extra_capacity: int = 0, **kwargs: Any) -> CellList:
        return build(position, extra_capacity=extra_capacity, **kwargs)

    def update_fn(position: Array, cl_or_capacity: Any, **kwargs: Any) -> CellList:
        if isinstance(cl_or_capacity, int):
            return build(position, (cl_or_capacity, jnp.zeros((), bool)), **kwargs)
        return build(position, (cl_or_capacity.cell_capacity, cl_or_capacity.did_buffer_overflow),
                     **kwargs)

    return CellListFns(allocate_fn, update_fn)


# ----------------------------------------------------------------------------- errors
