"""The values :func:`fluxion_md.partition.neighbor_list` deals in, as ``jax_md.partition``'s:
the list (:class:`NeighborList`) and its functions (:class:`NeighborListFns`), its formats
(:class:`NeighborListFormat`: ``Dense``, ``Sparse``, ``OrderedSparse``), the error bits it
records (:class:`PartitionErrorCode`, :class:`PartitionError`), what a caller gets when a list
overflowed (:class:`NeighborListOverflowError`, :func:`check_neighbor_list`) or its cutoff
exceeds half the box (:class:`NeighborListCutoffWarning`), and :func:`is_box_valid`.
:mod:`fluxion_md.partition` re-exports every name."""

from __future__ import annotations

from enum import Enum, IntEnum
from typing import Any, Callable

import fluxion.numpy as jnp
from fluxion_md import dataclasses
from fluxion_md.util import Array, is_concrete

__all__ = ["NeighborListCutoffWarning", "NeighborListOverflowError", "PartitionErrorCode", "PEC",
           "PartitionError", "NeighborListFormat", "Dense", "Sparse", "OrderedSparse",
           "is_sparse", "is_format_valid", "is_box_valid", "NeighborList", "NeighborListFns",
           "NeighborFn", "check_neighbor_list"]

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
