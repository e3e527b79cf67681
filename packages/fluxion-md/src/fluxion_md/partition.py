"""Cell lists and neighbor lists (mirrors ``jax_md.partition``).

A neighbor list has a fixed capacity chosen when it is allocated (outside ``jit``); ``update``
keeps that capacity and raises an overflow flag when it is too small. Unlike jax_md, fluxion_md
never lets an overflowed list silently produce wrong energies: energy functions built by
``smap.pair_neighbor_list`` raise when given one outside ``jit`` and return NaN inside, and
:func:`fluxion_md.simulate.run` re-allocates and re-runs automatically.
"""

from __future__ import annotations

import logging
import warnings
from enum import Enum, IntEnum
from functools import partial, reduce
from operator import mul
from typing import Any, Callable, NamedTuple

import numpy as onp

import fluxion
import fluxion.numpy as jnp
from fluxion import jit, lax, tree_util, vmap
from fluxion_md import _sparse_prune, dataclasses, space
from fluxion_md._sparse_prune import _flat_running_count, _running_count
from fluxion_md.util import Array, f32, host_value, i32, is_array, is_concrete, static_float

__all__ = [
    "CellList", "CellListFns", "cell_list", "count_cell_filling", "PartitionErrorCode", "PEC",
    "PartitionError", "NeighborListFormat", "Dense", "Sparse", "OrderedSparse", "is_sparse",
    "is_format_valid", "is_box_valid", "NeighborList", "NeighborListFns", "NeighborFn",
    "neighbor_list", "neighbor_list_mask", "to_dense", "NeighborListOverflowError", "NeighborListCutoffWarning",
    "check_neighbor_list", "GraphsTuple", "to_jraph",
]

MaskFn = Callable[[Array], Array]


class NeighborListCutoffWarning(UserWarning):
    """``neighbor_list``'s cutoff exceeds half the box along a periodic direction: the
    minimum-image list (jax_md's, built anyway) misses the further images.

    Example:
        >>> import warnings, fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> displacement, shift = space.periodic(4.0)
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     _ = partition.neighbor_list(displacement, 4.0, r_cutoff=2.5).allocate(jnp.zeros((2, 2)))
        >>> [w.category.__name__ for w in caught]
        ['NeighborListCutoffWarning']
    """


class NeighborListOverflowError(RuntimeError):
    """A neighbor or cell list was used after its fixed capacity overflowed.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> displacement, shift = space.periodic(4.0)
        >>> neighbor_fn = partition.neighbor_list(displacement, 4.0, r_cutoff=1.0, capacity_multiplier=1.0)
        >>> nbrs = neighbor_fn.allocate(jnp.array([[0.5, 0.5], [3.0, 3.0]]))
        >>> nbrs = nbrs.update(jnp.array([[0.5, 0.5], [1.0, 0.5]]))  # now a pair: past the capacity
        >>> try:
        ...     partition.check_neighbor_list(nbrs)
        ... except partition.NeighborListOverflowError as e:
        ...     print(type(e).__name__)
        NeighborListOverflowError
    """


# ----------------------------------------------------------------------------- cell lists

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

class PartitionErrorCode(IntEnum):
    """Bits of :class:`PartitionError`.

    Example:
        >>> from fluxion_md import partition
        >>> int(partition.PartitionErrorCode.NEIGHBOR_LIST_OVERFLOW), int(partition.PartitionErrorCode.CELL_SIZE_TOO_SMALL)
        (1, 4)
    """
    NONE = 0
    NEIGHBOR_LIST_OVERFLOW = 1 << 0
    CELL_LIST_OVERFLOW = 1 << 1
    CELL_SIZE_TOO_SMALL = 1 << 2
    MALFORMED_BOX = 1 << 3


PEC = PartitionErrorCode


@dataclasses.dataclass
class PartitionError:
    """A ``uint8`` bit set of :class:`PartitionErrorCode` (jit-friendly).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition
        >>> err = partition.PartitionError(jnp.zeros((), jnp.uint8))
        >>> err = err.update(partition.PartitionErrorCode.CELL_LIST_OVERFLOW, jnp.array(True))
        >>> int(err.code), str(err)
        (2, 'Partition Error: Cell list buffer overflow')
    """
    code: Array

    def update(self, bit: int, pred: Array) -> "PartitionError":
        """Set ``bit`` where ``pred`` holds."""
        bit = jnp.array(int(bit), dtype=jnp.uint8)
        return PartitionError(self.code | jnp.where(pred, bit, jnp.zeros((), jnp.uint8)))

    def __str__(self) -> str:
        code = int(self.code)
        if code == 0:
            return ""
        if code & PEC.NEIGHBOR_LIST_OVERFLOW:
            return "Partition Error: Neighbor list buffer overflow."
        if code & PEC.CELL_LIST_OVERFLOW:
            return "Partition Error: Cell list buffer overflow"
        if code & PEC.CELL_SIZE_TOO_SMALL:
            return "Partition Error: Cell size too small"
        return "Partition Error: Incorrect box format. Expecting upper triangular."

    __repr__ = __str__


