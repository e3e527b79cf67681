"""The sparse neighbor list's prune from a cell list, a block of rows at a time, and its centres
from the rows' counts (used by :func:`fluxion_md.partition.neighbor_list`).

jax_md prunes every candidate at once: the ``[N, 27 * cell capacity]`` candidate ids, their
positions, distances and running counts (~90 MB at ``md_lj_neighbor``'s N = 4000, cell capacity
40) are temporaries of the program holding the rebuild, and XLA:CPU allocates a program's
temporaries on every call (past 32 MB glibc maps them fresh: ~4,000 page faults, ~8 ms of a
~14 ms step, whether or not the ``cond`` rebuilds). :func:`prune_blocks` scans the rows in blocks
(``block_rows``: the candidates' positions of a block in ``BLOCK_BYTES / 4``), writing each
block's kept candidates at the running offset: the same list, bit for bit, and the step's
temporaries stay small. :func:`slot_rows` gives the centre row of each slot from the rows' counts
where jax_md scatters it from every candidate.

Example:
    >>> import fluxion.numpy as jnp
    >>> slot_rows(jnp.array([2, 0, 1]), 5).tolist()
    [0, 0, 2, 3, 3]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as onp

import fluxion.numpy as jnp
from fluxion import lax, vmap
from fluxion_md.util import Array, i32

__all__ = ["BLOCK_BYTES", "block_rows", "prune_blocks", "slot_rows"]


def _flat_running_count(mask: Array) -> Array:
    """``jnp.cumsum(mask.ravel())`` (int32) of a 2-d ``mask``, as a running count along each row
    plus the exclusive running total of the rows. The values are the same; the programs are two
    scans of ``mask.shape[1]`` and ``mask.shape[0]`` elements instead of one of their product.
    Written when XLA's TPU compiler took ~11 s over one 250,000-element cumsum; the cumulative
    primitives' TPU lowering now scans long axes in blocks itself (lax/cumulative.py), and this
    is kept because on the CPU the two short scans also run faster than jax_md's one (500 x 500:
    1.07 against 1.16 ms a call, the same compile time)."""
    if mask.shape[1] == 0:
        return jnp.zeros((0,), i32)
    rows = jnp.cumsum(mask, axis=1, dtype=i32)
    totals = rows[:, -1]
    return jnp.reshape(rows + (jnp.cumsum(totals) - totals)[:, None], (-1,))


def _running_count(flags: Array) -> Array:
    """``jnp.cumsum(flags)`` (int32) of a 1-d boolean or integer array; past 4096 entries,
    padded to rows of about ``sqrt(n)`` and counted by :func:`_flat_running_count` (two short
    scans on a TPU)."""
    n = flags.shape[0]
    if n <= 4096:
        return jnp.cumsum(flags, dtype=i32)
    width = int(onp.ceil(onp.sqrt(n)))
    rows = -(-n // width)
    padded = jnp.concatenate([flags, jnp.zeros((rows * width - n,), flags.dtype)])
    return _flat_running_count(jnp.reshape(padded, (rows, width)))[:n]

#: A sparse rebuild whose candidates' positions take more bytes than this is pruned in blocks
#: of rows a quarter of this size.
BLOCK_BYTES = 8 << 20


def slot_rows(counts: Array, width: int) -> Array:
    """The row of each of ``width`` slots filled row after row with ``counts[r]`` entries of row
    ``r`` (``len(counts)`` past the last entry): a histogram of the rows' ends (one update a
    row) and its running count over the slots, in rows of ``~sqrt(width)`` (short scans on a
    TPU).

    Example:
        >>> import fluxion.numpy as jnp
        >>> slot_rows(jnp.array([1, 2]), 4).tolist()
        [0, 1, 1, 2]
    """
    n = counts.shape[0]
    if n == 0:
        return jnp.zeros((width,), i32)
    ends = _running_count(counts)
    ended = jnp.zeros((width + 1,), i32).at[jnp.minimum(ends, width)].add(1)[:width]
    step = max(1, int(onp.ceil(onp.sqrt(width))))
    padded = jnp.concatenate([ended, jnp.zeros((-width % step,), i32)])
    rows = _flat_running_count(jnp.reshape(padded, (-1, step)))[:width]
    return jnp.where(jnp.arange(width, dtype=i32) < ends[-1], rows, n)


def block_rows(position: Array, cell_capacity: int) -> int | None:
    """Rows per block for :func:`prune_blocks`, or None when all the candidates' positions
    (``N x 3^dim x cell_capacity x dim`` values) fit in :data:`BLOCK_BYTES`.

    Example:
        >>> import fluxion.numpy as jnp
        >>> block_rows(jnp.zeros((4000, 3)), 40), block_rows(jnp.zeros((100, 3)), 40)
        (161, None)
    """
    N, dim = position.shape
    row = cell_capacity * 3 ** dim * dim * position.dtype.itemsize
    if N < 2 or N * row <= BLOCK_BYTES:
        return None
    return int(min(N, max(1, BLOCK_BYTES // 4 // row)))


def prune_blocks(position: Array, cl: Any, capacity: int | None, block: int,
                 metric_sq: Callable, cutoff_sq: float, mask_self: bool,
                 ordered: bool, candidates: Callable) -> tuple[Array, Array]:
    """``(idx [2, width], occupancy)`` of the sparse list of pairs closer than ``cutoff_sq``
    (squared ``metric_sq``) among cell list ``cl``'s candidates, ``block`` rows at a time: the
    list ``neighbor_list``'s one-pass prune gives (``ordered``: only ``j < i``). ``candidates``
    gives a block's candidate ids and positions from the cell list (``partition._cell_candidates``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> R = jnp.array([[0.5, 0.5], [1.0, 0.5], [5.0, 5.0]])
        >>> disp, _ = space.periodic(9.0)
        >>> cl = partition.cell_list(9.0, 1.5).allocate(R)
        >>> d2 = lambda a, b: space.square_distance(disp(a, b))
        >>> idx, n = prune_blocks(R, cl, 4, 2, d2, 1.0, True, False,
        ...                       partition._cell_candidates)
        >>> idx.tolist(), int(n)
        ([[1, 0, 3, 3], [0, 1, 3, 3]], 2)
    """
    N, dim = position.shape
    blocks = -(-N // block)
    pad = blocks * block - N
    rows_p = jnp.concatenate([position, jnp.zeros((pad, dim), position.dtype)])
    cells_p = jnp.concatenate([cl.particle_cell_id,
                               jnp.zeros((pad, dim), cl.particle_cell_id.dtype)])
    width = N * cl.id_buffer.shape[dim] * 3 ** dim if capacity is None else capacity

    def body(carry: Any, b: Array) -> tuple[Any, Array]:
        out, offset = carry
        start = b * block
        rows = lax.dynamic_slice_in_dim(rows_p, start, block)
        idx, neigh = candidates(cl.id_buffer, cl.position_buffer,
                                lax.dynamic_slice_in_dim(cells_p, start, block))
        centre = start + jnp.arange(block, dtype=i32)[:, None]
        d2 = vmap(vmap(metric_sq, (None, 0)))(rows, neigh)
        mask = (d2 < cutoff_sq) & (idx < N) & (centre < N)
        if mask_self:
            mask = mask & (idx != centre)
        if ordered:
            mask = mask & (idx < centre)
        count = _flat_running_count(mask)
        pos = jnp.where(jnp.reshape(mask, (-1,)), offset + count - 1, width)
        out = out.at[pos].set(jnp.reshape(idx, (-1,)), mode="drop")
        return (out, offset + count[-1]), jnp.sum(mask, axis=1, dtype=i32)

    init = (jnp.full((width,), N, i32), jnp.zeros((), i32))
    (neigh, occupancy), counts = lax.scan(body, init, jnp.arange(blocks, dtype=i32))
    counts = jnp.reshape(counts, (-1,))[:N]
    return jnp.stack((neigh, slot_rows(counts, width))), occupancy
