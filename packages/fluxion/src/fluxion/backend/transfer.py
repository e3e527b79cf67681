"""Moving values between host and devices: ``device_put``, ``device_get``, ``block_until_ready``.

Example:
    >>> import fluxion, numpy as np
    >>> x = fluxion.device_put(np.array([1.0, 2.0]))
    >>> fluxion.device_get(x).tolist()
    [1.0, 2.0]
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from fluxion.backend import client as _client
from fluxion.backend import dispatch as _d
from fluxion.backend import guards as _g
from fluxion.backend.array import Array, Spec
from fluxion.backend.sharding_impl import (
    Device,
    NamedSharding,
    PartitionSpec,
    Sharding,
    check_spec,
    context_mesh,
)
from fluxion.core import dtypes as _dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.config import config
from fluxion.core.errors import user_source_line
from fluxion.core.memory_space import MemorySpace
from fluxion.core.trace import Tracer
from fluxion.lax.sharding_constraint import resolve_sharding, with_sharding_constraint
from fluxion.tree_util import physical as tree_util

__all__ = ["device_put", "device_get", "block_until_ready", "make_array_from_callback",
           "make_array_from_single_device_arrays", "make_array_from_process_local_data",
           "copy_to_host_async"]


def _is_sharding_leaf(v: Any) -> bool:
    return v is None or isinstance(v, (Device, PartitionSpec, Sharding, MemorySpace)) or hasattr(
        v, "_to_xla_hlo_sharding") or type(v).__name__ == "Format"


def _resolve(fname: str, s: Any) -> Any:
    if isinstance(s, PartitionSpec):
        mesh = context_mesh()
        if mesh is None:
            raise ValueError(f"{fname}: a bare PartitionSpec {s!r} needs a mesh; use "
                             "NamedSharding(mesh, spec) or fluxion.set_mesh(mesh)")
        return NamedSharding(mesh, s)
    if s is not None and not _is_sharding_leaf(s):
        raise TypeError(f"{fname}: device must be a Device, a Sharding or a PartitionSpec, "
                        f"got {type(s).__name__}: {s!r}")
    return s


def _check_fits(fname: str, s: Any, shape: tuple) -> None:
    if isinstance(s, NamedSharding):
        try:
            check_spec(fname, "the sharding's spec", s.mesh, s.spec, len(shape), tuple(shape))
        except ValueError as e:
            raise ValueError(f"{e} (at {user_source_line()})") from None


def device_put(x: Any, device: Any = None, *, src: Any = None, donate: bool = False,
               may_alias: Any = None) -> Any:
    """Place every leaf of the pytree ``x`` on ``device``: a Device, a Sharding (for example a
    :class:`~fluxion.sharding.NamedSharding` splitting it over a mesh), a PartitionSpec over
    the mesh of ``set_mesh``, a pytree of those matching ``x``, or None (the default device,
    uncommitted). Arrays placed explicitly are *committed*: computations follow them.

    Example:
        >>> import fluxion
        >>> fluxion.device_put({"w": 1.0})["w"].dtype
        dtype('float32')
    """
    def put(leaf: Any, dev: Any) -> Any:
        if isinstance(dev, MemorySpace):
            dev = _memory_space_target(leaf, dev)
        if isinstance(leaf, Tracer):
            if dev is None:
                return leaf
            return with_sharding_constraint(leaf, dev) if not isinstance(dev, Device) \
                else leaf
        dev = _resolve("device_put", resolve_sharding("device_put", dev, np.ndim(leaf)))
        if type(leaf) is Array:
            if dev is None:
                return leaf
            _check_fits("device_put", dev, leaf.shape)
            return _d.move_to(leaf, _d._sharding_for(dev), True, explicit=True)
        if isinstance(leaf, (list, tuple)):
            leaf = np.asarray(leaf)
        if dev is not None:
            _check_fits("device_put", dev, np.shape(leaf))
        if _g.H2D is not None:  # an explicit transfer: only the *_explicit levels act
            _g.host_to_device(_d.host_aval(leaf), _d.default_sharding() if dev is None
                              else _d._sharding_for(dev), explicit=True)
        return _d.device_put_value(leaf, dev)

    if _is_sharding_leaf(device):
        return tree_util.tree_map(lambda leaf: put(leaf, device), x)
    devs = tree_util.broadcast_prefix(device, x, is_leaf=_is_sharding_leaf)
    leaves, tree = tree_util.tree_flatten(x)
    return tree_util.tree_unflatten(tree, [put(v, d) for v, d in zip(leaves, devs)])


def _memory_space_target(leaf: Any, space: MemorySpace) -> Any:
    """Where ``device_put(leaf, space)`` places ``leaf``: Fluxion has only device memory, so
    ``Space.Device`` keeps a committed array where it is (None: nothing to move), or commits
    it (host data, an uncommitted array) to the default device; a tracer is left as it is."""
    if space is MemorySpace.Any:
        raise AssertionError("unreachable")  # JAX's (it has no memory kind for Any)
    if space is MemorySpace.Host:
        raise NotImplementedError(
            "device_put to jax.memory.Space.Host: Fluxion keeps every array in device memory "
            "(no pinned-host memory kind); see docs/guide/coming-from-jax.md")
    if isinstance(leaf, Tracer) or (type(leaf) is Array and leaf.committed):
        return None
    return _client.default_device()


def _put_shards(fname: str, shape: tuple, sharding: Any, host_shards: list, dtype: Any,
                devices: list) -> Array:
    dtype = _dtypes.canonicalize_dtype(np.dtype(dtype))
    spec = Spec(ShapedArray(tuple(shape), dtype, False), sharding, True)
    # private copies: the device buffers may alias them (see dispatch._put)
    host_shards = [np.array(h, dtype=dtype, copy=True, order="C") for h in host_shards]
    want = sharding.shard_shape(tuple(shape))
    for h, d in zip(host_shards, devices):
        if h.shape != want:
            raise ValueError(f"{fname}: the data for device {d} has shape {h.shape} but the "
                             f"sharding {sharding} gives shards of shape {want} for the global "
                             f"shape {tuple(shape)}")
    impl = _d._jax.batched_device_put(spec, sharding, host_shards, devices, True,
                                      enable_x64=bool(config.jax_enable_x64))
    return _d._wrap(impl, spec)


def make_array_from_callback(shape: Sequence[int], sharding: Any,
                             data_callback: Callable[[Any], Any], dtype: Any = None) -> Array:
    """A global array of ``shape`` placed with ``sharding``, whose shards are made by
    ``data_callback(index)`` (``index``: a tuple of slices of the global array) for each device
    of this process.

    Example:
        >>> import numpy as np, fluxion
        >>> s = fluxion.sharding.SingleDeviceSharding(fluxion.devices()[0])
        >>> data = np.arange(6.0).reshape(2, 3)
        >>> fluxion.make_array_from_callback((2, 3), s, lambda ix: data[ix]).tolist()
        [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    """
    sharding = _resolve("make_array_from_callback", sharding)
    shape = tuple(int(n) for n in shape)
    _check_fits("make_array_from_callback", sharding, shape)
    index = sharding.addressable_devices_indices_map(shape)
    devices = list(index)
    shards = [data_callback(index[d]) for d in devices]
    if not shards:
        raise ValueError("make_array_from_callback: no device of this process is in the sharding")
    if dtype is None:
        dtype = np.asarray(shards[0]).dtype
    if _g.H2D is not None and any(type(s) is not Array for s in shards):  # implicit, as jax's
        _g.host_to_device(ShapedArray(shape, _dtypes.canonicalize_dtype(np.dtype(dtype))), sharding)
    if len(sharding._internal_device_list) == 1:
        return _d.device_put_value(np.asarray(shards[0], dtype=dtype), sharding)
    return _put_shards("make_array_from_callback", shape, sharding, shards, dtype, devices)


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Any,
                                         arrays: Sequence[Array], *, dtype: Any = None) -> Array:
    """A global array of ``shape`` placed with ``sharding`` from one single-device Array per
    device of this process (each holding that device's shard).

    Example:
        >>> import numpy as np, fluxion
        >>> d = fluxion.devices()[0]
        >>> s = fluxion.sharding.SingleDeviceSharding(d)
        >>> a = fluxion.device_put(np.ones(2), d)
        >>> fluxion.make_array_from_single_device_arrays((2,), s, [a]).tolist()
        [1.0, 1.0]
    """
    fname = "make_array_from_single_device_arrays"
    sharding = _resolve(fname, sharding)
    shape = tuple(int(n) for n in shape)
    _check_fits(fname, sharding, shape)
    index = sharding.addressable_devices_indices_map(shape)
    by_dev = {}
    for a in arrays:
        if type(a) is not Array or len(a.sharding._internal_device_list) != 1:
            raise TypeError(f"{fname}: arrays must be single-device fluxion Arrays, got "
                            f"{type(a).__name__}")
        by_dev[a.sharding._internal_device_list[0]] = a
    missing = [d for d in index if d not in by_dev]
    if missing or len(by_dev) != len(index):
        raise ValueError(f"{fname}: expected one array on each of the devices "
                         f"{[d.id for d in index]}, got arrays on {[d.id for d in by_dev]}")
    want = sharding.shard_shape(shape)
    first = by_dev[next(iter(index))]
    dt = first.dtype if dtype is None else np.dtype(dtype)
    for d in index:
        a = by_dev[d]
        if a.shape != want or a.dtype != dt:
            raise ValueError(f"{fname}: the array on device {d} has shape {a.shape} and dtype "
                             f"{a.dtype}; the sharding needs shards of shape {want} and dtype {dt}")
    spec = Spec(ShapedArray(shape, dt, False), sharding, True)
    if len(sharding._internal_device_list) == 1:
        return _d._wrap(first._a, spec)
    impl = _d._jax.ArrayImpl(spec, sharding, [by_dev[d]._a for d in index], True, True)
    return _d._wrap(impl, spec)


def _infer_global_shape(sharding: Any, local_shape: tuple) -> tuple:
    """The global shape when each process holds ``local_shape``: dimensions split across
    processes grow by the number of process-level blocks."""
    if sharding.is_fully_addressable:
        return tuple(local_shape)
    ndim = len(local_shape)
    hs = sharding._to_xla_hlo_sharding(ndim)
    if hs.is_replicated() or hs.is_maximal():
        return tuple(local_shape)
    dims = list(hs.tile_assignment_dimensions())
    devs = list(sharding._internal_device_list)
    pid = _client.process_index()
    local_coords: list[set] = [set() for _ in range(ndim)]
    for flat, pos in enumerate(hs.tile_assignment_devices()):
        if devs[pos].process_index == pid:
            idx = np.unravel_index(flat, dims)
            for ax in range(ndim):
                local_coords[ax].add(int(idx[ax]))
    return tuple(n * dims[ax] // max(len(local_coords[ax]), 1)
                 for ax, n in enumerate(local_shape))


def make_array_from_process_local_data(sharding: Any, local_data: Any,
                                       global_shape: Sequence[int] | None = None) -> Array:
    """A global array placed with ``sharding`` from the part of it this process holds
    (``local_data``); with one process, ``local_data`` is the whole array.

    Example:
        >>> import numpy as np, fluxion
        >>> mesh = fluxion.make_mesh((1,), ("x",))
        >>> s = fluxion.NamedSharding(mesh, fluxion.P("x"))
        >>> fluxion.make_array_from_process_local_data(s, np.arange(4.0)).tolist()
        [0.0, 1.0, 2.0, 3.0]
    """
    fname = "make_array_from_process_local_data"
    sharding = _resolve(fname, sharding)
    local = np.asarray(local_data)
    ndim = local.ndim
    if global_shape is None:
        global_shape = _infer_global_shape(sharding, local.shape)
    global_shape = tuple(int(n) for n in global_shape)
    _check_fits(fname, sharding, global_shape)
    index = sharding.addressable_devices_indices_map(global_shape)
    starts = [min(ix[ax].indices(global_shape[ax])[0] for ix in index.values())
              for ax in range(ndim)]

    def local_slice(ix: tuple) -> tuple:
        out = []
        for ax, sl in enumerate(ix):
            a, b, _ = sl.indices(global_shape[ax])
            out.append(slice(a - starts[ax], b - starts[ax]))
        return tuple(out)

    shards = [local[local_slice(index[d])] for d in index]
    if _g.H2D is not None:  # jax's is a device_put: explicit
        _g.host_to_device(ShapedArray(global_shape, _dtypes.canonicalize_dtype(local.dtype)),
                          sharding, explicit=True)
    if len(sharding._internal_device_list) == 1:
        return _d.device_put_value(shards[0], sharding)
    return _put_shards(fname, global_shape, sharding, shards, local.dtype, list(index))


def device_get(x: Any) -> Any:
    """Copy every array leaf of ``x`` to the host as NumPy arrays (other leaves pass through):
    an explicit device-to-host transfer for the transfer guards.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> type(fluxion.device_get(jnp.ones(2))).__name__
        'ndarray'
    """
    def get(leaf: Any) -> Any:
        if type(leaf) is Array:
            return np.asarray(leaf)
        return leaf
    if _g.D2H is None:
        return tree_util.tree_map(get, x)
    with _g.explicit_get():
        return tree_util.tree_map(get, x)


def block_until_ready(x: Any) -> Any:
    """Wait until every array in the pytree ``x`` is computed; returns ``x``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fluxion.block_until_ready(jnp.ones(2)).shape
        (2,)
    """
    impls = []
    for leaf in tree_util.tree_leaves(x):  # (a loop: a comprehension is a frame more in 3.11)
        if type(leaf) is Array:
            impls.append(leaf._a)
    if len(impls) == 1:
        impls[0].block_until_ready()
    elif impls:
        # one wait for them all, as jax's block_until_ready (its C++ joins the arrays' ready
        # futures): on the CPU 1.1 us for 12 arrays where a wait per array took 2.4 (5.0 through
        # Array.block_until_ready); a deleted or donated one raises as its own wait does
        _d._jax.batched_block_until_ready(impls)
    return x


def copy_to_host_async(x: Any) -> Any:
    """Start copying every array of the pytree ``x`` to the host; returns ``x``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fluxion.copy_to_host_async(jnp.ones(2)).shape
        (2,)
    """
    for leaf in tree_util.tree_leaves(x):
        if type(leaf) is Array:
            leaf.copy_to_host_async()
    return x