# ----------------------------------------------------------------------------- neighbor lists

class NeighborListFormat(Enum):
    """Dense ``[N, max_neighbors]``; Sparse ``[2, capacity]`` (both directions);
    OrderedSparse ``[2, capacity]`` (each pair once, ``idx[0] < idx[1]``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> displacement, shift = space.periodic(4.0)
        >>> R = jnp.array([[0.5, 0.5], [1.0, 0.5], [3.0, 3.0]])
        >>> for fmt in partition.NeighborListFormat:
        ...     nbrs = partition.neighbor_list(displacement, 4.0, 1.0, format=fmt).allocate(R)
        ...     print(fmt.name, nbrs.idx.tolist())
        Dense [[1], [0], [3]]
        Sparse [[1, 0], [0, 1]]
        OrderedSparse [[0], [1]]
    """
    Dense = 0
    Sparse = 1
    OrderedSparse = 2


Dense = NeighborListFormat.Dense
Sparse = NeighborListFormat.Sparse
OrderedSparse = NeighborListFormat.OrderedSparse


def is_sparse(fmt: NeighborListFormat) -> bool:
    """Whether ``fmt`` is ``Sparse`` or ``OrderedSparse``.

    Example:
        >>> is_sparse(OrderedSparse)
        True
    """
    return fmt is Sparse or fmt is OrderedSparse


def is_format_valid(fmt: NeighborListFormat) -> None:
    """Raise ``ValueError`` unless ``fmt`` is a :class:`NeighborListFormat`.

    Example:
        >>> is_format_valid(Dense)
    """
    if fmt not in list(NeighborListFormat):
        raise ValueError(f"neighbor_list: format must be a NeighborListFormat; got {fmt!r}.")


def is_box_valid(box: Array) -> Any:
    """Whether ``box`` is a scalar, a vector, or an upper-triangular matrix.

    Example:
        >>> bool(is_box_valid(jnp.eye(3)))
        True
    """
    box = jnp.asarray(box)
    if box.ndim <= 1:
        return True
    if box.ndim == 2:
        return jnp.all(jnp.triu(box) == box)
    return False


@dataclasses.dataclass
class NeighborList:
    """A fixed-capacity neighbor list.

    ``idx``: ``[N, max_occupancy]`` (Dense) or ``[2, max_occupancy]`` (sparse; row 0 the
    neighbor, row 1 the centre); empty slots hold ``N``. ``reference_position``: positions at the
    last rebuild. ``error``: a :class:`PartitionError`.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> displacement, shift = space.periodic(4.0)
        >>> neighbor_fn = partition.neighbor_list(displacement, 4.0, r_cutoff=1.0)
        >>> nbrs = neighbor_fn.allocate(jnp.array([[0.5, 0.5], [1.0, 0.5], [3.0, 3.0]]))
        >>> nbrs.idx.tolist(), nbrs.format.name, bool(nbrs.did_buffer_overflow)
        ([[1], [0], [3]], 'Dense', False)
        >>> nbrs = nbrs.update(jnp.array([[0.5, 0.5], [2.5, 2.5], [0.5, 1.2]]))  # 2 moved next to 0
        >>> nbrs.idx.tolist(), bool(nbrs.did_buffer_overflow)
        ([[2], [3], [0]], False)
    """
    idx: Array
    reference_position: Array
    error: PartitionError
    cell_list_capacity: int | None = dataclasses.static_field()
    max_occupancy: int = dataclasses.static_field()
    format: NeighborListFormat = dataclasses.static_field()
    cell_size: Any = dataclasses.static_field()
    cell_list_fn: Any = dataclasses.static_field()
    update_fn: Callable[..., "NeighborList"] = dataclasses.static_field()

    def update(self, position: Array, **kwargs: Any) -> "NeighborList":
        """Rebuild (when particles moved more than ``dr_threshold / 2``) with the same capacity."""
        return self.update_fn(position, self, **kwargs)

    @property
    def did_buffer_overflow(self) -> Array:
        """Non-zero when the neighbor or the cell list ran out of capacity."""
        return self.error.code & (PEC.NEIGHBOR_LIST_OVERFLOW | PEC.CELL_LIST_OVERFLOW)

    @property
    def cell_size_too_small(self) -> Array:
        """Non-zero when a box change made the cells too small for the cutoff."""
        return self.error.code & PEC.CELL_SIZE_TOO_SMALL

    @property
    def malformed_box(self) -> Array:
        """Non-zero when a box was not upper triangular."""
        return self.error.code & PEC.MALFORMED_BOX


