"""Grid ("convolutional") molecular dynamics (mirrors ``jax_md.tpu`` on one device).

Particles live in the cells of a regular grid, at most one per cell: each cell stores the
particle's offset from the cell centre, optional auxiliary channels (velocities, forces) and the
particle's id + 1 (0 marks an empty cell). The grid is folded into a batch of equal patches
(``(f_x f_y f_z, l_x, l_y, l_z, C)``, the fold factors chosen to reach a batch of 128), so every
neighbour offset is a shift of the patch with a periodic halo taken from the neighbouring
patches. Pair energies and forces sum over the ``(2 m + 1)^d`` neighbouring cells with
``m = ceil(r_max / cell_size) + 1``, one axis at a time. When a particle's offset grows past
half a cell it swaps cells with its neighbour (even and then odd pairs of cells per axis).

jax-md also spreads grids over a device mesh (``topology``); that path builds on a
``shard_map`` signature JAX no longer has, and fails on real JAX as well, so here a non-empty
``topology`` raises ``NotImplementedError``.

Example:
    >>> import numpy as onp
    >>> from fluxion_md import tpu
    >>> tpu.nearest_valid_grid_size(512, (), 5, dimension=1).tolist()
    [768]
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any, Callable

import numpy as onp

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, random
from fluxion.tree_util import tree_flatten, tree_unflatten
from fluxion_md import dataclasses, energy, space
from fluxion_md.util import Array

__all__ = ["TPUGrid", "to_grid", "from_grid", "compute_displacement", "accumulate_on_grid",
           "parallelize", "unfold_mesh", "shift", "nearest_valid_grid_size", "pair_potential",
           "soft_sphere", "lennard_jones", "NVEState", "nve", "kinetic_energy", "cell_hash",
           "test_nve"]

_log = logging.getLogger(__name__)
GridFn = Callable[["TPUGrid"], Array]


@dataclasses.dataclass
class TPUGrid:
    """A system on a folded grid: ``cell_data`` (``(B, l_1, .., l_d, C)``), the fold
    ``factors``, ``box_size_in_cells``, ``cell_size``, the neighbour range
    ``max_grid_distance`` (in cells), ``num_dims`` and the device ``topology`` (``()``).

    Example:
        >>> TPUGrid.__name__
        'TPUGrid'
    """
    cell_data: Array
    topology: tuple = dataclasses.static_field()
    factors: tuple = dataclasses.static_field()
    box_size_in_cells: Any = dataclasses.static_field()
    cell_size: float = dataclasses.static_field()
    max_grid_distance: int = dataclasses.static_field()
    num_dims: int = dataclasses.static_field()


def _single_device(topology: Any, where: str) -> None:
    if topology:
        raise NotImplementedError(
            f"tpu.{where}: grids spread over a device mesh (topology={topology}) are not "
            "supported; jax-md's mesh path needs a shard_map signature JAX no longer has. Use "
            "topology=() (one device).")


def parallelize(f: Callable, topology: tuple) -> Callable:
    """``f`` itself for a single device (``topology == ()``).

    Example:
        >>> parallelize(abs, ())(-1)
        1
    """
    _single_device(topology, "parallelize")
    return f


def _box_cells(box_size_in_cells: Any, num_dims: int) -> onp.ndarray:
    if onp.isscalar(box_size_in_cells):
        return onp.array([box_size_in_cells] * num_dims)
    return onp.array(box_size_in_cells)


def _grid_centers(cells: onp.ndarray, cell_size: float, num_dims: int) -> Array:
    centers = onp.zeros(tuple(cells) + (num_dims,))
    for i in range(num_dims):
        shape = (1,) * i + (int(cells[i]),) + (1,) * (num_dims - i - 1)
        centers[..., i] = (onp.arange(cells[i]).reshape(shape) + 0.5) * cell_size
    return jnp.array(centers)


def cell_hash(cell_index: Array, cells: Any, num_dims: int) -> Array:
    """Row-major flat index of integer cell coordinates (``[n, d]``).

    Example:
        >>> cell_hash(jnp.array([[1, 2]]), (4, 5), 2).tolist()
        [7]
    """
    if num_dims == 1:
        return cell_index[:, 0]
    if num_dims == 2:
        return cell_index[:, 1] + cell_index[:, 0] * cells[1]
    if num_dims == 3:
        return (cell_index[:, 2] + cell_index[:, 1] * cells[2]
                + cell_index[:, 0] * cells[1] * cells[2])
    raise ValueError("TPU only supports one-, two-, or three-dimensional systems. Found "
                     f"{num_dims}.")


def _set_aux(cell_data: Array, aux: Any) -> tuple[Array, Any, onp.ndarray]:
    # auxiliary channels go between the offsets and the id channel
    leaves, tree = tree_flatten(aux)
    sizes = onp.cumsum([cell_data.shape[-1] - 1] + [x.shape[-1] for x in leaves])
    data = jnp.concatenate([cell_data[..., :-1]] + list(leaves) + [cell_data[..., -1:]], axis=-1)
    return data, tree, sizes


def _aux_spec(num_dims: int, aux: Any) -> tuple[Any, onp.ndarray]:
    leaves, tree = tree_flatten(aux)
    return tree, onp.cumsum([num_dims] + [x.shape[-1] for x in leaves])


def _get_aux(cell_data: Array, tree: Any, sizes: onp.ndarray) -> tuple[Array, Any]:
    parts = jnp.split(cell_data, sizes, axis=-1)
    data = jnp.concatenate([parts[0], parts[-1]], axis=-1)
    return data, tree_unflatten(tree, parts[1:-1])


@partial(fluxion.jit, static_argnums=(1, 2, 5))
def _positions_to_grid(position: Array, box_size_in_cells: Any, cell_size: float,
                       particle_id: Array, aux: Any = None, strategy: str = "closest") -> Array:
    count, num_dims = position.shape
    cells = _box_cells(box_size_in_cells, num_dims)
    total = int(onp.prod(cells))
    if strategy == "linear":  # particle n into cell n (row-major)
        contents = jnp.concatenate([position, particle_id[:, None]], axis=-1)
        if aux is not None:
            contents = _set_aux(contents, aux)[0]
        centers = jnp.reshape(_grid_centers(cells, cell_size, num_dims), (total, num_dims))
        grid = jnp.zeros((total, contents.shape[-1])).at[:count].set(contents)
        grid = grid.at[:count, :num_dims].add(-centers[:count])
    elif strategy == "closest":  # each particle into the cell that holds it
        index = jnp.array(position / cell_size, jnp.int32)
        contents = jnp.concatenate([position - (index * cell_size + 0.5 * cell_size),
                                    particle_id[:, None]], axis=-1)
        if aux is not None:
            contents = _set_aux(contents, aux)[0]
        grid = jnp.zeros((total, contents.shape[-1])).at[cell_hash(index, cells, num_dims)].set(
            contents)
    else:
        raise ValueError('Placement strategy must be either "closest" or "linear". Found '
                         f"{strategy}.")
    return jnp.reshape(grid, tuple(int(c) for c in cells) + (-1,))


def _fold_factors(batch_size: int, grid_shape: tuple, max_grid_distance: int) -> onp.ndarray:
    # Halve the longest axis that still splits evenly, until the batch reaches batch_size.
    num_dims = len(grid_shape)
    max_folds = onp.log(batch_size) / onp.log(2)
    folds = onp.zeros((num_dims,), onp.int32)
    for _ in range(int(max_folds) * num_dims):
        even = [(d, grid_shape[d] // 2 ** (folds[d] + 2)) for d in range(num_dims)
                if grid_shape[d] % 2 ** (folds[d] + 2) == 0]
        if not even:
            break
        dim = sorted(even, key=lambda dq: dq[1], reverse=True)[0][0]
        width = grid_shape[dim] // 2 ** (folds[dim] + 1)
        if width >= max_grid_distance:
            folds[dim] += 1
        else:
            raise ValueError(f"Failed fold. Current folds {folds}, target fold dimension {dim}, "
                             f"grid_shape {grid_shape}, width {width}, remain 0.")
        if onp.sum(folds) == max_folds:
            break
    factors = 2 ** folds
    if onp.sum(folds) < max_folds:
        raise ValueError(f"Folds {folds} have sum smaller than target of {max_folds}. This "
                         f"corresponds to a batch size of {onp.prod(factors)} rather than the "
                         f"target of {batch_size}. The grid_shape is {grid_shape}.")
    return factors


def _factor_order(num_dims: int) -> tuple:
    return tuple(range(0, 2 * num_dims, 2)) + tuple(range(1, 2 * num_dims, 2)) + (2 * num_dims,)


def _fold_grid(cell_data: Array, max_grid_distance: int, batch_size: int | None = None,
               factors: Any = None) -> tuple[Array, Any]:
    num_dims = cell_data.ndim - 1
    if factors is None:
        factors = _fold_factors(batch_size, cell_data.shape[:-1], max_grid_distance)
    shape = []
    for i in range(num_dims):
        if cell_data.shape[i] % factors[i]:
            raise ValueError(f"tpu: grid axis {i} of size {cell_data.shape[i]} does not split "
                             f"into {factors[i]} patches.")
        shape += [int(factors[i]), cell_data.shape[i] // int(factors[i])]
    data = jnp.transpose(jnp.reshape(cell_data, shape + [cell_data.shape[-1]]),
                         _factor_order(num_dims))
    return data.reshape((-1,) + data.shape[num_dims:]), factors


def _unfold_grid(cell_data: Array, grid: TPUGrid) -> Array:
    num_dims, factors = grid.num_dims, tuple(grid.factors)
    data = jnp.reshape(cell_data, factors + cell_data.shape[1:])
    data = jnp.transpose(data, onp.argsort(_factor_order(num_dims)))
    shape = tuple(data.shape[2 * i + 1] * factors[i] for i in range(num_dims))
    return jnp.reshape(data, shape + data.shape[2 * num_dims:])


def unfold_mesh(cell_data: Array, grid: TPUGrid) -> Array:
    """The folded ``cell_data`` (shaped like ``grid.cell_data``, or without its channel axis)
    as one contiguous grid.

    Example:
        >>> unfold_mesh.__name__
        'unfold_mesh'
    """
    if cell_data.ndim == grid.cell_data.ndim - 1:
        cell_data = cell_data[..., None]
    if cell_data.ndim != grid.cell_data.ndim:
        raise ValueError(f"unfold_mesh: cell_data of shape {cell_data.shape} does not match the "
                         f"grid's {grid.cell_data.shape}.")
    _single_device(grid.topology, "unfold_mesh")
    return _unfold_grid(cell_data, grid)


def _split_batch(data: Array, factors: tuple) -> Array:
    return jnp.reshape(data, tuple(int(f) for f in factors) + data.shape[1:])


def _pad_axis_channel_last(data: Array, factors: tuple, axis: int, padding: int = 1) -> Array:
    # Periodic halo of `padding` cells along spatial `axis` of folded (B, l.., C) data: the
    # cells come from the neighbouring patch along that axis (the fold factor rolls by one).
    n = len(factors)
    length = data.shape[1 + axis]

    def neighbour(part: Array, step: int) -> Array:
        rolled = jnp.roll(_split_batch(part, factors), step, axis=axis)
        return jnp.reshape(rolled, (-1,) + rolled.shape[n:])
    lead = (slice(None),) * (1 + axis)
    end = neighbour(data[lead + (slice(length - padding, length),)], 1)
    start = neighbour(data[lead + (slice(0, padding),)], -1)
    return jnp.concatenate([end, data, start], axis=1 + axis)


def _offsets(m: int) -> onp.ndarray:
    offsets = onp.arange(-m, m + 1)
    return offsets[onp.argsort(onp.abs(offsets))]


def _neighbour_cells(data: Array, axis: int, grid: TPUGrid) -> Array:
    # data padded by m along spatial `axis` (axis 1 + axis); out[..., k, c]: the cell `offset_k`
    # away, with its offset channel `axis` moved into this cell's frame.
    m = grid.max_grid_distance
    length = data.shape[1 + axis] - 2 * m
    channels = data.shape[-1]
    lead = (slice(None),) * (1 + axis)
    parts = []
    for o in _offsets(m):
        bias = onp.zeros((1,) * (data.ndim - 1) + (channels,))
        bias[..., axis] = grid.cell_size * o
        parts.append(data[lead + (slice(o + m, o + m + length),)] + bias)
    return jnp.stack(parts, axis=-2)


def _accumulate(accum_fn: Callable, center: Array, data: Array, axis: int,
                grid: TPUGrid) -> Array:
    nd = grid.num_dims
    data = _neighbour_cells(data, axis, grid)
    if axis == nd - 1:
        dR = center[..., :nd] - data[..., :nd]
        return jnp.sum(accum_fn(dR, center[..., -1], data[..., -1]), axis=nd + 1)

    def inner(x: Array) -> Array:
        return _accumulate(accum_fn, center, x, axis + 1, grid)
    total = jnp.zeros(fluxion.eval_shape(inner, data[..., 0, :]).shape)
    return lax.fori_loop(0, data.shape[-2], lambda i, acc: acc + inner(data[..., i, :]), total)


def accumulate_on_grid(accum_fn: Callable[[Array, Array, Array], Array],
                       grid: TPUGrid) -> Array:
    """Sum ``accum_fn(displacement, id_a, id_b)`` over every cell's neighbouring cells (one
    axis at a time, so only one axis of neighbours is materialised at once).

    Example:
        >>> accumulate_on_grid.__name__
        'accumulate_on_grid'
    """
    nd = grid.num_dims
    data = jnp.concatenate([grid.cell_data[..., :nd], grid.cell_data[..., -1:]], axis=-1)
    center = data[..., None, :]
    for d in range(nd):
        data = _pad_axis_channel_last(data, grid.factors, d, grid.max_grid_distance)
    return _accumulate(accum_fn, center, data, 0, grid)


def compute_displacement(grid: TPUGrid) -> tuple[Array, Array]:
    """Displacements to all ``(2m + 1)^d`` neighbouring cells and a mask of the pairs where both
    cells hold a particle (each ``grid.cell_data.shape[:-1] + (K^d,)``, vectors last for the
    displacements).

    Example:
        >>> compute_displacement.__name__
        'compute_displacement'
    """
    nd = grid.num_dims
    data = jnp.concatenate([grid.cell_data[..., :nd], grid.cell_data[..., -1:]], axis=-1)
    for d in range(nd):
        data = _pad_axis_channel_last(data, grid.factors, d, grid.max_grid_distance)
    K = 2 * grid.max_grid_distance + 1
    neighbours = data[..., None, :]
    for d in range(nd):  # neighbours gain one K-sized axis per spatial axis (the slowest first)
        flat = jnp.moveaxis(neighbours, -2, 1)
        lead = flat.shape[:2]
        flat = jnp.reshape(flat, (-1,) + flat.shape[2:])
        shifted = _neighbour_cells(flat, d, grid)
        shifted = jnp.reshape(shifted, lead + shifted.shape[1:])
        neighbours = jnp.moveaxis(shifted, 1, -3)
        neighbours = jnp.reshape(neighbours, neighbours.shape[:-3] + (-1, neighbours.shape[-1]))
    neighbours = neighbours.reshape(grid.cell_data.shape[:-1] + (K ** nd, nd + 1))
    first = onp.zeros((1,) * (neighbours.ndim - 2) + (K ** nd,), bool)
    first[..., 0] = True  # the cell itself (offset 0 along every axis comes first)
    occupied = (neighbours[..., -1] > 0.5) & ~first & (grid.cell_data[..., -1:] > 0.5)
    return neighbours[..., :nd] - grid.cell_data[..., None, :nd], occupied[..., None]


def _pairwise_exchange(cell_data: Array, axis: int, grid: TPUGrid) -> tuple[Array, Array]:
    # Pair cells (2i, 2i+1) along spatial `axis`; a pair swaps its contents when that lowers
    # the sum of the squared offsets. Returns the swapped data and the keep mask (one per pair).
    nd = grid.num_dims
    shape = cell_data.shape
    n = shape[1 + axis]
    split = shape[:1 + axis] + (n // 2, 2) + shape[2 + axis:]
    q_axis = 2 + axis
    data = jnp.reshape(cell_data, split)
    flipped = jnp.flip(data, axis=q_axis)
    delta = onp.zeros((2, shape[-1]))
    delta[0, axis] = grid.cell_size
    delta[1, axis] = -grid.cell_size
    delta = delta.reshape((1,) * q_axis + (2,) + (1,) * (nd - 1 - axis) + (shape[-1],))
    swapped = flipped + delta * (flipped[..., -1:] > 0)

    def spread(d: Array) -> Array:
        return jnp.sum(d[..., :nd] ** 2 * (d[..., -1:] > 0), axis=(q_axis, d.ndim - 1),
                       keepdims=True)
    keep = spread(data) <= spread(swapped)
    keep = jnp.reshape(keep, shape[:1 + axis] + (n // 2,) + shape[2 + axis:-1] + (1,))
    return jnp.reshape(swapped, shape), keep


def _update_grid_locations(cell_data: Array, grid: TPUGrid) -> Array:
    for axis in range(grid.num_dims):
        swapped, keep = _pairwise_exchange(cell_data, axis, grid)
        keep = jnp.repeat(keep, 2, axis + 1)
        cell_data = cell_data * keep + swapped * ~keep
        # then the odd pairs, across patch borders through a one-cell halo
        cell_data = _pad_axis_channel_last(cell_data, grid.factors, axis)
        swapped, keep = _pairwise_exchange(cell_data, axis, grid)
        lead = (slice(None),) * (1 + axis)
        keep = _pad_axis_channel_last(keep[lead + (slice(0, -1),)], grid.factors, axis)
        keep = jnp.repeat(keep[lead + (slice(1, None),)], 2, axis + 1)
        cell_data = cell_data * keep + swapped * ~keep
        cell_data = cell_data[lead + (slice(1, -1),)]
    return cell_data


def _settle_particle_locations(grid: TPUGrid) -> TPUGrid:
    @fluxion.jit
    def settle(grid: TPUGrid) -> TPUGrid:
        def body(pair: tuple) -> tuple:
            g, _ = pair
            return dataclasses.replace(g, cell_data=_update_grid_locations(g.cell_data, g)), g

        def changed(pair: tuple) -> Array:
            g, old = pair
            return jnp.any(jnp.abs(g.cell_data - old.cell_data) > 1e-8)
        start = dataclasses.replace(grid, cell_data=jnp.zeros_like(grid.cell_data))
        return lax.while_loop(changed, body, (grid, start))[0]
    return settle(grid)


def to_grid(positions: Array, box_size_in_cells: Any, cell_size: float,
            max_interaction_distance: float, topology: tuple | None = None, aux: Any = None,
            strategy: str = "closest") -> Any:
    """Place particles (``[N, d]``, optionally with a pytree ``aux`` of per-particle data) on a
    folded grid; returns the :class:`TPUGrid` (and ``aux`` placed on the grid).

    ``strategy='closest'`` puts each particle in the cell that contains it, ``'linear'`` puts
    particle ``n`` in cell ``n`` and lets the cell swaps carry it home.

    Example:
        >>> to_grid.__name__
        'to_grid'
    """
    num_dims = positions.shape[-1]
    topology = () if topology is None else topology
    _single_device(topology, "to_grid")
    reach = max_interaction_distance / cell_size
    if not onp.isclose(reach, onp.round(reach)):
        _log.warning("max_interaction_distance (%s) did not evenly divide the cell_size (%s). "
                     "This will mean that the max grid distance will be padded.",
                     max_interaction_distance, cell_size)
    max_grid_distance = int(onp.ceil(reach) + 1)
    cells = box_size_in_cells if onp.isscalar(box_size_in_cells) else tuple(
        int(c) for c in box_size_in_cells)
    data = _positions_to_grid(positions, cells, cell_size, jnp.arange(len(positions)) + 1, aux,
                              strategy)
    placed = int(jnp.sum(data[..., -1] > 0))
    if placed < len(positions):
        raise ValueError(f"Lost particles while placing into grid, due to collision ({placed} "
                         f"of {len(positions)} placed). Consider either using a better initial "
                         "configuration or setting the placement strategy to `linear` (note "
                         "that the linear strategy can take a long time for large systems).")
    data, factors = _fold_grid(data, max_grid_distance, 128)
    grid = TPUGrid(cell_data=data, factors=tuple(int(f) for f in factors),
                   box_size_in_cells=box_size_in_cells, cell_size=cell_size, topology=topology,
                   max_grid_distance=max_grid_distance, num_dims=num_dims)
    grid = _settle_particle_locations(grid)
    if aux is None:
        return grid
    tree, sizes = _aux_spec(num_dims, aux)
    data, aux = _get_aux(grid.cell_data, tree, sizes)
    return dataclasses.replace(grid, cell_data=data), aux


def from_grid(grid: TPUGrid, aux: Any = None) -> Any:
    """Positions (``[N, d]``, in particle order and inside the box) back from a grid, and the
    particles' rows of ``aux`` (grid-shaped data such as velocities or forces) when given.

    Example:
        >>> from_grid.__name__
        'from_grid'
    """
    nd = grid.num_dims
    cells = _box_cells(grid.box_size_in_cells, nd)
    data = grid.cell_data
    if aux is not None:
        data, tree, sizes = _set_aux(data, aux)
        grid = dataclasses.replace(grid, cell_data=data)
    data = unfold_mesh(grid.cell_data, grid)
    data = jnp.reshape(data, (-1, data.shape[-1]))
    centers = jnp.reshape(_grid_centers(cells, grid.cell_size, nd), (-1, nd))
    valid = onp.asarray(data[:, -1] > 0.0)
    data, centers = data[valid], centers[valid]
    if aux is not None:
        data, aux = _get_aux(data, tree, sizes)
    order = jnp.argsort(data[:, -1])
    pos = jnp.mod(data[:, :nd] + centers, (cells * grid.cell_size)[None, :])[order]
    if aux is not None:
        return pos, aux[order]
    return pos


def shift(grid: TPUGrid, displacement: Array, aux: Any = None) -> Any:
    """Move every particle by ``displacement`` (grid-shaped), then let particles change cells;
    ``aux`` (grid-shaped pytree) moves with them.

    Example:
        >>> shift.__name__
        'shift'
    """
    data = grid.cell_data.at[..., :grid.num_dims].add(displacement)
    if aux is not None:
        data, tree, sizes = _set_aux(data, aux)
    data = _update_grid_locations(data, grid)
    if aux is not None:
        data, aux = _get_aux(data, tree, sizes)
        return dataclasses.replace(grid, cell_data=data), aux
    return dataclasses.replace(grid, cell_data=data)


def _inner_size(tiled: Any, topology: tuple, factors: tuple, m: int) -> onp.ndarray:
    padded = (onp.asarray(tiled) / onp.array(topology) + 2 * m) if topology else tiled
    return padded / onp.array(factors)


def _outer_size(folded: Any, topology: tuple, factors: tuple, m: int) -> onp.ndarray:
    padded = folded * onp.array(factors)
    return (padded - 2 * m) * onp.array(topology) if topology else padded


def nearest_valid_grid_size(target_box_size_in_cells: Any, topology: Any,
                            max_grid_distance: int, factors: tuple | None = None,
                            dimension: int | None = None) -> onp.ndarray:
    """The grid size nearest ``target_box_size_in_cells`` whose patches are even and at least
    ``max_grid_distance + 1`` cells wide (default factors: 128, 16x8 or 8x4x4).

    Example:
        >>> nearest_valid_grid_size(80, (), 5, dimension=2).tolist()
        [96, 80]
    """
    if factors is None:
        if dimension is None:
            if topology:
                dimension = len(topology)
            elif not jnp.isscalar(target_box_size_in_cells):
                dimension = len(target_box_size_in_cells)
            else:
                raise ValueError("Need to (implicitly) specify dimension of space, by passing "
                                 "dimension keyword, or by making target_box_size_in_cells or "
                                 "topology a tuple.")
        factors = {1: (128,), 2: (16, 8), 3: (8, 4, 4)}[dimension]
    folded = onp.round(_inner_size(target_box_size_in_cells, topology, factors,
                                   max_grid_distance))
    folded = onp.maximum(folded, max_grid_distance + 1)
    folded = folded + folded % 2
    return _outer_size(folded, topology, factors, max_grid_distance).astype(onp.int32)


def pair_potential(fn: Callable, **kwargs: Any) -> tuple[GridFn, GridFn]:
    """``(energy_fn, force_fn)`` of the pair energy ``fn(r, **kwargs)`` on a grid (the force is
    grid-shaped, ``cell_data.shape[:-1] + (d,)``).

    Example:
        >>> from fluxion_md import energy
        >>> energy_fn, force_fn = pair_potential(energy.soft_sphere, sigma=1.0)
    """
    pair = partial(fn, **kwargs)

    def accum_fn(dR: Array, id_a: Array, id_b: Array) -> Array:
        real = (id_a > 0) & (id_b > 0) & (id_a != id_b)
        return pair(space.distance(dR)) * real

    def energy_fn(grid: TPUGrid) -> Array:
        per_cell = accumulate_on_grid(jnp.vectorize(accum_fn, signature="(m),(),()->()"), grid)
        return jnp.sum(per_cell) / 2.0

    def force_fn(grid: TPUGrid) -> Array:
        g = jnp.vectorize(fluxion.grad(accum_fn), signature="(m),(),()->(m)")
        return -accumulate_on_grid(g, grid)
    return energy_fn, force_fn


def soft_sphere(sigma: float = 1.0, epsilon: float = 1.0,
                alpha: float = 2) -> tuple[GridFn, GridFn]:
    """The soft-sphere pair potential on a grid (see ``energy.soft_sphere``).

    Example:
        >>> energy_fn, force_fn = soft_sphere(sigma=1.0)
    """
    return pair_potential(energy.soft_sphere, sigma=sigma, epsilon=epsilon, alpha=alpha)


def lennard_jones(sigma: float = 1.0, epsilon: float = 1.0, r_onset: float = 2.0,
                  r_cutoff: float = 3.0) -> tuple[GridFn, GridFn]:
    """The truncated Lennard-Jones potential on a grid (see ``energy.lennard_jones``).

    Example:
        >>> energy_fn, force_fn = lennard_jones()
    """
    cut = energy.multiplicative_isotropic_cutoff(energy.lennard_jones, r_onset, r_cutoff)
    return pair_potential(cut, sigma=sigma, epsilon=epsilon)


@dataclasses.dataclass
class NVEState:
    """State of :func:`nve` on a grid: ``position`` (a :class:`TPUGrid`), grid-shaped
    ``velocity`` and ``force``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import tpu
        >>> cells = tuple(int(c) for c in tpu.nearest_valid_grid_size(64, (), 5, dimension=1))
        >>> grid = tpu.to_grid(jnp.array([[1.0], [1.9], [3.0]]), cells, 0.25, 0.95, ())
        >>> init_fn, apply_fn = tpu.nve(tpu.soft_sphere(sigma=1.0)[1], 1e-3)
        >>> state = init_fn(fluxion.random.PRNGKey(0), grid, kT=0.0)
        >>> type(state).__name__, type(state.position).__name__
        ('NVEState', 'TPUGrid')
        >>> state = apply_fn(state)
        >>> R, V = tpu.from_grid(state.position, state.velocity)
        >>> V.round(5).tolist()  # the overlapping pair pushed apart
        [[-0.0001], [0.0001], [0.0]]
    """
    position: TPUGrid
    velocity: Array
    force: Array


def _verlet_step(force_fn: GridFn, dt: float) -> Callable[[NVEState], NVEState]:
    half_dt2 = 0.5 * dt ** 2

    def step(state: NVEState) -> NVEState:
        R, (V, F) = shift(state.position, state.velocity * dt + state.force * half_dt2,
                          (state.velocity, state.force))
        F_new = force_fn(R)
        return NVEState(R, V + 0.5 * (F + F_new) * dt, F_new)
    return step


def nve(force_fn: GridFn, dt: float) -> tuple[Callable, Callable]:
    """Velocity-Verlet NVE on a grid: ``init_fn(key, grid, kT)`` draws velocities at ``kT``
    in the occupied cells; ``apply_fn(state)``.

    Example:
        >>> init_fn, apply_fn = nve(soft_sphere()[1], 1e-3)
    """
    def init_fn(key: Array, grid: TPUGrid, kT: float) -> NVEState:
        data = grid.cell_data
        v = jnp.sqrt(kT) * random.normal(key, data.shape[:-1] + (grid.num_dims,),
                                         dtype=data.dtype)
        return NVEState(grid, v * (data[..., -1:] > 0), force_fn(grid))
    return init_fn, _verlet_step(force_fn, dt)


def test_nve(force_fn: GridFn, dt: float) -> tuple[Callable, Callable]:
    """Velocity-Verlet NVE on a grid from given velocities: ``init_fn(grid, velocity)``.

    Example:
        >>> init_fn, apply_fn = test_nve(soft_sphere()[1], 1e-3)
    """
    def init_fn(position: TPUGrid, velocity: Array, **unused_kwargs: Any) -> NVEState:
        return NVEState(position, velocity, force_fn(position))
    return init_fn, _verlet_step(force_fn, dt)


test_nve.__test__ = False  # a simulator, not a test (for pytest's collection)


def kinetic_energy(state: NVEState) -> Array:
    """``sum(v^2) / 2`` over the grid.

    Example:
        >>> kinetic_energy.__name__
        'kinetic_energy'
    """
    return 0.5 * jnp.sum(state.velocity ** 2)
