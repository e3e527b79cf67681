"""``fluxion.experimental.mesh_utils`` (JAX's ``jax.experimental.mesh_utils``): device arrays
shaped for :class:`fluxion.sharding.Mesh`.

The devices are laid out in the order given (default: ``fluxion.devices()``), as JAX does on CPU
and GPU. JAX reorders the chips of a multi-chip TPU slice by their physical (ICI) coordinates;
Fluxion does not (listed in docs/guide/coming-from-jax.md), which changes only performance.

Example:
    >>> import fluxion
    >>> from fluxion.experimental import mesh_utils
    >>> mesh_utils.create_device_mesh((1,), devices=fluxion.devices()[:1]).shape
    (1,)
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from fluxion.backend import client as _client

__all__ = ["create_device_mesh", "create_hybrid_device_mesh"]


def _as_array(devices: Sequence[Any]) -> np.ndarray:
    arr = np.empty(len(devices), dtype=object)
    arr[:] = list(devices)
    return arr


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence[Any] | None = None, *,
                       contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
    """An array of shape ``mesh_shape`` of ``devices`` (default: all devices).

    ``contiguous_submeshes`` and ``allow_split_physical_axes`` concern TPU physical layouts and
    are accepted for compatibility.

    Example:
        >>> import fluxion
        >>> create_device_mesh([1], fluxion.devices()[:1])[0] == fluxion.devices()[0]
        True
    """
    del contiguous_submeshes, allow_split_physical_axes
    devs = list(_client.devices() if devices is None else devices)
    shape = tuple(int(s) for s in mesh_shape)
    if math.prod(shape) != len(devs):
        raise ValueError(f"create_device_mesh: the mesh shape {shape} has {math.prod(shape)} "
                         f"devices but {len(devs)} devices were given")
    return _as_array(devs).reshape(shape)


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int],
                              devices: Sequence[Any] | None = None, *,
                              process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
    """A mesh for two-level parallelism: the devices of each granule (a slice, or a process
    with ``process_is_granule``) form a ``mesh_shape`` block, and the blocks are tiled in the
    ``dcn_mesh_shape`` grid; the result's shape is their element-wise product.

    Example:
        >>> import fluxion
        >>> m = create_hybrid_device_mesh([1], [1], fluxion.devices()[:1], process_is_granule=True)
        >>> m.shape
        (1,)
    """
    del allow_split_physical_axes
    devs = list(_client.devices() if devices is None else devices)
    attr = "process_index" if process_is_granule else "slice_index"
    if not hasattr(devs[0], attr):
        raise ValueError(f"Device {devs[0]} does not have attribute {attr}. See "
                         f"`process_is_granule` option.")
    groups: dict[Any, list] = {}
    for d in devs:
        groups.setdefault(getattr(d, attr), []).append(d)
    keys = sorted(groups) if should_sort_granules_by_key else list(groups)
    if len(keys) != math.prod(dcn_mesh_shape):
        raise ValueError(f"create_hybrid_device_mesh: the devices belong to {len(keys)} "
                         f"granules but dcn_mesh_shape {tuple(dcn_mesh_shape)} needs "
                         f"{math.prod(dcn_mesh_shape)}")
    blocks = [create_device_mesh(mesh_shape, groups[k]) for k in keys]
    grid = np.empty(len(blocks), dtype=object)
    grid[:] = blocks
    grid = grid.reshape(tuple(dcn_mesh_shape))
    shape = tuple(a * b for a, b in zip(mesh_shape, dcn_mesh_shape))
    out = np.empty(shape, dtype=object)
    for idx in np.ndindex(grid.shape):
        block = grid[idx]
        where = tuple(slice(i * s, (i + 1) * s) for i, s in zip(idx, block.shape))
        out[where] = block
    return out