@dataclasses.dataclass
class NeighborListFns:
    """``(allocate, update)``; ``allocate(R, extra_capacity=0)`` runs outside ``jit``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> displacement, shift = space.periodic(4.0)
        >>> neighbor_fn = partition.neighbor_list(displacement, 4.0, r_cutoff=1.0)
        >>> allocate, update = neighbor_fn
        >>> R = jnp.array([[0.5, 0.5], [1.0, 0.5], [3.0, 3.0]])
        >>> nbrs = neighbor_fn(R)  # with no list, calling it allocates one
        >>> neighbor_fn(R, nbrs).idx.tolist() == update(R, nbrs).idx.tolist() == nbrs.idx.tolist()
        True
    """
    allocate: Callable[..., NeighborList] = dataclasses.static_field()
    update: Callable[..., NeighborList] = dataclasses.static_field()

    def __call__(self, position: Array, neighbors: NeighborList | None = None,
                 extra_capacity: int = 0, **kwargs: Any) -> NeighborList:
        if neighbors is None:
            return self.allocate(position, extra_capacity, **kwargs)
        return self.update(position, neighbors, **kwargs)

    def __iter__(self) -> Any:
        return iter((self.allocate, self.update))


NeighborFn = NeighborListFns


def check_neighbor_list(neighbor: NeighborList, where: str = "energy") -> Array:
    """Raise :class:`NeighborListOverflowError` if ``neighbor`` overflowed and its flag is known now.

    Inside ``jit`` the flag is not known yet: the result is a factor (1, or NaN when overflowed)
    that callers multiply into what they compute, so an overflowed list never gives silently
    wrong numbers.

    Example:
        >>> import fluxion
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> R = jnp.array([[1.0, 1.0], [2.0, 1.0], [1.0, 2.2], [5.0, 5.0]])
        >>> displacement, _ = space.periodic(10.0)
        >>> nbrs = partition.neighbor_list(displacement, 10.0, 1.5).allocate(R)
        >>> partition.check_neighbor_list(nbrs) is None  # concrete and complete
        True
        >>> crowded = nbrs.update(jnp.array([[1.0, 1.0], [1.1, 1.0], [1.0, 1.1], [1.1, 1.1]]))
        >>> try:
        ...     partition.check_neighbor_list(crowded)
        ... except partition.NeighborListOverflowError:
        ...     print("overflowed")
        overflowed
        >>> check = fluxion.jit(partition.check_neighbor_list)  # under jit: a factor
        >>> float(check(nbrs)), float(check(crowded))
        (1.0, nan)
    """
    code = neighbor.error.code
    bad = (code & jnp.array(int(PEC.NEIGHBOR_LIST_OVERFLOW | PEC.CELL_LIST_OVERFLOW), jnp.uint8)) != 0
    if is_concrete(code):
        if bool(bad):
            raise NeighborListOverflowError(
                f"{where}: the neighbor list overflowed its capacity ({neighbor.max_occupancy}); "
                "its neighbors are incomplete. Re-allocate it with neighbor_fn.allocate(R) (or run "
                "through fluxion_md.simulate.run, which does this automatically).")
        return None
    return jnp.where(bad, jnp.nan, 1.0)


def _metric_sq(displacement_or_metric: Callable) -> Callable:
    """Squared distances from a displacement (``square_distance`` of it: no square root, so
    a neighbor list's rebuild and update programs hold none) or from a metric (squared), as
    jax_md's ``_displacement_or_metric_to_metric_sq``."""
    if space._returns_scalar(displacement_or_metric, "neighbor_list"):
        return lambda Ra, Rb, **kw: displacement_or_metric(Ra, Rb, **kw) ** 2
    return lambda Ra, Rb, **kw: space.square_distance(displacement_or_metric(Ra, Rb, **kw))


def _fractional_cell_size(box: Any, cutoff: Any) -> Any:
    box = onp.asarray(box, dtype=onp.float64)
    if box.ndim == 0:
        return cutoff / box
    if box.ndim == 1:
        return cutoff / onp.min(box)
    widths = 1.0 / onp.linalg.norm(onp.linalg.inv(box), axis=1)
    n = onp.floor(onp.min(widths) / cutoff)
    return 1.0 / max(n, 1.0)


