"""Cell lists and neighbor lists (mirrors ``jax_md.partition``).

A neighbor list has a fixed capacity chosen when it is allocated (outside ``jit``); ``update``
keeps that capacity and raises an overflow flag when it is too small. Unlike jax_md, fluxion_md
never lets an overflowed list silently produce wrong energies: energy functions built by
``smap.pair_neighbor_list`` raise when given one outside ``jit`` and return NaN inside, and
:func:`fluxion_md.simulate.run` re-allocates and re-runs automatically.

The names live in modules beside this one, by responsibility, and are all importable from here
(jax_md's ``partition`` namespace): cell lists in :mod:`fluxion_md._cell_list`, the list's
types, formats and errors in :mod:`fluxion_md._neighbor_types`, the mask/dense/jraph views in
:mod:`fluxion_md._neighbor_conversions`; building and updating lists (:func:`neighbor_list`)
is here.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any, Callable

import numpy as onp

import fluxion
import fluxion.numpy as jnp
from fluxion import jit, lax, vmap
from fluxion_md import _sparse_prune, space
from fluxion_md._cell_list import (
    CellList,
    CellListFns,
    _cell_candidates,
    cell_list,
    count_cell_filling,
)
from fluxion_md._neighbor_conversions import GraphsTuple, neighbor_list_mask, to_dense, to_jraph
from fluxion_md._neighbor_types import (
    PEC,
    Dense,
    MaskFn,
    NeighborFn,
    NeighborList,
    NeighborListCutoffWarning,
    NeighborListFns,
    NeighborListFormat,
    NeighborListOverflowError,
    OrderedSparse,
    PartitionError,
    PartitionErrorCode,
    Sparse,
    check_neighbor_list,
    is_box_valid,
    is_format_valid,
    is_sparse,
)
from fluxion_md._sparse_prune import _flat_running_count, _running_count  # noqa: F401 (tests)
from fluxion_md.util import Array, f32, host_value, i32, static_float

__all__ = [
    "CellList", "CellListFns", "cell_list", "count_cell_filling", "PartitionErrorCode", "PEC",
    "PartitionError", "NeighborListFormat", "Dense", "Sparse", "OrderedSparse", "is_sparse",
    "is_format_valid", "is_box_valid", "NeighborList", "NeighborListFns", "NeighborFn",
    "neighbor_list", "neighbor_list_mask", "to_dense", "NeighborListOverflowError", "NeighborListCutoffWarning",
    "check_neighbor_list", "GraphsTuple", "to_jraph",
]

# the public classes name this module as theirs, as jax_md's do: reprs and pickles (which look a
# class up by module and name) are what they were before the split
for _cls in (CellList, CellListFns, PartitionErrorCode, PartitionError, NeighborListFormat,
             NeighborList, NeighborListFns, NeighborListOverflowError, NeighborListCutoffWarning,
             GraphsTuple):
    _cls.__module__ = __name__
del _cls


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


def _cell_box(box: Any) -> onp.ndarray:
    """The box's value for sizing allocate's cells: a ``grad`` tracer's primal (the cells are
    integer structure; jax_md's ``if jnp.all(cell_size < box / 3)`` reads it too); a ``jit`` or
    ``vmap`` tracer cannot size them (jax_md raises TracerBoolConversionError there as well)."""
    value = host_value(box)
    if value is None:
        value = host_value(lax.stop_gradient(box))
    if value is None:
        raise fluxion.errors.TracerBoolConversionError(
            "neighbor_list.allocate: the box is traced (inside jit or vmap), and sizing the cell "
            "list needs its value, as in jax_md (which raises TracerBoolConversionError there). "
            "Allocate with a concrete box, or pass disable_cell_list=True.")
    return value


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
    # a box traced by jit, vmap or grad (a strain derivative) stays traced and is not checked:
    # jax_md builds the functions without looking at it
    box_host = host_value(box)
    if box_host is not None:
        box = box_host.astype(onp.float64)
        if onp.any(box <= 0) and box.ndim < 2:
            raise ValueError(f"neighbor_list: box must be positive; got box={box.tolist()}.")
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
    if box_host is not None:
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
                    cell_size = _fractional_cell_size(_cell_box(_box), cutoff)
                    _box = 1.0
                _box = _cell_box(_box)
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