def _traced_fractional_cell_size(box: Any, cutoff: Any) -> Any:
    # _fractional_cell_size for a box that may be traced (update(..., box=) under jit)
    box = jnp.asarray(box)
    if box.ndim == 0:
        return cutoff / box
    if box.ndim == 1:
        return cutoff / jnp.min(box)
    widths = 1.0 / jnp.linalg.norm(jnp.linalg.inv(box), axis=1)
    return 1.0 / jnp.maximum(jnp.floor(jnp.min(widths) / cutoff), 1.0)


def _cells_of(cell_size: Any) -> Any:
    # the size of the cells a unit (fractional) box is cut into for a minimum cell size
    return 1.0 / jnp.floor(1.0 / jnp.asarray(cell_size))


def _perpendicular_widths(box: Any, dim: int) -> onp.ndarray:
    box = onp.asarray(box, dtype=onp.float64)
    if box.ndim == 0:
        return onp.full((dim,), float(box))
    if box.ndim == 1:
        return box
    return 1.0 / onp.linalg.norm(onp.linalg.inv(box), axis=1)


#: The most elements of a concrete neighbor list that :func:`_with_width` cuts or pads on the
#: host (64 MiB of int32): its round trip there costs less than the XLA compile of the eager
#: slice (CPU: 0.2 ms for 250,000 elements, 4 ms for 32M, vs ~30 ms to compile the slice; a
#: TPU's compile is 50-300 ms), and a larger list is cut on its device.
_HOST_WIDTH_MAX = 1 << 24


def _with_width(idx: Array, width: int, fill: int) -> Array:
    """``idx`` with ``width`` columns: its first ones, or all of them then ``fill``.

    ``allocate`` fixes the list's width once the occupancy is read back; an eager slice there
    would be one more program to compile, so a concrete list of at most
    :data:`_HOST_WIDTH_MAX` elements on one device is cut (padded) on the host and put back where
    it was. The same values either way; a tracer is sliced in its trace."""
    have = idx.shape[-1]
    if width == have:
        return idx
    host = host_value(idx) if idx.size <= _HOST_WIDTH_MAX else None
    if host is None or len(idx.devices()) != 1:
        if width > have:
            idx = jnp.concatenate([idx, jnp.full(idx.shape[:-1] + (width - have,), fill, i32)],
                                  axis=-1)
        return idx[..., :width]
    if width > have:
        host = onp.concatenate([host, onp.full(host.shape[:-1] + (width - have,), fill, i32)],
                               axis=-1)
    host = onp.ascontiguousarray(host[..., :width])
    return fluxion.device_put(host, idx.sharding) if idx.committed else jnp.asarray(host)


def _traced_cutoff_error(method: str, need: str) -> Exception:
    return fluxion.errors.TracerBoolConversionError(
        f"neighbor_list.{method}: r_cutoff or dr_threshold is traced (inside jit or vmap), and "
        f"{need} needs its value, as in jax_md (which raises TracerBoolConversionError there). "
        "Allocate the list with concrete parameters outside the transformation; inside it, "
        "update with a concrete dr_threshold and evaluate the energy with traced ones.")


def _check_cutoff(metric_sq: Callable, box: Any, r_cutoff: float | None,
                  fractional: bool) -> None:
    """Raise for a non-positive box; warn when ``r_cutoff`` exceeds half the box along a
    periodic direction (the minimum-image list then misses interactions, as jax_md's does;
    a traced ``r_cutoff``, None, is not checked)."""
    box_np = onp.asarray(box, dtype=onp.float64)
    if onp.any(box_np <= 0) and box_np.ndim < 2:
        raise ValueError(f"neighbor_list: box must be positive; got box={box_np.tolist()}.")
    if box_np.ndim == 2 and onp.linalg.det(box_np) <= 0:
        raise ValueError("neighbor_list: box must be a matrix with positive determinant; "
                         f"got box={box_np.tolist()}.")
    for dim in (3, 2, 1) if r_cutoff is not None else ():
        if box_np.ndim >= 1 and box_np.shape[0] != dim:
            continue
        widths = _perpendicular_widths(box_np, dim)
        # only an axis narrower than twice the cutoff can warn: where there is none, the
        # metric is not evaluated (each eager op would be an XLA compile, ~0.1 s on a TPU)
        short = [k for k in range(dim) if r_cutoff > 0.5 * widths[k] * (1 + 1e-6)]
        if not short:
            return
        try:
            for k in short:
                frac = onp.zeros(dim)
                frac[k] = 0.75
                if box_np.ndim == 2:
                    real = box_np @ frac
                else:
                    real = frac * (box_np if box_np.ndim == 1 else float(box_np))
                probe = frac if fractional else real
                d = float(jnp.sqrt(metric_sq(jnp.zeros(dim, f32), jnp.asarray(probe, f32))))
                if d < 0.7 * onp.linalg.norm(real):  # periodic along axis k
                    too_large = (k, 0.5 * widths[k])
                    break
            else:
                return
        except (TypeError, ValueError):
            continue
        # as jax_md: the minimum-image list is built; unlike jax_md, say what it misses
        warnings.warn(
            f"neighbor_list: r_cutoff={r_cutoff} is larger than half the box ({too_large[1]}) "
            f"along axis {too_large[0]}; the minimum-image list misses the further periodic "
            "images (as jax_md's). Use a larger box, a smaller r_cutoff, or "
            "custom_partition.neighbor_list_multi_image.", NeighborListCutoffWarning, stacklevel=3)
        return


def neighbor_list(displacement_or_metric: Callable, box: Any, r_cutoff: float,
                  dr_threshold: float = 0.0, capacity_multiplier: float = 1.25,
                  disable_cell_list: bool = False, mask_self: bool = True,
                  custom_mask_function: MaskFn | None = None,
                  fractional_coordinates: bool = False,
                  format: NeighborListFormat = NeighborListFormat.Dense,
                  **static_kwargs: Any) -> NeighborListFns:
    """Neighbor lists of all pairs closer than ``r_cutoff + dr_threshold``.

    ``allocate(R, extra_capacity=0)`` (outside ``jit``) sizes the list to the current neighbor
    count times ``capacity_multiplier`` (or exactly ``capacity=``, and ``cell_capacity=`` for
    the cell list, beyond jax_md); ``update(R, nbrs)`` (jittable) rebuilds it only when some
    particle moved more than ``dr_threshold / 2``. Uses a cell list when the box holds at least 3
    cells per side. As in jax_md, ``r_cutoff`` and ``dr_threshold`` may be traced (an energy's
    sigma or cutoff under ``jit``/``vmap``): ``update`` prunes with the traced cutoff (given a
    concrete ``dr_threshold``), while ``allocate`` raises TracerBoolConversionError.

    Example:
        >>> displacement, _ = space.periodic(10.0)
        >>> fn = neighbor_list(displacement, 10.0, 1.5)
        >>> nbrs = fn.allocate(jnp.array([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]]))
        >>> nbrs.idx.shape
        (3, 1)
    """
    is_format_valid(format)
    if isinstance(box, (int, float)) or is_concrete(box):
        box = onp.asarray(box, dtype=onp.float64)
    if onp.any(onp.asarray(box) <= 0) and onp.ndim(box) < 2:
        raise ValueError(f"neighbor_list: box must be positive; got box={onp.asarray(box).tolist()}.")
    # numbers where their values are known (grad's tracers too); a jit/vmap tracer stays traced,
    # as in jax_md, without a gradient through the list: allocate then raises (cell list and
    # capacity need numbers), update and the energies work
    r_static, dr_static = static_float(r_cutoff), static_float(dr_threshold)
    traced = r_static is None or dr_static is None
    r_cutoff = lax.stop_gradient(r_cutoff) if r_static is None else r_static
    dr_threshold = lax.stop_gradient(dr_threshold) if dr_static is None else dr_static
    if not traced and r_cutoff <= 0:
        raise ValueError(f"neighbor_list: r_cutoff must be positive; got {r_cutoff}.")
    always_rebuild = dr_threshold == 0
    cutoff = r_cutoff + dr_threshold
    cutoff_sq = cutoff ** 2
    threshold_sq = (dr_threshold / 2) ** 2
    metric_sq = _metric_sq(displacement_or_metric)
    _check_cutoff(metric_sq, box, r_static, fractional_coordinates)

    def candidates(cl: CellList | None) -> tuple[Array | None, Array | None]:
        if cl is None:
            return None, None  # every pair: prune builds the ids in its own program
        return _cell_candidates(cl.id_buffer, cl.position_buffer, cl.particle_cell_id)

    def prune(position: Array, idx: Array | None, neigh: Array | None, capacity: int | None,
              kwargs: dict) -> tuple[Any, Any]:
        # ``idx``: the candidates' ids (from the cell list), else every particle's;
        # ``neigh``: the candidates' positions (from the cell list), else read from ``position``
        N = position.shape[0]
        centre = jnp.arange(N, dtype=i32)[:, None]
        if idx is None:
            idx = jnp.broadcast_to(jnp.arange(N, dtype=i32)[None, :], (N, N))
        if neigh is None:
            neigh = position[jnp.minimum(idx, N - 1)]
        d2 = vmap(vmap(partial(metric_sq, **kwargs), (None, 0)))(position, neigh)
        mask = (d2 < cutoff_sq) & (idx < N)
        if mask_self:
            mask = mask & (idx != centre)
        if custom_mask_function is not None:
            idx = custom_mask_function(jnp.where(mask, idx, N))
            mask = mask & (idx < N)
        if format is OrderedSparse:
            mask = mask & (idx < centre)
        if not is_sparse(format):
            count = jnp.cumsum(mask, axis=1)
            occupancy = jnp.max(count[:, -1]) if N else jnp.zeros((), i32)
            width = idx.shape[1] if capacity is None else capacity
            col = jnp.where(mask, count - 1, width)
            out = jnp.full((N, width), N, i32)
            out = out.at[jnp.broadcast_to(centre, idx.shape), col].set(idx, mode="drop")
            return out, occupancy
        flat_mask = jnp.reshape(mask, (-1,))
        count = _flat_running_count(mask)  # jax_md: jnp.cumsum(flat_mask), the same values
        occupancy = count[-1]
        width = flat_mask.shape[0] if capacity is None else capacity
        pos = jnp.where(flat_mask, count - 1, width)
        neigh = jnp.full((width,), N, i32).at[pos].set(jnp.reshape(idx, (-1,)), mode="drop")
        return jnp.stack((neigh, _sparse_prune.slot_rows(jnp.sum(mask, axis=1, dtype=i32),
                                                         width))), occupancy

    prune_jit = jit(prune, static_argnums=(3,))
    cell_fns: dict[str, Any] = {}  # the last cell list made by allocate, and its box and cells

    def prune_blocks(position: Array, cl: CellList, capacity: int | None, kwargs: dict,
                     block: int) -> tuple[Any, Any]:
        return _sparse_prune.prune_blocks(position, cl, capacity, block, partial(
            metric_sq, **kwargs), cutoff_sq, mask_self, format is OrderedSparse,
            _cell_candidates)

    prune_blocks_jit = jit(prune_blocks, static_argnums=(2, 4))

    def build(position: Array, err: PartitionError, previous: NeighborList | None,
              extra_capacity: int, kwargs: dict, capacity: int | None = None,
              cell_capacity: int | None = None) -> NeighborList:
        N = position.shape[0]
        cl = cl_fn = cell_size = None
        if not disable_cell_list:
            if previous is None:
                if traced:
                    raise _traced_cutoff_error("allocate", "sizing the cell list")
                _box = kwargs.get("box", box)
                cell_size = cutoff
                if fractional_coordinates:
                    err = err.update(PEC.MALFORMED_BOX, ~jnp.asarray(is_box_valid(_box)))
                    cell_size = _fractional_cell_size(_box, cutoff)
                    _box = 1.0
                # As jax_md: every entry of the box, so a box matrix (real coordinates, whose
                # off-diagonal zeros fail the test) gets no cell list (all pairs, N^2).
                if position.shape[1] in (2, 3) and onp.all(
                        onp.asarray(cell_size) < onp.asarray(_box) / 3.0):
                    key = tuple(onp.asarray(v, onp.float64).tobytes() for v in (_box, cell_size))
                    if cell_fns.get("key") != key:  # the same one for the same cells (not jax_md):
                        # a list re-allocated to the same shapes then needs no new trace of a jit
                        cell_fns.update(key=key, fns=cell_list(_box, cell_size, capacity_multiplier))
                    cl_fn = cell_fns["fns"]
                    if cell_capacity is None:
                        cl = cl_fn.allocate(position, extra_capacity=extra_capacity)
                    else:
                        cl = cl_fn.update(position, int(cell_capacity))
            else:
                cell_size, cl_fn = previous.cell_size, previous.cell_list_fn
                if cl_fn is not None:
                    cl = cl_fn.update(position, previous.cell_list_capacity)
        if cl is not None:
            err = err.update(PEC.CELL_LIST_OVERFLOW, cl.did_buffer_overflow)
        requested = capacity
        capacity = None if previous is None else previous.max_occupancy
        block = None
        if cl is not None and is_sparse(format) and custom_mask_function is None:
            block = _sparse_prune.block_rows(position, cl.id_buffer.shape[position.shape[1]])
        if block is not None:
            idx, occupancy = prune_blocks_jit(position, cl, capacity, kwargs, block)
        else:
            idx, neigh = candidates(cl)
            idx, occupancy = prune_jit(position, idx, neigh, capacity, kwargs)
        if previous is None and requested is not None:
            capacity = int(requested)
            idx = _with_width(idx, capacity, N)
            update_fn = neighbor_list_fn
        elif previous is None:
            extra = extra_capacity if not is_sparse(format) else N * extra_capacity
            capacity = int(int(occupancy) * capacity_multiplier + extra)
            if format is Dense:
                limit = N - 1 if mask_self else N
            elif format is Sparse:
                limit = N * (N - 1) if mask_self else N * N
            else:
                limit = N * (N - 1) // 2
            capacity = min(capacity, limit, idx.shape[-1])
            idx = _with_width(idx, capacity, N)
            update_fn = neighbor_list_fn
        else:
            update_fn = previous.update_fn
        err = err.update(PEC.NEIGHBOR_LIST_OVERFLOW, occupancy > capacity)
        return NeighborList(idx, position, err, None if cl is None else cl.cell_capacity,
                            capacity, format, cell_size, cl_fn, update_fn)

    def neighbor_list_fn(position: Array, neighbors: NeighborList | None = None,
                         extra_capacity: int = 0, capacity: int | None = None,
                         cell_capacity: int | None = None, **kwargs: Any) -> NeighborList:
        if position.ndim != 2:
            raise ValueError("neighbor_list: positions must have shape [N, spatial_dim]; "
                             f"got {position.shape}.")
        if neighbors is None:
            return build(position, PartitionError(jnp.zeros((), jnp.uint8)), None,
                         extra_capacity, kwargs, capacity, cell_capacity)
        if "box" in kwargs and not fractional_coordinates and not disable_cell_list:
            raise ValueError("neighbor_list.update: a box keyword needs fractional_coordinates=True.")
        err = neighbors.error
        if "box" in kwargs:
            err = err.update(PEC.MALFORMED_BOX, ~jnp.asarray(is_box_valid(kwargs["box"])))
            if neighbors.cell_list_fn is not None and fractional_coordinates:
                # as jax_md: a box that shrank below the cells' size (cells fixed at allocate)
                current = _cells_of(neighbors.cell_size)
                new = _cells_of(_traced_fractional_cell_size(kwargs["box"], cutoff))
                err = err.update(PEC.CELL_SIZE_TOO_SMALL, jnp.any(new > current))
            neighbors = neighbors.set(error=err)
        rebuild = partial(build, previous=neighbors, extra_capacity=0, kwargs=kwargs)
        if not isinstance(always_rebuild, bool):  # a traced dr_threshold
            raise _traced_cutoff_error("update", "deciding whether to rebuild every step "
                                       "(dr_threshold == 0)")
        if always_rebuild:
            return rebuild(position, err)
        moved = vmap(partial(metric_sq, **kwargs))(position, neighbors.reference_position)
        return lax.cond(jnp.any(moved > threshold_sq),
                        lambda ops: rebuild(*ops), lambda ops: neighbors, (position, err))

    def allocate_fn(position: Array, extra_capacity: int = 0, *, capacity: int | None = None,
                    cell_capacity: int | None = None, **kwargs: Any) -> NeighborList:
        # ``capacity`` / ``cell_capacity`` (beyond jax_md) fix the list and cell-list sizes.
        return neighbor_list_fn(position, extra_capacity=extra_capacity, capacity=capacity,
                                cell_capacity=cell_capacity, **kwargs)

    def update_fn(position: Array, neighbors: NeighborList, **kwargs: Any) -> NeighborList:
        return neighbor_list_fn(position, neighbors, **kwargs)

    return NeighborListFns(allocate_fn, update_fn)


def neighbor_list_mask(neighbor: NeighborList, mask_self: bool = False) -> Array:
    """Boolean mask of the occupied slots of ``neighbor.idx`` (optionally without self pairs).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, partition, smap, space
        >>> displacement, shift = space.periodic(4.0)
        >>> R = jnp.array([[0.5, 0.5], [1.3, 0.5], [3.0, 3.0]])
        >>> neighbor_fn = partition.neighbor_list(displacement, 4.0, r_cutoff=1.5)
        >>> nbrs = neighbor_fn.allocate(R)
        >>> partition.neighbor_list_mask(nbrs).sum().tolist()   # both directions of the one close pair
        2
    """
    N = len(neighbor.reference_position)
    if is_sparse(neighbor.format):
        mask = neighbor.idx[0] < N
        if mask_self:
            mask = mask & (neighbor.idx[0] != neighbor.idx[1])
        return mask
    mask = neighbor.idx < N
    if mask_self:
        mask = mask & (neighbor.idx != jnp.arange(N, dtype=i32)[:, None])
    return mask


def to_dense(neighbor: NeighborList) -> Array:
    """Convert a ``Sparse`` neighbor list to a dense ``[N, max_neighbors]`` index array (eager).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, partition, smap, space
        >>> displacement, shift = space.periodic(4.0)
        >>> R = jnp.array([[0.5, 0.5], [1.3, 0.5], [3.0, 3.0]])
        >>> neighbor_fn = partition.neighbor_list(displacement, 4.0, r_cutoff=1.5,
        ...                                      format=partition.Sparse)
        >>> nbrs = neighbor_fn.allocate(R)
        >>> dense = partition.to_dense(nbrs)
        >>> dense.shape[0], dense[0, 0].tolist()
        (3, 1)
    """
    if neighbor.format is not Sparse:
        raise ValueError("to_dense: can only convert Sparse neighbor lists; "
                         f"got format={neighbor.format}.")
    N = len(neighbor.reference_position)
    neigh = onp.asarray(neighbor.idx[0])
    cent = onp.asarray(neighbor.idx[1])
    keep = neigh < N
    neigh, cent = neigh[keep], cent[keep]
    counts = onp.bincount(cent, minlength=N)
    width = int(counts.max()) if counts.size else 0
    order = onp.argsort(cent, kind="stable")
    neigh, cent = neigh[order], cent[order]
    starts = onp.concatenate([[0], onp.cumsum(counts)[:-1]])
    col = onp.arange(len(cent)) - starts[cent]
    out = onp.full((N, width), N, onp.int32)
    out[cent, col] = neigh
    return jnp.asarray(out)


class GraphsTuple(NamedTuple):
    """A graph in jraph's layout (the fields and order of ``jraph.GraphsTuple``), returned by
    :func:`to_jraph`. Fluxion does not depend on jraph; ``jraph.GraphsTuple(*graph)`` converts.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> R = jnp.array([[1.0, 1.0], [2.0, 1.0], [1.0, 2.2], [5.0, 5.0]])
        >>> displacement, _ = space.periodic(10.0)
        >>> neighbor_fn = partition.neighbor_list(displacement, 10.0, 1.5, format=partition.Sparse)
        >>> graph = partition.to_jraph(neighbor_fn.allocate(R))
        >>> type(graph).__name__, graph.n_node.tolist(), graph.n_edge.tolist()
        ('GraphsTuple', [4, 1], [4, 1])
    """

    nodes: Any
    edges: Any
    receivers: Any
    senders: Any
    globals: Any
    n_node: Any
    n_edge: Any


def to_jraph(neighbor: NeighborList, mask: Array | None = None, nodes: Any = None,
             edges: Any = None, globals: Any = None) -> GraphsTuple:  # noqa: A002 (jax_md's name)
    """A sparse neighbor list as a graph in jraph's layout, padded as jraph pads: one fictitious
    graph of one node (index ``N``) that receives the empty slots.

    ``receivers, senders = neighbor.idx``; ``n_node = [N, 1]``, ``n_edge = [occupied, empty]``.
    ``nodes``/``globals`` (trees of arrays, leading axis ``N``/``1``) get one zero row appended.
    With ``mask`` (a boolean per edge slot) the kept edges move to the front, in order, and
    ``edges`` (a tree of per-slot arrays) follows them.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> R = jnp.array([[1.0, 1.0], [2.0, 1.0], [1.0, 2.2], [5.0, 5.0]])
        >>> displacement, _ = space.periodic(10.0)
        >>> neighbor_fn = partition.neighbor_list(displacement, 10.0, 1.5, format=partition.Sparse)
        >>> graph = partition.to_jraph(neighbor_fn.allocate(R))
        >>> graph.n_node.tolist(), graph.n_edge.tolist(), graph.senders.shape
        ([4, 1], [4, 1], (5,))
        >>> graph.senders[:4].tolist(), graph.receivers[:4].tolist()
        ([0, 0, 1, 2], [2, 1, 0, 0])
    """
    if not is_sparse(neighbor.format):
        raise ValueError("to_jraph: cannot convert a dense neighbor list to jraph format; use "
                         "NeighborListFormat.Sparse or NeighborListFormat.OrderedSparse "
                         f"(got format={neighbor.format}).")
    receivers, senders = neighbor.idx
    N = len(neighbor.reference_position)
    occupied = neighbor_list_mask(neighbor)

    def pad(x: Array) -> Array:
        return jnp.concatenate([x, jnp.zeros((1,) + x.shape[1:], x.dtype)], axis=0)

    nodes = tree_util.tree_map(pad, nodes)
    globals = tree_util.tree_map(pad, globals)  # noqa: A001
    if mask is not None:
        occupied = occupied & mask
        slots = receivers.shape[0]
        # kept edges to the front in order; the others land in one dropped slot past the end
        where = jnp.where(occupied, _running_count(occupied) - 1, slots)
        filler = jnp.full((slots + 1,), N, i32)
        receivers = filler.at[where].set(receivers)[:-1]
        senders = filler.at[where].set(senders)[:-1]
        edges = tree_util.tree_map(lambda x: jnp.zeros_like(x).at[where].set(x), edges)
    n_edge = jnp.array([jnp.sum(occupied), jnp.sum(~occupied)])
    return GraphsTuple(nodes=nodes, edges=edges, receivers=receivers, senders=senders,
                       globals=globals, n_node=jnp.array([N, 1]), n_edge=n_edge)
